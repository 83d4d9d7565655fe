/* ooc-gemm: C = A B in single precision, out of core. The three matrices
   live in a capacity tier (DRAM, or the storage tier: files on disk) and
   are computed tile by tile in a fast tier of --fast-limit bytes, through
   mmb's tile cache, with OpenBLAS's cblas_sgemm on each tile product.

     build/bin/ooc-gemm --m 4096 --n 4096 --k 4096 --fast-limit 64M --check
     build/bin/ooc-gemm --m 8192 --n 8192 --k 8192 --capacity storage --json

   The schedule is the one that attains the I/O lower bound: a block of C
   as large as the budget allows (h x w tiles) stays in the fast tier while
   thin panels of A (h tiles down, one across) and B (one down, w across)
   stream through it, the next panels prefetched (MMB_ADVICE_WILLNEED) while
   the current ones compute, the used ones let go first (WONTNEED). C is
   written once, never read (its first panel product overwrites it). The
   blocks come from strips of C that may differ in height (plan_blocks): a
   strip's own rows of A (or columns of B) are read once per block of it,
   the other matrix once per strip. The bytes mmb moved (fetched and
   written home, from the cache's statistics) are printed beside the lower
   bound of Smith, Lowery, Langou and van de Geijn (arXiv:1702.02017): any
   schedule moves at least 2mnk / sqrt(M) - 2M words with M words of fast
   memory.

   With --threads T, the tile products of each panel step are shared by T
   threads, each calling OpenBLAS on one thread: independent products of
   tiles scale better than OpenBLAS's own split of each small one. The same
   product with everything in DRAM (cblas_sgemm on the whole matrices,
   OpenBLAS on the same T threads) is timed in the same run:
   incore_gflops. */
#include <mmb/mmb.h>

#include "blas.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void openblas_set_num_threads(int);

typedef struct options {
  size_t m, n, k, tile, fast_limit;
  const char *capacity;
  int threads;
  bool check, json;
} options;

static const char usage[] =
    "usage: ooc-gemm [--m M] [--n N] [--k K] [--tile T] [--fast-limit SIZE]\n"
    "                [--capacity dram|storage] [--threads T] [--check] [--json]\n"
    "  C = A B, single precision, A M x K and B K x N (default 2048 each), homed in\n"
    "  the capacity tier (dram, the default, or storage: files under MMB_STORAGE_DIR)\n"
    "  and computed in T x T tiles (default: the largest that leaves blocks of C of\n"
    "  at least 6 x 6 tiles) in a fast tier of SIZE bytes\n"
    "  (default 16M; K, M, G suffixes) through mmb's tile cache.\n"
    "  --threads T  threads sharing the tile products (default 1); OpenBLAS's for\n"
    "               the in-core product\n"
    "  --check      compare a sample of C with a double-precision reference\n"
    "  --json       last line: one JSON object with the results\n";

static bool parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || v <= 0) return false;
  double unit = 1;
  if (*end == 'K' || *end == 'k') unit = 1024.0, end++;
  else if (*end == 'M' || *end == 'm') unit = 1048576.0, end++;
  else if (*end == 'G' || *end == 'g') unit = 1073741824.0, end++;
  if (*end || v * unit >= 1e18) return false;
  *out = (size_t)(v * unit);
  return *out > 0;
}

static int parse(int argc, char **argv, options *o) {
  *o = (options){.m = 2048, .n = 2048, .k = 2048, .tile = 0, .fast_limit = 16u << 20,
                 .capacity = "dram", .threads = 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--check")) { o->check = true; continue; }
    if (!strcmp(a, "--json")) { o->json = true; continue; }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage, stdout); exit(0); }
    if (i + 1 >= argc) return fprintf(stderr, "ooc-gemm: %s needs a value\n%s", a, usage), 2;
    const char *v = argv[++i];
    size_t *dim = !strcmp(a, "--m") ? &o->m : !strcmp(a, "--n") ? &o->n : !strcmp(a, "--k") ? &o->k
                : !strcmp(a, "--tile") ? &o->tile : NULL;
    bool ok;
    if (dim) ok = parse_size(v, dim) && *dim < (1u << 20) && (dim != &o->tile || *dim >= 4);
    else if (!strcmp(a, "--fast-limit")) ok = parse_size(v, &o->fast_limit);
    else if (!strcmp(a, "--capacity"))
      ok = !strcmp(v, "dram") || !strcmp(v, "storage"), o->capacity = v;
    else if (!strcmp(a, "--threads")) ok = (o->threads = atoi(v)) >= 1 && o->threads <= 1024;
    else return fprintf(stderr, "ooc-gemm: unknown option '%s'\n%s", a, usage), 2;
    if (!ok) return fprintf(stderr, "ooc-gemm: %s '%s' is not valid\n%s", a, v, usage), 2;
  }
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define TRY(call)                                                                \
  do {                                                                           \
    mmbError e_ = (call);                                                        \
    if (e_ != MMB_OK) {                                                          \
      fprintf(stderr, "ooc-gemm: %s: %s\n", #call, mmb_error_string(e_));        \
      return e_;                                                                 \
    }                                                                            \
  } while (0)

/* A rows x cols float matrix homed in iface, tiled tr x tc. */
static mmbError matrix(mmbMemInterface *iface, size_t rows, size_t cols, size_t tr, size_t tc,
                       mmbArray **out) {
  mmbLayout *l;
  TRY(mmb_layout_create_regular_nd(sizeof(float), 2, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &l));
  mmbError e = mmb_array_create(&(mmbDimensions){2, {rows, cols}}, l, iface, MMB_READ_WRITE, out);
  mmbError e2 = mmb_layout_destroy(l);
  if (e == MMB_OK) e = mmb_array_tile(*out, &(mmbDimensions){2, {tr, tc}});
  return e != MMB_OK ? e : e2;
}

/* Deterministic values in [-1, 1): the same in the out-of-core matrices and
   the in-core copies. */
static float value(size_t i, size_t j, unsigned salt) {
  uint32_t x = (uint32_t)(i * 2654435761u) ^ (uint32_t)(j * 40503u) ^ (salt * 2246822519u);
  x ^= x >> 15;
  x *= 2246822519u;
  x ^= x >> 13;
  return (float)(x & 0xffffff) / 8388608.0f - 1.0f;
}

static void fill(mmbArray *a, size_t rows, size_t cols, unsigned salt, float *copy) {
  float *p = mmb_array_ptr(a);
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++) p[i * cols + j] = copy[i * cols + j] = value(i, j, salt);
}

static mmbArrayTile *tile_at(mmbArray *a, size_t i, size_t j) {
  mmbArrayTile *t = NULL;
  return mmb_tile_at(a, &(mmbIndex){2, {i, j}}, &t) == MMB_OK ? t : NULL;
}

typedef struct team team;

/* A block of C: tile rows [i0, i0 + h), tile columns [j0, j0 + w). */
typedef struct cblock {
  size_t i0, j0, h, w;
} cblock;

typedef struct gemm {
  options o;
  mmbArray *a, *b, *c;
  size_t ktile;        /* the panels' width: A's tiles are tile x ktile, B's ktile x tile */
  size_t mt, nt, kt;   /* tiles down A and C, across B and C, across A and down B */
  size_t bm, bn;       /* the largest block's sides (in auto_tile: the uniform block) */
  size_t held;         /* the most tiles a block holds: its C, two steps of panels */
  cblock *blocks;      /* C's blocks in the order they are computed */
  size_t n_blocks;
  mmbMemSpace *fast;   /* the fast tier (the matrices live in the capacity tier) */
  mmbArrayTile **la, **lb, **lc;
  team *team;          /* NULL: one thread */
} gemm;

/* One panel step of a block: bh x bw products, C += A's panel x B's. */
typedef struct step {
  gemm *g;
  size_t bh, bw;
  float beta;
} step;

/* Takes products of the step until none is left. */
static void products(const step *s, atomic_size_t *next) {
  const gemm *g = s->g;
  for (size_t p; (p = atomic_fetch_add(next, 1)) < s->bh * s->bw;) {
    const mmbArrayTile *ta = g->la[p / s->bw], *tb = g->lb[p % s->bw], *tc = g->lc[p];
    int rows = (int)(ta->upper[0] - ta->lower[0]), depth = (int)(ta->upper[1] - ta->lower[1]);
    int cols = (int)(tb->upper[1] - tb->lower[1]);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, cols, depth, 1.0f, ta->ptr,
                (int)ta->stride[0], tb->ptr, (int)tb->stride[0], s->beta, tc->ptr,
                (int)tc->stride[0]);
  }
}

/* The threads that share each step's products: the caller and helpers,
   woken for each step (a new generation) and counted back when done. */
struct team {
  pthread_mutex_t lock;
  pthread_cond_t go, done;
  pthread_t *helpers;
  int n_helpers, pending;
  unsigned long generation;
  bool stop;
  step step;
  atomic_size_t next;
};

static void *helper(void *arg) {
  team *t = arg;
  unsigned long seen = 0;
  pthread_mutex_lock(&t->lock);
  for (;;) {
    while (t->generation == seen && !t->stop) pthread_cond_wait(&t->go, &t->lock);
    if (t->stop) break;
    seen = t->generation;
    step s = t->step;
    pthread_mutex_unlock(&t->lock);
    products(&s, &t->next);
    pthread_mutex_lock(&t->lock);
    if (--t->pending == 0) pthread_cond_signal(&t->done);
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

static void run_step(gemm *g, const step *s) {
  team *t = g->team;
  if (!t) {
    atomic_size_t next = 0;
    products(s, &next);
    return;
  }
  pthread_mutex_lock(&t->lock);
  t->step = *s;
  atomic_store(&t->next, 0);
  t->pending = t->n_helpers;
  t->generation++;
  pthread_cond_broadcast(&t->go);
  pthread_mutex_unlock(&t->lock);
  products(s, &t->next);
  pthread_mutex_lock(&t->lock);
  while (t->pending) pthread_cond_wait(&t->done, &t->lock);
  pthread_mutex_unlock(&t->lock);
}

static void team_stop(team *t) {
  if (!t) return;
  pthread_mutex_lock(&t->lock);
  t->stop = true;
  pthread_cond_broadcast(&t->go);
  pthread_mutex_unlock(&t->lock);
  for (int i = 0; i < t->n_helpers; i++) pthread_join(t->helpers[i], NULL);
  pthread_mutex_destroy(&t->lock);
  pthread_cond_destroy(&t->go);
  pthread_cond_destroy(&t->done);
  free(t->helpers);
  free(t);
}

/* Up to threads - 1 helpers (fewer if the system gives fewer); NULL for
   one thread. */
static team *team_start(int threads) {
  team *t = threads > 1 ? calloc(1, sizeof *t) : NULL;
  if (!t) return NULL;
  if (!(t->helpers = calloc((size_t)threads - 1, sizeof *t->helpers))) {
    free(t);
    return NULL;
  }
  pthread_mutex_init(&t->lock, NULL);
  pthread_cond_init(&t->go, NULL);
  pthread_cond_init(&t->done, NULL);
  while (t->n_helpers < threads - 1 &&
         pthread_create(&t->helpers[t->n_helpers], NULL, helper, t) == 0)
    t->n_helpers++;
  if (t->n_helpers < threads - 1)
    fprintf(stderr, "ooc-gemm: %d of %d threads started\n", t->n_helpers + 1, threads);
  return t;
}

static mmbError advise_panels(gemm *g, const cblock *b, size_t kk, mmbAdvice advice) {
  for (size_t i = b->i0; i < b->i0 + b->h; i++)
    TRY(mmb_tile_advise(tile_at(g->a, i, kk), g->fast, advice));
  for (size_t j = b->j0; j < b->j0 + b->w; j++)
    TRY(mmb_tile_advise(tile_at(g->b, kk, j), g->fast, advice));
  return MMB_OK;
}

/* Block b's tiles of C, acquired in the fast tier for writing. */
static mmbError acquire_c(gemm *g, const cblock *b) {
  for (size_t i = 0; i < b->h; i++)
    for (size_t j = 0; j < b->w; j++)
      TRY(mmb_tile_acquire(tile_at(g->c, b->i0 + i, b->j0 + j), g->fast, MMB_WRITE,
                           &g->lc[i * b->w + j]));
  return MMB_OK;
}

/* Block b's panels of A and B at step kk, acquired in the fast tier. */
static mmbError acquire_panels(gemm *g, const cblock *b, size_t kk) {
  for (size_t i = 0; i < b->h; i++)
    TRY(mmb_tile_acquire(tile_at(g->a, b->i0 + i, kk), g->fast, MMB_READ, &g->la[i]));
  for (size_t j = 0; j < b->w; j++)
    TRY(mmb_tile_acquire(tile_at(g->b, kk, b->j0 + j), g->fast, MMB_READ, &g->lb[j]));
  return MMB_OK;
}

static mmbError release_panels(gemm *g, const cblock *b) {
  for (size_t i = 0; i < b->h; i++) TRY(mmb_tile_release(g->la[i]));
  for (size_t j = 0; j < b->w; j++) TRY(mmb_tile_release(g->lb[j]));
  return MMB_OK;
}

/* One block of C: its tiles acquired for writing, every panel of A and B
   through it, then let go (written home behind). */
static mmbError block(gemm *g, const cblock *b) {
  step s = {.g = g, .bh = b->h, .bw = b->w};
  /* C's tiles first: room made for them now never evicts a panel on its way */
  TRY(acquire_c(g, b));
  for (size_t kk = 0; kk < g->kt; kk++) {
    TRY(acquire_panels(g, b, kk));
    if (kk + 1 < g->kt) TRY(advise_panels(g, b, kk + 1, MMB_ADVICE_WILLNEED));
    s.beta = kk ? 1.0f : 0.0f;   /* C's first product overwrites it */
    run_step(g, &s);
    TRY(release_panels(g, b));
    TRY(advise_panels(g, b, kk, MMB_ADVICE_WONTNEED));
  }
  for (size_t i = 0; i < b->h; i++)
    for (size_t j = 0; j < b->w; j++) {
      TRY(mmb_tile_release(g->lc[i * b->w + j]));
      TRY(mmb_tile_advise(tile_at(g->c, b->i0 + i, b->j0 + j), g->fast, MMB_ADVICE_WONTNEED));
    }
  return MMB_OK;
}

/* Elements in `count` tiles of `tile` from tile `from`, of `total` in all. */
static size_t span(size_t from, size_t count, size_t tile, size_t total) {
  return ((from + count) * tile < total ? (from + count) * tile : total) - from * tile;
}

/* Times the products of block b's kt steps on its tiles in the fast tier,
   nothing moving: its C and its first panels acquired once, every step run
   on them; *flops, theirs. Then the three matrices leave the fast tier. */
static mmbError products_alone(gemm *g, const cblock *b, double *seconds, double *flops) {
  step s = {.g = g, .bh = b->h, .bw = b->w};
  TRY(acquire_c(g, b));
  TRY(acquire_panels(g, b, 0));
  run_step(g, &s);   /* beta 0: C's tiles written, their pages touched, untimed */
  s.beta = 1.0f;
  double t0 = now();
  for (size_t kk = 0; kk < g->kt; kk++) run_step(g, &s);
  *seconds = now() - t0;
  *flops = 2.0 * (double)(g->kt * span(0, 1, g->ktile, g->o.k)) *
           (double)span(b->i0, b->h, g->o.tile, g->o.m) * (double)span(b->j0, b->w, g->o.tile, g->o.n);
  TRY(release_panels(g, b));
  for (size_t p = 0; p < b->h * b->w; p++) TRY(mmb_tile_release(g->lc[p]));
  TRY(mmb_array_evict(g->a, g->fast));
  TRY(mmb_array_evict(g->b, g->fast));
  TRY(mmb_array_evict(g->c, g->fast));
  return MMB_OK;
}

/* The fast tier's budget, a tile of C's bytes and a thin tile of a panel's. */
typedef struct fast_room {
  size_t budget, c_bytes, panel_bytes;
} fast_room;

/* The widest block of h tiles of C down that fits the budget with its
   panels of A and B (h and w thin tiles) and the next two, prefetched:
   h w c + 2 (h + w) p <= budget, solved for w; 0: none. */
static size_t widest(const fast_room *r, size_t h) {
  if (2 * h * r->panel_bytes > r->budget) return 0;
  return (r->budget - 2 * h * r->panel_bytes) / (h * r->c_bytes + 2 * r->panel_bytes);
}

/* Whether a block of h x w tiles of C fits (widest()). */
static bool fits(const fast_room *r, size_t h, size_t w) { return w <= widest(r, h); }

/* How many blocks a strip of h tiles down and `across` tiles wide is cut
   into: as few as fit; 0: none fits. */
static size_t strip_blocks(const fast_room *r, size_t h, size_t across) {
  size_t w = widest(r, h) < across ? widest(r, h) : across;
  return w ? (across + w - 1) / w : 0;
}

/* The one block size for all of C (bm x bn tiles) that moves the fewest
   bytes: A is read once per column of blocks, B once per row. Whole blocks
   count: 16 tiles in blocks of 7 is 3 blocks, as 6 is. It picks the tile
   (auto_tile); plan_blocks then cuts C more finely. */
static bool block_for(gemm *g, const fast_room *r) {
  double best = 0;
  g->bm = g->bn = 0;
  for (size_t bm = 1; bm <= g->mt; bm++)
    for (size_t bn = 1; bn <= g->nt; bn++) {
      if (!fits(r, bm, bn)) break;
      double a_reads = (double)((g->nt + bn - 1) / bn), b_reads = (double)((g->mt + bm - 1) / bm);
      double bytes = a_reads * (double)g->o.m * (double)g->o.k +
                     b_reads * (double)g->o.k * (double)g->o.n;
      if (!g->bm || bytes < best || (bytes == best && bm * bn < g->bm * g->bn)) {
        best = bytes;
        g->bm = bm;
        g->bn = bn;
      }
    }
  return g->bm > 0;
}

/* C cut into strips along one side: `down` tiles of `tile` elements cover
   that side's `extent`, `across` tiles the other side's `other`. A strip
   of h tiles is cut into strip_blocks() blocks and costs its own rows of
   its matrix once per block plus all of the other matrix once, times k.
   Strips of one height need not be best: 16 tiles a side with room for
   6 x 8 cost 6 n^2 words in strips of 8 (3 blocks each) but 5.56 n^2 in
   strips of 9 and 7 (3 and 2 blocks). A dynamic programme over the first
   r tiles finds the heights: cut[r] is the last strip's. Only the tallest
   strip of each block count, or all r tiles, can be best. Returns the
   bytes of A and B moved (C is written once whatever the cut), INFINITY
   when no block fits. */
static double plan_strips(size_t down, size_t across, size_t tile, size_t extent, size_t other,
                          size_t k, const fast_room *room, size_t *cut) {
  double *cost = malloc((down + 1) * sizeof *cost);
  size_t *count = calloc(down + 2, sizeof *count);   /* blocks of a strip of h tiles; 0: none */
  if (!cost || !count) {
    free(cost);
    free(count);
    return INFINITY;
  }
  for (size_t h = 1; h <= down && (count[h] = strip_blocks(room, h, across)); h++) continue;
  cost[0] = 0;
  for (size_t r = 1; r <= down; r++) {
    cost[r] = INFINITY;
    cut[r] = 0;
    for (size_t h = 1; h <= r && count[h]; h++) {
      if (h < r && count[h + 1] == count[h]) continue;   /* a taller strip of as many blocks */
      double rows = (double)span(r - h, h, tile, extent);
      double bytes = cost[r - h] + (rows * (double)count[h] + (double)other) * (double)k;
      if (bytes < cost[r]) cost[r] = bytes, cut[r] = h;
    }
  }
  double best = cost[down] * sizeof(float);
  free(cost);
  free(count);
  return best;
}

/* C's blocks in the order they are computed: strips of rows or of columns,
   whichever moves fewer bytes (plan_strips), top to bottom, each strip's
   blocks of near-equal widths left to right. Strips cut into as many
   blocks share their tiles evenly: the same bytes, and no block taller
   than it needs to be (strips of 10, 10, 6 and 6 tiles, one block each,
   become four of 8). */
static bool plan_blocks(gemm *g, const fast_room *room) {
  size_t most = g->mt > g->nt ? g->mt : g->nt, n_strips = 0;
  size_t *by_rows = calloc(g->mt + 1, sizeof *by_rows);
  size_t *by_cols = calloc(g->nt + 1, sizeof *by_cols);
  size_t *strip = calloc(2 * most, sizeof *strip), *count;   /* tiles; then blocks */
  bool ok = false;
  if (!by_rows || !by_cols || !strip) goto out;
  count = strip + most;
  double rows = plan_strips(g->mt, g->nt, g->o.tile, g->o.m, g->o.n, g->o.k, room, by_rows);
  double cols = plan_strips(g->nt, g->mt, g->o.tile, g->o.n, g->o.m, g->o.k, room, by_cols);
  if (isinf(rows) && isinf(cols)) goto out;
  bool across_rows = rows <= cols;
  size_t down = across_rows ? g->mt : g->nt, across = across_rows ? g->nt : g->mt;
  size_t *cut = across_rows ? by_rows : by_cols;
  for (size_t r = down; r; r -= cut[r], n_strips++) {
    strip[n_strips] = cut[r];
    count[n_strips] = strip_blocks(room, cut[r], across);
  }
  for (size_t i = 0; i < n_strips; i++) {   /* each count of blocks, from its first strip */
    size_t tiles = 0, share = 0, j = 0;
    while (count[j] != count[i]) j++;
    if (j < i) continue;
    for (j = i; j < n_strips; j++)
      if (count[j] == count[i]) tiles += strip[j], share++;
    /* each height between the shortest and the tallest of the count's
       strips, so each strip keeps its count (strip_blocks grows with h) */
    for (size_t s = 0, at = i; s < share; at++)
      if (count[at] == count[i]) strip[at] = tiles / share + (s++ < tiles % share);
  }
  size_t n = 0;
  for (size_t i = 0; i < n_strips; i++) n += count[i];
  if (!(g->blocks = calloc(n, sizeof *g->blocks))) goto out;
  g->n_blocks = n;
  g->bm = g->bn = g->held = 0;
  for (size_t i = n_strips, top = 0, at = 0; i--; top += strip[i]) {   /* from the top */
    size_t h = strip[i], blocks = count[i];
    for (size_t b = 0, from = 0; b < blocks; b++) {
      size_t width = across / blocks + (b < across % blocks);
      cblock c = across_rows ? (cblock){top, from, h, width} : (cblock){from, top, width, h};
      g->blocks[at++] = c;
      from += width;
      if (c.h > g->bm) g->bm = c.h;
      if (c.w > g->bn) g->bn = c.w;
      if (c.h * c.w + 2 * (c.h + c.w) > g->held) g->held = c.h * c.w + 2 * (c.h + c.w);
    }
  }
  ok = true;
out:
  free(by_rows);
  free(by_cols);
  free(strip);
  return ok;
}

static double max_rel_error(const gemm *g, const float *a, const float *b) {
  const float *c = mmb_array_ptr(g->c);
  size_t m = g->o.m, n = g->o.n, k = g->o.k;
  double worst = 0;
  for (size_t s = 0; s < 4096; s++) {   /* a sample, corners included */
    size_t i = s == 0 ? 0 : s == 1 ? m - 1 : (s * 7919u) % m;
    size_t j = s == 0 ? 0 : s == 1 ? n - 1 : (s * 104729u) % n;
    double ref = 0, mag = 0;
    for (size_t p = 0; p < k; p++) {
      ref += (double)a[i * k + p] * (double)b[p * n + j];
      mag += fabs((double)a[i * k + p] * (double)b[p * n + j]);
    }
    double err = fabs((double)c[i * n + j] - ref) / (mag > 0 ? mag : 1);
    if (err > worst) worst = err;
  }
  return worst;
}

/* The product in core (timed), then out of core through the cache
   (timed), and what each did. */
static mmbError multiply(gemm *gp, float *a, float *b, float *c, size_t space_bytes) {
  gemm g = *gp;
  const options *o = &g.o;
  fill(g.a, o->m, o->k, 1, a);
  fill(g.b, o->k, o->n, 2, b);
  /* both Cs touched before either is timed: neither pays the first touch */
  memset(c, 0, o->m * o->n * sizeof *c);
  memset(mmb_array_ptr(g.c), 0, o->m * o->n * sizeof *c);
  openblas_set_num_threads(o->threads);

  /* in core: the same product on the same threads, everything in DRAM */
  double t0 = now();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)o->m, (int)o->n, (int)o->k, 1.0f,
              a, (int)o->k, b, (int)o->n, 0.0f, c, (int)o->n);
  double incore = now() - t0;

  /* the same tile products with nothing moving: the first block's, on
     tiles laid out as the fast tier lays them (its C and one panel of A and
     of B acquired there), by the same team: what OpenBLAS makes of these
     products, the out-of-core rate's own limit. Then all of it leaves the
     fast tier, before the out-of-core run and its count of bytes. The
     fast tier's pages are then touched, as in core's were: neither run
     pays the first touch (on huge pages, several per cent of the run). */
  openblas_set_num_threads(1);
  double tiles_seconds, first_flops;
  TRY(products_alone(&g, &g.blocks[0], &tiles_seconds, &first_flops));
  /* out of core: the products shared by the team, OpenBLAS on one thread each */
  mmbCacheStats before;
  TRY(mmb_space_get_cache_stats(g.fast, &before));
  t0 = now();
  for (size_t i = 0; i < g.n_blocks; i++) TRY(block(&g, &g.blocks[i]));
  TRY(mmb_array_flush(g.c));   /* every tile of C home */
  double seconds = now() - t0;
  mmbCacheStats st;
  TRY(mmb_space_get_cache_stats(g.fast, &st));
  double flops = 2.0 * (double)o->m * (double)o->n * (double)o->k;
  unsigned long long moved = (st.fetched_bytes - before.fetched_bytes) +
                             (st.writeback_bytes - before.writeback_bytes);
  double words = (double)o->fast_limit / sizeof(float);
  double bound = fmax(0.0, flops / sqrt(words) - 2.0 * words) * sizeof(float);   /* 2mnk/sqrt(M) - 2M */
  double err = o->check ? max_rel_error(&g, a, b) : -1.0;

  cnn_blas blas = {0};
  snprintf(blas.kernel, sizeof blas.kernel, "?");
  (void)cnn_blas_measure(&blas);
  printf("C = A B: %zu x %zu x %zu, tiles of %zu (panels %zu thin), fast tier %.1f MiB (C in %zu "
         "blocks, the largest %zu x %zu tiles), capacity %s\n", o->m, o->n, o->k, o->tile, g.ktile,
         o->fast_limit / 1048576.0, g.n_blocks, g.bm, g.bn, o->capacity);
  printf("  out of core %.3f s, %.1f GFLOP/s; in core (all in DRAM) %.3f s, %.1f GFLOP/s: %.2fx\n",
         seconds, flops / seconds * 1e-9, incore, flops / incore * 1e-9, incore / seconds);
  printf("  the same tile products in the fast tier, nothing moving: %.1f GFLOP/s (%.2fx in core)\n",
         first_flops / tiles_seconds * 1e-9, first_flops / tiles_seconds * incore / flops);
  printf("  moved %.1f MiB; I/O lower bound %.1f MiB: %.2fx the bound\n", moved / 1048576.0,
         bound / 1048576.0, bound > 0 ? moved / bound : 0.0);
  if (o->check)
    printf("  max relative error %.2e over a sample of C (k eps = %.2e)\n", err, o->k * 5.96e-8);
  printf("  OpenBLAS kernel %s, %d thread(s)\n", blas.kernel, o->threads);
  if (o->json)
    printf("{\"m\": %zu, \"n\": %zu, \"k\": %zu, \"tile\": %zu, \"fast_budget_bytes\": %zu, "
           "\"fast_space_bytes\": %zu, \"blocks\": %zu, \"block_tiles\": [%zu, %zu], "
           "\"capacity\": \"%s\", \"threads\": %d, "
           "\"seconds\": %.6f, \"gflops\": %.6g, \"incore_seconds\": %.6f, \"incore_gflops\": %.6g, "
           "\"tile_gflops\": %.6g, "
           "\"bytes_moved\": %llu, \"io_lower_bound_bytes\": %.0f, \"max_rel_error\": %.3e, "
           "\"blas_kernel\": \"%s\"}\n",
           o->m, o->n, o->k, o->tile, o->fast_limit, space_bytes, g.n_blocks, g.bm, g.bn,
           o->capacity, o->threads, seconds, flops / seconds * 1e-9, incore, flops / incore * 1e-9,
           first_flops / tiles_seconds * 1e-9, moved, bound, err, blas.kernel);
  return MMB_OK;
}

static size_t ktile_of(size_t tile) { return tile / 4 >= 16 ? tile / 4 : tile; }

/* The largest tile, from 1024 down, whose best block of C is at least 6 x 6
   tiles (or all of C): large tiles for OpenBLAS, small enough that whole
   blocks do not waste the budget. */
static size_t auto_tile(const options *o) {
  for (size_t t = 1024; t > 32; t /= 2) {
    gemm g = {.o = *o, .mt = (o->m + t - 1) / t, .nt = (o->n + t - 1) / t};
    size_t bytes = t * t * sizeof(float);
    if (block_for(&g, &(fast_room){o->fast_limit, bytes, bytes * ktile_of(t) / t}) &&
        ((g.bm >= 6 || g.bm == g.mt) && (g.bn >= 6 || g.bn == g.nt)))
      return t;
  }
  return 32;
}

/* The fast tier: a space holding the tiles of the largest block's step as
   mmb's pool carves them (its segments), the cache's budget the tiles'
   bytes themselves. */
static mmbError fast_tier(gemm *g, size_t *space_bytes) {
  mmbTileIteratorOptions fo = {.depth = g->held > 2 ? g->held - 2 : 1};
  TRY(mmb_tile_iterator_footprint(g->c, &fo, space_bytes));   /* C has the largest tiles */
  TRY(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = *space_bytes,
                                                                 .name = "fast tier"}, &g->fast));
  TRY(mmb_space_set_cache(g->fast, &(mmbCacheConfig){.budget_bytes = g->o.fast_limit,
                                                    .clean_share = 0.5}));
  return MMB_OK;
}

/* C's blocks, or why there are none. */
static mmbError plan(gemm *g) {
  const options *o = &g->o;
  size_t tile_bytes = o->tile * o->tile * sizeof(float);
  fast_room room = {o->fast_limit, tile_bytes, tile_bytes * g->ktile / o->tile};
  if (!fits(&room, 1, 1)) {
    fprintf(stderr, "ooc-gemm: a fast tier of %zu bytes cannot hold a tile of C (%zu bytes) "
            "with its panels of A and B and the next two: raise --fast-limit or lower "
            "--tile\n", o->fast_limit, tile_bytes);
    return MMB_INVALID_ARG;
  }
  if (!plan_blocks(g, &room)) {
    fprintf(stderr, "ooc-gemm: no memory to plan C's blocks\n");
    return MMB_OUT_OF_MEMORY;
  }
  return MMB_OK;
}

/* The in-core copies and the team, the product (multiply), then both gone. */
static mmbError compute(gemm *g, size_t space_bytes) {
  const options *o = &g->o;
  float *a = calloc(o->m * o->k, sizeof *a), *b = calloc(o->k * o->n, sizeof *b);
  float *c = calloc(o->m * o->n, sizeof *c);
  g->la = calloc(g->bm, sizeof *g->la);
  g->lb = calloc(g->bn, sizeof *g->lb);
  g->lc = calloc(g->bm * g->bn, sizeof *g->lc);
  g->team = team_start(o->threads);
  mmbError err = a && b && c && g->la && g->lb && g->lc ? multiply(g, a, b, c, space_bytes)
                                                        : MMB_OUT_OF_MEMORY;
  team_stop(g->team);
  free(a);
  free(b);
  free(c);
  free(g->la);
  free(g->lb);
  free(g->lc);
  return err;
}

/* The first error of err and e, e reported when it is one. */
static mmbError undo(mmbError err, mmbError e, const char *what) {
  if (e != MMB_OK) fprintf(stderr, "ooc-gemm: %s: %s\n", what, mmb_error_string(e));
  return err != MMB_OK ? err : e;
}

static mmbError run(const options *given) {
  options chosen = *given;
  if (!chosen.tile) chosen.tile = auto_tile(given);
  const options *o = &chosen;
  mmbMemSpace *capacity;
  bool storage = !strcmp(o->capacity, "storage");
  TRY(mmb_request_space(storage ? MMB_STORAGE : MMB_DRAM, MMB_CPU, NULL, &capacity));
  mmbMemInterface *home = NULL;
  mmbError err = undo(MMB_OK, mmb_request_interface(capacity, NULL, &home), "the capacity tier");
  /* panels a quarter of a tile thin: their room goes to C's block instead */
  size_t ktile = ktile_of(o->tile), space_bytes = 0;
  gemm g = {.o = *o, .ktile = ktile, .mt = (o->m + o->tile - 1) / o->tile,
            .nt = (o->n + o->tile - 1) / o->tile, .kt = (o->k + ktile - 1) / ktile};
  if (err == MMB_OK) err = matrix(home, o->m, o->k, o->tile, g.ktile, &g.a);
  if (err == MMB_OK) err = matrix(home, o->k, o->n, g.ktile, o->tile, &g.b);
  if (err == MMB_OK) err = matrix(home, o->m, o->n, o->tile, o->tile, &g.c);
  if (err != MMB_OK && home)   /* (a failed interface was reported by undo) */
    fprintf(stderr, "ooc-gemm: the matrices in the capacity tier: %s\n", mmb_error_string(err));
  if (err == MMB_OK) err = plan(&g);
  if (err == MMB_OK) err = fast_tier(&g, &space_bytes);
  if (err == MMB_OK) err = compute(&g, space_bytes);
  /* whatever failed, everything made is undone: the matrices (their cached
     copies with them), then the tiers */
  free(g.blocks);
  if (g.a) err = undo(err, mmb_array_destroy(g.a), "mmb_array_destroy(A)");
  if (g.b) err = undo(err, mmb_array_destroy(g.b), "mmb_array_destroy(B)");
  if (g.c) err = undo(err, mmb_array_destroy(g.c), "mmb_array_destroy(C)");
  if (home) err = undo(err, mmb_interface_destroy(home), "mmb_interface_destroy");
  if (g.fast) err = undo(err, mmb_space_release(g.fast), "mmb_space_release(fast tier)");
  return undo(err, mmb_space_release(capacity), "mmb_space_release(capacity tier)");
}

int main(int argc, char **argv) {
  cnn_blas_start(argc, argv);
  options o;
  int bad = parse(argc, argv, &o);
  if (bad) return bad;
  if (mmb_init(NULL) != MMB_OK) return 1;
  mmbError e = run(&o);
  mmbError f = mmb_finalize();
  return e != MMB_OK ? 1 : f != MMB_OK;
}
