/* The copy engine's helper threads under concurrent callers: three threads
   copy 5 MiB buffers at once through an interface that splits copies over
   two threads (one split copy runs at a time; the others run alone), with
   streaming stores from the first byte. Checks every byte. A plain program,
   run by `make test` and under ThreadSanitizer by `make test SANITIZE=thread`. */
#include <mmb/mmb.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 3, ROUNDS = 6, BYTES = 5 << 20 };

static mmbMemInterface *iface;

static void *run(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  mmbAllocation *a, *b;
  if (mmb_allocate(BYTES, iface, &a) != MMB_OK || mmb_allocate(BYTES, iface, &b) != MMB_OK)
    return (void *)1;
  unsigned char *s = mmb_allocation_ptr(a), *d = mmb_allocation_ptr(b);
  uintptr_t bad = 0;
  for (int r = 0; r < ROUNDS && !bad; r++) {
    for (size_t i = 0; i < BYTES; i++) s[i] = (unsigned char)(i + id * 7 + (size_t)r);
    size_t rows = 1000, width = BYTES / rows - 100;   /* gapped rows, then one run */
    bad |= mmb_copy_2d(b, 0, 0, BYTES / rows, a, 0, 0, BYTES / rows, width, rows) != MMB_OK;
    for (size_t row = 0; row < rows && !bad; row++)
      bad |= memcmp(d + row * (BYTES / rows), s + row * (BYTES / rows), width) != 0;
    bad |= mmb_copy(b, a) != MMB_OK || memcmp(d, s, BYTES) != 0;
  }
  bad |= mmb_free(a) != MMB_OK || mmb_free(b) != MMB_OK;
  return (void *)bad;
}

int main(void) {
  setenv("MMB_COPY_NT_BYTES", "1", 1);
  mmbOptions opts = {.log_level = MMB_LOG_ERROR};
  if (mmb_init(&opts) != MMB_OK) return 1;
  mmbMemSpace *dram;
  mmbMemInterfaceConfig cfg = {.flags = MMB_INTERFACE_THREAD_SAFE, .copy_threads = 2};
  if (mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram) != MMB_OK ||
      mmb_request_interface(dram, &cfg, &iface) != MMB_OK)
    return 1;
  pthread_t t[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, run, (void *)i);
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    void *bad;
    pthread_join(t[i], &bad);
    failed |= bad != NULL;
  }
  failed |= mmb_interface_destroy(iface) != MMB_OK || mmb_finalize() != MMB_OK;
  printf("stress-copies: %d threads x %d rounds of split, streamed 5 MiB copies: %s\n", THREADS,
         ROUNDS, failed ? "FAILED" : "ok");
  return failed;
}
