#!/usr/bin/env bash
# Runs a program on N ranks of this machine: mpirun with what Open MPI needs
# here (--oversubscribe on a machine with fewer cores than ranks, and
# --allow-run-as-root as root, as in a container), plainly with other MPIs.
#   test/mpi/run.sh N PROGRAM [ARGS...]
set -euo pipefail
n="$1"; shift
flags=(-np "$n")
if mpirun --version 2>&1 | grep -q "Open MPI"; then
  flags+=(--oversubscribe)
  [ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
  # ranks that wait in a blocking call yield the core instead of spinning on
  # it: ranks, their queues' threads and BLAS share this machine's few cores
  export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"
  # no network between ranks of one machine: shared memory and loopback only
  export OMPI_MCA_btl="${OMPI_MCA_btl:-self,vader,tcp}"
  export OMPI_MCA_btl_tcp_if_include="${OMPI_MCA_btl_tcp_if_include:-lo}"
  export OMPI_MCA_oob_tcp_if_include="${OMPI_MCA_oob_tcp_if_include:-lo}"
  # Open MPI's own allocations are not mmb's to answer for under LeakSanitizer (its
  # components stay loaded, so the suppressions can name them)
  export OMPI_MCA_mca_base_component_disable_dlclose=1
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
  export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp"
  # nor are the lock orders ThreadSanitizer sees inside it
  export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/tsan.supp"
fi
exec mpirun "${flags[@]}" "$@"
