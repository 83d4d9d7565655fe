#!/usr/bin/env bash
# bench/quiet.sh names a process busy on the CPU beside a benchmark, and
# refuses a bad sampling time (make test).
set -uo pipefail
sh -c 'while :; do :; done' &
busy=$!
trap 'kill $busy 2>/dev/null' EXIT
out=$(bench/quiet.sh 0.5)
kill $busy
fails=0
if ! grep -q "WARNING: not quiet: .*(pid $busy)" <<<"$out"; then
  echo "FAIL: a busy loop (pid $busy) was not named: $out"; fails=1
fi
for bad in 0 -1 x; do
  bench/quiet.sh "$bad" > /dev/null 2>&1
  if [ $? -ne 2 ]; then echo "FAIL: a sampling time of '$bad' was not refused"; fails=1; fi
done
[ $fails -eq 0 ] && echo "bench/quiet.sh: 4 passed"
exit $fails
