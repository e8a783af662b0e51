#!/bin/bash
# micro-ceph.sh start DIR | stop DIR -- a one-node Ceph cluster for the
# remote tests (test/remote.test): one monitor, one OSD on memstore, one
# RADOS gateway (S3) on 127.0.0.1, everything under DIR (a fresh temporary
# directory), and an S3 user.  Modelled on Ceph's src/test/micro-osd.sh.
# Needs the Debian packages ceph-mon, ceph-osd, radosgw (tool/install-deps.sh).
#
# start DIR [OWNER_PID] prints one line: "PORT ACCESS_KEY SECRET_KEY" (the gateway answers
# S3 on http://127.0.0.1:PORT); it exits non-zero with the reason if the
# cluster does not come up within a minute.  stop kills the daemons by
# their pid files and waits for them; with OWNER_PID a watcher stops the
# cluster when that process is gone, however it ended.  CEPH_MEMSTORE_BYTES
# sets the OSD's memory store (default 1 GiB; tool/pushbench.sh wants more).
#
# What the start has to get right (each seen to fail otherwise):
#   - cephx keys: with "auth ... = none" radosgw fails with EACCES (-13)
#     at the monitor;
#   - IPv4 only (ms bind ipv6 = false) and the v1 protocol on loopback;
#   - daemons as the current user (--setuser/--setgroup) on a temp dir;
#   - a signed request needs "x-amz-content-sha256: UNSIGNED-PAYLOAD"
#     (pagedb sends it; s3cmd signs its payloads itself).
set -e
# Waits end at their event; their limits scale as the suite's do
# (tester.tcl's [scaled]), so a busy machine does not fail a start.
K=${PAGEDB_TIME_SCALE:-}
[ -n "$K" ] || { K=1; [ "${PAGEDB_SANITIZERS:-0}" = 1 ] && K=5; }
K=${K%%.*}; case $K in ""|*[!0-9]*|0) K=1 ;; esac   # whole seconds: 1.5 -> 1
# The servers and their tools are not ours to instrument: a sanitizer build
# preloads its runtime into the test's processes (Makefile.am), not theirs.
unset LD_PRELOAD
cmd=$1 D=$2
[ -n "$D" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

# A port free now, for a daemon that binds it seconds later.  Not one the
# kernel would give (port 0): those are ephemeral ports, which any outgoing
# connection meanwhile -- the cluster's own, a Dask cluster's -- may take
# (CI run 19: "failed to bind address 127.0.0.1:33663: Address already in
# use").  So a random one below ip_local_port_range, which only a listener
# can take; the gateway's start is retried on another if one did.
free_port() {
  tclsh <<'TCL'
set lo 32768
catch { set f [open /proc/sys/net/ipv4/ip_local_port_range]; set lo [lindex [read $f] 0]; close $f }
set port 0
if {$lo > 11000} {
  expr {srand([pid] ^ [clock microseconds])}
  for {set i 0} {$i < 100 && !$port} {incr i} {
    set p [expr {10000 + int(rand() * ($lo - 10000))}]
    if {![catch { set s [socket -server {} -myaddr 127.0.0.1 $p] }]} { close $s; set port $p }
  }
}
if {!$port} {
  set s [socket -server {} -myaddr 127.0.0.1 0]
  set port [lindex [fconfigure $s -sockname] 2]
  close $s
}
puts $port
TCL
}

stop() {
  for f in "$D"/run/*.pid; do
    [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for i in $(seq $((150 * K))); do
    alive=0
    for f in "$D"/run/*.pid; do
      [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && alive=1
    done
    [ $alive = 0 ] && return 0
    sleep 0.2
  done
  for f in "$D"/run/*.pid; do [ -s "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
}

fail() {
  echo "micro-ceph: $1" >&2
  for l in "$D"/log/*; do [ -s "$l" ] && { echo "--- $l" >&2; tail -5 "$l" >&2; }; done
  stop
  exit 1
}

case $cmd in
start)
  for b in ceph-authtool monmaptool ceph-mon ceph-osd radosgw radosgw-admin ceph; do
    command -v $b >/dev/null || { echo "micro-ceph: $b not found (install ceph-mon, ceph-osd, radosgw)" >&2; exit 1; }
  done
  rm -rf "$D"
  mkdir -p "$D"/{mon,osd,log,run,rgw}
  MONPORT=$(free_port)
  RGWPORT=$(free_port)
  FSID=$(cat /proc/sys/kernel/random/uuid)
  U=$(id -un) G=$(id -gn)
  cat > "$D/ceph.conf" <<CONF
[global]
fsid = $FSID
mon host = v1:127.0.0.1:$MONPORT
ms bind msgr2 = false
ms bind ipv6 = false
public addr = 127.0.0.1
public network = 127.0.0.0/8
keyring = $D/keyring
osd pool default size = 1
osd pool default min size = 1
osd crush chooseleaf type = 0
osd pool default pg autoscale mode = off
osd pool default pg num = 8
mon allow pool delete = true
mon allow pool size one = true
mon warn on pool no redundancy = false
auth allow insecure global id reclaim = false
run dir = $D/run
admin socket = $D/run/\$name.asok
log file = $D/log/\$name.log
pid file = $D/run/\$name.pid
setuser match path = $D
[mon.a]
mon data = $D/mon
[osd.0]
osd data = $D/osd
osd objectstore = memstore
memstore device bytes = ${CEPH_MEMSTORE_BYTES:-1073741824}
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$RGWPORT
rgw data = $D/rgw
CONF
  export CEPH_CONF=$D/ceph.conf
  ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool "$D/keyring" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
  monmaptool --create --addv a "[v1:127.0.0.1:$MONPORT]" --fsid "$FSID" "$D/monmap" >/dev/null
  ceph-mon --id a --mkfs --monmap "$D/monmap" --keyring "$D/keyring" --setuser $U --setgroup $G \
    >"$D/log/mon-mkfs.out" 2>&1 || fail "ceph-mon --mkfs failed"
  ceph-mon --id a --setuser $U --setgroup $G >"$D/log/mon.out" 2>&1 || fail "ceph-mon did not start"
  timeout $((150 * K)) ceph osd create >/dev/null 2>"$D/log/osd-create.err" || fail "the monitor does not answer"
  ceph auth get-or-create osd.0 mon 'allow profile osd' osd 'allow *' mgr 'allow profile osd' >> "$D/keyring"
  ceph osd crush add osd.0 1 root=default host=localhost >/dev/null 2>&1 || true
  ceph-osd --id 0 --mkfs --setuser $U --setgroup $G >"$D/log/osd-mkfs.out" 2>&1 || fail "ceph-osd --mkfs failed"
  ceph-osd --id 0 --setuser $U --setgroup $G >"$D/log/osd.out" 2>&1 || fail "ceph-osd did not start"
  ceph auth get-or-create client.rgw.a mon 'allow rw' osd 'allow rwx' >> "$D/keyring"
  up=0
  for try in 1 2 3 4 5; do
    radosgw -n client.rgw.a --setuser $U --setgroup $G >"$D/log/rgw.out" 2>&1 || fail "radosgw did not start"
    for i in $(seq $((300 * K))); do
      curl -s -m 2 -o /dev/null "http://127.0.0.1:$RGWPORT/" && { up=1; break; }
      # Its port taken since free_port: another port, and start it again.
      grep -q "failed to bind" "$D/log/client.rgw.a.log" "$D/log/rgw.out" 2>/dev/null && break
      sleep 1
    done
    [ $up = 1 ] && break
    grep -q "failed to bind" "$D/log/client.rgw.a.log" "$D/log/rgw.out" 2>/dev/null || break
    f=$D/run/client.rgw.a.pid
    if [ -s "$f" ]; then kill -9 "$(cat "$f")" 2>/dev/null || true; fi
    rm -f "$f"
    mv "$D/log/client.rgw.a.log" "$D/log/client.rgw.a.log.$try" 2>/dev/null || true
    RGWPORT=$(free_port)
    sed -i "s|^rgw frontends = .*|rgw frontends = beast endpoint=127.0.0.1:$RGWPORT|" "$D/ceph.conf"
  done
  [ $up = 1 ] || fail "the gateway does not answer on port $RGWPORT after $((300 * K)) s"
  AK=PDBTEST$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F)
  SK=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  timeout $((150 * K)) radosgw-admin user create --uid=pagedb --display-name=pagedb --access-key="$AK" --secret-key="$SK" \
    >"$D/log/user.out" 2>&1 || fail "radosgw-admin user create failed"
  echo "$RGWPORT $AK $SK" > "$D/endpoint"
  if [ -n "$3" ]; then
    # Stop the cluster when the owner is gone, however it ended: this
    # cluster only (its fsid), not a later start's in the same DIR.
    (while kill -0 "$3" 2>/dev/null; do sleep 1; done; bash "$0" stop "$D" "$FSID") </dev/null >/dev/null 2>&1 &
  fi
  echo "$RGWPORT $AK $SK" ;;
stop)
  # stop DIR FSID (the watcher): only the cluster of that fsid.
  [ -z "$3" ] || grep -qx "fsid = $3" "$D/ceph.conf" 2>/dev/null || exit 0
  [ -d "$D/run" ] && stop
  exit 0 ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
