/*
** import_jobs.c -- .import --jobs N: N processes import one source, each
** into a part of its own, committed into the dataset at the end as one
** (pagedb_parts_commit; doc/format.md, "Parts").
**
**   1. In the shell's process: the source's fields are made in (or checked
**      against) the dataset, as a one-process import does, and committed
**      with no sample (XferOpts.schemaOnly); the first id is the dataset's
**      largest plus one.
**   2. The dataset is closed (no handle, and none of its threads, crosses
**      the fork), and N children are forked.  Child k creates the part
**      NAME.parts/import-T-k (T random) with the dataset's page size and
**      fields, and imports the samples of rank r with r % N == k, at the
**      ids a one-process import gives them (first id + r); it commits,
**      seals the part and reports its count and seal through a pipe.
**   3. The dataset is opened again, and when every child succeeded the
**      parts holding samples are committed (policy KEEP: the ids are
**      disjoint by construction), all or none.  Otherwise -- a child
**      failed, was interrupted or killed, or the commit was refused -- the
**      dataset stays as step 1 left it and this import's parts are removed
**      (only its own: other parts under NAME.parts/ may be another job's).
**
** So --jobs 1 and --jobs 8 give the same samples at the same ids; the
** dataset is made of parts afterwards (.vacuum makes it one file).
*/
#include "import.h"
#include "shell.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The dataset's schema, taken before it is closed for the fork. */
typedef struct Schema {
  size_t pageSize;
  int n;
  struct {
    char *zName;
    int type, codec, align, dtype, ndim;
    int64_t dims[PAGEDB_TENSOR_MAX_DIMS];
  } a[PAGEDB_MAX_FIELDS];
} Schema;

static int schemaOf(pagedb *db, Schema *s){
  memset(s, 0, sizeof *s);
  s->pageSize = pagedb_page_size(db);
  s->n = pagedb_field_count(db);
  for(int i = 0; i < s->n; i++){
    if( (s->a[i].zName = strdup(pagedb_field_name(db, i))) == 0 ) return PAGEDB_NOMEM;
    s->a[i].type = pagedb_field_type(db, i);
    s->a[i].codec = pagedb_field_codec(db, i);
    s->a[i].align = pagedb_field_align(db, i);
    if( s->a[i].type == PAGEDB_TENSOR ){
      int rc = pagedb_field_tensor(db, i, &s->a[i].dtype, &s->a[i].ndim, s->a[i].dims);
      if( rc ) return rc;
    }
  }
  return PAGEDB_OK;
}

static void schemaFree(Schema *s){
  for(int i = 0; i < s->n; i++) free(s->a[i].zName);
}

/* Give the new dataset DB the fields of S. */
static int schemaApply(pagedb *db, const Schema *s){
  int rc = pagedb_set_page_size(db, s->pageSize);
  for(int i = 0; i < s->n && rc == PAGEDB_OK; i++){
    rc = s->a[i].type == PAGEDB_TENSOR
       ? pagedb_field_add_tensor(db, s->a[i].zName, s->a[i].dtype, s->a[i].ndim, s->a[i].dims, s->a[i].codec,
                                 s->a[i].align)
       : pagedb_field_add_aligned(db, s->a[i].zName, s->a[i].type, s->a[i].codec, s->a[i].align);
  }
  return rc;
}

static int maxId(void *ctx, int nCol, char **azVal, char **azName){
  (void)azName;
  if( nCol > 0 && azVal[0] ) *(int64_t *)ctx = strtoll(azVal[0], 0, 10);
  return 0;
}

/* Remove the part whose data file is Z and its companion files. */
static void removePart(const char *z){
  static const char *const suffix[] = { "-catalog-wal", "-catalog-shm", "-catalog-journal", "-catalog",
                                        "-index.new", "-index", "" };
  char zFile[4400];
  for(size_t i = 0; i < sizeof suffix / sizeof *suffix; i++){
    snprintf(zFile, sizeof zFile, "%s%s", z, suffix[i]);
    unlink(zFile);
  }
}

/* Child K's work: import its share of ZSOURCE into the new part ZPART,
** then write "RC COUNT SEAL MESSAGE" to FD. */
static void childJob(const char *zPart, const char *zSource, XferOpts *o, int k, int nJob, int64_t base,
                     const Schema *s, int fd){
  pagedb *db = 0;
  char emsg[1024] = "";
  int64_t cnt = 0;
  uint64_t seal = 0;
  int rc = pagedb_open(zPart, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, 0);
  if( rc ){
    snprintf(emsg, sizeof emsg, "creating part %s: %s (%s)", zPart, pagedb_errname(rc),
             db ? pagedb_errmsg(db) : pagedb_errstr(rc));
  }else if( (rc = schemaApply(db, s)) != PAGEDB_OK ){
    snprintf(emsg, sizeof emsg, "the fields of part %s: %s (%s)", zPart, pagedb_errname(rc), pagedb_errmsg(db));
  }else{
    o->nShard = nJob;
    o->iShard = k;
    o->hasIdBase = 1;
    o->idBase = base;
    o->progress = 0;
    rc = xfer_import(db, zSource, o, &cnt, emsg, sizeof emsg);
    if( rc == PAGEDB_OK && (rc = pagedb_part_seal(db, &seal)) != PAGEDB_OK ){
      snprintf(emsg, sizeof emsg, "sealing part %s: %s (%s)", zPart, pagedb_errname(rc), pagedb_errmsg(db));
    }
  }
  if( db ) pagedb_close(db);
  for(char *c = emsg; *c; c++) if( *c == '\n' ) *c = ' ';
  dprintf(fd, "%d %lld %llx %s\n", rc, (long long)cnt, (unsigned long long)seal, emsg);
  close(fd);
  _exit(rc ? 1 : 0);
}

typedef struct Child {
  pid_t pid;
  int fd;
  char zPart[4300];
  char zName[64];
  int rc;
  int64_t n;
  uint64_t seal;
  char zMsg[1100];
} Child;

/* Read child C's report and reap it. */
static void childWait(Child *c){
  char buf[1200];
  size_t got = 0;
  ssize_t r;
  while( got + 1 < sizeof buf && ((r = read(c->fd, buf + got, sizeof buf - 1 - got)) > 0 || (r < 0 && errno == EINTR)) ){
    if( r > 0 ) got += (size_t)r;
  }
  buf[got] = 0;
  close(c->fd);
  int st = 0;
  while( waitpid(c->pid, &st, 0) < 0 && errno == EINTR ){}
  long long n = 0;
  unsigned long long seal = 0;
  int rc = -1, off = 0;
  if( sscanf(buf, "%d %lld %llx %n", &rc, &n, &seal, &off) < 3 ){
    c->rc = PAGEDB_ERROR;
    if( WIFSIGNALED(st) ) snprintf(c->zMsg, sizeof c->zMsg, "killed by signal %d", WTERMSIG(st));
    else snprintf(c->zMsg, sizeof c->zMsg, "exited with status %d without a report", WEXITSTATUS(st));
    return;
  }
  c->rc = rc;
  c->n = n;
  c->seal = seal;
  snprintf(c->zMsg, sizeof c->zMsg, "%s", buf + off);
  size_t len = strlen(c->zMsg);
  if( len && c->zMsg[len - 1] == '\n' ) c->zMsg[len - 1] = 0;
  if( rc == PAGEDB_OK && !(WIFEXITED(st) && WEXITSTATUS(st) == 0) ){
    c->rc = PAGEDB_ERROR;
    snprintf(c->zMsg, sizeof c->zMsg, "ended abnormally after its report");
  }
}

int importJobs(ShellState *p, const char *zSource, XferOpts *o, int nJob, int64_t *n){
  char emsg[1024];
  int64_t none = 0, top = -1;
  *n = 0;
  o->schemaOnly = 1;
  int rc = xfer_import(p->db, zSource, o, &none, emsg, sizeof emsg);
  o->schemaOnly = 0;
  if( rc ){
    shellError(p, ".import %s: %s", zSource, emsg);
    return 1;
  }
  rc = pagedb_sql(p->db, "SELECT max(id) FROM sample", maxId, &top);
  if( rc ){
    shellError(p, ".import %s: reading the largest id: %s (%s)", zSource, pagedb_errname(rc), pagedb_errmsg(p->db));
    return 1;
  }
  char *zDb = strdup(pagedb_path(p->db));
  Schema *s = malloc(sizeof *s);
  Child *aChild = calloc((size_t)nJob, sizeof *aChild);
  if( !zDb || !s || !aChild || schemaOf(p->db, s) != PAGEDB_OK ){
    if( s ) schemaFree(s);
    free(zDb); free(s); free(aChild);
    shellError(p, ".import %s: out of memory", zSource);
    return 1;
  }
  char zDir[4200], zTok[32];
  snprintf(zDir, sizeof zDir, "%s.parts", zDb);
  unsigned long long r = (unsigned long long)time(0) ^ ((unsigned long long)getpid() << 20);
  int ufd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if( ufd >= 0 ){
    if( read(ufd, &r, sizeof r) != (ssize_t)sizeof r ){ /* the clock and pid will do */ }
    close(ufd);
  }
  snprintf(zTok, sizeof zTok, "%012llx", r & 0xffffffffffffULL);
  int bad = 0;
  if( mkdir(zDir, 0777) != 0 && errno != EEXIST ){
    shellError(p, ".import %s: cannot make %s: %s", zSource, zDir, strerror(errno));
    bad = 1;
  }
  /* Nothing of the dataset's crosses the fork: the handle is closed. */
  shellCloseDb(p);
  int started = 0;
  fflush(0);
  for(int k = 0; k < nJob && !bad; k++){
    Child *c = &aChild[k];
    int pfd[2];
    snprintf(c->zName, sizeof c->zName, "import-%s-%d", zTok, k);
    snprintf(c->zPart, sizeof c->zPart, "%s/%s", zDir, c->zName);
    if( pipe(pfd) != 0 ){
      shellError(p, ".import %s: pipe: %s", zSource, strerror(errno));
      bad = 1;
      break;
    }
    c->pid = fork();
    if( c->pid == 0 ){
      close(pfd[0]);
      for(int j = 0; j < k; j++) close(aChild[j].fd);
      childJob(c->zPart, zSource, o, k, nJob, top + 1, s, pfd[1]);
    }
    close(pfd[1]);
    if( c->pid < 0 ){
      close(pfd[0]);
      shellError(p, ".import %s: fork: %s", zSource, strerror(errno));
      bad = 1;
      break;
    }
    c->fd = pfd[0];
    started++;
  }
  int64_t total = 0, nPart = 0;
  for(int k = 0; k < started; k++){
    Child *c = &aChild[k];
    childWait(c);
    if( c->rc != PAGEDB_OK && !bad ){
      shellError(p, ".import %s: process %d of %d: %s; nothing was imported", zSource, k + 1, nJob, c->zMsg);
      bad = 1;
    }
    total += c->n;
    if( c->n > 0 ) nPart++;
  }
  if( !bad && p->interrupted ){
    shellError(p, ".import %s: interrupted; nothing was imported", zSource);
    bad = 1;
  }
  if( shellOpenDb(p, ".import", zDb) || p->db == 0 ){
    if( !bad ) shellError(p, ".import %s: cannot reopen %s to commit the parts; nothing was imported", zSource, zDb);
    bad = 1;
  }
  if( !bad && nPart > 0 ){
    pagedb_part *aPart = calloc((size_t)nPart, sizeof *aPart);
    int i = 0;
    for(int k = 0; aPart && k < started; k++){
      if( aChild[k].n == 0 ) continue;
      aPart[i].path = aChild[k].zPart;
      aPart[i].name = aChild[k].zName;
      aPart[i].seal = aChild[k].seal;
      i++;
    }
    int64_t got = 0;
    rc = aPart ? pagedb_parts_commit(p->db, aPart, (int)nPart, PAGEDB_ATTACH_KEEP, &got) : PAGEDB_NOMEM;
    free(aPart);
    if( rc ){
      shellError(p, ".import %s: committing %lld parts: %s (%s)", zSource, (long long)nPart, pagedb_errname(rc),
                 p->db ? pagedb_errmsg(p->db) : "out of memory");
      bad = 1;
    }else{
      *n = got;   /* committed: the parts are the dataset's now, whatever else happens */
    }
  }
  /* Parts not committed (empty, or all of a failed import) are removed. */
  for(int k = 0; k < started; k++){
    if( bad || aChild[k].n == 0 ) removePart(aChild[k].zPart);
  }
  schemaFree(s);
  free(s);
  free(aChild);
  free(zDb);
  return bad;
}
