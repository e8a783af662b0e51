/*
** bench_run.c -- one workload of pagedb-bench: its sizes, offsets and read
** order, the repetitions (raw and pagedb alternating within each), then the
** table of medians and the targets, each marked pass or short.
*/
#define _GNU_SOURCE
#include "bench.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int runWorkload(Bench *b, const char *zSpec){
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
