/*
** bench_pagedb.c -- pagedb's rows: the workload written by 1, 2... threads
** (one pagedb_writer each, then one pagedb_commit and pagedb_close), read in
** the random order with pagedb_read in both read modes, with
** pagedb_read_batch and behind pagedb_reader_prefetch, each mode's bytes
** checked once against the workload, untimed; and the time from a
** read-only pagedb_open to the first read.
*/
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The name given to pagedb_open: NULL (the default) unless --vfs. */
static const char *vfsArg(const Run *r){
  return r->b->nVfs ? r->b->azVfs[r->iVfs] : 0;
}

/* The name of the VFS in hand, the default's included. */
const char *vfsName(const Run *r){
  if( r->b->nVfs ) return r->b->azVfs[r->iVfs];
  pagedb_vfs *v = pagedb_vfs_find(0);
  return v && v->zName ? v->zName : "?";
}

int vfsIsDirect(const Run *r){
  return strcmp(vfsName(r), "direct") == 0;
}

/* "pagedb REST", or "pagedb[VFS] REST" under --vfs. */
const char *pdbLabel(const Run *r, char *z, size_t n, const char *zRest){
  if( r->b->nVfs ) snprintf(z, n, "pagedb[%s] %s", r->b->azVfs[r->iVfs], zRest);
  else snprintf(z, n, "pagedb %s", zRest);
  return z;
}


/* ------------------------------------------------------------------ */
/* pagedb                                                              */
/* ------------------------------------------------------------------ */

/* The files of a dataset: its path + each. */
static const char *const azPdbSuffix[] = {
  "", "-catalog", "-catalog-wal", "-catalog-shm", "-catalog-journal", "-index", "-index.new"
};
#define N_PDB_SUFFIX (sizeof(azPdbSuffix) / sizeof(azPdbSuffix[0]))

void removeDataset(const char *zPath){
  char z[PATH_MAX + 32];
  for(size_t k = 0; k < N_PDB_SUFFIX; k++){
    snprintf(z, sizeof z, "%s%s", zPath, azPdbSuffix[k]);
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

/*
** Write the workload into dataset zPdb[iT] with NT threads.  The data file
** is fsynced from outside before the final pagedb_commit, so that the
** commit's time is (nearly) the catalog's alone.  0 on success.
*/
int pdbWrite(Run *r, int iT, int nT, WriteTimes *wt){
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
  rc = pagedb_field_add_aligned(db, r->w.field, PAGEDB_BYTES, PAGEDB_CODEC_NONE, b->align);
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
** zero-copy reads uncached too, so its rows compare with the O_DIRECT ones),
** and read any other in (prepFile).  With CATALOG, the catalog too: the
** open to the first read reads it; the read passes open untimed.
*/
static void beforeRead(Run *r, int catalog){
  char z[PATH_MAX + 96];
  const char *zData = r->zPdb[r->iVfs][r->iRead];
  if( r->noPrep ) return;       /* read-after-write: the files as the write left them */
  dropCaches(r->b);
  if( !r->b->cold && vfsIsDirect(r) ) evictFile(zData);
  else prepFile(r, zData);
  if( catalog ){
    snprintf(z, sizeof z, "%s-catalog", zData);
    prepFile(r, z);
  }
}

/* The space the dataset the read phases use takes on disk, catalog and all. */
uint64_t pdbDiskBytes(const Run *r){
  char z[PATH_MAX + 96];
  uint64_t n = 0;
  for(size_t k = 0; k < N_PDB_SUFFIX; k++){
    snprintf(z, sizeof z, "%s%s", r->zPdb[r->iVfs][r->iRead], azPdbSuffix[k]);
    n += diskBytes(z);
  }
  return n;
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
double pdbRead(Run *r, int mode, size_t window){
  Bench *b = r->b;
  int rc;
  char zName[32];
  const char *zMode = readName(mode, window, zName, sizeof zName);
  beforeRead(r, 0);
  pagedb *db = pdbOpenRead(r);
  if( db == 0 ) return -1;
  int f = pagedb_field_index(db, r->w.field);
  double c0 = cpuTime(CLOCK_PROCESS_CPUTIME_ID);
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
  r->lastCpu = cpuTime(CLOCK_PROCESS_CPUTIME_ID) - c0;
  r->lastSum = h;
  if( r->haveRawSum[r->iOrd] && h != r->rawSum[r->iOrd] ){
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
double pdbBatch(Run *r, int mode){
  Bench *b = r->b;
  int rc;
  const void **aData = malloc(sizeof(void *) * (size_t)b->nBatch);
  size_t *aSize = malloc(sizeof(size_t) * (size_t)b->nBatch);
  if( !aData || !aSize ){ fail(b, "out of memory"); free(aData); free(aSize); return -1; }
  beforeRead(r, 0);
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
  r->lastSum = h;
  if( r->haveRawSum[r->iOrd] && h != r->rawSum[r->iOrd] ){
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
double pdbOpen(Run *r){
  Bench *b = r->b;
  pagedb *db = 0;
  pagedb_reader *rd = 0;
  const void *p;
  size_t n;
  beforeRead(r, 1);
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
