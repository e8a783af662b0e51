/*
** catvfs.c -- the catalog's SQLite I/O goes through the dataset's pagedb VFS.
**
** The catalog is a SQLite database; left to SQLite's own "unix" VFS its
** bytes would bypass pagedb's VFS, and a fault or a power loss injected
** there (test/tclfault.c) would hit the data file but never the catalog
** beside it.  So every catalog connection is opened with a sqlite3_vfs of
** ours, "pagedb-NAME" for the dataset's VFS NAME, registered on first use
** (never unregistered: SQLite keeps a pointer, and the struct is static).
**
** A file of the main database, its WAL or a rollback journal (the files
** whose bytes must survive, all named) is two files in one:
**
**   - a file of SQLite's default VFS on the same path, which does
**     everything that is about locks and shared memory (xLock, xUnlock,
**     xCheckReservedLock, xShm*), the sector size and device
**     characteristics, and the file controls that change nothing on disk;
**   - a pagedb_file of the dataset's VFS, which does every byte:
**     xRead, xWrite, xTruncate, xSync, xFileSize.
**
** The methods are version 2: no xFetch, so SQLite never maps the file and
** every read goes through the pagedb VFS.  Temporary files and files
** without a name belong to SQLite's VFS entirely.  File controls that would
** grow or map the file behind the pagedb file's back (SIZE_HINT,
** CHUNK_SIZE, MMAP_SIZE) are refused with SQLITE_NOTFOUND, which SQLite
** takes as "not supported".
**
** Locks.  SQLite's unix VFS locks with POSIX record locks, which belong to
** the (process, inode) pair: closing ANY descriptor of the inode in the
** process drops every lock the process holds on it.  The unix VFS defers
** its own closes for that reason; the pagedb_file is another descriptor it
** does not know of.  So one pagedb_file serves every open of an inode in
** the process (a registry keyed by st_dev/st_ino, refcounted), and it is
** closed only when the last of them closes: by then no connection of ours
** holds a lock there.  The first open of an inode decides which pagedb VFS
** serves it.  (Connections to a catalog opened without this VFS in the same
** process, e.g. by a user's own SQLite code, are not protected from it, as
** they are not protected from each other's closes by SQLite either.)
**
** Direct I/O.  SQLite writes its WAL in unaligned frames, which a file
** opened with O_DIRECT cannot take.  When the dataset's VFS bypasses the
** page cache (PAGEDB_IOCAP_DIRECT: the "direct" VFS, or one wrapping it),
** the catalog's files are opened with the "posix" VFS instead.
**
** Results.  pagedb codes become SQLite's I/O error subcodes
** (PAGEDB_FULL on a write or truncate: SQLITE_FULL).  A failed sync is
** always SQLITE_IOERR_FSYNC, even on a full disk: the catalog (catalog.c)
** reports it as PAGEDB_IOERR_SYNC, and a commit that meets it poisons the
** handle as a failed data sync does, since the kernel may have dropped
** unsynced catalog pages and what the catalog holds is then in doubt.
**
** Directories.  SQLite's unix VFS syncs the directory after the first sync
** of a WAL or journal it created; that sync is ours now, so the shim does
** it, with the pagedb VFS's xSyncDir.  xDelete goes to the pagedb VFS too
** (a fault VFS sees the WAL and journal deletes); xAccess and
** xFullPathname stay SQLite's, whose meaning SQLite relies on (an empty
** WAL counts as absent; paths are canonical).
**
** Remote catalogs.  A catalog at a URL (the http, https and s3 VFSes) has
** no local file for SQLite's VFS to lock or share memory beside, and
** cannot change while open.  Its main database file is served entirely by
** the pagedb file (no SQLite file under it: p->sq->pMethods stays NULL),
** reports SQLITE_IOCAP_IMMUTABLE, which makes SQLite read it with no locks,
** no -shm and no WAL (a catalog is left checkpointed by its writer's
** close), and takes no locks; its path is kept as given (SQLite's
** xFullPathname would make "http://h/x" a relative file path), and
** xAccess asks the pagedb VFS.  Any other open of a URL is refused.
*/
#include "catalog.h"
#include "os.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>

/* One inode open through the shim in this process. */
typedef struct CvNode CvNode;
struct CvNode {
  dev_t dev;
  ino_t ino;
  int nref;
  int rw;                   /* PF is open read-write */
  int remote;               /* a remote catalog's, outside the registry */
  pagedb_file *pf;
  CvNode *next;
};

/* One sqlite3_vfs per pagedb VFS. */
typedef struct CvVfs {
  sqlite3_vfs base;         /* pAppData: the pagedb_vfs */
  sqlite3_vfs *sq;          /* SQLite's default VFS, which we wrap */
  int direct;               /* 0 unknown, 1 the pagedb VFS serves files, 2 posix does */
  char name[64];
} CvVfs;

typedef struct CvFile {
  sqlite3_file base;
  sqlite3_file *sq;         /* the SQLite VFS's file, just after this struct */
  CvNode *node;             /* NULL: SQ does everything */
  CvVfs *vfs;
  const char *path;         /* SQLite keeps it valid until xClose */
  int syncdir;              /* created: sync the directory after the first sync */
} CvFile;

/* Room for the SQLite VFS's file after ours, suitably aligned. */
#define CV_FILE_SIZE ((sizeof(CvFile) + 15) & ~(size_t)15)

/* The pagedb VFSes are few (the built-ins, a fault VFS in tests). */
#define CV_MAX_VFS 16

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static CvVfs vfses[CV_MAX_VFS];
static int nvfs;
static CvNode *nodes;       /* open inodes, guarded by mu */

static CvFile *cvf(sqlite3_file *f) { return (CvFile *)f; }
/* A remote catalog: the pagedb file does everything. */
static int remote(sqlite3_file *f) { return cvf(f)->sq->pMethods == NULL; }
static pagedb_file *pf_of(sqlite3_file *f) { return cvf(f)->node->pf; }

/* --- the registry of open inodes ----------------------------------------- */

/*
** The pagedb_file for the inode PATH names, opened on first use: read-write
** if it can be (a read-only open may come first and a writer later), else
** read-only when READONLY is all that was asked.
*/
static int node_open(CvVfs *v, const char *path, int readonly, CvNode **out) {
  struct stat st;
  if (stat(path, &st) != 0) return SQLITE_CANTOPEN;
  pthread_mutex_lock(&mu);
  CvNode *n = nodes;
  while (n && !(n->dev == st.st_dev && n->ino == st.st_ino)) n = n->next;
  int rc = SQLITE_OK;
  if (n) {
    if (!n->rw && !readonly) rc = SQLITE_CANTOPEN;
    else n->nref++;
  } else if (!(n = pdb_calloc(1, sizeof *n))) {
    rc = SQLITE_NOMEM;
  } else {
    pagedb_vfs *pv = v->direct == 2 ? pdb_posix_vfs() : v->base.pAppData;
    int prc = pdb_os_open(pv, path, PAGEDB_VFS_READWRITE, &n->pf);
    n->rw = prc == PAGEDB_OK;
    if (prc != PAGEDB_OK && prc != PAGEDB_NOMEM && readonly) prc = pdb_os_open(pv, path, PAGEDB_VFS_READONLY, &n->pf);
    if (prc == PAGEDB_OK && v->direct == 0) {
      /* No other descriptor of ours is open on the inode yet (else N would
      ** have been found), so closing this one cannot drop a lock. */
      v->direct = (pdb_os_caps(n->pf) & PAGEDB_IOCAP_DIRECT) ? 2 : 1;
      if (v->direct == 2) {
        pdb_os_close(n->pf);
        n->pf = NULL;
        prc = pdb_os_open(pdb_posix_vfs(), path, n->rw ? PAGEDB_VFS_READWRITE : PAGEDB_VFS_READONLY, &n->pf);
      }
    }
    if (prc != PAGEDB_OK) {
      rc = prc == PAGEDB_NOMEM ? SQLITE_NOMEM : SQLITE_CANTOPEN;
      pdb_free(n);
      n = NULL;
    } else {
      n->dev = st.st_dev;
      n->ino = st.st_ino;
      n->nref = 1;
      n->next = nodes;
      nodes = n;
    }
  }
  pthread_mutex_unlock(&mu);
  *out = n;
  return rc;
}

static void node_close(CvNode *n) {
  if (n->remote) {
    pdb_os_close(n->pf);    /* not in the registry (open_remote) */
    pdb_free(n);
    return;
  }
  pthread_mutex_lock(&mu);
  int last = --n->nref == 0;
  if (last) {
    CvNode **pp = &nodes;
    while (*pp != n) pp = &(*pp)->next;
    *pp = n->next;
  }
  pthread_mutex_unlock(&mu);
  if (last) {
    pdb_os_close(n->pf);
    pdb_free(n);
  }
}

/* --- io methods ----------------------------------------------------------- */

static int cv_close(sqlite3_file *f) {
  CvFile *p = cvf(f);
  /* SQLite's file first: its locks go before the last descriptor of ours. */
  int rc = p->sq->pMethods ? p->sq->pMethods->xClose(p->sq) : SQLITE_OK;
  if (p->node) node_close(p->node);
  p->node = NULL;
  return rc;
}

static int cv_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off) {
  CvFile *p = cvf(f);
  if (!p->node) return p->sq->pMethods->xRead(p->sq, buf, n, off);
  int rc = pdb_os_read(pf_of(f), buf, (size_t)n, (uint64_t)off);
  /* The short part is zero-filled, as SQLite requires. */
  return rc == PAGEDB_OK ? SQLITE_OK
       : rc == PAGEDB_IOERR_SHORT_READ ? SQLITE_IOERR_SHORT_READ
       : rc == PAGEDB_NOMEM ? SQLITE_IOERR_NOMEM : SQLITE_IOERR_READ;
}

static int cv_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off) {
  CvFile *p = cvf(f);
  if (!p->node) return p->sq->pMethods->xWrite(p->sq, buf, n, off);
  int rc = pdb_os_write(pf_of(f), buf, (size_t)n, (uint64_t)off);
  return rc == PAGEDB_OK ? SQLITE_OK : rc == PAGEDB_FULL ? SQLITE_FULL : SQLITE_IOERR_WRITE;
}

static int cv_truncate(sqlite3_file *f, sqlite3_int64 size) {
  CvFile *p = cvf(f);
  if (!p->node) return p->sq->pMethods->xTruncate(p->sq, size);
  int rc = pdb_os_truncate(pf_of(f), (uint64_t)size);
  return rc == PAGEDB_OK ? SQLITE_OK : rc == PAGEDB_FULL ? SQLITE_FULL : SQLITE_IOERR_TRUNCATE;
}

static int cv_sync(sqlite3_file *f, int flags) {
  CvFile *p = cvf(f);
  if (!p->node) return p->sq->pMethods->xSync(p->sq, flags);
  /* SQLITE_SYNC_NORMAL (synchronous=FULL asks for it) is fdatasync, as in
  ** SQLite's unix VFS on Linux: it flushes a grown file's size too.
  ** SQLITE_SYNC_FULL (PRAGMA fullfsync) is fsync. */
  int pflags = (flags & 0x0f) == SQLITE_SYNC_FULL ? PAGEDB_SYNC_FULL : PAGEDB_SYNC_DATA;
  if (pdb_os_sync(pf_of(f), pflags) != PAGEDB_OK) return SQLITE_IOERR_FSYNC;
  if (p->syncdir) {
    pagedb_vfs *pv = p->vfs->base.pAppData;
    if (pv->xSyncDir && pv->xSyncDir(pv, p->path) != PAGEDB_OK) return SQLITE_IOERR_DIR_FSYNC;
    p->syncdir = 0;
  }
  return SQLITE_OK;
}

static int cv_size(sqlite3_file *f, sqlite3_int64 *size) {
  CvFile *p = cvf(f);
  if (!p->node) return p->sq->pMethods->xFileSize(p->sq, size);
  uint64_t n = 0;
  if (pdb_os_size(pf_of(f), &n) != PAGEDB_OK) return SQLITE_IOERR_FSTAT;
  *size = (sqlite3_int64)n;
  return SQLITE_OK;
}

static int cv_lock(sqlite3_file *f, int level) {
  if (remote(f)) return level <= SQLITE_LOCK_SHARED ? SQLITE_OK : SQLITE_READONLY;
  return cvf(f)->sq->pMethods->xLock(cvf(f)->sq, level);
}
static int cv_unlock(sqlite3_file *f, int level) {
  if (remote(f)) return SQLITE_OK;
  return cvf(f)->sq->pMethods->xUnlock(cvf(f)->sq, level);
}
static int cv_reserved(sqlite3_file *f, int *out) {
  if (remote(f)) return *out = 0, SQLITE_OK;
  return cvf(f)->sq->pMethods->xCheckReservedLock(cvf(f)->sq, out);
}

static int cv_fcntl(sqlite3_file *f, int op, void *arg) {
  CvFile *p = cvf(f);
  /* The first two would size the file through SQLite's descriptor, the
  ** third map it (PRAGMA mmap_size asks whatever the methods' version). */
  if (p->node && (op == SQLITE_FCNTL_SIZE_HINT || op == SQLITE_FCNTL_CHUNK_SIZE || op == SQLITE_FCNTL_MMAP_SIZE))
    return SQLITE_NOTFOUND;
  if (remote(f)) return SQLITE_NOTFOUND;
  return p->sq->pMethods->xFileControl(p->sq, op, arg);
}

static int cv_sector(sqlite3_file *f) {
  if (remote(f)) return 4096;
  return cvf(f)->sq->pMethods->xSectorSize(cvf(f)->sq);
}
static int cv_caps(sqlite3_file *f) {
  if (remote(f)) return SQLITE_IOCAP_IMMUTABLE;
  return cvf(f)->sq->pMethods->xDeviceCharacteristics(cvf(f)->sq);
}

/* An immutable file never gets here; refused in case SQLite changes. */
static int cv_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp) {
  if (remote(f)) return SQLITE_READONLY_CANTINIT;
  return cvf(f)->sq->pMethods->xShmMap(cvf(f)->sq, pg, pgsz, extend, pp);
}
static int cv_shm_lock(sqlite3_file *f, int off, int n, int flags) {
  if (remote(f)) return SQLITE_READONLY;
  return cvf(f)->sq->pMethods->xShmLock(cvf(f)->sq, off, n, flags);
}
static void cv_shm_barrier(sqlite3_file *f) {
  if (!remote(f)) cvf(f)->sq->pMethods->xShmBarrier(cvf(f)->sq);
}
static int cv_shm_unmap(sqlite3_file *f, int del) {
  if (remote(f)) return SQLITE_OK;
  return cvf(f)->sq->pMethods->xShmUnmap(cvf(f)->sq, del);
}

static const sqlite3_io_methods cv_methods = {
  .iVersion = 2,    /* not 3: no xFetch, so no reads around the pagedb VFS */
  .xClose = cv_close,
  .xRead = cv_read,
  .xWrite = cv_write,
  .xTruncate = cv_truncate,
  .xSync = cv_sync,
  .xFileSize = cv_size,
  .xLock = cv_lock,
  .xUnlock = cv_unlock,
  .xCheckReservedLock = cv_reserved,
  .xFileControl = cv_fcntl,
  .xSectorSize = cv_sector,
  .xDeviceCharacteristics = cv_caps,
  .xShmMap = cv_shm_map,
  .xShmLock = cv_shm_lock,
  .xShmBarrier = cv_shm_barrier,
  .xShmUnmap = cv_shm_unmap,
};

/* --- the VFS ------------------------------------------------------------- */

/* The main database of a remote catalog, read-only (see the top). */
static int open_remote(CvVfs *v, CvFile *p, const char *path, int flags, int *oflags) {
  if (!(flags & SQLITE_OPEN_MAIN_DB) || !(flags & SQLITE_OPEN_READONLY)) return SQLITE_CANTOPEN;
  CvNode *n = pdb_calloc(1, sizeof *n);
  if (!n) return SQLITE_NOMEM;
  /* PLAIN: SQLite reads pages, small and scattered (a remote VFS caches
  ** them in small chunks). */
  int prc = pdb_os_open(v->base.pAppData, path, PAGEDB_VFS_READONLY | PAGEDB_VFS_PLAIN, &n->pf);
  if (prc == PAGEDB_OK && !(pdb_os_caps(n->pf) & PAGEDB_IOCAP_IMMUTABLE)) {
    pdb_os_close(n->pf);
    prc = PAGEDB_CANTOPEN;
  }
  if (prc != PAGEDB_OK) {
    pdb_free(n);
    return prc == PAGEDB_NOMEM ? SQLITE_NOMEM : SQLITE_CANTOPEN;
  }
  p->sq->pMethods = NULL;   /* what remote() tests */
  n->nref = 1;
  n->remote = 1;            /* not in the registry: no descriptor to guard */
  p->node = n;
  if (oflags) *oflags = SQLITE_OPEN_READONLY;
  p->base.pMethods = &cv_methods;
  return SQLITE_OK;
}

static int cv_open(sqlite3_vfs *vfs, const char *path, sqlite3_file *f, int flags, int *oflags) {
  CvVfs *v = (CvVfs *)vfs;
  CvFile *p = cvf(f);
  memset(p, 0, sizeof *p);
  p->sq = (sqlite3_file *)((char *)f + CV_FILE_SIZE);
  p->vfs = v;
  p->path = path;
  if (path && pdb_path_scheme(path, NULL, 0)) return open_remote(v, p, path, flags, oflags);
  int rc = v->sq->xOpen(v->sq, path, p->sq, flags, oflags);
  if (rc != SQLITE_OK) return rc;
  f->pMethods = &cv_methods;
  int durable = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL;
  if (path && (flags & durable)) {
    /* After SQLite's open, which created the file if asked to. */
    rc = node_open(v, path, (flags & SQLITE_OPEN_READONLY) != 0, &p->node);
    if (rc != SQLITE_OK) {
      p->sq->pMethods->xClose(p->sq);
      f->pMethods = NULL;
      return rc;
    }
    p->syncdir = (flags & SQLITE_OPEN_CREATE) && !(flags & SQLITE_OPEN_MAIN_DB);
  }
  return SQLITE_OK;
}

static int cv_delete(sqlite3_vfs *vfs, const char *path, int syncdir) {
  pagedb_vfs *pv = vfs->pAppData;
  int rc = pv->xDelete(pv, path, syncdir);
  return rc == PAGEDB_OK ? SQLITE_OK : rc == PAGEDB_IOERR_SYNC ? SQLITE_IOERR_DIR_FSYNC : SQLITE_IOERR_DELETE;
}

#define SQ(vfs) (((CvVfs *)(vfs))->sq)
static int cv_access(sqlite3_vfs *vfs, const char *path, int flags, int *out) {
  if (pdb_path_scheme(path, NULL, 0)) {
    pagedb_vfs *pv = vfs->pAppData;
    *out = 0;
    /* A remote object is never writable; SQLite asks only of -wal and
    ** -journal, and an immutable database never of those. */
    if (flags != SQLITE_ACCESS_READWRITE && pv->xAccess(pv, path, out) != PAGEDB_OK) return SQLITE_IOERR_ACCESS;
    return SQLITE_OK;
  }
  return SQ(vfs)->xAccess(SQ(vfs), path, flags, out);
}
static int cv_fullpath(sqlite3_vfs *vfs, const char *path, int n, char *out) {
  if (pdb_path_scheme(path, NULL, 0)) {
    if ((int)strlen(path) >= n) return SQLITE_CANTOPEN;
    strcpy(out, path);      /* a URL, not a file path to canonicalise */
    return SQLITE_OK;
  }
  return SQ(vfs)->xFullPathname(SQ(vfs), path, n, out);
}
static int cv_random(sqlite3_vfs *vfs, int n, char *out) {
  return SQ(vfs)->xRandomness(SQ(vfs), n, out);
}
static int cv_sleep(sqlite3_vfs *vfs, int us) {
  return SQ(vfs)->xSleep(SQ(vfs), us);
}
static int cv_time(sqlite3_vfs *vfs, double *out) {
  return SQ(vfs)->xCurrentTime(SQ(vfs), out);
}
static int cv_lasterr(sqlite3_vfs *vfs, int n, char *out) {
  return SQ(vfs)->xGetLastError(SQ(vfs), n, out);
}
static int cv_time64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
  return SQ(vfs)->xCurrentTimeInt64(SQ(vfs), out);
}

const char *catvfs_name(pagedb_vfs *pv) {
  if (!pv) return NULL;
  const char *name = NULL;
  pthread_mutex_lock(&mu);
  for (int i = 0; i < nvfs && !name; i++)
    if (vfses[i].base.pAppData == pv) name = vfses[i].name;
  sqlite3_vfs *sq = sqlite3_vfs_find(NULL);
  if (!name && nvfs < CV_MAX_VFS && sq && sq->iVersion >= 2) {
    CvVfs *v = &vfses[nvfs];
    snprintf(v->name, sizeof v->name, "pagedb-%.40s", pv->zName);
    /* Unique even if a pagedb VFS of the same name replaced another. */
    if (sqlite3_vfs_find(v->name)) snprintf(v->name, sizeof v->name, "pagedb-%.40s-%d", pv->zName, nvfs);
    v->sq = sq;
    v->base = (sqlite3_vfs){
      .iVersion = 2,
      .szOsFile = (int)CV_FILE_SIZE + sq->szOsFile,
      .mxPathname = sq->mxPathname,
      .zName = v->name,
      .pAppData = pv,
      .xOpen = cv_open,
      .xDelete = cv_delete,
      .xAccess = cv_access,
      .xFullPathname = cv_fullpath,
      .xDlOpen = sq->xDlOpen,
      .xDlError = sq->xDlError,
      .xDlSym = sq->xDlSym,
      .xDlClose = sq->xDlClose,
      .xRandomness = cv_random,
      .xSleep = cv_sleep,
      .xCurrentTime = cv_time,
      .xGetLastError = cv_lasterr,
      .xCurrentTimeInt64 = cv_time64,
    };
    if (sqlite3_vfs_register(&v->base, 0) == SQLITE_OK) {
      nvfs++;
      name = v->name;
    }
  }
  pthread_mutex_unlock(&mu);
  return name;
}
