/*
** dict.c -- zstd dictionaries of the fields with codec zstd-dict (issue 28;
** doc/format.md, "Dictionaries").
**
** Invariants:
**   1. A dictionary, once on db->dicts, is never changed or freed before
**      the handle closes: writers compress with its CDict and readers
**      decompress with its DDict without a lock (zstd only reads them).
**      It is published whole (an atomic store after it is made).
**   2. Ids are unique within a field, chosen at random above 32767 (the
**      range zstd's format leaves to private dictionaries), so that
**      pagedb_attach can bring another dataset's dictionaries along with
**      their ids, which its values' frames carry.
**   3. A value compressed with a dictionary exists only in runs written
**      after the dictionary was published; commit lands the writers before
**      dict_stage, so every dictionary a committed value names is inserted
**      in that commit's catalog transaction or an earlier one (durability:
**      data synced, then one catalog transaction with both).
**   4. A field learning its dictionary stores its values as given and
**      keeps a copy (up to 128 KiB of each) until it has the samples it
**      wants; the writer whose value completes the set trains, under
**      dict_mu.  A retrain (pagedb_field_dict_train) keeps the current
**      dictionary in use until the new one is made.
*/
#include "dict.h"

#include <stdio.h>
#include <sys/random.h>
#include <time.h>

#define SAMPLE_MAX   (128u << 10)   /* bytes of one value kept as a sample */
#define LEARN_MAX    (256u << 20)   /* bytes of samples at most */

static PdbDict *dict_list(pagedb *db) { return atomic_load_explicit(&db->dicts, memory_order_acquire); }

const PdbDict *dict_find(pagedb *db, int field, uint32_t id) {
  for (PdbDict *d = dict_list(db); d; d = d->next)
    if (d->field == field && d->id == id) return d;
  return NULL;
}

/* Prepare D (bytes set) for LEVEL: its DDict, and its CDict if WANT_C. */
static void prepare(PdbDict *d, int level, int want_c) {
  if (!d->bad[0] && !(d->ddict = codec_ddict(d->bytes, d->n)))
    snprintf(d->bad, sizeof d->bad, "zstd cannot load it (damaged, or out of memory)");
  if (!d->bad[0] && want_c && !(d->cdict = codec_cdict(d->bytes, d->n, level)))
    snprintf(d->bad, sizeof d->bad, "zstd cannot load it (damaged, or out of memory)");
}

static void publish(pagedb *db, PdbDict *d) {
  d->next = dict_list(db);
  atomic_store_explicit(&db->dicts, d, memory_order_release);
}

static void free_dict(PdbDict *d) {
  codec_cdict_free(d->cdict);
  codec_ddict_free(d->ddict);
  pdb_free(d->bytes);
  pdb_free(d);
}

static void free_learn(DictLearn *l) {
  if (!l) return;
  pdb_free(l->buf);
  pdb_free(l->sizes);
  pdb_free(l);
}

void dict_free_all(pagedb *db) {
  PdbDict *d = dict_list(db);
  while (d) {
    PdbDict *next = d->next;
    free_dict(d);
    d = next;
  }
  atomic_store(&db->dicts, NULL);
  for (int f = 0; f < PAGEDB_MAX_FIELDS; f++) {
    free_learn(db->learn[f]);
    db->learn[f] = NULL;
    atomic_store(&db->learning[f], 0);
    atomic_store(&db->dict_cur[f], NULL);
  }
}

/* Start (or restart) FIELD learning: WANT samples, SIZE bytes (dict_mu). */
static int learn_start(pagedb *db, pdb_msg *m, int field, unsigned want, size_t size) {
  DictLearn *l = pdb_calloc(1, sizeof *l);
  if (!l) return pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory for field '%s''s dictionary", db->path,
                         db->fields[field].name);
  l->want = want;
  l->dict_size = size;
  free_learn(db->learn[field]);
  db->learn[field] = l;
  atomic_store(&db->learning[field], 1);
  return PAGEDB_OK;
}

int dict_field_added(pagedb *db, pdb_msg *m, int field) {
  pthread_mutex_lock(&db->dict_mu);
  int rc = learn_start(db, m, field, PDB_DICT_SAMPLES, PDB_DICT_SIZE);
  pthread_mutex_unlock(&db->dict_mu);
  return rc;
}

/* A fresh id for FIELD: random, above 32767, not in use. */
static uint32_t new_id(pagedb *db, int field) {
  for (;;) {
    uint32_t r;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
      struct timespec t;
      clock_gettime(CLOCK_REALTIME, &t);
      r = (uint32_t)t.tv_nsec * 2654435761u ^ (uint32_t)t.tv_sec;
    }
    r = 32768 + r % (0x7fffffffu - 32768);
    if (!dict_find(db, field, r)) return r;
  }
}

/* Make dictionary BYTES (N, owned: freed on failure) the current one of
** FIELD with a fresh id written into it (dict_mu). */
static int adopt(pagedb *db, pdb_msg *m, int field, uint8_t *bytes, size_t n) {
  const char *name = db->fields[field].name;
  PdbDict *d = pdb_calloc(1, sizeof *d);
  uint32_t id = new_id(db, field);
  if (!d || !codec_dict_set_id(bytes, n, id)) {
    pdb_free(d);
    pdb_free(bytes);
    return d ? pdb_err(db, m, PAGEDB_MISUSE, "%s: field '%s': a dictionary must be a zstd dictionary (zstd --train,"
                       " ZDICT), beginning with its magic number", db->path, name)
             : pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory for field '%s''s dictionary", db->path, name);
  }
  d->field = field;
  d->id = id;
  d->bytes = bytes;
  d->n = n;
  d->sum = pdb_sum(bytes, n);
  prepare(d, PAGEDB_CODEC_LEVEL_OF(db->fields[field].codec), 1);
  if (d->bad[0]) {
    int rc = pdb_err(db, m, PAGEDB_MISUSE, "%s: field '%s': the dictionary given is not usable: %s", db->path, name,
                     d->bad);
    free_dict(d);
    return rc;
  }
  publish(db, d);
  atomic_store_explicit(&db->dict_cur[field], d, memory_order_release);
  return PAGEDB_OK;
}

/* Train FIELD's dictionary from what it learned (dict_mu).  A set ZDICT
** cannot train from (too few or too small samples) doubles what it
** wants; past LEARN_MAX the field stops learning. */
static int train(pagedb *db, pdb_msg *m, int field) {
  DictLearn *l = db->learn[field];
  uint8_t *out = pdb_malloc(l->dict_size);
  if (!out) return pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory training field '%s''s dictionary", db->path,
                           db->fields[field].name);
  size_t n = codec_dict_train(out, l->dict_size, l->buf, l->sizes, l->ns, 1, PAGEDB_CODEC_LEVEL_OF(db->fields[field].codec));
  if (n == 0) {
    pdb_free(out);
    if (l->len >= LEARN_MAX / 2 || l->want >= (1u << 30)) {
      free_learn(l);
      db->learn[field] = NULL;
      atomic_store(&db->learning[field], 0);
    } else {
      l->want *= 2;
    }
    return PAGEDB_OK;
  }
  int rc = adopt(db, m, field, out, n);
  if (rc == PAGEDB_OK) {
    free_learn(l);
    db->learn[field] = NULL;
    atomic_store(&db->learning[field], 0);
  }
  return rc;
}

/* Keep N bytes of DATA as a sample of FIELD (dict_mu). */
static int learn_one(pagedb *db, pdb_msg *m, int field, const void *data, size_t n) {
  DictLearn *l = db->learn[field];
  if (!l || n == 0) return PAGEDB_OK;
  if (n > SAMPLE_MAX) n = SAMPLE_MAX;
  if (l->len + n > LEARN_MAX) return train(db, m, field);
  if (l->len + n > l->cap) {
    size_t cap = l->cap ? l->cap : (1u << 20);
    while (cap < l->len + n) cap *= 2;
    uint8_t *b = pdb_realloc(l->buf, cap);
    if (!b) return pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory learning field '%s''s dictionary", db->path,
                           db->fields[field].name);
    l->buf = b;
    l->cap = cap;
  }
  if (l->ns == l->cap_ns) {
    unsigned cap = l->cap_ns ? l->cap_ns * 2 : 1024;
    size_t *s = pdb_realloc(l->sizes, cap * sizeof *s);
    if (!s) return pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory learning field '%s''s dictionary", db->path,
                           db->fields[field].name);
    l->sizes = s;
    l->cap_ns = cap;
  }
  memcpy(l->buf + l->len, data, n);
  l->len += n;
  l->sizes[l->ns++] = n;
  /* ZDICT wants about 100 times the dictionary's size of samples. */
  if (l->ns >= l->want || l->len >= 100 * l->dict_size) return train(db, m, field);
  return PAGEDB_OK;
}

int dict_for_write(pagedb *db, pdb_msg *m, int field, const void *data, size_t n, const void **cdict) {
  int rc = PAGEDB_OK;
  if (atomic_load_explicit(&db->learning[field], memory_order_acquire)) {
    pthread_mutex_lock(&db->dict_mu);
    rc = learn_one(db, m, field, data, n);
    pthread_mutex_unlock(&db->dict_mu);
  }
  PdbDict *d = atomic_load_explicit(&db->dict_cur[field], memory_order_acquire);
  *cdict = d ? d->cdict : NULL;
  return rc;
}

int dict_for_read(pagedb *db, pdb_msg *m, int64_t id, int field, const void *src, size_t len, const void **ddict) {
  uint32_t did = codec_value_dict(src, len);
  const char *name = db->fields[field].name;
  if (did == 0)
    return pdb_err(db, m, PAGEDB_CORRUPT, "%s: sample %lld, field '%s': the compressed value names no dictionary",
                   db->path, (long long)id, name);
  const PdbDict *d = dict_find(db, field, did);
  if (!d)
    return pdb_err(db, m, PAGEDB_CORRUPT, "%s: sample %lld, field '%s': the value names dictionary %u, which the"
                   " catalog does not have", db->path, (long long)id, name, did);
  if (d->bad[0] || !d->ddict)
    return pdb_err(db, m, PAGEDB_CORRUPT, "%s: sample %lld, field '%s': dictionary %u is damaged: %s", db->path,
                   (long long)id, name, did, d->bad[0] ? d->bad : "not prepared");
  *ddict = d->ddict;
  return PAGEDB_OK;
}

/* --- the catalog ---------------------------------------------------------------- */

typedef struct LoadCtx { pagedb *db; pdb_msg *m; } LoadCtx;

static int load_row(void *ctx, int64_t field, int64_t id, const void *b, size_t n, int has_sum, int64_t sum) {
  LoadCtx *x = ctx;
  pagedb *db = x->db;
  if (field < 0 || field >= db->nfield || !codec_uses_dict(db->fields[field].codec) || id <= 0 || id > UINT32_MAX)
    return pdb_err(db, x->m, PAGEDB_CORRUPT_CATALOG, "catalog %s: table pagedb_dict has dictionary %lld of field %lld,"
                   " which is no field with codec zstd-dict", db->catpath, (long long)id, (long long)field);
  const char *name = db->fields[field].name;
  if (dict_find(db, (int)field, (uint32_t)id))
    return pdb_err(db, x->m, PAGEDB_CORRUPT_CATALOG, "catalog %s: field '%s' has dictionary %lld twice", db->catpath,
                   name, (long long)id);
  PdbDict *d = pdb_calloc(1, sizeof *d);
  uint8_t *bytes = pdb_malloc(n ? n : 1);
  if (!d || !bytes) {
    pdb_free(d);
    pdb_free(bytes);
    return pdb_err(db, x->m, PAGEDB_NOMEM, "%s: out of memory loading field '%s''s dictionary %lld", db->path, name,
                   (long long)id);
  }
  if (n) memcpy(bytes, b, n);
  d->field = (int)field;
  d->id = (uint32_t)id;
  d->bytes = bytes;
  d->n = n;
  d->sum = (uint64_t)sum;
  d->stored = 1;
  uint64_t got = pdb_sum(bytes, n);
  if (!has_sum || got != (uint64_t)sum)
    snprintf(d->bad, sizeof d->bad, "checksum mismatch (the catalog records %016llx, its %zu bytes hash to %016llx)",
             (unsigned long long)sum, n, (unsigned long long)got);
  else if (codec_dict_id(bytes, n) != d->id)
    snprintf(d->bad, sizeof d->bad, "its header names id %u", codec_dict_id(bytes, n));
  prepare(d, PAGEDB_CODEC_LEVEL_OF(db->fields[field].codec), 0);
  publish(db, d);
  return PAGEDB_OK;
}

int dict_load(pagedb *db, pdb_msg *m) {
  LoadCtx x = { db, m };
  int rc = cat_dicts(db->cat, m, load_row, &x);
  /* Rows come in insertion order: the newest sound one of each field is
  ** its current one (its CDict made now). */
  for (int f = 0; f < db->nfield && rc == PAGEDB_OK; f++) {
    if (!codec_uses_dict(db->fields[f].codec)) continue;
    PdbDict *cur = NULL;
    for (PdbDict *d = dict_list(db); d && !cur; d = d->next)
      if (d->field == f && !d->bad[0]) cur = d;
    if (cur && (cur->cdict = codec_cdict(cur->bytes, cur->n, PAGEDB_CODEC_LEVEL_OF(db->fields[f].codec))) != NULL)
      atomic_store(&db->dict_cur[f], cur);
    else if (!db->readonly)
      rc = dict_field_added(db, m, f);
  }
  return rc;
}

int dict_stage(pagedb *db, pdb_msg *m) {
  int rc = PAGEDB_OK;
  for (PdbDict *d = dict_list(db); d && rc == PAGEDB_OK; d = d->next) {
    if (d->stored || d->staged) continue;
    rc = cat_put_dict(db->cat, m, d->field, d->id, d->bytes, d->n, d->sum);
    if (rc == PAGEDB_OK) d->staged = 1;
  }
  return rc;
}

void dict_committed(pagedb *db, int ok) {
  for (PdbDict *d = dict_list(db); d; d = d->next) {
    if (d->staged && ok) d->stored = 1;
    d->staged = 0;
  }
}

int dict_import(pagedb *db, pdb_msg *m, int field, pagedb *other, int ofield, int make_current) {
  pthread_mutex_lock(&db->dict_mu);
  int rc = PAGEDB_OK;
  const char *name = db->fields[field].name;
  PdbDict *newest = NULL;
  for (PdbDict *o = dict_list(other); o && rc == PAGEDB_OK; o = o->next) {
    if (o->field != ofield) continue;
    if (o->bad[0]) {
      rc = pdb_err(db, m, PAGEDB_CORRUPT, "%s: field '%s': dictionary %u is damaged: %s", other->path,
                   other->fields[ofield].name, o->id, o->bad);
      break;
    }
    const PdbDict *have = dict_find(db, field, o->id);
    if (have) {
      /* The same dictionary (an earlier attach of the same data): shared. */
      if (have->n != o->n || have->sum != o->sum || memcmp(have->bytes, o->bytes, o->n) != 0)
        rc = pdb_err(db, m, PAGEDB_MISMATCH, "%s: field '%s' has another dictionary with id %u than %s has", db->path,
                     name, o->id, other->path);
      if (!newest) newest = (PdbDict *)have;
      continue;
    }
    PdbDict *d = pdb_calloc(1, sizeof *d);
    uint8_t *b = pdb_malloc(o->n);
    if (!d || !b) {
      pdb_free(d);
      pdb_free(b);
      rc = pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory copying field '%s''s dictionary %u", db->path, name, o->id);
      break;
    }
    memcpy(b, o->bytes, o->n);
    d->field = field;
    d->id = o->id;
    d->bytes = b;
    d->n = o->n;
    d->sum = o->sum;
    prepare(d, PAGEDB_CODEC_LEVEL_OF(db->fields[field].codec), 0);
    publish(db, d);
    if (!newest) newest = d;   /* OTHER's list is newest first */
  }
  if (rc == PAGEDB_OK && make_current && newest) {
    if (!newest->cdict) newest->cdict = codec_cdict(newest->bytes, newest->n, PAGEDB_CODEC_LEVEL_OF(db->fields[field].codec));
    if (!newest->cdict) {
      rc = pdb_err(db, m, PAGEDB_NOMEM, "%s: out of memory preparing field '%s''s dictionary %u", db->path, name,
                   newest->id);
    } else {
      atomic_store_explicit(&db->dict_cur[field], newest, memory_order_release);
      free_learn(db->learn[field]);
      db->learn[field] = NULL;
      atomic_store(&db->learning[field], 0);
    }
  }
  pthread_mutex_unlock(&db->dict_mu);
  return rc;
}

/* --- the API ------------------------------------------------------------------------ */

static int dict_field(pagedb *db, int field, const char *what) {
  if (!db) return PAGEDB_MISUSE;
  if (field < 0 || field >= db->nfield)
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: %s: no field %d (the dataset has %d)", db->path, what, field,
                   db->nfield);
  if (!codec_uses_dict(db->fields[field].codec))
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: %s: field '%s' has no dictionary codec (zstd-dict)", db->path,
                   what, db->fields[field].name);
  if (db->readonly)
    return pdb_err(db, &db->err, PAGEDB_READONLY, "%s: %s: the dataset is open read-only", db->path, what);
  return PAGEDB_OK;
}

int pagedb_field_dict_train(pagedb *db, int field, unsigned samples, size_t size) {
  int rc = dict_field(db, field, "pagedb_field_dict_train");
  if (rc != PAGEDB_OK) return rc;
  if (size != 0 && (size < 1024 || size > (64u << 20)))
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: field '%s': a dictionary of %zu bytes: give 1 KiB to 64 MiB,"
                   " or 0 for %u", db->path, db->fields[field].name, size, PDB_DICT_SIZE);
  pthread_mutex_lock(&db->dict_mu);
  rc = learn_start(db, &db->err, field, samples ? samples : PDB_DICT_SAMPLES, size ? size : PDB_DICT_SIZE);
  pthread_mutex_unlock(&db->dict_mu);
  return rc;
}

int pagedb_field_dict_set(pagedb *db, int field, const void *dict, size_t n) {
  int rc = dict_field(db, field, "pagedb_field_dict_set");
  if (rc != PAGEDB_OK) return rc;
  if (!dict || n < 8 || n > (64u << 20))
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: field '%s': a dictionary of %zu bytes%s", db->path,
                   db->fields[field].name, n, dict ? " (8 bytes to 64 MiB)" : " at NULL");
  uint8_t *b = pdb_malloc(n);
  if (!b) return pdb_err(db, &db->err, PAGEDB_NOMEM, "%s: out of memory for a dictionary of %zu bytes", db->path, n);
  memcpy(b, dict, n);
  pthread_mutex_lock(&db->dict_mu);
  rc = adopt(db, &db->err, field, b, n);
  if (rc == PAGEDB_OK) {
    free_learn(db->learn[field]);
    db->learn[field] = NULL;
    atomic_store(&db->learning[field], 0);
  }
  pthread_mutex_unlock(&db->dict_mu);
  return rc;
}

int pagedb_field_dict_get(pagedb *db, int field, uint32_t id, const void **bytes, size_t *n) {
  if (!db || !bytes || !n) return PAGEDB_MISUSE;
  *bytes = NULL;
  *n = 0;
  if (field < 0 || field >= db->nfield)
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: pagedb_field_dict_get: no field %d", db->path, field);
  const PdbDict *d = dict_find(db, field, id);
  if (!d)
    return pdb_err(db, &db->err, PAGEDB_NOTFOUND, "%s: field '%s' has no dictionary %u", db->path,
                   db->fields[field].name, id);
  *bytes = d->bytes;
  *n = d->n;
  return PAGEDB_OK;
}

int pagedb_field_dicts(pagedb *db, int field, uint32_t *ids, size_t *sizes, int cap) {
  if (!db || field < 0 || field >= db->nfield || cap < 0 || (cap > 0 && (!ids || !sizes))) return -1;
  int n = 0;
  for (PdbDict *d = dict_list(db); d; d = d->next) {
    if (d->field != field) continue;
    if (n < cap) {
      ids[n] = d->id;
      sizes[n] = d->n;
    }
    n++;
  }
  return n;
}
