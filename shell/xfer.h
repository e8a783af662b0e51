/*
** xfer.h -- .import and .export: datasets to and from real layouts.
**
** xfer_import reads one of three layouts into an open, writable dataset.
** The dataset's fields are created from SOURCE when it has none, typed by
** the layout's conventions below (BYTES fields with o->codec, after any
** page size the caller set), each --field override (o->aField) replacing
** a field's type and codec; otherwise every field SOURCE needs must exist
** under its name, and keeps its type when SOURCE's values fit it (anything
** fits BYTES and TEXT, integers fit REAL; an override must agree with it):
** else PAGEDB_MISMATCH naming the field, before anything is written.  The
** dataset may have other fields.  The writer threads convert each value to
** its field's type: numbers to decimal text, decimal text (blanks around it
** allowed) to INT or REAL (an underflow to the nearest double, as Python's
** float() reads it; an overflow does not convert); a value that does not convert, or a .json value
** that is not JSON (json.c), is PAGEDB_MISMATCH naming the sample and the
** field.
**
**   - An ImageFolder directory (SOURCE is a directory), torchvision's
**     layout: each first-level subdirectory is a class; every regular file
**     at any depth below it is a sample with the fields data (BYTES: the
**     file's bytes), label (INT: the class's index among all first-level
**     subdirectories, empty ones included, in strcmp order) and path (TEXT:
**     the path relative to SOURCE, '/'-separated).  Files directly in SOURCE
**     get label -1.  The class names go to the catalog table
**     classes(label INTEGER PRIMARY KEY, name TEXT NOT NULL) (a user table,
**     pagedb_sql_user), created if missing; a label it has with another
**     name is PAGEDB_MISMATCH before anything is written.  A symbolic
**     link is never followed (the walk uses O_NOFOLLOW at every level, and
**     a file is opened one directory at a time the same way): it is
**     reported on o->err and skipped, as are fifos,
**     sockets, devices and the dataset's own files.  A file that cannot be
**     read is reported and skipped, or with o->bail stops the import (with
**     several threads, files other threads took before it are imported).
**
**   - WebDataset tar shards: SOURCE ends in .tar, .tar.gz or .tgz, or is a
**     glob(3) pattern (shards in glob's sorted order; matches with other
**     names are reported and skipped).  gzip is read with zlib.  A first
**     pass reads the headers only (seeking past the data of a plain tar) to
**     collect the extensions and check every member; then the members are
**     read again and grouped into samples.  A member's key is its name up to
**     the first dot of its basename (the directories kept: "a/b/x.seg.png"
**     has key "a/b/x" and extension "seg.png"); each extension becomes a
**     field, plus __key__ (TEXT), typed by the extension's last part as
**     WebDataset's decoders read it: cls, cls2, class, count, index, inx,
**     id INT; txt, text, transcript TEXT; json, jsn TEXT that must be valid
**     JSON; any other BYTES.  The extensions id, page and off (any case),
**     the names of table sample's own columns, are the fields id_, page_
**     and off_ (as CSV columns of those names); a source with both .id and
**     .id_ is refused.  A key is unique across the shards.
**     A sample's members are normally adjacent (tar --sort=name); in a plain
**     tar they need not be: the first pass records where each member's data
**     lies, and the second reads them by seeking, key by key, the samples in
**     the order of their first members.  A compressed shard cannot seek, so
**     there the members of a key must be adjacent.
**     Refused, naming the shard and the member, before anything is written:
**     an absolute name, a ".." component, an extension that cannot name a
**     field (pagedb names: letters, digits, '_', '.', '-', not a digit
**     first, not __key__, case-insensitively unique), a declared
**     size past the end of the file, a damaged header.  Reported and
**     skipped: symbolic and hard links, devices, fifos and other special
**     members, members without an extension.  Directories are ignored.
**     Readers: ustar, GNU long names, pax path and size records.
**
**   - A CSV file with a header row (SOURCE ends in .csv), RFC 4180: ','
**     separates cells, CRLF or LF ends records, "..." quotes cells that hold
**     commas, quotes ("") or line breaks; a UTF-8 BOM is ignored, blank lines
**     skipped.  One field per column, named after the header with any other
**     character than those of a pagedb name made '_' ("id", "page", "off"
**     get a '_' appended; each renaming is reported on o->err): INT if every
**     value is a 64-bit decimal integer, REAL if every value is a decimal
**     number, else TEXT.  Empty cells are missing values.  The cells are
**     handed to the writers as text, which convert them as above.
**
** Sample ids follow the dataset's largest committed id: id = max + 1 + the
** sample's rank in SOURCE (files in strcmp order of their paths, tar
** samples and CSV records in file order), so any number of threads gives
** the same dataset.  A skipped file leaves its id unused.
**
** Commits: every 10,000 samples or 1 GiB (the pages written so far), and at
** the end.  When *o->stop becomes non-zero the import stops after the
** samples in progress, commits them, and returns PAGEDB_ERROR with a
** message saying how many samples were imported and committed; after a
** fatal error too, the samples written before it are committed.
**
** xfer_export writes the samples (those matching o->where, in id order):
**   - DEST ends in .tar, .tar.gz or .tgz (gzip): one tar file (never split
**     into numbered shards),
**     its members KEY.FIELD for each field with a value, KEY the __key__
**     value (the decimal id when there is no __key__ field), in the order
**     of the fields (fields id_, page_, off_ as KEY.id, KEY.page, KEY.off):
**     BYTES and TEXT values as read (decompressed), INT and REAL values as
**     WebDataset's writers write them (Python's str(): "3"; "0.1", "2.0",
**     "1e+16": the shortest decimal that reads back as the same double, in
**     Python's notation).  Headers are
**     ustar (pax for long names), mode 0644, owner 0, mtime the export's.
**     A member name that would leave the archive's root is refused.  An
**     interrupted or failed export removes the file.
**   - otherwise DEST is a directory (created if missing, files in it
**     overwritten) into which each sample's data is written at its path:
**     the fields path (TEXT) and data (BYTES) of an ImageFolder import.  A
**     path that is absolute, empty, or has an empty, "." or ".." component
**     is refused naming the sample; directories below DEST are created and
**     opened with O_NOFOLLOW, so a symbolic link in DEST is not followed.
** So an import followed by an export gives back every file (every tar
** member: its name and bytes), byte for byte, but for values an import
** converted from text to INT or REAL (a .cls member, a --field NAME:int)
** that were not written the way WebDataset's writers write numbers ("3\n",
** " 3", "+3", "1.50"): those come back as the writers would write them,
** the same number to every reader (webdataset decodes int("3\n") = 3).
** Import with --field NAME:bytes to keep such bytes as they are.
*/
#ifndef PAGEDB_XFER_H
#define PAGEDB_XFER_H

#include <stdint.h>
#include <stdio.h>
#include "pagedb.h"

/* An override of a field's type (and codec) for xfer_import. */
/* A tensor field's declaration (pagedb_field_add_tensor's arguments). */
typedef struct XferTensor {
  int dtype, ndim;
  int64_t dims[PAGEDB_TENSOR_MAX_DIMS];   /* PAGEDB_DIM_VAR for a variable one */
} XferTensor;

typedef struct XferField {
  const char *zName;
  int type;                /* PAGEDB_BYTES ... PAGEDB_TENSOR */
  XferTensor tensor;       /* PAGEDB_TENSOR: its declaration */
  int codec;               /* its codec when the field is created */
  int hasCodec;            /* the override names a codec (else o->codec for BYTES/TEXT) */
} XferField;

typedef struct XferOpts {
  int threads;             /* writer threads, >= 1 (the shell passes all cores by default) */
  int codec;               /* codec of the BYTES fields of a dataset that has no fields yet */
  int bail;                /* stop at the first unreadable file instead of reporting and skipping it */
  const char *where;       /* .export: an SQL condition on table sample, or NULL for all */
  volatile int *stop;      /* set (by a SIGINT handler) to stop early, leaving the dataset at its last commit */
  void (*progress)(void *ctx, int64_t done, int64_t total, int64_t bytes);  /* may be NULL */
  void *ctx;
  FILE *err;               /* where per-file problems are reported */
  int nField;              /* .import --field NAME:TYPE[:CODEC[:LEVEL]] overrides: */
  const XferField *aField;
  /* .import --jobs N (import_jobs.c): */
  int schemaOnly;          /* make or check the fields (and ImageFolder's classes), import no sample */
  int nShard, iShard;      /* nShard > 1: write only the samples of rank % nShard == iShard */
  int hasIdBase;           /* the id of the source's sample 0 is idBase, not the largest id + 1 */
  int64_t idBase;
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
#define IMPORT_USAGE ".import SOURCE [--field NAME:TYPE[:CODEC[:LEVEL]] ...] [--threads N] " \
                     "[--jobs N] [--codec CODEC] [--page-size N]"
struct ShellState;
int dotImport(struct ShellState *p, int nArg, char **azArg);
/* .import --jobs N (import_jobs.c): SOURCE imported by N processes, each
** into a part under NAME.parts/, committed into the open dataset at the
** end, all or none.  *N receives the samples committed; 0 or 1 after
** shellError. */
int importJobs(struct ShellState *p, const char *zSource, XferOpts *o, int nJob, int64_t *n);
int dotExport(struct ShellState *p, int nArg, char **azArg);

/* ------------------------------------------------------------------ */
/* Internal to shell/import*.c, export.c and tar.c                     */
/* ------------------------------------------------------------------ */

/* Format a message into MSG of NMSG bytes (nothing if NMSG is 0). */
void xfer_msg(char *msg, size_t nmsg, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

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
/* The uncompressed bytes consumed so far: after tar_next, where the
** member's data begins. */
int64_t tar_offset(TarReader *r);
/* 1 if the file is not compressed (seeks are cheap). */
int tar_direct(TarReader *r);
/* Read SIZE bytes of data at OFF (from tar_offset) of member ZNAME of an
** uncompressed file, as tar_read; tar_next may not be called afterwards. */
int tar_read_at(TarReader *r, const char *zName, int64_t off, int64_t size, void **data,
                size_t *n, char *msg, size_t nmsg);
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
