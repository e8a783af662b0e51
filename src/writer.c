/*
** writer.c -- assembling samples into pages.
**
** A writer fills a private buffer that is laid out exactly as the run will
** be on disk: the run header, then the records of its samples back to back.
** A record is the sample's BYTES/TEXT fields in schema order; its extents
** are in the sample's slot (offset of the record, one length per field).
** Each value starts at the first multiple of its field's alignment at or
** after the end of the one before (zeros between: api_extent).  A buffer offset
** is a run offset, and a run starts on a page, so aligning in the buffer
** aligns in the file.  Every field's values are aligned to the same G,
** the largest alignment of the fields (w->amax, api.h): a sample carried
** to the other buffer moves from its first value on, which is at a
** multiple of G, to the front of the buffer, also one (write_before_current).
**
** The page number is claimed only when the buffer is written, so a claimed
** page is always written at once and never holds back the committed prefix
** while a writer is still filling it.  When a field does not fit in the rest
** of the page, the samples before the current one are written as a run and
** the current sample's bytes move to the front of the buffer; a sample that
** alone exceeds a page grows the buffer and becomes a run of several pages
** when it ends.  The caller never retries anything.
**
** A writer has two buffers.  A run is written from one while the bytes of
** the sample that did not fit move to the other, which is filled next: the
** write may pad the run past its end (pager.c, fill_end), over where those
** bytes were.  On a file whose writes are asynchronous (io_uring, direct),
** the next page is filled while the write is in flight, so at most one
** write per writer is in flight; elsewhere the write ends first.  The
** run is handed to the pager when the write lands: at the writer's next
** call that finds it ended, before the writer's next write, at flush or
** close, or at a commit (api_land_writers), so a written page never waits
** for its writer to come back.
*/
#include "api.h"
#include "dict.h"

#include <unistd.h>

#include <stdio.h>

/* The writer's state allows another call. */
static int usable(pagedb_writer *w) {
  if (atomic_load(&w->fly_rc)) {
    pthread_mutex_lock(&w->fly_mu);
    w->failed = atomic_exchange(&w->fly_rc, 0);
    w->err = w->fly_err;
    pthread_mutex_unlock(&w->fly_mu);
    return pdb_err(w->db, &w->err, w->failed, "%s", pdb_msg_text(&w->fly_err));
  }
  if (w->failed)
    return pdb_err(w->db, &w->err, PAGEDB_MISUSE, "the writer of %s failed earlier (%s): close it", w->db->path,
                   pagedb_errname(w->failed));
  int own = api_own(w->db, &w->err);
  if (own != PAGEDB_OK) return own;
  int broken = atomic_load(&w->db->broken);
  if (broken)
    return pdb_err(w->db, &w->err, broken, "%s: an earlier failure made the handle unusable (%s)", w->db->path,
                       pagedb_errstr(broken));
  return PAGEDB_OK;
}

int pagedb_writer_open(pagedb *db, pagedb_writer **out) {
  if (!out) return PAGEDB_MISUSE;
  *out = NULL;
  if (!db) return PAGEDB_MISUSE;
  if (db->failed) return pdb_err(db, &db->err, PAGEDB_MISUSE, "the handle's open failed; only close it");
  if (db->readonly) return pdb_err(db, &db->err, PAGEDB_READONLY, "%s is open read-only: no writers", db->path);
  int own = api_own(db, &db->err);
  if (own != PAGEDB_OK) return own;
  if (db->nfield == 0)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s has no fields: add fields before writing", db->path);
  int broken = atomic_load(&db->broken);
  if (broken) return pdb_err(db, &db->err, broken, "%s: an earlier failure made the handle unusable", db->path);
  size_t ps = pager_page_size(db->pager);
  pagedb_writer *w = pdb_calloc(1, sizeof *w);
  if (w) {
    w->db = db;
    w->buf = pdb_buf_alloc(ps, &w->cap);   /* aligned for direct I/O */
    w->cur = pdb_calloc((size_t)db->nw, sizeof *w->cur);
    w->pos = PDB_PAGE_HDR;
    w->spare = pdb_buf_alloc(ps, &w->spare_cap);
    w->async = pager_async(db->pager);
    w->amax = 1;
    for (int f = 0; f < db->nfield; f++)
      if (db->isbytes[f] > w->amax) w->amax = db->isbytes[f];
  }
  if (!w || !w->buf || !w->cur || !w->spare) {
    if (w) {
      pdb_buf_free(w->buf);
      pdb_buf_free(w->spare);
      pdb_free(w->cur);
      pdb_free(w);
    }
    return pdb_err(db, &db->err, PAGEDB_NOMEM, "out of memory allocating a writer's %zu-byte page", ps);
  }
  pthread_mutex_init(&w->fly_mu, NULL);
  pthread_mutex_lock(&db->mu);
  w->next = db->writers;
  db->writers = w;
  pthread_mutex_unlock(&db->mu);
  api_start_thread(db);
  *out = w;
  return PAGEDB_OK;
}

static void release_ids(pagedb *db, PageRecs *r) {
  if (!r) return;
  for (uint32_t i = 0; i < r->d.nsamples; i++) idx_release(db->idx, (int64_t)r->slots[(size_t)i * db->nw]);
}

/*
** Hand run R, whose write ended with RC, to the pager (invariant 3 of
** pager.c).  If the write failed, the run is dead: its samples are dropped
** and their ids released, and M says how many.
*/
static void finish_run(pagedb *db, PageRecs *r, int rc, pdb_msg *m) {
  if (rc != PAGEDB_OK) {
    uint32_t nsamples = r->d.nsamples;
    release_ids(db, r);
    r->d.nsamples = 0;
    r->d.used = 0;
    if (nsamples)
      pdb_err(db, m, rc, "%s; the %u samples ended on that page were dropped", pdb_msg_text(m), nsamples);
  }
  if (pager_done(db->pager, &r->d)) api_wake(db);
}

/* Land the write in flight, if any: with WAIT 0 only if it has ended.  A
** failure's code is returned and its message left in M.  fly_mu held. */
static int land(pagedb_writer *w, int wait, pdb_msg *m) {
  if (!w->fly) return PAGEDB_OK;
  int rc = pager_write_wait(w->db->pager, m, &w->aio, wait);
  if (rc == PAGEDB_BUSY) return PAGEDB_OK;
  finish_run(w->db, w->fly, rc, m);
  w->fly = NULL;
  return rc;
}

/* land() from the writer's own thread; a failure fails the writer. */
static int land_own(pagedb_writer *w, int wait) {
  pthread_mutex_lock(&w->fly_mu);
  int rc = land(w, wait, &w->err);
  pthread_mutex_unlock(&w->fly_mu);
  if (rc != PAGEDB_OK) w->failed = rc;
  return rc;
}

void api_land_writers(pagedb *db) {
  pthread_mutex_lock(&db->mu);
  for (pagedb_writer *w = db->writers; w; w = w->next) {
    pthread_mutex_lock(&w->fly_mu);
    int rc = land(w, 1, &w->fly_err);
    if (rc != PAGEDB_OK) atomic_store(&w->fly_rc, rc);
    pthread_mutex_unlock(&w->fly_mu);
  }
  pthread_mutex_unlock(&db->mu);
}

/*
** Write the first USED bytes of the buffer, holding the samples ended so
** far, as a run of as many pages as they need; the CARRY bytes at FROM,
** of the current sample, move to the front of the buffer to be filled
** next.  If the write fails, its samples are dropped, their ids released,
** and the writer fails.
*/
static int write_run(pagedb_writer *w, size_t used, size_t carry, size_t from) {
  pagedb *db = w->db;
  Pager *p = db->pager;
  /* The other buffer must be free before it takes anything. */
  int rc = land_own(w, 1);
  PageRecs *r = w->recs;
  w->recs = NULL;
  w->caprec = 0;
  if (rc == PAGEDB_OK && !r) {
    r = pdb_malloc(sizeof *r);   /* a run without samples: only the moved part */
    if (!r) rc = pdb_err(w->db, &w->err, PAGEDB_NOMEM, "out of memory writing a page of %s", db->path);
  }
  uint64_t ps = pager_page_size(p), pgno = 0;
  uint32_t npages = (uint32_t)((used + ps - 1) / ps);
  uint32_t nsamples = r ? r->d.nsamples : 0;
  if (rc == PAGEDB_OK) rc = pager_claim(p, &w->err, npages, &pgno);
  if (rc != PAGEDB_OK) {
    release_ids(db, r);
    pdb_free(r);
    w->failed = rc;
    return rc;
  }
  for (uint32_t i = 0; i < nsamples; i++) r->slots[(size_t)i * db->nw + 1] += pgno * ps;
  r->d.pgno = pgno;
  r->d.npages = npages;
  r->d.nsamples = nsamples;
  r->d.used = used;
  memcpy(w->spare + PDB_PAGE_HDR, w->buf + from, carry);
  rc = pager_write_start(p, &w->err, pgno, npages, nsamples, w->buf, used, &w->aio);
  uint8_t *b = w->buf;
  size_t c = w->cap;
  w->buf = w->spare;
  w->cap = w->spare_cap;
  w->spare = b;
  w->spare_cap = c;
  if (rc == PAGEDB_OK && w->async) {
    pthread_mutex_lock(&w->fly_mu);
    w->fly = r;
    pthread_mutex_unlock(&w->fly_mu);
    return land_own(w, 0);   /* a fast write may have ended already */
  }
  if (rc == PAGEDB_OK) rc = pager_write_wait(p, &w->err, &w->aio, 1);
  finish_run(db, r, rc, &w->err);
  if (rc != PAGEDB_OK) w->failed = rc;
  return rc;
}

/* Write the samples ended before the current one and move the current
** sample's bytes to the front of the buffer. */
static int write_before_current(pagedb_writer *w) {
  assert(w->in_sample && w->start > PDB_PAGE_HDR);
  /* The sample's first value is at the first multiple of G after its
  ** start (or it has none yet): from there on its bytes keep their
  ** offsets modulo G at the front, a multiple of G too, where the record
  ** then starts.  The padding before that value stays behind, unused. */
  size_t from = pdb_align(w->start, w->amax);
  if (from > w->pos) from = w->pos;
  size_t len = w->pos - from;
  assert(PDB_PAGE_HDR % PAGEDB_MAX_ALIGN == 0);
  int rc = write_run(w, w->start, len, from);
  w->start = PDB_PAGE_HDR;
  w->pos = PDB_PAGE_HDR + len;
  return rc;
}

/* Make room for N more bytes of the current sample. */
static int make_room(pagedb_writer *w, size_t n) {
  size_t ps = pager_page_size(w->db->pager);
  if (w->pos + n > ps && w->start > PDB_PAGE_HDR) {
    int rc = write_before_current(w);
    if (rc != PAGEDB_OK) return rc;
    /* Only a count for pagedb_stats: relaxed. */
    atomic_fetch_add_explicit(&w->db->moved, 1, memory_order_relaxed);
  }
  if (w->pos + n > w->cap) {
    /* A sample larger than a page: grow to whole pages, at least doubling
    ** so that a sample given in many small fields costs O(size). */
    size_t want = (w->pos + n + ps - 1) / ps * ps;
    if (want < w->cap * 2) want = w->cap * 2;
    size_t c;
    uint8_t *nb = pdb_buf_alloc(want, &c);
    if (!nb)
      return pdb_err(w->db, &w->err, PAGEDB_NOMEM, "out of memory growing a writer of %s to %zu bytes for sample %lld",
                         w->db->path, want, (long long)w->cur[0]);
    memcpy(nb, w->buf, w->pos);
    pdb_buf_free(w->buf);
    w->buf = nb;
    w->cap = c;
  }
  return PAGEDB_OK;
}

/* Check that FIELD can take a value of TYPE in the current sample. */
static int check_field(pagedb_writer *w, int field, int scalar, int type) {
  pagedb *db = w->db;
  int rc = usable(w);
  if (rc != PAGEDB_OK) return rc;
  if (!w->in_sample) return pdb_err(w->db, &w->err, PAGEDB_MISUSE, "%s: no sample begun: call pagedb_sample_begin first", db->path);
  if (field < 0 || field >= db->nfield)
    return pdb_err(w->db, &w->err, PAGEDB_RANGE, "%s: sample %lld: no field number %d (the dataset has %d)", db->path,
                       (long long)w->cur[0], field, db->nfield);
  int t = db->fields[field].type;
  if (scalar ? t != type : !api_is_bytes(db, field))
    return pdb_err(w->db, &w->err, PAGEDB_MISMATCH, "%s: sample %lld: field '%s' is %s, not %s", db->path,
                       (long long)w->cur[0], db->fields[field].name,
                       t == PAGEDB_INT ? "an INT" : t == PAGEDB_REAL ? "a REAL" : t == PAGEDB_TENSOR ? "a TENSOR"
                       : "BYTES/TEXT",
                       type == PAGEDB_INT ? "an INT" : type == PAGEDB_REAL ? "a REAL" : "BYTES/TEXT");
  if (slot_has(w->cur, field))
    return pdb_err(w->db, &w->err, PAGEDB_MISUSE, "%s: sample %lld: field '%s' given twice", db->path, (long long)w->cur[0],
                       db->fields[field].name);
  return PAGEDB_OK;
}

int pagedb_sample_begin(pagedb_writer *w, int64_t id) {
  if (!w) return PAGEDB_MISUSE;
  pagedb *db = w->db;
  int rc = usable(w);
  if (rc != PAGEDB_OK) return rc;
  if (w->in_sample)
    return pdb_err(w->db, &w->err, PAGEDB_MISUSE, "%s: sample %lld is still open: end or cancel it first", db->path,
                       (long long)w->cur[0]);
  if (id < 0 && id != PAGEDB_AUTO_ID)
    return pdb_err(w->db, &w->err, PAGEDB_MISUSE, "%s: invalid sample id %lld: ids are >= 0, or PAGEDB_AUTO_ID", db->path,
                       (long long)id);
  if (id == PAGEDB_AUTO_ID) {
    do {
      id = atomic_fetch_add(&db->next_auto, 1);
      if (id < 0 || id == INT64_MAX) {
        atomic_store(&db->next_auto, INT64_MAX);
        return pdb_err(w->db, &w->err, PAGEDB_FULL, "%s: no automatic ids left", db->path);
      }
      rc = idx_reserve(db->idx, id);
    } while (rc == PAGEDB_CONSTRAINT);
  } else {
    rc = idx_reserve(db->idx, id);
    if (rc == PAGEDB_CONSTRAINT)
      return pdb_err(w->db, &w->err, rc, "%s: sample id %lld is already used", db->path, (long long)id);
    /* Automatic ids stay above every id seen (INT64_MAX: none are left). */
    int64_t next = atomic_load(&db->next_auto), want = id < INT64_MAX ? id + 1 : INT64_MAX;
    while (next < want && !atomic_compare_exchange_weak(&db->next_auto, &next, want)) {}
  }
  if (rc != PAGEDB_OK) return pdb_err(w->db, &w->err, rc, "%s: out of memory reserving sample id %lld", db->path, (long long)id);
  memset(w->cur, 0, (size_t)db->nw * sizeof *w->cur);
  w->cur[0] = (uint64_t)id;
  w->in_sample = 1;
  w->start = w->pos;
  w->nput = 0;
  return PAGEDB_OK;
}

/*
** Compress the N bytes at DATA for a field with CODEC (and DICT, its
** prepared dictionary, or NULL) into w->zbuf: *STORED
** receives the compressed size, or N when the value does not shrink (it is
** then stored as given, and reads skip decompression).
*/
static int compress_value(pagedb_writer *w, int codec, const void *dict, const void *data, size_t n, size_t *stored) {
  size_t need = codec_state_size(codec);
  if (w->zstate_size < need) {
    void *st = pdb_calloc(1, need);
    if (!st) return pdb_err(w->db, &w->err, PAGEDB_NOMEM, "out of memory compressing sample %lld", (long long)w->cur[0]);
    codec_state_clear(w->zstate);
    pdb_free(w->zstate);
    w->zstate = st;
    w->zstate_size = need;
  }
  if (w->zcap < n - 1) {
    size_t cap;
    uint8_t *b = pdb_buf_alloc(n - 1, &cap);
    if (!b) return pdb_err(w->db, &w->err, PAGEDB_NOMEM, "out of memory compressing sample %lld", (long long)w->cur[0]);
    pdb_buf_free(w->zbuf);
    w->zbuf = b;
    w->zcap = cap;
  }
  /* Room for n - 1 bytes: only a value that shrinks comes back compressed. */
  *stored = codec_compress(codec, w->zstate, dict, data, n, w->zbuf, n - 1);
  if (*stored == 0) *stored = n;
  return PAGEDB_OK;
}

/*
** Append the STORED bytes at SRC to the current sample as the value of
** FIELD, RAW bytes once read (Z: compressed), whose checksum is *SUM, or,
** when SUM is NULL, computed here.
*/
static int append_value(pagedb_writer *w, int field, const void *src, size_t stored, uint64_t raw, int z,
                        const uint64_t *sum) {
  int nf = w->db->nfield;
  size_t a = w->db->isbytes[field];
  int rc = make_room(w, pdb_align(w->pos, a) - w->pos + stored);
  if (rc != PAGEDB_OK) return rc;
  /* A move kept w->pos modulo G, a multiple of a (write_before_current):
  ** the pad is the same. */
  size_t pad = pdb_align(w->pos, a) - w->pos;
  memset(w->buf + w->pos, 0, pad);
  w->pos += pad;
  if (stored) memcpy(w->buf + w->pos, src, stored);
  uint64_t *x = slot_ext(w->cur, nf, field);
  x[0] = stored | (z ? SLOT_Z : 0);
  x[1] = sum ? *sum : pdb_sum(w->buf + w->pos, stored);
  w->pos += stored;
  *slot_val(w->cur, nf, field) = raw;
  slot_set(w->cur, field);
  w->order[w->nput++] = (uint16_t)field;
  return PAGEDB_OK;
}

/* A raw value of N bytes for tensor field FIELD must fit its declaration:
** its length, and with two or more variable dimensions its trailer. */
static int check_tensor_raw(pagedb_writer *w, int field, const void *data, size_t n) {
  const CatField *f = &w->db->fields[field];
  if (f->type != PAGEDB_TENSOR) return PAGEDB_OK;
  int64_t shape[PAGEDB_TENSOR_MAX_DIMS];
  uint64_t nbytes;
  char why[160], decl[TENSOR_TEXT_MAX];
  if (tensor_value_shape(&f->tensor, data, n, shape, &nbytes, why, sizeof why) == 0) return PAGEDB_OK;
  tensor_format(&f->tensor, decl);
  return pdb_err(w->db, &w->err, PAGEDB_MISMATCH, "%s: sample %lld, field '%s' (%s): a raw value of %zu bytes: %s",
                 w->db->path, (long long)w->cur[0], f->name, decl, n, why);
}

/* pagedb_put after check_field: N bytes of DATA. */
static int put_bytes(pagedb_writer *w, int field, const void *data, size_t n) {
  int rc;
  size_t have = w->pos - w->start;
  if (n > PAGEDB_MAX_SAMPLE - have)
    return pdb_err(w->db, &w->err, PAGEDB_TOOBIG, "%s: sample %lld, field '%s': %zu bytes would make the sample larger than"
                       " the %llu-byte limit", w->db->path, (long long)w->cur[0], w->db->fields[field].name, n,
                       (unsigned long long)PAGEDB_MAX_SAMPLE);
  int codec = w->db->fields[field].codec;
  size_t stored = n;
  const void *src = data;
  if (PAGEDB_CODEC_KIND(codec) != PAGEDB_CODEC_NONE && n > 1 && codec_fits(n)) {
    /* A dictionary codec without its dictionary yet stores as given. */
    const void *dict = NULL;
    if (codec_uses_dict(codec) && (rc = dict_for_write(w->db, &w->err, field, data, n, &dict)) != PAGEDB_OK) return rc;
    rc = compress_value(w, codec, dict, data, n, &stored);
    if (rc != PAGEDB_OK) return rc;
    if (stored < n) src = w->zbuf;
  }
  return append_value(w, field, src, stored, n, stored < n, NULL);
}

int pagedb_put(pagedb_writer *w, int field, const void *data, size_t n) {
  if (!w) return PAGEDB_MISUSE;
  int rc = check_field(w, field, 0, PAGEDB_BYTES);
  if (rc != PAGEDB_OK) return rc;
  if (n > 0 && !data)
    return pdb_err(w->db, &w->err, PAGEDB_MISUSE, "%s: sample %lld, field '%s': NULL data for %zu bytes", w->db->path,
                       (long long)w->cur[0], w->db->fields[field].name, n);
  rc = check_tensor_raw(w, field, data, n);
  return rc == PAGEDB_OK ? put_bytes(w, field, data, n) : rc;
}

/* The shape SHAPE of NDIM dimensions as text, "(2, 3)", into OUT. */
static void shape_text(int ndim, const int64_t *shape, char *out, size_t cap) {
  size_t k = (size_t)snprintf(out, cap, "(");
  for (int i = 0; i < ndim && k < cap; i++) k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "",
                                                                  (long long)shape[i]);
  if (k < cap) snprintf(out + k, cap - k, ndim == 1 ? ",)" : ")");
}

int pagedb_put_tensor(pagedb_writer *w, int field, int dtype, int ndim, const int64_t *shape, const void *data,
                      size_t n) {
  if (!w) return PAGEDB_MISUSE;
  int rc = check_field(w, field, 0, PAGEDB_BYTES);
  if (rc != PAGEDB_OK) return rc;
  pagedb *db = w->db;
  const CatField *f = &db->fields[field];
  long long id = (long long)w->cur[0];
  if (f->type != PAGEDB_TENSOR)
    return pdb_err(db, &w->err, PAGEDB_MISMATCH, "%s: sample %lld: field '%s' is %s, not a tensor", db->path, id,
                   f->name, f->type == PAGEDB_TEXT ? "TEXT" : "BYTES");
  const TensorDecl *d = &f->tensor;
  char decl[TENSOR_TEXT_MAX], want[200], got[200];
  tensor_format(d, decl);
  tensor_shape_text(d, want, sizeof want);
  if (ndim < 1 || ndim > PAGEDB_TENSOR_MAX_DIMS || (!shape && ndim > 0))
    return pdb_err(db, &w->err, PAGEDB_MISMATCH, "%s: sample %lld, field '%s': declared %s %s, given %d dimensions",
                   db->path, id, f->name, pagedb_dtype_name(d->dtype), want, ndim);
  shape_text(ndim, shape, got, sizeof got);
  const char *gname = pagedb_dtype_name(dtype) ? pagedb_dtype_name(dtype) : "an unknown dtype";
  const char *bad = dtype != d->dtype ? "dtype" : ndim != d->ndim ? "rank" : NULL;
  uint64_t need = (uint64_t)d->esize;
  for (int i = 0; !bad && i < ndim; i++) {
    if (shape[i] < 0 || shape[i] > INT32_MAX || (d->dims[i] != PAGEDB_DIM_VAR && shape[i] != d->dims[i]))
      bad = "shape";
    else if (shape[i] == 0) need = 0;
    else if (need > PAGEDB_MAX_SAMPLE / (uint64_t)shape[i]) bad = "size";   /* more than a sample may hold */
    else need *= (uint64_t)shape[i];
  }
  if (!bad && need != n) bad = "size";
  if (bad) {
    if (strcmp(bad, "size") == 0)
      return pdb_err(db, &w->err, PAGEDB_MISMATCH, "%s: sample %lld, field '%s': declared %s %s; given %s %s in %zu"
                     " bytes, which should be %llu", db->path, id, f->name, pagedb_dtype_name(d->dtype), want, gname,
                     got, n, (unsigned long long)need);
    return pdb_err(db, &w->err, PAGEDB_MISMATCH, "%s: sample %lld, field '%s': declared %s %s; given %s %s (the %s"
                   " differs)", db->path, id, f->name, pagedb_dtype_name(d->dtype), want, gname, got, bad);
  }
  if (n > 0 && !data)
    return pdb_err(db, &w->err, PAGEDB_MISUSE, "%s: sample %lld, field '%s': NULL data for %zu bytes", db->path, id,
                   f->name, n);
  uint8_t trailer[8 * PAGEDB_TENSOR_MAX_DIMS];
  size_t tn = tensor_trailer(d, shape, trailer);
  if (tn == 0) return put_bytes(w, field, data, n);
  /* The value is the elements and the trailer: one buffer, so that a codec
  ** compresses them as one block. */
  uint8_t *v = pdb_malloc(n + tn);
  if (!v) return pdb_err(db, &w->err, PAGEDB_NOMEM, "%s: sample %lld, field '%s': out of memory for %zu bytes", db->path,
                         id, f->name, n + tn);
  if (n) memcpy(v, data, n);
  memcpy(v + n, trailer, tn);
  rc = put_bytes(w, field, v, n + tn);
  pdb_free(v);
  return rc;
}

int writer_put_stored(pagedb_writer *w, int field, const void *data, size_t stored, uint64_t raw, int z,
                      uint64_t sum) {
  if (!w) return PAGEDB_MISUSE;
  int rc = check_field(w, field, 0, PAGEDB_BYTES);
  if (rc != PAGEDB_OK) return rc;
  pagedb *db = w->db;
  const char *name = db->fields[field].name;
  long long id = (long long)w->cur[0];
  /* What a writer of this field could have stored: compressed values only
  ** in a field with a codec, and only when they shrank (catalog.c,
  ** extent_of, refuses anything else when the dataset is opened). */
  int ok = z ? PAGEDB_CODEC_KIND(db->fields[field].codec) != PAGEDB_CODEC_NONE && stored > 0 && stored < raw
             : raw == stored;
  if (!ok || (stored > 0 && !data) || raw > PAGEDB_MAX_SAMPLE)
    return pdb_err(db, &w->err, PAGEDB_MISUSE, "%s: sample %lld, field '%s': %zu stored bytes (%s) cannot hold %llu"
                   " bytes", db->path, id, name, stored, z ? "compressed" : "as given", (unsigned long long)raw);
  if (stored > PAGEDB_MAX_SAMPLE - (w->pos - w->start))
    return pdb_err(db, &w->err, PAGEDB_TOOBIG, "%s: sample %lld, field '%s': %zu bytes would make the sample larger"
                   " than the %llu-byte limit", db->path, id, name, stored, (unsigned long long)PAGEDB_MAX_SAMPLE);
  if (db->fields[field].type == PAGEDB_TENSOR && !tensor_len_ok(&db->fields[field].tensor, raw))
    return pdb_err(db, &w->err, PAGEDB_MISMATCH, "%s: sample %lld, field '%s': a tensor value of %llu bytes does not fit"
                   " its declaration", db->path, id, name, (unsigned long long)raw);
  uint64_t got = pdb_sum(data, stored);
  if (got != sum)
    return pdb_err(db, &w->err, PAGEDB_CORRUPT, "%s: sample %lld, field '%s': checksum mismatch in the %zu stored"
                   " bytes given (recorded %016llx, bytes hash to %016llx)", db->path, id, name, stored,
                   (unsigned long long)sum, (unsigned long long)got);
  return append_value(w, field, data, stored, raw, z, &sum);
}

static int put_scalar(pagedb_writer *w, int field, int type, uint64_t bits) {
  if (!w) return PAGEDB_MISUSE;
  int rc = check_field(w, field, 1, type);
  if (rc != PAGEDB_OK) return rc;
  *slot_val(w->cur, w->db->nfield, field) = bits;
  slot_set(w->cur, field);
  return PAGEDB_OK;
}

int pagedb_put_int(pagedb_writer *w, int field, int64_t v) {
  return put_scalar(w, field, PAGEDB_INT, (uint64_t)v);
}

int pagedb_put_real(pagedb_writer *w, int field, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  return put_scalar(w, field, PAGEDB_REAL, bits);
}

/*
** Lay the current record out in schema order, if it was given otherwise.
** The values were placed in the order given, each aligned after the one
** before; in schema order the padding differs, and the record may grow.
*/
static int reorder(pagedb_writer *w) {
  int sorted = 1;
  for (int i = 1; i < w->nput; i++) sorted &= w->order[i - 1] < w->order[i];
  if (sorted) return PAGEDB_OK;
  pagedb *db = w->db;
  int nf = db->nfield;
  size_t len = w->pos - w->start, end = w->start;
  for (int f = 0; f < nf; f++)
    if (slot_has(w->cur, f) && db->isbytes[f]) end = pdb_align(end, db->isbytes[f]) + slot_stored(w->cur, nf, f);
  size_t want = end - w->start;
  if (want > len) {
    /* Room for the longer layout; a move keeps offsets modulo G. */
    int rc = make_room(w, want - len);
    if (rc != PAGEDB_OK) return rc;
  }
  uint8_t *tmp = pdb_malloc(want ? want : 1);
  if (!tmp)
    return pdb_err(db, &w->err, PAGEDB_NOMEM, "out of memory ending sample %lld of %s", (long long)w->cur[0], db->path);
  size_t out = w->start;        /* where field f goes, in the buffer */
  for (int f = 0; f < nf; f++) {
    if (!slot_has(w->cur, f) || !db->isbytes[f]) continue;
    size_t src = w->start;      /* where field f was put */
    for (int i = 0; w->order[i] != f; i++) {
      int g = w->order[i];
      src = pdb_align(src, db->isbytes[g]) + slot_stored(w->cur, nf, g);
    }
    src = pdb_align(src, db->isbytes[f]);
    size_t at = pdb_align(out, db->isbytes[f]), n = slot_stored(w->cur, nf, f);
    memset(tmp + (out - w->start), 0, at - out);
    memcpy(tmp + (at - w->start), w->buf + src, n);
    out = at + n;
  }
  assert(out - w->start == want);
  memcpy(w->buf + w->start, tmp, want);
  w->pos = w->start + want;
  pdb_free(tmp);
  return PAGEDB_OK;
}

/* Append the current slot to the page's records. */
static int keep_slot(pagedb_writer *w) {
  int nw = w->db->nw;
  uint32_t n = w->recs ? w->recs->d.nsamples : 0;
  if (!w->recs || n == w->caprec) {
    uint32_t cap = w->caprec ? w->caprec * 2 : 64;
    PageRecs *r = pdb_realloc(w->recs, sizeof *r + (size_t)cap * nw * sizeof(uint64_t));
    if (!r)
      return pdb_err(w->db, &w->err, PAGEDB_NOMEM, "out of memory ending sample %lld of %s", (long long)w->cur[0], w->db->path);
    if (!w->recs) memset(&r->d, 0, sizeof r->d);
    w->recs = r;
    w->caprec = cap;
  }
  memcpy(w->recs->slots + (size_t)n * nw, w->cur, (size_t)nw * sizeof(uint64_t));
  w->recs->d.nsamples = n + 1;
  return PAGEDB_OK;
}

int pagedb_sample_end(pagedb_writer *w, int64_t *id) {
  if (!w) return PAGEDB_MISUSE;
  int rc = usable(w);
  if (rc != PAGEDB_OK) return rc;
  if (!w->in_sample) return pdb_err(w->db, &w->err, PAGEDB_MISUSE, "%s: no sample begun", w->db->path);
  rc = reorder(w);
  if (rc == PAGEDB_OK) {
    w->cur[1] = w->start;     /* made absolute when the run is written */
    rc = keep_slot(w);
  }
  if (rc != PAGEDB_OK) return rc;   /* the sample stays open: cancel or retry */
  w->in_sample = 0;
  if (id) *id = (int64_t)w->cur[0];
  size_t ps = pager_page_size(w->db->pager);
  if (w->pos >= ps) {
    /* A full page or a multi-page sample: write it now. */
    rc = write_run(w, w->pos, 0, w->pos);
    w->pos = PDB_PAGE_HDR;
  } else if (w->async) {
    rc = land_own(w, 0);
  }
  return rc;
}

int pagedb_sample_cancel(pagedb_writer *w) {
  if (!w || !w->in_sample) return PAGEDB_OK;
  idx_release(w->db->idx, (int64_t)w->cur[0]);
  w->pos = w->start;
  w->in_sample = 0;
  return PAGEDB_OK;
}

int pagedb_writer_flush(pagedb_writer *w) {
  if (!w) return PAGEDB_MISUSE;
  int rc = usable(w);
  if (rc != PAGEDB_OK) return rc;
  if (w->in_sample) {
    if (w->start > PDB_PAGE_HDR) rc = write_before_current(w);
  } else if (w->recs && w->recs->d.nsamples > 0) {
    rc = write_run(w, w->pos, 0, w->pos);
    w->pos = PDB_PAGE_HDR;
  }
  return rc == PAGEDB_OK ? land_own(w, 1) : rc;
}

int api_writer_free(pagedb_writer *w, pdb_msg *out) {
  if (w->db->pid != getpid()) {
    /* A forked child's copy: nothing is written, nothing waited for (the
    ** parent's write in flight is the parent's). */
    w->failed = PAGEDB_MISUSE;
    w->fly = NULL;
  }
  pagedb_sample_cancel(w);
  int rc = w->failed ? w->failed : pagedb_writer_flush(w);
  /* Whatever happened, no write may stay in flight from a freed buffer. */
  int lrc = land_own(w, 1);
  if (rc == PAGEDB_OK) rc = lrc;
  if (atomic_load(&w->fly_rc)) {
    int frc = usable(w);    /* a failure a commit met, not yet reported */
    if (rc == PAGEDB_OK) rc = frc;
  }
  if (rc != PAGEDB_OK) {
    *out = w->err;
    out->rc = rc;
  }
  release_ids(w->db, w->recs);   /* only if the flush could not hand them over */
  pthread_mutex_destroy(&w->fly_mu);
  pdb_free(w->recs);
  pdb_buf_free(w->buf);
  pdb_buf_free(w->spare);
  pdb_buf_free(w->zbuf);
  codec_state_clear(w->zstate);
  pdb_free(w->zstate);
  pdb_free(w->cur);
  pdb_free(w);
  return rc;
}

int pagedb_writer_close(pagedb_writer *w) {
  if (!w) return PAGEDB_OK;
  pagedb *db = w->db;
  pthread_mutex_lock(&db->mu);
  for (pagedb_writer **pp = &db->writers; *pp; pp = &(*pp)->next) {
    if (*pp == w) {
      *pp = w->next;
      break;
    }
  }
  pthread_mutex_unlock(&db->mu);
  pdb_msg err = { 0 };
  int rc = api_writer_free(w, &err);
  if (rc != PAGEDB_OK) pdb_err_copy(db, NULL, &err);
  return rc;
}

const char *pagedb_writer_errmsg(pagedb_writer *w) {
  return w ? pdb_msg_text(&w->err) : "no writer";
}
