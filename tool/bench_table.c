/*
** bench_table.c -- what pagedb-bench prints of one workload: the table
** (a row per system and operation: the median's MB/s, samples/s and
** seconds, the range of MB/s over the repetitions, the largest peak RSS,
** and the ratio to its reference), the same rows in the CSV file (every
** repetition, then the median), and the targets, each marked pass or short.
*/
#define _GNU_SOURCE
#include "bench.h"

#include <limits.h>
#include <string.h>

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

/* The columns of --csv. */
void csvHeader(Bench *b){
  if( b->pCsv ){
    fprintf(b->pCsv, "workload,samples,bytes,system,operation,threads,rep,seconds,mb_per_s,"
                     "samples_per_s,peak_rss_mib,disk_bytes,reference,pct_of_reference\n");
  }
}

/* One CSV line: REP is a number or "median"; SEC <= 0 leaves the rates out. */
static void csvLine(const Run *r, const char *zSys, const char *zOp, int nT, const char *zRep,
                    double sec, double rss, uint64_t disk, double ref, const char *zRef){
  FILE *f = r->b->pCsv;
  if( f == 0 ) return;
  fprintf(f, "%s,%lld,%llu,\"%s\",\"%s\",%d,%s,", r->w.name, (long long)r->w.count,
          (unsigned long long)r->nByte, zSys, zOp, nT, zRep);
  if( sec > 0 ){
    fprintf(f, "%.6f,%.3f,%.1f,", sec, (double)r->nByte / sec / 1e6, (double)r->w.count / sec);
  }else{
    fprintf(f, ",,,");
  }
  if( rss >= 0 ) fprintf(f, "%.1f,", rss / (1 << 20));
  else fprintf(f, ",");
  if( disk ) fprintf(f, "%llu,", (unsigned long long)disk);
  else fprintf(f, ",");
  if( ref > 0 && sec > 0 ) fprintf(f, "\"%s\",%.2f\n", zRef, 100.0 * ref / sec);
  else fprintf(f, ",\n");
}

/*
** One row of the table, named zName: T's median as MB/s, samples/s and
** seconds, the MB/s of its slowest and fastest repetitions, its largest
** peak RSS, and REF's time (a median) as a share of its median.  Its
** repetitions and median go to the CSV as system zSys, operation zOp with
** NT threads (0: not a threaded operation).
*/
static void printRow(const Run *r, const char *zName, const char *zSys, const char *zOp, int nT,
                     const Times *t, double ref, const char *zRef){
  int w = r->b->labelW;
  double sec = median(t), rss = timesRss(t);
  if( sec <= 0 ){
    printf("  %-*s %10s\n", w, zName, "failed");
    return;
  }
  for(int k = 0; k < t->n; k++){
    char zRep[16];
    snprintf(zRep, sizeof zRep, "%d", k + 1);
    csvLine(r, zSys, zOp, nT, zRep, t->a[k], t->rss[k], 0, 0, 0);
  }
  csvLine(r, zSys, zOp, nT, "median", sec, rss, 0, ref, zRef);
  double mb = (double)r->nByte / 1e6;
  printf("  %-*s %9.1f %12.0f %9.3f  %9.1f-%-9.1f", w, zName, mb / sec,
         (double)r->w.count / sec, sec, mb / timesEnd(t, -1), mb / timesEnd(t, 1));
  if( rss >= 0 ) printf(" %8.1f", rss / (1 << 20));
  else printf(" %8s", "n/a");
  if( ref > 0 ) printf("   %6.1f%% of %s", 100.0 * ref / sec, zRef);
  printf("\n");
}

/* An indented line under a row: REF's rate as a share of SEC's. */
static void printVs(const Run *r, double sec, double ref, const char *zRef){
  if( sec > 0 && ref > 0 ){
    printf("  %-*s %62s   %6.1f%% of %s\n", r->b->labelW, "", "", 100.0 * ref / sec, zRef);
  }
}

/* A row that was not measured, and why. */
static void printSkip(const Run *r, const char *zName, const char *zWhy){
  printf("  %-*s skipped: %s\n", r->b->labelW, zName, zWhy);
}

/* The space a system's files take, against the samples' bytes. */
static void printDisk(const Run *r, const char *zSys, uint64_t n){
  if( n == 0 ) return;
  csvLine(r, zSys, "disk size", 0, "median", 0, -1, n, 0, 0);
  printf("  %-*s %9.1f MB = %.3f x the samples' bytes\n", r->b->labelW, zSys, (double)n / 1e6,
         (double)n / (double)r->nByte);
}

/* The CSV name of pagedb under the VFS in hand, with zMode: "pagedb[posix] mmap". */
static const char *pdbSys(const Run *r, const char *zMode, char *z, size_t n){
  snprintf(z, n, "pagedb[%s]%s%s", vfsName(r), zMode[0] ? " " : "", zMode);
  return z;
}

/* The index of VFS zName in --vfs if it is there and works, else -1. */
static int vfsIndex(const Bench *b, const char *zName){
  for(int v = 0; v < b->nVfs; v++){
    if( strcmp(b->azVfs[v], zName) == 0 ) return b->vfsSkip[v] ? -1 : v;
  }
  return -1;
}

/* The index of N threads in --threads, or -1. */
static int threadIndex(const Bench *b, int n){
  for(int k = 0; k < b->nThread; k++){
    if( b->aThread[k] == n ) return k;
  }
  return -1;
}

/* Of the writes A[] with at most MAXT threads, the fastest's index in --threads, or -1. */
static int fastestWrite(const Bench *b, const Times *a, int maxT){
  int best = -1;
  for(int k = 0; k < b->nThread; k++){
    double t = median(&a[k]);
    if( b->aThread[k] <= maxT && t > 0 && (best < 0 || t < median(&a[best])) ) best = k;
  }
  return best;
}

/* The median of the fastest of the writes A[], or -1. */
static double bestWrite(const Bench *b, const Times *a){
  int k = fastestWrite(b, a, INT_MAX);
  return k < 0 ? -1 : median(&a[k]);
}

/*
** A target line: REF's time as a share of SEC's, pass at GOAL percent (300:
** three times as fast).  Nothing when either was not measured.
*/
static void printTarget(const char *zWhat, double sec, double ref, double goal){
  if( sec <= 0 || ref <= 0 ) return;
  double q = 100.0 * ref / sec;
  printf("    %-58s %7.1f%%  %s\n", zWhat, q, passShort(q >= goal));
}

/* A write target for VT's write with --threads[K]. */
static void printWriteTarget(const Bench *b, const char *zWhat, const VfsTimes *vt, int k,
                             double ref, double goal){
  char z[128];
  if( k < 0 ) return;
  snprintf(z, sizeof z, "%s (%d thread%s)", zWhat, b->aThread[k], b->aThread[k] > 1 ? "s" : "");
  printTarget(z, median(&vt->tW[k]), ref, goal);
}

/* The write rows: raw, pagedb under each VFS, the other systems. */
static void reportWrites(Run *r, WlTimes *wt){
  Bench *b = r->b;
  int W = b->labelW, nV = b->nVfs ? b->nVfs : 1;
  char z[128], zSys[64];
  double raw = median(&wt->tRaw), rawDio = median(&wt->tRawDioW);
  const char *zDioRow = "raw write, O_DIRECT (8 MiB pwrite, 1 fsync)";
  printf("  %-*s %9s %12s %9s  %19s %8s\n", W, "", "MB/s", "samples/s", "seconds",
         "MB/s min-max", "RSS MiB");
  printf("  durable writes (each until its data is synced and the store closed):\n");
  printRow(r, "raw write (8 MiB pwrite, 1 fsync)", "raw", "write", 1, &wt->tRaw, 0, 0);
  if( b->directRef && r->zDioWhy[0] ) printSkip(r, zDioRow, r->zDioWhy);
  else if( b->directRef ) printRow(r, zDioRow, "raw O_DIRECT", "write", 1, &wt->tRawDioW, 0, 0);
  for(int v = 0; v < nV; v++){
    VfsTimes *vt = &wt->aVt[v];
    r->iVfs = v;
    if( b->vfsSkip[v] ){
      printSkip(r, pdbLabel(r, z, sizeof z, ""), "this VFS does not work here");
      continue;
    }
    for(int k = 0; k < b->nThread; k++){
      char zRest[64];
      int n = b->aThread[k];
      snprintf(zRest, sizeof zRest, "write, %d thread%s", n, n > 1 ? "s" : "");
      double t = median(&vt->tW[k]);
      printRow(r, pdbLabel(r, z, sizeof z, zRest), pdbSys(r, "", zSys, sizeof zSys), "write", n,
               &vt->tW[k], raw, "raw");
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
  for(int s = 0; s < MAX_KV; s++){
    const KvSys *p = kvSys(s);
    if( !b->kvOn[s] ) continue;
    for(int k = 0; k < b->nThread; k++){
      int n = b->aThread[k];
      snprintf(z, sizeof z, "%s write, %d thread%s", p->zName, n, n > 1 ? "s" : "");
      if( p->xOpen == 0 ) printSkip(r, z, p->zHow);
      else printRow(r, z, p->zName, "write", n, &wt->aKv[s].tW[k], raw, "raw");
    }
  }
}

/* The pagedb rows of random-order reads under the VFS in hand. */
static void reportPdbReads(Run *r, WlTimes *wt, const VfsTimes *vt){
  Bench *b = r->b;
  char z[128], zSys[64], zRest[64], zWin[32];
  double rp = median(&wt->tRawPread), rm = median(&wt->tRawMmap);
  double rdp = median(&wt->tRawDio), rdu = median(&wt->tRawUring), rf = median(&wt->tFio);
  int isDirect = vfsIsDirect(r);
  double pm = median(&vt->tMmap), pc = median(&vt->tCopy), bc = median(&vt->tBCopy);
  double ac = median(&vt->tACopy);
  /* The direct VFS's reads are uncached: in a warm run only the O_DIRECT
  ** references compare with them. */
  int warmDirect = isDirect && !b->cold;
  printRow(r, pdbLabel(r, z, sizeof z, "read, PAGEDB_READ_MMAP"), pdbSys(r, "mmap", zSys, 64),
           "random read", 0, &vt->tMmap, warmDirect ? 0 : rm, "raw mmap");
  double pmc = median(&vt->tMmapCpu), rmc = median(&wt->tRawMmapCpu);
  if( !warmDirect && pmc > 0 && rmc > 0 ){
    printf("      CPU time of the passes (medians): raw mmap %.3f s, pagedb %.3f s: pagedb at %.1f%% of"
           " raw's rate\n", rmc, pmc, 100.0 * rmc / pmc);
  }
  if( isDirect && rdp > 0 ){
    printRow(r, pdbLabel(r, z, sizeof z, "read, PAGEDB_READ_COPY"), pdbSys(r, "copy", zSys, 64),
             "random read", 0, &vt->tCopy, rdp, "raw O_DIRECT pread");
  }else{
    printRow(r, pdbLabel(r, z, sizeof z, "read, PAGEDB_READ_COPY"), pdbSys(r, "copy", zSys, 64),
             "random read", 0, &vt->tCopy, rp, "raw pread");
  }
  snprintf(zRest, sizeof zRest, "batch %d, PAGEDB_READ_MMAP", b->nBatch);
  printRow(r, pdbLabel(r, z, sizeof z, zRest), pdbSys(r, "mmap", zSys, 64), "batch read", 0,
           &vt->tBMmap, pm, "single (batch vs single)");
  snprintf(zRest, sizeof zRest, "batch %d, PAGEDB_READ_COPY", b->nBatch);
  printRow(r, pdbLabel(r, z, sizeof z, zRest), pdbSys(r, "copy", zSys, 64), "batch read", 0,
           &vt->tBCopy, pc, "single (batch vs single)");
  if( isDirect ){
    printVs(r, bc, rdu, "raw O_DIRECT io_uring");
    printVs(r, bc, rf, "fio");
  }
  sizeName(b->window, zWin, sizeof zWin);
  snprintf(zRest, sizeof zRest, "prefetch %s, PAGEDB_READ_MMAP", zWin);
  printRow(r, pdbLabel(r, z, sizeof z, zRest), pdbSys(r, "mmap", zSys, 64), "prefetch read", 0,
           &vt->tAMmap, pm, "single (prefetch vs single)");
  snprintf(zRest, sizeof zRest, "prefetch %s, PAGEDB_READ_COPY", zWin);
  printRow(r, pdbLabel(r, z, sizeof z, zRest), pdbSys(r, "copy", zSys, 64), "prefetch read", 0,
           &vt->tACopy, pc, "single (prefetch vs single)");
  if( isDirect ){
    printVs(r, ac, rdu, "raw O_DIRECT io_uring");
    printVs(r, ac, rf, "fio");
  }
}

/* The read rows: random order, sequential, cold; open to first read; disk. */
static void reportReads(Run *r, WlTimes *wt){
  Bench *b = r->b;
  int W = b->labelW, nV = b->nVfs ? b->nVfs : 1;
  char z[128], zSys[64];
  double rp = median(&wt->tRawPread), rm = median(&wt->tRawMmap), rdu = median(&wt->tRawUring);
  double rs = median(&wt->tRawSeq), rc = median(&wt->tRawCold);
  const char *zFioRow = "fio randread 64 KiB, O_DIRECT, depth 32";
  if( b->afterWrite ){
    double ra = median(&wt->tRawAwMmap);
    printf("  read right after the write (random order, zero-copy, in a fresh process, nothing"
           " read in first):\n");
    printRow(r, "raw read-after-write, mmap in place", "raw mmap", "read after write", 0,
             &wt->tRawAwMmap, 0, 0);
    for(int v = 0; v < nV; v++){
      r->iVfs = v;
      if( b->vfsSkip[v] ) continue;
      printRow(r, pdbLabel(r, z, sizeof z, "read-after-write, MMAP"), pdbSys(r, "mmap", zSys, 64),
               "read after write", 0, &wt->aVt[v].tAwMmap, vfsIsDirect(r) ? 0 : ra,
               "raw mmap after write");
      double pc = median(&wt->aVt[v].tAwCpu), rcpu = median(&wt->tRawAwCpu);
      /* The direct VFS's writes leave nothing in the page cache: no comparison. */
      if( pc > 0 && rcpu > 0 && !vfsIsDirect(r) ){
        printf("      CPU time of the passes (medians; a loaded machine's waits left out): raw %.3f s,"
               " pagedb %.3f s: pagedb at %.1f%% of raw's rate\n", rcpu, pc, 100.0 * rcpu / pc);
      }
    }
  }
  if( b->afterWriteOnly ) return;
  printf("  random-order reads of every sample (the dataset written with %d thread%s;"
         " batches of %d ids):\n",
         b->aThread[r->iRead], b->aThread[r->iRead] > 1 ? "s" : "", b->nBatch);
  printRow(r, "raw read, pread into a buffer", "raw pread", "random read", 0, &wt->tRawPread, 0, 0);
  printRow(r, "raw read, mmap in place", "raw mmap", "random read", 0, &wt->tRawMmap, 0, 0);
  if( b->directRef ){
    printRow(r, "raw read, O_DIRECT pread, 1 at a time", "raw O_DIRECT pread", "random read", 0,
             &wt->tRawDio, 0, 0);
    snprintf(z, sizeof z, "raw read, O_DIRECT io_uring, depth %d", RAW_DEPTH);
    if( rdu > 0 ) printRow(r, z, "raw O_DIRECT io_uring", "random read", 0, &wt->tRawUring, 0, 0);
    else printSkip(r, z, "built without liburing");
    if( median(&wt->tFio) > 0 ){
      printRow(r, zFioRow, "fio", "random read", 0, &wt->tFio, 0, 0);
      printf("      (fio's rate; samples/s and seconds: this workload's bytes at that rate;"
             " RSS: pagedb-bench's own)\n");
    }else if( b->zFio[0] ){
      printSkip(r, zFioRow, r->zFioWhy);
    }
  }
  for(int v = 0; v < nV; v++){
    r->iVfs = v;
    if( !b->vfsSkip[v] ) reportPdbReads(r, wt, &wt->aVt[v]);
  }
  for(int s = 0; s < MAX_KV; s++){
    const KvSys *p = kvSys(s);
    if( !b->kvOn[s] || p->xOpen == 0 ) continue;
    snprintf(z, sizeof z, "%s read, %s", p->zName, p->zGet);
    printRow(r, z, p->zName, "random read", 0, &wt->aKv[s].tRand, p->zeroCopy ? rm : rp,
             p->zeroCopy ? "raw mmap" : "raw pread");
  }

  printf("  sequential reads (ids in order):\n");
  printRow(r, "raw read, pread into a buffer", "raw pread", "sequential read", 0, &wt->tRawSeq,
           0, 0);
  for(int v = 0; v < nV; v++){
    r->iVfs = v;
    if( b->vfsSkip[v] ) continue;
    printRow(r, pdbLabel(r, z, sizeof z, "read, PAGEDB_READ_MMAP"), pdbSys(r, "mmap", zSys, 64),
             "sequential read", 0, &wt->aVt[v].tSeqMmap, rs, "raw pread");
    printRow(r, pdbLabel(r, z, sizeof z, "read, PAGEDB_READ_COPY"), pdbSys(r, "copy", zSys, 64),
             "sequential read", 0, &wt->aVt[v].tSeqCopy, rs, "raw pread");
  }
  for(int s = 0; s < MAX_KV; s++){
    if( !b->kvOn[s] || kvSys(s)->xOpen == 0 ) continue;
    snprintf(z, sizeof z, "%s read", kvSys(s)->zName);
    printRow(r, z, kvSys(s)->zName, "sequential read", 0, &wt->aKv[s].tSeq, rs, "raw pread");
  }

  printf("  cold random-order reads (%s; each system's files evicted with\n"
         "  POSIX_FADV_DONTNEED before the pass):\n",
         b->cold ? "page cache dropped" : "page cache warm for other files");
  printRow(r, "raw read, pread into a buffer", "raw pread", "cold random read", 0, &wt->tRawCold,
           0, 0);
  for(int v = 0; v < nV; v++){
    r->iVfs = v;
    if( b->vfsSkip[v] ) continue;
    char zRest[64];
    printRow(r, pdbLabel(r, z, sizeof z, "read, PAGEDB_READ_COPY"), pdbSys(r, "copy", zSys, 64),
             "cold random read", 0, &wt->aVt[v].tColdCopy, rc, "raw pread");
    snprintf(zRest, sizeof zRest, "batch %d, PAGEDB_READ_COPY", b->nBatch);
    printRow(r, pdbLabel(r, z, sizeof z, zRest), pdbSys(r, "copy", zSys, 64),
             "cold batch read", 0, &wt->aVt[v].tColdBatch, rc, "raw pread");
    printVs(r, median(&wt->aVt[v].tColdBatch), rdu, "raw O_DIRECT io_uring");
  }
  for(int s = 0; s < MAX_KV; s++){
    if( !b->kvOn[s] || kvSys(s)->xOpen == 0 ) continue;
    snprintf(z, sizeof z, "%s read", kvSys(s)->zName);
    printRow(r, z, kvSys(s)->zName, "cold random read", 0, &wt->aKv[s].tCold, rc, "raw pread");
  }

  printf("  open (read-only) to the first sample read and checked:\n");
  for(int v = 0; v < nV; v++){
    r->iVfs = v;
    if( b->vfsSkip[v] ) continue;
    double po = median(&wt->aVt[v].tOpen);
    pdbSys(r, "", zSys, sizeof zSys);
    csvLine(r, zSys, "open to first read", 0, "median", po, timesRss(&wt->aVt[v].tOpen), 0, 0, 0);
    if( po > 0 ) printf("  %-*s %.4f s\n", W, zSys, po);
    else printf("  %-*s failed\n", W, zSys);
  }
  for(int s = 0; s < MAX_KV; s++){
    if( !b->kvOn[s] || kvSys(s)->xOpen == 0 ) continue;
    double t = median(&wt->aKv[s].tOpen);
    csvLine(r, kvSys(s)->zName, "open to first read", 0, "median", t, timesRss(&wt->aKv[s].tOpen),
            0, 0, 0);
    if( t > 0 ) printf("  %-*s %.4f s\n", W, kvSys(s)->zName, t);
    else printf("  %-*s failed\n", W, kvSys(s)->zName);
  }

  printf("  file size on disk (allocated blocks; pagedb: data file and catalog):\n");
  printDisk(r, "raw", wt->rawDisk);
  for(int v = 0; v < nV; v++){
    r->iVfs = v;
    if( !b->vfsSkip[v] ) printDisk(r, pdbSys(r, "", zSys, sizeof zSys), wt->aVt[v].disk);
  }
  for(int s = 0; s < MAX_KV; s++) printDisk(r, kvSys(s)->zName, wt->aKv[s].disk);
}

/* The targets of one VFS's pagedb rows. */
static void reportTargets(Run *r, WlTimes *wt, const VfsTimes *vt){
  Bench *b = r->b;
  int isImg = r->w.wid == 1, isSmall = r->w.wid == 2, isBig = r->w.wid == 3;
  int isDirect = vfsIsDirect(r), warmDirect = isDirect && !b->cold;
  double raw = median(&wt->tRaw), rawDio = median(&wt->tRawDioW);
  double rp = median(&wt->tRawPread), rm = median(&wt->tRawMmap);
  double rdp = median(&wt->tRawDio), rdu = median(&wt->tRawUring), rf = median(&wt->tFio);
  double pm = median(&vt->tMmap), pc = median(&vt->tCopy);
  double bc = median(&vt->tBCopy), po = median(&vt->tOpen);
  const KvTimes *sql = &wt->aKv[KV_SQLITE], *lm = &wt->aKv[KV_LMDB];
  double sqlW = bestWrite(b, sql->tW), lmW = bestWrite(b, lm->tW);
  double sqlR = median(&sql->tRand), lmR = median(&lm->tRand), sqlC = median(&sql->tCold);
  double coldBest = median(&vt->tColdBatch);
  if( median(&vt->tColdCopy) > 0 && (coldBest <= 0 || median(&vt->tColdCopy) < coldBest) ){
    coldBest = median(&vt->tColdCopy);
  }
  int kBest = fastestWrite(b, vt->tW, INT_MAX);
  if( b->nVfs ) printf("  targets, vfs %s:\n", b->azVfs[r->iVfs]);
  else printf("  targets:\n");
  if( isImg ) printWriteTarget(b, "write >= 85% of raw", vt, kBest, raw, 85.0);
  if( isSmall ) printWriteTarget(b, "ingest samples/s >= 85% of raw", vt, kBest, raw, 85.0);
  if( isBig && !isDirect ) printWriteTarget(b, "write >= 90% of raw", vt, kBest, raw, 90.0);
  /* Issue 3: the direct VFS against the raw file written with O_DIRECT,
  ** W-img with 2 threads, W-small the faster of 1 and 2. */
  if( isDirect && isImg && rawDio > 0 && threadIndex(b, 2) < 0 ){
    printf("    write >= 85%% of raw O_DIRECT: not measured (--threads has no 2)\n");
  }
  if( isDirect && isImg ){
    printWriteTarget(b, "write >= 85% of raw O_DIRECT", vt, threadIndex(b, 2), rawDio, 85.0);
  }
  if( isDirect && isSmall ){
    printWriteTarget(b, "ingest samples/s >= 85% of raw O_DIRECT", vt, fastestWrite(b, vt->tW, 2),
                     rawDio, 85.0);
  }
  if( isDirect && isBig ) printWriteTarget(b, "write >= 90% of raw O_DIRECT", vt, kBest, rawDio, 90.0);
  if( isImg || isSmall ){
    printWriteTarget(b, "write >= 3x SQLite's fastest (300%)", vt, kBest, sqlW, 300.0);
  }
  if( isImg ) printWriteTarget(b, "write >= LMDB's fastest", vt, kBest, lmW, 100.0);
  if( (isImg || isSmall) && !isDirect ){
    /* Issue 16: zero-copy reads in a fresh process right after the write. */
    printTarget("read-after-write zero-copy >= 95% of raw mmap's", median(&vt->tAwMmap),
                median(&wt->tRawAwMmap), 95.0);
    printTarget("the same by CPU time", median(&vt->tAwCpu), median(&wt->tRawAwCpu), 95.0);
  }
  if( (isImg || isSmall) && !warmDirect ){
    printTarget("zero-copy read >= 90% of raw mmap", pm, rm, 90.0);
    printTarget("the same by CPU time", median(&vt->tMmapCpu), median(&wt->tRawMmapCpu), 90.0);
    printTarget("zero-copy read >= 3x SQLite (300%)", pm, sqlR, 300.0);
  }
  if( isImg && !warmDirect ) printTarget("zero-copy read >= LMDB's zero-copy mdb_get", pm, lmR, 100.0);
  if( !isDirect ) printTarget("copy read >= 90% of raw pread", pc, rp, 90.0);
  if( isBig && !isDirect ) printTarget("zero-copy read >= 90% of raw mmap", pm, rm, 90.0);
  if( isBig && isDirect ) printTarget("copy read >= 90% of raw O_DIRECT pread", pc, rdp, 90.0);
  if( isDirect && !isBig && pc > 0 && rdp > 0 ){
    printf("    %-58s %7.1f%%  (no target)\n", "copy read vs raw O_DIRECT pread", 100.0 * rdp / pc);
  }
  if( isDirect ){
    char z[128];
    snprintf(z, sizeof z, "%s batch read (%d) >= 80%% of raw O_DIRECT io_uring",
             b->cold ? "cold" : "uncached", b->nBatch);
    printTarget(z, bc, rdu, 80.0);
    snprintf(z, sizeof z, "%s batch read (%d) vs fio 64 KiB randread%s", b->cold ? "cold" : "uncached",
             b->nBatch, isImg ? " >= 70%" : "");
    /* The target is for W-img, whose samples are about fio's 64 KiB; a
    ** W-small sample is one 4 KiB read, so there it is only a figure. */
    if( isImg ) printTarget(z, bc, rf, 70.0);
    else if( bc > 0 && rf > 0 ) printf("    %-58s %7.1f%%  (no target)\n", z, 100.0 * rf / bc);
  }
  if( isImg ) printTarget("cold read (best of single, batch) >= 3x SQLite cold", coldBest, sqlC, 300.0);
  if( isSmall && po > 0 ){
    printf("    %-58s %7.4f s  %s\n", "open ready for reads < 0.5 s", po, passShort(po < 0.5));
  }
}

void report(Run *r, WlTimes *wt){
  Bench *b = r->b;
  int nV = b->nVfs ? b->nVfs : 1;
  reportWrites(r, wt);
  reportReads(r, wt);
  for(int v = 0; v < nV; v++){
    r->iVfs = v;
    if( !b->vfsSkip[v] ) reportTargets(r, wt, &wt->aVt[v]);
  }
  /* io_uring's writes against posix's, one line per thread count. */
  int vPosix = vfsIndex(b, "posix"), vUring = vfsIndex(b, "io_uring");
  if( vPosix >= 0 && vUring >= 0 ){
    printf("  targets, io_uring vs posix:\n");
    for(int k = 0; k < b->nThread; k++){
      printWriteTarget(b, "io_uring write >= 100% of posix", &wt->aVt[vUring], k,
                       median(&wt->aVt[vPosix].tW[k]), 100.0);
    }
  }
  if( b->pCsv ) fflush(b->pCsv);
}
