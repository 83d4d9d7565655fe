/* The trace: a bounded ring of events, dumped as Chrome Trace Event JSON
   (opens in Perfetto and chrome://tracing).

   Every allocate/free and provider trip records the bytes used and reserved
   by each space of the interface's chain right after it, so the dump can draw
   one counter track per space even when the ring dropped the oldest events.
   The trace keeps those per-space totals itself, starting from the spaces'
   stats when the trace starts. Recording takes a mutex that nests inside
   every other lock; while no trace runs it costs one relaxed load. */
#include "alloc/observe/observe.h"

#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define DEFAULT_CAPACITY ((size_t)1 << 17)
#define MAX_SPACES INT16_MAX   /* an event's levels are int16_t */
#define MAX_LEVELS 3
#define MAX_FRAMES 8

_Atomic bool mmb__tracing;

typedef struct trace_space {
  char name[48];
  size_t used, reserved;
} trace_space;

typedef struct trace_event {
  uint64_t ts, dur;
  uint64_t size, key;                /* cache events: key is the tile */
  const void *ptr, *iface;
  const char *name;                 /* durations */
  uint32_t tid;
  uint8_t kind, n_levels, n_frames;
  uint8_t event, flag;                /* cache events */
  int16_t level[MAX_LEVELS];        /* trace_space indices; durations: from, to */
  /* cache events: used, dirty, pinned; reserved[0] the budget */
  size_t used[MAX_LEVELS], reserved[MAX_LEVELS];
  void *frames[MAX_FRAMES];
} trace_event;

enum { KIND_DURATION = 16, KIND_CACHE = 17 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static trace_event *ring;              /* guarded by lock, like everything below */
static size_t capacity = DEFAULT_CAPACITY, recorded;
static trace_space *spaces;           /* grows by doubling; n_spaces in use */
static size_t n_spaces, spaces_cap;
static uint64_t epoch;                 /* one per trace started; a space's slot is for it */
static uint64_t start_ns;
static unsigned frames_wanted;
static char *env_path;                 /* MMB_TRACE */

static uint32_t thread_id(void) {
  static _Thread_local uint32_t tid;
  if (!tid) tid = (uint32_t)syscall(SYS_gettid);
  return tid;
}

/* The trace's entry for a space (lock held); -1 when the table cannot grow.
   A space keeps its entry's index, so finding it costs no search however
   many spaces a program requests; a new space, even at a freed one's
   address, starts with none (its object is zeroed), and a space's name is
   set once, when it is made. */
static int space_index(const mmbMemSpace *s) {
  mmbMemSpace *m = (mmbMemSpace *)s;   /* only the trace's fields, under its lock */
  if (m->trace_epoch == epoch) return (int)m->trace_slot;
  if (n_spaces == spaces_cap) {
    size_t cap = spaces_cap ? 2 * spaces_cap : 64;
    if (cap > MAX_SPACES) cap = MAX_SPACES;
    trace_space *more = cap > n_spaces ? mmb__malloc(cap * sizeof *more) : NULL;
    if (!more) return -1;
    if (n_spaces) memcpy(more, spaces, n_spaces * sizeof *more);
    mmb__free(spaces);
    spaces = more;
    spaces_cap = cap;
  }
  trace_space *t = &spaces[n_spaces];
  *t = (trace_space){0};
  snprintf(t->name, sizeof t->name, "%s", s->info.name);
  m->trace_epoch = epoch;
  m->trace_slot = (unsigned)n_spaces;
  return (int)n_spaces++;
}

static trace_event *next_slot(void) {
  return &ring[recorded++ % capacity];
}

void mmb__trace_record(mmb__trace_kind kind, mmbMemInterface *iface, const void *ptr, size_t size) {
  void *frames[MAX_FRAMES + 2];
  int n_frames = frames_wanted ? backtrace(frames, (int)frames_wanted + 2) - 2 : 0;
  uint64_t now = mmb__now_ns();
  pthread_mutex_lock(&lock);
  if (!ring) {
    pthread_mutex_unlock(&lock);
    return;
  }
  trace_event *e = next_slot();
  *e = (trace_event){.ts = now, .size = size, .ptr = ptr, .iface = iface, .tid = thread_id(),
                     .kind = (uint8_t)kind};
  bool use = kind == MMB__TRACE_ALLOC || kind == MMB__TRACE_FREE;
  bool more = kind == MMB__TRACE_ALLOC || kind == MMB__TRACE_RESERVE;
  for (const mmbMemSpace *s = iface->space; s && s->parent && e->n_levels < MAX_LEVELS;
       s = s->parent) {
    int i = space_index(s);
    if (i < 0) break;
    size_t *v = use ? &spaces[i].used : &spaces[i].reserved;
    *v = more ? *v + size : *v - size;
    e->level[e->n_levels] = (int16_t)i;
    e->used[e->n_levels] = spaces[i].used;
    e->reserved[e->n_levels] = spaces[i].reserved;
    e->n_levels++;
  }
  if (n_frames > 0) {
    memcpy(e->frames, frames + 2, (size_t)n_frames * sizeof(void *));
    e->n_frames = (uint8_t)n_frames;
  }
  pthread_mutex_unlock(&lock);
}

void mmb__trace_duration(const char *name, uint64_t start, size_t bytes, const mmbMemSpace *from,
                         const mmbMemSpace *to) {
  uint64_t now = mmb__now_ns();
  pthread_mutex_lock(&lock);
  if (ring) {
    trace_event *e = next_slot();
    *e = (trace_event){.ts = start, .dur = now - start, .size = bytes, .name = name,
                       .tid = thread_id(), .kind = KIND_DURATION, .n_levels = 2,
                       .level = {(int16_t)(from ? space_index(from) : -1),
                                 (int16_t)(to ? space_index(to) : -1)}};
  }
  pthread_mutex_unlock(&lock);
}

void mmb__trace_cache(mmb__cache_event event, const mmbMemSpace *space, uint64_t tile,
                      size_t bytes, unsigned flags, const mmb__cache_levels *after) {
  uint64_t now = mmb__now_ns();
  pthread_mutex_lock(&lock);
  int i = ring ? space_index(space) : -1;
  if (i >= 0) {
    trace_event *e = next_slot();
    *e = (trace_event){.ts = now, .size = bytes, .key = tile, .tid = thread_id(),
                       .kind = KIND_CACHE, .event = (uint8_t)event, .flag = (uint8_t)flags,
                       .level = {(int16_t)i},
                       .used = {after->used, after->dirty, after->pinned},
                       .reserved = {after->budget}};
  }
  pthread_mutex_unlock(&lock);
}

/* ---- start, stop ---------------------------------------------------------- */

static void snapshot_space(const mmbMemSpace *s, void *arg) {
  (void)arg;
  mmbStats st;
  mmb__space_stats(s, &st);
  pthread_mutex_lock(&lock);
  int i = space_index(s);
  if (i >= 0) {
    spaces[i].used = st.used_current;
    spaces[i].reserved = st.reserved_current;
  }
  pthread_mutex_unlock(&lock);
}

mmbError mmb_trace_set_capacity(size_t events) {
  MMB__REQUIRE_INIT();
  MMB__ARG(events == 0, __func__, "a trace needs room for at least one event");
  if (events > SIZE_MAX / sizeof(trace_event))
    return mmb__fail(MMB_OVERFLOW, __func__, "%zu events cannot be addressed", events);
  if (atomic_load(&mmb__tracing))
    return mmb__fail(MMB_BUSY, __func__, "stop the trace before resizing it");
  pthread_mutex_lock(&lock);
  capacity = events;
  pthread_mutex_unlock(&lock);
  return MMB_OK;
}

static mmbError trace_start(void) {
  if (atomic_load(&mmb__tracing)) return mmb__fail(MMB_BUSY, "mmb_trace_start", "a trace is running");
  pthread_mutex_lock(&lock);
  trace_event *fresh = mmb__malloc(capacity * sizeof *fresh);
  if (!fresh) {
    pthread_mutex_unlock(&lock);
    return mmb__fail(MMB_OUT_OF_MEMORY, "mmb_trace_start", "no room for %zu events", capacity);
  }
  mmb__free(ring);
  ring = fresh;
  recorded = 0;
  n_spaces = 0;
  epoch++;
  start_ns = mmb__now_ns();
  pthread_mutex_unlock(&lock);
  mmb__spaces_for_each(snapshot_space, NULL);
  atomic_store(&mmb__tracing, true);
  mmb__notes_stale();   /* the quick paths a note opens are for untraced calls only */
  return MMB_OK;
}

mmbError mmb_trace_start(void) {
  MMB__REQUIRE_INIT();
  return trace_start();
}

mmbError mmb_trace_stop(void) {
  MMB__REQUIRE_INIT();
  if (!atomic_exchange(&mmb__tracing, false))
    return mmb__fail(MMB_INVALID_STATE, __func__, "no trace is running");
  return MMB_OK;
}

/* ---- dump ------------------------------------------------------------------ */

static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static double us(uint64_t ns) { return ns < start_ns ? 0.0 : (double)(ns - start_ns) / 1000.0; }

static void put_counters(FILE *f, const trace_event *e, int pid) {
  for (unsigned k = 0; k < e->n_levels; k++) {
    fprintf(f, ",\n{\"name\":");
    put_string(f, spaces[e->level[k]].name);
    fprintf(f, ",\"cat\":\"mmb\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%d,\"args\":{\"used\":%zu,"
            "\"reserved\":%zu}}", us(e->ts), pid, e->used[k], e->reserved[k]);
  }
}

static void put_stack(FILE *f, const trace_event *e) {
  if (!e->n_frames) return;
  char **names = backtrace_symbols((void *const *)e->frames, e->n_frames);
  fprintf(f, ",\"stack\":[");
  for (unsigned k = 0; k < e->n_frames; k++) {
    char addr[32];
    snprintf(addr, sizeof addr, "%p", e->frames[k]);
    if (k) fputc(',', f);
    put_string(f, names ? names[k] : addr);
  }
  fputc(']', f);
  free(names);
}

static const char *const kind_names[] = {"alloc", "free", "provider_alloc", "provider_free"};

static const char *const cache_names[] = {"cache_hit",     "cache_miss",  "cache_prefetch",
                                           "cache_release", "cache_evict", "cache_writeback"};
static const char *const cache_flags[] = {NULL, "fetched", "fetched", NULL, "written", NULL};

/* A cache event: the instant, then the space's cache occupancy after it. */
static void put_cache(FILE *f, const trace_event *e, int pid) {
  const char *space = spaces[e->level[0]].name;
  fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"mmb.cache\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,"
          "\"pid\":%d,\"tid\":%u,\"args\":{\"space\":", cache_names[e->event], us(e->ts), pid,
          e->tid);
  put_string(f, space);
  fprintf(f, ",\"tile\":%" PRIu64 ",\"bytes\":%" PRIu64, e->key, e->size);
  if (cache_flags[e->event])
    fprintf(f, ",\"%s\":%s", cache_flags[e->event], e->flag & MMB__CACHE_FLAG_DONE ? "true" : "false");
  if (e->event == MMB__CACHE_HIT || e->event == MMB__CACHE_MISS)
    fprintf(f, ",\"read\":%s,\"write\":%s", e->flag & MMB__CACHE_FLAG_READ ? "true" : "false",
            e->flag & MMB__CACHE_FLAG_WRITE ? "true" : "false");
  char track[sizeof spaces[0].name + 8];
  snprintf(track, sizeof track, "cache %s", space);
  fprintf(f, "}},\n{\"name\":");
  put_string(f, track);
  fprintf(f, ",\"cat\":\"mmb.cache\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%d,\"args\":{"
          "\"used\":%zu,\"dirty\":%zu,\"pinned\":%zu,\"budget\":%zu}}", us(e->ts), pid,
          e->used[0], e->used[1], e->used[2], e->reserved[0]);
}

static void put_event(FILE *f, const trace_event *e, int pid) {
  if (e->kind == KIND_CACHE) {
    put_cache(f, e, pid);
    return;
  }
  if (e->kind == KIND_DURATION) {
    fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"mmb\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
            "\"pid\":%d,\"tid\":%u,\"args\":{\"bytes\":%" PRIu64, e->name, us(e->ts),
            (double)e->dur / 1000.0, pid, e->tid, e->size);
    const char *ends[2] = {"from", "to"};
    for (int k = 0; k < 2; k++) {
      if (e->level[k] < 0) continue;
      fprintf(f, ",\"%s\":", ends[k]);
      put_string(f, spaces[e->level[k]].name);
    }
    fprintf(f, "}}");
    return;
  }
  fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"mmb\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,"
          "\"pid\":%d,\"tid\":%u,\"args\":{\"size\":%" PRIu64 ",\"ptr\":\"%p\","
          "\"interface\":\"%p\"", kind_names[e->kind], us(e->ts), pid, e->tid, e->size,
          e->ptr, e->iface);
  if (e->n_levels) {
    fprintf(f, ",\"space\":");
    put_string(f, spaces[e->level[0]].name);
  }
  put_stack(f, e);
  fprintf(f, "}}");
  put_counters(f, e, pid);
}

static mmbError dump_locked(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return mmb__fail(MMB_IO, "mmb_trace_dump", "cannot write %s", path);
  int pid = (int)getpid();
  size_t kept = recorded < capacity ? recorded : capacity;
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"library\":\"mmb\",\"recorded_events\""
          ":%zu,\"dropped_events\":%zu,\"capacity\":%zu},\n\"traceEvents\":[\n"
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"mmb\"}}",
          recorded, recorded - kept, capacity, pid);
  for (size_t i = recorded - kept; ring && i < recorded; i++) put_event(f, &ring[i % capacity], pid);
  fprintf(f, "\n]}\n");
  bool failed = ferror(f) != 0;
  failed |= fclose(f) != 0;
  return failed ? mmb__fail(MMB_IO, "mmb_trace_dump", "writing %s failed", path) : MMB_OK;
}

mmbError mmb_trace_dump(const char *path) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!path || !*path, __func__, "no path");
  pthread_mutex_lock(&lock);
  mmbError err = dump_locked(path);
  pthread_mutex_unlock(&lock);
  return err;
}

/* ---- MMB_TRACE ------------------------------------------------------------ */

/* A trace that cannot be written is found out at init, not lost at the end:
   the file is opened for appending (and removed again if this made it). */
static bool writable(const char *path) {
  bool existed = access(path, F_OK) == 0;
  FILE *f = fopen(path, "a");
  if (!f) return false;
  fclose(f);
  if (!existed) unlink(path);
  return true;
}

mmbError mmb__trace_init(void) {
  const char *cap = getenv("MMB_TRACE_CAPACITY"), *bt = getenv("MMB_TRACE_BACKTRACE");
  size_t events = DEFAULT_CAPACITY, depth = 0;
  if (cap && (!mmb__parse_size(cap, &events) || !events)) {
    mmb__log(MMB_LOG_ERROR, "MMB_TRACE_CAPACITY='%s' is not a number of events", cap);
    return MMB_INVALID_ARG;
  }
  if (events > SIZE_MAX / sizeof(trace_event)) {   /* the ring's bytes would wrap */
    mmb__log(MMB_LOG_ERROR, "MMB_TRACE_CAPACITY='%s': %zu events cannot be addressed", cap,
             events);
    return MMB_OVERFLOW;
  }
  if (bt && (!mmb__parse_size(bt, &depth) || depth > MAX_FRAMES)) {
    mmb__log(MMB_LOG_ERROR, "MMB_TRACE_BACKTRACE='%s': a depth from 0 to %d", bt, MAX_FRAMES);
    return MMB_INVALID_ARG;
  }
  pthread_mutex_lock(&lock);
  capacity = events;
  frames_wanted = (unsigned)depth;
  pthread_mutex_unlock(&lock);
  const char *path = getenv("MMB_TRACE");
  if (!path || !*path) return MMB_OK;
  if (!writable(path)) {
    mmb__log(MMB_LOG_ERROR, "MMB_TRACE='%s': the trace cannot be written there (%s)", path,
             strerror(errno));
    return MMB_IO;
  }
  if (!(env_path = mmb__malloc(strlen(path) + 1))) return MMB_OUT_OF_MEMORY;
  strcpy(env_path, path);
  mmbError err = trace_start();
  if (err != MMB_OK) {
    mmb__free(env_path);
    env_path = NULL;
    return err;
  }
  mmb__log(MMB_LOG_INFO, "tracing to %s (dumped at mmb_finalize)", env_path);
  return MMB_OK;
}

void mmb__trace_finalize(void) {
  atomic_store(&mmb__tracing, false);
  if (env_path) {
    pthread_mutex_lock(&lock);
    if (dump_locked(env_path) == MMB_OK)
      mmb__log(MMB_LOG_INFO, "trace written to %s", env_path);
    else
      mmb__log(MMB_LOG_ERROR, "MMB_TRACE: writing the trace to %s failed", env_path);
    pthread_mutex_unlock(&lock);
    mmb__free(env_path);
    env_path = NULL;
  }
  pthread_mutex_lock(&lock);
  mmb__free(ring);
  ring = NULL;
  recorded = 0;
  mmb__free(spaces);
  spaces = NULL;
  n_spaces = spaces_cap = 0;
  epoch++;
  capacity = DEFAULT_CAPACITY;
  frames_wanted = 0;
  pthread_mutex_unlock(&lock);
}
