/*
** readcost.c -- pagedb-readcost: what one read by id costs, for the read
** path's figures in doc/benchmarks.md ("Warm and cold reads": one read's cost).  A
** client of pagedb.h only, so the same source builds against an older
** library (the build before the index file) for a side-by-side run.
**
**   pagedb-readcost make PATH N [VFS]
**       a dataset of N samples with W-small's sizes (uniform in [200, 2048]
**       bytes, field "text", codec none) and an INT "label", ids 0..N-1,
**       one writer, one commit, through VFS (default: the default VFS);
**       prints the time from the open to the end of the commit and of the
**       commit alone (the ingest of pagedb-bench's write rows, without
**       their outside fsync)
**   pagedb-readcost count PATH K mmap|copy LABEL
**       K random reads (and, with LABEL 1, pagedb_read_int of the label of
**       each) in readLoop(), twice: run it under
**         valgrind --tool=callgrind --collect-atstart=no --toggle-collect=readLoop
**       and divide the instructions by 2K.  Deterministic: a per-read cost
**       that the machine's load cannot blur
**   pagedb-readcost time PATH mmap|copy PASSES
**       every sample once in a seeded random order per pass, warm, each
**       sample's bytes summed as pagedb-bench sums them (sumBytes): wall and
**       CPU time of each pass (CPU leaves out a loaded machine's waits)
**
** Exit status 0, or 1 with a message when a call fails.
*/
#define _GNU_SOURCE
#include "pagedb.h"
#include "sumbytes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng = 42;
static uint64_t nextRand(void){
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return rng;
}

static void die(const char *zWhat, int rc, pagedb *db){
  fprintf(stderr, "pagedb-readcost: %s: %s (%s)\n", zWhat, pagedb_errname(rc), db ? pagedb_errmsg(db) : "");
  exit(1);
}

static double clk(clockid_t c){
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void makeDataset(const char *zPath, int64_t n, const char *zVfs){
  pagedb *db = 0;
  pagedb_writer *w = 0;
  double t0 = clk(CLOCK_MONOTONIC);
  int rc = pagedb_open(zPath, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, zVfs);
  if( rc ) die("pagedb_open", rc, db);
  if( (rc = pagedb_field_add(db, "text", PAGEDB_BYTES, PAGEDB_CODEC_NONE)) ) die("field_add", rc, db);
  if( (rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE)) ) die("field_add", rc, db);
  if( (rc = pagedb_writer_open(db, &w)) ) die("writer_open", rc, db);
  static uint8_t buf[2048];
  for(int64_t i = 0; i < n; i++){
    size_t len = 200 + (size_t)(nextRand() % 1849);
    memset(buf, (int)(i & 255), len);
    memcpy(buf, &i, sizeof i);
    if( (rc = pagedb_sample_begin(w, i)) || (rc = pagedb_put(w, 0, buf, len))
     || (rc = pagedb_put_int(w, 1, (int64_t)(nextRand() % 1000))) || (rc = pagedb_sample_end(w, 0)) ){
      die("writing a sample", rc, db);
    }
  }
  if( (rc = pagedb_writer_close(w)) ) die("writer_close", rc, db);
  double t1 = clk(CLOCK_MONOTONIC);
  if( (rc = pagedb_commit(db)) ) die("commit", rc, db);
  double t2 = clk(CLOCK_MONOTONIC);
  if( (rc = pagedb_close(db)) ) die("close", rc, 0);
  printf("ingest of %lld samples (vfs %s): %.3f s (%.0f samples/s), of which the commit %.3f s\n", (long long)n,
         zVfs ? zVfs : "default", t2 - t0, (double)n / (t2 - t0), t2 - t1);
}

/* The loop callgrind counts: K reads of IDS, and their labels if LABEL. */
__attribute__((noinline)) uint64_t readLoop(pagedb_reader *r, const int64_t *ids, int k, int label){
  uint64_t h = 0;
  for(int i = 0; i < k; i++){
    const void *p;
    size_t n;
    int64_t v = 0;
    int rc = pagedb_read(r, ids[i], 0, &p, &n);
    if( rc ) die("pagedb_read", rc, 0);
    h += ((const uint8_t *)p)[n - 1] + n;
    if( label && (rc = pagedb_read_int(r, ids[i], 1, &v)) ) die("pagedb_read_int", rc, 0);
    h += (uint64_t)v;
  }
  return h;
}

int main(int argc, char **argv){
  if( argc < 4 ){
    fprintf(stderr, "usage: pagedb-readcost make PATH N [VFS] | count PATH K mmap|copy LABEL | time PATH mmap|copy PASSES\n");
    return 1;
  }
  const char *zPath = argv[2];
  if( strcmp(argv[1], "make") == 0 ){
    makeDataset(zPath, atoll(argv[3]), argc > 4 ? argv[4] : 0);
    return 0;
  }
  if( argc < 5 ) die("missing arguments", PAGEDB_MISUSE, 0);
  int isTime = strcmp(argv[1], "time") == 0;
  const char *zMode = isTime ? argv[3] : argv[4];
  int mode = strcmp(zMode, "copy") == 0 ? PAGEDB_READ_COPY : PAGEDB_READ_MMAP;
  pagedb *db = 0;
  pagedb_reader *r = 0;
  int rc = pagedb_open(zPath, &db, PAGEDB_OPEN_READONLY, 0);
  if( rc ) die("pagedb_open", rc, db);
  int64_t n = pagedb_count(db);
  if( n <= 0 ) die("an empty dataset", PAGEDB_NOTFOUND, db);
  if( !isTime ){
    int k = atoi(argv[3]);
    int64_t *aId = malloc(sizeof *aId * (size_t)k);
    if( aId == 0 ) die("malloc", PAGEDB_NOMEM, 0);
    for(int i = 0; i < k; i++) aId[i] = (int64_t)(nextRand() % (uint64_t)n);
    if( (rc = pagedb_reader_open(db, mode, &r)) ) die("reader_open", rc, db);
    uint64_t h = readLoop(r, aId, k, atoi(argv[5]));
    h += readLoop(r, aId, k, atoi(argv[5]));
    printf("%llu\n", (unsigned long long)h);
    pagedb_reader_close(r);
    free(aId);
  }else{
    int nPass = atoi(argv[4]);
    int64_t *aOrd = malloc(sizeof *aOrd * (size_t)n);
    if( aOrd == 0 ) die("malloc", PAGEDB_NOMEM, 0);
    for(int64_t i = 0; i < n; i++) aOrd[i] = i;
    for(int64_t i = n - 1; i > 0; i--){
      int64_t j = (int64_t)(nextRand() % (uint64_t)(i + 1)), t = aOrd[i];
      aOrd[i] = aOrd[j];
      aOrd[j] = t;
    }
    for(int pass = 0; pass < nPass; pass++){
      double w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
      if( (rc = pagedb_reader_open(db, mode, &r)) ) die("reader_open", rc, db);
      uint64_t h = 0;
      for(int64_t k = 0; k < n; k++){
        const void *p;
        size_t len;
        if( (rc = pagedb_read(r, aOrd[k], 0, &p, &len)) ) die("pagedb_read", rc, 0);
        h = (h ^ sumBytes(p, len)) * 0x100000001b3ull + len;
      }
      pagedb_reader_close(r);
      double w = clk(CLOCK_MONOTONIC) - w0, c = clk(CLOCK_PROCESS_CPUTIME_ID) - c0;
      printf("%s pass %d: wall %.3f s (%.0f samples/s), cpu %.3f s (%.0f samples/s), sum %016llx\n", zMode, pass,
             w, (double)n / w, c, (double)n / c, (unsigned long long)h);
    }
    free(aOrd);
  }
  rc = pagedb_close(db);
  if( rc ) die("pagedb_close", rc, 0);
  return 0;
}
