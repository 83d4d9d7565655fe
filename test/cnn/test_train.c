/* Training end to end on data made by the test: a separable set is
   learnt; the streamed and the resident plans give the same weights bit
   for bit; after the first batch no memory goes to or from a provider and
   the resident set stays flat; the GPU path matches the host where a
   device exists. */
#include "cnn_test.h"

#include <math.h>

typedef struct run_ {
  cnn_plan plan;
  cnn_model model;
  cnn_dataset train, test;
  cnn_result result;
  unsigned long long checksum;
  cnn_offload offload;
  bool offloaded;
} run_;

/* The plan `train` makes (a test may set another), whether the auto plan
   gives the cache hints and (on the host) releases a step's tiles a step
   late as it does on a GPU, and the samples per offloaded chunk (0: no
   offload). */
static cnn_plan_mode plan_mode = CNN_PLAN_STREAMED;
static bool no_hints, release_late;
static size_t offload_chunk;
/* Set: each gradient array's home holds GRAD_MARK before training. */
static bool mark_gradients;
#define GRAD_MARK 0x7fc0beefu   /* a NaN no gradient computes */

static void set_marks(const cnn_model *m) {
  for (size_t i = 0; i < m->n_params; i++) {
    uint32_t *g = mmb_array_ptr(m->params[i].grad);
    for (size_t j = 0; j < m->params[i].rows * m->params[i].cols; j++) g[j] = GRAD_MARK;
  }
}

/* How many of the model's gradient values at home are not the mark. */
static size_t marks_lost(const cnn_model *m) {
  size_t lost = 0;
  for (size_t i = 0; i < m->n_params; i++) {
    const uint32_t *g = mmb_array_ptr(m->params[i].grad);
    for (size_t j = 0; j < m->params[i].rows * m->params[i].cols; j++) lost += g[j] != GRAD_MARK;
  }
  return lost;
}

/* Trains `net` on the separable set with the plan's budget. */
static void train(run_ *r, const char *net, size_t fast_limit, bool gpu, size_t epochs,
                  size_t batch, size_t n_train, float lr, float momentum, size_t tile_bytes,
                  size_t max_batches) {
  char err[256] = "";
  if (gpu) {
    mmbError e = cnn_plan_create(&(cnn_plan_options){.mode = plan_mode, .gpu = true,
                                                      .fast_limit = fast_limit,
                                                      .no_hints = no_hints},
                                 &r->plan, err, sizeof err);
    if (e == MMB_UNAVAILABLE) cr_skip_test("no CUDA device on this node: %s", err);
    cr_assert_eq(e, MMB_OK, "%s", err);
  } else {
    r->plan = test_plan_mode(fast_limit, plan_mode);
    r->plan.hints = !no_hints;
    r->plan.release_late = release_late;
  }
  r->train = separable_set(n_train, 1, r->plan.capacity_iface);
  r->test = separable_set(500, 2, r->plan.capacity_iface);
  cnn_model_options mo = {.net = net, .input = {8, 8, 1}, .classes = 10, .seed = 5,
                          .momentum = momentum > 0, .tile_bytes = tile_bytes};
  OK(cnn_model_create(&mo, r->plan.capacity_iface, &r->model, err, sizeof err));
  if (mark_gradients) set_marks(&r->model);
  cr_assert_eq(cnn_plan_place(&r->plan, r->model.params, r->model.n_params, err, sizeof err),
               MMB_OK, "%s", err);
  r->offloaded = offload_chunk > 0;
  if (r->offloaded)
    cr_assert_eq(cnn_offload_create(&r->offload, &r->plan, &r->model, batch, offload_chunk, err,
                                    sizeof err), MMB_OK, "%s", err);
  cnn_train_options to = {.epochs = epochs, .batch = batch, .max_batches = max_batches,
                          .sgd = {lr, momentum}, .seed = 9,
                          .offload = r->offloaded ? &r->offload : NULL};
  cr_assert_eq(cnn_train(&r->plan, &r->model, &r->train, &r->test, &to, &r->result, err,
                         sizeof err),
               MMB_OK, "%s", err);
  OK(cnn_plan_unplace(&r->plan, r->model.params, r->model.n_params));
  OK(cnn_model_checksum(&r->model, &r->checksum));
}

static void finish(run_ *r) {
  if (r->offloaded) OK(cnn_offload_destroy(&r->offload));
  OK(cnn_model_destroy(&r->model));
  OK(cnn_dataset_destroy(&r->train));
  OK(cnn_dataset_destroy(&r->test));
  OK(cnn_plan_destroy(&r->plan));
}

MMB_TEST(train, the_seed_net_learns_a_separable_set) {
  run_ r;
  train(&r, "seed", 1 << 20, false, 4, 10, 2000, 0.1f, 0.0f, 0, 0);
  cr_assert_geq(r.result.test_accuracy, 0.9, "test accuracy %.3f", r.result.test_accuracy);
  cr_assert_lt(r.result.final_loss, 0.5, "final loss %.3f", r.result.final_loss);
  cr_assert_eq(r.result.train_samples, 4 * 2000);
  cr_assert_eq(r.result.test_samples, 500);
  cr_assert(!r.plan.streamed);
  finish(&r);
}

/* The wide net on 8x8 images: conv 32 -> 3x3x32 = 288 -> 2048 -> 10, its
   288 x 2048 weights (2.25 MiB) in tiles of 64 rows. With 2.5 MiB for
   parameters they stream; with 64 MiB they are resident. Same tiles, same
   kernels, same order: the same weights, bit for bit. */
static void streamed_equals_resident(float momentum) {
  run_ s, r;
  size_t tile = 64 * 288 * sizeof(float);
  train(&s, "wide", (size_t)5 << 19, false, 2, 8, 96, 0.05f, momentum, tile, 0);
  train(&r, "wide", (size_t)64 << 20, false, 2, 8, 96, 0.05f, momentum, tile, 0);
  cr_assert(s.plan.streamed, "the small budget streams");
  cr_assert(!r.plan.streamed, "the large one keeps everything resident");
  cr_assert_eq(s.checksum, r.checksum, "weights differ: %016llx streamed, %016llx resident",
               s.checksum, r.checksum);
  cr_assert_eq(s.result.final_loss, r.result.final_loss);
  mmbStats st;
  OK(mmb_space_get_stats(s.plan.params_space, &st));
  cr_assert_leq(st.reserved_high, s.plan.budget, "the streamed plan passed its budget");
  finish(&s);
  finish(&r);
}

MMB_TEST(train, streamed_and_resident_weights_are_identical) { streamed_equals_resident(0.0f); }

MMB_TEST(train, streamed_and_resident_agree_with_momentum) { streamed_equals_resident(0.9f); }

/* With no plan: the same 2.5 MiB as mmb's tile cache, which cannot hold the
   2.25 MiB of weights beside their gradients (and velocities): tiles go
   and come back, written ones home first. The same weights, bit for bit,
   as resident; nothing reaches a provider after the first batch. */
static void auto_equals_resident(float momentum) {
  run_ a, r;
  size_t tile = 64 * 288 * sizeof(float);
  plan_mode = CNN_PLAN_AUTO;
  train(&a, "wide", (size_t)5 << 19, false, 2, 8, 96, 0.05f, momentum, tile, 0);
  plan_mode = CNN_PLAN_STREAMED;
  train(&r, "wide", (size_t)64 << 20, false, 2, 8, 96, 0.05f, momentum, tile, 0);
  cr_assert(!r.plan.streamed, "the large budget keeps everything resident");
  cr_assert_eq(a.checksum, r.checksum, "weights differ: %016llx auto, %016llx resident",
               a.checksum, r.checksum);
  cr_assert_eq(a.result.final_loss, r.result.final_loss);
  cr_assert_eq(a.result.trips_after_first_batch, 0, "%llu provider trips after the first batch",
               a.result.trips_after_first_batch);
  mmbCacheStats cs;
  OK(mmb_space_get_cache_stats(a.plan.params_space, &cs));
  cr_assert(cs.misses > 0 && cs.hits > 0 && cs.writebacks > 0 && cs.clean_drops + cs.writebacks > 0,
            "the cache evicted and fetched again (%llu misses, %llu write-backs)",
            (unsigned long long)cs.misses, (unsigned long long)cs.writebacks);
  mmbStats st;
  OK(mmb_space_get_stats(a.plan.params_space, &st));
  cr_assert_leq(st.reserved_high, a.plan.budget, "the cache passed its space's limit");
  finish(&a);
  finish(&r);
}

MMB_TEST(train, auto_and_resident_weights_are_identical) { auto_equals_resident(0.0f); }

MMB_TEST(train, auto_and_resident_agree_with_momentum) { auto_equals_resident(0.9f); }

/* Tiles released a step late, as on a GPU: the same weights, bit for bit. */
MMB_TEST(train, auto_releasing_late_gives_the_resident_weights) {
  release_late = true;
  auto_equals_resident(0.9f);
  release_late = false;
}

typedef struct moved {
  unsigned long long written, fetched;   /* by the parameters' cache */
} moved;

static moved moved_by(const run_ *r) {
  mmbCacheStats cs;
  OK(mmb_space_get_cache_stats(r->plan.params_space, &cs));
  return (moved){cs.writeback_bytes, cs.fetched_bytes};
}

/* The convolution block's activations in chunks of 3 samples (batches of
   8, the last of 100 samples 4: chunks of 3, 3, 2 and 3, 1) go home through
   the cache and come back for backward: the same weights, loss and test
   accuracy, bit for bit, as resident; more bytes written home and fetched
   than the same cache without offload moves. (The bytes are compared
   without hints: whether a hint is taken depends on how far the cache's
   queue has got, so with hints the parameters' traffic varies a little
   from run to run, by more than the activations'.) */
static void offload_equals_resident(float momentum) {
  run_ o, o_plain, a_plain, r;
  size_t tile = 64 * 288 * sizeof(float);
  plan_mode = CNN_PLAN_AUTO;
  offload_chunk = 3;
  train(&o, "wide", (size_t)5 << 19, false, 2, 8, 100, 0.05f, momentum, tile, 0);
  no_hints = true;
  train(&o_plain, "wide", (size_t)5 << 19, false, 2, 8, 100, 0.05f, momentum, tile, 0);
  offload_chunk = 0;
  train(&a_plain, "wide", (size_t)5 << 19, false, 2, 8, 100, 0.05f, momentum, tile, 0);
  no_hints = false;
  plan_mode = CNN_PLAN_STREAMED;
  train(&r, "wide", (size_t)64 << 20, false, 2, 8, 100, 0.05f, momentum, tile, 0);
  cr_assert_eq(o.offload.chunks, 3);
  cr_assert_eq(o.checksum, r.checksum, "weights differ: %016llx offloaded, %016llx resident",
               o.checksum, r.checksum);
  cr_assert_eq(o.result.final_loss, r.result.final_loss);
  cr_assert_eq(o.result.test_accuracy, r.result.test_accuracy);
  cr_assert_eq(o_plain.checksum, r.checksum, "weights differ without hints");
  moved co = moved_by(&o_plain), ca = moved_by(&a_plain);
  cr_assert(co.written > ca.written && co.fetched > ca.fetched,
            "offload moved no activations: %llu/%llu bytes written, %llu/%llu fetched",
            co.written, ca.written, co.fetched, ca.fetched);
  finish(&o);
  finish(&o_plain);
  finish(&a_plain);
  finish(&r);
}

MMB_TEST(train, offloaded_activations_give_the_resident_weights) { offload_equals_resident(0.0f); }

MMB_TEST(train, offloaded_activations_agree_with_momentum) { offload_equals_resident(0.9f); }

/* A whole batch's gradients in one process are used only by the update
   right after each tile's: in every plan they stay out of the gradient
   arrays, whose homes keep what they held (nothing wrote them, through
   the cache or otherwise), while the weights are those of offloaded
   chunks, whose gradients go through the arrays (checked above). */
static void gradients_stay_out(cnn_plan_mode mode, size_t fast_limit, float momentum) {
  run_ r;
  size_t tile = 64 * 288 * sizeof(float);
  plan_mode = mode;
  mark_gradients = true;
  train(&r, "wide", fast_limit, false, 2, 8, 100, 0.05f, momentum, tile, 0);
  mark_gradients = false;
  plan_mode = CNN_PLAN_STREAMED;
  cr_assert_eq(marks_lost(&r.model), 0, "%zu gradient values went to the arrays",
               marks_lost(&r.model));
  cr_assert_lt(r.result.final_loss, 2.3, "it trained (final loss %.3f)", r.result.final_loss);
  if (mode == CNN_PLAN_AUTO) {   /* (the cache wrote the updated weights home) */
    mmbCacheStats cs;
    OK(mmb_space_get_cache_stats(r.plan.params_space, &cs));
    cr_assert(cs.writebacks > 0, "the cache wrote nothing home");
  }
  finish(&r);
}

MMB_TEST(train, a_batchs_gradients_stay_out_of_the_arrays) {
  gradients_stay_out(CNN_PLAN_AUTO, (size_t)5 << 19, 0.0f);
  gradients_stay_out(CNN_PLAN_AUTO, (size_t)5 << 19, 0.9f);
  gradients_stay_out(CNN_PLAN_STREAMED, (size_t)5 << 19, 0.0f);
  gradients_stay_out(CNN_PLAN_STREAMED, (size_t)64 << 20, 0.9f);   /* resident */
}

/* Offload needs the cache (the auto plan) and a chunk within the batch. */
MMB_TEST(train, offload_refuses_what_it_cannot_do) {
  char err[256] = "";
  cnn_plan plan = test_plan_mode(5 << 19, CNN_PLAN_STREAMED);
  cnn_model m;
  cnn_model_options mo = {.net = "wide", .input = {8, 8, 1}, .classes = 10, .seed = 5};
  OK(cnn_model_create(&mo, plan.capacity_iface, &m, err, sizeof err));
  cnn_offload off;
  cr_assert_eq(cnn_offload_create(&off, &plan, &m, 8, 3, err, sizeof err), MMB_INVALID_ARG);
  cr_assert(strstr(err, "--plan auto"), "%s", err);
  plan.mode = CNN_PLAN_AUTO;
  cr_assert_eq(cnn_offload_create(&off, &plan, &m, 8, 0, err, sizeof err), MMB_INVALID_ARG);
  cr_assert_eq(cnn_offload_create(&off, &plan, &m, 8, 9, err, sizeof err), MMB_INVALID_ARG);
  cr_assert(strstr(err, "1 to --batch"), "%s", err);
  OK(cnn_offload_create(&off, &plan, &m, 8, 8, err, sizeof err));
  cr_assert_eq(off.chunks, 1);
  OK(cnn_offload_destroy(&off));
  OK(cnn_model_destroy(&m));
  OK(cnn_plan_destroy(&plan));
}

/* A chunk whose tile the cache cannot hold beside a step's weight tiles is
   refused when offload is set up, not found out of memory in training. */
MMB_TEST(train, offload_refuses_a_chunk_the_cache_cannot_hold) {
  char err[256] = "";
  cnn_plan plan = test_plan_mode(5 << 19, CNN_PLAN_AUTO);
  cnn_model m;
  cnn_model_options mo = {.net = "wide", .input = {8, 8, 1}, .classes = 10, .seed = 5,
                          .tile_bytes = 64 * 288 * sizeof(float)};
  OK(cnn_model_create(&mo, plan.capacity_iface, &m, err, sizeof err));
  cr_assert_eq(cnn_plan_place(&plan, m.params, m.n_params, err, sizeof err), MMB_OK, "%s", err);
  cnn_offload off;
  cr_assert_eq(cnn_offload_create(&off, &plan, &m, 256, 256, err, sizeof err), MMB_INVALID_ARG);
  cr_assert(strstr(err, "lower --offload or raise --fast-limit"), "%s", err);
  OK(cnn_offload_create(&off, &plan, &m, 256, 8, err, sizeof err));
  OK(cnn_offload_destroy(&off));
  OK(cnn_plan_unplace(&plan, m.params, m.n_params));
  OK(cnn_model_destroy(&m));
  OK(cnn_plan_destroy(&plan));
}

/* Zeros into the current gradient tile of a walk (if it has one). */
static void zero_grad(const cnn_tiles *t, const cnn_param *p) {
  for (size_t r = 0; t->grad && r < t->r1 - t->r0; r++)
    memset((float *)t->grad->ptr + r * t->ld, 0, p->cols * sizeof(float));
}

/* The blocks of rows one walk visits, in order, into out (at most 64);
   backward walks write zeros into the gradient tiles they hold. */
static size_t walk_rows(cnn_plan *plan, cnn_param *p, cnn_walk walk, size_t *out) {
  cnn_tiles t;
  size_t n = 0;
  mmbError e = cnn_tiles_begin(plan, p, walk, &t);
  for (; e == MMB_OK && t.value && n < 64; e = cnn_tiles_next(&t)) {
    out[n++] = t.r0 / p->tile_rows;
    zero_grad(&t, p);
  }
  OK(cnn_tiles_end(&t));
  OK(e);
  return n;
}

/* Every plan walks a parameter's blocks first to last forward and last to
   first backward, so the plans sum in one order and each walk starts on
   the tiles the one before ended on: through the auto plan's cache, of
   fewer tiles than the parameter has, backward's first tile is a hit
   (walked first to last again, its first tile was the first evicted). */
static void walks_turn_back(cnn_plan_mode mode, size_t fast_limit) {
  char err[256] = "";
  cnn_plan plan = test_plan_mode(fast_limit, mode);
  cnn_param p;
  unsigned long long state = 3;
  OK(cnn_param_create(&p, "w", 2048, 288, 0.1f, 64 * 288 * sizeof(float), false, &state,
                      plan.capacity_iface));
  cr_assert_eq(cnn_plan_place(&plan, &p, 1, err, sizeof err), MMB_OK, "%s", err);
  cr_assert_eq(plan.streamed, mode == CNN_PLAN_STREAMED);
  size_t count = (p.rows + p.tile_rows - 1) / p.tile_rows, fwd[64], bwd[64];
  cr_assert(count >= 8 && count <= 64, "%zu tiles", count);
  cr_assert_eq(walk_rows(&plan, &p, CNN_WALK_VALUES, fwd), count);
  cr_assert_eq(walk_rows(&plan, &p, CNN_WALK_BACKWARD, bwd), count);
  for (size_t i = 0; i < count; i++) {
    cr_assert_eq(fwd[i], i, "forward visits block %zu at %zu", fwd[i], i);
    cr_assert_eq(bwd[i], count - 1 - i, "backward visits block %zu at %zu", bwd[i], i);
  }
  if (mode == CNN_PLAN_AUTO) {
    mmbCacheConfig cfg;
    OK(mmb_space_get_cache(plan.params_space, &cfg));
    cr_assert_lt(cfg.budget_bytes, count * p.tile_rows * p.cols * sizeof(float),
                 "the cache holds the whole parameter");
    mmbCacheStats before, after;
    cr_assert_eq(walk_rows(&plan, &p, CNN_WALK_VALUES, fwd), count);
    OK(mmb_space_get_cache_stats(plan.params_space, &before));
    cnn_tiles t;
    OK(cnn_tiles_begin(&plan, &p, CNN_WALK_BACKWARD, &t));
    OK(mmb_space_get_cache_stats(plan.params_space, &after));
    cr_assert(t.grad, "backward holds a gradient tile");
    zero_grad(&t, &p);
    OK(cnn_tiles_end(&t));
    cr_assert_eq(after.hits, before.hits + 1, "backward's first tile missed (%llu hits, then %llu)",
                 (unsigned long long)before.hits, (unsigned long long)after.hits);
  }
  OK(cnn_plan_unplace(&plan, &p, 1));
  cnn_param_destroy(&p);
  OK(cnn_plan_destroy(&plan));
}

MMB_TEST(train, walks_turn_back_in_every_plan) {
  walks_turn_back(CNN_PLAN_AUTO, (size_t)1 << 20);
  walks_turn_back(CNN_PLAN_STREAMED, (size_t)5 << 19);
  walks_turn_back(CNN_PLAN_RESIDENT, (size_t)64 << 20);
}

/* The auto plan's hints look past the tiles the cache holds: a backward
   walk that starts on the tiles forward left cached has the first one it
   lacks fetched at once, and the one after, while it computes on those
   (advising only the next two, which are cached, fetched nothing until the
   walk got there). */
MMB_TEST(train, a_walk_fetches_the_first_tile_the_cache_lacks) {
  char err[256] = "";
  cnn_plan plan = test_plan_mode((size_t)1 << 20, CNN_PLAN_AUTO);
  cnn_param p[2];
  unsigned long long state = 3;
  size_t tile = 64 * 288 * sizeof(float);
  OK(cnn_param_create(&p[0], "a", 1024, 288, 0.1f, tile, false, &state, plan.capacity_iface));
  OK(cnn_param_create(&p[1], "b", 128, 288, 0.1f, tile, false, &state, plan.capacity_iface));
  cr_assert_eq(cnn_plan_place(&plan, p, 2, err, sizeof err), MMB_OK, "%s", err);
  /* seven tiles: forward over a (16 tiles) then b (2) leaves a's last five */
  OK(mmb_space_set_cache(plan.params_space,
                         &(mmbCacheConfig){.budget_bytes = 7 * tile, .clean_share = 0.5}));
  size_t rows[64];
  cr_assert_eq(walk_rows(&plan, &p[0], CNN_WALK_VALUES, rows), 16);
  cr_assert_eq(walk_rows(&plan, &p[1], CNN_WALK_VALUES, rows), 2);
  mmbCacheStats before, after;
  OK(mmb_space_get_cache_stats(plan.params_space, &before));
  cnn_tiles t;
  OK(cnn_tiles_begin(&plan, &p[0], CNN_WALK_BACKWARD, &t));
  OK(mmb_space_get_cache_stats(plan.params_space, &after));
  zero_grad(&t, &p[0]);
  OK(cnn_tiles_end(&t));
  cr_assert_eq(after.hits, before.hits + 1, "backward's first tile is cached");
  cr_assert_eq(after.fetched_bytes - before.fetched_bytes, 2 * tile,
               "%llu bytes fetched as the walk began: a's tiles 10 and 9, five and six ahead",
               (unsigned long long)(after.fetched_bytes - before.fetched_bytes));
  OK(cnn_plan_unplace(&plan, p, 2));
  cnn_param_destroy(&p[0]);
  cnn_param_destroy(&p[1]);
  OK(cnn_plan_destroy(&plan));
}

static uint64_t pinned(const cnn_plan *plan) {
  mmbCacheStats cs;
  OK(mmb_space_get_cache_stats(plan->params_space, &cs));
  return cs.pinned_bytes;
}

/* One backward walk writing 1 + its step into each gradient tile, checked
   at home after: every tile released once, written home once. */
static void walk_writing_steps(cnn_plan *plan, cnn_param *p, size_t tile, uint64_t most) {
  cnn_tiles t;
  size_t step = 0;
  mmbError e = cnn_tiles_begin(plan, p, CNN_WALK_BACKWARD, &t);
  for (; e == MMB_OK && t.value; e = cnn_tiles_next(&t), step++) {
    for (size_t r = 0; r < t.r1 - t.r0; r++)
      for (size_t c = 0; c < p->cols; c++) ((float *)t.grad->ptr)[r * t.ld + c] = 1.0f + step;
    cr_assert_leq(pinned(plan), most, "step %zu pins %llu bytes", step,
                  (unsigned long long)pinned(plan));
    if (step > 0 && most >= 4 * tile)
      cr_assert_eq(pinned(plan), 4 * tile, "step %zu: the step before's tiles are not held", step);
  }
  OK(cnn_tiles_end(&t));
  OK(e);
  cr_assert_eq(pinned(plan), 0, "the walk's end left tiles pinned");
  size_t count = (p->rows + p->tile_rows - 1) / p->tile_rows;
  cr_assert_eq(step, count);
  OK(mmb_array_flush(p->grad));
  const float *g = mmb_array_ptr(p->grad);
  for (size_t r = 0; r < p->rows; r++)
    cr_assert_eq(g[r * p->cols + 7], 1.0f + (count - 1 - r / p->tile_rows), "row %zu", r);
}

/* release_late: a walk holds the step before's tiles beside the current
   ones, and when the cache has no room for both, it lets them go first
   rather than fail. A thread queue stands in for the GPU's compute stream:
   each step's marker on it is waited for once, before its tiles go. */
MMB_TEST(train, a_late_release_holds_one_step_and_gives_way_when_full) {
  char err[256] = "";
  cnn_plan plan = test_plan_mode((size_t)1 << 20, CNN_PLAN_AUTO);
  plan.release_late = true;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &plan.compute_q));
  cnn_param p;
  unsigned long long state = 3;
  size_t tile = 64 * 288 * sizeof(float);
  OK(cnn_param_create(&p, "w", 1024, 288, 0.1f, tile, false, &state, plan.capacity_iface));
  cr_assert_eq(cnn_plan_place(&plan, &p, 1, err, sizeof err), MMB_OK, "%s", err);
  OK(mmb_space_set_cache(plan.params_space,
                         &(mmbCacheConfig){.budget_bytes = 8 * tile, .clean_share = 0.5}));
  walk_writing_steps(&plan, &p, tile, 4 * tile);   /* room: two steps of two tiles */
  OK(mmb_space_set_cache(plan.params_space,
                         &(mmbCacheConfig){.budget_bytes = 3 * tile, .clean_share = 0.5}));
  walk_writing_steps(&plan, &p, tile, 3 * tile);   /* room for one step alone */
  OK(cnn_plan_unplace(&plan, &p, 1));
  cnn_param_destroy(&p);
  OK(cnn_plan_destroy(&plan));
}

/* 3000 batches of one image: none reaches a provider after the first, and
   the process does not grow (a request kept per batch would add ~0.8 MiB;
   the margin is for the C library's own bookkeeping, which settles once:
   36 to 240 KiB after 3000 batches, and as much after 12000). */
static void flat_after_the_first_batch(const char *net, size_t fast_limit) {
  run_ r;
  train(&r, net, fast_limit, false, 1, 1, 3000, 0.01f, 0.0f, 64 * 288 * sizeof(float), 0);
  cr_assert_eq(r.result.trips_after_first_batch, 0, "%llu provider trips after the first batch",
               r.result.trips_after_first_batch);
  cr_assert_gt(r.result.rss_after_first_batch, 0);
#ifndef __SANITIZE_ADDRESS__   /* (its quarantine holds freed memory: RSS grows regardless) */
  cr_assert_leq(r.result.rss_end, r.result.rss_after_first_batch + (512 << 10),
                "RSS grew from %zu to %zu bytes", r.result.rss_after_first_batch,
                r.result.rss_end);
#endif
  finish(&r);
}

MMB_TEST(train, resident_plan_is_flat_after_the_first_batch) {
  flat_after_the_first_batch("seed", 1 << 20);
}

MMB_TEST(train, streamed_plan_is_flat_after_the_first_batch) {
  flat_after_the_first_batch("wide", (size_t)5 << 19);
}

/* The GPU's run g ended where the host's run h did, to rounding (the sums
   run in another order there): the loss, and every weight. */
static void same_to_rounding(const run_ *g, const run_ *h) {
  cr_assert_leq(fabs(g->result.final_loss - h->result.final_loss), 1e-3,
                "loss %f on the GPU, %f on the host", g->result.final_loss, h->result.final_loss);
  for (size_t i = 0; i < h->model.n_params; i++) {
    const float *a = mmb_array_ptr(g->model.params[i].value), *b = mmb_array_ptr(h->model.params[i].value);
    for (size_t j = 0; j < h->model.params[i].rows * h->model.params[i].cols; j++)
      cr_assert_leq(fabs(a[j] - b[j]), 1e-3, "%s[%zu]", h->model.params[i].name, j);
  }
}

/* On a device: the same steps as on the host. */
MMB_TEST(train_gpu, matches_the_host) {
  run_ g, h;
  train(&g, "seed", 0, true, 1, 10, 200, 0.1f, 0.0f, 0, 0);
  train(&h, "seed", 0, false, 1, 10, 200, 0.1f, 0.0f, 0, 0);
  same_to_rounding(&g, &h);
  finish(&g);
  finish(&h);
}

/* On a device, mmb's tile cache as the plan (a budget the wide net's
   weights do not fit), with and without the activations offloaded: the
   host's run with the same plan, to rounding. */
static void gpu_auto_matches_the_host(size_t chunk) {
  run_ g, h;
  size_t tile = 64 * 288 * sizeof(float);
  plan_mode = CNN_PLAN_AUTO;
  offload_chunk = chunk;
  train(&g, "wide", (size_t)5 << 19, true, 1, 8, 96, 0.05f, 0.9f, tile, 0);
  train(&h, "wide", (size_t)5 << 19, false, 1, 8, 96, 0.05f, 0.9f, tile, 0);
  plan_mode = CNN_PLAN_STREAMED;
  offload_chunk = 0;
  mmbCacheStats cs;
  OK(mmb_space_get_cache_stats(g.plan.params_space, &cs));
  cr_assert(cs.writebacks > 0, "the device's cache wrote nothing home");
  same_to_rounding(&g, &h);
  finish(&g);
  finish(&h);
}

MMB_TEST(train_gpu, the_auto_plan_matches_the_host) { gpu_auto_matches_the_host(0); }

MMB_TEST(train_gpu, offloaded_activations_match_the_host) { gpu_auto_matches_the_host(3); }
