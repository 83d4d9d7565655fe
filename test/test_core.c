/* Lifecycle, errors, logging, environment parsing. */
#include "common.h"

#include "core/internal.h"

Test(core, calls_before_init_are_refused) {
  mmbMemSpace *space = NULL;
  size_t n;
  mmbStats st;
  FAILS(mmb_finalize(), MMB_NOT_INITIALIZED);
  FAILS(mmb_logging_set_level(MMB_LOG_DEBUG), MMB_NOT_INITIALIZED);
  FAILS(mmb_space_count(&n), MMB_NOT_INITIALIZED);
  FAILS(mmb_space_at(0, &space), MMB_NOT_INITIALIZED);
  FAILS(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &space), MMB_NOT_INITIALIZED);
  FAILS(mmb_request_interface((mmbMemSpace *)&n, NULL, NULL), MMB_NOT_INITIALIZED);
  FAILS(mmb_allocate(16, (mmbMemInterface *)&n, NULL), MMB_NOT_INITIALIZED);
  FAILS(mmb_free((mmbAllocation *)&n), MMB_NOT_INITIALIZED);
  FAILS(mmb_copy((mmbAllocation *)&n, (mmbAllocation *)&n), MMB_NOT_INITIALIZED);
  FAILS(mmb_copy_1d(NULL, 0, NULL, 0, 1), MMB_NOT_INITIALIZED);
  FAILS(mmb_interface_get_stats(NULL, &st), MMB_NOT_INITIALIZED);
  FAILS(mmb_space_get_stats(NULL, &st), MMB_NOT_INITIALIZED);
  /* requests, arrays, layouts and iterators: nothing is read before init */
  mmbRequest req = {.impl = &n};
  bool done;
  mmbDimensions dims;
  FAILS(mmb_wait(&req), MMB_NOT_INITIALIZED);
  FAILS(mmb_wait_all(1, &req, NULL), MMB_NOT_INITIALIZED);
  FAILS(mmb_request_is_complete(&req, &done), MMB_NOT_INITIALIZED);
  cr_assert_eq(req.impl, (void *)&n, "the request was touched");
  FAILS(mmb_element_type_size(MMB_TYPE_FLOAT, &n), MMB_NOT_INITIALIZED);
  FAILS(mmb_array_get_dims((mmbArray *)&n, &dims), MMB_NOT_INITIALIZED);
  FAILS(mmb_array_get_strides((mmbArray *)&n, &dims), MMB_NOT_INITIALIZED);
  FAILS(mmb_array_get_bytes((mmbArray *)&n, &n), MMB_NOT_INITIALIZED);
  FAILS(mmb_array_get_interface((mmbArray *)&n, &(mmbMemInterface *){NULL}), MMB_NOT_INITIALIZED);
  cr_assert_null(mmb_array_ptr((mmbArray *)&n));
  mmbTileIterator *it = (mmbTileIterator *)&n;
  FAILS(mmb_tile_iterator_first(it), MMB_NOT_INITIALIZED);
  FAILS(mmb_tile_iterator_next(it), MMB_NOT_INITIALIZED);
  FAILS(mmb_tile_iterator_count(it, &n), MMB_NOT_INITIALIZED);
  FAILS(mmb_tile_iterator_get_index(it, &dims), MMB_NOT_INITIALIZED);
  FAILS(mmb_tile_iterator_destroy(it), MMB_NOT_INITIALIZED);
  cr_assert_null(mmb_tile_iterator_tile(it));
  cr_assert_null(space);
  cr_assert_not(mmb_is_initialized());
}

Test(core, init_nests_and_finalize_counts) {
  OK(mmb_init(NULL));
  OK(mmb_init(NULL));
  OK(mmb_finalize());
  cr_assert(mmb_is_initialized());
  size_t n;
  OK(mmb_space_count(&n));
  cr_assert_geq(n, 1);
  OK(mmb_finalize());
  cr_assert_not(mmb_is_initialized());
  FAILS(mmb_finalize(), MMB_NOT_INITIALIZED);
  OK(mmb_init(NULL));   /* and again after a full teardown */
  OK(mmb_finalize());
  ASSERT_NO_LEAKS();
}

Test(core, error_strings_are_never_null) {
  for (int e = MMB_OK; e <= MMB_TIMEOUT + 5; e++) cr_assert_not_null(mmb_error_string((mmbError)e));
  cr_assert_not_null(mmb_error_string((mmbError)-1));
  cr_assert_str_eq(mmb_error_string((mmbError)1000), "unknown mmb error code");
  cr_assert_str_neq(mmb_error_string(MMB_BUSY), mmb_error_string(MMB_OK));
}

/* The codes keep the contract's values; each has its name and a distinct text. */
Test(core, error_names_follow_the_map) {
  static const char *const names[] = {"MMB_OK", "MMB_ERROR", "MMB_INVALID_ARG",
                                      "MMB_OUT_OF_MEMORY", "MMB_OVERFLOW", "MMB_UNSUPPORTED",
                                      "MMB_UNAVAILABLE", "MMB_NOT_INITIALIZED", "MMB_BUSY",
                                      "MMB_INVALID_STATE", "MMB_IO"};
  cr_assert_eq(MMB_OK, 0);
  cr_assert_eq(MMB_IO, 10);
  for (int e = MMB_OK; e <= MMB_IO; e++) {
    cr_assert_str_eq(mmb_error_name((mmbError)e), names[e]);
    for (int f = MMB_OK; f < e; f++)
      cr_assert_str_neq(mmb_error_string((mmbError)e), mmb_error_string((mmbError)f));
  }
  cr_assert_str_eq(mmb_error_name((mmbError)(MMB_TIMEOUT + 1)), "MMB_UNKNOWN_ERROR");
  cr_assert_str_eq(mmb_error_name((mmbError)-3), "MMB_UNKNOWN_ERROR");
}

Test(core, log_level_from_api_options_and_env) {
  mmbLogLevel level;
  mmbOptions opts = {.log_level = MMB_LOG_ERROR};
  OK(mmb_init(&opts));
  OK(mmb_logging_get_level(&level));
  cr_assert_eq(level, MMB_LOG_ERROR);
  OK(mmb_logging_set_level(MMB_LOG_DEBUG));
  OK(mmb_logging_get_level(&level));
  cr_assert_eq(level, MMB_LOG_DEBUG);
  FAILS(mmb_logging_set_level((mmbLogLevel)42), MMB_INVALID_ARG);
  FAILS(mmb_logging_get_level(NULL), MMB_INVALID_ARG);
  setenv("MMB_LOG_LEVEL", "info", 1);
  OK(mmb_logging_set_level(MMB_LOG_DEFAULT));
  OK(mmb_logging_get_level(&level));
  cr_assert_eq(level, MMB_LOG_INFO);
  OK(mmb_finalize());
}

Test(core, malformed_log_level_env_fails_init) {
  setenv("MMB_LOG_LEVEL", "loud", 1);
  FAILS(mmb_init(NULL), MMB_INVALID_ARG);
  cr_assert_not(mmb_is_initialized());
  setenv("MMB_LOG_LEVEL", "Debug", 1);
  OK(mmb_init(NULL));
  OK(mmb_finalize());
}

Test(core, size_parsing) {
  size_t v;
  cr_assert(mmb__parse_size("4096", &v) && v == 4096);
  cr_assert(mmb__parse_size("512K", &v) && v == 512u << 10);
  cr_assert(mmb__parse_size("512M", &v) && v == 512u << 20);
  cr_assert(mmb__parse_size("2g", &v) && v == (size_t)2 << 30);
  cr_assert(mmb__parse_size("1T", &v) && v == (size_t)1 << 40);
  cr_assert(mmb__parse_size("64MiB", &v) && v == (size_t)64 << 20);
  cr_assert(mmb__parse_size("100B", &v) && v == 100);
  cr_assert(mmb__parse_size("0", &v) && v == 0);
  const char *bad[] = {"", "abc", "-1", "1.5G", "12Q", "G", "1GG", "99999999999999999999",
                       "17179869184T", " ", "1 G x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_not(mmb__parse_size(bad[i], &v), "'%s' was accepted", bad[i]);
}

Test(core, malformed_limit_env_fails_init) {
  const char *bad[] = {"lots", "-5G", "1.5G", "18446744073709551616", "4X"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("MMB_LIMIT_GDRAM", bad[i], 1);
    FAILS(mmb_init(NULL), MMB_INVALID_ARG);
    cr_assert_not(mmb_is_initialized());
  }
  setenv("MMB_LIMIT_GDRAM", "512M", 1);
  OK(mmb_init(NULL));
  OK(mmb_finalize());
}

