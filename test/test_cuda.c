/* CUDA device memory: skipped where there is no device; compiled everywhere. */
#include "arrays.h"

MMB_TEST(cuda, device_space_has_capacity_and_cuda_provider) {
  mmbMemInterface *dev = test_cuda_interface();
  mmbMemSpace *gpu;
  mmbSpaceInfo info;
  OK(mmb_interface_get_space(dev, &gpu));
  OK(mmb_space_get_info(gpu, &info));
  cr_assert_gt(info.capacity, 0);
  cr_assert_eq(info.default_provider, MMB_PROVIDER_CUDA);
  OK(mmb_interface_destroy(dev));
}

MMB_TEST(cuda, host_device_round_trips_in_1d_2d_3d) {
  mmbMemInterface *dev = test_cuda_interface();
  mmbMemInterface *host = test_interface(MMB_PROVIDER_DEFAULT, 0);
  enum { X = 96, Y = 20, Z = 6, N = X * Y * Z };
  mmbAllocation *h, *d, *back;
  OK(mmb_allocate(N, host, &h));
  OK(mmb_allocate_opts(N, dev, &(mmbAllocateOptions){.flags = MMB_ALLOC_ZERO}, &d));
  OK(mmb_allocate(N, host, &back));
  fill_pattern(mmb_allocation_ptr(h), N, 3);
  OK(mmb_copy(back, d));   /* zeroed device memory */
  for (size_t i = 0; i < N; i++) cr_assert_eq(((unsigned char *)mmb_allocation_ptr(back))[i], 0);
  OK(mmb_copy(d, h));
  OK(mmb_copy(back, d));
  cr_assert_eq(memcmp(mmb_allocation_ptr(h), mmb_allocation_ptr(back), N), 0);
  memset(mmb_allocation_ptr(back), 0, N);
  OK(mmb_copy_2d(back, 8, 2, X, d, 16, 3, X, 40, 10));
  for (size_t r = 0; r < 10; r++)
    cr_assert_eq(memcmp((char *)mmb_allocation_ptr(back) + (2 + r) * X + 8,
                        (char *)mmb_allocation_ptr(h) + (3 + r) * X + 16, 40), 0);
  const size_t pitch[2] = {X, X * Y}, zero[3] = {0}, off[3] = {4, 1, 2}, box[3] = {50, 15, 3};
  memset(mmb_allocation_ptr(back), 0, N);
  OK(mmb_copy_nd(back, zero, pitch, d, off, pitch, 3, box));
  for (size_t z = 0; z < 3; z++)
    for (size_t y = 0; y < 15; y++)
      cr_assert_eq(memcmp((char *)mmb_allocation_ptr(back) + z * X * Y + y * X,
                          (char *)mmb_allocation_ptr(h) + (z + 2) * X * Y + (y + 1) * X + 4, 50), 0);
  OK(mmb_free(h));
  OK(mmb_free(d));
  OK(mmb_free(back));
  OK(mmb_interface_destroy(dev));
  OK(mmb_interface_destroy(host));
}

/* The tile cache in a device's memory (mmb/cache.h): the tiles of a host
   array fetched there (each hinted one ahead), read back and written over
   there by copies (the test has no kernel), evicted with their write-back,
   flushed; home ends with every write, each dirty tile written home once.
   Then an acquire on a CUDA stream fetches a tile again. */
MMB_TEST(cuda, the_tile_cache_runs_in_device_memory) {
  enum { N = 64, T = 16, TILES = (N / T) * (N / T) };
  const size_t tile_bytes = T * T * sizeof(double);
  mmbMemInterface *dev = test_cuda_interface(), *host = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemSpace *gpu;
  OK(mmb_interface_get_space(dev, &gpu));
  OK(mmb_space_set_cache(gpu, &(mmbCacheConfig){.budget_bytes = 3 * tile_bytes}));
  mmbDimensions d = dims2(N, N);
  mmbArray *a = test_array(host, &d, MMB_ROWMAJOR, 0), *src = test_array(host, &d, MMB_ROWMAJOR, 0),
           *seen = test_array(host, &d, MMB_ROWMAJOR, 0);
  double *pa = mmb_array_ptr(a), *ps = mmb_array_ptr(src), *pv = mmb_array_ptr(seen);
  for (size_t i = 0; i < N * N; i++) pa[i] = (double)i, ps[i] = -(double)i - 1, pv[i] = 0;
  mmbArray *all[] = {a, src, seen};
  for (size_t k = 0; k < 3; k++) OK(mmb_array_tile(all[k], &(mmbDimensions){2, {T, T}}));
  mmbArrayTile *t[3], *l;
  for (size_t i = 0; i < TILES; i++) {
    mmbIndex at = {2, {i / (N / T), i % (N / T)}}, next = {2, {(i + 1) / (N / T), (i + 1) % (N / T)}};
    for (size_t k = 0; k < 3; k++) OK(mmb_tile_at(all[k], &at, &t[k]));
    if (i + 1 < TILES) {
      mmbArrayTile *n;
      OK(mmb_tile_at(a, &next, &n));
      OK(mmb_tile_advise(n, gpu, MMB_ADVICE_WILLNEED));
    }
    OK(mmb_tile_acquire(t[0], gpu, MMB_READ_WRITE, &l));
    mmbTileState st;
    OK(mmb_tile_get_state(l, &st));
    cr_assert(l->space == gpu && !st.host_accessible && st.writable, "tile %zu", i);
    OK(mmb_tile_copy(t[2], l));   /* what the device holds, read back */
    OK(mmb_tile_copy(l, t[1]));   /* and written over there */
    OK(mmb_tile_release(l));
  }
  for (size_t i = 0; i < N * N; i++) cr_assert_eq(pv[i], (double)i, "fetched element %zu", i);
  mmbCacheStats cs;
  OK(mmb_space_get_cache_stats(gpu, &cs));
  cr_assert_leq(cs.used_bytes, 3 * tile_bytes);
  OK(mmb_array_flush(a));
  for (size_t i = 0; i < N * N; i++) cr_assert_eq(pa[i], ps[i], "element %zu at home", i);
  OK(mmb_space_get_cache_stats(gpu, &cs));
  cr_assert(cs.fetched_bytes == TILES * tile_bytes && cs.writebacks == TILES &&
                cs.writeback_bytes == TILES * tile_bytes,
            "%llu bytes fetched, %llu write-backs", (unsigned long long)cs.fetched_bytes,
            (unsigned long long)cs.writebacks);
  OK(mmb_array_evict(a, gpu));
  OK(mmb_space_get_cache_stats(gpu, &cs));
  cr_assert_eq(cs.used_bytes, 0);
  /* on a stream: the tile fetched again, then read back */
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_CUDA_STREAM}, &q));
  mmbRequest r = {0};
  for (size_t k = 0; k < 3; k++) OK(mmb_tile_at(all[k], &(mmbIndex){2, {1, 2}}, &t[k]));
  OK(mmb_tile_acquire_async(t[0], gpu, MMB_READ, q, &r, &l));
  OK(mmb_wait(&r));
  memset(pv, 0, N * N * sizeof *pv);
  OK(mmb_tile_copy(t[2], l));
  OK(mmb_tile_release(l));
  for (size_t i = t[0]->lower[0]; i < t[0]->upper[0]; i++)
    for (size_t j = t[0]->lower[1]; j < t[0]->upper[1]; j++)
      cr_assert_eq(pv[i * N + j], -(double)(i * N + j) - 1);
  OK(mmb_space_get_cache_stats(gpu, &cs));
  cr_assert_eq(cs.refetches, 1);
  OK(mmb_queue_destroy(NULL, &q));
  for (size_t k = 0; k < 3; k++) OK(mmb_array_destroy(all[k]));
  OK(mmb_interface_destroy(dev));
}

MMB_TEST(cuda, pinned_space_exists_with_a_device) {
  mmbMemInterface *dev = test_cuda_interface();
  mmbMemSpace *pinned;
  OK(mmb_request_space(MMB_DRAM, MMB_GPU_CUDA, NULL, &pinned));
  mmbMemInterface *pin;
  OK(mmb_request_interface(pinned, NULL, &pin));
  mmbProviderType type;
  OK(mmb_interface_get_provider(pin, &type));
  cr_assert_eq(type, MMB_PROVIDER_PINNED);
  mmbAllocation *p, *d;
  OK(mmb_allocate(1 << 20, pin, &p));
  OK(mmb_allocate(1 << 20, dev, &d));
  memset(mmb_allocation_ptr(p), 5, 1 << 20);
  OK(mmb_copy(d, p));
  memset(mmb_allocation_ptr(p), 0, 1 << 20);
  OK(mmb_copy(p, d));
  cr_assert_eq(((unsigned char *)mmb_allocation_ptr(p))[12345], 5);
  OK(mmb_free(p));
  OK(mmb_free(d));
  OK(mmb_interface_destroy(pin));
  OK(mmb_interface_destroy(dev));
}

Test(cuda_env, device_limit_is_enforced) {
  setenv("MMB_LIMIT_GDRAM", "1M", 1);
  mmb_test_setup();
  mmbMemSpace *gpu;
  if (mmb_request_space(MMB_GDRAM, MMB_GPU_CUDA, NULL, &gpu) != MMB_OK) {
    mmb_test_teardown();
    cr_skip_test("no CUDA device on this node");
  }
  mmbMemInterface *dev;
  OK(mmb_request_interface(gpu, NULL, &dev));
  mmbAllocation *a, *b;
  OK(mmb_allocate(768 << 10, dev, &a));
  FAILS(mmb_allocate(512 << 10, dev, &b), MMB_OUT_OF_MEMORY);
  OK(mmb_free(a));
  OK(mmb_interface_destroy(dev));
  mmb_test_teardown();
}
