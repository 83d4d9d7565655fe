/* malloc-style allocation: mmb_ptr_allocate and mmb_ptr_deallocate, a bare pointer
   in and out, no handle.

   Blocks up to 2 KiB (SLAB_MAX) on a pool interface come from slabs of
   their own, through the calling thread's cache (pool_cache.ptrs): the
   common case is a pop or a push on a stack of pointers, with exact stats
   and no lock. A pointer finds its slab through the slab map (two levels
   over the 64 KiB pages of the address space, as mimalloc's segment map and
   jemalloc's rtree do), which every such slab is aligned to; the slab's
   asked entry of the block is the bytes asked for, 0 while it is free, so
   the double-free check is one exchange with 0 (pool.h: slab_asked); the
   map's entry also holds the class, so the bin is known at once. A
   slab names its interface: an interface that matches it is live (its
   slabs leave the map when it is destroyed), so freeing needs no other
   check of it. Nothing lives in the block: it may be device memory.

   Everything else (larger blocks, another strategy, a slab that could not
   be had) is an allocation with a handle, found again from its pointer in
   the interface's table (mmb__ptr_table). */
#include "alloc/strategy/strategy.h"
#include "alloc/strategy/pool.h"

/* ---- the table of blocks with handles ---------------------------------------- */

static size_t slot_of(const mmb__ptr_table *t, const void *key) {
  return (size_t)(((uintptr_t)key >> 6) * 0x9e3779b97f4a7c15ull >> 32) & (t->cap - 1);
}

static bool table_grow(mmb__ptr_table *t) {
  size_t cap = t->cap ? 2 * t->cap : 64;
  mmb__ptr_table bigger = {mmb__calloc(cap, sizeof *t->slot), cap, t->n};
  if (!bigger.slot) return false;
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->slot[i].key) continue;
    size_t j = slot_of(&bigger, t->slot[i].key);
    while (bigger.slot[j].key) j = (j + 1) & (cap - 1);
    bigger.slot[j] = t->slot[i];
  }
  mmb__ptr_table_free(t);
  *t = bigger;
  return true;
}

static bool table_put(mmb__ptr_table *t, void *key, mmbAllocation *a) {
  if (2 * (t->n + 1) > t->cap && !table_grow(t)) return false;
  size_t i = slot_of(t, key);
  while (t->slot[i].key) i = (i + 1) & (t->cap - 1);
  t->slot[i] = (mmb__ptr_slot){key, a};
  t->n++;
  return true;
}

/* Removes key (linear probing, backward shift); its handle, or NULL. */
static mmbAllocation *table_take(mmb__ptr_table *t, const void *key) {
  if (!t->cap) return NULL;
  size_t mask = t->cap - 1, i = slot_of(t, key);
  while (t->slot[i].key != key) {
    if (!t->slot[i].key) return NULL;
    i = (i + 1) & mask;
  }
  mmbAllocation *a = t->slot[i].val;
  for (size_t j = (i + 1) & mask; t->slot[j].key; j = (j + 1) & mask) {
    size_t home = slot_of(t, t->slot[j].key);
    /* j's entry may fill the hole at i unless its home lies in (i, j] */
    if (((j - home) & mask) >= ((j - i) & mask)) {
      t->slot[i] = t->slot[j];
      i = j;
    }
  }
  t->slot[i].key = NULL;
  t->n--;
  return a;
}

void mmb__ptr_table_free(mmb__ptr_table *t) {
  mmb__free(t->slot);
  *t = (mmb__ptr_table){0};
}

/* ---- allocate ---------------------------------------------------------------- */

/* A block of a malloc-style slab, under the interface lock; false: none could
   be had (the caller takes a block with a handle). */
static bool slab_alloc(mmbMemInterface *iface, size_t n, void **out) {
  pool *p = iface->strategy_state;
  pool_cache *cache = pool_cache_of(p);   /* before the interface lock */
  if (!cache) return false;
  size_t cls = slab_bin(n);
  pool_ptr_bin *bin = &cache->ptrs[cls];
  mmb__iface_lock(iface);
  bool got = bin->top != bin->e || mmb__pool_ptr_refill(p, cache, cls);
  pool_ptr e = {0};
  if (got) {
    e = *--bin->top;
    atomic_store_explicit(e.asked, (uint16_t)n, memory_order_relaxed);
    mmb__count_alloc(cache->c, n);
    if (p->thread_caches) mmb__pool_sample_high(p);
  }
  mmb__iface_unlock(iface);
  if (!got) return false;
  if (mmb__trace_active()) mmb__trace_record(MMB__TRACE_ALLOC, iface, e.ptr, n);
  mmb__unpoison(mmb__iface_host_accessible(iface), e.ptr, n);
  *out = e.ptr;
  return true;
}

/* A block with a handle, recorded in the interface's table. */
static mmbError handle_alloc(mmbMemInterface *iface, size_t n, const mmbAllocateOptions *opts,
                             void **out) {
  mmbAllocation *a;
  mmbError err = mmb__allocate(iface, n, opts, &a);
  if (err != MMB_OK) return err;
  void *ptr = mmb__record(a)->ptr;
  mmb__iface_lock(iface);
  bool recorded = table_put(&iface->ptrs, ptr, a);
  mmb__iface_unlock(iface);
  if (!recorded) {
    MMB__MUST(mmb__free_handle(a));
    return mmb__fail(MMB_OUT_OF_MEMORY, "mmb_ptr_allocate", "no memory to record %p", ptr);
  }
  *out = ptr;
  return MMB_OK;
}

static mmbError alloc_general(mmbMemInterface *iface, size_t n, void **out)
    __attribute__((noinline));

/* The common case: a pop from this thread's bin of the class, with nothing
   that needs a call. */
mmbError mmb_ptr_allocate(size_t n_bytes, mmbMemInterface *iface, void **out_ptr) {
  if (MMB__LIKELY(mmb__noted(iface) && out_ptr && n_bytes - 1 < SLAB_MAX)) {   /* no trace runs */
    pool_cache *cache = mmb__tl_note.cache;
    pool_ptr_bin *bin = &cache->ptrs[slab_bin(n_bytes)];
    if (MMB__LIKELY(bin->top != bin->e)) {
      pool_ptr e = *--bin->top;
      atomic_store_explicit(e.asked, (uint16_t)n_bytes, memory_order_relaxed);
      mmb__count_alloc(cache->c, n_bytes);
      mmb__unpoison(mmb__iface_host_accessible(iface), e.ptr, n_bytes);
      *out_ptr = e.ptr;
      return MMB_OK;
    }
  }
  return alloc_general(iface, n_bytes, out_ptr);
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_ptr_alloc(mmbMemInterface *interface, size_t n_bytes, void **out_ptr) {
  return mmb_ptr_allocate(n_bytes, interface, out_ptr);
}

static mmbError alloc_general(mmbMemInterface *iface, size_t n, void **out) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, "mmb_ptr_allocate", "interface");
  MMB__ARG(!out, "mmb_ptr_allocate", "out_ptr is NULL");
  MMB__ARG(n == 0, "mmb_ptr_allocate", "zero bytes requested");
  mmb__deferred_poll(iface);   /* blocks mmb_ptr_deallocate_async held back, if they may go */
  mmb__note_take(iface);   /* the next one is quick */
  if (n <= SLAB_MAX && iface->strategy == &mmb__pool_strategy && slab_alloc(iface, n, out))
    return MMB_OK;
  return handle_alloc(iface, n, NULL, out);
}

mmbError mmb_ptr_allocate_opts(size_t n_bytes, mmbMemInterface *iface,
                            const mmbAllocateOptions *opts, void **out_ptr) {
  size_t align = opts ? opts->alignment : 0;
  bool plain = !align || (mmb__is_pow2(align) && align <= SLAB_ALIGN);   /* every block's */
  if (!opts || (!opts->flags && !opts->region && plain))
    return mmb_ptr_allocate(n_bytes, iface, out_ptr);
  MMB__REQUIRE_INIT();
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, __func__, "interface");
  MMB__ARG(!out_ptr, __func__, "out_ptr is NULL");
  MMB__ARG(n_bytes == 0, __func__, "zero bytes requested");
  MMB__ARG(opts->region, __func__,
           "a bare block cannot be placed in a region: use mmb_region_alloc");
  return handle_alloc(iface, n_bytes, opts, out_ptr);   /* it checks the alignment and flags */
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_ptr_alloc_opts(mmbMemInterface *interface, size_t n_bytes,
                            const mmbAllocateOptions *opts, void **out_ptr) {
  return mmb_ptr_allocate_opts(n_bytes, interface, opts, out_ptr);
}

/* ---- free -------------------------------------------------------------------- */

/* The block's asked entry taken (set to 0): what it was asked for, or 0
   when it is not a live block's start. `shared`: another thread may free
   the same block at once, and only one of them gets a value back. */
static MMB__ALWAYS_INLINE uint16_t claim(_Atomic uint16_t *asked, bool shared) {
  if (shared) return atomic_exchange_explicit(asked, 0, memory_order_relaxed);
  uint16_t was = atomic_load_explicit(asked, memory_order_relaxed);
  atomic_store_explicit(asked, 0, memory_order_relaxed);
  return was;
}

static mmbError not_live(const mmbMemInterface *iface, const void *ptr) {
  mmb__log(MMB_LOG_ERROR, "mmb_ptr_deallocate: %p is not a live block of mmb_ptr_allocate on %s "
           "(freed twice, from another interface, or not from mmb); nothing was freed", ptr,
           iface->space->info.name);
  return MMB_INVALID_ARG;
}

static mmbError free_general(mmbMemInterface *iface, void *ptr) __attribute__((noinline));

/* The common case: a push on this thread's bin of the class, with nothing
   that needs a call; everything else, and every refusal, takes the general
   path. */
mmbError mmb_ptr_deallocate(void *ptr, mmbMemInterface *iface) {
  uintptr_t entry = mmb__slab_entry(ptr);
  pool_slab *s = slab_of_entry(entry);
  /* the block's slab is iface's (so iface is live), then the note's state
     (pool.h: mmb__note) */
  if (MMB__LIKELY(entry && s->iface == iface && !((uintptr_t)ptr & 63) && mmb__noted(iface) &&
                  pool_under_threshold(iface))) {
    pool_cache *cache = mmb__tl_note.cache;
    size_t cls = entry & SLAB_ENTRY_CLASS;
    pool_ptr_bin *bin = &cache->ptrs[cls];
    if (MMB__LIKELY(bin->top < bin->end)) {
      _Atomic uint16_t *asked = slab_asked(s, ptr);
      uint16_t was = claim(asked, mmb__iface_ts(iface));
      if (MMB__UNLIKELY(!was)) return not_live(iface, ptr);
      mmb__count_free(cache->c, was);
      mmb__poison(mmb__iface_host_accessible(iface), ptr, slab_class_size(cls));
      *bin->top++ = (pool_ptr){ptr, asked};
      return MMB_OK;
    }
  }
  return free_general(iface, ptr);
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_ptr_free(mmbMemInterface *interface, void *ptr) {
  return mmb_ptr_deallocate(ptr, interface);
}

/* The slab block at ptr, if ptr is one of iface's slabs' (NULL: a block
   with a handle, or none); MMB_INVALID_ARG for a pointer into a slab that
   is not a block of iface's. */
static mmbError slab_block(const char *func, mmbMemInterface *iface, const void *ptr,
                           pool_slab **out) {
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, func, "interface");
  MMB__ARG(!ptr, func, "ptr is NULL");
  pool_slab *s = *out = mmb__slab_of(ptr);
  if (s && (s->iface != iface || (uintptr_t)ptr & 63)) return not_live(iface, ptr);
  return MMB_OK;
}

static mmbError free_general(mmbMemInterface *iface, void *ptr) {
  MMB__REQUIRE_INIT();
  pool_slab *s = NULL;
  mmbError err = slab_block("mmb_ptr_deallocate", iface, ptr, &s);
  if (err != MMB_OK) return err;
  mmb__deferred_poll(iface);   /* what mmb_ptr_deallocate_async left, once its fences passed */
  mmb__note_take(iface);   /* the next one is quick */
  if (s) {
    _Atomic uint16_t *asked = slab_asked(s, ptr);
    uint16_t was = claim(asked, true);
    if (!was) return not_live(iface, ptr);
    mmb__pool_ptr_free(iface, s, ptr, asked, was);
    return MMB_OK;
  }
  mmb__iface_lock(iface);
  mmbAllocation *a = table_take(&iface->ptrs, ptr);
  mmb__iface_unlock(iface);
  if (!a) return not_live(iface, ptr);
  return mmb__free_handle(a);
}

/* ---- free after queue work (mmb_ptr_deallocate_async) ------------------------------ */

/* A slab block waits on the interface's deferred list as the handle path's
   blocks do, carried by a handle of its own (MMB__BARE: ptr, size = the
   bytes asked, block = the slab) that never reaches a caller. */
mmbError mmb__ptr_free_after(const char *func, mmbMemInterface *iface, void *ptr,
                             mmb__request *fence) {
  pool_slab *s = NULL;
  mmbError err = slab_block(func, iface, ptr, &s);
  if (err != MMB_OK) return err;
  mmb__deferred_poll(iface);
  if (!s) {   /* a block with a handle: its handle waits */
    mmb__iface_lock(iface);
    mmbAllocation *a = table_take(&iface->ptrs, ptr);
    mmb__iface_unlock(iface);
    if (!a) return not_live(iface, ptr);
    if ((err = mmb__allocation_fence(func, a, fence)) != MMB_OK) {
      mmb__iface_lock(iface);
      (void)table_put(&iface->ptrs, ptr, a);   /* its slot was just freed: no growth */
      mmb__iface_unlock(iface);
      return err;
    }
    return mmb__free_handle(a);
  }
  _Atomic uint16_t *asked = slab_asked(s, ptr);
  uint16_t was = claim(asked, true);
  if (!was) return not_live(iface, ptr);
  mmb__iface_lock(iface);
  mmbAllocation *a = mmb__handle_take(&iface->handles);
  mmb__iface_unlock(iface);
  if (a) {
    mmb__handle_fill(a, iface, was, 0, slab_class_size(s->cls), s);
    a->flags = MMB__BARE;
    a->ptr = ptr;
    mmb__handle_set(a, MMB__HANDLE_FREEING);
    if ((err = mmb__allocation_fence(func, a, fence)) == MMB_OK) {
      mmb__allocation_defer(a);
      return MMB_OK;
    }
    mmb__iface_lock(iface);
    mmb__handle_give(&iface->handles, a);
    mmb__iface_unlock(iface);
  }
  atomic_store_explicit(asked, was, memory_order_relaxed);   /* still the caller's */
  return a ? err : mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory to hold %p back", ptr);
}
