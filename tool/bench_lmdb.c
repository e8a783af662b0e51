/*
** bench_lmdb.c -- LMDB, for pagedb-bench (bench_kv.c drives it; see KvSys
** in bench.h).
**
** One environment file (MDB_NOSUBDIR), its main database keyed by the id
** (MDB_INTEGERKEY: a size_t in native order).  Each value is the label, 8
** bytes little-endian, then the sample's bytes: one record per sample, as
** pagedb keeps a sample's fields together.  The map is sized from the data
** (twice the samples' bytes plus a page per sample, and 64 MiB): room for
** LMDB's overflow pages and B-tree, never a limit hit.  Writes: mdb_put
** with MDB_APPEND (the ids come in ascending order) and MDB_RESERVE, the
** label and sample then copied into the reserved space (one copy, as
** pagedb_put makes); one write transaction per batch, committed durably
** (no MDB_NOSYNC, MDB_NOMETASYNC or MDB_WRITEMAP).  Reads: mdb_get in one
** read transaction, zero-copy (the pointer is into LMDB's read-only map).
** Without LMDB at configure time the system is there but not built: its
** rows print as skipped.
*/
#define _GNU_SOURCE
#include "bench.h"

#include <stdlib.h>
#include <string.h>

static const char *const azSuffix[] = { "", "-lock", 0 };

#if PAGEDB_HAVE_LMDB
#include <lmdb.h>

typedef struct LmStore {
  MDB_env *env;
  MDB_dbi dbi;
} LmStore;

typedef struct LmReader {
  LmStore *p;
  MDB_txn *txn;
} LmReader;

static int lmErr(int rc, const char *zWhat, char *zErr){
  snprintf(zErr, KV_ERR, "%s: %s", zWhat, mdb_strerror(rc));
  return 1;
}

static int lmClose(void *pStore, char *zErr){
  LmStore *p = pStore;
  mdb_env_close(p->env);
  free(p);
  return 0;
}

static int lmOpen(Run *r, const char *zPath, int create, void **ppStore, char *zErr){
  LmStore *p = calloc(1, sizeof *p);
  MDB_txn *txn = 0;
  if( p == 0 ){ snprintf(zErr, KV_ERR, "out of memory"); return 1; }
  int rc = mdb_env_create(&p->env);
  if( rc ){ free(p); return lmErr(rc, "mdb_env_create", zErr); }
  if( create ){
    uint64_t map = 2 * (r->nByte + (uint64_t)r->w.count * 4096) + (64u << 20);
    rc = mdb_env_set_mapsize(p->env, (size_t)map);
  }
  if( rc == 0 ) rc = mdb_env_open(p->env, zPath, MDB_NOSUBDIR | (create ? 0 : MDB_RDONLY), 0644);
  if( rc == 0 ) rc = mdb_txn_begin(p->env, 0, create ? 0 : MDB_RDONLY, &txn);
  if( rc == 0 ) rc = mdb_dbi_open(txn, 0, MDB_INTEGERKEY | (create ? MDB_CREATE : 0), &p->dbi);
  if( rc == 0 ){
    rc = mdb_txn_commit(txn);
    txn = 0;
  }
  if( rc ){
    if( txn ) mdb_txn_abort(txn);
    lmClose(p, zErr);
    return lmErr(rc, zPath, zErr);
  }
  *ppStore = p;
  return 0;
}

/* A writer needs nothing of its own: each batch is its own transaction. */
static int lmWriterOpen(void *pStore, void **ppW, char *zErr){
  *ppW = pStore;
  return 0;
}

static void lmWriterClose(void *pW){
  (void)pW;
}

static int lmWriteBatch(void *pW, Run *r, int64_t i0, int64_t i1, const uint8_t *buf, char *zErr){
  LmStore *p = pW;
  MDB_txn *txn;
  int rc = mdb_txn_begin(p->env, 0, 0, &txn);
  if( rc ) return lmErr(rc, "mdb_txn_begin", zErr);
  for(int64_t i = i0; i < i1 && rc == 0; i++){
    size_t id = (size_t)i, len = (size_t)r->aSize[i];
    uint64_t label = (uint64_t)wl_label(&r->w, i);
    MDB_val k = { sizeof id, &id }, v = { 8 + len, 0 };
    rc = mdb_put(txn, p->dbi, &k, &v, MDB_APPEND | MDB_RESERVE);
    if( rc == 0 ){
      uint8_t *q = v.mv_data;
      for(int b = 0; b < 8; b++) q[b] = (uint8_t)(label >> (8 * b));
      memcpy(q + 8, buf + (r->aOff[i] - r->aOff[i0]), len);
    }else{
      char z[64];
      snprintf(z, sizeof z, "mdb_put of sample %lld", (long long)i);
      mdb_txn_abort(txn);
      return lmErr(rc, z, zErr);
    }
  }
  rc = mdb_txn_commit(txn);
  return rc ? lmErr(rc, "mdb_txn_commit", zErr) : 0;
}

static void lmReaderClose(void *pR){
  LmReader *q = pR;
  if( q->txn ) mdb_txn_abort(q->txn);
  free(q);
}

static int lmReaderOpen(void *pStore, void **ppR, char *zErr){
  LmReader *q = calloc(1, sizeof *q);
  if( q == 0 ){ snprintf(zErr, KV_ERR, "out of memory"); return 1; }
  q->p = pStore;
  int rc = mdb_txn_begin(q->p->env, 0, MDB_RDONLY, &q->txn);
  if( rc ){
    q->txn = 0;
    lmReaderClose(q);
    return lmErr(rc, "mdb_txn_begin (read)", zErr);
  }
  *ppR = q;
  return 0;
}

/* The value of ID, label and all. */
static int lmValue(LmReader *q, int64_t id, MDB_val *v, char *zErr){
  size_t key = (size_t)id;
  MDB_val k = { sizeof key, &key };
  int rc = mdb_get(q->txn, q->p->dbi, &k, v);
  if( rc == 0 && v->mv_size < 8 ) rc = MDB_CORRUPTED;
  if( rc ){
    char z[64];
    snprintf(z, sizeof z, "mdb_get of %lld", (long long)id);
    return lmErr(rc, z, zErr);
  }
  return 0;
}

static int lmGet(void *pR, int64_t id, const void **pp, size_t *pn, char *zErr){
  MDB_val v;
  if( lmValue(pR, id, &v, zErr) ) return 1;
  *pp = (const uint8_t *)v.mv_data + 8;
  *pn = v.mv_size - 8;
  return 0;
}

static int lmLabel(void *pR, int64_t id, int64_t *pLabel, char *zErr){
  MDB_val v;
  if( lmValue(pR, id, &v, zErr) ) return 1;
  uint64_t x = 0;
  for(int b = 7; b >= 0; b--) x = x << 8 | ((const uint8_t *)v.mv_data)[b];
  *pLabel = (int64_t)x;
  return 0;
}

const KvSys kvLmdb = {
  "lmdb",
  MDB_VERSION_STRING ", key the id (MDB_INTEGERKEY), value label + sample; mdb_put with"
  " MDB_APPEND|MDB_RESERVE, a durable write\n  transaction per batch; reads: zero-copy mdb_get in"
  " one read transaction",
  "mdb_get", 1,
  azSuffix,
  lmOpen, lmClose,
  lmWriterOpen, lmWriteBatch, lmWriterClose,
  lmReaderOpen, lmGet, lmLabel, lmReaderClose
};
#else
const KvSys kvLmdb = {
  "lmdb",
  "built without LMDB (install liblmdb-dev and run configure again)",
  "mdb_get", 1,
  azSuffix,
  0, 0, 0, 0, 0, 0, 0, 0, 0
};
#endif
