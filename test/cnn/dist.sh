#!/usr/bin/env bash
# The data-parallel CNN (mpirun -np 2) against one rank, on a small set
# made here: the same global batch gives the same loss and accuracy, and
# weights equal within 1e-4 of their largest magnitude (the sums of the
# two halves of a batch are added in another order), in every plan, and
# rank 0 reaches no provider after the first batch; rank 0 alone writes the
# summary, with "ranks": 2; a batch that does not split is refused.
#   test/cnn/dist.sh build/bin/cnn
set -uo pipefail
cnn="$1"
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0

"$here/small_set.py" "$tmp/set" 403 100 5   # 403 = 12 batches of 32 + 19: the last splits 10 + 9

# Generous limits (a loaded 2-core machine runs these in seconds): a hang
# fails the test instead of holding make test.
limit=600
compare() {   # compare NAME ARGS...: one rank against two
  local name="$1"; shift
  timeout $limit "$cnn" --data "$tmp/set" "$@" --json --save-weights "$tmp/$name-1.bin" > "$tmp/$name-1.out" 2> "$tmp/$name-1.err" &&
  timeout $limit "$here/../mpi/run.sh" 2 "$cnn" --data "$tmp/set" "$@" --json --save-weights "$tmp/$name-2.bin" \
      > "$tmp/$name-2.out" 2> "$tmp/$name-2.err" &&
  python3 - "$tmp/$name" <<'PY'
import array, json, sys
p = sys.argv[1]
one, two = (json.loads(open(f"{p}-{n}.out").read().strip().splitlines()[-1]) for n in (1, 2))
assert sum(l.startswith("{") for l in open(f"{p}-2.out")) == 1, "rank 0 alone prints the summary"
assert one["ranks"] == 1 and two["ranks"] == 2, (one["ranks"], two["ranks"])
assert two["allreduces"] > 0 and one["allreduces"] == 0
assert two["provider_trips_after_first_batch"] == 0, two["provider_trips_after_first_batch"]
for k in ("train_samples", "batches", "batch"):
    assert one[k] == two[k], (k, one[k], two[k])
assert abs(one["final_loss"] - two["final_loss"]) <= 1e-3 * max(1, abs(one["final_loss"])), (one["final_loss"], two["final_loss"])
assert abs(one["test_accuracy"] - two["test_accuracy"]) <= 0.011, (one["test_accuracy"], two["test_accuracy"])
w1, w2 = array.array("f"), array.array("f")
w1.frombytes(open(f"{p}-1.bin", "rb").read()); w2.frombytes(open(f"{p}-2.bin", "rb").read())
assert len(w1) == len(w2) == one["params"], (len(w1), len(w2))
top = max(abs(x) for x in w1)
diff = max(abs(x - y) for x, y in zip(w1, w2))
assert diff <= 1e-4 * top, f"weights differ by {diff} (largest {top})"
print(f"{p.rsplit('/', 1)[-1]}: 1 and 2 ranks agree: loss {one['final_loss']:.6f} / {two['final_loss']:.6f}, "
      f"accuracy {one['test_accuracy']:.3f} / {two['test_accuracy']:.3f}, weights within {diff / top:.1e}")
PY
  if [ $? -ne 0 ]; then
    echo "FAIL: $name"; cat "$tmp/$name-1.err" "$tmp/$name-2.err" | sed 's/^/    /'
    fails=$((fails + 1))
  fi
}

wide=(--net wide --batch 16 --max-batches 4 --test-limit 50)
compare seed --net seed --epochs 2 --batch 32 --lr 0.05 --momentum 0.9   # (auto)
compare wide-resident "${wide[@]}" --plan resident --fast-limit 400%
compare wide-streamed "${wide[@]}" --plan streamed --fast-limit 25%
# the tile cache holds a quarter of the parameters: gradients go home
# (written back) before their all-reduce, and the update fetches the sums
compare wide-auto "${wide[@]}" --plan auto --fast-limit 25% --momentum 0.9
compare wide-offload "${wide[@]}" --plan auto --fast-limit 25% --offload 4

# a global batch the ranks cannot split evenly is refused on every rank
timeout $limit "$here/../mpi/run.sh" 2 "$cnn" --data "$tmp/set" --batch 33 > "$tmp/odd.out" 2> "$tmp/odd.err"
if [ $? -ne 2 ] || ! grep -q "multiple of the 2 ranks" "$tmp/odd.err"; then
  echo "FAIL: --batch 33 on 2 ranks:"; sed 's/^/    /' "$tmp/odd.err"; fails=$((fails + 1))
fi

echo "cnn-dist: $((6 - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
