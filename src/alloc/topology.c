/* Discovery at init: hwloc's NUMA nodes become DRAM, HBM or NVDIMM spaces;
   CUDA devices become GDRAM spaces, and pinned (DRAM, GPU_CUDA) spaces appear
   beside each DRAM node when there is a device. */
#include "alloc.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static hwloc_topology_t topology;
static int numa_nodes;

hwloc_topology_t mmb__topology(void) { return topology; }
int mmb__numa_node_count(void) { return numa_nodes; }

static bool contains(const char *haystack, const char *needle) {
  return haystack && strcasestr(haystack, needle) != NULL;
}

/* hwloc names special memory in the node's subtype (MCDRAM, HBM, NVM, GPUMemory)
   and in the DAXType info of persistent memory. */
static int classify_by_name(hwloc_obj_t node) {
  if (contains(node->subtype, "GPUMemory")) return -1;   /* seen through CUDA instead */
  if (contains(node->subtype, "HBM") || contains(node->subtype, "MCDRAM")) return MMB_HBM;
  if (contains(node->subtype, "NVM") || contains(node->subtype, "NVDIMM") ||
      contains(hwloc_obj_get_info_by_name(node, "DAXType"), "NVM"))
    return MMB_NVDIMM;
  return MMB_DRAM;
}

/* Without names, memory attributes tell: a node whose best bandwidth is at
   least twice the slowest node's is HBM. */
static hwloc_uint64_t best_bandwidth(hwloc_obj_t node) {
  struct hwloc_location initiator;
  hwloc_uint64_t value = 0;
  if (hwloc_memattr_get_best_initiator(topology, HWLOC_MEMATTR_ID_BANDWIDTH, node, 0,
                                       &initiator, &value) != 0)
    return 0;
  return value;
}

static size_t physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

static mmbError add_numa_spaces(mmbMemSpace **dram_of_node) {
  hwloc_uint64_t slowest = 0;
  for (int i = 0; i < numa_nodes; i++) {
    hwloc_uint64_t bw = best_bandwidth(hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, i));
    if (bw && (!slowest || bw < slowest)) slowest = bw;
  }
  for (int i = 0; i < numa_nodes; i++) {
    hwloc_obj_t node = hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, (unsigned)i);
    int layer = classify_by_name(node);
    if (layer < 0) continue;
    if (layer == MMB_DRAM && slowest && best_bandwidth(node) >= 2 * slowest) layer = MMB_HBM;
    mmbSpaceInfo info = {.layer = (mmbMemLayer)layer, .context = MMB_CPU,
                         .numa_node = (int)node->os_index, .device = -1,
                         .capacity = node->attr->numanode.local_memory,
                         .default_provider = MMB_PROVIDER_SYSTEM};
    /* One node holds all memory; some VMs report less for it in sysfs. */
    if (numa_nodes == 1 && info.capacity < physical_memory()) info.capacity = physical_memory();
    snprintf(info.name, sizeof info.name, "%s (NUMA %u)", mmb_layer_name(info.layer),
             node->os_index);
    mmbError err = mmb__space_add(&info, NULL, &dram_of_node[i]);
    if (err != MMB_OK) return err;
    mmb__log(MMB_LOG_DEBUG, "space %s: %zu bytes%s%s", info.name, info.capacity,
             node->subtype ? ", hwloc subtype " : "", node->subtype ? node->subtype : "");
  }
  return MMB_OK;
}

static mmbError add_cuda_spaces(mmbMemSpace **dram_of_node) {
  int devices = mmb__cuda ? mmb__cuda->device_count() : 0;
  if (!mmb__cuda) mmb__log(MMB_LOG_INFO, "built without CUDA: no GDRAM spaces");
  for (int d = 0; d < devices; d++) {
    size_t free_bytes = 0, total = 0;
    mmbError err = mmb__cuda->mem_info(d, &free_bytes, &total);
    if (err != MMB_OK) return err;
    mmbSpaceInfo info = {.layer = MMB_GDRAM, .context = MMB_GPU_CUDA, .numa_node = -1,
                         .device = d, .capacity = total, .default_provider = MMB_PROVIDER_CUDA};
    snprintf(info.name, sizeof info.name, "GDRAM (GPU %d)", d);
    if ((err = mmb__space_add(&info, NULL, NULL)) != MMB_OK) return err;
  }
  if (devices == 0) return MMB_OK;
  /* Pinned host memory: DRAM accessed by the GPU; it draws on the node's DRAM. */
  for (int i = 0; i < numa_nodes; i++) {
    mmbMemSpace *dram = dram_of_node[i];
    if (!dram || dram->info.layer != MMB_DRAM) continue;
    mmbSpaceInfo info = dram->info;
    info.context = MMB_GPU_CUDA;
    info.default_provider = MMB_PROVIDER_PINNED;
    snprintf(info.name, sizeof info.name, "DRAM pinned (NUMA %d)", dram->info.numa_node);
    mmbError err = mmb__space_add(&info, dram, NULL);
    if (err != MMB_OK) return err;
  }
  return MMB_OK;
}

mmbError mmb__topology_discover(void) {
  if (hwloc_topology_init(&topology) != 0) return MMB_OUT_OF_MEMORY;
  if (hwloc_topology_load(topology) != 0) {
    mmb__log(MMB_LOG_ERROR, "hwloc could not read the topology of this node");
    hwloc_topology_destroy(topology);
    topology = NULL;
    return MMB_ERROR;
  }
  numa_nodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  mmbMemSpace *dram_of_node[256] = {0};
  if (numa_nodes > 256) numa_nodes = 256;
  mmbError err = add_numa_spaces(dram_of_node);
  if (err == MMB_OK) err = add_cuda_spaces(dram_of_node);
  if (err != MMB_OK) mmb__topology_finalize();
  return err;
}

void mmb__topology_finalize(void) {
  if (topology) hwloc_topology_destroy(topology);
  topology = NULL;
  numa_nodes = 0;
}
