#!/usr/bin/env python3
"""Compares runs of build/bin/cnn from their --json lines: the wide net
through a small fast tier (--plan auto: mmb's tile cache; or streamed: the
hand plan) against the same batches all resident.

  compare.py SMALL.json RESIDENT.json [SMALL.json RESIDENT.json ...]

Each file holds one run's stdout; its last line is the JSON summary. With
several pairs (interleaved runs), times are medians and the spread is
shown. Exit status 1 when the two plans' weights differ."""
import json
import statistics
import sys


def last_json(path):
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l.startswith("{")]
    if not lines:
        sys.exit(f"compare: no JSON line in {path}")
    return json.loads(lines[-1])


def mib(b):
    return b / 1048576.0


def main():
    paths = sys.argv[1:]
    if len(paths) < 2 or len(paths) % 2:
        sys.exit("usage: compare.py STREAMED.json RESIDENT.json [...]")
    runs = [last_json(p) for p in paths]
    streamed, resident = runs[0::2], runs[1::2]
    s_ms = [1e3 * r["seconds_per_batch"] for r in streamed]
    r_ms = [1e3 * r["seconds_per_batch"] for r in resident]
    ratios = [a / b for a, b in zip(s_ms, r_ms)]
    s0, r0 = streamed[0], resident[0]
    same = all(s["weights_fnv1a"] == r["weights_fnv1a"] for s, r in zip(streamed, resident))
    spread = lambda v: f" (min {min(v):.2f}, max {max(v):.2f} over {len(v)} runs)" if len(v) > 1 else ""
    print(f"wide net, {s0['batches']} batches of {s0['batch']} ({s0['train_samples']} images), "
          f"{s0['threads']} thread(s):")
    how = ("acquired from mmb's tile cache in" if s0.get("plan") == "auto"
           else "streamed by the hand plan through")
    print(f"  {how} {mib(s0['fast_budget_bytes']):.2f} MiB "
          f"({100.0 * s0['fast_budget_bytes'] / s0['params_bytes']:.0f}% of the "
          f"{mib(s0['params_bytes']):.1f} MiB of parameters; its high watermark "
          f"{mib(s0['fast_params_high_bytes']):.2f} MiB): "
          f"{statistics.median(s_ms):.2f} ms per batch{spread(s_ms)}")
    print(f"  all resident ({mib(r0['fast_params_high_bytes']):.1f} MiB in the fast tier):"
          f" {statistics.median(r_ms):.2f} ms per batch{spread(r_ms)}")
    print(f"  {s0.get('plan', 'streamed')} / resident: {statistics.median(ratios):.3f}"
          f"{spread(ratios)}")
    if s0.get("offload_chunk"):
        print(f"  activations offloaded in chunks of {s0['offload_chunk']}: "
              f"{mib(s0['offload_bytes']):.1f} MiB a batch homed in the capacity tier; in the "
              f"fast tier {mib(s0['activations_high_bytes']):.1f} MiB of activations against "
              f"{mib(r0['activations_high_bytes']):.1f} resident")
    if s0.get("plan") == "auto":
        print(f"  the cache: {s0['cache_hits']} hits, {s0['cache_misses']} misses "
              f"({mib(s0['cache_fetched_bytes']):.0f} MiB fetched), {s0['cache_writebacks']} "
              f"write-backs")
    print(f"  same weights after the same batches: {'yes' if same else 'NO'} "
          f"(fnv1a {s0['weights_fnv1a']} and {r0['weights_fnv1a']}); provider trips after the "
          f"first batch: {max(r['provider_trips_after_first_batch'] for r in runs)}; RSS growth "
          f"after it: {max(r['rss_end'] - r['rss_after_first_batch'] for r in runs) // 1024} KiB")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
