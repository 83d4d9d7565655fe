/* Layers of the user's (mmb_layer_register, MMB_LAYERS): a registered layer
   is a layer like the built-in ones for spaces, its limit (capacity and
   MMB_LIMIT_<name>), interfaces, allocations, statistics, arrays, the tile
   cache, fallback placement and the trace; device-only layers take only
   the user's providers; every misuse is refused; layers go at finalize. */
#include "arrays.h"
#include "fake_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static mmbMemLayer cxl(size_t capacity) {
  mmbMemLayer l;
  OK(mmb_layer_register("CXL", &(mmbLayerProperties){.backing = MMB_DRAM, .capacity = capacity,
                                                     .bandwidth = 30000, .latency = 250},
                        &l));
  return l;
}

MMB_TEST(layer, a_registered_layer_has_a_space_like_a_built_in_one) {
  mmbMemLayer l = cxl(8 << 20);
  cr_assert_eq((int)l, MMB_MEMLAYER_MAX, "the first layer of the user's");
  cr_assert_str_eq(mmb_layer_name(l), "CXL");
  mmbMemLayer found;
  OK(mmb_layer_find("cxl", &found));
  cr_assert_eq(found, l);
  OK(mmb_layer_find("dram", &found));
  cr_assert_eq(found, MMB_DRAM);
  mmbMemSpace *s, *dram;
  OK(mmb_request_space(l, MMB_EXECUTION_CONTEXT_DEFAULT, NULL, &s));
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  cr_assert_neq(s, dram);
  mmbSpaceInfo info, dinfo;
  OK(mmb_space_get_info(s, &info));
  OK(mmb_space_get_info(dram, &dinfo));
  cr_assert(info.layer == l && info.context == MMB_CPU && info.discovered);
  cr_assert(info.capacity == 8 << 20 && info.limit == 8 << 20);
  cr_assert(info.bandwidth == 30000 && info.latency == 250);
  cr_assert_eq(info.numa_node, dinfo.numa_node, "on the backing DRAM's node");
  char want[48];
  snprintf(want, sizeof want, "CXL (NUMA %d)", dinfo.numa_node);
  cr_assert_str_eq(info.name, want);
  cr_assert(info.default_provider == MMB_PROVIDER_SYSTEM &&
            (info.providers & (1u << MMB_PROVIDER_SYSTEM)));
  mmbMemLayer got;
  OK(mmb_space_layer(s, &got));
  cr_assert_eq(got, l);
  /* allocations, counted on the layer's space, refused past its capacity */
  mmbMemInterface *iface;
  OK(mmb_request_interface(s, NULL, &iface));
  mmbAllocation *a, *b;
  OK(mmb_allocate(6 << 20, iface, &a));
  memset(mmb_allocation_ptr(a), 7, 6 << 20);
  cr_assert_eq(mmb_allocate(4 << 20, iface, &b), MMB_OUT_OF_MEMORY);
  mmbStats st;
  OK(mmb_space_get_stats(s, &st));
  cr_assert(st.used_current == 6 << 20 && st.n_failed == 1);
  OK(mmb_free(a));
  /* an array homed there, its tiles cached in it, a limited space on it */
  mmbDimensions d = dims2(64, 64);
  mmbArray *arr = test_array(iface, &d, MMB_ROWMAJOR, 0);
  fill_array(arr, 3);
  mmbMemSpace *small;
  OK(mmb_request_space(l, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 1 << 20}, &small));
  OK(mmb_space_get_info(small, &info));
  cr_assert(info.layer == l && info.limit == 1 << 20);
  mmbArray *home = test_array(test_interface(MMB_PROVIDER_SYSTEM, 0), &d, MMB_ROWMAJOR, 0);
  fill_array(home, 4);
  OK(mmb_array_tile(home, &(mmbDimensions){2, {32, 32}}));
  mmbArrayTile *t, *local;
  OK(mmb_tile_at(home, &(mmbIndex){2, {1, 1}}, &t));
  OK(mmb_tile_acquire(t, small, MMB_READ, &local));
  cr_assert_eq(local->space, small);
  cr_assert_eq(MMB_TILE_AT_2D(local, double, 40, 33), value_at((size_t[]){40, 33}, 2, 4));
  OK(mmb_tile_release(local));
  OK(mmb_array_evict(home, small));
  assert_array_filled(arr, 3);
  OK(mmb_array_destroy(arr));
  OK(mmb_array_destroy(home));
  OK(mmb_space_release(small));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(layer, its_limit_and_fallback_work_as_the_built_in_ones) {
  cr_assert_eq(setenv("MMB_LIMIT_FAR", "1M", 1), 0);   /* read when it is registered */
  mmbMemLayer l;
  OK(mmb_layer_register("FAR", &(mmbLayerProperties){0}, &l));
  unsetenv("MMB_LIMIT_FAR");
  mmbMemSpace *s, *dram;
  OK(mmb_request_space(l, MMB_CPU, NULL, &s));
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  size_t limit;
  OK(mmb_space_capacity(s, &limit));
  cr_assert_eq(limit, 1 << 20);
  /* full: an allocation lands in the fallback, and says so */
  mmbMemInterface *iface;
  OK(mmb_request_interface(s, &(mmbMemInterfaceConfig){.fallback = dram}, &iface));
  mmbAllocation *a;
  OK(mmb_allocate(2 << 20, iface, &a));
  mmbMemSpace *landed;
  OK(mmb_allocation_space(a, &landed));
  cr_assert_eq(landed, dram);
  OK(mmb_free(a));
  /* registering the layer again: mmb_register_memory on it, as on DRAM */
  OK(mmb_register_memory(l, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 4096}, NULL));
  mmbMemSpace *reg;
  OK(mmb_request_space(l, MMB_CPU, NULL, &reg));
  mmbSpaceInfo info;
  OK(mmb_space_get_info(reg, &info));
  cr_assert(info.layer == l && info.limit == 4096 && !info.discovered);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(layer, the_trace_names_its_space) {
  mmbMemLayer l = cxl(0);
  mmbMemSpace *s;
  OK(mmb_request_space(l, MMB_CPU, NULL, &s));
  mmbMemInterface *iface;
  OK(mmb_request_interface(s, NULL, &iface));
  OK(mmb_trace_start());
  mmbAllocation *a;
  OK(mmb_allocate(4096, iface, &a));
  OK(mmb_free(a));
  OK(mmb_trace_stop());
  char path[] = "/tmp/mmb-layer-trace-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  OK(mmb_trace_dump(path));
  FILE *f = fopen(path, "r");
  char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  unlink(path);
  cr_assert_not_null(strstr(buf, "CXL (NUMA"), "a track for the layer's space");
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(layer, device_only_layers_take_only_the_users_providers) {
  mmbMemLayer l;
  OK(mmb_layer_register("ACCEL", &(mmbLayerProperties){.device_only = true}, &l));
  mmbMemSpace *s;
  OK(mmb_request_space(l, MMB_CPU, NULL, &s));
  mmbSpaceInfo info;
  OK(mmb_space_get_info(s, &info));
  cr_assert(info.providers == 0 && info.default_provider == MMB_PROVIDER_DEFAULT);
  mmbMemInterface *iface;
  cr_assert_eq(mmb_request_interface(s, NULL, &iface), MMB_INVALID_ARG, "no default provider");
  mmbArrayTile *early, *none;   /* nor a way to put a tile there */
  mmbArray *e = test_array(test_interface(MMB_PROVIDER_SYSTEM, 0), &(mmbDimensions){1, {4}},
                           MMB_ROWMAJOR, 0);
  OK(mmb_array_tile(e, &(mmbDimensions){1, {4}}));
  OK(mmb_tile_at(e, &(mmbIndex){1, {0}}, &early));
  cr_assert_eq(mmb_tile_duplicate(early, s, MMB_READ, NULL, &none), MMB_INVALID_ARG);
  OK(mmb_array_destroy(e));
  cr_assert_eq(mmb_request_interface(s, &(mmbMemInterfaceConfig){.provider = MMB_PROVIDER_SYSTEM},
                                     &iface),
               MMB_UNSUPPORTED);
  mmbProviderType dev;
  OK(mmb_provider_register(&device_ops, &dev));   /* serves every layer */
  (void)fake_device_interface;
  OK(mmb_request_interface(s, &(mmbMemInterfaceConfig){.provider = dev}, &iface));
  mmbDimensions d = dims2(16, 16);
  mmbMemInterface *host = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = test_array(host, &d, MMB_ROWMAJOR, 0), *on;
  fill_array(a, 6);
  OK(mmb_array_duplicate(a, iface, MMB_READ_WRITE, &on));
  cr_assert_null(mmb_array_ptr(on), "not host accessible");
  OK(mmb_array_merge(on, MMB_MERGE_OVERWRITE));
  assert_array_filled(a, 6);
  /* that provider is the layer's default now: tiles go to the space by
     the space alone, and come back */
  OK(mmb_space_get_info(s, &info));
  cr_assert_eq(info.default_provider, dev);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {8, 8}}));
  mmbArrayTile *t, *dup;
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 0}}, &t));
  OK(mmb_tile_duplicate(t, s, MMB_READ_WRITE, NULL, &dup));
  fill_array(a, 0);
  OK(mmb_tile_merge(dup, MMB_MERGE_OVERWRITE));
  size_t idx[2] = {0, 0}, lo[2] = {0, 0}, hi[2] = {16, 16};
  do {
    double want = value_at(idx, 2, idx[0] >= 8 && idx[1] < 8 ? 6 : 0);
    cr_assert_eq(*array_at(a, idx), want, "(%zu, %zu)", idx[0], idx[1]);
  } while (index_next(idx, lo, hi, 2));
  mmbArrayTile *local;   /* and the space's tile cache holds it */
  OK(mmb_tile_acquire(t, s, MMB_READ, &local));
  cr_assert_neq(local, t);
  OK(mmb_tile_release(local));
  mmbCacheStats st;
  OK(mmb_space_get_cache_stats(s, &st));
  cr_assert_eq(st.misses, 1);
  OK(mmb_array_evict(a, s));
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(layer, misuse_is_refused) {
  mmbMemLayer l;
  mmbLayerProperties p = {0};
  cr_assert_eq(mmb_layer_register(NULL, &p, &l), MMB_INVALID_ARG);
  cr_assert_eq(mmb_layer_register("X", NULL, &l), MMB_INVALID_ARG);
  cr_assert_eq(mmb_layer_register("X", &p, NULL), MMB_INVALID_ARG);
  cr_assert_eq(mmb_layer_register("", &p, &l), MMB_INVALID_ARG);
  cr_assert_eq(mmb_layer_register("SIXTEEN_LETTERS_", &p, &l), MMB_INVALID_ARG);
  cr_assert_eq(mmb_layer_register("CXL-1", &p, &l), MMB_INVALID_ARG, "'-' in an env name");
  cr_assert_eq(mmb_layer_register("dram", &p, &l), MMB_INVALID_ARG, "a built-in name");
  cr_assert_eq(mmb_layer_register("X", &(mmbLayerProperties){.backing = MMB_GDRAM}, &l),
               MMB_INVALID_ARG);
  cr_assert_eq(mmb_layer_register("X", &(mmbLayerProperties){.backing = MMB_STORAGE}, &l),
               MMB_INVALID_ARG);
  cr_assert_eq(mmb_layer_register("X", &(mmbLayerProperties){.numa_node = -1}, &l),
               MMB_INVALID_ARG);
  cr_assert_eq(mmb_layer_register("X", &(mmbLayerProperties){.numa_node = 99}, &l),
               MMB_UNAVAILABLE);
  cr_assert_eq(setenv("MMB_LIMIT_BADLIM", "lots", 1), 0);
  cr_assert_eq(mmb_layer_register("BADLIM", &p, &l), MMB_INVALID_ARG);
  unsetenv("MMB_LIMIT_BADLIM");
  /* none of those took a number */
  OK(mmb_layer_register("L0", &p, &l));
  cr_assert_eq((int)l, MMB_MEMLAYER_MAX);
  cr_assert_eq(mmb_layer_register("l0", &p, &l), MMB_INVALID_ARG, "taken, case aside");
  char name[8];
  for (int i = 1; i < MMB_USER_LAYERS_MAX; i++) {
    snprintf(name, sizeof name, "L%d", i);
    OK(mmb_layer_register(name, &p, &l));
  }
  cr_assert_eq(mmb_layer_register("ONEMORE", &p, &l), MMB_OUT_OF_MEMORY);
  mmbMemSpace *s;
  cr_assert_eq(mmb_request_space((mmbMemLayer)(MMB_MEMLAYER_MAX + MMB_USER_LAYERS_MAX), MMB_CPU,
                                 NULL, &s),
               MMB_INVALID_ARG);
  cr_assert_str_eq(mmb_layer_name((mmbMemLayer)(MMB_MEMLAYER_MAX + MMB_USER_LAYERS_MAX)),
                   "unknown");
  cr_assert_eq(mmb_layer_find("nope", &l), MMB_INVALID_ARG);
  cr_assert_eq(mmb_layer_find(NULL, &l), MMB_INVALID_ARG);
  /* layers go at finalize: a new session starts with the built-in ones */
  OK(mmb_finalize());
  OK(mmb_init(&(mmbOptions){.log_level = MMB_LOG_OFF}));
  cr_assert_eq(mmb_layer_find("L0", &l), MMB_INVALID_ARG);
  cr_assert_str_eq(mmb_layer_name((mmbMemLayer)MMB_MEMLAYER_MAX), "unknown");
  cr_assert_eq(mmb_request_space((mmbMemLayer)MMB_MEMLAYER_MAX, MMB_CPU, NULL, &s),
               MMB_INVALID_ARG);
}

MMB_TEST(layer, mmb_layers_registers_them_at_init) {
  OK(mmb_finalize());
  mmbOptions quiet = {.log_level = MMB_LOG_OFF};
  static const char *bad[] = {"CXL", "CXL:GDRAM", "CXL:DRAM:x", "CXL:DRAM:0:0", "CXL:DRAM:0:1M:9",
                              "C-X:DRAM", "CXL:DRAM:7"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert_eq(setenv("MMB_LAYERS", bad[i], 1), 0);
    cr_assert_neq(mmb_init(&quiet), MMB_OK, "MMB_LAYERS=%s", bad[i]);
  }
  cr_assert_eq(setenv("MMB_LAYERS", "CXL:DRAM:0:32M,far:dram", 1), 0);
  cr_assert_eq(setenv("MMB_CACHE", "CXL:1M:clean=0.25", 1), 0);   /* names the layer */
  OK(mmb_init(&quiet));
  unsetenv("MMB_LAYERS");
  unsetenv("MMB_CACHE");
  mmbMemLayer l, far;
  OK(mmb_layer_find("CXL", &l));
  OK(mmb_layer_find("FAR", &far));
  cr_assert(l == MMB_MEMLAYER_MAX && far == MMB_MEMLAYER_MAX + 1);
  mmbMemSpace *s;
  OK(mmb_request_space(l, MMB_CPU, NULL, &s));
  size_t cap;
  OK(mmb_space_capacity(s, &cap));
  cr_assert_eq(cap, 32 << 20);
  mmbCacheConfig cc;
  OK(mmb_space_get_cache(s, &cc));
  cr_assert(cc.budget_bytes == 1 << 20 && cc.clean_share == 0.25);
}
