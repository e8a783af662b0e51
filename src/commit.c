/*
** commit.c -- the commit, and the catalog thread that prepares it.
**
** Commit is the ordered half of the pager's invariants: the runs of the
** written prefix are inserted into the catalog's open transaction (mostly
** in advance, by the catalog thread), the data file is synced, the
** transaction commits, and only then do the samples become visible.  The
** index file's new bytes are written and synced beside the data's sync
** (ix_job_run), before the catalog's commit names them.
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

void api_stop_thread(pagedb *db) {
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

void api_free_runs(PageRecs *r) {
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
int api_stage_ix_meta(pagedb *db, pdb_msg *m, const DxMeta *xm) {
  int rc = cat_stage_meta(db->cat, m, "index_id", (int64_t)xm->id);
  if (rc == PAGEDB_OK) rc = cat_stage_meta(db->cat, m, "index_dir", (int64_t)xm->dir);
  if (rc == PAGEDB_OK) rc = cat_stage_meta(db->cat, m, "index_len", (int64_t)xm->len);
  if (rc == PAGEDB_OK) rc = cat_stage_meta(db->cat, m, "index_samples", (int64_t)xm->samples);
  if (rc == PAGEDB_OK) rc = cat_stage_meta(db->cat, m, "index_pages", (int64_t)xm->pages);
  return rc;
}

/* The failure RC of writing the index: a failed sync leaves it in doubt,
** as for the data file, so the handle is poisoned. */
int api_ix_failed(pagedb *db, int rc) {
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
DxChange *api_commit_changes(pagedb *db, pdb_msg *m, size_t extra, size_t *n) {
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

int api_stage_refs(pagedb *db, pdb_msg *m, Dx *dx, uint64_t *count) {
  PartCommit *pc = db->pcommit;
  int rc = PAGEDB_OK;
  *count = 0;
  for (size_t i = 0; pc && pc->ref && i < pc->n && rc == PAGEDB_OK; i++) {
    const PartRef *r = &pc->ref[i];
    if (!r->n) continue;
    rc = dx_stage_refs(dx, m, r->c, r->n, r->count, r->next);
    *count += r->count;
  }
  return rc;
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
  DxChange *ch = api_commit_changes(db, m, ndel, &n);
  if (!ch) return PAGEDB_NOMEM;
  for (uint64_t i = 0; i < ndel; i++) ch[n++] = (DxChange){ db->del[i], NULL, 0 };
  uint64_t ps = pager_page_size(db->pager);
  int rc = pc ? dx_stage_parts(dx, m, pc->dx, pc->n) : PAGEDB_OK;
  /* Referenced chunks before any other change (dx_stage_refs). */
  uint64_t nref;
  if (rc == PAGEDB_OK) rc = api_stage_refs(db, m, dx, &nref);
  if (rc == PAGEDB_OK) rc = dx_stage(dx, m, ch, n, 1, end, end * ps, xm);
  pdb_free(ch);
  return api_ix_failed(db, rc);
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

int api_commit_locked(pagedb *db) {
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
  if (rc == PAGEDB_OK && pc && (!dx || dx_version(dx) < api_parts_version(db))) {
    DxMeta wx;
    rc = api_write_index(db, m, db->idx, NULL, api_parts_version(db), end, NULL, &nx, &wx);
    if (rc == PAGEDB_OK) rc = sync_data_and_index(db, m, NULL, ndel, end, &xm);
    xm = wx;
  } else if (rc == PAGEDB_OK) {
    rc = sync_data_and_index(db, m, dx, ndel, end, &xm);
  }
  if (rc == PAGEDB_OK) rc = api_stage_ix_meta(db, m, &xm);
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
    rc = api_install_index(db, m, nx, 1);
    dx = NULL;
  } else if (dx && rc == PAGEDB_OK) {
    /* Visible in the snapshot first, then the reservations go (index.h). */
    rc = dx_publish(dx, m);
    for (PageRecs *r = db->inserted; r && rc == PAGEDB_OK; r = (PageRecs *)r->d.next)
      for (uint32_t i = 0; i < r->d.nsamples; i++) idx_release(db->idx, (int64_t)r->slots[(size_t)i * db->nw]);
    for (PageRecs *r = pc ? pc->runs : NULL; r && rc == PAGEDB_OK; r = (PageRecs *)r->d.next)
      for (uint32_t i = 0; i < r->d.nsamples; i++) idx_release(db->idx, (int64_t)r->slots[(size_t)i * db->nw]);
    for (size_t i = 0; pc && pc->lent && i < pc->n && rc == PAGEDB_OK; i++)
      for (uint64_t t = 0; !pc->lent[i].unreserved && t < pc->lent[i].n; t++) idx_release(db->idx, pc->lent[i].s[t].nid);
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
  api_free_runs(db->inserted);
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
  rc = api_commit_locked(db);
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
  int rc = api_commit_locked(db);
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
  if (!dx || dx_version(dx) < api_parts_version(db)) {
    /* The first commit of parts writes the index anew (version 3, or 2) and
    ** puts it in force under the handle: no writer may hold reservations in
    ** the old one; open readers switch to the new (api_install_index), the
    ** old kept until the close, for which room is made first.  What was
    ** written and deleted is committed first. */
    pthread_mutex_lock(&db->mu);
    int writer = db->writers != NULL;
    pthread_mutex_unlock(&db->mu);
    if (writer)
      rc = pdb_err(db, m, PAGEDB_MISUSE, "the first commit of parts into %s rewrites its index: close the handle's"
                   " writers first", db->path);
    if (rc == PAGEDB_OK) rc = api_retire_room(db, m);
    if (rc == PAGEDB_OK) rc = api_commit_locked(db);
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
      for (size_t j = 0; pc->ref && j < pc->ref[i].n; j++) pc->ref[i].c[j].k = k;
      *tail = lists[i];
      while (*tail) tail = (PageRecs **)&(*tail)->d.next;
      lists[i] = NULL;
    }
    db->pcommit = pc;
    rc = api_commit_locked(db);
    db->pcommit = NULL;
  }
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  return rc;
}
