/* Activations across tiers: a batch whose activations do not fit the fast
   tier goes through the layers before the first dense one (the
   convolution block, where nearly all of them are) in chunks of samples.
   What forward keeps of a chunk for backward goes into a tile of an array
   homed in the capacity tier, acquired from mmb's tile cache in the
   parameters' space: the cache, under the same budget as the weights,
   decides whether it stays or is written home, and backward acquires it
   again (advised WILLNEED two chunks ahead), as it does a weight tile.
   The dense layers take the whole batch, as without offload.

   The chunks go backward in the order they went forward, each one's
   weight gradients added to the earlier ones' in the order of the
   samples, so the weights are bitwise those of a run without offload on
   the CPU (on a GPU a bias gradient's sum is split at the chunks). Only the
   auto plan offloads (the cache is what brings the chunks back). */
#ifndef CNN_OFFLOAD_H
#define CNN_OFFLOAD_H

#include "model.h"

typedef struct cnn_offload {
  cnn_plan *plan;
  size_t chunk;         /* samples per chunk */
  size_t split;         /* the layers before it go by chunks */
  size_t chunk_bytes;   /* one chunk's kept activations (a tile) */
  mmbArray *kept;       /* a tile per chunk, homed in the capacity tier */
  size_t chunks;        /* tiles of `kept`: a full batch's chunks */
  cnn_keep keep;        /* the current chunk's tile, as forward fills it */
  const void *at;       /* where the layers' kept pointers point now */
} cnn_offload;

/* Sets up offload of batches of up to `batch` samples in chunks of `chunk`
   (1 <= chunk <= batch), after cnn_plan_place. MMB_INVALID_ARG (err says
   why): not the auto plan, a net with no layer to chunk, or a chunk whose
   tile, beside the weight tiles a step pins, passes the cache's budget. */
mmbError cnn_offload_create(cnn_offload *o, cnn_plan *plan, const cnn_model *m, size_t batch,
                            size_t chunk, char *err, size_t err_len);
mmbError cnn_offload_destroy(cnn_offload *o);

/* Bytes a full batch keeps in the capacity tier. */
size_t cnn_offload_bytes(const cnn_offload *o);

/* cnn_model_forward and cnn_model_backward with the chunked layers'
   activations offloaded (p->batch at most the batch it was created for).
   Forward without `train` (evaluation) keeps nothing: each chunk's
   activations live in a child region of p->region until the next chunk. */
mmbError cnn_offload_forward(cnn_offload *o, cnn_model *m, cnn_pass *p, const float *x,
                             bool train, float **logits);
mmbError cnn_offload_backward(cnn_offload *o, cnn_model *m, cnn_pass *p, float *dlogits);

#endif /* CNN_OFFLOAD_H */
