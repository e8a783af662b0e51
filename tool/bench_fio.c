/*
** bench_fio.c -- the outside reference: fio reading the raw file with
** O_DIRECT through io_uring, and a JSON reader just large enough for its
** report.
*/
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/*
** fio's options for the reference, besides the file and its size: 64 KiB
** random reads with O_DIRECT through io_uring at depth 32, each block once
** (fio's random map), never writing.  --runtime only bounds a slow disk.
** --invalidate=0: fio would otherwise drop the raw file from the page cache,
** and the warm raw passes of the next repetition would read it cold.
*/
const char *const azFioOpt[] = {
  "--name=randread", "--readonly", "--rw=randread", "--bs=64k", "--direct=1",
  "--ioengine=io_uring", "--iodepth=32", "--invalidate=0", "--runtime=120",
  "--output-format=json"
};
const int nFioOpt = (int)(sizeof(azFioOpt) / sizeof(azFioOpt[0]));
#define N_FIO_OPT (int)(sizeof(azFioOpt) / sizeof(azFioOpt[0]))

/*
** A JSON reader just large enough for fio's report, so that the tool needs
** no JSON library: each function takes a pointer to a value (white space
** before it allowed) and returns NULL when the text is not what it expects.
** Keys are compared as written, escapes and all; fio's have none.
*/
static const char *jsonWs(const char *p){
  while( *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' ) p++;
  return p;
}

/* Just past the value at P. */
static const char *jsonSkip(const char *p){
  p = jsonWs(p);
  if( *p == '"' ){
    for(p++; *p && *p != '"'; p++){
      if( *p == '\\' && p[1] ) p++;
    }
    return *p ? p + 1 : 0;
  }
  if( *p == '{' || *p == '[' ){
    char cEnd = *p == '{' ? '}' : ']';
    p = jsonWs(p + 1);
    if( *p == cEnd ) return p + 1;
    for(;;){
      if( cEnd == '}' ){            /* a key and its colon first */
        if( *p != '"' || (p = jsonSkip(p)) == 0 ) return 0;
        p = jsonWs(p);
        if( *p++ != ':' ) return 0;
      }
      if( (p = jsonSkip(p)) == 0 ) return 0;
      p = jsonWs(p);
      if( *p == cEnd ) return p + 1;
      if( *p++ != ',' ) return 0;
      p = jsonWs(p);
    }
  }
  const char *p0 = p;               /* a number, true, false or null */
  while( *p && strchr("+-.0123456789eEtrufalsn", *p) ) p++;
  return p > p0 ? p : 0;
}

/* The value of member zKey of the object at P. */
static const char *jsonMember(const char *p, const char *zKey){
  size_t n = strlen(zKey);
  if( p == 0 || *(p = jsonWs(p)) != '{' ) return 0;
  p = jsonWs(p + 1);
  while( *p == '"' ){
    const char *zK = p + 1, *pEnd = jsonSkip(p);
    if( pEnd == 0 ) return 0;
    p = jsonWs(pEnd);
    if( *p++ != ':' ) return 0;
    if( (size_t)(pEnd - 1 - zK) == n && memcmp(zK, zKey, n) == 0 ) return jsonWs(p);
    if( (p = jsonSkip(p)) == 0 ) return 0;
    p = jsonWs(p);
    if( *p++ != ',' ) return 0;
    p = jsonWs(p);
  }
  return 0;
}

/* Element K of the array at P. */
static const char *jsonItem(const char *p, int k){
  if( p == 0 || *(p = jsonWs(p)) != '[' ) return 0;
  p = jsonWs(p + 1);
  if( *p == ']' ) return 0;
  for(int i = 0; i < k; i++){
    if( (p = jsonSkip(p)) == 0 ) return 0;
    p = jsonWs(p);
    if( *p++ != ',' ) return 0;
  }
  return jsonWs(p);
}

/* The number at P, or -1 (fio's figures are never negative). */
static double jsonNum(const char *p){
  char *pEnd;
  if( p == 0 ) return -1;
  double v = strtod(p, &pEnd);
  return pEnd > p ? v : -1;
}

/* The whole of file zPath, NUL-terminated, or NULL. */
static char *readFile(const char *zPath){
  int fd = open(zPath, O_RDONLY);
  struct stat st;
  char *z = 0;
  if( fd >= 0 && fstat(fd, &st) == 0 && (z = malloc((size_t)st.st_size + 1)) != 0 ){
    if( ioAll(fd, (uint8_t *)z, (size_t)st.st_size, 0, 0) ){ free(z); z = 0; }
    else z[st.st_size] = 0;
  }
  if( fd >= 0 ) close(fd);
  return z;
}

/* The first executable zName on $PATH into zOut; 0 if there is one. */
int findOnPath(const char *zName, char *zOut, size_t n){
  const char *zPath = getenv("PATH");
  while( zPath && *zPath ){
    size_t k = strcspn(zPath, ":");
    snprintf(zOut, n, "%.*s/%s", (int)k, k ? zPath : ".", zName);
    if( access(zOut, X_OK) == 0 ) return 0;
    zPath += k + (zPath[k] == ':');
  }
  zOut[0] = 0;
  return -1;
}

/*
** The fio reference: fio reads the raw file's whole 64 KiB blocks once each
** in random order (azFioOpt).  Returns the seconds this workload's bytes
** take at fio's rate (its JSON's read.bw_bytes, or io_bytes over runtime),
** so that it prints and compares as the other rows; -1 if fio failed, the
** reason in r->zFioWhy.  fio's failure is not pagedb's: not counted as one.
*/
double rawFio(Run *r){
  Bench *b = r->b;
  uint64_t size = r->nByte & ~(uint64_t)(FIO_BS - 1);
  char zFile[2 * PATH_MAX + 80], zSize[64], zIoSize[64], zOut[PATH_MAX + 96];
  char *azArg[N_FIO_OPT + 6];
  int nArg = 0;
  if( size == 0 ){
    snprintf(r->zFioWhy, sizeof r->zFioWhy, "the raw file is smaller than one 64 KiB block");
    return -1;
  }
  /* fio splits --filename at colons unless they are escaped. */
  size_t j = (size_t)snprintf(zFile, sizeof zFile, "--filename=");
  for(const char *z = r->zRaw; *z && j + 2 < sizeof zFile; z++){
    if( *z == ':' ) zFile[j++] = '\\';
    zFile[j++] = *z;
  }
  zFile[j] = 0;
  snprintf(zSize, sizeof zSize, "--size=%llu", (unsigned long long)size);
  snprintf(zIoSize, sizeof zIoSize, "--io_size=%llu", (unsigned long long)size);
  snprintf(zOut, sizeof zOut, "--output=%s.fio.json", r->zRaw);
  azArg[nArg++] = "fio";
  for(int k = 0; k < N_FIO_OPT; k++) azArg[nArg++] = (char *)azFioOpt[k];
  azArg[nArg++] = zFile;
  azArg[nArg++] = zSize;
  azArg[nArg++] = zIoSize;
  azArg[nArg++] = zOut;
  azArg[nArg] = 0;

  /* Its messages (stdout and stderr) come through a pipe, for the reason. */
  dropCaches(b);
  int aFd[2];
  pid_t pid;
  posix_spawn_file_actions_t fa;
  if( pipe(aFd) ){
    snprintf(r->zFioWhy, sizeof r->zFioWhy, "pipe: %s", strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, aFd[0]);
  posix_spawn_file_actions_adddup2(&fa, aFd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, aFd[1], 2);
  posix_spawn_file_actions_addclose(&fa, aFd[1]);
  int e = posix_spawn(&pid, b->zFio, &fa, 0, azArg, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(aFd[1]);
  char zMsg[512];
  size_t nMsg = 0;
  ssize_t k;
  char buf[4096];
  while( (k = read(aFd[0], buf, sizeof buf)) != 0 ){
    if( k < 0 && errno == EINTR ) continue;
    if( k < 0 ) break;
    size_t m = (size_t)k < sizeof zMsg - 1 - nMsg ? (size_t)k : sizeof zMsg - 1 - nMsg;
    memcpy(zMsg + nMsg, buf, m);
    nMsg += m;
  }
  close(aFd[0]);
  zMsg[nMsg] = 0;
  zMsg[strcspn(zMsg, "\n")] = 0;
  int status = 0;
  if( e ){
    snprintf(r->zFioWhy, sizeof r->zFioWhy, "posix_spawn %.300s: %s", b->zFio, strerror(e));
    return -1;
  }
  while( waitpid(pid, &status, 0) < 0 && errno == EINTR ){}
  char *zJson = readFile(zOut + strlen("--output="));
  unlink(zOut + strlen("--output="));
  const char *pJob = zJson ? jsonItem(jsonMember(strchr(zJson, '{'), "jobs"), 0) : 0;
  const char *pRead = jsonMember(pJob, "read");
  double bw = jsonNum(jsonMember(pRead, "bw_bytes"));
  if( bw <= 0 ){
    double ms = jsonNum(jsonMember(pRead, "runtime"));
    bw = ms > 0 ? jsonNum(jsonMember(pRead, "io_bytes")) * 1000.0 / ms : -1;
  }
  double err = jsonNum(jsonMember(pJob, "error"));
  free(zJson);
  if( !WIFEXITED(status) || WEXITSTATUS(status) != 0 || pJob == 0 || err != 0 || bw <= 0 ){
    snprintf(r->zFioWhy, sizeof r->zFioWhy, "fio %s %d, %s%s%.400s",
             WIFEXITED(status) ? "exit status" : "killed by signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
             pJob == 0 ? "no JSON report" : err != 0 ? "the job reports an error" : "no read rate",
             zMsg[0] ? ": " : "", zMsg);
    return -1;
  }
  return (double)r->nByte / bw;
}
