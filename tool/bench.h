/*
** bench.h -- what the files of pagedb-bench share: the run's options (Bench),
** the state of one workload (Run), the repetitions of one figure (Times),
** and the functions each file offers the others.  tool/bench.c's header
** comment says what the tool measures and the fairness rules it keeps.
**
**   bench.c         options, the machine, --pool-ratio, main
**   bench_run.c     one workload: its order, files and repetitions
**   bench_table.c   the table, the CSV and the targets
**   bench_util.c    clocks, medians, failures, checksums, whole-buffer I/O
**   bench_raw.c     the raw-file reference (buffered, O_DIRECT, io_uring)
**   bench_fio.c     the fio reference and the JSON reader for its report
**   bench_pagedb.c  pagedb's rows
**   bench_kv.c      the other systems' rows, through a KvSys each:
**   bench_sqlite.c  SQLite as a BLOB store
**   bench_lmdb.c    LMDB
*/
#ifndef PAGEDB_BENCH_H
#define PAGEDB_BENCH_H

#include "config.h"
#include "pagedb.h"
#include "workload.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define MAX_WL       8
#define MAX_THREADS 16
#define MAX_REPS    99
#define RAW_BUF     (8u << 20)    /* the reference's write buffer */
#define MAX_VFS      4
#define MAX_KV       2            /* systems in bench_kv.c: SQLite, LMDB */
#define RAW_DEPTH   32            /* the O_DIRECT io_uring reference's queue depth */
#define DIO_ALIGN   4096u         /* O_DIRECT alignment of the raw references */
#define DEFAULT_BATCH 32
#define DEFAULT_WINDOW (8u << 20) /* read-ahead of the prefetch rows */
#define FIO_BS      (64u << 10)   /* the block size of the fio reference */

/* fio's options for the reference (bench_fio.c). */
extern const char *const azFioOpt[];
extern const int nFioOpt;

/* Everything one run knows: options, then the state of the workload in hand. */
typedef struct Bench {
  int argc; char **argv;        /* the command line, printed at the top */
  char zDir[PATH_MAX];          /* where the files go */
  int dirOwned;                 /* 1: we created zDir and remove it at the end */
  int keep;                     /* --keep: leave the files */
  int afterWrite;               /* the read-after-write rows (default; --no-after-write) */
  int afterWriteOnly;           /* --after-write-only: no other read rows, no other systems */
  int nReps;                    /* --reps (0 until set: default by mode) */
  int aThread[MAX_THREADS];     /* --threads */
  int nThread;
  int quick;                    /* --quick */
  int cold;                     /* --cold: drop the page cache before phases */
  int poolRatio;                /* --pool-ratio: print the lz4 ratios only */
  size_t pageSize;              /* --page-size, 0 for the default */
  int align;                    /* --align: the workload field's alignment, 0 for the default */
  uint64_t seed;                /* --seed */
  const char *azSpec[MAX_WL];   /* --workload */
  int nSpec;
  const char *azVfs[MAX_VFS];   /* --vfs (none: the default VFS, unlabelled) */
  int nVfs;
  int vfsSkip[MAX_VFS];         /* 1: that VFS does not work here */
  char azWhy[MAX_VFS][512];     /* why */
  int nBatch;                   /* --batch: ids per pagedb_read_batch */
  size_t window;                /* --window: read-ahead bytes of the prefetch rows */
  char zFio[PATH_MAX];          /* fio found on PATH; "" if it is not installed */
  int directRef;                /* read the raw file with O_DIRECT too */
  int kvOn[MAX_KV];             /* --compare: which other systems run */
  FILE *pCsv;                   /* --csv: every measurement; 0 without */
  int labelW;                   /* width of the row names */
  int nFail;                    /* correctness failures so far */
} Bench;

/* The state of one workload's measurements. */
typedef struct Run {
  Bench *b;
  wl_t w;
  uint64_t *aSize;              /* size of each sample */
  uint64_t *aOff;               /* offset of each sample in the raw file */
  int64_t *aOrder;              /* the read order in hand: aRandom or aSeq */
  int64_t *aRandom;             /* the random read order, shared by all */
  int64_t *aSeq;                /* 0, 1, 2...: the sequential read order */
  int iOrd;                     /* 0: aOrder is aRandom; 1: aSeq */
  int evict;                    /* 1: the read passes start with their files evicted */
  int noPrep;                   /* 1: a read-after-write pass: nothing dropped or read in first */
  uint64_t lastSum;             /* the checksum of the last read pass (raw mmap, pdbRead) */
  double lastCpu;               /* ...and the CPU seconds of its timed part: on a loaded
                                ** machine its wall time also counts waits for a core */
  double childRss;              /* peak RSS of the last fresh-process pass, bytes */
  double childCpu;              /* ...and the CPU seconds of its pass */
  uint64_t nByte;               /* sum of aSize */
  uint64_t rawSum[2];           /* checksum of the raw pread pass, per order */
  int haveRawSum[2];
  char zRaw[PATH_MAX + 64];     /* the raw file */
  char zPdb[MAX_VFS][MAX_THREADS][PATH_MAX + 64];  /* a dataset per VFS and thread count */
  int iRead;                    /* which of zPdb[] the read phases use */
  int iVfs;                     /* the VFS in hand: index into b->azVfs */
  int opened[MAX_VFS];          /* a pagedb_open under that VFS has worked */
  int verified[MAX_VFS][3];     /* read mode verified with wl_check */
  int verifiedBatch[MAX_VFS][3];/* the same, through pagedb_read_batch */
  int verifiedAhead[MAX_VFS][3];/* the same, through pagedb_reader_prefetch */
  char zFioWhy[512];            /* why the fio reference failed; "" if it did not */
  char zRawDio[PATH_MAX + 64];  /* the raw file written with O_DIRECT */
  char zDioWhy[512];            /* why O_DIRECT writes were refused; "" if they were not */
  int dioChecked;               /* zRawDio's bytes were checked against the workload */
  char zKv[MAX_KV][PATH_MAX + 64];  /* the dataset of each other system (bench_kv.c) */
  int kvVerified[MAX_KV];       /* its bytes and labels were checked against the workload */
} Run;
/* Medians are taken over these. */
typedef struct Times {
  double a[MAX_REPS];           /* seconds */
  double rss[MAX_REPS];         /* peak RSS of the process during each, bytes (-1: n/a) */
  int n;
} Times;

/* The parts of one pagedb write, in seconds. */
typedef struct WriteTimes {
  double total;                 /* pagedb_open ... pagedb_close */
  double sync;                  /* our own fsync of the data file before the commit */
  double commit;                /* the final pagedb_commit: ~ the catalog's part */
  double close;                 /* pagedb_close */
  double engineCpu;             /* CPU of threads that are neither ours nor the
                                ** writers: the engine's own (its catalog thread) */
  double writerCpu;             /* CPU of the writer threads */
} WriteTimes;

/* The times of one VFS's pagedb rows. */
typedef struct VfsTimes {
  Times tW[MAX_THREADS], tSync[MAX_THREADS], tCommit[MAX_THREADS], tClose[MAX_THREADS];
  Times tEng[MAX_THREADS], tWcpu[MAX_THREADS];
  Times tAwMmap, tAwCpu;        /* zero-copy, in a fresh process right after the write; its CPU */
  Times tMmapCpu;               /* CPU time of the tMmap passes */
  Times tMmap, tCopy, tBMmap, tBCopy, tAMmap, tACopy, tOpen;
  Times tSeqMmap, tSeqCopy, tColdCopy, tColdBatch;
  uint64_t disk;                /* the dataset read, on disk */
} VfsTimes;

/* The times of one other system's rows (bench_kv.c). */
typedef struct KvTimes {
  Times tW[MAX_THREADS], tRand, tSeq, tCold, tOpen;
  uint64_t disk;
} KvTimes;

/* Every figure of one workload. */
typedef struct WlTimes {
  Times tRaw, tRawDioW;                         /* writes */
  Times tRawPread, tRawMmap, tRawDio, tRawUring, tFio, tRawSeq, tRawCold;
  Times tRawAwMmap, tRawAwCpu;                  /* mmap, fresh process, right after the write; CPU */
  Times tRawMmapCpu;                            /* CPU time of the tRawMmap passes */
  uint64_t rawDisk;
  VfsTimes *aVt;                                /* one per VFS */
  KvTimes aKv[MAX_KV];
} WlTimes;

/* bench_util.c */
double cpuTime(clockid_t clock);
double now(void);
void timesAdd(Times *t, double v);
double timesEnd(const Times *t, int sign);
double timesRss(const Times *t);
void rssReset(void);
double rssPeak(void);
double rssNow(void);
void evictFile(const char *zPath);
/* Read zPath once so that it is in the page cache. */
void warmFile(const char *zPath);
/* Before a timed read pass over zPath: evicted for a cold pass (r->evict),
** read in for a warm one; a --cold run has dropped the cache already. */
void prepFile(const Run *r, const char *zPath);
uint64_t diskBytes(const char *zPath);
double median(const Times *t);
void fail(Bench *b, const char *fmt, ...);
void failRc(Bench *b, const char *zCall, int rc, const char *zMsg);
uint64_t mixSum(uint64_t h, const void *p, size_t n);
void dropCaches(Bench *b);
int ioAll(int fd, const void *p, size_t n, uint64_t off, int isWrite);

/* bench_raw.c: each returns the seconds taken, or -1 on failure */
double rawWriteFile(Run *r, int direct);
double rawPread(Run *r);
double rawMmap(Run *r);
double rawDirectPread(Run *r);
double rawDirectUring(Run *r);

/* bench_fio.c */
int findOnPath(const char *zName, char *zOut, size_t n);
double rawFio(Run *r);

/* bench_pagedb.c */
const char *vfsName(const Run *r);
int vfsIsDirect(const Run *r);
const char *pdbLabel(const Run *r, char *z, size_t n, const char *zRest);
void removeDataset(const char *zPath);
int pdbWrite(Run *r, int iT, int nT, WriteTimes *wt);
double pdbRead(Run *r, int mode, size_t window);
double pdbBatch(Run *r, int mode);
double pdbOpen(Run *r);

uint64_t pdbDiskBytes(const Run *r);

/*
** Another system storing the same samples, one record per sample keyed by
** its id: SQLite (bench_sqlite.c), LMDB (bench_lmdb.c).  bench_kv.c times
** and checks them all the same way; each method returns 0 or an error with
** its message in zErr (KV_ERR bytes).  A system not built in has xOpen 0
** and zHow saying why.
*/
#define KV_ERR 512
typedef struct KvSys {
  const char *zName;            /* "sqlite", "lmdb" */
  const char *zHow;             /* how it stores, writes and reads: one line */
  const char *zGet;             /* the call that reads a sample, for the table */
  int zeroCopy;                 /* 1: reads point into the store (compare with raw mmap) */
  const char *const *azSuffix;  /* the files of a store: zPath + each, 0-terminated */
  /* Open the store at zPath; create it (empty, sized for R's workload) if CREATE. */
  int (*xOpen)(Run *r, const char *zPath, int create, void **ppStore, char *zErr);
  int (*xClose)(void *pStore, char *zErr);
  /* A writer per writing thread; one transaction, made durable, per batch. */
  int (*xWriterOpen)(void *pStore, void **ppW, char *zErr);
  int (*xWriteBatch)(void *pW, Run *r, int64_t i0, int64_t i1, const uint8_t *buf, char *zErr);
  void (*xWriterClose)(void *pW);
  /* A reader: *pp holds the data of sample ID until the next call. */
  int (*xReaderOpen)(void *pStore, void **ppR, char *zErr);
  int (*xGet)(void *pR, int64_t id, const void **pp, size_t *pn, char *zErr);
  int (*xLabel)(void *pR, int64_t id, int64_t *pLabel, char *zErr);
  void (*xReaderClose)(void *pR);
} KvSys;
extern const KvSys kvSqlite, kvLmdb;
#define KV_SQLITE 0             /* their places in bench_kv.c's list */
#define KV_LMDB   1

/* bench_kv.c: seconds, or -1 on failure */
double kvWrite(Run *r, int iKv, int nT);
double kvRead(Run *r, int iKv);
double kvOpen(Run *r, int iKv);
uint64_t kvDiskBytes(const Run *r, int iKv);
void kvRemove(const Run *r, int iKv);
const KvSys *kvSys(int iKv);

/* bench_run.c */
int runWorkload(Bench *b, const char *zSpec);

/* bench_table.c */
void csvHeader(Bench *b);
void report(Run *r, WlTimes *wt);

#endif /* PAGEDB_BENCH_H */
