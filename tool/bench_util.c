/*
** bench_util.c -- what every part of pagedb-bench uses: clocks, medians,
** failures (which make the run exit 1), the checksum every timed read pass
** takes of every byte, dropping the page cache, and whole-buffer I/O.
*/
#define _GNU_SOURCE
#include "bench.h"
#include "sumbytes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* CPU seconds of CLOCK: CLOCK_THREAD_CPUTIME_ID or CLOCK_PROCESS_CPUTIME_ID. */
double cpuTime(clockid_t clock){
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double now(void){
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Add V seconds to T, with the peak RSS since the last rssReset(). */
void timesAdd(Times *t, double v){
  if( t->n < MAX_REPS ){
    t->rss[t->n] = rssPeak();
    t->a[t->n++] = v;
  }
}

/* The smallest (SIGN 1) or largest (SIGN -1) of T, or -1 if it is empty. */
double timesEnd(const Times *t, int sign){
  double v = -1;
  for(int k = 0; k < t->n; k++){
    if( v < 0 || (t->a[k] - v) * sign < 0 ) v = t->a[k];
  }
  return v;
}

/* The largest peak RSS of T's repetitions, in bytes; -1 if none is known. */
double timesRss(const Times *t){
  double v = -1;
  for(int k = 0; k < t->n; k++) if( t->rss[k] > v ) v = t->rss[k];
  return v;
}

static int cmpDouble(const void *a, const void *b){
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of T, or -1 if it holds nothing. */
double median(const Times *t){
  if( t->n == 0 ) return -1;
  double a[MAX_REPS];
  memcpy(a, t->a, sizeof(double) * (size_t)t->n);
  qsort(a, (size_t)t->n, sizeof(double), cmpDouble);
  return t->n % 2 ? a[t->n / 2] : (a[t->n / 2 - 1] + a[t->n / 2]) / 2;
}

/* Report a correctness failure: the run will exit 1. */
void fail(Bench *b, const char *fmt, ...){
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
void failRc(Bench *b, const char *zCall, int rc, const char *zMsg){
  fail(b, "%s: %s (%s)", zCall, pagedb_errname(rc), zMsg ? zMsg : "no message");
}

/* Every timed read pass folds each sample into its checksum this way. */
uint64_t mixSum(uint64_t h, const void *p, size_t n){
  return (h ^ sumBytes(p, n)) * 0x100000001b3ull + n;
}
/* Drop the page cache if --cold.  Only as root (checked at start). */
void dropCaches(Bench *b){
  if( !b->cold ) return;
  sync();
  int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
  if( fd < 0 || write(fd, "3\n", 2) != 2 ){
    fail(b, "--cold: cannot write /proc/sys/vm/drop_caches: %s", strerror(errno));
  }
  if( fd >= 0 ) close(fd);
}

/*
** Peak resident memory of one operation.  Writing "5" to /proc/self/clear_refs
** (Linux 4.0 and later) resets the process's high-water mark VmHWM to what
** is resident now; /proc/self/status then gives the peak since.  It is the
** whole process's: the workload's pool and arrays (the same for every
** system) and file pages mapped in (mmap reads, LMDB) count, as they would
** for an application.  Where the reset is refused, the figure is -1 (n/a).
*/
static int rssOk = 1;

void rssReset(void){
  int fd = open("/proc/self/clear_refs", O_WRONLY);
  if( fd < 0 || write(fd, "5", 1) != 1 ) rssOk = 0;
  if( fd >= 0 ) close(fd);
}

/* VmHWM (or VmRSS, when zKey says so) of this process in bytes, or -1. */
static double procStatus(const char *zKey){
  FILE *f = fopen("/proc/self/status", "r");
  char zLine[256];
  double v = -1;
  size_t n = strlen(zKey);
  while( f && fgets(zLine, sizeof zLine, f) ){
    if( strncmp(zLine, zKey, n) == 0 && zLine[n] == ':' ) v = atof(zLine + n + 1) * 1024;
  }
  if( f ) fclose(f);
  return v;
}

double rssPeak(void){
  return rssOk ? procStatus("VmHWM") : -1;
}

double rssNow(void){
  return procStatus("VmRSS");
}

/*
** Push file zPath's pages out of the page cache: written back first
** (fdatasync), then dropped (POSIX_FADV_DONTNEED).  It needs no root and
** touches no other file; pages still mapped by a process stay.
*/
void evictFile(const char *zPath){
  int fd = open(zPath, O_RDONLY);
  if( fd < 0 ) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

/*
** Read file zPath through once, untimed, so that a warm pass finds it in
** the page cache.  Every system's stores together outgrow memory (W-big:
** about 20 GB), so without this the first pass over a file would read back
** from disk whatever the later writes pushed out, and the order of the
** passes would decide who reads cold.
*/
void warmFile(const char *zPath){
  static uint8_t buf[1 << 20];
  int fd = open(zPath, O_RDONLY);
  if( fd < 0 ) return;
  off_t off = 0;
  ssize_t k;
  while( (k = pread(fd, buf, sizeof buf, off)) > 0 ) off += k;
  close(fd);
}

void prepFile(const Run *r, const char *zPath){
  if( r->noPrep ) return;       /* read-after-write: the files as the write left them */
  if( r->evict ) evictFile(zPath);
  else if( !r->b->cold ) warmFile(zPath);
}

/* The space file zPath takes on disk (its allocated blocks); 0 if none. */
uint64_t diskBytes(const char *zPath){
  struct stat st;
  return stat(zPath, &st) ? 0 : (uint64_t)st.st_blocks * 512;
}

/*
** Write (ISWRITE) or read all N bytes of P at offset OFF of FD, going on
** after short transfers and EINTR.  0 on success; -1 on an error or an end
** of file (errno as pwrite/pread left it).
*/
int ioAll(int fd, const void *p, size_t n, uint64_t off, int isWrite){
  uint8_t *q = (uint8_t *)p;
  while( n > 0 ){
    ssize_t k = isWrite ? pwrite(fd, q, n, (off_t)off) : pread(fd, q, n, (off_t)off);
    if( k < 0 && errno == EINTR ) continue;
    if( k <= 0 ) return -1;
    q += k; n -= (size_t)k; off += (uint64_t)k;
  }
  return 0;
}
