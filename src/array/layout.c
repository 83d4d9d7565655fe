/* Regular layouts: element size, order, row padding and element type, and
   the stride computation every array and tile storage goes through. */
#include "array/internal.h"

mmbError mmb_element_type_size(mmbElementType type, size_t *out_bytes) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_bytes, __func__, "out_bytes is NULL");
  switch (type) {
    case MMB_TYPE_BYTES: *out_bytes = 0; return MMB_OK;
    case MMB_TYPE_FLOAT: *out_bytes = sizeof(float); return MMB_OK;
    case MMB_TYPE_DOUBLE: *out_bytes = sizeof(double); return MMB_OK;
    case MMB_TYPE_INT32: *out_bytes = sizeof(int32_t); return MMB_OK;
    case MMB_TYPE_INT64: *out_bytes = sizeof(int64_t); return MMB_OK;
  }
  return mmb__fail(MMB_INVALID_ARG, __func__, "unknown element type %d", (int)type);
}

static mmbError layout_create(const char *func, size_t esize, size_t rank, mmbLayoutOrder order,
                              mmbLayoutPadding padding, mmbLayout **out) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out, func, "out_layout is NULL");
  MMB__ARG(esize == 0, func, "element size is 0");
  MMB__ARG(rank < 1 || rank > MMB_MAX_DIMS, func, "rank %zu, not 1..%d", rank, MMB_MAX_DIMS);
  MMB__ARG(order != MMB_ROWMAJOR && order != MMB_COLMAJOR, func, "unknown order %d", (int)order);
  size_t ra = padding.row_alignment;
  MMB__ARG(ra && (!mmb__is_pow2(ra) || ra % esize || ra > MMB_MAX_ALIGNMENT), func,
           "row_alignment %zu must be a power of two, a multiple of the element size %zu and "
           "at most %zu", ra, esize, (size_t)MMB_MAX_ALIGNMENT);
  mmbLayout *l = mmb__object_new(MMB__KIND_LAYOUT, sizeof *l);
  if (!l) return MMB_OUT_OF_MEMORY;
  *l = (mmbLayout){.element_size = esize, .rank = rank, .order = order, .row_alignment = ra,
                   .type = MMB_TYPE_BYTES};
  *out = l;
  return MMB_OK;
}

mmbError mmb_layout_create_regular_1d(size_t element_size, mmbLayoutPadding padding,
                                      mmbLayout **out_layout) {
  return layout_create(__func__, element_size, 1, MMB_ROWMAJOR, padding, out_layout);
}

mmbError mmb_layout_create_regular_nd(size_t element_size, size_t n_dims, mmbLayoutOrder order,
                                      mmbLayoutPadding padding, mmbLayout **out_layout) {
  return layout_create(__func__, element_size, n_dims, order, padding, out_layout);
}

mmbError mmb_layout_set_element_type(mmbLayout *layout, mmbElementType type) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(layout, MMB__KIND_LAYOUT, __func__, "layout");
  size_t size;
  mmbError err = mmb_element_type_size(type, &size);
  if (err != MMB_OK) return err;
  MMB__ARG(size && size != layout->element_size, __func__,
           "type %d is %zu bytes, the layout's elements %zu", (int)type, size,
           layout->element_size);
  layout->type = type;
  return MMB_OK;
}

mmbError mmb_layout_get_info(const mmbLayout *layout, mmbLayoutInfo *out_info) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(layout, MMB__KIND_LAYOUT, __func__, "layout");
  MMB__ARG(!out_info, __func__, "out_info is NULL");
  *out_info = (mmbLayoutInfo){.element_size = layout->element_size, .rank = layout->rank,
                              .order = layout->order, .row_alignment = layout->row_alignment,
                              .type = layout->type};
  return MMB_OK;
}

mmbError mmb_layout_destroy(mmbLayout *layout) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(layout, MMB__KIND_LAYOUT, __func__, "layout");
  mmb__object_free(layout);
  return MMB_OK;
}

mmbError mmb__layout_fits(const char *func, const mmbLayout *l, size_t rank, size_t esize) {
  MMB__ARG(l->element_size != esize, func, "layout elements are %zu bytes, the data's %zu",
           l->element_size, esize);
  MMB__ARG(l->rank != rank, func, "layout of rank %zu for data of rank %zu", l->rank, rank);
  return MMB_OK;
}

mmbError mmb__layout_strides(const char *func, const mmbLayout *l, size_t rank,
                             const size_t *dims, size_t *stride, size_t *bytes) {
  size_t es = l->element_size, inner = mmb__layout_inner(l, rank);
  size_t row, pitch;   /* pitch: elements from one row to the next */
  if (mmb__mul_overflows(dims[inner], es, &row)) goto overflow;
  if (l->row_alignment) {
    size_t a = l->row_alignment;
    if (mmb__add_overflows(row, a - 1, &row)) goto overflow;
    row &= ~(a - 1);
  }
  pitch = row / es;
  stride[inner] = 1;
  size_t total = pitch;   /* elements up to and including the current dim */
  for (size_t n = 1; n < rank; n++) {
    size_t k = l->order == MMB_COLMAJOR ? n : rank - 1 - n;
    stride[k] = total;
    if (mmb__mul_overflows(total, dims[k], &total)) goto overflow;
  }
  if (mmb__mul_overflows(total, es, bytes)) goto overflow;
  return MMB_OK;
overflow:
  return mmb__fail(MMB_OVERFLOW, func, "the storage of these extents overflows size_t");
}
