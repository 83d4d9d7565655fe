/* The caching pool's shared part, in the spirit of PyTorch's CUDA caching
   allocator: sizes round up to 512 B granules; requests up to 1 MiB are
   carved from 2 MiB segments, larger ones from 20 MiB segments, and from
   10 MiB each gets a segment of its own rounded to 2 MiB. A request takes
   the best fitting free block (two-level bins, see pool.h), which is split
   when the rest is worth keeping; a freed block coalesces with its free
   neighbours. A wholly free segment stays cached until the interface holds
   more than its release_threshold, or until mmb_interface_trim. Under a
   limit, segments change size class rather than go back to the provider,
   and large blocks get segments of their own size where 20 MiB would
   crowd the limit (segment_for).

   Everything here runs under the interface lock (or on the one thread that
   owns a non-thread-safe interface). mmb__pool_put is the one place where a
   block becomes reusable: queue-aware reuse hooks in there. */
#include "alloc/strategy/pool.h"

#include <stdlib.h>
#include <string.h>

static _Atomic uint64_t next_pool_id = 1;

/* ---- bins ---------------------------------------------------------------- */

static void bin_index(size_t size, unsigned *fl, unsigned *sl) {
  size_t g = size / POOL_GRANULE;
  if (g < POOL_SL_COUNT) {
    *fl = 0;
    *sl = (unsigned)g;
    return;
  }
  unsigned l = 63u - (unsigned)__builtin_clzll(g);
  *fl = l - POOL_SL_BITS + 1;
  *sl = (unsigned)(g >> (l - POOL_SL_BITS)) - POOL_SL_COUNT;
}

static void bins_insert(pool_bins *bins, pool_block *b) {
  unsigned fl, sl;
  bin_index(b->size, &fl, &sl);
  b->fprev = NULL;
  b->fnext = bins->head[fl][sl];
  if (b->fnext) b->fnext->fprev = b;
  bins->head[fl][sl] = b;
  bins->fl_map |= 1ull << fl;
  bins->sl_map[fl] |= 1u << sl;
}

static void bins_remove(pool_bins *bins, pool_block *b) {
  unsigned fl, sl;
  bin_index(b->size, &fl, &sl);
  if (b->fprev) b->fprev->fnext = b->fnext;
  else bins->head[fl][sl] = b->fnext;
  if (b->fnext) b->fnext->fprev = b->fprev;
  if (!bins->head[fl][sl] && !(bins->sl_map[fl] &= ~(1u << sl))) bins->fl_map &= ~(1ull << fl);
}

/* The smallest block of at least `need` among the first few of a bin: the
   sizes in one bin differ by at most 1/32, so a short scan is enough. */
#define BIN_SCAN 16
static pool_block *bin_best(pool_block *b, size_t need) {
  pool_block *best = NULL;
  for (int n = 0; b && n < BIN_SCAN; b = b->fnext, n++) {
    if (b->size < need || (best && b->size >= best->size)) continue;
    best = b;
    if (b->size == need) break;
  }
  return best;
}

static pool_block *bins_find(pool_bins *bins, size_t need) {
  unsigned fl, sl;
  bin_index(need, &fl, &sl);
  pool_block *b = bin_best(bins->head[fl][sl], need);
  if (b) return b;
  uint32_t sl_rest = sl + 1 < POOL_SL_COUNT ? bins->sl_map[fl] & (~0u << (sl + 1)) : 0;
  if (!sl_rest) {   /* every block of a later bin fits */
    uint64_t fl_rest = fl + 1 < 64 ? bins->fl_map & (~0ull << (fl + 1)) : 0;
    if (!fl_rest) return NULL;
    fl = (unsigned)__builtin_ctzll(fl_rest);
    sl_rest = bins->sl_map[fl];
  }
  return bin_best(bins->head[fl][__builtin_ctz(sl_rest)], need);
}

static pool_bins *bins_of(pool *p, const pool_segment *s) { return s->large ? &p->large : &p->small; }

/* ---- block and segment records ----------------------------------------- */

#define RECORDS_PER_CHUNK 128
typedef struct record_chunk {
  struct record_chunk *next;
  pool_block blocks[RECORDS_PER_CHUNK];
} record_chunk;

static pool_block *record_new(pool *p) {
  if (!p->spare_blocks) {
    record_chunk *ch = mmb__malloc(sizeof *ch);
    if (!ch) return NULL;
    ch->next = p->record_chunks;
    p->record_chunks = ch;
    for (int i = 0; i < RECORDS_PER_CHUNK; i++) {
      ch->blocks[i].next = p->spare_blocks;
      p->spare_blocks = &ch->blocks[i];
    }
  }
  pool_block *b = p->spare_blocks;
  p->spare_blocks = b->next;
  *b = (pool_block){0};
  return b;
}

static void record_free(pool *p, pool_block *b) {
  b->next = p->spare_blocks;
  p->spare_blocks = b;
}

static void free_list_link(pool *p, pool_segment *s) {
  s->in_free_list = true;
  s->fprev = NULL;
  s->fnext = p->free_segments;
  if (s->fnext) s->fnext->fprev = s;
  p->free_segments = s;
}

static void free_list_unlink(pool *p, pool_segment *s) {
  if (!s->in_free_list) return;
  s->in_free_list = false;
  if (s->fprev) s->fprev->fnext = s->fnext;
  else p->free_segments = s->fnext;
  if (s->fnext) s->fnext->fprev = s->fprev;
}

static bool host(const pool *p) { return mmb__iface_host_accessible(p->iface); }

/* A new segment from the provider, as one block the caller takes. */
static pool_block *segment_new(pool *p, size_t size, size_t align, bool large, bool dedicated) {
  pool_segment *s = mmb__calloc(1, sizeof *s);
  pool_block *b = s ? record_new(p) : NULL;
  void *base = NULL;
  mmbError err = b ? mmb__provider_alloc(p->iface, size, align, 0, &base) : MMB_OUT_OF_MEMORY;
  if (err == MMB_UNSUPPORTED && align > p->block_align && !dedicated) {
    align = p->block_align;   /* a provider that refuses huge-page alignment */
    err = mmb__provider_alloc(p->iface, size, align, 0, &base);
  }
  if (err != MMB_OK) {
    if (b) record_free(p, b);
    mmb__free(s);
    return NULL;
  }
  *s = (pool_segment){.base = base, .size = size, .align = align, .large = large,
                      .dedicated = dedicated, .next = p->segments};
  if (p->segments) p->segments->prev = s;
  p->segments = s;
  b->ptr = base;
  b->size = size;
  b->seg = s;
  s->first = b;
  mmb__poison(host(p), base, size);
  return b;
}

/* Gives a wholly free segment (its one block b) back to the provider. */
static void segment_release(pool *p, pool_block *b) {
  pool_segment *s = b->seg;
  if (b->free) bins_remove(bins_of(p, s), b);
  free_list_unlink(p, s);
  record_free(p, b);
  if (s->prev) s->prev->next = s->next;
  else p->segments = s->next;
  if (s->next) s->next->prev = s->prev;
  mmb__unpoison(host(p), s->base, s->size);
  mmb__provider_free(p->iface, s->base, s->size, s->align);
  mmb__free(s);
}

static size_t segment_align(const pool *p, size_t size) {
  if (!host(p)) return p->block_align;
  return size % POOL_HUGE_ROUND == 0 ? POOL_HUGE_ROUND : 4096;
}

/* The smallest wholly free segment of the other class that holds `need`,
   taken over by this class: under a limit, room one class freed serves the
   other without a trip to the provider. */
static pool_block *segment_adopted(pool *p, size_t need, bool large) {
  pool_segment *best = NULL;
  for (pool_segment *s = p->free_segments; s; s = s->fnext)
    if (s->large != large && s->size >= need && (!best || s->size < best->size)) best = s;
  if (!best) return NULL;
  pool_block *b = best->first;
  bins_remove(bins_of(p, best), b);
  free_list_unlink(p, best);
  best->large = large;
  b->free = false;
  return b;
}

/* Whether giving the wholly free segments back makes room for `need`
   bytes under the space's limits: otherwise they would only be asked for
   again by the next request they fit. */
static bool release_makes_room(const pool *p, size_t need) {
  size_t room = mmb__space_room(p->iface->space), held = 0;
  for (const pool_segment *s = p->free_segments; s && room < need && held < need - room; s = s->fnext)
    held += s->size;
  return room >= need || held >= need - room;
}

/* A new segment for `need` bytes of a class; when the provider refuses
   it, a free segment of the other class, then the free segments given back
   for a segment that fits; with `exact`, a segment of just `need` rather
   than none. Where a 20 MiB segment would take more than an eighth of the
   space's limit, a large request gets a segment of its own size: blocks of
   different sizes sharing one would leave holes none of them fits, while
   a freed segment serves the next block of its size (a tile cache's). */
static pool_block *segment_for(pool *p, size_t need, bool large, bool exact) {
  size_t size = !large ? POOL_SMALL_SEGMENT
                : need >= POOL_HUGE_REQUEST ? (need + POOL_HUGE_ROUND - 1) & ~(POOL_HUGE_ROUND - 1)
                : mmb__space_limit(p->iface->space) / 8 < POOL_LARGE_SEGMENT ? need
                : POOL_LARGE_SEGMENT;
  pool_block *b = segment_new(p, size, segment_align(p, size), large, false);
  if (!b) b = segment_adopted(p, need, large);
  if (!b && p->free_segments && release_makes_room(p, need)) {
    mmb__pool_release_free(p, 0);
    b = segment_new(p, size, segment_align(p, size), large, false);
  }
  if (!b && exact && size > need) b = segment_new(p, need, segment_align(p, need), large, false);
  return b;
}

/* ---- taking and putting blocks ------------------------------------------ */

/* b (taken) cut at `at` bytes (a granule multiple inside it): the part
   after gets a record of its own, taken too; NULL when no record is left. */
static pool_block *cut(pool *p, pool_block *b, size_t at) {
  pool_block *r = record_new(p);
  if (!r) return NULL;
  *r = (pool_block){.ptr = b->ptr + at, .size = b->size - at, .seg = b->seg, .prev = b,
                    .next = b->next};
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = at;
  return r;
}

static void split(pool *p, pool_block *b, size_t need) {
  size_t rest = b->size - need;
  if (rest < POOL_GRANULE || (b->seg->large && rest <= POOL_LARGE_SPLIT_MIN)) return;
  pool_block *r = cut(p, b, need);
  if (!r) return;   /* no record to spare: the caller gets the whole block */
  r->free = true;
  bins_insert(bins_of(p, b->seg), r);
}

pool_block *mmb__pool_take(pool *p, size_t need, size_t align) {
  if (align > POOL_PAD_MAX) {   /* over-aligned: a segment of its own */
    pool_block *b = segment_new(p, need, align, need > POOL_SMALL_MAX, true);
    if (!b && p->free_segments) {
      mmb__pool_release_free(p, 0);
      b = segment_new(p, need, align, need > POOL_SMALL_MAX, true);
    }
    return b;
  }
  pool_block *b = mmb__pool_take_held(p, need);
  if (b) return b;
  if (!(b = segment_for(p, need, need > POOL_SMALL_MAX, true))) return NULL;
  split(p, b, need);
  b->free = false;
  return b;
}

pool_block *mmb__pool_take_slab(pool *p) {
  pool_block *b = mmb__pool_take_held(p, SLAB_BYTES);
  if (b) return b;
  if (!(b = segment_for(p, SLAB_BYTES, false, false))) return NULL;
  split(p, b, SLAB_BYTES);
  b->free = false;
  return b;
}

/* The bytes of b past SLAB_BYTES back to the pool, where they coalesce
   with the free bytes after them (split would leave two free blocks side by
   side, and every slab a hole no later slab fits). */
static pool_block *slab_trimmed(pool *p, pool_block *b) {
  if (b->size > SLAB_BYTES) {
    pool_block *rest = cut(p, b, SLAB_BYTES);
    if (!rest) {
      mmb__pool_put(p, b);
      return NULL;
    }
    mmb__pool_put(p, rest);
  }
  return b;
}

pool_block *mmb__pool_take_slab_aligned(pool *p, bool provider) {
  /* a free block that starts at 64 KiB (a slab given back, say) first */
  pool_block *b = mmb__pool_take_held(p, SLAB_BYTES);
  if (b && !((uintptr_t)b->ptr & (SLAB_BYTES - 1))) return slab_trimmed(p, b);
  if (b) mmb__pool_put(p, b);
  size_t span = pool_round(2 * SLAB_BYTES - p->block_align);   /* room for any start */
  b = mmb__pool_take_held(p, span);
  if (!b && provider && (b = segment_for(p, span, false, false))) b->free = false;
  if (!b) return NULL;
  size_t pad = (size_t)(-(uintptr_t)b->ptr & (SLAB_BYTES - 1));
  if (pad % POOL_GRANULE) {   /* a segment whose blocks never start at 64 KiB */
    mmb__pool_put(p, b);
    return NULL;
  }
  if (pad) {   /* b keeps the bytes before (its record may be its segment's first) */
    pool_block *r = cut(p, b, pad);
    if (!r) {
      mmb__pool_put(p, b);
      return NULL;
    }
    mmb__pool_put(p, b);
    b = r;
  }
  return slab_trimmed(p, b);
}

pool_block *mmb__pool_take_held(pool *p, size_t need) {
  pool_bins *bins = need > POOL_SMALL_MAX ? &p->large : &p->small;
  pool_block *b = bins_find(bins, need);
  if (!b) return NULL;
  bins_remove(bins, b);
  free_list_unlink(p, b->seg);
  split(p, b, need);
  b->free = false;
  return b;
}

/* b swallows its next neighbour, which is out of the bins. */
static void absorb_next(pool *p, pool_block *b) {
  pool_block *q = b->next;
  b->size += q->size;
  b->next = q->next;
  if (q->next) q->next->prev = b;
  record_free(p, q);
}

void mmb__pool_put(pool *p, pool_block *b) {
  mmb__poison(host(p), b->ptr, b->size);
  b->free = true;
  if (b->seg->dedicated) {
    segment_release(p, b);
    return;
  }
  pool_bins *bins = bins_of(p, b->seg);
  if (b->next && b->next->free) {
    bins_remove(bins, b->next);
    absorb_next(p, b);
  }
  if (b->prev && b->prev->free) {
    b = b->prev;
    bins_remove(bins, b);
    absorb_next(p, b);
  }
  bins_insert(bins, b);
  if (!b->prev && !b->next) free_list_link(p, b->seg);
  size_t keep = p->iface->release_threshold;
  if (keep && MMB__GET(p->iface->reserved) > keep) mmb__pool_release_free(p, keep);
}

void mmb__pool_release_free(pool *p, size_t keep) {
  while (p->free_segments && MMB__GET(p->iface->reserved) > keep) {
    segment_release(p, p->free_segments->first);
  }
}

size_t mmb__pool_footprint(size_t bytes, size_t count) {
  if (!bytes || !count) return 0;
  size_t need = bytes > SIZE_MAX - POOL_HUGE_ROUND ? SIZE_MAX : pool_round(bytes);
  if (need >= POOL_HUGE_REQUEST) {   /* a segment each, rounded */
    size_t seg = need > SIZE_MAX - POOL_HUGE_ROUND ? SIZE_MAX
                 : (need + POOL_HUGE_ROUND - 1) & ~(POOL_HUGE_ROUND - 1);
    return count > SIZE_MAX / seg ? SIZE_MAX : count * seg;
  }
  /* Slab blocks: blocks of one class share a slab, and a class holds at
     most one slab more than its live blocks need (its spare); so at most two
     64 KiB slabs per block, 16 blocks to a small segment. */
  if (bytes <= SLAB_MAX) {
    size_t per = POOL_SMALL_SEGMENT / (2 * SLAB_BYTES), segs = count / per + (count % per != 0);
    return segs * POOL_SMALL_SEGMENT;
  }
  /* Carved from full segments: never more than this, since a segment cut
     to fit a tight limit holds fewer bytes than a full one would. */
  size_t seg = need > POOL_SMALL_MAX ? POOL_LARGE_SEGMENT : POOL_SMALL_SEGMENT;
  size_t per = seg / need, segs = count / per + (count % per != 0);
  return segs > SIZE_MAX / seg ? SIZE_MAX : segs * seg;
}

/* ---- life ---------------------------------------------------------------- */

void mmb__pool_cache_init(pool_cache *cache) {
  for (size_t bin = 0; bin < POOL_QUICK_BINS; bin++)
    cache->cap[bin] = bin < SLAB_CLASSES ? SLAB_CAP_MIN : POOL_CAP(bin - SLAB_CLASSES);
  /* a malloc-style bin holds nothing until its stack is allocated */
  for (size_t cls = 0; cls < SLAB_CLASSES; cls++)
    if (cache->ptrs[cls].e) cache->ptrs[cls].end = cache->ptrs[cls].e + SLAB_CAP_MIN;
}

mmbError mmb__pool_init(pool *p, mmbMemInterface *iface) {
  p->iface = iface;
  p->id = atomic_fetch_add(&next_pool_id, 1);
  p->block_align = mmb__iface_host_accessible(iface) ? POOL_GRANULE : 256;
  mmb__pool_cache_init(&p->own);
  p->own.c = &iface->c;
  p->own.handles = &iface->handles;
  p->thread_caches = mmb__iface_ts(iface);
  return MMB_OK;
}

void mmb__pool_finalize(pool *p) {
  while (p->segments) {
    pool_segment *s = p->segments;
    p->segments = s->next;
    mmb__unpoison(host(p), s->base, s->size);
    mmb__provider_free(p->iface, s->base, s->size, s->align);
    mmb__free(s);
  }
  while (p->record_chunks) {
    record_chunk *ch = p->record_chunks;
    p->record_chunks = ch->next;
    mmb__free(ch);
  }
}
