/*
** shell.c -- pagedb, the command-line shell of pagedb datasets.
**
**   pagedb [OPTIONS] [FILE] [COMMAND ...]
**
** With COMMANDs, runs each (a dot-command or SQL on the catalog) and exits;
** without, reads commands from standard input: interactively, with line
** editing, history and the prompt "pagedb> ", when it is a terminal (and
** not -batch).  The model is sqlite3's shell.c: all state in one ShellState
** (shell.h), a help table with one line per command, one function per
** dot-command under a USAGE comment returning 0 (ok), 1 (error) or 2
** (exit), and error messages that name the command and the offending
** argument.  The exit status is 0 if every command succeeded, 1 after any
** error.
**
** This file holds main, the input loop, the command table and the commands
** about the shell itself; shell.h lists where the others are.
**
** The demo dataset (-demo) is made by the benchmark's W-img generator
** (tool/workload.c).
*/
#include "shell.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <editline/readline.h>

#include "workload.h"
#include "xfer.h"

#define MAX_ARGS  64          /* arguments of one dot-command */
#define DEMO_SAMPLES 200      /* samples in the -demo dataset */

/* ------------------------------------------------------------------ */
/* Helpers shared by the command files (shell.h)                       */
/* ------------------------------------------------------------------ */

void shellError(ShellState *p, const char *fmt, ...){
  va_list ap;
  va_start(ap, fmt);
  fflush(p->out);
  fprintf(stderr, "Error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  p->nErr++;
}

int shellNeedDb(ShellState *p, const char *zCmd){
  if( p->db ) return 0;
  shellError(p, "%s: no dataset is open (use .open FILE or .create FILE)", zCmd);
  return 1;
}

int shellNeedWritable(ShellState *p, const char *zCmd){
  if( shellNeedDb(p, zCmd) ) return 1;
  if( !p->dbReadonly ) return 0;
  shellError(p, "%s: the dataset %s is open read-only", zCmd, pagedb_path(p->db));
  return 1;
}

void shellCloseReader(ShellState *p){
  pagedb_reader_close(p->rd);
  p->rd = 0;
}

int shellInt(const char *z, int64_t *v){
  char *end;
  errno = 0;
  long long x = strtoll(z, &end, 10);
  if( errno || end == z || *end ) return 1;
  *v = x;
  return 0;
}

int shellSize(const char *z, int64_t *v){
  char *end;
  errno = 0;
  long long x = strtoll(z, &end, 10);
  if( errno || end == z || x < 0 ) return 1;
  int shift = 0;
  if( *end == 'k' || *end == 'K' ) shift = 10, end++;
  else if( *end == 'm' || *end == 'M' ) shift = 20, end++;
  else if( *end == 'g' || *end == 'G' ) shift = 30, end++;
  if( *end == 'i' && shift ) end++;
  if( (*end == 'b' || *end == 'B') && shift ) end++;
  if( *end || x > (INT64_MAX >> shift) ) return 1;
  *v = (int64_t)x << shift;
  return 0;
}

const char *shellTypeName(int type){
  switch( type ){
    case PAGEDB_BYTES: return "BYTES";
    case PAGEDB_TEXT:  return "TEXT";
    case PAGEDB_INT:   return "INT";
    case PAGEDB_REAL:  return "REAL";
  }
  return "?";
}

void shellCodecName(int codec, char *buf, size_t cap){
  int kind = PAGEDB_CODEC_KIND(codec), level = PAGEDB_CODEC_LEVEL_OF(codec);
  const char *z = kind == PAGEDB_CODEC_NONE ? "none" : kind == PAGEDB_CODEC_LZ4 ? "lz4"
                : kind == PAGEDB_CODEC_LZ4HC ? "lz4hc" : "?";
  if( level && kind != PAGEDB_CODEC_NONE ) snprintf(buf, cap, "%s:%d", z, level);
  else snprintf(buf, cap, "%s", z);
}

/* ------------------------------------------------------------------ */
/* Opening                                                             */
/* ------------------------------------------------------------------ */

void shellCloseDb(ShellState *p){
  shellCloseReader(p);
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
int shellOpenDb(ShellState *p, const char *zCmd, const char *zFile){
  shellCloseDb(p);
  p->dbReadonly = 0;
  if( p->demo && access(zFile, F_OK) != 0 ){
    if( makeDemo(p, zFile) ) return 1;
  }
  int rc;
  const char *zNote = 0;
  if( !p->readonly ){
    rc = pagedb_open(zFile, &p->db, PAGEDB_OPEN_READWRITE, p->zVfs);
    int prim = rc & 0xff;
    if( rc == PAGEDB_OK ){
      p->zDbVfs = pagedb_vfs_find(p->zVfs) ? pagedb_vfs_find(p->zVfs)->zName : "?";
      return 0;
    }
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
  p->dbReadonly = 1;
  p->zDbVfs = pagedb_vfs_find(p->zVfs) ? pagedb_vfs_find(p->zVfs)->zName : "?";
  if( zNote ) fprintf(stderr, "note: %s: %s; opened read-only\n", zFile, zNote);
  return 0;
}

/* ------------------------------------------------------------------ */
/* Commands about the shell itself                                     */
/* ------------------------------------------------------------------ */

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

/* Shared by the on|off commands: *PV = ARG's value, or an error naming it. */
static int onOff(ShellState *p, int nArg, char **azArg, int *pV){
  if( nArg != 2 ){
    shellError(p, ".%s: %s (usage: .%s on|off)", azArg[0],
               nArg < 2 ? "missing on|off" : "too many arguments", azArg[0]);
    return 1;
  }
  int v = booleanValue(azArg[1]);
  if( v < 0 ){
    shellError(p, ".%s %s: not on or off", azArg[0], azArg[1]);
    return 1;
  }
  *pV = v;
  return 0;
}

/* USAGE: .headers on|off
** Print the column names before the rows in list and csv modes. */
static int dotHeaders(ShellState *p, int nArg, char **azArg){
  return onOff(p, nArg, azArg, &p->headers);
}

/* USAGE: .timer on|off
** After each command, print the time it took (real, user, system). */
static int dotTimer(ShellState *p, int nArg, char **azArg){
  return onOff(p, nArg, azArg, &p->timer);
}

/* USAGE: .writable on|off
** With "on", SQL that writes goes to pagedb_sql_update: it may change the
** values of INT and REAL fields (relabel samples) and nothing else, since
** every other column mirrors the data file.  Other changes are made with
** .put, .delete, .attach, .vacuum and .import. */
static int dotWritable(ShellState *p, int nArg, char **azArg){
  int v;
  if( onOff(p, nArg, azArg, &v) ) return 1;
  if( v && p->db && p->dbReadonly ){
    shellError(p, ".writable on: the dataset %s is open read-only", pagedb_path(p->db));
    return 1;
  }
  p->writable = v;
  return 0;
}

static const char *const azModeName[] = { "list", "csv", "json", "line", "table", "box" };

/* USAGE: .mode [list|csv|json|line|table|box]
** Set how results print; without an argument, print the current mode. */
static int dotMode(ShellState *p, int nArg, char **azArg){
  if( nArg == 1 ){
    fprintf(p->out, "current output mode: %s\n", azModeName[p->mode]);
    return 0;
  }
  if( nArg > 2 ){ shellError(p, ".mode %s: unexpected argument \"%s\"", azArg[1], azArg[2]); return 1; }
  for(int i = 0; i < (int)(sizeof azModeName / sizeof azModeName[0]); i++){
    if( strcmp(azArg[1], azModeName[i]) == 0 ){ p->mode = i; return 0; }
  }
  shellError(p, ".mode %s: unknown mode (list, csv, json, line, table or box)", azArg[1]);
  return 1;
}

/* USAGE: .vfs [NAME]
** Without NAME: list the registered VFSes (storage backends), whether each
** works for files beside the open dataset (or in the current directory),
** and which the next .open uses.  With NAME: use that VFS from the next
** .open (or .create) on. */
static int dotVfs(ShellState *p, int nArg, char **azArg){
  if( nArg > 2 ){ shellError(p, ".vfs %s: unexpected argument \"%s\"", azArg[1], azArg[2]); return 1; }
  if( nArg == 2 ){
    pagedb_vfs *v = pagedb_vfs_find(azArg[1]);
    if( v == 0 ){ shellError(p, ".vfs %s: no such VFS (see .vfs)", azArg[1]); return 1; }
    p->zVfs = v->zName;
    return 0;
  }
  char zDir[4096] = ".";
  if( p->db ){
    snprintf(zDir, sizeof zDir, "%s", pagedb_path(p->db));
    char *z = strrchr(zDir, '/');
    if( z == zDir ) z[1] = 0;
    else if( z ) *z = 0;
    else strcpy(zDir, ".");
  }
  pagedb_vfs *pDflt = pagedb_vfs_find(0);
  pagedb_vfs *pNext = p->zVfs ? pagedb_vfs_find(p->zVfs) : pDflt;
  char *azName[] = { "name", "default", "next_open", "works_here" };
  ShellResult r;
  if( resultInit(&r, 4, azName) ){ resultFree(&r); shellError(p, ".vfs: out of memory"); return 1; }
  for(pagedb_vfs *v = pagedb_vfs_next(0); v; v = pagedb_vfs_next(v)){
    char why[256] = "";
    int rc = pagedb_vfs_check(v, zDir, why, sizeof why);
    resultAddf(&r, "%s\t%s\t%s\t%s", v->zName, v == pDflt ? "yes" : "no",
               v == pNext ? "yes" : "no", rc == PAGEDB_OK ? "yes" : why[0] ? why : pagedb_errname(rc));
  }
  resultPrint(p, &r, 1);
  resultFree(&r);
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
      pagedb_vfs *v = pagedb_vfs_find(azArg[i + 1]);
      if( v == 0 ){ shellError(p, ".open -vfs %s: no such VFS", azArg[i + 1]); return 1; }
      p->zVfs = v->zName;
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
  return shellOpenDb(p, ".open", zFile);
}

/* USAGE: .quit
** Exit the shell. */
static int dotQuit(ShellState *p, int nArg, char **azArg){
  if( nArg != 1 ){ shellError(p, ".%s: unexpected argument \"%s\"", azArg[0], azArg[1]); return 1; }
  return 2;
}

static int dotHelp(ShellState *p, int nArg, char **azArg);

/*
** The dot-commands, in the order .help shows them: one line each.  A
** command may be abbreviated to any unambiguous prefix.
*/
static const struct DotCmd {
  const char *zName;
  DotFunc xFunc;
  const char *zUsage;
  const char *zHelp;
} aDotCmd[] = {
  { "attach",   dotAttach,   ".attach FILE [--keep|--offset N|--after]",
                             "Append FILE's samples (ids kept, shifted or renumbered), commit" },
  { "bench",    dotBench,    ".bench [N]",  "Read N samples (all) and write them to a scratch copy: MB/s" },
  { "check",    dotCheck,    ".check [--quick]",  "Check integrity; print each problem and the total" },
  { "count",    dotCount,    ".count",      "Print the number of committed samples" },
  { "create",   dotCreate,   ".create FILE [--field NAME:TYPE[:CODEC[:LEVEL]] ...] [--page-size N]",
                             "Create and open a dataset (TYPE bytes|text|int|real, CODEC none|lz4|lz4hc)" },
  { "delete",   dotDelete,   ".delete ID|LO-HI|WHERE-SQL",
                             "Delete samples by id, id range or SQL condition on table sample, commit" },
  { "exit",     dotQuit,     ".exit",       "Exit (as .quit)" },
  { "export",   dotExport,   ".export DEST [--where SQL]",
                             "Write samples as files in directory DEST, or as WebDataset tar DEST.tar[.gz]" },
  { "fields",   dotFields,   ".fields",     "List the fields: number, name, type, codec" },
  { "get",      dotGet,      ".get ID [FIELD] [FILE]",
                             "Print sample ID (bytes: size and hex), or write FIELD's raw bytes to FILE" },
  { "headers",  dotHeaders,  ".headers on|off",  "Print column names in list and csv modes" },
  { "help",     dotHelp,     ".help [COMMAND]",  "Show this help, or one command's" },
  { "import",   dotImport,   ".import SOURCE [--threads N] [--codec lz4[:L]|lz4hc[:L]] [--page-size N]",
                             "Import an ImageFolder directory, WebDataset .tar/.tar.gz shards (glob) or a CSV file" },
  { "info",     dotInfo,     ".info",       "Header (format, page size, data offset), counts, sizes, VFS" },
  { "mode",     dotMode,     ".mode [list|csv|json|line|table|box]",  "Set the output mode" },
  { "open",     dotOpen,     ".open [-readonly] [-vfs NAME] FILE",  "Close the dataset and open FILE" },
  { "pages",    dotPages,    ".pages [N]",  "Per-run fill from the page table (the first N runs)" },
  { "put",      dotPut,      ".put ID|auto FIELD=VALUE|FIELD=@FILE ...",
                             "Write one sample (VALUE, or FILE's bytes) and commit" },
  { "quit",     dotQuit,     ".quit",       "Exit" },
  { "schema",   dotSchema,   ".schema [PATTERN]",  "The catalog's SQL schema (tables matching PATTERN)" },
  { "stats",    dotStats,    ".stats",      "Space, compression per field, fill histogram, I/O" },
  { "timer",    dotTimer,    ".timer on|off",  "Print the time each command takes" },
  { "vacuum",   dotVacuum,   ".vacuum [INTO FILE] [--page-size N]",
                             "Rewrite without deleted samples and unused page ends" },
  { "vfs",      dotVfs,      ".vfs [NAME]", "List the VFSes and whether each works; use NAME from the next open" },
  { "writable", dotWritable, ".writable on|off",
                             "Let SQL change INT/REAL field values (UPDATE sample SET ...)" },
};
#define N_DOTCMD ((int)(sizeof(aDotCmd) / sizeof(aDotCmd[0])))

/* USAGE: .help [COMMAND]
** One line per command, or the lines of the commands COMMAND begins. */
static int dotHelp(ShellState *p, int nArg, char **azArg){
  if( nArg > 2 ){ shellError(p, ".help: unexpected argument \"%s\"", azArg[2]); return 1; }
  const char *zWant = nArg == 2 ? azArg[1] + (azArg[1][0] == '.') : 0;
  int n = 0;
  for(int i = 0; i < N_DOTCMD; i++){
    if( zWant && strncmp(aDotCmd[i].zName, zWant, strlen(zWant)) ) continue;
    if( strlen(aDotCmd[i].zUsage) > 28 ){
      fprintf(p->out, "%s\n%-28s %s\n", aDotCmd[i].zUsage, "", aDotCmd[i].zHelp);
    }else{
      fprintf(p->out, "%-28s %s\n", aDotCmd[i].zUsage, aDotCmd[i].zHelp);
    }
    n++;
  }
  if( zWant == 0 ){
    fprintf(p->out, "%-28s %s\n", "SQL;", "Anything else: SQL on the catalog (read-only)");
  }
  if( n == 0 ){
    shellError(p, ".help %s: no such command", azArg[1]);
    return 1;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* Running commands                                                    */
/* ------------------------------------------------------------------ */

/*
** Split the dot-command line Z (modified in place) into at most MAX_ARGS
** arguments: blank-separated, '...' or "..." quoting (a quote may start
** mid-argument: name='a b').  Returns the count, or -1 for an unterminated
** quote or too many arguments.
*/
static int splitArgs(char *z, char **azArg){
  int n = 0;
  while( *z ){
    while( isspace((unsigned char)*z) ) z++;
    if( *z == 0 ) break;
    if( n >= MAX_ARGS ) return -1;
    char *d = z;
    azArg[n++] = d;
    while( *z && !isspace((unsigned char)*z) ){
      if( *z == '\'' || *z == '"' ){
        char q = *z++;
        while( *z && *z != q ) *d++ = *z++;
        if( *z == 0 ) return -1;
        z++;
      }else{
        *d++ = *z++;
      }
    }
    int end = *z == 0;
    *d = 0;
    if( !end ) z++;
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
      azArg[0] = (char *)pCmd->zName;
      p->zCmdName = pCmd->zName;
      rc = pCmd->xFunc(p, nArg, azArg);
      p->zCmdName = 0;
    }else{
      shellError(p, ".%s: %s command (see .help)", azArg[0],
                 nMatch ? "ambiguous" : "unknown");
    }
  }
  free(z);
  return rc;
}

static double timeOf(struct timeval tv){ return tv.tv_sec + tv.tv_usec * 1e-6; }

/* Run one command: a dot-command or SQL.  0 ok, 1 error, 2 exit. */
static int runCommand(ShellState *p, const char *z){
  struct timespec t0, t1;
  struct rusage u0, u1;
  while( isspace((unsigned char)*z) ) z++;
  if( *z != '.' && shellSqlIsBlank(z) ) return 0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  getrusage(RUSAGE_SELF, &u0);
  int timer = p->timer;
  p->interrupted = 0;
  int rc = *z == '.' ? runDot(p, z) : shellRunSql(p, z);
  if( timer && p->timer ){
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &u1);
    fprintf(p->out, "Run Time: real %.3f user %.6f sys %.6f\n",
            (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
            timeOf(u1.ru_utime) - timeOf(u0.ru_utime), timeOf(u1.ru_stime) - timeOf(u0.ru_stime));
  }
  fflush(p->out);
  return rc;
}

/* 1 if Z ends with a complete statement (its last ';' outside quotes). */
static int sqlComplete(const char *z){
  int complete = 0;
  while( *z ){
    int c;
    size_t n = shellSqlStatement(z, &c);
    if( c ) complete = 1;
    else if( !shellSqlIsBlank(z) ) complete = 0;
    z += n;
  }
  return complete;
}

/* ------------------------------------------------------------------ */
/* The input loop                                                      */
/* ------------------------------------------------------------------ */

/* The next line of input without its newline (malloc'd), or NULL at EOF. */
static char *readLine(ShellState *p, int more, int *pDropped){
  if( p->interactive ){
    char *z;
    /* Ctrl-C makes libedit's readline return NULL, as at EOF: the shell
    ** stays, and the line typed so far is dropped (as sqlite3 does). */
    while( (z = readline(more && !*pDropped ? "   ...> " : "pagedb> ")) == 0 && p->interrupted ){
      p->interrupted = 0;
      *pDropped = 1;
    }
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
  int dropped = 0;
  while( (zLine = readLine(p, nSql > 0, &dropped)) != 0 ){
    lineno++;
    const char *z = zLine;
    while( isspace((unsigned char)*z) ) z++;
    if( dropped ){
      /* Ctrl-C at the prompt: the shell stays; a pending statement goes. */
      dropped = 0;
      nSql = 0;
    }
    if( !p->interactive && p->interrupted ){
      shellError(p, "interrupted");
      free(zLine);
      break;
    }
    if( nSql == 0 && *z == '.' ){
      rc = runCommand(p, z);
    }else if( nSql == 0 && shellSqlIsBlank(z) ){
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
        rc = runCommand(p, zSql);
        nSql = 0;
      }
    }
    free(zLine);
    if( rc == 1 && !p->interactive ){
      fprintf(stderr, "(at line %d of the input)\n", lineno);
    }
    if( rc == 2 || (rc == 1 && p->bail && !p->interactive) ) break;
  }
  if( zLine == 0 && !p->interactive && p->interrupted ){
    /* Ctrl-C interrupted the read of a script: not its end. */
    shellError(p, "interrupted");
    rc = 1;
  }
  if( nSql > 0 && rc != 2 && !(rc == 1 && p->bail) && !shellSqlIsBlank(zSql) && !p->interrupted ){
    rc = runCommand(p, zSql);
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
  "standard input.  Without FILE, the first COMMAND may be a dot-command\n"
  "(\".create FILE ...\", \".open FILE\").  Options:\n"
  "  -bail         stop after the first error\n"
  "  -batch        read standard input as a script even on a terminal\n"
  "  -box          box output mode (also -csv, -json, -line, -list, -table)\n"
  "  -demo         if FILE does not exist, create a demo dataset there\n"
  "  -header       column names in list and csv modes (-noheader: not)\n"
  "  -help         show this message\n"
  "  -readonly     open the dataset read-only\n"
  "  -version      show the pagedb version\n"
  "  -vfs NAME     use the VFS NAME\n"
  "Enter \".help\" for the commands.\n";

int main(int argc, char **argv){
  static ShellState state;
  ShellState *p = &state;
  const char *zFile = 0;
  int batch = 0, i;
  p->out = stdout;
  for(i = 1; i < argc; i++){
    const char *z = argv[i];
    if( z[0] != '-' ) break;
    if( z[1] == '-' ) z++;
    int m = -1;
    for(int k = 0; k < (int)(sizeof azModeName / sizeof azModeName[0]); k++){
      if( strcmp(z + 1, azModeName[k]) == 0 ) m = k;
    }
    if( m >= 0 ){
      p->mode = m;
    }else if( strcmp(z, "-bail") == 0 ){
      p->bail = 1;
    }else if( strcmp(z, "-batch") == 0 ){
      batch = 1;
    }else if( strcmp(z, "-header") == 0 || strcmp(z, "-headers") == 0 ){
      p->headers = 1;
    }else if( strcmp(z, "-noheader") == 0 ){
      p->headers = 0;
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
  p->progress = isatty(1) && isatty(2);
  shellSignals(p);
  /* The first argument is FILE, unless it is a dot-command and no such
  ** file exists ("pagedb .help", "pagedb '.create x.pagedb --field a:int'"). */
  if( i < argc && !(argv[i][0] == '.' && isalpha((unsigned char)argv[i][1])
                    && access(argv[i], F_OK) != 0) ){
    zFile = argv[i++];
  }
  if( zFile ){
    if( shellOpenDb(p, "pagedb", zFile) && (i < argc || p->bail) ) return 1;
  }else if( p->demo ){
    fprintf(stderr, "Error: -demo: needs a FILE\n");
    return 1;
  }
  if( i < argc ){
    for(; i < argc; i++){
      int rc = runCommand(p, argv[i]);
      if( rc == 2 || (rc == 1 && p->bail) ) break;
      if( p->interrupted ){
        shellError(p, "interrupted: the commands after \"%s\" were not run", argv[i]);
        break;
      }
    }
  }else{
    p->interactive = !batch && isatty(0);
    if( p->interactive ){
      printf("pagedb %s\nEnter \".help\" for usage hints.\n", pagedb_libversion());
      if( p->db == 0 ) printf("No dataset is open: use .open FILE or .create FILE.\n");
      stifle_history(1000);
    }
    processInput(p);
  }
  shellCloseDb(p);
  /* Give the pool's cached buffers back, so that leak checkers see none. */
  pagedb_shutdown();
  return p->nErr ? 1 : 0;
}
