/* OpenBLAS's kernel: the best this CPU allows, checked before it is trusted
   (blas.h says how). */
#include "blas.h"

#include <cblas.h>
#include <cpuid.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* OpenBLAS's own calls (not in cblas.h) */
char *openblas_get_corename(void);
int openblas_get_num_threads(void);
void openblas_set_num_threads(int num_threads);

extern char **environ;

#define PROBE_ENV "CNN_BLAS_PROBE"     /* in the child that tries a kernel */
#define CHOSEN_ENV "CNN_BLAS_CHOSEN"   /* cnn_blas_start set OPENBLAS_CORETYPE: why */
#define TOLERANCE 1e-4                 /* of the sum of |a||b| over the inner dimension */
#define REPS 3                         /* timed sgemm, the best kept: the same for every kernel */
/* A trial kernel replaces OpenBLAS's choice only when this much faster:
   kernels of one speed (SkylakeX and Cooperlake on a CPU with both) came
   out 5% apart either way from run to run, and a choice that flips
   changes sgemm's rounding, so the weights, between two runs of one
   command. The kernels this is for are 1.5x to 5x slower. */
#define GAIN 1.25

/* OpenBLAS's x86-64 kernel families, by the newest instructions they use. */
static const struct {
  const char *name;
  int level;
} families[] = {
  {"Prescott", 1},  {"Core2", 1},       {"Penryn", 1},     {"Dunnington", 1}, {"Atom", 1},
  {"Opteron", 1},   {"Opteron_SSE3", 1}, {"Barcelona", 1}, {"Bobcat", 1},     {"Nano", 1},
  {"Nehalem", 2},   {"Sandybridge", 3}, {"Bulldozer", 3},  {"Piledriver", 3}, {"Haswell", 4},
  {"Zen", 4},       {"Steamroller", 4}, {"Excavator", 4},  {"SkylakeX", 5},    {"Cooperlake", 6},
  {"SapphireRapids", 6},
};

static int level_of(const char *name) {
  for (size_t i = 0; name && i < sizeof families / sizeof *families; i++)
    if (!strcasecmp(name, families[i].name)) return families[i].level;
  return -1;
}

static bool has_avx512_bf16(void) {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
}

/* The newest kernel family this CPU's flags (and the OS's saved state,
   which __builtin_cpu_supports checks) allow. */
static const char *best_for_cpu(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512cd"))
    return has_avx512_bf16() ? "Cooperlake" : "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
  if (__builtin_cpu_supports("sse4.2")) return "Nehalem";
  return "Prescott";
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Values in [-1, 1) from a fixed generator: the same check everywhere. */
static void fill(float *x, size_t n, unsigned long long *s) {
  for (size_t i = 0; i < n; i++) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((double)(*s >> 40) / (double)(1ull << 23)) - 1.0f;
  }
}

/* sgemm of an m x k by a k x n product (row-major) against a reference in
   double: the largest error, relative to the sum of |a||b| that bounds it. */
static double check_shape(int m, int n, int k) {
  float *a = malloc(sizeof(float) * (size_t)m * k), *b = malloc(sizeof(float) * (size_t)k * n);
  float *c = malloc(sizeof(float) * (size_t)m * n);
  double worst = INFINITY;
  if (a && b && c) {
    unsigned long long s = 42;
    fill(a, (size_t)m * k, &s);
    fill(b, (size_t)k * n, &s);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    worst = 0;
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        double ref = 0, bound = 0;
        for (int p = 0; p < k; p++) {
          ref += (double)a[i * k + p] * b[p * n + j];
          bound += fabs((double)a[i * k + p] * b[p * n + j]);
        }
        double e = fabs(c[i * n + j] - ref) / (bound > 0 ? bound : 1);
        if (!(e <= worst)) worst = e;   /* NaN too */
      }
  }
  free(a);
  free(b);
  free(c);
  return worst;
}

/* Odd sizes reach the kernels' edge cases; a larger one their blocking. */
static double check_sgemm(void) {
  double e1 = check_shape(67, 61, 129), e2 = check_shape(256, 192, 320);
  return e1 > e2 || isnan(e1) ? e1 : e2;
}

/* The best of `reps` 1024^3 sgemm on the threads OpenBLAS has now. */
static double sgemm_gflops(int reps) {
  const int n = 1024;
  float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
        *c = malloc(sizeof(float) * n * n);
  double best = 0;
  if (a && b && c) {
    unsigned long long s = 7;
    fill(a, (size_t)n * n, &s);
    fill(b, (size_t)n * n, &s);
    for (int r = 0; r <= reps; r++) {   /* the first one warms up */
      double t = now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f,
                  c, n);
      t = now() - t;
      double g = 2.0 * n * n * n / t * 1e-9;
      if (r > 0 && g > best) best = g;
    }
  }
  free(a);
  free(b);
  free(c);
  return best;
}

/* The child: the kernel OpenBLAS loaded, its error, its GFLOP/s on one thread. */
static void probe(void) {
  openblas_set_num_threads(1);
  double err = check_sgemm();
  printf("%s %.3e %.3f\n", openblas_get_corename(), err, err <= TOLERANCE ? sgemm_gflops(REPS) : 0.0);
  fflush(stdout);
  _exit(0);
}

static char start_note[256];

/* Runs this program again as a child with OPENBLAS_CORETYPE=kernel and
   CNN_BLAS_PROBE set; what it printed, or false if it did not end well. */
static bool try_kernel(char **argv, const char *kernel, char *out, size_t out_len) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + 3, sizeof *env);
  char coretype[64];
  snprintf(coretype, sizeof coretype, "OPENBLAS_CORETYPE=%s", kernel);
  int fds[2];
  if (!env || pipe(fds) != 0) {
    free(env);
    return false;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "OPENBLAS_CORETYPE=", 18)) env[k++] = environ[i];
  env[k++] = coretype;
  env[k++] = PROBE_ENV "=1";
  env[k] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  close(fds[1]);
  size_t got = 0;
  ssize_t r;
  while (rc == 0 && got + 1 < out_len && (r = read(fds[0], out + got, out_len - 1 - got)) > 0)
    got += (size_t)r;
  out[got] = '\0';
  close(fds[0]);
  int status = 0;
  if (rc != 0 || waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void cnn_blas_start(int argc, char **argv) {
  (void)argc;
  if (getenv(PROBE_ENV)) probe();
  const char *chosen = getenv(CHOSEN_ENV), *set = getenv("OPENBLAS_CORETYPE");
  const char *kernel = openblas_get_corename(), *best = best_for_cpu();
  if (chosen) {   /* this run was started again with the kernel below */
    snprintf(start_note, sizeof start_note, "%s", chosen);
    unsetenv(CHOSEN_ENV);
    return;
  }
  if (set && !getenv("CNN_BLAS_TRY")) {   /* the user's: never overridden */
    if (level_of(best) > level_of(kernel))
      snprintf(start_note, sizeof start_note, "OPENBLAS_CORETYPE=%s from the environment; this "
               "CPU allows %s (unset it, or set CNN_BLAS_TRY=1, to let the program try that)",
               set, best);
    else
      snprintf(start_note, sizeof start_note, "OPENBLAS_CORETYPE=%s from the environment", set);
    return;
  }
  if (level_of(kernel) < 0 || level_of(best) <= level_of(kernel)) {
    snprintf(start_note, sizeof start_note, "OpenBLAS's own choice for this CPU");
    return;
  }
  int threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  double mine = sgemm_gflops(REPS);
  openblas_set_num_threads(threads);
  char out[256], name[64] = "";
  double err = INFINITY, gflops = 0;
  bool ran = try_kernel(argv, best, out, sizeof out) &&
             sscanf(out, "%63s %lf %lf", name, &err, &gflops) == 3;
  if (!ran) {
    snprintf(start_note, sizeof start_note, "OpenBLAS chose %s; this CPU allows %s, which failed "
             "in a trial run (kept %s)", kernel, best, kernel);
  } else if (strcasecmp(name, best)) {
    snprintf(start_note, sizeof start_note, "OpenBLAS chose %s; this CPU allows %s, which this "
             "OpenBLAS does not have (it loaded %s)", kernel, best, name);
  } else if (!(err <= TOLERANCE)) {
    snprintf(start_note, sizeof start_note, "OpenBLAS chose %s; %s, which this CPU allows, "
             "computed sgemm wrong here (relative error %.1e): kept %s", kernel, best, err, kernel);
  } else if (gflops <= GAIN * mine) {
    snprintf(start_note, sizeof start_note, "OpenBLAS chose %s; %s, which this CPU allows, is not "
             "clearly faster here (%.1f against %.1f GFLOP/s on one thread)", kernel, best,
             gflops, mine);
  } else {
    char why[256];
    snprintf(why, sizeof why, "OpenBLAS ran %s on this CPU; %s is correct here and %.1fx faster "
             "(%.1f against %.1f GFLOP/s on one thread): OPENBLAS_CORETYPE=%s", kernel, best,
             gflops / mine, gflops, mine, best);
    setenv("OPENBLAS_CORETYPE", best, 1);
    setenv(CHOSEN_ENV, why, 1);
    fflush(NULL);
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE");   /* could not start again: go on as we are */
    unsetenv(CHOSEN_ENV);
    snprintf(start_note, sizeof start_note, "OpenBLAS chose %s; %s would be %.1fx faster but the "
             "program could not start again", kernel, best, gflops / mine);
  }
}

bool cnn_blas_measure(cnn_blas *b) {
  snprintf(b->kernel, sizeof b->kernel, "%s", openblas_get_corename());
  snprintf(b->note, sizeof b->note, "%s",
           start_note[0] ? start_note : "OpenBLAS's own choice for this CPU");
  b->error = check_sgemm();
  if (!(b->error <= TOLERANCE)) {
    snprintf(b->note, sizeof b->note, "OpenBLAS's %s kernel computes sgemm wrong here (relative "
             "error %.1e): set OPENBLAS_CORETYPE to an older kernel (Haswell, Sandybridge, "
             "Prescott)", b->kernel, b->error);
    b->sgemm_gflops = 0;
    return false;
  }
  b->sgemm_gflops = sgemm_gflops(REPS);
  return true;
}
