/* Which OpenBLAS kernel runs, and whether it is the best this CPU allows.

   Debian's OpenBLAS (0.3.21) is built with DYNAMIC_ARCH: it picks its
   kernels by the CPU at load, and on a CPU newer than itself it falls back
   to older ones (Intel Xeon family 6 model 207 got the generic SSE3
   `Prescott` kernels: 31 GFLOP/s of sgemm where `SkylakeX` gives 150). It
   reads OPENBLAS_CORETYPE only at load, so a program that wants another
   kernel must start again.

   cnn_blas_start, first thing in main: when OPENBLAS_CORETYPE is not set
   and the kernel OpenBLAS chose is of an older family than the CPU's flags
   allow (AVX-512 with BF16: Cooperlake; AVX-512: SkylakeX; AVX2 and FMA:
   Haswell; AVX: Sandybridge), it tries that kernel in a child process of
   itself (a crash or a wrong product there harms nothing), which checks
   sgemm against a reference product and times it; when the child's kernel
   is correct and clearly faster (by a quarter: a kernel of the same speed
   must not win by noise, or two runs of one command would round
   differently), the program starts again (execv) with OPENBLAS_CORETYPE
   set to it. A value the user set is never overridden
   (the note then says what the CPU would allow) unless CNN_BLAS_TRY=1 asks
   for the trial all the same.

   cnn_blas_measure, once the thread count is set: the running kernel is
   checked against the reference product (a wrong one is an error), and
   sgemm's GFLOP/s measured briefly on those threads, the best of a few. */
#ifndef CNN_BLAS_H
#define CNN_BLAS_H

#include <stdbool.h>

typedef struct cnn_blas {
  char kernel[32];      /* what OpenBLAS runs ("Haswell") */
  char note[256];       /* how it came to run it, for the banner */
  double sgemm_gflops;  /* the best of a few correct 1024^3 sgemm, GFLOP/s */
  double error;         /* the reference check's largest relative error */
} cnn_blas;

/* May start the program again (argv as given) with a better kernel; in the
   child that tries one, it never returns. Before any thread or MPI_Init. */
void cnn_blas_start(int argc, char **argv);

/* Fills *b for the kernel running now, on the threads set for it. False
   when sgemm computes wrong results (b->note says how wrong). */
bool cnn_blas_measure(cnn_blas *b);

#endif /* CNN_BLAS_H */
