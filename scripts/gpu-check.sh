#!/usr/bin/env bash
# make gpu-check: everything mmb does on a CUDA device, in one call, with one
# summary at the end. A GPU is rarely at hand for this project: this makes
# the one chance count.
#   1. the whole suite and the CNN's tests with the device there: none
#      fails, and none is skipped for want of a device or of CUDA (device
#      memory, the CUDA-stream queue, record conversions in the kernel,
#      device tiles, the CNN on the GPU; the tests that check behaviour
#      without a device skip, as they should);
#   2. with MPI, the MPI tests on 2 ranks (their GPU group);
#   3. the CNN with --device gpu against the same run on the host: the same
#      batches, the loss within 1e-3 and the accuracy within 1 point, and
#      both rates; with each side's default plan, with the tile cache as
#      the plan (--plan auto, a budget a quarter of the weights), and with the
#      activations offloaded through it as well (--offload);
#   4. the GPU parts of the benchmarks (bench-queue: the stream backend's
#      round trip and two-stream copies; bench-records: the conversion
#      kernel against cudaMemcpy of the same bytes).
# Without a CUDA device it says so and exits 0. It runs binaries already
# built (make gpu-check builds them first), each under a time limit (a hang
# fails its step, the others still run), so that on a machine without the
# build's dependencies the binaries and their libraries can be carried over
# (built with MARCH=x86-64-v3, or that machine's CPU, where its CPU differs):
#   BUILD=build scripts/gpu-check.sh
# GPU_CHECK_LOGS=FILE.tar.gz keeps every step's full log there (the
# assertions of a failed test, the benchmarks' every row).
set -uo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
tmp="$(mktemp -d)"
keep="${GPU_CHECK_LOGS:-}"
trap '[ -z "$keep" ] || tar czf "$keep" -C "$tmp" --exclude set .; rm -rf "$tmp"' EXIT

info=$("$build/bin/mmb-info" --json 2>/dev/null)
gpus=$(printf '%s' "$info" | python3 -c 'import json, sys; print(json.load(sys.stdin)["gpus"])' 2>/dev/null || echo 0)
if [ "${gpus:-0}" -eq 0 ]; then
  why=$(printf '%s' "$info" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("no_gpu_reason") or "")' 2>/dev/null)
  echo "gpu-check: no CUDA device here${why:+ ($why)}; nothing to run"
  exit 0
fi

results=()   # "name|PASS or FAIL|figures"
record() { results+=("$1|$2|$3"); }

# A Criterion run of a whole test program: passed when nothing failed and
# nothing was skipped for want of a device or of CUDA (with a device, such a
# skip means the device path did not run).
criterion() {   # criterion NAME BINARY
  local name="$1" bin="$2" log="$tmp/$1.log"
  timeout -k 10 180 "$bin" --jobs "$(nproc)" --timeout 120 --verbose > "$log" 2>&1
  local rc=$? synth device_skips
  grep -E '^\[(FAIL|SKIP)\]' "$log" | grep -v 'Test is disabled' || true
  synth=$(grep -E 'Synthesis' "$log" | tail -1 | sed 's/.*Synthesis: //')
  device_skips=$(grep '^\[SKIP\]' "$log" | grep -Eic 'no CUDA device|without CUDA' || true)
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    record "$name" FAIL "no end within 180 s (a test or the runner hung); $(grep -c '^\[PASS' "$log") passed"
  elif grep -q 'Failing: 0 | Crashing: 0' "$log" && [ "$device_skips" -eq 0 ] &&
     grep -q 'Tested: [1-9]' "$log"; then
    record "$name" PASS "$synth"
  else
    record "$name" FAIL "$synth; $device_skips skipped for want of a device"
  fi
}

# A benchmark's GPU section, from the line that matches START on: printed,
# and passed when the program ran to its end and printed that section; its
# figures are the section's lines that match FIGURES, edited by the sed
# script EDIT, on one line.
gpu_bench() {   # gpu_bench NAME PROGRAM START FIGURES EDIT
  local name="$1" bin="$build/bin/$2" log="$tmp/$2.log" rc
  [ -x "$bin" ] || return 0
  timeout 120 "$bin" > "$log" 2>&1
  rc=$?
  sed -n "/$3/,\$p" "$log"
  if [ $rc -eq 0 ] && grep -q "$3" "$log"; then
    record "$name" PASS "$(sed -n "/$3/,\$p" "$log" | grep -E "$4" | sed "$5" | paste -sd '|' |
      sed 's/|/ ; /g')"
  else
    tail -3 "$log"
    record "$name" FAIL "exit $rc"
  fi
}

echo "== 1. the suite and the CNN's tests with the device ($gpus device(s))"
criterion "suite" "$build/test/mmb-tests"
criterion "cnn-tests" "$build/test/cnn-tests"

if [ -x "$build/test/mpi-tests" ] && command -v mpirun >/dev/null 2>&1; then
  echo "== 2. the MPI tests on 2 ranks"
  if test/mpi/run.sh 2 "$build/test/mpi-tests" > "$tmp/mpi.log" 2>&1 &&
     ! grep -q 'gpu_tiles_where_there_is_a_gpu: skipped' "$tmp/mpi.log"; then
    record "mpi: 2 ranks, GPU tiles" PASS "$(tail -1 "$tmp/mpi.log")"
  else
    tail -5 "$tmp/mpi.log"
    record "mpi: 2 ranks, GPU tiles" FAIL "see the log above"
  fi
fi

echo "== 3. the CNN on the GPU against the host"
data=data/fashion-mnist
if [ ! -f "$data/train-images-idx3-ubyte" ] && [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  data="$tmp/set"
  test/cnn/small_set.py "$data" 2000 500 7
fi
cnn=(--data "$data" --net wide --batch 64 --max-batches 100 --test-limit 1000 --json)
# each case: a name, then the options both devices run it with
cases=("default plans|"
       "--plan auto|--plan auto --fast-limit 25%"
       "--plan auto --offload|--plan auto --fast-limit 25% --offload 8")
for case in "${cases[@]}"; do
  IFS='|' read -r name opts <<< "$case"
  tag="${name//[^a-z]/}"
  for device in cpu gpu; do
    # shellcheck disable=SC2086  # opts: the case's options, split
    timeout 120 "$build/bin/cnn" "${cnn[@]}" $opts --device "$device" \
      > "$tmp/cnn-$tag-$device.out" 2> "$tmp/cnn-$tag-$device.err"
    echo "   $name, --device $device: exit $?"
  done
  if cnn_figures=$(python3 - "$tmp/cnn-$tag-cpu.out" "$tmp/cnn-$tag-gpu.out" "$opts" 2>&1 <<'PY'
import json, sys
cpu, gpu = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:3])
assert cpu["batches"] == gpu["batches"], (cpu["batches"], gpu["batches"])
if sys.argv[3]:   # the same plan asked of both
    assert cpu["plan"] == gpu["plan"], (cpu["plan"], gpu["plan"])
assert abs(cpu["final_loss"] - gpu["final_loss"]) <= 1e-3 * max(1, abs(cpu["final_loss"])), \
    (cpu["final_loss"], gpu["final_loss"])
assert abs(cpu["test_accuracy"] - gpu["test_accuracy"]) <= 0.01, (cpu["test_accuracy"], gpu["test_accuracy"])
assert gpu["provider_trips_after_first_batch"] == 0, gpu["provider_trips_after_first_batch"]
print(f"wide net, batch 64, plan {gpu['plan']}: GPU {gpu['samples_per_s']:.0f} samples/s, host "
      f"{cpu['samples_per_s']:.0f} ({gpu['samples_per_s'] / cpu['samples_per_s']:.1f}x); loss "
      f"{gpu['final_loss']:.4f} / {cpu['final_loss']:.4f}; GPU cache {gpu['cache_misses']} misses, "
      f"{gpu['cache_writeback_bytes'] / 2**20:.0f} MiB written home")
PY
  ); then
    record "cnn: gpu against cpu, $name" PASS "$cnn_figures"
  else
    sed 's/^/    /' "$tmp/cnn-$tag-gpu.err" | tail -5
    record "cnn: gpu against cpu, $name" FAIL "$cnn_figures"
  fi
done

echo "== 4. the GPU benchmarks"
gpu_bench "bench-queue: CUDA streams" bench-queue '^4\. CUDA-stream backend$' \
  'round trip|two streams' 's/^ *//'
gpu_bench "bench-records: the kernel" bench-records '^on CUDA device' 'ratio vs cudaMemcpy:' \
  's/.*cudaMemcpy: //; s/ (target.*//'

echo
echo "gpu-check summary ($gpus CUDA device(s); $(printf '%s' "$info" | python3 -c 'import json, sys; print(", ".join(s["name"] for s in json.load(sys.stdin)["spaces"] if s["layer"] == "GDRAM"))' 2>/dev/null)):"
failed=0
for r in "${results[@]}"; do
  IFS='|' read -r name verdict figures <<< "$r"
  printf '  %-32s %s  %s\n' "$name" "$verdict" "$figures"
  [ "$verdict" = PASS ] || failed=$((failed + 1))
done
echo "gpu-check: $(( ${#results[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
