#!/usr/bin/env bash
# make bench-cache: the wide net (11 M parameters) trained through a fast
# tier of a quarter of its parameters by mmb's tile cache (--plan auto),
# against the same batches all resident, the hand plan (streamed), and the
# cache without hints, with the capacity tier (DRAM) throttled to each rate
# of RATES (MMB_EMULATE=DRAM:bw=RATE: one link, copies at once share it).
#   For each rate: RUNS runs of each plan, interleaved; medians of the
#   seconds per batch, with min and max. Then one traced run of the cache
#   with hints and one without, replayed by tools/mmb-belady under Belady's
#   MIN: misses and bytes moved against MIN's, and the bound
#   max(resident's time, MIN's bytes per batch / rate).
#   Then the activations offloaded (--offload), at the first rate.
#   RUNS=3 BATCHES=30 RATES="5G 1G" OFFLOAD_BATCH=256 BUILD=build bench/cache.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-3}"
batches="${BATCHES:-30}"
bin="${BUILD:-build}/bin/cnn"
out="${BUILD:-build}/bench-cache"
mkdir -p "$out"
scripts/fetch-fashion-mnist.sh
lscpu | grep -E '^(Model name|CPU family|Model):' | sed 's/  */ /g' | paste -sd ',' || true
bench/quiet.sh
# the runs compared, weights bit for bit, all run one OpenBLAS kernel
OPENBLAS_CORETYPE=$(examples/cnn/kernel.sh "$bin") && export OPENBLAS_CORETYPE

wide=(--net wide --batch 64 --max-batches "$batches" --test-limit 64 --threads 1 --json)
declare -A plan=(
  [resident]="--plan resident --fast-limit 400%"
  [streamed]="--plan streamed --fast-limit 25%"
  [auto]="--plan auto --fast-limit 25%"
  [nohints]="--plan auto --fast-limit 25% --no-hints"
)
for rate in ${RATES:-5G 1G}; do
  echo
  echo "== wide net, batch 64, $batches batches, capacity tier at $rate/s (MMB_EMULATE=DRAM:bw=$rate)"
  for i in $(seq "$runs"); do
    for p in resident streamed auto nohints; do
      # shellcheck disable=SC2086
      MMB_EMULATE="DRAM:bw=$rate" "$bin" "${wide[@]}" ${plan[$p]} | tail -1 > "$out/$p.$rate.$i.json"
    done
  done
  for p in auto nohints; do
    # shellcheck disable=SC2086
    MMB_EMULATE="DRAM:bw=$rate" MMB_TRACE_CAPACITY=1048576 "$bin" "${wide[@]}" ${plan[$p]} \
      --trace "$out/$p.$rate.trace.json" | tail -1 > "$out/$p.$rate.traced.json"
    tools/mmb-belady "$out/$p.$rate.trace.json" --json --bandwidth "$rate" > "$out/$p.$rate.belady.json"
  done
  python3 - "$out" "$runs" "$rate" "$batches" <<'PY'
import json, statistics, sys
out, runs, rate, batches = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
load = lambda p: [json.load(open(f"{out}/{p}.{rate}.{i}.json")) for i in range(1, runs + 1)]
spb = {p: [r["seconds_per_batch"] * 1e3 for r in load(p)] for p in ("resident", "streamed", "auto", "nohints")}
weights = {p: {r["weights_fnv1a"] for r in load(p)} for p in spb}
med = {p: statistics.median(v) for p, v in spb.items()}
names = {"resident": "resident (all fits)", "streamed": "streamed (hand plan)",
         "auto": "auto (tile cache)", "nohints": "auto, no hints"}
for p in spb:
    print(f"  {names[p]:22} {med[p]:8.1f} ms/batch (min {min(spb[p]):.1f}, max {max(spb[p]):.1f})")
same = len(set().union(*weights.values())) == 1
print(f"  weights: {'bitwise the same in every plan and run' if same else 'DIFFER: ' + str(weights)}")
b = {p: json.loads(open(f"{out}/{p}.{rate}.belady.json").readline()) for p in ("auto", "nohints")}
opt = b["auto"]["belady"]
moved = opt["fetched_bytes"] + opt["written_bytes"]
bound = max(med["resident"], b["auto"]["belady_seconds"] / batches * 1e3)
print(f"  Belady's MIN moves {moved / batches / 2**20:.1f} MiB per batch: "
      f"{b['auto']['belady_seconds'] / batches * 1e3:.1f} ms at {rate}/s; "
      f"bound max(resident, MIN's bytes / rate) = {bound:.1f} ms/batch")
print(f"  auto / resident {med['auto'] / med['resident']:.2f}x (the 5G target: <= 1.10), "
      f"auto / streamed {med['auto'] / med['streamed']:.2f}x (target <= 1.0), "
      f"auto / bound {med['auto'] / bound:.2f}x (target <= 1.10)")
print(f"  misses: mmb {b['auto']['mmb']['misses']} against MIN {opt['misses']}: "
      f"{b['auto']['miss_ratio']:.2f}x with hints (target <= 1.2), "
      f"{b['nohints']['miss_ratio']:.2f}x without (target <= 2); bytes moved "
      f"{b['auto']['bytes_ratio']:.2f}x and {b['nohints']['bytes_ratio']:.2f}x MIN's")
PY
done

# Activations offloaded: batches of OFFLOAD_BATCH (256: 74 MB of activations,
# 7x the fast budget) with the convolution block's activations homed in
# the capacity tier in chunks of 8 (--offload 8), against all resident, at
# the first rate; RUNS interleaved runs each; time per sample, and the
# weights bitwise the same.
rate="${RATES:-5G 1G}"; rate="${rate%% *}"
big="${OFFLOAD_BATCH:-256}"
obatches=$(( batches * 64 / big > 4 ? batches * 64 / big : 4 ))
off=(--net wide --batch "$big" --max-batches "$obatches" --test-limit 64 --threads 1 --json)
echo
echo "== wide net, batch $big, $obatches batches, activations offloaded, capacity tier at $rate/s"
for i in $(seq "$runs"); do
  MMB_EMULATE="DRAM:bw=$rate" "$bin" "${off[@]}" --plan resident --fast-limit 400% \
    | tail -1 > "$out/off-resident.$i.json"
  MMB_EMULATE="DRAM:bw=$rate" "$bin" "${off[@]}" --plan auto --fast-limit 25% --offload 8 \
    | tail -1 > "$out/off-auto.$i.json"
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
load = lambda p: [json.load(open(f"{out}/{p}.{i}.json")) for i in range(1, runs + 1)]
r, o = load("off-resident"), load("off-auto")
us = lambda runs: [1e6 / x["samples_per_s"] for x in runs]
for name, v in (("resident (all fits)", us(r)), ("auto, --offload 8", us(o))):
    print(f"  {name:22} {statistics.median(v):8.1f} us/sample (min {min(v):.1f}, max {max(v):.1f})")
ratio = statistics.median(us(o)) / statistics.median(us(r))
x = o[0]
print(f"  activations in the fast tier: {r[0]['activations_high_bytes'] / 2**20:.1f} MiB resident, "
      f"{x['activations_high_bytes'] / 2**20:.1f} MiB offloaded; {x['offload_bytes'] / 2**20:.1f} MiB "
      f"a batch homed in the capacity tier = {x['offload_bytes'] / x['cache_budget_bytes']:.1f}x "
      f"the cache's budget")
same = len({y["weights_fnv1a"] for y in r + o}) == 1
print(f"  offload / resident {ratio:.2f}x per sample (target <= 1.25); weights "
      f"{'bitwise the same' if same else 'DIFFER'}; final loss {x['final_loss']:.4f}")
PY
