/*
** main.c -- opening and closing a dataset.
**
** Opening loads the whole committed catalog into the in-memory index (one
** scan of the sample table), checking every extent against the page table
** and the file, so that reads afterwards need no SQL and trust nothing;
** or maps the index file the last commit left (open_index).  The commit is
** commit.c's, the schema schema.c's.
*/
#include "api.h"
#include "dict.h"
#include "os.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

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
int api_records_align(const pagedb *db) {
  int g = 1;
  for (int f = 0; f < db->nfield; f++)
    if (api_is_bytes(db, f) && db->fields[f].align > g) g = db->fields[f].align;
  return g;
}

void api_set_isbytes(pagedb *db) {
  int g = api_records_align(db);
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
  uint64_t *store;          /* ...and, when widening or COPY, their slots */
  size_t n, cap;
  int widen;                /* the slots gain a field: old slots have nfield-1 */
  int copy;                 /* the source's slots are copied as they come (a scan's translated slot of a
                               referenced chunk lives only during its call: dindex.c) */
} Build;

#define BUILD_BATCH 65536

/* Re-lay out slot S of NF fields for NF+1 fields (index.h): presence bits,
** values and extents move to their new words; the new field is absent.
** Word 1, the record's offset, is unchanged: the new field is last in
** schema order, so no record gains bytes. */
void api_widen_slot(uint64_t *t, int64_t id, const uint64_t *s, int nf) {
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
    api_widen_slot(t, id, s, b->db->nfield);
    s = t;
  } else if (b->copy) {
    uint64_t *t = b->store + b->n * (size_t)slot_words(b->db->nfield + 1);
    memcpy(t, s, (size_t)b->db->nw * sizeof *t);
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
  DxChange *ch = api_commit_changes(b->db, b->m, 0, &k);
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

/* Part records from the catalog's rows (api_write_index of version 2), with
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
  DxPart d = { p->k, { 0 }, p->data_off, p->data_end, p->pages, p->samples, p->seal, p->uri, p->validator, 0, 0 };
  /* A part of the commit under way: its index file as the commit saw it,
  ** when chunks of it are referenced (the catalog does not keep that). */
  const PartCommit *pc = pr->db->pcommit;
  if (pc && pc->n && p->k >= pc->dx[0].k && p->k - pc->dx[0].k < pc->n) {
    d.index_id = pc->dx[p->k - pc->dx[0].k].index_id;
    d.index_len = pc->dx[p->k - pc->dx[0].k].index_len;
  }
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
int api_write_index(pagedb *db, pdb_msg *m, Index *src, const CatField *nf, int version, uint64_t end,
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
    int g = api_records_align(db);
    if (widen - 1 > g) g = widen - 1;
    for (int f = 0; f < db->nfield; f++) isbytes[f] = isbytes[f] ? (uint8_t)g : 0;
    isbytes[db->nfield] = widen > 1 ? (uint8_t)g : 0;
  }
  Build b = { db, m, NULL, pdb_malloc(BUILD_BATCH * sizeof *b.ch), NULL, 0, BUILD_BATCH, widen,
              idx_disk(src) && dx_version(idx_disk(src)) >= 3 };
  if (widen || b.copy) b.store = pdb_malloc(BUILD_BATCH * (size_t)slot_words(db->nfield + 1) * sizeof(uint64_t));
  int rc = !b.ch || ((widen || b.copy) && !b.store)
             ? pdb_err(db, m, PAGEDB_NOMEM, "out of memory writing index %s", path)
             : dx_create(db, m, db->vfs, path, pager_uuid(db->pager), slot_words(db->nfield + (widen ? 1 : 0)),
                         db->nfield + (widen ? 1 : 0), isbytes, tokes, version, &b.x);
  /* Version 2: every part the catalog's write connection sees (those of
  ** a commit under way included), then every sample, and those of the
  ** commit under way (written runs and parts' runs). */
  PartRows pr = { db, m, b.x, copy, 0 };
  if (rc == PAGEDB_OK && version >= 2 && (db->pcommit || (db->features & CAT_FEATURE_PARTS)))
    rc = cat_parts(db->cat, m, part_row, &pr);
  /* The commit's referenced chunks first (dx_stage_refs). */
  uint64_t nref = 0;
  if (rc == PAGEDB_OK && version >= 3 && !widen && !copy) rc = api_stage_refs(db, m, b.x, &nref);
  if (rc == PAGEDB_OK) rc = idx_scan(src, build_one, &b);
  uint64_t extra = nref;
  uint64_t nrun = 0;
  if (rc == PAGEDB_OK && version >= 2 && !widen && !copy) rc = build_runs(&b, &nrun);
  extra += nrun;
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

int api_retire_room(pagedb *db, pdb_msg *m) {
  if (db->nretired < db->capretired) return PAGEDB_OK;
  size_t cap = db->capretired ? 2 * db->capretired : 2;
  Index **r = pdb_realloc(db->retired, cap * sizeof *r);
  if (!r) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory committing parts into %s", db->path);
  db->retired = r;
  db->capretired = cap;
  return PAGEDB_OK;
}

/* Put the new index file X (written by api_write_index, XM committed) in
** force: rename it in, and make DB's index a memory part for reservations
** over it.  A failure to rename leaves NAME-index.new, which the next open
** renames in (dx_open); this handle goes on with X either way.  With
** LIVE the open readers switch to X and, if there were any, the index
** replaced is kept (api.h). */
int api_install_index(pagedb *db, pdb_msg *m, Dx *x, int live) {
  Index *ix;
  if (idx_create(&ix, 1) != PAGEDB_OK) {
    dx_close(x);
    return pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening the index of %s", db->path);
  }
  int rc = dx_install(x, m);
  int prc = dx_publish(x, m);
  if (rc == PAGEDB_OK) rc = prc;
  idx_set_disk(ix, x);
  /* Readers switch under MU, as a reader opening takes the index in force
  ** (reader.c): a lookup under way on the old finishes on it, kept. */
  pthread_mutex_lock(&db->mu);
  Index *old = db->idx;
  db->idx = ix;
  int readers = db->readers != NULL;
  for (pagedb_reader *r = db->readers; r; r = r->next) {
    assert(live);
    atomic_store_explicit(&r->idx, ix, memory_order_release);
    atomic_store_explicit(&r->dx, x, memory_order_release);
  }
  pthread_mutex_unlock(&db->mu);
  /* Kept only if a reader may be reading it: else its map (and the old
  ** file's pages, renamed over) go now, as without LIVE. */
  if (readers && old) {
    assert(db->nretired < db->capretired);
    db->retired[db->nretired++] = old;
  } else {
    drop_index(db, old);
  }
  return rc;
}

/* A read-write open without a usable index file: write one from the
** in-memory index that load() built, and commit it. */
static int rebuild_index(pagedb *db, pdb_msg *m) {
  Dx *x;
  DxMeta xm;
  int rc = api_write_index(db, m, db->idx, NULL, api_ix_version(db->features), atomic_load(&db->committed), NULL, &x,
                           &xm);
  if (rc != PAGEDB_OK) return rc;
  rc = api_stage_ix_meta(db, m, &xm);
  if (rc == PAGEDB_OK) rc = cat_commit(db->cat, m, atomic_load(&db->committed), db->nsample);
  if (rc != PAGEDB_OK) {
    cat_rollback(db->cat);
    dx_close(x);
    return rc;
  }
  db->ixmeta = xm;
  return api_install_index(db, m, x, 0);
}

int api_index_copy(pagedb *db, pdb_msg *m, const ApiIxCopy *copy, Dx **out, DxMeta *xm) {
  pthread_mutex_lock(&db->cat_mu);   /* cat_parts reads on the write connection */
  int rc = api_write_index(db, m, db->idx, NULL, api_ix_version(db->features), atomic_load(&db->committed), copy, out,
                           xm);
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
                 !db->readonly, api_ix_version(db->features), &x);
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
  api_set_isbytes(db);
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
    api_stop_thread(db);
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
  api_free_runs(db->todo);
  api_free_runs(db->inserted);
  pdb_free(db->del);
  parts_close(db);
  pager_close(db->pager);
  if (!forked) cat_close(db->cat);
  idx_free(db->idx);
  for (size_t i = 0; i < db->nretired; i++) idx_free(db->retired[i]);
  pdb_free(db->retired);
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
