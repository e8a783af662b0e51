/*
** syscall.c -- the system calls under the built-in backends, by name, so
** that a test can put its own in their place (pagedb_vfs.xSetSystemCall,
** as SQLite's, whose test_syscall.c this serves the same way): an EINTR
** or a transfer cut short on demand proves the retry loops of os_posix.c,
** which a real disk almost never exercises.
**
** The table is shared by the posix, io_uring and direct VFSes, which are
** one implementation.  Reads of it are plain loads: it is changed only
** while nothing does I/O through it (the contract in pagedb.h).
*/
#include "os.h"

#include <fcntl.h>
#include <unistd.h>

/* open(2) is variadic; the table holds a fixed prototype. */
static int real_open(const char *path, int flags, mode_t mode) {
  return open(path, flags, mode);
}

#define CALL(i, name, fn) [i] = { name, (pagedb_syscall_ptr)fn, (pagedb_syscall_ptr)fn }
PdbSyscall pdb_sys[PDB_SYS_N] = {
  CALL(PDB_SYS_OPEN, "open", real_open),
  CALL(PDB_SYS_PREAD, "pread", pread),
  CALL(PDB_SYS_PWRITE, "pwrite", pwrite),
  CALL(PDB_SYS_FTRUNCATE, "ftruncate", ftruncate),
  CALL(PDB_SYS_FSYNC, "fsync", fsync),
  CALL(PDB_SYS_FDATASYNC, "fdatasync", fdatasync),
};

/* The index of call NAME, or -1. */
static int find(const char *name) {
  for (int i = 0; i < PDB_SYS_N; i++)
    if (strcmp(pdb_sys[i].name, name) == 0) return i;
  return -1;
}

int pdb_sys_set(pagedb_vfs *vfs, const char *name, pagedb_syscall_ptr p) {
  (void)vfs;
  if (!name) {
    for (int i = 0; i < PDB_SYS_N; i++) pdb_sys[i].cur = pdb_sys[i].dflt;
    return PAGEDB_OK;
  }
  int i = find(name);
  if (i < 0) return PAGEDB_NOTFOUND;
  pdb_sys[i].cur = p ? p : pdb_sys[i].dflt;
  return PAGEDB_OK;
}

pagedb_syscall_ptr pdb_sys_get(pagedb_vfs *vfs, const char *name) {
  (void)vfs;
  int i = name ? find(name) : -1;
  return i < 0 ? NULL : pdb_sys[i].cur;
}

const char *pdb_sys_next(pagedb_vfs *vfs, const char *name) {
  (void)vfs;
  int i = name ? find(name) + 1 : 0;
  if (name && i == 0) return NULL;    /* no such call: nothing follows it */
  return i < PDB_SYS_N ? pdb_sys[i].name : NULL;
}
