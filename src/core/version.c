/* The library's version, for programs to compare with the headers'. */
#include "core/internal.h"

const char *mmb_version(int *major, int *minor, int *patch) {
  if (major) *major = MMB_VERSION_MAJOR;
  if (minor) *minor = MMB_VERSION_MINOR;
  if (patch) *patch = MMB_VERSION_PATCH;
  return MMB_VERSION_STRING;
}
