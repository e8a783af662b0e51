/*
** catbulk.c -- the rows of table sample that a run's slots make, as an
** SQLite virtual table, so that a run's samples enter the catalog in one
** statement: INSERT INTO sample(...) SELECT ... FROM pdb_rows.
**
** Inserting row by row (bind, step, reset per sample) paid a statement's
** start and end per sample -- half the cost of a commit of parts, whose
** rows are all copied (issue 26).  One INSERT ... SELECT per run pays them
** once per run: the cost left per sample is SQLite's B-tree insert.
**
** pdb_rows is a table of the write connection's temp schema (never in
** the catalog's file), made by catb_declare with as many v columns as the
** fields have (declaring every possible one, 768, cost a millisecond a
** connection), and reads its rows from the CatRows that
** catalog.c points it at for the duration of one statement; at any other
** time it is empty, so SQL that names it (pagedb_sql_update on the write
** connection) sees no row.  Its columns are id, page, off, then v0, v1...:
** for each field its value, and for a BYTES/TEXT field its stored length
** (NULL unless compressed) and checksum, as field_columns names them --
** the values cat_insert_run bound one by one before.  Nothing here is read
** from disk: the slots are the writer's or a part's, already checked.
*/
#include "catalogInt.h"
#include "index.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct RowsTab {
  sqlite3_vtab base;
  CatRows *src;
} RowsTab;

typedef struct RowsCur {
  sqlite3_vtab_cursor base;
  CatRows *src;
} RowsCur;

static int rows_connect(sqlite3 *conn, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                        char **err) {
  (void)err;
  /* Its v columns: as many as its one argument says (catb_declare). */
  int ncol = argc > 3 ? atoi(argv[3]) : 0;
  if (ncol < 0 || ncol > CAT_ROWS_COLS) return SQLITE_ERROR;
  sqlite3_str *s = sqlite3_str_new(conn);
  sqlite3_str_appendall(s, "CREATE TABLE x(id, page, off");
  for (int i = 0; i < ncol; i++) sqlite3_str_appendf(s, ", v%d", i);
  sqlite3_str_appendall(s, ")");
  char *sql = sqlite3_str_finish(s);
  int src = sql ? sqlite3_declare_vtab(conn, sql) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (src != SQLITE_OK) return src;
  RowsTab *t = sqlite3_malloc(sizeof *t);
  if (!t) return SQLITE_NOMEM;
  memset(t, 0, sizeof *t);
  t->src = aux;
  *out = &t->base;
  return SQLITE_OK;
}

/* A distinct xCreate: a module whose xCreate is its xConnect is also an
** eponymous table, which "DROP TABLE IF EXISTS temp.pdb_rows" would name. */
static int rows_create(sqlite3 *conn, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err) {
  return rows_connect(conn, aux, argc, argv, out, err);
}

static int rows_disconnect(sqlite3_vtab *v) {
  sqlite3_free(v);
  return SQLITE_OK;
}

static int rows_best(sqlite3_vtab *v, sqlite3_index_info *info) {
  RowsTab *t = (RowsTab *)v;
  info->estimatedRows = t->src->slots ? (sqlite3_int64)t->src->n : 0;
  info->estimatedCost = (double)info->estimatedRows + 1;
  return SQLITE_OK;
}

static int rows_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out) {
  RowsCur *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->src = ((RowsTab *)v)->src;
  *out = &c->base;
  return SQLITE_OK;
}

static int rows_close(sqlite3_vtab_cursor *c) {
  sqlite3_free(c);
  return SQLITE_OK;
}

static int rows_filter(sqlite3_vtab_cursor *cur, int idx, const char *str, int argc, sqlite3_value **argv) {
  (void)idx, (void)str, (void)argc, (void)argv;
  ((RowsCur *)cur)->src->at = 0;
  return SQLITE_OK;
}

static int rows_next(sqlite3_vtab_cursor *cur) {
  ((RowsCur *)cur)->src->at++;
  return SQLITE_OK;
}

static int rows_eof(sqlite3_vtab_cursor *cur) {
  const CatRows *r = ((RowsCur *)cur)->src;
  return !r->slots || r->at >= r->n;
}

static int rows_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((RowsCur *)cur)->src->at;
  return SQLITE_OK;
}

static int rows_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  const CatRows *r = ((RowsCur *)cur)->src;
  const uint64_t *s = r->slots + (size_t)r->at * (size_t)slot_words(r->nfield);
  if (col < 3) {
    uint64_t v = col == 0 ? s[0] : col == 1 ? s[1] / r->page_size : s[1] % r->page_size;
    sqlite3_result_int64(ctx, (sqlite3_int64)v);
    return SQLITE_OK;
  }
  if (col - 3 >= r->ncol) return SQLITE_OK;   /* NULL: not a column of these fields */
  int f = r->col_field[col - 3], k = r->col_kind[col - 3];
  if (!slot_has(s, f)) return SQLITE_OK;
  uint64_t v = slot_get(s, r->nfield, f);
  const uint64_t *x = slot_cext(s, r->nfield, f);
  if (k == 1) {
    if (x[0] & SLOT_Z) sqlite3_result_int64(ctx, (sqlite3_int64)(x[0] & ~SLOT_Z));
  } else if (k == 2) {
    sqlite3_result_int64(ctx, (sqlite3_int64)x[1]);
  } else if (r->fields[f].type == PAGEDB_REAL) {
    double dv;
    memcpy(&dv, &v, sizeof dv);
    sqlite3_result_double(ctx, dv);
  } else {
    sqlite3_result_int64(ctx, (sqlite3_int64)v);
  }
  return SQLITE_OK;
}

static const sqlite3_module kRows = {
  .iVersion = 0,
  .xCreate = rows_create,
  .xConnect = rows_connect,
  .xDestroy = rows_disconnect,
  .xBestIndex = rows_best,
  .xDisconnect = rows_disconnect,
  .xOpen = rows_open,
  .xClose = rows_close,
  .xFilter = rows_filter,
  .xNext = rows_next,
  .xEof = rows_eof,
  .xColumn = rows_column,
  .xRowid = rows_rowid,
};

int catb_register(sqlite3 *conn, CatRows *src) {
  return sqlite3_create_module_v2(conn, "pdb_rows", &kRows, src, NULL);
}

int catb_declare(sqlite3 *conn, int ncol) {
  char sql[160];
  snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS temp.pdb_rows; CREATE VIRTUAL TABLE temp.pdb_rows USING pdb_rows(%d)",
           ncol);
  return sqlite3_exec(conn, sql, NULL, NULL, NULL);
}

void catb_set(CatRows *r, const uint64_t *slots, uint64_t n, const CatField *fields, int nfield,
              uint32_t page_size) {
  r->slots = slots;
  r->n = n;
  r->at = 0;
  r->page_size = page_size;
  r->fields = fields;
  r->nfield = nfield;
  /* Which field, and which of its columns, each v column is (O(fields) a run). */
  r->ncol = 0;
  for (int f = 0; f < nfield; f++)
    for (int k = 0; k < (cat_type_stored(fields[f].type) ? 3 : 1); k++, r->ncol++) {
      r->col_field[r->ncol] = (uint16_t)f;
      r->col_kind[r->ncol] = (uint8_t)k;
    }
}
