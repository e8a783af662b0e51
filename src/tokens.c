/*
** tokens.c -- token streams: fixed-length blocks cut from the documents of
** a 1-D integer tensor field laid end to end (doc/format.md, "Token maps";
** pagedb.h, pagedb_tokens_open).
**
** A language model trains on blocks of B + 1 consecutive tokens (the input
** and its target shifted by one) of one long stream: the documents in an
** order, concatenated.  A pagedb_tokens is that stream for one epoch: the
** documents in the order pagedb_order gives for (KIND, SEED, EPOCH) -- a
** permutation of documents per epoch -- and the TOKEN MAP, the prefix sums
** of their lengths.  Block b is tokens bB .. bB + B of the stream: it owns
** its first B (its input), and its last is the first of block b + 1.  It
** is found by one binary search of the map, O(log documents), then one
** read of each document it touches, through the reader's own corridor
** (pagedb_read: the index's checks, decompression, verification).
**
** Why the map is built here and not stored in the index file: an epoch
** permutes the documents, and the prefix sums of a permuted order are the
** epoch's, O(documents) to compute whatever is stored; the lengths they
** sum are already in the index (the raw length, slot word 3 + f, checked
** with the slot), read in one pass over the order.  A stored map would save
** that pass and cost a commit step, a file format and a crash case.
**
** INVARIANTS of a pagedb_tokens made by pagedb_tokens_open:
**   1. ids[0..ndoc) are distinct committed samples that, when it was made,
**      had a value of at least one element for FIELD; ends[k] is the sum
**      of the elements of documents 0..k: strictly increasing, ends[ndoc-1]
**      == total <= INT64_MAX.
**   2. nblocks == (total - 1) / B when total > 0 (every block has B + 1
**      tokens), else 0.  The last (total - 1) mod B tokens are the TAIL:
**      in no block's input this epoch (a different tail each epoch of a
**      shuffled order).
**   3. Nothing in it changes after the open, and nothing in it points into
**      a map: a view a read hands out is the reader's (pagedb_read's
**      lifetime).  So threads share T, each reading through its own
**      reader, and closing T frees only memory.
** A document changed or deleted after the open no longer matches the map:
** its read fails (PAGEDB_NOTFOUND, or PAGEDB_CORRUPT for another length),
** never returns other tokens.
*/
#include "api.h"

#include <stdio.h>

struct pagedb_tokens {
  pagedb *db;
  int field;
  int esize;                /* bytes per token */
  int kind;                 /* PAGEDB_ORDER_*, without DROP_LAST */
  uint64_t seed, epoch;
  uint64_t B;               /* block size: a block has B + 1 tokens */
  uint64_t ndoc;
  int64_t *ids;             /* the documents in the epoch's order */
  uint64_t *ends;           /* the token map: invariant 1 */
  uint64_t total;           /* tokens in the stream */
  uint64_t nblocks;
};

#define TOK_BLOCK_MAX ((int64_t)1 << 30)

static int is_token_field(const CatField *f) {
  return f->type == PAGEDB_TENSOR && f->tensor.ndim == 1 && f->tensor.nvar == 1 &&
         f->tensor.dtype >= PAGEDB_DT_INT8 && f->tensor.dtype <= PAGEDB_DT_UINT64;
}

void pagedb_tokens_close(pagedb_tokens *t) {
  if (!t) return;
  pdb_free(t->ids);
  pdb_free(t->ends);
  pdb_free(t);
}

/* Put document ID (slot S) into T's map; 0 elements: left out. */
static int add_doc(pagedb_tokens *t, pdb_msg *m, int64_t id, const uint64_t *s) {
  pagedb *db = t->db;
  const CatField *f = &db->fields[t->field];
  if (!s && idx_damaged(db->idx, id)) s = DX_BAD;
  if (s == DX_BAD)
    return pdb_err(db, m, PAGEDB_CORRUPT_INDEX, "%s: token stream of '%s': the index entry of sample %lld is damaged",
                   db->path, f->name, (long long)id);
  if (!s || !slot_has(s, t->field)) return PAGEDB_OK;   /* deleted meanwhile, or no value */
  uint64_t raw = slot_get(s, db->nfield, t->field);
  if (raw % (uint64_t)t->esize != 0 || raw > PAGEDB_MAX_SAMPLE)
    return pdb_err(db, m, PAGEDB_CORRUPT, "%s: token stream of '%s': sample %lld has %llu bytes, not a whole number "
                   "of %d-byte tokens", db->path, f->name, (long long)id, (unsigned long long)raw, t->esize);
  uint64_t n = raw / (uint64_t)t->esize;
  if (n == 0) return PAGEDB_OK;
  if (t->total > (uint64_t)INT64_MAX - n)
    return pdb_err(db, m, PAGEDB_TOOBIG, "%s: token stream of '%s': more than 2^63-1 tokens", db->path, f->name);
  t->total += n;
  t->ids[t->ndoc] = id;
  t->ends[t->ndoc++] = t->total;
  return PAGEDB_OK;
}

int pagedb_tokens_open(pagedb *db, int field, int kind, uint64_t seed, uint64_t epoch, int64_t block_size,
                       pagedb_tokens **out) {
  if (!out) return PAGEDB_MISUSE;
  *out = NULL;
  if (!db) return PAGEDB_MISUSE;
  if (db->failed) return pdb_err(db, &db->err, PAGEDB_MISUSE, "the handle's open failed; only close it");
  if (field < 0 || field >= db->nfield)
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: no field number %d (the dataset has %d)", db->path, field,
                   db->nfield);
  const CatField *f = &db->fields[field];
  if (!is_token_field(f)) {
    char decl[TENSOR_TEXT_MAX] = "";
    if (f->type == PAGEDB_TENSOR) tensor_format(&f->tensor, decl);
    return pdb_err(db, &db->err, PAGEDB_MISMATCH,
                   "%s: field '%s' (%s) is not a token field: a token stream needs a tensor field of one variable "
                   "dimension and an integer dtype (tensor:uint16:*, tensor:uint32:*...)", db->path, f->name,
                   f->type == PAGEDB_TENSOR ? decl : "not a tensor");
  }
  if (kind != PAGEDB_ORDER_SEQUENTIAL && kind != PAGEDB_ORDER_RANDOM && kind != PAGEDB_ORDER_QUASI_RANDOM)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: pagedb_tokens_open: unknown kind %d (PAGEDB_ORDER_SEQUENTIAL, "
                   "_RANDOM or _QUASI_RANDOM)", db->path, kind);
  if (block_size < 1 || block_size > TOK_BLOCK_MAX)
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: pagedb_tokens_open: block size %lld is out of range (1 to 2^30)",
                   db->path, (long long)block_size);

  /* The epoch's document order: every committed sample, as pagedb_order
  ** gives it to one rank of one. */
  int64_t n = 0, want;
  int rc = pagedb_order(db, kind, seed, epoch, 0, 1, NULL, &n);
  pagedb_tokens *t = pdb_malloc(sizeof *t);
  if (t) memset(t, 0, sizeof *t);
  else rc = PAGEDB_NOMEM;
  /* A commit between the two calls may grow the order: ask again. */
  while (rc == PAGEDB_OK) {
    pdb_free(t->ids);
    pdb_free(t->ends);
    t->ids = pdb_malloc((size_t)(n ? n : 1) * sizeof *t->ids);
    t->ends = pdb_malloc((size_t)(n ? n : 1) * sizeof *t->ends);
    if (!t->ids || !t->ends) {
      rc = PAGEDB_NOMEM;
      break;
    }
    want = n;
    rc = pagedb_order(db, kind, seed, epoch, 0, 1, t->ids, &n);
    if (rc == PAGEDB_OK || n <= want) break;
    rc = PAGEDB_OK;
  }
  if (rc != PAGEDB_OK) {
    pagedb_tokens_close(t);
    char why[400];
    snprintf(why, sizeof why, "%s", rc == PAGEDB_NOMEM ? "out of memory for the token map" : pagedb_errmsg(db));
    return pdb_err(db, &db->err, rc, "%s: token stream of '%s': %s", db->path, f->name, why);
  }
  t->db = db;
  t->field = field;
  t->esize = f->tensor.esize;
  t->kind = kind;
  t->seed = seed;
  t->epoch = epoch;
  t->B = (uint64_t)block_size;
  /* The order is read into IDS and compacted in place: entry k is written
  ** only after entry k has been read. */
  for (int64_t i = 0; i < n && rc == PAGEDB_OK; i++) {
    int64_t id = t->ids[i];
    rc = add_doc(t, &db->err, id, idx_find(db->idx, id));
  }
  if (rc != PAGEDB_OK) {
    pagedb_tokens_close(t);
    return rc;
  }
  t->nblocks = t->total ? (t->total - 1) / t->B : 0;
  *out = t;
  return PAGEDB_OK;
}

int64_t pagedb_tokens_blocks(const pagedb_tokens *t) { return t ? (int64_t)t->nblocks : 0; }
int64_t pagedb_tokens_total(const pagedb_tokens *t) { return t ? (int64_t)t->total : 0; }
int64_t pagedb_tokens_documents(const pagedb_tokens *t) { return t ? (int64_t)t->ndoc : 0; }

/* The document that holds token POS of the stream: the first whose end is
** past it (POS < total). */
static uint64_t doc_of(const pagedb_tokens *t, uint64_t pos) {
  uint64_t lo = 0, hi = t->ndoc - 1;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (t->ends[mid] > pos) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Document K's tokens, read through the reader: *P and its *N tokens, which
** must be the map's count (invariant 1's closing note). */
static int read_doc(const pagedb_tokens *t, pagedb_reader *r, uint64_t k, const uint8_t **p, uint64_t *n) {
  pagedb *db = t->db;
  const void *data;
  size_t nb;
  int rc = pagedb_read(r, t->ids[k], t->field, &data, &nb);
  if (rc != PAGEDB_OK) return rc;   /* the reader's message names the sample */
  uint64_t want = t->ends[k] - (k ? t->ends[k - 1] : 0);
  if (nb != want * (uint64_t)t->esize)
    return pdb_err(db, &r->err, PAGEDB_CORRUPT, "%s: token stream of '%s': sample %lld has %zu bytes, the token "
                   "map %llu tokens of %d bytes (changed since the stream was opened?)", db->path,
                   db->fields[t->field].name, (long long)t->ids[k], nb, (unsigned long long)want, t->esize);
  *p = data;
  *n = want;
  return PAGEDB_OK;
}

int pagedb_tokens_block(const pagedb_tokens *t, pagedb_reader *r, int64_t b, void *buf, const void **data) {
  if (!t || !r || !data) return PAGEDB_MISUSE;
  *data = NULL;
  if (r->db != t->db) return PAGEDB_MISUSE;
  if (b < 0 || (uint64_t)b >= t->nblocks)
    return pdb_err(t->db, &r->err, PAGEDB_RANGE, "%s: token stream of '%s': no block %lld (this epoch has %llu "
                   "of %llu tokens)", t->db->path, t->db->fields[t->field].name, (long long)b,
                   (unsigned long long)t->nblocks, (unsigned long long)t->B);
  uint64_t pos = (uint64_t)b * t->B, want = t->B + 1;
  uint64_t k = doc_of(t, pos);
  uint64_t off = pos - (k ? t->ends[k - 1] : 0);
  const uint8_t *p;
  uint64_t n;
  int rc = read_doc(t, r, k, &p, &n);
  if (rc != PAGEDB_OK) return rc;
  size_t es = (size_t)t->esize;
  if (off + want <= n) {
    *data = p + off * es;   /* inside one document: the reader's pointer */
    return PAGEDB_OK;
  }
  if (!buf)
    return pdb_err(t->db, &r->err, PAGEDB_MISUSE, "%s: token stream: block %lld spans documents and BUF is NULL",
                   t->db->path, (long long)b);
  /* Spanning documents: each piece is copied out before the next read,
  ** which may reuse the reader's buffer.  Invariant 2: the stream holds
  ** every token asked for. */
  uint8_t *dst = buf;
  for (uint64_t got = 0;;) {
    uint64_t take = n - off < want - got ? n - off : want - got;
    memcpy(dst + got * es, p + off * es, (size_t)take * es);
    got += take;
    if (got == want) break;
    assert(k + 1 < t->ndoc);
    off = 0;
    rc = read_doc(t, r, ++k, &p, &n);
    if (rc != PAGEDB_OK) return rc;
  }
  *data = buf;
  return PAGEDB_OK;
}

int pagedb_tokens_order(const pagedb_tokens *t, int rank, int world, int64_t *blocks, int64_t *n) {
  if (!t || !n) return PAGEDB_MISUSE;
  pagedb *db = t->db;
  if (world < 1 || world > (1 << 20) || rank < 0 || rank >= world)
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: pagedb_tokens_order: rank %d of world %d is out of range "
                   "(world 1 to 2^20, rank 0 to world - 1)", db->path, rank, world);
  uint64_t len = t->nblocks / (uint64_t)world;
  if (!blocks) {
    *n = (int64_t)len;
    return PAGEDB_OK;
  }
  if (*n < 0 || (uint64_t)*n < len) {
    long long have = (long long)*n;
    *n = (int64_t)len;
    return pdb_err(db, &db->err, PAGEDB_MISUSE, "%s: pagedb_tokens_order: the array has %lld entries, rank %d of "
                   "%d needs %llu", db->path, have, rank, world, (unsigned long long)len);
  }
  if (t->kind != PAGEDB_ORDER_RANDOM) {
    for (uint64_t i = 0; i < len; i++) blocks[i] = (int64_t)((uint64_t)rank * len + i);
  } else {
    uint64_t *g = pdb_malloc((t->nblocks ? t->nblocks : 1) * sizeof *g);
    if (!g)
      return pdb_err(db, &db->err, PAGEDB_NOMEM, "%s: pagedb_tokens_order: out of memory ordering %llu blocks",
                     db->path, (unsigned long long)t->nblocks);
    for (uint64_t i = 0; i < t->nblocks; i++) g[i] = i;
    ord_shuffle_blocks(t->seed, t->epoch, g, t->nblocks);
    memcpy(blocks, g + (uint64_t)rank * len, (size_t)len * sizeof *blocks);
    pdb_free(g);
  }
  *n = (int64_t)len;
  return PAGEDB_OK;
}
