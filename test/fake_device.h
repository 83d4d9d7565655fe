/* A "device" provider for tests: host bytes that the core treats as
   unreachable (not host accessible), so the paths of device memory (staging
   through the host, provider copies) run where there is no GPU. Over the
   public API alone: the MPI tests use it too. */
#ifndef MMB_TEST_FAKE_DEVICE_H
#define MMB_TEST_FAKE_DEVICE_H

#include <mmb/mmb.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static mmbError dev_alloc(void *state, size_t size, size_t alignment, unsigned flags, void **out) {
  if ((flags & MMB_ALLOC_ZERO)) return MMB_UNSUPPORTED;
  return posix_memalign(out, alignment, size) ? MMB_OUT_OF_MEMORY : MMB_OK;
}
static void dev_free(void *state, void *ptr, size_t size, size_t alignment) { free(ptr); }
static mmbError dev_copy_2d(void *state, void *dst, size_t dpitch, const void *src, size_t spitch,
                            size_t width, size_t height) {
  for (size_t r = 0; r < height; r++)
    memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
  return MMB_OK;
}
static const mmbProviderOps device_ops = {
  .abi_version = MMB_PROVIDER_ABI_VERSION, .name = "fake-device",
  .caps = MMB_PROVIDER_DEVICE_ACCESSIBLE, .alloc = dev_alloc, .free = dev_free,
  .copy_2d = dev_copy_2d,
};

/* A "device" whose memory the host cannot touch, as a GPU's: pages with no
   access, opened only inside the provider's own copies (one at a time), so
   that a host dereference of device memory crashes here as it would there. */
static pthread_mutex_t guarded_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { char *p; size_t n; } guarded_blocks[256];

static size_t guarded_bytes(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (n + page - 1) / page * page;
}
static void guarded_open(int prot) {
  for (size_t i = 0; i < 256; i++)
    if (guarded_blocks[i].p) mprotect(guarded_blocks[i].p, guarded_bytes(guarded_blocks[i].n), prot);
}
static mmbError guarded_alloc(void *state, size_t size, size_t alignment, unsigned flags,
                              void **out) {
  if ((flags & MMB_ALLOC_ZERO) || alignment > (size_t)sysconf(_SC_PAGESIZE)) return MMB_UNSUPPORTED;
  void *p = mmap(NULL, guarded_bytes(size), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return MMB_OUT_OF_MEMORY;
  pthread_mutex_lock(&guarded_lock);
  size_t i = 0;
  while (i < 256 && guarded_blocks[i].p) i++;
  if (i < 256) guarded_blocks[i].p = p, guarded_blocks[i].n = size;
  pthread_mutex_unlock(&guarded_lock);
  if (i == 256) {
    munmap(p, guarded_bytes(size));
    return MMB_OUT_OF_MEMORY;
  }
  *out = p;
  return MMB_OK;
}
static void guarded_free(void *state, void *ptr, size_t size, size_t alignment) {
  pthread_mutex_lock(&guarded_lock);
  for (size_t i = 0; i < 256; i++)
    if (guarded_blocks[i].p == ptr) guarded_blocks[i].p = NULL;
  pthread_mutex_unlock(&guarded_lock);
  munmap(ptr, guarded_bytes(size));
}
static mmbError guarded_copy_2d(void *state, void *dst, size_t dpitch, const void *src,
                                size_t spitch, size_t width, size_t height) {
  pthread_mutex_lock(&guarded_lock);
  guarded_open(PROT_READ | PROT_WRITE);
  dev_copy_2d(state, dst, dpitch, src, spitch, width, height);
  guarded_open(PROT_NONE);
  pthread_mutex_unlock(&guarded_lock);
  return MMB_OK;
}
static const mmbProviderOps guarded_ops = {
  .abi_version = MMB_PROVIDER_ABI_VERSION, .name = "guarded-device",
  .caps = MMB_PROVIDER_DEVICE_ACCESSIBLE, .alloc = guarded_alloc, .free = guarded_free,
  .copy_2d = guarded_copy_2d,
};

/* An interface of the "device" provider on DRAM; NULL on failure. */
static mmbMemInterface *fake_device_interface(unsigned flags) {
  mmbProviderType type;
  mmbMemSpace *dram;
  mmbMemInterface *dev;
  if (mmb_provider_register(&device_ops, &type) != MMB_OK ||
      mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram) != MMB_OK ||
      mmb_request_interface(dram, &(mmbMemInterfaceConfig){.provider = type, .flags = flags},
                            &dev) != MMB_OK)
    return NULL;
  return dev;
}

#endif /* MMB_TEST_FAKE_DEVICE_H */
