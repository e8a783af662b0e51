/*
** bench_kv.c -- the rows of the other systems (SQLite, LMDB: a KvSys each,
** see bench.h), timed and checked one way for all of them.
**
** Writes.  The samples go in batches of consecutive ids, each about
** KV_BATCH bytes (at least one sample), one transaction per batch, made
** durable by its commit (SQLite: WAL with synchronous=FULL; LMDB: without
** MDB_NOSYNC).  With T threads, thread t writes batches t, t+T, t+2T...:
** each thread has its own connection (SQLite) or write transaction (LMDB),
** makes its next batch's samples into its own buffer while the other holds
** the write lock, then takes its turn.  The turns go in batch order, so
** that the keys arrive in ascending order (MDB_APPEND requires it, and
** SQLite appends at the end of its table); one writer at a time is what
** both engines allow, and making the samples in parallel is the part of a
** multi-threaded ingest they can overlap, as pagedb's writers do.  The time
** covers opening the store to closing it (SQLite's last close checkpoints
** the WAL into the database file and syncs it).
**
** Reads.  Every sample in the order in hand (random or sequential), through
** one reader, every byte summed as every read pass sums it; the sum must
** equal the raw pread pass's in the same order.  The open is not timed
** (pagedb_open is not either); the reader's setup and teardown are.  The
** first read pass of a store also checks every sample's bytes and label
** against the workload, untimed.  "Cold" passes start with the store's
** files evicted from the page cache (evictFile; all of them, so SQLite's
** and LMDB's B-tree pages are read from disk as their data is).
*/
#define _GNU_SOURCE
#include "bench.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KV_BATCH  (32u << 20)   /* bytes of samples per write transaction */

static const KvSys *const aKv[MAX_KV] = { [KV_SQLITE] = &kvSqlite, [KV_LMDB] = &kvLmdb };

const KvSys *kvSys(int iKv){
  return aKv[iKv];
}

static void kvFail(Run *r, int iKv, const char *zWhat, const char *zErr){
  fail(r->b, "%s: %s: %s", aKv[iKv]->zName, zWhat, zErr);
}

/* Apply X to every file of store iKv. */
static uint64_t kvFiles(const Run *r, int iKv, void (*x)(const Run *, const char *),
                        uint64_t (*xSize)(const char *)){
  char z[PATH_MAX + 96];
  uint64_t n = 0;
  for(const char *const *az = aKv[iKv]->azSuffix; *az; az++){
    snprintf(z, sizeof z, "%s%s", r->zKv[iKv], *az);
    if( x ) x(r, z);
    if( xSize ) n += xSize(z);
  }
  return n;
}

static void unlinkFile(const Run *r, const char *z){
  (void)r;
  unlink(z);
}

void kvRemove(const Run *r, int iKv){
  kvFiles(r, iKv, unlinkFile, 0);
}

uint64_t kvDiskBytes(const Run *r, int iKv){
  return kvFiles(r, iKv, 0, diskBytes);
}

/* Whose turn it is to write: batches commit in id order. */
typedef struct KvTurn {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t next;                 /* the batch that goes next */
  int stop;                     /* a writer failed: the others give up */
} KvTurn;

typedef struct KvJob {
  Run *r;
  const KvSys *s;
  void *pStore;
  KvTurn *turn;
  const int64_t *aStart;        /* batch k: ids aStart[k] .. aStart[k+1]-1 */
  int64_t nBatch;
  int t, nT;
  int rc;
  char zErr[KV_ERR];
} KvJob;

/* Wait for batch K's turn; 0 if it came, 1 if another writer failed. */
static int kvTurnWait(KvTurn *turn, int64_t k){
  pthread_mutex_lock(&turn->mu);
  while( turn->next != k && !turn->stop ) pthread_cond_wait(&turn->cv, &turn->mu);
  int stop = turn->stop;
  pthread_mutex_unlock(&turn->mu);
  return stop;
}

/* Pass the turn on, or (RC not 0) stop every writer. */
static void kvTurnDone(KvTurn *turn, int rc){
  pthread_mutex_lock(&turn->mu);
  if( rc ) turn->stop = 1;
  else turn->next++;
  pthread_cond_broadcast(&turn->cv);
  pthread_mutex_unlock(&turn->mu);
}

static void *kvWriteThread(void *pArg){
  KvJob *j = pArg;
  Run *r = j->r;
  void *pW = 0;
  uint8_t *buf = 0;
  size_t cap = 0;
  int rc = j->s->xWriterOpen(j->pStore, &pW, j->zErr);
  for(int64_t k = j->t; rc == 0 && k < j->nBatch; k += j->nT){
    int64_t i0 = j->aStart[k], i1 = j->aStart[k + 1];
    size_t need = (size_t)(r->aOff[i1 - 1] + r->aSize[i1 - 1] - r->aOff[i0]);
    if( need > cap ){
      free(buf);
      cap = need;
      if( (buf = malloc(cap)) == 0 ){
        snprintf(j->zErr, KV_ERR, "out of memory for a batch of %zu bytes", cap);
        rc = 1;
        break;
      }
    }
    for(int64_t i = i0; i < i1; i++){
      wl_fill(&r->w, i, buf + (r->aOff[i] - r->aOff[i0]), (size_t)r->aSize[i]);
    }
    if( kvTurnWait(j->turn, k) ) break;
    rc = j->s->xWriteBatch(pW, r, i0, i1, buf, j->zErr);
    kvTurnDone(j->turn, rc);
  }
  if( rc ) kvTurnDone(j->turn, rc);
  if( pW ) j->s->xWriterClose(pW);
  free(buf);
  j->rc = rc;
  return 0;
}

/* Write the workload into store iKv with NT threads, durably. */
double kvWrite(Run *r, int iKv, int nT){
  const KvSys *s = aKv[iKv];
  char zErr[KV_ERR] = "";
  void *pStore = 0;
  int64_t N = r->w.count, nBatch = 0;
  int64_t *aStart = malloc(sizeof(int64_t) * (size_t)(N + 1));
  if( aStart == 0 ){ fail(r->b, "out of memory"); return -1; }
  for(int64_t i = 0; i < N; i++){
    if( nBatch == 0 || r->aOff[i] - r->aOff[aStart[nBatch - 1]] >= KV_BATCH ) aStart[nBatch++] = i;
  }
  aStart[nBatch] = N;
  kvRemove(r, iKv);
  dropCaches(r->b);
  double t0 = now();
  if( s->xOpen(r, r->zKv[iKv], 1, &pStore, zErr) ){
    kvFail(r, iKv, "create", zErr);
    free(aStart);
    return -1;
  }
  KvTurn turn = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
  KvJob aJob[MAX_THREADS];
  pthread_t aTid[MAX_THREADS];
  int bad = 0, nStarted = 0;
  for(int t = 0; t < nT; t++){
    KvJob *j = &aJob[t];
    memset(j, 0, sizeof *j);
    j->r = r; j->s = s; j->pStore = pStore; j->turn = &turn;
    j->aStart = aStart; j->nBatch = nBatch; j->t = t; j->nT = nT;
    if( pthread_create(&aTid[t], 0, kvWriteThread, j) ){
      fail(r->b, "pthread_create failed");
      kvTurnDone(&turn, 1);
      bad = 1;
      break;
    }
    nStarted++;
  }
  for(int t = 0; t < nStarted; t++){
    pthread_join(aTid[t], 0);
    if( aJob[t].rc ){ kvFail(r, iKv, "write", aJob[t].zErr); bad = 1; }
  }
  if( !bad && turn.next != nBatch ){
    fail(r->b, "%s: write: %lld batches of %lld committed", s->zName,
         (long long)turn.next, (long long)nBatch);
    bad = 1;
  }
  if( s->xClose(pStore, zErr) && !bad ){ kvFail(r, iKv, "close after writing", zErr); bad = 1; }
  double t = now() - t0;
  pthread_cond_destroy(&turn.cv);
  pthread_mutex_destroy(&turn.mu);
  free(aStart);
  return bad ? -1 : t;
}

/*
** Check every sample of store iKv against the workload through a reader:
** its bytes (wl_check) and its label.  Untimed; once per store.
*/
static void kvVerify(Run *r, int iKv, void *pStore){
  const KvSys *s = aKv[iKv];
  char zErr[KV_ERR];
  void *pR = 0;
  if( s->xReaderOpen(pStore, &pR, zErr) ){ kvFail(r, iKv, "verify: reader", zErr); return; }
  int nBad = 0;
  for(int64_t k = 0; k < r->w.count && nBad < 5; k++){
    int64_t i = r->aRandom[k], label = -1;
    const void *p;
    size_t n;
    if( s->xGet(pR, i, &p, &n, zErr) ){
      kvFail(r, iKv, "verify: read", zErr);
      nBad++;
    }else if( wl_check(&r->w, i, p, n) ){
      fail(r->b, "%s: verify: sample %lld (%zu bytes, %llu expected) differs from the workload",
           s->zName, (long long)i, n, (unsigned long long)r->aSize[i]);
      nBad++;
    }else if( s->xLabel(pR, i, &label, zErr) || label != wl_label(&r->w, i) ){
      fail(r->b, "%s: verify: sample %lld label %lld, expected %lld", s->zName, (long long)i,
           (long long)label, (long long)wl_label(&r->w, i));
      nBad++;
    }
  }
  s->xReaderClose(pR);
}

/* Read every sample of store iKv in the order in hand, summing every byte. */
double kvRead(Run *r, int iKv){
  const KvSys *s = aKv[iKv];
  char zErr[KV_ERR];
  void *pStore = 0, *pR = 0;
  dropCaches(r->b);
  kvFiles(r, iKv, prepFile, 0);
  if( s->xOpen(r, r->zKv[iKv], 0, &pStore, zErr) ){ kvFail(r, iKv, "open", zErr); return -1; }
  double t0 = now();
  int bad = s->xReaderOpen(pStore, &pR, zErr);
  if( bad ) kvFail(r, iKv, "reader", zErr);
  uint64_t h = 0;
  for(int64_t k = 0; k < r->w.count && !bad; k++){
    const void *p;
    size_t n;
    if( s->xGet(pR, r->aOrder[k], &p, &n, zErr) ){
      kvFail(r, iKv, "read", zErr);
      bad = 1;
    }else{
      h = mixSum(h, p, n);
    }
  }
  if( pR ) s->xReaderClose(pR);
  double t = now() - t0;
  if( !bad && r->haveRawSum[r->iOrd] && h != r->rawSum[r->iOrd] ){
    fail(r->b, "%s: read: the bytes differ from the raw file's (checksum)", s->zName);
  }
  if( !bad && !r->kvVerified[iKv] ){
    kvVerify(r, iKv, pStore);
    r->kvVerified[iKv] = 1;
  }
  if( s->xClose(pStore, zErr) ) kvFail(r, iKv, "close", zErr);
  return bad ? -1 : t;
}

/* Seconds from opening store iKv until its first sample is read and checked. */
double kvOpen(Run *r, int iKv){
  const KvSys *s = aKv[iKv];
  char zErr[KV_ERR];
  void *pStore = 0, *pR = 0;
  const void *p;
  size_t n;
  int64_t i = r->aRandom[0];
  dropCaches(r->b);
  kvFiles(r, iKv, prepFile, 0);
  double t0 = now();
  int bad = s->xOpen(r, r->zKv[iKv], 0, &pStore, zErr)
         || s->xReaderOpen(pStore, &pR, zErr)
         || s->xGet(pR, i, &p, &n, zErr);
  if( bad ) kvFail(r, iKv, "open to first read", zErr);
  else if( wl_check(&r->w, i, p, n) ){
    fail(r->b, "%s: first read: sample %lld differs", s->zName, (long long)i);
    bad = 1;
  }
  double t = now() - t0;
  if( pR ) s->xReaderClose(pR);
  if( pStore && s->xClose(pStore, zErr) ) kvFail(r, iKv, "close", zErr);
  return bad ? -1 : t;
}
