/*
** import.h -- what the .import layouts share with import.c.
**
** import.c runs an import: it owns the Import, the writer threads, the
** commits and the progress, and dispatches on SOURCE's layout to
** importFolder (import_dir.c), importTar (import_tar.c) or importCsv
** (import_csv.c).  A layout scans its source, creates or checks its fields
** with impFields, sets xNext (and xLoad) and calls impRun.  These are the
** shell's own symbols, not the library's.
*/
#ifndef PAGEDB_IMPORT_H
#define PAGEDB_IMPORT_H

#include "xfer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* One value of a job's sample. */
typedef struct Put {
  int field;
  int type;             /* PAGEDB_BYTES ... PAGEDB_REAL */
  void *data;           /* BYTES/TEXT: malloc'd when OWNED */
  size_t n;
  int owned;
  int64_t iv;
  double rv;
  int json;             /* BYTES/TEXT data that must be valid JSON when stored as TEXT */
} Put;

/* One sample to write. */
typedef struct Job {
  int64_t id;
  int64_t idx;          /* ImageFolder: the file's index */
  int nPut, nAlloc;
  Put *aPut;
  int64_t bytes;
} Job;

/* How a plain tar shard whose keys' members are apart is read (import_tar.c). */
typedef struct TarPlan TarPlan;

/* The state of one import: the machinery's, then each layout's. */
typedef struct Import Import;
struct Import {
  pagedb *db;
  const XferOpts *o;
  const char *zSource;
  pthread_mutex_t mu;         /* guards the source, the error and progress */
  int rc;                     /* the first fatal error, PAGEDB_OK if none */
  char *msg;                  /* ...its message (nmsg bytes) */
  size_t nmsg;
  int64_t base;               /* the id of job 0 */
  int64_t nextJob;            /* jobs handed out */
  int exhausted;              /* the source has no more jobs */
  int64_t total;              /* jobs in the source, for progress */
  _Atomic int64_t done;       /* samples written */
  _Atomic int64_t bytes;      /* their bytes */
  _Atomic int64_t sinceN;     /* samples and bytes since the last commit */
  _Atomic int64_t sinceB;
  _Atomic int64_t nSkipped;
  /* The source: NEXT fills a job (mutex held); LOAD (may be NULL) completes
  ** it outside the lock.  Both return PAGEDB_OK, PAGEDB_NOTFOUND (next: no
  ** more jobs; load: the item was reported and skipped), or an error. */
  int (*xNext)(Import *, Job *, char *, size_t);
  int (*xLoad)(Import *, Job *, char *, size_t);
  /* ImageFolder */
  int rootFd;
  char **azFile;
  int64_t *aLabel;
  int64_t nFile, nFileAlloc;
  char **azClass;
  int64_t nClass, nClassAlloc;
  int fData, fLabel, fPath;
  int nOwn;                   /* the dataset's own files (never imported) */
  dev_t aOwnDev[7];
  ino_t aOwnIno[7];
  /* Tar */
  char **azShard;
  int nShard, iShard;
  TarReader *tr;
  char *zPend;                /* a member read (header only) for the next sample */
  int pendKind;
  int64_t pendSize;
  struct NpyAgg *aNpy;        /* .npy extensions: what their headers agree on */
  int nNpy;
  char **azExt;               /* extensions, sorted; field of each */
  int *aExtField;
  int nExt, nExtAlloc;
  int fKey;
  TarPlan *aPlan;             /* per shard (nShard) */
  /* CSV */
  FILE *csv;
  int64_t csvLine;
  int nCol;
  int *aColType;
  int *aColField;
  char *cBuf;                 /* the current record's cells, NUL-separated */
  size_t nBuf, nBufAlloc;
  size_t *aCell;              /* offsets of the cells in cBuf */
  size_t *aCellLen;
  int nCell, nCellAlloc;
};

/* A new value in J (zeroed but for FIELD and TYPE); NULL when out of memory. */
Put *jobPut(Job *j, int field, int type);

/*
** Give the import the fields NAMES (N, of the types ATYPE the source's
** conventions give them), after the --field overrides (o->aField): created
** in this order if the dataset has none; else each must exist, and the
** dataset keeps its type when the source's values fit it (anything fits
** BYTES and TEXT, integers fit REAL).  PAGEDB_MISMATCH, with EMSG naming the
** field, for a field that is missing or does not fit, or an override that
** names no field of the source or contradicts the dataset.  AIDX receives
** the fields' numbers.  The writers convert each value to its field's type
** (impWrite).
*/
int impFields(Import *imp, int n, char **azName, const int *aType, const XferTensor *aTensor, int *aIdx,
              char *emsg, size_t nemsg);

/* Check that DATA (N bytes) is one JSON document (RFC 8259, UTF-8): NULL
** if it is, else what is wrong, with *POFF the byte offset where (json.c). */
const char *jsonCheck(const void *data, size_t n, size_t *pOff);

/* Run the writer threads on the source's jobs (imp->xNext, imp->xLoad),
** then commit.  *N receives the samples committed.  Returns imp->rc. */
int impRun(Import *imp, int64_t *n);

/* 1 if Z ends in .tar, .tar.gz or .tgz (case-insensitively). */
int isTarName(const char *z);

/* Import the ImageFolder directory imp->zSource (import_dir.c). */
int importFolder(Import *imp, int64_t *n, char *emsg, size_t nemsg);
/* Free what importFolder allocated (safe on a zeroed Import with rootFd -1). */
void importFolderFree(Import *imp);

/* Import the tar shards (a file or glob pattern) imp->zSource (import_tar.c). */
int importTar(Import *imp, int64_t *n, char *emsg, size_t nemsg);
/* Free what importTar allocated (safe on a zeroed Import). */
void importTarFree(Import *imp);

/* Import the CSV file imp->zSource (import_csv.c). */
int importCsv(Import *imp, int64_t *n, char *emsg, size_t nemsg);
/* Free what importCsv allocated (safe on a zeroed Import). */
void importCsvFree(Import *imp);

#endif /* PAGEDB_IMPORT_H */
