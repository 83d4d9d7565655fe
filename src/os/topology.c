/* The machine's topology, with hwloc: NUMA nodes and their memory
   attributes for discovery, and binding threads near a node. */
#include "os/internal.h"

#include <hwloc.h>
#include <stdio.h>
#include <unistd.h>

static hwloc_topology_t topology;
static int numa_nodes;

mmbError mmb__os_init(void) {
  if (hwloc_topology_init(&topology) != 0) return MMB_OUT_OF_MEMORY;
  if (hwloc_topology_load(topology) != 0) {
    mmb__log(MMB_LOG_ERROR, "hwloc could not read the topology of this node");
    hwloc_topology_destroy(topology);
    topology = NULL;
    return MMB_ERROR;
  }
  numa_nodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  if (numa_nodes > MMB__MAX_NUMA_NODES) numa_nodes = MMB__MAX_NUMA_NODES;
  mmbError err = mmb__os_storage_init();
  if (err != MMB_OK) {
    hwloc_topology_destroy(topology);
    topology = NULL;
  }
  return err;
}

void mmb__os_finalize(void) {
  mmb__os_forget_cuda();
  if (topology) hwloc_topology_destroy(topology);
  topology = NULL;
  numa_nodes = 0;
}

/* For mmb_host_bind (hostmem.c). */
hwloc_topology_t mmb__os_topology(void);
hwloc_topology_t mmb__os_topology(void) { return topology; }

int mmb__os_numa_count(void) { return numa_nodes; }

/* hwloc's best value of a memory attribute over the node's initiators
   (HMAT tables, or hwloc's own knowledge); 0 when the machine gives none. */
static unsigned long long best_attribute(hwloc_obj_t node, hwloc_memattr_id_t id) {
  struct hwloc_location initiator;
  hwloc_uint64_t value = 0;
  if (hwloc_memattr_get_best_initiator(topology, id, node, 0, &initiator, &value) != 0) return 0;
  return value;
}

bool mmb__os_numa_distance(unsigned from_os, unsigned to_os, unsigned *out) {
  if (!topology) return false;
  struct hwloc_distances_s *d[4];
  unsigned n = 4;
  if (hwloc_distances_get_by_type(topology, HWLOC_OBJ_NUMANODE, &n, d,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0)
    return false;
  bool found = false;
  for (unsigned k = 0; k < n && k < 4; k++) {
    if (!found) {
      int from = -1, to = -1;
      for (unsigned i = 0; i < d[k]->nbobjs; i++) {
        if (d[k]->objs[i]->os_index == from_os) from = (int)i;
        if (d[k]->objs[i]->os_index == to_os) to = (int)i;
      }
      if (from >= 0 && to >= 0) {
        *out = (unsigned)d[k]->values[(unsigned)from * d[k]->nbobjs + (unsigned)to];
        found = true;
      }
    }
    hwloc_distances_release(topology, d[k]);
  }
  return found;
}

bool mmb__os_numa_node(int i, mmb__numa_node *out) {
  hwloc_obj_t node = i >= 0 && i < numa_nodes
                         ? hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, (unsigned)i)
                         : NULL;
  if (!node) return false;
  const char *dax = hwloc_obj_get_info_by_name(node, "DAXType");
  *out = (mmb__numa_node){.os_index = node->os_index,
                          .local_memory = node->attr->numanode.local_memory,
                          .best_bandwidth = best_attribute(node, HWLOC_MEMATTR_ID_BANDWIDTH),
                          .best_latency = best_attribute(node, HWLOC_MEMATTR_ID_LATENCY)};
  snprintf(out->subtype, sizeof out->subtype, "%s", node->subtype ? node->subtype : "");
  snprintf(out->dax_type, sizeof out->dax_type, "%s", dax ? dax : "");
  return true;
}

/* No CPU has more than about 12 MiB of last-level cache a core (AMD's
   3D V-Cache parts); more per PU is a virtual machine's view of the whole
   chip's cache, which other tenants share: an Intel Xeon VM of 2 vCPUs
   sees the chip's 260 MiB, and there a copy of 16 MiB into memory that is
   not cached already runs at 0.7x of one with streaming stores. */
#define LLC_PER_PU ((size_t)16 << 20)

size_t mmb__os_physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

size_t mmb__os_llc_bytes(void) {
  if (!topology) return 0;
  /* the largest data cache above the first core: the one a copy's bytes
     pass through, counted at most LLC_PER_PU for each PU that shares it */
  hwloc_obj_t pu = hwloc_get_obj_by_type(topology, HWLOC_OBJ_PU, 0);
  size_t best = 0;
  for (hwloc_obj_t o = pu; o; o = o->parent)
    if (hwloc_obj_type_is_dcache(o->type) && o->attr && o->attr->cache.size > 0) {
      int pus = o->cpuset ? hwloc_bitmap_weight(o->cpuset) : 1;
      size_t share = mmb__min((size_t)o->attr->cache.size,
                              LLC_PER_PU * (size_t)(pus > 0 ? pus : 1));
      if (share > best) best = share;
    }
  return best;
}

void mmb__os_bind_thread(pthread_t thread, int numa_os) {
  if (numa_os < 0 || !topology) return;
  hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topology, (unsigned)numa_os);
  if (!node || !node->cpuset) return;
  if (hwloc_set_thread_cpubind(topology, thread, node->cpuset, 0) != 0)
    mmb__log(MMB_LOG_DEBUG, "could not bind a thread near NUMA node %d", numa_os);
}
