/* Writes the named constants of module mamba from the C headers themselves,
   so the Fortran values cannot drift from the C ones: every enum value and
   every #define of the API. `constants` writes their declarations (included
   by fortran/mamba_c.F90), `constants public` the statements that make
   module mamba export them (included by fortran/mamba.F90). */
#include <mmb/mmb.h>

#include <stdio.h>
#include <string.h>

static int exports;   /* write `public :: NAME` rather than the declaration */

static void constant(const char *type, const char *name, long long value, const char *suffix) {
  if (exports) printf("  public :: %s\n", name);
  else printf("  %s, parameter :: %s = %lld%s\n", type, name, value, suffix);
}
#define INT(name) constant("integer(c_int)", #name, (long long)(name), "")
#define SIZE(name) constant("integer(c_size_t)", #name, (long long)(name), "_c_size_t")

int main(int argc, char **argv) {
  exports = argc > 1 && !strcmp(argv[1], "public");
  printf("  ! written by fortran/constants.c from the C headers: do not edit\n");
#define ERROR_CONSTANT(name, text) INT(name);
  MMB_ERROR_MAP(ERROR_CONSTANT)
#undef ERROR_CONSTANT
  INT(MMB_VERSION_MAJOR); INT(MMB_VERSION_MINOR); INT(MMB_VERSION_PATCH);
  INT(MMB_MAX_DIMS);
  INT(MMB_DRAM); INT(MMB_HBM); INT(MMB_NVDIMM); INT(MMB_GDRAM); INT(MMB_STORAGE);
  INT(MMB_MEMLAYER_MAX); INT(MMB_USER_LAYERS_MAX); INT(MMB_LAYER_NAME_MAX);
  INT(MMB_EXECUTION_CONTEXT_DEFAULT); INT(MMB_CPU); INT(MMB_GPU_CUDA);
  INT(MMB_PROVIDER_DEFAULT); INT(MMB_PROVIDER_SYSTEM); INT(MMB_PROVIDER_PINNED);
  INT(MMB_PROVIDER_CUDA); INT(MMB_PROVIDER_FILE); INT(MMB_PROVIDER_USER);
  INT(MMB_STRATEGY_DEFAULT); INT(MMB_STRATEGY_BASIC); INT(MMB_STRATEGY_POOL);
  INT(MMB_READ); INT(MMB_WRITE); INT(MMB_READ_WRITE);
  INT(MMB_ROWMAJOR); INT(MMB_COLMAJOR);
  INT(MMB_RECORD_AOS); INT(MMB_RECORD_SOA); INT(MMB_MAX_FIELDS); INT(MMB_FIELD_NAME_MAX);
  INT(MMB_TYPE_BYTES); INT(MMB_TYPE_FLOAT); INT(MMB_TYPE_DOUBLE); INT(MMB_TYPE_INT32);
  INT(MMB_TYPE_INT64);
  INT(MMB_MERGE_OVERWRITE); INT(MMB_MERGE_SUM); INT(MMB_MERGE_MIN); INT(MMB_MERGE_MAX);
  INT(MMB_SCHEDULE_ROWMAJOR); INT(MMB_SCHEDULE_COLMAJOR); INT(MMB_SCHEDULE_MORTON);
  INT(MMB_SCHEDULE_CUSTOM);
  INT(MMB_QUEUE_AUTO); INT(MMB_QUEUE_THREAD); INT(MMB_QUEUE_CUDA_STREAM);
  INT(MMB_LOG_DEFAULT); INT(MMB_LOG_OFF); INT(MMB_LOG_ERROR); INT(MMB_LOG_WARN);
  INT(MMB_LOG_INFO); INT(MMB_LOG_DEBUG);
  INT(MMB_INTERFACE_THREAD_SAFE); INT(MMB_ALLOC_ZERO);
  INT(MMB_ADVICE_NORMAL); INT(MMB_ADVICE_WILLNEED); INT(MMB_ADVICE_WONTNEED); INT(MMB_ADVICE_KEEP);
  INT(MMB_OOM_GIVE_UP); INT(MMB_OOM_RETRY); INT(MMB_OOM_HANDLER_ROUNDS);
  INT(MMB_PROVIDER_ABI_VERSION); INT(MMB_PROVIDER_HOST_ACCESSIBLE);
  INT(MMB_PROVIDER_DEVICE_ACCESSIBLE); INT(MMB_PROVIDER_PAGE_LOCKED);
  INT(MMB_PROVIDER_ASYNC_COPY); INT(MMB_PROVIDER_CUDA_MEMORY);
  SIZE(MMB_DEFAULT_ALIGNMENT); SIZE(MMB_MAX_ALIGNMENT); SIZE(MMB_REGION_DEFAULT_ALIGNMENT);
  return 0;
}
