#!/usr/bin/env bash
# Installs what mmb needs to build, test and run its examples on Debian/Ubuntu:
# hwloc (topology, NUMA binding), OpenBLAS (the CNN's kernels), Criterion (tests),
# mimalloc (benchmark baseline only), pkg-config, and gnuplot + python3 for
# tools/mmb-plot and the trace checks. Idempotent: it installs
# nothing when every dependency is already present. The Makefile calls it when a
# header it needs is missing; run it yourself with sudo as a non-root user.
#   scripts/install-deps.sh          what the build, tests and examples need
#   scripts/install-deps.sh torch    also PyTorch (python3-torch), bench/cnn.sh's baseline
#   scripts/install-deps.sh fuzz     also clang and libclang-rt-14-dev (make fuzz)
set -euo pipefail

need=()
have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/local/include/$1" ]; }
have_header hwloc.h                 || need+=(libhwloc-dev)
have_header criterion/criterion.h   || need+=(libcriterion-dev)
have_header mimalloc.h              || need+=(libmimalloc-dev)
# OpenBLAS itself: the reference BLAS (libblas-dev) also ships a cblas.h.
pkg-config --exists openblas 2>/dev/null || need+=(libopenblas-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v gnuplot >/dev/null 2>&1    || need+=(gnuplot-nox)     # tools/mmb-plot
[ -x /usr/bin/python3 ] || command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ "${1:-}" = fuzz ]; then   # make fuzz: clang and its libFuzzer runtime
  command -v clang >/dev/null 2>&1 || need+=(clang)
  ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
    need+=(libclang-rt-14-dev)
fi
if [ "${1:-}" = torch ]; then
  /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || need+=(python3-torch)
fi

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${need[*]}" >&2
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: no apt-get here; install the equivalents of: ${need[*]}" >&2
  exit 1
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps: not root and no sudo; as root run: apt-get install ${need[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
