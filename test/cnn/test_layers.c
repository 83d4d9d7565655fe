/* Every layer's gradients against central finite differences of the
   objective L = sum(y * r) (r fixed and random, so dL/dy = r): of the
   weights, the biases and the input. Convolution and dense layers are
   linear in what is perturbed, so differences are exact up to rounding;
   ReLU and max-pooling inputs keep clear of their kinks. The weights are
   tiled in several blocks, resident in the fast tier or streamed through
   it. */
#include "cnn_test.h"

#include <math.h>

enum { MAX_N = 4096 };

typedef struct case_ {
  cnn_plan plan;
  cnn_layer layer;
  cnn_param params[2];
  size_t batch, n_in, n_out;
  float x[MAX_N], r[MAX_N];
} case_;

static void fill(float *v, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = 0; i < n; i++)
    v[i] = lo + (hi - lo) * (float)((double)(test_rand(&seed) >> 11) * 0x1.0p-53);
}

/* A layer of `kind` on inputs of shape `in`, its weights in tiles of
   `tile_rows` rows, placed in a fast tier of `fast_limit` bytes. */
static case_ *make_case(cnn_layer_kind kind, cnn_shape in, size_t k, size_t outs, size_t batch,
                        size_t tile_rows, size_t fast_limit) {
  case_ *c = calloc(1, sizeof *c);
  cr_assert_not_null(c);
  c->plan = test_plan(fast_limit);
  char err[256];
  cr_assert_eq(cnn_layer_init(&c->layer, kind, in, k, outs, err, sizeof err), 0, "%s", err);
  c->batch = batch;
  c->n_in = batch * cnn_shape_size(in);
  c->n_out = batch * cnn_shape_size(c->layer.out);
  cr_assert_leq(c->n_in, MAX_N);
  cr_assert_leq(c->n_out, MAX_N);
  if (kind == CNN_CONV || kind == CNN_DENSE) {
    size_t cols = kind == CNN_CONV ? k * k * in.c : cnn_shape_size(in);
    unsigned long long state = 42;
    OK(cnn_param_create(&c->params[0], "w", c->layer.out.c, cols, 0.5f,
                        tile_rows * cols * sizeof(float), false, &state,
                        c->plan.capacity_iface));
    OK(cnn_param_create(&c->params[1], "b", c->layer.out.c, 1, 0.5f, SIZE_MAX, false, &state,
                        c->plan.capacity_iface));
    OK(cnn_plan_place(&c->plan, c->params, 2, err, sizeof err));
    c->layer.weight = &c->params[0];
    c->layer.bias = &c->params[1];
  }
  fill(c->r, c->n_out, 7, -1.0f, 1.0f);
  return c;
}

static void free_case(case_ *c) {
  if (c->layer.weight) {
    cnn_param_destroy(&c->params[0]);
    cnn_param_destroy(&c->params[1]);
  }
  OK(cnn_plan_destroy(&c->plan));
  free(c);
}

static cnn_pass pass_of(case_ *c) {
  return (cnn_pass){.plan = &c->plan, .ops = c->plan.ops, .region = c->plan.region,
                    .batch = c->batch};
}

/* L(x, weights) = sum(y * r); x is copied (ReLU works in place). */
static double objective(case_ *c, const float *x) {
  cnn_pass p = pass_of(c);
  OK(mmb_region_reset(c->plan.region));
  float *xin, *y;
  OK(mmb_region_alloc(c->plan.region, c->n_in * sizeof(float), 64, (void **)&xin));
  memcpy(xin, x, c->n_in * sizeof(float));
  OK(cnn_layer_forward(&c->layer, &p, xin, &y));
  double s = 0;
  for (size_t i = 0; i < c->n_out; i++) s += (double)y[i] * c->r[i];
  return s;
}

/* Forward and backward with dy = r: the analytic gradients, dx copied out. */
static void analytic(case_ *c, float *dx) {
  cnn_pass p = pass_of(c);
  OK(mmb_region_reset(c->plan.region));
  float *xin, *y, *dy, *d;
  OK(mmb_region_alloc(c->plan.region, c->n_in * sizeof(float), 64, (void **)&xin));
  memcpy(xin, c->x, c->n_in * sizeof(float));
  OK(cnn_layer_forward(&c->layer, &p, xin, &y));
  OK(mmb_region_alloc(c->plan.region, c->n_out * sizeof(float), 64, (void **)&dy));
  memcpy(dy, c->r, c->n_out * sizeof(float));
  OK(cnn_layer_backward(&c->layer, &p, dy, &d));
  memcpy(dx, d, c->n_in * sizeof(float));
}

static void assert_close(double fd, double an, const char *what, size_t i) {
  cr_assert_leq(fabs(fd - an), 2e-3 + 2e-3 * fabs(an), "%s[%zu]: finite difference %.6f, gradient %.6f",
                what, i, fd, an);
}

static void check_input_gradient(case_ *c, const float *dx, float eps) {
  float x[MAX_N];
  memcpy(x, c->x, sizeof x);
  for (size_t i = 0; i < c->n_in; i++) {
    float v = x[i];
    x[i] = v + eps;
    double up = objective(c, x);
    x[i] = v - eps;
    double down = objective(c, x);
    x[i] = v;
    assert_close((up - down) / (2.0 * eps), dx[i], "dx", i);
  }
}

/* Perturbs each value of a parameter (in the tier that holds it) and
   compares with its gradient (read back home). */
static void check_param_gradient(case_ *c, cnn_param *p, float eps) {
  float grad[MAX_N];
  size_t n = p->rows * p->cols;
  mmbArray *g = p->grad;
  cr_assert_not_null(mmb_array_ptr(g));
  memcpy(grad, mmb_array_ptr(g), n * sizeof(float));
  float *w = mmb_array_ptr(p->value);
  for (size_t i = 0; i < n; i++) {
    float v = w[i];
    w[i] = v + eps;
    double up = objective(c, c->x);
    w[i] = v - eps;
    double down = objective(c, c->x);
    w[i] = v;
    assert_close((up - down) / (2.0 * eps), grad[i], p->name, i);
  }
}

static void check_all(case_ *c, float eps) {
  float dx[MAX_N];
  analytic(c, dx);
  check_input_gradient(c, dx, eps);
  if (c->layer.weight) {
    check_param_gradient(c, c->layer.weight, eps);
    check_param_gradient(c, c->layer.bias, eps);
  }
}

MMB_TEST(layers, convolution_gradients_match_finite_differences) {
  /* 2 samples of 2 channels of 5x6, 3 filters of 3x3 in 2 tiles of filters */
  case_ *c = make_case(CNN_CONV, (cnn_shape){5, 6, 2}, 3, 3, 2, 2, 1 << 20);
  cr_assert_eq(c->layer.out.h, 3);
  cr_assert_eq(c->layer.out.w, 4);
  fill(c->x, c->n_in, 1, -1.0f, 1.0f);
  check_all(c, 1e-2f);
  free_case(c);
}

MMB_TEST(layers, dense_gradients_match_finite_differences) {
  /* 3 samples, 7 -> 5, weights in tiles of 2 rows (the last of 1) */
  case_ *c = make_case(CNN_DENSE, (cnn_shape){1, 1, 7}, 0, 5, 3, 2, 1 << 20);
  fill(c->x, c->n_in, 2, -1.0f, 1.0f);
  check_all(c, 1e-2f);
  free_case(c);
}

/* The same products with the weights streamed: 48 x 12288 weights
   (2.25 MiB) cannot be resident beside their gradients in 2.5 MiB, so
   their tiles pass through it. Checked against sums made by hand from the
   home arrays (the input is too large for finite differences). */
MMB_TEST(layers, dense_products_are_right_when_the_weights_stream) {
  enum { IN = 12288, OUT = 48 };
  cnn_plan plan = test_plan((size_t)5 << 19);
  cnn_layer l;
  cnn_param params[2];
  char err[256];
  cr_assert_eq(cnn_layer_init(&l, CNN_DENSE, (cnn_shape){1, 1, IN}, 0, OUT, err, sizeof err), 0);
  unsigned long long state = 3;
  OK(cnn_param_create(&params[0], "w", OUT, IN, 0.5f, 4 * IN * sizeof(float), false, &state,
                      plan.capacity_iface));
  OK(cnn_param_create(&params[1], "b", OUT, 1, 0.5f, SIZE_MAX, false, &state,
                      plan.capacity_iface));
  OK(cnn_plan_place(&plan, params, 2, err, sizeof err));
  cr_assert(params[0].streamed, "the weights stream");
  cr_assert(!params[1].streamed, "the bias stays");
  l.weight = &params[0];
  l.bias = &params[1];
  float *x = malloc(IN * sizeof *x), r[OUT];
  fill(x, IN, 4, -1.0f, 1.0f);
  fill(r, OUT, 7, -1.0f, 1.0f);
  cnn_pass p = {.plan = &plan, .ops = plan.ops, .region = plan.region, .batch = 1};
  float *xin, *y, *dy, *dx;
  OK(mmb_region_alloc(plan.region, IN * sizeof(float), 64, (void **)&xin));
  memcpy(xin, x, IN * sizeof(float));
  OK(cnn_layer_forward(&l, &p, xin, &y));
  const float *w = mmb_array_ptr(params[0].value), *b = mmb_array_ptr(params[1].value);
  for (size_t o = 0; o < OUT; o++) {
    double s = b[o];
    for (size_t j = 0; j < IN; j++) s += (double)w[o * IN + j] * x[j];
    cr_assert_leq(fabs(s - y[o]), 1e-3, "y[%zu] = %f, expected %f", o, y[o], s);
  }
  OK(mmb_region_alloc(plan.region, OUT * sizeof(float), 64, (void **)&dy));
  memcpy(dy, r, sizeof r);
  OK(cnn_layer_backward(&l, &p, dy, &dx));
  OK(cnn_tiles_release(&params[0]));   /* waits until the last gradient tiles are home */
  const float *g = mmb_array_ptr(params[0].grad);
  for (size_t o = 0; o < OUT; o++)   /* dW[o][j] = r[o] x[j] */
    for (size_t j = 0; j < IN; j += 97)
      cr_assert_leq(fabs(g[o * IN + j] - r[o] * x[j]), 1e-5, "dW[%zu][%zu]", o, j);
  for (size_t j = 0; j < IN; j += 101) {   /* dx[j] = sum over o of r[o] W[o][j] */
    double s = 0;
    for (size_t o = 0; o < OUT; o++) s += (double)r[o] * w[o * IN + j];
    cr_assert_leq(fabs(s - dx[j]), 1e-4, "dx[%zu]", j);
  }
  mmbStats st;
  OK(mmb_space_get_stats(plan.params_space, &st));
  cr_assert_leq(st.reserved_high, plan.budget, "the fast tier held more than its budget");
  free(x);
  cnn_param_destroy(&params[0]);
  cnn_param_destroy(&params[1]);
  OK(cnn_plan_destroy(&plan));
}

MMB_TEST(layers, relu_gradients_match_finite_differences) {
  case_ *c = make_case(CNN_RELU, (cnn_shape){3, 4, 2}, 0, 0, 2, 1, 1 << 20);
  fill(c->x, c->n_in, 3, 0.1f, 1.0f);
  for (size_t i = 0; i < c->n_in; i += 2) c->x[i] = -c->x[i];   /* clear of the kink at 0 */
  check_all(c, 1e-2f);
  free_case(c);
}

/* Distinct values at least 0.05 apart, shuffled: no ties within eps. */
static void distinct(float *x, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) x[i] = 0.05f * (float)i - 1.0f;
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = test_rand(&seed) % (i + 1);
    float t = x[i];
    x[i] = x[j];
    x[j] = t;
  }
}

MMB_TEST(layers, max_pooling_gradients_match_finite_differences) {
  case_ *c = make_case(CNN_MAXPOOL, (cnn_shape){4, 6, 3}, 2, 0, 2, 1, 1 << 20);   /* 2x2 */
  distinct(c->x, c->n_in, 5);
  check_all(c, 1e-2f);
  free_case(c);
  c = make_case(CNN_MAXPOOL, (cnn_shape){7, 8, 2}, 3, 0, 1, 1, 1 << 20);   /* 3x3, edges left over */
  cr_assert_eq(c->layer.out.h, 2);
  distinct(c->x, c->n_in, 6);
  check_all(c, 1e-2f);
  free_case(c);
}

/* The loss: softmax cross-entropy, mean over the batch. */
MMB_TEST(layers, loss_gradient_matches_finite_differences) {
  cnn_plan plan = test_plan(1 << 20);
  enum { B = 3, K = 10 };
  float z[B * K], stats[2] = {0, 0};
  uint8_t labels[B] = {3, 0, 9};
  fill(z, B * K, 8, -2.0f, 2.0f);
  cnn_pass p = {.plan = &plan, .ops = plan.ops, .region = plan.region, .batch = B};
  OK(mmb_region_reset(plan.region));
  float *d;
  OK(cnn_loss(&p, z, labels, K, stats, &d));
  float grad[B * K];
  memcpy(grad, d, sizeof grad);
  double loss0 = stats[0] / B;
  for (size_t i = 0; i < B * K; i++) {
    float v = z[i], s[2];
    float *ignored;
    z[i] = v + 1e-2f;
    s[0] = s[1] = 0;
    OK(cnn_loss(&p, z, labels, K, s, &ignored));
    double up = s[0] / B;
    z[i] = v - 1e-2f;
    s[0] = s[1] = 0;
    OK(cnn_loss(&p, z, labels, K, s, &ignored));
    z[i] = v;
    assert_close((up - s[0] / B) / 2e-2, grad[i], "dlogits", i);
  }
  cr_assert_gt(loss0, 0.0);
  OK(cnn_plan_destroy(&plan));
}
