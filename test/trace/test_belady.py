#!/usr/bin/env python3
"""tools/mmb-belady on traces made here, whose answers are known by hand:
MIN's misses on a cycle, pinned copies that MIN may not evict, the bytes
a dirty copy costs, and mmb's own counts read from the events.
Exit 0 when all hold."""
import json
import os
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "mmb-belady")
B = 1024   # every tile's bytes


def trace(events, budget):
    """A trace as mmb writes it: each cache instant followed by its counter."""
    out, used, ts = [], 0, 0
    for name, tile, extra in events:
        ts += 1
        args = {"space": "fast", "tile": tile, "bytes": B, **extra}
        out.append({"name": name, "cat": "mmb.cache", "ph": "i", "s": "t", "ts": ts, "pid": 1,
                    "tid": 1, "args": args})
        out.append({"name": "cache fast", "cat": "mmb.cache", "ph": "C", "ts": ts, "pid": 1,
                    "args": {"used": used, "dirty": 0, "pinned": 0, "budget": budget}})
    return {"otherData": {"dropped_events": 0}, "traceEvents": out}


def acquire(tile, hit=False, write=False):
    name = "cache_hit" if hit else "cache_miss"
    extra = {"read": True, "write": write}
    if not hit:
        extra["fetched"] = True
    return [(name, tile, extra), ("cache_release", tile, {})]


def run(t, *flags):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(t, f)
    try:
        p = subprocess.run([sys.executable, TOOL, f.name, "--json", *flags], capture_output=True,
                           text=True)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.splitlines()[0])
    finally:
        os.unlink(f.name)


def main():
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append(f"{what}: {got}, expected {want}")

    # A B C A B C in two tiles' room: LRU (what mmb did here) misses all
    # six; MIN keeps A for its next use, then drops it: 4 misses.
    ev = sum((acquire(t) for t in (1, 2, 3, 1, 2, 3)), [])
    r = run(trace(ev, 2 * B))
    check("cycle: MIN misses", r["belady"]["misses"], 4)
    check("cycle: mmb misses", r["mmb"]["misses"], 6)
    check("cycle: accesses", r["accesses"], 6)
    check("cycle: MIN fetched", r["belady"]["fetched_bytes"], 4 * B)
    check("cycle: ratio", round(r["miss_ratio"], 3), 1.5)

    # A stays pinned (acquired, never released): MIN may only evict B or C,
    # so B C B C in the one tile left misses every time: 1 + 4 misses.
    ev = [("cache_miss", 1, {"read": True, "write": False, "fetched": True})]
    ev += sum((acquire(t) for t in (2, 3, 2, 3)), [])
    r = run(trace(ev, 2 * B))
    check("pinned: MIN misses", r["belady"]["misses"], 5)
    check("pinned: never over budget", r["belady"]["over_budget"], 0)

    # A written, then B and C read in one tile's room: A goes home once
    # when evicted; a write-only miss fetches nothing.
    ev = [("cache_miss", 1, {"read": False, "write": True, "fetched": False}),
          ("cache_release", 1, {})] + acquire(2) + acquire(3)
    r = run(trace(ev, 1 * B), "--bandwidth", "1M")
    check("dirty: MIN written", r["belady"]["written_bytes"], B)
    check("dirty: MIN fetched", r["belady"]["fetched_bytes"], 2 * B)
    check("dirty: seconds at 1 MiB/s", r["belady_seconds"], 3 * B / (1 << 20))

    # mmb's side: prefetches count as misses, write-backs and written
    # evictions as bytes written.
    ev = [("cache_prefetch", 1, {"fetched": True})] + acquire(1, hit=True) + \
         [("cache_writeback", 1, {}), ("cache_evict", 1, {"written": False})]
    r = run(trace(ev, 2 * B))
    check("mmb: misses", r["mmb"]["misses"], 1)
    check("mmb: written", r["mmb"]["written_bytes"], B)
    check("mmb: MIN misses the first acquire", r["belady"]["misses"], 1)

    for f in failures:
        print(f"test_belady: {f}", file=sys.stderr)
    print(f"test_belady: {'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
