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
  if (pdb_path_scheme(db->path, NULL, 0))
    return pdb_err(db, m, PAGEDB_MISUSE, "%s: orphan parts are listed for a local dataset only (listing an object"
                   " store's prefix is not built)", db->path);
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
