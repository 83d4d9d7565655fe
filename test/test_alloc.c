/* Allocations: edge cases, alignment, zeroing, the registry, stats, the
   pinned provider, interface lifetime, thread safety. */
#include "common.h"

#include <linux/capability.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

MMB_TEST(alloc, bad_arguments) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *a = NULL;
  FAILS(mmb_allocate(0, iface, &a), MMB_INVALID_ARG);
  FAILS(mmb_allocate(16, NULL, &a), MMB_INVALID_ARG);
  FAILS(mmb_allocate(16, iface, NULL), MMB_INVALID_ARG);
  FAILS(mmb_allocate(SIZE_MAX, iface, &a), MMB_OVERFLOW);
  FAILS(mmb_allocate(SIZE_MAX - 8, iface, &a), MMB_OVERFLOW);
  FAILS(mmb_allocate((size_t)PTRDIFF_MAX + 1, iface, &a), MMB_OVERFLOW);
  mmbAllocateOptions bad_align = {.alignment = 24};
  FAILS(mmb_allocate_opts(16, iface, &bad_align, &a), MMB_INVALID_ARG);
  mmbAllocateOptions huge_align = {.alignment = MMB_MAX_ALIGNMENT * 2};
  FAILS(mmb_allocate_opts(16, iface, &huge_align, &a), MMB_INVALID_ARG);
  mmbAllocateOptions bad_flags = {.flags = 0x80};
  FAILS(mmb_allocate_opts(16, iface, &bad_flags, &a), MMB_INVALID_ARG);
  cr_assert_null(a, "out-parameters stay untouched on failure");
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.n_allocs, 0);
  cr_assert_eq(st.reserved_current, 0);
  FAILS(mmb_interface_get_stats(NULL, &st), MMB_INVALID_ARG);
  FAILS(mmb_interface_get_stats(iface, NULL), MMB_INVALID_ARG);
  FAILS(mmb_interface_destroy(NULL), MMB_INVALID_ARG);
  FAILS(mmb_interface_reset_high(NULL), MMB_INVALID_ARG);
  FAILS(mmb_interface_trim(NULL, 0), MMB_INVALID_ARG);
  cr_assert_null(mmb_allocation_ptr(NULL));
  cr_assert_eq(mmb_allocation_size(NULL), 0);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(alloc, bad_interface_configs) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface = NULL;
  mmbMemInterfaceConfig flags = {.flags = 0x100};
  FAILS(mmb_request_interface(dram, &flags, &iface), MMB_INVALID_ARG);
  mmbMemInterfaceConfig strat = {.strategy = (mmbStrategyType)42};
  FAILS(mmb_request_interface(dram, &strat, &iface), MMB_INVALID_ARG);
  mmbMemInterfaceConfig prov = {.provider = (mmbProviderType)12};
  FAILS(mmb_request_interface(dram, &prov, &iface), MMB_INVALID_ARG);
  mmbMemInterfaceConfig user = {.provider = MMB_PROVIDER_USER + 3};
  FAILS(mmb_request_interface(dram, &user, &iface), MMB_INVALID_ARG);
  mmbMemInterfaceConfig cuda = {.provider = MMB_PROVIDER_CUDA};
  mmbError err = mmb_request_interface(dram, &cuda, &iface);
  cr_assert(err == MMB_UNSUPPORTED || err == MMB_UNAVAILABLE, "cuda on DRAM: %s",
            mmb_error_string(err));
  FAILS(mmb_request_interface(NULL, NULL, &iface), MMB_INVALID_ARG);
  FAILS(mmb_request_interface(dram, NULL, NULL), MMB_INVALID_ARG);
  cr_assert_null(iface);
}

MMB_TEST(alloc, alignment_is_honoured) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  size_t sizes[] = {1, 7, 100, 4096, 70000, 3 << 20};
  for (size_t align = 1; align <= ((size_t)1 << 22); align <<= 1) {
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      mmbAllocation *a;
      mmbAllocateOptions o = {.alignment = align};
      OK(mmb_allocate_opts(sizes[i], iface, &o, &a));
      uintptr_t p = (uintptr_t)mmb_allocation_ptr(a);
      cr_assert_eq(p % align, 0, "size %zu align %zu gave %p", sizes[i], align, (void *)p);
      memset((void *)p, 0xab, sizes[i]);   /* every byte is ours (ASan checks) */
      cr_assert_eq(mmb_allocation_size(a), sizes[i]);
      OK(mmb_free(a));
    }
  }
  mmbAllocation *a;
  OK(mmb_allocate(3, iface, &a));
  cr_assert_eq((uintptr_t)mmb_allocation_ptr(a) % MMB_DEFAULT_ALIGNMENT, 0);
  OK(mmb_free(a));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(alloc, zeroed_allocations_read_as_zeros) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  size_t sizes[] = {24, 4000, 1 << 16, 5 << 20};
  for (int round = 0; round < 3; round++) {
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      mmbAllocation *dirty, *a;
      OK(mmb_allocate(sizes[i], iface, &dirty));
      memset(mmb_allocation_ptr(dirty), 0xff, sizes[i]);
      OK(mmb_free(dirty));   /* the C allocator may hand the same bytes back */
      mmbAllocateOptions z = {.flags = MMB_ALLOC_ZERO};
      OK(mmb_allocate_opts(sizes[i], iface, &z, &a));
      const unsigned char *p = mmb_allocation_ptr(a);
      for (size_t k = 0; k < sizes[i]; k++) cr_assert_eq(p[k], 0, "byte %zu of %zu", k, sizes[i]);
      OK(mmb_free(a));
    }
  }
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(alloc, registry_catches_double_and_foreign_frees) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *a, *b;
  OK(mmb_allocate(64, iface, &a));
  OK(mmb_allocate(64, iface, &b));
  OK(mmb_free(a));
  FAILS(mmb_free(a), MMB_INVALID_ARG);
  cr_assert_null(mmb_allocation_ptr(a), "a freed handle has no pointer");
  char not_ours[128];
  FAILS(mmb_free((mmbAllocation *)not_ours), MMB_INVALID_ARG);
  FAILS(mmb_free((mmbAllocation *)((char *)b + 8)), MMB_INVALID_ARG);   /* inside a handle */
  FAILS(mmb_free(NULL), MMB_INVALID_ARG);
  cr_assert_not_null(mmb_allocation_ptr(b), "b survives the bad frees");
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.n_frees, 1);
  cr_assert_eq(st.used_current, 64);
  OK(mmb_free(b));
  FAILS(mmb_free(b), MMB_INVALID_ARG);
  mmbMemInterface *owner;
  FAILS(mmb_allocation_get_interface(b, &owner), MMB_INVALID_ARG);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(alloc, interface_destroy_is_busy_while_allocations_live) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *a;
  OK(mmb_allocate(100, iface, &a));
  FAILS(mmb_interface_destroy(iface), MMB_BUSY);
  cr_assert_not_null(mmb_allocation_ptr(a), "a refused destroy changes nothing");
  mmbMemInterface *owner;
  OK(mmb_allocation_get_interface(a, &owner));
  cr_assert_eq(owner, iface);
  OK(mmb_free(a));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(alloc, stats_are_exact) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *a[10];
  size_t total = 0;
  for (int i = 0; i < 10; i++) {
    OK(mmb_allocate(1000 * (i + 1), iface, &a[i]));
    total += 1000 * (i + 1);
  }
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, total);
  cr_assert_eq(st.used_high, total);
  cr_assert_eq(st.reserved_current, total);
  cr_assert_eq(st.n_allocs, 10);
  cr_assert_eq(st.n_provider_allocs, 10);
  for (int i = 0; i < 5; i++) OK(mmb_free(a[i]));
  OK(mmb_interface_reset_high(iface));
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_high, st.used_current);
  cr_assert_eq(st.reserved_high, st.reserved_current);
  OK(mmb_interface_trim(iface, 0));   /* basic caches nothing: no change */
  for (int i = 5; i < 10; i++) OK(mmb_free(a[i]));
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.n_allocs, st.n_frees);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.reserved_current, 0);
  cr_assert_eq(st.n_provider_frees, 10);
  cr_assert_eq(st.n_failed, 0);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(alloc, thousands_of_handles) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  enum { N = 5000 };
  mmbAllocation **a = malloc(N * sizeof *a);
  for (int i = 0; i < N; i++) {
    OK(mmb_allocate(8 + i % 64, iface, &a[i]));
    *(int *)mmb_allocation_ptr(a[i]) = i;
  }
  for (int i = 0; i < N; i++) cr_assert_eq(*(int *)mmb_allocation_ptr(a[i]), i);
  for (int i = 0; i < N; i += 2) OK(mmb_free(a[i]));
  for (int i = 0; i < N; i += 2) FAILS(mmb_free(a[i]), MMB_INVALID_ARG);
  for (int i = 1; i < N; i += 2) OK(mmb_free(a[i]));
  free(a);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(alloc, finalize_releases_what_is_left) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *a;
  OK(mmb_allocate(1 << 20, iface, &a));
  OK(mmb_allocate(10, iface, &a));
  /* the fixture's finalize frees both and the interface; ASan's leak check
     fails this test otherwise */
}

MMB_TEST(alloc, pinned_memory_is_usable) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_PINNED, 0);
  mmbProviderType type;
  OK(mmb_interface_get_provider(iface, &type));
  cr_assert_eq(type, MMB_PROVIDER_PINNED);
  mmbAllocation *a, *b;
  mmbAllocateOptions big_align = {.alignment = 1 << 16, .flags = MMB_ALLOC_ZERO};
  OK(mmb_allocate(100000, iface, &a));
  OK(mmb_allocate_opts(5000, iface, &big_align, &b));
  cr_assert_eq((uintptr_t)mmb_allocation_ptr(b) % (1 << 16), 0);
  for (size_t i = 0; i < 5000; i++) cr_assert_eq(((unsigned char *)mmb_allocation_ptr(b))[i], 0);
  memset(mmb_allocation_ptr(a), 7, 100000);
  OK(mmb_copy_1d(b, 0, a, 50000, 5000));
  cr_assert_eq(((unsigned char *)mmb_allocation_ptr(b))[4999], 7);
  OK(mmb_free(a));
  OK(mmb_free(b));
  OK(mmb_interface_destroy(iface));
}

/* Without CAP_IPC_LOCK, RLIMIT_MEMLOCK bounds mlock even for root. */
static void drop_ipc_lock(void) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  cr_assert_eq(syscall(SYS_capget, &h, d), 0);
  d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
  d[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
  cr_assert_eq(syscall(SYS_capset, &h, d), 0);
}

MMB_TEST(alloc, pinned_reports_an_exhausted_memlock_limit) {
  if (mmb_request_space(MMB_GDRAM, MMB_GPU_CUDA, NULL, &(mmbMemSpace *){0}) == MMB_OK)
    cr_skip_test("with a CUDA device, pinning goes through the driver");
  drop_ipc_lock();
  struct rlimit rl = {64 << 10, 64 << 10};
  cr_assert_eq(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_PINNED, 0);
  mmbAllocation *a = NULL;
  FAILS(mmb_allocate(4 << 20, iface, &a), MMB_OUT_OF_MEMORY);
  cr_assert_null(a);
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.reserved_current, 0);
  cr_assert_eq(st.n_failed, 1);
  OK(mmb_allocate(4096, iface, &a));   /* within the limit: still fine */
  OK(mmb_free(a));
  OK(mmb_interface_destroy(iface));
}

typedef struct worker_arg {
  mmbMemInterface *iface;
  uint64_t seed;
} worker_arg;

static void *worker(void *p) {
  worker_arg *w = p;
  mmbAllocation *live[32] = {0};
  for (int i = 0; i < 4000; i++) {
    int k = (int)(test_rand(&w->seed) % 32);
    if (live[k]) {
      unsigned char *b = mmb_allocation_ptr(live[k]);
      if (b[0] != (unsigned char)k) return (void *)1;
      if (mmb_free(live[k]) != MMB_OK) return (void *)1;
      live[k] = NULL;
    } else {
      if (mmb_allocate(1 + test_rand(&w->seed) % 3000, w->iface, &live[k]) != MMB_OK)
        return (void *)1;
      *(unsigned char *)mmb_allocation_ptr(live[k]) = (unsigned char)k;
    }
  }
  for (int k = 0; k < 32; k++)
    if (live[k] && mmb_free(live[k]) != MMB_OK) return (void *)1;
  return NULL;
}

MMB_TEST(alloc, thread_safe_interface_from_two_threads) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, MMB_INTERFACE_THREAD_SAFE);
  pthread_t t[2];
  worker_arg args[2] = {{iface, 1}, {iface, 2}};
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, &args[i]);
  for (int i = 0; i < 2; i++) {
    void *ret;
    pthread_join(t[i], &ret);
    cr_assert_null(ret, "worker %d saw a corrupted or failed allocation", i);
  }
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.n_allocs, st.n_frees);
  cr_assert_eq(st.used_current, 0);
  OK(mmb_interface_destroy(iface));
}
