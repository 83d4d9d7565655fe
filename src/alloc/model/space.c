/* Spaces: the discovered ones, the ones requested on them, their limits
   (MMB_LIMIT_<LAYER>, size_limit) and their counters; and the list of live
   interfaces that draw on them (interface.c adds and removes, the
   statistics and finalize read it). */
#include "alloc/model/model.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

#define MAX_DISCOVERED 256

/* One hidden root per layer carries MMB_LIMIT_<LAYER> and the layer's totals. */
static mmbMemSpace layer_roots[MMB__LAYERS];
static mmbMemSpace *discovered[MAX_DISCOVERED];
static size_t n_discovered;
static pthread_mutex_t requested_lock = PTHREAD_MUTEX_INITIALIZER;
static mmbMemSpace *requested;   /* list of spaces made by mmb_request_space */
_Atomic uint64_t mmb__note_epoch = 1;   /* a zeroed note is stale */
/* mmb_register_memory's spaces, by layer and resolved context (CPU, GPU_CUDA);
   each is also on the requested list. Under requested_lock. */
static mmbMemSpace *registered[MMB__LAYERS][2];

static const char *const layer_names[MMB_MEMLAYER_MAX] = {"DRAM", "HBM", "NVDIMM", "GDRAM",
                                                              "STORAGE"};
/* The layers of the user's (mmb_layer_register), numbered from
   MMB_MEMLAYER_MAX; a layer is known once n_user_layers counts it. */
static struct {
  char name[MMB_LAYER_NAME_MAX];
  mmbLayerProperties props;
} user_layers[MMB_USER_LAYERS_MAX];
static _Atomic unsigned n_user_layers;
static pthread_mutex_t layers_lock = PTHREAD_MUTEX_INITIALIZER;

bool mmb__layer_known(mmbMemLayer layer) {
  return (unsigned)layer < MMB_MEMLAYER_MAX + atomic_load_explicit(&n_user_layers,
                                                                   memory_order_acquire);
}

int mmb__layer_served_as(mmbMemLayer layer) {
  if ((unsigned)layer < MMB_MEMLAYER_MAX) return (int)layer;
  if (!mmb__layer_known(layer)) return -1;
  const mmbLayerProperties *p = &user_layers[layer - MMB_MEMLAYER_MAX].props;
  return p->device_only ? -1 : (int)p->backing;
}

const char *mmb_layer_name(mmbMemLayer layer) {
  if ((unsigned)layer < MMB_MEMLAYER_MAX) return layer_names[layer];
  return mmb__layer_known(layer) ? user_layers[layer - MMB_MEMLAYER_MAX].name : "unknown";
}

bool mmb__layer_lookup(const char *name, mmbMemLayer *out) {
  unsigned n = MMB_MEMLAYER_MAX + atomic_load_explicit(&n_user_layers, memory_order_acquire);
  for (unsigned l = 0; l < n; l++)
    if (!strcasecmp(name, mmb_layer_name((mmbMemLayer)l))) {
      *out = (mmbMemLayer)l;
      return true;
    }
  return false;
}

mmbError mmb_layer_find(const char *name, mmbMemLayer *out_layer) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!name || !out_layer, __func__, "NULL argument");
  MMB__ARG(!mmb__layer_lookup(name, out_layer), __func__, "no layer named \"%s\"", name);
  return MMB_OK;
}

/* A layer's root: its limit from MMB_LIMIT_<lname>. */
static mmbError root_init(mmbMemLayer l, const char *lname) {
  mmbMemSpace *root = &layer_roots[l];
  memset(root, 0, sizeof *root);
  root->info.layer = l;
  root->own_limit = SIZE_MAX;
  char name[48];
  snprintf(name, sizeof name, "MMB_LIMIT_%s", lname);
  const char *env = getenv(name);
  if (env && !mmb__parse_size(env, &root->own_limit)) {
    mmb__log(MMB_LOG_ERROR, "%s='%s' is not a size (expected bytes with an optional "
             "K, M, G or T suffix, e.g. 512M or 2G)", name, env);
    return MMB_INVALID_ARG;
  }
  if (env && root->own_limit == 0)
    mmb__log(MMB_LOG_WARN, "%s=0: every allocation in %s will be refused", name, lname);
  else if (env)
    mmb__log(MMB_LOG_INFO, "%s caps layer %s at %zu bytes", name, lname, root->own_limit);
  return MMB_OK;
}

mmbError mmb__layer_add(const char *func, const char *name, const mmbLayerProperties *props,
                        mmbMemLayer *out) {
  size_t len = strlen(name);
  MMB__ARG(len == 0 || len >= MMB_LAYER_NAME_MAX, func, "a layer's name has 1 to %d bytes",
           MMB_LAYER_NAME_MAX - 1);
  for (size_t i = 0; i < len; i++)
    MMB__ARG(!isalnum((unsigned char)name[i]) && name[i] != '_', func,
             "layer name \"%s\": letters, digits and '_' only (it names MMB_LIMIT_<name>)", name);
  MMB__ARG(props->backing != MMB_DRAM && props->backing != MMB_HBM &&
           props->backing != MMB_NVDIMM, func, "backing layer %d is not DRAM, HBM or NVDIMM",
           (int)props->backing);
  MMB__ARG(props->numa_node < 0, func, "numa_node %d: indices are 0-based", props->numa_node);
  pthread_mutex_lock(&layers_lock);
  mmbMemLayer taken;
  unsigned i = atomic_load(&n_user_layers);
  mmbError err = MMB_OK;
  if (mmb__layer_lookup(name, &taken))
    err = mmb__fail(MMB_INVALID_ARG, func, "a layer named %s exists already", mmb_layer_name(taken));
  else if (i == MMB_USER_LAYERS_MAX)
    err = mmb__fail(MMB_OUT_OF_MEMORY, func, "already %d layers of the user's", MMB_USER_LAYERS_MAX);
  if (err == MMB_OK) {
    mmbMemLayer l = (mmbMemLayer)(MMB_MEMLAYER_MAX + i);
    snprintf(user_layers[i].name, sizeof user_layers[i].name, "%s", name);
    user_layers[i].props = *props;
    if ((err = root_init(l, name)) == MMB_OK) {
      memset(registered[l], 0, sizeof registered[l]);
      atomic_store_explicit(&n_user_layers, i + 1, memory_order_release);
      *out = l;
    }
  }
  pthread_mutex_unlock(&layers_lock);
  return err;
}

void mmb__layer_remove_last(void) {
  pthread_mutex_lock(&layers_lock);
  unsigned n = atomic_load(&n_user_layers);
  if (n) atomic_store(&n_user_layers, n - 1);
  pthread_mutex_unlock(&layers_lock);
}

const char *mmb_context_name(mmbExecutionContext ctx) {
  switch (ctx) {
    case MMB_EXECUTION_CONTEXT_DEFAULT: return "default";
    case MMB_CPU: return "CPU";
    case MMB_GPU_CUDA: return "GPU_CUDA";
  }
  return "unknown";
}


mmbError mmb__spaces_init(void) {
  atomic_store(&n_user_layers, 0);
  for (int l = 0; l < MMB_MEMLAYER_MAX; l++) {
    mmbError err = root_init((mmbMemLayer)l, layer_names[l]);
    if (err != MMB_OK) return err;
  }
  n_discovered = 0;
  return MMB_OK;
}

mmbError mmb__space_add(const mmbSpaceInfo *info, mmbMemSpace *parent, mmbMemSpace **out) {
  if (n_discovered == MAX_DISCOVERED) return MMB_OUT_OF_MEMORY;
  mmbMemSpace *s = mmb__object_new(MMB__KIND_SPACE, sizeof *s);
  if (!s) return MMB_OUT_OF_MEMORY;
  s->info = *info;
  s->info.discovered = true;
  s->served_as = mmb__layer_served_as(info->layer);
  s->own_limit = SIZE_MAX;
  s->parent = parent ? parent : &layer_roots[info->layer];
  int index = 0;
  for (size_t i = 0; i < n_discovered; i++)
    index += discovered[i]->info.layer == info->layer && discovered[i]->info.context == info->context;
  s->info.index = index;
  discovered[n_discovered++] = s;
  if (out) *out = s;
  return MMB_OK;
}

static void release_requested_all(void) {
  memset(registered, 0, sizeof registered);
  while (requested) {
    mmbMemSpace *s = requested;
    requested = s->next;
    mmb__object_free(s);
  }
}

void mmb__spaces_finalize(void) {
  release_requested_all();
  for (size_t i = 0; i < n_discovered; i++) mmb__object_free(discovered[i]);
  n_discovered = 0;
}

static size_t own_cap(const mmbMemSpace *s) {
  return mmb__min(s->own_limit, s->info.capacity ? s->info.capacity : SIZE_MAX);
}

size_t mmb__space_limit(const mmbMemSpace *space) {
  size_t limit = SIZE_MAX;
  for (const mmbMemSpace *s = space; s; s = s->parent) limit = mmb__min(limit, own_cap(s));
  return limit;
}

void mmb__raise_high(_Atomic size_t *high, size_t value) {
  size_t h = atomic_load_explicit(high, memory_order_relaxed);
  while (value > h &&
         !atomic_compare_exchange_weak_explicit(high, &h, value, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
}

/* Reserves on every level first; only a reservation that took everywhere is
   counted, so a refusal leaves the chain exactly as it was. */
bool mmb__space_reserve(mmbMemSpace *space, size_t n) {
  for (mmbMemSpace *s = space; s; s = s->parent) {
    size_t cap = own_cap(s), cur = atomic_load_explicit(&s->c.reserved, memory_order_relaxed);
    size_t next;
    do {
      if (mmb__add_overflows(cur, n, &next) || next > cap) {
        for (mmbMemSpace *u = space; u != s; u = u->parent)
          atomic_fetch_sub_explicit(&u->c.reserved, n, memory_order_relaxed);
        return false;
      }
    } while (!atomic_compare_exchange_weak_explicit(&s->c.reserved, &cur, next,
                                                    memory_order_relaxed, memory_order_relaxed));
  }
  return true;
}

void mmb__space_unreserve(mmbMemSpace *space, size_t n) {
  for (mmbMemSpace *s = space; s; s = s->parent)
    atomic_fetch_sub_explicit(&s->c.reserved, n, memory_order_relaxed);
}

size_t mmb__space_room(const mmbMemSpace *space) {
  size_t room = SIZE_MAX;
  for (const mmbMemSpace *s = space; s; s = s->parent) {
    size_t cap = own_cap(s), cur = atomic_load_explicit(&s->c.reserved, memory_order_relaxed);
    room = mmb__min(room, cur < cap ? cap - cur : 0);
  }
  return room;
}

void mmb__space_count_trip(mmbMemSpace *space, bool alloc) {
  for (mmbMemSpace *s = space; s; s = s->parent) {
    if (alloc) {
      mmb__raise_high(&s->c.reserved_high, atomic_load_explicit(&s->c.reserved, memory_order_relaxed));
      atomic_fetch_add_explicit(&s->c.n_provider_allocs, 1, memory_order_relaxed);
    } else {
      atomic_fetch_add_explicit(&s->c.n_provider_frees, 1, memory_order_relaxed);
    }
  }
}

void mmb__space_count_failure(mmbMemSpace *space) {
  for (mmbMemSpace *s = space; s; s = s->parent)
    atomic_fetch_add_explicit(&s->c.n_failed, 1, memory_order_relaxed);
}

/* ---- public API --------------------------------------------------------- */

static mmbExecutionContext resolve_context(mmbMemLayer layer, mmbExecutionContext ctx) {
  if (ctx != MMB_EXECUTION_CONTEXT_DEFAULT) return ctx;
  return layer == MMB_GDRAM ? MMB_GPU_CUDA : MMB_CPU;
}

mmbMemSpace *mmb__space_find_discovered(mmbMemLayer layer, mmbExecutionContext ctx, int index) {
  for (size_t i = 0; i < n_discovered; i++) {
    mmbMemSpace *s = discovered[i];
    if (s->info.layer == layer && s->info.context == ctx && s->info.index == index) return s;
  }
  return NULL;
}

static mmbError (*_Atomic release_hook)(mmbMemSpace *space, bool gone);

void mmb__space_set_release_hook(mmbError (*hook)(mmbMemSpace *space, bool gone)) {
  atomic_store(&release_hook, hook);
}

static mmbError release_hook_call(mmbMemSpace *space, bool gone) {
  mmbError (*hook)(mmbMemSpace *, bool) = atomic_load(&release_hook);
  return hook ? hook(space, gone) : MMB_OK;
}

/* ---- the out-of-memory chain's handlers ------------------------------------ */

static bool (*_Atomic oom_hook)(mmbMemSpace *space, int step);
static pthread_mutex_t handlers_lock = PTHREAD_MUTEX_INITIALIZER;

void mmb__space_set_oom_hook(bool (*hook)(mmbMemSpace *space, int step)) {
  atomic_store(&oom_hook, hook);
}

bool mmb__space_oom_hook(mmbMemSpace *space, int step) {
  bool (*hook)(mmbMemSpace *, int) = atomic_load(&oom_hook);
  return hook && hook(space, step);
}

bool mmb__space_oom_handlers(mmbMemSpace *space, size_t need, unsigned attempt) {
  pthread_mutex_lock(&handlers_lock);   /* a copy: a handler may add or remove */
  unsigned n = space->n_oom;
  __typeof__(space->oom) h;
  memcpy(h, space->oom, sizeof h);
  pthread_mutex_unlock(&handlers_lock);
  bool retry = false;
  for (unsigned i = 0; i < n; i++) {
    atomic_fetch_add_explicit(&space->handler_calls, 1, memory_order_relaxed);
    retry |= h[i].fn(space, need, attempt, h[i].arg) == MMB_OOM_RETRY;
  }
  return retry;
}

/* The handler's place in the space's list, or -1 (handlers_lock held). */
static int handler_at(const mmbMemSpace *space, mmbOomHandler fn, void *arg) {
  for (unsigned i = 0; i < space->n_oom; i++)
    if (space->oom[i].fn == fn && space->oom[i].arg == arg) return (int)i;
  return -1;
}

mmbError mmb_space_add_oom_handler(mmbMemSpace *space, mmbOomHandler fn, void *arg) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, __func__, "space");
  MMB__ARG(!fn, __func__, "fn is NULL");
  const unsigned room = sizeof space->oom / sizeof *space->oom;
  mmbError err = MMB_OK;
  pthread_mutex_lock(&handlers_lock);
  if (handler_at(space, fn, arg) >= 0) err = MMB_INVALID_ARG;
  else if (space->n_oom == room) err = MMB_OUT_OF_MEMORY;
  else {
    space->oom[space->n_oom].fn = fn;
    space->oom[space->n_oom].arg = arg;
    space->n_oom++;
  }
  pthread_mutex_unlock(&handlers_lock);
  if (err == MMB_INVALID_ARG) return mmb__fail(err, __func__, "that handler is already added");
  if (err != MMB_OK) return mmb__fail(err, __func__, "%s has %u handlers", space->info.name, room);
  return MMB_OK;
}

mmbError mmb_space_remove_oom_handler(mmbMemSpace *space, mmbOomHandler fn, void *arg) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, __func__, "space");
  MMB__ARG(!fn, __func__, "fn is NULL");
  pthread_mutex_lock(&handlers_lock);
  int i = handler_at(space, fn, arg);
  if (i >= 0) {
    memmove(&space->oom[i], &space->oom[i + 1], (space->n_oom - (unsigned)i - 1) * sizeof *space->oom);
    space->n_oom--;
  }
  pthread_mutex_unlock(&handlers_lock);
  MMB__ARG(i < 0, __func__, "that handler was not added");
  return MMB_OK;
}

static mmbError check_space_config(const char *func, const mmbMemSpaceConfig *cfg) {
  MMB__ARG(cfg->numa_node < 0 || cfg->device < 0, func,
           "numa_node %d / device %d: indices are 0-based", cfg->numa_node, cfg->device);
  MMB__ARG(cfg->name && (!*cfg->name || strlen(cfg->name) >= sizeof(mmbSpaceInfo){0}.name),
           func, "a space's name has 1 to %zu bytes", sizeof(mmbSpaceInfo){0}.name - 1);
  return MMB_OK;
}

/* A new space drawing on the configured tier; the caller links it. */
static mmbError new_space(const char *func, mmbMemLayer layer, mmbExecutionContext ctx,
                          const mmbMemSpaceConfig *cfg, mmbMemSpace **out) {
  int index = layer == MMB_GDRAM ? cfg->device : cfg->numa_node;
  mmbMemSpace *base = mmb__space_find_discovered(layer, ctx, index);
  if (!base)
    return mmb__fail(MMB_UNAVAILABLE, func, "no %s space #%d for %s on this node",
                     mmb_layer_name(layer), index, mmb_context_name(ctx));
  mmbMemSpace *s = mmb__object_new(MMB__KIND_SPACE, sizeof *s);
  if (!s) return MMB_OUT_OF_MEMORY;
  s->info = base->info;
  s->served_as = base->served_as;
  s->info.discovered = false;
  s->info.capacity = base->info.capacity;
  s->own_limit = cfg->size_limit ? cfg->size_limit : SIZE_MAX;
  s->parent = base;
  static _Atomic unsigned long named;   /* default names are numbered: one track each */
  if (cfg->name) snprintf(s->info.name, sizeof s->info.name, "%s", cfg->name);
  else snprintf(s->info.name, sizeof s->info.name, "%.24s, limited %lu", base->info.name,
                atomic_fetch_add(&named, 1) + 1);
  atomic_fetch_add(&base->n_users, 1);
  *out = s;
  return MMB_OK;
}

static void link_requested_locked(mmbMemSpace *s) {
  s->next = requested;
  requested = s;
}

/* Unlinks an unused requested space, for space_free once the lock is let
   go; MMB_BUSY if it is used. */
static mmbError unlink_space_locked(const char *func, mmbMemSpace *space) {
  mmbMemSpace **link = &requested;
  while (*link && *link != space) link = &(*link)->next;
  if (!*link) return mmb__fail(MMB_INVALID_ARG, func, "%p is not a live space", (void *)space);
  if (atomic_load(&space->n_users) > 0)
    return mmb__fail(MMB_BUSY, func, "%zu interfaces or spaces still draw on it",
                     atomic_load(&space->n_users));
  *link = space->next;
  atomic_fetch_sub(&space->parent->n_users, 1);
  return MMB_OK;
}

/* An unlinked space goes: what the floor above keeps for it first. */
static void space_free(mmbMemSpace *space) {
  (void)release_hook_call(space, true);
  mmb__object_free(space);
}

mmbError mmb_request_space(mmbMemLayer layer, mmbExecutionContext ctx,
                           const mmbMemSpaceConfig *cfg, mmbMemSpace **out_space) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_space, __func__, "out_space is NULL");
  MMB__ARG(!mmb__layer_known(layer), __func__, "unknown layer %d", (int)layer);
  MMB__ARG((unsigned)ctx > MMB_GPU_CUDA, __func__, "unknown execution context %d", (int)ctx);
  ctx = resolve_context(layer, ctx);
  if (!cfg) {
    pthread_mutex_lock(&requested_lock);
    mmbMemSpace *reg = registered[layer][ctx == MMB_GPU_CUDA];
    pthread_mutex_unlock(&requested_lock);
    *out_space = reg ? reg : mmb__space_find_discovered(layer, ctx, 0);
    if (!*out_space)
      return mmb__fail(MMB_UNAVAILABLE, __func__, "no %s space for %s on this node",
                       mmb_layer_name(layer), mmb_context_name(ctx));
    return MMB_OK;
  }
  mmbError err = check_space_config(__func__, cfg);
  mmbMemSpace *s = NULL;   /* (set when err is MMB_OK; LTO cannot tell) */
  if (err == MMB_OK) err = new_space(__func__, layer, ctx, cfg, &s);
  if (err != MMB_OK) return err;
  pthread_mutex_lock(&requested_lock);
  link_requested_locked(s);
  pthread_mutex_unlock(&requested_lock);
  *out_space = s;
  return MMB_OK;
}

static bool same_space_config(const mmbMemSpaceConfig *a, const mmbMemSpaceConfig *b,
                              mmbMemLayer layer) {
  bool same_index = layer == MMB_GDRAM ? a->device == b->device : a->numa_node == b->numa_node;
  return a->size_limit == b->size_limit && same_index && !a->name == !b->name &&
         (!a->name || !strcmp(a->name, b->name));
}

mmbError mmb_register_memory(mmbMemLayer layer, mmbExecutionContext ctx,
                             const mmbMemSpaceConfig *space_cfg,
                             const mmbMemInterfaceConfig *interface_cfg) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!mmb__layer_known(layer), __func__, "unknown layer %d", (int)layer);
  MMB__ARG((unsigned)ctx > MMB_GPU_CUDA, __func__, "unknown execution context %d", (int)ctx);
  ctx = resolve_context(layer, ctx);
  mmbMemSpaceConfig cfg = space_cfg ? *space_cfg : (mmbMemSpaceConfig){0};
  mmbMemInterfaceConfig icfg = interface_cfg ? *interface_cfg : (mmbMemInterfaceConfig){0};
  mmbError err = check_space_config(__func__, &cfg);
  MMB__ARG(icfg.flags & ~MMB_INTERFACE_THREAD_SAFE, __func__, "unknown interface flags 0x%x",
           icfg.flags);
  MMB__ARG(icfg.copy_threads > 64, __func__, "copy_threads %u: at most 64", icfg.copy_threads);
  if (err != MMB_OK) return err;
  mmbMemSpace **slot = &registered[layer][ctx == MMB_GPU_CUDA];
  pthread_mutex_lock(&requested_lock);
  mmbMemSpace *old = *slot;
  const mmbMemInterfaceConfig *had = old ? &old->interface_cfg : NULL;
  bool same = old && same_space_config(&old->reg_cfg, &cfg, layer) &&
              had->provider == icfg.provider && had->strategy == icfg.strategy &&
              had->flags == icfg.flags && had->release_threshold == icfg.release_threshold &&
              had->copy_threads == icfg.copy_threads && had->fallback == icfg.fallback &&
              had->provider_options == icfg.provider_options;
  pthread_mutex_unlock(&requested_lock);
  if (same) return MMB_OK;   /* registering again what is registered: nothing to do */
  if (old && (err = release_hook_call(old, false)) != MMB_OK)   /* the duplicates' interface */
    return err;
  pthread_mutex_lock(&requested_lock);
  if (*slot != old) {   /* another thread registered meanwhile */
    pthread_mutex_unlock(&requested_lock);
    return mmb__fail(MMB_BUSY, __func__, "%s is being registered by another thread",
                     mmb_layer_name(layer));
  }
  mmbMemSpace *s = NULL;
  if (old) err = unlink_space_locked(__func__, old);
  bool unlinked = old && err == MMB_OK;
  if (err == MMB_OK) {
    *slot = NULL;
    err = new_space(__func__, layer, ctx, &cfg, &s);
  }
  if (err == MMB_OK) {
    s->registered = true;
    s->reg_cfg = cfg;
    if (cfg.name) {
      snprintf(s->reg_name, sizeof s->reg_name, "%s", cfg.name);
      s->reg_cfg.name = s->reg_name;
    }
    s->interface_cfg = icfg;
    link_requested_locked(s);
    *slot = s;
  }
  pthread_mutex_unlock(&requested_lock);
  if (unlinked) space_free(old);
  return err;
}

static bool is_discovered(const mmbMemSpace *space) {
  for (size_t i = 0; i < n_discovered; i++)
    if (discovered[i] == space) return true;
  return false;
}

mmbError mmb_space_release(mmbMemSpace *space) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, __func__, "space");
  if (is_discovered(space) || space->registered) return MMB_OK;   /* the library's */
  mmbError err = release_hook_call(space, false);   /* the duplicates' interface, if idle */
  if (err != MMB_OK) return err;
  pthread_mutex_lock(&requested_lock);
  err = unlink_space_locked(__func__, space);
  pthread_mutex_unlock(&requested_lock);
  if (err == MMB_OK) space_free(space);
  return err;
}

mmbError mmb_space_count(size_t *count) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!count, __func__, "count is NULL");
  *count = n_discovered;
  return MMB_OK;
}

mmbError mmb_space_at(size_t i, mmbMemSpace **out_space) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_space, __func__, "out_space is NULL");
  MMB__ARG(i >= n_discovered, __func__, "index %zu past the %zu discovered spaces", i, n_discovered);
  *out_space = discovered[i];
  return MMB_OK;
}

mmbError mmb_space_layer(const mmbMemSpace *space, mmbMemLayer *out_layer) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, __func__, "space");
  MMB__ARG(!out_layer, __func__, "out_layer is NULL");
  *out_layer = space->info.layer;
  return MMB_OK;
}

mmbError mmb_space_capacity(const mmbMemSpace *space, size_t *out_bytes) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, __func__, "space");
  MMB__ARG(!out_bytes, __func__, "out_bytes is NULL");
  *out_bytes = mmb__space_limit(space);
  return MMB_OK;
}

mmbError mmb_space_get_info(const mmbMemSpace *space, mmbSpaceInfo *out_info) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, __func__, "space");
  MMB__ARG(!out_info, __func__, "out_info is NULL");
  *out_info = space->info;   /* info.providers: found at discovery */
  out_info->limit = mmb__space_limit(space);
  out_info->default_provider = mmb__provider_default(space);
  return MMB_OK;
}

mmbError mmb_space_distance(const mmbMemSpace *from, const mmbMemSpace *to,
                            unsigned *out_distance) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(from, MMB__KIND_SPACE, __func__, "from");
  MMB__HANDLE(to, MMB__KIND_SPACE, __func__, "to");
  MMB__ARG(!out_distance, __func__, "out_distance is NULL");
  if (from->info.numa_node < 0 || to->info.numa_node < 0)
    return mmb__fail(MMB_UNAVAILABLE, __func__, "a space without a NUMA node has no distance");
  if (!mmb__os_numa_distance((unsigned)from->info.numa_node, (unsigned)to->info.numa_node,
                             out_distance))
    return mmb__fail(MMB_UNAVAILABLE, __func__, "the machine gives no NUMA distances");
  return MMB_OK;
}

bool mmb__space_draws_on(const mmbMemSpace *space, const mmbMemSpace *ancestor) {
  for (const mmbMemSpace *s = space; s; s = s->parent)
    if (s == ancestor) return true;
  return false;
}

void mmb__spaces_for_each(void (*fn)(const mmbMemSpace *space, void *arg), void *arg) {
  for (size_t i = 0; i < n_discovered; i++) fn(discovered[i], arg);
  pthread_mutex_lock(&requested_lock);
  for (mmbMemSpace *s = requested; s; s = s->next) fn(s, arg);
  pthread_mutex_unlock(&requested_lock);
}

/* ---- the live interfaces ------------------------------------------------- */

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;   /* after interface locks */
static mmbMemInterface *interfaces;                             /* guarded by list_lock */

static void unlink_locked(mmbMemInterface *iface) {
  if (iface->prev) iface->prev->next = iface->next;
  else interfaces = iface->next;
  if (iface->next) iface->next->prev = iface->prev;
  iface->next = iface->prev = NULL;
}

void mmb__interfaces_link(mmbMemInterface *iface) {
  pthread_mutex_lock(&list_lock);
  iface->prev = NULL;
  iface->next = interfaces;
  if (interfaces) interfaces->prev = iface;
  interfaces = iface;
  pthread_mutex_unlock(&list_lock);
}

void mmb__interfaces_unlink(mmbMemInterface *iface) {
  pthread_mutex_lock(&list_lock);
  unlink_locked(iface);
  pthread_mutex_unlock(&list_lock);
}

mmbMemInterface *mmb__interfaces_pop(void) {
  pthread_mutex_lock(&list_lock);
  mmbMemInterface *iface = interfaces;
  if (iface) unlink_locked(iface);
  pthread_mutex_unlock(&list_lock);
  return iface;
}

void mmb__interfaces_for_each(void (*fn)(mmbMemInterface *iface, void *arg), void *arg) {
  pthread_mutex_lock(&list_lock);
  for (mmbMemInterface *i = interfaces; i; i = i->next) fn(i, arg);
  pthread_mutex_unlock(&list_lock);
}

size_t mmb__interfaces_hold(bool (*pick)(const mmbMemInterface *iface, const void *arg),
                            const void *arg, mmbMemInterface **out, size_t max) {
  size_t n = 0;
  pthread_mutex_lock(&list_lock);
  for (mmbMemInterface *i = interfaces; i && n < max; i = i->next)
    if (pick(i, arg)) {
      atomic_fetch_add_explicit(&i->holds, 1, memory_order_relaxed);
      out[n++] = i;
    }
  pthread_mutex_unlock(&list_lock);
  return n;
}

void mmb__interface_drop(mmbMemInterface *iface) {
  atomic_fetch_sub_explicit(&iface->holds, 1, memory_order_release);
}

void mmb__interface_unheld(mmbMemInterface *iface) {
  while (atomic_load_explicit(&iface->holds, memory_order_acquire)) sched_yield();
}
