/*
** cmd_data.c -- the pagedb shell's commands on one dataset's schema,
** samples and space: .create .info .fields .schema .stats .pages .count
** .get .put .delete.
**
** SQL these commands build never holds a user's text, except .delete's
** WHERE-SQL, which is the user's condition by design: it must be one
** expression (no ';' outside quotes), and runs read-only like any SQL
** typed at the prompt.  Numbers a user gives are parsed first and printed
** back with %lld.
*/
#include "shell.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEX_PREVIEW 16        /* bytes of a BYTES value shown by .get */

static int tooMany(ShellState *p, int nArg, char **azArg, int max){
  if( nArg <= max ) return 0;
  shellError(p, ".%s: unexpected argument \"%s\"", azArg[0], azArg[max]);
  return 1;
}

/* ------------------------------------------------------------------ */
/* .create                                                             */
/* ------------------------------------------------------------------ */

/* Parse NAME:TYPE[:CODEC[:LEVEL]] into its parts (Z is modified). */
static int parseFieldSpec(ShellState *p, const char *zCmd, char *z, const char **pzName, int *pType,
                          int *pCodec){
  char *zSpec = strdup(z);
  char *azPart[4] = { 0, 0, 0, 0 };
  int n = 0;
  if( zSpec == 0 ){ shellError(p, "%s: out of memory", zCmd); return 1; }
  for(char *s = z; n < 4; n++){
    azPart[n] = s;
    char *c = strchr(s, ':');
    if( c == 0 ){ n++; break; }
    *c = 0;
    s = c + 1;
  }
  int rc = 1;
  if( azPart[0][0] == 0 || azPart[1] == 0 ){
    shellError(p, "%s --field %s: expected NAME:TYPE[:CODEC[:LEVEL]]", zCmd, zSpec);
    goto done;
  }
  static const char *azType[] = { 0, "bytes", "text", "int", "real" };
  *pType = 0;
  for(int t = PAGEDB_BYTES; t <= PAGEDB_REAL; t++){
    if( strcasecmp(azPart[1], azType[t]) == 0 ) *pType = t;
  }
  if( *pType == 0 ){
    shellError(p, "%s --field %s: unknown type \"%s\" (bytes, text, int or real)", zCmd, zSpec, azPart[1]);
    goto done;
  }
  *pCodec = PAGEDB_CODEC_NONE;
  if( azPart[2] ){
    char zc[64];
    snprintf(zc, sizeof zc, "%s%s%s", azPart[2], azPart[3] ? ":" : "", azPart[3] ? azPart[3] : "");
    for(char *q = zc; *q && *q != ':'; q++) *q = (char)tolower((unsigned char)*q);
    if( pagedb_codec_parse(zc, pCodec) != PAGEDB_OK ){
      shellError(p, "%s --field %s: unknown codec or level \"%s\" (none, lz4[:1..65537], lz4hc[:1..12],"
                 " zstd[:-131072..22] or zstd-dict[:-131072..22])", zCmd, zSpec, zc);
      goto done;
    }
    if( *pCodec != PAGEDB_CODEC_NONE && *pType != PAGEDB_BYTES && *pType != PAGEDB_TEXT ){
      shellError(p, "%s --field %s: a codec needs a bytes or text field", zCmd, zSpec);
      goto done;
    }
  }
  *pzName = azPart[0];
  rc = 0;
done:
  free(zSpec);
  return rc;
}

/* NAME:tensor:DTYPE:SHAPE[:CODEC[:LEVEL]] (Z is modified): SHAPE is sizes
** and '*' (variable) separated by ','.  The rest as parseFieldSpec. */
static int parseTensorSpec(ShellState *p, const char *zCmd, char *z, const char **pzName, int *pType,
                           int *pCodec, XferTensor *t){
  char *zDtype = strchr(z, ':') + 1 + strlen("tensor:");   /* the caller saw NAME:tensor: */
  char *zShape = strchr(zDtype, ':');
  if( zShape == 0 ){
    shellError(p, "%s --field %s: expected NAME:tensor:DTYPE:SHAPE[:CODEC[:LEVEL]], e.g. emb:tensor:float32:768",
               zCmd, z);
    return 1;
  }
  *zShape++ = 0;
  char *zRest = strchr(zShape, ':');
  if( zRest ) *zRest++ = 0;
  memset(t, 0, sizeof *t);
  t->dtype = pagedb_dtype_from_name(zDtype);
  if( t->dtype == 0 ){
    shellError(p, "%s --field: unknown dtype \"%s\" (bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64,"
               " float16, bfloat16, float32 or float64)", zCmd, zDtype);
    return 1;
  }
  for(char *d = zShape; d && *d; ){
    char *c = strchr(d, ',');
    if( c ) *c = 0;
    int64_t v;
    if( t->ndim == PAGEDB_TENSOR_MAX_DIMS ){
      shellError(p, "%s --field: a tensor has at most %d dimensions", zCmd, PAGEDB_TENSOR_MAX_DIMS);
      return 1;
    }
    if( strcmp(d, "*") == 0 ) t->dims[t->ndim++] = PAGEDB_DIM_VAR;
    else if( shellInt(d, &v) == 0 && v >= 1 && v <= INT32_MAX ) t->dims[t->ndim++] = v;
    else{
      shellError(p, "%s --field: dimension \"%s\" is not a size from 1 to 2^31-1 or * (variable)", zCmd, d);
      return 1;
    }
    d = c ? c + 1 : 0;
  }
  if( t->ndim == 0 ){
    shellError(p, "%s --field: a tensor needs a shape, e.g. 768, 3,224,224 or *,80", zCmd);
    return 1;
  }
  /* The codec as for a BYTES field. */
  char zBytes[300];
  snprintf(zBytes, sizeof zBytes, "%.*s:bytes%s%s", (int)(strchr(z, ':') - z), z, zRest ? ":" : "",
           zRest ? zRest : "");
  int rc = parseFieldSpec(p, zCmd, zBytes, pzName, pType, pCodec);
  *strchr(z, ':') = 0;              /* Z's name part is the name (zBytes is gone on return) */
  *pzName = z;
  *pType = PAGEDB_TENSOR;
  return rc;
}

int shellFieldSpec(ShellState *p, const char *zCmd, char *z, const char **pzName, int *pType,
                   int *pCodec, XferTensor *pTensor){
  const char *c = strchr(z, ':');
  if( pTensor && c && strncasecmp(c + 1, "tensor:", 7) == 0 )
    return parseTensorSpec(p, zCmd, z, pzName, pType, pCodec, pTensor);
  return parseFieldSpec(p, zCmd, z, pzName, pType, pCodec);
}

/* Split a trailing @ALIGN off field spec Z (a field name has no '@'):
** *PALIGN its alignment, PAGEDB_ALIGN_DEFAULT without one. */
static int parseFieldAlign(ShellState *p, const char *zCmd, char *z, int *pAlign){
  char *zAt = strrchr(z, '@');
  int64_t a;
  *pAlign = PAGEDB_ALIGN_DEFAULT;
  if( zAt == 0 ) return 0;
  if( shellInt(zAt + 1, &a) || a < 1 || a > PAGEDB_MAX_ALIGN || (a & (a - 1)) ){
    shellError(p, "%s --field %s: alignment \"%s\" is not a power of two from 1 to %d", zCmd, z, zAt + 1,
               PAGEDB_MAX_ALIGN);
    return 1;
  }
  *zAt = 0;
  *pAlign = (int)a;
  return 0;
}

/* USAGE: .create FILE [--field NAME:TYPE[:CODEC[:LEVEL]][@ALIGN] ...] [--page-size N]
** Create the dataset FILE (which must not exist) with these fields, in
** this order, and open it in place of the current one.  @ALIGN: the
** field's values start at multiples of ALIGN (pagedb_field_add_aligned).
** Without fields it
** is an empty dataset for .import, which adds the fields of what it reads.
** N may end in K, M or G.  If anything fails, nothing is left behind. */
int dotCreate(ShellState *p, int nArg, char **azArg){
  const char *zFile = 0;
  const char *azName[PAGEDB_MAX_FIELDS];
  int aType[PAGEDB_MAX_FIELDS], aCodec[PAGEDB_MAX_FIELDS], aAlign[PAGEDB_MAX_FIELDS];
  XferTensor aTensor[PAGEDB_MAX_FIELDS];
  int nField = 0;
  int64_t pageSize = 0;
  for(int i = 1; i < nArg; i++){
    const char *z = azArg[i];
    if( strcmp(z, "--field") == 0 || strcmp(z, "-field") == 0 ){
      if( i + 1 >= nArg ){ shellError(p, ".create %s: missing NAME:TYPE", z); return 1; }
      if( nField >= PAGEDB_MAX_FIELDS ){
        shellError(p, ".create --field %s: more than %d fields", azArg[i + 1], PAGEDB_MAX_FIELDS);
        return 1;
      }
      if( parseFieldAlign(p, ".create", azArg[++i], &aAlign[nField])
       || shellFieldSpec(p, ".create", azArg[i], &azName[nField], &aType[nField], &aCodec[nField],
                         &aTensor[nField]) ){
        return 1;
      }
      nField++;
    }else if( strcmp(z, "--page-size") == 0 || strcmp(z, "-page-size") == 0 ){
      if( i + 1 >= nArg ){ shellError(p, ".create %s: missing N", z); return 1; }
      i++;
      if( shellSize(azArg[i], &pageSize) || pageSize < PAGEDB_MIN_PAGE_SIZE
       || pageSize > PAGEDB_MAX_PAGE_SIZE || (pageSize & (pageSize - 1)) ){
        shellError(p, ".create --page-size %s: not a power of two from 64K to 1G", azArg[i]);
        return 1;
      }
    }else if( z[0] == '-' ){
      shellError(p, ".create %s: unknown option", z);
      return 1;
    }else if( zFile ){
      shellError(p, ".create %s: only one FILE (already %s)", z, zFile);
      return 1;
    }else{
      zFile = z;
    }
  }
  /* Without FILE: the dataset the shell was started on, not created yet. */
  char zPending[4096];
  if( zFile == 0 && p->zPending && strlen(p->zPending) < sizeof zPending ){
    zFile = strcpy(zPending, p->zPending);
  }
  if( zFile == 0 ){ shellError(p, ".create: missing FILE"); return 1; }
  char zCat[4200];
  snprintf(zCat, sizeof zCat, "%s-catalog", zFile);
  if( access(zFile, F_OK) == 0 || access(zCat, F_OK) == 0 ){
    shellError(p, ".create %s: %s exists already (use .open)", zFile,
               access(zFile, F_OK) == 0 ? zFile : zCat);
    return 1;
  }
  shellCloseDb(p);
  pagedb *db = 0;
  const char *zWhat = "pagedb_open";
  const char *zArg = zFile;
  int rc = pagedb_open(zFile, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, p->zVfs);
  if( rc == PAGEDB_OK && pageSize ){
    zWhat = "--page-size";
    zArg = 0;
    rc = pagedb_set_page_size(db, (size_t)pageSize);
  }
  for(int f = 0; rc == PAGEDB_OK && f < nField; f++){
    zWhat = "--field";
    zArg = azName[f];
    rc = aType[f] == PAGEDB_TENSOR
       ? pagedb_field_add_tensor(db, azName[f], aTensor[f].dtype, aTensor[f].ndim, aTensor[f].dims, aCodec[f], aAlign[f])
       : pagedb_field_add_aligned(db, azName[f], aType[f], aCodec[f], aAlign[f]);
  }
  if( rc ){
    shellError(p, ".create %s: %s%s%s: %s (%s)", zFile, zWhat, zArg ? " " : "", zArg ? zArg : "",
               pagedb_errname(rc), db ? pagedb_errmsg(db) : "out of memory");
    pagedb_close(db);
    unlink(zFile);
    unlink(zCat);
    return 1;
  }
  p->db = db;
  p->dbReadonly = 0;
  pagedb_vfs *v = pagedb_vfs_find(p->zVfs);
  p->zDbVfs = v ? v->zName : "?";
  return 0;
}

/* ------------------------------------------------------------------ */
/* .info .fields .schema .count                                        */
/* ------------------------------------------------------------------ */

static uint64_t get64(const unsigned char *a){
  uint64_t v = 0;
  for(int i = 7; i >= 0; i--) v = v << 8 | a[i];
  return v;
}

static void printFileSize(ShellState *p, const char *zLabel, const char *zPath){
  struct stat st;
  if( stat(zPath, &st) == 0 ){
    fprintf(p->out, "%-16s %s (%lld bytes)\n", zLabel, zPath, (long long)st.st_size);
  }else{
    fprintf(p->out, "%-16s %s (%s)\n", zLabel, zPath, strerror(errno));
  }
}

/* USAGE: .info
** The data file's header (format, page size, offset of page 0, uuid,
** creation time), the files and their sizes, fields, samples, pages, the
** VFS and whether the dataset is open read-only. */
int dotInfo(ShellState *p, int nArg, char **azArg){
  if( tooMany(p, nArg, azArg, 1) || shellNeedDb(p, ".info") ) return 1;
  pagedb *db = p->db;
  unsigned char h[128];
  int fd = open(pagedb_path(db), O_RDONLY);
  ssize_t n = fd >= 0 ? pread(fd, h, sizeof h, 0) : -1;
  int err = errno;
  if( fd >= 0 ) close(fd);
  printFileSize(p, "data file:", pagedb_path(db));
  printFileSize(p, "catalog:", pagedb_catalog_path(db));
  if( n == (ssize_t)sizeof h ){
    uint32_t version = (uint32_t)h[16] | (uint32_t)h[17] << 8 | (uint32_t)h[18] << 16 | (uint32_t)h[19] << 24;
    time_t ctime = (time_t)get64(h + 48);
    char zTime[64] = "?";
    struct tm tm;
    if( gmtime_r(&ctime, &tm) ) strftime(zTime, sizeof zTime, "%Y-%m-%d %H:%M:%S UTC", &tm);
    fprintf(p->out, "%-16s %u\n", "format:", version);
    fprintf(p->out, "%-16s ", "uuid:");
    for(int i = 0; i < 16; i++) fprintf(p->out, "%02x", h[32 + i]);
    fprintf(p->out, "\n%-16s %s\n", "created:", zTime);
    fprintf(p->out, "%-16s %llu\n", "data offset:", (unsigned long long)get64(h + 56));
  }else{
    fprintf(p->out, "%-16s unreadable (%s)\n", "header:", n < 0 ? strerror(err) : "short file");
  }
  fprintf(p->out, "%-16s %zu\n", "page size:", pagedb_page_size(db));
  int nField = pagedb_field_count(db);
  fprintf(p->out, "%-16s %d", "fields:", nField);
  for(int i = 0; i < nField; i++){
    char zType[160];
    fprintf(p->out, "%s%s %s", i ? ", " : " (", pagedb_field_name(db, i), shellFieldType(db, i, zType, sizeof zType));
  }
  fprintf(p->out, "%s\n", nField ? ")" : "");
  /* G: every stored value starts at a multiple of it (pagedb.h,
  ** pagedb_field_add_aligned); 1 when no field stores bytes. */
  int g = 1;
  for(int i = 0; i < nField; i++){
    int t = pagedb_field_type(db, i);
    if( (t == PAGEDB_BYTES || t == PAGEDB_TEXT || t == PAGEDB_TENSOR) && pagedb_field_align(db, i) > g ){
      g = pagedb_field_align(db, i);
    }
  }
  fprintf(p->out, "%-16s %d bytes\n", "alignment:", g);
  fprintf(p->out, "%-16s %lld\n", "samples:", (long long)pagedb_count(db));
  fprintf(p->out, "%-16s %lld\n", "pages:", (long long)pagedb_page_count(db));
  fprintf(p->out, "%-16s %s\n", "vfs:", p->zDbVfs ? p->zDbVfs : "?");
  fprintf(p->out, "%-16s %s\n", "open:", p->dbReadonly ? "read-only" : "read-write");
  fprintf(p->out, "%-16s %s\n", "library:", pagedb_libversion());
  return 0;
}

/* USAGE: .fields
** The fields, in the current mode: field (number), name, type, codec. */
int dotFields(ShellState *p, int nArg, char **azArg){
  if( tooMany(p, nArg, azArg, 1) || shellNeedDb(p, ".fields") ) return 1;
  char *azName[] = { "field", "name", "type", "codec" };
  ShellResult r;
  resultInit(&r, 4, azName);
  resultSetNum(&r, 0, 1);
  for(int i = 1; i < 4; i++) resultSetNum(&r, i, 0);
  for(int i = 0; i < pagedb_field_count(p->db); i++){
    char zCodec[32];
    shellCodecName(pagedb_field_codec(p->db, i), zCodec, sizeof zCodec);
    char zType[160];
    resultAddf(&r, "%d\t%s\t%s\t%s", i, pagedb_field_name(p->db, i), shellFieldType(p->db, i, zType, sizeof zType),
               zCodec);
  }
  resultPrint(p, &r, p->headers);
  resultFree(&r);
  return 0;
}

/* USAGE: .tokens FIELD [BLOCK_SIZE]
** The token stream of token field FIELD (pagedb_tokens_open): documents,
** tokens, the blocks of BLOCK_SIZE (default 2048) + 1 tokens it holds,
** and whether its token map is stored in the index file ("stored": the
** open is O(1)) or was built in memory at the open ("built"). */
int dotTokens(ShellState *p, int nArg, char **azArg){
  if( nArg < 2 ){ shellError(p, ".tokens: missing FIELD (usage: .tokens FIELD [BLOCK_SIZE])"); return 1; }
  if( tooMany(p, nArg, azArg, 3) || shellNeedDb(p, ".tokens") ) return 1;
  int f = pagedb_field_index(p->db, azArg[1]);
  if( f < 0 ){
    shellError(p, ".tokens %s: no field \"%s\" (see .fields)", azArg[1], azArg[1]);
    return 1;
  }
  long long bs = 2048;
  char *zEnd = 0;
  if( nArg == 3 ){
    bs = strtoll(azArg[2], &zEnd, 10);
    if( !*azArg[2] || *zEnd || bs < 1 ){
      shellError(p, ".tokens %s %s: BLOCK_SIZE must be a positive integer", azArg[1], azArg[2]);
      return 1;
    }
  }
  pagedb_tokens *t;
  int rc = pagedb_tokens_open(p->db, f, PAGEDB_ORDER_SEQUENTIAL, 0, 0, (int64_t)bs, &t);
  if( rc ){
    shellError(p, ".tokens %s: %s (%s)", azArg[1], pagedb_errname(rc), pagedb_errmsg(p->db));
    return 1;
  }
  char *azName[] = { "field", "documents", "tokens", "block_size", "blocks", "map" };
  ShellResult r;
  resultInit(&r, 6, azName);
  for(int i = 1; i < 5; i++) resultSetNum(&r, i, 1);
  resultSetNum(&r, 5, 0);
  resultAddf(&r, "%s\t%lld\t%lld\t%lld\t%lld\t%s", azArg[1], (long long)pagedb_tokens_documents(t),
             (long long)pagedb_tokens_total(t), bs, (long long)pagedb_tokens_blocks(t),
             pagedb_tokens_stored(t) ? "stored" : "built");
  pagedb_tokens_close(t);
  resultPrint(p, &r, p->headers);
  resultFree(&r);
  return 0;
}

typedef struct SchemaCtx { ShellState *p; const char *zPattern; int indent; int n; } SchemaCtx;

/* Print a CREATE statement with each column (each item between the outer
** parentheses) on a line of its own, as sqlite3's .schema --indent does. */
static void printIndented(FILE *out, const char *z){
  int depth = 0;
  char q = 0;
  for(; *z; z++){
    char c = *z;
    if( q ){
      fputc(c, out);
      if( c == q ) q = 0;
      continue;
    }
    if( c == '\'' || c == '"' || c == '`' || c == '[' ){
      q = c == '[' ? ']' : c;
      fputc(c, out);
    }else if( c == '(' ){
      fputc(c, out);
      if( depth++ == 0 ){
        fputs("\n  ", out);
        while( z[1] == ' ' ) z++;
      }
    }else if( c == ')' ){
      if( --depth == 0 ) fputc('\n', out);
      fputc(c, out);
    }else if( c == ',' && depth == 1 ){
      fputs(",\n  ", out);
      while( z[1] == ' ' ) z++;
    }else{
      fputc(c, out);
    }
  }
}

static int schemaRow(void *pCtx, int nCol, char **azVal, char **azName){
  SchemaCtx *c = pCtx;
  (void)azName;
  if( nCol < 2 || azVal[1] == 0 ) return 0;
  if( c->zPattern && fnmatch(c->zPattern, azVal[0] ? azVal[0] : "", 0) != 0 ) return 0;
  if( c->indent ) printIndented(c->p->out, azVal[1]);
  else fputs(azVal[1], c->p->out);
  fputs(";\n", c->p->out);
  c->n++;
  return 0;
}

/* USAGE: .schema [--indent] [PATTERN]
** The CREATE statements of the catalog's tables, views and indexes (those
** whose names match the glob PATTERN); --indent: a column a line. */
int dotSchema(ShellState *p, int nArg, char **azArg){
  SchemaCtx c = { p, 0, 0, 0 };
  for(int i = 1; i < nArg; i++){
    if( strcmp(azArg[i], "--indent") == 0 || strcmp(azArg[i], "-indent") == 0 ){
      c.indent = 1;
    }else if( azArg[i][0] == '-' ){
      shellError(p, ".schema %s: unknown option (usage: .schema [--indent] [PATTERN])", azArg[i]);
      return 1;
    }else if( c.zPattern ){
      shellError(p, ".schema: unexpected argument \"%s\"", azArg[i]);
      return 1;
    }else{
      c.zPattern = azArg[i];
    }
  }
  if( shellNeedDb(p, ".schema") ) return 1;
  int rc = pagedb_sql(p->db, "SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL"
                             " ORDER BY rowid", schemaRow, &c);
  if( rc ){
    shellError(p, ".schema: %s: %s", pagedb_errname(rc), pagedb_errmsg(p->db));
    return 1;
  }
  if( c.zPattern && c.n == 0 ){
    shellError(p, ".schema %s: no table, view or index matches", c.zPattern);
    return 1;
  }
  return 0;
}

/* USAGE: .count
** Print the number of committed samples. */
int dotCount(ShellState *p, int nArg, char **azArg){
  if( tooMany(p, nArg, azArg, 1) || shellNeedDb(p, ".count") ) return 1;
  fprintf(p->out, "%lld\n", (long long)pagedb_count(p->db));
  return 0;
}

/* ------------------------------------------------------------------ */
/* .stats .pages                                                       */
/* ------------------------------------------------------------------ */

static double pct(int64_t a, int64_t b){ return b > 0 ? 100.0 * (double)a / (double)b : 0.0; }

/* USAGE: .stats
** Where the bytes of the committed pages go (stored, dead, run headers,
** unused), the compression ratio of each field, the zstd dictionaries of
** each zstd-dict field (count, bytes, each id and size), the fill histogram of the
** runs, and this handle's I/O since it opened. */
int dotStats(ShellState *p, int nArg, char **azArg){
  if( tooMany(p, nArg, azArg, 1) || shellNeedDb(p, ".stats") ) return 1;
  pagedb_stat s;
  int rc = pagedb_stats(p->db, &s);
  if( rc ){
    shellError(p, ".stats: pagedb_stats: %s (%s)", pagedb_errname(rc), pagedb_errmsg(p->db));
    return 1;
  }
  FILE *out = p->out;
  int64_t total = s.pages * (int64_t)pagedb_page_size(p->db);
  fprintf(out, "%-16s %lld\n", "samples:", (long long)s.samples);
  fprintf(out, "%-16s %lld (%lld bytes)\n", "pages:", (long long)s.pages, (long long)total);
  fprintf(out, "%-16s %lld (%lld of several pages)\n", "runs:", (long long)s.runs,
          (long long)s.multipage_runs);
  fprintf(out, "%-16s %lld (%.1f%%)\n", "stored:", (long long)s.bytes_stored, pct(s.bytes_stored, total));
  fprintf(out, "%-16s %lld (%.1f%%)\n", "dead:", (long long)s.bytes_dead, pct(s.bytes_dead, total));
  fprintf(out, "%-16s %lld (%.1f%%)\n", "run headers:", (long long)s.bytes_header, pct(s.bytes_header, total));
  fprintf(out, "%-16s %lld (%.1f%%)\n", "padding:", (long long)s.bytes_padding, pct(s.bytes_padding, total));
  fprintf(out, "%-16s %lld (%.1f%%)\n", "unused:", (long long)s.bytes_waste, pct(s.bytes_waste, total));
  fprintf(out, "%-16s %lld stored for %lld raw (ratio %.2f)\n", "values:", (long long)s.bytes_stored,
          (long long)s.bytes_raw, s.bytes_stored ? (double)s.bytes_raw / (double)s.bytes_stored : 1.0);
  fprintf(out, "%-16s %lld\n", "moved samples:", (long long)s.moved);
  fprintf(out, "%-16s %lld reads (%lld bytes), %lld writes (%lld bytes), %lld syncs\n", "I/O since open:",
          (long long)s.io_reads, (long long)s.io_read_bytes, (long long)s.io_writes,
          (long long)s.io_write_bytes, (long long)s.io_syncs);

  char *azName[] = { "field", "type", "codec", "values", "compressed", "stored", "raw", "ratio" };
  ShellResult r;
  resultInit(&r, 8, azName);
  for(int i = 0; i < 8; i++) resultSetNum(&r, i, i >= 3);
  for(int f = 0; f < pagedb_field_count(p->db); f++){
    pagedb_field_stat fs;
    rc = pagedb_field_stats(p->db, f, &fs);
    if( rc ){
      resultFree(&r);
      shellError(p, ".stats: pagedb_field_stats %s: %s (%s)", pagedb_field_name(p->db, f),
                 pagedb_errname(rc), pagedb_errmsg(p->db));
      return 1;
    }
    char zCodec[32];
    int type = pagedb_field_type(p->db, f);
    shellCodecName(pagedb_field_codec(p->db, f), zCodec, sizeof zCodec);
    if( type == PAGEDB_BYTES || type == PAGEDB_TEXT ){
      resultAddf(&r, "%s\t%s\t%s\t%lld\t%lld\t%lld\t%lld\t%.2f", pagedb_field_name(p->db, f),
                 shellTypeName(type), zCodec, (long long)fs.values, (long long)fs.compressed,
                 (long long)fs.bytes_stored, (long long)fs.bytes_raw,
                 fs.bytes_stored ? (double)fs.bytes_raw / (double)fs.bytes_stored : 1.0);
    }else{
      char *az[8] = { (char *)pagedb_field_name(p->db, f), (char *)shellTypeName(type), zCodec, 0,
                      0, 0, 0, 0 };
      char zN[32];
      snprintf(zN, sizeof zN, "%lld", (long long)fs.values);
      az[3] = zN;
      resultAddRow(&r, az);
    }
  }
  fputc('\n', out);
  resultPrint(p, &r, 1);
  resultFree(&r);

  /* The zstd dictionaries of zstd-dict fields, newest first. */
  for(int f = 0; f < pagedb_field_count(p->db); f++){
    uint32_t ids[64];
    size_t sizes[64];
    int nd = pagedb_field_dicts(p->db, f, ids, sizes, 64);
    if( nd <= 0 ) continue;
    size_t tot = 0;
    for(int i = 0; i < nd && i < 64; i++) tot += sizes[i];
    fprintf(out, "\ndictionaries of %s: %d, %zu bytes (newest first:", pagedb_field_name(p->db, f), nd, tot);
    for(int i = 0; i < nd && i < 64; i++) fprintf(out, " %u %zu", ids[i], sizes[i]);
    fprintf(out, ")\n");
  }

  int64_t max = 0;
  for(int i = 0; i < 10; i++) if( s.fill_hist[i] > max ) max = s.fill_hist[i];
  fprintf(out, "\nruns by fill (used / run size):\n");
  for(int i = 0; i < 10; i++){
    int w = max ? (int)((s.fill_hist[i] * 40 + max - 1) / max) : 0;
    fprintf(out, "  %3d-%3d%%  %8lld  ", i * 10, i == 9 ? 100 : i * 10 + 10, (long long)s.fill_hist[i]);
    for(int k = 0; k < w; k++) fputc('#', out);
    fputc('\n', out);
  }
  return 0;
}

typedef struct PagesCtx { ShellResult *r; int64_t pageSize; } PagesCtx;

static int pagesRow(void *pCtx, int nCol, char **azVal, char **azName){
  PagesCtx *c = pCtx;
  (void)azName;
  if( nCol != 4 ) return 1;
  int64_t npages = azVal[1] ? atoll(azVal[1]) : 0, used = azVal[3] ? atoll(azVal[3]) : 0;
  return resultAddf(c->r, "%s\t%s\t%s\t%s\t%.1f%%", azVal[0] ? azVal[0] : "", azVal[1] ? azVal[1] : "",
                    azVal[2] ? azVal[2] : "", azVal[3] ? azVal[3] : "", pct(used, npages * c->pageSize));
}

/* USAGE: .pages [N]
** The committed runs from the page table (the first N): first page,
** pages, samples starting in it, bytes used, and fill (used / run size). */
int dotPages(ShellState *p, int nArg, char **azArg){
  if( tooMany(p, nArg, azArg, 2) || shellNeedDb(p, ".pages") ) return 1;
  int64_t limit = -1;
  if( nArg == 2 && (shellInt(azArg[1], &limit) || limit < 0) ){
    shellError(p, ".pages %s: not a count (an integer >= 0)", azArg[1]);
    return 1;
  }
  char zSql[160];
  snprintf(zSql, sizeof zSql, "SELECT pgno, npages, nsamples, used FROM page ORDER BY pgno LIMIT %lld",
           (long long)limit);
  char *azName[] = { "page", "npages", "samples", "used", "fill" };
  ShellResult r;
  resultInit(&r, 5, azName);
  for(int i = 0; i < 5; i++) resultSetNum(&r, i, i < 4);
  PagesCtx c = { &r, (int64_t)pagedb_page_size(p->db) };
  int rc = pagedb_sql(p->db, zSql, pagesRow, &c);
  if( rc ){
    resultFree(&r);
    shellError(p, ".pages: %s: %s", pagedb_errname(rc), pagedb_errmsg(p->db));
    return 1;
  }
  resultPrint(p, &r, p->headers);
  resultFree(&r);
  return 0;
}

/* .parts: one row of table part per line. */
static int partsRow(void *ctx, int nCol, char **azVal, char **azName){
  ShellResult *r = ctx;
  (void)azName;
  if( nCol != 7 ) return 1;
  return resultAddf(r, "%s\t%s\t%s\t%s\t%s\t%s\t%s", azVal[0] ? azVal[0] : "", azVal[1] ? azVal[1] : "",
                    azVal[2] ? azVal[2] : "", azVal[3] ? azVal[3] : "", azVal[4] ? azVal[4] : "",
                    azVal[5] ? azVal[5] : "", azVal[6] ? azVal[6] : "");
}

/* .parts commit FILE ... [--keep|--offset N|--after] */
static int partsCommit(ShellState *p, int nArg, char **azArg){
  int policy = PAGEDB_ATTACH_KEEP, n = 0;
  int64_t offset = 0, got = 0;
  pagedb_part *parts = calloc((size_t)nArg, sizeof *parts);
  if( !parts ){ shellError(p, ".parts commit: out of memory"); return 1; }
  for(int i = 2; i < nArg; i++){
    const char *z = azArg[i];
    if( z[0] == '-' && z[1] == '-' ) z++;
    if( strcmp(z, "-keep") == 0 ) policy = PAGEDB_ATTACH_KEEP;
    else if( strcmp(z, "-after") == 0 ) policy = PAGEDB_ATTACH_AFTER;
    else if( strcmp(z, "-offset") == 0 ){
      if( i + 1 >= nArg || shellInt(azArg[i + 1], &offset) ){
        shellError(p, ".parts commit %s: missing or bad N", azArg[i]);
        free(parts);
        return 1;
      }
      i++;
      policy = PAGEDB_ATTACH_OFFSET;
    }else if( z[0] == '-' ){
      shellError(p, ".parts commit %s: unknown option (--keep, --offset N or --after)", azArg[i]);
      free(parts);
      return 1;
    }else{
      parts[n++].path = azArg[i];
    }
  }
  for(int i = 0; i < n; i++) parts[i].offset = offset;
  if( n == 0 ){ shellError(p, ".parts commit: no FILE given"); free(parts); return 1; }
  if( shellNeedWritable(p, ".parts commit") ){ free(parts); return 1; }
  int rc = pagedb_parts_commit(p->db, parts, n, policy, &got);
  free(parts);
  if( rc ){
    shellError(p, ".parts commit: %s: %s", pagedb_errname(rc), pagedb_errmsg(p->db));
    return 1;
  }
  fprintf(p->out, "committed %d part%s, %lld sample%s\n", n, n == 1 ? "" : "s", (long long)got, got == 1 ? "" : "s");
  shellChanged(p, got);
  return 0;
}

/* pagedb_parts_orphans' callback: one line per orphan. */
static int orphanRow(void *ctx, const pagedb_orphan *o){
  return resultAddf(ctx, "%s\t%s\t%lld\t%.1f", o->path, o->uuid, (long long)o->bytes, o->age_ms / 1000.0)
         ? PAGEDB_NOMEM : PAGEDB_OK;
}

/* .parts orphans [--age SECONDS] [--remove] */
static int partsOrphans(ShellState *p, int nArg, char **azArg){
  int flags = 0;
  double age = 0;
  for(int i = 2; i < nArg; i++){
    const char *z = azArg[i];
    if( z[0] == '-' && z[1] == '-' ) z++;
    if( strcmp(z, "-remove") == 0 ) flags |= PAGEDB_ORPHANS_REMOVE;
    else if( strcmp(z, "-age") == 0 && i + 1 < nArg ){
      char *e;
      age = strtod(azArg[++i], &e);
      if( *e || !(age >= 0 && age < 9e15) ){
        shellError(p, ".parts orphans --age %s: not a number of seconds >= 0", azArg[i]);
        return 1;
      }
    }else{
      shellError(p, ".parts orphans %s: unknown option (--age SECONDS, --remove)", azArg[i]);
      return 1;
    }
  }
  if( shellNeedDb(p, ".parts orphans") ) return 1;
  if( (flags & PAGEDB_ORPHANS_REMOVE) && shellNeedWritable(p, ".parts orphans --remove") ) return 1;
  char *azName[] = { "orphan", "uuid", "bytes", "age_s" };
  ShellResult r;
  resultInit(&r, 4, azName);
  resultSetNum(&r, 2, 1);
  resultSetNum(&r, 3, 1);
  int64_t n = 0;
  int rc = pagedb_parts_orphans(p->db, (int64_t)(age * 1000.0), flags, orphanRow, &r, &n);
  if( rc ){
    resultFree(&r);
    shellError(p, ".parts orphans: %s: %s", pagedb_errname(rc), pagedb_errmsg(p->db));
    return 1;
  }
  resultPrint(p, &r, p->headers);
  resultFree(&r);
  if( flags & PAGEDB_ORPHANS_REMOVE )
    fprintf(p->out, "removed %lld orphan part%s\n", (long long)n, n == 1 ? "" : "s");
  return 0;
}

/* USAGE: .parts | .parts commit FILE ... [--keep|--offset N|--after]
**        | .parts orphans [--age SECONDS] [--remove]
** The parts the dataset is made of (table part): number, where its data
** file is, samples, bytes its runs hold, the id range, its name;
** or commit the datasets FILE ... as new parts, all or none; or list (and
** remove) the orphans under NAME.parts/ at least SECONDS old. */
int dotParts(ShellState *p, int nArg, char **azArg){
  if( nArg >= 2 && strcmp(azArg[1], "commit") == 0 ) return partsCommit(p, nArg, azArg);
  if( nArg >= 2 && strcmp(azArg[1], "orphans") == 0 ) return partsOrphans(p, nArg, azArg);
  if( tooMany(p, nArg, azArg, 1) || shellNeedDb(p, ".parts") ) return 1;
  char *azName[] = { "part", "where", "samples", "bytes", "id_min", "id_max", "name" };
  ShellResult r;
  resultInit(&r, 7, azName);
  for(int i = 0; i < 7; i++) resultSetNum(&r, i, i != 1 && i != 6);
  int rc = PAGEDB_OK;
  if( pagedb_part_count(p->db) > 0 )
    rc = pagedb_sql(p->db, "SELECT part, uri, samples, (SELECT coalesce(sum(used), 0) FROM page"
                    " WHERE pgno >= first_page AND pgno < first_page + pages), id_min, id_max, name FROM part"
                    " ORDER BY part", partsRow, &r);
  if( rc ){
    resultFree(&r);
    shellError(p, ".parts: %s: %s", pagedb_errname(rc), pagedb_errmsg(p->db));
    return 1;
  }
  resultPrint(p, &r, p->headers);
  resultFree(&r);
  return 0;
}

/* ------------------------------------------------------------------ */
/* .get                                                                */
/* ------------------------------------------------------------------ */

/* Parse a sample id for command ZCMD; 0 ok, 1 after an error message. */
static int parseId(ShellState *p, const char *zCmd, const char *z, int64_t *pId){
  if( shellInt(z, pId) || *pId < 0 ){
    shellError(p, "%s %s: not a sample id (an integer >= 0)", zCmd, z);
    return 1;
  }
  return 0;
}

/* Print value N bytes at DATA of a field of TYPE for .get. */
static void printValue(ShellState *p, int type, const uint8_t *data, size_t n){
  if( type == PAGEDB_TEXT ){
    fwrite(data, 1, n, p->out);
    fputc('\n', p->out);
    return;
  }
  fprintf(p->out, "%zu bytes", n);
  if( n ) fputc(':', p->out);
  for(size_t k = 0; k < n && k < HEX_PREVIEW; k++) fprintf(p->out, " %02x", data[k]);
  if( n > HEX_PREVIEW ) fprintf(p->out, " ...");
  fputc('\n', p->out);
}

/* Write N bytes of DATA to ZFILE ("-": standard output). */
static int writeFile(ShellState *p, const char *zFile, const void *data, size_t n){
  FILE *f = strcmp(zFile, "-") == 0 ? p->out : fopen(zFile, "wb");
  if( f == 0 ){
    shellError(p, ".get: cannot write \"%s\": %s", zFile, strerror(errno));
    return 1;
  }
  int bad = n && fwrite(data, 1, n, f) != n;
  if( f != p->out ) bad |= fclose(f) != 0;
  else fflush(f);
  if( bad ){
    shellError(p, ".get: writing \"%s\": %s", zFile, strerror(errno));
    return 1;
  }
  return 0;
}

/* USAGE: .get ID [FIELD] [FILE]
** Print sample ID's fields, one `name = value` line each (or only FIELD's
** value): text and numbers as they are, bytes as a size and a hex preview.
** With FILE, write FIELD's raw bytes (a number: its decimal text) to FILE
** ("-" for standard output). */
int dotGet(ShellState *p, int nArg, char **azArg){
  if( nArg < 2 ){ shellError(p, ".get: missing ID (usage: .get ID [FIELD] [FILE])"); return 1; }
  if( tooMany(p, nArg, azArg, 4) || shellNeedDb(p, ".get") ) return 1;
  int64_t id;
  if( parseId(p, ".get", azArg[1], &id) ) return 1;
  int f0 = 0, f1 = pagedb_field_count(p->db);
  if( nArg >= 3 ){
    f0 = pagedb_field_index(p->db, azArg[2]);
    if( f0 < 0 ){
      shellError(p, ".get %s %s: no field \"%s\" (see .fields)", azArg[1], azArg[2], azArg[2]);
      return 1;
    }
    f1 = f0 + 1;
  }
  if( p->rd == 0 ){
    int rc = pagedb_reader_open(p->db, PAGEDB_READ_COPY, &p->rd);
    if( rc ){
      shellError(p, ".get %s: pagedb_reader_open: %s (%s)", azArg[1], pagedb_errname(rc),
                 pagedb_errmsg(p->db));
      return 1;
    }
  }
  int nFound = 0;
  size_t w = 0;
  for(int f = f0; f < f1; f++){
    size_t k = strlen(pagedb_field_name(p->db, f));
    if( k > w ) w = k;
  }
  for(int f = f0; f < f1; f++){
    int type = pagedb_field_type(p->db, f);
    const char *zName = pagedb_field_name(p->db, f);
    const void *data = 0;
    size_t n = 0;
    int64_t iv = 0;
    double rv = 0;
    int rc;
    if( type == PAGEDB_INT ) rc = pagedb_read_int(p->rd, id, f, &iv);
    else if( type == PAGEDB_REAL ) rc = pagedb_read_real(p->rd, id, f, &rv);
    else rc = pagedb_read(p->rd, id, f, &data, &n);
    if( rc == PAGEDB_NOTFOUND ) continue;
    if( rc ){
      shellError(p, ".get %s %s: %s (%s)", azArg[1], zName, pagedb_errname(rc),
                 pagedb_reader_errmsg(p->rd));
      return 1;
    }
    nFound++;
    char zNum[64];
    if( type == PAGEDB_INT ) snprintf(zNum, sizeof zNum, "%lld", (long long)iv);
    else if( type == PAGEDB_REAL ) snprintf(zNum, sizeof zNum, "%.17g", rv);
    if( nArg == 4 ){
      if( type == PAGEDB_INT || type == PAGEDB_REAL ) return writeFile(p, azArg[3], zNum, strlen(zNum));
      return writeFile(p, azArg[3], data, n);
    }
    if( nArg == 2 ) fprintf(p->out, "%-*s = ", (int)w, zName);
    if( type == PAGEDB_INT || type == PAGEDB_REAL ) fprintf(p->out, "%s\n", zNum);
    else printValue(p, type, data, n);
  }
  if( nFound == 0 ){
    if( nArg >= 3 ){
      shellError(p, ".get %s %s: sample %s has no %s (or there is no sample %s)", azArg[1],
                 azArg[2], azArg[1], azArg[2], azArg[1]);
    }else{
      shellError(p, ".get %s: no sample %s", azArg[1], azArg[1]);
    }
    return 1;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* .put                                                                */
/* ------------------------------------------------------------------ */

/* Read all of ZFILE into a malloc'd buffer. */
static int readFile(ShellState *p, const char *zArg, const char *zFile, char **pBuf, size_t *pN){
  FILE *f = fopen(zFile, "rb");
  char *buf = 0;
  size_t n = 0, cap = 0;
  if( f == 0 ){
    shellError(p, ".put %s: cannot read \"%s\": %s", zArg, zFile, strerror(errno));
    return 1;
  }
  for(;;){
    if( n == cap ){
      cap = cap ? cap * 2 : 65536;
      char *b = realloc(buf, cap);
      if( b == 0 ){ free(buf); fclose(f); shellError(p, ".put %s: out of memory", zArg); return 1; }
      buf = b;
    }
    size_t k = fread(buf + n, 1, cap - n, f);
    n += k;
    if( k == 0 ) break;
  }
  int bad = ferror(f);
  fclose(f);
  if( bad ){
    free(buf);
    shellError(p, ".put %s: reading \"%s\" failed", zArg, zFile);
    return 1;
  }
  *pBuf = buf;
  *pN = n;
  return 0;
}

/* The type .put gives a new field from its first value: INT for an
** integer, REAL for another number, BYTES for @FILE, TEXT otherwise. */
static int putInferType(const char *zVal){
  int64_t v;
  char *end;
  if( zVal[0] == '@' && zVal[1] != '@' ) return PAGEDB_BYTES;
  if( zVal[0] == 0 ) return PAGEDB_TEXT;
  if( shellInt(zVal, &v) == 0 ) return PAGEDB_INT;
  errno = 0;
  (void)strtod(zVal, &end);
  if( *end == 0 && errno == 0 && !isspace((unsigned char)zVal[0]) ) return PAGEDB_REAL;
  return PAGEDB_TEXT;
}

/* A dataset without fields (just created by this .put): add one per
** FIELD=VALUE, of putInferType's type, in the order given. */
static int putMakeFields(ShellState *p, int nArg, char **azArg){
  shellCloseReader(p);
  for(int i = 2; i < nArg; i++){
    char *zEq = strchr(azArg[i], '=');
    if( zEq == 0 || zEq == azArg[i] ){
      shellError(p, ".put %s: expected FIELD=VALUE or FIELD=@FILE", azArg[i]);
      return 1;
    }
    *zEq = 0;
    int type = putInferType(zEq + 1);
    int rc = pagedb_field_index(p->db, azArg[i]) >= 0 ? PAGEDB_OK
           : pagedb_field_add(p->db, azArg[i], type, PAGEDB_CODEC_NONE);
    if( rc ){
      shellError(p, ".put %s: cannot make field \"%s\" %s: %s (%s)", azArg[i], azArg[i],
                 shellTypeName(type), pagedb_errname(rc), pagedb_errmsg(p->db));
      *zEq = '=';
      return 1;
    }
    *zEq = '=';
  }
  return 0;
}

/* USAGE: .put ID|auto FIELD=VALUE|FIELD=@FILE ...
** Write one sample with id ID (or the next free one, printed, for "auto")
** and commit.  A VALUE is taken as text for BYTES and TEXT fields, as a
** number for INT and REAL; @FILE gives the bytes of FILE (@@... is a VALUE
** starting with '@').  Fields not given are missing in the sample. */
int dotPut(ShellState *p, int nArg, char **azArg){
  if( nArg < 3 ){
    shellError(p, ".put: %s (usage: .put ID|auto FIELD=VALUE|FIELD=@FILE ...)",
               nArg < 2 ? "missing ID" : "missing FIELD=VALUE");
    return 1;
  }
  int64_t id = PAGEDB_AUTO_ID;
  if( strcmp(azArg[1], "auto") != 0 && parseId(p, ".put", azArg[1], &id) ) return 1;
  if( shellNeedCreate(p, ".put") ) return 1;
  if( pagedb_field_count(p->db) == 0 && putMakeFields(p, nArg, azArg) ) return 1;
  pagedb_writer *w = 0;
  int rc = pagedb_writer_open(p->db, &w);
  if( rc ){
    shellError(p, ".put %s: pagedb_writer_open: %s (%s)", azArg[1], pagedb_errname(rc),
               pagedb_errmsg(p->db));
    return 1;
  }
  rc = pagedb_sample_begin(w, id);
  if( rc ){
    shellError(p, ".put %s: %s (%s)", azArg[1], pagedb_errname(rc), pagedb_writer_errmsg(w));
    pagedb_writer_close(w);
    return 1;
  }
  int bad = 0;
  for(int i = 2; i < nArg && !bad; i++){
    char *zEq = strchr(azArg[i], '=');
    if( zEq == 0 || zEq == azArg[i] ){
      shellError(p, ".put %s: expected FIELD=VALUE or FIELD=@FILE", azArg[i]);
      bad = 1;
      break;
    }
    *zEq = 0;
    const char *zField = azArg[i], *zVal = zEq + 1;
    int f = pagedb_field_index(p->db, zField);
    if( f < 0 ){
      shellError(p, ".put %s=%s: no field \"%s\" (see .fields)", zField, zVal, zField);
      *zEq = '=';
      bad = 1;
      break;
    }
    int type = pagedb_field_type(p->db, f);
    char *buf = 0;
    size_t n = 0;
    if( zVal[0] == '@' && zVal[1] != '@' ){
      *zEq = '=';
      int e = readFile(p, azArg[i], zVal + 1, &buf, &n);
      *zEq = 0;
      if( e ){ *zEq = '='; bad = 1; break; }
    }else{
      if( zVal[0] == '@' ) zVal++;
      n = strlen(zVal);
    }
    const char *zNum = buf ? buf : zVal;
    if( type == PAGEDB_INT ){
      char zTmp[64];
      int64_t v;
      snprintf(zTmp, sizeof zTmp, "%.*s", (int)(n < 63 ? n : 63), zNum);
      if( n > 63 || shellInt(zTmp, &v) ){
        shellError(p, ".put %s=%s: \"%s\" is not an integer (field %s is INT)", zField, zEq + 1,
                   zTmp, zField);
        bad = 1;
      }else{
        rc = pagedb_put_int(w, f, v);
      }
    }else if( type == PAGEDB_REAL ){
      char zTmp[64], *end;
      snprintf(zTmp, sizeof zTmp, "%.*s", (int)(n < 63 ? n : 63), zNum);
      errno = 0;
      double v = strtod(zTmp, &end);
      if( n > 63 || end == zTmp || *end || errno ){
        shellError(p, ".put %s=%s: \"%s\" is not a number (field %s is REAL)", zField, zEq + 1,
                   zTmp, zField);
        bad = 1;
      }else{
        rc = pagedb_put_real(w, f, v);
      }
    }else{
      rc = pagedb_put(w, f, buf ? buf : zVal, n);
    }
    free(buf);
    if( !bad && rc ){
      shellError(p, ".put %s=%s: %s (%s)", zField, zEq + 1, pagedb_errname(rc), pagedb_writer_errmsg(w));
      bad = 1;
    }
    *zEq = '=';
  }
  int64_t got = id;
  if( !bad ){
    rc = pagedb_sample_end(w, &got);
    if( rc ){
      shellError(p, ".put %s: pagedb_sample_end: %s (%s)", azArg[1], pagedb_errname(rc),
                 pagedb_writer_errmsg(w));
      bad = 1;
    }
  }else{
    pagedb_sample_cancel(w);
  }
  rc = pagedb_writer_close(w);
  if( !bad && rc ){
    shellError(p, ".put %s: pagedb_writer_close: %s (%s)", azArg[1], pagedb_errname(rc),
               pagedb_errmsg(p->db));
    bad = 1;
  }
  if( !bad ){
    rc = pagedb_commit(p->db);
    if( rc ){
      shellError(p, ".put %s: pagedb_commit: %s (%s)", azArg[1], pagedb_errname(rc), pagedb_errmsg(p->db));
      bad = 1;
    }
  }
  if( !bad && id == PAGEDB_AUTO_ID ) fprintf(p->out, "%lld\n", (long long)got);
  if( !bad ) shellChanged(p, 1);
  return bad;
}

/* ------------------------------------------------------------------ */
/* .delete                                                             */
/* ------------------------------------------------------------------ */

typedef struct IdList { int64_t *a; int64_t n, cap; int bad; } IdList;

static int idRow(void *pCtx, int nCol, char **azVal, char **azName){
  IdList *l = pCtx;
  (void)azName;
  int64_t v;
  if( nCol != 1 || azVal[0] == 0 || shellInt(azVal[0], &v) ){ l->bad = 1; return 1; }
  if( l->n == l->cap ){
    int64_t cap = l->cap ? l->cap * 2 : 256;
    int64_t *a = realloc(l->a, (size_t)cap * sizeof(int64_t));
    if( a == 0 ){ l->bad = 2; return 1; }
    l->a = a;
    l->cap = cap;
  }
  l->a[l->n++] = v;
  return 0;
}

/* USAGE: .delete ID|LO-HI|WHERE-SQL
** Delete sample ID, the samples with ids from LO to HI, or those of table
** sample that the SQL condition selects (".delete label = 3"), then commit.
** Prints how many were deleted; the space is reclaimed by .vacuum. */
int dotDelete(ShellState *p, int nArg, char **azArg){
  if( nArg < 2 ){ shellError(p, ".delete: missing ID, LO-HI or WHERE-SQL"); return 1; }
  if( shellNeedWritable(p, ".delete") ) return 1;
  /* The condition is the rest of the line, arguments joined by blanks. */
  size_t len = 0;
  for(int i = 1; i < nArg; i++) len += strlen(azArg[i]) + 1;
  char *zArg = malloc(len + 1);
  if( zArg == 0 ){ shellError(p, ".delete: out of memory"); return 1; }
  zArg[0] = 0;
  for(int i = 1; i < nArg; i++){
    if( i > 1 ) strcat(zArg, " ");
    strcat(zArg, azArg[i]);
  }
  IdList l = { 0, 0, 0, 0 };
  int64_t lo, hi;
  char *zDash = strchr(zArg + 1, '-');
  int ret = 1, single = 0;
  if( shellInt(zArg, &lo) == 0 ){
    if( lo < 0 ){ shellError(p, ".delete %s: not a sample id (an integer >= 0)", zArg); goto done; }
    single = 1;
    l.a = malloc(sizeof(int64_t));
    if( l.a == 0 ){ shellError(p, ".delete: out of memory"); goto done; }
    l.a[0] = lo;
    l.n = l.cap = 1;
  }else{
    char zSql[200];
    char *zSel;
    if( zDash && nArg == 2 && (*zDash = 0, shellInt(zArg, &lo) == 0 && shellInt(zDash + 1, &hi) == 0) ){
      if( lo < 0 || hi < lo ){
        *zDash = '-';
        shellError(p, ".delete %s: not a range LO-HI with 0 <= LO <= HI", zArg);
        goto done;
      }
      snprintf(zSql, sizeof zSql, "SELECT id FROM sample WHERE id BETWEEN %lld AND %lld ORDER BY id",
               (long long)lo, (long long)hi);
      zSel = zSql;
    }else{
      if( zDash ) *zDash = '-';
      int complete;
      size_t n = shellSqlStatement(zArg, &complete);
      if( complete || n != strlen(zArg) ){
        shellError(p, ".delete %s: the condition must be one SQL expression (no ';')", zArg);
        goto done;
      }
      zSel = malloc(strlen(zArg) + 64);
      if( zSel == 0 ){ shellError(p, ".delete: out of memory"); goto done; }
      sprintf(zSel, "SELECT id FROM sample WHERE (%s\n) ORDER BY id", zArg);
    }
    int rc = pagedb_sql(p->db, zSel, idRow, &l);
    if( zSel != zSql ) free(zSel);
    if( rc ){
      if( l.bad == 2 ) shellError(p, ".delete %s: out of memory", zArg);
      else shellError(p, ".delete %s: %s: %s", zArg, pagedb_errname(rc), pagedb_errmsg(p->db));
      goto done;
    }
  }
  int64_t nDel = 0;
  for(int64_t k = 0; k < l.n; k++){
    int rc = pagedb_delete(p->db, l.a[k]);
    if( rc == PAGEDB_NOTFOUND && !single ) continue;   /* deleted meanwhile */
    if( rc ){
      shellError(p, ".delete %s: sample %lld: %s (%s)", zArg, (long long)l.a[k], pagedb_errname(rc),
                 pagedb_errmsg(p->db));
      if( nDel ) pagedb_commit(p->db);
      goto done;
    }
    nDel++;
  }
  if( nDel ){
    int rc = pagedb_commit(p->db);
    if( rc ){
      shellError(p, ".delete %s: pagedb_commit: %s (%s)", zArg, pagedb_errname(rc), pagedb_errmsg(p->db));
      goto done;
    }
  }
  fprintf(p->out, "deleted %lld sample%s\n", (long long)nDel, nDel == 1 ? "" : "s");
  shellChanged(p, nDel);
  ret = 0;
done:
  free(l.a);
  free(zArg);
  return ret;
}
