/* libmmb_mpi: tiles and arrays between MPI ranks (see mmb/mpi.h), built on
   libmmb's public API alone, so the core library never links MPI.

   Every operation is a small state machine over non-blocking MPI calls (a
   "transfer", one per tile), driven by one loop that tests them, starts the
   next tile's when the previous one has posted its data, and gives up at the
   deadline. So a blocking call and an _async twin, whose task runs the same
   loop on a queue's thread, share every line.

     send:      header + data out, the receiver's answer in
     recv:      header in; answer out; data in (or drained when refused)
     bcast,
     allreduce: the ranks agree on a signature (one MPI_Iallreduce of the
                signature and its negation under MAX gives each field's
                maximum and minimum), then the collective itself

   Element order on the wire is always row-major over the tile's indices
   (its own storage order may be anything): a contiguous row-major tile goes
   as it is, a strided host tile through a derived datatype nested in index
   order, or packed into a row-major duplicate by mmb's copy engine. */
#include <mmb/mpi.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>   /* MPIX_Query_cuda_support */
#endif

/* ---- settings -------------------------------------------------------------- */

/* AUTO packs a strided host tile whose contiguous runs are shorter than
   this. 0: never, as measured by bench/mpi on Open MPI 4.1, whose datatype
   engine beats packing by the copy engine at every row length from 64 B
   (it pipelines the pack with the transfer); MPIs with a weaker engine set
   mmbMpiOptions.pack_below. */
#define PACK_BELOW_DEFAULT 0
#define TIMEOUT_DEFAULT 300.0

static pthread_once_t options_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t options_lock = PTHREAD_MUTEX_INITIALIZER;
static mmbMpiOptions options;   /* under options_lock */

static void say(mmbLogLevel level, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int word(const char *env, const char *const *words, int n, int fallback) {
  const char *s = getenv(env);
  if (!s || !*s) return fallback;
  for (int i = 0; i < n; i++)
    if (!strcasecmp(s, words[i])) return i;
  say(MMB_LOG_WARN, "mmb_mpi", "%s=%s is not one of %s, %s, %s: ignored", env, s, words[0],
      words[1], words[2]);
  return fallback;
}

static void options_from_env(void) {
  options = (mmbMpiOptions){.timeout = TIMEOUT_DEFAULT, .packing = MMB_MPI_PACK_AUTO,
                            .cuda = MMB_MPI_CUDA_AUTO, .pack_below = PACK_BELOW_DEFAULT};
  const char *s = getenv("MMB_MPI_TIMEOUT");
  if (s && *s) {
    char *end;
    double v = strtod(s, &end);
    if (!*end && isfinite(v) && v > 0) options.timeout = v;
    else say(MMB_LOG_WARN, "mmb_mpi", "MMB_MPI_TIMEOUT=%s is not a positive number of seconds: "
             "ignored", s);
  }
  static const char *const packing[] = {"auto", "always", "never"};
  static const char *const cuda[] = {"auto", "aware", "staged"};
  options.packing = (mmbMpiPacking)word("MMB_MPI_PACK", packing, 3, MMB_MPI_PACK_AUTO);
  options.cuda = (mmbMpiCuda)word("MMB_MPI_CUDA", cuda, 3, MMB_MPI_CUDA_AUTO);
}

static mmbMpiOptions options_now(void) {
  pthread_once(&options_once, options_from_env);
  pthread_mutex_lock(&options_lock);
  mmbMpiOptions o = options;
  pthread_mutex_unlock(&options_lock);
  return o;
}

mmbError mmb_mpi_get_options(mmbMpiOptions *out_options) {
  if (!out_options) return MMB_INVALID_ARG;
  *out_options = options_now();
  return MMB_OK;
}

mmbError mmb_mpi_set_options(const mmbMpiOptions *o) {
  if (!o || !isfinite(o->timeout) || o->timeout <= 0 || (unsigned)o->packing > MMB_MPI_PACK_NEVER ||
      (unsigned)o->cuda > MMB_MPI_CUDA_STAGED)
    return MMB_INVALID_ARG;
  pthread_once(&options_once, options_from_env);
  pthread_mutex_lock(&options_lock);
  options = *o;
  pthread_mutex_unlock(&options_lock);
  return MMB_OK;
}

static bool cuda_aware(const mmbMpiOptions *o) {
  if (o->cuda != MMB_MPI_CUDA_AUTO) return o->cuda == MMB_MPI_CUDA_AWARE;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

mmbError mmb_mpi_cuda_aware(bool *out_aware) {
  if (!out_aware) return MMB_INVALID_ARG;
  mmbMpiOptions o = options_now();
  *out_aware = cuda_aware(&o);
  return MMB_OK;
}

/* ---- messages ---------------------------------------------------------------- */

/* Through mmb's logger (its level, and the callback a code set with
   mmb_logging_set_callback), prefixed with the rank, since every rank of a
   job writes to the same terminal. */
static void say(mmbLogLevel level, const char *func, const char *fmt, ...) {
  mmbLogLevel now;
  if (mmb_logging_get_level(&now) != MMB_OK || level < MMB_LOG_ERROR || level > now) return;
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  int up = 0, down = 0, rank = -1;
  if (MPI_Initialized(&up) == MPI_SUCCESS && up && MPI_Finalized(&down) == MPI_SUCCESS && !down)
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  mmb_log(level, "%s: rank %d: %s", func, rank, text);
}

/* Checks that every caller-side precondition of the library holds. */
static mmbError ready(const char *func) {
  int up = 0, down = 0;
  if (!mmb_is_initialized()) return MMB_NOT_INITIALIZED;
  if (MPI_Initialized(&up) != MPI_SUCCESS || !up || MPI_Finalized(&down) != MPI_SUCCESS || down) {
    say(MMB_LOG_WARN, func, "MPI is not initialised (MPI_Init first)");
    return MMB_NOT_INITIALIZED;
  }
  return MMB_OK;
}

mmbError mmb_mpi_tag_max(int *out_tag) {
  if (!out_tag) return MMB_INVALID_ARG;
  mmbError err = ready(__func__);
  if (err != MMB_OK) return err;
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  *out_tag = (flag && ub ? *ub : 32767) / 2;   /* MPI guarantees 32767 */
  return MMB_OK;
}

/* ---- a tile as MPI sees it -------------------------------------------------- */

enum kind { SEND, RECV, BCAST, ALLREDUCE };

/* A transfer's progress; a tile of an array starts once the one before it
   has reached POSTED (its data is on the wire in MPI's matching order). */
enum phase { NEW, AGREEING, POSTED, DONE };

/* What a sender tells its receiver, and what ranks compare. */
#define HEADER_MAGIC 0x6d6d624dL   /* "mmbM" */
typedef struct header {
  int64_t magic, status;   /* status: MMB_OK, or the error this side met */
  int64_t tiles;           /* in the operation: 1, or an array's */
  int64_t rank, esize, type, dim[MMB_MAX_DIMS];
} header;

/* A collective's signature: kind, root or reduction, then the header's shape
   fields, then ok (1, or 0 where a rank failed), and all of it negated. */
#define SIG_SHAPE (4 + MMB_MAX_DIMS)
#define SIG_N (2 + SIG_SHAPE + 1)

typedef struct transfer {
  enum kind kind;
  const char *func;
  mmbArrayTile *tile;
  int peer, tag, ack_tag;    /* send/recv: the other rank; bcast: the root */
  bool root;                 /* bcast: this rank is the root */
  MPI_Comm comm;
  mmbMergeType op;
  MPI_Status *status;        /* recv: where the header came from */
  const mmbMpiOptions *o;
  /* where MPI reads or writes */
  mmbArrayTile *stage;       /* a row-major duplicate, or NULL */
  void *buf;
  int count;
  MPI_Datatype type, elem;   /* elem: one element; type: what count counts */
  bool writes;               /* the tile's data changes: record it at the end */
  int64_t tiles;             /* in the operation */
  mmbElementType etype;      /* the array's element type (fixed by its layout) */
  bool refused;              /* the exchange said no (every side knows it) */
  /* the exchange */
  header mine, theirs;
  int32_t answer_out, answer_in;
  int64_t sig[2 * SIG_N];
  void *drain;               /* recv: a refused message's bytes */
  MPI_Request rq[3];
  enum phase phase;
  mmbError err;
} transfer;

static const char *type_name(int64_t t) {
  static const char *const names[] = {"bytes", "float", "double", "int32", "int64"};
  return t >= 0 && t < 5 ? names[t] : "?";
}

/* "4 x 3 of 8-byte double" */
static void describe(const header *h, char *out, size_t len) {
  int n = 0;
  for (int64_t k = 0; k < h->rank && k < MMB_MAX_DIMS && n < (int)len; k++)
    n += snprintf(out + n, len - (size_t)n, "%s%lld", k ? " x " : "", (long long)h->dim[k]);
  if (n < (int)len)
    snprintf(out + n, len - (size_t)n, " of %lld-byte %s", (long long)h->esize, type_name(h->type));
}

static bool same_shape(const header *a, const header *b) {
  return a->tiles == b->tiles && a->rank == b->rank && a->esize == b->esize && a->type == b->type &&
         !memcmp(a->dim, b->dim, sizeof a->dim);
}

static mmbError mpi_failed(const transfer *x, int rc, const char *call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", rc);
  say(MMB_LOG_ERROR, x->func, "%s failed: %s", call, text);
  return MMB_ERROR;
}
#define MPI_TRY(x, call)                                                \
  do {                                                                  \
    int rc_ = (call);                                                   \
    if (rc_ != MPI_SUCCESS) return mpi_failed((x), rc_, #call);        \
  } while (0)

/* The element type on the wire: the reduction's basic type, or bytes. */
static mmbError element_type(transfer *x) {
  if (x->kind == ALLREDUCE) {
    switch (x->etype) {
      case MMB_TYPE_FLOAT: x->elem = MPI_FLOAT; return MMB_OK;
      case MMB_TYPE_DOUBLE: x->elem = MPI_DOUBLE; return MMB_OK;
      case MMB_TYPE_INT32: x->elem = MPI_INT32_T; return MMB_OK;
      case MMB_TYPE_INT64: x->elem = MPI_INT64_T; return MMB_OK;
      default: return MMB_INVALID_ARG;   /* refused with the arguments */
    }
  }
  if (x->tile->element_size == 1) {
    x->elem = MPI_BYTE;
    return MMB_OK;
  }
  MPI_TRY(x, MPI_Type_contiguous((int)x->tile->element_size, MPI_BYTE, &x->elem));
  MPI_TRY(x, MPI_Type_commit(&x->elem));
  return MMB_OK;
}

static void free_type(MPI_Datatype *t) {
  if (*t == MPI_DATATYPE_NULL) return;
  int combiner = 0, ni, na, nd;
  MPI_Type_get_envelope(*t, &ni, &na, &nd, &combiner);
  if (combiner != MPI_COMBINER_NAMED) MPI_Type_free(t);
  *t = MPI_DATATYPE_NULL;
}

/* Bytes of the longest run the tile's storage holds in row-major order. */
static size_t row_major_run(const mmbArrayTile *t) {
  size_t run = 1;
  for (size_t k = t->rank; k-- > 0;) {
    if (t->dim[k] > 1 && t->stride[k] != run) break;
    run *= t->dim[k];
  }
  return run * t->element_size;
}

static size_t tile_elements(const mmbArrayTile *t) {
  size_t n = 1;
  for (size_t k = 0; k < t->rank; k++) n *= t->dim[k];
  return n;
}

/* A derived datatype over the tile's storage, nested in index order (the
   last index innermost), so its elements go in row-major order whatever
   the storage's order. */
static mmbError strided_type(transfer *x) {
  const mmbArrayTile *t = x->tile;
  MPI_Datatype inner = x->elem;
  for (size_t k = t->rank; k-- > 0;) {
    MPI_Datatype outer;
    MPI_TRY(x, MPI_Type_create_hvector((int)t->dim[k], 1,
                                       (MPI_Aint)(t->stride[k] * t->element_size), inner, &outer));
    if (inner != x->elem) MPI_Type_free(&inner);
    inner = outer;
  }
  MPI_TRY(x, MPI_Type_commit(&inner));
  x->type = inner;
  x->count = 1;
  return MMB_OK;
}

/* The space a staging duplicate goes to: pinned host memory for a device
   tile (DRAM where there is none), else the tile's own kind of memory. */
static mmbError staging_space(const mmbArrayTile *t, bool device, bool to_host, mmbMemSpace **out) {
  if (!to_host) {
    *out = t->space;
    return MMB_OK;
  }
  if (device && mmb_request_space(MMB_DRAM, MMB_GPU_CUDA, NULL, out) == MMB_OK) return MMB_OK;
  return mmb_request_space(MMB_DRAM, MMB_CPU, NULL, out);
}

/* A row-major duplicate of the tile where MPI reads or writes it. */
static mmbError stage(transfer *x, mmbMemSpace *space, mmbAccessType access) {
  mmbLayout *l;
  mmbError err = mmb_layout_create_regular_nd(x->tile->element_size, x->tile->rank, MMB_ROWMAJOR,
                                              (mmbLayoutPadding){0}, &l);
  if (err != MMB_OK) return err;
  if ((err = mmb_layout_set_element_type(l, x->etype)) == MMB_OK)
    err = mmb_tile_duplicate(x->tile, space, access, l, &x->stage);
  mmbError e2 = mmb_layout_destroy(l);
  if (err != MMB_OK) {
    mmbSpaceInfo info = {.name = "?"};
    if (mmb_space_get_info(space, &info) != MMB_OK) info.name[0] = '?';
    say(MMB_LOG_WARN, x->func, "no staging copy of the tile in %s: %s", info.name,
        mmb_error_string(err));
    return err;
  }
  if (e2 != MMB_OK) return e2;
  x->buf = x->stage->ptr;
  return MMB_OK;
}

/* Decides where MPI reads and writes the tile's elements (see the top). */
static mmbError prepare(transfer *x) {
  mmbTileState st;
  mmbError err = mmb_tile_get_state(x->tile, &st);
  if (err != MMB_OK) return err;
  if (st.soa) {
    say(MMB_LOG_WARN, x->func, "the tile holds SoA records, one plane per field: send an AoS "
        "duplicate of it (mmb_tile_duplicate with an AoS layout)");
    return MMB_UNSUPPORTED;
  }
  bool reads = x->kind == SEND || x->root || x->kind == ALLREDUCE;
  x->writes = x->kind == RECV || (x->kind == BCAST && !x->root) || x->kind == ALLREDUCE;
  if (reads && st.stale) {
    say(MMB_LOG_WARN, x->func, "the tile is a read-only duplicate whose origin was written since");
    return MMB_INVALID_STATE;
  }
  if (x->writes && !st.writable) {
    say(MMB_LOG_WARN, x->func, "the tile is read-only (a read-only duplicate, or a tile of an "
        "array made without MMB_WRITE)");
    return MMB_INVALID_STATE;
  }
  size_t n = tile_elements(x->tile);
  if (n > INT32_MAX) {
    say(MMB_LOG_WARN, x->func, "%zu elements: more than MPI's count can say", n);
    return MMB_OVERFLOW;
  }
  if ((err = element_type(x)) != MMB_OK) return err;
  x->type = x->elem;
  x->count = (int)n;
  bool device = !st.host_accessible, aware = cuda_aware(x->o);
  size_t run = row_major_run(x->tile);
  bool dense = run == n * x->tile->element_size;
  bool pack = !dense && (device || x->kind == ALLREDUCE || x->o->packing == MMB_MPI_PACK_ALWAYS ||
                         (x->o->packing == MMB_MPI_PACK_AUTO && run < x->o->pack_below));
  if ((device && !aware) || pack) {
    mmbMemSpace *space;
    mmbAccessType access = x->kind == ALLREDUCE ? MMB_READ_WRITE : reads ? MMB_READ : MMB_WRITE;
    if ((err = staging_space(x->tile, device, device && !aware, &space)) != MMB_OK) return err;
    return stage(x, space, access);
  }
  /* MPI reads or writes the tile's storage itself: a grid tile's copies
     cached dirty go home first (a send reads what the cache holds, and no
     later write-back puts them over what a receive wrote) */
  if (!st.duplicate && (err = mmb_tile_flush(x->tile)) != MMB_OK) return err;
  x->buf = x->tile->ptr;
  return dense ? MMB_OK : strided_type(x);
}

/* Ends a transfer: the staging copy folds back (or goes), a direct write is
   recorded, the types go. */
static void finish(transfer *x) {
  mmbError err = MMB_OK;
  if (x->stage) {
    bool back = x->err == MMB_OK && x->writes;
    err = back ? mmb_tile_merge(x->stage, MMB_MERGE_OVERWRITE) : mmb_tile_discard(x->stage);
    x->stage = NULL;
  } else if (x->err == MMB_OK && x->writes) {
    err = mmb_tile_mark_written(x->tile);
  }
  if (err != MMB_OK && x->err == MMB_OK) x->err = err;
  if (x->type != x->elem) free_type(&x->type);
  free_type(&x->elem);
  x->type = MPI_DATATYPE_NULL;
  free(x->drain);
  x->drain = NULL;
  x->phase = DONE;
}

static void fill_header(transfer *x, header *h) {
  const mmbArrayTile *t = x->tile;
  *h = (header){.magic = HEADER_MAGIC, .status = x->err, .tiles = x->tiles,
                .rank = (int64_t)t->rank, .esize = (int64_t)t->element_size, .type = x->etype};
  for (size_t k = 0; k < t->rank; k++) h->dim[k] = (int64_t)t->dim[k];
}

/* ---- the state machines ------------------------------------------------------ */

static mmbError start_send(transfer *x) {
  fill_header(x, &x->mine);
  MPI_TRY(x, MPI_Isend(&x->mine, sizeof x->mine, MPI_BYTE, x->peer, x->tag, x->comm, &x->rq[0]));
  if (x->err == MMB_OK)
    MPI_TRY(x, MPI_Isend(x->buf, x->count, x->type, x->peer, x->tag, x->comm, &x->rq[1]));
  MPI_TRY(x, MPI_Irecv(&x->answer_in, 1, MPI_INT32_T, x->peer, x->ack_tag, x->comm, &x->rq[2]));
  x->phase = POSTED;
  return MMB_OK;
}

static mmbError start_recv(transfer *x) {
  MPI_TRY(x, MPI_Irecv(&x->theirs, sizeof x->theirs, MPI_BYTE, x->peer, x->tag, x->comm, &x->rq[0]));
  x->phase = AGREEING;
  return MMB_OK;
}

/* The header is in: answer it, then take the data (or drain it). */
static mmbError recv_header(transfer *x, const MPI_Status *st) {
  int source = st->MPI_SOURCE, tag = st->MPI_TAG, bytes = 0;
  MPI_Get_count(st, MPI_BYTE, &bytes);
  if (x->status && x->status != MPI_STATUS_IGNORE) *x->status = *st;
  if (bytes != (int)sizeof x->theirs || x->theirs.magic != HEADER_MAGIC) {
    say(MMB_LOG_WARN, x->func, "the message from rank %d (tag %d) is not an mmb tile", source, tag);
    x->phase = DONE;
    return MMB_INVALID_ARG;
  }
  fill_header(x, &x->mine);
  char ours[96], theirs[96];
  describe(&x->mine, ours, sizeof ours);
  describe(&x->theirs, theirs, sizeof theirs);
  mmbError answer = x->err;
  if (answer == MMB_OK && x->theirs.status != MMB_OK) {
    say(MMB_LOG_WARN, x->func, "rank %d could not send its tile: %s", source,
        mmb_error_name((mmbError)x->theirs.status));
    answer = MMB_INVALID_ARG;
  } else if (answer == MMB_OK && x->mine.tiles != x->theirs.tiles) {
    say(MMB_LOG_WARN, x->func, "rank %d sends %lld tiles; this side takes %lld", source,
        (long long)x->theirs.tiles, (long long)x->mine.tiles);
    answer = MMB_INVALID_ARG;
  } else if (answer == MMB_OK && !same_shape(&x->mine, &x->theirs)) {
    say(MMB_LOG_WARN, x->func, "rank %d sent %s; this tile is %s", source, theirs, ours);
    answer = MMB_INVALID_ARG;
  }
  x->refused = answer != MMB_OK;
  x->answer_out = answer;
  int ack = tag + (x->ack_tag - x->tag);
  MPI_TRY(x, MPI_Isend(&x->answer_out, 1, MPI_INT32_T, source, ack, x->comm, &x->rq[2]));
  if (answer == MMB_OK) {
    MPI_TRY(x, MPI_Irecv(x->buf, x->count, x->type, source, tag, x->comm, &x->rq[1]));
  } else if (x->theirs.status == MMB_OK) {   /* its data comes anyway: drain it */
    int64_t n = 1;
    for (int64_t k = 0; k < x->theirs.rank && k < MMB_MAX_DIMS; k++) n *= x->theirs.dim[k];
    MPI_Datatype e;
    if (!(x->drain = malloc((size_t)(n * x->theirs.esize) + 1))) return MMB_OUT_OF_MEMORY;
    MPI_TRY(x, MPI_Type_contiguous((int)x->theirs.esize, MPI_BYTE, &e));
    MPI_TRY(x, MPI_Type_commit(&e));
    int rc = MPI_Irecv(x->drain, (int)n, e, source, tag, x->comm, &x->rq[1]);
    MPI_Type_free(&e);   /* (freed once the receive is done) */
    if (rc != MPI_SUCCESS) return mpi_failed(x, rc, "MPI_Irecv");
  }
  x->phase = POSTED;
  return answer;
}

static void sign(transfer *x, int64_t what) {
  header h;
  fill_header(x, &h);
  int64_t *s = x->sig;
  s[0] = x->kind;
  s[1] = what;
  s[2] = h.rank;
  s[3] = h.esize;
  s[4] = h.type;
  s[5] = h.tiles;
  memcpy(&s[6], h.dim, sizeof h.dim);
  s[SIG_N - 1] = x->err == MMB_OK;
  for (int i = 0; i < SIG_N; i++) s[SIG_N + i] = -s[i];
}

static mmbError start_collective(transfer *x) {
  sign(x, x->kind == BCAST ? x->peer : (int64_t)x->op);
  MPI_TRY(x, MPI_Iallreduce(MPI_IN_PLACE, x->sig, 2 * SIG_N, MPI_INT64_T, MPI_MAX, x->comm,
                            &x->rq[0]));
  x->phase = AGREEING;
  return MMB_OK;
}

static MPI_Op reduction(mmbMergeType op) {
  return op == MMB_MERGE_MIN ? MPI_MIN : op == MMB_MERGE_MAX ? MPI_MAX : MPI_SUM;
}

/* The signature is agreed: every rank sees the same maxima and minima. */
static mmbError collective_agreed(transfer *x) {
  const int64_t *s = x->sig;
  bool differ = false;
  for (int i = 0; i < SIG_N - 1; i++) differ |= s[i] != -s[SIG_N + i];
  x->phase = DONE;
  x->refused = true;
  if (differ) {
    char ours[96];
    header h;
    fill_header(x, &h);
    describe(&h, ours, sizeof ours);
    say(MMB_LOG_WARN, x->func, "the ranks' tiles or %s differ (this rank: %s, %s %d)",
        x->kind == BCAST ? "roots" : "reductions", ours, x->kind == BCAST ? "root" : "reduction",
        x->kind == BCAST ? x->peer : (int)x->op);
    return MMB_INVALID_ARG;
  }
  if (-s[2 * SIG_N - 1] == 0) {   /* the least ok */
    if (x->err == MMB_OK) say(MMB_LOG_WARN, x->func, "another rank could not take part");
    return MMB_INVALID_ARG;
  }
  /* Every rank is here and agrees: the collective itself cannot wait on a
     missing rank, so it is the blocking one, which MPI implements far
     better than its non-blocking twin (Open MPI 4.1: 4 MiB all-reduced in
     0.2 ms against 0.8 ms; bench/mpi). */
  x->refused = false;
  x->phase = POSTED;
  if (x->kind == BCAST)
    MPI_TRY(x, MPI_Bcast(x->buf, x->count, x->type, x->peer, x->comm));
  else
    MPI_TRY(x, MPI_Allreduce(MPI_IN_PLACE, x->buf, x->count, x->type, reduction(x->op), x->comm));
  return MMB_OK;
}

static mmbError start(transfer *x) {
  switch (x->kind) {
    case SEND: return start_send(x);
    case RECV: return start_recv(x);
    default: return start_collective(x);
  }
}

/* Moves a started transfer on; true when it did. */
static bool step(transfer *x) {
  int flag = 0;
  MPI_Status st;
  mmbError err = MMB_OK;
  if (x->phase == AGREEING) {
    if (MPI_Test(&x->rq[0], &flag, &st) != MPI_SUCCESS) err = MMB_ERROR;
    else if (flag) err = x->kind == RECV ? recv_header(x, &st) : collective_agreed(x);
  } else if (x->phase == POSTED) {
    if (MPI_Testall(3, x->rq, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) err = MMB_ERROR;
    else if (flag) {
      if (x->kind == SEND) x->refused = x->err != MMB_OK || x->answer_in != MMB_OK;
      if (x->kind == SEND && x->err == MMB_OK && x->answer_in != MMB_OK) {
        say(MMB_LOG_WARN, x->func, "rank %d refused the tile (%s)", x->peer,
            mmb_error_name((mmbError)x->answer_in));
        err = MMB_INVALID_ARG;
      }
      x->phase = DONE;
    }
  }
  if (err != MMB_OK && x->err == MMB_OK) x->err = err;
  if (x->phase == DONE) finish(x);
  return flag;
}

/* Gives up on what is still pending at the deadline: receives are
   cancelled; what cannot be (sends MPI will not cancel, collectives) is
   left to MPI with its buffers, which are never freed. */
static bool abandon(transfer *x) {
  bool leak = false;
  for (int i = 0; i < 3; i++) {
    if (x->rq[i] == MPI_REQUEST_NULL) continue;
    int flag = 0;
    if (x->kind != BCAST && x->kind != ALLREDUCE) {
      MPI_Cancel(&x->rq[i]);
      for (int tries = 0; tries < 1000 && !flag; tries++) MPI_Test(&x->rq[i], &flag, MPI_STATUS_IGNORE);
    }
    if (!flag) leak = true;
  }
  if (!leak) {
    x->err = MMB_TIMEOUT;
    finish(x);
  }
  return leak;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* How long to wait between polls of MPI, by how long nothing has moved:
   poll hard for the first 50 us (a shared-memory round trip), then yield
   the core between polls until 1 ms (a peer a moment behind: the ranks'
   computing threads get the core if they want it), then sleep between
   polls, 50 us at first and twice as long each time up to 1 ms. A rank
   waiting for a late peer so leaves its cores to the threads beside it
   (about 1% of one core), while one whose transfers keep moving polls at
   once. */
typedef struct idle {
  double since;    /* when something last moved */
  long sleep_ns;   /* the next sleep; 0 before the first */
} idle;

static void backoff(idle *w, bool moved) {
  double t = now();
  if (moved) {
    w->since = t;
    w->sleep_ns = 0;
    return;
  }
  double waited = t - w->since;
  if (waited < 50e-6) return;
  if (waited < 1e-3) {
    sched_yield();
    return;
  }
  w->sleep_ns = w->sleep_ns ? (w->sleep_ns * 2 > 1000000 ? 1000000 : w->sleep_ns * 2) : 50000;
  nanosleep(&(struct timespec){0, w->sleep_ns}, NULL);
}

/* Runs n transfers to their end (or the deadline): each is prepared when
   it starts, so staging copies live no longer than their transfer. The
   first error; *leaked when MPI still holds some of xs after a timeout
   (the caller must then never free them). */
static mmbError drive(transfer *xs, size_t n, bool *leaked) {
  double deadline = now() + xs[0].o->timeout;
  size_t started = 0, done = 0;
  idle wait = {.since = now()};
  *leaked = false;
  while (done < n) {
    bool moved = false;
    /* The first tile goes alone: it settles whether the ranks agree on the
       operation (its tile count) before any other tile is on the wire. */
    while (started < n && (started == 0 || xs[started - 1].phase >= POSTED) &&
           (started != 1 || xs[0].phase == DONE)) {
      transfer *x = &xs[started++];
      if (started > 1 && xs[0].refused) {   /* every side refuses the rest */
        x->err = MMB_INVALID_ARG;
        x->phase = DONE;
        continue;
      }
      if (x->phase == NEW) {   /* (DONE already: MPI_PROC_NULL) */
        x->err = prepare(x);   /* a failure still starts: the peers learn of it */
        mmbError err = start(x);
        if (err != MMB_OK) {
          if (x->err == MMB_OK) x->err = err;
          finish(x);
        }
      }
      moved = true;
    }
    done = 0;
    for (size_t i = 0; i < started; i++) {
      if (xs[i].phase != DONE) moved |= step(&xs[i]);
      done += xs[i].phase == DONE;
    }
    if (done == n) break;
    if (now() > deadline) {
      for (size_t i = 0; i < n; i++) {
        if (xs[i].phase == DONE) continue;
        if (i < started) *leaked |= abandon(&xs[i]);
        else {
          xs[i].err = MMB_TIMEOUT;
          finish(&xs[i]);
        }
      }
      say(MMB_LOG_WARN, xs[0].func, "no answer from the other ranks in %g s (MMB_MPI_TIMEOUT)%s",
          xs[0].o->timeout, *leaked ? ": the communicator still holds pending operations" : "");
      return MMB_TIMEOUT;
    }
    backoff(&wait, moved);
  }
  mmbError first = MMB_OK;
  for (size_t i = 0; i < n && first == MMB_OK; i++) first = xs[i].err;
  return first;
}

/* ---- operations: the transfers of one call ------------------------------------ */

typedef struct operation {
  mmbMpiOptions o;
  size_t n;
  transfer xs[];
} operation;

/* What one call asks. */
typedef struct call {
  enum kind kind;
  const char *func;
  int peer, tag;             /* bcast: peer is the root */
  MPI_Comm comm;
  mmbMergeType op;
  MPI_Status *status;
} call;

static mmbError check_call(const call *c, int *rank) {
  mmbError err = ready(c->func);
  if (err != MMB_OK) return err;
  int size, tag_max;
  if (c->comm == MPI_COMM_NULL) {
    say(MMB_LOG_DEBUG, c->func, "comm is MPI_COMM_NULL");
    return MMB_INVALID_ARG;
  }
  if (MPI_Comm_size(c->comm, &size) != MPI_SUCCESS || MPI_Comm_rank(c->comm, rank) != MPI_SUCCESS ||
      (err = mmb_mpi_tag_max(&tag_max)) != MMB_OK)
    return err != MMB_OK ? err : MMB_INVALID_ARG;
  bool in_comm = c->peer >= 0 && c->peer < size;
  switch (c->kind) {
    case SEND:
    case RECV:
      if (!in_comm && c->peer != MPI_PROC_NULL && !(c->kind == RECV && c->peer == MPI_ANY_SOURCE)) {
        say(MMB_LOG_DEBUG, c->func, "rank %d is not in the communicator (size %d)", c->peer, size);
        return MMB_INVALID_ARG;
      }
      if ((c->tag < 0 || c->tag > tag_max) && !(c->kind == RECV && c->tag == MPI_ANY_TAG)) {
        say(MMB_LOG_DEBUG, c->func, "tag %d is outside 0..%d (mmb_mpi_tag_max)", c->tag, tag_max);
        return MMB_INVALID_ARG;
      }
      return MMB_OK;
    case BCAST:
      if (!in_comm) say(MMB_LOG_DEBUG, c->func, "root %d is not in the communicator", c->peer);
      return in_comm ? MMB_OK : MMB_INVALID_ARG;
    case ALLREDUCE:
      if (c->op == MMB_MERGE_SUM || c->op == MMB_MERGE_MIN || c->op == MMB_MERGE_MAX) return MMB_OK;
      say(MMB_LOG_DEBUG, c->func, "reduction %d is not SUM, MIN or MAX", (int)c->op);
      return MMB_INVALID_ARG;
  }
  return MMB_INVALID_ARG;
}

/* A tile the call can take; its element type. */
static mmbError check_tile(const call *c, mmbArrayTile *t, mmbElementType *type) {
  mmbTileState st;
  mmbError err = mmb_tile_get_state(t, &st);
  if (err != MMB_OK) return err;
  *type = st.type;
  if (c->kind == ALLREDUCE && st.type == MMB_TYPE_BYTES) {
    say(MMB_LOG_DEBUG, c->func, "a reduction needs an element type (mmb_layout_set_element_type)");
    return MMB_INVALID_ARG;
  }
  return MMB_OK;
}

static void setup(transfer *x, const call *c, mmbArrayTile *t, mmbElementType etype,
                  const mmbMpiOptions *o, int rank, int tag_max, size_t tiles) {
  *x = (transfer){.kind = c->kind, .func = c->func, .tile = t, .peer = c->peer, .tag = c->tag,
                  .ack_tag = c->tag + tag_max + 1, .comm = c->comm, .op = c->op,
                  .status = c->status, .o = o, .root = c->kind == BCAST && c->peer == rank,
                  .tiles = (int64_t)tiles, .etype = etype,
                  .type = MPI_DATATYPE_NULL, .elem = MPI_DATATYPE_NULL,
                  .rq = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
  if ((c->kind == SEND || c->kind == RECV) && c->peer == MPI_PROC_NULL) x->phase = DONE;
}

/* The transfers of a call: the tile, or every tile of the array in the
   grid's row-major order. Argument errors come back here, nothing sent. */
static mmbError operation_new(const call *c, mmbArrayTile *tile, mmbArray *array, operation **out) {
  int rank, tag_max;
  mmbError err = check_call(c, &rank);
  if (err != MMB_OK) return err;
  if (!tile && !array) return MMB_INVALID_ARG;
  if (array && c->kind == RECV && c->peer == MPI_ANY_SOURCE) {
    say(MMB_LOG_DEBUG, c->func, "an array's tiles must come from one rank, not MPI_ANY_SOURCE");
    return MMB_INVALID_ARG;
  }
  mmbDimensions grid = {.size = 1, .d = {1}};
  if (array && (err = mmb_array_tile_grid(array, &grid)) != MMB_OK) return err;
  size_t n = 1;
  for (size_t k = 0; k < grid.size; k++) n *= grid.d[k];
  operation *op = malloc(sizeof *op + n * sizeof op->xs[0]);
  if (!op) return MMB_OUT_OF_MEMORY;
  op->o = options_now();
  op->n = n;
  if ((err = mmb_mpi_tag_max(&tag_max)) != MMB_OK) goto fail;
  mmbIndex at = {.size = grid.size};
  for (size_t i = 0; i < n; i++) {
    mmbArrayTile *t = tile;
    if (array) {
      for (size_t k = grid.size, rest = i; k-- > 0; rest /= grid.d[k]) at.d[k] = rest % grid.d[k];
      if ((err = mmb_tile_at(array, &at, &t)) != MMB_OK) goto fail;
    }
    mmbElementType etype;
    if ((err = check_tile(c, t, &etype)) != MMB_OK) goto fail;
    setup(&op->xs[i], c, t, etype, &op->o, rank, tag_max, n);
  }
  *out = op;
  return MMB_OK;
fail:
  free(op);
  return err;
}

/* Runs an operation to its end and frees it (unless MPI still holds it). */
static mmbError operation_run(operation *op) {
  bool leaked;
  mmbError err = drive(op->xs, op->n, &leaked);
  if (!leaked) free(op);
  return err;
}

static mmbError task(void *arg) { return operation_run(arg); }

static mmbError run(const call *c, mmbArrayTile *tile, mmbArray *array) {
  operation *op;
  mmbError err = operation_new(c, tile, array, &op);
  return err != MMB_OK ? err : operation_run(op);
}

static mmbError run_async(const call *c, mmbArrayTile *tile, mmbArray *array, mmbQueue *q,
                          mmbRequest *req) {
  int level = MPI_THREAD_SINGLE;
  operation *op;
  mmbError err = operation_new(c, tile, array, &op);
  if (err != MMB_OK) return err;
  if (!q) err = MMB_INVALID_ARG;
  else if (MPI_Query_thread(&level) != MPI_SUCCESS || level < MPI_THREAD_MULTIPLE) {
    say(MMB_LOG_WARN, c->func, "a queue's thread calls MPI: MPI_Init_thread with "
        "MPI_THREAD_MULTIPLE first");
    err = MMB_UNSUPPORTED;
  } else {
    err = mmb_queue_submit_task(q, task, op, req);
  }
  if (err != MMB_OK) free(op);
  return err;
}

/* ---- the API ------------------------------------------------------------------ */

#define CALL(kind_, peer_, tag_, comm_, op_, status_) \
  (&(call){.kind = (kind_), .func = __func__, .peer = (peer_), .tag = (tag_), .comm = (comm_), \
           .op = (op_), .status = (status_)})

mmbError mmb_mpi_tile_send(mmbArrayTile *tile, int dest, int tag, MPI_Comm comm) {
  return tile ? run(CALL(SEND, dest, tag, comm, 0, NULL), tile, NULL) : MMB_INVALID_ARG;
}
mmbError mmb_mpi_tile_recv(mmbArrayTile *tile, int source, int tag, MPI_Comm comm,
                           MPI_Status *status) {
  return tile ? run(CALL(RECV, source, tag, comm, 0, status), tile, NULL) : MMB_INVALID_ARG;
}
mmbError mmb_mpi_tile_bcast(mmbArrayTile *tile, int root, MPI_Comm comm) {
  return tile ? run(CALL(BCAST, root, 0, comm, 0, NULL), tile, NULL) : MMB_INVALID_ARG;
}
mmbError mmb_mpi_tile_allreduce(mmbArrayTile *tile, mmbMergeType op, MPI_Comm comm) {
  return tile ? run(CALL(ALLREDUCE, 0, 0, comm, op, NULL), tile, NULL) : MMB_INVALID_ARG;
}
mmbError mmb_mpi_array_send(mmbArray *array, int dest, int tag, MPI_Comm comm) {
  return array ? run(CALL(SEND, dest, tag, comm, 0, NULL), NULL, array) : MMB_INVALID_ARG;
}
mmbError mmb_mpi_array_recv(mmbArray *array, int source, int tag, MPI_Comm comm) {
  return array ? run(CALL(RECV, source, tag, comm, 0, NULL), NULL, array) : MMB_INVALID_ARG;
}
mmbError mmb_mpi_array_bcast(mmbArray *array, int root, MPI_Comm comm) {
  return array ? run(CALL(BCAST, root, 0, comm, 0, NULL), NULL, array) : MMB_INVALID_ARG;
}
mmbError mmb_mpi_array_allreduce(mmbArray *array, mmbMergeType op, MPI_Comm comm) {
  return array ? run(CALL(ALLREDUCE, 0, 0, comm, op, NULL), NULL, array) : MMB_INVALID_ARG;
}

mmbError mmb_mpi_tile_send_async(mmbArrayTile *tile, int dest, int tag, MPI_Comm comm,
                                 mmbQueue *q, mmbRequest *req) {
  return tile ? run_async(CALL(SEND, dest, tag, comm, 0, NULL), tile, NULL, q, req)
              : MMB_INVALID_ARG;
}
mmbError mmb_mpi_tile_recv_async(mmbArrayTile *tile, int source, int tag, MPI_Comm comm,
                                 mmbQueue *q, mmbRequest *req) {
  return tile ? run_async(CALL(RECV, source, tag, comm, 0, NULL), tile, NULL, q, req)
              : MMB_INVALID_ARG;
}
mmbError mmb_mpi_tile_bcast_async(mmbArrayTile *tile, int root, MPI_Comm comm, mmbQueue *q,
                                  mmbRequest *req) {
  return tile ? run_async(CALL(BCAST, root, 0, comm, 0, NULL), tile, NULL, q, req)
              : MMB_INVALID_ARG;
}
mmbError mmb_mpi_tile_allreduce_async(mmbArrayTile *tile, mmbMergeType op, MPI_Comm comm,
                                      mmbQueue *q, mmbRequest *req) {
  return tile ? run_async(CALL(ALLREDUCE, 0, 0, comm, op, NULL), tile, NULL, q, req)
              : MMB_INVALID_ARG;
}
mmbError mmb_mpi_array_send_async(mmbArray *array, int dest, int tag, MPI_Comm comm,
                                  mmbQueue *q, mmbRequest *req) {
  return array ? run_async(CALL(SEND, dest, tag, comm, 0, NULL), NULL, array, q, req)
               : MMB_INVALID_ARG;
}
mmbError mmb_mpi_array_recv_async(mmbArray *array, int source, int tag, MPI_Comm comm,
                                  mmbQueue *q, mmbRequest *req) {
  return array ? run_async(CALL(RECV, source, tag, comm, 0, NULL), NULL, array, q, req)
               : MMB_INVALID_ARG;
}
mmbError mmb_mpi_array_bcast_async(mmbArray *array, int root, MPI_Comm comm, mmbQueue *q,
                                   mmbRequest *req) {
  return array ? run_async(CALL(BCAST, root, 0, comm, 0, NULL), NULL, array, q, req)
               : MMB_INVALID_ARG;
}
mmbError mmb_mpi_array_allreduce_async(mmbArray *array, mmbMergeType op, MPI_Comm comm,
                                       mmbQueue *q, mmbRequest *req) {
  return array ? run_async(CALL(ALLREDUCE, 0, 0, comm, op, NULL), NULL, array, q, req)
               : MMB_INVALID_ARG;
}

/* ---- ScaLAPACK ------------------------------------------------------------ */

mmbError mmb_mpi_array_descriptor(mmbArray *array, int blacs_context, int desc[9]) {
  mmbError err = ready(__func__);
  if (err != MMB_OK) return err;
  if (!array || !desc) {
    say(MMB_LOG_DEBUG, __func__, "NULL argument");
    return MMB_INVALID_ARG;
  }
  mmbBlockCyclic bc;
  mmbDimensions dims, strides;
  if ((err = mmb_array_get_block_cyclic(array, &bc)) != MMB_OK ||
      (err = mmb_array_get_dims(array, &dims)) != MMB_OK ||
      (err = mmb_array_get_strides(array, &strides)) != MMB_OK)
    return err;
  mmbField second;
  if (mmb_array_get_field(array, 1, &second) == MMB_OK) {
    say(MMB_LOG_DEBUG, __func__, "ScaLAPACK takes matrices of numbers, not records of fields");
    return MMB_INVALID_ARG;
  }
  if (bc.rank != 2 || strides.d[0] != 1) {
    say(MMB_LOG_DEBUG, __func__, "ScaLAPACK takes matrices in column-major order (rank %zu, "
        "row stride %zu)", bc.rank, strides.d[0]);
    return MMB_INVALID_ARG;
  }
  if (!mmb_array_ptr(array)) {
    say(MMB_LOG_DEBUG, __func__, "the local part is not in host memory");
    return MMB_INVALID_STATE;
  }
  size_t v[9] = {1, 0, bc.global[0], bc.global[1], bc.block[0], bc.block[1], bc.source[0],
                 bc.source[1], strides.d[1] > 1 ? strides.d[1] : 1};
  for (int i = 0; i < 9; i++) {
    if (v[i] > INT_MAX) {
      say(MMB_LOG_DEBUG, __func__, "descriptor entry %d (%zu) is past INT_MAX", i, v[i]);
      return MMB_OVERFLOW;
    }
    desc[i] = (int)v[i];
  }
  desc[1] = blacs_context;
  return MMB_OK;
}
