/*
** cmd_shell.c -- the pagedb shell's commands about the shell itself, most
** of them sqlite3's: .open .quit .mode .headers .timer .writable .vfs
** .bail .echo .changes .nullvalue .width .show .print .read .output .once
** .shell .system, and .tables .indexes (the catalog's objects).
**
** .shell runs its command through /bin/sh (system(3)), as sqlite3 does:
** the user's own command line, on purpose.  .output |CMD likewise opens a
** pipe to CMD with popen(3).
*/
#include "shell.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>


int shellBoolean(const char *z){
  static const char *azOn[] = { "on", "yes", "true", "1" };
  static const char *azOff[] = { "off", "no", "false", "0" };
  for(int i = 0; i < 4; i++){
    if( strcasecmp(z, azOn[i]) == 0 ) return 1;
    if( strcasecmp(z, azOff[i]) == 0 ) return 0;
  }
  return -1;
}

/* Shared by the on|off commands: *PV = ARG's value, or an error naming it. */
static int onOff(ShellState *p, int nArg, char **azArg, int *pV){
  if( nArg != 2 ){
    shellError(p, ".%s: %s (usage: .%s on|off)", azArg[0],
               nArg < 2 ? "missing on|off" : "too many arguments", azArg[0]);
    return 1;
  }
  int v = shellBoolean(azArg[1]);
  if( v < 0 ){
    shellError(p, ".%s %s: not on or off", azArg[0], azArg[1]);
    return 1;
  }
  *pV = v;
  return 0;
}

/* USAGE: .headers on|off
** Print the column names before the rows in list and csv modes. */
int dotHeaders(ShellState *p, int nArg, char **azArg){
  if( onOff(p, nArg, azArg, &p->headers) ) return 1;
  p->headersSet = 1;
  return 0;
}

/* USAGE: .timer on|off
** After each command, print the time it took (real, user, system). */
int dotTimer(ShellState *p, int nArg, char **azArg){
  return onOff(p, nArg, azArg, &p->timer);
}

/* USAGE: .writable on|off
** With "on", SQL that writes goes to pagedb_sql_update: it may change the
** values of INT and REAL fields (relabel samples) and nothing else, since
** every other column mirrors the data file.  Other changes are made with
** .put, .delete, .attach, .vacuum and .import. */
int dotWritable(ShellState *p, int nArg, char **azArg){
  int v;
  if( onOff(p, nArg, azArg, &v) ) return 1;
  if( v && p->db && p->dbReadonly ){
    shellError(p, ".writable on: the dataset %s is open read-only", pagedb_path(p->db));
    return 1;
  }
  p->writable = v;
  return 0;
}

const char *const shellModeName[7] = { "list", "csv", "json", "line", "table", "box", "column" };

/* USAGE: .mode [list|csv|json|line|table|box|column]
** Set how results print; without an argument, print the current mode. */
int dotMode(ShellState *p, int nArg, char **azArg){
  if( nArg == 1 ){
    fprintf(p->out, "current output mode: %s\n", shellModeName[p->mode]);
    return 0;
  }
  if( nArg > 2 ){ shellError(p, ".mode %s: unexpected argument \"%s\"", azArg[1], azArg[2]); return 1; }
  for(int i = 0; i < (int)(sizeof shellModeName / sizeof shellModeName[0]); i++){
    if( strcmp(azArg[1], shellModeName[i]) == 0 ){ p->mode = i; return 0; }
  }
  shellError(p, ".mode %s: unknown mode (list, csv, json, line, table, box or column)", azArg[1]);
  return 1;
}

/* USAGE: .vfs [NAME]
** Without NAME: list the registered VFSes (storage backends), whether each
** works for files beside the open dataset (or in the current directory),
** and which the next .open uses.  With NAME: use that VFS from the next
** .open (or .create) on. */
int dotVfs(ShellState *p, int nArg, char **azArg){
  if( nArg > 2 ){ shellError(p, ".vfs %s: unexpected argument \"%s\"", azArg[1], azArg[2]); return 1; }
  if( nArg == 2 ){
    pagedb_vfs *v = pagedb_vfs_find(azArg[1]);
    if( v == 0 ){ shellError(p, ".vfs %s: no such VFS (see .vfs)", azArg[1]); return 1; }
    p->zVfs = v->zName;
    return 0;
  }
  char zDir[4096] = ".";
  if( p->db ){
    snprintf(zDir, sizeof zDir, "%s", pagedb_path(p->db));
    char *z = strrchr(zDir, '/');
    if( z == zDir ) z[1] = 0;
    else if( z ) *z = 0;
    else strcpy(zDir, ".");
  }
  pagedb_vfs *pDflt = pagedb_vfs_find(0);
  pagedb_vfs *pNext = p->zVfs ? pagedb_vfs_find(p->zVfs) : pDflt;
  char *azName[] = { "name", "default", "next_open", "works_here" };
  ShellResult r;
  if( resultInit(&r, 4, azName) ){ resultFree(&r); shellError(p, ".vfs: out of memory"); return 1; }
  for(pagedb_vfs *v = pagedb_vfs_next(0); v; v = pagedb_vfs_next(v)){
    char why[256] = "";
    int rc = pagedb_vfs_check(v, zDir, why, sizeof why);
    resultAddf(&r, "%s\t%s\t%s\t%s", v->zName, v == pDflt ? "yes" : "no",
               v == pNext ? "yes" : "no", rc == PAGEDB_OK ? "yes" : why[0] ? why : pagedb_errname(rc));
  }
  resultPrint(p, &r, 1);
  resultFree(&r);
  return 0;
}

/* USAGE: .open [-readonly] [-demo] [-vfs NAME] FILE
** Close the current dataset, then open FILE (options as on the command line,
** for this and later opens).  If FILE cannot be opened, none is open. */
int dotOpen(ShellState *p, int nArg, char **azArg){
  const char *zFile = 0;
  for(int i = 1; i < nArg; i++){
    const char *z = azArg[i];
    if( z[0] == '-' && z[1] == '-' ) z++;
    if( strcmp(z, "-readonly") == 0 ){
      p->readonly = 1;
    }else if( strcmp(z, "-demo") == 0 ){
      p->demo = 1;
    }else if( strcmp(z, "-vfs") == 0 ){
      if( i + 1 >= nArg ){ shellError(p, ".open -vfs: missing NAME"); return 1; }
      pagedb_vfs *v = pagedb_vfs_find(azArg[i + 1]);
      if( v == 0 ){ shellError(p, ".open -vfs %s: no such VFS", azArg[i + 1]); return 1; }
      p->zVfs = v->zName;
      i++;
    }else if( z[0] == '-' ){
      shellError(p, ".open %s: unknown option", azArg[i]);
      return 1;
    }else if( zFile ){
      shellError(p, ".open %s: only one FILE (already %s)", azArg[i], zFile);
      return 1;
    }else{
      zFile = azArg[i];
    }
  }
  if( zFile == 0 ){ shellError(p, ".open: missing FILE"); return 1; }
  return shellOpenDb(p, ".open", zFile);
}

/* USAGE: .quit
** Exit the shell. */
int dotQuit(ShellState *p, int nArg, char **azArg){
  if( nArg != 1 ){ shellError(p, ".%s: unexpected argument \"%s\"", azArg[0], azArg[1]); return 1; }
  return 2;
}

/* USAGE: .bail on|off
** Stop scripts and the command arguments at the first error. */
int dotBail(ShellState *p, int nArg, char **azArg){
  return onOff(p, nArg, azArg, &p->bail);
}

/* USAGE: .echo on|off
** Print each command before it runs. */
int dotEcho(ShellState *p, int nArg, char **azArg){
  return onOff(p, nArg, azArg, &p->echo);
}

/* USAGE: .changes on|off
** After each command that changed samples, print how many. */
int dotChanges(ShellState *p, int nArg, char **azArg){
  return onOff(p, nArg, azArg, &p->changes);
}

/* USAGE: .nullvalue STRING
** Print SQL NULL as STRING. */
int dotNullvalue(ShellState *p, int nArg, char **azArg){
  if( nArg != 2 ){
    shellError(p, ".nullvalue: %s (usage: .nullvalue STRING)", nArg < 2 ? "missing STRING" : "too many arguments");
    return 1;
  }
  if( strlen(azArg[1]) >= sizeof p->zNull ){
    shellError(p, ".nullvalue %s: longer than %d bytes", azArg[1], (int)sizeof p->zNull - 1);
    return 1;
  }
  strcpy(p->zNull, azArg[1]);
  return 0;
}

/* USAGE: .width N1 N2 ...
** The widths of the first columns in column, table and box modes, as
** sqlite3's: N > 0 makes the column N characters wide, longer values
** wrapping onto more lines (names cut at N); -N the same, right-aligned;
** 0 as wide as its widest value.  No N resets them all to 0. */
int dotWidth(ShellState *p, int nArg, char **azArg){
  int n = nArg - 1;
  if( n > (int)(sizeof p->aWidth / sizeof p->aWidth[0]) ){
    shellError(p, ".width: more than %d widths", (int)(sizeof p->aWidth / sizeof p->aWidth[0]));
    return 1;
  }
  int aW[sizeof p->aWidth / sizeof p->aWidth[0]];
  for(int i = 0; i < n; i++){
    int64_t v;
    if( shellInt(azArg[i + 1], &v) || v < -1000 || v > 1000 ){
      shellError(p, ".width %s: not a width (-1000 to 1000 characters; 0: automatic)", azArg[i + 1]);
      return 1;
    }
    aW[i] = (int)v;
  }
  memcpy(p->aWidth, aW, (size_t)n * sizeof aW[0]);
  p->nWidth = n;
  return 0;
}

/* USAGE: .show
** The settings, one "name: value" line each. */
int dotShow(ShellState *p, int nArg, char **azArg){
  if( nArg != 1 ){ shellError(p, ".show: unexpected argument \"%s\"", azArg[1]); return 1; }
  FILE *o = p->out;
  fprintf(o, "%12s: %s\n", "echo", p->echo ? "on" : "off");
  fprintf(o, "%12s: %s\n", "headers", p->headers ? "on" : "off");
  fprintf(o, "%12s: %s\n", "mode", shellModeName[p->mode]);
  fprintf(o, "%12s: \"%s\"\n", "nullvalue", p->zNull);
  fprintf(o, "%12s: %s\n", "output", p->zOutName ? p->zOutName : "stdout");
  fprintf(o, "%12s:", "width");
  for(int i = 0; i < p->nWidth; i++) fprintf(o, " %d", p->aWidth[i]);
  fprintf(o, "\n");
  fprintf(o, "%12s: %s\n", "bail", p->bail ? "on" : "off");
  fprintf(o, "%12s: %s\n", "timer", p->timer ? "on" : "off");
  fprintf(o, "%12s: %s\n", "changes", p->changes ? "on" : "off");
  fprintf(o, "%12s: %s\n", "writable", p->writable ? "on" : "off");
  fprintf(o, "%12s: %s%s\n", "filename",
          p->db ? pagedb_path(p->db) : p->zPending ? p->zPending : "(none)",
          p->db ? (p->dbReadonly ? " (read-only)" : "") : p->zPending ? " (not created yet)" : "");
  pagedb_vfs *v = pagedb_vfs_find(p->zVfs);
  fprintf(o, "%12s: %s\n", "vfs", p->db ? p->zDbVfs : v ? v->zName : "?");
  fprintf(o, "%12s: %s\n", "next vfs", v ? v->zName : "?");
  fprintf(o, "%12s: %s\n", "readonly", p->readonly ? "on" : "off");
  /* The remote datasets' settings, as the next open reads them, and where
  ** each comes from (pagedb_config, an environment variable, or the
  ** default). */
  static const struct { const char *name; int op; } remote[] = {
    { "cache dir", PAGEDB_CONFIG_CACHE_DIR }, { "cache bytes", PAGEDB_CONFIG_CACHE_BYTES },
    { "cache chunk", PAGEDB_CONFIG_CACHE_CHUNK }, { "timeout ms", PAGEDB_CONFIG_REMOTE_TIMEOUT },
    { "retries", PAGEDB_CONFIG_REMOTE_RETRIES }, { "connections", PAGEDB_CONFIG_REMOTE_CONNECTIONS },
    { "s3 endpoint", PAGEDB_CONFIG_S3_ENDPOINT }, { "s3 region", PAGEDB_CONFIG_S3_REGION },
    { "ca bundle", PAGEDB_CONFIG_CA_BUNDLE }, { "push part", PAGEDB_CONFIG_PUSH_PART_BYTES },
    { "push at once", PAGEDB_CONFIG_PUSH_PARALLEL },
    /* The secret and the token read back as "(set)" only (pagedb.h). */
    { "s3 key id", PAGEDB_CONFIG_S3_ACCESS_KEY_ID }, { "s3 secret", PAGEDB_CONFIG_S3_SECRET_ACCESS_KEY },
    { "s3 token", PAGEDB_CONFIG_S3_SESSION_TOKEN }, { "s3 profile", PAGEDB_CONFIG_S3_PROFILE },
    { "cache shared", PAGEDB_CONFIG_CACHE_SHARED },
  };
  for(size_t i = 0; i < sizeof remote / sizeof remote[0]; i++){
    char buf[4200];
    const char *src = "";
    int rc = pagedb_config(PAGEDB_CONFIG_GETREMOTE, remote[i].op, buf, sizeof buf, &src);
    if( rc ) fprintf(o, "%12s: error: %s\n", remote[i].name, buf);
    else fprintf(o, "%12s: %s (%s)\n", remote[i].name, buf[0] ? buf : "none", src);
  }
  /* This process's remote counters (pagedb_remote_stats): the chunks a
  ** shared cache rejected among them (issue 30). */
  pagedb_remote_counters rs;
  if( pagedb_remote_stats(&rs)==PAGEDB_OK ){
    fprintf(o, "%12s: %lld requests, %lld bytes, %lld retries, %lld failed\n", "remote",
            (long long)rs.requests, (long long)rs.bytes, (long long)rs.retries, (long long)rs.failures);
    fprintf(o, "%12s: %lld fetched, %lld hits, %lld bad (%lld forged), %lld evicted, %lld uncached\n", "chunks",
            (long long)rs.chunk_fetches, (long long)rs.chunk_hits, (long long)rs.chunk_bad,
            (long long)rs.chunk_forged, (long long)rs.evictions, (long long)rs.uncached);
  }
  return 0;
}

/* USAGE: .print STRING ...
** Print the arguments, separated by blanks. */
int dotPrint(ShellState *p, int nArg, char **azArg){
  for(int i = 1; i < nArg; i++) fprintf(p->out, "%s%s", i > 1 ? " " : "", azArg[i]);
  fputc('\n', p->out);
  return 0;
}

/* USAGE: .read FILE
** Run the commands of FILE as a script (lines named in errors). */
int dotRead(ShellState *p, int nArg, char **azArg){
  if( nArg != 2 ){
    shellError(p, ".read: %s (usage: .read FILE)", nArg < 2 ? "missing FILE" : "too many arguments");
    return 1;
  }
  static int depth = 0;
  if( depth >= 16 ){
    shellError(p, ".read %s: files read each other more than 16 deep", azArg[1]);
    return 1;
  }
  FILE *f = fopen(azArg[1], "r");
  if( f == 0 ){
    shellError(p, ".read %s: %s", azArg[1], strerror(errno));
    return 1;
  }
  char *zName = strdup(azArg[1]);
  FILE *in = p->in;
  const char *zInName = p->zInName;
  int interactive = p->interactive;
  int nErr = p->nErr;
  p->in = f;
  p->zInName = zName ? zName : "the file";
  p->interactive = 0;
  depth++;
  int rc = shellProcessInput(p);
  depth--;
  p->in = in;
  p->zInName = zInName;
  p->interactive = interactive;
  fclose(f);
  free(zName);
  /* The script's errors were reported line by line; the .read fails. */
  if( rc == 2 ) return 2;
  return p->nErr > nErr ? 1 : 0;
}

void shellOutputReset(ShellState *p){
  if( p->out != stdout ){
    if( p->outPipe ){
      pclose(p->out);
    }else if( fclose(p->out) != 0 ){
      shellError(p, ".output %s: %s", p->zOutName, strerror(errno));
    }
  }
  p->out = stdout;
  p->outPipe = 0;
  p->outOnce = 0;
  free(p->zOutName);
  p->zOutName = 0;
}

/* USAGE: .output [FILE|'|COMMAND']   and   .once FILE|'|COMMAND'
** Send results to FILE (truncated) or a pipe to COMMAND: from now on
** (.output), or for the next command only (.once).  .output alone goes
** back to standard output. */
int dotOutput(ShellState *p, int nArg, char **azArg){
  int once = strcmp(azArg[0], "once") == 0;
  if( nArg > 2 ){
    shellError(p, ".%s %s: unexpected argument \"%s\" (quote a command: '|sort -n')", azArg[0],
               azArg[1], azArg[2]);
    return 1;
  }
  if( nArg == 1 ){
    if( once ){ shellError(p, ".once: missing FILE (usage: .once FILE|'|COMMAND')"); return 1; }
    shellOutputReset(p);
    return 0;
  }
  const char *z = azArg[1];
  shellOutputReset(p);
  if( strcmp(z, "stdout") == 0 || strcmp(z, "-") == 0 ){
    if( once ) p->outOnce = 1;
    return 0;
  }
  FILE *f;
  fflush(stdout);
  if( z[0] == '|' ){
    f = popen(z + 1, "w");
    p->outPipe = f != 0;
  }else{
    f = fopen(z, "w");
  }
  if( f == 0 ){
    shellError(p, ".%s %s: %s", azArg[0], z, strerror(errno));
    p->outPipe = 0;
    return 1;
  }
  p->out = f;
  p->zOutName = strdup(z);
  p->outOnce = once;
  return 0;
}

/* USAGE: .shell CMD ARGS...   and   .system CMD ARGS...
** Run the command line through /bin/sh; a non-zero status is an error. */
int dotSystem(ShellState *p, int nArg, char **azArg){
  if( nArg < 2 ){ shellError(p, ".%s: missing CMD (usage: .%s CMD ARGS ...)", azArg[0], azArg[0]); return 1; }
  size_t n = 1;
  for(int i = 1; i < nArg; i++) n += strlen(azArg[i]) + 1;
  char *z = malloc(n);
  if( z == 0 ){ shellError(p, ".%s: out of memory", azArg[0]); return 1; }
  z[0] = 0;
  for(int i = 1; i < nArg; i++){
    if( i > 1 ) strcat(z, " ");
    strcat(z, azArg[i]);
  }
  fflush(p->out);
  fflush(stdout);
  int st = system(z);
  int rc = 0;
  if( st == -1 ){
    shellError(p, ".%s %s: %s", azArg[0], z, strerror(errno));
    rc = 1;
  }else if( WIFEXITED(st) && WEXITSTATUS(st) != 0 ){
    shellError(p, ".%s %s: exit status %d", azArg[0], z, WEXITSTATUS(st));
    rc = 1;
  }else if( WIFSIGNALED(st) ){
    shellError(p, ".%s %s: killed by signal %d", azArg[0], z, WTERMSIG(st));
    rc = 1;
  }
  free(z);
  return rc;
}

/* The names of sqlite_schema rows of one type, matching a glob. */
typedef struct NameList { ShellState *p; const char *zPattern; ShellResult r; int n; } NameList;

static int nameRow(void *pCtx, int nCol, char **azVal, char **azName){
  NameList *c = pCtx;
  (void)azName;
  if( nCol < 2 || azVal[0] == 0 ) return 0;
  if( c->zPattern && fnmatch(c->zPattern, azVal[1] ? azVal[1] : "", 0) != 0 ) return 0;
  c->n++;
  return resultAddRow(&c->r, azVal);
}

/* Print the names that ZSQL (rows: name, the name PATTERN must match)
** selects: in list mode in columns, as sqlite3's .tables does; in the
** other modes as a one-column result. */
static int listNames(ShellState *p, const char *zCmd, const char *zSql, const char *zPattern){
  NameList c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.zPattern = zPattern;
  char *azCol[] = { "name" };
  if( resultInit(&c.r, 1, azCol) ){ resultFree(&c.r); shellError(p, "%s: out of memory", zCmd); return 1; }
  resultSetNum(&c.r, 0, 0);
  int rc = pagedb_sql(p->db, zSql, nameRow, &c);
  if( rc ){
    shellError(p, "%s: %s: %s", zCmd, pagedb_errname(rc), pagedb_errmsg(p->db));
    resultFree(&c.r);
    return 1;
  }
  if( p->mode == MODE_LIST ){
    /* sqlite3's layout: names in columns, two blanks apart. */
    size_t w = 0;
    for(int64_t k = 0; k < c.r.nRow; k++){
      size_t n = strlen(c.r.azCell[k]);
      if( n > w ) w = n;
    }
    int perLine = (int)(80 / (w + 2));
    if( perLine < 1 ) perLine = 1;
    int64_t nLine = (c.r.nRow + perLine - 1) / perLine;
    for(int64_t l = 0; l < nLine; l++){
      for(int64_t k = l; k < c.r.nRow; k += nLine){
        int last = k + nLine >= c.r.nRow;
        if( last ) fputs(c.r.azCell[k], p->out);
        else fprintf(p->out, "%-*s", (int)(w + 2), c.r.azCell[k]);
        if( last ) break;
      }
      fputc('\n', p->out);
    }
  }else{
    resultPrint(p, &c.r, p->headers);
  }
  resultFree(&c.r);
  return 0;
}

/* USAGE: .tables [PATTERN]
** The catalog's tables and views (matching the glob PATTERN). */
int dotTables(ShellState *p, int nArg, char **azArg){
  if( nArg > 2 ){ shellError(p, ".tables: unexpected argument \"%s\"", azArg[2]); return 1; }
  if( shellNeedDb(p, ".tables") ) return 1;
  return listNames(p, ".tables", "SELECT name, name FROM sqlite_schema WHERE type IN ('table', 'view')"
                   " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
                   nArg == 2 ? azArg[1] : 0);
}

/* USAGE: .indexes [TABLE]
** The catalog's indexes (of the tables matching the glob TABLE). */
int dotIndexes(ShellState *p, int nArg, char **azArg){
  if( nArg > 2 ){ shellError(p, ".indexes: unexpected argument \"%s\"", azArg[2]); return 1; }
  if( shellNeedDb(p, ".indexes") ) return 1;
  return listNames(p, ".indexes", "SELECT name, tbl_name FROM sqlite_schema WHERE type = 'index'"
                   " ORDER BY name", nArg == 2 ? azArg[1] : 0);
}
