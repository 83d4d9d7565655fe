/* Records on the move: whether two views lie alike, an SoA view's planes,
   and the host conversion between storages that differ (AoS and SoA, or two
   AoS shapes), in one pass: the elements go in blocks that stay in L1, and
   each field of a block is gathered or scattered in its turn, with a load
   and a store of the field's own width. transfer.c decides when it runs. */
#include "tile/internal.h"
#include "tile/transpose8.h"

#include <immintrin.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

bool mmb__view_alike(const mmb__view *a, const mmb__view *b) {
  const mmb__fieldset *x = a->rec, *y = b->rec;
  if (!x || !y || x == y) return x == y;
  if (x->kind != y->kind || x->n != y->n) return false;
  if (x->kind == MMB_RECORD_SOA) return true;   /* (the sizes matched) */
  if (x->record_size != y->record_size) return false;
  for (size_t f = 0; f < x->n; f++)
    if (x->offset[f] != y->offset[f]) return false;
  return true;
}

mmb__view mmb__view_plane(const mmb__view *v, size_t f) {
  mmb__view p = *v;
  p.ptr = mmb__view_field(v, f);
  p.esize = v->rec->size[f];
  p.rec = NULL;
  p.first = p.cap = 0;
  return p;
}

/* One field of a block of n elements, from steps of ss bytes to steps of
   ds bytes: a plain load and store of the field's width (memcpy of a
   constant size compiles to one, and is defined at any alignment). */
#define MOVE(W)                                                      \
  for (size_t i = 0; i < n; i++) memcpy(d + i * ds, s + i * ss, W); \
  return

static void move_field(char *d, size_t ds, const char *s, size_t ss, size_t n, size_t size) {
  switch (size) {
    case 1: MOVE(1);
    case 2: MOVE(2);
    case 4: MOVE(4);
    case 8: MOVE(8);
    case 12: MOVE(12);
    case 16: MOVE(16);
    default:
      for (size_t i = 0; i < n; i++) memcpy(d + i * ds, s + i * ss, size);
  }
}

/* ---- AVX-512: blocks of 16 records shuffled in registers --------------------
   In records of whole 4-byte words (up to 128 bytes), the fields that are
   whole words convert 16 records at a time: the words of 16 records (or of
   16 elements of each plane) are loaded as vectors, and every output vector
   is put together from pairs of them by vpermt2d and a masked move, after a
   table made once per conversion: for each output vector, the pairs its
   words come from, the word each lane takes, and which lanes. Words of no
   such field are zero; the other fields follow field by field. */
enum { MAX_VECTORS = 32 };   /* words of a record, or of its fields */

typedef struct shuffle_step {
  uint32_t idx[16];       /* a word of the pair (0..31), per lane */
  uint32_t at;            /* the pair's first input vector, in bytes (128 per pair) */
  uint32_t hi;            /* its second: at + 64, or at for the last vector alone (an
                             odd count: then idx takes words 0..15, of `at` only) */
  uint16_t out, mask;
  uint16_t keep;          /* the output's words so far: 0 at its first step, else all */
  bool last;              /* the output's last step: it is stored */
} shuffle_step;

/* Into AoS by a transposition, streamed: the records of a block (one
   vector each, from its first word) packed into whole vectors. Output
   vector o takes lanes (words, or qwords for the qword transposition) of
   records at .. at + 3 (records of 4 lanes or more): of the first two by
   idx[0], of the others by idx[1] in the lanes of far. A qword lane's index
   is in its low word (idx[.][2 l]), the high word zero. */
typedef struct pack_step {
  uint32_t idx[2][16];
  uint16_t far;
  uint8_t at;
} pack_step;

/* A table of as many outputs as inputs (W) as SHUFFLE_GRID holds it in
   registers: per output o and pair p of inputs (o * P + p, P = (W + 1) / 2)
   the permute's indices and the lanes it sets; a lone last input vector's
   step takes lane l of the output so far, or 16 + a word of the vector.
   Made with the table rather than by each call, which a tile's rows pay
   one by one: particles by 32 x 32 tiles in L2 went from 0.24 to 0.26x
   of a memcpy per tile row either way (bench/records-ab.sh, 192K, 8 runs;
   the Xeon of prefetch_row), whole runs as before. */
typedef struct grid_step {
  uint32_t idx[16];
  uint16_t mask;
} grid_step;

typedef struct shuffle {
  unsigned fields;        /* the fields it moves (bit f); the others go field by field */
  bool transpose;         /* it runs as a transposition instead (transposes) */
  bool qwords;            /* of 8-byte lanes (qword_transposes) */
  pack_step *pack;        /* into AoS, transposing: how it streams (NULL: it cannot) */
  grid_step *grid;        /* as many outputs as inputs: the grid's steps (else NULL) */
  size_t n_in, n_out, n_steps;
  shuffle_step steps[];   /* by output vector */
} shuffle;

/* The packing of records of w lanes, `lanes` to a vector (16 words or 8
   qwords): w output vectors, one for each `lanes` records. */
static pack_step *pack_make(pack_step *ps, size_t w, unsigned lanes) {
  memset(ps, 0, w * sizeof *ps);
  for (size_t o = 0; o < w; o++) {
    ps[o].at = (uint8_t)(lanes * o / w);
    for (unsigned l = 0; l < lanes; l++) {
      size_t g = lanes * o + l, k = g / w - ps[o].at;   /* (k <= 3 for w >= 4) */
      ps[o].idx[k / 2][l * (16 / lanes)] = (uint32_t)(lanes * (k % 2) + g % w);
      if (k >= 2) ps[o].far |= (uint16_t)(1u << l);
    }
  }
  return ps;
}

/* The table for output words taking input word map[o * 16 + l] (-1: zero),
   with room after it for a packing of records of `packs` lanes, `lanes` to
   a vector. */
static shuffle *shuffle_make(size_t n_in, size_t n_out, const int *map, size_t packs,
                             unsigned lanes) {
  size_t pairs = (n_in + 1) / 2, grid = n_in == n_out ? n_out * pairs : 0;
  shuffle *sh = mmb__malloc(sizeof *sh + n_out * pairs * sizeof(shuffle_step) +
                            packs * sizeof(pack_step) + grid * sizeof(grid_step));
  if (!sh) return NULL;
  *sh = (shuffle){.n_in = n_in, .n_out = n_out};
  if (packs) sh->pack = pack_make((pack_step *)&sh->steps[n_out * pairs], packs, lanes);
  if (grid) sh->grid = (grid_step *)((char *)&sh->steps[n_out * pairs] + packs * sizeof(pack_step));
  for (size_t o = 0; o < n_out; o++)
    for (size_t p = 0; p < pairs; p++) {
      shuffle_step st = {.out = (uint16_t)o, .at = (uint32_t)(128 * p),
                         .hi = (uint32_t)(128 * p + (2 * p + 1 == n_in ? 0 : 64))};
      for (unsigned l = 0; l < 16; l++) {
        int w = map[o * 16 + l];
        if (w >= 0 && (size_t)w / 32 == p) {
          st.mask |= (uint16_t)(1u << l);
          st.idx[l] = (uint32_t)w % 32;
        }
      }
      if (!st.mask) continue;
      st.keep = sh->n_steps && sh->steps[sh->n_steps - 1].out == o ? 0xffff : 0;
      if (sh->n_steps && !st.keep) sh->steps[sh->n_steps - 1].last = true;
      sh->steps[sh->n_steps++] = st;
    }
  if (sh->n_steps) sh->steps[sh->n_steps - 1].last = true;
  for (size_t q = 0; q < grid; q++) {   /* a pair with no word: lanes kept as they are */
    sh->grid[q].mask = 0;
    for (unsigned l = 0; l < 16; l++) sh->grid[q].idx[l] = l;
  }
  for (size_t t = 0; t < sh->n_steps && grid; t++) {
    const shuffle_step *st = &sh->steps[t];
    size_t q = st->out * pairs + st->at / 128;
    bool lone = n_in % 2 && q % pairs == pairs - 1;
    sh->grid[q].mask = st->mask;
    for (unsigned l = 0; l < 16; l++)
      sh->grid[q].idx[l] = !lone ? st->idx[l] : st->mask >> l & 1 ? st->idx[l] + 16 : l;
  }
  return sh;
}

/* The fields that are whole words of records of whole words (up to 128
   bytes): the table from AoS to SoA (to_soa) or back; the other fields'
   words are left zero on the way into AoS, for the field-by-field pass. */
static bool word_field(const mmb__fieldset *r, size_t f) {
  return r->size[f] % 4 == 0 && r->offset[f] % 4 == 0;
}

/* A field of 1 or 2 bytes alone in its word (a particle's char flag before
   its padding) goes through the registers too, as a vector of that word
   of 16 records: into AoS, its plane's 16 elements widened to a word each,
   in place, the word's other bytes zero; into SoA, the word's vector
   narrowed to the field's 16 elements (never past the cache: they fill a
   quarter or half of a line). */
static bool lone_field(const mmb__fieldset *r, size_t f) {
  size_t at = r->offset[f] / 4;
  if ((r->size[f] != 1 && r->size[f] != 2) || r->offset[f] % 4 + r->size[f] > 4) return false;
  for (size_t g = 0; g < r->n; g++)
    if (g != f && r->offset[g] < 4 * at + 4 && r->offset[g] + r->size[g] > 4 * at) return false;
  return true;
}

/* The words a moved field takes in a record and its vectors. */
static size_t field_words(const mmb__fieldset *r, size_t f) {
  return r->size[f] < 4 ? 1 : r->size[f] / 4;
}

/* Tables of up to SMALL_STEPS steps run from registers (shuffle_small_S).
   Records of up to 16 words whose moved fields are of one or two words
   (floats, ints, doubles: a particle's x, y, z, vx, vy, vz, mass, id)
   convert by a transposition where their table is longer (transpose_blocks). */
#define SMALL_STEPS 24
static bool transposes(const mmb__fieldset *r, unsigned fields) {
  if (r->record_size % 4 || r->record_size > 64) return false;
  for (size_t f = 0; f < r->n; f++)
    if ((fields >> f & 1) && r->size[f] > 8) return false;
  return true;
}

/* Of the records that transpose, those of 4 to 8 qwords with 8-byte
   fields (doubles), each on a qword, transpose 8 records at a time by
   qwords (transpose8_blocks), a qword of word fields interleaving their
   planes: 24 shuffles for 8 records against 64 for 16 and two to split or
   join each double's plane. */
static bool qword_transposes(const mmb__fieldset *r, unsigned fields) {
  bool doubles = false;
  if (r->record_size % 8 || r->record_size < 32) return false;
  for (size_t f = 0; f < r->n; f++) {
    if (!(fields >> f & 1) || r->size[f] != 8) continue;
    if (r->offset[f] % 8) return false;
    doubles = true;
  }
  return doubles;
}

static shuffle *record_shuffle(const mmb__fieldset *r, bool to_soa) {
  size_t w = r->record_size / 4, p = 0, before[MMB_MAX_FIELDS];
  if (r->record_size % 4 || w > MAX_VECTORS || !__builtin_cpu_supports("avx512f")) return NULL;
  unsigned fields = 0;
  for (size_t f = 0; f < r->n; f++)
    if (word_field(r, f) || lone_field(r, f)) {
      fields |= 1u << f;
      before[f] = p;   /* words of the moved fields before f */
      p += field_words(r, f);
    }
  if (!fields) return NULL;
  bool tr = transposes(r, fields), qw = tr && qword_transposes(r, fields);
  int map[MAX_VECTORS * 16] = {0};   /* (every entry read is set below) */
  shuffle *sh;
  if (to_soa) {   /* inputs: the record words; outputs: each field's words, field by field */
    for (size_t f = 0, o = 0; f < r->n; f++) {
      if (!(fields >> f & 1)) continue;
      size_t sf = field_words(r, f);
      for (size_t q = 0; q < 16 * sf; q++) map[o * 16 + q] = (int)((q / sf) * w + r->offset[f] / 4 + q % sf);
      o += sf;
    }
    sh = shuffle_make(w, p, map, 0, 16);
  } else {
    for (size_t q = 0; q < 16 * w; q++) {   /* inputs: the fields' words; outputs: records */
      size_t rec = q / w, c = q % w;
      map[q] = -1;
      for (size_t f = 0; f < r->n; f++) {
        size_t sf = field_words(r, f), at = r->offset[f] / 4;
        if ((fields >> f & 1) && c >= at && c < at + sf)
          map[q] = (int)(before[f] * 16 + rec * sf + c - at);
      }
    }
    size_t packs = !tr ? 0 : qw ? w / 2 : w >= 4 ? w : 0;
    sh = shuffle_make(p, w, map, packs, qw ? 8 : 16);
  }
  if (!sh) return NULL;
  sh->fields = fields;
  sh->transpose = sh->n_steps > SMALL_STEPS && tr;
  sh->qwords = sh->transpose && qw;
  if (!sh->transpose) sh->pack = NULL;
  return sh;
}

/* The table of an interned record, made on its first conversion that way
   and kept with it (NULL: none). */
static const shuffle *record_shuffle_of(const mmb__fieldset *r, bool to_soa) {
  void *_Atomic *memo = mmb__record_memo(r, to_soa);
  void *known = atomic_load_explicit(memo, memory_order_acquire);
  if (known) return known;
  shuffle *sh = record_shuffle(r, to_soa);
  if (sh && !atomic_compare_exchange_strong_explicit(memo, &known, sh, memory_order_acq_rel,
                                                     memory_order_acquire)) {
    mmb__free(sh);   /* another thread's came first */
    return known;
  }
  return sh;
}

/* Whether the table is worth it: each step (a permute and a blend) against
   a scalar load and store per moved field of each of the block's 16
   records (records of many words cost a step per pair of them per output). */
static bool shuffle_pays(const shuffle *sh) {
  return sh && (sh->transpose || 2 * sh->n_steps <= 16 * (size_t)__builtin_popcount(sh->fields));
}

/* The vectors of a block of 16 records, and how far each moves to the
   next block: the records' (AoS) one after the other at `aos`, rec_step
   apart; the word fields' (SoA) vector k at fld[k], fld_step[k] apart.
   Into SoA the records are the input vectors; into AoS each block's field
   vectors are put side by side first, in L1 (`staged`). */
typedef struct blocks {
  char *aos;
  size_t rec_step;
  char *fld[MAX_VECTORS];
  size_t fld_step[MAX_VECTORS], n_fld;
  uint8_t narrow[MAX_VECTORS];   /* 1 or 2, a lone field's bytes (else 0) */
  uint8_t shift[MAX_VECTORS];    /* and their bits' place in the word */
  bool to_soa;
  bool nt;   /* outputs on whole cache lines, stored past the cache */
} blocks;

/* Output vector o's place in block 0, and its step from block to block. */
static char *block_out(const blocks *bl, size_t o, size_t *step) {
  *step = bl->to_soa ? bl->fld_step[o] : bl->rec_step;
  return bl->to_soa ? bl->fld[o] : bl->aos + 64 * o;
}

/* An output vector into its place: whole, past the cache or not (nt), or
   narrowed to the 1 or 2 bytes at bit `shift` of each word. */
__attribute__((target("avx512f"), always_inline)) static inline void
store_out(char *p, __m512i v, bool nt, unsigned narrow, unsigned shift) {
  __m128i at = _mm_cvtsi32_si128((int)shift);
  if (narrow == 1) _mm_storeu_si128((void *)p, _mm512_cvtepi32_epi8(_mm512_srl_epi32(v, at)));
  else if (narrow == 2)
    _mm256_storeu_si256((void *)p, _mm512_cvtepi32_epi16(_mm512_srl_epi32(v, at)));
  else if (nt) _mm512_stream_si512((void *)p, v);
  else _mm512_storeu_si512(p, v);
}

/* An output vector into its place: past the cache where the blocks ask. */
__attribute__((target("avx512f"))) static inline void put(const blocks *bl, char *p, __m512i v) {
  store_out(p, v, bl->nt, 0, 0);
}

/* The bytes output vector o narrows to: a lone field's into SoA (1 or 2),
   else 0 (into AoS, o is a record's vector). */
static inline unsigned out_narrow(const blocks *bl, size_t o) {
  return bl->to_soa ? bl->narrow[o] : 0;
}

/* Output vector o into its place: into SoA, a lone field's narrowed to its
   bytes (stored in the cache: convert_block stages its plane). */
__attribute__((target("avx512f"))) static inline void put_out(const blocks *bl, size_t o,
                                                              char *p, __m512i v) {
  store_out(p, v, bl->nt, out_narrow(bl, o), bl->shift[o]);
}

/* Field vector k of block b (into AoS): a lone field's widened. */
__attribute__((target("avx512f"))) static inline __m512i field_in(const blocks *bl, size_t k,
                                                                  size_t b) {
  const char *p = bl->fld[k] + b * bl->fld_step[k];
  __m128i at = _mm_cvtsi32_si128(bl->shift[k]);
  if (bl->narrow[k] == 1)
    return _mm512_sll_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const void *)p)), at);
  if (bl->narrow[k] == 2)
    return _mm512_sll_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *)p)), at);
  return _mm512_loadu_si512(p);
}

/* The inputs are prefetched AHEAD blocks ahead. Into AoS, many streams
   read at once (8 for 8 fields) outrun the hardware's prefetching: this
   lifts 6 doubles, a float and an int from 0.66x of a plain copy to 0.8x,
   and records of 3 to 5 fields by their tables from 0.86-0.94x to about
   1.0x. Into SoA, the records are one stream, but a block's shuffles hold
   the out-of-order window and fewer of its loads are in flight than a copy's:
   0.66-0.98x of a plain copy before, 0.88-1.09x after (Intel Xeon, family
   6 model 207; 16 or 32 blocks ahead did no better). Staging a group of
   blocks of each plane in L1 to stream it out in bursts did worse. */
enum { AHEAD = 8 };

/* The lines of `bytes` at p on their way to L1 (past the records' end: a
   prefetch does not fault, and the address is only an integer). */
static inline void prefetch_lines(uintptr_t p, size_t bytes) {
  for (size_t l = 0; l < bytes; l += 64) _mm_prefetch((const char *)(p + l), _MM_HINT_T0);
}

/* Into SoA, block b's records on their way to L1. */
static inline void prefetch_records(const blocks *bl, size_t b) {
  prefetch_lines((uintptr_t)bl->aos + b * bl->rec_step, bl->rec_step);
}

/* Into AoS, plane vector k of block b on its way to L1 (as above). */
static inline void prefetch_plane(const blocks *bl, size_t k, size_t b) {
  _mm_prefetch((const char *)((uintptr_t)bl->fld[k] + b * bl->fld_step[k]), _MM_HINT_T0);
}

/* Block b's input vectors, one after the other. */
__attribute__((target("avx512f"))) static const char *block_in(const blocks *bl, size_t b,
                                                               char *staged) {
  if (bl->to_soa) {
    prefetch_records(bl, b + AHEAD);
    return bl->aos + b * bl->rec_step;
  }
  for (size_t v = 0; v < bl->n_fld; v++) {
    prefetch_plane(bl, v, b + AHEAD);
    _mm512_store_si512(staged + 64 * v, field_in(bl, v, b));
  }
  return staged;
}

/* Small tables (records of a few words: xyz, xyzw, a particle) run from registers:
   for S steps, the loop over the steps is unrolled, each step's index
   vector, offset, mask, destination and how it stores held across the
   blocks (the stores could alias the table, which the compiler would
   otherwise reload). Every step permutes a pair (a lone last vector is its
   own pair): a test fewer a step than a one-vector permute where it
   can. */
#define SHUFFLE_SMALL(S)                                                                      \
  __attribute__((target("avx512f"))) static void shuffle_small_##S(const shuffle *sh,        \
                                                                    const blocks *bl,         \
                                                                    size_t n_blocks) {        \
    __m512i idx[S];                                                                           \
    size_t at[S], hi[S], dstep[S];                                                            \
    char *dst[S];                                                                             \
    __mmask16 mask[S];                                                                        \
    bool last[S];                                                                             \
    uint8_t narrow[S], shift[S];                                                              \
    bool nt = bl->nt;                                                                         \
    for (int q = 0; q < S; q++) {                                                             \
      const shuffle_step *st = &sh->steps[q];                                                 \
      idx[q] = _mm512_loadu_si512(st->idx);                                                   \
      at[q] = st->at;                                                                         \
      hi[q] = st->hi;   /* (at itself for a last vector alone: idx takes its words) */        \
      dst[q] = block_out(bl, st->out, &dstep[q]);                                             \
      mask[q] = st->mask;                                                                     \
      last[q] = st->last;                                                                     \
      narrow[q] = (uint8_t)out_narrow(bl, st->out);                                           \
      shift[q] = bl->shift[st->out];                                                          \
    }                                                                                         \
    _Alignas(64) char staged[MAX_VECTORS * 64];                                               \
    for (size_t b = 0; b < n_blocks; b++) {                                                   \
      const char *from = block_in(bl, b, staged);                                             \
      __m512i acc = _mm512_setzero_si512();                                                   \
      _Pragma("GCC unroll 24") for (int q = 0; q < S; q++) {                                  \
        __m512i t = _mm512_permutex2var_epi32(_mm512_loadu_si512(from + at[q]), idx[q],       \
                                              _mm512_loadu_si512(from + hi[q]));              \
        acc = _mm512_mask_mov_epi32(acc, mask[q], t);                                         \
        if (last[q]) {                                                                        \
          store_out(dst[q], acc, nt, narrow[q], shift[q]);                                    \
          dst[q] += dstep[q];                                                                 \
          acc = _mm512_setzero_si512();                                                       \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }
SHUFFLE_SMALL(1)
SHUFFLE_SMALL(2)
SHUFFLE_SMALL(3)
SHUFFLE_SMALL(4)
SHUFFLE_SMALL(5)
SHUFFLE_SMALL(6)
SHUFFLE_SMALL(7)
SHUFFLE_SMALL(8)
SHUFFLE_SMALL(9)
SHUFFLE_SMALL(10)
SHUFFLE_SMALL(11)
SHUFFLE_SMALL(12)
SHUFFLE_SMALL(13)
SHUFFLE_SMALL(14)
SHUFFLE_SMALL(15)
SHUFFLE_SMALL(16)
SHUFFLE_SMALL(17)
SHUFFLE_SMALL(18)
SHUFFLE_SMALL(19)
SHUFFLE_SMALL(20)
SHUFFLE_SMALL(21)
SHUFFLE_SMALL(22)
SHUFFLE_SMALL(23)
SHUFFLE_SMALL(24)

/* Tables of records of W words (W = 2 to 6: xyz, xyzw, a particle) whose
   moved fields take W vectors too (one-word fields, a lone byte's word,
   doubles) run in one shape: W outputs, each put together from every pair
   of the W inputs in order, (W + 1) / 2 steps, the last a lone vector when
   W is odd; a pair that gives an output no word is a step that changes
   nothing. With the shape fixed at compile time, a block is W loads
   (widened, into AoS, where a field is a lone byte), W (W + 1) / 2
   permutes and W stores, all from registers: an output's first step
   permutes into zeros (no blend), and a lone last vector is permuted into
   the output so far (the pair (output, vector): no blend either). The
   small tables spent more on their per-step state and on calls for each
   block's input than on their shuffles: in L2 (192 KiB), 3 floats into
   SoA went from 11-17 to 23-34 GB/s, against a per-field loop's 16-19. */
#define SHUFFLE_GRID(W)                                                                       \
  __attribute__((target("avx512f"), always_inline)) static inline void grid_##W(              \
      const shuffle *sh, const blocks *bl, size_t n_blocks, bool nt, bool to_soa) {           \
    enum { P = (W + 1) / 2, LONE = W % 2 };                                                   \
    __m512i idx[W * P];                                                                       \
    __mmask16 mask[W * P];                                                                    \
    char *dst[W];                                                                             \
    size_t dstep[W];                                                                          \
    uint8_t narrow[W], shift[W];                                                              \
    for (int q = 0; q < W * P; q++) /* (made with the table: grid_step) */                    \
      idx[q] = _mm512_loadu_si512(sh->grid[q].idx), mask[q] = sh->grid[q].mask;               \
    for (int o = 0; o < W; o++) {                                                             \
      dst[o] = block_out(bl, (size_t)o, &dstep[o]);                                           \
      narrow[o] = (uint8_t)out_narrow(bl, (size_t)o);                                         \
      shift[o] = bl->shift[o];                                                                \
    }                                                                                         \
    for (size_t b = 0; b < n_blocks; b++) {                                                   \
      __m512i in[W];                                                                          \
      /* the records, W lines, prefetched AHEAD blocks ahead (prefetch_records, with W known: \
         its loop over the record size cost the particle 6% in L2) */                         \
      if (to_soa) {                                                                           \
        const char *from = bl->aos + b * 64 * W;                                              \
        for (int v = 0; v < W; v++) {                                                         \
          _mm_prefetch(from + AHEAD * 64 * W + 64 * v, _MM_HINT_T0);                          \
          in[v] = _mm512_loadu_si512(from + 64 * v);                                          \
        }                                                                                     \
      } else {                                                                                \
        for (int v = 0; v < W; v++) {                                                         \
          prefetch_plane(bl, (size_t)v, b + AHEAD);                                           \
          in[v] = field_in(bl, (size_t)v, b);                                                 \
        }                                                                                     \
      }                                                                                       \
      _Pragma("GCC unroll 6") for (int o = 0; o < W; o++) {                                   \
        __m512i acc = _mm512_maskz_permutex2var_epi32(mask[o * P], in[0], idx[o * P], in[1]); \
        _Pragma("GCC unroll 3") for (int p = 1; p < P; p++) {                                 \
          int q = o * P + p;                                                                  \
          if (LONE && p == P - 1)                                                             \
            acc = _mm512_permutex2var_epi32(acc, idx[q], in[2 * p]);                          \
          else                                                                                \
            acc = _mm512_mask_mov_epi32(acc, mask[q],                                         \
                                        _mm512_permutex2var_epi32(in[2 * p], idx[q],          \
                                                                  in[(2 * p + 1) % W]));      \
        }                                                                                     \
        store_out(dst[o], acc, nt, narrow[o], shift[o]);                                      \
        dst[o] += dstep[o];                                                                   \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  __attribute__((target("avx512f"))) static void shuffle_grid_##W(const shuffle *sh,          \
                                                                   const blocks *bl,          \
                                                                   size_t n_blocks) {         \
    if (bl->to_soa) {                                                                         \
      if (bl->nt) grid_##W(sh, bl, n_blocks, true, true);                                     \
      else grid_##W(sh, bl, n_blocks, false, true);                                           \
    } else {                                                                                  \
      if (bl->nt) grid_##W(sh, bl, n_blocks, true, false);                                    \
      else grid_##W(sh, bl, n_blocks, false, false);                                          \
    }                                                                                         \
  }
enum { GRID_MAX = 6 };   /* (W = 7 needs more than the 32 vector registers) */
SHUFFLE_GRID(2)
SHUFFLE_GRID(3)
SHUFFLE_GRID(4)
SHUFFLE_GRID(5)
SHUFFLE_GRID(6)

/* Larger tables (records of many words, or of wide fields) step by step
   from the table, with no branch in the loop over the steps: a lone last
   input vector is its own pair, an output's first step drops what the one
   before left (keep), and only an output's last step stores to the
   destination (the others to a line of scratch), so each step is the same
   few instructions whatever the table (streaming, the last step's store
   goes past the cache: the one branch, on a loop-invariant flag first). */
__attribute__((target("avx512f"))) static void shuffle_wide(const shuffle *sh, const blocks *bl,
                                                            size_t n_blocks) {
  _Alignas(64) char staged[MAX_VECTORS * 64], scratch[64];
  char *dst[MAX_VECTORS * 16];   /* per step: where it stores (block 0), and its step */
  size_t dstep[MAX_VECTORS * 16];
  bool via_put = bl->nt;   /* last steps store by put_out: streaming, or narrowing into SoA */
  for (size_t q = 0; q < sh->n_steps; q++) {
    dst[q] = block_out(bl, sh->steps[q].out, &dstep[q]);
    if (!sh->steps[q].last) dst[q] = scratch, dstep[q] = 0;
    via_put = via_put || out_narrow(bl, sh->steps[q].out);
  }
  for (size_t b = 0; b < n_blocks; b++) {
    const char *from = block_in(bl, b, staged);
    __m512i acc = _mm512_setzero_si512();
    for (size_t q = 0; q < sh->n_steps; q++) {
      const shuffle_step *st = &sh->steps[q];
      __m512i t = _mm512_permutex2var_epi32(_mm512_loadu_si512(from + st->at),
                                            _mm512_loadu_si512(st->idx),
                                            _mm512_loadu_si512(from + st->hi));
      acc = _mm512_mask_mov_epi32(_mm512_maskz_mov_epi32(st->keep, acc), st->mask, t);
      if (via_put && st->last) put_out(bl, st->out, dst[q] + b * dstep[q], acc);
      else _mm512_storeu_si512(dst[q] + b * dstep[q], acc);
    }
  }
}

/* Per word of a record (of up to 16 words) that the transpositions
   move: the first plane vector of the field that starts there (-1: none),
   and whether it is of two words (pair). */
static void word_planes(const mmb__fieldset *r, unsigned fields, int *plane, bool *pair) {
  for (int w = 0; w < 16; w++) plane[w] = -1, pair[w] = false;
  for (size_t f = 0, k = 0; f < r->n; f++) {
    if (!(fields >> f & 1)) continue;
    plane[r->offset[f] / 4] = (int)k;
    pair[r->offset[f] / 4] = r->size[f] > 4;
    k += field_words(r, f);
  }
}

/* The 16 records of a block at `aos`, rs bytes apart, one vector each from
   its first word: whole vectors, and after the first `whole` ones (in the
   run's last block, where a whole one would run past it: past the run,
   not this conversion's) one masked to the record's words. */
__attribute__((target("avx512f"), always_inline)) static inline void
load_records(__m512i *v, const char *aos, size_t rs, int whole, __mmask16 words) {
  if (whole == 16) {   /* (unrolled: v stays in registers) */
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) v[i] = _mm512_loadu_si512(aos + i * rs);
    return;
  }
  for (int i = 0; i < 16; i++)
    v[i] = i < whole ? _mm512_loadu_si512(aos + i * rs)
                     : _mm512_maskz_loadu_epi32(words, aos + i * rs);
}

/* And back: in order, each overwriting what the one before spilled. */
__attribute__((target("avx512f"), always_inline)) static inline void
store_records(char *aos, size_t rs, int whole, __mmask16 words, const __m512i *v) {
  if (whole == 16) {
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) _mm512_storeu_si512(aos + i * rs, v[i]);
    return;
  }
  for (int i = 0; i < 16; i++) {
    if (i < whole) _mm512_storeu_si512(aos + i * rs, v[i]);
    else _mm512_mask_storeu_epi32(aos + i * rs, words, v[i]);
  }
}

/* Words 8 h .. 8 h + 7 of a and of b interleaved, a's first: two word
   vectors joined into qwords (a double's two words, or two fields'). */
__attribute__((target("avx512f"), always_inline)) static inline __m512i
words_join(__m512i a, __m512i b, int h) {
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  return _mm512_permutex2var_epi32(a, _mm512_add_epi32(lo, _mm512_set1_epi32(8 * h)), b);
}

/* The even (or odd) words of a, then of b: qwords split into their low
   (or high) words. */
__attribute__((target("avx512f"), always_inline)) static inline __m512i
words_split(__m512i a, __m512i b, int odd) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_epi32(a, _mm512_add_epi32(even, _mm512_set1_epi32(odd)), b);
}

/* The 16 x 16 words of v transposed in place: four rounds of 16 shuffles
   (words within 128-bit lanes, then pairs of words, then lanes twice). */
__attribute__((target("avx512f"), always_inline)) static inline void transpose16(__m512i *v) {
  __m512i t[16];
  _Pragma("GCC unroll 16") for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
  }
  _Pragma("GCC unroll 16")   /* v[i + j], lane l: word 4l + j of records i..i+3 */
  for (int i = 0; i < 16; i += 4) {
    v[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    v[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    v[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    v[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  _Pragma("GCC unroll 16") for (int j = 0; j < 4; j++) {
    __m512i x0 = _mm512_shuffle_i32x4(v[j], v[4 + j], 0x44);
    __m512i x1 = _mm512_shuffle_i32x4(v[j], v[4 + j], 0xee);
    __m512i y0 = _mm512_shuffle_i32x4(v[8 + j], v[12 + j], 0x44);
    __m512i y1 = _mm512_shuffle_i32x4(v[8 + j], v[12 + j], 0xee);
    t[j] = _mm512_shuffle_i32x4(x0, y0, 0x88);
    t[4 + j] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
    t[8 + j] = _mm512_shuffle_i32x4(x1, y1, 0x88);
    t[12 + j] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
  }
  _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) v[i] = t[i];
}

/* Records of up to 16 words, 16 at a time: each record one vector (a
   whole vector's load, or store, from its first word: masked loads and
   stores that miss the cache are slow), the block transposed so that
   vector w holds word w of the 16 records: a one-word field's plane
   vector; a two-word field's two plane vectors interleave two of them.
   About 6 instructions a record, where a long table takes a step per pair
   of input vectors per output. Into AoS the other words are zero. */
__attribute__((target("avx512f"))) static void transpose_blocks(const mmb__fieldset *r,
                                                                const shuffle *sh,
                                                                const blocks *bl,
                                                                size_t n_blocks) {
  const __mmask16 words = (__mmask16)((1u << (r->record_size / 4)) - 1);
  size_t rs = r->record_size, words_of = rs / 4;
  if (!words_of) return;   /* (records of a word or more: record_shuffle) */
  int plane[16];
  bool pair[16];
  word_planes(r, sh->fields, plane, pair);
  bool pack = !bl->to_soa && bl->nt && sh->pack;
  for (size_t b = 0; b < n_blocks; b++) {
    char *aos = bl->aos + b * bl->rec_step;
    __m512i v[16];
    int whole = b + 1 < n_blocks ? 16 : (int)mmb__min(16, (16 * rs - 64) / rs + 1);
    /* word by word, unrolled: v stays in registers */
    if (bl->to_soa) {
      prefetch_records(bl, b + AHEAD);
      load_records(v, aos, rs, whole, words);
      transpose16(v);
      _Pragma("GCC unroll 16") for (int w = 0; w < 16; w++) {
        int k = plane[w];
        if (k < 0) continue;
        char *p = bl->fld[k] + b * bl->fld_step[k];
        if (!pair[w]) put_out(bl, (size_t)k, p, v[w]);
        else if (w < 15) {
          put(bl, p, words_join(v[w], v[w + 1], 0));
          put(bl, p + 64, words_join(v[w], v[w + 1], 1));
        }
      }
      continue;
    }
    for (size_t k = 0; k < bl->n_fld; k++) prefetch_plane(bl, k, b + AHEAD);
    _Pragma("GCC unroll 16") for (int w = 0; w < 16; w++) {
      int k = plane[w];
      if (k < 0) {   /* words no moved field starts at: zero, but a pair's second */
        if (w == 0 || !pair[w - 1]) v[w] = _mm512_setzero_si512();
      } else if (!pair[w]) {
        v[w] = field_in(bl, (size_t)k, b);
      } else if (w < 15) {
        const char *p = bl->fld[k] + b * bl->fld_step[k];
        __m512i a = _mm512_loadu_si512(p), c = _mm512_loadu_si512(p + 64);
        v[w] = words_split(a, c, 0);
        v[w + 1] = words_split(a, c, 1);
      }
    }
    transpose16(v);
    if (pack && whole == 16) {   /* packed in registers, out past the cache */
      for (size_t o = 0; o < words_of; o++) {
        const pack_step *ps = &sh->pack[o];
        int a = ps->at;
        __m512i x = _mm512_permutex2var_epi32(v[a], _mm512_loadu_si512(ps->idx[0]),
                                              v[a + 1 < 16 ? a + 1 : 15]);
        __m512i y = _mm512_permutex2var_epi32(v[a + 2 < 16 ? a + 2 : 15],
                                              _mm512_loadu_si512(ps->idx[1]),
                                              v[a + 3 < 16 ? a + 3 : 15]);
        _mm512_stream_si512((void *)(aos + 64 * o), _mm512_mask_mov_epi32(x, ps->far, y));
      }
      continue;
    }
    store_records(aos, rs, whole, words, v);
  }
}

/* The 8 x 8 qwords of v transposed in place: three rounds of 8 shuffles
   (qwords within 128-bit lanes, then pairs of qwords across them, then
   halves). */
__attribute__((target("avx512f"), always_inline)) static inline void transpose8(__m512i *v) {
  const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i odd = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  static const int q[4] = {0, 2, 1, 3};
  __m512i a[8], b[8];
  /* a[i]: qwords 0, 2, 4, 6 of v[i] and v[i + 1], interleaved; a[i + 1]: 1, 3, 5, 7 */
  _Pragma("GCC unroll 16") for (int i = 0; i < 8; i += 2) {
    a[i] = _mm512_unpacklo_epi64(v[i], v[i + 1]);
    a[i + 1] = _mm512_unpackhi_epi64(v[i], v[i + 1]);
  }
  /* b[i + j]: qwords q[j] and q[j] + 4 of v[i .. i + 3] */
  _Pragma("GCC unroll 16") for (int i = 0; i < 8; i += 4) {
    b[i] = _mm512_permutex2var_epi64(a[i], even, a[i + 2]);
    b[i + 1] = _mm512_permutex2var_epi64(a[i], odd, a[i + 2]);
    b[i + 2] = _mm512_permutex2var_epi64(a[i + 1], even, a[i + 3]);
    b[i + 3] = _mm512_permutex2var_epi64(a[i + 1], odd, a[i + 3]);
  }
  _Pragma("GCC unroll 16") for (int j = 0; j < 4; j++) {
    v[q[j]] = _mm512_shuffle_i64x2(b[j], b[4 + j], 0x44);
    v[q[j] + 4] = _mm512_shuffle_i64x2(b[j], b[4 + j], 0xee);
  }
}

/* Records of 4 to 8 qwords with doubles (qword_transposes), 16 at a time as
   two halves of 8: each record one vector, the half transposed so that
   vector q holds qword q of its 8 records: a double's plane vector for
   those records; a qword of words interleaves two word planes' vectors
   (split by vpermt2d into SoA, joined into AoS; a word no moved field has
   is zero). About 3.5 instructions a record. */
__attribute__((target("avx512f"))) static void transpose8_blocks(const mmb__fieldset *r,
                                                                 const shuffle *sh,
                                                                 const blocks *bl,
                                                                 size_t n_blocks) {
  size_t rs = r->record_size, lanes = rs / 8;
  const __mmask16 words = (__mmask16)((1u << (rs / 4)) - 1);
  int plane[16];   /* (a double's pair starts its qword: qword_transposes) */
  bool pair[16];
  word_planes(r, sh->fields, plane, pair);
  bool pack = !bl->to_soa && bl->nt && sh->pack;
  for (size_t b = 0; b < n_blocks; b++) {
    char *aos = bl->aos + b * bl->rec_step;
    __m512i v[16];   /* half h (v + 8 h): records 8 h .. 8 h + 7, or their qwords */
    int whole = b + 1 < n_blocks ? 16 : (int)mmb__min(16, (16 * rs - 64) / rs + 1);
    if (bl->to_soa) {
      prefetch_records(bl, b + AHEAD);
      load_records(v, aos, rs, whole, words);
      transpose8(v);
      transpose8(v + 8);
      _Pragma("GCC unroll 16") for (size_t q = 0; q < 8 && q < lanes; q++) {
        if (pair[2 * q]) {
          char *p = bl->fld[plane[2 * q]] + b * bl->fld_step[plane[2 * q]];
          put(bl, p, v[q]);
          put(bl, p + 64, v[8 + q]);
          continue;
        }
        _Pragma("GCC unroll 16") for (int w = 0; w < 2; w++) {
          int k = plane[2 * q + w];
          if (k >= 0)
            put_out(bl, (size_t)k, bl->fld[k] + b * bl->fld_step[k],
                    words_split(v[q], v[8 + q], w));
        }
      }
      continue;
    }
    for (size_t k = 0; k < bl->n_fld; k++) prefetch_plane(bl, k, b + AHEAD);
    _Pragma("GCC unroll 16") for (size_t q = 0; q < 8; q++) {
      if (pair[2 * q]) {
        const char *p = bl->fld[plane[2 * q]] + b * bl->fld_step[plane[2 * q]];
        v[q] = _mm512_loadu_si512(p);
        v[8 + q] = _mm512_loadu_si512(p + 64);
        continue;
      }
      int kl = plane[2 * q], kh = plane[2 * q + 1];   /* (none past the record) */
      __m512i l = kl >= 0 ? field_in(bl, (size_t)kl, b) : _mm512_setzero_si512();
      __m512i h = kh >= 0 ? field_in(bl, (size_t)kh, b) : _mm512_setzero_si512();
      v[q] = words_join(l, h, 0);
      v[8 + q] = words_join(l, h, 1);
    }
    transpose8(v);
    transpose8(v + 8);
    if (pack && whole == 16) {   /* packed in registers, out past the cache */
      for (size_t o = 0; o < 2 * lanes; o++) {
        const pack_step *ps = &sh->pack[o % lanes];
        const __m512i *rec = v + 8 * (o / lanes);
        int a = ps->at;
        __m512i x = _mm512_permutex2var_epi64(rec[a], _mm512_loadu_si512(ps->idx[0]),
                                              rec[a + 1 < 8 ? a + 1 : 7]);
        __m512i y = _mm512_permutexvar_epi64(_mm512_loadu_si512(ps->idx[1]),
                                             rec[a + 2 < 8 ? a + 2 : 7]);
        _mm512_stream_si512((void *)(aos + 64 * o),
                            _mm512_mask_mov_epi64(x, (__mmask8)ps->far, y));
      }
      continue;
    }
    store_records(aos, rs, whole, words, v);
  }
}

typedef void (*small_fn)(const shuffle *, const blocks *, size_t);
static const small_fn small_kernels[SMALL_STEPS + 1] = {
  NULL, shuffle_small_1, shuffle_small_2, shuffle_small_3, shuffle_small_4,
  shuffle_small_5, shuffle_small_6, shuffle_small_7, shuffle_small_8, shuffle_small_9,
  shuffle_small_10, shuffle_small_11, shuffle_small_12, shuffle_small_13, shuffle_small_14,
  shuffle_small_15, shuffle_small_16, shuffle_small_17, shuffle_small_18, shuffle_small_19,
  shuffle_small_20, shuffle_small_21, shuffle_small_22, shuffle_small_23, shuffle_small_24};

static const small_fn grid_kernels[GRID_MAX + 1] = {
  NULL, NULL, shuffle_grid_2, shuffle_grid_3, shuffle_grid_4, shuffle_grid_5, shuffle_grid_6};

/* Whether a table runs in the grid's shape (SHUFFLE_GRID): as many
   outputs as inputs, 2 to 6. */
static bool grid_fits(const shuffle *sh) {
  return sh->n_in >= 2 && sh->n_in <= GRID_MAX && sh->n_out == sh->n_in;
}

/* n records (a multiple of 16) between AoS at `aos` and runs, field f's at
   run[f]: small tables from registers, larger ones by a transposition
   where the records allow, else step by step. */
static void shuffle_blocks(const shuffle *sh, const mmb__fieldset *r, bool to_soa, char *aos,
                           char *const *run, size_t n, bool nt) {
  blocks bl = {.aos = aos, .rec_step = 16 * r->record_size, .to_soa = to_soa, .nt = nt};
  for (size_t f = 0; f < r->n; f++)
    for (size_t t = 0; (sh->fields >> f & 1) && t < field_words(r, f); t++, bl.n_fld++) {
      bl.fld[bl.n_fld] = run[f] + 64 * t;
      bl.fld_step[bl.n_fld] = 16 * r->size[f];
      bl.narrow[bl.n_fld] = r->size[f] < 4 ? (uint8_t)r->size[f] : 0;
      bl.shift[bl.n_fld] = (uint8_t)(8 * (r->offset[f] % 4));
    }
  if (sh->transpose) (sh->qwords ? transpose8_blocks : transpose_blocks)(r, sh, &bl, n / 16);
  else if (grid_fits(sh)) grid_kernels[sh->n_in](sh, &bl, n / 16);
  else (sh->n_steps <= SMALL_STEPS ? small_kernels[sh->n_steps] : shuffle_wide)(sh, &bl, n / 16);
}

/* ---- AVX2: blocks of 8 records transposed in registers -----------------------
   Where the CPU has AVX2 but not AVX-512 (AMD Zen 2 and 3, Intel Haswell
   to the client cores of today), records of whole words up to 64 bytes
   whose moved fields are one or two words, or a byte or two alone in
   their word (word_field, lone_field), convert 8 records at a time, each
   record in vectors of `vw` words: records of up to 4 words in 16-byte
   halves of a vector (records i and i + 4 in one), of up to 8 in one
   vector, of up to 16 in two. The words of 8 records are transposed in
   registers (tile/transpose8.h) so that vector w holds word w of the 8
   records: a one-word field's plane vector; a two-word field's two
   interleave into two plane vectors; a lone field's is narrowed to its
   bytes. Into AoS the same backwards, the words of no moved field zero.
   A record's loads and stores reach past it into the next records (stored
   in order, each overwriting what the one before spilled), so the blocks
   stop where the last record's would pass the run (lanes8_count); the
   in-cache loops instead take the last record of a run's last block
   exactly (records_load8, records_store8) and convert the run to its end.
   Records of 3 words (vw 3: xyz, the commonest) are the exception: their
   8 records are 3 whole vectors, whose words blend and permute into the
   3 plane vectors and back (records3_in, records3_out), with 3 loads or
   stores of 32 bytes a block instead of 8 of 16, reaching nothing past
   the block. */
enum { STAGE_TESTED, STAGE_WORDS, STAGE_QWORDS };   /* lanes8's stages into SoA (outseg) */
enum { LONE_BLOCKS = 32, LONE_MAX = 4 };   /* lone fields in the cache (lanes8_lone_blocks) */

typedef struct lanes8 {
  unsigned fields;   /* the fields it moves (bit f); the others go field by field */
  size_t vw;         /* the words a record's loads and stores take: 3, 4, 8 or 16 */
  int field[16];     /* per word of the record, the moved field that starts there (-1: none) */
  unsigned planes;   /* into SoA, streamed: how the blocks stage (STAGE_*, see outseg) */
  bool words;        /* whether the moved fields are all words (lanes8_words) */
  bool qwords;       /* or doubles on qwords and words (lanes8_qwords) */
  bool lones;        /* either, with lone fields too (lanes8_lone_blocks) */
  /* for the in-cache loops (lanes8_words, lanes8_qwords): */
  size_t step[16];   /* per word, the bytes from a block's elements of its field to the next
                        block's (0: no moved field starts there) */
  uint32_t dbl;      /* the qwords that are doubles (a bit each) */
  unsigned n_lone;   /* the lone fields, up to LONE_MAX: their words, bytes and bits */
  unsigned lone_word[LONE_MAX], lone_size[LONE_MAX];
  int lone_shift[LONE_MAX];
} lanes8;

static bool lanes8_make(const mmb__fieldset *r, lanes8 *l) {
  size_t words = r->record_size / 4;
  if (r->record_size % 4 || words > 16 || !__builtin_cpu_supports("avx2")) return false;
  *l = (lanes8){.vw = words == 3 ? 3 : words <= 4 ? 4 : words <= 8 ? 8 : 16};
  for (int w = 0; w < 16; w++) l->field[w] = -1;
  size_t moved = 0, words_moved = 0, pair_words = 0, lone = 0, astride = 0;
  for (size_t f = 0; f < r->n; f++)
    if ((word_field(r, f) && r->size[f] <= 8) || lone_field(r, f)) {
      size_t w = r->offset[f] / 4;
      l->fields |= 1u << f;
      l->field[w] = (int)f;
      l->step[w] = 8 * r->size[f];
      if (r->size[f] == 8) l->dbl |= 1u << (w / 2);
      if (r->size[f] < 4 && l->n_lone < LONE_MAX) {
        l->lone_word[l->n_lone] = (unsigned)w, l->lone_size[l->n_lone] = (unsigned)r->size[f];
        l->lone_shift[l->n_lone++] = (int)(8 * (r->offset[f] % 4));
      }
      moved++;
      words_moved += r->size[f] == 8 ? 2 : 1;
      pair_words += r->size[f] == 8 ? 2 : 0;
      lone += r->size[f] < 4;
      astride += r->size[f] == 8 && r->offset[f] % 8;
    }
  l->words = !pair_words && lone <= LONE_MAX;
  l->qwords = pair_words && lone <= LONE_MAX && !astride && l->vw >= 8;
  l->lones = lone > 0;
  l->planes = 2 * pair_words <= words_moved     ? STAGE_WORDS   /* (see outseg) */
              : l->vw >= 8 && !lone && !astride ? STAGE_QWORDS
                                                : STAGE_TESTED;
  /* the transposition (8 to 24 shuffles for each 8 words of a record, and
     its loads or stores) against a scalar load and store per moved field
     of each of the 8 records */
  return 16 * moved > 4 * l->vw;
}

/* Of m records rs bytes apart, how many (a multiple of 8) go through the
   registers without the last one's loads or stores reaching past the run. */
static size_t lanes8_count(const lanes8 *l, size_t rs, size_t m) {
  size_t reach = 4 * l->vw - rs;   /* bytes the last record's vectors pass it by */
  if (m * rs < reach) return 0;
  return (m * rs - reach) / rs / 8 * 8;
}

/* The bytes of a lone field (lone_field: 1 or 2 at bit `shift` of its word)
   out of a plane vector of words, into its plane; and back, the word's
   other bytes zero. */
__attribute__((target("avx2"), always_inline)) static inline void lone_out(char *p, __m256 v,
                                                                          size_t size,
                                                                          int shift) {
  __m256i w = _mm256_srl_epi32(_mm256_castps_si256(v), _mm_cvtsi32_si128(shift));
  if (size == 1) {   /* byte 0 of each word to the low 4 of each 128-bit half, then together */
    w = _mm256_shuffle_epi8(w, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1,
                                                -1, -1, -1, -1, -1, -1));
    w = _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
    _mm_storel_epi64((__m128i *)p, _mm256_castsi256_si128(w));
    return;
  }
  w = _mm256_shuffle_epi8(w, _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1,
                                              -1, -1, 0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1,
                                              -1, -1, -1, -1));
  w = _mm256_permute4x64_epi64(w, 0x08);   /* qwords 0 and 2 */
  _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(w));
}

__attribute__((target("avx2"), always_inline)) static inline __m256 lone_in(const char *p,
                                                                           size_t size,
                                                                           int shift) {
  __m256i w = size == 1 ? _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p))
                        : _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
  return _mm256_castsi256_ps(_mm256_sll_epi32(w, _mm_cvtsi32_si128(shift)));
}

/* AVX2's staged blocks into SoA, streamed: a block's write-out (its planes,
   from its stage to the destination) goes out in slices between the next
   block's register steps, one every 4, so that on one core the streaming
   stores overlap the register work rather than take turns with it; two
   stages, in turn. On an AMD Zen 3 that took AoS to SoA from 0.58-0.65x
   a non-temporal copy to 0.62-0.73x. Into AoS it did not pay (records of
   12 and 24 bytes, whose stores overlap, went from 0.58-0.62x to
   0.52-0.56x), and a slice every 1, 2, 8 or 16 steps did worse.
   A segment of the outflow is the bytes of one plane still to send. Where
   the records' moved words are mostly not doubles (STAGE_WORDS), the
   blocks store each of their vectors, whatever it holds, in the word
   plane of its word (word w of the block's records, 4 bytes a record),
   and the registers' part of a field comes from there: a 4-byte field's
   word plane is its plane (OUT_COPY), an 8-byte field's two interleave
   (OUT_PAIR), a lone field's is narrowed to its bytes (OUT_LONE). The
   rest comes packed (OUT_COPY). Without a test of each word's field in
   the blocks, AoS to SoA went on an AMD Zen 3 (bench-records, 64 MiB, 10
   runs interleaved with the blocks that test) from 0.87 to 0.92x a
   non-temporal copy for 16-byte records and from 0.81 to 0.87x for the
   24-byte particle; the 6-double record, whose pairs then interleave in
   the outflow rather than in the blocks, went from 0.81 to 0.77x (faster
   in 0 of 10 runs).
   Records mostly of doubles, on qwords of records of 8 words or more
   (STAGE_QWORDS, no lone field), transpose qwords instead (8 shuffles a
   4 x 4 block, against 24 for 8 x 8 words and 4 more a double), into
   qword planes: a double's is its plane (OUT_COPY), a 4-byte field's the
   low or high half of one (OUT_HALF). Others (doubles astride qwords, or
   lone fields among mostly doubles) keep the tests. The planes' blocks
   run in a loop of their own (lanes8_planes), not as a branch of the
   tested loop's: there 12-byte records (3 words: the same stores either
   way) lost 2-8% (forced streaming, 4 MiB), in a loop of their own they
   gained 13%. Against the blocks that test (12 runs, 64 MiB, in an hour
   when the VM's single-thread copy ran at 15-16 GB/s): AoS to SoA 0.81
   -> 0.90x for 12 B, 0.83 -> 0.86x for 16 B, 0.74 -> 0.80x for the
   particle, 0.77 -> 0.84x for the 6-double record, faster in 11 or 12
   of 12 runs each; the lowest runs from 0.70-0.76x to 0.79-0.86x. */
enum { OUT_COPY, OUT_PAIR, OUT_LONE, OUT_HALF };

typedef struct outseg {
  char *dst;
  const char *src;    /* OUT_PAIR: the low words; the high ones `hi` bytes on */
  size_t left;        /* bytes of the plane still to send */
  size_t hi;          /* OUT_PAIR: bytes from the low words' plane to the high */
  unsigned kind;
  unsigned size;      /* the plane's element: 4, 8, or a lone field's 1 or 2 */
  unsigned step;      /* bytes from one element's word or qword to the next's: 4 or 8 */
  int shift;          /* OUT_LONE, OUT_HALF: the field's bits in its word or qword */
} outseg;

typedef struct outflow {
  outseg seg[2 * MMB_MAX_FIELDS];
  size_t n, at;        /* the segments, and the one going out */
  size_t slice;        /* bytes a slice sends (a multiple of 32) */
  char *stage[2];      /* each: the word planes, then the packed planes */
  size_t wstride;      /* bytes from one word plane to the next */
  unsigned turn;       /* the stage the block being converted fills */
} outflow;

/* One element of a word or qword segment, by plain stores. */
static void outseg_one(outseg *g) {
  uint32_t lo, hi;
  uint64_t q = 0;
  if (g->kind == OUT_PAIR) {
    memcpy(&lo, g->src, 4);
    memcpy(&hi, g->src + g->hi, 4);
    memcpy(g->dst, &lo, 4);
    memcpy(g->dst + 4, &hi, 4);
  } else {   /* (little-endian: the field's bytes are the low ones once shifted) */
    memcpy(&q, g->src, g->step);
    q >>= g->shift;
    memcpy(g->dst, &q, g->size);
  }
  g->dst += g->size, g->src += g->step, g->left -= g->size;
}

/* Word k of 8 records of a word or qword segment at `src` (OUT_HALF,
   OUT_LONE): from a word plane (step 4), 8 words; from a qword plane, the
   8 low or high halves of 8 qwords (qwords 0, 2, 1, 3 of the shuffled
   pairs). */
__attribute__((target("avx2"), always_inline)) static inline __m256i
words_at(const char *src, size_t k, const size_t step, bool high) {
  if (step == 4) return _mm256_loadu_si256((const __m256i *)(src + 32 * k));
  __m256 a = _mm256_loadu_ps((const float *)(src + 64 * k)),
         c = _mm256_loadu_ps((const float *)(src + 64 * k + 32));
  __m256 h = high ? _mm256_shuffle_ps(a, c, 0xDD) : _mm256_shuffle_ps(a, c, 0x88);
  return _mm256_castpd_si256(_mm256_permute4x64_pd(_mm256_castps_pd(h), 0xD8));
}

/* Those words shifted right to a lone field's bits (`sh`: its shift within
   the word), to the bits of `mask`. */
__attribute__((target("avx2"), always_inline)) static inline __m256i
lone_bits(__m256i w, __m128i sh, __m256i mask) {
  return _mm256_and_si256(_mm256_srl_epi32(w, sh), mask);
}

/* n units (32 bytes of the destination, 64 for OUT_PAIR) of a word or
   qword segment from `src` to `dst` on 32 bytes, narrowed, halved or
   interleaved in registers and streamed; step a constant. */
__attribute__((target("avx2"), always_inline)) static inline void
outseg_units(const outseg *g, char *dst, const char *src, size_t n, const size_t step) {
  bool high = g->shift >= 32;
  __m128i sh = _mm_cvtsi32_si128(g->shift % 32);
  __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  if (g->kind == OUT_HALF)   /* 8 records' low or high words */
    for (size_t u = 0; u < n; u++)
      _mm256_stream_si256((__m256i *)(dst + 32 * u), words_at(src + 8 * step * u, 0, step, high));
  else if (g->kind == OUT_PAIR)   /* records 0-3 and 4-7 of 8 */
    for (size_t u = 0; u < n; u++) {
      __m256 a = _mm256_loadu_ps((const float *)(src + 32 * u)),
             c = _mm256_loadu_ps((const float *)(src + 32 * u + g->hi));
      __m256 lo = _mm256_unpacklo_ps(a, c), hi = _mm256_unpackhi_ps(a, c);
      _mm256_stream_ps((float *)(dst + 64 * u), _mm256_permute2f128_ps(lo, hi, 0x20));
      _mm256_stream_ps((float *)(dst + 64 * u + 32), _mm256_permute2f128_ps(lo, hi, 0x31));
    }
  else if (g->size == 2)   /* 16 records: halves packed, their qwords put in order */
    for (size_t u = 0; u < n; u++) {
      const char *s = src + 16 * step * u;
      __m256i m = _mm256_set1_epi32(0xffff);
      __m256i p = _mm256_packus_epi32(lone_bits(words_at(s, 0, step, high), sh, m),
                                      lone_bits(words_at(s, 1, step, high), sh, m));
      _mm256_stream_si256((__m256i *)(dst + 32 * u), _mm256_permute4x64_epi64(p, 0xD8));
    }
  else   /* 32 records of a byte: packed twice, then each 4's dword put in order */
    for (size_t u = 0; u < n; u++) {
      const char *s = src + 32 * step * u;
      __m256i m = _mm256_set1_epi32(0xff);
      __m256i p = _mm256_packus_epi16(
          _mm256_packus_epi32(lone_bits(words_at(s, 0, step, high), sh, m),
                              lone_bits(words_at(s, 1, step, high), sh, m)),
          _mm256_packus_epi32(lone_bits(words_at(s, 2, step, high), sh, m),
                              lone_bits(words_at(s, 3, step, high), sh, m)));
      _mm256_stream_si256((__m256i *)(dst + 32 * u), _mm256_permutevar8x32_epi32(p, order));
    }
}

/* Sends up to about `bytes` of a word segment: elements one by one up to
   a 32-byte boundary of the destination (all of them where the plane's
   elements never reach one), then whole units, the last few elements one
   by one. */
__attribute__((target("avx2"))) static size_t outseg_words(outseg *g, size_t bytes) {
  size_t sent = g->left;
  while (g->left && (uintptr_t)g->dst % 32) outseg_one(g);
  size_t unit = g->kind == OUT_PAIR ? 64 : 32;
  size_t n = mmb__min(g->left / unit, bytes / unit + 1);   /* (at least one) */
  if (g->step == 4) outseg_units(g, g->dst, g->src, n, 4);
  else outseg_units(g, g->dst, g->src, n, 8);
  g->dst += n * unit, g->src += n * unit / g->size * g->step, g->left -= n * unit;
  if (g->left < unit)
    while (g->left) outseg_one(g);
  return sent - g->left;
}

/* Sends up to about `bytes` of a packed segment, streamed in 32-byte
   stores on 32-byte boundaries of the destination, its ragged head and
   tail by plain stores. (The copy engine's streamed rows, called for
   each slice, took AoS to SoA back to 0.47-0.60x on the Zen 3, from
   0.66-0.73x with this loop.) */
__attribute__((target("avx2"))) static size_t outseg_copy(outseg *g, size_t bytes) {
  size_t n = g->left, sent = n;
  char *d = g->dst;
  const char *s = g->src;
  size_t head = (size_t)(-(uintptr_t)d & 31);
  if (head && head <= n) {
    memcpy(d, s, head);
    d += head, s += head, n -= head;
  }
  size_t take = n < 32 ? n : mmb__min(n, bytes) / 32 * 32;
  if (!take) take = mmb__min(n, 32);
  if (take % 32) memcpy(d, s, take);
  else
    for (size_t b = 0; b < take; b += 32)
      _mm256_stream_si256((__m256i *)(d + b), _mm256_loadu_si256((const __m256i *)(s + b)));
  g->dst = d + take, g->src = s + take, g->left = n - take;
  return sent - g->left;
}

/* Sends up to about `bytes` of the segments (all of them: SIZE_MAX). */
__attribute__((target("avx2"))) static void outflow_send(outflow *o, size_t bytes) {
  while (o->at < o->n && bytes) {
    outseg *g = &o->seg[o->at];
    size_t sent = g->kind == OUT_COPY ? outseg_copy(g, bytes) : outseg_words(g, bytes);
    bytes = bytes > sent ? bytes - sent : 0;
    if (!g->left) o->at++;
  }
}

/* 8 records of 3 words at `rec` into v[0..2], v[w] holding word w of
   them: record i's word w is word 3i + w of the 3 vectors, at lane
   (3i + w) % 8, distinct for the 8 records since 3 is odd; blends gather
   each word's lanes into one vector, a permute puts them in record order.
   Lanes 0, 3, 6 (mask 0x49), 1, 4, 7 (0x92) and 2, 5 (0x24) of vectors 0,
   1 and 2 hold word 0, 1 and 2 (vector 0), 2, 0, 1 (vector 1) and 1, 2, 0
   (vector 2). On an AMD Zen 3 (bench-records, 64 MiB, against a
   non-temporal copy) 12-byte records went from 0.67-0.73x to 0.71-0.79x
   into SoA and from 0.82-0.88x to 1.00-1.08x into AoS; in L2 from 18-19
   to 23-24 GB/s into SoA and from 17-18 to 22-23 into AoS. Into SoA the
   plane vectors streamed straight out (the records prefetched) reached
   0.84-0.88x at 64 MiB, but 0.26-0.28x for 2^22 records, whose planes
   lie 16 MiB apart: 32-byte streaming stores to planes a power of two
   apart collide, where the staged slices (about 512 bytes of a plane at
   a time) run as fast at either size. */
__attribute__((target("avx2"), always_inline)) static inline void records3_in(__m256 *v,
                                                                             const char *rec) {
  __m256 m0 = _mm256_loadu_ps((const float *)rec), m1 = _mm256_loadu_ps((const float *)(rec + 32)),
         m2 = _mm256_loadu_ps((const float *)(rec + 64));
  __m256 w0 = _mm256_blend_ps(_mm256_blend_ps(m0, m1, 0x92), m2, 0x24);
  __m256 w1 = _mm256_blend_ps(_mm256_blend_ps(m0, m1, 0x24), m2, 0x49);
  __m256 w2 = _mm256_blend_ps(_mm256_blend_ps(m0, m1, 0x49), m2, 0x92);
  v[0] = _mm256_permutevar8x32_ps(w0, _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5));
  v[1] = _mm256_permutevar8x32_ps(w1, _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6));
  v[2] = _mm256_permutevar8x32_ps(w2, _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7));
}

/* And back: each word's vector permuted to the lanes its records take in
   the 3 vectors, then blended into them. */
__attribute__((target("avx2"), always_inline)) static inline void records3_out(char *rec,
                                                                              const __m256 *v) {
  __m256 w0 = _mm256_permutevar8x32_ps(v[0], _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5));
  __m256 w1 = _mm256_permutevar8x32_ps(v[1], _mm256_setr_epi32(5, 0, 3, 6, 1, 4, 7, 2));
  __m256 w2 = _mm256_permutevar8x32_ps(v[2], _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7));
  _mm256_storeu_ps((float *)rec, _mm256_blend_ps(_mm256_blend_ps(w0, w1, 0x92), w2, 0x24));
  _mm256_storeu_ps((float *)(rec + 32), _mm256_blend_ps(_mm256_blend_ps(w2, w0, 0x92), w1, 0x24));
  _mm256_storeu_ps((float *)(rec + 64), _mm256_blend_ps(_mm256_blend_ps(w1, w2, 0x92), w0, 0x24));
}

/* The record after r, rs bytes on, its address hidden from the compiler:
   the in-cache loops (lanes8_words, lanes8_qwords) so take each record of
   a block from the one before, in one register, where GCC otherwise
   keeps the 7 offsets i * rs in registers and reloads the planes' run
   pointers from the stack after every store. On an AMD Zen 3 (in L2,
   medians of 7 runs in turn), records of 6 floats went from 13.5 to 10.5
   us a 192 KiB conversion into SoA, of 8 floats from 14.4 to 12.9, and
   the 24-byte record of floats, an int and a double by qwords from 13.7
   to 13.0 into SoA and 15.8 to 14.1 into AoS, and the 56-byte record,
   loaded and transposed a 32-byte half at a time, from 13.7 to 12.1. */
#define NEXT_RECORD(r, rs)                                                                        \
  (__extension__({                                                                                \
    const char *r_ = (r) + (rs);                                                                  \
    __asm__("" : "+r"(r_));                                                                       \
    r_;                                                                                           \
  }))

/* The first `bytes` (a multiple of 4) of v at p, and no more. */
__attribute__((target("avx2"), always_inline)) static inline void store_words(char *p, __m256 v,
                                                                             size_t bytes) {
  if (bytes >= 32) {
    _mm256_storeu_ps((float *)p, v);
    return;
  }
  __m128 x = _mm256_castps256_ps128(v);
  if (bytes >= 16) {
    _mm_storeu_ps((float *)p, x);
    x = _mm256_extractf128_ps(v, 1), p += 16, bytes -= 16;
  }
  if (bytes >= 8) {
    _mm_storel_pi((__m64 *)p, x);
    x = _mm_movehl_ps(x, x), p += 8, bytes -= 8;
  }
  if (bytes >= 4) _mm_store_ss((float *)p, x);
}

/* The first `bytes` (a multiple of 4) at p into v, and no more: the other
   words zero. */
__attribute__((target("avx2"), always_inline)) static inline __m256 load_words(const char *p,
                                                                              size_t bytes) {
  __m256i words = _mm256_set1_epi32((int)(bytes < 32 ? bytes / 4 : 8));
  return _mm256_maskload_ps((const float *)p,
                            _mm256_cmpgt_epi32(words, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

/* 32 bytes of each of 8 records at `rec`, rs bytes apart, into v[0..7],
   each record from the one before (NEXT_RECORD); and v (vw / 8 vectors a
   record, v[8h + i] its half h) back into the records, in order (a
   record's vectors reach into the next, stored after it). The last
   record's bytes (`last` of them at `rec`: rs, or rs - 32 for the second
   half) are loaded no further, and stored no further in the last block
   (`end`; in the others its reach lies in the next block, stored after
   it): the in-cache loops never reach past their blocks, and so convert a
   run's last records too (a tile's short rows: 64 particles, the last 8
   of them field by field before). */
__attribute__((target("avx2"), always_inline)) static inline void records_load8(__m256 *v,
                                                                               const char *rec,
                                                                               size_t rs,
                                                                               size_t last,
                                                                               bool end) {
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) {
    v[i] = i == 7 && end ? load_words(rec, last) : _mm256_loadu_ps((const float *)rec);
    rec = NEXT_RECORD(rec, rs);
  }
}

__attribute__((target("avx2"), always_inline)) static inline void
records_store8(char *rec, size_t rs, const __m256 *v, const size_t vw, bool end) {
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) {
    _Pragma("GCC unroll 2") for (size_t h = 0; h < vw / 8; h++) {
      if (i == 7 && end) store_words(rec + 32 * h, v[8 * h + i], rs - 32 * h);
      else _mm256_storeu_ps((float *)(rec + 32 * h), v[8 * h + i]);
    }
    rec = (char *)NEXT_RECORD(rec, rs);
  }
}

/* The 8 records of a block at `rec`, rs bytes apart, into v (vw / 8
   vectors each, transposed: v[w] holds word w of them), and back; with
   chain (the in-cache loops), records of 8 words or more each from the
   one before (NEXT_RECORD), and with end (a run's last block) its last
   record's bytes and no more (records_load8). */
__attribute__((target("avx2"), always_inline)) static inline void
records_in(__m256 *v, const char *rec, size_t rs, const size_t vw, const bool chain, bool end) {
  if (vw == 3) {
    records3_in(v, rec);
    return;
  }
  if (vw == 4) {   /* records i and i + 4 in the halves of v[i] */
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
      __m128 lo = _mm_loadu_ps((const float *)(rec + i * rs));
      __m128 hi = chain && i == 3 && end
                      ? _mm256_castps256_ps128(load_words(rec + 7 * rs, rs))
                      : _mm_loadu_ps((const float *)(rec + (4 + i) * rs));
      v[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
    }
    mmb__transpose4x4_halves(v);
    return;
  }
  if (chain) {
    _Pragma("GCC unroll 2") for (size_t h = 0; h < vw / 8; h++) {
      records_load8(v + 8 * h, rec + 32 * h, rs, rs - 32 * h, end);
      mmb__transpose8x8(v + 8 * h);
    }
    return;
  }
  _Pragma("GCC unroll 2") for (size_t h = 0; h < vw / 8; h++) {
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
      v[8 * h + i] = _mm256_loadu_ps((const float *)(rec + i * rs + 32 * h));
    mmb__transpose8x8(v + 8 * h);
  }
}

__attribute__((target("avx2"), always_inline)) static inline void
records_out(char *rec, size_t rs, __m256 *v, const size_t vw, const bool chain, bool end) {
  if (vw == 3) {
    records3_out(rec, v);
    return;
  }
  if (vw == 4) {
    mmb__transpose4x4_halves(v);
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
      _mm_storeu_ps((float *)(rec + i * rs), _mm256_castps256_ps128(v[i]));
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
      if (chain && i == 3 && end)
        store_words(rec + 7 * rs, _mm256_castps128_ps256(_mm256_extractf128_ps(v[i], 1)), rs);
      else
        _mm_storeu_ps((float *)(rec + (4 + i) * rs), _mm256_extractf128_ps(v[i], 1));
    }
    return;
  }
  _Pragma("GCC unroll 2") for (size_t h = 0; h < vw / 8; h++) mmb__transpose8x8(v + 8 * h);
  if (chain) {
    records_store8(rec, rs, v, vw, end);
    return;
  }
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
    _Pragma("GCC unroll 2") for (size_t h = 0; h < vw / 8; h++)
      _mm256_storeu_ps((float *)(rec + i * rs + 32 * h), v[8 * h + i]);
}

/* Into SoA, streamed (with an outflow), each block prefetches the records
   RECORDS_AHEAD bytes on, as AVX-512's blocks do theirs (AHEAD): a block's
   shuffles and the outflow's slices fill the out-of-order window, and
   fewer of the records' loads are in flight than a copy's. On an AMD Zen
   3 (bench-records, 64 MiB, two sets of 14 runs interleaved with the
   library before, its loops aligned as below) AoS to SoA went from
   medians by record of 0.75-0.83x a non-temporal copy to 0.82-0.94x,
   faster in 10 to 13 runs of 14 for each record; 512 bytes ahead gained
   less, 4 and 8 KiB no more (4 KiB neither on two threads).
   Conversions that do not stream (records in the cache) do without. */
enum { RECORDS_AHEAD = 2048 };

/* n_blocks blocks of 8 records between AoS at `aos` and the moved fields'
   plane runs, field f's at run[f] (into SoA with an outflow and
   STAGE_WORDS or STAGE_QWORDS: the stage's word or qword planes); vw a
   constant, so that the loops unroll and the block stays in registers.
   With nt (into AoS, streamed, n_blocks even, `aos` on a cache line), two
   blocks' records go into `pair`, 16 records being whole lines, and from
   there out past the cache.
   On an AMD Zen 3 this took 64 MiB into AoS from 0.60-0.91x a
   non-temporal copy (staging 16 KiB, then streaming it out) to 0.80-1.08x.
   `pair` must not cross a page: a record's store split across two pages,
   once every two blocks, made the same conversions 2.5 to 14 times as
   long as with `pair` inside one. The planes are not prefetched: 8 or 16
   blocks ahead made 16- to 56-byte records into AoS 0.09-0.17x slower
   there (docs/design.md). */
__attribute__((target("avx2"), always_inline)) static inline void
lanes8_run(const lanes8 *l, const mmb__fieldset *r, bool to_soa, char *aos, char *const *run,
           size_t n_blocks, outflow *out, bool nt, char *pair, const size_t vw) {
  size_t rs = r->record_size, words = rs / 4;
  char *plane[16];    /* per word: its field's plane run, where one starts there */
  size_t size[16];    /* and its size (0: none) */
  int shift[16];      /* a lone field's bits in its word */
  for (size_t w = 0; w < 16; w++) {
    int f = w < words ? l->field[w] : -1;
    size[w] = f < 0 ? 0 : r->size[f];
    plane[w] = f < 0 ? NULL : run[f];
    shift[w] = f < 0 ? 0 : (int)(8 * (r->offset[f] % 4));
  }
  for (size_t b = 0; b < n_blocks; b++) {
    char *rec = aos + 8 * b * rs;
    __m256 v[16];
    if (out && b % 4 == 3) outflow_send(out, out->slice);
    if (to_soa) {
      if (out) prefetch_lines((uintptr_t)rec + RECORDS_AHEAD, 8 * rs);
      records_in(v, rec, rs, vw, false, false);
      _Pragma("GCC unroll 16") for (size_t w = 0; w < vw; w++) {
        if (!size[w]) continue;
        char *p = plane[w] + 8 * b * size[w];
        if (size[w] == 4) {
          _mm256_storeu_ps((float *)p, v[w]);
        } else if (size[w] == 8 && w + 1 < vw) {   /* words w, w + 1 of records 0-3, 4-7 */
          __m256 lo = _mm256_unpacklo_ps(v[w], v[w + 1]), hi = _mm256_unpackhi_ps(v[w], v[w + 1]);
          _mm256_storeu_ps((float *)p, _mm256_permute2f128_ps(lo, hi, 0x20));
          _mm256_storeu_ps((float *)(p + 32), _mm256_permute2f128_ps(lo, hi, 0x31));
        } else if (size[w] < 4) {
          lone_out(p, v[w], size[w], shift[w]);
        }
      }
      continue;
    }
    _Pragma("GCC unroll 16") for (size_t w = 0; w < vw; w++) v[w] = _mm256_setzero_ps();
    _Pragma("GCC unroll 16") for (size_t w = 0; w < vw; w++) {
      if (!size[w]) continue;
      const char *p = plane[w] + 8 * b * size[w];
      if (size[w] == 4) {
        v[w] = _mm256_loadu_ps((const float *)p);
      } else if (size[w] == 8 && w + 1 < vw) {   /* records 0, 1, 4, 5 and 2, 3, 6, 7 */
        __m256 a = _mm256_loadu_ps((const float *)p), c = _mm256_loadu_ps((const float *)(p + 32));
        __m256 lo = _mm256_permute2f128_ps(a, c, 0x20), hi = _mm256_permute2f128_ps(a, c, 0x31);
        v[w] = _mm256_shuffle_ps(lo, hi, 0x88);   /* their low words */
        v[w + 1] = _mm256_shuffle_ps(lo, hi, 0xDD);
      } else if (size[w] < 4) {
        v[w] = lone_in(p, size[w], shift[w]);
      }
    }
    if (!nt) {
      records_out(rec, rs, v, vw, false, false);
      continue;
    }
    /* two blocks' records (whole lines) through L1, then past the cache */
    records_out(pair + 8 * (b % 2) * rs, rs, v, vw, false, false);
    if (b % 2 == 0) continue;
    char *line = rec - 8 * rs;
    for (size_t o = 0; o < 16 * rs; o += 32)
      _mm256_stream_si256((__m256i *)(line + o), _mm256_load_si256((const __m256i *)(pair + o)));
  }
}

/* Into SoA with an outflow, n_blocks blocks of 8 records at `aos` into
   the stage's planes (STAGE_WORDS, or with qwords STAGE_QWORDS), every
   vector stored, whatever it holds (see outseg). */
__attribute__((target("avx2"), always_inline)) static inline void
lanes8_planes(size_t rs, char *aos, size_t n_blocks, outflow *out, const bool qwords,
              const size_t vw) {
  size_t words = rs / 4;
  for (size_t b = 0; b < n_blocks; b++) {
    char *rec = aos + 8 * b * rs;
    __m256 v[16];
    if (b % 4 == 3) outflow_send(out, out->slice);
    prefetch_lines((uintptr_t)rec + RECORDS_AHEAD, 8 * rs);
    if (qwords) {   /* qword q of records 0-3, then of 4-7 */
      char *qp = out->stage[out->turn] + 64 * b;
      _Pragma("GCC unroll 2") for (size_t h = 0; h < vw / 8; h++) {
        _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
          v[i] = _mm256_loadu_ps((const float *)(rec + i * rs + 32 * h));
        mmb__transpose4x4_qwords(v);
        mmb__transpose4x4_qwords(v + 4);
        _Pragma("GCC unroll 4") for (size_t q = 0; q < 4; q++) {
          if (h == 0 || 8 * (4 * h + q) < rs) {   /* (qwords past the record: the next one's) */
            char *p = qp + (4 * h + q) * 2 * out->wstride;
            _mm256_storeu_ps((float *)p, v[q]);
            _mm256_storeu_ps((float *)(p + 32), v[4 + q]);
          }
        }
      }
      continue;
    }
    records_in(v, rec, rs, vw, false, false);
    char *wp = out->stage[out->turn] + 32 * b;
    _Pragma("GCC unroll 16") for (size_t w = 0; w < vw; w++)
      if (w < vw / 2 || w < words)   /* (the words past the record: the next one's) */
        _mm256_storeu_ps((float *)(wp + w * out->wstride), v[w]);
  }
}

/* Records whose moved fields are all words (4 bytes each: xyz, xyzw, a
   struct of floats and ints; lone fields through their stages, see
   lanes8_lone_blocks), with no outflow and no streaming stores:
   each block stores every word's vector to its field's plane run, or to
   scratch where no moved field starts (into SoA), or loads it from there
   (zeros, into AoS), with no test of each word's field (lanes8_run's
   tests cost more than the shuffles: in L2 such records ran at about a
   per-field loop's speed). On an AMD Zen 3 (bench-records, 6 runs in
   turn with the tested loop, medians against memcpy of the same run), 3
   floats went from 0.54 to 0.85x into SoA and from 0.47 to 0.72x into
   AoS at 192 KiB (in L2; 22-24 to 33-37 GB/s into SoA, 19-20 to 34-36
   into AoS), from 0.42 to 1.01x and 0.36 to 0.93x at 1 MiB; 3 floats and
   an int from 0.57 to 0.75x and 0.53 to 0.65x, and from 0.56 to 0.91x
   and 0.52 to 0.79x, faster in 6 of 6 runs but one. */
__attribute__((target("avx2"), always_inline)) static inline void
lanes8_words(size_t rs, bool to_soa, char *aos, char *const *p, const size_t *st,
             size_t n_blocks, const size_t vw, const bool end) {
  if (to_soa)
    for (size_t b = 0; b < n_blocks; b++) {
      __m256 v[16];
      records_in(v, aos + 8 * b * rs, rs, vw, true, end);
      _Pragma("GCC unroll 16") for (size_t w = 0; w < vw; w++)
        _mm256_storeu_ps((float *)(p[w] + b * st[w]), v[w]);
    }
  else
    for (size_t b = 0; b < n_blocks; b++) {
      __m256 v[16];   /* (the words past a record: the next one's, stored after it) */
      _Pragma("GCC unroll 16") for (size_t w = 0; w < vw; w++)
        v[w] = _mm256_loadu_ps((const float *)(p[w] + b * st[w]));
      records_out(aos + 8 * b * rs, rs, v, vw, true, end);
    }
}

/* Records of qwords with doubles, in the cache: no double astride two
   qwords, 8 words or more. Each block transposes qwords (as
   lanes8_planes does), a double's qword vector going to its plane run;
   any other qword is split into its low and high words (joined from
   them, into AoS), each to its 4-byte field's plane run, to a lone
   field's stage (lanes8_lone_blocks) or to scratch:
   one test a qword, none a word, and 8 shuffles per 4 x 4 qwords against
   24 per 8 x 8 words and 4 more per double. On an AMD Zen 3
   (bench-records, 6 runs in turn with the tested loop, medians against
   memcpy of the same run) the 6-double record went from 0.48 to 0.59x
   into SoA and from 0.47 to 0.58x into AoS at 192 KiB (in L2: about 15-17
   to 21-23 GB/s both ways), from 0.49 to 0.65x and 0.45 to 0.60x at 1
   MiB. */
__attribute__((target("avx2"), always_inline)) static inline void
lanes8_qwords(size_t rs, bool to_soa, char *aos, char *const *p, const size_t *st,
              uint32_t dbl, size_t n_blocks, const size_t vw, const bool end) {
  for (size_t b = 0; b < n_blocks; b++) {
    char *rec = aos + 8 * b * rs;
    __m256 v[16];   /* half h: v[8h + q] qword 4h + q of records 0-3, v[8h + 4 + q] of 4-7 */
    if (to_soa) {
      _Pragma("GCC unroll 2") for (size_t h = 0; h < vw / 8; h++) {
        records_load8(v + 8 * h, rec + 32 * h, rs, rs - 32 * h, end);
        mmb__transpose4x4_qwords(v + 8 * h);
        mmb__transpose4x4_qwords(v + 8 * h + 4);
        _Pragma("GCC unroll 4") for (size_t q = 0; q < 4; q++) {
          size_t Q = 4 * h + q, w = 2 * Q;
          if (8 * Q >= rs) continue;   /* (the next record's) */
          __m256 a = v[8 * h + q], c = v[8 * h + 4 + q];
          if (dbl >> Q & 1) {
            _mm256_storeu_ps((float *)(p[w] + b * st[w]), a);
            _mm256_storeu_ps((float *)(p[w] + b * st[w] + 32), c);
            continue;
          }
          __m256 lo = _mm256_shuffle_ps(a, c, 0x88), hi = _mm256_shuffle_ps(a, c, 0xDD);
          _mm256_storeu_pd((double *)(p[w] + b * st[w]),
                           _mm256_permute4x64_pd(_mm256_castps_pd(lo), 0xD8));
          _mm256_storeu_pd((double *)(p[w + 1] + b * st[w + 1]),
                           _mm256_permute4x64_pd(_mm256_castps_pd(hi), 0xD8));
        }
      }
      continue;
    }
    _Pragma("GCC unroll 2") for (size_t h = 0; h < vw / 8; h++) {
      _Pragma("GCC unroll 4") for (size_t q = 0; q < 4; q++) {
        size_t Q = 4 * h + q, w = 2 * Q;
        if (8 * Q >= rs) {   /* (the next record's: zero, stored over after) */
          v[8 * h + q] = v[8 * h + 4 + q] = _mm256_setzero_ps();
        } else if (dbl >> Q & 1) {
          v[8 * h + q] = _mm256_loadu_ps((const float *)(p[w] + b * st[w]));
          v[8 * h + 4 + q] = _mm256_loadu_ps((const float *)(p[w] + b * st[w] + 32));
        } else {   /* words of records 0, 1, 4, 5 and 2, 3, 6, 7, joined into qwords */
          __m256 lo = _mm256_castpd_ps(_mm256_permute4x64_pd(
                     _mm256_castps_pd(_mm256_loadu_ps((const float *)(p[w] + b * st[w]))), 0xD8));
          __m256 hi = _mm256_castpd_ps(_mm256_permute4x64_pd(
              _mm256_castps_pd(_mm256_loadu_ps((const float *)(p[w + 1] + b * st[w + 1]))), 0xD8));
          v[8 * h + q] = _mm256_unpacklo_ps(lo, hi);
          v[8 * h + 4 + q] = _mm256_unpackhi_ps(lo, hi);
        }
      }
      mmb__transpose4x4_qwords(v + 8 * h);
      mmb__transpose4x4_qwords(v + 8 * h + 4);
    }
    records_store8(rec, rs, v, vw, end);
  }
}

/* lanes8_run with each direction a loop of its own (nt comes only into
   AoS: into SoA, convert_block stages the planes).
   The functions that hold the loops start on 64 bytes, so that changes
   elsewhere in the library do not move them against the CPU's fetch
   blocks: on the Zen 3 above, two builds of the same loops at different
   places ran 56-byte records into AoS 0.17x of a copy apart (medians of
   16 runs). With the split and the prefetch, into AoS went from medians
   by record of 1.04-1.11x to 0.94-1.09x: the 56-byte records by 0.09 to
   0.15x (in all 14 runs of one set), and by 0.06-0.09x without the split
   or without the alignment. Not yet explained: those loops do not
   prefetch. */
__attribute__((target("avx2"), always_inline)) static inline void
lanes8_split(const lanes8 *l, const mmb__fieldset *r, bool to_soa, char *aos, char *const *run,
             size_t n_blocks, outflow *out, bool nt, char *pair, const size_t vw) {
  if (nt) lanes8_run(l, r, false, aos, run, n_blocks, out, true, pair, vw);
  else if (to_soa && out && vw >= 8 && l->planes == STAGE_QWORDS)
    lanes8_planes(r->record_size, aos, n_blocks, out, true, vw);
  else if (to_soa && out && l->planes == STAGE_WORDS)
    lanes8_planes(r->record_size, aos, n_blocks, out, false, vw);
  else if (to_soa) lanes8_run(l, r, true, aos, run, n_blocks, out, false, pair, vw);
  else lanes8_run(l, r, false, aos, run, n_blocks, out, false, pair, vw);
}

/* 3-word records' blocks, in a function of their own: the same loops laid
   out among the others' moved those by 3 to 6% on an AMD Zen 3. */
__attribute__((target("avx2"), noinline, aligned(64))) static void lanes8_blocks3(
    const lanes8 *l, const mmb__fieldset *r, bool to_soa, char *aos, char *const *run,
    size_t n_blocks, outflow *out, bool nt, char *pair) {
  lanes8_split(l, r, to_soa, aos, run, n_blocks, out, nt, pair, 3);
}

/* Per word of a record (l), where the in-cache loops put its vectors: its
   field's plane run (p, from run), or scratch; and st, a copy of l->step
   (how far the next block's go) of the caller's own: read through l, GCC
   reloads the steps after every store, which could write l's for all it
   knows. */
static inline void plane_runs(const lanes8 *l, char *const *run, char *scratch, char **p,
                              size_t *st) {
  for (size_t w = 0; w < 16; w++) p[w] = scratch;
  for (size_t w = 0; w < l->vw; w++)
    if (l->field[w] >= 0) p[w] = run[l->field[w]];
  memcpy(st, l->step, sizeof l->step);
}

/* n_blocks blocks in the cache, by lanes8_qwords or lanes8_words: per word
   of the record, p and st give where its vectors go (see
   lanes8_cache_blocks); with end, the last of them is the run's last. */
__attribute__((target("avx2"), always_inline)) static inline void lanes8_cache_span(
    const lanes8 *l, size_t rs, bool to_soa, char *aos, char *const *p, const size_t *st,
    uint32_t dbl, size_t n_blocks, const bool end) {
  if (l->qwords && l->vw == 8) lanes8_qwords(rs, to_soa, aos, p, st, dbl, n_blocks, 8, end);
  else if (l->qwords) lanes8_qwords(rs, to_soa, aos, p, st, dbl, n_blocks, 16, end);
  else if (l->vw == 3) lanes8_words(rs, to_soa, aos, p, st, n_blocks, 3, end);
  else if (l->vw == 4) lanes8_words(rs, to_soa, aos, p, st, n_blocks, 4, end);
  else if (l->vw == 8) lanes8_words(rs, to_soa, aos, p, st, n_blocks, 8, end);
  else lanes8_words(rs, to_soa, aos, p, st, n_blocks, 16, end);
}

/* n_blocks blocks in the cache, the last in a call of its own (its last
   record taken exactly: records_load8), so that the others test nothing.
   With a test in each block instead, records of 56 bytes went from
   0.69-0.73x memcpy to 0.63-0.64x into SoA at 1 MiB; with the blocks in
   two spans of one loop (blocks b0 to b1), records of 16 bytes from 0.90
   to 0.81x, GCC keeping fewer of their offsets in registers
   (bench/records-ab.sh, 8-10 runs, the Zen 3 of lanes8_qwords). */
__attribute__((target("avx2"), always_inline)) static inline void lanes8_cache_loops(
    const lanes8 *l, size_t rs, bool to_soa, char *aos, char *const *p, const size_t *st,
    uint32_t dbl, size_t n_blocks) {
  if (!n_blocks) return;
  size_t b = n_blocks - 1;
  char *last[16];
  for (size_t w = 0; w < 16; w++) last[w] = p[w] + b * st[w];
  lanes8_cache_span(l, rs, to_soa, aos, p, st, dbl, b, false);
  lanes8_cache_span(l, rs, to_soa, aos + 8 * b * rs, last, st, dbl, 1, true);
}

/* Records with lone fields (a particle's char flag, up to LONE_MAX) in
   the cache, LONE_BLOCKS blocks at a time: the loops store each lone
   field's word vectors to a stage of its own (into SoA), and a loop of
   its own narrows them from there to the field's plane (lone_out); into
   AoS, the other way round. So the loops keep no test of a word's field.
   On an AMD Zen 3 (192 KiB, in L2, medians of 15 runs in turn with the
   tested loop), the particle went from 22.1 to 15.4 us into SoA and from
   23.0 to 16.5 us into AoS (8.9 to 12.8 and 8.6 to 11.9 GB/s). A test of
   each lone word in the qword loop instead gained less (21.4 to 18.5 us
   and 25.6 to 24.3 in one such set): its branches cost about as much as
   the shuffles. */
__attribute__((target("avx2"), noinline, aligned(64))) static void lanes8_lone_blocks(
    const lanes8 *l, const mmb__fieldset *r, bool to_soa, char *aos, char *const *run,
    size_t n_blocks) {
  _Alignas(32) char stage[LONE_MAX][LONE_BLOCKS * 32], scratch[32] = {0};
  char *p[16], *q[16];   /* q: p from the chunk's first block on, the lone words' stages */
  size_t st[16], rs = r->record_size, n_lone = l->n_lone;
  const unsigned *at = l->lone_word, *size = l->lone_size;
  const int *shift = l->lone_shift;
  plane_runs(l, run, scratch, p, st);
  for (size_t k = 0; k < n_lone; k++) st[at[k]] = 32;   /* (the lone words': their stages') */
  for (size_t b0 = 0; b0 < n_blocks; b0 += LONE_BLOCKS) {
    size_t nb = n_blocks - b0 < LONE_BLOCKS ? n_blocks - b0 : LONE_BLOCKS;
    if (b0 == 0) memcpy(q, p, sizeof q);
    else
      for (size_t w = 0; w < 16; w++) q[w] += LONE_BLOCKS * st[w];
    for (size_t k = 0; k < n_lone; k++) q[at[k]] = stage[k];
    if (!to_soa)
      for (size_t k = 0; k < n_lone; k++)
        for (size_t b = 0; b < nb; b++)
          _mm256_store_ps((float *)(stage[k] + 32 * b),
                          lone_in(p[at[k]] + (b0 + b) * 8 * size[k], size[k], shift[k]));
    lanes8_cache_loops(l, rs, to_soa, aos + 8 * b0 * rs, q, st, l->dbl, nb);
    if (to_soa)
      for (size_t k = 0; k < n_lone; k++)
        for (size_t b = 0; b < nb; b++)
          lone_out(p[at[k]] + (b0 + b) * 8 * size[k],
                   _mm256_load_ps((const float *)(stage[k] + 32 * b)), size[k], shift[k]);
  }
}

/* Records of words or of qwords in the cache (lanes8_words,
   lanes8_qwords), in a function of their own, chosen before
   lanes8_blocks: the streamed loops stay where they were (see
   lanes8_split). Both loops take, per word of the record, where its
   vectors go: its field's plane run, or scratch. */
__attribute__((target("avx2"), noinline, aligned(64))) static void lanes8_cache_blocks(
    const lanes8 *l, const mmb__fieldset *r, bool to_soa, char *aos, char *const *run,
    size_t n_blocks) {
  _Alignas(32) char scratch[32] = {0};
  char *p[16];
  size_t st[16];
  plane_runs(l, run, scratch, p, st);
  lanes8_cache_loops(l, r->record_size, to_soa, aos, p, st, l->dbl, n_blocks);
}

__attribute__((target("avx2"), aligned(64))) static void lanes8_blocks(const lanes8 *l,
                                                          const mmb__fieldset *r, bool to_soa,
                                                          char *aos, char *const *run,
                                                          size_t n_blocks, outflow *out,
                                                          bool nt, char *pair) {
  if (l->vw == 3) lanes8_blocks3(l, r, to_soa, aos, run, n_blocks, out, nt, pair);
  else if (l->vw == 4) lanes8_split(l, r, to_soa, aos, run, n_blocks, out, nt, pair, 4);
  else if (l->vw == 8) lanes8_split(l, r, to_soa, aos, run, n_blocks, out, nt, pair, 8);
  else lanes8_split(l, r, to_soa, aos, run, n_blocks, out, nt, pair, 16);
}

/* A host conversion: both views' field pointers, and per field the bytes
   from one element to the next. Runs contiguous on both sides between AoS
   and SoA go through registers where the records allow: 16 records at a
   time with AVX-512 (shuffle), else 8 with AVX2 (lanes8). Large
   conversions (the copy engine's streaming size) write with streaming
   stores, so no destination line is read for ownership: from AVX-512's
   registers where they fill whole lines, from AVX2's two blocks at a time
   into AoS (lanes8_run), else staging each block in L1 first (AVX2's
   32-byte stores into several planes at once, streamed, took 1.2-1.9x as
   long as staging on an AMD Zen 3, and whole lines of 16 to 256 records
   per plane 1.05-1.6x; planes a power of two apart, as 2^22 records'
   are, 2.7x: see records3_in). Bytes between the fields of AoS records
   written by either are zero. */
typedef struct convert {
  const mmb__fieldset *r;     /* the destination's records */
  const mmb__fieldset *aos;   /* between AoS and SoA: the AoS side's (its offsets and size) */
  mmb__record_moves m;        /* each field's first element and steps, both sides */
  bool d_soa, s_soa, stream;
  const shuffle *sh;   /* AVX-512's table (NULL: none) */
  lanes8 l8;           /* AVX2's blocks (where sh is NULL and l8.fields is not 0) */
  size_t block;        /* elements per block of a run */
  char *buf;           /* stream: a block of the destination, in its storage */
  char *pair;          /* in buf after the stages, within one page: AVX2's two blocks
                          into AoS (lanes8_run) */
  outflow *out;        /* AVX2's blocks into SoA, streamed: the last block's write-out */
} convert;

/* A block of the wider side's elements fills about BLOCK_BYTES of L1;
   AVX2's blocks into SoA, whose staged planes go out during the next
   block, OUTFLOW_BYTES. On an AMD Zen 3 (bench-records, 15 rounds, 8
   runs interleaved) blocks of 32 KiB rather than 16 took AoS to SoA from
   0.71-0.79x a non-temporal copy to 0.76-0.79x (medians by record) at 64
   MiB, and from 19-23 to 20-25 GB/s in L2; 6 more runs: 0.68-0.75x to
   0.73-0.77x, and at 48 MiB (2^22 of the 12-byte records) 0.65-0.75x to
   0.69-0.76x. Blocks of 4 and 8 KiB did worse, 64 KiB about the same
   with twice the stages. */
enum { BLOCK_BYTES = 16384, OUTFLOW_BYTES = 32768, PAIR_BYTES = 16 * 64 + 64 };

/* Whether field f goes through the registers (where the run allows). */
static bool in_registers(const convert *c, size_t f) {
  return (c->sh ? c->sh->fields : c->l8.fields) >> f & 1;
}

/* Whether AVX2's blocks go into SoA: their staged planes then go out
   during the next block (outflow), in blocks of OUTFLOW_BYTES. */
static bool outflows(const convert *c) {
  return !c->sh && c->l8.fields && c->d_soa;
}

/* Into SoA, whether the registers fill whole lines of field f's plane (a
   lone field's fill a quarter or half of one: see put_out). */
static bool in_whole_lines(const convert *c, size_t f) {
  return c->sh && in_registers(c, f) && c->r->size[f] >= 4;
}

/* Whether AVX2's blocks are the in-cache loops (lanes8_words,
   lanes8_qwords), which reach past no block: the conversion does not
   stream, and the records' moved fields are words, or qwords. */
static bool in_cache_loops(const convert *c) {
  return !c->sh && (c->l8.words || c->l8.qwords) && !c->stream;
}

/* Runs of records converted in one call (the rows of a tile in the cache):
   how many, and the bytes from one run's records to the next's, and from
   one run of each field's plane to the next's. */
typedef struct rows {
  size_t n;
  size_t aos;
  size_t run[MMB_MAX_FIELDS];
} rows;

/* n records (a multiple of 16 with AVX-512's table, of 8 with AVX2's
   blocks) between AoS at `aos` and the moved fields' runs. */
static void registers_run(const convert *c, bool to_soa, char *aos, char *const *run, size_t n,
                          bool nt) {
  if (c->sh) shuffle_blocks(c->sh, c->aos, to_soa, aos, run, n, nt);
  else if ((c->l8.words || c->l8.qwords) && !c->out && !nt)
    (c->l8.lones ? lanes8_lone_blocks : lanes8_cache_blocks)(&c->l8, c->aos, to_soa, aos, run,
                                                             n / 8);
  else lanes8_blocks(&c->l8, c->aos, to_soa, aos, run, n / 8, c->out, nt, c->pair);
}

/* Asks for the lines of the row after the one at aos and run (rw's rows)
   before that one converts: its n AoS records and each moved field's run
   of n (for writing, those the conversion writes). The hardware's prefetchers
   follow a stream within a page: a tile's rows ROW_FAR or more apart each
   start cold, and without this each row's loads and stores missed in turn.
   Rows nearer than that share pages, and are left alone: in the cache the
   prefetches only cost instructions. bench-records' particles (24 B, 5
   fields) tile by tile, against a memcpy per tile row, medians of 8 runs
   in turn (bench/records-ab.sh; Intel Xeon, family 6 model 167, AVX-512,
   2026-11-30), into SoA / into AoS: at 63 MiB, 32 x 32 tiles from 0.35 /
   0.36x to 0.67 / 0.65x, 64 x 64 from 0.60 / 0.47x to 0.98 / 0.94x; at
   864 KiB (rows 4.5 KiB apart, in L2) 0.27-0.43x either way, within 0.03;
   at 96 KiB (1.5 KiB apart) as before. AVX2's blocks gain as much: 32 x 32
   tiles of 63 MiB in 11-12 rather than 24-30 ms into SoA. */
enum { ROW_FAR = 4096 };

static void prefetch_row(const convert *c, bool to_soa, const char *aos, char *const *run,
                         const rows *rw, size_t n) {
  aos += rw->aos;
  for (size_t o = 0, end = n * c->aos->record_size; o < end; o += 64) {
    if (to_soa) __builtin_prefetch(aos + o, 0, 3);
    else __builtin_prefetch(aos + o, 1, 3);
  }
  for (size_t f = 0; f < c->r->n; f++) {
    const char *p = run[f] + rw->run[f];
    for (size_t o = 0, end = in_registers(c, f) ? n * c->r->size[f] : 0; o < end; o += 64) {
      if (to_soa) __builtin_prefetch(p + o, 1, 3);
      else __builtin_prefetch(p + o, 0, 3);
    }
  }
}

/* The same in each of rw's rows (NULL: one run). The loops take a row at
   a time, as they take a single run, and so stay as they are for single
   runs. With the rows inside lanes8_cache_blocks and lanes8_lone_blocks
   instead, a 96 x 96 array of particles went by 32 x 32 tiles in 35
   rather than 39.5 us (the Zen 3 of lanes8_qwords), but
   lanes8_cache_blocks took 1.3% more instructions for single runs of
   56-byte records (callgrind). */
static void registers(const convert *c, bool to_soa, char *aos, char *const *run, size_t n,
                      bool nt, const rows *rw) {
  if (!rw) {
    registers_run(c, to_soa, aos, run, n, nt);
    return;
  }
  char *at[MMB_MAX_FIELDS];
  memcpy(at, run, c->r->n * sizeof *at);
  size_t far = rw->aos >= ROW_FAR ? rw->n - 1 : 0;   /* rows whose next one is fetched ahead */
  for (size_t i = 0; i < rw->n; i++, aos += rw->aos) {
    if (i < far) prefetch_row(c, to_soa, aos, at, rw, n);
    registers_run(c, to_soa, aos, at, n, nt);
    for (size_t f = 0; f < c->r->n; f++) at[f] += rw->run[f];
  }
}

/* move_field on each of n_rows runs, drow and srow bytes apart. */
static void move_rows(char *d, size_t ds, size_t drow, const char *s, size_t ss, size_t srow,
                      size_t n, size_t size, size_t n_rows) {
  for (size_t i = 0; i < n_rows; i++) move_field(d + i * drow, ds, s + i * srow, ss, n, size);
}

/* m elements of one run, dst and src steps in elements (plan dim 0), or
   without streaming, of each of n_rows whole runs (a tile's rows), drow
   and srow elements apart (plan dim 1), converted in one call. A call a
   row, 512 x 512 particles in the cache went by 32 x 32 tiles (three
   round trips) in 75.2M instructions; with the rows in one call, in
   59.5M, 320 fewer a row of 32 (callgrind).
   Streaming, what the registers convert goes straight out past the cache
   where it lands on whole cache lines (`direct`: each plane's run, or the
   records, starting on one); the rest is staged in the buffer, packed,
   and streamed out from there. */
static void convert_block(const convert *c, size_t doff, size_t dst, size_t soff, size_t sst,
                          size_t m, bool run_end, size_t n_rows, size_t drow, size_t srow) {
  const mmb__fieldset *r = c->r;
  if (!r->n) return;   /* (a record has a field: to[0] below is set) */
  size_t fast = 0;   /* elements through the registers */
  if (dst == 1 && sst == 1)
    fast = c->sh            ? m / 16 * 16
           : !c->l8.fields  ? 0
           : run_end && !in_cache_loops(c) ? lanes8_count(&c->l8, c->aos->record_size, m)
                            : m / 8 * 8;   /* (reaching into the next block, converted after) */
  outflow *o = c->out;
  char *buf = o ? o->stage[o->turn] : c->buf;
  if (o) {   /* the last block's write-out in slices, one per 4 register steps */
    size_t pending = 0;
    for (size_t k = o->at; k < o->n; k++) pending += o->seg[k].left;
    o->slice = (pending / (fast / 32 + 1) + 63) / 32 * 32;
  }
  char *to[MMB_MAX_FIELDS] = {0};
  const char *from[MMB_MAX_FIELDS] = {0};
  for (size_t f = 0; f < r->n; f++) {
    to[f] = c->m.d[f] + doff * c->m.dstep[f];
    from[f] = c->m.s[f] + soff * c->m.sstep[f];
  }
  bool direct = c->stream && fast && (c->sh || !c->d_soa);   /* (see outflow) */
  rows rw, *rows_of = NULL;   /* the registers' rows (NULL: one run) */
  if (n_rows > 1) {
    rw.n = n_rows;
    rw.aos = c->d_soa ? srow * c->m.sstep[0] : drow * c->m.dstep[0];
    for (size_t f = 0; f < r->n; f++)
      rw.run[f] = c->d_soa ? drow * c->m.dstep[f] : srow * c->m.sstep[f];
    rows_of = &rw;
  }
  if (c->d_soa) {   /* into plane runs: staged field by field */
    for (size_t f = 0; f < r->n; f++)
      direct = direct && !(in_whole_lines(c, f) && (uintptr_t)to[f] % 64);
    char *run[MMB_MAX_FIELDS];
    bool words = o && c->l8.planes != STAGE_TESTED, qwords = o && c->l8.planes == STAGE_QWORDS;
    char *packed = words ? buf + c->l8.vw * o->wstride : buf;   /* (after the word planes) */
    for (size_t f = 0; f < r->n; f++)
      run[f] = c->stream && !(direct && in_whole_lines(c, f)) ? packed + m * r->before[f] : to[f];
    if (fast) registers(c, true, (char *)from[0] - c->aos->offset[0], run, fast, direct, rows_of);
    for (size_t f = 0; f < r->n; f++) {
      size_t done = in_registers(c, f) ? fast : 0, step = run[f] == to[f] ? dst : 1;
      if (done < m)
        move_rows(run[f] + done * step * r->size[f], step * r->size[f], drow * c->m.dstep[f],
                  from[f] + done * sst * c->m.sstep[f], sst * c->m.sstep[f], srow * c->m.sstep[f],
                  m - done, r->size[f], n_rows);
      if (run[f] != to[f] && !o) mmb__engine_run(to[f], run[f], m * r->size[f], true);
    }
    if (o) {   /* the last block's rest, then this one's to send */
      outflow_send(o, SIZE_MAX);
      o->n = 0, o->at = 0;
      for (size_t f = 0; f < r->n; f++) {
        size_t size = r->size[f], done = words && in_registers(c, f) ? fast : 0;
        size_t off = c->aos->offset[f];
        if (done) {   /* its word or qword plane, a double's two word planes, or its bytes */
          size_t step = qwords ? 8 : 4;
          o->seg[o->n++] = (outseg){.dst = to[f], .src = buf + off / step * (step / 4) * o->wstride,
                                    .left = done * size, .hi = o->wstride, .size = (unsigned)size,
                                    .step = (unsigned)step,
                                    .kind = size == step ? OUT_COPY
                                            : size == 8  ? OUT_PAIR
                                            : size == 4  ? OUT_HALF
                                                         : OUT_LONE,
                                    .shift = (int)(8 * (off % step))};
        }
        if (m > done)
          o->seg[o->n++] = (outseg){.dst = to[f] + done * size, .src = run[f] + done * size,
                                    .left = (m - done) * size, .size = (unsigned)size};
      }
      o->turn = !o->turn;
    }
    return;
  }
  /* into records: staged whole, or direct where the registers write every
     field (the last few records after them, their gaps zeroed first) */
  size_t rs = c->m.dstep[0];
  char *home = to[0] - r->offset[0];
  direct = direct && (c->sh ? c->sh->fields : c->l8.fields) == (1u << r->n) - 1 &&
           (uintptr_t)home % 64 == 0;
  if (direct && !c->sh) {   /* AVX2's blocks go out two at a time (lanes8_run) */
    fast = fast / 16 * 16;
    direct = fast > 0;
  }
  char *rec = c->stream && !direct ? buf : home;
  size_t step = rec == home ? dst : 1;
  if (fast) registers(c, false, rec, (char *const *)from, fast, direct, rows_of);
  if (direct) memset(home + fast * rs, 0, (m - fast) * rs);
  for (size_t f = 0; f < r->n; f++) {   /* after the registers: they zero the other words */
    size_t done = in_registers(c, f) ? fast : 0;
    if (done < m)
      move_rows(rec + r->offset[f] + done * step * rs, step * rs, drow * rs,
                from[f] + done * sst * c->m.sstep[f], sst * c->m.sstep[f], srow * c->m.sstep[f],
                m - done, r->size[f], n_rows);
  }
  if (rec != home) mmb__engine_run(home, buf, m * rs, true);
}

static void convert_walk(const convert *c, const mmb__plan *p, size_t k, size_t doff,
                         size_t soff) {
  if (k == 2 && !c->stream && p->ds[0] == 1 && p->ss[0] == 1 && p->dim[0] <= c->block) {
    convert_block(c, doff, 1, soff, 1, p->dim[0], true, p->dim[1], p->ds[1], p->ss[1]);
    return;   /* (rows of whole runs in the cache, in one call) */
  }
  if (k > 1) {
    for (size_t i = 0; i < p->dim[k - 1]; i++)
      convert_walk(c, p, k - 1, doff + i * p->ds[k - 1], soff + i * p->ss[k - 1]);
    return;
  }
  /* one run along plan dim 0 (or one element when the plan is empty) */
  size_t n = p->n ? p->dim[0] : 1, dst = p->n ? p->ds[0] : 1, sst = p->n ? p->ss[0] : 1;
  for (size_t i0 = 0; i0 < n; i0 += c->block)
    convert_block(c, doff + i0 * dst, dst, soff + i0 * sst, sst, mmb__min(c->block, n - i0),
                  i0 + c->block >= n, 1, 0, 0);
}

_Static_assert(MMB__MOVE_FIELDS == MMB_MAX_FIELDS && MMB__MOVE_DIMS == MMB_MAX_DIMS,
               "record_move.h's bounds are mmb's");

void mmb__record_moves_make(const mmb__view *d, const mmb__view *s, mmb__record_moves *m) {
  *m = (mmb__record_moves){.n_fields = d->rec->n, .count = 1};
  for (size_t f = 0; f < m->n_fields; f++) {
    m->size[f] = d->rec->size[f];
    m->d[f] = mmb__view_field(d, f);
    m->s[f] = mmb__view_field(s, f);
    m->dstep[f] = mmb__view_field_step(d, f);
    m->sstep[f] = mmb__view_field_step(s, f);
  }
  mmb__plan p;
  mmb__plan_make(d, s, &p);
  m->rank = 0;
  for (size_t k = 0; k < p.n; k++) {
    m->count *= p.dim[k];
    size_t r = m->rank;
    if (r && p.ds[k] == m->ds[r - 1] * m->dim[r - 1] && p.ss[k] == m->ss[r - 1] * m->dim[r - 1]) {
      m->dim[r - 1] *= p.dim[k];   /* contiguous on both sides with the one inside: one dimension */
      continue;
    }
    m->dim[r] = p.dim[k];
    m->ds[r] = p.ds[k];
    m->ss[r] = p.ss[k];
    m->rank++;
  }
}

/* A host conversion split over threads (mmb__engine_split): its plan, and
   what each part needs to set up its own staging. */
typedef struct convert_job {
  const convert *c;   /* records, moves, tables and block, shared */
  mmb__plan p;
  size_t esize;       /* the destination's element */
  size_t bytes;       /* the whole conversion's (whether it streams) */
  bool runs;          /* records contiguous along the runs: it may stream */
  mmb__engine_deal deal;   /* of the plan's outermost index (an empty plan: one chunk) */
} convert_job;

/* A part: with its own stages, chunks of the plan's outermost index as
   they are dealt (of 64 elements for one run, so that each starts on
   cache lines where the run does). */
static void convert_part(void *arg, unsigned i, unsigned parts) {
  convert_job *j = arg;
  convert c = *j->c;
  mmb__plan p = j->p;
  size_t lo, hi, k = p.n ? p.n - 1 : 0;
  if (!mmb__engine_deal_next(&j->deal, parts, &lo, &hi)) return;
  bool two = outflows(&c);
  size_t wstride = 4 * c.block;   /* (each stage's first vw, where AVX2's blocks use them) */
  size_t staged = c.block * j->esize + (two && c.l8.planes ? c.l8.vw * wstride : 0);
  outflow out;
  size_t stages = two ? 2 * staged : staged;
  if (j->runs && mmb__engine_streams(j->bytes) &&
      (c.buf = mmb__malloc(stages + 64 + 2 * PAIR_BYTES))) {
    c.stream = true;
    memset(c.buf, 0, stages);   /* (padding between AoS fields stays zero) */
    c.pair = (char *)(((uintptr_t)c.buf + stages + 63) & ~(uintptr_t)63);   /* after the stages */
    if ((uintptr_t)c.pair % 4096 + PAIR_BYTES > 4096)   /* (then less than PAIR_BYTES on) */
      c.pair = (char *)(((uintptr_t)c.pair + 4095) & ~(uintptr_t)4095);
    if (two) {
      out = (outflow){.stage = {c.buf, c.buf + staged}, .wstride = wstride};
      c.out = &out;
    }
  }
  do {
    if (p.n) p.dim[k] = hi - lo;
    convert_walk(&c, &p, p.n, p.n ? lo * p.ds[k] : 0, p.n ? lo * p.ss[k] : 0);
  } while (mmb__engine_deal_next(&j->deal, parts, &lo, &hi));
  if (c.out) outflow_send(c.out, SIZE_MAX);
  if (c.stream) {
    _mm_sfence();
    mmb__free(c.buf);
  }
}

static atomic_bool avx512_off;   /* mmb__record_use_avx512(false): tests of AVX2's blocks */

void mmb__record_use_avx512(bool on) {
  atomic_store_explicit(&avx512_off, !on, memory_order_relaxed);
}

void mmb__record_convert(const mmb__view *d, const mmb__view *s) {
  convert c = {.r = d->rec, .d_soa = mmb__record_soa(d->rec), .s_soa = mmb__record_soa(s->rec)};
  mmb__record_moves_make(d, s, &c.m);
  const shuffle *sh = NULL;
  if (c.d_soa != c.s_soa) {   /* (two AoS shapes: field by field) */
    c.aos = c.d_soa ? s->rec : d->rec;
    if (!atomic_load_explicit(&avx512_off, memory_order_relaxed))
      sh = record_shuffle_of(c.aos, c.d_soa);
  }
  if (shuffle_pays(sh)) c.sh = sh;
  else if (c.aos && !lanes8_make(c.aos, &c.l8)) c.l8.fields = 0;
  size_t esize = mmb__max(d->esize, s->esize);
  c.block = (outflows(&c) ? OUTFLOW_BYTES : BLOCK_BYTES) / esize / 64 * 64;
  if (c.block < 64) c.block = 64;   /* (a multiple of 64: plane runs start on cache lines) */
  convert_job j = {.c = &c, .esize = d->esize, .bytes = mmb__view_bytes(d)};
  mmb__plan_make(d, s, &j.p);
  /* streaming stages a run of the destination and writes it out whole:
     the run's records, or each plane's elements, must lie contiguous. A
     tile one element thick along the destination's fastest dimension
     (whose plan drops it), or a padded SoA array of extent 1 there, has
     its runs a row pitch apart, and goes element by element instead. */
  j.runs = j.p.n && j.p.ds[0] == 1;
  /* split as a copy of as many bytes between the same interfaces would be */
  size_t outer = !j.p.n ? 1 : j.p.n == 1 ? j.p.dim[0] / 64 : j.p.dim[j.p.n - 1];
  size_t n = j.p.n ? j.p.dim[j.p.n - 1] : 1;
  mmb__engine_deal_init(&j.deal, n, j.p.n == 1 ? 64 : 1, n ? j.bytes / n : 1);
  size_t parts = mmb__min(mmb__engine_threads(j.bytes, mmb__copy_threads(d->iface, s->iface)),
                          outer);
  mmb__engine_split(convert_part, &j, (unsigned)parts,
                    d->iface ? d->iface->space->info.numa_node : -1);
}
