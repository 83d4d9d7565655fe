/* The storage tier: the MMB_STORAGE space and its file provider (which
   also runs the provider contract, test_contract.c). The space's
   discovery, the tile cache over it, a limit that refuses,
   mmb_register_memory, MMB_STORAGE_DIR's misuse, and nothing left behind:
   no file, no descriptor, even after kill -9. */
#include "arrays.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static mmbMemSpace *storage(void) {
  mmbMemSpace *s;
  OK(mmb_request_space(MMB_STORAGE, MMB_CPU, NULL, &s));
  return s;
}

static mmbMemInterface *on(mmbMemSpace *s, mmbStrategyType strategy) {
  mmbMemInterface *iface;
  OK(mmb_request_interface(s, &(mmbMemInterfaceConfig){.strategy = strategy}, &iface));
  return iface;
}

static size_t entries(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "%s", dir);
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static size_t open_fds(void) { return entries("/proc/self/fd"); }

/* A fresh directory for the storage tier, made before mmb_init. */
static char *fresh_dir(void) {
  static char dir[64];
  snprintf(dir, sizeof dir, "/var/tmp/mmb-storage-test-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  cr_assert_eq(setenv("MMB_STORAGE_DIR", dir, 1), 0);
  return dir;
}

MMB_TEST(storage, the_storage_space_is_discovered) {
  mmbMemSpace *s = storage();
  mmbSpaceInfo info;
  OK(mmb_space_get_info(s, &info));
  cr_assert_eq(info.layer, MMB_STORAGE);
  cr_assert_eq(info.default_provider, MMB_PROVIDER_FILE);
  cr_assert(info.providers & (1u << MMB_PROVIDER_FILE));
  cr_assert_not(info.providers & (1u << MMB_PROVIDER_SYSTEM));
  cr_assert_gt(info.capacity, 0);
  cr_assert_str_eq(mmb_layer_name(MMB_STORAGE), "STORAGE");
  cr_assert_str_eq(mmb_provider_name(MMB_PROVIDER_FILE), "file");
  mmbMemSpace *dram;   /* the file provider serves no other layer */
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface = NULL;
  FAILS(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.provider = MMB_PROVIDER_FILE},
                              &iface), MMB_UNSUPPORTED);
  OK(mmb_space_release(dram));
  OK(mmb_space_release(s));
}

/* The tile cache fetching from an array homed in storage and writing
   home there (blocks, copies, tiles and async copies on the file provider:
   test_contract.c). */
MMB_TEST(storage, the_cache_fetches_from_storage_and_writes_home_there) {
  mmbMemSpace *s = storage(), *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *pool = on(s, MMB_STRATEGY_POOL);
  mmbDimensions d = dims2(64, 64);
  mmbArray *a = test_array(pool, &d, MMB_ROWMAJOR, 0);
  double *home = mmb_array_ptr(a);
  for (size_t i = 0; i < 64 * 64; i++) home[i] = (double)i;
  OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 16}}));
  mmbArrayTile *t, *l;
  OK(mmb_tile_at(a, &(mmbIndex){2, {3, 3}}, &t));
  OK(mmb_tile_acquire(t, dram, MMB_READ_WRITE, &l));
  cr_assert_eq(l->space, dram);
  cr_assert_eq(MMB_TILE_AT_2D(l, double, 48, 48), 48.0 * 64 + 48);
  MMB_TILE_AT_2D(l, double, 48, 48) = -3.0;
  OK(mmb_tile_release(l));
  OK(mmb_array_flush(a));
  cr_assert_eq(home[48 * 64 + 48], -3.0);
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(pool));
  OK(mmb_space_release(dram));
  OK(mmb_space_release(s));
}

/* A limit stands for a full disk: what does not fit is refused, cleanly. */
Test(storage, a_limit_refuses_what_does_not_fit) {
  cr_assert_eq(setenv("MMB_LIMIT_STORAGE", "4M", 1), 0);
  mmb_test_setup();
  mmbMemSpace *s = storage(), *small;
  mmbMemInterface *iface = on(s, MMB_STRATEGY_BASIC);
  mmbAllocation *a = NULL, *b = NULL;
  FAILS(mmb_allocate(8u << 20, iface, &a), MMB_OUT_OF_MEMORY);
  OK(mmb_allocate(2u << 20, iface, &b));
  OK(mmb_free(b));
  OK(mmb_interface_destroy(iface));
  OK(mmb_request_space(MMB_STORAGE, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 1u << 20}, &small));
  iface = on(small, MMB_STRATEGY_BASIC);
  FAILS(mmb_allocate(2u << 20, iface, &a), MMB_OUT_OF_MEMORY);
  OK(mmb_allocate(512u << 10, iface, &b));
  FAILS(mmb_space_release(small), MMB_BUSY);   /* an interface is live on it */
  ((char *)mmb_allocation_ptr(b))[0] = 1;       /* still usable */
  OK(mmb_free(b));
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(small));
  OK(mmb_space_release(s));
  mmb_test_teardown();
}

/* mmb_register_memory makes the storage space a code asks for a limited one. */
MMB_TEST(storage, a_registered_storage_space_has_its_limit) {
  OK(mmb_register_memory(MMB_STORAGE, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 1u << 20}, NULL));
  mmbMemSpace *s;
  OK(mmb_request_space(MMB_STORAGE, MMB_CPU, NULL, &s));
  mmbMemInterface *iface;
  OK(mmb_request_interface(s, NULL, &iface));
  mmbAllocation *a = NULL, *b;
  FAILS(mmb_allocate(2u << 20, iface, &a), MMB_OUT_OF_MEMORY);
  OK(mmb_allocate(512u << 10, iface, &b));
  mmbMemInterface *got;
  OK(mmb_allocation_get_interface(b, &got));
  mmbProviderType p;
  OK(mmb_interface_get_provider(got, &p));
  cr_assert_eq(p, MMB_PROVIDER_FILE);
  OK(mmb_free(b));
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(s));
}

Test(storage, an_unusable_storage_dir_fails_init) {
  const char *bad[] = {"", "/nonexistent-mmb-dir", "/etc/hostname"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert_eq(setenv("MMB_STORAGE_DIR", bad[i], 1), 0);
    FAILS(mmb_init(&(mmbOptions){.log_level = MMB_LOG_OFF}), MMB_INVALID_ARG);
    cr_assert_not(mmb_is_initialized(), "%s", bad[i]);
  }
}

/* The files have no name and no descriptor stays open: the directory is
   empty while blocks live and after, and the descriptors are as before. */
Test(storage, no_file_and_no_descriptor_is_left) {
  char *dir = fresh_dir();
  mmb_test_setup();
  size_t fds = open_fds();
  mmbMemSpace *s = storage();
  mmbMemInterface *iface = on(s, MMB_STRATEGY_BASIC);
  mmbAllocation *a[4];
  for (int i = 0; i < 4; i++) {
    OK(mmb_allocate(1u << 20, iface, &a[i]));
    memset(mmb_allocation_ptr(a[i]), i, 1u << 20);
  }
  cr_assert_eq(entries(dir), 0, "a storage file has a name");
  cr_assert_eq(open_fds(), fds, "a storage file's descriptor stays open");
  for (int i = 0; i < 4; i++) OK(mmb_free(a[i]));
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(s));
  mmb_test_teardown();
  cr_assert_eq(entries(dir), 0);
  cr_assert_eq(rmdir(dir), 0);
}

/* A process killed with its storage blocks in use leaves nothing behind. */
Test(storage, a_killed_process_leaves_no_file) {
  char *dir = fresh_dir();
  int ready[2];
  cr_assert_eq(pipe(ready), 0);
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    if (mmb_init(&(mmbOptions){.log_level = MMB_LOG_OFF}) != MMB_OK) _exit(2);
    mmbMemSpace *s;
    mmbMemInterface *iface;
    mmbAllocation *a;
    if (mmb_request_space(MMB_STORAGE, MMB_CPU, NULL, &s) != MMB_OK ||
        mmb_request_interface(s, NULL, &iface) != MMB_OK ||
        mmb_allocate(8u << 20, iface, &a) != MMB_OK)
      _exit(3);
    memset(mmb_allocation_ptr(a), 1, 8u << 20);
    if (write(ready[1], "k", 1) != 1) _exit(4);
    for (;;) pause();
  }
  char c;
  cr_assert_eq(read(ready[0], &c, 1), 1, "the child did not get its block");
  cr_assert_eq(entries(dir), 0);
  cr_assert_eq(kill(child, SIGKILL), 0);
  int status;
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_assert(WIFSIGNALED(status));
  cr_assert_eq(entries(dir), 0, "the killed process left a file");
  cr_assert_eq(rmdir(dir), 0);
  close(ready[0]);
  close(ready[1]);
}
