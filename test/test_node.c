/* The node as mmb describes it: hwloc's distances and memory attributes
   (on a topology the test writes as XML), the CUDA status, emulated tiers
   (MMB_EMULATE), the version and the logging callback. */
#include "common.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Two NUMA nodes, the second with 20x the bandwidth (so: HBM), SLIT
   distances 10/21, as hwloc exports them. */
static const char two_nodes_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    "  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000003\" complete_cpuset=\"0x00000003\" allowed_cpuset=\"0x00000003\" nodeset=\"0x00000003\" complete_nodeset=\"0x00000003\" allowed_nodeset=\"0x00000003\" gp_index=\"1\">\n"
    "    <object type=\"Package\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"4\">\n"
    "      <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"5\" local_memory=\"1073741824\">\n"
    "        <page_type size=\"4096\" count=\"262144\"/>\n"
    "      </object>\n"
    "      <object type=\"Core\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"3\">\n"
    "        <object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"2\"/>\n"
    "      </object>\n"
    "    </object>\n"
    "    <object type=\"Package\" os_index=\"1\" cpuset=\"0x00000002\" complete_cpuset=\"0x00000002\" nodeset=\"0x00000002\" complete_nodeset=\"0x00000002\" gp_index=\"8\">\n"
    "      <object type=\"NUMANode\" os_index=\"1\" cpuset=\"0x00000002\" complete_cpuset=\"0x00000002\" nodeset=\"0x00000002\" complete_nodeset=\"0x00000002\" gp_index=\"9\" local_memory=\"1073741824\">\n"
    "        <page_type size=\"4096\" count=\"262144\"/>\n"
    "      </object>\n"
    "      <object type=\"Core\" os_index=\"1\" cpuset=\"0x00000002\" complete_cpuset=\"0x00000002\" nodeset=\"0x00000002\" complete_nodeset=\"0x00000002\" gp_index=\"7\">\n"
    "        <object type=\"PU\" os_index=\"1\" cpuset=\"0x00000002\" complete_cpuset=\"0x00000002\" nodeset=\"0x00000002\" complete_nodeset=\"0x00000002\" gp_index=\"6\"/>\n"
    "      </object>\n"
    "    </object>\n"
    "  </object>\n"
    "  <distances2 type=\"NUMANode\" nbobjs=\"2\" kind=\"5\" indexing=\"os\">\n"
    "    <indexes length=\"4\">0 1 </indexes>\n"
    "    <u64values length=\"12\">10 21 21 10 </u64values>\n"
    "  </distances2>\n"
    "  <memattr name=\"Bandwidth\" flags=\"5\">\n"
    "    <memattr_value target_obj_type=\"NUMANode\" target_obj_gp_index=\"5\" value=\"20000\" initiator_cpuset=\"0x00000001\"/>\n"
    "    <memattr_value target_obj_type=\"NUMANode\" target_obj_gp_index=\"9\" value=\"400000\" initiator_cpuset=\"0x00000002\"/>\n"
    "  </memattr>\n"
    "  <memattr name=\"Latency\" flags=\"6\">\n"
    "    <memattr_value target_obj_type=\"NUMANode\" target_obj_gp_index=\"5\" value=\"90\" initiator_cpuset=\"0x00000001\"/>\n"
    "    <memattr_value target_obj_type=\"NUMANode\" target_obj_gp_index=\"9\" value=\"120\" initiator_cpuset=\"0x00000002\"/>\n"
    "  </memattr>\n"
    "</topology>\n";

static char topology_path[] = "/tmp/mmb-topology-XXXXXX";

/* HWLOC_XMLFILE names the file; it is read at mmb_init, then removed. */
static void use_topology(void) {
  char *path = topology_path;
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, two_nodes_xml, sizeof two_nodes_xml - 1), (ssize_t)sizeof two_nodes_xml - 1);
  close(fd);
  cr_assert_eq(setenv("HWLOC_XMLFILE", path, 1), 0);
  cr_assert_eq(setenv("HWLOC_THISSYSTEM", "1", 1), 0);
}

Test(node, distances_and_memory_attributes_come_from_hwloc) {
  use_topology();
  mmb_test_setup();
  cr_assert_eq(unlink(topology_path), 0);
  mmbMemSpace *dram, *hbm;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  OK(mmb_request_space(MMB_HBM, MMB_CPU, NULL, &hbm));
  mmbSpaceInfo a, b;
  OK(mmb_space_get_info(dram, &a));
  OK(mmb_space_get_info(hbm, &b));
  cr_assert_eq(a.bandwidth, 20000);
  cr_assert_eq(a.latency, 90);
  cr_assert_eq(b.bandwidth, 400000, "the faster node is classified HBM");
  cr_assert_eq(b.latency, 120);
  cr_assert(!a.emulated && !b.emulated);
  unsigned d;
  OK(mmb_space_distance(dram, dram, &d));
  cr_assert_eq(d, 10);
  OK(mmb_space_distance(dram, hbm, &d));
  cr_assert_eq(d, 21);
  FAILS(mmb_space_distance(NULL, hbm, &d), MMB_INVALID_ARG);
  FAILS(mmb_space_distance(dram, hbm, NULL), MMB_INVALID_ARG);
  mmb_test_teardown();
}

MMB_TEST(node, without_distances_the_answer_is_unavailable) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  unsigned d = 0;
  mmbError err = mmb_space_distance(dram, dram, &d);
  /* this machine's firmware may give a table (then local is 10) or none */
  cr_assert(err == MMB_UNAVAILABLE || (err == MMB_OK && d == 10), "%s, %u", mmb_error_name(err), d);
}

MMB_TEST(node, the_cuda_status_says_why_there_is_no_gpu) {
  int n = -1;
  const char *why = "unset";
  OK(mmb_cuda_status(&n, &why));
  size_t spaces, gdram = 0;
  OK(mmb_space_count(&spaces));
  for (size_t i = 0; i < spaces; i++) {
    mmbMemSpace *s;
    mmbMemLayer layer;
    OK(mmb_space_at(i, &s));
    OK(mmb_space_layer(s, &layer));
    gdram += layer == MMB_GDRAM;
  }
  cr_assert_eq((size_t)n, gdram, "one GDRAM space per device");
  if (n == 0) cr_assert(why && *why, "no GPU and no reason");
  else cr_assert_null(why);
  FAILS(mmb_cuda_status(NULL, &why), MMB_INVALID_ARG);
}

Test(node, cuda_status_before_init_is_refused) {
  int n;
  FAILS(mmb_cuda_status(&n, NULL), MMB_NOT_INITIALIZED);
}

/* MMB_EMULATE adds a tier over DRAM that code finds as it would a real one. */
Test(node, an_emulated_hbm_tier_is_a_space_like_any) {
  cr_assert_eq(setenv("MMB_EMULATE", "HBM:64M,NVDIMM:128M:bw=1G", 1), 0);
  mmb_test_setup();
  mmbMemSpace *hbm, *nv;
  OK(mmb_request_space(MMB_HBM, MMB_CPU, NULL, &hbm));
  OK(mmb_request_space(MMB_NVDIMM, MMB_CPU, NULL, &nv));
  mmbSpaceInfo info;
  OK(mmb_space_get_info(hbm, &info));
  cr_assert(info.emulated);
  cr_assert_eq(info.capacity, 64u << 20);
  cr_assert_eq(info.limit, 64u << 20);
  mmbMemInterface *iface;
  OK(mmb_request_interface(hbm, NULL, &iface));
  mmbAllocation *a, *too_big;
  OK(mmb_allocate(32u << 20, iface, &a));
  memset(mmb_allocation_ptr(a), 1, 32u << 20);
  FAILS(mmb_allocate(48u << 20, iface, &too_big), MMB_OUT_OF_MEMORY);
  /* bw=1G: 16 MiB take at least 15.6 ms to copy into the NVDIMM tier */
  mmbMemInterface *slow;
  OK(mmb_request_interface(nv, NULL, &slow));
  mmbAllocation *b;
  OK(mmb_allocate(16u << 20, slow, &b));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  OK(mmb_copy_1d(b, 0, a, 0, 16u << 20));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  cr_assert_geq(ms, 15.0, "a throttled copy took %.2f ms", ms);
  cr_assert_eq(((unsigned char *)mmb_allocation_ptr(b))[12345], 1);
  OK(mmb_free(a));
  OK(mmb_free(b));
  OK(mmb_interface_destroy(iface));
  OK(mmb_interface_destroy(slow));
  mmb_test_teardown();
}

static double ms_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* n bytes copied from `from` into `to`: the milliseconds it took. */
static double timed_copy(mmbMemInterface *to, mmbMemInterface *from, size_t n) {
  mmbAllocation *d, *s;
  OK(mmb_allocate(n, to, &d));
  OK(mmb_allocate(n, from, &s));
  memset(mmb_allocation_ptr(s), 7, n);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  OK(mmb_copy(d, s));
  double ms = ms_since(&t0);
  cr_assert_eq(((unsigned char *)mmb_allocation_ptr(d))[n - 1], 7);
  OK(mmb_free(d));
  OK(mmb_free(s));
  return ms;
}

static mmbMemInterface *interface_on(mmbMemLayer layer, size_t limit, mmbMemSpace **space) {
  OK(mmb_request_space(layer, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = limit}, space));
  mmbMemInterface *iface;
  OK(mmb_request_interface(*space, NULL, &iface));
  return iface;
}

/* A space requested from an emulated tier with a limit (what the CNN's
   plan does) is held to the tier's bw= too; DRAM:bw= throttles the DRAM
   spaces, the limited ones requested from them included. info.bandwidth
   says the rate. The times asserted are lower bounds: a loaded machine
   only makes a copy slower. */
Test(node, a_throttle_reaches_the_spaces_requested_from_the_tier) {
  cr_assert_eq(setenv("MMB_EMULATE", "HBM:64M:bw=100M,DRAM:bw=200M", 1), 0);
  mmb_test_setup();
  mmbMemSpace *hbm, *dram, *dram_near;
  mmbMemInterface *fast = interface_on(MMB_HBM, 16u << 20, &hbm);
  mmbMemInterface *home = interface_on(MMB_DRAM, 0, &dram);
  mmbMemInterface *near = interface_on(MMB_DRAM, 32u << 20, &dram_near);
  mmbSpaceInfo info;
  OK(mmb_space_get_info(hbm, &info));
  cr_assert_eq(info.bandwidth, 100, "the limited child says its tier's rate: %llu MiB/s",
               info.bandwidth);
  OK(mmb_space_get_info(dram, &info));
  cr_assert_eq(info.bandwidth, 200);
  /* 4 MiB into the limited HBM child: at least 40 ms at 100 MiB/s */
  double ms = timed_copy(fast, home, 4u << 20);
  cr_assert_geq(ms, 38.0, "4 MiB at bw=100M took %.2f ms", ms);
  /* DRAM to DRAM, a limited child of it on one side: at least 20 ms */
  ms = timed_copy(near, home, 4u << 20);
  cr_assert_geq(ms, 19.0, "4 MiB at bw=200M took %.2f ms", ms);
  OK(mmb_interface_destroy(fast));
  OK(mmb_interface_destroy(home));
  OK(mmb_interface_destroy(near));
  OK(mmb_space_release(hbm));
  OK(mmb_space_release(dram));
  OK(mmb_space_release(dram_near));
  mmb_test_teardown();
}

/* A throttled tier is one link: two copies at once share its rate, so
   they take as long as one copy of both (not as long as one). */
Test(node, copies_at_once_share_a_throttled_link) {
  cr_assert_eq(setenv("MMB_EMULATE", "HBM:64M:bw=100M", 1), 0);
  mmb_test_setup();
  mmbMemSpace *hbm, *dram;
  mmbMemInterface *fast = interface_on(MMB_HBM, 0, &hbm);
  mmbMemInterface *home = interface_on(MMB_DRAM, 0, &dram);
  enum { COPIES = 2, BYTES = 4u << 20 };
  mmbAllocation *d[COPIES], *s[COPIES];
  mmbQueue *q[COPIES];
  mmbRequest r[COPIES] = {{0}};
  for (int i = 0; i < COPIES; i++) {
    OK(mmb_allocate(BYTES, fast, &d[i]));
    OK(mmb_allocate(BYTES, home, &s[i]));
    memset(mmb_allocation_ptr(s[i]), i + 1, BYTES);
    OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q[i]));
  }
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < COPIES; i++) OK(mmb_copy_async(d[i], s[i], q[i], &r[i]));
  for (int i = 0; i < COPIES; i++) OK(mmb_wait(&r[i]));
  double ms = ms_since(&t0);
  /* 8 MiB at 100 MiB/s: at least 80 ms, however many copies carry them */
  cr_assert_geq(ms, 78.0, "two 4 MiB copies at once at bw=100M took %.2f ms", ms);
  for (int i = 0; i < COPIES; i++) {
    cr_assert_eq(((unsigned char *)mmb_allocation_ptr(d[i]))[BYTES - 1], i + 1);
    OK(mmb_queue_destroy(NULL, &q[i]));
    OK(mmb_free(d[i]));
    OK(mmb_free(s[i]));
  }
  OK(mmb_interface_destroy(fast));
  OK(mmb_interface_destroy(home));
  OK(mmb_space_release(hbm));
  OK(mmb_space_release(dram));
  mmb_test_teardown();
}

static void emulate_refused(const char *value) {
  cr_assert_eq(setenv("MMB_EMULATE", value, 1), 0);
  FAILS(mmb_init(&(mmbOptions){.log_level = MMB_LOG_OFF}), MMB_INVALID_ARG);
  cr_assert(!mmb_is_initialized());
}

Test(node, a_malformed_emulation_fails_init) {
  const char *bad[] = {"HBM", "HBM:", "HBM:4X", "HBM:0", "GDRAM:1G", "DRAM2:1G", "HBM:1G:bw=",
                       "HBM:1G:bw=0", "HBM:1G:speed=1G", "HBM:1G,", "HBM:1G,NVDIMM",
                       "DRAM:1G", "DRAM:bw=", "DRAM:bw=0", "DRAM:bw=fast"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) emulate_refused(bad[i]);
}

Test(node, the_version_is_the_headers_one) {
  int major = -1, minor = -1, patch = -1;
  const char *v = mmb_version(&major, &minor, &patch);
  cr_assert_str_eq(v, MMB_VERSION_STRING);
  cr_assert_eq(major, MMB_VERSION_MAJOR);
  cr_assert_eq(minor, MMB_VERSION_MINOR);
  cr_assert_eq(patch, MMB_VERSION_PATCH);
  cr_assert_str_eq(mmb_version(NULL, NULL, NULL), v);
}

typedef struct seen {
  int count;
  mmbLogLevel level;
  char text[256];
} seen;

static void keep(mmbLogLevel level, const char *message, void *user) {
  seen *s = user;
  s->count++;
  s->level = level;
  snprintf(s->text, sizeof s->text, "%s", message);
}

Test(node, the_logging_callback_gets_the_messages) {
  seen s = {0};
  OK(mmb_logging_set_callback(keep, &s));   /* before init: allowed */
  OK(mmb_init(&(mmbOptions){.log_level = MMB_LOG_DEBUG}));
  cr_assert_gt(s.count, 0, "init says things at debug level");
  s.count = 0;
  mmbAllocation *a = NULL;
  FAILS(mmb_free(a), MMB_INVALID_ARG);
  cr_assert_gt(s.count, 0);
  cr_assert(strstr(s.text, "mmb_free"), "the message names the call: %s", s.text);
  OK(mmb_logging_set_level(MMB_LOG_OFF));
  s.count = 0;
  FAILS(mmb_free(a), MMB_INVALID_ARG);
  cr_assert_eq(s.count, 0, "the level still filters");
  OK(mmb_logging_set_callback(NULL, NULL));
  OK(mmb_finalize());
}
