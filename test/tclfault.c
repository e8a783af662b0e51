/*
** tclfault.c -- the fault-injecting VFS of the test suite, and the Tcl
** commands that drive it and probe the VFS registry.
*/
#define _GNU_SOURCE            /* SEEK_DATA, SEEK_HOLE, a writer-first rwlock */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
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
**     SQLite's do_ioerr_test does with its test VFS; with -short a failing
**     write first writes half its bytes (a disk filling up mid-write);
**     EINTR and short transfers below the methods, which the backends
**     retry, are tclsyscall.c's;
**   - crash: lose power (below) at the Nth counted call (-crash N), or
**     just before the Nth sync call (xSync or xSyncDir of a file -files
**     selects, counted whatever -ops says) would reach the file
**     (-crashsync N: a commit syncs the data and the index files at once,
**     in either order, so a test that wants one file's sync selects it), or just
**     after it succeeded, before its caller hears of it (-crashsync N
**     -crashafter 1): what that sync covered is then durable, and the
**     caller never acknowledges anything on the strength of it.
**
** Counted calls are those whose kind is in the -ops mask, on the files
** -files selects: the data file ("data"), the catalog and its WAL and
** journal ("catalog": the catalog's SQLite I/O goes through pagedb's VFS,
** see src/catvfs.c), the index file NAME-index and its rewrite
** NAME-index.new ("index"), or all three ("all", the default).  -crash N counts these calls only,
** but the power loss undoes the unsynced writes of every file
** opened through this VFS, whatever it holds.
** (Under the "direct" VFS the catalog falls back to "posix", which this
** VFS does not wrap: then no catalog call is counted.)
**
**   pagedb_faultvfs register ?-default?
**   pagedb_faultvfs config ?-ops {read write sync truncate size lock map open}?
**                          ?-files data|catalog|index|all?
**                          ?-ioerr N? ?-persist BOOL? ?-full BOOL? ?-short BOOL?
**                          ?-crash N?
**                          ?-crashsync N? ?-crashafter BOOL?
**                          ?-crashmode mix|old|new|garbage?
**                          ?-seed S? ?-device plain|atomic4k|safeappend?
**                          ?-snapshot DIR? ?-snapshotfirst K? ?-snapshotstep N?
**   pagedb_faultvfs reset        (disarm, zero the counters)
**   pagedb_faultvfs count        (counted calls so far)
**   pagedb_faultvfs syncs        (sync calls so far, of the files -files selects)
**   pagedb_faultvfs hits         (faults injected so far)
**
** POWER LOSS (SQLite's test6.c, on a file that is written through at once
** and undone afterwards, since readers map it): while a crash is armed,
** every write keeps the bytes it replaced until its file is synced.  At
** the crash each write not yet synced, in every file (closed ones too,
** by path), newest first, meets its fate by -crashmode:
**
**   mix      chosen by a hash of -seed and the write: applied, dropped, or
**            torn: each of its sectors (512 bytes, absolute) new, old or
**            garbage;
**   old      dropped; new: applied; garbage: every sector garbage.
**
** and the file's size is what it was at its last sync ("old"), what it is
** now ("new", "garbage") or, for "mix", either or a sector in between, by
** the seed.  A dropped write past the old end leaves zeros (a hole).
** Garbage covers only the bytes the write covered (power-safe overwrite,
** as SQLite assumes: a write never damages bytes it did not cover).
** Truncation is taken as durable at once.  -device narrows the outcomes
** as test6.c's device characteristics do:
**
**   atomic4k    4 KiB-aligned blocks instead of sectors, each all new or
**               all old: never garbage;
**   safeappend  bytes past the size at the last sync are never garbage
**               or old: the size grows only over data that landed, so
**               whatever size survives, what lies below it was written.
**
** Then the process ends at once with _exit(86).
**
** SNAPSHOTS (-snapshot DIR, "" for none): a power loss at every sync
** point of one run instead of one per run.  At each sync -files selects
** (just before it, or with -crashafter just after it), the files of the
** dataset being written (its data file PATH and every PATH* beside it:
** catalog, WAL, WAL index, index file) are copied into DIR/K/ (K the
** sync's number; with -snapshotfirst and -snapshotstep, only at syncs K,
** K+N, ...), every unsynced write meets its fate in the copies
** exactly as a crash there would give it in the originals (the same
** -crashmode, -seed and -device; the same surviving sizes), and the
** process writes "snapshot K" on its standard output, then waits for a
** line on its standard input (the checker is done with DIR/K) before it
** goes on: the copies are the state a power loss at sync K would leave,
** and the run continues to the next sync point.  While a snapshot is
** taken no other thread writes, truncates, syncs or deletes through this
** VFS (snapLock), so that the copies and the unsynced writes agree.
** The acknowledgements written on the same output before "snapshot K"
** are those the crash would have let through.  A test checks the crash
** states of a whole run for the cost of one run (test/powerloss.test),
** where one process per state would replay the run up to each sync.
** A snapshot that cannot be taken ends the process with status 87 and a
** line on standard error saying which, what and why.
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
#define FFILE_INDEX   4   /* NAME-index and NAME-index.new (src/dindex.c) */
#define FFILE_ALL     (FFILE_DATA | FFILE_CATALOG | FFILE_INDEX)

/* A write not yet synced: where, and the bytes it replaced (OLD, NOLD
** bytes: the part of the range that was inside the file before). */
typedef struct FaultRange {
  uint64_t off, n;
  unsigned char *old;
  uint64_t nOld;
} FaultRange;

/* A file's writes not yet synced, and where to undo them at a crash. */
typedef struct FaultImage {
  char *zPath;                 /* to reopen it once closed */
  int plainFd;                 /* the same file opened without O_DIRECT, for
                               ** saving and restoring bytes at any alignment;
                               ** -1 if it could not be opened */
  uint64_t syncedSize;         /* its size after the last successful sync */
  FaultRange *aRange;          /* written since the last successful sync */
  int nRange, nAlloc;
} FaultImage;

/* A closed file whose unsynced writes a crash must still undo. */
typedef struct FaultGhost {
  FaultImage img;
  struct FaultGhost *pNext;
} FaultGhost;

typedef struct FaultFile FaultFile;
struct FaultFile {
  pagedb_file base;            /* first: methods */
  pagedb_file *real;           /* the wrapped VFS's file */
  int injected;                /* the last failure was injected: errno EIO */
  int kind;                    /* FFILE_DATA, FFILE_CATALOG or FFILE_INDEX */
  pthread_mutex_t mu;          /* guards img */
  FaultImage img;
  FaultFile *pNext;            /* fv.pFiles */
};

#define FDEV_PLAIN      0
#define FDEV_ATOMIC4K   1
#define FDEV_SAFEAPPEND 2

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
  atomic_int shortWrite;       /* -short: a failed write lands half first */
  atomic_int opsMask;
  atomic_int filesMask;        /* FFILE_* counted */
  atomic_llong crashAt;        /* 0: off */
  atomic_llong crashSyncAt;    /* 0: off */
  atomic_int crashAfter;       /* -crashafter: crash once that sync is done */
  atomic_llong syncs;          /* sync calls */
  atomic_int crashing;         /* the power is failing: no more writes */
  int crashMode;               /* 0 mix, 1 old, 2 new, 3 garbage */
  uint64_t seed;               /* -seed: the fates of "mix" */
  int device;                  /* FDEV_* */
  atomic_llong hits;
  char *zSnapDir;              /* -snapshot: where the copies go, or NULL */
  char *zSnapSrc;              /* the data file last opened read-write: what they copy */
  long long snapFirst, snapStep;  /* -snapshotfirst, -snapshotstep: which syncs */
  pthread_rwlock_t snapLock;   /* held to write, truncate, sync or delete
                               ** (shared) and to take a snapshot (alone) */
  pthread_mutex_t mu;          /* guards pFiles, pGhosts and methods */
  FaultFile *pFiles;
  FaultGhost *pGhosts;
} fv = { .mu = PTHREAD_MUTEX_INITIALIZER,
         /* Writer first: four threads writing by turns never leave it free. */
         .snapLock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP,
         .opsMask = 0xff, .filesMask = FFILE_ALL };

/* Whether PATH is the catalog (PATH-catalog, -catalog-wal, -catalog-journal). */
static int faultFileKind(const char *path){
  size_t n = strlen(path);
  static const char *azSuffix[] = {"-catalog", "-catalog-wal", "-catalog-journal"};
  int i;
  for(i = 0; i < 3; i++){
    size_t k = strlen(azSuffix[i]);
    if( n >= k && strcmp(path + n - k, azSuffix[i]) == 0 ) return FFILE_CATALOG;
  }
  if( (n >= 6 && strcmp(path + n - 6, "-index") == 0) || (n >= 10 && strcmp(path + n - 10, "-index.new") == 0) ){
    return FFILE_INDEX;
  }
  return FFILE_DATA;
}

/* Whether calls on files of KIND count. */
static int faultCounts(int kind){
  return (atomic_load(&fv.filesMask) & kind) != 0;
}

/* What becomes of an unsynced write, or of one unit of it, at a crash. */
#define FATE_NEW     0
#define FATE_OLD     1
#define FATE_GARBAGE 2
#define FATE_TORN    3         /* a write's only: each unit its own fate */

static int faultArmed(void){
  return atomic_load(&fv.crashAt) > 0 || atomic_load(&fv.crashSyncAt) > 0 || fv.zSnapDir != 0;
}

/* What a crash treats as one: a sector, or a block of an atomic4k device. */
static uint64_t faultUnit(void){
  return fv.device == FDEV_ATOMIC4K ? 4096 : 512;
}

/* The fate of write R, the Ith unsynced one of its file. */
static int faultWriteFate(const FaultRange *r, int i){
  static const int aMix[3] = {FATE_NEW, FATE_OLD, FATE_TORN};
  switch( fv.crashMode ){
    case 1: return FATE_OLD;
    case 2: return FATE_NEW;
    case 3: return fv.device == FDEV_ATOMIC4K ? FATE_OLD : FATE_GARBAGE;
  }
  return aMix[mix3(fv.seed, r->off, r->n ^ ((uint64_t)i << 40)) % 3];
}

/* The fate of the unit at POS of a torn write: atomic blocks are never
** garbage. */
static int faultUnitFate(uint64_t pos){
  return (int)(mix3(fv.seed ^ 0x7EA2, pos, 0) % (fv.device == FDEV_ATOMIC4K ? 2 : 3));
}

/* The size IM's file keeps, CUR bytes now. */
static uint64_t faultSurvivingSize(const FaultImage *im, uint64_t cur){
  uint64_t lo = im->syncedSize, h, mid;
  if( cur <= lo ) return cur;
  switch( fv.crashMode ){
    case 1: return lo;
    case 2: case 3: return cur;
  }
  h = mix3(fv.seed ^ 0x51CE, lo, cur);
  if( h % 3 == 0 ) return lo;
  if( h % 3 == 1 ) return cur;
  mid = lo + (h >> 8) % (cur - lo);
  mid -= mid % faultUnit();
  return mid < lo ? lo : mid;
}

/* Overwrite N bytes at POS (inside write R, N <= 4096) with what FATE
** leaves there: the old bytes (zeros past the old end) or garbage. */
static void faultPatch(int fd, const FaultRange *r, uint64_t pos, uint64_t n, int fate){
  unsigned char buf[4096];
  uint64_t k = pos - r->off, j;
  ssize_t wr;
  if( fate == FATE_GARBAGE ){
    for(j = 0; j < n; j += 8){
      uint64_t g = mix3(fv.seed ^ 0x6A5B, pos + j, 0);
      memcpy(buf + j, &g, n - j < 8 ? (size_t)(n - j) : 8);
    }
  }else{
    memset(buf, 0, (size_t)n);
    if( k < r->nOld ) memcpy(buf, r->old + k, (size_t)(r->nOld - k < n ? r->nOld - k : n));
  }
  wr = pwrite(fd, buf, (size_t)n, (off_t)pos);
  (void)wr;
}

/* Give every unsynced write of IM its fate, newest first, then cut the
** file to the size it keeps: in the file itself, or (FD >= 0) in a copy
** of it open on FD. */
static void faultCrashImage(FaultImage *im, int fd){
  uint64_t u = faultUnit(), cur, keep;
  struct stat st;
  int i;
  if( im->nRange == 0 ) return;
  /* Through a plain descriptor: a direct (O_DIRECT) file would need
  ** aligned buffers.  A closed file is opened again. */
  if( fd < 0 ) fd = im->plainFd;
  if( fd < 0 && im->zPath ) fd = open(im->zPath, O_RDWR | O_CLOEXEC);
  if( fd < 0 || fstat(fd, &st) != 0 ) return;
  cur = (uint64_t)st.st_size;
  keep = faultSurvivingSize(im, cur);
  for(i = im->nRange - 1; i >= 0; i--){
    const FaultRange *r = &im->aRange[i];
    int fate = faultWriteFate(r, i);
    uint64_t pos = r->off, end = r->off + r->n;
    while( pos < end ){
      uint64_t next = (pos / u + 1) * u;
      int f = fate == FATE_TORN ? faultUnitFate(pos) : fate;
      if( next > end ) next = end;
      if( fv.device == FDEV_SAFEAPPEND ){
        /* Past the synced size everything landed: a unit across it is
        ** split there. */
        if( pos >= im->syncedSize ) f = FATE_NEW;
        else if( next > im->syncedSize ) next = im->syncedSize;
      }
      if( f != FATE_NEW && pos < keep ) faultPatch(fd, r, pos, next - pos, f);
      pos = next;
    }
  }
  if( keep < cur ){
    int rc = ftruncate(fd, (off_t)keep);
    (void)rc;
  }
}

/* Lose power: every file, open or closed, meets its fate; then the
** process ends at once. */
static void faultCrash(void){
  FaultFile *f;
  FaultGhost *g;
  atomic_store(&fv.crashing, 1);
  /* No unlock: the process ends here. */
  pthread_mutex_lock(&fv.mu);
  for(f = fv.pFiles; f; f = f->pNext){
    pthread_mutex_lock(&f->mu);
    faultCrashImage(&f->img, -1);
  }
  for(g = fv.pGhosts; g; g = g->pNext) faultCrashImage(&g->img, -1);
  _exit(86);
}

/* Copy the file at FROM to TO (created), holes kept as holes: the data
** and index files of a crash test are mostly holes.  (copy_file_range
** took twice the time on tmpfs.)  *PST is FROM's stat.  Returns 0, 1 if
** FROM is gone, or -1 with errno set. */
static int faultCopyFile(const char *zFrom, const char *zTo, struct stat *pSt){
  static unsigned char buf[1 << 20];
  off_t pos = 0;
  int rc = -1, in = open(zFrom, O_RDONLY | O_CLOEXEC), out = -1, e;
  if( in < 0 ) return errno == ENOENT ? 1 : -1;   /* gone meanwhile: as after the crash */
  if( fstat(in, pSt) != 0 ) goto done;
  out = open(zTo, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if( out < 0 ) goto done;
  while( pos < pSt->st_size ){
    off_t data = lseek(in, pos, SEEK_DATA), hole;
    if( data < 0 ) break;                         /* ENXIO: only a hole is left */
    hole = lseek(in, data, SEEK_HOLE);
    if( hole < 0 || hole > pSt->st_size ) hole = pSt->st_size;
    pos = data;
    while( pos < hole ){
      ssize_t got = pread(in, buf, (size_t)(hole - pos < (off_t)sizeof buf ? hole - pos : (off_t)sizeof buf), pos);
      if( got <= 0 || pwrite(out, buf, (size_t)got, pos) != got ){
        if( got == 0 ) errno = EIO;               /* shorter than its size: cut meanwhile */
        goto done;
      }
      pos += got;
    }
  }
  rc = ftruncate(out, pSt->st_size);
done:
  e = errno;
  if( out >= 0 ) close(out);
  close(in);
  errno = e;
  return rc;
}

/* The copies of one snapshot: each file's inode and its copy's path. */
typedef struct FaultCopy {
  dev_t dev;
  ino_t ino;
  char *zCopy;
} FaultCopy;

/* Give IM's unsynced writes their fates in its copy among the N of A (if
** any).  The copy is found by inode, as the crash finds the file: by the
** descriptor it holds (which follows a rename: NAME-index.new renamed
** into place), or by the path of a closed one. */
static void faultSnapImage(FaultImage *im, FaultCopy *a, int n){
  struct stat st;
  int i, fd;
  if( im->nRange == 0 ) return;
  if( im->plainFd >= 0 ? fstat(im->plainFd, &st) != 0
                       : (im->zPath == 0 || stat(im->zPath, &st) != 0) ) return;
  for(i = 0; i < n; i++){
    if( a[i].dev == st.st_dev && a[i].ino == st.st_ino ) break;
  }
  if( i == n ) return;
  fd = open(a[i].zCopy, O_RDWR | O_CLOEXEC);
  if( fd >= 0 ){
    faultCrashImage(im, fd);
    close(fd);
  }
}

/* A snapshot could not be taken: say which, what and why, and end the
** process with status 87 (a missing crash state must not pass for one
** that checked clean). */
static _Noreturn void faultSnapFail(long long k, const char *zWhat, const char *zPath){
  char msg[1024];
  int n = snprintf(msg, sizeof msg, "fault VFS: snapshot %lld: %s%s%s: %s\n", k, zWhat,
                   zPath ? " " : "", zPath ? zPath : "", errno ? strerror(errno) : "no error code");
  ssize_t w = write(2, msg, n < (int)sizeof msg ? (size_t)n : sizeof msg - 1);
  (void)w;
  _exit(87);
}

/* The power loss of sync K, on copies (see SNAPSHOTS above): copy, give
** the fates, say "snapshot K", wait for the checker's line.  Any failure
** here ends the process with status 87: a snapshot that cannot be taken
** must not pass for a crash state that checked clean. */
static void faultSnapshot(long long k){
  const char *zSrc, *zPrefix;
  char *zDir, *zSrcDir, *zSlash, line[32];
  FaultCopy aCopy[16];
  FaultFile *f;
  FaultGhost *g;
  DIR *d;
  struct dirent *e;
  size_t nPrefix;
  int n, nCopy = 0, i;
  pthread_rwlock_wrlock(&fv.snapLock);
  pthread_mutex_lock(&fv.mu);
  /* The data file last opened read-write, even once closed: a close's last catalog
  ** syncs come after the data file's. */
  zSrc = fv.zSnapSrc;
  errno = 0;
  if( zSrc == 0 ) faultSnapFail(k, "no data file was opened through this VFS", 0);
  zDir = Tcl_Alloc((unsigned)(strlen(fv.zSnapDir) + 32));
  sprintf(zDir, "%s/%lld", fv.zSnapDir, k);
  if( mkdir(zDir, 0755) != 0 ) faultSnapFail(k, "cannot make the directory", zDir);
  /* The directory of the data file and its name: PATH* are copied. */
  zSrcDir = Tcl_Alloc((unsigned)strlen(zSrc) + 3);
  zSlash = strrchr(zSrc, '/');
  if( zSlash ){
    memcpy(zSrcDir, zSrc, (size_t)(zSlash - zSrc));
    zSrcDir[zSlash - zSrc] = 0;
    zPrefix = zSlash + 1;
  }else{
    strcpy(zSrcDir, ".");
    zPrefix = zSrc;
  }
  nPrefix = strlen(zPrefix);
  d = opendir(zSrcDir);
  if( d == 0 ) faultSnapFail(k, "cannot list the directory", zSrcDir);
  while( (e = readdir(d)) != 0 ){
    char *zFrom, *zTo;
    struct stat st;
    int rc;
    if( strncmp(e->d_name, zPrefix, nPrefix) != 0 ) continue;
    errno = 0;
    if( nCopy == (int)(sizeof aCopy / sizeof aCopy[0]) ) faultSnapFail(k, "more than 16 files begin with the name of", zSrc);
    zFrom = Tcl_Alloc((unsigned)(strlen(zSrcDir) + strlen(e->d_name) + 2));
    zTo = Tcl_Alloc((unsigned)(strlen(zDir) + strlen(e->d_name) + 2));
    sprintf(zFrom, "%s/%s", zSrcDir, e->d_name);
    sprintf(zTo, "%s/%s", zDir, e->d_name);
    rc = faultCopyFile(zFrom, zTo, &st);
    if( rc < 0 ) faultSnapFail(k, "cannot copy", zFrom);
    Tcl_Free(zFrom);
    if( rc == 0 ){
      aCopy[nCopy].dev = st.st_dev;
      aCopy[nCopy].ino = st.st_ino;
      aCopy[nCopy++].zCopy = zTo;
    }else{
      Tcl_Free(zTo);
    }
  }
  closedir(d);
  for(f = fv.pFiles; f; f = f->pNext){
    pthread_mutex_lock(&f->mu);
    faultSnapImage(&f->img, aCopy, nCopy);
    pthread_mutex_unlock(&f->mu);
  }
  for(g = fv.pGhosts; g; g = g->pNext) faultSnapImage(&g->img, aCopy, nCopy);
  pthread_mutex_unlock(&fv.mu);
  for(i = 0; i < nCopy; i++) Tcl_Free(aCopy[i].zCopy);
  Tcl_Free(zDir);
  Tcl_Free(zSrcDir);
  n = snprintf(line, sizeof line, "snapshot %lld\n", k);
  if( write(1, line, (size_t)n) != n ) faultSnapFail(k, "cannot write to the checker", "(standard output)");
  /* The checker's line: one byte at a time, so as to take no more. */
  for(;;){
    char c;
    ssize_t got;
    errno = 0;
    got = read(0, &c, 1);
    if( got <= 0 ) faultSnapFail(k, "no answer from the checker", "(standard input)");
    if( c == '\n' ) break;
  }
  pthread_rwlock_unlock(&fv.snapLock);
}

/* A write that comes while the power fails never happens. */
static void faultHold(void){
  while( atomic_load(&fv.crashing) ) pause();
}

/* Count a sync call of a file of KIND (not counted unless -files selects
** it).  Returns 1 if the power must fail once it is done
** (the one -crashsync names, with -crashafter); without -crashafter that
** one crashes here, before it acts. */
static long long faultSyncPoint(int kind){
  long long n, at;
  if( !faultCounts(kind) ) return 0;
  n = atomic_fetch_add(&fv.syncs, 1) + 1;
  if( fv.zSnapDir ){
    long long first = fv.snapFirst > 0 ? fv.snapFirst : 1, step = fv.snapStep > 0 ? fv.snapStep : 1;
    if( n < first || (n - first) % step != 0 ) return 0;
    if( atomic_load(&fv.crashAfter) ) return n;
    faultSnapshot(n);
    return 0;
  }
  at = atomic_load(&fv.crashSyncAt);
  if( at <= 0 || n != at ) return 0;
  if( !atomic_load(&fv.crashAfter) ) faultCrash();
  return n;
}

/* After sync N (non-zero: the one faultSyncPoint named) succeeded. */
static void faultAfterSync(long long n){
  if( n == 0 ) return;
  if( fv.zSnapDir ) faultSnapshot(n);
  else faultCrash();
}

static void faultImageFree(FaultImage *im){
  int i;
  if( im->plainFd >= 0 ) close(im->plainFd);
  im->plainFd = -1;
  for(i = 0; i < im->nRange; i++) free(im->aRange[i].old);
  free(im->aRange);
  free(im->zPath);
  memset(im, 0, sizeof *im);
  im->plainFd = -1;
}

/* Forget the closed files (all, or those at PATH: deleted). */
static void faultGhostsDrop(const char *zPath){
  FaultGhost **pp = &fv.pGhosts;
  pthread_mutex_lock(&fv.mu);
  while( *pp ){
    FaultGhost *g = *pp;
    if( zPath == 0 || (g->img.zPath && strcmp(g->img.zPath, zPath) == 0) ){
      *pp = g->pNext;
      faultImageFree(&g->img);
      free(g);
    }else{
      pp = &g->pNext;
    }
  }
  pthread_mutex_unlock(&fv.mu);
}

/* The size of IM's file now (0 if it cannot be had). */
static uint64_t faultImageSize(const FaultImage *im){
  struct stat st;
  return im->plainFd >= 0 && fstat(im->plainFd, &st) == 0 ? (uint64_t)st.st_size : 0;
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
  /* Closing makes nothing durable: an armed crash still undoes what the
  ** file did not sync, as a ghost, found by its path. */
  FaultGhost *g = f->img.nRange > 0 && faultArmed() ? malloc(sizeof *g) : 0;
  pthread_mutex_lock(&fv.mu);
  for(pp = &fv.pFiles; *pp; pp = &(*pp)->pNext){
    if( *pp == f ){ *pp = f->pNext; break; }
  }
  if( g ){
    g->img = f->img;
    close(g->img.plainFd);
    g->img.plainFd = -1;
    memset(&f->img, 0, sizeof f->img);
    f->img.plainFd = -1;
    g->pNext = fv.pGhosts;
    fv.pGhosts = g;
  }
  pthread_mutex_unlock(&fv.mu);
  rc = f->real->pMethods->xClose(f->real);
  free(f->real);
  faultImageFree(&f->img);
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
  if( !faultArmed() || n == 0 || f->img.plainFd < 0 ) return;
  if( f->real->pMethods->xFileSize(f->real, &size) != PAGEDB_OK || size <= off ) return;
  *nOld = size - off < n ? size - off : n;
  *pOld = malloc((size_t)*nOld);
  if( *pOld ){
    ssize_t got = pread(f->img.plainFd, *pOld, (size_t)*nOld, (off_t)off);
    if( got < 0 ) got = 0;
    if( (uint64_t)got < *nOld ) memset(*pOld + got, 0, (size_t)(*nOld - (uint64_t)got));
  }else{
    *nOld = 0;
  }
}

/* Remember a write that succeeded as not yet synced (takes POLD). */
static void faultRecord(FaultFile *f, size_t n, uint64_t off, unsigned char *pOld, uint64_t nOld){
  if( n > 0 ){
    FaultImage *im = &f->img;
    pthread_mutex_lock(&f->mu);
    if( im->nRange >= im->nAlloc ){
      int nNew = im->nAlloc ? im->nAlloc * 2 : 64;
      FaultRange *a = realloc(im->aRange, (size_t)nNew * sizeof(FaultRange));
      if( a ){ im->aRange = a; im->nAlloc = nNew; }
    }
    if( im->nRange < im->nAlloc ){
      im->aRange[im->nRange].off = off;
      im->aRange[im->nRange].n = n;
      im->aRange[im->nRange].old = pOld;
      im->aRange[im->nRange].nOld = nOld;
      im->nRange++;
      pOld = 0;
    }
    pthread_mutex_unlock(&f->mu);
  }
  free(pOld);
}

/* The injected failure of a write of N bytes of BUF at OFF.  With -short,
** the first half of them (whole sectors on a direct file) land first, as
** when a disk fills up in the middle of a write. */
static int faultWriteFail(FaultFile *f, const void *buf, size_t n, uint64_t off){
  if( atomic_load(&fv.shortWrite) ){
    const pagedb_io_methods *m = f->real->pMethods;
    size_t h = n / 2;
    unsigned char *pOld;
    uint64_t nOld;
    if( m->xDeviceCharacteristics && (m->xDeviceCharacteristics(f->real) & PAGEDB_IOCAP_DIRECT) ){
      h -= h % (size_t)m->xSectorSize(f->real);
    }
    if( h > 0 ){
      faultSaveOld(f, h, off, &pOld, &nOld);
      if( m->xWrite(f->real, buf, h, off) == PAGEDB_OK ) faultRecord(f, h, off, pOld, nOld);
      else free(pOld);
    }
  }
  return atomic_load(&fv.full) ? PAGEDB_FULL : PAGEDB_IOERR_WRITE;
}

static int fvWrite(pagedb_file *pf, const void *buf, size_t n, uint64_t off){
  FaultFile *f = (FaultFile *)pf;
  unsigned char *pOld;
  uint64_t nOld;
  int rc;
  faultHold();
  pthread_rwlock_rdlock(&fv.snapLock);
  if( faultHit(f, FOP_WRITE) ){
    rc = faultWriteFail(f, buf, n, off);
  }else{
    faultSaveOld(f, n, off, &pOld, &nOld);
    rc = f->real->pMethods->xWrite(f->real, buf, n, off);
    if( rc == PAGEDB_OK ) faultRecord(f, n, off, pOld, nOld);
    else free(pOld);
  }
  pthread_rwlock_unlock(&fv.snapLock);
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
  faultHold();
  pthread_rwlock_rdlock(&fv.snapLock);
  if( faultHit(f, FOP_WRITE) ){
    x->rc = faultWriteFail(f, a->buf, a->n, a->off);
  }else{
    faultSaveOld(f, a->n, a->off, &x->pOld, &x->nOld);
    x->rc = f->real->pMethods->xWriteStart(f->real, a);
    x->pReal = a->pPriv;
  }
  pthread_rwlock_unlock(&fv.snapLock);
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
    pthread_rwlock_rdlock(&fv.snapLock);
    a->pPriv = x->pReal;
    rc = f->real->pMethods->xWriteWait(f->real, a, wait);
    x->pReal = a->pPriv;
    a->pPriv = x;
    if( rc == PAGEDB_OK ) faultRecord(f, a->n, a->off, x->pOld, x->nOld);
    pthread_rwlock_unlock(&fv.snapLock);
    if( rc == PAGEDB_BUSY ) return rc;
  }
  if( rc != PAGEDB_OK ) free(x->pOld);
  free(x);
  a->pPriv = 0;
  return a->rc = rc;
}

static int fvTruncate(pagedb_file *pf, uint64_t size){
  FaultFile *f = (FaultFile *)pf;
  int rc;
  faultHold();
  if( faultHit(f, FOP_TRUNC) ) return PAGEDB_IOERR_TRUNCATE;
  pthread_rwlock_rdlock(&fv.snapLock);
  rc = f->real->pMethods->xTruncate(f->real, size);
  if( rc == PAGEDB_OK ){
    /* Durable at once (see above): no write past SIZE is left to undo. */
    FaultImage *im = &f->img;
    int i, k = 0;
    pthread_mutex_lock(&f->mu);
    for(i = 0; i < im->nRange; i++){
      FaultRange *r = &im->aRange[i];
      if( r->off >= size ){ free(r->old); continue; }
      if( r->off + r->n > size ) r->n = size - r->off;
      if( r->nOld > r->n ) r->nOld = r->n;
      im->aRange[k++] = *r;
    }
    im->nRange = k;
    im->syncedSize = size;
    pthread_mutex_unlock(&f->mu);
  }
  pthread_rwlock_unlock(&fv.snapLock);
  return rc;
}

static int fvSync(pagedb_file *pf, int flags){
  FaultFile *f = (FaultFile *)pf;
  FaultImage *im = &f->img;
  int nBefore, rc;
  long long crashAfter = faultSyncPoint(f->kind);
  if( faultHit(f, FOP_SYNC) ) return PAGEDB_IOERR_SYNC;
  /* Only the writes made before the sync started are known to be synced. */
  pthread_rwlock_rdlock(&fv.snapLock);
  pthread_mutex_lock(&f->mu);
  nBefore = im->nRange;
  pthread_mutex_unlock(&f->mu);
  rc = f->real->pMethods->xSync(f->real, flags);
  if( rc == PAGEDB_OK ){
    int i;
    pthread_mutex_lock(&f->mu);
    for(i = 0; i < nBefore; i++) free(im->aRange[i].old);
    if( im->nRange > nBefore ){
      memmove(im->aRange, im->aRange + nBefore, (size_t)(im->nRange - nBefore) * sizeof(FaultRange));
    }
    im->nRange -= nBefore;
    /* At least this much is durable; a write since that grew the file is
    ** still in the list, and a dropped one leaves a hole. */
    im->syncedSize = faultImageSize(im);
    pthread_mutex_unlock(&f->mu);
  }
  pthread_rwlock_unlock(&fv.snapLock);
  faultAfterSync(crashAfter);
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

static int fvMapAt(pagedb_file *pf, uint64_t off, size_t n, const void **p){
  FaultFile *f = (FaultFile *)pf;
  if( faultHit(f, FOP_MAP) ) return PAGEDB_IOERR_MMAP;
  return f->real->pMethods->xMapAt(f->real, off, n, p);
}

static int fvDetach(pagedb_file *pf){
  FaultFile *f = (FaultFile *)pf;
  return f->real->pMethods->xDetach(f->real);
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
  m->xMapAt = r->iVersion >= 6 && r->xMapAt ? fvMapAt : 0;
  m->xDetach = r->iVersion >= 7 && r->xDetach ? fvDetach : 0;
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
  memset(&f->img, 0, sizeof f->img);
  f->img.zPath = strdup(path);
  f->img.plainFd = open(path, ((flags & PAGEDB_VFS_READWRITE) ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  f->img.syncedSize = faultImageSize(&f->img);
  pthread_mutex_lock(&fv.mu);
  if( f->kind == FFILE_DATA && (flags & PAGEDB_VFS_READWRITE) ){
    /* Not a part a commit opens read-only: the dataset it writes. */
    if( fv.zSnapSrc ) Tcl_Free(fv.zSnapSrc);
    fv.zSnapSrc = Tcl_Alloc((unsigned)strlen(path) + 1);
    strcpy(fv.zSnapSrc, path);
  }
  fvInitMethods(real->pMethods);
  f->pNext = fv.pFiles;
  fv.pFiles = f;
  pthread_mutex_unlock(&fv.mu);
  f->base.pMethods = &fv.methods;
  return PAGEDB_OK;
}

static int fvDelete(pagedb_vfs *vfs, const char *path, int syncDir){
  int rc;
  pthread_rwlock_rdlock(&fv.snapLock);
  faultGhostsDrop(path);   /* a deletion is durable at once, like truncation */
  rc = fv.real->xDelete(fv.real, path, syncDir);
  pthread_rwlock_unlock(&fv.snapLock);
  return rc;
}

static int fvAccess(pagedb_vfs *vfs, const char *path, int *exists){
  return fv.real->xAccess(fv.real, path, exists);
}

static int fvSyncDir(pagedb_vfs *vfs, const char *path){
  long long crashAfter = faultSyncPoint(faultFileKind(path));
  int rc;
  if( faultCounts(faultFileKind(path)) && faultHit(0, FOP_SYNC) ) return PAGEDB_IOERR_SYNC;
  rc = fv.real->xSyncDir ? fv.real->xSyncDir(fv.real, path) : PAGEDB_OK;
  faultAfterSync(crashAfter);
  return rc;
}

static int faultvfsCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  static const char *azSub[] = {"register", "config", "reset", "count", "hits",
                                 "unregister", "syncs", 0};
  enum { F_REGISTER, F_CONFIG, F_RESET, F_COUNT, F_HITS, F_UNREGISTER, F_SYNCS };
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
        if( strcmp(z, "-device") == 0 ){
          static const char *azDev[] = {"plain", "atomic4k", "safeappend", 0};
          if( Tcl_GetIndexFromObj(interp, objv[i+1], azDev, "device", 0, &fv.device) ){
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
          static const char *azFiles[] = {"data", "catalog", "index", "all", 0};
          static const int aMask[] = {FFILE_DATA, FFILE_CATALOG, FFILE_INDEX, FFILE_ALL};
          int iFiles;
          if( Tcl_GetIndexFromObj(interp, objv[i+1], azFiles, "files", 0, &iFiles) ) return TCL_ERROR;
          atomic_store(&fv.filesMask, aMask[iFiles]);
          continue;
        }
        if( strcmp(z, "-snapshot") == 0 ){
          const char *zDir = Tcl_GetString(objv[i+1]);
          if( fv.zSnapDir ) Tcl_Free(fv.zSnapDir);
          fv.zSnapDir = 0;
          if( zDir[0] ){
            fv.zSnapDir = Tcl_Alloc((unsigned)strlen(zDir) + 1);
            strcpy(fv.zSnapDir, zDir);
          }
          continue;
        }
        if( Tcl_GetWideIntFromObj(interp, objv[i+1], &w) ) return TCL_ERROR;
        if( strcmp(z, "-ioerr") == 0 ) atomic_store(&fv.ioerrAt, (long long)w);
        else if( strcmp(z, "-persist") == 0 ) atomic_store(&fv.persist, w != 0);
        else if( strcmp(z, "-full") == 0 ) atomic_store(&fv.full, w != 0);
        else if( strcmp(z, "-short") == 0 ) atomic_store(&fv.shortWrite, w != 0);
        else if( strcmp(z, "-crash") == 0 ) atomic_store(&fv.crashAt, (long long)w);
        else if( strcmp(z, "-crashsync") == 0 ) atomic_store(&fv.crashSyncAt, (long long)w);
        else if( strcmp(z, "-crashafter") == 0 ) atomic_store(&fv.crashAfter, w != 0);
        else if( strcmp(z, "-seed") == 0 ) fv.seed = (uint64_t)w;
        else if( strcmp(z, "-snapshotfirst") == 0 ) fv.snapFirst = (long long)w;
        else if( strcmp(z, "-snapshotstep") == 0 ) fv.snapStep = (long long)w;
        else{
          Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad option \"%s\": must be -ops, -files, -ioerr, "
                                                 "-persist, -full, -short, -crash, -crashsync, -crashafter, -crashmode, "
                                                 "-seed, -device, -snapshot, -snapshotfirst or -snapshotstep", z));
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
      atomic_store(&fv.crashSyncAt, 0);
      atomic_store(&fv.crashAfter, 0);
      atomic_store(&fv.syncs, 0);
      if( fv.zSnapDir ) Tcl_Free(fv.zSnapDir);
      fv.zSnapDir = 0;
      fv.crashMode = 0;
      fv.seed = 0;
      fv.device = FDEV_PLAIN;
      faultGhostsDrop(0);
      atomic_store(&fv.persist, 0);
      atomic_store(&fv.full, 0);
      atomic_store(&fv.shortWrite, 0);
      atomic_store(&fv.count, 0);
      atomic_store(&fv.hits, 0);
      atomic_store(&fv.opsMask, 0xff);
      atomic_store(&fv.filesMask, FFILE_ALL);
      return TCL_OK;
    case F_COUNT:
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj(atomic_load(&fv.count)));
      return TCL_OK;
    case F_SYNCS:
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj(atomic_load(&fv.syncs)));
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
