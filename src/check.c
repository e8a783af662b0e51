/*
** check.c -- pagedb_check: the integrity check, as SQLite's PRAGMA
** integrity_check.
**
** Nothing is taken from the index, which holds only what the open accepted
** (it is checked instead: with an index file, step 3 looks up every row's
** entry and compares it with the row, and step 4 checks every entry of
** the file and their number): the catalog is read as stored (cat_snap_*), in one read
** transaction of a connection of the check's own, so that every row is seen
** at one commit, and the data file through the pager.  Every problem is
** reported and the check goes on; only a failure to read (I/O, memory)
** stops it.
**
** The order of the work:
**
**   1. the data file's header, against the handle and against meta;
**   2. the page table, kept in memory (one Run per row): possible values,
**      contiguity from page 0, meta.committed_pages, the file's length;
**   3. the sample rows, streamed by (page, off), merged with the runs in
**      page order.  A run's samples arrive together; when the stream passes
**      the run, the run is read (its header, or in full mode all its used
**      bytes, into one buffer) and checked with the extents gathered for
**      it, so memory is the page table, the samples of one run and the
**      largest run.  Records arriving in offset order also make the overlap
**      check one comparison each: a record must start at or after the
**      farthest end seen so far;
**   4. the index file, when the handle reads the commit checked.
*/
#include "api.h"
#include "dict.h"
#include "os.h"

#include <inttypes.h>
#include <stdio.h>

/* As pager.c writes it. */
static const char kMagic[16] = "pagedb data";

static const char *kTypeName[] = { "?", "integer", "real", "text", "blob", "NULL" };

/* A row of the page table. */
typedef struct Run {
  int64_t pgno;
  uint64_t npages, used, nsamples;   /* meaningful when ok */
  int ok;                   /* the row is possible: its run can be read */
  int in_file;              /* the file holds its used bytes */
  uint64_t nstart;          /* sample rows whose record starts in it */
  /* Where its bytes are: the own data file, or a part's (doc/format.md,
  ** "Parts"): the own pager or NULL and the part's number (its file taken
  ** when the run is read: the bound on open parts may close it between),
  ** the dataset's number of its page 0, its D and size. */
  Pager *pg;
  int64_t part;
  uint64_t page0, doff, fsize;
} Run;

/* A stored value of a sample in the current run, to check in full mode. */
typedef struct Ext {
  uint64_t off, len;        /* its stored bytes, from the start of the run */
  uint64_t raw;             /* its length as given */
  uint64_t sum;             /* its checksum, as the catalog records it */
  int64_t id;
  int field;
  int z;                    /* stored compressed */
} Ext;

typedef struct Check {
  pagedb *db;
  Pager *pager;
  pdb_msg m;                /* a failure of the check itself */
  int quick;                /* PAGEDB_CHECK_QUICK */
  pagedb_check_fn cb;
  void *ctx;
  int64_t nproblem;
  uint32_t ps;              /* the layout the handle reads with */
  uint64_t doff, fsize;
  int64_t committed;        /* meta.committed_pages, or -1 if unusable */
  int64_t nsample;          /* meta.samples, or -1 if unusable */
  Run *runs;                /* the page table, by pgno */
  uint64_t nrun, caprun;
  uint64_t next;            /* the page after the own file's runs seen so far */
  uint64_t pnext;           /* ...and after the current part's */
  int64_t part;             /* the part of the last part's row seen, -1: none */
  int pok;                  /* ...its data file opened and checked */
  uint64_t pdoff, psize;
  uint64_t cur;             /* runs[cur]: the run the sample stream is in */
  Ext *ext;                 /* full mode: the extents of runs[cur] */
  size_t next_ext, capext;
  uint64_t far_end;         /* the farthest end of a record so far (data region) */
  int64_t far_id;           /* ...and its sample */
  uint64_t nrows;           /* sample rows */
  uint8_t *buf;             /* a run's bytes (pager_fetch) */
  size_t cap;
  uint8_t *zbuf;            /* a decompressed value */
  size_t zcap;
  const Dx *dx;             /* the index file, when it indexes the commit checked */
  uint64_t nix;             /* sample rows whose index entry matched */
} Check;

/* Count a problem and, within the first PAGEDB_CHECK_MAX_REPORTS, report it. */
__attribute__((format(printf, 5, 6)))
static void report(Check *k, int64_t page, int64_t id, int field, const char *fmt, ...) {
  k->nproblem++;
  if (!k->cb || k->nproblem > PAGEDB_CHECK_MAX_REPORTS) return;
  char what[PDB_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  k->cb(k->ctx, page, id, field, what);
}

static const char *type_name(int t) {
  return t >= 1 && t <= 5 ? kTypeName[t] : kTypeName[0];
}

static const char *field_name(const Check *k, int f) {
  return k->db->fields[f].name;
}

/* --- 1: the header ------------------------------------------------------- */

static int check_header(Check *k) {
  _Alignas(PDB_HEADER_SIZE) uint8_t h[PDB_HEADER_SIZE];   /* O_DIRECT-ready */
  int rc = pdb_os_read(pager_file(k->pager), h, sizeof h, 0);
  if (rc == PAGEDB_IOERR_SHORT_READ) {
    /* Zero-filled: judged below like any damage. */
    report(k, -1, -1, -1, "the data file is %" PRIu64 " bytes, shorter than its %u-byte header", k->fsize,
           PDB_HEADER_SIZE);
  } else if (rc != PAGEDB_OK) {
    int e = pdb_os_errno(pager_file(k->pager));
    return pdb_err(k->db, &k->m, rc, "cannot read the header of %s: %s", k->db->path,
                   e ? strerror(e) : pagedb_errstr(rc));
  }
  char want[33], got[33];
  if (memcmp(h, kMagic, sizeof kMagic) != 0)
    report(k, -1, -1, -1, "data file header: the magic is not 'pagedb data'");
  if (pdb_get32(h + 16) != PDB_FORMAT)
    report(k, -1, -1, -1, "data file header: format version %u, expected %u", pdb_get32(h + 16), PDB_FORMAT);
  if (pdb_get32(h + 20) != PDB_HEADER_SIZE)
    report(k, -1, -1, -1, "data file header: header size %u, expected %u", pdb_get32(h + 20), PDB_HEADER_SIZE);
  uint64_t sum = pdb_checksum(h, 120);
  if (pdb_get64(h + 120) != sum)
    report(k, -1, -1, -1, "data file header: checksum mismatch: stored %016" PRIx64 ", bytes 0..119 hash to %016" PRIx64,
           pdb_get64(h + 120), sum);
  if (pdb_get64(h + 24) != k->ps)
    report(k, -1, -1, -1, "data file header: page size %" PRIu64 ", but the dataset was opened with %u",
           pdb_get64(h + 24), k->ps);
  if (memcmp(h + 32, pager_uuid(k->pager), 16) != 0) {
    pdb_uuid_hex(h + 32, got);
    pdb_uuid_hex(pager_uuid(k->pager), want);
    report(k, -1, -1, -1, "data file header: uuid %s, but the dataset was opened with %s", got, want);
  }
  if (pdb_get64(h + 56) != k->doff)
    report(k, -1, -1, -1, "data file header: page 0 at offset %" PRIu64 ", but the dataset was opened with %" PRIu64,
           pdb_get64(h + 56), k->doff);
  return PAGEDB_OK;
}

/* Meta KEY as a non-negative integer in *OUT, or -1 after reporting why not. */
static int meta_int(Check *k, CatSnap *s, const char *key, int64_t *out) {
  CatVal v;
  char text[64];
  *out = -1;
  int rc = cat_snap_meta(s, &k->m, key, &v, text, sizeof text);
  if (rc != PAGEDB_OK) return rc;
  if (v.type == CAT_NULL)
    report(k, -1, -1, -1, "catalog: meta.%s is missing", key);
  else if (v.type != CAT_INTEGER)
    report(k, -1, -1, -1, "catalog: meta.%s holds a %s value, not an integer", key, type_name(v.type));
  else if (v.i < 0)
    report(k, -1, -1, -1, "catalog: meta.%s is %" PRId64 ", a negative number", key, v.i);
  else
    *out = v.i;
  return PAGEDB_OK;
}

static int check_meta(Check *k, CatSnap *s) {
  CatVal v;
  char text[64], want[33];
  pdb_uuid_hex(pager_uuid(k->pager), want);
  int rc = cat_snap_meta(s, &k->m, "uuid", &v, text, sizeof text);
  if (rc != PAGEDB_OK) return rc;
  if (v.type != CAT_TEXT)
    report(k, -1, -1, -1, "catalog: meta.uuid holds a %s value, not the data file's uuid %s", type_name(v.type), want);
  else if (strcmp(text, want) != 0)
    report(k, -1, -1, -1, "catalog: meta.uuid is '%s', but the data file's uuid is %s", text, want);
  int64_t format, page_size;
  if ((rc = meta_int(k, s, "format", &format)) != PAGEDB_OK) return rc;
  if (format >= 0 && format != CAT_FORMAT_PLAIN && format != CAT_FORMAT_FEATURES)
    report(k, -1, -1, -1, "catalog: meta.format is %" PRId64 ", expected %u or %u", format, CAT_FORMAT_PLAIN,
           CAT_FORMAT_FEATURES);
  if ((rc = meta_int(k, s, "page_size", &page_size)) != PAGEDB_OK) return rc;
  if (page_size >= 0 && page_size != k->ps)
    report(k, -1, -1, -1, "catalog: meta.page_size is %" PRId64 ", but the data file's page size is %u", page_size,
           k->ps);
  if ((rc = meta_int(k, s, "committed_pages", &k->committed)) != PAGEDB_OK) return rc;
  if ((rc = meta_int(k, s, "samples", &k->nsample)) != PAGEDB_OK) return rc;
  /* The index file is checked when it is the one the checked commit
  ** records and the handle reads that commit (another process may have
  ** committed since this handle's snapshot). */
  CatVal id, dir;
  Dx *dx = idx_disk(k->db->idx);
  if (dx && (rc = cat_snap_meta(s, &k->m, "index_id", &id, text, sizeof text)) == PAGEDB_OK
      && (rc = cat_snap_meta(s, &k->m, "index_dir", &dir, text, sizeof text)) == PAGEDB_OK && id.type == CAT_INTEGER
      && dir.type == CAT_INTEGER && (uint64_t)id.i == k->db->ixmeta.id && (uint64_t)dir.i == k->db->ixmeta.dir
      && (uint64_t)id.i == dx_id(dx))
    k->dx = dx;
  return rc;
}

/* The index entry of the sample of row V (id ID, at PAGE and OFF): it
** must exist, pass its checks, and say what the row says. */
static void check_index_row(Check *k, const CatVal *v, int64_t id, int64_t page, int64_t off) {
  const uint64_t *s = dx_find(k->dx, id);
  if (!s) {
    report(k, page, id, -1, "sample %" PRId64 ": the index file has no entry for it", id);
    return;
  }
  if (s == DX_BAD) {
    char why[PDB_MSG_MAX - 64];
    if (dx_unfetched(k->dx, id, why, sizeof why) == 2)
      report(k, page, id, -1, "sample %" PRId64 ": its entry is in a chunk referenced in %s", id, why);
    else
      report(k, page, id, -1, "sample %" PRId64 ": its entry in the index file fails its checks (checksum, id or"
             " extent)", id);
    return;
  }
  k->nix++;
  const pagedb *db = k->db;
  int nf = db->nfield, bad = -2;
  if (s[1] != (uint64_t)page * k->ps + (uint64_t)off) bad = -1;
  for (int f = 0, col = 3; f < nf && bad == -2; f++) {
    int t = db->fields[f].type;
    const CatVal *c = &v[col];
    int present = c->type != CAT_NULL;
    if (present != slot_has(s, f)) bad = f;
    if (cat_type_stored(t)) {
      col += 3;
      if (!present || bad != -2) continue;
      const uint64_t *e = slot_cext(s, nf, f);
      uint64_t stored = c[1].type == CAT_INTEGER ? (uint64_t)c[1].i : (uint64_t)c->i;
      if (slot_get(s, nf, f) != (uint64_t)c->i || (e[0] & ~SLOT_Z) != stored
          || !!(e[0] & SLOT_Z) != (c[1].type == CAT_INTEGER) || e[1] != (uint64_t)c[2].i)
        bad = f;
      continue;
    }
    col++;
    if (!present || bad != -2) continue;
    uint64_t want = (uint64_t)c->i;
    if (t == PAGEDB_REAL) {
      double d = c->type == CAT_FLOAT ? c->r : (double)c->i;
      memcpy(&want, &d, sizeof want);
    }
    if (slot_get(s, nf, f) != want) bad = f;
  }
  if (bad == -1)
    report(k, page, id, -1, "sample %" PRId64 ": the index file places its record at data byte %" PRIu64
           ", the catalog at page %" PRId64 " offset %" PRId64, id, s[1], page, off);
  else if (bad >= 0)
    report(k, page, id, bad, "sample %" PRId64 ", field '%s': the index file's entry disagrees with the catalog", id,
           field_name(k, bad));
}

static int count_entry(void *ctx, int64_t id, const uint64_t *slot) {
  (void)id, (void)slot;
  ++*(uint64_t *)ctx;
  return PAGEDB_OK;
}

/* Every entry of the index file passes its checks, and there are as many
** as catalog rows (each row found its own above). */
static void check_index(Check *k) {
  uint64_t n = 0;
  int rc = dx_scan(k->dx, count_entry, &n);
  if (rc != PAGEDB_OK)
    report(k, -1, -1, -1, "the index file: %s", pagedb_errmsg(k->db));
  else if (n != k->nrows || dx_count(k->dx) != k->nrows)
    report(k, -1, -1, -1, "the index file holds %" PRIu64 " entries (its directory says %" PRIu64 "), the catalog %"
           PRIu64 " samples", n, dx_count(k->dx), k->nrows);
  /* The token maps against the slots, which the rows checked above
  ** (dindex.c, invariant 5): a map is derived, so any disagreement is
  ** damage. */
  for (int f = 0; f < k->db->nfield; f++) {
    char why[PDB_MSG_MAX - 128];
    if (api_token_bytes(&k->db->fields[f]) && dx_tok_verify(k->dx, f, why, sizeof why))
      report(k, -1, -1, f, "the token map of field '%s' in the index file: %s", field_name(k, f), why);
  }
}

/* --- parts: table part against the index's part records ------------------ */

typedef struct PartCheck {
  Check *k;
  uint64_t n;               /* rows */
  int64_t span;             /* the widest id_max - id_min */
} PartCheck;

static int part_row_check(void *ctx, const CatPart *p) {
  PartCheck *pc = ctx;
  Check *k = pc->k;
  if (p->k != pc->n)
    report(k, -1, -1, -1, "table part: row %" PRIu64 " is numbered %" PRIu64 " (parts are numbered 0, 1, 2...)", pc->n,
           p->k);
  pc->n++;
  if (p->id_min >= 0 && p->id_max >= p->id_min && p->id_max - p->id_min > pc->span) pc->span = p->id_max - p->id_min;
  if (p->first_page != dx_window(p->k) / k->ps)
    report(k, -1, -1, -1, "table part: part %" PRIu64 " has first_page %" PRIu64 ", not its window's %" PRIu64, p->k,
           p->first_page, dx_window(p->k) / k->ps);
  if (!k->dx) return PAGEDB_OK;
  const uint64_t *rec = dx_part(k->dx, p->k);
  if (!rec) {
    report(k, -1, -1, -1, "part %" PRIu64 ": its record in the index file is missing or damaged", p->k);
    return PAGEDB_OK;
  }
  uint8_t uuid[16];
  char uri[4096];
  int same = pdb_uuid_parse(p->uuid, uuid) && memcmp(uuid, &rec[1], 16) == 0 && rec[3] == p->data_off
          && rec[4] == p->data_end && rec[5] == p->pages && rec[6] == p->samples && rec[7] == p->seal
          && dx_part_string(k->dx, rec, 0, uri, sizeof uri) == PAGEDB_OK && p->uri && strcmp(uri, p->uri) == 0;
  if (!same)
    report(k, -1, -1, -1, "part %" PRIu64 ": its record in the index file disagrees with its row of table part", p->k);
  return PAGEDB_OK;
}

/* Table part, meta.parts and the index's part records agree. */
static int check_parts(Check *k, CatSnap *s) {
  CatVal v;
  char text[8];
  int rc = cat_snap_meta(s, &k->m, "parts", &v, text, sizeof text);
  if (rc != PAGEDB_OK || v.type == CAT_NULL) return rc;
  PartCheck pc = { k, 0, 0 };
  rc = cat_snap_parts(s, &k->m, part_row_check, &pc);
  if (rc != PAGEDB_OK) return rc;
  /* SQL finds a part's rows by id through meta.part_id_span (catref.c):
  ** narrower than a part, it would miss rows of that part. */
  CatVal sv;
  rc = cat_snap_meta(s, &k->m, "part_id_span", &sv, text, sizeof text);
  if (rc != PAGEDB_OK) return rc;
  if (sv.type != CAT_NULL && sv.type != CAT_INTEGER)
    report(k, -1, -1, -1, "catalog: meta.part_id_span is not an integer");
  else if (sv.type == CAT_INTEGER && sv.i < pc.span)
    report(k, -1, -1, -1, "catalog: meta.part_id_span is %" PRId64 ", less than the %" PRId64 " ids a part spans:"
           " lookups by id in SQL would miss its samples", sv.i, pc.span);
  if (v.type != CAT_INTEGER || (uint64_t)v.i != pc.n)
    report(k, -1, -1, -1, "catalog: meta.parts is %s, but table part has %" PRIu64 " rows",
           v.type == CAT_INTEGER ? "another number" : "not an integer", pc.n);
  if (k->dx && dx_parts(k->dx) != pc.n)
    report(k, -1, -1, -1, "the index file records %" PRIu64 " parts, table part %" PRIu64, dx_parts(k->dx), pc.n);
  return PAGEDB_OK;
}

/* --- 2: the page table ---------------------------------------------------- */

static int page_row(void *ctx, const CatVal *v) {
  static const char *col[] = { "pgno", "npages", "used", "nsamples" };
  Check *k = ctx;
  Run r = { .pgno = v[0].i, .ok = 1, .part = -1 };
  int len_ok = 0;           /* npages is possible: where the run ends is known */
  for (int i = 0; i < 4; i++) {
    if (v[i].type != CAT_INTEGER) {
      report(k, r.pgno, -1, -1, "page table, row of page %" PRId64 ": %s holds a %s value, not an integer", r.pgno,
             col[i], type_name(v[i].type));
      r.ok = 0;
    } else if (v[i].i < 0) {
      report(k, r.pgno, -1, -1, "page table, row of page %" PRId64 ": %s is %" PRId64 ", a negative number", r.pgno,
             col[i], v[i].i);
      r.ok = 0;
    }
  }
  uint64_t maxpg = PDB_MAX_DATA / k->ps, wpages = ((uint64_t)1 << DX_WIN_BITS) / k->ps;
  int inpart = r.pgno >= 0 && (uint64_t)r.pgno >= maxpg && (uint64_t)r.pgno < PDB_ADDR_MAX / k->ps;
  r.pg = k->pager;
  r.doff = k->doff;
  r.fsize = k->fsize;
  if (inpart) {
    /* A part's run: it lies in the part's window and its bytes in the
    ** part's data file, opened (and checked against its record) here. */
    int64_t part = (int64_t)dx_part_of((uint64_t)r.pgno * k->ps);
    if (part != k->part) {
      k->part = part;
      k->pnext = (uint64_t)(dx_window((uint64_t)part) / k->ps);
      k->pok = 0;
      pdb_msg em = { 0 };
      uint64_t end;
      Pager *pg = NULL;
      if (parts_file(k->db, &em, (uint64_t)part, &pg, &end) != PAGEDB_OK) {
        report(k, r.pgno, -1, -1, "part %" PRId64 ": %s", part, pdb_msg_text(&em));
      } else {
        if (pdb_os_size(pager_file(pg), &k->psize) != PAGEDB_OK) k->psize = 0;
        k->pdoff = pager_data_off(pg);
        k->pok = 1;
        parts_file_done(k->db, (uint64_t)part);
      }
    }
    r.pg = NULL;
    r.part = part;
    r.page0 = (uint64_t)(dx_window((uint64_t)part) / k->ps);
    r.doff = k->pdoff;
    r.fsize = k->psize;
    if (!k->pok) r.ok = 0;
    maxpg = r.page0 + wpages;
  }
  if (r.ok) {
    r.npages = (uint64_t)v[1].i;
    r.used = (uint64_t)v[2].i;
    r.nsamples = (uint64_t)v[3].i;
    len_ok = r.npages >= 1 && r.npages <= UINT32_MAX && (uint64_t)r.pgno <= maxpg
          && r.npages <= maxpg - (uint64_t)r.pgno;
    if (!len_ok) {
      report(k, r.pgno, -1, -1, "page table: the run at page %" PRId64 " has an impossible length of %" PRIu64 " pages",
             r.pgno, r.npages);
      r.ok = 0;
    } else if (r.used != 0 && (r.used < PDB_PAGE_HDR || r.used > r.npages * k->ps)) {
      report(k, r.pgno, -1, -1, "page table: the run at page %" PRId64 " uses %" PRIu64 " bytes; a run of %" PRIu64
             " pages uses 0 (none written) or %u to %" PRIu64, r.pgno, r.used, r.npages, PDB_PAGE_HDR,
             r.npages * k->ps);
      r.ok = 0;
    } else if (r.nsamples > UINT32_MAX) {
      report(k, r.pgno, -1, -1, "page table: the run at page %" PRId64 " counts an impossible %" PRIu64 " samples",
             r.pgno, r.nsamples);
      r.ok = 0;
    } else if (r.used == 0 && r.nsamples != 0) {
      report(k, r.pgno, -1, -1, "page table: the run at page %" PRId64 " holds no data (used 0) but counts %" PRIu64
             " samples", r.pgno, r.nsamples);
    }
  }
  if (r.pgno >= 0) {
    uint64_t *next = inpart ? &k->pnext : &k->next;
    if ((uint64_t)r.pgno > *next)
      report(k, (int64_t)*next, -1, -1, "page table: pages %" PRIu64 " to %" PRId64 " are in no run (a gap before the"
             " run at page %" PRId64 ")", *next, r.pgno - 1, r.pgno);
    else if ((uint64_t)r.pgno < *next)
      report(k, r.pgno, -1, -1, "page table: the run at page %" PRId64 " overlaps the run before it, which ends at"
             " page %" PRIu64, r.pgno, *next - 1);
    uint64_t end = (uint64_t)r.pgno + (len_ok ? r.npages : 1);
    if (end > *next) *next = end;
  }
  if (r.ok && r.used > 0) {
    uint64_t end = r.doff + ((uint64_t)r.pgno - r.page0) * k->ps + r.used;
    r.in_file = end <= r.fsize;
    if (!r.in_file)
      report(k, r.pgno, -1, -1, "the run at page %" PRId64 " uses the data file up to byte %" PRIu64 ", but the file"
             " has only %" PRIu64 " bytes (truncated)", r.pgno, end, r.fsize);
  }
  if (k->nrun == k->caprun) {
    uint64_t cap = k->caprun ? k->caprun * 2 : 256;
    Run *nr = pdb_realloc(k->runs, cap * sizeof *nr);
    if (!nr) return pdb_err(k->db, &k->m, PAGEDB_NOMEM, "out of memory checking the page table of %s", k->db->catpath);
    k->runs = nr;
    k->caprun = cap;
  }
  k->runs[k->nrun++] = r;
  return PAGEDB_OK;
}

/* --- 3: the runs and their samples ---------------------------------------- */

/* Check extent E of run R, whose bytes are at P. */
/* A tensor value with a trailer (two or more variable dimensions): its
** trailer must fit its length, as a read checks it (RAW: the value). */
static void check_trailer(Check *k, const Run *r, const Ext *e, const uint8_t *raw) {
  const CatField *f = &k->db->fields[e->field];
  if (f->type != PAGEDB_TENSOR || f->tensor.nvar < 2) return;
  int64_t shape[PAGEDB_TENSOR_MAX_DIMS];
  uint64_t nb;
  char why[160];
  if (tensor_value_shape(&f->tensor, raw, e->raw, shape, &nb, why, sizeof why) != 0)
    report(k, r->pgno, e->id, e->field, "sample %" PRId64 ", field '%s': %s", e->id, field_name(k, e->field), why);
}

static int check_extent(Check *k, const Run *r, const Ext *e, const uint8_t *p) {
  const uint8_t *src = p + e->off;
  uint64_t got = pdb_sum(src, e->len);
  if (got != e->sum)
    report(k, r->pgno, e->id, e->field, "sample %" PRId64 ", field '%s': checksum mismatch: the catalog records %016"
           PRIx64 ", the %" PRIu64 " stored bytes at offset %" PRIu64 " of the run at page %" PRId64 " hash to %016"
           PRIx64, e->id, field_name(k, e->field), e->sum, e->len, e->off, r->pgno, got);
  if (!e->z) {
    check_trailer(k, r, e, src);
    return PAGEDB_OK;
  }
  /* A larger recorded length cannot be right, and is not worth a buffer. */
  int ok = 0;
  int codec = k->db->fields[e->field].codec;
  const void *dict = NULL;
  if (codec_uses_dict(codec)) {
    /* The dictionary the value names must be in the catalog, intact. */
    uint32_t did = codec_value_dict(src, (size_t)e->len);
    const PdbDict *d = did ? dict_find(k->db, e->field, did) : NULL;
    if (!d || d->bad[0] || !d->ddict) {
      if (!did)
        report(k, r->pgno, e->id, e->field, "sample %" PRId64 ", field '%s': its compressed value names no dictionary",
               e->id, field_name(k, e->field));
      else
        report(k, r->pgno, e->id, e->field, "sample %" PRId64 ", field '%s': its value names dictionary %" PRIu32
               ", which is %s", e->id, field_name(k, e->field), did, d ? "damaged" : "not in the catalog");
      return PAGEDB_OK;
    }
    dict = d->ddict;
  }
  if (e->raw <= codec_max_raw(codec, e->len)) {
    if (e->raw > k->zcap) {
      size_t cap;
      uint8_t *b = pdb_buf_alloc((size_t)e->raw, &cap);
      if (!b)
        return pdb_err(k->db, &k->m, PAGEDB_NOMEM, "out of memory decompressing sample %" PRId64 " (%" PRIu64 " bytes)",
                       e->id, e->raw);
      pdb_buf_free(k->zbuf);
      k->zbuf = b;
      k->zcap = cap;
    }
    ok = codec_decompress(codec, dict, src, (size_t)e->len, k->zbuf, (size_t)e->raw);
  }
  if (!ok)
    report(k, r->pgno, e->id, e->field, "sample %" PRId64 ", field '%s': its %" PRIu64 " compressed bytes at offset %"
           PRIu64 " of the run at page %" PRId64 " do not decompress to the %" PRIu64 " bytes the catalog records",
           e->id, field_name(k, e->field), e->len, e->off, r->pgno, e->raw);
  else
    check_trailer(k, r, e, k->zbuf);
  return PAGEDB_OK;
}

/* Whether the N bytes of run R at P (N: its header only, or all it uses)
** pass their checksums: the header's, the data's and each of the NEXT
** extents'. */
static int run_intact(const Check *k, const Run *r, const uint8_t *p, uint64_t n, size_t next) {
  RunHeader h;
  pager_run_header(p, &h);
  if (!h.sum_ok) return 0;
  if (n < r->used) return 1;
  if (h.datasum != pdb_sum(p + PDB_PAGE_HDR, (size_t)(r->used - PDB_PAGE_HDR))) return 0;
  for (size_t i = 0; i < next; i++)
    if (pdb_sum(p + k->ext[i].off, k->ext[i].len) != k->ext[i].sum) return 0;
  return 1;
}

/* The stream of samples has passed run R: check it with its extents. */
static int finish_run(Check *k, Run *r) {
  size_t next_ext = k->next_ext;
  k->next_ext = 0;
  if (!r->ok || r->used == 0) return PAGEDB_OK;
  if (r->nstart != r->nsamples)
    report(k, r->pgno, -1, -1, "page table: %" PRIu64 " samples start in the run at page %" PRId64 ", but %" PRIu64
           " sample rows do", r->nsamples, r->pgno, r->nstart);
  if (!r->in_file) return PAGEDB_OK;
  const uint8_t *p;
  uint64_t n = k->quick ? PDB_PAGE_HDR : r->used, end;
  uint64_t at = ((uint64_t)r->pgno - r->page0) * k->ps;
  Pager *pg = r->pg;
  pdb_msg em = { 0 };
  if (r->part >= 0 && parts_file(k->db, &em, (uint64_t)r->part, &pg, &end) != PAGEDB_OK) {
    report(k, r->pgno, -1, -1, "part %" PRId64 ": %s", r->part, pdb_msg_text(&em));
    return PAGEDB_OK;
  }
  uint8_t uuid[16];
  memcpy(uuid, pager_uuid(pg), 16);
  int rc = pager_fetch(pg, &k->m, at, (size_t)n, &k->buf, &k->cap, &p);
  /* Bytes from a shared chunk cache that fail a checksum are fetched
  ** again from the server first (reader.c, refetch): what is reported is
  ** then the dataset's own damage, not a forged chunk's.  The part's file
  ** stays pinned until then. */
  if (rc == PAGEDB_OK && pager_untrusted(pg) && !run_intact(k, r, p, n, next_ext)
      && (rc = pager_refetch(pg, &k->m, at, n)) == PAGEDB_OK)
    rc = pager_fetch(pg, &k->m, at, (size_t)n, &k->buf, &k->cap, &p);
  if (r->part >= 0) parts_file_done(k->db, (uint64_t)r->part);   /* P is in k->buf (or a map kept to the close) */
  if (rc != PAGEDB_OK) return rc;
  char want[33], got[33];
  RunHeader h;
  pager_run_header(p, &h);
  if (!h.magic_ok)
    report(k, r->pgno, -1, -1, "the run at page %" PRId64 ": its header does not start with the magic PDBRUN", r->pgno);
  if (memcmp(h.uuid, uuid, 16) != 0) {
    pdb_uuid_hex(h.uuid, got);
    pdb_uuid_hex(uuid, want);
    report(k, r->pgno, -1, -1, "the run at page %" PRId64 ": its header has uuid %s, not the %s %s", r->pgno,
           got, r->page0 ? "part's" : "dataset's", want);
  }
  if (h.pgno != (uint64_t)r->pgno - r->page0)
    report(k, r->pgno, -1, -1, "the run at page %" PRId64 ": its header says page %" PRIu64, r->pgno, h.pgno);
  if (h.npages != r->npages)
    report(k, r->pgno, -1, -1, "the run at page %" PRId64 ": its header says %u pages, the page table %" PRIu64,
           r->pgno, h.npages, r->npages);
  /* The header counts the samples written; the page table those still
  ** live (pagedb_delete lowers it), so only more live than written is wrong. */
  if (h.nsamples < r->nsamples)
    report(k, r->pgno, -1, -1, "the run at page %" PRId64 ": its header says %u samples were written, the page table"
           " has %" PRIu64 " live", r->pgno, h.nsamples, r->nsamples);
  if (h.used != r->used)
    report(k, r->pgno, -1, -1, "the run at page %" PRId64 ": its header says %" PRIu64 " bytes used, the page table %"
           PRIu64, r->pgno, h.used, r->used);
  if (!h.sum_ok)
    report(k, r->pgno, -1, -1, "the run at page %" PRId64 ": header checksum mismatch: stored %016" PRIx64
           ", bytes 0..55 hash to %016" PRIx64, r->pgno, pdb_get64(p + 56), pdb_checksum(p, 56));
  if (k->quick) return PAGEDB_OK;
  uint64_t sum = pdb_sum(p + PDB_PAGE_HDR, (size_t)(r->used - PDB_PAGE_HDR));
  if (h.datasum != sum)
    report(k, r->pgno, -1, -1, "the run at page %" PRId64 ": data checksum mismatch: its header records %016" PRIx64
           ", bytes 64..%" PRIu64 " hash to %016" PRIx64, r->pgno, h.datasum, r->used - 1, sum);
  for (size_t i = 0; i < next_ext && rc == PAGEDB_OK; i++) rc = check_extent(k, r, &k->ext[i], p);
  return rc;
}

static int gather(Check *k, const Ext *e) {
  if (k->next_ext == k->capext) {
    size_t cap = k->capext ? k->capext * 2 : 256;
    Ext *ne = pdb_realloc(k->ext, cap * sizeof *ne);
    if (!ne) return pdb_err(k->db, &k->m, PAGEDB_NOMEM, "out of memory checking sample %" PRId64, e->id);
    k->ext = ne;
    k->capext = cap;
  }
  k->ext[k->next_ext++] = *e;
  return PAGEDB_OK;
}

/* Where page PAGE lies, for a sample on a page that starts no run. */
static void describe_page(const Check *k, uint64_t page, char *out, size_t n) {
  uint64_t lo = 0, hi = k->nrun;   /* the first run past PAGE */
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (k->runs[mid].pgno <= (int64_t)page) lo = mid + 1;
    else hi = mid;
  }
  const Run *before = lo > 0 ? &k->runs[lo - 1] : NULL;
  if (before && before->ok && page < (uint64_t)before->pgno + before->npages)
    snprintf(out, n, "it is inside the run at page %" PRId64, before->pgno);
  else if (page >= k->next)
    snprintf(out, n, "the page table ends at page %" PRIu64, k->next);
  else
    snprintf(out, n, "no run covers it");
}

/*
** One stored value of a sample: check its columns and where it lies (AT
** from the start of the run R, which may be NULL), and gather it.  *AT
** moves past it; *LAYOUT becomes 0 when the columns leave its length
** unknown, so that the fields after it cannot be placed.
*/
static int sample_value(Check *k, Run *r, int64_t page, int64_t id, int f, const CatVal *v, uint64_t *at,
                        int *layout) {
  const char *name = field_name(k, f);
  if (v[0].type == CAT_NULL) {
    if (v[1].type != CAT_NULL || v[2].type != CAT_NULL)
      report(k, page, id, f, "sample %" PRId64 ", field '%s': no value, yet a stored length (%s) or checksum (%s)",
             id, name, type_name(v[1].type), type_name(v[2].type));
    return PAGEDB_OK;
  }
  if (v[0].type != CAT_INTEGER) {
    report(k, page, id, f, "sample %" PRId64 ", field '%s': its length holds a %s value, not an integer", id, name,
           type_name(v[0].type));
    *layout = 0;
    return PAGEDB_OK;
  }
  if (v[0].i < 0 || (uint64_t)v[0].i > PAGEDB_MAX_SAMPLE) {
    report(k, page, id, f, "sample %" PRId64 ", field '%s': impossible length %" PRId64, id, name, v[0].i);
    *layout = 0;
    return PAGEDB_OK;
  }
  const CatField *cf = &k->db->fields[f];
  if (cf->type == PAGEDB_TENSOR && !tensor_len_ok(&cf->tensor, (uint64_t)v[0].i)) {
    char decl[TENSOR_TEXT_MAX];
    tensor_format(&cf->tensor, decl);
    report(k, page, id, f, "sample %" PRId64 ", field '%s': raw length %" PRId64 " does not fit its declaration %s",
           id, name, v[0].i, decl);
  }
  /* Each value starts at its field's alignment (api.h, api_extent). */
  uint64_t align = k->db->isbytes[f];
  Ext e = { .off = pdb_align(*at, align), .len = (uint64_t)v[0].i, .raw = (uint64_t)v[0].i, .id = id, .field = f };
  if (v[1].type != CAT_NULL) {
    int64_t z = v[1].i;
    if (v[1].type != CAT_INTEGER) {
      report(k, page, id, f, "sample %" PRId64 ", field '%s': its stored length (%s:z) holds a %s value, not an"
             " integer", id, name, name, type_name(v[1].type));
      *layout = 0;
      return PAGEDB_OK;
    }
    if (z <= 0 || z >= v[0].i) {
      report(k, page, id, f, "sample %" PRId64 ", field '%s': impossible compressed length %" PRId64 " for a value of %"
             PRId64 " bytes", id, name, z, v[0].i);
      *layout = 0;
      return PAGEDB_OK;
    }
    if (PAGEDB_CODEC_KIND(k->db->fields[f].codec) == PAGEDB_CODEC_NONE)
      report(k, page, id, f, "sample %" PRId64 ", field '%s': stored compressed, but the field has no codec", id,
             name);
    e.len = (uint64_t)z;
    e.z = 1;
  }
  int have_sum = v[2].type == CAT_INTEGER;
  if (!have_sum)
    report(k, page, id, f, "sample %" PRId64 ", field '%s': its checksum (%s:sum) holds a %s value, not an integer",
           id, name, name, type_name(v[2].type));
  e.sum = (uint64_t)v[2].i;
  if (!*layout) return PAGEDB_OK;
  *at = e.off + e.len;
  if (!r || e.len == 0) return PAGEDB_OK;
  /* The promise of pagedb_field_add_aligned: a run starts on a page, and
  ** pages at multiples of 4096, so only a bad header could break it. */
  uint64_t fpos = r->doff + ((uint64_t)r->pgno - r->page0) * k->ps + e.off;   /* in its data file */
  if (fpos % align != 0)
    report(k, page, id, f, "sample %" PRId64 ", field '%s': its stored bytes start at byte %" PRIu64
           " of the data file, not a multiple of the field's alignment %" PRIu64, id, name, fpos, align);
  if (e.off + e.len > r->used) {
    report(k, page, id, f, "sample %" PRId64 ", field '%s': its %" PRIu64 " stored bytes at offset %" PRIu64
           " of the run at page %" PRId64 " end at byte %" PRIu64 ", past the %" PRIu64 " bytes the run uses", id,
           name, e.len, e.off, r->pgno, e.off + e.len, r->used);
    return PAGEDB_OK;
  }
  uint64_t end = fpos + e.len;
  if (end > r->fsize) {
    report(k, page, id, f, "sample %" PRId64 ", field '%s': its %" PRIu64 " stored bytes end at byte %" PRIu64
           " of the data file, which has only %" PRIu64 " bytes", id, name, e.len, end, r->fsize);
    return PAGEDB_OK;
  }
  return have_sum && !k->quick ? gather(k, &e) : PAGEDB_OK;
}

static int sample_row(void *ctx, const CatVal *v, int n) {
  Check *k = ctx;
  (void)n;
  k->nrows++;
  int64_t id = v[0].i;      /* the rowid: always an integer */
  int64_t page = v[1].i, off = v[2].i;
  if (id < 0) report(k, -1, id, -1, "sample %" PRId64 ": a negative id (ids are 0 to 2^63-1)", id);
  if (v[1].type != CAT_INTEGER || page < 0 || (uint64_t)page >= PDB_ADDR_MAX / k->ps) {
    if (v[1].type != CAT_INTEGER)
      report(k, -1, id, -1, "sample %" PRId64 ": its page holds a %s value, not an integer", id, type_name(v[1].type));
    else
      report(k, page < 0 ? -1 : page, id, -1, "sample %" PRId64 ": impossible page number %" PRId64, id, page);
    return PAGEDB_OK;
  }
  /* The rows come by page (those with a page of another type left out
  ** above): every run before PAGE has had all its samples. */
  int rc = PAGEDB_OK;
  while (k->cur < k->nrun && k->runs[k->cur].pgno < page && rc == PAGEDB_OK) rc = finish_run(k, &k->runs[k->cur++]);
  if (rc != PAGEDB_OK) return rc;
  Run *r = k->cur < k->nrun && k->runs[k->cur].pgno == page ? &k->runs[k->cur] : NULL;
  if (r) r->nstart++;
  if (v[2].type != CAT_INTEGER || off < 0 || off >= (int64_t)k->ps) {
    if (v[2].type != CAT_INTEGER)
      report(k, page, id, -1, "sample %" PRId64 ": its offset holds a %s value, not an integer", id,
             type_name(v[2].type));
    else
      report(k, page, id, -1, "sample %" PRId64 ": offset %" PRId64 " is outside a page of %u bytes", id, off, k->ps);
    return PAGEDB_OK;
  }
  if (!r) {
    char where[100];
    describe_page(k, (uint64_t)page, where, sizeof where);
    report(k, page, id, -1, "sample %" PRId64 " lies on page %" PRId64 ", which starts no run (%s)", id, page, where);
  } else if (r->ok && r->used == 0) {
    report(k, page, id, -1, "sample %" PRId64 " lies in the run at page %" PRId64 ", which holds no data (used 0)", id,
           page);
  }
  /* Only a possible run that holds data can place the values. */
  Run *place = r && r->ok && r->used > 0 ? r : NULL;
  if (place && off < PDB_PAGE_HDR)
    report(k, page, id, -1, "sample %" PRId64 ": its record starts at offset %" PRId64 " of the run at page %" PRId64
           ", inside the run's %u-byte header", id, off, page, PDB_PAGE_HDR);
  uint64_t at = (uint64_t)off;
  int layout = 1;
  const CatField *fields = k->db->fields;
  for (int f = 0, col = 3; f < k->db->nfield && rc == PAGEDB_OK; f++) {
    int t = fields[f].type;
    if (cat_type_stored(t)) {
      rc = sample_value(k, place, page, id, f, &v[col], &at, &layout);
      col += 3;
      continue;
    }
    int vt = v[col++].type;
    if (vt != CAT_NULL && vt != CAT_INTEGER && !(t == PAGEDB_REAL && vt == CAT_FLOAT))
      report(k, page, id, f, "sample %" PRId64 ", field '%s': holds a %s value; a%s field holds %s or NULL", id,
             field_name(k, f), type_name(vt), t == PAGEDB_REAL ? " real" : "n int",
             t == PAGEDB_REAL ? "numbers" : "integers");
  }
  if (k->dx) check_index_row(k, v, id, page, off);
  /* A record outside its run, or in no run, is reported already. */
  if (rc != PAGEDB_OK || !layout || at == (uint64_t)off || !place || off < PDB_PAGE_HDR || at > place->used)
    return rc;
  /* Rows arrive by (page, off): in order of their records' first bytes. */
  uint64_t start = (uint64_t)page * k->ps + (uint64_t)off, end = (uint64_t)page * k->ps + at;
  if (start < k->far_end)
    report(k, page, id, -1, "sample %" PRId64 ": its record (data region bytes %" PRIu64 " to %" PRIu64 ") overlaps"
           " that of sample %" PRId64 ", which ends at byte %" PRIu64, id, start, end - 1, k->far_id, k->far_end - 1);
  if (end > k->far_end) {
    k->far_end = end;
    k->far_id = id;
  }
  return PAGEDB_OK;
}

/* --- the whole check ------------------------------------------------------ */

/* A failure to read the catalog: the check stops.  A catalog that SQLite
** finds damaged, or that lost a table, is a problem found, not a failure. */
static int catalog_failed(Check *k, int rc) {
  int primary = rc & 0xff;
  if (primary != PAGEDB_CORRUPT && primary != PAGEDB_NOTADB && primary != PAGEDB_ERROR) return rc;
  report(k, -1, -1, -1, "the catalog cannot be read (the check stops here): %s", pdb_msg_text(&k->m));
  return PAGEDB_OK;
}

static int run_check(Check *k) {
  int rc = pdb_os_size(pager_file(k->pager), &k->fsize);
  if (rc != PAGEDB_OK) return pdb_err(k->db, &k->m, rc, "cannot size %s: %s", k->db->path, pagedb_errstr(rc));
  CatSnap *s;
  rc = cat_snap_open(k->db->cat, &k->m, &s);
  if (rc != PAGEDB_OK) return catalog_failed(k, rc);
  rc = check_header(k);
  if (rc == PAGEDB_OK) {
    rc = check_meta(k, s);
    if (rc == PAGEDB_OK) rc = cat_snap_pages(s, &k->m, page_row, k);
    if (rc == PAGEDB_OK && k->committed >= 0 && (uint64_t)k->committed != k->next)
      report(k, -1, -1, -1, "catalog: meta.committed_pages is %" PRId64 ", but the page table covers pages 0 to %" PRIu64
             " (%" PRIu64 " pages)", k->committed, k->next ? k->next - 1 : 0, k->next);
    /* Table part before the samples: a part's rows by reference are read
    ** only if its row (its seal) is its own (catref.c), so a damaged row
    ** is said here before the samples' read stops on it. */
    if (rc == PAGEDB_OK) rc = check_parts(k, s);
    if (rc == PAGEDB_OK) rc = cat_snap_samples(s, &k->m, k->db->fields, k->db->nfield, sample_row, k);
    while (rc == PAGEDB_OK && k->cur < k->nrun) rc = finish_run(k, &k->runs[k->cur++]);
    if (rc == PAGEDB_OK && k->dx) check_index(k);
    if (rc == PAGEDB_OK && k->nsample >= 0 && (uint64_t)k->nsample != k->nrows)
      report(k, -1, -1, -1, "catalog: meta.samples is %" PRId64 ", but table sample has %" PRIu64 " rows", k->nsample,
             k->nrows);
    if (rc != PAGEDB_OK) rc = catalog_failed(k, rc);
  }
  cat_snap_close(s);
  return rc;
}

int pagedb_check(pagedb *db, int flags, pagedb_check_fn cb, void *ctx, int64_t *nproblems) {
  if (nproblems) *nproblems = 0;
  if (!db) return PAGEDB_MISUSE;
  if (db->failed) return pdb_err(db, NULL, PAGEDB_MISUSE, "the handle's open failed; only close it");
  if (flags & ~PAGEDB_CHECK_QUICK)
    return pdb_err(db, NULL, PAGEDB_MISUSE, "pagedb_check %s: unknown flags 0x%x (PAGEDB_CHECK_QUICK is 0x%x)",
                   db->path, flags, PAGEDB_CHECK_QUICK);
  Check k = {
    .db = db, .pager = db->pager, .quick = (flags & PAGEDB_CHECK_QUICK) != 0, .cb = cb, .ctx = ctx,
    .ps = pager_page_size(db->pager), .doff = pager_data_off(db->pager), .committed = -1, .nsample = -1,
    .part = -1,
  };
  /* Every dictionary in the catalog intact (dict.c checked each at open). */
  for (const PdbDict *d = atomic_load(&db->dicts); d; d = d->next)
    if (d->bad[0])
      report(&k, -1, -1, d->field, "field '%s': dictionary %" PRIu32 " (%zu bytes) is damaged: %s",
             db->fields[d->field].name, d->id, d->n, d->bad);
  int rc = run_check(&k);
  pdb_free(k.runs);
  pdb_free(k.ext);
  pdb_buf_free(k.buf);
  pdb_buf_free(k.zbuf);
  if (rc != PAGEDB_OK) return rc;
  if (k.nproblem > PAGEDB_CHECK_MAX_REPORTS && cb) {
    char what[200];
    snprintf(what, sizeof what, "%lld more problems were found and not reported (only the first %d are)",
             (long long)(k.nproblem - PAGEDB_CHECK_MAX_REPORTS), PAGEDB_CHECK_MAX_REPORTS);
    cb(ctx, -1, -1, -1, what);
  }
  if (nproblems) *nproblems = k.nproblem;
  if (k.nproblem == 0) return PAGEDB_OK;
  return pdb_err(db, NULL, PAGEDB_CORRUPT, "%s: the integrity check found %lld problem%s", db->path,
                 (long long)k.nproblem, k.nproblem == 1 ? "" : "s");
}
