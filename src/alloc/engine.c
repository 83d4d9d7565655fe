/* The host copy engine: strided copies between host-accessible memory.

   Rows go through memcpy while the copy fits in the last-level cache. Past
   that, each row is written with non-temporal stores, as glibc's memcpy does
   for large blocks: a cached store first reads the destination line (a third
   of the traffic), and the copied data would only evict the cache anyway. */
#include "alloc.h"

#include <string.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#define MMB_HAVE_STREAMING 1
#endif

/* Copies at least this large stream; a 3/4 share of the LLC, as glibc does. */
static size_t streaming_threshold(void) {
  static size_t threshold;
  if (!threshold) {
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    threshold = llc > 0 ? (size_t)llc / 4 * 3 : (size_t)4 << 20;
  }
  return threshold;
}

#if MMB_HAVE_STREAMING
/* One row with streaming stores: aligned 64-byte body, memcpy'd edges. */
static void copy_row_streaming(char *d, const char *s, size_t n) {
  size_t head = (16 - ((uintptr_t)d & 15)) & 15;
  if (head > n) head = n;
  memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 64; n -= 64, d += 64, s += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
    _mm_stream_si128((__m128i *)d, a);
    _mm_stream_si128((__m128i *)(d + 16), b);
    _mm_stream_si128((__m128i *)(d + 32), c);
    _mm_stream_si128((__m128i *)(d + 48), e);
  }
  memcpy(d, s, n);
}
#endif

void mmb__engine_copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                         size_t width, size_t height) {
  char *d = dst;
  const char *s = src;
#if MMB_HAVE_STREAMING
  if (height > 1 && width >= 64 && width * height >= streaming_threshold()) {
    for (size_t r = 0; r < height; r++) copy_row_streaming(d + r * dpitch, s + r * spitch, width);
    _mm_sfence();   /* streaming stores are weakly ordered */
    return;
  }
#endif
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
  /* Outer dims loop over 2-D planes; decide streaming on the whole copy. */
  size_t k = ndims - 1;
  for (size_t i = 0; i < dims[k]; i++)
    mmb__engine_copy_nd(dst + i * dstride[k], dstride, src + i * sstride[k], sstride, k, dims);
}
