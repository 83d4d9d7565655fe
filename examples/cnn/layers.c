/* The layers. Weighted layers walk their weights tile by tile (blocks of
   output rows: of a dense layer's outputs, of a convolution's filters), so
   a streamed weight is computed on block by block while the next block
   moves; each block is updated as soon as its gradient is known. */
#include "layers.h"

#include "dist.h"

#include <stdio.h>

#define ALIGN 64

static mmbError alloc_floats(cnn_pass *p, size_t n, float **out) {
  return mmb_region_alloc(p->region, n * sizeof(float), ALIGN, (void **)out);
}

static size_t aligned(size_t bytes) { return (bytes + ALIGN - 1) / ALIGN * ALIGN; }

/* What forward keeps for backward: in p->keep when set, at the offset its
   layout for keep->rows samples gives whatever this chunk's size; else in
   the region. */
static mmbError keep(cnn_pass *p, size_t bytes, void **out) {
  cnn_keep *k = p->keep;
  if (!k) return mmb_region_alloc(p->region, bytes, ALIGN, out);
  size_t at = aligned(bytes / p->batch * k->rows);
  if (p->batch > k->rows || at > k->size - k->used) return MMB_OUT_OF_MEMORY;
  *out = k->base + k->used;
  k->used += at;
  return MMB_OK;
}

static mmbError keep_floats(cnn_pass *p, size_t n, float **out) {
  return keep(p, n * sizeof(float), (void **)out);
}

/* A layer's output: where the pass asks, else kept (it is the next layer's
   kept input, or ReLU's, in place). */
static mmbError output(cnn_pass *p, size_t n, float **y) {
  if (!p->y_into) return keep_floats(p, n, y);
  *y = p->y_into;
  return MMB_OK;
}

static mmbError walk_end(cnn_tiles *t, mmbError err) {
  mmbError e = cnn_tiles_end(t);
  return err != MMB_OK ? err : e;
}

/* Begins a backward walk over w. A later chunk of a batch adds to the
   gradients the earlier ones left (CNN_WALK_ACCUMULATE). Data-parallel, or
   without the update, or before a later chunk, the gradient is needed
   after the walk (CNN_WALK_BACKWARD). Otherwise each tile's gradient is
   needed only by the tile's update, right after it: it is computed into
   one scratch tile in a region of the walk's own (CNN_WALK_STEP), and the
   gradient arrays neither take room in the fast tier nor go home (at
   1 GiB/s, 124 ms a batch of the wide net through the tile cache against
   165, and 135 against 177 for the hand plan: the gradients were a quarter
   of the bytes that moved). */
static mmbError backward_begin(cnn_pass *p, cnn_param *w, cnn_tiles *t, mmbRegion **scratch) {
  bool step = p->sgd && !p->dist && !p->row0;
  cnn_walk walk = step ? CNN_WALK_STEP : p->row0 ? CNN_WALK_ACCUMULATE : CNN_WALK_BACKWARD;
  *scratch = NULL;
  mmbError err = cnn_tiles_begin(p->plan, w, walk, t);
  if (err == MMB_OK && step && t->value && (err = mmb_region_push(p->region, scratch)) == MMB_OK)
    err = mmb_region_alloc(*scratch, w->tile_rows * t->ld * sizeof(float), ALIGN,
                           (void **)&t->scratch);
  return err;
}

/* Ends a backward walk: its scratch let go; data-parallel, what is left of
   the gradient's all-reduce is started now, on the communication queue. */
static mmbError backward_end(cnn_pass *p, cnn_tiles *t, mmbRegion *scratch, mmbError err) {
  cnn_param *w = t->p;
  err = walk_end(t, err);
  if (scratch) {
    mmbError e = mmb_region_destroy(scratch);
    if (err == MMB_OK) err = e;
  }
  return err == MMB_OK && p->dist ? cnn_dist_reduce(p->dist, p->plan, w) : err;
}

static void update(cnn_pass *p, cnn_tiles *t, size_t cols) {
  if (p->sgd)
    p->ops->sgd(p->ops->ctx, t->value->ptr, cnn_tiles_gradient(t),
                t->velocity ? t->velocity->ptr : NULL, t->r1 - t->r0, cols, t->ld, p->sgd->lr,
                p->sgd->momentum);
}

/* A tile's gradient is known: the tile's update (alone); data-parallel, the
   start of its all-reduce, while backward goes on (a resident parameter's
   tile is its storage; a streamed or cached one's is a copy on its way
   home, whose gradient goes once the walk has put it there: backward_end). */
static mmbError gradient_done(cnn_pass *p, cnn_tiles *t, size_t cols) {
  update(p, t, cols);
  if (!p->dist || !cnn_param_in_place(p->plan, t->p)) return MMB_OK;
  return cnn_dist_reduce_tile(p->dist, p->plan, t->grad);
}

/* y[n][c][p] += b[c]: the bias is one tile, resident or streamed. */
static mmbError bias_forward(cnn_pass *p, cnn_param *b, float *y, size_t plane) {
  cnn_tiles t;
  mmbError err = cnn_tiles_begin(p->plan, b, CNN_WALK_VALUES, &t);
  if (err == MMB_OK) p->ops->add_bias(p->ops->ctx, y, p->batch, b->rows, plane, t.value->ptr);
  return walk_end(&t, err);
}

static mmbError bias_backward(cnn_pass *p, cnn_param *b, const float *dy, size_t plane) {
  cnn_tiles t;
  mmbRegion *scratch;
  mmbError err = backward_begin(p, b, &t, &scratch);
  if (err == MMB_OK) {
    p->ops->sum_bias(p->ops->ctx, dy, p->batch, b->rows, plane, p->row0 > 0,
                     cnn_tiles_gradient(&t));
    err = gradient_done(p, &t, 1);
  }
  return backward_end(p, &t, scratch, err);
}

/* ---- dense: y[batch, out] = x[batch, in] W^T + b ------------------------- */

static mmbError dense_forward(cnn_pass *p, cnn_layer *l, const float *x) {
  const cnn_ops *o = p->ops;
  cnn_param *w = l->weight;
  cnn_tiles t;
  mmbError err = cnn_tiles_begin(p->plan, w, CNN_WALK_VALUES, &t);
  for (; err == MMB_OK && t.value; err = cnn_tiles_next(&t))
    o->gemm(o->ctx, false, true, p->batch, t.r1 - t.r0, w->cols, 1.0f, x, w->cols, t.value->ptr,
            t.ld, 0.0f, l->y + t.r0, w->rows);
  if ((err = walk_end(&t, err)) != MMB_OK) return err;
  return bias_forward(p, l->bias, l->y, 1);
}

/* dx = dy W (block by block: dx += dy[:, rows] W[rows]), dW[rows] =
   dy[:, rows]^T x, then the block's update. */
static mmbError dense_backward(cnn_pass *p, cnn_layer *l, const float *dy, float *dx) {
  const cnn_ops *o = p->ops;
  cnn_param *w = l->weight;
  size_t in = w->cols, out = w->rows;
  cnn_tiles t;
  mmbRegion *scratch;
  mmbError err = backward_begin(p, w, &t, &scratch);
  for (bool first = true; err == MMB_OK && t.value; first = false, err = cnn_tiles_next(&t)) {
    size_t r = t.r1 - t.r0;
    if (dx)
      o->gemm(o->ctx, false, false, p->batch, in, r, 1.0f, dy + t.r0, out, t.value->ptr, t.ld,
              first ? 0.0f : 1.0f, dx, in);
    o->gemm(o->ctx, true, false, r, in, p->batch, 1.0f, dy + t.r0, out, l->x, in,
            p->row0 ? 1.0f : 0.0f, cnn_tiles_gradient(&t), t.ld);
    if ((err = gradient_done(p, &t, in)) != MMB_OK) break;
  }
  if ((err = backward_end(p, &t, scratch, err)) != MMB_OK) return err;
  return bias_backward(p, l->bias, dy, 1);
}

/* ---- convolution: per sample, y_n[filters, oh*ow] = W col_n + b ---------- */

static cnn_window conv_window(const cnn_layer *l, size_t batch) {
  return (cnn_window){.batch = batch, .c = l->in.c, .h = l->in.h, .w = l->in.w, .k = l->k,
                      .stride = 1, .oh = l->out.h, .ow = l->out.w};
}

static cnn_window pool_window(const cnn_layer *l, size_t batch) {
  return (cnn_window){.batch = batch, .c = l->in.c, .h = l->in.h, .w = l->in.w, .k = l->k,
                      .stride = l->k, .oh = l->out.h, .ow = l->out.w};
}

static mmbError conv_forward(cnn_pass *p, cnn_layer *l, const float *x) {
  const cnn_ops *o = p->ops;
  cnn_param *w = l->weight;
  cnn_window win = conv_window(l, p->batch);
  size_t taps = w->cols, plane = l->out.h * l->out.w;
  float *col;
  mmbError err = keep_floats(p, p->batch * taps * plane, &col);
  if (err != MMB_OK) return err;
  o->im2col(o->ctx, x, &win, col);
  l->x = col;
  cnn_tiles t;
  err = cnn_tiles_begin(p->plan, w, CNN_WALK_VALUES, &t);
  for (; err == MMB_OK && t.value; err = cnn_tiles_next(&t))
    for (size_t n = 0; n < p->batch; n++)
      o->gemm(o->ctx, false, false, t.r1 - t.r0, plane, taps, 1.0f, t.value->ptr, t.ld,
              col + n * taps * plane, plane, 0.0f, l->y + (n * w->rows + t.r0) * plane, plane);
  if ((err = walk_end(&t, err)) != MMB_OK) return err;
  return bias_forward(p, l->bias, l->y, plane);
}

/* dcol_n = W^T dy_n (into dx through col2im), dW = sum over n of dy_n col_n^T. */
static mmbError conv_backward(cnn_pass *p, cnn_layer *l, const float *dy, float *dx) {
  const cnn_ops *o = p->ops;
  cnn_param *w = l->weight;
  size_t taps = w->cols, plane = l->out.h * l->out.w;
  float *dcol = NULL;
  mmbError err = dx ? alloc_floats(p, p->batch * taps * plane, &dcol) : MMB_OK;
  if (err != MMB_OK) return err;
  cnn_tiles t;
  mmbRegion *scratch;
  err = backward_begin(p, w, &t, &scratch);
  for (bool first = true; err == MMB_OK && t.value; first = false, err = cnn_tiles_next(&t)) {
    size_t r = t.r1 - t.r0;
    for (size_t n = 0; n < p->batch; n++) {
      const float *dy_n = dy + (n * w->rows + t.r0) * plane;
      if (dcol)
        o->gemm(o->ctx, true, false, taps, plane, r, 1.0f, t.value->ptr, t.ld, dy_n, plane,
                first ? 0.0f : 1.0f, dcol + n * taps * plane, plane);
      o->gemm(o->ctx, false, true, r, taps, plane, 1.0f, dy_n, plane, l->x + n * taps * plane,
              plane, p->row0 + n ? 1.0f : 0.0f, cnn_tiles_gradient(&t), t.ld);
    }
    if ((err = gradient_done(p, &t, taps)) != MMB_OK) break;
  }
  if ((err = backward_end(p, &t, scratch, err)) != MMB_OK) return err;
  if (dx) {
    cnn_window win = conv_window(l, p->batch);
    o->col2im(o->ctx, dcol, &win, dx);
  }
  return bias_backward(p, l->bias, dy, plane);
}

mmbError cnn_param_apply(cnn_pass *p, cnn_param *w) {
  cnn_tiles t;
  mmbError err = cnn_tiles_begin(p->plan, w, CNN_WALK_APPLY, &t);
  for (; err == MMB_OK && t.value; err = cnn_tiles_next(&t)) update(p, &t, w->cols);
  return walk_end(&t, err);
}

/* ---- the layer interface ------------------------------------------------- */

int cnn_layer_init(cnn_layer *l, cnn_layer_kind kind, cnn_shape in, size_t k, size_t out_features,
                   char *err, size_t err_len) {
  *l = (cnn_layer){.kind = kind, .in = in, .k = k, .out = in};
  switch (kind) {
    case CNN_CONV:
      if (k == 0 || k > in.h || k > in.w || out_features == 0) break;
      l->out = (cnn_shape){in.h - k + 1, in.w - k + 1, out_features};
      return 0;
    case CNN_MAXPOOL:
      if (k == 0 || k > 15 || in.h < k || in.w < k) break;   /* positions fit a byte */
      l->out = (cnn_shape){in.h / k, in.w / k, in.c};
      return 0;
    case CNN_DENSE:
      if (out_features == 0) break;
      l->out = (cnn_shape){1, 1, out_features};
      return 0;
    case CNN_RELU:
      return 0;
  }
  snprintf(err, err_len, "layer %d (k = %zu, %zu outputs) does not fit an input of %zux%zux%zu",
           (int)kind, k, out_features, in.h, in.w, in.c);
  return -1;
}

size_t cnn_layer_kept_bytes(const cnn_layer *l, size_t rows, bool last) {
  size_t out = rows * cnn_shape_size(l->out), y = last ? 0 : aligned(out * sizeof(float));
  size_t taps = l->k * l->k * l->in.c, plane = l->out.h * l->out.w;
  switch (l->kind) {
    case CNN_CONV: return aligned(rows * taps * plane * sizeof(float)) + y;   /* im2col */
    case CNN_MAXPOOL: return aligned(out) + y;   /* where each maximum was, a byte each */
    case CNN_DENSE: return y;                    /* its input is the layer before's output */
    case CNN_RELU: break;                        /* in place */
  }
  return 0;
}

static uintptr_t moved(uintptr_t ptr, uintptr_t from, uintptr_t to, size_t size) {
  return ptr - from < size ? ptr - from + to : ptr;
}

void cnn_layer_rebase(cnn_layer *l, const void *from, void *to, size_t size) {
  uintptr_t f = (uintptr_t)from, t = (uintptr_t)to;
  l->x = (const float *)moved((uintptr_t)l->x, f, t, size);
  l->y = (float *)moved((uintptr_t)l->y, f, t, size);
  l->arg = (uint8_t *)moved((uintptr_t)l->arg, f, t, size);
}

mmbError cnn_layer_forward(cnn_layer *l, cnn_pass *p, const float *x, float **y) {
  const cnn_ops *o = p->ops;
  size_t n_in = p->batch * cnn_shape_size(l->in), n_out = p->batch * cnn_shape_size(l->out);
  mmbError err = MMB_OK;
  if (l->kind == CNN_RELU) {
    l->y = (float *)x;   /* in place: the layer before keeps its input, not its output */
    o->relu(o->ctx, x, n_in, l->y);
  } else if ((err = output(p, n_out, &l->y)) == MMB_OK) {
    switch (l->kind) {
      case CNN_CONV: err = conv_forward(p, l, x); break;
      case CNN_DENSE:
        l->x = x;
        err = dense_forward(p, l, x);
        break;
      case CNN_MAXPOOL: {
        cnn_window w = pool_window(l, p->batch);
        if ((err = keep(p, n_out, (void **)&l->arg)) == MMB_OK)
          o->maxpool(o->ctx, x, &w, l->y, l->arg);
        break;
      }
      case CNN_RELU: break;
    }
  }
  if (err == MMB_OK) *y = l->y;
  return err;
}

mmbError cnn_layer_backward(cnn_layer *l, cnn_pass *p, float *dy, float **dx) {
  const cnn_ops *o = p->ops;
  size_t n_in = p->batch * cnn_shape_size(l->in);
  float *d = NULL;
  mmbError err = MMB_OK;
  if (l->kind == CNN_RELU) {
    o->relu_backward(o->ctx, l->y, dy, n_in, dy);
    d = dy;
  } else if (!dx || (err = alloc_floats(p, n_in, &d)) == MMB_OK) {
    switch (l->kind) {
      case CNN_CONV: err = conv_backward(p, l, dy, d); break;
      case CNN_DENSE: err = dense_backward(p, l, dy, d); break;
      case CNN_MAXPOOL:
        if (d) {
          cnn_window w = pool_window(l, p->batch);
          o->maxpool_backward(o->ctx, dy, l->arg, &w, d);
        }
        break;
      case CNN_RELU: break;
    }
  }
  if (err == MMB_OK && dx) *dx = d;
  return err;
}

mmbError cnn_loss(cnn_pass *p, const float *logits, const uint8_t *labels, size_t classes,
                  float *stats, float **dlogits) {
  mmbError err = alloc_floats(p, p->batch * classes, dlogits);
  if (err == MMB_OK)
    p->ops->softmax_xent(p->ops->ctx, logits, labels, p->batch, classes,
                         p->norm ? p->norm : p->batch, *dlogits, stats);
  return err;
}
