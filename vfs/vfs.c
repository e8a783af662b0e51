/*
** vfs.c -- the registry of VFS backends, by name, as SQLite's
** sqlite3_vfs_register() / sqlite3_vfs_find().
**
** The built-in backends are registered on first use.  The default is the
** first registered with makeDflt, unless the environment variable
** PAGEDB_VFS names another (so that a whole test suite or a shell session
** can be run on another backend without changing code).
**
** A path that is a URL ("SCHEME://...") is opened by the VFS named SCHEME:
** pagedb_open asks pdb_vfs_choose, here, so that no layer above the
** registry, and no local backend, ever looks at where the bytes come from.
** PAGEDB_VFS is the default for local paths only.
*/
#include "os.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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
#if PAGEDB_HAVE_URING
  link_vfs(pdb_uring_vfs(), 0);
#endif
#if PAGEDB_HAVE_CURL
  link_vfs(pdb_http_vfs(), 0);
  link_vfs(pdb_https_vfs(), 0);
  link_vfs(pdb_s3_vfs(), 0);
#endif
}

size_t pdb_path_scheme(const char *path, char *out, size_t cap) {
  size_t n = 0;
  if (out && cap) out[0] = 0;
  if (!path || !isalpha((unsigned char)path[0])) return 0;
  while (isalnum((unsigned char)path[n]) || path[n] == '+' || path[n] == '-' || path[n] == '.') n++;
  if (strncmp(path + n, "://", 3) != 0 || n >= 32) return 0;
  if (out && cap > n) {
    for (size_t i = 0; i < n; i++) out[i] = (char)tolower((unsigned char)path[i]);
    out[n] = 0;
  }
  return n;
}

int pdb_vfs_is_remote(const pagedb_vfs *vfs) {
#if PAGEDB_HAVE_CURL
  return vfs && (vfs == pdb_http_vfs() || vfs == pdb_https_vfs() || vfs == pdb_s3_vfs());
#else
  (void)vfs;
  return 0;
#endif
}

int pdb_vfs_choose(const char *path, const char *name, int write, pagedb_vfs **out, char *why, size_t cap) {
  char scheme[32];
  *out = NULL;
  if (!pdb_path_scheme(path, scheme, sizeof scheme)) {
    /* A local path: the VFS named, else the default (PAGEDB_VFS); not a
    ** remote one, which opens URLs of its scheme only. */
    if (!(*out = pagedb_vfs_find(name))) {
      snprintf(why, cap, "pagedb_open %s: no VFS named '%s' is registered", path, name ? name : getenv("PAGEDB_VFS"));
      return PAGEDB_MISUSE;
    }
    if (pdb_vfs_is_remote(*out)) {
      snprintf(why, cap, "pagedb_open %s: not a URL, and VFS '%s' opens %s:// URLs only", path, (*out)->zName,
               (*out)->zName);
      *out = NULL;
      return PAGEDB_MISUSE;
    }
    return PAGEDB_OK;
  }
  /* A URL: the VFS its scheme names, whatever PAGEDB_VFS says; a name
  ** given must agree. */
  if (name && strcmp(name, scheme) != 0) {
    snprintf(why, cap, "pagedb_open %s: VFS '%s' cannot open a %s:// path: name VFS '%s', or none", path, name, scheme,
             scheme);
    return PAGEDB_MISUSE;
  }
  if (!(*out = pagedb_vfs_find(scheme))) {
#if PAGEDB_HAVE_CURL
    int known = 0;          /* built in, so unregistered by the embedder */
#else
    int known = strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0 || strcmp(scheme, "s3") == 0;
#endif
    snprintf(why, cap, "pagedb_open %s: no VFS '%s' serves %s:// paths%s", path, scheme, scheme,
             known ? ": this pagedb was built without remote datasets (configure found no libcurl, or was given"
                     " --without-curl)"
                   : " (register one with pagedb_vfs_register)");
    return PAGEDB_CANTOPEN;
  }
  if (write && pdb_vfs_is_remote(*out)) {
    snprintf(why, cap, "pagedb_open %s: a remote dataset is read-only: open it with PAGEDB_OPEN_READONLY", path);
    *out = NULL;
    return PAGEDB_READONLY;
  }
  return PAGEDB_OK;
}

/* A thread's message, in memory of its own freed at the thread's exit:
** the library's static TLS block has no room for buffers (pool.c's
** initial-exec variable puts the whole block there). */
#define WHY_MAX 512
static pthread_key_t why_key;
static pthread_once_t why_once = PTHREAD_ONCE_INIT;
static void why_init(void) { pthread_key_create(&why_key, free); }

static char *why_buf(void) {
  pthread_once(&why_once, why_init);
  char *b = pthread_getspecific(why_key);
  if (!b && (b = calloc(2, WHY_MAX)) && pthread_setspecific(why_key, b) != 0) {
    free(b);
    b = NULL;
  }
  return b;
}

void pdb_os_set_why(const char *fmt, ...) {
  char *b = why_buf();
  if (!b) return;           /* out of memory: the message is lost, not the code */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, WHY_MAX, fmt, ap);
  va_end(ap);
}

const char *pdb_os_take_why(void) {
  char *b = why_buf();
  if (!b) return "";
  memcpy(b + WHY_MAX, b, WHY_MAX);
  b[0] = 0;
  return b + WHY_MAX;
}

#if !PAGEDB_HAVE_CURL
/* Built without remote support: no remote reads, so every counter is 0. */
int pagedb_remote_stats(pagedb_remote_counters *out) {
  if (!out) return PAGEDB_MISUSE;
  memset(out, 0, sizeof *out);
  return PAGEDB_OK;
}
#endif

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
  pagedb_file *f = pdb_calloc(1, (size_t)vfs->szFile);
  *pf = NULL;
  if (!f) return PAGEDB_NOMEM;
  pdb_os_take_why();        /* what is told after a failure is this open's */
  int rc = vfs->xOpen(vfs, path, f, flags);
  if (rc != PAGEDB_OK) {
    /* The contract says pMethods stays NULL on failure; if a backend set it
    ** anyway, close what it opened. */
    if (NEVER(f->pMethods)) f->pMethods->xClose(f);
    pdb_free(f);
    return rc;
  }
  *pf = f;
  return PAGEDB_OK;
}

int pdb_os_close(pagedb_file *f) {
  if (!f) return PAGEDB_OK;
  int rc = f->pMethods ? f->pMethods->xClose(f) : PAGEDB_OK;
  pdb_free(f);
  return rc;
}

int pdb_os_map_lazy(pagedb_file *f, size_t n, const void **p) {
  *p = NULL;
  if (!f->pMethods->xMap) return PAGEDB_IOERR_MMAP;
  return f->pMethods->xMap(f, n, p);
}

int pdb_os_map(pagedb_file *f, size_t n, const void **p) {
  int rc = pdb_os_map_lazy(f, n, p);
  const pagedb_io_methods *io = f->pMethods;
  if (rc != PAGEDB_OK || io->iVersion < 3 || !io->xMapFill) return rc;
  /* A backend that fills its maps on demand (the remote VFSes) fills this
  ** one whole now: the caller may touch any byte of the file at once. */
  uint64_t size = 0, off = 0, len;
  rc = pdb_os_size(f, &size);
  len = size < n ? size : n;
  if (rc == PAGEDB_OK && len > 0) rc = io->xMapFill(f, *p, &off, &len, 1);
  if (rc != PAGEDB_OK) {
    pdb_os_unmap(f, *p, n);
    *p = NULL;
  }
  return rc;
}

int pdb_os_unmap(pagedb_file *f, const void *p, size_t n) {
  if (!p || !f->pMethods->xUnmap) return PAGEDB_OK;
  return f->pMethods->xUnmap(f, p, n);
}

pagedb_vfs *pagedb_vfs_next(pagedb_vfs *prev) {
  pthread_mutex_lock(&mu);
  init_builtins();
  pagedb_vfs *v = list;
  if (prev) {
    while (v && v != prev) v = v->pNext;
    v = v ? v->pNext : NULL;
  }
  pthread_mutex_unlock(&mu);
  return v;
}

int pagedb_vfs_check(pagedb_vfs *vfs, const char *dir, char *why, size_t cap) {
  char path[4096];
  char dummy[8];
  if (!why) {
    why = dummy;
    cap = sizeof dummy;
  }
  if (!vfs) {
    snprintf(why, cap, "no VFS given");
    return PAGEDB_MISUSE;
  }
  uint8_t nonce[8];
  pdb_random(nonce, sizeof nonce);
  snprintf(path, sizeof path, "%s/.pagedb-vfs-check-%ld-%llx", dir ? dir : ".", (long)getpid(),
           (unsigned long long)pdb_get64(nonce));
  pagedb_file *f = NULL;
  uint8_t *buf = pdb_buf_alloc(8192, NULL);
  int rc = buf ? PAGEDB_OK : PAGEDB_NOMEM;
  const char *step = "allocating";
  if (rc == PAGEDB_OK) {
    step = "creating a file";
    errno = 0;
    rc = pdb_os_open(vfs, path, PAGEDB_VFS_READWRITE | PAGEDB_VFS_CREATE | PAGEDB_VFS_EXCLUSIVE, &f);
  }
  if (rc == PAGEDB_OK) {
    for (int i = 0; i < 4096; i++) buf[i] = (uint8_t)(i * 7 + 1);
    step = "writing";
    rc = pdb_os_write(f, buf, 4096, 0);
    if (rc == PAGEDB_OK) step = "syncing", rc = pdb_os_sync(f, PAGEDB_SYNC_FULL);
    if (rc == PAGEDB_OK) step = "reading", rc = pdb_os_read(f, buf + 4096, 4096, 0);
    if (rc == PAGEDB_OK && memcmp(buf, buf + 4096, 4096) != 0) step = "reading back", rc = PAGEDB_IOERR_READ;
    if (rc == PAGEDB_OK && f->pMethods->xReadBatch) {
      pagedb_iovec req = { buf + 4096, 4096, 0, PAGEDB_OK };
      memset(buf + 4096, 0, 4096);
      step = "a batched read";
      rc = f->pMethods->xReadBatch(f, &req, 1);
      if (rc == PAGEDB_OK && memcmp(buf, buf + 4096, 4096) != 0) rc = PAGEDB_IOERR_READ;
    }
  }
  int e = rc == PAGEDB_OK ? 0 : f ? pdb_os_errno(f) : errno;
  if (rc == PAGEDB_CANTOPEN_URING) step = "setting up io_uring";
  if (rc == PAGEDB_CANTOPEN_DIRECT) step = "opening a file with O_DIRECT";
  if (rc == PAGEDB_OK) snprintf(why, cap, "ok");
  else snprintf(why, cap, "%s: %s failed in %s: %s", vfs->zName, step, dir ? dir : ".",
                e ? strerror(e) : pagedb_errstr(rc));
  if (f) {
    pdb_os_close(f);
    vfs->xDelete(vfs, path, 0);
  }
  pdb_buf_free(buf);
  return rc;
}
