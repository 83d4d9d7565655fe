#!/usr/bin/env bash
# `make run`, the main job: fetches Fashion-MNIST when it is missing, trains
# the seed net for one epoch, then the wide net (11 M parameters) for a few
# hundred batches streamed through a fast tier of a quarter of its
# parameters, against the same batches with everything resident.
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
echo "== the wide net, streamed through a quarter of its parameters"
wide=(--net wide --batch 32 --max-batches 200 --test-limit 1000 --json)
"$bin" "${wide[@]}" --fast-limit 25% | tee "$out/streamed.json" | grep -v '^{'
echo
echo "== the same batches, all resident"
"$bin" "${wide[@]}" --fast-limit 400% > "$out/resident.json"
grep -E '^(memory plan|  resident|epoch)' "$out/resident.json"
echo
python3 examples/cnn/compare.py "$out/streamed.json" "$out/resident.json"
