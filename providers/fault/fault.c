/* The fault provider: host memory from the C allocator, except for the calls
   the test chose to fail, with the error it chose. */
#include "fault.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static _Atomic unsigned long calls, fail_from, fail_count;
static _Atomic int fail_error = MMB_OUT_OF_MEMORY;

void mmb__fault_provider_configure(unsigned long from, unsigned long count, mmbError error) {
  atomic_store(&fail_from, from);
  atomic_store(&fail_count, count);
  atomic_store(&fail_error, (int)error);
  atomic_store(&calls, 0);
}

static mmbError fault_alloc(void *state, size_t size, size_t alignment, unsigned flags,
                            void **out) {
  (void)state;
  unsigned long n = atomic_fetch_add(&calls, 1), from = atomic_load(&fail_from);
  if (n >= from && n - from < atomic_load(&fail_count)) return (mmbError)atomic_load(&fail_error);
  void *p = NULL;
  if (posix_memalign(&p, alignment, size) != 0) return MMB_OUT_OF_MEMORY;
  if (flags & MMB_ALLOC_ZERO) memset(p, 0, size);
  *out = p;
  return MMB_OK;
}

static void fault_free(void *state, void *ptr, size_t size, size_t alignment) {
  (void)state, (void)size, (void)alignment;
  free(ptr);
}

const mmbProviderOps mmb__fault_provider = {
    .abi_version = MMB_PROVIDER_ABI_VERSION,
    .name = "fault",
    .caps = MMB_PROVIDER_HOST_ACCESSIBLE,
    .alloc = fault_alloc,
    .free = fault_free,
};
