/* The tile cache (mmb/cache.h): hits and misses, write-back exactly once,
   flush and evict, pinned copies never move, advice changes the victim,
   prefetch, misuse refused, two threads at once, and a randomized run
   against a reference model of the cache (what is cached, pinned and
   dirty, the victims, every byte written home once). */
#include "arrays.h"
#include "fake_device.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 64      /* an N x N array of doubles */
#define T 16      /* in T x T tiles: 16 tiles of 2 KiB */
#define TILE_BYTES (T * T * sizeof(double))
#define TILES ((N / T) * (N / T))

static mmbMemSpace *fast_space(void) {
  mmbMemSpace *s;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 8 << 20,
                                                                .name = "fast"}, &s));
  return s;
}

static mmbArray *tiled_array(mmbMemInterface *iface, double salt) {
  mmbDimensions d = dims2(N, N);
  mmbArray *a = test_array(iface, &d, MMB_ROWMAJOR, 0);
  double *p = mmb_array_ptr(a);
  for (size_t i = 0; i < N * N; i++) p[i] = salt + (double)i;
  OK(mmb_array_tile(a, &(mmbDimensions){2, {T, T}}));
  return a;
}

static mmbArrayTile *tile(mmbArray *a, size_t i) {
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {i / (N / T), i % (N / T)}}, &t));
  return t;
}

static double first(const mmbArrayTile *t) {
  return MMB_TILE_AT_2D(t, double, t->lower[0], t->lower[1]);
}

static mmbCacheStats stats(mmbMemSpace *s) {
  mmbCacheStats st;
  OK(mmb_space_get_cache_stats(s, &st));
  return st;
}

static void budget_tiles(mmbMemSpace *s, size_t n) {
  OK(mmb_space_set_cache(s, &(mmbCacheConfig){.budget_bytes = n * TILE_BYTES, .clean_share = 0}));
}

MMB_TEST(cache, a_second_acquire_hits_and_the_data_is_the_tiles) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  mmbArrayTile *t = tile(a, 5), *l1, *l2;
  OK(mmb_tile_acquire(t, fast, MMB_READ, &l1));
  cr_assert_eq(l1->space, fast);
  cr_assert_neq(l1->ptr, t->ptr);
  cr_assert_eq(first(l1), first(t));
  for (size_t i = t->lower[0]; i < t->upper[0]; i++)
    for (size_t j = t->lower[1]; j < t->upper[1]; j++)
      cr_assert_eq(MMB_TILE_AT_2D(l1, double, i, j), (double)(i * N + j));
  OK(mmb_tile_release(l1));
  OK(mmb_tile_acquire(t, fast, MMB_READ, &l2));
  cr_assert_eq(l2, l1, "the copy stays cached");
  OK(mmb_tile_release(l2));
  mmbCacheStats st = stats(fast);
  cr_assert(st.hits == 1 && st.misses == 1 && st.fetched_bytes == TILE_BYTES);
  cr_assert(st.used_bytes == TILE_BYTES && st.pinned_bytes == 0 && st.dirty_bytes == 0);
  OK(mmb_array_destroy(a));   /* its cached copy goes with it */
  cr_assert_eq(stats(fast).used_bytes, 0);
}

MMB_TEST(cache, a_tile_at_home_is_its_own_local_tile) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemSpace *home;
  OK(mmb_interface_get_space(iface, &home));
  mmbArray *a = tiled_array(iface, 0);
  mmbArrayTile *t = tile(a, 0), *l;
  OK(mmb_tile_acquire(t, home, MMB_READ_WRITE, &l));
  cr_assert_eq(l, t);
  OK(mmb_tile_release(l));
  FAILS(mmb_tile_release(l), MMB_INVALID_ARG);
  cr_assert_eq(stats(home).used_bytes, 0);
  OK(mmb_array_destroy(a));
}

MMB_TEST(cache, a_dirty_copy_is_written_home_once_when_evicted) {
  mmbMemSpace *fast = fast_space();
  budget_tiles(fast, 2);
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  mmbArrayTile *l;
  OK(mmb_tile_acquire(tile(a, 0), fast, MMB_READ_WRITE, &l));
  MMB_TILE_AT_2D(l, double, 0, 0) = -1.0;
  OK(mmb_tile_release(l));
  cr_assert_eq(first(tile(a, 0)), 0.0, "not written home while cached");
  cr_assert_eq(stats(fast).dirty_bytes, TILE_BYTES);
  for (size_t i = 1; i <= 2; i++) {   /* two more tiles: tile 0, least recent, goes */
    OK(mmb_tile_acquire(tile(a, i), fast, MMB_READ, &l));
    OK(mmb_tile_release(l));
  }
  OK(mmb_array_flush(a));   /* waits for the write-back the eviction started */
  cr_assert_eq(first(tile(a, 0)), -1.0, "written home on eviction");
  mmbCacheStats st = stats(fast);
  cr_assert(st.writebacks == 1 && st.writeback_bytes == TILE_BYTES && st.clean_drops == 0);
  for (size_t i = 3; i <= 4; i++) {   /* the clean ones go for free */
    OK(mmb_tile_acquire(tile(a, i), fast, MMB_READ, &l));
    OK(mmb_tile_release(l));
  }
  st = stats(fast);
  cr_assert(st.writebacks == 1 && st.clean_drops == 2, "%llu write-backs, %llu drops",
            (unsigned long long)st.writebacks, (unsigned long long)st.clean_drops);
  OK(mmb_tile_acquire(tile(a, 0), fast, MMB_READ, &l));   /* evicted: fetched again */
  cr_assert_eq(first(l), -1.0);
  OK(mmb_tile_release(l));
  cr_assert_eq(stats(fast).refetches, 1);
  OK(mmb_array_destroy(a));
}

/* mmb_tile_flush writes one tile's dirty copies home and leaves the other
   tiles' dirty; a duplicate or a cached copy is refused. */
MMB_TEST(cache, a_tile_flush_writes_that_tile_home_only) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  mmbArrayTile *l;
  double home2 = first(tile(a, 2));
  for (size_t i = 1; i <= 2; i++) {
    OK(mmb_tile_acquire(tile(a, i), fast, MMB_READ_WRITE, &l));
    MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = -(double)i;
    OK(mmb_tile_release(l));
  }
  OK(mmb_tile_acquire(tile(a, 1), fast, MMB_READ, &l));
  FAILS(mmb_tile_flush(l), MMB_INVALID_ARG);   /* a cached copy: flush its origin */
  OK(mmb_tile_release(l));
  OK(mmb_tile_flush(tile(a, 1)));
  cr_assert_eq(first(tile(a, 1)), -1.0, "written home by its flush");
  cr_assert_eq(first(tile(a, 2)), home2, "the other tile's write stays cached");
  mmbCacheStats st = stats(fast);
  cr_assert(st.writebacks == 1 && st.dirty_bytes == TILE_BYTES, "%llu write-backs, %zu dirty",
            (unsigned long long)st.writebacks, (size_t)st.dirty_bytes);
  OK(mmb_tile_flush(tile(a, 1)));   /* nothing dirty: nothing moves */
  OK(mmb_tile_flush(tile(a, 0)));   /* nothing cached */
  cr_assert_eq(stats(fast).writebacks, 1);
  mmbArrayTile *dup;
  mmbMemSpace *home;
  OK(mmb_interface_get_space(test_interface(MMB_PROVIDER_SYSTEM, 0), &home));
  OK(mmb_tile_duplicate(tile(a, 0), home, MMB_READ, NULL, &dup));
  FAILS(mmb_tile_flush(dup), MMB_INVALID_ARG);
  OK(mmb_tile_discard(dup));
  FAILS(mmb_tile_flush(NULL), MMB_INVALID_ARG);
  OK(mmb_array_flush(a));
  cr_assert_eq(first(tile(a, 2)), -2.0);
  OK(mmb_array_destroy(a));
}

/* A tile cached in two spaces: an acquire in one sees what was written in
   the other (its dirty copy goes home first, and a clean copy here is
   fetched again); at home too, both ways. While one is acquired for
   writing (or the home is), an acquire in the other is MMB_BUSY; while a
   tile is acquired at home, its array is neither destroyed nor re-tiled. */
MMB_TEST(cache, an_acquire_sees_a_write_made_in_another_space) {
  mmbMemSpace *f1 = fast_space(), *f2, *home;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 8 << 20,
                                                                .name = "fast2"}, &f2));
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  OK(mmb_interface_get_space(iface, &home));
  mmbArray *a = tiled_array(iface, 0);
  mmbArrayTile *t = tile(a, 1), *l1, *l2, *h;
  OK(mmb_tile_acquire(t, f2, MMB_READ, &l2));   /* a clean copy in f2 */
  OK(mmb_tile_release(l2));
  OK(mmb_tile_acquire(t, f1, MMB_READ_WRITE, &l1));
  MMB_TILE_AT_2D(l1, double, l1->lower[0], l1->lower[1]) = -7.0;
  FAILS(mmb_tile_acquire(t, f2, MMB_READ, &l2), MMB_BUSY);   /* f1's may still be written */
  OK(mmb_tile_release(l1));   /* dirty in f1 */
  OK(mmb_tile_acquire(t, f2, MMB_READ, &l2));
  cr_assert_eq(first(l2), -7.0, "f2's copy was fetched again after f1's write went home");
  OK(mmb_tile_release(l2));
  OK(mmb_tile_acquire(t, f2, MMB_READ_WRITE, &l2));
  MMB_TILE_AT_2D(l2, double, l2->lower[0], l2->lower[1]) = -8.0;
  OK(mmb_tile_release(l2));   /* dirty in f2 */
  OK(mmb_tile_acquire(t, home, MMB_READ, &h));   /* at home: the tile itself */
  cr_assert_eq(h, t);
  cr_assert_eq(first(h), -8.0, "f2's write went home before the home was handed out");
  OK(mmb_tile_release(h));
  OK(mmb_tile_acquire(t, f1, MMB_READ, &l1));
  cr_assert_eq(first(l1), -8.0);
  OK(mmb_tile_release(l1));
  cr_assert_eq(stats(f1).writebacks + stats(f2).writebacks, 2);
  OK(mmb_tile_acquire(t, home, MMB_READ_WRITE, &h));   /* written at home: f1's copy goes behind */
  MMB_TILE_AT_2D(h, double, h->lower[0], h->lower[1]) = -9.0;
  FAILS(mmb_tile_acquire(t, f1, MMB_READ, &l1), MMB_BUSY);   /* the home may still be written */
  OK(mmb_tile_release(h));
  OK(mmb_tile_acquire(t, f1, MMB_READ, &l1));
  cr_assert_eq(first(l1), -9.0, "f1's copy was fetched again after the write at home");
  OK(mmb_tile_release(l1));
  OK(mmb_array_evict(a, NULL));
  OK(mmb_tile_acquire(t, home, MMB_READ, &h));   /* pinned at home: the array stays as it is */
  FAILS(mmb_array_destroy(a), MMB_BUSY);
  FAILS(mmb_array_tile(a, &(mmbDimensions){2, {T, T}}), MMB_BUSY);
  OK(mmb_tile_release(h));
  FAILS(mmb_tile_release(h), MMB_INVALID_ARG);
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(f2));
}

MMB_TEST(cache, flush_writes_home_and_keeps_the_copies_clean) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  mmbArrayTile *l;
  OK(mmb_tile_acquire(tile(a, 3), fast, MMB_WRITE, &l));
  for (size_t i = l->lower[0]; i < l->upper[0]; i++)
    for (size_t j = l->lower[1]; j < l->upper[1]; j++) MMB_TILE_AT_2D(l, double, i, j) = 7.0;
  OK(mmb_array_flush(a));   /* still pinned for writing: stays dirty */
  cr_assert_eq(first(tile(a, 3)), 7.0);
  cr_assert_eq(stats(fast).dirty_bytes, TILE_BYTES);
  OK(mmb_tile_release(l));
  OK(mmb_array_flush(a));
  OK(mmb_array_flush(a));   /* nothing dirty: nothing moves */
  mmbCacheStats st = stats(fast);
  cr_assert(st.writebacks == 2 && st.dirty_bytes == 0 && st.used_bytes == TILE_BYTES);
  OK(mmb_array_evict(a, fast));
  st = stats(fast);
  cr_assert(st.used_bytes == 0 && st.clean_drops == 1 && st.writebacks == 2);
  OK(mmb_array_destroy(a));
}

MMB_TEST(cache, pinned_copies_never_move_and_a_full_pin_is_refused_at_once) {
  mmbMemSpace *fast = fast_space();
  budget_tiles(fast, 3);
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  mmbArrayTile *l[3], *more;
  for (size_t i = 0; i < 3; i++) OK(mmb_tile_acquire(tile(a, i), fast, MMB_READ, &l[i]));
  void *where = l[0]->ptr;
  FAILS(mmb_tile_acquire(tile(a, 3), fast, MMB_READ, &more), MMB_OUT_OF_MEMORY);
  mmbCacheStats st = stats(fast);
  cr_assert(st.used_bytes == 3 * TILE_BYTES && st.pinned_bytes == 3 * TILE_BYTES &&
            st.clean_drops == 0, "nothing was evicted");
  cr_assert_eq(l[0]->ptr, where);
  FAILS(mmb_array_evict(a, fast), MMB_BUSY);
  FAILS(mmb_array_destroy(a), MMB_BUSY);
  OK(mmb_tile_release(l[1]));
  OK(mmb_tile_acquire(tile(a, 3), fast, MMB_READ, &more));   /* tile 1 goes */
  cr_assert_eq(stats(fast).clean_drops, 1);
  OK(mmb_tile_release(more));
  /* two still pinned: a budget of one tile is refused, and the old one stays */
  FAILS(mmb_space_set_cache(fast, &(mmbCacheConfig){.budget_bytes = TILE_BYTES}), MMB_BUSY);
  cr_assert_eq(stats(fast).budget_bytes, 3 * TILE_BYTES);
  OK(mmb_tile_release(l[0]));
  OK(mmb_tile_release(l[2]));
  OK(mmb_space_set_cache(fast, &(mmbCacheConfig){.budget_bytes = TILE_BYTES}));
  cr_assert_eq(stats(fast).used_bytes, TILE_BYTES, "evicted down to the new budget");
  OK(mmb_array_destroy(a));
}

/* A destroy that is refused leaves the array as it was: a pinned copy, an
   iterator or another duplicate of a tile makes it MMB_BUSY before any
   dirty copy is dropped, so what was written there still reaches home. */
MMB_TEST(cache, a_refused_destroy_drops_no_written_copy) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  mmbArrayTile *w, *pinned, *dup;
  OK(mmb_tile_acquire(tile(a, 0), fast, MMB_WRITE, &w));
  MMB_TILE_AT_2D(w, double, 0, 0) = -1.0;
  OK(mmb_tile_release(w));   /* dirty, unpinned */
  OK(mmb_tile_acquire(tile(a, 1), fast, MMB_READ, &pinned));
  FAILS(mmb_array_destroy(a), MMB_BUSY);
  mmbCacheStats st = stats(fast);
  cr_assert(st.used_bytes == 2 * TILE_BYTES && st.dirty_bytes == TILE_BYTES,
            "both copies stay: %zu bytes used, %zu dirty", (size_t)st.used_bytes,
            (size_t)st.dirty_bytes);
  OK(mmb_tile_release(pinned));
  OK(mmb_tile_duplicate(tile(a, 2), fast, MMB_READ_WRITE, NULL, &dup));
  FAILS(mmb_array_destroy(a), MMB_BUSY);   /* a duplicate that is not the cache's */
  cr_assert_eq(stats(fast).dirty_bytes, TILE_BYTES, "the written copy stays");
  OK(mmb_tile_merge(dup, MMB_MERGE_OVERWRITE));
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(a, NULL, &it));
  FAILS(mmb_array_destroy(a), MMB_BUSY);
  OK(mmb_tile_iterator_destroy(it));
  OK(mmb_array_flush(a));
  cr_assert_eq(first(tile(a, 0)), -1.0, "the write reached home");
  OK(mmb_array_destroy(a));
  cr_assert_eq(stats(fast).used_bytes, 0, "the copies went with the array");
}

/* mmb's own writes to a home (a tile copy, an array copy, a merge) come
   after what was written in the cache: a dirty copy goes home first, then
   the write, and a later flush or eviction does not put the older data
   back. A merge that adds adds to what the copy held. Its reads (a copy
   out, a duplicate) see what the cache held. A copy acquired for writing
   makes such a write MMB_BUSY. */
MMB_TEST(cache, a_write_to_a_home_comes_after_its_dirty_copies) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  mmbArray *b = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 1000.0);
  mmbArrayTile *l;
  OK(mmb_tile_acquire(tile(a, 0), fast, MMB_READ_WRITE, &l));
  MMB_TILE_AT_2D(l, double, 0, 0) = -1.0;
  OK(mmb_tile_release(l));
  OK(mmb_array_copy(a, b));
  OK(mmb_array_flush(a));
  cr_assert_eq(first(tile(a, 0)), 1000.0, "the array copy stays: %g", first(tile(a, 0)));
  OK(mmb_tile_acquire(tile(a, 0), fast, MMB_READ, &l));
  cr_assert_eq(first(l), 1000.0, "the cached copy was refreshed");
  OK(mmb_tile_release(l));
  /* mmb's reads see what was written in the cache */
  OK(mmb_tile_acquire(tile(a, 4), fast, MMB_READ_WRITE, &l));
  MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = -4.0;
  OK(mmb_tile_release(l));
  OK(mmb_tile_copy(tile(b, 4), tile(a, 4)));
  cr_assert_eq(first(tile(b, 4)), -4.0, "a tile copy out reads the cached write");
  OK(mmb_tile_acquire(tile(a, 5), fast, MMB_READ_WRITE, &l));
  MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = -5.0;
  OK(mmb_tile_release(l));
  mmbArrayTile *seen;
  OK(mmb_tile_duplicate(tile(a, 5), fast, MMB_READ, NULL, &seen));
  cr_assert_eq(first(seen), -5.0, "so does a duplicate");
  OK(mmb_tile_merge(seen, MMB_MERGE_OVERWRITE));   /* read-only: moves nothing */
  /* a tile copy */
  OK(mmb_tile_acquire(tile(a, 1), fast, MMB_WRITE, &l));
  MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = -2.0;
  OK(mmb_tile_release(l));
  OK(mmb_tile_copy(tile(a, 1), tile(b, 5)));
  OK(mmb_array_evict(a, fast));
  cr_assert_eq(first(tile(a, 1)), first(tile(b, 5)), "the tile copy stays");
  /* a merge that adds, from a duplicate made before the copy was written */
  mmbArrayTile *dup;
  OK(mmb_tile_duplicate(tile(a, 2), fast, MMB_READ_WRITE, NULL, &dup));
  OK(mmb_tile_acquire(tile(a, 2), fast, MMB_READ_WRITE, &l));
  double before = first(l);
  MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = 5.0;
  OK(mmb_tile_release(l));
  OK(mmb_tile_merge(dup, MMB_MERGE_SUM));
  OK(mmb_array_flush(a));
  cr_assert_eq(first(tile(a, 2)), 5.0 + before, "the sum of the copy's 5 and the duplicate's "
               "%g: %g", before, first(tile(a, 2)));
  /* pinned for writing: refused, and nothing moves */
  OK(mmb_tile_acquire(tile(a, 3), fast, MMB_WRITE, &l));
  MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = -3.0;
  FAILS(mmb_tile_copy(tile(a, 3), tile(b, 3)), MMB_BUSY);
  FAILS(mmb_array_copy(a, b), MMB_BUSY);
  OK(mmb_tile_release(l));
  OK(mmb_array_flush(a));
  cr_assert_eq(first(tile(a, 3)), -3.0);
  OK(mmb_array_evict(a, NULL));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
}

static size_t threads_now(void) {
  size_t n = 0;
  DIR *d = opendir("/proc/self/task");
  cr_assert_not_null(d);
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* Its cache's copies of a tile, one written home through the cache's queue
   (which starts a thread), all evicted. */
static void use_cache(mmbArray *a, mmbMemSpace *s) {
  mmbArrayTile *l;
  OK(mmb_tile_acquire(tile(a, 0), s, MMB_READ_WRITE, &l));
  OK(mmb_tile_release(l));
  OK(mmb_tile_advise(tile(a, 0), s, MMB_ADVICE_WONTNEED));   /* home on the queue */
  OK(mmb_array_evict(a, s));
}

/* A released space's cache goes with it, its queue's thread too: a program
   that makes a space for each phase does not gather threads. Replacing a
   registered space is the same. A release refused while copies are cached
   keeps the cache as it was. */
MMB_TEST(cache, a_released_space_takes_its_cache_along) {
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  size_t threads = 0;
  for (int round = 0; round < 20; round++) {
    mmbMemSpace *fast = fast_space();
    budget_tiles(fast, 3);
    use_cache(a, fast);
    OK(mmb_space_release(fast));
    if (round == 0) threads = threads_now();   /* the library's own, started once */
  }
  cr_assert_leq(threads_now(), threads, "%zu threads, more than %zu", threads_now(), threads);
  mmbMemSpaceConfig reg = {.size_limit = 8 << 20};
  for (int round = 0; round < 5; round++) {
    reg.size_limit += 4096;   /* a new space each time */
    OK(mmb_register_memory(MMB_DRAM, MMB_CPU, &reg, NULL));
    mmbMemSpace *s;
    OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &s));
    use_cache(a, s);
  }
  cr_assert_leq(threads_now(), threads + 1, "the registered space's cache alone has a thread");
  mmbMemSpace *fast = fast_space();
  budget_tiles(fast, 3);
  mmbArrayTile *l;
  OK(mmb_tile_acquire(tile(a, 1), fast, MMB_READ, &l));
  OK(mmb_tile_release(l));
  FAILS(mmb_space_release(fast), MMB_BUSY);   /* a copy of tile 1 is cached there */
  mmbCacheStats st = stats(fast);
  cr_assert(st.budget_bytes == 3 * TILE_BYTES && st.used_bytes == TILE_BYTES && st.misses == 1,
            "the cache stays: budget %llu, %llu used, %llu misses",
            (unsigned long long)st.budget_bytes, (unsigned long long)st.used_bytes,
            (unsigned long long)st.misses);
  OK(mmb_array_evict(a, fast));
  OK(mmb_space_release(fast));
  OK(mmb_array_destroy(a));
}

/* Every acquire, release, eviction, write-back and prefetch is in the trace,
   with the cache's occupancy (test/trace/check_trace.py reads it). */
MMB_TEST(cache, the_trace_records_what_the_cache_does) {
  mmbMemSpace *fast = fast_space();
  budget_tiles(fast, 2);
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  OK(mmb_trace_start());
  mmbArrayTile *l;
  OK(mmb_tile_acquire(tile(a, 0), fast, MMB_READ_WRITE, &l));   /* miss */
  OK(mmb_tile_release(l));
  for (int k = 0; k < 2; k++) {                                 /* miss, hit */
    OK(mmb_tile_acquire(tile(a, 1), fast, MMB_READ, &l));
    OK(mmb_tile_release(l));
  }
  for (size_t i = 2; i <= 3; i++) {   /* misses: tile 0 goes written home, then tile 1 */
    OK(mmb_tile_acquire(tile(a, i), fast, MMB_READ, &l));
    OK(mmb_tile_release(l));
  }
  OK(mmb_tile_advise(tile(a, 0), fast, MMB_ADVICE_WILLNEED));   /* a prefetch: tile 2 goes */
  OK(mmb_array_flush(a));
  OK(mmb_trace_stop());
  char path[64];
  snprintf(path, sizeof path, "/tmp/mmb-cache-trace-%d.json", (int)getpid());
  OK(mmb_trace_dump(path));
  char cmd[256];
  snprintf(cmd, sizeof cmd, "python3 test/trace/check_trace.py %s cache_hit=1 cache_miss=4 "
           "cache_release=5 cache_prefetch=1 cache_evict=3 cache_written=1 cache_writeback=0 "
           "cache_track=fast final_cached=%zu", path, 2 * TILE_BYTES);
  cr_assert_eq(system(cmd), 0, "the trace does not hold the cache's events");
  unlink(path);
  OK(mmb_array_destroy(a));
}

/* MMB_CACHE sets the budget and clean share of a layer's caches; a
   program's mmb_space_set_cache still wins. */
Test(cache, mmb_cache_sets_a_layers_caches) {
  cr_assert_eq(setenv("MMB_CACHE", "DRAM:1M:clean=0.25", 1), 0);
  mmb_test_setup();
  mmbMemSpace *fast = fast_space();
  mmbCacheConfig cfg;
  OK(mmb_space_get_cache(fast, &cfg));
  cr_assert(cfg.budget_bytes == 1u << 20 && cfg.clean_share == 0.25);
  cr_assert_eq(stats(fast).budget_bytes, 1u << 20);
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  mmbArrayTile *l;
  OK(mmb_tile_acquire(tile(a, 0), fast, MMB_READ, &l));   /* the cache made: the same */
  OK(mmb_tile_release(l));
  cr_assert_eq(stats(fast).budget_bytes, 1u << 20);
  budget_tiles(fast, 2);
  cr_assert_eq(stats(fast).budget_bytes, 2 * TILE_BYTES);
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
  mmb_test_teardown();
}

Test(cache, a_malformed_mmb_cache_fails_init) {
  const char *bad[] = {"DRAM", "DRAM:", "DRAM:0", "DRAM:4X", "SSD:1G", "DRAM:1G:clean=",
                       "DRAM:1G:clean=1.5", "DRAM:1G:clean=-0.1", "DRAM:1G:dirty=0.5",
                       "DRAM:1G,HBM"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert_eq(setenv("MMB_CACHE", bad[i], 1), 0);
    FAILS(mmb_init(&(mmbOptions){.log_level = MMB_LOG_OFF}), MMB_INVALID_ARG);
    cr_assert(!mmb_is_initialized(), "%s", bad[i]);
  }
}

MMB_TEST(cache, advice_changes_the_victim) {
  mmbMemSpace *fast = fast_space();
  budget_tiles(fast, 3);
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  mmbArrayTile *l;
  for (size_t i = 0; i < 3; i++) {
    OK(mmb_tile_acquire(tile(a, i), fast, MMB_READ, &l));
    OK(mmb_tile_release(l));
  }
  OK(mmb_tile_advise(tile(a, 0), fast, MMB_ADVICE_KEEP));      /* the LRU one stays */
  OK(mmb_tile_advise(tile(a, 2), fast, MMB_ADVICE_WONTNEED));
  mmbArrayTile *again;
  OK(mmb_tile_acquire(tile(a, 2), fast, MMB_READ, &again));   /* a hit: now the most recent, */
  OK(mmb_tile_release(again));                                 /* and still WONTNEED */
  OK(mmb_tile_acquire(tile(a, 3), fast, MMB_READ, &l));         /* a miss: tile 2 goes, not 1 */
  OK(mmb_tile_release(l));
  OK(mmb_tile_acquire(tile(a, 0), fast, MMB_READ, &again));   /* kept: a hit */
  OK(mmb_tile_release(again));
  OK(mmb_tile_acquire(tile(a, 1), fast, MMB_READ, &again));   /* still there: a hit */
  OK(mmb_tile_release(again));
  mmbCacheStats st = stats(fast);
  cr_assert_eq(st.hits, 3, "WONTNEED went before the least recently used");
  cr_assert_eq(st.misses, 4);
  /* KEEP holds when a miss needs room: the least recent other copy (3) goes */
  OK(mmb_tile_acquire(tile(a, 4), fast, MMB_READ, &l));
  OK(mmb_tile_release(l));
  OK(mmb_tile_acquire(tile(a, 0), fast, MMB_READ, &again));
  OK(mmb_tile_release(again));
  OK(mmb_tile_acquire(tile(a, 1), fast, MMB_READ, &again));
  OK(mmb_tile_release(again));
  cr_assert_eq(stats(fast).hits, 5);
  OK(mmb_tile_advise(tile(a, 0), fast, MMB_ADVICE_NORMAL));
  OK(mmb_array_destroy(a));
}

MMB_TEST(cache, willneed_fetches_ahead_and_wontneed_writes_home) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 10);
  OK(mmb_tile_advise(tile(a, 6), fast, MMB_ADVICE_WILLNEED));
  mmbCacheStats st = stats(fast);
  cr_assert(st.misses == 1 && st.fetched_bytes == TILE_BYTES && st.used_bytes == TILE_BYTES);
  mmbArrayTile *l;
  OK(mmb_tile_acquire(tile(a, 6), fast, MMB_READ_WRITE, &l));   /* waits for the copy: a hit */
  cr_assert_eq(first(l), first(tile(a, 6)));
  MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = 99.0;
  OK(mmb_tile_release(l));
  cr_assert_eq(stats(fast).hits, 1);
  OK(mmb_tile_advise(tile(a, 6), fast, MMB_ADVICE_WONTNEED));   /* written home on the queue */
  OK(mmb_array_evict(a, NULL));   /* clean now: dropped, waiting for that write */
  cr_assert_eq(first(tile(a, 6)), 99.0);
  st = stats(fast);
  cr_assert(st.writebacks == 1 && st.clean_drops == 1 && st.used_bytes == 0);
  OK(mmb_array_destroy(a));
}

MMB_TEST(cache, a_write_home_refreshes_a_clean_copy) {
  mmbMemSpace *fast = fast_space();
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = tiled_array(iface, 0), *b = tiled_array(iface, 100);
  mmbArrayTile *l;
  OK(mmb_tile_acquire(tile(a, 2), fast, MMB_READ, &l));
  OK(mmb_tile_release(l));
  OK(mmb_tile_copy(tile(a, 2), tile(b, 2)));   /* mmb writes the tile at home */
  OK(mmb_tile_acquire(tile(a, 2), fast, MMB_READ, &l));
  cr_assert_eq(first(l), first(tile(b, 2)), "the copy was brought up to date");
  OK(mmb_tile_release(l));
  cr_assert_eq(stats(fast).misses, 2);
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
}

MMB_TEST(cache, misuse_is_refused) {
  mmbMemSpace *fast = fast_space();
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = tiled_array(iface, 0);
  mmbArrayTile *t = tile(a, 0), *l, *dup;
  FAILS(mmb_tile_acquire(NULL, fast, MMB_READ, &l), MMB_INVALID_ARG);
  FAILS(mmb_tile_acquire(t, NULL, MMB_READ, &l), MMB_INVALID_ARG);
  FAILS(mmb_tile_acquire(t, fast, MMB_READ, NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_acquire(t, fast, (mmbAccessType)9, &l), MMB_INVALID_ARG);
  FAILS(mmb_tile_release(t), MMB_INVALID_ARG);   /* never acquired */
  FAILS(mmb_tile_release(NULL), MMB_INVALID_ARG);
  OK(mmb_tile_duplicate(t, fast, MMB_READ, NULL, &dup));
  FAILS(mmb_tile_acquire(dup, fast, MMB_READ, &l), MMB_INVALID_ARG);   /* a duplicate */
  OK(mmb_tile_discard(dup));
  OK(mmb_tile_acquire(t, fast, MMB_READ, &l));
  OK(mmb_tile_release(l));
  FAILS(mmb_tile_release(l), MMB_INVALID_ARG);   /* twice */
  FAILS(mmb_tile_advise(t, fast, (mmbAdvice)17), MMB_INVALID_ARG);
  FAILS(mmb_tile_advise(NULL, fast, MMB_ADVICE_KEEP), MMB_INVALID_ARG);
  FAILS(mmb_space_set_cache(fast, &(mmbCacheConfig){.clean_share = 1.5}), MMB_INVALID_ARG);
  FAILS(mmb_space_set_cache(NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_space_get_cache_stats(fast, NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_flush(NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_evict(NULL, fast), MMB_INVALID_ARG);
  OK(mmb_array_destroy(a));
  FAILS(mmb_tile_acquire(t, fast, MMB_READ, &l), MMB_INVALID_ARG);   /* its array is gone */
  FAILS(mmb_tile_release(l), MMB_INVALID_ARG);                       /* and its copy */
  FAILS(mmb_array_flush(a), MMB_INVALID_ARG);
  FAILS(mmb_tile_flush(t), MMB_INVALID_ARG);                         /* its tile too */
  /* a read-only array's tiles may be cached, never written */
  mmbLayout *lay = test_layout(sizeof(double), 2, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbArray *ro;
  OK(mmb_array_create(&(mmbDimensions){2, {N, N}}, lay, iface, MMB_READ, &ro));
  OK(mmb_layout_destroy(lay));
  OK(mmb_array_tile(ro, &(mmbDimensions){2, {T, T}}));
  FAILS(mmb_tile_acquire(tile(ro, 1), fast, MMB_WRITE, &l), MMB_INVALID_STATE);
  OK(mmb_tile_acquire(tile(ro, 1), fast, MMB_READ, &l));
  OK(mmb_tile_release(l));
  OK(mmb_array_destroy(ro));
}

MMB_TEST(cache, acquire_async_fetches_on_the_queue) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 3);
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  mmbRequest r = {0};
  mmbArrayTile *l, *l2;
  FAILS(mmb_tile_acquire_async(tile(a, 7), fast, MMB_READ, NULL, &r, &l), MMB_INVALID_ARG);
  OK(mmb_tile_acquire_async(tile(a, 7), fast, MMB_READ, q, &r, &l));
  OK(mmb_wait(&r));
  cr_assert_eq(first(l), first(tile(a, 7)));
  OK(mmb_tile_acquire_async(tile(a, 7), fast, MMB_READ, q, &r, &l2));   /* a hit */
  cr_assert_eq(l2, l);
  OK(mmb_wait(&r));
  OK(mmb_tile_release(l2));
  OK(mmb_tile_release(l));
  mmbCacheStats st = stats(fast);
  cr_assert(st.misses == 1 && st.hits == 1);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
}

/* ---- two threads -------------------------------------------------------------- */

typedef struct worker {
  mmbArray *a;
  mmbMemSpace *fast;
  size_t base;
  int failures;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  for (int round = 0; round < 300; round++) {
    size_t i = w->base + (size_t)round % 4;
    mmbArrayTile *l, *t;
    if (mmb_tile_at(w->a, &(mmbIndex){2, {i / (N / T), i % (N / T)}}, &t) != MMB_OK ||
        mmb_tile_acquire(t, w->fast, MMB_READ_WRITE, &l) != MMB_OK) {
      w->failures++;
      continue;
    }
    MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) += 1.0;
    if (mmb_tile_release(l) != MMB_OK) w->failures++;
  }
  return NULL;
}

/* A thread that waits for a slow copy (its prefetch, or its own miss)
   does not hold the cache up: the data moves without the cache's lock, and
   another thread's hit meanwhile returns at once. The capacity tier is
   throttled so that the copy takes 250 ms. */
typedef struct slow_copy {
  mmbMemSpace *fast;
  mmbArrayTile *tile;
  bool prefetch;
  _Atomic int stage;   /* 1: acquiring; 2: acquired */
} slow_copy;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void *acquire_slowly(void *arg) {
  slow_copy *s = arg;
  mmbArrayTile *l;
  if (s->prefetch) OK(mmb_tile_advise(s->tile, s->fast, MMB_ADVICE_WILLNEED));
  atomic_store(&s->stage, 1);
  OK(mmb_tile_acquire(s->tile, s->fast, MMB_READ, &l));   /* 250 ms at 512 KiB/s */
  atomic_store(&s->stage, 2);
  OK(mmb_tile_release(l));
  return NULL;
}

static void hit_while_another_thread_copies(bool prefetch) {
  const char *what = prefetch ? "prefetch" : "miss";
  cr_assert_eq(setenv("MMB_EMULATE", "DRAM:bw=512K", 1), 0);
  mmb_test_setup();
  mmbMemSpace *fast = fast_space();
  mmbDimensions d = dims2(256, 256);   /* tiles of 128 x 128 doubles: 128 KiB */
  mmbArray *a = test_array(test_interface(MMB_PROVIDER_SYSTEM, 0), &d, MMB_ROWMAJOR, 0);
  double *p = mmb_array_ptr(a);
  for (size_t i = 0; i < 256 * 256; i++) p[i] = (double)i;
  OK(mmb_array_tile(a, &(mmbDimensions){2, {128, 128}}));
  mmbArrayTile *x, *y, *l;
  OK(mmb_tile_at(a, &(mmbIndex){2, {0, 0}}, &x));
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 1}}, &y));
  OK(mmb_tile_acquire(y, fast, MMB_READ, &l));   /* y cached: the next acquire is a hit */
  OK(mmb_tile_release(l));
  slow_copy s = {.fast = fast, .tile = x, .prefetch = prefetch};
  pthread_t th;
  pthread_create(&th, NULL, acquire_slowly, &s);
  while (atomic_load(&s.stage) == 0) sched_yield();
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);   /* the other thread is waiting for x by now */
  double t0 = now_ms();
  OK(mmb_tile_acquire(y, fast, MMB_READ, &l));
  double ms = now_ms() - t0;
  int stage = atomic_load(&s.stage);
  OK(mmb_tile_release(l));
  pthread_join(th, NULL);
  cr_assert_eq(stage, 1, "the %s was done before the hit: the test proves nothing", what);
  cr_assert_lt(ms, 125.0, "a hit waited %.1f ms for another thread's %s", ms, what);
  OK(mmb_tile_acquire(x, fast, MMB_READ, &l));   /* the slow copy holds the tile's data */
  cr_assert_eq(MMB_TILE_AT_2D(l, double, 127, 127), 127.0 * 256 + 127);
  OK(mmb_tile_release(l));
  mmbCacheStats st = stats(fast);
  cr_assert(st.misses == 2 && st.hits == (prefetch ? 3u : 2u), "%llu misses, %llu hits",
            (unsigned long long)st.misses, (unsigned long long)st.hits);
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
  mmb_test_teardown();
}

Test(cache, a_wait_for_a_prefetch_does_not_hold_other_threads_up) {
  hit_while_another_thread_copies(true);
}

Test(cache, a_miss_does_not_hold_other_threads_up) {
  hit_while_another_thread_copies(false);
}

/* ---- copies that fail to arrive ------------------------------------------------ */

/* A "device" whose copies fail while `flaky` is set, leaving the target
   poisoned, as a copy cut short would. An array homed there, its values
   i * N + j, read back through its tiles (the memory is the host's). */
static _Atomic bool flaky;
static _Atomic bool held_back;     /* copies wait at the start while it is set */
static _Atomic unsigned copies;    /* copies started */

static mmbError flaky_copy_2d(void *state, void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height) {
  atomic_fetch_add(&copies, 1);
  while (atomic_load(&held_back)) sched_yield();
  bool fail = atomic_load(&flaky);
  for (size_t r = 0; r < height; r++) {
    if (fail) memset((char *)dst + r * dpitch, 0xff, width);
    else memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
  }
  return fail ? MMB_ERROR : MMB_OK;
}

static mmbArray *flaky_array(void) {
  static const mmbProviderOps ops = {
      .abi_version = MMB_PROVIDER_ABI_VERSION, .name = "flaky-device",
      .caps = MMB_PROVIDER_DEVICE_ACCESSIBLE, .alloc = dev_alloc, .free = dev_free,
      .copy_2d = flaky_copy_2d};
  (void)fake_device_interface;
  mmbProviderType type;
  mmbMemSpace *dram;
  mmbMemInterface *dev;
  OK(mmb_provider_register(&ops, &type));
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  OK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.provider = type}, &dev));
  mmbArray *host = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0), *a;
  mmbDimensions d = dims2(N, N);
  a = test_array(dev, &d, MMB_ROWMAJOR, 0);
  OK(mmb_array_copy(a, host));
  OK(mmb_array_destroy(host));
  OK(mmb_array_tile(a, &(mmbDimensions){2, {T, T}}));
  return a;
}

static bool holds_tile(const mmbArrayTile *l) {
  for (size_t i = l->lower[0]; i < l->upper[0]; i++)
    for (size_t j = l->lower[1]; j < l->upper[1]; j++)
      if (MMB_TILE_AT_2D(l, double, i, j) != (double)(i * N + j)) return false;
  return true;
}

/* A prefetch that fails leaves no garbage behind: the acquire that finds
   it copies the tile again. */
MMB_TEST(cache, a_prefetch_that_failed_is_fetched_again) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = flaky_array();
  mmbArrayTile *t = tile(a, 5), *l;
  atomic_store(&flaky, true);
  OK(mmb_tile_advise(t, fast, MMB_ADVICE_WILLNEED));
  OK(mmb_array_flush(a));   /* waits for the prefetch */
  atomic_store(&flaky, false);
  OK(mmb_tile_acquire(t, fast, MMB_READ, &l));
  cr_assert(holds_tile(l), "the acquire returned what a failed prefetch left");
  OK(mmb_tile_release(l));
  mmbCacheStats st = stats(fast);
  cr_assert(st.misses == 2 && st.hits == 0 && st.fetched_bytes == 2 * TILE_BYTES,
            "%llu misses, %llu hits", (unsigned long long)st.misses,
            (unsigned long long)st.hits);
  OK(mmb_array_destroy(a));
}

/* A synchronous fetch that fails says so, twice over (it tries once more),
   and leaves its copy lost: clean, never written home, fetched again by
   the next acquire that reads it. */
MMB_TEST(cache, a_fetch_that_fails_is_refused_and_nothing_goes_home) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = flaky_array();
  mmbArrayTile *t = tile(a, 5), *l;
  atomic_store(&flaky, true);
  FAILS(mmb_tile_acquire(t, fast, MMB_READ_WRITE, &l), MMB_ERROR);
  mmbCacheStats st = stats(fast);
  cr_assert(st.misses == 2 && st.pinned_bytes == 0 && st.dirty_bytes == 0,
            "%llu misses, %zu pinned, %zu dirty", (unsigned long long)st.misses,
            (size_t)st.pinned_bytes, (size_t)st.dirty_bytes);
  atomic_store(&flaky, false);
  OK(mmb_array_flush(a));
  OK(mmb_array_evict(a, fast));
  cr_assert_eq(stats(fast).writebacks, 0, "a lost copy went home");
  cr_assert(holds_tile(t), "the home was overwritten");
  atomic_store(&flaky, true);
  FAILS(mmb_tile_acquire(t, fast, MMB_READ, &l), MMB_ERROR);
  atomic_store(&flaky, false);
  OK(mmb_tile_acquire(t, fast, MMB_READ_WRITE, &l));   /* the lost copy, copied again */
  cr_assert(holds_tile(l));
  MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = -1.0;
  OK(mmb_tile_release(l));
  OK(mmb_array_flush(a));
  cr_assert_eq(first(t), -1.0);
  cr_assert_eq(stats(fast).writebacks, 1);
  OK(mmb_array_destroy(a));
}

/* An asynchronous acquire that finds a prefetch still on its way, which
   then fails: its request ends with the copy's error (it does not end
   well while the local tile holds garbage). The lost copy is copied again
   on the queue by the next acquire, whose request says how that went. */
MMB_TEST(cache, an_async_acquire_reports_the_prefetch_it_waited_for) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = flaky_array();
  mmbArrayTile *t = tile(a, 5), *l;
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  atomic_store(&flaky, true);
  atomic_store(&held_back, true);
  unsigned before = atomic_load(&copies);
  OK(mmb_tile_advise(t, fast, MMB_ADVICE_WILLNEED));
  while (atomic_load(&copies) == before) sched_yield();   /* the prefetch is copying */
  mmbRequest r = {0};
  OK(mmb_tile_acquire_async(t, fast, MMB_READ, q, &r, &l));
  atomic_store(&held_back, false);
  FAILS(mmb_wait(&r), MMB_ERROR);
  OK(mmb_tile_release(l));
  r = (mmbRequest){0};
  OK(mmb_tile_acquire_async(t, fast, MMB_READ, q, &r, &l));   /* copied again, and fails */
  FAILS(mmb_wait(&r), MMB_ERROR);
  OK(mmb_tile_release(l));
  atomic_store(&flaky, false);
  r = (mmbRequest){0};
  OK(mmb_tile_acquire_async(t, fast, MMB_READ, q, &r, &l));
  OK(mmb_wait(&r));
  cr_assert(holds_tile(l), "the acquire returned what a failed copy left");
  OK(mmb_tile_release(l));
  OK(mmb_array_flush(a));
  mmbCacheStats st = stats(fast);
  cr_assert(st.misses == 3 && st.hits == 1 && st.writebacks == 0 && st.pinned_bytes == 0,
            "%llu misses, %llu hits, %llu write-backs", (unsigned long long)st.misses,
            (unsigned long long)st.hits, (unsigned long long)st.writebacks);
  cr_assert(holds_tile(t), "the home was overwritten");
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
}

/* A WILLNEED hint run on a thread of its own, to see whether it returns
   while a copy is held back. */
typedef struct hint_call {
  mmbArrayTile *tile;
  mmbMemSpace *space;
  _Atomic bool done;
} hint_call;

static void *hint_thread(void *arg) {
  hint_call *h = arg;
  if (mmb_tile_advise(h->tile, h->space, MMB_ADVICE_WILLNEED) == MMB_OK) atomic_store(&h->done, true);
  return NULL;
}

/* `written` advised WONTNEED in `space`, its write-back held back once it
   has started; meanwhile `hinted` advised WILLNEED: true when the hint
   returned within about 2 s. The write-back is let go before it returns. */
static bool hint_returns_during_write_back(mmbMemSpace *space, mmbArrayTile *written,
                                           mmbArrayTile *hinted) {
  atomic_store(&held_back, true);
  unsigned before = atomic_load(&copies);
  OK(mmb_tile_advise(written, space, MMB_ADVICE_WONTNEED));
  while (atomic_load(&copies) == before) sched_yield();
  hint_call h = {.tile = hinted, .space = space};
  pthread_t th;
  pthread_create(&th, NULL, hint_thread, &h);
  for (int i = 0; i < 2000 && !atomic_load(&h.done); i++) usleep(1000);
  bool returned = atomic_load(&h.done);
  atomic_store(&held_back, false);
  pthread_join(th, NULL);
  return returned;
}

/* The first element of t's copy in `space` set to v; the copy left dirty. */
static void write_first(mmbArrayTile *t, mmbMemSpace *space, double v) {
  mmbArrayTile *l;
  OK(mmb_tile_acquire(t, space, MMB_READ_WRITE, &l));
  MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = v;
  OK(mmb_tile_release(l));
}

/* A hint never waits for the cache's queue: a copy advised WONTNEED goes
   first among victims, but while its write-back is on its way home, a
   WILLNEED hint evicts the next victim whose room is free at once, or, when
   there is none, is not taken. (An acquire still waits for it.) */
MMB_TEST(cache, a_hint_never_waits_for_a_write_back) {
  mmbMemSpace *fast = fast_space();
  budget_tiles(fast, 2);
  mmbArray *a = flaky_array();
  mmbArrayTile *t[4], *l;
  for (size_t i = 0; i < 4; i++) t[i] = tile(a, i);
  write_first(t[0], fast, -1.0);
  OK(mmb_tile_acquire(t[1], fast, MMB_READ, &l));
  OK(mmb_tile_release(l));
  cr_assert(hint_returns_during_write_back(fast, t[0], t[2]),
            "the hint waited for the write-back of tile 0");
  mmbCacheStats st = stats(fast);
  cr_assert(st.misses == 3 && st.clean_drops == 1 && st.writebacks == 1,
            "%llu misses, %llu clean drops, %llu write-backs: tile 1 should have made room",
            (unsigned long long)st.misses, (unsigned long long)st.clean_drops,
            (unsigned long long)st.writebacks);
  /* the cache holds tiles 0 (clean, home) and 2: a hit */
  OK(mmb_tile_acquire(t[2], fast, MMB_READ, &l));
  cr_assert(holds_tile(l));
  OK(mmb_tile_release(l));
  cr_assert_eq(stats(fast).hits, 1);
  cr_assert_eq(first(t[0]), -1.0, "tile 0 went home");

  /* Now the only victim is busy: in a cache of one tile, tile 2 written,
     advised WONTNEED and held on its way home. The hint for tile 3 is not
     taken; the acquire of tile 3 then fetches it, once tile 2 is home. */
  OK(mmb_array_evict(a, fast));
  budget_tiles(fast, 1);
  write_first(t[2], fast, -3.0);
  st = stats(fast);
  cr_assert(hint_returns_during_write_back(fast, t[2], t[3]),
            "the hint waited for the write-back of tile 2");
  cr_assert_eq(stats(fast).misses, st.misses, "the hint was taken");
  OK(mmb_tile_acquire(t[3], fast, MMB_READ, &l));
  cr_assert(holds_tile(l));
  OK(mmb_tile_release(l));
  OK(mmb_array_flush(a));
  cr_assert_eq(first(t[2]), -3.0, "tile 2 went home");
  cr_assert_eq(stats(fast).writebacks, 2);
  OK(mmb_array_destroy(a));
}

/* A space fuller than its cache knows (other data in it, a pool's holes):
   the fetch evicts a dirty copy, whose room comes back only once its slow
   write-back is done. The fetch waits for it: going on to evict every
   other copy at once, it would give up with MMB_OUT_OF_MEMORY. */
Test(cache, a_fetch_waits_for_the_write_back_of_its_victim) {
  cr_assert_eq(setenv("MMB_EMULATE", "DRAM:bw=4M", 1), 0);
  mmb_test_setup();
  size_t tile_bytes = 128 * 128 * sizeof(double);   /* a write-back takes 31 ms */
  mmbMemSpace *fast;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 4 * tile_bytes,
                                                                .name = "fast"}, &fast));
  mmbMemInterface *other;
  mmbAllocation *block;
  OK(mmb_request_interface(fast, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_BASIC}, &other));
  OK(mmb_allocate(tile_bytes, other, &block));   /* a quarter of the space, not the cache's */
  mmbDimensions d = dims2(256, 256);
  mmbArray *a = test_array(test_interface(MMB_PROVIDER_SYSTEM, 0), &d, MMB_ROWMAJOR, 0);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {128, 128}}));
  mmbArrayTile *t[4], *l;
  for (size_t i = 0; i < 4; i++) OK(mmb_tile_at(a, &(mmbIndex){2, {i / 2, i % 2}}, &t[i]));
  OK(mmb_tile_advise(t[0], fast, MMB_ADVICE_WILLNEED));   /* the cache's queue is made */
  for (size_t i = 0; i < 3; i++) {   /* three dirty copies fill what is left */
    OK(mmb_tile_acquire(t[i], fast, MMB_WRITE, &l));
    MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = -1.0 - (double)i;
    OK(mmb_tile_release(l));
  }
  OK(mmb_tile_acquire(t[3], fast, MMB_READ, &l));
  OK(mmb_tile_release(l));
  mmbCacheStats st = stats(fast);
  cr_assert_eq(st.writebacks, 1, "%llu copies evicted for one", (unsigned long long)st.writebacks);
  OK(mmb_array_flush(a));
  for (size_t i = 0; i < 3; i++) cr_assert_eq(first(t[i]), -1.0 - (double)i);
  OK(mmb_array_destroy(a));
  OK(mmb_free(block));
  OK(mmb_interface_destroy(other));
  OK(mmb_space_release(fast));
  mmb_test_teardown();
}

MMB_TEST(cache, two_threads_acquire_and_release_at_once) {
  mmbMemSpace *fast = fast_space();
  budget_tiles(fast, 5);   /* less than the 8 tiles they use: evictions race with acquires */
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, MMB_INTERFACE_THREAD_SAFE), 0);
  worker w[2] = {{a, fast, 0, 0}, {a, fast, 8, 0}};
  pthread_t th[2];
  for (int k = 0; k < 2; k++) pthread_create(&th[k], NULL, work, &w[k]);
  for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
  cr_assert(w[0].failures == 0 && w[1].failures == 0);
  OK(mmb_array_flush(a));
  for (size_t k = 0; k < 2; k++)
    for (size_t i = 0; i < 4; i++) {
      mmbArrayTile *t = tile(a, w[k].base + i);
      double start = (double)(t->lower[0] * N + t->lower[1]);
      cr_assert_eq(first(t), start + 75.0, "tile %zu: every increment kept",
                   w[k].base + i);
    }
  OK(mmb_array_destroy(a));
}

/* An iterator through the cache: each tile acquired, the next ones of its
   schedule advised WILLNEED (so every acquire after the first is a hit on
   a prefetched copy), released behind; written copies reach home when the
   array is flushed. */
MMB_TEST(cache, an_iterator_walks_through_the_cache_in_its_schedule) {
  mmbMemSpace *fast = fast_space();
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  size_t order[16];
  for (size_t i = 0; i < 16; i++) order[i] = 15 - i;   /* backwards */
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(a, &(mmbTileIteratorOptions){.schedule = MMB_SCHEDULE_CUSTOM,
                                                            .order = order, .order_length = 16,
                                                            .space = fast, .depth = 2,
                                                            .access = MMB_READ_WRITE}, &it));
  FAILS(mmb_array_tile(a, &(mmbDimensions){2, {8, 8}}), MMB_BUSY);
  size_t visited = 0;
  for (mmbArrayTile *l; (l = mmb_tile_iterator_tile(it)); visited++) {
    mmbArrayTile *t = tile(a, order[visited]);
    cr_assert_eq(l->space, fast);
    cr_assert(l->lower[0] == t->lower[0] && l->lower[1] == t->lower[1], "tile %zu", visited);
    cr_assert_eq(first(l), first(t));
    MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) += 0.5;
    cr_assert_eq(stats(fast).pinned_bytes, TILE_BYTES, "the current tile alone is pinned");
    OK(mmb_tile_iterator_next(it));
  }
  cr_assert_eq(visited, 16);
  OK(mmb_tile_iterator_first(it));   /* back to the first: acquired again, a hit */
  cr_assert_eq(first(mmb_tile_iterator_tile(it)), first(tile(a, 15)) + 0.5, "the cached copy");
  OK(mmb_tile_iterator_destroy(it));
  mmbCacheStats st = stats(fast);
  cr_assert(st.misses == 16 && st.hits == 16 && st.pinned_bytes == 0,
            "%llu misses, %llu hits, %llu pinned", (unsigned long long)st.misses,
            (unsigned long long)st.hits, (unsigned long long)st.pinned_bytes);
  OK(mmb_array_flush(a));
  for (size_t i = 0; i < 16; i++) {
    mmbArrayTile *t = tile(a, i);
    cr_assert_eq(first(t), (double)(t->lower[0] * N + t->lower[1]) + 0.5, "tile %zu", i);
  }
  OK(mmb_array_destroy(a));
}

/* ---- a randomized run against a reference model -------------- */

/* The cache as one list of copies with pins, advice, dirtiness and the
   versions of their data, driven at random: two arrays whose tiles have
   many sizes (an irregular tiling beside a regular one with edge tiles)
   share one space's budget. Acquires (read, write or both; now or on a
   queue), releases (and a release too many, refused), advice, flushes
   (then every element at home is checked), evictions, copies into or out
   of a tile or a whole array (dirty copies go home first, a copy pinned
   for writing makes it MMB_BUSY, a copy out reads what the cache held, and
   after a copy in the next acquire that reads refreshes a copy), budgets
   and clean shares changed (write-ahead under pressure), and destroys,
   refused while a copy is pinned. After each step the counters match the
   model's; every element of each copy acquired for reading is the version
   the model says. (WILLNEED's prefetch is left out: whether it is taken
   depends on when earlier write-backs finish. It has its own tests above.) */
#define MT_ARRAYS 2
#define MT_TILES 12   /* per array: a 3 x 4 grid */
#define MT_ALL (MT_ARRAYS * MT_TILES)

typedef struct mt_tile {
  bool cached, dirty, behind;   /* behind: home written since the copy was made */
  unsigned pins, write_pins;
  mmbAdvice advice;
  long stamp;
  unsigned home, copy;          /* versions of the data at home and in the copy */
  size_t bytes;
  mmbArrayTile *local;
} mt_tile;

typedef struct mt_model {
  mt_tile t[MT_ALL];
  size_t budget;
  double clean_share;
  unsigned long clock, writebacks, drops, hits, misses, fetched;
  unsigned next_version;
} mt_model;

static const size_t mt_dims[MT_ARRAYS][2] = {{48, 40}, {40, 56}};

static double mt_value(size_t k, size_t i, size_t j, unsigned version) {
  return (double)(k + 1) * 1e9 + (double)version * 1e4 + (double)(i * 100 + j);
}

/* Writes (fill) or checks a tile's elements: version `v` of array k's data. */
static void mt_walk(const mmbArrayTile *t, size_t k, unsigned v, bool fill, const char *what,
                    int step) {
  for (size_t i = t->lower[0]; i < t->upper[0]; i++)
    for (size_t j = t->lower[1]; j < t->upper[1]; j++) {
      double *p = &MMB_TILE_AT_2D(t, double, i, j);
      if (fill) *p = mt_value(k, i, j, v);
      else cr_assert_eq(*p, mt_value(k, i, j, v), "step %d: %s of array %zu, (%zu, %zu): %.0f, "
                        "not version %u", step, what, k, i, j, *p, v);
    }
}

static mmbArray *mt_array(size_t k) {
  mmbDimensions d = dims2(mt_dims[k][0], mt_dims[k][1]);
  mmbArray *a = test_array(test_interface(MMB_PROVIDER_SYSTEM, 0), &d, MMB_ROWMAJOR, 0);
  if (k == 0) {
    const size_t bounds[] = {0, 5, 23, 48, 0, 1, 17, 30, 40};
    OK(mmb_array_tile_irregular(a, &(mmbDimensions){2, {3, 4}}, bounds));
  } else {
    OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 16}}));   /* edge tiles of 8 rows or columns */
  }
  for (size_t i = 0; i < MT_TILES; i++) {
    mmbArrayTile *t;
    OK(mmb_tile_at(a, &(mmbIndex){2, {i / 4, i % 4}}, &t));
    mt_walk(t, k, 0, true, "", 0);
  }
  return a;
}

static mmbArrayTile *mt_at(mmbArray *a, size_t i) {
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {i / 4, i % 4}}, &t));
  return t;
}

static size_t mt_sum(const mt_model *m, int what) {   /* 0 used, 1 pinned, 2 dirty */
  size_t n = 0;
  for (size_t g = 0; g < MT_ALL; g++) {
    const mt_tile *t = &m->t[g];
    if (t->cached && (what == 0 || (what == 1 && t->pins) || (what == 2 && t->dirty)))
      n += t->bytes;
  }
  return n;
}

static int mt_rank(const mt_tile *t) {
  if (!t->cached || t->pins || t->advice == MMB_ADVICE_KEEP) return -1;
  return t->advice == MMB_ADVICE_WONTNEED ? 0 : t->advice == MMB_ADVICE_WILLNEED ? 2 : 1;
}

static void mt_write_home(mt_model *m, mt_tile *t) {
  t->home = t->copy;
  t->dirty = false;
  m->writebacks++;
}

static void mt_evict(mt_model *m, mt_tile *t) {
  if (t->dirty) mt_write_home(m, t);
  else m->drops++;
  t->cached = t->behind = false;
  t->advice = MMB_ADVICE_NORMAL;
}

/* Room for `need` more bytes; false (and nothing evicted) when it cannot be made. */
static bool mt_room(mt_model *m, size_t need) {
  size_t evictable = 0;
  for (size_t g = 0; g < MT_ALL; g++)
    if (mt_rank(&m->t[g]) >= 0) evictable += m->t[g].bytes;
  size_t used = mt_sum(m, 0);
  if (need > m->budget || used - evictable > m->budget - need) return false;
  while (mt_sum(m, 0) > m->budget - need) {
    mt_tile *victim = NULL;
    for (int rank = 0; rank <= 2 && !victim; rank++)
      for (size_t g = 0; g < MT_ALL; g++)
        if (mt_rank(&m->t[g]) == rank && (!victim || m->t[g].stamp < victim->stamp))
          victim = &m->t[g];
    mt_evict(m, victim);
  }
  return true;
}

/* A dirty copy released for the last time, the cache under pressure: dirty
   copies go home, least recently used first, down to the dirty share. */
static void mt_write_ahead(mt_model *m, const mt_tile *released) {
  if (mt_sum(m, 0) + released->bytes <= m->budget) return;
  double allowed = (1.0 - m->clean_share) * (double)m->budget;
  for (;;) {
    if ((double)mt_sum(m, 2) <= allowed) return;
    mt_tile *next = NULL;
    for (size_t g = 0; g < MT_ALL; g++) {
      mt_tile *t = &m->t[g];
      if (t->cached && t->dirty && !t->pins && (!next || t->stamp < next->stamp)) next = t;
    }
    if (!next) return;
    mt_write_home(m, next);
  }
}

static void mt_check_stats(mmbMemSpace *fast, const mt_model *m, int step) {
  mmbCacheStats st = stats(fast);
  cr_assert_eq(st.used_bytes, mt_sum(m, 0), "step %d: used", step);
  cr_assert_eq(st.pinned_bytes, mt_sum(m, 1), "step %d: pinned", step);
  cr_assert_eq(st.dirty_bytes, mt_sum(m, 2), "step %d: dirty", step);
  cr_assert_eq(st.writebacks, m->writebacks, "step %d: write-backs", step);
  cr_assert_eq(st.clean_drops, m->drops, "step %d: clean drops", step);
  cr_assert_eq(st.hits, m->hits, "step %d: hits", step);
  cr_assert_eq(st.misses, m->misses, "step %d: misses", step);
  cr_assert_eq(st.fetched_bytes, m->fetched, "step %d: fetched bytes", step);
  cr_assert_eq(st.budget_bytes, m->budget, "step %d: budget", step);
}

static void mt_set_budget(mmbMemSpace *fast, mt_model *m, size_t budget, double share,
                          int step) {
  size_t old = m->budget;
  m->budget = budget;
  bool fits = mt_room(m, 0);
  if (!fits) m->budget = old;
  mmbError err = mmb_space_set_cache(fast, &(mmbCacheConfig){.budget_bytes = budget,
                                                             .clean_share = share});
  cr_assert_eq(err, fits ? MMB_OK : MMB_BUSY, "step %d: a budget of %zu", step, budget);
  if (fits) m->clean_share = share;
}

MMB_TEST(cache, random_operations_match_a_reference_model) {
  mmbMemSpace *fast = fast_space();
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  mmbArray *a[MT_ARRAYS], *scratch[MT_ARRAYS];
  mt_model m = {.next_version = 1};
  for (size_t k = 0; k < MT_ARRAYS; k++) {
    a[k] = mt_array(k);
    scratch[k] = mt_array(k);   /* the same tiling: the source of writes to a home */
    for (size_t i = 0; i < MT_TILES; i++) {
      const mmbArrayTile *t = mt_at(a[k], i);
      m.t[k * MT_TILES + i].bytes =
          (t->upper[0] - t->lower[0]) * (t->upper[1] - t->lower[1]) * sizeof(double);
    }
  }
  mt_set_budget(fast, &m, 12 << 10, 0.5, -1);   /* about a third of the tiles' bytes */
  unsigned seed = 0xcac4e;
  for (int step = 0; step < 20000; step++) {
    size_t g = (size_t)rand_r(&seed) % MT_ALL, k = g / MT_TILES, i = g % MT_TILES;
    mt_tile *mt = &m.t[g];
    int op = rand_r(&seed) % 17;
    if (op < 6 && mt->pins < 2) {   /* acquire (a tile pinned twice is released instead) */
      static const mmbAccessType how[] = {MMB_READ, MMB_READ_WRITE, MMB_WRITE};
      mmbAccessType access = how[rand_r(&seed) % 3];
      bool async = rand_r(&seed) % 4 == 0;
      bool refresh = mt->cached && (access & MMB_READ) && !mt->dirty && mt->behind;
      bool fits = mt->cached || mt_room(&m, mt->bytes);
      mmbArrayTile *l;
      mmbRequest r = {0};
      mmbError err = async ? mmb_tile_acquire_async(mt_at(a[k], i), fast, access, q, &r, &l)
                           : mmb_tile_acquire(mt_at(a[k], i), fast, access, &l);
      cr_assert_eq(err, fits ? MMB_OK : MMB_OUT_OF_MEMORY, "step %d: acquire of %zu", step, g);
      if (err != MMB_OK) continue;
      if (async) OK(mmb_wait(&r));
      bool miss = !mt->cached || refresh;
      m.hits += !miss;
      m.misses += miss;
      if (miss && (access & MMB_READ)) m.fetched += mt->bytes;
      if (miss) mt->copy = mt->home;
      mt->behind = mt->behind && !miss;
      mt->cached = true;
      mt->pins++;
      mt->stamp = (long)++m.clock;
      if (mt->advice == MMB_ADVICE_WILLNEED) mt->advice = MMB_ADVICE_NORMAL;
      mt->local = l;
      if (access & MMB_READ) mt_walk(l, k, mt->copy, false, "the copy", step);
      if (access & MMB_WRITE) {
        mt->write_pins++;
        mt->dirty = true;
        mt->behind = false;
        mt->copy = m.next_version++;
        mt_walk(l, k, mt->copy, true, "", step);
      }
    } else if (op < 11) {   /* release: this tile, or the next one pinned */
      if (mt->cached && !mt->pins && mt->local) FAILS(mmb_tile_release(mt->local), MMB_INVALID_ARG);
      for (size_t n = 1; n < MT_ALL && !mt->pins; n++) mt = &m.t[(g + n) % MT_ALL];
      if (!mt->pins) continue;
      OK(mmb_tile_release(mt->local));
      mt->pins--;
      if (mt->write_pins > mt->pins) mt->write_pins = mt->pins;
      if (mt->dirty && !mt->pins) mt_write_ahead(&m, mt);
    } else if (op == 11) {   /* advise */
      static const mmbAdvice adv[] = {MMB_ADVICE_NORMAL, MMB_ADVICE_WONTNEED, MMB_ADVICE_KEEP};
      mmbAdvice ad = adv[rand_r(&seed) % 3];
      OK(mmb_tile_advise(mt_at(a[k], i), fast, ad));
      if (mt->cached) {
        mt->advice = ad;
        if (ad == MMB_ADVICE_WONTNEED) {
          mt->stamp = -(long)++m.clock;
          if (mt->dirty && !mt->pins) mt_write_home(&m, mt);
        }
      }
    } else if (op == 12) {   /* flush, and every element at home */
      OK(mmb_array_flush(a[k]));
      for (size_t n = 0; n < MT_TILES; n++) {
        mt_tile *t = &m.t[k * MT_TILES + n];
        if (t->dirty) {
          mt_write_home(&m, t);
          t->dirty = t->write_pins > 0;
        }
        mt_walk(mt_at(a[k], n), k, t->home, false, "home after a flush", step);
      }
    } else if (op == 13) {   /* evict the array's copies */
      bool busy = false;
      for (size_t n = 0; n < MT_TILES; n++) {
        mt_tile *t = &m.t[k * MT_TILES + n];
        if (!t->cached) continue;
        if (t->pins) busy = true;
        else mt_evict(&m, t);
      }
      FAILS(mmb_array_evict(a[k], rand_r(&seed) % 2 ? fast : NULL), busy ? MMB_BUSY : MMB_OK);
    } else if (op == 14) {   /* mmb writes or reads a tile's home, or the whole array's */
      bool whole = rand_r(&seed) % 4 == 0, read = rand_r(&seed) % 3 == 0;
      size_t first_tile = whole ? 0 : i, n_tiles = whole ? MT_TILES : 1;
      bool busy = false;   /* a copy pinned for writing */
      for (size_t n = first_tile; n < first_tile + n_tiles; n++)
        busy |= m.t[k * MT_TILES + n].write_pins > 0;
      unsigned v = m.next_version++;
      for (size_t n = first_tile; n < first_tile + n_tiles; n++)
        mt_walk(mt_at(scratch[k], n), k, v, true, "", step);
      mmbArray *dst = read ? scratch[k] : a[k], *src = read ? a[k] : scratch[k];
      mmbError err = whole ? mmb_array_copy(dst, src) : mmb_tile_copy(mt_at(dst, i), mt_at(src, i));
      cr_assert_eq(err, busy ? MMB_BUSY : MMB_OK, "step %d: a %s of a home", step,
                   read ? "read" : "write");
      for (size_t n = first_tile; !busy && n < first_tile + n_tiles; n++) {
        mt_tile *t = &m.t[k * MT_TILES + n];
        if (t->dirty) mt_write_home(&m, t);   /* dirty copies go home first */
        if (read) {
          mt_walk(mt_at(scratch[k], n), k, t->home, false, "what a copy read", step);
        } else {
          t->home = v;
          t->behind = t->cached;
        }
      }
    } else if (op == 15) {   /* destroy: refused while a copy is pinned, else made anew */
      bool pinned = false;
      for (size_t n = 0; n < MT_TILES; n++) pinned |= m.t[k * MT_TILES + n].pins > 0;
      mmbError err = mmb_array_destroy(a[k]);
      cr_assert_eq(err, pinned ? MMB_BUSY : MMB_OK, "step %d: destroy of array %zu", step, k);
      if (pinned) continue;
      for (size_t n = 0; n < MT_TILES; n++) {
        mt_tile *t = &m.t[k * MT_TILES + n];
        if (t->cached && !t->dirty) m.drops++;   /* dirty ones go unwritten, uncounted */
        *t = (mt_tile){.bytes = t->bytes};
      }
      a[k] = mt_array(k);
    } else {   /* another budget and clean share */
      static const size_t budgets[] = {8 << 10, 12 << 10, 16 << 10};
      mt_set_budget(fast, &m, budgets[rand_r(&seed) % 3], rand_r(&seed) % 2 ? 0.5 : 0.0,
                    step);
    }
    mt_check_stats(fast, &m, step);
  }
  for (size_t g = 0; g < MT_ALL; g++)
    while (m.t[g].pins--) OK(mmb_tile_release(m.t[g].local));
  for (size_t k = 0; k < MT_ARRAYS; k++) {
    OK(mmb_array_flush(a[k]));
    for (size_t i = 0; i < MT_TILES; i++) {
      const mt_tile *t = &m.t[k * MT_TILES + i];
      mt_walk(mt_at(a[k], i), k, t->dirty ? t->copy : t->home, false, "home at the end", -1);
    }
    OK(mmb_array_destroy(a[k]));
    OK(mmb_array_destroy(scratch[k]));
  }
  OK(mmb_queue_destroy(NULL, &q));
  cr_assert_eq(stats(fast).used_bytes, 0);
}

/* ---- the out-of-memory chain ----------------------------------------------------- */

static mmbMemSpace *limited(size_t bytes) {
  mmbMemSpace *s;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = bytes}, &s));
  return s;
}

static mmbMemInterface *basic_on(mmbMemSpace *s, mmbMemSpace *fallback) {
  mmbMemInterface *i;
  OK(mmb_request_interface(s, &(mmbMemInterfaceConfig){.provider = MMB_PROVIDER_SYSTEM,
                                                        .fallback = fallback}, &i));
  return i;
}

typedef struct handler_state {
  mmbAllocation *held;      /* freed on the first call */
  mmbMemInterface *iface;   /* allocates there when set */
  mmbOomAction says;
  unsigned calls, last_attempt;
  mmbError inner;           /* what its own allocation got */
  int order, *clock;
} handler_state;

static mmbOomAction handler(mmbMemSpace *space, size_t need, unsigned attempt, void *arg) {
  handler_state *h = arg;
  h->calls++;
  h->last_attempt = attempt;
  if (h->clock) h->order = ++*h->clock;
  if (h->held) {
    OK(mmb_free(h->held));
    h->held = NULL;
    return MMB_OOM_RETRY;
  }
  if (h->iface) {
    mmbAllocation *a;
    h->inner = mmb_allocate(need, h->iface, &a);
    if (h->inner == MMB_OK) OK(mmb_free(a));
  }
  return h->says;
}

/* A pool on s that keeps a freed segment of `bytes`. */
static mmbMemInterface *pool_holding(mmbMemSpace *s, size_t bytes, unsigned flags) {
  mmbMemInterface *pool;
  mmbAllocation *a;
  mmbStats st;
  OK(mmb_request_interface(s, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL,
                                                        .flags = flags}, &pool));
  OK(mmb_allocate(bytes, pool, &a));
  OK(mmb_free(a));
  OK(mmb_interface_get_stats(pool, &st));
  cr_assert_geq(st.reserved_current, bytes, "the pool holds its segment");
  return pool;
}

/* A pool gives back the segments it caches before it refuses: the chain
   never runs for that. */
MMB_TEST(oom, a_pool_gives_back_its_own_cache_before_the_chain) {
  mmbMemSpace *s = limited(8 << 20);
  handler_state h = {.says = MMB_OOM_GIVE_UP};
  OK(mmb_space_add_oom_handler(s, handler, &h));
  mmbMemInterface *pool = pool_holding(s, 3 << 20, 0);
  mmbAllocation *a;
  OK(mmb_allocate(6 << 20, pool, &a));   /* past the limit with that segment: it goes first */
  mmbCacheStats st;
  OK(mmb_space_get_cache_stats(s, &st));
  cr_assert(st.oom_rounds == 0 && st.handler_calls == 0 && h.calls == 0, "%llu rounds, %llu calls",
            (unsigned long long)st.oom_rounds, (unsigned long long)st.handler_calls);
  OK(mmb_free(a));
  OK(mmb_space_remove_oom_handler(s, handler, &h));
  FAILS(mmb_space_remove_oom_handler(s, handler, &h), MMB_INVALID_ARG);
  OK(mmb_interface_destroy(pool));
}

/* Step 1 trims the space's other thread-safe interfaces too: a pool that
   keeps a freed segment gives it back for an allocation elsewhere in the
   space (the handler is never asked). A pool that is not thread-safe
   belongs to its thread, and keeps its segment: the handler is asked. */
static void trims_the_spaces_other_pools(unsigned flags) {
  mmbMemSpace *s = limited(8 << 20);
  mmbMemInterface *keeper = pool_holding(s, 5 << 20, flags), *basic = basic_on(s, NULL);
  handler_state h = {.says = MMB_OOM_GIVE_UP};
  OK(mmb_space_add_oom_handler(s, handler, &h));
  mmbAllocation *a;
  mmbStats ks;
  mmbError e = mmb_allocate(6 << 20, basic, &a);   /* past the limit with that segment */
  OK(mmb_interface_get_stats(keeper, &ks));
  if (flags & MMB_INTERFACE_THREAD_SAFE) {
    OK(e);
    cr_assert_eq(ks.reserved_current, 0, "the other pool kept %zu bytes", ks.reserved_current);
    cr_assert_eq(h.calls, 0, "the handler was asked before the trim");
    OK(mmb_free(a));
  } else {
    FAILS(e, MMB_OUT_OF_MEMORY);
    cr_assert_geq(ks.reserved_current, 5 << 20, "another thread's pool was trimmed");
    cr_assert_eq(h.calls, 1);
  }
  OK(mmb_space_remove_oom_handler(s, handler, &h));
  OK(mmb_interface_destroy(keeper));
  OK(mmb_interface_destroy(basic));
}

MMB_TEST(oom, the_first_step_trims_the_spaces_thread_safe_pools) {
  trims_the_spaces_other_pools(MMB_INTERFACE_THREAD_SAFE);
}

MMB_TEST(oom, a_pool_of_one_thread_is_left_to_its_thread) { trims_the_spaces_other_pools(0); }

MMB_TEST(oom, cached_tiles_go_before_the_handlers_are_asked) {
  mmbMemSpace *s = limited(2 << 20);
  mmbArray *a = tiled_array(test_interface(MMB_PROVIDER_SYSTEM, 0), 0);
  mmbMemInterface *iface = basic_on(s, NULL);
  handler_state h = {.says = MMB_OOM_GIVE_UP};
  OK(mmb_space_add_oom_handler(s, handler, &h));
  mmbArrayTile *l;
  for (size_t i = 0; i < TILES; i++) {   /* 16 copies in the space, one dirty */
    OK(mmb_tile_acquire(tile(a, i), s, i == 0 ? MMB_READ_WRITE : MMB_READ, &l));
    if (i == 0) MMB_TILE_AT_2D(l, double, 0, 0) = -3.0;
    OK(mmb_tile_release(l));
  }
  mmbAllocation *big;
  /* the duplicates' pool holds about 2 MiB: room only once the copies go */
  OK(mmb_allocate((2 << 20) - (64 << 10), iface, &big));
  mmbCacheStats st;
  OK(mmb_space_get_cache_stats(s, &st));
  cr_assert_eq(st.used_bytes, 0, "every copy went");
  cr_assert(st.clean_drops == TILES - 1 && st.writebacks == 1, "%llu drops, %llu write-backs",
            (unsigned long long)st.clean_drops, (unsigned long long)st.writebacks);
  cr_assert_eq(first(tile(a, 0)), -3.0, "the dirty one was written home");
  cr_assert(st.oom_rounds >= 1 && h.calls == 0, "no handler was needed");
  OK(mmb_free(big));
  OK(mmb_space_remove_oom_handler(s, handler, &h));
  OK(mmb_interface_destroy(iface));
  OK(mmb_array_destroy(a));
}

MMB_TEST(oom, handlers_free_give_up_or_retry_at_most_three_rounds) {
  mmbMemSpace *s = limited(1 << 20);
  mmbMemInterface *iface = basic_on(s, NULL);
  mmbAllocation *held, *a;
  OK(mmb_allocate(768 << 10, iface, &held));
  int clock = 0;
  handler_state freer = {.held = held, .says = MMB_OOM_GIVE_UP, .clock = &clock};
  handler_state quitter = {.says = MMB_OOM_GIVE_UP, .clock = &clock};
  OK(mmb_space_add_oom_handler(s, handler, &quitter));
  OK(mmb_space_add_oom_handler(s, handler, &freer));
  FAILS(mmb_space_add_oom_handler(s, handler, &freer), MMB_INVALID_ARG);   /* twice */
  OK(mmb_allocate(512 << 10, iface, &a));   /* the second handler frees: served */
  cr_assert(quitter.calls == 1 && freer.calls == 1 && quitter.order < freer.order,
            "called once each, in the order they were added");
  /* every handler gives up: refused after one round */
  mmbAllocation *b;
  FAILS(mmb_allocate(768 << 10, iface, &b), MMB_OUT_OF_MEMORY);
  cr_assert(quitter.calls == 2 && freer.calls == 2);
  /* one that always says retry: three rounds, then refused */
  quitter.says = MMB_OOM_RETRY;
  FAILS(mmb_allocate(768 << 10, iface, &b), MMB_OUT_OF_MEMORY);
  cr_assert_eq(quitter.calls, 2 + MMB_OOM_HANDLER_ROUNDS);
  cr_assert_eq(quitter.last_attempt, MMB_OOM_HANDLER_ROUNDS - 1);
  mmbCacheStats st;
  OK(mmb_space_get_cache_stats(s, &st));
  cr_assert_eq(st.handler_calls, quitter.calls + freer.calls);
  OK(mmb_space_remove_oom_handler(s, handler, &quitter));
  OK(mmb_space_remove_oom_handler(s, handler, &freer));
  OK(mmb_free(a));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(oom, a_handler_that_allocates_in_the_space_gets_an_error) {
  mmbMemSpace *s = limited(1 << 20);
  mmbMemInterface *iface = basic_on(s, NULL);
  mmbAllocation *held, *b;
  OK(mmb_allocate(768 << 10, iface, &held));
  handler_state h = {.iface = iface, .says = MMB_OOM_GIVE_UP};
  OK(mmb_space_add_oom_handler(s, handler, &h));
  FAILS(mmb_allocate(768 << 10, iface, &b), MMB_OUT_OF_MEMORY);
  cr_assert(h.calls == 1 && h.inner == MMB_OUT_OF_MEMORY, "its allocation was refused at once");
  FAILS(mmb_space_add_oom_handler(NULL, handler, &h), MMB_INVALID_ARG);
  FAILS(mmb_space_add_oom_handler(s, NULL, &h), MMB_INVALID_ARG);
  OK(mmb_space_remove_oom_handler(s, handler, &h));
  OK(mmb_free(held));
  OK(mmb_interface_destroy(iface));
}

/* A handler that the cache's own allocation reached (a fetch its space
   refused) runs while the cache is at work on its thread. The cache's
   calls that would change it are refused with MMB_BUSY (before, each one
   waited on the lock its own thread held: the program hung), its settings
   and counters can be read, and what the handler frees the fetch gets. */
typedef struct reentry {
  mmbArray *a, *other;
  mmbMemSpace *spare;
  mmbAllocation *ballast;
  unsigned calls;
  mmbError busy[9], read[2];
} reentry;

static mmbOomAction reentering(mmbMemSpace *space, size_t need, unsigned attempt, void *arg) {
  reentry *r = arg;
  if (r->calls++) return MMB_OOM_GIVE_UP;
  mmbCacheStats st;
  mmbCacheConfig cfg;
  mmbArrayTile *local = NULL;
  r->read[0] = mmb_space_get_cache_stats(space, &st);
  r->read[1] = mmb_space_get_cache(space, &cfg);
  r->busy[0] = mmb_space_set_cache(space, &cfg);
  r->busy[1] = mmb_array_flush(r->a);
  r->busy[2] = mmb_array_evict(r->other, space);
  r->busy[3] = mmb_tile_acquire(tile(r->other, 1), space, MMB_READ, &local);
  r->busy[4] = mmb_tile_advise(tile(r->other, 2), space, MMB_ADVICE_WILLNEED);
  r->busy[5] = mmb_tile_release(tile(r->other, 0));
  r->busy[6] = mmb_array_destroy(r->other);   /* it has a copy cached */
  r->busy[7] = mmb_space_release(r->spare);
  r->busy[8] = mmb_register_memory(MMB_DRAM, MMB_CPU,   /* would release the one there */
                                   &(mmbMemSpaceConfig){.size_limit = 2 << 20}, NULL);
  OK(mmb_free(r->ballast));
  r->ballast = NULL;
  return MMB_OOM_RETRY;
}

MMB_TEST(oom, a_handler_the_caches_fetch_reached_gets_busy_not_a_hang) {
  alarm(60);   /* the old code hung here: end the test rather than the suite */
  mmbMemSpace *s = limited(256 << 10), *home = fast_space();
  mmbMemInterface *on_home = basic_on(home, NULL), *on_s = basic_on(s, NULL);
  reentry r = {.a = tiled_array(on_home, 0), .other = tiled_array(on_home, 1000),
               .spare = limited(1 << 20)};
  OK(mmb_space_set_cache(s, &(mmbCacheConfig){.budget_bytes = 1 << 20, .clean_share = 0.5}));
  mmbArrayTile *l;
  OK(mmb_tile_acquire(tile(r.other, 0), s, MMB_READ, &l));   /* other has a copy in s */
  OK(mmb_tile_release(l));
  mmbStats used;
  OK(mmb_space_get_stats(s, &used));
  OK(mmb_allocate((256 << 10) - used.reserved_current, on_s, &r.ballast));   /* s is full */
  OK(mmb_register_memory(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 1 << 20}, NULL));
  OK(mmb_space_add_oom_handler(s, reentering, &r));
  OK(mmb_tile_acquire(tile(r.a, 5), s, MMB_READ_WRITE, &l));   /* refused, then freed for */
  cr_assert_eq(r.calls, 1, "the handler was asked once (%u)", r.calls);
  cr_assert_null(r.ballast, "the handler freed its ballast");
  for (int k = 0; k < 2; k++) OK(r.read[k]);
  for (int k = 0; k < 9; k++)
    cr_assert_eq(r.busy[k], MMB_BUSY, "call %d from the handler got %d", k, (int)r.busy[k]);
  cr_assert_eq(first(l), first(tile(r.a, 5)), "the copy holds the tile");
  MMB_TILE_AT_2D(l, double, l->lower[0], l->lower[1]) = -7.0;
  OK(mmb_tile_release(l));
  OK(mmb_array_flush(r.a));
  cr_assert_eq(first(tile(r.a, 5)), -7.0);
  mmbCacheStats st = stats(s);
  cr_assert_eq(st.used_bytes, 2 * TILE_BYTES, "both copies stay cached");
  OK(mmb_space_remove_oom_handler(s, reentering, &r));
  OK(mmb_array_destroy(r.other));
  OK(mmb_array_destroy(r.a));
  OK(mmb_space_release(r.spare));
  OK(mmb_interface_destroy(on_s));
  OK(mmb_interface_destroy(on_home));
  OK(mmb_space_release(s));
  OK(mmb_space_release(home));
  alarm(0);
}

/* The chain goes on with the refused allocation's interface (and so its
   space) after each handler: a handler cannot destroy that interface (nor
   then release the space), nor finalize mmb. Before, it could, and the
   chain's next try read the freed interface. */
typedef struct pulls_the_rug {
  mmbMemInterface *iface;
  mmbMemSpace *space;
  mmbAllocation *ballast;
  mmbError destroyed, released, finalized;
} pulls_the_rug;

static mmbOomAction pulling(mmbMemSpace *space, size_t need, unsigned attempt, void *arg) {
  pulls_the_rug *p = arg;
  p->destroyed = mmb_interface_destroy(p->iface);
  p->released = mmb_space_release(p->space);
  p->finalized = mmb_finalize();
  OK(mmb_free(p->ballast));
  return MMB_OOM_RETRY;
}

MMB_TEST(oom, a_handler_cannot_destroy_the_interface_it_runs_for) {
  pulls_the_rug p = {.space = limited(1 << 20)};
  p.iface = basic_on(p.space, NULL);
  mmbMemInterface *other = basic_on(p.space, NULL);
  OK(mmb_allocate(768 << 10, other, &p.ballast));
  OK(mmb_space_add_oom_handler(p.space, pulling, &p));
  mmbAllocation *a;
  OK(mmb_allocate(512 << 10, p.iface, &a));   /* refused, then served once the ballast went */
  FAILS(p.destroyed, MMB_BUSY);
  FAILS(p.released, MMB_BUSY);
  FAILS(p.finalized, MMB_INVALID_STATE);
  cr_assert(mmb_is_initialized());
  memset(mmb_allocation_ptr(a), 7, 512 << 10);
  OK(mmb_free(a));
  OK(mmb_space_remove_oom_handler(p.space, pulling, &p));
  OK(mmb_interface_destroy(p.iface));   /* outside the chain: as always */
  OK(mmb_interface_destroy(other));
  OK(mmb_space_release(p.space));
}

/* mmb_region_alloc's blocks run the chain as mmb_allocate's allocations do
   (before, a full space refused a region's new block at once); a handler
   that destroys the region gets the allocation refused, not a crash. */
static mmbRegion *doomed;
static mmbOomAction destroys_region(mmbMemSpace *space, size_t need, unsigned attempt,
                                    void *arg) {
  OK(mmb_region_destroy(doomed));
  return MMB_OOM_RETRY;
}

MMB_TEST(oom, a_regions_new_block_runs_the_chain) {
  mmbMemSpace *s = limited(1 << 20);
  mmbMemInterface *iface = basic_on(s, NULL);
  mmbAllocation *held;
  OK(mmb_allocate(768 << 10, iface, &held));
  handler_state h = {.held = held, .says = MMB_OOM_GIVE_UP};
  OK(mmb_space_add_oom_handler(s, handler, &h));
  mmbRegion *r;
  OK(mmb_region_create(iface, &(mmbRegionOptions){.block_size = 512 << 10}, &r));
  void *p = NULL;
  OK(mmb_region_alloc(r, 1000, 0, &p));   /* its first block: room once the handler freed */
  cr_assert(h.calls == 1 && !h.held && p, "the handler freed its block for the region's");
  memset(p, 1, 1000);
  void *big;   /* a dedicated block past the limit: the handler is asked, and gives up */
  FAILS(mmb_region_alloc(r, 600 << 10, 0, &big), MMB_OUT_OF_MEMORY);
  cr_assert_eq(h.calls, 2);
  OK(mmb_space_remove_oom_handler(s, handler, &h));
  OK(mmb_region_destroy(r));

  OK(mmb_allocate(768 << 10, iface, &held));
  OK(mmb_region_create(iface, &(mmbRegionOptions){.block_size = 512 << 10}, &doomed));
  OK(mmb_space_add_oom_handler(s, destroys_region, NULL));
  FAILS(mmb_region_alloc(doomed, 1000, 0, &p), MMB_INVALID_ARG);
  OK(mmb_space_remove_oom_handler(s, destroys_region, NULL));
  OK(mmb_free(held));
  OK(mmb_interface_destroy(iface));
}

static mmbMemSpace *space_of_array(const mmbArray *a) {
  mmbMemInterface *i;
  mmbMemSpace *s;
  OK(mmb_array_get_interface(a, &i));
  OK(mmb_interface_get_space(i, &s));
  return s;
}

/* Tiles of `a` in `s`, checking that they come first in the grid's order
   and that every tile holds its values (element (i, j) = i * n + j). */
static size_t tiles_placed_in(mmbArray *a, mmbMemSpace *s, size_t n) {
  mmbDimensions grid;
  OK(mmb_array_tile_grid(a, &grid));
  size_t placed = 0, k = 0;
  for (size_t r = 0; r < grid.d[0]; r++)
    for (size_t c = 0; c < grid.d[1]; c++, k++) {
      mmbArrayTile *t;
      OK(mmb_tile_at(a, &(mmbIndex){2, {r, c}}, &t));
      if (t->space == s) cr_assert_eq(placed++, k, "tile %zu placed after one that was not", k);
      for (size_t i = t->lower[0]; i < t->upper[0]; i++)
        for (size_t j = t->lower[1]; j < t->upper[1]; j++)
          cr_assert_eq(MMB_TILE_AT_2D(t, double, i, j), (double)(i * n + j));
    }
  return placed;
}

/* An array too large for its interface's space lands in the fallback (its
   interface says so) and its tiling places tiles back in the preferred
   space, in order, while they fit, data and all; tiling again brings them
   home first and places anew. An array that fits is not moved. */
MMB_TEST(oom, an_arrays_tiles_are_placed_where_they_fit) {
  mmbMemSpace *s = limited(1 << 20), *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface = basic_on(s, dram);
  size_t n = 512;   /* 2 MiB of doubles */
  mmbArray *a = test_array(iface, &(mmbDimensions){2, {n, n}}, MMB_ROWMAJOR, 0);
  cr_assert_eq(space_of_array(a), dram, "the home landed in the fallback");
  double *p = mmb_array_ptr(a);
  for (size_t i = 0; i < n * n; i++) p[i] = (double)i;
  OK(mmb_array_tile(a, &(mmbDimensions){2, {128, 128}}));   /* 16 tiles of 128 KiB */
  size_t placed = tiles_placed_in(a, s, n);
  cr_assert(placed >= 4 && placed <= 8, "%zu tiles of 128 KiB placed in 1 MiB", placed);
  mmbStats st;
  OK(mmb_space_get_stats(s, &st));
  cr_assert_leq(st.reserved_current, (size_t)1 << 20);
  mmbArray *dup;   /* the home's placed blocks are stale: whole-array moves refused */
  FAILS(mmb_array_duplicate(a, iface, MMB_READ, &dup), MMB_INVALID_STATE);
  FAILS(mmb_array_migrate(a, iface, MMB_READ), MMB_INVALID_STATE);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {256, 256}}));   /* 4 tiles of 512 KiB */
  placed = tiles_placed_in(a, s, n);
  cr_assert(placed == 1 || placed == 2, "%zu tiles of 512 KiB placed in 1 MiB", placed);
  mmbArrayTile *t;   /* a tile the caller moves is the caller's: tiling waits for it */
  mmbMemSpace *other = limited(4 << 20);
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 1}}, &t));
  cr_assert_eq(t->space, dram);
  OK(mmb_tile_migrate(t, other, MMB_READ, NULL));
  FAILS(mmb_array_tile(a, &(mmbDimensions){2, {128, 128}}), MMB_BUSY);
  OK(mmb_tile_migrate(t, dram, MMB_READ, NULL));   /* home */
  OK(mmb_tile_at(a, &(mmbIndex){2, {0, 0}}, &t));   /* a placed one the caller moves home */
  cr_assert_eq(t->space, s);
  OK(mmb_tile_migrate(t, dram, MMB_READ, NULL));
  OK(mmb_array_tile(a, &(mmbDimensions){2, {128, 128}}));
  cr_assert_geq(tiles_placed_in(a, s, n), 4);
  OK(mmb_space_release(other));
  OK(mmb_array_destroy(a));
  OK(mmb_space_get_stats(s, &st));
  cr_assert_eq(st.used_current, 0);
  mmbArray *small = test_array(iface, &(mmbDimensions){2, {64, 64}}, MMB_ROWMAJOR, 0);
  cr_assert_eq(space_of_array(small), s);
  OK(mmb_array_tile(small, &(mmbDimensions){2, {16, 16}}));
  OK(mmb_array_destroy(small));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(oom, the_fallback_serves_what_the_space_cannot) {
  mmbMemSpace *s = limited(1 << 20), *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface = basic_on(s, dram);
  FAILS(mmb_request_interface(s, &(mmbMemInterfaceConfig){.fallback = s}, &(mmbMemInterface *){0}),
        MMB_INVALID_ARG);
  mmbAllocation *near, *far;
  OK(mmb_allocate(512 << 10, iface, &near));
  OK(mmb_allocate(4 << 20, iface, &far));   /* past the limit: from DRAM */
  mmbMemSpace *where;
  OK(mmb_allocation_space(near, &where));
  cr_assert_eq(where, s);
  OK(mmb_allocation_space(far, &where));
  cr_assert_eq(where, dram);
  memset(mmb_allocation_ptr(far), 1, 4 << 20);
  mmbCacheStats st;
  OK(mmb_space_get_cache_stats(s, &st));
  cr_assert_eq(st.fallback_bytes, 4 << 20);
  FAILS(mmb_interface_destroy(iface), MMB_BUSY);   /* what the fallback served is live */
  OK(mmb_free(far));
  OK(mmb_free(near));
  FAILS(mmb_allocation_space(far, &where), MMB_INVALID_ARG);
  FAILS(mmb_allocation_space(near, NULL), MMB_INVALID_ARG);
  /* the fallback's interface destroyed by a caller: then the interface is strict */
  OK(mmb_allocate(4 << 20, iface, &far));
  mmbMemInterface *theirs;
  OK(mmb_allocation_get_interface(far, &theirs));
  OK(mmb_free(far));
  OK(mmb_interface_destroy(theirs));
  FAILS(mmb_allocate(4 << 20, iface, &far), MMB_OUT_OF_MEMORY);
  OK(mmb_interface_destroy(iface));
}
