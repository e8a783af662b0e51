/*
** bench_run.c -- one workload of pagedb-bench: its sizes, offsets and read
** orders, its files, then the repetitions, every system's rows taking turns
** within each (so that drift in the machine's speed hits them all), each
** operation's peak RSS measured from its start (rssReset).  bench_table.c
** prints the medians.
*/
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Time one operation into T, its peak RSS measured from here. */
#define MEASURE(T, call) do{ rssReset(); double t_ = (call); if( t_ > 0 ) timesAdd(&(T), t_); }while(0)

/* The read passes from here on go in sequential (SEQ) or random order. */
static void setOrder(Run *r, int seq){
  r->iOrd = seq;
  r->aOrder = seq ? r->aSeq : r->aRandom;
}

/* The files and the orders of workload R->w; 0 on success. */
static int setUp(Run *r){
  Bench *b = r->b;
  int64_t N = r->w.count;
  int nV = b->nVfs ? b->nVfs : 1;
  r->aSize = malloc(sizeof(uint64_t) * (size_t)N);
  r->aOff = malloc(sizeof(uint64_t) * (size_t)N);
  r->aRandom = malloc(sizeof(int64_t) * (size_t)N);
  r->aSeq = malloc(sizeof(int64_t) * (size_t)N);
  if( !r->aSize || !r->aOff || !r->aRandom || !r->aSeq ) return 1;
  for(int64_t i = 0; i < N; i++){
    r->aSize[i] = wl_size(&r->w, i);
    r->aOff[i] = r->nByte;
    r->nByte += r->aSize[i];
    r->aRandom[i] = r->aSeq[i] = i;
  }
  /* Fisher-Yates with a stream of its own: the same order for every pass. */
  uint64_t s = b->seed ^ 0x0bde5ull ^ ((uint64_t)r->w.wid << 40);
  for(int64_t i = N - 1; i > 0; i--){
    int64_t j = (int64_t)(wl_next(&s) % (uint64_t)(i + 1));
    int64_t t = r->aRandom[i]; r->aRandom[i] = r->aRandom[j]; r->aRandom[j] = t;
  }
  setOrder(r, 0);
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
  for(int k = 0; k < MAX_KV; k++){
    snprintf(r->zKv[k], sizeof r->zKv[k], "%s/%.15s.%s", b->zDir, r->w.name, kvSys(k)->zName);
  }
  r->iRead = b->nThread - 1;
  return 0;
}

/* Another system runs if --compare names it and it is built in. */
static int kvRuns(const Bench *b, int k){
  return b->kvOn[k] && kvSys(k)->xOpen != 0 && !b->afterWriteOnly;
}

/*
** A read-after-write pass (issue 16): the zero-copy read of every sample in
** the random order, in a fresh process (forked: new page tables, no map of
** the file yet) right after the file was written, with nothing read in or
** dropped first: the page cache's folios as the write left them.  PDB: the
** pagedb dataset read by the read passes (pdbRead, PAGEDB_READ_MMAP), else
** the raw file (rawMmap).  Seconds, or -1; the pass's checksum in *PSUM.
*/
static double freshAfterWrite(Run *r, int pdb, uint64_t *pSum){
  int fds[2];
  struct { double t, rss, cpu; uint64_t h; } res = { -1, -1, -1, 0 };
  fflush(stdout);
  fflush(stderr);
  if( pipe(fds) ){ fail(r->b, "pipe: %s", strerror(errno)); return -1; }
  pid_t pid = fork();
  if( pid < 0 ){ fail(r->b, "fork: %s", strerror(errno)); close(fds[0]); close(fds[1]); return -1; }
  if( pid == 0 ){
    close(fds[0]);
    setOrder(r, 0);
    r->noPrep = 1;
    /* The bytes are checked against the workload by the read phases. */
    r->verified[r->iVfs][PAGEDB_READ_MMAP] = 1;
    res.t = pdb ? pdbRead(r, PAGEDB_READ_MMAP, 0) : rawMmap(r);
    res.cpu = r->lastCpu;
    res.h = r->lastSum;
    res.rss = rssPeak();
    if( r->b->nFail ) res.t = -1;
    ssize_t k = write(fds[1], &res, sizeof res);
    _exit(k == (ssize_t)sizeof res ? 0 : 1);
  }
  close(fds[1]);
  ssize_t k;
  do k = read(fds[0], &res, sizeof res); while( k < 0 && errno == EINTR );
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if( k != (ssize_t)sizeof res || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || res.t <= 0 ){
    fail(r->b, "the read-after-write %s pass failed (see its messages above)", pdb ? "pagedb" : "raw mmap");
    return -1;
  }
  *pSum = res.h;
  r->childRss = res.rss;
  r->childCpu = res.cpu;
  return res.t;
}

/* A fresh-process pass's time into T, with the child's peak RSS, and its
** CPU time into C. */
static void addChild(Run *r, Times *t, Times *c, double sec){
  if( sec <= 0 ) return;
  timesAdd(t, sec);
  t->rss[t->n - 1] = r->childRss;
  timesAdd(c, r->childCpu);
}

/* The writes: raw, pagedb under each VFS, the other systems, in turn. */
static void measureWrites(Run *r, WlTimes *wt){
  Bench *b = r->b;
  int nV = b->nVfs ? b->nVfs : 1;
  uint64_t hRaw = 0, hPdb = 0;
  MEASURE(wt->tRaw, rawWriteFile(r, 0));
  /* Each file read right after its own write, alternately: raw, pagedb. */
  if( b->afterWrite ) addChild(r, &wt->tRawAwMmap, &wt->tRawAwCpu, freshAfterWrite(r, 0, &hRaw));
  /* Once refused, O_DIRECT is not tried again: this file system lacks it. */
  if( b->directRef && !r->zDioWhy[0] ) MEASURE(wt->tRawDioW, rawWriteFile(r, 1));
  for(int v = 0; v < nV; v++){
    VfsTimes *vt = &wt->aVt[v];
    r->iVfs = v;
    for(int k = 0; k < b->nThread && !b->vfsSkip[v]; k++){
      WriteTimes w;
      rssReset();
      if( pdbWrite(r, k, b->aThread[k], &w) == 0 ){
        timesAdd(&vt->tW[k], w.total);
        timesAdd(&vt->tSync[k], w.sync);
        timesAdd(&vt->tCommit[k], w.commit);
        timesAdd(&vt->tClose[k], w.close);
        timesAdd(&vt->tEng[k], w.engineCpu);
        timesAdd(&vt->tWcpu[k], w.writerCpu);
        if( b->afterWrite && k == r->iRead && !b->vfsSkip[v] ){
          addChild(r, &vt->tAwMmap, &vt->tAwCpu, freshAfterWrite(r, 1, &hPdb));
          if( hRaw && hPdb != hRaw ) fail(b, "read-after-write: pagedb's bytes differ from the raw file's");
        }
      }
    }
  }
  for(int s = 0; s < MAX_KV; s++){
    for(int k = 0; k < b->nThread && kvRuns(b, s); k++){
      MEASURE(wt->aKv[s].tW[k], kvWrite(r, s, b->aThread[k]));
    }
  }
}

/*
** The reads of the raw file and of the datasets written last: random order,
** sequential, cold (the files evicted first), then open to first read.
*/
static void measureReads(Run *r, WlTimes *wt){
  Bench *b = r->b;
  int nV = b->nVfs ? b->nVfs : 1;
  setOrder(r, 0);
  MEASURE(wt->tRawPread, rawPread(r));
  MEASURE(wt->tRawMmap, rawMmap(r));
  if( wt->tRawMmap.n > wt->tRawMmapCpu.n ) timesAdd(&wt->tRawMmapCpu, r->lastCpu);
  if( b->directRef ){
    MEASURE(wt->tRawDio, rawDirectPread(r));
    MEASURE(wt->tRawUring, rawDirectUring(r));
    /* After one failure fio is not tried again: it will not work here. */
    if( b->zFio[0] && !r->zFioWhy[0] ) MEASURE(wt->tFio, rawFio(r));
  }
  for(int v = 0; v < nV; v++){
    VfsTimes *vt = &wt->aVt[v];
    if( b->vfsSkip[v] ) continue;
    r->iVfs = v;
    MEASURE(vt->tMmap, pdbRead(r, PAGEDB_READ_MMAP, 0));
    if( vt->tMmap.n > vt->tMmapCpu.n ) timesAdd(&vt->tMmapCpu, r->lastCpu);
    MEASURE(vt->tCopy, pdbRead(r, PAGEDB_READ_COPY, 0));
    MEASURE(vt->tBMmap, pdbBatch(r, PAGEDB_READ_MMAP));
    MEASURE(vt->tBCopy, pdbBatch(r, PAGEDB_READ_COPY));
    MEASURE(vt->tAMmap, pdbRead(r, PAGEDB_READ_MMAP, b->window));
    MEASURE(vt->tACopy, pdbRead(r, PAGEDB_READ_COPY, b->window));
  }
  for(int s = 0; s < MAX_KV; s++){
    if( kvRuns(b, s) ) MEASURE(wt->aKv[s].tRand, kvRead(r, s));
  }

  setOrder(r, 1);
  MEASURE(wt->tRawSeq, rawPread(r));
  for(int v = 0; v < nV; v++){
    if( b->vfsSkip[v] ) continue;
    r->iVfs = v;
    MEASURE(wt->aVt[v].tSeqMmap, pdbRead(r, PAGEDB_READ_MMAP, 0));
    MEASURE(wt->aVt[v].tSeqCopy, pdbRead(r, PAGEDB_READ_COPY, 0));
  }
  for(int s = 0; s < MAX_KV; s++){
    if( kvRuns(b, s) ) MEASURE(wt->aKv[s].tSeq, kvRead(r, s));
  }

  setOrder(r, 0);
  r->evict = 1;
  MEASURE(wt->tRawCold, rawPread(r));
  for(int v = 0; v < nV; v++){
    if( b->vfsSkip[v] ) continue;
    r->iVfs = v;
    MEASURE(wt->aVt[v].tColdCopy, pdbRead(r, PAGEDB_READ_COPY, 0));
    MEASURE(wt->aVt[v].tColdBatch, pdbBatch(r, PAGEDB_READ_COPY));
  }
  for(int s = 0; s < MAX_KV; s++){
    if( kvRuns(b, s) ) MEASURE(wt->aKv[s].tCold, kvRead(r, s));
  }
  r->evict = 0;

  for(int v = 0; v < nV; v++){
    if( b->vfsSkip[v] ) continue;
    r->iVfs = v;
    MEASURE(wt->aVt[v].tOpen, pdbOpen(r));
  }
  for(int s = 0; s < MAX_KV; s++){
    if( kvRuns(b, s) ) MEASURE(wt->aKv[s].tOpen, kvOpen(r, s));
  }
}

/* The space each system's files take on disk (the datasets read). */
static void measureDisk(Run *r, WlTimes *wt){
  Bench *b = r->b;
  wt->rawDisk = diskBytes(r->zRaw);
  for(int v = 0; v < (b->nVfs ? b->nVfs : 1); v++){
    r->iVfs = v;
    if( !b->vfsSkip[v] ) wt->aVt[v].disk = pdbDiskBytes(r);
  }
  for(int s = 0; s < MAX_KV; s++){
    if( kvRuns(b, s) ) wt->aKv[s].disk = kvDiskBytes(r, s);
  }
}

int runWorkload(Bench *b, const char *zSpec){
  Run run, *r = &run;
  WlTimes wt;
  memset(r, 0, sizeof *r);
  memset(&wt, 0, sizeof wt);
  r->b = b;
  int rc = wl_parse_seed(zSpec, b->seed, &r->w);
  if( rc ){
    fprintf(stderr, "pagedb-bench: --workload %s: %s\n", zSpec,
            rc == -1 ? "unknown (W-img[:N], W-small[:N], W-big[:N])" : "out of memory");
    return 1;
  }
  int nV = b->nVfs ? b->nVfs : 1;
  wt.aVt = calloc((size_t)nV, sizeof(VfsTimes));
  if( wt.aVt == 0 || setUp(r) ){
    fprintf(stderr, "pagedb-bench: out of memory for %s\n", zSpec);
    return 1;
  }

  char zDist[128];
  describe(&r->w, zDist, sizeof zDist);
  printf("\n== %s: %lld samples, field %s (%s bytes, %s) + label INT; %.1f MB in all, "
         "mean %.0f bytes\n", r->w.name, (long long)r->w.count, r->w.field,
         r->w.poolKind == WL_POOL_TEXT ? "text" : "incompressible", zDist,
         (double)r->nByte / 1e6, (double)r->nByte / (double)r->w.count);
  printf("  process RSS before the first operation: %.1f MiB (the workload's pool and arrays;"
         " every peak RSS below includes it)\n", rssNow() / (1 << 20));
  fflush(stdout);

  int nFail0 = b->nFail;
  for(int rep = 0; rep < b->nReps && b->nFail == nFail0; rep++) measureWrites(r, &wt);
  for(int rep = 0; rep < b->nReps && b->nFail == nFail0 && !b->afterWriteOnly; rep++) measureReads(r, &wt);
  measureDisk(r, &wt);
  report(r, &wt);
  if( b->nFail != nFail0 ) printf("  FAILED: see the messages on stderr\n");
  fflush(stdout);

  if( !b->keep ){
    unlink(r->zRaw);
    unlink(r->zRawDio);
    for(int v = 0; v < nV; v++){
      for(int t = 0; t < b->nThread; t++) removeDataset(r->zPdb[v][t]);
    }
    for(int s = 0; s < MAX_KV; s++) kvRemove(r, s);
  }
  free(r->aSize); free(r->aOff); free(r->aRandom); free(r->aSeq);
  free(wt.aVt);
  wl_free(&r->w);
  return b->nFail != nFail0;
}
