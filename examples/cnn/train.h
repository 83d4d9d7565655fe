/* The training loop: epochs of batches streamed from the capacity tier
   into the fast tier (a prefetching tile iterator per data array on the
   copy queue: the next batch moves while this one computes), forward in
   the batch's region, backward in a child region, SGD on each weight tile
   while it is in the fast tier; then the test set, forward only. */
#ifndef CNN_TRAIN_H
#define CNN_TRAIN_H

#include "dist.h"
#include "idx.h"
#include "model.h"
#include "offload.h"

typedef struct cnn_epoch {
  size_t index, epochs;     /* 1-based */
  size_t samples, batches;
  double loss;              /* mean over the epoch's samples */
  double train_accuracy, test_accuracy;
  double seconds;           /* training only (not the test pass) */
  double samples_per_s;
} cnn_epoch;

typedef struct cnn_train_options {
  size_t epochs, batch;
  size_t max_batches;       /* per epoch; 0: all */
  size_t test_limit;        /* test images evaluated; 0: all */
  cnn_sgd sgd;
  unsigned long long seed;  /* epoch e > 1 visits the training set in a permutation of seed + e - 1 */
  bool progress;            /* a progress bar on stderr */
  void (*on_epoch)(const cnn_epoch *e, void *arg);
  void *arg;
  cnn_dist *dist;           /* data-parallel over its ranks (batch: the global batch,
                               a multiple of the ranks); NULL or one rank: alone */
  cnn_offload *offload;     /* activations offloaded to the capacity tier; NULL: kept
                               in the fast tier's region */
} cnn_train_options;

typedef struct cnn_result {
  size_t train_samples, batches, test_samples;
  double seconds;                           /* training, all epochs */
  double final_loss, train_accuracy, test_accuracy;   /* of the last epoch */
  unsigned long long trips_after_first_batch;         /* provider trips, every space */
  size_t rss_after_first_batch, rss_end;              /* bytes */
} cnn_result;

/* Trains `m` (already placed by the plan) on `train` and evaluates it on
   `test` after every epoch. Data-parallel, each rank trains on its share of
   every global batch (a permutation's, from the same seed on every rank);
   the counts and the loss are over all ranks. Errors are mmb's (err says
   where). */
mmbError cnn_train(cnn_plan *plan, cnn_model *m, cnn_dataset *train, cnn_dataset *test,
                   const cnn_train_options *o, cnn_result *r, char *err, size_t err_len);

/* Accuracy of `m` on the first `limit` items of `ds` (0: all), forward only
   (by offload's chunks when it is not NULL). */
mmbError cnn_evaluate(cnn_plan *plan, cnn_model *m, cnn_offload *offload, cnn_dataset *ds,
                      size_t batch, size_t limit, double *accuracy, size_t *samples);

/* Provider trips (allocations and frees) of every space so far. */
unsigned long long cnn_provider_trips(void);
/* The process's resident set, in bytes (0 where /proc is missing). */
size_t cnn_rss_bytes(void);

#endif /* CNN_TRAIN_H */
