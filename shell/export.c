/*
** export.c -- .export: a dataset back to files.
**
** DEST ending in ".tar" (or ".tar.gz", ".tgz": compressed with zlib): one
** WebDataset tar file (never split into shards),
** members KEY.FIELD in id order: KEY is the sample's __key__ value, or its
** id in decimal when the dataset has no __key__ field; every other field
** with a value becomes a member named after the field (id_, page_ and
** off_, the fields an import makes of .id, .page and .off, as those):
** BYTES and TEXT values as stored (decompressed), INT and REAL values as
** WebDataset's writers write them (Python's str() of the number).  A tar
** import of a WebDataset shard and an export of it give back every
** member's name and bytes, but for numbers written otherwise ("3\n"),
** which come back as "3" (xfer.h).
**
** Any other DEST: a directory (created if missing; its parent must exist)
** into which each sample's data (BYTES) is written at its path (TEXT), as
** an ImageFolder import recorded them.
**
** Nothing is written outside DEST: a path or key from the catalog that is
** absolute, empty, or has an empty, "." or ".." component is refused with
** a message naming the sample, and the directories below DEST are opened
** one component at a time with O_NOFOLLOW, so a symbolic link placed in
** DEST cannot redirect a write either.
*/
#include "xfer.h"
#include "shell.h"
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct Export {
  pagedb *db;
  const XferOpts *o;
  pagedb_reader *rd;
  int64_t *aId;
  int64_t nId, nAlloc;
  int oom;
} Export;

static int endsWith(const char *z, const char *suffix){
  size_t n = strlen(z), k = strlen(suffix);
  return n >= k && strcmp(z + n - k, suffix) == 0;
}

static int idRow(void *ctx, int nCol, char **azVal, char **azName){
  Export *e = ctx;
  if( nCol < 1 || azVal[0] == 0 ) return 0;
  if( e->nId == e->nAlloc ){
    int64_t n2 = e->nAlloc ? e->nAlloc * 2 : 1024;
    int64_t *a = realloc(e->aId, (size_t)n2 * sizeof *a);
    if( a == 0 ){ e->oom = 1; return 1; }
    e->aId = a;
    e->nAlloc = n2;
  }
  e->aId[e->nId++] = strtoll(azVal[0], 0, 10);
  return 0;
}

/* Why relative path Z (N bytes) may not be written below DEST, or NULL. */
static const char *pathProblem(const char *z, size_t n){
  if( n == 0 ) return "is empty";
  if( memchr(z, 0, n) ) return "has a NUL byte";
  if( z[0] == '/' ) return "is absolute";
  size_t i = 0;
  while( i <= n ){
    size_t j = i;
    while( j < n && z[j] != '/' ) j++;
    size_t k = j - i;
    if( k == 0 ) return "has an empty component";
    if( k == 1 && z[i] == '.' ) return "has a \".\" component";
    if( k == 2 && z[i] == '.' && z[i + 1] == '.' ) return "has a \"..\" component";
    i = j + 1;
  }
  return 0;
}

/* Write N bytes of DATA at relative path Z below directory ROOT, making
** the directories it needs.  Returns 0, or -1 with errno. */
static int writeBeneath(int root, const char *z, const void *data, size_t n){
  int dfd = root;
  for(;;){
    const char *slash = strchr(z, '/');
    if( slash == 0 ) break;
    char comp[NAME_MAX + 1];
    size_t k = (size_t)(slash - z);
    if( k > NAME_MAX ){ errno = ENAMETOOLONG; goto fail; }
    memcpy(comp, z, k);
    comp[k] = 0;
    if( mkdirat(dfd, comp, 0777) != 0 && errno != EEXIST ) goto fail;
    int fd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if( fd < 0 ){
      /* Linux says ENOTDIR for a link opened with O_DIRECTORY|O_NOFOLLOW. */
      struct stat st;
      if( errno == ENOTDIR && fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0
          && S_ISLNK(st.st_mode) ){
        errno = ELOOP;
      }
      goto fail;
    }
    if( dfd != root ) close(dfd);
    dfd = fd;
    z = slash + 1;
  }
  int fd = openat(dfd, z, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
  if( fd < 0 ) goto fail;
  size_t done = 0;
  while( done < n ){
    ssize_t k = write(fd, (const char *)data + done, n - done > (1u << 30) ? (1u << 30) : n - done);
    if( k < 0 && errno == EINTR ) continue;
    if( k <= 0 ){
      int e = errno;
      close(fd);
      errno = k < 0 ? e : EIO;
      goto fail;
    }
    done += (size_t)k;
  }
  if( close(fd) != 0 ) goto fail;
  if( dfd != root ) close(dfd);
  return 0;
fail:
  {
    int e = errno;
    if( dfd != root ) close(dfd);
    errno = e;
  }
  return -1;
}

/* Report on o->err that sample ID was skipped, and why. */
static void skipped(Export *e, int64_t id, const char *zPath, const char *zWhy){
  FILE *f = e->o->err;
  if( f == 0 ) return;
  /* Erase a progress bar being drawn on the same terminal first. */
  if( isatty(fileno(f)) ) fputs("\r\033[K", f);
  if( zPath ) fprintf(f, "sample %lld (%s): %s: skipped\n", (long long)id, zPath, zWhy);
  else fprintf(f, "sample %lld: %s: skipped\n", (long long)id, zWhy);
}

static void progress(Export *e, int64_t done, int64_t bytes){
  if( e->o->progress ) e->o->progress(e->o->ctx, done, e->nId, bytes);
}

static int stopped(Export *e){
  return e->o->stop && *e->o->stop;
}

/* The directory tree. */
static int exportDir(Export *e, const char *dest, int64_t *pn, char *msg, size_t nmsg){
  int fPath = pagedb_field_index(e->db, "path");
  int fData = pagedb_field_index(e->db, "data");
  if( fPath < 0 || fData < 0 || pagedb_field_type(e->db, fPath) != PAGEDB_TEXT
      || pagedb_field_type(e->db, fData) != PAGEDB_BYTES ){
    xfer_msg(msg, nmsg, "a directory export needs the fields path (TEXT) and data (BYTES) of an "
           "ImageFolder import; export to a file ending in .tar instead");
    return PAGEDB_MISMATCH;
  }
  if( mkdir(dest, 0777) != 0 && errno != EEXIST ){
    xfer_msg(msg, nmsg, "cannot create the directory: %s", strerror(errno));
    return PAGEDB_CANTOPEN;
  }
  int root = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if( root < 0 ){
    xfer_msg(msg, nmsg, "cannot open the directory: %s", strerror(errno));
    return PAGEDB_CANTOPEN;
  }
  int rc = PAGEDB_OK;
  int64_t bytes = 0;
  char *zPath = 0;
  for(int64_t i = 0; i < e->nId && rc == PAGEDB_OK && !stopped(e); i++){
    const void *p;
    size_t n;
    int64_t id = e->aId[i];
    rc = pagedb_read(e->rd, id, fPath, &p, &n);
    if( rc == PAGEDB_NOTFOUND ){
      skipped(e, id, 0, "no path");
      rc = PAGEDB_OK;
      continue;
    }
    if( rc ){
      xfer_msg(msg, nmsg, "sample %lld: reading path: %s (%s)", (long long)id, pagedb_errname(rc),
             pagedb_reader_errmsg(e->rd));
      break;
    }
    const char *why = pathProblem(p, n);
    if( why ){
      xfer_msg(msg, nmsg, "sample %lld: path \"%.*s\" %s: refused (nothing is written outside "
             "%s)", (long long)id, (int)(n > 200 ? 200 : n), (const char *)p, why, dest);
      rc = PAGEDB_CORRUPT;
      break;
    }
    free(zPath);
    if( (zPath = strndup(p, n)) == 0 ){
      xfer_msg(msg, nmsg, "out of memory");
      rc = PAGEDB_NOMEM;
      break;
    }
    rc = pagedb_read(e->rd, id, fData, &p, &n);
    if( rc == PAGEDB_NOTFOUND ){
      skipped(e, id, zPath, "no data");
      rc = PAGEDB_OK;
      continue;
    }
    if( rc ){
      xfer_msg(msg, nmsg, "sample %lld (%s): reading data: %s (%s)", (long long)id, zPath,
             pagedb_errname(rc), pagedb_reader_errmsg(e->rd));
      break;
    }
    if( writeBeneath(root, zPath, p, n) != 0 ){
      xfer_msg(msg, nmsg, "sample %lld: writing %s/%s: %s", (long long)id, dest, zPath,
             errno == ELOOP ? "a symbolic link is in the way (never followed)" : strerror(errno));
      rc = PAGEDB_IOERR;
      break;
    }
    bytes += (int64_t)n;
    (*pn)++;
    progress(e, *pn, bytes);
  }
  free(zPath);
  close(root);
  return rc;
}

/* How much of field name Z is its members' extension: all of it, but for
** id_, page_ and off_ (any case), the fields an import makes of members
** .id, .page and .off (no field can be named as table sample's own
** columns), which go back to those names. */
static size_t memberExtLen(const char *z){
  static const char *const az[] = { "id_", "page_", "off_" };
  for(size_t i = 0; i < sizeof az / sizeof az[0]; i++){
    if( strcasecmp(z, az[i]) == 0 ) return strlen(z) - 1;
  }
  return strlen(z);
}

/*
** A REAL value as Python's str() writes a float (repr, since Python 3.1):
** the fewest significant digits that read back as the same double; fixed
** notation when the decimal exponent is in [-4, 16), with ".0" when there
** is no fraction ("2.0", "0.0001", "1000000000000000.0"), else d.ddde+XX
** with at least two exponent digits ("1e+16", "1e-05"); "inf", "-inf",
** "nan".
*/
static void realText(double v, char *buf, size_t cap){
  if( isnan(v) ){ snprintf(buf, cap, "nan"); return; }
  if( isinf(v) ){ snprintf(buf, cap, "%sinf", v < 0 ? "-" : ""); return; }
  char e[48];
  for(int prec = 0; prec <= 17; prec++){
    snprintf(e, sizeof e, "%.*e", prec, v);
    if( strtod(e, 0) == v ) break;
  }
  /* e is [-]D[.DDD]e(+|-)XX: its digits and decimal exponent. */
  const char *z = e;
  int neg = *z == '-';
  if( neg ) z++;
  char dig[24];
  int nd = 0;
  for(; *z && *z != 'e'; z++) if( *z >= '0' && *z <= '9' && nd < 20 ) dig[nd++] = *z;
  int x = *z == 'e' ? atoi(z + 1) : 0;
  while( nd > 1 && dig[nd - 1] == '0' ) nd--;
  dig[nd] = 0;
  size_t n = 0;
  #define PUT(c) do{ if( n + 1 < cap ) buf[n++] = (c); }while(0)
  if( neg ) PUT('-');
  if( x >= -4 && x < 16 ){
    if( x < 0 ){
      PUT('0'); PUT('.');
      for(int k = 0; k < -x - 1; k++) PUT('0');
      for(int k = 0; k < nd; k++) PUT(dig[k]);
    }else{
      for(int k = 0; k <= x; k++) PUT(k < nd ? dig[k] : '0');
      PUT('.');
      if( nd > x + 1 ) for(int k = x + 1; k < nd; k++) PUT(dig[k]);
      else PUT('0');
    }
    buf[n] = 0;
  }else{
    PUT(dig[0]);
    if( nd > 1 ){ PUT('.'); for(int k = 1; k < nd; k++) PUT(dig[k]); }
    buf[n] = 0;
    snprintf(buf + n, cap - n, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
  }
  #undef PUT
}

/* INT and REAL values as WebDataset's writers write them: Python's str()
** of the number, ASCII (an integer in decimal, no blanks, no newline). */
/* Tensor field F of sample ID as a .npy file (numpy.load reads it; a
** bfloat16 value as its bits, uint16): *OUT malloc'd, *N bytes.  A code:
** PAGEDB_NOTFOUND when the sample has no value. */
static int npyValue(Export *e, int64_t id, int f, char **out, size_t *n){
  const void *p;
  size_t nb;
  int ndim, dtype;
  int64_t shape[PAGEDB_TENSOR_MAX_DIMS];
  *out = 0;
  int rc = pagedb_read_tensor(e->rd, id, f, &p, &nb, &ndim, shape);
  if( rc == PAGEDB_OK ) rc = pagedb_field_tensor(e->db, f, &dtype, 0, 0);
  if( rc ) return rc;
  char h[NPY_HEADER_MAX];
  size_t hn = npy_header(dtype, ndim, shape, h);
  if( (*out = malloc(hn + nb + 1)) == 0 ) return PAGEDB_NOMEM;
  memcpy(*out, h, hn);
  if( nb ) memcpy(*out + hn, p, nb);
  *n = hn + nb;
  return PAGEDB_OK;
}

/* NumPy has no bfloat16: say, once per field, that its .npy members hold
** the bits as uint16 and how to have them back, rather than let a reader
** take them for integers unawares. */
static void bfloat16Note(Export *e){
  FILE *f = e->o->err;
  for(int i = 0; f && i < pagedb_field_count(e->db); i++){
    int dtype = 0;
    if( pagedb_field_tensor(e->db, i, &dtype, 0, 0) || dtype != PAGEDB_DT_BFLOAT16 ) continue;
    fprintf(f, "note: field \"%s\" is bfloat16, which NumPy has no dtype for: its .npy members hold the "
               "bits as uint16 (torch: torch.from_numpy(a.view(numpy.int16)).view(torch.bfloat16)); "
               ".import takes them back as bfloat16 with --field %s:tensor:bfloat16:SHAPE\n",
            pagedb_field_name(e->db, i), pagedb_field_name(e->db, i));
  }
}

static size_t numberText(int type, int64_t iv, double rv, char *buf, size_t cap){
  if( type == PAGEDB_INT ) snprintf(buf, cap, "%lld", (long long)iv);
  else realText(rv, buf, cap);
  return strlen(buf);
}

/* The tar file. */
static int exportTar(Export *e, const char *dest, int64_t *pn, char *msg, size_t nmsg){
  int fKey = pagedb_field_index(e->db, "__key__");
  if( fKey >= 0 && pagedb_field_type(e->db, fKey) != PAGEDB_TEXT ) fKey = -1;
  int nField = pagedb_field_count(e->db);
  TarWriter *tw = 0;
  int rc = tar_create(dest, &tw, msg, nmsg);
  if( rc ) return rc;
  bfloat16Note(e);
  int64_t bytes = 0;
  char *zName = 0;
  char *zKey = 0;
  for(int64_t i = 0; i < e->nId && rc == PAGEDB_OK && !stopped(e); i++){
    int64_t id = e->aId[i];
    const void *p;
    size_t n;
    free(zKey);
    zKey = 0;
    if( fKey >= 0 ){
      rc = pagedb_read(e->rd, id, fKey, &p, &n);
      if( rc == PAGEDB_OK ){
        if( memchr(p, 0, n) ){
          xfer_msg(msg, nmsg, "sample %lld: __key__ has a NUL byte: refused", (long long)id);
          rc = PAGEDB_CORRUPT;
          break;
        }
        zKey = strndup(p, n);
      }else if( rc != PAGEDB_NOTFOUND ){
        xfer_msg(msg, nmsg, "sample %lld: reading __key__: %s (%s)", (long long)id,
               pagedb_errname(rc), pagedb_reader_errmsg(e->rd));
        break;
      }
      rc = PAGEDB_OK;
    }
    if( zKey == 0 ){
      char z[32];
      snprintf(z, sizeof z, "%lld", (long long)id);
      zKey = strdup(z);
    }
    if( zKey == 0 ){ xfer_msg(msg, nmsg, "out of memory"); rc = PAGEDB_NOMEM; break; }
    for(int f = 0; f < nField && rc == PAGEDB_OK; f++){
      if( f == fKey ) continue;
      int type = pagedb_field_type(e->db, f);
      char *npy = 0;              /* a tensor's .npy file (malloc'd) */
      char zNum[40];
      if( type == PAGEDB_INT || type == PAGEDB_REAL ){
        int64_t iv = 0;
        double rv = 0;
        rc = type == PAGEDB_INT ? pagedb_read_int(e->rd, id, f, &iv) : pagedb_read_real(e->rd, id, f, &rv);
        n = numberText(type, iv, rv, zNum, sizeof zNum);
        p = zNum;
      }else if( type == PAGEDB_TENSOR ){
        rc = npyValue(e, id, f, &npy, &n);
        p = npy;
      }else{
        rc = pagedb_read(e->rd, id, f, &p, &n);
      }
      if( rc == PAGEDB_NOTFOUND ){ rc = PAGEDB_OK; continue; }
      if( rc ){
        free(npy);
        xfer_msg(msg, nmsg, "sample %lld: reading %s: %s (%s)", (long long)id,
               pagedb_field_name(e->db, f), pagedb_errname(rc), pagedb_reader_errmsg(e->rd));
        break;
      }
      const char *zField = pagedb_field_name(e->db, f);
      /* A tensor is a .npy member: KEY.FIELD when the field is named so
      ** (a .npy extension imported), else KEY.FIELD.npy. */
      const char *zLast = strrchr(zField, '.');
      const char *zNpy = type == PAGEDB_TENSOR && !(zLast && strcasecmp(zLast, ".npy") == 0) ? ".npy" : "";
      size_t k = strlen(zKey) + strlen(zField) + strlen(zNpy) + 2;
      free(zName);
      if( (zName = malloc(k)) == 0 ){ xfer_msg(msg, nmsg, "out of memory"); rc = PAGEDB_NOMEM; break; }
      snprintf(zName, k, "%s.%.*s%s", zKey, (int)memberExtLen(zField), zField, zNpy);
      /* The member name, not the key alone: a key "dir/" (member
      ** "dir/.hidden") is fine, "../up" is not. */
      const char *why = pathProblem(zName, strlen(zName));
      if( why ){
        xfer_msg(msg, nmsg, "sample %lld: member \"%.200s\" (from __key__) %s: refused "
               "(nothing is written outside the archive's root)", (long long)id, zName, why);
        rc = PAGEDB_CORRUPT;
        free(npy);
        break;
      }
      rc = tar_add(tw, zName, p, n, msg, nmsg);
      free(npy);
      npy = 0;
      bytes += (int64_t)n;
    }
    if( rc ) break;
    (*pn)++;
    progress(e, *pn, bytes);
  }
  free(zName);
  free(zKey);
  if( rc || stopped(e) ){
    tar_abort(tw);
    return rc;
  }
  return tar_finish(tw, msg, nmsg);
}

int xfer_export(pagedb *db, const char *dest, const XferOpts *o, int64_t *n, char *msg,
                size_t nmsg){
  Export e;
  char emsg[1024];
  memset(&e, 0, sizeof e);
  e.db = db;
  e.o = o;
  *n = 0;
  emsg[0] = 0;
  /* The condition is the user's SQL, run read-only on the catalog. */
  size_t k = 64 + (o->where ? strlen(o->where) : 0);
  char *zSql = malloc(k);
  int rc = PAGEDB_NOMEM;
  if( zSql ){
    if( o->where ) snprintf(zSql, k, "SELECT id FROM sample WHERE (%s) ORDER BY id", o->where);
    else snprintf(zSql, k, "SELECT id FROM sample ORDER BY id");
    rc = pagedb_sql(db, zSql, idRow, &e);
    free(zSql);
  }
  if( rc ){
    if( e.oom || rc == PAGEDB_NOMEM ) xfer_msg(emsg, sizeof emsg, "out of memory");
    else xfer_msg(emsg, sizeof emsg, "selecting the samples%s: %s (%s)",
                o->where ? " (--where)" : "", pagedb_errname(rc), pagedb_errmsg(db));
  }else{
    rc = pagedb_reader_open(db, PAGEDB_READ_COPY, &e.rd);
    if( rc ){
      xfer_msg(emsg, sizeof emsg, "pagedb_reader_open: %s (%s)", pagedb_errname(rc),
             pagedb_errmsg(db));
    }else{
      int isTar = endsWith(dest, ".tar") || endsWith(dest, ".tar.gz") || endsWith(dest, ".tgz");
      if( isTar ) rc = exportTar(&e, dest, n, emsg, sizeof emsg);
      else rc = exportDir(&e, dest, n, emsg, sizeof emsg);
      if( rc == PAGEDB_OK && stopped(&e) ){
        rc = PAGEDB_ERROR;
        xfer_msg(emsg, sizeof emsg, "interrupted after %lld samples%s", (long long)*n,
               isTar ? " (the partial file is removed)" : "");
      }
    }
  }
  pagedb_reader_close(e.rd);
  free(e.aId);
  if( rc && msg ) xfer_msg(msg, nmsg, "%s", emsg);
  return rc;
}

/* USAGE: .export DEST [--where SQL]
** Write the samples (those of table sample matching the SQL condition)
** as a WebDataset tar file (DEST ends in .tar) or an ImageFolder tree in
** directory DEST. */
int dotExport(ShellState *p, int nArg, char **azArg){
  const char *zDest = 0;
  XferOpts o;
  memset(&o, 0, sizeof o);
  o.threads = 1;
  o.bail = p->bail;
  o.err = stderr;
  for(int i = 1; i < nArg; i++){
    const char *z = azArg[i];
    if( z[0] == '-' && z[1] == '-' ) z++;
    if( strcmp(z, "-where") == 0 ){
      if( i + 1 >= nArg ){
        shellError(p, ".export --where: missing its SQL condition");
        return 1;
      }
      o.where = azArg[++i];
    }else if( z[0] == '-' ){
      shellError(p, ".export %s: unknown option (usage: .export DEST [--where SQL])", azArg[i]);
      return 1;
    }else if( zDest ){
      shellError(p, ".export %s: only one DEST (already %s)", azArg[i], zDest);
      return 1;
    }else{
      zDest = azArg[i];
    }
  }
  if( zDest == 0 ){
    shellError(p, ".export: missing DEST (usage: .export DEST [--where SQL])");
    return 1;
  }
  if( shellNeedDb(p, ".export") ) return 1;
  o.stop = &p->interrupted;
  o.progress = shellProgress;
  o.ctx = p;
  int64_t n = 0;
  char emsg[1024];
  int rc = xfer_export(p->db, zDest, &o, &n, emsg, sizeof emsg);
  shellProgressEnd(p);
  if( rc ){
    shellError(p, ".export %s: %s", zDest, emsg);
    return 1;
  }
  if( p->interactive ) fprintf(stderr, "exported %lld samples\n", (long long)n);
  return 0;
}
