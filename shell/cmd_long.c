/*
** cmd_long.c -- the pagedb shell's long commands (.check, .vacuum,
** .attach, .bench), their progress bars, and Ctrl-C.
**
** Progress.  pagedb_check, pagedb_vacuum and pagedb_attach take no progress
** callback, so each runs in a worker thread while this thread watches what
** can be watched from outside, without changing the library:
**   .check    the bytes this process has read (/proc/self/io rchar) against
**             the bytes the committed runs use (a full check reads each run
**             once; a quick check reads only headers: elapsed time only);
**   .vacuum   the bytes allocated to the new data file (st_blocks: the two
**             copying threads write both halves at once, so the file's
**             length says nothing) against the live bytes to copy;
**   .attach   the bytes allocated to this dataset's data file beyond what
**             it had, against the other dataset's data file.
** The bar is drawn on stderr only when stdout and stderr are terminals, at
** most 10 times a second, with the rate and the time left.
**
** Ctrl-C.  None of the three can be stopped midway through the API.  The
** first Ctrl-C says so; a second abandons the work and exits the shell at
** once (status 130).  That is safe by the library's own contracts: the
** check only reads; an attach commits nothing until it ends, and pages it
** copied past the last commit are discarded at the next open; an in-place
** vacuum leaves the old dataset or the new one whole at any moment (the
** next open finishes or undoes the swap), and for VACUUM INTO the shell
** removes the unfinished copy.  A third Ctrl-C at any time exits at once.
*/
#include "shell.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static ShellState *gShell;            /* for the SIGINT handler */

static void onSigint(int sig){
  (void)sig;
  ShellState *p = gShell;
  if( p == 0 ) _exit(130);
  p->interrupted++;
  if( p->interrupted >= 3 ) _exit(130);
  if( p->interactive && p->zCmdName == 0 ){
    /* At the prompt (or in SQL): the line is dropped, the shell stays. */
    static const char nl[] = "\n";
    ssize_t k = write(2, nl, 1);
    (void)k;
  }
}

void shellSignals(ShellState *p){
  struct sigaction sa;
  gShell = p;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = onSigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, 0);
}

static double now(void){
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ */
/* The bar                                                             */
/* ------------------------------------------------------------------ */

static pthread_mutex_t barMutex = PTHREAD_MUTEX_INITIALIZER;
static double barStart, barLast;
static int barShown;

static void fmtTime(char *buf, size_t cap, double s){
  long t = (long)(s + 0.5);
  if( t >= 3600 ) snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
}

/*
** Draw one state of the bar: DONE of TOTAL (TOTAL 0: unknown), BYTES (for
** the rate, -1 if not bytes: the rate is of DONE).  Caller holds barMutex.
*/
static void drawBar(ShellState *p, int64_t done, int64_t total, int64_t bytes){
  static const char spin[] = "|/-\\";
  double t = now();
  if( !barShown ){ barStart = t; barLast = 0; barShown = 1; }
  if( t - barLast < 0.1 ) return;
  barLast = t;
  double el = t - barStart;
  char zEl[32], zLeft[32], zRate[48];
  fmtTime(zEl, sizeof zEl, el);
  if( bytes >= 0 ) snprintf(zRate, sizeof zRate, "%.1f MB/s", el > 0 ? (double)bytes / el / 1e6 : 0.0);
  else snprintf(zRate, sizeof zRate, "%.0f/s", el > 0 ? (double)done / el : 0.0);
  const char *zLabel = p->zCmdName ? p->zCmdName : "working";
  if( total > 0 ){
    if( done > total ) done = total;
    double f = (double)done / (double)total;
    char bar[31];
    int w = (int)(f * 30);
    for(int i = 0; i < 30; i++) bar[i] = i < w ? '#' : '.';
    bar[30] = 0;
    if( done > 0 && el > 0.5 ) fmtTime(zLeft, sizeof zLeft, el * (double)(total - done) / (double)done);
    else snprintf(zLeft, sizeof zLeft, "?");
    fprintf(stderr, "\r.%s [%s] %3.0f%%  %s  %s elapsed, %s left\033[K", zLabel, bar, f * 100, zRate,
            zEl, zLeft);
  }else{
    fprintf(stderr, "\r.%s %c %s elapsed", zLabel, spin[(int)(el * 10) % 4], zEl);
    if( bytes > 0 ) fprintf(stderr, "  %.1f MB  %s", (double)bytes / 1e6, zRate);
    fprintf(stderr, "\033[K");
  }
  fflush(stderr);
}

void shellProgress(void *ctx, int64_t done, int64_t total, int64_t bytes){
  ShellState *p = ctx;
  if( !p->progress ) return;
  pthread_mutex_lock(&barMutex);
  drawBar(p, done, total, bytes);
  pthread_mutex_unlock(&barMutex);
}

void shellProgressEnd(ShellState *p){
  pthread_mutex_lock(&barMutex);
  if( barShown && p->progress ){
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
  }
  barShown = 0;
  pthread_mutex_unlock(&barMutex);
}

/* ------------------------------------------------------------------ */
/* Running long work                                                   */
/* ------------------------------------------------------------------ */

typedef struct LongOp LongOp;
struct LongOp {
  ShellState *p;
  int (*xWork)(LongOp *);       /* in the worker thread; returns a PAGEDB_* code */
  int64_t (*xDone)(LongOp *);   /* bytes done so far (-1: unknown) */
  int64_t total;                /* bytes expected (0: unknown) */
  const char *zAbandon;         /* a dataset to remove if abandoned (VACUUM INTO) */
  volatile int finished;
  int rc;
  char zMsg[1024];              /* pagedb_errmsg of the worker's failure */
  /* Arguments and results of the work. */
  const char *zFile;
  int flags, policy;
  int64_t offset, n, base;
  size_t pageSize;
  int nRecode;                  /* .vacuum --codec FIELD CODEC */
  const char *azRecode[16];
  int aRecode[16];
};

static void *longMain(void *pArg){
  LongOp *op = pArg;
  op->rc = op->xWork(op);
  snprintf(op->zMsg, sizeof op->zMsg, "%s", op->rc ? pagedb_errmsg(op->p->db) : "");
  __atomic_store_n(&op->finished, 1, __ATOMIC_RELEASE);
  return 0;
}

void shellRemoveDataset(const char *zFile){
  static const char *azSuffix[] = { "", "-catalog", "-catalog-wal", "-catalog-shm", "-catalog-journal", "-index",
                                     "-index.new" };
  char buf[4200];
  for(int i = 0; i < 7; i++){
    snprintf(buf, sizeof buf, "%s%s", zFile, azSuffix[i]);
    unlink(buf);
  }
}

/* Run OP's work in a thread, drawing progress and watching for Ctrl-C. */
static int runLong(LongOp *op){
  ShellState *p = op->p;
  pthread_t th;
  int warned = 0;
  int64_t maxDone = 0;
  if( pthread_create(&th, 0, longMain, op) != 0 ){
    /* No thread: run it here, without a bar. */
    longMain(op);
    return op->rc;
  }
  while( !__atomic_load_n(&op->finished, __ATOMIC_ACQUIRE) ){
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, 0);
    if( p->interrupted == 1 && !warned ){
      shellProgressEnd(p);
      fprintf(stderr, "\n.%s cannot stop midway; press Ctrl-C again to abandon it and exit "
              "(the dataset stays at its last commit)\n", p->zCmdName ? p->zCmdName : "command");
      warned = 1;
    }else if( p->interrupted >= 2 ){
      shellProgressEnd(p);
      fprintf(stderr, ".%s abandoned; the dataset is at its last commit\n",
              p->zCmdName ? p->zCmdName : "command");
      if( op->zAbandon ) shellRemoveDataset(op->zAbandon);
      _exit(130);
    }
    if( p->progress ){
      int64_t done = op->xDone ? op->xDone(op) : -1;
      /* Never backwards: an in-place vacuum's new file is renamed away at
      ** the end, and the bar should not fall to 0 meanwhile. */
      if( done >= 0 && done < maxDone ) done = maxDone;
      maxDone = done;
      pthread_mutex_lock(&barMutex);
      drawBar(p, done > 0 ? done : 0, done >= 0 ? op->total : 0, done);
      pthread_mutex_unlock(&barMutex);
    }
  }
  pthread_join(th, 0);
  shellProgressEnd(p);
  return op->rc;
}

/* Bytes allocated to ZFILE (0 if it does not exist). */
static int64_t allocated(const char *zFile){
  struct stat st;
  if( stat(zFile, &st) ) return 0;
  return (int64_t)st.st_blocks * 512;
}

/* ------------------------------------------------------------------ */
/* .check                                                              */
/* ------------------------------------------------------------------ */

/* This process's bytes read so far (/proc/self/io rchar), or -1. */
static int64_t bytesRead(void){
  FILE *f = fopen("/proc/self/io", "r");
  char line[128];
  long long v = -1;
  if( f == 0 ) return -1;
  while( fgets(line, sizeof line, f) ){
    if( sscanf(line, "rchar: %lld", &v) == 1 ) break;
  }
  fclose(f);
  return v;
}

static int64_t checkDone(LongOp *op){
  int64_t v = bytesRead();
  return v < 0 ? -1 : v - op->base;
}

static void checkReport(void *ctx, int64_t page, int64_t id, int field, const char *what){
  LongOp *op = ctx;
  ShellState *p = op->p;
  pthread_mutex_lock(&barMutex);
  if( barShown && p->progress ) fprintf(stderr, "\r\033[K");
  barLast = 0;
  fprintf(p->out, "*** ");
  if( page >= 0 ) fprintf(p->out, "page %lld: ", (long long)page);
  if( id >= 0 ) fprintf(p->out, "sample %lld: ", (long long)id);
  if( field >= 0 ){
    const char *z = pagedb_field_name(p->db, field);
    if( z ) fprintf(p->out, "field %s: ", z);
    else fprintf(p->out, "field %d: ", field);
  }
  fprintf(p->out, "%s\n", what);
  fflush(p->out);
  pthread_mutex_unlock(&barMutex);
}

static int checkWork(LongOp *op){
  return pagedb_check(op->p->db, op->flags, checkReport, op, &op->n);
}

/* USAGE: .check [--quick]
** Check the dataset's integrity (pagedb_check): print each problem found,
** then "ok" or the number of problems (and fail).  --quick checks the
** structure only: no checksums, no decompression. */
int dotCheck(ShellState *p, int nArg, char **azArg){
  LongOp op;
  memset(&op, 0, sizeof op);
  for(int i = 1; i < nArg; i++){
    if( strcmp(azArg[i], "--quick") == 0 || strcmp(azArg[i], "-quick") == 0 ){
      op.flags |= PAGEDB_CHECK_QUICK;
    }else{
      shellError(p, ".check %s: unknown option (usage: .check [--quick])", azArg[i]);
      return 1;
    }
  }
  if( shellNeedDb(p, ".check") ) return 1;
  op.p = p;
  op.xWork = checkWork;
  if( !(op.flags & PAGEDB_CHECK_QUICK) && p->progress ){
    pagedb_stat s;
    if( pagedb_stats(p->db, &s) == PAGEDB_OK ) op.total = s.bytes_used;
    op.base = bytesRead();
    if( op.base >= 0 ) op.xDone = checkDone;
  }
  int rc = runLong(&op);
  if( rc == PAGEDB_OK ){
    fprintf(p->out, "ok\n");
    return 0;
  }
  if( rc == PAGEDB_CORRUPT ){
    fprintf(p->out, "%lld problem%s\n", (long long)op.n, op.n == 1 ? "" : "s");
    shellError(p, ".check%s: %lld problem%s found", op.flags ? " --quick" : "", (long long)op.n,
               op.n == 1 ? "" : "s");
    return 1;
  }
  shellError(p, ".check: the check could not run: %s (%s)", pagedb_errname(rc), op.zMsg);
  return 1;
}

/* ------------------------------------------------------------------ */
/* .vacuum                                                             */
/* ------------------------------------------------------------------ */

static int vacuumWork(LongOp *op){
  if( op->nRecode )
    return pagedb_vacuum_recode(op->p->db, op->zFile, op->pageSize, op->nRecode, op->azRecode, op->aRecode);
  return pagedb_vacuum(op->p->db, op->zFile, op->pageSize);
}

static char zVacuumPath[4200];       /* the new data file being written */

static int64_t vacuumDone(LongOp *op){
  (void)op;
  return allocated(zVacuumPath);
}

/* USAGE: .vacuum [INTO FILE] [--page-size N] [--codec FIELD CODEC]...
** Rewrite the dataset without the space deleted samples and unused page
** ends take (pagedb_vacuum): in place, or INTO the new dataset FILE (which
** must not exist).  --page-size gives the copy another page size; --codec
** recompresses FIELD's values with CODEC (pagedb_vacuum_recode: zstd:19,
** zstd-dict trains a dictionary on the field's values first).  In place
** needs the dataset open read-write and no other process using it. */
int dotVacuum(ShellState *p, int nArg, char **azArg){
  LongOp op;
  int64_t ps = 0;
  memset(&op, 0, sizeof op);
  for(int i = 1; i < nArg; i++){
    if( strcasecmp(azArg[i], "into") == 0 ){
      if( i + 1 >= nArg ){ shellError(p, ".vacuum INTO: missing FILE"); return 1; }
      op.zFile = azArg[++i];
    }else if( strcmp(azArg[i], "--page-size") == 0 || strcmp(azArg[i], "-page-size") == 0 ){
      if( i + 1 >= nArg ){ shellError(p, ".vacuum %s: missing N", azArg[i]); return 1; }
      i++;
      if( shellSize(azArg[i], &ps) || ps < PAGEDB_MIN_PAGE_SIZE || ps > PAGEDB_MAX_PAGE_SIZE
       || (ps & (ps - 1)) ){
        shellError(p, ".vacuum --page-size %s: not a power of two from 64K to 1G", azArg[i]);
        return 1;
      }
    }else if( strcmp(azArg[i], "--codec") == 0 || strcmp(azArg[i], "-codec") == 0 ){
      if( i + 2 >= nArg ){ shellError(p, ".vacuum --codec: missing FIELD CODEC"); return 1; }
      if( op.nRecode == 16 ){ shellError(p, ".vacuum --codec: at most 16 fields"); return 1; }
      if( pagedb_codec_parse(azArg[i + 2], &op.aRecode[op.nRecode]) != PAGEDB_OK ){
        shellError(p, ".vacuum --codec %s %s: unknown codec (none, lz4[:L], lz4hc[:L], zstd[:L], zstd-dict[:L])",
                   azArg[i + 1], azArg[i + 2]);
        return 1;
      }
      op.azRecode[op.nRecode++] = azArg[i + 1];
      i += 2;
    }else{
      shellError(p, ".vacuum %s: unexpected argument (usage: .vacuum [INTO FILE] [--page-size N]"
                 " [--codec FIELD CODEC]...)", azArg[i]);
      return 1;
    }
  }
  if( op.zFile ? shellNeedDb(p, ".vacuum") : shellNeedWritable(p, ".vacuum") ) return 1;
  if( op.zFile ){
    char zCat[4200];
    snprintf(zCat, sizeof zCat, "%s-catalog", op.zFile);
    if( access(op.zFile, F_OK) == 0 || access(zCat, F_OK) == 0 ){
      shellError(p, ".vacuum INTO %s: %s exists already", op.zFile,
                 access(op.zFile, F_OK) == 0 ? op.zFile : zCat);
      return 1;
    }
    op.zAbandon = op.zFile;
  }
  shellCloseReader(p);       /* an in-place vacuum wants no reader open */
  struct stat st0;
  int64_t before = stat(pagedb_path(p->db), &st0) == 0 ? (int64_t)st0.st_size : -1;
  pagedb_stat s;
  if( pagedb_stats(p->db, &s) == PAGEDB_OK ) op.total = s.bytes_stored + s.bytes_header;
  snprintf(zVacuumPath, sizeof zVacuumPath, "%s%s", op.zFile ? op.zFile : pagedb_path(p->db),
           op.zFile ? "" : ".vacuum");
  op.p = p;
  op.pageSize = (size_t)ps;
  op.xWork = vacuumWork;
  op.xDone = vacuumDone;
  int rc = runLong(&op);
  if( rc ){
    shellError(p, ".vacuum%s%s: %s (%s)", op.zFile ? " INTO " : "", op.zFile ? op.zFile : "",
               pagedb_errname(rc), op.zMsg);
    return 1;
  }
  struct stat st1;
  const char *zNew = op.zFile ? op.zFile : pagedb_path(p->db);
  if( stat(zNew, &st1) == 0 && before >= 0 ){
    fprintf(p->out, "%s: %lld bytes (was %lld)\n", zNew, (long long)st1.st_size, (long long)before);
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* .attach                                                             */
/* ------------------------------------------------------------------ */

static int attachWork(LongOp *op){
  return pagedb_attach(op->p->db, op->zFile, op->policy, op->offset, &op->n);
}

static int64_t attachDone(LongOp *op){
  return allocated(pagedb_path(op->p->db)) - op->base;
}

/* USAGE: .attach FILE [--keep|--offset N|--after]
** Append every committed sample of dataset FILE (same page size and
** fields) and commit: with their ids (--keep, the default; any collision
** fails the whole attach), their ids plus N (--offset), or new ids after
** the largest of this dataset (--after). */
int dotAttach(ShellState *p, int nArg, char **azArg){
  LongOp op;
  memset(&op, 0, sizeof op);
  op.policy = PAGEDB_ATTACH_KEEP;
  for(int i = 1; i < nArg; i++){
    const char *z = azArg[i];
    if( z[0] == '-' && z[1] == '-' ) z++;
    if( strcmp(z, "-keep") == 0 ){
      op.policy = PAGEDB_ATTACH_KEEP;
    }else if( strcmp(z, "-after") == 0 ){
      op.policy = PAGEDB_ATTACH_AFTER;
    }else if( strcmp(z, "-offset") == 0 ){
      if( i + 1 >= nArg ){ shellError(p, ".attach %s: missing N", azArg[i]); return 1; }
      if( shellInt(azArg[++i], &op.offset) ){
        shellError(p, ".attach %s %s: not an integer", azArg[i - 1], azArg[i]);
        return 1;
      }
      op.policy = PAGEDB_ATTACH_OFFSET;
    }else if( z[0] == '-' ){
      shellError(p, ".attach %s: unknown option (--keep, --offset N or --after)", azArg[i]);
      return 1;
    }else if( op.zFile ){
      shellError(p, ".attach %s: only one FILE (already %s)", azArg[i], op.zFile);
      return 1;
    }else{
      op.zFile = azArg[i];
    }
  }
  if( op.zFile == 0 ){ shellError(p, ".attach: missing FILE"); return 1; }
  if( shellNeedWritable(p, ".attach") ) return 1;
  struct stat st;
  if( stat(op.zFile, &st) ){
    shellError(p, ".attach %s: %s", op.zFile, strerror(errno));
    return 1;
  }
  op.total = (int64_t)st.st_blocks * 512;
  op.base = allocated(pagedb_path(p->db));
  op.p = p;
  op.xWork = attachWork;
  op.xDone = attachDone;
  int rc = runLong(&op);
  if( rc ){
    shellError(p, ".attach %s: %s (%s)", op.zFile, pagedb_errname(rc), op.zMsg);
    return 1;
  }
  fprintf(p->out, "attached %lld sample%s\n", (long long)op.n, op.n == 1 ? "" : "s");
  shellChanged(p, op.n);
  return 0;
}

/* ------------------------------------------------------------------ */
/* .bench                                                              */
/* ------------------------------------------------------------------ */

#define BENCH_SECONDS 10.0    /* each phase stops after this long */

static void benchLine(ShellState *p, const char *zWhat, int64_t n, int64_t bytes, double t){
  fprintf(p->out, "%-16s %lld samples, %.1f MB in %.3f s: %.1f MB/s, %.0f samples/s\n", zWhat,
          (long long)n, (double)bytes / 1e6, t, t > 0 ? (double)bytes / t / 1e6 : 0.0,
          t > 0 ? (double)n / t : 0.0);
}

/* Read every field of the N samples IDS in turn; *PBYTES the bytes read. */
static int benchRead(ShellState *p, pagedb_reader *r, const int64_t *ids, int64_t n,
                     int64_t *pDone, int64_t *pBytes, double *pT){
  double t0 = now();
  int64_t bytes = 0, k;
  int nField = pagedb_field_count(p->db);
  for(k = 0; k < n && !p->interrupted && now() - t0 < BENCH_SECONDS; k++){
    for(int f = 0; f < nField; f++){
      int type = pagedb_field_type(p->db, f), rc;
      if( type == PAGEDB_INT || type == PAGEDB_REAL ) continue;
      const void *data;
      size_t sz;
      rc = pagedb_read(r, ids[k], f, &data, &sz);
      if( rc == PAGEDB_NOTFOUND ) continue;
      if( rc ){
        shellError(p, ".bench: reading sample %lld field %s: %s (%s)", (long long)ids[k],
                   pagedb_field_name(p->db, f), pagedb_errname(rc), pagedb_reader_errmsg(r));
        return 1;
      }
      bytes += (int64_t)sz;
    }
    if( p->progress && (k & 255) == 0 ) shellProgress(p, k, n, bytes);
  }
  shellProgressEnd(p);
  *pT = now() - t0;
  *pDone = k;
  *pBytes = bytes;
  return 0;
}

/* Write samples IDS[0..N-1] of the open dataset to a new dataset at ZFILE. */
static int benchWrite(ShellState *p, pagedb_reader *r, const char *zFile, const int64_t *ids,
                      int64_t n, int64_t *pDone, int64_t *pBytes, double *pT){
  pagedb *db = 0;
  pagedb_writer *w = 0;
  int nField = pagedb_field_count(p->db);
  int64_t k = 0, bytes = 0;
  const char *zStep = "pagedb_open";
  int rc = pagedb_open(zFile, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, p->zDbVfs);
  if( rc == PAGEDB_OK ){ zStep = "pagedb_set_page_size"; rc = pagedb_set_page_size(db, pagedb_page_size(p->db)); }
  for(int f = 0; rc == PAGEDB_OK && f < nField; f++){
    zStep = "pagedb_field_add";
    rc = pagedb_field_add(db, pagedb_field_name(p->db, f), pagedb_field_type(p->db, f),
                          pagedb_field_codec(p->db, f));
  }
  double t0 = now();
  if( rc == PAGEDB_OK ){ zStep = "pagedb_writer_open"; rc = pagedb_writer_open(db, &w); }
  for(k = 0; rc == PAGEDB_OK && k < n && !p->interrupted && now() - t0 < BENCH_SECONDS; k++){
    zStep = "pagedb_sample_begin";
    rc = pagedb_sample_begin(w, ids[k]);
    for(int f = 0; rc == PAGEDB_OK && f < nField; f++){
      int type = pagedb_field_type(p->db, f);
      if( type == PAGEDB_INT ){
        int64_t v;
        rc = pagedb_read_int(r, ids[k], f, &v);
        if( rc == PAGEDB_OK ){ zStep = "pagedb_put_int"; rc = pagedb_put_int(w, f, v); }
      }else if( type == PAGEDB_REAL ){
        double v;
        rc = pagedb_read_real(r, ids[k], f, &v);
        if( rc == PAGEDB_OK ){ zStep = "pagedb_put_real"; rc = pagedb_put_real(w, f, v); }
      }else{
        const void *data;
        size_t sz;
        rc = pagedb_read(r, ids[k], f, &data, &sz);
        if( rc == PAGEDB_OK ){ zStep = "pagedb_put"; rc = pagedb_put(w, f, data, sz); bytes += (int64_t)sz; }
      }
      if( rc == PAGEDB_NOTFOUND ) rc = PAGEDB_OK;
    }
    if( rc == PAGEDB_OK ){ zStep = "pagedb_sample_end"; rc = pagedb_sample_end(w, 0); }
    if( p->progress && (k & 255) == 0 ) shellProgress(p, k, n, bytes);
  }
  if( rc ){
    shellError(p, ".bench: writing the scratch copy %s: %s: %s (%s)", zFile, zStep, pagedb_errname(rc),
               w ? pagedb_writer_errmsg(w) : db ? pagedb_errmsg(db) : "out of memory");
  }
  int rc2 = pagedb_writer_close(w);
  if( rc == PAGEDB_OK && rc2 ){
    rc = rc2;
    shellError(p, ".bench: writing the scratch copy %s: %s (%s)", zFile, pagedb_errname(rc), pagedb_errmsg(db));
  }
  if( rc == PAGEDB_OK ){
    rc = pagedb_commit(db);
    if( rc ) shellError(p, ".bench: committing the scratch copy %s: %s (%s)", zFile, pagedb_errname(rc),
                        pagedb_errmsg(db));
  }
  *pT = now() - t0;
  shellProgressEnd(p);
  pagedb_close(db);
  *pDone = k;
  *pBytes = bytes;
  return rc ? 1 : 0;
}

/* USAGE: .bench [N]
** A quick benchmark on the open dataset: read N samples (default: all,
** each phase at most 10 s) in file order and in random order (every field,
** copy mode), then write them to a scratch copy (same page size, fields
** and codecs) under $TMPDIR or /tmp, commit, and remove it.  Prints MB/s
** and samples/s for each. */
int dotBench(ShellState *p, int nArg, char **azArg){
  if( nArg > 2 ){ shellError(p, ".bench: unexpected argument \"%s\"", azArg[2]); return 1; }
  if( shellNeedDb(p, ".bench") ) return 1;
  int64_t limit = -1;
  if( nArg == 2 && (shellInt(azArg[1], &limit) || limit <= 0) ){
    shellError(p, ".bench %s: not a count of samples (an integer > 0)", azArg[1]);
    return 1;
  }
  int64_t n = 0;
  int rc = pagedb_order(p->db, PAGEDB_ORDER_SEQUENTIAL, 0, 0, 0, 1, 0, &n);
  if( rc == PAGEDB_OK && n == 0 ){
    shellError(p, ".bench: the dataset has no samples");
    return 1;
  }
  int64_t *seq = rc == PAGEDB_OK ? malloc((size_t)n * sizeof(int64_t)) : 0;
  int64_t *rnd = rc == PAGEDB_OK ? malloc((size_t)n * sizeof(int64_t)) : 0;
  if( rc == PAGEDB_OK && (seq == 0 || rnd == 0) ) rc = PAGEDB_NOMEM;
  if( rc == PAGEDB_OK ) rc = pagedb_order(p->db, PAGEDB_ORDER_SEQUENTIAL, 0, 0, 0, 1, seq, &n);
  if( rc == PAGEDB_OK ) rc = pagedb_order(p->db, PAGEDB_ORDER_RANDOM, 1, 0, 0, 1, rnd, &n);
  pagedb_reader *r = 0;
  if( rc == PAGEDB_OK ) rc = pagedb_reader_open(p->db, PAGEDB_READ_COPY, &r);
  if( rc ){
    shellError(p, ".bench: %s (%s)", pagedb_errname(rc), pagedb_errmsg(p->db));
    free(seq);
    free(rnd);
    return 1;
  }
  if( limit > 0 && limit < n ) n = limit;
  int64_t done, bytes;
  double t;
  int bad = benchRead(p, r, seq, n, &done, &bytes, &t);
  if( !bad ) benchLine(p, "read sequential:", done, bytes, t);
  if( !bad ) bad = benchRead(p, r, rnd, n, &done, &bytes, &t);
  if( !bad ) benchLine(p, "read random:", done, bytes, t);
  if( !bad && !p->interrupted ){
    const char *zTmp = getenv("TMPDIR");
    char zDir[4096], zFile[4200];
    snprintf(zDir, sizeof zDir, "%s/pagedb-bench-XXXXXX", zTmp && zTmp[0] ? zTmp : "/tmp");
    if( mkdtemp(zDir) == 0 ){
      shellError(p, ".bench: cannot make a scratch directory %s: %s", zDir, strerror(errno));
      bad = 1;
    }else{
      snprintf(zFile, sizeof zFile, "%s/bench.pagedb", zDir);
      bad = benchWrite(p, r, zFile, seq, n, &done, &bytes, &t);
      if( !bad ) benchLine(p, "write + commit:", done, bytes, t);
      shellRemoveDataset(zFile);
      rmdir(zDir);
    }
  }
  pagedb_reader_close(r);
  free(seq);
  free(rnd);
  if( !bad && p->interrupted ){
    shellError(p, ".bench: interrupted");
    bad = 1;
  }
  return bad;
}
