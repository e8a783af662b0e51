/*
** mem.c -- the general allocator: configuration, exact accounting, the
** memory limit, and SQLite's allocations routed through pagedb's.
**
** ACCOUNTING
**
**   used = the usable size (xSize) of every general block live now
**        + every byte the pool holds (pdb_mem_charge / _uncharge).
**
**   A block is counted when it is allocated and uncounted, at the same
**   xSize, just before it is freed, so used returns exactly to where it was
**   once everything allocated since is freed.  Counters are atomics: no
**   lock on the hot path.  The high-water mark is raised with a CAS loop.
**
** THE LIMIT (PAGEDB_CONFIG_MEMLIMIT)
**
**   is soft: it is checked before an allocation, without a lock, so
**   threads allocating at the same instant may pass it by a block each.
**   A request that would pass it first trims the pool's cache, then fails.
**
** ALLOCATORS
**
**   The default is malloc() with a 16-byte prefix recording the size (as
**   SQLite's mem1.c), so xSize is exact and portable; in debug builds the
**   prefix also holds a cookie that catches most double and foreign frees,
**   and blocks are poisoned when allocated and freed.  PAGEDB_CONFIG_HEAP
**   serves every block from one arena through the buddy heap (buddy.c),
**   which catches every double and foreign free.  PAGEDB_CONFIG_MALLOC
**   installs the embedder's own.
*/
#include "pagedbInt.h"
#include "mem.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define PREFIX 16                    /* keeps blocks 16-byte aligned */
#define LIVE   0x4c495645u           /* "LIVE": debug cookie of a block in use */
#define DEAD   0x44454144u           /* "DEAD": ...of a freed one */

static struct {
  pthread_mutex_t mu;                /* initialization, configuration, the heap */
  _Atomic int ready;
  pagedb_mem_methods m;
  BuddyHeap *heap;                   /* PAGEDB_CONFIG_HEAP, or NULL */
  int sqlite_ours;                   /* SQLite allocates through us */
  sqlite3_mem_methods sqlite_old;    /* ...and this was its allocator before */
  _Atomic int64_t limit;             /* 0: none */
} g = { .mu = PTHREAD_MUTEX_INITIALIZER };

/*
** The counters (bytes and blocks outstanding, and their high-water marks),
** in NSHARD shards of a cache line each: a thread counts in the shard of
** its own (given round-robin at its first count), so that two threads
** allocating at once do not take one cache line from each other at every
** call -- with one line, the commit of 1,000 small parts, whose two threads
** open catalogs through SQLite and so through here, spent a quarter of its
** CPU in these counters (doc/benchmarks.md).  A counter is the sum of its
** shards: exact whenever no call is in progress (a block freed by another
** thread than the one that allocated it is subtracted in the freeing
** thread's shard: the sums stay right, a shard may go negative).  A high-water mark is the sum of the
** shards' own marks: exact while one thread at a time allocates since the
** last reset, an upper bound otherwise (the shards need not peak together).
*/
#define NSHARD PDB_NSHARD
typedef struct Shard {
  _Alignas(64) _Atomic int64_t used, used_high, count, count_high;
} Shard;
static Shard shard[NSHARD];
static _Atomic unsigned shard_next;
/* 1 + this thread's shard, 0 until its first count.  Initial-exec: one load
** (as pool.c's me_p). */
static _Thread_local unsigned shard_of_me __attribute__((tls_model("initial-exec")));

static inline Shard *my_shard(void) {
  unsigned s = shard_of_me;
  if (!s) shard_of_me = s = 1 + atomic_fetch_add_explicit(&shard_next, 1, memory_order_relaxed) % NSHARD;
  return &shard[s - 1];
}

unsigned pdb_shard(void) { return (unsigned)(my_shard() - shard); }

/* The sum of counter OFF (offsetof in Shard) over the shards. */
static int64_t sum_of(size_t off) {
  int64_t v = 0;
  for (int i = 0; i < NSHARD; i++) v += atomic_load_explicit((_Atomic int64_t *)((char *)&shard[i] + off), memory_order_relaxed);
  return v;
}

_Atomic int pdb_handles;

/* ---- the default allocator: malloc with a size prefix ---- */

typedef struct Prefix {
  size_t n;
  uint32_t cookie;
} Prefix;

/* A block of BIG_MIN bytes or more asks for transparent huge pages over
** the 2 MiB-aligned span wholly inside it: it is fresh memory its caller is
** about to fill (a commit's list of a part's slots, an index being built),
** and a first touch costs per page -- measured on this project's VM, 14.7 us
** a 4 KiB page against 0.7 us per 4 KiB of a 2 MiB one (doc/benchmarks.md).
** Only a hint: the kernel may ignore it, and no byte outside the block is
** advised, so a block never holds memory it did not ask for. */
#define BIG_ALIGN ((uintptr_t)2 << 20)
#define BIG_MIN   ((size_t)4 << 20)

static void advise_big(void *h, size_t n) {
#ifdef MADV_HUGEPAGE
  if (n < BIG_MIN) return;
  uintptr_t a = ((uintptr_t)h + BIG_ALIGN - 1) & ~(BIG_ALIGN - 1), e = ((uintptr_t)h + n) & ~(BIG_ALIGN - 1);
  if (e > a) (void)madvise((void *)a, (size_t)(e - a), MADV_HUGEPAGE);
#else
  (void)h;
  (void)n;
#endif
}

static void *sys_malloc(size_t n) {
  if (n > SIZE_MAX - PREFIX) return NULL;
  Prefix *h = malloc(n + PREFIX);
  if (!h) return NULL;
  advise_big(h, n + PREFIX);
  h->n = n;
  h->cookie = LIVE;
  return (uint8_t *)h + PREFIX;
}

/* sys_malloc's block, zeroed: calloc knows a fresh map is zero and leaves
** its pages untouched, where a memset would fault every one of them in
** (on this project's VM about 15 us a 4 KiB page: 30 ms to touch 8 MiB),
** so that an index's 2 MiB arena of chunk pointers (index.c), of which a
** few are used, touches only those when it comes from a fresh map. */
static void *sys_calloc(size_t n) {
  if (n > SIZE_MAX - PREFIX) return NULL;
  Prefix *h = calloc(1, n + PREFIX);
  if (!h) return NULL;
  advise_big(h, n + PREFIX);
  h->n = n;
  h->cookie = LIVE;
  return (uint8_t *)h + PREFIX;
}

static Prefix *prefix_of(void *p) { return (Prefix *)((uint8_t *)p - PREFIX); }

static void sys_free(void *p) {
  Prefix *h = prefix_of(p);
  h->cookie = DEAD;
  free(h);
}

static void *sys_realloc(void *p, size_t n) {
  if (n > SIZE_MAX - PREFIX) return NULL;
  size_t was = prefix_of(p)->n;
  Prefix *h = realloc(prefix_of(p), n + PREFIX);
  if (!h) return NULL;
  if (n > was) advise_big(h, n + PREFIX);
  h->n = n;
  return (uint8_t *)h + PREFIX;
}

static size_t sys_size(void *p) { return prefix_of(p)->n; }

static const pagedb_mem_methods kSys = { sys_malloc, sys_free, sys_realloc, sys_size, NULL, NULL, NULL };

/* ---- the buddy heap as an allocator: every call under g.mu ---- */

static void *heap_malloc(size_t n) {
  pthread_mutex_lock(&g.mu);
  void *p = buddy_alloc(g.heap, n);
  pthread_mutex_unlock(&g.mu);
  return p;
}

static void heap_free(void *p) {
  pthread_mutex_lock(&g.mu);
  int rc = buddy_free(g.heap, p);
  pthread_mutex_unlock(&g.mu);
  assert(rc == PAGEDB_OK);   /* pdb_free checked the block first */
  (void)rc;
}

static size_t heap_size(void *p) {
  pthread_mutex_lock(&g.mu);
  size_t n = buddy_size(g.heap, p);
  pthread_mutex_unlock(&g.mu);
  return n;
}

static void *heap_realloc(void *p, size_t n) {
  size_t old = heap_size(p);
  if (n <= old && n > old / 2) return p;
  void *q = heap_malloc(n);
  if (!q) return NULL;
  memcpy(q, p, old < n ? old : n);
  heap_free(p);
  return q;
}

static const pagedb_mem_methods kHeap = { heap_malloc, heap_free, heap_realloc, heap_size, NULL, NULL, NULL };

/* ---- counters ---- */

static void raise_high(_Atomic int64_t *high, int64_t v) {
  int64_t h = atomic_load_explicit(high, memory_order_relaxed);
  while (v > h && !atomic_compare_exchange_weak_explicit(high, &h, v, memory_order_relaxed, memory_order_relaxed)) {
  }
}

static void count(int64_t bytes, int64_t blocks, int high) {
  Shard *s = my_shard();
  int64_t u = atomic_fetch_add_explicit(&s->used, bytes, memory_order_relaxed) + bytes;
  if (bytes > 0 && high) raise_high(&s->used_high, u);
  if (blocks) {
    int64_t c = atomic_fetch_add_explicit(&s->count, blocks, memory_order_relaxed) + blocks;
    if (blocks > 0) raise_high(&s->count_high, c);
  }
}

/* Whether N more bytes fit under the limit, trimming the pool if not. */
static int room_for(size_t n) {
  if ((uint64_t)n > (uint64_t)INT64_MAX / 2) return 0;   /* the counters are int64_t */
  int64_t limit = atomic_load_explicit(&g.limit, memory_order_relaxed);
  if (limit <= 0) return 1;
  int64_t used = sum_of(offsetof(Shard, used));
  if (used + (int64_t)n <= limit) return 1;
  pool_trim((size_t)(used + (int64_t)n - limit));
  used = sum_of(offsetof(Shard, used));
  return used + (int64_t)n <= limit;
}

int pdb_mem_charge(size_t n) {
  if (!room_for(n)) return PAGEDB_NOMEM;
  count((int64_t)n, 0, 0);
  return PAGEDB_OK;
}

void pdb_mem_settle(void) {
  Shard *s = my_shard();
  raise_high(&s->used_high, atomic_load(&s->used));
}

void pdb_mem_uncharge(size_t n) { count(-(int64_t)n, 0, 0); }

/* ---- reserved tables (mem.h) ---- */

static size_t page_size(void) {
  long n = sysconf(_SC_PAGESIZE);
  return n > 0 ? (size_t)n : 4096;
}

static size_t page_floor(size_t n) { return n & ~(page_size() - 1); }

int pdb_table_reserve(PdbTable *t, size_t n, size_t from) {
  *t = (PdbTable){ .n = n, .from = from };
  size_t npg = (n + page_size() - 1) / page_size();
  t->charged = pdb_calloc((npg + 63) / 64, sizeof *t->charged);
  void *m = t->charged ? mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) : MAP_FAILED;
  if (m == MAP_FAILED) {
    pdb_free(t->charged);
    *t = (PdbTable){ 0 };
    return PAGEDB_NOMEM;
  }
  t->base = m;
  return PAGEDB_OK;
}

int pdb_table_grow(PdbTable *t, size_t at, size_t len) {
  assert(t->base && at >= t->from && len > 0 && at + len <= t->n);
  size_t ps = page_size(), p0 = at / ps, p1 = (at + len - 1) / ps, need = 0;
  for (size_t p = p0; p <= p1; p++) need += !(t->charged[p / 64] >> (p % 64) & 1);
  size_t lo = t->upto ? t->upto : page_floor(t->from), hi = (p1 + 1) * ps;
  if (need == 0 && hi <= lo) return PAGEDB_OK;
  if (need && pdb_mem_charge(need * ps) != PAGEDB_OK) return PAGEDB_NOMEM;
  if (hi > lo && mprotect((uint8_t *)t->base + lo, hi - lo, PROT_READ | PROT_WRITE) != 0) {
    if (need) pdb_mem_uncharge(need * ps);
    return PAGEDB_NOMEM;
  }
  if (hi > lo) t->upto = hi;
  if (need) {
    for (size_t p = p0; p <= p1; p++) t->charged[p / 64] |= (uint64_t)1 << (p % 64);
    t->ncharged += need;
    pdb_mem_settle();
  }
  return PAGEDB_OK;
}

void pdb_table_release(PdbTable *t) {
  if (!t->base) return;
  munmap(t->base, t->n);
  if (t->ncharged) pdb_mem_uncharge(t->ncharged * page_size());
  pdb_free(t->charged);
  *t = (PdbTable){ 0 };
}

/* ---- SQLite through pagedb ---- */

static void *sq_malloc(int n) { return n > 0 ? pdb_malloc((size_t)n) : NULL; }
static void sq_free(void *p) { pdb_free(p); }
static void *sq_realloc(void *p, int n) { return n > 0 ? pdb_realloc(p, (size_t)n) : NULL; }
static int sq_size(void *p) { return p ? (int)g.m.xSize(p) : 0; }
static int sq_roundup(int n) { return (n + 7) & ~7; }
static int sq_init(void *app) { (void)app; return SQLITE_OK; }
static void sq_shutdown(void *app) { (void)app; }

static const sqlite3_mem_methods kSqlite = { sq_malloc, sq_free, sq_realloc, sq_size, sq_roundup,
                                             sq_init, sq_shutdown, NULL };

/* ---- initialization and configuration ---- */

int pagedb_initialize(void) {
  if (atomic_load_explicit(&g.ready, memory_order_acquire)) return PAGEDB_OK;
  pthread_mutex_lock(&g.mu);
  int rc = PAGEDB_OK;
  if (!atomic_load_explicit(&g.ready, memory_order_relaxed)) {
    if (!g.m.xMalloc) g.m = g.heap ? kHeap : kSys;
    if (g.m.xInit) rc = g.m.xInit(g.m.pAppData);
    if (rc == PAGEDB_OK) {
      /* Refused (SQLITE_MISUSE) once the host has initialized SQLite: its
      ** memory is then its own, and not counted here. */
      sqlite3_mem_methods old;
      if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &old) == SQLITE_OK &&
          sqlite3_config(SQLITE_CONFIG_MALLOC, &kSqlite) == SQLITE_OK) {
        g.sqlite_old = old;
        g.sqlite_ours = 1;
        /* pagedb counts SQLite's memory itself: SQLite's own statistics
        ** would only add a global mutex to every allocation. */
        sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
        /* No bulk page cache: by default each connection allocates and
        ** touches 20 cache lines when it opens (330 KB at the catalog's
        ** 16 KiB pages), which a commit of parts paid once per part, whose
        ** catalog it opens, in fresh memory wherever the heap had given
        ** its top back.  Lines are allocated as the cache fills instead. */
        sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0);
      }
      atomic_store_explicit(&g.ready, 1, memory_order_release);
    }
  }
  pthread_mutex_unlock(&g.mu);
  return rc;
}


int pagedb_shutdown(void) {
  if (!atomic_load(&g.ready)) return PAGEDB_OK;
  /* No lock of ours is held here: the pool and SQLite free what they hold
  ** through pdb_free, which takes g.mu when the heap serves the blocks.
  ** Shutting down concurrently with any other call is a misuse anyway. */
  if (atomic_load(&pdb_handles) > 0 || pool_shutdown() != PAGEDB_OK) return PAGEDB_MISUSE;
  if (g.sqlite_ours) {
    sqlite3_shutdown();
    sqlite3_config(SQLITE_CONFIG_MALLOC, &g.sqlite_old);
    g.sqlite_ours = 0;
  }
  if (g.m.xShutdown) g.m.xShutdown(g.m.pAppData);
  atomic_store(&g.ready, 0);
  return PAGEDB_OK;
}

int pdb_mem_config(int op, va_list ap) {
  int rc = PAGEDB_OK;
  if (op == PAGEDB_CONFIG_MEMLIMIT) {
    int64_t n = va_arg(ap, int64_t);
    if (n < 0) rc = PAGEDB_MISUSE;
    else atomic_store(&g.limit, n);
    return rc;
  }
  pthread_mutex_lock(&g.mu);
  if (atomic_load(&g.ready)) {
    rc = PAGEDB_MISUSE;
  } else if (op == PAGEDB_CONFIG_MALLOC) {
    const pagedb_mem_methods *m = va_arg(ap, const pagedb_mem_methods *);
    if (!m || !m->xMalloc || !m->xFree || !m->xRealloc || !m->xSize) rc = PAGEDB_MISUSE;
    else g.m = *m;
  } else if (op == PAGEDB_CONFIG_GETMALLOC) {
    pagedb_mem_methods *m = va_arg(ap, pagedb_mem_methods *);
    if (!m) rc = PAGEDB_MISUSE;
    else *m = g.m.xMalloc ? g.m : g.heap ? kHeap : kSys;
  } else if (op == PAGEDB_CONFIG_HEAP) {
    void *arena = va_arg(ap, void *);
    size_t n = va_arg(ap, size_t), min = va_arg(ap, size_t);
    if (sum_of(offsetof(Shard, count)) != 0) {
      rc = PAGEDB_MISUSE;      /* blocks from the old allocator are live */
    } else {
      g.heap = arena ? buddy_init(arena, n, min) : NULL;
      if (arena && !g.heap) rc = PAGEDB_NOMEM;
      g.m = g.heap ? kHeap : kSys;
    }
  } else if (op == PAGEDB_CONFIG_POOL) {
    rc = pool_config(va_arg(ap, const pagedb_pool_methods *));
  } else if (op == PAGEDB_CONFIG_GETPOOL) {
    pagedb_pool_methods *m = va_arg(ap, pagedb_pool_methods *);
    if (!m) rc = PAGEDB_MISUSE;
    else pool_get_config(m);
  } else {
    rc = PAGEDB_MISUSE;
  }
  pthread_mutex_unlock(&g.mu);
  return rc;
}

/* ---- the general allocator ---- */

/* Whether P may be freed or resized: always true of an embedder's
** allocator, which cannot tell. */
static int owned(void *p) {
  if (g.m.xFree == heap_free) return 1;   /* the heap checks as it frees */
#ifndef NDEBUG
  if (g.m.xFree == sys_free) return prefix_of(p)->cookie == LIVE;
#endif
  return 1;
}

/* N bytes from the configured allocator, zeroed if ZERO. */
static void *alloc(size_t n, int zero) {
  if (n == 0 || pagedb_initialize() != PAGEDB_OK || !room_for(n)) return NULL;
  void *(*get)(size_t) = zero && g.m.xMalloc == sys_malloc ? sys_calloc : g.m.xMalloc;
  void *p = get(n);
  if (!p && pool_trim(n) > 0) p = get(n);   /* the cache may hold the memory */
  if (!p) return NULL;
  size_t got = g.m.xSize(p);
  count((int64_t)got, 1, 1);
  if (get == sys_calloc) return p;
#ifndef NDEBUG
  memset(p, 0xA5, got);
#endif
  if (zero) memset(p, 0, n);
  return p;
}

void *pdb_malloc(size_t n) { return alloc(n, 0); }

void *pdb_calloc(size_t n, size_t sz) {
  if (sz && n > SIZE_MAX / sz) return NULL;
  return alloc(n * sz, 1);
}

int pagedb_free(void *p) {
  if (!p) return PAGEDB_OK;
  int heap = g.m.xFree == heap_free;
  /* The heap checks and frees under one lock: two threads freeing the
  ** same block cannot both pass. */
  if (heap) pthread_mutex_lock(&g.mu);
  size_t n = 0;
  if (atomic_load(&g.ready) && owned(p)) n = heap ? buddy_size(g.heap, p) : g.m.xSize(p);
  if (n == 0) {
    /* A documented result, not an assert: the suite checks it in every
    ** build.  The library's own frees assert (pdb_free). */
    if (heap) pthread_mutex_unlock(&g.mu);
    return PAGEDB_MISUSE;
  }
#ifndef NDEBUG
  memset(p, 0x5A, n);
#endif
  count(-(int64_t)n, -1, 0);
  if (heap) {
    buddy_free(g.heap, p);
    pthread_mutex_unlock(&g.mu);
  } else {
    g.m.xFree(p);
  }
  return PAGEDB_OK;
}

void pdb_free(void *p) {
  int rc = pagedb_free(p);
  assert(rc == PAGEDB_OK);
  (void)rc;
}

void *pdb_realloc(void *p, size_t n) {
  if (!p) return pdb_malloc(n);
  size_t old = n && owned(p) ? g.m.xSize(p) : 0;
  if (old == 0) return NULL;
  if (n > old && !room_for(n - old)) return NULL;
  void *q = g.m.xRealloc(p, n);
  if (!q) return NULL;
  size_t got = g.m.xSize(q);
  count((int64_t)got - (int64_t)old, 0, 1);
  return q;
}

char *pdb_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = pdb_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void *pagedb_malloc(size_t n) { return pdb_malloc(n); }
void *pagedb_realloc(void *p, size_t n) { return pdb_realloc(p, n); }
size_t pagedb_msize(void *p) { return p && atomic_load(&g.ready) && owned(p) ? g.m.xSize(p) : 0; }

void *pdb_buf_alloc(size_t n, size_t *cap) { return pagedb_pool_alloc(n, cap); }

void pdb_buf_free(void *p) {
  int rc = pagedb_pool_free(p);
  assert(rc == PAGEDB_OK);
  (void)rc;
}

/* ---- figures ---- */

int64_t pagedb_memory_used(void) { return sum_of(offsetof(Shard, used)); }

/* The high-water mark of counter CUR (its HIGH in each shard); with RESET,
** each shard's restarts from its value now. */
static int64_t high_of(size_t cur, size_t high, int reset) {
  int64_t h = 0;
  for (int i = 0; i < NSHARD; i++) {
    _Atomic int64_t *c = (_Atomic int64_t *)((char *)&shard[i] + cur), *hi = (_Atomic int64_t *)((char *)&shard[i] + high);
    h += atomic_load(hi);
    if (reset) atomic_store(hi, atomic_load(c));
  }
  return h;
}

int64_t pagedb_memory_highwater(int reset) { return high_of(offsetof(Shard, used), offsetof(Shard, used_high), reset); }

int pagedb_status(int op, int64_t *cur, int64_t *high, int reset) {
  if (!cur || !high) return PAGEDB_MISUSE;
  switch (op) {
    case PAGEDB_STATUS_MEMORY_USED:
      *cur = sum_of(offsetof(Shard, used));
      *high = pagedb_memory_highwater(reset);
      return PAGEDB_OK;
    case PAGEDB_STATUS_MALLOC_COUNT:
      *cur = sum_of(offsetof(Shard, count));
      *high = high_of(offsetof(Shard, count), offsetof(Shard, count_high), reset);
      return PAGEDB_OK;
    case PAGEDB_STATUS_POOL_USED:
    case PAGEDB_STATUS_POOL_CACHED:
    case PAGEDB_STATUS_POOL_PINNED:
      pool_status(op, cur, high, reset);
      return PAGEDB_OK;
    case PAGEDB_STATUS_HEAP_FREE: {
      BuddyStats st = { 0 };
      pthread_mutex_lock(&g.mu);
      if (g.heap) buddy_stats(g.heap, &st);
      pthread_mutex_unlock(&g.mu);
      *cur = (int64_t)st.free;
      *high = (int64_t)st.largest_free;
      return PAGEDB_OK;
    }
    default:
      return PAGEDB_MISUSE;
  }
}
