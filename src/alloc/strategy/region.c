/* Regions (arenas). A root region owns a chain of fixed-size blocks and a
   bump position in it; mmb_region_push opens a child that bumps on in the
   same chain from where its parent stood, and gives everything after that
   mark back when it is reset or destroyed. Regions therefore live in stack
   order: only the innermost one allocates, and a region with a live child
   cannot be reset or destroyed (MMB_BUSY).

   Reset moves the position back (O(1) in allocations) and keeps the blocks.
   An allocation bigger than a block gets a dedicated block. Blocks come from
   the interface's strategy (so a pooled interface serves them from its pool)
   through a free-block list shared by every region of the interface: a
   region that shrinks feeds one that grows, with no provider trip. Blocks
   held by regions count as used bytes of the interface.

   A region belongs to one thread at a time; the shared list is guarded by
   the interface lock. */
#include "alloc/strategy/strategy.h"
#include "alloc/strategy/poison.h"

#include <stddef.h>

#define DEFAULT_BLOCK ((size_t)1 << 20)
#define BLOCK_ROUND ((size_t)4096)
#define DEFAULT_ALIGN MMB_REGION_DEFAULT_ALIGNMENT

/* Where memory is poisoned, every allocation must go through the library
   (to unpoison it): the inline path in region.h then sees no room. */
#if defined(__SANITIZE_ADDRESS__) || MMB_DEBUG
#define INLINE_LIMIT(end) ((uintptr_t)0)
#else
#define INLINE_LIMIT(end) (end)
#endif

typedef struct rblock {
  mmbAllocation *a;      /* the strategy's handle (state INTERNAL) */
  char *base;
  size_t size;
  struct rblock *next;
} rblock;

struct mmb__region_cache {
  rblock *head;          /* free blocks of every region of the interface */
  mmbRegion *roots;      /* live root regions, for teardown */
};

struct mmbRegion {
  /* The bump position, first so that region.h's inline path can read it.
     Only the innermost region of a stack has one; its parents have none,
     so that their allocations go the slow way and are refused. */
  mmb__region_cursor cursor;
  uintptr_t end;                      /* the current block's real end */
  mmbMemInterface *iface;
  mmbRegion *root, *parent, *child;
  mmbRegion *next_root, *prev_root;   /* roots only */
  size_t block_size, block_align;
  bool host;
  /* the chain of blocks and the one the position is in: in the root */
  rblock *first, *last, *block;
  /* where this region started (children) */
  rblock *mark_block;
  uintptr_t mark_bump;
  rblock *dedicated;                  /* oversize blocks allocated here */
  mmbAllocation *handles;             /* live mmbAllocations placed here */
  /* mmb_region_reset_async: the reset waits for this fence; meanwhile the
     inline path is closed (limit 0) so that every use comes by settle() */
  mmb__request *fence;
  /* queued work that still reads bytes of the region (an array migrated
     away from it asynchronously): reset and destroy wait for it */
  mmb__request *reader;
};

static void settle(mmbRegion *r);

/* ---- the shared free-block list ----------------------------------------- */

static bool block_fits(const rblock *b, size_t n, size_t align, size_t max_size) {
  uintptr_t p = ((uintptr_t)b->base + align - 1) & ~(uintptr_t)(align - 1);
  return b->size <= max_size && p - (uintptr_t)b->base <= b->size &&
         n <= b->size - (p - (uintptr_t)b->base);
}

static rblock *cache_take(mmb__region_cache *cache, size_t n, size_t align, size_t max_size) {
  if (!cache) return NULL;
  for (rblock **link = &cache->head; *link; link = &(*link)->next) {
    rblock *b = *link;
    if (!block_fits(b, n, align, max_size)) continue;
    *link = b->next;
    return b;
  }
  return NULL;
}

static mmb__region_cache *cache_of(mmbMemInterface *iface) {   /* lock held */
  if (!iface->region_cache) iface->region_cache = mmb__calloc(1, sizeof(mmb__region_cache));
  return iface->region_cache;
}

/* A block of at least n bytes at `align` (n <= size): from the shared list,
   else from the strategy. */
static rblock *block_get(mmbMemInterface *iface, size_t size, size_t n, size_t align) {
  mmb__iface_lock(iface);
  rblock *b = cache_take(iface->region_cache, n, align, 2 * size);
  if (b) mmb__count_alloc(&iface->c, b->size);
  mmb__iface_unlock(iface);
  if (b) {
    if (mmb__trace_active()) mmb__trace_record(MMB__TRACE_ALLOC, iface, b->base, b->size);
    return b;
  }
  b = mmb__malloc(sizeof *b);
  mmbAllocation *a = NULL;
  if (!b || iface->strategy->allocate(iface, size, align, MMB__ALLOC_UNCOUNTED, &a) != MMB_OK) {
    mmb__free(b);
    return NULL;
  }
  mmb__handle_set(a, MMB__HANDLE_INTERNAL);
  *b = (rblock){.a = a, .base = a->ptr, .size = size};
  mmb__poison(mmb__iface_host_accessible(iface), b->base, b->size);
  mmb__iface_lock(iface);
  mmb__count_alloc(&iface->c, size);
  mmb__iface_unlock(iface);
  if (mmb__trace_active()) mmb__trace_record(MMB__TRACE_ALLOC, iface, b->base, size);
  return b;
}

/* Puts a list of blocks on the shared list. */
static void blocks_put(mmbMemInterface *iface, rblock *list) {
  if (!list) return;
  bool host = mmb__iface_host_accessible(iface);
  rblock *last = list;
  size_t bytes = 0;
  unsigned long long n = 0;
  for (rblock *b = list; b; last = b, b = b->next) {
    mmb__poison(host, b->base, b->size);
    if (mmb__trace_active()) mmb__trace_record(MMB__TRACE_FREE, iface, b->base, b->size);
    bytes += b->size;
    n++;
  }
  mmb__iface_lock(iface);
  mmb__region_cache *cache = cache_of(iface);
  if (cache) {
    last->next = cache->head;
    cache->head = list;
  }
  MMB__SET(iface->c.used, MMB__GET(iface->c.used) - bytes);
  MMB__ADD(iface->c.n_frees, n);
  mmb__iface_unlock(iface);
  if (!cache) {   /* no memory for the list itself: give the blocks back */
    for (rblock *b = list, *next; b; b = next) {
      next = b->next;
      iface->strategy->release(iface, b->a, MMB__ALLOC_UNCOUNTED);
      mmb__free(b);
    }
  }
}

static void blocks_release(mmbMemInterface *iface, rblock *list) {
  for (rblock *b = list, *next; b; b = next) {
    next = b->next;
    mmb__unpoison(mmb__iface_host_accessible(iface), b->base, b->size);
    mmb__handle_set(b->a, MMB__HANDLE_FREEING);
    iface->strategy->release(iface, b->a, MMB__ALLOC_UNCOUNTED);
    mmb__free(b);
  }
}

void mmb__region_cache_trim(mmbMemInterface *iface) {
  mmb__iface_lock(iface);
  rblock *list = iface->region_cache ? iface->region_cache->head : NULL;
  if (list) iface->region_cache->head = NULL;
  mmb__iface_unlock(iface);
  blocks_release(iface, list);
}

static void set_cursor(mmbRegion *r, uintptr_t bump, uintptr_t end) {
  r->cursor.bump = bump;
  r->cursor.limit = INLINE_LIMIT(end);
  r->end = end;
}

static uintptr_t block_end(const rblock *b) { return b ? (uintptr_t)b->base + b->size : 0; }

/* ---- create, push, destroy ----------------------------------------------- */

static mmbRegion *region_new(mmbMemInterface *iface, size_t block_size) {
  mmbRegion *r = mmb__object_new(MMB__KIND_REGION, sizeof *r);
  if (!r) return NULL;
  r->cursor.magic = MMB__REGION_MAGIC;
  r->iface = iface;
  r->root = r;
  r->block_size = block_size;
  r->host = mmb__iface_host_accessible(iface);
  r->block_align = r->host ? 512 : 256;   /* a pool granule: no padding in a pool */
  atomic_fetch_add(&iface->n_regions, 1);
  return r;
}

mmbError mmb_region_create(mmbMemInterface *iface, const mmbRegionOptions *opts,
                           mmbRegion **out_region) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, __func__, "interface");
  MMB__ARG(!out_region, __func__, "out_region is NULL");
  size_t block = opts && opts->block_size ? opts->block_size : DEFAULT_BLOCK;
  if (block > PTRDIFF_MAX / 4)
    return mmb__fail(MMB_OVERFLOW, __func__, "block_size %zu is too large", block);
  block = (block + BLOCK_ROUND - 1) & ~(BLOCK_ROUND - 1);
  mmb__iface_lock(iface);
  mmb__region_cache *cache = cache_of(iface);
  mmbRegion *r = cache ? region_new(iface, block) : NULL;
  if (r) {
    r->next_root = cache->roots;
    if (cache->roots) cache->roots->prev_root = r;
    cache->roots = r;
  }
  mmb__iface_unlock(iface);
  if (!r) return MMB_OUT_OF_MEMORY;
  *out_region = r;
  return MMB_OK;
}

mmbError mmb_region_push(mmbRegion *parent, mmbRegion **out_child) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(parent, MMB__KIND_REGION, __func__, "parent");
  MMB__ARG(!out_child, __func__, "out_child is NULL");
  if (parent->child)
    return mmb__fail(MMB_BUSY, __func__, "the region already has a live child; push on it");
  settle(parent);
  mmbRegion *c = region_new(parent->iface, parent->block_size);
  if (!c) return MMB_OUT_OF_MEMORY;
  c->root = parent->root;
  c->parent = parent;
  c->mark_block = c->root->block;
  c->mark_bump = parent->cursor.bump;
  set_cursor(c, parent->cursor.bump, parent->end);
  set_cursor(parent, 0, 0);
  parent->child = c;
  *out_child = c;
  return MMB_OK;
}

/* Retires the handles placed in r: using one afterwards is a reported error. */
static void retire_handles(mmbRegion *r) {
  if (!r->handles) return;
  mmbMemInterface *iface = r->iface;
  mmb__iface_lock(iface);
  for (mmbAllocation *a = r->handles, *next; a; a = next) {
    next = a->next;
    mmb__handle_give(&iface->handles, a);
  }
  mmb__iface_unlock(iface);
  r->handles = NULL;
}

/* Poisons what r allocated in the chain: from its mark to its position. */
static void poison_used(mmbRegion *r) {
  mmbRegion *root = r->root;
  if (!r->host || !root->block) return;
  rblock *b = r->mark_block ? r->mark_block : root->first;
  uintptr_t from = r->mark_block ? r->mark_bump : (uintptr_t)b->base;
  for (;;) {
    uintptr_t stop = b == root->block ? r->cursor.bump : block_end(b);
    if (stop > from) mmb__poison(true, (void *)from, stop - from);
    if (b == root->block || !b->next) break;
    b = b->next;
    from = (uintptr_t)b->base;
  }
}

/* Forgets what r allocated; r has no child. */
static void region_clear(mmbRegion *r) {
  retire_handles(r);
  blocks_put(r->iface, r->dedicated);
  r->dedicated = NULL;
  poison_used(r);
  r->root->block = r->mark_block;
  set_cursor(r, r->mark_bump, block_end(r->mark_block));
}

/* Carries out a pending asynchronous reset, waiting for its fence if the
   queue has not got there yet. */
static void settle(mmbRegion *r) {
  if (!r->fence) return;
  (void)mmb__request_wait(r->fence);   /* its error is its own caller's */
  mmb__request_unref(r->fence);
  r->fence = NULL;
  region_clear(r);
}

/* Waits for queued work that reads the region's bytes. */
static void wait_reader(mmbRegion *r) {
  if (!r->reader) return;
  (void)mmb__request_wait(r->reader);
  mmb__request_unref(r->reader);
  r->reader = NULL;
}

void mmb__region_read_after(mmbRegion *r, mmb__request *fence) {
  wait_reader(r);   /* an earlier reader: (normally long done) */
  if (mmb__request_done(fence)) {
    mmb__request_unref(fence);
    return;
  }
  r->reader = fence;
}

mmbError mmb_region_reset(mmbRegion *region) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(region, MMB__KIND_REGION, __func__, "region");
  if (region->child) return mmb__fail(MMB_BUSY, __func__, "a child region is live");
  wait_reader(region);
  settle(region);
  region_clear(region);
  return MMB_OK;
}

mmbError mmb__region_reset_after(const char *func, mmbRegion *r, mmb__request *fence) {
  if (r->child) {
    mmb__request_unref(fence);
    return mmb__fail(MMB_BUSY, func, "a child region is live");
  }
  wait_reader(r);
  settle(r);   /* an earlier asynchronous reset: (normally long passed) */
  if (mmb__request_done(fence)) {
    mmb__request_unref(fence);
    region_clear(r);
    return MMB_OK;
  }
  r->fence = fence;
  r->cursor.limit = 0;
  return MMB_OK;
}

static void region_free(mmbRegion *r) {
  mmbMemInterface *iface = r->iface;
  wait_reader(r);
  settle(r);
  region_clear(r);
  if (r == r->root) {
    blocks_put(iface, r->first);
    mmb__iface_lock(iface);
    if (r->prev_root) r->prev_root->next_root = r->next_root;
    else iface->region_cache->roots = r->next_root;
    if (r->next_root) r->next_root->prev_root = r->prev_root;
    mmb__iface_unlock(iface);
  } else {   /* the parent goes on from where the child began */
    set_cursor(r->parent, r->cursor.bump, r->end);
    r->parent->child = NULL;
  }
  atomic_fetch_sub(&iface->n_regions, 1);
  set_cursor(r, 0, 0);   /* a stale handle's inline path goes to the library */
  r->cursor.magic = 0;
  mmb__object_free(r);
}

mmbError mmb_region_destroy(mmbRegion *region) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(region, MMB__KIND_REGION, __func__, "region");
  if (region->child) return mmb__fail(MMB_BUSY, __func__, "a child region is live");
  region_free(region);
  return MMB_OK;
}

void mmb__regions_teardown(mmbMemInterface *iface) {
  mmb__region_cache *cache = iface->region_cache;
  if (!cache) return;
  while (cache->roots) {
    mmbRegion *r = cache->roots;
    while (r->child) r = r->child;
    mmb__log(MMB_LOG_WARN, "finalize: destroying a live region of %s", iface->space->info.name);
    region_free(r);
  }
  rblock *list = cache->head;
  cache->head = NULL;
  blocks_release(iface, list);
  mmb__free(cache);
  iface->region_cache = NULL;
}

/* ---- allocation ---------------------------------------------------------- */

static mmbError region_alloc_slow(mmbRegion *r, size_t n, size_t align, void **out) {
  mmbRegion *root = r->root;
  size_t worst = n + (align > r->block_align ? align - r->block_align : 0);
  if (worst > root->block_size) {   /* a dedicated block */
    size_t bsize = (n + BLOCK_ROUND - 1) & ~(BLOCK_ROUND - 1);
    rblock *b = block_get(r->iface, bsize, n, align > r->block_align ? align : r->block_align);
    if (!b) return MMB_OUT_OF_MEMORY;
    b->next = r->dedicated;
    r->dedicated = b;
    void *p = (void *)(((uintptr_t)b->base + align - 1) & ~(uintptr_t)(align - 1));
    mmb__unpoison(r->host, p, n);
    *out = p;
    return MMB_OK;
  }
  rblock *next = root->block ? root->block->next : root->first;
  if (!next) {
    if (!(next = block_get(r->iface, root->block_size, root->block_size, r->block_align)))
      return MMB_OUT_OF_MEMORY;
    next->next = NULL;
    if (root->last) root->last->next = next;
    else root->first = next;
    root->last = next;
  }
  root->block = next;
  uintptr_t p = ((uintptr_t)next->base + align - 1) & ~(uintptr_t)(align - 1);
  set_cursor(r, p + n, block_end(next));
  mmb__unpoison(r->host, (void *)p, n);
  *out = (void *)p;
  return MMB_OK;
}

static mmbError region_check(mmbRegion *r, size_t n, size_t *align, const char *func) {
  MMB__ARG(n == 0, func, "zero bytes requested");
  if (!*align) *align = DEFAULT_ALIGN;
  MMB__ARG(!mmb__is_pow2(*align) || *align > MMB_MAX_ALIGNMENT, func,
           "alignment %zu is not a power of two up to %zu", *align, MMB_MAX_ALIGNMENT);
  if (n > PTRDIFF_MAX / 2) return mmb__fail(MMB_OVERFLOW, func, "%zu bytes cannot be addressed", n);
  if (r->child) return mmb__fail(MMB_BUSY, func, "a child region is live: allocate in the child");
  settle(r);
  return MMB_OK;
}

static inline mmbError region_bump(mmbRegion *r, size_t n, size_t align, void **out) {
  uintptr_t bump = r->cursor.bump, p = (bump + align - 1) & ~(uintptr_t)(align - 1);
  if (MMB__LIKELY(p >= bump && p <= r->end && n <= r->end - p)) {
    r->cursor.bump = p + n;
    mmb__unpoison(r->host, (void *)p, n);
    *out = (void *)p;
    return MMB_OK;
  }
  return region_alloc_slow(r, n, align, out);
}

mmbError mmb__region_bump(const char *func, mmbRegion *r, size_t n, size_t align, void **out) {
  mmbError err = region_check(r, n, &align, func);
  return err != MMB_OK ? err : region_bump(r, n, align, out);
}

mmbError mmb__region_allocate(mmbRegion *r, mmbMemInterface *iface, size_t n, size_t align,
                              unsigned flags, mmbAllocation **out) {
  MMB__ARG(r->iface != iface, "mmb_allocate", "the region belongs to another interface");
  mmbError err = region_check(r, n, &align, "mmb_allocate");
  if (err != MMB_OK) return err;
  mmb__iface_lock(iface);
  mmbAllocation *a = mmb__handle_take(&iface->handles);
  mmb__iface_unlock(iface);
  void *p = NULL;
  if (!a) return MMB_OUT_OF_MEMORY;
  if ((err = region_bump(r, n, align, &p)) == MMB_OK && (flags & MMB_ALLOC_ZERO))
    err = mmb__provider_zero(iface, p, n);
  if (err != MMB_OK) {
    mmb__iface_lock(iface);
    mmb__handle_give(&iface->handles, a);
    mmb__iface_unlock(iface);
    return err;
  }
  mmb__handle_fill(a, iface, n, align, 0, r);
  a->flags = MMB__IN_REGION;
  a->ptr = p;
  a->prev = NULL;
  a->next = r->handles;
  if (r->handles) r->handles->prev = a;
  r->handles = a;
  *out = a;
  return MMB_OK;
}

void mmb__region_release(mmbAllocation *a) {
  mmbRegion *r = a->block;
  if (a->prev) a->prev->next = a->next;
  else r->handles = a->next;
  if (a->next) a->next->prev = a->prev;
  mmb__iface_lock(r->iface);
  mmb__handle_give(&r->iface->handles, a);
  mmb__iface_unlock(r->iface);
}

mmbMemInterface *mmb__region_interface(const mmbRegion *region) { return region->iface; }
