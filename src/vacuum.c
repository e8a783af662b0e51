/*
** vacuum.c -- writing a dataset again without its dead space
** (pagedb_vacuum), and, at open, finishing or undoing an in-place vacuum
** that a crash interrupted (vacuum_open_pager).
**
** THE COPY
**
** With commit_mu held (no commit publishes or deletes meanwhile), the
** live samples are collected from the index and sorted by the offset of
** their records: file order.  Two threads, each with a writer on the new
** dataset, copy one half of them each (halves by bytes): a stretch of
** consecutive records is read with one read of at most COPY_SPAN bytes,
** and every value is put as it is stored (writer_put_stored): compressed
** bytes stay compressed, checksums are checked and kept.  The new dataset
** is an ordinary one, created by pagedb_open: its writers pack its pages
** from page 0, its commits follow the pager's invariants, and it gets a
** uuid of its own.
**
** IN PLACE: THE FILES
**
**   NAME, NAME-catalog                  the dataset
**   NAME.vacuum, NAME.vacuum-catalog    the new dataset while it is built
**
** and the steps, in this order (vacuum_in_place):
**
**   (a) build the new dataset at NAME.vacuum: copy, commit (its data file
**       synced before its catalog commits), close, and make its catalog a
**       single file (single_file: WAL checkpointed, synced and deleted with
**       the -shm by the last connection's close, which proves it the last);
**   (b) make the old catalog a single file too, once this handle's
**       connections to it are closed;
**   (c) rename NAME.vacuum-catalog over NAME-catalog, fsync the directory;
**   (d) rename NAME.vacuum over NAME, fsync the directory;
**   (e) rename NAME.vacuum-index over NAME-index (dindex.c), fsync the
**       directory: before it lands, NAME-index is the old dataset's, which
**       an open finds stale (its uuid) and rebuilds;
**   then the handle opens the new files (api_reopen).
**
** INVARIANTS
**
**   1. NAME-catalog is always a whole catalog, the old one or the new one:
**      it is replaced only by a rename of a complete, synced catalog.
**   2. Before (c) the old dataset is whole: NAME and NAME-catalog are
**      untouched but for (b), which changes only the catalog's journal
**      mode.  From (c) on, the new dataset is whole: its catalog is
**      NAME-catalog and its data file, synced in (a), is NAME.vacuum until
**      (d) and NAME after.
**   3. No WAL is applied to another catalog than its own.  SQLite replays
**      a NAME-catalog-wal into whatever file is named NAME-catalog when it
**      opens it, whatever its journal mode, so before (c) neither catalog
**      may have one: (a) and (b) leave both as single files.  Their journal
**      mode stays WAL: switching it writes a rollback journal, and one left
**      hot by a crash could not be rolled back by a read-only open.
**   4. A new dataset has a fresh random uuid, so NAME.vacuum's header
**      matches NAME-catalog's uuid exactly from (c) on, never before.
**   5. Recovery (vacuum_open_pager) decides by that alone: when NAME.vacuum
**      exists and its uuid is the catalog's, the crash fell between (c) and
**      (d) and a read-write open finishes (d); otherwise the crash fell
**      before (c) and NAME.vacuum* are an unfinished copy, which a
**      read-write open deletes.  A read-only open deletes nothing: it reads
**      NAME.vacuum as the data file in the first case and ignores the
**      leftovers in the second.  A header that cannot be read for an I/O
**      error decides nothing: the open fails and deletes nothing.
**   6. The write lock is held throughout, so that no other handle writes,
**      vacuums or recovers meanwhile: on NAME's inode from the start, and
**      from before (c) on NAME.vacuum's too (through a second pager), since
**      after (d) NAME names that inode.  It is let go only to be taken
**      again at once through NAME by the reopened pager (the locks of
**      separate opens of one file exclude each other); a process opening
**      NAME for writing at that very moment may take it first, and the
**      vacuum then reports PAGEDB_BUSY_LOCKED with the new dataset in
**      place.
**
** Renames use rename(2) directly: the VFS has no rename, and every backend
** keeps its files in the POSIX file system, as SQLite keeps the catalog.
*/
#include "api.h"
#include "dict.h"
#include "os.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define COPY_SPAN     ((uint64_t)8 << 20)     /* bytes read at once */
#define COPY_COMMIT   ((uint64_t)256 << 20)   /* bytes copied between commits */
#define COPY_THREADS  2

/* A path: A followed by B, or NULL without memory. */
static char *path_with(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *p = pdb_malloc(na + nb + 1);
  if (p) {
    memcpy(p, a, na);
    memcpy(p + na, b, nb + 1);
  }
  return p;
}

char *vacuum_path(const char *path) { return path_with(path, ".vacuum"); }

/* Delete the files of the dataset at PATH (SQLite's side files too), those
** that exist, and sync the directory. */
static void remove_dataset(pagedb *db, const char *path) {
  static const char *const kSuffix[] = { "", "-catalog", "-catalog-wal", "-catalog-shm", "-catalog-journal",
                                         "-index", "-index.new" };
  for (size_t i = 0; i < sizeof kSuffix / sizeof *kSuffix; i++) {
    char *p = path_with(path, kSuffix[i]);
    if (p) db->vfs->xDelete(db->vfs, p, 0);
    pdb_free(p);
  }
  if (db->vfs->xSyncDir) db->vfs->xSyncDir(db->vfs, path);
}

/* The data files of DB's parts that lie under NAME.parts/ (the convention
** of pagedb_parts_commit: their uri starts "NAME.parts/"), as paths. */
typedef struct PartFiles {
  char **path;
  size_t n, cap;
  char *dir;                /* NAME.parts */
  const char *prefix;       /* "NAME.parts/" as a uri starts */
  size_t nprefix;
  const char *base;         /* DB's directory, with its '/', or "" */
  size_t nbase;
} PartFiles;

static int part_file_row(void *ctx, const CatPart *p) {
  PartFiles *f = ctx;
  if (!p->uri || strncmp(p->uri, f->prefix, f->nprefix) != 0 || strstr(p->uri + f->nprefix, "..")) return PAGEDB_OK;
  if (f->n == f->cap) {
    size_t cap = f->cap ? 2 * f->cap : 16;
    char **np = pdb_realloc(f->path, cap * sizeof *np);
    if (!np) return PAGEDB_NOMEM;
    f->path = np;
    f->cap = cap;
  }
  size_t len = f->nbase + strlen(p->uri) + 1;
  char *q = pdb_malloc(len);
  if (!q) return PAGEDB_NOMEM;
  snprintf(q, len, "%.*s%s", (int)f->nbase, f->base, p->uri);
  f->path[f->n++] = q;
  return PAGEDB_OK;
}

static int parts_below(pagedb *db, pdb_msg *m, PartFiles *f) {
  const char *slash = strrchr(db->path, '/');
  const char *name = slash ? slash + 1 : db->path;
  char *prefix = path_with(name, ".parts/");
  f->dir = path_with(db->path, ".parts");
  if (!prefix || !f->dir) {
    pdb_free(prefix);
    return pdb_err(db, m, PAGEDB_NOMEM, "cannot vacuum %s: out of memory", db->path);
  }
  f->prefix = prefix;
  f->nprefix = strlen(prefix);
  f->base = db->path;
  f->nbase = slash ? (size_t)(slash - db->path) + 1 : 0;
  int rc = cat_parts(db->cat, m, part_file_row, f);
  pdb_free(prefix);
  f->prefix = NULL;
  if (rc == PAGEDB_NOMEM) rc = pdb_err(db, m, rc, "cannot vacuum %s: out of memory listing its parts", db->path);
  return rc;
}

/* Whether any file of the dataset at PATH exists. */
static int dataset_exists(pagedb *db, const char *path) {
  static const char *const kSuffix[] = { "", "-catalog", "-catalog-wal", "-catalog-shm", "-catalog-journal",
                                         "-index" };
  int any = 0;
  for (size_t i = 0; i < sizeof kSuffix / sizeof *kSuffix && !any; i++) {
    char *p = path_with(path, kSuffix[i]);
    if (p) db->vfs->xAccess(db->vfs, p, &any);
    else any = 1;   /* cannot tell: assume so */
    pdb_free(p);
  }
  return any;
}

/* Rename FROM over TO and sync the directory: PAGEDB_IOERR if nothing was
** renamed, PAGEDB_IOERR_SYNC if the rename may not be durable. */
static int rename_over(pagedb *db, pdb_msg *m, const char *from, const char *to) {
  if (rename(from, to) != 0)
    return pdb_err(db, m, PAGEDB_IOERR, "cannot rename %s to %s: %s", from, to, strerror(errno));
  if (db->vfs->xSyncDir && db->vfs->xSyncDir(db->vfs, to) != PAGEDB_OK)
    return pdb_err(db, m, PAGEDB_IOERR_SYNC, "renamed %s to %s, but cannot sync the directory: %s", from, to,
                   strerror(errno));
  return PAGEDB_OK;
}

/* --- the copy ----------------------------------------------------------- */

/* A live sample: its id and slot (whose word 0 is not the id in the dense
** arena of the index). */
typedef struct Live {
  int64_t id;
  const uint64_t *s;
} Live;

typedef struct Copy {
  pagedb *db;               /* the dataset copied */
  pagedb *dst;              /* the new one */
  const int *codec;         /* per field: its codec in DST */
  uint8_t recode[PAGEDB_MAX_FIELDS];   /* 1: values decoded and put anew */
  Live *s;                  /* the live samples, in file order */
  uint64_t n;
  /* Version 3: the slots, copied as listed (a referenced chunk's are
  ** translated copies valid only during the scan's call: dindex.c). */
  uint64_t *store;
  /* Atomics for counts and flags only: no other memory is published
  ** through them (the first failure is kept under mu). */
  _Atomic uint64_t uncommitted;   /* bytes copied since the last commit of dst */
  _Atomic int stop;         /* a thread failed: the others stop */
  pthread_mutex_t mu;       /* rc, err */
  int rc;
  pdb_msg err;              /* the first failure */
} Copy;

typedef struct Share {
  Copy *c;
  uint64_t from, to;        /* positions in c->s */
  pthread_t thread;
} Share;

/* Record M as the copy's failure if it is the first. */
static void copy_fail(Copy *c, const pdb_msg *m) {
  pthread_mutex_lock(&c->mu);
  if (c->rc == PAGEDB_OK) {
    c->rc = m->rc;
    c->err = *m;
  }
  pthread_mutex_unlock(&c->mu);
  atomic_store(&c->stop, 1);
}

/* A thread's buffer for decompressed values. */
typedef struct Scratch {
  uint8_t *buf;
  size_t cap;
} Scratch;

/*
** The raw bytes of a value of field F of sample ID, stored as LEN bytes at
** AT (Z: compressed, to RAW bytes): *OUT points at them, AT itself or
** Z's buffer.  Its checksum was checked.
*/
static int value_raw(pagedb *db, pdb_msg *m, int64_t id, int f, const uint8_t *at, uint64_t len, int z, uint64_t raw,
                     Scratch *z_, const uint8_t **out) {
  *out = at;
  if (!z) return PAGEDB_OK;
  int codec = db->fields[f].codec;
  const void *dict = NULL;
  int rc = codec_uses_dict(codec) ? dict_for_read(db, m, id, f, at, (size_t)len, &dict) : PAGEDB_OK;
  if (rc != PAGEDB_OK) return rc;
  if (raw > z_->cap) {
    size_t cap;
    uint8_t *b = pdb_buf_alloc((size_t)raw, &cap);
    if (!b) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory decompressing sample %lld", (long long)id);
    pdb_buf_free(z_->buf);
    z_->buf = b;
    z_->cap = cap;
  }
  if (!codec_decompress(codec, dict, at, (size_t)len, z_->buf, (size_t)raw))
    return pdb_err(db, m, PAGEDB_CORRUPT, "%s: sample %lld, field '%s': %llu compressed bytes do not decompress to the"
                   " %llu bytes recorded", db->path, (long long)id, db->fields[f].name, (unsigned long long)len,
                   (unsigned long long)raw);
  *out = z_->buf;
  return PAGEDB_OK;
}

/* Copy sample L, whose record (stored fields in schema order, each at its
** alignment: api_extent) is at REC, through W, which aligns them in the new
** dataset as its own writes are; a field being recoded is decoded and put
** anew (compressed by W with its new codec).  On failure M says what
** failed. */
static int copy_sample(Copy *c, pagedb_writer *w, const Live *l, const uint8_t *rec, Scratch *zs, pdb_msg *m) {
  pagedb *db = c->db;
  int nf = db->nfield;
  const uint64_t *s = l->s;
  long long id = (long long)l->id;
  int rc = pagedb_sample_begin(w, l->id);
  for (int f = 0; f < nf && rc == PAGEDB_OK; f++) {
    if (!slot_has(s, f)) continue;
    uint64_t v = slot_get(s, nf, f);
    if (db->fields[f].type == PAGEDB_INT) {
      rc = pagedb_put_int(w, f, (int64_t)v);
    } else if (db->fields[f].type == PAGEDB_REAL) {
      double d;
      memcpy(&d, &v, sizeof d);   /* the bits as stored, NaNs and all */
      rc = pagedb_put_real(w, f, d);
    } else {
      const uint64_t *x = slot_cext(s, nf, f);
      uint64_t off, len;
      api_extent(db, s, f, &off, &len);
      const uint8_t *at = rec + (off - s[1]);
      if (pdb_sum(at, len) != x[1]) {
        pagedb_sample_cancel(w);
        return pdb_err(db, m, PAGEDB_CORRUPT,
                       "cannot vacuum %s: sample %lld, field '%s' is damaged (checksum mismatch in its %llu bytes at"
                       " data offset %llu, page %llu)", db->path, id, db->fields[f].name, (unsigned long long)len,
                       (unsigned long long)off, (unsigned long long)(off / pager_page_size(db->pager)));
      }
      if (c->recode[f]) {
        const uint8_t *raw;
        rc = value_raw(db, m, l->id, f, at, len, (x[0] & SLOT_Z) != 0, v, zs, &raw);
        if (rc != PAGEDB_OK) {
          pagedb_sample_cancel(w);
          return pdb_err(db, m, rc, "cannot vacuum %s: %s", db->path, pdb_msg_text(m));
        }
        rc = pagedb_put(w, f, raw, (size_t)v);
      } else {
        rc = writer_put_stored(w, f, at, (size_t)len, v, (x[0] & SLOT_Z) != 0, x[1]);
      }
    }
  }
  if (rc == PAGEDB_OK) rc = pagedb_sample_end(w, NULL);
  if (rc != PAGEDB_OK) {
    rc = pdb_err(db, m, rc, "cannot vacuum %s: copying sample %lld: %s", db->path, id, pagedb_writer_errmsg(w));
    pagedb_sample_cancel(w);
  }
  return rc;
}

/* A copying thread: the samples of its share, through a writer of its own. */
static void *copy_share(void *arg) {
  Share *sh = arg;
  Copy *c = sh->c;
  pagedb *db = c->db;
  pdb_msg m = { 0 };
  uint8_t *buf = NULL;
  size_t cap = 0;
  Scratch zs = { NULL, 0 };
  pagedb_writer *w = NULL;
  int rc = pagedb_writer_open(c->dst, &w);
  if (rc != PAGEDB_OK)
    rc = pdb_err(db, &m, rc, "cannot vacuum %s: %s", db->path, pagedb_errmsg(c->dst));
  for (uint64_t i = sh->from; i < sh->to && rc == PAGEDB_OK && !atomic_load(&c->stop);) {
    /* A stretch of records read at once: reads stay sequential. */
    uint64_t start = c->s[i].s[1], end = start + api_record_len(db, c->s[i].s), j = i + 1;
    for (; j < sh->to; j++) {
      uint64_t e = c->s[j].s[1] + api_record_len(db, c->s[j].s);
      if (e - start > COPY_SPAN) break;
      if (e > end) end = e;
    }
    const uint8_t *at = (const uint8_t *)"";
    if (end > start) rc = api_fetch(db, &m, start, (size_t)(end - start), &buf, &cap, &at);
    if (rc != PAGEDB_OK) rc = pdb_err(db, &m, rc, "cannot vacuum %s: %s", db->path, pdb_msg_text(&m));
    for (uint64_t k = i; k < j && rc == PAGEDB_OK; k++)
      rc = copy_sample(c, w, &c->s[k], at + (c->s[k].s[1] - start), &zs, &m);
    i = j;
    /* Commit now and then, so that the new dataset's pending runs (a slot
    ** per sample) do not pile up until the end. */
    uint64_t done = atomic_fetch_add(&c->uncommitted, end - start) + (end - start);
    if (rc == PAGEDB_OK && done >= COPY_COMMIT) {
      atomic_store(&c->uncommitted, 0);
      rc = pagedb_commit(c->dst);
      if (rc != PAGEDB_OK) rc = pdb_err(db, &m, rc, "cannot vacuum %s: %s", db->path, pagedb_errmsg(c->dst));
    }
  }
  if (w) {
    int crc = pagedb_writer_close(w);
    if (rc == PAGEDB_OK && crc != PAGEDB_OK)
      rc = pdb_err(db, &m, crc, "cannot vacuum %s: %s", db->path, pagedb_errmsg(c->dst));
  }
  if (rc != PAGEDB_OK) copy_fail(c, &m);
  pdb_buf_free(buf);
  pdb_buf_free(zs.buf);
  return NULL;
}

static int collect_one(void *ctx, int64_t id, const uint64_t *slot) {
  Copy *c = ctx;
  /* The count was read under commit_mu: the array has room. */
  if (NEVER(c->n == idx_count(c->db->idx))) return PAGEDB_MISUSE;
  if (c->store) {
    uint64_t *t = c->store + c->n * (size_t)c->db->nw;
    memcpy(t, slot, (size_t)c->db->nw * sizeof *t);
    slot = t;
  }
  c->s[c->n++] = (Live){ id, slot };
  return PAGEDB_OK;
}

static int by_offset(const void *a, const void *b) {
  uint64_t x = ((const Live *)a)->s[1], y = ((const Live *)b)->s[1];
  return x < y ? -1 : x > y;
}

/*
** Train a dictionary for field F of DST from the first values of the live
** samples of C (file order), decoded, and give it to DST: the field's
** values are then all compressed with it as they are copied.  Too few
** values to train from leave DST's field learning as any new field does.
*/
static int train_from_values(Copy *c, int f) {
  pagedb *db = c->db;
  pdb_msg *m = &db->err;
  size_t want = PDB_DICT_SAMPLES, cap = 0, len = 0, ns = 0;
  uint8_t *all = NULL, *buf = NULL;
  size_t bcap = 0;
  size_t *sizes = pdb_malloc(want * sizeof *sizes);
  Scratch zs = { NULL, 0 };
  int rc = sizes ? PAGEDB_OK : pdb_err(db, m, PAGEDB_NOMEM, "out of memory training a dictionary");
  int nf = db->nfield;
  for (uint64_t i = 0; i < c->n && ns < want && rc == PAGEDB_OK; i++) {
    const uint64_t *s = c->s[i].s;
    if (!slot_has(s, f)) continue;
    uint64_t raw = slot_get(s, nf, f), off, l;
    if (raw == 0) continue;
    api_extent(db, s, f, &off, &l);
    const uint8_t *at, *v;
    rc = pager_fetch(db->pager, m, off, (size_t)l, &buf, &bcap, &at);
    if (rc == PAGEDB_OK && pdb_sum(at, l) != slot_cext(s, nf, f)[1])
      rc = pdb_err(db, m, PAGEDB_CORRUPT, "cannot vacuum %s: sample %lld, field '%s' is damaged (checksum mismatch)",
                   db->path, (long long)c->s[i].id, db->fields[f].name);
    if (rc == PAGEDB_OK)
      rc = value_raw(db, m, c->s[i].id, f, at, l, (slot_cext(s, nf, f)[0] & SLOT_Z) != 0, raw, &zs, &v);
    if (rc != PAGEDB_OK) break;
    size_t n = raw > (128u << 10) ? (128u << 10) : (size_t)raw;
    if (len + n > cap) {
      size_t nc = cap ? cap * 2 : (1u << 20);
      while (nc < len + n) nc *= 2;
      uint8_t *b = pdb_realloc(all, nc);
      if (!b) { rc = pdb_err(db, m, PAGEDB_NOMEM, "out of memory training a dictionary"); break; }
      all = b;
      cap = nc;
    }
    memcpy(all + len, v, n);
    len += n;
    sizes[ns++] = n;
  }
  uint8_t *dict = rc == PAGEDB_OK ? pdb_malloc(PDB_DICT_SIZE) : NULL;
  if (dict && ns > 0) {
    size_t dn = codec_dict_train(dict, PDB_DICT_SIZE, all, sizes, (unsigned)ns, 1, PAGEDB_CODEC_LEVEL_OF(c->codec[f]));
    if (dn > 0 && (rc = pagedb_field_dict_set(c->dst, f, dict, dn)) != PAGEDB_OK)
      rc = pdb_err(db, m, rc, "cannot vacuum %s: %s", db->path, pagedb_errmsg(c->dst));
  }
  pdb_free(dict);
  pdb_free(all);
  pdb_free(sizes);
  pdb_buf_free(buf);
  pdb_buf_free(zs.buf);
  return rc;
}

/* Create the new dataset at DEST with DB's schema, C's codecs and page
** size PS; a zstd-dict field copied as stored brings its dictionaries. */
static int create_copy(pagedb *db, const Copy *c, const char *dest, uint32_t ps, pagedb **out) {
  pdb_msg *m = &db->err;
  int rc = pagedb_open(dest, out, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE,
                       pdb_path_scheme(dest, NULL, 0) ? NULL : db->vfs->zName);
  pagedb *dst = *out;
  if (rc == PAGEDB_OK && ps != pagedb_page_size(dst)) rc = pagedb_set_page_size(dst, ps);
  for (int f = 0; f < db->nfield && rc == PAGEDB_OK; f++) {
    const CatField *cf = &db->fields[f];
    rc = cf->type == PAGEDB_TENSOR ? pagedb_field_add_tensor(dst, cf->name, cf->tensor.dtype, cf->tensor.ndim,
                                                             cf->tensor.dims, c->codec[f], cf->align)
                                   : pagedb_field_add_aligned(dst, cf->name, cf->type, c->codec[f], cf->align);
  }
  for (int f = 0; f < db->nfield && rc == PAGEDB_OK; f++)
    if (!c->recode[f] && codec_uses_dict(c->codec[f])) rc = dict_import(dst, &dst->err, f, db, f, 1);
  /* The application's tables in the catalog are part of the dataset. */
  if (rc == PAGEDB_OK) rc = cat_copy_user(db->cat, dst->cat, &dst->err);
  if (rc != PAGEDB_OK)
    rc = pdb_err(db, m, rc, "cannot vacuum %s into %s: %s", db->path, dest, pagedb_errmsg(dst));
  return rc;
}

/*
** Write DB's live samples into a new dataset at DEST, which must not exist,
** with page size PS; commit and close it.  commit_mu held.  On failure
** DEST's files are removed.
*/
static int copy_into(pagedb *db, const char *dest, uint32_t ps, const int *codec, const uint8_t *named) {
  pdb_msg *m = &db->err;
  if (dataset_exists(db, dest))
    return pdb_err(db, m, PAGEDB_CANTOPEN, "cannot vacuum %s into %s: it exists (a vacuum writes a new dataset)",
                   db->path, dest);
  Copy c = { .db = db, .codec = codec };
  for (int f = 0; f < db->nfield; f++) c.recode[f] = named[f] || codec[f] != db->fields[f].codec;
  uint64_t cnt = idx_count(db->idx) ? idx_count(db->idx) : 1;
  c.s = pdb_malloc(cnt * sizeof *c.s);
  int refs = idx_disk(db->idx) && dx_version(idx_disk(db->idx)) >= 3;
  if (c.s && refs) c.store = pdb_malloc(cnt * (size_t)db->nw * sizeof *c.store);
  if (!c.s || (refs && !c.store)) {
    pdb_free(c.s);
    return pdb_err(db, m, PAGEDB_NOMEM, "cannot vacuum %s: out of memory listing %llu samples", db->path,
                   (unsigned long long)idx_count(db->idx));
  }
  int rc = idx_scan(db->idx, collect_one, &c);
  if (rc != PAGEDB_OK) {
    pdb_free(c.store);
    pdb_free(c.s);
    return pdb_err(db, m, rc, "cannot vacuum %s: listing the samples failed", db->path);
  }
  qsort(c.s, c.n, sizeof *c.s, by_offset);
  pagedb *dst = NULL;
  rc = create_copy(db, &c, dest, ps, &dst);
  c.dst = dst;
  for (int f = 0; f < db->nfield && rc == PAGEDB_OK; f++)
    if (c.recode[f] && codec_uses_dict(codec[f])) rc = train_from_values(&c, f);
  Share sh[COPY_THREADS];
  int started = 0;
  if (rc == PAGEDB_OK && c.n > 0) {
    /* Shares of about equal bytes, each a stretch of the file. */
    uint64_t total = 0, acc = 0, at = 0;
    for (uint64_t i = 0; i < c.n; i++) total += api_record_len(db, c.s[i].s);
    pthread_mutex_init(&c.mu, NULL);
    for (int t = 0; t < COPY_THREADS; t++) {
      uint64_t to = at;
      while (to < c.n && (t == COPY_THREADS - 1 || acc < total / COPY_THREADS * (uint64_t)(t + 1)))
        acc += api_record_len(db, c.s[to++].s);
      sh[t] = (Share){ .c = &c, .from = at, .to = to };
      at = to;
      if (sh[t].from == sh[t].to) continue;
      if (pthread_create(&sh[t].thread, NULL, copy_share, &sh[t]) == 0) {
        started |= 1 << t;
      } else {
        copy_share(&sh[t]);   /* no thread: copy this share here */
      }
    }
    for (int t = 0; t < COPY_THREADS; t++)
      if (started & (1 << t)) pthread_join(sh[t].thread, NULL);
    pthread_mutex_destroy(&c.mu);
    if (c.rc != PAGEDB_OK) rc = pdb_err_copy(db, m, &c.err);
  }
  if (rc == PAGEDB_OK && (rc = pagedb_commit(dst)) != PAGEDB_OK)
    rc = pdb_err(db, m, rc, "cannot vacuum %s into %s: %s", db->path, dest, pagedb_errmsg(dst));
  if (rc == PAGEDB_OK && NEVER((uint64_t)pagedb_count(dst) != c.n))
    rc = pdb_err(db, m, PAGEDB_ERROR, "cannot vacuum %s into %s: %lld samples copied of %llu", db->path, dest,
                 (long long)pagedb_count(dst), (unsigned long long)c.n);
  int crc = pagedb_close(dst);   /* a no-op for NULL (no memory) */
  if (rc == PAGEDB_OK && crc != PAGEDB_OK)
    rc = pdb_err(db, m, crc, "cannot vacuum %s into %s: closing it failed (%s)", db->path, dest, pagedb_errstr(crc));
  pdb_free(c.s);
  pdb_free(c.store);
  if (rc != PAGEDB_OK) {
    remove_dataset(db, dest);   /* it did not exist before */
    /* pagedb_errmsg tells a thread's last failure: closing DST under the
    ** same fault fails too, and must not leave DB's message behind it. */
    pdb_err_copy(db, m, m);
  }
  return rc;
}

/* --- in place ------------------------------------------------------------ */

/*
** Make the catalog at CAT a single file (invariant 3): checkpointed, and
** with no CAT-wal or CAT-shm left, which only the last connection's close
** deletes: if they remain, another connection (of another handle, here or
** in another process) has the catalog open, and would go on reading these
** files under the other catalog's name after the swap.
*/
static int single_file(pagedb *db, const char *cat) {
  pdb_msg *m = &db->err;
  int rc = cat_checkpoint(db, db->vfs, m, cat);
  for (int i = 0; i < 2 && rc == PAGEDB_OK; i++) {
    char *side = path_with(cat, i ? "-shm" : "-wal");
    int exists = 1;
    if (side) db->vfs->xAccess(db->vfs, side, &exists);
    if (exists)
      rc = pdb_err(db, m, side ? PAGEDB_BUSY : PAGEDB_NOMEM, "cannot vacuum %s: %s remains: another connection has"
                   " catalog %s open", db->path, side ? side : "?", cat);
    pdb_free(side);
  }
  /* The deletions durable before the rename that (c) makes durable. */
  if (rc == PAGEDB_OK && db->vfs->xSyncDir && db->vfs->xSyncDir(db->vfs, cat) != PAGEDB_OK)
    rc = pdb_err(db, m, PAGEDB_IOERR_SYNC, "cannot vacuum %s: cannot sync the directory of %s: %s", db->path, cat,
                 strerror(errno));
  return rc;
}

/*
** The steps of the top comment, with commit_mu and cat_mu held and the
** handle idle: VDATA is NAME.vacuum, VCAT NAME.vacuum-catalog.
*/
static int vacuum_in_place(pagedb *db, uint32_t ps, const char *vdata, const char *vcat, const int *codec,
                           const uint8_t *named) {
  pdb_msg *m = &db->err;
  /* (a) */
  if (dataset_exists(db, vdata)) remove_dataset(db, vdata);   /* an earlier failure's */
  int rc = copy_into(db, vdata, ps, codec, named);
  if (rc != PAGEDB_OK) return rc;
  rc = single_file(db, vcat);
  /* Invariant 6: NAME.vacuum locked before it can become NAME. */
  Pager *hold = NULL;
  if (rc == PAGEDB_OK) rc = pager_open(db, m, db->vfs, vdata, 0, &hold);
  if (rc == PAGEDB_OK) rc = pager_lock(hold, m);
  /* (b) */
  if (rc == PAGEDB_OK) {
    cat_close(db->cat);
    db->cat = NULL;
    rc = single_file(db, db->catpath);
  }
  /* (c) */
  int renamed = 0;
  if (rc == PAGEDB_OK) {
    rc = rename_over(db, m, vcat, db->catpath);
    renamed = rc == PAGEDB_OK || rc == PAGEDB_IOERR_SYNC;
  }
  if (!renamed) {
    /* Before (c): the old dataset stands; this handle goes on with it. */
    pdb_msg keep = *m;
    pager_close(hold);
    remove_dataset(db, vdata);
    if (!db->cat && cat_open(db, db->vfs, m, db->catpath, CAT_WRITE, &db->cat) != PAGEDB_OK) {
      db->failed = 1;
      return pdb_err(db, m, rc, "%s; and reopening catalog %s failed: %s; the old dataset stands: close the handle",
                     pdb_msg_text(&keep), db->catpath, pdb_msg_text(m));
    }
    return pdb_err_copy(db, m, &keep);
  }
  /* From here on the new dataset stands (invariant 2), whatever fails. */
  pdb_msg unsynced = { 0 };
  if (rc == PAGEDB_IOERR_SYNC) unsynced = *m;
  /* (d) */
  rc = rename_over(db, m, vdata, db->path);
  if (rc == PAGEDB_IOERR_SYNC && unsynced.rc == PAGEDB_OK) unsynced = *m;
  /* (e) the new dataset's index file NAME.vacuum-index over NAME-index.
  ** Until it lands, NAME-index is the old dataset's (another uuid): the
  ** reopen finds it stale and rebuilds it, so a failure here costs time,
  ** not correctness. */
  char *vix = path_with(vdata, "-index"), *ix = path_with(db->path, "-index");
  if (vix && ix && rename(vix, ix) == 0 && db->vfs->xSyncDir) db->vfs->xSyncDir(db->vfs, ix);
  pdb_free(vix);
  pdb_free(ix);
  pager_close(hold);
  /* If (d) failed, the reopen's recovery finishes it (or the next open's). */
  rc = api_reopen(db);
  if (rc != PAGEDB_OK)
    return pdb_err(db, m, rc, "%s: vacuumed (the new dataset is in place), but reopening it failed: %s; close the"
                   " handle", db->path, pdb_msg_text(m));
  if (unsynced.rc != PAGEDB_OK) {
    /* The renames may not survive a crash: as after any failed sync, the
    ** handle accepts no more writes (a reopen shows what survived). */
    atomic_store(&db->broken, PAGEDB_IOERR_SYNC);
    return pdb_err(db, m, PAGEDB_IOERR_SYNC, "%s: vacuumed, but %s", db->path, pdb_msg_text(&unsynced));
  }
  return PAGEDB_OK;
}

int pagedb_vacuum(pagedb *db, const char *dest, size_t page_size) {
  return pagedb_vacuum_recode(db, dest, page_size, 0, NULL, NULL);
}

int pagedb_vacuum_recode(pagedb *db, const char *dest, size_t page_size, int n, const char *const *fields,
                         const int *codecs) {
  if (!db) return PAGEDB_MISUSE;
  pdb_msg *m = &db->err;
  int rc = api_usable(db, m);
  if (rc != PAGEDB_OK) return rc;
  /* The new dataset's codecs: DB's, but for the fields named. */
  int codec[PAGEDB_MAX_FIELDS];
  uint8_t named[PAGEDB_MAX_FIELDS] = { 0 };
  for (int f = 0; f < db->nfield; f++) codec[f] = db->fields[f].codec;
  if (n < 0 || (n > 0 && (!fields || !codecs)))
    return pdb_err(db, m, PAGEDB_MISUSE, "cannot vacuum %s: %d fields to recode%s", db->path, n,
                   n > 0 ? " given as NULL" : "");
  for (int i = 0; i < n; i++) {
    int f = fields[i] ? pagedb_field_index(db, fields[i]) : -1;
    if (f < 0)
      return pdb_err(db, m, PAGEDB_RANGE, "cannot vacuum %s: no field named '%s' to recode", db->path,
                     fields[i] ? fields[i] : "(null)");
    named[f] = 1;
    if (!codec_check(db->fields[f].type, codecs[i], &codec[f]))
      return pdb_err(db, m, PAGEDB_MISUSE, "cannot vacuum %s: codec %d is not one for field '%s'", db->path,
                     codecs[i], db->fields[f].name);
  }
  if (!dest && db->readonly)
    return pdb_err(db, m, PAGEDB_READONLY, "%s is open read-only: it cannot be vacuumed in place (vacuum into a"
                   " new path instead)", db->path);
  if (!dest && (rc = api_own(db, m)) != PAGEDB_OK) return rc;
  if (page_size == 0) page_size = pager_page_size(db->pager);
  if (page_size < PAGEDB_MIN_PAGE_SIZE || page_size > PAGEDB_MAX_PAGE_SIZE || (page_size & (page_size - 1)))
    return pdb_err(db, m, PAGEDB_RANGE, "cannot vacuum %s: page size %zu is not a power of two from %u to %u",
                   db->path, page_size, PAGEDB_MIN_PAGE_SIZE, PAGEDB_MAX_PAGE_SIZE);
  if (dest) {
    pthread_mutex_lock(&db->commit_mu);
    rc = copy_into(db, dest, (uint32_t)page_size, codec, named);
    pthread_mutex_unlock(&db->commit_mu);
    return rc;
  }
  pthread_mutex_lock(&db->mu);
  const char *busy = db->writers ? "a writer is open" : db->readers ? "a reader is open" : NULL;
  pthread_mutex_unlock(&db->mu);
  if (busy) return pdb_err(db, m, PAGEDB_MISUSE, "cannot vacuum %s in place: %s (close it first)", db->path, busy);
  char *vdata = vacuum_path(db->path), *vcat = path_with(db->path, ".vacuum-catalog");
  rc = vdata && vcat ? PAGEDB_OK : pdb_err(db, m, PAGEDB_NOMEM, "cannot vacuum %s: out of memory", db->path);
  pthread_mutex_lock(&db->commit_mu);
  pthread_mutex_lock(&db->cat_mu);
  if (rc == PAGEDB_OK && (pager_claimed(db->pager) != atomic_load(&db->committed) || db->todo || db->inserted))
    rc = pdb_err(db, m, PAGEDB_MISUSE, "cannot vacuum %s in place: samples are written but not committed (commit"
                 " first)", db->path);
  else if (rc == PAGEDB_OK && db->ndel)
    rc = pdb_err(db, m, PAGEDB_MISUSE, "cannot vacuum %s in place: %zu deletions are not committed (commit first)",
                 db->path, db->ndel);
  PartFiles pf = { 0 };
  if (rc == PAGEDB_OK && (db->features & CAT_FEATURE_PARTS)) rc = parts_below(db, m, &pf);
  if (rc == PAGEDB_OK) rc = vacuum_in_place(db, (uint32_t)page_size, vdata, vcat, codec, named);
  /* The new dataset stands, durable, naming no part: the parts' files the
  ** old one kept under NAME.parts/ go (a crash before leaves them as
  ** orphans), and the directory with them when nothing else is left in it. */
  for (size_t i = 0; i < pf.n; i++) {
    if (rc == PAGEDB_OK) remove_dataset(db, pf.path[i]);
    pdb_free(pf.path[i]);
  }
  if (rc == PAGEDB_OK && pf.dir) rmdir(pf.dir);
  pdb_free(pf.path);
  pdb_free(pf.dir);
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  pdb_free(vdata);
  pdb_free(vcat);
  return rc;
}

/* --- recovery at open ---------------------------------------------------- */

/*
** *CUR receives whether VDATA, left by an in-place vacuum, exists and is
** the data file of DB's catalog (invariant 5).  A file that is not a
** readable pagedb data file is not; a read that fails is an error, which
** decides nothing.
*/
static int vacuum_current(pagedb *db, const char *vdata, int *cur) {
  pdb_msg *m = &db->err, scratch = { 0 };
  *cur = 0;
  int exists = 0;
  db->vfs->xAccess(db->vfs, vdata, &exists);
  if (!exists) return PAGEDB_OK;
  Pager *p = NULL;
  uint8_t a[16], b[16];
  int rc = pager_open(db, &scratch, db->vfs, vdata, 1, &p);
  if (rc == PAGEDB_OK) memcpy(a, pager_uuid(p), 16);
  pager_close(p);
  int prc = rc & 0xff;
  if (prc == PAGEDB_NOTADB || prc == PAGEDB_CORRUPT || rc == PAGEDB_CANTOPEN_NOENT) {
    pdb_err_forget(db);     /* an unfinished copy (or gone): not an error */
    return PAGEDB_OK;
  }
  if (rc != PAGEDB_OK)
    return pdb_err(db, m, rc, "%s: cannot tell whether %s, left by a vacuum, is the dataset's: %s", db->path, vdata,
                   pdb_msg_text(&scratch));
  rc = cat_peek_uuid(db, db->vfs, &scratch, db->catpath, b);
  if (rc != PAGEDB_OK)
    return pdb_err(db, m, rc, "%s: cannot tell whether %s, left by a vacuum, is the dataset's: %s", db->path, vdata,
                   pdb_msg_text(&scratch));
  *cur = memcmp(a, b, 16) == 0;
  return PAGEDB_OK;
}

int vacuum_open_pager(pagedb *db) {
  pdb_msg *m = &db->err;
  char *vdata = vacuum_path(db->path);
  if (!vdata) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening %s", db->path);
  int cur = 0, rc;
  if (db->readonly) {
    rc = vacuum_current(db, vdata, &cur);
    if (rc == PAGEDB_OK) rc = pager_open(db, m, db->vfs, cur ? vdata : db->path, 1, &db->pager);
    /* A read-write open finished the swap meanwhile: NAME is that file now. */
    if (rc == PAGEDB_CANTOPEN_NOENT && cur) rc = pager_open(db, m, db->vfs, db->path, 1, &db->pager);
    pdb_free(vdata);
    return rc;
  }
  /* Invariant 6: nothing is decided, let alone deleted, without the lock. */
  rc = pager_open(db, m, db->vfs, db->path, 0, &db->pager);
  if (rc == PAGEDB_OK) rc = pager_lock(db->pager, m);
  if (rc == PAGEDB_OK) rc = vacuum_current(db, vdata, &cur);
  if (rc == PAGEDB_OK && cur) {
    /* Between (c) and (d): finish (d), then open what NAME now is. */
    Pager *hold = NULL;
    rc = pager_open(db, m, db->vfs, vdata, 0, &hold);
    if (rc == PAGEDB_OK) rc = pager_lock(hold, m);
    if (rc == PAGEDB_OK) rc = rename_over(db, m, vdata, db->path);
    if (rc == PAGEDB_OK) {
      pager_close(db->pager);
      db->pager = NULL;
      pager_close(hold);
      hold = NULL;
      rc = pager_open(db, m, db->vfs, db->path, 0, &db->pager);
      if (rc == PAGEDB_OK) rc = pager_lock(db->pager, m);
    }
    pager_close(hold);
  }
  /* What is left of NAME.vacuum* (all of it, or the catalog's side files)
  ** is an unfinished copy. */
  if (rc == PAGEDB_OK && dataset_exists(db, vdata)) remove_dataset(db, vdata);
  pdb_free(vdata);
  return rc;
}
