#!/bin/sh
# pushbench.sh BUILD [W-img[:N]] [ROUNDS] -- pagedb_push to Ceph's RADOS
# gateway with the multipart parts one at a time against several at once
# (tool/pushbench.c), for doc/benchmarks.md ("make bench-push").  Starts a
# one-node Ceph cluster on 127.0.0.1 (test/micro-ceph.sh, its memstore
# enlarged to hold every run's objects: the gateway frees deleted ones
# hours later), makes a bucket with s3cmd, runs the pushes and stops the
# cluster.  PUSHBENCH_PARALLEL lists the parts-at-once values compared
# (default "1 4").  Needs ceph-mon, ceph-osd, radosgw and s3cmd
# (tool/install-deps.sh).
set -e
B=$1 W=${2:-W-img:5000} R=${3:-3}
[ -x "$B/tool/pagedb-pushbench" ] || { echo "usage: $0 BUILD_DIR [W-img[:N]] [ROUNDS]" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
d=$(mktemp -d "${TMPDIR:-/tmp}/pushbench.XXXXXX")
trap 'bash "$here/test/micro-ceph.sh" stop "$d/ceph" >/dev/null 2>&1; rm -rf "$d"' EXIT
info=$(CEPH_MEMSTORE_BYTES=${CEPH_MEMSTORE_BYTES:-6442450944} bash "$here/test/micro-ceph.sh" start "$d/ceph" $$)
set -- $info
printf '[default]\naccess_key = %s\nsecret_key = %s\nhost_base = 127.0.0.1:%s\nhost_bucket = 127.0.0.1:%s\nuse_https = False\nsignature_v2 = False\n' \
  "$2" "$3" "$1" "$1" > "$d/s3cfg"
env -u LD_PRELOAD s3cmd -c "$d/s3cfg" mb s3://bench >/dev/null
AWS_ACCESS_KEY_ID=$2 AWS_SECRET_ACCESS_KEY=$3 AWS_ENDPOINT_URL=http://127.0.0.1:$1 AWS_REGION=us-east-1 \
  PAGEDB_CACHE_DIR=$d/cache "$B/tool/pagedb-pushbench" "$d/wimg.pagedb" s3://bench "$W" "$R" ${PUSHBENCH_PARALLEL:-1 4}
