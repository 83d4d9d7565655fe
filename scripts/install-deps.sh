#!/usr/bin/env bash
# Installs what one part of mmb needs, on Debian/Ubuntu (apt-get). The
# Makefile calls it per target, so building the library asks for hwloc alone:
#   scripts/install-deps.sh lib        the library and mmb-info: hwloc, pkg-config
#   scripts/install-deps.sh examples   + OpenBLAS (the CNN's kernels)
#   scripts/install-deps.sh fortran    + gfortran (module mamba, libfmmb)
#   scripts/install-deps.sh mpi        + Open MPI (libmmb_mpi, the data-parallel CNN)
#   scripts/install-deps.sh test       + Criterion, OpenBLAS, gnuplot, python3 (tools/mmb-plot,
#                                      the trace checks), cmake (the find_package check),
#                                      clang and libclang-rt-14-dev (make fuzz), gfortran, Open MPI,
#                                      ScaLAPACK (libscalapack-openmpi-dev: pgemm, the mapping's check)
#   scripts/install-deps.sh bench      + OpenBLAS, mimalloc and jemalloc (allocator baselines)
#   scripts/install-deps.sh count      + mimalloc, jemalloc and valgrind (bench/alloc-instructions.sh)
#   scripts/install-deps.sh fuzz       + clang and libclang-rt-14-dev
#   scripts/install-deps.sh analyze    + clang (its static analyser), OpenBLAS, gfortran, Open MPI
#   scripts/install-deps.sh docs       + doxygen (make docs)
#   scripts/install-deps.sh torch      + PyTorch (python3-torch), bench/cnn.sh's baseline
#   scripts/install-deps.sh all        everything but torch
# Idempotent: installs nothing when everything is there. As a user without
# root (and no password-less sudo) it installs nothing: it names the packages
# to ask for and exits 1. MMB_SKIP_DEPS=1 skips it (dependencies from
# modules or a prefix of your own: set PKG_CONFIG_PATH and CPATH instead).
set -euo pipefail

[ "${MMB_SKIP_DEPS:-0}" = 1 ] && exit 0
set_name=${1:-all}

need=()
have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/local/include/$1" ]; }
want_hwloc()    { pkg-config --exists hwloc 2>/dev/null || have_header hwloc.h || need+=(libhwloc-dev); }
want_pkgconfig() { command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config); }
# OpenBLAS itself: the reference BLAS (libblas-dev) also ships a cblas.h.
want_openblas() { pkg-config --exists openblas 2>/dev/null || need+=(libopenblas-dev); }
want_criterion() { have_header criterion/criterion.h || need+=(libcriterion-dev); }
want_plot()     { command -v gnuplot >/dev/null 2>&1 || need+=(gnuplot-nox)
                  [ -x /usr/bin/python3 ] || command -v python3 >/dev/null 2>&1 || need+=(python3); }
want_cmake()    { command -v cmake >/dev/null 2>&1 || need+=(cmake); }
want_clang()    { command -v clang >/dev/null 2>&1 || need+=(clang); }
want_fuzz()     { want_clang
                  ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
                    need+=(libclang-rt-14-dev); }
want_allocators() { have_header mimalloc.h || need+=(libmimalloc-dev)
                    have_header jemalloc/jemalloc.h || need+=(libjemalloc-dev); }
want_fortran()  { command -v gfortran >/dev/null 2>&1 || need+=(gfortran); }
# (Open MPI's mpirun looks for an rsh agent even for the ranks of one node)
want_mpi()      { command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 ||
                    need+=(libopenmpi-dev openmpi-bin)
                  command -v ssh >/dev/null 2>&1 || command -v rsh >/dev/null 2>&1 || need+=(openssh-client); }
want_scalapack() { want_mpi
                  ls /usr/lib/*/libscalapack-openmpi.so >/dev/null 2>&1 || need+=(libscalapack-openmpi-dev); }
want_valgrind() { command -v valgrind >/dev/null 2>&1 || need+=(valgrind); }
want_doxygen()  { command -v doxygen >/dev/null 2>&1 || need+=(doxygen); }
want_torch()    { /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || need+=(python3-torch); }

check() {
need=()
want_pkgconfig
want_hwloc
case "$set_name" in
  lib) ;;
  examples) want_openblas ;;
  fortran) want_fortran ;;
  mpi) want_mpi ;;
  test) want_openblas; want_criterion; want_plot; want_cmake; want_fuzz; want_fortran; want_mpi
        want_scalapack ;;
  bench) want_openblas; want_allocators ;;
  count) want_allocators; want_valgrind ;;
  fuzz) want_fuzz ;;
  analyze) want_clang; want_openblas; want_fortran; want_mpi ;;
  docs) want_doxygen ;;
  torch) want_torch ;;
  all) want_openblas; want_criterion; want_plot; want_cmake; want_fuzz; want_allocators; want_doxygen
       want_fortran; want_mpi; want_scalapack ;;
  *) echo "install-deps: unknown set '$set_name' (lib, examples, fortran, mpi, test, bench, count, fuzz, analyze, docs, torch, all)" >&2
     exit 2 ;;
esac
}

check
[ ${#need[@]} -eq 0 ] && exit 0
# One apt-get at a time (make -j runs several sets at once): wait for the
# others, then look again.
exec 9>"${TMPDIR:-/tmp}/mmb-install-deps.lock"
flock 9 2>/dev/null || true
check
[ ${#need[@]} -eq 0 ] && exit 0

echo "install-deps: '$set_name' needs ${need[*]}" >&2
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: no apt-get here; install the equivalents of: ${need[*]}" >&2
  echo "install-deps: (then MMB_SKIP_DEPS=1 make ... skips this check)" >&2
  exit 1
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1 || ! sudo -n true 2>/dev/null; then
    echo "install-deps: not root, and no password-less sudo: ask for" >&2
    echo "    apt-get install ${need[*]}" >&2
    echo "install-deps: or build against your own copies: MMB_SKIP_DEPS=1 with PKG_CONFIG_PATH/CPATH set" >&2
    exit 1
  fi
  SUDO="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
