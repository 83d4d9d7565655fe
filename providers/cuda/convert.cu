/* The record conversion on a device: one thread per element (grid-stride),
   each moving every field of its element with mmb__record_move, the very
   code the host tests run (src/os/record_move.h). Between AoS and SoA,
   consecutive threads touch consecutive elements of each plane, so the
   plane side of every move is coalesced and the record side stays within
   the lines of a warp's records. Compiled by nvcc into libmmb when CUDA is
   found; cuda.c wraps it as the runtime slot's convert. */
#include "os/record_move.h"

#include <cuda_runtime_api.h>

static __global__ void convert_kernel(const mmb__record_moves m) {
  size_t step = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < m.count; i += step)
    mmb__record_move(&m, i);
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
    const unsigned threads = 256;
    size_t want = (m->count + threads - 1) / threads, most = (size_t)sms * 8;   /* 8 blocks an SM */
    convert_kernel<<<(unsigned)(want < most ? want : most), threads>>>(*m);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(0);
  }
  if (prev >= 0 && prev != device) cudaSetDevice(prev);
  return (int)e;
}
