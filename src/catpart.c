/*
** catpart.c -- table part of the catalog (doc/format.md, "Parts"): one row
** per committed part, made by the commit that adds it and never changed
** (but for rows and id_delta, zeroed once by the update that copies a part
** by reference's rows in: catsql.c);
** its UNIQUE constraints refuse a part named twice (by uuid, location or
** name) inside the commit's transaction.  Every row read is checked for
** its types before it is trusted.  Through catalogInt.h's helpers only.
*/
#include "catalog.h"
#include "catalogInt.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#define PART_SCHEMA \
  "CREATE TABLE part(part INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, uri TEXT NOT NULL UNIQUE," \
  " name TEXT UNIQUE, first_page INTEGER NOT NULL, pages INTEGER NOT NULL, data_off INTEGER NOT NULL," \
  " data_end INTEGER NOT NULL, samples INTEGER NOT NULL, id_min INTEGER, id_max INTEGER," \
  " seal INTEGER NOT NULL, validator TEXT, committed INTEGER NOT NULL)"

int cat_part_known(Catalog *c, pdb_msg *m, const char *uuid, const char *name, char *what, size_t cap) {
  sqlite3_stmt *st;
  what[0] = 0;
  int rc = catx_prepare(c, m, catx_w(c), "SELECT part, uuid = ?1 FROM part WHERE uuid = ?1 OR name = ?2 LIMIT 1", &st);
  if (rc != PAGEDB_OK) return rc;
  sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
  if (name) sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW)
    snprintf(what, cap, "part %lld, by %s", (long long)sqlite3_column_int64(st, 0),
             sqlite3_column_int(st, 1) ? "uuid" : "name");
  else if (src != SQLITE_DONE)
    rc = catx_fail(c, m, catx_w(c), src, "reading table part");
  sqlite3_finalize(st);
  return rc;
}

int cat_has_part_table(Catalog *c, pdb_msg *m, int *has) {
  sqlite3_stmt *st;
  *has = 0;
  int rc = catx_prepare(c, m, catx_w(c), "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND lower(name) = 'part'", &st);
  if (rc != PAGEDB_OK) return rc;
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW) *has = 1;
  else if (src != SQLITE_DONE) rc = catx_fail(c, m, catx_w(c), src, "reading the schema");
  sqlite3_finalize(st);
  return rc;
}

int cat_insert_part(Catalog *c, pdb_msg *m, int first, const CatPart *p) {
  int rc = catx_begin_write(c, m);
  if (rc != PAGEDB_OK) return rc;
  if (first) {
    int has;
    rc = cat_has_part_table(c, m, &has);
    if (rc == PAGEDB_OK && has)
      return pdb_err(catx_db(c), m, PAGEDB_CONSTRAINT, "catalog %s has a user table named 'part', the name of pagedb's"
                     " table of parts: rename it (pagedb_sql_user) before committing parts", catx_path(c));
    if (rc == PAGEDB_OK) rc = catx_exec(c, m, PART_SCHEMA, "making table part");
    if (rc != PAGEDB_OK) return rc;
  }
  /* The first part by reference: table part gains its columns. */
  if (p->rows && (rc = cat_part_rows_on(c, m)) != PAGEDB_OK) return rc;
  sqlite3_stmt *st;
  /* Columns rows and id_delta (feature bit 2) named only for a part by
  ** reference: a part copied into a catalog without them is as before. */
  rc = catx_prepare(c, m, catx_w(c), p->rows
                    ? "INSERT INTO part(part, uuid, uri, name, first_page, pages, data_off, data_end, samples, id_min,"
                      " id_max, seal, validator, committed, rows, id_delta)"
                      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 1, ?15)"
                    : "INSERT INTO part(part, uuid, uri, name, first_page, pages, data_off, data_end, samples, id_min,"
                      " id_max, seal, validator, committed)"
                      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)", &st);
  if (rc != PAGEDB_OK) return rc;
  if (p->rows) sqlite3_bind_int64(st, 15, p->id_delta);
  sqlite3_bind_int64(st, 1, (int64_t)p->k);
  sqlite3_bind_text(st, 2, p->uuid, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, p->uri, -1, SQLITE_STATIC);
  if (p->name) sqlite3_bind_text(st, 4, p->name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, (int64_t)p->first_page);
  sqlite3_bind_int64(st, 6, (int64_t)p->pages);
  sqlite3_bind_int64(st, 7, (int64_t)p->data_off);
  sqlite3_bind_int64(st, 8, (int64_t)p->data_end);
  sqlite3_bind_int64(st, 9, (int64_t)p->samples);
  if (p->id_min >= 0) sqlite3_bind_int64(st, 10, p->id_min);
  if (p->id_max >= 0) sqlite3_bind_int64(st, 11, p->id_max);
  sqlite3_bind_int64(st, 12, (int64_t)p->seal);
  if (p->validator) sqlite3_bind_text(st, 13, p->validator, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 14, p->committed);
  int src = sqlite3_step(st);
  if (src != SQLITE_DONE) {
    const char *msg = sqlite3_errmsg(catx_w(c));
    const char *col = strstr(msg, "part.uuid") ? "uuid" : strstr(msg, "part.uri") ? "location"
                    : strstr(msg, "part.name") ? "name" : NULL;
    if ((src & 0xff) == SQLITE_CONSTRAINT && col)
      rc = pdb_err(catx_db(c), m, PAGEDB_CONSTRAINT, "a part with the same %s (%s) is already in %s", col,
                   col[0] == 'u' && col[1] == 'u' ? p->uuid : col[0] == 'l' ? p->uri : p->name, catx_path(c));
    else
      rc = catx_fail(c, m, catx_w(c), src, "recording a part");
  }
  sqlite3_finalize(st);
  return rc;
}

int cat_part_rows_on(Catalog *c, pdb_msg *m) {
  int rc = catx_begin_write(c, m);
  sqlite3_stmt *st = NULL;
  uint64_t features = 0;
  if (rc == PAGEDB_OK) rc = catx_prepare(c, m, catx_w(c), "SELECT value FROM meta WHERE key = 'features'", &st);
  if (rc == PAGEDB_OK && sqlite3_step(st) == SQLITE_ROW) features = (uint64_t)sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (rc != PAGEDB_OK || (features & CAT_FEATURE_PARTROWS)) return rc;
  rc = catx_exec(c, m, "ALTER TABLE part ADD COLUMN rows INTEGER NOT NULL DEFAULT 0;"
                 " ALTER TABLE part ADD COLUMN id_delta INTEGER NOT NULL DEFAULT 0;"
                 " CREATE TABLE part_deleted(id INTEGER PRIMARY KEY)", "making table part_deleted");
  if (rc == PAGEDB_OK) rc = cat_features_update(c, m, CAT_FEATURE_PARTS | CAT_FEATURE_PARTROWS, 0);
  return rc;
}

int cat_part_span(Catalog *c, pdb_msg *m, int64_t span) {
  int rc = catx_exec(c, m, "CREATE INDEX IF NOT EXISTS part_id_min ON part(id_min)", "indexing table part");
  sqlite3_stmt *st;
  if (rc == PAGEDB_OK)
    rc = catx_prepare(c, m, catx_w(c), "INSERT OR REPLACE INTO meta(key, value) VALUES('part_id_span',"
                      " max(coalesce((SELECT value FROM meta WHERE key = 'part_id_span' AND typeof(value) = 'integer'"
                      " AND value >= 0), (SELECT max(id_max - id_min) FROM part), 0), ?1))", &st);
  if (rc != PAGEDB_OK) return rc;
  sqlite3_bind_int64(st, 1, span);
  int src = sqlite3_step(st);
  if (src != SQLITE_DONE) rc = catx_fail(c, m, catx_w(c), src, "recording the parts' id span");
  sqlite3_finalize(st);
  return rc;
}

int cat_parts(Catalog *c, pdb_msg *m, int (*xrow)(void *ctx, const CatPart *p), void *ctx) {
  return catx_parts_on(c, catx_w(c), m, xrow, ctx);
}


int catx_parts_on(Catalog *c, sqlite3 *conn, pdb_msg *m, int (*xrow)(void *ctx, const CatPart *p), void *ctx) {
  sqlite3_stmt *st;
  int rc = catx_prepare(c, m, conn, "SELECT part, uuid, uri, name, first_page, pages, data_off, data_end, samples,"
                   " id_min, id_max, seal, validator, committed FROM part ORDER BY part", &st);
  if (rc != PAGEDB_OK) return rc;
  int src;
  while (rc == PAGEDB_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
    static const char kinds[] = "itttiiiiiiiiti";   /* i: integer, t: text (NULL where nullable) */
    int ok = 1;
    for (int i = 0; i < 14 && ok; i++) {
      int t = sqlite3_column_type(st, i);
      int nullable = i == 3 || i == 9 || i == 10 || i == 12;
      if (t == SQLITE_NULL) ok = nullable;
      else ok = kinds[i] == 't' ? t == SQLITE_TEXT : t == SQLITE_INTEGER && (i == 11 || sqlite3_column_int64(st, i) >= 0);
    }
    const char *uuid = (const char *)sqlite3_column_text(st, 1);
    if (!ok || !uuid || strlen(uuid) != 32) {
      rc = catx_corrupt(c, m, "table part has a row of the wrong types");
      break;
    }
    CatPart p = { (uint64_t)sqlite3_column_int64(st, 0), "", (const char *)sqlite3_column_text(st, 2),
                  (const char *)sqlite3_column_text(st, 3), (uint64_t)sqlite3_column_int64(st, 4),
                  (uint64_t)sqlite3_column_int64(st, 5), (uint64_t)sqlite3_column_int64(st, 6),
                  (uint64_t)sqlite3_column_int64(st, 7), (uint64_t)sqlite3_column_int64(st, 8),
                  sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 9),
                  sqlite3_column_type(st, 10) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 10),
                  (uint64_t)sqlite3_column_int64(st, 11), (const char *)sqlite3_column_text(st, 12),
                  sqlite3_column_int64(st, 13), 0, 0 };   /* rows, id_delta: not read (catref.c reads them) */
    memcpy(p.uuid, uuid, 33);
    rc = xrow(ctx, &p);
  }
  if (rc == PAGEDB_OK && src != SQLITE_DONE) rc = catx_fail(c, m, conn, src, "reading table part");
  sqlite3_finalize(st);
  return rc;
}
