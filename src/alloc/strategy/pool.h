/* Internal: the caching pool (pool.c: segments, bins, split and coalesce;
   slab.c: slabs of small blocks; pool_cache.c: the quick bins, per-thread
   caches and the strategy ops). */
#ifndef MMB_POOL_INTERNAL_H
#define MMB_POOL_INTERNAL_H

#include "alloc/strategy/strategy.h"
#include "alloc/strategy/poison.h"

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

/* Small blocks (up to 2 KiB, alignment up to 64) come from slabs: 64 KiB
   runs of one size class carved from the pool, with a free list of their
   own (slab.c). The classes are 64 B apart up to 512 B, then four per power
   of two (no more than 25% apart): 64, 128, ..., 512, 640, 768, 896, 1024,
   1280, ..., 2048. Every block is 64-byte aligned. */
#define SLAB_MAX ((size_t)2048)
#define SLAB_ALIGN ((size_t)64)
#define SLAB_CLASSES 16
#define SLAB_BYTES ((size_t)64 << 10)
/* The quick bins: the slab classes first, then the granule classes. */
#define POOL_QUICK_BINS (SLAB_CLASSES + POOL_QUICK_CLASSES)

/* The size of the class that serves n (1..SLAB_MAX) bytes. */
static inline size_t slab_round(size_t n) {
  if (n <= 512) return (n + 63) & ~(size_t)63;
  unsigned l = 63u - (unsigned)__builtin_clzll(n - 1);   /* 2^l < n <= 2^(l+1) */
  size_t step = (size_t)1 << (l - 2);
  return (n + step - 1) & ~(step - 1);
}
/* The class index of a class size. */
static inline size_t slab_class(size_t size) {
  if (size <= 512) return size / 64 - 1;
  unsigned l = 63u - (unsigned)__builtin_clzll(size);
  return 7 + (l - 9) * 4 + ((size >> (l - 2)) & 3);
}
static const uint16_t slab_class_sizes[SLAB_CLASSES] = {
    64, 128, 192, 256, 320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048};
static inline size_t slab_class_size(size_t cls) { return slab_class_sizes[cls]; }

/* A slab: its blocks, and the indices of the free ones (a stack). The
   record lives in host memory, never in the slab: the slab may be device
   memory.

   A slab of malloc-style blocks (mmb_ptr_allocate, ptr.c) is 64 KiB aligned
   and listed in the slab map, so a bare pointer finds it. Its record holds,
   after the free stack, an entry per 64 B of the slab: at the start of each
   live block, what it was asked for; 0 everywhere else (mmb_ptr_deallocate's
   check, one exchange: no division by the class size, and a pointer inside
   a block reads 0). The record is never freed while the pool lives, so a
   stale map entry read by a racing misuse still points at a record. */
typedef struct pool_slab {
  struct pool_block *block;           /* the pool block it is carved from */
  char *base;
  mmbMemInterface *iface;             /* malloc-style: its interface; else NULL */
  uint32_t cls, n_blocks, n_free;
  struct pool_slab *prev, *next;      /* its class's slabs with free blocks, or none */
  struct pool_slab *all_prev, *all_next;   /* every slab of the pool */
  bool listed;                        /* on that list */
  uint8_t home;                       /* malloc-style: the list it is on (SLAB_HOMES) */
  uint16_t free[];                    /* n_free indices of free blocks */
} pool_slab;

#define SLAB_MAX_BLOCKS (SLAB_BYTES / SLAB_ALIGN)
/* Malloc-style slabs are kept on SLAB_HOMES lists per class, and each cache
   refills from its home's first (thread caches take homes in turn): two
   threads' blocks then seldom share a slab, so the asked entries one
   thread's frees exchange are not on lines the other's frees write. */
#define SLAB_HOMES 4
/* Slab map: the malloc-style slab of a 64 KiB page of the address space,
   two levels over 48-bit addresses (as mimalloc's segment map and
   jemalloc's rtree): set and cleared under a global lock, read with none.
   An entry is the slab's record with its class in the low 4 bits (records
   are 16-byte aligned), so a free finds its bin with no further load. */
#define SLAB_MAP_BITS 16
#define SLAB_ENTRY_CLASS ((uintptr_t)15)
_Static_assert(SLAB_CLASSES <= 16, "a class fits an entry's low bits");
extern _Atomic uintptr_t *_Atomic mmb__slab_map[(size_t)1 << SLAB_MAP_BITS]
    __attribute__((visibility("hidden")));
static MMB__ALWAYS_INLINE uintptr_t mmb__slab_entry(const void *ptr) {
  uintptr_t page = (uintptr_t)ptr >> 16;
  if (MMB__UNLIKELY(page >> (2 * SLAB_MAP_BITS))) return 0;
  _Atomic uintptr_t *leaf =
      atomic_load_explicit(&mmb__slab_map[page >> SLAB_MAP_BITS], memory_order_acquire);
  if (MMB__UNLIKELY(!leaf)) return 0;
  return atomic_load_explicit(&leaf[page & (((uintptr_t)1 << SLAB_MAP_BITS) - 1)],
                              memory_order_acquire);
}
static inline pool_slab *slab_of_entry(uintptr_t e) {
  return (pool_slab *)(e & ~SLAB_ENTRY_CLASS);
}
static inline pool_slab *mmb__slab_of(const void *ptr) {
  return slab_of_entry(mmb__slab_entry(ptr));
}

/* A malloc-style block parked in a cache: its address and its asked entry. */
typedef struct pool_ptr {
  char *ptr;
  _Atomic uint16_t *asked;
} pool_ptr;
/* A slab class's parked malloc-style blocks: a stack from e up to top
   (allocated at the first refill, slab_cap_max entries), holding no more
   than up to end; its cap (end - e) adapts as a handle bin's does. All
   NULL until then. */
typedef struct pool_ptr_bin {
  pool_ptr *top, *end, *e;
} pool_ptr_bin;
static inline size_t ptr_bin_count(const pool_ptr_bin *b) { return (size_t)(b->top - b->e); }
static inline size_t ptr_bin_cap(const pool_ptr_bin *b) { return (size_t)(b->end - b->e); }

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
   the interface's own when not thread-safe, else one per thread. A slab
   class's cap adapts: every miss doubles it (up to slab_cap_max), so a code
   that holds many blocks of a class refills and flushes in larger batches. */
typedef struct pool_cache {
  mmbAllocation *bin[POOL_QUICK_BINS];
  uint16_t count[POOL_QUICK_BINS];
  uint16_t cap[POOL_QUICK_BINS];
  mmb__counters *c;
  mmb__handle_cache *handles;
  pool_ptr_bin ptrs[SLAB_CLASSES];    /* malloc-style blocks (ptr.c) */
  uint8_t home;                       /* the malloc-style slabs it refills from first */
} pool_cache;
#define SLAB_CAP_MIN 16
/* the most blocks a slab class's bin may hold: 1024, and 256 KiB */
static inline uint16_t slab_cap_max(size_t cls) {
  size_t n = ((size_t)256 << 10) / slab_class_size(cls);
  return (uint16_t)(n < 1024 ? n : 1024);
}

typedef struct pool_tcache pool_tcache;

/* A list of parked handles of one quick bin, linked through next. */
typedef struct pool_batch {
  mmbAllocation *head, *tail;
  uint32_t n;
} pool_batch;
#define POOL_DEPOT_BATCHES 8

typedef struct pool {
  mmbMemInterface *iface;
  uint64_t id;                       /* never reused: thread caches find their pool by it */
  size_t block_align;                /* every block's pointer is aligned to this */
  pool_bins small, large;
  /* slabs with free blocks, by class: [0] of handle blocks, [1 + h] of
     malloc-style blocks of home h */
  pool_slab *partial[1 + SLAB_HOMES][SLAB_CLASSES];
  pool_slab *spare[2][SLAB_CLASSES];    /* one wholly free slab kept per class and kind */
  unsigned next_home;                   /* the next thread cache's (thread-cache lock) */
  pool_slab *slabs;                  /* every slab */
  pool_slab *ptr_records;            /* records of malloc-style slabs to reuse */
  /* With thread caches: blocks one thread's bins gave up, still parked on
     their handles, for another thread's refill (a transfer cache: a block
     freed by the thread that did not allocate it travels back in a batch,
     with no trip through its slab and no handle given up and retaken). A
     batch goes in and comes out whole, a list spliced in O(1) under the
     interface lock: its handles, last written by another thread, are never
     walked while the lock is held. */
  pool_batch depot[POOL_QUICK_BINS][POOL_DEPOT_BATCHES];
  uint8_t depot_batches[POOL_QUICK_BINS];
  uint32_t depot_count[POOL_QUICK_BINS];   /* blocks in the bin's batches */
  pool_segment *segments, *free_segments;
  pool_block *spare_blocks;          /* block records to reuse */
  void *record_chunks;               /* every chunk of block records, for finalize */
  pool_cache own;                    /* without thread caches */
  bool thread_caches;                /* thread-safe: a cache per thread */
  pool_tcache *_Atomic tcaches;      /* with it: appended under the thread-cache lock */
  struct pool *next_live;            /* the live pools, for exiting threads */
} pool;

static inline size_t pool_round(size_t n) { return (n + POOL_GRANULE - 1) & ~(POOL_GRANULE - 1); }
static inline size_t pool_quick_class(size_t block_size) { return block_size / POOL_GRANULE - 1; }
/* How many freed blocks a granule class's quick bin keeps: 64 KiB worth,
   from 4 to 64 (a slab class's cap is in its cache: it adapts). */
#define POOL_CAP(c) ((65536 / (((c) + 1) * 512)) < 4 ? 4 : (65536 / (((c) + 1) * 512)) > 64 ? 64 : (65536 / (((c) + 1) * 512)))
/* A cache's caps as they start. */
void mmb__pool_cache_init(pool_cache *cache);

static inline bool slab_fits(size_t n, size_t align) { return n <= SLAB_MAX && align <= SLAB_ALIGN; }
/* slab_class(slab_round(n)) for n in (16 i, 16 i + 16] (test_pool checks it). */
static const uint8_t slab_bins[128] = {
    0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7,
    8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13,
    14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15};
/* The slab class of n (1..SLAB_MAX) bytes. */
static inline size_t slab_bin(size_t n) { return slab_bins[(n - 1) >> 4]; }
/* The quick bin of a request, and of a block parked on its handle (which
   says it: mmbAllocation.bin). */
static inline size_t quick_bin_of_request(size_t n, size_t align) {
  return slab_fits(n, align) ? slab_bin(n) : SLAB_CLASSES + pool_quick_class(pool_round(n));
}
static inline size_t quick_bin_of(const mmbAllocation *a) { return a->bin; }

/* ---- thread caches (pool_cache.c) --------------------------------------- */
struct pool_tcache {
  pool_cache cache;
  mmb__counters c;
  mmb__handle_cache handles;
  pool_tcache *_Atomic next;
  _Atomic int owned;   /* 0: free to adopt; 1: a thread's; 2: being flushed by trim */
};

/* Each thread finds its caches through a few slots keyed by pool id
   (initial-exec: a plain %fs-relative load, no __tls_get_addr). */
#define POOL_TL_SLOTS 4
typedef struct mmb__tl_slot {
  uint64_t pool_id;
  pool_tcache *tc;
} mmb__tl_slot;
extern _Thread_local mmb__tl_slot mmb__tl_slots[POOL_TL_SLOTS]
    __attribute__((visibility("hidden"), tls_model("initial-exec")));
/* The calling thread's cache for p, adopting one on first use; NULL only
   when there is no memory for one (the caller then works under the lock). */
pool_cache *mmb__pool_tcache_find(pool *p);

/* ---- this thread's bins --------------------------------------------------
   The one answer to "which quick bins may the calling thread use on iface
   with no lock and no call": the interface's own when it is not
   thread-safe (one thread owns it), else this thread's cache of the pool
   when the thread's first slot holds it; NULL otherwise. On a thread-safe
   interface another thread may free the same handle at the same time, so
   a claim there is atomic (mmb__iface_ts). */
static MMB__ALWAYS_INLINE pool_cache *mmb__pool_bins(const mmbMemInterface *iface) {
  if (MMB__LIKELY(iface->quick != NULL)) return iface->quick;
  if (iface->quick_threads &&
      MMB__LIKELY(mmb__tl_slots[0].pool_id == ((const pool *)iface->strategy_state)->id))
    return &mmb__tl_slots[0].tc->cache;
  return NULL;
}

/* The same on the slow paths, which may call: this thread's cache is
   found in its other slots, or adopted. NULL only when a thread-safe pool
   has no memory for one (the caller then works under the lock). */
static inline pool_cache *pool_cache_of(pool *p) {
  pool_cache *mine = mmb__pool_bins(p->iface);
  if (MMB__LIKELY(mine != NULL)) return mine;
  return p->thread_caches ? mmb__pool_tcache_find(p) : &p->own;
}

/* The calling thread's note: the fast paths' guard, one test. It names the
   last interface one of the thread's calls took the general path on
   (mmb_allocate, mmb_free, mmb_ptr_allocate, mmb_ptr_deallocate), with the thread's
   bins there, and folds in what the fast paths need of the state: the
   interface is a live pool interface, no trace runs, and it has no
   deferred frees to sweep. It is written only while that holds, and stays
   valid while its epoch is mmb__note_epoch, which moves whenever that may
   stop holding: an interface's pool goes, a thread gives up a thread
   cache, a trace starts, an interface's deferred list stops being empty
   (model.h). So a fresh note never names bins that are gone or another
   thread's, nor an interface that is gone, and the common call reads
   neither the interface's state nor the trace's. */
typedef struct mmb__note {
  const mmbMemInterface *iface;
  pool_cache *cache;
  uint64_t epoch;
} mmb__note;
extern _Thread_local mmb__note mmb__tl_note
    __attribute__((visibility("hidden"), tls_model("initial-exec")));

/* The note is iface's and fresh: its bins are mmb__tl_note.cache. iface
   is not read. */
static MMB__ALWAYS_INLINE bool mmb__noted(const mmbMemInterface *iface) {
  return iface == mmb__tl_note.iface &&
         mmb__tl_note.epoch == atomic_load_explicit(&mmb__note_epoch, memory_order_acquire);
}

/* Notes iface (a live pool interface, checked by the caller) and the
   thread's bins there, if it has them, no trace runs and no frees wait on
   its deferred list. The epoch is read first: a deferral or a trace that
   the checks miss moves it after, and the note is stale at once. */
static inline void mmb__note_take(mmbMemInterface *iface) {
  uint64_t epoch = atomic_load_explicit(&mmb__note_epoch, memory_order_acquire);
  if (mmb__tl_note.iface == iface && mmb__tl_note.epoch == epoch) return;   /* it has it */
  pool_cache *mine = mmb__pool_bins(iface);
  if (mine && !mmb__trace_active() &&
      !atomic_load_explicit(&iface->n_deferred, memory_order_relaxed))
    mmb__tl_note = (mmb__note){iface, mine, epoch};
}

static inline bool pool_under_threshold(const mmbMemInterface *iface) {
  return !iface->release_threshold || MMB__GET(iface->reserved) <= iface->release_threshold;
}

static inline bool pool_quick(const pool *p, size_t n, size_t align) {
  return n <= POOL_QUICK_MAX && align <= p->block_align;
}

/* ---- the fast paths: a pop or a push on a quick bin ---------------------- */
/* A block of n bytes (n <= POOL_QUICK_MAX, align <= the pool's) from the
   top of its quick bin, counted; NULL when the bin is empty. */
static MMB__ALWAYS_INLINE mmbAllocation *mmb__pool_pop(mmbMemInterface *iface, pool_cache *cache,
                                                      size_t n, size_t align) {
  size_t cls = quick_bin_of_request(n, align);
  mmbAllocation *a = cache->bin[cls];
  if (MMB__LIKELY(a != NULL)) {
    cache->bin[cls] = a->next;
    /* the bin is a list through its handles: the next pop reads and writes
       this one, which a run of pops (a region-like job) would wait for */
    __builtin_prefetch(a->next, 1);
    cache->count[cls]--;
    a->size = n;
    a->align_log2 = mmb__log2(align);
    mmb__unpoison(mmb__iface_host_accessible(iface), a->ptr, n);
    mmb__count_alloc(cache->c, n);
  }
  return a;
}

/* Both return false to send the caller to the slow path. */
static MMB__ALWAYS_INLINE bool mmb__pool_alloc_quick(mmbMemInterface *iface, size_t n, size_t align,
                                         mmbAllocation **out) {
  /* every pool block is aligned to at least SLAB_ALIGN (block_align is 256
     or more): a constant alignment up to it needs no look at the pool */
  if (MMB__UNLIKELY(n > POOL_QUICK_MAX ||
                    (align > SLAB_ALIGN && align > ((pool *)iface->strategy_state)->block_align)))
    return false;
  pool_cache *cache = pool_cache_of(iface->strategy_state);
  mmbAllocation *a = cache ? mmb__pool_pop(iface, cache, n, align) : NULL;
  *out = a;
  return a != NULL;
}

/* A freed quick block parked on its handle, on top of its bin (counted). */
static MMB__ALWAYS_INLINE void mmb__pool_park(mmbMemInterface *iface, pool_cache *cache,
                                              mmbAllocation *a) {
  size_t cls = quick_bin_of(a);
  mmb__count_free(cache->c, a->size);
  mmb__poison(mmb__iface_host_accessible(iface), a->ptr, a->reserved);
  mmb__handle_set(a, MMB__HANDLE_FREE);
  a->next = cache->bin[cls];
  cache->bin[cls] = a;
  cache->count[cls]++;
}

/* a->flags says MMB__QUICK (and MMB__SLAB for a slab's): a->reserved is the
   block's size, a->ptr its start. */
static MMB__ALWAYS_INLINE bool mmb__pool_free_quick(mmbMemInterface *iface, mmbAllocation *a) {
  if (MMB__UNLIKELY(!pool_under_threshold(iface))) return false;
  pool_cache *cache = pool_cache_of(iface->strategy_state);
  size_t cls = quick_bin_of(a);
  bool hit = cache && cache->count[cls] < cache->cap[cls];
  if (MMB__LIKELY(hit)) mmb__pool_park(iface, cache, a);
  return hit;
}

/* ---- pool.c: the shared pool; the caller holds the interface lock ------- */
mmbError mmb__pool_init(pool *p, mmbMemInterface *iface);
void mmb__pool_finalize(pool *p);
/* A block of at least `need` bytes (a granule multiple) aligned to `align`;
   may call the provider. NULL: out of memory. */
pool_block *mmb__pool_take(pool *p, size_t need, size_t align);
/* A slab's 64 KiB: from what the pool holds, else a full small segment
   (never a segment cut to a tight limit: small requests then take granule
   blocks, as they would without slabs). */
pool_block *mmb__pool_take_slab(pool *p);
/* The same from the free blocks the pool already holds: never the provider. */
pool_block *mmb__pool_take_held(pool *p, size_t need);
/* A slab's 64 KiB at a multiple of 64 KiB, from what the pool holds (the
   bytes before it stay free), or with `provider` also from a new segment. */
pool_block *mmb__pool_take_slab_aligned(pool *p, bool provider);
void mmb__pool_put(pool *p, pool_block *b);

/* ---- slab.c: the slabs; the caller holds the interface lock ------------- */
/* A free block of slab class cls, from a slab with free blocks, the spare,
   or a new slab (from what the pool holds; with `provider`, also from the
   provider); from a malloc-style slab with `ptrs`, of `home`'s slabs first
   (another home's slab with free blocks becomes home's before a new one is
   made). NULL: none could be had. *out_slab: its slab. */
char *mmb__slab_take(pool *p, size_t cls, bool provider, bool ptrs, unsigned home,
                     pool_slab **out_slab);
/* Gives a block back to its slab; a slab wholly free becomes its class's
   spare, or goes back to the pool. */
void mmb__slab_put(pool *p, pool_slab *s, char *ptr);
/* Every spare slab back to the pool (trim, the release threshold). */
void mmb__slab_release_spares(pool *p);
void mmb__slab_finalize(pool *p);
/* Gives wholly free segments back while reserved bytes exceed keep. */
void mmb__pool_release_free(pool *p, size_t keep);

/* The handle's block back where it came from: its slab, or the pool. */
static inline void pool_give_block(pool *p, mmbAllocation *a) {
  if (a->flags & MMB__SLAB) mmb__slab_put(p, a->block, a->ptr);
  else mmb__pool_put(p, a->block);
}

/* The asked entry of the 64 B at ptr in a malloc-style slab s (ptr in its
   64 KiB, 64-byte aligned: the slab starts at ptr's 64 KiB boundary). */
static MMB__ALWAYS_INLINE _Atomic uint16_t *slab_asked(pool_slab *s, const char *ptr) {
  return (_Atomic uint16_t *)(void *)(s->free + SLAB_MAX_BLOCKS) +
         (((uintptr_t)ptr & (SLAB_BYTES - 1)) >> 6);
}

/* ---- pool_cache.c -------------------------------------------------------- */
/* Malloc-style blocks of class cls onto the cache's bin, to half its
   (doubled) cap; the first may come from the provider. false: none. */
bool mmb__pool_ptr_refill(pool *p, pool_cache *cache, size_t cls);
/* A malloc-style block back (ptr.c's mmb_ptr_deallocate, and an MMB__BARE
   handle's block), its asked entry already claimed (it was `was`): onto
   the calling thread's bin, or to its slab. Takes the interface lock. */
void mmb__pool_ptr_free(mmbMemInterface *iface, pool_slab *s, char *ptr, _Atomic uint16_t *asked,
                        uint16_t was);
/* The pool's sampled high watermark, raised (thread caches). */
void mmb__pool_sample_high(pool *p);

#endif /* MMB_POOL_INTERNAL_H */
