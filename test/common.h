/* Shared by the tests: a fixture that initialises mmb, and assertions. */
#ifndef MMB_TEST_COMMON_H
#define MMB_TEST_COMMON_H

#include <criterion/criterion.h>
#include <mmb/mmb.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OK(call) cr_assert_eq((call), MMB_OK, "%s: %s", #call, mmb_error_string(call))
#define FAILS(call, err)                                                                \
  do {                                                                                  \
    mmbError got_ = (call);                                                             \
    cr_assert_eq(got_, (err), "%s returned %s, expected %s", #call, mmb_error_string(got_), \
                 mmb_error_string(err));                                                \
  } while (0)

/* Criterion ignores the exit status LeakSanitizer gives a test's process, so
   the fixtures ask for the leak check themselves. */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#define ASSERT_NO_LEAKS() \
  cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "LeakSanitizer found leaks (above)")
#else
#define ASSERT_NO_LEAKS() ((void)0)
#endif

static inline void mmb_test_setup(void) {
  mmbOptions opts = {.log_level = MMB_LOG_OFF};
  cr_assert_eq(mmb_init(&opts), MMB_OK);
}
static inline void mmb_test_teardown(void) {
  cr_assert_eq(mmb_finalize(), MMB_OK);
  ASSERT_NO_LEAKS();
}

/* A test that runs between mmb_init and mmb_finalize, then checks for leaks.
   (Criterion ignores failures in .init/.fini, so the fixture runs in the body.) */
#define MMB_TEST(suite, name)                         \
  static void suite##_##name##_body(void);            \
  Test(suite, name) {                                 \
    mmb_test_setup();                                 \
    suite##_##name##_body();                          \
    mmb_test_teardown();                              \
  }                                                   \
  static void suite##_##name##_body(void)

/* An interface on the first CPU DRAM space with the given provider. */
static inline mmbMemInterface *test_interface(mmbProviderType provider, unsigned flags) {
  mmbMemSpace *space;
  cr_assert_eq(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &space), MMB_OK);
  mmbMemInterfaceConfig cfg = {.provider = provider, .flags = flags};
  mmbMemInterface *iface;
  cr_assert_eq(mmb_request_interface(space, &cfg, &iface), MMB_OK);
  return iface;
}

/* An interface on the first CUDA device; skips the test where there is none. */
static inline mmbMemInterface *test_cuda_interface(void) {
  mmbMemSpace *gpu;
  if (mmb_request_space(MMB_GDRAM, MMB_GPU_CUDA, NULL, &gpu) != MMB_OK)
    cr_skip_test("no CUDA device on this node");
  mmbMemInterface *iface;
  cr_assert_eq(mmb_request_interface(gpu, NULL, &iface), MMB_OK);
  return iface;
}

/* Work calling back into its own queue: destroy, synchronize, finalize,
   and (once `later` is submitted behind it) wait for that request. */
typedef struct test_own_work {
  mmbQueue *q;
  mmbError destroyed, synchronized, finalized, waited;
  mmbRequest *later;
  atomic_int later_submitted;
} test_own_work;

static inline void test_call_back_into_the_queue(void *arg) {
  test_own_work *w = arg;
  mmbQueue *q = w->q;
  w->destroyed = mmb_queue_destroy(NULL, &q);
  w->synchronized = mmb_queue_synchronize(w->q);
  if (w->later) {
    while (!atomic_load(&w->later_submitted)) sched_yield();
    w->waited = mmb_wait(w->later);
  }
  w->finalized = mmb_finalize();
}

static inline void test_nothing(void *arg) { (void)arg; }

/* From work on q, destroying or synchronising q or finalizing mmb is
   refused and q goes on; after a nested mmb_init, the work's finalize only
   counts down. Destroys q. */
static inline void assert_own_work_is_refused(mmbQueue *q) {
  mmbRequest req = {0}, later = {0};
  test_own_work w = {.q = q, .destroyed = MMB_OK, .synchronized = MMB_OK, .finalized = MMB_OK,
                     .waited = MMB_OK, .later = &later};
  OK(mmb_queue_submit(q, test_call_back_into_the_queue, &w, &req));
  OK(mmb_queue_submit(q, test_nothing, NULL, &later));   /* behind the work */
  atomic_store(&w.later_submitted, 1);
  OK(mmb_wait(&req));
  FAILS(w.destroyed, MMB_INVALID_STATE);
  FAILS(w.synchronized, MMB_INVALID_STATE);
  FAILS(w.waited, MMB_INVALID_STATE);
  FAILS(w.finalized, MMB_INVALID_STATE);
  OK(mmb_wait(&later));   /* still the caller's, and done after the work */
  w.later = NULL;
  cr_assert(mmb_is_initialized());
  OK(mmb_init(NULL));   /* nested: the work's finalize counts it down */
  OK(mmb_queue_submit(q, test_call_back_into_the_queue, &w, &req));
  OK(mmb_wait(&req));
  OK(w.finalized);
  cr_assert(mmb_is_initialized());
  OK(mmb_queue_synchronize(q));   /* from another thread: as always */
  OK(mmb_queue_destroy(NULL, &q));
}

/* splitmix64: the fixed-seed generator of the randomized tests. */
static inline uint64_t test_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline void fill_pattern(void *p, size_t n, uint64_t seed) {
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)test_rand(&seed);
}

/* mmb_ptr_allocate of n bytes on a thread of its own, which then exits (its
   thread cache, on a thread-safe pool, is given up): the block, or NULL
   when the allocation or the thread was refused. */
typedef struct test_elsewhere {
  mmbMemInterface *iface;
  size_t n;
  void *p;
} test_elsewhere;

static inline void *test_elsewhere_body(void *v) {
  test_elsewhere *e = v;
  if (mmb_ptr_allocate(e->n, e->iface, &e->p) != MMB_OK) e->p = NULL;
  return NULL;
}

static inline void *test_ptr_alloc_elsewhere(mmbMemInterface *iface, size_t n) {
  test_elsewhere e = {iface, n, NULL};
  pthread_t t;
  if (pthread_create(&t, NULL, test_elsewhere_body, &e) != 0) return NULL;
  pthread_join(t, NULL);
  return e.p;
}

#endif
