/* bench/copy: mmb_copy_1d/2d/nd on 256 MiB of payload against the fastest
   copies written here, timed in the same run, interleaved (baseline, mmb,
   baseline, mmb, ...), each from a cold cache, with the same compiler flags:
   - memcpy of the payload (glibc picks its stores from a threshold of its
     own);
   - a non-temporal copy: the same rows, written with AVX-512 (or AVX2)
     streaming stores, one thread;
   - the same split over 2 threads (the machine's bandwidth), in chunks
     dealt as each thread asks (as mmb deals its own), against mmb with
     copy_threads = 2.
   Prints GB/s as the median round (and the worst), and the ratio of mmb's
   median to the best single-thread baseline's (to the 2-thread baseline's
   for the 2-thread cases). Targets: >= 0.9 for contiguous copies
   and rows >= 4 KiB, >= 0.8 for rows of 256 B, >= 0.8 of the 2-thread copy.
   Usage: bench-copy [MiB of payload] [rounds] */
#include <mmb/mmb.h>

#include "bench.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct copy_case {
  const char *name;
  size_t width, pitch;   /* row bytes and pitch on both sides; pitch == width: contiguous */
  int nd;                /* 1: copy_1d, 2: copy_2d, 3: copy_nd over a 3-D box */
  unsigned threads;      /* mmb's interface copy_threads; 2: compared with the 2-thread copy */
  double target;
} copy_case;

static size_t payload, rounds;
static mmbAllocation *src, *dst, *src2, *dst2;   /* *2: on the 2-thread interface */
static char *evict;
static size_t evict_bytes;

/* Every timed copy starts with a cold cache, baselines and mmb alike. */
static void evict_caches(void) {
  for (size_t i = 0; i < evict_bytes; i += 64) evict[i]++;
}

/* ---- the baselines ------------------------------------------------------------ */

/* A streaming copy of one row: aligned stores once the destination is. */
static void nt_row(char *d, const char *s, size_t n) {
  size_t head = (size_t)(-(uintptr_t)d & 63);
  if (head > n) head = n;
  memcpy(d, s, head);
  d += head, s += head, n -= head;
#ifdef __AVX512F__
  for (; n >= 64; n -= 64, d += 64, s += 64) _mm512_stream_si512((void *)d, _mm512_loadu_si512(s));
#else
  for (; n >= 32; n -= 32, d += 32, s += 32)
    _mm256_stream_si256((void *)d, _mm256_loadu_si256((const void *)s));
#endif
  memcpy(d, s, n);
}

static void nt_rows(char *d, const char *s, size_t width, size_t pitch, size_t rows) {
  for (size_t r = 0; r < rows; r++) nt_row(d + r * pitch, s + r * pitch, width);
  _mm_sfence();
}

/* The 2-thread copy: chunks of about 1 MiB (of one run's bytes, or of
   whole rows) dealt to the two threads as each asks, as mmb deals a split
   copy's. */
typedef struct nt_job {
  char *d;
  const char *s;
  size_t width, pitch;   /* one run: pitch 0, chunks of bytes */
  bench_deal deal;
} nt_job;

static void *nt_chunks(void *v) {
  nt_job *t = v;
  size_t lo, hi;
  while (bench_deal_next(&t->deal, &lo, &hi)) {
    if (!t->pitch) nt_rows(t->d + lo, t->s + lo, hi - lo, hi - lo, 1);
    else nt_rows(t->d + lo * t->pitch, t->s + lo * t->pitch, t->width, t->pitch, hi - lo);
  }
  return NULL;
}

static void nt_two_threads(char *d, const char *s, const copy_case *c, size_t rows) {
  bool run = c->pitch == c->width;
  nt_job t = {.d = d, .s = s, .width = c->width, .pitch = run ? 0 : c->pitch};
  if (run) bench_deal_start(&t.deal, payload, (size_t)1 << 20);
  else bench_deal_start(&t.deal, rows, ((size_t)1 << 20) / c->pitch);
  pthread_t helper;
  pthread_create(&helper, NULL, nt_chunks, &t);
  nt_chunks(&t);
  pthread_join(helper, NULL);
}

/* ---- one round of each ------------------------------------------------------------ */

enum { MEMCPY, NT, NT2, MMB, N_WAYS };
static const char *const way_names[N_WAYS] = {"memcpy", "NT 1 thread", "NT 2 threads", "mmb"};

static void run(const copy_case *c, int way) {
  size_t rows = payload / c->width;
  bool two = c->threads > 1;
  mmbAllocation *D = two ? dst2 : dst, *S = two ? src2 : src;
  char *d = mmb_allocation_ptr(D), *s = mmb_allocation_ptr(S);
  if (way == MEMCPY) {
    if (c->pitch == c->width) memcpy(d, s, payload);
    else for (size_t r = 0; r < rows; r++) memcpy(d + r * c->pitch, s + r * c->pitch, c->width);
  } else if (way == NT) {
    if (c->pitch == c->width) nt_rows(d, s, payload, payload, 1);
    else nt_rows(d, s, c->width, c->pitch, rows);
  } else if (way == NT2) {
    nt_two_threads(d, s, c, rows);
  } else if (c->nd == 1) {
    CHECK(mmb_copy_1d(D, 0, S, 0, payload));
  } else if (c->nd == 2) {
    CHECK(mmb_copy_2d(D, 0, 0, c->pitch, S, 0, 0, c->pitch, c->width, rows));
  } else {
    size_t planes = 16, per = rows / planes;   /* main() keeps rows a multiple of 16 */
    size_t off[3] = {0, 0, 0}, pitch[3] = {c->pitch, c->pitch * per, 0};
    size_t dims[3] = {c->width, per, planes};
    CHECK(mmb_copy_nd(D, off, pitch, S, off, pitch, 3, dims));
  }
}

int main(int argc, char **argv) {
  payload = (argc > 1 ? strtoull(argv[1], NULL, 10) : 256) << 20;
  if (payload < ((size_t)1 << 20)) payload = (size_t)1 << 20;   /* whole MiB: rows split into 16 planes */
  rounds = argc > 2 ? strtoull(argv[2], NULL, 10) : 7;
  if (rounds < 1) rounds = 1;
  CHECK(mmb_init(NULL));
  mmbMemSpace *dram;
  mmbMemInterface *iface, *iface2;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  CHECK(mmb_request_interface(dram, NULL, &iface));
  CHECK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.copy_threads = 2}, &iface2));
  const copy_case cases[] = {
      {"copy_1d contiguous", payload, payload, 1, 1, 0.9},
      {"copy_2d rows 64 KiB", 64 << 10, 80 << 10, 2, 1, 0.9},
      {"copy_2d rows 4 KiB", 4 << 10, 5 << 10, 2, 1, 0.9},
      {"copy_2d rows 256 B", 256, 320, 2, 1, 0.8},
      {"copy_nd 3-D, rows 4 KiB", 4 << 10, 5 << 10, 3, 1, 0.9},
      {"copy_nd 3-D, rows 256 B", 256, 320, 3, 1, 0.8},
      {"copy_1d, 2 threads", payload, payload, 1, 2, 0.8},
      {"copy_2d rows 4 KiB, 2 threads", 4 << 10, 5 << 10, 2, 2, 0.8},
  };
  enum { N_CASES = sizeof cases / sizeof cases[0] };
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  evict_bytes = 2 * (llc > 0 ? (size_t)llc : (size_t)64 << 20);
  if (evict_bytes > ((size_t)1 << 30)) evict_bytes = (size_t)1 << 30;
  if (!(evict = malloc(evict_bytes))) return 1;
  memset(evict, 0, evict_bytes);
  size_t span = payload / 256 * 320;   /* the largest pitch/width ratio above */
  CHECK(mmb_allocate(span, iface, &src));
  CHECK(mmb_allocate(span, iface, &dst));
  CHECK(mmb_allocate(span, iface2, &src2));
  CHECK(mmb_allocate(span, iface2, &dst2));
  memset(mmb_allocation_ptr(src), 1, span);
  memset(mmb_allocation_ptr(dst), 2, span);
  memset(mmb_allocation_ptr(src2), 1, span);
  memset(mmb_allocation_ptr(dst2), 2, span);
  printf("bench-copy: %zu MiB of payload per copy, %zu interleaved rounds after a warm-up, caches "
         "evicted (%zu MiB) before each copy; GB/s: median (worst)\n",
         payload >> 20, rounds, evict_bytes >> 20);
  printf("%-30s %16s %16s %16s %16s %7s %7s\n", "case", way_names[0], way_names[1], way_names[2],
         way_names[3], "ratio", "target");
  double *t = malloc(rounds * sizeof *t * N_WAYS);
  if (!t) return 1;
  int missed = 0;
  for (size_t i = 0; i < N_CASES; i++) {
    const copy_case *c = &cases[i];
    int ways[] = {MEMCPY, NT, NT2, MMB};
    for (int w = 0; w < N_WAYS; w++) run(c, ways[w]);   /* warm-up: page faults are not measured */
    for (size_t r = 0; r < rounds; r++)
      for (int w = 0; w < N_WAYS; w++) {
        evict_caches();
        double t0 = now();
        run(c, ways[w]);
        t[w * rounds + r] = now() - t0;
      }
    double med[N_WAYS], worst[N_WAYS];
    for (int w = 0; w < N_WAYS; w++) {
      qsort(t + w * rounds, rounds, sizeof *t, cmp_double);
      med[w] = t[w * rounds + rounds / 2];
      worst[w] = t[w * rounds + rounds - 1];
    }
    double base = c->threads > 1 ? med[NT2] : (med[MEMCPY] < med[NT] ? med[MEMCPY] : med[NT]);
    double ratio = base / med[MMB];
    missed += ratio < c->target;
    printf("%-30s", c->name);
    for (int w = 0; w < N_WAYS; w++)
      printf(" %7.2f (%6.2f)", payload / med[w] / 1e9, payload / worst[w] / 1e9);
    printf(" %7.2f %7.2f%s\n", ratio, c->target, ratio < c->target ? "  below" : "");
  }
  printf("ratio: mmb's median against the best single-thread baseline's (2-thread cases: against "
         "NT 2 threads); %d of %d cases below target\n", missed, (int)N_CASES);
  free(t);
  CHECK(mmb_free(src));
  CHECK(mmb_free(dst));
  CHECK(mmb_free(src2));
  CHECK(mmb_free(dst2));
  CHECK(mmb_interface_destroy(iface));
  CHECK(mmb_interface_destroy(iface2));
  CHECK(mmb_finalize());
  free(evict);
  return 0;
}
