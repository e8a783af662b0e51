/*
** index.c -- id -> slot, lock-free for readers.
**
** Slots live in an arena of fixed-size chunks that never move, so a slot
** pointer handed to a reader stays valid until the index is freed.  The map
** from id to slot number is an open-addressing hash table with linear
** probing whose entries are two atomic words:
**
**   key  0 = empty, UINT64_MAX = tombstone (a released reservation),
**        otherwise id + 1
**   val  0 = reserved (a writer holds the id; not visible), otherwise
**        slot number + 1 (committed and visible)
**
** Entries only ever go empty -> key -> (tombstone), so a probe that meets
** an empty entry knows the key is absent.  Keys are claimed with a
** compare-and-swap, so writers reserve ids concurrently without a lock on
** the table; the rwlock's shared side only keeps them off a table while it
** is being replaced.  Growing takes the exclusive side, copies the live
** entries into a table twice the size and publishes it; readers never take
** the lock: they keep probing whichever table they loaded, and old tables
** are freed only with the index.
*/
#include "index.h"

#define CHUNK_BITS 16
#define CHUNK      ((uint64_t)1 << CHUNK_BITS)
#define MAX_CHUNKS ((uint64_t)1 << 16)      /* 2^32 samples */
#define TOMB       UINT64_MAX

typedef struct Entry {
  _Atomic uint64_t key;
  _Atomic uint64_t val;
} Entry;

typedef struct Table {
  struct Table *older;      /* retired tables, freed with the index */
  uint64_t mask;
  Entry e[];
} Table;

struct Index {
  int nw;                   /* words per slot */
  pthread_rwlock_t lock;    /* shared: change entries; exclusive: grow */
  _Atomic(Table *) tab;
  _Atomic uint64_t used;    /* keys in tab, tombstones included */
  uint64_t **chunks;        /* MAX_CHUNKS pointers; filled as needed */
  uint64_t nslot;           /* slots handed out (publisher only) */
  _Atomic uint64_t count;   /* visible samples */
};

static Table *table_new(uint64_t cap) {
  Table *t = calloc(1, sizeof *t + cap * sizeof(Entry));
  if (t) t->mask = cap - 1;
  return t;
}

int idx_create(Index **pi, int nw, uint64_t expect) {
  *pi = NULL;
  Index *x = calloc(1, sizeof *x);
  if (!x) return PAGEDB_NOMEM;
  uint64_t cap = 1024;
  while (cap < expect * 2 + 16) cap <<= 1;
  x->nw = nw;
  x->chunks = calloc(MAX_CHUNKS, sizeof *x->chunks);
  Table *t = table_new(cap);
  if (!x->chunks || !t) {
    free(x->chunks);
    free(t);
    free(x);
    return PAGEDB_NOMEM;
  }
  atomic_init(&x->tab, t);
  pthread_rwlock_init(&x->lock, NULL);
  *pi = x;
  return PAGEDB_OK;
}

void idx_free(Index *x) {
  if (!x) return;
  for (Table *t = atomic_load(&x->tab), *o; t; t = o) {
    o = t->older;
    free(t);
  }
  for (uint64_t c = 0; c < MAX_CHUNKS && x->chunks[c]; c++) free(x->chunks[c]);
  free(x->chunks);
  pthread_rwlock_destroy(&x->lock);
  free(x);
}

static inline uint64_t key_of(int64_t id) { return (uint64_t)id + 1; }

static inline uint64_t *slot_at(const Index *x, uint64_t n) {
  return x->chunks[n >> CHUNK_BITS] + (n & (CHUNK - 1)) * (uint64_t)x->nw;
}

/* The entry holding KEY in T, or NULL.  Acquire pairs with the release of
** the CAS that claimed the key. */
static Entry *probe(Table *t, uint64_t key) {
  for (uint64_t h = pdb_mix64(key) & t->mask;; h = (h + 1) & t->mask) {
    uint64_t k = atomic_load_explicit(&t->e[h].key, memory_order_acquire);
    if (k == key) return &t->e[h];
    if (k == 0) return NULL;
  }
}

/* Replace the table by one with room for twice the live keys.  Takes the
** exclusive lock; the caller holds no lock. */
static int grow(Index *x) {
  int rc = PAGEDB_OK;
  pthread_rwlock_wrlock(&x->lock);
  Table *t = atomic_load_explicit(&x->tab, memory_order_relaxed);
  uint64_t used = atomic_load_explicit(&x->used, memory_order_relaxed);
  if (used * 2 > t->mask + 1) {
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

/* Claim KEY in the current table; the caller holds the shared lock. */
static int claim(Index *x, uint64_t key, Entry **out) {
  Table *t = atomic_load_explicit(&x->tab, memory_order_relaxed);
  for (uint64_t h = pdb_mix64(key) & t->mask;; h = (h + 1) & t->mask) {
    uint64_t k = atomic_load_explicit(&t->e[h].key, memory_order_acquire);
    while (k == 0) {
      /* Release: whoever finds the key finds it whole; a failed CAS
      ** reloads k, which may now be our own id claimed by another writer. */
      if (atomic_compare_exchange_weak_explicit(&t->e[h].key, &k, key, memory_order_acq_rel,
                                                memory_order_acquire)) {
        atomic_fetch_add_explicit(&x->used, 1, memory_order_relaxed);
        *out = &t->e[h];
        return PAGEDB_OK;
      }
    }
    if (k == key) return PAGEDB_CONSTRAINT;
  }
}

static int needs_growth(Index *x) {
  Table *t = atomic_load_explicit(&x->tab, memory_order_relaxed);
  return atomic_load_explicit(&x->used, memory_order_relaxed) * 2 > t->mask + 1;
}

int idx_reserve(Index *x, int64_t id) {
  assert(id >= 0);
  Entry *e;
  pthread_rwlock_rdlock(&x->lock);
  int rc = claim(x, key_of(id), &e);
  int full = needs_growth(x);
  pthread_rwlock_unlock(&x->lock);
  if (rc == PAGEDB_OK && full) {
    /* The reservation is made; a failed grow only leaves the table fuller
    ** (it stays below 3/4 until far more ids than memory allows). */
    grow(x);
  }
  return rc;
}

void idx_release(Index *x, int64_t id) {
  pthread_rwlock_rdlock(&x->lock);
  Entry *e = probe(atomic_load_explicit(&x->tab, memory_order_relaxed), key_of(id));
  assert(e && atomic_load(&e->val) == 0);
  if (e) atomic_store_explicit(&e->key, TOMB, memory_order_release);
  pthread_rwlock_unlock(&x->lock);
}

/* Copy SLOT into the arena; returns its number + 1, or 0 without memory. */
static uint64_t store_slot(Index *x, const uint64_t *slot) {
  uint64_t n = x->nslot;
  uint64_t c = n >> CHUNK_BITS;
  if (c >= MAX_CHUNKS) return 0;
  if (!x->chunks[c]) {
    x->chunks[c] = malloc(CHUNK * (uint64_t)x->nw * sizeof(uint64_t));
    if (!x->chunks[c]) return 0;
  }
  memcpy(slot_at(x, n), slot, (size_t)x->nw * sizeof(uint64_t));
  x->nslot = n + 1;
  return n + 1;
}

int idx_publish(Index *x, const uint64_t *slot) {
  uint64_t v = store_slot(x, slot);
  if (!v) return PAGEDB_NOMEM;
  pthread_rwlock_rdlock(&x->lock);
  Entry *e = probe(atomic_load_explicit(&x->tab, memory_order_relaxed), key_of((int64_t)slot[0]));
  int rc = PAGEDB_OK;
  if (NEVER(!e)) {
    rc = PAGEDB_MISUSE;      /* published without a reservation */
  } else {
    /* Release: a reader that sees val sees the slot's words (and the
    ** chunk pointer) written above. */
    atomic_store_explicit(&e->val, v, memory_order_release);
    atomic_fetch_add_explicit(&x->count, 1, memory_order_relaxed);
  }
  pthread_rwlock_unlock(&x->lock);
  return rc;
}

const uint64_t *idx_find(Index *x, int64_t id) {
  if (id < 0) return NULL;
  Entry *e = probe(atomic_load_explicit(&x->tab, memory_order_acquire), key_of(id));
  if (!e) return NULL;
  uint64_t v = atomic_load_explicit(&e->val, memory_order_acquire);
  return v ? slot_at(x, v - 1) : NULL;
}

uint64_t idx_count(Index *x) { return atomic_load_explicit(&x->count, memory_order_relaxed); }
