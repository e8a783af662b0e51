# servers.tcl -- the real servers of the remote tests, started the same way
# by each file that needs them (remote.test, cache-private.test,
# creds.test): nginx (nginx.sh) and a one-node Ceph cluster with its S3
# gateway (micro-ceph.sh), both on free loopback ports under the file's
# scratch directory, stopped by a watcher when the test process dies and
# by srv_stop at its end.  Sourced after tester.tcl.
#
# Also the environment the remote tests start from: nothing of the
# machine's remote settings, credentials or metadata services reaches
# them (srv_clean_env), so no test contacts a non-loopback address.

set ::srv_here [file dirname [file normalize [info script]]]

# Unset every variable through which the machine's environment could
# point pagedb at a server, a credential or a metadata service; the
# instance metadata service is disabled outright (a test that wants one
# starts its own on 127.0.0.1 and names it).
proc srv_clean_env {} {
  foreach v {CURL_CA_BUNDLE SSL_CERT_FILE AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_REGION AWS_DEFAULT_REGION
             AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE
             AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE AWS_CONTAINER_CREDENTIALS_FULL_URI
             AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_AUTHORIZATION_TOKEN
             AWS_EC2_METADATA_SERVICE_ENDPOINT PAGEDB_REMOTE_CONNECTIONS PAGEDB_CACHE_BYTES} {
    unset -nocomplain ::env($v)
  }
  # No ~/.aws of the machine's user: files of the test's own, or none.
  set ::env(AWS_SHARED_CREDENTIALS_FILE) /nonexistent/pagedb-test/aws-credentials
  set ::env(AWS_CONFIG_FILE) /nonexistent/pagedb-test/aws-config
  set ::env(AWS_EC2_METADATA_DISABLED) true
}

# Start nginx serving DIR/www (TLS too when TLS is 1): its port, or an
# error with the reason.
proc srv_nginx {dir {tls 0}} {
  if {$tls} { return [exec env NGINX_TLS=1 sh $::srv_here/nginx.sh start $dir [pid]] }
  return [exec sh $::srv_here/nginx.sh start $dir [pid]]
}

# Start the Ceph cluster in DIR: {PORT ACCESS_KEY SECRET_KEY}, or an error
# with the reason.
proc srv_ceph {dir} {
  return [exec bash $::srv_here/micro-ceph.sh start $dir [pid]]
}

# An s3cmd configuration at PATH for the gateway on PORT with KEY/SECRET.
proc srv_s3cfg {path port key secret} {
  set fd [open $path w]
  puts $fd "\[default\]\naccess_key = $key\nsecret_key = $secret\nhost_base = 127.0.0.1:$port"
  puts $fd "host_bucket = 127.0.0.1:$port\nuse_https = False\nsignature_v2 = False"
  close $fd
  return $path
}

# s3cmd ARGS with configuration CFG, without a sanitizer build's preloaded
# runtime.
proc srv_s3cmd {cfg args} {
  return [exec env -u LD_PRELOAD s3cmd -c $cfg {*}$args]
}

# Stop what srv_nginx and srv_ceph started in the directories given.
proc srv_stop {{ngxdir ""} {cephdir ""}} {
  if {$ngxdir ne ""} { catch {exec sh $::srv_here/nginx.sh stop $ngxdir} }
  if {$cephdir ne ""} { catch {exec bash $::srv_here/micro-ceph.sh stop $cephdir} }
}

# Secrets never printed (issue 30): a file calls srv_record at its start,
# which records every pagedb error message the extension makes
# (pagedb_messages) and lets it add any other output with srv_saw (the
# shell's, a setting read back); srv_scan_secrets NAME SECRETS at its end
# is a test that none of them holds one of SECRETS (keys, tokens, the
# authorization of a metadata service) or a piece of a signed request.
set ::srv_seen {}
proc srv_record {} { pagedb_messages -record 1 }
proc srv_saw {text} { lappend ::srv_seen $text; return $text }
proc srv_scan_secrets {name secrets} {
  set ::srv_secrets $secrets
  do_test $name {
    set texts [concat [pagedb_messages] $::srv_seen [list [pagedb_remote_stats]]]
    set found {}
    foreach text $texts {
      foreach s $::srv_secrets {
        if {$s ne "" && [string first $s $text] >= 0} { lappend found "secret [string range $s 0 3]..." }
      }
      foreach w {Signature= Credential= x-amz-security-token Authorization:} {
        if {[string first $w $text] >= 0} { lappend found $w }
      }
    }
    list [expr {[llength $texts] > 5}] [lsort -unique $found]
  } {1 {}}
}
