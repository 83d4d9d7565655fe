/* Activations across tiers (see offload.h). */
#include "offload.h"

#include <stdio.h>

/* Chunks advised WILLNEED ahead of backward, as a walk does its tiles. */
#define AHEAD 2

static mmbError first_of(mmbError a, mmbError b) { return a != MMB_OK ? a : b; }

mmbError cnn_offload_create(cnn_offload *o, cnn_plan *plan, const cnn_model *m, size_t batch,
                            size_t chunk, char *err, size_t err_len) {
  *o = (cnn_offload){.plan = plan, .chunk = chunk};
  size_t split = 0;
  while (split < m->n_layers && m->layers[split].kind != CNN_DENSE) split++;
  const char *why = NULL;
  if (plan->mode != CNN_PLAN_AUTO)
    why = "offload needs --plan auto: the tile cache is what brings the chunks back";
  else if (split == 0 || split == m->n_layers || m->layers[split - 1].kind == CNN_RELU)
    why = "this net has no convolution block before a dense layer to offload";
  else if (chunk == 0 || chunk > batch)
    why = "an offload chunk is 1 to --batch samples";
  if (why) {
    snprintf(err, err_len, "%s", why);
    return MMB_INVALID_ARG;
  }
  o->split = split;
  for (size_t i = 0; i < split; i++)
    o->chunk_bytes += cnn_layer_kept_bytes(&m->layers[i], chunk, i == split - 1);
  /* backward pins a chunk's tile beside a tile of each of a parameter's arrays */
  size_t step = 0;
  for (size_t i = 0; i < m->n_params; i++)
    if (cnn_param_step_bytes(&m->params[i]) > step) step = cnn_param_step_bytes(&m->params[i]);
  mmbCacheStats cs;
  if (plan->params_space && mmb_space_get_cache_stats(plan->params_space, &cs) == MMB_OK &&
      cs.budget_bytes && o->chunk_bytes + step > cs.budget_bytes) {
    snprintf(err, err_len, "a chunk of %zu samples keeps %zu bytes of activations, which beside "
             "the %zu bytes of weight tiles a step pins pass the parameters' cache of %llu "
             "bytes: lower --offload or raise --fast-limit", chunk, o->chunk_bytes, step,
             (unsigned long long)cs.budget_bytes);
    return MMB_INVALID_ARG;
  }
  o->chunks = (batch + chunk - 1) / chunk;
  size_t cols = o->chunk_bytes / sizeof(float);   /* a multiple of 64 bytes */
  mmbError e = cnn_float_array(o->chunks, cols, plan->capacity_iface, &o->kept);
  if (e == MMB_OK) e = mmb_array_tile(o->kept, &(mmbDimensions){2, {1, cols}});
  if (e != MMB_OK) {
    snprintf(err, err_len, "no room for %zu chunks of %zu bytes of activations in the capacity "
             "tier: %s", o->chunks, o->chunk_bytes, mmb_error_string(e));
    cnn_offload_destroy(o);
  }
  return e;
}

mmbError cnn_offload_destroy(cnn_offload *o) {
  mmbError e = o->kept ? mmb_array_destroy(o->kept) : MMB_OK;
  o->kept = NULL;
  return e;
}

size_t cnn_offload_bytes(const cnn_offload *o) { return o->chunks * o->chunk_bytes; }

static mmbError chunk_tile(cnn_offload *o, size_t c, mmbArrayTile **out) {
  return mmb_tile_at(o->kept, &(mmbIndex){2, {c, 0}}, out);
}

static mmbError acquire(cnn_offload *o, size_t c, mmbAccessType access, mmbArrayTile **local) {
  mmbArrayTile *tile;
  mmbError e = chunk_tile(o, c, &tile);
  return e == MMB_OK ? mmb_tile_acquire(tile, o->plan->params_space, access, local) : e;
}

/* A chunk's tile back to the cache, once the kernels that wrote or read it
   are done (on a GPU: the cache may write it home as soon as it is back). */
static mmbError release(cnn_offload *o, mmbArrayTile *local) {
  return first_of(cnn_plan_kernels_done(o->plan), mmb_tile_release(local));
}

static mmbError advise(cnn_offload *o, size_t c, size_t chunks) {
  mmbArrayTile *tile;
  if (c >= chunks || !o->plan->hints) return MMB_OK;
  mmbError e = chunk_tile(o, c, &tile);
  return e == MMB_OK ? mmb_tile_advise(tile, o->plan->params_space, MMB_ADVICE_WILLNEED) : e;
}

/* The pass over one chunk: its samples, and the full batch's update and
   all-reduce on the last chunk only (the gradients are complete then). */
static cnn_pass chunk_pass(const cnn_pass *p, size_t r0, size_t chunk) {
  cnn_pass q = *p;
  q.row0 = r0;
  q.batch = p->batch - r0 < chunk ? p->batch - r0 : chunk;
  if (r0 + q.batch < p->batch) q.sgd = NULL, q.dist = NULL;
  return q;
}

mmbError cnn_offload_forward(cnn_offload *o, cnn_model *m, cnn_pass *p, const float *x,
                             bool train, float **logits) {
  if (p->batch > o->chunks * o->chunk) return MMB_INVALID_ARG;
  size_t in = cnn_shape_size(m->input), out = cnn_shape_size(m->layers[o->split - 1].out);
  float *block;   /* the chunked layers' output, for the whole batch */
  mmbError e = mmb_region_alloc(p->region, p->batch * out * sizeof(float), 64, (void **)&block);
  for (size_t c = 0, r0 = 0; e == MMB_OK && r0 < p->batch; c++, r0 += o->chunk) {
    mmbArrayTile *local = NULL;
    mmbRegion *region = NULL;
    cnn_pass q = chunk_pass(p, r0, o->chunk);
    if (train) {   /* what backward needs goes to the chunk's tile */
      if ((e = acquire(o, c, MMB_WRITE, &local)) != MMB_OK) break;
      o->keep = (cnn_keep){.base = local->ptr, .size = o->chunk_bytes, .rows = o->chunk};
      o->at = local->ptr;
      q.keep = &o->keep;
    } else {       /* nothing is kept: a child region, gone with the chunk */
      if ((e = mmb_region_push(p->region, &region)) != MMB_OK) break;
      q.region = region;
    }
    const float *y = x + r0 * in;
    for (size_t i = 0; i < o->split && e == MMB_OK; i++) {
      float *next;
      q.y_into = i + 1 == o->split ? block + r0 * out : NULL;
      if ((e = cnn_layer_forward(&m->layers[i], &q, y, &next)) == MMB_OK) y = next;
    }
    e = first_of(e, local ? release(o, local) : mmb_region_destroy(region));
  }
  float *y = block;
  for (size_t i = o->split; i < m->n_layers && e == MMB_OK; i++) {
    float *next;
    if ((e = cnn_layer_forward(&m->layers[i], p, y, &next)) == MMB_OK) y = next;
  }
  if (e == MMB_OK) *logits = y;
  return e;
}

mmbError cnn_offload_backward(cnn_offload *o, cnn_model *m, cnn_pass *p, float *dlogits) {
  size_t chunks = (p->batch + o->chunk - 1) / o->chunk;
  size_t out = cnn_shape_size(m->layers[o->split - 1].out);
  mmbError e = MMB_OK;
  for (size_t c = 0; c < AHEAD && e == MMB_OK; c++) e = advise(o, c, chunks);   /* during dense */
  float *d = dlogits;
  for (size_t i = m->n_layers; i-- > o->split && e == MMB_OK;)
    e = cnn_layer_backward(&m->layers[i], p, d, &d);
  /* in the order forward went, so each gradient sums its samples in order */
  for (size_t c = 0, r0 = 0; e == MMB_OK && r0 < p->batch; c++, r0 += o->chunk) {
    mmbArrayTile *local;
    mmbRegion *region;
    if ((e = acquire(o, c, MMB_READ, &local)) != MMB_OK) break;
    e = advise(o, c + AHEAD, chunks);
    for (size_t i = 0; i < o->split; i++)
      cnn_layer_rebase(&m->layers[i], o->at, local->ptr, o->chunk_bytes);
    o->at = local->ptr;
    cnn_pass q = chunk_pass(p, r0, o->chunk);
    if (e == MMB_OK) e = mmb_region_push(p->region, &region);
    if (e == MMB_OK) {
      q.region = region;   /* the chunk's temporaries go with it */
      float *dq = d + r0 * out;
      for (size_t i = o->split; i-- > 0 && e == MMB_OK;)
        e = cnn_layer_backward(&m->layers[i], &q, dq, i > 0 ? &dq : NULL);
      e = first_of(e, mmb_region_destroy(region));
    }
    e = first_of(e, release(o, local));
  }
  return e;
}
