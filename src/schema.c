/*
** schema.c -- a dataset's fields: added while its schema is open (before
** its first page is claimed), or to a dataset already holding samples
** (field_add_disk: every slot widened into a new index), and looked up.
*/
#include "api.h"
#include "dict.h"
#include "os.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

/* --- schema ------------------------------------------------------------- */

/* A dataset's schema is open until its first page is claimed. */
static int schema_open(pagedb *db, const char *what) {
  int rc = api_usable(db, &db->err);
  if (rc == PAGEDB_OK && !db->readonly) rc = api_own(db, &db->err);
  if (rc != PAGEDB_OK) return rc;
  if (db->readonly) return pdb_err(db, &db->err, PAGEDB_READONLY, "%s: %s: the dataset is open read-only", db->path, what);
  pthread_mutex_lock(&db->mu);
  int busy = db->writers != NULL;
  pthread_mutex_unlock(&db->mu);
  if (busy || pager_claimed(db->pager) > 0)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: %s: the dataset already has %s", db->path, what,
                   busy ? "an open writer" : "samples");
  return PAGEDB_OK;
}

/*
** A field can be added while no writer or reader is open (the index and
** every slot change width under them) and everything written is committed
** (the slots of written runs, waiting in the pager or in the catalog's
** transaction, have the old width).  Committed samples are re-laid out.
*/
static int field_add_open(pagedb *db) {
  int rc = api_usable(db, &db->err);
  if (rc == PAGEDB_OK && !db->readonly) rc = api_own(db, &db->err);
  if (rc != PAGEDB_OK) return rc;
  if (db->readonly)
    return pdb_err(db, &db->err, PAGEDB_READONLY, "%s: cannot add a field: the dataset is open read-only", db->path);
  pthread_mutex_lock(&db->mu);
  int writer = db->writers != NULL, reader = db->readers != NULL;
  pthread_mutex_unlock(&db->mu);
  if (writer || reader)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: cannot add a field while a %s is open on the handle: close it first",
                   db->path, writer ? "writer" : "reader");
  uint64_t claimed = pager_claimed(db->pager), committed = atomic_load(&db->committed);
  if (claimed != committed)
    return pdb_err(db, &db->err, PAGEDB_MISUSE,
                   "%s: cannot add a field: the dataset has uncommitted samples (%llu pages written past the %llu"
                   " committed): commit first", db->path, (unsigned long long)(claimed - committed),
                   (unsigned long long)committed);
  return PAGEDB_OK;
}

/* Copying an index into one whose slots have room for one more field. */
typedef struct Widen {
  Index *x;                 /* the new index */
  int nfield;               /* fields of the old slots */
  uint64_t *slot;           /* a new slot being built */
} Widen;

static int widen_one(void *ctx, int64_t id, const uint64_t *s) {
  Widen *w = ctx;
  api_widen_slot(w->slot, id, s, w->nfield);
  int rc = idx_reserve(w->x, id);
  if (rc == PAGEDB_OK) rc = idx_publish(w->x, w->slot);
  return rc == PAGEDB_CONSTRAINT ? PAGEDB_CORRUPT : rc;   /* an id twice: the old index was wrong */
}

/*
** pagedb_field_add with an index file: a new file of wider slots is
** written (NAME-index.new), the field is added to the catalog, then the
** catalog records the new file and it is renamed in.  A crash before that
** second commit leaves the old file, whose slots no longer fit the schema:
** the next open finds it stale and rebuilds it.  commit_mu and cat_mu held.
*/
static int field_add_disk(pagedb *db, const CatField *f) {
  pdb_msg *m = &db->err;
  Dx *x;
  DxMeta xm;
  /* The first tensor field sets its feature bit in the same transaction
  ** (cat_field_add): the new file is the version the features will need. */
  uint64_t features = db->features | (f->type == PAGEDB_TENSOR ? CAT_FEATURE_TENSOR : 0);
  int rc = api_write_index(db, m, db->idx, f, api_ix_version(features),
                       atomic_load(&db->committed), NULL, &x, &xm);
  if (rc != PAGEDB_OK) return rc;
  rc = cat_field_add(db->cat, m, db->nfield, f);
  if (rc == PAGEDB_IOERR_SYNC) atomic_store(&db->broken, rc);   /* the field is in doubt */
  if (rc != PAGEDB_OK) {
    dx_close(x);
    return rc;
  }
  db->fields[db->nfield++] = *f;
  db->nw = slot_words(db->nfield);
  db->features = features;
  api_set_isbytes(db);
  rc = api_stage_ix_meta(db, m, &xm);
  if (rc == PAGEDB_OK) rc = cat_commit(db->cat, m, atomic_load(&db->committed), db->nsample);
  if (rc != PAGEDB_OK) {
    /* The field is added; the index file is stale until the next open
    ** rebuilds it, and this handle cannot go on with the old slots. */
    cat_rollback(db->cat);
    dx_close(x);
    atomic_store(&db->broken, rc);
    char why[PDB_MSG_MAX];
    snprintf(why, sizeof why, "%s", pdb_msg_text(m));
    return pdb_err(db, m, rc, "%s: field '%s' added, but its index could not be recorded (%s); reopen", db->path,
                   f->name, why);
  }
  db->ixmeta = xm;
  rc = api_install_index(db, m, x, 0);
  if (rc != PAGEDB_OK) atomic_store(&db->broken, rc);
  return rc;
}

int pagedb_set_page_size(pagedb *db, size_t bytes) {
  if (!db) return PAGEDB_MISUSE;
  int rc = schema_open(db, "cannot set the page size");
  if (rc != PAGEDB_OK) return rc;
  if (db->nfield > 0)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: the page size must be set before the first field", db->path);
  if (bytes < PAGEDB_MIN_PAGE_SIZE || bytes > PAGEDB_MAX_PAGE_SIZE || (bytes & (bytes - 1)))
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: page size %zu is not a power of two from %u to %u", db->path,
                   bytes, PAGEDB_MIN_PAGE_SIZE, PAGEDB_MAX_PAGE_SIZE);
  if (bytes == pager_page_size(db->pager)) return PAGEDB_OK;
  rc = pager_set_page_size(db->pager, &db->err, (uint32_t)bytes);
  if (rc == PAGEDB_OK) rc = cat_set_page_size(db->cat, &db->err, (uint32_t)bytes);
  return rc;
}

size_t pagedb_page_size(pagedb *db) {
  return db && db->pager ? pager_page_size(db->pager) : 0;
}

static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > PAGEDB_MAX_NAME || isdigit((unsigned char)s[0])) return 0;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-') return 0;
  return strcasecmp(s, "id") && strcasecmp(s, "page") && strcasecmp(s, "off");
}

int pagedb_field_add(pagedb *db, const char *name, int type, int codec) {
  return pagedb_field_add_aligned(db, name, type, codec, PAGEDB_ALIGN_DEFAULT);
}

static int field_add(pagedb *db, const char *name, int type, int codec, int align, const TensorDecl *tensor);

int pagedb_field_add_aligned(pagedb *db, const char *name, int type, int codec, int align) {
  if (!db) return PAGEDB_MISUSE;
  if (type == PAGEDB_TENSOR)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: field '%s': a tensor field is added with pagedb_field_add_tensor",
                   db->path, name ? name : "(null)");
  return field_add(db, name, type, codec, align, NULL);
}

int pagedb_field_add_tensor(pagedb *db, const char *name, int dtype, int ndim, const int64_t *dims, int codec,
                            int align) {
  if (!db) return PAGEDB_MISUSE;
  TensorDecl d;
  char why[160];
  if (tensor_decl(&d, dtype, ndim, dims, why, sizeof why) != 0)
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: tensor field '%s': %s", db->path, name ? name : "(null)", why);
  if (align != PAGEDB_ALIGN_DEFAULT && align >= 1 && align < d.esize)
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: tensor field '%s': alignment %d is below the %d-byte %s elements",
                   db->path, name ? name : "(null)", align, d.esize, pagedb_dtype_name(dtype));
  return field_add(db, name, PAGEDB_TENSOR, codec, align, &d);
}

int pagedb_field_tensor(pagedb *db, int i, int *dtype, int *ndim, int64_t *dims) {
  if (!db || i < 0 || i >= db->nfield) return PAGEDB_RANGE;
  const CatField *f = &db->fields[i];
  if (f->type != PAGEDB_TENSOR) return PAGEDB_MISMATCH;
  if (dtype) *dtype = f->tensor.dtype;
  if (ndim) *ndim = f->tensor.ndim;
  if (dims) memcpy(dims, f->tensor.dims, (size_t)f->tensor.ndim * sizeof *dims);
  return PAGEDB_OK;
}

/* pagedb_field_add_aligned, and with TENSOR (type PAGEDB_TENSOR, checked)
** pagedb_field_add_tensor: the field, in the catalog and the index. */
static int field_add_core(pagedb *db, const char *name, int type, int codec, int align, const TensorDecl *tensor) {
  int rc = field_add_open(db);
  if (rc != PAGEDB_OK) return rc;
  if (!name || !valid_name(name))
    return pdb_err(db, &db->err, PAGEDB_MISUSE,
                   "%s: invalid field name '%s': use 1 to %d letters, digits, '_', '.' or '-', not starting with a"
                   " digit, and not id, page or off", db->path, name ? name : "(null)", PAGEDB_MAX_NAME);
  if (type < PAGEDB_BYTES || type > PAGEDB_TENSOR)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: field '%s': unknown type %d", db->path, name, type);
  if (!codec_check(type, codec, &codec))
    return pdb_err(db, &db->err, PAGEDB_MISUSE,
                   "%s: field '%s': codec %d (kind %d, level %d) is not one for a %s field: use PAGEDB_CODEC_NONE, or for"
                   " BYTES/TEXT PAGEDB_CODEC_LZ4 (level 0..65537), PAGEDB_CODEC_LZ4HC (level 0..12) or PAGEDB_CODEC_ZSTD[_DICT]"
                   " (level -131072..22)",
                   db->path, name, codec, PAGEDB_CODEC_KIND(codec), PAGEDB_CODEC_LEVEL_OF(codec),
                   type == PAGEDB_INT ? "INT" : type == PAGEDB_REAL ? "REAL" : "BYTES/TEXT/TENSOR");
  for (int i = 0; i < db->nfield; i++)
    if (strcasecmp(db->fields[i].name, name) == 0)
      return pdb_err(db, &db->err, PAGEDB_CONSTRAINT, "%s: a field named '%s' exists already", db->path,
                     db->fields[i].name);
  int stored = cat_type_stored(type);
  if (align < 0 || align > PAGEDB_MAX_ALIGN || (align & (align - 1)) != 0 || (!stored && align > 1))
    return pdb_err(db, &db->err, PAGEDB_RANGE,
                   "%s: field '%s': alignment %d is not %s", db->path, name, align,
                   stored ? "a power of two from 1 to 64 (or 0, the default)"
                          : "0 or 1: an INT or REAL field is kept in the catalog, not in pages");
  if (align == PAGEDB_ALIGN_DEFAULT) align = type == PAGEDB_BYTES || type == PAGEDB_TENSOR ? 8 : 1;
  /* A tensor's elements must be aligned to their size: on a dataset with
  ** committed pages, G is enough when it is (the default cannot grow it). */
  if (tensor && align == 8 && atomic_load(&db->committed) > 0 && api_records_align(db) >= tensor->esize
      && api_records_align(db) < 8)
    align = api_records_align(db);
  /* Committed records are laid out at the alignment of the fields they
  ** were written for: a larger one would move their values. */
  if (align > api_records_align(db) && atomic_load(&db->committed) > 0)
    return pdb_err(db, &db->err, PAGEDB_MISUSE,
                   "%s: field '%s': alignment %d is larger than the %d bytes the committed records are laid out at:"
                   " add it with at most %d, or declare it in a new dataset before its first commit",
                   db->path, name, align, api_records_align(db), api_records_align(db));
  if (db->nfield >= PAGEDB_MAX_FIELDS)
    return pdb_err(db, &db->err, PAGEDB_TOOBIG, "%s: a dataset has at most %d fields", db->path, PAGEDB_MAX_FIELDS);
  CatField f = { .type = type, .codec = codec, .align = align };
  if (tensor) f.tensor = *tensor;
  snprintf(f.name, sizeof f.name, "%s", name);
  if (idx_disk(db->idx)) {
    pthread_mutex_lock(&db->commit_mu);
    pthread_mutex_lock(&db->cat_mu);
    rc = field_add_disk(db, &f);
    pthread_mutex_unlock(&db->cat_mu);
    pthread_mutex_unlock(&db->commit_mu);
    return rc;
  }
  /* The index holds slots of the old width: build the new one first, so
  ** that running out of memory leaves the schema as it was. */
  Widen w = { NULL, db->nfield, pdb_malloc((size_t)slot_words(db->nfield + 1) * sizeof(uint64_t)) };
  if (!w.slot || idx_create(&w.x, slot_words(db->nfield + 1)) != PAGEDB_OK) {
    pdb_free(w.slot);
    return pdb_err(db, &db->err, PAGEDB_NOMEM, "out of memory adding field '%s'", name);
  }
  /* commit_mu: no commit publishes meanwhile (idx_scan); cat_mu: the
  ** catalog's connection. */
  pthread_mutex_lock(&db->commit_mu);
  pthread_mutex_lock(&db->cat_mu);
  uint64_t n = idx_count(db->idx);
  rc = idx_scan(db->idx, widen_one, &w);
  if (rc == PAGEDB_OK && NEVER(idx_count(w.x) != n)) rc = PAGEDB_CORRUPT;
  if (rc == PAGEDB_NOMEM)
    rc = pdb_err(db, &db->err, rc, "%s: out of memory re-indexing %llu samples to add field '%s'", db->path,
                 (unsigned long long)n, name);
  else if (rc != PAGEDB_OK)
    rc = pdb_err(db, &db->err, rc, "%s: the index of %llu samples is inconsistent; field '%s' not added", db->path,
                 (unsigned long long)n, name);
  if (rc == PAGEDB_OK) rc = cat_field_add(db->cat, &db->err, db->nfield, &f);
  if (rc == PAGEDB_IOERR_SYNC) atomic_store(&db->broken, rc);   /* the field is in doubt */
  if (rc == PAGEDB_OK) {
    db->fields[db->nfield++] = f;
    db->nw = slot_words(db->nfield);
    if (type == PAGEDB_TENSOR) db->features |= CAT_FEATURE_TENSOR;   /* cat_field_add set the bit */
    api_set_isbytes(db);
    idx_free(db->idx);
    db->idx = w.x;
    w.x = NULL;
  }
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  idx_free(w.x);
  pdb_free(w.slot);
  return rc;
}

int pagedb_field_index(pagedb *db, const char *name) {
  if (!db || !name) return -1;
  for (int i = 0; i < db->nfield; i++)
    if (strcmp(db->fields[i].name, name) == 0) return i;
  return -1;
}

int pagedb_field_count(pagedb *db) { return db ? db->nfield : 0; }

const char *pagedb_field_name(pagedb *db, int i) {
  return db && i >= 0 && i < db->nfield ? db->fields[i].name : NULL;
}

int pagedb_field_type(pagedb *db, int i) {
  return db && i >= 0 && i < db->nfield ? db->fields[i].type : -1;
}

/* field_add_core; then a dictionary codec's field starts learning its
** dictionary. */
static int field_add(pagedb *db, const char *name, int type, int codec, int align, const TensorDecl *tensor) {
  int rc = field_add_core(db, name, type, codec, align, tensor);
  if (rc == PAGEDB_OK && codec_uses_dict(db->fields[db->nfield - 1].codec))
    rc = dict_field_added(db, &db->err, db->nfield - 1);
  return rc;
}

int pagedb_field_codec(pagedb *db, int i) {
  return db && i >= 0 && i < db->nfield ? db->fields[i].codec : -1;
}

void pagedb_codec_name(int codec, char *out, size_t n) {
  if (out && n > 0) codec_name(codec, out, n);
}

int pagedb_codec_parse(const char *name, int *codec) {
  if (!name || !codec) return PAGEDB_MISUSE;
  /* A bare kind is its default level (the catalog always spells it). */
  char full[48];
  if (!strchr(name, ':') && strcmp(name, "none") != 0 && strlen(name) < 16) {
    snprintf(full, sizeof full, "%s:0", name);
    int c;
    for (int k = 1; k <= PAGEDB_CODEC_ZSTD_DICT; k++) {
      char kn[32];
      codec_name(PAGEDB_CODEC_LEVEL(k, 1), kn, sizeof kn);
      if (strncmp(kn, name, strlen(name)) == 0 && kn[strlen(name)] == ':' && codec_check(PAGEDB_BYTES, k, &c)) {
        *codec = c;
        return PAGEDB_OK;
      }
    }
    return PAGEDB_MISUSE;
  }
  return codec_parse(name, codec) ? PAGEDB_OK : PAGEDB_MISUSE;
}

int pagedb_field_align(pagedb *db, int i) {
  if (!db || i < 0 || i >= db->nfield) return -1;
  return db->isbytes[i] ? db->isbytes[i] : 1;
}

int64_t pagedb_count(pagedb *db) {
  return db && db->idx ? (int64_t)idx_count(db->idx) : 0;
}

int64_t pagedb_page_count(pagedb *db) {
  return db ? (int64_t)atomic_load(&db->committed) : 0;
}

const char *pagedb_path(pagedb *db) { return db ? db->path : NULL; }
const char *pagedb_catalog_path(pagedb *db) { return db ? db->catpath : NULL; }
const char *pagedb_vfs_name(pagedb *db) { return db && db->vfs ? db->vfs->zName : NULL; }

/*
** pagedb_sql_update with an index file: the N changed samples (SRC: their
** new INT and REAL values, index.h's layout) get new slots, copied from
** the old with those values, written copy-on-write and recorded in a
** second transaction.  commit_mu and cat_mu held.
*/
static int update_disk(pagedb *db, Dx *dx, const uint64_t *src, size_t n) {
  pdb_msg *m = &db->err;
  size_t nw = (size_t)db->nw;
  uint64_t *buf = pdb_malloc((n ? n : 1) * nw * sizeof *buf);
  DxChange *ch = pdb_malloc((n ? n : 1) * sizeof *ch);
  int rc = buf && ch ? PAGEDB_OK : pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory updating %zu samples", db->path, n);
  for (size_t i = 0; rc == PAGEDB_OK && i < n; i++) {
    const uint64_t *u = src + i * nw, *old = dx_find(dx, (int64_t)u[0]);
    uint64_t *t = buf + i * nw;
    if (!old || old == DX_BAD) {
      rc = pdb_err(db, m, PAGEDB_CORRUPT_INDEX, "%s: updated sample %lld has no valid index entry", db->path,
                   (long long)u[0]);
      break;
    }
    memcpy(t, old, nw * sizeof *t);
    for (int f = 0; f < db->nfield; f++) {
      if (api_is_bytes(db, f)) continue;
      *slot_val(t, db->nfield, f) = slot_get(u, db->nfield, f);
      if (slot_has(u, f)) slot_set(t, f);
      else slot_clear(t, f);
    }
    ch[i] = (DxChange){ (int64_t)u[0], t, 0 };
  }
  uint64_t end = atomic_load(&db->committed);
  DxMeta xm;
  if (rc == PAGEDB_OK) rc = api_ix_failed(db, dx_stage(dx, m, ch, n, 1, end, end * pager_page_size(db->pager), &xm));
  if (rc == PAGEDB_OK) rc = api_stage_ix_meta(db, m, &xm);
  if (rc == PAGEDB_OK) rc = cat_commit(db->cat, m, end, db->nsample);
  if (rc == PAGEDB_OK) {
    db->ixmeta = xm;
    rc = dx_publish(dx, m);
  } else {
    cat_rollback(db->cat);
    dx_abort(dx);
  }
  if (rc != PAGEDB_OK) {
    /* The update is committed; the index file is marked stale. */
    atomic_store(&db->broken, rc);
    char why[PDB_MSG_MAX];
    snprintf(why, sizeof why, "%s", pdb_msg_text(m));
    rc = pdb_err(db, m, rc, "%s: updated, but the index could not take the new values (%s); reopen to rebuild it",
                 db->path, why);
  }
  pdb_free(buf);
  pdb_free(ch);
  return rc;
}

int pagedb_sql_update(pagedb *db, const char *sql, int64_t *nchanged) {
  if (nchanged) *nchanged = 0;
  if (!db || !sql) return PAGEDB_MISUSE;
  pdb_msg *m = &db->err;
  int rc = api_usable(db, m);
  if (rc != PAGEDB_OK) return rc;
  if (db->readonly) return pdb_err(db, m, PAGEDB_READONLY, "%s is open read-only: no update", db->path);
  if ((rc = api_own(db, m)) != PAGEDB_OK) return rc;
  pthread_mutex_lock(&db->mu);
  const char *busy = db->writers ? "a writer is open" : db->readers ? "a reader is open" : NULL;
  pthread_mutex_unlock(&db->mu);
  if (busy) return pdb_err(db, m, PAGEDB_MISUSE, "cannot update %s: %s (close it first)", db->path, busy);
  uint64_t *slots = NULL;
  size_t n = 0;
  pthread_mutex_lock(&db->commit_mu);
  pthread_mutex_lock(&db->cat_mu);
  rc = api_commit_locked(db);
  /* With an index file, the update's transaction marks it stale, and a
  ** second one records it again once the changed slots are written: a
  ** crash between them leaves a stale index, rebuilt at the next open. */
  Dx *dx = idx_disk(db->idx);
  if (rc == PAGEDB_OK && dx) rc = api_stage_ix_meta(db, m, &(DxMeta){ 0 });
  if (rc == PAGEDB_OK) rc = cat_update(db->cat, m, sql, db->fields, db->nfield, &slots, &n);
  if (rc == PAGEDB_OK && dx) rc = update_disk(db, dx, slots, n);
  /* Committed: the index takes the new values.  No reader is open, so no
  ** read sees a slot change under it. */
  for (size_t i = 0; rc == PAGEDB_OK && !dx && i < n; i++) {
    const uint64_t *src = slots + i * (size_t)db->nw;
    uint64_t *s = (uint64_t *)idx_find(db->idx, (int64_t)src[0]);
    if (NEVER(!s)) continue;
    for (int f = 0; f < db->nfield; f++) {
      if (api_is_bytes(db, f)) continue;
      *slot_val(s, db->nfield, f) = slot_get(src, db->nfield, f);
      if (slot_has(src, f)) slot_set(s, f);
      else slot_clear(s, f);
    }
  }
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  pdb_free(slots);
  if (rc == PAGEDB_OK && nchanged) *nchanged = (int64_t)n;
  return rc;
}

int pagedb_sql_user(pagedb *db, const char *sql, int64_t *nchanged) {
  int64_t n = 0;
  if (nchanged) *nchanged = 0;
  if (!db || !sql) return PAGEDB_MISUSE;
  pdb_msg *m = &db->err;
  int rc = api_usable(db, m);
  if (rc != PAGEDB_OK) return rc;
  if (db->readonly) return pdb_err(db, m, PAGEDB_READONLY, "%s is open read-only: no change to user tables", db->path);
  pthread_mutex_lock(&db->mu);
  int busy = db->writers != NULL;
  pthread_mutex_unlock(&db->mu);
  if (busy) return pdb_err(db, m, PAGEDB_MISUSE, "cannot change user tables of %s: a writer is open (close it first)",
                           db->path);
  /* What was written is committed first, which ends the catalog's long
  ** write transaction; then the SQL runs in a transaction of its own. */
  pthread_mutex_lock(&db->commit_mu);
  pthread_mutex_lock(&db->cat_mu);
  rc = api_commit_locked(db);
  if (rc == PAGEDB_OK) rc = cat_user_sql(db->cat, m, sql, &n);
  pthread_mutex_unlock(&db->cat_mu);
  pthread_mutex_unlock(&db->commit_mu);
  if (rc == PAGEDB_OK && nchanged) *nchanged = n;
  return rc;
}

int pagedb_sql(pagedb *db, const char *sql, int (*xrow)(void *, int, char **, char **), void *ctx) {
  if (!db || !sql) return PAGEDB_MISUSE;
  if (db->failed) return pdb_err(db, &db->err, PAGEDB_MISUSE, "the handle's open failed; only close it");
  return cat_sql(db->cat, &db->err, sql, xrow, NULL, ctx);
}

int pagedb_sql_values(pagedb *db, const char *sql,
                      int (*xrow)(void *, int, const pagedb_value *, const char *const *), void *ctx) {
  if (!db || !sql) return PAGEDB_MISUSE;
  if (db->failed) return pdb_err(db, &db->err, PAGEDB_MISUSE, "the handle's open failed; only close it");
  return cat_sql(db->cat, &db->err, sql, NULL, xrow, ctx);
}
