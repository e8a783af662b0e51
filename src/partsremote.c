/*
** partsremote.c -- committing parts into a dataset on object storage
** (doc/format.md, "Committing parts into a dataset on object storage"):
** pagedb_parts_commit on a read-only handle of an s3:// dataset.
**
** A remote dataset cannot be opened for writing, so the commit works on
** local copies of its metadata, in a directory of its own under TMPDIR,
** and ends with one conditional object write:
**
**   1. GET NAME-catalog whole, noting its ETag E; GET the first 4 KiB of
**      NAME (its header: uuid, page size, D), the local file then extended
**      to the object's size, a hole -- a commit of parts never reads or
**      writes a byte of the data region; GET the index meta.index_file
**      names (NAME-index when absent; none is fine: the open rebuilds it);
**   2. the local commit (pagedb_parts_commit on the copy opened read-write):
**      every check, the ids, the rows, the index; the parts' uris made
**      relative to the remote dataset's prefix (db->remote_url), and
**      meta.index_file set to NAME-index-X in the same transaction
**      (db->ixfile_next), X 16 random hex digits: a name no commit has
**      used or will use, so no reader's index object is ever replaced;
**      the copy closed, its WAL merged into NAME-catalog;
**   3. PUT the index as NAME-index-X with If-None-Match: *;
**   4. PUT NAME-catalog with If-Match: E: THE COMMIT POINT.  412 means
**      another commit landed since step 1 (PAGEDB_BUSY; the index object
**      of step 3 deleted, best effort: else an orphan).
**
** A failure or a kill before step 4 has succeeded leaves the old dataset;
** after it, the new one.  The handle DB itself is not changed: it goes on
** reading the snapshot it opened (its index object and the parts' data
** objects are never rewritten); a new open sees the new parts.
**
** ETAG QUOTING.  RFC 7232 and AWS take If-Match with the ETag as the
** server sent it, quotes and all; Ceph's radosgw 16.2.15 compares it
** without them (doc/format.md, open question 2).  Step 4 sends the quoted
** form first; on 412 it asks for the ETag again (HEAD) and, if it is still
** E, sends the same PUT once with E unquoted, and remembers for the rest of
** the process that this endpoint wants it so (pdb_unquoted).
**
** Retries: a conditional PUT whose answer was lost and which was sent
** again could meet 412 for its own success; the commit then says BUSY
** though it landed.  A committer that retries on BUSY finds its parts
** already committed (refused by uuid, naming them), never twice.
*/
#define _GNU_SOURCE
#include "api.h"
#include "catalog.h"
#include "os.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>

#if PAGEDB_HAVE_CURL
#include "remote.h"     /* rmt_get_file, rmt_put_file, rmt_open (vfs/) */

#define MSG_CAP 1024

/* snprintf into OUT, truncated when it must be (names and messages). */
static void say(char *out, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out, cap, fmt, ap);
  va_end(ap);
}

static _Atomic int pdb_unquoted;   /* this process's server took If-Match unquoted */

/* A commit's scratch: the local copies and the names of the objects. */
typedef struct Scratch {
  char dir[4096];           /* the directory of the local copies */
  char local[4096];         /* DIR/NAME */
  char prefix[4096];        /* the remote dataset's URL up to its last '/' */
  char name[1024];          /* NAME */
  char ixold[300];          /* the index object in force ("": NAME-index) */
  char ixnew[300];          /* NAME-index-X */
} Scratch;

/* Remove every file of S's directory, then the directory. */
static void scratch_free(Scratch *s) {
  if (!s->dir[0]) return;
  DIR *d = opendir(s->dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char p[4096 + 300];
    say(p, sizeof p, "%s/%s", s->dir, e->d_name);
    unlink(p);
  }
  if (d) closedir(d);
  rmdir(s->dir);
}

/* MSG with every occurrence of the local copy's path replaced by URL, so
** that what the local commit said names the remote dataset. */
static void renamed(const char *in, const char *local, const char *url, char *out, size_t cap) {
  size_t ln = strlen(local), n = 0;
  out[0] = 0;
  for (const char *p = in; *p && n + 1 < cap;) {
    if (strncmp(p, local, ln) == 0) {
      say(out + n, cap - n, "%s", url);
      n = strlen(out);
      p += ln;
    } else {
      out[n++] = *p++;
      out[n] = 0;
    }
  }
}

/* Step 1: the local copies of DB's catalog (its ETag into ETAG), header and index. */
static int fetch_copies(pagedb *db, Scratch *s, char *etag, size_t ecap, char *msg) {
  char url[8192], path[8192];
  say(url, sizeof url, "%s", db->catpath);
  say(path, sizeof path, "%s-catalog", s->local);
  int rc = rmt_get_file(url, path, UINT64_MAX, etag, ecap, msg, MSG_CAP);
  if (rc == PAGEDB_OK && !etag[0]) {
    say(msg, MSG_CAP, "%s: the server gives no ETag: no conditional write, no commit", url);
    rc = PAGEDB_READONLY;
  }
  if (rc == PAGEDB_OK) rc = rmt_get_file(db->path, s->local, PDB_HEADER_SIZE, NULL, 0, msg, MSG_CAP);
  if (rc == PAGEDB_OK) rc = cat_file_meta_text(path, "index_file", s->ixold, sizeof s->ixold, msg, MSG_CAP);
  if (rc == PAGEDB_OK) {
    if (!s->ixold[0] || strchr(s->ixold, '/')) say(s->ixold, sizeof s->ixold, "%s-index", s->name);
    say(url, sizeof url, "%s%s", s->prefix, s->ixold);
    say(path, sizeof path, "%s/%s", s->dir, s->ixold);
    rc = rmt_get_file(url, path, UINT64_MAX, NULL, 0, msg, MSG_CAP);
    if (rc == PAGEDB_CANTOPEN_NOENT) rc = PAGEDB_OK;   /* no index: the open rebuilds one */
  }
  return rc;
}

/* Step 4: PUT the catalog copy over DB's if its ETag is still E. */
static int put_catalog(pagedb *db, Scratch *s, const char *e, char *msg) {
  char path[8192], cond[400], bare[300];
  struct stat st;
  say(path, sizeof path, "%s-catalog", s->local);
  if (stat(path, &st) != 0) {
    say(msg, MSG_CAP, "%s: %s", path, strerror(errno));
    return PAGEDB_IOERR;
  }
  size_t n = strlen(e);
  say(bare, sizeof bare, "%.*s", n >= 2 && e[0] == '"' && e[n - 1] == '"' ? (int)n - 2 : (int)n,
           n >= 2 && e[0] == '"' && e[n - 1] == '"' ? e + 1 : e);
  int unq = atomic_load(&pdb_unquoted);
  say(cond, sizeof cond, "If-Match: %s", unq ? bare : e);
  int rc = rmt_put_file(db->catpath, path, (uint64_t)st.st_size, cond, msg, MSG_CAP);
  if (rc == PAGEDB_BUSY && !unq && strcmp(bare, e) != 0) {
    /* Is it still E?  Then the server compares unquoted (radosgw). */
    RmtObject *o = NULL;
    char hm[MSG_CAP];
    rmt_forget(db->catpath);
    if (rmt_open(db->catpath, &o, hm, sizeof hm) == PAGEDB_OK && strcmp(rmt_etag(o), e) == 0) {
      say(cond, sizeof cond, "If-Match: %s", bare);
      rc = rmt_put_file(db->catpath, path, (uint64_t)st.st_size, cond, msg, MSG_CAP);
      if (rc == PAGEDB_OK) atomic_store(&pdb_unquoted, 1);
    }
    rmt_close(o);
  }
  return rc;
}

int parts_commit_remote(pagedb *db, const pagedb_part *parts, int n, int policy, int64_t *ncommitted) {
  pdb_msg *m = &db->err;
  char scheme[8] = "";
  pdb_path_scheme(db->path, scheme, sizeof scheme);
  if (strcmp(scheme, "s3") != 0)
    return pdb_err(db, m, PAGEDB_READONLY, "%s: parts can be committed into a dataset on S3 only (s3://): an"
                   " %s:// server offers no conditional write", db->path, scheme);
  Scratch *s = pdb_calloc(1, sizeof *s);
  char *msg = pdb_malloc(MSG_CAP), *said = pdb_malloc(PDB_MSG_MAX * 2);
  if (!s || !msg || !said) {
    pdb_free(s);
    pdb_free(msg);
    pdb_free(said);
    return pdb_err(db, m, PAGEDB_NOMEM, "out of memory committing parts into %s", db->path);
  }
  msg[0] = 0;
  const char *slash = strrchr(db->path, '/'), *tmp = getenv("TMPDIR");
  say(s->name, sizeof s->name, "%s", slash + 1);
  say(s->prefix, sizeof s->prefix, "%.*s", (int)(slash - db->path + 1), db->path);
  say(s->dir, sizeof s->dir, "%s/pagedb-commit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  int rc = PAGEDB_OK;
  if (!mkdtemp(s->dir)) {
    say(msg, MSG_CAP, "cannot make a directory for the local copies (%s): %s", s->dir, strerror(errno));
    s->dir[0] = 0;
    rc = PAGEDB_CANTOPEN;
  }
  say(s->local, sizeof s->local, "%s/%s", s->dir, s->name);
  uint64_t x;
  pdb_random(&x, sizeof x);
  say(s->ixnew, sizeof s->ixnew, "%s-index-%016llx", s->name, (unsigned long long)x);
  char etag[300] = "";
  if (rc == PAGEDB_OK) rc = fetch_copies(db, s, etag, sizeof etag, msg);
  if (rc != PAGEDB_OK) {
    pdb_err(db, m, rc, "cannot commit parts into %s: %s; nothing was committed", db->path, msg);
    scratch_free(s);
    pdb_free(s);
    pdb_free(msg);
    pdb_free(said);
    return rc;
  }
  /* Step 2: the local commit. */
  pagedb *o = NULL;
  rc = pagedb_open(s->local, &o, PAGEDB_OPEN_READWRITE, NULL);
  if (rc == PAGEDB_OK) {
    o->remote_url = db->path;
    o->ixfile_next = s->ixnew;
    rc = pagedb_parts_commit(o, parts, n, policy, ncommitted);
  }
  if (rc != PAGEDB_OK) renamed(pagedb_errmsg(o), s->local, db->path, said, PDB_MSG_MAX * 2);
  char ixlocal[8192], path[8192], ixurl[8192];
  int crc = pagedb_close(o);
  if (rc == PAGEDB_OK && crc != PAGEDB_OK) {
    rc = crc;
    say(said, PDB_MSG_MAX * 2, "closing the local copy %s: %s", s->local, pagedb_errstr(crc));
  }
  struct stat st;
  say(path, sizeof path, "%s-catalog-wal", s->local);
  if (rc == PAGEDB_OK && stat(path, &st) == 0 && st.st_size > 0) {
    say(said, PDB_MSG_MAX * 2, "the local copy's catalog WAL was not merged (%s)", path);
    rc = PAGEDB_IOERR;
  }
  /* Step 3: the index as NAME-index-X. */
  say(ixlocal, sizeof ixlocal, "%s/%s", s->dir, s->ixold);
  say(ixurl, sizeof ixurl, "%s%s", s->prefix, s->ixnew);
  int put_ix = 0;
  if (rc == PAGEDB_OK) {
    if (stat(ixlocal, &st) != 0) {
      say(said, PDB_MSG_MAX * 2, "the local commit left no index file (%s)", ixlocal);
      rc = PAGEDB_IOERR;
    } else {
      rc = rmt_put_file(ixurl, ixlocal, (uint64_t)st.st_size, "If-None-Match: *", msg, MSG_CAP);
      put_ix = rc == PAGEDB_OK;
      if (rc != PAGEDB_OK) say(said, PDB_MSG_MAX * 2, "uploading the index: %s", msg);
    }
  }
  /* Step 4: the commit point. */
  if (rc == PAGEDB_OK) {
    rc = put_catalog(db, s, etag, msg);
    if (rc == PAGEDB_BUSY)
      say(said, PDB_MSG_MAX * 2, "another commit landed since this one read the catalog (its ETag %s is no"
               " longer %s's: HTTP 412): commit again", etag, db->catpath);
    else if (rc != PAGEDB_OK) say(said, PDB_MSG_MAX * 2, "uploading the catalog: %s", msg);
  }
  if (rc != PAGEDB_OK && put_ix) (void)rmt_delete(ixurl, msg, MSG_CAP);
  rmt_forget(db->catpath);
  if (rc != PAGEDB_OK) {
    if (ncommitted) *ncommitted = 0;
    pdb_err(db, m, rc, "%s%s", said, strstr(said, "nothing was committed") ? "" : "; nothing was committed");
  }
  scratch_free(s);
  pdb_free(s);
  pdb_free(msg);
  pdb_free(said);
  return rc;
}

#else

int parts_commit_remote(pagedb *db, const pagedb_part *parts, int n, int policy, int64_t *ncommitted) {
  (void)parts, (void)n, (void)policy, (void)ncommitted;
  return pdb_err(db, &db->err, PAGEDB_READONLY, "%s: built without libcurl: no commit on object storage", db->path);
}

#endif
