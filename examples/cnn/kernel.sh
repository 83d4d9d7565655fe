#!/usr/bin/env bash
# Prints the OpenBLAS kernel build/bin/cnn settles on here, its trial of the
# best kernel the CPU allows included (examples/cnn/blas.h), or the one
# OPENBLAS_CORETYPE already names. Scripts that compare runs' weights bit
# for bit export it as OPENBLAS_CORETYPE first, so that every run runs it:
# two kernels of one speed (SkylakeX and Cooperlake on an Intel Xeon with
# AVX-512 BF16) round sgemm differently, and on a loaded machine each run's
# own trial could settle on either.
#   export OPENBLAS_CORETYPE=$(examples/cnn/kernel.sh build/bin/cnn [--data DIR])
set -euo pipefail
bin=${1:?usage: examples/cnn/kernel.sh CNN [--data DIR]}
shift
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then echo "$OPENBLAS_CORETYPE"; exit 0; fi
"$bin" "$@" --net seed --max-batches 1 --test-limit 10 --json 2>/dev/null | tail -1 |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["blas_kernel"])'
