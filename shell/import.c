/*
** import.c -- .import: ImageFolder trees, WebDataset tar shards and CSV
** files into a pagedb dataset, with N writer threads.
**
** One Import holds the state of a run.  Its source hands out jobs, one per
** sample, under the import's mutex (impNext): for an ImageFolder tree a
** file to read (the worker reads it outside the lock, so reads run in
** parallel); for tar shards the sample's members, read from the stream in
** the lock (tar is sequential), for CSV one record's cells.  Each worker
** thread has its own pagedb_writer and writes the job's sample outside the
** lock: compression and page writes run in parallel, the engine claiming
** pages with one atomic step.
**
** Sample ids are deterministic: the dataset's largest id plus one, plus the
** job's rank in the source (files in strcmp order of their paths, tar
** samples and CSV records in file order).  So --threads 1 and --threads 8
** give the same dataset, and .export writes the samples back in their
** original order.  A skipped file leaves its id unused.
**
** Commits: every XFER_COMMIT_SAMPLES samples or XFER_COMMIT_BYTES bytes one
** worker calls pagedb_commit (which runs beside the writers and commits
** every page written so far), and the import commits at the end, after the
** writers are closed.  A stop (SIGINT) or an error ends the workers after
** their current sample; what they wrote is then committed as well, so the
** dataset is left at a commit that holds every sample reported imported.
*/
#include "xfer.h"
#include "shell.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define XFER_COMMIT_SAMPLES 10000
#define XFER_COMMIT_BYTES   ((int64_t)1 << 30)
#define XFER_MAX_THREADS    256
#define XFER_MAX_DEPTH      256       /* directory levels below SOURCE */

/* One value of a job's sample. */
typedef struct Put {
  int field;
  int type;             /* PAGEDB_BYTES ... PAGEDB_REAL */
  void *data;           /* BYTES/TEXT: malloc'd when OWNED */
  size_t n;
  int owned;
  int64_t iv;
  double rv;
} Put;

/* One sample to write. */
typedef struct Job {
  int64_t id;
  int64_t idx;          /* ImageFolder: the file's index */
  int nPut, nAlloc;
  Put *aPut;
  int64_t bytes;
} Job;

/*
** A plain tar shard whose members of one key are not all adjacent is read
** by seeking: its members, recorded by the first pass, are grouped by key
** (the groups in the order of their first member) and read group by group.
*/
typedef struct TarRec {
  char *zName;          /* the member's name, for messages */
  char *zKey;
  char *zExt;
  int64_t off, size;    /* its data */
  int64_t pos;          /* its rank in the shard */
} TarRec;
typedef struct TarPlan {
  TarRec *a;            /* members, then sorted into groups of one key */
  int64_t n, nAlloc;
  int64_t *aStart;      /* group i is a[aStart[i] .. aStart[i+1]) ... */
  int64_t *aOrder;      /* ...and groups are read in this order */
  int64_t nGroup, iGroup;
  int unsorted;         /* a key's members are apart: read by this plan */
} TarPlan;

typedef struct Import Import;
struct Import {
  pagedb *db;
  const XferOpts *o;
  const char *zSource;
  pthread_mutex_t mu;         /* guards the source, the error and progress */
  int rc;                     /* the first fatal error, PAGEDB_OK if none */
  char *msg;                  /* ...its message (nmsg bytes) */
  size_t nmsg;
  int64_t base;               /* the id of job 0 */
  int64_t nextJob;            /* jobs handed out */
  int exhausted;              /* the source has no more jobs */
  int64_t total;              /* jobs in the source, for progress */
  _Atomic int64_t done;       /* samples written */
  _Atomic int64_t bytes;      /* their bytes */
  _Atomic int64_t sinceN;     /* samples and bytes since the last commit */
  _Atomic int64_t sinceB;
  _Atomic int64_t nSkipped;
  /* The source: NEXT fills a job (mutex held); LOAD (may be NULL) completes
  ** it outside the lock.  Both return PAGEDB_OK, PAGEDB_NOTFOUND (next: no
  ** more jobs; load: the item was reported and skipped), or an error. */
  int (*xNext)(Import *, Job *, char *, size_t);
  int (*xLoad)(Import *, Job *, char *, size_t);
  /* ImageFolder */
  int rootFd;
  char **azFile;
  int64_t *aLabel;
  int64_t nFile, nFileAlloc;
  char **azClass;
  int64_t nClass, nClassAlloc;
  int fData, fLabel, fPath;
  int nOwn;                   /* the dataset's own files (never imported) */
  dev_t aOwnDev[5];
  ino_t aOwnIno[5];
  /* Tar */
  char **azShard;
  int nShard, iShard;
  TarReader *tr;
  char *zPend;                /* a member read (header only) for the next sample */
  int pendKind;
  int64_t pendSize;
  char **azExt;               /* extensions, sorted; field of each */
  int *aExtField;
  int nExt, nExtAlloc;
  int fKey;
  TarPlan *aPlan;             /* per shard (nShard) */
  /* CSV */
  FILE *csv;
  int64_t csvLine;
  int nCol;
  int *aColType;
  int *aColField;
  char *cBuf;                 /* the current record's cells, NUL-separated */
  size_t nBuf, nBufAlloc;
  size_t *aCell;              /* offsets of the cells in cBuf */
  size_t *aCellLen;
  int nCell, nCellAlloc;
};

/* Record a fatal error (the first one wins).  Caller holds imp->mu. */
static void impFailLocked(Import *imp, int rc, const char *zMsg){
  if( imp->rc ) return;
  imp->rc = rc;
  xfer_msg(imp->msg, imp->nmsg, "%s", zMsg);
}

static void impFail(Import *imp, int rc, const char *zMsg){
  pthread_mutex_lock(&imp->mu);
  impFailLocked(imp, rc, zMsg);
  pthread_mutex_unlock(&imp->mu);
}

/* Report an item skipped on o->err.  Returns PAGEDB_NOTFOUND. */
static int impReport(Import *imp, const char *z){
  pthread_mutex_lock(&imp->mu);
  if( imp->o->err ){
    /* Erase a progress bar being drawn on the same terminal first. */
    if( isatty(fileno(imp->o->err)) ) fputs("\r\033[K", imp->o->err);
    fprintf(imp->o->err, "%s: skipped\n", z);
    fflush(imp->o->err);
  }
  pthread_mutex_unlock(&imp->mu);
  imp->nSkipped++;
  return PAGEDB_NOTFOUND;
}

/* An item that is never imported (a link, a device): reported, skipped. */
static int impIgnore(Import *imp, const char *fmt, ...){
  char z[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(z, sizeof z, fmt, ap);
  va_end(ap);
  return impReport(imp, z);
}

/* An unreadable item: reported and skipped (PAGEDB_NOTFOUND), or with bail
** a fatal error (PAGEDB_IOERR with EMSG). */
static int impSkip(Import *imp, char *emsg, size_t nemsg, const char *fmt, ...){
  char z[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(z, sizeof z, fmt, ap);
  va_end(ap);
  if( imp->o->bail ){
    xfer_msg(emsg, nemsg, "%s (stopped: -bail)", z);
    return PAGEDB_IOERR;
  }
  return impReport(imp, z);
}


static void jobClear(Job *j){
  for(int i = 0; i < j->nPut; i++) if( j->aPut[i].owned ) free(j->aPut[i].data);
  free(j->aPut);
  memset(j, 0, sizeof *j);
}

/* A new value in J; NULL when out of memory. */
static Put *jobPut(Job *j, int field, int type){
  if( j->nPut == j->nAlloc ){
    int n2 = j->nAlloc ? j->nAlloc * 2 : 4;
    Put *a = realloc(j->aPut, (size_t)n2 * sizeof *a);
    if( a == 0 ) return 0;
    j->aPut = a;
    j->nAlloc = n2;
  }
  Put *p = &j->aPut[j->nPut++];
  memset(p, 0, sizeof *p);
  p->field = field;
  p->type = type;
  return p;
}

/* ------------------------------------------------------------------ */
/* Fields                                                              */
/* ------------------------------------------------------------------ */

static const char *typeName(int t){
  return t == PAGEDB_BYTES ? "BYTES" : t == PAGEDB_TEXT ? "TEXT" : t == PAGEDB_INT ? "INT"
       : t == PAGEDB_REAL ? "REAL" : "?";
}

/*
** The fields NAMES (N, of TYPES) in DB: created, in this order, if DB has
** none (BYTES ones with the import's codec), else looked up by name, each
** of which must exist with its type.  AIDX receives their numbers.
*/
static int impFields(Import *imp, int n, char **azName, const int *aType, int *aIdx,
                     char *emsg, size_t nemsg){
  pagedb *db = imp->db;
  if( pagedb_field_count(db) == 0 ){
    for(int i = 0; i < n; i++){
      int codec = aType[i] == PAGEDB_BYTES ? imp->o->codec : PAGEDB_CODEC_NONE;
      int rc = pagedb_field_add(db, azName[i], aType[i], codec);
      if( rc ){
        xfer_msg(emsg, nemsg, "creating field \"%s\" %s: %s (%s)", azName[i], typeName(aType[i]),
               pagedb_errname(rc), pagedb_errmsg(db));
        return rc;
      }
      aIdx[i] = i;
    }
    return PAGEDB_OK;
  }
  for(int i = 0; i < n; i++){
    int f = pagedb_field_index(db, azName[i]);
    if( f < 0 || pagedb_field_type(db, f) != aType[i] ){
      char zHave[64] = "none";
      if( f >= 0 ) snprintf(zHave, sizeof zHave, "%s", typeName(pagedb_field_type(db, f)));
      xfer_msg(emsg, nemsg, "the dataset has fields already, and its field \"%s\" is %s where "
             "this source needs %s (import into an empty dataset, or one of the same fields)",
             azName[i], f < 0 ? "missing" : zHave, typeName(aType[i]));
      return PAGEDB_MISMATCH;
    }
    aIdx[i] = f;
  }
  return PAGEDB_OK;
}

/* pagedb_sql callback: the first column as an integer into *CTX. */
static int maxIdRow(void *ctx, int nCol, char **azVal, char **azName){
  if( nCol > 0 && azVal[0] ) *(int64_t *)ctx = strtoll(azVal[0], 0, 10);
  return 0;
}

/* ------------------------------------------------------------------ */
/* The workers                                                         */
/* ------------------------------------------------------------------ */

static void impProgressLocked(Import *imp){
  if( imp->o->progress ){
    imp->o->progress(imp->o->ctx, atomic_load(&imp->done), imp->total, atomic_load(&imp->bytes));
  }
}

static int stopped(Import *imp){
  return imp->o->stop && *imp->o->stop;
}

/* Write job J's sample with W.  Returns a code, with EMSG. */
static int impWrite(Import *imp, pagedb_writer *w, Job *j, char *emsg, size_t nemsg){
  int rc = pagedb_sample_begin(w, j->id);
  const char *zWhat = "pagedb_sample_begin";
  for(int i = 0; rc == PAGEDB_OK && i < j->nPut; i++){
    Put *p = &j->aPut[i];
    zWhat = pagedb_field_name(imp->db, p->field);
    if( p->type == PAGEDB_INT ) rc = pagedb_put_int(w, p->field, p->iv);
    else if( p->type == PAGEDB_REAL ) rc = pagedb_put_real(w, p->field, p->rv);
    else rc = pagedb_put(w, p->field, p->data, p->n);
  }
  if( rc == PAGEDB_OK ){
    zWhat = "pagedb_sample_end";
    rc = pagedb_sample_end(w, 0);
  }
  if( rc ){
    xfer_msg(emsg, nemsg, "sample %lld (%s): %s: %s", (long long)j->id, zWhat, pagedb_errname(rc),
           pagedb_writer_errmsg(w));
    pagedb_sample_cancel(w);
  }
  return rc;
}

static void *impWorker(void *arg){
  Import *imp = arg;
  pagedb_writer *w = 0;
  char emsg[1024];
  int rc = pagedb_writer_open(imp->db, &w);
  if( rc ){
    xfer_msg(emsg, sizeof emsg, "pagedb_writer_open: %s (%s)", pagedb_errname(rc),
           pagedb_errmsg(imp->db));
    impFail(imp, rc, emsg);
    return 0;
  }
  for(;;){
    Job j;
    memset(&j, 0, sizeof j);
    pthread_mutex_lock(&imp->mu);
    if( imp->rc || stopped(imp) ){
      pthread_mutex_unlock(&imp->mu);
      break;
    }
    rc = imp->xNext(imp, &j, emsg, sizeof emsg);
    if( rc == PAGEDB_OK ) j.id = imp->base + imp->nextJob++;
    else if( rc == PAGEDB_NOTFOUND ) imp->exhausted = 1;
    else impFailLocked(imp, rc, emsg);
    impProgressLocked(imp);
    pthread_mutex_unlock(&imp->mu);
    if( rc ){
      jobClear(&j);
      break;
    }
    if( imp->xLoad ){
      rc = imp->xLoad(imp, &j, emsg, sizeof emsg);
      if( rc == PAGEDB_NOTFOUND ){
        jobClear(&j);
        continue;
      }
      if( rc ){
        impFail(imp, rc, emsg);
        jobClear(&j);
        break;
      }
    }
    rc = impWrite(imp, w, &j, emsg, sizeof emsg);
    int64_t nb = j.bytes;
    jobClear(&j);
    if( rc ){
      impFail(imp, rc, emsg);
      break;
    }
    atomic_fetch_add(&imp->done, 1);
    atomic_fetch_add(&imp->bytes, nb);
    int64_t sn = atomic_fetch_add(&imp->sinceN, 1) + 1;
    int64_t sb = atomic_fetch_add(&imp->sinceB, nb) + nb;
    if( sn >= XFER_COMMIT_SAMPLES || sb >= XFER_COMMIT_BYTES ){
      /* One thread commits: the one that resets the counters. */
      if( atomic_compare_exchange_strong(&imp->sinceN, &sn, 0) ){
        atomic_store(&imp->sinceB, 0);
        rc = pagedb_commit(imp->db);
        if( rc ){
          xfer_msg(emsg, sizeof emsg, "pagedb_commit: %s (%s)", pagedb_errname(rc),
                 pagedb_errmsg(imp->db));
          impFail(imp, rc, emsg);
          break;
        }
      }
    }
  }
  rc = pagedb_writer_close(w);
  if( rc ){
    xfer_msg(emsg, sizeof emsg, "pagedb_writer_close: %s (%s)", pagedb_errname(rc),
           pagedb_errmsg(imp->db));
    impFail(imp, rc, emsg);
  }
  return 0;
}

/* Run the workers, then commit.  *N receives the samples committed. */
static int impRun(Import *imp, int64_t *n){
  int nThread = imp->o->threads < 1 ? 1 : imp->o->threads > XFER_MAX_THREADS
              ? XFER_MAX_THREADS : imp->o->threads;
  if( (int64_t)nThread > imp->total && imp->total > 0 ) nThread = (int)imp->total;
  int64_t before = pagedb_count(imp->db);
  pthread_t aThread[XFER_MAX_THREADS];
  int nStarted = 0;
  for(int i = 1; i < nThread; i++){
    if( pthread_create(&aThread[nStarted], 0, impWorker, imp) != 0 ) break;
    nStarted++;
  }
  impWorker(imp);
  for(int i = 0; i < nStarted; i++) pthread_join(aThread[i], 0);
  int rc = pagedb_commit(imp->db);
  if( rc ){
    char emsg[512];
    xfer_msg(emsg, sizeof emsg, "pagedb_commit: %s (%s)", pagedb_errname(rc),
           pagedb_errmsg(imp->db));
    impFail(imp, rc, emsg);
  }
  *n = pagedb_count(imp->db) - before;
  pthread_mutex_lock(&imp->mu);
  impProgressLocked(imp);
  pthread_mutex_unlock(&imp->mu);
  if( imp->rc == PAGEDB_OK && stopped(imp) && !imp->exhausted ){
    imp->rc = PAGEDB_ERROR;
    xfer_msg(imp->msg, imp->nmsg, "interrupted: %lld samples imported and committed",
           (long long)*n);
  }
  return imp->rc;
}

/* ------------------------------------------------------------------ */
/* ImageFolder                                                         */
/* ------------------------------------------------------------------ */

static int strPtrCmp(const void *a, const void *b){
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int appendStr(char ***paz, int64_t *pn, int64_t *pAlloc, const char *z){
  if( *pn == *pAlloc ){
    int64_t n2 = *pAlloc ? *pAlloc * 2 : 64;
    char **a = realloc(*paz, (size_t)n2 * sizeof *a);
    if( a == 0 ) return PAGEDB_NOMEM;
    *paz = a;
    *pAlloc = n2;
  }
  if( ((*paz)[*pn] = strdup(z)) == 0 ) return PAGEDB_NOMEM;
  (*pn)++;
  return PAGEDB_OK;
}

/* Walk directory DFD (path ZREL relative to SOURCE, "" for SOURCE itself),
** adding its regular files.  DFD is closed.  Returns a code with EMSG. */
static int ifScan(Import *imp, int dfd, const char *zRel, int depth, char *emsg, size_t nemsg){
  DIR *d = fdopendir(dfd);
  int rc = PAGEDB_OK;
  if( d == 0 ){
    close(dfd);
    xfer_msg(emsg, nemsg, "%s/%s: out of memory", imp->zSource, zRel);
    return PAGEDB_NOMEM;
  }
  struct dirent *e;
  while( rc == PAGEDB_OK ){
    errno = 0;
    e = readdir(d);
    if( e == 0 ){
      if( errno ){
        rc = impSkip(imp, emsg, nemsg, "%s/%s: reading the directory: %s", imp->zSource, zRel,
                     strerror(errno));
        if( rc == PAGEDB_NOTFOUND ) rc = PAGEDB_OK;
      }
      break;
    }
    if( strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ) continue;
    size_t nRel = strlen(zRel) + strlen(e->d_name) + 2;
    char *zPath = malloc(nRel);
    if( zPath == 0 ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
    snprintf(zPath, nRel, "%s%s%s", zRel, *zRel ? "/" : "", e->d_name);
    struct stat st;
    if( fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ){
      rc = impSkip(imp, emsg, nemsg, "%s/%s: %s", imp->zSource, zPath, strerror(errno));
    }else if( S_ISLNK(st.st_mode) ){
      rc = impIgnore(imp, "%s/%s: a symbolic link (never followed)", imp->zSource, zPath);
    }else if( S_ISDIR(st.st_mode) ){
      if( depth == 0 ) rc = appendStr(&imp->azClass, &imp->nClass, &imp->nClassAlloc, zPath);
      if( rc == PAGEDB_OK && depth >= XFER_MAX_DEPTH ){
        rc = impSkip(imp, emsg, nemsg, "%s/%s: more than %d levels deep", imp->zSource, zPath,
                     XFER_MAX_DEPTH);
      }else if( rc == PAGEDB_OK ){
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if( fd < 0 ){
          rc = impSkip(imp, emsg, nemsg, "%s/%s: cannot open the directory: %s", imp->zSource,
                       zPath, strerror(errno));
        }else{
          rc = ifScan(imp, fd, zPath, depth + 1, emsg, nemsg);
        }
      }else if( rc == PAGEDB_NOMEM ){
        xfer_msg(emsg, nemsg, "out of memory");
      }
    }else if( S_ISREG(st.st_mode) ){
      int own = 0;
      for(int k = 0; k < imp->nOwn; k++){
        own |= st.st_dev == imp->aOwnDev[k] && st.st_ino == imp->aOwnIno[k];
      }
      if( own ){
        rc = impIgnore(imp, "%s/%s: a file of the dataset being written", imp->zSource, zPath);
      }else{
        rc = appendStr(&imp->azFile, &imp->nFile, &imp->nFileAlloc, zPath);
        if( rc ) xfer_msg(emsg, nemsg, "out of memory");
      }
    }else{
      rc = impIgnore(imp, "%s/%s: not a regular file", imp->zSource, zPath);
    }
    if( rc == PAGEDB_NOTFOUND ) rc = PAGEDB_OK;
    free(zPath);
  }
  closedir(d);
  return rc;
}

/* Open ZREL below the directory ROOT without following any symbolic link
** (each directory component O_NOFOLLOW, so a link swapped in after the scan
** is refused).  Returns the descriptor, or -1 with errno. */
static int openBeneath(int root, const char *zRel){
  int dfd = root;
  const char *z = zRel;
  for(;;){
    const char *slash = strchr(z, '/');
    if( slash == 0 ) break;
    char comp[NAME_MAX + 1];
    size_t k = (size_t)(slash - z);
    if( k == 0 || k > NAME_MAX ){
      if( dfd != root ) close(dfd);
      errno = ENOENT;
      return -1;
    }
    memcpy(comp, z, k);
    comp[k] = 0;
    int fd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    if( dfd != root ) close(dfd);
    if( fd < 0 ){ errno = e; return -1; }
    dfd = fd;
    z = slash + 1;
  }
  int fd = openat(dfd, z, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  int e = errno;
  if( dfd != root ) close(dfd);
  errno = e;
  return fd;
}

static int ifNext(Import *imp, Job *j, char *emsg, size_t nemsg){
  if( imp->nextJob >= imp->nFile ) return PAGEDB_NOTFOUND;
  j->idx = imp->nextJob;
  Put *p = jobPut(j, imp->fLabel, PAGEDB_INT);
  Put *q = p ? jobPut(j, imp->fPath, PAGEDB_TEXT) : 0;
  if( q == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  j->aPut[0].iv = imp->aLabel[j->idx];
  j->aPut[1].data = imp->azFile[j->idx];
  j->aPut[1].n = strlen(imp->azFile[j->idx]);
  return PAGEDB_OK;
}

/* Read the job's file: its bytes become the data value. */
static int ifLoad(Import *imp, Job *j, char *emsg, size_t nemsg){
  const char *zRel = imp->azFile[j->idx];
  int fd = openBeneath(imp->rootFd, zRel);
  if( fd < 0 ){
    if( errno == ELOOP || errno == ENOTDIR ){
      return impIgnore(imp, "%s/%s: became a symbolic link (never followed)", imp->zSource,
                       zRel);
    }
    return impSkip(imp, emsg, nemsg, "%s/%s: cannot open: %s", imp->zSource, zRel,
                   strerror(errno));
  }
  struct stat st;
  if( fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ){
    int e = errno;
    close(fd);
    return impSkip(imp, emsg, nemsg, "%s/%s: %s", imp->zSource, zRel,
                   S_ISREG(st.st_mode) ? strerror(e) : "no longer a regular file");
  }
  if( (uint64_t)st.st_size > PAGEDB_MAX_SAMPLE ){
    close(fd);
    return impSkip(imp, emsg, nemsg, "%s/%s: %lld bytes, more than a sample may hold",
                   imp->zSource, zRel, (long long)st.st_size);
  }
  size_t n = (size_t)st.st_size;
  char *buf = malloc(n ? n : 1);
  if( buf == 0 ){
    close(fd);
    xfer_msg(emsg, nemsg, "%s/%s: out of memory for %zu bytes", imp->zSource, zRel, n);
    return PAGEDB_NOMEM;
  }
  size_t got = 0;
  while( got < n ){
    ssize_t k = read(fd, buf + got, n - got > (1u << 30) ? (1u << 30) : n - got);
    if( k < 0 && errno == EINTR ) continue;
    if( k <= 0 ){
      int e = errno;
      free(buf);
      close(fd);
      return impSkip(imp, emsg, nemsg, "%s/%s: %s", imp->zSource, zRel,
                     k < 0 ? strerror(e) : "shrank while it was read");
    }
    got += (size_t)k;
  }
  close(fd);
  Put *p = jobPut(j, imp->fData, PAGEDB_BYTES);
  if( p == 0 ){
    free(buf);
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  p->data = buf;
  p->n = n;
  p->owned = 1;
  j->bytes = (int64_t)n;
  return PAGEDB_OK;
}

static int importFolder(Import *imp, int64_t *n, char *emsg, size_t nemsg){
  imp->rootFd = open(imp->zSource, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if( imp->rootFd < 0 ){
    xfer_msg(emsg, nemsg, "cannot open the directory: %s", strerror(errno));
    return PAGEDB_CANTOPEN;
  }
  /* A dataset inside SOURCE must not import itself as it grows. */
  static const char *azSuffix[] = { "", "-journal", "-wal", "-shm" };
  struct stat st;
  if( stat(pagedb_path(imp->db), &st) == 0 ){
    imp->aOwnDev[imp->nOwn] = st.st_dev;
    imp->aOwnIno[imp->nOwn++] = st.st_ino;
  }
  for(int k = 0; k < 4; k++){
    char zName[4200];
    snprintf(zName, sizeof zName, "%s%s", pagedb_catalog_path(imp->db), azSuffix[k]);
    if( stat(zName, &st) == 0 ){
      imp->aOwnDev[imp->nOwn] = st.st_dev;
      imp->aOwnIno[imp->nOwn++] = st.st_ino;
    }
  }
  int dfd = dup(imp->rootFd);
  int rc = dfd < 0 ? PAGEDB_IOERR : ifScan(imp, dfd, "", 0, emsg, nemsg);
  if( dfd < 0 ) xfer_msg(emsg, nemsg, "dup: %s", strerror(errno));
  if( rc ) return rc;
  qsort(imp->azClass, (size_t)imp->nClass, sizeof(char *), strPtrCmp);
  qsort(imp->azFile, (size_t)imp->nFile, sizeof(char *), strPtrCmp);
  imp->aLabel = malloc((size_t)(imp->nFile ? imp->nFile : 1) * sizeof(int64_t));
  if( imp->aLabel == 0 ){ xfer_msg(emsg, nemsg, "out of memory"); return PAGEDB_NOMEM; }
  for(int64_t i = 0; i < imp->nFile; i++){
    const char *z = imp->azFile[i];
    const char *slash = strchr(z, '/');
    imp->aLabel[i] = -1;
    if( slash == 0 ) continue;
    /* The class is the first component: a binary search in the sorted names. */
    int64_t lo = 0, hi = imp->nClass - 1;
    size_t k = (size_t)(slash - z);
    while( lo <= hi ){
      int64_t mid = (lo + hi) / 2;
      int c = strncmp(imp->azClass[mid], z, k);
      if( c == 0 && imp->azClass[mid][k] ) c = 1;
      if( c == 0 ){ imp->aLabel[i] = mid; break; }
      if( c < 0 ) lo = mid + 1; else hi = mid - 1;
    }
  }
  char *azName[3] = { "data", "label", "path" };
  int aType[3] = { PAGEDB_BYTES, PAGEDB_INT, PAGEDB_TEXT };
  int aIdx[3];
  rc = impFields(imp, 3, azName, aType, aIdx, emsg, nemsg);
  if( rc ) return rc;
  imp->fData = aIdx[0];
  imp->fLabel = aIdx[1];
  imp->fPath = aIdx[2];
  imp->total = imp->nFile;
  imp->xNext = ifNext;
  imp->xLoad = ifLoad;
  return impRun(imp, n);
}

/* ------------------------------------------------------------------ */
/* WebDataset tar shards                                               */
/* ------------------------------------------------------------------ */

/* A set of strings (open addressing). */
typedef struct StrSet { char **a; size_t n, cap; } StrSet;

static uint64_t strHash(const char *z){
  uint64_t h = 1469598103934665603ull;
  while( *z ){ h ^= (unsigned char)*z++; h *= 1099511628211ull; }
  return h;
}

/* 1 if Z was in S; 0 after adding it; -1 out of memory. */
static int setAdd(StrSet *s, const char *z){
  if( (s->n + 1) * 2 > s->cap ){
    size_t c2 = s->cap ? s->cap * 2 : 1024;
    char **a = calloc(c2, sizeof *a);
    if( a == 0 ) return -1;
    for(size_t i = 0; i < s->cap; i++){
      if( s->a[i] == 0 ) continue;
      size_t h = strHash(s->a[i]) & (c2 - 1);
      while( a[h] ) h = (h + 1) & (c2 - 1);
      a[h] = s->a[i];
    }
    free(s->a);
    s->a = a;
    s->cap = c2;
  }
  size_t h = strHash(z) & (s->cap - 1);
  while( s->a[h] ){
    if( strcmp(s->a[h], z) == 0 ) return 1;
    h = (h + 1) & (s->cap - 1);
  }
  if( (s->a[h] = strdup(z)) == 0 ) return -1;
  s->n++;
  return 0;
}

/* 1 if Z is in S. */
static int setHas(const StrSet *s, const char *z){
  if( s->cap == 0 ) return 0;
  size_t h = strHash(z) & (s->cap - 1);
  while( s->a[h] ){
    if( strcmp(s->a[h], z) == 0 ) return 1;
    h = (h + 1) & (s->cap - 1);
  }
  return 0;
}

static void setFree(StrSet *s){
  for(size_t i = 0; i < s->cap; i++) free(s->a[i]);
  free(s->a);
}

/*
** Member name Z made relative and clean into *POUT (malloc'd): empty and
** "." components dropped, so "./a//b.jpg" is "a/b.jpg" and "./" is "".
** Returns NULL, or why Z is refused: an absolute name, a ".." component.
** Out of memory: NULL with *POUT NULL.
*/
static const char *tarCleanName(const char *z, char **pOut){
  *pOut = 0;
  if( z[0] == '/' ) return "an absolute name";
  char *o = malloc(strlen(z) + 1);
  if( o == 0 ) return 0;
  size_t k = 0;
  for(const char *c = z; *c; ){
    const char *e = strchr(c, '/');
    size_t len = e ? (size_t)(e - c) : strlen(c);
    if( len == 2 && c[0] == '.' && c[1] == '.' ){
      free(o);
      return "a \"..\" component";
    }
    if( len > 0 && !(len == 1 && c[0] == '.') ){
      if( k ) o[k++] = '/';
      memcpy(o + k, c, len);
      k += len;
    }
    if( e == 0 ) break;
    c = e + 1;
  }
  o[k] = 0;
  *pOut = o;
  return 0;
}

/* Split member name Z into its key (malloc'd into *PKEY) and extension (a
** pointer into Z, "" if none). */
static int tarKey(const char *z, char **pKey, const char **pExt){
  const char *base = strrchr(z, '/');
  base = base ? base + 1 : z;
  const char *dot = strchr(base, '.');
  size_t k = dot ? (size_t)(dot - z) : strlen(z);
  *pExt = dot ? dot + 1 : "";
  *pKey = strndup(z, k);
  return *pKey ? PAGEDB_OK : PAGEDB_NOMEM;
}

/* Why extension E cannot name a field, or NULL if it can. */
static const char *extProblem(const char *e){
  size_t n = strlen(e);
  if( n == 0 ) return "no extension";
  if( n > PAGEDB_MAX_NAME ) return "an extension longer than a field name may be";
  if( e[0] >= '0' && e[0] <= '9' ) return "an extension starting with a digit";
  for(size_t i = 0; i < n; i++){
    char c = e[i];
    if( !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '_' || c == '.' || c == '-') ){
      return "an extension with a character other than letters, digits, '_', '.' and '-'";
    }
  }
  if( strcasecmp(e, "id") == 0 || strcasecmp(e, "page") == 0 || strcasecmp(e, "off") == 0
      || strcasecmp(e, "__key__") == 0 ){
    return "an extension that is a reserved field name (id, page, off, __key__)";
  }
  return 0;
}

static void planFree(TarPlan *p){
  for(int64_t i = 0; i < p->n; i++){
    free(p->a[i].zName);
    free(p->a[i].zKey);
    free(p->a[i].zExt);
  }
  free(p->a);
  free(p->aStart);
  free(p->aOrder);
  memset(p, 0, sizeof *p);
}

static int recCmp(const void *a, const void *b){
  const TarRec *x = a, *y = b;
  int c = strcmp(x->zKey, y->zKey);
  return c ? c : x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* A group and the rank of its first member, to order the groups. */
typedef struct GroupPos { int64_t pos, g; } GroupPos;
static int groupCmp(const void *a, const void *b){
  int64_t x = ((const GroupPos *)a)->pos, y = ((const GroupPos *)b)->pos;
  return x < y ? -1 : x > y;
}

/* Record a member of shard plan P. */
static int planAdd(TarPlan *p, const char *zName, const char *zKey, const char *zExt,
                   int64_t off, int64_t size){
  if( p->n == p->nAlloc ){
    int64_t n2 = p->nAlloc ? p->nAlloc * 2 : 64;
    TarRec *a = realloc(p->a, (size_t)n2 * sizeof *a);
    if( a == 0 ) return PAGEDB_NOMEM;
    p->a = a;
    p->nAlloc = n2;
  }
  TarRec *r = &p->a[p->n];
  r->zName = strdup(zName);
  r->zKey = strdup(zKey);
  r->zExt = strdup(zExt);
  r->off = off;
  r->size = size;
  r->pos = p->n;
  if( r->zName == 0 || r->zKey == 0 || r->zExt == 0 ){
    free(r->zName);
    free(r->zKey);
    free(r->zExt);
    return PAGEDB_NOMEM;
  }
  p->n++;
  return PAGEDB_OK;
}

/* Group plan P's members by key; a key with two members of one extension
** is refused.  Returns a code with EMSG. */
static int planGroup(TarPlan *p, const char *zShard, char *emsg, size_t nemsg){
  qsort(p->a, (size_t)p->n, sizeof *p->a, recCmp);
  p->aStart = malloc((size_t)(p->n + 1) * sizeof(int64_t));
  p->aOrder = malloc((size_t)(p->n + 1) * sizeof(int64_t));
  if( p->aStart == 0 || p->aOrder == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  p->nGroup = 0;
  for(int64_t i = 0; i < p->n; i++){
    if( i == 0 || strcmp(p->a[i].zKey, p->a[i - 1].zKey) ){
      p->aStart[p->nGroup] = i;
      p->aOrder[p->nGroup] = p->nGroup;
      p->nGroup++;
    }else{
      for(int64_t k = p->aStart[p->nGroup - 1]; k < i; k++){
        if( strcmp(p->a[k].zExt, p->a[i].zExt) == 0 ){
          xfer_msg(emsg, nemsg, "%s: member \"%s\": key \"%s\" has two members with extension "
                 "\"%s\"", zShard, p->a[i].zName, p->a[i].zKey, p->a[i].zExt);
          return PAGEDB_CONSTRAINT;
        }
      }
    }
  }
  p->aStart[p->nGroup] = p->n;
  /* A group's first member has its lowest rank: recCmp sorted by rank. */
  GroupPos *a = malloc((size_t)(p->nGroup + 1) * sizeof *a);
  if( a == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  for(int64_t g = 0; g < p->nGroup; g++){
    a[g].pos = p->a[p->aStart[g]].pos;
    a[g].g = g;
  }
  qsort(a, (size_t)p->nGroup, sizeof *a, groupCmp);
  for(int64_t g = 0; g < p->nGroup; g++) p->aOrder[g] = a[g].g;
  free(a);
  return PAGEDB_OK;
}

/* Pass 1: read every shard's headers; collect the extensions, count the
** samples, check names and that each key's members are adjacent. */
static int tarScan(Import *imp, char *emsg, size_t nemsg){
  StrSet keys = {0};         /* the keys of the shards before this one */
  int rc = PAGEDB_OK;
  imp->aPlan = calloc((size_t)imp->nShard, sizeof(TarPlan));
  if( imp->aPlan == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  for(int s = 0; rc == PAGEDB_OK && s < imp->nShard; s++){
    const char *zShard = imp->azShard[s];
    TarReader *tr = 0;
    TarPlan *plan = &imp->aPlan[s];
    char *zCur = 0;          /* the current key */
    StrSet exts = {0};       /* its extensions */
    StrSet shardKeys = {0};  /* the keys of this shard */
    int64_t nRun = 0;        /* runs of members of one key */
    rc = tar_open(zShard, &tr, emsg, nemsg);
    while( rc == PAGEDB_OK ){
      TarMember m;
      rc = tar_next(tr, &m, emsg, nemsg);
      if( rc == PAGEDB_NOTFOUND ){ rc = PAGEDB_OK; break; }
      if( rc ) break;
      char *zName;
      const char *why = tarCleanName(m.name, &zName);
      if( why == 0 && zName == 0 ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
      if( why == 0 && zName[0] == 0 && m.kind != TAR_DIR ) why = "an empty name";
      if( why ){
        xfer_msg(emsg, nemsg, "%s: member \"%s\": %s: refused", zShard, m.name, why);
        free(zName);
        rc = PAGEDB_CORRUPT;
        break;
      }
      if( m.kind == TAR_DIR ){ free(zName); continue; }
      if( m.kind != TAR_FILE ){
        const char *zKind = m.typeflag == '2' ? "a symbolic link" : m.typeflag == '1'
          ? "a hard link" : m.typeflag == '3' || m.typeflag == '4' ? "a device"
          : m.typeflag == '6' ? "a fifo" : "not a regular file";
        if( imp->o->err ) fprintf(imp->o->err, "%s: member \"%s\": %s: skipped\n", zShard, m.name, zKind);
        free(zName);
        continue;
      }
      char *zKey;
      const char *zExt;
      if( tarKey(zName, &zKey, &zExt) ){
        free(zName);
        rc = PAGEDB_NOMEM;
        xfer_msg(emsg, nemsg, "out of memory");
        break;
      }
      if( *zExt == 0 ){
        if( imp->o->err ) fprintf(imp->o->err, "%s: member \"%s\": no extension: skipped\n", zShard, m.name);
        free(zKey);
        free(zName);
        continue;
      }
      /* The extension is copied before the name it points into goes. */
      char zExtBuf[PAGEDB_MAX_NAME + 2];
      why = extProblem(zExt);
      if( why ){
        xfer_msg(emsg, nemsg, "%s: member \"%s\": %s (\"%.80s\") cannot name a field", zShard,
               m.name, why, zExt);
        free(zKey);
        free(zName);
        rc = PAGEDB_MISMATCH;
        break;
      }
      snprintf(zExtBuf, sizeof zExtBuf, "%s", zExt);
      zExt = zExtBuf;
      if( tar_direct(tr) && planAdd(plan, m.name, zKey, zExt, tar_offset(tr), m.size) ){
        free(zKey);
        free(zName);
        rc = PAGEDB_NOMEM;
        xfer_msg(emsg, nemsg, "out of memory");
        break;
      }
      free(zName);
      if( zCur == 0 || strcmp(zCur, zKey) ){
        if( zCur ){
          setFree(&exts);
          memset(&exts, 0, sizeof exts);
        }
        int r;
        if( setHas(&keys, zKey) ){
          xfer_msg(emsg, nemsg, "%s: member \"%s\": key \"%s\" is also in an earlier shard "
                 "(keys are unique)", zShard, m.name, zKey);
          rc = PAGEDB_CONSTRAINT;
        }
        if( rc == PAGEDB_OK ){
          r = setAdd(&shardKeys, zKey);
          if( r == 1 && tar_direct(tr) ){
            plan->unsorted = 1;               /* read by seeking, grouped */
          }else if( r == 1 ){
            xfer_msg(emsg, nemsg, "%s: member \"%s\": key \"%s\" appeared before, apart from "
                   "this member: in a compressed shard a sample's members must be adjacent "
                   "(make shards with tar --sort=name)", zShard, m.name, zKey);
            rc = PAGEDB_CONSTRAINT;
          }else if( r < 0 ){
            rc = PAGEDB_NOMEM;
            xfer_msg(emsg, nemsg, "out of memory");
          }
        }
        free(zCur);
        zCur = zKey;
        nRun++;
      }else{
        free(zKey);
      }
      if( rc ) break;
      int r = setAdd(&exts, zExt);
      if( r == 1 ){
        xfer_msg(emsg, nemsg, "%s: member \"%s\": key \"%s\" has two members with extension "
               "\"%s\"", zShard, m.name, zCur, zExt);
        rc = PAGEDB_CONSTRAINT;
        break;
      }
      /* The set of all extensions, kept sorted; names differing only in
      ** case would be one field. */
      int lo = 0, hi = imp->nExt;
      while( lo < hi ){
        int mid = (lo + hi) / 2;
        if( strcmp(imp->azExt[mid], zExt) < 0 ) lo = mid + 1; else hi = mid;
      }
      if( lo < imp->nExt && strcmp(imp->azExt[lo], zExt) == 0 ) continue;
      for(int i = 0; i < imp->nExt; i++){
        if( strcasecmp(imp->azExt[i], zExt) == 0 ){
          xfer_msg(emsg, nemsg, "%s: member \"%s\": extensions \"%s\" and \"%s\" differ only in "
                 "case, and field names must not", zShard, m.name, imp->azExt[i], zExt);
          rc = PAGEDB_CONSTRAINT;
        }
      }
      if( rc ) break;
      if( imp->nExt >= PAGEDB_MAX_FIELDS - 1 ){
        xfer_msg(emsg, nemsg, "%s: member \"%s\": more than %d extensions", zShard, m.name,
               PAGEDB_MAX_FIELDS - 1);
        rc = PAGEDB_TOOBIG;
        break;
      }
      if( imp->nExt == imp->nExtAlloc ){
        int n2 = imp->nExtAlloc ? imp->nExtAlloc * 2 : 8;
        char **a = realloc(imp->azExt, (size_t)n2 * sizeof *a);
        if( a == 0 ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
        imp->azExt = a;
        imp->nExtAlloc = n2;
      }
      char *zCopy = strdup(zExt);
      if( zCopy == 0 ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
      memmove(&imp->azExt[lo + 1], &imp->azExt[lo], (size_t)(imp->nExt - lo) * sizeof(char *));
      imp->azExt[lo] = zCopy;
      imp->nExt++;
    }
    free(zCur);
    setFree(&exts);
    tar_close(tr);
    if( rc == PAGEDB_OK && plan->unsorted ){
      rc = planGroup(plan, zShard, emsg, nemsg);
      imp->total += plan->nGroup;
    }else{
      imp->total += nRun;
      planFree(plan);
    }
    /* This shard's keys join those the next shards must not repeat. */
    for(size_t i = 0; rc == PAGEDB_OK && i < shardKeys.cap; i++){
      if( shardKeys.a[i] && setAdd(&keys, shardKeys.a[i]) < 0 ){
        rc = PAGEDB_NOMEM;
        xfer_msg(emsg, nemsg, "out of memory");
      }
    }
    setFree(&shardKeys);
  }
  setFree(&keys);
  return rc;
}

/* The field of extension E (which pass 1 saw). */
static int extField(Import *imp, const char *e){
  int lo = 0, hi = imp->nExt - 1;
  while( lo <= hi ){
    int mid = (lo + hi) / 2;
    int c = strcmp(imp->azExt[mid], e);
    if( c == 0 ) return imp->aExtField[mid];
    if( c < 0 ) lo = mid + 1; else hi = mid - 1;
  }
  return -1;
}

/* Pass 2: the next sample's members, read under the lock. */
/* The next group of a shard read by its plan: a sample, or PAGEDB_NOTFOUND
** when the shard has no more. */
static int planNext(Import *imp, TarPlan *p, Job *j, char *emsg, size_t nemsg){
  if( p->iGroup >= p->nGroup ) return PAGEDB_NOTFOUND;
  int64_t g = p->aOrder[p->iGroup++];
  for(int64_t i = p->aStart[g]; i < p->aStart[g + 1]; i++){
    TarRec *r = &p->a[i];
    int f = extField(imp, r->zExt);
    void *data;
    size_t n;
    if( f < 0 ){
      xfer_msg(emsg, nemsg, "%s: member \"%s\": an extension the first pass did not see",
             imp->azShard[imp->iShard], r->zName);
      return PAGEDB_CORRUPT;
    }
    int rc = tar_read_at(imp->tr, r->zName, r->off, r->size, &data, &n, emsg, nemsg);
    if( rc ) return rc;
    Put *q = jobPut(j, f, PAGEDB_BYTES);
    if( q == 0 ){ free(data); xfer_msg(emsg, nemsg, "out of memory"); return PAGEDB_NOMEM; }
    q->data = data;
    q->n = n;
    q->owned = 1;
    j->bytes += (int64_t)n;
  }
  const char *zKey = p->a[p->aStart[g]].zKey;
  Put *q = jobPut(j, imp->fKey, PAGEDB_TEXT);
  if( q == 0 || (q->data = strdup(zKey)) == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  q->n = strlen(zKey);
  q->owned = 1;
  return PAGEDB_OK;
}

static int tarNext(Import *imp, Job *j, char *emsg, size_t nemsg){
  char *zKey = 0;
  int rc = PAGEDB_OK;
  for(;;){
    if( imp->tr == 0 ){
      if( imp->iShard >= imp->nShard ) break;
      rc = tar_open(imp->azShard[imp->iShard], &imp->tr, emsg, nemsg);
      if( rc ) break;
    }
    TarPlan *plan = &imp->aPlan[imp->iShard];
    if( plan->unsorted ){
      rc = planNext(imp, plan, j, emsg, nemsg);
      if( rc != PAGEDB_NOTFOUND ) return rc;
      rc = PAGEDB_OK;
      tar_close(imp->tr);
      imp->tr = 0;
      imp->iShard++;
      continue;
    }
    if( imp->zPend == 0 ){
      TarMember m;
      rc = tar_next(imp->tr, &m, emsg, nemsg);
      if( rc == PAGEDB_NOTFOUND ){
        rc = PAGEDB_OK;
        tar_close(imp->tr);
        imp->tr = 0;
        imp->iShard++;
        if( zKey ) break;                  /* a sample ends with its shard */
        continue;
      }
      if( rc ) break;
      if( m.kind != TAR_FILE ) continue;   /* reported by pass 1 */
      char *zName;
      const char *why = tarCleanName(m.name, &zName);
      if( why == 0 && zName == 0 ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
      if( why || zName[0] == 0 ){
        free(zName);
        xfer_msg(emsg, nemsg, "%s: member \"%s\": changed since the first pass",
               imp->azShard[imp->iShard], m.name);
        rc = PAGEDB_CORRUPT;
        break;
      }
      imp->zPend = zName;
    }
    char *zMKey;
    const char *zExt;
    if( tarKey(imp->zPend, &zMKey, &zExt) ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
    if( *zExt == 0 ){
      free(zMKey);
      free(imp->zPend);
      imp->zPend = 0;
      continue;
    }
    if( zKey && strcmp(zKey, zMKey) ){
      free(zMKey);
      break;                               /* the pending member starts the next sample */
    }
    int f = extField(imp, zExt);
    if( f < 0 ){
      free(zMKey);
      xfer_msg(emsg, nemsg, "%s: member \"%s\": an extension the first pass did not see",
             imp->azShard[imp->iShard], imp->zPend);
      rc = PAGEDB_CORRUPT;
      break;
    }
    if( zKey == 0 ) zKey = zMKey; else free(zMKey);
    void *data;
    size_t nData;
    rc = tar_read(imp->tr, &data, &nData, emsg, nemsg);
    if( rc ) break;
    Put *p = jobPut(j, f, PAGEDB_BYTES);
    if( p == 0 ){ free(data); rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
    p->data = data;
    p->owned = 1;
    p->n = nData;
    j->bytes += (int64_t)nData;
    free(imp->zPend);
    imp->zPend = 0;
  }
  if( rc == PAGEDB_OK && zKey == 0 ) return PAGEDB_NOTFOUND;
  if( rc ){ free(zKey); return rc; }
  Put *p = jobPut(j, imp->fKey, PAGEDB_TEXT);
  if( p == 0 ){ free(zKey); xfer_msg(emsg, nemsg, "out of memory"); return PAGEDB_NOMEM; }
  p->data = zKey;
  p->n = strlen(zKey);
  p->owned = 1;
  return PAGEDB_OK;
}

static int importTar(Import *imp, int64_t *n, char *emsg, size_t nemsg){
  int rc = tarScan(imp, emsg, nemsg);
  if( rc ) return rc;
  if( imp->nExt == 0 ){
    xfer_msg(emsg, nemsg, "no member with an extension in %s%s", imp->azShard[0],
           imp->nShard > 1 ? " and the other shards" : "");
    return PAGEDB_NOTFOUND;
  }
  char **azName = malloc((size_t)(imp->nExt + 1) * sizeof(char *));
  int *aType = malloc((size_t)(imp->nExt + 1) * sizeof(int));
  int *aIdx = malloc((size_t)(imp->nExt + 1) * sizeof(int));
  imp->aExtField = malloc((size_t)imp->nExt * sizeof(int));
  if( azName == 0 || aType == 0 || aIdx == 0 || imp->aExtField == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    rc = PAGEDB_NOMEM;
  }else{
    azName[0] = "__key__";
    aType[0] = PAGEDB_TEXT;
    for(int i = 0; i < imp->nExt; i++){
      azName[i + 1] = imp->azExt[i];
      aType[i + 1] = PAGEDB_BYTES;
    }
    rc = impFields(imp, imp->nExt + 1, azName, aType, aIdx, emsg, nemsg);
    if( rc == PAGEDB_OK ){
      imp->fKey = aIdx[0];
      for(int i = 0; i < imp->nExt; i++) imp->aExtField[i] = aIdx[i + 1];
    }
  }
  free(azName);
  free(aType);
  free(aIdx);
  if( rc ) return rc;
  imp->xNext = tarNext;
  imp->xLoad = 0;
  return impRun(imp, n);
}

/* ------------------------------------------------------------------ */
/* CSV                                                                 */
/* ------------------------------------------------------------------ */

#define COL_EMPTY 0       /* no value seen yet */

/* Append byte C to the current cell. */
static int csvByte(Import *imp, int c){
  if( imp->nBuf + 1 >= imp->nBufAlloc ){
    size_t n2 = imp->nBufAlloc ? imp->nBufAlloc * 2 : 4096;
    char *b = realloc(imp->cBuf, n2);
    if( b == 0 ) return -1;
    imp->cBuf = b;
    imp->nBufAlloc = n2;
  }
  imp->cBuf[imp->nBuf++] = (char)c;
  return 0;
}

/* End the current cell (starting at START). */
static int csvEndCell(Import *imp, size_t start){
  if( imp->nCell == imp->nCellAlloc ){
    int n2 = imp->nCellAlloc ? imp->nCellAlloc * 2 : 16;
    size_t *a = realloc(imp->aCell, (size_t)n2 * sizeof *a);
    if( a == 0 ) return -1;
    imp->aCell = a;
    a = realloc(imp->aCellLen, (size_t)n2 * sizeof *a);
    if( a == 0 ) return -1;
    imp->aCellLen = a;
    imp->nCellAlloc = n2;
  }
  imp->aCell[imp->nCell] = start;
  imp->aCellLen[imp->nCell] = imp->nBuf - start;
  imp->nCell++;
  return csvByte(imp, 0);
}

/*
** Read the next record (RFC 4180: ',' separates cells, CRLF or LF ends a
** record, a cell in double quotes may hold commas, line breaks and "" for
** a quote).  Blank lines are skipped.  PAGEDB_OK, PAGEDB_NOTFOUND at the
** end, or an error with EMSG naming the line.
*/
static int csvRecord(Import *imp, char *emsg, size_t nemsg){
  FILE *f = imp->csv;
  int c;
  for(;;){
    imp->nBuf = 0;
    imp->nCell = 0;
    int64_t line0 = ++imp->csvLine;
    c = getc(f);
    if( c == EOF ){
      if( ferror(f) ){
        xfer_msg(emsg, nemsg, "%s: line %lld: %s", imp->zSource, (long long)line0, strerror(errno));
        return PAGEDB_IOERR;
      }
      return PAGEDB_NOTFOUND;
    }
    if( c == '\n' ) continue;
    if( c == '\r' ){
      int d = getc(f);
      if( d == '\n' ) continue;
      if( d != EOF ) ungetc(d, f);
    }
    for(;;){
      size_t start = imp->nBuf;
      if( c == '"' ){
        for(;;){
          c = getc(f);
          if( c == EOF ){
            xfer_msg(emsg, nemsg, "%s: line %lld: a quoted cell is not closed", imp->zSource,
                   (long long)line0);
            return PAGEDB_CORRUPT;
          }
          if( c == '"' ){
            c = getc(f);
            if( c != '"' ) break;
          }
          if( c == '\n' ) imp->csvLine++;
          if( csvByte(imp, c) ) goto nomem;
        }
        if( c == '\r' ){
          int d = getc(f);
          if( d != '\n' ){
            xfer_msg(emsg, nemsg, "%s: line %lld: a character after the closing quote of cell %d",
                   imp->zSource, (long long)imp->csvLine, imp->nCell + 1);
            return PAGEDB_CORRUPT;
          }
          c = '\n';
        }
        if( c != ',' && c != '\n' && c != EOF ){
          xfer_msg(emsg, nemsg, "%s: line %lld: a character after the closing quote of cell %d",
                 imp->zSource, (long long)imp->csvLine, imp->nCell + 1);
          return PAGEDB_CORRUPT;
        }
      }else{
        while( c != ',' && c != '\n' && c != EOF ){
          if( c == '\r' ){
            int d = getc(f);
            if( d == '\n' ){ c = '\n'; break; }
            if( d != EOF ) ungetc(d, f);
          }
          if( csvByte(imp, c) ) goto nomem;
          c = getc(f);
        }
      }
      if( csvEndCell(imp, start) ) goto nomem;
      if( c != ',' ) break;
      c = getc(f);
    }
    return PAGEDB_OK;
  }
nomem:
  xfer_msg(emsg, nemsg, "%s: line %lld: out of memory", imp->zSource, (long long)imp->csvLine);
  return PAGEDB_NOMEM;
}

/* 1 if Z (N bytes) is a decimal integer that fits in 64 bits. */
static int isInt(const char *z, size_t n){
  size_t i = (z[0] == '-' || z[0] == '+');
  if( i == n ) return 0;
  for(size_t k = i; k < n; k++) if( z[k] < '0' || z[k] > '9' ) return 0;
  errno = 0;
  char *end;
  strtoll(z, &end, 10);
  return errno == 0 && end == z + n;
}

/* 1 if Z (N bytes) is a decimal number: [+-] digits [. digits] [e [+-] digits]. */
static int isReal(const char *z, size_t n){
  size_t i = (z[0] == '-' || z[0] == '+');
  size_t nd = 0;
  while( i < n && z[i] >= '0' && z[i] <= '9' ){ i++; nd++; }
  if( i < n && z[i] == '.' ){
    i++;
    while( i < n && z[i] >= '0' && z[i] <= '9' ){ i++; nd++; }
  }
  if( nd == 0 ) return 0;
  if( i < n && (z[i] == 'e' || z[i] == 'E') ){
    i++;
    if( i < n && (z[i] == '-' || z[i] == '+') ) i++;
    size_t ne = 0;
    while( i < n && z[i] >= '0' && z[i] <= '9' ){ i++; ne++; }
    if( ne == 0 ) return 0;
  }
  return i == n;
}

/* Make header cell Z (column I) a field name in OUT (PAGEDB_MAX_NAME+1). */
static void csvFieldName(const char *z, int i, char *out){
  size_t n = 0;
  if( (z[0] >= '0' && z[0] <= '9') ) out[n++] = '_';
  for(; *z && n < PAGEDB_MAX_NAME; z++){
    char c = *z;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '_' || c == '.' || c == '-';
    out[n++] = ok ? c : '_';
  }
  out[n] = 0;
  if( n == 0 ) snprintf(out, PAGEDB_MAX_NAME + 1, "column%d", i + 1);
  if( strcasecmp(out, "id") == 0 || strcasecmp(out, "page") == 0 || strcasecmp(out, "off") == 0 ){
    strcat(out, "_");
  }
}

static int csvNext(Import *imp, Job *j, char *emsg, size_t nemsg){
  int rc = csvRecord(imp, emsg, nemsg);
  if( rc ) return rc;
  if( imp->nCell != imp->nCol ){
    xfer_msg(emsg, nemsg, "%s: line %lld: %d cells where the header has %d", imp->zSource,
           (long long)imp->csvLine, imp->nCell, imp->nCol);
    return PAGEDB_CORRUPT;
  }
  for(int i = 0; i < imp->nCol; i++){
    const char *z = imp->cBuf + imp->aCell[i];
    size_t n = imp->aCellLen[i];
    if( n == 0 ) continue;               /* a missing value */
    Put *p = jobPut(j, imp->aColField[i], imp->aColType[i]);
    if( p == 0 ){ xfer_msg(emsg, nemsg, "out of memory"); return PAGEDB_NOMEM; }
    if( p->type == PAGEDB_INT ){
      p->iv = strtoll(z, 0, 10);
    }else if( p->type == PAGEDB_REAL ){
      p->rv = strtod(z, 0);
    }else{
      if( (p->data = malloc(n)) == 0 ){ xfer_msg(emsg, nemsg, "out of memory"); return PAGEDB_NOMEM; }
      memcpy(p->data, z, n);
      p->n = n;
      p->owned = 1;
      j->bytes += (int64_t)n;
    }
  }
  return PAGEDB_OK;
}

static int importCsv(Import *imp, int64_t *n, char *emsg, size_t nemsg){
  imp->csv = fopen(imp->zSource, "rb");
  if( imp->csv == 0 ){
    xfer_msg(emsg, nemsg, "cannot open: %s", strerror(errno));
    return PAGEDB_CANTOPEN;
  }
  /* A UTF-8 byte order mark is not part of the first column's name. */
  unsigned char bom[3];
  if( fread(bom, 1, 3, imp->csv) != 3 || memcmp(bom, "\xEF\xBB\xBF", 3) != 0 ) rewind(imp->csv);
  long start = ftell(imp->csv);
  int rc = csvRecord(imp, emsg, nemsg);
  if( rc == PAGEDB_NOTFOUND ){
    xfer_msg(emsg, nemsg, "%s: empty (a header row is needed)", imp->zSource);
    return PAGEDB_CORRUPT;
  }
  if( rc ) return rc;
  imp->nCol = imp->nCell;
  if( imp->nCol > PAGEDB_MAX_FIELDS ){
    xfer_msg(emsg, nemsg, "%s: %d columns, more than the %d fields a dataset may have",
           imp->zSource, imp->nCol, PAGEDB_MAX_FIELDS);
    return PAGEDB_TOOBIG;
  }
  char **azName = calloc((size_t)imp->nCol, sizeof(char *));
  imp->aColType = calloc((size_t)imp->nCol, sizeof(int));
  imp->aColField = calloc((size_t)imp->nCol, sizeof(int));
  if( azName == 0 || imp->aColType == 0 || imp->aColField == 0 ){
    free(azName);
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  for(int i = 0; rc == PAGEDB_OK && i < imp->nCol; i++){
    char zName[PAGEDB_MAX_NAME + 2];
    const char *zHead = imp->cBuf + imp->aCell[i];
    csvFieldName(zHead, i, zName);
    if( strcmp(zName, zHead) && imp->o->err ){
      fprintf(imp->o->err, "%s: column %d \"%s\" is field \"%s\"\n", imp->zSource, i + 1, zHead,
              zName);
    }
    for(int k = 0; k < i; k++){
      if( strcasecmp(azName[k], zName) == 0 ){
        xfer_msg(emsg, nemsg, "%s: columns %d and %d are both named \"%s\" (field names are "
               "unique regardless of case)", imp->zSource, k + 1, i + 1, zName);
        rc = PAGEDB_CONSTRAINT;
      }
    }
    if( rc == PAGEDB_OK && (azName[i] = strdup(zName)) == 0 ){
      xfer_msg(emsg, nemsg, "out of memory");
      rc = PAGEDB_NOMEM;
    }
  }
  /* Pass 1: the type of each column, and the records' count. */
  while( rc == PAGEDB_OK ){
    rc = csvRecord(imp, emsg, nemsg);
    if( rc ) break;
    if( imp->nCell != imp->nCol ){
      xfer_msg(emsg, nemsg, "%s: line %lld: %d cells where the header has %d", imp->zSource,
             (long long)imp->csvLine, imp->nCell, imp->nCol);
      rc = PAGEDB_CORRUPT;
      break;
    }
    for(int i = 0; i < imp->nCol; i++){
      const char *z = imp->cBuf + imp->aCell[i];
      size_t k = imp->aCellLen[i];
      int *t = &imp->aColType[i];
      if( k == 0 || *t == PAGEDB_TEXT ) continue;
      if( (*t == COL_EMPTY || *t == PAGEDB_INT) && isInt(z, k) ) *t = PAGEDB_INT;
      else if( isReal(z, k) ) *t = PAGEDB_REAL;
      else *t = PAGEDB_TEXT;
    }
    imp->total++;
  }
  if( rc == PAGEDB_NOTFOUND ) rc = PAGEDB_OK;
  if( rc == PAGEDB_OK ){
    for(int i = 0; i < imp->nCol; i++){
      if( imp->aColType[i] == COL_EMPTY ) imp->aColType[i] = PAGEDB_TEXT;
    }
    rc = impFields(imp, imp->nCol, azName, imp->aColType, imp->aColField, emsg, nemsg);
  }
  for(int i = 0; i < imp->nCol; i++) free(azName[i]);
  free(azName);
  if( rc ) return rc;
  /* Pass 2, from the first record after the header. */
  if( fseek(imp->csv, start, SEEK_SET) != 0 ){
    xfer_msg(emsg, nemsg, "%s: seek: %s", imp->zSource, strerror(errno));
    return PAGEDB_IOERR;
  }
  imp->csvLine = 0;
  rc = csvRecord(imp, emsg, nemsg);
  if( rc ) return rc;
  imp->xNext = csvNext;
  imp->xLoad = 0;
  return impRun(imp, n);
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                            */
/* ------------------------------------------------------------------ */

static int endsWith(const char *z, const char *suffix){
  size_t n = strlen(z), k = strlen(suffix);
  return n >= k && strcasecmp(z + n - k, suffix) == 0;
}

static int isTarName(const char *z){
  return endsWith(z, ".tar") || endsWith(z, ".tar.gz") || endsWith(z, ".tgz");
}

/* SOURCE as tar shards: a glob pattern, or one file. */
static int tarShards(Import *imp, char *emsg, size_t nemsg){
  const char *z = imp->zSource;
  if( strpbrk(z, "*?[") ){
    glob_t g;
    int r = glob(z, 0, 0, &g);
    if( r == GLOB_NOMATCH ){
      xfer_msg(emsg, nemsg, "no file matches the pattern");
      return PAGEDB_CANTOPEN_NOENT;
    }
    if( r ){
      xfer_msg(emsg, nemsg, "glob: %s", r == GLOB_NOSPACE ? "out of memory" : "read error");
      return r == GLOB_NOSPACE ? PAGEDB_NOMEM : PAGEDB_IOERR;
    }
    int rc = PAGEDB_OK;
    imp->azShard = calloc(g.gl_pathc, sizeof(char *));
    if( imp->azShard == 0 ) rc = PAGEDB_NOMEM;
    for(size_t i = 0; rc == PAGEDB_OK && i < g.gl_pathc; i++){
      if( !isTarName(g.gl_pathv[i]) ){
        if( imp->o->err ) fprintf(imp->o->err, "%s: not .tar, .tar.gz or .tgz: skipped\n", g.gl_pathv[i]);
        continue;
      }
      if( (imp->azShard[imp->nShard] = strdup(g.gl_pathv[i])) == 0 ) rc = PAGEDB_NOMEM;
      else imp->nShard++;
    }
    globfree(&g);
    if( rc ){ xfer_msg(emsg, nemsg, "out of memory"); return rc; }
    if( imp->nShard == 0 ){
      xfer_msg(emsg, nemsg, "no .tar, .tar.gz or .tgz file matches the pattern");
      return PAGEDB_CANTOPEN_NOENT;
    }
    return PAGEDB_OK;
  }
  imp->azShard = calloc(1, sizeof(char *));
  if( imp->azShard == 0 || (imp->azShard[0] = strdup(z)) == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  imp->nShard = 1;
  return PAGEDB_OK;
}

static void impFree(Import *imp){
  for(int64_t i = 0; i < imp->nFile; i++) free(imp->azFile[i]);
  free(imp->azFile);
  for(int64_t i = 0; i < imp->nClass; i++) free(imp->azClass[i]);
  free(imp->azClass);
  free(imp->aLabel);
  if( imp->rootFd >= 0 ) close(imp->rootFd);
  for(int i = 0; imp->aPlan && i < imp->nShard; i++) planFree(&imp->aPlan[i]);
  free(imp->aPlan);
  for(int i = 0; i < imp->nShard; i++) free(imp->azShard[i]);
  free(imp->azShard);
  tar_close(imp->tr);
  free(imp->zPend);
  for(int i = 0; i < imp->nExt; i++) free(imp->azExt[i]);
  free(imp->azExt);
  free(imp->aExtField);
  if( imp->csv ) fclose(imp->csv);
  free(imp->aColType);
  free(imp->aColField);
  free(imp->cBuf);
  free(imp->aCell);
  free(imp->aCellLen);
  pthread_mutex_destroy(&imp->mu);
}

int xfer_import(pagedb *db, const char *source, const XferOpts *o, int64_t *n, char *msg,
                size_t nmsg){
  Import imp;
  char emsg[1024];
  struct stat st;
  int rc;
  *n = 0;
  memset(&imp, 0, sizeof imp);
  imp.db = db;
  imp.o = o;
  /* "dir/" names files "dir/a/b", not "dir//a/b". */
  char *zSrc = strdup(source);
  if( zSrc == 0 ){
    if( msg ) xfer_msg(msg, nmsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  for(size_t k = strlen(zSrc); k > 1 && zSrc[k - 1] == '/'; k--) zSrc[k - 1] = 0;
  source = zSrc;
  imp.zSource = source;
  imp.rootFd = -1;
  imp.msg = emsg;
  imp.nmsg = sizeof emsg;
  emsg[0] = 0;
  pthread_mutex_init(&imp.mu, 0);
  /* Ids follow every committed one. */
  int64_t maxId = -1;
  rc = pagedb_sql(db, "SELECT max(id) FROM sample", maxIdRow, &maxId);
  if( rc ){
    xfer_msg(emsg, sizeof emsg, "reading the largest id: %s (%s)", pagedb_errname(rc),
           pagedb_errmsg(db));
  }else{
    imp.base = maxId + 1;
    int isGlob = strpbrk(source, "*?[") != 0 && stat(source, &st) != 0;
    if( !isGlob && stat(source, &st) != 0 ){
      xfer_msg(emsg, sizeof emsg, "%s", strerror(errno));
      rc = errno == ENOENT ? PAGEDB_CANTOPEN_NOENT : PAGEDB_CANTOPEN;
    }else if( !isGlob && S_ISDIR(st.st_mode) ){
      rc = importFolder(&imp, n, emsg, sizeof emsg);
    }else if( isGlob || isTarName(source) ){
      rc = tarShards(&imp, emsg, sizeof emsg);
      if( rc == PAGEDB_OK ) rc = importTar(&imp, n, emsg, sizeof emsg);
    }else if( endsWith(source, ".csv") ){
      rc = importCsv(&imp, n, emsg, sizeof emsg);
    }else{
      xfer_msg(emsg, sizeof emsg, "not a directory (ImageFolder), .tar, .tar.gz, .tgz or glob of "
             "them (WebDataset), or .csv file");
      rc = PAGEDB_MISUSE;
    }
  }
  if( rc && msg ) xfer_msg(msg, nmsg, "%s", emsg);
  impFree(&imp);
  free(zSrc);
  return rc;
}

/* ------------------------------------------------------------------ */
/* .import                                                             */
/* ------------------------------------------------------------------ */

/* Parse CODEC (none, lz4[:L], lz4hc[:L]) into *PC.  0 or -1. */
static int parseCodec(const char *z, int *pc){
  int kind, lmax;
  const char *zl;
  if( strcmp(z, "none") == 0 ){ *pc = PAGEDB_CODEC_NONE; return 0; }
  if( strncmp(z, "lz4hc", 5) == 0 ){ kind = PAGEDB_CODEC_LZ4HC; zl = z + 5; lmax = 12; }
  else if( strncmp(z, "lz4", 3) == 0 ){ kind = PAGEDB_CODEC_LZ4; zl = z + 3; lmax = 65537; }
  else return -1;
  if( *zl == 0 ){ *pc = kind; return 0; }
  if( *zl != ':' ) return -1;
  char *end;
  errno = 0;
  long l = strtol(zl + 1, &end, 10);
  if( errno || end == zl + 1 || *end || l < 1 || l > lmax ) return -1;
  *pc = PAGEDB_CODEC_LEVEL(kind, (int)l);
  return 0;
}

#define IMPORT_USAGE ".import SOURCE [--threads N] [--codec lz4[:L]|lz4hc[:L]] [--page-size N]"

/* USAGE: .import SOURCE [--threads N] [--codec lz4[:L]|lz4hc[:L]] [--page-size N]
** Import an ImageFolder directory, WebDataset tar shards (FILE.tar,
** FILE.tar.gz or a glob of them) or a CSV file into the open dataset, with
** N writer threads (default: every core).  --codec and --page-size apply
** to a dataset that has no fields yet (they are created from SOURCE). */
int dotImport(ShellState *p, int nArg, char **azArg){
  const char *zSource = 0;
  XferOpts o;
  int64_t pageSize = 0;
  memset(&o, 0, sizeof o);
  long nCpu = sysconf(_SC_NPROCESSORS_ONLN);
  o.threads = nCpu > 0 ? (int)nCpu : 1;
  o.bail = p->bail;
  o.err = stderr;
  for(int i = 1; i < nArg; i++){
    const char *z = azArg[i];
    if( z[0] == '-' && z[1] == '-' ) z++;
    int isOpt = strcmp(z, "-threads") == 0 || strcmp(z, "-codec") == 0
             || strcmp(z, "-page-size") == 0;
    if( isOpt && i + 1 >= nArg ){
      shellError(p, ".import %s: missing its value (usage: " IMPORT_USAGE ")", azArg[i]);
      return 1;
    }
    if( strcmp(z, "-threads") == 0 ){
      int64_t v;
      if( shellInt(azArg[++i], &v) || v < 1 || v > XFER_MAX_THREADS ){
        shellError(p, ".import --threads %s: not a number of threads (1 to %d)", azArg[i],
                   XFER_MAX_THREADS);
        return 1;
      }
      o.threads = (int)v;
    }else if( strcmp(z, "-codec") == 0 ){
      if( parseCodec(azArg[++i], &o.codec) ){
        shellError(p, ".import --codec %s: not none, lz4[:1-65537] or lz4hc[:1-12]", azArg[i]);
        return 1;
      }
    }else if( strcmp(z, "-page-size") == 0 ){
      if( shellSize(azArg[++i], &pageSize) || pageSize < 1 ){
        shellError(p, ".import --page-size %s: not a size in bytes (K, M, G suffixes allowed)",
                   azArg[i]);
        return 1;
      }
    }else if( z[0] == '-' ){
      shellError(p, ".import %s: unknown option (usage: " IMPORT_USAGE ")", azArg[i]);
      return 1;
    }else if( zSource ){
      shellError(p, ".import %s: only one SOURCE (already %s)", azArg[i], zSource);
      return 1;
    }else{
      zSource = azArg[i];
    }
  }
  if( zSource == 0 ){
    shellError(p, ".import: missing SOURCE (usage: " IMPORT_USAGE ")");
    return 1;
  }
  if( shellNeedWritable(p, ".import") ) return 1;
  /* Fields cannot be added while a reader is open. */
  shellCloseReader(p);
  if( pageSize ){
    if( pagedb_field_count(p->db) > 0 ){
      shellError(p, ".import --page-size %lld: the dataset has fields already (its page size "
                 "is %zu)", (long long)pageSize, pagedb_page_size(p->db));
      return 1;
    }
    int rc = pagedb_set_page_size(p->db, (size_t)pageSize);
    if( rc ){
      shellError(p, ".import --page-size %lld: %s (%s)", (long long)pageSize,
                 pagedb_errname(rc), pagedb_errmsg(p->db));
      return 1;
    }
  }
  o.stop = &p->interrupted;
  o.progress = shellProgress;
  o.ctx = p;
  int64_t n = 0;
  char emsg[1024];
  int rc = xfer_import(p->db, zSource, &o, &n, emsg, sizeof emsg);
  shellProgressEnd(p);
  if( rc ){
    shellError(p, ".import %s: %s", zSource, emsg);
    return 1;
  }
  if( p->interactive ) fprintf(stderr, "imported %lld samples\n", (long long)n);
  return 0;
}
