/* bench/alloc: mmb's pool (through handles: mmb_allocate, mmb_allocation_ptr,
   mmb_free; and through bare pointers: mmb_ptr_allocate, mmb_ptr_deallocate, on pools
   of their own, in the same rounds) and regions against the best general-purpose
   allocators, glibc malloc, mimalloc and jemalloc, each measured in a process
   of its own: an allocator linked or preloaded into the same process as
   another interposes malloc and silently replaces it, so each baseline is
   this program run again as a child (`--child NAME`), with LD_PRELOAD naming
   mimalloc's or jemalloc's library, or nothing for glibc. The children and
   mmb's runs alternate, REPS rounds; each figure is the median round's, with
   the worst round beside it.

   Each allocator's calls are inlined into its own copy of every pattern's
   loop (bench/alloc_patterns.h, included once per allocator), as a program
   calls its allocator: through a function pointer both sides would pay a
   call that compresses the ratios.

   Patterns (blocks of 64-320 B from a fixed sequence, unless said), ns per
   allocate+free pair:
     pairs            allocate, then free at once
     window W         W blocks live; each step frees a random one and
                      allocates in its place (W = 1, 64, 1000, 100000)
     batch N          allocate 1000, free them in the same / reverse order
     a region's job   allocate 4096, then free them all: what a region does
                      with one reset (glibc's figure for it is the bound the
                      region is held to)
     2 threads        each thread a window of 64 (mmb: a thread-safe pool)
     cross-thread     one thread allocates, another frees (ns per block)
     random           RMM's random_allocations: 1 B - 4 MiB log-uniform,
                      random free order, up to 512 MiB live (ns per call)
   and memory: bytes held per byte requested at the peak of window 100000,
   run first (mmb: the growth of a fresh pool's reserved bytes; the others:
   the growth of the process's resident memory; the most any round saw).
   Every process pins its threads the same way: the main thread to the
   first CPU it may use, the threaded patterns' second thread to the
   second. A thread the scheduler moves in mid-pattern finds its caches
   cold: on a shared VM that made whole unpinned runs up to 2x slower for
   some allocators and not others.
   Then regions (allocate 4096, one reset), in the same rounds, against a
   hand-written bump allocator (the limit: a pointer increment) and against
   each baseline's malloc and free doing the same job. Every block is
   touched once, by the region and the bump allocator as by the others.

   Usage: bench-alloc [scale]   (scale 1 = default; 0.1 for a quick look)
          bench-alloc --count WHO PATTERN   (one pattern for valgrind's
          callgrind: bench/alloc-instructions.sh, instructions per operation) */
#include <mmb/mmb.h>

#include "bench.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Instructions per operation (bench/alloc-instructions.sh): the timed part
   of each single-thread pattern is the only part valgrind's callgrind counts
   (run with --collect-atstart=no); outside valgrind these are a few no-op
   instructions outside the timed loops. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define COUNT_TOGGLE() CALLGRIND_TOGGLE_COLLECT
#endif
#endif
#ifndef COUNT_TOGGLE
#define COUNT_TOGGLE() ((void)0)
#endif
static bool counting;        /* --count: the timed parts toggle callgrind's collection */
static size_t counted_ops;   /* the operations the last pattern timed */

enum { SIZES = 4096, REPS = 5, N_BASE = 3 };

static double scale = 1.0;
static size_t sizes[SIZES];   /* 64..320 B, fixed seed */

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static size_t ops(size_t base) {
  size_t n = (size_t)(base * scale);
  return n < SIZES ? SIZES : n - n % SIZES;
}

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  if (f) fclose(f);
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* The CPUs this process may use, as it started; the calling thread pinned
   to the slot-th of them (counted round). A single CPU: no pinning. */
static cpu_set_t allowed;
static int n_allowed;

static void pin(int slot) {
  if (n_allowed < 2) return;
  int k = slot % n_allowed;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &allowed) || k-- > 0) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);   /* best effort */
    return;
  }
}

static void pin_main(void) {
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) n_allowed = CPU_COUNT(&allowed);
  pin(0);
}

/* ---- one allocator, seen the same way by every pattern ------------------- */

/* Its patterns (alloc_patterns.h, instantiated per allocator so that its
   calls are inlined into each loop), its context and what it holds. */
typedef struct allocator {
  double (*run)(const struct allocator *a, const struct allocator *threaded, int p,
                double *memory);
  void *ctx;              /* mmb: the interface */
  size_t (*held)(void *ctx);   /* bytes held now (mmb: reserved; malloc: RSS) */
} allocator;

static void *sink_;
static void *volatile *sink = &sink_;

static inline void *malloc_alloc(void *ctx, size_t n) {
  (void)ctx;
  void *p = malloc(n);
  if (!p) abort();
  *(volatile char *)p = 1;
  return p;
}
static inline void malloc_free(void *ctx, void *p) {
  (void)ctx;
  free(p);
}
static size_t malloc_held(void *ctx) {
  (void)ctx;
  return rss_bytes();
}

static inline void *mmb_alloc(void *ctx, size_t n) {
  mmbAllocation *a;
  if (mmb_allocate(n, ctx, &a) != MMB_OK) abort();
  *(volatile char *)mmb_allocation_ptr(a) = 1;
  return a;
}
static inline void mmb_release(void *ctx, void *a) {
  (void)ctx;
  if (mmb_free(a) != MMB_OK) abort();
}
static inline void *mmb_ptr_alloc_one(void *ctx, size_t n) {
  void *p;
  if (mmb_ptr_allocate(n, ctx, &p) != MMB_OK) abort();
  *(volatile char *)p = 1;
  return p;
}
static inline void mmb_ptr_release(void *ctx, void *p) {
  if (mmb_ptr_deallocate(p, ctx) != MMB_OK) abort();
}
static size_t mmb_held(void *ctx) {
  mmbStats st;
  CHECK(mmb_interface_get_stats(ctx, &st));
  return st.reserved_current;
}

/* ---- the patterns ---------------------------------------------------------- */

/* The timed part of a pattern of n operations, in ns per operation: with
   --count (one thread), start() and stop() also bound what callgrind counts. */
static double start(size_t n) {
  if (counting) {
    counted_ops = n;
    COUNT_TOGGLE();
  }
  return now();
}
static double stop(double t, size_t n) {
  t = now() - t;
  if (counting) COUNT_TOGGLE();
  return t * 1e9 / (double)n;
}

typedef struct thread_arg {
  const allocator *a;
  double ns;
  int slot;   /* its CPU */
} thread_arg;

/* One thread allocates, the other frees: a ring of blocks between them. */
#define RING 1024
typedef struct ring {
  void *slot[RING];
  _Atomic size_t head, tail;
  size_t n;
  const allocator *a;
} ring;

enum { REGION_JOB = 4096 };   /* a region's job: blocks, then every one freed */
#define RANDOM_SLOTS 4096
#define RANDOM_BUDGET ((size_t)512 << 20)

static size_t random_size(uint64_t *s) {   /* log-uniform over 1 B .. 4 MiB */
  double u = (double)(rng_next(s) >> 11) / 9007199254740992.0;
  return (size_t)exp(u * log(4.0 * 1048576.0)) + 1;
}

/* ---- every pattern once ----------------------------------------------------- */

enum { P_PAIRS, P_W1, P_W64, P_W1000, P_W100000, P_BATCH, P_BATCH_REV, P_REGION_JOB, P_TWO,
       P_CROSS, P_RANDOM, P_MEMORY, N_PATTERNS };
static const char *const pattern_name[N_PATTERNS] = {
    "pairs", "window 1", "window 64", "window 1000", "window 100000", "batch 1000, same order",
    "batch 1000, reverse order", "a region's job: 4096, all freed", "2 threads, window 64 each", "cross-thread frees (per block)",
    "random 1 B-4 MiB (per call)", "bytes held per byte, window 100000"};

/* The patterns, once per allocator (see alloc_patterns.h). */
#define KIND malloc
#define ALLOC(ctx, n) malloc_alloc(ctx, n)
#define FREE(ctx, p) malloc_free(ctx, p)
#include "alloc_patterns.h"
#define KIND handles
#define ALLOC(ctx, n) mmb_alloc(ctx, n)
#define FREE(ctx, p) mmb_release(ctx, p)
#include "alloc_patterns.h"
#define KIND bare
#define ALLOC(ctx, n) mmb_ptr_alloc_one(ctx, n)
#define FREE(ctx, p) mmb_ptr_release(ctx, p)
#include "alloc_patterns.h"

static double run_pattern(const allocator *a, const allocator *threaded, int p, double *memory) {
  return a->run(a, threaded, p, memory);
}
#define MALLOC_ALLOCATOR {run_pattern_malloc, NULL, malloc_held}
#define HANDLES(iface) (allocator){run_pattern_handles, (iface), mmb_held}
#define BARE(iface) (allocator){run_pattern_bare, (iface), mmb_held}

/* The big window first: what it holds per byte is measured from the state
   the allocator starts in (a fresh process, a fresh interface). */
static void run_all(const allocator *a, const allocator *threaded, double *out) {
  out[P_W100000] = run_pattern(a, threaded, P_W100000, &out[P_MEMORY]);
  for (int p = 0; p < N_PATTERNS; p++)
    if (p != P_W100000 && p != P_MEMORY) out[p] = run_pattern(a, threaded, p, NULL);
}

/* The child: one allocator (whatever malloc is in this process), one round. */
static int child(void) {
  allocator m = MALLOC_ALLOCATOR;
  double r[N_PATTERNS];
  run_all(&m, &m, r);
  for (int p = 0; p < N_PATTERNS; p++) printf("%d %.6f\n", p, r[p]);
  return 0;
}

/* Every round's figures of one allocator. */
typedef struct series {
  double v[REPS][N_PATTERNS];
  int rounds;
} series;

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of a pattern's rounds; *worst: the largest. */
static double median(const series *s, int p, double *worst) {
  double v[REPS];
  for (int r = 0; r < s->rounds; r++) v[r] = s->v[r][p];
  qsort(v, (size_t)s->rounds, sizeof *v, by_value);
  if (worst) *worst = v[s->rounds - 1];
  return s->rounds % 2 ? v[s->rounds / 2] : (v[s->rounds / 2 - 1] + v[s->rounds / 2]) / 2;
}

typedef struct baseline {
  const char *name;
  const char *library;   /* preloaded; NULL: glibc */
  series s;
} baseline;

static const char *find_library(const char *soname) {
  static const char *const dirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
                                     "/usr/local/lib"};
  static char path[4][256];
  static int used;
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    char *p = path[used % 4];
    snprintf(p, sizeof path[0], "%s/%s", dirs[i], soname);
    if (access(p, R_OK) == 0) {
      used++;
      return p;
    }
  }
  return NULL;
}

/* Runs this program as a child with the baseline's malloc; false if it failed. */
static bool run_child(const char *self, baseline *b) {
  int fd[2];
  if (pipe(fd) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  char scale_arg[32], preload[300];
  snprintf(scale_arg, sizeof scale_arg, "%g", scale);
  char *argv[] = {(char *)self, "--child", scale_arg, NULL};
  size_t n_env = 0;
  while (environ[n_env]) n_env++;
  char **envp = calloc(n_env + 2, sizeof *envp);
  size_t k = 0;
  for (size_t i = 0; i < n_env; i++)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) envp[k++] = environ[i];
  if (b->library) {
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", b->library);
    envp[k++] = preload;
  }
  pid_t pid;
  /* the child inherits this thread's CPUs: all of them, and it pins its own */
  if (n_allowed > 1) pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
  bool ok = posix_spawn(&pid, self, &fa, NULL, argv, envp) == 0;
  pin(0);
  posix_spawn_file_actions_destroy(&fa);
  free(envp);
  close(fd[1]);
  FILE *in = fdopen(fd[0], "r");
  int p;
  double v, got[N_PATTERNS];
  int n = 0;
  while (in && fscanf(in, "%d %lf", &p, &v) == 2)
    if (p >= 0 && p < N_PATTERNS) got[p] = v, n++;
  if (in) fclose(in);
  int status = 0;
  if (ok) waitpid(pid, &status, 0);
  ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0 && n == N_PATTERNS;
  if (ok) memcpy(b->s.v[b->s.rounds++], got, sizeof got);
  return ok;
}

/* The figures of one way of using mmb, against each baseline. */
static void print_table(const char *title, const char *who, const series *mine,
                        const baseline *base) {
  printf("\n%s\n%-36s %-16s", title, "pattern", who);
  for (int b = 0; b < N_BASE; b++)
    printf("  %-25s", base[b].s.rounds ? base[b].name : "(missing)");
  printf("\n");
  for (int p = 0; p < N_PATTERNS; p++) {
    double worst, m = median(mine, p, &worst);
    printf("%-36s %7.2f (%6.2f)", pattern_name[p], m, worst);
    for (int b = 0; b < N_BASE; b++) {
      if (!base[b].s.rounds) {
        printf("  %-25s", "-");
        continue;
      }
      double bw, bm = median(&base[b].s, p, &bw);
      printf("  %7.2f (%6.2f) %5.2fx", bm, bw, m / bm);
    }
    printf("\n");
  }
}

/* ---- instructions per operation ----------------------------------------------- */

/* `--count WHO PATTERN`: one single-thread pattern at a small scale, run once
   to warm up and once more with callgrind collecting in its timed part
   (bench/alloc-instructions.sh runs it under valgrind); prints the
   operations counted. WHO: mmb (the pool), mmb-threads (a thread-safe pool),
   mmb-ptr and mmb-ptr-threads (the same through mmb_ptr_allocate), malloc (this
   process's malloc: the script preloads each baseline). */
static const struct {
  const char *key;
  int pattern;
} countable[] = {{"pairs", P_PAIRS},         {"window-1", P_W1},       {"window-64", P_W64},
                 {"window-1000", P_W1000},   {"batch", P_BATCH},       {"batch-reverse", P_BATCH_REV},
                 {"region-job", P_REGION_JOB}};

static int count_one(const char *who, const char *key) {
  int p = -1;
  for (size_t i = 0; i < sizeof countable / sizeof *countable; i++)
    if (strcmp(key, countable[i].key) == 0) p = countable[i].pattern;
  bool ptrs = strncmp(who, "mmb-ptr", 7) == 0;
  const char *kind = ptrs ? who + 7 : strncmp(who, "mmb", 3) == 0 ? who + 3 : NULL;
  bool is_mmb = kind && !*kind, threads = kind && strcmp(kind, "-threads") == 0;
  if (p < 0 || !(is_mmb || threads || strcmp(who, "malloc") == 0)) {
    fprintf(stderr, "usage: bench-alloc --count mmb|mmb-threads|mmb-ptr|mmb-ptr-threads|malloc "
            "PATTERN (PATTERN:");
    for (size_t i = 0; i < sizeof countable / sizeof *countable; i++)
      fprintf(stderr, " %s", countable[i].key);
    fprintf(stderr, ")\n");
    return 2;
  }
  scale = 0.02;
  allocator a = MALLOC_ALLOCATOR;
  mmbMemInterface *iface = NULL;
  if (is_mmb || threads) {
    CHECK(mmb_init(NULL));
    mmbMemSpace *dram;
    CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
    CHECK(mmb_request_interface(
        dram, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL,
                                       .flags = threads ? MMB_INTERFACE_THREAD_SAFE : 0},
        &iface));
    a = ptrs ? BARE(iface) : HANDLES(iface);
  }
  run_pattern(&a, &a, p, NULL);
  counting = true;
  run_pattern(&a, &a, p, NULL);
  counting = false;
  printf("ops %zu\n", counted_ops);
  if (iface) {
    CHECK(mmb_interface_destroy(iface));
    CHECK(mmb_finalize());
  }
  return 0;
}

/* ---- regions against a bump allocator -------------------------------------- */

_Static_assert((int)SIZES == (int)REGION_JOB, "the region's job is the same as the baselines'");

static double region_run(mmbRegion *r) {
  size_t n = ops(4000000);
  void *p = NULL;
  double t = now();
  for (size_t done = 0; done < n; done += SIZES) {
    for (int i = 0; i < SIZES; i++) {
      if (mmb_region_alloc(r, sizes[i], 16, &p) != MMB_OK) abort();
      *(volatile char *)p = 1;
    }
    *sink = p;
    if (mmb_region_reset(r) != MMB_OK) abort();
  }
  return (now() - t) * 1e9 / n;
}

/* The same loop as region_run's, over a bump allocator written in place:
   the last pointer of each batch escapes, as there. */
static double bump_run(char *arena, size_t bytes) {
  size_t n = ops(4000000);
  double t = now();
  for (size_t done = 0; done < n; done += SIZES) {
    uintptr_t at = (uintptr_t)arena, end = at + bytes, p = 0;
    for (int i = 0; i < SIZES; i++) {
      p = (at + 15) & ~(uintptr_t)15;
      if (p + sizes[i] > end) abort();
      at = p + sizes[i];
      *(volatile char *)p = 1;
    }
    *sink = (void *)p;
  }
  return (now() - t) * 1e9 / n;
}

int main(int argc, char **argv) {
  bool as_child = argc > 1 && strcmp(argv[1], "--child") == 0;
  const char *scale_text = as_child ? (argc > 2 ? argv[2] : NULL) : (argc > 1 ? argv[1] : NULL);
  if (scale_text) scale = atof(scale_text);
  if (!(scale > 0)) scale = 1.0;
  uint64_t s = 7;
  for (int i = 0; i < SIZES; i++) sizes[i] = 64 + rng_next(&s) % 257;
  pin_main();
  if (as_child) return child();
  if (argc == 4 && strcmp(argv[1], "--count") == 0) return count_one(argv[2], argv[3]);

  CHECK(mmb_init(NULL));
  mmbMemSpace *dram;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *pool, *shared, *basic;
  CHECK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL},
                              &pool));
  CHECK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL,
                                                             .flags = MMB_INTERFACE_THREAD_SAFE},
                              &shared));
  CHECK(mmb_request_interface(dram, NULL, &basic));
  /* the same pools through mmb_ptr_allocate / mmb_ptr_deallocate, on interfaces of their own */
  mmbMemInterface *ptr_pool, *ptr_shared;
  CHECK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL},
                              &ptr_pool));
  CHECK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL,
                                                             .flags = MMB_INTERFACE_THREAD_SAFE},
                              &ptr_shared));
  allocator pp = BARE(ptr_pool), ps = BARE(ptr_shared);
  allocator mp = HANDLES(pool), ms = HANDLES(shared);

  static baseline base[N_BASE] = {{"glibc", NULL, {.rounds = 0}},
                                  {"mimalloc", NULL, {.rounds = 0}},
                                  {"jemalloc", NULL, {.rounds = 0}}};
  base[1].library = find_library("libmimalloc.so.2");
  base[2].library = find_library("libjemalloc.so.2");
  mmbRegion *region;
  CHECK(mmb_region_create(basic, NULL, &region));
  char *arena = malloc(2u << 20);
  if (!arena) abort();
  /* regions: pattern 0 the region, 1 the bump allocator */
  static series mine, bare, regions;
  for (int r = 0; r < REPS; r++) {   /* mmb, the region, the bump and each baseline, in turn */
    run_all(&mp, &ms, mine.v[mine.rounds++]);
    run_all(&pp, &ps, bare.v[bare.rounds++]);
    regions.v[r][0] = region_run(region);
    regions.v[r][1] = bump_run(arena, 2u << 20);
    regions.rounds++;
    for (int b = 0; b < N_BASE; b++)
      if ((b == 0 || base[b].library) && !run_child(argv[0], &base[b]))
        fprintf(stderr, "bench-alloc: the %s child failed\n", base[b].name);
  }
  /* memory: every round on a fresh pool would need one; the first round had it */
  for (int r = 1; r < mine.rounds; r++) {
    mine.v[r][P_MEMORY] = mine.v[0][P_MEMORY];
    bare.v[r][P_MEMORY] = bare.v[0][P_MEMORY];
  }

  printf("bench-alloc: %d rounds, median (worst); ns per allocate+free (lower is better); ratio "
         "= mmb / baseline,\nof the medians; blocks of 64-320 B; each baseline in a process of its "
         "own\n", REPS);
  print_table("mmb_allocate + mmb_allocation_ptr + mmb_free (a handle per block)", "mmb", &mine,
              base);
  print_table("mmb_ptr_allocate + mmb_ptr_deallocate (bare pointers, malloc-style)", "mmb ptr", &bare,
              base);

  double rw, bw, rm = median(&regions, 0, &rw), bm = median(&regions, 1, &bw);
  printf("\nregion alloc (inline bump, reset per 4096): %.2f ns (worst %.2f); a hand-written bump "
         "allocator %.2f ns (worst %.2f): %.2fx (target: <= 1.2x)\n", rm, rw, bm, bw, rm / bm);
  for (int b = 0; b < N_BASE; b++) {
    if (!base[b].s.rounds) continue;
    double jw, pw, job = median(&base[b].s, P_REGION_JOB, &jw), pair = median(&base[b].s, P_PAIRS, &pw);
    printf("  %-9s malloc+free doing the region's job %.2f ns (worst %.2f): the region %.1fx "
           "faster%s; a malloc+free pair in place %.2f ns: %.1fx\n", base[b].name, job, jw,
           job / rm, b == 0 ? " (target: >= 20x)" : "", pair, pair / rm);
  }
  mmbStats st;
  CHECK(mmb_interface_get_stats(pool, &st));
  printf("pool after everything: %llu allocations served by %llu provider trips, %.1f MiB "
         "reserved at peak\n", st.n_allocs, st.n_provider_allocs, st.reserved_high / 1048576.0);
  free(arena);
  CHECK(mmb_region_destroy(region));
  CHECK(mmb_interface_destroy(pool));
  CHECK(mmb_interface_destroy(shared));
  CHECK(mmb_interface_destroy(ptr_pool));
  CHECK(mmb_interface_destroy(ptr_shared));
  CHECK(mmb_interface_destroy(basic));
  CHECK(mmb_finalize());
  return 0;
}
