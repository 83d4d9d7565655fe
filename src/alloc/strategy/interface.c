/* Interfaces: a space + a provider instance + a strategy; their creation,
   destruction and teardown at finalize. The list of live interfaces is
   space.c's, where the statistics read it too. */
#include "alloc/strategy/strategy.h"

static mmbError resolve_strategy(mmbStrategyType type, const mmb__strategy_ops **out) {
  switch (type) {
    case MMB_STRATEGY_DEFAULT:
    case MMB_STRATEGY_BASIC: *out = &mmb__basic_strategy; return MMB_OK;
    case MMB_STRATEGY_POOL: *out = &mmb__pool_strategy; return MMB_OK;
  }
  return mmb__fail(MMB_INVALID_ARG, "mmb_request_interface", "unknown strategy %d", (int)type);
}

static mmbError resolve_provider(mmbMemSpace *space, mmbProviderType type,
                                 mmbMemInterface *iface) {
  if (type == MMB_PROVIDER_DEFAULT) type = mmb__provider_default(space);
  if (type == MMB_PROVIDER_DEFAULT)
    return mmb__fail(MMB_INVALID_ARG, "mmb_request_interface", "space %s has no default "
                     "provider (a device-only layer): register one of yours that serves it",
                     space->info.name);
  const mmbProviderOps *ops = mmb__provider_lookup(type);
  if (!ops)
    return mmb__fail(type == MMB_PROVIDER_CUDA ? MMB_UNAVAILABLE : MMB_INVALID_ARG,
                     "mmb_request_interface", "no provider of type %d", (int)type);
  if (!mmb__provider_serves(ops, type, space))
    return mmb__fail(MMB_UNSUPPORTED, "mmb_request_interface",
                     "provider '%s' cannot serve space %s", ops->name, space->info.name);
  iface->provider = (mmb__provider){.ops = ops, .type = type};
  return MMB_OK;
}

static mmbError provider_start(mmbMemInterface *iface, const void *options) {
  const mmbProviderOps *ops = iface->provider.ops;
  if (ops->state_size && !(iface->provider.state = mmb__calloc(1, ops->state_size)))
    return MMB_OUT_OF_MEMORY;
  const mmbSpaceInfo *si = &iface->space->info;
  mmbProviderTarget target = {si->layer, si->context, si->numa_node, si->device, options};
  mmbError err = ops->init ? ops->init(iface->provider.state, &target) : MMB_OK;
  if (err != MMB_OK) mmb__free(iface->provider.state);
  return err;
}

static void provider_stop(mmbMemInterface *iface) {
  if (iface->provider.ops->finalize) iface->provider.ops->finalize(iface->provider.state);
  mmb__free(iface->provider.state);
}

mmbError mmb_request_interface(mmbMemSpace *space, const mmbMemInterfaceConfig *cfg,
                               mmbMemInterface **out_interface) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, __func__, "space");
  MMB__ARG(!out_interface, __func__, "out_interface is NULL");
  /* no config: a registered space's own (mmb_register_memory), else defaults */
  mmbMemInterfaceConfig c = cfg ? *cfg : space->interface_cfg;
  MMB__ARG(c.flags & ~MMB_INTERFACE_THREAD_SAFE, __func__, "unknown flags 0x%x", c.flags);
  MMB__ARG(c.copy_threads > 64, __func__, "copy_threads %u: at most 64", c.copy_threads);
  if (c.fallback) {
    MMB__HANDLE(c.fallback, MMB__KIND_SPACE, __func__, "cfg->fallback");
    MMB__ARG(c.fallback == space, __func__, "the fallback is the interface's own space");
  }
  mmbMemInterface *fallback = NULL;
  if (c.fallback) {   /* the same interface on the fallback space, with its default provider */
    mmbMemInterfaceConfig fc = c;
    fc.fallback = NULL;
    fc.provider = MMB_PROVIDER_DEFAULT;
    fc.provider_options = NULL;   /* (they were for the provider asked for) */
    mmbError ferr = mmb_request_interface(c.fallback, &fc, &fallback);
    if (ferr != MMB_OK) return ferr;
  }
  mmbMemInterface *iface = mmb__object_new(MMB__KIND_INTERFACE, sizeof *iface);
  if (!iface) {
    if (fallback) MMB__MUST(mmb_interface_destroy(fallback));
    return MMB_OUT_OF_MEMORY;
  }
  iface->fallback = fallback;
  iface->space = space;
  iface->flags = c.flags;
  iface->release_threshold = c.release_threshold;
  iface->copy_threads = c.copy_threads;
  mmbError err = resolve_strategy(c.strategy, &iface->strategy);
  if (err == MMB_OK) err = resolve_provider(space, c.provider, iface);
  if (err == MMB_OK) err = provider_start(iface, c.provider_options);
  if (err != MMB_OK) {
    mmb__object_free(iface);
    if (fallback) MMB__MUST(mmb_interface_destroy(fallback));
    return err;
  }
  /* adaptive: held for a batch of list operations, so a waiter spins a
     little before it sleeps (a futex sleep costs more than the batch) */
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
  pthread_mutex_init(&iface->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  if (iface->strategy->init && (err = iface->strategy->init(iface)) != MMB_OK) {
    pthread_mutex_destroy(&iface->lock);
    provider_stop(iface);
    mmb__object_free(iface);
    if (fallback) MMB__MUST(mmb_interface_destroy(fallback));
    return err;
  }
  atomic_fetch_add(&space->n_users, 1);
  mmb__interfaces_link(iface);
  *out_interface = iface;
  return MMB_OK;
}

static void interface_teardown(mmbMemInterface *iface) {
  mmb__interface_unheld(iface);   /* unlinked: no new hold; the ones taken are short */
  mmb__deferred_sweep(iface, true);
  mmb__regions_teardown(iface);
  mmb__space_retire_interface(iface);
  if (iface->strategy->finalize) iface->strategy->finalize(iface);
  mmb__handle_cache_flush(&iface->handles);
  mmb__ptr_table_free(&iface->ptrs);
  provider_stop(iface);
  atomic_fetch_sub(&iface->space->n_users, 1);
  pthread_mutex_destroy(&iface->lock);
  mmb__object_free(iface);
}

static unsigned long long live_allocations(const mmbMemInterface *iface) {
  mmb__merged m = {0};
  mmb__merge_interface(&m, iface);
  return m.n_allocs - m.n_frees;
}

mmbError mmb_interface_destroy(mmbMemInterface *iface) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, __func__, "interface");
  if (mmb__oom_chain_runs_for(iface))
    return mmb__fail(MMB_BUSY, __func__, "an allocation from it is in its space's "
                     "out-of-memory chain (called from a handler)");
  size_t regions = atomic_load(&iface->n_regions);
  if (regions) return mmb__fail(MMB_BUSY, __func__, "%zu regions still live", regions);
  size_t wrapped = atomic_load(&iface->n_wrapped);
  if (wrapped) return mmb__fail(MMB_BUSY, __func__, "%zu wrapped arrays still live", wrapped);
  mmb__deferred_sweep(iface, true);   /* freed, waiting on queues: wait for them */
  mmb__iface_lock(iface);
  unsigned long long live = live_allocations(iface);
  mmb__iface_unlock(iface);
  if (live) return mmb__fail(MMB_BUSY, __func__, "%llu allocations still live", live);
  if (iface->fallback && mmb__object_is(iface->fallback, MMB__KIND_INTERFACE)) {
    /* what it served must be gone too (a caller may have destroyed it already) */
    mmbError err = mmb_interface_destroy(iface->fallback);
    if (err != MMB_OK)
      return mmb__fail(err, __func__, "allocations served by the fallback space are live");
    iface->fallback = NULL;
  }
  mmb__interfaces_unlink(iface);
  interface_teardown(iface);
  return MMB_OK;
}

mmbError mmb_interface_get_space(const mmbMemInterface *iface, mmbMemSpace **out_space) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, __func__, "interface");
  MMB__ARG(!out_space, __func__, "out_space is NULL");
  *out_space = iface->space;
  return MMB_OK;
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_interface_space(const mmbMemInterface *interface, mmbMemSpace **out_space) {
  return mmb_interface_get_space(interface, out_space);
}

mmbError mmb_interface_get_provider(const mmbMemInterface *iface, mmbProviderType *out_type) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, __func__, "interface");
  MMB__ARG(!out_type, __func__, "out_type is NULL");
  *out_type = iface->provider.type;
  return MMB_OK;
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_interface_provider(const mmbMemInterface *interface, mmbProviderType *out_type) {
  return mmb_interface_get_provider(interface, out_type);
}

mmbError mmb_interface_trim(mmbMemInterface *iface, size_t min_bytes_to_keep) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, __func__, "interface");
  mmb__interface_give_back(iface, min_bytes_to_keep);
  return MMB_OK;
}

static void release_leaked(mmbAllocation *a) {
  mmb__log(MMB_LOG_WARN, "finalize: releasing a live allocation of %zu bytes from %s", a->size,
           a->interface->space->info.name);
  mmb__handle_set(a, MMB__HANDLE_FREEING);
  mmb__allocation_release(a);
}

void mmb__interfaces_finalize(void) {
  mmb__registry_for_each_live(release_leaked);
  /* a teardown may read the list (stats): it runs with the list unlocked */
  for (mmbMemInterface *iface; (iface = mmb__interfaces_pop());) interface_teardown(iface);
}
