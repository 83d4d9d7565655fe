/* Internal: what the cuda provider shares with the CUDA-stream queue
   backend, the only other file that includes CUDA headers. */
#ifndef MMB_PROVIDERS_CUDA_INTERNAL_H
#define MMB_PROVIDERS_CUDA_INTERNAL_H

#include "builtin.h"

#include <cuda_runtime_api.h>

/* An mmbError for a CUDA error (logged with its CUDA name; the runtime's
   last-error slot is reset). */
mmbError mmb__cuda_error(cudaError_t e, const char *call);

/* Runs `expr` with `device` current, restoring the caller's device. */
#define ON_DEVICE(device, expr)                                  \
  ({                                                             \
    int prev_ = -1;                                              \
    cudaGetDevice(&prev_);                                       \
    cudaError_t e_ = cudaSetDevice(device);                      \
    if (e_ == cudaSuccess) e_ = (expr);                          \
    if (prev_ >= 0 && prev_ != (device)) cudaSetDevice(prev_);   \
    e_;                                                          \
  })

/* The parameters of a 3-D copy in mmbProviderOps.copy_3d's terms, with
   cudaMemcpyDefault (unified addressing tells directions); false when
   cudaMemcpy3D cannot express it (planes that are not whole rows). */
static inline bool mmb__cuda_3d_parms(struct cudaMemcpy3DParms *p, void *dst, size_t dpitch,
                                      size_t dslice, const void *src, size_t spitch,
                                      size_t sslice, size_t width, size_t height, size_t depth) {
  if (dslice % dpitch || sslice % spitch) return false;
  *p = (struct cudaMemcpy3DParms){0};
  p->srcPtr = (struct cudaPitchedPtr){(void *)src, spitch, width, sslice / spitch};
  p->dstPtr = (struct cudaPitchedPtr){dst, dpitch, width, dslice / dpitch};
  p->extent = (struct cudaExtent){width, height, depth};
  p->kind = cudaMemcpyDefault;
  return true;
}

#endif /* MMB_PROVIDERS_CUDA_INTERNAL_H */
