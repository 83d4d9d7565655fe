#!/usr/bin/env python3
"""Checks a trace written by mmb: it parses as JSON, and holds what the
caller expects. Usage: check_trace.py FILE KEY=VALUE...

  allocs=N frees=N copies=N dropped=N   exact event counts
  min_allocs=N                          at least N alloc events
  space=NAME                            a counter track with this name exists
  final_used=N                          the last "used" counter of `space`
  stacks=1                              alloc events carry a backtrace
  cache_hit=N cache_miss=N ...          exact counts of a tile cache's events
                                        (hit miss prefetch release evict writeback)
  cache_written=N                       evictions that wrote the copy home
  cache_track=NAME final_cached=N       the counter track "cache NAME", and
                                        its last "used" (bytes cached)
Exit 0 when everything holds; otherwise a message and exit 1."""
import json
import sys


def main():
    path, wants = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    other = trace["otherData"]
    count = lambda name, ph: sum(1 for e in events if e.get("name") == name and e.get("ph") == ph)
    got = {
        "allocs": count("alloc", "i"),
        "frees": count("free", "i"),
        "copies": count("copy", "X"),
        "dropped": other["dropped_events"],
    }
    errors = []
    for key in ("allocs", "frees", "copies", "dropped"):
        if key in wants and got[key] != int(wants[key]):
            errors.append(f"{key}: {got[key]}, expected {wants[key]}")
    if "min_allocs" in wants and got["allocs"] < int(wants["min_allocs"]):
        errors.append(f"allocs: {got['allocs']}, expected at least {wants['min_allocs']}")
    for e in events:
        if e.get("ph") not in ("M", "i", "C", "X"):
            errors.append(f"unexpected phase in {e}")
        if e.get("ph") != "M" and not isinstance(e.get("ts"), (int, float)):
            errors.append(f"no timestamp in {e}")
    if "space" in wants:
        track = [e for e in events if e.get("ph") == "C" and e.get("name") == wants["space"]]
        if not track:
            errors.append(f"no counter track named {wants['space']!r}")
        elif "final_used" in wants and track[-1]["args"]["used"] != int(wants["final_used"]):
            errors.append(f"final used {track[-1]['args']['used']}, expected {wants['final_used']}")
    for key, want in wants.items():
        if key.startswith("cache_") and key not in ("cache_written", "cache_track"):
            n = count(key, "i")
            if n != int(want):
                errors.append(f"{key}: {n}, expected {want}")
    if "cache_written" in wants:
        n = sum(1 for e in events if e.get("name") == "cache_evict" and e["args"]["written"])
        if n != int(wants["cache_written"]):
            errors.append(f"cache_written: {n}, expected {wants['cache_written']}")
    if "cache_track" in wants:
        name = "cache " + wants["cache_track"]
        track = [e for e in events if e.get("ph") == "C" and e.get("name") == name]
        if not track:
            errors.append(f"no counter track named {name!r}")
        elif "final_cached" in wants and track[-1]["args"]["used"] != int(wants["final_cached"]):
            errors.append(f"final cached {track[-1]['args']['used']}, expected {wants['final_cached']}")
    if wants.get("stacks") == "1":
        allocs = [e for e in events if e.get("name") == "alloc"]
        if not allocs or not all(e["args"].get("stack") for e in allocs):
            errors.append("alloc events without a stack")
    for e in errors:
        print(f"check_trace: {path}: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
