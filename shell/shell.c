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
  if( p->zPending ){
    shellError(p, "%s: no dataset at %s: the file does not exist (the first command that writes "
               "creates it: .import SOURCE, .put ID FIELD=VALUE ..., or .create --field NAME:TYPE ...)",
               zCmd, p->zPending);
    return 1;
  }
  shellError(p, "%s: no dataset is open (use .open FILE or .create FILE)", zCmd);
  return 1;
}

/* Create the dataset p->zPending names, for the command ZCMD that writes
** first.  0, or 1 after an error. */
static int createPending(ShellState *p, const char *zCmd){
  char *zFile = p->zPending;
  pagedb *db = 0;
  int rc = pagedb_open(zFile, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, p->zVfs);
  if( rc ){
    shellError(p, "%s: cannot create \"%s\": %s (%s)", zCmd, zFile, pagedb_errname(rc),
               db ? pagedb_errmsg(db) : "out of memory");
    pagedb_close(db);
    return 1;
  }
  p->db = db;
  p->dbReadonly = 0;
  p->zDbVfs = pagedb_vfs_name(p->db) ? pagedb_vfs_name(p->db) : "?";
  p->zPending = 0;
  p->createdNow = 1;
  free(zFile);
  return 0;
}

int shellNeedCreate(ShellState *p, const char *zCmd){
  if( p->db == 0 && p->zPending ) return createPending(p, zCmd);
  return shellNeedWritable(p, zCmd);
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

const char *shellFieldType(pagedb *db, int i, char *z, size_t n){
  int dtype, ndim;
  int64_t dims[PAGEDB_TENSOR_MAX_DIMS];
  if( pagedb_field_tensor(db, i, &dtype, &ndim, dims) != PAGEDB_OK ) return shellTypeName(pagedb_field_type(db, i));
  size_t k = (size_t)snprintf(z, n, "tensor:%s:", pagedb_dtype_name(dtype));
  for(int d = 0; d < ndim && k < n; d++){
    if( dims[d] == PAGEDB_DIM_VAR ) k += (size_t)snprintf(z + k, n - k, "%s*", d ? "," : "");
    else k += (size_t)snprintf(z + k, n - k, "%s%lld", d ? "," : "", (long long)dims[d]);
  }
  return z;
}

const char *shellTypeName(int type){
  switch( type ){
    case PAGEDB_TENSOR: return "TENSOR";
    case PAGEDB_BYTES: return "BYTES";
    case PAGEDB_TEXT:  return "TEXT";
    case PAGEDB_INT:   return "INT";
    case PAGEDB_REAL:  return "REAL";
  }
  return "?";
}

void shellCodecName(int codec, char *buf, size_t cap){
  pagedb_codec_name(codec, buf, cap);
}

/* ------------------------------------------------------------------ */
/* Opening                                                             */
/* ------------------------------------------------------------------ */

void shellCloseDb(ShellState *p){
  shellCloseReader(p);
  free(p->zPending);
  p->zPending = 0;
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
** Open ZFILE as the current dataset: read-write unless -readonly or a URL
** (a remote dataset, which the remote VFS opens read-only).  A
** read-write open that fails because another process writes the dataset
** (or the file is not writable) falls back to read-only and says so.
** With -demo, a missing ZFILE is first made into the demo dataset.
*/
int shellOpenDb(ShellState *p, const char *zCmd, const char *zFile){
  shellCloseDb(p);
  p->dbReadonly = 0;
  int isUrl = strstr(zFile, "://") != 0;   /* s3://, http(s)://: remote, read-only */
  if( p->demo && !isUrl && access(zFile, F_OK) != 0 ){
    if( makeDemo(p, zFile) ) return 1;
  }
  int rc;
  const char *zNote = 0;
  if( !p->readonly && !isUrl && access(zFile, F_OK) != 0 && errno == ENOENT ){
    /* As sqlite3 does: the dataset is made by the first command that
    ** writes; until then nothing exists, so a typo leaves nothing behind.
    ** Not a URL (s3://, http://): a remote dataset is opened (read-only)
    ** or reported missing by the library, never made here. */
    char zCat[4200];
    snprintf(zCat, sizeof zCat, "%s-catalog", zFile);
    if( access(zCat, F_OK) != 0 && errno == ENOENT ){
      p->zPending = strdup(zFile);
      if( p->zPending == 0 ){ shellError(p, "%s: out of memory", zCmd); return 1; }
      return 0;
    }
  }
  if( !p->readonly && !isUrl ){
    rc = pagedb_open(zFile, &p->db, PAGEDB_OPEN_READWRITE, p->zVfs);
    int prim = rc & 0xff;
    if( rc == PAGEDB_OK ){
      p->zDbVfs = pagedb_vfs_name(p->db) ? pagedb_vfs_name(p->db) : "?";
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
    shellError(p, "%s: cannot open \"%s\": %s (%s)%s", zCmd, zFile, pagedb_errname(rc),
               pagedb_errmsg(p->db), rc == PAGEDB_CANTOPEN_NOENT && !isUrl
               ? "; without -readonly, the first command that writes (.import, .put, .create) creates it" : "");
    pagedb_close(p->db);
    p->db = 0;
    return 1;
  }
  p->dbReadonly = 1;
  p->zDbVfs = pagedb_vfs_name(p->db) ? pagedb_vfs_name(p->db) : "?";
  if( zNote ) fprintf(stderr, "note: %s: %s; opened read-only\n", zFile, zNote);
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
    rc = shellDispatch(p, nArg, azArg);
  }
  free(z);
  return rc;
}

static double timeOf(struct timeval tv){ return tv.tv_sec + tv.tv_usec * 1e-6; }

/*
** The dataset the running command created (shellNeedCreate) is removed
** again if the command failed and committed no sample: a typo in a first
** .import or .put leaves nothing behind, and the shell goes back to waiting
** for the first write.
*/
static void dropCreated(ShellState *p, int rc){
  int created = p->createdNow;
  p->createdNow = 0;
  if( !created || rc != 1 || p->db == 0 || pagedb_count(p->db) > 0 ) return;
  char *zFile = strdup(pagedb_path(p->db));
  if( zFile == 0 ) return;
  shellCloseDb(p);
  shellRemoveDataset(zFile);
  free(p->zPending);
  p->zPending = zFile;
  fprintf(stderr, "note: %s was not created (the command failed before writing a sample)\n", zFile);
}

void shellChanged(ShellState *p, int64_t n){
  p->nChange = n;
  p->nTotalChange += n;
}

/* Run one command: a dot-command or SQL.  0 ok, 1 error, 2 exit. */
int shellRunCommand(ShellState *p, const char *z){
  struct timespec t0, t1;
  struct rusage u0, u1;
  while( isspace((unsigned char)*z) ) z++;
  if( *z != '.' && shellSqlIsBlank(z) ) return 0;
  if( p->echo ) fprintf(p->out, "%s\n", z);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  getrusage(RUSAGE_SELF, &u0);
  int timer = p->timer;
  int once = p->outOnce;
  p->interrupted = 0;
  p->nChange = -1;
  int rc = *z == '.' ? runDot(p, z) : shellRunSql(p, z);
  dropCreated(p, rc);
  if( p->changes && p->nChange >= 0 ){
    fprintf(p->out, "changes: %lld   total_changes: %lld\n", (long long)p->nChange,
            (long long)p->nTotalChange);
  }
  if( timer && p->timer ){
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &u1);
    fprintf(p->out, "Run Time: real %.3f user %.6f sys %.6f\n",
            (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
            timeOf(u1.ru_utime) - timeOf(u0.ru_utime), timeOf(u1.ru_stime) - timeOf(u0.ru_stime));
  }
  fflush(p->out);
  /* .once: the command after it has run (not .once itself). */
  if( once && p->outOnce ) shellOutputReset(p);
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
  while( (c = getc(p->in)) != EOF && c != '\n' ){
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
int shellProcessInput(ShellState *p){
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
      rc = shellRunCommand(p, z);
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
        rc = shellRunCommand(p, zSql);
        nSql = 0;
      }
    }
    free(zLine);
    if( rc == 1 && !p->interactive ){
      if( p->zInName ) fprintf(stderr, "(at line %d of %s)\n", lineno, p->zInName);
      else fprintf(stderr, "(at line %d of the input)\n", lineno);
    }
    if( rc == 2 || (rc == 1 && p->bail && !p->interactive) ) break;
  }
  if( zLine == 0 && !p->interactive && p->interrupted ){
    /* Ctrl-C interrupted the read of a script: not its end. */
    shellError(p, "interrupted");
    rc = 1;
  }
  if( nSql > 0 && rc != 2 && !(rc == 1 && p->bail) && !shellSqlIsBlank(zSql) && !p->interrupted ){
    rc = shellRunCommand(p, zSql);
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
  "standard input.  A FILE that does not exist is created by the first command\n"
  "that writes (.import, .put, .create).  Without FILE, the first COMMAND may be\n"
  "a dot-command (\".create FILE ...\", \".open FILE\").  Options:\n"
  "  -bail         stop after the first error\n"
  "  -batch        read standard input as a script even on a terminal\n"
  "  -box          box output mode (also -column, -csv, -json, -line, -list, -table)\n"
  "  -cmd COMMAND  run COMMAND before the others or standard input (repeatable)\n"
  "  -demo         if FILE does not exist, create a demo dataset there\n"
  "  -echo         print each command before running it\n"
  "  -header       column names in list, csv and column modes (-noheader: not)\n"
  "  -help         show this message\n"
  "  -init FILE    run the commands of FILE first, instead of ~/.pagedbrc\n"
  "  -nullvalue S  print NULL as S\n"
  "  -readonly     open the dataset read-only\n"
  "  -version      show the pagedb version\n"
  "  -vfs NAME     use the VFS NAME\n"
  "Enter \".help\" for the commands, \".help COMMAND\" for one; man pagedb.\n";

/*
** Run the commands of the file ZFILE (-init, ~/.pagedbrc) as .read does.
** A ~/.pagedbrc (MUSTEXIST 0) that is missing or unreadable is no error.
** 0 ok, 1 error, 2 exit.
*/
static int runInitFile(ShellState *p, const char *zFile, int mustExist){
  FILE *f = fopen(zFile, "r");
  if( f == 0 ){
    /* As sqlite3 with ~/.sqliterc: one that cannot be read is passed over
    ** (a shell run as another user with HOME unchanged, say). */
    if( !mustExist ) return 0;
    shellError(p, "-init %s: %s", zFile, strerror(errno));
    return 1;
  }
  FILE *in = p->in;
  const char *zName = p->zInName;
  int interactive = p->interactive;
  p->in = f;
  p->zInName = zFile;
  p->interactive = 0;
  int rc = shellProcessInput(p);
  p->in = in;
  p->zInName = zName;
  p->interactive = interactive;
  fclose(f);
  return rc;
}

#define MAX_CMD_OPTS 64

/* The options main gathers (the rest go straight to the ShellState). */
typedef struct MainOpts {
  const char *zInit;              /* -init FILE */
  const char *azCmd[MAX_CMD_OPTS];/* -cmd COMMAND, in order */
  int nCmd;
  int batch;                      /* -batch */
  int headersSet;                 /* -header or -noheader given */
} MainOpts;

/*
** Parse the option at ARGV[*PI] (and its value, *PI advanced past it):
** 0 done, 1 after an error message, 2 to exit with status 0 (-version,
** -help).  As in sqlite3, options may come before or after FILE.
*/
static int parseOption(ShellState *p, MainOpts *mo, int argc, char **argv, int *pi){
  int i = *pi;
  const char *z = argv[i];
  if( z[1] == '-' ) z++;
  int m = -1;
  for(int k = 0; k < (int)(sizeof shellModeName / sizeof shellModeName[0]); k++){
    if( strcmp(z + 1, shellModeName[k]) == 0 ) m = k;
  }
  /* Options that take a value. */
  if( strcmp(z, "-vfs") == 0 || strcmp(z, "-cmd") == 0 || strcmp(z, "-init") == 0
   || strcmp(z, "-nullvalue") == 0 ){
    if( i + 1 >= argc ){
      fprintf(stderr, "Error: %s: missing its value\n%s", argv[i], zUsage);
      return 1;
    }
  }
  if( m >= 0 ){
    p->mode = m;
  }else if( strcmp(z, "-bail") == 0 ){
    p->bail = 1;
  }else if( strcmp(z, "-batch") == 0 ){
    mo->batch = 1;
  }else if( strcmp(z, "-header") == 0 || strcmp(z, "-headers") == 0 ){
    p->headers = 1;
    p->headersSet = mo->headersSet = 1;
  }else if( strcmp(z, "-noheader") == 0 ){
    p->headers = 0;
    p->headersSet = mo->headersSet = 1;
  }else if( strcmp(z, "-demo") == 0 ){
    p->demo = 1;
  }else if( strcmp(z, "-echo") == 0 ){
    p->echo = 1;
  }else if( strcmp(z, "-readonly") == 0 ){
    p->readonly = 1;
  }else if( strcmp(z, "-version") == 0 ){
    printf("%s\n", pagedb_libversion());
    return 2;
  }else if( strcmp(z, "-help") == 0 || strcmp(z, "-h") == 0 ){
    fputs(zUsage, stdout);
    return 2;
  }else if( strcmp(z, "-cmd") == 0 ){
    if( mo->nCmd >= MAX_CMD_OPTS ){
      fprintf(stderr, "Error: -cmd: more than %d\n", MAX_CMD_OPTS);
      return 1;
    }
    mo->azCmd[mo->nCmd++] = argv[++i];
  }else if( strcmp(z, "-init") == 0 ){
    mo->zInit = argv[++i];
  }else if( strcmp(z, "-nullvalue") == 0 ){
    snprintf(p->zNull, sizeof p->zNull, "%s", argv[++i]);
  }else if( strcmp(z, "-vfs") == 0 ){
    p->zVfs = argv[++i];
    if( pagedb_vfs_find(p->zVfs) == 0 ){
      fprintf(stderr, "Error: -vfs %s: no such VFS\n", p->zVfs);
      return 1;
    }
  }else{
    fprintf(stderr, "Error: unknown option: %s\n%s", argv[i], zUsage);
    return 1;
  }
  *pi = i;
  return 0;
}

/* An argument that is an option: "-x" or "--x", no blank in it (SQL such
** as "-- a comment" is not). */
static int isOption(const char *z){
  return z[0] == '-' && z[1] && z[1] != ' ' && strpbrk(z, " \t\n") == 0;
}

/* The shell's entry: main() of the pagedb program, or, compiled into the
** Python module with PDB_SHELL_MAIN defined (python/shellentry.c: python -m
** pagedb, the pip install's pagedb script), a function of that name run
** once per process as main() would be. */
#ifndef PDB_SHELL_MAIN
# define PDB_SHELL_MAIN main
#endif
int PDB_SHELL_MAIN(int argc, char **argv){
  static ShellState state;
  ShellState *p = &state;
  static MainOpts mo;
  const char *zFile = 0;
  int i;
  p->out = stdout;
  p->in = stdin;
  for(i = 1; i < argc && isOption(argv[i]); i++){
    int rc = parseOption(p, &mo, argc, argv, &i);
    if( rc ) return rc == 2 ? 0 : 1;
  }
  /* The first argument is FILE, unless it is a dot-command and no such
  ** file exists ("pagedb .help", "pagedb '.create x.pagedb --field a:int'"). */
  if( i < argc && !(argv[i][0] == '.' && isalpha((unsigned char)argv[i][1])
                    && access(argv[i], F_OK) != 0) ){
    zFile = argv[i++];
    for(; i < argc && isOption(argv[i]); i++){
      int rc = parseOption(p, &mo, argc, argv, &i);
      if( rc ) return rc == 2 ? 0 : 1;
    }
  }
  const char *zInit = mo.zInit;
  const char **azCmd = mo.azCmd;
  int nCmd = mo.nCmd;
  int batch = mo.batch, headersSet = mo.headersSet;
  p->progress = isatty(1) && isatty(2);
  shellSignals(p);
  int oneShot = i < argc;
  p->interactive = !oneShot && !batch && isatty(0);
  /* As sqlite3's list mode, headers are off in scripts; a person at the
  ** prompt is shown which column is which. */
  if( p->interactive && !headersSet ) p->headers = 1;
  if( zFile ){
    if( shellOpenDb(p, "pagedb", zFile) && (oneShot || p->bail) ) return 1;
  }else if( p->demo ){
    fprintf(stderr, "Error: -demo: needs a FILE\n");
    return 1;
  }
  int rc = 0;
  /* ~/.pagedbrc (or -init FILE), then -cmd, as sqlite3 does. */
  if( zInit ){
    rc = runInitFile(p, zInit, 1);
  }else if( getenv("HOME") ){
    const char *zHome = getenv("HOME");
    char *zRc = malloc(strlen(zHome) + 16);
    if( zRc ){
      sprintf(zRc, "%s/.pagedbrc", zHome);
      rc = runInitFile(p, zRc, 0);
      free(zRc);
    }
  }
  for(int k = 0; k < nCmd && rc != 2 && !(rc == 1 && p->bail); k++){
    rc = shellRunCommand(p, azCmd[k]);
  }
  if( rc == 2 || (rc == 1 && p->bail) ){
    /* .quit in the init file or -cmd, or an error under -bail. */
  }else if( oneShot ){
    for(; i < argc; i++){
      rc = shellRunCommand(p, argv[i]);
      if( rc == 2 || (rc == 1 && p->bail) ) break;
      if( p->interrupted ){
        shellError(p, "interrupted: the commands after \"%s\" were not run", argv[i]);
        break;
      }
    }
  }else{
    if( p->interactive ){
      printf("pagedb %s\nEnter \".help\" for usage hints.\n", pagedb_libversion());
      if( p->zPending ){
        printf("%s does not exist yet: the first command that writes (.import, .put, .create)"
               " creates it.\n", p->zPending);
      }else if( p->db == 0 ){
        printf("No dataset is open: use .open FILE or .create FILE.\n");
      }
      stifle_history(1000);
    }
    shellProcessInput(p);
  }
  shellOutputReset(p);
  shellCloseDb(p);
  /* Give the pool's cached buffers back, so that leak checkers see none. */
  pagedb_shutdown();
  return p->nErr ? 1 : 0;
}
