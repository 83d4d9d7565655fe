/* The cuda provider: device memory with cudaMalloc, copies with
   cudaMemcpy2D/3D (cudaMemcpyDefault: unified addressing tells directions),
   and the runtime hooks the rest of mmb reaches CUDA through. Every CUDA
   error is translated here and logged with its CUDA name. */
#include "cuda/internal.h"

#include <stdio.h>

/* Device allocations are 256-byte aligned by cudaMalloc. */
#define CUDA_ALIGNMENT 256u

typedef struct cuda_state {
  int device;
} cuda_state;

mmbError mmb__cuda_error(cudaError_t e, const char *call) {
  if (e == cudaSuccess) return MMB_OK;
  mmb__log(MMB_LOG_DEBUG, "%s: %s: %s", call, cudaGetErrorName(e), cudaGetErrorString(e));
  cudaGetLastError();   /* reset the last-error slot so the next call starts clean */
  switch (e) {
    case cudaErrorMemoryAllocation: return MMB_OUT_OF_MEMORY;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidPitchValue: return MMB_INVALID_ARG;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice: return MMB_UNAVAILABLE;
    default: return MMB_ERROR;
  }
}

static mmbError cuda_init(void *state, const mmbProviderTarget *target) {
  ((cuda_state *)state)->device = target->device < 0 ? 0 : target->device;
  return MMB_OK;
}

static mmbError cuda_alloc(void *state, size_t size, size_t alignment, unsigned flags,
                           void **out) {
  cuda_state *st = state;
  if (alignment > CUDA_ALIGNMENT) {
    mmb__log(MMB_LOG_DEBUG, "cuda: alignment %zu beyond cudaMalloc's %u", alignment,
             CUDA_ALIGNMENT);
    return MMB_UNSUPPORTED;
  }
  void *p = NULL;
  mmbError err = mmb__cuda_error(ON_DEVICE(st->device, cudaMalloc(&p, size)), "cudaMalloc");
  if (err == MMB_OK && (flags & MMB_ALLOC_ZERO)) {
    err = mmb__cuda_error(ON_DEVICE(st->device, cudaMemset(p, 0, size)), "cudaMemset");
    if (err != MMB_OK) cudaFree(p);
  }
  if (err == MMB_OK) *out = p;
  return err;
}

static void cuda_free(void *state, void *ptr, size_t size, size_t alignment) {
  (void)size, (void)alignment;
  mmb__cuda_error(ON_DEVICE(((cuda_state *)state)->device, cudaFree(ptr)), "cudaFree");
}

static mmbError cuda_memset(void *state, void *ptr, int value, size_t size) {
  int device = ((cuda_state *)state)->device;
  return mmb__cuda_error(ON_DEVICE(device, cudaMemset(ptr, value, size)), "cudaMemset");
}

static mmbError cuda_copy_2d(void *state, void *dst, size_t dpitch, const void *src,
                             size_t spitch, size_t width, size_t height) {
  (void)state;
  return mmb__cuda_error(
      cudaMemcpy2D(dst, dpitch, src, spitch, width, height, cudaMemcpyDefault), "cudaMemcpy2D");
}

static mmbError cuda_copy_3d(void *state, void *dst, size_t dpitch, size_t dslice,
                             const void *src, size_t spitch, size_t sslice, size_t width,
                             size_t height, size_t depth) {
  (void)state;
  struct cudaMemcpy3DParms p;
  if (!mmb__cuda_3d_parms(&p, dst, dpitch, dslice, src, spitch, sslice, width, height, depth))
    return MMB_UNSUPPORTED;
  return mmb__cuda_error(cudaMemcpy3D(&p), "cudaMemcpy3D");
}

const mmbProviderOps mmb__cuda_provider = {
    .abi_version = MMB_PROVIDER_ABI_VERSION,
    .name = "cuda",
    .state_size = sizeof(cuda_state),
    .caps = MMB_PROVIDER_DEVICE_ACCESSIBLE | MMB_PROVIDER_ASYNC_COPY | MMB_PROVIDER_CUDA_MEMORY,
    .layers = 1u << MMB_GDRAM,
    .init = cuda_init,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .memset = cuda_memset,
    .copy_2d = cuda_copy_2d,
    .copy_3d = cuda_copy_3d,
};

/* ---- the runtime hooks -------------------------------------------------- */

static int device_count(char *why, size_t len) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(why, len, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    cudaGetLastError();
    return 0;
  }
  return n;
}

static mmbError mem_info(int device, size_t *free_bytes, size_t *total) {
  return mmb__cuda_error(ON_DEVICE(device, cudaMemGetInfo(free_bytes, total)), "cudaMemGetInfo");
}

static mmbError host_alloc(size_t size, void **out) {
  return mmb__cuda_error(cudaHostAlloc(out, size, cudaHostAllocPortable), "cudaHostAlloc");
}

static void host_free(void *ptr) { mmb__cuda_error(cudaFreeHost(ptr), "cudaFreeHost"); }

static mmbError host_register(void *ptr, size_t size) {
  return mmb__cuda_error(cudaHostRegister(ptr, size, cudaHostRegisterPortable), "cudaHostRegister");
}

static void host_unregister(void *ptr) {
  mmb__cuda_error(cudaHostUnregister(ptr), "cudaHostUnregister");
}

int mmb__cuda_convert_launch(int device, const mmb__record_moves *m);   /* convert.cu */

static mmbError convert(int device, const mmb__record_moves *m) {
  return mmb__cuda_error((cudaError_t)mmb__cuda_convert_launch(device, m), "record conversion kernel");
}

const mmb__cuda_runtime mmb__cuda_runtime_impl = {
    .device_count = device_count,
    .mem_info = mem_info,
    .host_alloc = host_alloc,
    .host_free = host_free,
    .host_register = host_register,
    .host_unregister = host_unregister,
    .convert = convert,
};
