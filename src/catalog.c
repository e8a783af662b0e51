/*
** catalog.c -- the catalog: a plain SQLite database, PATH-catalog.
**
** One connection writes (the dataset has one writer process); it keeps one
** long transaction open while runs enter the written prefix, inserting
** their rows as they come so the cost of the inserts overlaps the page
** writes, and commits it only after the data file is synced (pagedb_commit).
** Until then no other connection can see any of it (WAL mode).  A second,
** read-only connection serves pagedb_sql(), so user queries never see the
** uncommitted rows of the open transaction.
**
** Everything read from the catalog is untrusted: types are checked here,
** offsets by the caller against the page table and the file.
**
** The module's other files, through catalogInt.h: catsql.c (the SQL users
** run: pagedb_sql, pagedb_sql_update), catpart.c (table part), catextra.c
** (view sample_info, user tables), catbulk.c (the rows' virtual table),
** catref.c (the rows of parts committed by reference, through the parts'
** own catalogs);
** catfile.c reads and changes a catalog by its path, without a Catalog.
*/
#include "catalog.h"
#include "catalogInt.h"
#include "codec.h"
#include "dindex.h"     /* dx_part_of: the part a page of a window is */
#include "index.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

struct Catalog {
  pagedb *db;
  pagedb_vfs *vfs;          /* the dataset's: the catalog's I/O goes through it */
  char *path;
  sqlite3 *w;               /* the connection (read-write or read-only) */
  sqlite3 *r;               /* read-only connection for pagedb_sql */
  pthread_mutex_t rmu;      /* serialises r */
  int in_txn;               /* the long write transaction is open */
  int has_align;            /* table field has column align (else every alignment is 1) */
  int has_parts;            /* meta.features has the parts bit: table part is pagedb's */
  int sealed;               /* cat_sealed: leave the catalog in rollback mode at the close */
  CatRef *wref, *rref;      /* the part rows' virtual table on W and R (catref.c) */
  sqlite3_stmt *ins_sample;  /* INSERT INTO sample ... SELECT ... FROM pdb_rows */
  sqlite3_stmt *ins_page;
  CatRows rows;             /* what pdb_rows yields (catbulk.c) */
};

/* The extent view of a dataset without fields; view_sql makes the others. */
#define NO_FIELDS_VIEW \
  "CREATE VIEW extent(id, field, name, page, off, len) AS SELECT NULL, NULL, NULL, NULL, NULL, NULL WHERE 0"

static const char *kSchema =
  "CREATE TABLE meta(key TEXT PRIMARY KEY, value NOT NULL) WITHOUT ROWID;"
  "CREATE TABLE field(idx INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE,"
  " type TEXT NOT NULL, codec TEXT NOT NULL, align INTEGER NOT NULL DEFAULT 1);"
  "CREATE TABLE page(pgno INTEGER PRIMARY KEY, npages INTEGER NOT NULL,"
  " used INTEGER NOT NULL, nsamples INTEGER NOT NULL);"
  "CREATE TABLE sample(id INTEGER PRIMARY KEY, page INTEGER NOT NULL, off INTEGER NOT NULL);"
  NO_FIELDS_VIEW ";";

static const char *kTypeNames[] = { [PAGEDB_BYTES] = "bytes", [PAGEDB_TEXT] = "text",
                                     [PAGEDB_INT] = "int", [PAGEDB_REAL] = "real" };

static int is_bytes(int type) { return cat_type_stored(type); }

/* Map a SQLite result to a pagedb code and record the message. */
static int sq_fail(Catalog *c, pdb_msg *m, sqlite3 *conn, int src, const char *doing) {
  int rc;
  switch (src & 0xff) {
    case SQLITE_NOMEM: rc = PAGEDB_NOMEM; break;
    case SQLITE_FULL: rc = PAGEDB_FULL; break;
    case SQLITE_IOERR: {
      /* A failed sync leaves the catalog in doubt (see catvfs.c). */
      int ext = conn ? sqlite3_extended_errcode(conn) : src;
      rc = ext == SQLITE_IOERR_FSYNC || ext == SQLITE_IOERR_DIR_FSYNC ? PAGEDB_IOERR_SYNC : PAGEDB_IOERR_CATALOG;
      break;
    }
    case SQLITE_CORRUPT: rc = PAGEDB_CORRUPT_CATALOG; break;
    case SQLITE_NOTADB: rc = PAGEDB_NOTADB; break;
    case SQLITE_BUSY: case SQLITE_LOCKED: rc = PAGEDB_BUSY; break;
    case SQLITE_READONLY: rc = PAGEDB_READONLY; break;
    case SQLITE_CANTOPEN: rc = PAGEDB_CANTOPEN; break;
    default: rc = PAGEDB_ERROR; break;
  }
  const char *why = conn ? sqlite3_errmsg(conn) : sqlite3_errstr(src);
  /* A catalog in WAL mode never has a rollback journal; a sealed part's
  ** has one only while its close switches it to rollback mode (cat_sealed):
  ** a writer stopped then leaves it hot, and SQLite must replay it before
  ** anyone may read. */
  if (conn && sqlite3_extended_errcode(conn) == SQLITE_READONLY_ROLLBACK)
    return pdb_err(c->db, m, PAGEDB_CANTOPEN, "catalog %s has a hot rollback journal (%s-journal) that a read-only"
                   " connection cannot replay: a read-write open replays it", c->path, c->path);
  if (rc == PAGEDB_NOTADB)
    return pdb_err(c->db, m, rc, "catalog %s is not a SQLite database (%s)", c->path, why);
  /* SQLite says "disk I/O error" for ENOSPC met growing its -shm or -wal
  ** by other calls than write(): the errno tells a full disk. */
  int e = rc == PAGEDB_IOERR_CATALOG && conn ? sqlite3_system_errno(conn) : 0;
  if (e == ENOSPC || e == EDQUOT) rc = PAGEDB_FULL;
  if (e) return pdb_err(c->db, m, rc, "catalog %s: %s (%s) while %s", c->path, why, strerror(e), doing);
  return pdb_err(c->db, m, rc, "catalog %s: %s while %s", c->path, why, doing);
}

static int exec(Catalog *c, pdb_msg *m, const char *sql, const char *doing) {
  int src = sqlite3_exec(c->w, sql, NULL, NULL, NULL);
  return src == SQLITE_OK ? PAGEDB_OK : sq_fail(c, m, c->w, src, doing);
}

static int prepare(Catalog *c, pdb_msg *m, sqlite3 *conn, const char *sql, sqlite3_stmt **st) {
  int src = sqlite3_prepare_v2(conn, sql, -1, st, NULL);
  return src == SQLITE_OK ? PAGEDB_OK : sq_fail(c, m, conn, src, "preparing a statement");
}

/* Defensive settings for a connection to a file we did not necessarily
** write: no schema tricks (DEFENSIVE: no writable_schema, no shadow table
** writes; functions in the schema must be innocuous), no extension
** loading, no triggers (cat_load refuses any, and none may fire if one
** appears after it looked), checked cells.  Each must take: an SQLite that
** cannot is not one to open hostile files with. */
int catx_harden_conn(sqlite3 *conn) {
  static const int want[][2] = {
    { SQLITE_DBCONFIG_DEFENSIVE, 1 }, { SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0 },
    { SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0 }, { SQLITE_DBCONFIG_ENABLE_TRIGGER, 0 },
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int got = -1;
    if (sqlite3_db_config(conn, want[i][0], want[i][1], &got) != SQLITE_OK || got != want[i][1])
      return SQLITE_MISUSE;
  }
  sqlite3_busy_timeout(conn, 10000);
  return sqlite3_exec(conn, "PRAGMA cell_size_check=ON; PRAGMA foreign_keys=OFF;", NULL, NULL, NULL);
}

static int harden(Catalog *c, pdb_msg *m, sqlite3 *conn) {
  int src = catx_harden_conn(conn);
  if (src == SQLITE_MISUSE)
    return pdb_err(c->db, m, PAGEDB_ERROR, "catalog %s: SQLite %s refuses a defensive setting", c->path,
                   sqlite3_libversion());
  return src == SQLITE_OK ? PAGEDB_OK : sq_fail(c, m, conn, src, "configuring the connection");
}

static int connect(Catalog *c, pdb_msg *m, int flags, sqlite3 **out) {
  sqlite3 *conn = NULL;
  /* Through the dataset's VFS (catvfs.c); SQLite's own if that VFS could
  ** not be registered. */
  const char *vfs = catvfs_name(c->vfs);
  int src = sqlite3_open_v2(c->path, &conn, flags | SQLITE_OPEN_NOMUTEX, vfs);
  if (src != SQLITE_OK) {
    int rc = conn ? sq_fail(c, m, conn, src, "opening")
                  : pdb_err(c->db, m, PAGEDB_NOMEM, "out of memory opening catalog %s", c->path);
    sqlite3_close(conn);
    return rc;
  }
  int rc = harden(c, m, conn);
  if (rc != PAGEDB_OK) {
    sqlite3_close(conn);
    return rc;
  }
  *out = conn;
  return PAGEDB_OK;
}

int cat_open(pagedb *db, pagedb_vfs *vfs, pdb_msg *m, const char *path, int mode, Catalog **pc) {
  *pc = NULL;
  Catalog *c = pdb_calloc(1, sizeof *c);
  if (!c || !(c->path = pdb_strdup(path))) {
    pdb_free(c);
    return pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening catalog %s", path);
  }
  c->db = db;
  c->vfs = vfs;
  pthread_mutex_init(&c->rmu, NULL);
  int flags = mode == CAT_READONLY ? SQLITE_OPEN_READONLY
            : mode == CAT_CREATE ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
            : SQLITE_OPEN_READWRITE;
  int rc = connect(c, m, flags, &c->w);
  if (rc == PAGEDB_OK && mode != CAT_READONLY && catb_register(c->w, &c->rows) != SQLITE_OK)
    rc = sq_fail(c, m, c->w, sqlite3_errcode(c->w), "registering pdb_rows");
  if (rc == PAGEDB_OK && catr_attach(c, c->w, 0, &c->wref) != SQLITE_OK)
    rc = sq_fail(c, m, c->w, sqlite3_errcode(c->w), "registering pdb_part_rows");
  if (rc == PAGEDB_OK && mode == CAT_CREATE) {
    /* Larger catalog pages: fewer splits for the long runs of inserts. */
    rc = exec(c, m, "PRAGMA page_size=16384", "setting the page size");
  }
  if (rc == PAGEDB_OK && mode != CAT_READONLY) {
    /* A commit may insert a million rows: keep them in memory rather than
    ** spilling half-built pages to the WAL and writing them again. */
    rc = exec(c, m, "PRAGMA cache_size=-262144", "sizing the cache");
  }
  if (rc == PAGEDB_OK && mode != CAT_READONLY) {
    /* WAL: readers in other processes read the last commit while the
    ** writer's long transaction grows; FULL: a commit is durable when
    ** COMMIT returns, which pagedb_commit promises. */
    rc = exec(c, m, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", "setting WAL mode");
  }
  if (rc != PAGEDB_OK) {
    cat_close(c);
    return rc;
  }
  *pc = c;
  return PAGEDB_OK;
}

void cat_close(Catalog *c) {
  if (!c) return;
  sqlite3_finalize(c->ins_sample);
  sqlite3_finalize(c->ins_page);
  if (c->w && !sqlite3_get_autocommit(c->w)) sqlite3_exec(c->w, "ROLLBACK", NULL, NULL, NULL);
  /* The read-only connection first: while it holds its SHARED lock, the
  ** writer's close below cannot take the EXCLUSIVE lock with which SQLite
  ** knows it is the last connection, and so would neither checkpoint nor
  ** delete the WAL; the read-only one, closing last, cannot do either. */
  catr_detach(c->rref);
  catr_detach(c->wref);
  sqlite3_close(c->r);
  if (c->sealed && c->w && sqlite3_get_autocommit(c->w) && !sqlite3_db_readonly(c->w, "main")) {
    /* A sealed part's catalog, now that nothing will write it: rollback
    ** mode, so that the commit's and SQL's read-only opens of it create no
    ** -wal and -shm beside it (32 KiB and two files a part, left there, as
    ** a read-only connection cannot delete them).  SQLite checkpoints, then
    ** rewrites the header under a rollback journal.  Another connection
    ** on it (BUSY at once: no wait) or an error leaves it in WAL mode, as
    ** every catalog was before: nothing is lost either way. */
    sqlite3_busy_timeout(c->w, 0);
    sqlite3_exec(c->w, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
  }
  sqlite3_close(c->w);
  pthread_mutex_destroy(&c->rmu);
  pdb_free(c->path);
  pdb_free(c);
}

/* Bind and run one statement with integer/text parameters given as SQL
** text in FMT order; for the few statements outside the hot path. */
static int run(Catalog *c, pdb_msg *m, const char *sql, const char *doing, int n, ...) {
  sqlite3_stmt *st;
  int rc = prepare(c, m, c->w, sql, &st);
  if (rc != PAGEDB_OK) return rc;
  va_list ap;
  va_start(ap, n);
  for (int i = 1; i <= n; i++) {
    const char *kind = va_arg(ap, const char *);
    if (kind[0] == 'i') sqlite3_bind_int64(st, i, va_arg(ap, int64_t));
    else sqlite3_bind_text(st, i, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
  }
  va_end(ap);
  int src = sqlite3_step(st);
  if (src == SQLITE_DONE || src == SQLITE_ROW) src = SQLITE_OK;
  if (src != SQLITE_OK) rc = sq_fail(c, m, c->w, src, doing);
  sqlite3_finalize(st);
  return rc;
}

static int set_meta(Catalog *c, pdb_msg *m, const char *key, int64_t v) {
  return run(c, m, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", "updating meta", 2,
             "t", key, "i", v);
}

int cat_snapshot(Catalog *c, pdb_msg *m, int begin) {
  assert(!c->in_txn);
  if (!begin && sqlite3_get_autocommit(c->w)) return PAGEDB_OK;
  return exec(c, m, begin ? "BEGIN" : "COMMIT", begin ? "starting a read" : "ending a read");
}

int cat_init(Catalog *c, pdb_msg *m, const uint8_t uuid[16], uint32_t page_size) {
  char hex[33];
  pdb_uuid_hex(uuid, hex);
  int rc = exec(c, m, "BEGIN", "creating the catalog");
  if (rc == PAGEDB_OK) rc = exec(c, m, kSchema, "creating the catalog");
  if (rc == PAGEDB_OK)
    rc = run(c, m, "INSERT INTO meta(key, value) VALUES('uuid', ?1)", "creating the catalog", 1, "t", hex);
  if (rc == PAGEDB_OK) rc = set_meta(c, m, "format", CAT_FORMAT_PLAIN);
  if (rc == PAGEDB_OK) rc = set_meta(c, m, "page_size", page_size);
  if (rc == PAGEDB_OK) rc = set_meta(c, m, "committed_pages", 0);
  if (rc == PAGEDB_OK) rc = set_meta(c, m, "samples", 0);
  if (rc == PAGEDB_OK) rc = set_meta(c, m, "deleted_bytes", 0);
  if (rc == PAGEDB_OK) rc = set_meta(c, m, "moved_samples", 0);
  if (rc == PAGEDB_OK) rc = exec(c, m, "COMMIT", "creating the catalog");
  if (rc != PAGEDB_OK) sqlite3_exec(c->w, "ROLLBACK", NULL, NULL, NULL);
  else c->has_align = 1;
  return rc;
}

int cat_is_empty(Catalog *c, pdb_msg *m, int *empty) {
  sqlite3_stmt *st;
  int rc = prepare(c, m, c->w, "SELECT count(*) FROM sqlite_schema", &st);
  if (rc != PAGEDB_OK) return rc;
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW) *empty = sqlite3_column_int(st, 0) == 0;
  else rc = sq_fail(c, m, c->w, src, "reading its schema");
  sqlite3_finalize(st);
  return rc;
}

int cat_set_page_size(Catalog *c, pdb_msg *m, uint32_t page_size) {
  return set_meta(c, m, "page_size", page_size);
}

static int corrupt(Catalog *c, pdb_msg *m, const char *fmt, const char *detail) {
  char what[300];
  snprintf(what, sizeof what, fmt, detail);
  return pdb_err(c->db, m, PAGEDB_CORRUPT_CATALOG, "catalog %s: %s", c->path, what);
}

static int hexval(int ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  return -1;
}

/*
** meta.format and meta.features (doc/format.md, "Versions and
** compatibility"): format 2 without features (or 0), or format 3 with a
** non-zero integer of bits this pagedb knows.  HAS: the key is there;
** FEATURES: its value, -1 when it is not a non-negative integer.  Sets
** meta->features.
*/
static int check_features(Catalog *c, pdb_msg *m, CatMeta *meta, int has, int64_t features) {
  if (meta->format != CAT_FORMAT_PLAIN && meta->format != CAT_FORMAT_FEATURES)
    return pdb_err(c->db, m, PAGEDB_NOTADB_VERSION, "catalog %s has format version %u; this pagedb reads versions %u"
                   " and %u only", c->path, meta->format, CAT_FORMAT_PLAIN, CAT_FORMAT_FEATURES);
  if (meta->format == CAT_FORMAT_PLAIN) {
    if (has && features != 0)
      return corrupt(c, m, "meta.features is %s in a catalog of format version 2 (which has no features)",
                     features > 0 ? "not 0" : "not an integer");
    return PAGEDB_OK;
  }
  if (features <= 0)
    return corrupt(c, m, "%s in a catalog of format version 3 (which uses features)",
                   !has ? "meta.features is missing" : features == 0 ? "meta.features is 0"
                   : "meta.features is not a non-negative integer");
  if ((uint64_t)features & ~(uint64_t)CAT_FEATURES_KNOWN)
    return pdb_err(c->db, m, PAGEDB_NOTADB_VERSION, "catalog %s uses feature bits 0x%" PRIx64 " that this pagedb"
                   " does not know (it knows 0x%x)", c->path, (uint64_t)features & ~(uint64_t)CAT_FEATURES_KNOWN,
                   CAT_FEATURES_KNOWN);
  meta->features = (uint64_t)features;
  return PAGEDB_OK;
}

/* *FEATURES: meta.features as the connection sees it (0 when absent; the
** open's load_meta checked it). */
static int read_features(Catalog *c, pdb_msg *m, uint64_t *features) {
  sqlite3_stmt *st;
  int rc = prepare(c, m, c->w, "SELECT value FROM meta WHERE key = 'features'", &st);
  if (rc != PAGEDB_OK) return rc;
  *features = 0;
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW) *features = (uint64_t)sqlite3_column_int64(st, 0);
  else if (src != SQLITE_DONE) rc = sq_fail(c, m, c->w, src, "reading meta");
  sqlite3_finalize(st);
  return rc;
}

int cat_features_update(Catalog *c, pdb_msg *m, uint64_t set, uint64_t clear) {
  assert(!sqlite3_get_autocommit(c->w));   /* inside the caller's write transaction */
  uint64_t old = 0;
  int rc = read_features(c, m, &old);
  uint64_t now = (old | set) & ~clear;
  if (rc != PAGEDB_OK || now == old) return rc;
  if (now != 0) {
    rc = set_meta(c, m, "format", CAT_FORMAT_FEATURES);
    if (rc == PAGEDB_OK) rc = set_meta(c, m, "features", (int64_t)now);
  } else {
    rc = set_meta(c, m, "format", CAT_FORMAT_PLAIN);
    if (rc == PAGEDB_OK) rc = run(c, m, "DELETE FROM meta WHERE key = 'features'", "updating meta", 0);
  }
  return rc;
}

static int load_meta(Catalog *c, pdb_msg *m, CatMeta *meta) {
  sqlite3_stmt *st;
  int rc = prepare(c, m, c->w, "SELECT key, value FROM meta", &st);
  if (rc != PAGEDB_OK) return rc;
  int seen = 0, src;
  int has_features = 0;     /* the key is there */
  int64_t features = -1;    /* its value; -1 when not a non-negative integer */
  memset(meta, 0, sizeof *meta);
  meta->parts = -1;
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    const char *key = (const char *)sqlite3_column_text(st, 0);
    if (!key) continue;
    if (strcmp(key, "features") == 0) {
      has_features = 1;
      if (sqlite3_column_type(st, 1) == SQLITE_INTEGER && sqlite3_column_int64(st, 1) >= 0)
        features = sqlite3_column_int64(st, 1);
      continue;
    }
    if (strcmp(key, "uuid") == 0) {
      const unsigned char *hex = sqlite3_column_text(st, 1);
      if (!hex || sqlite3_column_bytes(st, 1) != 32) break;
      int ok = 1;
      for (int i = 0; i < 16 && ok; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        ok = hi >= 0 && lo >= 0;   /* a negative digit must not be shifted */
        meta->uuid[i] = (uint8_t)(ok ? hi << 4 | lo : 0);
      }
      if (!ok) break;
      seen |= 1;
      continue;
    }
    if (strcmp(key, "index_file") == 0) {
      /* A file name beside the data file's: no '/', no "..", not empty
      ** (else it is not taken: the open then uses NAME-index). */
      const char *f = (const char *)sqlite3_column_text(st, 1);
      if (f && f[0] && !strchr(f, '/') && strcmp(f, "..") != 0 && strcmp(f, ".") != 0
          && strlen(f) < sizeof meta->index_file)
        snprintf(meta->index_file, sizeof meta->index_file, "%s", f);
      continue;
    }
    if (sqlite3_column_type(st, 1) != SQLITE_INTEGER) continue;
    int64_t v = sqlite3_column_int64(st, 1);
    if (v < 0) continue;
    if (strcmp(key, "page_size") == 0 && v <= UINT32_MAX) meta->page_size = (uint32_t)v, seen |= 2;
    else if (strcmp(key, "format") == 0 && v <= UINT32_MAX) meta->format = (uint32_t)v, seen |= 4;
    else if (strcmp(key, "committed_pages") == 0) meta->committed = (uint64_t)v, seen |= 8;
    else if (strcmp(key, "samples") == 0) meta->nsample = (uint64_t)v, seen |= 16;
    else if (strcmp(key, "moved_samples") == 0) meta->moved = (uint64_t)v;   /* optional */
    else if (strcmp(key, "index_id") == 0) meta->ix_id = (uint64_t)v;          /* optional: dindex.c */
    else if (strcmp(key, "index_dir") == 0) meta->ix_dir = (uint64_t)v;
    else if (strcmp(key, "index_len") == 0) meta->ix_len = (uint64_t)v;
    else if (strcmp(key, "index_samples") == 0) meta->ix_samples = (uint64_t)v;
    else if (strcmp(key, "index_pages") == 0) meta->ix_pages = (uint64_t)v;
    else if (strcmp(key, "parts") == 0) meta->parts = v;
    else if (strcmp(key, "deleted_bytes") == 0) meta->deleted_bytes = (uint64_t)v;
  }
  if (src != SQLITE_DONE && src != SQLITE_ROW) rc = sq_fail(c, m, c->w, src, "reading meta");
  sqlite3_finalize(st);
  if (rc == PAGEDB_OK && seen != 31)
    rc = corrupt(c, m, "table meta lacks a valid %s", !(seen & 1) ? "uuid" : !(seen & 2) ? "page_size"
                 : !(seen & 4) ? "format" : !(seen & 8) ? "committed_pages" : "samples");
  if (rc == PAGEDB_OK) rc = check_features(c, m, meta, has_features, features);
  return rc;
}

static int type_of(const char *s) {
  for (int t = PAGEDB_BYTES; t <= PAGEDB_REAL; t++)
    if (s && strcmp(s, kTypeNames[t]) == 0) return t;
  return -1;
}

/* Whether table field has its fifth column, align: a catalog made before
** alignments existed has four, and its fields are all of alignment 1. */
static int count_field_cols(Catalog *c, pdb_msg *m, int *n) {
  sqlite3_stmt *st;
  int rc = prepare(c, m, c->w, "SELECT count(*) FROM pragma_table_info('field')", &st);
  if (rc != PAGEDB_OK) return rc;
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW) *n = sqlite3_column_int(st, 0);
  else rc = sq_fail(c, m, c->w, src, "reading the schema");
  sqlite3_finalize(st);
  return rc;
}

/* The text of field.type for F: a type name, or a tensor's declaration
** (OUT has TENSOR_TEXT_MAX bytes). */
static const char *type_text(const CatField *f, char *out) {
  if (f->type != PAGEDB_TENSOR) return kTypeNames[f->type];
  tensor_format(&f->tensor, out);
  return out;
}

/* FEATURES: meta.features, which must declare every feature a field uses. */
static int load_fields(Catalog *c, pdb_msg *m, uint64_t features, CatField *fields, int *nfield) {
  sqlite3_stmt *st;
  int rc = prepare(c, m, c->w, c->has_align ? "SELECT idx, name, type, codec, align FROM field ORDER BY idx"
                                            : "SELECT idx, name, type, codec, 1 FROM field ORDER BY idx", &st);
  if (rc != PAGEDB_OK) return rc;
  int n = 0, src;
  while (rc == PAGEDB_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 1);
    const char *codec = (const char *)sqlite3_column_text(st, 3);
    const char *ttext = (const char *)sqlite3_column_text(st, 2);
    int type = type_of(ttext);
    TensorDecl td;
    memset(&td, 0, sizeof td);
    if (type < 0 && ttext && strncmp(ttext, "tensor:", 7) == 0 && tensor_parse(ttext, &td) == 0) type = PAGEDB_TENSOR;
    int64_t align = sqlite3_column_int64(st, 4);
    int cod;
    if (n >= PAGEDB_MAX_FIELDS || sqlite3_column_int64(st, 0) != n) {
      rc = corrupt(c, m, "table field is not numbered 0, 1, 2... (%s)", name ? name : "?");
    } else if (!name || strlen(name) == 0 || strlen(name) > PAGEDB_MAX_NAME || type < 0) {
      rc = corrupt(c, m, "table field has an invalid row for '%s'", name ? name : "?");
    } else if (type == PAGEDB_TENSOR && !(features & CAT_FEATURE_TENSOR)) {
      rc = corrupt(c, m, "field '%s' is a tensor, but meta.features does not declare tensor fields", name);
    } else if (type == PAGEDB_TENSOR && align < td.esize) {
      char what[200];
      snprintf(what, sizeof what, "'%s' has alignment %lld, below its element size %d", name, (long long)align,
               td.esize);
      rc = corrupt(c, m, "tensor field %s", what);
    } else if (!codec_parse(codec, &cod) || (cod != PAGEDB_CODEC_NONE && !is_bytes(type))) {
      rc = corrupt(c, m, "field uses codec '%s', which this pagedb does not support", codec ? codec : "?");
    } else if (sqlite3_column_type(st, 4) != SQLITE_INTEGER || align < 1 || align > PAGEDB_MAX_ALIGN
               || (align & (align - 1)) != 0 || (align > 1 && !is_bytes(type))) {
      char what[120];
      snprintf(what, sizeof what, "'%s' has alignment '%.20s'", name,
               sqlite3_column_text(st, 4) ? (const char *)sqlite3_column_text(st, 4) : "NULL");
      rc = corrupt(c, m, "field %s: an alignment is a power of two from 1 to 64, and 1 for int and real", what);
    } else {
      snprintf(fields[n].name, sizeof fields[n].name, "%s", name);
      fields[n].type = type;
      fields[n].codec = cod;
      fields[n].align = (int)align;
      fields[n].tensor = td;
      n++;
    }
  }
  if (rc == PAGEDB_OK && src != SQLITE_DONE) rc = sq_fail(c, m, c->w, src, "reading fields");
  sqlite3_finalize(st);
  *nfield = n;
  return rc;
}

/*
** The columns of table sample after id, page and off: each field's own (its
** value, or the raw length of a BYTES/TEXT value), and for a BYTES/TEXT
** field two more: "F:z", the stored length when the value is compressed
** (NULL when it is stored as given), and "F:sum", the pdb_sum of the bytes
** stored.  ':' cannot occur in a field name, so these never collide.
*/
#define MAX_COLS (3 * PAGEDB_MAX_FIELDS)
typedef char ColName[PAGEDB_MAX_NAME + 8];

static void column_name(ColName out, const char *field, const char *suffix) {
  size_t k = strnlen(field, PAGEDB_MAX_NAME);
  memcpy(out, field, k);
  memcpy(out + k, suffix, strlen(suffix) + 1);
}

static int field_columns(const CatField *fields, int nfield, ColName *out) {
  int n = 0;
  for (int i = 0; i < nfield; i++) {
    column_name(out[n++], fields[i].name, "");
    if (!is_bytes(fields[i].type)) continue;
    column_name(out[n++], fields[i].name, ":z");
    column_name(out[n++], fields[i].name, ":sum");
  }
  return n;
}

/* A column as pragma_table_info reports it: its declared type, NOT NULL,
** and its place in the primary key. */
typedef struct Col {
  const char *name;
  const char *type;
  int notnull, pk;
} Col;

static const Col kMetaCols[] = { { "key", "TEXT", 1, 1 }, { "value", "", 1, 0 } };
static const Col kFieldCols[] = { { "idx", "INTEGER", 0, 1 }, { "name", "TEXT", 1, 0 },
                                  { "type", "TEXT", 1, 0 }, { "codec", "TEXT", 1, 0 },
                                  { "align", "INTEGER", 1, 0 } };
static const Col kPageCols[] = { { "pgno", "INTEGER", 0, 1 }, { "npages", "INTEGER", 1, 0 },
                                 { "used", "INTEGER", 1, 0 }, { "nsamples", "INTEGER", 1, 0 } };
static const Col kPartCols[] = {
  { "part", "INTEGER", 0, 1 }, { "uuid", "TEXT", 1, 0 }, { "uri", "TEXT", 1, 0 }, { "name", "TEXT", 0, 0 },
  { "first_page", "INTEGER", 1, 0 }, { "pages", "INTEGER", 1, 0 }, { "data_off", "INTEGER", 1, 0 },
  { "data_end", "INTEGER", 1, 0 }, { "samples", "INTEGER", 1, 0 }, { "id_min", "INTEGER", 0, 0 },
  { "id_max", "INTEGER", 0, 0 }, { "seal", "INTEGER", 1, 0 }, { "validator", "TEXT", 0, 0 },
  { "committed", "INTEGER", 1, 0 },
  /* feature bit 2 (part rows by reference) only */
  { "rows", "INTEGER", 1, 0 }, { "id_delta", "INTEGER", 1, 0 } };
static const Col kPartDeletedCols[] = { { "id", "INTEGER", 0, 1 } };
static const Col kSampleCols[] = { { "id", "INTEGER", 0, 1 }, { "page", "INTEGER", 1, 0 },
                                   { "off", "INTEGER", 1, 0 } };

/*
** Table TABLE must have exactly the N columns WANT, in order, as kSchema
** and cat_field_add declare them.  Names alone are not enough: a column
** declared with another type keeps values of any type as given, and an id
** that is not "INTEGER PRIMARY KEY" is not the rowid, so it could repeat.
*/
static int check_table(Catalog *c, pdb_msg *m, const char *table, const Col *want, int n) {
  sqlite3_stmt *st;
  int rc = prepare(c, m, c->w, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1) ORDER BY cid", &st);
  if (rc != PAGEDB_OK) return rc;
  sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  char what[200];
  int i = 0, src;
  while (rc == PAGEDB_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    const char *type = (const char *)sqlite3_column_text(st, 1);
    const Col *w = i < n ? &want[i] : NULL;
    if (!w || !name || sqlite3_stricmp(name, w->name) != 0) {
      snprintf(what, sizeof what, "table %s has an unexpected column '%s'", table, name ? name : "?");
      rc = corrupt(c, m, "%s", what);
    } else if (!type || sqlite3_stricmp(type, w->type) != 0 || sqlite3_column_int(st, 2) != w->notnull
               || sqlite3_column_int(st, 3) != w->pk) {
      snprintf(what, sizeof what, "column %s.\"%s\" is declared '%s%s%s', not '%s%s%s'", table, name,
               type ? type : "", sqlite3_column_int(st, 2) ? " NOT NULL" : "",
               sqlite3_column_int(st, 3) ? " PRIMARY KEY" : "", w->type, w->notnull ? " NOT NULL" : "",
               w->pk ? " PRIMARY KEY" : "");
      rc = corrupt(c, m, "%s", what);
    }
    i++;
  }
  if (rc == PAGEDB_OK && src != SQLITE_DONE) rc = sq_fail(c, m, c->w, src, "reading the schema");
  if (rc == PAGEDB_OK && i != n) {
    snprintf(what, sizeof what, i == 0 ? "table %s is missing" : "table %s lacks columns for some fields", table);
    rc = corrupt(c, m, "%s", what);
  }
  sqlite3_finalize(st);
  return rc;
}

/* The sample table must have exactly id, page, off and the field columns. */
static int check_columns(Catalog *c, pdb_msg *m, const CatField *fields, int nfield) {
  ColName *names = pdb_malloc(MAX_COLS * sizeof *names);
  Col *want = pdb_malloc((3 + MAX_COLS) * sizeof *want);
  int rc = PAGEDB_OK;
  if (!names || !want) rc = pdb_err(c->db, m, PAGEDB_NOMEM, "out of memory reading catalog %s", c->path);
  int n = 3;
  if (rc == PAGEDB_OK) {
    field_columns(fields, nfield, names);
    memcpy(want, kSampleCols, sizeof kSampleCols);
    for (int i = 0; i < nfield; i++) {
      want[n] = (Col){ names[n - 3], fields[i].type == PAGEDB_REAL ? "REAL" : "INTEGER", 0, 0 };
      n++;
      for (int k = 0; k < (is_bytes(fields[i].type) ? 2 : 0); k++, n++) want[n] = (Col){ names[n - 3], "INTEGER", 0, 0 };
    }
    rc = check_table(c, m, "sample", want, n);
  }
  pdb_free(names);
  pdb_free(want);
  return rc;
}

/* The extent view: one SELECT per BYTES/TEXT field, each offset the
** record's plus the stored lengths of the fields before it.  With G, the
** largest alignment of the fields, above 1 (doc/format.md), every value
** starts at a multiple of G: the record's offset and each stored length
** before it are rounded up to one, ((x + G-1) & -G), a sum whose text
** grows linearly with the fields and nests no deeper.  With G = 1 the text
** is the one made before alignments existed, so old catalogs' views stay
** as they were made.  The CREATE statement (sqlite3_free it), or NULL
** without memory. */
static char *view_sql(const CatField *fields, int nfield) {
  if (nfield == 0) return sqlite3_mprintf("%s", NO_FIELDS_VIEW);
  int g = 1;
  for (int i = 0; i < nfield; i++)
    if (is_bytes(fields[i].type) && fields[i].align > g) g = fields[i].align;
  sqlite3_str *sql = sqlite3_str_new(NULL);
  sqlite3_str *off = sqlite3_str_new(NULL);
  sqlite3_str_appendall(sql, "CREATE VIEW extent(id, field, name, page, off, len, raw, compressed, sum) AS ");
  if (g > 1) sqlite3_str_appendf(off, "((off + %d) & %d)", g - 1, -g);
  else sqlite3_str_appendall(off, "off");
  int any = 0;
  for (int i = 0; i < nfield; i++) {
    if (!is_bytes(fields[i].type)) continue;
    const char *name = fields[i].name;
    ColName z, sum;
    column_name(z, name, ":z");
    column_name(sum, name, ":sum");
    sqlite3_str_appendf(sql, "%sSELECT id, %d, %Q, page, %s, coalesce(\"%w\", \"%w\"), \"%w\", \"%w\" IS NOT NULL,"
                        " \"%w\" FROM sample WHERE \"%w\" IS NOT NULL",
                        any ? " UNION ALL " : "", i, name, sqlite3_str_value(off), z, name, name, z, sum, name);
    if (g > 1) sqlite3_str_appendf(off, " + ((coalesce(\"%w\", \"%w\", 0) + %d) & %d)", z, name, g - 1, -g);
    else sqlite3_str_appendf(off, " + coalesce(\"%w\", \"%w\", 0)", z, name);
    any = 1;
  }
  if (!any) sqlite3_str_appendall(sql, "SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE 0");
  sqlite3_free(sqlite3_str_finish(off));
  return sqlite3_str_finish(sql);
}

static int make_view(Catalog *c, pdb_msg *m, const CatField *fields, int nfield) {
  char *text = view_sql(fields, nfield);
  int rc = text ? exec(c, m, "DROP VIEW IF EXISTS extent", "creating the extent view")
                : pdb_err(c->db, m, PAGEDB_NOMEM, "out of memory updating catalog %s", c->path);
  if (rc == PAGEDB_OK) rc = exec(c, m, text, "creating the extent view");
  sqlite3_free(text);
  if (rc == PAGEDB_OK) rc = cat_info_view_make(c, m, fields, nfield);
  return rc;
}

/* The extent view must be the one view_sql makes: users query it to find
** the bytes of a value, and a view is SQL that runs when they do. */
static int check_view(Catalog *c, pdb_msg *m, const CatField *fields, int nfield) {
  char *want = view_sql(fields, nfield);
  sqlite3_stmt *st = NULL;
  int rc = want ? prepare(c, m, c->w, "SELECT sql FROM sqlite_schema WHERE type = 'view' AND name = 'extent'", &st)
                : pdb_err(c->db, m, PAGEDB_NOMEM, "out of memory reading catalog %s", c->path);
  if (rc == PAGEDB_OK) {
    int src = sqlite3_step(st);
    const char *got = src == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (src != SQLITE_ROW && src != SQLITE_DONE) rc = sq_fail(c, m, c->w, src, "reading the schema");
    else if (!got || strcmp(got, want) != 0)
      rc = corrupt(c, m, "%s", got ? "view extent is not the one pagedb makes for these fields" : "view extent is missing");
  }
  sqlite3_finalize(st);
  sqlite3_free(want);
  if (rc == PAGEDB_OK) rc = cat_info_view_check(c, m, fields, nfield);
  return rc;
}

/* Whether the catalog has table NAME. */
static int has_table(Catalog *c, pdb_msg *m, const char *name, int *has) {
  sqlite3_stmt *st;
  *has = 0;
  int rc = prepare(c, m, c->w, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1", &st);
  if (rc != PAGEDB_OK) return rc;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW) *has = 1;
  else if (src != SQLITE_DONE) rc = sq_fail(c, m, c->w, src, "reading the schema");
  sqlite3_finalize(st);
  return rc;
}

int cat_load(Catalog *c, pdb_msg *m, CatMeta *meta, CatField *fields, int *nfield) {
  *nfield = 0;
  /* meta first: what else the catalog may hold depends on its format and
  ** features (a newer pagedb's objects are refused by version, not as
  ** damage). */
  int rc = check_table(c, m, "meta", kMetaCols, 2);
  if (rc == PAGEDB_OK) rc = load_meta(c, m, meta);
  if (rc != PAGEDB_OK) return rc;
  /* Every object must be one we made: a trigger or an extra view could run
  ** arbitrary SQL inside our transactions. */
  sqlite3_stmt *st;
  rc = prepare(c, m, c->w,
               "SELECT type, name FROM sqlite_schema WHERE NOT ("
               " (type = 'table' AND name IN ('meta', 'field', 'page', 'sample', 'pagedb_dict', 'part_deleted'))"
               " OR (type = 'index' AND name = 'sqlite_autoindex_pagedb_dict_1' AND tbl_name = 'pagedb_dict')"
               " OR (type = 'view' AND name IN ('extent', 'sample_info'))"
               " OR (type = 'index' AND name = 'sqlite_autoindex_field_1' AND tbl_name = 'field')"
               /* user tables and their indexes (pagedb_sql_user); not virtual tables */
               " OR (type IN ('table', 'index') AND " CAT_USER_TABLE("tbl_name")
               " AND (type = 'index' OR (name = tbl_name AND sql NOT LIKE 'create virtual%')))"
               /* ANALYZE, which a user may run in the sqlite3 shell, only guides the planner */
               " OR (type = 'table' AND name IN ('sqlite_stat1', 'sqlite_stat4')))", &st);
  if (rc != PAGEDB_OK) return rc;
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW) {
    char what[200];
    snprintf(what, sizeof what, "%s '%s'", sqlite3_column_text(st, 0), sqlite3_column_text(st, 1));
    rc = corrupt(c, m, "unexpected %s in the catalog", what);
  } else if (src != SQLITE_DONE) {
    rc = sq_fail(c, m, c->w, src, "reading the schema");
  }
  sqlite3_finalize(st);
  int nfcol = 0;
  if (rc == PAGEDB_OK) rc = count_field_cols(c, m, &nfcol);
  c->has_align = nfcol != 4;
  if (rc == PAGEDB_OK) rc = check_table(c, m, "field", kFieldCols, c->has_align ? 5 : 4);
  if (rc == PAGEDB_OK) rc = check_table(c, m, "page", kPageCols, 4);
  int rows_by_ref = (meta->features & CAT_FEATURE_PARTROWS) != 0;
  if (rc == PAGEDB_OK && rows_by_ref && !(meta->features & CAT_FEATURE_PARTS))
    rc = corrupt(c, m, "%s", "meta.features has bit 2 (part rows by reference) without bit 1 (parts)");
  if (rc == PAGEDB_OK && (meta->features & CAT_FEATURE_CHUNKREF) && !(meta->features & CAT_FEATURE_PARTS))
    rc = corrupt(c, m, "%s", "meta.features has bit 3 (part chunks by reference) without bit 1 (parts)");
  if (rc == PAGEDB_OK && (meta->features & CAT_FEATURE_PARTS)) {
    rc = check_table(c, m, "part", kPartCols, (int)(sizeof kPartCols / sizeof *kPartCols) - (rows_by_ref ? 0 : 2));
    if (rc == PAGEDB_OK && meta->parts < 0) rc = corrupt(c, m, "%s", "meta lacks a valid 'parts' beside feature bit 1");
  } else if (rc == PAGEDB_OK && meta->parts >= 0) {
    rc = corrupt(c, m, "%s", "meta has 'parts' without feature bit 1 (parts)");
  }
  if (rc == PAGEDB_OK && rows_by_ref) rc = check_table(c, m, "part_deleted", kPartDeletedCols, 1);
  else if (rc == PAGEDB_OK) {
    int has = 0;
    rc = has_table(c, m, "part_deleted", &has);
    if (rc == PAGEDB_OK && has)
      rc = corrupt(c, m, "%s", "table part_deleted without feature bit 2 (part rows by reference)");
  }
  c->has_parts = rc == PAGEDB_OK && (meta->features & CAT_FEATURE_PARTS);
  if (rc == PAGEDB_OK) rc = load_fields(c, m, meta->features, fields, nfield);
  if (rc == PAGEDB_OK) rc = check_columns(c, m, fields, *nfield);
  if (rc == PAGEDB_OK) rc = check_view(c, m, fields, *nfield);
  return rc;
}

int cat_field_add(Catalog *c, pdb_msg *m, int idx, const CatField *f) {
  assert(!c->in_txn);
  CatField fields[PAGEDB_MAX_FIELDS];
  int nfield;
  char *sql = sqlite3_mprintf("ALTER TABLE sample ADD COLUMN \"%w\" %s", f->name,
                              f->type == PAGEDB_REAL ? "REAL" : "INTEGER");
  if (sql && is_bytes(f->type))
    sql = sqlite3_mprintf("%z; ALTER TABLE sample ADD COLUMN \"%w:z\" INTEGER;"
                          " ALTER TABLE sample ADD COLUMN \"%w:sum\" INTEGER", sql, f->name, f->name);
  if (!sql) return pdb_err(c->db, m, PAGEDB_NOMEM, "out of memory adding field '%s'", f->name);
  char codec[32], ttext[TENSOR_TEXT_MAX];
  codec_name(f->codec, codec, sizeof codec);
  const char *type = type_text(f, ttext);
  /* A catalog made before alignments existed gains column align with the
  ** first field that needs it (its fields so far read as alignment 1);
  ** until then it stays readable by the pagedb that made it. */
  int add_col = !c->has_align && f->align != 1;
  int rc = exec(c, m, "BEGIN IMMEDIATE", "adding a field");
  /* The views go first and are made again last (make_view), in the same
  ** transaction: SQLite checks every view of the schema again after each
  ** ALTER TABLE, and the extent view's text grows with the square of the
  ** fields: with them in place, 256 fields added one by one took 7.9 s
  ** (types-9.1; 4.6 s without). */
  if (rc == PAGEDB_OK)
    rc = exec(c, m, "DROP VIEW IF EXISTS extent; DROP VIEW IF EXISTS sample_info", "adding a field");
  if (rc == PAGEDB_OK && add_col)
    rc = exec(c, m, "ALTER TABLE field ADD COLUMN align INTEGER NOT NULL DEFAULT 1", "adding a field");
  if (rc == PAGEDB_OK && (c->has_align || add_col))
    rc = run(c, m, "INSERT INTO field(idx, name, type, codec, align) VALUES(?1, ?2, ?3, ?4, ?5)", "adding a field",
             5, "i", (int64_t)idx, "t", f->name, "t", type, "t", codec, "i", (int64_t)f->align);
  else if (rc == PAGEDB_OK)
    rc = run(c, m, "INSERT INTO field(idx, name, type, codec) VALUES(?1, ?2, ?3, ?4)", "adding a field",
             4, "i", (int64_t)idx, "t", f->name, "t", type, "t", codec);
  if (rc == PAGEDB_OK) rc = exec(c, m, sql, "adding a field");
  /* The first tensor field makes the catalog format 3 (doc/format.md). */
  uint64_t features = 0;
  if (rc == PAGEDB_OK && f->type == PAGEDB_TENSOR) rc = cat_features_update(c, m, CAT_FEATURE_TENSOR, 0);
  if (rc == PAGEDB_OK) rc = read_features(c, m, &features);
  int had_align = c->has_align;
  c->has_align |= add_col;   /* load_fields reads the column now */
  if (rc == PAGEDB_OK) rc = load_fields(c, m, features, fields, &nfield);
  if (rc == PAGEDB_OK) rc = make_view(c, m, fields, nfield);
  if (rc == PAGEDB_OK) rc = exec(c, m, "COMMIT", "adding a field");
  if (rc != PAGEDB_OK) {
    sqlite3_exec(c->w, "ROLLBACK", NULL, NULL, NULL);
    c->has_align = had_align;
  }
  sqlite3_free(sql);
  sqlite3_finalize(c->ins_sample);
  c->ins_sample = NULL;
  return rc;
}

int cat_last_run(Catalog *c, pdb_msg *m, uint32_t page_size, CatRun *run, int *found) {
  *found = 0;
  sqlite3_stmt *st;
  /* The own file's runs only: the parts' lie at pages from 2^56 / page size. */
  int rc = prepare(c, m, c->w, "SELECT pgno, npages, used, nsamples FROM page WHERE used > 0 AND pgno < ?1"
                   " ORDER BY pgno DESC LIMIT 1", &st);
  if (rc != PAGEDB_OK) return rc;
  sqlite3_bind_int64(st, 1, (int64_t)(PDB_MAX_DATA / page_size));
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW) {
    for (int i = 0; i < 4 && rc == PAGEDB_OK; i++)
      if (sqlite3_column_type(st, i) != SQLITE_INTEGER || sqlite3_column_int64(st, i) < 0)
        rc = corrupt(c, m, "%s", "table page has a non-integer or negative value in its last row");
    if (rc == PAGEDB_OK) {
      *run = (CatRun){ (uint64_t)sqlite3_column_int64(st, 0), (uint32_t)sqlite3_column_int64(st, 1),
                       (uint32_t)sqlite3_column_int64(st, 3), (uint64_t)sqlite3_column_int64(st, 2) };
      *found = 1;
    }
  } else if (src != SQLITE_DONE) {
    rc = sq_fail(c, m, c->w, src, "reading the page table");
  }
  sqlite3_finalize(st);
  return rc;
}

int cat_id_min(Catalog *c, pdb_msg *m, int64_t *lo) {
  *lo = -1;
  sqlite3_stmt *st;
  int rc = prepare(c, m, c->w, "SELECT min(id) FROM sample", &st);
  if (rc != PAGEDB_OK) return rc;
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER) *lo = sqlite3_column_int64(st, 0);
  else if (src == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
    rc = corrupt(c, m, "%s", "table sample has an id that is not an integer");
  else if (src != SQLITE_ROW) rc = sq_fail(c, m, c->w, src, "reading table sample");
  sqlite3_finalize(st);
  return rc;
}

int cat_runs(Catalog *c, pdb_msg *m, CatRun **runs, uint64_t *n) {
  *runs = NULL;
  *n = 0;
  sqlite3_stmt *st;
  int rc = prepare(c, m, c->w, "SELECT pgno, npages, used, nsamples FROM page ORDER BY pgno", &st);
  if (rc != PAGEDB_OK) return rc;
  uint64_t cap = 0, cnt = 0;
  CatRun *v = NULL;
  int src;
  while (rc == PAGEDB_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
    for (int i = 0; i < 4; i++) {
      if (sqlite3_column_type(st, i) != SQLITE_INTEGER || sqlite3_column_int64(st, i) < 0) {
        char pg[32];
        snprintf(pg, sizeof pg, "%lld", (long long)sqlite3_column_int64(st, 0));
        rc = corrupt(c, m, "table page has a non-integer or negative value in the row of page %s", pg);
        break;
      }
    }
    if (rc != PAGEDB_OK) break;
    if (cnt == cap) {
      cap = cap ? cap * 2 : 256;
      CatRun *nv = pdb_realloc(v, cap * sizeof *v);
      if (!nv) {
        rc = pdb_err(c->db, m, PAGEDB_NOMEM, "out of memory reading the page table of %s", c->path);
        break;
      }
      v = nv;
    }
    int64_t np = sqlite3_column_int64(st, 1), ns = sqlite3_column_int64(st, 3);
    if (np < 1 || np > UINT32_MAX || ns > UINT32_MAX) {
      char pg[32];
      snprintf(pg, sizeof pg, "%lld", (long long)sqlite3_column_int64(st, 0));
      rc = corrupt(c, m, "table page has an impossible run length or sample count at page %s", pg);
      break;
    }
    v[cnt].pgno = (uint64_t)sqlite3_column_int64(st, 0);
    v[cnt].npages = (uint32_t)np;
    v[cnt].used = (uint64_t)sqlite3_column_int64(st, 2);
    v[cnt].nsamples = (uint32_t)ns;
    cnt++;
  }
  if (rc == PAGEDB_OK && src != SQLITE_DONE) rc = sq_fail(c, m, c->w, src, "reading the page table");
  sqlite3_finalize(st);
  if (rc != PAGEDB_OK) {
    pdb_free(v);
    return rc;
  }
  *runs = v;
  *n = cnt;
  return PAGEDB_OK;
}

/* "SELECT id, page, off, <the field columns> FROM sample" or the matching
** INSERT; with PARTS (a catalog with part rows by reference, catref.c) the
** SELECT is of the union of own rows and the parts' live ones.  Free with
** sqlite3_free; NULL without memory. */
static char *sample_sql(const CatField *fields, int nfield, int insert, int parts) {
  ColName *cols = pdb_malloc(MAX_COLS * sizeof *cols);
  if (!cols) return NULL;
  int ncol = field_columns(fields, nfield, cols);
  sqlite3_str *sql = sqlite3_str_new(NULL);
  sqlite3_str_appendall(sql, insert ? "INSERT INTO sample(id, page, off" : "SELECT id, page, off");
  for (int i = 0; i < ncol; i++) sqlite3_str_appendf(sql, ", \"%w\"", cols[i]);
  if (!insert) {
    sqlite3_str_appendall(sql, parts ? " FROM main.sample" : " FROM sample");
    if (parts) {
      sqlite3_str_appendall(sql, " UNION ALL SELECT id, page, off");
      for (int i = 0; i < ncol; i++) sqlite3_str_appendf(sql, ", \"%w\"", cols[i]);
      sqlite3_str_appendall(sql, " FROM temp.pdb_part_rows WHERE id NOT IN (SELECT id FROM main.part_deleted)");
    }
  } else {
    /* A run's rows in one statement (catbulk.c). */
    sqlite3_str_appendall(sql, ") SELECT id, page, off");
    for (int i = 0; i < ncol; i++) sqlite3_str_appendf(sql, ", v%d", i);
    sqlite3_str_appendall(sql, " FROM temp.pdb_rows");
  }
  pdb_free(cols);
  return sqlite3_str_finish(sql);
}

/* Read the stored length and checksum of a BYTES/TEXT value of RAW bytes
** (in columns COL+1 and COL+2 of ST) into X: NULL, or what is wrong. */
static const char *extent_of(int codec, int64_t raw, sqlite3_stmt *st, int col, uint64_t *x) {
  if (raw < 0 || (uint64_t)raw > PAGEDB_MAX_SAMPLE) return "has an impossible length";
  if (sqlite3_column_type(st, col + 2) != SQLITE_INTEGER) return "has no checksum";
  x[1] = (uint64_t)sqlite3_column_int64(st, col + 2);
  int tz = sqlite3_column_type(st, col + 1);
  if (tz == SQLITE_NULL) {
    x[0] = (uint64_t)raw;
    return NULL;
  }
  int64_t z = sqlite3_column_int64(st, col + 1);
  if (tz != SQLITE_INTEGER || PAGEDB_CODEC_KIND(codec) == PAGEDB_CODEC_NONE) return "has a compressed value in a field without a codec";
  /* A writer keeps a compressed value only if it is smaller, and lz4
  ** cannot have made it from more than codec_max_raw. */
  if (z <= 0 || z >= raw) return "has an impossible compressed length";
  if ((uint64_t)raw > codec_max_raw(codec, (uint64_t)z)) return "has a raw length its compressed bytes cannot expand to";
  x[0] = (uint64_t)z | SLOT_Z;
  return NULL;
}

/* cat_scan, or with SKIP cat_scan_skip. */
static int scan(Catalog *c, pdb_msg *m, const CatField *fields, int nfield, uint32_t page_size,
                int (*xrow)(void *ctx, uint64_t *slot), void *ctx, int skip) {
  int parts = 0, rc = catr_ready(c->wref, m, &parts);
  if (rc != PAGEDB_OK) return rc;
  char *sql = sample_sql(fields, nfield, 0, parts);
  int nw = slot_words(nfield);
  uint64_t *slot = pdb_malloc((size_t)nw * sizeof *slot);
  sqlite3_stmt *st = NULL;
  rc = sql && slot ? prepare(c, m, c->w, sql, &st)
                   : pdb_err(c->db, m, PAGEDB_NOMEM, "out of memory reading catalog %s", c->path);
  sqlite3_free(sql);
  int src = SQLITE_DONE;
  while (rc == PAGEDB_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
    memset(slot, 0, (size_t)nw * sizeof *slot);
    int64_t id = sqlite3_column_int64(st, 0);
    int64_t page = sqlite3_column_int64(st, 1), off = sqlite3_column_int64(st, 2);
    /* Formatted only for a message: a million rows load in a fraction of
    ** a second, and printing each id cost an open 8% of its time. */
    char where[64];
    /* Ids are 0..INT64_MAX (pagedb_sample_begin): the index relies on it. */
    const char *badrow = id < 0 ? "sample %s has a negative id"
      : sqlite3_column_type(st, 1) != SQLITE_INTEGER || sqlite3_column_type(st, 2) != SQLITE_INTEGER || page < 0
        || off < 0 || off >= (int64_t)page_size || (uint64_t)page > PDB_ADDR_MAX / page_size
      ? "sample %s has an invalid page or offset" : NULL;
    if (badrow) {
      snprintf(where, sizeof where, "%lld", (long long)id);
      rc = corrupt(c, m, badrow, where);
      if (!skip) break;
      rc = PAGEDB_OK;
      continue;
    }
    slot[0] = (uint64_t)id;
    slot[1] = (uint64_t)page * page_size + (uint64_t)off;
    for (int f = 0, col = 3; f < nfield && rc == PAGEDB_OK; col += is_bytes(fields[f].type) ? 3 : 1, f++) {
      int t = sqlite3_column_type(st, col), bytes = is_bytes(fields[f].type);
      const char *bad = NULL;
      if (t == SQLITE_NULL) {
        if (bytes && (sqlite3_column_type(st, col + 1) != SQLITE_NULL || sqlite3_column_type(st, col + 2) != SQLITE_NULL))
          bad = "has a stored length or checksum but no value";
      } else if (fields[f].type == PAGEDB_REAL && (t == SQLITE_FLOAT || t == SQLITE_INTEGER)) {
        double d = sqlite3_column_double(st, col);
        memcpy(slot_val(slot, nfield, f), &d, sizeof d);
      } else if (fields[f].type != PAGEDB_REAL && t == SQLITE_INTEGER) {
        int64_t iv = sqlite3_column_int64(st, col);
        *slot_val(slot, nfield, f) = (uint64_t)iv;
        if (bytes) bad = extent_of(fields[f].codec, iv, st, col, slot_ext(slot, nfield, f));
        if (!bad && fields[f].type == PAGEDB_TENSOR && !tensor_len_ok(&fields[f].tensor, (uint64_t)iv))
          bad = "has a raw length that does not fit its tensor declaration";
      } else {
        bad = "holds a value of the wrong type";
      }
      if (bad) {
        snprintf(where, sizeof where, "%lld, field %s", (long long)id, fields[f].name);
        char fmt[120];
        snprintf(fmt, sizeof fmt, "sample %%s %s", bad);
        rc = corrupt(c, m, fmt, where);
      }
      if (t != SQLITE_NULL) slot_set(slot, f);
    }
    if (rc == PAGEDB_CORRUPT_CATALOG && skip) rc = PAGEDB_OK;   /* the row is left out */
    else if (rc == PAGEDB_OK) rc = xrow(ctx, slot);
  }
  if (rc == PAGEDB_OK && src != SQLITE_DONE) rc = sq_fail(c, m, c->w, src, "reading samples");
  sqlite3_finalize(st);
  pdb_free(slot);
  return rc;
}

int cat_scan(Catalog *c, pdb_msg *m, const CatField *fields, int nfield, uint32_t page_size,
             int (*xrow)(void *ctx, uint64_t *slot), void *ctx) {
  return scan(c, m, fields, nfield, page_size, xrow, ctx, 0);
}

int cat_scan_skip(Catalog *c, pdb_msg *m, const CatField *fields, int nfield, uint32_t page_size,
                  int (*xrow)(void *ctx, uint64_t *slot), void *ctx) {
  return scan(c, m, fields, nfield, page_size, xrow, ctx, 1);
}

/*
** Begin the long write transaction unless it is open.  A transaction left
** open by a ROLLBACK that failed (out of memory) is rolled back first: none
** of it may be committed, and BEGIN would refuse to start.  A BEGIN that
** fails may leave one open too.
*/
static int begin_write(Catalog *c, pdb_msg *m) {
  if (c->in_txn) return PAGEDB_OK;
  if (!sqlite3_get_autocommit(c->w)) sqlite3_exec(c->w, "ROLLBACK", NULL, NULL, NULL);
  int rc = exec(c, m, "BEGIN IMMEDIATE", "starting a transaction");
  if (rc != PAGEDB_OK) {
    if (!sqlite3_get_autocommit(c->w)) sqlite3_exec(c->w, "ROLLBACK", NULL, NULL, NULL);
    return rc;
  }
  c->in_txn = 1;
  return PAGEDB_OK;
}

/*
** Make temp.pdb_rows and the INSERT ... SELECT that reads it.  The table is
** schema of the temp database, and DDL is transactional: made inside a
** write transaction that then rolls back (a fault, a full disk, a refused
** commit), the table is gone while the statement prepared against it
** stays.  So it is made outside any transaction where it can be, and at
** the start of each transaction a statement whose table is gone is
** finalized and made again (found by CI: fault-1.3.11).
*/
static int prepare_rows(Catalog *c, pdb_msg *m, const CatField *fields, int nfield) {
  /* A transaction left open by a failed ROLLBACK: begin_write would roll it
  ** back, and the table with it; do it first. */
  if (!c->in_txn && !sqlite3_get_autocommit(c->w)) sqlite3_exec(c->w, "ROLLBACK", NULL, NULL, NULL);
  if (c->ins_sample && !c->in_txn && sqlite3_table_column_metadata(c->w, "temp", "pdb_rows", NULL, NULL, NULL,
                                                                   NULL, NULL, NULL) != SQLITE_OK) {
    sqlite3_finalize(c->ins_sample);
    c->ins_sample = NULL;
  }
  if (c->ins_sample) return PAGEDB_OK;
  int ncol = 0;
  for (int f = 0; f < nfield; f++) ncol += is_bytes(fields[f].type) ? 3 : 1;
  int src = catb_declare(c->w, ncol);
  if (src != SQLITE_OK) return sq_fail(c, m, c->w, src, "making temp.pdb_rows");
  char *sql = sample_sql(fields, nfield, 1, 0);
  int rc = sql ? prepare(c, m, c->w, sql, &c->ins_sample)
               : pdb_err(c->db, m, PAGEDB_NOMEM, "out of memory preparing catalog inserts");
  sqlite3_free(sql);
  return rc;
}

int cat_insert_page(Catalog *c, pdb_msg *m, const PageDone *d) {
  int rc = begin_write(c, m);
  if (rc != PAGEDB_OK) return rc;
  if (!c->ins_page)
    rc = prepare(c, m, c->w, "INSERT INTO page(pgno, npages, used, nsamples) VALUES(?1, ?2, ?3, ?4)", &c->ins_page);
  if (rc != PAGEDB_OK) return rc;
  sqlite3_stmt *st = c->ins_page;
  sqlite3_bind_int64(st, 1, (int64_t)d->pgno);
  sqlite3_bind_int64(st, 2, d->npages);
  sqlite3_bind_int64(st, 3, (int64_t)d->used);
  sqlite3_bind_int64(st, 4, d->nsamples);
  int src = sqlite3_step(st);
  sqlite3_reset(st);
  return src == SQLITE_DONE ? PAGEDB_OK : sq_fail(c, m, c->w, src, "recording a page");
}

int cat_insert_run(Catalog *c, pdb_msg *m, const PageDone *d, const uint64_t *slots,
                   const CatField *fields, int nfield, uint32_t page_size) {
  int rc = prepare_rows(c, m, fields, nfield);
  if (rc == PAGEDB_OK) rc = cat_insert_page(c, m, d);
  if (rc != PAGEDB_OK || d->nsamples == 0) return rc;
  sqlite3_stmt *st = c->ins_sample;
  int src;
  catb_set(&c->rows, slots, d->nsamples, fields, nfield, page_size);
  src = sqlite3_step(st);
  uint64_t at = c->rows.at;
  sqlite3_reset(st);
  catb_set(&c->rows, NULL, 0, fields, nfield, page_size);
  if (src != SQLITE_DONE) {
    /* The row it stopped at: the sample that failed (a duplicate id...). */
    char what[80];
    int nw = slot_words(nfield);
    if (at < d->nsamples) snprintf(what, sizeof what, "recording sample %lld", (long long)slots[(size_t)at * nw]);
    else snprintf(what, sizeof what, "recording the samples of page %llu", (unsigned long long)d->pgno);
    return sq_fail(c, m, c->w, src, what);
  }
  return PAGEDB_OK;
}

int cat_commit(Catalog *c, pdb_msg *m, uint64_t committed, uint64_t nsample) {
  int rc = begin_write(c, m);
  if (rc != PAGEDB_OK) return rc;
  rc = set_meta(c, m, "committed_pages", (int64_t)committed);
  if (rc == PAGEDB_OK) rc = set_meta(c, m, "samples", (int64_t)nsample);
  if (rc == PAGEDB_OK) rc = exec(c, m, "COMMIT", "committing");
  if (rc != PAGEDB_OK && !sqlite3_get_autocommit(c->w)) sqlite3_exec(c->w, "ROLLBACK", NULL, NULL, NULL);
  c->in_txn = 0;
  return rc;
}

int cat_stage_meta(Catalog *c, pdb_msg *m, const char *key, int64_t v) {
  int rc = begin_write(c, m);
  return rc == PAGEDB_OK ? set_meta(c, m, key, v) : rc;
}

int cat_stage_meta_text(Catalog *c, pdb_msg *m, const char *key, const char *v) {
  int rc = begin_write(c, m);
  return rc == PAGEDB_OK ? run(c, m, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", "updating meta", 2,
                               "t", key, "t", v) : rc;
}

int cat_delete(Catalog *c, pdb_msg *m, const CatDel *dels, size_t n) {
  int rc = begin_write(c, m);
  if (rc != PAGEDB_OK) return rc;
  sqlite3_stmt *del = NULL, *dec = NULL, *ref = NULL;
  rc = prepare(c, m, c->w, "DELETE FROM sample WHERE id = ?1", &del);
  if (rc == PAGEDB_OK)
    rc = prepare(c, m, c->w, "UPDATE page SET nsamples = nsamples - 1 WHERE pgno = ?1 AND nsamples > 0", &dec);
  /* A sample of a part by reference has no row here: its id goes into
  ** part_deleted, which the union leaves out (doc/format.md). */
  uint64_t features = 0, ps = 0;
  if (rc == PAGEDB_OK) rc = read_features(c, m, &features);
  if (rc == PAGEDB_OK && (features & CAT_FEATURE_PARTROWS)) {
    sqlite3_stmt *st;
    rc = prepare(c, m, c->w, "SELECT value FROM meta WHERE key = 'page_size'", &st);
    if (rc == PAGEDB_OK && sqlite3_step(st) == SQLITE_ROW) ps = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc == PAGEDB_OK)
      rc = prepare(c, m, c->w, "INSERT INTO part_deleted(id) SELECT ?3 FROM part WHERE part = ?1 AND rows = 1"
                   " AND ?2 >= first_page AND ?2 < first_page + pages", &ref);
  }
  uint64_t bytes = 0;
  for (size_t i = 0; i < n && rc == PAGEDB_OK; i++) {
    char what[96];
    snprintf(what, sizeof what, "deleting sample %lld", (long long)dels[i].id);
    sqlite3_bind_int64(del, 1, dels[i].id);
    int src = sqlite3_step(del);
    sqlite3_reset(del);
    if (src != SQLITE_DONE) {
      rc = sq_fail(c, m, c->w, src, what);
      break;
    }
    if (sqlite3_changes(c->w) != 1 && ref && ps && dels[i].pgno >= DX_WIN_BASE / ps
        && dels[i].pgno <= PDB_ADDR_MAX / ps) {
      sqlite3_bind_int64(ref, 1, (int64_t)dx_part_of(dels[i].pgno * ps));
      sqlite3_bind_int64(ref, 2, (int64_t)dels[i].pgno);
      sqlite3_bind_int64(ref, 3, dels[i].id);
      src = sqlite3_step(ref);
      sqlite3_reset(ref);
      if (src != SQLITE_DONE) {
        rc = sq_fail(c, m, c->w, src, what);
        break;
      }
    }
    if (sqlite3_changes(c->w) != 1) {
      rc = corrupt(c, m, "%s: it has no row in table sample", what);
      break;
    }
    sqlite3_bind_int64(dec, 1, (int64_t)dels[i].pgno);
    src = sqlite3_step(dec);
    sqlite3_reset(dec);
    if (src != SQLITE_DONE) {
      rc = sq_fail(c, m, c->w, src, what);
    } else if (sqlite3_changes(c->w) != 1) {
      snprintf(what + strlen(what), sizeof what - strlen(what), " (page %llu)", (unsigned long long)dels[i].pgno);
      rc = corrupt(c, m, "%s: the page table counts no sample starting there", what);
    }
    bytes += dels[i].len;
  }
  sqlite3_finalize(del);
  sqlite3_finalize(dec);
  sqlite3_finalize(ref);
  /* A catalog made before deleted_bytes existed has no row: it starts at 0. */
  if (rc == PAGEDB_OK)
    rc = run(c, m, "INSERT INTO meta(key, value) VALUES('deleted_bytes', ?1)"
             " ON CONFLICT(key) DO UPDATE SET value = value + ?1", "updating meta", 1, "i", (int64_t)bytes);
  return rc;
}

int cat_peek_uuid(pagedb *db, pagedb_vfs *vfs, pdb_msg *m, const char *path, uint8_t uuid[16]) {
  Catalog *c;
  int rc = cat_open(db, vfs, m, path, CAT_READONLY, &c);
  if (rc != PAGEDB_OK) return rc;
  CatMeta meta;
  rc = load_meta(c, m, &meta);
  if (rc == PAGEDB_OK) memcpy(uuid, meta.uuid, 16);
  cat_close(c);
  return rc;
}

int cat_merge(Catalog *c, pdb_msg *m) {
  if (!c->w || sqlite3_db_readonly(c->w, "main") != 0) return PAGEDB_OK;
  /* Nothing to merge when the WAL is empty or absent (a close after no
  ** commit, or after an earlier writer's merge): no I/O at all then. */
  char wal[PATH_MAX];
  struct stat st;
  if (snprintf(wal, sizeof wal, "%s-wal", c->path) >= (int)sizeof wal || stat(wal, &st) != 0 || st.st_size == 0)
    return PAGEDB_OK;
  /* TRUNCATE: every frame copied into the catalog, the catalog synced
  ** (synchronous=FULL), then the WAL emptied.  The busy handler waits for
  ** readers on older snapshots, but not for long at a close: after it, a
  ** BUSY that left every frame copied (nckpt == nlog) still leaves the
  ** catalog file complete, and one that did not is no loss (the WAL holds
  ** the commits durably; the next writer's close merges them). */
  int nlog = -1, nckpt = -1;
  sqlite3_busy_timeout(c->w, 2000);
  int src = sqlite3_wal_checkpoint_v2(c->w, "main", SQLITE_CHECKPOINT_TRUNCATE, &nlog, &nckpt);
  sqlite3_busy_timeout(c->w, 10000);
  if (src == SQLITE_OK || (src == SQLITE_BUSY && nlog == nckpt)) return PAGEDB_OK;
  if (src == SQLITE_BUSY || src == SQLITE_LOCKED)
    return pdb_err(c->db, m, PAGEDB_BUSY,
                   "catalog %s: its WAL is not merged (%d of %d frames): another connection is reading an older"
                   " commit; every commit is durable, and the next close by a writer merges it", c->path,
                   nckpt, nlog);
  return sq_fail(c, m, c->w, src, "merging its WAL at the close");
}

int cat_checkpoint(pagedb *db, pagedb_vfs *vfs, pdb_msg *m, const char *path) {
  Catalog c = { .db = db, .vfs = vfs, .path = (char *)path };
  int rc = connect(&c, m, SQLITE_OPEN_READWRITE, &c.w);
  if (rc != PAGEDB_OK) return rc;
  /* FULL: the checkpoint syncs the catalog before it empties the WAL.
  ** TRUNCATE waits for readers (the busy timeout) and leaves an empty WAL,
  ** which the close below deletes, with the -shm, when it is the last
  ** connection: the journal mode stays WAL, so no rollback journal is ever
  ** written, which a read-only open could not replay. */
  rc = exec(&c, m, "PRAGMA synchronous=FULL", "checkpointing");
  sqlite3_stmt *st = NULL;
  if (rc == PAGEDB_OK) rc = prepare(&c, m, c.w, "PRAGMA wal_checkpoint(TRUNCATE)", &st);
  if (rc == PAGEDB_OK) {
    int src = sqlite3_step(st);
    if (src != SQLITE_ROW)
      rc = sq_fail(&c, m, c.w, src, "checkpointing");
    else if (sqlite3_column_int(st, 0) != 0)
      rc = pdb_err(db, m, PAGEDB_BUSY, "catalog %s: cannot checkpoint it: another connection is reading it", path);
  }
  sqlite3_finalize(st);
  if (sqlite3_close(c.w) != SQLITE_OK && rc == PAGEDB_OK)
    rc = pdb_err(db, m, PAGEDB_IOERR_CATALOG, "catalog %s: closing it after a checkpoint failed", path);
  return rc;
}

void cat_sealed(Catalog *c) { c->sealed = 1; }

void cat_rollback(Catalog *c) {
  /* Whether or not in_txn says so: a BEGIN that ran out of memory can fail
  ** and still leave the connection in a transaction, which every later
  ** BEGIN would then refuse. */
  if (!sqlite3_get_autocommit(c->w)) sqlite3_exec(c->w, "ROLLBACK", NULL, NULL, NULL);
  c->in_txn = 0;
}

/* The read-only connection, opened at its first use.  rmu held. */
static int read_conn(Catalog *c, pdb_msg *m) {
  if (c->r) return PAGEDB_OK;
  int rc = connect(c, m, SQLITE_OPEN_READONLY, &c->r);
  if (rc == PAGEDB_OK && sqlite3_exec(c->r, "PRAGMA query_only=1", NULL, NULL, NULL) != SQLITE_OK)
    rc = sq_fail(c, m, c->r, sqlite3_errcode(c->r), "configuring the connection");
  if (rc == PAGEDB_OK && catr_attach(c, c->r, 1, &c->rref) != SQLITE_OK)
    rc = sq_fail(c, m, c->r, sqlite3_errcode(c->r), "registering pdb_part_rows");
  if (rc != PAGEDB_OK) {
    catr_detach(c->rref);
    sqlite3_close(c->r);
    c->r = NULL;
    c->rref = NULL;
  }
  return rc;
}

/* --- for pagedb_check: the committed rows as stored ----------------------- */

_Static_assert(CAT_INTEGER == SQLITE_INTEGER && CAT_FLOAT == SQLITE_FLOAT && CAT_TEXT == SQLITE_TEXT
               && CAT_BLOB == SQLITE_BLOB && CAT_NULL == SQLITE_NULL, "CatVal types are SQLite's");

struct CatSnap {
  Catalog *c;
  sqlite3 *conn;            /* read-only, in one read transaction */
  int borrowed;             /* CONN is C's own (cat_snap_borrow): ended, not closed */
  CatRef *ref;              /* the part rows' virtual table on CONN */
};

/* A snapshot on a connection of its own, or (BORROW, and C's connection
** read-only and in no transaction) on C's. */
static int snap_open(Catalog *c, pdb_msg *m, int borrow, CatSnap **ps) {
  *ps = NULL;
  CatSnap *s = pdb_calloc(1, sizeof *s);
  if (!s) return pdb_err(c->db, m, PAGEDB_NOMEM, "out of memory reading catalog %s", c->path);
  s->c = c;
  s->borrowed = borrow && sqlite3_db_readonly(c->w, "main") == 1 && sqlite3_get_autocommit(c->w);
  int rc = PAGEDB_OK;
  if (s->borrowed) s->conn = c->w, s->ref = c->wref;
  else rc = connect(c, m, SQLITE_OPEN_READONLY, &s->conn);
  if (rc == PAGEDB_OK && !s->borrowed && catr_attach(c, s->conn, 0, &s->ref) != SQLITE_OK)
    rc = sq_fail(c, m, s->conn, sqlite3_errcode(s->conn), "registering pdb_part_rows");
  /* A deferred BEGIN takes its snapshot at the first read: do one now, so
  ** that every later statement sees this commit, whatever follows it. */
  if (rc == PAGEDB_OK) {
    int src = sqlite3_exec(s->conn, s->borrowed ? "BEGIN; SELECT count(*) FROM meta;"
                                                : "PRAGMA query_only=1; BEGIN; SELECT count(*) FROM meta;", NULL, NULL, NULL);
    if (src != SQLITE_OK) rc = sq_fail(c, m, s->conn, src, "starting a read");
  }
  if (rc != PAGEDB_OK) {
    cat_snap_close(s);
    return rc;
  }
  *ps = s;
  return PAGEDB_OK;
}

int cat_snap_open(Catalog *c, pdb_msg *m, CatSnap **ps) { return snap_open(c, m, 0, ps); }

int cat_snap_borrow(Catalog *c, pdb_msg *m, CatSnap **ps) { return snap_open(c, m, 1, ps); }

int cat_snap_backup(CatSnap *s, pdb_msg *m, const char *path) {
  sqlite3 *dst = NULL;
  /* A plain file on the default VFS: the copy is not a dataset's catalog
  ** until it is renamed or uploaded beside its data. */
  int src = sqlite3_open_v2(path, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  sqlite3_backup *b = src == SQLITE_OK ? sqlite3_backup_init(dst, "main", s->conn, "main") : NULL;
  if (b) {
    src = sqlite3_backup_step(b, -1);
    int fin = sqlite3_backup_finish(b);
    if (src == SQLITE_DONE) src = fin;
  } else if (src == SQLITE_OK) {
    src = sqlite3_errcode(dst);
  }
  int rc = PAGEDB_OK;
  if (src != SQLITE_OK)
    rc = pdb_err(s->c->db, m, src == SQLITE_NOMEM ? PAGEDB_NOMEM : src == SQLITE_FULL ? PAGEDB_FULL : PAGEDB_IOERR,
                 "copying catalog %s to %s: %s", s->c->path, path, dst ? sqlite3_errmsg(dst) : sqlite3_errstr(src));
  sqlite3_close(dst);
  return rc;
}

void cat_snap_close(CatSnap *s) {
  if (!s) return;
  if (s->conn && !sqlite3_get_autocommit(s->conn)) sqlite3_exec(s->conn, "COMMIT", NULL, NULL, NULL);
  if (!s->borrowed) {
    catr_detach(s->ref);
    sqlite3_close(s->conn);
  }
  pdb_free(s);
}

static void value_of(sqlite3_stmt *st, int col, CatVal *v) {
  v->type = sqlite3_column_type(st, col);
  v->i = sqlite3_column_int64(st, col);
  v->r = sqlite3_column_double(st, col);
}

int cat_snap_meta(CatSnap *s, pdb_msg *m, const char *key, CatVal *v, char *text, size_t cap) {
  sqlite3_stmt *st;
  memset(v, 0, sizeof *v);
  v->type = CAT_NULL;
  if (cap) text[0] = 0;
  int rc = prepare(s->c, m, s->conn, "SELECT value FROM meta WHERE key = ?1", &st);
  if (rc != PAGEDB_OK) return rc;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW) {
    value_of(st, 0, v);
    if (v->type == CAT_TEXT && cap) snprintf(text, cap, "%s", (const char *)sqlite3_column_text(st, 0));
  } else if (src != SQLITE_DONE) {
    rc = sq_fail(s->c, m, s->conn, src, "reading meta");
  }
  sqlite3_finalize(st);
  return rc;
}

/* Step ST to its end, calling XROW with the N values of each row. */
static int snap_rows(CatSnap *s, pdb_msg *m, sqlite3_stmt *st, int n, const char *doing,
                     int (*xrow)(void *ctx, const CatVal *v, int n), void *ctx) {
  CatVal *v = pdb_malloc((size_t)n * sizeof *v);
  if (!v) return pdb_err(s->c->db, m, PAGEDB_NOMEM, "out of memory %s", doing);
  int rc = PAGEDB_OK, src;
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    for (int i = 0; i < n; i++) value_of(st, i, &v[i]);
    rc = xrow(ctx, v, n);
    if (rc != PAGEDB_OK) break;
  }
  if (rc == PAGEDB_OK && src != SQLITE_DONE) rc = sq_fail(s->c, m, s->conn, src, doing);
  pdb_free(v);
  return rc;
}

typedef struct PageRowFn {
  int (*xrow)(void *ctx, const CatVal *v);
  void *ctx;
} PageRowFn;

static int page_row(void *ctx, const CatVal *v, int n) {
  PageRowFn *f = ctx;
  (void)n;
  return f->xrow(f->ctx, v);
}

int cat_snap_pages(CatSnap *s, pdb_msg *m, int (*xrow)(void *ctx, const CatVal *v), void *ctx) {
  sqlite3_stmt *st;
  int rc = prepare(s->c, m, s->conn, "SELECT pgno, npages, used, nsamples FROM page ORDER BY pgno", &st);
  if (rc != PAGEDB_OK) return rc;
  PageRowFn f = { xrow, ctx };
  rc = snap_rows(s, m, st, 4, "reading the page table", page_row, &f);
  sqlite3_finalize(st);
  return rc;
}

int cat_snap_seal(CatSnap *s, pdb_msg *m, const uint8_t uuid[16], uint64_t ps, uint64_t d, uint64_t *seal) {
  int src = catx_seal(s->conn, uuid, ps, d, seal);
  return src == SQLITE_OK ? PAGEDB_OK : sq_fail(s->c, m, s->conn, src, "reading its meta and page table for its seal");
}

int cat_snap_samples(CatSnap *s, pdb_msg *m, const CatField *fields, int nfield,
                     int (*xrow)(void *ctx, const CatVal *v, int n), void *ctx) {
  int parts = 0, rc = catr_ready(s->ref, m, &parts);
  if (rc != PAGEDB_OK) return rc;
  char *base = sample_sql(fields, nfield, 0, parts);
  char *sql = base ? sqlite3_mprintf("%s ORDER BY page, off, id", base) : NULL;
  sqlite3_free(base);
  if (!sql) return pdb_err(s->c->db, m, PAGEDB_NOMEM, "out of memory reading catalog %s", s->c->path);
  int n = 3;
  for (int f = 0; f < nfield; f++) n += is_bytes(fields[f].type) ? 3 : 1;
  sqlite3_stmt *st;
  rc = prepare(s->c, m, s->conn, sql, &st);
  sqlite3_free(sql);
  if (rc != PAGEDB_OK) return rc;
  rc = snap_rows(s, m, st, n, "reading samples", xrow, ctx);
  sqlite3_finalize(st);
  return rc;
}

/* --- for catextra.c (catalogInt.h) --------------------------------------- */

sqlite3 *catx_w(Catalog *c) { return c->w; }
int catx_has_parts(Catalog *c) { return c->has_parts; }
int catx_begin_write(Catalog *c, pdb_msg *m) { return begin_write(c, m); }
void catx_end_write(Catalog *c) { c->in_txn = 0; }
pagedb *catx_db(Catalog *c) { return c->db; }
pagedb_vfs *catx_vfs(Catalog *c) { return c->vfs; }
CatRef *catx_wref(Catalog *c) { return c->wref; }
const char *catx_path(Catalog *c) { return c->path; }
int catx_exec(Catalog *c, pdb_msg *m, const char *sql, const char *doing) { return exec(c, m, sql, doing); }
int catx_prepare(Catalog *c, pdb_msg *m, sqlite3 *conn, const char *sql, sqlite3_stmt **st) {
  return prepare(c, m, conn, sql, st);
}
int catx_fail(Catalog *c, pdb_msg *m, sqlite3 *conn, int src, const char *doing) {
  return sq_fail(c, m, conn, src, doing);
}
int catx_corrupt(Catalog *c, pdb_msg *m, const char *what) { return corrupt(c, m, "%s", what); }

int catx_read_begin(Catalog *c, pdb_msg *m, sqlite3 **conn) {
  pthread_mutex_lock(&c->rmu);
  int rc = read_conn(c, m), on;
  if (rc == PAGEDB_OK) rc = catr_ready(c->rref, m, &on);
  *conn = rc == PAGEDB_OK ? c->r : NULL;
  if (rc != PAGEDB_OK) pthread_mutex_unlock(&c->rmu);
  return rc;
}

void catx_read_end(Catalog *c) { pthread_mutex_unlock(&c->rmu); }

/* --- table part (doc/format.md, "Parts") ---------------------------------- */

int cat_add_meta(Catalog *c, pdb_msg *m, const char *key, int64_t v) {
  int rc = begin_write(c, m);
  return rc == PAGEDB_OK ? run(c, m, "UPDATE meta SET value = value + ?2 WHERE key = ?1", "updating meta", 2, "t", key,
                               "i", v) : rc;
}

void cat_note_parts(Catalog *c) { c->has_parts = 1; }

int cat_snap_parts(CatSnap *s, pdb_msg *m, int (*xrow)(void *ctx, const CatPart *p), void *ctx) {
  return catx_parts_on(s->c, s->conn, m, xrow, ctx);
}
