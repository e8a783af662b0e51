# all.tcl -- run the pagedb test files.
#
#     tclsh test/all.tcl ?-j N? ?FILE ...?
#
# Runs every test/*.test (or the FILEs named: "types", "types.test" or a
# path; also the environment variable TESTFILES) each in its own tclsh
# process, so that a crash ends only that file.  The last line printed is
# exactly
#
#     N passed, N failed
#
# (preceded by "N skipped" when tests were skipped) and the exit status is
# non-zero if a test failed or a child crashed, hung or exited without
# reporting (each counts as a failure, by file name).
#
# Files run side by side: N at a time (-j N, or PAGEDB_JOBS; default the
# number of processors).  With one at a time a file's output is streamed;
# with more, each file's output is held and printed whole when it ends,
# between its "=== NAME" and "--- NAME: S s" lines, so that the log reads
# as a serial run's would (in the order files finish).  The longest files
# start first (their shares below), so that the last to finish is a short
# one.  Test files are independent: each has its own scratch directory
# (testdir), its own servers on free ports, names with its pid in /dev/shm;
# a file that needs something machine-wide must take it for one child
# process only (backend.test's seccomp filter), never for the machine.
#
# Time is a number someone watches: after the counts it prints the slowest
# ten files, the wall-clock time against the suite's budget and the sum of
# the files' times, and a note for each file over its share.  A note is
# not a failure (tests check behaviour, never time); it says where CI's
# minutes went.  Shares are seconds measured on this project's 2-core VM
# with the other core busy (doc/reliability.md, "CI time"); a sanitizer
# build (PAGEDB_SANITIZERS) has its own column.
#
# Environment: PAGEDB_TCLLIB, PAGEDB_SHELL, PAGEDB_LIB, PAGEDB_BENCH (set by
# make check); PAGEDB_SEED (one seed for every file); PAGEDB_JOBS (files at
# once); PAGEDB_TIMEOUT (seconds a file may go without finishing a test
# before it is killed as hung, default 900).
#
# The timeout counts from the last test the file finished (tester.tcl
# prints "#PROGRESS" after each when PAGEDB_PROGRESS is set, as here), not
# from the file's start: a file that is slow because the machine is busy
# (other work, files side by side, a sanitizer build) keeps going as long
# as its tests keep finishing, and a file stuck in one test is still killed
# PAGEDB_TIMEOUT seconds after its last one.

set srcdir [file normalize [file dirname [info script]]]

# Each file's share of the suite, in seconds {normal sanitizer}: about 1.5
# times what it took in a busy run of .ci/run (the other core running
# stress --cpu 1: doc/reliability.md, "CI time"), rounded; longest first is
# also the order files start in.  A file not listed has the default share.
set shares {
  powerloss.test    {300 300}
  powerloss-close.test {15 20}
  remote.test       {150 180}
  cache-private.test {8 20}
  creds.test        {75 120}
  fault-uring.test  {120 120}
  fault.test        {120 90}
  vacuum.test       {90 150}
  diskfull.test     {90 120}
  batch.test        {90 120}
  types.test        {45 120}
  zstd.test         {8 20}
  push.test         {110 100}
  kill.test         {60 90}
  ioerr.test        {60 90}
  ioerr-uring.test  {60 90}
  shell.test        {45 60}
  tensor.test       {20 60}
  tokens.test       {8 20}
  shell2.test       {45 60}
  import.test       {45 60}
  crash.test        {45 60}
  oom.test          {45 90}
  rss.test          {30 45}
  attach.test       {30 45}
  parts.test        {45 100}
  partscrash.test   {25 40}
  partsorphans.test {2 4}
  importjobs.test   {8 15}
  partsmulti.test   {20 40}
  partsbound.test   {15 30}
  partsmore.test    {5 10}
  partsrows.test    {5 10}
  partsremote.test  {100 150}
  threads.test      {30 45}
  corpus.test       {30 45}
  valgrind.test     {30 30}
  bench.test        {30 30}
  catvfs.test       {30 30}
  benchdoc.test     {5 5}
}
set default_share {20 30}
# The wall-clock budgets of the two suites, with the builds about 2,400 s:
# .ci/run within 40 minutes on a busy machine.
set budget {900 1200}

# The extension links libpagedb from the build tree: let children find it.
if {[info exists env(PAGEDB_LIB)]} {
  set libdir [file dirname $env(PAGEDB_LIB)]
  if {[info exists env(LD_LIBRARY_PATH)] && $env(LD_LIBRARY_PATH) ne ""} {
    set env(LD_LIBRARY_PATH) "$libdir:$env(LD_LIBRARY_PATH)"
  } else {
    set env(LD_LIBRARY_PATH) $libdir
  }
}

proc nprocs {} {
  if {![catch {exec getconf _NPROCESSORS_ONLN} n] && [string is integer -strict $n] && $n > 0} {
    return $n
  }
  return 1
}

set jobs ""
if {[info exists env(PAGEDB_JOBS)] && $env(PAGEDB_JOBS) ne ""} { set jobs $env(PAGEDB_JOBS) }
set names {}
for {set i 0} {$i < [llength $argv]} {incr i} {
  set a [lindex $argv $i]
  if {$a eq "-j"} {
    set jobs [lindex $argv [incr i]]
  } elseif {[regexp {^-j(\d+)$} $a -> n]} {
    set jobs $n
  } else {
    lappend names $a
  }
}
if {$jobs eq ""} { set jobs [nprocs] }
if {![string is integer -strict $jobs] || $jobs < 1} {
  puts "all.tcl: -j/PAGEDB_JOBS must be a whole number of files at once, 1 or more, not \"$jobs\""
  puts "0 passed, 1 failed"
  exit 1
}

if {![llength $names] && [info exists env(TESTFILES)]} {
  set names $env(TESTFILES)
}
set files {}
if {[llength $names]} {
  foreach n $names {
    if {[file isfile $n]} {
      lappend files [file normalize $n]
    } else {
      set f [file join $srcdir [file rootname [file tail $n]].test]
      if {![file exists $f]} {
        puts "all.tcl: no such test file: $n"
        puts "0 passed, 1 failed"
        exit 1
      }
      lappend files $f
    }
  }
} else {
  set files [lsort [glob -directory $srcdir *.test]]
}

set timeout 900
if {[info exists env(PAGEDB_TIMEOUT)]} { set timeout $env(PAGEDB_TIMEOUT) }
set env(PAGEDB_PROGRESS) 1
set col [expr {[info exists env(PAGEDB_SANITIZERS)] && $env(PAGEDB_SANITIZERS) ? 1 : 0}]

proc share {name} {
  if {[dict exists $::shares $name]} { return [lindex [dict get $::shares $name] $::col] }
  return [lindex $::default_share $::col]
}

# Longest share first; ties in name order.
set queue [lsort -command {apply {{a b} {
  set d [expr {[share [file tail $b]] - [share [file tail $a]]}]
  expr {$d != 0 ? $d : [string compare $a $b]}
}}} $files]
if {$jobs > [llength $queue]} { set jobs [llength $queue] }
set stream [expr {$jobs == 1}]

set total(pass) 0
set total(fail) 0
set total(skip) 0
set failed_files {}
set failure_lines {}
set times {}
set running 0

# One child's state lives in the array ::F$chan: name, t1, out (the held
# output), result, timedout, pids, timer.

proc on_readable {chan} {
  upvar #0 F$chan st
  if {[gets $chan line] >= 0} {
    if {[regexp {^#RESULT passed=(\d+) failed=(\d+) skipped=(\d+)} $line -> p f s]} {
      set st(result) [list $p $f $s]
    } elseif {$line eq "#PROGRESS"} {
      # A test finished: the file is not hung.
      arm_timer $chan
    } else {
      # A failure's lines ("! NAME expected/got/error"), kept for the
      # summary: CI shows the end of the output.
      if {[string match "! *" $line] && [llength $::failure_lines] < 40} {
        lappend ::failure_lines "$st(name): [string range $line 2 300]"
      }
      if {$::stream} {
        puts $line
        flush stdout
      } else {
        append st(out) $line \n
      }
    }
    return
  }
  if {[eof $chan]} {
    fileevent $chan readable {}
    finish_file $chan
  }
}

# (Re)start the timer that kills CHAN's file after $timeout s without progress.
proc arm_timer {chan} {
  upvar #0 F$chan st
  if {[info exists st(timer)]} { after cancel $st(timer) }
  set st(timer) [after [expr {$::timeout * 1000}] [list on_timeout $chan]]
}

proc on_timeout {chan} {
  upvar #0 F$chan st
  set st(timedout) 1
  foreach pid $st(pids) { catch {exec env -u LD_PRELOAD /bin/sh -c "kill -9 $pid"} }
  fileevent $chan readable {}
  finish_file $chan
}

proc start_file {f} {
  set name [file tail $f]
  set chan [open |[list [info nameofexecutable] $f 2>@1] r]
  upvar #0 F$chan st
  array set st [list name $name t1 [clock milliseconds] out "" result {} timedout 0 pids [pid $chan]]
  fconfigure $chan -blocking 0 -buffering line
  fileevent $chan readable [list on_readable $chan]
  arm_timer $chan
  incr ::running
  if {$::stream} {
    puts "=== $name"
    flush stdout
  }
}

# CHAN's file ended (or timed out): count it, print it, start the next.
proc finish_file {chan} {
  upvar #0 F$chan st
  after cancel $st(timer)
  if {$st(timedout)} {
    # What it printed and was not yet read (without waiting: a grandchild
    # may hold the pipe open).
    catch {append st(out) [read $chan]}
  }
  fconfigure $chan -blocking 1
  set status ok
  if {[catch {close $chan} msg opts]} {
    set ec [dict get $opts -errorcode]
    switch -- [lindex $ec 0] {
      CHILDSTATUS { set status "exit status [lindex $ec 2]" }
      CHILDKILLED { set status "killed by [lindex $ec 2]" }
      default {
        # Output on stderr alone does not make it an error here: 2>@1.
        set status "error: $msg"
      }
    }
  }
  set name $st(name)
  set secs [expr {([clock milliseconds] - $st(t1)) / 1000.0}]
  if {$st(timedout)} { set status "timed out: no test finished in $::timeout s" }
  if {!$::stream} {
    puts "=== $name"
    puts -nonewline $st(out)
  }
  if {[llength $st(result)]} {
    lassign $st(result) p fl s
    incr ::total(pass) $p
    incr ::total(fail) $fl
    incr ::total(skip) $s
    if {$fl > 0} { lappend ::failed_files $name }
    if {$status ne "ok" && $fl == 0} {
      incr ::total(fail)
      lappend ::failed_files "$name ($status)"
      puts "!!! $name: $status after reporting success"
    }
  } else {
    incr ::total(fail)
    lappend ::failed_files "$name ($status, no result)"
    puts "!!! $name: crashed or did not finish: $status"
  }
  puts [format "--- %s: %.1f s" $name $secs]
  flush stdout
  lappend ::times [list $name $secs]
  unset st
  incr ::running -1
  start_more
}

proc start_more {} {
  while {$::running < $::jobs && [llength $::queue]} {
    set ::queue [lassign $::queue f]
    start_file $f
  }
  if {$::running == 0} { set ::alldone 1 }
}

set t0 [clock milliseconds]
start_more
vwait alldone

set secs [expr {([clock milliseconds] - $t0) / 1000.0}]
set sum 0.0
foreach t $times { set sum [expr {$sum + [lindex $t 1]}] }
set slow [lrange [lsort -real -decreasing -index 1 $times] 0 9]
puts "all.tcl: slowest: [join [lmap t $slow {format "%s %.0f s" {*}$t}] {, }]"
foreach t $times {
  lassign $t name s
  if {$s > [share $name]} {
    puts [format "all.tcl: budget: %s took %.0f s, over its share of %d s" $name $s [share $name]]
  }
}
set line [format "all.tcl: %d files in %.1f s (%d at once; %.1f s of files' time)" \
            [llength $files] $secs $jobs $sum]
if {![llength $names]} {
  # The whole suite: its wall-clock time against the budget.
  set b [lindex $budget $col]
  append line [format "; budget %d s%s" $b [expr {$secs > $b ? ", OVER by [expr {round($secs - $b)}] s" : ""}]]
}
puts $line
if {[llength $failed_files]} {
  foreach l $failure_lines { puts "  $l" }
  puts "Failures in: [join $failed_files {, }]"
}
# The same lines into PAGEDB_FAILURES_FILE, when set (Makefile.am's
# check-local prints them again after the Python suite's log, so that a
# log read from its tail, as CI's is, names what failed).
if {[info exists env(PAGEDB_FAILURES_FILE)]} {
  set fd [open $env(PAGEDB_FAILURES_FILE) w]
  foreach l $failure_lines { puts $fd "  $l" }
  if {[llength $failed_files]} { puts $fd "Failures in: [join $failed_files {, }]" }
  puts $fd "$total(pass) passed, $total(fail) failed"
  close $fd
}
if {$total(skip)} { puts "$total(skip) skipped" }
puts "$total(pass) passed, $total(fail) failed"
exit [expr {$total(fail) ? 1 : 0}]
