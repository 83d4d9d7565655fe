/* Statistics: the hot paths count on their owning structure (an interface,
   or a pool's per-thread cache) with plain increments; reads merge them.

   What is exact and what is sampled:
   - used_current, n_allocs, n_frees, the reserved side and the provider
     trips are exact, for interfaces and for spaces;
   - an interface's used_high is exact when one owner did the counting (any
     interface without MMB_INTERFACE_THREAD_SAFE, or a thread-safe one used by
     one thread); with several threads it is the largest of the sum seen at a
     read or a thread-cache exchange and each thread's own peak;
   - a space's used_high is the largest of its interfaces' used_high, and of
     the sum over its interfaces seen at every read and every provider trip:
     exact for a space served by one interface at a time. */
#include "alloc/observe/observe.h"

void mmb__merge_counters(mmb__merged *acc, const mmb__counters *c) {
  unsigned long long na = MMB__GET(c->n_allocs), nf = MMB__GET(c->n_frees);
  if (!na && !nf) return;
  acc->used += MMB__GET(c->used);   /* modulo 2^64: a thread may free what another took */
  acc->n_allocs += na;
  acc->n_frees += nf;
  acc->high_single = MMB__GET(c->used_high);
  acc->owners++;
}

void mmb__merge_interface(mmb__merged *acc, const mmbMemInterface *iface) {
  mmb__merge_counters(acc, &iface->c);
  if (iface->strategy->merge) iface->strategy->merge(iface, acc);
}

static size_t merged_high(const mmb__merged *m, size_t sampled) {
  size_t high = sampled > m->used ? sampled : m->used;
  if (m->owners == 1 && m->high_single > high) high = m->high_single;
  return high;
}

/* Fills m with the interface's counters; returns its used_high. */
static size_t interface_merge(const mmbMemInterface *iface, mmb__merged *m) {
  *m = (mmb__merged){0};
  mmb__merge_interface(m, iface);
  return merged_high(m, MMB__GET(iface->used_high_sampled));
}

mmbError mmb_interface_get_stats(const mmbMemInterface *iface, mmbStats *out) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, __func__, "interface");
  MMB__ARG(!out, __func__, "out is NULL");
  mmbMemInterface *i = (mmbMemInterface *)iface;   /* the lock is not part of its value */
  mmb__merged m;
  mmb__iface_lock(i);
  size_t high = interface_merge(i, &m);
  mmbStats st = {
      .used_current = m.used,
      .used_high = high,
      .reserved_current = MMB__GET(i->reserved),
      .reserved_high = MMB__GET(i->reserved_high),
      .n_allocs = m.n_allocs,
      .n_frees = m.n_frees,
      .n_provider_allocs = MMB__GET(i->n_provider_allocs),
      .n_provider_frees = MMB__GET(i->n_provider_frees),
      .n_failed = MMB__GET(i->n_failed),
  };
  mmb__raise_high(&i->used_high_sampled, st.used_high);
  mmb__iface_unlock(i);
  *out = st;
  return MMB_OK;
}

mmbError mmb_interface_reset_high(mmbMemInterface *iface) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(iface, MMB__KIND_INTERFACE, __func__, "interface");
  mmb__iface_lock(iface);
  mmb__merged m;
  size_t high = interface_merge(iface, &m);
  for (mmbMemSpace *s = iface->space; s; s = s->parent)   /* the spaces keep the peak */
    mmb__raise_high(&s->c.used_high, high);
  MMB__SET(iface->c.used_high, MMB__GET(iface->c.used));
  if (iface->strategy->reset_high) iface->strategy->reset_high(iface);
  MMB__SET(iface->used_high_sampled, m.used);
  MMB__SET(iface->reserved_high, MMB__GET(iface->reserved));
  mmb__iface_unlock(iface);
  return MMB_OK;
}

/* ---- spaces ------------------------------------------------------------- */

typedef struct space_merge {
  const mmbMemSpace *space;
  mmb__merged m;
  size_t high;   /* the largest used_high of one interface */
} space_merge;

static void add_interface(mmbMemInterface *iface, void *arg) {
  space_merge *sm = arg;
  if (!mmb__space_draws_on(iface->space, sm->space)) return;
  mmb__merged one;
  size_t high = interface_merge(iface, &one);
  sm->m.used += one.used;
  sm->m.n_allocs += one.n_allocs;
  sm->m.n_frees += one.n_frees;
  if (high > sm->high) sm->high = high;
}

mmbError mmb_space_get_stats(const mmbMemSpace *space, mmbStats *out) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, __func__, "space");
  MMB__ARG(!out, __func__, "out is NULL");
  mmb__space_stats(space, out);
  return MMB_OK;
}

void mmb__space_stats(const mmbMemSpace *space, mmbStats *out) {
  mmbMemSpace *s = (mmbMemSpace *)space;   /* reading raises the sampled high */
  space_merge sm = {.space = space};
  mmb__interfaces_for_each(add_interface, &sm);
  const mmb__space_counters *c = &space->c;
  size_t high = sm.high > sm.m.used ? sm.high : sm.m.used;
  mmb__raise_high(&s->c.used_high, high);
  *out = (mmbStats){
      .used_current = sm.m.used,
      .used_high = atomic_load(&c->used_high),
      .reserved_current = atomic_load(&c->reserved),
      .reserved_high = atomic_load(&c->reserved_high),
      .n_allocs = sm.m.n_allocs + atomic_load(&c->retired_allocs),
      .n_frees = sm.m.n_frees + atomic_load(&c->retired_frees),
      .n_provider_allocs = atomic_load(&c->n_provider_allocs),
      .n_provider_frees = atomic_load(&c->n_provider_frees),
      .n_failed = atomic_load(&c->n_failed),
  };
}

#define MAX_CHAIN 16

typedef struct chain_sample {
  mmbMemSpace *level[MAX_CHAIN];
  size_t used[MAX_CHAIN];
  int n;
} chain_sample;

static void add_to_chain(mmbMemInterface *iface, void *arg) {
  chain_sample *cs = arg;
  mmb__merged m = {0};
  mmb__merge_interface(&m, iface);
  for (int k = 0; k < cs->n; k++)
    if (mmb__space_draws_on(iface->space, cs->level[k])) cs->used[k] += m.used;
}

/* Only spaces that several interfaces (or requested spaces) draw on need a
   sample: for the others, the one interface's own high is exact. */
void mmb__space_sample_used(mmbMemSpace *space) {
  bool shared = false;
  for (mmbMemSpace *s = space; s && s->parent; s = s->parent)
    shared |= atomic_load_explicit(&s->n_users, memory_order_relaxed) > 1;
  if (!shared) return;
  chain_sample cs = {.n = 0};
  for (mmbMemSpace *s = space; s && cs.n < MAX_CHAIN; s = s->parent) cs.level[cs.n++] = s;
  mmb__interfaces_for_each(add_to_chain, &cs);
  for (int k = 0; k < cs.n; k++) mmb__raise_high(&cs.level[k]->c.used_high, cs.used[k]);
}

void mmb__space_retire_interface(const mmbMemInterface *iface) {
  mmb__merged m;
  size_t high = interface_merge(iface, &m);
  for (mmbMemSpace *s = iface->space; s; s = s->parent) {
    atomic_fetch_add(&s->c.retired_allocs, m.n_allocs);
    atomic_fetch_add(&s->c.retired_frees, m.n_frees);
    mmb__raise_high(&s->c.used_high, high);
  }
}
