# mdserver.tcl DIR TTL -- a metadata server for creds.test on 127.0.0.1:
# the EC2 instance metadata service's IMDSv2 credential paths and an ECS
# container credentials endpoint, handing out the key pairs of DIR/keys
# (one "ACCESS SECRET" per line) in turn: the first credentials request
# gets the first pair, each later one the next (staying on the last), each
# expiring TTL seconds after it is handed out.
#
#   PUT /latest/api/token                 (X-aws-ec2-metadata-token-ttl-seconds
#                                          required) -> a session token
#   GET /latest/meta-data/iam/security-credentials/      -> pagedb-role
#   GET /latest/meta-data/iam/security-credentials/pagedb-role -> JSON
#       (both with X-aws-ec2-metadata-token: a token it gave, else 401)
#   GET /creds  (Authorization: the contents of DIR/auth) -> JSON
#
# Writes its port to DIR/port once listening, and one line per request
# ("METHOD PATH STATUS") to DIR/log.  Exits when stdin closes (its parent,
# the test, is gone).

lassign $argv dir ttl
set keys {}
set fd [open $dir/keys]
foreach line [split [read $fd] \n] { if {[llength $line] == 2} { lappend keys $line } }
close $fd
set auth ""
if {[file exists $dir/auth]} { set fd [open $dir/auth]; set auth [string trim [read $fd]]; close $fd }
set served 0
set tokens {}

proc logreq {line} {
  set fd [open $::dir/log a]
  puts $fd $line
  close $fd
}

proc answer {ch status body} {
  set text [dict get {200 OK 400 {Bad Request} 401 Unauthorized 404 {Not Found}} $status]
  puts -nonewline $ch "HTTP/1.1 $status $text\r\nContent-Length: [string length $body]\r\nConnection: close\r\n\r\n$body"
  close $ch
}

proc creds_json {} {
  lassign [lindex $::keys [expr {min($::served, [llength $::keys] - 1)}]] ak sk
  incr ::served
  set exp [clock format [expr {[clock seconds] + $::ttl}] -format %Y-%m-%dT%H:%M:%SZ -gmt 1]
  return "{\n  \"Code\" : \"Success\",\n  \"Type\" : \"AWS-HMAC\",\n  \"AccessKeyId\" : \"$ak\",\n  \"SecretAccessKey\" : \"$sk\",\n  \"Token\" : \"\",\n  \"Expiration\" : \"$exp\"\n}"
}

proc serve {ch} {
  if {[catch {gets $ch line} n] || $n < 0} {
    if {[eof $ch]} { close $ch }
    return
  }
  upvar #0 req$ch r
  if {![info exists r(line)]} {
    set r(line) $line
    set r(h) {}
    return
  }
  if {$line ne ""} {
    if {[regexp {^([^:]+):\s*(.*)$} $line -> k v]} { dict set r(h) [string tolower $k] $v }
    return
  }
  lassign $r(line) method path
  set h $r(h)
  unset r
  fileevent $ch readable {}
  set status 200
  set body ""
  set tok [expr {[dict exists $h x-aws-ec2-metadata-token] ? [dict get $h x-aws-ec2-metadata-token] : ""}]
  switch -glob -- "$method $path" {
    "PUT /latest/api/token" {
      if {![dict exists $h x-aws-ec2-metadata-token-ttl-seconds]} {
        set status 400
      } else {
        set body tok[clock milliseconds][llength $::tokens]
        lappend ::tokens $body
      }
    }
    "GET /latest/meta-data/iam/security-credentials/" {
      if {$tok eq "" || $tok ni $::tokens} { set status 401 } else { set body pagedb-role }
    }
    "GET /latest/meta-data/iam/security-credentials/pagedb-role" {
      if {$tok eq "" || $tok ni $::tokens} { set status 401 } else { set body [creds_json] }
    }
    "GET /creds" {
      set a [expr {[dict exists $h authorization] ? [dict get $h authorization] : ""}]
      if {$a ne $::auth} { set status 401 } else { set body [creds_json] }
    }
    default { set status 404 }
  }
  logreq "$method $path $status"
  answer $ch $status $body
}

proc accept {ch addr port} {
  fconfigure $ch -translation {auto lf} -blocking 0
  fileevent $ch readable [list serve $ch]
}

set s [socket -server accept -myaddr 127.0.0.1 0]
set fd [open $dir/port.tmp w]
puts $fd [lindex [fconfigure $s -sockname] 2]
close $fd
file rename -force $dir/port.tmp $dir/port
fconfigure stdin -blocking 0
fileevent stdin readable { read stdin; if {[eof stdin]} { exit 0 } }
vwait forever
