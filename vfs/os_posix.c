/*
** os_posix.c -- the "posix" VFS: pread/pwrite/fsync, OFD locks, mmap.
**
** The default backend.  Every call retries EINTR (fsync excepted, see
** px_sync) and loops over short transfers, so a method either moves all the bytes asked for or fails
** with a code that says why (PAGEDB_FULL for ENOSPC and EDQUOT, so that a
** full disk is told apart from a broken one).
**
** The same code serves the "io_uring" VFS, whose batched reads
** (xReadBatch) are submitted together through io_uring (vfs/uring.c) and
** whose writes can run in the background (xWriteStart, xWriteWait), and
** the "direct" VFS: files opened with O_DIRECT, which
** bypasses the page cache (on a virtual disk that makes large writes
** several times faster).  Its callers align every buffer, offset and length
** to xSectorSize(), which comes from statx(STATX_DIOALIGN) when the file
** system reports it; its batches and background writes use io_uring when
** the kernel allows.  A
** file system that refuses O_DIRECT, or a kernel without io_uring for the
** "io_uring" VFS, fails at open with the reason.
**
** Locks are open-file-description locks (F_OFD_SETLK): unlike classic POSIX
** record locks they belong to the open file, not the process, so closing
** some other descriptor of the same file elsewhere in the process (SQLite,
** a user's code) does not silently drop the dataset's write lock, and two
** handles in one process exclude each other as two processes do.
**
** The system calls go through vfs/syscall.c's table, so that the tests can
** interrupt them and cut them short at will.
**
** Paths are local files only: a URL's scheme chooses its VFS in pagedb_open
** (pdb_vfs_choose, vfs/vfs.c), so a URL never reaches this backend there;
** given one anyway, it is a relative file name like any other.
*/
#define _GNU_SOURCE
#include "os.h"
#include "uring.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define K_DIRECT 1    /* O_DIRECT */
#define K_URING  2    /* io_uring for batches */

typedef struct PosixFile {
  pagedb_file base;     /* must be first */
  int fd;
  int lockfd;           /* holds the write lock, or -1 (see px_lock) */
  char *path;           /* to open lockfd */
  int direct;           /* opened with O_DIRECT */
  PdbRings *rings;      /* batched reads go through io_uring, or NULL */
  int sector;           /* alignment O_DIRECT needs */
  _Atomic int err;      /* errno of the latest failure */
} PosixFile;

static int fail(PosixFile *p, int rc) {
  atomic_store_explicit(&p->err, errno, memory_order_relaxed);
  return rc;
}

static int px_close(pagedb_file *f) {
  PosixFile *p = (PosixFile *)f;
  pdb_rings_close(p->rings);
  p->rings = NULL;
  pdb_free(p->path);
  p->path = NULL;
  if (p->lockfd >= 0) close(p->lockfd);
  p->lockfd = -1;
  if (p->fd >= 0 && close(p->fd) != 0 && errno != EINTR) return fail(p, PAGEDB_IOERR);
  p->fd = -1;
  return PAGEDB_OK;
}

/* open(2), retrying EINTR. */
static int open_fd(const char *path, int flags, mode_t mode) {
  int fd;
  do fd = sys_open(path, flags, mode);
  while (fd < 0 && errno == EINTR);
  return fd;
}

int pdb_pread_all(int fd, void *buf, size_t n, uint64_t off, int *err) {
  uint8_t *b = buf;
  while (n > 0) {
    ssize_t got = sys_pread(fd, b, n, (off_t)off);
    if (got < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return PAGEDB_IOERR_READ;
    }
    if (got == 0) {
      memset(b, 0, n);
      return PAGEDB_IOERR_SHORT_READ;
    }
    b += got;
    n -= (size_t)got;
    off += (uint64_t)got;
  }
  return PAGEDB_OK;
}

static int px_read(pagedb_file *f, void *buf, size_t n, uint64_t off) {
  PosixFile *p = (PosixFile *)f;
  int e = 0;
  int rc = pdb_pread_all(p->fd, buf, n, off, &e);
  if (rc == PAGEDB_IOERR_READ) atomic_store_explicit(&p->err, e, memory_order_relaxed);
  return rc;
}

static int px_write(pagedb_file *f, const void *buf, size_t n, uint64_t off) {
  PosixFile *p = (PosixFile *)f;
  const uint8_t *b = buf;
  while (n > 0) {
    ssize_t put = sys_pwrite(p->fd, b, n, (off_t)off);
    if (put < 0) {
      if (errno == EINTR) continue;
      return fail(p, (errno == ENOSPC || errno == EDQUOT) ? PAGEDB_FULL : PAGEDB_IOERR_WRITE);
    }
    if (put == 0) {
      /* No progress and no error: what a device out of space does at its
      ** end (SQLite reads it so too).  Looping would never end. */
      errno = ENOSPC;
      return fail(p, PAGEDB_FULL);
    }
    b += put;
    n -= (size_t)put;
    off += (uint64_t)put;
  }
  return PAGEDB_OK;
}

static int px_truncate(pagedb_file *f, uint64_t size) {
  PosixFile *p = (PosixFile *)f;
  while (sys_ftruncate(p->fd, (off_t)size) != 0) {
    if (errno != EINTR) return fail(p, PAGEDB_IOERR_TRUNCATE);
  }
  return PAGEDB_OK;
}

static int px_sync(pagedb_file *f, int flags) {
  PosixFile *p = (PosixFile *)f;
  int r = (flags & PAGEDB_SYNC_FULL) ? sys_fsync(p->fd) : sys_fdatasync(p->fd);
  /* No retry on failure, EINTR included: after a failed fsync the kernel
  ** may have dropped the dirty pages, so a second fsync could succeed
  ** without them. */
  if (r != 0) return fail(p, (errno == ENOSPC || errno == EDQUOT) ? PAGEDB_FULL : PAGEDB_IOERR_SYNC);
  return PAGEDB_OK;
}

static int px_size(pagedb_file *f, uint64_t *size) {
  PosixFile *p = (PosixFile *)f;
  struct stat st;
  if (fstat(p->fd, &st) != 0) return fail(p, PAGEDB_IOERR_FSTAT);
  *size = (uint64_t)st.st_size;
  return PAGEDB_OK;
}

/*
** The lock lives on an open file description of its own, which no I/O ever
** uses: io_uring holds a reference to the file of every request in flight,
** and a killed process's rings are torn down after it exits, so a lock on
** the I/O descriptor could outlive a killed writer by a moment and refuse
** the next open.
*/
static int px_lock(pagedb_file *f, int level) {
  PosixFile *p = (PosixFile *)f;
  if (level != PAGEDB_LOCK_EXCLUSIVE) {
    if (p->lockfd >= 0) close(p->lockfd);   /* closing it drops the lock */
    p->lockfd = -1;
    return PAGEDB_OK;
  }
  if (p->lockfd < 0) {
    p->lockfd = open_fd(p->path, O_RDWR | O_CLOEXEC, 0);
    if (p->lockfd < 0) return fail(p, PAGEDB_IOERR_LOCK);
    struct stat a, b;
    if (fstat(p->fd, &a) != 0 || fstat(p->lockfd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
      /* The path names another file now (renamed or replaced). */
      close(p->lockfd);
      p->lockfd = -1;
      errno = ESTALE;
      return fail(p, PAGEDB_IOERR_LOCK);
    }
  }
  struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
  while (fcntl(p->lockfd, F_OFD_SETLK, &fl) != 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EACCES) return PAGEDB_BUSY_LOCKED;
    return fail(p, PAGEDB_IOERR_LOCK);
  }
  return PAGEDB_OK;
}

static int px_sector(pagedb_file *f) { return ((PosixFile *)f)->sector; }
static int px_caps(pagedb_file *f) {
  PosixFile *p = (PosixFile *)f;
  return PAGEDB_IOCAP_MMAP | (p->direct ? PAGEDB_IOCAP_DIRECT : 0) | (p->rings ? PAGEDB_IOCAP_BATCH | PAGEDB_IOCAP_ASYNC_WRITE : 0);
}

/* Version 6: a map from OFF, a multiple of the system page size (the
** caller checks; mmap refuses any other with EINVAL). */
static int px_map_at(pagedb_file *f, uint64_t off, size_t n, const void **pp) {
  PosixFile *p = (PosixFile *)f;
  void *m = MAP_FAILED;
  if (off > (uint64_t)INT64_MAX) errno = EINVAL;
  else m = mmap(NULL, n, PROT_READ, MAP_SHARED, p->fd, (off_t)off);
  if (m == MAP_FAILED) {
    *pp = NULL;
    return fail(p, PAGEDB_IOERR_MMAP);
  }
  *pp = m;
  return PAGEDB_OK;
}

static int px_map(pagedb_file *f, size_t n, const void **pp) { return px_map_at(f, 0, n, pp); }

/* Version 7: the descriptors closed, the maps kept (a map does not need
** its descriptor); px_close then has nothing left to close but the path. */
static int px_detach(pagedb_file *f) {
  PosixFile *p = (PosixFile *)f;
  pdb_rings_close(p->rings);
  p->rings = NULL;
  if (p->lockfd >= 0) close(p->lockfd);
  p->lockfd = -1;
  if (p->fd >= 0) close(p->fd);
  p->fd = -1;
  return PAGEDB_OK;
}

static int px_unmap(pagedb_file *f, const void *m, size_t n) {
  PosixFile *p = (PosixFile *)f;
  if (munmap((void *)m, n) != 0) return fail(p, PAGEDB_IOERR_MMAP);
  return PAGEDB_OK;
}

static int px_read_batch(pagedb_file *f, pagedb_iovec *reqs, int n) {
#if PAGEDB_HAVE_URING
  PosixFile *p = (PosixFile *)f;
  if (p->rings) {
    int e;
    int rc = pdb_uring_read_batch(p->rings, p->fd, reqs, n, &e);
    if (rc != PAGEDB_OK && e) atomic_store_explicit(&p->err, e, memory_order_relaxed);
    return rc;
  }
#endif
  int first = PAGEDB_OK;
  for (int i = 0; i < n; i++) {
    reqs[i].rc = px_read(f, reqs[i].buf, reqs[i].n, reqs[i].off);
    if (reqs[i].rc != PAGEDB_OK && first == PAGEDB_OK) first = reqs[i].rc;
  }
  return first;
}

static int px_write_start(pagedb_file *f, pagedb_aio *a) {
  a->pPriv = NULL;
#if PAGEDB_HAVE_URING
  PosixFile *p = (PosixFile *)f;
  if (p->rings && pdb_uring_write_start(p->rings, p->fd, a) == 0) return PAGEDB_OK;
#endif
  return a->rc = px_write(f, a->buf, a->n, a->off);
}

static int px_write_wait(pagedb_file *f, pagedb_aio *a, int wait) {
  if (!a->pPriv) return a->rc;
#if PAGEDB_HAVE_URING
  PosixFile *p = (PosixFile *)f;
  int res;
  if (!pdb_uring_write_wait(p->rings, a, wait, &res)) return PAGEDB_BUSY;
  if (res < 0) {
    errno = -res;
    a->rc = fail(p, (errno == ENOSPC || errno == EDQUOT) ? PAGEDB_FULL : PAGEDB_IOERR_WRITE);
  } else {
    /* A short write (a full disk, a signal) is finished the plain way,
    ** which either writes the rest or says why not. */
    size_t done = (size_t)res;
    a->rc = done == a->n ? PAGEDB_OK
                         : px_write(f, (const uint8_t *)a->buf + done, a->n - done, a->off + done);
  }
#endif
  return a->rc;
}

static int px_advise(pagedb_file *f, uint64_t off, uint64_t n, int hint) {
  PosixFile *p = (PosixFile *)f;
  static const int adv[] = {
    [PAGEDB_ADVISE_NORMAL] = POSIX_FADV_NORMAL,
    [PAGEDB_ADVISE_SEQUENTIAL] = POSIX_FADV_SEQUENTIAL,
    [PAGEDB_ADVISE_RANDOM] = POSIX_FADV_RANDOM,
    [PAGEDB_ADVISE_WILLNEED] = POSIX_FADV_WILLNEED,
    [PAGEDB_ADVISE_DONTNEED] = POSIX_FADV_DONTNEED,
  };
  if (hint == PAGEDB_ADVISE_WRITEOUT) {
    /* Writeback started, not waited for: the later fsync waits for what
    ** is left, and is what makes the bytes durable (invariant of xSync).
    ** A failure is not recorded for xLastErrno: the caller ignores it. */
    return sync_file_range(p->fd, (off_t)off, (off_t)n, SYNC_FILE_RANGE_WRITE) == 0 ? PAGEDB_OK : PAGEDB_IOERR;
  }
  if (hint < 0 || hint > PAGEDB_ADVISE_DONTNEED) return PAGEDB_MISUSE;
  int e = posix_fadvise(p->fd, (off_t)off, (off_t)n, adv[hint]);
  if (e != 0) {
    errno = e;
    return fail(p, PAGEDB_IOERR);
  }
  return PAGEDB_OK;
}

static int px_errno(pagedb_file *f) {
  return atomic_load_explicit(&((PosixFile *)f)->err, memory_order_relaxed);
}

static const pagedb_io_methods px_methods = {
  .iVersion = 7,
  .xClose = px_close,
  .xRead = px_read,
  .xWrite = px_write,
  .xTruncate = px_truncate,
  .xSync = px_sync,
  .xFileSize = px_size,
  .xLock = px_lock,
  .xSectorSize = px_sector,
  .xDeviceCharacteristics = px_caps,
  .xMap = px_map,
  .xUnmap = px_unmap,
  .xReadBatch = px_read_batch,
  .xAdvise = px_advise,
  .xLastErrno = px_errno,
  .xWriteStart = px_write_start,
  .xWriteWait = px_write_wait,
  .xMapAt = px_map_at,
  .xDetach = px_detach,
};

/* The alignment O_DIRECT needs for FD: what the file system reports, at
** least 512, and 4096 when it says nothing. */
static int dio_align(int fd) {
  struct statx st;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) == 0 && (st.stx_mask & STATX_DIOALIGN)
      && st.stx_dio_offset_align) {
    uint32_t a = st.stx_dio_offset_align > st.stx_dio_mem_align ? st.stx_dio_offset_align : st.stx_dio_mem_align;
    return a < 512 ? 512 : (int)a;
  }
  return 4096;
}

static int px_open(pagedb_vfs *vfs, const char *path, pagedb_file *f, int flags) {
  PosixFile *p = (PosixFile *)f;
  int kind = vfs->pAppData ? *(const int *)vfs->pAppData : 0;
  int plain = (flags & PAGEDB_VFS_PLAIN) != 0;
  int direct = !plain && ((flags & PAGEDB_VFS_DIRECT) || (kind & K_DIRECT));
  PdbRings *rings = NULL;
  if ((kind & K_URING) && !plain) {
    /* The io_uring VFS must work or fail here, at open, never at the first
    ** read; the direct VFS uses it for batches when the kernel allows. */
    int e = pdb_rings_open(&rings);
    if (e == PDB_RINGS_NOMEM && !(kind & K_DIRECT)) return PAGEDB_NOMEM;
    if (e && !(kind & K_DIRECT)) {
      errno = e;
      return PAGEDB_CANTOPEN_URING;
    }
  }
  /* A new file gets O_DIRECT only once created: a file system that refuses
  ** it then leaves no empty file behind. */
  int create = (flags & PAGEDB_VFS_CREATE) != 0;
  int oflags = O_CLOEXEC | (direct && !create ? O_DIRECT : 0);
  oflags |= (flags & PAGEDB_VFS_READWRITE) ? O_RDWR : O_RDONLY;
  if (create) oflags |= O_CREAT;
  if (flags & PAGEDB_VFS_EXCLUSIVE) oflags |= O_EXCL;
  int fd, refused = 0;
  fd = open_fd(path, oflags, 0644);
  if (fd < 0 && direct && errno == EINVAL) refused = 1;
  if (fd >= 0) {
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) != 0) e = errno;
    else if (S_ISDIR(st.st_mode)) e = EISDIR;
    else if (!S_ISREG(st.st_mode)) e = EINVAL;
    else if (direct && create && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT) != 0) {
      e = errno;
      refused = e == EINVAL;
      if (flags & PAGEDB_VFS_EXCLUSIVE) unlink(path);    /* ours: O_EXCL made it */
    }
    if (e) {
      close(fd);
      fd = -1;
      errno = e;
    }
  }
  if (fd < 0) {
    int e = errno;
    pdb_rings_close(rings);
    errno = e;
    return refused ? PAGEDB_CANTOPEN_DIRECT : e == ENOENT ? PAGEDB_CANTOPEN_NOENT : PAGEDB_CANTOPEN;
  }
  p->path = pdb_strdup(path);
  if (!p->path) {
    close(fd);
    pdb_rings_close(rings);
    return PAGEDB_NOMEM;
  }
  p->fd = fd;
  p->lockfd = -1;
  p->direct = direct;
  p->rings = rings;
  p->sector = direct ? dio_align(fd) : 4096;
  p->base.pMethods = &px_methods;
  return PAGEDB_OK;
}

static int px_sync_dir(pagedb_vfs *vfs, const char *path) {
  (void)vfs;
  char copy[PATH_MAX];   /* dirname() writes into its argument */
  if (strlen(path) >= sizeof copy) {
    errno = ENAMETOOLONG;
    return PAGEDB_IOERR_SYNC;
  }
  strcpy(copy, path);
  int fd = open_fd(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0) return PAGEDB_IOERR_SYNC;
  int r = sys_fsync(fd);
  int e = errno;
  close(fd);
  /* Some file systems cannot fsync a directory (EINVAL): nothing to do. */
  if (r != 0 && e != EINVAL) {
    errno = e;
    return PAGEDB_IOERR_SYNC;
  }
  return PAGEDB_OK;
}

static int px_delete(pagedb_vfs *vfs, const char *path, int syncDir) {
  if (unlink(path) != 0) return errno == ENOENT ? PAGEDB_OK : PAGEDB_IOERR;
  return syncDir ? px_sync_dir(vfs, path) : PAGEDB_OK;
}

static int px_access(pagedb_vfs *vfs, const char *path, int *exists) {
  (void)vfs;
  *exists = access(path, F_OK) == 0;
  return PAGEDB_OK;
}

/* The flavours share everything but their name and kind (pAppData). */
#define PX_VFS(name, kind) {                                          \
    .iVersion = 2, .szFile = sizeof(PosixFile), .zName = name,        \
    .pAppData = (void *)(kind), .xOpen = px_open, .xDelete = px_delete, \
    .xAccess = px_access, .xSyncDir = px_sync_dir,                    \
    .xSetSystemCall = pdb_sys_set, .xGetSystemCall = pdb_sys_get,     \
    .xNextSystemCall = pdb_sys_next }

static const int kDirect = K_DIRECT | K_URING;
static pagedb_vfs posix_vfs = PX_VFS("posix", NULL);
static pagedb_vfs direct_vfs = PX_VFS("direct", &kDirect);
#if PAGEDB_HAVE_URING
static const int kUring = K_URING;
static pagedb_vfs uring_vfs = PX_VFS("io_uring", &kUring);
pagedb_vfs *pdb_uring_vfs(void) { return &uring_vfs; }
#endif

pagedb_vfs *pdb_posix_vfs(void) { return &posix_vfs; }
pagedb_vfs *pdb_direct_vfs(void) { return &direct_vfs; }
