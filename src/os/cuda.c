/* The CUDA runtime slot: the table providers/cuda fills, installed by the
   lifecycle when mmb is built with CUDA. Everything else reaches CUDA
   through it, with no CUDA header. */
#include "os/internal.h"

static const mmb__cuda_runtime *runtime;
static int devices;

void mmb__os_set_cuda(const mmb__cuda_runtime *rt) {
  devices = rt ? rt->device_count() : 0;
  runtime = devices > 0 ? rt : NULL;
  if (!rt) mmb__log(MMB_LOG_INFO, "built without CUDA: no GDRAM spaces");
}

const mmb__cuda_runtime *mmb__os_cuda(void) { return runtime; }
int mmb__cuda_device_count(void) { return devices; }

void mmb__os_forget_cuda(void) {
  runtime = NULL;
  devices = 0;
}
