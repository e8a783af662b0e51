/*
** partscommit.c -- committing other datasets into DB as its parts, by
** reference (doc/format.md, "Parts", "Parts' rows by reference"); parts.c
** reads them.
**
** A part's commit copies metadata only -- its page rows and index slots,
** each moved into the part's window, and its sample rows unless its ids
** map to DB's by one constant (then they stay in its own catalog, where
** SQL reads them: catref.c) -- and never a byte of its data file.
**
** THE COMMIT (pagedb_parts_commit) in two halves:
**   1. Here, without commit_mu: each part is opened read-only (on two
**      threads, each one part at a time, so that a thousand parts never
**      hold a thousand catalogs open), checked (not DB itself, schema, no
**      parts of its own, the seal it was given, a data region within a
**      window), its slots listed once into its runs at part-local
**      addresses (list_runs) -- or, for a large part, lent: left in its
**      index map, its handle kept open until the commit ends (may_lend)
**      -- and its samples given their ids in DB by
**      the attach policies (ids_plan: every id reserved before anything is
**      written; in parallel under KEEP and OFFSET, in part order under
**      AFTER and for a part given twice or colliding: prep_plan).  A
**      large part that is the last to take is listed on both threads.
**   2. api_commit_parts (commit.c), under commit_mu and cat_mu: the parts
**      get their numbers P, P+1..., their runs and slots move into their
**      windows, and commit_locked writes the rows (parts_stage_rows), the
**      index (the slots and part records, or a new version-2 file at the
**      first commit of parts), then commits the catalog: the commit point.
**   A failure anywhere leaves DB as it was: the reservations are given
**   back, the catalog's transaction rolls back, index bytes written past
**   the length in force are named by nothing.
*/
#include "api.h"
#include "codec.h"
#include "dict.h"
#include "os.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --- the seal ----------------------------------------------------------- */

/* Meta KEY of snapshot S as an integer (0 when absent). */
static int snap_int(CatSnap *s, pdb_msg *m, const char *key, uint64_t *out) {
  CatVal v;
  int rc = cat_snap_meta(s, m, key, &v, NULL, 0);
  *out = rc == PAGEDB_OK && v.type == CAT_INTEGER ? (uint64_t)v.i : 0;
  return rc;
}

/* The seal of part O (doc/format.md, "The seal"), from its header and the
** read transaction CS of its catalog (catx_seal, catref.c, which SQL's
** reads of its rows by reference compute too). */
static int seal_in(pagedb *o, CatSnap *cs, pdb_msg *m, uint64_t *seal) {
  return cat_snap_seal(cs, m, pager_uuid(o->pager), pager_page_size(o->pager), pager_data_off(o->pager), seal);
}

/* The seal of part O, from one read transaction of its catalog. */
static int seal_of(pagedb *o, pdb_msg *m, uint64_t *seal) {
  CatSnap *cs = NULL;
  int rc = cat_snap_open(o->cat, m, &cs);
  if (rc == PAGEDB_OK) rc = seal_in(o, cs, m, seal);
  cat_snap_close(cs);
  return rc;
}

int pagedb_part_seal(pagedb *part, uint64_t *seal) {
  if (!part || !seal) return PAGEDB_MISUSE;
  *seal = 0;
  int rc = api_usable(part, &part->err);
  if (rc != PAGEDB_OK) return rc;
  if (!part->readonly) {
    /* What it wrote is committed first: the seal is of the part as committed. */
    rc = pagedb_commit(part);
    if (rc != PAGEDB_OK) return rc;
  }
  pthread_mutex_lock(&part->commit_mu);
  rc = seal_of(part, &part->err, seal);
  /* Its writer is done with it: rollback mode at its close (cat_sealed). */
  if (rc == PAGEDB_OK && !part->readonly) cat_sealed(part->cat);
  pthread_mutex_unlock(&part->commit_mu);
  return rc;
}

/* --- the commit, first half: each part opened, checked and planned ------ */

typedef struct Prep {
  pagedb *db;
  pdb_msg em;               /* the failure, before it is reported on DB */
  PartCommit pc;
  PageRecs **lists;         /* per part: its runs at part-local addresses */
  IdPlan *plans;            /* per part: its samples' ids (reserved) */
  void **runbuf;            /* per part: one block holding every PageRecs of lists[i] */
  char **uris, **names;
  char **vals;              /* per part: its data object's validator (remote), or NULL */
  uint8_t *planned;         /* per part: its ids are planned (and reserved) */
  /* The first half's parts on several threads (prep_worker): the next part
  ** to take, a failure seen (stop taking), MU for what they share (the
  ** sums, dictionaries, the failure), and the failure of the lowest part. */
  _Atomic size_t next;
  _Atomic int busy;         /* threads preparing a part now */
  _Atomic int nlent;        /* parts whose slots are lent (may_lend) */
  pagedb **keep;            /* per part: its handle, kept open while its slots are lent */
  long ncpu;                /* processors online */
  _Atomic int stop;
  int refok;                /* chunks may be referenced (may_ref) */
  uint8_t *noref;           /* per part: copied whatever it is (ref_overlaps; kept across attempts) */
  size_t demoted;           /* parts ref_overlaps marked in NOREF this attempt */
  _Atomic uint64_t own;     /* ids this commit holds reserved one by one (IdPlan.own) */
  pthread_mutex_t mu;
  size_t fail_at;
  pdb_msg fail_em;
  const pagedb_part *parts;
  int policy;
  /* The parts prepared so far by uuid and by name: open-addressed tables
  ** of 1 + part index (0 empty), 2^k >= 2N slots, so that finding a part
  ** given twice costs O(1) a part, not a pass over the ones before it. */
  uint32_t *by_uuid, *by_name;
  size_t mask;
} Prep;

/* Part I's twin in table T (keyed by KEY), else -1; I is entered when it
** has none.  KEYS(P, J) gives part J's key. */
static long seen_add(Prep *p, uint32_t *t, const char *key, size_t i, const char *(*keys)(const Prep *, size_t)) {
  size_t h = (size_t)pdb_sum(key, strlen(key)) & p->mask;
  for (; t[h]; h = (h + 1) & p->mask)
    if (strcmp(keys(p, t[h] - 1), key) == 0) return (long)(t[h] - 1);
  t[h] = (uint32_t)i + 1;
  return -1;
}

static const char *uuid_key(const Prep *p, size_t j) { return p->pc.cat[j].uuid; }
static const char *name_key(const Prep *p, size_t j) { return p->names[j]; }

/* The uri a part at PATH is recorded by: relative to the directory of DB's
** data file when it lies below it, else absolute (pdb_malloc'd in *OUT). */
static int make_uri(pagedb *db, pdb_msg *m, const char *path, char **out) {
  *out = NULL;
  const char *base = db->remote_url ? db->remote_url : db->path, *bs = strrchr(base, '/');
  if (pdb_path_scheme(path, NULL, 0)) {
    /* Below the remote dataset's prefix: relative to it, with no "." or
    ** ".." or empty component (else absolute). */
    size_t bn = bs && pdb_path_scheme(base, NULL, 0) ? (size_t)(bs - base + 1) : 0;
    const char *rel = bn && strncmp(path, base, bn) == 0 ? path + bn : NULL;
    if (rel && (!rel[0] || strstr(rel, "//") || strstr(rel, "/./") || strstr(rel, "/../") || strncmp(rel, "./", 2) == 0
                || strncmp(rel, "../", 3) == 0 || rel[strlen(rel) - 1] == '/'))
      rel = NULL;
    *out = pdb_strdup(rel ? rel : path);
  } else if (db->remote_url) {
    return pdb_err(db, m, PAGEDB_MISUSE, "%s: a local part cannot be committed into the remote dataset %s: push it"
                   " (pagedb_push) and give its URL", path, db->remote_url);
  } else {
    char *real = realpath(path, NULL), *dir = NULL;
    const char *slash = strrchr(db->path, '/');
    char *dpath = slash ? pdb_malloc((size_t)(slash - db->path) + 1) : pdb_strdup(".");
    if (dpath && slash) {
      memcpy(dpath, db->path, (size_t)(slash - db->path));
      dpath[slash - db->path] = 0;
      if (!dpath[0]) strcpy(dpath, "/");
    }
    if (dpath) dir = realpath(dpath, NULL);
    pdb_free(dpath);
    if (!real) {
      free(dir);
      return pdb_err(db, m, PAGEDB_CANTOPEN_NOENT, "%s: %s", path, strerror(errno));
    }
    size_t dn = dir ? strlen(dir) : 0;
    if (dir && strncmp(real, dir, dn) == 0 && real[dn] == '/' && real[dn + 1]) *out = pdb_strdup(real + dn + 1);
    else *out = pdb_strdup(real);
    free(real);
    free(dir);
  }
  if (!*out) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory");
  if (strlen(*out) > 4095) return pdb_err(db, m, PAGEDB_TOOBIG, "the location of part %s is over 4095 bytes", path);
  return PAGEDB_OK;
}

/*
** Listing a part's slots straight into its runs (issue 26: the commit's
** cost is its metadata's, so each slot is copied once).  One scan of the
** part's index lists every sample (its id and its slot where the part's
** index map has it, valid while the part is open), finds its run -- the run
** that starts on the page its record starts on -- checks that the record
** lies in what the run wrote, and counts the run's samples; then each slot
** is copied into its run's place in one block that holds every run (one
** allocation a part, fresh memory touched once).  The list, in the scan's
** order (by id, but for ids in the index's sparse segments), is what the
** ids' plan takes.  Within a run the slots are in the list's order:
** nothing downstream needs address order.
*/
typedef struct Lister {
  Prep *p;
  pdb_msg *em;
  pagedb *o;
  const CatRun *runs;
  uint64_t nrun, last, ps;
  uint32_t *count;          /* per run: its samples */
  IdPlan *a;
} Lister;

/* The run SLOT's record starts on, as an index into L->runs (the last one
** found first: a part's samples come in runs); -1 when none. */
static int64_t run_of(Lister *l, const uint64_t *slot) {
  uint64_t pg = slot[1] / l->ps;
  if (l->last < l->nrun && l->runs[l->last].pgno == pg) return (int64_t)l->last;
  uint64_t lo = 0, hi = l->nrun;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (l->runs[mid].pgno < pg) lo = mid + 1;
    else hi = mid;
  }
  if (lo == l->nrun || l->runs[lo].pgno != pg) return -1;
  l->last = lo;
  return (int64_t)lo;
}

static int list_slot(void *ctx, int64_t id, const uint64_t *slot) {
  Lister *l = ctx;
  pagedb *db = l->p->db;
  int64_t r = run_of(l, slot);
  if (r < 0)
    return pdb_err(db, l->em, PAGEDB_CORRUPT, "%s: sample %lld lies on page %llu, which starts no run", l->o->path,
                   (long long)id, (unsigned long long)(slot[1] / l->ps));
  const CatRun *run = &l->runs[r];
  uint64_t off = slot[1] - run->pgno * l->ps, len = api_record_len(l->o, slot);
  if (run->used == 0 || off < PDB_PAGE_HDR || len > run->used || off > run->used - len)
    return pdb_err(db, l->em, PAGEDB_CORRUPT, "%s: sample %lld lies outside the bytes written on page %llu",
                   l->o->path, (long long)id, (unsigned long long)run->pgno);
  if (l->count[r] == UINT32_MAX || l->a->n == l->a->cap)
    return pdb_err(db, l->em, PAGEDB_CORRUPT_INDEX, "%s: its index lists more samples than it counts (%llu)",
                   l->o->path, (unsigned long long)l->a->cap);
  l->count[r]++;
  /* NID holds the run until the slot is placed (list_runs). */
  l->a->s[l->a->n++] = (IdSample){ id, r, slot };
  return PAGEDB_OK;
}

/* A part this large is listed on two threads when the other prep thread
** has no part left to take (a commit of one large part): the upper half of
** its ids by a helper, into a list of its own, then appended. */
#define LIST_SPLIT ((uint64_t)1 << 17)

/* The helper's half: its samples from LO to LAST listed into its own
** list and counts (L), then, once the runs are laid out, its slots copied
** from position FROM of the part's list to the cursors AT. */
typedef struct Half {
  Lister l;
  IdPlan a;
  pdb_msg em;
  Index *ix;
  int64_t lo, last;
  uint64_t from, to, **at;
  int nw, rc;
} Half;

static void *half_list(void *arg) {
  Half *h = arg;
  h->rc = idx_scan_range(h->ix, h->lo, h->last, list_slot, &h->l);
  /* The part's message is this thread's (error.c keeps it per thread). */
  if (h->rc != PAGEDB_OK && h->em.rc == PAGEDB_OK)
    pdb_err(h->l.p->db, &h->em, h->rc, "cannot list its samples: %s",
            h->rc == PAGEDB_NOMEM ? "out of memory" : pagedb_errmsg(h->l.o));
  return NULL;
}

/* Slots S[FROM, TO) into their runs at the cursors AT: each is copied and
** the list then points at the copy (ours: the part's map goes at its
** close), NID back to the sample's id (it held the run). */
static void place_slots(IdSample *s, uint64_t from, uint64_t to, uint64_t **at, int nw) {
  for (uint64_t t = from; t < to; t++) {
    IdSample *x = &s[t];
    uint64_t *w = at[x->nid];
    at[x->nid] += nw;
    memcpy(w, x->slot, (size_t)nw * sizeof *w);
    w[0] = (uint64_t)x->id;
    x->slot = w;
    x->nid = x->id;
  }
}

static void *half_place(void *arg) {
  Half *h = arg;
  place_slots(h->a.s, h->from, h->to, h->at, h->nw);
  return NULL;
}

/*
** Lending: a large part's slots are read in place from its index map by
** the commit's index writer (PartLent, api.h), instead of copied into its
** runs -- a copy of every slot (72 bytes a sample and more), first touches
** of fresh memory, which in profiles of the commit of a million samples
** here took 5% to 40% of it (zeroing pages under the listing: how much
** depends on the host at the moment).  Its handle then stays open until the commit ends
** (prep_free): at most LEND_MAX parts at once, each of LEND_MIN samples or
** more, so that a commit of many small parts holds no more open than
** before.  A lent part's rows must be by reference (its slots are never
** made rows here): under AFTER, so only when its ids are consecutive.
*/
#define LEND_MIN ((uint64_t)1 << 14)
#define LEND_MAX 16

static int may_lend(Prep *p, const IdPlan *a) {
  if (a->n < LEND_MIN) return 0;
  if (p->policy == PAGEDB_ATTACH_AFTER) {
    /* Each id once (the listing checked), so consecutive when they span n. */
    int64_t lo = a->s[0].id, hi = lo;
    for (uint64_t t = 1; t < a->n; t++) {
      if (a->s[t].id < lo) lo = a->s[t].id;
      if (a->s[t].id > hi) hi = a->s[t].id;
    }
    if ((uint64_t)(hi - lo) != a->n - 1) return 0;
  }
  if (atomic_fetch_add(&p->nlent, 1) < LEND_MAX) return 1;
  atomic_fetch_sub(&p->nlent, 1);
  return 0;
}

/* Part I's runs (part-local pages and addresses) from its page table RUNS
** and its index from id LO: its slots listed (above) into P->runbuf[i],
** linked from P->lists[i], and into P->plans[i]. */
static int list_runs(Prep *p, pdb_msg *em, size_t i, pagedb *o, const CatRun *runs, uint64_t nrun, int64_t lo) {
  pagedb *db = p->db;
  int nw = db->nw;
  uint64_t n = idx_count(o->idx), nrc = nrun ? nrun : 1;
  Lister l = { .p = p, .em = em, .o = o, .runs = runs, .nrun = nrun, .last = UINT64_MAX,
               .ps = pager_page_size(o->pager), .a = &p->plans[i] };
  /* The helper's half, if any: ids from MID, half way to the largest id
  ** in a chunk (ids in segments, far above, go to either by value). */
  Dx *ox = idx_disk(o->idx);
  int64_t top = ox ? dx_next_id(ox) : 0;
  if (ox && dx_chunk_end(ox) < top) top = dx_chunk_end(ox);
  int64_t mid = lo >= 0 && top > lo ? lo + (top - lo) / 2 : 0;
  int split = ox && n >= LIST_SPLIT && mid > lo && p->ncpu > 1 && atomic_load(&p->next) >= p->pc.n
              && atomic_load(&p->busy) <= 1;
  Half h = { .l = l, .ix = o->idx, .lo = mid, .last = INT64_MAX, .nw = nw };
  h.l.em = &h.em;
  h.l.a = &h.a;
  pthread_t th;
  l.count = pdb_calloc(nrc, sizeof *l.count);
  uint64_t **at = pdb_malloc(nrc * sizeof *at);
  int rc = l.count && at ? PAGEDB_OK : pdb_err(db, em, PAGEDB_NOMEM, "out of memory listing the samples of %s",
                                               o->path);
  if (rc == PAGEDB_OK && n && !(l.a->s = pdb_malloc((size_t)n * sizeof *l.a->s)))
    rc = pdb_err(db, em, PAGEDB_NOMEM, "out of memory listing the samples of %s", o->path);
  l.a->cap = l.a->s ? n : 0;
  if (rc == PAGEDB_OK && split) {
    h.l.count = pdb_calloc(nrc, sizeof *h.l.count);
    h.a.s = pdb_malloc((size_t)n * sizeof *h.a.s);
    h.a.cap = n;
    h.at = pdb_malloc(nrc * sizeof *h.at);
    split = h.l.count && h.a.s && h.at && pthread_create(&th, NULL, half_list, &h) == 0;
  }
  if (rc == PAGEDB_OK && (rc = idx_scan_range(o->idx, lo, split ? mid - 1 : INT64_MAX, list_slot, &l)) != PAGEDB_OK
      && em->rc == PAGEDB_OK)
    rc = pdb_err(db, em, rc, "cannot list its samples: %s", rc == PAGEDB_NOMEM ? "out of memory" : pagedb_errmsg(o));
  uint64_t na = l.a->n;
  if (split) {
    pthread_join(th, NULL);
    /* The lower half's failure first: it is the one a single scan meets. */
    if (rc == PAGEDB_OK && h.rc != PAGEDB_OK) rc = pdb_err_copy(db, em, &h.em);
    if (rc == PAGEDB_OK && h.a.n > n - na)
      rc = pdb_err(db, em, PAGEDB_CORRUPT_INDEX, "%s: its index lists more samples than it counts (%llu)", o->path,
                   (unsigned long long)n);
    if (rc == PAGEDB_OK) {
      memcpy(l.a->s + na, h.a.s, (size_t)h.a.n * sizeof *h.a.s);
      l.a->n = na + h.a.n;
    }
    pdb_free(h.a.s);
    h.a.s = NULL;
  }
  if (rc == PAGEDB_OK && l.a->n != n)
    rc = pdb_err(db, em, PAGEDB_CORRUPT_INDEX, "its index holds %llu samples, %llu of them from id %lld, the"
                 " smallest its catalog lists", (unsigned long long)n, (unsigned long long)l.a->n, (long long)lo);
  for (uint64_t r = 0; split && rc == PAGEDB_OK && r < nrun; r++)
    if ((uint64_t)l.count[r] + h.l.count[r] > UINT32_MAX)
      rc = pdb_err(db, em, PAGEDB_CORRUPT_INDEX, "%s: its index lists more samples on page %llu than a run can hold",
                   o->path, (unsigned long long)runs[r].pgno);
  int lend = rc == PAGEDB_OK && may_lend(p, l.a);
  size_t rec = sizeof(PageRecs), sw = lend ? 0 : (size_t)nw * sizeof(uint64_t);
  size_t cap = (size_t)nrun * rec + (size_t)n * sw;
  if (rc == PAGEDB_OK && nrun && !(p->runbuf[i] = pdb_malloc(cap)))
    rc = pdb_err(db, em, PAGEDB_NOMEM, "out of memory for the runs of %s", o->path);
  if (rc == PAGEDB_OK && lend) {
    p->pc.lent[i].s = l.a->s;
    p->pc.lent[i].n = l.a->n;
    for (uint64_t t = 0; t < l.a->n; t++) l.a->s[t].nid = l.a->s[t].id;   /* it held the run */
  }
  if (rc == PAGEDB_OK) {
    PageRecs **tail = lend ? &p->pc.lent[i].runs : &p->lists[i];
    size_t used = 0;
    for (uint64_t r = 0; r < nrun; r++) {
      PageRecs *pr = (PageRecs *)((uint8_t *)p->runbuf[i] + used);
      uint32_t c = l.count[r] + (split ? h.l.count[r] : 0);
      used += rec + (size_t)c * sw;
      assert(used <= cap);
      memset(&pr->d, 0, sizeof pr->d);
      pr->d.pgno = runs[r].pgno;
      pr->d.npages = runs[r].npages;
      pr->d.nsamples = c;
      pr->d.used = runs[r].used;
      at[r] = pr->slots;
      /* A run's slots: the lower half's, then the helper's. */
      if (split) h.at[r] = pr->slots + (size_t)l.count[r] * (size_t)nw;
      *tail = pr;
      tail = (PageRecs **)&pr->d.next;
    }
    h.a.s = l.a->s;   /* the helper places the upper half's slots, where they now are */
    h.from = na;
    h.to = l.a->n;
    int helped = !lend && split && pthread_create(&th, NULL, half_place, &h) == 0;
    if (!lend) place_slots(l.a->s, 0, helped ? na : l.a->n, at, nw);
    if (helped) pthread_join(th, NULL);
    h.a.s = NULL;
  } else {
    l.a->n = 0;   /* their slots point into the part's map */
  }
  pdb_free(h.a.s);
  pdb_free(h.l.count);
  pdb_free(h.at);
  pdb_free(l.count);
  pdb_free(at);
  return rc;
}

/*
** Chunks by reference (doc/format.md, "Parts' chunks by reference"): a
** large local part whose ids map to DB's by a multiple of 2^13 (KEEP, or
** OFFSET by such an offset) has the chunks of its index between its first
** and its last referenced by DB's index instead of copied: no slot of
** them is read here, and the commit costs O(its chunks and runs) for them.
** Its first and last chunk, which other parts or DB's own samples may
** share, are listed and copied as any part's (into P->runbuf[i]).  Its ids
** LO..HI are reserved whole (idx_reserve_range) when no writer holds one
** and DB has none of them committed; else, or for a part that does not
** qualify, the part is listed and copied whole (list_runs).
** REF_MIN: the samples a part needs, so that a reader of many small parts
** maps no index file of theirs (their slots are copied).
*/
#define REF_MIN ((uint64_t)1 << 13)
#define DX_C_IDS ((uint64_t)1 << DX_CBITS)   /* ids of a chunk */

/* Whether a commit into DB under POLICY may reference chunks: DB local,
** its index version 3 (or made so by this, its first commit of parts), the
** policy one that maps ids by a constant; and not turned off by the
** environment (PAGEDB_PARTS_REF=0: every part's slots copied, as a
** benchmark's reference). */
static int may_ref(pagedb *db, int policy) {
  const char *e = getenv("PAGEDB_PARTS_REF");
  if (e && strcmp(e, "0") == 0) return 0;
  if (db->remote_url || policy == PAGEDB_ATTACH_AFTER || !api_parts_chunkref(db)) return 0;
  Dx *dx = idx_disk(db->idx);
  return !dx || dx_version(dx) >= 3 || !(db->features & CAT_FEATURE_PARTS);
}

typedef struct RefList {
  IdSample *s;
  uint64_t n, cap, *slots;
  int nw;
  int64_t delta;
  uint64_t data_end;
  pagedb *o;
  pdb_msg *em;
  pagedb *db;
} RefList;

static int ref_collect(void *ctx, int64_t id, const uint64_t *slot) {
  RefList *l = ctx;
  uint64_t len = api_record_len(l->o, slot);
  if (l->n == l->cap)
    return pdb_err(l->db, l->em, PAGEDB_CORRUPT_INDEX, "%s: its first and last chunks list more samples than they"
                   " can hold", l->o->path);
  if (slot[1] > l->data_end || len > l->data_end - slot[1])
    return pdb_err(l->db, l->em, PAGEDB_CORRUPT, "%s: sample %lld lies outside the bytes its runs use", l->o->path,
                   (long long)id);
  uint64_t *t = l->slots + l->n * (size_t)l->nw;
  memcpy(t, slot, (size_t)l->nw * sizeof *t);
  l->s[l->n++] = (IdSample){ id, id + l->delta, t };
  return PAGEDB_OK;
}

static int found_one(void *ctx, int64_t id, const uint64_t *slot) {
  (void)id, (void)slot;
  *(int *)ctx = 1;
  return PAGEDB_CONSTRAINT;   /* stops the scan: an id is taken */
}

/* Part I (O, its runs RUNS[0..NRUN), its data region's DATA_END bytes) by
** reference if it qualifies: *DONE 1 when it is (P->pc.lent[i] and
** P->pc.ref[i] filled, its ids reserved), 0 to list it whole instead. */
static int ref_prep(Prep *p, pdb_msg *em, size_t i, pagedb *o, const CatRun *runs, uint64_t nrun, uint64_t data_end,
                    int *done) {
  pagedb *db = p->db;
  const pagedb_part *pp = &p->parts[i];
  *done = 0;
  int64_t delta = p->policy == PAGEDB_ATTACH_OFFSET ? pp->offset : 0;
  Dx *ox = idx_disk(o->idx);
  DxChunks dc;
  if (!p->refok || p->noref[i] || pdb_path_scheme(pp->path, NULL, 0) || delta < 0 || delta % (int64_t)DX_C_IDS || !ox
      || !dx_chunks(ox, &dc) || dc.version > 2 || dc.nsg || dc.count < REF_MIN || !dc.fid
      || dc.next > (uint64_t)INT64_MAX - (uint64_t)delta)
    return PAGEDB_OK;
  /* Its chunks in use: the first and the last are listed, those between referenced. */
  uint64_t c0 = UINT64_MAX, c1 = 0, nin = 0;
  for (uint64_t c = 0; c < dc.nch; c++)
    if (dc.e[2 * c + 1]) {
      if (c0 == UINT64_MAX) c0 = c;
      c1 = c;
    }
  for (uint64_t c = c0 + 1; c0 != UINT64_MAX && c < c1; c++) nin += dc.e[2 * c + 1] != 0;
  if (c0 == UINT64_MAX || nin == 0) return PAGEDB_OK;
  /* Its runs' samples are counted by its page table, which must agree with
  ** its index (after deletions in the part it may not: then it is listed). */
  uint64_t total = 0;
  for (uint64_t r = 0; r < nrun; r++) total += runs[r].nsamples;
  if (total != dc.count) return PAGEDB_OK;
  /* The first and last chunk's samples, copied (their smallest id is the part's). */
  RefList l = { .nw = db->nw, .delta = delta, .data_end = data_end, .o = o, .em = em, .db = db };
  l.cap = dc.e[2 * c0 + 1] + dc.e[2 * c1 + 1];
  size_t rec = sizeof(PageRecs), cap = (size_t)nrun * rec + (size_t)l.cap * (size_t)db->nw * sizeof(uint64_t);
  uint8_t *blk = pdb_malloc(cap ? cap : 1);
  l.s = pdb_malloc((size_t)l.cap * sizeof *l.s);
  DxRefChunk *rc_ = pdb_malloc((size_t)nin * sizeof *rc_);
  int rc = blk && l.s && rc_ ? PAGEDB_OK : pdb_err(db, em, PAGEDB_NOMEM, "out of memory listing the samples of %s",
                                                   o->path);
  if (rc == PAGEDB_OK) {
    l.slots = (uint64_t *)(blk + (size_t)nrun * rec);
    rc = idx_scan_range(o->idx, (int64_t)(c0 * DX_C_IDS), (int64_t)(c0 * DX_C_IDS + DX_C_IDS - 1), ref_collect, &l);
    if (rc == PAGEDB_OK)
      rc = idx_scan_range(o->idx, (int64_t)(c1 * DX_C_IDS), (int64_t)(c1 * DX_C_IDS + DX_C_IDS - 1), ref_collect, &l);
    if (rc != PAGEDB_OK && em->rc == PAGEDB_OK)
      rc = pdb_err(db, em, rc, "cannot list the samples of %s: %s", o->path, pagedb_errmsg(o));
  }
  /* Nothing left to reference (the chunks between hold deleted slots
  ** only), or none listed to start the range: listed whole instead. */
  int some = rc == PAGEDB_OK && l.n > 0 && l.n < dc.count;
  int64_t lo = some ? l.s[0].nid : 0, hi = (int64_t)dc.next - 1 + delta;
  int reserved = 0, taken = 0;
  if (some) {
    int r = idx_reserve_range(db->idx, lo, hi, atomic_load(&p->own));
    reserved = r == PAGEDB_OK;
    /* Published: now no writer can take one of them; none may be committed. */
    if (reserved && (r = idx_scan_range(db->idx, lo, hi, found_one, &taken)) != PAGEDB_OK && !taken)
      rc = pdb_err(db, em, r, "cannot look for ids %lld..%lld in %s: %s", (long long)lo, (long long)hi, db->path,
                   pagedb_errmsg(db));
  }
  if (rc != PAGEDB_OK || !some || !reserved || taken) {
    if (reserved) idx_release_range(db->idx, lo, hi);
    pdb_free(blk);
    pdb_free(l.s);
    pdb_free(rc_);
    return rc;
  }
  /* Its runs, headers only: their samples are counted by its page table
  ** (the seal covers it; reads bound each record by the part's data end). */
  PageRecs **tail = &p->pc.lent[i].runs;
  for (uint64_t r = 0; r < nrun; r++) {
    PageRecs *pr = (PageRecs *)(blk + (size_t)r * rec);
    memset(&pr->d, 0, sizeof pr->d);
    pr->d.pgno = runs[r].pgno;
    pr->d.npages = runs[r].npages;
    pr->d.nsamples = runs[r].nsamples;
    pr->d.used = runs[r].used;
    *tail = pr;
    tail = (PageRecs **)&pr->d.next;
  }
  uint64_t k = 0;
  for (uint64_t c = c0 + 1; c < c1; c++)
    if (dc.e[2 * c + 1])
      rc_[k++] = (DxRefChunk){ c + (uint64_t)(delta / (int64_t)DX_C_IDS), 0, dc.e[2 * c], dc.e[2 * c + 1],
                               delta / (int64_t)DX_C_IDS };
  p->runbuf[i] = blk;
  p->plans[i].s = l.s;      /* freed with the plans */
  p->pc.lent[i].s = l.s;
  p->pc.lent[i].n = l.n;
  p->pc.lent[i].unreserved = 1;
  p->pc.ref[i] = (PartRef){ rc_, nin, dc.count - l.n, (uint64_t)hi + 1, lo, hi, delta, dc.fid, dc.len };
  p->planned[i] = 1;
  ids_seen(db, hi);
  *done = 1;
  return PAGEDB_OK;
}

/* Part I's ids planned (P->plans[i], reserved): its slots take their ids
** in DB (they are ours: list_runs's block), and its row its id range and,
** when one constant maps its ids, its rows by reference (doc/format.md,
** "Parts' rows by reference": always under KEEP and OFFSET, under AFTER
** when they are consecutive; else copied).  Its rows are read from its
** catalog, beside its data file (catref.c). */
static void plan_done(Prep *p, size_t i) {
  IdPlan *a = &p->plans[i];
  CatPart *cp = &p->pc.cat[i];
  p->planned[i] = 1;
  /* (A lent part's slots are in its map, read only: the index writes
  ** their ids from nid.) */
  for (uint64_t t = 0; !p->pc.lent[i].n && t < a->n; t++) ((uint64_t *)a->s[t].slot)[0] = (uint64_t)a->s[t].nid;
  cp->id_min = cp->id_max = -1;
  cp->rows = a->n > 0;
  cp->id_delta = a->n ? a->s[0].nid - a->s[0].id : 0;
  for (uint64_t t = 0; t < a->n; t++) {
    if (cp->id_min < 0 || a->s[t].nid < cp->id_min) cp->id_min = a->s[t].nid;
    if (a->s[t].nid > cp->id_max) cp->id_max = a->s[t].nid;
    if (a->s[t].nid - a->s[t].id != cp->id_delta) cp->rows = 0;
  }
  if (!cp->rows) cp->id_delta = 0;
}

/*
** The first half's work on part I alone, on any thread (EM the thread's):
** open it, check it by itself (not DB, schema, no parts, its seal, its
** data region), list its slots into its runs, and fill its records.  Under
** KEEP and OFFSET its ids are planned and reserved here too (each part's
** ids are its own plus a constant); a collision is left for prep_plan to
** find again, after its checks by name (so that a part given twice is
** said to be, not "id already used").  Under AFTER, prep_plan plans, in
** the order of the parts.
*/
static int prep_alone(Prep *p, size_t i, pdb_msg *em) {
  pagedb *db = p->db, *o = NULL;
  const pagedb_part *pp = &p->parts[i];
  if (!pp->path || !pp->path[0]) return pdb_err(db, em, PAGEDB_MISUSE, "no path given");
  int rc = pagedb_open(pp->path, &o, PAGEDB_OPEN_READONLY, pdb_path_scheme(pp->path, NULL, 0) ? NULL : db->vfs->zName);
  if (rc != PAGEDB_OK) {
    rc = pdb_err(db, em, rc, "%s", pagedb_errmsg(o));
    pagedb_close(o);
    return rc;
  }
  uint64_t ps = pager_page_size(o->pager);
  CatRun *runs = NULL, last = { 0 };
  uint64_t nrun = 0, seal = 0, deleted = 0;
  if (memcmp(pager_uuid(o->pager), pager_uuid(db->pager), 16) == 0)
    rc = pdb_err(db, em, PAGEDB_MISUSE, "it is %s itself", db->path);
  pdb_uuid_hex(pager_uuid(o->pager), p->pc.cat[i].uuid);
  if (rc == PAGEDB_OK && pp->name && !(p->names[i] = pdb_strdup(pp->name)))
    rc = pdb_err(db, em, PAGEDB_NOMEM, "out of memory");
  if (rc == PAGEDB_OK) rc = attach_check_schema(db, o, em);
  /* Its dictionaries, with their ids (its values' frames carry them),
  ** stored by this commit's transaction (dict_stage; dict.c invariant 3),
  ** as pagedb_attach does; a part whose dictionary has an id DB already
  ** uses for other bytes is refused (PAGEDB_MISMATCH, naming both).  One
  ** part at a time: they change DB's set. */
  pthread_mutex_lock(&p->mu);
  for (int f = 0; f < db->nfield && rc == PAGEDB_OK; f++)
    if (codec_uses_dict(db->fields[f].codec)) rc = dict_import(db, em, f, o, f, 0);
  pthread_mutex_unlock(&p->mu);
  if (rc == PAGEDB_OK && (o->features & CAT_FEATURE_PARTS))
    rc = pdb_err(db, em, PAGEDB_MISMATCH, "it has parts of its own (vacuum it first)");
  /* Its seal, page table, deleted bytes and smallest id from one read
  ** transaction of its catalog, on the connection the open made. */
  CatSnap *cs = NULL;
  if (rc == PAGEDB_OK) rc = cat_snap_borrow(o->cat, em, &cs);
  if (rc == PAGEDB_OK && (rc = seal_in(o, cs, em, &seal)) == PAGEDB_OK && pp->seal && pp->seal != seal)
    rc = pdb_err(db, em, PAGEDB_CORRUPT, "it changed since it was sealed (seal %016llx given, %016llx now)",
                 (unsigned long long)pp->seal, (unsigned long long)seal);
  if (rc == PAGEDB_OK) rc = cat_runs(o->cat, em, &runs, &nrun);
  for (uint64_t r = 0; rc == PAGEDB_OK && r < nrun; r++)
    if (runs[r].used) last = runs[r];
  uint64_t data_end = last.used ? last.pgno * ps + last.used : 0, committed = atomic_load(&o->committed);
  if (rc == PAGEDB_OK && (data_end > ((uint64_t)1 << DX_WIN_BITS) || committed > ((uint64_t)1 << DX_WIN_BITS) / ps))
    rc = pdb_err(db, em, PAGEDB_TOOBIG, "its data region (%llu bytes in %llu pages) is over the 4 TiB of a part's"
                 " window", (unsigned long long)data_end, (unsigned long long)committed);
  char val[4096];
  if (rc == PAGEDB_OK && parts_validator(pager_file(o->pager), val, sizeof val) && val[0]
      && !(p->vals[i] = pdb_strdup(val)))
    rc = pdb_err(db, em, PAGEDB_NOMEM, "out of memory");
  uint64_t size = 0;
  if (rc == PAGEDB_OK && pdb_os_size(pager_file(o->pager), &size) != PAGEDB_OK)
    rc = pdb_err(db, em, PAGEDB_IOERR_FSTAT, "cannot stat its data file");
  /* A part with no sample has no data region at all (its file may end at
  ** its header, before the aligned offset where data would begin). */
  if (rc == PAGEDB_OK && data_end > 0 && size < pager_data_off(o->pager) + data_end)
    rc = pdb_err(db, em, PAGEDB_CORRUPT_TRUNCATED, "its data file is %llu bytes, shorter than the %llu its runs use",
                 (unsigned long long)size, (unsigned long long)(pager_data_off(o->pager) + data_end));
  if (rc == PAGEDB_OK) rc = snap_int(cs, em, "deleted_bytes", &deleted);
  /* Its samples, listed into its runs.  From its smallest id: a part's
  ** ids may start anywhere in a chunk of its index, whose empty slots
  ** before them need not be read.  Every slot its index holds must be
  ** found from there. */
  int64_t lo = -1;
  if (rc == PAGEDB_OK) rc = cat_id_min(o->cat, em, &lo);
  cat_snap_close(cs);
  int byref = 0;
  if (rc == PAGEDB_OK) rc = ref_prep(p, em, i, o, runs, nrun, data_end, &byref);
  if (rc == PAGEDB_OK && !byref) rc = list_runs(p, em, i, o, runs, nrun, lo);
  uint64_t nsamp = byref ? p->pc.ref[i].count + p->pc.lent[i].n : p->plans[i].n;
  if (rc == PAGEDB_OK) rc = make_uri(db, em, pp->path, &p->uris[i]);
  if (rc == PAGEDB_OK) {
    DxPart *d = &p->pc.dx[i];
    CatPart *cp = &p->pc.cat[i];
    memset(d, 0, sizeof *d);
    memcpy(d->uuid, pager_uuid(o->pager), 16);
    d->data_off = pager_data_off(o->pager);
    d->data_end = data_end;
    d->pages = committed;
    d->samples = nsamp;
    d->seal = seal;
    d->uri = p->uris[i];
    d->validator = p->vals[i];
    memset(cp, 0, sizeof *cp);
    pdb_uuid_hex(d->uuid, cp->uuid);
    cp->uri = p->uris[i];
    cp->validator = p->vals[i];
    cp->name = p->names[i];
    cp->pages = committed;
    cp->data_off = d->data_off;
    cp->data_end = data_end;
    cp->samples = nsamp;
    cp->seal = seal;
    cp->committed = (int64_t)time(NULL);
    if (byref) {
      /* Its rows by reference, its ids its own plus the constant. */
      d->index_id = p->pc.ref[i].fid;
      d->index_len = p->pc.ref[i].flen;
      cp->rows = 1;
      cp->id_delta = p->pc.ref[i].delta;
      cp->id_min = p->pc.ref[i].lo;
      cp->id_max = p->pc.ref[i].hi;
    }
    pthread_mutex_lock(&p->mu);
    p->pc.nsamples += nsamp;
    p->pc.deleted += deleted;
    p->pc.moved += o->moved_committed;
    pthread_mutex_unlock(&p->mu);
  }
  /* KEEP and OFFSET: the ids now, in parallel (a collision: prep_plan). */
  if (rc == PAGEDB_OK && p->policy != PAGEDB_ATTACH_AFTER && !byref) {
    IdPlan *a = &p->plans[i];
    a->em = em;
    int prc = ids_plan(a, p->policy, pp->offset);
    a->em = &p->em;
    if (prc == PAGEDB_OK) plan_done(p, i);
    else if (prc != PAGEDB_CONSTRAINT) rc = prc;
  }
  pdb_free(runs);
  /* A lent part's handle keeps its map for the commit (prep_free closes it). */
  if (rc == PAGEDB_OK && p->pc.lent[i].n && !byref) {
    p->keep[i] = o;
  } else {
    if (rc != PAGEDB_OK || !byref) {
      p->pc.lent[i].s = NULL;   /* (the commit fails: nothing may read them) */
      p->pc.lent[i].n = 0;
    }
    pagedb_close(o);          /* (a part by reference: its listed slots are copies) */
  }
  return rc;
}

/* The first half's threads: each takes the next part until none is left
** or one failed; the failure of the lowest part is kept (it is the one
** reported, as if the parts were taken one by one). */
static void *prep_worker(void *arg) {
  Prep *p = arg;
  pdb_msg em;
  for (;;) {
    if (atomic_load(&p->stop)) break;
    /* Busy before taking: a thread that sees no part left and one busy
    ** knows the other has none (list_runs then splits its part). */
    atomic_fetch_add(&p->busy, 1);
    size_t i = atomic_fetch_add(&p->next, 1);
    if (i >= p->pc.n) {
      atomic_fetch_sub(&p->busy, 1);
      break;
    }
    memset(&em, 0, sizeof em);
    int rc = prep_alone(p, i, &em);
    atomic_fetch_sub(&p->busy, 1);
    if (rc != PAGEDB_OK) {
      atomic_store(&p->stop, 1);
      pthread_mutex_lock(&p->mu);
      if (i < p->fail_at) {
        p->fail_at = i;
        if (em.rc == PAGEDB_OK) pdb_err(p->db, &em, rc, "%s", pagedb_errstr(rc));
        p->fail_em = em;
      }
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

/* The first half's work on part I that needs the parts before it, in
** order, on the committing thread: named twice (in the set, or already in
** DB), and its ids, if prep_alone did not plan them. */
static int prep_plan(Prep *p, size_t i) {
  pagedb *db = p->db;
  pdb_msg *em = &p->em;
  const pagedb_part *pp = &p->parts[i];
  int rc = PAGEDB_OK;
  long twin = seen_add(p, p->by_uuid, p->pc.cat[i].uuid, i, uuid_key);
  if (twin >= 0)
    rc = pdb_err(db, em, PAGEDB_CONSTRAINT, "it is given twice in the set (as parts %ld and %zu)", twin, i);
  if (rc == PAGEDB_OK && pp->name && seen_add(p, p->by_name, pp->name, i, name_key) >= 0)
    rc = pdb_err(db, em, PAGEDB_CONSTRAINT, "its name '%s' is given twice in the set", pp->name);
  if (rc == PAGEDB_OK && (db->features & CAT_FEATURE_PARTS)) {
    char what[64];
    pthread_mutex_lock(&db->cat_mu);
    rc = cat_part_known(db->cat, em, p->pc.cat[i].uuid, pp->name, what, sizeof what);
    pthread_mutex_unlock(&db->cat_mu);
    if (rc == PAGEDB_OK && what[0])
      rc = pdb_err(db, em, PAGEDB_CONSTRAINT, "it is already in %s (%s)", db->path, what);
  }
  if (rc == PAGEDB_OK && !p->planned[i]) {
    /* Parts after it may hold ids it wants (KEEP, OFFSET: planned in
    ** parallel): they are planned again after it, in order, so that the
    ** later part is the one refused, as when the parts went one by one. */
    for (size_t j = p->pc.n; j-- > i + 1;)
      if (p->planned[j] && !p->pc.ref[j].n) {
        ids_release(&p->plans[j]);
        p->planned[j] = 0;
      }
    rc = ids_plan(&p->plans[i], p->policy, pp->offset);
    if (rc == PAGEDB_OK) plan_done(p, i);
  }
  return rc;
}

static int by_lo(const void *x, const void *y) {
  const PartRef *a = *(const PartRef *const *)x, *b = *(const PartRef *const *)y;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* A part by reference holds its range of ids whole, holes included
** (ref_prep): a part copied with an id in it, which the other thread may
** have planned before the range was reserved, or which found the range
** taken, would be refused though its ids collide with none.  So, once
** every part is prepared, each part by reference with a copied part's id
** in its range is marked in NOREF; the commit then prepares every part
** again, those copied (pagedb_parts_commit).  Returns how many were
** marked.  The ranges are disjoint (a range meeting another is refused),
** so each copied part looks for its ids' span among them by bisection,
** then for an id inside each range it spans: O(parts x log) when no range
** is met, as is usual. */
static size_t ref_overlaps(Prep *p) {
  size_t n = p->pc.n, nr = 0, marked = 0;
  for (size_t i = 0; i < n; i++) nr += p->pc.ref[i].n != 0;
  if (nr == 0) return 0;
  const PartRef **rs = pdb_malloc(nr * sizeof *rs);
  if (!rs) {
    /* Without room to sort: every part by reference copied, the safe way. */
    for (size_t i = 0; i < n; i++)
      if (p->pc.ref[i].n) p->noref[i] = 1;
    return nr;
  }
  nr = 0;
  for (size_t i = 0; i < n; i++)
    if (p->pc.ref[i].n) rs[nr++] = &p->pc.ref[i];
  qsort(rs, nr, sizeof *rs, by_lo);
  for (size_t j = 0; j < n; j++) {
    const IdPlan *a = &p->plans[j];
    if (p->pc.ref[j].n || !a->n) continue;
    int64_t d = p->policy == PAGEDB_ATTACH_OFFSET ? p->parts[j].offset : 0, first, last;
    /* (An id the offset overflows is ids_plan's to refuse.) */
    if (__builtin_add_overflow(a->s[0].id, d, &first) || __builtin_add_overflow(a->s[a->n - 1].id, d, &last))
      continue;
    size_t lo = 0, hi = nr;   /* the first range ending at or after FIRST */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (rs[mid]->hi < first) lo = mid + 1;
      else hi = mid;
    }
    for (size_t k = lo; k < nr && rs[k]->lo <= last; k++) {
      uint64_t t0 = 0, t1 = a->n;   /* its first id at or after the range's start */
      while (t0 < t1) {
        uint64_t mid = t0 + (t1 - t0) / 2;
        if (a->s[mid].id + d < rs[k]->lo) t0 = mid + 1;
        else t1 = mid;
      }
      size_t r = (size_t)(rs[k] - p->pc.ref);
      if (t0 < a->n && a->s[t0].id + d <= rs[k]->hi && !p->noref[r]) {
        p->noref[r] = 1;
        marked++;
      }
    }
  }
  pdb_free(rs);
  return marked;
}

/* The first half: every part prepared, on up to 2 threads (the machine's
** processors, at most; the parts' opens and scans are independent), then
** planned in order.  The failure reported is the lowest part's. */
static int prep_all(Prep *p, size_t *failed) {
  size_t n = p->pc.n;
  long np = sysconf(_SC_NPROCESSORS_ONLN);
  size_t nt = np > 1 ? 2 : 1;
  p->ncpu = np;
  if (nt > n) nt = n;
  p->fail_at = SIZE_MAX;
  pthread_t th;
  int helper = nt > 1 && pthread_create(&th, NULL, prep_worker, p) == 0;
  prep_worker(p);
  if (helper) pthread_join(th, NULL);
  if (p->fail_at == SIZE_MAX && (p->demoted = ref_overlaps(p)) > 0) return PAGEDB_OK;
  for (size_t i = 0; i < n; i++) {
    *failed = i;
    if (i == p->fail_at) return pdb_err_copy(p->db, &p->em, &p->fail_em);
    int rc = prep_plan(p, i);
    if (rc != PAGEDB_OK) return rc;
  }
  return PAGEDB_OK;
}

/* Free P's N parts' state; with RELEASE, their reserved ids given back
** (the last part's first: AFTER's blocks return only in that order). */
static void prep_free(Prep *p, size_t n, int release) {
  for (size_t i = n; release && p->plans && i-- > 0;) ids_release(&p->plans[i]);
  /* The ranges of parts by reference: committed or not, they go now (a
  ** committed part's ids are in the index in force). */
  for (size_t i = 0; p->pc.ref && i < n; i++)
    if (p->pc.ref[i].n) {
      idx_release_range(p->db->idx, p->pc.ref[i].lo, p->pc.ref[i].hi);
      pdb_free(p->pc.ref[i].c);
    }
  for (size_t i = 0; i < n; i++) {
    if (p->keep) pagedb_close(p->keep[i]);   /* the lent slots' maps: the commit is over */
    if (p->runbuf) pdb_free(p->runbuf[i]);   /* every PageRecs of lists[i] */
    if (p->plans) pdb_free(p->plans[i].s);
    if (p->uris) pdb_free(p->uris[i]);
    if (p->names) pdb_free(p->names[i]);
    if (p->vals) pdb_free(p->vals[i]);
  }
  pdb_free(p->lists);
  pdb_free(p->runbuf);
  pdb_free(p->by_uuid);
  pdb_free(p->by_name);
  pdb_free(p->plans);
  pdb_free(p->uris);
  pdb_free(p->names);
  pdb_free(p->vals);
  pdb_free(p->planned);
  pthread_mutex_destroy(&p->mu);
  pdb_free(p->keep);
  pdb_free(p->pc.lent);
  pdb_free(p->pc.ref);
  pdb_free(p->pc.dx);
  pdb_free(p->pc.cat);
}

/* --- the commit, second half (commit.c's api_commit_locked calls these) ------- */

int parts_stage_rows(pagedb *db, pdb_msg *m) {
  PartCommit *pc = db->pcommit;
  uint64_t ps = pager_page_size(db->pager), p0 = pc->dx[0].k;
  int rc = PAGEDB_OK;
  const PageRecs *r = pc->runs;
  int byref = 0;
  for (size_t i = 0; i < pc->n; i++) byref |= pc->cat[i].rows;
  for (size_t i = 0; i < pc->n && rc == PAGEDB_OK; i++) {
    rc = cat_insert_part(db->cat, m, p0 == 0 && i == 0, &pc->cat[i]);
    if (rc != PAGEDB_OK) break;
    uint64_t lo = pc->cat[i].first_page, hi = lo + ((uint64_t)1 << DX_WIN_BITS) / ps;
    /* A part by reference has its page rows here, its sample rows in its
    ** own catalog (doc/format.md, "Parts' rows by reference"); a lent
    ** part's runs (headers alone) are its own list, and its rows are by
    ** reference (may_lend). */
    for (const PageRecs *l = pc->lent[i].runs; l && rc == PAGEDB_OK; l = (const PageRecs *)l->d.next)
      rc = NEVER(!pc->cat[i].rows) ? pdb_err(db, m, PAGEDB_MISUSE, "%s: a lent part's rows would be copied", db->path)
                                   : cat_insert_page(db->cat, m, &l->d);
    for (; r && r->d.pgno >= lo && r->d.pgno < hi && rc == PAGEDB_OK; r = (const PageRecs *)r->d.next)
      rc = pc->cat[i].rows ? cat_insert_page(db->cat, m, &r->d)
                           : cat_insert_run(db->cat, m, &r->d, r->slots, db->fields, db->nfield, (uint32_t)ps);
  }
  if (rc == PAGEDB_OK && NEVER(r != NULL))
    rc = pdb_err(db, m, PAGEDB_MISUSE, "%s: a part's run lies outside its window", db->path);
  int64_t span = 0;
  for (size_t i = 0; i < pc->n; i++)
    if (pc->cat[i].id_min >= 0 && pc->cat[i].id_max - pc->cat[i].id_min > span)
      span = pc->cat[i].id_max - pc->cat[i].id_min;
  if (rc == PAGEDB_OK) rc = cat_part_span(db->cat, m, span);
  if (rc == PAGEDB_OK) rc = cat_stage_meta(db->cat, m, "parts", (int64_t)(p0 + pc->n));
  if (rc == PAGEDB_OK)
    rc = cat_features_update(db->cat, m, CAT_FEATURE_PARTS | (byref ? CAT_FEATURE_PARTROWS : 0)
                                           | (api_parts_chunkref(db) ? CAT_FEATURE_CHUNKREF : 0), 0);
  if (rc == PAGEDB_OK && pc->deleted) rc = cat_add_meta(db->cat, m, "deleted_bytes", (int64_t)pc->deleted);
  /* A commit into a remote dataset (partsremote.c): the index object it
  ** uploads, named in the same transaction. */
  if (rc == PAGEDB_OK && db->ixfile_next) rc = cat_stage_meta_text(db->cat, m, "index_file", db->ixfile_next);
  return rc;
}

void parts_committed(pagedb *db, int ok) {
  PartCommit *pc = db->pcommit;
  if (!ok) return;
  /* (Asked before bit 1 is set: the first commit decides.) */
  db->features |= CAT_FEATURE_PARTS | (api_parts_chunkref(db) ? CAT_FEATURE_CHUNKREF : 0);
  for (size_t i = 0; i < pc->n; i++)
    if (pc->cat[i].rows) db->features |= CAT_FEATURE_PARTROWS;
  cat_note_parts(db->cat);
  atomic_fetch_add(&db->moved, pc->moved);
}

/* P made ready to prepare the N PARTS for a commit into DB under POLICY
** (NOREF: the parts to copy whatever they are).  0 when out of memory,
** nothing then held. */
static int prep_init(Prep *p, pagedb *db, const pagedb_part *parts, size_t n, int policy, uint8_t *noref) {
  *p = (Prep){ .db = db, .parts = parts, .policy = policy, .noref = noref };
  pthread_mutex_init(&p->mu, NULL);
  p->lists = pdb_calloc(n, sizeof *p->lists);
  p->plans = pdb_calloc(n, sizeof *p->plans);
  p->runbuf = pdb_calloc(n, sizeof *p->runbuf);
  for (p->mask = 1; p->mask < 2 * n; p->mask <<= 1) {
  }
  p->by_uuid = pdb_calloc(p->mask, sizeof *p->by_uuid);
  p->by_name = pdb_calloc(p->mask, sizeof *p->by_name);
  p->mask--;
  p->uris = pdb_calloc(n, sizeof *p->uris);
  p->names = pdb_calloc(n, sizeof *p->names);
  p->vals = pdb_calloc(n, sizeof *p->vals);
  p->pc.dx = pdb_calloc(n, sizeof *p->pc.dx);
  p->pc.cat = pdb_calloc(n, sizeof *p->pc.cat);
  p->pc.lent = pdb_calloc(n, sizeof *p->pc.lent);
  p->pc.ref = pdb_calloc(n, sizeof *p->pc.ref);
  p->keep = pdb_calloc(n, sizeof *p->keep);
  p->planned = pdb_calloc(n, sizeof *p->planned);
  p->pc.n = n;
  if (!p->lists || !p->plans || !p->runbuf || !p->by_uuid || !p->by_name || !p->uris || !p->names || !p->vals
      || !p->pc.dx || !p->pc.cat || !p->pc.lent || !p->pc.ref || !p->keep || !p->planned) {
    prep_free(p, 0, 0);
    return 0;
  }
  for (size_t i = 0; i < n; i++) p->plans[i] = (IdPlan){ .db = db, .em = &p->em, .after = -1, .own = &p->own };
  p->refok = may_ref(db, policy);
  return 1;
}

int pagedb_parts_commit(pagedb *db, const pagedb_part *parts, int n, int policy, int64_t *ncommitted) {
  if (ncommitted) *ncommitted = 0;
  if (!db) return PAGEDB_MISUSE;
  pdb_msg *m = &db->err;
  int rc = api_usable(db, m);
  if (rc != PAGEDB_OK) return rc;
  if ((rc = api_own(db, m)) != PAGEDB_OK) return rc;
  if (db->readonly && pdb_path_scheme(db->path, NULL, 0)) return parts_commit_remote(db, parts, n, policy, ncommitted);
  if (db->readonly) return pdb_err(db, m, PAGEDB_READONLY, "%s is open read-only: no part can be committed", db->path);
  if (n < 1 || !parts) return pdb_err(db, m, PAGEDB_MISUSE, "pagedb_parts_commit: no part given");
  if (policy < PAGEDB_ATTACH_KEEP || policy > PAGEDB_ATTACH_AFTER)
    return pdb_err(db, m, PAGEDB_MISUSE, "pagedb_parts_commit: unknown policy %d: use PAGEDB_ATTACH_KEEP, _OFFSET or"
                   " _AFTER", policy);
  if ((uint64_t)n > DX_PART_MAX)
    return pdb_err(db, m, PAGEDB_FULL, "pagedb_parts_commit: %d parts are more than a dataset can have", n);
  size_t un = (size_t)n, i = 0;
  uint8_t *noref = pdb_calloc(un, 1);
  Prep p;
  /* Prepared again when parts by reference must be copied (ref_overlaps):
  ** at most once more for each, as NOREF only grows. */
  for (;;) {
    if (!noref || !prep_init(&p, db, parts, un, policy, noref)) {
      pdb_free(noref);
      return pdb_err(db, m, PAGEDB_NOMEM, "out of memory committing %d parts", n);
    }
    rc = prep_all(&p, &i);
    if (rc != PAGEDB_OK || !p.demoted) break;
    prep_free(&p, un, 1);
  }
  pdb_free(noref);
  if (rc == PAGEDB_OK) {
    rc = api_commit_parts(db, &p.pc, p.lists);
    if (rc == PAGEDB_OK && ncommitted) *ncommitted = (int64_t)p.pc.nsamples;
    if (rc != PAGEDB_OK) {
      char why[PDB_MSG_MAX];
      snprintf(why, sizeof why, "%s", pagedb_errmsg(db));
      rc = pdb_err(db, m, rc, "cannot commit %d parts into %s: %s; nothing was committed", n, db->path, why);
    }
  } else {
    pdb_err(db, m, rc, "cannot commit part %s into %s: %s; nothing was committed", parts[i].path, db->path,
            p.em.rc != PAGEDB_OK ? p.em.text : pagedb_errstr(rc));
  }
  /* The runs (linked into pc.runs, or still in lists) live in runbuf; on
  ** success the ids are the committed samples' now. */
  prep_free(&p, un, rc != PAGEDB_OK);
  return rc;
}
