# tester.tcl -- the common code of the pagedb test scripts.
#
# Modelled on SQLite's test/tester.tcl.  A test file is run as
#
#     tclsh test/NAME.test
#
# (test/all.tcl runs each file that way, in its own process) and starts with
#
#     source [file join [file dirname [info script]] tester.tcl]
#
# It gets:
#
#   do_test NAME SCRIPT EXPECTED   run SCRIPT at global level, compare with
#                                  EXPECTED (exactly; /RE/ for a regexp,
#                                  *GLOB* for a glob pattern)
#   do_execsql_test NAME SQL EXP   do_test of [db sql SQL]
#   do_catch_test NAME SCRIPT EXP  do_test of [catchcmd SCRIPT]
#   catchcmd SCRIPT                {0 RESULT} or {1 MESSAGE}
#   catchcode SCRIPT               {0 RESULT} or {1 PAGEDB_NAME} (errorCode)
#   do_skip NAME REASON            a visible skip
#   do_malloc_test NAME -body S .. an out-of-memory loop (below)
#   mount_type DIR                 the type of the file system mounted at DIR
#   vfs_works NAME                 whether VFS NAME works in the scratch directory
#   testdir                        the file's scratch directory, new each run
#   testpath NAME                  a path inside it
#   test_seed                      the file's seed (PAGEDB_SEED overrides it)
#   finish_test                    counts, leak checks, exit status
#
# Handles: tests open datasets with the pagedb command of test/tclpagedb.c
# (loaded here from $env(PAGEDB_TCLLIB)).  finish_test fails the file when a
# handle command is still open or a file descriptor leaked.
#
# Seeds: never taken from the clock.  Each file's seed is a hash of its name
# unless PAGEDB_SEED is set; it is printed with every failure so that a run
# can be repeated exactly.

if {[info exists ::TESTER_LOADED]} return
set ::TESTER_LOADED 1

set ::TC(count) 0
set ::TC(fail) 0
set ::TC(skip) 0
set ::TC(fail_list) {}
set ::TC(skip_list) {}
set ::TC(file) [file rootname [file tail $::argv0]]
set ::TC(srcdir) [file normalize [file dirname [info script]]]
set ::TC(verbose) [expr {[info exists ::env(PAGEDB_VERBOSE)] && $::env(PAGEDB_VERBOSE)}]
# Under all.tcl, a line "#PROGRESS" after every test tells it the file is
# not hung (its timeout counts from the last one; all.tcl hides the line).
set ::TC(progress) [expr {[info exists ::env(PAGEDB_PROGRESS)] && $::env(PAGEDB_PROGRESS)}]
proc tc_progress {} {
  if {$::TC(progress)} { puts "#PROGRESS"; flush stdout }
}

# Load the extension.
if {![info exists ::env(PAGEDB_TCLLIB)]} {
  set cand [file join $::TC(srcdir) .libs libtclpagedb.so]
  if {[file exists $cand]} { set ::env(PAGEDB_TCLLIB) $cand }
}
if {![info exists ::env(PAGEDB_TCLLIB)]} {
  puts stderr "tester.tcl: PAGEDB_TCLLIB is not set (run through 'make check')"
  exit 2
}
load $::env(PAGEDB_TCLLIB) Tclpagedb

# No test asks a metadata service it did not start (an S3 open that finds
# no other credentials would ask the instance's, at 169.254.169.254), nor
# reads the credentials and profiles of the machine's user (~/.aws).
set ::env(AWS_EC2_METADATA_DISABLED) true
foreach v {AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_PROFILE
           AWS_DEFAULT_PROFILE} {
  unset -nocomplain ::env($v)
}
set ::env(AWS_SHARED_CREDENTIALS_FILE) /nonexistent/pagedb-test/aws-credentials
set ::env(AWS_CONFIG_FILE) /nonexistent/pagedb-test/aws-config

# PAGEDB_VFS=fault runs a whole file through the fault VFS (unarmed, it
# passes every call through): a check of the VFS layer's plumbing.
if {[info exists ::env(PAGEDB_VFS)] && $::env(PAGEDB_VFS) eq "fault"} {
  pagedb_faultvfs register
}

# ---------------------------------------------------------------------------
# Seeds

proc hash_string {s} {
  set h 2166136261
  foreach c [split $s ""] {
    scan $c %c v
    set h [expr {(($h ^ $v) * 16777619) & 0x7fffffff}]
  }
  return $h
}

if {[info exists ::env(PAGEDB_SEED)] && $::env(PAGEDB_SEED) ne ""} {
  set ::TC(seed) $::env(PAGEDB_SEED)
} else {
  set ::TC(seed) [hash_string $::TC(file)]
}
expr {srand($::TC(seed))}
proc test_seed {} { return $::TC(seed) }

# SECS scaled by PAGEDB_TIME_SCALE (default 1, and 5 under the sanitizers):
# for how long to wait for an event that must come before calling it lost
# (a hang), never for how long something may take.  Such limits are
# generous, so that a busy machine (other work, two suites at once) cannot
# reach them; a test that waits ends as soon as its event comes.  Keep
# [scaled SECS] of one test below all.tcl's 900 s without progress (SECS
# <= 150), so that a lost event fails its test, not its whole file.
proc scaled {secs} {
  set k 1
  if {[info exists ::env(PAGEDB_SANITIZERS)] && $::env(PAGEDB_SANITIZERS)} { set k 5 }
  if {[info exists ::env(PAGEDB_TIME_SCALE)] && $::env(PAGEDB_TIME_SCALE) ne ""} {
    set k $::env(PAGEDB_TIME_SCALE)
  }
  return [expr {$secs * $k}]
}

# Long loops sized per build.  A loop over fault or crash points (the Nth
# call failing, a power loss at the Nth sync) visits every point in the
# normal build.  A sanitizer build is there to find memory and undefined-
# behaviour errors, which the same code paths at a fraction of the points
# find as well as at all of them, at several times the cost per point: it
# visits every [loop_stride]th point (4).  PAGEDB_LOOP_STRIDE sets the
# stride for either build (1: every point).  The full counts run in the
# normal build's default suite and, in any build, in make check-loops
# (doc/reliability.md, "CI time").
proc loop_stride {} {
  if {[info exists ::env(PAGEDB_LOOP_STRIDE)] && $::env(PAGEDB_LOOP_STRIDE) ne ""} {
    set s $::env(PAGEDB_LOOP_STRIDE)
    if {![string is integer -strict $s] || $s < 1} {
      error "PAGEDB_LOOP_STRIDE must be a whole number, 1 or more, not \"$s\""
    }
    return $s
  }
  if {[info exists ::env(PAGEDB_SANITIZERS)] && $::env(PAGEDB_SANITIZERS)} { return 4 }
  return 1
}

# The first point a loop visits (1 in the normal build): loops given
# different PHASEs start at different points below the stride, so that
# together they still meet the points a single one would skip.
proc loop_first {{phase 0}} { expr {1 + $phase % [loop_stride]} }

# A deterministic random integer in [lo, hi].
proc randint {lo hi} {
  return [expr {$lo + int(rand() * ($hi - $lo + 1))}]
}

# ---------------------------------------------------------------------------
# Scratch directory: test/testdir/FILE, removed and recreated.

proc testdir {} { return $::TC(testdir) }
proc testpath {name} { return [file join $::TC(testdir) $name] }

if {[info exists ::env(PAGEDB_TESTDIR)]} {
  set ::TC(testdir) [file join [file normalize $::env(PAGEDB_TESTDIR)] $::TC(file)]
} else {
  set ::TC(testdir) [file join $::TC(srcdir) testdir $::TC(file)]
}
file delete -force $::TC(testdir)
file mkdir $::TC(testdir)

# Remove a dataset (data file, catalog and SQLite's side files).
proc forcedelete {args} {
  foreach path $args {
    foreach f [glob -nocomplain -- $path $path-catalog $path-catalog-wal \
                   $path-catalog-shm $path-catalog-journal $path-index $path-index.new] {
      file delete -force $f
    }
  }
}

# ---------------------------------------------------------------------------
# File descriptors

proc fd_list {} {
  set res {}
  foreach f [lsort [glob -nocomplain /proc/self/fd/*]] {
    if {[catch {file readlink $f} target]} continue
    lappend res "[file tail $f] -> $target"
  }
  return $res
}
set ::TC(fds) [fd_list]

# The files under DIR this process holds open: their names (the last
# component), sorted, once for each descriptor (from /proc/PID/fd).
proc open_files {dir} {
  set out {}
  foreach fd [glob -nocomplain /proc/[pid]/fd/*] {
    if {![catch {file readlink $fd} to] && [string match "$dir/*" $to]} { lappend out [file tail $to] }
  }
  return [lsort $out]
}

# The fds open now that were not open when the file started.
proc fd_leaks {} {
  set res {}
  foreach f [fd_list] {
    if {[lsearch -exact $::TC(fds) $f] < 0} { lappend res $f }
  }
  return $res
}

# ---------------------------------------------------------------------------
# Tests

proc fail_test {name} {
  incr ::TC(fail)
  lappend ::TC(fail_list) $name
  puts "  (seed [test_seed]: rerun with PAGEDB_SEED=[test_seed]\
        TESTFILES=$::TC(file).test)"
  flush stdout
}

# do_test NAME SCRIPT EXPECTED
proc do_test {name cmd expected} {
  incr ::TC(count)
  if {$::TC(verbose)} { puts -nonewline "$name..."; flush stdout }
  if {[catch {uplevel #0 $cmd} result opts]} {
    if {!$::TC(verbose)} { puts -nonewline "$name..." }
    puts "\n! $name error: $result"
    puts "! errorCode: [dict get $opts -errorcode]"
    puts [dict get $opts -errorinfo]
    fail_test $name
    tc_progress
    return
  }
  set ok 0
  if {[regexp {^/(.*)/$} $expected -> re]} {
    set ok [regexp -- $re $result]
  } elseif {[regexp {^\*.*\*$} $expected] && [string length $expected] > 1} {
    set ok [string match $expected $result]
  } else {
    set ok [expr {$result eq $expected}]
  }
  if {$ok} {
    if {$::TC(verbose)} { puts " Ok" }
  } else {
    if {!$::TC(verbose)} { puts -nonewline "$name..." }
    puts "\n! $name expected: \[$expected\]"
    puts "! $name got:      \[$result\]"
    fail_test $name
  }
  flush stdout
  tc_progress
}

# do_execsql_test NAME SQL EXPECTED ?DB?
proc do_execsql_test {name sql expected {db db}} {
  uplevel 1 [list do_test $name [list $db sql $sql] [list {*}$expected]]
}

# {0 RESULT} or {1 MESSAGE}
proc catchcmd {script} {
  set rc [catch {uplevel 1 $script} msg]
  if {$rc == 1} { return [list 1 $msg] }
  return [list 0 $msg]
}

# {0 RESULT} or {1 PAGEDB_NAME} (the second element of errorCode, or the
# message if the error did not come from pagedb).
proc catchcode {script} {
  set rc [catch {uplevel 1 $script} msg opts]
  if {$rc != 1} { return [list 0 $msg] }
  set ec [dict get $opts -errorcode]
  if {[lindex $ec 0] eq "PAGEDB"} { return [list 1 [lindex $ec 1]] }
  return [list 1 $msg]
}

# do_catch_test NAME SCRIPT EXPECTED
proc do_catch_test {name script expected} {
  uplevel 1 [list do_test $name [list catchcmd $script] $expected]
}

# do_skip NAME REASON
proc do_skip {name reason} {
  incr ::TC(skip)
  lappend ::TC(skip_list) $name
  puts "$name... skipped: $reason"
  flush stdout
  tc_progress
}

# The message of the error SCRIPT raises ("no error: RESULT" if none).
proc catchmsg {script} {
  if {[catch {uplevel 1 $script} msg]} { return $msg }
  return "no error: $msg"
}

# "ok" if MSG contains every ARG, else what is missing.
proc errmsg_has {msg args} {
  foreach s $args {
    if {[string first $s $msg] < 0} { return "missing \"$s\" in: $msg" }
  }
  return ok
}

# ---------------------------------------------------------------------------
# Datasets

# Try to open PATH with ARGS: "ok" (and close it again) or the error's
# PAGEDB_NAME.
proc open_code {path args} {
  if {[catch {pagedb ::open_code_db $path {*}$args} msg opts]} {
    set ec [dict get $opts -errorcode]
    if {[lindex $ec 0] eq "PAGEDB"} { return [lindex $ec 1] }
    return $msg
  }
  ::open_code_db close
  return ok
}

# Create a dataset at PATH (deleting an old one) with FIELDS, a list of
# {name type ?codec?}; leave it open as command DB.
proc make_db {db path fields args} {
  forcedelete $path
  pagedb $db $path -create {*}$args
  foreach f $fields { $db field_add {*}$f }
  return $db
}

# The byte sizes of a dataset's files ({} if missing).
proc filesize {path} {
  if {[file exists $path]} { return [file size $path] }
  return {}
}

# Run SQL on an SQLite file (a catalog) outside pagedb, for corruption
# tests: with the Tcl sqlite3 package (Debian libsqlite3-tcl) if present,
# else with the sqlite3 command-line shell (Debian sqlite3).  Returns the
# result values as a list.
proc catalog_sql {dbfile sql} {
  if {[have_catalog_sql] eq "tcl"} {
    sqlite3 ::catalog_sql_db $dbfile
    set res [::catalog_sql_db eval $sql]
    ::catalog_sql_db close
    return $res
  }
  return [exec sqlite3 -batch $dbfile $sql]
}

# "tcl", "cli" or "" (neither: catalog_sql cannot run).
proc have_catalog_sql {} {
  if {![info exists ::TC(catalog_sql)]} {
    if {![catch {package require sqlite3}]} {
      set ::TC(catalog_sql) tcl
    } elseif {![catch {exec sqlite3 -version}]} {
      set ::TC(catalog_sql) cli
    } else {
      set ::TC(catalog_sql) ""
    }
  }
  return $::TC(catalog_sql)
}

# do_test, or a visible skip when catalog_sql cannot run.
proc do_catalog_test {name script expected} {
  if {[have_catalog_sql] eq ""} {
    do_skip $name "neither the Tcl sqlite3 package nor the sqlite3 shell is installed"
    return
  }
  uplevel 1 [list do_test $name $script $expected]
}

# Whether the VFS named NAME works for files in the scratch directory
# (pagedb_vfs_list's verdict).
proc vfs_works {name} {
  foreach e [pagedb_vfs_list [testdir]] {
    if {[lindex $e 0] eq $name && [lindex $e 1] eq "PAGEDB_OK"} { return 1 }
  }
  return 0
}

# The type of the file system mounted at DIR (per /proc/self/mounts; the
# last mount there), or "" if none is.
proc mount_type {dir} {
  set fd [open /proc/self/mounts]
  set mounts [read $fd]
  close $fd
  foreach line [split $mounts \n] {
    lassign $line dev mnt type
    if {$mnt eq $dir} { set found $type }
  }
  if {[info exists found]} { return $found }
  return ""
}

# SIGKILL the processes PIDS, at once (pagedb_kill9: no fork, no shell).
proc kill9 {pids} {
  foreach pid $pids { pagedb_kill9 $pid }
}

# tclsh and environment for child processes.
proc tclsh_path {} { return [info nameofexecutable] }

# Write SCRIPT to a file in the scratch directory and return its path.  The
# script starts with the extension loaded.
proc child_script {name script} {
  set path [testpath $name.tcl]
  set fd [open $path w]
  puts $fd "load [list $::env(PAGEDB_TCLLIB)] Tclpagedb"
  puts $fd {if {[info exists ::env(PAGEDB_VFS)] && $::env(PAGEDB_VFS) eq "fault"} { pagedb_faultvfs register }}
  puts $fd $script
  close $fd
  return $path
}

# ---------------------------------------------------------------------------
# Raw file surgery (for corruption tests)

proc read_bytes {path offset n} {
  set fd [open $path rb]
  seek $fd $offset
  set data [read $fd $n]
  close $fd
  return $data
}

# The file offset of page 0 of data file PATH (header bytes 56..63).
proc data_offset {path} {
  binary scan [read_bytes $path 56 8] wu d
  return $d
}

proc patch_file {path offset bytes} {
  set fd [open $path r+b]
  seek $fd $offset
  puts -nonewline $fd $bytes
  close $fd
}

# Invert every bit of the byte at OFFSET: always a change, whatever it was.
proc flip_byte {path offset} {
  binary scan [read_bytes $path $offset 1] cu b
  patch_file $path $offset [binary format c [expr {$b ^ 0xff}]]
}

proc truncate_file {path size} {
  set fd [open $path r+b]
  chan truncate $fd $size
  close $fd
}

proc copy_file {from to} {
  file copy -force $from $to
}

set ::M64 0xFFFFFFFFFFFFFFFF
proc mix64 {z} {
  set M $::M64
  set z [expr {(($z ^ ($z >> 30)) * 0xbf58476d1ce4e5b9) & $M}]
  set z [expr {(($z ^ ($z >> 27)) * 0x94d049bb133111eb) & $M}]
  return [expr {$z ^ ($z >> 31)}]
}

# The data file header checksum (pdb_checksum of src/error.c) of BYTES.
proc pdb_checksum {bytes} {
  set n [string length $bytes]
  set h [expr {0x9e3779b97f4a7c15 ^ $n}]
  set i 0
  for {} {$i + 8 <= $n} {incr i 8} {
    binary scan $bytes @${i}wu w
    set h [mix64 [expr {$h ^ $w}]]
  }
  set tail 0
  for {set k 0} {$i < $n} {incr i; incr k} {
    binary scan $bytes @${i}cu b
    set tail [expr {$tail | ($b << (8 * $k))}]
  }
  return [mix64 [expr {$h ^ $tail ^ 0xa0761d6478bd642f}]]
}

proc u64_to_bytes {v} {
  if {$v >= (1 << 63)} { set v [expr {$v - (1 << 64)}] }
  return [binary format w $v]
}

# Rewrite the checksum of the header of data file PATH (bytes 120..127 over
# bytes 0..119), after a test patched a header field.
proc fix_header_checksum {path} {
  set h [read_bytes $path 0 120]
  patch_file $path 120 [u64_to_bytes [pdb_checksum $h]]
}

# Header fields (src/pager.c): version at 16 (u32), page size at 24 (u64),
# uuid at 32 (16 bytes), checksum at 120.
proc header_version {path} {
  binary scan [read_bytes $path 16 4] iu v
  return $v
}
proc set_header_version {path v} {
  patch_file $path 16 [binary format i $v]
  fix_header_checksum $path
}
proc header_checksum_ok {path} {
  binary scan [read_bytes $path 120 8] wu c
  return [expr {$c == [pdb_checksum [read_bytes $path 0 120]]}]
}

# ---------------------------------------------------------------------------
# Catalog consistency

# Check the catalog of open dataset DB against its counts: returns "ok" or
# a description of the first inconsistency.
proc check_catalog {db} {
  set n [$db count]
  set rows [$db sql {SELECT count(*) FROM sample}]
  if {$rows != $n} { return "count $n but $rows sample rows" }
  set pages [$db pages]
  set maxpg [$db sql {SELECT coalesce(max(page), -1) FROM sample}]
  if {$maxpg >= $pages} { return "a sample on page $maxpg of $pages" }
  if {[catch {$db sql {SELECT coalesce(sum(nsamples),0), coalesce(max(pgno+npages),0) FROM page}} r]} {
    return "page table: $r"
  }
  lassign $r nsamp pend
  if {$nsamp != $n} { return "page table counts $nsamp samples, count is $n" }
  if {$pend > $pages} { return "page table ends at page $pend of $pages" }
  # The file holds every committed run up to its used bytes (the tail of
  # the last page need not be written).
  set ps [$db page_size]
  set end [$db sql "SELECT coalesce(max(pgno * $ps + used), 0) FROM page WHERE used > 0"]
  set size [file size [$db path]]
  set d [data_offset [$db path]]
  if {$end > 0 && $size < $d + $end} {
    return "data file $size bytes, committed runs end at [expr {$d + $end}]"
  }
  return ok
}

# ---------------------------------------------------------------------------
# The end of a test file.

# do_malloc_test NAME -body SCRIPT ?-setup SCRIPT? ?-cleanup SCRIPT?
#                ?-check SCRIPT? ?-max N?
#
# The out-of-memory loop of SQLite's do_malloc_test: for N = 1, 2, ... run
# SETUP, then BODY with the Nth allocation and every one after it failing,
# then CLEANUP with allocation working again, until BODY succeeds with no
# failure injected.  Test NAME.N passes when BODY succeeded or failed with
# PAGEDB_NOMEM (and only after an injected failure); CLEANUP left no handle
# open; the bytes pagedb holds, its cache trimmed, are what they were before
# SETUP; and CHECK, if given, returns "ok".  The file must call
# mem_fault_install before anything uses the library.  In the default suite
# N steps by 1 up to 64 and by 17 after that; PAGEDB_OOM_FULL=1 (make
# check-oom) tries every N.
proc do_malloc_test {name args} {
  array set o {-setup {} -cleanup {} -check {} -max 5000}
  array set o $args
  set full [expr {[info exists ::env(PAGEDB_OOM_FULL)] && $::env(PAGEDB_OOM_FULL)}]
  for {set n 1} {$n <= $o(-max)} {incr n [expr {$full || $n < 64 ? 1 : 17}]} {
    pagedb_release_memory
    set start [pagedb_memory_used]
    uplevel #0 $o(-setup)
    mem_fault $n -persist
    set rc [catch {uplevel #0 $o(-body)} msg opts]
    set hits [mem_fault 0]
    uplevel #0 $o(-cleanup)
    pagedb_release_memory
    set used [pagedb_memory_used]
    set res ok
    if {$rc} {
      set code [lindex [dict get $opts -errorcode] 1]
      if {$code ne "PAGEDB_NOMEM"} {
        set res "failed with $code: $msg"
      } elseif {$hits == 0} {
        set res "PAGEDB_NOMEM with no failure injected: $msg"
      }
    }
    if {$res eq "ok" && [pagedb_handles] != 0} {
      set res "[pagedb_handles] handle(s) left open by the cleanup"
    }
    if {$res eq "ok" && $used != $start} {
      set res "pagedb holds $used bytes after, $start before"
    }
    if {$res eq "ok" && $o(-check) ne ""} { set res [uplevel #0 $o(-check)] }
    do_test $name.$n [list set _ $res] ok
    if {!$rc && $hits == 0} break
  }
  if {$n > $o(-max)} {
    do_test $name.max [list set _ "still failing after $o(-max) allocations"] ok
  }
}

proc finish_test {} {
  set nHandle [pagedb_handles]
  if {$nHandle != 0} {
    incr ::TC(count)
    puts "! $::TC(file): $nHandle pagedb handle command(s) still open at finish_test"
    fail_test $::TC(file)-handles
  }
  # With every handle closed, pagedb_shutdown frees the pool's cache and
  # SQLite's own state: pagedb must then hold nothing at all.
  if {$nHandle == 0} {
    set src [pagedb_shutdown]
    set used [pagedb_memory_used]
    if {$src ne "PAGEDB_OK" || $used != 0} {
      incr ::TC(count)
      puts "! $::TC(file): after closing everything, pagedb_shutdown gave $src and pagedb holds $used bytes"
      fail_test $::TC(file)-memory
    }
  }
  set leaks [fd_leaks]
  if {[llength $leaks]} {
    incr ::TC(count)
    puts "! $::TC(file): file descriptors leaked: [join $leaks {; }]"
    fail_test $::TC(file)-fds
  }
  set nPass [expr {$::TC(count) - $::TC(fail)}]
  puts "$::TC(file): $::TC(fail) errors out of $::TC(count) tests,\
        $::TC(skip) skipped (seed [test_seed])"
  if {$::TC(fail)} {
    set l $::TC(fail_list)
    if {[llength $l] > 30} { set l "[lrange $l 0 29] ... ([llength $l] in all)" }
    puts "$::TC(file): failures: $l"
  }
  # The scratch directory is kept for a failed file (and with PAGEDB_KEEP=1),
  # removed otherwise: the datasets of a run take a few hundred MB.
  if {$::TC(fail) == 0 && !([info exists ::env(PAGEDB_KEEP)] && $::env(PAGEDB_KEEP))} {
    catch {file delete -force $::TC(testdir)}
  } elseif {$::TC(fail)} {
    puts "$::TC(file): datasets kept in $::TC(testdir)"
  }
  puts "#RESULT passed=$nPass failed=$::TC(fail) skipped=$::TC(skip)"
  flush stdout
  exit [expr {$::TC(fail) ? 1 : 0}]
}
