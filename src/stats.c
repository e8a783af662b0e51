/*
** stats.c -- where a dataset's bytes go (pagedb_stats, pagedb_field_stats).
**
** Everything is computed from the committed state, with no SQL per sample:
** the page table (one scan, cat_runs) gives the runs and the bytes they
** use, the in-memory index (idx_scan) the live samples and their extents.
** Every byte of the committed pages is then in exactly one of five parts:
**
**   pages * page_size = bytes_stored   extents of live samples
**                     + bytes_padding  zeros before them, for alignment
**                     + bytes_dead     extents no live sample refers to
**                     + bytes_header   64 bytes per run that holds data
**                     + bytes_waste    past each run's used bytes
**
** bytes_dead is what is left of the runs' used bytes once the headers and
** the live records are taken out, not a counter kept elsewhere, so it is
** right however samples stopped being live (pagedb_delete, if present).
**
** Consistency: commit_mu is held throughout, so no commit publishes
** samples into the index or advances the committed page count meanwhile
** (idx_scan must not run concurrently with idx_publish); cat_mu serialises
** the catalog's connection.  The connection may hold runs of an open,
** uncommitted transaction: only runs below the committed page count are
** counted.
*/
#include "api.h"

#include <stdio.h>

typedef struct StatScan {
  const pagedb *db;
  int field;                /* pagedb_field_stats: the field; -1 for all */
  pagedb_stat *all;
  pagedb_field_stat *one;
} StatScan;

static int stat_one(void *ctx, int64_t id, const uint64_t *s) {
  StatScan *st = ctx;
  const pagedb *db = st->db;
  int nf = db->nfield;
  (void)id;
  if (st->all) {
    st->all->samples++;
    int64_t stored = 0;
    for (int f = 0; f < nf; f++) {
      if (!api_is_bytes(db, f) || !slot_has(s, f)) continue;
      stored += (int64_t)slot_stored(s, nf, f);
      st->all->bytes_raw += (int64_t)slot_get(s, nf, f);
    }
    st->all->bytes_stored += stored;
    st->all->bytes_padding += (int64_t)api_record_len(db, s) - stored;
    return PAGEDB_OK;
  }
  int f = st->field;
  if (!slot_has(s, f)) return PAGEDB_OK;
  st->one->values++;
  if (api_is_bytes(db, f)) {
    st->one->compressed += (slot_cext(s, nf, f)[0] & SLOT_Z) != 0;
    st->one->bytes_stored += (int64_t)slot_stored(s, nf, f);
    st->one->bytes_raw += (int64_t)slot_get(s, nf, f);
  }
  return PAGEDB_OK;
}

static int usable(pagedb *db) {
  if (db->failed) return pdb_err(db, &db->err, PAGEDB_MISUSE, "the handle's open failed; only close it");
  return PAGEDB_OK;
}

int pagedb_stats(pagedb *db, pagedb_stat *out) {
  if (!db || !out) return PAGEDB_MISUSE;
  memset(out, 0, sizeof *out);
  int rc = usable(db);
  if (rc != PAGEDB_OK) return rc;
  uint64_t ps = pager_page_size(db->pager);
  CatRun *runs = NULL;
  uint64_t nrun = 0;
  pthread_mutex_lock(&db->commit_mu);
  pthread_mutex_lock(&db->cat_mu);
  rc = cat_runs(db->cat, &db->err, &runs, &nrun);
  pthread_mutex_unlock(&db->cat_mu);
  /* The own file's runs, then the parts' (doc/format.md, "Parts"): their
  ** rows lie in the parts' windows, from page 2^56 / page size. */
  uint64_t committed = atomic_load(&db->committed), pages = 0, own = 0, wbase = PDB_MAX_DATA / ps;
  for (uint64_t i = 0; rc == PAGEDB_OK && i < nrun; i++) {
    const CatRun *r = &runs[i];
    if (r->pgno >= committed && r->pgno < wbase) continue;   /* a commit under way in another thread */
    if (r->pgno < wbase) own += r->npages;
    uint64_t cap = (uint64_t)r->npages * ps;
    out->runs++;
    out->multipage_runs += r->npages > 1;
    out->bytes_used += (int64_t)r->used;
    if (r->used > 0) out->bytes_header += PDB_PAGE_HDR;   /* a run given up (used 0) has none */
    /* [0,10%), ..., [90%,100%]: a full run belongs to the last bucket.  The
    ** rows are read again here, unchecked since the open: in 128 bits, so
    ** that a USED above 2^64/10 cannot wrap into the wrong bucket. */
    uint64_t b = r->used >= cap ? 9 : (uint64_t)((unsigned __int128)r->used * 10 / cap);
    out->fill_hist[b]++;
    pages += r->npages;
  }
  if (rc == PAGEDB_OK && own != committed)
    rc = pdb_err(db, &db->err, PAGEDB_CORRUPT_CATALOG,
                 "catalog %s: the page table covers %llu of the %llu committed pages", db->catpath,
                 (unsigned long long)own, (unsigned long long)committed);
  StatScan st = { db, -1, out, NULL };
  if (rc == PAGEDB_OK) rc = idx_scan(db->idx, stat_one, &st);
  out->moved = (int64_t)db->moved_committed;
  pthread_mutex_unlock(&db->commit_mu);
  pdb_free(runs);
  if (rc != PAGEDB_OK) {
    memset(out, 0, sizeof *out);
    return rc;
  }
  out->pages = (int64_t)pages;
  out->bytes_dead = out->bytes_used - out->bytes_header - out->bytes_stored - out->bytes_padding;
  out->bytes_waste = (int64_t)(pages * ps) - out->bytes_used;
  if (out->bytes_dead < 0) {
    int64_t over = -out->bytes_dead;
    memset(out, 0, sizeof *out);
    return pdb_err(db, &db->err, PAGEDB_CORRUPT_CATALOG,
                   "%s: the live samples' extents exceed the bytes the page table says are used by %lld",
                   db->path, (long long)over);
  }
  PagerIo io;
  pager_io(db->pager, &io);
  out->io_reads = (int64_t)io.reads;
  out->io_read_bytes = (int64_t)io.read_bytes;
  out->io_writes = (int64_t)io.writes;
  out->io_write_bytes = (int64_t)io.write_bytes;
  out->io_syncs = (int64_t)io.syncs;
  return PAGEDB_OK;
}

int pagedb_field_stats(pagedb *db, int field, pagedb_field_stat *out) {
  if (!db || !out) return PAGEDB_MISUSE;
  memset(out, 0, sizeof *out);
  int rc = usable(db);
  if (rc != PAGEDB_OK) return rc;
  if (field < 0 || field >= db->nfield)
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: no field number %d (the dataset has %d)", db->path, field,
                   db->nfield);
  StatScan st = { db, field, NULL, out };
  pthread_mutex_lock(&db->commit_mu);
  rc = idx_scan(db->idx, stat_one, &st);
  pthread_mutex_unlock(&db->commit_mu);
  return rc;
}
