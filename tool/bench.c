/*
** bench.c -- pagedb-bench: pagedb against the raw-file reference, in one run.
**
** For each workload of shared/WORKLOADS.md (tool/workload.c) it measures
**
**   1. the raw-file reference: the same sample bytes written back to back
**      with 8 MiB buffered pwrite()s and one fsync; every sample read once
**      in a seeded random order with pread() into a buffer, and in place
**      through mmap() at the known offsets;
**   2. pagedb: the samples written by 1, 2... threads (one pagedb_writer
**      each, then one pagedb_commit and pagedb_close), read in the same
**      random order in PAGEDB_READ_MMAP and PAGEDB_READ_COPY modes, and the
**      time from pagedb_open (read-only) until the first read is done;
**   3. the ratios to the reference and the project's targets, each marked
**      pass or short.
**
** Fairness.  Every timed read pass touches every byte of every sample the
** same way (sumBytes below), and its checksum must equal the raw pread
** pass's, so a pass that returned wrong bytes, or nothing, cannot look fast.
** Every byte pagedb returns is also compared with the workload (wl_check)
** in an untimed pass per read mode, with the labels.  A mismatch or a failed
** call fails the run: exit status 1.  Targets that are short do not.
** Raw and pagedb runs alternate within each repetition, so drift in the
** machine's speed hits both; each figure is the median of --reps runs.
*/
#include "pagedb.h"
#include "workload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_WL       8
#define MAX_THREADS 16
#define MAX_REPS    99
#define RAW_BUF     (8u << 20)    /* the reference's write buffer */

/* Everything one run knows: options, then the state of the workload in hand. */
typedef struct Bench {
  int argc; char **argv;        /* the command line, printed at the top */
  char zDir[PATH_MAX];          /* where the files go */
  int dirOwned;                 /* 1: we created zDir and remove it at the end */
  int keep;                     /* --keep: leave the files */
  int nReps;                    /* --reps (0 until set: default by mode) */
  int aThread[MAX_THREADS];     /* --threads */
  int nThread;
  int quick;                    /* --quick */
  int cold;                     /* --cold: drop the page cache before phases */
  int poolRatio;                /* --pool-ratio: print the lz4 ratios only */
  size_t pageSize;              /* --page-size, 0 for the default */
  uint64_t seed;                /* --seed */
  const char *azSpec[MAX_WL];   /* --workload */
  int nSpec;
  int nFail;                    /* correctness failures so far */
} Bench;

/* The state of one workload's measurements. */
typedef struct Run {
  Bench *b;
  wl_t w;
  uint64_t *aSize;              /* size of each sample */
  uint64_t *aOff;               /* offset of each sample in the raw file */
  int64_t *aOrder;              /* the random read order, shared by all */
  uint64_t nByte;               /* sum of aSize */
  uint64_t rawSum;              /* checksum of the raw pread pass */
  int haveRawSum;
  char zRaw[PATH_MAX + 64];     /* the raw file */
  char zPdb[MAX_THREADS][PATH_MAX + 64];  /* a dataset per thread count */
  int iRead;                    /* which of zPdb the read phases use */
  int verified[3];              /* read mode verified with wl_check */
} Run;

/* Medians are taken over these. */
typedef struct Times {
  double a[MAX_REPS];
  int n;
} Times;

/* CPU seconds of CLOCK: CLOCK_THREAD_CPUTIME_ID or CLOCK_PROCESS_CPUTIME_ID. */
static double cpuTime(clockid_t clock){
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void){
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void timesAdd(Times *t, double v){
  if( t->n < MAX_REPS ) t->a[t->n++] = v;
}

static int cmpDouble(const void *a, const void *b){
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of T, or -1 if it holds nothing. */
static double median(const Times *t){
  if( t->n == 0 ) return -1;
  double a[MAX_REPS];
  memcpy(a, t->a, sizeof(double) * (size_t)t->n);
  qsort(a, (size_t)t->n, sizeof(double), cmpDouble);
  return t->n % 2 ? a[t->n / 2] : (a[t->n / 2 - 1] + a[t->n / 2]) / 2;
}

/* Report a correctness failure: the run will exit 1. */
static void fail(Bench *b, const char *fmt, ...){
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "pagedb-bench: FAIL: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stdout);
  b->nFail++;
}

/* A pagedb failure: the call, its code and the handle's message. */
static void failRc(Bench *b, const char *zCall, int rc, const char *zMsg){
  fail(b, "%s: %s (%s)", zCall, pagedb_errname(rc), zMsg ? zMsg : "no message");
}

/*
** A checksum that reads every byte of P[0..N) once, fast enough not to hide
** the cost of the read it follows: four 64-bit lanes summed, the tail mixed
** byte by byte.  Every timed read pass combines it the same way (mixSum).
*/
static uint64_t sumBytes(const uint8_t *p, size_t n){
  uint64_t a = 0, b = 0, c = 0, d = 0, t = 0;
  size_t k = 0;
  for(; k + 32 <= n; k += 32){
    uint64_t x[4];
    memcpy(x, p + k, 32);
    a += x[0]; b += x[1]; c += x[2]; d += x[3];
  }
  for(; k < n; k++) t = t * 31 + p[k];
  return a ^ (b << 1 | b >> 63) ^ (c << 2 | c >> 62) ^ (d << 3 | d >> 61) ^ t;
}

static uint64_t mixSum(uint64_t h, const void *p, size_t n){
  return (h ^ sumBytes(p, n)) * 0x100000001b3ull + n;
}

/* ------------------------------------------------------------------ */
/* The machine                                                         */
/* ------------------------------------------------------------------ */

/* The filesystem type and device of the mount that holds PATH. */
static void fsOf(const char *zPath, char *zType, char *zDev, size_t n){
  char zReal[PATH_MAX];
  snprintf(zType, n, "?");
  snprintf(zDev, n, "?");
  if( realpath(zPath, zReal) == 0 ) return;
  FILE *f = fopen("/proc/self/mounts", "r");
  if( f == 0 ) return;
  char zLine[4096];
  size_t best = 0;
  while( fgets(zLine, sizeof zLine, f) ){
    char dev[1024], mnt[1024], type[256];
    if( sscanf(zLine, "%1023s %1023s %255s", dev, mnt, type) != 3 ) continue;
    size_t m = strlen(mnt);
    int under = strncmp(zReal, mnt, m) == 0
             && (zReal[m] == '/' || zReal[m] == 0 || strcmp(mnt, "/") == 0);
    if( under && m >= best ){
      best = m;
      snprintf(zType, n, "%s", type);
      snprintf(zDev, n, "%s", dev);
    }
  }
  fclose(f);
}

static void printMachine(Bench *b){
  struct utsname u;
  uname(&u);
  double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  char zType[1024], zDev[1024];
  fsOf(b->zDir, zType, zDev, sizeof zType);
  printf("pagedb-bench: pagedb %s (header %s)\n", pagedb_libversion(), PAGEDB_VERSION);
  printf("command:");
  for(int i = 0; i < b->argc; i++) printf(" %s", b->argv[i]);
  printf("\n");
  printf("machine: %ld cores, %.1f GiB RAM, %s %s %s\n",
         sysconf(_SC_NPROCESSORS_ONLN), mem / (1u << 30), u.sysname, u.release, u.machine);
  printf("dir: %s (%s on %s)\n", b->zDir, zType, zDev);
  printf("page cache: %s\n", b->cold
         ? "dropped (sync; echo 3 > /proc/sys/vm/drop_caches) before every timed phase (--cold)"
         : "warm: not dropped (files just written are read from memory; --cold to drop)");
  printf("reps: %d (each figure the median); write threads:", b->nReps);
  for(int i = 0; i < b->nThread; i++) printf("%s%d", i ? "," : " ", b->aThread[i]);
  printf("; seed %llu; read order: one seeded permutation for raw and pagedb\n",
         (unsigned long long)b->seed);
  fflush(stdout);
}

/* Drop the page cache if --cold.  Only as root (checked at start). */
static void dropCaches(Bench *b){
  if( !b->cold ) return;
  sync();
  int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
  if( fd < 0 || write(fd, "3\n", 2) != 2 ){
    fail(b, "--cold: cannot write /proc/sys/vm/drop_caches: %s", strerror(errno));
  }
  if( fd >= 0 ) close(fd);
}

/* ------------------------------------------------------------------ */
/* The raw-file reference                                              */
/* ------------------------------------------------------------------ */

static int writeAll(int fd, const uint8_t *p, size_t n, uint64_t off){
  while( n > 0 ){
    ssize_t k = pwrite(fd, p, n, (off_t)off);
    if( k < 0 && errno == EINTR ) continue;
    if( k <= 0 ) return -1;
    p += k; n -= (size_t)k; off += (uint64_t)k;
  }
  return 0;
}

static int readAll(int fd, uint8_t *p, size_t n, uint64_t off){
  while( n > 0 ){
    ssize_t k = pread(fd, p, n, (off_t)off);
    if( k < 0 && errno == EINTR ) continue;
    if( k <= 0 ) return -1;
    p += k; n -= (size_t)k; off += (uint64_t)k;
  }
  return 0;
}

/*
** Write every sample back to back into the raw file: each sample is made
** in place in an 8 MiB buffer, written with pwrite() when the next one does
** not fit; a sample larger than the buffer is made in its own buffer.  One
** fsync at the end.  Returns the seconds taken, or -1.
*/
static double rawWrite(Run *r){
  Bench *b = r->b;
  unlink(r->zRaw);
  dropCaches(b);
  double t0 = now();
  int fd = open(r->zRaw, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if( fd < 0 ){ fail(b, "open %s: %s", r->zRaw, strerror(errno)); return -1; }
  uint8_t *buf = malloc(RAW_BUF), *big = 0;
  size_t used = 0;
  uint64_t off = 0;
  int ok = buf != 0;
  for(int64_t i = 0; ok && i < r->w.count; i++){
    size_t len = (size_t)r->aSize[i];
    if( len > RAW_BUF - used && used > 0 ){
      ok = writeAll(fd, buf, used, off) == 0;
      off += used; used = 0;
    }
    if( !ok ) break;
    if( len > RAW_BUF ){
      if( big == 0 ) big = malloc((size_t)wl_max_size(&r->w));
      if( big == 0 ){ ok = 0; break; }
      wl_fill(&r->w, i, big, len);
      ok = writeAll(fd, big, len, off) == 0;
      off += len;
    }else{
      wl_fill(&r->w, i, buf + used, len);
      used += len;
    }
  }
  if( ok && used ) ok = writeAll(fd, buf, used, off) == 0;
  if( ok ) ok = fsync(fd) == 0;
  if( !ok ) fail(b, "writing %s: %s", r->zRaw, strerror(errno));
  close(fd);
  double t = now() - t0;
  free(buf);
  free(big);
  return ok ? t : -1;
}

/* Read every sample in the random order with pread(); -1 on failure. */
static double rawPread(Run *r){
  Bench *b = r->b;
  dropCaches(b);
  uint8_t *buf = malloc((size_t)wl_max_size(&r->w));
  if( buf == 0 ){ fail(b, "out of memory"); return -1; }
  double t0 = now();
  int fd = open(r->zRaw, O_RDONLY);
  if( fd < 0 ){ fail(b, "open %s: %s", r->zRaw, strerror(errno)); free(buf); return -1; }
  uint64_t h = 0;
  for(int64_t k = 0; k < r->w.count; k++){
    int64_t i = r->aOrder[k];
    if( readAll(fd, buf, (size_t)r->aSize[i], r->aOff[i]) ){
      fail(b, "pread %s sample %lld: %s", r->zRaw, (long long)i, strerror(errno));
      close(fd); free(buf);
      return -1;
    }
    h = mixSum(h, buf, (size_t)r->aSize[i]);
  }
  double t = now() - t0;
  if( !r->haveRawSum ){
    /* The reference itself is checked once against the workload, untimed. */
    for(int64_t i = 0; i < r->w.count; i++){
      if( readAll(fd, buf, (size_t)r->aSize[i], r->aOff[i])
       || wl_check(&r->w, i, buf, (size_t)r->aSize[i]) ){
        fail(b, "raw file %s: sample %lld differs from the workload", r->zRaw, (long long)i);
        break;
      }
    }
    r->rawSum = h;
    r->haveRawSum = 1;
  }else if( h != r->rawSum ){
    fail(b, "raw pread pass: checksum differs between repetitions");
  }
  close(fd);
  free(buf);
  return t;
}

/* Read every sample in place through one mmap() of the raw file. */
static double rawMmap(Run *r){
  Bench *b = r->b;
  dropCaches(b);
  double t0 = now();
  int fd = open(r->zRaw, O_RDONLY);
  if( fd < 0 ){ fail(b, "open %s: %s", r->zRaw, strerror(errno)); return -1; }
  struct stat st;
  if( fstat(fd, &st) || st.st_size == 0 ){ fail(b, "fstat %s", r->zRaw); close(fd); return -1; }
  void *p = mmap(0, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  if( p == MAP_FAILED ){ fail(b, "mmap %s: %s", r->zRaw, strerror(errno)); close(fd); return -1; }
  const uint8_t *base = p;
  uint64_t h = 0;
  for(int64_t k = 0; k < r->w.count; k++){
    int64_t i = r->aOrder[k];
    h = mixSum(h, base + r->aOff[i], (size_t)r->aSize[i]);
  }
  munmap(p, (size_t)st.st_size);
  close(fd);
  double t = now() - t0;
  if( r->haveRawSum && h != r->rawSum ) fail(b, "raw mmap pass: checksum differs from pread's");
  return t;
}

/* ------------------------------------------------------------------ */
/* pagedb                                                              */
/* ------------------------------------------------------------------ */

static void removeDataset(const char *zPath){
  static const char *azSuffix[] = {
    "", "-catalog", "-catalog-wal", "-catalog-shm", "-catalog-journal"
  };
  char z[PATH_MAX + 32];
  for(size_t k = 0; k < sizeof(azSuffix) / sizeof(azSuffix[0]); k++){
    snprintf(z, sizeof z, "%s%s", zPath, azSuffix[k]);
    unlink(z);
  }
}

/* One writing thread: samples t, t+T, t+2T... */
typedef struct WriteJob {
  Run *r;
  pagedb *db;
  int fData, fLabel;            /* field numbers */
  int t, nT;
  int rc;                       /* PAGEDB_OK or the first failure */
  double cpu;                   /* CPU seconds the thread used */
  char zErr[512];               /* what failed */
} WriteJob;

static void *writeThread(void *pArg){
  WriteJob *j = pArg;
  const wl_t *w = &j->r->w;
  pagedb_writer *pw = 0;
  uint8_t *buf = malloc((size_t)wl_max_size(w));
  int rc = buf ? pagedb_writer_open(j->db, &pw) : PAGEDB_NOMEM;
  if( rc ){
    snprintf(j->zErr, sizeof j->zErr, "pagedb_writer_open: %s (%s)",
             pagedb_errname(rc), pagedb_errmsg(j->db));
  }
  for(int64_t i = j->t; rc == PAGEDB_OK && i < w->count; i += j->nT){
    size_t len = (size_t)j->r->aSize[i];
    const char *zCall = "pagedb_sample_begin";
    wl_fill(w, i, buf, len);
    rc = pagedb_sample_begin(pw, i);
    if( rc == PAGEDB_OK ){ zCall = "pagedb_put"; rc = pagedb_put(pw, j->fData, buf, len); }
    if( rc == PAGEDB_OK ){
      zCall = "pagedb_put_int";
      rc = pagedb_put_int(pw, j->fLabel, wl_label(w, i));
    }
    if( rc == PAGEDB_OK ){
      int64_t id = -1;
      zCall = "pagedb_sample_end";
      rc = pagedb_sample_end(pw, &id);
      if( rc == PAGEDB_OK && id != i ){
        snprintf(j->zErr, sizeof j->zErr,
                 "pagedb_sample_end: sample %lld came back as id %lld", (long long)i, (long long)id);
        rc = PAGEDB_ERROR;
        break;
      }
    }
    if( rc ){
      snprintf(j->zErr, sizeof j->zErr, "%s (thread %d, sample %lld, %zu bytes): %s (%s)",
               zCall, j->t, (long long)i, len, pagedb_errname(rc), pagedb_writer_errmsg(pw));
    }
  }
  if( pw ){
    int rc2 = pagedb_writer_close(pw);
    if( rc == PAGEDB_OK && rc2 ){
      rc = rc2;
      snprintf(j->zErr, sizeof j->zErr, "pagedb_writer_close (thread %d): %s (%s)",
               j->t, pagedb_errname(rc2), pagedb_errmsg(j->db));
    }
  }
  free(buf);
  j->rc = rc;
  j->cpu = cpuTime(CLOCK_THREAD_CPUTIME_ID);
  return 0;
}

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

/*
** Write the workload into dataset zPdb[iT] with NT threads.  The data file
** is fsynced from outside before the final pagedb_commit, so that the
** commit's time is (nearly) the catalog's alone.  0 on success.
*/
static int pdbWrite(Run *r, int iT, int nT, WriteTimes *wt){
  Bench *b = r->b;
  const char *zPath = r->zPdb[iT];
  pagedb *db = 0;
  int rc;
  removeDataset(zPath);
  dropCaches(b);
  double c0 = cpuTime(CLOCK_PROCESS_CPUTIME_ID), m0 = cpuTime(CLOCK_THREAD_CPUTIME_ID);
  double t0 = now();
  rc = pagedb_open(zPath, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, 0);
  if( rc ){ failRc(b, "pagedb_open", rc, pagedb_errmsg(db)); pagedb_close(db); return 1; }
  if( b->pageSize ){
    rc = pagedb_set_page_size(db, b->pageSize);
    if( rc ){ failRc(b, "pagedb_set_page_size", rc, pagedb_errmsg(db)); pagedb_close(db); return 1; }
  }
  rc = pagedb_field_add(db, r->w.field, PAGEDB_BYTES, PAGEDB_CODEC_NONE);
  if( rc ){ failRc(b, "pagedb_field_add", rc, pagedb_errmsg(db)); pagedb_close(db); return 1; }
  rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE);
  if( rc ){ failRc(b, "pagedb_field_add label", rc, pagedb_errmsg(db)); pagedb_close(db); return 1; }
  WriteJob aJob[MAX_THREADS];
  pthread_t aTid[MAX_THREADS];
  for(int t = 0; t < nT; t++){
    memset(&aJob[t], 0, sizeof aJob[t]);
    aJob[t].r = r; aJob[t].db = db; aJob[t].t = t; aJob[t].nT = nT;
    aJob[t].fData = pagedb_field_index(db, r->w.field);
    aJob[t].fLabel = pagedb_field_index(db, "label");
    if( pthread_create(&aTid[t], 0, writeThread, &aJob[t]) ){
      fail(b, "pthread_create: %s", strerror(errno));
      nT = t;
      break;
    }
  }
  int bad = 0;
  for(int t = 0; t < nT; t++){
    pthread_join(aTid[t], 0);
    if( aJob[t].rc ){ fail(b, "%s", aJob[t].zErr); bad = 1; }
  }
  double t1 = now();
  int fd = open(pagedb_path(db), O_RDONLY);
  if( fd >= 0 ){ fsync(fd); close(fd); }
  double t2 = now();
  if( !bad ){
    rc = pagedb_commit(db);
    if( rc ){ failRc(b, "pagedb_commit", rc, pagedb_errmsg(db)); bad = 1; }
  }
  double t3 = now();
  if( !bad && pagedb_count(db) != r->w.count ){
    fail(b, "after pagedb_commit: pagedb_count is %lld, expected %lld",
         (long long)pagedb_count(db), (long long)r->w.count);
    bad = 1;
  }
  rc = pagedb_close(db);
  if( rc && !bad ){ failRc(b, "pagedb_close", rc, "(handle freed)"); bad = 1; }
  double t4 = now();
  double c1 = cpuTime(CLOCK_PROCESS_CPUTIME_ID), m1 = cpuTime(CLOCK_THREAD_CPUTIME_ID);
  wt->writerCpu = 0;
  for(int t = 0; t < nT; t++) wt->writerCpu += aJob[t].cpu;
  wt->engineCpu = (c1 - c0) - (m1 - m0) - wt->writerCpu;
  wt->total = t4 - t0;
  wt->sync = t2 - t1;
  wt->commit = t3 - t2;
  wt->close = t4 - t3;
  return bad;
}

static const char *modeName(int mode){
  return mode == PAGEDB_READ_MMAP ? "mmap" : "copy";
}

/* The offset of the first byte of P[0..N) that differs from sample I. */
static size_t firstDiff(const wl_t *w, int64_t i, const uint8_t *p, size_t n){
  uint8_t *e = malloc(n);
  size_t k = 0;
  if( e == 0 ) return 0;
  wl_fill(w, i, e, n);
  while( k < n && e[k] == p[k] ) k++;
  free(e);
  return k;
}

/*
** Check every sample of the dataset against the workload through a reader
** of MODE: every byte (wl_check) and every label.  Untimed; once per mode.
*/
static void pdbVerify(Run *r, pagedb *db, int mode){
  Bench *b = r->b;
  pagedb_reader *rd = 0;
  int fData = pagedb_field_index(db, r->w.field);
  int fLabel = pagedb_field_index(db, "label");
  if( fData < 0 || fLabel < 0 ){
    fail(b, "%s: fields %s/label not found (%d, %d)", pagedb_path(db), r->w.field, fData, fLabel);
    return;
  }
  int rc = pagedb_reader_open(db, mode, &rd);
  if( rc ){ failRc(b, "pagedb_reader_open", rc, pagedb_errmsg(db)); return; }
  int64_t nBad = 0;
  for(int64_t k = 0; k < r->w.count && nBad < 5; k++){
    int64_t i = r->aOrder[k];
    const void *p = 0;
    size_t n = 0;
    int64_t label = -1;
    rc = pagedb_read(rd, i, fData, &p, &n);
    if( rc ){
      fail(b, "verify %s: pagedb_read sample %lld: %s (%s)", modeName(mode), (long long)i,
           pagedb_errname(rc), pagedb_reader_errmsg(rd));
      nBad++;
      continue;
    }
    if( wl_check(&r->w, i, p, n) ){
      if( n != r->aSize[i] ){
        fail(b, "verify %s: sample %lld: %zu bytes read, %llu expected", modeName(mode),
             (long long)i, n, (unsigned long long)r->aSize[i]);
      }else{
        fail(b, "verify %s: sample %lld (%zu bytes): first wrong byte at offset %zu",
             modeName(mode), (long long)i, n, firstDiff(&r->w, i, p, n));
      }
      nBad++;
      continue;
    }
    rc = pagedb_read_int(rd, i, fLabel, &label);
    if( rc || label != wl_label(&r->w, i) ){
      fail(b, "verify %s: sample %lld label: %s, %lld read, %lld expected", modeName(mode),
           (long long)i, pagedb_errname(rc), (long long)label, (long long)wl_label(&r->w, i));
      nBad++;
    }
  }
  /* Ids past the end do not exist. */
  const void *p;
  size_t n;
  rc = pagedb_read(rd, r->w.count, fData, &p, &n);
  if( rc != PAGEDB_NOTFOUND ){
    fail(b, "verify %s: pagedb_read of missing id %lld gave %s, expected PAGEDB_NOTFOUND",
         modeName(mode), (long long)r->w.count, pagedb_errname(rc));
  }
  pagedb_reader_close(rd);
}

/*
** Read every sample in the random order through a reader of MODE, summing
** every byte; the sum must equal the raw pread pass's.  The time covers
** pagedb_reader_open to pagedb_reader_close (as the raw passes cover open,
** mmap, munmap and close), not pagedb_open.
*/
static double pdbRead(Run *r, int mode){
  Bench *b = r->b;
  pagedb *db = 0;
  dropCaches(b);
  int rc = pagedb_open(r->zPdb[r->iRead], &db, PAGEDB_OPEN_READONLY, 0);
  if( rc ){ failRc(b, "pagedb_open (read-only)", rc, pagedb_errmsg(db)); pagedb_close(db); return -1; }
  if( pagedb_count(db) != r->w.count ){
    fail(b, "%s: pagedb_count is %lld, expected %lld", r->zPdb[r->iRead],
         (long long)pagedb_count(db), (long long)r->w.count);
  }
  int f = pagedb_field_index(db, r->w.field);
  double t0 = now();
  pagedb_reader *rd = 0;
  rc = pagedb_reader_open(db, mode, &rd);
  if( rc ){ failRc(b, "pagedb_reader_open", rc, pagedb_errmsg(db)); pagedb_close(db); return -1; }
  uint64_t h = 0;
  for(int64_t k = 0; k < r->w.count; k++){
    int64_t i = r->aOrder[k];
    const void *p;
    size_t n;
    rc = pagedb_read(rd, i, f, &p, &n);
    if( rc ){
      fail(b, "%s read: pagedb_read sample %lld: %s (%s)", modeName(mode), (long long)i,
           pagedb_errname(rc), pagedb_reader_errmsg(rd));
      pagedb_reader_close(rd);
      pagedb_close(db);
      return -1;
    }
    h = mixSum(h, p, n);
  }
  pagedb_reader_close(rd);
  double t = now() - t0;
  if( r->haveRawSum && h != r->rawSum ){
    fail(b, "%s read: the bytes differ from the raw file's (checksum)", modeName(mode));
  }
  if( !r->verified[mode] ){
    pdbVerify(r, db, mode);
    r->verified[mode] = 1;
  }
  rc = pagedb_close(db);
  if( rc ) failRc(b, "pagedb_close (read-only)", rc, "(handle freed)");
  return t;
}

/* Seconds from pagedb_open (read-only) until the first sample is read. */
static double pdbOpen(Run *r){
  Bench *b = r->b;
  pagedb *db = 0;
  pagedb_reader *rd = 0;
  const void *p;
  size_t n;
  dropCaches(b);
  double t0 = now();
  int rc = pagedb_open(r->zPdb[r->iRead], &db, PAGEDB_OPEN_READONLY, 0);
  if( rc ){ failRc(b, "pagedb_open (read-only)", rc, pagedb_errmsg(db)); pagedb_close(db); return -1; }
  rc = pagedb_reader_open(db, PAGEDB_READ_MMAP, &rd);
  if( rc == PAGEDB_OK ){
    rc = pagedb_read(rd, r->aOrder[0], pagedb_field_index(db, r->w.field), &p, &n);
    if( rc ){
      failRc(b, "pagedb_read (first read)", rc, pagedb_reader_errmsg(rd));
    }else if( wl_check(&r->w, r->aOrder[0], p, n) ){
      fail(b, "first read: sample %lld differs", (long long)r->aOrder[0]);
    }
  }else{
    failRc(b, "pagedb_reader_open", rc, pagedb_errmsg(db));
  }
  double t = now() - t0;
  pagedb_reader_close(rd);
  pagedb_close(db);
  return rc ? -1 : t;
}

/* ------------------------------------------------------------------ */
/* One workload                                                        */
/* ------------------------------------------------------------------ */

static const char *passShort(int ok){
  return ok ? "pass" : "SHORT";
}

/* One line of the table: a name, then rates from SECONDS (median). */
static void printLine(const Run *r, const char *zName, double sec, double ref, const char *zRef){
  if( sec <= 0 ){
    printf("  %-34s %10s\n", zName, "failed");
    return;
  }
  printf("  %-34s %9.1f %12.0f %9.3f", zName, (double)r->nByte / sec / 1e6,
         (double)r->w.count / sec, sec);
  if( ref > 0 ) printf("   %6.1f%% of %s", 100.0 * ref / sec, zRef);
  printf("\n");
}

/* Describe W's size distribution. */
static void describe(const wl_t *w, char *z, size_t n){
  if( w->dist == WL_LOGNORMAL ){
    snprintf(z, n, "lognormal median %.0f KiB sigma %.1f in [%llu, %llu]",
             w->median / 1024, w->sigma, (unsigned long long)w->lo, (unsigned long long)w->hi);
  }else{
    snprintf(z, n, "uniform in [%llu, %llu]", (unsigned long long)w->lo,
             (unsigned long long)w->hi);
  }
}

static int runWorkload(Bench *b, const char *zSpec){
  Run run, *r = &run;
  memset(r, 0, sizeof *r);
  r->b = b;
  int rc = wl_parse_seed(zSpec, b->seed, &r->w);
  if( rc ){
    fprintf(stderr, "pagedb-bench: --workload %s: %s\n", zSpec,
            rc == -1 ? "unknown (W-img[:N], W-small[:N], W-big[:N])" : "out of memory");
    return 1;
  }
  int64_t N = r->w.count;
  r->aSize = malloc(sizeof(uint64_t) * (size_t)N);
  r->aOff = malloc(sizeof(uint64_t) * (size_t)N);
  r->aOrder = malloc(sizeof(int64_t) * (size_t)N);
  if( !r->aSize || !r->aOff || !r->aOrder ){
    fprintf(stderr, "pagedb-bench: out of memory for %s\n", zSpec);
    return 1;
  }
  for(int64_t i = 0; i < N; i++){
    r->aSize[i] = wl_size(&r->w, i);
    r->aOff[i] = r->nByte;
    r->nByte += r->aSize[i];
    r->aOrder[i] = i;
  }
  /* Fisher-Yates with a stream of its own: the same order for every pass. */
  uint64_t s = b->seed ^ 0x0bde5ull ^ ((uint64_t)r->w.wid << 40);
  for(int64_t i = N - 1; i > 0; i--){
    int64_t j = (int64_t)(wl_next(&s) % (uint64_t)(i + 1));
    int64_t t = r->aOrder[i]; r->aOrder[i] = r->aOrder[j]; r->aOrder[j] = t;
  }
  snprintf(r->zRaw, sizeof r->zRaw, "%s/raw-%.15s.bin", b->zDir, r->w.name);
  for(int t = 0; t < b->nThread; t++){
    snprintf(r->zPdb[t], sizeof r->zPdb[t], "%s/%.15s-t%d.pagedb", b->zDir,
             r->w.name, b->aThread[t]);
  }
  r->iRead = b->nThread - 1;

  char zDist[128];
  describe(&r->w, zDist, sizeof zDist);
  printf("\n== %s: %lld samples, field %s (%s bytes, %s) + label INT; %.1f MB in all, "
         "mean %.0f bytes\n", r->w.name, (long long)N, r->w.field,
         r->w.poolKind == WL_POOL_TEXT ? "text" : "incompressible", zDist,
         (double)r->nByte / 1e6, (double)r->nByte / (double)N);
  fflush(stdout);

  /* Writes: raw and pagedb alternate within each repetition. */
  Times tRaw = {{0}, 0}, tRawPread = {{0}, 0}, tRawMmap = {{0}, 0};
  Times tW[MAX_THREADS], tSync[MAX_THREADS], tCommit[MAX_THREADS], tClose[MAX_THREADS];
  Times tEng[MAX_THREADS], tWcpu[MAX_THREADS];
  Times tMmap = {{0}, 0}, tCopy = {{0}, 0}, tOpen = {{0}, 0};
  memset(tW, 0, sizeof tW); memset(tSync, 0, sizeof tSync);
  memset(tCommit, 0, sizeof tCommit); memset(tClose, 0, sizeof tClose);
  memset(tEng, 0, sizeof tEng); memset(tWcpu, 0, sizeof tWcpu);
  int nFail0 = b->nFail;
  for(int rep = 0; rep < b->nReps && b->nFail == nFail0; rep++){
    double t = rawWrite(r);
    if( t > 0 ) timesAdd(&tRaw, t);
    for(int k = 0; k < b->nThread; k++){
      WriteTimes wt;
      if( pdbWrite(r, k, b->aThread[k], &wt) == 0 ){
        timesAdd(&tW[k], wt.total);
        timesAdd(&tSync[k], wt.sync);
        timesAdd(&tCommit[k], wt.commit);
        timesAdd(&tClose[k], wt.close);
        timesAdd(&tEng[k], wt.engineCpu);
        timesAdd(&tWcpu[k], wt.writerCpu);
      }
    }
  }
  /* Reads of the raw file and of the dataset written last. */
  for(int rep = 0; rep < b->nReps && b->nFail == nFail0; rep++){
    double t;
    if( (t = rawPread(r)) > 0 ) timesAdd(&tRawPread, t);
    if( (t = rawMmap(r)) > 0 ) timesAdd(&tRawMmap, t);
    if( (t = pdbRead(r, PAGEDB_READ_MMAP)) > 0 ) timesAdd(&tMmap, t);
    if( (t = pdbRead(r, PAGEDB_READ_COPY)) > 0 ) timesAdd(&tCopy, t);
    if( (t = pdbOpen(r)) > 0 ) timesAdd(&tOpen, t);
  }

  double raw = median(&tRaw);
  printf("  %-34s %9s %12s %9s\n", "", "MB/s", "samples/s", "seconds");
  printLine(r, "raw write (8 MiB pwrite, 1 fsync)", raw, 0, 0);
  int bestT = -1;
  double best = -1;
  for(int k = 0; k < b->nThread; k++){
    char z[64];
    snprintf(z, sizeof z, "pagedb write, %d thread%s", b->aThread[k], b->aThread[k] > 1 ? "s" : "");
    double t = median(&tW[k]);
    printLine(r, z, t, raw, "raw");
    if( t > 0 ){
      double c = median(&tCommit[k]);
      double e = median(&tEng[k]);
      printf("      final pagedb_commit %.3f s = %.1f%% of the ingest (the data file was fsynced\n"
             "      from outside just before it: %.3f s); pagedb_close %.3f s\n",
             c, 100.0 * c / t, median(&tSync[k]), median(&tClose[k]));
      printf("      CPU: writer threads %.3f s; the engine's own threads (catalog) %.3f s"
             " = %.1f%% of the ingest time\n", median(&tWcpu[k]), e, 100.0 * e / t);
      if( best < 0 || t < best ){ best = t; bestT = k; }
    }
  }
  double rp = median(&tRawPread), rm = median(&tRawMmap);
  double pm = median(&tMmap), pc = median(&tCopy), po = median(&tOpen);
  printf("  random-order reads of every sample (the dataset written with %d thread%s):\n",
         b->aThread[r->iRead], b->aThread[r->iRead] > 1 ? "s" : "");
  printLine(r, "raw read, pread into a buffer", rp, 0, 0);
  printLine(r, "raw read, mmap in place", rm, 0, 0);
  printLine(r, "pagedb read, PAGEDB_READ_MMAP", pm, rm, "raw mmap");
  printLine(r, "pagedb read, PAGEDB_READ_COPY", pc, rp, "raw pread");
  if( po > 0 ){
    printf("  %-34s %.4f s\n", "pagedb_open read-only to 1st read", po);
  }else{
    printf("  %-34s failed\n", "pagedb_open read-only to 1st read");
  }

  /* The targets. */
  printf("  targets:\n");
  int isImg = r->w.wid == 1, isSmall = r->w.wid == 2;
  if( isImg && best > 0 && raw > 0 ){
    double q = 100.0 * raw / best;
    printf("    write >= 85%% of raw                 %6.1f%% (%d thread%s)  %s\n", q,
           b->aThread[bestT], b->aThread[bestT] > 1 ? "s" : "", passShort(q >= 85.0));
  }
  if( isSmall && best > 0 && raw > 0 ){
    double q = 100.0 * raw / best;
    printf("    ingest samples/s >= 85%% of raw      %6.1f%% (%d thread%s)  %s\n", q,
           b->aThread[bestT], b->aThread[bestT] > 1 ? "s" : "", passShort(q >= 85.0));
  }
  if( isImg && pm > 0 && rm > 0 ){
    double q = 100.0 * rm / pm;
    printf("    zero-copy read >= 90%% of raw mmap   %6.1f%%              %s\n", q,
           passShort(q >= 90.0));
  }
  if( pc > 0 && rp > 0 ){
    double q = 100.0 * rp / pc;
    printf("    copy read >= 90%% of raw pread       %6.1f%%              %s\n", q,
           passShort(q >= 90.0));
  }
  if( isSmall && po > 0 ){
    printf("    open ready for reads < 0.5 s        %7.4f s            %s\n", po,
           passShort(po < 0.5));
  }
  if( b->nFail != nFail0 ) printf("  FAILED: see the messages on stderr\n");
  fflush(stdout);

  if( !b->keep ){
    unlink(r->zRaw);
    for(int t = 0; t < b->nThread; t++) removeDataset(r->zPdb[t]);
  }
  free(r->aSize); free(r->aOff); free(r->aOrder);
  wl_free(&r->w);
  return b->nFail != nFail0;
}

/* ------------------------------------------------------------------ */
/* --pool-ratio                                                        */
/* ------------------------------------------------------------------ */

/*
** liblz4 is looked up at run time, so that the benchmark links with the
** library alone (Makefile.am gives it libpagedb.la and -lm).
*/
typedef int (*lz4Bound)(int);
typedef int (*lz4Fast)(const char *, char *, int, int);
typedef int (*lz4Hc)(const char *, char *, int, int, int);

static int poolRatio(Bench *b){
  void *h = dlopen("liblz4.so.1", RTLD_NOW);
  if( h == 0 ) h = dlopen("liblz4.so", RTLD_NOW);
  if( h == 0 ){
    fprintf(stderr, "pagedb-bench: --pool-ratio needs liblz4: %s\n", dlerror());
    return 1;
  }
  lz4Bound xBound = (lz4Bound)dlsym(h, "LZ4_compressBound");
  lz4Fast xFast = (lz4Fast)dlsym(h, "LZ4_compress_default");
  lz4Hc xHc = (lz4Hc)dlsym(h, "LZ4_compress_HC");
  const char *(*xVersion)(void) = (const char *(*)(void))dlsym(h, "LZ4_versionString");
  if( !xBound || !xFast || !xHc ){
    fprintf(stderr, "pagedb-bench: --pool-ratio: liblz4 lacks LZ4_compress_HC\n");
    return 1;
  }
  printf("lz4 %s; LZ4_compress_default and LZ4_compress_HC level 9\n",
         xVersion ? xVersion() : "?");
  int nBad = 0;
  for(int k = 0; k < b->nSpec; k++){
    wl_t w;
    if( wl_parse_seed(b->azSpec[k], b->seed, &w) ){
      fprintf(stderr, "pagedb-bench: --workload %s: unknown\n", b->azSpec[k]);
      nBad++;
      continue;
    }
    int cap = xBound((int)WL_POOL_SIZE);
    char *out = malloc((size_t)cap);
    uint8_t *buf = malloc((size_t)wl_max_size(&w));
    if( !out || !buf ){ fprintf(stderr, "pagedb-bench: out of memory\n"); return 1; }
    int nF = xFast((const char *)w.pool, out, (int)WL_POOL_SIZE, cap);
    int nH = xHc((const char *)w.pool, out, (int)WL_POOL_SIZE, cap, 9);
    printf("%-8s pool (8 MiB):        fast %.3fx   hc9 %.3fx\n", w.name,
           (double)WL_POOL_SIZE / nF, (double)WL_POOL_SIZE / nH);
    /* Each sample compressed on its own, as a per-sample codec would. */
    double in = 0, oF = 0, oH = 0;
    int64_t n = w.count < 2000 ? w.count : 2000;
    for(int64_t i = 0; i < n; i++){
      size_t len = (size_t)wl_size(&w, i);
      if( len > (size_t)INT32_MAX / 2 ) continue;
      int c = xBound((int)len);
      if( c > cap ){ free(out); out = malloc((size_t)c); cap = c; if( !out ) return 1; }
      wl_fill(&w, i, buf, len);
      in += (double)len;
      oF += xFast((const char *)buf, out, (int)len, cap);
      oH += xHc((const char *)buf, out, (int)len, cap, 9);
    }
    printf("%-8s samples 0..%lld alone: fast %.3fx   hc9 %.3fx\n", w.name, (long long)n - 1,
           in / oF, in / oH);
    free(out); free(buf);
    wl_free(&w);
  }
  dlclose(h);
  return nBad ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static const char zUsage[] =
  "usage: pagedb-bench [OPTIONS]\n"
  "  --workload W[:N]  W-img, W-small or W-big, N samples (repeatable;\n"
  "                    default W-img and W-small at their full sizes)\n"
  "  --quick           W-img:500 and W-small:20000, 1 rep: a smoke test\n"
  "  --dir DIR         where the files go (default a new /tmp/pagedb-bench.*,\n"
  "                    removed afterwards; our files in DIR are removed too)\n"
  "  --keep            leave the files\n"
  "  --reps N          median of N runs (default 3, 1 with --quick)\n"
  "  --threads LIST    writer threads to measure, e.g. 1,2 (the default)\n"
  "  --page-size N     page size of the datasets (default the engine's)\n"
  "  --seed N          workload seed (default 42)\n"
  "  --cold            drop the page cache before every timed phase (root)\n"
  "  --pool-ratio      print how much lz4 shrinks the workloads' pools, and exit\n"
  "  --help\n"
  "Exit status: 0, or 1 if any call failed or any byte read back was wrong.\n";

static int parseThreads(Bench *b, const char *z){
  b->nThread = 0;
  while( *z ){
    char *end;
    long v = strtol(z, &end, 10);
    if( end == z || v < 1 || v > 64 || b->nThread >= MAX_THREADS ) return -1;
    b->aThread[b->nThread++] = (int)v;
    z = end;
    if( *z == ',' ) z++;
    else if( *z ) return -1;
  }
  return b->nThread ? 0 : -1;
}

static int removeTree(const char *zDir){
  return rmdir(zDir);
}

int main(int argc, char **argv){
  static Bench bench;
  Bench *b = &bench;
  const char *zDirOpt = 0;
  b->argc = argc; b->argv = argv;
  b->seed = WL_DEFAULT_SEED;
  b->aThread[0] = 1; b->aThread[1] = 2; b->nThread = 2;
  for(int i = 1; i < argc; i++){
    const char *z = argv[i];
    const char *zArg = i + 1 < argc ? argv[i + 1] : 0;
    if( z[0] == '-' && z[1] == '-' ) z++;
    if( strcmp(z, "-help") == 0 || strcmp(z, "-h") == 0 ){
      fputs(zUsage, stdout);
      return 0;
    }else if( strcmp(z, "-quick") == 0 ){
      b->quick = 1;
    }else if( strcmp(z, "-cold") == 0 ){
      b->cold = 1;
    }else if( strcmp(z, "-keep") == 0 ){
      b->keep = 1;
    }else if( strcmp(z, "-pool-ratio") == 0 ){
      b->poolRatio = 1;
    }else if( zArg == 0 && (strcmp(z, "-workload") == 0 || strcmp(z, "-dir") == 0
              || strcmp(z, "-reps") == 0 || strcmp(z, "-threads") == 0
              || strcmp(z, "-seed") == 0 || strcmp(z, "-page-size") == 0) ){
      fprintf(stderr, "pagedb-bench: %s needs an argument\n%s", argv[i], zUsage);
      return 2;
    }else if( strcmp(z, "-workload") == 0 ){
      wl_t w;
      if( wl_parse_seed(zArg, 0, &w) ){
        fprintf(stderr, "pagedb-bench: --workload %s: not W-img, W-small or W-big[:N]\n", zArg);
        return 2;
      }
      wl_free(&w);
      if( b->nSpec >= MAX_WL ){
        fprintf(stderr, "pagedb-bench: --workload %s: at most %d workloads\n", zArg, MAX_WL);
        return 2;
      }
      b->azSpec[b->nSpec++] = argv[++i];
    }else if( strcmp(z, "-dir") == 0 ){
      zDirOpt = argv[++i];
    }else if( strcmp(z, "-reps") == 0 ){
      char *end;
      long v = strtol(zArg, &end, 10);
      if( *end || v < 1 || v > MAX_REPS ){
        fprintf(stderr, "pagedb-bench: --reps %s: not a number from 1 to %d\n", zArg, MAX_REPS);
        return 2;
      }
      b->nReps = (int)v;
      i++;
    }else if( strcmp(z, "-threads") == 0 ){
      if( parseThreads(b, zArg) ){
        fprintf(stderr, "pagedb-bench: --threads %s: not a list like 1,2 (1 to 64, at most %d)\n",
                zArg, MAX_THREADS);
        return 2;
      }
      i++;
    }else if( strcmp(z, "-seed") == 0 ){
      char *end;
      b->seed = strtoull(zArg, &end, 0);
      if( *end || end == zArg ){
        fprintf(stderr, "pagedb-bench: --seed %s: not a number\n", zArg);
        return 2;
      }
      i++;
    }else if( strcmp(z, "-page-size") == 0 ){
      char *end;
      unsigned long long v = strtoull(zArg, &end, 0);
      if( *end == 'k' || *end == 'K' ){ v <<= 10; end++; }
      else if( *end == 'm' || *end == 'M' ){ v <<= 20; end++; }
      if( *end || v == 0 ){
        fprintf(stderr, "pagedb-bench: --page-size %s: not a size (e.g. 8M)\n", zArg);
        return 2;
      }
      b->pageSize = (size_t)v;
      i++;
    }else{
      fprintf(stderr, "pagedb-bench: unknown option %s\n%s", argv[i], zUsage);
      return 2;
    }
  }
  if( b->nSpec == 0 ){
    b->azSpec[0] = b->quick ? "W-img:500" : "W-img";
    b->azSpec[1] = b->quick ? "W-small:20000" : "W-small";
    b->nSpec = b->poolRatio ? 1 : 2;
    if( b->poolRatio ) b->azSpec[0] = "W-small";
  }
  if( b->nReps == 0 ) b->nReps = b->quick ? 1 : 3;
  if( b->poolRatio ) return poolRatio(b);
  if( b->cold && geteuid() != 0 ){
    fprintf(stderr, "pagedb-bench: --cold drops the page cache, which needs root\n");
    return 2;
  }

  if( zDirOpt ){
    struct stat st;
    if( stat(zDirOpt, &st) ){
      if( mkdir(zDirOpt, 0755) ){
        fprintf(stderr, "pagedb-bench: --dir %s: %s\n", zDirOpt, strerror(errno));
        return 2;
      }
      b->dirOwned = 1;
    }else if( !S_ISDIR(st.st_mode) ){
      fprintf(stderr, "pagedb-bench: --dir %s: not a directory\n", zDirOpt);
      return 2;
    }
    snprintf(b->zDir, sizeof b->zDir, "%s", zDirOpt);
  }else{
    snprintf(b->zDir, sizeof b->zDir, "/tmp/pagedb-bench.XXXXXX");
    if( mkdtemp(b->zDir) == 0 ){
      fprintf(stderr, "pagedb-bench: mkdtemp %s: %s\n", b->zDir, strerror(errno));
      return 2;
    }
    b->dirOwned = 1;
  }

  printMachine(b);
  int bad = 0;
  for(int k = 0; k < b->nSpec; k++) bad |= runWorkload(b, b->azSpec[k]);
  if( b->dirOwned && !b->keep && removeTree(b->zDir) ){
    fprintf(stderr, "pagedb-bench: could not remove %s: %s\n", b->zDir, strerror(errno));
  }
  printf("\n%s\n", b->nFail || bad ? "pagedb-bench: FAILED (correctness; see stderr)"
                                   : "pagedb-bench: all bytes checked, no errors");
  return b->nFail || bad ? 1 : 0;
}
