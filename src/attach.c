/*
** attach.c -- pagedb_attach: append another dataset's committed samples,
** copying its runs page by page.
**
** A run is copied as it lies on disk.  Its records (the stored bytes,
** compressed or not) are never decoded; only the run header is written
** anew by pager_write_start (DB's uuid, the new page number, the live
** sample count, the checksums).  Each sample's slot is OTHER's with the id
** remapped and the record's offset rebased onto the new page: values,
** presence bits, stored lengths and extent checksums stay as they were, so
** a sample reads back byte for byte as it did in OTHER.
**
** The order of the steps is what makes an attach all or nothing:
**
**   1. Open OTHER read-only with DB's VFS; refuse another schema or page
**      size (PAGEDB_MISMATCH) and DB's own file (PAGEDB_MISUSE).
**   2. Plan the ids in OTHER's id order and reserve every one in DB's
**      index (idx_reserve) before a byte is written: a collision with a
**      committed sample, or one a writer has begun, fails here with nothing
**      to undo but the reservations.
**   3. Match OTHER's samples to its runs (both in page order) and claim all
**      the pages to copy with one pager_claim, so the copy is contiguous
**      and mirrors OTHER, and so that a failed copy can give the claim back
**      whole (pager_unclaim): its pages then lie past every claim, to be
**      overwritten or discarded at the next open like any uncommitted
**      page.  If a writer of DB claimed pages after ours meanwhile, the
**      claim cannot be given back; it is handed to the pager as one dead
**      run (invariant 3 of pager.c), as a writer's failed page is.
**   4. Copy each run: read its used bytes through OTHER's pager (a run of
**      one of OTHER's parts through that part's: parts_file), check its
**      header and checksum against OTHER's catalog (a damaged run must not
**      come out of pager_write_start with a fresh, valid checksum), and
**      write it with pager_write_start.  On a file whose writes are
**      asynchronous the next run is read while the last is being written.
**   5. Hand every run to the pager and commit, in one step under commit_mu
**      (api_commit_runs): no concurrent commit sees part of the attach.
*/
#include "api.h"
#include "dict.h"
#include "os.h"

#include <stdio.h>
#include <sys/stat.h>

typedef IdSample Sample;

/* A run of OTHER to copy, and where it goes. */
typedef struct Copy {
  const CatRun *run;
  uint64_t first, n;        /* its samples: s[first, first+n) in offset order */
  uint64_t pgno;            /* its first page in DB */
} Copy;

typedef struct Attach {
  pagedb *db;
  pagedb *o;                /* OTHER, read-only */
  const char *other;        /* OTHER's path, for messages */
  pdb_msg em;               /* the failure, before it is reported on DB */
  IdPlan ids;               /* OTHER's samples and their ids in DB */
  CatRun *runs;             /* OTHER's page table */
  uint64_t nrun;
  Copy *copy;
  uint64_t ncopy, npages;   /* runs to copy and their pages */
  int copied;               /* every run is written and handed over */
} Attach;

/* Whether paths A and B name the same file. */
static int same_file(const char *a, const char *b) {
  struct stat x, y;
  if (stat(a, &x) == 0 && stat(b, &y) == 0) return x.st_dev == y.st_dev && x.st_ino == y.st_ino;
  return strcmp(a, b) == 0;
}

/* The type of F as field.type writes it, into OUT (TENSOR_TEXT_MAX). */
static const char *type_name(const CatField *f, char *out) {
  int t = f->type;
  if (t == PAGEDB_TENSOR) tensor_format(&f->tensor, out);
  else snprintf(out, TENSOR_TEXT_MAX, "%s", t == PAGEDB_BYTES ? "bytes" : t == PAGEDB_TEXT ? "text" : t == PAGEDB_INT ? "int" : "real");
  return out;
}

/* PAGEDB_MISMATCH unless OTHER has DB's page size and fields (names,
** types, codecs and alignments). */
int attach_check_schema(pagedb *db, pagedb *o, pdb_msg *em) {
  uint32_t ps = pager_page_size(db->pager), ops = pager_page_size(o->pager);
  if (ps != ops)
    return pdb_err(db, em, PAGEDB_MISMATCH, "its page size is %u bytes, %s's is %u", ops, db->path, ps);
  if (o->nfield != db->nfield)
    return pdb_err(db, em, PAGEDB_MISMATCH, "it has %d fields, %s has %d", o->nfield, db->path, db->nfield);
  for (int f = 0; f < db->nfield; f++) {
    const CatField *x = &db->fields[f], *y = &o->fields[f];
    char tx[TENSOR_TEXT_MAX], ty[TENSOR_TEXT_MAX];
    /* A tensor's declaration is its canonical text: equal texts, equal declarations. */
    type_name(x, tx);
    type_name(y, ty);
    int same_type = x->type == y->type && strcmp(tx, ty) == 0;
    if (strcmp(x->name, y->name) == 0 && same_type && x->codec == y->codec) {
      /* Records are copied byte for byte: their values must lie where
      ** DB's alignment puts them (api_extent). */
      if (db->isbytes[f] == o->isbytes[f]) continue;
      return pdb_err(db, em, PAGEDB_MISMATCH, "its records are laid out at another alignment: field %d ('%s')"
                     " is aligned to %d bytes there, to %d in %s", f, x->name, o->isbytes[f], db->isbytes[f],
                     db->path);
    }
    char cx[32], cy[32];
    codec_name(x->codec, cx, sizeof cx);
    codec_name(y->codec, cy, sizeof cy);
    const char *what = strcmp(x->name, y->name) ? "name" : !same_type ? "type" : "codec";
    return pdb_err(db, em, PAGEDB_MISMATCH, "the %ss of field %d differ: '%s' %s %s there, '%s' %s %s in %s",
                   what, f, y->name, ty, cy, x->name, tx, cx, db->path);
  }
  return PAGEDB_OK;
}

int ids_collect(void *ctx, int64_t id, const uint64_t *slot) {
  IdPlan *a = ctx;
  if (a->n == a->cap) {
    uint64_t cap = a->cap ? a->cap * 2 : 1024;
    Sample *s = pdb_realloc(a->s, cap * sizeof *s);
    if (!s) return PAGEDB_NOMEM;
    a->s = s;
    a->cap = cap;
  }
  if (a->store) {
    if (a->n >= a->store_cap)
      return pdb_err(a->db, a->em, PAGEDB_CORRUPT_INDEX, "its index lists more samples than it counts (%llu)",
                     (unsigned long long)a->store_cap);
    uint64_t *t = a->store + a->n * (size_t)a->db->nw;
    memcpy(t, slot, (size_t)a->db->nw * sizeof *t);
    slot = t;
  }
  a->s[a->n++] = (Sample){ id, id, slot };
  return PAGEDB_OK;
}

static int by_id(const void *x, const void *y) {
  const Sample *a = x, *b = y;
  return a->id < b->id ? -1 : a->id > b->id;
}

static int by_offset(const void *x, const void *y) {
  uint64_t a = ((const Sample *)x)->slot[1], b = ((const Sample *)y)->slot[1];
  return a < b ? -1 : a > b;
}

/* Release the reserved ids, and AFTER's block if no id was taken after it. */
void ids_release(IdPlan *a) {
  for (uint64_t i = 0; i < a->nreserved; i++) idx_release(a->db->idx, a->s[i].nid);
  if (a->own) atomic_fetch_sub(a->own, a->nreserved);
  a->nreserved = 0;
  if (a->after >= 0) {
    int64_t end = a->after + (int64_t)a->n;
    atomic_compare_exchange_strong(&a->db->next_auto, &end, a->after);
    a->after = -1;
  }
}

/*
** Give the samples, sorted by id, their ids in DB and reserve them all; on
** failure none stays reserved.  AFTER takes its block of ids from
** next_auto in one step, as PAGEDB_AUTO_ID does one id, and gives it back
** if nothing took an id after it.
*/
int ids_plan(IdPlan *a, int policy, int64_t offset) {
  pagedb *db = a->db;
  /* (An empty set leaves a->s NULL, which pdb_sort never hands qsort.)
  ** Listed from an index they come sorted (a commit of parts): one pass
  ** finds it so, and spares the sort's n log n. */
  uint64_t sorted = 1;
  while (sorted < a->n && a->s[sorted - 1].id < a->s[sorted].id) sorted++;
  if (sorted < a->n) pdb_sort(a->s, a->n, sizeof *a->s, by_id);
  int64_t base = 0;
  if (policy == PAGEDB_ATTACH_AFTER) {
    base = atomic_load(&db->next_auto);
    do {
      if (base < 0 || a->n > (uint64_t)(INT64_MAX - base))
        return pdb_err(db, a->em, PAGEDB_FULL, "its %llu samples do not fit in the ids after %lld of %s",
                       (unsigned long long)a->n, (long long)base - 1, db->path);
    } while (!atomic_compare_exchange_weak(&db->next_auto, &base, base + (int64_t)a->n));
    a->after = base;
  }
  int rc = PAGEDB_OK;
  for (uint64_t i = 0; i < a->n && rc == PAGEDB_OK; i++) {
    Sample *s = &a->s[i];
    if (policy == PAGEDB_ATTACH_AFTER) {
      s->nid = base + (int64_t)i;
    } else if (policy == PAGEDB_ATTACH_OFFSET) {
      /* s->id >= 0, so only one direction can leave the ids per sign. */
      if (offset > 0 ? s->id > INT64_MAX - offset : s->id + offset < 0)
        rc = pdb_err(db, a->em, PAGEDB_FULL, "its sample %lld plus the offset %lld falls outside the ids 0..%lld",
                     (long long)s->id, (long long)offset, (long long)INT64_MAX);
      else
        s->nid = s->id + offset;
    }
  }
  if (rc == PAGEDB_OK && a->n) idx_expect(db->idx, a->s[0].nid, a->s[a->n - 1].nid, a->n);
  for (uint64_t i = 0; i < a->n && rc == PAGEDB_OK; i++) {
    Sample *s = &a->s[i];
    rc = idx_reserve(db->idx, s->nid);
    if (rc == PAGEDB_OK) {
      a->nreserved = i + 1;
      if (a->own) atomic_fetch_add(a->own, 1);
    } else if (rc == PAGEDB_CONSTRAINT) {
      char theirs[64] = "";
      if (s->nid != s->id) snprintf(theirs, sizeof theirs, " (its sample %lld)", (long long)s->id);
      rc = pdb_err(db, a->em, rc, "sample id %lld%s is already used in %s by %s", (long long)s->nid, theirs,
                   db->path, idx_find(db->idx, s->nid) ? "a committed sample" : "a sample being written");
    } else {
      rc = pdb_err(db, a->em, rc, "out of memory reserving sample id %lld in %s", (long long)s->nid, db->path);
    }
  }
  if (rc != PAGEDB_OK) {
    ids_release(a);
    return rc;
  }
  /* Automatic ids stay above every id seen: the largest is the last. */
  if (policy != PAGEDB_ATTACH_AFTER && a->n > 0) ids_seen(db, a->s[a->n - 1].nid);
  return PAGEDB_OK;
}

void ids_seen(pagedb *db, int64_t top) {
  int64_t want = top < INT64_MAX ? top + 1 : INT64_MAX, next = atomic_load(&db->next_auto);
  while (next < want && !atomic_compare_exchange_weak(&db->next_auto, &next, want)) {}
}

/*
** Match the samples, sorted by record offset, to OTHER's committed runs in
** page order: a run's samples start on its first page.  Runs that hold no
** sample are not copied.  Each record is checked to lie in what its run
** wrote, as the open of OTHER did against the page table it read then.
*/
static int plan_runs(Attach *a) {
  pagedb *o = a->o;
  uint32_t ps = pager_page_size(o->pager);
  uint64_t committed = atomic_load(&o->committed);
  int rc = cat_runs(o->cat, &a->em, &a->runs, &a->nrun);
  if (rc != PAGEDB_OK) return rc;
  a->copy = pdb_malloc((a->nrun ? a->nrun : 1) * sizeof *a->copy);
  if (!a->copy) return pdb_err(a->db, &a->em, PAGEDB_NOMEM, "out of memory planning %llu runs", (unsigned long long)a->nrun);
  uint64_t i = 0;
  for (uint64_t k = 0; k < a->nrun; k++) {
    const CatRun *r = &a->runs[k];
    /* Its own committed pages, then its parts' runs (in their windows, at
    ** and above 2^56: past every page of its own). */
    if (r->pgno >= committed && r->pgno < PDB_MAX_DATA / ps) continue;
    uint64_t lo = r->pgno * ps, first = i;
    if (i < a->ids.n && a->ids.s[i].slot[1] < lo) break;    /* a sample on no run's first page */
    while (i < a->ids.n && a->ids.s[i].slot[1] < lo + ps) {
      const Sample *s = &a->ids.s[i];
      uint64_t off = s->slot[1] - lo, len = api_record_len(o, s->slot);
      if (r->used == 0 || off < PDB_PAGE_HDR || len > r->used || off > r->used - len)
        return pdb_err(a->db, &a->em, PAGEDB_CORRUPT, "%s: sample %lld (%llu bytes at offset %llu of page %llu) lies"
                       " outside the %llu bytes written there", o->path, (long long)s->id, (unsigned long long)len,
                       (unsigned long long)off, (unsigned long long)r->pgno, (unsigned long long)r->used);
      i++;
    }
    if (i == first) continue;
    if (i - first > UINT32_MAX)
      return pdb_err(a->db, &a->em, PAGEDB_TOOBIG, "page %llu starts %llu samples, more than a run can record (%u)",
                     (unsigned long long)r->pgno, (unsigned long long)(i - first), UINT32_MAX);
    if (a->npages + r->npages > UINT32_MAX)
      return pdb_err(a->db, &a->em, PAGEDB_TOOBIG, "its pages up to page %llu are more than one attach copies (%u)",
                     (unsigned long long)r->pgno, UINT32_MAX);
    a->copy[a->ncopy++] = (Copy){ r, first, i - first, a->npages };
    a->npages += r->npages;
  }
  if (i < a->ids.n)
    return pdb_err(a->db, &a->em, PAGEDB_CORRUPT, "%s: sample %lld lies on page %llu, which starts no committed run",
                   o->path, (long long)a->ids.s[i].id, (unsigned long long)(a->ids.s[i].slot[1] / ps));
  return PAGEDB_OK;
}

/*
** Read run C of OTHER into *BUF (of *CAP bytes, at least the run's pages)
** and check it is what OTHER's catalog says: its own header, page, size and
** checksum.
*/
static int read_run(Attach *a, const Copy *c, uint8_t **buf, size_t *cap) {
  pagedb *o = a->o;
  const CatRun *r = c->run;
  uint32_t ps = pager_page_size(o->pager);
  const uint8_t *b;
  /* A run of a part of OTHER lies in the part's data file, at the page of
  ** its window it has there, with the part's uuid in its header. */
  Pager *from = o->pager;
  uint64_t off = r->pgno * ps, pgno = r->pgno;
  int64_t part = -1;
  if (off >= PDB_MAX_DATA) {
    uint64_t k = dx_part_of(off), end = 0;
    int rc = parts_file(o, &a->em, k, &from, &end);
    if (rc != PAGEDB_OK) return rc;
    part = (int64_t)k;
    off -= dx_window(k);
    pgno = off / ps;
    if (off > end || r->used > end - off) {
      parts_file_done(o, k);
      return pdb_err(a->db, &a->em, PAGEDB_CORRUPT, "%s: page %llu of part %llu lies past the %llu bytes it was"
                     " committed with", o->path, (unsigned long long)pgno, (unsigned long long)k,
                     (unsigned long long)end);
    }
  }
  int rc = pager_fetch(from, &a->em, off, r->used, buf, cap, &b);
  uint8_t uuid[16];
  memcpy(uuid, pager_uuid(from), 16);
  if (part >= 0) parts_file_done(o, (uint64_t)part);   /* FROM may be closed from here on */
  if (rc != PAGEDB_OK) return rc;
  /* A run starts on an aligned offset, so the read starts at *BUF. */
  if (NEVER(b != *buf)) memmove(*buf, b, r->used);
  b = *buf;
  const char *bad = NULL;
  RunHeader h;
  pager_run_header(b, &h);
  if (!h.magic_ok) bad = "no run header";
  else if (!h.sum_ok) bad = "a damaged run header";
  else if (memcmp(h.uuid, uuid, 16) != 0) bad = "the run header of another dataset";
  else if (h.pgno != pgno || h.npages != r->npages || h.used != r->used)
    bad = "a run header that disagrees with the page table";
  else if (h.datasum != pdb_sum(b + PDB_PAGE_HDR, r->used - PDB_PAGE_HDR))
    bad = "bytes that do not match their run's checksum";
  if (bad)
    return pdb_err(a->db, &a->em, PAGEDB_CORRUPT, "%s: page %llu has %s", o->path, (unsigned long long)r->pgno, bad);
  return PAGEDB_OK;
}

/* The record of run C for DB: OTHER's slots with the new ids and offsets. */
static PageRecs *make_recs(Attach *a, const Copy *c, uint64_t start) {
  pagedb *db = a->db;
  int nw = db->nw;
  uint64_t ps = pager_page_size(db->pager), pgno = start + c->pgno;
  PageRecs *r = pdb_malloc(sizeof *r + (size_t)c->n * (size_t)nw * sizeof(uint64_t));
  if (!r) return NULL;
  memset(&r->d, 0, sizeof r->d);
  r->d.pgno = pgno;
  r->d.npages = c->run->npages;
  r->d.nsamples = (uint32_t)c->n;
  r->d.used = c->run->used;
  for (uint64_t i = 0; i < c->n; i++) {
    const Sample *s = &a->ids.s[c->first + i];
    uint64_t *t = r->slots + (size_t)i * nw;
    memcpy(t, s->slot, (size_t)nw * sizeof *t);
    t[0] = (uint64_t)s->nid;
    t[1] = pgno * ps + (s->slot[1] - c->run->pgno * ps);
  }
  return r;
}

/*
** Copy every planned run into the pages from START, appending their
** records to *LIST in page order.  At most one write is in flight: the
** other buffer takes the next run meanwhile.  Every write has ended on
** return.
*/
static int copy_runs(Attach *a, uint64_t start, PageRecs ***tail) {
  pagedb *db = a->db;
  Pager *p = db->pager;
  uint64_t ps = pager_page_size(p);
  uint8_t *buf[2] = { NULL, NULL };
  size_t cap[2] = { 0, 0 };
  pagedb_aio aio;
  int flying = 0, rc = PAGEDB_OK;
  for (uint64_t k = 0; k < a->ncopy && rc == PAGEDB_OK; k++) {
    const Copy *c = &a->copy[k];
    uint8_t **b = &buf[k & 1];
    size_t *bc = &cap[k & 1];
    /* Room for the whole run: pager_write_start pads past the used bytes. */
    size_t need = (size_t)c->run->npages * ps;
    if (*bc < need) {
      pdb_buf_free(*b);
      *b = pdb_buf_alloc(need, bc);
      if (!*b) {
        *bc = 0;
        rc = pdb_err(db, &a->em, PAGEDB_NOMEM, "out of memory for a run of %u pages", c->run->npages);
        break;
      }
    }
    rc = read_run(a, c, b, bc);
    PageRecs *r = NULL;
    if (rc == PAGEDB_OK && !(r = make_recs(a, c, start)))
      rc = pdb_err(db, &a->em, PAGEDB_NOMEM, "out of memory for the %llu samples of page %llu",
                   (unsigned long long)c->n, (unsigned long long)c->run->pgno);
    if (flying) {
      int wrc = pager_write_wait(p, &a->em, &aio, 1);
      flying = 0;
      if (rc == PAGEDB_OK) rc = wrc;
    }
    if (rc == PAGEDB_OK) rc = pager_write_start(p, &a->em, start + c->pgno, c->run->npages, (uint32_t)c->n, *b,
                                                c->run->used, &aio);
    if (rc != PAGEDB_OK) {
      pdb_free(r);
      break;
    }
    flying = 1;
    **tail = r;
    *tail = (PageRecs **)&r->d.next;
  }
  if (flying) {
    int wrc = pager_write_wait(p, &a->em, &aio, 1);
    if (rc == PAGEDB_OK) rc = wrc;
  }
  pdb_buf_free(buf[0]);
  pdb_buf_free(buf[1]);
  return rc;
}

static void free_recs(PageRecs *r) {
  while (r) {
    PageRecs *next = (PageRecs *)r->d.next;
    pdb_free(r);
    r = next;
  }
}

/* Steps 2 to 5 of the top comment, OTHER open and checked. */
static int attach(Attach *a, int policy, int64_t offset, int64_t *nattached) {
  pagedb *db = a->db;
  int rc = PAGEDB_OK;
  Dx *ox = idx_disk(a->o->idx);
  if (ox && dx_version(ox) >= 3) {
    a->ids.store_cap = idx_count(a->o->idx);
    if (!(a->ids.store = pdb_malloc((a->ids.store_cap ? a->ids.store_cap : 1) * (size_t)db->nw * sizeof(uint64_t))))
      rc = PAGEDB_NOMEM;
  }
  if (rc == PAGEDB_OK) rc = idx_scan(a->o->idx, ids_collect, &a->ids);
  if (rc == PAGEDB_NOMEM)
    return pdb_err(db, &a->em, rc, "out of memory listing its %llu samples", (unsigned long long)idx_count(a->o->idx));
  if (rc != PAGEDB_OK)   /* (ids_collect's own failure is said in a->em already) */
    return a->em.rc != PAGEDB_OK ? rc : pdb_err(db, &a->em, rc, "cannot list its samples: %s", pagedb_errmsg(a->o));
  rc = ids_plan(&a->ids, policy, offset);
  if (rc != PAGEDB_OK) return rc;
  /* OTHER's dictionaries, with their ids (which its values' frames carry),
  ** pending in DB before any value that names them: the commit of the
  ** runs stores them (dict.c invariant 3). */
  for (int f = 0; f < db->nfield && rc == PAGEDB_OK; f++)
    if (codec_uses_dict(db->fields[f].codec)) rc = dict_import(db, &a->em, f, a->o, f, 0);
  if (rc != PAGEDB_OK) {
    ids_release(&a->ids);
    return rc;
  }
  pdb_sort(a->ids.s, a->ids.n, sizeof *a->ids.s, by_offset);
  rc = plan_runs(a);
  /* Given back at every failure from here on, never left behind. */
  PageRecs *dead = pdb_malloc(sizeof *dead);
  if (rc == PAGEDB_OK && !dead) rc = pdb_err(db, &a->em, PAGEDB_NOMEM, "out of memory");
  uint64_t start = 0;
  int claimed = 0;
  if (rc == PAGEDB_OK && a->npages > 0) {
    rc = pager_claim(db->pager, &a->em, (uint32_t)a->npages, &start);
    claimed = rc == PAGEDB_OK;
  }
  PageRecs *list = NULL, **tail = &list;
  if (rc == PAGEDB_OK) rc = copy_runs(a, start, &tail);
  if (rc != PAGEDB_OK) {
    free_recs(list);
    ids_release(&a->ids);
    if (claimed && !pager_unclaim(db->pager, start, a->npages)) {
      memset(&dead->d, 0, sizeof dead->d);
      dead->d.pgno = start;
      dead->d.npages = (uint32_t)a->npages;
      if (pager_done(db->pager, &dead->d)) api_wake(db);
      dead = NULL;
    }
    pdb_free(dead);
    return rc;
  }
  pdb_free(dead);
  a->ids.nreserved = 0;     /* the ids belong to the runs now */
  a->ids.after = -1;
  a->copied = 1;
  rc = api_commit_runs(db, list);
  if (rc != PAGEDB_OK) {
    char why[PDB_MSG_MAX];
    snprintf(why, sizeof why, "%s", pagedb_errmsg(db));
    return pdb_err(db, &a->em, rc, "its %llu samples were copied, but the commit failed (they are committed with the"
                   " next pagedb_commit that succeeds): %s", (unsigned long long)a->ids.n, why);
  }
  if (nattached) *nattached = (int64_t)a->ids.n;
  return PAGEDB_OK;
}

int pagedb_attach(pagedb *db, const char *other, int policy, int64_t offset, int64_t *nattached) {
  if (nattached) *nattached = 0;
  if (!db) return PAGEDB_MISUSE;
  pdb_msg *m = &db->err;
  int rc = api_usable(db, m);
  if (rc != PAGEDB_OK) return rc;
  if ((rc = api_own(db, m)) != PAGEDB_OK) return rc;
  if (db->readonly)
    return pdb_err(db, m, PAGEDB_READONLY, "%s is open read-only: nothing can be attached to it", db->path);
  if (!other || !other[0]) return pdb_err(db, m, PAGEDB_MISUSE, "pagedb_attach: no dataset to attach given");
  if (policy < PAGEDB_ATTACH_KEEP || policy > PAGEDB_ATTACH_AFTER)
    return pdb_err(db, m, PAGEDB_MISUSE, "pagedb_attach %s: unknown policy %d: use PAGEDB_ATTACH_KEEP, _OFFSET or"
                   " _AFTER", other, policy);
  if (same_file(other, db->path))
    return pdb_err(db, m, PAGEDB_MISUSE, "cannot attach %s to itself", db->path);
  Attach a = { .db = db, .other = other };
  a.ids = (IdPlan){ .db = db, .em = &a.em, .after = -1 };
  /* OTHER through DB's VFS, or a URL through its scheme's (pdb_vfs_choose). */
  rc = pagedb_open(other, &a.o, PAGEDB_OPEN_READONLY, pdb_path_scheme(other, NULL, 0) ? NULL : db->vfs->zName);
  if (rc != PAGEDB_OK) {
    char why[PDB_MSG_MAX];
    snprintf(why, sizeof why, "%s", pagedb_errmsg(a.o));
    pagedb_close(a.o);
    return pdb_err(db, m, rc, "cannot attach %s to %s: %s; nothing was attached", other, db->path, why);
  }
  rc = attach_check_schema(db, a.o, &a.em);
  if (rc == PAGEDB_OK) rc = attach(&a, policy, offset, nattached);
  if (rc != PAGEDB_OK)
    pdb_err(db, m, rc, "cannot attach %s to %s: %s%s", other, db->path,
            a.em.rc != PAGEDB_OK ? a.em.text : pagedb_errstr(rc), a.copied ? "" : "; nothing was attached");
  pdb_free(a.ids.s);
  pdb_free(a.ids.store);
  pdb_free(a.runs);
  pdb_free(a.copy);
  pagedb_close(a.o);
  return rc;
}
