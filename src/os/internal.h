/* Internal: the floor that touches the machine. Above core; the providers
   and the allocator stand on it and reach the operating system and devices
   only through it: hwloc's topology (NUMA nodes for discovery, thread
   binding), host mappings and NUMA binding (public, for providers:
   mmb_host_* in mmb/provider.h), and the slot through which the CUDA
   runtime is reached without CUDA headers. Only src/os includes hwloc. */
#ifndef MMB_OS_INTERNAL_H
#define MMB_OS_INTERNAL_H

#include "core/internal.h"
#include "os/record_move.h"

#include <mmb/provider.h>

#include <pthread.h>

/* Loads the topology (init) and lets it go (finalize). */
mmbError mmb__os_init(void);
void mmb__os_finalize(void);

/* A NUMA node as the topology describes it (discovery classifies it). */
typedef struct mmb__numa_node {
  unsigned os_index;
  size_t local_memory;                  /* bytes; some VMs report less than there is */
  char subtype[32];                     /* hwloc's: "HBM", "MCDRAM", "NVM", "GPUMemory" or "" */
  char dax_type[16];                    /* the DAXType of persistent memory, or "" */
  unsigned long long best_bandwidth;    /* hwloc's memory attribute, MiB/s; 0 when unknown */
  unsigned long long best_latency;      /* hwloc's memory attribute, ns; 0 when unknown */
} mmb__numa_node;

/* NUMA nodes beyond this many are not seen. */
#define MMB__MAX_NUMA_NODES 256
int mmb__os_numa_count(void);   /* at most MMB__MAX_NUMA_NODES */
/* The i-th NUMA node in the topology's order; false past the last. */
bool mmb__os_numa_node(int i, mmb__numa_node *out);
/* The relative distance between two NUMA nodes (OS indexes) from the
   firmware's table (10 = local); false when the machine gives none. */
bool mmb__os_numa_distance(unsigned from_os, unsigned to_os, unsigned *out);
/* Bytes of physical memory (sysconf). */
size_t mmb__os_physical_memory(void);
/* Binds a thread to the CPUs of NUMA node numa_os (OS index); best effort. */
void mmb__os_bind_thread(pthread_t thread, int numa_os);
/* Bytes of the last-level data cache the first core uses, as hwloc reads it
   (sysfs, not the CPUID leaf a VM may inflate), at most 16 MiB for each PU
   sharing it (a VM's PUs share the whole chip's with other tenants); 0
   unknown. */
size_t mmb__os_llc_bytes(void);

/* size bytes (whole pages) at a power-of-two alignment, mapped read-write:
   anonymous and private (fd < 0), or the first bytes of fd, shared (the
   caller may close fd then). MMB_OUT_OF_MEMORY when the OS refuses.
   mmb_host_map and the file provider map through it (hostmem.c). */
mmbError mmb__os_map_aligned(size_t size, size_t alignment, int fd, void **out_ptr);

/* ---- the storage tier's files (storage.c) -------------------------------
   The directory: MMB_STORAGE_DIR (unusable: MMB_INVALID_ARG at init); else
   TMPDIR, /var/tmp or /tmp, the first writable; NULL when none is. */
mmbError mmb__os_storage_init(void);
const char *mmb__os_storage_dir(void);
size_t mmb__os_storage_free(void);   /* bytes the directory's file system has free */
/* A file of `bytes` reserved blocks that has no name: MMB_OUT_OF_MEMORY when
   the disk is full, MMB_IO when no file can be made, MMB_UNAVAILABLE without
   a directory. The caller maps it and closes it. */
mmbError mmb__os_storage_file(size_t bytes, int *out_fd);

/* ---- the CUDA runtime, reached without CUDA headers ---------------------
   providers/cuda fills the table; the lifecycle installs it at init (none
   without CUDA). Pinned memory, discovery and queues use it through here. */
typedef struct mmb__cuda_runtime {
  int (*device_count)(char *why, size_t len);   /* 0 without device or driver: why */
  mmbError (*mem_info)(int device, size_t *free_bytes, size_t *total_bytes);
  mmbError (*host_alloc)(size_t size, void **out);     /* cudaHostAlloc, portable */
  void (*host_free)(void *ptr);
  mmbError (*host_register)(void *ptr, size_t size);   /* cudaHostRegister, portable */
  void (*host_unregister)(void *ptr);
  /* Runs a record conversion whose sides are both memory of `device`, in
     a kernel (providers/cuda/convert.cu); returns when it is done. */
  mmbError (*convert)(int device, const mmb__record_moves *moves);
} mmb__cuda_runtime;

/* Installs the runtime (NULL: none) and counts its devices. */
void mmb__os_set_cuda(const mmb__cuda_runtime *rt);
void mmb__os_forget_cuda(void);   /* finalize */
/* The runtime when there is at least one device, else NULL. */
const mmb__cuda_runtime *mmb__os_cuda(void);
/* Number of CUDA devices found at init (0 without CUDA or without a driver). */
int mmb__cuda_device_count(void);

#endif /* MMB_OS_INTERNAL_H */
