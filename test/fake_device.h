/* A "device" provider for tests: host bytes that the core treats as
   unreachable (not host accessible), so the paths of device memory (staging
   through the host, provider copies) run where there is no GPU. Over the
   public API alone: the MPI tests use it too. */
#ifndef MMB_TEST_FAKE_DEVICE_H
#define MMB_TEST_FAKE_DEVICE_H

#include <mmb/mmb.h>

#include <stdlib.h>
#include <string.h>

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
