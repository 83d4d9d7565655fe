/* The names renamed to one convention stay one release as deprecated
   aliases: each old name gives what its new name gives, refusals
   included, and the old bare-pointer calls keep their argument order.
   (Calling an old name warns: install-check compiles one with -Werror.) */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include "arrays.h"

static mmbMemInterface *pool(void) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface;
  OK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL}, &iface));
  return iface;
}

MMB_TEST(deprecated, getters_answer_as_their_new_names) {
  mmbMemInterface *iface = pool();
  mmbMemSpace *s_new, *s_old;
  OK(mmb_interface_get_space(iface, &s_new));
  OK(mmb_interface_space(iface, &s_old));
  cr_assert_eq(s_old, s_new);
  mmbProviderType p_new, p_old;
  OK(mmb_interface_get_provider(iface, &p_new));
  OK(mmb_interface_provider(iface, &p_old));
  cr_assert_eq(p_old, p_new);
  mmbAllocation *a;
  OK(mmb_allocate(100, iface, &a));
  mmbMemInterface *i_old;
  OK(mmb_allocation_interface(a, &i_old));
  cr_assert_eq(i_old, iface);
  OK(mmb_free(a));
  FAILS(mmb_allocation_interface(a, &i_old), MMB_INVALID_ARG);   /* freed: refused alike */

  mmbDimensions d = dims2(6, 10);
  mmbArray *arr = test_array(iface, &d, MMB_ROWMAJOR, 0);
  mmbDimensions dims, strides;
  OK(mmb_array_dims(arr, &dims));
  cr_assert(dims.size == 2 && dims.d[0] == 6 && dims.d[1] == 10);
  OK(mmb_array_strides(arr, &strides));
  cr_assert(strides.size == 2 && strides.d[0] == 10 && strides.d[1] == 1);
  size_t bytes;
  OK(mmb_array_bytes(arr, &bytes));
  cr_assert_eq(bytes, 60 * sizeof(double));
  mmbMemInterface *ai;
  OK(mmb_array_interface(arr, &ai));
  cr_assert_eq(ai, iface);
  FAILS(mmb_array_dims(arr, NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_bytes(NULL, &bytes), MMB_INVALID_ARG);

  OK(mmb_array_tile(arr, &(mmbDimensions){2, {3, 5}}));
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(arr, NULL, &it));
  OK(mmb_tile_iterator_next(it));
  mmbIndex i_new, i_old2;
  OK(mmb_tile_iterator_get_index(it, &i_new));
  OK(mmb_tile_iterator_index(it, &i_old2));
  cr_assert(i_old2.size == 2 && i_old2.d[0] == i_new.d[0] && i_old2.d[1] == i_new.d[1]);
  cr_assert(i_new.d[0] == 0 && i_new.d[1] == 1, "the second tile in row-major order");
  OK(mmb_tile_iterator_destroy(it));
  OK(mmb_array_destroy(arr));
  OK(mmb_interface_destroy(iface));
}

/* The old bare-pointer calls: the interface first, as they always took it. */
MMB_TEST(deprecated, bare_pointer_calls_keep_their_order) {
  mmbMemInterface *iface = pool(), *other = pool();
  void *p, *q, *r;
  OK(mmb_ptr_alloc(iface, 100, &p));
  OK(mmb_ptr_alloc_opts(iface, 5000, &(mmbAllocateOptions){.alignment = 4096}, &q));
  cr_assert_eq((uintptr_t)q % 4096, 0);
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 5100);
  FAILS(mmb_ptr_free(other, p), MMB_INVALID_ARG);   /* another interface's: refused */
  OK(mmb_ptr_free(iface, p));
  FAILS(mmb_ptr_free(iface, p), MMB_INVALID_ARG);   /* twice */
  OK(mmb_ptr_deallocate(q, iface));                 /* the new name frees the old name's block */
  OK(mmb_ptr_allocate(64, iface, &r));
  mmbQueue *queue;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &queue));
  OK(mmb_ptr_free_async(iface, r, queue));
  FAILS(mmb_ptr_free_async(iface, r, queue), MMB_INVALID_ARG);
  OK(mmb_queue_destroy(NULL, &queue));
  OK(mmb_interface_trim(iface, SIZE_MAX));   /* sweeps what waited on the queue */
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 0);
  OK(mmb_interface_destroy(other));
  OK(mmb_interface_destroy(iface));
}
