/* Spaces: discovery, requests, limits, release, stats. */
#include "common.h"

MMB_TEST(space, discovered_spaces_describe_themselves) {
  size_t n;
  OK(mmb_space_count(&n));
  cr_assert_geq(n, 1);
  for (size_t i = 0; i < n; i++) {
    mmbMemSpace *s;
    mmbSpaceInfo info;
    mmbMemLayer layer;
    size_t cap;
    OK(mmb_space_at(i, &s));
    OK(mmb_space_get_info(s, &info));
    OK(mmb_space_layer(s, &layer));
    OK(mmb_space_capacity(s, &cap));
    cr_assert_eq(layer, info.layer);
    cr_assert_eq(cap, info.limit);
    cr_assert_gt(info.capacity, 0);
    cr_assert(info.discovered);
    cr_assert_neq(info.providers, 0);
    cr_assert(info.providers & (1u << info.default_provider));
    cr_assert_gt(strlen(info.name), 0);
  }
  mmbMemSpace *s;
  FAILS(mmb_space_at(n, &s), MMB_INVALID_ARG);
  FAILS(mmb_space_at(0, NULL), MMB_INVALID_ARG);
  FAILS(mmb_space_count(NULL), MMB_INVALID_ARG);
}

MMB_TEST(space, request_without_config_is_the_discovered_space) {
  mmbMemSpace *a, *b, *first;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &a));
  OK(mmb_request_space(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, NULL, &b));
  OK(mmb_space_at(0, &first));
  cr_assert_eq(a, b);
  cr_assert_eq(a, first);
  OK(mmb_space_release(a));   /* discovered: a no-op */
  mmbSpaceInfo info;
  OK(mmb_space_get_info(a, &info));
}

MMB_TEST(space, bad_requests) {
  mmbMemSpace *s = NULL;
  FAILS(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_request_space(MMB_MEMLAYER_MAX, MMB_CPU, NULL, &s), MMB_INVALID_ARG);
  FAILS(mmb_request_space((mmbMemLayer)-1, MMB_CPU, NULL, &s), MMB_INVALID_ARG);
  FAILS(mmb_request_space(MMB_DRAM, (mmbExecutionContext)9, NULL, &s), MMB_INVALID_ARG);
  mmbMemSpaceConfig neg = {.numa_node = -1};
  FAILS(mmb_request_space(MMB_DRAM, MMB_CPU, &neg, &s), MMB_INVALID_ARG);
  mmbMemSpaceConfig far = {.numa_node = 4096};
  FAILS(mmb_request_space(MMB_DRAM, MMB_CPU, &far, &s), MMB_UNAVAILABLE);
  cr_assert_null(s);
  FAILS(mmb_space_get_info(NULL, &(mmbSpaceInfo){0}), MMB_INVALID_ARG);
  FAILS(mmb_space_layer(NULL, &(mmbMemLayer){0}), MMB_INVALID_ARG);
  FAILS(mmb_space_capacity(NULL, &(size_t){0}), MMB_INVALID_ARG);
  FAILS(mmb_space_release(NULL), MMB_INVALID_ARG);
}

MMB_TEST(space, gpu_spaces_are_unavailable_without_a_device) {
  size_t n, gpus = 0;
  OK(mmb_space_count(&n));
  for (size_t i = 0; i < n; i++) {
    mmbMemSpace *s;
    mmbMemLayer l;
    OK(mmb_space_at(i, &s));
    OK(mmb_space_layer(s, &l));
    gpus += l == MMB_GDRAM;
  }
  if (gpus) cr_skip_test("this node has a GPU");
  mmbMemSpace *s = NULL;
  FAILS(mmb_request_space(MMB_GDRAM, MMB_GPU_CUDA, NULL, &s), MMB_UNAVAILABLE);
  FAILS(mmb_request_space(MMB_GDRAM, MMB_EXECUTION_CONTEXT_DEFAULT, NULL, &s), MMB_UNAVAILABLE);
  FAILS(mmb_request_space(MMB_DRAM, MMB_GPU_CUDA, NULL, &s), MMB_UNAVAILABLE);
  cr_assert_null(s);
}

MMB_TEST(space, a_requested_space_is_distinct_and_limited) {
  mmbMemSpace *base, *mine;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &base));
  mmbMemSpaceConfig cfg = {.size_limit = 1 << 20};
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &cfg, &mine));
  cr_assert_neq(mine, base);
  size_t cap;
  OK(mmb_space_capacity(mine, &cap));
  cr_assert_eq(cap, 1 << 20);
  mmbSpaceInfo info;
  OK(mmb_space_get_info(mine, &info));
  cr_assert_not(info.discovered);
  cr_assert_eq(info.layer, MMB_DRAM);

  mmbMemInterface *iface;
  OK(mmb_request_interface(mine, NULL, &iface));
  mmbAllocation *a, *b, *c = NULL;
  OK(mmb_allocate(600 << 10, iface, &a));
  FAILS(mmb_allocate(600 << 10, iface, &c), MMB_OUT_OF_MEMORY);   /* 1.2 MiB > 1 MiB */
  cr_assert_null(c);
  OK(mmb_allocate(400 << 10, iface, &b));                          /* exactly fits */

  mmbStats mine_st, base_st;
  OK(mmb_space_get_stats(mine, &mine_st));
  OK(mmb_space_get_stats(base, &base_st));
  cr_assert_eq(mine_st.used_current, 1000 << 10);
  cr_assert_eq(mine_st.reserved_current, 1000 << 10);
  cr_assert_eq(mine_st.n_failed, 1);
  cr_assert_eq(mine_st.n_allocs, 2);
  cr_assert_geq(base_st.reserved_current, 1000 << 10);   /* the parent counts it too */

  FAILS(mmb_space_release(mine), MMB_BUSY);
  OK(mmb_free(a));
  OK(mmb_free(b));
  OK(mmb_space_get_stats(mine, &mine_st));
  cr_assert_eq(mine_st.used_current, 0);
  cr_assert_eq(mine_st.reserved_current, 0);
  cr_assert_eq(mine_st.used_high, 1000 << 10);
  cr_assert_eq(mine_st.n_frees, 2);
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(mine));
  FAILS(mmb_space_release(mine), MMB_INVALID_ARG);   /* not a live space any more */
}

MMB_TEST(space, a_space_requested_on_a_limited_space_keeps_both_limits) {
  mmbMemSpace *outer, *inner;
  mmbMemSpaceConfig small = {.size_limit = 256 << 10}, big = {.size_limit = 1 << 30};
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &small, &outer));
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &big, &inner));
  size_t cap;
  OK(mmb_space_capacity(inner, &cap));
  cr_assert_eq(cap, 1 << 30);
  mmbMemInterface *a_if, *b_if;
  OK(mmb_request_interface(outer, NULL, &a_if));
  OK(mmb_request_interface(inner, NULL, &b_if));
  mmbAllocation *a, *b;
  OK(mmb_allocate(200 << 10, a_if, &a));
  FAILS(mmb_allocate(100 << 10, a_if, &b), MMB_OUT_OF_MEMORY);
  OK(mmb_allocate(100 << 10, b_if, &b));   /* other budget */
  OK(mmb_free(a));
  OK(mmb_free(b));
  OK(mmb_interface_destroy(a_if));
  OK(mmb_interface_destroy(b_if));
}

Test(space_env, layer_limit_from_the_environment) {
  setenv("MMB_LIMIT_DRAM", "1M", 1);
  mmb_test_setup();
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  size_t cap;
  OK(mmb_space_capacity(dram, &cap));
  cr_assert_eq(cap, 1 << 20);
  mmbMemInterface *iface;
  OK(mmb_request_interface(dram, NULL, &iface));
  mmbAllocation *a, *b = NULL;
  OK(mmb_allocate(768 << 10, iface, &a));
  FAILS(mmb_allocate(512 << 10, iface, &b), MMB_OUT_OF_MEMORY);
  mmbStats st;
  OK(mmb_space_get_stats(dram, &st));
  cr_assert_eq(st.reserved_current, 768 << 10, "a refusal must leave the space intact");
  cr_assert_eq(st.n_failed, 1);
  OK(mmb_free(a));
  OK(mmb_allocate(1 << 20, iface, &b));
  OK(mmb_free(b));
  OK(mmb_interface_destroy(iface));
  mmb_test_teardown();
}

Test(space_env, zero_limit_refuses_everything) {
  setenv("MMB_LIMIT_DRAM", "0", 1);
  mmb_test_setup();
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *a;
  FAILS(mmb_allocate(1, iface, &a), MMB_OUT_OF_MEMORY);
  OK(mmb_interface_destroy(iface));
  mmb_test_teardown();
}

MMB_TEST(space, names) {
  cr_assert_str_eq(mmb_layer_name(MMB_HBM), "HBM");
  cr_assert_str_eq(mmb_layer_name(MMB_MEMLAYER_MAX), "unknown");
  cr_assert_str_eq(mmb_context_name(MMB_GPU_CUDA), "GPU_CUDA");
  cr_assert_str_eq(mmb_context_name((mmbExecutionContext)77), "unknown");
  cr_assert_str_eq(mmb_provider_name(MMB_PROVIDER_SYSTEM), "system");
  cr_assert_str_eq(mmb_provider_name(MMB_PROVIDER_PINNED), "pinned");
  cr_assert_str_eq(mmb_provider_name((mmbProviderType)99), "unknown");
}

/* Requested spaces have names of their own: distinct by default (each gets
   its own counter track in a trace), or the caller's. */
MMB_TEST(space, requested_spaces_are_named_apart) {
  mmbMemSpace *a, *b, *named, *out = NULL;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 1 << 20}, &a));
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 1 << 20}, &b));
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.name = "fast: activations"},
                       &named));
  mmbSpaceInfo ia, ib, in;
  OK(mmb_space_get_info(a, &ia));
  OK(mmb_space_get_info(b, &ib));
  OK(mmb_space_get_info(named, &in));
  cr_assert_str_neq(ia.name, ib.name);
  cr_assert(strstr(ia.name, "limited"), "%s", ia.name);
  cr_assert_str_eq(in.name, "fast: activations");
  char long_name[64];
  memset(long_name, 'x', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  FAILS(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.name = long_name}, &out),
        MMB_INVALID_ARG);
  FAILS(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.name = ""}, &out),
        MMB_INVALID_ARG);
  cr_assert_null(out);
  OK(mmb_space_release(a));
  OK(mmb_space_release(b));
  OK(mmb_space_release(named));
}

MMB_TEST(space, registered_memory_is_what_a_plain_request_returns) {
  mmbMemSpaceConfig cfg = {.size_limit = 8000};
  mmbMemInterfaceConfig icfg = {.strategy = MMB_STRATEGY_POOL};
  OK(mmb_register_memory(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, &cfg, &icfg));
  mmbMemSpace *a, *b, *first;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &a));
  OK(mmb_request_space(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, NULL, &b));
  OK(mmb_space_at(0, &first));
  cr_assert_eq(a, b);
  cr_assert_neq(a, first);
  size_t cap;
  OK(mmb_space_capacity(a, &cap));
  cr_assert_eq(cap, 8000);
  /* registering the same again (every field of a code does) changes nothing */
  OK(mmb_register_memory(MMB_DRAM, MMB_CPU, &cfg, &icfg));
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &b));
  cr_assert_eq(a, b);
  /* an interface asked for with no config gets the registered one */
  mmbMemInterface *iface;
  OK(mmb_request_interface(a, NULL, &iface));
  mmbAllocation *x;
  OK(mmb_allocate(100, iface, &x));
  OK(mmb_free(x));
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_gt(st.reserved_current, 0, "a pool keeps what it took");
  FAILS(mmb_allocate(9000, iface, &x), MMB_OUT_OF_MEMORY);
  /* the library's: release does nothing; a new config waits for its users */
  OK(mmb_space_release(a));
  OK(mmb_space_capacity(a, &cap));
  mmbMemSpaceConfig bigger = {.size_limit = 1 << 20};
  FAILS(mmb_register_memory(MMB_DRAM, MMB_CPU, &bigger, &icfg), MMB_BUSY);
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &b));
  cr_assert_eq(a, b);
  OK(mmb_interface_destroy(iface));
  OK(mmb_register_memory(MMB_DRAM, MMB_CPU, &bigger, NULL));
  FAILS(mmb_space_capacity(a, &cap), MMB_INVALID_ARG);   /* the replaced one is gone */
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &b));
  OK(mmb_space_capacity(b, &cap));
  cr_assert_eq(cap, 1 << 20);
  OK(mmb_request_interface(b, NULL, &iface));
  mmbProviderType p;
  OK(mmb_interface_get_provider(iface, &p));
  cr_assert_eq(p, MMB_PROVIDER_SYSTEM);
  OK(mmb_interface_destroy(iface));
  /* a request with a config is still a new space of the tier's */
  mmbMemSpace *own;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 10}, &own));
  OK(mmb_space_capacity(own, &cap));
  cr_assert_eq(cap, 10);
  OK(mmb_space_release(own));
}

MMB_TEST(space, bad_registrations) {
  FAILS(mmb_register_memory(MMB_MEMLAYER_MAX, MMB_CPU, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_register_memory(MMB_DRAM, (mmbExecutionContext)7, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_register_memory(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.numa_node = -2}, NULL),
        MMB_INVALID_ARG);
  FAILS(mmb_register_memory(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.name = ""}, NULL),
        MMB_INVALID_ARG);
  FAILS(mmb_register_memory(MMB_DRAM, MMB_CPU, NULL, &(mmbMemInterfaceConfig){.flags = 8}),
        MMB_INVALID_ARG);
  FAILS(mmb_register_memory(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.numa_node = 4096}, NULL),
        MMB_UNAVAILABLE);
  FAILS(mmb_register_memory(MMB_GDRAM, MMB_EXECUTION_CONTEXT_DEFAULT,
                            &(mmbMemSpaceConfig){.device = 4096}, NULL),
        MMB_UNAVAILABLE);   /* a GPU this node does not have */
  /* nothing registered: a plain request is the discovered space */
  mmbMemSpace *a, *first;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &a));
  OK(mmb_space_at(0, &first));
  cr_assert_eq(a, first);
  /* a named registration compares by name */
  mmbMemSpaceConfig named = {.size_limit = 4096, .name = "fields"};
  OK(mmb_register_memory(MMB_DRAM, MMB_CPU, &named, NULL));
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &a));
  char copy[] = "fields";
  OK(mmb_register_memory(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 4096, .name = copy},
                         NULL));
  mmbMemSpace *b;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &b));
  cr_assert_eq(a, b);
  mmbSpaceInfo info;
  OK(mmb_space_get_info(b, &info));
  cr_assert_str_eq(info.name, "fields");
}

Test(space_lifecycle, registration_needs_init_and_ends_with_finalize) {
  cr_assert_eq(mmb_register_memory(MMB_DRAM, MMB_CPU, NULL, NULL), MMB_NOT_INITIALIZED);
  mmbOptions opts = {.log_level = MMB_LOG_OFF};
  for (int round = 0; round < 2; round++) {
    cr_assert_eq(mmb_init(&opts), MMB_OK);
    mmbMemSpace *a, *first;
    cr_assert_eq(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &a), MMB_OK);
    cr_assert_eq(mmb_space_at(0, &first), MMB_OK);
    cr_assert_eq(a, first, "round %d: no registration survives finalize", round);
    cr_assert_eq(mmb_register_memory(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 64},
                                     NULL), MMB_OK);
    cr_assert_eq(mmb_finalize(), MMB_OK);
  }
  ASSERT_NO_LEAKS();
}
