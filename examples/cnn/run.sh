#!/usr/bin/env bash
# `make run`, the main job: fetches Fashion-MNIST when it is missing, trains
# the seed net for one epoch, then the wide net (11 M parameters) for 100
# batches of 64 in a fast tier of a quarter of its parameters, with no
# plan (mmb's tile cache decides what stays) and with the hand plan
# (streamed), against the same batches with everything resident. The
# capacity tier (DRAM) is throttled to 5 GiB/s (MMB_EMULATE=DRAM:bw=5G,
# RATE= another), so the copies the cache saves or makes cost what they
# would from a slow tier. Then batches of 256 with their activations
# offloaded to the capacity tier (--offload 8) against resident.
#   BUILD=build examples/cnn/run.sh   (the Makefile passes its build folder)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${BUILD:-build}/bin/cnn"
out="${BUILD:-build}/cnn-run"
mkdir -p "$out"
scripts/fetch-fashion-mnist.sh

echo
echo "== the seed net, one epoch (batch 10, lr 0.01)"
"$bin" --net seed --epochs 1

echo
# the runs compared below, weights bit for bit, all run the kernel the seed
# net settled on (examples/cnn/kernel.sh)
OPENBLAS_CORETYPE=$(examples/cnn/kernel.sh "$bin") && export OPENBLAS_CORETYPE
rate="${RATE:-5G}"
export MMB_EMULATE="DRAM:bw=$rate"
echo "== the wide net in a quarter of its parameters, capacity tier at $rate/s, no plan:"
echo "   mmb's tile cache decides"
wide=(--net wide --batch 64 --max-batches 100 --test-limit 1000 --json)
"$bin" "${wide[@]}" --fast-limit 25% | tee "$out/auto.json" | grep -v '^{'
echo
echo "== the same batches, the hand plan: the largest parameters streamed"
"$bin" "${wide[@]}" --plan streamed --fast-limit 25% > "$out/streamed.json"
grep -E '^(memory plan|  resident|  streamed|epoch)' "$out/streamed.json"
echo
echo "== the same batches, all resident"
"$bin" "${wide[@]}" --plan resident --fast-limit 400% > "$out/resident.json"
grep -E '^(memory plan|  resident|epoch)' "$out/resident.json"
echo
python3 examples/cnn/compare.py "$out/auto.json" "$out/resident.json"
python3 examples/cnn/compare.py "$out/streamed.json" "$out/resident.json"
echo
echo "== activations across tiers: batches of 256 (74 MiB of activations, 7x the"
echo "   fast budget), the convolution block's offloaded in chunks of 8, against resident"
big=(--net wide --batch 256 --max-batches 12 --test-limit 1000 --json)
"$bin" "${big[@]}" --fast-limit 25% --offload 8 > "$out/offload.json"
grep -E '^(  offload|epoch)' "$out/offload.json"
"$bin" "${big[@]}" --plan resident --fast-limit 400% > "$out/resident256.json"
python3 examples/cnn/compare.py "$out/offload.json" "$out/resident256.json"
