/* A training loop's memory, the way mmb wants it: weights from a caching
   pool (allocated once), per-iteration activations in a region that is
   reset after every iteration, and per-layer scratch in a child region.
   After the first iteration nothing reaches the provider any more: the
   program prints the provider trips per iteration to show it.

     build/bin/training_loop                       # 8 iterations
     MMB_TRACE=loop.json build/bin/training_loop   # then: tools/mmb-plot loop.json loop.svg */
#include <mmb/mmb.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                               \
  do {                                                                            \
    mmbError e_ = (call);                                                         \
    if (e_ != MMB_OK) {                                                           \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, mmb_error_string(e_)); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

enum { LAYERS = 6, ITERATIONS = 8, BATCH = 64 };

int main(int argc, char **argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : ITERATIONS;
  if (iterations < 1) iterations = 1;
  CHECK(mmb_init(NULL));
  mmbMemSpace *dram;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *pool;
  mmbMemInterfaceConfig cfg = {.strategy = MMB_STRATEGY_POOL};
  CHECK(mmb_request_interface(dram, &cfg, &pool));

  /* weights: one allocation per layer, for the whole run */
  size_t width[LAYERS + 1] = {784, 512, 512, 256, 256, 128, 10};
  mmbAllocation *weights[LAYERS];
  mmbAllocateOptions zeroed = {.flags = MMB_ALLOC_ZERO};
  for (int l = 0; l < LAYERS; l++)
    CHECK(mmb_allocate_opts(width[l] * width[l + 1] * sizeof(float), pool, &zeroed, &weights[l]));

  mmbRegion *activations;
  CHECK(mmb_region_create(pool, &(mmbRegionOptions){.block_size = 1 << 20}, &activations));
  printf("%-9s %12s %12s %15s\n", "iteration", "used", "reserved", "provider trips");
  unsigned long long trips_before = 0;
  for (int it = 0; it < iterations; it++) {
    for (int l = 0; l < LAYERS; l++) {
      float *out;   /* forward activations live until the end of the iteration */
      CHECK(mmb_region_alloc(activations, BATCH * width[l + 1] * sizeof(float), 64, (void **)&out));
      mmbRegion *scratch;   /* layer temporaries: gone when the layer is done */
      CHECK(mmb_region_push(activations, &scratch));
      float *tmp;
      CHECK(mmb_region_alloc(scratch, BATCH * width[l] * sizeof(float), 64, (void **)&tmp));
      memset(tmp, 0, BATCH * width[l] * sizeof(float));
      const float *w = mmb_allocation_ptr(weights[l]);
      for (size_t j = 0; j < width[l + 1]; j++) out[j] = w[j] + tmp[j % width[l]];
      CHECK(mmb_region_destroy(scratch));
    }
    mmbStats st;
    CHECK(mmb_interface_get_stats(pool, &st));
    printf("%-9d %9.2f MiB %9.2f MiB %15llu\n", it, st.used_current / 1048576.0,
           st.reserved_current / 1048576.0, st.n_provider_allocs - trips_before);
    trips_before = st.n_provider_allocs;
    CHECK(mmb_region_reset(activations));   /* O(1): the blocks stay */
  }

  CHECK(mmb_region_destroy(activations));
  for (int l = 0; l < LAYERS; l++) CHECK(mmb_free(weights[l]));
  mmbStats st;
  CHECK(mmb_interface_get_stats(pool, &st));
  printf("peak used %.2f MiB, peak reserved %.2f MiB, %llu allocations, %llu provider trips\n",
         st.used_high / 1048576.0, st.reserved_high / 1048576.0, st.n_allocs, st.n_provider_allocs);
  CHECK(mmb_interface_destroy(pool));
  CHECK(mmb_finalize());
  return 0;
}
