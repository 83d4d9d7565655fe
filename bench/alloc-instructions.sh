#!/usr/bin/env bash
# bench/alloc-instructions.sh: the instructions one allocate+free takes, for
# mmb's pool (and a thread-safe pool) and for glibc malloc, mimalloc and
# jemalloc, in the single-thread patterns of bench/alloc, counted by
# valgrind's callgrind. Time on a noisy machine swings; an instruction count
# does not, so a change to a fast path shows here exactly.
#
# Each allocator runs in a process of its own (`bench-alloc --count WHO
# PATTERN`, the baselines through LD_PRELOAD), and only the timed loop of the
# pattern is counted. Printed per allocate+free: the instructions inside the
# allocator's calls (malloc and free; mmb_allocate, mmb_allocation_ptr and
# mmb_free, or mmb_ptr_allocate and mmb_ptr_deallocate), and in the whole loop, which
# calls them inline as a program does (bench/alloc_patterns.h).
#
# Usage: bench/alloc-instructions.sh [BINARY]   (make bench-alloc-instructions;
# BINARY: bench-alloc built without -march=native, which valgrind can run)
set -euo pipefail
bin=${1:-build/bin/bench-alloc-count}
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
  { echo "alloc-instructions: needs valgrind (scripts/install-deps.sh count)" >&2; exit 1; }
[ -x "$bin" ] || { echo "alloc-instructions: no $bin (make bench-alloc-instructions builds it)" >&2; exit 1; }

find_lib() {
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
    [ -e "$d/$1" ] && { echo "$d/$1"; return; }
  done
}
mimalloc=$(find_lib libmimalloc.so.2)
jemalloc=$(find_lib libjemalloc.so.2)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# count WHO-ARG PRELOAD PATTERN: prints "wrappers loop" per operation
count() {
  local out=$tmp/cg ops
  ops=$(env ${2:+LD_PRELOAD=$2} valgrind --tool=callgrind --collect-atstart=no \
          --callgrind-out-file="$out" "$bin" --count "$1" "$3" 2>"$tmp/err" | awk '$1 == "ops" {print $2}')
  [ -n "$ops" ] || { echo "alloc-instructions: $1 $3 failed:" >&2; cat "$tmp/err" >&2; exit 1; }
  # a function's inclusive count is its largest entry (inlined code is also
  # listed under the files it came from)
  callgrind_annotate --inclusive=yes "$out" 2>/dev/null | awk -v ops="$ops" '
    function n(s) { gsub(",", "", s); return s + 0 }
    /PROGRAM TOTALS/ { total = n($1) }
    $3 ~ /:(mmb_allocate|mmb_free|mmb_allocation_ptr|mmb_ptr_allocate|mmb_ptr_deallocate|malloc|free)$/ {
      split($3, f, ":"); v = n($1); if (v > best[f[2]]) best[f[2]] = v }
    END { w = 0; for (k in best) w += best[k]; printf "%.1f %.1f", w / ops, total / ops }'
}

patterns="pairs window-1 window-64 window-1000 batch batch-reverse region-job"
whos=("mmb|mmb|" "mmb-threads|mmb thread-safe|" "mmb-ptr|mmb_ptr_allocate|" "mmb-ptr-threads|ptr thread-safe|" "malloc|glibc|")
[ -n "$mimalloc" ] && whos+=("malloc|mimalloc|$mimalloc")
[ -n "$jemalloc" ] && whos+=("malloc|jemalloc|$jemalloc")

echo "alloc-instructions: instructions per allocate+free (valgrind --tool=callgrind), in the"
echo "allocate and free calls a caller makes / in the whole timed loop; blocks of 64-320 B"
echo
printf "%-15s" "pattern"
for w in "${whos[@]}"; do IFS='|' read -r _ name _ <<<"$w"; printf "  %-17s" "$name"; done
echo
for p in $patterns; do
  printf "%-15s" "$p"
  for w in "${whos[@]}"; do
    IFS='|' read -r arg _ lib <<<"$w"
    r=$(count "$arg" "$lib" "$p")   # (a failed count stops the script here)
    read -r calls loop <<<"$r"
    printf "  %6s / %-8s" "$calls" "$loop"
  done
  echo
done
