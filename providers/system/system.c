/* The system provider: host memory of the space's NUMA node. Small blocks
   come from the C allocator (placed by first touch); blocks of 64 KiB and more,
   or aligned beyond a page, are mapped with mmb_host_map: bound to the node
   and advised to use huge pages from 2 MiB. */
#include "builtin.h"

#include <stdlib.h>
#include <string.h>

#define MAP_THRESHOLD ((size_t)64 << 10)

typedef struct system_state {
  int numa_os;
} system_state;

static bool mapped(size_t size, size_t alignment) {
  return size >= MAP_THRESHOLD || alignment > mmb_host_page_size();
}

static mmbError system_init(void *state, const mmbProviderTarget *target) {
  ((system_state *)state)->numa_os = target->numa_node;
  return MMB_OK;
}

static mmbError system_alloc(void *state, size_t size, size_t alignment, unsigned flags,
                             void **out) {
  system_state *st = state;
  if (mapped(size, alignment)) return mmb_host_map(size, alignment, st->numa_os, out);
  void *p = NULL;
  if (posix_memalign(&p, alignment, size) != 0) return MMB_OUT_OF_MEMORY;
  if (flags & MMB_ALLOC_ZERO) memset(p, 0, size);
  *out = p;
  return MMB_OK;
}

static void system_free(void *state, void *ptr, size_t size, size_t alignment) {
  (void)state;
  if (mapped(size, alignment)) MMB__MUST(mmb_host_unmap(ptr, size));
  else free(ptr);
}

const mmbProviderOps mmb__system_provider = {
    .abi_version = MMB_PROVIDER_ABI_VERSION,
    .name = "system",
    .state_size = sizeof(system_state),
    .caps = MMB_PROVIDER_HOST_ACCESSIBLE,
    .layers = (1u << MMB_DRAM) | (1u << MMB_HBM) | (1u << MMB_NVDIMM),
    .init = system_init,
    .alloc = system_alloc,
    .free = system_free,
};
