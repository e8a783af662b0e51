# invariants.tcl -- what must hold after every crash, power loss or kill,
# for any test that makes one (sourced after tester.tcl).
#
# The faulted process ingests with DB ingest (-threads T, keys START,
# START+1, ... dealt out to the threads in turn: thread t writes START+t,
# START+t+T, ...) and prints "committed N" after each successful commit
# (-progressfd / -progress): those lines are its acknowledgements, read by
# this process from a pipe or a file, so they outlive it whatever happens
# to the dataset's files.
#
#   acked_in_text TEXT           the largest "committed N" in TEXT (0: none)
#   acked_in_file FILE           the same, from a file (0 if missing)
#   read_commits CHAN WANT ACKED read "committed N" lines from a child (below)
#   working_backends DIR         the backends of {posix io_uring direct} that
#                                work in DIR
#   kill_child CHAN ACKED        SIGKILL a child, read what it said (below)
#   check_invariants PATH ?-acked N? ?-start START? ?-threads T?
#                    ?-seed S? ?-min B? ?-max B? ?-base N? ?-append ID?
#                    ?-vfs NAME? ?-text 0|1?
#       reopen PATH read-write (recovery runs) and check everything below;
#       "ok", or every violation found, one per list element.
#
# What is checked, and why it suffices:
#
#   1. the dataset opens read-write (recovering) and again read-only;
#   2. count >= N acknowledged (and >= -base, what was there before): a
#      commit is a page prefix recorded in one catalog transaction, so the
#      committed states are nested; a recovered state with at least the
#      acknowledged count that is a committed state (3-6) holds every
#      acknowledged sample;
#   3. every visible sample reads back intact, its checksum verified
#      (DB verify -checksums): acknowledged or not, nothing visible is torn;
#   4. per writer thread, the visible ids of the faulted ingest are a
#      contiguous prefix of what it wrote: a thread's pages are claimed in
#      the order it fills them, so a gap, or an id past one, is a sample
#      visible from beyond the committed prefix;
#   5. pagedb_check passes (DB check: every run header and extent checksum,
#      every extent inside its committed run, the page table contiguous),
#      the catalog passes PRAGMA quick_check, and check_catalog's counts
#      agree (every sample on a committed page, the file long enough),
#      and every stored value starts at a multiple of the records'
#      alignment (pagedb_field_add_aligned), as the extent view says;
#      For a zstd-dict field (issue 28) pagedb_check also decompresses
#      every compressed value with the dictionary it names, which must be in
#      table pagedb_dict, intact: a value durable without its dictionary
#      (a dictionary stored by a later commit than the first value using
#      it) or a torn dictionary row is a problem here;
#   6. the dataset goes on: ingest after the highest id, read back, commit,
#      close, reopen read-only, the same count, everything verified;
#   7. that close, a writer's, merged the catalog's WAL (issue 29): no
#      NAME-catalog-wal is left holding anything, so NAME and NAME-catalog
#      alone are the dataset (doc/remote.md uploads those two; a power loss
#      during the merge itself is powerloss-close.test's);
#   8. every token map in force (issue 27: a rank-1 variable integer tensor
#      field's map in the index file, read through pagedb_tokens_document)
#      is stored, and is the catalog's: the samples of at least one token,
#      in id order, each end the sum of its token count and those before
#      (inv_token_maps); checked on the index as left (0) and after
#      recovery (5);
#   0. (before 1, so that recovery cannot repair it first) the index file
#      NAME-index as the crash left it: a read-only open either maps it
#      (index_state "mapped": then it must be exactly the last commit's:
#      the same count as the catalog, every visible sample read through it
#      intact, and pagedb_check's comparison of every entry with its row
#      clean) or finds it stale and says why ("memory"); after recovery
#      (1) the read-write handle has a mapped or rebuilt index, which 3, 5
#      and 6 read and check in turn.
#
# Leaks: the handles opened here are closed on every path; tester.tcl's
# finish_test then checks handles, memory and fds for the whole file.

proc acked_in_text {text} {
  set acked 0
  foreach line [split $text \n] {
    if {[regexp {^committed (\d+)$} $line -> c] && $c > $acked} { set acked $c }
  }
  return $acked
}

proc acked_in_file {file} {
  if {![file exists $file]} { return 0 }
  set fd [open $file]
  set text [read $fd]
  close $fd
  return [acked_in_text $text]
}

# The violations of rule 4 in open dataset DB ({} if none).
proc inv_prefixes {db start threads} {
  set bad {}
  set rows [$db sql "SELECT (id - $start) % $threads, count(*), min(id), max(id)
                     FROM sample WHERE id >= $start GROUP BY 1 ORDER BY 1"]
  foreach {t n lo hi} $rows {
    set want [expr {$start + $t + $threads * ($n - 1)}]
    if {$lo != $start + $t || $hi != $want} {
      lappend bad "thread $t: $n ids from $lo to $hi, not a prefix ($start+$t to $want)"
    }
  }
  return $bad
}

# Rule 8: the token maps of open handle DB against its catalog; the
# violations found.
proc inv_token_maps {db} {
  set bad {}
  foreach fd [$db fields] {
    lassign $fd name type
    if {![regexp {^tensor:u?int(8|16|32|64):\*$} $type -> bits]} continue
    set es [expr {$bits / 8}]
    $db reader ::invtr
    set m [::invtr tokens $name sequential 0 0 1 map]
    ::invtr close
    set want {}
    set end 0
    foreach {id raw} [$db sql "SELECT id, \"$name\" FROM sample WHERE \"$name\" >= $es ORDER BY id"] {
      lappend want $id [incr end [expr {$raw / $es}]]
    }
    if {[lindex $m 0] != 1} {
      lappend bad "token map of '$name': not stored in the index file"
    } elseif {[lindex $m 1] ne $want} {
      lappend bad "token map of '$name': [expr {[llength [lindex $m 1]] / 2}] documents\
          ([lrange [lindex $m 1] 0 7]...), the catalog [expr {[llength $want] / 2}] ([lrange $want 0 7]...)"
    }
  }
  return $bad
}

proc check_invariants {path args} {
  array set o {-acked 0 -start 0 -threads 1 -seed 0 -min 0 -max 1000 -base 0 -append {} -vfs {} -text 0}
  array set o $args
  set gen [list -seed $o(-seed) -min $o(-min) -max $o(-max)]
  if {$o(-text)} { lappend gen -text }
  set vfs [expr {$o(-vfs) eq "" ? {} : [list -vfs $o(-vfs)]}]
  set bad {}
  # 0: the index file as the crash left it.  A read-only open that fails
  # (a vacuum or creation cut short, which only a read-write open
  # finishes) leaves the index to 1.
  if {![catch {pagedb ::invdb $path -readonly {*}$vfs}]} {
    if {[catch {
      set st [::invdb index_state]
      if {[lindex $st 0] eq "mapped"} {
        set n0 [::invdb count]
        set c0 [::invdb sql {SELECT count(*) FROM sample}]
        if {$n0 != $c0} { lappend bad "index as left: count $n0, the catalog has $c0 rows" }
        if {[catch {::invdb verify -checksums {*}$gen} v]} {
          lappend bad "index as left: verify: $v"
        } elseif {$v != $n0} {
          lappend bad "index as left: verified $v of $n0"
        }
        lassign [::invdb check] nprob probs
        if {$nprob != 0} { lappend bad "index as left: pagedb_check: $nprob problem(s): [lrange $probs 0 5]" }
        foreach b [inv_token_maps ::invdb] { lappend bad "index as left: $b" }
      } elseif {[lindex $st 0] ne "memory"} {
        lappend bad "index as left: read-only open says [lindex $st 0]"
      }
    } msg]} {
      lappend bad "index as left: $msg"
    }
    catch {::invdb close}
  }
  # 1: recovery.
  if {[catch {pagedb ::invdb $path {*}$vfs} msg]} { return [list "reopen: $msg"] }
  if {[lindex [::invdb index_state] 0] ni {mapped rebuilt}} {
    lappend bad "after recovery: index_state [::invdb index_state]"
  }
  if {[catch {
    # 2
    set n [::invdb count]
    if {$n < $o(-acked) || $n < $o(-base)} {
      lappend bad "count $n, acknowledged $o(-acked), $o(-base) before"
    }
    # 3
    if {[catch {::invdb verify -threads 2 -checksums {*}$gen} v]} {
      lappend bad "verify: $v"
    } elseif {$v != $n} {
      lappend bad "verified $v of $n"
    }
    # 4
    lappend bad {*}[inv_prefixes ::invdb $o(-start) $o(-threads)]
    # 5
    lassign [::invdb check] nprob probs
    if {$nprob != 0} { lappend bad "pagedb_check: $nprob problem(s): [lrange $probs 0 5]" }
    lappend bad {*}[inv_token_maps ::invdb]
    set qc [::invdb sql {PRAGMA quick_check}]
    if {$qc ne "ok"} { lappend bad "catalog quick_check: $qc" }
    # 5, dictionaries: every row's id in its bytes (a row the open loads;
    # pagedb_check above read every value with the one it names).
    if {[::invdb sql {SELECT count(*) FROM sqlite_schema WHERE name = 'pagedb_dict'}]} {
      set nd [::invdb sql {SELECT count(*) FROM pagedb_dict}]
      set listed 0
      for {set f 0} {$f < [llength [::invdb fields]]} {incr f} {
        if {[string match zstd-dict* [lindex [::invdb fields] $f 2]]} { incr listed [llength [::invdb dicts $f]] }
      }
      if {$listed != 2 * $nd} { lappend bad "pagedb_dict has $nd rows, the handle lists [expr {$listed / 2}]" }
    }
    set cc [check_catalog ::invdb]
    if {$cc ne "ok"} { lappend bad "catalog: $cc" }
    set g 1
    for {set f 0} {$f < [llength [::invdb fields]]} {incr f} { set g [expr {max($g, [::invdb field_align $f])}] }
    set d [data_offset $path]
    set ps [::invdb page_size]
    set mis [::invdb sql "SELECT count(*) FROM extent WHERE ($d + page * $ps + off) % $g <> 0"]
    if {$mis != 0} { lappend bad "$mis stored values not at a multiple of the records' alignment $g" }
    # 6
    if {$bad eq ""} {
      set next $o(-append)
      if {$next eq ""} { set next [expr {[::invdb sql {SELECT coalesce(max(id), -1) FROM sample}] + 1}] }
      ::invdb ingest -start $next -count 3 {*}$gen
      set v [::invdb verify -checksums {*}$gen -sql "SELECT id FROM sample WHERE id >= $next"]
      if {$v != 3 || [::invdb count] != $n + 3} {
        lappend bad "writing on: verified $v of 3 new, count [::invdb count] after $n"
      }
      ::invdb close
      # 7
      set wal $path-catalog-wal
      if {[file exists $wal] && [file size $wal] > 0} {
        lappend bad "the writer's close left $wal with [file size $wal] bytes: the WAL not merged"
      }
      pagedb ::invdb $path -readonly {*}$vfs
      if {[::invdb count] != $n + 3} {
        lappend bad "reopened read-only: count [::invdb count], not [expr {$n + 3}]"
      } elseif {[set v [::invdb verify -mode copy {*}$gen]] != $n + 3} {
        lappend bad "reopened read-only: verified $v of [expr {$n + 3}]"
      }
    }
  } msg]} {
    lappend bad "checking: $msg"
  }
  catch {::invdb close}
  if {$bad eq ""} { return ok }
  return $bad
}

# Read lines from CHAN (non-blocking) until WANT "committed" lines were seen
# or [scaled 150] s passed (a child that stopped committing: "timeout");
# return {acked seen eof}.
proc read_commits {chan want acked} {
  set seen 0
  set deadline [expr {[clock milliseconds] + 1000 * [scaled 150]}]
  while {$seen < $want} {
    set n [gets $chan line]
    if {$n >= 0} {
      if {[regexp {^committed (\d+)$} $line -> c]} {
        incr seen
        if {$c < $acked} { return [list $acked $seen "count went from $acked to $c"] }
        if {$c > $acked} { set acked $c }
      } elseif {![regexp {^opened \d+$} $line]} {
        puts "  child: $line"
      }
      continue
    }
    if {[eof $chan]} { return [list $acked $seen 1] }
    if {[clock milliseconds] > $deadline} { return [list $acked $seen timeout] }
    after 2
  }
  return [list $acked $seen 0]
}

proc working_backends {dir} {
  set res {}
  foreach e [pagedb_vfs_list $dir] {
    if {[lindex $e 0] in {posix io_uring direct} && [lindex $e 1] eq "PAGEDB_OK"} { lappend res [lindex $e 0] }
  }
  return $res
}

# SIGKILL the child at the end of pipe CHAN and read what it wrote before
# it died; returns {acked output errorcode}: the largest "committed N"
# (ACKED at least: lines read before count too), everything it wrote, and
# the child's errorCode ({CHILDKILLED PID SIGKILL} if the kill took it).
proc kill_child {chan acked} {
  kill9 [pid $chan]
  fconfigure $chan -blocking 1
  set out [read $chan]
  set a [acked_in_text $out]
  if {$a > $acked} { set acked $a }
  set ec {}
  if {[catch {close $chan} msg opts]} { set ec [dict get $opts -errorcode] }
  return [list $acked $out $ec]
}

# ---------------------------------------------------------------------------
# A commit of parts (doc/format.md, "Parts": P1-P8) cut short by a crash,
# power loss or kill.
#
#   check_parts_invariants PATH OLD NEW PARTS FILES
#       OLD, NEW: {count parts} of the dataset before and after the commit;
#       PARTS: {PATH FIRSTID ...}, each part of the commit and the id its
#       sample 0 took (AFTER and OFFSET map ids by a constant per part);
#       FILES: {FILE CONTENT ...}, every file of the parts as it was before
#       (P5).  "ok", or every violation found.
#
#   P1 the dataset recovers (read-write, then read-only) to the old state or
#      the new, count and parts together, and the parts numbered from the
#      old count are those of the commit, in order;
#   P2 the index as left, if mapped, has the catalog's count (rule 0), and
#      after recovery it is mapped or rebuilt;
#   P3 every visible sample reads back with its checksums verified, and in
#      the new state each part's samples read as they read in the part;
#   P4 each part's ids are its own plus its constant, id_min and id_max agree;
#   P5 every part's files are byte for byte as before, its seal unchanged;
#   P6 pagedb_check is clean, and every stored value is aligned (rule 5);
#   P7 the parts of the commit that lie under PATH.parts/ are listed as
#      orphans (pagedb_parts_orphans, any age) exactly when the recovered
#      state is the old one, and no committed part ever is;
#   P8 it goes on: in the old state the parts commit again; then own samples
#      are written, and a read-only reopen has the same count;
#   P9 SQL sees every sample once: count(*) of sample (own rows and the
#      parts' by reference, doc/format.md) is meta.samples and the count, and
#      a part by reference has its samples' count of rows at its ids, its
#      id_delta the constant of P4, and its first and last ids found one by
#      one (lookups by id through meta.part_id_span, which P6's check finds
#      wide enough for every part);
#   P10 chunks by reference (doc/format.md): the dataset's index may name
#      chunks in a committed part's index file, so every part of the commit
#      keeps its index file (and P5: unchanged, when FILES lists it), and the
#      reads of P3 and the check of P6 go through those references.

proc inv_file {path} {
  set fd [open $path rb]
  set data [read $fd]
  close $fd
  return $data
}

proc check_parts_invariants {path old new parts files} {
  set bad {}
  # P5 first: nothing of the commit may have touched a part.
  foreach {f content} $files {
    if {![file exists $f]} {
      lappend bad "part file $f is gone"
    } elseif {[inv_file $f] ne $content} {
      lappend bad "part file $f changed"
    }
  }
  # P2, as left.
  if {![catch {pagedb ::invdb $path -readonly}]} {
    if {[catch {
      if {[lindex [::invdb index_state] 0] eq "mapped"
          && [::invdb count] != [::invdb sql {SELECT count(*) FROM sample}]} {
        lappend bad "index as left: count [::invdb count], the catalog [::invdb sql {SELECT count(*) FROM sample}]"
      }
    } msg]} { lappend bad "index as left: $msg" }
    catch {::invdb close}
  }
  # P1
  if {[catch {pagedb ::invdb $path} msg]} { return [list {*}$bad "reopen: $msg"] }
  if {[catch {
    if {[lindex [::invdb index_state] 0] ni {mapped rebuilt}} {
      lappend bad "after recovery: index_state [::invdb index_state]"
    }
    set state [list [::invdb count] [::invdb part_count]]
    if {$state ne $old && $state ne $new} {
      lappend bad "recovered {count parts} $state, neither the old $old nor the new $new"
    }
    set isnew [expr {$state eq $new}]
    set p0 [lindex $old 1]
    if {$isnew} {
      set k $p0
      foreach {pp first} $parts {
        pagedb ::invpart $pp -readonly
        set uuid [::invpart sql {SELECT value FROM meta WHERE key = 'uuid'}]
        set lo [::invpart sql {SELECT min(id) FROM sample}]
        set hi [::invpart sql {SELECT max(id) FROM sample}]
        set n [::invpart count]
        ::invpart close
        set row [::invdb sql "SELECT uuid, samples, id_min, id_max FROM part WHERE part = $k"]
        set off [expr {$first - $lo}]
        if {$row ne [list $uuid $n [expr {$lo + $off}] [expr {$hi + $off}]]} {
          lappend bad "part $k: its row is {$row}, the part $pp says {$uuid $n} ids $lo..$hi + $off"
        }
        # P3, P4: its samples as the part reads them, at its ids.
        set r [inv_parts_same ::invdb $pp $off]
        if {$r ne "ok"} { lappend bad "part $k: $r" }
        # P9, per part
        set rows 0
        if {[::invdb sql {SELECT count(*) FROM pragma_table_info('part') WHERE name = 'rows'}]} {
          lassign [::invdb sql "SELECT rows, id_delta FROM part WHERE part = $k"] rows delta
        }
        if {$rows == 1} {
          set seen [::invdb sql "SELECT count(*) FROM sample WHERE id BETWEEN [expr {$lo + $off}] AND [expr {$hi + $off}]"]
          if {$delta != $off || $seen != $n} {
            lappend bad "P9: part $k by reference: id_delta $delta (not $off), $seen rows at its ids (not $n)"
          }
          foreach id [list [expr {$lo + $off}] [expr {$hi + $off}]] {
            if {[::invdb sql "SELECT count(*) FROM sample WHERE id = $id"] != 1} {
              lappend bad "P9: part $k by reference: its sample $id is not found by id"
            }
          }
        }
        incr k
      }
    }
    # P9
    set nsql [::invdb sql {SELECT count(*) FROM sample}]
    set nmeta [::invdb sql {SELECT value FROM meta WHERE key = 'samples'}]
    if {$nsql != $nmeta || $nsql != [::invdb count]} {
      lappend bad "P9: count(*) of sample $nsql, meta.samples $nmeta, count [::invdb count]"
    }
    # P10
    foreach {pp first} $parts {
      if {[file exists $pp] && ![file exists $pp-index]} { lappend bad "P10: part $pp has no index file" }
    }
    # P3, P6
    lassign [::invdb check] nprob probs
    if {$nprob != 0} { lappend bad "pagedb_check: $nprob problem(s): [lrange $probs 0 5]" }
    ::invdb reader ::invr -copy -verify
    foreach id [::invdb order sequential] {
      foreach f [::invdb fields] {
        lassign $f name type
        if {$type in {bytes text} && [catch {::invr read $id $name} msg opts]
            && [lindex [dict get $opts -errorcode] 1] ne "PAGEDB_NOTFOUND"} {
          lappend bad "sample $id, field $name: $msg"
        }
      }
    }
    ::invr close
    set g 1
    for {set f 0} {$f < [llength [::invdb fields]]} {incr f} { set g [expr {max($g, [::invdb field_align $f])}] }
    set mis [::invdb sql "SELECT count(*) FROM extent WHERE (page * [::invdb page_size] + off) % $g <> 0"]
    if {$mis != 0} { lappend bad "$mis stored values not at a multiple of the records' alignment $g" }
    # P7
    set orphans {}
    if {[catch {::invdb sql {SELECT uuid FROM part}} committed]} { set committed {} }
    foreach o [::invdb parts_orphans] {
      lappend orphans [file normalize [lindex $o 0]]
      if {[lindex $o 1] in $committed} { lappend bad "P7: committed part [lindex $o 0] listed as an orphan" }
    }
    set area [file normalize $path.parts]
    foreach {pp first} $parts {
      set pp [file normalize $pp]
      if {[file dirname $pp] ne $area} continue
      set listed [expr {$pp in $orphans}]
      if {$listed == $isnew} {
        lappend bad "P7: part $pp [expr {$listed ? {listed} : {not listed}}] as an orphan in the [expr {$isnew ? {new} : {old}}] state"
      }
    }
    # P8
    if {$bad eq ""} {
      if {!$isnew} {
        set list {}
        set offs {}
        foreach {pp first} $parts {
          pagedb ::invpart $pp -readonly
          set lo [::invpart sql {SELECT min(id) FROM sample}]
          ::invpart close
          lappend list [list $pp -offset [expr {$first - $lo}]]
        }
        ::invdb parts_commit $list -offset
        if {[list [::invdb count] [::invdb part_count]] ne $new} {
          lappend bad "going on: committed again, {count parts} [::invdb count] [::invdb part_count], not $new"
        }
      }
      set next [expr {[::invdb sql {SELECT coalesce(max(id), -1) FROM sample}] + 1}]
      ::invdb ingest -start $next -count 3
      set n [::invdb count]
      ::invdb close
      pagedb ::invdb $path -readonly
      if {[::invdb count] != $n} { lappend bad "reopened read-only: count [::invdb count], not $n" }
      lassign [::invdb check] nprob probs
      if {$nprob != 0} { lappend bad "going on: pagedb_check: $nprob problem(s): [lrange $probs 0 5]" }
    }
  } msg]} {
    lappend bad "checking: $msg"
  }
  catch {::invr close}
  catch {::invpart close}
  catch {::invdb close}
  if {$bad eq ""} { return ok }
  return $bad
}

# "ok" if every sample of the part at PART reads in DB (id + OFF) as in the
# part, every field; else the first difference.
proc inv_parts_same {db part off} {
  pagedb ::invpo $part -readonly
  ::invpo reader ::invpr -copy -verify
  $db reader ::invdr -mmap -verify
  set res ok
  foreach id [::invpo order sequential] {
    foreach f [::invpo fields] {
      lassign $f name type
      set m [expr {$type eq "int" ? "read_int" : $type eq "real" ? "read_real" : "read"}]
      # A value either reads the same or fails with the same code (the
      # messages name different files).
      if {[catch {::invpr $m $id $name} a o1]} { set a [lindex [dict get $o1 -errorcode] 1] }
      if {[catch {::invdr $m [expr {$id + $off}] $name} b o2]} { set b [lindex [dict get $o2 -errorcode] 1] }
      set c1 0
      set c2 0
      if {$c1 != $c2 || $a ne $b} {
        set res "sample $id (as [expr {$id + $off}]), field $name differs"
        break
      }
    }
    if {$res ne "ok"} break
  }
  ::invdr close
  ::invpr close
  ::invpo close
  return $res
}
