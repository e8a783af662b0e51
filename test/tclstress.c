/*
** tclstress.c -- pagedb_stress, stress.test's command: writer threads,
** reader threads in both read modes and commits at once on one handle, for
** a given time, every read checked.
**
**   pagedb_stress PATH ?-writers N? ?-readers N? ?-seconds S? ?-seed S?
**                 ?-min BYTES? ?-max BYTES? ?-commitevery N? ?-flagfile F?
**                 ?-maxkeys N? ?-until FILES? ?-maxseconds S?
**
** opens the dataset at PATH read-write (its field 0 must be BYTES or TEXT)
** and for S seconds (default 3) runs N writer threads (default 4) and N
** reader threads (default 4) on the handle.  With -until, the run goes on
** past S seconds until it has done every kind of work it counts (a commit,
** a cancelled sample, a read by each read mode it has readers of, a sample
** seen) and every file of the list FILES exists (other processes make them
** once they have done their part while the run lasted), but never past
** -maxseconds (default 600): so that a busy machine, which may leave a
** thread or another process without the CPU for seconds, lengthens the
** run instead of leaving it without what the test checks.  Reader I reads
** zero-copy when I is even, by copy when it is odd.  Writer T writes the samples with keys
** T, T+N, T+2N, ... below -maxkeys (default 2^22), each as DB ingest writes
** it (the same -seed, -min, -max: DB verify checks them afterwards), but
** begins every 16th key (by a hash of it) with other bytes and cancels it;
** after every -commitevery (default 40) of its samples it commits.
** Readers read random keys, most near the newest, and fail the command
** when
**   - a visible sample differs from the data in any byte (torn), or
**     a cancelled key or one never begun is visible;
**   - a sample is visible although no commit was running when its writer
**     began it and none began since (uncommitted: commits are counted
**     before and after the call; one running at the begin may still
**     collect the sample's page, so such samples are not judged);
**   - a sample seen before reads PAGEDB_NOTFOUND (lost), or
**     pagedb_count goes down.
** -flagfile F exists exactly while the handle is open (made after the
** open, removed before the close), so that another process knows when a
** read-write open of PATH must fail with PAGEDB_BUSY.  The handle is closed
** (committing the rest) before the command returns a dict: written,
** cancelled, commits, reads_mmap, reads_copy, seen (reads that found the
** sample intact), judged (of those, samples begun while no commit ran).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tclpagedb.h"
#include "tcldata.h"

/* A key's state (Stress.aState): KEY_FREE until its writer begins it, then
** the number of commits begun at that moment shifted left by 3, with
** KEY_QUIET if no commit was running then, KEY_CANCELLED and, once a reader
** saw it, KEY_SEEN. */
#define KEY_FREE       UINT64_MAX
#define KEY_CANCELLED  1u
#define KEY_SEEN       2u
#define KEY_QUIET      4u

typedef struct Stress Stress;
struct Stress {
  Job job;                     /* first: the threads are given &job */
  int nWriter;
  struct timespec end;         /* CLOCK_MONOTONIC: when writers may stop */
  struct timespec hardEnd;     /* -until: when they stop whatever is missing */
  int nUntil;                  /* -until: the files that must exist */
  const char **azUntil;
  atomic_int goalsMet;         /* -until: everything was done (sticky) */
  int64_t nKey;                /* keys below this (aState's size) */
  _Atomic uint64_t *aState;    /* per key, as above */
  atomic_ullong nCommitBegun;  /* commits called (counted before the call) */
  atomic_ullong nCommitEnded;  /* commits returned (counted after) */
  atomic_llong nHigh;          /* 1 + the largest key begun */
  atomic_llong nCancelled, nCommit, nSeen, nJudged;
  atomic_llong aRead[2];       /* reads by mmap and copy readers */
};

static int isPast(const struct timespec *now, const struct timespec *t){
  return now->tv_sec > t->tv_sec || (now->tv_sec == t->tv_sec && now->tv_nsec >= t->tv_nsec);
}

/* Whether the run has done everything -until asks for (see the header). */
static int goalsMet(Stress *s){
  int i;
  if( atomic_load(&s->goalsMet) ) return 1;
  if( atomic_load(&s->nCommit) == 0 || atomic_load(&s->nCancelled) == 0 ) return 0;
  if( s->job.nReader >= 1 && (atomic_load(&s->aRead[0]) == 0 || atomic_load(&s->nSeen) == 0) ) return 0;
  if( s->job.nReader >= 2 && atomic_load(&s->aRead[1]) == 0 ) return 0;
  for(i = 0; i < s->nUntil; i++){
    if( access(s->azUntil[i], F_OK) != 0 ) return 0;
  }
  atomic_store(&s->goalsMet, 1);
  return 1;
}

/* Whether the writers stop now: S seconds passed and, with -until, the
** goals met or -maxseconds passed. */
static int timeUp(Stress *s){
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if( !isPast(&now, &s->end) ) return 0;
  return s->azUntil == 0 || isPast(&now, &s->hardEnd) || goalsMet(s);
}

/* T = now + SECS. */
static void deadlineIn(struct timespec *t, double secs){
  clock_gettime(CLOCK_MONOTONIC, t);
  t->tv_sec += (time_t)secs;
  t->tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
  if( t->tv_nsec >= 1000000000L ){ t->tv_sec++; t->tv_nsec -= 1000000000L; }
}

/* Begin KEY through W, give field 0 bytes it never has, and cancel it. */
static int stressCancel(Stress *s, int t, pagedb_writer *w, int64_t key){
  static const char zJunk[] = "a cancelled sample: never to be read";
  int rc = pagedb_sample_begin(w, key);
  if( rc == PAGEDB_OK ) rc = pagedb_put(w, 0, zJunk, sizeof(zJunk));
  if( rc == PAGEDB_OK ) rc = pagedb_sample_cancel(w);
  if( rc != PAGEDB_OK ){
    jobFail(&s->job, rc, "%s (stress writer %d, cancelled key %lld)",
            pagedb_writer_errmsg(w), t, (long long)key);
  }
  return rc;
}

static void *stressWriter(void *arg){
  JobThread *jt = (JobThread *)arg;
  Stress *s = (Stress *)jt->job;
  Job *job = &s->job;
  pagedb_writer *w = 0;
  unsigned char *buf = 0;
  size_t nBuf = 0;
  int64_t key, nMine = 0;
  int rc = pagedb_writer_open(job->db, &w);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (stress writer %d, writer_open)", pagedb_errmsg(job->db), jt->t);
    return 0;
  }
  for(key = jt->t; key < s->nKey && !atomic_load(&job->stop) && !timeUp(s); key += s->nWriter){
    int cancel = mix3(job->g.seed, (uint64_t)key, 0xCA) % 16 == 0;
    long long hi = atomic_load(&s->nHigh);
    /* The state is set before sample_begin.  Ended is read before begun: if
    ** they are equal, no commit was running when begun was read, so a
    ** commit that shows the sample is one that begins after. */
    uint64_t e = atomic_load(&s->nCommitEnded);
    uint64_t b = atomic_load(&s->nCommitBegun);
    atomic_store(&s->aState[key], (b << 3) | (b == e ? KEY_QUIET : 0) | (cancel ? KEY_CANCELLED : 0));
    while( hi < key + 1 && !atomic_compare_exchange_weak(&s->nHigh, &hi, key + 1) ){}
    if( cancel ){
      if( stressCancel(s, jt->t, w, key) != PAGEDB_OK ) break;
      atomic_fetch_add(&s->nCancelled, 1);
      continue;
    }
    if( ingestOne(job, jt->t, w, key, &buf, &nBuf) != PAGEDB_OK ) break;
    atomic_fetch_add(&job->nDone, 1);
    if( ++nMine % job->commitEvery == 0 ){
      atomic_fetch_add(&s->nCommitBegun, 1);
      rc = pagedb_commit(job->db);
      atomic_fetch_add(&s->nCommitEnded, 1);
      if( rc != PAGEDB_OK ){
        jobFail(job, rc, "%s (stress writer %d, commit)", pagedb_errmsg(job->db), jt->t);
        break;
      }
      atomic_fetch_add(&s->nCommit, 1);
    }
  }
  rc = pagedb_writer_close(w);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (stress writer %d, writer_close)", pagedb_errmsg(job->db), jt->t);
  }
  free(buf);
  return 0;
}

/* A key for reader T's Ith read: half uniform over every key begun so far
** and a few beyond, half among the newest. */
static int64_t stressPick(Stress *s, int t, uint64_t i){
  uint64_t h = mix3(s->job.g.seed, (uint64_t)t, i);
  int64_t hi = atomic_load(&s->nHigh) + s->nWriter;
  int64_t lo = (h & 1) ? 0 : hi - 16 * s->nWriter;
  if( lo < 0 ) lo = 0;
  return lo + (int64_t)((h >> 1) % (uint64_t)(hi - lo));
}

/* Check what reader T found at KEY: K is verifyOne's result, ST0 the key's
** state before the read.  0 if it may be so, else -1 after jobFail. */
static int stressJudge(Stress *s, int t, int64_t key, int k, uint64_t st0){
  Job *job = &s->job;
  uint64_t st, nBegun = atomic_load(&s->nCommitBegun);
  if( k == 1 ){
    if( st0 != KEY_FREE && (st0 & KEY_SEEN) ){
      jobFail(job, PAGEDB_ERROR, "stress reader %d: sample %lld was seen, now it is not found",
              t, (long long)key);
      return -1;
    }
    return 0;
  }
  st = atomic_load(&s->aState[key]);
  if( st == KEY_FREE || (st & KEY_CANCELLED) ){
    jobFail(job, PAGEDB_ERROR, "stress reader %d: sample %lld is visible, but it was %s",
            t, (long long)key, st == KEY_FREE ? "never begun" : "cancelled");
    return -1;
  }
  if( st & KEY_QUIET ){
    if( (st >> 3) >= nBegun ){
      jobFail(job, PAGEDB_ERROR, "stress reader %d: sample %lld is visible, but no commit ran "
              "since its writer began it (%llu commits then, %llu now)", t, (long long)key,
              (unsigned long long)(st >> 3), (unsigned long long)nBegun);
      return -1;
    }
    atomic_fetch_add(&s->nJudged, 1);
  }
  if( !(st & KEY_SEEN) ) atomic_fetch_or(&s->aState[key], KEY_SEEN);
  return 0;
}

static void *stressReader(void *arg){
  JobThread *jt = (JobThread *)arg;
  Stress *s = (Stress *)jt->job;
  Job *job = &s->job;
  int copy = jt->t % 2;
  pagedb_reader *r = 0;
  unsigned char *buf = 0;
  size_t nBuf = 0;
  uint64_t i;
  int64_t nLast = 0;           /* pagedb_count at the previous read */
  int rc = pagedb_reader_open(job->db, copy ? PAGEDB_READ_COPY : PAGEDB_READ_MMAP, &r);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (stress reader %d, reader_open)", pagedb_errmsg(job->db), jt->t);
    return 0;
  }
  for(i = 0; !atomic_load(&job->stop) && !atomic_load(&job->writersDone); i++){
    int64_t n, key = stressPick(s, jt->t, i);
    uint64_t st0;
    int k;
    if( key >= s->nKey ) continue;
    st0 = atomic_load(&s->aState[key]);
    k = verifyOne(job, r, key, 1, &buf, &nBuf);
    if( k < 0 || stressJudge(s, jt->t, key, k, st0) ) break;
    atomic_fetch_add(&s->aRead[copy], 1);
    if( k == 0 ) atomic_fetch_add(&s->nSeen, 1);
    n = pagedb_count(job->db);
    if( n < nLast ){
      jobFail(job, PAGEDB_ERROR, "stress reader %d: pagedb_count went from %lld to %lld",
              jt->t, (long long)nLast, (long long)n);
      break;
    }
    nLast = n;
  }
  pagedb_reader_close(r);
  free(buf);
  return 0;
}

/* Parse the options into S (whose job has its defaults).  TCL_OK or an
** error in the interpreter. */
static int stressOptions(Tcl_Interp *interp, Stress *s, double *pSecs, double *pMax,
                         const char **pzFlag, int objc, Tcl_Obj *const objv[]){
  int i;
  for(i = 2; i < objc; i += 2){
    const char *z = Tcl_GetString(objv[i]);
    Tcl_WideInt w;
    int k;
    if( i + 1 >= objc ) goto usage;
    if( strcmp(z, "-writers") == 0 ) z = "-threads";
    k = jobOption(interp, &s->job, z, objv[i+1]);
    if( k < 0 ) return TCL_ERROR;
    if( k > 0 ) continue;
    if( strcmp(z, "-seconds") == 0 ){
      if( Tcl_GetDoubleFromObj(interp, objv[i+1], pSecs) ) return TCL_ERROR;
      continue;
    }
    if( strcmp(z, "-flagfile") == 0 ){
      *pzFlag = Tcl_GetString(objv[i+1]);
      continue;
    }
    if( strcmp(z, "-maxseconds") == 0 ){
      if( Tcl_GetDoubleFromObj(interp, objv[i+1], pMax) ) return TCL_ERROR;
      continue;
    }
    if( strcmp(z, "-until") == 0 ){
      /* The list's elements stay valid while objv[i+1] does: the call. */
      Tcl_Obj **ap;
      int n, j;
      if( Tcl_ListObjGetElements(interp, objv[i+1], &n, &ap) ) return TCL_ERROR;
      free(s->azUntil);
      s->azUntil = calloc((size_t)n + 1, sizeof(char *));
      if( s->azUntil == 0 ) return pdbError(interp, PAGEDB_NOMEM, "-until");
      for(j = 0; j < n; j++) s->azUntil[j] = Tcl_GetString(ap[j]);
      s->nUntil = n;
      continue;
    }
    if( Tcl_GetWideIntFromObj(interp, objv[i+1], &w) ) return TCL_ERROR;
    if( strcmp(z, "-readers") == 0 && w >= 0 && w <= 64 ) s->job.nReader = (int)w;
    else if( strcmp(z, "-commitevery") == 0 && w >= 1 ) s->job.commitEvery = w;
    else if( strcmp(z, "-maxkeys") == 0 && w >= 1 && w <= ((int64_t)1 << 30) ) s->nKey = w;
    else goto usage;
  }
  return TCL_OK;
usage:
  Tcl_SetObjResult(interp, Tcl_ObjPrintf(
      "bad option \"%s\": pagedb_stress PATH ?-writers N? ?-readers 0..64? ?-seconds S? "
      "?-seed S? ?-min BYTES? ?-max BYTES? ?-commitevery N>=1? ?-flagfile F? ?-maxkeys N? "
      "?-until FILES? ?-maxseconds S?",
      Tcl_GetString(objv[i])));
  return TCL_ERROR;
}

/* Open, run the threads, close; the first error is left in S's job. */
static void stressRun(Tcl_Interp *interp, Stress *s, const char *zPath, double secs,
                      double maxSecs, const char *zFlag){
  Job *job = &s->job;
  int rc = pagedb_open(zPath, &job->db, PAGEDB_OPEN_READWRITE, 0);
  if( rc != PAGEDB_OK ){
    jobFail(job, rc, "%s (opening %s)", pagedb_errmsg(job->db), zPath);
    pagedb_close(job->db);
    return;
  }
  if( zFlag ){
    FILE *f = fopen(zFlag, "w");
    if( f ) fclose(f);
  }
  if( genSetup(interp, job->db, &job->g) != TCL_OK
   || job->g.nField < 1
   || (job->g.aType[0] != PAGEDB_BYTES && job->g.aType[0] != PAGEDB_TEXT) ){
    jobFail(job, PAGEDB_MISUSE, "%s: field 0 must be BYTES or TEXT", zPath);
  }else{
    s->nWriter = job->nThread;
    deadlineIn(&s->end, secs);
    deadlineIn(&s->hardEnd, maxSecs > secs ? maxSecs : secs);
    jobRun(interp, job, stressWriter, stressReader);
  }
  if( zFlag ) unlink(zFlag);
  rc = pagedb_close(job->db);
  if( rc != PAGEDB_OK ) jobFail(job, rc, "closing %s after the stress", zPath);
  job->db = 0;
}

static int stressCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  Stress s;
  double secs = 3, maxSecs = 600;
  const char *zFlag = 0;
  int rc = TCL_ERROR;
  Tcl_Obj *res;
  if( objc < 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "PATH ?options?");
    return TCL_ERROR;
  }
  memset(&s, 0, sizeof(s));
  pthread_mutex_init(&s.job.mutex, 0);
  s.job.nThread = 4;
  s.job.nReader = 4;
  s.job.commitEvery = 40;
  s.job.progressFd = -1;
  s.job.g.maxSz = 1000;
  s.nKey = (int64_t)1 << 22;
  if( stressOptions(interp, &s, &secs, &maxSecs, &zFlag, objc, objv) != TCL_OK ) goto out;
  s.aState = malloc((size_t)s.nKey * sizeof(*s.aState));
  if( s.aState == 0 ){ rc = pdbError(interp, PAGEDB_NOMEM, "stress key states"); goto out; }
  memset(s.aState, 0xff, (size_t)s.nKey * sizeof(*s.aState));
  stressRun(interp, &s, Tcl_GetString(objv[1]), secs, maxSecs, zFlag);
  if( s.job.rc != PAGEDB_OK ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj(s.job.zErr ? s.job.zErr : "stress failed", -1));
    Tcl_SetErrorCode(interp, "PAGEDB", pagedb_errname(s.job.rc), (char *)NULL);
    goto out;
  }
  res = Tcl_NewDictObj();
#define PUT(name, v) Tcl_DictObjPut(0, res, Tcl_NewStringObj(name, -1), \
                                    Tcl_NewWideIntObj((Tcl_WideInt)atomic_load(v)))
  PUT("written", &s.job.nDone);
  PUT("cancelled", &s.nCancelled);
  PUT("commits", &s.nCommit);
  PUT("reads_mmap", &s.aRead[0]);
  PUT("reads_copy", &s.aRead[1]);
  PUT("seen", &s.nSeen);
  PUT("judged", &s.nJudged);
#undef PUT
  Tcl_SetObjResult(interp, res);
  rc = TCL_OK;
out:
  free((void *)s.aState);
  free(s.azUntil);
  jobFree(&s.job);
  return rc;
}

/* Create pagedb_stress. */
void Tclstress_Init(Tcl_Interp *interp){
  Tcl_CreateObjCommand(interp, "pagedb_stress", stressCmd, 0, 0);
}
