/**
 * \file mmb/provider.h
 * Memory providers: how bytes are obtained. Every provider, built-in or the
 * user's (a file-backed tier, an OpenCL device), is reached through one
 * versioned table of operations.
 *
 * The core filters bad calls before a provider sees them, so a provider may
 * trust these preconditions: size > 0; alignment is a power of two between
 * sizeof(void *) and MMB_MAX_ALIGNMENT; free() gets a pointer its alloc()
 * returned, with the same size and alignment; copies get in-bounds ranges
 * with width, height and depth > 0. A provider's limit accounting, stats and
 * thread safety are the core's business: each operation may be called from
 * several threads at once on different instances, and on one instance when
 * the interface is MMB_INTERFACE_THREAD_SAFE.
 */
#ifndef MMB_PROVIDER_H
#define MMB_PROVIDER_H

#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI of mmbProviderOps; a table with another number is refused. */
#define MMB_PROVIDER_ABI_VERSION 1u

/* Capabilities (mmbProviderOps.caps). */
#define MMB_PROVIDER_HOST_ACCESSIBLE   0x1u  /**< the CPU may load and store its memory */
#define MMB_PROVIDER_DEVICE_ACCESSIBLE 0x2u  /**< a GPU may access its memory */
#define MMB_PROVIDER_PAGE_LOCKED       0x4u  /**< its memory is pinned (DMA without staging) */
#define MMB_PROVIDER_ASYNC_COPY        0x8u  /**< copies may run asynchronously */
#define MMB_PROVIDER_CUDA_MEMORY       0x10u /**< CUDA device memory: copies to or from it are
                                                  the CUDA runtime's, and a stream queue
                                                  issues them on its stream */

/** Where an instance of a provider allocates (one instance per interface). */
typedef struct mmbProviderTarget {
  mmbMemLayer layer;             /**< the space's layer */
  mmbExecutionContext context;   /**< the space's context */
  int numa_node;   /**< OS index of the space's NUMA node, -1 for none */
  int device;      /**< CUDA device ordinal, -1 for none */
  const void *options;   /**< mmbMemInterfaceConfig.provider_options of the interface
                              (valid during init only: copy what is needed); NULL = none */
} mmbProviderTarget;

/** A provider. The table must outlive its registration (until finalize). */
typedef struct mmbProviderOps {
  unsigned abi_version;  /**< MMB_PROVIDER_ABI_VERSION */
  const char *name;      /**< short, for logs and mmb-info */
  size_t state_size;     /**< bytes of zeroed private state per instance (may be 0) */
  unsigned caps;         /**< MMB_PROVIDER_* capabilities */
  unsigned layers;       /**< bit (1u << layer) per layer it can serve; 0 = every layer */

  /** Optional: prepares \p state for \p target. */
  mmbError (*init)(void *state, const mmbProviderTarget *target);
  /** Optional: releases what init acquired. */
  void (*finalize)(void *state);
  /** Required: \p size bytes aligned to \p alignment. \p flags may hold
      MMB_ALLOC_ZERO: then the memory must read as zeros (return
      MMB_UNSUPPORTED if that cannot be done). */
  mmbError (*alloc)(void *state, size_t size, size_t alignment, unsigned flags, void **out_ptr);
  /** Required. */
  void (*free)(void *state, void *ptr, size_t size, size_t alignment);
  /** Optional: needed to zero memory that is not host accessible. */
  mmbError (*memset)(void *state, void *ptr, int value, size_t size);
  /** Optional for host-accessible providers, which the core copies itself;
      required otherwise. Either pointer may belong to another provider
      (host memory, or memory of this provider's kind). */
  mmbError (*copy_2d)(void *state, void *dst, size_t dpitch, const void *src, size_t spitch,
                      size_t width, size_t height);
  /** Optional: a 3-D copy, planes \p dslice / \p sslice bytes apart.
      MMB_UNSUPPORTED makes the core fall back to copy_2d per plane. */
  mmbError (*copy_3d)(void *state, void *dst, size_t dpitch, size_t dslice,
                      const void *src, size_t spitch, size_t sslice,
                      size_t width, size_t height, size_t depth);
} mmbProviderOps;

/**
 * Registers a provider; interfaces then name it in mmbMemInterfaceConfig.provider.
 * \param ops       the table (kept by pointer, not copied).
 * \param out_type  receives its type, MMB_PROVIDER_USER or above.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, a missing name, alloc or free, or
 *         a provider that is neither host accessible nor able to copy;
 *         MMB_UNSUPPORTED for another ABI version; MMB_OUT_OF_MEMORY when the
 *         table of providers is full (32 user providers);
 *         MMB_NOT_INITIALIZED. Registrations end at the last mmb_finalize.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_provider_register(const mmbProviderOps *ops, mmbProviderType *out_type);

/** The ops table of a provider type, built-in or registered.
    \return MMB_OK; MMB_INVALID_ARG; MMB_UNAVAILABLE if not built or registered;
    MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_provider_get_ops(mmbProviderType type, const mmbProviderOps **out_ops);

/* ---- services for providers ----------------------------------------------
   What the system provider uses to get host memory, for a provider of yours
   to do the same (hwloc's plugins.h plays this part for hwloc's plugins). */

/** The page size of host memory, in bytes. */
MMB_EXPORT size_t mmb_host_page_size(void);

/**
 * Maps host memory: \p size bytes rounded up to whole pages, aligned to
 * \p alignment, reading as zeros, advised to use huge pages from 2 MiB, and
 * bound to NUMA node \p numa_node when the machine has several (best effort,
 * as the system provider does; -1: not bound).
 * \param numa_node  an OS index, as mmbProviderTarget.numa_node gives it.
 * \return MMB_OK; MMB_INVALID_ARG for a NULL \p out_ptr, a zero or absurd
 *         size, or an alignment that is not a power of two up to
 *         MMB_MAX_ALIGNMENT; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_host_map(size_t size, size_t alignment, int numa_node, void **out_ptr);

/** Unmaps what mmb_host_map mapped (the same size).
    \return MMB_OK; MMB_INVALID_ARG for NULL, a zero size or a pointer that
    is not page aligned; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_host_unmap(void *ptr, size_t size);

/**
 * Binds the pages of [\p ptr, \p ptr + \p size) to NUMA node \p numa_node.
 * \return MMB_OK (also on a machine of one node: nothing to choose);
 *         MMB_INVALID_ARG for NULL, a zero size, a pointer that is not page
 *         aligned, or a node this machine does not have; MMB_UNSUPPORTED when
 *         the operating system refuses (a container's policy);
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_host_bind(void *ptr, size_t size, int numa_node);

#ifdef __cplusplus
}
#endif

#endif /* MMB_PROVIDER_H */
