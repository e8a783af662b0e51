#!/bin/sh
# make check-stress: test/stress.test for PAGEDB_STRESS_SECONDS (default 60)
# seconds under ThreadSanitizer and then under ASan+UBSan, in build-tsan/ and
# build-asan/ beside the sources.  A directory without a Makefile is
# configured here (--enable-sanitizers=thread, --enable-sanitizers); one that
# has a Makefile is used as it is configured.  Out-of-tree builds need a
# source tree that is not configured in place ("make distclean" there first).
# The exit status is non-zero if either run fails.
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${PAGEDB_STRESS_SECONDS:-60}
status=0
for kind in thread address; do
  case $kind in
    thread) dir=$top/build-tsan ;;
    *) dir=$top/build-asan ;;
  esac
  echo "=== stress.test for $secs s in $dir (--enable-sanitizers=$kind)"
  if [ ! -f "$dir/Makefile" ]; then
    if [ -f "$top/config.status" ]; then
      echo "check-stress: $top is configured in place; run 'make distclean' there first" >&2
      exit 1
    fi
    mkdir -p "$dir" && (cd "$dir" && ../configure -q --enable-sanitizers=$kind) || exit 1
  fi
  PAGEDB_STRESS_SECONDS=$secs make -C "$dir" -j2 -s --no-print-directory check TESTFILES=stress.test || status=1
done
exit $status
