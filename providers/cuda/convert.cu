/* The record conversion on a device: each thread moves a group of elements
   (mmb__record_move_group, the very code the host tests run, in
   src/os/record_move.h), a block of threads MMB__MOVE_GROUP times its size
   consecutive elements at a time, grid-stride. Between AoS and SoA, the
   threads of a warp touch consecutive elements of each plane, so the plane
   side of every move is coalesced and the record side stays within the
   lines of the block's records; each thread has a group's loads in flight
   at once. Compiled by nvcc into libmmb when CUDA is found; cuda.c wraps
   it as the runtime slot's convert. */
#include "os/record_move.h"

#include <cuda_runtime_api.h>

enum { THREADS = 256 };

static __global__ void __launch_bounds__(THREADS) group_kernel(const mmb__record_moves m) {
  const size_t span = (size_t)THREADS * MMB__MOVE_GROUP;
  for (size_t base = (size_t)blockIdx.x * span; base < m.count; base += (size_t)gridDim.x * span)
    mmb__record_move_group(&m, base + threadIdx.x, THREADS);
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
    const size_t span = (size_t)THREADS * MMB__MOVE_GROUP;
    size_t want = (m->count + span - 1) / span, most = (size_t)sms * 8;   /* 8 blocks an SM */
    group_kernel<<<(unsigned)(want < most ? want : most), THREADS>>>(*m);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(0);
  }
  if (prev >= 0 && prev != device) cudaSetDevice(prev);
  return (int)e;
}
