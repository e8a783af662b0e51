/*
** xfer.h -- .import and .export: datasets to and from real layouts.
**
** xfer_import reads one of three layouts into an open, writable dataset:
**   - an ImageFolder directory (SOURCE is a directory): each first-level
**     subdirectory is a class; every regular file below it becomes a sample
**     with fields data (BYTES), label (INT, the class's index in strcmp order
**     of the class names; -1 for files directly in SOURCE) and path (TEXT,
**     relative to SOURCE).  Symbolic links are never followed: they are
**     reported on o->err and skipped.
**   - WebDataset tar shards (SOURCE ends in .tar, .tar.gz or .tgz, or is a
**     glob(3) pattern matching such files): members grouped by key (the member
**     path up to the first dot of its basename), one BYTES field per extension
**     plus __key__ (TEXT).  Absolute names and ".." components are refused;
**     link and device members are reported and skipped.
**   - a CSV file with a header row (SOURCE ends in .csv): one field per column,
**     INT if every value is an integer, REAL if every value is a number, else
**     TEXT; empty cells are missing values.
**
** xfer_export writes the dataset back: if DEST ends in .tar, as one WebDataset
** tar file with members KEY.EXT (from __key__ and the BYTES/TEXT fields whose
** names are extensions); otherwise as a directory tree under DEST from the
** fields path and data.  Nothing is ever written outside DEST.
*/
#ifndef PAGEDB_XFER_H
#define PAGEDB_XFER_H

#include <stdint.h>
#include <stdio.h>
#include "pagedb.h"

typedef struct XferOpts {
  int threads;             /* writer threads, >= 1 (the shell passes all cores by default) */
  int codec;               /* codec of the BYTES fields of a dataset that has no fields yet */
  int bail;                /* stop at the first unreadable file instead of reporting and skipping it */
  const char *where;       /* .export: an SQL condition on table sample, or NULL for all */
  volatile int *stop;      /* set (by a SIGINT handler) to stop early, leaving the dataset at its last commit */
  void (*progress)(void *ctx, int64_t done, int64_t total, int64_t bytes);  /* may be NULL */
  void *ctx;
  FILE *err;               /* where per-file problems are reported */
} XferOpts;

/* Import SOURCE into DB (fields created if DB has none; else they must match); *N samples imported. Returns a
   PAGEDB_* code; on error MSG says what and where (file, member). */
int xfer_import(pagedb *db, const char *source, const XferOpts *o, int64_t *n, char *msg, size_t nmsg);
int xfer_export(pagedb *db, const char *dest, const XferOpts *o, int64_t *n, char *msg, size_t nmsg);

/*
** The shell's .import and .export (see shell.h: 0 ok, 1 after shellError).
** A progress bar is drawn with shellProgress, and Ctrl-C (p->interrupted)
** stops the transfer: an import at a commit that holds every sample it
** reports imported.
*/
struct ShellState;
int dotImport(struct ShellState *p, int nArg, char **azArg);
int dotExport(struct ShellState *p, int nArg, char **azArg);

/* ------------------------------------------------------------------ */
/* Internal to shell/import.c, export.c and tar.c                      */
/* ------------------------------------------------------------------ */

/*
** A tar reader: ustar, GNU long names ('L') and pax extended headers
** ('x' path and size), of a plain or gzip-compressed file (zlib).  Member
** names are returned as stored; the caller validates them.
*/
typedef struct TarReader TarReader;
#define TAR_FILE   0    /* a regular file: its data can be read */
#define TAR_DIR    1    /* a directory */
#define TAR_LINK   2    /* a symbolic or hard link */
#define TAR_OTHER  3    /* a device, fifo, sparse file or another kind */
typedef struct TarMember {
  const char *name;   /* owned by the reader; valid until the next tar_next */
  int kind;           /* TAR_FILE ... TAR_OTHER */
  char typeflag;      /* the header's type byte */
  int64_t size;       /* bytes of data */
} TarMember;

/* Open the tar file PATH.  PAGEDB_OK, or PAGEDB_CANTOPEN with MSG. */
int tar_open(const char *path, TarReader **pr, char *msg, size_t nmsg);
/* The next member (the rest of the current one's data is skipped):
** PAGEDB_OK, PAGEDB_NOTFOUND at the end of the archive, or PAGEDB_CORRUPT /
** PAGEDB_IOERR / PAGEDB_TOOBIG / PAGEDB_NOMEM with MSG naming the file and
** the member.  A declared size past the end of a plain file is
** PAGEDB_CORRUPT here, before anything is read or allocated. */
int tar_next(TarReader *r, TarMember *m, char *msg, size_t nmsg);
/* Read the current member's data into *DATA (malloc'd, the caller frees;
** at least 1 byte allocated) and its length into *N.  Errors as tar_next. */
int tar_read(TarReader *r, void **data, size_t *n, char *msg, size_t nmsg);
/* The uncompressed bytes consumed so far. */
int64_t tar_offset(TarReader *r);
void tar_close(TarReader *r);

/* A tar writer (ustar headers, pax 'x' headers for long names and sizes). */
typedef struct TarWriter TarWriter;
int tar_create(const char *path, TarWriter **pw, char *msg, size_t nmsg);
int tar_add(TarWriter *w, const char *name, const void *data, size_t n, char *msg, size_t nmsg);
/* Write the end-of-archive blocks and close.  W is freed whatever the result;
** tar_abort closes and removes the file instead. */
int tar_finish(TarWriter *w, char *msg, size_t nmsg);
void tar_abort(TarWriter *w);

#endif /* PAGEDB_XFER_H */
