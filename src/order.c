/*
** order.c -- epoch orders: which ids each rank reads in an epoch.
**
** A training job reads every sample once per epoch, split among WORLD
** ranks, usually shuffled, and must be able to stop and resume.  Rather than
** have each rank shuffle a list of its own, pagedb_order derives one global
** order from the committed samples and (KIND, SEED, EPOCH), and gives rank R
** the R-th of WORLD equal, contiguous parts of it.  Every rank computes the
** same global order independently, so the parts are disjoint and cover the
** dataset without any communication, and a position in a part is all a job
** must save to resume.
**
** The global order is a pure function of the inputs, the same on every
** machine: the samples are first put in a total order (by record offset
** then id, or by id), never in hash, pointer or scan order; ties cannot
** occur, because ids are unique, so qsort's instability does not matter;
** and every random choice comes from one splitmix64 stream seeded from
** (SEED, EPOCH), bounded without bias by Lemire's multiply-and-reject.  The
** algorithm is part of the format in this sense: a job that resumes under a
** newer pagedb expects the same order, so it must not change.
**
** The three kinds:
**
**   SEQUENTIAL    by record offset (slot word 1), then id: the order the
**                 bytes lie in the data file; independent of SEED and EPOCH.
**   RANDOM        ids ascending, then a Fisher-Yates shuffle.  Any sample
**                 may follow any other, so readers touch pages at random.
**   QUASI_RANDOM  the samples grouped by page (a sample spanning several
**                 pages belongs to its first), the list of pages shuffled
**                 and cut into windows of PAGEDB_ORDER_WINDOW consecutive
**                 pages, the samples of each window shuffled among
**                 themselves.  A reader works through one window's pages at
**                 a time, which keeps the page cache (or a mapped reader's
**                 resident set) to about a window, while the epoch still
**                 mixes samples of distant pages across windows.
**
** Partition: with N samples and WORLD ranks, each part has L = ceil(N /
** WORLD) entries, and the global order is extended cyclically (entry i is
** entry i mod N) to WORLD * L; with PAGEDB_ORDER_DROP_LAST, L = floor(N /
** WORLD) and the last N mod WORLD entries are not read.  Equal parts keep
** the ranks of a synchronous job in step.
**
** Snapshot: the samples are collected with idx_scan while commit_mu is
** held, so that no commit publishes samples meanwhile (idx_scan must not
** run concurrently with idx_publish); the lock is released before the
** sorting and shuffling.  Memory is O(N) and temporary: 16 bytes a sample
** for the collected (offset, id) pairs, 8 for the global order, and for
** QUASI_RANDOM 16 a page.
*/
#include "api.h"

#include <stdio.h>

/* A committed sample, as collected. */
typedef struct OrdSample {
  uint64_t off;             /* its record's offset in the data region */
  int64_t id;
} OrdSample;

/* What the scan callback fills. */
typedef struct OrdScan {
  OrdSample *a;             /* the samples, N of CAP in use */
  uint64_t n, cap;
  int count_only;           /* only count them: A stays NULL */
  int oom;                  /* allocating A failed */
} OrdScan;

static int scan_one(void *ctx, int64_t id, const uint64_t *slot) {
  OrdScan *s = ctx;
  if (!s->count_only) {
    /* The count was read under commit_mu too, so this never grows in
    ** practice; it is cheap insurance against a miscount. */
    if (s->n == s->cap) {
      uint64_t cap = s->cap ? s->cap * 2 : 1024;
      OrdSample *a = pdb_realloc(s->a, cap * sizeof *a);
      if (!a) {
        s->oom = 1;
        return PAGEDB_NOMEM;
      }
      s->a = a;
      s->cap = cap;
    }
    s->a[s->n] = (OrdSample){ slot[1], id };
  }
  s->n++;
  return PAGEDB_OK;
}

/*
** Collect the committed samples into S (or, if COUNT_ONLY, just count
** them).  Takes commit_mu for the duration of the scan.
*/
static int collect(pagedb *db, OrdScan *s, int count_only) {
  memset(s, 0, sizeof *s);
  s->count_only = count_only;
  int rc = PAGEDB_OK;
  pthread_mutex_lock(&db->commit_mu);
  if (!count_only) {
    /* Exact while commit_mu is held: only commits publish (the samples
    ** loaded at open were published before the handle was returned). */
    uint64_t want = idx_count(db->idx);
    s->cap = want ? want : 1;
    s->a = pdb_malloc(s->cap * sizeof *s->a);
    if (!s->a) s->oom = 1;
  }
  if (!s->oom) rc = idx_scan(db->idx, scan_one, s);
  pthread_mutex_unlock(&db->commit_mu);
  if (s->oom) {
    pdb_free(s->a);
    s->a = NULL;
    return pdb_err(db, &db->err, PAGEDB_NOMEM, "%s: pagedb_order: out of memory collecting %llu samples", db->path,
                   (unsigned long long)idx_count(db->idx));
  }
  if (rc != PAGEDB_OK) {
    pdb_free(s->a);
    s->a = NULL;
    return pdb_err(db, &db->err, rc, "%s: pagedb_order: scanning the index failed (%s)", db->path, pagedb_errstr(rc));
  }
  return PAGEDB_OK;
}

/* Total orders: ids are unique, so neither comparison has ties. */
static int by_offset(const void *pa, const void *pb) {
  const OrdSample *a = pa, *b = pb;
  if (a->off != b->off) return a->off < b->off ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

static int by_id(const void *pa, const void *pb) {
  const OrdSample *a = pa, *b = pb;
  return (a->id > b->id) - (a->id < b->id);
}

static int sorted_by_id(const OrdSample *a, uint64_t n) {
  for (uint64_t i = 1; i < n; i++)
    if (a[i - 1].id >= a[i].id) return 0;
  return 1;
}

/*
** The random stream: splitmix64 (a Weyl sequence through pdb_mix64) from a
** state derived from (SEED, EPOCH, STREAM).  Each step of the derivation is
** a bijection, so for one seed different epochs never share a state.
*/
typedef struct OrdRng {
  uint64_t s;
} OrdRng;

#define ORD_GAMMA 0x9e3779b97f4a7c15ull   /* splitmix64's increment */

enum { ORD_STREAM_RANDOM = 1, ORD_STREAM_PAGES = 2, ORD_STREAM_WINDOWS = 3, ORD_STREAM_BLOCKS = 4 };

static void rng_init(OrdRng *r, uint64_t seed, uint64_t epoch, uint64_t stream) {
  r->s = pdb_mix64(pdb_mix64(pdb_mix64(seed) + epoch) + stream);
}

static uint64_t rng_next(OrdRng *r) {
  r->s += ORD_GAMMA;
  return pdb_mix64(r->s);
}

/*
** A uniform integer in [0, BOUND), BOUND >= 1: Lemire's method.  The high
** word of x * BOUND is uniform once the products whose low word falls below
** 2^64 mod BOUND are rejected; the division is needed only when the low
** word is below BOUND, which is rare.
*/
static uint64_t rng_below(OrdRng *r, uint64_t bound) {
  unsigned __int128 m = (unsigned __int128)rng_next(r) * bound;
  uint64_t lo = (uint64_t)m;
  if (lo < bound) {
    uint64_t t = (0 - bound) % bound;     /* 2^64 mod BOUND */
    while (lo < t) {
      m = (unsigned __int128)rng_next(r) * bound;
      lo = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

/* Fisher-Yates: shuffle A[0..N) with R.  Ids go through here too: int64_t
** and uint64_t may alias. */
static void shuffle_u64(OrdRng *r, uint64_t *a, uint64_t n) {
  for (uint64_t i = n; i > 1; i--) {
    uint64_t j = rng_below(r, i);
    uint64_t t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

/*
** QUASI_RANDOM: S[0..N) sorted by offset, so that each page's samples are
** adjacent; the global order goes to OUT[0..N).  PS is the page size.
*/
static int order_quasi(pagedb *db, const OrdSample *s, uint64_t n, uint32_t ps, uint64_t seed, uint64_t epoch,
                       int64_t *out) {
  uint64_t npage = 0;
  for (uint64_t i = 0; i < n; i++)
    if (i == 0 || s[i].off / ps != s[i - 1].off / ps) npage++;
  /* FIRST[p]: where page p's samples begin in S (FIRST[npage] == N);
  ** PERM: the page numbers 0..npage-1 (dense, in file order), shuffled. */
  uint64_t *first = pdb_malloc((npage + 1) * sizeof *first);
  uint64_t *perm = pdb_malloc((npage ? npage : 1) * sizeof *perm);
  if (!first || !perm) {
    pdb_free(first);
    pdb_free(perm);
    return pdb_err(db, &db->err, PAGEDB_NOMEM, "%s: pagedb_order: out of memory grouping %llu samples into %llu pages",
                   db->path, (unsigned long long)n, (unsigned long long)npage);
  }
  uint64_t p = 0;
  for (uint64_t i = 0; i < n; i++)
    if (i == 0 || s[i].off / ps != s[i - 1].off / ps) first[p++] = i;
  assert(p == npage);
  first[npage] = n;
  for (p = 0; p < npage; p++) perm[p] = p;

  OrdRng pages, windows;
  rng_init(&pages, seed, epoch, ORD_STREAM_PAGES);
  rng_init(&windows, seed, epoch, ORD_STREAM_WINDOWS);
  shuffle_u64(&pages, perm, npage);

  uint64_t k = 0;
  for (uint64_t w = 0; w < npage; w += PAGEDB_ORDER_WINDOW) {
    uint64_t end = w + PAGEDB_ORDER_WINDOW < npage ? w + PAGEDB_ORDER_WINDOW : npage;
    uint64_t start = k;
    for (p = w; p < end; p++)
      for (uint64_t i = first[perm[p]]; i < first[perm[p] + 1]; i++) out[k++] = s[i].id;
    shuffle_u64(&windows, (uint64_t *)out + start, k - start);
  }
  assert(k == n);
  pdb_free(first);
  pdb_free(perm);
  return PAGEDB_OK;
}

/* Check the arguments; the message names the one that is wrong. */
static int check_args(pagedb *db, int kind, int rank, int world, const int64_t *n) {
  int base = kind & ~PAGEDB_ORDER_DROP_LAST;
  if (base < PAGEDB_ORDER_SEQUENTIAL || base > PAGEDB_ORDER_QUASI_RANDOM)
    return pdb_err(db, &db->err, PAGEDB_MISUSE,
                   "%s: pagedb_order: unknown kind %d (PAGEDB_ORDER_SEQUENTIAL, _RANDOM or _QUASI_RANDOM,"
                   " optionally or-ed with PAGEDB_ORDER_DROP_LAST)", db->path, kind);
  if (world < 1 || world > (1 << 20))
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: pagedb_order: world %d is out of range (1 to %d)", db->path,
                   world, 1 << 20);
  if (rank < 0 || rank >= world)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: pagedb_order: rank %d is out of range (0 to %d for world %d)",
                   db->path, rank, world - 1, world);
  if (!n) return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: pagedb_order: the length pointer N is NULL", db->path);
  return PAGEDB_OK;
}

/* The length of each rank's part for N samples. */
static uint64_t part_length(uint64_t n, int world, int drop_last) {
  uint64_t w = (uint64_t)world;
  return drop_last ? n / w : n / w + (n % w != 0);
}

int pagedb_order(pagedb *db, int kind, uint64_t seed, uint64_t epoch, int rank, int world, int64_t *ids,
                 int64_t *n) {
  if (!db) return PAGEDB_MISUSE;
  if (db->failed) return pdb_err(db, &db->err, PAGEDB_MISUSE, "the handle's open failed; only close it");
  int rc = check_args(db, kind, rank, world, n);
  if (rc != PAGEDB_OK) return rc;
  int base = kind & ~PAGEDB_ORDER_DROP_LAST;
  int drop_last = (kind & PAGEDB_ORDER_DROP_LAST) != 0;

  OrdScan s;
  rc = collect(db, &s, ids == NULL);
  if (rc != PAGEDB_OK) return rc;
  uint64_t total = s.n;
  uint64_t len = part_length(total, world, drop_last);
  if (!ids) {
    *n = (int64_t)len;
    return PAGEDB_OK;
  }
  if (*n < 0 || (uint64_t)*n < len) {
    long long have = (long long)*n;
    pdb_free(s.a);
    *n = (int64_t)len;
    return pdb_err(db, &db->err, PAGEDB_MISUSE,
                   "%s: pagedb_order: the array has %lld entries, rank %d of %d needs %llu (%llu samples)", db->path,
                   have, rank, world, (unsigned long long)len, (unsigned long long)total);
  }

  int64_t *g = pdb_malloc((total ? total : 1) * sizeof *g);
  if (!g) {
    pdb_free(s.a);
    return pdb_err(db, &db->err, PAGEDB_NOMEM, "%s: pagedb_order: out of memory ordering %llu samples", db->path,
                   (unsigned long long)total);
  }
  if (base == PAGEDB_ORDER_RANDOM) {
    /* idx_scan visits the dense ids ascending: the sort is then a check. */
    if (!sorted_by_id(s.a, total)) qsort(s.a, total, sizeof *s.a, by_id);
    for (uint64_t i = 0; i < total; i++) g[i] = s.a[i].id;
    OrdRng r;
    rng_init(&r, seed, epoch, ORD_STREAM_RANDOM);
    shuffle_u64(&r, (uint64_t *)g, total);
  } else {
    qsort(s.a, total, sizeof *s.a, by_offset);
    if (base == PAGEDB_ORDER_SEQUENTIAL) {
      for (uint64_t i = 0; i < total; i++) g[i] = s.a[i].id;
    } else {
      rc = order_quasi(db, s.a, total, pager_page_size(db->pager), seed, epoch, g);
    }
  }
  pdb_free(s.a);
  if (rc == PAGEDB_OK) {
    /* Rank RANK's part; entries past the end wrap to the start (padding). */
    uint64_t at = (uint64_t)rank * len, i = 0;
    while (i < len && total > 0) {   /* runs of G: no division per id */
      uint64_t from = (at + i) % total, run = total - from < len - i ? total - from : len - i;
      memcpy(ids + i, g + from, run * sizeof *g);
      i += run;
    }
    *n = (int64_t)len;
  }
  pdb_free(g);
  return rc;
}
