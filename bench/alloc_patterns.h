/* bench/alloc's patterns for one allocator, its calls inlined into every
   loop as a program calls its allocator (not through a function pointer,
   a cost both sides would pay that compresses the ratios): bench/alloc.c
   includes this once per allocator, with KIND (a name), ALLOC(ctx, n)
   (returns the block) and FREE(ctx, block) defined. */
#define PAT_JOIN2(a, b) a##_##b
#define PAT_JOIN(a, b) PAT_JOIN2(a, b)
#define PAT(name) PAT_JOIN(name, KIND)

static double PAT(pairs)(const allocator *a) {
  size_t n = ops(4000000);
  double t = start(n);
  for (size_t i = 0; i < n; i++) FREE(a->ctx, ALLOC(a->ctx, sizes[i % SIZES]));
  return stop(t, n);
}

/* W live blocks; *bytes_per_byte: held per requested at the peak */
static double PAT(window)(const allocator *a, size_t w, double *bytes_per_byte) {
  void **slot = calloc(w, sizeof *slot);
  size_t *len = calloc(w, sizeof *len);
  if (!slot || !len) abort();
  size_t before = a->held(a->ctx), requested = 0;
  for (size_t k = 0; k < w; k++) {
    len[k] = sizes[k % SIZES];
    slot[k] = ALLOC(a->ctx, len[k]);
    requested += len[k];
  }
  size_t n = ops(4000000);
  uint64_t s = 11;
  double t = start(n);
  for (size_t i = 0; i < n; i++) {
    size_t k = w == 1 ? 0 : rng_next(&s) % w;
    FREE(a->ctx, slot[k]);
    requested -= len[k];
    len[k] = sizes[i % SIZES];
    slot[k] = ALLOC(a->ctx, len[k]);
    requested += len[k];
  }
  t = stop(t, n);
  if (bytes_per_byte) *bytes_per_byte = (double)(a->held(a->ctx) - before) / (double)requested;
  for (size_t k = 0; k < w; k++) FREE(a->ctx, slot[k]);
  free(slot);
  free(len);
  return t;
}

/* A region's job: REGION_JOB blocks, then every one freed. */
static double PAT(region_job)(const allocator *a) {
  static void *p[REGION_JOB];
  size_t n = ops(4000000) / REGION_JOB * REGION_JOB;
  double t = start(n);
  for (size_t done = 0; done < n; done += REGION_JOB) {
    for (size_t i = 0; i < REGION_JOB; i++) p[i] = ALLOC(a->ctx, sizes[i]);
    for (size_t i = 0; i < REGION_JOB; i++) FREE(a->ctx, p[i]);
  }
  return stop(t, n);
}

static double PAT(batch)(const allocator *a, bool reverse) {
  enum { N = 1000 };
  void *p[N];
  size_t n = ops(4000000) / N * N;
  double t = start(n);
  for (size_t done = 0; done < n; done += N) {
    for (size_t i = 0; i < N; i++) p[i] = ALLOC(a->ctx, sizes[(done + i) % SIZES]);
    for (size_t i = 0; i < N; i++) FREE(a->ctx, p[reverse ? N - 1 - i : i]);
  }
  return stop(t, n);
}


static void *PAT(window_thread)(void *v) {
  thread_arg *t = v;
  pin(t->slot);
  t->ns = PAT(window)(t->a, 64, NULL);
  return NULL;
}

static double PAT(two_threads)(const allocator *a) {
  thread_arg t[2] = {{a, 0, 0}, {a, 0, 1}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, PAT(window_thread), &t[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  return t[0].ns > t[1].ns ? t[0].ns : t[1].ns;
}


/* One thread allocates, the other frees: a ring of blocks between them. */
static void *PAT(consumer)(void *v) {
  ring *r = v;
  pin(1);   /* the producer, the main thread, is on the first */
  for (size_t got = 0; got < r->n;) {
    size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t == atomic_load_explicit(&r->head, memory_order_acquire)) continue;
    FREE(r->a->ctx, r->slot[t % RING]);
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    got++;
  }
  return NULL;
}

static double PAT(cross_thread)(const allocator *a) {
  static ring r;
  r.n = ops(2000000);
  r.a = a;
  atomic_store(&r.head, 0);
  atomic_store(&r.tail, 0);
  pthread_t c;
  double t = now();
  pthread_create(&c, NULL, PAT(consumer), &r);
  for (size_t i = 0; i < r.n; i++) {
    void *p = ALLOC(a->ctx, sizes[i % SIZES]);
    size_t h = atomic_load_explicit(&r.head, memory_order_relaxed);
    while (h - atomic_load_explicit(&r.tail, memory_order_acquire) >= RING) {}
    r.slot[h % RING] = p;
    atomic_store_explicit(&r.head, h + 1, memory_order_release);
  }
  pthread_join(c, NULL);
  return (now() - t) * 1e9 / r.n;
}

static double PAT(random_workload)(const allocator *a) {
  static void *p[RANDOM_SLOTS];
  static size_t len[RANDOM_SLOTS];
  size_t live_bytes = 0, n = ops(400000);
  uint64_t s = 42;
  double t = now();
  for (size_t i = 0; i < n; i++) {
    size_t k = rng_next(&s) % RANDOM_SLOTS;
    if (p[k]) {
      FREE(a->ctx, p[k]);
      p[k] = NULL;
      live_bytes -= len[k];
      continue;
    }
    size_t m = random_size(&s);
    if (live_bytes + m > RANDOM_BUDGET) continue;
    p[k] = ALLOC(a->ctx, m);
    len[k] = m;
    live_bytes += m;
  }
  t = now() - t;
  for (size_t k = 0; k < RANDOM_SLOTS; k++)
    if (p[k]) FREE(a->ctx, p[k]), p[k] = NULL;
  return t * 1e9 / n;
}

static double PAT(run_pattern)(const allocator *a, const allocator *threaded, int p, double *memory) {
  switch (p) {
  case P_PAIRS: return PAT(pairs)(a);
  case P_W1: return PAT(window)(a, 1, NULL);
  case P_W64: return PAT(window)(a, 64, NULL);
  case P_W1000: return PAT(window)(a, 1000, NULL);
  case P_W100000: return PAT(window)(a, 100000, memory);
  case P_BATCH: return PAT(batch)(a, false);
  case P_BATCH_REV: return PAT(batch)(a, true);
  case P_REGION_JOB: return PAT(region_job)(a);
  case P_TWO: return PAT(two_threads)(threaded);
  case P_CROSS: return PAT(cross_thread)(threaded);
  case P_RANDOM: return PAT(random_workload)(a);
  default: return 0;   /* P_MEMORY: measured by window 100000 */
  }
}

#undef PAT
#undef PAT_JOIN
#undef PAT_JOIN2
#undef KIND
#undef ALLOC
#undef FREE
