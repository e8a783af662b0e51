/*
** tcldata.h -- the deterministic data's generator and the threaded jobs of
** tcldata.c (DB ingest, DB verify), for the test files that drive the same
** data from threads of their own (tclstress.c).
*/
#ifndef TCLDATA_H
#define TCLDATA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <tcl.h>

#include "pagedb.h"

typedef struct Gen Gen;
struct Gen {
  uint64_t seed;
  uint64_t minSz, maxSz;       /* uniform sizes in [minSz, maxSz] */
  int64_t *aSize;              /* or a cyclic list of sizes (-1: omit field) */
  int nSize;
  int autoKey;                 /* keys are in the first INT field, not the id */
  int keyField;                /* that field, or -1 */
  int nField;
  int aType[PAGEDB_MAX_FIELDS];
  /* 1: field f is a token field of uint8 tokens (tensor:uint8:*), given
  ** and checked as BYTES are (aType PAGEDB_BYTES), written with
  ** pagedb_put_tensor: what the power-loss test of token maps ingests. */
  unsigned char aTok8[PAGEDB_MAX_FIELDS];
  int nGiven;                  /* -fields N: only fields below N are given (0: all) */
  int text;                    /* -text: compressible bytes (textNext) */
};

typedef struct Job Job;
struct Job {
  pagedb *db;
  Gen g;
  int nThread;
  int64_t nCount;              /* samples to write (ingest) */
  int64_t iStart;              /* first key */
  int contend;                 /* every thread tries every key */
  int64_t commitEvery;         /* commit after every N samples (0: only at end) */
  int64_t flushEvery;          /* flush each writer after N of its samples */
  int progressFd;              /* -1 or where "committed N" lines go */
  int64_t *aId;                /* verify: ids to check */
  int64_t nId;
  int readMode;                /* verify: PAGEDB_READ_MMAP / _COPY */
  int useInto;                 /* verify: pagedb_read_into */
  int mixed;                   /* verify: even threads zero-copy, odd ones copy */
  int64_t dontneed;            /* verify: PAGEDB_ADVISE_DONTNEED every N samples */
  atomic_llong nDone;          /* samples written or verified */
  atomic_llong nDup;           /* contend: CONSTRAINT skips */
  atomic_int stop;             /* set on the first error */
  atomic_int writersDone;      /* ingest: every writer thread has ended */
  int nReader;                 /* ingest: concurrent reader threads */
  atomic_llong nSeen;          /* ingest: samples the readers found intact */
  pthread_mutex_t mutex;       /* guards rc/zErr and progress output */
  int rc;                      /* first error's code, or PAGEDB_OK */
  char *zErr;                  /* first error's message (malloc) */
};

typedef struct JobThread JobThread;
struct JobThread {
  Job *job;
  int t;                       /* thread number */
  pthread_t tid;
};

/* One step of splitmix64: advances *S and returns the next output. */
uint64_t splitmix64(uint64_t *s);

/* Read the fields of DB into G and check G's options. */
int genSetup(Tcl_Interp *interp, pagedb *db, Gen *g);

/* Record the first error of JOB and tell its threads to stop. */
void jobFail(Job *job, int rc, const char *zFmt, ...);

/* Write the sample with key KEY through W (thread T of JOB); *PBUF is a
** scratch buffer of *PNBUF bytes that grows.  PAGEDB_OK, or the error,
** recorded with jobFail except a CONSTRAINT under job->contend. */
int ingestOne(Job *job, int t, pagedb_writer *w, int64_t key,
              unsigned char **pBuf, size_t *pnBuf);

/* Check every field of sample ID through R: 0 intact, -1 failed (recorded
** with jobFail), 1 not visible when ALLOWMISSING. */
int verifyOne(Job *job, pagedb_reader *r, int64_t id, int allowMissing,
              unsigned char **pBuf, size_t *pnBuf);

/* Run job->nThread threads of XFUNC and job->nReader of XREADER (which
** stop when every XFUNC thread has ended); join them all. */
int jobRun(Tcl_Interp *interp, Job *job, void *(*xFunc)(void *),
           void *(*xReader)(void *));
void jobFree(Job *job);

/* Parse an option shared by ingest and verify (-threads, -seed, -min,
** -max, -sizes, -fields): 1 handled, 0 unknown, -1 error. */
int jobOption(Tcl_Interp *interp, Job *job, const char *z, Tcl_Obj *v);

#endif /* TCLDATA_H */
