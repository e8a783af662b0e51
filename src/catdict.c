/*
** catdict.c -- table pagedb_dict of the catalog: the zstd dictionaries of
** fields with codec zstd-dict (issue 28, doc/format.md "Dictionaries").
**
** One row a dictionary: its field's number, its id (the id its bytes and
** every zstd frame made with it carry), the bytes, and their XXH3-64.  The
** table is made by the first commit that stores a dictionary, in that
** commit's transaction; rows are only ever added (a retrained dictionary
** is a new row: older values still name the old one).  Rows are not
** trusted here: dict.c checks each against its field, checksum and header.
*/
#include "catalogInt.h"

#include <stdio.h>

int cat_dicts(Catalog *c, pdb_msg *m,
              int (*xrow)(void *ctx, int64_t field, int64_t id, const void *b, size_t n, int has_sum, int64_t sum),
              void *ctx) {
  sqlite3_stmt *st;
  int rc = catx_prepare(c, m, catx_w(c), "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'pagedb_dict'",
                        &st);
  if (rc != PAGEDB_OK) return rc;
  int have = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
  sqlite3_finalize(st);
  if (!have) return PAGEDB_OK;
  rc = catx_prepare(c, m, catx_w(c), "SELECT field, id, bytes, sum FROM pagedb_dict ORDER BY rowid", &st);
  if (rc != PAGEDB_OK) return rc;
  int src;
  while (rc == PAGEDB_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
    if (sqlite3_column_type(st, 0) != SQLITE_INTEGER || sqlite3_column_type(st, 1) != SQLITE_INTEGER) {
      rc = catx_corrupt(c, m, "table pagedb_dict has a row without an integer field and id");
      break;
    }
    const void *b = sqlite3_column_blob(st, 2);
    size_t n = (size_t)sqlite3_column_bytes(st, 2);
    int has_sum = sqlite3_column_type(st, 3) == SQLITE_INTEGER;
    rc = xrow(ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), b, b ? n : 0, has_sum,
              sqlite3_column_int64(st, 3));
  }
  if (rc == PAGEDB_OK && src != SQLITE_DONE) rc = catx_fail(c, m, catx_w(c), src, "reading table pagedb_dict");
  sqlite3_finalize(st);
  return rc;
}

int cat_put_dict(Catalog *c, pdb_msg *m, int field, uint32_t id, const void *b, size_t n, uint64_t sum) {
  int rc = catx_begin_write(c, m);
  if (rc == PAGEDB_OK)
    rc = catx_exec(c, m, "CREATE TABLE IF NOT EXISTS pagedb_dict (field INTEGER NOT NULL, id INTEGER NOT NULL,"
                   " bytes BLOB NOT NULL, sum INTEGER NOT NULL, PRIMARY KEY (field, id))", "making table pagedb_dict");
  sqlite3_stmt *st;
  if (rc == PAGEDB_OK) rc = catx_prepare(c, m, catx_w(c), "INSERT INTO pagedb_dict VALUES (?1, ?2, ?3, ?4)", &st);
  if (rc != PAGEDB_OK) return rc;
  sqlite3_bind_int(st, 1, field);
  sqlite3_bind_int64(st, 2, id);
  sqlite3_bind_blob(st, 3, b, (int)n, SQLITE_STATIC);
  sqlite3_bind_int64(st, 4, (int64_t)sum);
  int src = sqlite3_step(st);
  sqlite3_finalize(st);
  if (src != SQLITE_DONE) {
    char what[80];
    snprintf(what, sizeof what, "storing dictionary %u of field %d", id, field);
    rc = catx_fail(c, m, catx_w(c), src, what);
  }
  return rc;
}
