/*
** cmd_dump.c -- .dump: the catalog as SQL text, in sqlite3's spirit.
**
** The output is a script the sqlite3 shell runs to make a database with
** the catalog's tables and rows: the CREATE TABLE statement of each table
** (pagedb's meta, field, page, sample, and the application's own such as
** classes), an INSERT per row (values written by SQLite's quote(), so
** integers, reals, text, blobs and NULL come back as they are), then the
** indexes, and the views (extent, sample_info) as CREATE VIEW.  Statements
** are wrapped in BEGIN TRANSACTION / COMMIT after PRAGMA foreign_keys=OFF,
** as sqlite3's .dump writes them.
**
** It is the catalog only: table sample holds each value's length and
** checksum, not its bytes, which are in the data file.  The script makes
** an SQLite database to query with other tools, not a pagedb dataset
** (.vacuum INTO or .push copy a dataset; .export writes its samples).
**
** With PATTERNs (globs), only the tables and views whose names match one:
** a table with its rows and its indexes; a view as a table of its rows
** (CREATE TABLE with the view's column names, then INSERTs), so `.dump
** sample_info` gives the samples' sizes and checksums under names that say
** what each is, loadable anywhere.  This is where .dump differs from
** sqlite3's, which writes a named view's CREATE VIEW (.schema shows it).
** --schema-only leaves the rows out; --data-only writes the INSERTs alone.
**
** All of it is read through pagedb_sql (read-only, the engine's
** authorizer): sqlite_schema for the objects, pragma_table_info for a
** table's or view's columns, quote() for the values.
*/
#include "shell.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

/* One object of sqlite_schema. */
typedef struct DumpObj {
  char *zType, *zName, *zTbl, *zSql;
} DumpObj;

typedef struct DumpCtx {
  ShellState *p;
  DumpObj *a;               /* the schema's objects, in rowid order */
  int n, nAlloc;
  int oom;
  char **azCol;             /* the columns of the table being dumped */
  int nCol, nColAlloc;
  const char *zInsert;      /* "INSERT INTO \"t\" VALUES(" */
  int64_t nRow;
} DumpCtx;

static char *dupOrNull(const char *z){ return z ? strdup(z) : 0; }

static int objRow(void *pCtx, int nCol, char **azVal, char **azName){
  DumpCtx *c = pCtx;
  (void)azName;
  if( nCol < 4 || azVal[0] == 0 || azVal[1] == 0 ) return 0;
  if( c->n == c->nAlloc ){
    int n2 = c->nAlloc ? c->nAlloc * 2 : 16;
    DumpObj *a = realloc(c->a, (size_t)n2 * sizeof *a);
    if( a == 0 ){ c->oom = 1; return 1; }
    c->a = a;
    c->nAlloc = n2;
  }
  DumpObj *o = &c->a[c->n++];
  o->zType = dupOrNull(azVal[0]);
  o->zName = dupOrNull(azVal[1]);
  o->zTbl = dupOrNull(azVal[2]);
  o->zSql = dupOrNull(azVal[3]);
  if( o->zType == 0 || o->zName == 0 || (azVal[2] && o->zTbl == 0) || (azVal[3] && o->zSql == 0) ){
    c->oom = 1;
    return 1;
  }
  return 0;
}

static int colRow(void *pCtx, int nCol, char **azVal, char **azName){
  DumpCtx *c = pCtx;
  (void)azName;
  if( nCol < 1 || azVal[0] == 0 ) return 0;
  if( c->nCol == c->nColAlloc ){
    int n2 = c->nColAlloc ? c->nColAlloc * 2 : 16;
    char **a = realloc(c->azCol, (size_t)n2 * sizeof *a);
    if( a == 0 ){ c->oom = 1; return 1; }
    c->azCol = a;
    c->nColAlloc = n2;
  }
  if( (c->azCol[c->nCol] = strdup(azVal[0])) == 0 ){ c->oom = 1; return 1; }
  c->nCol++;
  return 0;
}

static int insertRow(void *pCtx, int nCol, char **azVal, char **azName){
  DumpCtx *c = pCtx;
  (void)azName;
  if( c->p->interrupted ) return 1;
  FILE *out = c->p->out;
  fputs(c->zInsert, out);
  for(int i = 0; i < nCol; i++){
    if( i ) fputc(',', out);
    fputs(azVal[i] ? azVal[i] : "NULL", out);
  }
  fputs(");\n", out);
  c->nRow++;
  return 0;
}

/* Append ZPRE, then Z quoted with Q ('"' for an identifier, '\'' for a
** string literal; a Q inside doubled), then ZPOST to the string *PZ
** (malloc'd, *PN bytes).  1 if out of memory (*PZ freed). */
static int appendQuoted(char **pz, size_t *pn, const char *zPre, char q, const char *z, const char *zPost){
  size_t k = strlen(zPre) + 2 * strlen(z) + 2 + strlen(zPost) + 1;
  char *r = realloc(*pz, *pn + k);
  if( r == 0 ){ free(*pz); *pz = 0; return 1; }
  size_t n = *pn;
  n += (size_t)sprintf(r + n, "%s%c", zPre, q);
  for(; *z; z++){
    if( *z == q ) r[n++] = q;
    r[n++] = *z;
  }
  n += (size_t)sprintf(r + n, "%c%s", q, zPost);
  *pz = r;
  *pn = n;
  return 0;
}

static void freeCols(DumpCtx *c){
  for(int i = 0; i < c->nCol; i++) free(c->azCol[i]);
  c->nCol = 0;
}

/* Table or view O: with CREATE, a CREATE TABLE of its column names (a
** view's rows as a table); with ROWS, an INSERT per row.  0 ok, 1 after
** an error. */
static int dumpRows(DumpCtx *c, const DumpObj *o, int create, int rows){
  ShellState *p = c->p;
  char *zSql = 0, *zIns = 0;
  size_t nSql = 0, nIns = 0;
  int rc = 0;
  freeCols(c);
  if( appendQuoted(&zSql, &nSql, "SELECT name FROM pragma_table_info(", '\'', o->zName, ") ORDER BY cid") ){
    c->oom = 1;
    return 1;
  }
  int prc = pagedb_sql(p->db, zSql, colRow, c);
  free(zSql);
  zSql = 0;
  nSql = 0;
  if( prc ){
    shellError(p, ".dump: the columns of %s: %s: %s", o->zName, pagedb_errname(prc), pagedb_errmsg(p->db));
    return 1;
  }
  if( c->oom || c->nCol == 0 ) return c->oom;
  if( create ){
    int bad = appendQuoted(&zSql, &nSql, "CREATE TABLE ", '"', o->zName, "(");
    for(int i = 0; !bad && i < c->nCol; i++) bad = appendQuoted(&zSql, &nSql, i ? "," : "", '"', c->azCol[i], "");
    if( bad ){ c->oom = 1; return 1; }
    fprintf(p->out, "%s);\n", zSql);
    free(zSql);
    zSql = 0;
    nSql = 0;
  }
  if( !rows ) return 0;
  int bad = appendQuoted(&zIns, &nIns, "INSERT INTO ", '"', o->zName, " VALUES(");
  for(int i = 0; !bad && i < c->nCol; i++){
    bad = appendQuoted(&zSql, &nSql, i ? ",quote(" : "SELECT quote(", '"', c->azCol[i], ")");
  }
  if( !bad ) bad = appendQuoted(&zSql, &nSql, " FROM ", '"', o->zName, "");
  if( bad ){
    free(zIns);
    free(zSql);
    c->oom = 1;
    return 1;
  }
  c->zInsert = zIns;
  prc = pagedb_sql(p->db, zSql, insertRow, c);
  if( prc && !p->interrupted ){
    shellError(p, ".dump: the rows of %s: %s: %s", o->zName, pagedb_errname(prc), pagedb_errmsg(p->db));
    rc = 1;
  }
  c->zInsert = 0;
  free(zIns);
  free(zSql);
  return rc;
}

/* Whether NAME matches one of the NPAT glob patterns (all match none given). */
static int matches(char **azPat, int nPat, const char *zName){
  if( nPat == 0 ) return 1;
  for(int i = 0; i < nPat; i++) if( fnmatch(azPat[i], zName, 0) == 0 ) return 1;
  return 0;
}

/* USAGE: .dump [--schema-only|--data-only] [PATTERN ...]
** The catalog (its tables and views whose names match a glob PATTERN) as
** SQL text for the sqlite3 shell: CREATE statements and an INSERT per row;
** a view named by a PATTERN as a table of its rows. */
int dotDump(ShellState *p, int nArg, char **azArg){
  int schemaOnly = 0, dataOnly = 0;
  char **azPat = calloc((size_t)nArg + 1, sizeof(char *));
  int nPat = 0;
  if( azPat == 0 ){ shellError(p, ".dump: out of memory"); return 1; }
  for(int i = 1; i < nArg; i++){
    const char *z = azArg[i];
    if( z[0] == '-' && z[1] == '-' ) z++;
    if( strcmp(z, "-schema-only") == 0 ) schemaOnly = 1;
    else if( strcmp(z, "-data-only") == 0 ) dataOnly = 1;
    else if( z[0] == '-' ){
      shellError(p, ".dump %s: unknown option (usage: .dump [--schema-only|--data-only] [PATTERN ...])",
                 azArg[i]);
      free(azPat);
      return 1;
    }else azPat[nPat++] = azArg[i];
  }
  if( schemaOnly && dataOnly ){
    shellError(p, ".dump: --schema-only and --data-only exclude each other");
    free(azPat);
    return 1;
  }
  if( shellNeedDb(p, ".dump") ){ free(azPat); return 1; }
  DumpCtx c;
  memset(&c, 0, sizeof c);
  c.p = p;
  int rc = 0;
  int prc = pagedb_sql(p->db, "SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE sql IS NOT NULL"
                              " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid", objRow, &c);
  if( prc || c.oom ){
    if( c.oom ) shellError(p, ".dump: out of memory");
    else shellError(p, ".dump: %s: %s", pagedb_errname(prc), pagedb_errmsg(p->db));
    rc = 1;
  }
  int nMatch = 0;
  for(int i = 0; rc == 0 && i < c.n; i++){
    const DumpObj *o = &c.a[i];
    if( (strcmp(o->zType, "table") == 0 || strcmp(o->zType, "view") == 0) && matches(azPat, nPat, o->zName) ){
      nMatch++;
    }
  }
  if( rc == 0 && nPat > 0 && nMatch == 0 ){
    shellError(p, ".dump %s: no table or view matches", azPat[0]);
    rc = 1;
  }
  FILE *out = p->out;
  if( rc == 0 && !dataOnly ){
    fprintf(out, "-- the catalog of pagedb dataset %s (sizes and checksums: the samples' bytes are in the data"
                 " file)\n", pagedb_path(p->db));
    fputs("PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\n", out);
  }
  /* Tables and their rows; then indexes (of the tables dumped); then views. */
  for(int pass = 0; pass < 3 && rc == 0; pass++){
    for(int i = 0; i < c.n && rc == 0 && !p->interrupted; i++){
      const DumpObj *o = &c.a[i];
      if( pass == 0 && strcmp(o->zType, "table") == 0 && matches(azPat, nPat, o->zName) ){
        if( !dataOnly ) fprintf(out, "%s;\n", o->zSql);
        if( !schemaOnly ) rc = dumpRows(&c, o, 0, 1);
      }else if( pass == 1 && strcmp(o->zType, "index") == 0 && !dataOnly && matches(azPat, nPat, o->zTbl ? o->zTbl : "") ){
        fprintf(out, "%s;\n", o->zSql);
      }else if( pass == 2 && strcmp(o->zType, "view") == 0 && matches(azPat, nPat, o->zName) ){
        if( nPat == 0 ){
          if( !dataOnly ) fprintf(out, "%s;\n", o->zSql);
        }else{
          rc = dumpRows(&c, o, !dataOnly, !schemaOnly);
        }
      }
      if( c.oom ){ shellError(p, ".dump: out of memory"); rc = 1; }
    }
  }
  if( rc == 0 && p->interrupted ){
    shellError(p, ".dump: interrupted");
    rc = 1;
  }
  if( rc == 0 && !dataOnly ) fputs("COMMIT;\n", out);
  freeCols(&c);
  free(c.azCol);
  for(int i = 0; i < c.n; i++){
    free(c.a[i].zType);
    free(c.a[i].zName);
    free(c.a[i].zTbl);
    free(c.a[i].zSql);
  }
  free(c.a);
  free(azPat);
  return rc;
}
