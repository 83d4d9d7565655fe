/* The host copy engine: strided copies between host-accessible memory.
   copy.c has already folded every dimension that is contiguous on both sides,
   so what reaches here is one run, or rows with real gaps between them.

   Two choices are made per copy, from its total size:
   - Stores. A copy larger than half the last-level cache (hwloc's size of
     the cache the first core uses, not the CPUID leaf a VM inflates, at
     most 16 MiB for each PU sharing it; or MMB_COPY_NT_BYTES) cannot
     leave its destination in cache, so it writes
     with non-temporal stores (AVX-512 or AVX2, chosen at init): no
     read-for-ownership of every destination line, about a third less
     traffic. Smaller copies use memcpy, whose cached stores serve a reader
     that follows.
   - Threads. A copy of at least 4 MiB is split along its outermost dimension
     over the threads its interfaces ask for (mmbMemInterfaceConfig.
     copy_threads, else MMB_COPY_THREADS, else 1): helper threads of the
     engine's, made on first use, bound near the destination's NUMA node,
     and the caller, each taking the next chunk of about 1 MiB as it is
     done with its last (mmb__engine_deal).
     One split copy runs at a time; a copy that finds the helpers busy runs
     on its caller's thread alone. Record conversions split their work
     over the same helpers (mmb__engine_split).
   bench/copy measures both against a non-temporal copy and a 2-thread copy
   of its own. */
#include "alloc/move/move.h"

#include <immintrin.h>
#include <string.h>

#define SPLIT_MIN ((size_t)4 << 20)   /* bytes: smaller copies stay on one thread */
#define MAX_THREADS 64u
#define NT_MIN_ROW 256                /* narrower rows: memcpy (heads and tails dominate) */

/* A 2-D kernel: `rows` rows of `width` bytes, `dpitch` and `spitch` apart. */
typedef void (*rows_fn)(char *dst, size_t dpitch, const char *src, size_t spitch, size_t width,
                        size_t rows);

static void rows_memcpy(char *d, size_t dpitch, const char *s, size_t spitch, size_t width,
                        size_t rows) {
  for (size_t r = 0; r < rows; r++) memcpy(d + r * dpitch, s + r * spitch, width);
}

/* The unaligned head and the tail of a streamed row, with cached stores. */
static inline void small_copy(char *d, const char *s, size_t n) {
  if (n) memcpy(d, s, n);
}

/* Rows written with streaming stores of V-byte vectors: cached stores up to
   the destination's alignment and for the tail, four vectors per step. One
   kernel per instruction set. */
#define STREAMED_ROWS(name, isa, V, vec_t, load, stream)                                       \
  __attribute__((target(isa))) static void name(char *dst, size_t dpitch, const char *src,     \
                                                size_t spitch, size_t width, size_t rows) {    \
    if (width < NT_MIN_ROW) {                                                                  \
      rows_memcpy(dst, dpitch, src, spitch, width, rows);                                      \
      return;                                                                                  \
    }                                                                                          \
    for (size_t r = 0; r < rows; r++) {                                                        \
      char *d = dst + r * dpitch;                                                              \
      const char *s = src + r * spitch;                                                        \
      size_t n = width, head = (size_t)(-(uintptr_t)d & (V - 1));                              \
      small_copy(d, s, head);                                                                  \
      d += head, s += head, n -= head;                                                         \
      for (; n >= 4 * V; n -= 4 * V, d += 4 * V, s += 4 * V) {                                 \
        vec_t a = load((const void *)s), b = load((const void *)(s + V));                      \
        vec_t c = load((const void *)(s + 2 * V)), e = load((const void *)(s + 3 * V));        \
        stream((void *)d, a);                                                                  \
        stream((void *)(d + V), b);                                                            \
        stream((void *)(d + 2 * V), c);                                                        \
        stream((void *)(d + 3 * V), e);                                                        \
      }                                                                                        \
      for (; n >= V; n -= V, d += V, s += V) stream((void *)d, load((const void *)s));         \
      small_copy(d, s, n);                                                                     \
    }                                                                                          \
  }
STREAMED_ROWS(rows_nt512, "avx512f", 64, __m512i, _mm512_loadu_si512, _mm512_stream_si512)
STREAMED_ROWS(rows_nt256, "avx2", 32, __m256i, _mm256_loadu_si256, _mm256_stream_si256)

static struct {
  size_t nt_bytes;   /* copies of at least this many bytes stream; SIZE_MAX: never */
  unsigned threads;  /* MMB_COPY_THREADS */
  rows_fn nt_rows;   /* NULL: no streaming stores on this CPU */
} config = {SIZE_MAX, 1, NULL};

static void copy_rows(rows_fn f, char *dst, const size_t *ds, const char *src, const size_t *ss,
                      size_t ndims, const size_t *dims) {
  if (ndims <= 2) {
    f(dst, ds[1], src, ss[1], dims[0], ndims == 2 ? dims[1] : 1);
    return;
  }
  size_t k = ndims - 1;
  for (size_t i = 0; i < dims[k]; i++) copy_rows(f, dst + i * ds[k], ds, src + i * ss[k], ss, k, dims);
}

/* ---- the split work ----------------------------------------------------------- */

typedef struct job {
  void (*part)(void *arg, unsigned i, unsigned parts);
  void *arg;
  unsigned parts;
  int numa;
} job;

/* A split copy. */
typedef struct copy_job {
  rows_fn f;
  char *dst;
  const char *src;
  size_t ds[MMB_MAX_DIMS + 1], ss[MMB_MAX_DIMS + 1], dims[MMB_MAX_DIMS + 1], ndims;
  mmb__engine_deal deal;   /* of the outermost index (of bytes for one run) */
} copy_job;

/* A part: chunks of the outermost index as they are dealt. */
static void copy_part(void *arg, unsigned i, unsigned parts) {
  copy_job *j = arg;
  size_t dims[MMB_MAX_DIMS + 1], k = j->ndims - 1, lo, hi;
  memcpy(dims, j->dims, sizeof dims);
  while (mmb__engine_deal_next(&j->deal, parts, &lo, &hi)) {
    if (j->ndims < 2) {
      j->f(j->dst + lo, 0, j->src + lo, 0, hi - lo, 1);
      continue;
    }
    dims[k] = hi - lo;
    copy_rows(j->f, j->dst + lo * j->ds[k], j->ds, j->src + lo * j->ss[k], j->ss, j->ndims, dims);
  }
  if (j->f != rows_memcpy) _mm_sfence();
}

static struct {
  pthread_mutex_t run;               /* one split copy at a time (trylock) */
  pthread_mutex_t lock;              /* the rest */
  pthread_cond_t go, done;
  pthread_t helpers[MAX_THREADS];
  unsigned n_helpers, pending;
  unsigned long generation;
  bool stop;
  job job;
} pool = {.run = PTHREAD_MUTEX_INITIALIZER, .lock = PTHREAD_MUTEX_INITIALIZER,
          .go = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static void *helper(void *arg) {
  unsigned id = (unsigned)(uintptr_t)arg;   /* 1..: part 0 is the caller's */
  /* 0, not the generation now: the job that made this helper has already
     moved it on (under the lock the helper waits for), and is its first */
  unsigned long seen = 0;
  int bound = -1;
  pthread_mutex_lock(&pool.lock);
  for (;;) {
    while (pool.generation == seen && !pool.stop) pthread_cond_wait(&pool.go, &pool.lock);
    if (pool.stop) break;
    seen = pool.generation;
    job j = pool.job;
    pthread_mutex_unlock(&pool.lock);
    if (id < j.parts) {
      if (j.numa >= 0 && j.numa != bound) {
        mmb__os_bind_thread(pthread_self(), j.numa);
        bound = j.numa;
      }
      j.part(j.arg, id, j.parts);
    }
    pthread_mutex_lock(&pool.lock);
    if (--pool.pending == 0) pthread_cond_signal(&pool.done);
  }
  pthread_mutex_unlock(&pool.lock);
  return NULL;
}

/* Runs j over its parts with the helpers; false (nothing done) when another
   split holds them or none could be started. */
static bool run_split(job *j) {
  if (pthread_mutex_trylock(&pool.run) != 0) return false;
  pthread_mutex_lock(&pool.lock);
  while (pool.n_helpers + 1 < j->parts &&
         pthread_create(&pool.helpers[pool.n_helpers], NULL, helper,
                        (void *)(uintptr_t)(pool.n_helpers + 1)) == 0)
    pool.n_helpers++;
  if (!pool.n_helpers) {
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&pool.run);
    return false;
  }
  if (j->parts > pool.n_helpers + 1) j->parts = pool.n_helpers + 1;
  pool.job = *j;
  pool.pending = pool.n_helpers;
  pool.generation++;
  pthread_cond_broadcast(&pool.go);
  pthread_mutex_unlock(&pool.lock);
  j->part(j->arg, 0, j->parts);
  pthread_mutex_lock(&pool.lock);
  while (pool.pending) pthread_cond_wait(&pool.done, &pool.lock);
  pthread_mutex_unlock(&pool.lock);
  pthread_mutex_unlock(&pool.run);
  return true;
}

/* ---- entry points ------------------------------------------------------------ */

unsigned mmb__engine_threads(size_t bytes, unsigned threads) {
  if (bytes < SPLIT_MIN) return 1;
  return (unsigned)mmb__min(threads ? threads : config.threads, MAX_THREADS);
}

void mmb__engine_split(void (*part)(void *arg, unsigned i, unsigned parts), void *arg,
                       unsigned parts, int numa) {
  job j = {.part = part, .arg = arg, .parts = parts, .numa = numa};
  if (parts < 2 || !run_split(&j)) part(arg, 0, 1);
}

void mmb__engine_copy(char *dst, const size_t *ds, const char *src, const size_t *ss,
                      size_t ndims, const size_t *dims, unsigned threads, int numa) {
  size_t bytes = 1;
  for (size_t k = 0; k < ndims; k++) bytes *= dims[k];
  copy_job j = {.f = config.nt_rows && bytes >= config.nt_bytes ? config.nt_rows : rows_memcpy,
                .dst = dst, .src = src, .ndims = ndims};
  memcpy(j.ds, ds, ndims * sizeof *ds);
  memcpy(j.ss, ss, ndims * sizeof *ss);
  memcpy(j.dims, dims, ndims * sizeof *dims);
  size_t outer = ndims == 1 ? bytes / 64 : dims[ndims - 1];
  if (ndims == 1) mmb__engine_deal_init(&j.deal, bytes, 64, 1);
  else mmb__engine_deal_init(&j.deal, outer, 1, outer ? bytes / outer : 1);
  mmb__engine_split(copy_part, &j, (unsigned)mmb__min(mmb__engine_threads(bytes, threads), outer),
                    numa);
}

bool mmb__engine_streams(size_t bytes) { return config.nt_rows && bytes >= config.nt_bytes; }

void mmb__engine_run(char *dst, const char *src, size_t bytes, bool stream) {
  (stream && config.nt_rows ? config.nt_rows : rows_memcpy)(dst, 0, src, 0, bytes, 1);
}

mmbError mmb__engine_init(void) {
  size_t nt = 0, llc = mmb__os_llc_bytes();
  const char *env = getenv("MMB_COPY_NT_BYTES");
  if (env && !mmb__parse_size(env, &nt)) {
    mmb__log(MMB_LOG_ERROR, "MMB_COPY_NT_BYTES='%s' is not a size (bytes with an optional K, M, "
             "G or T suffix; 0: never stream)", env);
    return MMB_INVALID_ARG;
  }
  config.nt_bytes = env ? (nt ? nt : SIZE_MAX) : llc ? llc / 2 : (size_t)16 << 20;
  size_t threads = 1;
  if ((env = getenv("MMB_COPY_THREADS")) &&
      (!mmb__parse_size(env, &threads) || threads < 1 || threads > MAX_THREADS)) {
    mmb__log(MMB_LOG_ERROR, "MMB_COPY_THREADS='%s' is not a thread count (1 to %u)", env,
             MAX_THREADS);
    return MMB_INVALID_ARG;
  }
  config.threads = (unsigned)threads;
  __builtin_cpu_init();
  config.nt_rows = __builtin_cpu_supports("avx512f") ? rows_nt512
                   : __builtin_cpu_supports("avx2") ? rows_nt256 : NULL;
  mmb__log(MMB_LOG_DEBUG, "copy engine: streaming stores from %zu bytes (%s), %u thread(s) per copy",
           config.nt_bytes, config.nt_rows == rows_nt512 ? "AVX-512" : config.nt_rows ? "AVX2" : "none",
           config.threads);
  return MMB_OK;
}

void mmb__engine_finalize(void) {
  pthread_mutex_lock(&pool.run);   /* no split copy in flight */
  pthread_mutex_lock(&pool.lock);
  pool.stop = true;
  pthread_cond_broadcast(&pool.go);
  unsigned n = pool.n_helpers;
  pthread_mutex_unlock(&pool.lock);
  for (unsigned i = 0; i < n; i++) pthread_join(pool.helpers[i], NULL);
  pthread_mutex_lock(&pool.lock);
  pool.n_helpers = 0;
  pool.stop = false;
  pthread_mutex_unlock(&pool.lock);
  pthread_mutex_unlock(&pool.run);
}
