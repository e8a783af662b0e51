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
**   DB dict_train FIELD ?SAMPLES? ?SIZE? | dict_set FIELD BYTES | dicts FIELD
**      (pagedb_field_dict_train, _set; dicts: {ID SIZE ...}, newest first) |
**   DB close | field_add NAME TYPE ?CODEC? | field_index NAME | fields |
**      count | pages | page_size | set_page_size N | commit | errmsg |
**      path | catalog_path | vfs (pagedb_vfs_name) | index_state | forkread N FIELD | sql SQL | sql_update SQL | sql_user SQL | writer CMD | reader CMD ?-mmap|-copy|N? ?-verify? |
**      ingest ?OPTIONS? | verify ?OPTIONS? | stats | field_stats FIELD |
**      delete ID | vacuum ?DEST? ?-page-size N? | push DEST (pagedb_push) |
**          pagedb_delete; pagedb_vacuum into DEST, or in place without it
**          (-page-size 0 or absent: keep the page size)
**      attach OTHER ?-keep|-offset N|-after|-policy N?
**          pagedb_attach (default -keep): returns the number attached;
**          -policy passes a raw policy number, for misuse tests
**      parts_commit PARTS ?-keep|-offset|-after|-policy N? | part_seal |
**      part_count
**          pagedb_parts_commit of PARTS, each {PATH ?-name NAME? ?-offset N?
**          ?-seal HEX?} (returns the samples committed); pagedb_part_seal
**          (16 hex digits); pagedb_part_count
**      parts_orphans ?-age MS? ?-remove? ?-flags N?
**          pagedb_parts_orphans: a list of {PATH UUID BYTES AGE_MS}
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
** io_read_bytes io_writes io_write_bytes io_syncs bytes_padding), fill_hist a list of 10;
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
**   DB verify ?-threads N? ?-mode mmap|copy|into|mmapinto|mixed? ?-auto? ?-seed S?
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
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sys/wait.h>

#include <tcl.h>

#include "pagedb.h"
#include "tclpagedb.h"

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

/* Leave "PAGEDB_NAME: MSG" in the interpreter and errorCode
** {PAGEDB PAGEDB_NAME}; return TCL_ERROR. */
/* While recording (pagedb_messages -record 1), every error message is
** kept too, for a test to scan (creds.test, remote.test: no secret in
** any message).  One interpreter per test process. */
static Tcl_Obj *recorded;

int pdbError(Tcl_Interp *interp, int rc, const char *msg){
  const char *name = pagedb_errname(rc);
  Tcl_SetObjResult(interp, Tcl_ObjPrintf("%s: %s", name, msg ? msg : "(no message)"));
  if( recorded ) Tcl_ListObjAppendElement(interp, recorded, Tcl_GetObjResult(interp));
  Tcl_SetErrorCode(interp, "PAGEDB", name, (char *)NULL);
  return TCL_ERROR;
}

/* pagedb_messages -record 0|1: start (cleared) or stop recording;
** pagedb_messages: the messages recorded, a list. */
static int messagesCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  (void)cd;
  int on;
  if( objc == 3 && strcmp(Tcl_GetString(objv[1]), "-record") == 0 ){
    if( Tcl_GetBooleanFromObj(interp, objv[2], &on) ) return TCL_ERROR;
    if( recorded ) Tcl_DecrRefCount(recorded);
    recorded = NULL;
    if( on ){
      recorded = Tcl_NewListObj(0, 0);
      Tcl_IncrRefCount(recorded);
    }
    return TCL_OK;
  }
  if( objc != 1 ){
    Tcl_WrongNumArgs(interp, 1, objv, "?-record BOOL?");
    return TCL_ERROR;
  }
  Tcl_SetObjResult(interp, recorded ? Tcl_DuplicateObj(recorded) : Tcl_NewListObj(0, 0));
  return TCL_OK;
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

int getInt64(Tcl_Interp *interp, Tcl_Obj *o, int64_t *v){
  Tcl_WideInt w;
  if( Tcl_GetWideIntFromObj(interp, o, &w) != TCL_OK ) return TCL_ERROR;
  *v = (int64_t)w;
  return TCL_OK;
}

/* A field argument: a number (passed through, even out of range) or a
** name (looked up; -1 if there is no such field, so the engine reports it). */
int getField(pagedb *db, Tcl_Obj *o){
  int i;
  if( Tcl_GetIntFromObj(0, o, &i) == TCL_OK ) return i;
  return pagedb_field_index(db, Tcl_GetString(o));
}

static const char *typeNames[] = {"?", "bytes", "text", "int", "real"};

const char *typeName(int t){
  return (t >= 1 && t <= 4) ? typeNames[t] : t == PAGEDB_TENSOR ? "tensor" : "unknown";
}

/* A shape as a Tcl list of integers, "*" for PAGEDB_DIM_VAR. */
static Tcl_Obj *shapeObj(int ndim, const int64_t *dims){
  Tcl_Obj *l = Tcl_NewListObj(0, 0);
  for(int i = 0; i < ndim; i++){
    Tcl_ListObjAppendElement(0, l, dims[i] == PAGEDB_DIM_VAR ? Tcl_NewStringObj("*", 1)
                                                               : Tcl_NewWideIntObj((Tcl_WideInt)dims[i]));
  }
  return l;
}

/* Field I's type as its declaration reads: "bytes", or "tensor:float32:3,*". */
static Tcl_Obj *fieldTypeObj(pagedb *db, int i){
  int dtype, ndim;
  int64_t dims[PAGEDB_TENSOR_MAX_DIMS];
  if( pagedb_field_tensor(db, i, &dtype, &ndim, dims) != PAGEDB_OK ){
    return Tcl_NewStringObj(typeName(pagedb_field_type(db, i)), -1);
  }
  Tcl_Obj *o = Tcl_ObjPrintf("tensor:%s:", pagedb_dtype_name(dtype));
  for(int k = 0; k < ndim; k++){
    if( dims[k] == PAGEDB_DIM_VAR ) Tcl_AppendPrintfToObj(o, "%s*", k ? "," : "");
    else Tcl_AppendPrintfToObj(o, "%s%lld", k ? "," : "", (long long)dims[k]);
  }
  return o;
}

/* A list of dimensions (integers, or "*" for a variable one) into DIMS:
** the count, or -1 with an error in INTERP. */
static int parseDims(Tcl_Interp *interp, Tcl_Obj *o, int64_t *dims, int max){
  Tcl_Obj **ap;
  int n;
  if( Tcl_ListObjGetElements(interp, o, &n, &ap) ) return -1;
  if( n > max ){
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("at most %d dimensions", max));
    return -1;
  }
  for(int i = 0; i < n; i++){
    Tcl_WideInt v;
    if( strcmp(Tcl_GetString(ap[i]), "*") == 0 ){ dims[i] = PAGEDB_DIM_VAR; continue; }
    if( Tcl_GetWideIntFromObj(interp, ap[i], &v) ) return -1;
    dims[i] = (int64_t)v;
  }
  return n;
}

/* DTYPE: a dtype's name ("float32"), or its number. */
static int parseDtype(Tcl_Interp *interp, Tcl_Obj *o, int *pDtype){
  if( Tcl_GetIntFromObj(0, o, pDtype) == TCL_OK ) return TCL_OK;
  *pDtype = pagedb_dtype_from_name(Tcl_GetString(o));
  if( *pDtype == 0 ){
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("unknown dtype \"%s\"", Tcl_GetString(o)));
    return TCL_ERROR;
  }
  return TCL_OK;
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
    "errmsg", "put_null", "put_huge", "put_tensor", 0
  };
  enum { W_BEGIN, W_PUT, W_PUT_INT, W_PUT_REAL, W_END, W_CANCEL, W_FLUSH, W_CLOSE,
         W_ERRMSG, W_PUT_NULL, W_PUT_HUGE, W_PUT_TENSOR };
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
    case W_PUT_TENSOR: {
      /* put_tensor FIELD DTYPE SHAPE BYTES: SHAPE a list of sizes. */
      int dtype, n, ndim;
      int64_t shape[PAGEDB_TENSOR_MAX_DIMS + 2];
      if( objc != 6 ){
        Tcl_WrongNumArgs(interp, 2, objv, "FIELD DTYPE SHAPE BYTES");
        return TCL_ERROR;
      }
      if( parseDtype(interp, objv[3], &dtype) ) return TCL_ERROR;
      ndim = parseDims(interp, objv[4], shape, PAGEDB_TENSOR_MAX_DIMS + 2);
      if( ndim < 0 ) return TCL_ERROR;
      const unsigned char *b = Tcl_GetByteArrayFromObj(objv[5], &n);
      rc = pagedb_put_tensor(w, getField(c->pDb->db, objv[2]), dtype, ndim, shape, b, (size_t)n);
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

/*
** R tokens FIELD KIND SEED EPOCH B ACTION ...: a token stream
** (pagedb_tokens_open) made, used and closed in one command.  KIND is
** sequential, random or quasi.  ACTION:
**   info                 {blocks tokens documents}
**   map                  {STORED {ID END ID END ...}}: pagedb_tokens_stored
**                        and every pagedb_tokens_document
**   order RANK WORLD     the block numbers of the rank
**   blocks LIST          per block of LIST {BYTES VIEW}: its B + 1 tokens'
**                        bytes, and 1 if they were a view (not the buffer)
*/
static int tokensCmd(Tcl_Interp *interp, ChildObj *c, pagedb_reader *r, int objc, Tcl_Obj *const objv[]){
  static const char *azKind[] = { "sequential", "random", "quasi", 0 };
  static const char *azAct[] = { "info", "order", "blocks", "map", 0 };
  int iKind, iAct, rc, dtype = 0, ndim = 0;
  Tcl_WideInt seed, epoch, bs;
  int64_t dims[PAGEDB_TENSOR_MAX_DIMS];
  pagedb_tokens *t = 0;
  Tcl_Obj *res = 0;
  if( objc < 8 ){
    Tcl_WrongNumArgs(interp, 2, objv, "FIELD KIND SEED EPOCH B info|order RANK WORLD|blocks LIST");
    return TCL_ERROR;
  }
  if( Tcl_GetIndexFromObj(interp, objv[3], azKind, "kind", 0, &iKind)
   || Tcl_GetWideIntFromObj(interp, objv[4], &seed) || Tcl_GetWideIntFromObj(interp, objv[5], &epoch)
   || Tcl_GetWideIntFromObj(interp, objv[6], &bs)
   || Tcl_GetIndexFromObj(interp, objv[7], azAct, "action", 0, &iAct) ) return TCL_ERROR;
  int f = getField(c->pDb->db, objv[2]);
  rc = pagedb_tokens_open(c->pDb->db, f, iKind + 1, (uint64_t)seed, (uint64_t)epoch, (int64_t)bs, &t);
  if( rc != PAGEDB_OK ) return pdbError(interp, rc, pagedb_errmsg(c->pDb->db));
  if( iAct == 0 ){
    res = Tcl_NewListObj(0, 0);
    Tcl_ListObjAppendElement(0, res, Tcl_NewWideIntObj(pagedb_tokens_blocks(t)));
    Tcl_ListObjAppendElement(0, res, Tcl_NewWideIntObj(pagedb_tokens_total(t)));
    Tcl_ListObjAppendElement(0, res, Tcl_NewWideIntObj(pagedb_tokens_documents(t)));
  }else if( iAct == 3 ){
    Tcl_Obj *l = Tcl_NewListObj(0, 0);
    for(int64_t k = 0; k < pagedb_tokens_documents(t) && rc == PAGEDB_OK; k++){
      int64_t id, end;
      rc = pagedb_tokens_document(t, k, &id, &end);
      Tcl_ListObjAppendElement(0, l, Tcl_NewWideIntObj(id));
      Tcl_ListObjAppendElement(0, l, Tcl_NewWideIntObj(end));
    }
    res = Tcl_NewListObj(0, 0);
    Tcl_ListObjAppendElement(0, res, Tcl_NewIntObj(pagedb_tokens_stored(t)));
    Tcl_ListObjAppendElement(0, res, l);
    if( rc != PAGEDB_OK ){
      Tcl_DecrRefCount(res);
      res = 0;
    }
  }else if( iAct == 1 ){
    int rank, world;
    int64_t n = 0, *a = 0;
    if( objc != 10 || Tcl_GetIntFromObj(interp, objv[8], &rank) || Tcl_GetIntFromObj(interp, objv[9], &world) ){
      pagedb_tokens_close(t);
      if( objc != 10 ) Tcl_WrongNumArgs(interp, 8, objv, "RANK WORLD");
      return TCL_ERROR;
    }
    rc = pagedb_tokens_order(t, rank, world, 0, &n);
    if( rc == PAGEDB_OK ){
      a = (int64_t *)malloc((size_t)(n ? n : 1) * sizeof *a);
      rc = a ? pagedb_tokens_order(t, rank, world, a, &n) : PAGEDB_NOMEM;
    }
    if( rc == PAGEDB_OK ){
      res = Tcl_NewListObj(0, 0);
      for(int64_t i = 0; i < n; i++) Tcl_ListObjAppendElement(0, res, Tcl_NewWideIntObj(a[i]));
    }
    free(a);
  }else{
    int nb;
    Tcl_Obj **ab;
    unsigned char *buf;
    if( objc != 9 || Tcl_ListObjGetElements(interp, objv[8], &nb, &ab) ){
      pagedb_tokens_close(t);
      if( objc != 9 ) Tcl_WrongNumArgs(interp, 8, objv, "LIST");
      return TCL_ERROR;
    }
    pagedb_field_tensor(c->pDb->db, f, &dtype, &ndim, dims);
    size_t len = (size_t)(bs + 1) * (size_t)pagedb_dtype_size(dtype);
    buf = (unsigned char *)malloc(len);
    if( !buf ) rc = PAGEDB_NOMEM;
    res = Tcl_NewListObj(0, 0);
    for(int i = 0; i < nb && rc == PAGEDB_OK; i++){
      Tcl_WideInt b;
      const void *p;
      if( Tcl_GetWideIntFromObj(interp, ab[i], &b) ){
        free(buf);
        pagedb_tokens_close(t);
        Tcl_DecrRefCount(res);
        return TCL_ERROR;
      }
      rc = pagedb_tokens_block(t, r, (int64_t)b, buf, &p);
      if( rc == PAGEDB_OK ){
        Tcl_Obj *e = Tcl_NewListObj(0, 0);
        Tcl_ListObjAppendElement(0, e, Tcl_NewByteArrayObj((const unsigned char *)p, (int)len));
        Tcl_ListObjAppendElement(0, e, Tcl_NewIntObj(p != (const void *)buf));
        Tcl_ListObjAppendElement(0, res, e);
      }
    }
    free(buf);
    if( rc != PAGEDB_OK ){
      Tcl_DecrRefCount(res);
      res = 0;
    }
  }
  if( rc != PAGEDB_OK ){
    /* order's message is the handle's, a block's the reader's. */
    pagedb_tokens_close(t);
    return pdbError(interp, rc, iAct == 1 || iAct == 3 ? pagedb_errmsg(c->pDb->db) : pagedb_reader_errmsg(r));
  }
  pagedb_tokens_close(t);
  Tcl_SetObjResult(interp, res);
  return TCL_OK;
}

static int readerCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  static const char *azSub[] = {
    "read", "read_into", "read_int", "read_real", "close", "errmsg", "size", "read_batch", "advise",
    "prefetch", "addr", "addr_batch", "read_tensor", "read_tensor_into", "tokens", 0
  };
  enum { R_READ, R_READ_INTO, R_READ_INT, R_READ_REAL, R_CLOSE, R_ERRMSG, R_SIZE, R_BATCH, R_ADVISE,
         R_PREFETCH, R_ADDR, R_ADDR_BATCH, R_READ_TENSOR, R_READ_TENSOR_INTO, R_TOKENS };
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
  if( iSub == R_BATCH || iSub == R_ADDR_BATCH ){
    /* The byte arrays of every id, in order: one pagedb_read_batch call;
    ** addr_batch: the address each pointer holds instead (alignment tests). */
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
        Tcl_ListObjAppendElement(interp, pList, iSub == R_ADDR_BATCH
                                 ? Tcl_NewWideIntObj((Tcl_WideInt)(uintptr_t)aData[i])
                                 : Tcl_NewByteArrayObj(aData[i], (int)aSize[i]));
      }
      Tcl_SetObjResult(interp, pList);
    }
    Tcl_Free((char *)aId);
    Tcl_Free((char *)aData);
    Tcl_Free((char *)aSize);
    if( rc == -1 ) return TCL_ERROR;
    return rc == PAGEDB_OK ? TCL_OK : pdbError(interp, rc, pagedb_reader_errmsg(r));
  }
  if( iSub == R_TOKENS ) return tokensCmd(interp, c, r, objc, objv);
  if( iSub == R_READ_TENSOR || iSub == R_READ_TENSOR_INTO ){
    /* read_tensor ID FIELD: {SHAPE BYTES ADDRESS}; read_tensor_into ID
    ** FIELD CAP: {SHAPE BYTES} through a buffer of exactly CAP bytes. */
    const void *p = 0;
    size_t nb = 0;
    int ndim = 0;
    int64_t shape[PAGEDB_TENSOR_MAX_DIMS];
    Tcl_WideInt cap = 0;
    unsigned char *buf = 0;
    if( objc != (iSub == R_READ_TENSOR ? 4 : 5) ){
      Tcl_WrongNumArgs(interp, 2, objv, iSub == R_READ_TENSOR ? "ID FIELD" : "ID FIELD CAP");
      return TCL_ERROR;
    }
    if( getInt64(interp, objv[2], &id) ) return TCL_ERROR;
    f = getField(c->pDb->db, objv[3]);
    if( iSub == R_READ_TENSOR ){
      rc = pagedb_read_tensor(r, id, f, &p, &nb, &ndim, shape);
    }else{
      if( Tcl_GetWideIntFromObj(interp, objv[4], &cap) || cap < 0 ) return TCL_ERROR;
      buf = (unsigned char *)malloc(cap ? (size_t)cap : 1);
      if( buf == 0 ) return pdbError(interp, PAGEDB_NOMEM, "read_tensor_into buffer");
      rc = pagedb_read_tensor_into(r, id, f, buf, (size_t)cap, &nb, &ndim, shape);
      p = buf;
    }
    if( rc == PAGEDB_OK ){
      Tcl_Obj *l = Tcl_NewListObj(0, 0);
      Tcl_ListObjAppendElement(0, l, shapeObj(ndim, shape));
      Tcl_ListObjAppendElement(0, l, Tcl_NewByteArrayObj((const unsigned char *)p, (int)nb));
      if( iSub == R_READ_TENSOR ) Tcl_ListObjAppendElement(0, l, Tcl_NewWideIntObj((Tcl_WideInt)(uintptr_t)p));
      Tcl_SetObjResult(interp, l);
    }
    free(buf);
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
    case R_ADDR:
    case R_SIZE: {
      const void *p = 0;
      size_t n = 0;
      rc = pagedb_read(r, id, f, &p, &n);
      if( rc != PAGEDB_OK ) break;
      if( iSub == R_ADDR ){
        /* The address pagedb_read gave, to check its alignment. */
        Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)(uintptr_t)p));
      }else if( iSub == R_SIZE ){
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

static int sqlValuesRow(void *ctx, int ncol, const pagedb_value *vals, const char *const *names){
  static const char *azType[] = { "null", "bytes", "text", "int", "real" };
  Tcl_Obj *pList = (Tcl_Obj *)ctx;
  int i;
  for(i = 0; i < ncol; i++){
    const pagedb_value *v = &vals[i];
    Tcl_Obj *pPair = Tcl_NewObj(), *pVal;
    if( v->type == PAGEDB_INT ){
      pVal = Tcl_NewWideIntObj(v->i);
    }else if( v->type == PAGEDB_REAL ){
      pVal = Tcl_NewDoubleObj(v->d);
    }else if( v->type == PAGEDB_TEXT ){
      pVal = Tcl_NewStringObj((const char *)v->p, (int)v->n);
    }else if( v->type == PAGEDB_BYTES ){
      size_t j;
      pVal = Tcl_NewObj();
      for(j = 0; j < v->n; j++) Tcl_AppendPrintfToObj(pVal, "%02x", ((const unsigned char *)v->p)[j]);
    }else{
      pVal = Tcl_NewObj();
    }
    Tcl_ListObjAppendElement(0, pPair, Tcl_NewStringObj(azType[v->type >= 0 && v->type <= 4 ? v->type : 0], -1));
    Tcl_ListObjAppendElement(0, pPair, pVal);
    Tcl_ListObjAppendElement(0, pList, pPair);
  }
  (void)names;
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

/* CODEC: a number, or none | lz4 | lz4hc | zstd | zstd-dict, optionally
** :LEVEL (any integer: pagedb_field_add judges it, so tests can give bad
** levels). */
static int parseCodec(Tcl_Interp *interp, Tcl_Obj *o, int *pCodec){
  static const char *az[] = {"none", "lz4", "lz4hc", "zstd", "zstd-dict", 0};
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

/* The codec's name as DB fields reports it: none, lz4:LEVEL, zstd:LEVEL... */
static Tcl_Obj *codecName(int codec){
  char z[48];
  pagedb_codec_name(codec, z, sizeof z);
  return Tcl_NewStringObj(z, -1);
}

/*
** DB order KIND ?-seed S? ?-epoch E? ?-rank R? ?-world W? ?-droplast?
**          ?-length? ?-cap N?
**
** The ids pagedb_order gives (KIND: sequential, random, quasi or a number,
** passed through).  -length returns only the length (IDS NULL); -cap N
** passes an array of N entries instead of the length the first call gave.
*/
/* DB vacuum ?DEST? ?-page-size N? ?-codec FIELD CODEC ...?: pagedb_vacuum
** (DEST NULL when absent), pagedb_vacuum_recode with -codec. */
static int dbVacuum(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[]){
  const char *zDest = 0;
  int64_t pageSize = 0;
  int i, rc, nRe = 0;
  const char *azField[16];
  int aCodec[16];
  for(i = 2; i < objc; i++){
    const char *z = Tcl_GetString(objv[i]);
    if( strcmp(z, "-page-size") == 0 && i + 1 < objc ){
      if( getInt64(interp, objv[++i], &pageSize) ) return TCL_ERROR;
    }else if( strcmp(z, "-codec") == 0 && i + 2 < objc && nRe < 16 ){
      azField[nRe] = Tcl_GetString(objv[++i]);
      if( parseCodec(interp, objv[++i], &aCodec[nRe]) ) return TCL_ERROR;
      nRe++;
    }else if( z[0] != '-' && zDest == 0 ){
      zDest = z;
    }else{
      Tcl_WrongNumArgs(interp, 2, objv, "?DEST? ?-page-size N? ?-codec FIELD CODEC ...?");
      return TCL_ERROR;
    }
  }
  if( pageSize < 0 ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj("-page-size must be >= 0", -1));
    return TCL_ERROR;
  }
  rc = nRe ? pagedb_vacuum_recode(p->db, zDest, (size_t)pageSize, nRe, azField, aCodec)
           : pagedb_vacuum(p->db, zDest, (size_t)pageSize);
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
    STAT_PUT(s, io_write_bytes); STAT_PUT(s, io_syncs); STAT_PUT(s, bytes_padding);
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

/* DB parts_commit PARTS ?-keep|-after|-offset|-policy N?: PARTS a list of
** parts, each {PATH ?-name NAME? ?-offset N? ?-seal HEX?}; -offset as a
** policy uses each part's offset. */
static int dbPartsCommit(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[]){
  int policy = PAGEDB_ATTACH_KEEP, i, n, rc;
  Tcl_Obj **items;
  int64_t got = -1;
  if( objc < 3 ){
    Tcl_WrongNumArgs(interp, 2, objv, "PARTS ?-keep|-offset|-after|-policy N?");
    return TCL_ERROR;
  }
  for(i = 3; i < objc; i++){
    const char *z = Tcl_GetString(objv[i]);
    if( strcmp(z, "-keep") == 0 ) policy = PAGEDB_ATTACH_KEEP;
    else if( strcmp(z, "-after") == 0 ) policy = PAGEDB_ATTACH_AFTER;
    else if( strcmp(z, "-offset") == 0 ) policy = PAGEDB_ATTACH_OFFSET;
    else if( strcmp(z, "-policy") == 0 && i + 1 < objc ){
      if( Tcl_GetIntFromObj(interp, objv[++i], &policy) ) return TCL_ERROR;
    }else{
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad option \"%s\"", z));
      return TCL_ERROR;
    }
  }
  if( Tcl_ListObjGetElements(interp, objv[2], &n, &items) ) return TCL_ERROR;
  pagedb_part *parts = ckalloc(sizeof(*parts) * (n ? n : 1));
  memset(parts, 0, sizeof(*parts) * (n ? n : 1));
  for(i = 0; i < n; i++){
    Tcl_Obj **f;
    int nf, j;
    if( Tcl_ListObjGetElements(interp, items[i], &nf, &f) || nf < 1 ){
      ckfree(parts);
      Tcl_SetObjResult(interp, Tcl_NewStringObj("a part is {PATH ?-name N? ?-offset N? ?-seal HEX?}", -1));
      return TCL_ERROR;
    }
    parts[i].path = Tcl_GetString(f[0]);
    for(j = 1; j + 1 < nf; j += 2){
      const char *o = Tcl_GetString(f[j]);
      if( strcmp(o, "-name") == 0 ) parts[i].name = Tcl_GetString(f[j + 1]);
      else if( strcmp(o, "-offset") == 0 ){
        if( getInt64(interp, f[j + 1], &parts[i].offset) ){ ckfree(parts); return TCL_ERROR; }
      }else if( strcmp(o, "-seal") == 0 ){
        parts[i].seal = strtoull(Tcl_GetString(f[j + 1]), NULL, 16);
      }
    }
  }
  rc = pagedb_parts_commit(p->db, parts, n, policy, &got);
  ckfree(parts);
  if( rc != PAGEDB_OK ){
    if( got != 0 ) return pdbError(interp, PAGEDB_ERROR, "pagedb_parts_commit failed but set *ncommitted");
    return pdbError(interp, rc, pagedb_errmsg(p->db));
  }
  Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)got));
  return TCL_OK;
}

/* pagedb_parts_orphans' callback: append {PATH UUID BYTES AGE_MS} to the list CTX. */
static int orphanRow(void *ctx, const pagedb_orphan *o){
  Tcl_Obj *e = Tcl_NewObj();
  Tcl_ListObjAppendElement(0, e, Tcl_NewStringObj(o->path, -1));
  Tcl_ListObjAppendElement(0, e, Tcl_NewStringObj(o->uuid, -1));
  Tcl_ListObjAppendElement(0, e, Tcl_NewWideIntObj((Tcl_WideInt)o->bytes));
  Tcl_ListObjAppendElement(0, e, Tcl_NewWideIntObj((Tcl_WideInt)o->age_ms));
  Tcl_ListObjAppendElement(0, (Tcl_Obj *)ctx, e);
  return PAGEDB_OK;
}

/* DB parts_orphans ?-age MS? ?-remove? ?-flags N?: pagedb_parts_orphans,
** a list of {PATH UUID BYTES AGE_MS} (removed with -remove). */
static int dbPartsOrphans(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[]){
  int flags = 0, i, rc;
  int64_t age = 0, n = -1;
  for(i = 2; i < objc; i++){
    const char *z = Tcl_GetString(objv[i]);
    if( strcmp(z, "-remove") == 0 ) flags |= PAGEDB_ORPHANS_REMOVE;
    else if( strcmp(z, "-age") == 0 && i + 1 < objc ){
      if( getInt64(interp, objv[++i], &age) ) return TCL_ERROR;
    }else if( strcmp(z, "-flags") == 0 && i + 1 < objc ){
      if( Tcl_GetIntFromObj(interp, objv[++i], &flags) ) return TCL_ERROR;
    }else{
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad option \"%s\": use -age MS, -remove or -flags N", z));
      return TCL_ERROR;
    }
  }
  Tcl_Obj *list = Tcl_NewObj();
  Tcl_IncrRefCount(list);
  rc = pagedb_parts_orphans(p->db, age, flags, orphanRow, list, &n);
  if( rc != PAGEDB_OK ){
    Tcl_DecrRefCount(list);
    return pdbError(interp, rc, pagedb_errmsg(p->db));
  }
  int len;
  Tcl_ListObjLength(0, list, &len);
  if( n != len ){
    Tcl_DecrRefCount(list);
    return pdbError(interp, PAGEDB_ERROR, "pagedb_parts_orphans: *norphans differs from the callbacks made");
  }
  Tcl_SetObjResult(interp, list);
  Tcl_DecrRefCount(list);
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

/*
** DB forkread N FIELD: the fork() test of index.test.  This process opens a
** zero-copy and a copy reader, takes the random order of epoch 0 and reads
** FIELD of every sample in it (the bytes expected), then forks N children.
** Child k reads positions k, k+N, k+2N, ... through the inherited readers,
** both modes, comparing every byte, then tries to write through the
** inherited handle: pagedb_writer_open, pagedb_commit and pagedb_delete
** must each return PAGEDB_MISUSE (PAGEDB_READONLY for a read-only handle); it closes the handle (which must write
** nothing) and exits with 0, or with the number of the first check that
** failed (1 bytes differ, 2 a read failed, 3 writer_open, 4 commit, 5
** delete, 6 no sample read).  Returns the N exit codes.
*/
static int dbForkRead(Tcl_Interp *interp, DbObj *p, int objc, Tcl_Obj *const objv[]){
  int nchild, field, rc, i;
  int64_t n = 0, *ids = 0, k;
  pagedb_reader *rm = 0, *rcp = 0;
  unsigned char *want = 0;
  size_t *at = 0, total = 0, cap = 0;
  Tcl_Obj *pRes;
  if( objc != 4 ){
    Tcl_WrongNumArgs(interp, 2, objv, "N FIELD");
    return TCL_ERROR;
  }
  if( Tcl_GetIntFromObj(interp, objv[2], &nchild) || Tcl_GetIntFromObj(interp, objv[3], &field) ) return TCL_ERROR;
  if( nchild < 1 || nchild > 64 ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj("forkread: N must be 1 to 64", -1));
    return TCL_ERROR;
  }
  rc = pagedb_order(p->db, PAGEDB_ORDER_RANDOM, 7, 0, 0, 1, 0, &n);
  if( rc == PAGEDB_OK && !(ids = malloc((size_t)(n ? n : 1) * sizeof *ids)) ) rc = PAGEDB_NOMEM;
  if( rc == PAGEDB_OK ) rc = pagedb_order(p->db, PAGEDB_ORDER_RANDOM, 7, 0, 0, 1, ids, &n);
  if( rc == PAGEDB_OK ) rc = pagedb_reader_open(p->db, PAGEDB_READ_MMAP, &rm);
  if( rc == PAGEDB_OK ) rc = pagedb_reader_open(p->db, PAGEDB_READ_COPY, &rcp);
  if( rc == PAGEDB_OK && !(at = malloc((size_t)(n + 1) * sizeof *at)) ) rc = PAGEDB_NOMEM;
  for(k = 0; rc == PAGEDB_OK && k < n; k++){
    const void *data;
    size_t sz;
    rc = pagedb_read(rcp, ids[k], field, &data, &sz);
    if( rc != PAGEDB_OK ) break;
    if( total + sz > cap ){
      unsigned char *nw;
      cap = (total + sz) * 2 + 64;
      if( !(nw = realloc(want, cap)) ){ rc = PAGEDB_NOMEM; break; }
      want = nw;
    }
    at[k] = total;
    memcpy(want + total, data, sz);
    total += sz;
  }
  if( at ) at[n] = total;
  pRes = Tcl_NewObj();
  int nforked = 0;
  pid_t pids[64];
  for(i = 0; rc == PAGEDB_OK && i < nchild; i++){
    pid_t pid = fork();
    if( pid == 0 ){
      int code = 0, nread = 0;
      pagedb_writer *w = 0;
      for(k = i; k < n && !code; k += nchild){
        pagedb_reader *rr = (k / nchild) % 2 ? rm : rcp;
        const void *data;
        size_t sz;
        if( pagedb_read(rr, ids[k], field, &data, &sz) != PAGEDB_OK ) code = 2;
        else if( sz != at[k + 1] - at[k] || memcmp(data, want + at[k], sz) != 0 ) code = 1;
        nread++;
      }
      /* PAGEDB_READONLY comes first for a read-only handle. */
#define FORK_REFUSED(x) ((x) == PAGEDB_MISUSE || (x) == PAGEDB_READONLY)
      if( !code && !FORK_REFUSED(pagedb_writer_open(p->db, &w)) ) code = 3;
      if( !code && !FORK_REFUSED(pagedb_commit(p->db)) ) code = 4;
      if( !code && n > 0 && !FORK_REFUSED(pagedb_delete(p->db, ids[0])) ) code = 5;
      if( !code && nread == 0 && n >= nchild ) code = 6;
      pagedb_close(p->db);
      _exit(code);
    }
    if( pid < 0 ){
      rc = PAGEDB_ERROR;
      break;
    }
    pids[nforked++] = pid;
  }
  for(i = 0; i < nforked; i++){
    int st = 0;
    waitpid(pids[i], &st, 0);
    Tcl_ListObjAppendElement(0, pRes, Tcl_NewIntObj(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st)));
  }
  pagedb_reader_close(rm);
  pagedb_reader_close(rcp);
  free(ids);
  free(at);
  free(want);
  if( rc != PAGEDB_OK ){
    Tcl_DecrRefCount(pRes);
    return pdbError(interp, rc, pagedb_errmsg(p->db));
  }
  Tcl_SetObjResult(interp, pRes);
  return TCL_OK;
}

static int dbCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  static const char *azSub[] = {
    "close", "field_add", "field_index", "fields", "count", "pages", "page_size",
    "commit", "errmsg", "sql", "writer", "reader", "ingest", "verify",
    "set_page_size", "path", "catalog_path", "order", "stats", "field_stats", "attach", "check",
    "delete", "vacuum", "sql_update", "sql_user", "index_state", "forkread", "push", "vfs", "sql_values", "field_align",
    "dict_train", "dict_set", "dicts", "parts_commit", "part_seal", "part_count", "parts_orphans", 0
  };
  enum { D_CLOSE, D_FIELD_ADD, D_FIELD_INDEX, D_FIELDS, D_COUNT, D_PAGES, D_PAGE_SIZE,
         D_COMMIT, D_ERRMSG, D_SQL, D_WRITER, D_READER, D_INGEST, D_VERIFY,
         D_SET_PAGE_SIZE, D_PATH, D_CATALOG_PATH, D_ORDER, D_STATS, D_FIELD_STATS, D_ATTACH, D_CHECK,
         D_DELETE, D_VACUUM, D_SQL_UPDATE, D_SQL_USER, D_INDEX_STATE, D_FORKREAD, D_PUSH, D_VFS, D_SQL_VALUES, D_FIELD_ALIGN,
         D_DICT_TRAIN, D_DICT_SET, D_DICTS, D_PARTS_COMMIT, D_PART_SEAL, D_PART_COUNT, D_PARTS_ORPHANS };
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
      int type, codec = PAGEDB_CODEC_NONE, align = -1;
      if( objc != 4 && objc != 5 && objc != 6 ){
        Tcl_WrongNumArgs(interp, 2, objv, "NAME TYPE ?CODEC? ?ALIGN?");
        return TCL_ERROR;
      }
      if( strncmp(Tcl_GetString(objv[3]), "tensor:", 7) == 0 ){
        /* tensor:DTYPE:D1,D2,... with * for a variable dimension */
        const char *z = Tcl_GetString(objv[3]) + 7, *colon = strchr(z, ':');
        int64_t dims[PAGEDB_TENSOR_MAX_DIMS + 2];
        int dtype, ndim;
        Tcl_Obj *dt = Tcl_NewStringObj(z, colon ? (int)(colon - z) : -1);
        Tcl_IncrRefCount(dt);
        int bad = parseDtype(interp, dt, &dtype);
        Tcl_DecrRefCount(dt);
        if( bad ) return TCL_ERROR;
        Tcl_Obj *dl = Tcl_NewStringObj(colon ? colon + 1 : "", -1);
        Tcl_IncrRefCount(dl);
        Tcl_Obj *sp = Tcl_NewListObj(0, 0);
        Tcl_IncrRefCount(sp);
        {   /* split on commas */
          const char *q = Tcl_GetString(dl);
          while( *q ){
            const char *e = strchr(q, ',');
            int len = e ? (int)(e - q) : (int)strlen(q);
            Tcl_ListObjAppendElement(0, sp, Tcl_NewStringObj(q, len));
            q += len + (e ? 1 : 0);
          }
        }
        ndim = parseDims(interp, sp, dims, PAGEDB_TENSOR_MAX_DIMS + 2);
        Tcl_DecrRefCount(dl);
        Tcl_DecrRefCount(sp);
        if( ndim < 0 ) return TCL_ERROR;
        if( objc >= 5 && parseCodec(interp, objv[4], &codec) ) return TCL_ERROR;
        if( objc == 6 && Tcl_GetIntFromObj(interp, objv[5], &align) ) return TCL_ERROR;
        rc = pagedb_field_add_tensor(db, Tcl_GetString(objv[2]), dtype, ndim, dims, codec,
                                     objc == 6 ? align : PAGEDB_ALIGN_DEFAULT);
        if( rc == PAGEDB_OK ){
          Tcl_SetObjResult(interp, Tcl_NewIntObj(pagedb_field_count(db) - 1));
          return TCL_OK;
        }
        break;
      }
      if( parseType(interp, objv[3], &type) ) return TCL_ERROR;
      if( objc >= 5 && parseCodec(interp, objv[4], &codec) ) return TCL_ERROR;
      if( objc == 6 && Tcl_GetIntFromObj(interp, objv[5], &align) ) return TCL_ERROR;
      /* Without ALIGN, pagedb_field_add itself (its default). */
      rc = objc == 6 ? pagedb_field_add_aligned(db, Tcl_GetString(objv[2]), type, codec, align)
                     : pagedb_field_add(db, Tcl_GetString(objv[2]), type, codec);
      if( rc == PAGEDB_OK ){
        Tcl_SetObjResult(interp, Tcl_NewIntObj(pagedb_field_count(db) - 1));
        return TCL_OK;
      }
      break;
    }
    case D_FIELD_ALIGN: {
      int i;
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "FIELD");
        return TCL_ERROR;
      }
      i = getField(db, objv[2]);
      Tcl_SetObjResult(interp, Tcl_NewIntObj(pagedb_field_align(db, i)));
      return TCL_OK;
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
        Tcl_ListObjAppendElement(0, e, fieldTypeObj(db, i));
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
    case D_VFS:
      Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_vfs_name(db), -1));
      return TCL_OK;
    case D_INDEX_STATE: {
      /* {mapped|rebuilt|memory WHY} (pagedb_index_state) */
      static const char *azState[] = { "none", "mapped", "rebuilt", "memory" };
      const char *why;
      int st = pagedb_index_state(db, &why);
      Tcl_Obj *pRes = Tcl_NewObj();
      Tcl_ListObjAppendElement(0, pRes, Tcl_NewStringObj(azState[st >= 0 && st <= 3 ? st : 0], -1));
      Tcl_ListObjAppendElement(0, pRes, Tcl_NewStringObj(why, -1));
      Tcl_SetObjResult(interp, pRes);
      return TCL_OK;
    }
    case D_SQL:
    case D_SQL_VALUES: {
      /* sql: a flat list of every value as text; sql_values: {TYPE VALUE}
      ** per value of pagedb_sql_values, a BLOB in hex */
      Tcl_Obj *pList;
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "SQL");
        return TCL_ERROR;
      }
      pList = Tcl_NewObj();
      Tcl_IncrRefCount(pList);
      rc = iSub == D_SQL ? pagedb_sql(db, Tcl_GetString(objv[2]), sqlRow, pList)
                         : pagedb_sql_values(db, Tcl_GetString(objv[2]), sqlValuesRow, pList);
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
    case D_DICT_TRAIN: {
      int ns = 0, size = 0;
      if( objc < 3 || objc > 5 ){
        Tcl_WrongNumArgs(interp, 2, objv, "FIELD ?SAMPLES? ?SIZE?");
        return TCL_ERROR;
      }
      if( objc >= 4 && Tcl_GetIntFromObj(interp, objv[3], &ns) ) return TCL_ERROR;
      if( objc >= 5 && Tcl_GetIntFromObj(interp, objv[4], &size) ) return TCL_ERROR;
      rc = pagedb_field_dict_train(db, getField(db, objv[2]), (unsigned)ns, (size_t)size);
      break;
    }
    case D_DICT_SET: {
      int n;
      if( objc != 4 ){
        Tcl_WrongNumArgs(interp, 2, objv, "FIELD BYTES");
        return TCL_ERROR;
      }
      const unsigned char *b = Tcl_GetByteArrayFromObj(objv[3], &n);
      rc = pagedb_field_dict_set(db, getField(db, objv[2]), b, (size_t)n);
      break;
    }
    case D_DICTS: {
      uint32_t ids[64];
      size_t sizes[64];
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "FIELD");
        return TCL_ERROR;
      }
      int n = pagedb_field_dicts(db, getField(db, objv[2]), ids, sizes, 64);
      if( n < 0 ) return pdbError(interp, PAGEDB_MISUSE, "bad field");
      Tcl_Obj *pRes = Tcl_NewListObj(0, 0);
      for(int i = 0; i < n && i < 64; i++){
        Tcl_ListObjAppendElement(0, pRes, Tcl_NewWideIntObj(ids[i]));
        Tcl_ListObjAppendElement(0, pRes, Tcl_NewWideIntObj((Tcl_WideInt)sizes[i]));
      }
      Tcl_SetObjResult(interp, pRes);
      break;
    }
    case D_SQL_USER: {
      int64_t n = -1;
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "SQL");
        return TCL_ERROR;
      }
      rc = pagedb_sql_user(db, Tcl_GetString(objv[2]), &n);
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
      return dbIngest(interp, p->db, objc, objv);
    case D_VERIFY:
      return dbVerify(interp, p->db, objc, objv);
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
    case D_PUSH:
      if( objc != 3 ){
        Tcl_WrongNumArgs(interp, 2, objv, "DEST");
        return TCL_ERROR;
      }
      rc = pagedb_push(db, Tcl_GetString(objv[2]));
      break;
    case D_ATTACH:
      return dbAttach(interp, p, objc, objv);
    case D_PARTS_COMMIT:
      return dbPartsCommit(interp, p, objc, objv);
    case D_PART_SEAL: {
      uint64_t seal = 0;
      rc = pagedb_part_seal(db, &seal);
      if( rc != PAGEDB_OK ) return pdbError(interp, rc, pagedb_errmsg(db));
      /* snprintf: Tcl_ObjPrintf prints a seal with its top bit set as a
      ** negative number ("-29b0..."). */
      char hex[17];
      snprintf(hex, sizeof hex, "%016llx", (unsigned long long)seal);
      Tcl_SetObjResult(interp, Tcl_NewStringObj(hex, -1));
      return TCL_OK;
    }
    case D_PART_COUNT:
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)pagedb_part_count(db)));
      return TCL_OK;
    case D_PARTS_ORPHANS:
      return dbPartsOrphans(interp, p, objc, objv);
    case D_CHECK:
      return dbCheck(interp, p, objc, objv);
    case D_FORKREAD:
      return dbForkRead(interp, p, objc, objv);
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

/* pagedb_remote_stats: this process's remote counters, as a dict. */
static int remoteStatsCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  pagedb_remote_counters c;
  int rc = pagedb_remote_stats(&c);
  if( rc ) return pdbError(interp, rc, "pagedb_remote_stats failed");
  Tcl_Obj *d = Tcl_NewDictObj();
#define RS(f) Tcl_DictObjPut(interp, d, Tcl_NewStringObj(#f, -1), Tcl_NewWideIntObj(c.f))
  RS(requests); RS(bytes); RS(retries); RS(failures); RS(chunk_fetches);
  RS(chunk_hits); RS(chunk_bad); RS(chunk_forged); RS(evictions); RS(uncached); RS(cred_refreshes); RS(cred_refresh_failures);
#undef RS
  Tcl_SetObjResult(interp, d);
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

/*
** pagedb_kill9 PID: SIGKILL, sent at once.  A shell's kill would fork this
** process first, which takes longer than a recovering open under the
** sanitizers' large mappings, so a kill meant to land inside it would not.
*/
static int kill9Cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  int pid;
  if( objc != 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "PID");
    return TCL_ERROR;
  }
  if( Tcl_GetIntFromObj(interp, objv[1], &pid) ) return TCL_ERROR;
  if( pid <= 0 || kill((pid_t)pid, SIGKILL) != 0 ){
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("kill %d: %s", pid, pid <= 0 ? "not a process" : strerror(errno)));
    return TCL_ERROR;
  }
  return TCL_OK;
}

/* pagedb_busy_timeout MS, pagedb_parts_open N, pagedb_parts_copy BYTES:
** pagedb_config of the int64 op CD (PAGEDB_CONFIG_BUSY_TIMEOUT,
** PAGEDB_CONFIG_PARTS_OPEN, PAGEDB_CONFIG_PARTS_COPY) with the value;
** returns the result's name. */
static int configIntCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  Tcl_WideInt v;
  if( objc != 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "VALUE");
    return TCL_ERROR;
  }
  if( Tcl_GetWideIntFromObj(interp, objv[1], &v) ) return TCL_ERROR;
  Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_errname(pagedb_config((int)(intptr_t)cd, (int64_t)v)), -1));
  return TCL_OK;
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
  Tcl_CreateObjCommand(interp, "pagedb_remote_stats", remoteStatsCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_messages", messagesCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_check_null", checkNullCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_kill9", kill9Cmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_busy_timeout", configIntCmd, (ClientData)(intptr_t)PAGEDB_CONFIG_BUSY_TIMEOUT, 0);
  Tcl_CreateObjCommand(interp, "pagedb_parts_open", configIntCmd, (ClientData)(intptr_t)PAGEDB_CONFIG_PARTS_OPEN, 0);
  Tcl_CreateObjCommand(interp, "pagedb_parts_copy", configIntCmd, (ClientData)(intptr_t)PAGEDB_CONFIG_PARTS_COPY, 0);
  Tclfault_Init(interp);
  Tclmem_Init(interp);
  if( Tclpool_Init(interp) != TCL_OK ) return TCL_ERROR;
  Tclstress_Init(interp);
  Tclsyscall_Init(interp);
  Tclremote_Init(interp);
  Tclpartsrace_Init(interp);
  {
    static int once = 0;
    if( !once ){
      once = 1;
      Tcl_CreateExitHandler(exitHandler, 0);
    }
  }
  return Tcl_PkgProvide(interp, "pagedb", "0.1");
}
