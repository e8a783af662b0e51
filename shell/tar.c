/*
** tar.c -- a small tar reader and writer for .import and .export.
**
** Reading: 512-byte headers in the ustar layout (POSIX "ustar\0" with its
** 155-byte name prefix, and GNU "ustar  " without one), GNU long names
** (type 'L', the next member's name as data), pax extended headers (type
** 'x': the "path" and "size" records; 'g' global headers are skipped), and
** sizes in octal or GNU base-256.  Every header's checksum is verified.
** The file is read through zlib's gzread, which reads a file that is not
** gzip-compressed as it is ("transparent" mode); then skipping data is an
** lseek and a member's declared size is checked against the bytes the file
** still holds, so that a hostile size is refused before anything is
** allocated.  In a compressed file the remaining length is unknown: data is
** read in chunks that grow only as bytes actually arrive, so a huge
** declared size costs at most what the stream really holds.
**
** Writing: ustar headers, the name split into prefix and name when it
** fits, otherwise a pax 'x' header with a "path" record (and a "size"
** record for members of 8 GiB or more), which GNU tar and bsdtar read;
** gzip-compressed (zlib) when the name ends in .tar.gz or .tgz.
*/
#include "xfer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define TAR_BLOCK     512
#define TAR_MAX_META  (1 << 20)    /* bytes of a long-name or pax header we accept */
#define TAR_CHUNK     (1 << 20)    /* first read of a compressed member */

struct TarReader {
  gzFile gz;
  char *zPath;          /* for messages */
  int direct;           /* not compressed: seeks and sizes are the file's */
  int64_t fileSize;     /* bytes of the file (direct only) */
  int64_t pos;          /* uncompressed bytes consumed */
  int64_t left;         /* data bytes of the current member not yet consumed */
  int64_t pad;          /* padding after them */
  int haveData;         /* the current member's data is unread */
  char *zName;          /* the current member's name */
  char *zLong;          /* a name from an 'L' or pax header, for the next member */
  int64_t paxSize;      /* a size from a pax header for the next member, or -1 */
};

void xfer_msg(char *msg, size_t nmsg, const char *fmt, ...){
  va_list ap;
  if( nmsg == 0 ) return;
  va_start(ap, fmt);
  vsnprintf(msg, nmsg, fmt, ap);
  va_end(ap);
}

/* Read exactly N bytes.  0, or -1 at a premature end, or -2 for an error. */
static int readFull(TarReader *r, void *buf, size_t n){
  size_t got = 0;
  while( got < n ){
    unsigned chunk = (unsigned)(n - got > (1u << 30) ? (1u << 30) : n - got);
    errno = 0;
    int k = gzread(r->gz, (char *)buf + got, chunk);
    int zerr = Z_OK;
    if( k < 0 ) gzerror(r->gz, &zerr);
    if( k < 0 && zerr == Z_ERRNO && errno == EINTR ){
      /* A signal (Ctrl-C) interrupted read(): zlib consumed nothing. */
      gzclearerr(r->gz);
      continue;
    }
    if( k < 0 ) return -2;
    if( k == 0 ) return -1;
    got += (size_t)k;
    r->pos += k;
  }
  return 0;
}

/* Skip N bytes.  Results as readFull. */
static int skipBytes(TarReader *r, int64_t n){
  if( n <= 0 ) return 0;
  if( r->direct ){
    if( r->pos + n > r->fileSize ) return -1;
    if( gzseek(r->gz, (z_off_t)(r->pos + n), SEEK_SET) < 0 ) return -2;
    r->pos += n;
    return 0;
  }
  char buf[16384];
  while( n > 0 ){
    size_t k = n > (int64_t)sizeof buf ? sizeof buf : (size_t)n;
    int rc = readFull(r, buf, k);
    if( rc ) return rc;
    n -= (int64_t)k;
  }
  return 0;
}

static const char *gzMsg(TarReader *r){
  int e;
  const char *z = gzerror(r->gz, &e);
  if( e == Z_ERRNO ) return strerror(errno);
  return z && *z ? z : "read error";
}

int tar_open(const char *path, TarReader **pr, char *msg, size_t nmsg){
  TarReader *r = calloc(1, sizeof *r);
  *pr = 0;
  if( r == 0 || (r->zPath = strdup(path)) == 0 ){
    free(r);
    xfer_msg(msg, nmsg, "%s: out of memory", path);
    return PAGEDB_NOMEM;
  }
  struct stat st;
  r->gz = gzopen(path, "rb");
  if( r->gz == 0 || stat(path, &st) != 0 ){
    xfer_msg(msg, nmsg, "%s: cannot open: %s", path, strerror(errno ? errno : ENOMEM));
    tar_close(r);
    return PAGEDB_CANTOPEN;
  }
  if( !S_ISREG(st.st_mode) ){
    xfer_msg(msg, nmsg, "%s: not a regular file", path);
    tar_close(r);
    return PAGEDB_CANTOPEN;
  }
  gzbuffer(r->gz, 1 << 17);
  /* gzdirect is known only after the first read looked at the magic. */
  char c;
  if( gzread(r->gz, &c, 1) == 1 ) gzrewind(r->gz);
  r->direct = gzdirect(r->gz);
  r->fileSize = (int64_t)st.st_size;
  r->paxSize = -1;
  *pr = r;
  return PAGEDB_OK;
}

void tar_close(TarReader *r){
  if( r == 0 ) return;
  if( r->gz ) gzclose(r->gz);
  free(r->zPath);
  free(r->zName);
  free(r->zLong);
  free(r);
}

int64_t tar_offset(TarReader *r){ return r->pos; }

int tar_direct(TarReader *r){ return r->direct; }

int tar_read_at(TarReader *r, const char *zName, int64_t off, int64_t size, void **data,
                size_t *n, char *msg, size_t nmsg){
  *data = 0;
  if( !r->direct || off < 0 || size < 0 || size > r->fileSize || off > r->fileSize - size ){
    xfer_msg(msg, nmsg, "%s: member \"%s\": not where the first pass found it", r->zPath, zName);
    return PAGEDB_CORRUPT;
  }
  char *z = strdup(zName);
  if( z == 0 ){
    xfer_msg(msg, nmsg, "%s: out of memory", r->zPath);
    return PAGEDB_NOMEM;
  }
  free(r->zName);
  r->zName = z;
  if( gzseek(r->gz, (z_off_t)off, SEEK_SET) < 0 ){
    xfer_msg(msg, nmsg, "%s: member \"%s\": seek: %s", r->zPath, zName, gzMsg(r));
    return PAGEDB_IOERR;
  }
  r->pos = off;
  r->left = size;
  r->pad = 0;
  return tar_read(r, data, n, msg, nmsg);
}

/* An octal or base-256 number field.  -1 if malformed or negative. */
static int64_t tarNumber(const unsigned char *f, int n){
  if( f[0] & 0x80 ){
    if( f[0] & 0x40 ) return -1;            /* negative */
    uint64_t v = f[0] & 0x3f;
    for(int i = 1; i < n; i++){
      if( v >> 55 ) return -1;
      v = (v << 8) | f[i];
    }
    return v > (uint64_t)INT64_MAX ? -1 : (int64_t)v;
  }
  int i = 0;
  int64_t v = 0;
  while( i < n && f[i] == ' ' ) i++;
  for(; i < n && f[i] >= '0' && f[i] <= '7'; i++){
    if( v >> 60 ) return -1;
    v = v * 8 + (f[i] - '0');
  }
  for(; i < n; i++) if( f[i] != ' ' && f[i] != 0 ) return -1;
  return v;
}

/* A string field of at most N bytes, not necessarily NUL-terminated. */
static size_t fieldLen(const unsigned char *f, size_t n){
  size_t k = 0;
  while( k < n && f[k] ) k++;
  return k;
}

/* Read the current member's data (SIZE bytes) for a long name or pax
** header.  Returns a NUL-terminated malloc'd copy or NULL with MSG. */
static char *readMeta(TarReader *r, int64_t size, const char *zWhat, int *prc, char *msg, size_t nmsg){
  if( size > TAR_MAX_META ){
    xfer_msg(msg, nmsg, "%s: %s header at offset %lld: %lld bytes, more than the %d accepted",
           r->zPath, zWhat, (long long)(r->pos - TAR_BLOCK), (long long)size, TAR_MAX_META);
    *prc = PAGEDB_TOOBIG;
    return 0;
  }
  char *z = malloc((size_t)size + 1);
  if( z == 0 ){
    xfer_msg(msg, nmsg, "%s: out of memory", r->zPath);
    *prc = PAGEDB_NOMEM;
    return 0;
  }
  int rc = readFull(r, z, (size_t)size);
  if( rc == 0 ) rc = skipBytes(r, (TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK);
  if( rc ){
    xfer_msg(msg, nmsg, "%s: %s header at offset %lld: %s", r->zPath, zWhat,
           (long long)(r->pos - TAR_BLOCK), rc == -1 ? "the file ends inside it" : gzMsg(r));
    *prc = rc == -1 ? PAGEDB_CORRUPT : PAGEDB_IOERR;
    free(z);
    return 0;
  }
  z[size] = 0;
  return z;
}

/* Apply the records of a pax extended header Z (N bytes). */
static int paxParse(TarReader *r, char *z, int64_t n, char *msg, size_t nmsg){
  int64_t i = 0;
  while( i < n ){
    char *end;
    errno = 0;
    /* A record starts with its length's first digit: strtoll would skip
    ** white space (newlines too) and find a length past the record, whose
    ** key and value would then end before they begin. */
    long long len = strtoll(z + i, &end, 10);
    if( z[i] < '0' || z[i] > '9' || errno || *end != ' ' || len <= 0 || len > n - i || z[i + len - 1] != '\n' ){
      xfer_msg(msg, nmsg, "%s: pax header at offset %lld: malformed record", r->zPath,
             (long long)r->pos);
      return PAGEDB_CORRUPT;
    }
    char *key = end + 1;
    char *eq = memchr(key, '=', (size_t)(z + i + len - 1 - key));
    if( eq == 0 ){
      xfer_msg(msg, nmsg, "%s: pax header at offset %lld: a record without '='", r->zPath,
             (long long)r->pos);
      return PAGEDB_CORRUPT;
    }
    char *val = eq + 1;
    size_t nval = (size_t)(z + i + len - 1 - val);
    if( eq - key == 4 && memcmp(key, "path", 4) == 0 ){
      if( memchr(val, 0, nval) ){
        xfer_msg(msg, nmsg, "%s: pax header at offset %lld: a path with a NUL byte", r->zPath,
               (long long)r->pos);
        return PAGEDB_CORRUPT;
      }
      free(r->zLong);
      r->zLong = strndup(val, nval);
      if( r->zLong == 0 ){ xfer_msg(msg, nmsg, "%s: out of memory", r->zPath); return PAGEDB_NOMEM; }
    }else if( eq - key == 4 && memcmp(key, "size", 4) == 0 ){
      char *e2;
      errno = 0;
      long long v = strtoll(val, &e2, 10);
      if( errno || e2 != val + nval || v < 0 ){
        xfer_msg(msg, nmsg, "%s: pax header at offset %lld: bad size \"%.*s\"", r->zPath,
               (long long)r->pos, (int)(nval > 40 ? 40 : nval), val);
        return PAGEDB_CORRUPT;
      }
      r->paxSize = v;
    }
    i += len;
  }
  return PAGEDB_OK;
}

int tar_next(TarReader *r, TarMember *m, char *msg, size_t nmsg){
  unsigned char h[TAR_BLOCK];
  int rc;
  if( r->left > 0 || r->pad > 0 ){
    rc = skipBytes(r, r->left + r->pad);
    if( rc ){
      xfer_msg(msg, nmsg, "%s: member \"%s\": %s", r->zPath, r->zName ? r->zName : "?",
             rc == -1 ? "the file ends inside its data" : gzMsg(r));
      return rc == -1 ? PAGEDB_CORRUPT : PAGEDB_IOERR;
    }
    r->left = r->pad = 0;
  }
  for(;;){
    int64_t off = r->pos;
    rc = readFull(r, h, TAR_BLOCK);
    if( rc == -1 && r->pos == off && r->zLong == 0 && r->paxSize < 0 ){
      return PAGEDB_NOTFOUND;      /* the end, without end-of-archive blocks */
    }
    if( rc ){
      xfer_msg(msg, nmsg, "%s: header at offset %lld: %s", r->zPath, (long long)off,
             rc == -1 ? "the file ends inside it" : gzMsg(r));
      return rc == -1 ? PAGEDB_CORRUPT : PAGEDB_IOERR;
    }
    int zero = 1;
    for(int i = 0; i < TAR_BLOCK && zero; i++) zero = h[i] == 0;
    if( zero ) return PAGEDB_NOTFOUND;
    int64_t want = tarNumber(h + 148, 8);
    unsigned sumU = 0;
    int sumS = 0;
    for(int i = 0; i < TAR_BLOCK; i++){
      unsigned char c = (i >= 148 && i < 156) ? ' ' : h[i];
      sumU += c;
      sumS += (signed char)c;
    }
    if( want < 0 || (want != sumU && want != sumS) ){
      xfer_msg(msg, nmsg, "%s: header at offset %lld: bad checksum (not a tar file, or damaged)",
             r->zPath, (long long)off);
      return PAGEDB_CORRUPT;
    }
    char type = (char)h[156];
    int64_t size = tarNumber(h + 124, 12);
    if( size < 0 ){
      xfer_msg(msg, nmsg, "%s: header at offset %lld: bad size field", r->zPath, (long long)off);
      return PAGEDB_CORRUPT;
    }
    if( type == 'x' || type == 'g' || type == 'L' || type == 'K' ){
      const char *zWhat = type == 'L' || type == 'K' ? "long name" : "pax";
      char *z = readMeta(r, size, zWhat, &rc, msg, nmsg);
      if( z == 0 ) return rc;
      if( type == 'L' ){
        size_t k = strlen(z);
        if( k == 0 ){ free(z); z = 0; }
        free(r->zLong);
        r->zLong = z;
      }else if( type == 'x' ){
        rc = paxParse(r, z, size, msg, nmsg);
        free(z);
        if( rc ) return rc;
      }else{
        free(z);       /* 'g' global headers and 'K' link names: nothing we use */
      }
      continue;
    }
    if( r->paxSize >= 0 ){
      size = r->paxSize;
      r->paxSize = -1;
    }
    free(r->zName);
    r->zName = 0;
    if( r->zLong ){
      r->zName = r->zLong;
      r->zLong = 0;
    }else{
      size_t nn = fieldLen(h, 100);
      size_t np = 0;
      int posix = memcmp(h + 257, "ustar\0", 6) == 0;
      if( posix ) np = fieldLen(h + 345, 155);
      r->zName = malloc(np + nn + 2);
      if( r->zName ){
        char *z = r->zName;
        if( np ){ memcpy(z, h + 345, np); z += np; *z++ = '/'; }
        memcpy(z, h, nn);
        z[nn] = 0;
      }
    }
    if( r->zName == 0 ){
      xfer_msg(msg, nmsg, "%s: out of memory", r->zPath);
      return PAGEDB_NOMEM;
    }
    int kind;
    switch( type ){
      case '0': case '\0': case '7': kind = TAR_FILE; break;
      case '5': kind = TAR_DIR; break;
      case '1': case '2': kind = TAR_LINK; break;
      default: kind = TAR_OTHER; break;
    }
    /* Hard links, symlinks, devices and fifos declare no data (a hard
    ** link's size field may repeat its target's: GNU tar writes 0). */
    if( kind == TAR_LINK || type == '3' || type == '4' || type == '6' || kind == TAR_DIR ) size = 0;
    if( r->direct && size > r->fileSize - r->pos ){
      xfer_msg(msg, nmsg, "%s: member \"%s\": declared size %lld is larger than the %lld bytes "
             "left in the file", r->zPath, r->zName, (long long)size,
             (long long)(r->fileSize - r->pos));
      return PAGEDB_CORRUPT;
    }
    r->left = size;
    r->pad = (TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK;
    m->name = r->zName;
    m->kind = kind;
    m->typeflag = type ? type : '0';
    m->size = size;
    return PAGEDB_OK;
  }
}

int tar_read(TarReader *r, void **data, size_t *pn, char *msg, size_t nmsg){
  int64_t size = r->left;
  size_t cap = (size_t)(r->direct || size < TAR_CHUNK ? size : TAR_CHUNK);
  if( size > (int64_t)PAGEDB_MAX_SAMPLE ){
    xfer_msg(msg, nmsg, "%s: member \"%s\": %lld bytes, more than a sample may hold", r->zPath,
           r->zName, (long long)size);
    return PAGEDB_TOOBIG;
  }
  char *buf = malloc(cap ? cap : 1);
  size_t have = 0;
  *data = 0;
  if( buf == 0 ){
    xfer_msg(msg, nmsg, "%s: member \"%s\": out of memory for %lld bytes", r->zPath, r->zName,
           (long long)size);
    return PAGEDB_NOMEM;
  }
  while( (int64_t)have < size ){
    if( have == cap ){
      size_t c2 = cap * 2;
      if( (int64_t)c2 > size ) c2 = (size_t)size;
      char *b2 = realloc(buf, c2);
      if( b2 == 0 ){
        free(buf);
        xfer_msg(msg, nmsg, "%s: member \"%s\": out of memory for %lld bytes", r->zPath, r->zName,
               (long long)size);
        return PAGEDB_NOMEM;
      }
      buf = b2;
      cap = c2;
    }
    int rc = readFull(r, buf + have, cap - have);
    if( rc ){
      free(buf);
      xfer_msg(msg, nmsg, "%s: member \"%s\": %s", r->zPath, r->zName,
             rc == -1 ? "the file ends inside its data (declared size larger than the file)"
                      : gzMsg(r));
      return rc == -1 ? PAGEDB_CORRUPT : PAGEDB_IOERR;
    }
    have = cap;
  }
  r->left = 0;
  *data = buf;
  *pn = (size_t)size;
  return PAGEDB_OK;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

struct TarWriter {
  FILE *f;              /* a plain tar, or */
  gzFile gz;            /* a gzip-compressed one (.tar.gz, .tgz) */
  int fd;               /* gz: the file, kept open to fsync it after gzclose */
  char *zPath;
  time_t mtime;
};

/* Write N bytes.  0, or -1 with errno. */
static int twWrite(TarWriter *w, const void *p, size_t n){
  if( w->f ) return fwrite(p, 1, n, w->f) == n ? 0 : -1;
  while( n > 0 ){
    unsigned k = (unsigned)(n > (1u << 30) ? (1u << 30) : n);
    if( gzwrite(w->gz, p, k) != (int)k ){
      int e;
      gzerror(w->gz, &e);
      if( e != Z_ERRNO ) errno = EIO;
      return -1;
    }
    p = (const char *)p + k;
    n -= k;
  }
  return 0;
}

static int hasSuffix(const char *z, const char *suffix){
  size_t n = strlen(z), k = strlen(suffix);
  return n >= k && strcmp(z + n - k, suffix) == 0;
}

int tar_create(const char *path, TarWriter **pw, char *msg, size_t nmsg){
  TarWriter *w = calloc(1, sizeof *w);
  *pw = 0;
  if( w == 0 || (w->zPath = strdup(path)) == 0 ){
    free(w);
    xfer_msg(msg, nmsg, "%s: out of memory", path);
    return PAGEDB_NOMEM;
  }
  w->fd = -1;
  if( hasSuffix(path, ".tar.gz") || hasSuffix(path, ".tgz") ){
    int fd2 = -1;
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if( w->fd >= 0 ) fd2 = dup(w->fd);
    if( fd2 >= 0 ) w->gz = gzdopen(fd2, "wb");
    if( w->gz == 0 ){
      xfer_msg(msg, nmsg, "%s: cannot create: %s", path, strerror(errno ? errno : ENOMEM));
      if( fd2 >= 0 ) close(fd2);
      if( w->fd >= 0 ){ close(w->fd); unlink(path); }
      free(w->zPath);
      free(w);
      return PAGEDB_CANTOPEN;
    }
    gzbuffer(w->gz, 1 << 17);
  }else{
    w->f = fopen(path, "wb");
    if( w->f == 0 ){
      xfer_msg(msg, nmsg, "%s: cannot create: %s", path, strerror(errno));
      free(w->zPath);
      free(w);
      return PAGEDB_CANTOPEN;
    }
  }
  w->mtime = time(0);
  *pw = w;
  return PAGEDB_OK;
}

/* Write a header block for NAME (at most 100 bytes after PREFIX) of TYPE
** and SIZE (which must fit in 11 octal digits). */
static int tarHeader(TarWriter *w, const char *prefix, size_t np, const char *name, char type,
                     int64_t size){
  unsigned char h[TAR_BLOCK];
  memset(h, 0, sizeof h);
  memcpy(h, name, strlen(name));
  memcpy(h + 100, "0000644", 7);
  memcpy(h + 108, "0000000", 7);
  memcpy(h + 116, "0000000", 7);
  snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
  snprintf((char *)h + 136, 12, "%011llo", (unsigned long long)w->mtime & 077777777777ull);
  h[156] = (unsigned char)type;
  memcpy(h + 257, "ustar\0" "00", 8);
  if( np ) memcpy(h + 345, prefix, np);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for(int i = 0; i < TAR_BLOCK; i++) sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
  h[155] = ' ';
  return twWrite(w, h, TAR_BLOCK);
}

/* Write N bytes of DATA and the padding to a block boundary. */
static int tarData(TarWriter *w, const void *data, size_t n){
  static const char zeros[TAR_BLOCK];
  if( n && twWrite(w, data, n) ) return -1;
  size_t pad = (TAR_BLOCK - n % TAR_BLOCK) % TAR_BLOCK;
  return pad ? twWrite(w, zeros, pad) : 0;
}

/* Append the pax record "LEN KEY=VALUE\n" to *PZ. */
static int paxRecord(char **pz, size_t *pn, const char *key, const char *val){
  size_t body = strlen(key) + strlen(val) + 3;     /* ' ', '=', '\n' */
  size_t len = body + 1;
  for(;;){
    char d[24];
    size_t k = (size_t)snprintf(d, sizeof d, "%zu", len);
    if( body + k == len ) break;
    len = body + k;
  }
  char *z = realloc(*pz, *pn + len + 1);
  if( z == 0 ) return -1;
  snprintf(z + *pn, len + 1, "%zu %s=%s\n", len, key, val);
  *pz = z;
  *pn += len;
  return 0;
}

int tar_add(TarWriter *w, const char *name, const void *data, size_t n, char *msg, size_t nmsg){
  size_t len = strlen(name);
  const char *prefix = 0;
  size_t np = 0;
  const char *base = name;
  int pax = 0;
  if( len > 100 ){
    /* The ustar split: PREFIX '/' NAME with at most 155 and 100 bytes. */
    pax = 1;
    for(size_t i = 1; i < len && i <= 155; i++){
      if( name[i] == '/' && len - i - 1 <= 100 && len - i - 1 > 0 ){
        prefix = name;
        np = i;
        base = name + i + 1;
        pax = 0;
        break;
      }
    }
  }
  int big = (uint64_t)n > 077777777777ull;
  if( pax || big ){
    char *z = 0;
    size_t nz = 0;
    char zSize[24];
    snprintf(zSize, sizeof zSize, "%zu", n);
    if( (pax && paxRecord(&z, &nz, "path", name)) || (big && paxRecord(&z, &nz, "size", zSize)) ){
      free(z);
      xfer_msg(msg, nmsg, "%s: out of memory", w->zPath);
      return PAGEDB_NOMEM;
    }
    int bad = tarHeader(w, 0, 0, "././@PaxHeader", 'x', (int64_t)nz) || tarData(w, z, nz);
    free(z);
    if( bad ) goto write_error;
    prefix = 0;
    np = 0;
    base = name;
  }
  char zShort[101];
  if( strlen(base) > 100 ){
    memcpy(zShort, base, 100);
    zShort[100] = 0;
    base = zShort;
  }
  /* tarHeader copies at most 100 bytes: zShort has them without the NUL. */
  if( tarHeader(w, prefix, np, base, '0', big ? 0 : (int64_t)n) || tarData(w, data, n) ){
    goto write_error;
  }
  return PAGEDB_OK;
write_error:
  xfer_msg(msg, nmsg, "%s: writing member \"%s\": %s", w->zPath, name, strerror(errno));
  return PAGEDB_IOERR;
}

int tar_finish(TarWriter *w, char *msg, size_t nmsg){
  static const char zeros[2 * TAR_BLOCK];
  int rc = PAGEDB_OK;
  if( twWrite(w, zeros, sizeof zeros) ){
    xfer_msg(msg, nmsg, "%s: writing the end of the archive: %s", w->zPath, strerror(errno));
    rc = PAGEDB_IOERR;
  }
  if( w->f ){
    if( rc == PAGEDB_OK && (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0) ){
      xfer_msg(msg, nmsg, "%s: writing: %s", w->zPath, strerror(errno));
      rc = PAGEDB_IOERR;
    }
    if( fclose(w->f) != 0 && rc == PAGEDB_OK ){
      xfer_msg(msg, nmsg, "%s: closing: %s", w->zPath, strerror(errno));
      rc = PAGEDB_IOERR;
    }
  }else{
    /* gzclose writes the end of the gzip stream; then the file is synced. */
    if( gzclose(w->gz) != Z_OK && rc == PAGEDB_OK ){
      xfer_msg(msg, nmsg, "%s: finishing the gzip stream: %s", w->zPath, strerror(errno));
      rc = PAGEDB_IOERR;
    }
    if( rc == PAGEDB_OK && fsync(w->fd) != 0 ){
      xfer_msg(msg, nmsg, "%s: fsync: %s", w->zPath, strerror(errno));
      rc = PAGEDB_IOERR;
    }
    close(w->fd);
  }
  if( rc ) unlink(w->zPath);
  free(w->zPath);
  free(w);
  return rc;
}

void tar_abort(TarWriter *w){
  if( w == 0 ) return;
  if( w->f ) fclose(w->f);
  if( w->gz ) gzclose(w->gz);
  if( w->fd >= 0 ) close(w->fd);
  unlink(w->zPath);
  free(w->zPath);
  free(w);
}
