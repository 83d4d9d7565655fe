/* Internal: a record conversion as plain data, and the moves of a group of
   its elements, for code that runs where the tile layer cannot: the CUDA
   kernel of providers/cuda/convert.cu, which compiles this header as CUDA
   C++ (it includes nothing of mmb). The tile layer fills it from two views
   (record.c: mmb__record_moves_make) and tests run the groups' moves on
   the host against the host conversion.

   Element i of `count` sits at index i in the dimensions `dim` (innermost
   first, i = i0 + dim[0] (i1 + dim[1] (i2 ...))); its offsets are
   sum_k i_k ds[k] elements on the destination and sum_k i_k ss[k] on the
   source. Field f of it is `size[f]` bytes at d[f] + doff * dstep[f] and
   s[f] + soff * sstep[f]: AoS records step by the record, SoA planes by
   the field. */
#ifndef MMB_OS_RECORD_MOVE_H
#define MMB_OS_RECORD_MOVE_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define MMB__HOST_DEVICE __host__ __device__
#else
#define MMB__HOST_DEVICE
#endif

enum { MMB__MOVE_FIELDS = 16, MMB__MOVE_DIMS = 8 };   /* MMB_MAX_FIELDS, MMB_MAX_DIMS */

typedef struct mmb__record_moves {
  size_t n_fields, rank, count;
  size_t size[MMB__MOVE_FIELDS];
  char *d[MMB__MOVE_FIELDS];
  const char *s[MMB__MOVE_FIELDS];
  size_t dstep[MMB__MOVE_FIELDS], sstep[MMB__MOVE_FIELDS];   /* bytes per element */
  size_t dim[MMB__MOVE_DIMS], ds[MMB__MOVE_DIMS], ss[MMB__MOVE_DIMS];   /* elements */
} mmb__record_moves;

/* Element i's offsets, in elements, on both sides. */
static inline MMB__HOST_DEVICE void mmb__record_offsets(const mmb__record_moves *m, size_t i,
                                                        size_t *doff, size_t *soff) {
  if (m->rank == 1) {   /* (the common case: no division) */
    *doff = i * m->ds[0];
    *soff = i * m->ss[0];
    return;
  }
  *doff = *soff = 0;
  for (size_t k = 0; k < m->rank; k++) {
    size_t ik = i % m->dim[k];
    i /= m->dim[k];
    *doff += ik * m->ds[k];
    *soff += ik * m->ss[k];
  }
}

/* The widest of 8, 4, 2 and 1 bytes that divides a (the bits of all the
   addresses and sizes a word must align to, or-ed). */
static inline MMB__HOST_DEVICE size_t mmb__unit_of(uintptr_t a) {
  return a % 8 == 0 ? 8 : a % 4 == 0 ? 4 : a % 2 == 0 ? 2 : 1;
}

/* The word field f moves by: the widest that divides its size, both first
   addresses and both steps (so every element's field is aligned to it on
   both sides). */
static inline MMB__HOST_DEVICE size_t mmb__field_unit(const mmb__record_moves *m, size_t f) {
  return mmb__unit_of((uintptr_t)m->d[f] | (uintptr_t)m->s[f] | (uintptr_t)m->dstep[f] |
                      (uintptr_t)m->sstep[f] | (uintptr_t)m->size[f]);
}

/* A word of `unit` bytes at an address aligned to it, and back. A device
   faults where the address is not; where tests run the moves on the host,
   they assert it. */
static inline MMB__HOST_DEVICE uint64_t mmb__load_word(const char *p, size_t unit) {
#ifdef __CUDA_ARCH__
  switch (unit) {   /* (a cast: nvcc's memcpy of unknown alignment moves bytes) */
  case 8: return *(const uint64_t *)p;
  case 4: return *(const uint32_t *)p;
  case 2: return *(const uint16_t *)p;
  default: return *(const uint8_t *)p;
  }
#else
  assert((uintptr_t)p % unit == 0);
  uint64_t v = 0;
  memcpy(&v, p, unit);
  return v;
#endif
}
static inline MMB__HOST_DEVICE void mmb__store_word(char *p, uint64_t v, size_t unit) {
#ifdef __CUDA_ARCH__
  switch (unit) {
  case 8: *(uint64_t *)p = v; break;
  case 4: *(uint32_t *)p = (uint32_t)v; break;
  case 2: *(uint16_t *)p = (uint16_t)v; break;
  default: *(uint8_t *)p = (uint8_t)v; break;
  }
#else
  assert((uintptr_t)p % unit == 0);
  memcpy(p, &v, unit);
#endif
}

/* How many elements one thread moves together. */
enum { MMB__MOVE_GROUP = 4 };

/* Every field of the elements first + j stride (j < MMB__MOVE_GROUP) that
   are below count: field by field and word by word, the group's loads of a
   word all issued before its stores, so that a thread has that many loads
   in flight rather than one (on a device, where a thread waits for each
   load it stores, that is the bandwidth). A block of threads with stride
   its size moves MMB__MOVE_GROUP of its size consecutive elements, each
   word a coalesced run on the plane side, its records' lines reused field
   after field on the record side. */
static inline MMB__HOST_DEVICE void mmb__record_move_group(const mmb__record_moves *m,
                                                           size_t first, size_t stride) {
  enum { G = MMB__MOVE_GROUP };
  size_t doff[G], soff[G];
  bool in[G];
  for (int j = 0; j < G; j++) {
    size_t i = first + j * stride;
    in[j] = i < m->count;
    doff[j] = soff[j] = 0;
    if (in[j]) mmb__record_offsets(m, i, &doff[j], &soff[j]);
  }
  for (size_t f = 0; f < m->n_fields; f++) {
    size_t unit = mmb__field_unit(m, f), dstep = m->dstep[f], sstep = m->sstep[f];
    for (size_t w = 0; w < m->size[f]; w += unit) {
      const char *s = m->s[f] + w;
      char *d = m->d[f] + w;
      uint64_t v[G];
      for (int j = 0; j < G; j++)
        if (in[j]) v[j] = mmb__load_word(s + soff[j] * sstep, unit);
      for (int j = 0; j < G; j++)
        if (in[j]) mmb__store_word(d + doff[j] * dstep, v[j], unit);
    }
  }
}

/* A side of the moves that is a run of whole records: every field steps by
   the same `step` bytes, element i lies at i * step (rank 1, one element
   after the other), and a record's fields lie within `span` <= step bytes
   from the lowest, at `lo` for element 0. A device's kernel writes such a
   destination a chunk at a time through a block's shared memory (a
   stage): the fields put in the stage, then the chunk's window written
   out contiguous, in words of `unit` bytes (the widest of 8, 4, 2 and 1
   that divides lo, step and span): the padding between the fields with
   it, and after them but in a chunk's last record, where the window ends.
   Stored field by field at the record's stride, a warp's store touches as
   many sectors as it has threads. */
typedef struct mmb__record_run {
  char *lo;
  size_t step, span, unit;
  bool gaps;   /* bytes of a record that no field covers (padding) */
} mmb__record_run;

static inline MMB__HOST_DEVICE bool mmb__record_run_of(const mmb__record_moves *m, bool dst,
                                                       mmb__record_run *r) {
  const size_t *step = dst ? m->dstep : m->sstep;
  if (m->rank != 1 || (dst ? m->ds[0] : m->ss[0]) != 1 || !m->n_fields) return false;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  size_t covered = 0;
  for (size_t f = 0; f < m->n_fields; f++) {
    uintptr_t a = dst ? (uintptr_t)m->d[f] : (uintptr_t)m->s[f];
    if (step[f] != step[0]) return false;
    lo = a < lo ? a : lo;
    hi = a + m->size[f] > hi ? a + m->size[f] : hi;
    covered += m->size[f];   /* (the fields of a record never overlap) */
  }
  if (hi - lo > step[0]) return false;   /* planes, not records */
  *r = (mmb__record_run){(char *)lo, step[0], hi - lo, mmb__unit_of(lo | step[0] | (hi - lo)),
                         covered < step[0]};
  return true;
}

/* The three steps of a staged chunk, elements first .. first + n - 1, each
   by thread t of T, a barrier between steps; the stage is n * step bytes
   rounded up to 8, aligned to 8. The stage zeroed where the records have
   padding (so that the window writes it as zeros, as the host's streamed
   conversion does, never what the stage held before), the fields put in
   it from the source, then its window written to the destination. */
static inline MMB__HOST_DEVICE void mmb__stage_zero(const mmb__record_run *r, size_t n,
                                                    char *stage, size_t t, size_t T) {
  for (size_t b = t * 8; b < n * r->step; b += T * 8) mmb__store_word(stage + b, 0, 8);
}

static inline MMB__HOST_DEVICE void mmb__stage_fields(const mmb__record_moves *m,
                                                      const mmb__record_run *r, size_t first,
                                                      size_t n, char *stage, size_t t, size_t T) {
  enum { G = MMB__MOVE_GROUP };
  for (size_t f = 0; f < m->n_fields; f++) {
    size_t in_rec = (size_t)(m->d[f] - r->lo), unit = mmb__field_unit(m, f);
    while (in_rec % unit) unit /= 2;   /* (the stage is aligned to 8) */
    size_t sstep = m->sstep[f] * m->ss[0];
    for (size_t w = 0; w < m->size[f]; w += unit) {
      const char *s = m->s[f] + first * sstep + w;
      char *staged = stage + in_rec + w;
      for (size_t j0 = t; j0 < n; j0 += G * T) {
        uint64_t v[G];
        for (int k = 0; k < G; k++)
          if (j0 + k * T < n) v[k] = mmb__load_word(s + (j0 + k * T) * sstep, unit);
        for (int k = 0; k < G; k++)
          if (j0 + k * T < n) mmb__store_word(staged + (j0 + k * T) * r->step, v[k], unit);
      }
    }
  }
}

static inline MMB__HOST_DEVICE void mmb__stage_write(const mmb__record_run *r, size_t first,
                                                     size_t n, const char *stage, size_t t,
                                                     size_t T) {
  enum { G = MMB__MOVE_GROUP };
  size_t u = r->unit, len = (n - 1) * r->step + r->span;
  char *d = r->lo + first * r->step;
  for (size_t b = t * u; b < len; b += G * T * u) {
    uint64_t v[G];
    for (int j = 0; j < G; j++)
      if (b + j * T * u < len) v[j] = mmb__load_word(stage + b + j * T * u, u);
    for (int j = 0; j < G; j++)
      if (b + j * T * u < len) mmb__store_word(d + b + j * T * u, v[j], u);
  }
}

#endif /* MMB_OS_RECORD_MOVE_H */
