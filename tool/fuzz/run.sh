#!/bin/sh
# run.sh SECONDS CORPUS BINDIR TARGET... -- what `make fuzz` runs.
#
# Runs each libFuzzer target in turn, one process (the machine's cores are
# shared), for SECONDS, starting from its committed seeds CORPUS/TARGET.
# New inputs go to fuzz-work/TARGET, so the committed corpus only changes
# by hand; a crash, leak, timeout or out-of-memory input is written to
# fuzz-work/crashes/TARGET-*, and the log to fuzz-work/TARGET.log; a
# dictionary CORPUS/../TARGET.dict is used if there is one.  Prints
# the executions and crashes of each target; exits 1 if any crashed.
set -u
secs=$1 corpus=$2 bin=$3
shift 3
work=fuzz-work
mkdir -p "$work/crashes"
failed=0
for t in "$@"; do
  mkdir -p "$work/$t"
  log="$work/$t.log"
  dict=""
  [ -f "$corpus/../$t.dict" ] && dict="-dict=$corpus/../$t.dict"
  "$bin/$t" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 $dict \
    -artifact_prefix="$work/crashes/$t-" "$work/$t" "$corpus/$t" >"$log" 2>&1
  status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
  crashes=$(ls "$work/crashes" | grep -c "^$t-")
  printf '%-10s %12s executions in %s s, %s crash(es), exit %s (log: %s)\n' "$t" "${execs:-?}" "$secs" "$crashes" \
    "$status" "$log"
  [ "$crashes" -eq 0 ] && [ "$status" -eq 0 ] || failed=1
done
exit $failed
