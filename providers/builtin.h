/* Internal: the built-in providers' tables, for the lifecycle, which
   installs them in the allocator's table at init (src/lifecycle.c). Each
   provider includes only mmb/provider.h, os/internal.h and core/internal.h
   (through this header). */
#ifndef MMB_PROVIDERS_BUILTIN_H
#define MMB_PROVIDERS_BUILTIN_H

#include "os/internal.h"

extern const mmbProviderOps mmb__system_provider;   /* providers/system */
extern const mmbProviderOps mmb__pinned_provider;   /* providers/pinned */
extern const mmbProviderOps mmb__file_provider;     /* providers/file */
#if MMB_HAVE_CUDA
extern const mmbProviderOps mmb__cuda_provider;     /* providers/cuda */
extern const mmb__cuda_runtime mmb__cuda_runtime_impl;
#endif

#endif /* MMB_PROVIDERS_BUILTIN_H */
