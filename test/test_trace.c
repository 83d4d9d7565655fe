/* The trace: start/stop/dump rules, the JSON it writes (checked by
   test/trace/check_trace.py), the bounded ring, MMB_TRACE at init. */
#include "common.h"

#include <stdio.h>
#include <unistd.h>

static char *temp_path(const char *tag) {
  static char path[128];
  snprintf(path, sizeof path, "/tmp/mmb-trace-%s-%d.json", tag, (int)getpid());
  return path;
}

/* Runs the checker on path; true when every expectation holds. */
static bool trace_holds(const char *path, const char *expect) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "python3 test/trace/check_trace.py %s %s", path, expect);
  return system(cmd) == 0;
}

MMB_TEST(trace, start_stop_and_dump_rules) {
  FAILS(mmb_trace_stop(), MMB_INVALID_STATE);
  FAILS(mmb_trace_set_capacity(0), MMB_INVALID_ARG);
  FAILS(mmb_trace_set_capacity(SIZE_MAX), MMB_OVERFLOW);
  FAILS(mmb_trace_dump(NULL), MMB_INVALID_ARG);
  FAILS(mmb_trace_dump(""), MMB_INVALID_ARG);
  FAILS(mmb_trace_dump("/nonexistent-dir/trace.json"), MMB_IO);
  char *path = temp_path("empty");
  OK(mmb_trace_dump(path));   /* nothing recorded: still a valid trace */
  cr_assert(trace_holds(path, "allocs=0 dropped=0"));
  OK(mmb_trace_start());
  FAILS(mmb_trace_start(), MMB_BUSY);
  FAILS(mmb_trace_set_capacity(10), MMB_BUSY);
  OK(mmb_trace_stop());
  FAILS(mmb_trace_stop(), MMB_INVALID_STATE);
  unlink(path);
}

MMB_TEST(trace, events_and_counter_tracks) {
  mmbMemSpace *dram, *limited;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *before = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbAllocation *old;
  OK(mmb_allocate(4096, before, &old));   /* live when the trace starts */
  OK(mmb_trace_start());
  OK(mmb_request_space(MMB_DRAM, MMB_CPU,
                       &(mmbMemSpaceConfig){.size_limit = 1 << 26, .name = "traced, limited"},
                       &limited));
  mmbMemInterfaceConfig pool = {.strategy = MMB_STRATEGY_POOL};
  mmbMemInterface *iface;
  OK(mmb_request_interface(limited, &pool, &iface));
  mmbAllocation *a[10];
  for (int i = 0; i < 10; i++) OK(mmb_allocate(1000 * (size_t)(i + 1), iface, &a[i]));
  OK(mmb_copy_1d(a[1], 0, a[0], 0, 1000));
  OK(mmb_copy_1d(a[0], 0, old, 0, 1000));
  for (int i = 0; i < 10; i++) OK(mmb_free(a[i]));
  OK(mmb_trace_stop());
  mmbAllocation *late;
  OK(mmb_allocate(64, iface, &late));   /* after stop: not recorded */
  char *path = temp_path("events");
  OK(mmb_trace_dump(path));
  char expect[256];
  snprintf(expect, sizeof expect, "allocs=10 frees=10 copies=2 dropped=0 space='%s' final_used=4096",
           "DRAM (NUMA 0)");
  cr_assert(trace_holds(path, expect), "%s", expect);
  cr_assert(trace_holds(path, "space='traced, limited' final_used=0"));
  unlink(path);
  OK(mmb_free(late));
  OK(mmb_free(old));
  OK(mmb_interface_destroy(iface));
  OK(mmb_interface_destroy(before));
  OK(mmb_space_release(limited));
}

/* A program that requests a space per phase: each of hundreds of spaces,
   one after the other (often at the address the last one freed), gets its
   own counter track under its own name. */
MMB_TEST(trace, every_space_of_a_long_run_has_its_track) {
  enum { PHASES = 300 };
  OK(mmb_trace_start());
  mmbAllocation *kept = NULL;
  mmbMemInterface *last_iface = NULL;
  mmbMemSpace *last = NULL;
  for (int i = 0; i < PHASES; i++) {
    char name[32];
    snprintf(name, sizeof name, "phase %d", i);
    mmbMemSpace *s;
    OK(mmb_request_space(MMB_DRAM, MMB_CPU,
                         &(mmbMemSpaceConfig){.size_limit = 1 << 20, .name = name}, &s));
    mmbMemInterface *iface;
    OK(mmb_request_interface(s, NULL, &iface));
    mmbAllocation *a;
    OK(mmb_allocate(1000 * (size_t)(i % 7 + 1), iface, &a));
    if (i == PHASES - 1) {   /* the last phase keeps a block, so its track ends above 0 */
      OK(mmb_allocate(4096, iface, &kept));
      last_iface = iface;
      last = s;
    }
    OK(mmb_free(a));
    if (i == PHASES - 1) break;
    OK(mmb_interface_destroy(iface));
    OK(mmb_space_release(s));
  }
  OK(mmb_trace_stop());
  char *path = temp_path("phases");
  OK(mmb_trace_dump(path));
  cr_assert(trace_holds(path, "space='phase 0' final_used=0"));
  cr_assert(trace_holds(path, "space='phase 128' final_used=0"));
  cr_assert(trace_holds(path, "space='phase 299' final_used=4096"));
  unlink(path);
  OK(mmb_free(kept));
  OK(mmb_interface_destroy(last_iface));
  OK(mmb_space_release(last));
}

/* Bare blocks are traced like allocations: slab blocks by mmb_ptr_allocate's
   own path, larger ones by their handle's; on a pool and on a thread-safe
   one, whose quick paths (handles' and bare blocks') were warm before the
   trace began: they trust the thread's note to say no trace runs. */
static void quick_paths_traced(unsigned flags, const char *name) {
  mmbMemSpace *limited;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 1 << 26, .name = name},
                       &limited));
  mmbMemInterface *iface;
  OK(mmb_request_interface(limited,
                           &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL, .flags = flags},
                           &iface));
  void *warm[2];
  mmbAllocation *h[2];
  for (int i = 0; i < 2; i++) OK(mmb_allocate(100, iface, &h[i]));
  for (int i = 0; i < 2; i++) OK(mmb_free(h[i]));
  for (int i = 0; i < 2; i++) OK(mmb_ptr_allocate(100, iface, &warm[i]));
  OK(mmb_ptr_deallocate(warm[1], iface));
  OK(mmb_trace_start());
  void *p[4];
  size_t sizes[4] = {100, 100, 2000, 50000};
  for (int i = 0; i < 4; i++) OK(mmb_ptr_allocate(sizes[i], iface, &p[i]));
  for (int i = 0; i < 4; i++) OK(mmb_ptr_deallocate(p[i], iface));
  OK(mmb_ptr_deallocate(warm[0], iface));
  for (int i = 0; i < 2; i++) OK(mmb_allocate(100, iface, &h[i]));
  for (int i = 0; i < 2; i++) OK(mmb_free(h[i]));
  OK(mmb_trace_stop());
  char *path = temp_path("quick");
  char expect[128];
  snprintf(expect, sizeof expect, "allocs=6 frees=7 space='%s' final_used=0", name);
  OK(mmb_trace_dump(path));
  cr_assert(trace_holds(path, expect), "%s", expect);
  unlink(path);
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(limited));
}

MMB_TEST(trace, quick_paths_of_a_warm_pool) {
  quick_paths_traced(0, "traced, quick");
  quick_paths_traced(MMB_INTERFACE_THREAD_SAFE, "traced, quick, thread-safe");
}

MMB_TEST(trace, the_ring_drops_the_oldest_and_says_so) {
  OK(mmb_trace_set_capacity(16));
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  OK(mmb_trace_start());
  mmbAllocation *a;
  for (int i = 0; i < 50; i++) {   /* basic: alloc, trip, free, trip = 4 events each */
    OK(mmb_allocate(100, iface, &a));
    OK(mmb_free(a));
  }
  OK(mmb_allocate(777, iface, &a));
  char *path = temp_path("ring");
  OK(mmb_trace_dump(path));   /* while running */
  cr_assert(trace_holds(path, "dropped=186 space='DRAM (NUMA 0)' final_used=777"));
  unlink(path);
  OK(mmb_free(a));
  OK(mmb_interface_destroy(iface));
}

Test(trace, mmb_trace_at_init_dumps_at_finalize) {
  char *path = temp_path("env");
  unlink(path);
  setenv("MMB_TRACE", path, 1);
  setenv("MMB_TRACE_BACKTRACE", "4", 1);
  mmb_test_setup();
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbAllocation *a;
  OK(mmb_allocate(12345, iface, &a));
  OK(mmb_free(a));
  mmb_test_teardown();
  cr_assert(trace_holds(path, "allocs=1 frees=1 stacks=1"));
  unlink(path);
  setenv("MMB_TRACE_CAPACITY", "lots", 1);
  mmbOptions quiet = {.log_level = MMB_LOG_OFF};
  FAILS(mmb_init(&quiet), MMB_INVALID_ARG);
  setenv("MMB_TRACE_CAPACITY", "8", 1);
  setenv("MMB_TRACE_BACKTRACE", "9", 1);
  FAILS(mmb_init(&quiet), MMB_INVALID_ARG);
  cr_assert_not(mmb_is_initialized());
  ASSERT_NO_LEAKS();
}

/* A trace that could not be written at the end fails init instead, naming
   the variable; nothing is left behind by the check. */
Test(trace, an_unwritable_mmb_trace_fails_init) {
  mmbOptions quiet = {.log_level = MMB_LOG_OFF};
  setenv("MMB_TRACE", "/nonexistent/dir/t.json", 1);
  FAILS(mmb_init(&quiet), MMB_IO);
  cr_assert_not(mmb_is_initialized());
  char *path = temp_path("checked");
  unlink(path);
  setenv("MMB_TRACE", path, 1);
  OK(mmb_init(&quiet));
  cr_assert_neq(access(path, F_OK), 0, "the check left a file");
  OK(mmb_finalize());
  cr_assert_eq(access(path, F_OK), 0, "no trace at finalize");
  unlink(path);
  unsetenv("MMB_TRACE");
}
