/* The host copy engine: strided copies between host-accessible memory.
   copy.c has already folded every dimension that is contiguous on both sides,
   so what reaches here has real gaps between rows; each row is one memcpy.
   (Measured on this project's machine with one-off experiments, not kept:
   streaming stores over gapped rows ran at 10.5 GB/s against 14 GB/s for
   per-row memcpy, and software prefetch of the next rows changed nothing.
   bench/copy.c measures the engine itself.) */
#include "alloc/internal.h"

#include <string.h>

void mmb__engine_copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                         size_t width, size_t height) {
  char *d = dst;
  const char *s = src;
  for (size_t r = 0; r < height; r++) memcpy(d + r * dpitch, s + r * spitch, width);
}

void mmb__engine_copy_nd(char *dst, const size_t *dstride, const char *src,
                         const size_t *sstride, size_t ndims, const size_t *dims) {
  if (ndims == 1) {
    memcpy(dst, src, dims[0]);
    return;
  }
  if (ndims == 2) {
    mmb__engine_copy_2d(dst, dstride[1], src, sstride[1], dims[0], dims[1]);
    return;
  }
  size_t k = ndims - 1;
  for (size_t i = 0; i < dims[k]; i++)
    mmb__engine_copy_nd(dst + i * dstride[k], dstride, src + i * sstride[k], sstride, k, dims);
}
