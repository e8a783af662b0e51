/*
** pool.c -- the page-buffer pool: page and I/O buffers in power-of-two
** size classes, cached when freed and reused, trimmed on demand.
**
** DESIGN
**
**   Class c holds buffers of 64 KiB << c, up to 1 GiB.  A larger request
**   gets a buffer of its own (rounded up to 2 MiB) that is never cached.
**   Every buffer the pool owns, in use or cached, has an Entry in a
**   registry hashed by address (SHARDS shards, each with its own spin
**   lock), which is how a foreign or twice-freed pointer is told apart.
**
**   A freed buffer goes first to its thread's cache (SLOTS buffers per
**   class, per thread), then to its class's shared free lists (one for
**   pinned buffers, one for the rest, under the class mutex).  The hot
**   path -- a thread freeing a buffer and allocating one of the same
**   class again, as every writer and reader does -- therefore takes one
**   atomic exchange to allocate and one uncontended shard lock to free,
**   and shares no cache line with other threads: the registry must be
**   consulted on a free (the pointer is untrusted), but nothing else is.
**   The shards, classes and thread caches are static; each Entry is a
**   general allocation (pdb_malloc), so the registry is counted in
**   pagedb_memory_used() like the rest and lives exactly as long as its
**   buffer.
**
** COUNTERS
**
**   Bytes in use and bytes cached are sums: each thread's own counters
**   (written only by that thread, so a hot-path update is a plain store)
**   plus two shared adjustments for what no live thread accounts for
**   (the shared lists, buffers a trim took from a thread's cache, threads
**   that have exited).  The sums are exact whenever no pool call is in
**   progress.  Their high-water marks are raised whenever a thread passes
**   its own peak and on every slow path, which is exact while one thread
**   uses the pool at a time; with several, a moment when all of them were
**   at their peaks together may be missed.
**
** INVARIANTS
**
**   1. An Entry is LIVE (handed out) or CACHED (in exactly one thread
**      slot or shared free list, or being taken off one by trim); only
**      pagedb_pool_free turns LIVE into CACHED, under the shard lock, so
**      one free wins and a second sees CACHED and is refused.
**   2. A thread slot is filled only by its thread, and emptied, with an
**      atomic exchange, by its thread or by a trim: whoever's exchange
**      returns the Entry owns it.
**   3. Every byte of backing memory is charged (pdb_mem_charge) before it
**      is obtained and uncharged after it is given back, cached or not.
**      Charging may trim, so no pool lock is held while charging.
**   4. A pinned buffer (mlock()ed, or from pool methods that are pinned)
**      is reused only while pinned mode is on and is never trimmed; an
**      unpinned one only while it is off.
**
** Lock order: reg.mu, then a class mutex or a shard lock; never two of
** the latter at once.
**
** Debug builds poison a buffer's first and last 64 KiB when it is handed
** out (0xA5) and when it is cached (0x5A): whole gigabytes would cost too
** much, and the ends are where overruns land.
*/
#include "pagedbInt.h"
#include "mem.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#define MIN_SHIFT 16                       /* 64 KiB */
#define NCLASS    15                       /* 64 KiB .. 1 GiB */
#define HUGE_ALIGN ((size_t)2 << 20)
#define SHARDS    64
#define BUCKETS   64
#define SLOTS     2                        /* cached buffers per class and thread */
#define PDB_LINE  64                       /* a cache line */

enum { LIVE = 1, CACHED = 2 };

typedef struct Entry Entry;
struct Entry {
  void *p;           /* these four never change once the Entry is made */
  size_t size;
  int cls;           /* -1: a buffer of its own */
  int pinned;
  int locked;        /* mlock()ed by us */
  _Atomic int state; /* LIVE or CACHED: set to LIVE by the thread that
                     ** took the Entry off a list, read and set to CACHED
                     ** under the shard lock */
  Entry *hnext;      /* in its registry bucket */
  Entry *fnext;      /* on a shared free list */
};

typedef struct Class {
  _Alignas(PDB_LINE) pthread_mutex_t mu;
  Entry *plain, *pinned;
} Class;

typedef struct Shard {
  _Alignas(PDB_LINE) _Atomic int lock;
  Entry *b[BUCKETS];
} Shard;

/* A thread's cache and counters.  USED and CACHED are written only by the
** owning thread (relaxed stores: readers sum them under reg.mu). */
typedef struct Tcache Tcache;
struct Tcache {
  _Atomic(Entry *) slot[2][NCLASS][SLOTS];   /* [pinned][class] */
  _Atomic int64_t used, cached;
  int64_t peak_used, peak_cached;            /* this thread's, since EPOCH */
  unsigned epoch;
  Tcache *next, *prev;
};

static void *map_alloc(void *app, size_t n, size_t align);
static void map_free(void *app, void *p, size_t n);
static const pagedb_pool_methods kMap = { 1, map_alloc, map_free, NULL, 0 };

static pagedb_pool_methods methods = { 1, map_alloc, map_free, NULL, 0 };
static _Alignas(PDB_LINE) Class cls[NCLASS] = { [0 ... NCLASS - 1] = { .mu = PTHREAD_MUTEX_INITIALIZER } };
static Shard shard[SHARDS];
static _Atomic int pin_mode;
static _Alignas(PDB_LINE) _Atomic int64_t st_pinned, st_pinned_high;

static _Thread_local Tcache me;
/* &me, once enrolled.  Initial-exec, so that reading it is one load rather
** than a call to __tls_get_addr (8 bytes of static TLS, which glibc keeps
** for libraries loaded with dlopen too). */
static _Thread_local Tcache *me_p __attribute__((tls_model("initial-exec")));

static struct {
  _Alignas(PDB_LINE) pthread_mutex_t mu;  /* the list, the adjustments, the highs */
  Tcache *all;                            /* every enrolled thread */
  int64_t uadj, cadj;                     /* used / cached no thread counts */
  int64_t used_high, cached_high;
  _Atomic unsigned epoch;                 /* bumped by a reset of the highs */
  pthread_key_t key;                      /* its destructor empties a thread's cache */
  int key_made;
} reg = { .mu = PTHREAD_MUTEX_INITIALIZER };

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

static void raise_to(_Atomic int64_t *high, int64_t now) {
  int64_t h = atomic_load(high);
  while (now > h && !atomic_compare_exchange_weak(high, &h, now)) {
  }
}

/* An owner's update of its own counter: no other thread writes it, so no
** read-modify-write instruction is needed. */
static void bump(_Atomic int64_t *v, int64_t d) {
  atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + d, memory_order_relaxed);
}

/* The totals in use and cached.  Caller holds reg.mu. */
static void sums(int64_t *used, int64_t *cached) {
  int64_t u = reg.uadj, c = reg.cadj;
  for (Tcache *t = reg.all; t; t = t->next) {
    u += atomic_load_explicit(&t->used, memory_order_relaxed);
    c += atomic_load_explicit(&t->cached, memory_order_relaxed);
  }
  *used = u;
  *cached = c;
}

/* Raise the high-water marks to the totals now, and T's peaks (restarted
** after a reset).  Caller holds reg.mu. */
static void settle_locked(Tcache *t) {
  int64_t u, c;
  sums(&u, &c);
  if (u > reg.used_high) reg.used_high = u;
  if (c > reg.cached_high) reg.cached_high = c;
  if (t) {
    unsigned epoch = atomic_load_explicit(&reg.epoch, memory_order_relaxed);
    int64_t tu = atomic_load_explicit(&t->used, memory_order_relaxed);
    int64_t tc = atomic_load_explicit(&t->cached, memory_order_relaxed);
    if (t->epoch != epoch || tu > t->peak_used) t->peak_used = tu;
    if (t->epoch != epoch || tc > t->peak_cached) t->peak_cached = tc;
    t->epoch = epoch;
  }
}

static void settle(Tcache *t) {
  pthread_mutex_lock(&reg.mu);
  settle_locked(t);
  pthread_mutex_unlock(&reg.mu);
}

/* After T's counters changed on the hot path: only a new peak of T's own
** (or a reset since T last looked) can be a new high-water mark. */
static inline void note(Tcache *t) {
  if (t->epoch != atomic_load_explicit(&reg.epoch, memory_order_relaxed) ||
      atomic_load_explicit(&t->used, memory_order_relaxed) > t->peak_used ||
      atomic_load_explicit(&t->cached, memory_order_relaxed) > t->peak_cached)
    settle(t);
}

/* Count D bytes in use (or cached) by T, or, for a thread that could not
** enroll, in the shared adjustment. */
static void count_used(Tcache *t, int64_t d) {
  if (t) {
    bump(&t->used, d);
    return;
  }
  pthread_mutex_lock(&reg.mu);
  reg.uadj += d;
  pthread_mutex_unlock(&reg.mu);
}

/* ---- the registry ---- */

/* A spin lock: the sections it guards are a short chain walk, far cheaper
** than putting a thread to sleep and waking it. */
static inline void lock(Shard *s) {
  int n = 0;
  while (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire)) {
    while (atomic_load_explicit(&s->lock, memory_order_relaxed)) {
      if (++n > 64) sched_yield();
    }
  }
}

static inline void unlock(Shard *s) { atomic_store_explicit(&s->lock, 0, memory_order_release); }

static uint64_t hash_of(const void *p) { return pdb_mix64((uint64_t)(uintptr_t)p >> 12); }

static Shard *shard_of(const void *p) { return &shard[hash_of(p) % SHARDS]; }

static Entry **bucket(Shard *s, const void *p) { return &s->b[(hash_of(p) / SHARDS) % BUCKETS]; }

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
  lock(s);
  Entry *f = find(s, e->p, &pp);
  assert(f == e);
  *pp = f->hnext;
  unlock(s);
}

/* Give E's memory back and free E; E is in no list, slot or bucket. */
static void release(Entry *e) {
  if (e->locked) munlock(e->p, e->size);
  methods.xFree(methods.pAppData, e->p, e->size);
  if (e->pinned) atomic_fetch_sub(&st_pinned, (int64_t)e->size);
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

/* ---- thread caches ---- */

static void leave(void *arg);

/* Put T on reg.all, with a destructor that empties it when its thread
** exits.  NULL if the key cannot be set: that thread then uses the shared
** lists only. */
static Tcache *enroll(Tcache *t) {
  pthread_mutex_lock(&reg.mu);
  if (!reg.key_made && pthread_key_create(&reg.key, leave) == 0) reg.key_made = 1;
  if (!reg.key_made || pthread_setspecific(reg.key, t) != 0) {
    pthread_mutex_unlock(&reg.mu);
    return NULL;
  }
  t->prev = NULL;
  t->next = reg.all;
  if (reg.all) reg.all->prev = t;
  reg.all = t;
  settle_locked(t);
  pthread_mutex_unlock(&reg.mu);
  return t;
}

static inline Tcache *mine(void) {
  Tcache *t = me_p;
  if (__builtin_expect(t != NULL, 1)) return t;
  return me_p = enroll(&me);
}

/* A thread's slots of one class are the top of that class's LIFO stack,
** slot SLOTS-1 uppermost; the shared list is the rest of it. */
static Entry *slot_take(Tcache *t, int pinned, int c) {
  for (int i = SLOTS - 1; i >= 0; i--) {
    _Atomic(Entry *) *s = &t->slot[pinned][c][i];
    Entry *e;
    /* Load first: an empty slot costs no atomic exchange. */
    if (atomic_load_explicit(s, memory_order_relaxed) && (e = atomic_exchange_explicit(s, NULL, memory_order_acquire)))
      return e;
  }
  return NULL;
}

/* Push E onto T's slots; returns the Entry pushed out of the bottom slot
** to make room (for the shared list), or NULL.  Only T's own thread fills
** its slots, so a slot seen empty stays empty until this thread's store
** (a trim only ever empties one). */
static Entry *slot_put(Tcache *t, Entry *e) {
  _Atomic(Entry *) *s = t->slot[e->pinned][e->cls];
  int top = SLOTS - 1;
  while (top >= 0 && !atomic_load_explicit(&s[top], memory_order_relaxed)) top--;
  if (top < SLOTS - 1) {
    atomic_store_explicit(&s[top + 1], e, memory_order_release);
    return NULL;
  }
  Entry *out = atomic_exchange_explicit(&s[0], NULL, memory_order_acquire);
  for (int i = 0; i + 1 < SLOTS; i++)
    atomic_store_explicit(&s[i], atomic_exchange_explicit(&s[i + 1], NULL, memory_order_acquire), memory_order_release);
  atomic_store_explicit(&s[SLOTS - 1], e, memory_order_release);
  return out;
}

static void list_put(Entry *e) {
  Class *k = &cls[e->cls];
  pthread_mutex_lock(&k->mu);
  Entry **list = e->pinned ? &k->pinned : &k->plain;
  e->fnext = *list;
  *list = e;
  pthread_mutex_unlock(&k->mu);
}

static Entry *list_take(int c, int pinned) {
  Class *k = &cls[c];
  pthread_mutex_lock(&k->mu);
  Entry **list = pinned ? &k->pinned : &k->plain;
  Entry *e = *list;
  if (e) *list = e->fnext;
  pthread_mutex_unlock(&k->mu);
  return e;
}

/* The thread-exit destructor: T's cached buffers go to the shared lists
** and its counters to the adjustments, and T leaves the list. */
static void leave(void *arg) {
  Tcache *t = arg;
  pthread_mutex_lock(&reg.mu);
  for (int pinned = 0; pinned < 2; pinned++) {
    for (int c = 0; c < NCLASS; c++) {
      Entry *e;
      while ((e = slot_take(t, pinned, c)) != NULL) {
        bump(&t->cached, -(int64_t)e->size);
        reg.cadj += (int64_t)e->size;
        list_put(e);
      }
    }
  }
  reg.uadj += atomic_load(&t->used);
  reg.cadj += atomic_load(&t->cached);
  atomic_store(&t->used, 0);
  atomic_store(&t->cached, 0);
  if (t->prev) t->prev->next = t->next;
  else reg.all = t->next;
  if (t->next) t->next->prev = t->prev;
  me_p = NULL;
  pthread_mutex_unlock(&reg.mu);
}

/* ---- the public calls ---- */

static int class_of(size_t n) {
  if (n <= (size_t)1 << MIN_SHIFT) return 0;
  int c = 64 - __builtin_clzll((unsigned long long)(n - 1)) - MIN_SHIFT;
  return c < NCLASS ? c : -1;
}

/* A new buffer of SIZE bytes (class C) from the backing allocator. */
static Entry *obtain(size_t size, int c, int pinned) {
  /* Charged first: a request the limit refuses then counts nothing at
  ** all, not even its Entry for a moment (the high-water mark). */
  if (pdb_mem_charge(size) != PAGEDB_OK) return NULL;
  Entry *e = pdb_malloc(sizeof *e);
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
  if (pinned) raise_to(&st_pinned_high, atomic_fetch_add(&st_pinned, (int64_t)size) + (int64_t)size);
  Shard *s = shard_of(e->p);
  lock(s);
  Entry **b = bucket(s, e->p);
  e->hnext = *b;
  *b = e;
  unlock(s);
  return e;
}

void *pagedb_pool_alloc(size_t n, size_t *cap) {
  /* The counters are signed 64-bit: a size past INT64_MAX would pass the
  ** limit as a negative charge (and no system maps that much anyway). */
  if (n == 0 || n > SIZE_MAX - HUGE_ALIGN || (uint64_t)n > (uint64_t)INT64_MAX - HUGE_ALIGN) return NULL;
  int c = class_of(n);
  size_t size = c >= 0 ? (size_t)1 << (MIN_SHIFT + c) : (n + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1);
  int pinned = atomic_load_explicit(&pin_mode, memory_order_relaxed) || methods.pinned;
  Tcache *t = mine();
  Entry *e = NULL;
  /* A thread's slots are empty while the library is shut down, so a buffer
  ** found there needs no pagedb_initialize(). */
  if (c >= 0 && t && (e = slot_take(t, pinned, c)) != NULL) {
    bump(&t->cached, -(int64_t)size);
    atomic_store_explicit(&e->state, LIVE, memory_order_relaxed);
    count_used(t, (int64_t)size);
    note(t);
  } else {
    if (pagedb_initialize() != PAGEDB_OK) return NULL;
    if (c >= 0 && (e = list_take(c, pinned)) != NULL) {
      pthread_mutex_lock(&reg.mu);
      reg.cadj -= (int64_t)size;
      pthread_mutex_unlock(&reg.mu);
    } else if ((e = obtain(size, c, pinned)) == NULL) {
      return NULL;
    }
    atomic_store_explicit(&e->state, LIVE, memory_order_relaxed);
    count_used(t, (int64_t)size);
    settle(t);
  }
  poison(e->p, size, 0xA5);
  if (cap) *cap = size;
  return e->p;
}

int pagedb_pool_free(void *p) {
  if (!p) return PAGEDB_OK;
  Shard *s = shard_of(p);
  Entry **pp;
  lock(s);
  Entry *e = find(s, p, &pp);
  if (!e || atomic_load_explicit(&e->state, memory_order_relaxed) != LIVE) {
    unlock(s);
    return PAGEDB_MISUSE;
  }
  if (e->cls < 0) *pp = e->hnext;    /* its own buffer: gone at once */
  else atomic_store_explicit(&e->state, CACHED, memory_order_relaxed);
  unlock(s);
  Tcache *t = mine();
  count_used(t, -(int64_t)e->size);
  if (e->cls < 0) {
    release(e);
    settle(t);
    return PAGEDB_OK;
  }
  poison(e->p, e->size, 0x5A);
  Entry *out = e;
  if (t) {
    bump(&t->cached, (int64_t)e->size);
    if ((out = slot_put(t, e)) == NULL) {
      note(t);
      return PAGEDB_OK;
    }
    /* OUT leaves this thread's count for the shared list's. */
    bump(&t->cached, -(int64_t)out->size);
  }
  pthread_mutex_lock(&reg.mu);
  reg.cadj += (int64_t)out->size;
  pthread_mutex_unlock(&reg.mu);
  list_put(out);
  settle(t);
  return PAGEDB_OK;
}

int pagedb_pool_pin(int on) { return atomic_exchange(&pin_mode, on ? 1 : 0); }

/* A cached buffer of class C from some thread's slots, or NULL.  Caller
** holds reg.mu, so the threads stay enrolled while their slots are read. */
static Entry *steal(int c, int pinned) {
  for (Tcache *t = reg.all; t; t = t->next) {
    for (int i = 0; i < SLOTS; i++) {
      Entry *e = atomic_exchange_explicit(&t->slot[pinned][c][i], NULL, memory_order_acquire);
      if (e) return e;
    }
  }
  return NULL;
}

/* Release cached buffers of class C (pinned or not), from the shared list
** first, until N bytes are released in all (*DONE counts them).  Caller
** holds reg.mu. */
static void drain(int c, int pinned, size_t n, size_t *done) {
  while (*done < n) {
    Entry *e = list_take(c, pinned);
    if (!e && (e = steal(c, pinned)) == NULL) return;
    forget(e);
    reg.cadj -= (int64_t)e->size;
    *done += e->size;
    release(e);
  }
}

size_t pool_trim(size_t n) {
  size_t done = 0;
  pthread_mutex_lock(&reg.mu);
  for (int c = NCLASS - 1; c >= 0 && done < n; c--) drain(c, 0, n, &done);
  pthread_mutex_unlock(&reg.mu);
  return done;
}

size_t pagedb_release_memory(size_t n) { return pool_trim(n); }

int pool_shutdown(void) {
  int64_t u, c;
  pthread_mutex_lock(&reg.mu);
  sums(&u, &c);
  if (u != 0) {
    pthread_mutex_unlock(&reg.mu);
    return PAGEDB_MISUSE;
  }
  size_t done = 0;
  for (int k = 0; k < NCLASS; k++) {
    drain(k, 0, SIZE_MAX, &done);
    drain(k, 1, SIZE_MAX, &done);
  }
  pthread_mutex_unlock(&reg.mu);
  return PAGEDB_OK;
}

int pool_config(const pagedb_pool_methods *m) {
  if (m && (m->iVersion < 1 || !m->xAlloc || !m->xFree)) return PAGEDB_MISUSE;
  int64_t u, c;
  pthread_mutex_lock(&reg.mu);
  sums(&u, &c);
  pthread_mutex_unlock(&reg.mu);
  if (u != 0 || c != 0) return PAGEDB_MISUSE;
  methods = m ? *m : kMap;
  return PAGEDB_OK;
}

void pool_get_config(pagedb_pool_methods *m) { *m = methods; }

void pool_status(int op, int64_t *cur, int64_t *high, int reset) {
  if (op == PAGEDB_STATUS_POOL_PINNED) {
    *cur = atomic_load(&st_pinned);
    *high = atomic_load(&st_pinned_high);
    if (reset) atomic_store(&st_pinned_high, *cur);
    return;
  }
  int used = op == PAGEDB_STATUS_POOL_USED;
  pthread_mutex_lock(&reg.mu);
  settle_locked(NULL);
  int64_t u, c;
  sums(&u, &c);
  int64_t *h = used ? &reg.used_high : &reg.cached_high;
  *cur = used ? u : c;
  *high = *h;
  if (reset) {
    *h = *cur;
    /* Every thread must look again at its next call: a peak of its own
    ** that is old news may now be a new high-water mark. */
    atomic_fetch_add(&reg.epoch, 1);
  }
  pthread_mutex_unlock(&reg.mu);
}
