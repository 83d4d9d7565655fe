/* Error strings. */
#include "core.h"

const char *mmb_error_string(mmbError err) {
  switch (err) {
    case MMB_OK: return "success";
    case MMB_ERROR: return "unexpected failure below mmb";
    case MMB_INVALID_ARG: return "invalid argument";
    case MMB_OUT_OF_MEMORY: return "out of memory, or a space's limit reached";
    case MMB_OVERFLOW: return "size computation overflows";
    case MMB_UNSUPPORTED: return "operation not supported by this provider or strategy";
    case MMB_UNAVAILABLE: return "no such space or device on this node";
    case MMB_NOT_INITIALIZED: return "mmb is not initialised (call mmb_init first)";
    case MMB_BUSY: return "object still in use";
    case MMB_INVALID_STATE: return "object not in a state that allows this operation";
    case MMB_IO: return "input/output error";
  }
  return "unknown mmb error code";
}
