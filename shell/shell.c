/*
** shell.c -- pagedb, the command-line shell of pagedb datasets.
**
**   pagedb [OPTIONS] [FILE] [COMMAND ...]
**
** With COMMANDs, runs each (a dot-command or SQL on the catalog) and exits;
** without, reads commands from standard input: interactively, with line
** editing and the prompt "pagedb> ", when it is a terminal.  The model is
** sqlite3's shell.c: all state in one ShellState, a help table with one line
** per command, one function per dot-command under a USAGE comment returning
** 0 (ok), 1 (error) or 2 (exit), and error messages that name the command and
** the offending argument.  The exit status is 0 if every command succeeded,
** 1 after any error.
**
** SQL runs read-only on the catalog through pagedb_sql() and prints each row
** as `col|col` (sqlite3's list mode; NULL prints as nothing), with the column
** names first after `.headers on`.
**
** The demo dataset (-demo) is made by the benchmark's W-img generator
** (tool/workload.c).
*/
#include "pagedb.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <editline/readline.h>

#include "workload.h"

#define MAX_ARGS  16          /* arguments of one dot-command */
#define HEX_PREVIEW 16        /* bytes of a BYTES value shown by .get */
#define DEMO_SAMPLES 200      /* samples in the -demo dataset */

/* All the state of the shell. */
typedef struct ShellState {
  pagedb *db;               /* the open dataset, or NULL */
  pagedb_reader *rd;        /* a PAGEDB_READ_COPY reader of db, opened by .get */
  int readonly;             /* -readonly: open datasets read-only */
  int demo;                 /* -demo: make a demo dataset if FILE is missing */
  const char *zVfs;         /* -vfs NAME, or NULL for the default */
  int bail;                 /* -bail: stop at the first error */
  int headers;              /* .headers on: print column names before rows */
  int headerDone;           /* the current statement's header is printed */
  int interactive;          /* reading a terminal */
  int nErr;                 /* errors so far: the exit status is 1 if any */
  FILE *out;                /* where results go */
} ShellState;

/* Print an error message on stderr, and count it. */
static void shellError(ShellState *p, const char *fmt, ...){
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "Error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  p->nErr++;
}

static const char *typeName(int type){
  switch( type ){
    case PAGEDB_BYTES: return "BYTES";
    case PAGEDB_TEXT:  return "TEXT";
    case PAGEDB_INT:   return "INT";
    case PAGEDB_REAL:  return "REAL";
  }
  return "?";
}

static const char *codecName(int codec){
  return codec == PAGEDB_CODEC_NONE ? "none" : codec == PAGEDB_CODEC_LZ4 ? "lz4" : "?";
}

/* ------------------------------------------------------------------ */
/* Opening                                                             */
/* ------------------------------------------------------------------ */

static void closeDb(ShellState *p){
  pagedb_reader_close(p->rd);
  p->rd = 0;
  if( p->db ){
    int rc = pagedb_close(p->db);
    if( rc ) shellError(p, "closing the dataset: %s", pagedb_errname(rc));
  }
  p->db = 0;
}

/*
** Make the demo dataset at ZFILE: DEMO_SAMPLES samples with an `image`
** (BYTES: the W-img generator's bytes and labels, at sizes uniform in
** [512, 8191] drawn from its size stream), a `label` (INT) and a `caption`
** (TEXT).  Returns 0, or 1 after an error message.
*/
static int makeDemo(ShellState *p, const char *zFile){
  static const char *azAdj[] = {
    "small", "large", "red", "blue", "sleepy", "curious", "striped", "old"
  };
  static const char *azNoun[] = {
    "cat", "dog", "bicycle", "lighthouse", "teapot", "mountain", "robot", "owl"
  };
  wl_t w;
  pagedb *db = 0;
  pagedb_writer *pw = 0;
  uint8_t *buf = 0;
  const char *zCall = "pagedb_open";
  int rc;
  if( wl_parse("W-img", &w) ){
    shellError(p, "-demo %s: out of memory", zFile);
    return 1;
  }
  rc = pagedb_open(zFile, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, p->zVfs);
  if( rc == PAGEDB_OK ){
    zCall = "pagedb_set_page_size";
    rc = pagedb_set_page_size(db, PAGEDB_MIN_PAGE_SIZE * 4);
  }
  if( rc == PAGEDB_OK ){ zCall = "pagedb_field_add image"; rc = pagedb_field_add(db, "image", PAGEDB_BYTES, 0); }
  if( rc == PAGEDB_OK ){ zCall = "pagedb_field_add label"; rc = pagedb_field_add(db, "label", PAGEDB_INT, 0); }
  if( rc == PAGEDB_OK ){ zCall = "pagedb_field_add caption"; rc = pagedb_field_add(db, "caption", PAGEDB_TEXT, 0); }
  if( rc == PAGEDB_OK ){ zCall = "pagedb_writer_open"; rc = pagedb_writer_open(db, &pw); }
  if( rc == PAGEDB_OK && (buf = malloc((size_t)wl_max_size(&w))) == 0 ) rc = PAGEDB_NOMEM;
  for(int64_t i = 0; rc == PAGEDB_OK && i < DEMO_SAMPLES; i++){
    uint64_t s = wl_state(&w, i, 1);
    size_t n = 512 + (size_t)(wl_next(&s) % 7680);
    int64_t label = wl_label(&w, i);
    char zCap[128];
    snprintf(zCap, sizeof zCap, "sample %lld: a %s %s, class %lld", (long long)i,
             azAdj[label % 8], azNoun[(label / 8) % 8], (long long)label);
    wl_fill(&w, i, buf, n);
    zCall = "pagedb_sample_begin";
    rc = pagedb_sample_begin(pw, i);
    if( rc == PAGEDB_OK ){ zCall = "pagedb_put image"; rc = pagedb_put(pw, 0, buf, n); }
    if( rc == PAGEDB_OK ){ zCall = "pagedb_put_int label"; rc = pagedb_put_int(pw, 1, label); }
    if( rc == PAGEDB_OK ){ zCall = "pagedb_put caption"; rc = pagedb_put(pw, 2, zCap, strlen(zCap)); }
    if( rc == PAGEDB_OK ){ zCall = "pagedb_sample_end"; rc = pagedb_sample_end(pw, 0); }
  }
  if( pw ){
    const char *zMsg = rc ? pagedb_writer_errmsg(pw) : 0;
    if( zMsg ) shellError(p, "-demo %s: %s: %s (%s)", zFile, zCall, pagedb_errname(rc), zMsg);
    int rc2 = pagedb_writer_close(pw);
    if( rc == PAGEDB_OK && rc2 ){
      rc = rc2;
      shellError(p, "-demo %s: pagedb_writer_close: %s (%s)", zFile, pagedb_errname(rc),
                 pagedb_errmsg(db));
    }
    pw = 0;
    if( rc == PAGEDB_OK ){
      zCall = "pagedb_commit";
      rc = pagedb_commit(db);
      if( rc ) shellError(p, "-demo %s: %s: %s (%s)", zFile, zCall, pagedb_errname(rc),
                          pagedb_errmsg(db));
    }
  }else if( rc ){
    shellError(p, "-demo %s: %s: %s (%s)", zFile, zCall, pagedb_errname(rc),
               db ? pagedb_errmsg(db) : "out of memory");
  }
  int rc3 = pagedb_close(db);
  if( rc == PAGEDB_OK && rc3 ){
    rc = rc3;
    shellError(p, "-demo %s: pagedb_close: %s", zFile, pagedb_errname(rc));
  }
  free(buf);
  wl_free(&w);
  return rc ? 1 : 0;
}

/*
** Open ZFILE as the current dataset: read-write unless -readonly.  A
** read-write open that fails because another process writes the dataset
** (or the file is not writable) falls back to read-only and says so.
** With -demo, a missing ZFILE is first made into the demo dataset.
*/
static int openDb(ShellState *p, const char *zCmd, const char *zFile){
  closeDb(p);
  if( p->demo && access(zFile, F_OK) != 0 ){
    if( makeDemo(p, zFile) ) return 1;
  }
  int rc;
  const char *zNote = 0;
  if( !p->readonly ){
    rc = pagedb_open(zFile, &p->db, PAGEDB_OPEN_READWRITE, p->zVfs);
    int prim = rc & 0xff;
    if( rc == PAGEDB_OK ) return 0;
    /* Not a refusal of the backend (PAGEDB_CANTOPEN_DIRECT, _URING): those
    ** refuse a read-only open too. */
    int retry = prim == PAGEDB_BUSY || rc == PAGEDB_CANTOPEN || prim == PAGEDB_READONLY;
    if( !retry ){
      shellError(p, "%s: cannot open \"%s\": %s (%s)", zCmd, zFile, pagedb_errname(rc),
                 pagedb_errmsg(p->db));
      pagedb_close(p->db);
      p->db = 0;
      return 1;
    }
    pagedb_close(p->db);
    p->db = 0;
    zNote = prim == PAGEDB_BUSY ? "another process writes it" : "not writable";
  }
  rc = pagedb_open(zFile, &p->db, PAGEDB_OPEN_READONLY, p->zVfs);
  if( rc ){
    shellError(p, "%s: cannot open \"%s\": %s (%s)", zCmd, zFile, pagedb_errname(rc),
                 pagedb_errmsg(p->db));
    pagedb_close(p->db);
    p->db = 0;
    return 1;
  }
  if( zNote ) fprintf(stderr, "note: %s: %s; opened read-only\n", zFile, zNote);
  return 0;
}

/* 1 (after an error message) if no dataset is open. */
static int needDb(ShellState *p, const char *zCmd){
  if( p->db ) return 0;
  shellError(p, "%s: no dataset is open (use .open FILE)", zCmd);
  return 1;
}

/* ------------------------------------------------------------------ */
/* SQL                                                                 */
/* ------------------------------------------------------------------ */

/* pagedb_sql's row callback: one `col|col` line, names first if asked. */
static int sqlRow(void *pCtx, int nCol, char **azVal, char **azName){
  ShellState *p = pCtx;
  if( p->headers && !p->headerDone ){
    for(int i = 0; i < nCol; i++) fprintf(p->out, "%s%s", i ? "|" : "", azName[i] ? azName[i] : "");
    fputc('\n', p->out);
    p->headerDone = 1;
  }
  for(int i = 0; i < nCol; i++) fprintf(p->out, "%s%s", i ? "|" : "", azVal[i] ? azVal[i] : "");
  fputc('\n', p->out);
  return 0;
}

/*
** The length of the first statement of Z, up to and including its ';'
** outside quotes and comments, or strlen(Z) if it has none.  *PCOMPLETE is
** set to 1 if a ';' ended it.
*/
static size_t sqlStatement(const char *z, int *pComplete){
  size_t i = 0;
  *pComplete = 0;
  while( z[i] ){
    char c = z[i];
    if( c == '\'' || c == '"' || c == '`' || c == '[' ){
      char close = c == '[' ? ']' : c;
      i++;
      while( z[i] && z[i] != close ) i++;
      if( z[i] ) i++;
    }else if( c == '-' && z[i + 1] == '-' ){
      while( z[i] && z[i] != '\n' ) i++;
    }else if( c == '/' && z[i + 1] == '*' ){
      i += 2;
      while( z[i] && !(z[i] == '*' && z[i + 1] == '/') ) i++;
      if( z[i] ) i += 2;
    }else if( c == ';' ){
      *pComplete = 1;
      return i + 1;
    }else{
      i++;
    }
  }
  return i;
}

/* 1 if Z holds nothing but blanks, ';' and comments. */
static int sqlIsBlank(const char *z){
  while( *z ){
    if( isspace((unsigned char)*z) || *z == ';' ){
      z++;
    }else if( z[0] == '-' && z[1] == '-' ){
      while( *z && *z != '\n' ) z++;
    }else if( z[0] == '/' && z[1] == '*' ){
      const char *e = strstr(z + 2, "*/");
      if( e == 0 ) return 1;
      z = e + 2;
    }else{
      return 0;
    }
  }
  return 1;
}

/* 1 if Z ends with a complete statement (its last ';' outside quotes). */
static int sqlComplete(const char *z){
  int complete = 0;
  while( *z ){
    int c;
    size_t n = sqlStatement(z, &c);
    if( c ) complete = 1;
    else if( !sqlIsBlank(z) ) complete = 0;
    z += n;
  }
  return complete;
}

/* Run the SQL text ZSQL, statement by statement (so each gets its header). */
static int runSql(ShellState *p, const char *zSql){
  if( needDb(p, "SQL") ) return 1;
  size_t len = strlen(zSql);
  char *zCopy = malloc(len + 1);
  if( zCopy == 0 ){ shellError(p, "out of memory"); return 1; }
  const char *z = zSql;
  while( *z ){
    int complete;
    size_t n = sqlStatement(z, &complete);
    memcpy(zCopy, z, n);
    zCopy[n] = 0;
    z += n;
    if( sqlIsBlank(zCopy) ) continue;
    p->headerDone = 0;
    int rc = pagedb_sql(p->db, zCopy, sqlRow, p);
    if( rc ){
      char *zShow = zCopy;
      while( isspace((unsigned char)*zShow) ) zShow++;
      shellError(p, "SQL \"%s\": %s: %s", zShow, pagedb_errname(rc), pagedb_errmsg(p->db));
      free(zCopy);
      return 1;
    }
  }
  free(zCopy);
  return 0;
}

/* ------------------------------------------------------------------ */
/* Dot-commands                                                        */
/* ------------------------------------------------------------------ */

typedef int (*DotFunc)(ShellState *, int nArg, char **azArg);

/* USAGE: .count
** Print the number of committed samples. */
static int dotCount(ShellState *p, int nArg, char **azArg){
  if( nArg != 1 ){ shellError(p, ".count: unexpected argument \"%s\"", azArg[1]); return 1; }
  if( needDb(p, ".count") ) return 1;
  fprintf(p->out, "%lld\n", (long long)pagedb_count(p->db));
  return 0;
}

/* USAGE: .fields
** One line per field: number|name|type|codec. */
static int dotFields(ShellState *p, int nArg, char **azArg){
  if( nArg != 1 ){ shellError(p, ".fields: unexpected argument \"%s\"", azArg[1]); return 1; }
  if( needDb(p, ".fields") ) return 1;
  if( p->headers ) fprintf(p->out, "field|name|type|codec\n");
  for(int i = 0; i < pagedb_field_count(p->db); i++){
    fprintf(p->out, "%d|%s|%s|%s\n", i, pagedb_field_name(p->db, i),
            typeName(pagedb_field_type(p->db, i)), codecName(pagedb_field_codec(p->db, i)));
  }
  return 0;
}

/* Print value N bytes at DATA of a field of TYPE for .get. */
static void printValue(ShellState *p, int type, const uint8_t *data, size_t n){
  if( type == PAGEDB_TEXT ){
    fwrite(data, 1, n, p->out);
    fputc('\n', p->out);
    return;
  }
  fprintf(p->out, "%zu bytes", n);
  if( n ) fputc(':', p->out);
  for(size_t k = 0; k < n && k < HEX_PREVIEW; k++) fprintf(p->out, " %02x", data[k]);
  if( n > HEX_PREVIEW ) fprintf(p->out, " ...");
  fputc('\n', p->out);
}

/* USAGE: .get ID [FIELD]
** Print sample ID's fields, one `name = value` line each (or only FIELD's
** value): text and numbers as they are, bytes as a size and a hex preview. */
static int dotGet(ShellState *p, int nArg, char **azArg){
  if( nArg < 2 || nArg > 3 ){
    shellError(p, ".get: %s (usage: .get ID [FIELD])",
               nArg < 2 ? "missing ID" : "too many arguments");
    return 1;
  }
  if( needDb(p, ".get") ) return 1;
  char *end;
  errno = 0;
  long long id = strtoll(azArg[1], &end, 10);
  if( errno || end == azArg[1] || *end || id < 0 ){
    shellError(p, ".get %s: not a sample id (an integer >= 0)", azArg[1]);
    return 1;
  }
  int f0 = 0, f1 = pagedb_field_count(p->db);
  if( nArg == 3 ){
    f0 = pagedb_field_index(p->db, azArg[2]);
    if( f0 < 0 ){
      shellError(p, ".get %s %s: no field \"%s\" (see .fields)", azArg[1], azArg[2], azArg[2]);
      return 1;
    }
    f1 = f0 + 1;
  }
  if( p->rd == 0 ){
    int rc = pagedb_reader_open(p->db, PAGEDB_READ_COPY, &p->rd);
    if( rc ){
      shellError(p, ".get %s: pagedb_reader_open: %s (%s)", azArg[1], pagedb_errname(rc),
                 pagedb_errmsg(p->db));
      return 1;
    }
  }
  int nFound = 0, nShown = 0;
  size_t w = 0;
  for(int f = f0; f < f1; f++){
    size_t k = strlen(pagedb_field_name(p->db, f));
    if( k > w ) w = k;
  }
  for(int f = f0; f < f1; f++){
    int type = pagedb_field_type(p->db, f);
    const char *zName = pagedb_field_name(p->db, f);
    const void *data = 0;
    size_t n = 0;
    int64_t iv = 0;
    double rv = 0;
    int rc;
    if( type == PAGEDB_INT ) rc = pagedb_read_int(p->rd, id, f, &iv);
    else if( type == PAGEDB_REAL ) rc = pagedb_read_real(p->rd, id, f, &rv);
    else rc = pagedb_read(p->rd, id, f, &data, &n);
    if( rc == PAGEDB_NOTFOUND ) continue;
    if( rc ){
      shellError(p, ".get %s %s: %s (%s)", azArg[1], zName, pagedb_errname(rc),
                 pagedb_reader_errmsg(p->rd));
      return 1;
    }
    nFound++;
    if( nArg == 2 ) fprintf(p->out, "%-*s = ", (int)w, zName);
    if( type == PAGEDB_INT ) fprintf(p->out, "%lld\n", (long long)iv);
    else if( type == PAGEDB_REAL ) fprintf(p->out, "%.17g\n", rv);
    else printValue(p, type, data, n);
    nShown++;
  }
  if( nFound == 0 ){
    if( nArg == 3 ){
      shellError(p, ".get %s %s: sample %s has no %s (or there is no sample %s)", azArg[1],
                 azArg[2], azArg[1], azArg[2], azArg[1]);
    }else{
      shellError(p, ".get %s: no sample %s", azArg[1], azArg[1]);
    }
    return 1;
  }
  return 0;
}

/* Turn "on"/"off" (yes/no, true/false, 1/0) into 1/0; -1 if neither. */
static int booleanValue(const char *z){
  static const char *azOn[] = { "on", "yes", "true", "1" };
  static const char *azOff[] = { "off", "no", "false", "0" };
  for(int i = 0; i < 4; i++){
    if( strcasecmp(z, azOn[i]) == 0 ) return 1;
    if( strcasecmp(z, azOff[i]) == 0 ) return 0;
  }
  return -1;
}

/* USAGE: .headers on|off
** Print the column names before the rows of each SQL statement, or not. */
static int dotHeaders(ShellState *p, int nArg, char **azArg){
  if( nArg != 2 ){ shellError(p, ".headers: usage: .headers on|off"); return 1; }
  int v = booleanValue(azArg[1]);
  if( v < 0 ){
    shellError(p, ".headers %s: not on or off", azArg[1]);
    return 1;
  }
  p->headers = v;
  return 0;
}

static int dotHelp(ShellState *p, int nArg, char **azArg);

/* USAGE: .info
** The dataset: paths, page size, fields, samples, pages, data file size. */
static int dotInfo(ShellState *p, int nArg, char **azArg){
  if( nArg != 1 ){ shellError(p, ".info: unexpected argument \"%s\"", azArg[1]); return 1; }
  if( needDb(p, ".info") ) return 1;
  pagedb *db = p->db;
  struct stat st;
  int nField = pagedb_field_count(db);
  fprintf(p->out, "path:           %s\n", pagedb_path(db));
  fprintf(p->out, "catalog:        %s\n", pagedb_catalog_path(db));
  fprintf(p->out, "page size:      %zu\n", pagedb_page_size(db));
  fprintf(p->out, "fields:         %d", nField);
  for(int i = 0; i < nField; i++){
    fprintf(p->out, "%s%s %s", i ? ", " : " (", pagedb_field_name(db, i),
            typeName(pagedb_field_type(db, i)));
  }
  fprintf(p->out, "%s\n", nField ? ")" : "");
  fprintf(p->out, "samples:        %lld\n", (long long)pagedb_count(db));
  fprintf(p->out, "pages:          %lld\n", (long long)pagedb_page_count(db));
  if( stat(pagedb_path(db), &st) == 0 ){
    fprintf(p->out, "data file size: %lld\n", (long long)st.st_size);
  }else{
    fprintf(p->out, "data file size: ? (%s)\n", strerror(errno));
  }
  fprintf(p->out, "library:        %s\n", pagedb_libversion());
  return 0;
}

/* USAGE: .open [-readonly] [-demo] [-vfs NAME] FILE
** Close the current dataset, then open FILE (options as on the command line,
** for this and later opens).  If FILE cannot be opened, none is open. */
static int dotOpen(ShellState *p, int nArg, char **azArg){
  const char *zFile = 0;
  for(int i = 1; i < nArg; i++){
    const char *z = azArg[i];
    if( z[0] == '-' && z[1] == '-' ) z++;
    if( strcmp(z, "-readonly") == 0 ){
      p->readonly = 1;
    }else if( strcmp(z, "-demo") == 0 ){
      p->demo = 1;
    }else if( strcmp(z, "-vfs") == 0 ){
      if( i + 1 >= nArg ){ shellError(p, ".open -vfs: missing NAME"); return 1; }
      p->zVfs = pagedb_vfs_find(azArg[i + 1]) ? pagedb_vfs_find(azArg[i + 1])->zName : 0;
      if( p->zVfs == 0 ){ shellError(p, ".open -vfs %s: no such VFS", azArg[i + 1]); return 1; }
      i++;
    }else if( z[0] == '-' ){
      shellError(p, ".open %s: unknown option", azArg[i]);
      return 1;
    }else if( zFile ){
      shellError(p, ".open %s: only one FILE (already %s)", azArg[i], zFile);
      return 1;
    }else{
      zFile = azArg[i];
    }
  }
  if( zFile == 0 ){ shellError(p, ".open: missing FILE"); return 1; }
  return openDb(p, ".open", zFile);
}

/* USAGE: .quit
** Exit the shell. */
static int dotQuit(ShellState *p, int nArg, char **azArg){
  if( nArg != 1 ){ shellError(p, ".quit: unexpected argument \"%s\"", azArg[1]); return 1; }
  return 2;
}

/* The dot-commands, in the order .help shows them. */
static const struct DotCmd {
  const char *zName;
  DotFunc xFunc;
  const char *zUsage;
  const char *zHelp;
} aDotCmd[] = {
  { "count",   dotCount,   ".count",                  "Print the number of committed samples" },
  { "exit",    dotQuit,    ".exit",                   "Exit (as .quit)" },
  { "fields",  dotFields,  ".fields",                 "List the fields: number|name|type|codec" },
  { "get",     dotGet,     ".get ID [FIELD]",         "Print sample ID (bytes as size + hex preview)" },
  { "headers", dotHeaders, ".headers on|off",         "Print column names before SQL results" },
  { "help",    dotHelp,    ".help [COMMAND]",         "Show this help, or one command's" },
  { "info",    dotInfo,    ".info",                   "Paths, page size, fields, samples, pages, size" },
  { "open",    dotOpen,    ".open [OPTIONS] FILE",    "Close the dataset and open FILE" },
  { "quit",    dotQuit,    ".quit",                   "Exit" },
};
#define N_DOTCMD ((int)(sizeof(aDotCmd) / sizeof(aDotCmd[0])))

/* USAGE: .help [COMMAND]
** One line per command, or the line of COMMAND. */
static int dotHelp(ShellState *p, int nArg, char **azArg){
  if( nArg > 2 ){ shellError(p, ".help: unexpected argument \"%s\"", azArg[2]); return 1; }
  const char *zWant = nArg == 2 ? azArg[1] + (azArg[1][0] == '.') : 0;
  int n = 0;
  for(int i = 0; i < N_DOTCMD; i++){
    if( zWant && strncmp(aDotCmd[i].zName, zWant, strlen(zWant)) ) continue;
    fprintf(p->out, "%-24s %s\n", aDotCmd[i].zUsage, aDotCmd[i].zHelp);
    n++;
  }
  if( zWant == 0 ){
    fprintf(p->out, "%-24s %s\n", "SQL;", "Anything else: SQL on the catalog (read-only)");
  }
  if( n == 0 ){
    shellError(p, ".help %s: no such command", azArg[1]);
    return 1;
  }
  return 0;
}

/*
** Split the dot-command line Z (modified in place) into at most MAX_ARGS
** arguments: blank-separated, '...' or "..." quoting.  Returns the count,
** or -1 for an unterminated quote or too many arguments.
*/
static int splitArgs(char *z, char **azArg){
  int n = 0;
  while( *z ){
    while( isspace((unsigned char)*z) ) z++;
    if( *z == 0 ) break;
    if( n >= MAX_ARGS ) return -1;
    if( *z == '\'' || *z == '"' ){
      char q = *z++;
      azArg[n++] = z;
      while( *z && *z != q ) z++;
      if( *z == 0 ) return -1;
      *z++ = 0;
    }else{
      azArg[n++] = z;
      while( *z && !isspace((unsigned char)*z) ) z++;
      if( *z ) *z++ = 0;
    }
  }
  return n;
}

/* Run the dot-command line ZLINE ('.' first).  0 ok, 1 error, 2 exit. */
static int runDot(ShellState *p, const char *zLine){
  char *z = strdup(zLine + 1);
  char *azArg[MAX_ARGS];
  if( z == 0 ){ shellError(p, "out of memory"); return 1; }
  int nArg = splitArgs(z, azArg);
  int rc = 1;
  if( nArg < 0 ){
    shellError(p, "%s: unterminated quote or more than %d arguments", zLine, MAX_ARGS);
  }else if( nArg == 0 ){
    shellError(p, "\".\": a command name must follow the dot (see .help)");
  }else{
    const struct DotCmd *pCmd = 0;
    size_t len = strlen(azArg[0]);
    int nMatch = 0;
    for(int i = 0; i < N_DOTCMD; i++){
      if( strcmp(aDotCmd[i].zName, azArg[0]) == 0 ){ pCmd = &aDotCmd[i]; nMatch = 1; break; }
      if( strncmp(aDotCmd[i].zName, azArg[0], len) == 0 ){ pCmd = &aDotCmd[i]; nMatch++; }
    }
    if( nMatch == 1 ){
      rc = pCmd->xFunc(p, nArg, azArg);
    }else{
      shellError(p, ".%s: %s command (see .help)", azArg[0],
                 nMatch ? "ambiguous" : "unknown");
    }
  }
  free(z);
  return rc;
}

/* Run one command: a dot-command or SQL.  0 ok, 1 error, 2 exit. */
static int runCommand(ShellState *p, const char *z){
  while( isspace((unsigned char)*z) ) z++;
  if( *z == '.' ) return runDot(p, z);
  if( sqlIsBlank(z) ) return 0;
  return runSql(p, z);
}

/* ------------------------------------------------------------------ */
/* The input loop                                                      */
/* ------------------------------------------------------------------ */

/* The next line of input without its newline (malloc'd), or NULL at EOF. */
static char *readLine(ShellState *p, int more){
  if( p->interactive ){
    char *z = readline(more ? "   ...> " : "pagedb> ");
    if( z && *z ) add_history(z);
    return z;
  }
  size_t cap = 256, n = 0;
  char *z = malloc(cap);
  if( z == 0 ) return 0;
  int c;
  while( (c = getchar()) != EOF && c != '\n' ){
    if( n + 2 > cap ){
      char *z2 = realloc(z, cap *= 2);
      if( z2 == 0 ){ free(z); return 0; }
      z = z2;
    }
    z[n++] = (char)c;
  }
  if( c == EOF && n == 0 ){ free(z); return 0; }
  if( n && z[n - 1] == '\r' ) n--;
  z[n] = 0;
  return z;
}

/* Read commands until EOF or .quit.  SQL may span lines, up to a ';'. */
static int processInput(ShellState *p){
  char *zSql = 0;
  size_t nSql = 0;
  int lineno = 0, rc = 0;
  char *zLine;
  while( (zLine = readLine(p, nSql > 0)) != 0 ){
    lineno++;
    const char *z = zLine;
    while( isspace((unsigned char)*z) ) z++;
    if( nSql == 0 && *z == '.' ){
      rc = runDot(p, z);
    }else if( nSql == 0 && sqlIsBlank(z) ){
      rc = 0;
    }else{
      size_t k = strlen(zLine);
      char *z2 = realloc(zSql, nSql + k + 2);
      if( z2 == 0 ){ free(zLine); shellError(p, "out of memory"); rc = 1; break; }
      zSql = z2;
      memcpy(zSql + nSql, zLine, k);
      nSql += k;
      zSql[nSql++] = '\n';
      zSql[nSql] = 0;
      rc = 0;
      if( sqlComplete(zSql) ){
        rc = runSql(p, zSql);
        nSql = 0;
      }
    }
    free(zLine);
    if( rc == 1 && !p->interactive ){
      fprintf(stderr, "(at line %d of the input)\n", lineno);
    }
    if( rc == 2 || (rc == 1 && p->bail) ) break;
    fflush(p->out);
  }
  if( nSql > 0 && rc != 2 && !(rc == 1 && p->bail) && !sqlIsBlank(zSql) ){
    rc = runSql(p, zSql);
  }
  free(zSql);
  if( p->interactive && zLine == 0 ) putchar('\n');
  return rc;
}

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

static const char zUsage[] =
  "usage: pagedb [OPTIONS] [FILE] [COMMAND ...]\n"
  "Open the pagedb dataset FILE (data file FILE, catalog FILE-catalog) and run\n"
  "each COMMAND (a dot-command or SQL on the catalog), or read commands from\n"
  "standard input.  Options:\n"
  "  -bail         stop after the first error\n"
  "  -demo         if FILE does not exist, create a demo dataset there\n"
  "  -help         show this message\n"
  "  -readonly     open the dataset read-only\n"
  "  -version      show the pagedb version\n"
  "  -vfs NAME     use the VFS NAME\n"
  "Enter \".help\" for the commands.\n";

int main(int argc, char **argv){
  static ShellState state;
  ShellState *p = &state;
  const char *zFile = 0;
  int i;
  p->out = stdout;
  for(i = 1; i < argc; i++){
    const char *z = argv[i];
    if( z[0] != '-' ) break;
    if( z[1] == '-' ) z++;
    if( strcmp(z, "-bail") == 0 ){
      p->bail = 1;
    }else if( strcmp(z, "-demo") == 0 ){
      p->demo = 1;
    }else if( strcmp(z, "-readonly") == 0 ){
      p->readonly = 1;
    }else if( strcmp(z, "-version") == 0 ){
      printf("%s\n", pagedb_libversion());
      return 0;
    }else if( strcmp(z, "-help") == 0 || strcmp(z, "-h") == 0 ){
      fputs(zUsage, stdout);
      return 0;
    }else if( strcmp(z, "-vfs") == 0 ){
      if( i + 1 >= argc ){
        fprintf(stderr, "Error: -vfs: missing NAME\n%s", zUsage);
        return 1;
      }
      p->zVfs = argv[++i];
      if( pagedb_vfs_find(p->zVfs) == 0 ){
        fprintf(stderr, "Error: -vfs %s: no such VFS\n", p->zVfs);
        return 1;
      }
    }else{
      fprintf(stderr, "Error: unknown option: %s\n%s", argv[i], zUsage);
      return 1;
    }
  }
  if( i < argc ) zFile = argv[i++];
  if( zFile ){
    if( openDb(p, "pagedb", zFile) && (i < argc || p->bail) ) return 1;
  }else if( p->demo ){
    fprintf(stderr, "Error: -demo: needs a FILE\n");
    return 1;
  }
  int rc = 0;
  if( i < argc ){
    for(; i < argc; i++){
      rc = runCommand(p, argv[i]);
      fflush(p->out);
      if( rc == 2 || (rc == 1 && p->bail) ) break;
    }
  }else{
    p->interactive = isatty(0);
    if( p->interactive ){
      printf("pagedb %s\nEnter \".help\" for usage hints.\n", pagedb_libversion());
      if( p->db == 0 ) printf("No dataset is open: use .open FILE (or -demo FILE).\n");
    }
    rc = processInput(p);
  }
  closeDb(p);
  return p->nErr ? 1 : 0;
}
