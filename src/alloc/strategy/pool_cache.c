/* The pool strategy's front: quick bins of freed blocks up to 32 KiB, each
   parked on its handle, so that the common allocate/free pair is a list pop
   and push with no lock and no provider trip. Blocks up to 2 KiB come from
   slabs (slab.c), in batches: a miss brings half a bin's cap at once, an
   overflow gives half of it back, and each miss doubles the class's cap, so
   a code that keeps thousands of small blocks live pays the shared part
   once per batch, not once per block. A thread cache's overflow doubles the
   cap too, so a thread that frees what another allocates hands its blocks
   back in batches of hundreds; a refill that finds such a batch in the
   depot takes it and goes no further.

   Without MMB_INTERFACE_THREAD_SAFE the interface has one set of quick bins.
   With it, every thread gets its own (a thread cache, found through a few
   thread-local slots keyed by the pool's id) and its own counters, merged
   when stats are read; only misses and overflows take the interface lock.
   Measured in bench/alloc: a lock around one shared set of bins made two
   threads about an order of magnitude slower than mimalloc (31x mimalloc's
   time with a window of 64 each, the last time it was measured), thread
   caches bring them within 2x of it. The shared set behind the lock is
   what a thread-safe pool falls back to when there is no memory for a
   thread's cache.

   A thread cache outlives its thread: at thread exit it is disowned, and the
   next thread that needs one adopts it, blocks and counters included. Lock
   order: thread-cache lock, then interface lock. */
#include "alloc/strategy/pool.h"

_Thread_local mmb__tl_slot mmb__tl_slots[POOL_TL_SLOTS];
_Thread_local mmb__note mmb__tl_note __attribute__((tls_model("initial-exec")));
static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;   /* live_pools, adoption */
static pool *live_pools;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;

static bool pool_live(uint64_t id) {   /* tc_lock held */
  for (pool *p = live_pools; p; p = p->next_live)
    if (p->id == id) return true;
  return false;
}

static void disown(mmb__tl_slot *slot) {    /* tc_lock held */
  if (slot->pool_id) mmb__notes_stale();   /* before another thread may adopt it */
  if (slot->pool_id && pool_live(slot->pool_id)) atomic_store(&slot->tc->owned, 0);
  *slot = (mmb__tl_slot){0};
}

static void thread_exit(void *unused) {
  (void)unused;
  pthread_mutex_lock(&tc_lock);
  for (int i = 0; i < POOL_TL_SLOTS; i++) disown(&mmb__tl_slots[i]);
  pthread_mutex_unlock(&tc_lock);
}

static void make_exit_key(void) { pthread_key_create(&exit_key, thread_exit); }

static pool_tcache *adopt(pool *p) {   /* tc_lock held */
  for (pool_tcache *tc = atomic_load(&p->tcaches); tc; tc = atomic_load(&tc->next)) {
    int idle = 0;
    if (atomic_compare_exchange_strong(&tc->owned, &idle, 1)) return tc;
  }
  pool_tcache *tc = mmb__calloc_lines(sizeof *tc);   /* no line shared with another thread's */
  if (!tc) return NULL;
  mmb__pool_cache_init(&tc->cache);
  tc->cache.home = (uint8_t)(p->next_home++ % SLAB_HOMES);
  tc->cache.c = &tc->c;
  tc->cache.handles = &tc->handles;
  atomic_init(&tc->owned, 1);
  atomic_init(&tc->next, atomic_load(&p->tcaches));
  atomic_store_explicit(&p->tcaches, tc, memory_order_release);
  return tc;
}

/* The calling thread's cache for p, adopting one on first use. NULL only
   when no memory is left for one: the caller then works under the lock. */
pool_cache *mmb__pool_tcache_find(pool *p) {
  for (int i = 1; i < POOL_TL_SLOTS; i++) {
    if (mmb__tl_slots[i].pool_id != p->id) continue;
    mmb__tl_slot hit = mmb__tl_slots[i];
    mmb__tl_slots[i] = mmb__tl_slots[0];
    mmb__tl_slots[0] = hit;
    return &hit.tc->cache;
  }
  pthread_once(&key_once, make_exit_key);
  pthread_mutex_lock(&tc_lock);
  pool_tcache *tc = adopt(p);
  if (tc) {
    disown(&mmb__tl_slots[POOL_TL_SLOTS - 1]);
    for (int i = POOL_TL_SLOTS - 1; i > 0; i--) mmb__tl_slots[i] = mmb__tl_slots[i - 1];
    mmb__tl_slots[0] = (mmb__tl_slot){p->id, tc};
  }
  pthread_mutex_unlock(&tc_lock);
  if (!tc) return NULL;
  pthread_setspecific(exit_key, mmb__tl_slots);
  return &tc->cache;
}

/* ---- caps and flushing ---------------------------------------------------- */

/* The most a bin's depot holds: two full bins. */
static uint32_t depot_max(const pool_cache *cache, size_t bin) {
  return bin < SLAB_CLASSES ? 2u * slab_cap_max(bin) : 2u * cache->cap[bin];
}

/* The top n handles of a bin (n <= its count), cut off as a batch. Only the
   cache's own thread walks them: no lock is needed. */
static pool_batch cut_batch(pool_cache *cache, size_t bin, uint32_t n) {
  pool_batch b = {cache->bin[bin], cache->bin[bin], n};
  for (uint32_t i = 1; i < n; i++) b.tail = b.tail->next;
  cache->bin[bin] = b.tail->next;
  b.tail->next = NULL;
  cache->count[bin] = (uint16_t)(cache->count[bin] - n);
  return b;
}

/* Every block of a batch back to its slab or the pool, its handle to
   `handles` (interface lock held). */
static void give_batch(pool *p, mmb__handle_cache *handles, pool_batch b) {
  for (mmbAllocation *a = b.head, *next; a; a = next) {
    next = a->next;
    pool_give_block(p, a);
    mmb__handle_give(handles, a);
  }
}

/* Into the bin's depot if it has room (interface lock held); false: the
   caller gives the batch back instead. */
static bool depot_put(pool *p, const pool_cache *cache, size_t bin, pool_batch b) {
  /* a granule class's blocks may coalesce into larger ones: without thread
     caches they go back to the pool instead */
  if ((!p->thread_caches && bin >= SLAB_CLASSES) || p->depot_batches[bin] == POOL_DEPOT_BATCHES ||
      p->depot_count[bin] + b.n > depot_max(cache, bin))
    return false;
  p->depot[bin][p->depot_batches[bin]++] = b;
  p->depot_count[bin] += b.n;
  return true;
}

/* A batch from the bin's depot onto the cache's bin (interface lock held);
   false when the depot has none. */
static bool depot_take(pool *p, pool_cache *cache, size_t bin) {
  if (!p->depot_batches[bin]) return false;
  pool_batch b = p->depot[bin][--p->depot_batches[bin]];
  p->depot_count[bin] -= b.n;
  b.tail->next = cache->bin[bin];
  cache->bin[bin] = b.head;
  cache->count[bin] = (uint16_t)(cache->count[bin] + b.n);
  return true;
}

/* A bin's blocks beyond `keep` go to the depot (with thread caches, while it
   has room), else back to their slabs or the pool (interface lock held). */
static void flush_class(pool *p, pool_cache *cache, size_t cls, size_t keep) {
  if (cache->count[cls] <= keep) return;
  pool_batch b = cut_batch(cache, cls, (uint32_t)(cache->count[cls] - keep));
  if (!depot_put(p, cache, cls, b)) give_batch(p, cache->handles, b);
}

/* Every depot's blocks back to their slabs or the pool (trim, a refusal,
   the release threshold, finalize); their handles to the interface's cache. */
static void depot_drain(pool *p) {
  for (size_t bin = 0; bin < POOL_QUICK_BINS; bin++) {
    while (p->depot_batches[bin]) give_batch(p, &p->iface->handles, p->depot[bin][--p->depot_batches[bin]]);
    p->depot_count[bin] = 0;
  }
}

/* ---- malloc-style blocks (mmb_ptr_allocate) --------------------------------- */
/* A bin of bare pointers per slab class, beside the handle bins: a miss
   takes half the (doubled) cap from the slabs at once, an overflow gives
   half back, both under the interface lock. */

/* A malloc-style bin's blocks beyond keep back to their slabs. */
static void ptr_flush(pool *p, pool_cache *cache, size_t cls, size_t keep) {
  pool_ptr_bin *bin = &cache->ptrs[cls];
  while (ptr_bin_count(bin) > keep) {
    char *ptr = (--bin->top)->ptr;
    mmb__slab_put(p, mmb__slab_of(ptr), ptr);
  }
}

/* The bin's stack allocated (cap SLAB_CAP_MIN the first time); false: no memory. */
static bool ptr_bin_ready(pool_cache *cache, size_t cls) {
  pool_ptr_bin *bin = &cache->ptrs[cls];
  if (bin->e) return true;
  if (!(bin->e = mmb__malloc(slab_cap_max(cls) * sizeof *bin->e))) return false;
  bin->top = bin->e;
  bin->end = bin->e + SLAB_CAP_MIN;
  return true;
}

bool mmb__pool_ptr_refill(pool *p, pool_cache *cache, size_t cls) {
  pool_ptr_bin *bin = &cache->ptrs[cls];
  if (!ptr_bin_ready(cache, cls)) return false;
  bin->end = bin->e + mmb__min(2 * ptr_bin_cap(bin), slab_cap_max(cls));
  size_t want = ptr_bin_cap(bin) / 2;
  while (ptr_bin_count(bin) < want) {
    pool_slab *s;
    char *ptr = mmb__slab_take(p, cls, bin->top == bin->e, true, cache->home, &s);
    if (!ptr) break;
    *bin->top++ = (pool_ptr){ptr, slab_asked(s, ptr)};
  }
  return bin->top != bin->e;
}

/* Every block of a cache back to the shared pool, and the caps start over
   (interface lock held). */
static void pool_cache_flush(pool *p, pool_cache *cache) {
  for (size_t cls = 0; cls < POOL_QUICK_BINS; cls++) flush_class(p, cache, cls, 0);
  for (size_t cls = 0; cls < SLAB_CLASSES; cls++) ptr_flush(p, cache, cls, 0);
  mmb__pool_cache_init(cache);
}

/* Returns parked handles to the registry; their blocks go with the segments. */
static void cache_drop(pool_cache *cache) {
  for (size_t cls = 0; cls < SLAB_CLASSES; cls++) {
    mmb__free(cache->ptrs[cls].e);
    cache->ptrs[cls] = (pool_ptr_bin){0};
  }
  for (size_t cls = 0; cls < POOL_QUICK_BINS; cls++) {
    while (cache->bin[cls]) {
      mmbAllocation *a = cache->bin[cls];
      cache->bin[cls] = a->next;
      mmb__handle_give(cache->handles, a);
    }
    cache->count[cls] = 0;
  }
}

/* ---- allocate ------------------------------------------------------------ */

/* One more block for a quick bin, parked on a handle of the cache's, from
   what the pool already holds: a refill never takes memory from the
   provider, so on a size-limited space it cannot refuse another thread. */
static bool park_one(pool *p, pool_cache *cache, size_t bin) {
  mmbAllocation *a = mmb__handle_take(cache->handles);
  if (!a) return false;
  if (bin < SLAB_CLASSES) {
    pool_slab *s;
    char *ptr = mmb__slab_take(p, bin, false, false, 0, &s);
    if (!ptr) goto none;
    mmb__handle_fill(a, p->iface, 0, 0, slab_class_size(bin), s);
    a->ptr = ptr;
    a->flags = MMB__QUICK | MMB__SLAB;
    a->bin = (uint8_t)bin;
  } else {
    pool_block *b = mmb__pool_take_held(p, (bin - SLAB_CLASSES + 1) * POOL_GRANULE);
    if (!b) goto none;
    mmb__handle_fill(a, p->iface, 0, 0, b->size, b);
    a->ptr = b->ptr;
    a->flags = MMB__QUICK;
    a->bin = (uint8_t)bin;
  }
  a->next = cache->bin[bin];
  cache->bin[bin] = a;
  cache->count[bin]++;
  return true;
none:
  mmb__handle_give(cache->handles, a);
  return false;
}

/* A miss brings more blocks of its class: half the (doubled, up to
   slab_cap_max) cap of a slab class, a quarter of a granule class's cap
   with thread caches; batches other threads gave up first. */
static void refill(pool *p, pool_cache *cache, size_t bin) {
  size_t want;
  if (bin < SLAB_CLASSES) {
    cache->cap[bin] = (uint16_t)mmb__min(2u * cache->cap[bin], slab_cap_max(bin));
    want = cache->cap[bin] / 2;
  } else if (p->thread_caches) {
    want = cache->cap[bin] / 4;
  } else {
    return;
  }
  bool took = false;   /* a batch from the depot is refill enough */
  while (cache->count[bin] < want &&
         cache->count[bin] + (p->depot_batches[bin] ? p->depot[bin][p->depot_batches[bin] - 1].n : 0) <=
             cache->cap[bin] &&
         depot_take(p, cache, bin))
    took = true;
  while (!took && cache->count[bin] < want && park_one(p, cache, bin)) {
  }
}

/* Before refusing memory: the blocks parked in the calling thread's cache
   and in those of exited threads go back to the pool, and so do the spare
   slabs (a live thread's cache is its own; it gives back beyond its caps,
   and all at mmb_interface_trim). Interface lock held. */
static void flush_parked(pool *p, pool_cache *mine) {
  if (mine) pool_cache_flush(p, mine);
  for (pool_tcache *tc = atomic_load(&p->tcaches); tc; tc = atomic_load(&tc->next)) {
    int idle = 0;
    if (!atomic_compare_exchange_strong(&tc->owned, &idle, 2)) continue;
    pool_cache_flush(p, &tc->cache);
    atomic_store(&tc->owned, 0);
  }
  depot_drain(p);
  mmb__slab_release_spares(p);
}

void mmb__pool_sample_high(pool *p) {
  mmb__merged m = {0};
  mmb__merge_interface(&m, p->iface);
  mmb__raise_high(&p->iface->used_high_sampled, m.used);
}

/* A block for the handle: from a slab when the request fits one (and a slab
   can be had), else from the pool. */
static bool take_block(pool *p, mmbAllocation *a, size_t n, size_t align) {
  if (slab_fits(n, align)) {
    size_t cls = slab_bin(n);
    pool_slab *s;
    char *ptr = mmb__slab_take(p, cls, true, false, 0, &s);
    if (ptr) {
      mmb__handle_fill(a, p->iface, n, align, slab_class_size(cls), s);
      a->ptr = ptr;
      a->flags = MMB__QUICK | MMB__SLAB;
      a->bin = (uint8_t)cls;
      return true;
    }
  }
  size_t pad = align > p->block_align && align <= POOL_PAD_MAX ? align - p->block_align : 0;
  pool_block *b = mmb__pool_take(p, pool_round(n + pad), align);
  if (!b) return false;
  mmb__handle_fill(a, p->iface, n, align, b->size, b);
  a->ptr = (void *)(((uintptr_t)b->ptr + align - 1) & ~(uintptr_t)(align - 1));
  if (b->size <= POOL_QUICK_MAX && a->ptr == (void *)b->ptr && !b->seg->dedicated) {
    a->flags = MMB__QUICK;
    a->bin = (uint8_t)(SLAB_CLASSES + pool_quick_class(b->size));
  }
  return true;
}

static mmbError allocate_slow(pool *p, size_t n, size_t align, unsigned flags,
                              mmbAllocation **out) {
  mmbMemInterface *iface = p->iface;
  pool_cache *cache = pool_cache_of(p);
  mmb__counters *c = cache ? cache->c : &iface->c;
  mmb__handle_cache *handles = cache ? cache->handles : &iface->handles;

  if (cache && !flags && pool_quick(p, n, align)) {
    /* an empty bin: a batch given up before, if the depot has one */
    mmb__iface_lock(iface);
    bool got = depot_take(p, cache, quick_bin_of_request(n, align));
    mmb__iface_unlock(iface);
    if (got && mmb__pool_alloc_quick(iface, n, align, out)) return MMB_OK;
  }
  mmb__iface_lock(iface);
  mmbAllocation *a = mmb__handle_take(handles);
  bool got = a && take_block(p, a, n, align);
  if (!got && a) {   /* blocks parked in quick bins: back, and once more */
    mmb__iface_unlock(iface);
    mmb__deferred_sweep(iface, false);
    mmb__iface_lock(iface);
    flush_parked(p, cache);
    got = take_block(p, a, n, align);
  }
  if (!got) {
    if (a) mmb__handle_give(handles, a);
    mmb__iface_unlock(iface);
    return MMB_OUT_OF_MEMORY;
  }
  if (!(flags & MMB__ALLOC_UNCOUNTED)) mmb__count_alloc(c, n);
  if (cache && a->flags & MMB__QUICK) refill(p, cache, quick_bin_of(a));
  if (p->thread_caches) mmb__pool_sample_high(p);
  mmb__iface_unlock(iface);

  mmb__unpoison(mmb__iface_host_accessible(iface), a->ptr, n);
  if (flags & MMB_ALLOC_ZERO) {
    mmbError err = mmb__provider_zero(iface, a->ptr, n);
    if (err != MMB_OK) {
      iface->strategy->release(iface, a, flags);
      return err;
    }
  }
  *out = a;
  return MMB_OK;
}

static mmbError pool_allocate(mmbMemInterface *iface, size_t n, size_t align, unsigned flags,
                              mmbAllocation **out) {
  if (MMB__LIKELY(!flags) && mmb__pool_alloc_quick(iface, n, align, out)) return MMB_OK;
  return allocate_slow(iface->strategy_state, n, align, flags, out);
}

/* ---- release ------------------------------------------------------------- */

static void release_slow(pool *p, mmbAllocation *a, unsigned flags) {
  mmbMemInterface *iface = p->iface;
  pool_cache *cache = pool_cache_of(p);
  mmb__counters *c = cache ? cache->c : &iface->c;
  mmb__handle_cache *handles = cache ? cache->handles : &iface->handles;

  size_t bin = quick_bin_of(a);   /* meaningful with MMB__QUICK */
  if (cache && !flags && pool_under_threshold(iface) &&
      (p->thread_caches ? a->flags & MMB__QUICK : !mmb__iface_ts(iface) && a->flags & MMB__SLAB) &&
      cache->count[bin] >= cache->cap[bin]) {
    /* an overflowing bin of a cache one thread owns (its thread cache, or
       the cache of an interface that is not thread-safe): the block is
       parked like any other and the top half of the bin cut off here, with
       no lock; the lock is taken for the depot only */
    mmb__pool_park(iface, cache, a);
    if (p->thread_caches && bin < SLAB_CLASSES && cache->cap[bin] < slab_cap_max(bin)) {
      /* a thread that frees more blocks of a class than it allocates (the
         consumer of a producer's blocks) grows its bin as a miss would, so
         its batches grow too */
      cache->cap[bin] = (uint16_t)mmb__min(2u * cache->cap[bin], slab_cap_max(bin));
      return;
    }
    pool_batch b = cut_batch(cache, bin, (uint32_t)(cache->count[bin] - cache->cap[bin] / 2));
    mmb__iface_lock(iface);
    if (!depot_put(p, cache, bin, b)) give_batch(p, handles, b);
    if (p->thread_caches) mmb__pool_sample_high(p);
    mmb__iface_unlock(iface);
    return;
  }
  mmb__iface_lock(iface);
  if (!(flags & MMB__ALLOC_UNCOUNTED)) mmb__count_free(c, a->size);
  if (cache && !pool_under_threshold(iface)) {
    pool_cache_flush(p, cache);   /* parked blocks and spare slabs may hold segments */
    depot_drain(p);
    mmb__slab_release_spares(p);
  } else if (cache && (a->flags & MMB__SLAB || (p->thread_caches && a->flags & MMB__QUICK))) {
    flush_class(p, cache, bin, cache->cap[bin] / 2);   /* an overflowing quick bin: half back */
  }
  pool_give_block(p, a);
  mmb__handle_give(handles, a);
  if (p->thread_caches) mmb__pool_sample_high(p);
  mmb__iface_unlock(iface);
}

/* A block of a malloc-style slab, claimed (its asked entry was `was`). */
void mmb__pool_ptr_free(mmbMemInterface *iface, pool_slab *s, char *ptr, _Atomic uint16_t *asked,
                        uint16_t was) {
  pool *p = iface->strategy_state;
  pool_cache *cache = pool_cache_of(p);   /* before the interface lock */
  if (mmb__trace_active()) mmb__trace_record(MMB__TRACE_FREE, iface, ptr, was);
  mmb__poison(mmb__iface_host_accessible(iface), ptr, slab_class_size(s->cls));
  mmb__iface_lock(iface);
  mmb__count_free(cache ? cache->c : &iface->c, was);
  pool_ptr_bin *bin = cache ? &cache->ptrs[s->cls] : NULL;
  if (bin && pool_under_threshold(iface) && ptr_bin_ready(cache, s->cls)) {
    if (bin->top == bin->end) {
      size_t cap = ptr_bin_cap(bin);
      if (p->thread_caches && cap < slab_cap_max(s->cls))
        /* a thread that frees more than it allocates (a consumer) grows its
           bin, so its batches back to the slabs grow too */
        bin->end = bin->e + mmb__min(2 * cap, slab_cap_max(s->cls));
      else
        ptr_flush(p, cache, s->cls, cap / 2);
    }
    *bin->top++ = (pool_ptr){ptr, asked};
  } else {
    if (bin) flush_parked(p, cache);   /* past the release threshold */
    mmb__slab_put(p, s, ptr);
  }
  if (p->thread_caches) mmb__pool_sample_high(p);
  mmb__iface_unlock(iface);
}

/* An MMB__BARE handle (ptr.c: mmb_ptr_deallocate_async): its slab block back as
   mmb_ptr_deallocate gives it, and the handle back. */
static void bare_release(mmbAllocation *a) {
  mmbMemInterface *iface = a->interface;
  pool_slab *s = a->block;
  mmb__pool_ptr_free(iface, s, a->ptr, slab_asked(s, a->ptr), (uint16_t)a->size);
  mmb__iface_lock(iface);
  mmb__handle_give(&iface->handles, a);
  mmb__iface_unlock(iface);
}

static void pool_release(mmbMemInterface *iface, mmbAllocation *a, unsigned flags) {
  if (MMB__UNLIKELY(a->flags & MMB__BARE)) {
    bare_release(a);
    return;
  }
  if (MMB__LIKELY(!flags && (a->flags & ~MMB__SLAB) == MMB__QUICK) && mmb__pool_free_quick(iface, a))
    return;
  release_slow(iface->strategy_state, a, flags);
}

/* ---- the rest of the strategy -------------------------------------------- */

static void pool_trim(mmbMemInterface *iface, size_t keep) {
  pool *p = iface->strategy_state;
  pool_cache *mine = pool_cache_of(p);
  mmb__iface_lock(iface);
  flush_parked(p, mine);
  mmb__pool_release_free(p, keep);
  mmb__iface_unlock(iface);
}

static void pool_merge(const mmbMemInterface *iface, mmb__merged *acc) {
  const pool *p = iface->strategy_state;
  for (pool_tcache *tc = atomic_load_explicit(&p->tcaches, memory_order_acquire); tc;
       tc = atomic_load_explicit(&tc->next, memory_order_acquire))
    mmb__merge_counters(acc, &tc->c);
}

static void pool_reset_high(mmbMemInterface *iface) {
  pool *p = iface->strategy_state;
  for (pool_tcache *tc = atomic_load(&p->tcaches); tc; tc = atomic_load(&tc->next))
    MMB__SET(tc->c.used_high, MMB__GET(tc->c.used));
}

static mmbError pool_init(mmbMemInterface *iface) {
  pool *p = mmb__calloc(1, sizeof *p);
  if (!p) return MMB_OUT_OF_MEMORY;
  mmbError err = mmb__pool_init(p, iface);
  if (err != MMB_OK) {
    mmb__free(p);
    return err;
  }
  pthread_mutex_lock(&tc_lock);
  p->next_live = live_pools;
  live_pools = p;
  pthread_mutex_unlock(&tc_lock);
  iface->strategy_state = p;
  iface->quick = mmb__iface_ts(iface) ? NULL : &p->own;
  iface->quick_threads = p->thread_caches;
  return MMB_OK;
}

static void pool_finalize(mmbMemInterface *iface) {
  pool *p = iface->strategy_state;
  mmb__notes_stale();
  iface->quick = NULL;
  iface->quick_threads = false;
  pthread_mutex_lock(&tc_lock);
  pool **link = &live_pools;
  while (*link != p) link = &(*link)->next_live;
  *link = p->next_live;
  pthread_mutex_unlock(&tc_lock);
  cache_drop(&p->own);
  depot_drain(p);
  pool_tcache *tc = atomic_load(&p->tcaches);
  while (tc) {
    pool_tcache *next = atomic_load(&tc->next);
    cache_drop(&tc->cache);
    mmb__handle_cache_flush(&tc->handles);
    mmb__free(tc);
    tc = next;
  }
  mmb__slab_finalize(p);
  mmb__pool_finalize(p);
  mmb__free(p);
}

const mmb__strategy_ops mmb__pool_strategy = {
    .name = "pool",
    .init = pool_init,
    .finalize = pool_finalize,
    .allocate = pool_allocate,
    .release = pool_release,
    .trim = pool_trim,
    .merge = pool_merge,
    .reset_high = pool_reset_high,
};
