/* The training loop (see train.h). */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define PIXEL_SCALE (1.0f / 255.0f)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

unsigned long long cnn_provider_trips(void) {
  size_t n = 0;
  unsigned long long trips = 0;
  if (mmb_space_count(&n) != MMB_OK) return 0;
  for (size_t i = 0; i < n; i++) {
    mmbMemSpace *s;
    mmbStats st;
    if (mmb_space_at(i, &s) == MMB_OK && mmb_space_get_stats(s, &st) == MMB_OK)
      trips += st.n_provider_allocs + st.n_provider_frees;
  }
  return trips;
}

size_t cnn_rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (!f) return 0;
  int got = fscanf(f, "%lu %lu", &size, &resident);
  fclose(f);
  return got == 2 ? resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

/* ---- batches: a data set's images and labels, tile by tile, prefetched
   into the fast tier on the copy queue ------------------------------------ */

typedef struct batch_walk {
  cnn_plan *plan;
  mmbTileIterator *images, *labels;
} batch_walk;

/* Tiles a data set by batches, unless it is already: re-tiling every epoch
   would churn the heap (a tile grid is a large allocation). */
static mmbError tile_batches(cnn_dataset *ds, size_t batch) {
  mmbArrayTile *first;
  size_t rows = batch < ds->n ? batch : ds->n;
  mmbError e = mmb_tile_at(ds->images, &(mmbIndex){2, {0, 0}}, &first);
  if (e != MMB_OK || first->dim[0] == rows) return e;
  e = mmb_array_tile(ds->images, &(mmbDimensions){2, {batch, ds->rows * ds->cols}});
  return e == MMB_OK ? mmb_array_tile(ds->labels, &(mmbDimensions){1, {batch}}) : e;
}

static mmbError batches_begin(cnn_plan *plan, cnn_dataset *ds, size_t batch, batch_walk *w) {
  *w = (batch_walk){.plan = plan};
  mmbError e = tile_batches(ds, batch);
  /* depth 1: the next batch moves while this one computes (double buffering) */
  mmbTileIteratorOptions o = {.queue = plan->copy_q, .space = plan->acts_space, .depth = 1,
                              .access = MMB_READ};
  if (e == MMB_OK) e = mmb_tile_iterator_create(ds->images, &o, &w->images);
  if (e == MMB_OK) e = mmb_tile_iterator_create(ds->labels, &o, &w->labels);
  return e;
}

static mmbError batches_next(batch_walk *w) {
  mmbError e = cnn_plan_handoff(w->plan);   /* the kernels are done with this batch */
  if (e == MMB_OK) e = mmb_tile_iterator_next(w->images);
  if (e == MMB_OK) e = mmb_tile_iterator_next(w->labels);
  return e;
}

static mmbError batches_end(batch_walk *w) {
  mmbError e = cnn_plan_handoff(w->plan), e2;
  if (w->images && (e2 = mmb_tile_iterator_destroy(w->images)) != MMB_OK && e == MMB_OK) e = e2;
  if (w->labels && (e2 = mmb_tile_iterator_destroy(w->labels)) != MMB_OK && e == MMB_OK) e = e2;
  *w = (batch_walk){0};
  return e;
}

/* ---- one batch ------------------------------------------------------------ */

/* The batch's images as floats in [0, 1], in the pass's region. */
static mmbError input(cnn_pass *p, const mmbArrayTile *images, size_t px, float **x) {
  mmbError e = mmb_region_alloc(p->region, p->batch * px * sizeof(float), 64, (void **)x);
  if (e == MMB_OK) p->ops->bytes_to_float(p->ops->ctx, images->ptr, p->batch * px, PIXEL_SCALE, *x);
  return e;
}

/* Forward, loss and backward (with the update) of one batch; stats in the
   compute tier collect the loss and the correct predictions. Data-parallel,
   backward all-reduces each gradient as it has it, and the updates follow
   once they are summed; the loss is a mean over the global batch's `norm`
   rows. */
static mmbError train_batch(cnn_plan *plan, cnn_model *m, const cnn_train_options *o,
                            size_t norm, const mmbArrayTile *images, const mmbArrayTile *labels,
                            float *stats) {
  const cnn_sgd *sgd = &o->sgd;
  cnn_dist *dist = o->dist;
  bool parallel = cnn_dist_active(dist);
  cnn_pass p = {.plan = plan, .ops = plan->ops, .region = plan->region, .batch = images->dim[0],
                .sgd = parallel ? NULL : sgd, .norm = norm, .dist = parallel ? dist : NULL};
  float *x, *logits, *dlogits;
  mmbRegion *backward;
  mmbError e = mmb_region_reset(plan->region);
  if (e == MMB_OK) e = input(&p, images, cnn_shape_size(m->input), &x);
  if (e == MMB_OK)
    e = o->offload ? cnn_offload_forward(o->offload, m, &p, x, true, &logits)
                   : cnn_model_forward(m, &p, x, &logits);
  if (e == MMB_OK) e = cnn_loss(&p, logits, labels->ptr, m->classes, stats, &dlogits);
  if (e == MMB_OK) e = mmb_region_push(plan->region, &backward);
  if (e != MMB_OK) return e;
  p.region = backward;   /* backward's temporaries go with the child */
  e = o->offload ? cnn_offload_backward(o->offload, m, &p, dlogits)
                 : cnn_model_backward(m, &p, dlogits);
  mmbError e2 = mmb_region_destroy(backward);
  if (e == MMB_OK && parallel) {
    p.sgd = sgd;
    e = cnn_model_apply(m, &p);
  }
  return e != MMB_OK ? e : e2;
}

static mmbError eval_batch(cnn_plan *plan, cnn_model *m, cnn_offload *offload,
                           const mmbArrayTile *images, const mmbArrayTile *labels, size_t rows,
                           float *stats) {
  cnn_pass p = {.plan = plan, .ops = plan->ops, .region = plan->region, .batch = rows};
  float *x, *logits;
  mmbError e = mmb_region_reset(plan->region);
  if (e == MMB_OK) e = input(&p, images, cnn_shape_size(m->input), &x);
  if (e == MMB_OK)
    e = offload ? cnn_offload_forward(offload, m, &p, x, false, &logits)
                : cnn_model_forward(m, &p, x, &logits);
  if (e == MMB_OK) plan->ops->count_correct(plan->ops->ctx, logits, labels->ptr, rows, m->classes, stats);
  return e;
}

/* Two floats in the compute tier for a pass's loss and correct count. */
static mmbError stats_new(cnn_plan *plan, mmbAllocation **a, float **stats) {
  mmbError e = mmb_allocate(2 * sizeof(float), plan->acts_iface, a);
  if (e != MMB_OK) return e;
  *stats = mmb_allocation_ptr(*a);
  plan->ops->zero(plan->ops->ctx, *stats, 2);
  return MMB_OK;
}

mmbError cnn_evaluate(cnn_plan *plan, cnn_model *m, cnn_offload *offload, cnn_dataset *ds,
                      size_t batch, size_t limit, double *accuracy, size_t *samples) {
  if (!limit || limit > ds->n) limit = ds->n;
  mmbAllocation *a;
  float *stats, host[2];
  batch_walk w;
  mmbError e = stats_new(plan, &a, &stats);
  if (e != MMB_OK) return e;
  size_t seen = 0;
  if ((e = batches_begin(plan, ds, batch, &w)) == MMB_OK) {
    for (mmbArrayTile *ti; e == MMB_OK && seen < limit && (ti = mmb_tile_iterator_tile(w.images));
         e = e == MMB_OK ? batches_next(&w) : e) {
      size_t rows = ti->dim[0] < limit - seen ? ti->dim[0] : limit - seen;
      e = eval_batch(plan, m, offload, ti, mmb_tile_iterator_tile(w.labels), rows, stats);
      seen += rows;
    }
  }
  mmbError e2 = batches_end(&w);
  if (e == MMB_OK) e = e2;
  plan->ops->read(plan->ops->ctx, stats, 2, host);
  if ((e2 = mmb_free(a)) != MMB_OK && e == MMB_OK) e = e2;
  if (e == MMB_OK) {
    *accuracy = seen ? host[1] / (double)seen : 0.0;
    *samples = seen;
  }
  return e;
}

/* ---- epochs ----------------------------------------------------------------- */

static void epoch_order(size_t *order, size_t n, unsigned long long seed, size_t epoch) {
  for (size_t i = 0; i < n; i++) order[i] = i;
  unsigned long long state = seed + epoch;
  for (size_t i = n - 1; i > 0 && epoch > 0; i--) {   /* Fisher-Yates */
    size_t j = (size_t)(cnn_random_next(&state) % (i + 1)), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}

static void progress(const cnn_train_options *o, size_t epoch, size_t done, size_t total,
                     double loss, double *last) {
  double t = now();
  if (!o->progress || (t - *last < 0.1 && done < total)) return;
  *last = t;
  int width = 30, filled = total ? (int)(width * done / total) : width;
  fprintf(stderr, "\repoch %zu/%zu [%.*s%*s] %3d%% loss %.4f ", epoch, o->epochs, filled,
          "##############################", width - filled, "", (int)(100 * done / total), loss);
  if (done == total) fprintf(stderr, "\r%*s\r", width + 40, "");
  fflush(stderr);
}

typedef struct epoch_state {
  cnn_plan *plan;
  cnn_model *m;
  const cnn_train_options *o;
  float *stats;
  cnn_result *r;
  bool first_batch_seen;
  size_t n;              /* the training set's samples (over every rank) */
  size_t local_batch;    /* this rank's share of a batch */
  size_t diverged;       /* the batch after which training had diverged; 0: it has not */
  char diverged_how[32]; /* the loss then */
} epoch_state;

/* How often (in batches) one process looks at the running loss: a read of
   two floats, and on a GPU a wait for the batch. Data-parallel ranks look at
   the end of the epoch only, where they agree. */
#define LOSS_CHECK_BATCHES 50

/* Training has diverged when the mean loss is not finite, or above ten
   times a guess's (ln classes: 23 for 10 classes, the true class given
   e^-23 on average; the loss clamps a sample at -ln 1e-30 = 69, so a net
   that blew up reads large, not infinite). No learning rate that trains
   gets there: the seed and wide nets start near ln 10 = 2.3. */
static bool diverged(double mean_loss, size_t classes) {
  return !isfinite(mean_loss) || mean_loss > 10 * log((double)classes);
}

/* Global batches in an epoch of n samples: data-parallel, a last batch too
   small to give every rank a sample is left out. */
static size_t epoch_batches(const cnn_train_options *o, size_t n) {
  size_t ranks = cnn_dist_active(o->dist) ? (size_t)o->dist->ranks : 1;
  size_t total = n / o->batch + (n % o->batch >= ranks);
  return o->max_batches && o->max_batches < total ? o->max_batches : total;
}

static void note_divergence(epoch_state *s, size_t batch, double loss) {
  s->diverged = batch;
  snprintf(s->diverged_how, sizeof s->diverged_how, "%.4g", loss);
}

static mmbError train_epoch(epoch_state *s, cnn_dataset *ds, size_t index, cnn_epoch *ep) {
  const cnn_train_options *o = s->o;
  size_t total = epoch_batches(o, s->n);
  batch_walk w;
  double last = 0, t0 = now();
  float host[2] = {0, 0};
  s->plan->ops->zero(s->plan->ops->ctx, s->stats, 2);
  mmbError e = batches_begin(s->plan, ds, s->local_batch, &w);
  for (mmbArrayTile *ti; e == MMB_OK && ep->batches < total &&
                         (ti = mmb_tile_iterator_tile(w.images));
       e = e == MMB_OK ? batches_next(&w) : e) {
    size_t first = ep->batches * o->batch, norm = s->n - first < o->batch ? s->n - first : o->batch;
    e = train_batch(s->plan, s->m, o, norm, ti, mmb_tile_iterator_tile(w.labels), s->stats);
    ep->samples += ti->dim[0];
    ep->batches++;
    if (!s->first_batch_seen && e == MMB_OK) {   /* from here on: no provider trip, flat RSS */
      s->plan->ops->sync(s->plan->ops->ctx);
      s->first_batch_seen = true;
      s->r->trips_after_first_batch = cnn_provider_trips();
      s->r->rss_after_first_batch = cnn_rss_bytes();
    }
    bool look = !cnn_dist_active(o->dist) && ep->batches % LOSS_CHECK_BATCHES == 0;
    if (e == MMB_OK && (look || (o->progress && now() - last >= 0.1)))
      s->plan->ops->read(s->plan->ops->ctx, s->stats, 2, host);
    if (o->progress && e == MMB_OK)
      progress(o, index, ep->batches, total, host[0] / (ep->samples ? ep->samples : 1), &last);
    if (e == MMB_OK && look && diverged(host[0] / (double)ep->samples, s->m->classes)) {
      note_divergence(s, ep->batches, host[0] / (double)ep->samples);
      e = MMB_ERROR;
    }
  }
  mmbError e2 = batches_end(&w);
  if (e == MMB_OK) e = e2;
  s->plan->ops->read(s->plan->ops->ctx, s->stats, 2, host);   /* waits for the last batch */
  ep->seconds = now() - t0;
  if (cnn_dist_active(o->dist) && e == MMB_OK) {   /* over every rank */
    double sums[3] = {host[0], host[1], (double)ep->samples};
    cnn_dist_sum(o->dist, sums, 3);
    host[0] = (float)sums[0];
    host[1] = (float)sums[1];
    ep->samples = (size_t)sums[2];
    ep->seconds = cnn_dist_max(o->dist, ep->seconds);
  }
  ep->loss = ep->samples ? host[0] / ep->samples : 0;
  ep->train_accuracy = ep->samples ? host[1] / ep->samples : 0;
  ep->samples_per_s = ep->seconds > 0 ? ep->samples / ep->seconds : 0;
  if (e == MMB_OK && ep->samples && diverged(ep->loss, s->m->classes)) {
    note_divergence(s, ep->batches, ep->loss);
    e = MMB_ERROR;
  }
  return e;
}

/* The order of an epoch's samples on this rank: data-parallel, its share of
   each global batch of the epoch's order (all of it alone). */
static size_t rank_order(const cnn_train_options *o, const size_t *order, size_t n, size_t *out) {
  if (!cnn_dist_active(o->dist)) {
    for (size_t i = 0; i < n; i++) out[i] = order[i];
    return n;
  }
  size_t k = 0, total = epoch_batches(o, n);
  for (size_t b = 0; b < total; b++) {
    size_t start, count;
    cnn_dist_share(o->dist, b * o->batch, o->batch, n, &start, &count);
    for (size_t i = 0; i < count; i++) out[k++] = order[start + i];
  }
  return k;
}

mmbError cnn_train(cnn_plan *plan, cnn_model *m, cnn_dataset *train, cnn_dataset *test,
                   const cnn_train_options *o, cnn_result *r, char *err, size_t err_len) {
  *r = (cnn_result){0};
  bool parallel = cnn_dist_active(o->dist);
  cnn_dataset mine = {0};   /* this rank's samples, in the epoch's order */
  size_t *order = NULL, *local = NULL;
  mmbAllocation *stats_a = NULL;
  epoch_state s = {.plan = plan, .m = m, .o = o, .r = r, .n = train->n,
                   .local_batch = parallel ? o->batch / (size_t)o->dist->ranks : o->batch};
  mmbError e = stats_new(plan, &stats_a, &s.stats);
  /* later epochs (and every epoch of a rank's share) visit a gathered copy */
  bool gather = o->epochs > 1 || parallel;
  if (e == MMB_OK && gather) {
    if (!(order = malloc(train->n * sizeof *order)) || !(local = malloc(train->n * sizeof *local)))
      e = MMB_OUT_OF_MEMORY;
    if (e == MMB_OK) {
      epoch_order(order, train->n, o->seed, 0);
      size_t n_local = rank_order(o, order, train->n, local);
      e = n_local ? cnn_dataset_like(train, n_local, plan->capacity_iface, &mine) : MMB_INVALID_ARG;
    }
    if (e == MMB_OK) cnn_dataset_gather(train, local, &mine);   /* touched now: a flat RSS */
  }
  if (e == MMB_OK) e = tile_batches(train, o->batch);
  if (e == MMB_OK && mine.images) e = tile_batches(&mine, s.local_batch);
  if (e == MMB_OK && test) e = tile_batches(test, o->batch);
  if (e != MMB_OK) snprintf(err, err_len, "setting up the training loop: %s", mmb_error_string(e));
  for (size_t epoch = 0; e == MMB_OK && epoch < o->epochs; epoch++) {
    cnn_dataset *ds = parallel ? &mine : train;
    if (epoch > 0) {
      epoch_order(order, train->n, o->seed, epoch);
      rank_order(o, order, train->n, local);
      cnn_dataset_gather(train, local, &mine);
      ds = &mine;
    }
    cnn_epoch ep = {.index = epoch + 1, .epochs = o->epochs};
    if ((e = train_epoch(&s, ds, epoch + 1, &ep)) != MMB_OK) {
      if (s.diverged)
        snprintf(err, err_len, "training diverged: the mean loss is %s after batch %zu of "
                 "epoch %zu, where a guess's is %.2f (lr %g is too large for this net: try a "
                 "smaller --lr)", s.diverged_how, s.diverged, epoch + 1,
                 log((double)m->classes), (double)o->sgd.lr);
      else
        snprintf(err, err_len, "training, epoch %zu: %s", epoch + 1, mmb_error_string(e));
      break;
    }
    if (test && (e = cnn_evaluate(plan, m, o->offload, test, o->batch, o->test_limit,
                                  &ep.test_accuracy, &r->test_samples)) != MMB_OK) {
      snprintf(err, err_len, "testing, epoch %zu: %s", epoch + 1, mmb_error_string(e));
      break;
    }
    r->train_samples += ep.samples;
    r->batches += ep.batches;
    r->seconds += ep.seconds;
    r->final_loss = ep.loss;
    r->train_accuracy = ep.train_accuracy;
    r->test_accuracy = ep.test_accuracy;
    if (o->on_epoch) o->on_epoch(&ep, o->arg);
  }
  r->trips_after_first_batch = cnn_provider_trips() - r->trips_after_first_batch;
  r->rss_end = cnn_rss_bytes();
  free(order);
  free(local);
  if (mine.images) cnn_dataset_destroy(&mine);
  if (stats_a) {
    mmbError f = mmb_free(stats_a);
    if (e == MMB_OK) e = f;
  }
  return e;
}
