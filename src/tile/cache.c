/* The tile cache (mmb/cache.h): per space, the copies of tiles acquired
   there, each a duplicate of its tile (tile.c keeps the coherence record),
   on a list in order of use (least recent first). A copy is pinned while
   acquired; dirty from an acquire with MMB_WRITE until it is written home.

   Eviction takes, in order: unpinned copies advised WONTNEED, then the
   others (not KEEP) least recently used first, then those advised
   WILLNEED; a WILLNEED hint takes only the clean, idle ones among the
   first two kinds, so that it never waits. Before it evicts anything, an
   acquire checks that what may be evicted makes room at all; otherwise it
   is refused at once, so two tiles that each need the other's room cannot
   evict each other in turn.
   Dirty copies are written home ahead of need on a release, least
   recently used first, while they hold more than the budget's dirty share,
   so that eviction mostly drops clean copies.

   One lock guards every cache, never while data moves. A synchronous
   fetch or refresh makes its copy under the lock (an allocation it makes
   may run the space's out-of-memory chain, which skips the cache while
   this thread holds the lock: the acquire evicts for itself), pins it, and
   moves the data once it has let the lock go, as a job deferred to it
   whose request stands in the copy's hazard slot: work on the tile or the
   copy after it is ordered after it, as after a queue's. An acquire that
   finds a copy still arriving (a prefetch, another thread's fetch) pins it
   and waits with the lock let go too. So two threads' misses move their
   data at once, and hits and releases never wait for another's copy.

   A copy whose data failed to arrive is lost: the acquire that waited for
   it says so (a synchronous one tries once more; an asynchronous one's
   request ends with the error), and the next acquire that reads it copies
   it again; a lost copy is clean, so nothing of it goes home. An
   asynchronous acquire's work never takes the lock: a thread that holds
   it may be waiting for work queued after it. */
#include "tile/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct mmb__cache_entry cache_entry;
typedef struct space_cache space_cache;

struct mmb__cache_entry {
  mmb__tile *tile;               /* the tile cached */
  mmb__tile *copy;               /* its duplicate in the space */
  space_cache *sc;
  size_t bytes;
  unsigned pins, write_pins;
  bool dirty;
  mmbAdvice advice;
  mmb__request *arrival;         /* the copy's data on its way (a reference); NULL: here */
  bool lost;                     /* it failed to arrive: undefined until copied again */
  mmbError lost_err;             /* why */
  cache_entry *prev, *next;      /* the space's list, least recently used first */
  cache_entry *next_of_tile;     /* the tile's copies in other spaces */
};

struct space_cache {
  mmbMemSpace *space;
  size_t budget;                 /* 0: the space's limit */
  double clean_share;
  size_t used, dirty, pinned;    /* bytes */
  cache_entry *head, *tail;
  mmbQueue *queue;               /* prefetches and write-backs ahead of need */
  mmbCacheStats stats;
  space_cache *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static space_cache *caches;
/* MMB_CACHE's settings, a new cache's in a space of the layer */
static mmbCacheConfig layer_default[MMB__LAYERS];
static _Thread_local bool held;   /* this thread holds the lock */

static void cache_lock(void) {
  pthread_mutex_lock(&lock);
  held = true;
}
static void cache_unlock(void) {
  held = false;
  pthread_mutex_unlock(&lock);
}

/* A public call takes the lock through this. This thread already holds it
   only when the call comes from an out-of-memory handler that the cache's
   own allocation reached (a fetch refused by its space): waiting would be
   waiting on itself, so the call is refused, and the fetch goes on. */
static mmbError refuse_held(const char *func) {
  return mmb__fail(MMB_BUSY, func, "the tile cache is allocating a copy on this thread (the "
                   "call comes from an out-of-memory handler): call it after the handler");
}
static mmbError cache_enter(const char *func) {
  if (held) return refuse_held(func);
  cache_lock();
  return MMB_OK;
}
/* Reads may come from such a handler: the lock is this thread's already.
   True when this took it (and so lets it go). */
static bool cache_lock_to_read(void) {
  if (held) return false;
  cache_lock();
  return true;
}

static space_cache *find_cache(const mmbMemSpace *space) {
  for (space_cache *c = caches; c; c = c->next)
    if (c->space == space) return c;
  return NULL;
}

static space_cache *cache_of(mmbMemSpace *space) {
  space_cache *c = find_cache(space);
  if (c) return c;
  if (!(c = mmb__calloc(1, sizeof *c))) return NULL;
  c->space = space;
  c->budget = layer_default[space->info.layer].budget_bytes;
  c->clean_share = layer_default[space->info.layer].clean_share;
  c->next = caches;
  caches = c;
  return c;
}

static size_t budget_of(const space_cache *c) {
  if (c->budget) return c->budget;
  mmbSpaceInfo info;
  return mmb_space_get_info(c->space, &info) == MMB_OK ? info.limit : SIZE_MAX;
}

/* ---- the list ------------------------------------------------------------- */

static void unlink_entry(cache_entry *e) {
  space_cache *c = e->sc;
  if (e->prev) e->prev->next = e->next;
  else c->head = e->next;
  if (e->next) e->next->prev = e->prev;
  else c->tail = e->prev;
  e->prev = e->next = NULL;
}

static void append(cache_entry *e) {   /* the most recently used */
  space_cache *c = e->sc;
  e->prev = c->tail;
  e->next = NULL;
  if (c->tail) c->tail->next = e;
  else c->head = e;
  c->tail = e;
}

static void prepend(cache_entry *e) {   /* the first to go */
  space_cache *c = e->sc;
  e->next = c->head;
  e->prev = NULL;
  if (c->head) c->head->prev = e;
  else c->tail = e;
  c->head = e;
}

static cache_entry *entry_in(const mmb__tile *t, const space_cache *c) {
  for (cache_entry *e = t->cached; e; e = e->next_of_tile)
    if (e->sc == c) return e;
  return NULL;
}

static void set_dirty(cache_entry *e, bool dirty) {
  if (e->dirty == dirty) return;
  e->dirty = dirty;
  if (dirty) e->sc->dirty += e->bytes;
  else e->sc->dirty -= e->bytes;
}

static void pin(cache_entry *e, bool write) {
  if (!e->pins++) e->sc->pinned += e->bytes;
  if (write) e->write_pins++;
}

static void unpin(cache_entry *e) {
  if (!--e->pins) e->sc->pinned -= e->bytes;
  if (e->write_pins > e->pins) e->write_pins = e->pins;
}

static void drop_arrival(cache_entry *e) {
  if (e->arrival) mmb__request_unref(e->arrival);
  e->arrival = NULL;
}

/* The copy's data is on its way: the last work on the copy (the job just
   started or deferred) stands for it. */
static void arriving(cache_entry *e) {
  drop_arrival(e);
  if ((e->arrival = e->copy->pending)) mmb__request_ref(e->arrival);
}

/* True when no data is on its way to the copy (any more). A copy that
   failed to arrive is lost, and clean: its bytes are undefined. */
static bool arrived(cache_entry *e) {
  if (!e->arrival) return true;
  if (!mmb__request_done(e->arrival)) return false;
  mmbError err = mmb__request_wait(e->arrival);   /* done: its error at once */
  if (err != MMB_OK) {
    e->lost = true;
    e->lost_err = err;
    set_dirty(e, false);
  }
  drop_arrival(e);
  return true;
}

/* A cache event in the trace, with the cache's occupancy after it. */
static void note(mmb__cache_event what, const space_cache *c, mmb__tile *t, size_t bytes,
                 unsigned flags) {
  static uint64_t last_id;   /* under the lock */
  if (!mmb__trace_active()) return;
  if (!t->cache_id) t->cache_id = ++last_id;
  mmb__cache_levels after = {c->used, c->dirty, c->pinned, budget_of(c)};
  mmb__trace_cache(what, c->space, t->cache_id, bytes, flags, &after);
}

static void count_writeback(cache_entry *e) {
  e->sc->stats.writebacks++;
  e->sc->stats.writeback_bytes += e->bytes;
}

/* The copy's data written home (on q; NULL: now); it stays cached, clean. */
static mmbError write_home(const char *func, cache_entry *e, mmbQueue *q) {
  mmbError err = mmb__tile_write_back(func, e->copy, q);
  if (err != MMB_OK) return err;
  count_writeback(e);
  set_dirty(e, false);
  note(MMB__CACHE_WRITEBACK, e->sc, e->tile, e->bytes, 0);
  return MMB_OK;
}

/* The entry goes: its copy released (written home first when dirty; with
   q, on q: the copy's bytes are freed once they are home). */
static mmbError evict(const char *func, cache_entry *e, bool write_back, mmbQueue *q) {
  space_cache *c = e->sc;
  (void)arrived(e);   /* a lost copy is clean: none of it goes home */
  bool writes = write_back && e->dirty;
  mmbError err = mmb__tile_release_dup(func, e->copy, writes, writes ? q : NULL);
  if (err != MMB_OK) return err;
  if (writes) count_writeback(e);
  else if (!e->dirty) c->stats.clean_drops++;
  set_dirty(e, false);
  unlink_entry(e);
  cache_entry **link = &e->tile->cached;
  while (*link != e) link = &(*link)->next_of_tile;
  *link = e->next_of_tile;
  c->used -= e->bytes;
  e->tile->evicted_from = c->space;
  mmbArray *a = e->tile->array;
  if (a) a->n_cached--;
  note(MMB__CACHE_EVICT, c, e->tile, e->bytes, writes ? MMB__CACHE_FLAG_DONE : 0);
  drop_arrival(e);
  mmb__free(e);
  return MMB_OK;
}

/* A victim whose room comes back at once: clean, and nothing on its way to
   it, home from it or to its tile. (A dirty one's room comes back once it
   is home; a busy one's once the work on it is done.) */
static bool free_now(cache_entry *e) {
  return arrived(e) && !e->dirty && mmb__tile_dup_idle(e->copy);
}

/* The rank of an unpinned entry among the victims: lower goes first; -1
   never (pinned, or KEEP). A hint spares the copies advised WILLNEED, and
   takes only those whose room comes back at once. */
static int victim_rank(cache_entry *e, bool hint) {
  if (e->pins || e->advice == MMB_ADVICE_KEEP) return -1;
  if (hint && (e->advice == MMB_ADVICE_WILLNEED || !free_now(e))) return -1;
  if (e->advice == MMB_ADVICE_WONTNEED) return 0;
  return e->advice == MMB_ADVICE_WILLNEED ? 2 : 1;
}

/* Bytes that eviction could free. */
static size_t evictable(space_cache *c, bool hint) {
  size_t n = 0;
  for (cache_entry *e = c->head; e; e = e->next)
    if (victim_rank(e, hint) >= 0) n += e->bytes;
  return n;
}

/* The cache's own queue (prefetches, write-backs), made on first use. */
static mmbQueue *queue_of(space_cache *c) {
  if (!c->queue &&
      mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &c->queue) != MMB_OK)
    c->queue = NULL;
  return c->queue;
}

/* Evicts until `need` more bytes fit the budget (or, with `any`, evicts one
   more victim if there is one: the space itself had no room). Dirty
   victims are written home on the cache's queue, so that a fetch does not
   wait for them (a fetch the space refuses meanwhile waits for the queue
   and tries again); a busy one is waited for. A hint takes only victims
   whose room comes back at once, in the same order, so that it never
   waits: the queue is still busy with what would make its room, and the
   hint is not taken. MMB_OUT_OF_MEMORY: no room can be made (nothing was
   evicted then, unless `any`). */
static mmbError make_room(const char *func, space_cache *c, size_t need, bool hint, bool any) {
  size_t budget = budget_of(c);
  if (!any) {
    if (need <= budget && c->used <= budget - need) return MMB_OK;
    if (need > budget || c->used - evictable(c, hint) > budget - need) return MMB_OUT_OF_MEMORY;
  }
  for (int rank = 0; rank <= 2; rank++) {
    for (cache_entry *e = c->head, *next; e; e = next) {
      next = e->next;
      if (victim_rank(e, hint) != rank) continue;
      mmbError err = evict(func, e, true, queue_of(c));
      if (err != MMB_OK) return err;
      if (any) return MMB_OK;
      if (c->used <= budget - need) return MMB_OK;
    }
  }
  return MMB_OUT_OF_MEMORY;
}

/* Writes the least recently used dirty, unpinned copies home on the
   cache's queue while dirty bytes exceed the budget's dirty share, when
   the cache is under pressure: the next miss of a copy like the one just
   released would have to evict. (When everything fits, nothing is written
   ahead: nothing will be evicted.) */
static void write_ahead(const char *func, space_cache *c, size_t released) {
  size_t budget = budget_of(c);
  if (c->used + released <= budget) return;
  double allowed = (1.0 - c->clean_share) * (double)budget;
  for (cache_entry *e = c->head; e && (double)c->dirty > allowed; e = e->next) {
    if (!arrived(e) || !e->dirty || e->pins) continue;
    if (!queue_of(c) || write_home(func, e, c->queue) != MMB_OK) return;
  }
}

/* ---- arguments ---------------------------------------------------------------- */

static mmbError tile_arg(const char *func, mmbArrayTile *tile, mmb__tile **out) {
  MMB__HANDLE(tile, MMB__KIND_TILE, func, "tile");
  mmb__tile *t = (mmb__tile *)tile;
  MMB__ARG(t->origin, func, "the tile is a duplicate (or a cached copy): acquire its origin");
  *out = t;
  return MMB_OK;
}

static bool tile_writable(const mmb__tile *t) { return t->array->access & MMB_WRITE; }

/* The access a cached copy is made with: writable when its tile is, so
   that any later acquire may write it; copied in only for a read. */
static mmbAccessType copy_access(const mmb__tile *t, mmbAccessType access) {
  mmbAccessType a = access & MMB_READ ? MMB_READ : 0;
  return (mmbAccessType)(tile_writable(t) ? a | MMB_WRITE : a | MMB_READ);
}

/* ---- acquire and release ------------------------------------------------------- */

/* The copy of t is made in c's space and its data moves on q (NULL: now;
   with `later`, when the caller runs the job it gets there). */
static mmbError fetch(const char *func, space_cache *c, mmb__tile *t, mmbAccessType access,
                      mmbQueue *q, mmbRequest *req, mmb__deferred **later, bool hint,
                      cache_entry **out) {
  mmb__view v = mmb__tile_view(t);
  size_t bytes = mmb__view_bytes(&v);
  mmbError err = make_room(func, c, bytes, hint, false);
  if (err != MMB_OK) return err;
  cache_entry *e = mmb__calloc(1, sizeof *e);
  if (!e) return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for a cache entry");
  mmb__tile *copy;
  /* the space may hold other data than the cache's, or copies on their way
     home: when it has no room, wait for those, then evict one more copy and
     try again, while there is one. A dirty victim's bytes come back only
     once its write-back is done: each eviction is waited for before the
     next, or a fetch would evict everything and give up in a space that
     its write-backs were about to free. (A hint waits for nothing.) */
  bool waited = false;
  while ((err = mmb__tile_duplicate_in(func, t, c->space, copy_access(t, access), q, req,
                                       later, &copy)) == MMB_OUT_OF_MEMORY) {
    if (!hint && !waited && c->queue) {
      waited = true;
      if ((err = mmb_queue_synchronize(c->queue)) != MMB_OK) break;
      continue;
    }
    if (make_room(func, c, bytes, hint, true) != MMB_OK) break;
    waited = false;
  }
  if (err != MMB_OK) {
    mmb__free(e);
    return err;
  }
  *e = (cache_entry){.tile = t, .copy = copy, .sc = c, .bytes = bytes,
                     .next_of_tile = t->cached};
  t->cached = e;
  copy->entry = e;
  arriving(e);
  append(e);
  c->used += bytes;
  if (t->array) {
    t->array->n_cached++;
    t->array->cache_drop = mmb__cache_drop_array;
  }
  c->stats.misses++;
  if (t->evicted_from == c->space) c->stats.refetches++;
  if (access & MMB_READ) c->stats.fetched_bytes += bytes;
  *out = e;
  return MMB_OK;
}

/* Work on a queue that ends as the copy's arrival did: the acquire's
   request tells whether the data it waited for came. */
typedef struct arrival_check {
  mmb__work w;
  mmb__request *arrival;   /* a reference */
} arrival_check;

static mmbError check_arrival(mmb__work *w) {
  arrival_check *c = (arrival_check *)w;
  mmbError err = mmb__request_wait(c->arrival);   /* done by now: its error */
  mmb__request_unref(c->arrival);
  return err;
}

/* A local tile that exists is usable on q after the work pending on it (a
   prefetch, a write): q's next work is ordered after it, and req completes
   there, with the error of `arrival` (the copy's data still on its way, on
   any queue or deferred to another thread; NULL: here) when it fails.
   (Without a queue: wait_later.) */
static mmbError ready(const char *func, mmbQueue *q, mmbRequest *req, mmb__request *pending,
                      mmb__request *arrival) {
  mmbError err = mmb__pending_order(func, q, pending);
  if (err != MMB_OK) return err;
  if (!arrival || mmb__request_done(arrival)) return req ? mmb_queue_marker(q, req) : MMB_OK;
  arrival_check *c = (arrival_check *)mmb__work_new(sizeof *c, check_arrival, true);
  if (!c) return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for the acquire's work");
  c->arrival = arrival;
  mmb__request_ref(arrival);
  if ((err = mmb__queue_push(func, q, &c->w, req, NULL)) != MMB_OK) mmb__request_unref(arrival);
  return err;
}

/* What an acquire without a queue waits for once it has let the lock go:
   the work pending on the local tile (a prefetch, a write-back), held by a
   reference; NULL for none. Its local tile is pinned by then, so it stays;
   other threads' acquires and releases go on meanwhile. */
static mmb__request *wait_later(mmb__request *pending) {
  if (!pending || mmb__request_done(pending)) return NULL;
  mmb__request_ref(pending);
  return pending;
}

static void wait_now(mmb__request *r) {
  if (!r) return;
  (void)mmb__request_wait(r);   /* its error is its submitter's (a prefetch: not taken) */
  mmb__request_unref(r);
}

/* Tile t's copies cached dirty, but for those of cache `skip`, go home on
   their caches' queues: what reads or writes the tile's home comes after
   them (cache lock held). */
static mmbError dirty_home(const char *func, mmb__tile *t, const space_cache *skip) {
  mmbError err = MMB_OK;
  for (cache_entry *e = t->cached; e && err == MMB_OK; e = e->next_of_tile) {
    if (e->sc == skip) continue;
    (void)arrived(e);   /* a lost copy is clean */
    if (e->dirty) err = write_home(func, e, queue_of(e->sc));
  }
  return err;
}

/* Before tile t is acquired in cache c (cache lock held): its copies
   written in other spaces' caches go home first, so that the acquire sees
   the last write wherever it was made. A copy here is then behind the tile
   and, for a read, fetched again; a miss copies the home after them. A
   copy acquired for writing elsewhere, or the home itself (acquired in its
   own space), may still be written: MMB_BUSY. */
static mmbError others_home(const char *func, const space_cache *c, mmb__tile *t) {
  if (t->home_write_pins && t->pub.space != c->space)
    return mmb__fail(MMB_BUSY, func, "the tile is acquired for writing at home, in %s (release "
                     "it first)", t->pub.space->info.name);
  for (const cache_entry *e = t->cached; e; e = e->next_of_tile)
    if (e->sc != c && e->write_pins)
      return mmb__fail(MMB_BUSY, func, "a copy of the tile is acquired for writing in %s "
                       "(release it first)", e->sc->space->info.name);
  return dirty_home(func, t, c);
}

/* Under the lock: the local tile of t in space, pinned, its copy fetched
   or brought up to date on q, or, without a queue, by a job left in
   *copy_now for the caller to run once the lock is let go; req completes
   once the copy is there, or, for a hit, once what is pending on the local
   tile is. Without a queue, *later is what the caller waits for then (see
   wait_later), and *pinned the cache entry (NULL: the tile is at home). */
static mmbError pin_local(const char *func, mmb__tile *t, mmbMemSpace *space,
                          mmbAccessType access, mmbQueue *q, mmbRequest *req,
                          mmb__deferred **copy_now, mmb__request **later, cache_entry **pinned,
                          mmbArrayTile **out_local) {
  mmbError err = MMB_OK;
  mmb__deferred **defer = q ? NULL : copy_now;
  if ((err = cache_enter(func)) != MMB_OK) return err;
  space_cache *c = cache_of(space);
  if (!c) {
    cache_unlock();
    return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for the space's cache");
  }
  if ((err = others_home(func, c, t)) != MMB_OK) {
    cache_unlock();
    return err;
  }
  if (t->pub.space == space) {   /* at home there: the tile itself */
    if (!q) *later = wait_later(t->pending);
    else err = ready(func, q, req, t->pending, NULL);
    if (err == MMB_OK) {
      t->home_pins++;
      if (t->array) t->array->n_home_pins++;   /* (it holds the array) */
      if (access & MMB_WRITE) {   /* the caller writes the home: copies elsewhere go behind */
        t->home_write_pins++;
        mmb__tile_wrote(t);
      }
      c->stats.hits++;
      *out_local = &t->pub;
    }
    cache_unlock();
    return err;
  }
  cache_entry *e = entry_in(t, c);
  mmb__cache_event what = MMB__CACHE_HIT;
  if (e) {
    (void)arrived(e);   /* a copy that failed to arrive is lost */
    if ((access & MMB_READ) &&
        (e->lost || (!e->dirty && mmb__tile_dup_behind(e->copy)))) {
      /* lost, or the tile was written since it was copied: copy it again
         (on q, where req tells how it went) */
      if ((err = mmb__tile_refresh(func, e->copy, q, req, defer)) == MMB_OK) {
        arriving(e);
        e->lost = false;
      }
      c->stats.misses++;
      c->stats.fetched_bytes += e->bytes;
      what = MMB__CACHE_MISS;
    } else {
      e->lost = false;   /* (written whole, when it was lost) */
      c->stats.hits++;
      if (q) err = ready(func, q, req, e->copy->pending, e->arrival);   /* on its way? */
    }
    if (err == MMB_OK && !q) *later = wait_later(e->copy->pending);
    if (err != MMB_OK) {
      cache_unlock();
      return err;
    }
    unlink_entry(e);
    append(e);
  } else {
    what = MMB__CACHE_MISS;
    if ((err = fetch(func, c, t, access, q, req, defer, false, &e)) != MMB_OK) {
      mmb__view v = mmb__tile_view(t);
      size_t budget = budget_of(c), pinned_bytes = c->pinned;
      cache_unlock();
      if (err == MMB_OUT_OF_MEMORY)
        return mmb__fail(err, func, "the cache of %s has no room for %zu bytes (budget %zu, "
                         "%zu pinned)", space->info.name, mmb__view_bytes(&v), budget,
                         pinned_bytes);
      return err;
    }
    if (!q) *later = wait_later(e->copy->pending);
  }
  if (e->advice == MMB_ADVICE_WILLNEED) e->advice = MMB_ADVICE_NORMAL;   /* it came */
  pin(e, access & MMB_WRITE);
  if (access & MMB_WRITE) set_dirty(e, true);
  note(what, c, t, e->bytes,
       (what == MMB__CACHE_MISS && (access & MMB_READ) ? MMB__CACHE_FLAG_DONE : 0) |
       (access & MMB_READ ? MMB__CACHE_FLAG_READ : 0) |
       (access & MMB_WRITE ? MMB__CACHE_FLAG_WRITE : 0));
  cache_unlock();
  *pinned = e;
  *out_local = &e->copy->pub;
  return MMB_OK;
}

/* After a wait for the pinned copy, with no lock held: MMB_OK once its
   data is there; if it failed to arrive, the copy is unpinned and the
   copy's error returned. */
static mmbError settle(cache_entry *e) {
  cache_lock();
  while (!arrived(e)) {   /* copied again meanwhile (it was lost, or behind) */
    mmb__request *r = e->arrival;
    mmb__request_ref(r);
    cache_unlock();
    wait_now(r);
    cache_lock();
  }
  mmbError err = e->lost ? e->lost_err : MMB_OK;
  if (err != MMB_OK) unpin(e);
  cache_unlock();
  return err;
}

static mmbError acquire(const char *func, mmbArrayTile *tile, mmbMemSpace *space,
                        mmbAccessType access, mmbQueue *q, mmbRequest *req,
                        mmbArrayTile **out_local) {
  mmb__tile *t;
  mmbError err = tile_arg(func, tile, &t);
  if (err != MMB_OK) return err;
  MMB__HANDLE(space, MMB__KIND_SPACE, func, "space");
  MMB__ARG(!out_local, func, "out_local is NULL");
  MMB__ARG(!mmb__access_valid(access), func, "unknown access %d", (int)access);
  if ((access & MMB_WRITE) && !tile_writable(t))
    return mmb__fail(MMB_INVALID_STATE, func, "MMB_WRITE on a tile of an array made without it");
  /* a copy that fails to arrive is tried once more (another thread's
     prefetch may have been the one that failed) */
  for (int tries = 0;; tries++) {
    mmb__deferred *copy_now = NULL;
    mmb__request *later = NULL;
    cache_entry *e = NULL;
    mmbArrayTile *local = NULL;
    if ((err = pin_local(func, t, space, access, q, req, &copy_now, &later, &e, &local)) != MMB_OK)
      return err;
    if (copy_now) (void)mmb__job_run_deferred(copy_now);   /* its error: settle's */
    wait_now(later);
    if (!later || !e || (err = settle(e)) == MMB_OK) {
      *out_local = local;
      return MMB_OK;
    }
    if (tries == 1)
      return mmb__fail(err, func, "the copy of the tile in %s did not arrive", space->info.name);
  }
}

mmbError mmb_tile_acquire(mmbArrayTile *tile, mmbMemSpace *space, mmbAccessType access,
                          mmbArrayTile **out_local) {
  MMB__REQUIRE_INIT();
  return acquire(__func__, tile, space, access, NULL, NULL, out_local);
}

mmbError mmb_tile_acquire_async(mmbArrayTile *tile, mmbMemSpace *space, mmbAccessType access,
                                mmbQueue *q, mmbRequest *req, mmbArrayTile **out_local) {
  mmbError err = mmb__queue_check(__func__, q, req);
  return err != MMB_OK ? err : acquire(__func__, tile, space, access, q, req, out_local);
}

mmbError mmb_tile_release(mmbArrayTile *local) {
  static const char func[] = "mmb_tile_release";
  MMB__REQUIRE_INIT();
  MMB__HANDLE(local, MMB__KIND_TILE, func, "tile");
  mmb__tile *t = (mmb__tile *)local;
  mmbError err = cache_enter(func);
  if (err != MMB_OK) return err;
  cache_entry *e = t->entry;
  if (!e ? !t->home_pins : !e->pins) {
    cache_unlock();
    return mmb__fail(MMB_INVALID_ARG, func, "the tile is not acquired (never, or released as "
                     "often as it was acquired)");
  }
  if (!e) {
    t->home_pins--;
    if (t->array) t->array->n_home_pins--;
    if (t->home_write_pins > t->home_pins) t->home_write_pins = t->home_pins;   /* as unpin */
    cache_unlock();
    return MMB_OK;
  }
  unpin(e);
  note(MMB__CACHE_RELEASE, e->sc, e->tile, e->bytes, 0);
  if (e->dirty && !e->pins) write_ahead(func, e->sc, e->bytes);
  cache_unlock();
  return MMB_OK;
}

/* ---- advice --------------------------------------------------------------------- */

mmbError mmb_tile_advise(mmbArrayTile *tile, mmbMemSpace *space, mmbAdvice advice) {
  static const char func[] = "mmb_tile_advise";
  MMB__REQUIRE_INIT();
  mmb__tile *t;
  mmbError err = tile_arg(func, tile, &t);
  if (err != MMB_OK) return err;
  MMB__HANDLE(space, MMB__KIND_SPACE, func, "space");
  MMB__ARG((unsigned)advice > MMB_ADVICE_KEEP, func, "unknown advice %d", (int)advice);
  if (t->pub.space == space) return MMB_OK;   /* at home there: nothing to cache */
  if ((err = cache_enter(func)) != MMB_OK) return err;
  space_cache *c = cache_of(space);
  cache_entry *e = c ? entry_in(t, c) : NULL;
  if (!e && advice == MMB_ADVICE_WILLNEED && c) {
    /* prefetch into room it can make without evicting what is pinned, KEEP or
       itself expected: otherwise the hint is not taken */
    if (!queue_of(c)) {
      cache_unlock();
      return MMB_OK;
    }
    if (fetch(func, c, t, MMB_READ, c->queue, NULL, NULL, true, &e) != MMB_OK) e = NULL;
    else note(MMB__CACHE_PREFETCH, c, t, e->bytes, MMB__CACHE_FLAG_DONE);
  }
  if (e) {
    e->advice = advice;
    if (advice == MMB_ADVICE_WONTNEED) {
      unlink_entry(e);
      prepend(e);
      if (e->dirty && !e->pins && queue_of(c)) (void)write_home(func, e, c->queue);
    }
  }
  cache_unlock();
  return MMB_OK;
}

/* ---- mmb's reads and writes of a home ----------------------------------------- */

/* The first copy of tile t (g NULL), or of any tile of tiling g, acquired for
   writing (for_write), or at all; *at gets its tile's index in g when t is
   NULL (cache lock held). Both callers refuse on it and move nothing. */
static const cache_entry *first_pinned(const struct mmb__tiling *g, const mmb__tile *t,
                                       bool for_write, size_t *at) {
  size_t n = t ? 1 : g->n_tiles;
  for (size_t i = 0; i < n; i++)
    for (const cache_entry *e = (t ? t : &g->slots[i].tile)->cached; e; e = e->next_of_tile)
      if (for_write ? e->write_pins : e->pins) {
        *at = i;
        return e;
      }
  return NULL;
}

/* mmb is about to read or write the home of tile t (t NULL: of every tile
   of array a). Its copies cached dirty go home first, on their cache's
   queue; the read or write owns the tile, so it comes after them. A read
   then sees what was written in the cache. After a write (a merge that adds
   adds to what they held) the copies, clean, are behind the tile, and the
   next acquire that reads refreshes them: no eviction or flush puts older
   data back over it. A copy pinned for writing may still be written:
   MMB_BUSY, and nothing moves. The cache's own copies and write-backs,
   made under its lock, are left alone. */
mmbError mmb__cache_home_current(const char *func, mmbArray *a, mmb__tile *t) {
  if (held || (t ? !t->cached : !a->n_cached || !a->tiling)) return MMB_OK;
  size_t n = t ? 1 : a->tiling->n_tiles, at;
  cache_lock();
  const cache_entry *pinned = first_pinned(t ? NULL : a->tiling, t, true, &at);
  if (pinned) {
    cache_unlock();
    if (t)
      return mmb__fail(MMB_BUSY, func, "a copy of the tile is acquired for writing in %s "
                       "(release it first)", pinned->sc->space->info.name);
    return mmb__fail(MMB_BUSY, func, "a copy of the array's tile %zu is acquired for writing "
                     "in %s (release it first)", at, pinned->sc->space->info.name);
  }
  mmbError err = MMB_OK;
  for (size_t i = 0; i < n && err == MMB_OK; i++)
    err = dirty_home(func, t ? t : &a->tiling->slots[i].tile, NULL);
  cache_unlock();
  return err;
}

/* ---- arrays -------------------------------------------------------------------- */

static mmbError array_arg(const char *func, mmbArray *array, struct mmb__tiling **out) {
  MMB__HANDLE(array, MMB__KIND_ARRAY, func, "array");
  *out = array->tiling;
  return MMB_OK;
}

/* MMB_OK when this thread may wait for the work on tile t and on its
   cached copies (asked, the cache locked, before anything changes). */
static mmbError tile_may_wait(const char *func, const mmb__tile *t) {
  mmbError err = mmb__request_may_wait(func, t->pending);
  for (const cache_entry *e = t->cached; e && err == MMB_OK; e = e->next_of_tile)
    err = mmb__request_may_wait(func, e->copy->pending);
  return err;
}

/* The same for every tile of array a. */
static mmbError array_may_wait(const char *func, const mmbArray *a) {
  mmbError err = MMB_OK;
  for (size_t i = 0; a->tiling && i < a->tiling->n_tiles && err == MMB_OK; i++)
    err = tile_may_wait(func, &a->tiling->slots[i].tile);
  return err;
}

/* Tile t's dirty copies home (the cache locked), after what was on its
   way there: what was written home ahead of need, or by an eviction, has
   arrived before this returns. */
static mmbError flush_tile(const char *func, mmb__tile *t) {
  mmb__pending_wait(&t->pending);
  mmbError err = MMB_OK;
  for (cache_entry *e = t->cached; e && err == MMB_OK; e = e->next_of_tile) {
    mmb__pending_wait(&e->copy->pending);
    if (e->arrival) (void)mmb__request_wait(e->arrival);   /* (done by now: it came before) */
    (void)arrived(e);   /* a lost copy is clean */
    if (e->dirty && (err = write_home(func, e, NULL)) == MMB_OK)
      set_dirty(e, e->write_pins > 0);   /* still pinned for writing: it may be written */
  }
  return err;
}

mmbError mmb_tile_flush(mmbArrayTile *tile) {
  static const char func[] = "mmb_tile_flush";
  MMB__REQUIRE_INIT();
  MMB__HANDLE(tile, MMB__KIND_TILE, func, "tile");
  mmb__tile *t = (mmb__tile *)tile;
  MMB__ARG(t->origin, func, "the tile is a duplicate (or a cached copy): flush its origin");
  mmbError err = cache_enter(func);
  if (err != MMB_OK) return err;
  if ((err = tile_may_wait(func, t)) == MMB_OK) err = flush_tile(func, t);
  cache_unlock();
  return err;
}

mmbError mmb_array_flush(mmbArray *array) {
  static const char func[] = "mmb_array_flush";
  MMB__REQUIRE_INIT();
  struct mmb__tiling *g;
  mmbError err = array_arg(func, array, &g);
  if (err != MMB_OK || !g || (err = cache_enter(func)) != MMB_OK) return err;
  err = array_may_wait(func, array);
  for (size_t i = 0; i < g->n_tiles && err == MMB_OK; i++) err = flush_tile(func, &g->slots[i].tile);
  cache_unlock();
  return err;
}

mmbError mmb_array_evict(mmbArray *array, mmbMemSpace *space) {
  static const char func[] = "mmb_array_evict";
  MMB__REQUIRE_INIT();
  struct mmb__tiling *g;
  mmbError err = array_arg(func, array, &g);
  if (err != MMB_OK) return err;
  if (space) MMB__HANDLE(space, MMB__KIND_SPACE, func, "space");
  if (!g) return MMB_OK;
  bool busy = false;
  if ((err = cache_enter(func)) != MMB_OK) return err;
  err = array_may_wait(func, array);
  for (size_t i = 0; i < g->n_tiles && err == MMB_OK; i++) {
    for (cache_entry *e = g->slots[i].tile.cached, *next; e && err == MMB_OK; e = next) {
      next = e->next_of_tile;
      if (space && e->sc->space != space) continue;
      if (e->pins) {
        busy = true;
        continue;
      }
      err = evict(func, e, true, NULL);
    }
    mmb__pending_wait(&g->slots[i].tile.pending);   /* write-backs of earlier evictions */
  }
  cache_unlock();
  if (err == MMB_OK && busy)
    return mmb__fail(MMB_BUSY, func, "pinned copies stay cached (release them first)");
  return err;
}

/* The copies of a destroyed array's tiles go, without going home; none
   goes while one is pinned (MMB_BUSY: the destroy is refused, and what was
   written in the others must still reach home). */
mmbError mmb__cache_drop_array(mmbArray *array) {
  struct mmb__tiling *g = array->tiling;
  if (!g) return MMB_OK;
  size_t at;
  mmbError err = cache_enter("mmb_array_destroy");
  if (err != MMB_OK) return err;
  if ((err = array_may_wait("mmb_array_destroy", array)) != MMB_OK) {
    cache_unlock();
    return err;
  }
  const cache_entry *pinned = first_pinned(g, NULL, false, &at);
  if (pinned) {
    cache_unlock();
    return mmb__fail(MMB_BUSY, "mmb_array_destroy", "a copy of tile %zu is acquired in %s "
                     "(release it first)", at, pinned->sc->space->info.name);
  }
  for (size_t i = 0; i < g->n_tiles; i++)
    for (cache_entry *e = g->slots[i].tile.cached, *next; e; e = next) {
      next = e->next_of_tile;
      (void)evict("mmb_array_destroy", e, false, NULL);
    }
  cache_unlock();
  return MMB_OK;
}

/* ---- settings and counters ----------------------------------------------------- */

mmbError mmb_space_set_cache(mmbMemSpace *space, const mmbCacheConfig *config) {
  static const char func[] = "mmb_space_set_cache";
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, func, "space");
  mmbCacheConfig cfg = config ? *config : (mmbCacheConfig){.clean_share = 0.5};
  MMB__ARG(!(cfg.clean_share >= 0.0 && cfg.clean_share <= 1.0), func,
           "clean_share %g is not in [0, 1]", cfg.clean_share);
  mmbError err = cache_enter(func);
  if (err != MMB_OK) return err;
  space_cache *c = cache_of(space);
  if (!c) {
    err = mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for the space's cache");
  } else {
    size_t old = c->budget;
    c->budget = cfg.budget_bytes;
    if (c->used > budget_of(c) && make_room(func, c, 0, false, false) != MMB_OK) {
      c->budget = old;
      err = mmb__fail(MMB_BUSY, func, "pinned copies hold more than %zu bytes",
                      cfg.budget_bytes);
    } else {
      c->clean_share = cfg.clean_share;
    }
  }
  cache_unlock();
  return err;
}

mmbError mmb_space_get_cache(mmbMemSpace *space, mmbCacheConfig *out_config) {
  static const char func[] = "mmb_space_get_cache";
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, func, "space");
  MMB__ARG(!out_config, func, "out_config is NULL");
  bool locked = cache_lock_to_read();
  const space_cache *c = find_cache(space);
  *out_config = c ? (mmbCacheConfig){.budget_bytes = c->budget, .clean_share = c->clean_share}
                  : layer_default[space->info.layer];
  if (locked) cache_unlock();
  return MMB_OK;
}

mmbError mmb_space_get_cache_stats(const mmbMemSpace *space, mmbCacheStats *out) {
  static const char func[] = "mmb_space_get_cache_stats";
  MMB__REQUIRE_INIT();
  MMB__HANDLE(space, MMB__KIND_SPACE, func, "space");
  MMB__ARG(!out, func, "out is NULL");
  bool locked = cache_lock_to_read();
  const space_cache *c = find_cache(space);
  if (c) {
    *out = c->stats;
    out->oom_rounds = atomic_load(&c->space->oom_rounds);
    out->handler_calls = atomic_load(&c->space->handler_calls);
    out->fallback_bytes = atomic_load(&c->space->fallback_bytes);
    out->used_bytes = c->used;
    out->dirty_bytes = c->dirty;
    out->pinned_bytes = c->pinned;
    out->budget_bytes = budget_of(c);
  } else {
    *out = (mmbCacheStats){
        .oom_rounds = atomic_load(&space->oom_rounds),
        .handler_calls = atomic_load(&space->handler_calls),
        .fallback_bytes = atomic_load(&space->fallback_bytes)};
    space_cache probe = {.space = (mmbMemSpace *)space,
                         .budget = layer_default[space->info.layer].budget_bytes};
    out->budget_bytes = budget_of(&probe);
  }
  if (locked) cache_unlock();
  return MMB_OK;
}

/* ---- the out-of-memory chain's part -------------------------------------------- */

/* Step 0 drops the clean unpinned copies cached in `space` or in a space
   drawing on it (WONTNEED first), step 1 writes the dirty ones home and
   drops them; KEEP copies stay. The bytes go back to the provider (the
   duplicates' interface is trimmed). Nothing when the refused allocation
   is the cache's own (a fetch: the acquire evicts for itself). */
bool mmb__cache_oom_step(mmbMemSpace *space, int step) {
  if (held) return false;
  bool freed = false;
  cache_lock();
  for (space_cache *c = caches; c; c = c->next) {
    if (!mmb__space_draws_on(c->space, space)) continue;
    bool here = false;
    for (int rank = 0; rank <= 2; rank++)
      for (cache_entry *e = c->head, *next; e; e = next) {
        next = e->next;
        if (victim_rank(e, false) == rank && e->dirty == (step == 1) &&
            evict("the out-of-memory chain", e, true, NULL) == MMB_OK)
          here = true;
      }
    mmbMemInterface *dups;
    if (here && mmb__dup_interface(c->space, &dups) == MMB_OK &&
        mmb_interface_trim(dups, 0) != MMB_OK)
      mmb__log(MMB_LOG_DEBUG, "%s: the duplicates' interface was not trimmed", c->space->info.name);
    freed |= here;
  }
  cache_unlock();
  return freed;
}

/* ---- life ------------------------------------------------------------------------ */

static mmbError cache_env_failed(const char *env, const char *why) {
  mmb__log(MMB_LOG_ERROR, "MMB_CACHE='%s': %s (expected LAYER:SIZE[:clean=SHARE][,...], e.g. "
           "HBM:2G or HBM:2G:clean=0.25,DRAM:8G; LAYER DRAM, HBM, NVDIMM, GDRAM or STORAGE)", env, why);
  return MMB_INVALID_ARG;
}

/* MMB_CACHE=LAYER:SIZE[:clean=SHARE][,...]: the budget (and clean share) of
   the tile caches of the layer's spaces, as mmb_space_set_cache would set
   them; a program's own mmb_space_set_cache still wins. */
mmbError mmb__caches_init(void) {
  for (int l = 0; l < MMB__LAYERS; l++) layer_default[l] = (mmbCacheConfig){.clean_share = 0.5};
  const char *env = getenv("MMB_CACHE");
  if (!env || !*env) return MMB_OK;
  char copy[256];
  if (strlen(env) >= sizeof copy) return cache_env_failed(env, "too long");
  snprintf(copy, sizeof copy, "%s", env);
  char *save = NULL;
  for (char *entry = strtok_r(copy, ",", &save); entry; entry = strtok_r(NULL, ",", &save)) {
    char *size = strchr(entry, ':'), *clean = NULL;
    if (!size) return cache_env_failed(env, "an entry has no size");
    *size++ = '\0';
    if ((clean = strchr(size, ':'))) {
      *clean++ = '\0';
      if (strncmp(clean, "clean=", 6) != 0) return cache_env_failed(env, "unknown option after the size");
      clean += 6;
    }
    mmbMemLayer layer;   /* built-in, or registered by MMB_LAYERS */
    if (!mmb__layer_lookup(entry, &layer)) return cache_env_failed(env, "unknown layer");
    mmbCacheConfig cfg = {.clean_share = 0.5};
    if (!mmb__parse_size(size, &cfg.budget_bytes) || !cfg.budget_bytes)
      return cache_env_failed(env, "the size is not a size above 0");
    if (clean) {
      char *end;
      cfg.clean_share = strtod(clean, &end);
      if (end == clean || *end || !(cfg.clean_share >= 0.0 && cfg.clean_share <= 1.0))
        return cache_env_failed(env, "clean= is not a share from 0 to 1");
    }
    layer_default[layer] = cfg;
    mmb__log(MMB_LOG_INFO, "MMB_CACHE: tile caches in %s: budget %zu bytes, clean share %g",
             mmb_layer_name((mmbMemLayer)layer), cfg.budget_bytes, cfg.clean_share);
  }
  return MMB_OK;
}

/* A cache taken off the list goes, with its entries and its queue. */
static void cache_free(space_cache *c) {
  for (cache_entry *e = c->head, *next; e; e = next) {
    next = e->next;
    drop_arrival(e);
    mmb__free(e);
  }
  if (c->queue && mmb_queue_destroy(NULL, &c->queue) != MMB_OK)
    mmb__log(MMB_LOG_DEBUG, "the tile cache's queue of %s would not go", c->space->info.name);
  mmb__free(c);
}

mmbError mmb__cache_space_leaving(const char *func) {
  return held ? refuse_held(func) : MMB_OK;
}

/* The space is released: its cache goes (it holds no copy, or the space
   would be in use), and its queue's thread with it; a new space at the
   same address starts with a cache of its own. */
void mmb__cache_space_gone(mmbMemSpace *space) {
  cache_lock();
  space_cache **link = &caches;
  while (*link && (*link)->space != space) link = &(*link)->next;
  space_cache *c = *link;
  if (c) *link = c->next;
  cache_unlock();
  if (c) cache_free(c);
}

void mmb__caches_finalize(void) {
  cache_lock();
  space_cache *all = caches;
  caches = NULL;
  cache_unlock();
  for (space_cache *c = all, *next; c; c = next) {
    next = c->next;
    cache_free(c);
  }
}
