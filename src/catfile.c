/*
** catfile.c -- a catalog read or changed by its path, without a Catalog:
** for what looks at a dataset it has not opened (the orphan cleanup, the
** commit and push on object storage, which work on downloaded copies).
** Each call opens its own SQLite connection and closes it before
** returning; a failure's message names the catalog and what was being
** read.
*/
#include "catalog.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

int cat_file_meta_text(const char *path, const char *key, char *out, size_t cap, char *msg, size_t mcap) {
  sqlite3 *d = NULL;
  sqlite3_stmt *st = NULL;
  out[0] = 0;
  int src = sqlite3_open_v2(path, &d, SQLITE_OPEN_READONLY, NULL);
  if (src == SQLITE_OK) src = sqlite3_prepare_v2(d, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL);
  if (src == SQLITE_OK) {
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    src = sqlite3_step(st);
    if (src == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT)
      snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    if (src == SQLITE_ROW) src = SQLITE_DONE;
  }
  int rc = src == SQLITE_DONE ? PAGEDB_OK : src == SQLITE_CANTOPEN ? PAGEDB_CANTOPEN : PAGEDB_CORRUPT_CATALOG;
  if (rc != PAGEDB_OK) snprintf(msg, mcap, "catalog %s: reading meta.%s: %s", path, key, d ? sqlite3_errmsg(d) : "out of memory");
  sqlite3_finalize(st);
  sqlite3_close(d);
  return rc;
}

int cat_file_part_rows(const char *path, int (*each)(void *ctx, int64_t k, const char *uuid, const char *uri), void *ctx,
                       char *msg, size_t mcap) {
  sqlite3 *d = NULL;
  sqlite3_stmt *st = NULL;
  int rc = PAGEDB_OK;
  int src = sqlite3_open_v2(path, &d, SQLITE_OPEN_READONLY, NULL);
  if (src == SQLITE_OK)
    src = sqlite3_prepare_v2(d, "SELECT part, uuid, uri FROM part WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'parts')"
                             " ORDER BY part", -1, &st, NULL);
  /* No table part: no part was ever committed. */
  if (src == SQLITE_ERROR && d && strstr(sqlite3_errmsg(d), "no such table")) src = SQLITE_DONE;
  while (src == SQLITE_OK || src == SQLITE_ROW) {
    src = st ? sqlite3_step(st) : SQLITE_DONE;
    if (src != SQLITE_ROW) break;
    const char *u = (const char *)sqlite3_column_text(st, 1), *uri = (const char *)sqlite3_column_text(st, 2);
    if (u && uri && (rc = each(ctx, sqlite3_column_int64(st, 0), u, uri)) != PAGEDB_OK) break;
  }
  if (rc == PAGEDB_OK && src != SQLITE_DONE) {
    rc = src == SQLITE_CANTOPEN ? PAGEDB_CANTOPEN : PAGEDB_CORRUPT_CATALOG;
    snprintf(msg, mcap, "catalog %s: reading table part: %s", path, d ? sqlite3_errmsg(d) : "out of memory");
  }
  sqlite3_finalize(st);
  sqlite3_close(d);
  return rc;
}

/* cat_file_parts through cat_file_part_rows. */
typedef struct UuidEach {
  int (*each)(void *ctx, const char *uuid);
  void *ctx;
} UuidEach;

static int uuid_each(void *ctx, int64_t k, const char *uuid, const char *uri) {
  (void)k;
  (void)uri;
  UuidEach *u = ctx;
  return u->each(u->ctx, uuid);
}

int cat_file_parts(const char *path, int (*each)(void *ctx, const char *uuid), void *ctx, char *msg, size_t mcap) {
  UuidEach u = { each, ctx };
  return cat_file_part_rows(path, uuid_each, &u, msg, mcap);
}

int cat_file_push_fix(const char *path, const int64_t *k, char *const *val, size_t n, int drop_index,
                      const int64_t *ixv, char *msg, size_t mcap) {
  sqlite3 *d = NULL;
  sqlite3_stmt *st = NULL;
  int src = sqlite3_open_v2(path, &d, SQLITE_OPEN_READWRITE, NULL);
  if (src == SQLITE_OK) src = sqlite3_exec(d, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (src == SQLITE_OK && n) src = sqlite3_prepare_v2(d, "UPDATE part SET validator = ?2 WHERE part = ?1", -1, &st, NULL);
  for (size_t i = 0; src == SQLITE_OK && i < n; i++) {
    sqlite3_bind_int64(st, 1, k[i]);
    if (val[i]) sqlite3_bind_text(st, 2, val[i], -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, 2);
    src = sqlite3_step(st);
    if (src == SQLITE_DONE) src = sqlite3_changes(d) == 1 ? SQLITE_OK : SQLITE_NOTFOUND;
    sqlite3_reset(st);
  }
  if (src == SQLITE_OK && drop_index)
    src = sqlite3_exec(d, drop_index == 1 ? "DELETE FROM meta WHERE key = 'index_file'"
                          : "DELETE FROM meta WHERE key IN ('index_id', 'index_dir', 'index_len', 'index_samples',"
                            " 'index_pages', 'index_file')", NULL, NULL, NULL);
  sqlite3_finalize(st);
  st = NULL;
  static const char *const ixkeys[] = { "index_id", "index_dir", "index_len", "index_samples", "index_pages" };
  if (src == SQLITE_OK && ixv)
    src = sqlite3_prepare_v2(d, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", -1, &st, NULL);
  for (int i = 0; src == SQLITE_OK && ixv && i < 5; i++) {
    sqlite3_bind_text(st, 1, ixkeys[i], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, ixv[i]);
    src = sqlite3_step(st);
    if (src == SQLITE_DONE) src = SQLITE_OK;
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  if (src == SQLITE_OK) src = sqlite3_exec(d, "COMMIT", NULL, NULL, NULL);
  int rc = src == SQLITE_OK ? PAGEDB_OK : src == SQLITE_CANTOPEN ? PAGEDB_CANTOPEN : PAGEDB_CORRUPT_CATALOG;
  if (rc != PAGEDB_OK)
    snprintf(msg, mcap, "catalog %s: recording the pushed parts: %s", path,
             src == SQLITE_NOTFOUND ? "a part has no row" : d ? sqlite3_errmsg(d) : "out of memory");
  sqlite3_close(d);   /* an open transaction rolls back */
  return rc;
}
