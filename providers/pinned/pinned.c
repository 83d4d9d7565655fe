/* The pinned provider: page-locked host memory. With a CUDA device it is
   cudaHostAlloc'd (or mapped and cudaHostRegister'ed when aligned beyond a
   page), so devices reach it by DMA without staging; without one it is
   mapped and mlock'ed. Either way it is bound to the space's NUMA node. */
#include "builtin.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct pinned_state {
  int numa_os;
  bool cuda;   /* a device was found at init: pin through the CUDA runtime */
} pinned_state;

static mmbError pinned_init(void *state, const mmbProviderTarget *target) {
  pinned_state *st = state;
  st->numa_os = target->numa_node;
  st->cuda = mmb__os_cuda() != NULL;
  return MMB_OK;
}

static bool via_cuda_host_alloc(const pinned_state *st, size_t alignment) {
  return st->cuda && alignment <= mmb_host_page_size();
}

static mmbError explain_mlock_failure(size_t size, int err) {
  struct rlimit rl = {0};
  getrlimit(RLIMIT_MEMLOCK, &rl);
  char soft[32] = "unlimited";
  if (rl.rlim_cur != RLIM_INFINITY) snprintf(soft, sizeof soft, "%llu bytes",
                                             (unsigned long long)rl.rlim_cur);
  mmb__log(MMB_LOG_WARN, "pinned: mlock of %zu bytes failed (%s): RLIMIT_MEMLOCK (%s) is "
           "exhausted; raise it with `ulimit -l` or in /etc/security/limits.conf",
           size, strerror(err), soft);
  return MMB_OUT_OF_MEMORY;
}

static mmbError pin(const pinned_state *st, void *p, size_t size) {
  if (st->cuda) return mmb__os_cuda()->host_register(p, size);
  /* The raw syscall: sanitizers intercept mlock() and make it a no-op. */
  if (syscall(SYS_mlock, p, size) != 0) return explain_mlock_failure(size, errno);
  return MMB_OK;
}

static mmbError pinned_alloc(void *state, size_t size, size_t alignment, unsigned flags,
                             void **out) {
  pinned_state *st = state;
  if (via_cuda_host_alloc(st, alignment)) {
    mmbError err = mmb__os_cuda()->host_alloc(size, out);
    if (err == MMB_OK && (flags & MMB_ALLOC_ZERO)) memset(*out, 0, size);
    return err;
  }
  void *p;
  mmbError err = mmb_host_map(size, alignment, st->numa_os, &p);   /* zeroed */
  if (err != MMB_OK) return err;
  if ((err = pin(st, p, size)) != MMB_OK) {
    MMB__MUST(mmb_host_unmap(p, size));
    return err;
  }
  *out = p;
  return MMB_OK;
}

static void pinned_free(void *state, void *ptr, size_t size, size_t alignment) {
  pinned_state *st = state;
  if (via_cuda_host_alloc(st, alignment)) {
    mmb__os_cuda()->host_free(ptr);
    return;
  }
  if (st->cuda) mmb__os_cuda()->host_unregister(ptr);
  MMB__MUST(mmb_host_unmap(ptr, size));   /* also unlocks */
}

const mmbProviderOps mmb__pinned_provider = {
    .abi_version = MMB_PROVIDER_ABI_VERSION,
    .name = "pinned",
    .state_size = sizeof(pinned_state),
    .caps = MMB_PROVIDER_HOST_ACCESSIBLE | MMB_PROVIDER_PAGE_LOCKED |
            MMB_PROVIDER_DEVICE_ACCESSIBLE | MMB_PROVIDER_ASYNC_COPY,
    .layers = (1u << MMB_DRAM) | (1u << MMB_HBM) | (1u << MMB_NVDIMM),
    .init = pinned_init,
    .alloc = pinned_alloc,
    .free = pinned_free,
};
