/* The record conversion on a device, in one of two kernels, both made of
   the code the host tests run (src/os/record_move.h):
   - into a run of whole records (AoS along its records), a block writes a
     chunk of them through shared memory: the fields put in it from the
     source (planes: coalesced loads), then the chunk written out as one
     contiguous window;
   - otherwise each thread moves a group of elements, a block MMB__MOVE_GROUP
     times its size consecutive elements at a time (out of records, the
     strided loads share their lines through L1).
   Either way each thread has a group's loads in flight at once, and the
   blocks walk the chunks grid-stride. Compiled by nvcc into libmmb when
   CUDA is found; cuda.c wraps it as the runtime slot's convert. */
#include "os/record_move.h"

#include <cuda_runtime_api.h>

/* A stage of 32 KiB, 7 blocks an SM on an H100 or H200. Into 64 MiB of
   3-float records on an H200, stages of 8, 16, 24, 32, 48 and 64 KiB moved
   at 0.52, 0.58, 0.68, 0.65-0.67, 0.62-0.67 and 0.51x cudaMemcpy's rate. */
enum { THREADS = 256, STAGE_BYTES = 32 << 10 };

static __global__ void __launch_bounds__(THREADS) group_kernel(const mmb__record_moves m) {
  const size_t span = (size_t)THREADS * MMB__MOVE_GROUP;
  for (size_t base = (size_t)blockIdx.x * span; base < m.count; base += (size_t)gridDim.x * span)
    mmb__record_move_group(&m, base + threadIdx.x, THREADS);
}

static __global__ void __launch_bounds__(THREADS)
    staged_kernel(const mmb__record_moves m, const mmb__record_run r, size_t chunk) {
  extern __shared__ __align__(16) char stage[];
  for (size_t first = (size_t)blockIdx.x * chunk; first < m.count;
       first += (size_t)gridDim.x * chunk) {
    size_t n = m.count - first < chunk ? m.count - first : chunk;
    if (r.gaps) {
      mmb__stage_zero(&r, n, stage, threadIdx.x, THREADS);
      __syncthreads();
    }
    mmb__stage_fields(&m, &r, first, n, stage, threadIdx.x, THREADS);
    __syncthreads();
    mmb__stage_write(&r, first, n, stage, threadIdx.x, THREADS);
    __syncthreads();   /* (the stage is the next chunk's) */
  }
}

/* Launches on `device` (made current, then restored) in the legacy
   default stream, after the copies that staged its input (the provider's
   copies run there), and waits for the kernel: a cudaError_t. */
extern "C" int mmb__cuda_convert_launch(int device, const mmb__record_moves *m) {
  int prev = -1;
  cudaGetDevice(&prev);
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess && m->count) {
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        sms < 1)
      sms = 1;
    size_t most = (size_t)sms * 8, want;   /* 8 blocks an SM */
    mmb__record_run r;
    if (m->count > 1 && mmb__record_run_of(m, true, &r) && r.step <= STAGE_BYTES) {
      size_t chunk = STAGE_BYTES / r.step, bytes = (chunk * r.step + 7) / 8 * 8;
      want = (m->count + chunk - 1) / chunk;
      staged_kernel<<<(unsigned)(want < most ? want : most), THREADS, bytes>>>(*m, r, chunk);
    } else {
      const size_t span = (size_t)THREADS * MMB__MOVE_GROUP;
      want = (m->count + span - 1) / span;
      group_kernel<<<(unsigned)(want < most ? want : most), THREADS>>>(*m);
    }
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(0);
  }
  if (prev >= 0 && prev != device) cudaSetDevice(prev);
  return (int)e;
}
