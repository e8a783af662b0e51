/*
** catref.c -- the sample rows of parts committed by reference (doc/format.md,
** "Parts' rows by reference"): an SQLite virtual table, temp.pdb_part_rows,
** that reads them from the parts' own catalogs, so that SQL over a dataset
** of parts sees every sample although the commit copied no sample row.
**
** INVARIANTS
**   1. Nothing of it is in the catalog's file.  The virtual table (and, on
**      pagedb_sql's connection, the views that put the union in the place
**      of sample, extent and sample_info) live in the connection's temp
**      schema, made by catr_ready when the catalog as the connection sees it
**      has feature bit 2 (value 4), and made again when main's schema
**      changed since (a field added changes the columns).
**   2. pdb_part_rows has main.sample's columns, in order.  A part's row is
**      its own with id + id_delta and page + first_page (its window); a
**      column the part lacks (a field added after its commit) is NULL.
**   3. A part's catalog is read only once it is found to be the one
**      committed: its uuid, committed pages and sample count are its row's
**      in table part, and so is its seal (catx_seal: its meta and page
**      table, O(its runs)); else the statement fails, naming the part.  Every
**      row is checked as it is read: an integer id and page, the page one
**      of the part's.  What a row's values hold is checked where pagedb
**      reads them (the open's scan, pagedb_check), as for own rows.
**   4. Deleted part samples are left out by the union (main.part_deleted),
**      not here: this table yields the parts' rows as they lie.
**   5. A cursor holds at most one part catalog open, and keeps it while it
**      is re-filtered on the same part (a join's lookups by id).  When it
**      moves on, the part's connection goes back to its CatRef, which keeps
**      the REF_KEEP last used (least recently used out) for the next
**      statements: a lookup by id that meets a part read a moment ago opens
**      nothing.  Only a filter of one part at most (a lookup by id, a narrow
**      range) gives its part back: a scan of every part would churn the set
**      for nothing, and hold REF_KEEP more descriptors than it needs.  A kept catalog is taken again only while its file is the
**      one opened (device, inode, size, modification time: it is read
**      immutable, so a change under it must not meet its page cache) and
**      the table's columns are those it was mapped for; else it is closed
**      and the part opened, and checked, anew.
** The part catalogs are opened read-only, hardened as the dataset's own, and
** through the dataset's VFS (a part's location is relative to the
** dataset's directory), or through the VFS of the scheme a location names.
*/
#include "catalogInt.h"
#include "os.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Part catalogs a connection keeps open between statements (invariant 5). */
#define REF_KEEP 8

/* A part's catalog open for reading its rows: its connection, the
** statement of its rows, and the map from the table's columns to it. */
typedef struct RefOpen {
  int64_t k, pages, samples, seal;
  char uuid[33];
  char *uri;
  sqlite3 *pconn;
  sqlite3_stmt *st;         /* SELECT * FROM sample WHERE id >= ?1 AND id <= ?2 ORDER BY id */
  int *map;                 /* per column of the table: the column of ST, -1 none */
  int ncol;                 /* the table's columns MAP is for */
  int64_t ver;              /* its CatRef's VER when opened */
  int local;                /* a local file, whose identity is below: it may be kept */
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
} RefOpen;

struct CatRef {
  Catalog *c;
  sqlite3 *conn;
  int views;                /* this connection's users' SQL: sample, extent, sample_info shadowed */
  int64_t ver;              /* main's schema_version when the temp objects were made; -1: none */
  int ncol;
  char **cols;              /* main.sample's columns, for the next xCreate */
  sqlite3_stmt *probe;      /* catr_ready's look at meta.features and the schema version, kept
                            ** prepared: it runs before every statement of pagedb_sql */
  sqlite3_stmt *cand;       /* the candidate parts of a filter (ref_filter), kept prepared */
  RefOpen *keep[REF_KEEP];  /* part catalogs kept open, least recently used first */
  int nkeep;
};

/* A part whose rows the table reads (table part, rows = 1). */
typedef struct RefPart {
  int64_t k, first_page, pages, samples, delta, data_off, seal;
  char uuid[33];
  char *uri;
} RefPart;

typedef struct RefTab {
  sqlite3_vtab base;
  CatRef *r;
  int ncol;
  char **cols;              /* its columns (main.sample's when it was made) */
} RefTab;

typedef struct RefCur {
  sqlite3_vtab_cursor base;
  RefTab *t;
  RefPart *parts;           /* the parts this filter reads, by number */
  size_t nparts, at;        /* parts[at] is the one being read */
  int64_t lo, hi;           /* the ids wanted, in the dataset */
  RefOpen *o;               /* parts[at]'s catalog (or the last one's, kept), NULL: none */
  int keepable;             /* this filter reads one part at most: O goes back to the CatRef */
  int eof;
} RefCur;

static char *str_dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = sqlite3_malloc64(n);
  if (d) memcpy(d, s, n);
  return d;
}

static void free_cols(char **cols, int n) {
  for (int i = 0; i < n; i++) sqlite3_free(cols[i]);
  sqlite3_free(cols);
}

/* --- the virtual table -------------------------------------------------- */

static int ref_connect(sqlite3 *conn, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err) {
  (void)argc, (void)argv, (void)err;
  CatRef *r = aux;
  if (r->ncol < 3) return SQLITE_ERROR;
  RefTab *t = sqlite3_malloc(sizeof *t);
  if (!t) return SQLITE_NOMEM;
  memset(t, 0, sizeof *t);
  sqlite3_str *s = sqlite3_str_new(conn);
  sqlite3_str_appendall(s, "CREATE TABLE x(");
  for (int i = 0; i < r->ncol; i++) sqlite3_str_appendf(s, "%s\"%w\"", i ? ", " : "", r->cols[i]);
  sqlite3_str_appendall(s, ")");
  char *sql = sqlite3_str_finish(s);
  int src = sql ? sqlite3_declare_vtab(conn, sql) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (src == SQLITE_OK) {
    /* Its own copy of the columns: catr_ready may replace R's. */
    t->cols = sqlite3_malloc64((size_t)r->ncol * sizeof *t->cols);
    if (!t->cols) src = SQLITE_NOMEM;
    for (int i = 0; src == SQLITE_OK && i < r->ncol; i++, t->ncol++)
      if (!(t->cols[i] = str_dup(r->cols[i]))) src = SQLITE_NOMEM;
  }
  if (src != SQLITE_OK) {
    free_cols(t->cols, t->ncol);
    sqlite3_free(t);
    return src;
  }
  t->r = r;
  *out = &t->base;
  return SQLITE_OK;
}

/* Not an eponymous table (see catbulk.c). */
static int ref_create(sqlite3 *conn, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err) {
  return ref_connect(conn, aux, argc, argv, out, err);
}

static int ref_disconnect(sqlite3_vtab *v) {
  RefTab *t = (RefTab *)v;
  free_cols(t->cols, t->ncol);
  sqlite3_free(t);
  return SQLITE_OK;
}

/* idxNum: 1 id = ?, 2 a lower bound on id, 4 an upper one (in that order
** in argv); 8 the lower one is strict (>), 16 the upper one (<). */
static int ref_best(sqlite3_vtab *v, sqlite3_index_info *info) {
  (void)v;
  int eq = -1, lo = -1, hi = -1;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (!c->usable || c->iColumn != 0) continue;
    if (c->op == SQLITE_INDEX_CONSTRAINT_EQ) eq = i;
    else if (c->op == SQLITE_INDEX_CONSTRAINT_GT || c->op == SQLITE_INDEX_CONSTRAINT_GE) lo = i;
    else if (c->op == SQLITE_INDEX_CONSTRAINT_LT || c->op == SQLITE_INDEX_CONSTRAINT_LE) hi = i;
  }
  int strict = 0;
  if (lo >= 0 && info->aConstraint[lo].op == SQLITE_INDEX_CONSTRAINT_GT) strict |= 8;
  if (hi >= 0 && info->aConstraint[hi].op == SQLITE_INDEX_CONSTRAINT_LT) strict |= 16;
  /* SQLite checks every constraint again (omit stays 0): the bounds only
  ** narrow what is read. */
  int n = 0;
  info->idxNum = 0;
  if (eq >= 0) {
    info->idxNum = 1;
    info->aConstraintUsage[eq].argvIndex = ++n;
    info->estimatedCost = 20;
    info->estimatedRows = 1;
    return SQLITE_OK;
  }
  info->idxNum = strict;
  if (lo >= 0) {
    info->idxNum |= 2;
    info->aConstraintUsage[lo].argvIndex = ++n;
  }
  if (hi >= 0) {
    info->idxNum |= 4;
    info->aConstraintUsage[hi].argvIndex = ++n;
  }
  info->estimatedCost = n ? 1e5 : 1e7;
  info->estimatedRows = n ? 10000 : 1000000;
  return SQLITE_OK;
}

static int ref_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out) {
  RefCur *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->t = (RefTab *)v;
  *out = &c->base;
  return SQLITE_OK;
}

static void free_parts(RefCur *c) {
  for (size_t i = 0; i < c->nparts; i++) sqlite3_free(c->parts[i].uri);
  sqlite3_free(c->parts);
  c->parts = NULL;
  c->nparts = c->at = 0;
}

static void open_free(RefOpen *o) {
  if (!o) return;
  sqlite3_finalize(o->st);
  sqlite3_close(o->pconn);
  sqlite3_free(o->map);
  sqlite3_free(o->uri);
  sqlite3_free(o);
}

/* The catalogs R keeps, closed. */
static void keep_flush(CatRef *r) {
  for (int i = 0; i < r->nkeep; i++) open_free(r->keep[i]);
  r->nkeep = 0;
}

/* O (the cursor is done with it) kept by R as its most recently used, the
** least recently used closed when R keeps REF_KEEP already; or closed, if
** it may not be kept. */
static void keep_put(CatRef *r, RefOpen *o) {
  if (!o) return;
  if (!o->local || o->ver != r->ver) {
    open_free(o);
    return;
  }
  sqlite3_reset(o->st);   /* no read transaction left open on the part */
  if (r->nkeep == REF_KEEP) {
    open_free(r->keep[0]);
    memmove(r->keep, r->keep + 1, (REF_KEEP - 1) * sizeof *r->keep);
    r->nkeep--;
  }
  r->keep[r->nkeep++] = o;
}

/* Whether the file at PATH is still the one O opened. */
static int same_file(const RefOpen *o, const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && st.st_dev == o->dev && st.st_ino == o->ino && st.st_size == o->size
      && st.st_mtim.tv_sec == o->mtime.tv_sec && st.st_mtim.tv_nsec == o->mtime.tv_nsec;
}

/* Part P's catalog at PATH if R keeps it open, unchanged, for NCOL columns
** (taken out of R), else NULL (a kept one that changed is closed). */
static RefOpen *keep_take(CatRef *r, const RefPart *p, const char *path, int ncol) {
  for (int i = r->nkeep; i-- > 0;) {
    RefOpen *o = r->keep[i];
    if (o->k != p->k || o->pages != p->pages || o->samples != p->samples || o->seal != p->seal
        || strcmp(o->uuid, p->uuid) != 0
        || strcmp(o->uri, p->uri) != 0)
      continue;
    memmove(r->keep + i, r->keep + i + 1, (size_t)(r->nkeep - i - 1) * sizeof *r->keep);
    r->nkeep--;
    if (o->ver == r->ver && o->ncol == ncol && same_file(o, path)) return o;
    open_free(o);
    return NULL;
  }
  return NULL;
}

static void close_part(RefCur *c) {
  if (c->keepable) keep_put(c->t->r, c->o);
  else open_free(c->o);
  c->o = NULL;
}

static int ref_close(sqlite3_vtab_cursor *cur) {
  RefCur *c = (RefCur *)cur;
  close_part(c);
  free_parts(c);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* Fail the statement with CODE and a message naming part P. */
static int part_fail(RefCur *c, const RefPart *p, int code, const char *fmt, const char *detail) {
  char what[512];
  snprintf(what, sizeof what, fmt, detail);
  sqlite3_free(c->t->base.zErrMsg);
  c->t->base.zErrMsg = sqlite3_mprintf("part %lld (%s): %s", (long long)p->k, p->uri, what);
  return code;
}

/* Where part P's catalog is: its location, relative to the directory of
** the dataset's catalog unless absolute or a URL, and "-catalog". */
static char *part_catalog_path(CatRef *r, const RefPart *p) {
  const char *cp = catx_path(r->c), *slash = strrchr(cp, '/');
  if (p->uri[0] == '/' || pdb_path_scheme(p->uri, NULL, 0) || !slash) return sqlite3_mprintf("%s-catalog", p->uri);
  return sqlite3_mprintf("%.*s/%s-catalog", (int)(slash - cp), cp, p->uri);
}

/* --- the seal ------------------------------------------------------------ */

typedef struct SealBuf {
  uint64_t *w;
  size_t n, cap;
} SealBuf;

static int seal_word(SealBuf *s, uint64_t v) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    uint64_t *w = sqlite3_realloc64(s->w, cap * sizeof *w);
    if (!w) return SQLITE_NOMEM;
    s->w = w;
    s->cap = cap;
  }
  s->w[s->n++] = v;
  return SQLITE_OK;
}

int catx_seal(sqlite3 *conn, const uint8_t uuid[16], uint64_t ps, uint64_t d, uint64_t *seal) {
  SealBuf s = { 0 };
  int src = seal_word(&s, pdb_get64((const uint8_t *)"PDBSEAL1"));
  if (src == SQLITE_OK) src = seal_word(&s, pdb_get64(uuid));
  if (src == SQLITE_OK) src = seal_word(&s, pdb_get64(uuid + 8));
  if (src == SQLITE_OK) src = seal_word(&s, ps);
  if (src == SQLITE_OK) src = seal_word(&s, d);
  sqlite3_stmt *st = NULL;
  if (src == SQLITE_OK)
    src = sqlite3_prepare_v2(conn, "SELECT (SELECT value FROM meta WHERE key = 'committed_pages'), (SELECT value"
                             " FROM meta WHERE key = 'samples'), (SELECT value FROM meta WHERE key = 'deleted_bytes'),"
                             " (SELECT value FROM meta WHERE key = 'index_id'), (SELECT value FROM meta WHERE key ="
                             " 'index_dir')", -1, &st, NULL);
  if (src == SQLITE_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
    src = SQLITE_OK;
    for (int i = 0; i < 5 && src == SQLITE_OK; i++)
      src = seal_word(&s, sqlite3_column_type(st, i) == SQLITE_INTEGER ? (uint64_t)sqlite3_column_int64(st, i) : 0);
  }
  sqlite3_finalize(st);
  st = NULL;
  if (src == SQLITE_OK)
    src = sqlite3_prepare_v2(conn, "SELECT pgno, npages, used, nsamples FROM page ORDER BY pgno", -1, &st, NULL);
  while (src == SQLITE_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
    src = SQLITE_OK;
    for (int i = 0; i < 4 && src == SQLITE_OK; i++) src = seal_word(&s, (uint64_t)sqlite3_column_int64(st, i));
  }
  if (src == SQLITE_DONE) src = SQLITE_OK;
  sqlite3_finalize(st);
  if (src == SQLITE_OK) *seal = pdb_sum(s.w, s.n * sizeof *s.w);
  sqlite3_free(s.w);
  return src;
}

/* --- a part's catalog ------------------------------------------------------- */

/* Part P's meta as its row in table part must match: its uuid (into
** UUID, CAP bytes), committed pages, samples and page size (-1 when
** absent). */
static int part_meta(sqlite3 *pc, char *uuid, size_t cap, int64_t *pages, int64_t *samples, int64_t *ps) {
  sqlite3_stmt *st;
  *pages = *samples = *ps = -1;
  uuid[0] = 0;
  int src = sqlite3_prepare_v2(pc, "SELECT (SELECT value FROM meta WHERE key = 'uuid'), (SELECT value FROM meta"
                               " WHERE key = 'committed_pages'), (SELECT value FROM meta WHERE key = 'samples'),"
                               " (SELECT value FROM meta WHERE key = 'page_size')", -1, &st, NULL);
  if (src != SQLITE_OK) return src;
  src = sqlite3_step(st);
  if (src == SQLITE_ROW) {
    if (sqlite3_column_type(st, 0) == SQLITE_TEXT) snprintf(uuid, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    if (sqlite3_column_type(st, 1) == SQLITE_INTEGER) *pages = sqlite3_column_int64(st, 1);
    if (sqlite3_column_type(st, 2) == SQLITE_INTEGER) *samples = sqlite3_column_int64(st, 2);
    if (sqlite3_column_type(st, 3) == SQLITE_INTEGER) *ps = sqlite3_column_int64(st, 3);
    src = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return src;
}

/* Part P's catalog at PATH (through VFS) opened into a new *OUT (invariant
** 3), its rows' statement prepared and the table's columns mapped to it. */
static int open_new(RefCur *c, const RefPart *p, const char *path, pagedb_vfs *vfs, RefOpen **out) {
  CatRef *r = c->t->r;
  *out = NULL;
  RefOpen *o = sqlite3_malloc(sizeof *o);
  if (!o) return SQLITE_NOMEM;
  memset(o, 0, sizeof *o);
  o->k = p->k;
  o->pages = p->pages;
  o->samples = p->samples;
  o->seal = p->seal;
  memcpy(o->uuid, p->uuid, sizeof o->uuid);
  o->ver = r->ver;
  o->ncol = c->t->ncol;
  if (!(o->uri = str_dup(p->uri))) {
    open_free(o);
    return SQLITE_NOMEM;
  }
  /* Its identity before it is opened: a file replaced meanwhile then
  ** differs at the next take, and is opened again. */
  struct stat sb;
  if (!pdb_path_scheme(path, NULL, 0) && stat(path, &sb) == 0) {
    o->local = 1;
    o->dev = sb.st_dev;
    o->ino = sb.st_ino;
    o->size = sb.st_size;
    o->mtime = sb.st_mtim;
  }
  /* Immutable (invariant 3: a part does not change after its commit): read
  ** with no lock and no -shm or -wal made beside it, so a part's directory
  ** may be read-only and is left as it was.  A catalog whose last commit
  ** still sat in a WAL would show its older meta, and be refused below.
  ** (Read-only: no statement can write through it.) */
  sqlite3_str *us = sqlite3_str_new(NULL);
  sqlite3_str_appendall(us, "file:");
  for (const char *q = path; *q; q++) {
    if (*q == '?' || *q == '#' || *q == '%') sqlite3_str_appendf(us, "%%%02X", (unsigned char)*q);
    else sqlite3_str_appendchar(us, 1, *q);
  }
  sqlite3_str_appendall(us, "?immutable=1");
  char *uri = sqlite3_str_finish(us);
  if (!uri) {
    open_free(o);
    return SQLITE_NOMEM;
  }
  int src = sqlite3_open_v2(uri, &o->pconn, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                            catvfs_name(vfs));
  sqlite3_free(uri);
  if (src == SQLITE_OK) src = catx_harden_conn(o->pconn);
  char uuid[64];
  int64_t pages = -1, samples = -1, ps = -1;
  uint64_t seal = 0;
  uint8_t u[16];
  /* (Immutable: no lock is taken, so no transaction would make these
  ** statements one state; a part must not change after its commit, and one
  ** changed meanwhile is caught by its seal or at its next take.) */
  if (src == SQLITE_OK) src = part_meta(o->pconn, uuid, sizeof uuid, &pages, &samples, &ps);
  if (src == SQLITE_OK && strcmp(uuid, p->uuid) == 0 && pdb_uuid_parse(uuid, u) && ps > 0)
    src = catx_seal(o->pconn, u, (uint64_t)ps, (uint64_t)p->data_off, &seal);
  if (src != SQLITE_OK) {
    int rc = part_fail(c, p, src == SQLITE_NOMEM ? SQLITE_NOMEM : SQLITE_CANTOPEN, "cannot read its catalog (%s)",
                       o->pconn ? sqlite3_errmsg(o->pconn) : sqlite3_errstr(src));
    open_free(o);
    return rc;
  }
  /* Its seal (O(its runs)) catches what the counts do not: a value changed
  ** in place through pagedb (pagedb_sql_update records the index anew, at
  ** another index_dir), a run rewritten, a deletion and an append that
  ** leave the count as it was. */
  if (strcmp(uuid, p->uuid) != 0 || pages != p->pages || samples != p->samples || (int64_t)seal != p->seal) {
    char what[240];
    snprintf(what, sizeof what, "uuid %.32s, %lld pages, %lld samples, seal %016llx, not the %lld pages, %lld"
             " samples and seal %016llx committed", uuid, (long long)pages, (long long)samples,
             (unsigned long long)seal, (long long)p->pages, (long long)p->samples, (unsigned long long)p->seal);
    open_free(o);
    return part_fail(c, p, SQLITE_CORRUPT, "its catalog changed since it was committed (%s): its rows cannot be"
                     " read by reference", what);
  }
  src = sqlite3_prepare_v2(o->pconn, "SELECT * FROM sample WHERE id >= ?1 AND id <= ?2 ORDER BY id", -1, &o->st, NULL);
  if (src != SQLITE_OK) {
    int rc = part_fail(c, p, src == SQLITE_NOMEM ? SQLITE_NOMEM : SQLITE_CORRUPT, "cannot read its rows (%s)",
                       sqlite3_errmsg(o->pconn));
    open_free(o);
    return rc;
  }
  /* Its columns, by name: the part has the dataset's fields as of its commit. */
  int n = c->t->ncol, pn = sqlite3_column_count(o->st);
  if (!(o->map = sqlite3_malloc64((size_t)n * sizeof *o->map))) {
    open_free(o);
    return SQLITE_NOMEM;
  }
  for (int i = 0; i < n; i++) {
    o->map[i] = -1;
    for (int j = 0; j < pn; j++) {
      const char *name = sqlite3_column_name(o->st, j);
      if (name && sqlite3_stricmp(name, c->t->cols[i]) == 0) {
        o->map[i] = j;
        break;
      }
    }
  }
  if (o->map[0] != 0 || o->map[1] != 1 || o->map[2] != 2) {
    open_free(o);
    return part_fail(c, p, SQLITE_CORRUPT, "%s", "its table sample lacks columns id, page, off");
  }
  *out = o;
  return SQLITE_OK;
}

/* Part P's catalog into C: the one its CatRef keeps, else opened. */
static int open_part(RefCur *c, const RefPart *p) {
  CatRef *r = c->t->r;
  close_part(c);
  char *path = part_catalog_path(r, p);
  if (!path) return SQLITE_NOMEM;
  pagedb_vfs *vfs = catx_vfs(r->c);
  char why[256];
  int src = SQLITE_OK;
  if (pdb_path_scheme(path, NULL, 0) && pdb_vfs_choose(path, NULL, 0, &vfs, why, sizeof why) != PAGEDB_OK)
    src = part_fail(c, p, SQLITE_CANTOPEN, "its catalog: %s", why);
  if (src == SQLITE_OK && !(c->o = keep_take(r, p, path, c->t->ncol))) src = open_new(c, p, path, vfs, &c->o);
  sqlite3_free(path);
  return src;
}

/* A - B, or the end of int64_t's range it overflows towards. */
static int64_t sub_sat(int64_t a, int64_t b) {
  int64_t d;
  if (__builtin_sub_overflow(a, b, &d)) return b < 0 ? INT64_MAX : INT64_MIN;
  return d;
}

/* Step to the next row: the current part's, else the next parts'. */
static int advance(RefCur *c) {
  for (;;) {
    if (c->o) {
      sqlite3_stmt *st = c->o->st;
      int src = sqlite3_step(st);
      if (src == SQLITE_ROW) {
        const RefPart *p = &c->parts[c->at];
        int64_t pg = sqlite3_column_int64(st, 1);
        if (sqlite3_column_type(st, 0) != SQLITE_INTEGER || sqlite3_column_type(st, 1) != SQLITE_INTEGER
            || pg < 0 || pg >= p->pages) {
          char id[32];
          snprintf(id, sizeof id, "%lld", (long long)sqlite3_column_int64(st, 0));
          return part_fail(c, p, SQLITE_CORRUPT, "sample %s of its catalog has no page of the part", id);
        }
        return SQLITE_OK;
      }
      if (src != SQLITE_DONE)
        return part_fail(c, &c->parts[c->at], src, "reading its rows (%s)", sqlite3_errmsg(c->o->pconn));
      sqlite3_reset(st);
      c->at++;
    }
    if (c->at >= c->nparts) {
      c->eof = 1;
      return SQLITE_OK;
    }
    const RefPart *p = &c->parts[c->at];
    if (!c->o || c->o->k != p->k) {
      int src = open_part(c, p);
      if (src != SQLITE_OK) return src;
    }
    sqlite3_bind_int64(c->o->st, 1, sub_sat(c->lo, p->delta));
    sqlite3_bind_int64(c->o->st, 2, sub_sat(c->hi, p->delta));
  }
}

static int by_part(const void *a, const void *b) {
  int64_t x = ((const RefPart *)a)->k, y = ((const RefPart *)b)->k;
  return x < y ? -1 : x > y;
}

/* The bound an id constraint's value V gives (LOWER: a lower one); 0 when
** V is no integer, and the bound is left out (SQLite checks it). */
static int id_bound(sqlite3_value *v, int64_t *out) {
  if (sqlite3_value_type(v) != SQLITE_INTEGER) return 0;
  *out = sqlite3_value_int64(v);
  return 1;
}

static int ref_filter(sqlite3_vtab_cursor *cur, int idx, const char *str, int argc, sqlite3_value **argv) {
  (void)str;
  RefCur *c = (RefCur *)cur;
  sqlite3 *conn = c->t->r->conn;
  free_parts(c);
  if (c->o) sqlite3_reset(c->o->st);
  c->eof = 0;
  c->lo = 0;
  c->hi = INT64_MAX;
  int a = 0;
  int64_t v;
  if ((idx & 1) && a < argc && id_bound(argv[a++], &v)) c->lo = c->hi = v;
  if ((idx & 2) && a < argc && id_bound(argv[a++], &v)) {
    if ((idx & 8) && v == INT64_MAX) c->eof = 1;
    c->lo = idx & 8 ? v + !c->eof : v;
  }
  if ((idx & 4) && a < argc && id_bound(argv[a++], &v)) {
    if ((idx & 16) && v == INT64_MIN) c->eof = 1;
    c->hi = idx & 16 ? v - !c->eof : v;
  }
  if (c->eof || c->lo > c->hi) {
    c->eof = 1;
    return SQLITE_OK;
  }
  /* The parts whose ids may hold the ones wanted, read in this statement's
  ** own snapshot (the same connection).  A part holding an id from LO on
  ** has id_min >= LO - meta.part_id_span (the widest part, which every
  ** commit of parts keeps: cat_part_span), a range of the index on
  ** id_min: a lookup by id reads the parts near it, not table part whole.
  ** Without the key (parts committed before it) every part is a candidate.
  ** (?3, LO at least 0 as every id is, minus a span of at most INT64_MAX
  ** cannot overflow.) */
  CatRef *r = c->t->r;
  int src = SQLITE_OK;
  if (!r->cand)
    src = sqlite3_prepare_v3(conn, "SELECT part, uuid, uri, first_page, pages, samples, id_delta, data_off, seal"
                             " FROM main.part"
                             " WHERE rows = 1 AND id_min BETWEEN ?3 - coalesce((SELECT value FROM main.meta"
                             " WHERE key = 'part_id_span' AND typeof(value) = 'integer' AND value >= 0),"
                             " 9223372036854775807) AND ?2 AND id_max >= ?1", -1, SQLITE_PREPARE_PERSISTENT,
                             &r->cand, NULL);
  sqlite3_stmt *st = r->cand;
  if (src != SQLITE_OK) {
    sqlite3_free(c->t->base.zErrMsg);
    c->t->base.zErrMsg = sqlite3_mprintf("cannot read table part (%s)", sqlite3_errmsg(conn));
    return src;
  }
  sqlite3_bind_int64(st, 1, c->lo);
  sqlite3_bind_int64(st, 2, c->hi);
  sqlite3_bind_int64(st, 3, c->lo > 0 ? c->lo : 0);
  size_t cap = 0;
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    for (int i = 0; i < 9; i++)
      if (sqlite3_column_type(st, i) != (i == 1 || i == 2 ? SQLITE_TEXT : SQLITE_INTEGER)) src = SQLITE_CORRUPT;
    if (src == SQLITE_CORRUPT) break;
    if (c->nparts == cap) {
      cap = cap ? 2 * cap : 16;
      RefPart *np = sqlite3_realloc64(c->parts, cap * sizeof *np);
      if (!np) {
        src = SQLITE_NOMEM;
        break;
      }
      c->parts = np;
    }
    RefPart *p = &c->parts[c->nparts];
    memset(p, 0, sizeof *p);
    p->k = sqlite3_column_int64(st, 0);
    snprintf(p->uuid, sizeof p->uuid, "%s", (const char *)sqlite3_column_text(st, 1));
    p->first_page = sqlite3_column_int64(st, 3);
    p->pages = sqlite3_column_int64(st, 4);
    p->samples = sqlite3_column_int64(st, 5);
    p->delta = sqlite3_column_int64(st, 6);
    p->data_off = sqlite3_column_int64(st, 7);
    p->seal = sqlite3_column_int64(st, 8);
    if (!(p->uri = str_dup((const char *)sqlite3_column_text(st, 2)))) {
      src = SQLITE_NOMEM;
      break;
    }
    c->nparts++;
  }
  if (src != SQLITE_DONE) {
    sqlite3_free(c->t->base.zErrMsg);
    c->t->base.zErrMsg = src == SQLITE_CORRUPT ? sqlite3_mprintf("table part has a row of the wrong types")
                       : src == SQLITE_NOMEM ? sqlite3_mprintf("out of memory listing the parts")
                       : sqlite3_mprintf("cannot read table part (%s)", sqlite3_errmsg(conn));
  }
  sqlite3_reset(st);   /* kept for the next filter, of this cursor or another */
  if (src != SQLITE_DONE) return src;
  /* Part by part, as the rows come without ORDER BY (doc/format.md). */
  if (c->nparts > 1) qsort(c->parts, c->nparts, sizeof *c->parts, by_part);
  c->keepable = c->nparts <= 1;
  c->at = 0;
  if (c->o && (c->nparts == 0 || c->parts[0].k != c->o->k)) close_part(c);
  if (c->o) {
    sqlite3_bind_int64(c->o->st, 1, sub_sat(c->lo, c->parts[0].delta));
    sqlite3_bind_int64(c->o->st, 2, sub_sat(c->hi, c->parts[0].delta));
  }
  return advance(c);
}

static int ref_next(sqlite3_vtab_cursor *cur) { return advance((RefCur *)cur); }

static int ref_eof(sqlite3_vtab_cursor *cur) { return ((RefCur *)cur)->eof; }

static int ref_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  RefCur *c = (RefCur *)cur;
  const RefPart *p = &c->parts[c->at];
  sqlite3_stmt *st = c->o->st;
  if (col == 0) {
    sqlite3_result_int64(ctx, sqlite3_column_int64(st, 0) + p->delta);
  } else if (col == 1) {
    sqlite3_result_int64(ctx, sqlite3_column_int64(st, 1) + p->first_page);
  } else if (col < c->t->ncol && c->o->map[col] >= 0) {
    sqlite3_result_value(ctx, sqlite3_column_value(st, c->o->map[col]));
  }
  return SQLITE_OK;
}

static int ref_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  RefCur *c = (RefCur *)cur;
  *rowid = sqlite3_column_int64(c->o->st, 0) + c->parts[c->at].delta;
  return SQLITE_OK;
}

static const sqlite3_module kRef = {
  .iVersion = 0,
  .xCreate = ref_create,
  .xConnect = ref_connect,
  .xDestroy = ref_disconnect,
  .xBestIndex = ref_best,
  .xDisconnect = ref_disconnect,
  .xOpen = ref_open,
  .xClose = ref_close,
  .xFilter = ref_filter,
  .xNext = ref_next,
  .xEof = ref_eof,
  .xColumn = ref_column,
  .xRowid = ref_rowid,
};

/* --- the connection's temp objects --------------------------------------- */

static void ref_free(void *p) {
  CatRef *r = p;
  if (!r) return;
  keep_flush(r);
  free_cols(r->cols, r->ncol);
  sqlite3_free(r);
}

int catr_attach(Catalog *c, sqlite3 *conn, int views, CatRef **out) {
  *out = NULL;
  CatRef *r = sqlite3_malloc(sizeof *r);
  if (!r) return SQLITE_NOMEM;
  memset(r, 0, sizeof *r);
  r->c = c;
  r->conn = conn;
  r->views = views;
  r->ver = -1;
  /* The module owns R: freed when CONN closes. */
  int src = sqlite3_create_module_v2(conn, "pdb_part_rows", &kRef, r, ref_free);
  if (src == SQLITE_OK) *out = r;
  return src;
}

/* main.sample's columns into R. */
static int read_cols(CatRef *r) {
  sqlite3_stmt *st;
  int src = sqlite3_prepare_v2(r->conn, "SELECT name FROM pragma_table_info('sample', 'main') ORDER BY cid", -1, &st,
                               NULL);
  if (src != SQLITE_OK) return src;
  free_cols(r->cols, r->ncol);
  r->cols = NULL;
  r->ncol = 0;
  int cap = 0;
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    if (r->ncol == cap) {
      cap = cap ? 2 * cap : 16;
      char **nc = sqlite3_realloc64(r->cols, (size_t)cap * sizeof *nc);
      if (!nc) {
        src = SQLITE_NOMEM;
        break;
      }
      r->cols = nc;
    }
    const char *name = (const char *)sqlite3_column_text(st, 0);
    if (!name || !(r->cols[r->ncol] = str_dup(name))) {
      src = SQLITE_NOMEM;
      break;
    }
    r->ncol++;
  }
  sqlite3_finalize(st);
  return src == SQLITE_DONE ? SQLITE_OK : src;
}

/* The views of pagedb_sql's connection: sample the union, extent and
** sample_info main's own text made temporary (their unqualified "sample"
** then names temp.sample: SQLite looks in temp first). */
static int make_views(CatRef *r) {
  int src = sqlite3_exec(r->conn, "CREATE TEMP VIEW sample AS SELECT * FROM main.sample UNION ALL SELECT * FROM"
                         " temp.pdb_part_rows WHERE id NOT IN (SELECT id FROM main.part_deleted)", NULL, NULL, NULL);
  sqlite3_stmt *st = NULL;
  if (src == SQLITE_OK)
    src = sqlite3_prepare_v2(r->conn, "SELECT sql FROM main.sqlite_schema WHERE type = 'view' AND name IN ('extent',"
                             " 'sample_info')", -1, &st, NULL);
  while (src == SQLITE_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
    const char *text = (const char *)sqlite3_column_text(st, 0);
    /* cat_load checked that they are the views pagedb makes. */
    if (!text || sqlite3_strnicmp(text, "CREATE VIEW ", 12) != 0) {
      src = SQLITE_CORRUPT;
      break;
    }
    char *sql = sqlite3_mprintf("CREATE TEMP VIEW %s", text + 12);
    src = sql ? sqlite3_exec(r->conn, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
  }
  sqlite3_finalize(st);
  return src == SQLITE_DONE ? SQLITE_OK : src;
}

int catr_views(CatRef *r, pdb_msg *m, int on) {
  int src = sqlite3_exec(r->conn, "DROP VIEW IF EXISTS temp.sample; DROP VIEW IF EXISTS temp.extent;"
                         " DROP VIEW IF EXISTS temp.sample_info", NULL, NULL, NULL);
  if (src == SQLITE_OK && on) src = make_views(r);
  return src == SQLITE_OK ? PAGEDB_OK
                          : catx_fail(r->c, m, r->conn, src, on ? "making the views of the parts' rows" : "dropping the views of the parts' rows");
}

void catr_detach(CatRef *r) {
  if (!r) return;
  sqlite3_finalize(r->probe);
  r->probe = NULL;
  sqlite3_finalize(r->cand);
  r->cand = NULL;
  keep_flush(r);
}

int catr_ready(CatRef *r, pdb_msg *m, int *on) {
  Catalog *c = r->c;
  *on = 0;
  int64_t features = 0, ver = -1;
  int src = SQLITE_OK;
  if (!r->probe)
    src = sqlite3_prepare_v3(r->conn, "SELECT (SELECT value FROM main.meta WHERE key = 'features'),"
                             " (SELECT schema_version FROM pragma_schema_version)", -1, SQLITE_PREPARE_PERSISTENT,
                             &r->probe, NULL);
  if (src == SQLITE_OK && (src = sqlite3_step(r->probe)) == SQLITE_ROW) {
    features = sqlite3_column_int64(r->probe, 0);
    ver = sqlite3_column_int64(r->probe, 1);
    src = SQLITE_OK;
  }
  if (r->probe) sqlite3_reset(r->probe);   /* no read left open by it */
  if (src != SQLITE_OK) return catx_fail(c, m, r->conn, src, "reading meta");
  if (!(features & CAT_FEATURE_PARTROWS)) return PAGEDB_OK;
  *on = 1;
  /* Made for this schema and still there (a rolled-back transaction
  ** takes temp objects made in it away). */
  if (r->ver == ver && sqlite3_table_column_metadata(r->conn, "temp", "pdb_part_rows", "id", NULL, NULL, NULL, NULL,
                                                     NULL) == SQLITE_OK)
    return PAGEDB_OK;
  /* A query_only connection (pagedb_sql's, a snapshot's) may not change
  ** even its temp schema: lifted for the moment. */
  int qo = 0;
  sqlite3_stmt *st = NULL;
  src = sqlite3_prepare_v2(r->conn, "PRAGMA query_only", -1, &st, NULL);
  if (src == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) qo = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  /* The kept part catalogs were mapped for the columns before. */
  keep_flush(r);
  if (src == SQLITE_OK) src = read_cols(r);
  if (src == SQLITE_OK && qo) src = sqlite3_exec(r->conn, "PRAGMA query_only=0", NULL, NULL, NULL);
  if (src == SQLITE_OK)
    src = sqlite3_exec(r->conn, "DROP VIEW IF EXISTS temp.sample; DROP VIEW IF EXISTS temp.extent;"
                       " DROP VIEW IF EXISTS temp.sample_info; DROP TABLE IF EXISTS temp.pdb_part_rows;"
                       " CREATE VIRTUAL TABLE temp.pdb_part_rows USING pdb_part_rows", NULL, NULL, NULL);
  if (src == SQLITE_OK && r->views) src = make_views(r);
  if (qo) sqlite3_exec(r->conn, "PRAGMA query_only=1", NULL, NULL, NULL);
  if (src != SQLITE_OK) return catx_fail(c, m, r->conn, src, "making the view of the parts' rows");
  r->ver = ver;
  return PAGEDB_OK;
}
