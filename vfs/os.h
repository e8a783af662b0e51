/*
** os.h -- the bottom layer: what the pager sees of the VFS.
**
** The core never calls a method pointer directly; it calls these small
** wrappers, so that a method a backend leaves NULL gets a sensible default
** in one place.
*/
#ifndef PAGEDB_OS_H
#define PAGEDB_OS_H

#include "pagedbInt.h"

#include <stdarg.h>
#include <sys/types.h>

/* The built-in backends, registered on first use of the registry. */
pagedb_vfs *pdb_posix_vfs(void);
pagedb_vfs *pdb_direct_vfs(void);
#if PAGEDB_HAVE_URING
pagedb_vfs *pdb_uring_vfs(void);
#endif
#if PAGEDB_HAVE_CURL
pagedb_vfs *pdb_http_vfs(void);
pagedb_vfs *pdb_https_vfs(void);
pagedb_vfs *pdb_s3_vfs(void);
#endif

/*
** The scheme of PATH if it is a URL ("SCHEME://...": a letter, then
** letters, digits, '+', '-', '.'), lower-cased into OUT (CAP bytes, may be
** NULL), and its length; 0 for a path that is not a URL.
*/
size_t pdb_path_scheme(const char *path, char *out, size_t cap);

/* Whether VFS is one of the built-in remote VFSes (http, https, s3), which
** are read-only. */
int pdb_vfs_is_remote(const pagedb_vfs *vfs);

/*
** The VFS pagedb_open uses for PATH given the NAME it was passed (NULL:
** none), for a read-write open when WRITE.  A URL's scheme chooses the VFS
** of that name, whatever PAGEDB_VFS says; a local path gets NAME, else the
** default.  On failure *OUT is NULL and WHY (CAP bytes) says why:
** PAGEDB_MISUSE (no VFS named NAME; NAME contradicts the scheme; a
** remote VFS named for a local path),
** PAGEDB_CANTOPEN (no VFS for the scheme: a build without libcurl),
** PAGEDB_READONLY (WRITE with a remote VFS).
*/
int pdb_vfs_choose(const char *path, const char *name, int write, pagedb_vfs **out, char *why, size_t cap);

/*
** The remote settings (rconfig.c): pagedb_config's value, else the
** environment's, else the default.  pdb_rconf_set takes an op 7..17 and
** its argument (PAGEDB_OK, PAGEDB_MISUSE); pdb_rconf_get the arguments of
** PAGEDB_CONFIG_GETREMOTE.  pdb_rconf_num and pdb_rconf_str give a
** number's or a string's value (BUF of CAP bytes), or PAGEDB_CANTOPEN with
** MSG naming the variable whose value is bad.
*/
int pdb_rconf_set(int op, va_list ap);
int pdb_rconf_get(va_list ap);
int pdb_rconf_num(int op, int64_t *v, char *msg, size_t cap);
int pdb_rconf_str(int op, char *buf, size_t cap, char *msg, size_t mcap);
/* pdb_rconf_str, and where the value comes from into *SRC ("pagedb_config",
** a variable's name, or "default"). */
int pdb_rconf_str_src(int op, char *buf, size_t cap, const char **src, char *msg, size_t mcap);

/*
** Why the calling thread's latest failed open failed, when errno cannot
** say (a remote server's answer): a backend sets it before failing, the
** pager takes it (and clears it) for the message.  Thread-local.
*/
void pdb_os_set_why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *pdb_os_take_why(void);

/*
** The system calls of the built-in backends, through a table a test can
** change (pagedb_vfs.xSetSystemCall, vfs/syscall.c).  Every read, write,
** truncate, sync and open of os_posix.c goes through these.
*/
enum { PDB_SYS_OPEN, PDB_SYS_PREAD, PDB_SYS_PWRITE, PDB_SYS_FTRUNCATE,
       PDB_SYS_FSYNC, PDB_SYS_FDATASYNC, PDB_SYS_N };
typedef struct PdbSyscall {
  const char *name;
  pagedb_syscall_ptr cur;       /* what the backends call */
  pagedb_syscall_ptr dflt;      /* the libc call */
} PdbSyscall;
extern PdbSyscall pdb_sys[PDB_SYS_N];

int pdb_sys_set(pagedb_vfs *vfs, const char *name, pagedb_syscall_ptr p);
pagedb_syscall_ptr pdb_sys_get(pagedb_vfs *vfs, const char *name);
const char *pdb_sys_next(pagedb_vfs *vfs, const char *name);

static inline int sys_open(const char *path, int flags, mode_t mode) {
  return ((int (*)(const char *, int, mode_t))pdb_sys[PDB_SYS_OPEN].cur)(path, flags, mode);
}
static inline ssize_t sys_pread(int fd, void *buf, size_t n, off_t off) {
  return ((ssize_t (*)(int, void *, size_t, off_t))pdb_sys[PDB_SYS_PREAD].cur)(fd, buf, n, off);
}
static inline ssize_t sys_pwrite(int fd, const void *buf, size_t n, off_t off) {
  return ((ssize_t (*)(int, const void *, size_t, off_t))pdb_sys[PDB_SYS_PWRITE].cur)(fd, buf, n, off);
}
static inline int sys_ftruncate(int fd, off_t size) {
  return ((int (*)(int, off_t))pdb_sys[PDB_SYS_FTRUNCATE].cur)(fd, size);
}
static inline int sys_fsync(int fd) { return ((int (*)(int))pdb_sys[PDB_SYS_FSYNC].cur)(fd); }
static inline int sys_fdatasync(int fd) { return ((int (*)(int))pdb_sys[PDB_SYS_FDATASYNC].cur)(fd); }

/* pread N bytes at OFF into BUF, retrying EINTR and short transfers; past
** the end of the file zero-fill and return PAGEDB_IOERR_SHORT_READ; on
** failure PAGEDB_IOERR_READ with *ERR = errno.  The xRead contract. */
int pdb_pread_all(int fd, void *buf, size_t n, uint64_t off, int *err);

/* Allocate a file object for VFS and open PATH; *PF is NULL on failure. */
int pdb_os_open(pagedb_vfs *vfs, const char *path, int flags, pagedb_file **pf);
/* Close and free F; NULL is a no-op. */
int pdb_os_close(pagedb_file *f);

static inline int pdb_os_read(pagedb_file *f, void *buf, size_t n, uint64_t off) {
  return f->pMethods->xRead(f, buf, n, off);
}
static inline int pdb_os_write(pagedb_file *f, const void *buf, size_t n, uint64_t off) {
  return f->pMethods->xWrite(f, buf, n, off);
}
static inline int pdb_os_truncate(pagedb_file *f, uint64_t size) {
  return f->pMethods->xTruncate(f, size);
}
/* Start writeback of [OFF, OFF+N) (PAGEDB_ADVISE_WRITEOUT): a hint, whose
** failure or absence changes nothing but how long the next sync waits. */
static inline void pdb_os_writeout(pagedb_file *f, uint64_t off, uint64_t n) {
  if (f->pMethods->xAdvise) (void)f->pMethods->xAdvise(f, off, n, PAGEDB_ADVISE_WRITEOUT);
}
static inline int pdb_os_sync(pagedb_file *f, int flags) {
  return f->pMethods->xSync(f, flags);
}
static inline int pdb_os_size(pagedb_file *f, uint64_t *size) {
  return f->pMethods->xFileSize(f, size);
}
static inline int pdb_os_lock(pagedb_file *f, int level) {
  return f->pMethods->xLock(f, level);
}
static inline int pdb_os_caps(pagedb_file *f) {
  return f->pMethods->xDeviceCharacteristics
       ? f->pMethods->xDeviceCharacteristics(f) : 0;
}
static inline int pdb_os_errno(pagedb_file *f) {
  return f->pMethods->xLastErrno ? f->pMethods->xLastErrno(f) : 0;
}
/* Start writing A; a backend without asynchronous writes writes it now. */
static inline int pdb_os_write_start(pagedb_file *f, pagedb_aio *a) {
  if (f->pMethods->iVersion >= 2 && f->pMethods->xWriteStart) return f->pMethods->xWriteStart(f, a);
  a->pPriv = NULL;
  return a->rc = f->pMethods->xWrite(f, a->buf, a->n, a->off);
}
/* Wait for (WAIT 1) or poll (WAIT 0: PAGEDB_BUSY while in flight) A. */
static inline int pdb_os_write_wait(pagedb_file *f, pagedb_aio *a, int wait) {
  if (f->pMethods->iVersion >= 2 && f->pMethods->xWriteWait) return f->pMethods->xWriteWait(f, a, wait);
  return a->rc;
}
/* Map N bytes of F from offset 0 (xMap), every byte of the file in it
** readable at once: a backend that fills its maps on demand (xMapFill)
** fills it whole before returning. */
int pdb_os_map(pagedb_file *f, size_t n, const void **p);
/* The same, leaving the filling to the caller, which must call
** pdb_os_map_fill before touching any range (the pager does). */
int pdb_os_map_lazy(pagedb_file *f, size_t n, const void **p);
/* Whether F's backend fills its maps on demand (xMapFill): then a map
** from pdb_os_map_lazy must be filled range by range before it is read. */
static inline int pdb_os_fills_maps(pagedb_file *f) {
  return f->pMethods->iVersion >= 3 && f->pMethods->xMapFill && f->pMethods->xMap;
}
/* Make ranges of map P readable (pagedb_io_methods.xMapFill). */
static inline int pdb_os_map_fill(pagedb_file *f, const void *p, const uint64_t *off, const uint64_t *len, int n) {
  if (f->pMethods->iVersion < 3 || !f->pMethods->xMapFill) return PAGEDB_OK;
  return f->pMethods->xMapFill(f, p, off, len, n);
}
/* The message of F's latest failure into BUF, or "" if it has none. */
static inline void pdb_os_errmsg(pagedb_file *f, char *buf, size_t n) {
  buf[0] = 0;
  if (f->pMethods->iVersion >= 3 && f->pMethods->xErrmsg) f->pMethods->xErrmsg(f, buf, n);
}
int pdb_os_unmap(pagedb_file *f, const void *p, size_t n);
/* Whether F can be mapped from an offset inside it (xMapAt, version 6):
** only a backend whose maps need no filling is asked. */
static inline int pdb_os_maps_at(pagedb_file *f) {
  return f->pMethods->iVersion >= 6 && f->pMethods->xMapAt && !pdb_os_fills_maps(f);
}
/* Give up F's descriptor, its maps kept (xDetach, version 7); after it
** only pdb_os_unmap and pdb_os_close may be called on F.  0 if the backend
** cannot (its descriptor then stays open until the close). */
static inline int pdb_os_detach(pagedb_file *f) {
  return f->pMethods->iVersion >= 7 && f->pMethods->xDetach && f->pMethods->xDetach(f) == PAGEDB_OK;
}
/* Map N bytes of F from OFF, a multiple of the system page size (xMapAt);
** given back with pdb_os_unmap. */
static inline int pdb_os_map_at(pagedb_file *f, uint64_t off, size_t n, const void **p) {
  *p = NULL;
  return f->pMethods->xMapAt(f, off, n, p);
}
/* Fetch the bytes of [OFF, OFF+LEN) again from where they come from
** (pagedb_io_methods.xRefetch): a no-op for a backend without it. */
static inline int pdb_os_refetch(pagedb_file *f, uint64_t off, uint64_t len) {
  if (f->pMethods->iVersion < 5 || !f->pMethods->xRefetch) return PAGEDB_OK;
  return f->pMethods->xRefetch(f, off, len);
}

#endif /* PAGEDB_OS_H */
