/* CUDA device memory: skipped where there is no device; compiled everywhere. */
#include "common.h"

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
