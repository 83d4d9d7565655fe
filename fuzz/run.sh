#!/usr/bin/env bash
# Runs each fuzz target for SECONDS on its committed seeds (fuzz/corpus/<t>)
# and its own growing corpus (build/fuzz/corpus-<t>), then prints how many
# inputs it ran. A crash, a sanitizer report or a failed model check stops
# the run with the input saved as build/fuzz/crash-* (replay it with
# build/fuzz/fuzz-<t> <file>).
#   FUZZ_SEED=1 fuzz/run.sh SECONDS TARGET...   (FUZZ_SEED=0: a random seed)
set -euo pipefail
seconds=$1
shift
for target in "$@"; do
  name=${target##*/fuzz-}
  dir=$(dirname "$target")
  mkdir -p "$dir/corpus-$name" "fuzz/corpus/$name"
  echo "fuzz: $name for ${seconds}s"
  log=$dir/fuzz-$name.log
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
       "$target" -max_total_time="$seconds" -seed="${FUZZ_SEED:-1}" -print_final_stats=1 -timeout=30 -rss_limit_mb=4096 \
       -artifact_prefix="$dir/crash-$name-" "$dir/corpus-$name" "fuzz/corpus/$name" >"$log" 2>&1; then
    tail -60 "$log"
    echo "fuzz: $name FAILED (log: $log)" >&2
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  echo "fuzz: $name ok: $runs inputs in ${seconds}s, $cov"
done
