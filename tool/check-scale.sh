#!/bin/sh
# check-scale.sh -- pagedb at 256 million samples (make check-scale; not in CI).
#
#   tool/check-scale.sh [OPENBENCH [DIR]]
#
# Makes datasets of 1M, 16M and 256M samples of 16-64 bytes (ids 0..N-1 and
# an INT label, one writer, a commit every million, through the `direct`
# VFS, the fastest for ingest) with tool/pagedb-openbench, and prints for
# each size: the ingest rate; the files' bytes per sample (data, catalog,
# index); a read-only open + first read and the RSS it added (median of 3
# fresh processes); the PSS of one process and of 8 at once that each read
# 100,000 random samples, and the one's random reads/s; the time of a full
# pagedb_check.  The readers advise PAGEDB_ADVISE_RANDOM (-random).
# The 256M case writes about 40 GB: the free space of DIR
# is checked first, and the datasets are removed at the end (PAGEDB_SCALE_KEEP=1
# keeps them).  PAGEDB_SCALE_N overrides the sizes (comma-separated).
set -eu
bench=${1:-tool/pagedb-openbench}
dir=${2:-${TMPDIR:-/tmp}/pagedb-check-scale}
sizes=${PAGEDB_SCALE_N:-1000000,16000000,256000000}
# The largest size's bytes: about 150 per sample (40 data, 30 catalog, 80
# index) plus a tenth for the smaller ones.
max=$(echo "$sizes" | tr ',' '\n' | sort -n | tail -1)
need_kb=$((max * 165 / 1024))
mkdir -p "$dir"
free_kb=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
echo "check-scale: sizes $sizes in $dir: about $((need_kb / 1048576)) GiB needed, $((free_kb / 1048576)) GiB free"
if [ "$free_kb" -lt "$need_kb" ]; then
  echo "check-scale: not enough free space in $dir" >&2
  exit 1
fi
start=$(date +%s)
status=0
# -random: the readers advise PAGEDB_ADVISE_RANDOM, as a reader of a
# dataset larger than memory must (the 256M files, about 38 GB, are more
# than this VM's memory: unadvised, each fault reads 8 MiB around it).
"$bench" -dir "$dir" -n "$sizes" -modes mapped -make-vfs direct -procs 8 -reads 100000 -reps 3 -random -check || status=$?
echo "check-scale: $(( $(date +%s) - start )) s, exit $status"
if [ "${PAGEDB_SCALE_KEEP:-0}" != 1 ]; then
  rm -rf "$dir"
fi
exit $status
