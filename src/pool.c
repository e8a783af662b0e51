/*
** pool.c -- the page-buffer pool: page and I/O buffers in power-of-two
** size classes, cached when freed and reused, trimmed on demand.
**
** DESIGN
**
**   Class c holds buffers of 64 KiB << c, up to 1 GiB.  A larger request
**   gets a buffer of its own (rounded up to 2 MiB) that is never cached.
**   Every buffer the pool owns, in use or cached, has an Entry in a
**   registry hashed by address (SHARDS shards, each with its own mutex),
**   which is how a foreign or twice-freed pointer is told apart.  Cached
**   buffers wait on their class's free lists (one for pinned buffers, one
**   for the rest), each class with its own mutex: taking a cached buffer
**   costs one class lock and one shard lock, never a global one.  The
**   shards and classes are static; each Entry is a general allocation
**   (pdb_malloc), so the registry is counted in pagedb_memory_used() like
**   the rest, and lives exactly as long as its buffer.
**
** INVARIANTS
**
**   1. An Entry is LIVE (handed out) or CACHED (on exactly one free list,
**      or being taken off one by trim); only pagedb_pool_free turns LIVE
**      into CACHED, under the shard lock, so one free wins and a second
**      sees CACHED and is refused.
**   2. Every byte of backing memory is charged (pdb_mem_charge) before it
**      is obtained and uncharged after it is given back, cached or not.
**      Charging may trim, so no pool lock is held while charging.
**   3. A pinned buffer (mlock()ed, or from pool methods that are pinned)
**      is reused only while pinned mode is on and is never trimmed; an
**      unpinned one only while it is off.
**
** Debug builds poison a buffer's first and last 64 KiB when it is handed
** out (0xA5) and when it is cached (0x5A): whole gigabytes would cost too
** much, and the ends are where overruns land.
*/
#include "pagedbInt.h"
#include "mem.h"

#include <pthread.h>
#include <sys/mman.h>

#define MIN_SHIFT 16                       /* 64 KiB */
#define NCLASS    15                       /* 64 KiB .. 1 GiB */
#define HUGE_ALIGN ((size_t)2 << 20)
#define SHARDS    64
#define BUCKETS   64

enum { LIVE = 1, CACHED = 2 };

typedef struct Entry Entry;
struct Entry {
  void *p;
  size_t size;
  int cls;           /* -1: a buffer of its own */
  int state;
  int pinned;
  int locked;        /* mlock()ed by us */
  Entry *hnext;      /* in its registry bucket */
  Entry *fnext;      /* on its free list */
};

#define PDB_LINE 64   /* a cache line */

typedef struct Class {
  _Alignas(PDB_LINE) pthread_mutex_t mu;
  Entry *plain, *pinned;
} Class;

typedef struct Shard {
  pthread_mutex_t mu;
  Entry *b[BUCKETS];
} Shard;

static void *map_alloc(void *app, size_t n, size_t align);
static void map_free(void *app, void *p, size_t n);
static const pagedb_pool_methods kMap = { 1, map_alloc, map_free, NULL, 0 };

static pagedb_pool_methods methods = { 1, map_alloc, map_free, NULL, 0 };
/* Classes and counters on cache lines of their own: threads working in
** different classes, or counting, do not slow each other down. */
static _Alignas(PDB_LINE) Class cls[NCLASS] = { [0 ... NCLASS - 1] = { .mu = PTHREAD_MUTEX_INITIALIZER } };
static _Alignas(PDB_LINE) Shard shard[SHARDS] = { [0 ... SHARDS - 1] = { .mu = PTHREAD_MUTEX_INITIALIZER } };
static _Atomic int pin_mode;
static _Alignas(PDB_LINE) _Atomic int64_t st_used, st_used_high;
static _Alignas(PDB_LINE) _Atomic int64_t st_cached, st_cached_high;
static _Alignas(PDB_LINE) _Atomic int64_t st_pinned, st_pinned_high;

/* ---- the default backing: anonymous maps ---- */

static void *map_alloc(void *app, size_t n, size_t align) {
  (void)app;
  size_t extra = align > 4096 ? align : 0;
  uint8_t *m = mmap(NULL, n + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  if (extra) {
    /* Over-map, then give back the ends, so the buffer is aligned. */
    uint8_t *a = (uint8_t *)(((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1));
    if (a > m) munmap(m, (size_t)(a - m));
    if (a + n < m + n + extra) munmap(a + n, (size_t)(m + n + extra - (a + n)));
    m = a;
    madvise(m, n, MADV_HUGEPAGE);   /* only a hint */
  }
  return m;
}

static void map_free(void *app, void *p, size_t n) {
  (void)app;
  munmap(p, n);
}

/* ---- counters ---- */

static void add(_Atomic int64_t *v, _Atomic int64_t *high, int64_t d) {
  int64_t now = atomic_fetch_add(v, d) + d;
  int64_t h = atomic_load(high);
  while (now > h && !atomic_compare_exchange_weak(high, &h, now)) {
  }
}

/* ---- the registry ---- */

static Shard *shard_of(const void *p) {
  return &shard[pdb_mix64((uint64_t)(uintptr_t)p >> 12) % SHARDS];
}

static Entry **bucket(Shard *s, const void *p) {
  return &s->b[(pdb_mix64((uint64_t)(uintptr_t)p >> 12) / SHARDS) % BUCKETS];
}

/* The entry of P in S (locked), or NULL; *PREV the link that points to it. */
static Entry *find(Shard *s, const void *p, Entry ***prev) {
  Entry **pp = bucket(s, p);
  while (*pp && (*pp)->p != p) pp = &(*pp)->hnext;
  if (prev) *prev = pp;
  return *pp;
}

static void forget(Entry *e) {
  Shard *s = shard_of(e->p);
  Entry **pp;
  pthread_mutex_lock(&s->mu);
  Entry *f = find(s, e->p, &pp);
  assert(f == e);
  *pp = f->hnext;
  pthread_mutex_unlock(&s->mu);
}

/* Give E's memory back and free E; E is in no list or bucket. */
static void release(Entry *e) {
  if (e->locked) munlock(e->p, e->size);
  methods.xFree(methods.pAppData, e->p, e->size);
  if (e->pinned) add(&st_pinned, &st_pinned_high, -(int64_t)e->size);
  pdb_mem_uncharge(e->size);
  pdb_free(e);
}

static void poison(void *p, size_t n, int byte) {
#ifndef NDEBUG
  size_t k = n < (64u << 10) ? n : (64u << 10);
  memset(p, byte, k);
  memset((uint8_t *)p + n - k, byte, k);
#else
  (void)p;
  (void)n;
  (void)byte;
#endif
}

/* ---- the public calls ---- */

static int class_of(size_t n) {
  int c = 0;
  while (c < NCLASS && ((size_t)1 << (MIN_SHIFT + c)) < n) c++;
  return c < NCLASS ? c : -1;
}

void *pagedb_pool_alloc(size_t n, size_t *cap) {
  /* The counters are signed 64-bit: a size past INT64_MAX would pass the
  ** limit as a negative charge (and no system maps that much anyway). */
  if (n == 0 || n > SIZE_MAX - HUGE_ALIGN || (uint64_t)n > (uint64_t)INT64_MAX - HUGE_ALIGN) return NULL;
  if (pagedb_initialize() != PAGEDB_OK) return NULL;
  int c = class_of(n);
  size_t size = c >= 0 ? (size_t)1 << (MIN_SHIFT + c) : (n + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1);
  int pinned = atomic_load(&pin_mode) || methods.pinned;
  Entry *e = NULL;
  if (c >= 0) {
    Class *k = &cls[c];
    pthread_mutex_lock(&k->mu);
    Entry **list = pinned ? &k->pinned : &k->plain;
    if ((e = *list) != NULL) *list = e->fnext;
    pthread_mutex_unlock(&k->mu);
  }
  if (e) {
    Shard *s = shard_of(e->p);
    pthread_mutex_lock(&s->mu);
    e->state = LIVE;
    pthread_mutex_unlock(&s->mu);
    add(&st_cached, &st_cached_high, -(int64_t)size);
  } else {
    /* Charged first: a request the limit refuses then counts nothing at
    ** all, not even its Entry for a moment (the high-water mark). */
    if (pdb_mem_charge(size) != PAGEDB_OK) return NULL;
    e = pdb_malloc(sizeof *e);
    if (!e) {
      pdb_mem_uncharge(size);
      return NULL;
    }
    memset(e, 0, sizeof *e);
    e->size = size;
    e->cls = c;
    e->p = methods.xAlloc(methods.pAppData, size, size >= HUGE_ALIGN ? HUGE_ALIGN : 4096);
    if (e->p && pinned && !methods.pinned) {
      if (mlock(e->p, size) == 0) {
        e->locked = 1;
      } else {
        methods.xFree(methods.pAppData, e->p, size);
        e->p = NULL;
      }
    }
    if (!e->p) {
      pdb_mem_uncharge(size);
      pdb_free(e);
      return NULL;
    }
    pdb_mem_settle();
    e->pinned = pinned;
    e->state = LIVE;
    if (pinned) add(&st_pinned, &st_pinned_high, (int64_t)size);
    Shard *s = shard_of(e->p);
    pthread_mutex_lock(&s->mu);
    Entry **b = bucket(s, e->p);
    e->hnext = *b;
    *b = e;
    pthread_mutex_unlock(&s->mu);
  }
  add(&st_used, &st_used_high, (int64_t)size);
  poison(e->p, size, 0xA5);
  if (cap) *cap = size;
  return e->p;
}

int pagedb_pool_free(void *p) {
  if (!p) return PAGEDB_OK;
  Shard *s = shard_of(p);
  Entry **pp;
  pthread_mutex_lock(&s->mu);
  Entry *e = find(s, p, &pp);
  if (!e || e->state != LIVE) {
    pthread_mutex_unlock(&s->mu);
    return PAGEDB_MISUSE;
  }
  if (e->cls < 0) *pp = e->hnext;    /* its own buffer: gone at once */
  else e->state = CACHED;
  pthread_mutex_unlock(&s->mu);
  add(&st_used, &st_used_high, -(int64_t)e->size);
  if (e->cls < 0) {
    release(e);
    return PAGEDB_OK;
  }
  poison(e->p, e->size, 0x5A);
  add(&st_cached, &st_cached_high, (int64_t)e->size);
  Class *k = &cls[e->cls];
  pthread_mutex_lock(&k->mu);
  Entry **list = e->pinned ? &k->pinned : &k->plain;
  e->fnext = *list;
  *list = e;
  pthread_mutex_unlock(&k->mu);
  return PAGEDB_OK;
}

int pagedb_pool_pin(int on) { return atomic_exchange(&pin_mode, on ? 1 : 0); }

/* Take cached buffers of class C off LIST and release them until N bytes
** are released in all (*DONE counts them). */
static void drain(int c, int pinned, size_t n, size_t *done) {
  Class *k = &cls[c];
  while (*done < n) {
    pthread_mutex_lock(&k->mu);
    Entry **list = pinned ? &k->pinned : &k->plain;
    Entry *e = *list;
    if (e) *list = e->fnext;
    pthread_mutex_unlock(&k->mu);
    if (!e) return;
    forget(e);
    add(&st_cached, &st_cached_high, -(int64_t)e->size);
    *done += e->size;
    release(e);
  }
}

size_t pool_trim(size_t n) {
  size_t done = 0;
  for (int c = NCLASS - 1; c >= 0 && done < n; c--) drain(c, 0, n, &done);
  return done;
}

size_t pagedb_release_memory(size_t n) { return pool_trim(n); }

int pool_shutdown(void) {
  if (atomic_load(&st_used) != 0) return PAGEDB_MISUSE;
  size_t done = 0;
  for (int c = 0; c < NCLASS; c++) {
    drain(c, 0, SIZE_MAX, &done);
    drain(c, 1, SIZE_MAX, &done);
  }
  return PAGEDB_OK;
}

int pool_config(const pagedb_pool_methods *m) {
  if (m && (m->iVersion < 1 || !m->xAlloc || !m->xFree)) return PAGEDB_MISUSE;
  if (atomic_load(&st_used) != 0 || atomic_load(&st_cached) != 0) return PAGEDB_MISUSE;
  methods = m ? *m : kMap;
  return PAGEDB_OK;
}

void pool_get_config(pagedb_pool_methods *m) { *m = methods; }

void pool_status(int op, int64_t *cur, int64_t *high, int reset) {
  _Atomic int64_t *v = op == PAGEDB_STATUS_POOL_USED ? &st_used : op == PAGEDB_STATUS_POOL_CACHED ? &st_cached : &st_pinned;
  _Atomic int64_t *h = op == PAGEDB_STATUS_POOL_USED ? &st_used_high
                     : op == PAGEDB_STATUS_POOL_CACHED ? &st_cached_high : &st_pinned_high;
  *cur = atomic_load(v);
  *high = atomic_load(h);
  if (reset) atomic_store(h, *cur);
}
