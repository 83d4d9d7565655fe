/* Regions: bad input, alignment, oversize allocations, nesting rules, reuse
   after reset with no provider trip, the shared free-block list, allocations
   placed in a region, stats, and ASan poisoning after a reset. */
#include "common.h"
#include "poison_child.h"

#include <stdalign.h>
#include <stddef.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static mmbStats stats_of(mmbMemInterface *iface) {
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  return st;
}

static mmbRegion *region_of(mmbMemInterface *iface, size_t block) {
  mmbRegion *r;
  OK(mmb_region_create(iface, &(mmbRegionOptions){.block_size = block}, &r));
  return r;
}

static void *ralloc(mmbRegion *r, size_t n, size_t align) {
  void *p = NULL;
  OK(mmb_region_alloc(r, n, align, &p));
  cr_assert_not_null(p);
  return p;
}

MMB_TEST(region, bad_input_is_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *r = NULL;
  void *p = NULL;
  FAILS(mmb_region_create(NULL, NULL, &r), MMB_INVALID_ARG);
  FAILS(mmb_region_create(iface, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_region_create(iface, &(mmbRegionOptions){.block_size = SIZE_MAX}, &r), MMB_OVERFLOW);
  cr_assert_null(r);
  OK(mmb_region_create(iface, NULL, &r));
  FAILS(mmb_region_alloc(NULL, 8, 0, &p), MMB_INVALID_ARG);
  FAILS(mmb_region_alloc(r, 8, 0, NULL), MMB_INVALID_ARG);
  FAILS(mmb_region_alloc(r, 0, 0, &p), MMB_INVALID_ARG);
  FAILS(mmb_region_alloc(r, 8, 3, &p), MMB_INVALID_ARG);
  FAILS(mmb_region_alloc(r, 8, (size_t)1 << 31, &p), MMB_INVALID_ARG);
  FAILS(mmb_region_alloc(r, SIZE_MAX, 0, &p), MMB_OVERFLOW);
  FAILS(mmb_region_alloc(r, (size_t)1 << 50, 0, &p), MMB_OUT_OF_MEMORY);
  cr_assert_null(p);
  cr_assert_eq(stats_of(iface).n_failed, 1);
  FAILS(mmb_region_push(NULL, &r), MMB_INVALID_ARG);
  FAILS(mmb_region_push(r, NULL), MMB_INVALID_ARG);
  FAILS(mmb_region_reset(NULL), MMB_INVALID_ARG);
  FAILS(mmb_region_destroy(NULL), MMB_INVALID_ARG);
  /* the region still works after all that */
  memset(ralloc(r, 100, 0), 1, 100);
  OK(mmb_region_destroy(r));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(region, allocations_are_aligned_disjoint_and_keep_their_bytes) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *r = region_of(iface, 64 * KiB);
  enum { N = 3000 };
  static unsigned char *ptr[N];
  static size_t len[N];
  uint64_t rng = 99;
  for (int i = 0; i < N; i++) {
    size_t align = (size_t)1 << (test_rand(&rng) % 13);   /* 1 B .. 4 KiB */
    len[i] = 1 + test_rand(&rng) % 700;
    ptr[i] = ralloc(r, len[i], align);
    cr_assert_eq((uintptr_t)ptr[i] % align, 0);
    memset(ptr[i], (unsigned char)i, len[i]);
  }
  for (int i = 0; i < N; i++)
    for (size_t k = 0; k < len[i]; k++) cr_assert_eq(ptr[i][k], (unsigned char)i);
  cr_assert_eq((uintptr_t)ralloc(r, 8, 0) % alignof(max_align_t), 0, "default alignment");
  /* alignments past a block: a dedicated block */
  for (size_t align = 64 * KiB; align <= 8 * MiB; align <<= 1) {
    void *p = ralloc(r, 100, align);
    cr_assert_eq((uintptr_t)p % align, 0, "alignment %zu", align);
    memset(p, 7, 100);
  }
  OK(mmb_region_destroy(r));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(region, an_allocation_bigger_than_a_block_gets_its_own) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *r = region_of(iface, 64 * KiB);
  char *small = ralloc(r, 1000, 0);
  char *big = ralloc(r, 1 * MiB, 0);
  char *after = ralloc(r, 1000, 0);
  memset(big, 3, MiB);
  memset(small, 1, 1000);
  cr_assert_eq(after, small + 1000 + (alignof(max_align_t) - 1000 % alignof(max_align_t)) %
                          alignof(max_align_t), "the bump goes on in the block");
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 64 * KiB + MiB);
  /* next iteration: the same shapes, no provider trip */
  for (int it = 0; it < 5; it++) {
    OK(mmb_region_reset(r));
    cr_assert_eq(ralloc(r, 1000, 0), small);
    memset(ralloc(r, MiB, 0), 4, MiB);
  }
  cr_assert_eq(stats_of(iface).n_provider_allocs, st.n_provider_allocs);
  OK(mmb_region_destroy(r));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(region, nesting_follows_stack_order) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *root = region_of(iface, 16 * KiB), *child, *grandchild, *other;
  void *p = NULL;
  char *keep = ralloc(root, 5000, 0);
  memset(keep, 0x11, 5000);
  OK(mmb_region_push(root, &child));
  FAILS(mmb_region_push(root, &other), MMB_BUSY);
  FAILS(mmb_region_alloc(root, 8, 0, &p), MMB_BUSY);
  FAILS(mmb_region_reset(root), MMB_BUSY);
  FAILS(mmb_region_destroy(root), MMB_BUSY);
  cr_assert_null(p);
  char *c1 = ralloc(child, 3000, 0);
  cr_assert_geq(c1, keep + 5000, "the child allocates after the parent");
  for (int i = 0; i < 20; i++) memset(ralloc(child, 4000, 0), 0x22, 4000);   /* new blocks */
  OK(mmb_region_push(child, &grandchild));
  FAILS(mmb_region_destroy(child), MMB_BUSY);
  char *g1 = ralloc(grandchild, 100, 0);
  OK(mmb_region_destroy(grandchild));
  cr_assert_eq(ralloc(child, 100, 0), g1, "the grandchild's bytes came back to the child");
  OK(mmb_region_reset(child));
  cr_assert_eq(ralloc(child, 3000, 0), c1, "a reset child starts where it started");
  unsigned long long trips = stats_of(iface).n_provider_allocs;
  for (int i = 0; i < 20; i++) ralloc(child, 4000, 0);
  cr_assert_eq(stats_of(iface).n_provider_allocs, trips, "its blocks were kept");
  OK(mmb_region_destroy(child));
  for (int k = 0; k < 5000; k++) cr_assert_eq((unsigned char)keep[k], 0x11, "parent byte %d", k);
  cr_assert_eq(ralloc(root, 3000, 0), c1, "the parent goes on where the child began");
  OK(mmb_region_destroy(root));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(region, a_training_loop_reaches_a_flat_profile_after_one_iteration) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterfaceConfig cfgs[] = {{.strategy = MMB_STRATEGY_BASIC},
                                  {.strategy = MMB_STRATEGY_POOL},
                                  {.provider = MMB_PROVIDER_PINNED}};
  for (int c = 0; c < 3; c++) {
    mmbMemInterface *iface;
    OK(mmb_request_interface(dram, &cfgs[c], &iface));
    mmbRegion *r = region_of(iface, 256 * KiB);
    mmbStats first = {0};
    for (int it = 0; it < 6; it++) {
      uint64_t rng = 5;   /* the same shapes every iteration */
      for (int i = 0; i < 500; i++) {
        size_t n = 64 + test_rand(&rng) % 4000;
        memset(ralloc(r, n, 64), it, n);
      }
      memset(ralloc(r, 3 * MiB, 0), it, 3 * MiB);   /* an oversize one */
      if (it == 0) first = stats_of(iface);
      OK(mmb_region_reset(r));
    }
    mmbStats st = stats_of(iface);
    cr_assert_eq(st.n_provider_allocs, first.n_provider_allocs, "config %d", c);
    cr_assert_eq(st.reserved_high, first.reserved_current, "config %d", c);
    OK(mmb_region_destroy(r));
    st = stats_of(iface);
    cr_assert_eq(st.used_current, 0);
    cr_assert_eq(st.n_allocs, st.n_frees);
    OK(mmb_interface_trim(iface, 0));
    cr_assert_eq(stats_of(iface).reserved_current, 0, "config %d", c);
    OK(mmb_interface_destroy(iface));
  }
}

MMB_TEST(region, regions_of_one_interface_share_freed_blocks) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *a = region_of(iface, 32 * KiB), *b = region_of(iface, 32 * KiB);
  for (int i = 0; i < 8; i++) ralloc(a, 30 * KiB, 0);   /* 8 blocks */
  unsigned long long trips = stats_of(iface).n_provider_allocs;
  cr_assert_eq(trips, 8);
  OK(mmb_region_destroy(a));
  for (int i = 0; i < 8; i++) ralloc(b, 30 * KiB, 0);
  cr_assert_eq(stats_of(iface).n_provider_allocs, trips, "b grew on a's blocks");
  FAILS(mmb_interface_destroy(iface), MMB_BUSY);
  OK(mmb_region_destroy(b));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(region, allocations_placed_in_a_region) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemInterface *other = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *r = region_of(iface, 64 * KiB);
  mmbAllocateOptions in_r = {.region = r, .alignment = 256}, zeroed = {.region = r, .flags = MMB_ALLOC_ZERO};
  mmbAllocation *a, *b, *c, *z;
  OK(mmb_allocate_opts(1000, iface, &in_r, &a));
  OK(mmb_allocate_opts(2000, iface, &in_r, &b));
  OK(mmb_allocate_opts(500, iface, &zeroed, &z));
  FAILS(mmb_allocate_opts(10, other, &in_r, &c), MMB_INVALID_ARG);
  cr_assert_eq((uintptr_t)mmb_allocation_ptr(a) % 256, 0);
  for (int k = 0; k < 500; k++) cr_assert_eq(((unsigned char *)mmb_allocation_ptr(z))[k], 0);
  fill_pattern(mmb_allocation_ptr(a), 1000, 1);
  OK(mmb_copy_1d(b, 0, a, 0, 1000));
  cr_assert_eq(memcmp(mmb_allocation_ptr(a), mmb_allocation_ptr(b), 1000), 0);
  OK(mmb_free(b));
  FAILS(mmb_free(b), MMB_INVALID_ARG);
  OK(mmb_region_reset(r));   /* retires a and z */
  cr_assert_null(mmb_allocation_ptr(a));
  FAILS(mmb_free(a), MMB_INVALID_ARG);
  FAILS(mmb_copy(a, z), MMB_INVALID_ARG);
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 64 * KiB, "the region's one block is what counts");
  OK(mmb_region_destroy(r));
  OK(mmb_interface_destroy(iface));
  OK(mmb_interface_destroy(other));
}

MMB_TEST(region, a_thread_safe_pool_serves_regions) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface;
  mmbMemInterfaceConfig cfg = {.strategy = MMB_STRATEGY_POOL, .flags = MMB_INTERFACE_THREAD_SAFE};
  OK(mmb_request_interface(dram, &cfg, &iface));
  mmbRegion *r = region_of(iface, 128 * KiB);
  for (int i = 0; i < 100; i++) memset(ralloc(r, 10 * KiB, 0), i, 10 * KiB);
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.n_provider_allocs, 1, "one 2 MiB pool segment holds every block");
  OK(mmb_region_destroy(r));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(region, finalize_releases_a_forgotten_region) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *r = region_of(iface, 0), *child;
  ralloc(r, 100, 0);
  OK(mmb_region_push(r, &child));
  ralloc(child, 2 * MiB, 0);
  /* no destroy: finalize (in the fixture) must release it all, and LSan agrees */
}

#ifdef __SANITIZE_ADDRESS__
static void use_after_reset(void) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *r;
  void *p;
  if (mmb_region_create(iface, NULL, &r) != MMB_OK || mmb_region_alloc(r, 64, 0, &p) != MMB_OK)
    _exit(0);
  if (mmb_region_reset(r) != MMB_OK) _exit(0);
  ((volatile char *)p)[3] = 1;
}
#endif

MMB_TEST(region, asan_reports_a_use_after_reset) {
#ifdef __SANITIZE_ADDRESS__
  cr_assert(asan_reports(use_after_reset, "use-after-poison"));
#else
  cr_skip_test("poisoning is checked under make test SANITIZE=1");
#endif
}
