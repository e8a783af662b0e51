/*
** tclpagedb.c -- the Tcl binding the test suite drives.
**
** Loaded by the scripts in test/ with
**
**     load $::env(PAGEDB_TCLLIB) Tclpagedb
**
** it provides (package pagedb 0.1):
**
**   pagedb DB PATH ?-create? ?-readonly? ?-check? ?-flags N? ?-vfs NAME? ?-pagesize N?
**       Open a dataset (READWRITE unless -readonly; -flags passes raw flags)
**       and create the command DB.  -pagesize calls pagedb_set_page_size.
**       -check opens with PAGEDB_OPEN_READONLY | PAGEDB_OPEN_CHECK (a
**       damaged dataset, for DB check).
**   pagedb_testdata ID LEN ?SEED? ?-text?
**       LEN deterministic bytes, a pure function of (SEED, ID, LEN): ID
**       little-endian, then a splitmix64 stream; with -text, ID and then
**       English sentences from a fixed set of 16 chosen by that stream
**       (compressible data for the codecs: lz4 shrinks 5 KB of it 4-fold,
**       200 KB 15-fold).
**   pagedb_xxh3 BYTES
**       XXH3-64 of BYTES as a signed 64-bit integer: what the catalog's
**       "F:sum" holds for stored bytes.  Absent when xxhash.h is not found.
**   pagedb_errname RC / pagedb_errstr RC / pagedb_version
**   pagedb_check_null
**       pagedb_check on a NULL handle: {CODE NPROBLEMS}, the result's name
**       and what it left in *NPROBLEMS.
**   pagedb_handles
**       The number of live handle commands (DB, writer, reader): tester.tcl
**       checks that a test file leaves none behind.
**   pagedb_faultvfs register|unregister|config|reset|count|hits
**       The "fault" VFS: I/O errors and power loss on demand (see below).
**   pagedb_vfs_find ?NAME? / pagedb_vfs_misuse
**       The VFS registry: a name lookup; bad registrations' results.
**
**   DB close | field_add NAME TYPE ?CODEC? | field_index NAME | fields |
**      count | pages | page_size | set_page_size N | commit | errmsg |
**      path | catalog_path | sql SQL | sql_update SQL | writer CMD | reader CMD ?-mmap|-copy|N? ?-verify? |
**      ingest ?OPTIONS? | verify ?OPTIONS? | stats | field_stats FIELD |
**      delete ID | vacuum ?DEST? ?-page-size N? |
**          pagedb_delete; pagedb_vacuum into DEST, or in place without it
**          (-page-size 0 or absent: keep the page size)
**      attach OTHER ?-keep|-offset N|-after|-policy N?
**          pagedb_attach (default -keep): returns the number attached;
**          -policy passes a raw policy number, for misuse tests
**      check ?-quick? ?-flags N?
**          pagedb_check (-quick: PAGEDB_CHECK_QUICK; -flags raw flags): returns
**          {NPROBLEMS {PROBLEM ...}}, each PROBLEM {PAGE ID FIELD WHAT} as
**          reported (-1 where not about one), the final "more problems"
**          note included; {0 {}} for a sound dataset.  Failures other
**          than PAGEDB_CORRUPT raise the usual error.
**   WRITER begin ?ID? | put FIELD DATA | put_null FIELD | put_huge FIELD N |
**      put_int FIELD V | put_real FIELD V | end | cancel | flush | errmsg | close
**   READER read ID FIELD | size ID FIELD | read_into ID FIELD CAP ?VAR? |
**      read_int ID FIELD | read_real ID FIELD | read_batch IDLIST FIELD |
**      prefetch IDLIST FIELD WINDOW |
**      advise normal|sequential|random|willneed|dontneed | errmsg | close
**
** TYPE is bytes|text|int|real or a number, CODEC none|lz4|lz4hc with an
** optional :LEVEL, or a number,
** FIELD a number (passed through even when out of range) or a name (-1
** when unknown, so that the engine reports PAGEDB_RANGE).
**
** Every failing call raises a Tcl error whose message is
** "PAGEDB_NAME: <errmsg>" and whose errorCode is {PAGEDB PAGEDB_NAME};
** read_into's PAGEDB_TOOBIG message ends with "(size N)".
**
** DB stats returns pagedb_stats as a dict whose keys are the fields of
** pagedb_stat (pages runs multipage_runs samples bytes_used bytes_stored
** bytes_raw bytes_dead bytes_header bytes_waste moved fill_hist io_reads
** io_read_bytes io_writes io_write_bytes io_syncs), fill_hist a list of 10;
** DB field_stats FIELD a dict of pagedb_field_stat (values compressed
** bytes_stored bytes_raw).
**
** DB ingest and DB verify run pthreads in C (each with its own writer or
** reader) and generate or check the data with the same functions as
** pagedb_testdata, so a script ingests with some parameters and verifies
** later (even in another process, after a crash) with the same ones:
**
**   DB ingest ?-threads N? ?-count N? ?-start KEY? ?-auto? ?-contend?
**             ?-seed S? ?-min B? ?-max B? ?-sizes LIST? ?-commitevery N?
**             ?-flushevery N? ?-progress CHANNEL? ?-progressfd FD?
**             ?-readers N? ?-readmode mmap|copy? ?-seenvar VAR? ?-text?
**   DB verify ?-threads N? ?-mode mmap|copy|into|mmapinto? ?-auto? ?-seed S?
**             ?-min B? ?-max B? ?-sizes LIST? ?-sql QUERY? ?-dontneed N?
**             ?-text? ?-checksums?
**
** -text makes every BYTES/TEXT value pagedb_testdata's -text bytes;
** verify's -checksums opens its readers with PAGEDB_READ_VERIFY.
**
** -fields N (ingest and verify): only fields 0..N-1 are given; verify
** checks that every later field reads PAGEDB_NOTFOUND (samples written
** before those fields were added).
**
** Handles: a DB command owns its writer and reader commands.  Closing the
** DB (or deleting it) closes the dataset with pagedb_close(), which closes
** the writers and readers in the engine; their commands are then deleted.
** Interpreter deletion closes everything that is still open; at process
** exit an exit handler closes the datasets a script left open.
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

/* ------------------------------------------------------------------ */
/* Deterministic data                                                  */
/* ------------------------------------------------------------------ */

/* One step of splitmix64: advances *S and returns the next output. */
static uint64_t splitmix64(uint64_t *s){
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
/* Errors                                                              */
/* ------------------------------------------------------------------ */

/* Leave "PAGEDB_NAME: MSG" in the interpreter and errorCode
** {PAGEDB PAGEDB_NAME}; return TCL_ERROR. */
int pdbError(Tcl_Interp *interp, int rc, const char *msg){
  const char *name = pagedb_errname(rc);
  Tcl_SetObjResult(interp, Tcl_ObjPrintf("%s: %s", name, msg ? msg : "(no message)"));
  Tcl_SetErrorCode(interp, "PAGEDB", name, (char *)NULL);
  return TCL_ERROR;
}

/* ------------------------------------------------------------------ */
/* Handle objects                                                      */
/* ------------------------------------------------------------------ */

static atomic_int nLiveHandle;   /* DB, writer and reader objects alive */

typedef struct DbObj DbObj;
typedef struct ChildObj ChildObj;

#define CHILD_WRITER 1
#define CHILD_READER 2

struct DbObj {
  pagedb *db;              /* NULL once closed */
  DbObj *pNextDb, *pPrevDb;  /* list of all DbObj (allDb) */
  Tcl_Interp *interp;
  Tcl_Command token;
  ChildObj *pChild;        /* open writers and readers of this DB */
};

struct ChildObj {
  int kind;                /* CHILD_WRITER or CHILD_READER */
  void *h;                 /* pagedb_writer* or pagedb_reader*; NULL when gone */
  DbObj *pDb;              /* NULL once the DB is closed */
  Tcl_Interp *interp;
  Tcl_Command token;
  ChildObj *pNext, *pPrev;
  unsigned char *buf;      /* read_into buffer */
  size_t nBuf;
};

static void childUnlink(ChildObj *c){
  if( c->pDb ){
    if( c->pPrev ) c->pPrev->pNext = c->pNext;
    else c->pDb->pChild = c->pNext;
    if( c->pNext ) c->pNext->pPrev = c->pPrev;
    c->pDb = 0;
    c->pNext = c->pPrev = 0;
  }
}

/* Delete proc of writer and reader commands. */
static void childDelete(ClientData cd){
  ChildObj *c = (ChildObj *)cd;
  if( c->h ){
    if( c->kind == CHILD_WRITER ) pagedb_writer_close((pagedb_writer *)c->h);
    else pagedb_reader_close((pagedb_reader *)c->h);
    c->h = 0;
  }
  childUnlink(c);
  free(c->buf);
  free(c);
  atomic_fetch_sub(&nLiveHandle, 1);
}

/* Close the dataset of P (if open) and orphan its children, deleting their
** commands unless the interpreter is going away.  Returns the result of
** pagedb_close(). */
static int dbCloseAll(DbObj *p){
  int rc = PAGEDB_OK;
  ChildObj *c;
  if( p->db ){
    rc = pagedb_close(p->db);
    p->db = 0;
  }
  while( (c = p->pChild) != 0 ){
    c->h = 0;                 /* pagedb_close() closed it */
    childUnlink(c);
    if( !Tcl_InterpDeleted(c->interp) ){
      Tcl_DeleteCommandFromToken(c->interp, c->token);
    }
  }
  return rc;
}

static int lastCloseRc;   /* result of the last DB close via deletion */
static DbObj *allDb;      /* every DbObj alive (Tcl calls come from one thread) */

static void dbDelete(ClientData cd){
  DbObj *p = (DbObj *)cd;
  lastCloseRc = dbCloseAll(p);
  if( p->pPrevDb ) p->pPrevDb->pNextDb = p->pNextDb;
  else allDb = p->pNextDb;
  if( p->pNextDb ) p->pNextDb->pPrevDb = p->pPrevDb;
  free(p);
  atomic_fetch_sub(&nLiveHandle, 1);
}

/* ------------------------------------------------------------------ */
/* Argument helpers                                                    */
/* ------------------------------------------------------------------ */

static int getInt64(Tcl_Interp *interp, Tcl_Obj *o, int64_t *v){
  Tcl_WideInt w;
  if( Tcl_GetWideIntFromObj(interp, o, &w) != TCL_OK ) return TCL_ERROR;
  *v = (int64_t)w;
  return TCL_OK;
}

/* A field argument: a number (passed through, even out of range) or a
** name (looked up; -1 if there is no such field, so the engine reports it). */
static int getField(pagedb *db, Tcl_Obj *o){
  int i;
  if( Tcl_GetIntFromObj(0, o, &i) == TCL_OK ) return i;
  return pagedb_field_index(db, Tcl_GetString(o));
}

static const char *typeNames[] = {"?", "bytes", "text", "int", "real"};

static const char *typeName(int t){
  return (t >= 1 && t <= 4) ? typeNames[t] : "unknown";
}

/* ------------------------------------------------------------------ */
/* Ingest and verify                                                   */
/* ------------------------------------------------------------------ */

typedef struct Gen Gen;
struct Gen {
  uint64_t seed;
  uint64_t minSz, maxSz;       /* uniform sizes in [minSz, maxSz] */
  int64_t *aSize;              /* or a cyclic list of sizes (-1: omit field) */
  int nSize;
  int autoKey;                 /* keys are in the first INT field, not the id */
  int keyField;                /* that field, or -1 */
  int nField;
  int aType[PAGEDB_MAX_FIELDS];
  int nGiven;                  /* -fields N: only fields below N are given (0: all) */
  int text;                    /* -text: compressible bytes (textNext) */
};

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
static int genSetup(Tcl_Interp *interp, pagedb *db, Gen *g){
  int i;
  g->nField = pagedb_field_count(db);
  g->keyField = -1;
  for(i = 0; i < g->nField && i < PAGEDB_MAX_FIELDS; i++){
    g->aType[i] = pagedb_field_type(db, i);
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

typedef struct Job Job;
struct Job {
  pagedb *db;
  Gen g;
  int nThread;
  int64_t nCount;              /* samples to write (ingest) */
  int64_t iStart;              /* first key */
  int contend;                 /* every thread tries every key */
  int64_t commitEvery;         /* commit after every N samples (0: only at end) */
  int64_t flushEvery;          /* flush each writer after N of its samples */
  int progressFd;              /* -1 or where "committed N" lines go */
  int64_t *aId;                /* verify: ids to check */
  int64_t nId;
  int readMode;                /* verify: PAGEDB_READ_MMAP / _COPY */
  int useInto;                 /* verify: pagedb_read_into */
  int64_t dontneed;            /* verify: PAGEDB_ADVISE_DONTNEED every N samples */
  atomic_llong nDone;          /* samples written or verified */
  atomic_llong nDup;           /* contend: CONSTRAINT skips */
  atomic_int stop;             /* set on the first error */
  atomic_int writersDone;      /* ingest: every writer thread has ended */
  int nReader;                 /* ingest: concurrent reader threads */
  atomic_llong nSeen;          /* ingest: samples the readers found intact */
  pthread_mutex_t mutex;       /* guards rc/zErr and progress output */
  int rc;                      /* first error's code, or PAGEDB_OK */
  char *zErr;                  /* first error's message (malloc) */
};

typedef struct JobThread JobThread;
struct JobThread {
  Job *job;
  int t;                       /* thread number */
  pthread_t tid;
};

/* Record the first error of a job (formatted like pdbError). */
static void jobFail(Job *job, int rc, const char *zFmt, ...){
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
static int ingestOne(Job *job, int t, pagedb_writer *w, int64_t key,
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
        rc = pagedb_put(w, f, *pBuf, (size_t)sz);
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

static int verifyOne(Job *job, pagedb_reader *r, int64_t id, int allowMissing,
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

  rc = pagedb_reader_open(job->db, job->readMode, &r);
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
static int jobRun(Tcl_Interp *interp, Job *job, void *(*xFunc)(void *),
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

static void jobFree(Job *job){
  free(job->zErr);
  free(job->g.aSize);
  free(job->aId);
  pthread_mutex_destroy(&job->mutex);
}

/* Parse one option shared by ingest and verify.  Returns 1 if handled, 0
** if not known, -1 on error. */
static int jobOption(Tcl_Interp *interp, Job *job, const char *z, Tcl_Obj *v){
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
static int dbIngest(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[]){
  Job job;
  const char *zSeenVar = 0;
  int i, rc = TCL_OK;
  memset(&job, 0, sizeof(job));
  pthread_mutex_init(&job.mutex, 0);
  job.db = p->db;
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
  if( genSetup(interp, p->db, &job.g) ){ rc = TCL_ERROR; goto out; }
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
static int dbVerify(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[]){
  Job job;
  IdList ids;
  const char *zSql = "SELECT id FROM sample ORDER BY id";
  int i, rc = TCL_OK, checksums = 0;
  memset(&job, 0, sizeof(job));
  memset(&ids, 0, sizeof(ids));
  pthread_mutex_init(&job.mutex, 0);
  job.db = p->db;
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
      else{
        Tcl_SetObjResult(interp, Tcl_ObjPrintf(
            "bad -mode \"%s\": must be mmap, copy, into or mmapinto", m));
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
  if( genSetup(interp, p->db, &job.g) ){ rc = TCL_ERROR; goto out; }
  {
    int src = pagedb_sql(p->db, zSql, idListRow, &ids);
    if( ids.oom ){ rc = pdbError(interp, PAGEDB_NOMEM, "id list"); goto out; }
    if( src != PAGEDB_OK ){ rc = pdbError(interp, src, pagedb_errmsg(p->db)); goto out; }
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
      "bad option \"%s\": DB verify ?-threads N? ?-mode mmap|copy|into|mmapinto? "
      "?-auto? ?-seed S? ?-min BYTES? ?-max BYTES? ?-sizes LIST? ?-sql QUERY? ?-dontneed N? "
      "?-text? ?-checksums?",
      Tcl_GetString(objv[i])));
  rc = TCL_ERROR;
out:
  free(ids.a);
  jobFree(&job);
  return rc;
}

/* ------------------------------------------------------------------ */
/* Writer command                                                      */
/* ------------------------------------------------------------------ */

static int childGone(Tcl_Interp *interp, ChildObj *c){
  if( c->h && c->pDb && c->pDb->db ) return 0;
  Tcl_SetObjResult(interp, Tcl_NewStringObj("handle is closed", -1));
  return 1;
}

static int writerCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  static const char *azSub[] = {
    "begin", "put", "put_int", "put_real", "end", "cancel", "flush", "close",
    "errmsg", "put_null", "put_huge", 0
  };
  enum { W_BEGIN, W_PUT, W_PUT_INT, W_PUT_REAL, W_END, W_CANCEL, W_FLUSH, W_CLOSE,
         W_ERRMSG, W_PUT_NULL, W_PUT_HUGE };
  ChildObj *c = (ChildObj *)cd;
  pagedb_writer *w;
  int iSub, rc = PAGEDB_OK;
  if( objc < 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "SUBCOMMAND ...");
    return TCL_ERROR;
  }
  if( Tcl_GetIndexFromObj(interp, objv[1], azSub, "subcommand", 0, &iSub) ) return TCL_ERROR;
  if( childGone(interp, c) ) return TCL_ERROR;
  w = (pagedb_writer *)c->h;
  switch( iSub ){
    case W_BEGIN: {
      int64_t id = PAGEDB_AUTO_ID;
      if( objc != 2 && objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "?ID?");
        return TCL_ERROR;
      }
      if( objc == 3 && getInt64(interp, objv[2], &id) ) return TCL_ERROR;
      rc = pagedb_sample_begin(w, id);
      break;
    }
    case W_PUT: {
      int n;
      const unsigned char *data;
      if( objc != 4 ){
        Tcl_WrongNumArgs(interp, 2, objv, "FIELD DATA");
        return TCL_ERROR;
      }
      data = Tcl_GetByteArrayFromObj(objv[3], &n);
      rc = pagedb_put(w, getField(c->pDb->db, objv[2]), data, (size_t)n);
      break;
    }
    case W_PUT_NULL: {
      /* put FIELD with DATA NULL and N 0 (allowed by the contract). */
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "FIELD");
        return TCL_ERROR;
      }
      rc = pagedb_put(w, getField(c->pDb->db, objv[2]), 0, 0);
      break;
    }
    case W_PUT_HUGE: {
      /* put FIELD N with N zero bytes from a lazily mapped, never touched
      ** region (tests of PAGEDB_TOOBIG without using the memory). */
      int64_t n;
      void *p;
      if( objc != 4 ){
        Tcl_WrongNumArgs(interp, 2, objv, "FIELD N");
        return TCL_ERROR;
      }
      if( getInt64(interp, objv[3], &n) ) return TCL_ERROR;
      p = mmap(0, (size_t)n, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0);
      if( p == MAP_FAILED ){
        Tcl_SetObjResult(interp, Tcl_ObjPrintf("mmap of %lld bytes: %s",
                                               (long long)n, strerror(errno)));
        return TCL_ERROR;
      }
      rc = pagedb_put(w, getField(c->pDb->db, objv[2]), p, (size_t)n);
      munmap(p, (size_t)n);
      break;
    }
    case W_PUT_INT: {
      int64_t v;
      if( objc != 4 ){
        Tcl_WrongNumArgs(interp, 2, objv, "FIELD VALUE");
        return TCL_ERROR;
      }
      if( getInt64(interp, objv[3], &v) ) return TCL_ERROR;
      rc = pagedb_put_int(w, getField(c->pDb->db, objv[2]), v);
      break;
    }
    case W_PUT_REAL: {
      double v;
      if( objc != 4 ){
        Tcl_WrongNumArgs(interp, 2, objv, "FIELD VALUE");
        return TCL_ERROR;
      }
      if( Tcl_GetDoubleFromObj(interp, objv[3], &v) ) return TCL_ERROR;
      rc = pagedb_put_real(w, getField(c->pDb->db, objv[2]), v);
      break;
    }
    case W_END: {
      int64_t id = -12345;
      if( objc != 2 ){
        Tcl_WrongNumArgs(interp, 2, objv, "");
        return TCL_ERROR;
      }
      rc = pagedb_sample_end(w, &id);
      if( rc == PAGEDB_OK ){
        Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)id));
        return TCL_OK;
      }
      break;
    }
    case W_CANCEL:
      rc = pagedb_sample_cancel(w);
      break;
    case W_FLUSH:
      rc = pagedb_writer_flush(w);
      break;
    case W_ERRMSG:
      Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_writer_errmsg(w), -1));
      return TCL_OK;
    case W_CLOSE: {
      pagedb *db = c->pDb->db;
      c->h = 0;
      rc = pagedb_writer_close(w);
      Tcl_DeleteCommandFromToken(interp, c->token);
      if( rc != PAGEDB_OK ) return pdbError(interp, rc, pagedb_errmsg(db));
      return TCL_OK;
    }
  }
  if( rc != PAGEDB_OK ) return pdbError(interp, rc, pagedb_writer_errmsg(w));
  return TCL_OK;
}

/* ------------------------------------------------------------------ */
/* Reader command                                                      */
/* ------------------------------------------------------------------ */

static int readerCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  static const char *azSub[] = {
    "read", "read_into", "read_int", "read_real", "close", "errmsg", "size", "read_batch", "advise",
    "prefetch", 0
  };
  enum { R_READ, R_READ_INTO, R_READ_INT, R_READ_REAL, R_CLOSE, R_ERRMSG, R_SIZE, R_BATCH, R_ADVISE,
         R_PREFETCH };
  ChildObj *c = (ChildObj *)cd;
  pagedb_reader *r;
  int iSub, rc = PAGEDB_OK, f;
  int64_t id;
  if( objc < 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "SUBCOMMAND ...");
    return TCL_ERROR;
  }
  if( Tcl_GetIndexFromObj(interp, objv[1], azSub, "subcommand", 0, &iSub) ) return TCL_ERROR;
  if( childGone(interp, c) ) return TCL_ERROR;
  r = (pagedb_reader *)c->h;
  if( iSub == R_CLOSE ){
    pagedb *db = c->pDb->db;
    c->h = 0;
    rc = pagedb_reader_close(r);
    Tcl_DeleteCommandFromToken(interp, c->token);
    if( rc != PAGEDB_OK ) return pdbError(interp, rc, pagedb_errmsg(db));
    return TCL_OK;
  }
  if( iSub == R_ERRMSG ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_reader_errmsg(r), -1));
    return TCL_OK;
  }
  if( iSub == R_ADVISE ){
    static const char *azHint[] = { "normal", "sequential", "random", "willneed", "dontneed", 0 };
    int iHint;
    if( objc != 3 ){
      Tcl_WrongNumArgs(interp, 2, objv, "HINT");
      return TCL_ERROR;
    }
    if( Tcl_GetIndexFromObj(interp, objv[2], azHint, "hint", 0, &iHint) ) return TCL_ERROR;
    rc = pagedb_advise(r, iHint);   /* the table follows PAGEDB_ADVISE_* order */
    return rc == PAGEDB_OK ? TCL_OK : pdbError(interp, rc, pagedb_reader_errmsg(r));
  }
  if( iSub == R_PREFETCH ){
    /* prefetch IDLIST FIELD WINDOW */
    Tcl_Obj **apId;
    int nId, i;
    Tcl_WideInt window;
    if( objc != 5 ){
      Tcl_WrongNumArgs(interp, 2, objv, "IDLIST FIELD WINDOW");
      return TCL_ERROR;
    }
    if( Tcl_ListObjGetElements(interp, objv[2], &nId, &apId) ) return TCL_ERROR;
    if( Tcl_GetWideIntFromObj(interp, objv[4], &window) ) return TCL_ERROR;
    int64_t *aId = (int64_t *)Tcl_Alloc((unsigned)(nId + 1) * sizeof(int64_t));
    for(i = 0; i < nId && rc == PAGEDB_OK; i++){
      if( getInt64(interp, apId[i], &aId[i]) ) rc = -1;
    }
    if( rc == PAGEDB_OK ){
      rc = pagedb_reader_prefetch(r, aId, nId, getField(c->pDb->db, objv[3]), (size_t)window);
    }
    Tcl_Free((char *)aId);
    if( rc == -1 ) return TCL_ERROR;
    return rc == PAGEDB_OK ? TCL_OK : pdbError(interp, rc, pagedb_reader_errmsg(r));
  }
  if( iSub == R_BATCH ){
    /* The byte arrays of every id, in order: one pagedb_read_batch call. */
    Tcl_Obj **apId, *pList;
    int nId, i;
    if( objc != 4 ){
      Tcl_WrongNumArgs(interp, 2, objv, "IDLIST FIELD");
      return TCL_ERROR;
    }
    if( Tcl_ListObjGetElements(interp, objv[2], &nId, &apId) ) return TCL_ERROR;
    int64_t *aId = (int64_t *)Tcl_Alloc((unsigned)(nId + 1) * sizeof(int64_t));
    const void **aData = (const void **)Tcl_Alloc((unsigned)(nId + 1) * sizeof(void *));
    size_t *aSize = (size_t *)Tcl_Alloc((unsigned)(nId + 1) * sizeof(size_t));
    for(i = 0; i < nId && rc == PAGEDB_OK; i++){
      if( getInt64(interp, apId[i], &aId[i]) ) rc = -1;
    }
    if( rc == PAGEDB_OK ){
      rc = pagedb_read_batch(r, aId, nId, getField(c->pDb->db, objv[3]), aData, aSize);
    }
    if( rc == PAGEDB_OK ){
      pList = Tcl_NewListObj(0, 0);
      for(i = 0; i < nId; i++){
        Tcl_ListObjAppendElement(interp, pList, Tcl_NewByteArrayObj(aData[i], (int)aSize[i]));
      }
      Tcl_SetObjResult(interp, pList);
    }
    Tcl_Free((char *)aId);
    Tcl_Free((char *)aData);
    Tcl_Free((char *)aSize);
    if( rc == -1 ) return TCL_ERROR;
    return rc == PAGEDB_OK ? TCL_OK : pdbError(interp, rc, pagedb_reader_errmsg(r));
  }
  if( iSub == R_READ_INTO ){
    if( objc != 5 && objc != 6 ){
      Tcl_WrongNumArgs(interp, 2, objv, "ID FIELD CAP ?VARNAME?");
      return TCL_ERROR;
    }
  }else if( objc != 4 ){
    Tcl_WrongNumArgs(interp, 2, objv, "ID FIELD");
    return TCL_ERROR;
  }
  if( getInt64(interp, objv[2], &id) ) return TCL_ERROR;
  f = getField(c->pDb->db, objv[3]);
  switch( iSub ){
    case R_READ:
    case R_SIZE: {
      const void *p = 0;
      size_t n = 0;
      rc = pagedb_read(r, id, f, &p, &n);
      if( rc != PAGEDB_OK ) break;
      if( iSub == R_SIZE ){
        Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)n));
      }else{
        if( n > 0x7fffffff ){
          Tcl_SetObjResult(interp, Tcl_NewStringObj("value too large for Tcl", -1));
          return TCL_ERROR;
        }
        Tcl_SetObjResult(interp, Tcl_NewByteArrayObj((const unsigned char *)p, (int)n));
      }
      return TCL_OK;
    }
    case R_READ_INTO: {
      int64_t cap;
      size_t n = (size_t)-1;
      if( getInt64(interp, objv[4], &cap) ) return TCL_ERROR;
      if( cap < 0 ){
        Tcl_SetObjResult(interp, Tcl_NewStringObj("CAP must be >= 0", -1));
        return TCL_ERROR;
      }
      if( (size_t)cap > c->nBuf || c->buf == 0 ){
        /* A fresh buffer of exactly CAP bytes, so that an overrun shows
        ** under valgrind or ASan. */
        free(c->buf);
        c->buf = malloc(cap ? (size_t)cap : 1);
        if( c->buf == 0 ) return pdbError(interp, PAGEDB_NOMEM, "read_into buffer");
        c->nBuf = (size_t)cap;
      }
      rc = pagedb_read_into(r, id, f, c->buf, (size_t)cap, &n);
      if( rc == PAGEDB_TOOBIG ){
        Tcl_SetObjResult(interp, Tcl_ObjPrintf("%s: %s (size %lld)", pagedb_errname(rc),
                         pagedb_reader_errmsg(r), (long long)(int64_t)n));
        Tcl_SetErrorCode(interp, "PAGEDB", pagedb_errname(rc), (char *)NULL);
        return TCL_ERROR;
      }
      if( rc != PAGEDB_OK ) break;
      if( (int64_t)n > cap ){
        Tcl_SetObjResult(interp, Tcl_ObjPrintf("read_into returned size %lld above CAP %lld",
                                               (long long)n, (long long)cap));
        return TCL_ERROR;
      }
      if( objc == 6 ){
        if( Tcl_ObjSetVar2(interp, objv[5], 0, Tcl_NewByteArrayObj(c->buf, (int)n),
                           TCL_LEAVE_ERR_MSG) == 0 ) return TCL_ERROR;
      }
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)n));
      return TCL_OK;
    }
    case R_READ_INT: {
      int64_t v = 0;
      rc = pagedb_read_int(r, id, f, &v);
      if( rc != PAGEDB_OK ) break;
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)v));
      return TCL_OK;
    }
    case R_READ_REAL: {
      double v = 0;
      rc = pagedb_read_real(r, id, f, &v);
      if( rc != PAGEDB_OK ) break;
      Tcl_SetObjResult(interp, Tcl_NewDoubleObj(v));
      return TCL_OK;
    }
  }
  return pdbError(interp, rc, pagedb_reader_errmsg(r));
}

/* ------------------------------------------------------------------ */
/* DB command                                                          */
/* ------------------------------------------------------------------ */

static int sqlRow(void *ctx, int ncol, char **vals, char **names){
  Tcl_Obj *pList = (Tcl_Obj *)ctx;
  int i;
  for(i = 0; i < ncol; i++){
    Tcl_ListObjAppendElement(0, pList, Tcl_NewStringObj(vals[i] ? vals[i] : "", -1));
  }
  return 0;
}

static int newChild(Tcl_Interp *interp, DbObj *p, int kind, void *h, Tcl_Obj *name){
  ChildObj *c = calloc(1, sizeof(ChildObj));
  if( c == 0 ){
    if( kind == CHILD_WRITER ) pagedb_writer_close((pagedb_writer *)h);
    else pagedb_reader_close((pagedb_reader *)h);
    return pdbError(interp, PAGEDB_NOMEM, "out of memory");
  }
  c->kind = kind;
  c->h = h;
  c->pDb = p;
  c->interp = interp;
  c->pNext = p->pChild;
  if( p->pChild ) p->pChild->pPrev = c;
  p->pChild = c;
  atomic_fetch_add(&nLiveHandle, 1);
  c->token = Tcl_CreateObjCommand(interp, Tcl_GetString(name),
                                  kind == CHILD_WRITER ? writerCmd : readerCmd,
                                  c, childDelete);
  Tcl_SetObjResult(interp, name);
  return TCL_OK;
}

static int parseType(Tcl_Interp *interp, Tcl_Obj *o, int *pType){
  static const char *az[] = {"bytes", "text", "int", "real", 0};
  int i;
  if( Tcl_GetIntFromObj(0, o, pType) == TCL_OK ) return TCL_OK;
  if( Tcl_GetIndexFromObj(interp, o, az, "type", 0, &i) ) return TCL_ERROR;
  *pType = i + 1;
  return TCL_OK;
}

/* CODEC: a number, or none | lz4 | lz4hc, optionally :LEVEL. */
static int parseCodec(Tcl_Interp *interp, Tcl_Obj *o, int *pCodec){
  static const char *az[] = {"none", "lz4", "lz4hc", 0};
  const char *z = Tcl_GetString(o), *colon = strchr(z, ':');
  int i, level = 0;
  if( Tcl_GetIntFromObj(0, o, pCodec) == TCL_OK ) return TCL_OK;
  Tcl_Obj *kind = Tcl_NewStringObj(z, colon ? (int)(colon - z) : -1);
  Tcl_IncrRefCount(kind);
  int rc = Tcl_GetIndexFromObj(interp, kind, az, "codec", 0, &i);
  Tcl_DecrRefCount(kind);
  if( rc ) return TCL_ERROR;
  if( colon ){
    Tcl_Obj *lv = Tcl_NewStringObj(colon + 1, -1);
    Tcl_IncrRefCount(lv);
    rc = Tcl_GetIntFromObj(interp, lv, &level);
    Tcl_DecrRefCount(lv);
    if( rc ) return TCL_ERROR;
  }
  *pCodec = PAGEDB_CODEC_LEVEL(i, level);
  return TCL_OK;
}

/* The codec's name as DB fields reports it: none, lz4:LEVEL, lz4hc:LEVEL. */
static Tcl_Obj *codecName(int codec){
  switch( PAGEDB_CODEC_KIND(codec) ){
    case PAGEDB_CODEC_NONE: return Tcl_NewStringObj("none", -1);
    case PAGEDB_CODEC_LZ4: return Tcl_ObjPrintf("lz4:%d", PAGEDB_CODEC_LEVEL_OF(codec));
    case PAGEDB_CODEC_LZ4HC: return Tcl_ObjPrintf("lz4hc:%d", PAGEDB_CODEC_LEVEL_OF(codec));
  }
  return Tcl_ObjPrintf("unknown(%d)", codec);
}

/*
** DB order KIND ?-seed S? ?-epoch E? ?-rank R? ?-world W? ?-droplast?
**          ?-length? ?-cap N?
**
** The ids pagedb_order gives (KIND: sequential, random, quasi or a number,
** passed through).  -length returns only the length (IDS NULL); -cap N
** passes an array of N entries instead of the length the first call gave.
*/
/* DB vacuum ?DEST? ?-page-size N?: pagedb_vacuum (DEST NULL when absent). */
static int dbVacuum(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[]){
  const char *zDest = 0;
  int64_t pageSize = 0;
  int i, rc;
  for(i = 2; i < objc; i++){
    const char *z = Tcl_GetString(objv[i]);
    if( strcmp(z, "-page-size") == 0 && i + 1 < objc ){
      if( getInt64(interp, objv[++i], &pageSize) ) return TCL_ERROR;
    }else if( z[0] != '-' && zDest == 0 ){
      zDest = z;
    }else{
      Tcl_WrongNumArgs(interp, 2, objv, "?DEST? ?-page-size N?");
      return TCL_ERROR;
    }
  }
  if( pageSize < 0 ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj("-page-size must be >= 0", -1));
    return TCL_ERROR;
  }
  rc = pagedb_vacuum(p->db, zDest, (size_t)pageSize);
  if( rc != PAGEDB_OK ) return pdbError(interp, rc, pagedb_errmsg(p->db));
  return TCL_OK;
}

static int dbOrder(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[]){
  static const char *azKind[] = {"sequential", "random", "quasi", 0};
  Tcl_WideInt seed = 0, epoch = 0, w;
  int kind, rank = 0, world = 1, lengthOnly = 0, i, rc;
  int64_t n = 0, cap = -1, *a;
  Tcl_Obj *pList;
  if( objc < 3 ){
    Tcl_WrongNumArgs(interp, 2, objv, "KIND ?-seed S? ?-epoch E? ?-rank R? ?-world W? "
                     "?-droplast? ?-length? ?-cap N?");
    return TCL_ERROR;
  }
  if( Tcl_GetIntFromObj(0, objv[2], &kind) != TCL_OK ){
    if( Tcl_GetIndexFromObj(interp, objv[2], azKind, "kind", 0, &kind) ) return TCL_ERROR;
    kind += PAGEDB_ORDER_SEQUENTIAL;
  }
  for(i = 3; i < objc; i++){
    const char *z = Tcl_GetString(objv[i]);
    if( strcmp(z, "-droplast") == 0 ){ kind |= PAGEDB_ORDER_DROP_LAST; continue; }
    if( strcmp(z, "-length") == 0 ){ lengthOnly = 1; continue; }
    if( i + 1 >= objc ){
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("option \"%s\" needs a value", z));
      return TCL_ERROR;
    }
    if( Tcl_GetWideIntFromObj(interp, objv[i+1], &w) ) return TCL_ERROR;
    if( strcmp(z, "-seed") == 0 ) seed = w;
    else if( strcmp(z, "-epoch") == 0 ) epoch = w;
    else if( strcmp(z, "-rank") == 0 ) rank = (int)w;
    else if( strcmp(z, "-world") == 0 ) world = (int)w;
    else if( strcmp(z, "-cap") == 0 ) cap = (int64_t)w;
    else{
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad option \"%s\": must be -seed, -epoch, -rank, "
                       "-world, -droplast, -length or -cap", z));
      return TCL_ERROR;
    }
    i++;
  }
  rc = pagedb_order(p->db, kind, (uint64_t)seed, (uint64_t)epoch, rank, world, 0, &n);
  if( rc != PAGEDB_OK ) return pdbError(interp, rc, pagedb_errmsg(p->db));
  if( lengthOnly ){
    Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)n));
    return TCL_OK;
  }
  if( cap >= 0 ) n = cap;
  a = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
  if( a == 0 ) return pdbError(interp, PAGEDB_NOMEM, "order: out of memory");
  rc = pagedb_order(p->db, kind, (uint64_t)seed, (uint64_t)epoch, rank, world, a, &n);
  if( rc != PAGEDB_OK ){
    free(a);
    return pdbError(interp, rc, pagedb_errmsg(p->db));
  }
  pList = Tcl_NewObj();
  for(i = 0; i < n; i++){
    Tcl_ListObjAppendElement(0, pList, Tcl_NewWideIntObj((Tcl_WideInt)a[i]));
  }
  free(a);
  Tcl_SetObjResult(interp, pList);
  return TCL_OK;
}

/* DB stats / DB field_stats FIELD: the struct as a dict (see the top). */
static int dbStats(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[], int field){
  Tcl_Obj *d = Tcl_NewDictObj();
  int rc, i;
#define STAT_PUT(s, k) Tcl_DictObjPut(0, d, Tcl_NewStringObj(#k, -1), Tcl_NewWideIntObj((Tcl_WideInt)(s).k))
  if( !field ){
    pagedb_stat s;
    if( objc != 2 ){
      Tcl_WrongNumArgs(interp, 2, objv, "");
      return TCL_ERROR;
    }
    rc = pagedb_stats(p->db, &s);
    if( rc != PAGEDB_OK ){
      Tcl_DecrRefCount(d);
      return pdbError(interp, rc, pagedb_errmsg(p->db));
    }
    Tcl_Obj *hist = Tcl_NewListObj(0, 0);
    for(i = 0; i < 10; i++) Tcl_ListObjAppendElement(0, hist, Tcl_NewWideIntObj((Tcl_WideInt)s.fill_hist[i]));
    STAT_PUT(s, pages); STAT_PUT(s, runs); STAT_PUT(s, multipage_runs); STAT_PUT(s, samples);
    STAT_PUT(s, bytes_used); STAT_PUT(s, bytes_stored); STAT_PUT(s, bytes_raw); STAT_PUT(s, bytes_dead);
    STAT_PUT(s, bytes_header); STAT_PUT(s, bytes_waste); STAT_PUT(s, moved);
    Tcl_DictObjPut(0, d, Tcl_NewStringObj("fill_hist", -1), hist);
    STAT_PUT(s, io_reads); STAT_PUT(s, io_read_bytes); STAT_PUT(s, io_writes);
    STAT_PUT(s, io_write_bytes); STAT_PUT(s, io_syncs);
  }else{
    pagedb_field_stat s;
    if( objc != 3 ){
      Tcl_WrongNumArgs(interp, 2, objv, "FIELD");
      return TCL_ERROR;
    }
    rc = pagedb_field_stats(p->db, getField(p->db, objv[2]), &s);
    if( rc != PAGEDB_OK ){
      Tcl_DecrRefCount(d);
      return pdbError(interp, rc, pagedb_errmsg(p->db));
    }
    STAT_PUT(s, values); STAT_PUT(s, compressed); STAT_PUT(s, bytes_stored); STAT_PUT(s, bytes_raw);
  }
#undef STAT_PUT
  Tcl_SetObjResult(interp, d);
  return TCL_OK;
}

/* DB attach OTHER ?-keep|-offset N|-after|-policy N? */
static int dbAttach(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[]){
  int policy = PAGEDB_ATTACH_KEEP, i, rc;
  int64_t offset = 0, n = -1;
  if( objc < 3 ){
    Tcl_WrongNumArgs(interp, 2, objv, "OTHER ?-keep|-offset N|-after|-policy N?");
    return TCL_ERROR;
  }
  for(i = 3; i < objc; i++){
    const char *z = Tcl_GetString(objv[i]);
    if( strcmp(z, "-keep") == 0 ) policy = PAGEDB_ATTACH_KEEP;
    else if( strcmp(z, "-after") == 0 ) policy = PAGEDB_ATTACH_AFTER;
    else if( strcmp(z, "-offset") == 0 && i + 1 < objc ){
      if( getInt64(interp, objv[++i], &offset) ) return TCL_ERROR;
      policy = PAGEDB_ATTACH_OFFSET;
    }else if( strcmp(z, "-policy") == 0 && i + 1 < objc ){
      if( Tcl_GetIntFromObj(interp, objv[++i], &policy) ) return TCL_ERROR;
    }else{
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad option \"%s\": must be -keep, -offset N, "
                       "-after or -policy N", z));
      return TCL_ERROR;
    }
  }
  rc = pagedb_attach(p->db, Tcl_GetString(objv[2]), policy, offset, &n);
  if( rc != PAGEDB_OK ){
    if( n != 0 ) return pdbError(interp, PAGEDB_ERROR, "pagedb_attach failed but set *nattached");
    return pdbError(interp, rc, pagedb_errmsg(p->db));
  }
  Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)n));
  return TCL_OK;
}

/* pagedb_check's callback: append {PAGE ID FIELD WHAT} to the list CTX. */
static void checkProblem(void *ctx, int64_t page, int64_t id, int field, const char *what){
  Tcl_Obj *pList = (Tcl_Obj *)ctx;
  Tcl_Obj *e = Tcl_NewObj();
  Tcl_ListObjAppendElement(0, e, Tcl_NewWideIntObj((Tcl_WideInt)page));
  Tcl_ListObjAppendElement(0, e, Tcl_NewWideIntObj((Tcl_WideInt)id));
  Tcl_ListObjAppendElement(0, e, Tcl_NewIntObj(field));
  Tcl_ListObjAppendElement(0, e, Tcl_NewStringObj(what, -1));
  Tcl_ListObjAppendElement(0, pList, e);
}

/* DB check ?-quick? ?-flags N? */
static int dbCheck(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[]){
  int flags = 0, rc, i;
  int64_t n = -1;
  Tcl_Obj *pList, *pRes;
  for(i = 2; i < objc; i++){
    const char *z = Tcl_GetString(objv[i]);
    if( strcmp(z, "-quick") == 0 ){
      flags |= PAGEDB_CHECK_QUICK;
    }else if( strcmp(z, "-flags") == 0 && i + 1 < objc ){
      /* Raw flags, for misuse tests. */
      if( Tcl_GetIntFromObj(interp, objv[++i], &flags) ) return TCL_ERROR;
    }else{
      Tcl_WrongNumArgs(interp, 2, objv, "?-quick? ?-flags N?");
      return TCL_ERROR;
    }
  }
  pList = Tcl_NewObj();
  Tcl_IncrRefCount(pList);
  rc = pagedb_check(p->db, flags, checkProblem, pList, &n);
  if( rc != PAGEDB_OK && rc != PAGEDB_CORRUPT ){
    Tcl_DecrRefCount(pList);
    return pdbError(interp, rc, pagedb_errmsg(p->db));
  }
  pRes = Tcl_NewObj();
  Tcl_ListObjAppendElement(0, pRes, Tcl_NewWideIntObj((Tcl_WideInt)n));
  Tcl_ListObjAppendElement(0, pRes, pList);
  Tcl_DecrRefCount(pList);
  Tcl_SetObjResult(interp, pRes);
  return TCL_OK;
}

static int dbCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  static const char *azSub[] = {
    "close", "field_add", "field_index", "fields", "count", "pages", "page_size",
    "commit", "errmsg", "sql", "writer", "reader", "ingest", "verify",
    "set_page_size", "path", "catalog_path", "order", "stats", "field_stats", "attach", "check",
    "delete", "vacuum", "sql_update", 0
  };
  enum { D_CLOSE, D_FIELD_ADD, D_FIELD_INDEX, D_FIELDS, D_COUNT, D_PAGES, D_PAGE_SIZE,
         D_COMMIT, D_ERRMSG, D_SQL, D_WRITER, D_READER, D_INGEST, D_VERIFY,
         D_SET_PAGE_SIZE, D_PATH, D_CATALOG_PATH, D_ORDER, D_STATS, D_FIELD_STATS, D_ATTACH, D_CHECK,
         D_DELETE, D_VACUUM, D_SQL_UPDATE };
  DbObj *p = (DbObj *)cd;
  pagedb *db = p->db;
  int iSub, rc = PAGEDB_OK;
  if( objc < 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "SUBCOMMAND ...");
    return TCL_ERROR;
  }
  if( Tcl_GetIndexFromObj(interp, objv[1], azSub, "subcommand", 0, &iSub) ) return TCL_ERROR;
  if( db == 0 ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj("handle is closed", -1));
    return TCL_ERROR;
  }
  switch( iSub ){
    case D_CLOSE: {
      if( objc != 2 ){
        Tcl_WrongNumArgs(interp, 2, objv, "");
        return TCL_ERROR;
      }
      rc = dbCloseAll(p);
      Tcl_DeleteCommandFromToken(interp, p->token);
      if( rc != PAGEDB_OK ) return pdbError(interp, rc, pagedb_errstr(rc));
      return TCL_OK;
    }
    case D_FIELD_ADD: {
      int type, codec = PAGEDB_CODEC_NONE;
      if( objc != 4 && objc != 5 ){
        Tcl_WrongNumArgs(interp, 2, objv, "NAME TYPE ?CODEC?");
        return TCL_ERROR;
      }
      if( parseType(interp, objv[3], &type) ) return TCL_ERROR;
      if( objc == 5 && parseCodec(interp, objv[4], &codec) ) return TCL_ERROR;
      rc = pagedb_field_add(db, Tcl_GetString(objv[2]), type, codec);
      if( rc == PAGEDB_OK ){
        Tcl_SetObjResult(interp, Tcl_NewIntObj(pagedb_field_count(db) - 1));
        return TCL_OK;
      }
      break;
    }
    case D_FIELD_INDEX:
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "NAME");
        return TCL_ERROR;
      }
      Tcl_SetObjResult(interp, Tcl_NewIntObj(pagedb_field_index(db, Tcl_GetString(objv[2]))));
      return TCL_OK;
    case D_FIELDS: {
      Tcl_Obj *pList = Tcl_NewObj();
      int i, n = pagedb_field_count(db);
      for(i = 0; i < n; i++){
        Tcl_Obj *e = Tcl_NewObj();
        const char *zName = pagedb_field_name(db, i);
        int codec = pagedb_field_codec(db, i);
        Tcl_ListObjAppendElement(0, e, Tcl_NewStringObj(zName ? zName : "", -1));
        Tcl_ListObjAppendElement(0, e, Tcl_NewStringObj(typeName(pagedb_field_type(db, i)), -1));
        Tcl_ListObjAppendElement(0, e, codecName(codec));
        Tcl_ListObjAppendElement(0, pList, e);
      }
      Tcl_SetObjResult(interp, pList);
      return TCL_OK;
    }
    case D_COUNT:
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)pagedb_count(db)));
      return TCL_OK;
    case D_PAGES:
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)pagedb_page_count(db)));
      return TCL_OK;
    case D_PAGE_SIZE:
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)pagedb_page_size(db)));
      return TCL_OK;
    case D_SET_PAGE_SIZE: {
      int64_t n;
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "BYTES");
        return TCL_ERROR;
      }
      if( getInt64(interp, objv[2], &n) ) return TCL_ERROR;
      rc = pagedb_set_page_size(db, (size_t)n);
      break;
    }
    case D_COMMIT:
      rc = pagedb_commit(db);
      break;
    case D_ERRMSG:
      Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_errmsg(db), -1));
      return TCL_OK;
    case D_PATH:
      Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_path(db), -1));
      return TCL_OK;
    case D_CATALOG_PATH:
      Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_catalog_path(db), -1));
      return TCL_OK;
    case D_SQL: {
      Tcl_Obj *pList;
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "SQL");
        return TCL_ERROR;
      }
      pList = Tcl_NewObj();
      Tcl_IncrRefCount(pList);
      rc = pagedb_sql(db, Tcl_GetString(objv[2]), sqlRow, pList);
      if( rc == PAGEDB_OK ) Tcl_SetObjResult(interp, pList);
      Tcl_DecrRefCount(pList);
      break;
    }
    case D_SQL_UPDATE: {
      int64_t n = -1;
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "SQL");
        return TCL_ERROR;
      }
      rc = pagedb_sql_update(db, Tcl_GetString(objv[2]), &n);
      if( rc == PAGEDB_OK ) Tcl_SetObjResult(interp, Tcl_NewWideIntObj(n));
      break;
    }
    case D_WRITER: {
      pagedb_writer *w = 0;
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "CMD");
        return TCL_ERROR;
      }
      rc = pagedb_writer_open(db, &w);
      if( rc != PAGEDB_OK ){
        if( w != 0 ){
          return pdbError(interp, PAGEDB_ERROR, "pagedb_writer_open failed but set *w");
        }
        break;
      }
      if( w == 0 ) return pdbError(interp, PAGEDB_ERROR, "pagedb_writer_open: OK but NULL");
      return newChild(interp, p, CHILD_WRITER, w, objv[2]);
    }
    case D_READER: {
      pagedb_reader *r = 0;
      int mode = PAGEDB_READ_MMAP, verify = 0, k;
      if( objc < 3 || objc > 5 ){
        Tcl_WrongNumArgs(interp, 2, objv, "CMD ?-mmap|-copy|N? ?-verify?");
        return TCL_ERROR;
      }
      for(k = 3; k < objc; k++){
        const char *z = Tcl_GetString(objv[k]);
        if( strcmp(z, "-mmap") == 0 ) mode = PAGEDB_READ_MMAP;
        else if( strcmp(z, "-copy") == 0 ) mode = PAGEDB_READ_COPY;
        else if( strcmp(z, "-verify") == 0 ) verify = PAGEDB_READ_VERIFY;
        else if( Tcl_GetIntFromObj(0, objv[k], &mode) != TCL_OK ){
          Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad mode \"%s\": must be -mmap, -copy or -verify", z));
          return TCL_ERROR;
        }
      }
      mode |= verify;
      rc = pagedb_reader_open(db, mode, &r);
      if( rc != PAGEDB_OK ){
        if( r != 0 ){
          return pdbError(interp, PAGEDB_ERROR, "pagedb_reader_open failed but set *r");
        }
        break;
      }
      if( r == 0 ) return pdbError(interp, PAGEDB_ERROR, "pagedb_reader_open: OK but NULL");
      return newChild(interp, p, CHILD_READER, r, objv[2]);
    }
    case D_INGEST:
      return dbIngest(interp, p, objc, objv);
    case D_VERIFY:
      return dbVerify(interp, p, objc, objv);
    case D_ORDER:
      return dbOrder(interp, p, objc, objv);
    case D_DELETE: {
      int64_t id;
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "ID");
        return TCL_ERROR;
      }
      if( getInt64(interp, objv[2], &id) ) return TCL_ERROR;
      rc = pagedb_delete(db, id);
      break;
    }
    case D_VACUUM:
      return dbVacuum(interp, p, objc, objv);
    case D_ATTACH:
      return dbAttach(interp, p, objc, objv);
    case D_CHECK:
      return dbCheck(interp, p, objc, objv);
    case D_STATS:
      return dbStats(interp, p, objc, objv, 0);
    case D_FIELD_STATS:
      return dbStats(interp, p, objc, objv, 1);
  }
  if( rc != PAGEDB_OK ) return pdbError(interp, rc, pagedb_errmsg(db));
  return TCL_OK;
}

/* pagedb_check_null */
static int checkNullCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  int64_t n = 99;
  int rc = pagedb_check(0, 0, checkProblem, 0, &n);
  Tcl_Obj *pRes = Tcl_NewObj();
  (void)cd;
  (void)objc;
  (void)objv;
  Tcl_ListObjAppendElement(0, pRes, Tcl_NewStringObj(pagedb_errname(rc), -1));
  Tcl_ListObjAppendElement(0, pRes, Tcl_NewWideIntObj((Tcl_WideInt)n));
  Tcl_SetObjResult(interp, pRes);
  return TCL_OK;
}

/* pagedb DB PATH ?-create? ?-readonly? ?-vfs NAME? ?-pagesize N? */
static int pagedbOpenCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  int flags = PAGEDB_OPEN_READWRITE;
  const char *zVfs = 0;
  int64_t pageSize = 0;
  pagedb *db = 0;
  DbObj *p;
  int i, rc;
  if( objc < 3 ){
    Tcl_WrongNumArgs(interp, 1, objv,
        "DB PATH ?-create? ?-readonly? ?-check? ?-flags N? ?-vfs NAME? ?-pagesize N?");
    return TCL_ERROR;
  }
  for(i = 3; i < objc; i++){
    const char *z = Tcl_GetString(objv[i]);
    if( strcmp(z, "-create") == 0 ){
      flags |= PAGEDB_OPEN_CREATE;
    }else if( strcmp(z, "-readonly") == 0 ){
      flags = (flags & ~(PAGEDB_OPEN_READWRITE|PAGEDB_OPEN_CREATE)) | PAGEDB_OPEN_READONLY;
    }else if( strcmp(z, "-check") == 0 ){
      flags = (flags & ~(PAGEDB_OPEN_READWRITE|PAGEDB_OPEN_CREATE)) | PAGEDB_OPEN_READONLY
            | PAGEDB_OPEN_CHECK;
    }else if( strcmp(z, "-vfs") == 0 && i + 1 < objc ){
      zVfs = Tcl_GetString(objv[++i]);
    }else if( strcmp(z, "-flags") == 0 && i + 1 < objc ){
      /* Raw flags, for tests of bad flag combinations. */
      if( Tcl_GetIntFromObj(interp, objv[++i], &flags) ) return TCL_ERROR;
    }else if( strcmp(z, "-pagesize") == 0 && i + 1 < objc ){
      if( getInt64(interp, objv[++i], &pageSize) ) return TCL_ERROR;
    }else{
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad option \"%s\": must be -create, "
          "-readonly, -check, -flags N, -vfs NAME or -pagesize N", z));
      return TCL_ERROR;
    }
  }
  rc = pagedb_open(Tcl_GetString(objv[2]), &db, flags, zVfs);
  if( rc != PAGEDB_OK ){
    Tcl_Obj *msg = Tcl_NewStringObj(pagedb_errmsg(db), -1);
    Tcl_IncrRefCount(msg);
    pagedb_close(db);
    pdbError(interp, rc, Tcl_GetString(msg));
    Tcl_DecrRefCount(msg);
    return TCL_ERROR;
  }
  if( db == 0 ) return pdbError(interp, PAGEDB_ERROR, "pagedb_open: OK but NULL handle");
  if( pageSize ){
    rc = pagedb_set_page_size(db, (size_t)pageSize);
    if( rc != PAGEDB_OK ){
      Tcl_Obj *msg = Tcl_NewStringObj(pagedb_errmsg(db), -1);
      Tcl_IncrRefCount(msg);
      pagedb_close(db);
      pdbError(interp, rc, Tcl_GetString(msg));
      Tcl_DecrRefCount(msg);
      return TCL_ERROR;
    }
  }
  p = calloc(1, sizeof(DbObj));
  if( p == 0 ){
    pagedb_close(db);
    return pdbError(interp, PAGEDB_NOMEM, "out of memory");
  }
  p->db = db;
  p->interp = interp;
  p->pNextDb = allDb;
  if( allDb ) allDb->pPrevDb = p;
  allDb = p;
  atomic_fetch_add(&nLiveHandle, 1);
  p->token = Tcl_CreateObjCommand(interp, Tcl_GetString(objv[1]), dbCmd, p, dbDelete);
  Tcl_SetObjResult(interp, objv[1]);
  return TCL_OK;
}

/* pagedb_testdata ID LEN ?SEED? ?-text? */
static int testdataCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
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

#if defined(__has_include)
# if __has_include(<xxhash.h>)
#  define XXH_INLINE_ALL         /* static copies: no link dependency */
#  include <xxhash.h>
#  define HAVE_XXH3 1
# endif
#endif

#ifdef HAVE_XXH3
/* pagedb_xxh3 BYTES: what the catalog's "F:sum" records for stored BYTES
** (pdb_sum is XXH3-64), as SQLite shows it: a signed 64-bit integer. */
static int xxh3Cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  int n;
  if( objc != 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "BYTES");
    return TCL_ERROR;
  }
  const unsigned char *p = Tcl_GetByteArrayFromObj(objv[1], &n);
  Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)(int64_t)XXH3_64bits(p, (size_t)n)));
  return TCL_OK;
}
#endif

static int errnameCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  int rc;
  if( objc != 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "RC");
    return TCL_ERROR;
  }
  if( Tcl_GetIntFromObj(interp, objv[1], &rc) ) return TCL_ERROR;
  Tcl_SetObjResult(interp, Tcl_NewStringObj(
      cd ? pagedb_errstr(rc) : pagedb_errname(rc), -1));
  return TCL_OK;
}

static int versionCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_libversion(), -1));
  return TCL_OK;
}

static int handlesCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  Tcl_SetObjResult(interp, Tcl_NewIntObj(atomic_load(&nLiveHandle)));
  return TCL_OK;
}

/* At exit (tclsh does not delete its interpreter), close every dataset a
** script left open, as a program would; the commands stay, inert. */
static void exitHandler(ClientData cd){
  DbObj *p;
  for(p = allDb; p; p = p->pNextDb){
    ChildObj *c;
    if( p->db ){
      pagedb_close(p->db);
      p->db = 0;
    }
    for(c = p->pChild; c; c = c->pNext) c->h = 0;
  }
}

#ifdef __GNUC__
__attribute__((visibility("default")))
#endif
int Tclpagedb_Init(Tcl_Interp *interp);

int Tclpagedb_Init(Tcl_Interp *interp){
  if( Tcl_InitStubs(interp, "8.6", 0) == 0 ) return TCL_ERROR;
  Tcl_CreateObjCommand(interp, "pagedb", pagedbOpenCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_testdata", testdataCmd, 0, 0);
#ifdef HAVE_XXH3
  Tcl_CreateObjCommand(interp, "pagedb_xxh3", xxh3Cmd, 0, 0);
#endif
  Tcl_CreateObjCommand(interp, "pagedb_errname", errnameCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_errstr", errnameCmd, (ClientData)1, 0);
  Tcl_CreateObjCommand(interp, "pagedb_version", versionCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_handles", handlesCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_check_null", checkNullCmd, 0, 0);
  Tclfault_Init(interp);
  Tclmem_Init(interp);
  if( Tclpool_Init(interp) != TCL_OK ) return TCL_ERROR;
  {
    static int once = 0;
    if( !once ){
      once = 1;
      Tcl_CreateExitHandler(exitHandler, 0);
    }
  }
  return Tcl_PkgProvide(interp, "pagedb", "0.1");
}
