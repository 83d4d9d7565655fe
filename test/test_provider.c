/* User providers through mmb_provider_register, and the fault provider. */
#include "common.h"

#include "fault/fault.h"

/* A host provider that counts its calls and keeps its target. */
typedef struct counting_state {
  mmbProviderTarget target;
  int allocs, frees;
  bool finalized;
} counting_state;

static counting_state *last_state;

static mmbError counting_init(void *state, const mmbProviderTarget *target) {
  counting_state *st = state;
  st->target = *target;
  last_state = st;
  return MMB_OK;
}
static mmbError counting_alloc(void *state, size_t size, size_t alignment, unsigned flags, void **out) {
  ((counting_state *)state)->allocs++;
  if (posix_memalign(out, alignment, size)) return MMB_OUT_OF_MEMORY;
  if (flags & MMB_ALLOC_ZERO) memset(*out, 0, size);
  return MMB_OK;
}
static void counting_free(void *state, void *ptr, size_t size, size_t alignment) {
  ((counting_state *)state)->frees++;
  free(ptr);
}

static const mmbProviderOps counting_ops = {
    .abi_version = MMB_PROVIDER_ABI_VERSION, .name = "counting",
    .state_size = sizeof(counting_state), .caps = MMB_PROVIDER_HOST_ACCESSIBLE,
    .init = counting_init, .alloc = counting_alloc, .free = counting_free,
};

MMB_TEST(provider, a_registered_provider_serves_allocations) {
  mmbProviderType type;
  OK(mmb_provider_register(&counting_ops, &type));
  cr_assert_geq(type, MMB_PROVIDER_USER);
  cr_assert_str_eq(mmb_provider_name(type), "counting");
  const mmbProviderOps *ops;
  OK(mmb_provider_get_ops(type, &ops));
  cr_assert_eq(ops, &counting_ops);
  mmbMemInterface *iface = test_interface(type, 0);
  counting_state *st = last_state;
  cr_assert_eq(st->target.layer, MMB_DRAM);
  cr_assert_eq(st->target.context, MMB_CPU);
  mmbAllocation *a, *b;
  OK(mmb_allocate(100, iface, &a));
  OK(mmb_allocate(200, iface, &b));
  memset(mmb_allocation_ptr(a), 1, 100);
  OK(mmb_copy_1d(b, 0, a, 0, 100));
  cr_assert_eq(st->allocs, 2);
  OK(mmb_free(a));
  OK(mmb_free(b));
  cr_assert_eq(st->frees, 2);
  OK(mmb_interface_destroy(iface));
}

/* A provider's own options reach its init through the interface config:
   here the byte it fills new blocks with (its state keeps a copy; the
   pointer is valid during init only); an interface without them fills 0. */
typedef struct filling_state {
  int fill;
} filling_state;

static mmbError filling_init(void *state, const mmbProviderTarget *target) {
  filling_state *st = state;
  st->fill = target->options ? *(const int *)target->options : 0;
  return MMB_OK;
}
static mmbError filling_alloc(void *state, size_t size, size_t alignment, unsigned flags,
                              void **out) {
  if (posix_memalign(out, alignment, size)) return MMB_OUT_OF_MEMORY;
  memset(*out, flags & MMB_ALLOC_ZERO ? 0 : ((filling_state *)state)->fill, size);
  return MMB_OK;
}
static void filling_free(void *state, void *ptr, size_t size, size_t alignment) { free(ptr); }

MMB_TEST(provider, its_options_come_through_the_interface_config) {
  static const mmbProviderOps filling_ops = {
      .abi_version = MMB_PROVIDER_ABI_VERSION, .name = "filling",
      .state_size = sizeof(filling_state), .caps = MMB_PROVIDER_HOST_ACCESSIBLE,
      .init = filling_init, .alloc = filling_alloc, .free = filling_free};
  mmbProviderType type;
  OK(mmb_provider_register(&filling_ops, &type));
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  int fill = 0x5a;
  mmbMemInterface *with, *without;
  OK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.provider = type,
                                                           .provider_options = &fill}, &with));
  fill = 0;   /* copied at init: the interface keeps 0x5a */
  OK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.provider = type}, &without));
  mmbAllocation *a, *b;
  OK(mmb_allocate(64, with, &a));
  OK(mmb_allocate(64, without, &b));
  cr_assert_eq(((unsigned char *)mmb_allocation_ptr(a))[63], 0x5a);
  cr_assert_eq(((unsigned char *)mmb_allocation_ptr(b))[63], 0);
  OK(mmb_free(a));
  OK(mmb_free(b));
  OK(mmb_interface_destroy(with));
  OK(mmb_interface_destroy(without));
}

MMB_TEST(provider, bad_registrations) {
  mmbProviderType type = 0;
  FAILS(mmb_provider_register(NULL, &type), MMB_INVALID_ARG);
  FAILS(mmb_provider_register(&counting_ops, NULL), MMB_INVALID_ARG);
  mmbProviderOps ops = counting_ops;
  ops.abi_version = 99;
  FAILS(mmb_provider_register(&ops, &type), MMB_UNSUPPORTED);
  ops = counting_ops;
  ops.name = NULL;
  FAILS(mmb_provider_register(&ops, &type), MMB_INVALID_ARG);
  ops = counting_ops;
  ops.alloc = NULL;
  FAILS(mmb_provider_register(&ops, &type), MMB_INVALID_ARG);
  ops = counting_ops;
  ops.free = NULL;
  FAILS(mmb_provider_register(&ops, &type), MMB_INVALID_ARG);
  ops = counting_ops;
  ops.caps = 0;   /* not host accessible, and no copy */
  FAILS(mmb_provider_register(&ops, &type), MMB_INVALID_ARG);
  ops = counting_ops;
  ops.layers = 1u << 7;
  FAILS(mmb_provider_register(&ops, &type), MMB_INVALID_ARG);
  cr_assert_eq(type, 0);
  static mmbProviderOps many[33];
  for (int i = 0; i < 32; i++) {
    many[i] = counting_ops;
    OK(mmb_provider_register(&many[i], &type));
  }
  many[32] = counting_ops;
  FAILS(mmb_provider_register(&many[32], &type), MMB_OUT_OF_MEMORY);
  FAILS(mmb_provider_get_ops((mmbProviderType)(MMB_PROVIDER_USER + 40), &(const mmbProviderOps *){0}),
        MMB_UNAVAILABLE);
}

static mmbError failing_init(void *state, const mmbProviderTarget *target) {
  return MMB_UNAVAILABLE;
}

MMB_TEST(provider, layers_and_init_errors_are_respected) {
  mmbProviderOps hbm_only = counting_ops;
  hbm_only.layers = 1u << MMB_HBM;
  mmbProviderType type;
  OK(mmb_provider_register(&hbm_only, &type));
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterfaceConfig cfg = {.provider = type};
  mmbMemInterface *iface = NULL;
  FAILS(mmb_request_interface(dram, &cfg, &iface), MMB_UNSUPPORTED);
  cr_assert_null(iface);
  static mmbProviderOps failing;
  failing = counting_ops;
  failing.init = failing_init;
  OK(mmb_provider_register(&failing, &type));
  cfg.provider = type;
  FAILS(mmb_request_interface(dram, &cfg, &iface), MMB_UNAVAILABLE);   /* its own error */
  cr_assert_null(iface);
}

/* A "device" provider: its memory is not host accessible, so the core must
   route every copy that touches it through copy_2d / copy_3d. */
static int device_copies_2d, device_copies_3d;
static mmbError dev_alloc(void *state, size_t size, size_t alignment, unsigned flags, void **out) {
  if ((flags & MMB_ALLOC_ZERO)) return MMB_UNSUPPORTED;   /* zeroing goes through memset */
  return posix_memalign(out, alignment, size) ? MMB_OUT_OF_MEMORY : MMB_OK;
}
static void dev_free(void *state, void *ptr, size_t size, size_t alignment) { free(ptr); }
static mmbError dev_copy_2d(void *state, void *dst, size_t dpitch, const void *src, size_t spitch,
                            size_t width, size_t height) {
  device_copies_2d++;
  for (size_t r = 0; r < height; r++) memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
  return MMB_OK;
}
static mmbError dev_copy_3d(void *state, void *dst, size_t dpitch, size_t dslice, const void *src,
                            size_t spitch, size_t sslice, size_t width, size_t height, size_t depth) {
  device_copies_3d++;
  for (size_t z = 0; z < depth; z++)
    for (size_t r = 0; r < height; r++)
      memcpy((char *)dst + z * dslice + r * dpitch, (const char *)src + z * sslice + r * spitch, width);
  return MMB_OK;
}
static const mmbProviderOps device_ops = {
    .abi_version = MMB_PROVIDER_ABI_VERSION, .name = "fake-device",
    .caps = MMB_PROVIDER_DEVICE_ACCESSIBLE, .alloc = dev_alloc, .free = dev_free,
    .copy_2d = dev_copy_2d, .copy_3d = dev_copy_3d,
};

MMB_TEST(provider, copies_touching_device_memory_go_through_the_provider) {
  mmbProviderType type;
  OK(mmb_provider_register(&device_ops, &type));
  mmbMemInterface *host = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterfaceConfig cfg = {.provider = type};
  mmbMemInterface *dev;
  OK(mmb_request_interface(dram, &cfg, &dev));
  mmbAllocation *h, *d, *back;
  OK(mmb_allocate(8 * 8 * 8, host, &h));
  OK(mmb_allocate(8 * 8 * 8, dev, &d));
  OK(mmb_allocate(8 * 8 * 8, host, &back));
  fill_pattern(mmb_allocation_ptr(h), 512, 9);
  memset(mmb_allocation_ptr(back), 0, 512);
  OK(mmb_copy(d, h));                                       /* host -> device, 1-D */
  cr_assert_eq(device_copies_2d, 1);
  OK(mmb_copy_2d(back, 0, 0, 8, d, 0, 0, 8, 4, 8));         /* device -> host, 2-D */
  cr_assert_eq(device_copies_2d, 2);
  const size_t pitch[2] = {8, 64}, zero[3] = {0}, box[3] = {4, 4, 4};
  OK(mmb_copy_nd(back, zero, pitch, d, zero, pitch, 3, box));
  cr_assert_eq(device_copies_3d, 1);
  for (size_t z = 0; z < 4; z++)
    for (size_t y = 0; y < 4; y++)
      for (size_t x = 0; x < 4; x++)
        cr_assert_eq(((unsigned char *)mmb_allocation_ptr(back))[z * 64 + y * 8 + x],
                     ((unsigned char *)mmb_allocation_ptr(h))[z * 64 + y * 8 + x]);
  mmbAllocation *z = NULL;
  FAILS(mmb_allocate_opts(64, dev, &(mmbAllocateOptions){.flags = MMB_ALLOC_ZERO}, &z), MMB_UNSUPPORTED);
  cr_assert_null(z);
  OK(mmb_free(h));
  OK(mmb_free(d));
  OK(mmb_free(back));
  OK(mmb_interface_destroy(host));
  OK(mmb_interface_destroy(dev));
}

MMB_TEST(provider, fault_provider_errors_reach_the_caller) {
  mmbProviderType type;
  OK(mmb_provider_register(&mmb__fault_provider, &type));
  mmbMemInterface *iface = test_interface(type, 0);
  mmb__fault_provider_configure(1, 2, MMB_ERROR);   /* calls 1 and 2 fail */
  mmbAllocation *a, *b = NULL, *c;
  OK(mmb_allocate(32, iface, &a));
  FAILS(mmb_allocate(32, iface, &b), MMB_ERROR);
  FAILS(mmb_allocate(32, iface, &b), MMB_ERROR);
  OK(mmb_allocate(32, iface, &c));
  cr_assert_null(b);
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.n_failed, 2);
  cr_assert_eq(st.n_allocs, 2);
  cr_assert_eq(st.reserved_current, 64);
  mmbMemSpace *space;
  OK(mmb_interface_get_space(iface, &space));
  OK(mmb_space_get_stats(space, &st));
  cr_assert_eq(st.n_failed, 2);
  cr_assert_eq(st.reserved_current, 64, "failed trips leave the space's reservation alone");
  OK(mmb_free(a));
  OK(mmb_free(c));
  OK(mmb_interface_destroy(iface));
}

/* What the system provider uses, for a provider of the caller's: mapped
   pages, aligned, zeroed, bound to a node; bad arguments refused. */
MMB_TEST(provider, host_services_map_bind_and_unmap) {
  size_t page = mmb_host_page_size();
  cr_assert(page >= 4096 && (page & (page - 1)) == 0, "page size %zu", page);
  mmbSpaceInfo info;
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  OK(mmb_space_get_info(dram, &info));
  void *p = NULL;
  OK(mmb_host_map(3 * page + 5, (size_t)1 << 21, info.numa_node, &p));
  cr_assert_eq((uintptr_t)p % ((size_t)1 << 21), 0, "not aligned to 2 MiB");
  for (size_t i = 0; i < 4 * page; i++) cr_assert_eq(((unsigned char *)p)[i], 0);
  memset(p, 0xab, 4 * page);
  OK(mmb_host_bind(p, 4 * page, info.numa_node));
  FAILS(mmb_host_bind(p, 4 * page, 1 << 20), MMB_INVALID_ARG);   /* no such node */
  FAILS(mmb_host_bind(p, 4 * page, -1), MMB_INVALID_ARG);
  FAILS(mmb_host_bind((char *)p + 1, page, info.numa_node), MMB_INVALID_ARG);
  FAILS(mmb_host_bind(NULL, page, info.numa_node), MMB_INVALID_ARG);
  FAILS(mmb_host_bind(p, 0, info.numa_node), MMB_INVALID_ARG);
  OK(mmb_host_unmap(p, 3 * page + 5));
  void *q = &page;
  FAILS(mmb_host_map(0, 64, -1, &q), MMB_INVALID_ARG);
  FAILS(mmb_host_map(page, 3, -1, &q), MMB_INVALID_ARG);
  FAILS(mmb_host_map(page, MMB_MAX_ALIGNMENT * 2, -1, &q), MMB_INVALID_ARG);
  FAILS(mmb_host_map(SIZE_MAX, 64, -1, &q), MMB_INVALID_ARG);
  FAILS(mmb_host_map(page, 64, -1, NULL), MMB_INVALID_ARG);
  cr_assert_eq(q, (void *)&page, "out-parameter written on failure");
  FAILS(mmb_host_unmap(NULL, page), MMB_INVALID_ARG);
  OK(mmb_host_map(page, 64, -1, &p));
  FAILS(mmb_host_unmap((char *)p + 8, page), MMB_INVALID_ARG);   /* not a mapping's start */
  FAILS(mmb_host_unmap(p, 0), MMB_INVALID_ARG);
  OK(mmb_host_unmap(p, page));
}

Test(provider, host_services_need_init) {
  void *p = NULL;
  cr_assert_eq(mmb_host_map(4096, 64, -1, &p), MMB_NOT_INITIALIZED);
  cr_assert_eq(mmb_host_bind(&p, 4096, 0), MMB_NOT_INITIALIZED);
  cr_assert_eq(mmb_host_unmap(&p, 4096), MMB_NOT_INITIALIZED);
}

/* A stream queue issues the copies of memory whose provider says it is CUDA
   memory: the cuda provider does, the host ones do not. */
MMB_TEST(provider, only_cuda_memory_is_a_streams_to_copy) {
  const mmbProviderOps *ops;
  OK(mmb_provider_get_ops(MMB_PROVIDER_SYSTEM, &ops));
  cr_assert_eq(ops->caps & MMB_PROVIDER_CUDA_MEMORY, 0);
  OK(mmb_provider_get_ops(MMB_PROVIDER_PINNED, &ops));
  cr_assert_eq(ops->caps & MMB_PROVIDER_CUDA_MEMORY, 0);
  mmbError e = mmb_provider_get_ops(MMB_PROVIDER_CUDA, &ops);
  if (e == MMB_UNAVAILABLE) cr_skip_test("built without CUDA");
  OK(e);
  cr_assert_neq(ops->caps & MMB_PROVIDER_CUDA_MEMORY, 0);
}
