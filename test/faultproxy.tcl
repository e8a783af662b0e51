# faultproxy.tcl UPSTREAM_PORT DIR -- an HTTP proxy on 127.0.0.1 between
# pagedb and a real server (nginx, the Ceph gateway) that injects faults,
# for remote.test.  It prints its port on stdout, then serves until killed.
#
# Each request takes the first word of the file DIR/plan that applies to
# it (rewriting the file without it); a word ending in "*" is never taken
# away (it applies to every request from then on); a word WORD@TEXT applies
# only to a request whose request line holds TEXT (push.test: one part of
# several in flight); an empty plan, or one with no word for a request,
# passes it through.
#   ok        pass through
#   500 503 429 404 403   answer that status without asking upstream
#   reset     close the connection as soon as the request is read
#   truncate  pass the headers and half the body, then close
#   long      pass the body with 7 extra bytes (Content-Length says so)
#   slow      wait DIR/slow_ms (default 3000) ms before answering
#   etag      pass through with another ETag (a changed object)
#   range     pass through with a Content-Range one byte off
# Every request's line and the word applied are appended to DIR/log.
# Requests go upstream as HTTP/1.0 with "Connection: close", and every
# answer closes its connection: simple, and each request is a fresh
# connection for curl to make (its retries included).

lassign $argv upstream dir
set planfile [file join $dir plan]
set logfile [file join $dir log]

proc take_word {reqline} {
  global planfile
  if {![file exists $planfile]} { return ok }
  set f [open $planfile]
  set words [read $f]
  close $f
  for {set i 0} {$i < [llength $words]} {incr i} {
    set w [lindex $words $i]
    set at [string first @ $w]
    if {$at >= 0} {
      if {[string first [string range $w [expr {$at + 1}] end] $reqline] < 0} continue
      set w [string range $w 0 [expr {$at - 1}]]
    }
    if {[string index $w end] eq "*"} { return [string range $w 0 end-1] }
    set f [open $planfile w]
    puts -nonewline $f [lreplace $words $i $i]
    close $f
    return $w
  }
  return ok
}

proc logline {s} {
  set f [open $::logfile a]
  puts $f $s
  close $f
}

proc accept {sock addr port} {
  fconfigure $sock -translation binary -buffering none -blocking 1
  set head ""
  while {[gets $sock line] >= 0} {
    set line [string trimright $line "\r"]
    if {$line eq ""} break
    append head $line\n
  }
  if {$head eq ""} { close $sock; return }
  set lines [split [string trimright $head \n] \n]
  set reqline [lindex $lines 0]
  set w [take_word $reqline]
  logline "$w $reqline"
  if {[string is integer -strict $w]} {
    puts -nonewline $sock "HTTP/1.1 $w Injected\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    close $sock
    return
  }
  if {$w eq "reset"} { close $sock; return }
  if {$w eq "slow"} {
    set ms 3000
    catch {set ms [string trim [exec cat [file join $::dir slow_ms]]]}
    after $ms
  }
  # Forward, as HTTP/1.0, without the client's Connection headers, with
  # the request's body (an upload): a client that waits for "100
  # Continue" is told to go on first.
  set clen 0
  set expect 0
  foreach l [lrange $lines 1 end] {
    regexp -nocase {^content-length: *(\d+)} $l -> clen
    if {[regexp -nocase {^expect: *100-continue} $l]} { set expect 1 }
  }
  if {$expect} { puts -nonewline $sock "HTTP/1.1 100 Continue\r\n\r\n" }
  set reqbody [expr {$clen > 0 ? [read $sock $clen] : ""}]
  if {[string length $reqbody] < $clen} {
    # The client went away (killed, or gave up on a slow answer): nothing
    # to forward, and a server waiting for the rest would hold us.
    logline "gone $reqline"
    close $sock
    return
  }
  set up [socket 127.0.0.1 $::upstream]
  fconfigure $up -translation binary -buffering full
  set out "[string map {HTTP/1.1 HTTP/1.0} $reqline]\r\n"
  foreach l [lrange $lines 1 end] {
    if {[regexp -nocase {^(connection|keep-alive|proxy-connection|expect):} $l]} continue
    append out $l\r\n
  }
  append out "Connection: close\r\n\r\n"
  puts -nonewline $up $out$reqbody
  flush $up
  set resp [read $up]
  close $up
  set cut [string first "\r\n\r\n" $resp]
  set rhead [string range $resp 0 [expr {$cut - 1}]]
  set body [string range $resp [expr {$cut + 4}] end]
  set hl {}
  foreach l [split $rhead \n] {
    set l [string trimright $l \r]
    if {[regexp -nocase {^connection:} $l]} continue
    if {$w eq "etag" && [regexp -nocase {^etag:} $l]} { set l {ETag: "changed-by-faultproxy"} }
    if {$w eq "long" && [regexp -nocase {^content-length: *(\d+)} $l -> n]} { set l "Content-Length: [expr {$n + 7}]" }
    if {$w eq "range" && [regexp -nocase {^content-range: bytes (\d+)-(\d+)/(\d+)} $l -> a b t]} {
      set l "Content-Range: bytes [expr {$a + 1}]-[expr {$b + 1}]/$t"
    }
    lappend hl $l
  }
  lappend hl "Connection: close"
  if {$w eq "truncate"} { set body [string range $body 0 [expr {[string length $body] / 2 - 1}]] }
  if {$w eq "long"} { append body "EXTRA!!" }
  catch {
    puts -nonewline $sock "[join $hl \r\n]\r\n\r\n$body"
    flush $sock
  }
  close $sock
}

set srv [socket -server accept -myaddr 127.0.0.1 0]
puts [lindex [fconfigure $srv -sockname] 2]
flush stdout
vwait forever
