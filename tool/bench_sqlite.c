/*
** bench_sqlite.c -- SQLite as a BLOB store, for pagedb-bench (bench_kv.c
** drives it; see KvSys in bench.h).
**
** One table, t(id INTEGER PRIMARY KEY, label INTEGER, data BLOB): the id is
** the rowid, so a lookup is one B-tree descent.  The database is in WAL mode
** with synchronous=FULL, so that every commit is durable, as pagedb_commit
** is.  Each writer has its own connection (SQLITE_OPEN_NOMUTEX: one thread
** each) and a prepared INSERT, bound with SQLITE_STATIC (no copy of the
** sample before SQLite's own), inside BEGIN ... COMMIT per batch.  Reads go
** by rowid through one incremental-BLOB handle, sqlite3_blob_open once and
** sqlite3_blob_reopen per sample, and sqlite3_blob_read into a buffer: a
** copy, as pagedb's PAGEDB_READ_COPY.  Readers map the database
** (PRAGMA mmap_size, up to its file size) so that its pages are not copied
** into SQLite's cache first.  Page size and the rest: SQLite's defaults.
*/
#define _GNU_SOURCE
#include "bench.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const azSuffix[] = { "", "-wal", "-shm", "-journal", 0 };

typedef struct SqlStore {
  sqlite3 *db;                  /* held open for the store's life */
  char zPath[PATH_MAX + 64];
  size_t maxSize;               /* the largest sample: the readers' buffer */
} SqlStore;

typedef struct SqlWriter {
  sqlite3 *db;
  sqlite3_stmt *pBegin, *pInsert, *pCommit;
} SqlWriter;

typedef struct SqlReader {
  sqlite3 *db;
  sqlite3_blob *pBlob;          /* 0 until the first read, and after a failed one */
  sqlite3_stmt *pLabel;
  uint8_t *buf;
} SqlReader;

/* zErr = WHAT: SQLite's message for DB (or RC's name). */
static int sqlErr(sqlite3 *db, int rc, const char *zWhat, char *zErr){
  snprintf(zErr, KV_ERR, "%s: %s (%s)", zWhat, db ? sqlite3_errmsg(db) : "no connection",
           sqlite3_errstr(rc));
  return 1;
}

/* Open a connection to zPath; run the statements of zSql.  0 on success. */
static int sqlConnect(const char *zPath, int flags, const char *zSql, sqlite3 **pDb, char *zErr){
  int rc = sqlite3_open_v2(zPath, pDb, flags | SQLITE_OPEN_NOMUTEX, 0);
  if( rc == SQLITE_OK ) sqlite3_busy_timeout(*pDb, 60000);
  if( rc == SQLITE_OK ) rc = sqlite3_exec(*pDb, zSql, 0, 0, 0);
  if( rc == SQLITE_OK ) return 0;
  sqlErr(*pDb, rc, zPath, zErr);
  sqlite3_close(*pDb);
  *pDb = 0;
  return 1;
}

static int sqlOpen(Run *r, const char *zPath, int create, void **ppStore, char *zErr){
  SqlStore *p = calloc(1, sizeof *p);
  if( p == 0 ){ snprintf(zErr, KV_ERR, "out of memory"); return 1; }
  snprintf(p->zPath, sizeof p->zPath, "%s", zPath);
  p->maxSize = (size_t)wl_max_size(&r->w);
  const char *zSql = create
    ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
      "CREATE TABLE t(id INTEGER PRIMARY KEY, label INTEGER, data BLOB);"
    : "PRAGMA synchronous=FULL;";
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if( sqlConnect(zPath, flags, zSql, &p->db, zErr) ){ free(p); return 1; }
  *ppStore = p;
  return 0;
}

/* The last connection to close checkpoints the WAL into the database. */
static int sqlClose(void *pStore, char *zErr){
  SqlStore *p = pStore;
  int rc = sqlite3_close(p->db);
  if( rc ) sqlErr(p->db, rc, "sqlite3_close", zErr);
  free(p);
  return rc != SQLITE_OK;
}

static void sqlWriterClose(void *pW){
  SqlWriter *w = pW;
  sqlite3_finalize(w->pBegin);
  sqlite3_finalize(w->pInsert);
  sqlite3_finalize(w->pCommit);
  sqlite3_close(w->db);
  free(w);
}

static int sqlWriterOpen(void *pStore, void **ppW, char *zErr){
  SqlStore *p = pStore;
  SqlWriter *w = calloc(1, sizeof *w);
  if( w == 0 ){ snprintf(zErr, KV_ERR, "out of memory"); return 1; }
  if( sqlConnect(p->zPath, SQLITE_OPEN_READWRITE, "PRAGMA synchronous=FULL;", &w->db, zErr) ){
    free(w);
    return 1;
  }
  int rc = sqlite3_prepare_v2(w->db, "BEGIN", -1, &w->pBegin, 0);
  if( rc == SQLITE_OK ) rc = sqlite3_prepare_v2(w->db, "COMMIT", -1, &w->pCommit, 0);
  if( rc == SQLITE_OK ){
    rc = sqlite3_prepare_v2(w->db, "INSERT INTO t(id, label, data) VALUES(?1, ?2, ?3)", -1,
                            &w->pInsert, 0);
  }
  if( rc ){
    sqlErr(w->db, rc, "prepare", zErr);
    sqlWriterClose(w);
    return 1;
  }
  *ppW = w;
  return 0;
}

/* Step a statement that returns no row, and reset it. */
static int sqlStep(sqlite3_stmt *pStmt){
  int rc = sqlite3_step(pStmt);
  sqlite3_reset(pStmt);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int sqlWriteBatch(void *pW, Run *r, int64_t i0, int64_t i1, const uint8_t *buf, char *zErr){
  SqlWriter *w = pW;
  int rc = sqlStep(w->pBegin);
  if( rc ) return sqlErr(w->db, rc, "BEGIN", zErr);
  for(int64_t i = i0; i < i1; i++){
    sqlite3_bind_int64(w->pInsert, 1, i);
    sqlite3_bind_int64(w->pInsert, 2, wl_label(&r->w, i));
    sqlite3_bind_blob64(w->pInsert, 3, buf + (r->aOff[i] - r->aOff[i0]), r->aSize[i], SQLITE_STATIC);
    if( (rc = sqlStep(w->pInsert)) != SQLITE_OK ){
      char z[64];
      snprintf(z, sizeof z, "INSERT of sample %lld", (long long)i);
      sqlErr(w->db, rc, z, zErr);
      sqlite3_exec(w->db, "ROLLBACK", 0, 0, 0);
      return 1;
    }
  }
  rc = sqlStep(w->pCommit);
  return rc ? sqlErr(w->db, rc, "COMMIT", zErr) : 0;
}

static void sqlReaderClose(void *pR){
  SqlReader *q = pR;
  sqlite3_blob_close(q->pBlob);
  sqlite3_finalize(q->pLabel);
  free(q->buf);
  free(q);
}

static int sqlReaderOpen(void *pStore, void **ppR, char *zErr){
  SqlStore *p = pStore;
  SqlReader *q = calloc(1, sizeof *q);
  struct stat st;
  char zSql[64];
  if( q == 0 || (q->buf = malloc(p->maxSize)) == 0 ){
    free(q);
    snprintf(zErr, KV_ERR, "out of memory");
    return 1;
  }
  q->db = p->db;
  snprintf(zSql, sizeof zSql, "PRAGMA mmap_size=%lld",
           stat(p->zPath, &st) ? 0LL : (long long)st.st_size);
  int rc = sqlite3_exec(q->db, zSql, 0, 0, 0);
  if( rc == SQLITE_OK ){
    rc = sqlite3_prepare_v2(q->db, "SELECT label FROM t WHERE id=?1", -1, &q->pLabel, 0);
  }
  if( rc ){
    sqlErr(q->db, rc, "reader", zErr);
    sqlReaderClose(q);
    return 1;
  }
  *ppR = q;
  return 0;
}

static int sqlGet(void *pR, int64_t id, const void **pp, size_t *pn, char *zErr){
  SqlReader *q = pR;
  int rc = q->pBlob ? sqlite3_blob_reopen(q->pBlob, id)
                    : sqlite3_blob_open(q->db, "main", "t", "data", id, 0, &q->pBlob);
  int n = rc == SQLITE_OK ? sqlite3_blob_bytes(q->pBlob) : 0;
  if( rc == SQLITE_OK ) rc = sqlite3_blob_read(q->pBlob, q->buf, n, 0);
  if( rc ){
    char z[64];
    snprintf(z, sizeof z, "sqlite3_blob_read of rowid %lld", (long long)id);
    sqlErr(q->db, rc, z, zErr);
    sqlite3_blob_close(q->pBlob);     /* a failed reopen leaves it unusable */
    q->pBlob = 0;
    return 1;
  }
  *pp = q->buf;
  *pn = (size_t)n;
  return 0;
}

static int sqlLabel(void *pR, int64_t id, int64_t *pLabel, char *zErr){
  SqlReader *q = pR;
  sqlite3_bind_int64(q->pLabel, 1, id);
  int rc = sqlite3_step(q->pLabel);
  if( rc == SQLITE_ROW ) *pLabel = sqlite3_column_int64(q->pLabel, 0);
  sqlite3_reset(q->pLabel);
  return rc == SQLITE_ROW ? 0 : sqlErr(q->db, rc, "SELECT label", zErr);
}

const KvSys kvSqlite = {
  "sqlite",
  "SQLite " SQLITE_VERSION ": table t(id INTEGER PRIMARY KEY, label INTEGER, data BLOB), WAL,"
  " synchronous=FULL, a prepared INSERT per sample, a transaction per batch;\n"
  "  reads by rowid: sqlite3_blob_reopen + sqlite3_blob_read into a buffer, mmap_size = the file",
  "sqlite3_blob_read", 0,
  azSuffix,
  sqlOpen, sqlClose,
  sqlWriterOpen, sqlWriteBatch, sqlWriterClose,
  sqlReaderOpen, sqlGet, sqlLabel, sqlReaderClose
};
