/* The file provider (MMB_PROVIDER_FILE): the storage tier's memory, files
   without a name in its directory (src/os/storage.c), each mapped shared
   at the alignment asked for. The page cache holds what is in use; the
   kernel writes the rest to disk as memory runs short, so the tier holds
   more than memory does. Copies to and from it are the core's host copies
   through the mapping: one memcpy, no bounce buffer (pread/pwrite would
   copy through the same page cache once more). A file goes when its
   mapping does, and with the process however it ends, so nothing calls
   msync: its bytes need the disk only when memory runs short, and the
   kernel writes them out then (README: "Past memory"). */
#include "builtin.h"

#include <unistd.h>

static mmbError file_alloc(void *state, size_t size, size_t alignment, unsigned flags,
                           void **out) {
  (void)state;
  (void)flags;   /* a new file reads as zeros */
  size_t page = mmb_host_page_size(), len = (size + page - 1) & ~(page - 1);
  if (len < size) return MMB_OUT_OF_MEMORY;
  int fd;
  mmbError err = mmb__os_storage_file(len, &fd);
  if (err != MMB_OK) return err;
  err = mmb__os_map_aligned(len, alignment, fd, out);
  close(fd);   /* the mapping keeps the file */
  return err;
}

static void file_free(void *state, void *ptr, size_t size, size_t alignment) {
  (void)state;
  (void)alignment;
  MMB__MUST(mmb_host_unmap(ptr, size));
}

const mmbProviderOps mmb__file_provider = {
    .abi_version = MMB_PROVIDER_ABI_VERSION,
    .name = "file",
    .caps = MMB_PROVIDER_HOST_ACCESSIBLE,
    .layers = 1u << MMB_STORAGE,
    .alloc = file_alloc,
    .free = file_free,
};
