/* Fault injection at every allocation site of a full scenario: each site, in
   turn, fails; every call must then return OK or MMB_OUT_OF_MEMORY, leave
   the stats consistent, and leak nothing (ASan's leak check runs at the end
   of each test's process). */
#include "common.h"

#include "fault/fault.h"

#define TOLERATED(call)                                                       \
  do {                                                                        \
    mmbError e_ = (call);                                                     \
    cr_assert(e_ == MMB_OK || e_ == MMB_OUT_OF_MEMORY, "%s: %s", #call,        \
              mmb_error_string(e_));                                          \
  } while (0)

/* A bare block freed after q's work, or now when there is no q or the
   deferred free is refused (the block is then still the caller's). */
static void free_bare(mmbMemInterface *iface, void *p, mmbQueue *q) {
  mmbError e = q ? mmb_ptr_deallocate_async(p, iface, q) : MMB_OUT_OF_MEMORY;
  TOLERATED(e);
  if (e != MMB_OK) OK(mmb_ptr_deallocate(p, iface));
}

static void use_interface(mmbMemInterface *iface) {
  mmbAllocation *a = NULL, *b = NULL, *c = NULL;
  if (mmb_allocate(100, iface, &a) != MMB_OK) a = NULL;
  if (mmb_allocate(200 << 10, iface, &b) != MMB_OK) b = NULL;
  if (mmb_allocate_opts(4096, iface, &(mmbAllocateOptions){.alignment = 1 << 16}, &c) != MMB_OK)
    c = NULL;
  if (a && b) OK(mmb_copy_1d(b, 0, a, 0, 100));
  if (a) OK(mmb_free(a));
  if (b) OK(mmb_free(b));
  if (c) OK(mmb_free(c));
  void *bare[3] = {NULL, NULL, NULL};   /* a slab block, a second, a block with a handle */
  size_t bare_sizes[3] = {300, 300, 5000};
  for (int i = 0; i < 3; i++) {
    mmbError e = mmb_ptr_allocate(bare_sizes[i], iface, &bare[i]);
    TOLERATED(e);
    if (e != MMB_OK) bare[i] = NULL;
  }
  mmbQueue *q = NULL;   /* the first and the last freed after queue work */
  if (mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q) != MMB_OK) q = NULL;
  for (int i = 0; i < 3; i++)
    if (bare[i]) free_bare(iface, bare[i], i != 1 ? q : NULL);
  /* blocks other threads allocated: the first freed now, the second after queue work */
  void *theirs = test_ptr_alloc_elsewhere(iface, 400);
  if (theirs) OK(mmb_ptr_deallocate(theirs, iface));
  if ((theirs = test_ptr_alloc_elsewhere(iface, 400))) free_bare(iface, theirs, q);
  if (q) OK(mmb_queue_destroy(NULL, &q));
  mmbRegion *r = NULL, *child = NULL;
  mmbError err = mmb_region_create(iface, &(mmbRegionOptions){.block_size = 8192}, &r);
  TOLERATED(err);
  if (err == MMB_OK) {
    void *p;
    for (int i = 0; i < 4; i++) TOLERATED(mmb_region_alloc(r, 3000, 0, &p));
    err = mmb_region_push(r, &child);
    TOLERATED(err);
    if (err == MMB_OK) {
      TOLERATED(mmb_region_alloc(child, 100000, 0, &p));   /* a dedicated block */
      TOLERATED(mmb_allocate_opts(64, iface, &(mmbAllocateOptions){.region = child}, &a));
      OK(mmb_region_reset(child));
      OK(mmb_region_destroy(child));
    }
    OK(mmb_region_reset(r));
    OK(mmb_region_destroy(r));
  }
  OK(mmb_interface_trim(iface, 0));
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.reserved_current, 0);
  cr_assert_eq(st.n_allocs, st.n_frees);
}

static void scenario(void) {
  mmbOptions opts = {.log_level = MMB_LOG_OFF};
  mmbError err = mmb_init(&opts);
  TOLERATED(err);
  if (err != MMB_OK) {
    cr_assert_not(mmb_is_initialized());
    return;
  }
  mmbMemSpace *dram, *limited = NULL;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  TOLERATED(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 1 << 24}, &limited));
  mmbProviderType providers[] = {MMB_PROVIDER_SYSTEM, MMB_PROVIDER_PINNED};
  for (size_t p = 0; p < 4; p++) {
    mmbMemInterface *iface = NULL;
    mmbMemInterfaceConfig cfg = {.provider = providers[p % 2],
                                 .strategy = p < 2 ? MMB_STRATEGY_BASIC : MMB_STRATEGY_POOL,
                                 .flags = p % 2 ? MMB_INTERFACE_THREAD_SAFE : 0};
    err = mmb_request_interface(limited ? limited : dram, &cfg, &iface);
    TOLERATED(err);
    if (err != MMB_OK) continue;
    use_interface(iface);
    OK(mmb_interface_destroy(iface));
  }
  if (limited) OK(mmb_space_release(limited));
  mmbMemSpace *disk = NULL;   /* the storage tier's file provider */
  TOLERATED(mmb_request_space(MMB_STORAGE, MMB_CPU, NULL, &disk));
  for (size_t p = 0; disk && p < 2; p++) {
    mmbMemInterface *iface = NULL;
    mmbMemInterfaceConfig cfg = {.strategy = p ? MMB_STRATEGY_POOL : MMB_STRATEGY_BASIC};
    err = mmb_request_interface(disk, &cfg, &iface);
    TOLERATED(err);
    if (err != MMB_OK) continue;
    use_interface(iface);
    OK(mmb_interface_destroy(iface));
  }
  if (disk) OK(mmb_space_release(disk));
  mmbStats st;
  OK(mmb_space_get_stats(dram, &st));
  cr_assert_eq(st.reserved_current, 0);
  OK(mmb_finalize());
}

Test(fault, every_allocation_site_fails_cleanly) {
  unsigned long site = 0;
  for (;; site++) {
    mmb__fault_arm(site, 1);
    scenario();
    if (mmb__fault_failures() == 0) break;   /* the scenario has fewer sites */
  }
  mmb__fault_disarm();
  ASSERT_NO_LEAKS();
  cr_assert_gt(site, 8, "only %lu fault sites were reached", site);
}

Test(fault, bursts_of_failures) {
  for (unsigned long site = 0; site < 40; site++) {
    mmb__fault_arm(site, 3);
    scenario();
  }
  mmb__fault_disarm();
  ASSERT_NO_LEAKS();
}
