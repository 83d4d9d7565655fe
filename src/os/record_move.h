/* Internal: a record conversion as plain data, and the moves of one of its
   elements, for code that runs where the tile layer cannot: the CUDA kernel
   of providers/cuda/convert.cu, which compiles this header as CUDA C++
   (it includes nothing of mmb). The tile layer fills it from two views
   (record.c: mmb__record_moves_make) and tests run its element moves on
   the host against the host conversion.

   Element i of `count` sits at index i in the dimensions `dim` (innermost
   first, i = i0 + dim[0] (i1 + dim[1] (i2 ...))); its offsets are
   sum_k i_k ds[k] elements on the destination and sum_k i_k ss[k] on the
   source. Field f of it is `size[f]` bytes at d[f] + doff * dstep[f] and
   s[f] + soff * sstep[f]: AoS records step by the record, SoA planes by
   the field. */
#ifndef MMB_OS_RECORD_MOVE_H
#define MMB_OS_RECORD_MOVE_H

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

/* n bytes, in the widest words both ends and n allow (memcpy of a constant
   size: one load and one store, defined at any alignment, on both sides). */
static inline MMB__HOST_DEVICE void mmb__move_bytes(char *d, const char *s, size_t n) {
  uintptr_t a = (uintptr_t)d | (uintptr_t)s | (uintptr_t)n;
  size_t i = 0;
  if (a % 8 == 0)
    for (; i < n; i += 8) memcpy(d + i, s + i, 8);
  else if (a % 4 == 0)
    for (; i < n; i += 4) memcpy(d + i, s + i, 4);
  else
    for (; i < n; i++) d[i] = s[i];
}

/* Every field of element i. */
static inline MMB__HOST_DEVICE void mmb__record_move(const mmb__record_moves *m, size_t i) {
  size_t doff = 0, soff = 0;
  for (size_t k = 0; k < m->rank; k++) {
    size_t ik = i % m->dim[k];
    i /= m->dim[k];
    doff += ik * m->ds[k];
    soff += ik * m->ss[k];
  }
  for (size_t f = 0; f < m->n_fields; f++)
    mmb__move_bytes(m->d[f] + doff * m->dstep[f], m->s[f] + soff * m->sstep[f], m->size[f]);
}

#endif /* MMB_OS_RECORD_MOVE_H */
