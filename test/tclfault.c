/*
** tclfault.c -- the fault-injecting VFS of the test suite, and the Tcl
** commands that drive it and probe the VFS registry.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pagedb.h"
#include "tclpagedb.h"

/* ------------------------------------------------------------------ */
/* The fault VFS                                                       */
/* ------------------------------------------------------------------ */
/*
** "fault" wraps the default VFS (posix, or the one PAGEDB_VFS names) and
** can, from a chosen call on:
**
**   - fail: the Nth counted call (and, with -persist, every later one)
**     returns an I/O error (or PAGEDB_FULL for writes with -full), as
**     SQLite's do_ioerr_test does with its test VFS;
**   - crash: at the Nth counted call, undo (per 512-byte sector, see
**     -crashmode) the writes made to each file since its last successful
**     xSync and _exit(86) at once, as if the power failed (SQLite's
**     test6.c).  A committed sample whose page was not synced shows up as
**     damaged or missing after the next open.
**
** Counted calls are those whose kind is in the -ops mask, on the files
** -files selects: the data file ("data"), the catalog and its WAL and
** journal ("catalog": the catalog's SQLite I/O goes through pagedb's VFS,
** see src/catvfs.c), or both ("all").  A crash is triggered by a counted
** call only, but the power loss undoes the unsynced writes of every file.
** (Under the "direct" VFS the catalog falls back to "posix", which this
** VFS does not wrap: then no catalog call is counted.)
**
**   pagedb_faultvfs register ?-default?
**   pagedb_faultvfs config ?-ops {read write sync truncate size lock map open}?
**                          ?-files data|catalog|all?
**                          ?-ioerr N? ?-persist BOOL? ?-full BOOL? ?-crash N?
**                          ?-crashmode mix|old|new|garbage?
**   pagedb_faultvfs reset        (disarm, zero the counters)
**   pagedb_faultvfs count        (counted calls so far)
**   pagedb_faultvfs hits         (faults injected so far)
*/
#define FOP_READ   0x01
#define FOP_WRITE  0x02
#define FOP_SYNC   0x04
#define FOP_TRUNC  0x08
#define FOP_SIZE   0x10
#define FOP_LOCK   0x20
#define FOP_MAP    0x40
#define FOP_OPEN   0x80

/* -files */
#define FFILE_DATA    1
#define FFILE_CATALOG 2

/* A write not yet synced: where, and the bytes it replaced (OLD, NOLD
** bytes: the part of the range that was inside the file before). */
typedef struct FaultRange {
  uint64_t off, n;
  unsigned char *old;
  uint64_t nOld;
} FaultRange;

typedef struct FaultFile FaultFile;
struct FaultFile {
  pagedb_file base;            /* first: methods */
  pagedb_file *real;           /* the wrapped VFS's file */
  int plainFd;                 /* the same file opened without O_DIRECT, for
                               ** saving and restoring bytes at any alignment;
                               ** -1 if it could not be opened */
  int injected;                /* the last failure was injected: errno EIO */
  int kind;                    /* FFILE_DATA or FFILE_CATALOG */
  pthread_mutex_t mu;          /* guards aRange */
  FaultRange *aRange;          /* written since the last successful sync */
  int nRange, nAlloc;
  FaultFile *pNext;            /* fv.pFiles */
};

static struct {
  pagedb_vfs vfs;              /* "fault" */
  pagedb_vfs *real;            /* the wrapped VFS */
  int registered;
  pagedb_io_methods methods;   /* built from the real file's at first open */
  int methodsInit;
  atomic_llong count;          /* counted calls */
  atomic_llong ioerrAt;        /* 0: off */
  atomic_int persist;
  atomic_int full;
  atomic_int opsMask;
  atomic_int filesMask;        /* FFILE_* counted */
  atomic_llong crashAt;        /* 0: off */
  int crashMode;               /* 0 mix, 1 old, 2 new, 3 garbage */
  atomic_llong hits;
  pthread_mutex_t mu;          /* guards pFiles and methods */
  FaultFile *pFiles;
} fv = { .mu = PTHREAD_MUTEX_INITIALIZER, .opsMask = 0xff, .filesMask = FFILE_DATA | FFILE_CATALOG };

/* Whether PATH is the catalog (PATH-catalog, -catalog-wal, -catalog-journal). */
static int faultFileKind(const char *path){
  size_t n = strlen(path);
  static const char *azSuffix[] = {"-catalog", "-catalog-wal", "-catalog-journal"};
  int i;
  for(i = 0; i < 3; i++){
    size_t k = strlen(azSuffix[i]);
    if( n >= k && strcmp(path + n - k, azSuffix[i]) == 0 ) return FFILE_CATALOG;
  }
  return FFILE_DATA;
}

/* Whether calls on files of KIND count. */
static int faultCounts(int kind){
  return (atomic_load(&fv.filesMask) & kind) != 0;
}

/*
** Power loss.  Every write not yet synced is undone sector by sector (512
** bytes), in reverse order, according to fv.crashMode: 0 ("mix") keeps or
** undoes each sector as a hash of its offset says, 1 ("old") undoes all,
** 2 ("new") keeps all, 3 ("garbage") overwrites with garbage.  Undoing a
** sector beyond the old end of file writes zeros there (a hole).  Then the
** process ends at once.
*/
static void faultCrash(void){
  FaultFile *f;
  /* No unlock: the process ends here. */
  pthread_mutex_lock(&fv.mu);
  for(f = fv.pFiles; f; f = f->pNext){
    int i;
    pthread_mutex_lock(&f->mu);
    for(i = f->nRange - 1; i >= 0; i--){
      FaultRange *r = &f->aRange[i];
      uint64_t k;
      for(k = 0; k < r->n; k += 512){
        uint64_t m = r->n - k < 512 ? r->n - k : 512;
        unsigned char buf[512];
        int undo;
        switch( fv.crashMode ){
          case 1: undo = 1; break;
          case 2: undo = 0; break;
          case 3: undo = 2; break;
          default: undo = (int)(mix3(0xC4A5, r->off + k, 0) & 1); break;
        }
        if( undo == 0 ) continue;
        if( undo == 2 ){
          memset(buf, (int)(0xA5 ^ ((r->off + k) >> 9)), (size_t)m);
        }else{
          memset(buf, 0, (size_t)m);
          if( k < r->nOld ){
            uint64_t mo = r->nOld - k < m ? r->nOld - k : m;
            memcpy(buf, r->old + k, (size_t)mo);
          }
        }
        /* Through a plain descriptor: a direct (O_DIRECT) file would need
        ** aligned buffers. */
        if( f->plainFd >= 0 ){
          ssize_t wr = pwrite(f->plainFd, buf, (size_t)m, (off_t)(r->off + k));
          (void)wr;
        }
      }
    }
  }
  _exit(86);
}

/* Count a call of kind OP; returns 1 if it must fail. */
static int faultHit(FaultFile *f, int op){
  long long n, at;
  if( !(atomic_load(&fv.opsMask) & op) ) return 0;
  if( f && !faultCounts(f->kind) ) return 0;
  n = atomic_fetch_add(&fv.count, 1) + 1;
  at = atomic_load(&fv.crashAt);
  if( at > 0 && n >= at ) faultCrash();
  at = atomic_load(&fv.ioerrAt);
  if( at > 0 && (n == at || (n > at && atomic_load(&fv.persist))) ){
    atomic_fetch_add(&fv.hits, 1);
    if( f ) f->injected = 1;
    return 1;
  }
  if( f ) f->injected = 0;
  return 0;
}

static int fvClose(pagedb_file *pf){
  FaultFile *f = (FaultFile *)pf;
  FaultFile **pp;
  int rc;
  pthread_mutex_lock(&fv.mu);
  for(pp = &fv.pFiles; *pp; pp = &(*pp)->pNext){
    if( *pp == f ){ *pp = f->pNext; break; }
  }
  pthread_mutex_unlock(&fv.mu);
  rc = f->real->pMethods->xClose(f->real);
  free(f->real);
  if( f->plainFd >= 0 ) close(f->plainFd);
  f->plainFd = -1;
  {
    int i;
    for(i = 0; i < f->nRange; i++) free(f->aRange[i].old);
  }
  free(f->aRange);
  pthread_mutex_destroy(&f->mu);
  f->base.pMethods = 0;
  return rc;
}

static int fvRead(pagedb_file *pf, void *buf, size_t n, uint64_t off){
  FaultFile *f = (FaultFile *)pf;
  if( faultHit(f, FOP_READ) ) return PAGEDB_IOERR_READ;
  return f->real->pMethods->xRead(f->real, buf, n, off);
}

/* What a write of N bytes at OFF is about to replace, kept to undo it at a
** power loss (*POLD NULL when no crash is armed). */
static void faultSaveOld(FaultFile *f, size_t n, uint64_t off, unsigned char **pOld, uint64_t *nOld){
  uint64_t size = 0;
  *pOld = 0;
  *nOld = 0;
  if( atomic_load(&fv.crashAt) <= 0 || n == 0 || f->plainFd < 0 ) return;
  if( f->real->pMethods->xFileSize(f->real, &size) != PAGEDB_OK || size <= off ) return;
  *nOld = size - off < n ? size - off : n;
  *pOld = malloc((size_t)*nOld);
  if( *pOld ){
    ssize_t got = pread(f->plainFd, *pOld, (size_t)*nOld, (off_t)off);
    if( got < 0 ) got = 0;
    if( (uint64_t)got < *nOld ) memset(*pOld + got, 0, (size_t)(*nOld - (uint64_t)got));
  }else{
    *nOld = 0;
  }
}

/* Remember a write that succeeded as not yet synced (takes POLD). */
static void faultRecord(FaultFile *f, size_t n, uint64_t off, unsigned char *pOld, uint64_t nOld){
  if( n > 0 ){
    pthread_mutex_lock(&f->mu);
    if( f->nRange >= f->nAlloc ){
      int nNew = f->nAlloc ? f->nAlloc * 2 : 64;
      FaultRange *a = realloc(f->aRange, (size_t)nNew * sizeof(FaultRange));
      if( a ){ f->aRange = a; f->nAlloc = nNew; }
    }
    if( f->nRange < f->nAlloc ){
      f->aRange[f->nRange].off = off;
      f->aRange[f->nRange].n = n;
      f->aRange[f->nRange].old = pOld;
      f->aRange[f->nRange].nOld = nOld;
      f->nRange++;
      pOld = 0;
    }
    pthread_mutex_unlock(&f->mu);
  }
  free(pOld);
}

static int faultWriteErr(void){
  return atomic_load(&fv.full) ? PAGEDB_FULL : PAGEDB_IOERR_WRITE;
}

static int fvWrite(pagedb_file *pf, const void *buf, size_t n, uint64_t off){
  FaultFile *f = (FaultFile *)pf;
  unsigned char *pOld;
  uint64_t nOld;
  int rc;
  if( faultHit(f, FOP_WRITE) ) return faultWriteErr();
  faultSaveOld(f, n, off, &pOld, &nOld);
  rc = f->real->pMethods->xWrite(f->real, buf, n, off);
  if( rc == PAGEDB_OK ) faultRecord(f, n, off, pOld, nOld);
  else free(pOld);
  return rc;
}

/*
** Asynchronous writes wrap the real file's.  An injected fault is reported
** by a blocking wait, as a slow failed completion would be; the bytes
** a write replaces are saved when it starts and it counts as unsynced once
** it has landed.
*/
typedef struct FaultAio {
  void *pReal;                 /* the real file's state of the write */
  int rc;                      /* PAGEDB_OK, or the result to report */
  unsigned char *pOld;
  uint64_t nOld;
} FaultAio;

static int fvWriteStart(pagedb_file *pf, pagedb_aio *a){
  FaultFile *f = (FaultFile *)pf;
  FaultAio *x = calloc(1, sizeof *x);
  a->pPriv = 0;
  if( x == 0 ) return a->rc = fvWrite(pf, a->buf, a->n, a->off);
  if( faultHit(f, FOP_WRITE) ){
    x->rc = faultWriteErr();
  }else{
    faultSaveOld(f, a->n, a->off, &x->pOld, &x->nOld);
    x->rc = f->real->pMethods->xWriteStart(f->real, a);
    x->pReal = a->pPriv;
  }
  a->pPriv = x;
  return PAGEDB_OK;
}

static int fvWriteWait(pagedb_file *pf, pagedb_aio *a, int wait){
  FaultFile *f = (FaultFile *)pf;
  FaultAio *x = a->pPriv;
  int rc;
  if( x == 0 ) return a->rc;
  if( x->rc != PAGEDB_OK ){
    /* An injected failure stays "in flight" until waited for, so that it
    ** is met where a slow failing write would be. */
    if( !wait ) return PAGEDB_BUSY;
    rc = x->rc;
  }else{
    a->pPriv = x->pReal;
    rc = f->real->pMethods->xWriteWait(f->real, a, wait);
    x->pReal = a->pPriv;
    a->pPriv = x;
    if( rc == PAGEDB_BUSY ) return rc;
  }
  if( rc == PAGEDB_OK ) faultRecord(f, a->n, a->off, x->pOld, x->nOld);
  else free(x->pOld);
  free(x);
  a->pPriv = 0;
  return a->rc = rc;
}

static int fvTruncate(pagedb_file *pf, uint64_t size){
  FaultFile *f = (FaultFile *)pf;
  if( faultHit(f, FOP_TRUNC) ) return PAGEDB_IOERR_TRUNCATE;
  return f->real->pMethods->xTruncate(f->real, size);
}

static int fvSync(pagedb_file *pf, int flags){
  FaultFile *f = (FaultFile *)pf;
  int nBefore, rc;
  if( faultHit(f, FOP_SYNC) ) return PAGEDB_IOERR_SYNC;
  /* Only the writes made before the sync started are known to be synced. */
  pthread_mutex_lock(&f->mu);
  nBefore = f->nRange;
  pthread_mutex_unlock(&f->mu);
  rc = f->real->pMethods->xSync(f->real, flags);
  if( rc == PAGEDB_OK ){
    int i;
    pthread_mutex_lock(&f->mu);
    for(i = 0; i < nBefore; i++) free(f->aRange[i].old);
    if( f->nRange > nBefore ){
      memmove(f->aRange, f->aRange + nBefore, (size_t)(f->nRange - nBefore) * sizeof(FaultRange));
    }
    f->nRange -= nBefore;
    pthread_mutex_unlock(&f->mu);
  }
  return rc;
}

static int fvFileSize(pagedb_file *pf, uint64_t *size){
  FaultFile *f = (FaultFile *)pf;
  if( faultHit(f, FOP_SIZE) ) return PAGEDB_IOERR_FSTAT;
  return f->real->pMethods->xFileSize(f->real, size);
}

static int fvLock(pagedb_file *pf, int level){
  FaultFile *f = (FaultFile *)pf;
  if( faultHit(f, FOP_LOCK) ) return PAGEDB_IOERR_LOCK;
  return f->real->pMethods->xLock(f->real, level);
}

static int fvSectorSize(pagedb_file *pf){
  FaultFile *f = (FaultFile *)pf;
  return f->real->pMethods->xSectorSize(f->real);
}

static int fvDeviceCharacteristics(pagedb_file *pf){
  FaultFile *f = (FaultFile *)pf;
  return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static int fvMap(pagedb_file *pf, size_t n, const void **p){
  FaultFile *f = (FaultFile *)pf;
  if( faultHit(f, FOP_MAP) ) return PAGEDB_IOERR_MMAP;
  return f->real->pMethods->xMap(f->real, n, p);
}

static int fvUnmap(pagedb_file *pf, const void *p, size_t n){
  FaultFile *f = (FaultFile *)pf;
  return f->real->pMethods->xUnmap(f->real, p, n);
}

static int fvReadBatch(pagedb_file *pf, pagedb_iovec *reqs, int n){
  FaultFile *f = (FaultFile *)pf;
  if( faultHit(f, FOP_READ) ){
    int i;
    for(i = 0; i < n; i++) reqs[i].rc = PAGEDB_IOERR_READ;
    return PAGEDB_IOERR_READ;
  }
  return f->real->pMethods->xReadBatch(f->real, reqs, n);
}

static int fvAdvise(pagedb_file *pf, uint64_t off, uint64_t n, int hint){
  FaultFile *f = (FaultFile *)pf;
  return f->real->pMethods->xAdvise(f->real, off, n, hint);
}

static int fvLastErrno(pagedb_file *pf){
  FaultFile *f = (FaultFile *)pf;
  if( f->injected ) return EIO;
  return f->real->pMethods->xLastErrno ? f->real->pMethods->xLastErrno(f->real) : 0;
}

/* Our methods: a wrapper for each method the real file has, NULL for the
** ones it leaves NULL (so the core's defaults apply as they would). */
static void fvInitMethods(const pagedb_io_methods *r){
  pagedb_io_methods *m = &fv.methods;
  if( fv.methodsInit ) return;
  m->iVersion = r->iVersion;
  m->xClose = fvClose;
  m->xRead = r->xRead ? fvRead : 0;
  m->xWrite = r->xWrite ? fvWrite : 0;
  m->xTruncate = r->xTruncate ? fvTruncate : 0;
  m->xSync = r->xSync ? fvSync : 0;
  m->xFileSize = r->xFileSize ? fvFileSize : 0;
  m->xLock = r->xLock ? fvLock : 0;
  m->xSectorSize = r->xSectorSize ? fvSectorSize : 0;
  m->xDeviceCharacteristics = r->xDeviceCharacteristics ? fvDeviceCharacteristics : 0;
  m->xMap = r->xMap ? fvMap : 0;
  m->xUnmap = r->xUnmap ? fvUnmap : 0;
  m->xReadBatch = r->xReadBatch ? fvReadBatch : 0;
  m->xAdvise = r->xAdvise ? fvAdvise : 0;
  m->xLastErrno = fvLastErrno;
  m->xWriteStart = r->iVersion >= 2 && r->xWriteStart ? fvWriteStart : 0;
  m->xWriteWait = r->iVersion >= 2 && r->xWriteWait ? fvWriteWait : 0;
  fv.methodsInit = 1;
}

static int fvOpen(pagedb_vfs *vfs, const char *path, pagedb_file *pf, int flags){
  FaultFile *f = (FaultFile *)pf;
  pagedb_file *real;
  int rc;
  if( faultCounts(faultFileKind(path)) && faultHit(0, FOP_OPEN) ) return PAGEDB_CANTOPEN;
  real = calloc(1, (size_t)fv.real->szFile);
  if( real == 0 ) return PAGEDB_NOMEM;
  rc = fv.real->xOpen(fv.real, path, real, flags);
  if( rc != PAGEDB_OK || real->pMethods == 0 ){
    free(real);
    return rc != PAGEDB_OK ? rc : PAGEDB_CANTOPEN;
  }
  pthread_mutex_init(&f->mu, 0);
  f->real = real;
  f->kind = faultFileKind(path);
  f->plainFd = open(path, ((flags & PAGEDB_VFS_READWRITE) ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  pthread_mutex_lock(&fv.mu);
  fvInitMethods(real->pMethods);
  f->pNext = fv.pFiles;
  fv.pFiles = f;
  pthread_mutex_unlock(&fv.mu);
  f->base.pMethods = &fv.methods;
  return PAGEDB_OK;
}

static int fvDelete(pagedb_vfs *vfs, const char *path, int syncDir){
  return fv.real->xDelete(fv.real, path, syncDir);
}

static int fvAccess(pagedb_vfs *vfs, const char *path, int *exists){
  return fv.real->xAccess(fv.real, path, exists);
}

static int fvSyncDir(pagedb_vfs *vfs, const char *path){
  if( faultCounts(faultFileKind(path)) && faultHit(0, FOP_SYNC) ) return PAGEDB_IOERR_SYNC;
  return fv.real->xSyncDir ? fv.real->xSyncDir(fv.real, path) : PAGEDB_OK;
}

static int faultvfsCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  static const char *azSub[] = {"register", "config", "reset", "count", "hits",
                                 "unregister", 0};
  enum { F_REGISTER, F_CONFIG, F_RESET, F_COUNT, F_HITS, F_UNREGISTER };
  int iSub, i;
  if( objc < 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "SUBCOMMAND ...");
    return TCL_ERROR;
  }
  if( Tcl_GetIndexFromObj(interp, objv[1], azSub, "subcommand", 0, &iSub) ) return TCL_ERROR;
  switch( iSub ){
    case F_REGISTER: {
      int makeDflt = objc > 2 && strcmp(Tcl_GetString(objv[2]), "-default") == 0;
      int rc;
      if( !fv.registered ){
        /* The default, unless PAGEDB_VFS names this one (not registered
        ** yet): then posix. */
        fv.real = pagedb_vfs_find(0);
        if( fv.real == 0 ) fv.real = pagedb_vfs_find("posix");
        if( fv.real == 0 ) return pdbError(interp, PAGEDB_ERROR, "no default VFS to wrap");
        fv.vfs.iVersion = 1;
        fv.vfs.szFile = (int)sizeof(FaultFile);
        fv.vfs.zName = "fault";
        fv.vfs.xOpen = fvOpen;
        fv.vfs.xDelete = fvDelete;
        fv.vfs.xAccess = fvAccess;
        fv.vfs.xSyncDir = fvSyncDir;
      }
      rc = pagedb_vfs_register(&fv.vfs, makeDflt);
      if( rc != PAGEDB_OK ) return pdbError(interp, rc, "pagedb_vfs_register failed");
      fv.registered = 1;
      Tcl_SetObjResult(interp, Tcl_NewStringObj(fv.real->zName, -1));
      return TCL_OK;
    }
    case F_CONFIG:
      for(i = 2; i + 1 < objc; i += 2){
        const char *z = Tcl_GetString(objv[i]);
        Tcl_WideInt w;
        if( strcmp(z, "-crashmode") == 0 ){
          static const char *azMode[] = {"mix", "old", "new", "garbage", 0};
          if( Tcl_GetIndexFromObj(interp, objv[i+1], azMode, "crash mode", 0, &fv.crashMode) ){
            return TCL_ERROR;
          }
          continue;
        }
        if( strcmp(z, "-ops") == 0 ){
          static const char *azOp[] = {"read", "write", "sync", "truncate", "size", "lock",
                                       "map", "open", "all", 0};
          Tcl_Obj **a;
          int n, k, mask = 0, iOp;
          if( Tcl_ListObjGetElements(interp, objv[i+1], &n, &a) ) return TCL_ERROR;
          for(k = 0; k < n; k++){
            if( Tcl_GetIndexFromObj(interp, a[k], azOp, "op", 0, &iOp) ) return TCL_ERROR;
            mask |= iOp == 8 ? 0xff : (1 << iOp);
          }
          atomic_store(&fv.opsMask, mask);
          continue;
        }
        if( strcmp(z, "-files") == 0 ){
          static const char *azFiles[] = {"data", "catalog", "all", 0};
          int iFiles;
          if( Tcl_GetIndexFromObj(interp, objv[i+1], azFiles, "files", 0, &iFiles) ) return TCL_ERROR;
          atomic_store(&fv.filesMask, iFiles + 1);
          continue;
        }
        if( Tcl_GetWideIntFromObj(interp, objv[i+1], &w) ) return TCL_ERROR;
        if( strcmp(z, "-ioerr") == 0 ) atomic_store(&fv.ioerrAt, (long long)w);
        else if( strcmp(z, "-persist") == 0 ) atomic_store(&fv.persist, w != 0);
        else if( strcmp(z, "-full") == 0 ) atomic_store(&fv.full, w != 0);
        else if( strcmp(z, "-crash") == 0 ) atomic_store(&fv.crashAt, (long long)w);
        else{
          Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad option \"%s\": must be -ops, -files, "
                                                 "-ioerr, -persist, -full or -crash", z));
          return TCL_ERROR;
        }
      }
      if( i < objc ){
        Tcl_SetObjResult(interp, Tcl_NewStringObj("options come in pairs", -1));
        return TCL_ERROR;
      }
      return TCL_OK;
    case F_RESET:
      atomic_store(&fv.ioerrAt, 0);
      atomic_store(&fv.crashAt, 0);
      fv.crashMode = 0;
      atomic_store(&fv.persist, 0);
      atomic_store(&fv.full, 0);
      atomic_store(&fv.count, 0);
      atomic_store(&fv.hits, 0);
      atomic_store(&fv.opsMask, 0xff);
      atomic_store(&fv.filesMask, FFILE_DATA | FFILE_CATALOG);
      return TCL_OK;
    case F_COUNT:
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj(atomic_load(&fv.count)));
      return TCL_OK;
    case F_HITS:
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj(atomic_load(&fv.hits)));
      return TCL_OK;
    case F_UNREGISTER: {
      int rc = pagedb_vfs_unregister(&fv.vfs);
      if( rc != PAGEDB_OK ) return pdbError(interp, rc, "pagedb_vfs_unregister failed");
      return TCL_OK;
    }
  }
  return TCL_OK;
}

/* pagedb_vfs_find ?NAME?: the name of the VFS found ("" if none). */
static int vfsFindCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  pagedb_vfs *v;
  if( objc > 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "?NAME?");
    return TCL_ERROR;
  }
  v = pagedb_vfs_find(objc == 2 ? Tcl_GetString(objv[1]) : 0);
  Tcl_SetObjResult(interp, Tcl_NewStringObj(v && v->zName ? v->zName : "", -1));
  return TCL_OK;
}

/* pagedb_vfs_misuse: the results of registering bad VFS structs (a NULL
** pointer, no name, iVersion 0), as a list of code names. */
static int vfsMisuseCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  static pagedb_vfs noName, noVersion;
  Tcl_Obj *pList = Tcl_NewObj();
  noName = fv.vfs;
  noName.iVersion = 1;
  noName.zName = 0;
  noVersion = fv.vfs;
  noVersion.iVersion = 0;
  noVersion.zName = "badversion";
  noName.szFile = noVersion.szFile = (int)sizeof(FaultFile);
  noName.xOpen = noVersion.xOpen = fvOpen;
  Tcl_ListObjAppendElement(0, pList, Tcl_NewStringObj(pagedb_errname(pagedb_vfs_register(0, 0)), -1));
  Tcl_ListObjAppendElement(0, pList, Tcl_NewStringObj(pagedb_errname(pagedb_vfs_register(&noName, 0)), -1));
  Tcl_ListObjAppendElement(0, pList, Tcl_NewStringObj(pagedb_errname(pagedb_vfs_register(&noVersion, 0)), -1));
  Tcl_ListObjAppendElement(0, pList, Tcl_NewStringObj(pagedb_vfs_find("badversion") ? "found" : "", -1));
  Tcl_SetObjResult(interp, pList);
  return TCL_OK;
}

/* pagedb_vfs_list ?DIR?: {NAME CODE REASON} for every registered VFS, with
** pagedb_vfs_check's verdict for DIR. */
static int vfsListCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  Tcl_Obj *pList = Tcl_NewObj();
  pagedb_vfs *v;
  if( objc > 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "?DIR?");
    return TCL_ERROR;
  }
  for(v = pagedb_vfs_next(0); v; v = pagedb_vfs_next(v)){
    char why[512];
    int rc = pagedb_vfs_check(v, objc == 2 ? Tcl_GetString(objv[1]) : 0, why, sizeof why);
    Tcl_Obj *e = Tcl_NewObj();
    Tcl_ListObjAppendElement(0, e, Tcl_NewStringObj(v->zName, -1));
    Tcl_ListObjAppendElement(0, e, Tcl_NewStringObj(pagedb_errname(rc), -1));
    Tcl_ListObjAppendElement(0, e, Tcl_NewStringObj(why, -1));
    Tcl_ListObjAppendElement(0, pList, e);
  }
  Tcl_SetObjResult(interp, pList);
  return TCL_OK;
}

/* pagedb_vfs_builtin: the backends this build compiled in (configure
** leaves io_uring out without liburing). */
static int vfsBuiltinCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
#if PAGEDB_HAVE_URING
  Tcl_SetObjResult(interp, Tcl_NewStringObj("direct io_uring posix", -1));
#else
  Tcl_SetObjResult(interp, Tcl_NewStringObj("direct posix", -1));
#endif
  return TCL_OK;
}

void Tclfault_Init(Tcl_Interp *interp){
  Tcl_CreateObjCommand(interp, "pagedb_vfs_list", vfsListCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_vfs_builtin", vfsBuiltinCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_faultvfs", faultvfsCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_vfs_find", vfsFindCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_vfs_misuse", vfsMisuseCmd, 0, 0);
}
