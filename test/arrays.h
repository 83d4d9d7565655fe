/* Shared by the array, tile and iterator tests: layouts, arrays filled with
   known values, and element access by absolute index. */
#ifndef MMB_TEST_ARRAYS_H
#define MMB_TEST_ARRAYS_H

#include "common.h"

static inline mmbLayout *test_layout(size_t esize, size_t rank, mmbLayoutOrder order,
                                     size_t row_alignment, mmbElementType type) {
  mmbLayout *l;
  OK(mmb_layout_create_regular_nd(esize, rank, order,
                                  (mmbLayoutPadding){.row_alignment = row_alignment}, &l));
  if (type != MMB_TYPE_BYTES) OK(mmb_layout_set_element_type(l, type));
  return l;
}

static inline mmbDimensions dims2(size_t a, size_t b) { return (mmbDimensions){2, {a, b}}; }

/* An array of doubles on the host, row- or column-major, of any rank. */
static inline mmbArray *test_array(mmbMemInterface *iface, const mmbDimensions *dims,
                                   mmbLayoutOrder order, size_t row_alignment) {
  mmbLayout *l = test_layout(sizeof(double), dims->size, order, row_alignment, MMB_TYPE_DOUBLE);
  mmbArray *a;
  OK(mmb_array_create(dims, l, iface, MMB_READ_WRITE, &a));
  OK(mmb_layout_destroy(l));
  return a;
}

/* Offset in elements of an absolute index in an array's home. */
static inline size_t array_offset(const mmbArray *a, const size_t *idx) {
  mmbDimensions st;
  OK(mmb_array_get_strides(a, &st));
  size_t off = 0;
  for (size_t k = 0; k < st.size; k++) off += idx[k] * st.d[k];
  return off;
}

static inline double *array_at(const mmbArray *a, const size_t *idx) {
  return (double *)mmb_array_ptr(a) + array_offset(a, idx);
}

/* An element of a host tile, by absolute index, of any rank. */
static inline void *tile_elem(const mmbArrayTile *t, const size_t *idx) {
  size_t off = 0;
  for (size_t k = 0; k < t->rank; k++) off += (idx[k] - t->lower[k]) * t->stride[k];
  return (char *)t->ptr + off * t->element_size;
}

/* Steps idx through the box [lo, hi) (row-major); false past the end. */
static inline bool index_next(size_t *idx, const size_t *lo, const size_t *hi, size_t rank) {
  for (size_t k = rank; k-- > 0;) {
    if (++idx[k] < hi[k]) return true;
    idx[k] = lo[k];
  }
  return false;
}

/* The value stored at an index by fill_array: unique per element. */
static inline double value_at(const size_t *idx, size_t rank, double salt) {
  double v = salt;
  for (size_t k = 0; k < rank; k++) v = v * 97.0 + (double)idx[k];
  return v;
}

static inline void fill_array(mmbArray *a, double salt) {
  mmbDimensions d;
  OK(mmb_array_get_dims(a, &d));
  size_t idx[MMB_MAX_DIMS] = {0}, lo[MMB_MAX_DIMS] = {0};
  do *array_at(a, idx) = value_at(idx, d.size, salt);
  while (index_next(idx, lo, d.d, d.size));
}

static inline void assert_array_filled(const mmbArray *a, double salt) {
  mmbDimensions d;
  OK(mmb_array_get_dims(a, &d));
  size_t idx[MMB_MAX_DIMS] = {0}, lo[MMB_MAX_DIMS] = {0};
  do cr_assert_eq(*array_at(a, idx), value_at(idx, d.size, salt), "element %zu,%zu", idx[0],
                  idx[1]);
  while (index_next(idx, lo, d.d, d.size));
}

/* A size-limited DRAM space, standing in for a small fast tier. */
static inline mmbMemSpace *limited_space(size_t limit) {
  mmbMemSpace *s;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = limit}, &s));
  return s;
}

#endif
