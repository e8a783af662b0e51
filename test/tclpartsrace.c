/*
** tclpartsrace.c -- pagedb_parts_race, parts.test's command: the first
** commit of parts into a dataset while reader threads of the same handle
** read it (the commit rewrites the index and switches them to the new:
** api_install_index).
**
**   pagedb_parts_race PATH PARTS ?-readers N? ?-count N? ?-seed S?
**                     ?-min BYTES? ?-max BYTES?
**
** opens the dataset at PATH read-write and starts N reader threads
** (default 4; even ones zero-copy, odd ones by copy) on the handle; once
** every one has its reader open, one thread commits the part datasets of
** the list PARTS (KEEP) while the readers read random ids of [0, COUNT)
** (default 400), each sample that is visible checked whole against the data
** DB ingest writes with the same -seed, -min and -max (tcldata.c,
** verifyOne); once the commit has returned, each reader, through the same
** reader, reads 200 random ids of that range, every one of which must be
** visible and intact.  Returns a dict: committed (samples), seen (visible
** samples read during the commit or after it).  Fails with the first error.
*/
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tclpagedb.h"
#include "tcldata.h"

typedef struct Race Race;
struct Race {
  Job job;                 /* db, g, nReader, nCount, stop, writersDone, nSeen */
  pagedb_part *aPart;
  int nPart;
  atomic_int nOpen;        /* readers open so far */
  int64_t nCommitted;
};

/* The committer: waits for every reader to be open, then commits. */
static void *commitThread(void *arg){
  Race *p = (Race *)((JobThread *)arg)->job;
  while( atomic_load(&p->nOpen) < p->job.nReader && !atomic_load(&p->job.stop) ) sched_yield();
  if( atomic_load(&p->job.stop) ) return 0;
  int rc = pagedb_parts_commit(p->job.db, p->aPart, p->nPart, PAGEDB_ATTACH_KEEP, &p->nCommitted);
  if( rc != PAGEDB_OK ) jobFail(&p->job, rc, "%s (parts_commit)", pagedb_errmsg(p->job.db));
  return 0;
}

static void *readThread(void *arg){
  JobThread *jt = (JobThread *)arg;
  Race *p = (Race *)jt->job;
  Job *job = &p->job;
  pagedb_reader *r = 0;
  unsigned char *buf = 0;
  size_t nBuf = 0;
  uint64_t s = (uint64_t)jt->t * 7919 + job->g.seed;
  int rc = pagedb_reader_open(job->db, jt->t % 2 ? PAGEDB_READ_COPY : PAGEDB_READ_MMAP, &r);
  atomic_fetch_add(&p->nOpen, 1);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (reader %d, reader_open)", pagedb_errmsg(job->db), jt->t);
    return 0;
  }
  while( !atomic_load(&job->stop) && !atomic_load(&job->writersDone) ){
    int64_t id = (int64_t)(splitmix64(&s) % (uint64_t)job->nCount);
    int k = verifyOne(job, r, id, 1, &buf, &nBuf);
    if( k < 0 ) break;
    if( k == 0 ) atomic_fetch_add(&job->nSeen, 1);
  }
  for(int i = 0; i < 200 && !atomic_load(&job->stop); i++){
    int64_t id = (int64_t)(splitmix64(&s) % (uint64_t)job->nCount);
    if( verifyOne(job, r, id, 0, &buf, &nBuf) < 0 ) break;
    atomic_fetch_add(&job->nSeen, 1);
  }
  pagedb_reader_close(r);
  free(buf);
  return 0;
}

static int raceCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  Race p;
  pagedb *db = 0;
  Tcl_Obj **aObj;
  int i, n, rc = TCL_OK;
  (void)cd;
  memset(&p, 0, sizeof p);
  pthread_mutex_init(&p.job.mutex, 0);
  p.job.nThread = 1;
  p.job.nReader = 4;
  p.job.nCount = 400;
  p.job.g.maxSz = 1000;
  if( objc < 3 || (objc - 3) % 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "PATH PARTS ?-readers N? ?-count N? ?-seed S? ?-min B? ?-max B?");
    rc = TCL_ERROR;
    goto out;
  }
  for(i = 3; i < objc; i += 2){
    const char *z = Tcl_GetString(objv[i]);
    Tcl_WideInt w;
    int k = jobOption(interp, &p.job, z, objv[i+1]);
    if( k < 0 ){ rc = TCL_ERROR; goto out; }
    if( k > 0 ) continue;
    if( Tcl_GetWideIntFromObj(interp, objv[i+1], &w) ){ rc = TCL_ERROR; goto out; }
    if( strcmp(z, "-readers") == 0 && w >= 1 && w <= 64 ) p.job.nReader = (int)w;
    else if( strcmp(z, "-count") == 0 && w >= 1 ) p.job.nCount = (int64_t)w;
    else {
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad option %s (or value)", z));
      rc = TCL_ERROR;
      goto out;
    }
  }
  if( Tcl_ListObjGetElements(interp, objv[2], &n, &aObj) ){ rc = TCL_ERROR; goto out; }
  p.nPart = n;
  p.aPart = calloc((size_t)(n ? n : 1), sizeof *p.aPart);
  if( !p.aPart ){ rc = pdbError(interp, PAGEDB_NOMEM, "out of memory"); goto out; }
  for(i = 0; i < n; i++) p.aPart[i].path = Tcl_GetString(aObj[i]);
  int prc = pagedb_open(Tcl_GetString(objv[1]), &db, PAGEDB_OPEN_READWRITE, 0);
  if( prc != PAGEDB_OK ){
    rc = pdbError(interp, prc, db ? pagedb_errmsg(db) : "open failed");
    goto out;
  }
  p.job.db = db;
  if( genSetup(interp, db, &p.job.g) != TCL_OK ){ rc = TCL_ERROR; goto out; }
  /* (Job is Race's first member: the threads find the race through it.) */
  rc = jobRun(interp, &p.job, commitThread, readThread);
  if( rc == TCL_OK && p.job.rc != PAGEDB_OK ){
    rc = pdbError(interp, p.job.rc, p.job.zErr ? p.job.zErr : "failed");
  }else if( rc == TCL_OK ){
    Tcl_Obj *res = Tcl_NewListObj(0, 0);
    Tcl_ListObjAppendElement(interp, res, Tcl_NewStringObj("committed", -1));
    Tcl_ListObjAppendElement(interp, res, Tcl_NewWideIntObj((Tcl_WideInt)p.nCommitted));
    Tcl_ListObjAppendElement(interp, res, Tcl_NewStringObj("seen", -1));
    Tcl_ListObjAppendElement(interp, res, Tcl_NewWideIntObj((Tcl_WideInt)atomic_load(&p.job.nSeen)));
    Tcl_SetObjResult(interp, res);
  }
out:
  if( db ){
    int crc = pagedb_close(db);
    if( rc == TCL_OK && crc != PAGEDB_OK ) rc = pdbError(interp, crc, "close failed");
  }
  free(p.aPart);
  jobFree(&p.job);
  return rc;
}

void Tclpartsrace_Init(Tcl_Interp *interp){
  Tcl_CreateObjCommand(interp, "pagedb_parts_race", raceCmd, 0, 0);
}
