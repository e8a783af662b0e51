/*
** import_csv.c -- .import of a CSV file with a header row (see xfer.h).
**
** The header names the fields (made pagedb names).  Pass 1 reads every
** record to type each column (INT, else REAL, else TEXT) and count the
** samples; then the file is read again from the first record, csvNext
** turning one record into one job under the import's lock.  csvRecord is
** the RFC 4180 reader both passes share.
*/
#include "import.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
    /* The cell's text: the writer converts it to its field's type (a
    ** number for an INT or REAL field, as it is for TEXT and BYTES). */
    Put *p = jobPut(j, imp->aColField[i], PAGEDB_TEXT);
    if( p == 0 ){ xfer_msg(emsg, nemsg, "out of memory"); return PAGEDB_NOMEM; }
    if( (p->data = malloc(n)) == 0 ){ xfer_msg(emsg, nemsg, "out of memory"); return PAGEDB_NOMEM; }
    memcpy(p->data, z, n);
    p->n = n;
    p->owned = 1;
    j->bytes += (int64_t)n;
  }
  return PAGEDB_OK;
}

int importCsv(Import *imp, int64_t *n, char *emsg, size_t nemsg){
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
    rc = impFields(imp, imp->nCol, azName, imp->aColType, 0, imp->aColField, emsg, nemsg);
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

void importCsvFree(Import *imp){
  if( imp->csv ) fclose(imp->csv);
  free(imp->aColType);
  free(imp->aColField);
  free(imp->cBuf);
  free(imp->aCell);
  free(imp->aCellLen);
}
