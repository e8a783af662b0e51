/*
** main.c -- opening, closing, the schema and commit.
**
** Opening loads the whole committed catalog into the in-memory index (one
** scan of the sample table), checking every extent against the page table
** and the file, so that reads afterwards need no SQL and trust nothing.
**
** Commit is the ordered half of the pager's invariants: the runs of the
** written prefix are inserted into the catalog's open transaction (mostly
** in advance, by the catalog thread), the data file is synced, the
** transaction commits, and only then do the samples become visible.
*/
#include "api.h"
#include "dict.h"
#include "os.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

/* --- the catalog thread ------------------------------------------------- */

static void append_runs(PageRecs **list, PageDone *runs) {
  while (*list) list = (PageRecs **)&(*list)->d.next;
  *list = (PageRecs *)runs;
}

/* Roll the open transaction back and put the runs it held back in front
** of todo, in page order, to be inserted again.  db->cat_mu held. */
static void abandon(pagedb *db) {
  cat_rollback(db->cat);
  if (!db->inserted) return;
  *db->inserted_tail = db->todo;
  db->todo = db->inserted;
  db->inserted = NULL;
  db->inserted_tail = &db->inserted;
}

/* Insert every run in todo into the open transaction.  db->cat_mu held.
** On failure the transaction is abandoned and every run waits in todo
** again, in page order, for the next commit to retry. */
static int insert_todo(pagedb *db, pdb_msg *m) {
  int rc = PAGEDB_OK;
  append_runs(&db->todo, pager_take(db->pager));
  while (db->todo) {
    PageRecs *r = db->todo;
    rc = cat_insert_run(db->cat, m, &r->d, r->slots, db->fields, db->nfield, pager_page_size(db->pager));
    if (rc != PAGEDB_OK) break;
    db->todo = (PageRecs *)r->d.next;
    r->d.next = NULL;
    *db->inserted_tail = r;
    db->inserted_tail = (PageRecs **)&r->d.next;
  }
  if (rc != PAGEDB_OK) abandon(db);
  return rc;
}

static void *catalog_thread(void *arg) {
  pagedb *db = arg;
  pdb_msg scratch = { 0 };
  pthread_mutex_lock(&db->wake_mu);
  for (;;) {
    while (!db->wake && !db->stop) pthread_cond_wait(&db->wake_cv, &db->wake_mu);
    if (db->stop) break;
    db->wake = 0;
    pthread_mutex_unlock(&db->wake_mu);
    pthread_mutex_lock(&db->cat_mu);
    /* A failure here is not reported: commit retries the same runs and
    ** reports what it meets. */
    if (!db->todo) insert_todo(db, &scratch);
    pthread_mutex_unlock(&db->cat_mu);
    pthread_mutex_lock(&db->wake_mu);
  }
  pthread_mutex_unlock(&db->wake_mu);
  return NULL;
}

void api_wake(pagedb *db) {
  pthread_mutex_lock(&db->wake_mu);
  db->wake = 1;
  pthread_cond_signal(&db->wake_cv);
  pthread_mutex_unlock(&db->wake_mu);
}

static void stop_thread(pagedb *db) {
  pthread_mutex_lock(&db->wake_mu);
  int on = db->thread_on;
  db->stop = 1;
  db->thread_on = 0;
  pthread_cond_signal(&db->wake_cv);
  pthread_mutex_unlock(&db->wake_mu);
  if (on) pthread_join(db->thread, NULL);
}

void api_start_thread(pagedb *db) {
  pthread_mutex_lock(&db->wake_mu);
  if (!db->thread_on && !db->stop) {
    /* Without a thread, commit does all inserts itself: slower, not wrong. */
    db->thread_on = pthread_create(&db->thread, NULL, catalog_thread, db) == 0;
  }
  pthread_mutex_unlock(&db->wake_mu);
}

/* --- commit ------------------------------------------------------------- */

static void free_runs(PageRecs *r) {
  while (r) {
    PageRecs *next = (PageRecs *)r->d.next;
    pdb_free(r);
    r = next;
  }
}

int api_usable(pagedb *db, pdb_msg *m) {
  if (db->failed) return pdb_err(db, m, PAGEDB_MISUSE, "the handle's open failed; only close it");
  int broken = atomic_load(&db->broken);
  if (broken)
    return pdb_err(db, m, broken, "%s: an earlier failure made the handle unusable (%s); close and reopen it",
                   db->path, pagedb_errstr(broken));
  return PAGEDB_OK;
}

/*
** Fork detection without a system call per check.  getpid() is one (glibc
** stopped caching it), and api_own runs on every writer call: four times a
** sample, a quarter of a W-small ingest's system time.  A child made by
** fork() runs on_fork_child before it returns, so a handle whose
** generation is the process's current one was opened in this process.
*/
static _Atomic unsigned fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void on_fork_child(void) { atomic_fetch_add_explicit(&fork_gen, 1, memory_order_relaxed); }
static void fork_init(void) { pthread_atfork(NULL, NULL, on_fork_child); }

unsigned api_fork_gen(void) {
  pthread_once(&fork_once, fork_init);
  return atomic_load_explicit(&fork_gen, memory_order_relaxed);
}

int api_own(pagedb *db, pdb_msg *m) {
  if (LIKELY(db->fork_gen == api_fork_gen())) return PAGEDB_OK;
  if (db->pid != getpid())
    return pdb_err(db, m, PAGEDB_MISUSE,
                   "%s: this handle was opened by process %ld; process %ld (a fork) may read through it but not write",
                   db->path, (long)db->pid, (long)getpid());
  return PAGEDB_OK;
}

/* Stage in the open catalog transaction what makes the index file valid
** (XM all zero: no valid index). */
static int stage_ix_meta(pagedb *db, pdb_msg *m, const DxMeta *xm) {
  int rc = cat_stage_meta(db->cat, m, "index_id", (int64_t)xm->id);
  if (rc == PAGEDB_OK) rc = cat_stage_meta(db->cat, m, "index_dir", (int64_t)xm->dir);
  if (rc == PAGEDB_OK) rc = cat_stage_meta(db->cat, m, "index_len", (int64_t)xm->len);
  if (rc == PAGEDB_OK) rc = cat_stage_meta(db->cat, m, "index_samples", (int64_t)xm->samples);
  if (rc == PAGEDB_OK) rc = cat_stage_meta(db->cat, m, "index_pages", (int64_t)xm->pages);
  return rc;
}

/* The failure RC of writing the index: a failed sync leaves it in doubt,
** as for the data file, so the handle is poisoned. */
static int ix_failed(pagedb *db, int rc) {
  if (rc == PAGEDB_IOERR_SYNC) atomic_store(&db->broken, rc);
  return rc;
}

/* The slots of the runs of list R, appended to CH at *K. */
static void add_slots(const pagedb *db, const PageRecs *r, DxChange *ch, size_t *k) {
  for (; r; r = (const PageRecs *)r->d.next)
    for (uint32_t i = 0; i < r->d.nsamples; i++) {
      const uint64_t *s = r->slots + (size_t)i * db->nw;
      ch[(*k)++] = (DxChange){ (int64_t)s[0], s, 0 };
    }
}

static size_t count_slots(const PageRecs *r) {
  size_t n = 0;
  for (; r; r = (const PageRecs *)r->d.next) n += r->d.nsamples;
  return n;
}

/* The samples of PC's parts whose slots are lent, appended to CH at *K:
** their ids in DB, their slots in the parts' maps, their windows added. */
static void add_lent(const PartCommit *pc, DxChange *ch, size_t *k) {
  for (size_t i = 0; pc && pc->lent && i < pc->n; i++)
    for (uint64_t t = 0; t < pc->lent[i].n; t++)
      ch[(*k)++] = (DxChange){ pc->lent[i].s[t].nid, pc->lent[i].s[t].slot, pc->lent[i].win };
}

static size_t count_lent(const PartCommit *pc) {
  size_t n = 0;
  for (size_t i = 0; pc && pc->lent && i < pc->n; i++) n += pc->lent[i].n;
  return n;
}

/*
** Every sample the commit under way adds -- the runs written, the parts'
** runs, the parts' lent slots -- as changes to the index, *N of them, with
** room for EXTRA more after them; NULL without memory (said in M).
*/
static DxChange *commit_changes(pagedb *db, pdb_msg *m, size_t extra, size_t *n) {
  PartCommit *pc = db->pcommit;
  size_t k = count_slots(db->inserted) + (pc ? count_slots(pc->runs) : 0) + count_lent(pc);
  DxChange *ch = pdb_malloc((k + extra ? k + extra : 1) * sizeof *ch);
  if (!ch) {
    pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory indexing %zu samples", db->path, k + extra);
    return NULL;
  }
  *n = 0;
  add_slots(db, db->inserted, ch, n);
  if (pc) add_slots(db, pc->runs, ch, n);
  add_lent(pc, ch, n);
  return ch;
}

/*
** Write the index entries of the commit's samples and of the deletions
** DEL[0..NDEL) after the index in force and sync them (dx_stage), for a
** commit of END pages; *XM receives what the catalog must record.
** commit_mu held.
*/
static int stage_index(pagedb *db, pdb_msg *m, Dx *dx, uint64_t ndel, uint64_t end, DxMeta *xm) {
  PartCommit *pc = db->pcommit;
  size_t n;
  DxChange *ch = commit_changes(db, m, ndel, &n);
  if (!ch) return PAGEDB_NOMEM;
  for (uint64_t i = 0; i < ndel; i++) ch[n++] = (DxChange){ db->del[i], NULL, 0 };
  uint64_t ps = pager_page_size(db->pager);
  int rc = pc ? dx_stage_parts(dx, m, pc->dx, pc->n) : PAGEDB_OK;
  if (rc == PAGEDB_OK) rc = dx_stage(dx, m, ch, n, 1, end, end * ps, xm);
  pdb_free(ch);
  return ix_failed(db, rc);
}

/*
** The index's part of a commit, run beside the data sync.  Safe because
** nothing refers to what stage_index writes until the catalog commits it
** (dindex.c, invariant 2): index bytes past the length in force are
** garbage to every open, whether or not the data they name is durable
** yet.  What the order needs is only that both syncs are done before
** cat_commit, and the committer joins this thread before it.  The thread
** touches only the index (commit_mu keeps every other committer out), the
** runs inserted and the sorted deletions, which nothing changes while it
** runs; its message is its own, copied to the caller's on failure.
*/
typedef struct IxJob {
  pagedb *db;
  Dx *dx;
  uint64_t ndel, end;
  DxMeta xm;
  pdb_msg msg;
  int rc;
} IxJob;

static void *ix_job_run(void *arg) {
  IxJob *j = arg;
  j->rc = stage_index(j->db, &j->msg, j->dx, j->ndel, j->end, &j->xm);
  return NULL;
}

/*
** Make the inserted data and the index entries durable together: the data
** sync on this thread and, when there is an index, its write and sync on
** another (run here after the data sync if a thread cannot be had).
** *XM receives what the catalog must record of the index.
*/
static int sync_data_and_index(pagedb *db, pdb_msg *m, Dx *dx, uint64_t ndel, uint64_t end, DxMeta *xm) {
  IxJob j = { .db = db, .dx = dx, .ndel = ndel, .end = end };
  pthread_t t;
  int threaded = dx && db->inserted && pthread_create(&t, NULL, ix_job_run, &j) == 0;
  /* (A commit of parts alone writes no data: its index is written here.) */
  /* Invariant 4 of pager.c: data durable before the catalog says so. */
  int rc = db->inserted ? pager_sync(db->pager, m) : PAGEDB_OK;
  if (rc == PAGEDB_IOERR_SYNC) atomic_store(&db->broken, rc);
  if (threaded) {
    pthread_join(t, NULL);
  } else if (dx && rc == PAGEDB_OK) {
    ix_job_run(&j);
  }
  if (rc == PAGEDB_OK && dx && j.rc != PAGEDB_OK) rc = pdb_err_copy(db, m, &j.msg);
  if (rc == PAGEDB_OK) *xm = j.xm;
  return rc;
}

static int cmp_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/*
** Delete the pending ids from the catalog's open transaction; *NDEL
** receives how many (each once: the list is left sorted and without
** repeats).  commit_mu and cat_mu held.  Every id is still visible: only a
** commit removes ids, and it empties the list when it does.
*/
static int stage_deletes(pagedb *db, pdb_msg *m, uint64_t *ndel) {
  qsort(db->del, db->ndel, sizeof *db->del, cmp_id);
  size_t n = 0;
  for (size_t i = 0; i < db->ndel; i++)
    if (n == 0 || db->del[i] != db->del[n - 1]) db->del[n++] = db->del[i];
  db->ndel = n;
  CatDel *d = pdb_malloc(n * sizeof *d);
  if (!d) return pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory deleting %zu samples", db->path, n);
  uint32_t ps = pager_page_size(db->pager);
  int rc = PAGEDB_OK;
  for (size_t i = 0; i < n && rc == PAGEDB_OK; i++) {
    const uint64_t *s = idx_find(db->idx, db->del[i]);
    if (NEVER(!s))
      rc = pdb_err(db, m, PAGEDB_MISUSE, "%s: sample %lld, pending deletion, is no longer committed", db->path,
                   (long long)db->del[i]);
    else
      d[i] = (CatDel){ db->del[i], s[1] / ps, api_record_len(db, s) };
  }
  if (rc == PAGEDB_OK) rc = cat_delete(db->cat, m, d, n);
  pdb_free(d);
  if (rc == PAGEDB_OK) *ndel = n;
  return rc;
}

static int write_index(pagedb *db, pdb_msg *m, Index *src, const CatField *nf, int version, uint64_t end,
                       const ApiIxCopy *copy, Dx **out, DxMeta *xm);
static int install_index(pagedb *db, pdb_msg *m, Dx *x);

static int commit_locked(pagedb *db) {
  pdb_msg *m = &db->err;
  api_land_writers(db);
  int rc = insert_todo(db, m);
  if (rc != PAGEDB_OK) return rc;
  PartCommit *pc = db->pcommit;
  if (!db->inserted && !db->ndel && !pc) return PAGEDB_OK;   /* nothing new is written or deleted */
  uint64_t end = atomic_load(&db->committed), n = db->nsample + (pc ? pc->nsamples : 0), ndel = 0;
  for (PageRecs *r = db->inserted; r; r = (PageRecs *)r->d.next) {
    end = r->d.pgno + r->d.npages;
    n += r->d.nsamples;
  }
  if (db->ndel) rc = stage_deletes(db, m, &ndel);
  n -= ndel;
  uint64_t moved = atomic_load_explicit(&db->moved, memory_order_relaxed) + (pc ? pc->moved : 0);
  if (rc == PAGEDB_OK) rc = cat_stage_meta(db->cat, m, "moved_samples", (int64_t)moved);
  /* The dictionaries the landed values name (dict.c invariant 3). */
  if (rc == PAGEDB_OK) rc = dict_stage(db, m);
  /* Parts: their rows (table part, page, sample) and meta (partscommit.c). */
  if (rc == PAGEDB_OK && pc) rc = parts_stage_rows(db, m);
  /* The data and the index entries synced before the catalog records them
  ** (pager.c invariant 4, dindex.c invariant 2), the two at once; without
  ** an index file, the catalog records none, so that no later open trusts
  ** a stale one.  The first commit of parts writes a new index file of
  ** version 2 instead (doc/format.md, step 2), whole, from the old one and
  ** the rows of this transaction. */
  Dx *dx = idx_disk(db->idx), *nx = NULL;
  DxMeta xm = { 0 };
  if (rc == PAGEDB_OK && pc && (!dx || dx_version(dx) < 2)) {
    DxMeta wx;
    rc = write_index(db, m, db->idx, NULL, 2, end, NULL, &nx, &wx);
    if (rc == PAGEDB_OK) rc = sync_data_and_index(db, m, NULL, ndel, end, &xm);
    xm = wx;
  } else if (rc == PAGEDB_OK) {
    rc = sync_data_and_index(db, m, dx, ndel, end, &xm);
  }
  if (rc == PAGEDB_OK) rc = stage_ix_meta(db, m, &xm);
  if (rc == PAGEDB_OK) rc = cat_commit(db->cat, m, end, n);
  dict_committed(db, rc == PAGEDB_OK);
  /* A failed catalog sync leaves this commit in doubt: it may be durable
  ** or not, so its pages must never be reused (see catvfs.c). */
  if (rc == PAGEDB_IOERR_SYNC) atomic_store(&db->broken, rc);
  if (rc != PAGEDB_OK) {
    if (dx && !nx) dx_abort(dx);
    dx_close(nx);
    abandon(db);
    if (pc) parts_committed(db, 0);
    return rc;
  }
  if (pc) parts_committed(db, 1);
  db->ixmeta = xm;
  db->nsample = n;
  db->moved_committed = moved;
  atomic_store(&db->committed, end);
  uint32_t ps = pager_page_size(db->pager);
  if (atomic_load(&db->want_map)) {
    rc = pager_map_ensure(db->pager, m, end * ps, 0);
  }
  if (nx && rc == PAGEDB_OK) {
    /* The new file in force (step 4): its memory part starts empty, so
    ** the reservations of the old one go with it (no writer is open: the
    ** first commit of parts checked). */
    rc = install_index(db, m, nx);
    dx = NULL;
  } else if (dx && rc == PAGEDB_OK) {
    /* Visible in the snapshot first, then the reservations go (index.h). */
    rc = dx_publish(dx, m);
    for (PageRecs *r = db->inserted; r && rc == PAGEDB_OK; r = (PageRecs *)r->d.next)
      for (uint32_t i = 0; i < r->d.nsamples; i++) idx_release(db->idx, (int64_t)r->slots[(size_t)i * db->nw]);
    for (PageRecs *r = pc ? pc->runs : NULL; r && rc == PAGEDB_OK; r = (PageRecs *)r->d.next)
      for (uint32_t i = 0; i < r->d.nsamples; i++) idx_release(db->idx, (int64_t)r->slots[(size_t)i * db->nw]);
    for (size_t i = 0; pc && pc->lent && i < pc->n && rc == PAGEDB_OK; i++)
      for (uint64_t t = 0; t < pc->lent[i].n; t++) idx_release(db->idx, pc->lent[i].s[t].nid);
  }
  for (PageRecs *r = db->inserted; !dx && !nx && r && rc == PAGEDB_OK; r = (PageRecs *)r->d.next) {
    for (uint32_t i = 0; i < r->d.nsamples && rc == PAGEDB_OK; i++)
      rc = idx_publish(db->idx, r->slots + (size_t)i * db->nw);
  }
  if (rc != PAGEDB_OK) {
    /* Durable, but this handle cannot show it: reopening will. */
    atomic_store(&db->broken, rc);
    rc = pdb_err(db, m, rc, "%s: committed, but the samples could not be made visible in this handle (%s); reopen",
                 db->path, pagedb_errstr(rc));
  }
  /* Deleted ids vanish only now, when the catalog no longer has them. */
  for (size_t i = 0; i < ndel && !dx && !nx; i++) idx_remove(db->idx, db->del[i]);
  if (ndel) db->ndel = 0;
  free_runs(db->inserted);
  db->inserted = NULL;
  db->inserted_tail = &db->inserted;
  return rc;
}

int pagedb_commit(pagedb *db) {
  if (!db) return PAGEDB_MISUSE;
  int rc = api_usable(db, &db->err);
  if (rc != PAGEDB_OK) return rc;
  if (db->readonly) return pdb_err(db, &db->err, PAGEDB_READONLY, "%s is open read-only: nothing to commit", db->path);
  if ((rc = api_own(db, &db->err)) != PAGEDB_OK) return rc;
  pthread_mutex_lock(&db->commit_mu);
  pthread_mutex_lock(&db->cat_mu);
  rc = commit_locked(db);
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  return rc;
}

int pagedb_delete(pagedb *db, int64_t id) {
  if (!db) return PAGEDB_MISUSE;
  int rc = api_usable(db, &db->err);
  if (rc != PAGEDB_OK) return rc;
  if (db->readonly)
    return pdb_err(db, &db->err, PAGEDB_READONLY, "%s is open read-only: cannot delete sample %lld", db->path,
                   (long long)id);
  if ((rc = api_own(db, &db->err)) != PAGEDB_OK) return rc;
  pthread_mutex_lock(&db->commit_mu);
  if (!idx_find(db->idx, id)) {
    rc = pdb_err(db, &db->err, PAGEDB_NOTFOUND, "%s: cannot delete sample %lld: no committed sample has that id",
                 db->path, (long long)id);
  } else if (db->ndel == db->del_cap) {
    size_t cap = db->del_cap ? db->del_cap * 2 : 64;
    int64_t *v = pdb_realloc(db->del, cap * sizeof *v);
    if (!v) rc = pdb_err(db, &db->err, PAGEDB_NOMEM, "%s: out of memory deleting sample %lld", db->path, (long long)id);
    else db->del = v, db->del_cap = cap;
  }
  if (rc == PAGEDB_OK) db->del[db->ndel++] = id;
  pthread_mutex_unlock(&db->commit_mu);
  return rc;
}

int api_commit_runs(pagedb *db, PageRecs *runs) {
  pthread_mutex_lock(&db->commit_mu);
  /* Handed over under commit_mu: no other commit can take some of the
  ** runs and leave the rest. */
  while (runs) {
    PageRecs *next = (PageRecs *)runs->d.next;
    runs->d.next = NULL;
    pager_done(db->pager, &runs->d);
    runs = next;
  }
  pthread_mutex_lock(&db->cat_mu);
  int rc = commit_locked(db);
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  return rc;
}

int api_commit_parts(pagedb *db, PartCommit *pc, PageRecs **lists) {
  pdb_msg *m = &db->err;
  pthread_mutex_lock(&db->commit_mu);
  pthread_mutex_lock(&db->cat_mu);
  Dx *dx = idx_disk(db->idx);
  int rc = PAGEDB_OK;
  if (!dx || dx_version(dx) < 2) {
    /* The first commit of parts writes the index anew (version 2) and
    ** puts it in force under the handle: no reader or writer may hold the
    ** old one.  What was written and deleted is committed first. */
    pthread_mutex_lock(&db->mu);
    int writer = db->writers != NULL, reader = db->readers != NULL;
    pthread_mutex_unlock(&db->mu);
    if (writer || reader)
      rc = pdb_err(db, m, PAGEDB_MISUSE, "the first commit of parts into %s rewrites its index: close the handle's"
                   " %s first", db->path, writer ? "writers" : "readers");
    if (rc == PAGEDB_OK) rc = commit_locked(db);
  }
  uint64_t p0 = dx ? dx_parts(dx) : 0, ps = pager_page_size(db->pager);
  if (rc == PAGEDB_OK && pc->n > DX_PART_MAX - p0)
    rc = pdb_err(db, m, PAGEDB_FULL, "%s has %llu parts: %zu more pass the %llu a dataset can have", db->path,
                 (unsigned long long)p0, pc->n, (unsigned long long)DX_PART_MAX);
  if (rc == PAGEDB_OK) {
    /* Number the parts and move their runs and slots into their windows. */
    PageRecs **tail = &pc->runs;
    for (size_t i = 0; i < pc->n; i++) {
      uint64_t k = p0 + i, w = dx_window(k);
      pc->dx[i].k = k;
      pc->cat[i].k = k;
      pc->cat[i].first_page = w / ps;
      for (PageRecs *r = lists[i]; r; r = (PageRecs *)r->d.next) {
        r->d.pgno += w / ps;
        for (uint32_t j = 0; j < r->d.nsamples; j++) r->slots[(size_t)j * db->nw + 1] += w;
      }
      /* Lent slots stay as the part wrote them: the index adds W (fill). */
      for (PageRecs *r = pc->lent ? pc->lent[i].runs : NULL; r; r = (PageRecs *)r->d.next) r->d.pgno += w / ps;
      if (pc->lent) pc->lent[i].win = w;
      *tail = lists[i];
      while (*tail) tail = (PageRecs **)&(*tail)->d.next;
      lists[i] = NULL;
    }
    db->pcommit = pc;
    rc = commit_locked(db);
    db->pcommit = NULL;
  }
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  return rc;
}

/* --- open --------------------------------------------------------------- */

/* What the scan of the sample table checks each row against. */
typedef struct Extent {
  uint64_t off, len;
  int64_t id;
} Extent;

/* A growing list of extents. */
typedef struct Extents {
  Extent *e;
  uint64_t n, cap;
} Extents;

/* Append X to L: 0, or -1 out of memory (L unchanged). */
static int extents_add(Extents *l, Extent x) {
  if (l->n == l->cap) {
    uint64_t cap = l->cap ? l->cap * 2 : 4096;
    Extent *e = pdb_realloc(l->e, cap * sizeof *e);
    if (!e) return -1;
    l->e = e;
    l->cap = cap;
  }
  l->e[l->n++] = x;
  return 0;
}

typedef struct Loader {
  pagedb *db;
  const CatRun *runs;
  uint64_t nrun;
  int64_t max_id;
  Extents own;              /* every non-empty record of the own file, to find overlaps */
  Extents parts;            /* ...and of the parts' windows */
  uint64_t npages;          /* 1 + the last page a record starts on */
  /* PAGEDB_OPEN_CHECK: the samples' slots are held back, to be published
  ** once the overlap check has named those to leave out (BAD: their ids). */
  int check;
  uint64_t *held;
  uint64_t nheld, capheld;
  int64_t *bad;
  uint64_t nbad, capbad;
} Loader;

/* A sample row that fails a check fails the open, except under
** PAGEDB_OPEN_CHECK: the sample is then left out of the index, and
** pagedb_check reports what is wrong with it. */
static int left_out(const Loader *l, int rc) {
  return l->check ? PAGEDB_OK : rc;
}

/* PAGEDB_OPEN_CHECK: keep SLOT until publish_held. */
static int hold(Loader *l, const uint64_t *slot) {
  size_t nw = (size_t)l->db->nw;
  if (l->nheld == l->capheld) {
    uint64_t cap = l->capheld ? l->capheld * 2 : 1024;
    uint64_t *h = pdb_realloc(l->held, cap * nw * sizeof *h);
    if (!h) return PAGEDB_NOMEM;
    l->held = h;
    l->capheld = cap;
  }
  memcpy(l->held + l->nheld++ * nw, slot, nw * sizeof *slot);
  return PAGEDB_OK;
}

static const CatRun *run_at(const Loader *l, uint64_t pgno) {
  uint64_t lo = 0, hi = l->nrun;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (l->runs[mid].pgno < pgno) lo = mid + 1;
    else hi = mid;
  }
  return lo < l->nrun && l->runs[lo].pgno == pgno ? &l->runs[lo] : NULL;
}

static int load_row(void *ctx, uint64_t *slot) {
  Loader *l = ctx;
  pagedb *db = l->db;
  uint32_t ps = pager_page_size(db->pager);
  uint64_t pgno = slot[1] / ps, off = slot[1] % ps, len = api_record_len(db, slot);
  const CatRun *run = run_at(l, pgno);
  long long id = (long long)slot[0];
  if (!run || run->used == 0)
    return left_out(l, pdb_err(db, &db->err, PAGEDB_CORRUPT_CATALOG,
                               "catalog %s: sample %lld lies on page %llu, which starts no committed run",
                               db->catpath, id, (unsigned long long)pgno));
  if (off < PDB_PAGE_HDR || len > run->used || off > run->used - len)
    return left_out(l, pdb_err(db, &db->err, PAGEDB_CORRUPT_CATALOG,
                               "catalog %s: sample %lld (%llu bytes at offset %llu of page %llu) lies outside the"
                               " %llu bytes written there", db->catpath, id, (unsigned long long)len,
                               (unsigned long long)off, (unsigned long long)pgno, (unsigned long long)run->used));
  if (len > 0) {
    int part = slot[1] >= PDB_MAX_DATA;
    if (extents_add(part ? &l->parts : &l->own, (Extent){ slot[1], len, (int64_t)slot[0] }) != 0)
      return pdb_err(db, &db->err, PAGEDB_NOMEM, "out of memory loading sample %lld", id);
    if (!part && pgno >= l->npages) l->npages = pgno + 1;
  }
  int rc = idx_reserve(db->idx, (int64_t)slot[0]);
  if (rc == PAGEDB_OK) rc = l->check ? hold(l, slot) : idx_publish(db->idx, slot);
  if (rc == PAGEDB_CONSTRAINT)
    return pdb_err(db, &db->err, PAGEDB_CORRUPT_CATALOG, "catalog %s: sample %lld appears twice", db->catpath, id);
  if (rc != PAGEDB_OK) return pdb_err(db, &db->err, rc, "out of memory loading sample %lld", id);
  if ((int64_t)slot[0] > l->max_id) l->max_id = (int64_t)slot[0];
  return PAGEDB_OK;
}

static int by_offset(const void *a, const void *b) {
  const Extent *x = a, *y = b;
  return x->off < y->off ? -1 : x->off > y->off;
}

/* PAGEDB_OPEN_CHECK: samples A and B overlap, so neither is published. */
static int note_bad(Loader *l, int64_t a, int64_t b) {
  if (l->nbad + 2 > l->capbad) {
    uint64_t cap = l->capbad ? l->capbad * 2 : 64;
    int64_t *v = pdb_realloc(l->bad, cap * sizeof *v);
    if (!v) return pdb_err(l->db, &l->db->err, PAGEDB_NOMEM, "out of memory loading %s", l->db->catpath);
    l->bad = v;
    l->capbad = cap;
  }
  l->bad[l->nbad++] = a;
  l->bad[l->nbad++] = b;
  return PAGEDB_OK;
}

/*
** No two records may share a byte: a catalog that says so would make two
** samples read each other's bytes.  The records come in id order; a
** counting sort by page (NPAGES of PS bytes) puts them in offset order in
** linear time, and within a page they are nearly always in order already.
** Under PAGEDB_OPEN_CHECK (CHECK not NULL) an overlap is noted in CHECK
** instead of failing.
*/
static int check_overlaps(pagedb *db, Extent *e, uint64_t n, uint64_t npages, uint32_t ps, Loader *check) {
  uint64_t *start = pdb_calloc(npages + 1, sizeof *start);
  Extent *o = pdb_malloc((n ? n : 1) * sizeof *o);
  if (!start || !o) {
    pdb_free(start);
    pdb_free(o);
    return pdb_err(db, &db->err, PAGEDB_NOMEM, "out of memory checking %llu extents", (unsigned long long)n);
  }
  for (uint64_t i = 0; i < n; i++) start[e[i].off / ps + 1]++;   /* load_row checked pages < npages */
  for (uint64_t p = 1; p <= npages; p++) start[p] += start[p - 1];
  for (uint64_t i = 0; i < n; i++) o[start[e[i].off / ps]++] = e[i];
  int rc = PAGEDB_OK;
  for (uint64_t i = 1; i < n && rc == PAGEDB_OK; i++) {
    if (o[i - 1].off > o[i].off) {
      /* Out of order within a page: sort that page's records. */
      uint64_t a = i - 1, b = i;
      while (a > 0 && o[a - 1].off / ps == o[i].off / ps) a--;
      while (b < n && o[b].off / ps == o[i].off / ps) b++;
      qsort(o + a, b - a, sizeof *o, by_offset);
      i = a;
      continue;
    }
    if (o[i - 1].off + o[i - 1].len > o[i].off && check)
      rc = note_bad(check, o[i - 1].id, o[i].id);   /* PAGEDB_OPEN_CHECK: both are left out */
    else if (o[i - 1].off + o[i - 1].len > o[i].off)
      rc = pdb_err(db, &db->err, PAGEDB_CORRUPT_CATALOG,
                   "catalog %s: samples %lld and %lld overlap at data offset %llu", db->catpath,
                   (long long)o[i - 1].id, (long long)o[i].id, (unsigned long long)o[i].off);
  }
  pdb_free(start);
  pdb_free(o);
  return rc;
}

/* check_overlaps for the records in the parts' windows: sorted, then
** compared in pairs (few per window, and windows never overlap). */
static int check_part_overlaps(pagedb *db, Extent *e, uint64_t n, Loader *check) {
  if (n > 1) qsort(e, n, sizeof *e, by_offset);
  int rc = PAGEDB_OK;
  for (uint64_t i = 1; i < n && rc == PAGEDB_OK; i++) {
    if (e[i - 1].off + e[i - 1].len <= e[i].off) continue;
    if (check) rc = note_bad(check, e[i - 1].id, e[i].id);
    else rc = pdb_err(db, &db->err, PAGEDB_CORRUPT_CATALOG, "catalog %s: samples %lld and %lld overlap at address"
                      " %llu", db->catpath, (long long)e[i - 1].id, (long long)e[i].id, (unsigned long long)e[i].off);
  }
  return rc;
}

static int by_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* PAGEDB_OPEN_CHECK: publish the held samples but those named bad. */
static int publish_held(pagedb *db, Loader *l) {
  if (l->nbad > 1) qsort(l->bad, l->nbad, sizeof *l->bad, by_id);
  for (uint64_t i = 0; i < l->nheld; i++) {
    const uint64_t *s = l->held + i * (size_t)db->nw;
    int64_t id = (int64_t)s[0];
    if (l->nbad && bsearch(&id, l->bad, l->nbad, sizeof *l->bad, by_id)) {
      idx_release(db->idx, id);
      continue;
    }
    int rc = idx_publish(db->idx, s);
    if (rc != PAGEDB_OK) return pdb_err(db, &db->err, rc, "out of memory loading sample %lld", (long long)id);
  }
  return PAGEDB_OK;
}

/* Check the page table and the file, then load every sample. */
static int load(pagedb *db, const CatMeta *meta) {
  pdb_msg *m = &db->err;
  uint32_t ps = pager_page_size(db->pager);
  CatRun *runs;
  uint64_t nrun;
  int rc = cat_runs(db->cat, m, &runs, &nrun);
  if (rc == PAGEDB_CORRUPT_CATALOG && db->check) rc = PAGEDB_OK;   /* no runs: every sample is left out */
  if (rc != PAGEDB_OK) return rc;
  uint64_t next = 0, data_end = 0, nsample = 0, size = 0;
  if (db->check && pdb_os_size(pager_file(db->pager), &size) != PAGEDB_OK) size = 0;
  uint64_t wbase = PDB_MAX_DATA / ps, wpages = ((uint64_t)1 << DX_WIN_BITS) / ps;
  for (uint64_t i = 0; i < nrun && rc == PAGEDB_OK; i++) {
    CatRun *r = &runs[i];
    if (r->pgno >= wbase) {
      /* A part's run: inside its window (its rows' contiguity and the
      ** part's bounds are pagedb_check's, with table part). */
      if ((r->pgno - wbase) % wpages + r->npages > wpages || r->pgno > PDB_ADDR_MAX / ps - r->npages)
        rc = pdb_err(db, m, PAGEDB_CORRUPT_CATALOG, "catalog %s: the run at page %llu crosses its part's window",
                     db->catpath, (unsigned long long)r->pgno);
      else if (r->used != 0 && (r->used < PDB_PAGE_HDR || r->used > (uint64_t)r->npages * ps))
        rc = pdb_err(db, m, PAGEDB_CORRUPT_CATALOG, "catalog %s: page %llu claims %llu bytes used in a %u-page run",
                     db->catpath, (unsigned long long)r->pgno, (unsigned long long)r->used, r->npages);
      if (rc != PAGEDB_OK && db->check) {
        r->used = 0;
        rc = PAGEDB_OK;
      }
      nsample += r->nsamples;
      continue;
    }
    if (r->pgno != next || r->npages > PDB_MAX_DATA / ps - r->pgno)
      rc = pdb_err(db, m, PAGEDB_CORRUPT_CATALOG, "catalog %s: the page table has a gap or overlap at page %llu",
                   db->catpath, (unsigned long long)r->pgno);
    else if (r->used != 0 && (r->used < PDB_PAGE_HDR || r->used > (uint64_t)r->npages * ps))
      rc = pdb_err(db, m, PAGEDB_CORRUPT_CATALOG, "catalog %s: page %llu claims %llu bytes used in a %u-page run",
                   db->catpath, (unsigned long long)r->pgno, (unsigned long long)r->used, r->npages);
    else if (db->check && r->used && pager_data_off(db->pager) + r->pgno * ps + r->used > size)
      rc = PAGEDB_CORRUPT_TRUNCATED;
    if (rc != PAGEDB_OK && db->check) {
      r->used = 0;          /* PAGEDB_OPEN_CHECK: the run's samples are left out (load_row) */
      rc = PAGEDB_OK;
    }
    next = r->pgno + r->npages;
    if (r->used) data_end = r->pgno * ps + r->used;
    nsample += r->nsamples;
  }
  if (rc == PAGEDB_OK && next != meta->committed && !db->check)
    rc = pdb_err(db, m, PAGEDB_CORRUPT_CATALOG, "catalog %s: the page table covers %llu pages but meta says %llu",
                 db->catpath, (unsigned long long)next, (unsigned long long)meta->committed);
  if (rc == PAGEDB_OK && nsample != meta->nsample && !db->check)
    rc = pdb_err(db, m, PAGEDB_CORRUPT_CATALOG, "catalog %s: the page table counts %llu samples but meta says %llu",
                 db->catpath, (unsigned long long)nsample, (unsigned long long)meta->nsample);
  if (rc == PAGEDB_OK) rc = pager_recover(db->pager, m, meta->committed, data_end, !db->readonly);
  if (rc == PAGEDB_CORRUPT_TRUNCATED && db->check) rc = PAGEDB_OK;   /* the runs past the end are left out */
  if (rc == PAGEDB_OK && idx_create(&db->idx, db->nw) != PAGEDB_OK)
    rc = pdb_err(db, m, PAGEDB_NOMEM, "out of memory indexing %llu samples", (unsigned long long)meta->nsample);
  Loader l = { .db = db, .runs = runs, .nrun = nrun, .max_id = -1, .check = db->check };
  if (rc == PAGEDB_OK)
    rc = (db->check ? cat_scan_skip : cat_scan)(db->cat, m, db->fields, db->nfield, ps, load_row, &l);
  if (rc == PAGEDB_OK) rc = check_overlaps(db, l.own.e, l.own.n, l.npages, ps, db->check ? &l : NULL);
  if (rc == PAGEDB_OK) rc = check_part_overlaps(db, l.parts.e, l.parts.n, db->check ? &l : NULL);
  if (rc == PAGEDB_OK && db->check) rc = publish_held(db, &l);
  pdb_free(l.own.e);
  pdb_free(l.parts.e);
  pdb_free(l.held);
  pdb_free(l.bad);
  if (rc == PAGEDB_OK && idx_count(db->idx) != meta->nsample && !db->check)
    rc = pdb_err(db, m, PAGEDB_CORRUPT_CATALOG, "catalog %s: table sample holds %llu samples but meta says %llu",
                 db->catpath, (unsigned long long)idx_count(db->idx), (unsigned long long)meta->nsample);
  pdb_free(runs);
  if (rc != PAGEDB_OK) return rc;
  db->nsample = meta->nsample;
  db->moved_committed = meta->moved;
  atomic_store(&db->moved, meta->moved);
  atomic_store(&db->committed, meta->committed);
  if (pager_untrusted(db->pager)) atomic_store(&db->untrusted, 1);   /* reader.c: every value verified */
  atomic_store(&db->next_auto, l.max_id < INT64_MAX ? l.max_id + 1 : INT64_MAX);
  if (db->check) pdb_err_forget(db);   /* what was left out is pagedb_check's to report */
  return PAGEDB_OK;
}

/* The alignment every stored value of DB's records gets: the largest any
** field declares (pagedb_field_add_aligned, doc/format.md). */
static int records_align(const pagedb *db) {
  int g = 1;
  for (int f = 0; f < db->nfield; f++)
    if (api_is_bytes(db, f) && db->fields[f].align > g) g = db->fields[f].align;
  return g;
}

static void set_isbytes(pagedb *db) {
  int g = records_align(db);
  for (int f = 0; f < db->nfield; f++) db->isbytes[f] = api_is_bytes(db, f) ? (uint8_t)g : 0;
}

/* TOKES[f]: the bytes a token of field f, 0 if it is no token field
** (dx_open, dx_create); field nfield is NF if given (a field being added). */
static void token_bytes(const pagedb *db, const CatField *nf, uint8_t *tokes) {
  memset(tokes, 0, PAGEDB_MAX_FIELDS);
  for (int f = 0; f < db->nfield; f++) tokes[f] = (uint8_t)api_token_bytes(&db->fields[f]);
  if (nf) tokes[db->nfield] = (uint8_t)api_token_bytes(nf);
}

/* Free IX, an index replaced under the handle.  Its file stays mapped
** until pagedb_close once a token stream has read a stored map
** (db->tokpin): the stream reads its entries in place. */
static void drop_index(pagedb *db, Index *ix) {
  Dx *dx = atomic_load(&db->tokpin) && ix ? idx_take_disk(ix) : NULL;
  if (dx) {
    dx_keep(dx, db->pinned);
    db->pinned = dx;
  }
  idx_free(ix);
}

/* The path of the index file of the dataset at PATH: NAME-index. */
static char *index_path(const char *path) {
  char *p = pdb_malloc(strlen(path) + 7);
  if (p) sprintf(p, "%s-index", path);
  return p;
}
static char *ix_path(const pagedb *db);

/* Rebuilding an index file from an index (build_one per sample). */
typedef struct Build {
  pagedb *db;
  pdb_msg *m;
  Dx *x;
  DxChange *ch;             /* a batch of changes... */
  uint64_t *store;          /* ...and, when widening, their slots */
  size_t n, cap;
  int widen;                /* the slots gain a field: old slots have nfield-1 */
} Build;

#define BUILD_BATCH 65536

/* Re-lay out slot S of NF fields for NF+1 fields (index.h): presence bits,
** values and extents move to their new words; the new field is absent.
** Word 1, the record's offset, is unchanged: the new field is last in
** schema order, so no record gains bytes. */
static void widen_slot(uint64_t *t, int64_t id, const uint64_t *s, int nf) {
  memset(t, 0, (size_t)slot_words(nf + 1) * sizeof *t);
  t[0] = (uint64_t)id;      /* a dense memory slot's word 0 is its state, not its id */
  t[1] = s[1];
  for (int f = 0; f < nf; f++) {
    if (slot_has(s, f)) slot_set(t, f);
    *slot_val(t, nf + 1, f) = slot_get(s, nf, f);
    memcpy(slot_ext(t, nf + 1, f), slot_cext(s, nf, f), 2 * sizeof *t);
  }
}

static int build_one(void *ctx, int64_t id, const uint64_t *s) {
  Build *b = ctx;
  if (b->widen) {
    uint64_t *t = b->store + b->n * (size_t)slot_words(b->db->nfield + 1);
    widen_slot(t, id, s, b->db->nfield);
    s = t;
  }
  b->ch[b->n++] = (DxChange){ id, s, 0 };
  if (b->n < b->cap) return PAGEDB_OK;
  int rc = dx_stage(b->x, b->m, b->ch, b->n, 0, 0, 0, NULL);
  b->n = 0;
  return rc;
}

/*
** The samples of the commit under way (written runs and parts' runs) into
** B's file, *N how many: sorted by id first, then staged in batches cut
** where a chunk ends.  They come in page order, which for pages written by
** two threads alternates between two runs of ids; batches of that order
** cut chunks in two, and a chunk given more in a later batch than it
** already holds is copied anew: a million samples' index was written
** twice over (168 MB for 80).
*/
static int build_runs(Build *b, uint64_t *n) {
  size_t k;
  DxChange *ch = commit_changes(b->db, b->m, 0, &k);
  if (!ch) return PAGEDB_NOMEM;
  *n = k;
  dx_sort(ch, k);
  /* What idx_scan left in the batch goes first: its ids are the old ones. */
  int rc = b->n ? dx_stage(b->x, b->m, b->ch, b->n, 0, 0, 0, NULL) : PAGEDB_OK;
  b->n = 0;
  for (size_t a = 0, e; a < k && rc == PAGEDB_OK; a = e) {
    e = k - a > BUILD_BATCH ? a + BUILD_BATCH : k;
    while (e < k && (uint64_t)ch[e].id >> DX_CBITS == (uint64_t)ch[e - 1].id >> DX_CBITS) e++;
    rc = dx_stage(b->x, b->m, ch + a, e - a, 0, 0, 0, NULL);
  }
  pdb_free(ch);
  return rc;
}

/* Part records from the catalog's rows (write_index of version 2), with
** the validators of a copy's parts where COPY gives them. */
typedef struct PartRows {
  pagedb *db;
  pdb_msg *m;
  Dx *x;
  const ApiIxCopy *copy;
  size_t at;                /* copy->k[at] is the next part it names (both in part order) */
} PartRows;

static int part_row(void *ctx, const CatPart *p) {
  PartRows *pr = ctx;
  DxPart d = { p->k, { 0 }, p->data_off, p->data_end, p->pages, p->samples, p->seal, p->uri, p->validator };
  const ApiIxCopy *cp = pr->copy;
  while (cp && pr->at < cp->n && cp->k[pr->at] < (int64_t)p->k) pr->at++;
  if (cp && pr->at < cp->n && cp->k[pr->at] == (int64_t)p->k) d.validator = cp->val[pr->at];
  if (!pdb_uuid_parse(p->uuid, d.uuid) || !p->uri)
    return pdb_err(pr->db, pr->m, PAGEDB_CORRUPT_CATALOG, "catalog %s: part %llu has a bad uuid or no uri",
                   pr->db->catpath, (unsigned long long)p->k);
  return dx_stage_parts(pr->x, pr->m, &d, 1);
}

/*
** Write a new index file (NAME-index.new) holding every sample of index
** SRC, widened by field NF if given (the field being added), for the committed pages; *OUT the new
** file, *XM what the catalog must record.  Nothing is in force until the
** caller commits XM and installs OUT.  commit_mu held (or the open).
** COPY (api_index_copy): the file is COPY->path.new, of the committed
** samples only, with the copy's validators.
*/
static int write_index(pagedb *db, pdb_msg *m, Index *src, const CatField *nf, int version, uint64_t end,
                       const ApiIxCopy *copy, Dx **out, DxMeta *xm) {
  *out = NULL;
  char *path = copy ? pdb_strdup(copy->path) : ix_path(db);
  if (!path) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory writing the index of %s", db->path);
  int widen = nf ? (cat_type_stored(nf->type) ? 1 + nf->align : 1) : 0;
  uint8_t isbytes[PAGEDB_MAX_FIELDS], tokes[PAGEDB_MAX_FIELDS];
  token_bytes(db, nf, tokes);
  memcpy(isbytes, db->isbytes, sizeof isbytes);
  if (widen) {
    /* The new field may raise the records' alignment (only while no page
    ** is committed: pagedb_field_add_aligned), which every field takes. */
    int g = records_align(db);
    if (widen - 1 > g) g = widen - 1;
    for (int f = 0; f < db->nfield; f++) isbytes[f] = isbytes[f] ? (uint8_t)g : 0;
    isbytes[db->nfield] = widen > 1 ? (uint8_t)g : 0;
  }
  Build b = { db, m, NULL, pdb_malloc(BUILD_BATCH * sizeof *b.ch), NULL, 0, BUILD_BATCH, widen };
  if (widen) b.store = pdb_malloc(BUILD_BATCH * (size_t)slot_words(db->nfield + 1) * sizeof(uint64_t));
  int rc = !b.ch || (widen && !b.store) ? pdb_err(db, m, PAGEDB_NOMEM, "out of memory writing index %s", path)
         : dx_create(db, m, db->vfs, path, pager_uuid(db->pager), slot_words(db->nfield + (widen ? 1 : 0)),
                     db->nfield + (widen ? 1 : 0), isbytes, tokes, version, &b.x);
  /* Version 2: every part the catalog's write connection sees (those of
  ** a commit under way included), then every sample, and those of the
  ** commit under way (written runs and parts' runs). */
  PartRows pr = { db, m, b.x, copy, 0 };
  if (rc == PAGEDB_OK && version >= 2 && (db->pcommit || (db->features & CAT_FEATURE_PARTS)))
    rc = cat_parts(db->cat, m, part_row, &pr);
  if (rc == PAGEDB_OK) rc = idx_scan(src, build_one, &b);
  uint64_t extra = 0;
  if (rc == PAGEDB_OK && version >= 2 && !widen && !copy) rc = build_runs(&b, &extra);
  if (rc == PAGEDB_OK) rc = dx_stage(b.x, m, b.ch, b.n, 1, end, end * pager_page_size(db->pager), xm);
  if (rc == PAGEDB_OK && NEVER(xm->samples != idx_count(src) + extra))
    rc = pdb_err(db, m, PAGEDB_CORRUPT_INDEX, "index %s: wrote %llu samples of %llu", path,
                 (unsigned long long)xm->samples, (unsigned long long)(idx_count(src) + extra));
  pdb_free(b.ch);
  pdb_free(b.store);
  pdb_free(path);
  if (rc != PAGEDB_OK) {
    dx_close(b.x);
    return rc;
  }
  *out = b.x;
  return PAGEDB_OK;
}

/* Put the new index file X (written by write_index, XM committed) in
** force: rename it in, and make DB's index a memory part for reservations
** over it.  A failure to rename leaves NAME-index.new, which the next open
** renames in (dx_open); this handle goes on with X either way. */
static int install_index(pagedb *db, pdb_msg *m, Dx *x) {
  Index *ix;
  if (idx_create(&ix, 1) != PAGEDB_OK) {
    dx_close(x);
    return pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening the index of %s", db->path);
  }
  int rc = dx_install(x, m);
  int prc = dx_publish(x, m);
  if (rc == PAGEDB_OK) rc = prc;
  idx_set_disk(ix, x);
  drop_index(db, db->idx);
  db->idx = ix;
  return rc;
}

/* A read-write open without a usable index file: write one from the
** in-memory index that load() built, and commit it. */
static int rebuild_index(pagedb *db, pdb_msg *m) {
  Dx *x;
  DxMeta xm;
  int rc = write_index(db, m, db->idx, NULL, db->features ? 2 : 1, atomic_load(&db->committed), NULL, &x, &xm);
  if (rc != PAGEDB_OK) return rc;
  rc = stage_ix_meta(db, m, &xm);
  if (rc == PAGEDB_OK) rc = cat_commit(db->cat, m, atomic_load(&db->committed), db->nsample);
  if (rc != PAGEDB_OK) {
    cat_rollback(db->cat);
    dx_close(x);
    return rc;
  }
  db->ixmeta = xm;
  return install_index(db, m, x);
}

int api_index_copy(pagedb *db, pdb_msg *m, const ApiIxCopy *copy, Dx **out, DxMeta *xm) {
  pthread_mutex_lock(&db->cat_mu);   /* cat_parts reads on the write connection */
  int rc = write_index(db, m, db->idx, NULL, db->features ? 2 : 1, atomic_load(&db->committed), copy, out, xm);
  pthread_mutex_unlock(&db->cat_mu);
  return rc;
}

/*
** Open with the index file in force (X): nothing is read per sample.  The
** data file is checked against the end of the last run in use.
*/
static int open_mapped(pagedb *db, const CatMeta *meta, Dx *x) {
  pdb_msg *m = &db->err;
  uint32_t ps = pager_page_size(db->pager);
  CatRun last;
  int found;
  int rc = cat_last_run(db->cat, m, ps, &last, &found);
  if (rc == PAGEDB_OK && found
      && (last.pgno >= meta->committed || last.used < PDB_PAGE_HDR || last.used > (uint64_t)last.npages * ps
          || last.npages > meta->committed - last.pgno))
    rc = pdb_err(db, m, PAGEDB_CORRUPT_CATALOG, "catalog %s: the last run in use (page %llu) lies outside the %llu"
                 " committed pages", db->catpath, (unsigned long long)last.pgno, (unsigned long long)meta->committed);
  uint64_t data_end = found ? last.pgno * ps + last.used : 0;
  if (rc == PAGEDB_OK) rc = pager_recover(db->pager, m, meta->committed, data_end, !db->readonly);
  if (rc == PAGEDB_OK && idx_create(&db->idx, 1) != PAGEDB_OK)
    rc = pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening %s", db->path);
  if (rc != PAGEDB_OK) {
    dx_close(x);
    return rc;
  }
  idx_set_disk(db->idx, x);
  db->nsample = meta->nsample;
  db->moved_committed = meta->moved;
  atomic_store(&db->moved, meta->moved);
  atomic_store(&db->committed, meta->committed);
  if (pager_untrusted(db->pager)) atomic_store(&db->untrusted, 1);   /* reader.c: every value verified */
  atomic_store(&db->next_auto, dx_next_id(x));
  return PAGEDB_OK;
}

/* The path of DB's index file: NAME-index, or the file meta.index_file
** names beside NAME (a remote commit's index object, doc/format.md). */
static char *ix_path(const pagedb *db) {
  if (!db->ixfile[0]) return index_path(db->path);
  const char *slash = strrchr(db->path, '/');
  size_t n = strlen(db->path) + strlen(db->ixfile) + 2;
  char *p = pdb_malloc(n);
  if (p) snprintf(p, n, "%.*s%s", slash ? (int)(slash - db->path + 1) : 0, db->path, db->ixfile);
  return p;
}

/*
** Find the sample index: the index file when the catalog vouches for it,
** else a scan of the catalog (load) and, for a read-write open, a new
** index file written from it (db->ixstate and ixwhy say which and why).
*/
static int open_index(pagedb *db, const CatMeta *meta) {
  pdb_msg note = { 0 };
  db->ixmeta = (DxMeta){ meta->ix_id, meta->ix_dir, meta->ix_len, meta->ix_samples, meta->ix_pages,
                         meta->parts > 0 ? (uint64_t)meta->parts : 0 };
  if (db->check) {
    db->ixstate = PAGEDB_INDEX_MEMORY;
    snprintf(db->ixwhy, sizeof db->ixwhy, "PAGEDB_OPEN_CHECK: every catalog row is loaded and checked");
    return load(db, meta);
  }
  Dx *x = NULL;
  char *path = ix_path(db);
  int rc;
  if (!path) {
    rc = pdb_err(db, &note, PAGEDB_NOMEM, "out of memory opening %s", db->path);
  } else if (meta->ix_id && (meta->ix_samples != meta->nsample || meta->ix_pages != meta->committed)) {
    /* A commit by a pagedb that does not know of the index. */
    rc = pdb_err(db, &note, PAGEDB_CORRUPT_INDEX, "index %s: stale: it indexes %llu samples of %llu pages, the"
                 " catalog records %llu of %llu", path, (unsigned long long)meta->ix_samples,
                 (unsigned long long)meta->ix_pages, (unsigned long long)meta->nsample,
                 (unsigned long long)meta->committed);
  } else {
    uint8_t tokes[PAGEDB_MAX_FIELDS];
    token_bytes(db, NULL, tokes);
    rc = dx_open(db, &note, db->vfs, path, pager_uuid(db->pager), db->nw, db->nfield, db->isbytes, tokes, &db->ixmeta,
                 !db->readonly, db->features ? 2 : 1, &x);
  }
  pdb_free(path);
  if (rc == PAGEDB_OK) {
    db->ixstate = PAGEDB_INDEX_MAPPED;
    db->ixwhy[0] = 0;
    return open_mapped(db, meta, x);
  }
  snprintf(db->ixwhy, sizeof db->ixwhy, "%s", pdb_msg_text(&note));
  rc = load(db, meta);
  if (rc != PAGEDB_OK) return rc;
  db->ixstate = PAGEDB_INDEX_MEMORY;
  if (db->readonly) return PAGEDB_OK;
  pdb_msg bm = { 0 };
  if (rebuild_index(db, &bm) == PAGEDB_OK) {
    db->ixstate = PAGEDB_INDEX_REBUILT;
  } else {
    size_t n = strlen(db->ixwhy);
    snprintf(db->ixwhy + n, sizeof db->ixwhy - n, "; not rebuilt: %s", pdb_msg_text(&bm));
  }
  return PAGEDB_OK;
}

int pagedb_index_state(pagedb *db, const char **why) {
  if (why) *why = db && !db->failed ? db->ixwhy : "";
  return db && !db->failed ? db->ixstate : 0;
}

/* Create a new dataset at db->path (no data file, no catalog). */
static int create(pagedb *db) {
  int rc = pager_create(db, &db->err, db->vfs, db->path, PAGEDB_DEFAULT_PAGE_SIZE, &db->pager);
  if (rc == PAGEDB_OK) rc = pager_lock(db->pager, &db->err);
  return rc;
}

/* Open the catalog; a dataset whose creation was cut short between its
** data file and its catalog's tables (header only; no catalog, or one
** without tables, as a power loss leaves it) gets its catalog now. */
static int open_catalog(pagedb *db, int flags) {
  int exists = 0, rc, empty = 1;
  db->vfs->xAccess(db->vfs, db->catpath, &exists);
  uint64_t size = 0;
  pdb_os_size(pager_file(db->pager), &size);
  int unborn = (flags & PAGEDB_OPEN_CREATE) && size == PDB_HEADER_SIZE;
  if (exists) {
    rc = cat_open(db, db->vfs, &db->err, db->catpath, db->readonly ? CAT_READONLY : CAT_WRITE, &db->cat);
    if (rc == PAGEDB_OK && unborn && !db->readonly) rc = cat_is_empty(db->cat, &db->err, &empty);
    if (rc != PAGEDB_OK || !unborn || !empty) return rc;
  } else if (!unborn) {
    return pdb_err(db, &db->err, PAGEDB_CANTOPEN, "the catalog %s of data file %s is missing", db->catpath, db->path);
  } else {
    rc = cat_open(db, db->vfs, &db->err, db->catpath, CAT_CREATE, &db->cat);
  }
  if (rc == PAGEDB_OK) rc = cat_init(db->cat, &db->err, pager_uuid(db->pager), pager_page_size(db->pager));
  if (rc == PAGEDB_OK && db->vfs->xSyncDir && db->vfs->xSyncDir(db->vfs, db->catpath) != PAGEDB_OK)
    rc = pdb_err(db, &db->err, PAGEDB_IOERR_SYNC, "cannot sync the directory of %s: %s", db->catpath, strerror(errno));
  return rc;
}

/*
** Whether the data file is what a creation cut short leaves: no longer than
** a header, and empty, zeroed, or starting like our header.  Only such a
** file is taken over by a CREATE open; any other is the user's.
*/
static int is_unborn(pagedb *db) {
  pagedb_file *f;
  uint64_t size = PDB_HEADER_SIZE + 1;
  _Alignas(PDB_HEADER_SIZE) uint8_t h[PDB_HEADER_SIZE];
  if (pdb_os_open(db->vfs, db->path, PAGEDB_VFS_READONLY, &f) != PAGEDB_OK) return 0;
  if (pdb_os_size(f, &size) != PAGEDB_OK) size = PDB_HEADER_SIZE + 1;
  int rc = size <= PDB_HEADER_SIZE ? pdb_os_read(f, h, sizeof h, 0) : PAGEDB_ERROR;
  pdb_os_close(f);
  if (rc != PAGEDB_OK && rc != PAGEDB_IOERR_SHORT_READ) return 0;
  if (memcmp(h, "pagedb d", 8) == 0) return 1;
  for (size_t i = 0; i < sizeof h; i++)
    if (h[i]) return 0;
  return 1;
}

/* Tell a VFS with round trips (the remote ones) which files the open is
** about to ask about, so that it asks about them side by side: five
** questions in turn were most of a warm remote open. */
static void access_ahead(pagedb *db) {
  if (db->vfs->iVersion < 3 || !db->vfs->xAccessAhead) return;
  char *vac = vacuum_path(db->path), *idx = ix_path(db);
  if (vac && idx) {
    const char *const paths[] = { db->path, db->catpath, vac, idx };
    db->vfs->xAccessAhead(db->vfs, paths, 4);
  }
  pdb_free(vac);
  pdb_free(idx);
}

static int open_dataset(pagedb *db, int flags) {
  pdb_msg *m = &db->err;
  int exists = 0, cat_exists = 0;
  access_ahead(db);
  /* A VFS that cannot tell (a remote server's failure other than 404)
  ** fails the open with its reason. */
  pdb_os_take_why();
  int rc = db->vfs->xAccess(db->vfs, db->path, &exists);
  if (rc == PAGEDB_OK) rc = db->vfs->xAccess(db->vfs, db->catpath, &cat_exists);
  if (rc != PAGEDB_OK) {
    const char *why = pdb_os_take_why();
    return pdb_err(db, m, rc, "cannot open %s: %s", db->path, why[0] ? why : pagedb_errstr(rc));
  }
  if (!exists) {
    if (!(flags & PAGEDB_OPEN_CREATE))
      return pdb_err(db, m, PAGEDB_CANTOPEN_NOENT, "no dataset at %s: the file does not exist", db->path);
    if (cat_exists)
      return pdb_err(db, m, PAGEDB_CANTOPEN,
                     "cannot create %s: its catalog %s exists without it (move the catalog away first)", db->path,
                     db->catpath);
    rc = create(db);
  } else if ((flags & PAGEDB_OPEN_CREATE) && !cat_exists && is_unborn(db)) {
    /* A creation cut short before its header was durable: start again. */
    rc = db->vfs->xDelete(db->vfs, db->path, 0);
    if (rc == PAGEDB_OK) rc = create(db);
    else rc = pdb_err(db, m, PAGEDB_CANTOPEN, "cannot replace the empty file %s: %s", db->path, strerror(errno));
  } else {
    rc = vacuum_open_pager(db);
  }
  if (rc == PAGEDB_OK) rc = open_catalog(db, flags);
  CatMeta meta;
  /* One read transaction for everything loaded: a writer in another
  ** process may commit between our statements. */
  if (rc == PAGEDB_OK) rc = cat_snapshot(db->cat, m, 1);
  if (rc == PAGEDB_OK) rc = cat_load(db->cat, m, &meta, db->fields, &db->nfield);
  if (rc == PAGEDB_OK) rc = dict_load(db, m);
  if (rc != PAGEDB_OK) return rc;
  char a[33], b[33];
  pdb_uuid_hex(meta.uuid, a);
  pdb_uuid_hex(pager_uuid(db->pager), b);
  /* cat_load checked meta.format and meta.features. */
  assert(meta.format == CAT_FORMAT_PLAIN || meta.format == CAT_FORMAT_FEATURES);
  db->features = meta.features;
  snprintf(db->ixfile, sizeof db->ixfile, "%s", meta.index_file);
  if (strcmp(a, b) != 0)
    return pdb_err(db, m, PAGEDB_NOTADB_MISMATCH,
                   "catalog %s belongs to another data file (dataset %s), not to %s (dataset %s)", db->catpath, a,
                   db->path, b);
  if (meta.page_size != pager_page_size(db->pager)) {
    /* pagedb_set_page_size writes the header, then the catalog: a crash
    ** between them leaves an empty dataset whose header is right. */
    if (db->nfield == 0 && meta.committed == 0 && !db->readonly)
      rc = cat_set_page_size(db->cat, m, pager_page_size(db->pager));
    else
      rc = pdb_err(db, m, PAGEDB_CORRUPT_HEADER, "%s: page size %u in the header but %u in catalog %s", db->path,
                   pager_page_size(db->pager), meta.page_size, db->catpath);
    if (rc != PAGEDB_OK) return rc;
  }
  db->nw = slot_words(db->nfield);
  set_isbytes(db);
  rc = open_index(db, &meta);
  if (rc == PAGEDB_OK) pdb_err_forget(db);   /* open_index's notes are for pagedb_index_state */
  if (rc == PAGEDB_OK) rc = cat_snapshot(db->cat, m, 0);
  return rc;
}

int api_reopen(pagedb *db) {
  assert(!db->writers && !db->readers && !db->todo && !db->inserted && !db->ndel);
  parts_close(db);
  pager_close(db->pager);
  cat_close(db->cat);
  drop_index(db, db->idx);
  dict_free_all(db);        /* no reader is open: nothing uses them */
  db->pager = NULL;
  db->cat = NULL;
  db->idx = NULL;
  int rc = open_dataset(db, 0);
  if (rc != PAGEDB_OK) db->failed = 1;
  return rc;
}

int pagedb_open(const char *path, pagedb **out, int flags, const char *vfs) {
  if (!out) return PAGEDB_MISUSE;
  *out = NULL;
  pagedb *db = pdb_calloc(1, sizeof *db);
  if (!db) return pdb_err(NULL, NULL, PAGEDB_NOMEM, "out of memory allocating a pagedb handle");
  atomic_fetch_add(&pdb_handles, 1);
  pthread_mutex_init(&db->mu, NULL);
  pthread_mutex_init(&db->commit_mu, NULL);
  pthread_mutex_init(&db->cat_mu, NULL);
  pthread_mutex_init(&db->dict_mu, NULL);
  pthread_mutex_init(&db->wake_mu, NULL);
  pthread_cond_init(&db->wake_cv, NULL);
  db->inserted_tail = &db->inserted;
  db->pid = getpid();
  db->fork_gen = api_fork_gen();
  pdb_err_forget(db);       /* a message left by a closed handle at this address */
  *out = db;
  int rc;
  char why[PDB_MSG_MAX];
  int mode = flags & (PAGEDB_OPEN_READONLY | PAGEDB_OPEN_READWRITE);
  db->readonly = mode == PAGEDB_OPEN_READONLY;
  db->check = (flags & PAGEDB_OPEN_CHECK) != 0;
  if (!path || !path[0]) {
    rc = pdb_err(db, &db->err, PAGEDB_MISUSE, "pagedb_open: no path given");
  } else if ((mode != PAGEDB_OPEN_READONLY && mode != PAGEDB_OPEN_READWRITE)
             || (flags & ~(PAGEDB_OPEN_READONLY | PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE | PAGEDB_OPEN_CHECK))
             || (db->readonly && (flags & PAGEDB_OPEN_CREATE)) || (!db->readonly && db->check)) {
    rc = pdb_err(db, &db->err, PAGEDB_MISUSE,
                 "pagedb_open %s: flags 0x%x must be READONLY with optional CHECK, or READWRITE with optional"
                 " CREATE", path, flags);
  } else if ((rc = pdb_vfs_choose(path, vfs, !db->readonly, &db->vfs, why, sizeof why)) != PAGEDB_OK) {
    rc = pdb_err(db, &db->err, rc, "%s", why);
  } else if (!(db->path = pdb_strdup(path)) || !(db->catpath = pdb_malloc(strlen(path) + 9))) {
    rc = pdb_err(db, &db->err, PAGEDB_NOMEM, "out of memory opening %s", path);
  } else {
    sprintf(db->catpath, "%s-catalog", path);
    rc = open_dataset(db, flags);
  }
  if (rc != PAGEDB_OK) db->failed = 1;
  return rc;
}

int pagedb_close(pagedb *db) {
  if (!db) return PAGEDB_OK;
  /* In a process forked after the open, close frees this process's copy
  ** only: no lock (another thread of the parent may have held one at the
  ** fork), no commit, no catalog thread to join (it is the parent's), and
  ** the catalog's SQLite connection is not closed: SQLite forbids using a
  ** connection across fork(), and closing it could checkpoint and delete
  ** the WAL the parent has open (its memory is the child's loss).  Writers
  ** write nothing in a child (api_writer_free). */
  int forked = db->pid != getpid();
  if (!forked) pthread_mutex_lock(&db->mu);
  while (db->readers) {
    pagedb_reader *r = db->readers;
    db->readers = r->next;
    api_reader_free(r);
  }
  int rc = PAGEDB_OK;
  while (db->writers) {
    pagedb_writer *w = db->writers;
    db->writers = w->next;
    pdb_msg err = { 0 };
    int wrc = api_writer_free(w, &err);
    if (rc == PAGEDB_OK && wrc != PAGEDB_OK && !forked) rc = pdb_err_copy(db, &db->err, &err);
  }
  if (!forked) {
    pthread_mutex_unlock(&db->mu);
    stop_thread(db);
  }
  if (!forked && !db->failed && !db->readonly && !atomic_load(&db->broken)) {
    int crc = pagedb_commit(db);
    if (rc == PAGEDB_OK) rc = crc;
    /* The writer's close leaves NAME-catalog holding every commit, its WAL
    ** merged and emptied (doc/remote.md uploads NAME and NAME-catalog).
    ** A merge that cannot finish -- a reader on an older commit (BUSY), an
    ** I/O error -- fails nothing: every commit is durable in the WAL, which
    ** SQLite reads, and the next writer's close merges it.  So it is not
    ** the close's result (which says whether the final commit succeeded);
    ** what shows it is a NAME-catalog-wal left non-empty, which
    ** doc/remote.md tells an uploader to look for. */
    if (crc == PAGEDB_OK && !atomic_load(&db->broken)) {
      pdb_msg err = { 0 };
      (void)cat_merge(db->cat, &err);
    }
  }
  free_runs(db->todo);
  free_runs(db->inserted);
  pdb_free(db->del);
  parts_close(db);
  pager_close(db->pager);
  if (!forked) cat_close(db->cat);
  idx_free(db->idx);
  dx_close(db->pinned);
  dict_free_all(db);
  if (!forked) {
    pthread_mutex_destroy(&db->dict_mu);
    pthread_mutex_destroy(&db->mu);
    pthread_mutex_destroy(&db->commit_mu);
    pthread_mutex_destroy(&db->cat_mu);
    pthread_mutex_destroy(&db->wake_mu);
    pthread_cond_destroy(&db->wake_cv);
  }
  pdb_free(db->path);
  pdb_free(db->catpath);
  if (rc == PAGEDB_OK) pdb_err_forget(db);
  pdb_free(db);
  atomic_fetch_sub(&pdb_handles, 1);
  return rc;
}

/* --- schema ------------------------------------------------------------- */

/* A dataset's schema is open until its first page is claimed. */
static int schema_open(pagedb *db, const char *what) {
  int rc = api_usable(db, &db->err);
  if (rc == PAGEDB_OK && !db->readonly) rc = api_own(db, &db->err);
  if (rc != PAGEDB_OK) return rc;
  if (db->readonly) return pdb_err(db, &db->err, PAGEDB_READONLY, "%s: %s: the dataset is open read-only", db->path, what);
  pthread_mutex_lock(&db->mu);
  int busy = db->writers != NULL;
  pthread_mutex_unlock(&db->mu);
  if (busy || pager_claimed(db->pager) > 0)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: %s: the dataset already has %s", db->path, what,
                   busy ? "an open writer" : "samples");
  return PAGEDB_OK;
}

/*
** A field can be added while no writer or reader is open (the index and
** every slot change width under them) and everything written is committed
** (the slots of written runs, waiting in the pager or in the catalog's
** transaction, have the old width).  Committed samples are re-laid out.
*/
static int field_add_open(pagedb *db) {
  int rc = api_usable(db, &db->err);
  if (rc == PAGEDB_OK && !db->readonly) rc = api_own(db, &db->err);
  if (rc != PAGEDB_OK) return rc;
  if (db->readonly)
    return pdb_err(db, &db->err, PAGEDB_READONLY, "%s: cannot add a field: the dataset is open read-only", db->path);
  pthread_mutex_lock(&db->mu);
  int writer = db->writers != NULL, reader = db->readers != NULL;
  pthread_mutex_unlock(&db->mu);
  if (writer || reader)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: cannot add a field while a %s is open on the handle: close it first",
                   db->path, writer ? "writer" : "reader");
  uint64_t claimed = pager_claimed(db->pager), committed = atomic_load(&db->committed);
  if (claimed != committed)
    return pdb_err(db, &db->err, PAGEDB_MISUSE,
                   "%s: cannot add a field: the dataset has uncommitted samples (%llu pages written past the %llu"
                   " committed): commit first", db->path, (unsigned long long)(claimed - committed),
                   (unsigned long long)committed);
  return PAGEDB_OK;
}

/* Copying an index into one whose slots have room for one more field. */
typedef struct Widen {
  Index *x;                 /* the new index */
  int nfield;               /* fields of the old slots */
  uint64_t *slot;           /* a new slot being built */
} Widen;

static int widen_one(void *ctx, int64_t id, const uint64_t *s) {
  Widen *w = ctx;
  widen_slot(w->slot, id, s, w->nfield);
  int rc = idx_reserve(w->x, id);
  if (rc == PAGEDB_OK) rc = idx_publish(w->x, w->slot);
  return rc == PAGEDB_CONSTRAINT ? PAGEDB_CORRUPT : rc;   /* an id twice: the old index was wrong */
}

/*
** pagedb_field_add with an index file: a new file of wider slots is
** written (NAME-index.new), the field is added to the catalog, then the
** catalog records the new file and it is renamed in.  A crash before that
** second commit leaves the old file, whose slots no longer fit the schema:
** the next open finds it stale and rebuilds it.  commit_mu and cat_mu held.
*/
static int field_add_disk(pagedb *db, const CatField *f) {
  pdb_msg *m = &db->err;
  Dx *x;
  DxMeta xm;
  /* The first tensor field sets its feature bit in the same transaction
  ** (cat_field_add): the new file is the version the features will need. */
  uint64_t features = db->features | (f->type == PAGEDB_TENSOR ? CAT_FEATURE_TENSOR : 0);
  int rc = write_index(db, m, db->idx, f, features ? 2 : 1,
                       atomic_load(&db->committed), NULL, &x, &xm);
  if (rc != PAGEDB_OK) return rc;
  rc = cat_field_add(db->cat, m, db->nfield, f);
  if (rc == PAGEDB_IOERR_SYNC) atomic_store(&db->broken, rc);   /* the field is in doubt */
  if (rc != PAGEDB_OK) {
    dx_close(x);
    return rc;
  }
  db->fields[db->nfield++] = *f;
  db->nw = slot_words(db->nfield);
  db->features = features;
  set_isbytes(db);
  rc = stage_ix_meta(db, m, &xm);
  if (rc == PAGEDB_OK) rc = cat_commit(db->cat, m, atomic_load(&db->committed), db->nsample);
  if (rc != PAGEDB_OK) {
    /* The field is added; the index file is stale until the next open
    ** rebuilds it, and this handle cannot go on with the old slots. */
    cat_rollback(db->cat);
    dx_close(x);
    atomic_store(&db->broken, rc);
    char why[PDB_MSG_MAX];
    snprintf(why, sizeof why, "%s", pdb_msg_text(m));
    return pdb_err(db, m, rc, "%s: field '%s' added, but its index could not be recorded (%s); reopen", db->path,
                   f->name, why);
  }
  db->ixmeta = xm;
  rc = install_index(db, m, x);
  if (rc != PAGEDB_OK) atomic_store(&db->broken, rc);
  return rc;
}

int pagedb_set_page_size(pagedb *db, size_t bytes) {
  if (!db) return PAGEDB_MISUSE;
  int rc = schema_open(db, "cannot set the page size");
  if (rc != PAGEDB_OK) return rc;
  if (db->nfield > 0)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: the page size must be set before the first field", db->path);
  if (bytes < PAGEDB_MIN_PAGE_SIZE || bytes > PAGEDB_MAX_PAGE_SIZE || (bytes & (bytes - 1)))
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: page size %zu is not a power of two from %u to %u", db->path,
                   bytes, PAGEDB_MIN_PAGE_SIZE, PAGEDB_MAX_PAGE_SIZE);
  if (bytes == pager_page_size(db->pager)) return PAGEDB_OK;
  rc = pager_set_page_size(db->pager, &db->err, (uint32_t)bytes);
  if (rc == PAGEDB_OK) rc = cat_set_page_size(db->cat, &db->err, (uint32_t)bytes);
  return rc;
}

size_t pagedb_page_size(pagedb *db) {
  return db && db->pager ? pager_page_size(db->pager) : 0;
}

static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > PAGEDB_MAX_NAME || isdigit((unsigned char)s[0])) return 0;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-') return 0;
  return strcasecmp(s, "id") && strcasecmp(s, "page") && strcasecmp(s, "off");
}

int pagedb_field_add(pagedb *db, const char *name, int type, int codec) {
  return pagedb_field_add_aligned(db, name, type, codec, PAGEDB_ALIGN_DEFAULT);
}

static int field_add(pagedb *db, const char *name, int type, int codec, int align, const TensorDecl *tensor);

int pagedb_field_add_aligned(pagedb *db, const char *name, int type, int codec, int align) {
  if (!db) return PAGEDB_MISUSE;
  if (type == PAGEDB_TENSOR)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: field '%s': a tensor field is added with pagedb_field_add_tensor",
                   db->path, name ? name : "(null)");
  return field_add(db, name, type, codec, align, NULL);
}

int pagedb_field_add_tensor(pagedb *db, const char *name, int dtype, int ndim, const int64_t *dims, int codec,
                            int align) {
  if (!db) return PAGEDB_MISUSE;
  TensorDecl d;
  char why[160];
  if (tensor_decl(&d, dtype, ndim, dims, why, sizeof why) != 0)
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: tensor field '%s': %s", db->path, name ? name : "(null)", why);
  if (align != PAGEDB_ALIGN_DEFAULT && align >= 1 && align < d.esize)
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: tensor field '%s': alignment %d is below the %d-byte %s elements",
                   db->path, name ? name : "(null)", align, d.esize, pagedb_dtype_name(dtype));
  return field_add(db, name, PAGEDB_TENSOR, codec, align, &d);
}

int pagedb_field_tensor(pagedb *db, int i, int *dtype, int *ndim, int64_t *dims) {
  if (!db || i < 0 || i >= db->nfield) return PAGEDB_RANGE;
  const CatField *f = &db->fields[i];
  if (f->type != PAGEDB_TENSOR) return PAGEDB_MISMATCH;
  if (dtype) *dtype = f->tensor.dtype;
  if (ndim) *ndim = f->tensor.ndim;
  if (dims) memcpy(dims, f->tensor.dims, (size_t)f->tensor.ndim * sizeof *dims);
  return PAGEDB_OK;
}

/* pagedb_field_add_aligned, and with TENSOR (type PAGEDB_TENSOR, checked)
** pagedb_field_add_tensor: the field, in the catalog and the index. */
static int field_add_core(pagedb *db, const char *name, int type, int codec, int align, const TensorDecl *tensor) {
  int rc = field_add_open(db);
  if (rc != PAGEDB_OK) return rc;
  if (!name || !valid_name(name))
    return pdb_err(db, &db->err, PAGEDB_MISUSE,
                   "%s: invalid field name '%s': use 1 to %d letters, digits, '_', '.' or '-', not starting with a"
                   " digit, and not id, page or off", db->path, name ? name : "(null)", PAGEDB_MAX_NAME);
  if (type < PAGEDB_BYTES || type > PAGEDB_TENSOR)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: field '%s': unknown type %d", db->path, name, type);
  if (!codec_check(type, codec, &codec))
    return pdb_err(db, &db->err, PAGEDB_MISUSE,
                   "%s: field '%s': codec %d (kind %d, level %d) is not one for a %s field: use PAGEDB_CODEC_NONE, or for"
                   " BYTES/TEXT PAGEDB_CODEC_LZ4 (level 0..65537), PAGEDB_CODEC_LZ4HC (level 0..12) or PAGEDB_CODEC_ZSTD[_DICT]"
                   " (level -131072..22)",
                   db->path, name, codec, PAGEDB_CODEC_KIND(codec), PAGEDB_CODEC_LEVEL_OF(codec),
                   type == PAGEDB_INT ? "INT" : type == PAGEDB_REAL ? "REAL" : "BYTES/TEXT/TENSOR");
  for (int i = 0; i < db->nfield; i++)
    if (strcasecmp(db->fields[i].name, name) == 0)
      return pdb_err(db, &db->err, PAGEDB_CONSTRAINT, "%s: a field named '%s' exists already", db->path,
                     db->fields[i].name);
  int stored = cat_type_stored(type);
  if (align < 0 || align > PAGEDB_MAX_ALIGN || (align & (align - 1)) != 0 || (!stored && align > 1))
    return pdb_err(db, &db->err, PAGEDB_RANGE,
                   "%s: field '%s': alignment %d is not %s", db->path, name, align,
                   stored ? "a power of two from 1 to 64 (or 0, the default)"
                          : "0 or 1: an INT or REAL field is kept in the catalog, not in pages");
  if (align == PAGEDB_ALIGN_DEFAULT) align = type == PAGEDB_BYTES || type == PAGEDB_TENSOR ? 8 : 1;
  /* A tensor's elements must be aligned to their size: on a dataset with
  ** committed pages, G is enough when it is (the default cannot grow it). */
  if (tensor && align == 8 && atomic_load(&db->committed) > 0 && records_align(db) >= tensor->esize
      && records_align(db) < 8)
    align = records_align(db);
  /* Committed records are laid out at the alignment of the fields they
  ** were written for: a larger one would move their values. */
  if (align > records_align(db) && atomic_load(&db->committed) > 0)
    return pdb_err(db, &db->err, PAGEDB_MISUSE,
                   "%s: field '%s': alignment %d is larger than the %d bytes the committed records are laid out at:"
                   " add it with at most %d, or declare it in a new dataset before its first commit",
                   db->path, name, align, records_align(db), records_align(db));
  if (db->nfield >= PAGEDB_MAX_FIELDS)
    return pdb_err(db, &db->err, PAGEDB_TOOBIG, "%s: a dataset has at most %d fields", db->path, PAGEDB_MAX_FIELDS);
  CatField f = { .type = type, .codec = codec, .align = align };
  if (tensor) f.tensor = *tensor;
  snprintf(f.name, sizeof f.name, "%s", name);
  if (idx_disk(db->idx)) {
    pthread_mutex_lock(&db->commit_mu);
    pthread_mutex_lock(&db->cat_mu);
    rc = field_add_disk(db, &f);
    pthread_mutex_unlock(&db->cat_mu);
    pthread_mutex_unlock(&db->commit_mu);
    return rc;
  }
  /* The index holds slots of the old width: build the new one first, so
  ** that running out of memory leaves the schema as it was. */
  Widen w = { NULL, db->nfield, pdb_malloc((size_t)slot_words(db->nfield + 1) * sizeof(uint64_t)) };
  if (!w.slot || idx_create(&w.x, slot_words(db->nfield + 1)) != PAGEDB_OK) {
    pdb_free(w.slot);
    return pdb_err(db, &db->err, PAGEDB_NOMEM, "out of memory adding field '%s'", name);
  }
  /* commit_mu: no commit publishes meanwhile (idx_scan); cat_mu: the
  ** catalog's connection. */
  pthread_mutex_lock(&db->commit_mu);
  pthread_mutex_lock(&db->cat_mu);
  uint64_t n = idx_count(db->idx);
  rc = idx_scan(db->idx, widen_one, &w);
  if (rc == PAGEDB_OK && NEVER(idx_count(w.x) != n)) rc = PAGEDB_CORRUPT;
  if (rc == PAGEDB_NOMEM)
    rc = pdb_err(db, &db->err, rc, "%s: out of memory re-indexing %llu samples to add field '%s'", db->path,
                 (unsigned long long)n, name);
  else if (rc != PAGEDB_OK)
    rc = pdb_err(db, &db->err, rc, "%s: the index of %llu samples is inconsistent; field '%s' not added", db->path,
                 (unsigned long long)n, name);
  if (rc == PAGEDB_OK) rc = cat_field_add(db->cat, &db->err, db->nfield, &f);
  if (rc == PAGEDB_IOERR_SYNC) atomic_store(&db->broken, rc);   /* the field is in doubt */
  if (rc == PAGEDB_OK) {
    db->fields[db->nfield++] = f;
    db->nw = slot_words(db->nfield);
    if (type == PAGEDB_TENSOR) db->features |= CAT_FEATURE_TENSOR;   /* cat_field_add set the bit */
    set_isbytes(db);
    idx_free(db->idx);
    db->idx = w.x;
    w.x = NULL;
  }
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  idx_free(w.x);
  pdb_free(w.slot);
  return rc;
}

int pagedb_field_index(pagedb *db, const char *name) {
  if (!db || !name) return -1;
  for (int i = 0; i < db->nfield; i++)
    if (strcmp(db->fields[i].name, name) == 0) return i;
  return -1;
}

int pagedb_field_count(pagedb *db) { return db ? db->nfield : 0; }

const char *pagedb_field_name(pagedb *db, int i) {
  return db && i >= 0 && i < db->nfield ? db->fields[i].name : NULL;
}

int pagedb_field_type(pagedb *db, int i) {
  return db && i >= 0 && i < db->nfield ? db->fields[i].type : -1;
}

/* field_add_core; then a dictionary codec's field starts learning its
** dictionary. */
static int field_add(pagedb *db, const char *name, int type, int codec, int align, const TensorDecl *tensor) {
  int rc = field_add_core(db, name, type, codec, align, tensor);
  if (rc == PAGEDB_OK && codec_uses_dict(db->fields[db->nfield - 1].codec))
    rc = dict_field_added(db, &db->err, db->nfield - 1);
  return rc;
}

int pagedb_field_codec(pagedb *db, int i) {
  return db && i >= 0 && i < db->nfield ? db->fields[i].codec : -1;
}

void pagedb_codec_name(int codec, char *out, size_t n) {
  if (out && n > 0) codec_name(codec, out, n);
}

int pagedb_codec_parse(const char *name, int *codec) {
  if (!name || !codec) return PAGEDB_MISUSE;
  /* A bare kind is its default level (the catalog always spells it). */
  char full[48];
  if (!strchr(name, ':') && strcmp(name, "none") != 0 && strlen(name) < 16) {
    snprintf(full, sizeof full, "%s:0", name);
    int c;
    for (int k = 1; k <= PAGEDB_CODEC_ZSTD_DICT; k++) {
      char kn[32];
      codec_name(PAGEDB_CODEC_LEVEL(k, 1), kn, sizeof kn);
      if (strncmp(kn, name, strlen(name)) == 0 && kn[strlen(name)] == ':' && codec_check(PAGEDB_BYTES, k, &c)) {
        *codec = c;
        return PAGEDB_OK;
      }
    }
    return PAGEDB_MISUSE;
  }
  return codec_parse(name, codec) ? PAGEDB_OK : PAGEDB_MISUSE;
}

int pagedb_field_align(pagedb *db, int i) {
  if (!db || i < 0 || i >= db->nfield) return -1;
  return db->isbytes[i] ? db->isbytes[i] : 1;
}

int64_t pagedb_count(pagedb *db) {
  return db && db->idx ? (int64_t)idx_count(db->idx) : 0;
}

int64_t pagedb_page_count(pagedb *db) {
  return db ? (int64_t)atomic_load(&db->committed) : 0;
}

const char *pagedb_path(pagedb *db) { return db ? db->path : NULL; }
const char *pagedb_catalog_path(pagedb *db) { return db ? db->catpath : NULL; }
const char *pagedb_vfs_name(pagedb *db) { return db && db->vfs ? db->vfs->zName : NULL; }

/*
** pagedb_sql_update with an index file: the N changed samples (SRC: their
** new INT and REAL values, index.h's layout) get new slots, copied from
** the old with those values, written copy-on-write and recorded in a
** second transaction.  commit_mu and cat_mu held.
*/
static int update_disk(pagedb *db, Dx *dx, const uint64_t *src, size_t n) {
  pdb_msg *m = &db->err;
  size_t nw = (size_t)db->nw;
  uint64_t *buf = pdb_malloc((n ? n : 1) * nw * sizeof *buf);
  DxChange *ch = pdb_malloc((n ? n : 1) * sizeof *ch);
  int rc = buf && ch ? PAGEDB_OK : pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory updating %zu samples", db->path, n);
  for (size_t i = 0; rc == PAGEDB_OK && i < n; i++) {
    const uint64_t *u = src + i * nw, *old = dx_find(dx, (int64_t)u[0]);
    uint64_t *t = buf + i * nw;
    if (!old || old == DX_BAD) {
      rc = pdb_err(db, m, PAGEDB_CORRUPT_INDEX, "%s: updated sample %lld has no valid index entry", db->path,
                   (long long)u[0]);
      break;
    }
    memcpy(t, old, nw * sizeof *t);
    for (int f = 0; f < db->nfield; f++) {
      if (api_is_bytes(db, f)) continue;
      *slot_val(t, db->nfield, f) = slot_get(u, db->nfield, f);
      if (slot_has(u, f)) slot_set(t, f);
      else slot_clear(t, f);
    }
    ch[i] = (DxChange){ (int64_t)u[0], t, 0 };
  }
  uint64_t end = atomic_load(&db->committed);
  DxMeta xm;
  if (rc == PAGEDB_OK) rc = ix_failed(db, dx_stage(dx, m, ch, n, 1, end, end * pager_page_size(db->pager), &xm));
  if (rc == PAGEDB_OK) rc = stage_ix_meta(db, m, &xm);
  if (rc == PAGEDB_OK) rc = cat_commit(db->cat, m, end, db->nsample);
  if (rc == PAGEDB_OK) {
    db->ixmeta = xm;
    rc = dx_publish(dx, m);
  } else {
    cat_rollback(db->cat);
    dx_abort(dx);
  }
  if (rc != PAGEDB_OK) {
    /* The update is committed; the index file is marked stale. */
    atomic_store(&db->broken, rc);
    char why[PDB_MSG_MAX];
    snprintf(why, sizeof why, "%s", pdb_msg_text(m));
    rc = pdb_err(db, m, rc, "%s: updated, but the index could not take the new values (%s); reopen to rebuild it",
                 db->path, why);
  }
  pdb_free(buf);
  pdb_free(ch);
  return rc;
}

int pagedb_sql_update(pagedb *db, const char *sql, int64_t *nchanged) {
  if (nchanged) *nchanged = 0;
  if (!db || !sql) return PAGEDB_MISUSE;
  pdb_msg *m = &db->err;
  int rc = api_usable(db, m);
  if (rc != PAGEDB_OK) return rc;
  if (db->readonly) return pdb_err(db, m, PAGEDB_READONLY, "%s is open read-only: no update", db->path);
  if ((rc = api_own(db, m)) != PAGEDB_OK) return rc;
  pthread_mutex_lock(&db->mu);
  const char *busy = db->writers ? "a writer is open" : db->readers ? "a reader is open" : NULL;
  pthread_mutex_unlock(&db->mu);
  if (busy) return pdb_err(db, m, PAGEDB_MISUSE, "cannot update %s: %s (close it first)", db->path, busy);
  uint64_t *slots = NULL;
  size_t n = 0;
  pthread_mutex_lock(&db->commit_mu);
  pthread_mutex_lock(&db->cat_mu);
  rc = commit_locked(db);
  /* With an index file, the update's transaction marks it stale, and a
  ** second one records it again once the changed slots are written: a
  ** crash between them leaves a stale index, rebuilt at the next open. */
  Dx *dx = idx_disk(db->idx);
  if (rc == PAGEDB_OK && dx) rc = stage_ix_meta(db, m, &(DxMeta){ 0 });
  if (rc == PAGEDB_OK) rc = cat_update(db->cat, m, sql, db->fields, db->nfield, &slots, &n);
  if (rc == PAGEDB_OK && dx) rc = update_disk(db, dx, slots, n);
  /* Committed: the index takes the new values.  No reader is open, so no
  ** read sees a slot change under it. */
  for (size_t i = 0; rc == PAGEDB_OK && !dx && i < n; i++) {
    const uint64_t *src = slots + i * (size_t)db->nw;
    uint64_t *s = (uint64_t *)idx_find(db->idx, (int64_t)src[0]);
    if (NEVER(!s)) continue;
    for (int f = 0; f < db->nfield; f++) {
      if (api_is_bytes(db, f)) continue;
      *slot_val(s, db->nfield, f) = slot_get(src, db->nfield, f);
      if (slot_has(src, f)) slot_set(s, f);
      else slot_clear(s, f);
    }
  }
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  pdb_free(slots);
  if (rc == PAGEDB_OK && nchanged) *nchanged = (int64_t)n;
  return rc;
}

int pagedb_sql_user(pagedb *db, const char *sql, int64_t *nchanged) {
  int64_t n = 0;
  if (nchanged) *nchanged = 0;
  if (!db || !sql) return PAGEDB_MISUSE;
  pdb_msg *m = &db->err;
  int rc = api_usable(db, m);
  if (rc != PAGEDB_OK) return rc;
  if (db->readonly) return pdb_err(db, m, PAGEDB_READONLY, "%s is open read-only: no change to user tables", db->path);
  pthread_mutex_lock(&db->mu);
  int busy = db->writers != NULL;
  pthread_mutex_unlock(&db->mu);
  if (busy) return pdb_err(db, m, PAGEDB_MISUSE, "cannot change user tables of %s: a writer is open (close it first)",
                           db->path);
  /* What was written is committed first, which ends the catalog's long
  ** write transaction; then the SQL runs in a transaction of its own. */
  pthread_mutex_lock(&db->commit_mu);
  pthread_mutex_lock(&db->cat_mu);
  rc = commit_locked(db);
  if (rc == PAGEDB_OK) rc = cat_user_sql(db->cat, m, sql, &n);
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  if (rc == PAGEDB_OK && nchanged) *nchanged = n;
  return rc;
}

int pagedb_sql(pagedb *db, const char *sql, int (*xrow)(void *, int, char **, char **), void *ctx) {
  if (!db || !sql) return PAGEDB_MISUSE;
  if (db->failed) return pdb_err(db, &db->err, PAGEDB_MISUSE, "the handle's open failed; only close it");
  return cat_sql(db->cat, &db->err, sql, xrow, NULL, ctx);
}

int pagedb_sql_values(pagedb *db, const char *sql,
                      int (*xrow)(void *, int, const pagedb_value *, const char *const *), void *ctx) {
  if (!db || !sql) return PAGEDB_MISUSE;
  if (db->failed) return pdb_err(db, &db->err, PAGEDB_MISUSE, "the handle's open failed; only close it");
  return cat_sql(db->cat, &db->err, sql, NULL, xrow, ctx);
}
