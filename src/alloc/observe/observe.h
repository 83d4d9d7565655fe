/* Internal, the allocation layer's second sub-floor: observation. The
   statistics (stats.c: counters merged when read, high watermarks) and the
   trace (trace.c). Both read the model and nothing above it: the
   strategies write into them as into a log (a relaxed load while no trace
   runs), and they never reach into a strategy (a strategy's own counters
   reach them through its table's merge). */
#ifndef MMB_ALLOC_OBSERVE_H
#define MMB_ALLOC_OBSERVE_H

#include "alloc/model/model.h"

/* ---- statistics (stats.c) ----------------------------------------------- */
void mmb__merge_counters(mmb__merged *acc, const mmb__counters *c);
void mmb__merge_interface(mmb__merged *acc, const mmbMemInterface *iface);
/* Raises the sampled used_high of iface's space chain (slow paths only). */
void mmb__space_sample_used(mmbMemSpace *space);
/* mmb_space_get_stats without the checks. */
void mmb__space_stats(const mmbMemSpace *space, mmbStats *out);
/* Calls fn on every discovered and requested space. */
void mmb__spaces_for_each(void (*fn)(const mmbMemSpace *space, void *arg), void *arg);
/* Folds a dying interface's counters into its spaces. */
void mmb__space_retire_interface(const mmbMemInterface *iface);

/* ---- trace (trace.c) ----------------------------------------------------- */
/* Recording costs one relaxed load while no trace runs. */
extern _Atomic bool mmb__tracing;
typedef enum mmb__trace_kind {
  MMB__TRACE_ALLOC, MMB__TRACE_FREE, MMB__TRACE_RESERVE, MMB__TRACE_UNRESERVE
} mmb__trace_kind;
void mmb__trace_record(mmb__trace_kind kind, mmbMemInterface *iface, const void *ptr, size_t size);
/* A duration event ("X"): name is a string literal, start from mmb__now_ns (core). */
void mmb__trace_duration(const char *name, uint64_t start_ns, size_t bytes,
                         const mmbMemSpace *from, const mmbMemSpace *to);
/* A tile cache's event (an instant, "cache_<event>"): what happened to
   one tile's copy in a space, and the cache's occupancy right after, which
   the dump draws as a counter track per space ("cache <space>"). tile is
   the tile's cache id (never reused). Flags: DONE, a miss or a prefetch
   fetched the data, an eviction wrote it home; READ and WRITE, the access
   of the acquire a hit or a miss was. */
typedef enum mmb__cache_event {
  MMB__CACHE_HIT, MMB__CACHE_MISS, MMB__CACHE_PREFETCH, MMB__CACHE_RELEASE,
  MMB__CACHE_EVICT, MMB__CACHE_WRITEBACK
} mmb__cache_event;
enum { MMB__CACHE_FLAG_DONE = 1, MMB__CACHE_FLAG_READ = 2, MMB__CACHE_FLAG_WRITE = 4 };
typedef struct mmb__cache_levels {
  size_t used, dirty, pinned, budget;
} mmb__cache_levels;
void mmb__trace_cache(mmb__cache_event event, const mmbMemSpace *space, uint64_t tile,
                      size_t bytes, unsigned flags, const mmb__cache_levels *after);
mmbError mmb__trace_init(void);      /* MMB_TRACE, MMB_TRACE_CAPACITY, MMB_TRACE_BACKTRACE */
void mmb__trace_finalize(void);      /* dumps to MMB_TRACE */

static inline bool mmb__trace_active(void) {
  return MMB__UNLIKELY(atomic_load_explicit(&mmb__tracing, memory_order_relaxed));
}
static inline void mmb__trace_reserve(mmbMemInterface *iface, size_t size, bool alloc) {
  if (mmb__trace_active())
    mmb__trace_record(alloc ? MMB__TRACE_RESERVE : MMB__TRACE_UNRESERVE, iface, NULL, size);
}

#endif /* MMB_ALLOC_OBSERVE_H */
