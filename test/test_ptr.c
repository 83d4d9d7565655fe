/* mmb_ptr_allocate / mmb_ptr_deallocate: malloc-style blocks, bare pointers in and
   out. Misuse of every kind refused, a randomized run against a reference
   model (contents, exact stats), the pool's duties (reuse without provider
   trips, trim, release threshold, interface destroy while blocks live,
   memory the host cannot touch), thread caches with cross-thread and
   racing frees, and ASan poisoning of freed blocks. */
#include "common.h"

#include "poison_child.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

static mmbMemInterface *interface_with(mmbStrategyType strategy, unsigned flags,
                                       size_t threshold) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterfaceConfig cfg = {.strategy = strategy, .flags = flags,
                               .release_threshold = threshold};
  mmbMemInterface *iface;
  OK(mmb_request_interface(dram, &cfg, &iface));
  return iface;
}

static mmbStats stats_of(mmbMemInterface *iface) {
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  return st;
}

/* ---- misuse ------------------------------------------------------------------ */

/* On an interface of the given strategy and flags, beside a second
   interface (of other_strategy) whose free must refuse the first's blocks. */
static void misuse_is_refused(mmbStrategyType strategy, unsigned flags,
                              mmbStrategyType other_strategy) {
  mmbMemInterface *iface = interface_with(strategy, flags, 0);
  mmbMemInterface *other = interface_with(other_strategy, 0, 0);
  void *p = NULL;
  FAILS(mmb_ptr_allocate(64, NULL, &p), MMB_INVALID_ARG);
  FAILS(mmb_ptr_allocate(64, iface, NULL), MMB_INVALID_ARG);
  FAILS(mmb_ptr_allocate(0, iface, &p), MMB_INVALID_ARG);
  FAILS(mmb_ptr_allocate(SIZE_MAX, iface, &p), MMB_OVERFLOW);
  FAILS(mmb_ptr_allocate(64, (mmbMemInterface *)(void *)&p, &p), MMB_INVALID_ARG);   /* not one */
  cr_assert_null(p);
  FAILS(mmb_ptr_deallocate(NULL, iface), MMB_INVALID_ARG);
  FAILS(mmb_ptr_deallocate(&p, NULL), MMB_INVALID_ARG);
  FAILS(mmb_ptr_deallocate(&p, iface), MMB_INVALID_ARG);   /* never from mmb */

  size_t sizes[] = {1, 100, 2048, 2049, 100000};   /* slab blocks, and blocks with handles */
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t n = sizes[i];
    char *q;
    OK(mmb_ptr_allocate(n, iface, (void **)&q));
    cr_assert_eq((uintptr_t)q % MMB_DEFAULT_ALIGNMENT, 0, "%zu bytes", n);
    memset(q, 0x5a, n);
    FAILS(mmb_ptr_deallocate(q, other), MMB_INVALID_ARG);   /* another interface's */
    if (n > 1) FAILS(mmb_ptr_deallocate(q + 1, iface), MMB_INVALID_ARG);   /* inside the block */
    if (n > 64) FAILS(mmb_ptr_deallocate(q + 64, iface), MMB_INVALID_ARG);
    cr_assert_eq(q[0], 0x5a, "a refused free left the block alone (%zu bytes)", n);
    OK(mmb_ptr_deallocate(q, iface));
    FAILS(mmb_ptr_deallocate(q, iface), MMB_INVALID_ARG);   /* twice */
  }
  /* a handle's pointer is not a bare block */
  mmbAllocation *a;
  OK(mmb_allocate(100, iface, &a));
  FAILS(mmb_ptr_deallocate(mmb_allocation_ptr(a), iface), MMB_INVALID_ARG);
  OK(mmb_free(a));
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_allocs, st.n_frees);
  OK(mmb_interface_destroy(other));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(ptr, misuse_is_refused_on_a_pool) {
  misuse_is_refused(MMB_STRATEGY_POOL, 0, MMB_STRATEGY_POOL);
}

MMB_TEST(ptr, misuse_is_refused_on_a_thread_safe_pool) {
  misuse_is_refused(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE, MMB_STRATEGY_BASIC);
}

MMB_TEST(ptr, misuse_is_refused_on_the_basic_strategy) {
  misuse_is_refused(MMB_STRATEGY_BASIC, 0, MMB_STRATEGY_POOL);
}

/* Options: an alignment beyond 64 (cudaMalloc's 256, a page), zeroed
   bytes; a region is refused, and so is what mmb_allocate_opts refuses. */
MMB_TEST(ptr, options) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, 0, 0);
  void *p = NULL;
  FAILS(mmb_ptr_allocate_opts(64, iface, &(mmbAllocateOptions){.alignment = 48}, &p), MMB_INVALID_ARG);
  FAILS(mmb_ptr_allocate_opts(64, iface, &(mmbAllocateOptions){.alignment = 32}, NULL), MMB_INVALID_ARG);
  FAILS(mmb_ptr_allocate_opts(0, iface, &(mmbAllocateOptions){.alignment = 256}, &p), MMB_INVALID_ARG);
  FAILS(mmb_ptr_allocate_opts(64, iface, &(mmbAllocateOptions){.flags = 0x80}, &p), MMB_INVALID_ARG);
  FAILS(mmb_ptr_allocate_opts(64, NULL, &(mmbAllocateOptions){.alignment = 256}, &p), MMB_INVALID_ARG);
  mmbRegion *r;
  OK(mmb_region_create(iface, NULL, &r));
  FAILS(mmb_ptr_allocate_opts(64, iface, &(mmbAllocateOptions){.region = r}, &p), MMB_INVALID_ARG);
  OK(mmb_region_destroy(r));
  cr_assert_null(p);
  size_t aligns[] = {0, 16, 64, 256, 4096, 1 << 16};
  for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++)
    for (size_t n = 1; n <= 5000; n += 1999) {
      unsigned char *q;
      OK(mmb_ptr_allocate_opts(n, iface, &(mmbAllocateOptions){.alignment = aligns[i],
                                                           .flags = MMB_ALLOC_ZERO}, (void **)&q));
      cr_assert_eq((uintptr_t)q % (aligns[i] ? aligns[i] : 64), 0, "%zu bytes at %zu", n, aligns[i]);
      for (size_t k = 0; k < n; k++) cr_assert_eq(q[k], 0, "byte %zu of %zu zeroed", k, n);
      memset(q, 0xff, n);
      OK(mmb_ptr_deallocate(q, iface));
      FAILS(mmb_ptr_deallocate(q, iface), MMB_INVALID_ARG);
    }
  OK(mmb_ptr_allocate_opts(100, iface, NULL, &p));   /* NULL: defaults */
  OK(mmb_ptr_deallocate(p, iface));
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_allocs, st.n_frees);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(ptr, a_destroyed_interface_is_refused) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, 0, 0);
  void *p, *big;
  OK(mmb_ptr_allocate(100, iface, &p));
  OK(mmb_ptr_allocate(10000, iface, &big));
  FAILS(mmb_interface_destroy(iface), MMB_BUSY);   /* both still live */
  OK(mmb_ptr_deallocate(big, iface));
  FAILS(mmb_interface_destroy(iface), MMB_BUSY);
  OK(mmb_ptr_deallocate(p, iface));
  OK(mmb_interface_destroy(iface));
  FAILS(mmb_ptr_deallocate(p, iface), MMB_INVALID_ARG);
  FAILS(mmb_ptr_allocate(100, iface, &p), MMB_INVALID_ARG);
}

Test(ptr, calls_before_init_are_refused) {
  void *p;
  FAILS(mmb_ptr_allocate(64, NULL, &p), MMB_NOT_INITIALIZED);
  FAILS(mmb_ptr_deallocate(&p, NULL), MMB_NOT_INITIALIZED);
  FAILS(mmb_ptr_deallocate_async(&p, NULL, NULL), MMB_NOT_INITIALIZED);
}

/* Blocks still live at mmb_finalize are given back with their interface
   (the fixture's leak check would see a record left behind). */
MMB_TEST(ptr, blocks_left_at_finalize_are_released) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE, 0);
  void *p;
  for (int i = 0; i < 100; i++) OK(mmb_ptr_allocate(1 + (size_t)i * 97, iface, &p));
}

/* ---- a reference model ----------------------------------------------------------- */

enum { SLOTS = 2048 };
typedef struct model {
  unsigned char *p[SLOTS];
  size_t n[SLOTS];
  uint64_t seed[SLOTS];
} model;

static bool intact(const unsigned char *p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)test_rand(&seed)) return false;
  return true;
}

/* Random allocations and frees, 1 B to 8 KiB and now and then 200 KiB:
   every block keeps its bytes, and the stats are those of the model. */
static void against_a_model(mmbMemInterface *iface) {
  static model m;
  memset(&m, 0, sizeof m);
  uint64_t rng = 20261123;
  size_t used = 0, live = 0;
  unsigned long long allocs = 0, frees = 0;
  for (int step = 0; step < 60000; step++) {
    size_t k = test_rand(&rng) % SLOTS;
    if (m.p[k]) {
      cr_assert(intact(m.p[k], m.n[k], m.seed[k]), "step %d: block %zu lost its bytes", step, k);
      OK(mmb_ptr_deallocate(m.p[k], iface));
      used -= m.n[k];
      live--;
      frees++;
      m.p[k] = NULL;
      continue;
    }
    size_t r = test_rand(&rng) % 100;
    size_t n = r < 90 ? 1 + test_rand(&rng) % 2048 : r < 99 ? 1 + test_rand(&rng) % 8192 : 200000;
    OK(mmb_ptr_allocate(n, iface, (void **)&m.p[k]));
    cr_assert_eq((uintptr_t)m.p[k] % 64, 0);
    m.n[k] = n;
    m.seed[k] = test_rand(&rng);
    fill_pattern(m.p[k], n, m.seed[k]);
    used += n;
    live++;
    allocs++;
    if (step % 5000 == 0) {
      mmbStats st = stats_of(iface);
      cr_assert_eq(st.used_current, used, "step %d", step);
      cr_assert_eq(st.n_allocs - st.n_frees, live, "step %d", step);
    }
  }
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.n_allocs, allocs);
  cr_assert_eq(st.n_frees, frees);
  for (size_t k = 0; k < SLOTS; k++)
    if (m.p[k]) {
      cr_assert(intact(m.p[k], m.n[k], m.seed[k]), "block %zu lost its bytes", k);
      OK(mmb_ptr_deallocate(m.p[k], iface));
    }
  st = stats_of(iface);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_allocs, st.n_frees);
  OK(mmb_interface_trim(iface, 0));
  st = stats_of(iface);
  cr_assert_eq(st.reserved_current, 0, "every slab and segment went back at trim");
  cr_assert_eq(st.n_provider_allocs, st.n_provider_frees);
}

MMB_TEST(ptr, a_pool_against_a_model) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, 0, 0);
  against_a_model(iface);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(ptr, a_thread_safe_pool_against_a_model) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE, 0);
  against_a_model(iface);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(ptr, the_basic_strategy_against_a_model) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_BASIC, 0, 0);
  against_a_model(iface);
  OK(mmb_interface_destroy(iface));
}

/* Blocks with handles, many at once, freed in a random order: the table that
   finds them grows, and keeps finding every one as others leave it. */
MMB_TEST(ptr, many_large_blocks_freed_in_any_order) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, 0, 0);
  enum { N = 3000 };
  static unsigned char *p[N];
  static int order[N];
  for (int i = 0; i < N; i++) {
    OK(mmb_ptr_allocate(2049 + (size_t)i % 3000, iface, (void **)&p[i]));
    p[i][0] = (unsigned char)i;
    order[i] = i;
  }
  uint64_t rng = 77;
  for (int i = N - 1; i > 0; i--) {
    int j = (int)(test_rand(&rng) % (uint64_t)(i + 1)), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (int k = 0; k < N; k++) {
    int i = order[k];
    cr_assert_eq(p[i][0], (unsigned char)i, "block %d kept its byte", i);
    OK(mmb_ptr_deallocate(p[i], iface));
    if (k % 7 == 0) FAILS(mmb_ptr_deallocate(p[i], iface), MMB_INVALID_ARG);
  }
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_allocs, N);
  cr_assert_eq(st.n_frees, N);
  OK(mmb_interface_destroy(iface));
}

/* ---- the pool's duties ------------------------------------------------------------ */

MMB_TEST(ptr, freed_blocks_are_reused_without_a_provider_trip) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, 0, 0);
  enum { N = 5000 };
  static void *p[N];
  for (int i = 0; i < N; i++) OK(mmb_ptr_allocate(64 + (size_t)i % 257, iface, &p[i]));
  for (int i = 0; i < N; i++) OK(mmb_ptr_deallocate(p[i], iface));
  unsigned long long trips = stats_of(iface).n_provider_allocs;
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < N; i++) OK(mmb_ptr_allocate(64 + (size_t)i % 257, iface, &p[i]));
    for (int i = 0; i < N; i++) OK(mmb_ptr_deallocate(p[i], iface));
  }
  cr_assert_eq(stats_of(iface).n_provider_allocs, trips);
  OK(mmb_interface_destroy(iface));
}

/* 64-320 B blocks, as bench/alloc's mix: at most 1.25 bytes held per byte
   asked, slabs aligned to 64 KiB included. */
MMB_TEST(ptr, small_blocks_hold_at_most_a_quarter_more_than_asked) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, 0, 0);
  enum { N = 100000 };
  static void *p[N];
  uint64_t rng = 1414;
  size_t asked = 0;
  for (int i = 0; i < N; i++) {
    size_t n = 64 + test_rand(&rng) % 257;
    OK(mmb_ptr_allocate(n, iface, &p[i]));
    asked += n;
  }
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, asked);
  cr_assert_leq((double)st.reserved_current / (double)asked, 1.25, "%zu held for %zu asked",
                st.reserved_current, asked);
  for (int i = 0; i < N; i++) OK(mmb_ptr_deallocate(p[i], iface));
  FAILS(mmb_ptr_deallocate(p[N / 2], iface), MMB_INVALID_ARG);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(ptr, slabs_respect_the_release_threshold) {
  mmbMemInterface *lean = interface_with(MMB_STRATEGY_POOL, 0, 1);   /* keep nothing */
  static void *p[3000];
  for (int i = 0; i < 3000; i++) OK(mmb_ptr_allocate(1000, lean, &p[i]));
  cr_assert_gt(stats_of(lean).reserved_current, (size_t)2 << 20);
  for (int i = 0; i < 3000; i++) OK(mmb_ptr_deallocate(p[i], lean));
  cr_assert_eq(stats_of(lean).reserved_current, 0, "slabs and segments went as they emptied");
  OK(mmb_interface_destroy(lean));
}

/* A space too small for a slab: small blocks still come, with handles. */
MMB_TEST(ptr, a_space_with_no_room_for_a_slab_still_serves) {
  mmbMemSpace *tiny;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 32 << 10}, &tiny));
  mmbMemInterface *iface;
  OK(mmb_request_interface(tiny, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL}, &iface));
  void *p[8];
  for (int i = 0; i < 8; i++) OK(mmb_ptr_allocate(1000, iface, &p[i]));
  for (int i = 0; i < 8; i++) OK(mmb_ptr_deallocate(p[i], iface));
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(tiny));
}

/* Memory the host cannot touch: a provider that maps PROT_NONE, so any
   byte the library wrote into a block (a free list, a header) would fault.
   The records live on the host; the slabs come from one segment. */
static int noaccess_allocs;
static mmbError noaccess_alloc(void *state, size_t size, size_t alignment, unsigned flags,
                               void **out) {
  if (alignment > 256) return MMB_UNSUPPORTED;
  *out = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  noaccess_allocs++;
  return *out == MAP_FAILED ? MMB_OUT_OF_MEMORY : MMB_OK;
}
static void noaccess_free(void *state, void *ptr, size_t size, size_t alignment) {
  munmap(ptr, size);
}
static mmbError noaccess_copy_2d(void *state, void *dst, size_t dpitch, const void *src,
                                 size_t spitch, size_t width, size_t height) {
  return MMB_UNSUPPORTED;
}
static const mmbProviderOps noaccess_ops = {
    .abi_version = MMB_PROVIDER_ABI_VERSION, .name = "noaccess", .alloc = noaccess_alloc,
    .free = noaccess_free, .copy_2d = noaccess_copy_2d};

MMB_TEST(ptr, memory_the_host_cannot_touch) {
  mmbProviderType type;
  OK(mmb_provider_register(&noaccess_ops, &type));
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *dev;
  OK(mmb_request_interface(
      dram, &(mmbMemInterfaceConfig){.provider = type, .strategy = MMB_STRATEGY_POOL}, &dev));
  noaccess_allocs = 0;
  enum { N = 3000 };
  static uintptr_t p[N];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++) OK(mmb_ptr_allocate(1 + (size_t)i % 700, dev, (void **)&p[i]));
    for (int i = 0; i + 1 < N; i++)
      cr_assert(p[i] + 1 + (size_t)i % 700 <= p[i + 1] || p[i + 1] + 1 + (size_t)(i + 1) % 700 <= p[i],
                "blocks %d and %d overlap", i, i + 1);
    for (int i = 0; i < N; i++) OK(mmb_ptr_deallocate((void *)p[i], dev));
    FAILS(mmb_ptr_deallocate((void *)p[0], dev), MMB_INVALID_ARG);
  }
  cr_assert_eq(noaccess_allocs, 1, "one segment, its slabs reused");
  OK(mmb_interface_destroy(dev));
}

/* ---- threads ------------------------------------------------------------------------ */

/* One thread allocates, another frees, through a ring: blocks travel back
   in batches; every block arrives with its bytes. */
enum { RING = 256, HANDED = 200000 };
typedef struct ring {
  void *slot[RING];
  _Atomic size_t head, tail;
  mmbMemInterface *iface;
  _Atomic int errors;
} ring;

static void *consume(void *v) {
  ring *r = v;
  for (size_t got = 0; got < HANDED;) {
    size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t == atomic_load_explicit(&r->head, memory_order_acquire)) continue;
    unsigned char *p = r->slot[t % RING];
    if (p[0] != (unsigned char)t || mmb_ptr_deallocate(p, r->iface) != MMB_OK)
      atomic_fetch_add(&r->errors, 1);
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    got++;
  }
  return NULL;
}

MMB_TEST(ptr, blocks_freed_by_another_thread) {
  static ring r;
  r.iface = interface_with(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE, 0);
  atomic_store(&r.head, 0);
  atomic_store(&r.tail, 0);
  atomic_store(&r.errors, 0);
  pthread_t c;
  cr_assert_eq(pthread_create(&c, NULL, consume, &r), 0);
  for (size_t i = 0; i < HANDED; i++) {
    unsigned char *p;
    OK(mmb_ptr_allocate(64 + i % 1000, r.iface, (void **)&p));
    p[0] = (unsigned char)i;
    while (i - atomic_load_explicit(&r.tail, memory_order_acquire) >= RING) {
    }
    r.slot[i % RING] = p;
    atomic_store_explicit(&r.head, i + 1, memory_order_release);
  }
  pthread_join(c, NULL);
  cr_assert_eq(atomic_load(&r.errors), 0);
  mmbStats st = stats_of(r.iface);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_allocs, HANDED);
  cr_assert_eq(st.n_frees, HANDED);
  OK(mmb_interface_destroy(r.iface));
}

/* Each thread's cache refills from slabs of its own home: a second thread
   does not take blocks from the slab a first one is using (their frees
   would write the same lines of its asked entries), but it does take a
   slab another home can spare before the pool makes a new one. The first
   thread stays alive (holding its cache) while the second works. */
enum { PER_SLAB = (64 << 10) / 256 };
typedef struct homes {
  mmbMemInterface *iface;
  void *a[3 * PER_SLAB], *b[PER_SLAB];
  size_t na, nb;
  pthread_barrier_t ready, done;
} homes;

static uintptr_t slab_base(const void *p) { return (uintptr_t)p & ~(uintptr_t)0xffff; }

static void *first_thread(void *v) {
  homes *h = v;
  for (size_t i = 0; i < h->na; i++) OK(mmb_ptr_allocate(256, h->iface, &h->a[i]));
  if (h->na > PER_SLAB) {   /* every other block back, to the slabs: partial slabs */
    for (size_t i = 0; i < h->na; i += 2) OK(mmb_ptr_deallocate(h->a[i], h->iface));
    OK(mmb_interface_trim(h->iface, SIZE_MAX));
  }
  pthread_barrier_wait(&h->ready);
  pthread_barrier_wait(&h->done);
  return NULL;
}

static void *second_thread(void *v) {
  homes *h = v;
  for (size_t i = 0; i < h->nb; i++) OK(mmb_ptr_allocate(256, h->iface, &h->b[i]));
  return NULL;
}

/* Runs the first thread's part (na blocks), then the second's (nb). */
static void two_homes(homes *h) {
  pthread_barrier_init(&h->ready, NULL, 2);
  pthread_barrier_init(&h->done, NULL, 2);
  pthread_t a, b;
  cr_assert_eq(pthread_create(&a, NULL, first_thread, h), 0);
  pthread_barrier_wait(&h->ready);
  cr_assert_eq(pthread_create(&b, NULL, second_thread, h), 0);
  pthread_join(b, NULL);
  pthread_barrier_wait(&h->done);
  pthread_join(a, NULL);
  pthread_barrier_destroy(&h->ready);
  pthread_barrier_destroy(&h->done);
}

static void free_homes(homes *h) {
  for (size_t i = h->na > PER_SLAB ? 1 : 0; i < h->na; i += h->na > PER_SLAB ? 2 : 1)
    OK(mmb_ptr_deallocate(h->a[i], h->iface));
  for (size_t i = 0; i < h->nb; i++) OK(mmb_ptr_deallocate(h->b[i], h->iface));
  cr_assert_eq(stats_of(h->iface).used_current, 0);
  OK(mmb_interface_destroy(h->iface));
}

MMB_TEST(ptr, two_threads_refill_from_slabs_of_their_own) {
  static homes h;
  h = (homes){.iface = interface_with(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE, 0),
              .na = 10, .nb = 10};
  two_homes(&h);
  for (size_t i = 0; i < h.nb; i++)
    for (size_t j = 0; j < h.na; j++)
      cr_assert_neq(slab_base(h.b[i]), slab_base(h.a[j]), "a slab the first thread uses");
  free_homes(&h);
}

MMB_TEST(ptr, a_thread_takes_a_slab_another_home_can_spare) {
  static homes h;
  h = (homes){.iface = interface_with(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE, 0),
              .na = 3 * PER_SLAB, .nb = PER_SLAB / 4};
  two_homes(&h);
  for (size_t i = 0; i < h.nb; i++) {
    bool theirs = false;
    for (size_t j = 1; j < h.na; j += 2) theirs |= slab_base(h.b[i]) == slab_base(h.a[j]);
    cr_assert(theirs, "block %zu is not in a slab of the first thread's", i);
  }
  free_homes(&h);
}

/* Two threads free the same blocks at once: each block is freed once, the
   other free refused, and nothing is handed out twice afterwards. */
enum { RACED = 4000 };
typedef struct race {
  mmbMemInterface *iface;
  void **p;
  pthread_barrier_t *go;
  int ok;
} race;

static void *free_all(void *v) {
  race *r = v;
  pthread_barrier_wait(r->go);
  for (int i = 0; i < RACED; i++) r->ok += mmb_ptr_deallocate(r->p[i], r->iface) == MMB_OK;
  return NULL;
}

static int by_address(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return (x > y) - (x < y);
}

MMB_TEST(ptr, racing_double_frees_free_once) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE, 0);
  static void *p[RACED];
  for (int i = 0; i < RACED; i++) OK(mmb_ptr_allocate(128, iface, &p[i]));
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, 2);
  race r[2] = {{iface, p, &go, 0}, {iface, p, &go, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) cr_assert_eq(pthread_create(&t[i], NULL, free_all, &r[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&go);
  cr_assert_eq(r[0].ok + r[1].ok, RACED, "each block freed exactly once");
  cr_assert_eq(stats_of(iface).used_current, 0);
  for (int i = 0; i < RACED; i++) OK(mmb_ptr_allocate(128, iface, &p[i]));
  qsort(p, RACED, sizeof *p, by_address);
  for (int i = 1; i < RACED; i++)
    cr_assert_leq((uintptr_t)p[i - 1] + 128, (uintptr_t)p[i], "a block handed out twice");
  for (int i = 0; i < RACED; i++) OK(mmb_ptr_deallocate(p[i], iface));
  OK(mmb_interface_destroy(iface));
}

/* On a thread-safe pool, every order of two frees of one block is refused
   the second time, whichever threads make them: the thread that allocated
   it, then another; another, then that thread; two others; the same twice. */
typedef struct one_free {
  mmbMemInterface *iface;
  void *p;
  mmbError got;
} one_free;

static void *free_one(void *v) {
  one_free *f = v;
  f->got = mmb_ptr_deallocate(f->p, f->iface);
  return NULL;
}

/* mmb_ptr_deallocate(p, iface) on a thread of its own (which then exits). */
static mmbError free_elsewhere(mmbMemInterface *iface, void *p) {
  one_free f = {iface, p, MMB_OK};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, free_one, &f), 0);
  pthread_join(t, NULL);
  return f.got;
}

MMB_TEST(ptr, double_frees_across_threads_are_refused) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE, 0);
  void *p[4];
  for (int i = 0; i < 4; i++) OK(mmb_ptr_allocate(200, iface, &p[i]));
  OK(mmb_ptr_deallocate(p[0], iface));   /* the owner, then another thread */
  cr_assert_eq(free_elsewhere(iface, p[0]), MMB_INVALID_ARG);
  OK(free_elsewhere(iface, p[1]));   /* another thread, then the owner */
  FAILS(mmb_ptr_deallocate(p[1], iface), MMB_INVALID_ARG);
  OK(free_elsewhere(iface, p[2]));   /* two other threads */
  cr_assert_eq(free_elsewhere(iface, p[2]), MMB_INVALID_ARG);
  OK(mmb_ptr_deallocate(p[3], iface));   /* the owner twice */
  FAILS(mmb_ptr_deallocate(p[3], iface), MMB_INVALID_ARG);
  void *theirs = test_ptr_alloc_elsewhere(iface, 200);   /* freed here twice */
  cr_assert_not_null(theirs);
  OK(mmb_ptr_deallocate(theirs, iface));
  FAILS(mmb_ptr_deallocate(theirs, iface), MMB_INVALID_ARG);
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_allocs, 5);
  cr_assert_eq(st.n_frees, 5);
  OK(mmb_interface_trim(iface, 0));
  cr_assert_eq(stats_of(iface).reserved_current, 0, "the blocks other threads freed came back");
  OK(mmb_interface_destroy(iface));
}

/* The thread that allocated the blocks and another free them at once,
   round after round, in the same order (so that they meet block by block):
   each block is freed by exactly one of them, counted once, and never
   handed out twice. */
enum { CONTESTED = 2000, CONTESTS = 20 };
typedef struct contest {
  mmbMemInterface *iface;
  void **p;
  pthread_barrier_t go, done;
  int ok;
} contest;

static void *contest_other(void *v) {
  contest *c = v;
  for (int round = 0; round < CONTESTS; round++) {
    pthread_barrier_wait(&c->go);
    for (int i = 0; i < CONTESTED; i++) c->ok += mmb_ptr_deallocate(c->p[i], c->iface) == MMB_OK;
    pthread_barrier_wait(&c->done);
  }
  return NULL;
}

MMB_TEST(ptr, owner_and_another_thread_freeing_at_once_free_once) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE, 0);
  static void *p[CONTESTED];
  static contest c;
  c = (contest){.iface = iface, .p = p};
  pthread_barrier_init(&c.go, NULL, 2);
  pthread_barrier_init(&c.done, NULL, 2);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, contest_other, &c), 0);
  for (int round = 0; round < CONTESTS; round++) {
    for (int i = 0; i < CONTESTED; i++) OK(mmb_ptr_allocate(128, iface, &p[i]));
    int mine = 0, theirs = c.ok;
    pthread_barrier_wait(&c.go);
    for (int i = 0; i < CONTESTED; i++) mine += mmb_ptr_deallocate(p[i], iface) == MMB_OK;
    pthread_barrier_wait(&c.done);
    cr_assert_eq(mine + c.ok - theirs, CONTESTED, "round %d: each block freed exactly once", round);
    OK(mmb_interface_trim(iface, SIZE_MAX));
    mmbStats st = stats_of(iface);
    cr_assert_eq(st.used_current, 0, "round %d: a block counted freed twice", round);
    cr_assert_eq(st.n_frees, st.n_allocs, "round %d", round);
    /* nothing is handed out twice */
    for (int i = 0; i < CONTESTED; i++) OK(mmb_ptr_allocate(128, iface, &p[i]));
    qsort(p, CONTESTED, sizeof *p, by_address);
    for (int i = 1; i < CONTESTED; i++)
      cr_assert_leq((uintptr_t)p[i - 1] + 128, (uintptr_t)p[i], "a block handed out twice");
    for (int i = 0; i < CONTESTED; i++) OK(mmb_ptr_deallocate(p[i], iface));
  }
  pthread_join(t, NULL);
  pthread_barrier_destroy(&c.go);
  pthread_barrier_destroy(&c.done);
  OK(mmb_interface_destroy(iface));
}

/* More threads than a pool has slab homes (SLAB_HOMES): each thread
   allocates blocks of many classes, then frees its neighbour's (and is
   refused a second time); every count is exact, and after the threads
   have exited a trim gives every byte back. */
enum { CROWD = 10, EACH = 300 };
typedef struct crowd {
  mmbMemInterface *iface;
  void *p[CROWD][EACH];
  pthread_barrier_t allocated;
  _Atomic int errors;
} crowd;
typedef struct crowd_arg {
  crowd *c;
  int me;
} crowd_arg;

static void *crowd_member(void *v) {
  crowd_arg *a = v;
  crowd *c = a->c;
  for (int i = 0; i < EACH; i++) {
    size_t n = 64 + (size_t)(a->me * 131 + i * 17) % 1900;
    if (mmb_ptr_allocate(n, c->iface, &c->p[a->me][i]) != MMB_OK) atomic_fetch_add(&c->errors, 1);
    else memset(c->p[a->me][i], a->me, 64);
  }
  pthread_barrier_wait(&c->allocated);
  int next = (a->me + 1) % CROWD;
  for (int i = 0; i < EACH; i++) {
    unsigned char *q = c->p[next][i];
    if (q[0] != next || mmb_ptr_deallocate(q, c->iface) != MMB_OK ||
        mmb_ptr_deallocate(q, c->iface) != MMB_INVALID_ARG)
      atomic_fetch_add(&c->errors, 1);
  }
  return NULL;
}

MMB_TEST(ptr, ten_threads_free_each_others_blocks) {
  static crowd c;
  c.iface = interface_with(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE, 0);
  atomic_store(&c.errors, 0);
  pthread_barrier_init(&c.allocated, NULL, CROWD);
  pthread_t t[CROWD];
  crowd_arg arg[CROWD];
  for (int i = 0; i < CROWD; i++) {
    arg[i] = (crowd_arg){&c, i};
    cr_assert_eq(pthread_create(&t[i], NULL, crowd_member, &arg[i]), 0);
  }
  for (int i = 0; i < CROWD; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&c.allocated);
  cr_assert_eq(atomic_load(&c.errors), 0);
  mmbStats st = stats_of(c.iface);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_allocs, CROWD * EACH);
  cr_assert_eq(st.n_frees, CROWD * EACH);
  OK(mmb_interface_trim(c.iface, 0));
  cr_assert_eq(stats_of(c.iface).reserved_current, 0, "every block came back");
  OK(mmb_interface_destroy(c.iface));
}

/* ---- poisoning ------------------------------------------------------------------------ */

#ifdef __SANITIZE_ADDRESS__
static void use_after_free_of_a_bare_block(void) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, 0, 0);
  volatile char *p;
  if (mmb_ptr_allocate(256, iface, (void **)&p) != MMB_OK || mmb_ptr_deallocate((void *)p, iface) != MMB_OK)
    _exit(0);
  p[10] = 1;   /* the block is parked in the thread's bin: ASan must see it */
}
#endif

MMB_TEST(ptr, asan_reports_a_use_after_free) {
#ifdef __SANITIZE_ADDRESS__
  cr_assert(asan_reports(use_after_free_of_a_bare_block, "use-after-poison"));
#else
  cr_skip_test("poisoning is checked under make test SANITIZE=1");
#endif
}
