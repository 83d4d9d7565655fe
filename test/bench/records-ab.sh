#!/usr/bin/env bash
# bench/records-ab.sh compares two builds' record conversions run by run,
# and refuses bad arguments (make test). Usage: test/bench/records-ab.sh BUILD
set -uo pipefail
build=${1:?usage: test/bench/records-ab.sh BUILD}
fails=0
out=$(bench/records-ab.sh "$build" "$build" 2 1 64K 2>&1)
rc=$?
n='[0-9.]+'
rows=$(grep -cE "^  .*AoS->SoA $n -> $n \(lowest $n -> $n; [0-2]/2\), SoA->AoS $n -> $n \(lowest $n -> $n; [0-2]/2\)$" <<<"$out")
if [ $rc -ne 0 ] || [ "$rows" -ne 6 ]; then   # 4 records, 2 tile sizes
  echo "FAIL: a build against itself gave rc $rc and $rows rows of 6: $out"; fails=1
fi
# two fake builds whose runs print known ratios: the medians and the runs won
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
for which in before after; do
  mkdir -p "$fake/$which/bin"
  cat > "$fake/$which/bin/bench-records" <<SH
#!/bin/sh
n=\$(cat "$fake/$which.n" 2>/dev/null || echo 0); echo \$((n + 1)) > "$fake/$which.n"
if [ $which = before ]; then a=0.50; b=1.0\$n; else a=0.9\$n; b=0.80; fi
echo "3 floats: 100 records of 12 B (1 KiB)"
echo "  ratio vs the faster plain copy: AoS->SoA \${a}x, SoA->AoS \${b}x"
echo "  ratio vs the 2-thread copy:     AoS->SoA 0.6\${n}x, SoA->AoS \${a}x (target >= 0.8)"
echo "particle (24 B, 5 fields): 50 records of 24 B (1 KiB)"
echo "  ratio vs the faster plain copy: AoS->SoA 0.70x, SoA->AoS 0.70x"
echo "particles in 32 x 32 tiles of a 64 x 64 array (96 KiB)"
echo "  ratio vs memcpy by tile rows:   AoS->SoA \${a}x, SoA->AoS 0.3\${n}x"
SH
  chmod +x "$fake/$which/bin/bench-records"
done
out=$(bench/records-ab.sh "$fake/before" "$fake/after" 3 2>&1)
for want in "3 floats \(12 B\) +AoS->SoA 0.50 -> 0.91 \(lowest 0.50 -> 0.90; 3/3\), SoA->AoS 1.01 -> 0.80 \(lowest 1.00 -> 0.80; 0/3\)" \
            "3 floats \(12 B\), 2 threads +AoS->SoA 0.61 -> 0.61 \(lowest 0.60 -> 0.60; 0/3\), SoA->AoS 0.50 -> 0.91 \(lowest 0.50 -> 0.90; 3/3\)" \
            "particle \(24 B, 5 fields\) +AoS->SoA 0.70 -> 0.70 \(lowest 0.70 -> 0.70; 0/3\), SoA->AoS 0.70 -> 0.70 \(lowest 0.70 -> 0.70; 0/3\)" \
            "particles in 32 x 32 tiles +AoS->SoA 0.50 -> 0.91 \(lowest 0.50 -> 0.90; 3/3\), SoA->AoS 0.31 -> 0.31 \(lowest 0.30 -> 0.30; 0/3\)"; do
  if ! grep -qE "^  $want$" <<<"$out"; then echo "FAIL: no row '$want' in: $out"; fails=1; fi
done
for bad in "$build" "$build /nonexistent" "$build $build 0" "$build $build x" \
           "$build $build 2 y" "$build $build 1 1 64K extra"; do
  # shellcheck disable=SC2086
  bench/records-ab.sh $bad > /dev/null 2>&1
  if [ $? -ne 2 ]; then echo "FAIL: arguments '$bad' were not refused"; fails=1; fi
done
[ $fails -eq 0 ] && echo "bench/records-ab.sh: 11 passed"
exit $fails
