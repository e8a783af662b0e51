/*
** error.c -- result codes, their names, and error messages.
**
** One X-macro table generates pagedb_errname() and pagedb_errstr(), so the
** codes, names and descriptions never drift apart.
**
** Messages are kept per handle (writers and readers own a pdb_msg) and per
** thread: pagedb_errmsg(db) answers with the calling thread's most recent
** failure on DB, so threads that share a pagedb handle never overwrite each
** other's message and no lock is needed.
*/
#include <xxhash.h>
#include "pagedbInt.h"

#include <stdio.h>
#include <sys/random.h>

#define PDB_CODES(X) \
  X(PAGEDB_OK,                "not an error") \
  X(PAGEDB_ERROR,             "SQL or generic error") \
  X(PAGEDB_NOMEM,             "out of memory") \
  X(PAGEDB_IOERR,             "disk I/O error") \
  X(PAGEDB_CORRUPT,           "dataset is damaged") \
  X(PAGEDB_NOTFOUND,          "no such sample or value") \
  X(PAGEDB_FULL,              "disk or id space full") \
  X(PAGEDB_CONSTRAINT,        "sample id already used") \
  X(PAGEDB_MISUSE,            "bad use of the API") \
  X(PAGEDB_TOOBIG,            "size out of bounds") \
  X(PAGEDB_READONLY,          "dataset is read-only") \
  X(PAGEDB_BUSY,              "dataset is locked by another writer") \
  X(PAGEDB_CANTOPEN,          "unable to open file") \
  X(PAGEDB_NOTADB,            "not a pagedb dataset") \
  X(PAGEDB_MISMATCH,          "field type mismatch") \
  X(PAGEDB_RANGE,             "field number out of range") \
  X(PAGEDB_IOERR_READ,        "read failed") \
  X(PAGEDB_IOERR_SHORT_READ,  "read past end of file") \
  X(PAGEDB_IOERR_WRITE,       "write failed") \
  X(PAGEDB_IOERR_SYNC,        "sync failed") \
  X(PAGEDB_IOERR_TRUNCATE,    "truncate failed") \
  X(PAGEDB_IOERR_FSTAT,       "fstat failed") \
  X(PAGEDB_IOERR_LOCK,        "file locking failed") \
  X(PAGEDB_IOERR_MMAP,        "mmap failed") \
  X(PAGEDB_IOERR_CATALOG,     "catalog I/O failed") \
  X(PAGEDB_IOERR_REMOTE,      "a remote server failed the read") \
  X(PAGEDB_IOERR_CHANGED,     "the remote object changed") \
  X(PAGEDB_CORRUPT_HEADER,    "data file header is damaged") \
  X(PAGEDB_CORRUPT_TRUNCATED, "data file is truncated") \
  X(PAGEDB_CORRUPT_CATALOG,   "catalog is inconsistent") \
  X(PAGEDB_CORRUPT_INDEX,     "index file is damaged or stale") \
  X(PAGEDB_NOTADB_VERSION,    "format version too new") \
  X(PAGEDB_NOTADB_MISMATCH,   "catalog of another data file") \
  X(PAGEDB_BUSY_LOCKED,       "another writer holds the dataset") \
  X(PAGEDB_CANTOPEN_NOENT,    "no such file") \
  X(PAGEDB_CANTOPEN_DIRECT,   "the file system refuses O_DIRECT") \
  X(PAGEDB_CANTOPEN_URING,    "the kernel refuses io_uring")

const char *pagedb_errname(int rc) {
  switch (rc) {
#define X(code, text) case code: return #code;
    PDB_CODES(X)
#undef X
  }
  return "PAGEDB_UNKNOWN";
}

const char *pagedb_errstr(int rc) {
  switch (rc) {
#define X(code, text) case code: return text;
    PDB_CODES(X)
#undef X
  }
  return "unknown error";
}

const char *pagedb_libversion(void) { return PAGEDB_VERSION; }

/* The calling thread's most recent failure, tagged with its handle. */
static _Thread_local struct {
  const pagedb *db;
  pdb_msg m;
} last;

static void keep(pagedb *db, pdb_msg *m, int rc, const char *text) {
  last.db = db;
  last.m.rc = rc;
  if (text != last.m.text) snprintf(last.m.text, sizeof last.m.text, "%s", text);
  if (m && m != &last.m) {
    m->rc = rc;
    if (m->text != text) snprintf(m->text, sizeof m->text, "%s", text);
  }
}

int pdb_err(pagedb *db, pdb_msg *m, int rc, const char *fmt, ...) {
  assert(rc != PAGEDB_OK);
  char buf[PDB_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  keep(db, m, rc, buf);
  return rc;
}

int pdb_err_copy(pagedb *db, pdb_msg *m, const pdb_msg *src) {
  keep(db, m, src->rc, src->text);
  return src->rc;
}

void pdb_err_forget(const pagedb *db) {
  if (last.db == db) {
    last.db = NULL;
    last.m.rc = PAGEDB_OK;
  }
}

const char *pdb_msg_text(const pdb_msg *m) {
  return m->rc == PAGEDB_OK ? "not an error" : m->text;
}

const char *pagedb_errmsg(pagedb *db) {
  if (last.db == db && last.m.rc != PAGEDB_OK) return last.m.text;
  return db ? "not an error" : "out of memory";
}

uint64_t pdb_sum(const void *p, size_t n) { return XXH3_64bits(p, n); }

uint64_t pdb_checksum(const void *p, size_t n) {
  const uint8_t *b = p;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) h = pdb_mix64(h ^ pdb_get64(b + i));
  uint64_t tail = 0;
  for (size_t k = 0; i < n; i++, k++) tail |= (uint64_t)b[i] << (8 * k);
  return pdb_mix64(h ^ tail ^ 0xa0761d6478bd642full);
}

void pdb_random(void *p, size_t n) {
  uint8_t *b = p;
  while (n > 0) {
    ssize_t got = getrandom(b, n, 0);
    if (got <= 0) break;
    b += got;
    n -= (size_t)got;
  }
  /* getrandom() cannot fail for 16 bytes on Linux >= 3.17 once the pool is
  ** initialised; if it ever does, a time-and-address mix still makes uuids
  ** distinct enough to tell datasets apart. */
  if (n > 0) {
    uint64_t s = (uint64_t)(uintptr_t)p ^ (uint64_t)n;
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)pdb_mix64(s + i);
  }
}

void pdb_uuid_hex(const uint8_t uuid[16], char out[33]) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = hex[uuid[i] >> 4];
    out[2 * i + 1] = hex[uuid[i] & 15];
  }
  out[32] = 0;
}

int pdb_uuid_parse(const char *hex, uint8_t uuid[16]) {
  if (!hex || strlen(hex) != 32) return 0;
  for (int i = 0; i < 32; i++) {
    int c = hex[i], v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return 0;
    if (i % 2 == 0) uuid[i / 2] = (uint8_t)(v << 4);
    else uuid[i / 2] |= (uint8_t)v;
  }
  return 1;
}
