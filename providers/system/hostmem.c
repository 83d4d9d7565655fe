#include "hostmem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE_ADVICE_BYTES ((size_t)2 << 20)

size_t mmb__page_size(void) {
  static _Atomic size_t page;   /* threads may race to fill it: same value */
  size_t p = atomic_load_explicit(&page, memory_order_relaxed);
  if (!p) atomic_store_explicit(&page, p = (size_t)sysconf(_SC_PAGESIZE), memory_order_relaxed);
  return p;
}

static size_t round_to_page(size_t n) {
  size_t page = mmb__page_size();
  return (n + page - 1) & ~(page - 1);
}

/* Best effort: binding refused (containers, one node) is logged, not fatal. */
static void bind_to_node(void *p, size_t len, int numa_os) {
  if (numa_os < 0 || mmb__numa_node_count() < 2) return;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return;
  hwloc_bitmap_only(set, (unsigned)numa_os);
  if (hwloc_set_area_membind(mmb__topology(), p, len, set, HWLOC_MEMBIND_BIND,
                             HWLOC_MEMBIND_BYNODESET) != 0)
    mmb__log(MMB_LOG_DEBUG, "binding %zu bytes to NUMA node %d failed: %s", len, numa_os,
             strerror(errno));
  hwloc_bitmap_free(set);
}

mmbError mmb__host_map(size_t size, size_t alignment, int numa_os, void **out) {
  size_t page = mmb__page_size(), len = round_to_page(size);
  size_t slack = alignment > page ? alignment - page : 0;
  char *raw = mmap(NULL, len + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    mmb__log(MMB_LOG_DEBUG, "mmap of %zu bytes failed: %s", len + slack, strerror(errno));
    return MMB_OUT_OF_MEMORY;
  }
  char *p = raw;
  if (slack) {   /* trim to the alignment: unmap the head and the tail */
    p = (char *)(((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1));
    if (p > raw) munmap(raw, (size_t)(p - raw));
    size_t tail = (size_t)(raw + len + slack - (p + len));
    if (tail) munmap(p + len, tail);
  }
  if (len >= HUGE_PAGE_ADVICE_BYTES) madvise(p, len, MADV_HUGEPAGE);
  bind_to_node(p, len, numa_os);
  *out = p;
  return MMB_OK;
}

void mmb__host_unmap(void *ptr, size_t size) { munmap(ptr, round_to_page(size)); }
