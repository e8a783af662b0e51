/*
** push.c -- copying a committed dataset to object storage or a directory
** (pagedb_push), and a remote dataset to local files (pagedb_pull).
**
** THE FILES, IN THIS ORDER
**
**   (0) DEST-catalog is removed first (a dataset pushed before is then no
**       dataset until this push ends: never old catalog over new data);
**   (1) DEST       the data file, up to the committed end;
**   (2) DEST-index and any other NAME-SUFFIX file of the dataset that
**       exists (PUSH_EXTRA);
**   (3) DEST-catalog, a snapshot of the committed catalog (SQLite's backup
**       API from a read transaction: no half-done commit in it), LAST.
**
** PARTS (doc/format.md "Parts"): a part whose uri is relative (NAME.parts/U)
** has its data file -- all a reader reads of it -- and its catalog (where
** SQL reads the rows of a part by reference) uploaded in (1) to the same
** uri beside DEST, and, into a directory, its index (whose chunks the
** dataset's index, copied as it is, may reference); a part by URL stays
** where it is; a part by an absolute local path refuses the push before
** (0), naming it.  Uploaded to
** a server, each part's ETag as uploaded (a HEAD after its PUT) is set as
** its validator in the snapshot, never in the local catalog, so every
** remote read pins that version.  The index file holds the parts'
** validators too (part records, which never change), so such a push
** uploads in (2), as DEST-index, a new index written for the copy
** (api_index_copy: the committed samples, the parts' records with their
** new validators) in place of the dataset's own, and the snapshot's meta
** keys name it: a remote open maps it as it maps any index.
**
** PULL downloads the catalog first under a temporary name, reads from it
** the parts and meta.index_file, downloads the data file, the index (the
** object meta.index_file names, else NAME-index) as DEST-index, and each
** relative part's data file and catalog to the same uri beside DEST (a
** part's catalog absent on the server, pushed before parts' rows by
** reference, is no error), and renames the
** catalog in LAST, without meta.index_file (the index is DEST-index).
** Validators are kept: they agree with the index's part records, and a
** validator is only ever compared for a remote file.
**
** So at every moment before (3) ends, DEST has no catalog and does not open
** as a dataset; after, every file it names is whole.  An S3 object appears
** only whole (vfs/upload.c); a file in a directory is written under a
** temporary name, synced, renamed, and the directory synced.
**
** CONSISTENCY: the copy is made with commit_mu held, so no commit of this
** handle (nor pagedb_vacuum, which takes it too and rewrites the data file)
** runs meanwhile; the data file only grows past the committed end, so its
** committed bytes do not change under the copy.  Writers go on filling
** pages meanwhile; their commits wait for the push.
*/
#define _GNU_SOURCE
#include "api.h"
#include "catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#if PAGEDB_HAVE_CURL
#include "remote.h"     /* rmt_put_file, rmt_delete, rmt_get_file (vfs/upload.c) */
#endif

/* Dataset files besides the data file and the catalog, uploaded between
** them when they exist. */
static const char *const PUSH_EXTRA[] = { "-index" };

#define MSG_CAP 1024

static int is_url(const char *p) {
  return strncmp(p, "s3://", 5) == 0 || strncmp(p, "http://", 7) == 0 || strncmp(p, "https://", 8) == 0;
}

/* DEST as the destination dataset's name: a DEST ending in '/' (or naming
** an existing local directory) gets SRC's last path component appended.
** Caller frees. */
static char *dest_name(const char *dest, const char *src) {
  struct stat st;
  size_t dl = strlen(dest);
  int dir = dl > 0 && (dest[dl - 1] == '/' || (!is_url(dest) && stat(dest, &st) == 0 && S_ISDIR(st.st_mode)));
  const char *base = strrchr(src, '/');
  base = base ? base + 1 : src;
  char *out = pdb_malloc(dl + strlen(base) + 2);
  if (out) sprintf(out, "%s%s%s", dest, dir && dest[dl - 1] != '/' ? "/" : "", dir ? base : "");
  return out;
}

/* Sync the directory holding PATH. */
static int sync_dir(const char *path, char *msg) {
  char *d = pdb_strdup(path);
  if (!d) return PAGEDB_NOMEM;
  char *slash = strrchr(d, '/');
  if (slash) *(slash == d ? slash + 1 : slash) = 0;
  int fd = open(slash ? d : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int ok = fd >= 0 && fsync(fd) == 0;
  if (!ok) snprintf(msg, MSG_CAP, "syncing directory %s: %s", slash ? d : ".", strerror(errno));
  if (fd >= 0) close(fd);
  pdb_free(d);
  return ok ? PAGEDB_OK : PAGEDB_IOERR;
}

/* Copy LEN bytes of SRC to TMP (created), sync, rename to DEST. */
static int copy_local(const char *src, uint64_t len, const char *tmp, const char *dest, char *msg) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  int out = in >= 0 ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
  if (in < 0 || out < 0) {
    int e = errno;
    snprintf(msg, MSG_CAP, "%s: %s", in < 0 ? src : tmp, strerror(e));
    if (in >= 0) close(in);
    return in >= 0 && (e == EROFS || e == EACCES || e == EPERM) ? PAGEDB_READONLY : PAGEDB_CANTOPEN;
  }
  size_t cap = 1 << 20;
  uint8_t *buf = pdb_malloc(cap);
  int rc = buf ? PAGEDB_OK : PAGEDB_NOMEM;
  if (!buf) snprintf(msg, MSG_CAP, "out of memory copying %s", src);
  for (uint64_t off = 0; rc == PAGEDB_OK && off < len;) {
    size_t n = len - off < cap ? (size_t)(len - off) : cap;
    ssize_t r = pread(in, buf, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      snprintf(msg, MSG_CAP, "reading %s at %llu: %s", src, (unsigned long long)off,
               r < 0 ? strerror(errno) : "the file is shorter than committed");
      rc = PAGEDB_IOERR;
      break;
    }
    for (ssize_t w, done = 0; rc == PAGEDB_OK && done < r; done += w) {
      w = pwrite(out, buf + done, (size_t)(r - done), (off_t)(off + (uint64_t)done));
      if (w < 0 && errno == EINTR) w = 0;
      else if (w <= 0) {
        snprintf(msg, MSG_CAP, "writing %s: %s", tmp, w < 0 ? strerror(errno) : "no progress");
        rc = errno == ENOSPC ? PAGEDB_FULL : PAGEDB_IOERR;
      }
    }
    off += (uint64_t)r;
  }
  if (rc == PAGEDB_OK && fsync(out) != 0) {
    snprintf(msg, MSG_CAP, "syncing %s: %s", tmp, strerror(errno));
    rc = PAGEDB_IOERR;
  }
  pdb_free(buf);
  close(in);
  close(out);
  if (rc == PAGEDB_OK && rename(tmp, dest) != 0) {
    snprintf(msg, MSG_CAP, "rename %s to %s: %s", tmp, dest, strerror(errno));
    rc = PAGEDB_IOERR;
  }
  if (rc != PAGEDB_OK) unlink(tmp);
  return rc;
}

/* Put LEN bytes of local file SRC at DEST (a URL or a local path). */
static int put(const char *src, uint64_t len, const char *dest, char *msg) {
  if (is_url(dest)) {
#if PAGEDB_HAVE_CURL
    return rmt_put_file(dest, src, len, NULL, msg, MSG_CAP);
#else
    snprintf(msg, MSG_CAP, "%s: built without libcurl: no uploads", dest);
    return PAGEDB_CANTOPEN;
#endif
  }
  size_t tl = strlen(dest) + 32;
  char *tmp = pdb_malloc(tl);
  if (!tmp) return PAGEDB_NOMEM;
  snprintf(tmp, tl, "%s.push-%d", dest, (int)getpid());
  int rc = copy_local(src, len, tmp, dest, msg);
  if (rc == PAGEDB_OK) rc = sync_dir(dest, msg);
  pdb_free(tmp);
  return rc;
}

/* Remove DEST (absent is fine). */
static int remove_dest(const char *dest, char *msg) {
  if (is_url(dest)) {
#if PAGEDB_HAVE_CURL
    return rmt_delete(dest, msg, MSG_CAP);
#else
    snprintf(msg, MSG_CAP, "%s: built without libcurl: no uploads", dest);
    return PAGEDB_CANTOPEN;
#endif
  }
  if (unlink(dest) == 0) return sync_dir(dest, msg);
  if (errno == ENOENT) return PAGEDB_OK;
  int e = errno;
  snprintf(msg, MSG_CAP, "removing %s: %s", dest, strerror(e));
  return e == EROFS || e == EACCES || e == EPERM ? PAGEDB_READONLY : PAGEDB_IOERR;
}

/* Remove the -wal and -shm files SQLite left beside the catalog copy
** PATH (a read-only connection to a WAL database cannot); ALL: the copy
** is dropped, else only an empty WAL goes (a WAL with frames is kept). */
static void drop_sqlite_side(const char *path, int all) {
  size_t n = strlen(path) + 8;
  char *p = pdb_malloc(n);
  struct stat st;
  if (!p) return;
  snprintf(p, n, "%s-wal", path);
  int gone = all || stat(p, &st) != 0 || st.st_size == 0;
  if (gone) unlink(p);
  snprintf(p, n, "%s-shm", path);
  if (gone) unlink(p);
  pdb_free(p);
}

/* Whether relative uri U has no ".", ".." or empty component. */
static int rel_uri_ok(const char *u) {
  size_t n = strlen(u);
  return n && u[0] != '/' && u[n - 1] != '/' && !strstr(u, "//") && strcmp(u, ".") && strcmp(u, "..")
      && strncmp(u, "./", 2) && strncmp(u, "../", 3) && !strstr(u, "/./") && !strstr(u, "/../")
      && !(n >= 2 && strcmp(u + n - 2, "/.") == 0) && !(n >= 3 && strcmp(u + n - 3, "/..") == 0);
}

/* URI beside dataset NAME: in NAME's directory (or URL prefix).  Caller frees. */
static char *beside(const char *name, const char *uri) {
  const char *slash = strrchr(name, '/');
  size_t dn = slash ? (size_t)(slash - name + 1) : 0;
  char *out = pdb_malloc(dn + strlen(uri) + 1);
  if (out) sprintf(out, "%.*s%s", (int)dn, name, uri);
  return out;
}

/* Make the local directories PATH's name lies in below its dataset's
** directory (URI's components but the last, beside NAME). */
static int make_dirs(const char *name, const char *uri, char *msg) {
  char *p = beside(name, uri);
  if (!p) return PAGEDB_NOMEM;
  size_t from = strlen(p) - strlen(uri);
  int rc = PAGEDB_OK;
  for (char *c = strchr(p + from, '/'); c && rc == PAGEDB_OK; c = strchr(c + 1, '/')) {
    *c = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      snprintf(msg, MSG_CAP, "making directory %s: %s", p, strerror(errno));
      rc = PAGEDB_CANTOPEN;
    }
    *c = '/';
  }
  pdb_free(p);
  return rc;
}

/* P + SUFFIX (pdb_malloc'd; NULL without memory). */
static char *suffixed(const char *p, const char *suffix) {
  size_t n = strlen(p) + strlen(suffix) + 1;
  char *c = pdb_malloc(n);
  if (c) snprintf(c, n, "%s%s", p, suffix);
  return c;
}

static char *catalog_of(const char *p) { return suffixed(p, "-catalog"); }

/* The parts a push uploads (relative uris), or a pull downloads. */
typedef struct PartList {
  size_t n, cap;
  int64_t *k;
  char **uri;
  char **val;               /* push: the validator as uploaded (NULL none) */
  char *msg;
  const char *what;         /* the dataset, for messages */
  int pull;
} PartList;

static int part_add(void *ctx, int64_t k, const char *uuid, const char *uri) {
  (void)uuid;
  PartList *l = ctx;
  if (pdb_path_scheme(uri, NULL, 0)) return PAGEDB_OK;   /* by URL: stays */
  if (uri[0] == '/') {
    snprintf(l->msg, MSG_CAP, "part %lld of %s is at the absolute path %s, which a %s cannot reach: commit it under"
             " NAME.parts/ or by URL", (long long)k, l->what, uri, l->pull ? "pulled copy" : "remote reader");
    return PAGEDB_MISUSE;
  }
  if (!rel_uri_ok(uri)) {
    snprintf(l->msg, MSG_CAP, "part %lld of %s has the uri '%s', with an empty, '.' or '..' component", (long long)k,
             l->what, uri);
    return PAGEDB_CORRUPT_CATALOG;
  }
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    int64_t *kk = pdb_realloc(l->k, cap * sizeof *kk);
    if (kk) l->k = kk;
    char **u = kk ? pdb_realloc(l->uri, cap * sizeof *u) : NULL;
    if (u) l->uri = u;
    char **v = u ? pdb_realloc(l->val, cap * sizeof *v) : NULL;
    if (v) l->val = v;
    if (!v) return PAGEDB_NOMEM;
    l->cap = cap;
  }
  l->k[l->n] = k;
  l->val[l->n] = NULL;
  if (!(l->uri[l->n] = pdb_strdup(uri))) return PAGEDB_NOMEM;
  l->n++;
  return PAGEDB_OK;
}

static void part_list_free(PartList *l) {
  for (size_t i = 0; i < l->n; i++) {
    pdb_free(l->uri[i]);
    pdb_free(l->val[i]);
  }
  pdb_free(l->k);
  pdb_free(l->uri);
  pdb_free(l->val);
}

/* Upload the relative parts of L (step 1): each data file from beside
** SRC to beside TO, and its validator as uploaded into L. */
static int push_parts(const char *src, const char *to, PartList *l, char *msg) {
  int rc = PAGEDB_OK;
  for (size_t i = 0; rc == PAGEDB_OK && i < l->n; i++) {
    char *s = beside(src, l->uri[i]), *t = beside(to, l->uri[i]);
    struct stat st;
    if (!s || !t) rc = PAGEDB_NOMEM;
    else if (stat(s, &st) != 0) {
      snprintf(msg, MSG_CAP, "part %lld (%s): %s", (long long)l->k[i], s, strerror(errno));
      rc = PAGEDB_CANTOPEN;
    }
    if (rc == PAGEDB_OK && !is_url(t)) rc = make_dirs(to, l->uri[i], msg);
    if (rc == PAGEDB_OK) rc = put(s, (uint64_t)st.st_size, t, msg);
#if PAGEDB_HAVE_CURL
    RmtObject *o = NULL;
    if (rc == PAGEDB_OK && is_url(t) && (rc = rmt_open(t, &o, msg, MSG_CAP)) == PAGEDB_OK) {
      const char *v = rmt_validator(o);
      if (!v[0]) {
        snprintf(msg, MSG_CAP, "%s: the server gave no ETag nor Last-Modified: part %lld could not be pinned", t,
                 (long long)l->k[i]);
        rc = PAGEDB_IOERR_REMOTE;
      } else if (!(l->val[i] = pdb_strdup(v))) {
        rc = PAGEDB_NOMEM;
      }
      rmt_close(o);
    }
#endif
    /* Its catalog beside it: the rows of a part by reference are read
    ** there (doc/format.md, "Parts' rows by reference"). */
    char *sc = rc == PAGEDB_OK ? catalog_of(s) : NULL, *tc = sc ? catalog_of(t) : NULL;
    if (rc == PAGEDB_OK && !tc) rc = PAGEDB_NOMEM;
    if (tc && stat(sc, &st) == 0) rc = put(sc, (uint64_t)st.st_size, tc, msg);
    pdb_free(sc);
    pdb_free(tc);
    /* Its index beside it, into a directory: the dataset's index, copied
    ** as it is, may reference its chunks (doc/format.md, "Parts' chunks by
    ** reference").  A server gets an index of the copy's own instead. */
    char *si = rc == PAGEDB_OK && !is_url(t) ? suffixed(s, "-index") : NULL, *ti = si ? suffixed(t, "-index") : NULL;
    if (si && !ti) rc = PAGEDB_NOMEM;
    if (ti && stat(si, &st) == 0) rc = put(si, (uint64_t)st.st_size, ti, msg);
    pdb_free(si);
    pdb_free(ti);
    pdb_free(s);
    pdb_free(t);
  }
  if (rc == PAGEDB_NOMEM) snprintf(msg, MSG_CAP, "out of memory pushing the parts of %s", src);
  return rc;
}

/* Upload to DEST the index of the copy (step 2 of a push whose parts
** were pinned anew): written as TMP.new (dx_file), uploaded, removed.
** *XM: what the copy's catalog records of it.  commit_mu held. */
static int put_index_copy(pagedb *db, const PartList *l, const char *dest, const char *tmp, DxMeta *xm, char *msg) {
  ApiIxCopy cp = { tmp, l->k, l->val, l->n };
  Dx *x = NULL;
  pdb_msg m = { 0 };
  int rc = api_index_copy(db, &m, &cp, &x, xm);
  if (rc != PAGEDB_OK) {
    snprintf(msg, MSG_CAP, "writing the index of the copy: %s", pdb_msg_text(&m));
    return rc;
  }
  rc = put(dx_file(x), xm->len, dest, msg);
  dx_close(x);              /* never installed: the file goes */
  return rc;
}

/* The files of steps (1)-(2), with commit_mu held.  NOIX: upload a new
** index for the copy (parts pinned anew; TMP its local path, *XM what the
** catalog records of it) instead of the dataset's. */
static int push_files(pagedb *db, const char *to, PartList *parts, int noix, const char *tmp, DxMeta *xm,
                      char *msg) {
  size_t tl = strlen(to) + 64, sl = strlen(db->path) + 64;
  char *t = pdb_malloc(tl), *s = pdb_malloc(sl);
  int rc = t && s ? PAGEDB_OK : PAGEDB_NOMEM;
  struct stat st;
  if (rc == PAGEDB_OK) {
    snprintf(t, tl, "%s-catalog", to);
    rc = remove_dest(t, msg);
  }
  if (rc == PAGEDB_OK) {
    uint64_t end = pager_data_off(db->pager) + atomic_load(&db->committed) * pager_page_size(db->pager);
    /* The last committed page may end before the page does. */
    if (stat(db->path, &st) != 0) {
      snprintf(msg, MSG_CAP, "%s: %s", db->path, strerror(errno));
      rc = PAGEDB_IOERR;
    } else {
      rc = put(db->path, (uint64_t)st.st_size < end ? (uint64_t)st.st_size : end, to, msg);
    }
  }
  if (rc == PAGEDB_OK) rc = push_parts(db->path, to, parts, msg);
  for (size_t i = 0; rc == PAGEDB_OK && i < sizeof PUSH_EXTRA / sizeof PUSH_EXTRA[0]; i++) {
    snprintf(s, sl, "%s%s", db->path, PUSH_EXTRA[i]);
    snprintf(t, tl, "%s%s", to, PUSH_EXTRA[i]);
    if (noix && strcmp(PUSH_EXTRA[i], "-index") == 0) rc = put_index_copy(db, parts, t, tmp, xm, msg);
    else if (stat(s, &st) == 0) rc = put(s, (uint64_t)st.st_size, t, msg);
  }
  pdb_free(t);
  pdb_free(s);
  return rc;
}

int pagedb_push(pagedb *db, const char *dest) {
  if (!db || db->failed || !dest || !*dest) {
    if (db) pdb_err(db, &db->err, PAGEDB_MISUSE, "pagedb_push: %s", !dest || !*dest ? "no destination" : "a failed handle");
    return PAGEDB_MISUSE;
  }
  if (is_url(db->path))
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "pagedb_push: %s is remote: push copies a local dataset (use pagedb_pull)",
                   db->path);
  char *to = dest_name(dest, db->path);
  char msg[MSG_CAP] = "";
  const char *tmpdir = getenv("TMPDIR");
  size_t cl = strlen(tmpdir && *tmpdir ? tmpdir : "/tmp") + 64;
  char *snap = pdb_malloc(cl), *cat = to ? pdb_malloc(strlen(to) + 16) : NULL;
  if (!to || !snap || !cat) {
    pdb_free(to);
    pdb_free(snap);
    pdb_free(cat);
    return pdb_err(db, &db->err, PAGEDB_NOMEM, "out of memory pushing %s", db->path);
  }
  sprintf(cat, "%s-catalog", to);
  snprintf(snap, cl, "%s/pagedb-push-%d-%p", tmpdir && *tmpdir ? tmpdir : "/tmp", (int)getpid(), (void *)db);
  int rc = PAGEDB_OK;
#if PAGEDB_HAVE_CURL
  /* Bad credentials or settings fail the push before the destination's
  ** old catalog is removed (step 0). */
  if (is_url(to) && (rc = rmt_push_check(to, msg, MSG_CAP)) != PAGEDB_OK) {
    pdb_free(to);
    pdb_free(snap);
    pdb_free(cat);
    return pdb_err(db, &db->err, rc, "pagedb_push %s to %s: %s", db->path, dest, msg);
  }
#endif
  pthread_mutex_lock(&db->commit_mu);
  CatSnap *cs = NULL;
  rc = cat_snap_open(db->cat, &db->err, &cs);
  if (rc == PAGEDB_OK) {
    unlink(snap);
    rc = cat_snap_backup(cs, &db->err, snap);
    cat_snap_close(cs);
    PartList parts = { .msg = msg, .what = db->path };
    int noix = 0;
    if (rc == PAGEDB_OK) {
      rc = cat_file_part_rows(snap, part_add, &parts, msg, MSG_CAP);
      if (rc == PAGEDB_NOMEM && !msg[0]) snprintf(msg, MSG_CAP, "out of memory");
      noix = is_url(to) && parts.n > 0;
      DxMeta xm = { 0 };
      char *ixtmp = noix ? pdb_malloc(strlen(snap) + 8) : NULL;
      if (noix && !ixtmp) {
        rc = PAGEDB_NOMEM;
        snprintf(msg, MSG_CAP, "out of memory");
      }
      if (ixtmp) sprintf(ixtmp, "%s-index", snap);
      if (rc == PAGEDB_OK) rc = push_files(db, to, &parts, noix, ixtmp, &xm, msg);
      /* Pinned anew on a server, in the rows and in the new index; a copy
      ** in a directory keeps its rows (and its index, which agrees with
      ** them). */
      int64_t ixv[5] = { (int64_t)xm.id, (int64_t)xm.dir, (int64_t)xm.len, (int64_t)xm.samples, (int64_t)xm.pages };
      if (rc == PAGEDB_OK && noix) rc = cat_file_push_fix(snap, parts.k, parts.val, parts.n, 1, ixv, msg, MSG_CAP);
      pdb_free(ixtmp);
      if (rc == PAGEDB_OK) {
        struct stat st;
        rc = stat(snap, &st) == 0 ? put(snap, (uint64_t)st.st_size, cat, msg) : PAGEDB_IOERR;
        if (rc == PAGEDB_IOERR && !msg[0]) snprintf(msg, MSG_CAP, "%s: %s", snap, strerror(errno));
      }
      if (rc != PAGEDB_OK) pdb_err(db, &db->err, rc, "pagedb_push %s to %s: %s", db->path, to, msg);
    }
    part_list_free(&parts);
  }
  pthread_mutex_unlock(&db->commit_mu);
  unlink(snap);
  drop_sqlite_side(snap, 1);
  pdb_free(snap);
  pdb_free(cat);
  pdb_free(to);
  return rc;
}

int pagedb_pull(const char *src, const char *dest, char *errmsg, size_t cap) {
  char msg[MSG_CAP] = "";
  int rc = PAGEDB_OK;
  char *to = src && dest && *dest ? dest_name(dest, src) : NULL;
  if (!src || !dest || !*dest || !is_url(src)) {
    snprintf(msg, sizeof msg, "pagedb_pull: %s", !src || !is_url(src) ? "the source is not an s3://, http:// or https:// URL"
                                                                       : "no destination");
    rc = PAGEDB_MISUSE;
  }
#if !PAGEDB_HAVE_CURL
  if (rc == PAGEDB_OK) {
    snprintf(msg, sizeof msg, "%s: built without libcurl: no remote datasets", src);
    rc = PAGEDB_CANTOPEN;
  }
#else
  char ixf[256] = "";
  size_t sl = src ? strlen(src) + sizeof ixf + 32 : 0, tl = to ? strlen(to) + 32 : 0;
  char *s = sl ? pdb_malloc(sl) : NULL, *t = tl ? pdb_malloc(tl) : NULL, *tcat = tl ? pdb_malloc(tl) : NULL;
  PartList parts = { .msg = msg, .what = src, .pull = 1 };
  size_t pgot = 0;   /* parts downloaded */
  struct stat st;
  if (tcat) tcat[0] = 0;
  if (rc == PAGEDB_OK && (!to || !s || !t || !tcat)) {
    snprintf(msg, sizeof msg, "out of memory pulling %s", src);
    rc = PAGEDB_NOMEM;
  }
  /* Nothing is overwritten. */
  const char *suffix[] = { "", "-index", "-catalog" };
  for (int i = 0; rc == PAGEDB_OK && i < 3; i++) {
    snprintf(t, tl, "%s%s", to, suffix[i]);
    if (lstat(t, &st) == 0) {
      snprintf(msg, sizeof msg, "%s exists: pagedb_pull does not overwrite", t);
      rc = PAGEDB_CANTOPEN;
    }
  }
  /* The catalog first, under a temporary name: it says what else to
  ** fetch (parts, meta.index_file), and is renamed in last. */
  int got = 0;
  if (rc == PAGEDB_OK) {
    snprintf(s, sl, "%s-catalog", src);
    snprintf(tcat, tl, "%s-catalog.pull-%d", to, (int)getpid());
    unlink(tcat);
    rc = rmt_get_file(s, tcat, UINT64_MAX, NULL, 0, msg, sizeof msg);
    if (rc == PAGEDB_OK) got |= 1 << 3;
  }
  if (rc == PAGEDB_OK) rc = cat_file_meta_text(tcat, "index_file", ixf, sizeof ixf, msg, sizeof msg);
  if (rc == PAGEDB_OK && ixf[0] && (strchr(ixf, '/') || !strcmp(ixf, ".") || !strcmp(ixf, ".."))) {
    snprintf(msg, sizeof msg, "catalog %s-catalog: meta.index_file '%s' is not a name beside the dataset", src, ixf);
    rc = PAGEDB_CORRUPT_CATALOG;
  }
  if (rc == PAGEDB_OK) rc = cat_file_part_rows(tcat, part_add, &parts, msg, sizeof msg);
  if (rc == PAGEDB_NOMEM && !msg[0]) snprintf(msg, sizeof msg, "out of memory pulling %s", src);
  for (size_t i = 0; rc == PAGEDB_OK && i < parts.n; i++) {
    char *p = beside(to, parts.uri[i]);
    if (p && lstat(p, &st) == 0) {
      snprintf(msg, sizeof msg, "%s exists: pagedb_pull does not overwrite", p);
      rc = PAGEDB_CANTOPEN;
    }
    pdb_free(p);
  }
  for (int i = 0; rc == PAGEDB_OK && i < 2; i++) {
    /* The index the catalog names: beside SRC (meta.index_file, a name
    ** without '/'), else SRC-index. */
    const char *slash = strrchr(src, '/');
    if (i == 1 && ixf[0]) snprintf(s, sl, "%.*s%s", slash ? (int)(slash - src + 1) : 0, src, ixf);
    else snprintf(s, sl, "%s%s", src, suffix[i]);
    snprintf(t, tl, "%s%s", to, suffix[i]);
    rc = rmt_get_file(s, t, UINT64_MAX, NULL, 0, msg, sizeof msg);
    if (rc == PAGEDB_CANTOPEN_NOENT && i == 1) rc = PAGEDB_OK;   /* no index */
    else if (rc == PAGEDB_OK) got |= 1 << i;
    /* Each rename durable before the next file: the catalog's never
    ** reaches the disk before the data file's. */
    if (rc == PAGEDB_OK && (got & (1 << i))) rc = sync_dir(t, msg);
  }
  for (; rc == PAGEDB_OK && pgot < parts.n; pgot++) {
    char *a = beside(src, parts.uri[pgot]), *b = beside(to, parts.uri[pgot]);
    rc = a && b ? make_dirs(to, parts.uri[pgot], msg) : PAGEDB_NOMEM;
    if (rc == PAGEDB_OK) rc = rmt_get_file(a, b, UINT64_MAX, NULL, 0, msg, sizeof msg);
    if (rc == PAGEDB_OK) rc = sync_dir(b, msg);
    /* And its catalog (a push uploads it; one made before parts' rows by
    ** reference may lack it). */
    char *ac = rc == PAGEDB_OK ? catalog_of(a) : NULL, *bc = ac ? catalog_of(b) : NULL;
    if (rc == PAGEDB_OK && !bc) rc = PAGEDB_NOMEM;
    if (bc) {
      rc = rmt_get_file(ac, bc, UINT64_MAX, NULL, 0, msg, sizeof msg);
      if (rc == PAGEDB_CANTOPEN_NOENT) {
        rc = PAGEDB_OK;
        msg[0] = 0;
      } else if (rc == PAGEDB_OK) {
        rc = sync_dir(bc, msg);
      }
    }
    pdb_free(ac);
    pdb_free(bc);
    if (rc == PAGEDB_NOMEM && !msg[0]) snprintf(msg, sizeof msg, "out of memory pulling %s", src);
    pdb_free(a);
    pdb_free(b);
    if (rc != PAGEDB_OK) break;
  }
  /* The index is DEST-index: the key naming another goes. */
  if (rc == PAGEDB_OK && ixf[0]) rc = cat_file_push_fix(tcat, NULL, NULL, 0, 1, NULL, msg, sizeof msg);
  if (rc == PAGEDB_OK) {
    snprintf(t, tl, "%s-catalog", to);
    if (rename(tcat, t) != 0) {
      snprintf(msg, sizeof msg, "rename %s to %s: %s", tcat, t, strerror(errno));
      rc = PAGEDB_IOERR;
    } else {
      got &= ~(1 << 3);
      rc = sync_dir(t, msg);
    }
  }
  for (int i = 0; rc != PAGEDB_OK && t && i < 2; i++)
    if (got & (1 << i)) {
      snprintf(t, tl, "%s%s", to, suffix[i]);
      unlink(t);
    }
  for (size_t i = 0; rc != PAGEDB_OK && i < pgot; i++) {
    char *b = beside(to, parts.uri[i]), *bc = b ? catalog_of(b) : NULL;
    if (b) unlink(b);   /* the one that failed: rmt_get_file removed it */
    if (bc) unlink(bc);
    pdb_free(bc);
    pdb_free(b);
  }
  if (tcat && (got & (1 << 3))) unlink(tcat);
  if (tcat && tcat[0]) drop_sqlite_side(tcat, (got & (1 << 3)) != 0);
  part_list_free(&parts);
  pdb_free(s);
  pdb_free(t);
  pdb_free(tcat);
#endif
  pdb_free(to);
  if (errmsg && cap) snprintf(errmsg, cap, "%s", rc == PAGEDB_OK ? "" : msg);
  return rc;
}
