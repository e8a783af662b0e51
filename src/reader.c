/*
** reader.c -- reading committed samples by id in O(1).
**
** A read is a lock-free index lookup and then either a pointer into the
** map of the data file (zero-copy) or one pread into the reader's buffer
** (copy).  Every extent was checked against the page table and the file
** when it was loaded or committed, so no size is trusted blindly here.
*/
#include "api.h"

#include <stdio.h>

int pagedb_reader_open(pagedb *db, int mode, pagedb_reader **out) {
  if (!out) return PAGEDB_MISUSE;
  *out = NULL;
  if (!db) return PAGEDB_MISUSE;
  if (db->failed) return pdb_err(db, &db->err, PAGEDB_MISUSE, "the handle's open failed; only close it");
  int verify = (mode & PAGEDB_READ_VERIFY) != 0;
  mode &= ~PAGEDB_READ_VERIFY;
  if (mode != PAGEDB_READ_MMAP && mode != PAGEDB_READ_COPY)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: unknown read mode %d", db->path, mode);
  if (mode == PAGEDB_READ_MMAP) {
    /* Announce first, then map what is committed now: a commit either sees
    ** the announcement or has already committed what we map (main.c). */
    atomic_store(&db->want_map, 1);
    uint64_t end = atomic_load(&db->committed) * pager_page_size(db->pager);
    int rc = pager_map_ensure(db->pager, &db->err, end);
    if (rc != PAGEDB_OK) return rc;
  }
  pagedb_reader *r = pdb_calloc(1, sizeof *r);
  if (!r) return pdb_err(db, &db->err, PAGEDB_NOMEM, "out of memory opening a reader of %s", db->path);
  r->db = db;
  r->mode = mode;
  r->verify = verify;
  pthread_mutex_lock(&db->mu);
  r->next = db->readers;
  db->readers = r;
  pthread_mutex_unlock(&db->mu);
  *out = r;
  return PAGEDB_OK;
}

/* The slot of sample ID, which must have a value for FIELD. */
static int locate(pagedb_reader *r, int64_t id, int field, const uint64_t **slot) {
  pagedb *db = r->db;
  if (field < 0 || field >= db->nfield)
    return pdb_err(r->db, &r->err, PAGEDB_RANGE, "%s: no field number %d (the dataset has %d)", db->path, field, db->nfield);
  const uint64_t *s = idx_find(db->idx, id);
  if (!s && idx_damaged(db->idx, id))
    return pdb_err(r->db, &r->err, PAGEDB_CORRUPT_INDEX, "%s-index: the entry of sample %lld is damaged (checksum, id"
                   " or extent): run pagedb_check; delete the index file to have the next read-write open rebuild it",
                   db->path, (long long)id);
  if (!s) return pdb_err(r->db, &r->err, PAGEDB_NOTFOUND, "%s: no committed sample with id %lld", db->path, (long long)id);
  if (!slot_has(s, field))
    return pdb_err(r->db, &r->err, PAGEDB_NOTFOUND, "%s: sample %lld has no value for field '%s'", db->path, (long long)id,
                       db->fields[field].name);
  *slot = s;
  return PAGEDB_OK;
}

/* The extent of BYTES/TEXT field FIELD of sample ID, and its slot. */
static int bytes_field(pagedb_reader *r, int64_t id, int field, uint64_t *off, uint64_t *len, const uint64_t **slot) {
  pagedb *db = r->db;
  if (field >= 0 && field < db->nfield && !api_is_bytes(db, field))
    return pdb_err(r->db, &r->err, PAGEDB_MISMATCH, "%s: field '%s' is a scalar: use pagedb_read_%s", db->path,
                       db->fields[field].name, db->fields[field].type == PAGEDB_INT ? "int" : "real");
  int rc = locate(r, id, field, slot);
  if (rc == PAGEDB_OK) api_extent(db, *slot, field, off, len);
  return rc;
}

/* The stored bytes of an extent: in the map, or fetched into R's buffer. */
static int stored_bytes(pagedb_reader *r, uint64_t off, uint64_t len, const uint8_t **src) {
  if (r->mode == PAGEDB_READ_MMAP) {
    int rc = len > 0 ? pager_map_fill(r->db->pager, &r->err, 1, &off, &len) : PAGEDB_OK;
    *src = pager_map(r->db->pager) + off;
    return rc;
  }
  *src = (const uint8_t *)"";
  return len > 0 ? pager_fetch(r->db->pager, &r->err, off, len, &r->buf, &r->cap, src) : PAGEDB_OK;
}

static int finish_one(pagedb_reader *r, int64_t id, int field, const uint64_t *s, const void **data, size_t *n);

int pagedb_read(pagedb_reader *r, int64_t id, int field, const void **data, size_t *n) {
  if (!r || !data || !n) return PAGEDB_MISUSE;
  *data = NULL;
  *n = 0;
  const uint8_t *src;
  const uint64_t *s = NULL;
  uint64_t off, len;
  int rc = PAGEDB_OK;
  if (r->pf.ids && pf_read(r, id, field, data, n)) {
    src = *data;
    len = *n;
  } else {
    rc = bytes_field(r, id, field, &off, &len, &s);
    if (rc == PAGEDB_OK) rc = stored_bytes(r, off, len, &src);
    if (rc != PAGEDB_OK) return rc;
  }
  const void *d = src;
  size_t dn = (size_t)len;
  if (api_must_finish(r, field) && (rc = finish_one(r, id, field, s, &d, &dn)) != PAGEDB_OK) {
    *data = NULL;
    *n = 0;
    return rc;
  }
  *data = d;
  *n = dn;
  return PAGEDB_OK;
}

/* Check the stored bytes SRC of field F of sample ID (slot S) against their
** checksum: PAGEDB_OK or PAGEDB_CORRUPT. */
static int verify(pagedb_reader *r, int64_t id, int f, const uint64_t *s, const uint8_t *src) {
  const uint64_t *x = slot_cext(s, r->db->nfield, f);
  uint64_t len = x[0] & ~SLOT_Z, got = pdb_sum(src, len);
  if (got == x[1]) return PAGEDB_OK;
  uint64_t off, l;
  api_extent(r->db, s, f, &off, &l);
  return pdb_err(r->db, &r->err, PAGEDB_CORRUPT,
                 "%s: sample %lld, field '%s': checksum mismatch (%llu bytes at data offset %llu, page %llu: stored"
                 " %016llx, read %016llx)", r->db->path, (long long)id, r->db->fields[f].name,
                 (unsigned long long)len, (unsigned long long)off,
                 (unsigned long long)(off / pager_page_size(r->db->pager)), (unsigned long long)x[1],
                 (unsigned long long)got);
}

/* Decompress the stored bytes SRC of field F of sample ID (slot S) into DST,
** which has room for its raw length. */
static int inflate(pagedb_reader *r, int64_t id, int f, const uint64_t *s, const uint8_t *src, uint8_t *dst) {
  const uint64_t *x = slot_cext(s, r->db->nfield, f);
  uint64_t raw = slot_get(s, r->db->nfield, f), len = x[0] & ~SLOT_Z;
  if (codec_decompress(src, len, dst, raw)) return PAGEDB_OK;
  return pdb_err(r->db, &r->err, PAGEDB_CORRUPT,
                 "%s: sample %lld, field '%s': %llu compressed bytes do not decompress to the %llu bytes recorded",
                 r->db->path, (long long)id, r->db->fields[f].name, (unsigned long long)len, (unsigned long long)raw);
}

/* Room for NEED decompressed bytes in R's buffer.  Whatever it held is
** dropped: every value of one call is decompressed after this. */
static int zroom(pagedb_reader *r, uint64_t need) {
  if (need <= r->zcap) return PAGEDB_OK;
  size_t cap;
  uint8_t *b = pdb_buf_alloc((size_t)need, &cap);
  if (!b) return pdb_err(r->db, &r->err, PAGEDB_NOMEM, "out of memory decompressing %llu bytes", (unsigned long long)need);
  pdb_buf_free(r->zbuf);
  r->zbuf = b;
  r->zcap = cap;
  return PAGEDB_OK;
}

/* The slot of sample ID again, after its bytes were read: NULL, with the
** error set, if a delete committed since it was located. */
static const uint64_t *still_there(pagedb_reader *r, int64_t id, int field) {
  const uint64_t *s = idx_find(r->db->idx, id);
  if (s && slot_has(s, field)) return s;
  pdb_err(r->db, &r->err, PAGEDB_NOTFOUND, "%s: sample %lld was deleted while it was read", r->db->path, (long long)id);
  return NULL;
}

/* The raw length of field F of slot S if its value is stored compressed,
** else 0. */
static uint64_t zraw(const pagedb *db, const uint64_t *s, int f) {
  return (slot_cext(s, db->nfield, f)[0] & SLOT_Z) ? slot_get(s, db->nfield, f) : 0;
}

/* Verify and decompress one value, the stored bytes *DATA of field F of
** sample ID (slot S): a compressed one is inflated at OUT, which has room
** for it, and *DATA / *SIZE then describe OUT. */
static int finish_value(pagedb_reader *r, int64_t id, int f, const uint64_t *s, uint8_t *out, const void **data,
                        size_t *size) {
  int rc = r->verify ? verify(r, id, f, s, *data) : PAGEDB_OK;
  uint64_t raw = zraw(r->db, s, f);
  if (rc == PAGEDB_OK && raw && (rc = inflate(r, id, f, s, *data, out)) == PAGEDB_OK) {
    *data = out;
    *size = (size_t)raw;
  }
  return rc;
}

/* api_finish for one value, whose slot S the caller may already have (NULL:
** look it up): no pass to size the buffer, no second lookup. */
static int finish_one(pagedb_reader *r, int64_t id, int field, const uint64_t *s, const void **data, size_t *n) {
  if (!s && !(s = still_there(r, id, field))) return PAGEDB_NOTFOUND;
  int rc = zroom(r, zraw(r->db, s, field));
  return rc == PAGEDB_OK ? finish_value(r, id, field, s, r->zbuf, data, n) : rc;
}

int api_finish(pagedb_reader *r, const int64_t *ids, int n, int field, const void **data, size_t *sizes) {
  pagedb *db = r->db;
  /* One buffer for every value the call decompresses: all the pointers a
  ** batch returns stay valid together. */
  uint64_t need = 0;
  for (int i = 0; i < n; i++) {
    const uint64_t *s = idx_find(db->idx, ids[i]);
    if (s) need += pdb_align(zraw(db, s, field), PAGEDB_MAX_ALIGN);
  }
  int rc = zroom(r, need);
  uint8_t *out = r->zbuf;
  for (int i = 0; i < n && rc == PAGEDB_OK; i++) {
    const uint64_t *s = still_there(r, ids[i], field);
    if (!s) return PAGEDB_NOTFOUND;
    rc = finish_value(r, ids[i], field, s, out, &data[i], &sizes[i]);
    /* Each value at a multiple of 64 (pagedb_field_add_aligned); none
    ** decompressed yet: OUT may be NULL, and NULL + 0 is undefined. */
    uint64_t zr = zraw(db, s, field);
    if (zr) out += pdb_align(zr, PAGEDB_MAX_ALIGN);
  }
  return rc;
}

int pagedb_read_into(pagedb_reader *r, int64_t id, int field, void *buf, size_t cap, size_t *n) {
  if (!r || !n || (!buf && cap)) return PAGEDB_MISUSE;
  *n = 0;
  uint64_t off, len;
  const uint64_t *s;
  int rc = bytes_field(r, id, field, &off, &len, &s);
  if (rc != PAGEDB_OK) return rc;
  uint64_t raw = slot_get(s, r->db->nfield, field);
  int z = (slot_cext(s, r->db->nfield, field)[0] & SLOT_Z) != 0;
  *n = raw;
  if (raw > cap)
    return pdb_err(r->db, &r->err, PAGEDB_TOOBIG, "%s: sample %lld, field '%s' has %llu bytes; the buffer holds %zu",
                       r->db->path, (long long)id, r->db->fields[field].name, (unsigned long long)raw, cap);
  Pager *p = r->db->pager;
  if (!z && !r->verify && r->mode == PAGEDB_READ_COPY && pager_align(p) == 1)
    return len ? pager_read(p, &r->err, off, buf, len) : PAGEDB_OK;   /* straight into BUF */
  const uint8_t *src;
  rc = stored_bytes(r, off, len, &src);
  if (rc == PAGEDB_OK && r->verify) rc = verify(r, id, field, s, src);
  if (rc == PAGEDB_OK && z) rc = inflate(r, id, field, s, src, buf);
  else if (rc == PAGEDB_OK && len) memcpy(buf, src, len);
  return rc;
}

static int read_scalar(pagedb_reader *r, int64_t id, int field, int type, uint64_t *bits) {
  pagedb *db = r->db;
  if (field >= 0 && field < db->nfield && db->fields[field].type != type)
    return pdb_err(r->db, &r->err, PAGEDB_MISMATCH, "%s: field '%s' is not %s", db->path, db->fields[field].name,
                       type == PAGEDB_INT ? "an INT" : "a REAL");
  const uint64_t *s;
  int rc = locate(r, id, field, &s);
  if (rc == PAGEDB_OK) *bits = slot_get(s, db->nfield, field);
  return rc;
}

int pagedb_read_int(pagedb_reader *r, int64_t id, int field, int64_t *v) {
  if (!r || !v) return PAGEDB_MISUSE;
  uint64_t bits = 0;
  int rc = read_scalar(r, id, field, PAGEDB_INT, &bits);
  if (rc == PAGEDB_OK) *v = (int64_t)bits;
  return rc;
}

int pagedb_read_real(pagedb_reader *r, int64_t id, int field, double *v) {
  if (!r || !v) return PAGEDB_MISUSE;
  uint64_t bits = 0;
  int rc = read_scalar(r, id, field, PAGEDB_REAL, &bits);
  if (rc == PAGEDB_OK) memcpy(v, &bits, sizeof *v);
  return rc;
}

/*
** A hint lets a cold batch fault its pages in parallel, but on a warm file
** it is a system call per extent for nothing: with 2 MiB folios it cost a
** batch a fifth of its speed.  So every HINT_EVERY-th batch first asks
** whether its pages are resident, and the batches until the next check
** follow the answer.
*/
#define HINT_EVERY 16

int api_hint_batch(pagedb_reader *r, int n, const uint64_t *off, const uint64_t *len) {
  if (r->hint_left-- > 0) return r->hint_on;
  r->hint_left = HINT_EVERY - 1;
  r->hint_on = 0;
  for (int i = 0; i < n && !r->hint_on; i++) r->hint_on = !pager_map_resident(r->db->pager, off[i], len[i]);
  return r->hint_on;
}

int pagedb_read_batch(pagedb_reader *r, const int64_t *ids, int n, int field, const void **data, size_t *sizes) {
  if (!r) return PAGEDB_MISUSE;
  if (n < 0 || n > PAGEDB_MAX_BATCH || (n > 0 && (!ids || !data || !sizes)))
    return pdb_err(r->db, &r->err, PAGEDB_MISUSE, "%s: pagedb_read_batch of %d ids: give 0 to %d ids and arrays",
                   r->db->path, n, PAGEDB_MAX_BATCH);
  if (n == 0) return PAGEDB_OK;
  if (r->pf.ids && pf_read_batch(r, ids, n, field, data, sizes))
    return api_must_finish(r, field) ? api_finish(r, ids, n, field, data, sizes) : PAGEDB_OK;
  /* Offsets, lengths, and the addresses pager_fetch_batch gives back. */
  /* Kept by the reader: a batch per call allocates nothing once warm. */
  if ((size_t)n > r->nscratch) {
    uint64_t *ns = pdb_realloc(r->scratch, (size_t)n * (2 * sizeof *ns + sizeof(uint8_t *)));
    if (!ns) return pdb_err(r->db, &r->err, PAGEDB_NOMEM, "out of memory reading a batch of %d samples", n);
    r->scratch = ns;
    r->nscratch = (size_t)n;
  }
  uint64_t *ext = r->scratch;
  uint64_t *off = ext, *len = ext + n;
  int rc = PAGEDB_OK, rc2, i;
  const uint64_t *s;
  for (i = 0; i < n && rc == PAGEDB_OK; i++) rc = bytes_field(r, ids[i], field, &off[i], &len[i], &s);
  int good = rc == PAGEDB_OK ? n : i - 1;     /* extents found before a failure */
  if (r->mode == PAGEDB_READ_MMAP && good > 0 && (rc2 = pager_map_fill(r->db->pager, &r->err, good, off, len))) {
    rc = rc2;               /* a remote map could not be filled: no pointers */
    good = 0;
  } else if (r->mode == PAGEDB_READ_MMAP) {
    const uint8_t *base = pager_map(r->db->pager);
    if (api_hint_batch(r, good, off, len))
      for (i = 0; i < good; i++) pager_map_willneed(r->db->pager, off[i], len[i]);
    for (i = 0; i < good; i++) {
      data[i] = base + off[i];
      sizes[i] = len[i];
    }
  } else if (good > 0) {
    int bad;
    const uint8_t **at = (const uint8_t **)(ext + 2 * (size_t)n);
    int rrc = pager_fetch_batch(r->db->pager, &r->err, good, off, len, &r->buf, &r->cap, at, &bad);
    if (rrc != PAGEDB_OK) {
      good = bad;
      rc = pdb_err(r->db, &r->err, rrc, "%s (sample %lld of the batch)", pdb_msg_text(&r->err), (long long)ids[bad]);
    }
    for (i = 0; i < good; i++) {
      data[i] = at[i];
      sizes[i] = len[i];
    }
  }
  if (good > 0 && api_must_finish(r, field)) {
    int frc = api_finish(r, ids, good, field, data, sizes);
    if (rc == PAGEDB_OK) rc = frc;
  }
  return rc;
}

int pagedb_advise(pagedb_reader *r, int hint) {
  if (!r) return PAGEDB_MISUSE;
  if (hint < PAGEDB_ADVISE_NORMAL || hint > PAGEDB_ADVISE_DONTNEED)
    return pdb_err(r->db, &r->err, PAGEDB_MISUSE, "%s: unknown access hint %d", r->db->path, hint);
  uint64_t end = atomic_load(&r->db->committed) * pager_page_size(r->db->pager);
  return pager_advise(r->db->pager, &r->err, hint, end);
}

void api_reader_free(pagedb_reader *r) {
  pf_free(&r->pf);
  pdb_free(r->scratch);
  pdb_buf_free(r->buf);
  pdb_buf_free(r->zbuf);
  pdb_free(r);
}

int pagedb_reader_close(pagedb_reader *r) {
  if (!r) return PAGEDB_OK;
  pagedb *db = r->db;
  pthread_mutex_lock(&db->mu);
  for (pagedb_reader **pp = &db->readers; *pp; pp = &(*pp)->next) {
    if (*pp == r) {
      *pp = r->next;
      break;
    }
  }
  pthread_mutex_unlock(&db->mu);
  api_reader_free(r);
  return PAGEDB_OK;
}

const char *pagedb_reader_errmsg(pagedb_reader *r) {
  return r ? pdb_msg_text(&r->err) : "no reader";
}
