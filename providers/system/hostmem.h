/* Internal: page-granular host memory from mmap, for the system and pinned
   providers: any power-of-two alignment, NUMA binding, huge-page advice. */
#ifndef MMB_HOSTMEM_H
#define MMB_HOSTMEM_H

#include "../../src/alloc/alloc.h"

/* Maps round_up(size, page) bytes aligned to `alignment`, bound to NUMA node
   `numa_os` (OS index, -1 = no binding) when the node has several. Fresh
   mappings read as zeros. */
mmbError mmb__host_map(size_t size, size_t alignment, int numa_os, void **out);
void mmb__host_unmap(void *ptr, size_t size);
size_t mmb__page_size(void);

#endif
