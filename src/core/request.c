/* Requests: a state word and an error, with a reference for the caller
   and one for the work that completes it; for work issued on a stream, the
   event that marks its end. Completing one is an atomic operation on the
   state word (and a wake-up only when a waiter went to sleep); waiting
   spins for up to MMB__SPIN_NS, then sleeps. */
#include "core/internal.h"

#include <sched.h>

/* Request records are handles that come back: a record whose last
   reference went is kept (up to KEEP of them) and handed out again with its
   generation bumped, which the caller's mmbRequest carries in the top 16
   bits of impl. A stale copy of a request is thus refused (its generation
   is old) without a fresh page of the handle arena per request; it could
   pass only on the very reuse whose generation wraps to its own, 1 in 65536. */
#define KEEP 256
#define GEN_SHIFT 48
#define PTR_MASK (((uintptr_t)1 << GEN_SHIFT) - 1)

/* An object starts 16 bytes into a 64-byte line (after its header): the
   state and the fields a waiter reads fill that line, the work the next. */
_Static_assert(offsetof(mmb__request, work) == 48, "a request's work starts a cache line");

static void destroy_record(void *block) {
  mmb__request *r = block;
  pthread_cond_destroy(&r->cond);
  pthread_mutex_destroy(&r->lock);
  mmb__object_free(r);
}

/* The free records, with a stack per thread in front (core's mmb__freelist):
   a round trip takes and gives its record without a lock. */
static mmb__freelist free_records = MMB__FREELIST_INIT(KEEP, offsetof(mmb__request, next),
                                                       destroy_record, MMB__FREELIST_SLOT_REQUESTS);

static mmb__request *take_record(void) {
  mmb__request *r = mmb__freelist_take(&free_records);
  if (r || !(r = mmb__object_new(MMB__KIND_REQUEST, sizeof *r))) return r;
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->cond, NULL);
  return r;
}

static void give_record(mmb__request *r) {
  /* a new generation, not held: every copy of the old one is stale now */
  atomic_store_explicit(&r->claim, (atomic_load_explicit(&r->claim, memory_order_relaxed) | 1) + 1,
                        memory_order_release);
  mmb__freelist_give(&free_records, r);
}

void mmb__requests_trim(void) { mmb__freelist_trim(&free_records); }

void *mmb__request_hold(mmb__request *r) {
  uint32_t c = atomic_load_explicit(&r->claim, memory_order_relaxed) | 1;
  atomic_store_explicit(&r->claim, c, memory_order_relaxed);   /* r is not shared yet */
  return (void *)((uintptr_t)r | (uintptr_t)(c >> 1 & 0xffff) << GEN_SHIFT);
}

mmb__request *mmb__request_new(void) {
  mmb__request *r = take_record();
  if (!r) return NULL;
  atomic_init(&r->state, MMB__RQ_REF);
  atomic_init(&r->event, NULL);
  r->event_ops = NULL;
  r->err = MMB_OK;
  r->q = NULL;
  r->next = NULL;
  return r;
}

static uint32_t refs_of(uint32_t state) { return state / MMB__RQ_REF; }

void mmb__request_ref(mmb__request *r) {
  atomic_fetch_add_explicit(&r->state, MMB__RQ_REF, memory_order_relaxed);
}

static void last_ref_gone(mmb__request *r) {
  void *ev = atomic_load_explicit(&r->event, memory_order_acquire);
  if (ev) r->event_ops->destroy(ev);
  give_record(r);
}

void mmb__request_unref(mmb__request *r) {
  uint32_t s = atomic_fetch_sub_explicit(&r->state, MMB__RQ_REF, memory_order_acq_rel);
  if (refs_of(s) == 1) last_ref_gone(r);
}

/* Wakes the waiters that sleep (the caller still holds a reference). A
   waiter sets MMB__RQ_SLEEPERS with an atomic operation on the state word,
   then looks at the request; the completer changes the word, then wakes if
   the flag was set: operations on one word are ordered, so either the
   waiter sees the change or the completer sees the waiter. */
static void wake(mmb__request *r) {
  pthread_mutex_lock(&r->lock);
  pthread_cond_broadcast(&r->cond);
  pthread_mutex_unlock(&r->lock);
}

/* Done, with err (the first settle wins; later ones are ignored). */
static void request_complete(mmb__request *r, mmbError err) {
  /* the first settle wins */
  uint32_t s = atomic_load_explicit(&r->state, memory_order_relaxed);
  do {
    if (s & (MMB__RQ_SETTLING | MMB__RQ_DONE)) return;
  } while (!atomic_compare_exchange_weak_explicit(&r->state, &s, s | MMB__RQ_SETTLING,
                                                  memory_order_acquire, memory_order_relaxed));
  r->err = err;
  /* settling -> done */
  s = atomic_fetch_add_explicit(&r->state, MMB__RQ_DONE - MMB__RQ_SETTLING, memory_order_seq_cst);
  if (s & MMB__RQ_SLEEPERS) wake(r);
}

void mmb__request_finish(mmb__request *r, mmbError err) {
  /* Host work that succeeded, with nobody asleep: done and the work's
     reference dropped in one operation (err is MMB_OK from the start). */
  uint32_t s = atomic_load_explicit(&r->state, memory_order_relaxed);
  while (err == MMB_OK && !(s & (MMB__RQ_SETTLING | MMB__RQ_DONE | MMB__RQ_SLEEPERS)))
    if (atomic_compare_exchange_weak_explicit(&r->state, &s, s + MMB__RQ_DONE - MMB__RQ_REF,
                                              memory_order_acq_rel, memory_order_relaxed)) {
      if (refs_of(s) == 1) last_ref_gone(r);   /* nobody held it */
      return;
    }
  /* otherwise the wake-up needs the reference kept until it is done */
  request_complete(r, err);
  mmb__request_unref(r);
}

void mmb__request_attach(mmb__request *r, void *event, const mmb__event_ops *ops) {
  r->event_ops = ops;
  atomic_store_explicit(&r->event, event, memory_order_seq_cst);
  /* sleepers go on to wait for the event */
  if (atomic_load_explicit(&r->state, memory_order_seq_cst) & MMB__RQ_SLEEPERS) wake(r);
}

bool mmb__request_poll(mmb__request *r) {
  void *ev = atomic_load_explicit(&r->event, memory_order_acquire);
  if (!ev) return false;
  bool passed = false;
  mmbError err = r->event_ops->query(ev, &passed);
  if (err == MMB_OK && !passed) return false;
  request_complete(r, err);
  return true;
}

static bool issued(void *arg) {
  mmb__request *r = arg;
  return (atomic_load_explicit(&r->state, memory_order_seq_cst) & MMB__RQ_DONE) ||
         atomic_load_explicit(&r->event, memory_order_seq_cst);
}

bool mmb__spin(bool (*ready)(void *arg), void *arg, bool yield) {
  uint64_t until = 0;
  for (unsigned i = 0;; i++) {
    if (ready(arg)) return true;
    mmb__cpu_relax();
    if (yield && i % 1024 == 1023) sched_yield();
    if (i % 64 == 63) {
      uint64_t t = mmb__now_ns();
      if (!until) until = t + MMB__SPIN_NS;
      else if (t > until) return ready(arg);
    }
  }
}

/* Spins (a round trip through a busy worker takes far less than a sleep
   and a wake-up), then sleeps until the request is issued. */
void *mmb__request_issued(mmb__request *r) {
  if (!mmb__spin(issued, r, false)) {
    pthread_mutex_lock(&r->lock);
    /* the flag stays set: a completer that finds it takes the slow path */
    atomic_fetch_or_explicit(&r->state, MMB__RQ_SLEEPERS, memory_order_seq_cst);
    while (!issued(r)) pthread_cond_wait(&r->cond, &r->lock);
    pthread_mutex_unlock(&r->lock);
  }
  return atomic_load_explicit(&r->state, memory_order_acquire) & MMB__RQ_DONE
             ? NULL : atomic_load_explicit(&r->event, memory_order_acquire);
}

/* Work issued on a stream is waited for on its event. */
mmbError mmb__request_wait(mmb__request *r) {
  void *ev = mmb__request_issued(r);   /* NULL: done; else its stream's event */
  if (ev) request_complete(r, r->event_ops->sync(ev));
  while (!(atomic_load_explicit(&r->state, memory_order_acquire) & MMB__RQ_DONE))
    mmb__cpu_relax();   /* settling */
  return r->err;
}

/* The claim word a caller's impl stands for: its generation, held. */
static uint32_t claim_of(const void *impl) {
  return (uint32_t)((uintptr_t)impl >> GEN_SHIFT) << 1 | 1;
}

mmbError mmb__request_held(const char *func, const mmbRequest *req, mmb__request **out) {
  *out = NULL;   /* first: every path writes it */
  MMB__ARG(!req, func, "req is NULL");
  if (!req->impl) return MMB_OK;
  mmb__request *r = (mmb__request *)((uintptr_t)req->impl & PTR_MASK);
  MMB__HANDLE(r, MMB__KIND_REQUEST, func, "request");
  MMB__ARG((atomic_load_explicit(&r->claim, memory_order_acquire) & 0x1ffff) !=
               claim_of(req->impl), func,
           "request %p was waited for already (through a copy of it?)", req->impl);
  *out = r;
  return MMB_OK;
}

mmbError mmb_request_is_complete(mmbRequest *req, bool *complete) {
  MMB__REQUIRE_INIT();
  mmb__request *r;
  mmbError err = mmb__request_held(__func__, req, &r);
  if (err != MMB_OK) return err;
  MMB__ARG(!complete, __func__, "complete is NULL");
  *complete = !r || mmb__request_done(r);
  return MMB_OK;
}

mmbError (*mmb__request_not_behind_hook)(const char *func, mmb__request *r);

mmbError mmb__request_may_wait(const char *func, mmb__request *r) {
  if (!r || !mmb__request_not_behind_hook || mmb__request_done(r)) return MMB_OK;
  return mmb__request_not_behind_hook(func, r);
}

mmbError mmb_wait(mmbRequest *req) {
  MMB__REQUIRE_INIT();
  mmb__request *r;
  mmbError err = mmb__request_held(__func__, req, &r);
  if (err != MMB_OK || !r) return err;
  if ((err = mmb__request_may_wait(__func__, r)) != MMB_OK)
    return err;   /* (the request stays the caller's) */
  /* the caller's reference is dropped once, whatever copies of req exist */
  uint32_t held = atomic_load_explicit(&r->claim, memory_order_acquire);
  MMB__ARG((held & 0x1ffff) != claim_of(req->impl) ||
               !atomic_compare_exchange_strong_explicit(&r->claim, &held, held & ~1u,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire),
           __func__, "request %p was waited for already (through a copy of it?)", req->impl);
  err = mmb__request_wait(r);
  req->impl = NULL;
  mmb__request_unref(r);
  return err;
}

mmbError mmb_wait_all(size_t num_requests, mmbRequest *reqs, mmbError *errors) {
  MMB__REQUIRE_INIT();
  MMB__ARG(num_requests && !reqs, __func__, "reqs is NULL");
  mmbError first = MMB_OK;
  for (size_t i = 0; i < num_requests; i++) {
    mmbError err = mmb_wait(&reqs[i]);
    if (errors) errors[i] = err;
    if (first == MMB_OK) first = err;
  }
  return first;
}
