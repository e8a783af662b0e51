/*
** tcldata.c -- the test extension's data: the deterministic generator
** behind pagedb_testdata, and DB ingest / DB verify, which write and check
** that data with pthreads in C (see the comment at the top of tclpagedb.c
** for what the commands take).  Apart from the DB command's dispatch, so
** that a reader sees what data the suite writes in one place.
*/
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tcl.h>

#include "pagedb.h"
#include "tclpagedb.h"
#include "tcldata.h"

/* ------------------------------------------------------------------ */
/* Deterministic data                                                  */
/* ------------------------------------------------------------------ */

/* One step of splitmix64: advances *S and returns the next output. */
uint64_t splitmix64(uint64_t *s){
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* A 64-bit hash of three values. */
uint64_t mix3(uint64_t a, uint64_t b, uint64_t c){
  uint64_t s = a;
  uint64_t h = splitmix64(&s);
  s = h ^ b;
  h = splitmix64(&s);
  s = h ^ c;
  return splitmix64(&s);
}

/* The seed used for field F of a dataset ingested with SEED: field 0
** uses SEED itself, so pagedb_testdata ID LEN SEED matches field 0. */
static uint64_t fieldSeed(uint64_t seed, int f){
  return seed ^ ((uint64_t)f * 0xD6E8FEB86659FD93ull);
}

/*
** Compressible test data (-text): sentences drawn from this set by the
** splitmix64 stream.  lz4 finds long matches in it, as in real prose, where
** the plain test data's random bytes give it nothing to find.
*/
static const char *const azSentence[16] = {
  "The quick brown fox jumps over the lazy dog. ",
  "A page holds the records of its samples back to back. ",
  "Every extent is checked against its checksum when the reader verifies. ",
  "Compressed values are decompressed into the reader's own buffer. ",
  "Writers fill their pages in parallel and never wait for each other. ",
  "The catalog records the schema, the pages and every sample. ",
  "A sample larger than a page becomes a run of contiguous pages. ",
  "Read-ahead follows the order that the consumer gave it. ",
  "Nothing is promised about bytes that were damaged on the disk. ",
  "An epoch visits every sample once, in an order fixed by its seed. ",
  "The header names the page size and where the first page begins. ",
  "Zero-copy reads return pointers into the map of the data file. ",
  "A value that does not shrink is stored exactly as it was given. ",
  "The commit point moves only after the data file has been synced. ",
  "Ids are reserved at once, so two writers never share a sample. ",
  "Small fields of one sample lie next to each other on the page. ",
};

typedef struct TextGen TextGen;
struct TextGen {
  uint64_t s;                  /* the splitmix64 state choosing sentences */
  const char *z;               /* the rest of the current sentence */
};

/* The next byte of the text stream T. */
static unsigned char textNext(TextGen *t){
  if( *t->z == 0 ) t->z = azSentence[splitmix64(&t->s) % 16];
  return (unsigned char)*t->z++;
}

/*
** Fill BUF with the LEN test bytes of (SEED, ID): the first 8 bytes are ID
** little-endian (fewer if LEN < 8), the rest a splitmix64 stream seeded by
** a hash of (SEED, ID, LEN), or with TEXT the sentences that stream picks.
*/
static void testdataFill(unsigned char *buf, size_t len, uint64_t seed, int64_t id, int text){
  size_t i = 0;
  uint64_t s = mix3(seed, (uint64_t)id, (uint64_t)len);
  for(; i < len && i < 8; i++) buf[i] = (unsigned char)((uint64_t)id >> (8*i));
  if( text ){
    TextGen t = { s, "" };
    for(; i < len; i++) buf[i] = textNext(&t);
    return;
  }
  while( i + 8 <= len ){
    uint64_t v = splitmix64(&s);
    memcpy(buf + i, &v, 8);
    i += 8;
  }
  if( i < len ){
    uint64_t v = splitmix64(&s);
    memcpy(buf + i, &v, len - i);
  }
}

/* The offset of the first byte of BUF (LEN bytes) that differs from the
** test data of (SEED, ID, TEXT), or -1 if none does. */
static int64_t testdataCheck(const unsigned char *buf, size_t len, uint64_t seed,
                             int64_t id, int text){
  size_t i = 0;
  uint64_t s = mix3(seed, (uint64_t)id, (uint64_t)len);
  for(; i < len && i < 8; i++){
    if( buf[i] != (unsigned char)((uint64_t)id >> (8*i)) ) return (int64_t)i;
  }
  if( text ){
    TextGen t = { s, "" };
    for(; i < len; i++){
      if( buf[i] != textNext(&t) ) return (int64_t)i;
    }
    return -1;
  }
  while( i < len ){
    uint64_t v = splitmix64(&s);
    unsigned char b[8];
    size_t k, n = len - i < 8 ? len - i : 8;
    memcpy(b, &v, 8);
    for(k = 0; k < n; k++){
      if( buf[i+k] != b[k] ) return (int64_t)(i + k);
    }
    i += n;
  }
  return -1;
}


/* ------------------------------------------------------------------ */
/* Ingest and verify                                                   */
/* ------------------------------------------------------------------ */

/* The size of bytes/text field F of the sample with key KEY; -1 means the
** field is left out. */
static int64_t genSize(const Gen *g, int64_t key, int f){
  if( g->nSize > 0 ){
    uint64_t i = ((uint64_t)key + (uint64_t)f) % (uint64_t)g->nSize;
    return g->aSize[i];
  }
  if( g->maxSz <= g->minSz ) return (int64_t)g->minSz;
  return (int64_t)(g->minSz + mix3(g->seed ^ 0x5A5A, (uint64_t)key, (uint64_t)f)
                               % (g->maxSz - g->minSz + 1));
}

static int64_t genInt(const Gen *g, int64_t key, int f){
  if( g->autoKey && f == g->keyField ) return key;
  return (int64_t)mix3(g->seed ^ 0x1111, (uint64_t)key, (uint64_t)f);
}

static double genReal(const Gen *g, int64_t key, int f){
  uint64_t h = mix3(g->seed ^ 0x2222, (uint64_t)key, (uint64_t)f);
  /* An exactly representable value of either sign. */
  return (double)((int64_t)(h >> 11) - ((int64_t)1 << 52)) / 1024.0;
}

/* Parse the options common to ingest and verify into G.  Returns TCL_OK;
** unknown options are left for the caller via *pUnknown. */
int genSetup(Tcl_Interp *interp, pagedb *db, Gen *g){
  int i;
  g->nField = pagedb_field_count(db);
  g->keyField = -1;
  for(i = 0; i < g->nField && i < PAGEDB_MAX_FIELDS; i++){
    g->aType[i] = pagedb_field_type(db, i);
    g->aTok8[i] = 0;
    if( g->aType[i] == PAGEDB_TENSOR ){
      int dt, nd;
      int64_t dims[PAGEDB_TENSOR_MAX_DIMS];
      if( pagedb_field_tensor(db, i, &dt, &nd, dims) == PAGEDB_OK && dt == PAGEDB_DT_UINT8 && nd == 1
       && dims[0] == PAGEDB_DIM_VAR ){
        g->aType[i] = PAGEDB_BYTES;
        g->aTok8[i] = 1;
      }
    }
    if( g->keyField < 0 && g->aType[i] == PAGEDB_INT ) g->keyField = i;
  }
  if( g->autoKey && g->keyField < 0 ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj(
        "-auto needs an int field to hold each sample's key", -1));
    return TCL_ERROR;
  }
  if( g->nSize == 0 && g->maxSz < g->minSz ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj("-max is below -min", -1));
    return TCL_ERROR;
  }
  return TCL_OK;
}

/* Record the first error of a job (formatted like pdbError). */
void jobFail(Job *job, int rc, const char *zFmt, ...){
  va_list ap;
  char buf[1024];
  va_start(ap, zFmt);
  vsnprintf(buf, sizeof(buf), zFmt, ap);
  va_end(ap);
  pthread_mutex_lock(&job->mutex);
  if( job->zErr == 0 ){
    size_t n = strlen(buf) + 64;
    job->zErr = malloc(n);
    if( job->zErr ){
      if( rc ) snprintf(job->zErr, n, "%s: %s", pagedb_errname(rc), buf);
      else snprintf(job->zErr, n, "%s", buf);
    }
    job->rc = rc ? rc : PAGEDB_ERROR;
  }
  pthread_mutex_unlock(&job->mutex);
  atomic_store(&job->stop, 1);
}

/* Write all of Z to FD. */
static void writeAll(int fd, const char *z, size_t n){
  while( n > 0 ){
    ssize_t k = write(fd, z, n);
    if( k < 0 ){
      if( errno == EINTR ) continue;
      return;
    }
    z += k;
    n -= (size_t)k;
  }
}

/* Commit and, on success, report "committed N" on the progress fd. */
static int jobCommit(Job *job, int t){
  int rc = pagedb_commit(job->db);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (commit from ingest thread %d)", pagedb_errmsg(job->db), t);
    return rc;
  }
  if( job->progressFd >= 0 ){
    char line[64];
    int n;
    pthread_mutex_lock(&job->mutex);
    n = snprintf(line, sizeof(line), "committed %lld\n",
                 (long long)pagedb_count(job->db));
    writeAll(job->progressFd, line, (size_t)n);
    pthread_mutex_unlock(&job->mutex);
  }
  return rc;
}

/* Write one sample with key KEY through W.  Returns PAGEDB_OK, or
** PAGEDB_CONSTRAINT (left to the caller when CONTEND), or another error
** (already recorded with jobFail). */
int ingestOne(Job *job, int t, pagedb_writer *w, int64_t key,
              unsigned char **pBuf, size_t *pnBuf){
  const Gen *g = &job->g;
  int64_t id;
  int f, rc;
  rc = pagedb_sample_begin(w, g->autoKey ? PAGEDB_AUTO_ID : key);
  if( rc != PAGEDB_OK ){
    if( rc == PAGEDB_CONSTRAINT && job->contend ) return rc;
    jobFail(job, rc, "%s (ingest thread %d, sample_begin of key %lld)",
            pagedb_writer_errmsg(w), t, (long long)key);
    return rc;
  }
  for(f = 0; f < g->nField; f++){
    const char *what = "put";
    if( g->nGiven > 0 && f >= g->nGiven ) continue;
    switch( g->aType[f] ){
      case PAGEDB_BYTES:
      case PAGEDB_TEXT: {
        int64_t sz = genSize(g, key, f);
        if( sz < 0 ){ rc = PAGEDB_OK; break; }
        if( (size_t)sz > *pnBuf ){
          unsigned char *p = realloc(*pBuf, (size_t)sz);
          if( p == 0 ){
            jobFail(job, PAGEDB_NOMEM, "test buffer of %lld bytes", (long long)sz);
            return PAGEDB_NOMEM;
          }
          *pBuf = p;
          *pnBuf = (size_t)sz;
        }
        testdataFill(*pBuf, (size_t)sz, fieldSeed(g->seed, f), key, g->text);
        if( g->aTok8[f] ){
          int64_t shape[1] = { sz };
          rc = pagedb_put_tensor(w, f, PAGEDB_DT_UINT8, 1, shape, *pBuf, (size_t)sz);
        }else{
          rc = pagedb_put(w, f, *pBuf, (size_t)sz);
        }
        break;
      }
      case PAGEDB_INT:
        what = "put_int";
        rc = pagedb_put_int(w, f, genInt(g, key, f));
        break;
      case PAGEDB_REAL:
        what = "put_real";
        rc = pagedb_put_real(w, f, genReal(g, key, f));
        break;
      default:
        rc = PAGEDB_OK;
        break;
    }
    if( rc != PAGEDB_OK ){
      jobFail(job, rc, "%s (ingest thread %d, %s of key %lld field %d)",
              pagedb_writer_errmsg(w), t, what, (long long)key, f);
      return rc;
    }
  }
  rc = pagedb_sample_end(w, &id);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (ingest thread %d, sample_end of key %lld)",
            pagedb_writer_errmsg(w), t, (long long)key);
    return rc;
  }
  if( !g->autoKey && id != key ){
    jobFail(job, PAGEDB_ERROR, "sample_end returned id %lld for sample %lld",
            (long long)id, (long long)key);
    return PAGEDB_ERROR;
  }
  return PAGEDB_OK;
}

static void *ingestThread(void *arg){
  JobThread *jt = (JobThread *)arg;
  Job *job = jt->job;
  pagedb_writer *w = 0;
  unsigned char *buf = 0;
  size_t nBuf = 0;
  int64_t k, nMine = 0;
  int rc;

  rc = pagedb_writer_open(job->db, &w);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (ingest thread %d, writer_open)", pagedb_errmsg(job->db), jt->t);
    return 0;
  }
  for(k = 0; k < job->nCount && !atomic_load(&job->stop); k++){
    int64_t kk;
    if( job->contend ){
      /* Every thread tries every key, starting at a different place. */
      kk = (k + (job->nCount * jt->t) / job->nThread) % job->nCount;
    }else{
      kk = k * job->nThread + jt->t;
      if( kk >= job->nCount ) break;
    }
    rc = ingestOne(job, jt->t, w, job->iStart + kk, &buf, &nBuf);
    if( rc == PAGEDB_CONSTRAINT && job->contend ){
      atomic_fetch_add(&job->nDup, 1);
      continue;
    }
    if( rc != PAGEDB_OK ) break;
    nMine++;
    if( job->flushEvery > 0 && nMine % job->flushEvery == 0 ){
      rc = pagedb_writer_flush(w);
      if( rc != PAGEDB_OK ){
        jobFail(job, rc, "%s (ingest thread %d, writer_flush)",
                pagedb_writer_errmsg(w), jt->t);
        break;
      }
    }
    {
      long long d = atomic_fetch_add(&job->nDone, 1) + 1;
      if( job->commitEvery > 0 && d % job->commitEvery == 0 ){
        if( jobCommit(job, jt->t) != PAGEDB_OK ) break;
      }
    }
  }
  rc = pagedb_writer_close(w);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (ingest thread %d, writer_close)", pagedb_errmsg(job->db), jt->t);
  }
  free(buf);
  return 0;
}

/*
** Check every field of sample ID against what ingest writes for it.
** Returns 0 if it is intact, -1 after recording a failure with jobFail(),
** or 1 if ALLOWMISSING and the sample is not (yet) visible: its first
** field reads PAGEDB_NOTFOUND (the first field must not be left out then).
*/
/* -fields: field F of sample ID must have no value (the sample was written
** before F was added).  0 if so, else -1 after jobFail. */
static int verifyAbsent(Job *job, pagedb_reader *r, int64_t id, int f){
  const void *p;
  size_t n;
  int64_t v;
  double d;
  int rc;
  switch( job->g.aType[f] ){
    case PAGEDB_INT: rc = pagedb_read_int(r, id, f, &v); break;
    case PAGEDB_REAL: rc = pagedb_read_real(r, id, f, &d); break;
    default: rc = pagedb_read(r, id, f, &p, &n); break;
  }
  if( rc == PAGEDB_NOTFOUND ) return 0;
  jobFail(job, PAGEDB_ERROR, "sample %lld field %d (%s): expected PAGEDB_NOTFOUND (not given "
          "under -fields %d), got %s", (long long)id, f, pagedb_field_name(job->db, f),
          job->g.nGiven, pagedb_errname(rc));
  return -1;
}

int verifyOne(Job *job, pagedb_reader *r, int64_t id, int allowMissing,
              unsigned char **pBuf, size_t *pnBuf){
  const Gen *g = &job->g;
  unsigned char *buf = *pBuf;
  size_t nBuf = *pnBuf;
  int64_t key = id;
  int f, rc;
  if( g->autoKey ){
    rc = pagedb_read_int(r, id, g->keyField, &key);
    if( rc == PAGEDB_NOTFOUND && allowMissing ) return 1;
    if( rc != PAGEDB_OK ){
      jobFail(job, rc, "%s (verify: sample %lld key field %d)",
              pagedb_reader_errmsg(r), (long long)id, g->keyField);
      return -1;
    }
  }else if( allowMissing && g->nField > 0 ){
    const void *p;
    size_t n;
    int64_t v;
    double d;
    switch( g->aType[0] ){
      case PAGEDB_INT: rc = pagedb_read_int(r, id, 0, &v); break;
      case PAGEDB_REAL: rc = pagedb_read_real(r, id, 0, &d); break;
      default: rc = pagedb_read(r, id, 0, &p, &n); break;
    }
    if( rc == PAGEDB_NOTFOUND ) return 1;
  }
  for(f = 0; f < g->nField; f++){
    if( g->nGiven > 0 && f >= g->nGiven ){
      if( verifyAbsent(job, r, id, f) ) return -1;
      continue;
    }
    switch( g->aType[f] ){
      case PAGEDB_BYTES:
      case PAGEDB_TEXT: {
        int64_t sz = genSize(g, key, f);
        const void *p = 0;
        size_t n = 0;
        int64_t bad;
        if( job->useInto ){
          size_t want = sz < 0 ? 16 : (size_t)sz;
          if( want > nBuf || buf == 0 ){
            unsigned char *q = realloc(buf, want ? want : 1);
            if( q == 0 ){
              jobFail(job, PAGEDB_NOMEM, "verify buffer");
              return -1;
            }
            *pBuf = buf = q;
            *pnBuf = nBuf = want;
          }
          rc = pagedb_read_into(r, id, f, buf, want, &n);
          p = buf;
        }else{
          rc = pagedb_read(r, id, f, &p, &n);
        }
        if( sz < 0 ){
          if( rc != PAGEDB_NOTFOUND ){
            jobFail(job, PAGEDB_ERROR, "sample %lld field %d (%s): expected "
                    "PAGEDB_NOTFOUND (field left out), got %s",
                    (long long)id, f, pagedb_field_name(job->db, f), pagedb_errname(rc));
            return -1;
          }
          break;
        }
        if( rc != PAGEDB_OK ){
          jobFail(job, rc, "%s (verify: sample %lld field %d %s)",
                  pagedb_reader_errmsg(r), (long long)id, f,
                  pagedb_field_name(job->db, f));
          return -1;
        }
        if( (int64_t)n != sz ){
          jobFail(job, PAGEDB_ERROR, "sample %lld field %d (%s): size %llu, expected %lld",
                  (long long)id, f, pagedb_field_name(job->db, f),
                  (unsigned long long)n, (long long)sz);
          return -1;
        }
        if( n > 0 && p == 0 ){
          jobFail(job, PAGEDB_ERROR, "sample %lld field %d: NULL data", (long long)id, f);
          return -1;
        }
        bad = testdataCheck((const unsigned char *)p, n, fieldSeed(g->seed, f), key, g->text);
        if( bad >= 0 ){
          jobFail(job, PAGEDB_ERROR, "sample %lld field %d (%s): content differs at "
                  "byte %lld of %llu", (long long)id, f, pagedb_field_name(job->db, f),
                  (long long)bad, (unsigned long long)n);
          return -1;
        }
        break;
      }
      case PAGEDB_INT: {
        int64_t v = 0;
        rc = pagedb_read_int(r, id, f, &v);
        if( rc != PAGEDB_OK ){
          jobFail(job, rc, "%s (verify: sample %lld field %d)",
                  pagedb_reader_errmsg(r), (long long)id, f);
          return -1;
        }
        if( v != genInt(g, key, f) ){
          jobFail(job, PAGEDB_ERROR, "sample %lld field %d (%s): int %lld, expected %lld",
                  (long long)id, f, pagedb_field_name(job->db, f), (long long)v,
                  (long long)genInt(g, key, f));
          return -1;
        }
        break;
      }
      case PAGEDB_REAL: {
        double v = 0;
        rc = pagedb_read_real(r, id, f, &v);
        if( rc != PAGEDB_OK ){
          jobFail(job, rc, "%s (verify: sample %lld field %d)",
                  pagedb_reader_errmsg(r), (long long)id, f);
          return -1;
        }
        if( v != genReal(g, key, f) ){
          jobFail(job, PAGEDB_ERROR, "sample %lld field %d (%s): real %.17g, expected %.17g",
                  (long long)id, f, pagedb_field_name(job->db, f), v, genReal(g, key, f));
          return -1;
        }
        break;
      }
      default:
        break;
    }
  }
  return 0;
}

static void *verifyThread(void *arg){
  JobThread *jt = (JobThread *)arg;
  Job *job = jt->job;
  pagedb_reader *r = 0;
  unsigned char *buf = 0;
  size_t nBuf = 0;
  int64_t i;
  int rc;

  /* -mode mixed: zero-copy and copy readers side by side, thread by thread. */
  int mode = job->mixed ? (jt->t % 2 ? PAGEDB_READ_COPY : PAGEDB_READ_MMAP) | (job->readMode & PAGEDB_READ_VERIFY)
                        : job->readMode;
  rc = pagedb_reader_open(job->db, mode, &r);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (verify thread %d, reader_open)", pagedb_errmsg(job->db), jt->t);
    return 0;
  }
  for(i = jt->t; i < job->nId && !atomic_load(&job->stop); i += job->nThread){
    if( verifyOne(job, r, job->aId[i], 0, &buf, &nBuf) != 0 ) break;
    atomic_fetch_add(&job->nDone, 1);
    /* A zero-copy reader that gives its pages back keeps RSS bounded. */
    if( job->dontneed && (i / job->nThread) % job->dontneed == job->dontneed - 1 ){
      rc = pagedb_advise(r, PAGEDB_ADVISE_DONTNEED);
      if( rc != PAGEDB_OK ){
        jobFail(job, rc, "%s (verify: pagedb_advise DONTNEED)", pagedb_reader_errmsg(r));
        break;
      }
    }
  }
  pagedb_reader_close(r);
  free(buf);
  return 0;
}

/*
** A reader thread that runs beside ingest (-readers N): until the writers
** are done, read random keys of the ingest range; a sample that is visible
** must be intact.  Counts the samples found in job->nSeen.
*/
static void *concurrentReaderThread(void *arg){
  JobThread *jt = (JobThread *)arg;
  Job *job = jt->job;
  pagedb_reader *r = 0;
  unsigned char *buf = 0;
  size_t nBuf = 0;
  uint64_t s = (uint64_t)jt->t * 7919 + job->g.seed;
  int rc;

  rc = pagedb_reader_open(job->db, job->readMode, &r);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (concurrent reader %d, reader_open)", pagedb_errmsg(job->db), jt->t);
    return 0;
  }
  while( !atomic_load(&job->stop) && !atomic_load(&job->writersDone) ){
    int64_t key = job->iStart + (int64_t)(splitmix64(&s) % (uint64_t)(job->nCount ? job->nCount : 1));
    int k = verifyOne(job, r, key, 1, &buf, &nBuf);
    if( k < 0 ) break;
    if( k == 0 ) atomic_fetch_add(&job->nSeen, 1);
  }
  pagedb_reader_close(r);
  free(buf);
  return 0;
}

/* Run NTHREAD threads of XFUNC over JOB, and beside them JOB->nReader
** threads of XREADER (if not NULL), which are told to stop when every XFUNC
** thread has ended.  Returns TCL_OK or an error in the interpreter. */
int jobRun(Tcl_Interp *interp, Job *job, void *(*xFunc)(void *),
           void *(*xReader)(void *)){
  JobThread *aT;
  int i, nStarted = 0, nR = xReader ? job->nReader : 0, nRStarted = 0;
  aT = calloc((size_t)(job->nThread + nR), sizeof(JobThread));
  if( aT == 0 ) return pdbError(interp, PAGEDB_NOMEM, "out of memory");
  for(i = 0; i < nR; i++){
    JobThread *t = &aT[job->nThread + i];
    t->job = job;
    t->t = i;
    if( pthread_create(&t->tid, 0, xReader, t) != 0 ){
      jobFail(job, PAGEDB_ERROR, "pthread_create failed: %s", strerror(errno));
      break;
    }
    nRStarted++;
  }
  for(i = 0; i < job->nThread; i++){
    aT[i].job = job;
    aT[i].t = i;
    if( pthread_create(&aT[i].tid, 0, xFunc, &aT[i]) != 0 ){
      jobFail(job, PAGEDB_ERROR, "pthread_create failed: %s", strerror(errno));
      break;
    }
    nStarted++;
  }
  for(i = 0; i < nStarted; i++) pthread_join(aT[i].tid, 0);
  atomic_store(&job->writersDone, 1);
  for(i = 0; i < nRStarted; i++) pthread_join(aT[job->nThread + i].tid, 0);
  free(aT);
  return TCL_OK;
}

void jobFree(Job *job){
  free(job->zErr);
  free(job->g.aSize);
  free(job->aId);
  pthread_mutex_destroy(&job->mutex);
}

/* Parse one option shared by ingest and verify.  Returns 1 if handled, 0
** if not known, -1 on error. */
int jobOption(Tcl_Interp *interp, Job *job, const char *z, Tcl_Obj *v){
  Tcl_WideInt w;
  if( strcmp(z, "-threads") == 0 ){
    if( Tcl_GetWideIntFromObj(interp, v, &w) ) return -1;
    if( w < 1 || w > 256 ){
      Tcl_SetObjResult(interp, Tcl_NewStringObj("-threads must be 1..256", -1));
      return -1;
    }
    job->nThread = (int)w;
  }else if( strcmp(z, "-seed") == 0 ){
    if( Tcl_GetWideIntFromObj(interp, v, &w) ) return -1;
    job->g.seed = (uint64_t)w;
  }else if( strcmp(z, "-min") == 0 ){
    if( Tcl_GetWideIntFromObj(interp, v, &w) ) return -1;
    job->g.minSz = (uint64_t)w;
  }else if( strcmp(z, "-max") == 0 ){
    if( Tcl_GetWideIntFromObj(interp, v, &w) ) return -1;
    job->g.maxSz = (uint64_t)w;
  }else if( strcmp(z, "-sizes") == 0 ){
    Tcl_Obj **a;
    int n, i;
    if( Tcl_ListObjGetElements(interp, v, &n, &a) ) return -1;
    free(job->g.aSize);
    job->g.aSize = calloc((size_t)(n ? n : 1), sizeof(int64_t));
    job->g.nSize = n;
    for(i = 0; i < n; i++){
      if( Tcl_GetWideIntFromObj(interp, a[i], &w) ) return -1;
      job->g.aSize[i] = (int64_t)w;
    }
  }else if( strcmp(z, "-fields") == 0 ){
    if( Tcl_GetWideIntFromObj(interp, v, &w) ) return -1;
    if( w < 1 || w > PAGEDB_MAX_FIELDS ){
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("-fields must be 1..%d", PAGEDB_MAX_FIELDS));
      return -1;
    }
    job->g.nGiven = (int)w;
  }else{
    return 0;
  }
  return 1;
}

/* The number of ids in the catalog query's result. */
typedef struct IdList IdList;
struct IdList { int64_t *a; int64_t n, nAlloc; int oom; };

static int idListRow(void *ctx, int ncol, char **vals, char **names){
  IdList *p = (IdList *)ctx;
  if( ncol < 1 || vals[0] == 0 ) return 0;
  if( p->n >= p->nAlloc ){
    int64_t nNew = p->nAlloc ? p->nAlloc * 2 : 1024;
    int64_t *a = realloc(p->a, (size_t)nNew * sizeof(int64_t));
    if( a == 0 ){ p->oom = 1; return 1; }
    p->a = a;
    p->nAlloc = nNew;
  }
  p->a[p->n++] = strtoll(vals[0], 0, 10);
  return 0;
}

/* DB ingest ?options? */
int dbIngest(Tcl_Interp *interp, pagedb *db, int objc, Tcl_Obj *const objv[]){
  Job job;
  const char *zSeenVar = 0;
  int i, rc = TCL_OK;
  memset(&job, 0, sizeof(job));
  pthread_mutex_init(&job.mutex, 0);
  job.db = db;
  job.nThread = 1;
  job.nCount = 100;
  job.progressFd = -1;
  job.readMode = PAGEDB_READ_MMAP;
  job.g.minSz = 0;
  job.g.maxSz = 1000;
  for(i = 2; i < objc; i++){
    const char *z = Tcl_GetString(objv[i]);
    Tcl_WideInt w;
    int k;
    if( strcmp(z, "-auto") == 0 ){ job.g.autoKey = 1; continue; }
    if( strcmp(z, "-contend") == 0 ){ job.contend = 1; continue; }
    if( strcmp(z, "-text") == 0 ){ job.g.text = 1; continue; }
    if( i + 1 >= objc ) goto usage;
    k = jobOption(interp, &job, z, objv[i+1]);
    if( k < 0 ){ rc = TCL_ERROR; goto out; }
    if( k > 0 ){ i++; continue; }
    if( strcmp(z, "-progress") == 0 ){
      Tcl_Channel ch;
      ClientData h;
      int mode;
      ch = Tcl_GetChannel(interp, Tcl_GetString(objv[i+1]), &mode);
      if( ch == 0 ){ rc = TCL_ERROR; goto out; }
      Tcl_Flush(ch);
      if( Tcl_GetChannelHandle(ch, TCL_WRITABLE, &h) != TCL_OK ){
        Tcl_SetObjResult(interp, Tcl_NewStringObj("channel has no OS handle", -1));
        rc = TCL_ERROR;
        goto out;
      }
      job.progressFd = (int)(intptr_t)h;
      i++;
      continue;
    }
    if( strcmp(z, "-readmode") == 0 ){
      const char *m = Tcl_GetString(objv[i+1]);
      if( strcmp(m, "mmap") == 0 ) job.readMode = PAGEDB_READ_MMAP;
      else if( strcmp(m, "copy") == 0 ) job.readMode = PAGEDB_READ_COPY;
      else{
        Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad -readmode \"%s\": must be mmap or copy", m));
        rc = TCL_ERROR;
        goto out;
      }
      i++;
      continue;
    }
    if( strcmp(z, "-seenvar") == 0 ){
      zSeenVar = Tcl_GetString(objv[i+1]);
      i++;
      continue;
    }
    if( Tcl_GetWideIntFromObj(interp, objv[i+1], &w) ){ rc = TCL_ERROR; goto out; }
    if( strcmp(z, "-readers") == 0 ){
      if( w < 0 || w > 64 ){
        Tcl_SetObjResult(interp, Tcl_NewStringObj("-readers must be 0..64", -1));
        rc = TCL_ERROR;
        goto out;
      }
      job.nReader = (int)w;
    }
    else if( strcmp(z, "-count") == 0 ) job.nCount = w;
    else if( strcmp(z, "-start") == 0 ) job.iStart = w;
    else if( strcmp(z, "-commitevery") == 0 ) job.commitEvery = w;
    else if( strcmp(z, "-flushevery") == 0 ) job.flushEvery = w;
    else if( strcmp(z, "-progressfd") == 0 ) job.progressFd = (int)w;
    else goto usage;
    i++;
  }
  if( genSetup(interp, db, &job.g) ){ rc = TCL_ERROR; goto out; }
  if( job.g.autoKey && job.contend ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj("-auto and -contend exclude each other", -1));
    rc = TCL_ERROR;
    goto out;
  }
  jobRun(interp, &job, ingestThread, concurrentReaderThread);
  if( job.rc == PAGEDB_OK ) jobCommit(&job, -1);
  if( job.rc != PAGEDB_OK ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj(job.zErr ? job.zErr : "ingest failed", -1));
    Tcl_SetErrorCode(interp, "PAGEDB", pagedb_errname(job.rc), (char *)NULL);
    rc = TCL_ERROR;
    goto out;
  }
  if( zSeenVar && Tcl_SetVar2Ex(interp, zSeenVar, 0,
        Tcl_NewWideIntObj((Tcl_WideInt)atomic_load(&job.nSeen)), TCL_LEAVE_ERR_MSG) == 0 ){
    rc = TCL_ERROR;
    goto out;
  }
  Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)atomic_load(&job.nDone)));
  goto out;

usage:
  Tcl_SetObjResult(interp, Tcl_ObjPrintf(
      "bad option \"%s\": DB ingest ?-threads N? ?-count N? ?-start ID? ?-auto? "
      "?-contend? ?-seed S? ?-min BYTES? ?-max BYTES? ?-sizes LIST? "
      "?-commitevery N? ?-flushevery N? ?-progress CHANNEL? ?-progressfd FD? "
      "?-readers N? ?-readmode mmap|copy? ?-seenvar VAR? ?-text?",
      Tcl_GetString(objv[i])));
  rc = TCL_ERROR;
out:
  jobFree(&job);
  return rc;
}

/* DB verify ?options? */
int dbVerify(Tcl_Interp *interp, pagedb *db, int objc, Tcl_Obj *const objv[]){
  Job job;
  IdList ids;
  const char *zSql = "SELECT id FROM sample ORDER BY id";
  int i, rc = TCL_OK, checksums = 0;
  memset(&job, 0, sizeof(job));
  memset(&ids, 0, sizeof(ids));
  pthread_mutex_init(&job.mutex, 0);
  job.db = db;
  job.nThread = 1;
  job.readMode = PAGEDB_READ_MMAP;
  job.progressFd = -1;
  job.g.minSz = 0;
  job.g.maxSz = 1000;
  for(i = 2; i < objc; i++){
    const char *z = Tcl_GetString(objv[i]);
    int k;
    if( strcmp(z, "-auto") == 0 ){ job.g.autoKey = 1; continue; }
    if( strcmp(z, "-text") == 0 ){ job.g.text = 1; continue; }
    if( strcmp(z, "-checksums") == 0 ){ checksums = 1; continue; }
    if( i + 1 >= objc ) goto usage;
    k = jobOption(interp, &job, z, objv[i+1]);
    if( k < 0 ){ rc = TCL_ERROR; goto out; }
    if( k > 0 ){ i++; continue; }
    if( strcmp(z, "-mode") == 0 ){
      const char *m = Tcl_GetString(objv[i+1]);
      if( strcmp(m, "mmap") == 0 ){ job.readMode = PAGEDB_READ_MMAP; job.useInto = 0; }
      else if( strcmp(m, "copy") == 0 ){ job.readMode = PAGEDB_READ_COPY; job.useInto = 0; }
      else if( strcmp(m, "into") == 0 ){ job.readMode = PAGEDB_READ_COPY; job.useInto = 1; }
      else if( strcmp(m, "mmapinto") == 0 ){ job.readMode = PAGEDB_READ_MMAP; job.useInto = 1; }
      else if( strcmp(m, "mixed") == 0 ){ job.readMode = PAGEDB_READ_MMAP; job.mixed = 1; }
      else{
        Tcl_SetObjResult(interp, Tcl_ObjPrintf(
            "bad -mode \"%s\": must be mmap, copy, into, mmapinto or mixed", m));
        rc = TCL_ERROR;
        goto out;
      }
    }else if( strcmp(z, "-sql") == 0 ){
      zSql = Tcl_GetString(objv[i+1]);
    }else if( strcmp(z, "-dontneed") == 0 ){
      Tcl_WideInt n;
      if( Tcl_GetWideIntFromObj(interp, objv[i+1], &n) != TCL_OK || n < 1 ){ rc = TCL_ERROR; goto out; }
      job.dontneed = n;
    }else{
      goto usage;
    }
    i++;
  }
  if( checksums ) job.readMode |= PAGEDB_READ_VERIFY;
  if( genSetup(interp, db, &job.g) ){ rc = TCL_ERROR; goto out; }
  {
    int src = pagedb_sql(db, zSql, idListRow, &ids);
    if( ids.oom ){ rc = pdbError(interp, PAGEDB_NOMEM, "id list"); goto out; }
    if( src != PAGEDB_OK ){ rc = pdbError(interp, src, pagedb_errmsg(db)); goto out; }
  }
  job.aId = ids.a;
  job.nId = ids.n;
  ids.a = 0;
  jobRun(interp, &job, verifyThread, 0);
  if( job.rc != PAGEDB_OK ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj(job.zErr ? job.zErr : "verify failed", -1));
    Tcl_SetErrorCode(interp, "PAGEDB", pagedb_errname(job.rc), (char *)NULL);
    rc = TCL_ERROR;
    goto out;
  }
  Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)atomic_load(&job.nDone)));
  goto out;

usage:
  Tcl_SetObjResult(interp, Tcl_ObjPrintf(
      "bad option \"%s\": DB verify ?-threads N? ?-mode mmap|copy|into|mmapinto|mixed? "
      "?-auto? ?-seed S? ?-min BYTES? ?-max BYTES? ?-sizes LIST? ?-sql QUERY? ?-dontneed N? "
      "?-text? ?-checksums?",
      Tcl_GetString(objv[i])));
  rc = TCL_ERROR;
out:
  free(ids.a);
  jobFree(&job);
  return rc;
}


/* pagedb_testdata ID LEN ?SEED? ?-text? */
int testdataCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  int64_t id, len, seed = 0;
  int text = 0;
  Tcl_Obj *o;
  unsigned char *buf;
  if( objc >= 4 && strcmp(Tcl_GetString(objv[objc-1]), "-text") == 0 ){
    text = 1;
    objc--;
  }
  if( objc != 3 && objc != 4 ){
    Tcl_WrongNumArgs(interp, 1, objv, "ID LEN ?SEED? ?-text?");
    return TCL_ERROR;
  }
  if( getInt64(interp, objv[1], &id) || getInt64(interp, objv[2], &len) ) return TCL_ERROR;
  if( objc == 4 && getInt64(interp, objv[3], &seed) ) return TCL_ERROR;
  if( len < 0 || len > 0x7fffffff ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj("LEN out of range", -1));
    return TCL_ERROR;
  }
  o = Tcl_NewByteArrayObj(0, 0);
  buf = Tcl_SetByteArrayLength(o, (int)len);
  testdataFill(buf, (size_t)len, (uint64_t)seed, id, text);
  Tcl_SetObjResult(interp, o);
  return TCL_OK;
}
