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
**
** Batched reads.  Each read mode also gets a row that reads every sample in
** the same order with pagedb_read_batch, --batch ids at a time, checksummed
** the same way, with its ratio to the single-read row ("batch vs single").
** Another reads them one at a time with pagedb_read after handing the whole
** order to pagedb_reader_prefetch (--window bytes of read-ahead), so that
** the reader can read ahead of the caller ("prefetch vs single"); its bytes
** are checked against the workload through the same read-ahead path.
**
** VFSes.  --vfs posix,io_uring,direct runs every pagedb row under each VFS
** named (given to pagedb_open), labelled with it; a VFS that does not work
** here (pagedb_vfs_check, or its first pagedb_open) is reported and skipped.
**
** Uncached references.  With --cold, or when a VFS is "direct" (whose reads
** bypass the page cache whatever the cache holds), the raw file is also read
** with O_DIRECT: one pread() at a time, and through io_uring with 32 reads in
** flight, each read the 4 KiB-aligned superset of the sample's extent.  The
** direct VFS's batched copy reads are compared with the latter (target 80%).
** The same bytes are also written into a second raw file opened with
** O_DIRECT, in 8 MiB writes from a 4 KiB-aligned buffer, then one fsync:
** the direct VFS's writes bypass the page cache too, so its ingest targets
** (85%, W-img with 2 threads and W-small) are against this reference, not
** the buffered one, whose writes only copy into the page cache and leave
** the disk to the kernel's write-back and the final fsync.  A file system
** that refuses O_DIRECT skips that row, which is not a failure.
** fio, when it is installed, gives the outside reference: 64 KiB random
** reads of the same raw file with O_DIRECT through io_uring at depth 32, the
** file read once (target on W-img, whose samples are about 64 KiB: the
** direct VFS's batched copy reads >= 70% of fio's rate, read.bw_bytes of
** its JSON report).  Without fio the row is skipped, which is not a
** failure, and so is a fio that fails here (it is not pagedb).
** In a warm run the direct VFS's data file is evicted from the page cache
** (POSIX_FADV_DONTNEED) before each of its read passes, so that all its rows,
** the zero-copy ones included, are uncached as its copies are.
**
** io_uring against posix.  When --vfs names both, their writes are compared
** thread count by thread count: io_uring's write path must not be slower
** (target >= 100% of posix's).
*/
#define _GNU_SOURCE
#include "config.h"
#include "pagedb.h"
#include "workload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#if PAGEDB_HAVE_URING
#include <liburing.h>
#endif
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WL       8
#define MAX_THREADS 16
#define MAX_REPS    99
#define RAW_BUF     (8u << 20)    /* the reference's write buffer */
#define MAX_VFS      4
#define RAW_DEPTH   32            /* the O_DIRECT io_uring reference's queue depth */
#define DIO_ALIGN   4096u         /* O_DIRECT alignment of the raw references */
#define DEFAULT_BATCH 32
#define DEFAULT_WINDOW (8u << 20) /* read-ahead of the prefetch rows */
#define FIO_BS      (64u << 10)   /* the block size of the fio reference */

/*
** fio's options for the reference, besides the file and its size: 64 KiB
** random reads with O_DIRECT through io_uring at depth 32, each block once
** (fio's random map), never writing.  --runtime only bounds a slow disk.
** --invalidate=0: fio would otherwise drop the raw file from the page cache,
** and the warm raw passes of the next repetition would read it cold.
*/
static const char *const azFioOpt[] = {
  "--name=randread", "--readonly", "--rw=randread", "--bs=64k", "--direct=1",
  "--ioengine=io_uring", "--iodepth=32", "--invalidate=0", "--runtime=120",
  "--output-format=json"
};
#define N_FIO_OPT (int)(sizeof(azFioOpt) / sizeof(azFioOpt[0]))

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
  const char *azVfs[MAX_VFS];   /* --vfs (none: the default VFS, unlabelled) */
  int nVfs;
  int vfsSkip[MAX_VFS];         /* 1: that VFS does not work here */
  char azWhy[MAX_VFS][512];     /* why */
  int nBatch;                   /* --batch: ids per pagedb_read_batch */
  size_t window;                /* --window: read-ahead bytes of the prefetch rows */
  char zFio[PATH_MAX];          /* fio found on PATH; "" if it is not installed */
  int directRef;                /* read the raw file with O_DIRECT too */
  int labelW;                   /* width of the row names */
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
} Run;

/* The name given to pagedb_open: NULL (the default) unless --vfs. */
static const char *vfsArg(const Run *r){
  return r->b->nVfs ? r->b->azVfs[r->iVfs] : 0;
}

/* The name of the VFS in hand, the default's included. */
static const char *vfsName(const Run *r){
  if( r->b->nVfs ) return r->b->azVfs[r->iVfs];
  pagedb_vfs *v = pagedb_vfs_find(0);
  return v && v->zName ? v->zName : "?";
}

static int vfsIsDirect(const Run *r){
  return strcmp(vfsName(r), "direct") == 0;
}

/* "pagedb REST", or "pagedb[VFS] REST" under --vfs. */
static const char *pdbLabel(const Run *r, char *z, size_t n, const char *zRest){
  if( r->b->nVfs ) snprintf(z, n, "pagedb[%s] %s", r->b->azVfs[r->iVfs], zRest);
  else snprintf(z, n, "pagedb %s", zRest);
  return z;
}

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
  if( b->nVfs ){
    printf("vfs:");
    for(int v = 0; v < b->nVfs; v++){
      printf("%s%s%s", v ? "," : " ", b->azVfs[v], b->vfsSkip[v] ? " (skipped)" : "");
    }
    printf(" (each pagedb row is labelled pagedb[VFS])\n");
    for(int v = 0; v < b->nVfs; v++){
      if( b->vfsSkip[v] ) printf("vfs %s: skipped: %s\n", b->azVfs[v], b->azWhy[v]);
    }
  }
  if( b->directRef ){
    printf("O_DIRECT references: the raw file read as 4 KiB-aligned supersets of each sample,\n"
           "  one pread at a time and through io_uring with %d in flight%s;\n"
           "  and written to a new file opened with O_DIRECT: 8 MiB pwrites from a 4 KiB-aligned\n"
           "  buffer (the last padded to 4 KiB, then ftruncate to the size), 1 fsync\n", RAW_DEPTH,
           b->cold ? "" : "; the direct VFS's data file is evicted (fadvise) before its reads");
    if( b->zFio[0] ){
      printf("fio reference: %s", b->zFio);
      for(int k = 0; k < N_FIO_OPT; k++) printf(" %s", azFioOpt[k]);
      printf("\n  --filename=RAW --size=S --io_size=S (S: the raw file's whole 64 KiB blocks);"
             " rate: read.bw_bytes of its JSON\n");
    }else{
      printf("fio reference: skipped: fio is not installed (not on PATH; not a failure)\n");
    }
  }
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
** Write every sample back to back into FD: each sample is made in place in
** the 8 MiB buffer BUF, written with pwrite() when the next one does not
** fit; a sample larger than the buffer is made in its own buffer, *pBig.
** 0 on success.
*/
static int rawFillBuffered(Run *r, int fd, uint8_t *buf, uint8_t **pBig){
  size_t used = 0;
  uint64_t off = 0;
  for(int64_t i = 0; i < r->w.count; i++){
    size_t len = (size_t)r->aSize[i];
    if( len > RAW_BUF - used && used > 0 ){
      if( writeAll(fd, buf, used, off) ) return -1;
      off += used; used = 0;
    }
    if( len > RAW_BUF ){
      if( *pBig == 0 ) *pBig = malloc((size_t)wl_max_size(&r->w));
      if( *pBig == 0 ) return -1;
      wl_fill(&r->w, i, *pBig, len);
      if( writeAll(fd, *pBig, len, off) ) return -1;
      off += len;
    }else{
      wl_fill(&r->w, i, buf + used, len);
      used += len;
    }
  }
  return used ? writeAll(fd, buf, used, off) : 0;
}

/*
** The O_DIRECT raw write.  Its samples are made in place as the buffered
** one makes them (the same generator cost), but O_DIRECT needs the length
** and offset of every write 4 KiB-aligned, so the file goes out in whole
** 8 MiB pieces: the buffer has room past its 8 MiB for the sample that
** crosses the end, and after each write what crossed (less than one sample)
** moves to the front.  The last piece is padded with zeros to 4 KiB and the
** file then cut back to its exact size, the buffered file's.
*/
static size_t rawDirectCap(const Run *r){
  return RAW_BUF + (((size_t)wl_max_size(&r->w) + DIO_ALIGN - 1) & ~(size_t)(DIO_ALIGN - 1));
}

static int rawFillDirect(Run *r, int fd, uint8_t *buf){
  size_t used = 0;
  uint64_t off = 0;
  for(int64_t i = 0; i < r->w.count; i++){
    size_t len = (size_t)r->aSize[i];
    wl_fill(&r->w, i, buf + used, len);
    used += len;
    if( used < RAW_BUF ) continue;
    size_t done = 0;
    for(; used - done >= RAW_BUF; done += RAW_BUF, off += RAW_BUF){
      if( writeAll(fd, buf + done, RAW_BUF, off) ) return -1;
    }
    memmove(buf, buf + done, used - done);
    used -= done;
  }
  if( used ){
    size_t pad = (used + DIO_ALIGN - 1) & ~(size_t)(DIO_ALIGN - 1);
    memset(buf + used, 0, pad - used);
    if( writeAll(fd, buf, pad, off) ) return -1;
  }
  return ftruncate(fd, (off_t)r->nByte);
}

/*
** Check every sample of the raw file FD (zPath) against the workload,
** untimed, into BUF (room for the largest sample).  0 if all match.
*/
static int rawCheck(Run *r, int fd, const char *zPath, uint8_t *buf){
  for(int64_t i = 0; i < r->w.count; i++){
    if( readAll(fd, buf, (size_t)r->aSize[i], r->aOff[i])
     || wl_check(&r->w, i, buf, (size_t)r->aSize[i]) ){
      fail(r->b, "raw file %s: sample %lld differs from the workload", zPath, (long long)i);
      return 1;
    }
  }
  return 0;
}

/*
** Write the raw file, buffered (r->zRaw) or with O_DIRECT (r->zRawDio), and
** fsync it once at the end.  Returns the seconds taken, or -1: a failure, or
** for O_DIRECT a file system that refuses it (r->zDioWhy says so; that is
** not a failure).  The O_DIRECT file is read back once, untimed, and checked
** against the workload (the buffered one is, by rawPread), so that a write
** that put the wrong bytes down cannot look fast.
*/
static double rawWriteFile(Run *r, int direct){
  Bench *b = r->b;
  const char *zPath = direct ? r->zRawDio : r->zRaw;
  unlink(zPath);
  dropCaches(b);
  double t0 = now();
  int fd = open(zPath, O_WRONLY | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0), 0644);
  if( fd < 0 && direct && errno == EINVAL ){
    snprintf(r->zDioWhy, sizeof r->zDioWhy, "the file system refuses O_DIRECT (open: %s)",
             strerror(errno));
    unlink(zPath);      /* open may have made it before refusing O_DIRECT */
    return -1;
  }
  if( fd < 0 ){ fail(b, "open %s: %s", zPath, strerror(errno)); return -1; }
  uint8_t *buf = aligned_alloc(DIO_ALIGN, direct ? rawDirectCap(r) : RAW_BUF), *big = 0;
  int ok = buf != 0;
  if( ok ) ok = (direct ? rawFillDirect(r, fd, buf) : rawFillBuffered(r, fd, buf, &big)) == 0;
  if( ok ) ok = fsync(fd) == 0;
  if( !ok ) fail(b, "writing %s: %s", zPath, strerror(errno));
  close(fd);
  double t = now() - t0;
  if( ok && direct && !r->dioChecked ){
    fd = open(zPath, O_RDONLY);
    struct stat st;
    if( fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size != r->nByte ){
      fail(b, "raw file %s: not %llu bytes long", zPath, (unsigned long long)r->nByte);
      ok = 0;
    }else{
      ok = rawCheck(r, fd, zPath, buf) == 0;
      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);   /* the check's pages are not the run's */
    }
    if( fd >= 0 ) close(fd);
    r->dioChecked = 1;
  }
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
    rawCheck(r, fd, r->zRaw, buf);
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

/*
** The O_DIRECT references.  Each sample is read as the 4 KiB-aligned
** superset of its extent into a 4 KiB-aligned buffer; only the sample's own
** bytes are summed.  A read that ends short (the file's last block is not a
** multiple of 4 KiB long, or the kernel stopped early) is fine if it holds
** the sample; otherwise the rest comes from a buffered descriptor.
*/
static void dioRange(const Run *r, int64_t i, uint64_t *a0, uint64_t *a1){
  uint64_t off = r->aOff[i], end = off + r->aSize[i];
  *a0 = off & ~(uint64_t)(DIO_ALIGN - 1);
  *a1 = (end + DIO_ALIGN - 1) & ~(uint64_t)(DIO_ALIGN - 1);
}

/* The largest aligned superset any sample needs. */
static size_t dioCap(const Run *r){
  return ((size_t)wl_max_size(&r->w) + 2 * DIO_ALIGN - 1) & ~(size_t)(DIO_ALIGN - 1);
}

/* Finish sample I of which GOT bytes of its aligned range arrived in BUF. */
static int dioFinish(const Run *r, int fdBuf, int64_t i, uint8_t *buf, size_t got){
  uint64_t a0, a1;
  dioRange(r, i, &a0, &a1);
  uint64_t need = r->aOff[i] + r->aSize[i] - a0;
  if( got >= need ) return 0;
  return readAll(fdBuf, buf + got, (size_t)(need - got), a0 + got);
}

/* Read every sample in the random order with O_DIRECT pread(), one at a time. */
static double rawDirectPread(Run *r){
  Bench *b = r->b;
  dropCaches(b);
  uint8_t *buf = aligned_alloc(DIO_ALIGN, dioCap(r));
  if( buf == 0 ){ fail(b, "out of memory"); return -1; }
  double t0 = now();
  int fd = open(r->zRaw, O_RDONLY | O_DIRECT);
  int fdBuf = open(r->zRaw, O_RDONLY);
  if( fd < 0 || fdBuf < 0 ){
    fail(b, "open %s (O_DIRECT): %s", r->zRaw, strerror(errno));
    if( fd >= 0 ) close(fd);
    if( fdBuf >= 0 ) close(fdBuf);
    free(buf);
    return -1;
  }
  uint64_t h = 0;
  int bad = 0;
  for(int64_t k = 0; k < r->w.count && !bad; k++){
    int64_t i = r->aOrder[k];
    uint64_t a0, a1;
    dioRange(r, i, &a0, &a1);
    size_t got = 0, want = (size_t)(a1 - a0);
    while( got < want ){
      ssize_t n = pread(fd, buf + got, want - got, (off_t)(a0 + got));
      if( n < 0 && errno == EINTR ) continue;
      if( n < 0 ){
        fail(b, "O_DIRECT pread %s sample %lld: %s", r->zRaw, (long long)i, strerror(errno));
        bad = 1;
      }
      if( n <= 0 ) break;
      got += (size_t)n;
      if( got % DIO_ALIGN ) break;    /* the end of the file */
    }
    if( !bad && dioFinish(r, fdBuf, i, buf, got) ){
      fail(b, "pread %s sample %lld: %s", r->zRaw, (long long)i, strerror(errno));
      bad = 1;
    }
    if( !bad ) h = mixSum(h, buf + (r->aOff[i] - a0), (size_t)r->aSize[i]);
  }
  close(fd);
  close(fdBuf);
  double t = now() - t0;
  free(buf);
  if( bad ) return -1;
  if( r->haveRawSum && h != r->rawSum ) fail(b, "raw O_DIRECT pread pass: checksum differs from pread's");
  return t;
}

#if PAGEDB_HAVE_URING
/*
** Read every sample in the random order with O_DIRECT through io_uring,
** RAW_DEPTH reads always in flight: 2 x RAW_DEPTH buffers, so that reads
** that complete out of order wait for their turn to be summed (in order,
** as every pass) without holding back the queue.
*/
static double rawDirectUring(Run *r){
  Bench *b = r->b;
  enum { NSLOT = 2 * RAW_DEPTH };
  dropCaches(b);
  size_t cap = dioCap(r);
  uint8_t *mem = aligned_alloc(DIO_ALIGN, cap * NSLOT);
  if( mem == 0 ){ fail(b, "out of memory"); return -1; }
  struct io_uring ring;
  int e = io_uring_queue_init(RAW_DEPTH, &ring, 0);
  if( e < 0 ){
    fail(b, "io_uring_queue_init: %s", strerror(-e));
    free(mem);
    return -1;
  }
  double t0 = now();
  int fd = open(r->zRaw, O_RDONLY | O_DIRECT);
  int fdBuf = open(r->zRaw, O_RDONLY);
  if( fd < 0 || fdBuf < 0 ){
    fail(b, "open %s (O_DIRECT): %s", r->zRaw, strerror(errno));
    if( fd >= 0 ) close(fd);
    if( fdBuf >= 0 ) close(fdBuf);
    io_uring_queue_exit(&ring);
    free(mem);
    return -1;
  }
  int aRes[NSLOT];
  char aDone[NSLOT];
  memset(aDone, 0, sizeof aDone);
  int64_t N = r->w.count, next = 0, head = 0;
  int inFlight = 0, bad = 0;
  uint64_t h = 0;
  while( head < N && !bad ){
    int nNew = 0;
    while( next < N && inFlight < RAW_DEPTH && next - head < NSLOT ){
      int64_t i = r->aOrder[next];
      uint64_t a0, a1;
      dioRange(r, i, &a0, &a1);
      struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
      if( sqe == 0 ) break;
      io_uring_prep_read(sqe, fd, mem + cap * (size_t)(next % NSLOT), (unsigned)(a1 - a0), a0);
      io_uring_sqe_set_data64(sqe, (uint64_t)next);
      next++; inFlight++; nNew++;
    }
    if( nNew ){
      e = io_uring_submit(&ring);
      if( e < 0 ){ fail(b, "io_uring_submit: %s", strerror(-e)); bad = 1; break; }
    }
    /* Reap what has completed; block only if the head is not among it. */
    while( !aDone[head % NSLOT] ){
      struct io_uring_cqe *cqe;
      e = io_uring_wait_cqe(&ring, &cqe);
      if( e == -EINTR ) continue;
      if( e < 0 ){ fail(b, "io_uring_wait_cqe: %s", strerror(-e)); bad = 1; break; }
      do{
        int64_t k = (int64_t)io_uring_cqe_get_data64(cqe);
        aRes[k % NSLOT] = cqe->res;
        aDone[k % NSLOT] = 1;
        inFlight--;
        io_uring_cqe_seen(&ring, cqe);
      }while( io_uring_peek_cqe(&ring, &cqe) == 0 );
    }
    /* Sum every completed read at the head, in order. */
    while( !bad && head < next && aDone[head % NSLOT] ){
      int s = (int)(head % NSLOT);
      int64_t i = r->aOrder[head];
      uint64_t a0, a1;
      dioRange(r, i, &a0, &a1);
      uint8_t *buf = mem + cap * (size_t)s;
      if( aRes[s] < 0 ){
        fail(b, "io_uring O_DIRECT read %s sample %lld: %s", r->zRaw, (long long)i, strerror(-aRes[s]));
        bad = 1;
      }else if( dioFinish(r, fdBuf, i, buf, (size_t)aRes[s]) ){
        fail(b, "pread %s sample %lld: %s", r->zRaw, (long long)i, strerror(errno));
        bad = 1;
      }else{
        h = mixSum(h, buf + (r->aOff[i] - a0), (size_t)r->aSize[i]);
      }
      aDone[s] = 0;
      head++;
    }
  }
  /* Tearing the ring down waits for anything still in flight. */
  io_uring_queue_exit(&ring);
  close(fd);
  close(fdBuf);
  double t = now() - t0;
  free(mem);
  if( bad ) return -1;
  if( r->haveRawSum && h != r->rawSum ) fail(b, "raw O_DIRECT io_uring pass: checksum differs from pread's");
  return t;
}
#else
/* Built without liburing: the reference is not measured (0), and its row
** says so. */
static double rawDirectUring(Run *r){
  (void)r;
  return 0;
}
#endif

/*
** A JSON reader just large enough for fio's report, so that the tool needs
** no JSON library: each function takes a pointer to a value (white space
** before it allowed) and returns NULL when the text is not what it expects.
** Keys are compared as written, escapes and all; fio's have none.
*/
static const char *jsonWs(const char *p){
  while( *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' ) p++;
  return p;
}

/* Just past the value at P. */
static const char *jsonSkip(const char *p){
  p = jsonWs(p);
  if( *p == '"' ){
    for(p++; *p && *p != '"'; p++){
      if( *p == '\\' && p[1] ) p++;
    }
    return *p ? p + 1 : 0;
  }
  if( *p == '{' || *p == '[' ){
    char cEnd = *p == '{' ? '}' : ']';
    p = jsonWs(p + 1);
    if( *p == cEnd ) return p + 1;
    for(;;){
      if( cEnd == '}' ){            /* a key and its colon first */
        if( *p != '"' || (p = jsonSkip(p)) == 0 ) return 0;
        p = jsonWs(p);
        if( *p++ != ':' ) return 0;
      }
      if( (p = jsonSkip(p)) == 0 ) return 0;
      p = jsonWs(p);
      if( *p == cEnd ) return p + 1;
      if( *p++ != ',' ) return 0;
      p = jsonWs(p);
    }
  }
  const char *p0 = p;               /* a number, true, false or null */
  while( *p && strchr("+-.0123456789eEtrufalsn", *p) ) p++;
  return p > p0 ? p : 0;
}

/* The value of member zKey of the object at P. */
static const char *jsonMember(const char *p, const char *zKey){
  size_t n = strlen(zKey);
  if( p == 0 || *(p = jsonWs(p)) != '{' ) return 0;
  p = jsonWs(p + 1);
  while( *p == '"' ){
    const char *zK = p + 1, *pEnd = jsonSkip(p);
    if( pEnd == 0 ) return 0;
    p = jsonWs(pEnd);
    if( *p++ != ':' ) return 0;
    if( (size_t)(pEnd - 1 - zK) == n && memcmp(zK, zKey, n) == 0 ) return jsonWs(p);
    if( (p = jsonSkip(p)) == 0 ) return 0;
    p = jsonWs(p);
    if( *p++ != ',' ) return 0;
    p = jsonWs(p);
  }
  return 0;
}

/* Element K of the array at P. */
static const char *jsonItem(const char *p, int k){
  if( p == 0 || *(p = jsonWs(p)) != '[' ) return 0;
  p = jsonWs(p + 1);
  if( *p == ']' ) return 0;
  for(int i = 0; i < k; i++){
    if( (p = jsonSkip(p)) == 0 ) return 0;
    p = jsonWs(p);
    if( *p++ != ',' ) return 0;
  }
  return jsonWs(p);
}

/* The number at P, or -1 (fio's figures are never negative). */
static double jsonNum(const char *p){
  char *pEnd;
  if( p == 0 ) return -1;
  double v = strtod(p, &pEnd);
  return pEnd > p ? v : -1;
}

/* The whole of file zPath, NUL-terminated, or NULL. */
static char *readFile(const char *zPath){
  int fd = open(zPath, O_RDONLY);
  struct stat st;
  char *z = 0;
  if( fd >= 0 && fstat(fd, &st) == 0 && (z = malloc((size_t)st.st_size + 1)) != 0 ){
    if( readAll(fd, (uint8_t *)z, (size_t)st.st_size, 0) ){ free(z); z = 0; }
    else z[st.st_size] = 0;
  }
  if( fd >= 0 ) close(fd);
  return z;
}

/* The first executable zName on $PATH into zOut; 0 if there is one. */
static int findOnPath(const char *zName, char *zOut, size_t n){
  const char *zPath = getenv("PATH");
  while( zPath && *zPath ){
    size_t k = strcspn(zPath, ":");
    snprintf(zOut, n, "%.*s/%s", (int)k, k ? zPath : ".", zName);
    if( access(zOut, X_OK) == 0 ) return 0;
    zPath += k + (zPath[k] == ':');
  }
  zOut[0] = 0;
  return -1;
}

/*
** The fio reference: fio reads the raw file's whole 64 KiB blocks once each
** in random order (azFioOpt).  Returns the seconds this workload's bytes
** take at fio's rate (its JSON's read.bw_bytes, or io_bytes over runtime),
** so that it prints and compares as the other rows; -1 if fio failed, the
** reason in r->zFioWhy.  fio's failure is not pagedb's: not counted as one.
*/
static double rawFio(Run *r){
  Bench *b = r->b;
  uint64_t size = r->nByte & ~(uint64_t)(FIO_BS - 1);
  char zFile[2 * PATH_MAX + 80], zSize[64], zIoSize[64], zOut[PATH_MAX + 96];
  char *azArg[N_FIO_OPT + 6];
  int nArg = 0;
  if( size == 0 ){
    snprintf(r->zFioWhy, sizeof r->zFioWhy, "the raw file is smaller than one 64 KiB block");
    return -1;
  }
  /* fio splits --filename at colons unless they are escaped. */
  size_t j = (size_t)snprintf(zFile, sizeof zFile, "--filename=");
  for(const char *z = r->zRaw; *z && j + 2 < sizeof zFile; z++){
    if( *z == ':' ) zFile[j++] = '\\';
    zFile[j++] = *z;
  }
  zFile[j] = 0;
  snprintf(zSize, sizeof zSize, "--size=%llu", (unsigned long long)size);
  snprintf(zIoSize, sizeof zIoSize, "--io_size=%llu", (unsigned long long)size);
  snprintf(zOut, sizeof zOut, "--output=%s.fio.json", r->zRaw);
  azArg[nArg++] = "fio";
  for(int k = 0; k < N_FIO_OPT; k++) azArg[nArg++] = (char *)azFioOpt[k];
  azArg[nArg++] = zFile;
  azArg[nArg++] = zSize;
  azArg[nArg++] = zIoSize;
  azArg[nArg++] = zOut;
  azArg[nArg] = 0;

  /* Its messages (stdout and stderr) come through a pipe, for the reason. */
  dropCaches(b);
  int aFd[2];
  pid_t pid;
  posix_spawn_file_actions_t fa;
  if( pipe(aFd) ){
    snprintf(r->zFioWhy, sizeof r->zFioWhy, "pipe: %s", strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, aFd[0]);
  posix_spawn_file_actions_adddup2(&fa, aFd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, aFd[1], 2);
  posix_spawn_file_actions_addclose(&fa, aFd[1]);
  int e = posix_spawn(&pid, b->zFio, &fa, 0, azArg, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(aFd[1]);
  char zMsg[512];
  size_t nMsg = 0;
  ssize_t k;
  char buf[4096];
  while( (k = read(aFd[0], buf, sizeof buf)) != 0 ){
    if( k < 0 && errno == EINTR ) continue;
    if( k < 0 ) break;
    size_t m = (size_t)k < sizeof zMsg - 1 - nMsg ? (size_t)k : sizeof zMsg - 1 - nMsg;
    memcpy(zMsg + nMsg, buf, m);
    nMsg += m;
  }
  close(aFd[0]);
  zMsg[nMsg] = 0;
  zMsg[strcspn(zMsg, "\n")] = 0;
  int status = 0;
  if( e ){
    snprintf(r->zFioWhy, sizeof r->zFioWhy, "posix_spawn %.300s: %s", b->zFio, strerror(e));
    return -1;
  }
  while( waitpid(pid, &status, 0) < 0 && errno == EINTR ){}
  char *zJson = readFile(zOut + strlen("--output="));
  unlink(zOut + strlen("--output="));
  const char *pJob = zJson ? jsonItem(jsonMember(strchr(zJson, '{'), "jobs"), 0) : 0;
  const char *pRead = jsonMember(pJob, "read");
  double bw = jsonNum(jsonMember(pRead, "bw_bytes"));
  if( bw <= 0 ){
    double ms = jsonNum(jsonMember(pRead, "runtime"));
    bw = ms > 0 ? jsonNum(jsonMember(pRead, "io_bytes")) * 1000.0 / ms : -1;
  }
  double err = jsonNum(jsonMember(pJob, "error"));
  free(zJson);
  if( !WIFEXITED(status) || WEXITSTATUS(status) != 0 || pJob == 0 || err != 0 || bw <= 0 ){
    snprintf(r->zFioWhy, sizeof r->zFioWhy, "fio %s %d, %s%s%.400s",
             WIFEXITED(status) ? "exit status" : "killed by signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
             pJob == 0 ? "no JSON report" : err != 0 ? "the job reports an error" : "no read rate",
             zMsg[0] ? ": " : "", zMsg);
    return -1;
  }
  return (double)r->nByte / bw;
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
  const char *zPath = r->zPdb[r->iVfs][iT];
  pagedb *db = 0;
  int rc;
  removeDataset(zPath);
  dropCaches(b);
  double c0 = cpuTime(CLOCK_PROCESS_CPUTIME_ID), m0 = cpuTime(CLOCK_THREAD_CPUTIME_ID);
  double t0 = now();
  rc = pagedb_open(zPath, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, vfsArg(r));
  if( rc && b->nVfs && !r->opened[r->iVfs] ){
    /* A named VFS that does not work here is skipped, not a failure. */
    printf("  vfs %s: pagedb_open failed: %s (%s); skipped\n", vfsName(r), pagedb_errname(rc),
           pagedb_errmsg(db));
    fflush(stdout);
    b->vfsSkip[r->iVfs] = 1;
    pagedb_close(db);
    removeDataset(zPath);
    return 1;
  }
  if( rc ){ failRc(b, "pagedb_open", rc, pagedb_errmsg(db)); pagedb_close(db); return 1; }
  r->opened[r->iVfs] = 1;
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

/* "copy", "mmap", or "prefetch copy"... with read-ahead of WINDOW bytes. */
static const char *readName(int mode, size_t window, char *z, size_t n){
  snprintf(z, n, "%s%s", window ? "prefetch " : "", modeName(mode));
  return z;
}

/*
** Open a reader of MODE on DB; with WINDOW, give it the random order to read
** ahead along (pagedb_reader_prefetch).  NULL on failure, reported.
*/
static pagedb_reader *readerOpen(Run *r, pagedb *db, int mode, size_t window){
  pagedb_reader *rd = 0;
  int rc = pagedb_reader_open(db, mode, &rd);
  if( rc ){ failRc(r->b, "pagedb_reader_open", rc, pagedb_errmsg(db)); return 0; }
  if( window ){
    rc = pagedb_reader_prefetch(rd, r->aOrder, r->w.count, pagedb_field_index(db, r->w.field),
                                window);
    if( rc ){
      failRc(r->b, "pagedb_reader_prefetch", rc, pagedb_reader_errmsg(rd));
      pagedb_reader_close(rd);
      return 0;
    }
  }
  return rd;
}

/*
** Check every sample of the dataset against the workload through a reader
** of MODE (reading ahead WINDOW bytes, if not 0): every byte (wl_check) and
** every label.  Untimed; once per mode and read path.  The label reads do
** not disturb the read-ahead: it follows the data field only.
*/
static void pdbVerify(Run *r, pagedb *db, int mode, size_t window){
  Bench *b = r->b;
  int fData = pagedb_field_index(db, r->w.field);
  int fLabel = pagedb_field_index(db, "label");
  char zName[32];
  const char *zMode = readName(mode, window, zName, sizeof zName);
  int rc;
  if( fData < 0 || fLabel < 0 ){
    fail(b, "%s: fields %s/label not found (%d, %d)", pagedb_path(db), r->w.field, fData, fLabel);
    return;
  }
  pagedb_reader *rd = readerOpen(r, db, mode, window);
  if( rd == 0 ) return;
  int64_t nBad = 0;
  for(int64_t k = 0; k < r->w.count && nBad < 5; k++){
    int64_t i = r->aOrder[k];
    const void *p = 0;
    size_t n = 0;
    int64_t label = -1;
    rc = pagedb_read(rd, i, fData, &p, &n);
    if( rc ){
      fail(b, "verify %s: pagedb_read sample %lld: %s (%s)", zMode, (long long)i,
           pagedb_errname(rc), pagedb_reader_errmsg(rd));
      nBad++;
      continue;
    }
    if( wl_check(&r->w, i, p, n) ){
      if( n != r->aSize[i] ){
        fail(b, "verify %s: sample %lld: %zu bytes read, %llu expected", zMode,
             (long long)i, n, (unsigned long long)r->aSize[i]);
      }else{
        fail(b, "verify %s: sample %lld (%zu bytes): first wrong byte at offset %zu",
             zMode, (long long)i, n, firstDiff(&r->w, i, p, n));
      }
      nBad++;
      continue;
    }
    rc = pagedb_read_int(rd, i, fLabel, &label);
    if( rc || label != wl_label(&r->w, i) ){
      fail(b, "verify %s: sample %lld label: %s, %lld read, %lld expected", zMode,
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
         zMode, (long long)r->w.count, pagedb_errname(rc));
  }
  pagedb_reader_close(rd);
}

/*
** Before a read pass: drop the page cache if --cold; in a warm run, evict
** the direct VFS's data file (its copies bypass the cache; this makes its
** zero-copy reads uncached too, so its rows compare with the O_DIRECT ones).
*/
static void beforeRead(Run *r){
  dropCaches(r->b);
  if( !r->b->cold && vfsIsDirect(r) ){
    int fd = open(r->zPdb[r->iVfs][r->iRead], O_RDONLY);
    if( fd >= 0 ){
      fdatasync(fd);
      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      close(fd);
    }
  }
}

/* Open the dataset the read phases use, read-only; NULL on failure. */
static pagedb *pdbOpenRead(Run *r){
  Bench *b = r->b;
  pagedb *db = 0;
  const char *zPath = r->zPdb[r->iVfs][r->iRead];
  int rc = pagedb_open(zPath, &db, PAGEDB_OPEN_READONLY, vfsArg(r));
  if( rc ){ failRc(b, "pagedb_open (read-only)", rc, pagedb_errmsg(db)); pagedb_close(db); return 0; }
  if( pagedb_count(db) != r->w.count ){
    fail(b, "%s: pagedb_count is %lld, expected %lld", zPath,
         (long long)pagedb_count(db), (long long)r->w.count);
  }
  return db;
}

/*
** Read every sample in the random order through a reader of MODE, summing
** every byte; the sum must equal the raw pread pass's.  With WINDOW, the
** reader is given the whole order first and reads up to WINDOW bytes ahead
** (the prefetch rows).  The time covers pagedb_reader_open to
** pagedb_reader_close (as the raw passes cover open, mmap, munmap and
** close), the prefetch call included, not pagedb_open.
*/
static double pdbRead(Run *r, int mode, size_t window){
  Bench *b = r->b;
  int rc;
  char zName[32];
  const char *zMode = readName(mode, window, zName, sizeof zName);
  beforeRead(r);
  pagedb *db = pdbOpenRead(r);
  if( db == 0 ) return -1;
  int f = pagedb_field_index(db, r->w.field);
  double t0 = now();
  pagedb_reader *rd = readerOpen(r, db, mode, window);
  if( rd == 0 ){ pagedb_close(db); return -1; }
  uint64_t h = 0;
  for(int64_t k = 0; k < r->w.count; k++){
    int64_t i = r->aOrder[k];
    const void *p;
    size_t n;
    rc = pagedb_read(rd, i, f, &p, &n);
    if( rc ){
      fail(b, "%s read: pagedb_read sample %lld: %s (%s)", zMode, (long long)i,
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
    fail(b, "%s read: the bytes differ from the raw file's (checksum)", zMode);
  }
  int *pVerified = window ? &r->verifiedAhead[r->iVfs][mode] : &r->verified[r->iVfs][mode];
  if( !*pVerified ){
    pdbVerify(r, db, mode, window);
    *pVerified = 1;
  }
  rc = pagedb_close(db);
  if( rc ) failRc(b, "pagedb_close (read-only)", rc, "(handle freed)");
  return t;
}

/*
** Check every sample through pagedb_read_batch in a reader of MODE, B ids
** at a time, in the random order: every byte (wl_check).  Untimed.
*/
static void pdbVerifyBatch(Run *r, pagedb *db, int mode, const void **aData, size_t *aSize){
  Bench *b = r->b;
  int f = pagedb_field_index(db, r->w.field);
  int rc;
  pagedb_reader *rd = readerOpen(r, db, mode, 0);
  if( rd == 0 ) return;
  int64_t nBad = 0;
  for(int64_t k = 0; k < r->w.count && nBad < 5; k += b->nBatch){
    int n = r->w.count - k < b->nBatch ? (int)(r->w.count - k) : b->nBatch;
    rc = pagedb_read_batch(rd, r->aOrder + k, n, f, aData, aSize);
    if( rc ){
      fail(b, "verify batch %s: pagedb_read_batch at position %lld: %s (%s)", modeName(mode),
           (long long)k, pagedb_errname(rc), pagedb_reader_errmsg(rd));
      nBad++;
      continue;
    }
    for(int j = 0; j < n; j++){
      int64_t i = r->aOrder[k + j];
      if( wl_check(&r->w, i, aData[j], aSize[j]) ){
        fail(b, "verify batch %s: sample %lld (entry %d of a batch of %d, %zu bytes, %llu expected)"
             ": first wrong byte at offset %zu", modeName(mode), (long long)i, j, n, aSize[j],
             (unsigned long long)r->aSize[i],
             aSize[j] == r->aSize[i] ? firstDiff(&r->w, i, aData[j], aSize[j]) : (size_t)0);
        nBad++;
      }
    }
  }
  pagedb_reader_close(rd);
}

/*
** As pdbRead, with pagedb_read_batch of --batch ids at a time, in the same
** order, summing every byte of every entry in order.
*/
static double pdbBatch(Run *r, int mode){
  Bench *b = r->b;
  int rc;
  const void **aData = malloc(sizeof(void *) * (size_t)b->nBatch);
  size_t *aSize = malloc(sizeof(size_t) * (size_t)b->nBatch);
  if( !aData || !aSize ){ fail(b, "out of memory"); free(aData); free(aSize); return -1; }
  beforeRead(r);
  pagedb *db = pdbOpenRead(r);
  if( db == 0 ){ free(aData); free(aSize); return -1; }
  int f = pagedb_field_index(db, r->w.field);
  double t0 = now();
  pagedb_reader *rd = readerOpen(r, db, mode, 0);
  if( rd == 0 ){ pagedb_close(db); free(aData); free(aSize); return -1; }
  uint64_t h = 0;
  for(int64_t k = 0; k < r->w.count; k += b->nBatch){
    int n = r->w.count - k < b->nBatch ? (int)(r->w.count - k) : b->nBatch;
    rc = pagedb_read_batch(rd, r->aOrder + k, n, f, aData, aSize);
    if( rc ){
      fail(b, "batch %s read: pagedb_read_batch of %d at position %lld: %s (%s)", modeName(mode), n,
           (long long)k, pagedb_errname(rc), pagedb_reader_errmsg(rd));
      pagedb_reader_close(rd);
      pagedb_close(db); free(aData); free(aSize);
      return -1;
    }
    for(int j = 0; j < n; j++) h = mixSum(h, aData[j], aSize[j]);
  }
  pagedb_reader_close(rd);
  double t = now() - t0;
  if( r->haveRawSum && h != r->rawSum ){
    fail(b, "batch %s read: the bytes differ from the raw file's (checksum)", modeName(mode));
  }
  if( !r->verifiedBatch[r->iVfs][mode] ){
    pdbVerifyBatch(r, db, mode, aData, aSize);
    r->verifiedBatch[r->iVfs][mode] = 1;
  }
  rc = pagedb_close(db);
  if( rc ) failRc(b, "pagedb_close (read-only)", rc, "(handle freed)");
  free(aData); free(aSize);
  return t;
}

/* Seconds from pagedb_open (read-only) until the first sample is read. */
static double pdbOpen(Run *r){
  Bench *b = r->b;
  pagedb *db = 0;
  pagedb_reader *rd = 0;
  const void *p;
  size_t n;
  beforeRead(r);
  double t0 = now();
  int rc = pagedb_open(r->zPdb[r->iVfs][r->iRead], &db, PAGEDB_OPEN_READONLY, vfsArg(r));
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

/* N bytes as "8 MiB", "512 KiB" or "1000 bytes". */
static const char *sizeName(size_t n, char *z, size_t nz){
  if( n % (1u << 20) == 0 ) snprintf(z, nz, "%zu MiB", n >> 20);
  else if( n % 1024 == 0 ) snprintf(z, nz, "%zu KiB", n >> 10);
  else snprintf(z, nz, "%zu bytes", n);
  return z;
}

static const char *passShort(int ok){
  return ok ? "pass" : "SHORT";
}

/* One line of the table: a name, then rates from SECONDS (median). */
static void printLine(const Run *r, const char *zName, double sec, double ref, const char *zRef){
  int w = r->b->labelW;
  if( sec <= 0 ){
    printf("  %-*s %10s\n", w, zName, "failed");
    return;
  }
  printf("  %-*s %9.1f %12.0f %9.3f", w, zName, (double)r->nByte / sec / 1e6,
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

/* The times of one VFS's pagedb rows. */
typedef struct VfsTimes {
  Times tW[MAX_THREADS], tSync[MAX_THREADS], tCommit[MAX_THREADS], tClose[MAX_THREADS];
  Times tEng[MAX_THREADS], tWcpu[MAX_THREADS];
  Times tMmap, tCopy, tBMmap, tBCopy, tAMmap, tACopy, tOpen;
} VfsTimes;

/* The index of VFS zName in --vfs if it is there and works, else -1. */
static int vfsIndex(const Bench *b, const char *zName){
  for(int v = 0; v < b->nVfs; v++){
    if( strcmp(b->azVfs[v], zName) == 0 ) return b->vfsSkip[v] ? -1 : v;
  }
  return -1;
}

/* An indented line under a row: REF's rate as a share of SEC's. */
static void printVs(const Run *r, double sec, double ref, const char *zRef){
  if( sec > 0 && ref > 0 ){
    printf("  %-*s %32s   %6.1f%% of %s\n", r->b->labelW, "", "", 100.0 * ref / sec, zRef);
  }
}

/* The index of N threads in --threads, or -1. */
static int threadIndex(const Bench *b, int n){
  for(int k = 0; k < b->nThread; k++){
    if( b->aThread[k] == n ) return k;
  }
  return -1;
}

/* Of VT's writes with at most MAXT threads, the fastest's index in --threads, or -1. */
static int fastestWrite(const Bench *b, const VfsTimes *vt, int maxT){
  int best = -1;
  for(int k = 0; k < b->nThread; k++){
    double t = median(&vt->tW[k]);
    if( b->aThread[k] <= maxT && t > 0 && (best < 0 || t < median(&vt->tW[best])) ) best = k;
  }
  return best;
}

/*
** A target line for VT's write with --threads[K]: the time REF as a share of
** that write's, pass at GOAL percent.  Nothing when either was not measured.
*/
static void printWriteTarget(const Bench *b, const char *zName, const VfsTimes *vt, int k,
                             double ref, double goal){
  double sec = k >= 0 ? median(&vt->tW[k]) : -1;
  if( sec <= 0 || ref <= 0 ) return;
  double q = 100.0 * ref / sec;
  int n = b->aThread[k];
  printf("    %-35s %6.1f%% (%d thread%s)  %s\n", zName, q, n, n > 1 ? "s" : "",
         passShort(q >= goal));
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
  int nV = b->nVfs ? b->nVfs : 1;
  r->aSize = malloc(sizeof(uint64_t) * (size_t)N);
  r->aOff = malloc(sizeof(uint64_t) * (size_t)N);
  r->aOrder = malloc(sizeof(int64_t) * (size_t)N);
  VfsTimes *aVt = calloc((size_t)nV, sizeof(VfsTimes));
  if( !r->aSize || !r->aOff || !r->aOrder || !aVt ){
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
  snprintf(r->zRawDio, sizeof r->zRawDio, "%s/raw-%.15s-direct.bin", b->zDir, r->w.name);
  for(int v = 0; v < nV; v++){
    for(int t = 0; t < b->nThread; t++){
      if( b->nVfs ){
        snprintf(r->zPdb[v][t], sizeof r->zPdb[v][t], "%s/%.15s-t%d-%.15s.pagedb", b->zDir,
                 r->w.name, b->aThread[t], b->azVfs[v]);
      }else{
        snprintf(r->zPdb[v][t], sizeof r->zPdb[v][t], "%s/%.15s-t%d.pagedb", b->zDir,
                 r->w.name, b->aThread[t]);
      }
    }
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
  Times tRawDio = {{0}, 0}, tRawUring = {{0}, 0}, tFio = {{0}, 0}, tRawDioW = {{0}, 0};
  int nFail0 = b->nFail;
  for(int rep = 0; rep < b->nReps && b->nFail == nFail0; rep++){
    double t = rawWriteFile(r, 0);
    if( t > 0 ) timesAdd(&tRaw, t);
    /* Once refused, O_DIRECT is not tried again: this file system lacks it. */
    if( b->directRef && !r->zDioWhy[0] && (t = rawWriteFile(r, 1)) > 0 ) timesAdd(&tRawDioW, t);
    for(int v = 0; v < nV; v++){
      VfsTimes *vt = &aVt[v];
      r->iVfs = v;
      for(int k = 0; k < b->nThread && !b->vfsSkip[v]; k++){
        WriteTimes wt;
        if( pdbWrite(r, k, b->aThread[k], &wt) == 0 ){
          timesAdd(&vt->tW[k], wt.total);
          timesAdd(&vt->tSync[k], wt.sync);
          timesAdd(&vt->tCommit[k], wt.commit);
          timesAdd(&vt->tClose[k], wt.close);
          timesAdd(&vt->tEng[k], wt.engineCpu);
          timesAdd(&vt->tWcpu[k], wt.writerCpu);
        }
      }
    }
  }
  /* Reads of the raw file and of the dataset written last. */
  for(int rep = 0; rep < b->nReps && b->nFail == nFail0; rep++){
    double t;
    if( (t = rawPread(r)) > 0 ) timesAdd(&tRawPread, t);
    if( (t = rawMmap(r)) > 0 ) timesAdd(&tRawMmap, t);
    if( b->directRef ){
      if( (t = rawDirectPread(r)) > 0 ) timesAdd(&tRawDio, t);
      if( (t = rawDirectUring(r)) > 0 ) timesAdd(&tRawUring, t);
      /* After one failure fio is not tried again: it will not work here. */
      if( b->zFio[0] && !r->zFioWhy[0] && (t = rawFio(r)) > 0 ) timesAdd(&tFio, t);
    }
    for(int v = 0; v < nV; v++){
      VfsTimes *vt = &aVt[v];
      if( b->vfsSkip[v] ) continue;
      r->iVfs = v;
      if( (t = pdbRead(r, PAGEDB_READ_MMAP, 0)) > 0 ) timesAdd(&vt->tMmap, t);
      if( (t = pdbRead(r, PAGEDB_READ_COPY, 0)) > 0 ) timesAdd(&vt->tCopy, t);
      if( (t = pdbBatch(r, PAGEDB_READ_MMAP)) > 0 ) timesAdd(&vt->tBMmap, t);
      if( (t = pdbBatch(r, PAGEDB_READ_COPY)) > 0 ) timesAdd(&vt->tBCopy, t);
      if( (t = pdbRead(r, PAGEDB_READ_MMAP, b->window)) > 0 ) timesAdd(&vt->tAMmap, t);
      if( (t = pdbRead(r, PAGEDB_READ_COPY, b->window)) > 0 ) timesAdd(&vt->tACopy, t);
      if( (t = pdbOpen(r)) > 0 ) timesAdd(&vt->tOpen, t);
    }
  }

  char z[128];
  int W = b->labelW;
  double raw = median(&tRaw), rawDio = median(&tRawDioW);
  const char *zDioRow = "raw write, O_DIRECT (8 MiB pwrite, 1 fsync)";
  printf("  %-*s %9s %12s %9s\n", W, "", "MB/s", "samples/s", "seconds");
  printLine(r, "raw write (8 MiB pwrite, 1 fsync)", raw, 0, 0);
  if( b->directRef && r->zDioWhy[0] ) printf("  %-*s skipped: %s\n", W, zDioRow, r->zDioWhy);
  else if( b->directRef ) printLine(r, zDioRow, rawDio, 0, 0);
  for(int v = 0; v < nV; v++){
    VfsTimes *vt = &aVt[v];
    r->iVfs = v;
    if( b->vfsSkip[v] ){
      printf("  %-*s skipped: this VFS does not work here\n", W, pdbLabel(r, z, sizeof z, ""));
      continue;
    }
    for(int k = 0; k < b->nThread; k++){
      char zRest[64];
      snprintf(zRest, sizeof zRest, "write, %d thread%s", b->aThread[k], b->aThread[k] > 1 ? "s" : "");
      double t = median(&vt->tW[k]);
      printLine(r, pdbLabel(r, z, sizeof z, zRest), t, raw, "raw");
      if( vfsIsDirect(r) ) printVs(r, t, rawDio, "raw O_DIRECT");
      if( t > 0 ){
        double c = median(&vt->tCommit[k]);
        double e = median(&vt->tEng[k]);
        printf("      final pagedb_commit %.3f s = %.1f%% of the ingest (the data file was fsynced\n"
               "      from outside just before it: %.3f s); pagedb_close %.3f s\n",
               c, 100.0 * c / t, median(&vt->tSync[k]), median(&vt->tClose[k]));
        printf("      CPU: writer threads %.3f s; the engine's own threads (catalog) %.3f s"
               " = %.1f%% of the ingest time\n", median(&vt->tWcpu[k]), e, 100.0 * e / t);
      }
    }
  }
  double rp = median(&tRawPread), rm = median(&tRawMmap);
  double rdp = median(&tRawDio), rdu = median(&tRawUring), rf = median(&tFio);
  const char *zFioRow = "fio randread 64 KiB, O_DIRECT, depth 32";
  printf("  random-order reads of every sample (the dataset written with %d thread%s;"
         " batches of %d ids):\n",
         b->aThread[r->iRead], b->aThread[r->iRead] > 1 ? "s" : "", b->nBatch);
  printLine(r, "raw read, pread into a buffer", rp, 0, 0);
  printLine(r, "raw read, mmap in place", rm, 0, 0);
  if( b->directRef ){
    printLine(r, "raw read, O_DIRECT pread, 1 at a time", rdp, 0, 0);
    snprintf(z, sizeof z, "raw read, O_DIRECT io_uring, depth %d", RAW_DEPTH);
    if( rdu > 0 ) printLine(r, z, rdu, 0, 0);
    else printf("  %-*s skipped: built without liburing\n", W, z);
    if( rf > 0 ){
      printLine(r, zFioRow, rf, 0, 0);
      printf("      (fio's rate; samples/s and seconds: this workload's bytes at that rate)\n");
    }else if( b->zFio[0] ){
      printf("  %-*s skipped: %s\n", W, zFioRow, r->zFioWhy);
    }
  }
  for(int v = 0; v < nV; v++){
    VfsTimes *vt = &aVt[v];
    r->iVfs = v;
    if( b->vfsSkip[v] ) continue;
    int isDirect = vfsIsDirect(r);
    double pm = median(&vt->tMmap), pc = median(&vt->tCopy);
    double bm = median(&vt->tBMmap), bc = median(&vt->tBCopy);
    double am = median(&vt->tAMmap), ac = median(&vt->tACopy);
    double po = median(&vt->tOpen);
    char zRest[64], zWin[32];
    /* The direct VFS's reads are uncached: in a warm run only the O_DIRECT
    ** references compare with them. */
    int warmDirect = isDirect && !b->cold;
    printLine(r, pdbLabel(r, z, sizeof z, "read, PAGEDB_READ_MMAP"), pm, warmDirect ? 0 : rm, "raw mmap");
    if( isDirect && rdp > 0 ){
      printLine(r, pdbLabel(r, z, sizeof z, "read, PAGEDB_READ_COPY"), pc, rdp, "raw O_DIRECT pread");
    }else{
      printLine(r, pdbLabel(r, z, sizeof z, "read, PAGEDB_READ_COPY"), pc, rp, "raw pread");
    }
    snprintf(zRest, sizeof zRest, "batch %d, PAGEDB_READ_MMAP", b->nBatch);
    printLine(r, pdbLabel(r, z, sizeof z, zRest), bm, pm, "single (batch vs single)");
    snprintf(zRest, sizeof zRest, "batch %d, PAGEDB_READ_COPY", b->nBatch);
    printLine(r, pdbLabel(r, z, sizeof z, zRest), bc, pc, "single (batch vs single)");
    if( isDirect ){
      printVs(r, bc, rdu, "raw O_DIRECT io_uring");
      printVs(r, bc, rf, "fio");
    }
    sizeName(b->window, zWin, sizeof zWin);
    snprintf(zRest, sizeof zRest, "prefetch %s, PAGEDB_READ_MMAP", zWin);
    printLine(r, pdbLabel(r, z, sizeof z, zRest), am, pm, "single (prefetch vs single)");
    snprintf(zRest, sizeof zRest, "prefetch %s, PAGEDB_READ_COPY", zWin);
    printLine(r, pdbLabel(r, z, sizeof z, zRest), ac, pc, "single (prefetch vs single)");
    if( isDirect ){
      printVs(r, ac, rdu, "raw O_DIRECT io_uring");
      printVs(r, ac, rf, "fio");
    }
    pdbLabel(r, z, sizeof z, "");
    if( b->nVfs ) snprintf(z, sizeof z, "pagedb_open[%s] read-only to 1st read", b->azVfs[v]);
    else snprintf(z, sizeof z, "pagedb_open read-only to 1st read");
    if( po > 0 ){
      printf("  %-*s %.4f s\n", W, z, po);
    }else{
      printf("  %-*s failed\n", W, z);
    }
  }

  /* The targets. */
  int isImg = r->w.wid == 1, isSmall = r->w.wid == 2;
  for(int v = 0; v < nV; v++){
    VfsTimes *vt = &aVt[v];
    r->iVfs = v;
    if( b->vfsSkip[v] ) continue;
    int isDirect = vfsIsDirect(r);
    double pm = median(&vt->tMmap), pc = median(&vt->tCopy);
    double bc = median(&vt->tBCopy), po = median(&vt->tOpen);
    if( b->nVfs ) printf("  targets, vfs %s:\n", b->azVfs[v]);
    else printf("  targets:\n");
    int kBest = fastestWrite(b, vt, INT_MAX);
    if( isImg ) printWriteTarget(b, "write >= 85% of raw", vt, kBest, raw, 85.0);
    if( isSmall ) printWriteTarget(b, "ingest samples/s >= 85% of raw", vt, kBest, raw, 85.0);
    /* Issue 3: the direct VFS against the raw file written with O_DIRECT,
    ** W-img with 2 threads, W-small the faster of 1 and 2. */
    if( isDirect && isImg && rawDio > 0 && threadIndex(b, 2) < 0 ){
      printf("    write >= 85%% of raw O_DIRECT: not measured (--threads has no 2)\n");
    }
    if( isDirect && isImg ){
      printWriteTarget(b, "write >= 85% of raw O_DIRECT", vt, threadIndex(b, 2), rawDio, 85.0);
    }
    if( isDirect && isSmall ){
      printWriteTarget(b, "ingest samples/s >= 85% of raw O_DIRECT", vt, fastestWrite(b, vt, 2),
                       rawDio, 85.0);
    }
    if( isImg && pm > 0 && rm > 0 && !(isDirect && !b->cold) ){
      double q = 100.0 * rm / pm;
      printf("    zero-copy read >= 90%% of raw mmap   %6.1f%%              %s\n", q,
             passShort(q >= 90.0));
    }
    if( pc > 0 && rp > 0 && !isDirect ){
      double q = 100.0 * rp / pc;
      printf("    copy read >= 90%% of raw pread       %6.1f%%              %s\n", q,
             passShort(q >= 90.0));
    }
    if( isDirect && pc > 0 && rdp > 0 ){
      printf("    copy read vs raw O_DIRECT pread     %6.1f%%              (no target)\n",
             100.0 * rdp / pc);
    }
    if( isDirect && bc > 0 && rdu > 0 ){
      double q = 100.0 * rdu / bc;
      printf("    %s batch read (%d) >= 80%% of raw\n"
             "      O_DIRECT io_uring depth %d         %6.1f%%              %s\n",
             b->cold ? "cold" : "uncached", b->nBatch, RAW_DEPTH, q, passShort(q >= 80.0));
    }
    if( isDirect && bc > 0 && rf > 0 ){
      /* The target is for W-img, whose samples are about fio's 64 KiB; a
      ** W-small sample is one 4 KiB read, so there it is only a figure. */
      double q = 100.0 * rf / bc;
      printf("    %s batch read (%d) >= 70%% of fio\n"
             "      64 KiB randread, depth %d         %6.1f%%              %s\n",
             b->cold ? "cold" : "uncached", b->nBatch, RAW_DEPTH, q,
             isImg ? passShort(q >= 70.0) : "(no target: not W-img)");
    }
    if( isSmall && po > 0 ){
      printf("    open ready for reads < 0.5 s        %7.4f s            %s\n", po,
             passShort(po < 0.5));
    }
  }
  /* io_uring's writes against posix's, one line per thread count. */
  int vPosix = vfsIndex(b, "posix"), vUring = vfsIndex(b, "io_uring");
  if( vPosix >= 0 && vUring >= 0 ){
    printf("  targets, io_uring vs posix:\n");
    for(int k = 0; k < b->nThread; k++){
      printWriteTarget(b, "io_uring write >= 100% of posix", &aVt[vUring], k,
                       median(&aVt[vPosix].tW[k]), 100.0);
    }
  }
  if( b->nFail != nFail0 ) printf("  FAILED: see the messages on stderr\n");
  fflush(stdout);

  if( !b->keep ){
    unlink(r->zRaw);
    unlink(r->zRawDio);
    for(int v = 0; v < nV; v++){
      for(int t = 0; t < b->nThread; t++) removeDataset(r->zPdb[v][t]);
    }
  }
  free(r->aSize); free(r->aOff); free(r->aOrder);
  free(aVt);
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
  "  --cold            drop the page cache before every timed phase (root); adds\n"
  "                    the raw O_DIRECT references (pread, io_uring depth 32,\n"
  "                    fio's 64 KiB random reads if fio is installed, and the raw\n"
  "                    file written with O_DIRECT), as --vfs direct does\n"
  "  --vfs LIST        run the pagedb rows under each VFS named, e.g.\n"
  "                    posix,io_uring,direct (repeatable; default: the default VFS)\n"
  "  --batch B         ids per pagedb_read_batch in the batched-read rows (32)\n"
  "  --window BYTES    read-ahead of the prefetch rows (pagedb_reader_prefetch;\n"
  "                    default 8M)\n"
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

/* "8M", "512k" or "4096" in bytes; 0 if it is not a size. */
static size_t parseSize(const char *z){
  char *end;
  unsigned long long v = strtoull(z, &end, 0);
  if( *end == 'k' || *end == 'K' ){ v <<= 10; end++; }
  else if( *end == 'm' || *end == 'M' ){ v <<= 20; end++; }
  return *end || end == z ? 0 : (size_t)v;
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
              || strcmp(z, "-seed") == 0 || strcmp(z, "-page-size") == 0
              || strcmp(z, "-vfs") == 0 || strcmp(z, "-batch") == 0
              || strcmp(z, "-window") == 0) ){
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
    }else if( strcmp(z, "-vfs") == 0 ){
      /* A comma-separated list. */
      char *zList = strdup(argv[++i]);    /* kept for the run: the names point into it */
      if( zList == 0 ){ fprintf(stderr, "pagedb-bench: out of memory\n"); return 2; }
      for(char *zTok = strtok(zList, ","); zTok; zTok = strtok(0, ",")){
        int dup = 0;
        for(int k = 0; k < b->nVfs; k++) dup |= strcmp(b->azVfs[k], zTok) == 0;
        if( dup ) continue;
        if( b->nVfs >= MAX_VFS ){
          fprintf(stderr, "pagedb-bench: --vfs: at most %d VFSes\n", MAX_VFS);
          return 2;
        }
        b->azVfs[b->nVfs++] = zTok;
      }
    }else if( strcmp(z, "-batch") == 0 ){
      char *end;
      long v = strtol(zArg, &end, 10);
      if( *end || v < 1 || v > PAGEDB_MAX_BATCH ){
        fprintf(stderr, "pagedb-bench: --batch %s: not a number from 1 to %d\n", zArg,
                PAGEDB_MAX_BATCH);
        return 2;
      }
      b->nBatch = (int)v;
      i++;
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
    }else if( strcmp(z, "-page-size") == 0 || strcmp(z, "-window") == 0 ){
      size_t v = parseSize(zArg);
      if( v == 0 ){
        fprintf(stderr, "pagedb-bench: %s %s: not a size (e.g. 8M)\n", argv[i], zArg);
        return 2;
      }
      if( z[1] == 'p' ) b->pageSize = v;
      else b->window = v;
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
  if( b->nBatch == 0 ) b->nBatch = DEFAULT_BATCH;
  if( b->window == 0 ) b->window = DEFAULT_WINDOW;
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

  /* Which VFSes work here: one that does not is reported and skipped. */
  for(int v = 0; v < b->nVfs; v++){
    pagedb_vfs *pv = pagedb_vfs_find(b->azVfs[v]);
    char *zWhy = b->azWhy[v];
    size_t nWhy = sizeof b->azWhy[v];
    if( pv == 0 ){
      snprintf(zWhy, nWhy, "no VFS of that name is registered");
    }else if( pagedb_vfs_check(pv, b->zDir, zWhy, nWhy) != PAGEDB_OK ){
      if( zWhy[0] == 0 ) snprintf(zWhy, nWhy, "pagedb_vfs_check failed");
    }else{
      zWhy[0] = 0;
    }
    if( zWhy[0] ){
      b->vfsSkip[v] = 1;
      fprintf(stderr, "pagedb-bench: vfs %s skipped: %s\n", b->azVfs[v], zWhy);
    }
  }
  /* The O_DIRECT references: cold runs, and any run of the direct VFS. */
  b->directRef = b->cold;
  if( b->nVfs == 0 ){
    pagedb_vfs *pv = pagedb_vfs_find(0);
    if( pv && pv->zName && strcmp(pv->zName, "direct") == 0 ) b->directRef = 1;
  }
  for(int v = 0; v < b->nVfs; v++){
    if( !b->vfsSkip[v] && strcmp(b->azVfs[v], "direct") == 0 ) b->directRef = 1;
  }
  if( b->directRef ) findOnPath("fio", b->zFio, sizeof b->zFio);
  b->labelW = b->nVfs || b->directRef ? 50 : 40;

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
