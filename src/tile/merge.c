/* Folding a duplicate into its origin: overwrite is a copy; SUM, MIN and MAX
   run per element type over contiguous runs on the host, as does a user
   merge. A side the host cannot reach is staged, and the origin's staged
   copy goes back when the fold is done. */
#include "tile/internal.h"

typedef void (*run_fn)(void *dst, const void *src, size_t n);

/* Integer sums wrap (two's complement), as they would on any GPU, instead
   of being undefined. */
#define RUNS(T, U, name)                                                      \
  static void sum_##name(void *d, const void *s, size_t n) {                  \
    T *x = d;                                                                 \
    const T *y = s;                                                           \
    for (size_t i = 0; i < n; i++) x[i] = (T)((U)x[i] + (U)y[i]);             \
  }                                                                           \
  static void min_##name(void *d, const void *s, size_t n) {                  \
    T *x = d;                                                                 \
    const T *y = s;                                                           \
    for (size_t i = 0; i < n; i++) x[i] = y[i] < x[i] ? y[i] : x[i];          \
  }                                                                           \
  static void max_##name(void *d, const void *s, size_t n) {                  \
    T *x = d;                                                                 \
    const T *y = s;                                                           \
    for (size_t i = 0; i < n; i++) x[i] = y[i] > x[i] ? y[i] : x[i];          \
  }

RUNS(float, float, f32)
RUNS(double, double, f64)
RUNS(int32_t, uint32_t, i32)
RUNS(int64_t, uint64_t, i64)

static const run_fn runs[3][5] = {
  [MMB_MERGE_SUM - 1] = {[MMB_TYPE_FLOAT] = sum_f32, [MMB_TYPE_DOUBLE] = sum_f64,
                         [MMB_TYPE_INT32] = sum_i32, [MMB_TYPE_INT64] = sum_i64},
  [MMB_MERGE_MIN - 1] = {[MMB_TYPE_FLOAT] = min_f32, [MMB_TYPE_DOUBLE] = min_f64,
                         [MMB_TYPE_INT32] = min_i32, [MMB_TYPE_INT64] = min_i64},
  [MMB_MERGE_MAX - 1] = {[MMB_TYPE_FLOAT] = max_f32, [MMB_TYPE_DOUBLE] = max_f64,
                         [MMB_TYPE_INT32] = max_i32, [MMB_TYPE_INT64] = max_i64},
};

mmbError mmb__merge_op_check(const char *func, const mmb__merge_op *op) {
  if (op->fn) return MMB_OK;
  MMB__ARG((unsigned)op->type > MMB_MERGE_MAX, func, "unknown merge type %d", (int)op->type);
  MMB__ARG(op->type != MMB_MERGE_OVERWRITE && op->etype == MMB_TYPE_BYTES, func,
           "SUM, MIN and MAX need an element type: mmb_layout_set_element_type");
  return MMB_OK;
}

typedef struct fold {
  const mmb__merge_op *op;
  run_fn run;
  size_t es, len;     /* elements per contiguous run */
  size_t first;       /* the first plan dim walked by the recursion */
} fold;

static void fold_run(const fold *f, char *d, const char *s) {
  if (f->run) f->run(d, s, f->len);
  else f->op->fn(d, s, f->len, f->es, f->op->user);
}

static void fold_walk(const fold *f, const mmb__plan *p, size_t k, char *d, const char *s) {
  if (k == f->first) {   /* dims below `first` are the run itself */
    fold_run(f, d, s);
    return;
  }
  for (size_t i = 0; i < p->dim[k - 1]; i++)
    fold_walk(f, p, k - 1, d + i * p->ds[k - 1] * f->es, s + i * p->ss[k - 1] * f->es);
}

/* Folds host views of one order: runs along the contiguous dim when both
   have one, else element by element. */
static void fold_host(const mmb__merge_op *op, const mmb__view *d, const mmb__view *s) {
  mmb__plan p;
  mmb__plan_make(d, s, &p);
  fold f = {.op = op, .es = d->esize, .len = 1, .first = 0};
  if (!op->fn) f.run = runs[op->type - 1][op->etype];
  if (p.n && p.ds[0] == 1 && p.ss[0] == 1) {
    f.len = p.dim[0];
    f.first = 1;
  }
  fold_walk(&f, &p, p.n, d->ptr, s->ptr);
}

bool mmb__merge_is_copy(const mmb__merge_op *op) {
  return !op->fn && op->type == MMB_MERGE_OVERWRITE;
}

mmbError mmb__view_merge(const char *func, const mmb__view *d, const mmb__view *s,
                         const mmb__merge_op *op) {
  if (mmb__merge_is_copy(op)) return mmb__view_copy(func, NULL, d, s);
  if (!mmb__view_alike(d, s))
    return mmb__fail(MMB_UNSUPPORTED, func, "a merge function between records stored "
                     "differently (AoS and SoA): merge with overwrite, or convert first");
  if (mmb__record_soa(d->rec)) {   /* the function sees one plane at a time */
    for (size_t f = 0; f < d->rec->n; f++) {
      mmb__view pd = mmb__view_plane(d, f), ps = mmb__view_plane(s, f);
      mmbError err = mmb__view_merge(func, &pd, &ps, op);
      if (err != MMB_OK) return err;
    }
    return MMB_OK;
  }
  mmb__view hd = *d, hs = *s;
  mmb__plan p;
  mmb__plan_make(d, s, &p);
  bool stage_d = !mmb__view_host(d);
  bool stage_s = !mmb__view_host(s) || (p.n && (p.ds[0] != 1 || p.ss[0] != 1));
  char *tmp_d = NULL, *tmp_s = NULL;
  mmbError err = MMB_OK;
  if (stage_d) {
    if ((err = mmb__view_stage(d, NULL, &hd)) == MMB_OK) tmp_d = hd.ptr;
    if (err == MMB_OK) err = mmb__view_copy(func, NULL, &hd, d);
  }
  if (err == MMB_OK && stage_s) {
    if ((err = mmb__view_stage(s, &hd, &hs)) == MMB_OK) tmp_s = hs.ptr;
    if (err == MMB_OK) err = mmb__view_copy(func, NULL, &hs, s);
  }
  if (err == MMB_OK) {
    fold_host(op, &hd, &hs);
    if (stage_d) err = mmb__view_copy(func, NULL, d, &hd);
  }
  mmb__free(tmp_s);
  mmb__free(tmp_d);
  return err == MMB_OUT_OF_MEMORY ? mmb__fail(err, func, "no host staging buffer") : err;
}
