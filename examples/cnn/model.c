/* Building the networks: a table of layers per net; each weighted layer gets
   a weight and a bias parameter, arrays of the capacity tier. */
#include "model.h"

#include "dist.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct layer_spec {
  cnn_layer_kind kind;
  size_t k, out;   /* conv: k, filters; pool: window; dense: outputs (0: classes) */
} layer_spec;

static const layer_spec seed_net[] = {
  {CNN_CONV, 3, 4}, {CNN_RELU, 0, 0}, {CNN_MAXPOOL, 2, 0}, {CNN_DENSE, 0, 0},
};
static const layer_spec wide_net[] = {
  {CNN_CONV, 3, 32}, {CNN_RELU, 0, 0}, {CNN_MAXPOOL, 2, 0},
  {CNN_DENSE, 0, 2048}, {CNN_RELU, 0, 0}, {CNN_DENSE, 0, 0},
};

unsigned long long cnn_random_next(unsigned long long *state) {
  unsigned long long z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

mmbError cnn_float_array(size_t rows, size_t cols, mmbMemInterface *home, mmbArray **out) {
  mmbLayout *layout;
  mmbError err = mmb_layout_create_regular_nd(sizeof(float), 2, MMB_ROWMAJOR,
                                              (mmbLayoutPadding){0}, &layout);
  if (err != MMB_OK) return err;
  if ((err = mmb_layout_set_element_type(layout, MMB_TYPE_FLOAT)) == MMB_OK)
    err = mmb_array_create(&(mmbDimensions){2, {rows, cols}}, layout, home, MMB_READ_WRITE, out);
  mmbError d = mmb_layout_destroy(layout);
  return err != MMB_OK ? err : d;
}

static void fill_uniform(float *x, size_t n, float bound, unsigned long long *state) {
  for (size_t i = 0; i < n; i++)
    x[i] = bound * (float)((double)(cnn_random_next(state) >> 11) * 0x1.0p-52 - 1.0);
}

/* Rows per tile: as many as fit tile_bytes, preferring a count that
   divides the rows (if one is at least half as big), so that every tile has
   one size and a pool holds their duplicates without fragments. */
static size_t tile_rows_for(size_t rows, size_t row_bytes, size_t tile_bytes) {
  size_t most = tile_bytes / row_bytes ? tile_bytes / row_bytes : 1;
  if (most >= rows) return rows;
  for (size_t r = most; r >= 1 && 2 * r >= most; r--)
    if (rows % r == 0) return r;
  return most;
}

mmbError cnn_param_create(cnn_param *p, const char *name, size_t rows, size_t cols, float bound,
                          size_t tile_bytes, bool momentum, unsigned long long *state,
                          mmbMemInterface *home) {
  *p = (cnn_param){.rows = rows, .cols = cols};
  snprintf(p->name, sizeof p->name, "%s", name);
  p->tile_rows = tile_rows_for(rows, cols * sizeof(float), tile_bytes);
  mmbArray **arrays[3] = {&p->value, &p->grad, momentum ? &p->velocity : NULL};
  mmbError err = MMB_OK;
  for (int i = 0; i < 3 && err == MMB_OK && arrays[i]; i++) {
    if ((err = cnn_float_array(rows, cols, home, arrays[i])) != MMB_OK) break;
    float *x = mmb_array_ptr(*arrays[i]);
    if (i == 0) fill_uniform(x, rows * cols, bound, state);
    else memset(x, 0, rows * cols * sizeof *x);
    err = mmb_array_tile(*arrays[i], &(mmbDimensions){2, {p->tile_rows, cols}});
  }
  return err;
}

void cnn_param_destroy(cnn_param *p) {
  cnn_tiles_release(p);
  mmbArray *arrays[3] = {p->value, p->grad, p->velocity};
  for (int i = 0; i < 3; i++) {
    mmbError e = arrays[i] ? mmb_array_destroy(arrays[i]) : MMB_OK;
    if (e != MMB_OK) fprintf(stderr, "cnn: destroying a parameter array: %s\n", mmb_error_string(e));
  }
  p->value = p->grad = p->velocity = NULL;
}

/* The weight and bias of a conv or dense layer: fan_in inputs per output. */
static mmbError layer_params(cnn_model *m, cnn_layer *l, const cnn_model_options *o,
                             unsigned long long *state, mmbMemInterface *home) {
  size_t outs = l->out.c;
  size_t fan_in = l->kind == CNN_CONV ? l->k * l->k * l->in.c : cnn_shape_size(l->in);
  float bound = 1.0f / sqrtf((float)fan_in);
  size_t tile_bytes = l->kind == CNN_DENSE ? (o->tile_bytes ? o->tile_bytes : (size_t)1 << 20)
                                           : SIZE_MAX;
  char name[32];
  const char *kind = l->kind == CNN_CONV ? "conv" : "dense";
  size_t index = 1;   /* conv1, dense1, dense2, ...: numbered by kind */
  for (const cnn_layer *k = m->layers; k < l; k++) index += k->kind == l->kind;
  snprintf(name, sizeof name, "%s%zu.weight", kind, index);
  l->weight = &m->params[m->n_params++];
  mmbError err = cnn_param_create(l->weight, name, outs, fan_in, bound, tile_bytes, o->momentum,
                              state, home);
  if (err != MMB_OK) return err;
  snprintf(name, sizeof name, "%s%zu.bias", kind, index);
  l->bias = &m->params[m->n_params++];
  return cnn_param_create(l->bias, name, outs, 1, bound, SIZE_MAX, o->momentum, state, home);
}

mmbError cnn_model_create(const cnn_model_options *o, mmbMemInterface *home, cnn_model *m,
                          char *err, size_t err_len) {
  const layer_spec *spec;
  size_t n;
  if (!strcmp(o->net, "seed")) {
    spec = seed_net;
    n = sizeof seed_net / sizeof *seed_net;
  } else if (!strcmp(o->net, "wide")) {
    spec = wide_net;
    n = sizeof wide_net / sizeof *wide_net;
  } else {
    snprintf(err, err_len, "unknown net '%s' (seed or wide)", o->net);
    return MMB_INVALID_ARG;
  }
  *m = (cnn_model){.input = o->input, .classes = o->classes, .n_layers = n};
  snprintf(m->net, sizeof m->net, "%s", o->net);
  unsigned long long state = o->seed;
  cnn_shape shape = o->input;
  mmbError e = MMB_OK;
  for (size_t i = 0; i < n && e == MMB_OK; i++) {
    cnn_layer *l = &m->layers[i];
    size_t outs = spec[i].kind == CNN_CONV ? spec[i].out : spec[i].out ? spec[i].out : o->classes;
    if (cnn_layer_init(l, spec[i].kind, shape, spec[i].k, outs, err, err_len) != 0) {
      e = MMB_INVALID_ARG;
      break;
    }
    if (l->kind == CNN_CONV || l->kind == CNN_DENSE) {
      e = layer_params(m, l, o, &state, home);
      if (e != MMB_OK) snprintf(err, err_len, "no room for the parameters in the capacity tier: %s",
                                mmb_error_string(e));
    }
    shape = l->out;
  }
  if (e != MMB_OK) cnn_model_destroy(m);
  return e;
}

mmbError cnn_model_destroy(cnn_model *m) {
  for (size_t i = 0; i < m->n_params; i++) cnn_param_destroy(&m->params[i]);
  m->n_params = 0;
  return MMB_OK;
}

size_t cnn_model_param_count(const cnn_model *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_params; i++) n += m->params[i].rows * m->params[i].cols;
  return n;
}

double cnn_model_train_flops(const cnn_model *m) {
  double flops = 0;
  bool first = true;
  for (size_t i = 0; i < m->n_layers; i++) {
    const cnn_layer *l = &m->layers[i];
    double macs;
    if (l->kind == CNN_CONV) macs = (double)l->k * l->k * l->in.c * l->out.c * l->out.h * l->out.w;
    else if (l->kind == CNN_DENSE) macs = (double)cnn_shape_size(l->in) * cnn_shape_size(l->out);
    else continue;
    flops += 2 * macs * (first ? 2 : 3);
    first = false;
  }
  return flops;
}

size_t cnn_model_param_bytes(const cnn_model *m) { return cnn_model_param_count(m) * sizeof(float); }

mmbError cnn_model_forward(cnn_model *m, cnn_pass *p, const float *x, float **logits) {
  float *y = (float *)x;
  for (size_t i = 0; i < m->n_layers; i++) {
    mmbError err = cnn_layer_forward(&m->layers[i], p, y, &y);
    if (err != MMB_OK) return err;
  }
  *logits = y;
  return MMB_OK;
}

mmbError cnn_model_backward(cnn_model *m, cnn_pass *p, float *dlogits) {
  float *d = dlogits;
  for (size_t i = m->n_layers; i-- > 0;) {
    mmbError err = cnn_layer_backward(&m->layers[i], p, d, i > 0 ? &d : NULL);
    if (err != MMB_OK) return err;
  }
  return MMB_OK;
}

mmbError cnn_model_apply(cnn_model *m, cnn_pass *p) {
  for (size_t i = m->n_layers; i-- > 0;) {
    cnn_param *ps[2] = {m->layers[i].weight, m->layers[i].bias};
    for (size_t j = 0; j < 2; j++) {
      if (!ps[j]) continue;
      mmbError err = cnn_dist_wait(p->dist, ps[j]);
      if (err == MMB_OK) err = cnn_param_apply(p, ps[j]);
      if (err != MMB_OK) return err;
    }
  }
  return cnn_dist_settle(p->dist);
}

mmbError cnn_model_checksum(cnn_model *m, unsigned long long *out) {
  unsigned long long h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < m->n_params; i++) {
    const unsigned char *b = mmb_array_ptr(m->params[i].value);
    if (!b) return MMB_INVALID_STATE;   /* not in host memory: unplace first */
    for (size_t j = 0; j < m->params[i].rows * m->params[i].cols * sizeof(float); j++)
      h = (h ^ b[j]) * 0x100000001b3ull;
  }
  *out = h;
  return MMB_OK;
}
