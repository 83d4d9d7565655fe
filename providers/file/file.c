/* The file provider (MMB_PROVIDER_FILE): the storage tier's memory, files
   without a name in its directory (src/os/storage.c), each mapped shared
   at the alignment asked for. The page cache holds what is in use; the
   kernel writes the rest to disk as memory runs short, so the tier holds
   more than memory does. Copies to and from it are the core's host copies
   through the mapping: one memcpy, no bounce buffer (pread/pwrite would
   copy through the same page cache once more). A file goes when its
   mapping does, and with the process however it ends. */
#include "builtin.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t page_round(size_t n) {
  size_t page = mmb_host_page_size();
  return (n + page - 1) & ~(page - 1);
}

static mmbError file_alloc(void *state, size_t size, size_t alignment, unsigned flags,
                           void **out) {
  (void)state;
  (void)flags;   /* a new file reads as zeros */
  size_t page = mmb_host_page_size(), len = page_round(size);
  size_t slack = alignment > page ? alignment - page : 0;
  if (len < size || len > SIZE_MAX - slack) return MMB_OUT_OF_MEMORY;
  int fd;
  mmbError err = mmb__os_storage_file(len, &fd);
  if (err != MMB_OK) return err;
  /* room for the alignment first, then the file mapped over its aligned part */
  char *raw = mmap(NULL, len + slack, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    close(fd);
    return MMB_OUT_OF_MEMORY;
  }
  char *p = (char *)(((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1));
  if (alignment <= page) p = raw;
  void *mapped = mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  int map_errno = errno;
  close(fd);   /* the mapping keeps the file */
  if (mapped == MAP_FAILED) {
    munmap(raw, len + slack);
    mmb__log(MMB_LOG_DEBUG, "file provider: mapping %zu bytes failed: %s", len,
             strerror(map_errno));
    return MMB_OUT_OF_MEMORY;
  }
  if (p > raw) munmap(raw, (size_t)(p - raw));
  size_t tail = (size_t)(raw + len + slack - (p + len));
  if (tail) munmap(p + len, tail);
  *out = p;
  return MMB_OK;
}

static void file_free(void *state, void *ptr, size_t size, size_t alignment) {
  (void)state;
  (void)alignment;
  if (munmap(ptr, page_round(size)) != 0)
    mmb__log(MMB_LOG_ERROR, "file provider: munmap of %zu bytes: %s", size, strerror(errno));
}

const mmbProviderOps mmb__file_provider = {
    .abi_version = MMB_PROVIDER_ABI_VERSION,
    .name = "file",
    .caps = MMB_PROVIDER_HOST_ACCESSIBLE,
    .layers = 1u << MMB_STORAGE,
    .alloc = file_alloc,
    .free = file_free,
};
