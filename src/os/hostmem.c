/* Host memory for providers (mmb/provider.h): page-granular mappings with
   any power-of-two alignment, NUMA binding with hwloc, huge-page advice.
   The system and pinned providers use these, as a user's provider may. */
#include "os/internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <hwloc.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE_ADVICE_BYTES ((size_t)2 << 20)

hwloc_topology_t mmb__os_topology(void);

size_t mmb_host_page_size(void) {
  static _Atomic size_t page;   /* threads may race to fill it: same value */
  size_t p = atomic_load_explicit(&page, memory_order_relaxed);
  if (!p) atomic_store_explicit(&page, p = (size_t)sysconf(_SC_PAGESIZE), memory_order_relaxed);
  return p;
}

static size_t round_to_page(size_t n) {
  size_t page = mmb_host_page_size();
  return (n + page - 1) & ~(page - 1);
}

static bool is_node(int numa_node) {
  hwloc_topology_t t = mmb__os_topology();
  return t && hwloc_get_numanode_obj_by_os_index(t, (unsigned)numa_node) != NULL;
}

/* Binds whole pages; false when the OS refused (containers, policies). */
static bool bind_pages(void *p, size_t len, int numa_node) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return false;
  hwloc_bitmap_only(set, (unsigned)numa_node);
  bool ok = hwloc_set_area_membind(mmb__os_topology(), p, len, set, HWLOC_MEMBIND_BIND,
                                   HWLOC_MEMBIND_BYNODESET) == 0;
  if (!ok)
    mmb__log(MMB_LOG_DEBUG, "binding %zu bytes to NUMA node %d failed: %s", len, numa_node,
             strerror(errno));
  hwloc_bitmap_free(set);
  return ok;
}

mmbError mmb_host_bind(void *ptr, size_t size, int numa_node) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!ptr || !size, __func__, "NULL pointer or zero size");
  MMB__ARG((uintptr_t)ptr % mmb_host_page_size(), __func__, "%p is not page aligned", ptr);
  MMB__ARG(numa_node < 0 || !is_node(numa_node), __func__, "%d is not a NUMA node of this machine",
           numa_node);
  if (mmb__os_numa_count() < 2) return MMB_OK;   /* one node: nothing to choose */
  return bind_pages(ptr, round_to_page(size), numa_node) ? MMB_OK : MMB_UNSUPPORTED;
}

mmbError mmb__os_map_aligned(size_t size, size_t alignment, int fd, void **out_ptr) {
  size_t page = mmb_host_page_size(), len = round_to_page(size);
  size_t slack = alignment > page ? alignment - page : 0;
  if (len < size || len > SIZE_MAX - slack) return MMB_OUT_OF_MEMORY;
  /* with a file, the room is reserved first and the file mapped over its
     aligned part */
  char *raw = mmap(NULL, len + slack, fd < 0 ? PROT_READ | PROT_WRITE : PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    mmb__log(MMB_LOG_DEBUG, "mmap of %zu bytes failed: %s", len + slack, strerror(errno));
    return MMB_OUT_OF_MEMORY;
  }
  char *p = slack ? (char *)(((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1)) : raw;
  if (fd >= 0 &&
      mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
    mmb__log(MMB_LOG_DEBUG, "mapping %zu bytes of a file failed: %s", len, strerror(errno));
    munmap(raw, len + slack);
    return MMB_OUT_OF_MEMORY;
  }
  if (p > raw) munmap(raw, (size_t)(p - raw));   /* trim to the alignment: the head, the tail */
  size_t tail = (size_t)(raw + len + slack - (p + len));
  if (tail) munmap(p + len, tail);
  *out_ptr = p;
  return MMB_OK;
}

mmbError mmb_host_map(size_t size, size_t alignment, int numa_node, void **out_ptr) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_ptr || !size, __func__, "NULL out_ptr or zero size");
  MMB__ARG(!mmb__is_pow2(alignment) || alignment > MMB_MAX_ALIGNMENT, __func__,
           "alignment %zu is not a power of two up to MMB_MAX_ALIGNMENT", alignment);
  MMB__ARG(size > SIZE_MAX - MMB_MAX_ALIGNMENT, __func__, "%zu bytes cannot be mapped", size);
  char *p;
  mmbError err = mmb__os_map_aligned(size, alignment, -1, (void **)&p);
  if (err != MMB_OK) return err;
  size_t len = round_to_page(size);
  if (len >= HUGE_PAGE_ADVICE_BYTES) madvise(p, len, MADV_HUGEPAGE);
  if (numa_node >= 0 && mmb__os_numa_count() > 1) bind_pages(p, len, numa_node);   /* best effort */
  *out_ptr = p;
  return MMB_OK;
}

mmbError mmb_host_unmap(void *ptr, size_t size) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!ptr || !size, __func__, "NULL pointer or zero size");
  MMB__ARG((uintptr_t)ptr % mmb_host_page_size(), __func__, "%p is not page aligned", ptr);
  return munmap(ptr, round_to_page(size)) == 0 ? MMB_OK
                                                : mmb__fail(MMB_INVALID_ARG, __func__, "munmap: %s",
                                                            strerror(errno));
}
