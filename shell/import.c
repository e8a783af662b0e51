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
**
** This file is that shared machinery, xfer_import's dispatch and .import;
** the layouts' sources are in import_dir.c (ImageFolder), import_tar.c
** (WebDataset shards) and import_csv.c (CSV), import.h between them.
*/
#include "import.h"
#include "npy.h"
#include "shell.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define XFER_COMMIT_SAMPLES 10000
#define XFER_COMMIT_BYTES   ((int64_t)1 << 30)
#define XFER_MAX_THREADS    256
#define XFER_MAX_JOBS       256

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

static void jobClear(Job *j){
  for(int i = 0; i < j->nPut; i++) if( j->aPut[i].owned ) free(j->aPut[i].data);
  free(j->aPut);
  memset(j, 0, sizeof *j);
}

/* A new value in J; NULL when out of memory. */
Put *jobPut(Job *j, int field, int type){
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
       : t == PAGEDB_REAL ? "REAL" : t == PAGEDB_TENSOR ? "TENSOR" : "?";
}

/* Whether values the source gives as type SRC fit a field of type DST:
** anything is stored as BYTES or TEXT (numbers as their decimal text),
** integers as REAL; a value a conversion then refuses (text that is not a
** number) is reported by the writer, naming the sample and the field. */
static int typeFits(int src, int dst){
  return src == dst || dst == PAGEDB_BYTES || dst == PAGEDB_TEXT
      || (dst == PAGEDB_REAL && src == PAGEDB_INT);
}

int impFields(Import *imp, int n, char **azName, const int *aSrcType, const XferTensor *aTensor, int *aIdx,
              char *emsg, size_t nemsg){
  pagedb *db = imp->db;
  const XferOpts *o = imp->o;
  /* Every override names a field of the source. */
  for(int k = 0; k < o->nField; k++){
    int i = 0;
    while( i < n && strcasecmp(azName[i], o->aField[k].zName) ) i++;
    if( i == n ){
      const char *z = o->aField[k].zName;
      int reserved = strcasecmp(z, "id") == 0 || strcasecmp(z, "page") == 0 || strcasecmp(z, "off") == 0;
      xfer_msg(emsg, nemsg, "--field %s: the source has no field \"%s\" (its fields:%s%s%s%s%s)%s%s%s",
               z, z, n > 0 ? " " : "", n > 0 ? azName[0] : "",
               n > 1 ? " " : "", n > 1 ? azName[1] : "", n > 2 ? " ..." : "",
               reserved ? "; a member or column named " : "", reserved ? z : "",
               reserved ? " is the field with '_' appended (id is table sample's key)" : "");
      return PAGEDB_MISMATCH;
    }
  }
  int created = pagedb_field_count(db) == 0;
  for(int i = 0; i < n; i++){
    const XferField *ov = 0;
    for(int k = 0; k < o->nField; k++){
      if( strcasecmp(azName[i], o->aField[k].zName) == 0 ) ov = &o->aField[k];
    }
    int type = ov ? ov->type : aSrcType[i];
    if( created ){
      int codec = ov && ov->hasCodec ? ov->codec : type == PAGEDB_BYTES ? o->codec : PAGEDB_CODEC_NONE;
      const XferTensor *t = ov && ov->type == PAGEDB_TENSOR ? &ov->tensor : aTensor ? &aTensor[i] : 0;
      int rc = type == PAGEDB_TENSOR && t
             ? pagedb_field_add_tensor(db, azName[i], t->dtype, t->ndim, t->dims, codec, PAGEDB_ALIGN_DEFAULT)
             : pagedb_field_add(db, azName[i], type, codec);
      if( rc ){
        xfer_msg(emsg, nemsg, "creating field \"%s\" %s: %s (%s)", azName[i], typeName(type),
               pagedb_errname(rc), pagedb_errmsg(db));
        return rc;
      }
      aIdx[i] = i;
      continue;
    }
    int f = pagedb_field_index(db, azName[i]);
    if( f < 0 ){
      xfer_msg(emsg, nemsg, "field \"%s\": the dataset has fields already, and not this one "
               "(import into a new dataset, or one with the same fields)", azName[i]);
      return PAGEDB_MISMATCH;
    }
    int have = pagedb_field_type(db, f);
    if( ov ? ov->type != have : !typeFits(aSrcType[i], have) ){
      xfer_msg(emsg, nemsg, "field \"%s\": the dataset's field is %s, where %s %s (import into a "
               "new dataset, or give --field %s:%s)", azName[i], typeName(have),
               ov ? "--field asks for" : "this source holds", typeName(type), azName[i],
               typeName(have));
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

/* The sample J names in messages: its __key__ (a tar's) or its id. */
static void jobName(Import *imp, Job *j, char *buf, size_t n){
  int fKey = pagedb_field_index(imp->db, "__key__");
  if( fKey >= 0 ){
    for(int i = 0; i < j->nPut; i++){
      Put *p = &j->aPut[i];
      if( p->field == fKey && p->data && (p->type == PAGEDB_TEXT || p->type == PAGEDB_BYTES) ){
        snprintf(buf, n, "sample %lld (key \"%.*s\")", (long long)j->id,
                 (int)(p->n < 200 ? p->n : 200), (const char *)p->data);
        return;
      }
    }
  }
  snprintf(buf, n, "sample %lld", (long long)j->id);
}

/*
** Convert value P to the type of its field in the dataset (impFields made
** sure the source's type fits it): a number to its decimal text for a
** BYTES or TEXT field, decimal text (blanks around it allowed, as in
** "3\n") to INT or REAL; JSON checked for a TEXT field when P->json.
** PAGEDB_MISMATCH with EMSG naming the sample and the field when a value
** is not what its field holds.
*/
static int impConvert(Import *imp, Job *j, Put *p, char *emsg, size_t nemsg){
  int want = pagedb_field_type(imp->db, p->field);
  const char *zField = pagedb_field_name(imp->db, p->field);
  char zName[300];
  if( (want == PAGEDB_BYTES || want == PAGEDB_TEXT) && (p->type == PAGEDB_INT || p->type == PAGEDB_REAL) ){
    char buf[64];
    int k = p->type == PAGEDB_INT ? snprintf(buf, sizeof buf, "%lld", (long long)p->iv)
                                  : snprintf(buf, sizeof buf, "%.17g", p->rv);
    char *z = malloc((size_t)k + 1);
    if( z == 0 ){ xfer_msg(emsg, nemsg, "out of memory"); return PAGEDB_NOMEM; }
    memcpy(z, buf, (size_t)k + 1);
    p->data = z;
    p->n = (size_t)k;
    p->owned = 1;
  }else if( (want == PAGEDB_INT || want == PAGEDB_REAL) && (p->type == PAGEDB_BYTES || p->type == PAGEDB_TEXT) ){
    const char *z = p->data;
    size_t a = 0, b = p->n;
    while( a < b && isspace((unsigned char)z[a]) ) a++;
    while( b > a && isspace((unsigned char)z[b - 1]) ) b--;
    char buf[64], *end;
    int ok = b - a > 0 && b - a < sizeof buf;
    if( ok ){
      memcpy(buf, z + a, b - a);
      buf[b - a] = 0;
      errno = 0;
      if( want == PAGEDB_INT ) p->iv = strtoll(buf, &end, 10);
      else p->rv = strtod(buf, &end);
      /* An underflow (5e-324, 1e-400) reads as the nearest double, as
      ** Python's float() reads it; an overflow is refused. */
      ok = (errno == 0 || (errno == ERANGE && want == PAGEDB_REAL && isfinite(p->rv))) && *end == 0;
    }
    if( !ok ){
      jobName(imp, j, zName, sizeof zName);
      xfer_msg(emsg, nemsg, "%s, field \"%s\": \"%.*s\" is not %s (the field is %s; "
               "--field %s:bytes keeps such values as they are)", zName, zField,
               (int)(p->n < 40 ? p->n : 40), z, want == PAGEDB_INT ? "an integer" : "a number",
               want == PAGEDB_INT ? "INT" : "REAL", zField);
      return PAGEDB_MISMATCH;
    }
    if( p->owned ) free(p->data);
    p->data = 0;
    p->n = 0;
    p->owned = 0;
  }else if( want == PAGEDB_REAL && p->type == PAGEDB_INT ){
    p->rv = (double)p->iv;
  }else if( want == PAGEDB_TENSOR && p->type != PAGEDB_BYTES && p->type != PAGEDB_TENSOR ){
    jobName(imp, j, zName, sizeof zName);
    xfer_msg(emsg, nemsg, "%s, field \"%s\": a tensor field takes .npy files, not %s values", zName, zField,
             typeName(p->type));
    return PAGEDB_MISMATCH;
  }
  if( want == PAGEDB_TEXT && p->json ){
    size_t off;
    const char *zErr = jsonCheck(p->data, p->n, &off);
    if( zErr ){
      jobName(imp, j, zName, sizeof zName);
      xfer_msg(emsg, nemsg, "%s, field \"%s\": not valid JSON: %s at byte %zu (--field %s:bytes "
               "keeps such values as they are)", zName, zField, zErr, off, zField);
      return PAGEDB_MISMATCH;
    }
  }
  p->type = want;
  return PAGEDB_OK;
}

/* Write job J's sample with W.  Returns a code, with EMSG. */
static int impWrite(Import *imp, pagedb_writer *w, Job *j, char *emsg, size_t nemsg){
  for(int i = 0; i < j->nPut; i++){
    int rc = impConvert(imp, j, &j->aPut[i], emsg, nemsg);
    if( rc ) return rc;
  }
  int rc = pagedb_sample_begin(w, j->id);
  const char *zWhat = "pagedb_sample_begin";
  for(int i = 0; rc == PAGEDB_OK && i < j->nPut; i++){
    Put *p = &j->aPut[i];
    zWhat = pagedb_field_name(imp->db, p->field);
    if( p->type == PAGEDB_INT ) rc = pagedb_put_int(w, p->field, p->iv);
    else if( p->type == PAGEDB_REAL ) rc = pagedb_put_real(w, p->field, p->rv);
    else if( p->type == PAGEDB_TENSOR ){
      /* A .npy file: its header gives the dtype and shape, pagedb checks
      ** them against the declaration. */
      NpyInfo info;
      const char *why = npy_parse(p->data, p->n, &info);
      if( why ){
        char zName[300];
        jobName(imp, j, zName, sizeof zName);
        xfer_msg(emsg, nemsg, "%s, field \"%s\": %s", zName, zWhat, why);
        pagedb_sample_cancel(w);
        return PAGEDB_MISMATCH;
      }
      /* A field declared bfloat16 (--field NAME:tensor:bfloat16:...) takes
      ** uint16 .npy members as its bits: what .export writes for it. */
      int dt = info.dtype, fdt = 0;
      if( dt == PAGEDB_DT_UINT16 && pagedb_field_tensor(imp->db, p->field, &fdt, 0, 0) == PAGEDB_OK
       && fdt == PAGEDB_DT_BFLOAT16 ) dt = PAGEDB_DT_BFLOAT16;
      rc = pagedb_put_tensor(w, p->field, dt, info.ndim, info.shape, (const char *)p->data + info.off,
                             info.nbytes);
    }
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
    /* --jobs N: another process writes the samples of other ranks. */
    int other = 0;
    if( rc == PAGEDB_OK ){
      other = imp->o->nShard > 1 && imp->nextJob % imp->o->nShard != imp->o->iShard;
      j.id = imp->base + imp->nextJob++;
    }
    else if( rc == PAGEDB_NOTFOUND ) imp->exhausted = 1;
    else impFailLocked(imp, rc, emsg);
    impProgressLocked(imp);
    pthread_mutex_unlock(&imp->mu);
    if( rc ){
      jobClear(&j);
      break;
    }
    if( other ){
      jobClear(&j);
      continue;
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
int impRun(Import *imp, int64_t *n){
  int nThread = imp->o->threads < 1 ? 1 : imp->o->threads > XFER_MAX_THREADS
              ? XFER_MAX_THREADS : imp->o->threads;
  if( (int64_t)nThread > imp->total && imp->total > 0 ) nThread = (int)imp->total;
  int64_t before = pagedb_count(imp->db);
  if( imp->o->schemaOnly ){
    /* The fields (and classes) are made: commit them, and no sample. */
    int rc = pagedb_commit(imp->db);
    if( rc ){
      char emsg[512];
      xfer_msg(emsg, sizeof emsg, "pagedb_commit: %s (%s)", pagedb_errname(rc), pagedb_errmsg(imp->db));
      impFail(imp, rc, emsg);
    }
    *n = 0;
    return imp->rc;
  }
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
/* Dispatch                                                            */
/* ------------------------------------------------------------------ */

static int endsWith(const char *z, const char *suffix){
  size_t n = strlen(z), k = strlen(suffix);
  return n >= k && strcasecmp(z + n - k, suffix) == 0;
}

int isTarName(const char *z){
  return endsWith(z, ".tar") || endsWith(z, ".tar.gz") || endsWith(z, ".tgz");
}

static void impFree(Import *imp){
  importFolderFree(imp);
  importTarFree(imp);
  importCsvFree(imp);
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
    imp.base = o->hasIdBase ? o->idBase : maxId + 1;
    int isGlob = strpbrk(source, "*?[") != 0 && stat(source, &st) != 0;
    if( !isGlob && stat(source, &st) != 0 ){
      xfer_msg(emsg, sizeof emsg, "%s", strerror(errno));
      rc = errno == ENOENT ? PAGEDB_CANTOPEN_NOENT : PAGEDB_CANTOPEN;
    }else if( !isGlob && S_ISDIR(st.st_mode) ){
      rc = importFolder(&imp, n, emsg, sizeof emsg);
    }else if( isGlob || isTarName(source) ){
      rc = importTar(&imp, n, emsg, sizeof emsg);
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

/* Parse CODEC (none, lz4[:L], lz4hc[:L], zstd[:L], zstd-dict[:L]) into
** *PC.  0 or -1. */
static int parseCodec(const char *z, int *pc){
  return pagedb_codec_parse(z, pc) == PAGEDB_OK ? 0 : -1;
}


/* USAGE: .import SOURCE [--threads N] [--jobs N] [--codec CODEC] [--page-size N]
** Import an ImageFolder directory, WebDataset tar shards (FILE.tar,
** FILE.tar.gz or a glob of them) or a CSV file into the open dataset, with
** N writer threads (default: every core), or with --jobs N by N processes
** writing parts (import_jobs.c; each one writer thread unless --threads).  --codec and --page-size apply
** to a dataset that has no fields yet (they are created from SOURCE). */
int dotImport(ShellState *p, int nArg, char **azArg){
  const char *zSource = 0;
  XferOpts o;
  int64_t pageSize = 0;
  int nJob = 1, threadsGiven = 0;
  memset(&o, 0, sizeof o);
  long nCpu = sysconf(_SC_NPROCESSORS_ONLN);
  o.threads = nCpu > 0 ? (int)nCpu : 1;
  o.bail = p->bail;
  o.err = stderr;
  XferField aField[PAGEDB_MAX_FIELDS];
  for(int i = 1; i < nArg; i++){
    const char *z = azArg[i];
    if( z[0] == '-' && z[1] == '-' ) z++;
    int isOpt = strcmp(z, "-threads") == 0 || strcmp(z, "-jobs") == 0 || strcmp(z, "-codec") == 0
             || strcmp(z, "-page-size") == 0 || strcmp(z, "-field") == 0;
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
      threadsGiven = 1;
    }else if( strcmp(z, "-jobs") == 0 ){
      int64_t v;
      if( shellInt(azArg[++i], &v) || v < 1 || v > XFER_MAX_JOBS ){
        shellError(p, ".import --jobs %s: not a number of processes (1 to %d)", azArg[i], XFER_MAX_JOBS);
        return 1;
      }
      nJob = (int)v;
    }else if( strcmp(z, "-codec") == 0 ){
      if( parseCodec(azArg[++i], &o.codec) ){
        shellError(p, ".import --codec %s: not none, lz4[:1-65537], lz4hc[:1-12], zstd[:-131072-22] or zstd-dict[:L]", azArg[i]);
        return 1;
      }
    }else if( strcmp(z, "-page-size") == 0 ){
      if( shellSize(azArg[++i], &pageSize) || pageSize < 1 ){
        shellError(p, ".import --page-size %s: not a size in bytes (K, M, G suffixes allowed)",
                   azArg[i]);
        return 1;
      }
    }else if( strcmp(z, "-field") == 0 ){
      if( o.nField >= PAGEDB_MAX_FIELDS ){
        shellError(p, ".import --field %s: more than %d", azArg[i + 1], PAGEDB_MAX_FIELDS);
        return 1;
      }
      XferField *f = &aField[o.nField];
      /* A codec is given when the spec has a third part (NAME:TYPE:CODEC). */
      const char *c1 = strchr(azArg[++i], ':');
      f->hasCodec = c1 && strchr(c1 + 1, ':') != 0;
      if( shellFieldSpec(p, ".import", azArg[i], &f->zName, &f->type, &f->codec, &f->tensor) ) return 1;
      for(int k = 0; k < o.nField; k++){
        if( strcasecmp(aField[k].zName, f->zName) == 0 ){
          shellError(p, ".import --field %s: given twice", f->zName);
          return 1;
        }
      }
      o.nField++;
      o.aField = aField;
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
  if( shellNeedCreate(p, ".import") ) return 1;
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
  if( nJob > 1 ){
    /* Each process one writer thread unless told: the cores go to the jobs. */
    if( !threadsGiven ) o.threads = 1;
    if( importJobs(p, zSource, &o, nJob, &n) ) return 1;
    shellChanged(p, n);
    if( p->interactive ) fprintf(stderr, "imported %lld samples by %d processes\n", (long long)n, nJob);
    return 0;
  }
  int rc = xfer_import(p->db, zSource, &o, &n, emsg, sizeof emsg);
  shellProgressEnd(p);
  if( rc ){
    shellError(p, ".import %s: %s", zSource, emsg);
    return 1;
  }
  shellChanged(p, n);
  if( p->interactive ) fprintf(stderr, "imported %lld samples\n", (long long)n);
  return 0;
}
