/* The provider contract: what every host provider mmb ships must do, run
   on each of them (system in DRAM, pinned in DRAM, file in STORAGE) with
   the basic and the pool strategy. Blocks of every size and alignment,
   zeroed on request; copies both ways with a DRAM block, flat and 2-D, at
   offsets; bare pointers; regions; arrays and tiles moved to DRAM and
   back; async copies and free_async; a space's limit; and the counters
   back to zero after it all. A provider that breaks one breaks the test
   named for it, whatever the provider. */
#include "arrays.h"

typedef struct contract {
  const char *name;
  mmbMemLayer layer;
  mmbProviderType provider;
} contract;

static const contract providers[] = {
    {"system", MMB_DRAM, MMB_PROVIDER_SYSTEM},
    {"pinned", MMB_DRAM, MMB_PROVIDER_PINNED},
    {"file", MMB_STORAGE, MMB_PROVIDER_FILE},
};
#define N_PROVIDERS (sizeof providers / sizeof *providers)
static const mmbStrategyType strategies[] = {MMB_STRATEGY_BASIC, MMB_STRATEGY_POOL};

typedef struct under_test {
  const contract *c;
  mmbStrategyType strategy;
  mmbMemSpace *space, *dram;
  mmbMemInterface *iface, *host;
} under_test;

static under_test open_one(const contract *c, mmbStrategyType strategy, size_t limit) {
  under_test u = {.c = c, .strategy = strategy};
  OK(mmb_request_space(c->layer, MMB_CPU,
                       limit ? &(mmbMemSpaceConfig){.size_limit = limit} : NULL, &u.space));
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &u.dram));
  OK(mmb_request_interface(u.space, &(mmbMemInterfaceConfig){.provider = c->provider,
                                                               .strategy = strategy}, &u.iface));
  OK(mmb_request_interface(u.dram, NULL, &u.host));
  return u;
}

/* Everything given back: nothing used, and once trimmed nothing held from
   the provider (the space itself may be DRAM, shared with mmb's own). */
static void close_one(under_test *u) {
  mmbStats st;
  OK(mmb_interface_get_stats(u->iface, &st));
  cr_assert_eq(st.used_current, 0, "%s: %zu bytes still used", u->c->name, (size_t)st.used_current);
  OK(mmb_interface_trim(u->iface, 0));
  OK(mmb_interface_get_stats(u->iface, &st));
  cr_assert_eq(st.reserved_current, 0, "%s: the provider keeps %zu bytes", u->c->name,
               (size_t)st.reserved_current);
  OK(mmb_interface_destroy(u->iface));
  OK(mmb_interface_destroy(u->host));
  OK(mmb_space_release(u->space));
  OK(mmb_space_release(u->dram));
}

#define EACH(u, limit)                                                            \
  for (size_t p_ = 0; p_ < N_PROVIDERS; p_++)                                     \
    for (size_t s_ = 0; s_ < 2; s_++)                                             \
      for (under_test u = open_one(&providers[p_], strategies[s_], limit), *once_ = &u; once_; \
           close_one(&u), once_ = NULL)

MMB_TEST(contract, blocks_of_every_size_and_alignment_zeroed_on_request) {
  size_t sizes[] = {1, 63, 4095, 4096, 65536, 100000, 3u << 20};
  size_t aligns[] = {0, 64, 4096, 1u << 16, 2u << 20};
  EACH(u, 0) {
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
      for (size_t j = 0; j < sizeof aligns / sizeof *aligns; j++) {
        mmbAllocation *a;
        OK(mmb_allocate_opts(sizes[i], u.iface, &(mmbAllocateOptions){.alignment = aligns[j],
                                                                     .flags = MMB_ALLOC_ZERO}, &a));
        unsigned char *p = mmb_allocation_ptr(a);
        cr_assert_not_null(p, "%s", u.c->name);
        if (aligns[j]) cr_assert_eq((uintptr_t)p % aligns[j], 0, "%s: alignment %zu", u.c->name, aligns[j]);
        for (size_t k = 0; k < sizes[i]; k += 511) cr_assert_eq(p[k], 0, "%s: not zeroed", u.c->name);
        memset(p, (int)(i + j), sizes[i]);
        cr_assert_eq(p[sizes[i] - 1], (unsigned char)(i + j));
        cr_assert_eq(mmb_allocation_size(a), sizes[i]);
        mmbMemSpace *where;
        OK(mmb_allocation_space(a, &where));
        cr_assert_eq(where, u.space, "%s", u.c->name);
        OK(mmb_free(a));
      }
  }
}

MMB_TEST(contract, copies_both_ways_flat_and_2d) {
  EACH(u, 0) {
    mmbAllocation *mine, *host;
    OK(mmb_allocate(1u << 16, u.iface, &mine));
    OK(mmb_allocate(1u << 16, u.host, &host));
    unsigned char *h = mmb_allocation_ptr(host), *m = mmb_allocation_ptr(mine);
    for (size_t i = 0; i < (1u << 16); i++) h[i] = (unsigned char)(i * 7);
    OK(mmb_copy_1d(mine, 100, host, 200, 5000));
    for (size_t i = 0; i < 5000; i++) cr_assert_eq(m[100 + i], (unsigned char)((200 + i) * 7));
    memset(h, 0, 1u << 16);
    /* 30 rows of 40 bytes: from pitch 256 at (3, 2) to pitch 128 at (5, 1) */
    OK(mmb_copy_2d(host, 5, 1, 128, mine, 3, 2, 256, 40, 30));
    for (size_t r = 0; r < 30; r++)
      for (size_t x = 0; x < 40; x++)
        cr_assert_eq(h[(1 + r) * 128 + 5 + x], m[(2 + r) * 256 + 3 + x], "%s: row %zu", u.c->name, r);
    OK(mmb_free(mine));
    OK(mmb_free(host));
  }
}

MMB_TEST(contract, bare_pointers_and_regions) {
  EACH(u, 0) {
    void *p[3];
    size_t n[3] = {24, 300, 70000};
    for (int i = 0; i < 3; i++) {
      OK(mmb_ptr_allocate(n[i], u.iface, &p[i]));
      memset(p[i], i + 1, n[i]);
    }
    for (int i = 0; i < 3; i++) {
      cr_assert_eq(((unsigned char *)p[i])[n[i] - 1], i + 1, "%s", u.c->name);
      OK(mmb_ptr_deallocate(p[i], u.iface));
    }
    mmbRegion *r;
    OK(mmb_region_create(u.iface, NULL, &r));
    for (int round = 0; round < 2; round++) {
      void *q[8];
      for (int i = 0; i < 8; i++) {
        OK(mmb_region_alloc(r, 10000, 64, &q[i]));
        memset(q[i], i, 10000);
      }
      for (int i = 0; i < 8; i++) cr_assert_eq(((unsigned char *)q[i])[9999], i);
      OK(mmb_region_reset(r));
    }
    OK(mmb_region_destroy(r));
  }
}

MMB_TEST(contract, arrays_and_tiles_move_to_dram_and_back) {
  EACH(u, 0) {
    mmbDimensions d = dims2(48, 40);
    mmbArray *a = test_array(u.iface, &d, MMB_ROWMAJOR, 0);
    double *home = mmb_array_ptr(a);
    for (size_t i = 0; i < 48 * 40; i++) home[i] = (double)i;
    OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 16}}));   /* edge tiles 16 x 8 */
    mmbArrayTile *t, *dup;
    OK(mmb_tile_at(a, &(mmbIndex){2, {2, 2}}, &t));
    OK(mmb_tile_duplicate(t, u.dram, MMB_READ_WRITE, NULL, &dup));
    cr_assert_eq(dup->space, u.dram, "%s", u.c->name);
    cr_assert_eq(MMB_TILE_AT_2D(dup, double, 40, 39), 40.0 * 40 + 39, "%s", u.c->name);
    MMB_TILE_AT_2D(dup, double, 40, 39) = -1.0;
    OK(mmb_tile_merge(dup, MMB_MERGE_OVERWRITE));
    cr_assert_eq(home[40 * 40 + 39], -1.0, "%s", u.c->name);
    OK(mmb_tile_migrate(t, u.dram, MMB_READ_WRITE, NULL));
    MMB_TILE_AT_2D(t, double, 32, 32) = -2.0;
    OK(mmb_tile_migrate(t, u.space, MMB_READ_WRITE, NULL));
    cr_assert_eq(home[32 * 40 + 32], -2.0, "%s", u.c->name);
    OK(mmb_array_destroy(a));
  }
}

MMB_TEST(contract, async_copies_and_free_async) {
  mmbQueue *q;
  OK(mmb_queue_create(NULL, &q));
  EACH(u, 0) {
    mmbAllocation *mine, *host;
    OK(mmb_allocate(1u << 20, u.iface, &mine));
    OK(mmb_allocate(1u << 20, u.host, &host));
    memset(mmb_allocation_ptr(host), 9, 1u << 20);
    mmbRequest r = {0};
    OK(mmb_copy_async(mine, host, q, &r));
    OK(mmb_free_async(host, q));   /* after the copy has read it */
    OK(mmb_wait(&r));
    cr_assert_eq(((unsigned char *)mmb_allocation_ptr(mine))[(1u << 20) - 1], 9, "%s", u.c->name);
    OK(mmb_queue_synchronize(q));
    OK(mmb_free(mine));
  }
  OK(mmb_queue_destroy(NULL, &q));
}

MMB_TEST(contract, a_limit_refuses_and_changes_nothing) {
  EACH(u, 4u << 20) {
    mmbAllocation *a, *b = NULL;
    OK(mmb_allocate(3u << 20, u.iface, &a));
    FAILS(mmb_allocate(2u << 20, u.iface, &b), MMB_OUT_OF_MEMORY);
    cr_assert_null(b);
    mmbStats st;
    OK(mmb_interface_get_stats(u.iface, &st));
    cr_assert_eq(st.used_current, 3u << 20, "%s", u.c->name);
    OK(mmb_free(a));
    OK(mmb_allocate(2u << 20, u.iface, &b));   /* room again */
    OK(mmb_free(b));
  }
}
