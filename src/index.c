/*
** index.c -- id -> slot, lock-free for readers: the in-memory index.
**
** WHAT IT IS FOR SINCE THE INDEX FILE (dindex.c).  With NAME-index in
** force (idx_set_disk) this module keeps only the reservations of samples
** being written (idx_reserve, idx_release), over the file's snapshot, and
** readers do not come here at all: reader.c looks ids up in the mapped file
** (dx_find_memo).  Its slot arenas hold samples only when an open has no
** index file in force: a read-only open of a missing, stale or damaged one
** (the scan fallback, PAGEDB_INDEX_MEMORY), a writable open on a VFS that
** cannot map, and a read-write open while it rebuilds the file.  So the
** structures below are the fallback, off the read path otherwise.
**
** Two structures, split by one number, the dense end D:
**
**   ids below D   live in the dense arena: the slot of id i is at position
**                 i, in chunks of about 1 MiB that are allocated as ids
**                 arrive and never move.  Word 0 of a dense slot is its
**                 state: 0 free, 1 reserved, 2 visible.  A lookup is one
**                 array access, a reservation one compare-and-swap, and
**                 neither takes a lock: datasets whose ids are 0..N-1 (the
**                 usual case) never touch the hash table.
**   ids from D on live in an open-addressing hash table with linear
**                 probing, whose entries are two atomic words:
**                   key  0 = empty, UINT64_MAX = tombstone, otherwise id + 1
**                   val  0 = reserved, otherwise slot number + 1 in the
**                        sparse arena (chunks that never move either)
**                 Keys are claimed with a compare-and-swap; entries only go
**                 empty -> key -> tombstone, so a probe that meets an empty
**                 entry knows the key is absent.
**
** A delete (idx_remove) turns a dense slot back to free, or a hash entry to
** a tombstone, and frees nothing: a reader that found the slot just before
** still reads valid memory.  A sparse slot so orphaned stays in its arena
** until idx_free; a dense one is reused if its id is written again.
**
** D only grows: once when a persistent index is set (idx_set_disk, before
** any reservation: past a dense dataset's largest id), then only under the
** exclusive side of the rwlock, when an id arrives just past it ([D, 2D)),
** or when idx_expect is told of dense enough ids past it: it doubles, and the hash entries that now
** fall below it are copied into the dense arena before the new D is
** published.  Hash operations hold the shared side, so none runs during the
** copy; dense operations need no lock, because an id below D stays below D.
** Copied entries stay in the hash table, so a reader that loaded the old D
** still finds what was visible; it may miss a sample published after the
** growth, which its lookup preceded.  The hash table grows the same way
** (exclusive side, copy, publish); readers keep probing whichever table
** they loaded, and old tables are freed with the index.
*/
#include "index.h"

#define MAX_CHUNKS ((uint64_t)1 << 18)
#define IDX_RANGES 64
#define CHUNK_BYTES ((uint64_t)1 << 20)   /* about; a whole number of slots */
#define TOMB       UINT64_MAX

/* States of word 0 of a dense slot. */
#define D_FREE     0
#define D_RESERVED 1
#define D_VISIBLE  2

typedef struct Entry {
  _Atomic uint64_t key;
  _Atomic uint64_t val;
} Entry;

typedef struct Table {
  struct Table *older;      /* retired tables, freed with the index */
  uint64_t mask;
  Entry e[];
} Table;

/* Several chunks allocated as one block (arena_prefill), freed whole. */
typedef struct Block {
  struct Block *next;
  void *mem;
} Block;

typedef struct Arena {
  _Atomic uint64_t top;     /* 1 + the highest chunk installed: what arena_free scans */
  _Atomic(Block *) blocks;  /* arena_prefill's blocks... */
  _Atomic uint64_t inblock[MAX_CHUNKS / 64];   /* ...and the chunks that lie in one */
  _Atomic(uint64_t *) chunk[MAX_CHUNKS];
} Arena;

struct Index {
  int nw;                   /* words per slot */
  int bits;                 /* a chunk holds 2^bits slots, about 1 MiB */
  uint64_t max;             /* slots an arena can hold: 2^bits * MAX_CHUNKS */
  pthread_rwlock_t lock;    /* shared: hash operations; exclusive: growth */
  _Atomic uint64_t dense;   /* D: ids below it are dense */
  /* Each arena is 2 MiB of chunk pointers, allocated at its first use, so
  ** that an index that only keeps reservations over a persistent one
  ** (idx_set_disk), in a handle that never writes, costs nothing. */
  _Atomic(Arena *) darena;  /* slot of dense id i at position i */
  _Atomic(Arena *) sarena;  /* slots of sparse ids, in publish order */
  uint64_t nsparse;         /* sparse slots handed out (publisher only) */
  _Atomic(Table *) tab;
  _Atomic uint64_t used;    /* keys in tab, tombstones included */
  _Atomic uint64_t count;   /* visible samples */
  Dx *dx;                   /* the persistent index, or NULL (idx_set_disk) */
  /* RANGES (idx_reserve_range): ids reserved whole by commits of parts
  ** whose index chunks are referenced, NRANGES of them under RANGE_MU;
  ** PENDING counts the ids reserved one by one and not yet released or
  ** published.  A range is published, then PENDING read; a reservation
  ** counts itself, then reads NRANGES (both sequentially consistent): one
  ** of the two sees the other. */
  pthread_mutex_t range_mu;
  _Atomic int nranges;
  int64_t range[IDX_RANGES][2];
  /* ...in a shard a thread (pdb_shard), 64 bytes apart: writer threads
  ** reserving ids at once take no cache line from each other.  (Padded,
  ** not aligned: an Index comes from pdb_calloc, 16-byte aligned.) */
  struct {
    _Atomic int64_t n;
    char pad[56];
  } pending[PDB_NSHARD];
};

static Table *table_new(uint64_t cap) {
  Table *t = pdb_calloc(1, sizeof *t + cap * sizeof(Entry));
  if (t) t->mask = cap - 1;
  return t;
}

int idx_create(Index **pi, int nw) {
  *pi = NULL;
  Index *x = pdb_calloc(1, sizeof *x);
  if (!x) return PAGEDB_NOMEM;
  x->nw = nw;
  pthread_mutex_init(&x->range_mu, NULL);
  x->bits = 8;
  while (((uint64_t)2 << x->bits) * (uint64_t)nw * 8 <= CHUNK_BYTES) x->bits++;
  x->max = ((uint64_t)1 << x->bits) * MAX_CHUNKS;
  Table *t = table_new(1024);
  if (!t) {
    pdb_free(t);
    pdb_free(x);
    return PAGEDB_NOMEM;
  }
  atomic_init(&x->tab, t);
  atomic_init(&x->dense, (uint64_t)1 << x->bits);
  pthread_rwlock_init(&x->lock, NULL);
  *pi = x;
  return PAGEDB_OK;
}

static void arena_free(Arena *a) {
  if (!a) return;
  /* Up to the highest chunk only: scanning all 2^18 cost a tiny dataset's close 10%. */
  uint64_t top = atomic_load_explicit(&a->top, memory_order_relaxed);
  for (uint64_t c = 0; c < top; c++)
    if (!(atomic_load_explicit(&a->inblock[c / 64], memory_order_relaxed) >> (c % 64) & 1))
      pdb_free(atomic_load_explicit(&a->chunk[c], memory_order_relaxed));
  for (Block *b = atomic_load_explicit(&a->blocks, memory_order_relaxed), *n; b; b = n) {
    n = b->next;
    pdb_free(b->mem);
    pdb_free(b);
  }
  pdb_free(a);
}

void idx_set_disk(Index *x, Dx *dx) {
  assert(atomic_load(&x->count) == 0);
  if (x->dx != dx) dx_close(x->dx);
  x->dx = dx;
  /* Over a persistent index the memory part holds only reservations.  D
  ** starts past the dataset's largest id, so that appending after a large
  ** dataset's ids (far above 2D otherwise) reserves with one compare-and-
  ** swap, not a hash claim and a tombstone per sample.  Only when the ids
  ** are at least half dense: a dense chunk (about 1 MiB) is allocated for
  ** any id reserved in it, so ids scattered below D may cost 8 bytes per id
  ** of D, bounded so by 16 bytes per committed sample; sparse ids stay in
  ** the hash table.  No hash entry exists yet to migrate. */
  if (dx && atomic_load_explicit(&x->used, memory_order_relaxed) == 0) {
    uint64_t d = atomic_load_explicit(&x->dense, memory_order_relaxed);
    uint64_t next = (uint64_t)dx_next_id(dx), want = next + ((uint64_t)1 << x->bits);
    if (next / 2 <= dx_count(dx))
      while (d < want && 2 * d <= x->max) d *= 2;
    atomic_store_explicit(&x->dense, d, memory_order_release);
  }
}

Dx *idx_disk(Index *x) { return x ? x->dx : NULL; }

Dx *idx_take_disk(Index *x) {
  Dx *d = x->dx;
  x->dx = NULL;
  return d;
}

int idx_damaged(Index *x, int64_t id) { return x->dx && dx_find(x->dx, id) == DX_BAD; }
int idx_unfetched(Index *x, int64_t id, char *why, size_t n) { return x->dx ? dx_unfetched(x->dx, id, why, n) : 0; }

void idx_free(Index *x) {
  if (!x) return;
  dx_close(x->dx);
  for (Table *t = atomic_load(&x->tab), *o; t; t = o) {
    o = t->older;
    pdb_free(t);
  }
  arena_free(atomic_load_explicit(&x->darena, memory_order_relaxed));
  arena_free(atomic_load_explicit(&x->sarena, memory_order_relaxed));
  pthread_rwlock_destroy(&x->lock);
  pthread_mutex_destroy(&x->range_mu);
  pdb_free(x);
}

/* Arena AP, installed if MAKE and absent; NULL if absent or no memory. */
static Arena *arena_get(_Atomic(Arena *) *ap, int make) {
  /* Acquire pairs with the CAS that installed the arena: its zeroes are seen. */
  Arena *a = atomic_load_explicit(ap, memory_order_acquire);
  if (!a && make) {
    Arena *fresh = pdb_calloc(1, sizeof *fresh);
    if (!fresh) return NULL;
    if (atomic_compare_exchange_strong_explicit(ap, &a, fresh, memory_order_acq_rel, memory_order_acquire)) {
      a = fresh;
    } else {
      pdb_free(fresh);      /* another thread installed it first */
    }
  }
  return a;
}

static void raise_top(Arena *a, uint64_t want) {
  uint64_t top = atomic_load(&a->top);
  while (top < want && !atomic_compare_exchange_weak(&a->top, &top, want)) {}
}

/* Slot N of arena A, allocating its chunk if MAKE; NULL if absent or no
** memory.  Acquire pairs with the release of the CAS that installed the
** chunk, so its zeroes are seen. */
static uint64_t *arena_slot(const Index *x, _Atomic(Arena *) *ap, uint64_t n, int make) {
  Arena *a = arena_get(ap, make);
  if (!a) return NULL;
  _Atomic(uint64_t *) *cp = &a->chunk[n >> x->bits];
  uint64_t *c = atomic_load_explicit(cp, memory_order_acquire);
  if (!c && make) {
    uint64_t *fresh = pdb_calloc(((uint64_t)1 << x->bits) * (uint64_t)x->nw, sizeof(uint64_t));
    if (!fresh) return NULL;
    if (atomic_compare_exchange_strong_explicit(cp, &c, fresh, memory_order_acq_rel, memory_order_acquire)) {
      c = fresh;
      raise_top(a, (n >> x->bits) + 1);
    } else {
      pdb_free(fresh);      /* another thread installed the chunk first */
    }
  }
  return c ? c + (n & (((uint64_t)1 << x->bits) - 1)) * (uint64_t)x->nw : NULL;
}

/*
** The absent chunks of arena AP over slots LO..HI, allocated as one block
** when they are at least PREFILL_MIN (else they come one by one, as ids
** arrive): a block of 4 MiB or more takes huge pages (mem.c), whose first
** touch costs a twentieth of 4 KiB pages' or less on this project's VM.
** A million reservations in 1 MiB chunks faulted 2,048 such pages: the
** reservation of a part's million ids took 52-54 ms, 28-32 ms with this
** (three commits each, timed by phase).  A chunk some thread
** installs meanwhile keeps its own; the block's room for it goes unused.
** A failure changes nothing: the chunks then come one by one.
*/
#define PREFILL_MIN 4

static void arena_prefill(const Index *x, _Atomic(Arena *) *ap, uint64_t lo, uint64_t hi) {
  Arena *a = arena_get(ap, 1);
  uint64_t c0 = lo >> x->bits, c1 = hi >> x->bits, k = 0;
  if (!a || c1 >= MAX_CHUNKS) return;
  for (uint64_t c = c0; c <= c1; c++) k += !atomic_load_explicit(&a->chunk[c], memory_order_acquire);
  if (k < PREFILL_MIN) return;
  size_t cw = ((size_t)1 << x->bits) * (size_t)x->nw;
  uint64_t *mem = pdb_calloc(k * cw, sizeof(uint64_t));
  Block *b = mem ? pdb_malloc(sizeof *b) : NULL;
  if (!b) {
    pdb_free(mem);
    return;
  }
  b->mem = mem;
  b->next = atomic_load_explicit(&a->blocks, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&a->blocks, &b->next, b, memory_order_acq_rel, memory_order_relaxed)) {}
  uint64_t j = 0;
  for (uint64_t c = c0; c <= c1 && j < k; c++) {
    uint64_t *none = NULL, *mine = mem + j * cw;
    /* Marked by its installer only, so that arena_free (at idx_free, with
    ** no other call running) frees it with its block, never alone. */
    if (atomic_compare_exchange_strong_explicit(&a->chunk[c], &none, mine, memory_order_acq_rel, memory_order_acquire)) {
      atomic_fetch_or(&a->inblock[c / 64], (uint64_t)1 << (c % 64));
      j++;
      raise_top(a, c + 1);
    }
  }
}

static inline _Atomic uint64_t *state(uint64_t *slot) { return (_Atomic uint64_t *)slot; }

static inline uint64_t key_of(int64_t id) { return (uint64_t)id + 1; }

/* The entry holding KEY in T, or NULL. */
static Entry *probe(Table *t, uint64_t key) {
  for (uint64_t h = pdb_mix64(key) & t->mask;; h = (h + 1) & t->mask) {
    uint64_t k = atomic_load_explicit(&t->e[h].key, memory_order_acquire);
    if (k == key) return &t->e[h];
    if (k == 0) return NULL;
  }
}

/* Copy entry E of the hash table into the dense arena.  Exclusive lock. */
static int migrate(Index *x, uint64_t id, const Entry *e) {
  uint64_t *d = arena_slot(x, &x->darena, id, 1);
  if (!d) return PAGEDB_NOMEM;
  uint64_t v = atomic_load_explicit(&e->val, memory_order_relaxed);
  if (v) memcpy(d + 1, arena_slot(x, &x->sarena, v - 1, 0) + 1, (size_t)(x->nw - 1) * sizeof *d);
  atomic_store_explicit(state(d), v ? D_VISIBLE : D_RESERVED, memory_order_release);
  return PAGEDB_OK;
}

/*
** Grow: double D while ID lies just past it, or double the hash table if
** it is half full.  Takes the exclusive lock; the caller holds none.  A
** failure leaves both as they were (they stay usable, only fuller).
*/
static int grow_to(Index *x, int64_t id, uint64_t upto) {
  int rc = PAGEDB_OK;
  pthread_rwlock_wrlock(&x->lock);
  Table *t = atomic_load_explicit(&x->tab, memory_order_relaxed);
  uint64_t d = atomic_load_explicit(&x->dense, memory_order_relaxed);
  uint64_t nd = d;
  while (id >= 0 && (uint64_t)id >= nd && (uint64_t)id < 2 * nd && 2 * nd <= x->max) nd *= 2;
  while (nd <= upto && 2 * nd <= x->max) nd *= 2;
  if (nd != d) {
    for (uint64_t i = 0; i <= t->mask && rc == PAGEDB_OK; i++) {
      uint64_t k = atomic_load_explicit(&t->e[i].key, memory_order_relaxed);
      if (k != 0 && k != TOMB && k - 1 >= d && k - 1 < nd) rc = migrate(x, k - 1, &t->e[i]);
    }
    /* Release: a reader that sees the new D sees the copied slots. */
    if (rc == PAGEDB_OK) atomic_store_explicit(&x->dense, nd, memory_order_release);
  }
  uint64_t used = atomic_load_explicit(&x->used, memory_order_relaxed);
  if (rc == PAGEDB_OK && used * 2 > t->mask + 1) {
    uint64_t live = 0;
    for (uint64_t i = 0; i <= t->mask; i++) {
      uint64_t k = atomic_load_explicit(&t->e[i].key, memory_order_relaxed);
      live += k != 0 && k != TOMB;
    }
    uint64_t cap = 1024;
    while (cap < live * 4) cap <<= 1;
    Table *n = table_new(cap);
    if (!n) {
      rc = PAGEDB_NOMEM;
    } else {
      for (uint64_t i = 0; i <= t->mask; i++) {
        uint64_t k = atomic_load_explicit(&t->e[i].key, memory_order_relaxed);
        if (k == 0 || k == TOMB) continue;
        uint64_t h = pdb_mix64(k) & n->mask;
        while (atomic_load_explicit(&n->e[h].key, memory_order_relaxed)) h = (h + 1) & n->mask;
        atomic_store_explicit(&n->e[h].val, atomic_load_explicit(&t->e[i].val, memory_order_relaxed),
                              memory_order_relaxed);
        atomic_store_explicit(&n->e[h].key, k, memory_order_relaxed);
      }
      n->older = t;
      atomic_store_explicit(&x->used, live, memory_order_relaxed);
      /* Release: a reader that loads the new table sees its entries. */
      atomic_store_explicit(&x->tab, n, memory_order_release);
    }
  }
  pthread_rwlock_unlock(&x->lock);
  return rc;
}

static int grow(Index *x, int64_t id) { return grow_to(x, id, 0); }

void idx_expect(Index *x, int64_t lo, int64_t hi, uint64_t n) {
  /* Only when the ids would be at least half dense below HI (with the
  ** samples there already): a dense chunk is allocated where an id is
  ** reserved, so at most 8 bytes an id of about two ids a sample, as the
  ** bound idx_set_disk keeps.  Else the ids go one by one, as ever. */
  uint64_t have = n + atomic_load_explicit(&x->count, memory_order_relaxed) + (x->dx ? dx_count(x->dx) : 0);
  if (lo < 0 || hi < lo || n == 0 || (uint64_t)hi / 2 >= have) return;
  if ((uint64_t)hi >= atomic_load_explicit(&x->dense, memory_order_acquire))
    grow_to(x, -1, (uint64_t)hi);   /* a failure only leaves the ids to the hash table */
  if ((uint64_t)hi < atomic_load_explicit(&x->dense, memory_order_acquire))
    arena_prefill(x, &x->darena, (uint64_t)lo, (uint64_t)hi);
}

/* Claim KEY in the hash table; the caller holds the shared lock. */
static int claim(Index *x, uint64_t key) {
  Table *t = atomic_load_explicit(&x->tab, memory_order_relaxed);
  for (uint64_t h = pdb_mix64(key) & t->mask;; h = (h + 1) & t->mask) {
    uint64_t k = atomic_load_explicit(&t->e[h].key, memory_order_acquire);
    while (k == 0) {
      /* Release: whoever finds the key finds it whole; a failed CAS
      ** reloads k, which may now be our own id claimed by another writer. */
      if (atomic_compare_exchange_weak_explicit(&t->e[h].key, &k, key, memory_order_acq_rel,
                                                memory_order_acquire)) {
        atomic_fetch_add_explicit(&x->used, 1, memory_order_relaxed);
        return PAGEDB_OK;
      }
    }
    if (k == key) return PAGEDB_CONSTRAINT;
  }
}

static int reserve_mem(Index *x, int64_t id) {
  assert(id >= 0);
  for (;;) {
    uint64_t d = atomic_load_explicit(&x->dense, memory_order_acquire);
    if ((uint64_t)id < d) {
      uint64_t *s = arena_slot(x, &x->darena, (uint64_t)id, 1);
      if (!s) return PAGEDB_NOMEM;
      uint64_t free_state = D_FREE;
      return atomic_compare_exchange_strong_explicit(state(s), &free_state, D_RESERVED, memory_order_acq_rel,
                                                     memory_order_acquire)
           ? PAGEDB_OK : PAGEDB_CONSTRAINT;
    }
    if ((uint64_t)id < 2 * d && 2 * d <= x->max) {
      int rc = grow(x, id);
      if (rc != PAGEDB_OK) return rc;
      continue;
    }
    pthread_rwlock_rdlock(&x->lock);
    int rc = PAGEDB_CONSTRAINT;
    int retry = (uint64_t)id < atomic_load_explicit(&x->dense, memory_order_relaxed);
    if (!retry) rc = claim(x, key_of(id));
    Table *t = atomic_load_explicit(&x->tab, memory_order_relaxed);
    int full = atomic_load_explicit(&x->used, memory_order_relaxed) * 2 > t->mask + 1;
    pthread_rwlock_unlock(&x->lock);
    if (retry) continue;    /* D grew past id meanwhile */
    if (full) grow(x, -1);  /* a failure only leaves the table fuller */
    return rc;
  }
}

static void release_mem(Index *x, int64_t id);

/* Whether ID lies in a range reserved whole (RANGE_MU taken). */
static int in_range(Index *x, int64_t id) {
  int in = 0;
  pthread_mutex_lock(&x->range_mu);
  for (int i = 0; i < atomic_load(&x->nranges) && !in; i++) in = id >= x->range[i][0] && id <= x->range[i][1];
  pthread_mutex_unlock(&x->range_mu);
  return in;
}

int idx_reserve(Index *x, int64_t id) {
  int rc = reserve_mem(x, id);
  if (rc == PAGEDB_OK) atomic_fetch_add(&x->pending[pdb_shard()].n, 1);
  /* Reserve first, then look in the snapshot: a commit publishes there
  ** before it releases here, so one of the two sees the id taken.  The
  ** same for the ranges (RANGES above). */
  if (rc == PAGEDB_OK && ((atomic_load(&x->nranges) && in_range(x, id)) || (x->dx && dx_find(x->dx, id)))) {
    idx_release(x, id);
    rc = PAGEDB_CONSTRAINT;
  }
  return rc;
}

int idx_reserve_range(Index *x, int64_t lo, int64_t hi, uint64_t own) {
  int rc = PAGEDB_OK;
  pthread_mutex_lock(&x->range_mu);
  int n = atomic_load(&x->nranges);
  for (int i = 0; i < n && rc == PAGEDB_OK; i++)
    if (lo <= x->range[i][1] && hi >= x->range[i][0]) rc = PAGEDB_BUSY;
  if (rc == PAGEDB_OK && n == IDX_RANGES) rc = PAGEDB_BUSY;
  if (rc == PAGEDB_OK) {
    x->range[n][0] = lo;
    x->range[n][1] = hi;
    atomic_store(&x->nranges, n + 1);
  }
  pthread_mutex_unlock(&x->range_mu);
  /* Published: now no id reserved one by one but the caller's own. */
  int64_t pending = 0;
  for (int i = 0; rc == PAGEDB_OK && i < PDB_NSHARD; i++) pending += atomic_load(&x->pending[i].n);
  if (rc == PAGEDB_OK && pending > (int64_t)own) {
    idx_release_range(x, lo, hi);
    rc = PAGEDB_BUSY;
  }
  return rc;
}

void idx_release_range(Index *x, int64_t lo, int64_t hi) {
  pthread_mutex_lock(&x->range_mu);
  int n = atomic_load(&x->nranges);
  for (int i = 0; i < n; i++)
    if (x->range[i][0] == lo && x->range[i][1] == hi) {
      x->range[i][0] = x->range[n - 1][0];
      x->range[i][1] = x->range[n - 1][1];
      atomic_store(&x->nranges, n - 1);
      break;
    }
  pthread_mutex_unlock(&x->range_mu);
}

void idx_release(Index *x, int64_t id) {
  atomic_fetch_sub(&x->pending[pdb_shard()].n, 1);   /* (a shard may go negative: the sum is right) */
  release_mem(x, id);
}

static void release_mem(Index *x, int64_t id) {
  if ((uint64_t)id < atomic_load_explicit(&x->dense, memory_order_acquire)) {
    uint64_t *s = arena_slot(x, &x->darena, (uint64_t)id, 0);
    assert(s && atomic_load(state(s)) == D_RESERVED);
    if (s) atomic_store_explicit(state(s), D_FREE, memory_order_release);
    return;
  }
  pthread_rwlock_rdlock(&x->lock);
  if ((uint64_t)id < atomic_load_explicit(&x->dense, memory_order_relaxed)) {
    pthread_rwlock_unlock(&x->lock);
    release_mem(x, id);
    return;
  }
  Entry *e = probe(atomic_load_explicit(&x->tab, memory_order_relaxed), key_of(id));
  assert(e && atomic_load(&e->val) == 0);
  if (e) atomic_store_explicit(&e->key, TOMB, memory_order_release);
  pthread_rwlock_unlock(&x->lock);
}

static int publish_mem(Index *x, const uint64_t *slot);

int idx_publish(Index *x, const uint64_t *slot) {
  int rc = publish_mem(x, slot);
  if (rc == PAGEDB_OK) atomic_fetch_sub(&x->pending[pdb_shard()].n, 1);
  return rc;
}

static int publish_mem(Index *x, const uint64_t *slot) {
  uint64_t id = slot[0];
  if (id < atomic_load_explicit(&x->dense, memory_order_acquire)) {
    uint64_t *s = arena_slot(x, &x->darena, id, 0);
    if (NEVER(!s || atomic_load_explicit(state(s), memory_order_relaxed) != D_RESERVED)) return PAGEDB_MISUSE;
    memcpy(s + 1, slot + 1, (size_t)(x->nw - 1) * sizeof *s);
    /* Release: a reader that sees the state sees the words above. */
    atomic_store_explicit(state(s), D_VISIBLE, memory_order_release);
    atomic_fetch_add_explicit(&x->count, 1, memory_order_relaxed);
    return PAGEDB_OK;
  }
  uint64_t n = x->nsparse;
  uint64_t *s = n < x->max ? arena_slot(x, &x->sarena, n, 1) : NULL;
  if (!s) return PAGEDB_NOMEM;
  memcpy(s, slot, (size_t)x->nw * sizeof *s);
  x->nsparse = n + 1;
  pthread_rwlock_rdlock(&x->lock);
  int rc = PAGEDB_OK;
  if ((uint64_t)id < atomic_load_explicit(&x->dense, memory_order_relaxed)) {
    x->nsparse = n;         /* moved to the dense arena meanwhile: retry there */
    pthread_rwlock_unlock(&x->lock);
    return publish_mem(x, slot);
  }
  Entry *e = probe(atomic_load_explicit(&x->tab, memory_order_relaxed), key_of((int64_t)id));
  if (NEVER(!e)) {
    rc = PAGEDB_MISUSE;     /* published without a reservation */
  } else {
    /* Release: a reader that sees val sees the slot's words. */
    atomic_store_explicit(&e->val, n + 1, memory_order_release);
    atomic_fetch_add_explicit(&x->count, 1, memory_order_relaxed);
  }
  pthread_rwlock_unlock(&x->lock);
  return rc;
}

int idx_remove(Index *x, int64_t id) {
  if (id < 0) return PAGEDB_NOTFOUND;
  if ((uint64_t)id < atomic_load_explicit(&x->dense, memory_order_acquire)) {
    uint64_t *s = arena_slot(x, &x->darena, (uint64_t)id, 0);
    uint64_t visible = D_VISIBLE;
    /* Release: a writer that reserves the id next (its CAS acquires) and
    ** publishes over the slot comes after this store. */
    if (!s || !atomic_compare_exchange_strong_explicit(state(s), &visible, D_FREE, memory_order_acq_rel,
                                                       memory_order_acquire))
      return PAGEDB_NOTFOUND;
    atomic_fetch_sub_explicit(&x->count, 1, memory_order_relaxed);
    return PAGEDB_OK;
  }
  pthread_rwlock_rdlock(&x->lock);
  if ((uint64_t)id < atomic_load_explicit(&x->dense, memory_order_relaxed)) {
    pthread_rwlock_unlock(&x->lock);
    return idx_remove(x, id);   /* moved to the dense arena meanwhile */
  }
  int rc = PAGEDB_NOTFOUND;
  Entry *e = probe(atomic_load_explicit(&x->tab, memory_order_relaxed), key_of(id));
  if (e && atomic_load_explicit(&e->val, memory_order_relaxed) != 0) {
    /* The sparse slot stays where it is, unreachable by id; a reuse of the
    ** id claims an empty entry and a new slot. */
    atomic_store_explicit(&e->key, TOMB, memory_order_release);
    atomic_fetch_sub_explicit(&x->count, 1, memory_order_relaxed);
    rc = PAGEDB_OK;
  }
  pthread_rwlock_unlock(&x->lock);
  return rc;
}

const uint64_t *idx_find(Index *x, int64_t id) {
  if (x->dx) {
    const uint64_t *s = dx_find(x->dx, id);
    return s == DX_BAD ? NULL : s;
  }
  if (id < 0) return NULL;
  if ((uint64_t)id < atomic_load_explicit(&x->dense, memory_order_acquire)) {
    uint64_t *s = arena_slot(x, &x->darena, (uint64_t)id, 0);
    return s && atomic_load_explicit(state(s), memory_order_acquire) == D_VISIBLE ? s : NULL;
  }
  Entry *e = probe(atomic_load_explicit(&x->tab, memory_order_acquire), key_of(id));
  if (!e) return NULL;
  uint64_t v = atomic_load_explicit(&e->val, memory_order_acquire);
  return v ? arena_slot(x, &x->sarena, v - 1, 0) : NULL;
}

uint64_t idx_count(Index *x) {
  return x->dx ? dx_count(x->dx) : atomic_load_explicit(&x->count, memory_order_relaxed);
}

int idx_scan(Index *x, int (*xcb)(void *ctx, int64_t id, const uint64_t *slot), void *ctx) {
  return idx_scan_range(x, 0, INT64_MAX, xcb, ctx);
}

int idx_scan_range(Index *x, int64_t lo, int64_t last, int (*xcb)(void *ctx, int64_t id, const uint64_t *slot),
                   void *ctx) {
  if (x->dx) return dx_scan_range(x->dx, lo, last, xcb, ctx);
  if (last < lo || last < 0) return PAGEDB_OK;
  uint64_t d = atomic_load_explicit(&x->dense, memory_order_acquire);
  for (uint64_t id = lo > 0 ? (uint64_t)lo : 0; id < d && id <= (uint64_t)last; id++) {
    uint64_t *s = arena_slot(x, &x->darena, id, 0);
    if (!s) {
      id |= ((uint64_t)1 << x->bits) - 1;    /* skip an absent chunk */
      continue;
    }
    if (atomic_load_explicit(state(s), memory_order_acquire) != D_VISIBLE) continue;
    int rc = xcb(ctx, (int64_t)id, s);
    if (rc != PAGEDB_OK) return rc;
  }
  for (uint64_t n = 0; n < x->nsparse; n++) {
    const uint64_t *s = arena_slot(x, &x->sarena, n, 0);
    /* A sparse slot whose id now lies below D was copied to the dense
    ** arena (and visited there). */
    if (s[0] < d || (int64_t)s[0] < lo || (int64_t)s[0] > last || idx_find(x, (int64_t)s[0]) != s) continue;
    int rc = xcb(ctx, (int64_t)s[0], s);
    if (rc != PAGEDB_OK) return rc;
  }
  return PAGEDB_OK;
}
