#!/usr/bin/env bash
# bench/quiet.sh [SECONDS]: before a benchmark, names every other process
# that used more than 5% of a CPU over SECONDS (default 1). The benchmarks
# time their baselines in the same run, but a process busy on another core
# still takes the caches, the memory bandwidth and, on a virtual machine,
# perhaps the core itself: on the 2-vCPU Xeon of the README, one left
# spinning took the out-of-core GEMM from 0.91x of in core to 0.73x.
# A warning, not a refusal: exit status 0 either way (2: a bad argument).
set -euo pipefail
secs="${1:-1}"
python3 - "$secs" "$$" <<'PY'
import os, sys, time

try:
    secs, me = float(sys.argv[1]), int(sys.argv[2])
except ValueError:
    secs = me = 0
if not 0 < secs < 3600:
    print(f"bench/quiet.sh: '{sys.argv[1]}' is not a number of seconds (0 to 3600)", file=sys.stderr)
    sys.exit(2)
tick = os.sysconf("SC_CLK_TCK")

def stat(pid):
    """A process's name, parent and CPU ticks (user + system); None once gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            head, rest = f.read().rsplit(")", 1)
        fields = rest.split()
        return head.split("(", 1)[1], int(fields[1]), int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return None

def ancestors(pid):
    out = set()
    while pid > 1 and (s := stat(pid)):
        out.add(pid)
        pid = s[1]
    return out

def cpu_ticks():
    ticks = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and (s := stat(int(d))):
            ticks[int(d)] = (s[0], s[2])
    return ticks

mine = ancestors(me) | {os.getpid()}
before = cpu_ticks()
time.sleep(secs)
after = cpu_ticks()
busy = []
for pid, (name, t) in after.items():
    if pid in mine or pid not in before:
        continue
    share = (t - before[pid][1]) / tick / secs
    if share > 0.05:
        busy.append((share, pid, name))
if busy:
    busy.sort(reverse=True)
    print("WARNING: not quiet: " + ", ".join(f"{name} (pid {pid}) {100 * share:.0f}% of a CPU"
                                            for share, pid, name in busy)
          + f" over {secs:g} s; ratios measured now may not hold")
else:
    print(f"quiet: no other process used more than 5% of a CPU over {secs:g} s")
PY
