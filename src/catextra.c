/*
** catextra.c -- the catalog's objects beside the samples' own: the view
** sample_info, which names what each column of table sample is, and user
** tables, the application's own tables (pagedb_sql_user), copied by
** vacuum.  catalog.c creates and validates the catalog and calls in here
** through catalogInt.h; the format is doc/format.md's.
**
** Both are SQL a user's catalog holds, so both are held to what pagedb
** makes: sample_info must be exactly info_view_sql's text (a view is SQL
** that runs when queried), and user tables are changed only under an
** authorizer that refuses pagedb's own tables, views, triggers and
** settings before a statement runs.
*/
#include "catalog.h"
#include "catalogInt.h"

#include <sqlite3.h>
#include <string.h>

/* --- the sample_info view ------------------------------------------------
** Table sample names a BYTES/TEXT field's columns F, "F:z" and "F:sum"
** (lengths and a checksum a reader of SELECT * cannot tell apart); view
** sample_info shows the same rows with names that say what each is: id,
** an INT/REAL field's value as F, and for a BYTES/TEXT field F_bytes (the
** raw length), F_stored (the bytes stored: compressed or not) and
** F_checksum (XXH3-64 of the stored bytes).  When such a name would be
** that of a field (or id), that field's columns are "F:bytes",
** "F:stored", "F:checksum" instead (':' is in no field name).  Like
** extent, it is made with each field and must be exactly what
** info_view_sql makes; a catalog made before it existed has none. */

static int name_taken(const CatField *fields, int nfield, const char *name) {
  if (sqlite3_stricmp(name, "id") == 0) return 1;
  for (int i = 0; i < nfield; i++)
    if (sqlite3_stricmp(name, fields[i].name) == 0) return 1;
  return 0;
}

static char *info_view_sql(const CatField *fields, int nfield) {
  static const char *const suffix[] = { "bytes", "stored", "checksum" };
  sqlite3_str *cols = sqlite3_str_new(NULL), *sel = sqlite3_str_new(NULL);
  sqlite3_str_appendall(cols, "CREATE VIEW sample_info(id");
  sqlite3_str_appendall(sel, ") AS SELECT id");
  for (int i = 0; i < nfield; i++) {
    const char *f = fields[i].name;
    if (!cat_type_stored(fields[i].type)) {
      sqlite3_str_appendf(cols, ", \"%w\"", f);
      sqlite3_str_appendf(sel, ", \"%w\"", f);
      continue;
    }
    char sep = '_';
    for (int k = 0; k < 3; k++) {
      char *n = sqlite3_mprintf("%s_%s", f, suffix[k]);
      if (!n || name_taken(fields, nfield, n)) sep = ':';
      sqlite3_free(n);
    }
    for (int k = 0; k < 3; k++) sqlite3_str_appendf(cols, ", \"%w%c%s\"", f, sep, suffix[k]);
    sqlite3_str_appendf(sel, ", \"%w\", coalesce(\"%w:z\", \"%w\"), \"%w:sum\"", f, f, f, f);
  }
  sqlite3_str_appendall(sel, " FROM sample");
  char *tail = sqlite3_str_finish(sel);
  if (tail) sqlite3_str_appendall(cols, tail);
  sqlite3_free(tail);
  char *text = sqlite3_str_finish(cols);
  if (!tail) {
    sqlite3_free(text);
    return NULL;
  }
  return text;
}

int cat_info_view_make(Catalog *c, pdb_msg *m, const CatField *fields, int nfield) {
  char *text = info_view_sql(fields, nfield);
  int rc = text ? catx_exec(c, m, "DROP VIEW IF EXISTS sample_info", "creating the sample_info view")
                : pdb_err(catx_db(c), m, PAGEDB_NOMEM, "out of memory updating the catalog");
  if (rc == PAGEDB_OK) rc = catx_exec(c, m, text, "creating the sample_info view");
  sqlite3_free(text);
  return rc;
}

int cat_info_view_check(Catalog *c, pdb_msg *m, const CatField *fields, int nfield) {
  sqlite3 *w = catx_w(c);
  char *want = info_view_sql(fields, nfield);
  sqlite3_stmt *st = NULL;
  int rc = want ? catx_prepare(c, m, w, "SELECT sql FROM sqlite_schema WHERE type = 'view' AND name = 'sample_info'", &st)
                : pdb_err(catx_db(c), m, PAGEDB_NOMEM, "out of memory reading the catalog");
  if (rc == PAGEDB_OK) {
    int src = sqlite3_step(st);
    const char *got = src == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (src != SQLITE_ROW && src != SQLITE_DONE) rc = catx_fail(c, m, w, src, "reading the schema");
    else if (got && strcmp(got, want) != 0)
      rc = catx_corrupt(c, m, "view sample_info is not the one pagedb makes for these fields");
  }
  sqlite3_finalize(st);
  sqlite3_free(want);
  return rc;
}

/* --- user tables (pagedb_sql_user) ---------------------------------------- */

/* Whether T names a user table (catalog.h; USER_TABLE in SQL). */
static int is_user_table(const char *t, int parts) {
  static const char *const own[] = { "meta", "field", "page", "sample", "extent", "sample_info" };
  if (!t || !*t) return 0;
  if (parts && sqlite3_stricmp(t, "part") == 0) return 0;   /* pagedb's once a part is committed */
  for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
    if (sqlite3_stricmp(t, own[i]) == 0) return 0;
  return sqlite3_strnicmp(t, "sqlite_", 7) != 0 && sqlite3_strnicmp(t, "pagedb_", 7) != 0;
}

/* The authorizer of pagedb_sql_user: reads anywhere; creating, changing,
** indexing and dropping user tables of the main database; SQLite's own
** bookkeeping rows those statements write (the schema table, whose direct
** writes DEFENSIVE refuses, and sqlite_sequence).  Nothing else: no view,
** trigger, virtual or temporary table, PRAGMA, ATTACH or transaction. */
static int authorize_user(void *ctx, int action, const char *a1, const char *a2, const char *db, const char *trig) {
  int parts = ctx != NULL;  /* the catalog has parts (table part is pagedb's) */
  (void)trig;
  /* Reads anywhere: temp holds the union of the parts' rows (catr_views). */
  if (action == SQLITE_SELECT || action == SQLITE_READ || action == SQLITE_FUNCTION || action == SQLITE_RECURSIVE)
    return SQLITE_OK;
  if (db && sqlite3_stricmp(db, "main") != 0) return SQLITE_DENY;
  switch (action) {
    case SQLITE_CREATE_TABLE: case SQLITE_DROP_TABLE:
      return is_user_table(a1, parts) ? SQLITE_OK : SQLITE_DENY;
    case SQLITE_CREATE_INDEX: case SQLITE_DROP_INDEX: case SQLITE_ALTER_TABLE:
      return is_user_table(a2, parts) ? SQLITE_OK : SQLITE_DENY;
    case SQLITE_REINDEX:      /* part of CREATE INDEX; rebuilds an index, changes no content */
      return SQLITE_OK;
    case SQLITE_INSERT: case SQLITE_UPDATE: case SQLITE_DELETE:
      if (a1 && (sqlite3_stricmp(a1, "sqlite_master") == 0 || sqlite3_stricmp(a1, "sqlite_sequence") == 0))
        return SQLITE_OK;
      return is_user_table(a1, parts) ? SQLITE_OK : SQLITE_DENY;
    default:
      return SQLITE_DENY;
  }
}

int cat_user_sql(Catalog *c, pdb_msg *m, const char *sql, int64_t *nchanged) {
  sqlite3 *w = catx_w(c);
  *nchanged = 0;
  /* As pagedb_sql_update: the caller committed what was written, so the
  ** write transaction, if one is open, holds nothing else. */
  int rc = catx_begin_write(c, m);
  if (rc != PAGEDB_OK) return rc;
  /* Table sample (and extent, sample_info) is the union of the own rows and
  ** the parts' by reference, as in pagedb_sql, for these statements only
  ** (catr_views: the write connection keeps no view naming main.sample). */
  int parts = 0;
  rc = catr_ready(catx_wref(c), m, &parts);
  if (rc == PAGEDB_OK && parts) rc = catr_views(catx_wref(c), m, 1);
  sqlite3_set_authorizer(w, authorize_user, catx_has_parts(c) ? (void *)c : NULL);
  sqlite3_int64 before = sqlite3_total_changes64(w);
  if (rc == PAGEDB_OK)
    rc = catx_run(c, m, sql, "pagedb_sql_user may create, change and drop user tables only, not pagedb's own"
                  " tables, views, triggers or settings", "running SQL on user tables");
  sqlite3_set_authorizer(w, NULL, NULL);
  *nchanged = sqlite3_total_changes64(w) - before;
  if (parts) {
    int drc = catr_views(catx_wref(c), m, 0);
    if (rc == PAGEDB_OK) rc = drc;
  }
  if (rc == PAGEDB_OK) rc = catx_exec(c, m, "COMMIT", "committing user tables");
  if (rc != PAGEDB_OK) {
    if (!sqlite3_get_autocommit(w)) sqlite3_exec(w, "ROLLBACK", NULL, NULL, NULL);
    *nchanged = 0;
  }
  catx_end_write(c);
  return rc;
}

/* Copy the rows of user table T from FROM (its read connection) into TO
** (a transaction open on TO). */
static int copy_rows(Catalog *from, sqlite3 *r, Catalog *to, pdb_msg *m, const char *t) {
  sqlite3 *tw = catx_w(to);
  char *q = sqlite3_mprintf("SELECT * FROM \"%w\"", t);
  sqlite3_stmt *rd = NULL, *wr = NULL;
  int rc = q ? catx_prepare(from, m, r, q, &rd) : pdb_err(catx_db(from), m, PAGEDB_NOMEM, "out of memory copying user tables");
  sqlite3_free(q);
  if (rc == PAGEDB_OK) {
    int n = sqlite3_column_count(rd);
    sqlite3_str *ins = sqlite3_str_new(NULL);
    sqlite3_str_appendf(ins, "INSERT INTO \"%w\" VALUES(", t);
    for (int i = 0; i < n; i++) sqlite3_str_appendall(ins, i ? ", ?" : "?");
    sqlite3_str_appendall(ins, ")");
    char *text = sqlite3_str_finish(ins);
    rc = text ? catx_prepare(to, m, tw, text, &wr) : pdb_err(catx_db(from), m, PAGEDB_NOMEM, "out of memory copying user tables");
    sqlite3_free(text);
    int src;
    while (rc == PAGEDB_OK && (src = sqlite3_step(rd)) == SQLITE_ROW) {
      for (int i = 0; i < n; i++) sqlite3_bind_value(wr, i + 1, sqlite3_column_value(rd, i));
      if ((src = sqlite3_step(wr)) != SQLITE_DONE) rc = catx_fail(to, m, tw, src, "copying a user table");
      sqlite3_reset(wr);
    }
    if (rc == PAGEDB_OK && src != SQLITE_DONE) rc = catx_fail(from, m, r, src, "reading a user table");
  }
  sqlite3_finalize(rd);
  sqlite3_finalize(wr);
  return rc;
}

/* FROM is read on its read-only connection, which the write connection's
** long transaction and the thread that inserts runs do not touch. */
static int copy_user_locked(Catalog *from, sqlite3 *r, Catalog *to, pdb_msg *m) {
  sqlite3 *tw = catx_w(to);
  sqlite3_stmt *st = NULL;
  int rc = catx_prepare(from, m, r,
                   "SELECT type, name, sql FROM sqlite_schema WHERE type IN ('table', 'index') AND sql IS NOT NULL"
                   " AND " CAT_USER_TABLE("tbl_name") " AND NOT (?1 AND lower(tbl_name) = 'part')"
                   " ORDER BY type = 'index', rowid", &st);
  if (rc != PAGEDB_OK) return rc;
  /* With parts, table part is pagedb's (doc/format.md, "Parts"): a vacuum
  ** makes a dataset of one file, without it. */
  sqlite3_bind_int(st, 1, catx_has_parts(from));
  /* One snapshot of FROM for the schema and every table's rows. */
  if (sqlite3_exec(r, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
    sqlite3_finalize(st);
    return catx_fail(from, m, r, sqlite3_errcode(r), "reading user tables");
  }
  int began = 0, src = SQLITE_DONE;
  while (rc == PAGEDB_OK && (src = sqlite3_step(st)) == SQLITE_ROW) {
    if (!began) {
      if ((rc = catx_exec(to, m, "BEGIN IMMEDIATE", "copying user tables")) != PAGEDB_OK) break;
      began = 1;
    }
    const char *type = (const char *)sqlite3_column_text(st, 0);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    rc = catx_exec(to, m, (const char *)sqlite3_column_text(st, 2), "copying user tables");
    if (rc == PAGEDB_OK && type && strcmp(type, "table") == 0 && name) rc = copy_rows(from, r, to, m, name);
  }
  if (rc == PAGEDB_OK && src != SQLITE_DONE) rc = catx_fail(from, m, r, src, "reading user tables");
  sqlite3_finalize(st);
  sqlite3_exec(r, "COMMIT", NULL, NULL, NULL);
  if (began) {
    if (rc == PAGEDB_OK) rc = catx_exec(to, m, "COMMIT", "copying user tables");
    if (rc != PAGEDB_OK && !sqlite3_get_autocommit(tw)) sqlite3_exec(tw, "ROLLBACK", NULL, NULL, NULL);
  }
  return rc;
}

int cat_copy_user(Catalog *from, Catalog *to, pdb_msg *m) {
  sqlite3 *r;
  int rc = catx_read_begin(from, m, &r);
  if (rc != PAGEDB_OK) return rc;
  rc = copy_user_locked(from, r, to, m);
  catx_read_end(from);
  return rc;
}
