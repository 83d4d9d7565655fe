#!/usr/bin/env bash
# bench/records-ab.sh BEFORE AFTER [RUNS [ROUNDS [SIZE]]]: an A/B of record
# conversion between two builds (each a BUILD directory with
# bin/bench-records, e.g. `make BUILD=/tmp/b /tmp/b/bin/bench-records` on the
# commit before). Their bench-records run in turn RUNS times (default 8;
# the order swapped every other run, so that neither always goes first),
# ROUNDS rounds (11) of SIZE (64M) each. Each run times its own plain
# copies, so each ratio is against the copy of its own run; a run of one
# build is compared with the run of the other beside it, which a VM's
# bandwidth, swinging by a third from one minute to the next, leaves
# alone. Prints per record and direction the medians over the runs, each
# build's lowest run (the tail), and in how many runs AFTER was the
# faster; the same for the conversions split over two threads, against
# the 2-thread copy, where the runs time them (64 MiB, two CPUs or more),
# and for particles tile by tile, against a memcpy per tile row.
# Exit status 0; 2: a bad argument.
set -euo pipefail
usage() { echo "usage: bench/records-ab.sh BEFORE AFTER [RUNS [ROUNDS [SIZE]]]" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 5 ] || usage
before=$1 after=$2 runs=${3:-8} rounds=${4:-11} size=${5:-64M}
for b in "$before" "$after"; do
  [ -x "$b/bin/bench-records" ] || { echo "bench/records-ab.sh: no $b/bin/bench-records" >&2; usage; }
done
[[ $runs =~ ^[0-9]+$ ]] && [ "$runs" -ge 1 ] && [ "$runs" -le 100 ] ||
  { echo "bench/records-ab.sh: RUNS '$runs' is not 1 to 100" >&2; usage; }
[[ $rounds =~ ^[0-9]+$ ]] || { echo "bench/records-ab.sh: ROUNDS '$rounds' is not a number" >&2; usage; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$(dirname "$0")/quiet.sh"
echo "bench-records $rounds $size: $before (before) and $after (after), $runs runs each, in turn"
for ((i = 1; i <= runs; i++)); do
  order="before after"
  [ $((i % 2)) -eq 0 ] && order="after before"
  for which in $order; do
    dir=$before
    [ "$which" = after ] && dir=$after
    "$dir/bin/bench-records" "$rounds" "$size" > "$out/$which.$i" ||
      { echo "bench/records-ab.sh: $dir/bin/bench-records failed:" >&2; tail -5 "$out/$which.$i" >&2; exit 1; }
  done
done
python3 - "$out" "$runs" <<'PY'
import re, statistics, sys

out, runs = sys.argv[1], int(sys.argv[2])
head = re.compile(r"^(\S.*?): \d+ records of (\d+) B")
tiles = re.compile(r"^(particles in \d+ x \d+ tiles)")
ratio = re.compile(r"(faster plain copy|2-thread copy|memcpy by tile rows): +AoS->SoA ([\d.]+)x, "
                   r"SoA->AoS ([\d.]+)x")

def read(which, i):
    """[(record, to SoA, to AoS)] of one run, in the order printed."""
    rows, name = [], None
    for line in open(f"{out}/{which}.{i}"):
        m = head.match(line)
        if m:
            name = m.group(1) if " B" in m.group(1) else f"{m.group(1)} ({m.group(2)} B)"
        m = tiles.match(line)
        if m:
            name = m.group(1)
        m = ratio.search(line)
        if m and name:
            two = ", 2 threads" if m.group(1) == "2-thread copy" else ""
            rows.append((name + two, float(m.group(2)), float(m.group(3))))
    return rows

b = [read("before", i) for i in range(1, runs + 1)]
a = [read("after", i) for i in range(1, runs + 1)]
if not b[0] or any(len(r) != len(b[0]) for r in a + b):
    sys.exit("bench/records-ab.sh: the runs did not print the same records")
print("ratios to the plain copy of the same run (on 2 threads: to the 2-thread copy;"
      " tile by tile: to a memcpy per tile row): medians over the runs, before -> after,"
      " the lowest run of each, and the runs in which after was faster")
for k, (name, _, _) in enumerate(b[0]):
    cells = []
    for d, label in ((1, "AoS->SoA"), (2, "SoA->AoS")):
        x = [r[k][d] for r in b]
        y = [r[k][d] for r in a]
        wins = sum(q > p for p, q in zip(x, y))
        cells.append(f"{label} {statistics.median(x):.2f} -> {statistics.median(y):.2f}"
                     f" (lowest {min(x):.2f} -> {min(y):.2f}; {wins}/{runs})")
    print(f"  {name:36s} " + ", ".join(cells))
PY
