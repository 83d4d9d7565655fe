/* Internal: an 8 x 8 block of 4-byte words (or 4 x 4 of qwords)
   transposed in AVX2 registers, for the tile layer's 2-D transposes
   (transfer.c) and its record conversions on CPUs without AVX-512
   (record.c). Callers are compiled for AVX2 (target("avx2")). */
#ifndef MMB_TILE_TRANSPOSE8_H
#define MMB_TILE_TRANSPOSE8_H

#include <immintrin.h>

/* In each 128-bit half, the 4 x 4 block of words of r[0..3] transposed:
   words interleaved in pairs of rows, then in pairs of pairs. */
__attribute__((target("avx2"), always_inline)) static inline void
mmb__transpose4x4_halves(__m256 *r) {
  __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  r[0] = _mm256_shuffle_ps(t0, t2, 0x44);
  r[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
  r[2] = _mm256_shuffle_ps(t1, t3, 0x44);
  r[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
}

/* A 4 x 4 block of 8-byte qwords (r[i] row i) transposed: qwords
   interleaved in pairs of rows, then the 128-bit halves exchanged. */
__attribute__((target("avx2"), always_inline)) static inline void
mmb__transpose4x4_qwords(__m256 *r) {
  __m256d a0 = _mm256_castps_pd(r[0]), a1 = _mm256_castps_pd(r[1]),
          a2 = _mm256_castps_pd(r[2]), a3 = _mm256_castps_pd(r[3]);
  __m256d t0 = _mm256_unpacklo_pd(a0, a1), t1 = _mm256_unpackhi_pd(a0, a1);
  __m256d t2 = _mm256_unpacklo_pd(a2, a3), t3 = _mm256_unpackhi_pd(a2, a3);
  r[0] = _mm256_castpd_ps(_mm256_permute2f128_pd(t0, t2, 0x20));
  r[1] = _mm256_castpd_ps(_mm256_permute2f128_pd(t1, t3, 0x20));
  r[2] = _mm256_castpd_ps(_mm256_permute2f128_pd(t0, t2, 0x31));
  r[3] = _mm256_castpd_ps(_mm256_permute2f128_pd(t1, t3, 0x31));
}

/* r[i] holds row i of the block; after the call r[j] holds column j: the
   4 x 4 blocks of each half of rows 0-3 and of rows 4-7 transposed, then
   the halves of rows j and j + 4 exchanged. */
__attribute__((target("avx2"), always_inline)) static inline void mmb__transpose8x8(__m256 *r) {
  mmb__transpose4x4_halves(r);
  mmb__transpose4x4_halves(r + 4);
  _Pragma("GCC unroll 8") for (int j = 0; j < 4; j++) {
    __m256 lo = r[j], hi = r[4 + j];
    r[j] = _mm256_permute2f128_ps(lo, hi, 0x20);
    r[4 + j] = _mm256_permute2f128_ps(lo, hi, 0x31);
  }
}

#endif /* MMB_TILE_TRANSPOSE8_H */
