/* Layouts: bad input, element types, and the strides and sizes they give
   arrays (row- and column-major, padded rows, overflow). */
#include "arrays.h"

MMB_TEST(layout, bad_input_is_refused) {
  mmbLayout *l = NULL;
  mmbLayoutPadding none = {0};
  FAILS(mmb_layout_create_regular_1d(4, none, NULL), MMB_INVALID_ARG);
  FAILS(mmb_layout_create_regular_1d(0, none, &l), MMB_INVALID_ARG);
  FAILS(mmb_layout_create_regular_nd(4, 0, MMB_ROWMAJOR, none, &l), MMB_INVALID_ARG);
  FAILS(mmb_layout_create_regular_nd(4, MMB_MAX_DIMS + 1, MMB_ROWMAJOR, none, &l),
        MMB_INVALID_ARG);
  FAILS(mmb_layout_create_regular_nd(4, 2, (mmbLayoutOrder)7, none, &l), MMB_INVALID_ARG);
  FAILS(mmb_layout_set_element_type(NULL, MMB_TYPE_FLOAT), MMB_INVALID_ARG);
  FAILS(mmb_layout_destroy(NULL), MMB_INVALID_ARG);
  cr_assert_null(l);
}

MMB_TEST(layout, padding_must_be_a_power_of_two_multiple_of_the_element) {
  mmbLayout *l = NULL;
  FAILS(mmb_layout_create_regular_nd(8, 2, MMB_ROWMAJOR, (mmbLayoutPadding){48}, &l),
        MMB_INVALID_ARG);   /* not a power of two */
  FAILS(mmb_layout_create_regular_nd(8, 2, MMB_ROWMAJOR, (mmbLayoutPadding){4}, &l),
        MMB_INVALID_ARG);   /* smaller than the element */
  FAILS(mmb_layout_create_regular_nd(12, 2, MMB_ROWMAJOR, (mmbLayoutPadding){64}, &l),
        MMB_INVALID_ARG);   /* not a multiple of 12 */
  FAILS(mmb_layout_create_regular_1d(8, (mmbLayoutPadding){MMB_MAX_ALIGNMENT * 2}, &l),
        MMB_INVALID_ARG);
  cr_assert_null(l);
  OK(mmb_layout_create_regular_nd(8, 2, MMB_ROWMAJOR, (mmbLayoutPadding){8}, &l));
  OK(mmb_layout_destroy(l));
}

MMB_TEST(layout, element_types_must_match_the_element_size) {
  mmbLayout *l;
  OK(mmb_layout_create_regular_1d(4, (mmbLayoutPadding){0}, &l));
  OK(mmb_layout_set_element_type(l, MMB_TYPE_FLOAT));
  OK(mmb_layout_set_element_type(l, MMB_TYPE_INT32));
  OK(mmb_layout_set_element_type(l, MMB_TYPE_BYTES));
  FAILS(mmb_layout_set_element_type(l, MMB_TYPE_DOUBLE), MMB_INVALID_ARG);
  FAILS(mmb_layout_set_element_type(l, MMB_TYPE_INT64), MMB_INVALID_ARG);
  FAILS(mmb_layout_set_element_type(l, (mmbElementType)42), MMB_INVALID_ARG);
  OK(mmb_layout_destroy(l));
  size_t n;
  OK(mmb_element_type_size(MMB_TYPE_DOUBLE, &n));
  cr_assert_eq(n, 8);
  FAILS(mmb_element_type_size((mmbElementType)-1, &n), MMB_INVALID_ARG);
  FAILS(mmb_element_type_size(MMB_TYPE_FLOAT, NULL), MMB_INVALID_ARG);
}

static void expect_layout(mmbLayoutOrder order, size_t align, mmbDimensions dims,
                          const size_t *strides, size_t bytes) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l = test_layout(4, dims.size, order, align, MMB_TYPE_FLOAT);
  mmbArray *a;
  OK(mmb_array_create(&dims, l, iface, MMB_READ_WRITE, &a));
  mmbDimensions st;
  OK(mmb_array_get_strides(a, &st));
  cr_assert_eq(st.size, dims.size);
  for (size_t k = 0; k < dims.size; k++)
    cr_assert_eq(st.d[k], strides[k], "stride %zu: %zu, expected %zu", k, st.d[k], strides[k]);
  size_t got;
  OK(mmb_array_get_bytes(a, &got));
  cr_assert_eq(got, bytes);
  if (align) cr_assert_eq((uintptr_t)mmb_array_ptr(a) % align, 0);
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(layout, strides_row_major_column_major_and_padded) {
  expect_layout(MMB_ROWMAJOR, 0, (mmbDimensions){3, {2, 3, 5}}, (size_t[]){15, 5, 1}, 120);
  expect_layout(MMB_COLMAJOR, 0, (mmbDimensions){3, {2, 3, 5}}, (size_t[]){1, 2, 6}, 120);
  /* rows of 5 floats padded to 32 bytes: a pitch of 8 elements */
  expect_layout(MMB_ROWMAJOR, 32, (mmbDimensions){2, {3, 5}}, (size_t[]){8, 1}, 96);
  expect_layout(MMB_COLMAJOR, 32, (mmbDimensions){2, {5, 3}}, (size_t[]){1, 8}, 96);
  /* a row already a multiple of the alignment is not padded */
  expect_layout(MMB_ROWMAJOR, 16, (mmbDimensions){2, {3, 8}}, (size_t[]){8, 1}, 96);
  /* 1-D: the storage is rounded up */
  expect_layout(MMB_ROWMAJOR, 64, (mmbDimensions){1, {5}}, (size_t[]){1}, 64);
  /* padding up to a page, for a row that starts every 4 KiB */
  expect_layout(MMB_ROWMAJOR, 4096, (mmbDimensions){2, {2, 3}}, (size_t[]){1024, 1}, 8192);
}

MMB_TEST(layout, sizes_that_overflow_are_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l = test_layout(8, 2, MMB_ROWMAJOR, 0, MMB_TYPE_BYTES);
  mmbArray *a = NULL;
  FAILS(mmb_array_create(&(mmbDimensions){2, {SIZE_MAX / 4, 4}}, l, iface, MMB_READ, &a),
        MMB_OVERFLOW);
  FAILS(mmb_array_create(&(mmbDimensions){2, {1, SIZE_MAX / 4}}, l, iface, MMB_READ, &a),
        MMB_OVERFLOW);
  OK(mmb_layout_destroy(l));
  l = test_layout(8, 2, MMB_ROWMAJOR, 4096, MMB_TYPE_BYTES);   /* the padding overflows */
  FAILS(mmb_array_create(&(mmbDimensions){2, {1, SIZE_MAX / 8}}, l, iface, MMB_READ, &a),
        MMB_OVERFLOW);
  cr_assert_null(a);
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
}

Test(layout, needs_init) {
  mmbLayout *l;
  cr_assert_eq(mmb_layout_create_regular_1d(4, (mmbLayoutPadding){0}, &l), MMB_NOT_INITIALIZED);
}

MMB_TEST(layout, info_says_what_the_layout_was_made_with) {
  mmbLayout *l;
  OK(mmb_layout_create_regular_nd(8, 3, MMB_COLMAJOR, (mmbLayoutPadding){.row_alignment = 64}, &l));
  mmbLayoutInfo info;
  OK(mmb_layout_get_info(l, &info));
  cr_assert_eq(info.element_size, 8);
  cr_assert_eq(info.rank, 3);
  cr_assert_eq(info.order, MMB_COLMAJOR);
  cr_assert_eq(info.row_alignment, 64);
  cr_assert_eq(info.type, MMB_TYPE_BYTES);
  OK(mmb_layout_set_element_type(l, MMB_TYPE_DOUBLE));
  OK(mmb_layout_get_info(l, &info));
  cr_assert_eq(info.type, MMB_TYPE_DOUBLE);
  FAILS(mmb_layout_get_info(l, NULL), MMB_INVALID_ARG);
  FAILS(mmb_layout_get_info(NULL, &info), MMB_INVALID_ARG);
  OK(mmb_layout_destroy(l));
  FAILS(mmb_layout_get_info(l, &info), MMB_INVALID_ARG);
}
