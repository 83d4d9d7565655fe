/* bench/records: AoS <-> SoA conversion of 64 MiB of records by mmb_array_copy
   (an AoS array into an SoA array of the same records, and back), against
   two baselines timed in the same run, round by round in turn:
   - the bandwidth of a plain copy of the same bytes: the faster of glibc's
     memcpy and a non-temporal AVX2 copy (the best single-core copies);
   - a hand-written per-field loop, typed for the struct, one loop per field
     (what code converts with by hand), compiled -O3 -march=native.
   Four records: 3 floats (12 B), 3 floats and an int (16 B), a particle of
   3 floats, a char and a double (24 B with C's padding), and 6 doubles, a
   float and an int (56 B). Prints medians and worst rounds, in ms and GB/s
   of AoS bytes, and the ratios; target: mmb >= 0.8x the plain copy.
   Usage: bench-records [rounds] */
#include <mmb/mmb.h>

#include "bench.h"

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BYTES = 64 << 20, MAX_ROUNDS = 64 };

/* ---- the records, and their hand-written per-field loops ------------------- */
typedef struct r12 { float x, y, z; } r12;
typedef struct r16 { float x, y, z; int32_t id; } r16;
typedef struct r32 { float x, y, z; char flag; double mass; } r32;
typedef struct r56 { double x, y, z, vx, vy, vz; float m; int32_t id; } r56;

/* One loop per field, from the AoS array into planes packed one after the
   other (n elements each), and back. */
#define FIELD_OUT(T, f) { T *o = (T *)plane; for (size_t i = 0; i < n; i++) o[i] = a[i].f; plane += n * sizeof(T); }
#define FIELD_IN(T, f)  { const T *o = (const T *)plane; for (size_t i = 0; i < n; i++) a[i].f = o[i]; plane += n * sizeof(T); }

static void r12_out(const r12 *a, char *plane, size_t n) { FIELD_OUT(float, x) FIELD_OUT(float, y) FIELD_OUT(float, z) }
static void r12_in(r12 *a, const char *plane, size_t n) { FIELD_IN(float, x) FIELD_IN(float, y) FIELD_IN(float, z) }
static void r16_out(const r16 *a, char *plane, size_t n) { FIELD_OUT(float, x) FIELD_OUT(float, y) FIELD_OUT(float, z) FIELD_OUT(int32_t, id) }
static void r16_in(r16 *a, const char *plane, size_t n) { FIELD_IN(float, x) FIELD_IN(float, y) FIELD_IN(float, z) FIELD_IN(int32_t, id) }
static void r32_out(const r32 *a, char *plane, size_t n) { FIELD_OUT(float, x) FIELD_OUT(float, y) FIELD_OUT(float, z) FIELD_OUT(char, flag) FIELD_OUT(double, mass) }
static void r32_in(r32 *a, const char *plane, size_t n) { FIELD_IN(float, x) FIELD_IN(float, y) FIELD_IN(float, z) FIELD_IN(char, flag) FIELD_IN(double, mass) }
static void r56_out(const r56 *a, char *plane, size_t n) {
  FIELD_OUT(double, x) FIELD_OUT(double, y) FIELD_OUT(double, z) FIELD_OUT(double, vx)
  FIELD_OUT(double, vy) FIELD_OUT(double, vz) FIELD_OUT(float, m) FIELD_OUT(int32_t, id)
}
static void r56_in(r56 *a, const char *plane, size_t n) {
  FIELD_IN(double, x) FIELD_IN(double, y) FIELD_IN(double, z) FIELD_IN(double, vx)
  FIELD_IN(double, vy) FIELD_IN(double, vz) FIELD_IN(float, m) FIELD_IN(int32_t, id)
}

typedef struct record_case {
  const char *name;
  size_t size, n_fields;
  mmbRecordField fields[8];
  void (*out)(const void *aos, char *planes, size_t n);
  void (*in)(void *aos, const char *planes, size_t n);
} record_case;

#define F(T, f) {#f, sizeof(((T *)0)->f), offsetof(T, f)}
static const record_case cases[] = {
  {"3 floats", sizeof(r12), 3, {F(r12, x), F(r12, y), F(r12, z)},
   (void (*)(const void *, char *, size_t))r12_out, (void (*)(void *, const char *, size_t))r12_in},
  {"3 floats + int", sizeof(r16), 4, {F(r16, x), F(r16, y), F(r16, z), F(r16, id)},
   (void (*)(const void *, char *, size_t))r16_out, (void (*)(void *, const char *, size_t))r16_in},
  {"particle (24 B, 5 fields)", sizeof(r32), 5,
   {F(r32, x), F(r32, y), F(r32, z), F(r32, flag), F(r32, mass)},
   (void (*)(const void *, char *, size_t))r32_out, (void (*)(void *, const char *, size_t))r32_in},
  {"6 doubles + float + int", sizeof(r56), 8,
   {F(r56, x), F(r56, y), F(r56, z), F(r56, vx), F(r56, vy), F(r56, vz), F(r56, m), F(r56, id)},
   (void (*)(const void *, char *, size_t))r56_out, (void (*)(void *, const char *, size_t))r56_in},
};

/* ---- the plain copies ------------------------------------------------------- */
__attribute__((target("avx2"))) static void nt_copy(void *dst, const void *src, size_t bytes) {
  __m256i *d = dst;
  const __m256i *s = src;
  size_t n = bytes / 32;
  for (size_t i = 0; i < n; i += 4) {
    __m256i a = _mm256_load_si256(s + i), b = _mm256_load_si256(s + i + 1);
    __m256i c = _mm256_load_si256(s + i + 2), e = _mm256_load_si256(s + i + 3);
    _mm256_stream_si256(d + i, a);
    _mm256_stream_si256(d + i + 1, b);
    _mm256_stream_si256(d + i + 2, c);
    _mm256_stream_si256(d + i + 3, e);
  }
  _mm_sfence();
}

typedef struct timing {
  double v[MAX_ROUNDS];
  int n;
} timing;

static void add(timing *t, double s) { t->v[t->n++] = s; }
static double median(timing *t) {
  qsort(t->v, (size_t)t->n, sizeof *t->v, cmp_double);
  return t->v[t->n / 2];
}
static double worst(const timing *t) { return t->v[t->n - 1]; }   /* after median() */

static void row(const char *what, timing *t, double bytes) {
  double m = median(t);
  printf("  %-26s %8.2f ms (worst %6.2f)  %6.2f GB/s\n", what, m * 1e3, worst(t) * 1e3,
         bytes / m * 1e-9);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 7;
  if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 7;
  CHECK(mmb_init(NULL));
  mmbMemSpace *dram;
  mmbMemInterface *iface;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  CHECK(mmb_request_interface(dram, NULL, &iface));
  char *src = aligned_alloc(64, BYTES), *dst = aligned_alloc(64, BYTES);
  if (!src || !dst) return 1;
  memset(src, 1, BYTES);
  memset(dst, 2, BYTES);
  printf("bench-records: 64 MiB of AoS records, %d rounds, medians (worst)\n", rounds);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const record_case *rc = &cases[c];
    size_t n = BYTES / rc->size, aos_bytes = n * rc->size;
    mmbLayout *la, *ls;
    CHECK(mmb_layout_create_record(rc->fields, rc->n_fields, rc->size, MMB_RECORD_AOS, 1,
                                   MMB_ROWMAJOR, (mmbLayoutPadding){0}, &la));
    CHECK(mmb_layout_create_record(rc->fields, rc->n_fields, rc->size, MMB_RECORD_SOA, 1,
                                   MMB_ROWMAJOR, (mmbLayoutPadding){0}, &ls));
    mmbArray *aos, *soa;
    mmbDimensions d = {1, {n}};
    CHECK(mmb_array_create(&d, la, iface, MMB_READ_WRITE, &aos));
    CHECK(mmb_array_create(&d, ls, iface, MMB_READ_WRITE, &soa));
    char *a = mmb_array_ptr(aos), *planes = malloc(n * 64);
    for (size_t i = 0; i < aos_bytes; i++) a[i] = (char)(i * 7);
    memset(mmb_array_ptr(soa), 0, n);   /* (touched by the warm-up below) */
    CHECK(mmb_array_copy(soa, aos));    /* warm-up: pages faulted in */
    CHECK(mmb_array_copy(aos, soa));
    rc->out(a, planes, n);
    timing t_to = {0}, t_from = {0}, t_memcpy = {0}, t_nt = {0}, t_hand_out = {0}, t_hand_in = {0};
    for (int r = 0; r < rounds; r++) {
      double t0 = now();
      CHECK(mmb_array_copy(soa, aos));
      add(&t_to, now() - t0);
      t0 = now();
      memcpy(dst, src, aos_bytes);
      add(&t_memcpy, now() - t0);
      t0 = now();
      rc->out(a, planes, n);
      add(&t_hand_out, now() - t0);
      t0 = now();
      nt_copy(dst, src, aos_bytes & ~(size_t)127);
      add(&t_nt, now() - t0);
      t0 = now();
      CHECK(mmb_array_copy(aos, soa));
      add(&t_from, now() - t0);
      t0 = now();
      rc->in(a, planes, n);
      add(&t_hand_in, now() - t0);
    }
    /* the conversion is exact: back and forth leaves the AoS fields as they were */
    CHECK(mmb_array_copy(soa, aos));
    mmbField f;
    CHECK(mmb_array_get_field(soa, 0, &f));
    if (memcmp(f.ptr, planes, n * rc->fields[0].size)) {
      fprintf(stderr, "bench-records: field 0 differs from the hand-written loop's\n");
      return 1;
    }
    printf("%s: %zu records of %zu B (%zu MiB)\n", rc->name, n, rc->size, aos_bytes >> 20);
    row("mmb AoS -> SoA", &t_to, (double)aos_bytes);
    row("mmb SoA -> AoS", &t_from, (double)aos_bytes);
    row("memcpy (same bytes)", &t_memcpy, (double)aos_bytes);
    row("non-temporal copy", &t_nt, (double)aos_bytes);
    row("per-field loop AoS -> SoA", &t_hand_out, (double)aos_bytes);
    row("per-field loop SoA -> AoS", &t_hand_in, (double)aos_bytes);
    double copy = median(&t_memcpy) < median(&t_nt) ? median(&t_memcpy) : median(&t_nt);
    printf("  ratio vs the faster plain copy: AoS->SoA %.2fx, SoA->AoS %.2fx (target >= 0.8)\n",
           copy / median(&t_to), copy / median(&t_from));
    printf("  ratio vs the per-field loop:    AoS->SoA %.2fx, SoA->AoS %.2fx\n",
           median(&t_hand_out) / median(&t_to), median(&t_hand_in) / median(&t_from));
    CHECK(mmb_array_destroy(aos));
    CHECK(mmb_array_destroy(soa));
    CHECK(mmb_layout_destroy(la));
    CHECK(mmb_layout_destroy(ls));
    free(planes);
  }
  free(src);
  free(dst);
  CHECK(mmb_finalize());
  return 0;
}
