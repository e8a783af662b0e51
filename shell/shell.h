/*
** shell.h -- the state and the shared helpers of the pagedb shell.
**
** The shell is split by subject, each file readable in one sitting:
**
**   shell.c     main, the options, the input loop, opening a dataset and
**               creating it at the first write
**   commands.c  the command table: dispatch, .help and every command's help
**               text (one line, a paragraph, an example)
**   cmd_shell.c the commands about the shell itself: .open .mode .headers
**               .timer .writable .vfs .quit .bail .echo .changes .nullvalue
**               .width .show .print .read .output .once .shell .system
**               .tables .indexes
**   output.c    the output modes (list, csv, json, line, table, box) for SQL
**               results and for the tables dot-commands print
**   cmd_data.c  .create .info .fields .schema .stats .pages .count .get
**               .put .delete
**   cmd_dump.c  .dump: the catalog as SQL text
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
#include "xfer.h"

#include <stdint.h>
#include <stdio.h>

/* Output modes (.mode). */
#define MODE_LIST   0   /* col|col, sqlite3's default */
#define MODE_CSV    1   /* RFC 4180, CRLF after each row */
#define MODE_JSON   2   /* [{"col":value,...},...] */
#define MODE_LINE   3   /* one `name = value` line per column, a blank line between rows */
#define MODE_TABLE  4   /* +---+ ASCII boxes */
#define MODE_BOX    5   /* Unicode line-drawing boxes */
#define MODE_COLUMN 6   /* sqlite3's column mode: padded columns, names underlined with dashes */

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
  int headers;              /* .headers on: column names before rows (list, csv, column) */
  int headersSet;           /* .headers or -header/-noheader was given (else column mode shows them) */
  int timer;                /* .timer on: print the time each command took */
  int writable;             /* .writable on: SQL may update INT/REAL field values */
  int interactive;          /* reading a terminal */
  int progress;             /* draw progress bars: stdout and stderr are terminals */
  int nErr;                 /* errors so far: the exit status is 1 if any */
  volatile int interrupted; /* SIGINTs since the command began; long work polls it */
  FILE *out;                /* where results go: stdout, or .output/.once's file or pipe */
  int outPipe;              /* out is a pipe (popen) */
  int outOnce;              /* .once: back to stdout after the next command */
  char *zOutName;           /* .output's file name or "|command" (malloc'd), NULL for stdout */
  FILE *in;                 /* where commands are read: stdin, or .read's file */
  const char *zInName;      /* .read's FILE (error messages name its lines), NULL for stdin */
  char *zPending;           /* FILE did not exist: the dataset the first write creates (malloc'd) */
  int createdNow;           /* the running command created zPending's dataset */
  int echo;                 /* .echo on / -echo: print each command before running it */
  int changes;              /* .changes on: print the samples each command changed */
  int64_t nChange;          /* samples the last command wrote, deleted or changed; -1: none */
  int64_t nTotalChange;     /* ...and since the shell started */
  char zNull[64];           /* .nullvalue: how NULL prints (default "") */
  int nWidth;               /* .width: the widths of the first columns in column, table and */
  int aWidth[64];           /* box modes: N wraps at N characters, -N too and right-aligns, 0 auto */
} ShellState;

/* Print "Error: ..." on stderr and count the error. */
void shellError(ShellState *p, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;

/* 1 (after an error message naming ZCMD) if no dataset is open.  When
** the named FILE does not exist yet, the message says which commands
** create it. */
int shellNeedDb(ShellState *p, const char *zCmd);

/* Remove every file of the dataset at ZFILE (data, catalog and its WAL,
** shared memory and journal, index): a dataset this shell made and
** abandoned.  Files that do not exist are passed over. */
void shellRemoveDataset(const char *zFile);

/* 1 (after an error message naming ZCMD) if no dataset can be written:
** none open, or open read-only. */
int shellNeedWritable(ShellState *p, const char *zCmd);

/* The same for the commands that may write first (.import, .put): a
** pending dataset (FILE did not exist) is created here; if the command
** then fails having committed no sample, the command loop removes it
** again (typos leave nothing behind). */
int shellNeedCreate(ShellState *p, const char *zCmd);

/* Parse .create's and .import's NAME:TYPE[:CODEC[:LEVEL]], or with PTENSOR
** NAME:tensor:DTYPE:SHAPE[:CODEC[:LEVEL]] (*PTYPE PAGEDB_TENSOR, the
** declaration in *PTENSOR); Z is modified (the ':' become NULs) and *PZNAME
** points into it.  ZCMD names the command in error messages.  0 ok, 1
** after an error. */
int shellFieldSpec(ShellState *p, const char *zCmd, char *z, const char **pzName, int *pType,
                   int *pCodec, XferTensor *pTensor);

/* Turn "on"/"off" (yes/no, true/false, 1/0) into 1/0; -1 if neither. */
int shellBoolean(const char *z);

/* Record that the running command changed N samples (.changes). */
void shellChanged(ShellState *p, int64_t n);

/* Close the reader .get keeps open (before operations that need none open). */
void shellCloseReader(ShellState *p);

/* Parse an integer (all of Z, base 10) into *V; 0 ok, 1 if Z is not one. */
int shellInt(const char *z, int64_t *v);

/* Parse a byte count with an optional K/M/G suffix (powers of 1024). */
int shellSize(const char *z, int64_t *v);

/* "BYTES", "TEXT", "INT", "REAL" */
const char *shellTypeName(int type);
/* Field I's type as .fields shows it: BYTES... or its tensor declaration,
** "tensor:float32:768" (pagedb_field_tensor), into Z of N bytes. */
const char *shellFieldType(pagedb *db, int i, char *z, size_t n);

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
int dotTokens(ShellState *p, int nArg, char **azArg);
int dotSchema(ShellState *p, int nArg, char **azArg);
int dotStats(ShellState *p, int nArg, char **azArg);
int dotPages(ShellState *p, int nArg, char **azArg);
int dotParts(ShellState *p, int nArg, char **azArg);
int dotCount(ShellState *p, int nArg, char **azArg);
int dotGet(ShellState *p, int nArg, char **azArg);
int dotPut(ShellState *p, int nArg, char **azArg);
int dotDelete(ShellState *p, int nArg, char **azArg);

/* cmd_dump.c */
int dotDump(ShellState *p, int nArg, char **azArg);

/* cmd_long.c */
int dotCheck(ShellState *p, int nArg, char **azArg);
int dotVacuum(ShellState *p, int nArg, char **azArg);
int dotPush(ShellState *p, int nArg, char **azArg);
int dotPull(ShellState *p, int nArg, char **azArg);
int dotAttach(ShellState *p, int nArg, char **azArg);
int dotBench(ShellState *p, int nArg, char **azArg);

/* cmd_shell.c */
int dotOpen(ShellState *p, int nArg, char **azArg);
int dotQuit(ShellState *p, int nArg, char **azArg);
int dotHeaders(ShellState *p, int nArg, char **azArg);
int dotTimer(ShellState *p, int nArg, char **azArg);
int dotWritable(ShellState *p, int nArg, char **azArg);
int dotMode(ShellState *p, int nArg, char **azArg);
int dotVfs(ShellState *p, int nArg, char **azArg);
int dotBail(ShellState *p, int nArg, char **azArg);
int dotEcho(ShellState *p, int nArg, char **azArg);
int dotChanges(ShellState *p, int nArg, char **azArg);
int dotNullvalue(ShellState *p, int nArg, char **azArg);
int dotWidth(ShellState *p, int nArg, char **azArg);
int dotShow(ShellState *p, int nArg, char **azArg);
int dotPrint(ShellState *p, int nArg, char **azArg);
int dotRead(ShellState *p, int nArg, char **azArg);
int dotOutput(ShellState *p, int nArg, char **azArg);
int dotSystem(ShellState *p, int nArg, char **azArg);
int dotTables(ShellState *p, int nArg, char **azArg);
int dotIndexes(ShellState *p, int nArg, char **azArg);
/* The output modes' names, MODE_* order. */
extern const char *const shellModeName[7];
/* Back to stdout after .output/.once (closing the file or pipe). */
void shellOutputReset(ShellState *p);

/* commands.c */
int dotHelp(ShellState *p, int nArg, char **azArg);
/* Run the dot-command AZARG[0] (without the dot; unique prefixes allowed):
** its function's result, or 1 after an error for an unknown command. */
int shellDispatch(ShellState *p, int nArg, char **azArg);

/* shell.c */
int shellOpenDb(ShellState *p, const char *zCmd, const char *zFile);
void shellCloseDb(ShellState *p);
/* Read and run commands from P->in until its end or .quit: 0, 1 after an
** error (the last command's), 2 to exit. */
int shellProcessInput(ShellState *p);
/* Run one command line (dot-command or SQL): 0 ok, 1 error, 2 exit. */
int shellRunCommand(ShellState *p, const char *z);

#endif /* PAGEDB_SHELL_H */
