/*
** orphans.c -- the parts under NAME.parts/ that no commit took
** (doc/format.md, "Orphans"): listed, and removed when old enough.
**
** An orphan is a dataset whose data file lies directly in NAME.parts/ and
** whose uuid no row of table part has: a part of a job that failed, a
** retried or speculative task's duplicate, a commit that did not land.
** Its files are the data file F and F-catalog (-wal, -shm, -journal),
** F-index (.new).
**
** INVARIANTS.
**   - A committed part is never listed: the uuids are read from the
**     catalog in one read transaction taken under commit_mu, so no commit
**     of this handle lands in between, and a read-write handle holds the
**     dataset's write lock, so no other process's commit lands at all.
**     Removal therefore needs a read-write handle.
**   - A part being written is never removed: only what is older than the
**     caller's MIN_AGE (since the newest of its files last changed) goes,
**     and a file that does not open as a data file (one being created, or
**     not a dataset at all) is not a part, and is left alone.
**   - Nothing outside NAME.parts/ is touched, nor any subdirectory of it.
*/
#include "api.h"
#include "os.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The companions of a part's data file F, as suffixes of F's name. */
static const char *const companions[] = { "-catalog", "-catalog-wal", "-catalog-shm", "-catalog-journal",
                                          "-index", "-index.new" };
#define NCOMP (sizeof companions / sizeof *companions)

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && strcmp(s + n - k, suffix) == 0;
}

/* The committed parts' uuids (32 hex digits each), sorted. */
typedef struct Uuids {
  char (*u)[33];
  size_t n, cap;
} Uuids;

static int add_uuid(void *ctx, const CatPart *p) {
  Uuids *s = ctx;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    char (*u)[33] = pdb_realloc(s->u, cap * sizeof *u);
    if (!u) return PAGEDB_NOMEM;
    s->u = u;
    s->cap = cap;
  }
  memcpy(s->u[s->n++], p->uuid, 33);
  return PAGEDB_OK;
}

static int by_uuid(const void *a, const void *b) { return strcmp(a, b); }

/* Read the uuids of DB's committed parts into S (commit_mu held). */
static int committed_uuids(pagedb *db, pdb_msg *m, Uuids *s) {
  CatSnap *cs = NULL;
  int rc = cat_snap_open(db->cat, m, &cs);
  CatVal v;
  if (rc == PAGEDB_OK) rc = cat_snap_meta(cs, m, "parts", &v, NULL, 0);
  /* Without meta.parts no part was ever committed (a table named part is
  ** then the application's). */
  if (rc == PAGEDB_OK && v.type == CAT_INTEGER && v.i > 0) rc = cat_snap_parts(cs, m, add_uuid, s);
  cat_snap_close(cs);
  if (rc == PAGEDB_OK && s->n > 1) qsort(s->u, s->n, sizeof *s->u, by_uuid);
  return rc;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Bytes and the newest change (ms) of FILE, added to *BYTES and *NEWEST;
** 0 if it exists, else 1. */
static int stat_into(const char *file, int64_t *bytes, int64_t *newest) {
  struct stat st;
  if (lstat(file, &st) != 0 || !S_ISREG(st.st_mode)) return 1;
  int64_t t = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
  int64_t c = (int64_t)st.st_ctim.tv_sec * 1000 + st.st_ctim.tv_nsec / 1000000;
  if (c > t) t = c;
  if (t > *newest) *newest = t;
  *bytes += (int64_t)st.st_size;
  return 0;
}

/* Remove the orphan whose data file is PATH: its companions first, the
** data file last, so that a removal cut short leaves at most a data file
** (still an orphan, listed again) and never a catalog without one. */
static int remove_part(pagedb *db, pdb_msg *m, const char *path) {
  char f[PDB_MSG_MAX + 64];
  for (size_t i = NCOMP; i-- > 0;) {
    snprintf(f, sizeof f, "%s%s", path, companions[i]);
    if (unlink(f) != 0 && errno != ENOENT)
      return pdb_err(db, m, PAGEDB_IOERR, "cannot remove orphan part file %s: %s", f, strerror(errno));
  }
  if (unlink(path) != 0 && errno != ENOENT)
    return pdb_err(db, m, PAGEDB_IOERR, "cannot remove orphan part %s: %s", path, strerror(errno));
  return PAGEDB_OK;
}

/* The uuid of the data file PATH as 32 hex digits, or 0 if it does not
** open as one (not a part). */
static int part_uuid(pagedb *db, const char *path, char out[33]) {
  Pager *p = NULL;
  pdb_msg em = { 0 };
  if (pager_open(db, &em, db->vfs, path, 1, &p) != PAGEDB_OK) {
    pager_close(p);
    return 0;
  }
  pdb_uuid_hex(pager_uuid(p), out);
  pager_close(p);
  return 1;
}

/* --- on object storage -------------------------------------------------- */

#if PAGEDB_HAVE_CURL
#include "catalog.h"
#include "remote.h"     /* rmt_list, rmt_get_file, rmt_delete */

/* The objects under a prefix: key, size, mtime (ms). */
typedef struct Obj {
  char *key;
  int64_t size, mtime;
} Obj;
typedef struct Objs {
  Obj *o;
  size_t n, cap;
} Objs;

static int add_obj(void *ctx, const char *key, uint64_t size, long long mtime) {
  Objs *s = ctx;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    Obj *o = pdb_realloc(s->o, cap * sizeof *o);
    if (!o) return PAGEDB_NOMEM;
    s->o = o;
    s->cap = cap;
  }
  if (!(s->o[s->n].key = pdb_strdup(key))) return PAGEDB_NOMEM;
  s->o[s->n].size = (int64_t)size;
  s->o[s->n++].mtime = mtime * 1000;
  return PAGEDB_OK;
}

static int add_uuid_text(void *ctx, const char *uuid) {
  CatPart p = { 0 };
  if (strlen(uuid) != 32) return PAGEDB_OK;
  memcpy(p.uuid, uuid, 33);
  return add_uuid(ctx, &p);
}

static int by_key(const void *a, const void *b) { return strcmp(((const Obj *)a)->key, ((const Obj *)b)->key); }

/* Object KEY's entry in S (sorted), or NULL. */
static Obj *find_obj(Objs *s, const char *key) {
  Obj k = { (char *)key, 0, 0 };
  return s->n ? bsearch(&k, s->o, s->n, sizeof *s->o, by_key) : NULL;
}

/* Report (and with REMOVE delete: companions first) orphan DATA, a key of
** bucket BUCKET (s3://BUCKET/), and its companions COMP of S. */
static int remote_orphan(pagedb *db, pdb_msg *m, const char *bucket, Objs *s, const Obj *data, const char *uuid,
                         int64_t now, int64_t min_age, int flags, int (*xorphan)(void *, const pagedb_orphan *),
                         void *ctx, int64_t *n, int comps) {
  char url[PDB_MSG_MAX + 1200], f[PDB_MSG_MAX + 1200], msg[1024];
  snprintf(url, sizeof url, "%s%s", bucket, data->key);
  int64_t bytes = data->size, newest = data->mtime;
  Obj *c[NCOMP] = { 0 };
  for (size_t i = 0; comps && i < NCOMP; i++) {
    snprintf(f, sizeof f, "%s%s", data->key, companions[i]);
    if ((c[i] = find_obj(s, f))) {
      bytes += c[i]->size;
      if (c[i]->mtime > newest) newest = c[i]->mtime;
    }
  }
  int64_t age = now > newest ? now - newest : 0;
  if (age < min_age) return PAGEDB_OK;
  int rc = PAGEDB_OK;
  for (size_t i = NCOMP; (flags & PAGEDB_ORPHANS_REMOVE) && rc == PAGEDB_OK && i-- > 0;)
    if (c[i]) {
      snprintf(f, sizeof f, "%s%s", bucket, c[i]->key);
      if ((rc = rmt_delete(f, msg, sizeof msg)) != PAGEDB_OK)
        rc = pdb_err(db, m, rc, "cannot remove orphan part object %s: %s", f, msg);
    }
  if (rc == PAGEDB_OK && (flags & PAGEDB_ORPHANS_REMOVE) && (rc = rmt_delete(url, msg, sizeof msg)) != PAGEDB_OK)
    rc = pdb_err(db, m, rc, "cannot remove orphan object %s: %s", url, msg);
  if (rc != PAGEDB_OK) return rc;
  (*n)++;
  if (xorphan) {
    pagedb_orphan o = { url, uuid, bytes, age };
    if ((rc = xorphan(ctx, &o)) != PAGEDB_OK)
      rc = pdb_err(db, m, rc, "pagedb_parts_orphans: the callback stopped at %s", url);
  }
  return rc;
}

/*
** The orphans of a dataset on object storage (doc/format.md, "Orphans"):
** the committed parts and the index in force are read from the catalog
** object as it is NOW (downloaded: DB's own snapshot may predate commits
** since, whose parts must not be taken for orphans), then NAME.parts/ and
** the NAME-index* objects are listed (ListObjectsV2).  There is no write
** lock on object storage: a commit that lands during the cleanup took
** parts younger than MIN_AGE (the caller's promise), which are left alone.
*/
static int orphans_remote(pagedb *db, int64_t min_age_ms, int flags,
                          int (*xorphan)(void *ctx, const pagedb_orphan *o), void *ctx, int64_t *norphans) {
  pdb_msg *m = &db->err;
  char msg[1024], dir[4096], cat[4200], ixf[300] = "", bucket[1100], url[PDB_MSG_MAX];
  const char *tmp = getenv("TMPDIR"), *name = strrchr(db->path, '/') + 1, *b = strchr(db->path + 5, '/');
  if (strncmp(db->path, "s3://", 5) != 0 || !b)
    return pdb_err(db, m, PAGEDB_MISUSE, "%s: orphan parts are listed for a local dataset or one on s3:// only",
                   db->path);
  snprintf(bucket, sizeof bucket, "%.*s/", (int)(b - db->path), db->path);
  snprintf(dir, sizeof dir, "%s/pagedb-orphans-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return pdb_err(db, m, PAGEDB_CANTOPEN, "cannot make a directory in %s: %s", dir, strerror(errno));
  snprintf(cat, sizeof cat, "%s/catalog", dir);
  Uuids s = { 0 };
  Objs parts = { 0 }, ix = { 0 };
  int rc = rmt_get_file(db->catpath, cat, UINT64_MAX, NULL, 0, msg, sizeof msg);
  if (rc == PAGEDB_OK) rc = cat_file_meta_text(cat, "index_file", ixf, sizeof ixf, msg, sizeof msg);
  if (rc == PAGEDB_OK) rc = cat_file_parts(cat, add_uuid_text, &s, msg, sizeof msg);
  unlink(cat);
  rmdir(dir);
  if (!ixf[0]) snprintf(ixf, sizeof ixf, "%s-index", name);
  if (rc == PAGEDB_OK) {
    snprintf(url, sizeof url, "%s.parts/", db->path);
    rc = rmt_list(url, add_obj, &parts, msg, sizeof msg);
  }
  if (rc == PAGEDB_OK) {
    snprintf(url, sizeof url, "%s-index", db->path);
    rc = rmt_list(url, add_obj, &ix, msg, sizeof msg);
  }
  if (rc != PAGEDB_OK) rc = pdb_err(db, m, rc, "cannot list the orphans of %s: %s", db->path,
                                    rc == PAGEDB_NOMEM ? "out of memory" : msg);
  if (s.n > 1) qsort(s.u, s.n, sizeof *s.u, by_uuid);
  if (parts.n > 1) qsort(parts.o, parts.n, sizeof *parts.o, by_key);
  const int64_t now = now_ms();
  int64_t n = 0;
  for (size_t i = 0; rc == PAGEDB_OK && i < parts.n; i++) {
    const Obj *o = &parts.o[i];
    const char *leaf = strrchr(o->key, '/');
    int comp = 0;
    for (size_t j = 0; j < NCOMP && !comp; j++) comp = ends_with(o->key, companions[j]);
    if (comp || !leaf || !leaf[1] || leaf[1] == '.') continue;
    char uuid[33];
    if ((size_t)snprintf(url, sizeof url, "%s%s", bucket, o->key) >= sizeof url) continue;   /* not ours */
    if (!part_uuid(db, url, uuid)) continue;                             /* not a part */
    if (s.n && bsearch(uuid, s.u, s.n, sizeof *s.u, by_uuid)) continue;  /* committed */
    rc = remote_orphan(db, m, bucket, &parts, o, uuid, now, min_age_ms, flags, xorphan, ctx, &n, 1);
  }
  /* The index objects: NAME-index and NAME-index-X, but the one in force. */
  for (size_t i = 0; rc == PAGEDB_OK && i < ix.n; i++) {
    const Obj *o = &ix.o[i];
    const char *leaf = strrchr(o->key, '/');
    leaf = leaf ? leaf + 1 : o->key;
    size_t nl = strlen(name);
    int ours = strncmp(leaf, name, nl) == 0 && (strcmp(leaf + nl, "-index") == 0
               || (strncmp(leaf + nl, "-index-", 7) == 0 && strlen(leaf + nl + 7) == 16
                   && strspn(leaf + nl + 7, "0123456789abcdef") == 16));
    if (!ours || strcmp(leaf, ixf) == 0) continue;
    rc = remote_orphan(db, m, bucket, &ix, o, "", now, min_age_ms, flags, xorphan, ctx, &n, 0);
  }
  for (size_t i = 0; i < parts.n; i++) pdb_free(parts.o[i].key);
  for (size_t i = 0; i < ix.n; i++) pdb_free(ix.o[i].key);
  pdb_free(parts.o);
  pdb_free(ix.o);
  pdb_free(s.u);
  if (norphans) *norphans = n;
  return rc;
}
#else
static int orphans_remote(pagedb *db, int64_t min_age_ms, int flags,
                          int (*xorphan)(void *ctx, const pagedb_orphan *o), void *ctx, int64_t *norphans) {
  (void)min_age_ms, (void)flags, (void)xorphan, (void)ctx, (void)norphans;
  return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: built without libcurl: no remote orphans", db->path);
}
#endif

int pagedb_parts_orphans(pagedb *db, int64_t min_age_ms, int flags,
                         int (*xorphan)(void *ctx, const pagedb_orphan *o), void *ctx, int64_t *norphans) {
  if (norphans) *norphans = 0;
  if (!db) return PAGEDB_MISUSE;
  pdb_msg *m = &db->err;
  int rc = api_usable(db, m);
  if (rc != PAGEDB_OK) return rc;
  if (flags & ~PAGEDB_ORPHANS_REMOVE)
    return pdb_err(db, m, PAGEDB_MISUSE, "pagedb_parts_orphans: unknown flags 0x%x", (unsigned)flags);
  if (min_age_ms < 0) return pdb_err(db, m, PAGEDB_MISUSE, "pagedb_parts_orphans: a negative age");
  if (pdb_path_scheme(db->path, NULL, 0)) return orphans_remote(db, min_age_ms, flags, xorphan, ctx, norphans);
  if ((flags & PAGEDB_ORPHANS_REMOVE) && db->readonly)
    return pdb_err(db, m, PAGEDB_READONLY, "%s is open read-only: removing orphan parts needs the write lock of a"
                   " read-write handle", db->path);
  if ((flags & PAGEDB_ORPHANS_REMOVE) && (rc = api_own(db, m)) != PAGEDB_OK) return rc;

  size_t dl = strlen(db->path) + sizeof ".parts";
  char *dir = pdb_malloc(dl);
  if (!dir) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory listing the orphan parts of %s", db->path);
  snprintf(dir, dl, "%s.parts", db->path);
  Uuids s = { 0 };
  int64_t n = 0;
  pthread_mutex_lock(&db->commit_mu);
  rc = committed_uuids(db, m, &s);
  if (rc == PAGEDB_NOMEM) rc = pdb_err(db, m, rc, "out of memory listing the parts of %s", db->path);
  DIR *d = NULL;
  if (rc == PAGEDB_OK && !(d = opendir(dir)) && errno != ENOENT)
    rc = pdb_err(db, m, PAGEDB_IOERR, "cannot list %s: %s", dir, strerror(errno));
  const int64_t now = now_ms();
  struct dirent *e;
  while (rc == PAGEDB_OK && d && (errno = 0, e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    int comp = 0;
    for (size_t i = 0; i < NCOMP && !comp; i++) comp = ends_with(e->d_name, companions[i]);
    if (comp) continue;
    char path[PDB_MSG_MAX], f[PDB_MSG_MAX + 64], uuid[33];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
    int64_t bytes = 0, newest = 0;
    if (stat_into(path, &bytes, &newest)) continue;        /* not a regular file */
    for (size_t i = 0; i < NCOMP; i++) {
      snprintf(f, sizeof f, "%s%s", path, companions[i]);
      stat_into(f, &bytes, &newest);
    }
    if (!part_uuid(db, path, uuid)) continue;
    if (s.n && bsearch(uuid, s.u, s.n, sizeof *s.u, by_uuid)) continue;   /* committed */
    int64_t age = now > newest ? now - newest : 0;
    if (age < min_age_ms) continue;
    if (flags & PAGEDB_ORPHANS_REMOVE) rc = remove_part(db, m, path);
    if (rc != PAGEDB_OK) break;
    n++;
    if (xorphan) {
      pagedb_orphan o = { path, uuid, bytes, age };
      rc = xorphan(ctx, &o);
      if (rc != PAGEDB_OK) rc = pdb_err(db, m, rc, "pagedb_parts_orphans: the callback stopped at %s", path);
    }
  }
  if (rc == PAGEDB_OK && d && errno != 0) rc = pdb_err(db, m, PAGEDB_IOERR, "cannot list %s: %s", dir, strerror(errno));
  pthread_mutex_unlock(&db->commit_mu);
  if (d) closedir(d);
  pdb_free(s.u);
  pdb_free(dir);
  if (norphans) *norphans = n;
  return rc;
}
