/* The CUDA runtime slot: the table providers/cuda fills, installed by the
   lifecycle when mmb is built with CUDA. Everything else reaches CUDA
   through it, with no CUDA header. */
#include "os/internal.h"

#include <stdio.h>

static const mmb__cuda_runtime *runtime;
static int devices;
static char why[192];   /* why there is none */

void mmb__os_set_cuda(const mmb__cuda_runtime *rt) {
  why[0] = '\0';
  devices = rt ? rt->device_count(why, sizeof why) : 0;
  runtime = devices > 0 ? rt : NULL;
  if (!rt) snprintf(why, sizeof why, "mmb was built without CUDA");
  else if (!devices && !why[0]) snprintf(why, sizeof why, "the CUDA runtime sees no device");
  if (!devices) mmb__log(MMB_LOG_INFO, "no GDRAM spaces: %s", why);
}

mmbError mmb_cuda_status(int *out_devices, const char **out_reason) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_devices, __func__, "out_devices is NULL");
  *out_devices = devices;
  if (out_reason) *out_reason = devices ? NULL : why;
  return MMB_OK;
}

const mmb__cuda_runtime *mmb__os_cuda(void) { return runtime; }
int mmb__cuda_device_count(void) { return devices; }

void mmb__os_forget_cuda(void) {
  runtime = NULL;
  devices = 0;
}
