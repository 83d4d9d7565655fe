/* The storage tier's files (providers/file): a directory, checked at init,
   and files in it that never have a name (O_TMPFILE; where the file system
   lacks it, a name unlinked at once), so that nothing is left behind when
   the space goes, when the program ends, or when it is killed. Each file's
   blocks are reserved when it is made (fallocate), so that a full disk is
   an allocation refused, never a SIGBUS on a later store. */
#include "os/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static char dir[4096];   /* "" : no storage tier */

/* Whether a nameless file can be made in path (and so mapped there). */
static bool usable(const char *path, char *why, size_t len) {
  struct stat st;
  bool exists = stat(path, &st) == 0;
  if (!exists || !S_ISDIR(st.st_mode)) {
    snprintf(why, len, "not a directory (%s)", exists ? "a file" : strerror(errno));
    return false;
  }
  if (access(path, W_OK | X_OK) != 0) {
    snprintf(why, len, "not writable (%s)", strerror(errno));
    return false;
  }
  return true;
}

mmbError mmb__os_storage_init(void) {
  dir[0] = '\0';
  const char *env = getenv("MMB_STORAGE_DIR"), *tmp = getenv("TMPDIR");
  char why[160];
  if (env) {
    if (!*env || strlen(env) >= sizeof dir || !usable(env, why, sizeof why)) {
      mmb__log(MMB_LOG_ERROR, "MMB_STORAGE_DIR='%s': %s (a directory mmb may write its "
               "storage tier's files in)", env, *env ? why : "empty");
      return MMB_INVALID_ARG;
    }
    snprintf(dir, sizeof dir, "%s", env);
    return MMB_OK;
  }
  /* /var/tmp lives on a disk where /tmp may be memory (tmpfs) */
  const char *candidates[] = {tmp, "/var/tmp", "/tmp"};
  for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++)
    if (candidates[i] && *candidates[i] && strlen(candidates[i]) < sizeof dir &&
        usable(candidates[i], why, sizeof why)) {
      snprintf(dir, sizeof dir, "%s", candidates[i]);
      return MMB_OK;
    }
  mmb__log(MMB_LOG_INFO, "no storage tier: no writable directory (set MMB_STORAGE_DIR)");
  return MMB_OK;
}

const char *mmb__os_storage_dir(void) { return dir[0] ? dir : NULL; }

size_t mmb__os_storage_free(void) {
  struct statvfs fs;
  if (!dir[0] || statvfs(dir, &fs) != 0) return 0;
  return (size_t)fs.f_bavail * (size_t)fs.f_frsize;
}

static int nameless(void) {
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
  char path[sizeof dir + 32];
  snprintf(path, sizeof path, "%s/mmb-storage-XXXXXX", dir);
  if ((fd = mkostemp(path, O_CLOEXEC)) >= 0) unlink(path);
  return fd;
}

mmbError mmb__os_storage_file(size_t bytes, int *out_fd) {
  if (!dir[0]) return MMB_UNAVAILABLE;
  int fd = nameless();
  if (fd < 0) {
    mmb__log(MMB_LOG_DEBUG, "storage: no file in %s: %s", dir, strerror(errno));
    return errno == ENOSPC || errno == EDQUOT ? MMB_OUT_OF_MEMORY : MMB_IO;
  }
  int err = posix_fallocate(fd, 0, (off_t)bytes);
  if (err == EOPNOTSUPP || err == EINVAL) {   /* a file system without it: sparse, unreserved */
    err = ftruncate(fd, (off_t)bytes) == 0 ? 0 : errno;
  }
  if (err) {
    mmb__log(MMB_LOG_DEBUG, "storage: %zu bytes in %s: %s", bytes, dir, strerror(err));
    close(fd);
    return err == ENOSPC || err == EDQUOT || err == EFBIG ? MMB_OUT_OF_MEMORY : MMB_IO;
  }
  *out_fd = fd;
  return MMB_OK;
}
