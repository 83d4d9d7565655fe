/* Allocating: argument checks, the handle handed out LIVE, the dispatch to
   the interface's strategy (the pool's quick bins inline) or to a region;
   and reading a live handle. Freeing is free.c's. */
#include "alloc/strategy/strategy.h"
#include "alloc/strategy/pool.h"

#include <stdint.h>

static inline void hand_out(mmbMemInterface *iface, mmbAllocation *a, mmbAllocation **out) {
  if (mmb__trace_active()) mmb__trace_record(MMB__TRACE_ALLOC, iface, a->ptr, a->size);
  *out = mmb__handle_live(a);
}

/* The pool's quick bins the calling thread owns (a pool that is not
   thread-safe, or this thread's cache of one that is) are tried first,
   straight from here, with nothing that needs a call: the common case is a
   list pop. Everything else (another strategy, a miss, deferred frees to
   sweep, tracing) takes the general path. */
static mmbError allocate_general(size_t n_bytes, mmbMemInterface *iface,
                                 mmbAllocation **out_allocation) __attribute__((noinline));

mmbError mmb_allocate(size_t n_bytes, mmbMemInterface *iface, mmbAllocation **out_allocation) {
  /* the thread's note says all the state needs to say (pool.h: mmb__note) */
  if (MMB__LIKELY(mmb__noted(iface) && out_allocation && n_bytes - 1 < POOL_QUICK_MAX)) {
    mmbAllocation *a = mmb__pool_pop(iface, mmb__tl_note.cache, n_bytes, MMB_DEFAULT_ALIGNMENT);
    if (MMB__LIKELY(a != NULL)) {
      *out_allocation = mmb__handle_live(a);
      return MMB_OK;
    }
  }
  return allocate_general(n_bytes, iface, out_allocation);
}

static mmbError allocate_general(size_t n_bytes, mmbMemInterface *iface,
                                 mmbAllocation **out_allocation) {
  mmbAllocation *a;
  if (MMB__LIKELY(mmb__initialized() && mmb__object_is(iface, MMB__KIND_INTERFACE) &&
                  out_allocation && n_bytes && iface->strategy == &mmb__pool_strategy)) {
    mmb__deferred_poll(iface);
    mmb__note_take(iface);   /* the next one is quick */
    if (MMB__LIKELY(mmb__pool_alloc_quick(iface, n_bytes, MMB_DEFAULT_ALIGNMENT, &a))) {
      hand_out(iface, a, out_allocation);
      return MMB_OK;
    }
  }
  return mmb_allocate_opts(n_bytes, iface, NULL, out_allocation);
}

static mmbError check_request(size_t n_bytes, const mmbAllocateOptions *opts, size_t *alignment) {
  size_t align = opts && opts->alignment ? opts->alignment : MMB_DEFAULT_ALIGNMENT;
  unsigned flags = opts ? opts->flags : 0;
  MMB__ARG(n_bytes == 0, "mmb_allocate", "zero bytes requested");
  MMB__ARG(!mmb__is_pow2(align) || align > MMB_MAX_ALIGNMENT, "mmb_allocate",
           "alignment %zu is not a power of two up to %zu", align, MMB_MAX_ALIGNMENT);
  MMB__ARG(flags & ~MMB_ALLOC_ZERO, "mmb_allocate", "unknown flags 0x%x", flags);
  if (align < sizeof(void *)) align = sizeof(void *);
  size_t rounded;
  if (n_bytes > PTRDIFF_MAX || mmb__add_overflows(n_bytes, align - 1, &rounded))
    return mmb__fail(MMB_OVERFLOW, "mmb_allocate", "%zu bytes cannot be addressed", n_bytes);
  *alignment = align;
  return MMB_OK;
}

static mmbError allocation_failed(mmbMemInterface *iface, size_t n_bytes, mmbError err) {
  mmb__count_failure(iface);
  return mmb__fail(err, "mmb_allocate", "%zu bytes from %s: %s", n_bytes, iface->space->info.name,
                   mmb_error_string(err));
}

/* One try: from the region the options name, or from the strategy. */
static mmbError try_allocate(mmbMemInterface *iface, size_t n, size_t alignment, unsigned flags,
                             mmbRegion *region, mmbAllocation **a) {
  if (region) return mmb__region_allocate(region, iface, n, alignment, flags, a);
  return iface->strategy->allocate(iface, n, alignment, flags, a);
}

/* The space's out-of-memory chain (mmb/cache.h), after a refusal: each step
   may free room, and the allocation is tried again after it. A thread runs
   one chain at a time: what a step allocates and is refused is refused. */
static _Thread_local bool in_chain;
static _Thread_local const mmbMemInterface *chain_iface;   /* the one refused */

bool mmb__oom_chain_runs_for(const mmbMemInterface *iface) {
  return in_chain && (!iface || chain_iface == iface);
}

static const mmbMemSpace *root_of(const mmbMemSpace *s) {
  while (s->parent) s = s->parent;
  return s;
}

/* Another interface whose bytes count against the same budgets: its
   space and the refused one's have one root. Only thread-safe ones: an
   interface without a lock belongs to the thread using it. */
static bool shares_budget(const mmbMemInterface *i, const void *refused) {
  const mmbMemInterface *r = refused;
  return i != r && mmb__iface_ts(i) && root_of(i->space) == root_of(r->space);
}

/* Step 1: what the other thread-safe interfaces drawing on the same
   budgets cache (up to 64 of them a round), and the refused interface's
   frees and region blocks. Its own free segments stay: its allocation
   gives them back itself when they and the room the limits leave hold
   what it asks (pool.c), and a segment given back for nothing would be
   asked for again by the next allocation that fits it. */
#define TRIM_AT_ONCE 64
static void trim_for(mmbMemInterface *iface) {
  mmbMemInterface *others[TRIM_AT_ONCE];
  size_t n = mmb__interfaces_hold(shares_budget, iface, others, TRIM_AT_ONCE);
  for (size_t k = 0; k < n; k++) {
    mmb__interface_give_back(others[k], 0);
    mmb__interface_drop(others[k]);
  }
  mmb__deferred_sweep(iface, false);
  mmb__region_cache_trim(iface);
}

/* Steps 1 to 4 after a refusal of n bytes by iface's space, `again` after
   each; the first answer that is not MMB_OUT_OF_MEMORY ends them. */
static mmbError chain_steps(mmbMemInterface *iface, size_t n, mmbError (*again)(void *ctx),
                            void *ctx) {
  mmbMemSpace *space = iface->space;
  atomic_fetch_add_explicit(&space->oom_rounds, 1, memory_order_relaxed);
  trim_for(iface);   /* 1: what the space's interfaces cache */
  mmbError err = again(ctx);
  for (int step = 0; err == MMB_OUT_OF_MEMORY && step < 2; step++)   /* 2, 3: the tile cache */
    if (mmb__space_oom_hook(space, step)) err = again(ctx);
  for (unsigned round = 0; err == MMB_OUT_OF_MEMORY && round < MMB_OOM_HANDLER_ROUNDS; round++) {
    if (!mmb__space_oom_handlers(space, n, round)) break;   /* 4: every handler gave up */
    err = again(ctx);
  }
  return err;
}

typedef struct attempt {
  mmbMemInterface *iface;
  size_t n, alignment;
  unsigned flags;
  mmbRegion *region;
  mmbAllocation **a;
} attempt;

static mmbError attempt_again(void *ctx) {
  const attempt *t = ctx;
  return try_allocate(t->iface, t->n, t->alignment, t->flags, t->region, t->a);
}

static mmbError oom_chain(mmbMemInterface *iface, size_t n, size_t alignment, unsigned flags,
                          mmbRegion *region, mmbAllocation **a) {
  if (in_chain) return MMB_OUT_OF_MEMORY;
  in_chain = true;
  chain_iface = iface;
  attempt t = {iface, n, alignment, flags, region, a};
  mmbError err = chain_steps(iface, n, attempt_again, &t);
  if (err == MMB_OUT_OF_MEMORY && iface->fallback && !region &&   /* 5: the fallback space */
      mmb__object_is(iface->fallback, MMB__KIND_INTERFACE)) {   /* (unless a caller destroyed it) */
    err = try_allocate(iface->fallback, n, alignment, flags, NULL, a);
    if (err == MMB_OK) atomic_fetch_add_explicit(&iface->space->fallback_bytes, n,
                                                 memory_order_relaxed);
  }
  in_chain = false;
  chain_iface = NULL;
  return err;
}

/* ---- mmb_region_alloc's way out of line ---------------------------------------- */

typedef struct bump_again {
  mmbRegion *r;
  size_t n, align;
  void **out;
} bump_again;

/* Again, after a step of the chain: a handler may have destroyed the
   region (MMB_INVALID_ARG), or opened a child of it (MMB_BUSY). */
static mmbError bump_again_run(void *ctx) {
  const bump_again *b = ctx;
  MMB__HANDLE(b->r, MMB__KIND_REGION, "mmb_region_alloc", "region");
  return mmb__region_bump("mmb_region_alloc", b->r, b->n, b->align, b->out);
}

/* Parenthesised: region.h makes mmb_region_alloc(...) its inline fast path.
   A new block the space refuses runs its out-of-memory chain, steps 1 to 4,
   as mmb_allocate's allocations do (no fallback: a region's blocks are its
   interface's). */
mmbError (mmb_region_alloc)(mmbRegion *region, size_t n_bytes, size_t alignment, void **out_ptr) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(region, MMB__KIND_REGION, __func__, "region");
  MMB__ARG(!out_ptr, __func__, "out_ptr is NULL");
  mmbError err = mmb__region_bump(__func__, region, n_bytes, alignment, out_ptr);
  if (MMB__LIKELY(err != MMB_OUT_OF_MEMORY)) return err;
  mmbMemInterface *iface = mmb__region_interface(region);
  if (!in_chain) {   /* (inside one, refused at once) */
    in_chain = true;
    chain_iface = iface;
    err = chain_steps(iface, n_bytes, bump_again_run,
                      &(bump_again){region, n_bytes, alignment, out_ptr});
    in_chain = false;
    chain_iface = NULL;
  }
  if (err == MMB_OUT_OF_MEMORY) mmb__count_failure(iface);
  return err;
}

mmbError mmb__allocate(mmbMemInterface *iface, size_t n_bytes, const mmbAllocateOptions *opts,
                       mmbAllocation **out_allocation) {
  size_t alignment = 0;
  mmbError err = check_request(n_bytes, opts, &alignment);
  if (MMB__UNLIKELY(err != MMB_OK)) return err;
  unsigned flags = opts ? opts->flags : 0;
  mmbRegion *region = opts ? opts->region : NULL;
  mmbAllocation *a;
  mmb__deferred_poll(iface);
  if (region) MMB__HANDLE(region, MMB__KIND_REGION, "mmb_allocate_opts", "opts->region");
  err = try_allocate(iface, n_bytes, alignment, flags, region, &a);
  if (MMB__UNLIKELY(err == MMB_OUT_OF_MEMORY))
    err = oom_chain(iface, n_bytes, alignment, flags, region, &a);
  if (region) {   /* the region's blocks are what the stats and trace see */
    if (err == MMB_OUT_OF_MEMORY) mmb__count_failure(iface);
    if (err != MMB_OK) return err;
    *out_allocation = mmb__handle_live(a);
    return MMB_OK;
  }
  if (MMB__UNLIKELY(err != MMB_OK)) return allocation_failed(iface, n_bytes, err);
  hand_out(a->interface, a, out_allocation);
  return MMB_OK;
}

mmbError mmb_allocate_opts(size_t n_bytes, mmbMemInterface *iface, const mmbAllocateOptions *opts,
                           mmbAllocation **out_allocation) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, __func__, "interface");
  MMB__ARG(!out_allocation, __func__, "out_allocation is NULL");
  return mmb__allocate(iface, n_bytes, opts, out_allocation);
}

void *mmb_allocation_ptr(const mmbAllocation *allocation) {
  const mmbAllocation *a = mmb__handle_open(allocation);
  return a ? a->ptr : NULL;
}

size_t mmb_allocation_size(const mmbAllocation *allocation) {
  const mmbAllocation *a = mmb__handle_open(allocation);
  return a ? a->size : 0;
}

mmbError mmb_allocation_space(const mmbAllocation *allocation, mmbMemSpace **out_space) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_space, __func__, "out_space is NULL");
  const mmbAllocation *a = mmb__handle_open(allocation);
  MMB__ARG(!a, __func__, "%p is not a live allocation", (const void *)allocation);
  *out_space = a->interface->space;
  return MMB_OK;
}

mmbError mmb_allocation_get_interface(const mmbAllocation *allocation,
                                      mmbMemInterface **out_interface) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_interface, __func__, "out_interface is NULL");
  const mmbAllocation *a = mmb__handle_open(allocation);
  MMB__ARG(!a, __func__, "%p is not a live allocation", (const void *)allocation);
  *out_interface = a->interface;
  return MMB_OK;
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_allocation_interface(const mmbAllocation *allocation,
                                  mmbMemInterface **out_interface) {
  return mmb_allocation_get_interface(allocation, out_interface);
}
