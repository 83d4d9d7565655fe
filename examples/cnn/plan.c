/* The memory plan (see plan.h): tiers, the parameters' placement, and the
   tile walks both placements share. */
#include "plan.h"

#include <stdio.h>
#include <string.h>

#define DEFAULT_STANDIN_BUDGET ((size_t)8 << 20)   /* DRAM standing in for HBM */
#define REGION_BLOCK ((size_t)4 << 20)
#define ARRAY_SLACK 4096                          /* per resident array: alignment, rounding */

static mmbError fail(mmbError e, char *err, size_t err_len, const char *what) {
  snprintf(err, err_len, "%s: %s", what, mmb_error_string(e));
  return e;
}

static void space_name(mmbMemSpace *s, char *out, size_t len) {
  mmbSpaceInfo info;
  if (mmb_space_get_info(s, &info) == MMB_OK) snprintf(out, len, "%s", info.name);
  else snprintf(out, len, "?");
}

/* The tiers: capacity and fast, as discovered spaces. */
static mmbError find_tiers(const cnn_plan_options *o, cnn_plan *plan, char *err, size_t err_len) {
  mmbError e;
  if (o->gpu) {
    if ((e = mmb_request_space(MMB_GDRAM, MMB_GPU_CUDA, NULL, &plan->fast)) != MMB_OK)
      return fail(e, err, err_len, "--device gpu needs a CUDA device");
    if ((e = mmb_request_space(MMB_DRAM, MMB_GPU_CUDA, NULL, &plan->capacity)) != MMB_OK)
      return fail(e, err, err_len, "no pinned host memory");
    space_name(plan->capacity, plan->capacity_name, sizeof plan->capacity_name);
    space_name(plan->fast, plan->fast_name, sizeof plan->fast_name);
    plan->budget = o->fast_limit;
    return MMB_OK;
  }
  if ((e = mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &plan->capacity)) != MMB_OK)
    return fail(e, err, err_len, "no DRAM space");
  space_name(plan->capacity, plan->capacity_name, sizeof plan->capacity_name);
  if (mmb_request_space(MMB_HBM, MMB_CPU, NULL, &plan->fast) == MMB_OK) {
    space_name(plan->fast, plan->fast_name, sizeof plan->fast_name);
    plan->budget = o->fast_limit;
    return MMB_OK;
  }
  plan->fast = plan->capacity;
  char name[64];
  space_name(plan->fast, name, sizeof name);
  snprintf(plan->fast_name, sizeof plan->fast_name, "%s standing in for HBM", name);
  plan->budget = o->fast_limit ? o->fast_limit : DEFAULT_STANDIN_BUDGET;
  return MMB_OK;
}

/* The fast tier's space for the activations and batches (its own, for its
   statistics), the capacity tier's interface and the region. */
static mmbError make_spaces(cnn_plan *plan, char *err, size_t err_len) {
  mmbSpaceInfo info;
  mmbError e = mmb_space_get_info(plan->fast, &info);
  mmbMemSpaceConfig ac = {.numa_node = info.index, .device = info.device < 0 ? 0 : info.device,
                          .name = "fast tier: activations"};
  if (e == MMB_OK) e = mmb_request_space(info.layer, info.context, &ac, &plan->acts_space);
  if (e != MMB_OK) return fail(e, err, err_len, "no space in the fast tier");
  mmbMemInterfaceConfig basic = {.strategy = MMB_STRATEGY_BASIC};
  mmbMemInterfaceConfig pool = {.strategy = MMB_STRATEGY_POOL};
  if ((e = mmb_request_interface(plan->capacity, &basic, &plan->capacity_iface)) != MMB_OK ||
      (e = mmb_request_interface(plan->acts_space, &pool, &plan->acts_iface)) != MMB_OK)
    return fail(e, err, err_len, "no interface on the tiers");
  e = mmb_region_create(plan->acts_iface, &(mmbRegionOptions){.block_size = REGION_BLOCK},
                        &plan->region);
  return e != MMB_OK ? fail(e, err, err_len, "no region for the activations") : MMB_OK;
}

/* The parameters' space: the fast tier, limited to the budget. */
static mmbError make_params_space(cnn_plan *plan, char *err, size_t err_len) {
  if (plan->params_space) return MMB_OK;
  mmbSpaceInfo info;
  mmbError e = mmb_space_get_info(plan->fast, &info);
  mmbMemSpaceConfig pc = {.size_limit = plan->budget, .numa_node = info.index,
                          .device = info.device < 0 ? 0 : info.device,
                          .name = "fast tier: parameters"};
  if (e == MMB_OK) e = mmb_request_space(info.layer, info.context, &pc, &plan->params_space);
  if (e == MMB_OK)
    e = mmb_request_interface(plan->params_space,
                              &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_BASIC},
                              &plan->params_iface);
  return e != MMB_OK ? fail(e, err, err_len, "no space for the parameters in the fast tier")
                     : MMB_OK;
}

static mmbError make_queues(const cnn_plan_options *o, cnn_plan *plan, char *err, size_t err_len) {
  mmbQueueOptions copy = {.backend = o->gpu ? MMB_QUEUE_CUDA_STREAM : MMB_QUEUE_THREAD,
                          .near = o->gpu ? NULL : plan->fast};
  mmbError e = mmb_queue_create(&copy, &plan->copy_q);
  if (e != MMB_OK) return fail(e, err, err_len, "no copy queue");
  if (!o->gpu) {
    plan->ops = cnn_ops_cpu(o->threads);
    return MMB_OK;
  }
  void *stream;
  mmbQueueOptions compute = {.backend = MMB_QUEUE_CUDA_STREAM};
  if ((e = mmb_queue_create(&compute, &plan->compute_q)) != MMB_OK ||
      (e = mmb_queue_get_native(plan->compute_q, &stream)) != MMB_OK)
    return fail(e, err, err_len, "no compute stream");
  char why[128] = "this cnn was built without CUDA (make CUDA=1 where nvcc and cuBLAS are)";
#ifdef CNN_HAVE_CUDA
  plan->ops = cnn_ops_gpu(stream, why, sizeof why);
#endif
  if (!plan->ops) {
    snprintf(err, err_len, "no GPU kernels: %s", why);
    return MMB_UNAVAILABLE;
  }
  return MMB_OK;
}

mmbError cnn_plan_create(const cnn_plan_options *o, cnn_plan *plan, char *err, size_t err_len) {
  *plan = (cnn_plan){.mode = o->mode, .gpu = o->gpu, .hints = !o->no_hints,
                     .release_late = o->gpu, .depth = o->depth ? o->depth : 1};
  mmbError e = find_tiers(o, plan, err, err_len);
  if (e == MMB_OK) e = make_spaces(plan, err, err_len);
  if (e == MMB_OK) e = make_queues(o, plan, err, err_len);
  if (e != MMB_OK) cnn_plan_destroy(plan);
  return e;
}

mmbError cnn_plan_destroy(cnn_plan *plan) {
  mmbError first = MMB_OK, e;
#define KEEP(call) \
  if ((e = (call)) != MMB_OK && first == MMB_OK) first = e
  if (plan->compute_q) KEEP(mmb_wait(&plan->marker));
#ifdef CNN_HAVE_CUDA
  if (plan->ops && plan->gpu) cnn_ops_gpu_destroy(plan->ops);
#endif
  if (plan->compute_q) KEEP(mmb_queue_destroy(NULL, &plan->compute_q));
  if (plan->copy_q) KEEP(mmb_queue_destroy(NULL, &plan->copy_q));
  if (plan->region) KEEP(mmb_region_destroy(plan->region));
  mmbMemInterface *ifaces[] = {plan->acts_iface, plan->params_iface, plan->capacity_iface};
  for (size_t i = 0; i < 3; i++)
    if (ifaces[i]) KEEP(mmb_interface_destroy(ifaces[i]));
  if (plan->acts_space) KEEP(mmb_space_release(plan->acts_space));
  if (plan->params_space) KEEP(mmb_space_release(plan->params_space));
#undef KEEP
  *plan = (cnn_plan){0};
  return first;
}

/* ---- placement ------------------------------------------------------------ */

static size_t n_arrays(const cnn_param *p) { return p->velocity ? 3 : 2; }
static size_t param_bytes(const cnn_param *p) { return p->rows * p->cols * sizeof(float); }
static size_t resident_cost(const cnn_param *p) {
  return n_arrays(p) * (param_bytes(p) + ARRAY_SLACK);
}

static mmbTileIteratorOptions stream_options(const cnn_plan *plan, mmbAccessType access) {
  return (mmbTileIteratorOptions){.queue = plan->copy_q, .space = plan->params_space,
                                  .depth = plan->depth, .access = access,
                                  .merge = MMB_MERGE_OVERWRITE};
}

/* The schedule of a walk from the last tile (of a column of row blocks) to
   the first. */
static bool last_to_first(void *arg, const mmbDimensions *grid, size_t position, mmbIndex *out) {
  (void)arg;
  if (position >= grid->d[0]) return false;
  *out = (mmbIndex){2, {grid->d[0] - 1 - position, 0}};
  return true;
}

/* What a streamed parameter's rings take in the fast tier at most: values,
   gradients and velocities walk together in backward, and the forward
   walk's last tiles may still be on their way home when backward starts. */
static mmbError ring_cost(const cnn_plan *plan, cnn_param *p, size_t *out) {
  size_t walks = p->velocity ? 4 : 3, tiles = (p->rows + p->tile_rows - 1) / p->tile_rows;
  mmbTileIteratorOptions o = stream_options(plan, MMB_READ_WRITE);
  size_t one;
  mmbError e = mmb_tile_iterator_footprint(p->value, &o, &one);
  if (e != MMB_OK || walks * (plan->depth + 2) > tiles) {
    *out = walks * one;   /* few tiles: the sum of the walks' footprints */
    return e;
  }
  /* The walks' tiles have one size and share the space's pool: together they
     need what one iterator with all their slots (depth + 2 each) needs. */
  o.depth = walks * (plan->depth + 2) - 2;
  return mmb_tile_iterator_footprint(p->value, &o, out);
}

static mmbError retile(cnn_param *p, size_t tile_rows) {
  mmbArray *arrays[3] = {p->value, p->grad, p->velocity};
  p->tile_rows = tile_rows;
  for (size_t i = 0; i < 3 && arrays[i]; i++) {
    mmbError e = mmb_array_tile(arrays[i], &(mmbDimensions){2, {tile_rows, p->cols}});
    if (e != MMB_OK) return e;
  }
  return MMB_OK;
}

/* Streams the largest parameters until the rest fits beside their rings;
   halves the streamed tiles while the rings alone are too big. */
static mmbError choose_streamed(cnn_plan *plan, cnn_param *params, size_t n, char *err,
                                size_t err_len) {
  size_t resident = 0;
  for (size_t i = 0; i < n; i++) resident += resident_cost(&params[i]);
  for (;;) {
    size_t ring = 0, largest = n;
    for (size_t i = 0; i < n; i++) {
      size_t c;
      if (params[i].streamed) {
        mmbError e = ring_cost(plan, &params[i], &c);
        if (e != MMB_OK) return fail(e, err, err_len, "no tiling for a streamed parameter");
        ring += c;
      } else if (largest == n || param_bytes(&params[i]) > param_bytes(&params[largest])) {
        largest = i;
      }
    }
    plan->resident_bytes = resident;
    plan->stream_bytes = ring;
    if (resident + ring <= plan->budget) return MMB_OK;
    if (largest < n && (ring == 0 || resident > plan->budget / 2)) {
      params[largest].streamed = true;   /* stream one more */
      plan->n_streamed++;
      resident -= resident_cost(&params[largest]);
      continue;
    }
    bool smaller = false;   /* the rings are what does not fit: smaller tiles */
    for (size_t i = 0; i < n; i++)
      if (params[i].streamed && params[i].tile_rows > 1) {
        mmbError e = retile(&params[i], params[i].tile_rows / 2);
        if (e != MMB_OK) return fail(e, err, err_len, "cannot re-tile a parameter");
        smaller = true;
      }
    if (!smaller) {
      snprintf(err, err_len, "a fast tier of %zu bytes for parameters cannot hold the resident "
               "ones (%zu bytes) beside the streaming rings of one-row tiles (%zu bytes): raise "
               "--fast-limit",
               plan->budget, resident, ring);
      return MMB_INVALID_ARG;
    }
  }
}

mmbError cnn_plan_place(cnn_plan *plan, cnn_param *params, size_t n, char *err, size_t err_len) {
  plan->n_streamed = 0;
  for (size_t i = 0; i < n; i++) params[i].streamed = false;
  mmbError e = make_params_space(plan, err, err_len);
  if (e == MMB_OK && plan->mode == CNN_PLAN_AUTO) {   /* the cache's budget: the space's limit */
    plan->resident_bytes = plan->stream_bytes = 0;
    /* a walk pins three tiles and prefetches three: tiles of an eighth of
       the budget at most leave the cache room to keep some (the hand plans'
       tiles otherwise, so that every plan sums in the same order) */
    size_t largest = 0, tile_bytes = 0;
    for (size_t i = 0; i < n && e == MMB_OK && plan->budget; i++) {
      size_t row = params[i].cols * sizeof(float), most = plan->budget / 8 / row;
      if (params[i].tile_rows > most) e = retile(&params[i], most ? most : 1);
      if (params[i].tile_rows * row > tile_bytes) {
        tile_bytes = params[i].tile_rows * row;
        largest = i;
      }
    }
    /* the cache's budget: the tiles the space's pool can hold at once (a
       tile of 1 MiB takes a 2 MiB segment of it) */
    mmbTileIteratorOptions o = stream_options(plan, MMB_READ_WRITE);
    o.depth = 14;
    size_t sixteen;
    if (e == MMB_OK && plan->budget && n &&
        mmb_tile_iterator_footprint(params[largest].value, &o, &sixteen) == MMB_OK && sixteen) {
      double payload = 16.0 * (double)tile_bytes / (double)sixteen;
      size_t cache = (size_t)(plan->budget * payload), pinned = cnn_param_step_bytes(&params[largest]);
      if (pinned > cache) {   /* a backward step pins a tile of each of its arrays */
        snprintf(err, err_len, "a fast tier of %zu bytes for parameters caches %zu bytes of tiles, "
                 "less than the %zu a step pins (one-row tiles of %s): raise --fast-limit",
                 plan->budget, cache, pinned, params[largest].name);
        return MMB_INVALID_ARG;
      }
      /* Nine tenths kept clean: an updated weight tile goes home soon after
         its release, so that a hint finds clean victims (a hint evicts
         only those) and the copy link keeps fetching ahead while backward
         computes. At 1 GiB/s, 117 ms a batch of the wide net against 121
         with half kept clean, for 2% fewer bytes moved. */
      e = mmb_space_set_cache(plan->params_space,
                              &(mmbCacheConfig){.budget_bytes = cache, .clean_share = 0.9});
    }
    return e == MMB_OK ? MMB_OK : fail(e, err, err_len, "cannot re-tile a parameter");
  }
  if (e == MMB_OK && plan->budget) e = choose_streamed(plan, params, n, err, err_len);
  plan->streamed = plan->n_streamed > 0;
  if (e == MMB_OK && plan->streamed && plan->mode == CNN_PLAN_RESIDENT) {
    size_t all = 0;   /* (the plan's sums are of what it chose: some streamed) */
    for (size_t i = 0; i < n; i++) all += resident_cost(&params[i]);
    snprintf(err, err_len, "--plan resident: the parameters (%zu bytes with their gradients) do "
             "not fit a fast tier of %zu bytes: raise --fast-limit, or use --plan auto", all,
             plan->budget);
    return MMB_INVALID_ARG;
  }
  for (size_t i = 0; i < n && e == MMB_OK; i++) {
    if (params[i].streamed) continue;
    mmbArray *arrays[3] = {params[i].value, params[i].grad, params[i].velocity};
    for (size_t j = 0; j < 3 && arrays[j] && e == MMB_OK; j++)
      e = mmb_array_migrate(arrays[j], plan->params_iface, MMB_READ_WRITE);
    if (e != MMB_OK)
      snprintf(err, err_len, "cannot move %s to the fast tier: %s", params[i].name,
               mmb_error_string(e));
  }
  return e;
}

mmbError cnn_plan_unplace(cnn_plan *plan, cnn_param *params, size_t n) {
  for (size_t i = 0; i < n; i++) {
    mmbError e = cnn_tiles_release(&params[i]);
    if (e != MMB_OK) return e;
    mmbArray *arrays[3] = {params[i].value, params[i].grad, params[i].velocity};
    if (plan->mode == CNN_PLAN_AUTO) {   /* the cached tiles home, written ones first */
      for (size_t j = 0; j < 3 && arrays[j]; j++)
        if ((e = mmb_array_evict(arrays[j], NULL)) != MMB_OK) return e;
      continue;
    }
    if (params[i].streamed) continue;
    for (size_t j = 0; j < 3 && arrays[j]; j++) {
      e = mmb_array_migrate(arrays[j], plan->capacity_iface, MMB_READ_WRITE);
      if (e != MMB_OK) return e;
    }
  }
  return MMB_OK;
}

static double mib(size_t b) { return b / 1048576.0; }

void cnn_plan_print(const cnn_plan *plan, const cnn_param *params, size_t n) {
  printf("memory plan: capacity tier %s; fast tier %s", plan->capacity_name, plan->fast_name);
  if (plan->budget) printf(", %.2f MiB of it for parameters\n", mib(plan->budget));
  else printf(", all of it for parameters\n");
  if (plan->mode == CNN_PLAN_AUTO) {
    printf("  auto: parameters stay in the capacity tier; each walk acquires its tiles from mmb's\n"
           "  tile cache in the fast tier (the next three it lacks advised WILLNEED), and mmb "
           "decides what stays\n");
    printf("  activations: a region in the fast tier, reset every batch; batches uploaded ahead\n");
    return;
  }
  printf("  resident in the fast tier:");
  for (size_t i = 0, shown = 0; i < n; i++)
    if (!params[i].streamed) printf("%s %s", shown++ ? "," : "", params[i].name);
  printf(" (%.2f MiB with gradients%s)\n", mib(plan->resident_bytes),
         params[0].velocity ? " and velocities" : "");
  for (size_t i = 0; i < n; i++) {
    const cnn_param *p = &params[i];
    if (!p->streamed) continue;
    size_t tiles = (p->rows + p->tile_rows - 1) / p->tile_rows;
    printf("  streamed through it: %s, %zu x %zu (%.1f MiB), in %zu tiles of %zu rows, %zu ahead\n",
           p->name, p->rows, p->cols, mib(param_bytes(p)), tiles, p->tile_rows, plan->depth);
  }
  if (plan->streamed)
    printf("  streaming rings: at most %.2f MiB; copies on the copy queue overlap compute\n",
           mib(plan->stream_bytes));
  printf("  activations: a region in the fast tier, reset every batch; batches uploaded ahead\n");
}

/* ---- handing tiles between the compute stream and the copy queue ------- */

mmbError cnn_plan_handoff(cnn_plan *plan) {
  if (!plan->compute_q) return MMB_OK;
  mmbError e = mmb_wait(&plan->marker);   /* the last one: the host stays one step ahead */
  if (e == MMB_OK) e = mmb_queue_marker(plan->compute_q, &plan->marker);
  if (e == MMB_OK) e = mmb_queue_wait_request(plan->copy_q, &plan->marker);
  return e;
}

mmbError cnn_plan_kernels_done(cnn_plan *plan) {
  if (!plan->compute_q) return MMB_OK;
  mmbRequest done = {0};
  mmbError e = mmb_queue_marker(plan->compute_q, &done);
  return e == MMB_OK ? mmb_wait(&done) : e;
}

/* ---- tile walks ------------------------------------------------------------ */

static void refresh(cnn_tiles *t) {
  mmbArrayTile **cur[3] = {&t->value, &t->grad, &t->velocity};
  for (size_t i = 0; i < 3; i++) *cur[i] = t->it[i] ? mmb_tile_iterator_tile(t->it[i]) : NULL;
  if (t->value) {
    t->r0 = t->value->lower[0];
    t->r1 = t->value->upper[0];
    t->ld = t->value->stride[0];
  }
}

/* The tiles handed out must share one row stride (one ld for the kernels). */
static mmbError check_current(const cnn_tiles *t) {
  if (!t->value) return MMB_OK;
  for (size_t i = 1; i < 3; i++) {
    mmbArrayTile *x = i == 1 ? t->grad : t->velocity;
    if (!t->arrays[i]) continue;
    if (!x || x->stride[0] != t->ld || x->lower[0] != t->r0) return MMB_INVALID_STATE;
  }
  return MMB_OK;
}

/* ---- auto: tiles acquired from the tile cache ------------------------------ */

static mmbError tile_of(const cnn_tiles *t, mmbArray *a, size_t pos, mmbArrayTile **out) {
  size_t i = t->reverse ? t->count - 1 - pos : pos;
  return mmb_tile_at(a, &(mmbIndex){2, {i, 0}}, out);
}

/* The current tiles acquired, and of each array that is read, tiles ahead
   advised WILLNEED until AUTO_AHEAD of them are on their way: those the
   cache holds already are passed over (up to AUTO_REACH tiles ahead), so
   that at the start of a walk, which computes on the tiles the walk before
   left cached, the copy link fetches the first it lacks meanwhile instead
   of idling (at 1 GiB/s, 161 ms a batch of the wide net against 166 with
   the next two advised whatever they were). Whether a hint started a fetch
   is the cache's miss count (prefetches count as misses). Three on their
   way: with one, the copy link idles from the end of a prefetch until this
   thread wakes to ask for the next (230 ms a batch against 197); with two,
   115.8 ms against 117.4 at 1 GiB/s, 54.6 against 55.6 at 5 GiB/s. Four
   advised whatever they were gained 1% at 1 GiB/s and lost 15% at 5 GiB/s:
   at the start of a walk they evicted the tiles it was about to hit.
   A hint the cache has no room for is not taken, so a deeper one never
   evicts what is pinned. */
#define AUTO_AHEAD 3
#define AUTO_REACH 8

static mmbError release_each(mmbArrayTile **tiles) {
  mmbError first = MMB_OK;
  for (size_t i = 0; i < 3; i++) {
    if (!tiles[i]) continue;
    mmbError e = mmb_tile_release(tiles[i]);
    if (e != MMB_OK && first == MMB_OK) first = e;
    tiles[i] = NULL;
  }
  return first;
}

/* The step before's tiles (release_late), once its kernels are done. */
static mmbError release_held(cnn_tiles *t) {
  mmbError e = mmb_wait(&t->held_done), e2 = release_each(t->held);
  return e != MMB_OK ? e : e2;
}

/* A tile acquired; when the cache has no room beside the step before's
   tiles, still pinned (release_late), those go first. */
static mmbError acquire_one(cnn_tiles *t, mmbArrayTile *tile, mmbAccessType access,
                            mmbArrayTile **out) {
  mmbMemSpace *fast = t->plan->params_space;
  mmbError e = mmb_tile_acquire(tile, fast, access, out);
  if (e != MMB_OUT_OF_MEMORY || !(t->held[0] || t->held[1] || t->held[2])) return e;
  e = release_held(t);
  return e == MMB_OK ? mmb_tile_acquire(tile, fast, access, out) : e;
}

static mmbError auto_acquire(cnn_tiles *t) {
  mmbArrayTile **cur[3] = {&t->value, &t->grad, &t->velocity};
  mmbMemSpace *fast = t->plan->params_space;
  mmbError e = MMB_OK;
  for (size_t i = 0; i < 3 && e == MMB_OK; i++) {
    mmbArrayTile *tile, *next;
    if (!t->arrays[i]) continue;
    e = tile_of(t, t->arrays[i], t->index, &tile);
    if (e == MMB_OK) e = acquire_one(t, tile, t->access[i], cur[i]);
    if (!t->plan->hints || !(t->access[i] & MMB_READ)) continue;
    t->fetching[i] &= ~(1ull << (t->index % 64));   /* (here now) */
    if (t->advised[i] < t->index) t->advised[i] = t->index;
    unsigned ahead = (unsigned)__builtin_popcountll(t->fetching[i]);
    size_t pos = t->advised[i] + 1, reach = t->index + AUTO_REACH + 1;
    size_t end = reach < t->count ? reach : t->count;   /* hinted up to here */
    if (ahead >= AUTO_AHEAD || pos >= end) continue;
    mmbCacheStats before, after;   /* (each hint's after is the next one's before) */
    e = mmb_space_get_cache_stats(fast, &before);
    for (; e == MMB_OK && pos < end && ahead < AUTO_AHEAD; pos++, before = after) {
      if ((e = tile_of(t, t->arrays[i], pos, &next)) != MMB_OK ||
          (e = mmb_tile_advise(next, fast, MMB_ADVICE_WILLNEED)) != MMB_OK ||
          (e = mmb_space_get_cache_stats(fast, &after)) != MMB_OK)
        break;
      t->advised[i] = pos;
      if (after.misses > before.misses) {
        t->fetching[i] |= 1ull << (pos % 64);
        ahead++;
      }
    }
  }
  return e;
}

/* Every tile the walk holds released, once the kernels are done with them. */
static mmbError auto_release(cnn_tiles *t) {
  mmbArrayTile *cur[3] = {t->value, t->grad, t->velocity};
  mmbError e = cnn_plan_kernels_done(t->plan), e2 = release_held(t), e3 = release_each(cur);
  t->value = t->grad = t->velocity = NULL;
  return e != MMB_OK ? e : e2 != MMB_OK ? e2 : e3;
}

/* From one step to the next: its tiles released now, or (release_late)
   held until the next step's kernels are issued, and the step before's
   released once its kernels are done, while this step's run. */
static mmbError auto_step(cnn_tiles *t) {
  if (!t->plan->release_late) return auto_release(t);
  mmbError e = release_held(t);
  t->held[0] = t->value, t->held[1] = t->grad, t->held[2] = t->velocity;
  t->value = t->grad = t->velocity = NULL;
  mmbError e2 = t->plan->compute_q ? mmb_queue_marker(t->plan->compute_q, &t->held_done) : MMB_OK;
  return e != MMB_OK ? e : e2;
}

static void auto_rows(cnn_tiles *t) {
  if (!t->value) return;
  t->r0 = t->value->lower[0];
  t->r1 = t->value->upper[0];
  t->ld = t->value->stride[0];
}

/* ---- the walks ------------------------------------------------------------- */

mmbError cnn_tiles_begin(cnn_plan *plan, cnn_param *p, cnn_walk walk, cnn_tiles *t) {
  *t = (cnn_tiles){.plan = plan, .p = p};
  bool update = walk != CNN_WALK_VALUES;
  t->reverse = update;
  mmbArray *arrays[3] = {p->value, update && walk != CNN_WALK_STEP ? p->grad : NULL,
                         update ? p->velocity : NULL};
  mmbAccessType grad = walk == CNN_WALK_APPLY        ? MMB_READ
                       : walk == CNN_WALK_ACCUMULATE ? MMB_READ_WRITE
                                                     : MMB_WRITE;
  mmbAccessType access[3] = {update ? MMB_READ_WRITE : MMB_READ, grad, MMB_READ_WRITE};
  memcpy(t->arrays, arrays, sizeof arrays);
  if (plan->mode == CNN_PLAN_AUTO) {
    memcpy(t->access, access, sizeof access);
    t->count = (p->rows + p->tile_rows - 1) / p->tile_rows;
    mmbError e = auto_acquire(t);
    auto_rows(t);
    return e != MMB_OK ? e : check_current(t);
  }
  mmbTileIterator **its = p->walks[walk];
  for (size_t i = 0; i < 3; i++) {
    if (!arrays[i]) continue;
    mmbTileIteratorOptions o = p->streamed ? stream_options(plan, access[i])
                                           : (mmbTileIteratorOptions){0};
    if (t->reverse) {
      o.schedule = MMB_SCHEDULE_CUSTOM;
      o.order_fn = last_to_first;
    }
    mmbError e = its[i] ? mmb_tile_iterator_first(its[i])
                        : mmb_tile_iterator_create(arrays[i], &o, &its[i]);
    if (e != MMB_OK) return e;
    t->it[i] = its[i];
  }
  refresh(t);
  return check_current(t);
}

mmbError cnn_tiles_next(cnn_tiles *t) {
  if (t->plan->mode == CNN_PLAN_AUTO) {
    mmbError e = auto_step(t);
    if (e == MMB_OK && ++t->index < t->count) e = auto_acquire(t);
    auto_rows(t);
    return e != MMB_OK ? e : check_current(t);
  }
  mmbError first = t->p->streamed ? cnn_plan_handoff(t->plan) : MMB_OK;
  for (size_t i = 0; i < 3; i++) {
    if (!t->it[i]) continue;
    mmbError e = mmb_tile_iterator_next(t->it[i]);
    if (e != MMB_OK && first == MMB_OK) first = e;
  }
  refresh(t);
  return first != MMB_OK ? first : check_current(t);
}

mmbError cnn_tiles_end(cnn_tiles *t) {
  mmbError e = MMB_OK;
  if (!t->plan) return MMB_OK;   /* (never begun, or ended) */
  if (t->plan->mode == CNN_PLAN_AUTO) e = auto_release(t);
  else if (t->p->streamed) {
    /* a walk stopped early hands its current tile back, on the GPU after the kernels */
    if (t->value) e = cnn_plan_handoff(t->plan);
    /* and its last merges are done before another walk of the parameter
       starts: that walk's duplicates then reuse their storage, where a
       copy queue behind (a busy machine) made it take a segment more */
    if (e == MMB_OK) e = mmb_queue_synchronize(t->plan->copy_q);
  }
  *t = (cnn_tiles){0};
  return e;
}

mmbError cnn_tiles_release(cnn_param *p) {
  mmbError first = MMB_OK;
  for (size_t w = 0; w < CNN_WALKS; w++)
    for (size_t i = 0; i < 3; i++) {
      if (!p->walks[w][i]) continue;
      mmbError e = mmb_tile_iterator_destroy(p->walks[w][i]);
      if (e != MMB_OK && first == MMB_OK) first = e;
      p->walks[w][i] = NULL;
    }
  return first;
}
