#!/usr/bin/env bash
# make bench-cnn: the tiled CNN against PyTorch, and streamed against resident.
#   1. The seed net (conv 3x3x4, pool, dense), batch 10, 64 and 256
#      (BATCHES), lr 0.01, one epoch
#      on Fashion-MNIST, against PyTorch (Debian's python3-torch) running the
#      same network, hyper-parameters, data and batch order, at 1 and at 2
#      threads (the faster one is the baseline). Runs are interleaved, RUNS
#      of each; medians, with min and max.
#   2. The wide net (11 M parameters), batch 64, streamed through a fast
#      tier of a quarter of its parameters against the same batches all
#      resident, RUNS pairs interleaved.
#   3. The resident runs' training GFLOP/s (the network's flops per sample
#      over the time) against the best correct cblas_sgemm the same run
#      measured at start on the same thread, with the OpenBLAS kernel it ran
#      (examples/cnn/blas.h picks the best the CPU allows).
#   RUNS=3 BUILD=build bench/cnn.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-3}"
bin="${BUILD:-build}/bin/cnn"
out="${BUILD:-build}/bench-cnn"
mkdir -p "$out"
scripts/fetch-fashion-mnist.sh
scripts/install-deps.sh torch
bench/quiet.sh
# the runs compared, weights bit for bit, all run one OpenBLAS kernel
OPENBLAS_CORETYPE=$(examples/cnn/kernel.sh "$bin") && export OPENBLAS_CORETYPE

for batch in ${BATCHES:-10 64 256}; do
echo "== seed net, batch $batch, lr 0.01, 1 epoch: mmb (OpenBLAS, 1 thread) against PyTorch"
for i in $(seq "$runs"); do
  "$bin" --net seed --epochs 1 --batch "$batch" --lr 0.01 --threads 1 --json | tail -1 > "$out/mmb.$i.json"
  for t in 1 2; do
    /usr/bin/python3 bench/cnn_torch.py --epochs 1 --batch "$batch" --lr 0.01 --threads "$t" \
      | tail -1 > "$out/torch$t.$i.json"
  done
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
load = lambda name: [json.load(open(f"{out}/{name}.{i}.json")) for i in range(1, runs + 1)]
mmb, t1, t2 = load("mmb"), load("torch1"), load("torch2")
med = lambda rs, k: statistics.median(r[k] for r in rs)
rng = lambda rs, k: f"(min {min(r[k] for r in rs):.0f}, max {max(r[k] for r in rs):.0f})"
torch = t1 if med(t1, "samples_per_s") >= med(t2, "samples_per_s") else t2
print(f"  mmb     {med(mmb, 'samples_per_s'):9.0f} samples/s {rng(mmb, 'samples_per_s')}, "
      f"test accuracy {100 * med(mmb, 'test_accuracy'):.2f}%")
for name, rs in (("torch 1", t1), ("torch 2", t2)):
    print(f"  {name} {med(rs, 'samples_per_s'):9.0f} samples/s {rng(rs, 'samples_per_s')}, "
          f"test accuracy {100 * med(rs, 'test_accuracy'):.2f}% ({rs[0]['threads']} thread(s))")
print(f"  mmb / PyTorch at its best thread count ({torch[0]['threads']}): "
      f"{med(mmb, 'samples_per_s') / med(torch, 'samples_per_s'):.2f}x samples/s; "
      f"test accuracy {100 * med(mmb, 'test_accuracy'):.2f}% against "
      f"{100 * med(torch, 'test_accuracy'):.2f}%")
PY

done

echo
echo "== wide net, batch 64, 100 batches, in 25% of its parameters (mmb's tile cache; the hand"
echo "   plan) against resident, interleaved"
pairs=() hand=()
for i in $(seq "$runs"); do
  wide=(--net wide --batch 64 --max-batches 100 --test-limit 640 --threads 1 --json)
  "$bin" "${wide[@]}" --plan auto --fast-limit 25% > "$out/auto.$i.json"
  "$bin" "${wide[@]}" --plan streamed --fast-limit 25% > "$out/streamed.$i.json"
  "$bin" "${wide[@]}" --plan resident --fast-limit 400% > "$out/resident.$i.json"
  pairs+=("$out/auto.$i.json" "$out/resident.$i.json")
  hand+=("$out/streamed.$i.json" "$out/resident.$i.json")
done
python3 examples/cnn/compare.py "${pairs[@]}"
python3 examples/cnn/compare.py "${hand[@]}"

echo
echo "== wide net, resident: training GFLOP/s against the best correct sgemm measured in the same run"
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rs = [json.loads(open(f"{out}/resident.{i}.json").read().strip().splitlines()[-1]) for i in range(1, runs + 1)]
ratios = [r["gflops"] / r["sgemm_gflops_best"] for r in rs if r["sgemm_gflops_best"] > 0]
print(f"  OpenBLAS kernel {rs[0]['blas_kernel']}: training {statistics.median(r['gflops'] for r in rs):.1f} GFLOP/s, "
      f"sgemm {statistics.median(r['sgemm_gflops_best'] for r in rs):.1f} GFLOP/s (1 thread, 1024^3)")
print(f"  ratio: median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}); target >= 0.60")
PY
