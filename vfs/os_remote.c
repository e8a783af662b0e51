/*
** os_remote.c -- the "http", "https" and "s3" VFSes: datasets on web
** servers and object stores, read-only, through the local chunk cache.
**
** A path with one of these schemes is served by the VFS of that name:
** pagedb_open chooses it by the scheme (pdb_vfs_choose, vfs/vfs.c), so
** pagedb_open("s3://bucket/x.pagedb", ...) just works; each VFS opens URLs
** of its own scheme only.
** Every byte comes from a chunk held from the cache (cache.c), which
** fetches what it lacks through http.c; nothing is ever written: xWrite,
** xTruncate, xSync, xLock and xDelete answer PAGEDB_READONLY, and an open
** asking to write fails with it.
**
** Copy reads (xRead, xReadBatch) copy out of held chunks.  A file keeps the
** chunks it used last held (up to half the cache's bound, more while
** threads use them: each held chunk has a reference count), so a run
** of small reads costs no system call; a batch holds every chunk it needs at once, so
** that the misses are fetched together, many requests in flight.
**
** Reads in place (xHold, xRelease: a copy-mode read-ahead window) take
** references on the chunks the ranges need, as a batch does, and hand out
** pointers into them instead of copying; the references last until
** xRelease.  A range across two chunks gets no pointer (the caller copies
** it with xReadBatch).
**
** Zero-copy reads (xMap, xMapFill): xMap reserves address space, with no
** access; xMapFill maps the chunks a range needs into it at their places,
** from the cache files (or private memory when the cache has no room),
** before the reader touches them.  A placed chunk stays mapped, and so
** shared-locked against eviction (cache.c, invariant 3), until xUnmap.
**
** Untrusted bytes (a shared cache: cache.c, invariants 7 and 8): the data
** file reports PAGEDB_IOCAP_UNTRUSTED, the reader checks every value
** against the index's checksum, and on a mismatch calls xRefetch, which
** fetches the chunks under the range over the connection and writes the
** server's bytes over every copy this file holds (the slots of copy reads,
** the chunks placed in maps) in place, at the same addresses: a pointer
** handed out earlier stays valid, and the bytes of a value that verified
** do not change (the server's are the same).  A copy whose bytes differed
** is a forgery sealed by someone able to read the dataset: counted
** (chunk_bad, chunk_forged), and replaced in the cache too (rc_refetch).
** The object's first bytes, fetched from the server at open to derive the
** keys (rc_seed: the data file's header among them), are read from there
** by xRead, and vouch for themselves in xRefetch (no request when every
** copy agrees with them).
**
** The object's ETag is pinned at open (http.c): a changed object makes the
** reads fail with PAGEDB_IOERR_CHANGED.  The cache is keyed by URL, ETag
** and size, so chunks of two versions never mix either.
*/
#define _GNU_SOURCE
#include "remote.h"

#include <stdio.h>
#include <sys/mman.h>

/* Chunks a file keeps held when no read uses them: half of what the cache
** may hold, from 32 to 4096.  A random epoch over a dataset that fits in
** half the cache then holds each chunk once: with an eighth, a 1.6 GB
** dataset under the default 4 GiB bound held 2 chunks in 3 again and
** again (open, flock, statx, mmap, munmap, close each time), and its warm
** epoch ran at 62% of local reads.  Held chunks cannot be evicted; a cache
** whose every chunk is held by someone serves new chunks from private
** memory (cache.c), so processes holding more than the bound together
** cost speed, never correctness. */
#define KEEP_MIN 32
#define KEEP_MAX 4096

typedef struct Slot {
  RcHeld h;
  int refs;
  uint64_t used;            /* tick of the last use */
} Slot;

/* A reservation made by xMap, and the chunks placed in it. */
typedef struct Region {
  struct Region *next;
  uint8_t *base;
  size_t len;
  uint8_t *placed;          /* one byte per chunk */
  RcHeld *held;
} Region;

typedef struct RemoteState {
  RmtObject *obj;
  RcObj *cache;
  uint64_t size, chunk, nchunk;
  int untrusted;            /* PAGEDB_IOCAP_UNTRUSTED (rc_untrusted) */
  pthread_mutex_t mu;       /* guards everything below */
  Slot *slots;
  int nslot, capslot;
  int keep;                 /* unreferenced slots kept (KEEP_MIN..KEEP_MAX) */
  int *slot_of;             /* per chunk: its slot, or -1 */
  uint64_t tick;
  Region *regions;
  char err[RMT_ERR_MAX];    /* the latest failure, for xErrmsg */
} RemoteState;

typedef struct RemoteFile {
  pagedb_file base;         /* must be first */
  RemoteState *s;
} RemoteFile;

static RemoteState *st(pagedb_file *f) { return ((RemoteFile *)f)->s; }

static int failed(RemoteState *s, int rc, const char *msg) {
  pthread_mutex_lock(&s->mu);
  snprintf(s->err, sizeof s->err, "%s", msg);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* --- held chunks for copy reads ------------------------------------------ */

/* Drop unreferenced slots beyond KEEP, least recently used first.  Caller
** holds mu.  (A linear pass per drop: slots are few, drops rarer.) */
static void trim(RemoteState *s) {
  while (s->nslot > s->keep) {
    int victim = -1;
    for (int i = 0; i < s->nslot; i++)
      if (s->slots[i].refs == 0 && (victim < 0 || s->slots[i].used < s->slots[victim].used)) victim = i;
    if (victim < 0) return;
    rc_release(&s->slots[victim].h, 0);
    s->slot_of[s->slots[victim].h.k] = -1;
    s->slots[victim] = s->slots[--s->nslot];
    if (victim < s->nslot) s->slot_of[s->slots[victim].h.k] = victim;
  }
}

static int find_slot(RemoteState *s, uint64_t k) { return s->slot_of[k]; }

/*
** Reference chunks K[0..N) (distinct) into OUT, holding those not held
** yet in one go.  Each referenced chunk must be given back with unref.
*/
static int ref_chunks(RemoteState *s, const uint64_t *k, int n, RcHeld *out) {
  uint64_t small[64];
  uint64_t *miss = n <= 64 ? small : pdb_malloc((size_t)n * sizeof *miss);
  RcHeld *got = pdb_malloc((size_t)(n ? n : 1) * sizeof *got);
  if (!miss || !got) {
    if (miss != small) pdb_free(miss);
    pdb_free(got);
    return failed(s, PAGEDB_NOMEM, "out of memory reading a remote file");
  }
  int nmiss = 0;
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < n; i++) {
    int j = find_slot(s, k[i]);
    if (j >= 0) {
      s->slots[j].refs++;
      s->slots[j].used = ++s->tick;
      out[i] = s->slots[j].h;
    } else {
      miss[nmiss++] = k[i];
      out[i].base = NULL;
    }
  }
  pthread_mutex_unlock(&s->mu);
  int rc = PAGEDB_OK;
  if (nmiss > 0) {
    char msg[RMT_ERR_MAX];
    rc = rc_hold(s->cache, miss, nmiss, NULL, got, msg, sizeof msg);
    if (rc != PAGEDB_OK) failed(s, rc, msg);
  }
  pthread_mutex_lock(&s->mu);
  for (int m = 0; m < nmiss; m++) {
    int j = rc == PAGEDB_OK ? find_slot(s, miss[m]) : -1;
    if (rc != PAGEDB_OK) break;
    if (j >= 0) {
      /* Another thread held it meanwhile: use its slot, drop ours. */
      rc_release(&got[m], 0);
    } else {
      if (s->nslot == s->capslot) {
        int nc = s->capslot ? s->capslot * 2 : KEEP_MIN;
        Slot *ns = pdb_realloc(s->slots, (size_t)nc * sizeof *ns);
        if (!ns) {
          for (int q = m; q < nmiss; q++) rc_release(&got[q], 0);
          rc = PAGEDB_NOMEM;
          snprintf(s->err, sizeof s->err, "out of memory reading a remote file");
          break;
        }
        s->slots = ns;
        s->capslot = nc;
      }
      j = s->nslot++;
      s->slots[j] = (Slot){ got[m], 0, 0 };
      s->slot_of[miss[m]] = j;
    }
    s->slots[j].refs++;
    s->slots[j].used = ++s->tick;
    for (int i = 0; i < n; i++)
      if (k[i] == miss[m]) out[i] = s->slots[j].h;
  }
  if (rc != PAGEDB_OK) {
    /* Give back what this call referenced. */
    for (int i = 0; i < n; i++) {
      if (!out[i].base) continue;
      int j = find_slot(s, k[i]);
      if (j >= 0) s->slots[j].refs--;
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (miss != small) pdb_free(miss);
  pdb_free(got);
  return rc;
}

static void unref_chunks(RemoteState *s, const uint64_t *k, int n) {
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < n; i++) {
    int j = find_slot(s, k[i]);
    if (j >= 0) s->slots[j].refs--;
  }
  trim(s);
  pthread_mutex_unlock(&s->mu);
}

/* --- reads ------------------------------------------------------------------ */

/* The distinct chunks the N requests need, sorted, into *OUT (malloc). */
static int chunks_of(RemoteState *s, const pagedb_iovec *reqs, int n, uint64_t **out, int *nout) {
  int cap = 0, m = 0;
  uint64_t *k = NULL;
  for (int i = 0; i < n; i++) {
    if (reqs[i].off >= s->size || reqs[i].n == 0) continue;
    uint64_t end = reqs[i].off + reqs[i].n < s->size ? reqs[i].off + reqs[i].n : s->size;
    for (uint64_t c = reqs[i].off / s->chunk; c <= (end - 1) / s->chunk; c++) {
      if (m == cap) {
        cap = cap ? cap * 2 : 16;
        uint64_t *nk = pdb_realloc(k, (size_t)cap * sizeof *nk);
        if (!nk) {
          pdb_free(k);
          return PAGEDB_NOMEM;
        }
        k = nk;
      }
      k[m++] = c;
    }
  }
  /* Sort and deduplicate (insertion sort: batches are read in order). */
  for (int i = 1; i < m; i++) {
    uint64_t v = k[i];
    int j = i;
    while (j > 0 && k[j - 1] > v) k[j] = k[j - 1], j--;
    k[j] = v;
  }
  int u = 0;
  for (int i = 0; i < m; i++)
    if (u == 0 || k[u - 1] != k[i]) k[u++] = k[i];
  *out = k;
  *nout = u;
  return PAGEDB_OK;
}

/* Copy request R out of the held chunks H (K, N: sorted). */
static int copy_out(RemoteState *s, pagedb_iovec *r, const uint64_t *k, const RcHeld *h, int n) {
  uint8_t *b = r->buf;
  uint64_t off = r->off, left = r->n;
  while (left > 0 && off < s->size) {
    uint64_t c = off / s->chunk;
    int lo = 0, hi = n - 1;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (k[mid] < c) lo = mid + 1;
      else hi = mid;
    }
    assert(k[lo] == c);
    uint64_t in = off - c * s->chunk;
    uint64_t take = h[lo].len - in < left ? h[lo].len - in : left;
    memcpy(b, h[lo].data + in, (size_t)take);
    b += take;
    off += take;
    left -= take;
  }
  if (left > 0) {
    memset(b, 0, (size_t)left);   /* the xRead contract past the end */
    return PAGEDB_IOERR_SHORT_READ;
  }
  return PAGEDB_OK;
}

static int rm_read_batch(pagedb_file *f, pagedb_iovec *reqs, int n) {
  RemoteState *s = st(f);
  uint64_t *k = NULL;
  int nk = 0;
  int rc = chunks_of(s, reqs, n, &k, &nk);
  RcHeld *h = rc == PAGEDB_OK ? pdb_malloc((size_t)(nk ? nk : 1) * sizeof *h) : NULL;
  if (!h) {
    pdb_free(k);
    for (int i = 0; i < n; i++) reqs[i].rc = PAGEDB_NOMEM;
    return failed(s, PAGEDB_NOMEM, "out of memory reading a remote file");
  }
  rc = ref_chunks(s, k, nk, h);
  int first = PAGEDB_OK;
  for (int i = 0; i < n; i++) {
    reqs[i].rc = rc == PAGEDB_OK ? copy_out(s, &reqs[i], k, h, nk) : rc;
    if (reqs[i].rc != PAGEDB_OK && first == PAGEDB_OK) first = reqs[i].rc;
  }
  if (rc == PAGEDB_OK) unref_chunks(s, k, nk);
  pdb_free(h);
  pdb_free(k);
  return first;
}

static int rm_read(pagedb_file *f, void *buf, size_t n, uint64_t off) {
  RemoteState *s = st(f);
  size_t nseed = 0;
  const uint8_t *seed = s->untrusted ? rc_seed(s->cache, &nseed) : NULL;
  if (seed && off <= nseed && n <= nseed - off) {
    /* The object's first bytes, fetched from the server at open (the
    ** data file's header): never the shared cache's. */
    memcpy(buf, seed + off, n);
    return PAGEDB_OK;
  }
  pagedb_iovec r = { buf, n, off, PAGEDB_OK };
  return rm_read_batch(f, &r, 1);
}

/* The distinct chunks the N extents OFF[i], LEN[i] need, as chunks_of. */
static int chunks_of_extents(RemoteState *s, const uint64_t *off, const uint64_t *len, int n, uint64_t **k, int *nk) {
  pagedb_iovec small[16] = { { 0 } };
  pagedb_iovec *r = n <= 16 ? small : pdb_malloc((size_t)n * sizeof *r);
  if (!r) return PAGEDB_NOMEM;
  for (int i = 0; i < n; i++) r[i] = (pagedb_iovec){ NULL, (size_t)len[i], off[i], 0 };
  int rc = chunks_of(s, r, n, k, nk);
  if (r != small) pdb_free(r);
  return rc;
}

/* --- reads in place ------------------------------------------------------------ */

/* What xHold holds: chunks referenced until xRelease. */
typedef struct Hold {
  int n;
  uint64_t k[];
} Hold;

static int rm_hold(pagedb_file *f, const uint64_t *off, const uint64_t *len, int n, const void **out, void **hold) {
  RemoteState *s = st(f);
  *hold = NULL;
  uint64_t *k = NULL;
  int nk = 0;
  int rc = chunks_of_extents(s, off, len, n, &k, &nk);
  Hold *g = rc == PAGEDB_OK ? pdb_malloc(sizeof *g + (size_t)nk * sizeof g->k[0]) : NULL;
  RcHeld *h = g ? pdb_malloc((size_t)(nk ? nk : 1) * sizeof *h) : NULL;
  if (!h) {
    pdb_free(g);
    pdb_free(k);
    return failed(s, PAGEDB_NOMEM, "out of memory reading a remote file");
  }
  rc = ref_chunks(s, k, nk, h);
  if (rc == PAGEDB_OK) {
    for (int i = 0; i < n; i++) {
      out[i] = NULL;
      if (len[i] == 0 || off[i] >= s->size || len[i] > s->size - off[i]) continue;
      uint64_t c = off[i] / s->chunk;
      if ((off[i] + len[i] - 1) / s->chunk != c) continue;   /* spans two chunks */
      int lo = 0, hi = nk - 1;
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (k[mid] < c) lo = mid + 1;
        else hi = mid;
      }
      assert(k[lo] == c && h[lo].k == c);
      out[i] = h[lo].data + (off[i] - c * s->chunk);
    }
    g->n = nk;
    memcpy(g->k, k, (size_t)nk * sizeof *k);
    *hold = g;
  } else {
    pdb_free(g);
  }
  pdb_free(h);
  pdb_free(k);
  return rc;
}

static void rm_release(pagedb_file *f, void *hold) {
  Hold *g = hold;
  if (!g) return;
  unref_chunks(st(f), g->k, g->n);
  pdb_free(g);
}

/* --- maps --------------------------------------------------------------------- */

static int rm_map(pagedb_file *f, size_t n, const void **pp) {
  RemoteState *s = st(f);
  *pp = NULL;
  Region *g = pdb_calloc(1, sizeof *g);
  uint64_t nch = (n + s->chunk - 1) / s->chunk;
  if (g) {
    g->placed = pdb_calloc(nch ? nch : 1, 1);
    g->held = pdb_calloc(nch ? nch : 1, sizeof *g->held);
  }
  if (!g || !g->placed || !g->held) {
    if (g) pdb_free(g->placed), pdb_free(g->held);
    pdb_free(g);
    return failed(s, PAGEDB_NOMEM, "out of memory mapping a remote file");
  }
  /* No access until a chunk is placed: a stray touch faults at once. */
  void *m = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    pdb_free(g->placed);
    pdb_free(g->held);
    pdb_free(g);
    return failed(s, PAGEDB_IOERR_MMAP, "cannot reserve address space to map a remote file");
  }
  g->base = m;
  g->len = n;
  pthread_mutex_lock(&s->mu);
  g->next = s->regions;
  s->regions = g;
  pthread_mutex_unlock(&s->mu);
  *pp = m;
  return PAGEDB_OK;
}

static int rm_unmap(pagedb_file *f, const void *p, size_t n) {
  RemoteState *s = st(f);
  pthread_mutex_lock(&s->mu);
  Region **pp = &s->regions;
  while (*pp && (*pp)->base != p) pp = &(*pp)->next;
  Region *g = *pp;
  if (g) *pp = g->next;
  pthread_mutex_unlock(&s->mu);
  if (!g) return PAGEDB_OK;
  /* One munmap drops every placed chunk's mapping, and so its lock. */
  munmap(g->base, g->len);
  (void)n;
  pdb_free(g->placed);
  pdb_free(g->held);
  pdb_free(g);
  return PAGEDB_OK;
}

static int rm_map_fill(pagedb_file *f, const void *map, const uint64_t *off, const uint64_t *len, int n) {
  RemoteState *s = st(f);
  uint64_t *k = NULL;
  int nk = 0;
  int rc = chunks_of_extents(s, off, len, n, &k, &nk);
  if (rc != PAGEDB_OK) return failed(s, rc, "out of memory mapping a remote file");
  /* Placement is serialised per file: two threads must not map one chunk
  ** twice into the same place. */
  pthread_mutex_lock(&s->mu);
  Region *g = s->regions;
  while (g && g->base != map) g = g->next;
  if (!g) {
    pthread_mutex_unlock(&s->mu);
    pdb_free(k);
    return failed(s, PAGEDB_MISUSE, "xMapFill of a map this file did not make");
  }
  int m = 0;
  for (int i = 0; i < nk; i++) {
    uint64_t clen = s->size - k[i] * s->chunk < s->chunk ? s->size - k[i] * s->chunk : s->chunk;
    if (k[i] * s->chunk + ((clen + 4095) & ~(uint64_t)4095) > g->len) {
      pthread_mutex_unlock(&s->mu);
      pdb_free(k);
      return failed(s, PAGEDB_IOERR_MMAP, "a range past the end of the map");
    }
    if (!g->placed[k[i]]) k[m++] = k[i];
  }
  void **at = m ? pdb_malloc((size_t)m * sizeof *at) : NULL;
  RcHeld *h = m ? pdb_malloc((size_t)m * sizeof *h) : NULL;
  char msg[RMT_ERR_MAX];
  if (m && (!at || !h)) {
    rc = PAGEDB_NOMEM;
    snprintf(msg, sizeof msg, "out of memory mapping a remote file");
  }
  for (int i = 0; i < m && rc == PAGEDB_OK; i++) at[i] = g->base + k[i] * s->chunk;
  if (rc == PAGEDB_OK && m) rc = rc_hold(s->cache, k, m, at, h, msg, sizeof msg);
  for (int i = 0; i < m && rc == PAGEDB_OK; i++) {
    g->placed[k[i]] = 1;
    g->held[k[i]] = h[i];
  }
  if (rc != PAGEDB_OK) snprintf(s->err, sizeof s->err, "%s", msg);
  pthread_mutex_unlock(&s->mu);
  pdb_free(at);
  pdb_free(h);
  pdb_free(k);
  return rc;
}

/* --- fetching again (untrusted bytes) ------------------------------------------ */

/* Write the server's bytes B (N) over held chunk H in place, if it holds
** others: 1 if it did.  Every held byte of an untrusted file is private
** memory of this process (cache.c, hold_sealed, hold_mem), read-only
** until now.  A thread reading H meanwhile sees the same bytes wherever
** they were right, and mixed ones only where they were wrong (then its
** own check fails and it fetches again). */
static int patch(const RcHeld *h, const uint8_t *b, size_t n) {
  if (!h->base || h->len != n || memcmp(h->data, b, n) == 0) return 0;
  size_t span = (n + 4095) & ~(size_t)4095;
  if (mprotect(h->base, span ? span : 4096, PROT_READ | PROT_WRITE) != 0) return 0;
  memcpy((void *)h->data, b, n);
  mprotect(h->base, span ? span : 4096, PROT_READ);
  return 1;
}

/* Whether every copy of bytes [A, Z) of chunk C -- the shared file's, this
** file's held ones -- equals the server's SEED[A..Z). */
static int agree(RemoteState *s, uint64_t c, uint64_t a, uint64_t z, const uint8_t *seed) {
  uint64_t in = a - c * s->chunk;
  size_t n = (size_t)(z - a);
  if (rc_file_agrees(s->cache, c, in, seed + a, n) == 0) return 0;
  pthread_mutex_lock(&s->mu);
  int j = find_slot(s, c), ok = j < 0 || memcmp(s->slots[j].h.data + in, seed + a, n) == 0;
  for (Region *g = s->regions; g && ok; g = g->next)
    if (c < (g->len + s->chunk - 1) / s->chunk && g->placed[c]) ok = memcmp(g->held[c].data + in, seed + a, n) == 0;
  pthread_mutex_unlock(&s->mu);
  return ok;
}

static int rm_refetch(pagedb_file *f, uint64_t off, uint64_t len) {
  RemoteState *s = st(f);
  if (!s->untrusted || len == 0 || off >= s->size) return PAGEDB_OK;   /* nothing held that others wrote */
  uint64_t end = len > s->size - off ? s->size : off + len;
  size_t nseed = 0;
  const uint8_t *seed = rc_seed(s->cache, &nseed);
  for (uint64_t c = off / s->chunk; c <= (end - 1) / s->chunk; c++) {
    /* Bytes among the object's first ones, which the open fetched from
    ** the server (the data file's header): no request if every copy of
    ** them agrees (then the server's bytes are what was read). */
    uint64_t a = off > c * s->chunk ? off : c * s->chunk;
    uint64_t z = end < (c + 1) * s->chunk ? end : (c + 1) * s->chunk;
    if (seed && z <= nseed && agree(s, c, a, z, seed)) continue;
    uint8_t *b = NULL;
    size_t n = 0;
    int differs = 0;
    char msg[RMT_ERR_MAX];
    int rc = rc_refetch(s->cache, c, &b, &n, &differs, msg, sizeof msg);
    if (rc != PAGEDB_OK) return failed(s, rc, msg);
    pthread_mutex_lock(&s->mu);
    int j = find_slot(s, c);
    if (j >= 0 && patch(&s->slots[j].h, b, n)) differs = 1;
    for (Region *g = s->regions; g; g = g->next)
      if (c < (g->len + s->chunk - 1) / s->chunk && g->placed[c] && patch(&g->held[c], b, n)) differs = 1;
    pthread_mutex_unlock(&s->mu);
    pdb_free(b);
    if (differs == 1) {
      atomic_fetch_add(&rmt_stats.chunk_bad, 1);
      atomic_fetch_add(&rmt_stats.chunk_forged, 1);
    }
  }
  return PAGEDB_OK;
}

/* --- the rest of the methods ------------------------------------------------- */

static int rm_readonly(pagedb_file *f) {
  return failed(st(f), PAGEDB_READONLY, "a remote dataset is read-only");
}
static int rm_write(pagedb_file *f, const void *b, size_t n, uint64_t off) {
  (void)b, (void)n, (void)off;
  return rm_readonly(f);
}
static int rm_truncate(pagedb_file *f, uint64_t size) {
  (void)size;
  return rm_readonly(f);
}
static int rm_sync(pagedb_file *f, int flags) {
  (void)flags;
  return rm_readonly(f);
}
static int rm_lock(pagedb_file *f, int level) {
  return level == PAGEDB_LOCK_NONE ? PAGEDB_OK : rm_readonly(f);
}
static int rm_size(pagedb_file *f, uint64_t *size) {
  *size = st(f)->size;
  return PAGEDB_OK;
}
static int rm_sector(pagedb_file *f) {
  (void)f;
  return 4096;
}
static int rm_caps(pagedb_file *f) {
  return PAGEDB_IOCAP_MMAP | PAGEDB_IOCAP_BATCH | PAGEDB_IOCAP_IMMUTABLE
         | (st(f)->untrusted ? PAGEDB_IOCAP_UNTRUSTED : 0);
}
static int rm_advise(pagedb_file *f, uint64_t off, uint64_t n, int hint) {
  (void)f, (void)off, (void)n;
  return hint >= 0 && hint <= PAGEDB_ADVISE_DONTNEED ? PAGEDB_OK : PAGEDB_MISUSE;
}
static int rm_errno(pagedb_file *f) {
  (void)f;
  return 0;
}
static int rm_errmsg(pagedb_file *f, char *buf, size_t n) {
  RemoteState *s = st(f);
  pthread_mutex_lock(&s->mu);
  snprintf(buf, n, "%s", s->err);
  pthread_mutex_unlock(&s->mu);
  return PAGEDB_OK;
}

static int rm_close(pagedb_file *f) {
  RemoteState *s = st(f);
  if (!s) return PAGEDB_OK;
  while (s->regions) rm_unmap(f, s->regions->base, s->regions->len);
  for (int i = 0; i < s->nslot; i++) rc_release(&s->slots[i].h, 0);
  pdb_free(s->slots);
  pdb_free(s->slot_of);
  rc_close(s->cache);
  rmt_close(s->obj);
  pthread_mutex_destroy(&s->mu);
  pdb_free(s);
  ((RemoteFile *)f)->s = NULL;
  return PAGEDB_OK;
}

static const pagedb_io_methods rm_methods = {
  .iVersion = 5,
  .xClose = rm_close,
  .xRead = rm_read,
  .xWrite = rm_write,
  .xTruncate = rm_truncate,
  .xSync = rm_sync,
  .xFileSize = rm_size,
  .xLock = rm_lock,
  .xSectorSize = rm_sector,
  .xDeviceCharacteristics = rm_caps,
  .xMap = rm_map,
  .xUnmap = rm_unmap,
  .xReadBatch = rm_read_batch,
  .xAdvise = rm_advise,
  .xLastErrno = rm_errno,
  .xErrmsg = rm_errmsg,
  .xMapFill = rm_map_fill,
  .xHold = rm_hold,
  .xRelease = rm_release,
  .xRefetch = rm_refetch,
};

/* --- the VFS ------------------------------------------------------------------ */

/* Whether PATH is a URL of VFS's scheme; if not, the reason is set. */
static int own_scheme(pagedb_vfs *vfs, const char *path) {
  char scheme[32];
  if (pdb_path_scheme(path, scheme, sizeof scheme) && strcmp(scheme, vfs->zName) == 0) return 1;
  pdb_os_set_why("%s: not a %s:// URL: the %s VFS opens %s:// URLs only", path, vfs->zName, vfs->zName, vfs->zName);
  return 0;
}

static int rm_open(pagedb_vfs *vfs, const char *path, pagedb_file *f, int flags) {
  RemoteFile *p = (RemoteFile *)f;
  char msg[RMT_ERR_MAX];
  if (flags & (PAGEDB_VFS_READWRITE | PAGEDB_VFS_CREATE)) {
    pdb_os_set_why("%s: a remote dataset is read-only: open it with PAGEDB_OPEN_READONLY", path);
    return PAGEDB_READONLY;   /* whatever the path: these VFSes never write */
  }
  if (!own_scheme(vfs, path)) return PAGEDB_CANTOPEN;
  RemoteState *s = pdb_calloc(1, sizeof *s);
  if (!s) return PAGEDB_NOMEM;
  pthread_mutex_init(&s->mu, NULL);
  int rc = rmt_open(path, &s->obj, msg, sizeof msg);
  if (rc == PAGEDB_OK)   /* small random reads (index, catalog): small chunks */
    rc = (flags & PAGEDB_VFS_PLAIN ? rc_open_small : rc_open)(s->obj, &s->cache, msg, sizeof msg);
  if (rc != PAGEDB_OK) {
    pdb_os_set_why("%s", msg);
    rmt_close(s->obj);
    pthread_mutex_destroy(&s->mu);
    pdb_free(s);
    return rc;
  }
  s->size = rmt_size(s->obj);
  s->chunk = rc_chunk_size(s->cache);
  s->untrusted = rc_untrusted(s->cache);
  s->nchunk = (s->size + s->chunk - 1) / s->chunk;
  if (!(s->slot_of = pdb_malloc((size_t)(s->nchunk ? s->nchunk : 1) * sizeof *s->slot_of))) {
    rc_close(s->cache);
    rmt_close(s->obj);
    pthread_mutex_destroy(&s->mu);
    pdb_free(s);
    return PAGEDB_NOMEM;
  }
  for (uint64_t i = 0; i < s->nchunk; i++) s->slot_of[i] = -1;
  uint64_t keep = rc_bound(s->cache) / s->chunk / 2;
  s->keep = keep < KEEP_MIN ? KEEP_MIN : keep > KEEP_MAX ? KEEP_MAX : (int)keep;
  p->s = s;
  p->base.pMethods = &rm_methods;
  return PAGEDB_OK;
}

static int rm_access(pagedb_vfs *vfs, const char *path, int *exists) {
  RmtObject *o = NULL;
  *exists = 0;
  if (!own_scheme(vfs, path)) return PAGEDB_CANTOPEN;
  int known = rmt_recent(path);   /* xAccessAhead's answer, or an earlier HEAD's */
  if (known >= 0) {
    *exists = known;
    return PAGEDB_OK;
  }
  char msg[RMT_ERR_MAX];
  int rc = rmt_open(path, &o, msg, sizeof msg);
  rmt_close(o);
  /* A 404 says "absent"; any other failure cannot tell, and says why
  ** (pagedb_open reports it as the open's failure). */
  *exists = rc == PAGEDB_OK;
  if (rc == PAGEDB_OK || rc == PAGEDB_CANTOPEN_NOENT) return PAGEDB_OK;
  pdb_os_set_why("%s", msg);
  return rc;
}

/* The HEADs of the files pagedb_open is about to ask about, side by side. */
static void rm_access_ahead(pagedb_vfs *vfs, const char *const *paths, int n) {
  const char *mine[8];
  int k = 0;
  for (int i = 0; i < n && k < 8; i++)
    if (own_scheme(vfs, paths[i])) mine[k++] = paths[i];
  if (k > 1) rmt_head_ahead(mine, k);
}

static int rm_delete(pagedb_vfs *vfs, const char *path, int syncDir) {
  (void)vfs, (void)syncDir;
  pdb_os_set_why("%s: a remote dataset is read-only", path);
  return PAGEDB_READONLY;
}

static int rm_sync_dir(pagedb_vfs *vfs, const char *path) {
  (void)vfs, (void)path;
  return PAGEDB_READONLY;
}

#define RM_VFS(name) { .iVersion = 3, .szFile = sizeof(RemoteFile), .zName = name, \
    .xOpen = rm_open, .xDelete = rm_delete, .xAccess = rm_access, .xSyncDir = rm_sync_dir,     \
    .xAccessAhead = rm_access_ahead }
static pagedb_vfs http_vfs = RM_VFS("http");
static pagedb_vfs https_vfs = RM_VFS("https");
static pagedb_vfs s3_vfs = RM_VFS("s3");

int rmt_file_validator(pagedb_file *f, char *out, size_t cap) {
  if (cap) out[0] = 0;
  if (!f || f->pMethods != &rm_methods) return 0;
  snprintf(out, cap, "%s", rmt_validator(st(f)->obj));
  return 1;
}

pagedb_vfs *pdb_http_vfs(void) { return &http_vfs; }
pagedb_vfs *pdb_https_vfs(void) { return &https_vfs; }
pagedb_vfs *pdb_s3_vfs(void) { return &s3_vfs; }

int pagedb_remote_stats(pagedb_remote_counters *out) {
  if (!out) return PAGEDB_MISUSE;
  out->requests = atomic_load(&rmt_stats.requests);
  out->bytes = atomic_load(&rmt_stats.bytes);
  out->retries = atomic_load(&rmt_stats.retries);
  out->failures = atomic_load(&rmt_stats.failures);
  out->chunk_fetches = atomic_load(&rmt_stats.chunk_fetches);
  out->chunk_hits = atomic_load(&rmt_stats.chunk_hits);
  out->chunk_bad = atomic_load(&rmt_stats.chunk_bad);
  out->chunk_forged = atomic_load(&rmt_stats.chunk_forged);
  out->evictions = atomic_load(&rmt_stats.evictions);
  out->uncached = atomic_load(&rmt_stats.uncached);
  out->cred_refreshes = atomic_load(&rmt_stats.cred_refreshes);
  out->cred_refresh_failures = atomic_load(&rmt_stats.cred_refresh_failures);
  return PAGEDB_OK;
}
