# all.tcl -- run the pagedb test files.
#
#     tclsh test/all.tcl ?FILE ...?
#
# Runs every test/*.test (or the FILEs named: "types", "types.test" or a
# path; also the environment variable TESTFILES) each in its own tclsh
# process, so that a crash ends only that file.  Their output is streamed.
# The last line printed is exactly
#
#     N passed, N failed
#
# (preceded by "N skipped" when tests were skipped)
# and the exit status is non-zero if a test failed or a child crashed, hung
# or exited without reporting (each counts as a failure, by file name).
#
# Environment: PAGEDB_TCLLIB, PAGEDB_SHELL, PAGEDB_LIB, PAGEDB_BENCH (set by
# make check); PAGEDB_SEED (one seed for every file); PAGEDB_TIMEOUT (seconds
# a file may go without finishing a test before it is killed as hung,
# default 900).
#
# The timeout counts from the last test the file finished (tester.tcl
# prints "#PROGRESS" after each when PAGEDB_PROGRESS is set, as here), not
# from the file's start: a file that is slow because the machine is busy
# (other work, two suites at once, a sanitizer build) keeps going as long
# as its tests keep finishing, and a file stuck in one test is still killed
# PAGEDB_TIMEOUT seconds after its last one.

set srcdir [file normalize [file dirname [info script]]]

# The extension links libpagedb from the build tree: let children find it.
if {[info exists env(PAGEDB_LIB)]} {
  set libdir [file dirname $env(PAGEDB_LIB)]
  if {[info exists env(LD_LIBRARY_PATH)] && $env(LD_LIBRARY_PATH) ne ""} {
    set env(LD_LIBRARY_PATH) "$libdir:$env(LD_LIBRARY_PATH)"
  } else {
    set env(LD_LIBRARY_PATH) $libdir
  }
}

set names $argv
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

set total(pass) 0
set total(fail) 0
set total(skip) 0
set failed_files {}
set failure_lines {}

proc on_readable {chan} {
  global state
  if {[gets $chan line] >= 0} {
    if {[regexp {^#RESULT passed=(\d+) failed=(\d+) skipped=(\d+)} $line -> p f s]} {
      set state(result) [list $p $f $s]
    } elseif {$line eq "#PROGRESS"} {
      # A test finished: the file is not hung.
      arm_timer
    } else {
      # A failure's lines ("! NAME expected/got/error"), kept for the
      # summary: CI shows the end of the output.
      if {[string match "! *" $line] && [llength $::failure_lines] < 40} {
        lappend ::failure_lines "$state(name): [string range $line 2 300]"
      }
      puts $line
      flush stdout
    }
    return
  }
  if {[eof $chan]} {
    fileevent $chan readable {}
    set state(done) eof
  }
}

# (Re)start the timer that kills the file after $timeout s without progress.
proc arm_timer {} {
  global state timeout
  if {[info exists state(timer)]} { after cancel $state(timer) }
  set state(timer) [after [expr {$timeout * 1000}] on_timeout]
}

proc on_timeout {} {
  global state
  set state(timedout) 1
  foreach pid $state(pids) { catch {exec env -u LD_PRELOAD /bin/sh -c "kill -9 $pid"} }
  set state(done) timeout
}

set t0 [clock milliseconds]
foreach f $files {
  set name [file tail $f]
  puts "=== $name"
  flush stdout
  array unset state
  set state(name) $name
  set state(result) {}
  set state(timedout) 0
  set t1 [clock milliseconds]
  set chan [open |[list [info nameofexecutable] $f 2>@1] r]
  set state(pids) [pid $chan]
  fconfigure $chan -blocking 0 -buffering line
  fileevent $chan readable [list on_readable $chan]
  arm_timer
  vwait state(done)
  after cancel $state(timer)
  fconfigure $chan -blocking 1
  # Drain what is left after a timeout.
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
  set secs [expr {([clock milliseconds] - $t1) / 1000.0}]
  if {$state(timedout)} { set status "timed out: no test finished in $timeout s" }
  if {[llength $state(result)]} {
    lassign $state(result) p fl s
    incr total(pass) $p
    incr total(fail) $fl
    incr total(skip) $s
    if {$fl > 0} { lappend failed_files $name }
    if {$status ne "ok" && $fl == 0} {
      incr total(fail)
      lappend failed_files "$name ($status)"
      puts "!!! $name: $status after reporting success"
    }
  } else {
    incr total(fail)
    lappend failed_files "$name ($status, no result)"
    puts "!!! $name: crashed or did not finish: $status"
  }
  puts [format "--- %s: %.1f s" $name $secs]
  flush stdout
}

set secs [expr {([clock milliseconds] - $t0) / 1000.0}]
puts [format "all.tcl: %d files in %.1f s" [llength $files] $secs]
if {[llength $failed_files]} {
  foreach l $failure_lines { puts "  $l" }
  puts "Failures in: [join $failed_files {, }]"
}
if {$total(skip)} { puts "$total(skip) skipped" }
puts "$total(pass) passed, $total(fail) failed"
exit [expr {$total(fail) ? 1 : 0}]
