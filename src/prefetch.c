/*
** prefetch.c -- reading ahead of a consumer along the order it gave.
**
** A training loop reads one sample at a time in an order it knows in
** advance (pagedb_order).  Given that order, a reader turns the single reads
** into batched I/O that runs while the consumer works:
**
**   copy mode on a file that bypasses the page cache (the direct VFS): two
**     windows of consecutive positions, each holding at most half the
**     allowed bytes.  A worker thread reads a queued window with one
**     batched read (one io_uring submission) while the consumer takes its
**     samples from the other.  When the
**     consumer enters a window, the one it left is queued again with the
**     positions after the last queued: so the next window's I/O overlaps
**     the consumer's work on this one.
**   copy mode on a file read through the page cache, and zero-copy mode:
**     the kernel is told (POSIX_FADV_WILLNEED, MADV_WILLNEED) of the next
**     positions' bytes, a window at a time, and reads them into its cache
**     in the background; the reads then copy from there, or map it.  A
**     second copy through a window would only cost memory bandwidth when
**     the bytes are cached already.
**
** INVARIANTS
**
**   1. Windows cover disjoint runs of positions, in increasing order, all
**      at or after the consumer's position except the one it is in; a
**      window is recycled only when the consumer's position has passed its
**      end, so a pointer handed out stays valid until the next call (the
**      contract of pagedb_read and pagedb_read_batch).
**   2. The worker touches a window only in state PF_LOADING; the consumer
**      plans and serves windows in the other states.  States change under
**      mu.
**   3. Read-ahead never reports a failure: a window that fails to load, or
**      a position no window holds (a missing id, a batch larger than the
**      windows), is read by the usual path, which reports what it meets.
**   4. On a VFS that reads in place (xHold: the remote VFSes, whose bytes
**      are in mapped cache chunks already) a copy-mode window holds the
**      VFS's bytes instead of copying them: its at[] point into them, and
**      the hold is given back when the window is emptied (invariant 1
**      says when), so only the windows' chunks are pinned.  An extent the
**      VFS cannot give in place (across two chunks) is copied as before.
*/
#include "api.h"

#include <unistd.h>

enum { PF_EMPTY, PF_QUEUED, PF_LOADING, PF_READY, PF_FAILED };

/*
** Plan positions from POS on: at least one, at most MAX, within BUDGET
** bytes; their extents in OFF and LEN.  Stops before an id that cannot be
** read, so that the usual path reports it.
*/
static int64_t plan(pagedb_reader *r, int64_t pos, int64_t max, uint64_t budget, uint64_t *off, uint64_t *len) {
  Prefetch *pf = &r->pf;
  uint64_t bytes = 0;
  int64_t k = 0;
  while (pos + k < pf->n && k < max) {
    const uint64_t *s = api_find(r, pf->ids[pos + k]);
    if (!s || s == DX_BAD || !slot_has(s, pf->field)) break;
    uint64_t o, l;
    api_extent(r->db, s, pf->field, &o, &l);
    if (o >= PDB_MAX_DATA) break;   /* a part's sample: read by the usual path (parts.c) */
    if (k > 0 && bytes + l > budget) break;
    off[k] = o;
    len[k] = l;
    bytes += l;
    k++;
  }
  return k;
}

static int load(pagedb_reader *r, PfWindow *w) {
  Pager *pg = r->db->pager;
  int bad, n = (int)w->count;
  if (!pager_can_hold(pg)) return pager_fetch_batch(pg, &r->pf.err, n, w->off, w->len, &w->buf, &w->cap, w->at, &bad);
  /* In place (invariant 4): the window holds the VFS's bytes; only the
  ** extents it cannot give in place are copied into the window's buffer. */
  assert(!w->hold);
  int rc = pager_hold(pg, &r->pf.err, n, w->off, w->len, w->at, &w->hold);
  int m = 0;
  for (int i = 0; i < n && rc == PAGEDB_OK; i++) m += w->at[i] == NULL;
  if (rc != PAGEDB_OK || m == 0) return rc;
  uint64_t *o = pdb_malloc((size_t)m * 2 * sizeof *o);
  const uint8_t **at = pdb_malloc((size_t)m * sizeof *at);
  if (!o || !at) {
    rc = pdb_err(r->db, &r->pf.err, PAGEDB_NOMEM, "out of memory reading ahead");
  } else {
    for (int i = 0, j = 0; i < n; i++)
      if (!w->at[i]) o[j] = w->off[i], o[m + j] = w->len[i], j++;
    rc = pager_fetch_batch(pg, &r->pf.err, m, o, o + m, &w->buf, &w->cap, at, &bad);
    for (int i = 0, j = 0; i < n && rc == PAGEDB_OK; i++)
      if (!w->at[i]) w->at[i] = at[j++];
  }
  pdb_free(o);
  pdb_free(at);
  if (rc != PAGEDB_OK) {
    pager_release(pg, w->hold);
    w->hold = NULL;
  }
  return rc;
}

/* Make window W empty, giving back what it holds.  Not while it loads. */
static void win_empty(pagedb_reader *r, PfWindow *w) {
  assert(w->state != PF_LOADING);
  pager_release(r->db->pager, w->hold);
  w->hold = NULL;
  w->state = PF_EMPTY;
}

/* The queued window with the lowest positions, or NULL.  mu held. */
static PfWindow *next_queued(Prefetch *pf) {
  PfWindow *best = NULL;
  for (int i = 0; i < 2; i++) {
    PfWindow *w = &pf->win[i];
    if (w->state == PF_QUEUED && (!best || w->first < best->first)) best = w;
  }
  return best;
}

static void *worker(void *arg) {
  pagedb_reader *r = arg;
  Prefetch *pf = &r->pf;
  pthread_mutex_lock(&pf->mu);
  while (!pf->stop) {
    PfWindow *w = next_queued(pf);
    if (!w) {
      pthread_cond_wait(&pf->cv, &pf->mu);
      continue;
    }
    w->state = PF_LOADING;
    pthread_mutex_unlock(&pf->mu);
    int rc = load(r, w);
    pthread_mutex_lock(&pf->mu);
    w->state = rc == PAGEDB_OK ? PF_READY : PF_FAILED;
    pthread_cond_broadcast(&pf->cv);
  }
  pthread_mutex_unlock(&pf->mu);
  return NULL;
}

/* Recycle the windows that end at or before position FROM, which the
** consumer has passed, and queue the next ones. */
static void refill(pagedb_reader *r, int64_t from) {
  Prefetch *pf = &r->pf;
  int empty[2], nempty = 0;
  pthread_mutex_lock(&pf->mu);
  for (int i = 0; i < 2; i++) {
    PfWindow *w = &pf->win[i];
    if (w->state != PF_EMPTY && w->first + w->count <= from) {
      while (w->state == PF_LOADING) pthread_cond_wait(&pf->cv, &pf->mu);
      win_empty(r, w);
    }
    if (w->state == PF_EMPTY) empty[nempty++] = i;
  }
  pthread_mutex_unlock(&pf->mu);
  if (nempty == 0) return;
  /* Planning reads only the order and the index: no lock (invariant 2). */
  int queued = 0;
  for (int e = 0; e < nempty; e++) {
    PfWindow *w = &pf->win[empty[e]];
    if (pf->next < from) pf->next = from;
    int64_t k = 0;
    while (pf->next < pf->n && (k = plan(r, pf->next, PF_MAX, pf->window / 2, w->off, w->len)) == 0)
      pf->next++;   /* a position the usual path must read (invariant 3) */
    if (k == 0) break;
    w->first = pf->next;
    w->count = k;
    pf->next += k;
    queued |= 1 << empty[e];
  }
  if (!queued) return;
  pthread_mutex_lock(&pf->mu);
  for (int i = 0; i < 2; i++)
    if (queued & (1 << i)) pf->win[i].state = PF_QUEUED;
  pthread_cond_broadcast(&pf->cv);
  pthread_mutex_unlock(&pf->mu);
}

/* The window holding position POS, loaded (by this thread if there is no
** worker); NULL if no window holds it or its read failed. */
static PfWindow *loaded(pagedb_reader *r, int64_t pos) {
  Prefetch *pf = &r->pf;
  PfWindow *w = NULL;
  for (int i = 0; i < 2 && !w; i++) {
    PfWindow *c = &pf->win[i];
    if (c->state != PF_EMPTY && pos >= c->first && pos < c->first + c->count) w = c;
  }
  if (!w) return NULL;
  pthread_mutex_lock(&pf->mu);
  if (!pf->thread_on && w->state == PF_QUEUED) {
    w->state = PF_LOADING;
    pthread_mutex_unlock(&pf->mu);
    int rc = load(r, w);
    pthread_mutex_lock(&pf->mu);
    w->state = rc == PAGEDB_OK ? PF_READY : PF_FAILED;
  }
  while (w->state == PF_QUEUED || w->state == PF_LOADING) pthread_cond_wait(&pf->cv, &pf->mu);
  int ready = w->state == PF_READY;
  pthread_mutex_unlock(&pf->mu);
  return ready ? w : NULL;
}

/* Whether R's read-ahead goes through windows of its own. */
static int windowed(pagedb_reader *r) {
  return r->mode == PAGEDB_READ_COPY && (pager_align(r->db->pager) > 1 || pager_is_remote(r->db->pager));
}

/* Without windows: advise the kernel of the bytes of the positions from
** POS on, once per window. */
static void hint(pagedb_reader *r, int64_t pos) {
  Prefetch *pf = &r->pf;
  if (pos < pf->hinted || pos >= pf->n) return;
  uint64_t off[64], len[64];
  int64_t k = plan(r, pos, 64, pf->window, off, len);
  if (r->mode == PAGEDB_READ_MMAP && pager_is_remote(r->db->pager)) {
    /* A remote map is filled ahead, the window's chunks fetched together;
    ** a failure is the read's to report. */
    pdb_msg ignored;
    pager_map_fill(r->db->pager, &ignored, (int)k, off, len);
  } else if (r->mode == PAGEDB_READ_MMAP) {
    if (api_hint_batch(r, (int)k, off, len))
      for (int64_t i = 0; i < k; i++) pager_map_willneed(r->db->pager, off[i], len[i]);
  } else {
    for (int64_t i = 0; i < k; i++) pager_file_willneed(r->db->pager, off[i], len[i]);
  }
  pf->hinted = pos + (k ? k : 1);
}

/*
** A reader inherited through fork(): its worker thread is the parent's and
** does not exist here, and its mutex may have been held at the fork.  The
** child drops the read-ahead (leaking its buffers, which the parent owns
** the originals of) and reads by the usual path.  Returns 1 if dropped.
*/
static int forked(Prefetch *pf) {
  if (!pf->on || pf->fork_gen == api_fork_gen()) return 0;
  memset(pf, 0, sizeof *pf);
  return 1;
}

int pf_read(pagedb_reader *r, int64_t id, int field, const void **data, size_t *n) {
  Prefetch *pf = &r->pf;
  if (forked(pf)) return 0;
  if (field != pf->field || pf->pos >= pf->n || pf->ids[pf->pos] != id) return 0;
  int64_t pos = pf->pos++;
  if (!windowed(r)) {
    hint(r, pos);
    return 0;   /* the bytes come from the cache or the map as usual */
  }
  refill(r, pos);
  PfWindow *w = loaded(r, pos);
  if (!w) return 0;
  *data = w->at[pos - w->first];
  *n = w->len[pos - w->first];
  return 1;
}

int pf_read_batch(pagedb_reader *r, const int64_t *ids, int n, int field, const void **data, size_t *sizes) {
  Prefetch *pf = &r->pf;
  if (forked(pf)) return 0;
  if (field != pf->field || n > pf->n - pf->pos) return 0;
  for (int i = 0; i < n; i++)
    if (pf->ids[pf->pos + i] != ids[i]) return 0;
  int64_t pos = pf->pos;
  pf->pos += n;
  if (!windowed(r)) {
    hint(r, pf->pos);   /* the batch itself is read as usual */
    return 0;
  }
  refill(r, pos);
  PfWindow *w = NULL;
  for (int i = 0; i < n; i++) {
    int64_t p = pos + i;
    if (!w || p >= w->first + w->count) w = loaded(r, p);
    if (!w) return 0;
    data[i] = w->at[p - w->first];
    sizes[i] = w->len[p - w->first];
  }
  return 1;
}

void pf_free(pagedb_reader *r) {
  Prefetch *pf = &r->pf;
  if (!pf->on || forked(pf)) return;
  if (pf->thread_on) {
    pthread_mutex_lock(&pf->mu);
    pf->stop = 1;
    pthread_cond_broadcast(&pf->cv);
    pthread_mutex_unlock(&pf->mu);
    pthread_join(pf->thread, NULL);
  }
  for (int i = 0; i < 2; i++)
    if (pf->win[i].state != PF_LOADING) win_empty(r, &pf->win[i]);
  pthread_mutex_destroy(&pf->mu);
  pthread_cond_destroy(&pf->cv);
  for (int i = 0; i < 2; i++) {
    pdb_buf_free(pf->win[i].buf);
    pdb_free(pf->win[i].at);
    pdb_free(pf->win[i].off);
    pdb_free(pf->win[i].len);
  }
  pdb_free(pf->ids);
  memset(pf, 0, sizeof *pf);
}

int pagedb_reader_prefetch(pagedb_reader *r, const int64_t *ids, int64_t n, int field, size_t window) {
  if (!r) return PAGEDB_MISUSE;
  pagedb *db = r->db;
  pf_free(r);
  if (n == 0 || window == 0) return PAGEDB_OK;
  if (n < 0 || !ids) return pdb_err(db, &r->err, PAGEDB_MISUSE, "%s: pagedb_reader_prefetch: %lld ids", db->path, (long long)n);
  if (field < 0 || field >= db->nfield)
    return pdb_err(db, &r->err, PAGEDB_RANGE, "%s: no field number %d (the dataset has %d)", db->path, field, db->nfield);
  if (!api_is_bytes(db, field))
    return pdb_err(db, &r->err, PAGEDB_MISMATCH, "%s: field '%s' is a scalar: nothing to read ahead", db->path,
                   db->fields[field].name);
  Prefetch *pf = &r->pf;
  pthread_mutex_init(&pf->mu, NULL);
  pthread_cond_init(&pf->cv, NULL);
  pf->on = 1;
  pf->fork_gen = api_fork_gen();
  int ok = (pf->ids = pdb_malloc((size_t)n * sizeof *ids)) != NULL;
  for (int i = 0; i < 2 && ok && windowed(r); i++) {
    PfWindow *w = &pf->win[i];
    w->at = pdb_malloc(PF_MAX * sizeof *w->at);
    w->off = pdb_malloc(PF_MAX * sizeof *w->off);
    w->len = pdb_malloc(PF_MAX * sizeof *w->len);
    ok = w->at && w->off && w->len;
  }
  if (!ok) {
    pf_free(r);
    return pdb_err(db, &r->err, PAGEDB_NOMEM, "out of memory keeping an order of %lld ids", (long long)n);
  }
  memcpy(pf->ids, ids, (size_t)n * sizeof *ids);
  pf->n = n;
  pf->field = field;
  pf->window = window;
  /* Without a worker the windows are read when first needed: batched, but
  ** not overlapped with the consumer. */
  if (windowed(r)) pf->thread_on = pthread_create(&pf->thread, NULL, worker, r) == 0;
  return PAGEDB_OK;
}
