#!/bin/sh
# nginx.sh start DIR | stop DIR -- an nginx of our own on 127.0.0.1 for
# the remote tests (test/remote.test): it serves DIR/www with byte ranges,
# runs as the current user with everything (config, pid file, logs,
# temporary paths) under DIR, on a free port it prints on start.  Needs the
# Debian package nginx-light (tool/install-deps.sh).  Exits non-zero with
# the reason when nginx cannot start.  With OWNER_PID (start DIR PID), a
# watcher stops nginx when that process is gone, however it ended.
#
# With NGINX_TLS=1 it also serves DIR/www over TLS on a second free port,
# written to DIR/tls.port, with a self-signed certificate for 127.0.0.1
# made now by `openssl req` (DIR/tls/cert.pem: the CA a client must be
# given) and another, unrelated one (DIR/tls/other.pem: a CA that does
# not verify the server).
set -e
# Waits end at their event; their limits scale as the suite's do
# (tester.tcl's [scaled]), so a busy machine does not fail a start.
K=${PAGEDB_TIME_SCALE:-}
[ -n "$K" ] || { K=1; [ "${PAGEDB_SANITIZERS:-0}" = 1 ] && K=5; }
K=${K%%.*}; case $K in ""|*[!0-9]*|0) K=1 ;; esac   # whole seconds: 1.5 -> 1
# The servers and their tools are not ours to instrument: a sanitizer build
# preloads its runtime into the test's processes (Makefile.am), not theirs.
unset LD_PRELOAD
# The watcher stops this start's nginx only: a later start in the same DIR
# (the next run of the suite) writes another token, and its nginx is not
# this watcher's to stop.
watch() {
  [ -n "$1" ] || return 0
  T=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
  echo "$T" > "$D/token"
  (while kill -0 "$1" 2>/dev/null; do sleep 1; done; sh "$0" stop "$D" "$T") </dev/null >/dev/null 2>&1 &
}
cmd=$1 D=$2
[ -n "$D" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
case $cmd in
start)
  [ -x "$NGINX" ] || { echo "nginx not found (install nginx-light)" >&2; exit 1; }
  mkdir -p "$D/www" "$D/tmp" "$D/log"
  if [ "${NGINX_TLS:-0}" = 1 ]; then
    command -v openssl >/dev/null || { echo "openssl not found (install openssl): no TLS certificate" >&2; exit 1; }
    mkdir -p "$D/tls"
    for c in cert other; do
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj "/CN=127.0.0.1/O=pagedb test $c" -addext "subjectAltName=IP:127.0.0.1" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -keyout "$D/tls/$c.key" -out "$D/tls/$c.pem" 2>"$D/log/openssl.err" \
        || { echo "openssl req failed: $(tail -3 "$D/log/openssl.err")" >&2; exit 1; }
    done
  fi
  for try in 1 2 3 4 5 6 7 8 9 10; do
    # A free port: ask the kernel for one, then let nginx take it (a race
    # with another process is retried).
    PORT=$(tclsh <<'TCL'
set s [socket -server {} -myaddr 127.0.0.1 0]
set t [socket -server {} -myaddr 127.0.0.1 0]
puts "[lindex [fconfigure $s -sockname] 2] [lindex [fconfigure $t -sockname] 2]"
close $s
close $t
TCL
)
    TLSPORT=${PORT#* } PORT=${PORT% *}
    TLS_LINES=""
    [ "${NGINX_TLS:-0}" = 1 ] && TLS_LINES="listen 127.0.0.1:$TLSPORT ssl;
    ssl_certificate $D/tls/cert.pem;
    ssl_certificate_key $D/tls/cert.key;"
    USER_LINE=""
    [ "$(id -u)" = 0 ] && USER_LINE="user $(id -un) $(id -gn);"
    cat > "$D/nginx.conf" <<CONF
daemon on;
$USER_LINE
worker_processes 1;
pid $D/nginx.pid;
error_log $D/log/error.log warn;
events { worker_connections 256; }
http {
  access_log $D/log/access.log;
  client_body_temp_path $D/tmp/body;
  proxy_temp_path $D/tmp/proxy;
  fastcgi_temp_path $D/tmp/fastcgi;
  uwsgi_temp_path $D/tmp/uwsgi;
  scgi_temp_path $D/tmp/scgi;
  default_type application/octet-stream;
  sendfile on;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$PORT;
    $TLS_LINES
    root $D/www;
    location / { }
    # push.test: a directory that takes uploads (WebDAV PUT and DELETE;
    # nginx-light has the dav module); the rest of the root refuses them.
    location /dav/ { dav_methods PUT DELETE; create_full_put_path on; client_max_body_size 0; }
  }
}
CONF
    if "$NGINX" -p "$D" -c "$D/nginx.conf" -e "$D/log/error.log" 2>"$D/log/start.err"; then
      for i in $(seq $((300 * K))); do
        if [ -s "$D/nginx.pid" ]; then
          [ "${NGINX_TLS:-0}" = 1 ] && echo "$TLSPORT" > "$D/tls.port"
          watch "$3"
          echo "$PORT"
          exit 0
        fi
        sleep 0.1
      done
    fi
    grep -q "Address already in use" "$D/log/start.err" "$D/log/error.log" 2>/dev/null || break
  done
  echo "nginx did not start: $(cat "$D/log/start.err" "$D/log/error.log" 2>/dev/null | tail -3)" >&2
  exit 1 ;;
stop)
  # stop DIR TOKEN (the watcher): only the nginx of the start that wrote TOKEN.
  [ -z "$3" ] || [ "$(cat "$D/token" 2>/dev/null)" = "$3" ] || exit 0
  [ -s "$D/nginx.pid" ] && kill "$(cat "$D/nginx.pid")" 2>/dev/null || true
  for i in $(seq $((300 * K))); do
    [ -e "$D/nginx.pid" ] || exit 0
    sleep 0.1
  done ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
