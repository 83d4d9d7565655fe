/* build/bin/cnn: trains a CNN on Fashion-MNIST with its weights and
   activations tiled across memory tiers by mmb.

     build/bin/cnn                                   # seed net, 1 epoch, batch 10
     build/bin/cnn --net wide --fast-limit 11M --max-batches 200 --batch 64
     build/bin/cnn --device gpu --json
     build/bin/cnn --trace cnn.json && tools/mmb-plot cnn.json cnn.svg
     mpirun -np 2 build/bin/cnn --batch 64 --json   # data-parallel (dist.h)

   Exit status: 0 trained; 1 a failure at run time; 2 bad arguments or bad
   data files. */
#include "train.h"
#include "blas.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLASSES 10

typedef struct cli {
  const char *data, *net, *device, *trace, *save_weights, *plan;
  size_t epochs, batch, max_batches, test_limit, fast_limit, offload;
  double fast_percent;   /* --fast-limit P%: of the parameters' bytes */
  double lr, momentum;
  int threads;
  unsigned long long seed;
  bool json, no_hints;
} cli;

static const char usage[] =
    "usage: cnn [--data DIR] [--net seed|wide] [--epochs N] [--batch B] [--lr X]\n"
    "           [--momentum M] [--threads T] [--seed S] [--device cpu|gpu]\n"
    "           [--fast-limit SIZE|P%] [--max-batches N] [--test-limit N] [--trace FILE]\n"
    "           [--plan auto|resident|streamed] [--no-hints] [--offload N]\n"
    "           [--save-weights FILE] [--json]\n"
    "  --data DIR         IDX files of Fashion-MNIST (default data/fashion-mnist;\n"
    "                     scripts/fetch-fashion-mnist.sh puts them there)\n"
    "  --net seed|wide    seed: conv 3x3x4, pool, dense; wide: conv 3x3x32, pool,\n"
    "                     dense 2048, dense (11 M parameters)\n"
    "  --epochs N --batch B --lr X --momentum M   SGD (defaults 1, 10, 0.01, 0); under\n"
    "                     mpirun, B is the global batch, split across the ranks\n"
    "  --threads T        OpenBLAS threads (default 1)\n"
    "  --seed S           weights and epoch order (default 1)\n"
    "  --device cpu|gpu   gpu: cuBLAS and CUDA kernels on CUDA device 0\n"
    "  --fast-limit SIZE  bytes of the fast tier the parameters may hold (K, M, G\n"
    "                     suffixes, or P% of the parameters' bytes; default 8M when\n"
    "                     DRAM stands in for HBM, else all): parameters that do not\n"
    "                     fit stream through it in tiles\n"
    "  --plan auto|resident|streamed  how parameters reach the fast tier: auto (the\n"
    "                     default on a CPU): mmb's tile cache decides what stays;\n"
    "                     resident: all of them moved there (they must fit);\n"
    "                     streamed: the hand plan, resident if they fit, else the\n"
    "                     largest streamed in tiles (the default on a GPU)\n"
    "  --no-hints         auto: no WILLNEED advice for the next tile (plain LRU)\n"
    "  --offload N        auto: the convolution block's activations go in chunks of N\n"
    "                     samples to the capacity tier and come back for backward\n"
    "                     through the parameters' cache (a batch larger than the fast\n"
    "                     tier); the weights are bitwise those without it\n"
    "  --max-batches N    stop each epoch after N batches\n"
    "  --test-limit N     evaluate on the first N test images (default all)\n"
    "  --trace FILE       mmb's memory trace (Chrome JSON; tools/mmb-plot draws it)\n"
    "  --save-weights FILE  the trained weights, every parameter in order, as float32\n"
    "  --json             last line on stdout: one JSON object with the results\n";

static int bad(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "cnn: ");
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\n(cnn --help for the options)\n");
  return 2;
}

static bool parse_u64(const char *s, unsigned long long min, unsigned long long max,
                      unsigned long long *out) {
  if (!s || !*s || *s == '-' || *s == '+') return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v < min || v > max) return false;
  *out = v;
  return true;
}

static bool parse_size(const char *s, size_t *out) {
  if (!s || !*s || *s == '-' || *s == '+') return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  else if (*end == 'M' || *end == 'm') shift = 20;
  else if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) end++;
  if (errno || *end || v == 0 || v > (SIZE_MAX >> shift)) return false;
  *out = (size_t)v << shift;
  return true;
}

static bool parse_real(const char *s, double min, double max, double *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v) || v < min || v > max) return false;
  *out = v;
  return true;
}

/* "25%": a share of the parameters' bytes. */
static bool parse_percent(const char *s, double *out) {
  size_t n = strlen(s);
  if (n < 2 || s[n - 1] != '%') return false;
  char num[32];
  if (n - 1 >= sizeof num) return false;
  memcpy(num, s, n - 1);
  num[n - 1] = '\0';
  return parse_real(num, 1e-6, 1e6, out);
}

/* 0: parsed; 1: --help printed; 2: bad arguments (message printed). */
static int parse(int argc, char **argv, cli *c) {
  *c = (cli){.data = "data/fashion-mnist", .net = "seed", .device = "cpu", .epochs = 1,
             .batch = 10, .lr = 0.01, .threads = 1, .seed = 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage, stdout);
      return 1;
    }
    if (!strcmp(a, "--json")) {
      c->json = true;
      continue;
    }
    if (!strcmp(a, "--no-hints")) {
      c->no_hints = true;
      continue;
    }
    if (strncmp(a, "--", 2) != 0) return bad("unexpected argument '%s'%s", a, "");
    if (i + 1 >= argc) return bad("%s needs a value%s", a, "");
    const char *v = argv[++i];
    unsigned long long u = 0;   /* read only when its parse succeeded */
    bool ok = true;
    if (!strcmp(a, "--data")) c->data = v;
    else if (!strcmp(a, "--trace")) c->trace = v;
    else if (!strcmp(a, "--save-weights")) c->save_weights = v;
    else if (!strcmp(a, "--net")) ok = !strcmp(v, "seed") || !strcmp(v, "wide"), c->net = v;
    else if (!strcmp(a, "--device")) ok = !strcmp(v, "cpu") || !strcmp(v, "gpu"), c->device = v;
    else if (!strcmp(a, "--plan"))
      ok = !strcmp(v, "auto") || !strcmp(v, "resident") || !strcmp(v, "streamed"), c->plan = v;
    else if (!strcmp(a, "--epochs")) ok = parse_u64(v, 1, 100000, &u), c->epochs = u;
    else if (!strcmp(a, "--batch")) ok = parse_u64(v, 1, 1u << 20, &u), c->batch = u;
    else if (!strcmp(a, "--max-batches")) ok = parse_u64(v, 1, SIZE_MAX, &u), c->max_batches = u;
    else if (!strcmp(a, "--offload")) ok = parse_u64(v, 1, 1u << 20, &u), c->offload = u;
    else if (!strcmp(a, "--test-limit")) ok = parse_u64(v, 1, SIZE_MAX, &u), c->test_limit = u;
    else if (!strcmp(a, "--threads")) ok = parse_u64(v, 1, 1024, &u), c->threads = (int)u;
    else if (!strcmp(a, "--seed")) ok = parse_u64(v, 0, ULLONG_MAX, &c->seed);
    else if (!strcmp(a, "--lr")) ok = parse_real(v, 1e-12, 1e3, &c->lr);
    else if (!strcmp(a, "--momentum")) ok = parse_real(v, 0.0, 0.999999, &c->momentum);
    else if (!strcmp(a, "--fast-limit"))
      ok = parse_size(v, &c->fast_limit) || parse_percent(v, &c->fast_percent);
    else return bad("unknown option %s%s", a, "");
    if (!ok) return bad("bad value '%s' for %s", v, a);
  }
  return 0;
}

typedef struct run {
  cli c;
  cnn_dist dist;
  cnn_plan plan;
  cnn_dataset train, test;
  cnn_model model;
  cnn_blas blas;   /* the host's BLAS: its kernel, its best sgemm (not with --device gpu) */
  cnn_offload offload;
  bool have_plan, have_train, have_test, have_model, have_offload;
} run;

/* ---- output ---------------------------------------------------------------- */

static double mib(size_t b) { return b / 1048576.0; }

static void print_epoch(const cnn_epoch *e, void *arg) {
  printf("epoch %zu/%zu  loss %.4f  train %.2f%%  test %.2f%%  %.2f s  %.0f samples/s\n",
         e->index, e->epochs, e->loss, 100 * e->train_accuracy, 100 * e->test_accuracy,
         e->seconds, e->samples_per_s);
  fflush(stdout);
}

static void print_space(const char *what, mmbMemSpace *s, const mmbMemInterface *i) {
  mmbStats st;
  mmbError e = i ? mmb_interface_get_stats(i, &st) : mmb_space_get_stats(s, &st);
  if (e != MMB_OK) return;
  printf("  %-34s %9.2f MiB used, %9.2f MiB reserved, %llu provider trips\n", what,
         mib(st.used_high), mib(st.reserved_high), st.n_provider_allocs + st.n_provider_frees);
}

static void print_memory(cnn_plan *plan, const cnn_result *r) {
  char what[96];
  printf("memory high watermarks:\n");
  snprintf(what, sizeof what, "capacity: %.24s", plan->capacity_name);
  print_space(what, NULL, plan->capacity_iface);
  if (plan->budget) snprintf(what, sizeof what, "fast, parameters (limit %.2f MiB)", mib(plan->budget));
  else snprintf(what, sizeof what, "fast, parameters");
  print_space(what, plan->params_space, NULL);
  print_space("fast, activations and batches", plan->acts_space, NULL);
  printf("  after the first batch: %llu provider trips; RSS %.1f MiB then, %.1f MiB at the end\n",
         r->trips_after_first_batch, mib(r->rss_after_first_batch), mib(r->rss_end));
}

static size_t high_of(mmbMemSpace *s) {
  mmbStats st;
  return mmb_space_get_stats(s, &st) == MMB_OK ? st.used_high : 0;
}

static double train_gflops(const run *r, const cnn_result *res);
static void print_json(const run *rn, const cnn_result *r, unsigned long long checksum) {
  const cli *c = &rn->c;
  const cnn_plan *plan = &rn->plan;
  const cnn_model *m = &rn->model;
  const cnn_dist *d = &rn->dist;
  mmbCacheStats cs = {0};
  if (plan->params_space && mmb_space_get_cache_stats(plan->params_space, &cs) != MMB_OK)
    cs = (mmbCacheStats){0};
  printf("{\"net\": \"%s\", \"epochs\": %zu, \"batch\": %zu, \"lr\": %g, \"momentum\": %g, "
         "\"threads\": %d, \"device\": \"%s\", \"seed\": %llu, \"train_samples\": %zu, "
         "\"batches\": %zu, \"test_samples\": %zu, \"test_accuracy\": %.6f, "
         "\"train_accuracy\": %.6f, \"final_loss\": %.6f, \"seconds\": %.6f, "
         "\"seconds_per_batch\": %.9f, \"samples_per_s\": %.1f, \"params\": %zu, "
         "\"params_bytes\": %zu, \"fast_budget_bytes\": %zu, \"streamed\": %s, "
         "\"streamed_params\": %zu, \"fast_params_high_bytes\": %zu, "
         "\"activations_high_bytes\": %zu, \"provider_trips_after_first_batch\": %llu, "
         "\"rss_after_first_batch\": %zu, \"rss_end\": %zu, \"weights_fnv1a\": \"%016llx\", "
         "\"ranks\": %d, \"allreduces\": %zu, \"allreduce_seconds\": %.6f, "
         "\"allreduce_wait_seconds\": %.6f, \"blas_kernel\": \"%s\", \"gflops\": %.3f, "
         "\"sgemm_gflops_best\": %.3f, \"plan\": \"%s\", \"cache_hits\": %llu, "
         "\"cache_misses\": %llu, \"cache_fetched_bytes\": %llu, \"cache_writebacks\": %llu, "
         "\"cache_budget_bytes\": %llu, \"hints\": %s, \"cache_writeback_bytes\": %llu, "
         "\"offload_chunk\": %zu, \"offload_bytes\": %zu}\n",
         c->net, c->epochs, c->batch, c->lr, c->momentum, plan->gpu ? 0 : c->threads, c->device,
         c->seed, r->train_samples, r->batches, r->test_samples, r->test_accuracy,
         r->train_accuracy, r->final_loss, r->seconds, r->batches ? r->seconds / r->batches : 0.0,
         r->seconds > 0 ? r->train_samples / r->seconds : 0.0, cnn_model_param_count(m),
         cnn_model_param_bytes(m), plan->budget, plan->streamed ? "true" : "false",
         plan->n_streamed, high_of(plan->params_space), high_of(plan->acts_space),
         r->trips_after_first_batch, r->rss_after_first_batch, r->rss_end, checksum, d->ranks,
         d->reduces, d->reduce_seconds, d->wait_seconds, plan->gpu ? "" : rn->blas.kernel,
         train_gflops(rn, r), plan->gpu ? 0.0 : rn->blas.sgemm_gflops, c->plan,
         (unsigned long long)cs.hits, (unsigned long long)cs.misses,
         (unsigned long long)cs.fetched_bytes, (unsigned long long)cs.writebacks,
         (unsigned long long)cs.budget_bytes, plan->hints ? "true" : "false",
         (unsigned long long)cs.writeback_bytes, rn->have_offload ? rn->offload.chunk : 0,
         rn->have_offload ? cnn_offload_bytes(&rn->offload) : 0);
}

/* Every parameter's values, in order, as float32 (from the capacity tier:
   cnn_plan_unplace first). */
static int save_weights(const cnn_model *m, const char *path, char *err, size_t err_len) {
  FILE *f = fopen(path, "wb");
  bool ok = f != NULL;
  for (size_t i = 0; ok && i < m->n_params; i++) {
    const cnn_param *p = &m->params[i];
    ok = fwrite(mmb_array_ptr(p->value), sizeof(float), p->rows * p->cols, f) == p->rows * p->cols;
  }
  if (f && fclose(f)) ok = false;
  if (!ok) snprintf(err, err_len, "writing the weights to %s: %s", path, strerror(errno));
  return ok ? 0 : 1;
}

/* ---- the run ---------------------------------------------------------------- */


/* The training's rate in floating-point operations (this rank's samples:
   the sgemm it is compared with ran on this rank's threads). */
static double train_gflops(const run *r, const cnn_result *res) {
  size_t samples = res->train_samples / (size_t)(r->dist.ranks > 0 ? r->dist.ranks : 1);
  return res->seconds > 0 ? cnn_model_train_flops(&r->model) * samples / res->seconds * 1e-9 : 0;
}

/* Loads both sets; exit status 2 on a defect of the files. */
static int load_data(run *r, char *err, size_t err_len) {
  mmbError e = cnn_dataset_load(r->c.data, "train", CLASSES, r->plan.capacity_iface, &r->train,
                                err, err_len);
  if (e != MMB_OK) return e == MMB_IO ? 2 : 1;
  r->have_train = true;
  if ((e = cnn_dataset_load(r->c.data, "t10k", CLASSES, r->plan.capacity_iface, &r->test, err,
                            err_len)) != MMB_OK)
    return e == MMB_IO ? 2 : 1;
  r->have_test = true;
  if (r->c.batch > r->train.n) {
    snprintf(err, err_len, "--batch %zu is larger than the %zu training images: every batch "
             "would be the whole set", r->c.batch, r->train.n);
    return 2;
  }
  if (r->train.rows != r->test.rows || r->train.cols != r->test.cols) {
    snprintf(err, err_len, "training images are %zux%zu but test images %zux%zu", r->train.rows,
             r->train.cols, r->test.rows, r->test.cols);
    return 2;
  }
  return 0;
}

static int build_model(run *r, char *err, size_t err_len) {
  cnn_model_options mo = {.net = r->c.net, .input = {r->train.rows, r->train.cols, 1},
                          .classes = CLASSES, .seed = r->c.seed, .momentum = r->c.momentum > 0};
  mmbError e = cnn_model_create(&mo, r->plan.capacity_iface, &r->model, err, err_len);
  if (e != MMB_OK) return e == MMB_INVALID_ARG ? 2 : 1;
  r->have_model = true;
  if (r->c.fast_percent > 0) {
    double bytes = cnn_model_param_bytes(&r->model) * r->c.fast_percent / 100.0;
    r->plan.budget = bytes < 1.0 ? 1 : (size_t)bytes;
  }
  e = cnn_plan_place(&r->plan, r->model.params, r->model.n_params, err, err_len);
  if (e == MMB_OK && r->c.offload &&
      (e = cnn_offload_create(&r->offload, &r->plan, &r->model, r->c.batch, r->c.offload, err,
                              err_len)) == MMB_OK)
    r->have_offload = true;
  return e == MMB_OK ? 0 : e == MMB_INVALID_ARG ? 2 : 1;
}

static void banner(const run *r) {
  size_t n = cnn_model_param_count(&r->model);
  printf("cnn: net %s, %zu parameters (%.2f MiB), %zu training and %zu test images of %zux%zu\n",
         r->c.net, n, mib(n * sizeof(float)), r->train.n, r->test.n, r->train.rows, r->train.cols);
  printf("     batch %zu, lr %g, momentum %g, %zu epoch%s%s; ", r->c.batch, r->c.lr, r->c.momentum,
         r->c.epochs, r->c.epochs > 1 ? "s" : "", r->c.max_batches ? " (limited)" : "");
  if (cnn_dist_active(&r->dist))
    printf("%d ranks, %zu samples each per batch, gradients all-reduced %s; ", r->dist.ranks,
           r->c.batch / (size_t)r->dist.ranks,
           r->plan.mode == CNN_PLAN_AUTO ? "whole, after each walk"
           : r->plan.streamed            ? "tile by tile (the streamed ones whole)"
                                         : "tile by tile");
  if (r->plan.gpu) printf("%s\n", r->plan.ops->name);
  else printf("cpu, %d OpenBLAS thread%s (%s)\n     OpenBLAS kernel %s, sgemm %.1f GFLOP/s "
              "on %s thread%s (the best of a few 1024^3); %s\n", r->c.threads,
              r->c.threads > 1 ? "s" : "", cnn_blas_config(), r->blas.kernel,
              r->blas.sgemm_gflops, r->c.threads > 1 ? "its" : "that", r->c.threads > 1 ? "s" : "",
              r->blas.note);
  cnn_plan_print(&r->plan, r->model.params, r->model.n_params);
  if (r->have_offload)
    printf("  offload: the first %zu layers' activations in chunks of %zu samples, %.2f MiB a "
           "batch homed in the capacity tier, through the parameters' cache\n", r->offload.split,
           r->offload.chunk, mib(cnn_offload_bytes(&r->offload)));
}

static int train_and_report(run *r, char *err, size_t err_len) {
  cnn_train_options to = {.epochs = r->c.epochs, .batch = r->c.batch,
                          .max_batches = r->c.max_batches, .test_limit = r->c.test_limit,
                          .sgd = {(float)r->c.lr, (float)r->c.momentum}, .seed = r->c.seed,
                          .progress = isatty(STDERR_FILENO) && r->dist.rank == 0,
                          .on_epoch = print_epoch, .dist = &r->dist,
                          .offload = r->have_offload ? &r->offload : NULL};
  cnn_result res;
  mmbError e = cnn_train(&r->plan, &r->model, &r->train, &r->test, &to, &res, err, err_len);
  if (e != MMB_OK) return 1;
  printf("test accuracy %.2f%% on %s%zu test images after %zu epoch%s: %zu samples in %.2f s, "
         "%.0f samples/s\n", 100 * res.test_accuracy,
         res.test_samples < r->test.n ? "the first " : "", res.test_samples, r->c.epochs,
         r->c.epochs > 1 ? "s" : "", res.train_samples, res.seconds,
         res.seconds > 0 ? res.train_samples / res.seconds : 0.0);
  double gflops = train_gflops(r, &res);
  if (!r->plan.gpu)
    printf("training ran at %.1f GFLOP/s, %.0f%% of the best sgemm measured at start (%.1f, "
           "kernel %s)\n", gflops, r->blas.sgemm_gflops > 0 ? 100 * gflops / r->blas.sgemm_gflops : 0,
           r->blas.sgemm_gflops, r->blas.kernel);
  print_memory(&r->plan, &res);
  unsigned long long sum = 0;
  if ((e = cnn_plan_unplace(&r->plan, r->model.params, r->model.n_params)) != MMB_OK ||
      (e = cnn_model_checksum(&r->model, &sum)) != MMB_OK ||
      (e = cnn_dist_close(&r->dist)) != MMB_OK) {   /* (its timings are final) */
    snprintf(err, err_len, "bringing the weights home: %s", mmb_error_string(e));
    return 1;
  }
  if (cnn_dist_active(&r->dist))
    printf("all-reduces: %zu, %.3f s on the queue, %.3f s of it waited for (%.1f%% of training)\n",
           r->dist.reduces, r->dist.reduce_seconds, r->dist.wait_seconds,
           res.seconds > 0 ? 100 * r->dist.wait_seconds / res.seconds : 0.0);
  if (r->c.save_weights && r->dist.rank == 0 && save_weights(&r->model, r->c.save_weights, err, err_len))
    return 1;
  if (r->c.json) print_json(r, &res, sum);
  return 0;
}

/* Whether the trace can be written at path, asked before training (the
   dump comes after it): a file made for the question is removed again. */
static bool writable(const char *path, char *err, size_t err_len) {
  bool existed = access(path, F_OK) == 0;
  FILE *f = fopen(path, "a");
  if (!f) {
    snprintf(err, err_len, "%s: the trace cannot be written there (%s)", path, strerror(errno));
    return false;
  }
  fclose(f);
  if (!existed) unlink(path);
  return true;
}

static int finish(run *r, int status) {
  if (r->have_offload && cnn_offload_destroy(&r->offload) != MMB_OK && !status) status = 1;
  if (r->have_model) cnn_model_destroy(&r->model);
  if (r->have_test) cnn_dataset_destroy(&r->test);
  if (r->have_train) cnn_dataset_destroy(&r->train);
  if (r->have_plan) cnn_plan_destroy(&r->plan);
  if (r->c.trace) {
    mmbError e = mmb_trace_stop();
    if (e == MMB_OK) e = mmb_trace_dump(r->c.trace);
    if (e != MMB_OK) {
      fprintf(stderr, "cnn: writing the trace to %s: %s\n", r->c.trace, mmb_error_string(e));
      if (!status) status = 1;
    }
  }
  mmbError e = cnn_dist_close(&r->dist);
  if (e == MMB_OK) e = mmb_finalize();
  if (e != MMB_OK) {
    fprintf(stderr, "cnn: mmb_finalize: %s\n", mmb_error_string(e));
    if (!status) status = 1;
  }
  status = cnn_dist_agree(&r->dist, status);
  cnn_dist_stop(&r->dist);
  return status;
}

int main(int argc, char **argv) {
  cnn_blas_start(argc, argv);   /* may start again with a better OpenBLAS kernel (blas.h) */
  run r = {0};
  char err[512] = "";
  if (cnn_dist_start(&argc, &argv, &r.dist, err, sizeof err)) {
    fprintf(stderr, "cnn: %s\n", err);
    cnn_dist_stop(&r.dist);
    return 1;
  }
  int status = parse(argc, argv, &r.c);
  if (!status && r.c.batch % (size_t)r.dist.ranks) {
    fprintf(stderr, "cnn: --batch %zu is the global batch: it must be a multiple of the %d ranks\n",
            r.c.batch, r.dist.ranks);
    status = 2;
  }
  if (!status && r.c.trace && !writable(r.c.trace, err, sizeof err)) {
    fprintf(stderr, "cnn: --trace %s\n", err);
    status = 2;
  }
  if (status) {
    cnn_dist_stop(&r.dist);
    return status == 1 ? 0 : status;
  }
  if (r.dist.rank > 0 && !freopen("/dev/null", "w", stdout)) {   /* rank 0 speaks */
    fprintf(stderr, "cnn: rank %d: /dev/null: %s\n", r.dist.rank, strerror(errno));
    cnn_dist_stop(&r.dist);
    return 1;
  }
  mmbError e = mmb_init(NULL);
  if (e != MMB_OK) {
    fprintf(stderr, "cnn: mmb_init: %s\n", mmb_error_string(e));
    cnn_dist_stop(&r.dist);
    return 1;
  }
  if (r.c.trace && (e = mmb_trace_start()) != MMB_OK) {
    fprintf(stderr, "cnn: mmb_trace_start: %s\n", mmb_error_string(e));
    return finish(&r, 1);
  }
  if ((e = cnn_dist_open(&r.dist)) != MMB_OK) {
    fprintf(stderr, "cnn: the all-reduce queue: %s\n", mmb_error_string(e));
    return finish(&r, 1);
  }
  bool gpu = !strcmp(r.c.device, "gpu");
  if (!r.c.plan) r.c.plan = gpu ? "streamed" : "auto";
  cnn_plan_options po = {.gpu = gpu, .fast_limit = r.c.fast_limit, .threads = r.c.threads,
                         .no_hints = r.c.no_hints,
                         .mode = !strcmp(r.c.plan, "auto")       ? CNN_PLAN_AUTO
                                 : !strcmp(r.c.plan, "resident") ? CNN_PLAN_RESIDENT
                                                                 : CNN_PLAN_STREAMED};
  if (cnn_plan_create(&po, &r.plan, err, sizeof err) != MMB_OK) status = 1;
  else r.have_plan = true;
  if (!status && !r.plan.gpu && !cnn_blas_measure(&r.blas)) {   /* on the threads the plan set */
    snprintf(err, sizeof err, "%s", r.blas.note);
    status = 1;
  }
  if (!status) status = load_data(&r, err, sizeof err);
  if (!status) status = build_model(&r, err, sizeof err);
  if (!status) {
    banner(&r);
    status = train_and_report(&r, err, sizeof err);
  }
  if (status && r.dist.ranks > 1) fprintf(stderr, "cnn: rank %d: %s\n", r.dist.rank, err);
  else if (status) fprintf(stderr, "cnn: %s\n", err);
  return finish(&r, status);
}
