/*
** vfs.c -- the registry of VFS backends, by name, as SQLite's
** sqlite3_vfs_register() / sqlite3_vfs_find().
**
** The built-in backends are registered on first use.  The default is the
** first registered with makeDflt, unless the environment variable
** PAGEDB_VFS names another (so that a whole test suite or a shell session
** can be run on another backend without changing code).
*/
#include "os.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pagedb_vfs *list;        /* registered VFSes, default first */
static int ready;               /* built-ins registered */

/* Caller holds mu. */
static void unlink_vfs(pagedb_vfs *vfs) {
  for (pagedb_vfs **pp = &list; *pp; pp = &(*pp)->pNext) {
    if (*pp == vfs) {
      *pp = vfs->pNext;
      return;
    }
  }
}

/* Caller holds mu. */
static void link_vfs(pagedb_vfs *vfs, int makeDflt) {
  unlink_vfs(vfs);
  if (makeDflt || !list) {
    vfs->pNext = list;
    list = vfs;
  } else {
    vfs->pNext = list->pNext;
    list->pNext = vfs;
  }
}

/* Caller holds mu. */
static void init_builtins(void) {
  if (ready) return;
  ready = 1;
  link_vfs(pdb_posix_vfs(), 1);
  link_vfs(pdb_direct_vfs(), 0);
  link_vfs(pdb_uring_vfs(), 0);
}

int pagedb_vfs_register(pagedb_vfs *vfs, int makeDflt) {
  if (!vfs || !vfs->zName || !vfs->zName[0] || vfs->iVersion < 1 || !vfs->xOpen
      || vfs->szFile < (int)sizeof(pagedb_file))
    return PAGEDB_MISUSE;
  pthread_mutex_lock(&mu);
  init_builtins();
  for (pagedb_vfs *v = list; v; v = v->pNext) {
    if (v != vfs && strcmp(v->zName, vfs->zName) == 0) {
      unlink_vfs(v);
      break;
    }
  }
  link_vfs(vfs, makeDflt);
  pthread_mutex_unlock(&mu);
  return PAGEDB_OK;
}

int pagedb_vfs_unregister(pagedb_vfs *vfs) {
  if (!vfs) return PAGEDB_MISUSE;
  pthread_mutex_lock(&mu);
  init_builtins();
  unlink_vfs(vfs);
  pthread_mutex_unlock(&mu);
  return PAGEDB_OK;
}

pagedb_vfs *pagedb_vfs_find(const char *name) {
  pthread_mutex_lock(&mu);
  init_builtins();
  if (!name) {
    const char *env = getenv("PAGEDB_VFS");
    if (env && env[0]) name = env;
  }
  pagedb_vfs *v = list;
  if (name) {
    while (v && strcmp(v->zName, name) != 0) v = v->pNext;
  }
  pthread_mutex_unlock(&mu);
  return v;
}

int pdb_os_open(pagedb_vfs *vfs, const char *path, int flags, pagedb_file **pf) {
  pagedb_file *f = calloc(1, (size_t)vfs->szFile);
  *pf = NULL;
  if (!f) return PAGEDB_NOMEM;
  int rc = vfs->xOpen(vfs, path, f, flags);
  if (rc != PAGEDB_OK) {
    /* The contract says pMethods stays NULL on failure; if a backend set it
    ** anyway, close what it opened. */
    if (NEVER(f->pMethods)) f->pMethods->xClose(f);
    free(f);
    return rc;
  }
  *pf = f;
  return PAGEDB_OK;
}

int pdb_os_close(pagedb_file *f) {
  if (!f) return PAGEDB_OK;
  int rc = f->pMethods ? f->pMethods->xClose(f) : PAGEDB_OK;
  free(f);
  return rc;
}

int pdb_os_map(pagedb_file *f, size_t n, const void **p) {
  *p = NULL;
  if (!f->pMethods->xMap) return PAGEDB_IOERR_MMAP;
  return f->pMethods->xMap(f, n, p);
}

int pdb_os_unmap(pagedb_file *f, const void *p, size_t n) {
  if (!p || !f->pMethods->xUnmap) return PAGEDB_OK;
  return f->pMethods->xUnmap(f, p, n);
}
