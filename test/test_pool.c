/* The pool strategy: reuse, size classes, slabs, split and coalesce against
   a reference model, release threshold and trim, exact stats, limits, thread
   caches, and ASan poisoning of freed blocks. */
#include "common.h"

#include "poison_child.h"
#include "alloc/strategy/pool.h"   /* the slab classes */

#include <pthread.h>
#include <sys/mman.h>

#define MiB ((size_t)1 << 20)

static mmbMemInterface *pool_on(mmbMemSpace *space, mmbProviderType provider, unsigned flags,
                                size_t threshold) {
  mmbMemInterfaceConfig cfg = {.provider = provider, .strategy = MMB_STRATEGY_POOL,
                               .flags = flags, .release_threshold = threshold};
  mmbMemInterface *iface;
  OK(mmb_request_interface(space, &cfg, &iface));
  return iface;
}

static mmbMemInterface *pool_interface(unsigned flags, size_t threshold) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  return pool_on(dram, MMB_PROVIDER_SYSTEM, flags, threshold);
}

static mmbStats stats_of(mmbMemInterface *iface) {
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  return st;
}

MMB_TEST(pool, bad_input_is_refused) {
  mmbMemInterface *iface = pool_interface(0, 0);
  mmbAllocation *a = NULL;
  FAILS(mmb_allocate(0, iface, &a), MMB_INVALID_ARG);
  FAILS(mmb_allocate(SIZE_MAX, iface, &a), MMB_OVERFLOW);
  FAILS(mmb_allocate((size_t)PTRDIFF_MAX + 1, iface, &a), MMB_OVERFLOW);
  FAILS(mmb_allocate_opts(64, iface, &(mmbAllocateOptions){.alignment = 48}, &a), MMB_INVALID_ARG);
  cr_assert_null(a);
  /* more than the machine: refused, counted, and the pool is unchanged */
  FAILS(mmb_allocate((size_t)1 << 50, iface, &a), MMB_OUT_OF_MEMORY);
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.n_failed, 1);
  cr_assert_eq(st.reserved_current, 0);
  OK(mmb_allocate(100, iface, &a));
  OK(mmb_free(a));
  FAILS(mmb_free(a), MMB_INVALID_ARG);   /* parked in the pool's cache: still caught */
  cr_assert_null(mmb_allocation_ptr(a));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(pool, a_freed_block_is_reused_without_a_provider_trip) {
  mmbMemInterface *iface = pool_interface(0, 0);
  size_t sizes[] = {1, 100, 512, 513, 4000, 32 << 10, (32 << 10) + 1, 300 << 10, MiB,
                    MiB + 1, 5 * MiB, 12 * MiB};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    mmbAllocation *a, *b;
    OK(mmb_allocate(sizes[i], iface, &a));
    void *p = mmb_allocation_ptr(a);
    memset(p, 0x5a, sizes[i]);
    OK(mmb_free(a));
    unsigned long long trips = stats_of(iface).n_provider_allocs;
    for (int k = 0; k < 50; k++) {
      OK(mmb_allocate(sizes[i], iface, &b));
      cr_assert_eq(mmb_allocation_ptr(b), p, "size %zu: the freed block comes back", sizes[i]);
      cr_assert_eq(mmb_allocation_size(b), sizes[i]);
      OK(mmb_free(b));
    }
    cr_assert_eq(stats_of(iface).n_provider_allocs, trips, "size %zu", sizes[i]);
  }
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_allocs, st.n_frees);
  OK(mmb_interface_trim(iface, 0));
  st = stats_of(iface);
  cr_assert_eq(st.reserved_current, 0);
  cr_assert_eq(st.n_provider_allocs, st.n_provider_frees);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(pool, small_requests_share_a_2mib_segment_and_large_ones_20mib) {
  mmbMemInterface *iface = pool_interface(0, 0);
  mmbAllocation *small[64], *large[4];
  for (int i = 0; i < 64; i++) OK(mmb_allocate(10000, iface, &small[i]));   /* 20 granules */
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.n_provider_allocs, 1);
  cr_assert_eq(st.reserved_current, 2 * MiB);
  for (int i = 0; i < 4; i++) OK(mmb_allocate(3 * MiB, iface, &large[i]));
  st = stats_of(iface);
  cr_assert_eq(st.n_provider_allocs, 2);
  cr_assert_eq(st.reserved_current, 22 * MiB);
  mmbAllocation *huge;
  OK(mmb_allocate(11 * MiB, iface, &huge));   /* its own segment, rounded to 2 MiB */
  st = stats_of(iface);
  cr_assert_eq(st.n_provider_allocs, 3);
  cr_assert_eq(st.reserved_current, 34 * MiB);
  for (int i = 0; i < 64; i++) OK(mmb_free(small[i]));
  for (int i = 0; i < 4; i++) OK(mmb_free(large[i]));
  OK(mmb_free(huge));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(pool, alignment_of_every_power_of_two) {
  mmbMemInterface *iface = pool_interface(0, 0);
  for (size_t align = 1; align <= 4 * MiB; align <<= 1) {
    mmbAllocation *a, *b;
    OK(mmb_allocate_opts(1000, iface, &(mmbAllocateOptions){.alignment = align}, &a));
    OK(mmb_allocate_opts(3 * MiB, iface, &(mmbAllocateOptions){.alignment = align}, &b));
    cr_assert_eq((uintptr_t)mmb_allocation_ptr(a) % align, 0, "alignment %zu", align);
    cr_assert_eq((uintptr_t)mmb_allocation_ptr(b) % align, 0, "alignment %zu", align);
    memset(mmb_allocation_ptr(a), 1, 1000);
    memset(mmb_allocation_ptr(b), 2, 3 * MiB);
    OK(mmb_free(a));
    OK(mmb_free(b));
  }
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 0);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(pool, zeroing_covers_a_reused_block) {
  mmbMemInterface *iface = pool_interface(0, 0);
  size_t sizes[] = {700, 40000, 3 * MiB};
  for (int i = 0; i < 3; i++) {
    mmbAllocation *a;
    OK(mmb_allocate(sizes[i], iface, &a));
    memset(mmb_allocation_ptr(a), 0xff, sizes[i]);
    OK(mmb_free(a));
    OK(mmb_allocate_opts(sizes[i], iface, &(mmbAllocateOptions){.flags = MMB_ALLOC_ZERO}, &a));
    unsigned char *p = mmb_allocation_ptr(a);
    for (size_t k = 0; k < sizes[i]; k++) cr_assert_eq(p[k], 0, "byte %zu of %zu", k, sizes[i]);
    OK(mmb_free(a));
  }
  OK(mmb_interface_destroy(iface));
}

/* Random allocations and frees, every byte pattern checked, no two live
   blocks overlapping; then, everything freed, a block as large as a whole
   small segment comes out of the coalesced segments with no provider trip. */
typedef struct live {
  mmbAllocation *a;
  unsigned char *p;
  size_t n;
  uint64_t seed;
} live;

static void check_pattern(const live *l) {
  uint64_t s = l->seed;
  for (size_t k = 0; k < l->n; k++)
    cr_assert_eq(l->p[k], (unsigned char)test_rand(&s), "byte %zu of a %zu-byte block", k, l->n);
}

static void check_disjoint(const live *slots, size_t n_slots, const live *l) {
  for (size_t i = 0; i < n_slots; i++) {
    const live *o = &slots[i];
    if (!o->a || o == l) continue;
    cr_assert(l->p + l->n <= o->p || o->p + o->n <= l->p, "blocks overlap");
  }
}

MMB_TEST(pool, split_and_coalesce_against_a_reference_model) {
  mmbMemInterface *iface = pool_interface(0, 0);
  enum { SLOTS = 200, STEPS = 6000 };
  static live slots[SLOTS];
  memset(slots, 0, sizeof slots);
  uint64_t rng = 20261122;
  size_t model_used = 0;
  for (int step = 0; step < STEPS; step++) {
    live *l = &slots[test_rand(&rng) % SLOTS];
    if (l->a) {
      check_pattern(l);
      OK(mmb_free(l->a));
      model_used -= l->n;
      l->a = NULL;
    } else {
      uint64_t r = test_rand(&rng);
      size_t n = r % 16 == 0 ? MiB + r % (6 * MiB) : 1 + r % (64 << 10);
      OK(mmb_allocate(n, iface, &l->a));
      l->p = mmb_allocation_ptr(l->a);
      l->n = n;
      l->seed = test_rand(&rng);
      fill_pattern(l->p, n, l->seed);
      check_disjoint(slots, SLOTS, l);
      model_used += n;
    }
    if (step % 500 == 0) cr_assert_eq(stats_of(iface).used_current, model_used);
  }
  for (int i = 0; i < SLOTS; i++) {
    if (!slots[i].a) continue;
    check_pattern(&slots[i]);
    OK(mmb_free(slots[i].a));
  }
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_allocs, st.n_frees);
  cr_assert_gt(st.n_provider_allocs, 0);
  /* the blocks the quick bins park, and the slabs' spares, go back (keeping
     every segment): then what was freed has coalesced into large blocks */
  OK(mmb_interface_trim(iface, SIZE_MAX));
  cr_assert_eq(stats_of(iface).reserved_current, st.reserved_current, "trim kept the segments");
  mmbAllocation *whole;
  OK(mmb_allocate(MiB, iface, &whole));   /* the largest small request */
  cr_assert_eq(stats_of(iface).n_provider_allocs, st.n_provider_allocs,
               "freed neighbours were coalesced");
  OK(mmb_free(whole));
  OK(mmb_interface_trim(iface, 0));
  st = stats_of(iface);
  cr_assert_eq(st.reserved_current, 0);
  cr_assert_eq(st.n_provider_frees, st.n_provider_allocs);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(pool, release_threshold_and_trim) {
  mmbAllocation *a[10];
  /* default: everything stays cached */
  mmbMemInterface *keep = pool_interface(0, 0);
  for (int i = 0; i < 10; i++) OK(mmb_allocate(3 * MiB, keep, &a[i]));
  cr_assert_eq(stats_of(keep).reserved_current, 40 * MiB);
  for (int i = 0; i < 10; i++) OK(mmb_free(a[i]));
  cr_assert_eq(stats_of(keep).reserved_current, 40 * MiB);
  OK(mmb_interface_trim(keep, 30 * MiB));   /* one segment goes */
  cr_assert_eq(stats_of(keep).reserved_current, 20 * MiB);
  OK(mmb_interface_trim(keep, 0));
  cr_assert_eq(stats_of(keep).reserved_current, 0);
  OK(mmb_interface_destroy(keep));

  /* a threshold: wholly free segments beyond it go back as they empty */
  mmbMemInterface *lean = pool_interface(0, 20 * MiB);
  for (int i = 0; i < 10; i++) OK(mmb_allocate(3 * MiB, lean, &a[i]));
  for (int i = 0; i < 10; i++) OK(mmb_free(a[i]));
  mmbStats st = stats_of(lean);
  cr_assert_eq(st.reserved_current, 20 * MiB);
  cr_assert_eq(st.reserved_high, 40 * MiB);
  cr_assert_eq(st.n_provider_frees, 1);
  /* small blocks parked in the quick bins do not pin memory past it either */
  mmbAllocation *s[300];
  for (int i = 0; i < 300; i++) OK(mmb_allocate(2000 + (size_t)i, lean, &s[i]));
  for (int i = 0; i < 300; i++) OK(mmb_free(s[i]));
  cr_assert_leq(stats_of(lean).reserved_current, 20 * MiB);
  OK(mmb_interface_destroy(lean));
}

MMB_TEST(pool, stats_are_exact_and_reset_high_works) {
  mmbMemInterface *iface = pool_interface(0, 0);
  mmbAllocation *a, *b, *c;
  OK(mmb_allocate(1000, iface, &a));
  OK(mmb_allocate(5000, iface, &b));
  OK(mmb_free(a));
  OK(mmb_allocate(2 * MiB, iface, &c));
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 5000 + 2 * MiB);
  cr_assert_eq(st.used_high, 5000 + 2 * MiB);
  cr_assert_eq(st.n_allocs, 3);
  cr_assert_eq(st.n_frees, 1);
  cr_assert_eq(st.reserved_current, 22 * MiB);
  OK(mmb_free(c));
  st = stats_of(iface);
  cr_assert_eq(st.used_current, 5000);
  cr_assert_eq(st.used_high, 5000 + 2 * MiB);
  OK(mmb_interface_reset_high(iface));
  st = stats_of(iface);
  cr_assert_eq(st.used_high, 5000);
  cr_assert_eq(st.reserved_high, 22 * MiB);
  OK(mmb_interface_trim(iface, 0));
  st = stats_of(iface);
  cr_assert_eq(st.reserved_current, 2 * MiB, "the segment holding b stays");
  OK(mmb_interface_reset_high(iface));
  cr_assert_eq(stats_of(iface).reserved_high, 2 * MiB);
  FAILS(mmb_interface_destroy(iface), MMB_BUSY);
  OK(mmb_free(b));
  mmbMemSpace *dram;
  OK(mmb_interface_get_space(iface, &dram));
  mmbStats sp;
  OK(mmb_space_get_stats(dram, &sp));
  cr_assert_eq(sp.used_current, 0);
  cr_assert_eq(sp.used_high, 5000 + 2 * MiB);
  cr_assert_eq(sp.n_allocs, 3);
  cr_assert_eq(sp.n_frees, 3);
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_get_stats(dram, &sp));
  cr_assert_eq(sp.n_allocs, 3, "a destroyed interface's counts stay with its space");
  cr_assert_eq(sp.reserved_current, 0);
}

MMB_TEST(pool, a_tight_limit_gets_exact_segments_then_a_clean_refusal) {
  mmbMemSpace *limited;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 3 * MiB}, &limited));
  mmbMemInterface *iface = pool_on(limited, MMB_PROVIDER_SYSTEM, 0, 0);
  mmbAllocation *a, *b, *c = NULL;
  OK(mmb_allocate(MiB + 512, iface, &a));     /* 20 MiB refused: exactly what was asked */
  OK(mmb_allocate(1024, iface, &b));          /* 2 MiB refused: one granule pair */
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.reserved_current, MiB + 512 + 1024);
  FAILS(mmb_allocate(2 * MiB, iface, &c), MMB_OUT_OF_MEMORY);
  cr_assert_null(c);
  st = stats_of(iface);
  cr_assert_eq(st.n_failed, 1);
  cr_assert_eq(st.reserved_current, MiB + 512 + 1024);
  OK(mmb_free(a));
  OK(mmb_free(b));
  /* cached segments stand in the way of a bigger one: they are given back */
  OK(mmb_allocate(2 * MiB + 4096, iface, &c));
  OK(mmb_free(c));
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(limited));
}

/* Under a limit, wholly free segments go back to the provider only when
   they and the room left hold the request: then they make way for one
   segment that does; otherwise they stay, and the request is refused. */
MMB_TEST(pool, a_limit_gives_free_segments_back_only_when_that_makes_room) {
  mmbMemSpace *limited;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 4 * MiB}, &limited));
  mmbMemInterface *iface = pool_on(limited, MMB_PROVIDER_SYSTEM, 0, 0);
  mmbAllocation *s[3], *big = NULL;
  for (int i = 0; i < 3; i++) OK(mmb_allocate(MiB, iface, &s[i]));   /* two 2 MiB segments */
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.reserved_current, 4 * MiB);
  cr_assert_eq(st.n_provider_allocs, 2);
  OK(mmb_free(s[0]));
  OK(mmb_free(s[1]));   /* one segment wholly free: 2 MiB, and no room left */
  FAILS(mmb_allocate(3 * MiB, iface, &big), MMB_OUT_OF_MEMORY);
  cr_assert_null(big);
  st = stats_of(iface);
  cr_assert_eq(st.reserved_current, 4 * MiB, "the free segment stays: it could not make room");
  cr_assert_eq(st.n_provider_frees, 0);
  OK(mmb_free(s[2]));   /* both free: 4 MiB */
  OK(mmb_allocate(3 * MiB, iface, &big));
  st = stats_of(iface);
  cr_assert_eq(st.n_provider_frees, 2, "both made way");
  cr_assert_eq(st.n_provider_allocs, 3);
  cr_assert_eq(st.reserved_current, 3 * MiB, "in their place, a segment of its size");
  memset(mmb_allocation_ptr(big), 1, 3 * MiB);
  OK(mmb_free(big));
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(limited));
}

/* Where a 20 MiB segment would take more than an eighth of the space's
   limit, a request over 1 MiB gets a segment of its own size; under a
   larger limit, or none, it shares a 20 MiB one. */
MMB_TEST(pool, a_crowded_limit_gives_a_large_block_a_segment_of_its_size) {
  size_t limits[] = {32 * MiB, 159 * MiB, 160 * MiB, 0};
  size_t want[] = {3 * MiB / 2, 3 * MiB / 2, 20 * MiB, 20 * MiB};
  for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
    mmbMemSpace *space;
    OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = limits[i]}, &space));
    mmbMemInterface *iface = pool_on(space, MMB_PROVIDER_SYSTEM, 0, 0);
    mmbAllocation *a, *b;
    OK(mmb_allocate(3 * MiB / 2, iface, &a));
    cr_assert_eq(stats_of(iface).reserved_current, want[i], "limit %zu", limits[i]);
    OK(mmb_free(a));
    OK(mmb_allocate(3 * MiB / 2, iface, &b));   /* the freed segment serves its size again */
    cr_assert_eq(stats_of(iface).n_provider_allocs, 1, "limit %zu", limits[i]);
    OK(mmb_free(b));
    OK(mmb_interface_destroy(iface));
    OK(mmb_space_release(space));
  }
}

/* Every byte of a block still holds `fill`. */
static bool holds(mmbAllocation *a, size_t n, unsigned char fill) {
  const unsigned char *p = mmb_allocation_ptr(a);
  for (size_t i = 0; i < n; i++)
    if (p[i] != fill) return false;
  return true;
}

/* A tile cache under a limit holds copies of several sizes in turn (weight
   tiles under 1 MiB, then activation chunks over it): the room one size
   class freed serves the other, with no trip to the provider once the
   segments are there, and no two live blocks overlap. */
MMB_TEST(pool, a_limit_serves_both_size_classes_from_the_same_segments) {
  mmbMemSpace *limited;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 8 * MiB}, &limited));
  mmbMemInterface *iface = pool_on(limited, MMB_PROVIDER_SYSTEM, MMB_INTERFACE_THREAD_SAFE, 0);
  enum { SMALL = 9, LARGE = 3, ROUNDS = 6 };
  const size_t small = 692224, large = 1860608;   /* the wide CNN's weight tile, chunk of 16 */
  mmbAllocation *keep;
  OK(mmb_allocate(small, iface, &keep));   /* one weight tile stays throughout */
  memset(mmb_allocation_ptr(keep), 0x5a, small);
  unsigned long long trips = 0;
  for (int round = 0; round < ROUNDS; round++) {
    mmbAllocation *a[SMALL];
    for (int i = 0; i < SMALL; i++) {
      OK(mmb_allocate(small, iface, &a[i]));
      memset(mmb_allocation_ptr(a[i]), i, small);
    }
    for (int i = 0; i < SMALL; i++) {
      cr_assert(holds(a[i], small, (unsigned char)i), "round %d: block %d was overwritten", round, i);
      OK(mmb_free(a[i]));
    }
    mmbAllocation *b[LARGE];
    for (int i = 0; i < LARGE; i++) {
      OK(mmb_allocate(large, iface, &b[i]));
      memset(mmb_allocation_ptr(b[i]), 0x10 + i, large);
    }
    for (int i = 0; i < LARGE; i++) {
      cr_assert(holds(b[i], large, (unsigned char)(0x10 + i)), "round %d: chunk %d was overwritten",
                round, i);
      OK(mmb_free(b[i]));
    }
    mmbStats st = stats_of(iface);
    if (round == 0) trips = st.n_provider_allocs + st.n_provider_frees;
    else cr_assert_eq(st.n_provider_allocs + st.n_provider_frees, trips,
                      "round %d went to the provider", round);
    cr_assert_leq(st.reserved_current, 8 * MiB);
  }
  cr_assert(holds(keep, small, 0x5a), "the block kept throughout was overwritten");
  OK(mmb_free(keep));
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(limited));
}

MMB_TEST(pool, pinned_provider_is_pooled_too) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface = pool_on(dram, MMB_PROVIDER_PINNED, 0, 0);
  mmbAllocation *a;
  for (int i = 0; i < 20; i++) {
    OK(mmb_allocate(64 << 10, iface, &a));
    memset(mmb_allocation_ptr(a), i, 64 << 10);
    OK(mmb_free(a));
  }
  cr_assert_eq(stats_of(iface).n_provider_allocs, 1);
  OK(mmb_interface_destroy(iface));
}

/* A provider whose memory the host must not touch: the pool never does. */
static int dev_allocs;
static mmbError dev_alloc(void *state, size_t size, size_t alignment, unsigned flags, void **out) {
  (void)state;
  (void)flags;
  if (alignment > 256) return MMB_UNSUPPORTED;
  *out = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  dev_allocs++;
  return *out == MAP_FAILED ? MMB_OUT_OF_MEMORY : MMB_OK;
}
static void dev_free(void *state, void *ptr, size_t size, size_t alignment) {
  (void)state;
  (void)alignment;
  munmap(ptr, size);
}
static mmbError dev_copy_2d(void *state, void *dst, size_t dpitch, const void *src, size_t spitch,
                            size_t width, size_t height) {
  return MMB_UNSUPPORTED;
}
static const mmbProviderOps dev_ops = {
    .abi_version = MMB_PROVIDER_ABI_VERSION, .name = "noaccess", .alloc = dev_alloc,
    .free = dev_free, .copy_2d = dev_copy_2d};

/* A pool on the provider above, its allocation count reset. */
static mmbMemInterface *device_like_pool(void) {
  mmbProviderType type;
  OK(mmb_provider_register(&dev_ops, &type));
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  dev_allocs = 0;
  return pool_on(dram, type, 0, 0);
}

MMB_TEST(pool, a_device_like_provider_is_pooled_without_host_access) {
  mmbMemInterface *iface = device_like_pool();
  mmbAllocation *a[8];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 8; i++)
      OK(mmb_allocate_opts(1000 << i, iface, &(mmbAllocateOptions){.alignment = 1024}, &a[i]));
    for (int i = 0; i < 8; i++) OK(mmb_free(a[i]));
  }
  cr_assert_eq(dev_allocs, 1, "one segment, reused (no cudaMalloc in steady state)");
  /* zeroing needs the provider's memset, which this one lacks */
  FAILS(mmb_allocate_opts(100, iface, &(mmbAllocateOptions){.flags = MMB_ALLOC_ZERO}, &a[0]),
        MMB_UNSUPPORTED);
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, 0);
  OK(mmb_interface_destroy(iface));
}

/* ---- thread safety -------------------------------------------------------- */

typedef struct pool_worker {
  mmbMemInterface *iface;
  mmbAllocation *handoff[64];   /* freed by the next worker */
  uint64_t seed;
  int errors;
} pool_worker;

static void *pool_work(void *arg) {
  pool_worker *w = arg;
  mmbAllocation *mine[32] = {0};
  for (int i = 0; i < 20000; i++) {
    int k = (int)(test_rand(&w->seed) % 32);
    if (mine[k]) {
      unsigned char *p = mmb_allocation_ptr(mine[k]);
      if (p[0] != (unsigned char)k) w->errors++;
      if (mmb_free(mine[k]) != MMB_OK) w->errors++;
      mine[k] = NULL;
    } else {
      size_t n = 1 + test_rand(&w->seed) % 9000;
      if (mmb_allocate(n, w->iface, &mine[k]) != MMB_OK) {
        w->errors++;
        continue;
      }
      memset(mmb_allocation_ptr(mine[k]), k, n);
    }
  }
  for (int k = 0; k < 32; k++)
    if (mine[k] && mmb_free(mine[k]) != MMB_OK) w->errors++;
  for (int k = 0; k < 64; k++)
    if (mmb_allocate(100 + (size_t)k, w->iface, &w->handoff[k]) != MMB_OK) w->errors++;
  return NULL;
}

MMB_TEST(pool, thread_safe_interface_from_four_threads_with_cross_thread_frees) {
  mmbMemInterface *iface = pool_interface(MMB_INTERFACE_THREAD_SAFE, 0);
  pool_worker w[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (pool_worker){.iface = iface, .seed = 77 + (uint64_t)i};
    pthread_create(&t[i], NULL, pool_work, &w[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    cr_assert_eq(w[i].errors, 0);
  }
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.n_allocs - st.n_frees, 4 * 64);
  for (int i = 0; i < 4; i++)   /* this thread frees what the workers left */
    for (int k = 0; k < 64; k++) OK(mmb_free(w[i].handoff[k]));
  st = stats_of(iface);
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_allocs, st.n_frees);
  cr_assert_gt(st.used_high, 0);
  OK(mmb_interface_trim(iface, 0));   /* exited threads' caches are flushed too */
  cr_assert_eq(stats_of(iface).reserved_current, 0);
  OK(mmb_interface_destroy(iface));
}

/* Blocks one thread allocates and another frees travel back through the
   depot in batches (thousands of them: every bin overflows many times): the
   next rounds get every block again with no provider trip, no block handed
   out twice (the live ranges never overlap), and exact stats. */
enum { HANDOFF = 20000 };
typedef struct handoff {
  mmbMemInterface *iface;
  mmbAllocation **a;
  int errors;
} handoff;

static void *allocate_all(void *arg) {
  handoff *h = arg;
  uint64_t seed = 5;
  for (int i = 0; i < HANDOFF; i++) {
    size_t n = 64 + test_rand(&seed) % 257;
    if (mmb_allocate(n, h->iface, &h->a[i]) != MMB_OK) {
      h->errors++;
      continue;
    }
    memset(mmb_allocation_ptr(h->a[i]), i & 0xff, n);
  }
  return NULL;
}

static int by_address(const void *x, const void *y) {
  uintptr_t p = (uintptr_t)mmb_allocation_ptr(*(mmbAllocation *const *)x);
  uintptr_t q = (uintptr_t)mmb_allocation_ptr(*(mmbAllocation *const *)y);
  return (p > q) - (p < q);
}

/* With `threads`, a thread-safe pool whose blocks another thread allocates;
   without, one thread's pool, whose overflowing bins use the depot too. */
static void batches_come_back(bool threads) {
  mmbMemInterface *iface = pool_interface(threads ? MMB_INTERFACE_THREAD_SAFE : 0, 0);
  mmbAllocation **a = calloc(HANDOFF, sizeof *a);
  cr_assert_not_null(a);
  handoff h = {iface, a, 0};
  pthread_t t;
  unsigned long long trips = 0;   /* provider trips after the first round */
  for (int round = 0; round < 3; round++) {
    if (threads) {
      pthread_create(&t, NULL, allocate_all, &h);
      pthread_join(t, NULL);
    } else {
      allocate_all(&h);
    }
    cr_assert_eq(h.errors, 0);
    mmbStats st = stats_of(iface);
    cr_assert_eq(st.n_allocs - st.n_frees, HANDOFF);
    if (round > 0) cr_assert_eq(st.n_provider_allocs, trips, "round %d reused nothing", round);
    qsort(a, HANDOFF, sizeof *a, by_address);
    for (int i = 1; i < HANDOFF; i++)
      cr_assert_leq((uintptr_t)mmb_allocation_ptr(a[i - 1]) + mmb_allocation_size(a[i - 1]),
                    (uintptr_t)mmb_allocation_ptr(a[i]), "round %d: two live blocks overlap", round);
    for (int i = 0; i < HANDOFF; i++) OK(mmb_free(a[i]));   /* this thread frees them all */
    st = stats_of(iface);
    cr_assert_eq(st.used_current, 0);
    cr_assert_eq(st.n_allocs, st.n_frees);
    trips = st.n_provider_allocs;
  }
  OK(mmb_interface_trim(iface, 0));   /* the depot's batches go back too */
  cr_assert_eq(stats_of(iface).reserved_current, 0);
  OK(mmb_interface_destroy(iface));
  free(a);
}

MMB_TEST(pool, blocks_freed_by_another_thread_come_back_in_batches) { batches_come_back(true); }
MMB_TEST(pool, one_threads_overflowing_bins_come_back_in_batches) { batches_come_back(false); }

/* A double free is refused on the quick path too: in turn on any pool, and
   when two threads free the same handles at once on a thread-safe pool,
   exactly one of the two frees of each handle succeeds, the stats count it
   once, and no block is handed out twice afterwards. */
enum { RACED = 2000 };
typedef struct racer {
  mmbAllocation **a;
  _Atomic int *arrived;   /* both threads meet before each handle */
  int freed;
} racer;

static void *free_them(void *arg) {
  racer *r = arg;
  for (int i = 0; i < RACED; i++) {
    atomic_fetch_add(r->arrived, 1);
    while (atomic_load(r->arrived) < 2 * (i + 1)) {
    }
    r->freed += mmb_free(r->a[i]) == MMB_OK;
  }
  return NULL;
}

MMB_TEST(pool, double_frees_are_refused_on_the_quick_path_and_in_a_race) {
  for (int ts = 0; ts < 2; ts++) {
    mmbMemInterface *iface = pool_interface(ts ? MMB_INTERFACE_THREAD_SAFE : 0, 0);
    mmbAllocation *a;
    OK(mmb_allocate(100, iface, &a));
    OK(mmb_free(a));
    FAILS(mmb_free(a), MMB_INVALID_ARG);
    mmbStats st = stats_of(iface);
    cr_assert_eq(st.n_frees, 1);
    cr_assert_eq(st.used_current, 0);
    OK(mmb_interface_destroy(iface));
  }
  mmbMemInterface *iface = pool_interface(MMB_INTERFACE_THREAD_SAFE, 0);
  mmbAllocation **a = calloc(RACED, sizeof *a);
  cr_assert_not_null(a);
  for (int i = 0; i < RACED; i++) OK(mmb_allocate(64 + (size_t)i % 200, iface, &a[i]));
  _Atomic int arrived = 0;
  racer r[2] = {{a, &arrived, 0}, {a, &arrived, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, free_them, &r[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  cr_assert_eq(r[0].freed + r[1].freed, RACED, "%d + %d frees succeeded", r[0].freed, r[1].freed);
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.n_frees, RACED);
  cr_assert_eq(st.used_current, 0);
  for (int i = 0; i < RACED; i++) OK(mmb_allocate(64 + (size_t)i % 200, iface, &a[i]));
  qsort(a, RACED, sizeof *a, by_address);
  for (int i = 1; i < RACED; i++)
    cr_assert_leq((uintptr_t)mmb_allocation_ptr(a[i - 1]) + mmb_allocation_size(a[i - 1]),
                  (uintptr_t)mmb_allocation_ptr(a[i]), "a block handed out twice");
  for (int i = 0; i < RACED; i++) OK(mmb_free(a[i]));
  OK(mmb_interface_destroy(iface));
  free(a);
}

/* ---- poisoning ------------------------------------------------------------ */

#ifdef __SANITIZE_ADDRESS__
static void use_after_free_in_pool(void) {
  mmbMemInterface *iface = pool_interface(0, 0);
  mmbAllocation *a;
  if (mmb_allocate(256, iface, &a) != MMB_OK) _exit(0);
  volatile char *p = mmb_allocation_ptr(a);
  if (mmb_free(a) != MMB_OK) _exit(0);
  p[10] = 1;   /* the block is parked in the pool: ASan must see it */
}
#endif

MMB_TEST(pool, asan_reports_a_use_after_free_inside_the_pool) {
#ifdef __SANITIZE_ADDRESS__
  cr_assert(asan_reports(use_after_free_in_pool, "use-after-poison"));
#else
  cr_skip_test("poisoning is checked under make test SANITIZE=1");
#endif
}

MMB_TEST(pool, debug_builds_fill_freed_blocks_with_a_pattern) {
#if MMB_DEBUG && !defined(__SANITIZE_ADDRESS__)
  mmbMemInterface *iface = pool_interface(0, 0);
  mmbAllocation *a;
  OK(mmb_allocate(300, iface, &a));
  unsigned char *p = mmb_allocation_ptr(a);
  memset(p, 0x11, 300);
  OK(mmb_free(a));
  for (int k = 0; k < 300; k++) cr_assert_eq(p[k], 0xDB, "byte %d of a freed block", k);
  mmbRegion *r;
  OK(mmb_region_create(iface, NULL, &r));
  OK(mmb_region_alloc(r, 100, 0, (void **)&p));
  memset(p, 0x22, 100);
  OK(mmb_region_reset(r));
  for (int k = 0; k < 100; k++) cr_assert_eq(p[k], 0xDB, "byte %d after a reset", k);
  OK(mmb_region_destroy(r));
  OK(mmb_interface_destroy(iface));
#else
  cr_skip_test("the pattern is written by DEBUG=1 builds (ASan poisons instead)");
#endif
}

/* Blocks parked in quick bins (the thread's cache of a thread-safe pool, or
   the interface's own) go back before a size-limited space refuses: after
   freeing everything, all of the space can be had again in one block. */
static void parked_blocks_come_back(unsigned flags) {
  mmbMemSpace *limited;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = MiB}, &limited));
  mmbMemInterface *iface = pool_on(limited, MMB_PROVIDER_SYSTEM, flags, 0);
  enum { MAX = 256 };
  mmbAllocation *a[MAX];
  size_t n = 0;
  while (n < MAX && mmb_allocate(16 << 10, iface, &a[n]) == MMB_OK) n++;
  cr_assert(n > 8 && n < MAX, "%zu blocks of 16 KiB in 1 MiB", n);
  for (size_t i = 0; i < n; i++) OK(mmb_free(a[i]));
  mmbAllocation *big;
  OK(mmb_allocate(n * (16 << 10), iface, &big));
  OK(mmb_free(big));
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(limited));
}

MMB_TEST(pool, parked_blocks_come_back_before_a_refusal_thread_caches) {
  parked_blocks_come_back(MMB_INTERFACE_THREAD_SAFE);
}

MMB_TEST(pool, parked_blocks_come_back_before_a_refusal_one_cache) { parked_blocks_come_back(0); }

/* ---- slabs ------------------------------------------------------------------ */

MMB_TEST(pool, slab_classes_are_64_byte_multiples_no_more_than_25_percent_apart) {
  size_t last = 0;
  for (size_t n = 1; n <= SLAB_MAX; n++) {
    size_t c = slab_round(n), cls = slab_class(c);
    cr_assert_geq(c, n);
    cr_assert_eq(c % 64, 0, "%zu bytes: class %zu", n, c);
    cr_assert_lt(cls, SLAB_CLASSES);
    cr_assert_eq(slab_class_size(cls), c);
    cr_assert_eq(quick_bin_of_request(n, 64), cls, "%zu bytes: the table's bin", n);
    if (n > 512) cr_assert_leq(4 * (c - n), n, "%zu bytes in a %zu-byte block", n, c);
    if (c != last) {
      if (last >= 512) cr_assert_leq(c - last, last / 4, "classes %zu and %zu", last, c);
      cr_assert(last == 0 || cls == slab_class(last) + 1);
      last = c;
    }
  }
  cr_assert_eq(last, SLAB_MAX);
}

/* 64-320 B blocks, as bench/alloc's mix: once warm, at most 1.25 bytes held
   per byte asked (a 512 B granule each held 2.7). */
MMB_TEST(pool, small_blocks_hold_at_most_a_quarter_more_than_asked) {
  mmbMemInterface *iface = pool_interface(0, 0);
  enum { N = 100000 };
  static mmbAllocation *a[N];
  uint64_t rng = 1414;
  size_t asked = 0;
  for (int i = 0; i < N; i++) {
    size_t n = 64 + test_rand(&rng) % 257;
    OK(mmb_allocate(n, iface, &a[i]));
    cr_assert_eq((uintptr_t)mmb_allocation_ptr(a[i]) % 64, 0);
    asked += n;
  }
  for (int i = 0; i < N; i += 7) memset(mmb_allocation_ptr(a[i]), i & 0xff, mmb_allocation_size(a[i]));
  mmbStats st = stats_of(iface);
  cr_assert_eq(st.used_current, asked);
  cr_assert_leq((double)st.reserved_current / (double)asked, 1.25, "%zu held for %zu asked",
                st.reserved_current, asked);
  for (int i = 0; i < N; i += 7)
    cr_assert_eq(*(unsigned char *)mmb_allocation_ptr(a[i]), i & 0xff, "block %d kept its bytes", i);
  for (int i = 0; i < N; i++) OK(mmb_free(a[i]));
  FAILS(mmb_free(a[N / 2]), MMB_INVALID_ARG);   /* a slab block freed twice: caught */
  OK(mmb_interface_trim(iface, 0));
  st = stats_of(iface);
  cr_assert_eq(st.reserved_current, 0, "every slab went back, with its segment");
  cr_assert_eq(st.n_provider_frees, st.n_provider_allocs);
  OK(mmb_interface_destroy(iface));
}

/* Past the release threshold a wholly free slab is not kept as a spare. */
MMB_TEST(pool, slabs_respect_the_release_threshold) {
  mmbMemInterface *lean = pool_interface(0, 1);   /* keep nothing */
  static mmbAllocation *a[3000];
  for (int i = 0; i < 3000; i++) OK(mmb_allocate(1000, lean, &a[i]));   /* 47 slabs */
  cr_assert_gt(stats_of(lean).reserved_current, 2 * MiB);
  for (int i = 0; i < 3000; i++) OK(mmb_free(a[i]));
  cr_assert_eq(stats_of(lean).reserved_current, 0, "slabs and segments went as they emptied");
  OK(mmb_interface_destroy(lean));
}

/* A device-like provider: slab records live on the host, so small blocks of
   memory the host cannot touch are pooled too (the provider maps PROT_NONE). */
MMB_TEST(pool, slabs_of_memory_the_host_cannot_touch) {
  mmbMemInterface *iface = device_like_pool();
  enum { N = 3000 };
  static mmbAllocation *a[N];
  static uintptr_t seen[N];
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < N; i++) {
      OK(mmb_allocate(1 + (size_t)i % 700, iface, &a[i]));
      seen[i] = (uintptr_t)mmb_allocation_ptr(a[i]);
    }
    for (int i = 0; i < N; i++)
      for (int j = i + 1; j < N && j < i + 64; j++)
        cr_assert(seen[i] + mmb_allocation_size(a[i]) <= seen[j] ||
                  seen[j] + mmb_allocation_size(a[j]) <= seen[i], "blocks %d and %d overlap", i, j);
    for (int i = 0; i < N; i++) OK(mmb_free(a[i]));
  }
  cr_assert_eq(dev_allocs, 1, "one segment, its slabs reused");
  OK(mmb_interface_destroy(iface));
}
