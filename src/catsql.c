/*
** catsql.c -- the SQL a user runs on the catalog: pagedb_sql on the
** read-only connection (any statement that reads), and pagedb_sql_update on
** the write connection (UPDATEs of INT and REAL field columns of table
** sample, and nothing else: an authorizer refuses the rest when it is
** prepared, before anything runs).  Through catalogInt.h's helpers only.
*/
#include "catalog.h"
#include "catalogInt.h"
#include "index.h"

#include <assert.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* --- pagedb_sql_update: SQL that may change scalar field values only ----- */

typedef struct Update {
  const CatField *fields;
  int nfield;
  int64_t *ids;             /* rows the statements changed (with repeats) */
  size_t nids, capids;
  int nomem;
} Update;

/* The authorizer: an UPDATE of an INT or REAL field column of table sample,
** and reads, and nothing else.  Whatever else the SQL tries is refused
** when it is prepared, before anything runs. */
static int authorize(void *ctx, int action, const char *a1, const char *a2, const char *db, const char *trig) {
  (void)db;
  (void)trig;
  Update *u = ctx;
  switch (action) {
    case SQLITE_SELECT: case SQLITE_READ: case SQLITE_FUNCTION: case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_UPDATE:
      if (a1 && sqlite3_stricmp(a1, "sample") == 0 && a2)
        for (int f = 0; f < u->nfield; f++)
          if (!cat_type_stored(u->fields[f].type) && sqlite3_stricmp(a2, u->fields[f].name) == 0) return SQLITE_OK;
      return SQLITE_DENY;
    default:
      return SQLITE_DENY;
  }
}

static void updated(void *ctx, int op, const char *db, const char *table, sqlite3_int64 rowid) {
  (void)db;
  Update *u = ctx;
  if (op != SQLITE_UPDATE || sqlite3_stricmp(table, "sample") != 0 || u->nomem) return;
  if (u->nids == u->capids) {
    size_t cap = u->capids ? u->capids * 2 : 256;
    int64_t *v = pdb_realloc(u->ids, cap * sizeof *v);
    if (!v) {
      u->nomem = 1;
      return;
    }
    u->ids = v;
    u->capids = cap;
  }
  u->ids[u->nids++] = rowid;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Run the statements of SQL on the write connection, under the authorizer
** the caller set: one refused when prepared is PAGEDB_READONLY, "SQL
** refused: REFUSED (why)"; a constraint failed, PAGEDB_CONSTRAINT.  Shared
** by pagedb_sql_update and pagedb_sql_user (catextra.c). */
int catx_run(Catalog *c, pdb_msg *m, const char *sql, const char *refused, const char *doing) {
  sqlite3 *w = catx_w(c);
  pagedb *db = catx_db(c);
  int rc = PAGEDB_OK;
  const char *tail = sql;
  while (rc == PAGEDB_OK && tail && *tail) {
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(w, tail, -1, &st, &tail);
    if (src == SQLITE_AUTH)
      rc = pdb_err(db, m, PAGEDB_READONLY, "SQL refused: %s (%s)", refused, sqlite3_errmsg(w));
    else if (src != SQLITE_OK)
      rc = pdb_err(db, m, src == SQLITE_NOMEM ? PAGEDB_NOMEM : PAGEDB_ERROR, "SQL error: %s", sqlite3_errmsg(w));
    if (rc != PAGEDB_OK || !st) continue;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    }
    if (src != SQLITE_DONE)
      rc = src == SQLITE_AUTH ? pdb_err(db, m, PAGEDB_READONLY, "SQL refused: %s", sqlite3_errmsg(w))
         : src == SQLITE_CONSTRAINT ? pdb_err(db, m, PAGEDB_CONSTRAINT, "SQL error: %s", sqlite3_errmsg(w))
         : catx_fail(c, m, w, src, doing);
    sqlite3_finalize(st);
  }
  return rc;
}

/* Run the statements of SQL under the authorizer, collecting the changed
** rows in U.  Caller holds the write transaction. */
static int run_updates(Catalog *c, pdb_msg *m, const char *sql, Update *u) {
  sqlite3 *w = catx_w(c);
  sqlite3_set_authorizer(w, authorize, u);
  sqlite3_update_hook(w, updated, u);
  int rc = catx_run(c, m, sql, "only UPDATEs of the INT and REAL field columns of table sample may change the"
                    " catalog", "running an update");
  sqlite3_update_hook(w, NULL, NULL);
  sqlite3_set_authorizer(w, NULL, NULL);
  if (rc == PAGEDB_OK && u->nomem) rc = pdb_err(catx_db(c), m, PAGEDB_NOMEM, "out of memory running an update");
  return rc;
}

/* The new scalar values of the changed rows, checked: the caller's slots. */
static int read_updated(Catalog *c, pdb_msg *m, Update *u, uint64_t *slots, int nw) {
  sqlite3 *w = catx_w(c);
  pagedb *db = catx_db(c);
  sqlite3_str *q = sqlite3_str_new(NULL);
  sqlite3_str_appendall(q, "SELECT id");
  for (int f = 0; f < u->nfield; f++) sqlite3_str_appendf(q, ", \"%w\"", u->fields[f].name);
  sqlite3_str_appendall(q, " FROM sample WHERE id = ?1");
  char *text = sqlite3_str_finish(q);
  sqlite3_stmt *st = NULL;
  int rc = text ? catx_prepare(c, m, w, text, &st) : pdb_err(db, m, PAGEDB_NOMEM, "out of memory running an update");
  sqlite3_free(text);
  for (size_t i = 0; rc == PAGEDB_OK && i < u->nids; i++) {
    uint64_t *s = slots + i * (size_t)nw;
    memset(s, 0, (size_t)nw * sizeof *s);
    s[0] = (uint64_t)u->ids[i];
    sqlite3_bind_int64(st, 1, u->ids[i]);
    int src = sqlite3_step(st);
    if (src != SQLITE_ROW) {
      rc = src == SQLITE_DONE ? pdb_err(db, m, PAGEDB_ERROR, "an update moved sample %lld", (long long)u->ids[i])
                              : catx_fail(c, m, w, src, "reading updated values");
    }
    for (int f = 0; rc == PAGEDB_OK && f < u->nfield; f++) {
      if (cat_type_stored(u->fields[f].type)) continue;
      int t = sqlite3_column_type(st, 1 + f);
      if (t == SQLITE_NULL) continue;
      if (u->fields[f].type == PAGEDB_INT && t == SQLITE_INTEGER) {
        *slot_val(s, u->nfield, f) = (uint64_t)sqlite3_column_int64(st, 1 + f);
      } else if (u->fields[f].type == PAGEDB_REAL && (t == SQLITE_FLOAT || t == SQLITE_INTEGER)) {
        double d = sqlite3_column_double(st, 1 + f);
        memcpy(slot_val(s, u->nfield, f), &d, sizeof d);
      } else {
        rc = pdb_err(db, m, PAGEDB_MISMATCH, "sample %lld: field '%s' is %s, and the update gives it a %s value;"
                     " nothing was changed", (long long)u->ids[i], u->fields[f].name,
                     u->fields[f].type == PAGEDB_INT ? "an INT" : "a REAL",
                     t == SQLITE_TEXT ? "TEXT" : t == SQLITE_BLOB ? "BLOB" : "REAL");
        break;
      }
      slot_set(s, f);
    }
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  return rc;
}

/*
** Before an update, in its transaction: the rows of every part by
** reference copied into table sample (its deleted samples left out), the
** parts marked copied (doc/format.md, "Parts' rows by reference"), so that
** the UPDATE changes rows the catalog holds.  Paid once, by the first
** update; nothing when no part is by reference.
*/
static int materialize(Catalog *c, pdb_msg *m) {
  int on = 0, rc = catr_ready(catx_wref(c), m, &on);
  if (rc != PAGEDB_OK || !on) return rc;
  return catx_exec(c, m, "INSERT INTO main.sample SELECT * FROM temp.pdb_part_rows"
                   " WHERE id NOT IN (SELECT id FROM main.part_deleted);"
                   " UPDATE main.part SET rows = 0, id_delta = 0 WHERE rows = 1; DELETE FROM main.part_deleted",
                   "copying the rows of parts by reference");
}

int cat_update(Catalog *c, pdb_msg *m, const char *sql, const CatField *fields, int nfield, uint64_t **slots,
               size_t *nslots) {
  *slots = NULL;
  *nslots = 0;
  Update u = { .fields = fields, .nfield = nfield };
  int nw = slot_words(nfield);
  sqlite3 *w = catx_w(c);
  int rc = catx_begin_write(c, m);
  if (rc == PAGEDB_OK) rc = materialize(c, m);
  if (rc == PAGEDB_OK) rc = run_updates(c, m, sql, &u);
  size_t n = 0;
  if (rc == PAGEDB_OK && u.nids > 0) {
    qsort(u.ids, u.nids, sizeof *u.ids, cmp_i64);
    for (size_t i = 0; i < u.nids; i++)
      if (n == 0 || u.ids[n - 1] != u.ids[i]) u.ids[n++] = u.ids[i];
    u.nids = n;
    if (!(*slots = pdb_malloc(n * (size_t)nw * sizeof(uint64_t))))
      rc = pdb_err(catx_db(c), m, PAGEDB_NOMEM, "out of memory running an update");
  }
  if (rc == PAGEDB_OK && u.nids > 0) rc = read_updated(c, m, &u, *slots, nw);
  if (rc == PAGEDB_OK) rc = catx_exec(c, m, "COMMIT", "committing an update");
  if (rc != PAGEDB_OK) {
    if (!sqlite3_get_autocommit(w)) sqlite3_exec(w, "ROLLBACK", NULL, NULL, NULL);
    pdb_free(*slots);
    *slots = NULL;
    u.nids = 0;
  }
  catx_end_write(c);
  *nslots = u.nids;
  pdb_free(u.ids);
  return rc;
}

/* Row I's column I of ST as a pagedb_value (pagedb_sql_values). */
static void sql_value(sqlite3_stmt *st, int i, pagedb_value *v) {
  memset(v, 0, sizeof *v);
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
      v->type = PAGEDB_INT;
      v->i = sqlite3_column_int64(st, i);
      break;
    case SQLITE_FLOAT:
      v->type = PAGEDB_REAL;
      v->d = sqlite3_column_double(st, i);
      break;
    case SQLITE_TEXT:
      v->type = PAGEDB_TEXT;
      v->p = sqlite3_column_text(st, i);
      v->n = (size_t)sqlite3_column_bytes(st, i);
      break;
    case SQLITE_BLOB:
      v->type = PAGEDB_BYTES;
      v->p = sqlite3_column_blob(st, i);
      v->n = (size_t)sqlite3_column_bytes(st, i);
      break;
    default:
      v->type = PAGEDB_NULL;
  }
}

int cat_sql(Catalog *c, pdb_msg *m, const char *sql, int (*xrow)(void *, int, char **, char **),
            int (*xvals)(void *, int, const pagedb_value *, const char *const *), void *ctx) {
  assert(!(xrow && xvals));
  sqlite3 *r;
  int rc = catx_read_begin(c, m, &r);
  if (rc != PAGEDB_OK) return rc;
  const char *tail = sql;
  while (rc == PAGEDB_OK && tail && *tail) {
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(r, tail, -1, &st, &tail);
    if (src != SQLITE_OK) {
      rc = pdb_err(catx_db(c), m, PAGEDB_ERROR, "SQL error: %s", sqlite3_errmsg(r));
      break;
    }
    if (!st) continue;   /* whitespace or a comment */
    if (!sqlite3_stmt_readonly(st)) {
      rc = pdb_err(catx_db(c), m, PAGEDB_READONLY, "SQL error: the catalog is read-only here: %s", sqlite3_sql(st));
      sqlite3_finalize(st);
      break;
    }
    /* The columns are read after the first step: a statement prepared
    ** before this handle changed the schema (a field added) is prepared
    ** again by that step, with the new columns of "SELECT *". */
    int ncol = 0;
    char **vals = NULL, **names = NULL;
    pagedb_value *tv = NULL;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
      if (!vals) {
        ncol = sqlite3_column_count(st);
        if (!(vals = pdb_calloc((size_t)ncol * 2 + 1, sizeof(char *))) ||
            (xvals && !(tv = pdb_calloc((size_t)ncol + 1, sizeof *tv)))) {
          rc = pdb_err(catx_db(c), m, PAGEDB_NOMEM, "out of memory running SQL");
          break;
        }
        names = vals + ncol;
        for (int i = 0; i < ncol; i++) names[i] = (char *)sqlite3_column_name(st, i);
      }
      int stop;
      if (xvals) {
        for (int i = 0; i < ncol; i++) sql_value(st, i, &tv[i]);
        stop = xvals(ctx, ncol, tv, (const char *const *)names);
      } else {
        for (int i = 0; i < ncol; i++) vals[i] = (char *)sqlite3_column_text(st, i);
        stop = xrow && xrow(ctx, ncol, vals, names);
      }
      if (stop) {
        rc = pdb_err(catx_db(c), m, PAGEDB_ERROR, "SQL query aborted by its callback");
        break;
      }
    }
    if (rc == PAGEDB_OK && src != SQLITE_DONE)
      rc = pdb_err(catx_db(c), m, src == SQLITE_NOMEM ? PAGEDB_NOMEM : PAGEDB_ERROR, "SQL error: %s", sqlite3_errmsg(r));
    pdb_free(vals);
    pdb_free(tv);
    sqlite3_finalize(st);
  }
  catx_read_end(c);
  return rc;
}
