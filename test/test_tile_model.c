/* A randomized model test (fixed seed): random arrays, tilings and tile
   transports across three spaces, checked element by element against a
   plain reference array after every round. */
#include "arrays.h"

typedef struct model {
  mmbArray *a;
  size_t rank, dims[3], esize;
  mmbElementType type;
  long *ref;           /* row-major over dims */
  mmbMemSpace *spaces[3];
  uint64_t seed;
} model;

static size_t pick(model *m, size_t n) { return (size_t)(test_rand(&m->seed) % n); }

static size_t ref_index(const model *m, const size_t *idx) {
  size_t lin = 0;
  for (size_t k = 0; k < m->rank; k++) lin = lin * m->dims[k] + idx[k];
  return lin;
}

static long load(const model *m, const void *p) {
  return m->esize == 4 ? (long)*(const int32_t *)p : (long)*(const int64_t *)p;
}
static void store(const model *m, void *p, long v) {
  if (m->esize == 4) *(int32_t *)p = (int32_t)v;
  else *(int64_t *)p = v;
}

static void for_tile(const mmbArrayTile *t, void (*fn)(model *, const mmbArrayTile *, size_t *),
                     model *m) {
  size_t idx[MMB_MAX_DIMS];
  for (size_t k = 0; k < t->rank; k++) idx[k] = t->lower[k];
  do fn(m, t, idx);
  while (index_next(idx, t->lower, t->upper, t->rank));
}

static void check_elem(model *m, const mmbArrayTile *t, size_t *idx) {
  long got = load(m, tile_elem(t, idx)), want = m->ref[ref_index(m, idx)];
  cr_assert_eq(got, want, "element %zu,%zu,%zu: %ld, expected %ld", idx[0],
               m->rank > 1 ? idx[1] : 0, m->rank > 2 ? idx[2] : 0, got, want);
}

static void randomize_elem(model *m, const mmbArrayTile *t, size_t *idx) {
  store(m, tile_elem(t, idx), (long)pick(m, 2001) - 1000);
}

static mmbMergeType merge_now;
static void fold_ref(model *m, const mmbArrayTile *d, size_t *idx) {
  long *o = &m->ref[ref_index(m, idx)], x = load(m, tile_elem(d, idx));
  switch (merge_now) {
    case MMB_MERGE_OVERWRITE: *o = x; break;
    case MMB_MERGE_SUM: *o += x; break;
    case MMB_MERGE_MIN: *o = x < *o ? x : *o; break;
    case MMB_MERGE_MAX: *o = x > *o ? x : *o; break;
  }
}

static void write_ref(model *m, const mmbArrayTile *t, size_t *idx) {
  m->ref[ref_index(m, idx)] = load(m, tile_elem(t, idx));
}

static mmbLayout *random_layout(model *m, bool allow_null) {
  if (allow_null && pick(m, 3) == 0) return NULL;
  size_t pads[] = {0, 32, 64};
  mmbLayout *l = test_layout(m->esize, m->rank, pick(m, 2) ? MMB_ROWMAJOR : MMB_COLMAJOR,
                             pads[pick(m, 3)], m->type);
  return l;
}

static mmbArrayTile *random_tile(model *m) {
  mmbDimensions g;
  OK(mmb_array_tile_grid(m->a, &g));
  mmbIndex idx = {m->rank, {0}};
  for (size_t k = 0; k < m->rank; k++) idx.d[k] = pick(m, g.d[k]);
  mmbArrayTile *t;
  OK(mmb_tile_at(m->a, &idx, &t));
  return t;
}

static void op_duplicate_merge(model *m) {
  mmbArrayTile *t = random_tile(m), *d;
  mmbAccessType acc[] = {MMB_READ, MMB_WRITE, MMB_READ_WRITE};
  mmbAccessType a = acc[pick(m, 3)];
  mmbLayout *l = random_layout(m, true);
  OK(mmb_tile_duplicate(t, m->spaces[pick(m, 3)], a, l, &d));
  if (l) OK(mmb_layout_destroy(l));
  if (a & MMB_READ) for_tile(d, check_elem, m);
  if (a & MMB_WRITE) for_tile(d, randomize_elem, m);
  merge_now = (mmbMergeType)pick(m, 4);
  if (a & MMB_WRITE) for_tile(d, fold_ref, m);
  OK(mmb_tile_merge(d, merge_now));
}

static void op_migrate(model *m) {
  mmbArrayTile *t = random_tile(m);
  mmbLayout *l = random_layout(m, true);
  OK(mmb_tile_migrate(t, m->spaces[pick(m, 3)], MMB_READ_WRITE, l));
  if (l) OK(mmb_layout_destroy(l));
  for_tile(t, check_elem, m);
  if (pick(m, 2)) {
    for_tile(t, randomize_elem, m);
    for_tile(t, write_ref, m);
  }
}

static void op_copy(model *m) {
  mmbArrayTile *s = random_tile(m), *d = random_tile(m);
  if (memcmp(s->dim, d->dim, m->rank * sizeof *s->dim)) return;
  /* the reference copies by position, through a scratch buffer */
  size_t n = 1;
  for (size_t k = 0; k < m->rank; k++) n *= s->dim[k];
  long *tmp = malloc(n * sizeof *tmp);
  size_t idx[MMB_MAX_DIMS], i = 0;
  for (size_t k = 0; k < m->rank; k++) idx[k] = s->lower[k];
  do tmp[i++] = m->ref[ref_index(m, idx)];
  while (index_next(idx, s->lower, s->upper, m->rank));
  OK(mmb_tile_copy(d, s));
  for (size_t k = 0; k < m->rank; k++) idx[k] = d->lower[k];
  i = 0;
  do m->ref[ref_index(m, idx)] = tmp[i++];
  while (index_next(idx, d->lower, d->upper, m->rank));
  free(tmp);
}

static void bring_home(model *m, mmbMemSpace *home) {
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(m->a, &(mmbTileIteratorOptions){.schedule = MMB_SCHEDULE_MORTON}, &it));
  mmbError walk = MMB_OK;
  for (mmbArrayTile *t; walk == MMB_OK && (t = mmb_tile_iterator_tile(it));
       walk = mmb_tile_iterator_next(it))
    OK(mmb_tile_migrate(t, home, MMB_READ_WRITE, NULL));
  OK(walk);
  OK(mmb_tile_iterator_destroy(it));
}

static void check_whole(model *m, mmbArray *a) {
  mmbArrayTile *t;
  mmbArray *saved = m->a;
  m->a = a;
  OK(mmb_array_tile(a, &(mmbDimensions){m->rank, {m->dims[0], m->dims[1], m->dims[2]}}));
  OK(mmb_tile_at(a, &(mmbIndex){m->rank, {0}}, &t));
  for_tile(t, check_elem, m);
  m->a = saved;
}

MMB_TEST(tile_model, random_transports_match_a_reference) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemInterface *pinned = test_interface(MMB_PROVIDER_PINNED, 0);
  model m = {.seed = 20261122};
  OK(mmb_interface_get_space(sys, &m.spaces[0]));
  m.spaces[1] = limited_space(8 << 20);
  m.spaces[2] = limited_space(2 << 20);
  for (int round = 0; round < 60; round++) {
    m.rank = 1 + pick(&m, 3);
    size_t n = 1;
    for (size_t k = 0; k < 3; k++) {
      m.dims[k] = k < m.rank ? 1 + pick(&m, 12) : 1;
      n *= m.dims[k];
    }
    m.esize = pick(&m, 2) ? 4 : 8;
    m.type = m.esize == 4 ? MMB_TYPE_INT32 : MMB_TYPE_INT64;
    m.ref = calloc(n, sizeof *m.ref);
    mmbLayout *l = random_layout(&m, false);
    mmbDimensions d = {m.rank, {m.dims[0], m.dims[1], m.dims[2]}};
    OK(mmb_array_create(&d, l, pick(&m, 2) ? sys : pinned, MMB_READ_WRITE, &m.a));
    OK(mmb_layout_destroy(l));
    mmbArrayTile *whole;
    OK(mmb_tile_at(m.a, &(mmbIndex){m.rank, {0}}, &whole));
    for_tile(whole, randomize_elem, &m);
    for_tile(whole, write_ref, &m);
    mmbDimensions chunk = {m.rank, {0}};
    for (size_t k = 0; k < m.rank; k++) chunk.d[k] = 1 + pick(&m, m.dims[k] + 1);
    OK(mmb_array_tile(m.a, &chunk));
    for (int op = 0; op < 12; op++) {
      switch (pick(&m, 3)) {
        case 0: op_duplicate_merge(&m); break;
        case 1: op_migrate(&m); break;
        default: op_copy(&m); break;
      }
    }
    bring_home(&m, m.spaces[0]);
    /* a whole-array duplicate in another order, checked, then dropped */
    mmbArray *dup;
    OK(mmb_array_duplicate(m.a, pick(&m, 2) ? sys : pinned, MMB_READ, &dup));
    check_whole(&m, dup);
    OK(mmb_array_merge(dup, MMB_MERGE_OVERWRITE));
    check_whole(&m, m.a);
    OK(mmb_array_destroy(m.a));
    free(m.ref);
  }
  OK(mmb_space_release(m.spaces[1]));
  OK(mmb_space_release(m.spaces[2]));
  OK(mmb_interface_destroy(sys));
  OK(mmb_interface_destroy(pinned));
}
