/*
** reader.c -- reading committed samples by id in O(1).
**
** THE READ CORRIDOR.  A zero-copy pagedb_read of a BYTES/TEXT field is:
**
**   pagedb_read     arguments checked; an order given to read ahead?  (no:
**                   one load, and read-ahead is out of the way)
**   find()          the one lookup: dx_find_memo() in the mapped NAME-index
**                   (dindex.c: the directory in force, the chunk's entry,
**                   the slot -- three loads -- then its id, checksum and
**                   extent checked); answered from the reader's memo when
**                   the same id was found last in the same snapshot (its
**                   bytes, then its label).  Only an open with no index
**                   file in force (a read-only open of a missing or damaged
**                   one, a VFS that cannot map) uses the in-memory index of
**                   index.c instead: the fallback, off this path otherwise.
**   api_extent()    offset and length from the slot: arithmetic
**   data map        the reader's copy of the map's address and length:
**                   pointer = base + offset, returned.  The pager is asked
**                   only when the extent lies past the map last seen (a
**                   commit grew it) or the VFS fills its map per read (a
**                   remote one).
**
** Counted by callgrind (tool/pagedb-readcost, doc/benchmarks.md): 3 calls
** a read (pagedb_read, read_one, dx_find_memo) and 321 instructions, where
** the corridor before went through 10 (pagedb_read, bytes_field, locate,
** idx_find, dx_find, verify, slot_sum, stored_bytes, pager_map_fill,
** pager_map) and 443; the in-memory index of the build before the index
** file took 8 and 291, without the slot's checks.  A read of an INT/REAL
** field is pagedb_read_int -> read_scalar -> dx_find_memo, and right after
** a read of the same sample's bytes the memo answers it.  A copy read
** replaces the last step by one pread into the reader's buffer
** (pager_read; pager_fetch on a file that needs aligned I/O).
**
** Read-ahead (prefetch.c) stands beside the corridor: a reader given an
** order tells it of each position (pf_read), and only copy reads of a
** direct or remote file are served from its windows; the kernel's
** read-ahead serves the others, and the bytes still come from the
** corridor.  Decompression and checksum verification (api_finish) follow
** it only for fields or readers that ask for them.
**
** Every extent was checked against the committed data when its slot was
** (dx_find) or when it was loaded (the in-memory index), so no size is
** trusted blindly here.  A damaged index entry is PAGEDB_CORRUPT_INDEX
** for every kind of read, never PAGEDB_NOTFOUND and never another sample.
*/
#include "api.h"
#include "dict.h"

#include <stdio.h>

/* A zero-copy reader's copy of the own map's address BASE and length LIM
** (pager_map_span's), unless the map is filled per read (then LIM stays 0:
** stored_bytes). */
static void own_map(pagedb_reader *r, const uint8_t *base, uint64_t lim) {
  if (base && !r->fill) {
    r->base = base;
    r->lim = lim;
  }
}

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
    ** the announcement or has already committed what we map (commit.c). */
    atomic_store(&db->want_map, 1);
    uint64_t end = atomic_load(&db->committed) * pager_page_size(db->pager);
    int rc = pager_map_ensure(db->pager, &db->err, end, 0);
    if (rc != PAGEDB_OK) return rc;
  }
  pagedb_reader *r = pdb_calloc(1, sizeof *r);
  if (!r) return pdb_err(db, &db->err, PAGEDB_NOMEM, "out of memory opening a reader of %s", db->path);
  r->db = db;
  r->mode = mode;
  r->verify = verify;
  /* (stored_bytes: LIM 0 sends every read to stored_slow; BASE + 0 is
  ** what a read of no bytes at address 0 gets.) */
  r->base = (const uint8_t *)"";
  if (mode == PAGEDB_READ_MMAP) {
    uint64_t lim = 0;
    const uint8_t *base = pager_map_span(db->pager, &lim);
    r->fill = pager_map_fills(db->pager);
    own_map(r, base, lim);
  }
  pthread_mutex_lock(&db->mu);
  /* The index in force, read under MU: the first commit of parts replaces
  ** it and switches the readers in the list under MU too. */
  atomic_init(&r->idx, db->idx);
  atomic_init(&r->dx, idx_disk(db->idx));
  r->next = db->readers;
  db->readers = r;
  pthread_mutex_unlock(&db->mu);
  *out = r;
  return PAGEDB_OK;
}

/* Why a lookup of ID found no slot S (NULL, or DX_BAD: a damaged entry). */
static int no_slot(pagedb_reader *r, int64_t id, const uint64_t *s) {
  pagedb *db = r->db;
  char why[PDB_MSG_MAX];
  int u = s == DX_BAD ? idx_unfetched(db->idx, id, why, sizeof why) : 0;
  if (u == 2)
    return pdb_err(db, &r->err, PAGEDB_CORRUPT_INDEX, "%s-index: the entry of sample %lld: %s", db->path, (long long)id,
                   why);
  if (u)
    return pdb_err(db, &r->err, PAGEDB_IOERR_REMOTE, "%s-index: cannot fetch the entry of sample %lld: %s",
                   db->path, (long long)id, why[0] ? why : "the server failed");
  if (s == DX_BAD)
    return pdb_err(db, &r->err, PAGEDB_CORRUPT_INDEX, "%s-index: the entry of sample %lld is damaged (checksum, id"
                   " or extent): run pagedb_check; delete the index file to have the next read-write open rebuild it",
                   db->path, (long long)id);
  return pdb_err(db, &r->err, PAGEDB_NOTFOUND, "%s: no committed sample with id %lld", db->path, (long long)id);
}

/* Why FIELD of sample ID (slot S, or NULL if FIELD is out of range) cannot be read. */
static int no_field(pagedb_reader *r, int64_t id, int field) {
  pagedb *db = r->db;
  if (field < 0 || field >= db->nfield)
    return pdb_err(db, &r->err, PAGEDB_RANGE, "%s: no field number %d (the dataset has %d)", db->path, field, db->nfield);
  return pdb_err(db, &r->err, PAGEDB_NOTFOUND, "%s: sample %lld has no value for field '%s'", db->path, (long long)id,
                 db->fields[field].name);
}

/* What to add to word 1 of slot S, found by find, for its record's address:
** a referenced chunk's slot is the part's own, read in place (R's memo says
** by how much: dx_find_memo); any other's word 1 is the address. */
static inline uint64_t slot_bias(const pagedb_reader *r, const uint64_t *s) {
  return s == r->memo.slot ? r->memo.bias : 0;
}

/* The one lookup of a read: the slot of sample ID, which must have a value
** for FIELD (in range: the callers checked its type).  Its word 0 may not
** be ID, and its word 1 is an address less slot_bias. */
static inline int find(pagedb_reader *r, int64_t id, int field, const uint64_t **slot) {
  /* (Acquire: a Dx put in force under the reader is published whole.) */
  const Dx *dx = atomic_load_explicit(&r->dx, memory_order_acquire);
  const uint64_t *s = dx ? dx_find_memo(dx, id, &r->memo) : idx_find(atomic_load_explicit(&r->idx, memory_order_relaxed), id);
  if (NEVER(!s || s == DX_BAD)) return no_slot(r, id, s);
  if (NEVER(!slot_has(s, field))) return no_field(r, id, field);
  *slot = s;
  return PAGEDB_OK;
}

/* A field number that is not a BYTES/TEXT field of the dataset. */
static int not_bytes(pagedb_reader *r, int field) {
  pagedb *db = r->db;
  if (field < 0 || field >= db->nfield) return no_field(r, -1, field);
  return pdb_err(db, &r->err, PAGEDB_MISMATCH, "%s: field '%s' is a scalar: use pagedb_read_%s", db->path,
                 db->fields[field].name, db->fields[field].type == PAGEDB_INT ? "int" : "real");
}

/* The extent of BYTES/TEXT field FIELD of sample ID, and its slot.  Inlined
** into the corridor: a call with its results through the stack cost 37
** instructions a read (doc/benchmarks.md). */
static inline __attribute__((always_inline)) int bytes_field(pagedb_reader *r, int64_t id, int field, uint64_t *off,
                                                             uint64_t *len, const uint64_t **slot) {
  pagedb *db = r->db;
  if (NEVER((unsigned)field >= (unsigned)db->nfield || !api_is_bytes(db, field))) return not_bytes(r, field);
  int rc = find(r, id, field, slot);
  if (LIKELY(rc == PAGEDB_OK)) {
    /* (slot_bias: the slot just found is the memo's, whose bias is 0 when
    ** the reader has no index file and so no memo.) */
    api_extent(db, *slot, field, off, len);
    *off += r->memo.bias;
  }
  return rc;
}

/* Room for N bytes in R's copy buffer (its contents are dropped). */
static int room(pagedb_reader *r, size_t n) {
  if (n <= r->cap && r->buf) return PAGEDB_OK;
  size_t cap;
  uint8_t *b = pdb_buf_alloc(n, &cap);
  if (!b) return pdb_err(r->db, &r->err, PAGEDB_NOMEM, "out of memory reading %zu bytes of %s", n, r->db->path);
  pdb_buf_free(r->buf);
  r->buf = b;
  r->cap = cap;
  return PAGEDB_OK;
}

/* stored_bytes when the map last seen does not cover the extent or must
** be filled, and in copy mode. */
static int stored_slow(pagedb_reader *r, uint64_t off, uint64_t len, const uint8_t **src) {
  Pager *p = r->db->pager;
  int rc = PAGEDB_OK;
  /* An address in a part's window (doc/format.md, "Parts"): the part's
  ** own map or file, opened on first touch. */
  if (off >= PDB_MAX_DATA) {
    rc = parts_stored(r->db, &r->err, r->mode == PAGEDB_READ_MMAP, off, len, &r->buf, &r->cap, src);
    /* The entries are made at the first touch of a part, and kept until the
    ** close; a copy-mode reader never reads them. */
    if (r->mode == PAGEDB_READ_MMAP) r->pent = parts_entries(r->db);
    return rc;
  }
  if (r->mode == PAGEDB_READ_MMAP) {
    if (len > 0 && r->fill) rc = pager_map_fill(p, &r->err, 1, &off, &len);
    uint64_t lim = 0;
    const uint8_t *base = pager_map_span(p, &lim);
    assert(base && off + len <= lim);   /* commits map what they commit (commit.c) */
    own_map(r, base, lim);
    *src = base + off;
    return rc;
  }
  *src = (const uint8_t *)"";
  if (len == 0) return PAGEDB_OK;
  if (pager_align(p) > 1) return pager_fetch(p, &r->err, off, (size_t)len, &r->buf, &r->cap, src);
  if ((rc = room(r, (size_t)len)) == PAGEDB_OK && (rc = pager_read(p, &r->err, off, r->buf, (size_t)len)) == PAGEDB_OK)
    *src = r->buf;
  return rc;
}

/* The stored bytes of an extent: in the map, or fetched into R's buffer.
** A zero-copy read of the own map is one compare and one add, and of a part
** mapped whole one load more (parts_mapped; an own address past the map
** finds no part).  A copy-mode reader's LIM is 0 and its entries of parts
** NULL, as a zero-copy one's LIM is when the VFS fills its map per read:
** both then go by stored_slow (but for a read of no bytes at address 0,
** which gets the "" stored_slow would give). */
static inline int stored_bytes(pagedb_reader *r, uint64_t off, uint64_t len, const uint8_t **src) {
  if (LIKELY(off + len <= r->lim)) {
    *src = r->base + off;
    return PAGEDB_OK;
  }
  if (parts_mapped(r->pent, off, len, src)) return PAGEDB_OK;
  return stored_slow(r, off, len, src);
}

static int finish_one(pagedb_reader *r, int64_t id, int field, const uint64_t *s, const void **data, size_t *n);

/* The corridor: lookup, extent, pointer (or copy), then api_finish's work
** if the field or the reader asks for it. */
static inline __attribute__((always_inline)) int read_one(pagedb_reader *r, int64_t id, int field, const void **data, size_t *n) {
  const uint8_t *src;
  const uint64_t *s = NULL;
  uint64_t off = 0, len = 0;
  int rc = bytes_field(r, id, field, &off, &len, &s);
  if (LIKELY(rc == PAGEDB_OK)) rc = stored_bytes(r, off, len, &src);
  if (NEVER(rc != PAGEDB_OK)) return rc;
  const void *d = src;
  size_t dn = (size_t)len;
  if (api_must_finish(r, field) && (rc = finish_one(r, id, field, s, &d, &dn)) != PAGEDB_OK) return rc;
  *data = d;
  *n = dn;
  return PAGEDB_OK;
}

/* A read of a reader given an order: read-ahead is told of the position,
** and serves it from a window if it has one (copy reads of a direct or
** remote file); else the corridor reads it. */
static __attribute__((noinline)) int read_ahead(pagedb_reader *r, int64_t id, int field, const void **data, size_t *n) {
  if (!pf_read(r, id, field, data, n)) return read_one(r, id, field, data, n);
  int rc = api_must_finish(r, field) ? finish_one(r, id, field, NULL, data, n) : PAGEDB_OK;
  if (rc != PAGEDB_OK) {
    *data = NULL;
    *n = 0;
  }
  return rc;
}

int pagedb_read(pagedb_reader *r, int64_t id, int field, const void **data, size_t *n) {
  if (NEVER(!r || !data || !n)) return PAGEDB_MISUSE;
  *data = NULL;
  *n = 0;
  if (r->pf.ids) return read_ahead(r, id, field, data, n);
  return read_one(r, id, field, data, n);
}

/*
** The stored bytes SRC (LEN at data address OFF) of a value failed their
** checksum WANT.  If they come from a file whose bytes others may have
** written (PAGEDB_IOCAP_UNTRUSTED: a shared chunk cache, where a member
** able to read the dataset can seal chunks of wrong bytes), they are
** fetched again from the server (pager_refetch: the shared copy replaced,
** counted as chunk_forged if it differed) and *GOT is their sum now;
** *AGAIN says they were.  Once per read: the server's bytes failing too
** is a real corruption, never a loop.
**
** Pointers handed out earlier stay valid: the VFS writes the server's
** bytes over its copies in place (a map's chunk, a held chunk), at the
** same addresses, and a value that verified keeps its bytes.  So SRC, in
** a map or a held chunk, shows the new bytes already; a copy made in a
** buffer of R's (copy mode) is made again, into the same place.
*/
static int refetch(pagedb_reader *r, uint64_t off, uint64_t len, const uint8_t *src, uint64_t want, uint64_t *got,
                   int *again) {
  Pager *p = NULL;
  uint64_t rel = 0;
  int rc = parts_pager_at(r->db, &r->err, off, len, &p, &rel);
  if (rc != PAGEDB_OK) return rc;
  /* P (a part's file) stays pinned against the bound until the end. */
  if (!pager_untrusted(p) || (rc = pager_refetch(p, &r->err, rel, len)) != PAGEDB_OK) goto done;
  *again = 1;
  if ((*got = pdb_sum(src, len)) == want || r->mode == PAGEDB_READ_MMAP) goto done;
  uint8_t *buf = NULL;
  size_t cap = 0;
  const uint8_t *fresh;
  if ((rc = pager_fetch(p, &r->err, rel, (size_t)len, &buf, &cap, &fresh)) == PAGEDB_OK
      && (*got = pdb_sum(fresh, len)) == want)
    memcpy((uint8_t *)src, fresh, len);   /* R's own buffer: a held chunk was corrected in place */
  pdb_buf_free(buf);
done:
  parts_pager_done(r->db, off);
  return rc;
}

/* Check the stored bytes SRC of field F of sample ID (slot S) against their
** checksum: PAGEDB_OK or PAGEDB_CORRUPT (or a refetch's failure). */
static int verify(pagedb_reader *r, int64_t id, int f, const uint64_t *s, const uint8_t *src) {
  const uint64_t *x = slot_cext(s, r->db->nfield, f);
  uint64_t len = x[0] & ~SLOT_Z, got = pdb_sum(src, len);
  if (LIKELY(got == x[1])) return PAGEDB_OK;
  uint64_t off, l;
  api_extent(r->db, s, f, &off, &l);
  off += slot_bias(r, s);
  int again = 0, rc = PAGEDB_OK;
  if (atomic_load_explicit(&r->db->untrusted, memory_order_relaxed)) {
    rc = refetch(r, off, len, src, x[1], &got, &again);
    if (rc != PAGEDB_OK || got == x[1]) return rc;
  }
  return pdb_err(r->db, &r->err, PAGEDB_CORRUPT,
                 "%s: sample %lld, field '%s': checksum mismatch (%llu bytes at data offset %llu, page %llu: stored"
                 " %016llx, read %016llx%s)", r->db->path, (long long)id, r->db->fields[f].name,
                 (unsigned long long)len, (unsigned long long)off,
                 (unsigned long long)(off / pager_page_size(r->db->pager)), (unsigned long long)x[1],
                 (unsigned long long)got, again ? ", fetched again from the server" : "");
}

/* Decompress the stored bytes SRC of field F of sample ID (slot S) into DST,
** which has room for its raw length. */
static int inflate(pagedb_reader *r, int64_t id, int f, const uint64_t *s, const uint8_t *src, uint8_t *dst) {
  const uint64_t *x = slot_cext(s, r->db->nfield, f);
  uint64_t raw = slot_get(s, r->db->nfield, f), len = x[0] & ~SLOT_Z;
  int codec = r->db->fields[f].codec;
  const void *dict = NULL;
  if (codec_uses_dict(codec)) {
    int rc = dict_for_read(r->db, &r->err, id, f, src, len, &dict);
    if (rc != PAGEDB_OK) return rc;
  }
  if (codec_decompress(codec, dict, src, len, dst, raw)) return PAGEDB_OK;
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

/* The slot of sample ID again, after its bytes were read (a delete may
** have committed since it was found): PAGEDB_OK, or the error, set. */
static int still_there(pagedb_reader *r, int64_t id, int field, const uint64_t **slot) {
  const uint64_t *s = api_find(r, id);
  if (s && s != DX_BAD && slot_has(s, field)) {
    *slot = s;
    return PAGEDB_OK;
  }
  if (s == DX_BAD) return no_slot(r, id, s);
  return pdb_err(r->db, &r->err, PAGEDB_NOTFOUND, "%s: sample %lld was deleted while it was read", r->db->path,
                 (long long)id);
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
  int rc = api_verifies(r) ? verify(r, id, f, s, *data) : PAGEDB_OK;
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
  int rc = s ? PAGEDB_OK : still_there(r, id, field, &s);
  if (rc != PAGEDB_OK) return rc;
  rc = zroom(r, zraw(r->db, s, field));
  return rc == PAGEDB_OK ? finish_value(r, id, field, s, r->zbuf, data, n) : rc;
}

int api_finish(pagedb_reader *r, const int64_t *ids, int n, int field, const void **data, size_t *sizes) {
  pagedb *db = r->db;
  /* One buffer for every value the call decompresses: all the pointers a
  ** batch returns stay valid together. */
  uint64_t need = 0;
  for (int i = 0; i < n; i++) {
    const uint64_t *s = api_find(r, ids[i]);
    if (s && s != DX_BAD) need += pdb_align(zraw(db, s, field), PAGEDB_MAX_ALIGN);
  }
  int rc = zroom(r, need);
  uint8_t *out = r->zbuf;
  for (int i = 0; i < n && rc == PAGEDB_OK; i++) {
    const uint64_t *s;
    if ((rc = still_there(r, ids[i], field, &s)) != PAGEDB_OK) return rc;
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
  uint64_t off = 0, len = 0;   /* set by bytes_field; zeroed for the compiler's flow analysis */
  const uint64_t *s = NULL;
  int rc = bytes_field(r, id, field, &off, &len, &s);
  if (rc != PAGEDB_OK) return rc;
  uint64_t raw = slot_get(s, r->db->nfield, field);
  int z = (slot_cext(s, r->db->nfield, field)[0] & SLOT_Z) != 0;
  *n = raw;
  if (raw > cap)
    return pdb_err(r->db, &r->err, PAGEDB_TOOBIG, "%s: sample %lld, field '%s' has %llu bytes; the buffer holds %zu",
                       r->db->path, (long long)id, r->db->fields[field].name, (unsigned long long)raw, cap);
  Pager *p = r->db->pager;
  if (!z && !api_verifies(r) && r->mode == PAGEDB_READ_COPY && pager_align(p) == 1 && off < PDB_MAX_DATA)
    return len ? pager_read(p, &r->err, off, buf, len) : PAGEDB_OK;   /* straight into BUF */
  const uint8_t *src;
  rc = stored_bytes(r, off, len, &src);
  if (rc == PAGEDB_OK && api_verifies(r)) rc = verify(r, id, field, s, src);
  if (rc == PAGEDB_OK && z) rc = inflate(r, id, field, s, src, buf);
  else if (rc == PAGEDB_OK && len) memcpy(buf, src, len);
  return rc;
}

static int read_scalar(pagedb_reader *r, int64_t id, int field, int type, uint64_t *bits) {
  pagedb *db = r->db;
  if (NEVER((unsigned)field >= (unsigned)db->nfield || db->fields[field].type != type)) {
    if (field < 0 || field >= db->nfield) return no_field(r, id, field);
    return pdb_err(db, &r->err, PAGEDB_MISMATCH, "%s: field '%s' is not %s", db->path, db->fields[field].name,
                   type == PAGEDB_INT ? "an INT" : "a REAL");
  }
  const uint64_t *s = NULL;
  int rc = find(r, id, field, &s);
  if (LIKELY(rc == PAGEDB_OK)) *bits = slot_get(s, db->nfield, field);
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

/*
** A batch some of whose extents lie in parts' windows: each extent read
** as a single read reads it, the own file's through the pager, a part's
** through its data file.  Zero-copy pointers stay valid together (every
** map lives until pagedb_close); copies go one after the other into one
** buffer of R's, each at a multiple of 64.  *GOOD: the entries set.
*/
static int batch_parts(pagedb_reader *r, int n, const uint64_t *off, const uint64_t *len, const void **data,
                       size_t *sizes, int *good) {
  int rc = PAGEDB_OK, i;
  if (r->mode == PAGEDB_READ_MMAP) {
    for (i = 0; i < n && rc == PAGEDB_OK; i++) {
      const uint8_t *src;
      rc = stored_bytes(r, off[i], len[i], &src);
      if (rc == PAGEDB_OK) data[i] = src, sizes[i] = (size_t)len[i];
    }
    *good = rc == PAGEDB_OK ? n : i - 1;
    return rc;
  }
  uint64_t need = 0;
  for (i = 0; i < n; i++) need += pdb_align(len[i], PAGEDB_MAX_ALIGN);
  if (need > r->bcap) {
    size_t cap;
    uint8_t *b = pdb_buf_alloc((size_t)need, &cap);
    if (!b) return pdb_err(r->db, &r->err, PAGEDB_NOMEM, "out of memory reading a batch of %d samples", n);
    pdb_buf_free(r->bbuf);
    r->bbuf = b;
    r->bcap = cap;
  }
  uint64_t at = 0;
  for (i = 0; i < n && rc == PAGEDB_OK; i++) {
    const uint8_t *src = (const uint8_t *)"";
    if (len[i]) rc = api_fetch(r->db, &r->err, off[i], (size_t)len[i], &r->buf, &r->cap, &src);
    if (rc != PAGEDB_OK) break;
    if (len[i]) memcpy(r->bbuf + at, src, len[i]);
    data[i] = r->bbuf ? r->bbuf + at : (const uint8_t *)"";
    sizes[i] = (size_t)len[i];
    at += pdb_align(len[i], PAGEDB_MAX_ALIGN);
  }
  *good = i;
  return rc;
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
  const uint64_t *s = NULL;
  for (i = 0; i < n && rc == PAGEDB_OK; i++) rc = bytes_field(r, ids[i], field, &off[i], &len[i], &s);
  int good = rc == PAGEDB_OK ? n : i - 1;     /* extents found before a failure */
  int inparts = 0;
  for (i = 0; i < good && !inparts; i++) inparts = off[i] >= PDB_MAX_DATA;
  if (inparts) {
    int prc = batch_parts(r, good, off, len, data, sizes, &good);
    if (rc == PAGEDB_OK) rc = prc;
  } else if (r->mode == PAGEDB_READ_MMAP && good > 0 && (rc2 = pager_map_fill(r->db->pager, &r->err, good, off, len))) {
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
  Dx *dx = atomic_load_explicit(&r->dx, memory_order_acquire);
  if (dx) dx_advise(dx, pager_madv(hint));   /* the slots are read in the same order */
  return pager_advise(r->db->pager, &r->err, hint, end);
}

void api_reader_free(pagedb_reader *r) {
  pf_free(r);
  pdb_free(r->scratch);
  pdb_buf_free(r->buf);
  pdb_buf_free(r->bbuf);
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

/* ---- tensor fields ------------------------------------------------------------- */

/* FIELD of DB must be a tensor field: PAGEDB_OK, or the error recorded in M. */
static int tensor_field(pagedb *db, pdb_msg *m, int field) {
  if (field < 0 || field >= db->nfield)
    return pdb_err(db, m, PAGEDB_RANGE, "%s: no field number %d (the dataset has %d)", db->path, field, db->nfield);
  if (db->fields[field].type != PAGEDB_TENSOR)
    return pdb_err(db, m, PAGEDB_MISMATCH, "%s: field '%s' is not a tensor field", db->path, db->fields[field].name);
  return PAGEDB_OK;
}

/* The shape of sample ID's raw value V of N bytes of tensor field FIELD
** (ID -1: not known); PAGEDB_CORRUPT naming the sample and the field when
** it does not fit the declaration. */
static int value_shape(pagedb *db, pdb_msg *m, int64_t id, int field, const void *v, size_t n, size_t *nbytes,
                       int *ndim, int64_t *shape) {
  const CatField *f = &db->fields[field];
  uint64_t nb;
  char why[160], decl[TENSOR_TEXT_MAX], who[40] = "a value";
  if (tensor_value_shape(&f->tensor, v, n, shape, &nb, why, sizeof why) != 0) {
    tensor_format(&f->tensor, decl);
    if (id >= 0) snprintf(who, sizeof who, "sample %lld", (long long)id);
    return pdb_err(db, m, PAGEDB_CORRUPT, "%s: %s, field '%s' (%s): %s", db->path, who, f->name, decl, why);
  }
  if (nbytes) *nbytes = (size_t)nb;
  if (ndim) *ndim = f->tensor.ndim;
  return PAGEDB_OK;
}

int pagedb_read_tensor(pagedb_reader *r, int64_t id, int field, const void **data, size_t *nbytes, int *ndim,
                       int64_t *shape) {
  if (!r || !data || !shape) return PAGEDB_MISUSE;
  int rc = tensor_field(r->db, &r->err, field);
  size_t n = 0;
  if (rc == PAGEDB_OK) rc = pagedb_read(r, id, field, data, &n);
  size_t nb = 0;
  if (rc == PAGEDB_OK) rc = value_shape(r->db, &r->err, id, field, *data, n, &nb, ndim, shape);
  /* No elements: a pointer aligned for any dtype (a copy-mode read of 0
  ** bytes points anywhere in R's buffer), so that a view is aligned. */
  static _Alignas(PAGEDB_MAX_ALIGN) const uint8_t kNone[PAGEDB_MAX_ALIGN];
  if (rc == PAGEDB_OK && nb == 0) *data = kNone;
  if (nbytes) *nbytes = nb;
  return rc;
}

int pagedb_read_tensor_into(pagedb_reader *r, int64_t id, int field, void *buf, size_t cap, size_t *nbytes,
                            int *ndim, int64_t *shape) {
  if (!r || !nbytes || !shape) return PAGEDB_MISUSE;
  int rc = tensor_field(r->db, &r->err, field);
  if (rc == PAGEDB_OK) rc = pagedb_read_into(r, id, field, buf, cap, nbytes);
  if (rc == PAGEDB_OK) rc = value_shape(r->db, &r->err, id, field, buf, *nbytes, nbytes, ndim, shape);
  return rc;
}

int pagedb_tensor_shape(pagedb *db, int field, const void *value, size_t n, size_t *nbytes, int *ndim,
                        int64_t *shape) {
  if (!db || !shape || (!value && n)) return PAGEDB_MISUSE;
  /* Readers of many threads call this on one handle: the message goes only
  ** to the calling thread's slot (pagedb_errmsg), not to a shared buffer. */
  int rc = tensor_field(db, NULL, field);
  return rc == PAGEDB_OK ? value_shape(db, NULL, -1, field, value, n, nbytes, ndim, shape) : rc;
}
