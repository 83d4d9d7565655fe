#!/usr/bin/env bash
# The out-of-core GEMM as a user runs it (make test): small shapes that do
# not divide by the tile, on both capacity tiers, each checked against a
# double-precision reference on a sample of C; the JSON summary's fields;
# traffic against the I/O lower bound; bad arguments refused.
#   test/ooc/cli.sh build/bin/ooc-gemm
set -uo pipefail
bin="$1"
fails=0 passed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME ARGS...: the JSON line must hold; extra python asserts in $check
run() {
  local name="$1"; shift
  if "$bin" "$@" --check --json > "$tmp/out" 2> "$tmp/err" && tail -1 "$tmp/out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
need = "m n k tile fast_budget_bytes capacity seconds gflops incore_gflops tile_gflops bytes_moved io_lower_bound_bytes max_rel_error blas_kernel".split()
missing = [k for k in need if k not in d]
assert not missing, f"missing {missing}"
# a product of k terms in single precision: within k * 2^-24 of the sum of |a b|
assert 0 <= d["max_rel_error"] <= d["k"] * 2**-24, d["max_rel_error"]
assert d["bytes_moved"] > 0 and d["gflops"] > 0 and d["incore_gflops"] > 0 and d["tile_gflops"] > 0, d
'"${check:-}"; then
    passed=$((passed + 1))
  else
    echo "FAIL: $name:"; sed 's/^/    /' "$tmp/err" | tail -5; tail -3 "$tmp/out"
    fails=$((fails + 1))
  fi
}

check='
assert d["capacity"] == "dram" and d["m"] == 300 and d["n"] == 270 and d["k"] == 290, d' \
  run "odd shapes, DRAM" --m 300 --n 270 --k 290 --tile 32 --fast-limit 64K
check='
assert d["capacity"] == "storage", d' \
  run "odd shapes, storage" --m 130 --n 257 --k 75 --tile 32 --fast-limit 96K --capacity storage
check='
assert d["threads"] == 3, d' \
  run "odd shapes, products shared by 3 threads" --m 300 --n 270 --k 290 --tile 32 --fast-limit 64K --threads 3
# C in one block: A and B read once and C written once, to the byte (the
# tile products timed before the run leave nothing cached, nor owed home)
check='
assert d["blocks"] == 1, d["blocks"]
assert d["bytes_moved"] == (200 * 1000 + 1000 * 136 + 200 * 136) * 4, d["bytes_moved"]' \
  run "one block moves each matrix once" --m 200 --n 136 --k 1000 --tile 64 --fast-limit 1M
# one tile each way, and k of one element
run "smaller than a tile" --m 5 --n 3 --k 1 --tile 64 --fast-limit 1M
# matrices 8x the budget: the traffic is within 2x of the lower bound
check='
assert d["bytes_moved"] <= 2.0 * d["io_lower_bound_bytes"], (d["bytes_moved"], d["io_lower_bound_bytes"])' \
  run "traffic near the bound" --m 512 --n 512 --k 1024 --tile 32 --fast-limit 256K
# where the bound is tight (k = 8 sqrt(M), C's blocks of 7 x 7 tiles dealing
# out evenly): within 1.3x of it
check='
assert d["block_tiles"] == [7, 7], d["block_tiles"]
assert d["bytes_moved"] <= 1.3 * d["io_lower_bound_bytes"], (d["bytes_moved"], d["io_lower_bound_bytes"])' \
  run "traffic within 1.3x of a tight bound" --m 896 --n 896 --k 4096 --tile 64 --fast-limit 1M
# a cube of twice sqrt(M) a side: 16 tiles of C a side where a block has
# room for 6 x 8. Blocks of one size cost 6 n^2 words (1.69x the bound);
# strips of 9 and 7 tiles cut into 3 and 2 blocks cost 5.56 n^2 (1.57x)
check='
assert d["blocks"] == 5, d["blocks"]
assert d["bytes_moved"] <= 1.6 * d["io_lower_bound_bytes"], (d["bytes_moved"], d["io_lower_bound_bytes"])' \
  run "a cube in strips of two heights" --m 1024 --n 1024 --k 1024 --tile 64 --fast-limit 1M
check='
assert d["blocks"] == 5 and d["block_tiles"] == [8, 9], (d["blocks"], d["block_tiles"])' \
  run "the same cube, taller than wide: strips of columns" --m 1024 --n 1000 --k 1024 --tile 64 --fast-limit 1M

for bad in "--m 0" "--tile x" "--capacity tape" "--fast-limit 0" "--threads 0" "--bogus 1"; do
  # shellcheck disable=SC2086
  if "$bin" $bad > /dev/null 2>&1; then echo "FAIL: '$bad' was accepted"; fails=$((fails + 1));
  else passed=$((passed + 1)); fi
done
# refused with its reason, and everything it made undone (no live
# allocation left for mmb_finalize to warn of)
if "$bin" --m 64 --n 64 --k 64 --tile 64 --fast-limit 16K > /dev/null 2> "$tmp/err" ||
   ! grep -q "raise --fast-limit" "$tmp/err" || grep -q "live allocation" "$tmp/err"; then
  echo "FAIL: a budget below one tile's needs was not refused cleanly with a reason:"
  sed 's/^/    /' "$tmp/err" | head -5; fails=$((fails + 1))
else
  passed=$((passed + 1))
fi
echo "ooc-gemm cli: $passed passed, $fails failed"
[ "$fails" -eq 0 ]
