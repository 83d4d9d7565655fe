#!/usr/bin/env bash
# build/bin/pgemm as a user runs it: C = A B by ScaLAPACK's PDGEMM on
# block-cyclic mmb arrays, on 1, 2 and 4 ranks (grids 1 x 1, 1 x 2, 2 x 2),
# n not a multiple of the block, each checked against the matrices'
# formulas (pgemm's own exit status) and its JSON; ranks the distribution
# leaves without a block (n under block x grid: 1 x 2, 1 x 3 and 2 x 2
# grids, along one dimension or both); local parts on the storage tier;
# OpenBLAS's kernel; bad arguments refused with status 2.
#   test/scalapack/pgemm.sh build/bin/pgemm
set -uo pipefail
pgemm="$1"
run="$(dirname "$0")/../mpi/run.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 fails=0
check() {   # check RANKS GRID ARGS...: pgemm succeeds, its JSON says so
  local ranks="$1" grid="$2"; shift 2
  if "$run" "$ranks" "$pgemm" --json "$@" > "$tmp/out" 2> "$tmp/err" &&
     tail -1 "$tmp/out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
ranks, grid = int(sys.argv[1]), json.loads(sys.argv[2])
assert d["ranks"] == ranks and d["grid"] == grid, d
assert d["max_rel_error"] < 1e-13 and d["seconds"] > 0 and d["gflops"] > 0, d
assert d["blas_kernel"], d' "$ranks" "$grid"; then
    passed=$((passed + 1))
  else
    echo "FAIL: pgemm on $ranks ranks $*:"; sed 's/^/    /' "$tmp/err"; tail -2 "$tmp/out"
    fails=$((fails + 1))
  fi
}
check 1 "[1, 1]" --n 200 --block 16
check 2 "[1, 2]" --n 203 --block 16
check 4 "[2, 2]" --n 301 --block 8 --samples 200
check 2 "[1, 2]" --n 150 --block 10 --capacity storage
check 2 "[1, 2]" --n 10 --block 16
check 3 "[1, 3]" --n 20 --block 16 --samples 100
check 4 "[2, 2]" --n 12 --block 16 --capacity storage
# OpenBLAS's kernel, on every rank: a value the user set is kept; with
# CNN_BLAS_TRY=1 the slow generic one (Prescott, SSE3) is replaced by the
# best the CPU allows (on a CPU with AVX2 or more), as cnn does
kernel() {   # kernel RANKS ENV...: the kernel pgemm's JSON names
  env "${@:2}" "$run" "$1" "$pgemm" --n 64 --block 16 --json 2> "$tmp/err" | tail -1 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["blas_kernel"])'
}
if [ "$(kernel 2 OPENBLAS_CORETYPE=Prescott)" = Prescott ]; then passed=$((passed + 1)); else
  echo "FAIL: pgemm overrode OPENBLAS_CORETYPE=Prescott"; fails=$((fails + 1)); fi
if grep -qw avx2 /proc/cpuinfo; then
  # (a second try when the first kept it: the trial times both kernels, and
  # on a machine loaded past 2 ranks a 5x faster one can fail to show it)
  got=$(kernel 2 OPENBLAS_CORETYPE=Prescott CNN_BLAS_TRY=1)
  [ "$got" = Prescott ] && got=$(kernel 2 OPENBLAS_CORETYPE=Prescott CNN_BLAS_TRY=1)
  if [ -n "$got" ] && [ "$got" != Prescott ]; then passed=$((passed + 1)); else
    echo "FAIL: pgemm kept OpenBLAS's Prescott kernel on a CPU with AVX2 ($got)"
    sed 's/^/    /' "$tmp/err"; fails=$((fails + 1)); fi
fi
for bad in "--n 0" "--block x" "--capacity tape" "--n 10 --block"; do
  # shellcheck disable=SC2086
  "$run" 2 "$pgemm" $bad > /dev/null 2> "$tmp/err"
  if [ $? -eq 2 ]; then passed=$((passed + 1)); else
    echo "FAIL: pgemm $bad did not exit 2"; sed 's/^/    /' "$tmp/err"; fails=$((fails + 1)); fi
done
echo "scalapack-pgemm: $passed passed, $fails failed"
[ "$fails" -eq 0 ]
