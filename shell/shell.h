/*
** shell.h -- the state and the shared helpers of the pagedb shell.
**
** The shell is split by subject, each file readable in one sitting:
**
**   shell.c     main, the input loop, the command table, .help, .open,
**               .mode, .headers, .timer, .writable, .vfs, .quit
**   output.c    the output modes (list, csv, json, line, table, box) for SQL
**               results and for the tables dot-commands print
**   cmd_data.c  .create .info .fields .schema .stats .pages .count .get
**               .put .delete
**   cmd_long.c  .check .vacuum .attach .bench, progress bars and Ctrl-C
**   import.c, export.c, tar.c (xfer.h)   .import and .export
**
** Every dot-command is one function `int dotNAME(ShellState*, int nArg,
** char **azArg)` (azArg[0] is the command's name without the dot) that
** returns 0 (ok), 1 (error, after shellError) or 2 (exit the shell).
*/
#ifndef PAGEDB_SHELL_H
#define PAGEDB_SHELL_H

#include "pagedb.h"

#include <stdint.h>
#include <stdio.h>

/* Output modes (.mode). */
#define MODE_LIST   0   /* col|col, sqlite3's default */
#define MODE_CSV    1   /* RFC 4180, CRLF after each row */
#define MODE_JSON   2   /* [{"col":value,...},...] */
#define MODE_LINE   3   /* one `name = value` line per column, a blank line between rows */
#define MODE_TABLE  4   /* +---+ ASCII boxes */
#define MODE_BOX    5   /* Unicode line-drawing boxes */

/* All the state of the shell. */
typedef struct ShellState {
  pagedb *db;               /* the open dataset, or NULL */
  pagedb_reader *rd;        /* a PAGEDB_READ_COPY reader of db, opened by .get */
  int dbReadonly;           /* db was opened read-only */
  const char *zDbVfs;       /* the VFS db was opened with */
  const char *zCmdName;     /* the dot-command running (its progress bar's label) */
  int readonly;             /* -readonly: open datasets read-only */
  int demo;                 /* -demo: make a demo dataset if FILE is missing */
  const char *zVfs;         /* -vfs NAME or .vfs NAME: the VFS of later opens (NULL: default) */
  int bail;                 /* -bail: stop at the first error */
  int mode;                 /* MODE_* */
  int headers;              /* .headers on: column names before rows (list, csv) */
  int timer;                /* .timer on: print the time each command took */
  int writable;             /* .writable on: SQL may update INT/REAL field values */
  int interactive;          /* reading a terminal */
  int progress;             /* draw progress bars: stdout and stderr are terminals */
  int nErr;                 /* errors so far: the exit status is 1 if any */
  volatile int interrupted; /* SIGINTs since the command began; long work polls it */
  FILE *out;                /* where results go */
} ShellState;

/* Print "Error: ..." on stderr and count the error. */
void shellError(ShellState *p, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;

/* 1 (after an error message naming ZCMD) if no dataset is open. */
int shellNeedDb(ShellState *p, const char *zCmd);

/* 1 (after an error message naming ZCMD) if the dataset is read-only. */
int shellNeedWritable(ShellState *p, const char *zCmd);

/* Close the reader .get keeps open (before operations that need none open). */
void shellCloseReader(ShellState *p);

/* Parse an integer (all of Z, base 10) into *V; 0 ok, 1 if Z is not one. */
int shellInt(const char *z, int64_t *v);

/* Parse a byte count with an optional K/M/G suffix (powers of 1024). */
int shellSize(const char *z, int64_t *v);

/* "BYTES", "TEXT", "INT", "REAL" */
const char *shellTypeName(int type);

/* A codec as .create takes it: "none", "lz4", "lz4:8", "lz4hc:12". */
void shellCodecName(int codec, char *buf, size_t cap);

/* ------------------------------------------------------------------ */
/* Output (output.c)                                                   */
/* ------------------------------------------------------------------ */

/*
** A result to print in the current mode: column names, then rows of text
** cells (NULL for SQL NULL).  Columns marked numeric print unquoted in JSON
** and right-aligned in table and box modes; for SQL results (text only) a
** cell is taken as a number when it reads as one.
*/
typedef struct ShellResult {
  int nCol;
  char **azName;            /* nCol names */
  int *aNum;                /* per column: 1 numeric, 0 text, -1 guess per cell */
  int64_t nRow;
  int64_t nAlloc;           /* rows allocated */
  char **azCell;            /* nRow * nCol cells, row-major; NULL for NULL */
  int oom;                  /* an allocation failed: rows were lost */
} ShellResult;

/* Start a result of NCOL columns named AZNAME (copied); -1 guess per cell. */
int resultInit(ShellResult *r, int nCol, char *const *azName);
/* Mark column I numeric (1) or text (0). */
void resultSetNum(ShellResult *r, int i, int isNum);
/* Append a row of nCol cells (copied; NULL cells are SQL NULL). */
int resultAddRow(ShellResult *r, char *const *azVal);
/* Append a row given as printf-formatted cells, separated by '\t'. */
int resultAddf(ShellResult *r, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;
/* Print R in P's mode (WITHHEADERS: list/csv column names; table/box always). */
void resultPrint(ShellState *p, ShellResult *r, int withHeaders);
void resultFree(ShellResult *r);

/* Run SQL (one or more statements) on the catalog and print each result. */
int shellRunSql(ShellState *p, const char *zSql);

/* The length of the first SQL statement of Z (up to and with its ';'
** outside quotes and comments); *PCOMPLETE 1 if a ';' ended it. */
size_t shellSqlStatement(const char *z, int *pComplete);
int shellSqlIsBlank(const char *z);

/* ------------------------------------------------------------------ */
/* Long commands (cmd_long.c)                                          */
/* ------------------------------------------------------------------ */

/* Install the SIGINT handler (sets p->interrupted; at the prompt, a new line). */
void shellSignals(ShellState *p);

/*
** A progress callback for long work that knows its progress (XferOpts's
** progress, with CTX the ShellState): draws a bar on stderr when
** p->progress, at most 10 times a second, with rate and time left when
** TOTAL > 0; safe from several threads.  shellProgressEnd erases it.
*/
void shellProgress(void *ctx, int64_t done, int64_t total, int64_t bytes);
void shellProgressEnd(ShellState *p);

/* ------------------------------------------------------------------ */
/* Dot-commands                                                        */
/* ------------------------------------------------------------------ */

typedef int (*DotFunc)(ShellState *, int nArg, char **azArg);

/* cmd_data.c */
int dotCreate(ShellState *p, int nArg, char **azArg);
int dotInfo(ShellState *p, int nArg, char **azArg);
int dotFields(ShellState *p, int nArg, char **azArg);
int dotSchema(ShellState *p, int nArg, char **azArg);
int dotStats(ShellState *p, int nArg, char **azArg);
int dotPages(ShellState *p, int nArg, char **azArg);
int dotCount(ShellState *p, int nArg, char **azArg);
int dotGet(ShellState *p, int nArg, char **azArg);
int dotPut(ShellState *p, int nArg, char **azArg);
int dotDelete(ShellState *p, int nArg, char **azArg);

/* cmd_long.c */
int dotCheck(ShellState *p, int nArg, char **azArg);
int dotVacuum(ShellState *p, int nArg, char **azArg);
int dotAttach(ShellState *p, int nArg, char **azArg);
int dotBench(ShellState *p, int nArg, char **azArg);

/* shell.c */
int shellOpenDb(ShellState *p, const char *zCmd, const char *zFile);
void shellCloseDb(ShellState *p);

#endif /* PAGEDB_SHELL_H */
