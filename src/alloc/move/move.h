/* Internal, the allocation layer's top sub-floor: movement. The copy
   engine (engine.c: host-to-host strided copies, threads, non-temporal
   stores) and checked copies between allocations (copy.c). */
#ifndef MMB_ALLOC_MOVE_H
#define MMB_ALLOC_MOVE_H

#include "alloc/strategy/strategy.h"

#include <stdatomic.h>

/* ---- the copy engine (engine.c) ----------------------------------------- */
/* Host-to-host strided copies. ndims >= 1, dims[0] in bytes; stride[k] is the
   byte distance between consecutive indices of dim k (stride[0] unused).
   threads: how many may share it (0: MMB_COPY_THREADS); numa: the OS index
   of the destination's NUMA node, where helpers run (-1: anywhere). */
void mmb__engine_copy(char *dst, const size_t *dstride, const char *src, const size_t *sstride,
                      size_t ndims, const size_t *dims, unsigned threads, int numa);
/* For code that moves data its own way (the record conversions): whether a
   copy of `bytes` should write with streaming stores, and one run written
   so (stream, where the CPU has them; the caller fences with _mm_sfence)
   or with memcpy. */
bool mmb__engine_streams(size_t bytes);
void mmb__engine_run(char *dst, const char *src, size_t bytes, bool stream);
/* How many threads a copy of `bytes` between interfaces that ask for
   `threads` (0: MMB_COPY_THREADS) runs on: 1 below the engine's split
   size. And work of the caller's split over the engine's helpers, parts
   of it at once (numa: as for mmb__engine_copy): part(arg, i, parts) for
   each i below parts, the caller's thread taking part 0; part(arg, 0, 1)
   on the caller's thread alone where parts is below 2 or the helpers are
   busy with another split (or none can be started). Each part fences its
   own streaming stores, and takes its work from an mmb__engine_deal. */
unsigned mmb__engine_threads(size_t bytes, unsigned threads);
void mmb__engine_split(void (*part)(void *arg, unsigned i, unsigned parts), void *arg,
                       unsigned parts, int numa);
/* An index 0..n-1 dealt to a split's parts in chunks, each part taking
   the next chunk when it is done with its last, so that a part whose
   thread runs slower takes fewer (its CPU woken from idle for the split,
   or busy with other work). Chunks are about MMB__DEAL_BYTES of the work
   (`unit_bytes` an index) in whole units of `unit` (64 along one run of
   bytes or elements, so that each chunk starts on a cache line where the
   run does; 1 along an outer index). Halves fixed in advance left a
   conversion split over two threads of a VM waiting on the thread woken
   for it, which ran its half up to 1.7x as long as the caller's
   (docs/design.md). */
enum { MMB__DEAL_BYTES = 1 << 20 };
typedef struct mmb__engine_deal {
  _Atomic size_t next;   /* the first index not yet dealt */
  size_t n, chunk;
} mmb__engine_deal;
static inline void mmb__engine_deal_init(mmb__engine_deal *d, size_t n, size_t unit,
                                         size_t unit_bytes) {
  size_t chunk = MMB__DEAL_BYTES / mmb__max(unit_bytes, (size_t)1) / unit * unit;
  d->n = n, d->chunk = mmb__max(chunk, unit);
  atomic_init(&d->next, 0);
}
/* Part of `parts`' next chunk, [*lo, *hi) (a part alone: all that is
   left); false when all are dealt. */
static inline bool mmb__engine_deal_next(mmb__engine_deal *d, unsigned parts, size_t *lo,
                                         size_t *hi) {
  size_t take = parts < 2 ? d->n : d->chunk;
  size_t at = atomic_fetch_add_explicit(&d->next, take, memory_order_relaxed);
  if (at >= d->n) return false;
  *lo = at, *hi = d->n - at > take ? at + take : d->n;
  return true;
}
mmbError mmb__engine_init(void);      /* MMB_COPY_NT_BYTES, MMB_COPY_THREADS, the CPU's stores */
void mmb__engine_finalize(void);      /* joins the helper threads */

/* A checked copy between allocations, ready to run (now, or on a queue). */
typedef struct mmb__copy_side {
  mmbAllocation *a;
  size_t offset, span;   /* first byte, and bytes from there to one past the last */
  size_t stride[MMB_MAX_DIMS];   /* bytes between consecutive indices of dim k >= 1 */
} mmb__copy_side;
typedef struct mmb__copy_plan {
  mmb__copy_side d, s;
  size_t ndims, dims[MMB_MAX_DIMS];
  bool same;     /* the very same block of one allocation: nothing to move */
  size_t move;   /* overlapping contiguous runs of host memory: bytes to memmove */
} mmb__copy_plan;
/* mmb_copy_nd's checks (same units and errors), filling a plan (in part,
   on failure). */
mmbError mmb__copy_prepare(const char *func, mmbAllocation *dst, const size_t *doffset,
                           const size_t *dpitch, mmbAllocation *src, const size_t *soffset,
                           const size_t *spitch, size_t ndims, const size_t *dims,
                           mmb__copy_plan *out);
/* ... and those of mmb_copy_2d and mmb_copy. */
mmbError mmb__copy_prepare_2d(const char *func, mmbAllocation *dst, size_t dxoffset,
                              size_t dyoffset, size_t dxpitch, mmbAllocation *src,
                              size_t sxoffset, size_t syoffset, size_t spitch, size_t width,
                              size_t height, mmb__copy_plan *out);
mmbError mmb__copy_prepare_whole(const char *func, mmbAllocation *dst, mmbAllocation *src,
                                 mmb__copy_plan *out);

/* What moves rows when a side is memory the host cannot reach: the
   provider of that side (synchronously), or a device stream, on which the
   copies are issued and still in flight when the call returns (src/queue's
   CUDA backend; src/alloc knows no queues). The copy_2d and copy_3d
   signatures are those of mmbProviderOps. */
typedef struct mmb__copy_engine {
  void *state;
  mmbError (*copy_2d)(void *state, void *dst, size_t dpitch, const void *src, size_t spitch,
                      size_t width, size_t height);
  mmbError (*copy_3d)(void *state, void *dst, size_t dpitch, size_t dslice, const void *src,
                      size_t spitch, size_t sslice, size_t width, size_t height, size_t depth);
  /* Streams: whether it can address the memory of an interface the host cannot. */
  bool (*reaches)(void *state, const mmbMemInterface *iface);
} mmb__copy_engine;

/* Runs a plan: now (on == NULL), or issued on a stream engine. On a stream,
   MMB_UNSUPPORTED (before anything is issued) means the copy is the host's
   to do: both sides are host memory, a side is out of the stream's reach,
   or the ranges overlap. */
mmbError mmb__copy_run(const char *func, mmb__copy_plan *p, const mmb__copy_engine *on);

/* The threads a copy between two interfaces (either may be NULL) may use:
   the larger ask (0: the engine's default). */
unsigned mmb__copy_threads(const mmbMemInterface *di, const mmbMemInterface *si);

/* A strided copy between two pieces of memory, each belonging to an
   interface (NULL: plain host memory, such as a staging buffer). Same units
   as the engine; the ranges are the caller's to check. Host pairs go to the
   engine, others to the provider of the side the host cannot reach, or to
   the stream `on` (see mmb__copy_run for its MMB_UNSUPPORTED).
   ndims may be up to MMB_MAX_DIMS + 1 (tiles copied element by element). */
mmbError mmb__copy_strided(const char *func, const mmb__copy_engine *on, mmbMemInterface *di,
                           char *dst, const size_t *dstride, mmbMemInterface *si,
                           const char *src, const size_t *sstride, size_t ndims,
                           const size_t *dims);

#endif /* MMB_ALLOC_MOVE_H */
