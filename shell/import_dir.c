/*
** import_dir.c -- .import of an ImageFolder directory (see xfer.h).
**
** A first pass walks SOURCE (never following a symbolic link, and skipping
** the dataset's own files) and sorts the regular files' paths, so a file's
** rank and so its sample id do not depend on the threads; each class is a
** first-level directory, its label the index in the sorted classes.  Then
** ifNext hands out a file per job and ifLoad reads it outside the lock,
** opening it one directory at a time so a link swapped in is refused.
** Problems with one file are reported and skipped here (or stop the import
** with -bail): only this layout reads files that may vanish under it.
*/
#include "import.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XFER_MAX_DEPTH      256       /* directory levels below SOURCE */

/* ------------------------------------------------------------------ */
/* The classes table                                                   */
/* ------------------------------------------------------------------ */

/* Append Z to the string *PZ (length *PN) as an SQL string literal. */
static int sqlQuote(char **pz, size_t *pn, const char *z){
  size_t k = strlen(z), need = *pn + 2 * k + 3;
  char *b = realloc(*pz, need + 1);
  if( b == 0 ) return PAGEDB_NOMEM;
  *pz = b;
  b[(*pn)++] = '\'';
  for(; *z; z++){
    if( *z == '\'' ) b[(*pn)++] = '\'';
    b[(*pn)++] = *z;
  }
  b[(*pn)++] = '\'';
  b[*pn] = 0;
  return PAGEDB_OK;
}

/* pagedb_sql callback: label and name of a classes row that disagrees. */
typedef struct ClassClash { int found; char zLabel[32]; char zHave[256]; } ClassClash;
static int classRow(void *ctx, int nCol, char **azVal, char **azName){
  ClassClash *c = ctx;
  (void)azName;
  if( c->found++ || nCol < 2 ) return 0;
  snprintf(c->zLabel, sizeof c->zLabel, "%s", azVal[0] ? azVal[0] : "NULL");
  snprintf(c->zHave, sizeof c->zHave, "%s", azVal[1] ? azVal[1] : "NULL");
  return 0;
}

/*
** Keep the class names in the catalog table classes(label, name) (a user
** table, pagedb_sql_user), so SQL can join them with the samples' labels:
** created if missing; a label the table has already must have the same
** name (a second import of another class list would make one label mean
** two classes: refused, naming both, before anything is written).
*/
static int ifClasses(Import *imp, char *emsg, size_t nemsg){
  if( imp->nClass == 0 ) return PAGEDB_OK;
  char *zSql = 0;
  size_t n = 0;
  int rc = PAGEDB_OK;
  /* The names of the labels as a VALUES list, for the check and the insert. */
  const char *zHead = "WITH src(label, name) AS (VALUES";
  zSql = malloc(strlen(zHead) + 1);
  if( zSql == 0 ) rc = PAGEDB_NOMEM;
  else{ strcpy(zSql, zHead); n = strlen(zHead); }
  for(int64_t i = 0; rc == PAGEDB_OK && i < imp->nClass; i++){
    char zNum[40];
    snprintf(zNum, sizeof zNum, "%s(%lld, ", i ? ", " : "", (long long)i);
    char *b = realloc(zSql, n + strlen(zNum) + 1);
    if( b == 0 ){ rc = PAGEDB_NOMEM; break; }
    zSql = b;
    memcpy(zSql + n, zNum, strlen(zNum) + 1);
    n += strlen(zNum);
    rc = sqlQuote(&zSql, &n, imp->azClass[i]);
    if( rc == PAGEDB_OK ){
      b = realloc(zSql, n + 2);
      if( b == 0 ){ rc = PAGEDB_NOMEM; break; }
      zSql = b;
      zSql[n++] = ')';
      zSql[n] = 0;
    }
  }
  static const char *zCheck = ") SELECT c.label, c.name, s.name FROM classes c JOIN src s USING(label)"
                              " WHERE c.name IS NOT s.name LIMIT 1";
  static const char *zCreate = "CREATE TABLE IF NOT EXISTS classes(label INTEGER PRIMARY KEY, name TEXT NOT NULL); ";
  static const char *zInsert = ") INSERT OR IGNORE INTO classes(label, name) SELECT label, name FROM src";
  char *zAll = 0;
  if( rc == PAGEDB_OK ){
    zAll = malloc(strlen(zCreate) + n + strlen(zCheck) + strlen(zInsert) + 1);
    if( zAll == 0 ) rc = PAGEDB_NOMEM;
  }
  if( rc == PAGEDB_NOMEM ){
    free(zSql);
    xfer_msg(emsg, nemsg, "out of memory");
    return rc;
  }
  ClassClash clash = { 0, "", "" };
  sprintf(zAll, "%s%s", zSql, zCheck);
  int exists = 0;
  rc = pagedb_sql(imp->db, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'classes'",
                  classRow, &clash);
  exists = clash.found;
  clash.found = 0;
  if( rc == PAGEDB_OK && exists ) rc = pagedb_sql(imp->db, zAll, classRow, &clash);
  if( rc ){
    xfer_msg(emsg, nemsg, "reading table classes: %s (%s)", pagedb_errname(rc), pagedb_errmsg(imp->db));
  }else if( clash.found ){
    int64_t lab = strtoll(clash.zLabel, 0, 10);
    xfer_msg(emsg, nemsg, "label %s is class \"%s\" in the dataset's table classes, but \"%s\" in %s "
             "(the class directories differ: import into a new dataset)", clash.zLabel, clash.zHave,
             lab >= 0 && lab < imp->nClass ? imp->azClass[lab] : "?", imp->zSource);
    rc = PAGEDB_MISMATCH;
  }else{
    sprintf(zAll, "%s%s%s", zCreate, zSql, zInsert);
    rc = pagedb_sql_user(imp->db, zAll, 0);
    if( rc ){
      xfer_msg(emsg, nemsg, "writing the class names to table classes: %s (%s)", pagedb_errname(rc),
               pagedb_errmsg(imp->db));
    }
  }
  free(zAll);
  free(zSql);
  return rc;
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

/* Note the file at PATH, if it exists, as one of the dataset's own. */
static void ownFile(Import *imp, const char *zPath){
  struct stat st;
  if( imp->nOwn < (int)(sizeof imp->aOwnIno / sizeof imp->aOwnIno[0]) && stat(zPath, &st) == 0 ){
    imp->aOwnDev[imp->nOwn] = st.st_dev;
    imp->aOwnIno[imp->nOwn++] = st.st_ino;
  }
}

int importFolder(Import *imp, int64_t *n, char *emsg, size_t nemsg){
  imp->rootFd = open(imp->zSource, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if( imp->rootFd < 0 ){
    xfer_msg(emsg, nemsg, "cannot open the directory: %s", strerror(errno));
    return PAGEDB_CANTOPEN;
  }
  /* A dataset inside SOURCE must not import itself as it grows: its data
  ** file, its catalog's files and its index file (src/dindex.c). */
  static const char *azSuffix[] = { "-catalog", "-catalog-journal", "-catalog-wal", "-catalog-shm", "-index",
                                    "-index.new" };
  ownFile(imp, pagedb_path(imp->db));
  for(int k = 0; k < 6; k++){
    char zName[4200];
    snprintf(zName, sizeof zName, "%s%s", pagedb_path(imp->db), azSuffix[k]);
    ownFile(imp, zName);
  }
  int dfd = dup(imp->rootFd);
  int rc = dfd < 0 ? PAGEDB_IOERR : ifScan(imp, dfd, "", 0, emsg, nemsg);
  if( dfd < 0 ) xfer_msg(emsg, nemsg, "dup: %s", strerror(errno));
  if( rc ) return rc;
  /* A tree without classes or files leaves the arrays NULL: not for qsort. */
  if( imp->nClass > 1 ) qsort(imp->azClass, (size_t)imp->nClass, sizeof(char *), strPtrCmp);
  if( imp->nFile > 1 ) qsort(imp->azFile, (size_t)imp->nFile, sizeof(char *), strPtrCmp);
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
  rc = impFields(imp, 3, azName, aType, 0, aIdx, emsg, nemsg);
  if( rc == PAGEDB_OK && pagedb_field_type(imp->db, aIdx[1]) == PAGEDB_INT ){
    rc = ifClasses(imp, emsg, nemsg);
  }
  if( rc ) return rc;
  imp->fData = aIdx[0];
  imp->fLabel = aIdx[1];
  imp->fPath = aIdx[2];
  imp->total = imp->nFile;
  imp->xNext = ifNext;
  imp->xLoad = ifLoad;
  return impRun(imp, n);
}

void importFolderFree(Import *imp){
  for(int64_t i = 0; i < imp->nFile; i++) free(imp->azFile[i]);
  free(imp->azFile);
  for(int64_t i = 0; i < imp->nClass; i++) free(imp->azClass[i]);
  free(imp->azClass);
  free(imp->aLabel);
  if( imp->rootFd >= 0 ) close(imp->rootFd);
}
