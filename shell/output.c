/*
** output.c -- the pagedb shell's output modes, and SQL on the catalog.
**
** A result (SQL rows from pagedb_sql, or a table a dot-command builds) is
** collected whole, then printed in the mode .mode chose, as sqlite3 prints
** it:
**
**   list   col|col; column names first after .headers on; NULL as nothing
**          (or .nullvalue's text, in every mode but json)
**   csv    RFC 4180: a cell with a comma, a quote, CR or LF is quoted, its
**          quotes doubled; rows end with CRLF; names first after .headers on
**   json   [{"col":value,...},\n{...}]: strings escaped, numbers unquoted,
**          NULL as null; nothing at all for no rows
**   line   `name = value` per column, names right-aligned, a blank line
**          between rows
**   table  +---+ boxes of ASCII, names centered, always with the names
**   box    the same with Unicode line-drawing characters
**   column sqlite3's: columns padded and two blanks apart, the names
**          underlined with dashes (shown unless .headers off)
**
** Widths in column, table and box modes count UTF-8 characters, not
** bytes; .width sets them as sqlite3's (printColumnar).
*/
#include "shell.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

static char *dupStr(const char *z){
  if( z == 0 ) return 0;
  size_t n = strlen(z) + 1;
  char *r = malloc(n);
  if( r ) memcpy(r, z, n);
  return r;
}

int resultInit(ShellResult *r, int nCol, char *const *azName){
  memset(r, 0, sizeof *r);
  r->azName = calloc((size_t)(nCol ? nCol : 1), sizeof(char *));
  r->aNum = calloc((size_t)(nCol ? nCol : 1), sizeof(int));
  if( r->azName == 0 || r->aNum == 0 ){ r->oom = 1; return 1; }
  r->nCol = nCol;
  for(int i = 0; i < nCol; i++){
    r->azName[i] = dupStr(azName[i] ? azName[i] : "");
    if( r->azName[i] == 0 ) r->oom = 1;
    r->aNum[i] = -1;
  }
  return r->oom;
}

void resultSetNum(ShellResult *r, int i, int isNum){
  if( i >= 0 && i < r->nCol ) r->aNum[i] = isNum;
}

int resultAddRow(ShellResult *r, char *const *azVal){
  if( r->oom ) return 1;
  if( r->nRow == r->nAlloc ){
    int64_t n = r->nAlloc ? r->nAlloc * 2 : 16;
    char **a = realloc(r->azCell, (size_t)(n * r->nCol) * sizeof(char *) + 1);
    if( a == 0 ){ r->oom = 1; return 1; }
    r->azCell = a;
    r->nAlloc = n;
  }
  char **row = r->azCell + r->nRow * r->nCol;
  for(int i = 0; i < r->nCol; i++){
    row[i] = azVal[i] ? dupStr(azVal[i]) : 0;
    if( azVal[i] && row[i] == 0 ) r->oom = 1;
  }
  r->nRow++;
  return r->oom;
}

int resultAddf(ShellResult *r, const char *fmt, ...){
  char buf[4096];
  char *az[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  int n = 0;
  char *z = buf;
  while( n < r->nCol && n < 64 ){
    az[n++] = z;
    char *t = strchr(z, '\t');
    if( t == 0 ) break;
    *t = 0;
    z = t + 1;
  }
  while( n < r->nCol && n < 64 ) az[n++] = 0;
  return resultAddRow(r, az);
}

void resultFree(ShellResult *r){
  for(int64_t k = 0; k < r->nRow * r->nCol; k++) free(r->azCell[k]);
  for(int i = 0; i < r->nCol; i++) free(r->azName[i]);
  free(r->azCell);
  free(r->azName);
  free(r->aNum);
  memset(r, 0, sizeof *r);
}

/* 1 if Z is a number as JSON writes one: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int isJsonNumber(const char *z){
  if( *z == '-' ) z++;
  if( *z == '0' ) z++;
  else if( *z >= '1' && *z <= '9' ){ while( isdigit((unsigned char)*z) ) z++; }
  else return 0;
  if( *z == '.' ){
    z++;
    if( !isdigit((unsigned char)*z) ) return 0;
    while( isdigit((unsigned char)*z) ) z++;
  }
  if( *z == 'e' || *z == 'E' ){
    z++;
    if( *z == '+' || *z == '-' ) z++;
    if( !isdigit((unsigned char)*z) ) return 0;
    while( isdigit((unsigned char)*z) ) z++;
  }
  return *z == 0;
}

static int cellIsNum(const ShellResult *r, int col, const char *z){
  if( z == 0 ) return 0;
  if( r->aNum[col] >= 0 ) return r->aNum[col] && isJsonNumber(z);
  return isJsonNumber(z);
}

/* Characters (UTF-8 code points) in Z. */
static size_t utf8Width(const char *z){
  size_t n = 0;
  for(; *z; z++) if( ((unsigned char)*z & 0xc0) != 0x80 ) n++;
  return n;
}

/* ------------------------------------------------------------------ */
/* The modes                                                           */
/* ------------------------------------------------------------------ */

static void printCsvCell(FILE *out, const char *z){
  if( z == 0 ) return;
  if( strpbrk(z, ",\"\r\n") == 0 ){
    fputs(z, out);
    return;
  }
  fputc('"', out);
  for(; *z; z++){
    if( *z == '"' ) fputc('"', out);
    fputc(*z, out);
  }
  fputc('"', out);
}

static void printJsonString(FILE *out, const char *z){
  fputc('"', out);
  for(; *z; z++){
    unsigned char c = (unsigned char)*z;
    switch( c ){
      case '"':  fputs("\\\"", out); break;
      case '\\': fputs("\\\\", out); break;
      case '\b': fputs("\\b", out); break;
      case '\f': fputs("\\f", out); break;
      case '\n': fputs("\\n", out); break;
      case '\r': fputs("\\r", out); break;
      case '\t': fputs("\\t", out); break;
      default:
        if( c < 0x20 || c == 0x7f ) fprintf(out, "\\u%04x", c);
        else fputc(c, out);
    }
  }
  fputc('"', out);
}

/* The separator lines of table and box modes: LEFT, MID, RIGHT around runs of H. */
static void printRule(FILE *out, const size_t *aw, int nCol, const char *zLeft,
                      const char *zH, const char *zMid, const char *zRight){
  fputs(zLeft, out);
  for(int i = 0; i < nCol; i++){
    for(size_t k = 0; k < aw[i] + 2; k++) fputs(zH, out);
    fputs(i + 1 < nCol ? zMid : zRight, out);
  }
  fputc('\n', out);
}

/*
** A cell of the columnar modes is printed as lines: it is cut at each
** newline and, in a column of width W > 0 (.width), after every W
** characters, as sqlite3 wraps.  cellLine finds the line that starts at Z:
** its length in bytes (*PN) and characters (*PCHARS); it returns where the
** next line starts, or NULL after the last.
*/
static const char *cellLine(const char *z, size_t w, size_t *pn, size_t *pChars){
  size_t n = 0, chars = 0;
  while( z[n] && z[n] != '\n' ){
    if( ((unsigned char)z[n] & 0xc0) != 0x80 ){
      if( w > 0 && chars == w ) break;
      chars++;
    }
    n++;
  }
  *pn = n;
  *pChars = chars;
  if( z[n] == '\n' ) return z + n + 1;
  return z[n] ? z + n : 0;
}

/* The number of lines of cell Z in a column of width W. */
static int cellLines(const char *z, size_t w){
  int k = 0;
  size_t n, c;
  do{ k++; z = cellLine(z, w, &n, &c); }while( z );
  return k;
}

/* Print N bytes of Z (CHARS characters) padded to W: left-aligned (ALIGN 0),
** right-aligned (1) or centred (-1). */
static void printPadded(FILE *out, const char *z, size_t n, size_t chars, size_t w, int align){
  size_t pad = w > chars ? w - chars : 0;
  size_t left = align == 0 ? 0 : align > 0 ? pad : pad / 2;
  fprintf(out, "%*s%.*s%*s", (int)left, "", (int)n, z, (int)(pad - left), "");
}

/*
** Column, table and box modes.  Column I is .width's W (0 past them): |W|
** characters wide when W is not 0, else as wide as its name and widest
** line; negative W right-aligns it (as do the numeric columns of the
** dot-commands' tables).  Names are centred in table and box modes, cut at
** |W| characters.  When a row takes several lines, rows are separated by
** a rule (a blank line in column mode).  WITHHEADERS: column mode's names.
*/
static void printColumnar(ShellState *p, ShellResult *r, int withHeaders){
  FILE *out = p->out;
  int box = p->mode == MODE_BOX, column = p->mode == MODE_COLUMN;
  size_t *aw = calloc((size_t)r->nCol, sizeof(size_t));
  size_t *awrap = calloc((size_t)r->nCol, sizeof(size_t));
  int *aRight = calloc((size_t)r->nCol, sizeof(int));
  const char **az = calloc((size_t)r->nCol, sizeof(char *));
  if( aw == 0 || awrap == 0 || aRight == 0 || az == 0 ){
    shellError(p, "out of memory");
    goto done;
  }
  int multi = 0;
  for(int i = 0; i < r->nCol; i++){
    int w = i < p->nWidth ? p->aWidth[i] : 0;
    awrap[i] = (size_t)(w < 0 ? -w : w);
    aRight[i] = w < 0;
    size_t n, c;
    cellLine(r->azName[i], awrap[i], &n, &c);
    aw[i] = awrap[i] ? awrap[i] : c;
    for(int64_t k = 0; awrap[i] == 0 && k < r->nRow; k++){
      const char *z = r->azCell[k * r->nCol + i];
      for(z = z ? z : p->zNull; z; ){
        z = cellLine(z, 0, &n, &c);
        if( c > aw[i] ) aw[i] = c;
      }
    }
    for(int64_t k = 0; k < r->nRow && !multi; k++){
      const char *z = r->azCell[k * r->nCol + i];
      if( cellLines(z ? z : p->zNull, awrap[i]) > 1 ) multi = 1;
    }
  }
  const char *zV = column ? "" : box ? "\xe2\x94\x82" : "|";     /* │ */
  const char *zH = box ? "\xe2\x94\x80" : "-";                    /* ─ */
  const char *zSep = column ? "  " : box ? " \xe2\x94\x82 " : " | ";
  if( !column ){
    printRule(out, aw, r->nCol, box ? "\xe2\x94\x8c" : "+", zH,   /* ┌ ┬ ┐ */
              box ? "\xe2\x94\xac" : "+", box ? "\xe2\x94\x90" : "+");
  }
  if( !column || withHeaders ){
    fputs(zV, out);
    if( !column ) fputc(' ', out);
    for(int i = 0; i < r->nCol; i++){
      size_t n, c;
      cellLine(r->azName[i], awrap[i], &n, &c);
      printPadded(out, r->azName[i], n, c, aw[i], column ? aRight[i] : -1);
      fputs(i + 1 < r->nCol ? zSep : column ? "" : " ", out);
    }
    fprintf(out, "%s\n", zV);
    if( column ){
      for(int i = 0; i < r->nCol; i++){
        for(size_t k = 0; k < aw[i]; k++) fputc('-', out);
        fputs(i + 1 < r->nCol ? "  " : "\n", out);
      }
    }else{
      printRule(out, aw, r->nCol, box ? "\xe2\x94\x9c" : "+", zH,   /* ├ ┼ ┤ */
                box ? "\xe2\x94\xbc" : "+", box ? "\xe2\x94\xa4" : "+");
    }
  }
  for(int64_t k = 0; k < r->nRow; k++){
    int more = 1;
    for(int i = 0; i < r->nCol; i++){
      const char *z = r->azCell[k * r->nCol + i];
      az[i] = z ? z : p->zNull;
    }
    while( more ){
      more = 0;
      fputs(zV, out);
      if( !column ) fputc(' ', out);
      for(int i = 0; i < r->nCol; i++){
        const char *z = r->azCell[k * r->nCol + i];
        size_t n = 0, c = 0;
        const char *zLine = az[i];
        if( zLine ) az[i] = cellLine(zLine, awrap[i], &n, &c);
        if( az[i] ) more = 1;
        int align = aRight[i] || (cellIsNum(r, i, z) && r->aNum[i] == 1) ? 1 : 0;
        printPadded(out, zLine ? zLine : "", n, c, aw[i], align);
        fputs(i + 1 < r->nCol ? zSep : column ? "" : " ", out);
      }
      fprintf(out, "%s\n", zV);
    }
    if( multi && k + 1 < r->nRow ){
      if( column ) fputc('\n', out);
      else printRule(out, aw, r->nCol, box ? "\xe2\x94\x9c" : "+", zH,
                     box ? "\xe2\x94\xbc" : "+", box ? "\xe2\x94\xa4" : "+");
    }
  }
  if( !column ){
    printRule(out, aw, r->nCol, box ? "\xe2\x94\x94" : "+", zH,   /* └ ┴ ┘ */
              box ? "\xe2\x94\xb4" : "+", box ? "\xe2\x94\x98" : "+");
  }
done:
  free(aw);
  free(awrap);
  free(aRight);
  free(az);
}

void resultPrint(ShellState *p, ShellResult *r, int withHeaders){
  FILE *out = p->out;
  if( r->oom ){
    shellError(p, "out of memory: the result is incomplete");
  }
  switch( p->mode ){
    case MODE_TABLE:
    case MODE_BOX:
    case MODE_COLUMN:
      /* Column mode shows the names, as sqlite3's, unless .headers said. */
      if( r->nCol > 0 ) printColumnar(p, r, withHeaders || !p->headersSet);
      break;
    case MODE_JSON:
      for(int64_t k = 0; k < r->nRow; k++){
        fputs(k ? ",\n{" : "[{", out);
        for(int i = 0; i < r->nCol; i++){
          const char *z = r->azCell[k * r->nCol + i];
          if( i ) fputc(',', out);
          printJsonString(out, r->azName[i]);
          fputc(':', out);
          if( z == 0 ) fputs("null", out);
          else if( cellIsNum(r, i, z) ) fputs(z, out);
          else printJsonString(out, z);
        }
        fputc('}', out);
      }
      if( r->nRow ) fputs("]\n", out);
      break;
    case MODE_LINE: {
      int w = 0;
      for(int i = 0; i < r->nCol; i++){
        int n = (int)utf8Width(r->azName[i]);
        if( n > w ) w = n;
      }
      for(int64_t k = 0; k < r->nRow; k++){
        if( k ) fputc('\n', out);
        for(int i = 0; i < r->nCol; i++){
          const char *z = r->azCell[k * r->nCol + i];
          int pad = w - (int)utf8Width(r->azName[i]);
          fprintf(out, "%*s%s = %s\n", pad, "", r->azName[i], z ? z : p->zNull);
        }
      }
      break;
    }
    case MODE_CSV:
      if( withHeaders && r->nCol ){
        for(int i = 0; i < r->nCol; i++){
          if( i ) fputc(',', out);
          printCsvCell(out, r->azName[i]);
        }
        fputs("\r\n", out);
      }
      for(int64_t k = 0; k < r->nRow; k++){
        for(int i = 0; i < r->nCol; i++){
          if( i ) fputc(',', out);
          const char *z = r->azCell[k * r->nCol + i];
          printCsvCell(out, z ? z : p->zNull);
        }
        fputs("\r\n", out);
      }
      break;
    default:
      if( withHeaders && r->nCol ){
        for(int i = 0; i < r->nCol; i++) fprintf(out, "%s%s", i ? "|" : "", r->azName[i]);
        fputc('\n', out);
      }
      for(int64_t k = 0; k < r->nRow; k++){
        for(int i = 0; i < r->nCol; i++){
          const char *z = r->azCell[k * r->nCol + i];
          fprintf(out, "%s%s", i ? "|" : "", z ? z : p->zNull);
        }
        fputc('\n', out);
      }
      break;
  }
}

/* ------------------------------------------------------------------ */
/* SQL                                                                 */
/* ------------------------------------------------------------------ */

size_t shellSqlStatement(const char *z, int *pComplete){
  size_t i = 0;
  *pComplete = 0;
  while( z[i] ){
    char c = z[i];
    if( c == '\'' || c == '"' || c == '`' || c == '[' ){
      char close = c == '[' ? ']' : c;
      i++;
      while( z[i] && z[i] != close ) i++;
      if( z[i] ) i++;
    }else if( c == '-' && z[i + 1] == '-' ){
      while( z[i] && z[i] != '\n' ) i++;
    }else if( c == '/' && z[i + 1] == '*' ){
      i += 2;
      while( z[i] && !(z[i] == '*' && z[i + 1] == '/') ) i++;
      if( z[i] ) i += 2;
    }else if( c == ';' ){
      *pComplete = 1;
      return i + 1;
    }else{
      i++;
    }
  }
  return i;
}

int shellSqlIsBlank(const char *z){
  while( *z ){
    if( isspace((unsigned char)*z) || *z == ';' ){
      z++;
    }else if( z[0] == '-' && z[1] == '-' ){
      while( *z && *z != '\n' ) z++;
    }else if( z[0] == '/' && z[1] == '*' ){
      const char *e = strstr(z + 2, "*/");
      if( e == 0 ) return 1;
      z = e + 2;
    }else{
      return 0;
    }
  }
  return 1;
}

/* pagedb_sql's row callback: the first row starts the result. */
static int collectRow(void *pCtx, int nCol, char **azVal, char **azName){
  ShellResult *r = pCtx;
  if( r->azName == 0 && resultInit(r, nCol, azName) ) return 1;
  return resultAddRow(r, azVal);
}

int shellRunSql(ShellState *p, const char *zSql){
  if( shellNeedDb(p, "SQL") ) return 1;
  size_t len = strlen(zSql);
  char *zCopy = malloc(len + 1);
  if( zCopy == 0 ){ shellError(p, "out of memory"); return 1; }
  const char *z = zSql;
  int ret = 0;
  /* One statement at a time, so that each gets its own columns. */
  while( *z && p->interrupted == 0 ){
    int complete;
    size_t n = shellSqlStatement(z, &complete);
    memcpy(zCopy, z, n);
    zCopy[n] = 0;
    z += n;
    if( shellSqlIsBlank(zCopy) ) continue;
    ShellResult r;
    memset(&r, 0, sizeof r);
    int rc = pagedb_sql(p->db, zCopy, collectRow, &r);
    if( rc == PAGEDB_READONLY && p->writable && !p->dbReadonly ){
      /* A statement that writes: the engine's update, which allows field
      ** values only.  It needs the dataset without readers. */
      int64_t nChanged = 0;
      shellCloseReader(p);
      rc = pagedb_sql_update(p->db, zCopy, &nChanged);
      if( rc == PAGEDB_OK ) shellChanged(p, nChanged);
    }
    if( rc == PAGEDB_OK || r.nRow > 0 ) resultPrint(p, &r, p->headers);
    resultFree(&r);
    if( rc ){
      char *zShow = zCopy;
      while( isspace((unsigned char)*zShow) ) zShow++;
      shellError(p, "SQL \"%s\": %s: %s", zShow, pagedb_errname(rc), pagedb_errmsg(p->db));
      ret = 1;
      break;
    }
  }
  free(zCopy);
  return ret;
}
