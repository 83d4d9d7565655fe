/* Internal: the caching pool (pool.c: segments, bins, split and coalesce;
   pool_cache.c: the quick bins, per-thread caches and the strategy ops). */
#ifndef MMB_POOL_INTERNAL_H
#define MMB_POOL_INTERNAL_H

#include "alloc.h"
#include "poison.h"

#define POOL_GRANULE ((size_t)512)
#define POOL_SMALL_MAX ((size_t)1 << 20)        /* requests up to 1 MiB: small pool */
#define POOL_SMALL_SEGMENT ((size_t)2 << 20)    /* small blocks are carved from 2 MiB */
#define POOL_LARGE_SEGMENT ((size_t)20 << 20)   /* larger ones from 20 MiB ...       */
#define POOL_HUGE_REQUEST ((size_t)10 << 20)    /* ... or, from 10 MiB, their own    */
#define POOL_HUGE_ROUND ((size_t)2 << 20)       /* segment rounded to 2 MiB          */
#define POOL_LARGE_SPLIT_MIN ((size_t)1 << 20)  /* a large block splits only past this */
#define POOL_PAD_MAX ((size_t)64 << 10)         /* alignments beyond: own segment    */

/* Two-level bins over granule counts (TLSF): exact below 32 granules, then
   32 bins per power of two, so a bin's sizes differ by at most 1/32. */
#define POOL_SL_BITS 5
#define POOL_SL_COUNT (1u << POOL_SL_BITS)
#define POOL_FL_COUNT 52

/* Quick classes: blocks up to 32 KiB, one class per granule. */
#define POOL_QUICK_MAX ((size_t)32 << 10)
#define POOL_QUICK_CLASSES (POOL_QUICK_MAX / POOL_GRANULE)

typedef struct pool_segment pool_segment;

typedef struct pool_block {
  char *ptr;
  size_t size;                       /* a multiple of the granule */
  pool_segment *seg;
  struct pool_block *prev, *next;    /* address neighbours in the segment */
  struct pool_block *fprev, *fnext;  /* the bin's list while free */
  bool free;
} pool_block;

struct pool_segment {
  pool_block *first;   /* the block at base: merges and splits keep this record */
  char *base;
  size_t size, align;
  bool large;        /* serves the large pool */
  bool dedicated;    /* one over-aligned block: given back when freed */
  bool in_free_list; /* wholly free, listed in pool.free_segments */
  pool_segment *prev, *next;          /* every segment */
  pool_segment *fprev, *fnext;        /* wholly free segments */
};

typedef struct pool_bins {
  uint64_t fl_map;
  uint32_t sl_map[POOL_FL_COUNT];
  pool_block *head[POOL_FL_COUNT][POOL_SL_COUNT];
} pool_bins;

/* A cache of freed quick-class blocks, each parked on its (FREE) handle:
   the interface's own when not thread-safe, else one per thread. */
typedef struct pool_cache {
  mmbAllocation *bin[POOL_QUICK_CLASSES];
  uint16_t count[POOL_QUICK_CLASSES];
  mmb__counters *c;
  mmb__handle_cache *handles;
} pool_cache;

typedef struct pool_tcache pool_tcache;

typedef struct pool {
  mmbMemInterface *iface;
  uint64_t id;                       /* never reused: thread caches find their pool by it */
  size_t block_align;                /* every block's pointer is aligned to this */
  pool_bins small, large;
  pool_segment *segments, *free_segments;
  pool_block *spare_blocks;          /* block records to reuse */
  void *record_chunks;               /* every chunk of block records, for finalize */
  pool_cache own;                    /* without thread caches */
  bool thread_caches;                /* thread-safe, and MMB_POOL_THREAD_CACHES is not 0 */
  pool_tcache *_Atomic tcaches;      /* with it: appended under the thread-cache lock */
  struct pool *next_live;            /* the live pools, for exiting threads */
} pool;

static inline size_t pool_round(size_t n) { return (n + POOL_GRANULE - 1) & ~(POOL_GRANULE - 1); }
static inline size_t pool_quick_class(size_t block_size) { return block_size / POOL_GRANULE - 1; }
static inline size_t pool_quick_cap(size_t cls) {
  size_t cap = ((size_t)64 << 10) / ((cls + 1) * POOL_GRANULE);
  return cap < 4 ? 4 : cap > 64 ? 64 : cap;
}

/* ---- pool.c: the shared pool; the caller holds the interface lock ------- */
mmbError mmb__pool_init(pool *p, mmbMemInterface *iface);
void mmb__pool_finalize(pool *p);
/* A block of at least `need` bytes (a granule multiple) aligned to `align`;
   may call the provider. NULL: out of memory. */
pool_block *mmb__pool_take(pool *p, size_t need, size_t align);
void mmb__pool_put(pool *p, pool_block *b);
/* Gives wholly free segments back while reserved bytes exceed keep. */
void mmb__pool_release_free(pool *p, size_t keep);

/* ---- pool_cache.c -------------------------------------------------------- */
/* Returns every block of a cache to the shared pool (interface lock held). */
void mmb__pool_cache_flush(pool *p, pool_cache *cache);

#endif /* MMB_POOL_INTERNAL_H */
