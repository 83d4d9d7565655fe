#!/usr/bin/env bash
# make bench-ooc: the out-of-core SGEMM (build/bin/ooc-gemm) against its
# limits, measured in the same run:
#   1. the storage tier's own bandwidth: large sequential writes and reads
#      with O_DIRECT (past the page cache) in its directory;
#   2. for each SIZE:BUDGET of CASES, C = A B homed in DRAM, in DRAM
#      throttled to 5 GiB/s (MMB_EMULATE=DRAM:bw=5G), and in the storage
#      tier, RUNS of each interleaved: the bytes mmb moved against the I/O
#      lower bound, and GFLOP/s against OpenBLAS on the same matrices all in
#      DRAM (timed by the same process, same threads, just before, every
#      page of both and of the fast tier touched first), and the schedule's
#      tile products alone (its first block's, on tiles in the fast tier,
#      nothing moving: the limit OpenBLAS sets on these products); medians,
#      with min and max.
#   3. the traffic against the bound for budgets of 16, 64 and 256 MiB, on
#      shapes where the bound is tight (k at least 8 sqrt(M) words, so C's
#      own m n words are a small share, and C's blocks dealing out evenly):
#      one run each, capacity DRAM (the bytes moved do not depend on the
#      tier or the timing).
#   CASES="4096:16M 8192:64M" RUNS=3 THREADS=1 BUILD=build bench/ooc.sh
#   TRAFFIC="16M:3840:3840:16384 64M:7680:7680:32768 256M:15360:15360:32768"
#   (TRAFFIC= skips the sweep; the 256 MiB case multiplies 4.7 GiB of
#   matrices and takes minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${BUILD:-build}/bin/ooc-gemm"
out="${BUILD:-build}/bench-ooc"
threads="${THREADS:-1}"
runs="${RUNS:-3}"
mkdir -p "$out"
lscpu | grep -E '^(Model name|CPU family|Model):' | sed 's/  */ /g' | paste -sd ',' || true
bench/quiet.sh
dir="${MMB_STORAGE_DIR:-${TMPDIR:-/var/tmp}}"

echo
echo "== the storage tier's directory $dir: sequential O_DIRECT bandwidth (1 GiB, 8 MiB requests)"
python3 - "$dir" > "$out/disk.txt" <<'PY'
import mmap, os, sys, time
d = sys.argv[1]
size, chunk = 1 << 30, 8 << 20
buf = mmap.mmap(-1, chunk)          # page aligned, as O_DIRECT wants
buf.write(os.urandom(chunk))
path = os.path.join(d, f"mmb-bench-ooc-{os.getpid()}")
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o600)
os.unlink(path)
t = time.perf_counter()
for off in range(0, size, chunk):
    os.pwritev(fd, [buf], off)
os.fsync(fd)
w = size / (time.perf_counter() - t)
t = time.perf_counter()
for off in range(0, size, chunk):
    os.preadv(fd, [buf], off)
r = size / (time.perf_counter() - t)
os.close(fd)
print(f"write {w / 2**30:.2f} GiB/s, read {r / 2**30:.2f} GiB/s")
print(f"{w} {r}")
PY
head -1 "$out/disk.txt" | sed 's/^/  /'

for case in ${CASES:-4096:16M 8192:64M}; do
  size="${case%%:*}" budget="${case##*:}"
  echo
  echo "== C = A B, $size^3, fast tier $budget, $threads thread(s), $runs runs interleaved"
  args=(--m "$size" --n "$size" --k "$size" --fast-limit "$budget" --threads "$threads" --json)
  for i in $(seq "$runs"); do
    "$bin" "${args[@]}" | tail -1 > "$out/dram.$size.$i.json"
    MMB_EMULATE=DRAM:bw=5G "$bin" "${args[@]}" | tail -1 > "$out/dram5g.$size.$i.json"
    "$bin" "${args[@]}" --capacity storage | tail -1 > "$out/storage.$size.$i.json"
  done
  python3 - "$out" "$size" "$runs" <<'PY'
import json, statistics, sys
out, size, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
disk_w, disk_r = map(float, open(f"{out}/disk.txt").read().split("\n")[1].split())
for name, label in (("dram", "capacity DRAM"), ("dram5g", "capacity DRAM at 5 GiB/s"),
                    ("storage", "capacity storage")):
    rs = [json.load(open(f"{out}/{name}.{size}.{i}.json")) for i in range(1, runs + 1)]
    r = [x["gflops"] / x["incore_gflops"] for x in rs]
    d = rs[0]   # the traffic is the same in every run
    ratio = d["bytes_moved"] / d["io_lower_bound_bytes"] if d["io_lower_bound_bytes"] else float("nan")
    tiles = statistics.median(x["tile_gflops"] / x["incore_gflops"] for x in rs)
    line = (f"  {label:26} {statistics.median(x['gflops'] for x in rs):7.1f} GFLOP/s = "
            f"{statistics.median(r):.2f}x in core (min {min(r):.2f}, max {max(r):.2f}; in core "
            f"{statistics.median(x['incore_gflops'] for x in rs):.1f}; the tile products alone "
            f"{tiles:.2f}x); moved "
            f"{d['bytes_moved'] / 2**20:.1f} MiB = {ratio:.2f}x the I/O lower bound "
            f"({d['io_lower_bound_bytes'] / 2**20:.1f} MiB)")
    if name == "storage":
        # the flops per byte the schedule has, against what the disk can feed
        intensity = 2 * d["m"] * d["n"] * d["k"] / d["bytes_moved"]
        feed = intensity * min(disk_w, disk_r) / 1e9
        line += (f"\n  {'':26} the disk could feed {feed:.1f} GFLOP/s at this traffic; "
                 f"{'the BLAS' if feed > d['incore_gflops'] else 'the disk'} is the limit")
    print(line)
PY
done

traffic="${TRAFFIC-16M:3840:3840:16384 64M:7680:7680:32768 256M:15360:15360:32768}"
if [ -n "$traffic" ]; then
  echo
  echo "== traffic against the I/O lower bound, capacity DRAM, one run each"
  for case in $traffic; do
    IFS=: read -r budget m n k <<< "$case"
    "$bin" --m "$m" --n "$n" --k "$k" --fast-limit "$budget" --threads "$threads" --json |
      tail -1 > "$out/traffic.$budget.json"
    python3 - "$out/traffic.$budget.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
M = d["fast_budget_bytes"] / 4
c_share = d["m"] * d["n"] * 4 / d["io_lower_bound_bytes"]
print(f"  fast tier {d['fast_budget_bytes'] / 2**20:4.0f} MiB, {d['m']} x {d['n']} x {d['k']} "
      f"(k = {d['k'] / M ** 0.5:.0f} sqrt(M)), tiles of {d['tile']}, C in {d['blocks']} blocks of "
      f"up to {d['block_tiles'][0]} x {d['block_tiles'][1]}: moved {d['bytes_moved'] / 2**20:.0f} MiB = "
      f"{d['bytes_moved'] / d['io_lower_bound_bytes']:.2f}x the bound "
      f"({d['io_lower_bound_bytes'] / 2**20:.0f} MiB; C alone {c_share:.2f} of it); "
      f"{d['gflops'] / d['incore_gflops']:.2f}x in core")
PY
  done
fi
