/*
** tokens.c -- token streams: fixed-length blocks cut from the documents of
** a 1-D integer tensor field laid end to end (doc/format.md, "Token maps";
** pagedb.h, pagedb_tokens_open).
**
** A language model trains on blocks of B + 1 consecutive tokens (the input
** and its target shifted by one) of one long stream: the documents in id
** order, concatenated -- what nanoGPT, LitData's TokensLoader and
** Megatron-style loaders read from a flat token file.  Block b is tokens
** bB .. bB + B: it owns its first B (its input), and its last is the
** first of block b + 1.  The TOKEN MAP, the prefix sums of the documents'
** lengths, finds the document holding token bB by one binary search,
** O(log documents); each document a block touches is then read through
** the reader's own corridor (pagedb_read: the index's checks,
** decompression, verification).
**
** WHERE THE MAP COMES FROM.  Every commit keeps one map per token field in
** the index file (dindex.c, TOKEN MAPS): the stream reads its entries in
** place, so an open costs O(1) whatever the documents (the entries stay
** mapped until pagedb_close: db->tokpin keeps a replaced index file's map,
** main.c drop_index).  An index without maps (written by an older pagedb,
** or no index file: a read-only catalog scan, PAGEDB_OPEN_CHECK) gives the
** same stream from a map built in memory in one pass over the slots,
** O(documents) at the open.
**
** EPOCHS.  The stream is the same every epoch; an epoch permutes the BLOCK
** NUMBERS: position i of the epoch reads block perm(i), a keyed Feistel
** network over [0, blocks) with cycle walking, keyed by (seed, epoch)
** (kind RANDOM), or over groups of TOK_GROUP neighbouring blocks, read in
** order within a group (QUASI_RANDOM: each group a contiguous stretch of
** the stream, friendly to read-ahead), or the identity (SEQUENTIAL).  A
** rank's share is positions [rank*len, (rank+1)*len), len = blocks /
** world: O(its blocks), nothing materialised for the others.
**
** INVARIANTS of a pagedb_tokens made by pagedb_tokens_open:
**   1. Its map lists distinct committed samples in increasing id order
**      that, when it was made, had a value of at least one token for
**      FIELD; end k is the sum of the tokens of documents 0..k: strictly
**      increasing, the last == total <= INT64_MAX.  A stored map is
**      untrusted: a block checks each end it uses against its neighbours
**      and the document's length against its slot (PAGEDB_CORRUPT_INDEX
**      otherwise), so a damaged map fails, never gives other tokens.
**   2. nblocks == (total - 1) / B when total > 0 (every block has B + 1
**      tokens), else 0.  The last (total - 1) mod B tokens are the TAIL:
**      in no block's input (the same tail every epoch).
**   3. Nothing in it changes after the open: threads share T, each reading
**      through its own reader, and closing T frees only memory.
** A document changed or deleted after the open no longer matches the map:
** its read fails (PAGEDB_NOTFOUND, or PAGEDB_CORRUPT for another length),
** never returns other tokens.
*/
#include "api.h"

#include <stdio.h>

#define TOK_GROUP 64        /* QUASI_RANDOM: blocks a group, read in order */

struct pagedb_tokens {
  pagedb *db;
  int field;
  int esize;                /* bytes per token */
  int kind;                 /* PAGEDB_ORDER_*, without DROP_LAST */
  uint64_t key[4];          /* the epoch's Feistel keys */
  uint64_t B;               /* block size: a block has B + 1 tokens */
  uint64_t ndoc;
  uint64_t total;           /* tokens in the stream */
  uint64_t nblocks;
  /* The map: stored (DX, TOK) or built (IDS, ENDS). */
  const Dx *dx;
  DxTok tok;
  int64_t *ids;
  uint64_t *ends;
};

#define TOK_BLOCK_MAX ((int64_t)1 << 30)

void pagedb_tokens_close(pagedb_tokens *t) {
  if (!t) return;
  pdb_free(t->ids);
  pdb_free(t->ends);
  pdb_free(t);
}

/* --- the map ----------------------------------------------------------- */

static int damaged(const pagedb_tokens *t, pdb_msg *m, uint64_t k) {
  return pdb_err(t->db, m, PAGEDB_CORRUPT_INDEX, "%s: token stream of '%s': entry %llu of the token map in the "
                 "index file is damaged or cannot be fetched", t->db->path, t->db->fields[t->field].name,
                 (unsigned long long)k);
}

/* Document K's END and ID. */
static int entry(const pagedb_tokens *t, pdb_msg *m, uint64_t k, uint64_t *end, int64_t *id) {
  if (!t->dx) {
    *end = t->ends[k];
    *id = t->ids[k];
    return PAGEDB_OK;
  }
  if (!dx_tok_entry(t->dx, &t->tok, k, end, id) || *end > t->total || *end == 0 || *id < 0) return damaged(t, m, k);
  return PAGEDB_OK;
}

/* The first token of document K (its predecessor's end). */
static int start_of(const pagedb_tokens *t, pdb_msg *m, uint64_t k, uint64_t *start) {
  int64_t id;
  *start = 0;
  return k ? entry(t, m, k - 1, start, &id) : PAGEDB_OK;
}

/* *K: the document that holds token POS of the stream (POS < total), the
** first whose end is past it. */
static int doc_of(const pagedb_tokens *t, pdb_msg *m, uint64_t pos, uint64_t *k) {
  uint64_t lo = 0, hi = t->ndoc - 1;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2, end;
    int64_t id;
    int rc = entry(t, m, mid, &end, &id);
    if (rc != PAGEDB_OK) return rc;
    if (end > pos) hi = mid;
    else lo = mid + 1;
  }
  *k = lo;
  return PAGEDB_OK;
}

/* Put document ID (slot S) into T's built map; 0 tokens: left out. */
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

static int by_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The map built in memory: every committed sample in id order, one pass
** over their slots. */
static int build_map(pagedb_tokens *t) {
  pagedb *db = t->db;
  int64_t n = 0, want;
  int rc = pagedb_order(db, PAGEDB_ORDER_SEQUENTIAL, 0, 0, 0, 1, NULL, &n);
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
    rc = pagedb_order(db, PAGEDB_ORDER_SEQUENTIAL, 0, 0, 0, 1, t->ids, &n);
    if (rc == PAGEDB_OK || n <= want) break;
    rc = PAGEDB_OK;
  }
  if (rc != PAGEDB_OK) {
    char why[400];
    snprintf(why, sizeof why, "%s", rc == PAGEDB_NOMEM ? "out of memory for the token map" : pagedb_errmsg(db));
    return pdb_err(db, &db->err, rc, "%s: token stream of '%s': %s", db->path, db->fields[t->field].name, why);
  }
  qsort(t->ids, (size_t)n, sizeof *t->ids, by_id);
  /* Compacted in place: entry k is written only after entry k was read. */
  for (int64_t i = 0; i < n && rc == PAGEDB_OK; i++) {
    int64_t id = t->ids[i];
    rc = add_doc(t, &db->err, id, idx_find(db->idx, id));
  }
  return rc;
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
  if (!api_token_bytes(f)) {
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
  pagedb_tokens *t = pdb_calloc(1, sizeof *t);
  if (!t) return pdb_err(db, &db->err, PAGEDB_NOMEM, "%s: out of memory opening a token stream", db->path);
  t->db = db;
  t->field = field;
  t->esize = f->tensor.esize;
  t->kind = kind;
  t->B = (uint64_t)block_size;
  for (int r = 0; r < 4; r++)
    t->key[r] = pdb_mix64(seed ^ pdb_mix64(epoch * 0x9e3779b97f4a7c15ull + (uint64_t)r + 1));
  int rc = PAGEDB_OK;
  Dx *dx = idx_disk(db->idx);
  if (dx && dx_tokmap(dx, field, &t->tok)) {
    atomic_store(&db->tokpin, 1);   /* before a rewrite could close the map */
    t->dx = dx;
    t->ndoc = t->tok.count;
    t->total = UINT64_MAX;          /* entry()'s bound while the last end is read */
    int64_t id;
    if (t->ndoc && (rc = entry(t, &db->err, t->ndoc - 1, &t->total, &id)) == PAGEDB_OK && t->total > INT64_MAX)
      rc = damaged(t, &db->err, t->ndoc - 1);
    if (!t->ndoc) t->total = 0;
  } else {
    rc = build_map(t);
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
int pagedb_tokens_stored(const pagedb_tokens *t) { return t && t->dx; }

int pagedb_tokens_document(const pagedb_tokens *t, int64_t k, int64_t *id, int64_t *end) {
  if (!t || !id || !end) return PAGEDB_MISUSE;
  pagedb *db = t->db;
  if (k < 0 || (uint64_t)k >= t->ndoc)
    return pdb_err(db, &db->err, PAGEDB_RANGE, "%s: token stream of '%s': no document %lld (it has %llu)", db->path,
                   db->fields[t->field].name, (long long)k, (unsigned long long)t->ndoc);
  uint64_t e;
  int rc = entry(t, &db->err, (uint64_t)k, &e, id);
  *end = (int64_t)e;
  return rc;
}

/* Document K's tokens, read through the reader: *P and its *N tokens,
** which must be the map's count (invariant 1). */
static int read_doc(const pagedb_tokens *t, pagedb_reader *r, uint64_t k, const uint8_t **p, uint64_t *n) {
  pagedb *db = t->db;
  uint64_t start, end;
  int64_t id;
  int rc = start_of(t, &r->err, k, &start);
  if (rc == PAGEDB_OK) rc = entry(t, &r->err, k, &end, &id);
  if (rc != PAGEDB_OK) return rc;
  if (end <= start) return damaged(t, &r->err, k);
  const void *data;
  size_t nb;
  rc = pagedb_read(r, id, t->field, &data, &nb);
  if (rc != PAGEDB_OK) return rc;   /* the reader's message names the sample */
  uint64_t want = end - start;
  if (nb != want * (uint64_t)t->esize)
    return pdb_err(db, &r->err, t->dx ? PAGEDB_CORRUPT_INDEX : PAGEDB_CORRUPT, "%s: token stream of '%s': sample %lld "
                   "has %zu bytes, the token map %llu tokens of %d bytes (%s)", db->path, db->fields[t->field].name,
                   (long long)id, nb, (unsigned long long)want, t->esize,
                   t->dx ? "the stored map is damaged, or the sample changed since the open"
                         : "changed since the stream was opened?");
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
  uint64_t pos = (uint64_t)b * t->B, want = t->B + 1, k, start;
  int rc = doc_of(t, &r->err, pos, &k);
  if (rc == PAGEDB_OK) rc = start_of(t, &r->err, k, &start);
  if (rc != PAGEDB_OK) return rc;
  if (start > pos) return damaged(t, &r->err, k);
  uint64_t off = pos - start;
  const uint8_t *p;
  uint64_t n;
  rc = read_doc(t, r, k, &p, &n);
  if (rc != PAGEDB_OK) return rc;
  if (off >= n) return damaged(t, &r->err, k);   /* the map's ends disagree with its lengths */
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
  ** every token asked for (a damaged map may not: checked). */
  uint8_t *dst = buf;
  for (uint64_t got = 0;;) {
    uint64_t take = n - off < want - got ? n - off : want - got;
    memcpy(dst + got * es, p + off * es, (size_t)take * es);
    got += take;
    if (got == want) break;
    if (k + 1 >= t->ndoc) return damaged(t, &r->err, k);
    off = 0;
    rc = read_doc(t, r, ++k, &p, &n);
    if (rc != PAGEDB_OK) return rc;
  }
  *data = buf;
  return PAGEDB_OK;
}

/* --- the epoch's block order ------------------------------------------- */

/* A permutation of [0, 2^(2 HALF)): four Feistel rounds keyed by KEY. */
static uint64_t feistel(const uint64_t key[4], uint64_t x, int half) {
  uint64_t mask = ((uint64_t)1 << half) - 1, l = x >> half, r = x & mask;
  for (int i = 0; i < 4; i++) {
    uint64_t f = pdb_mix64(r ^ key[i]) & mask, nl = r;
    r = l ^ f;
    l = nl;
  }
  return (l << half) | r;
}

/* Position I (< N) of a keyed permutation of [0, N): the Feistel network
** over the smallest even power of two >= N (under 4N), walked along its
** cycle until it lands in [0, N) -- fewer than 4 steps on average. */
static uint64_t permute(const uint64_t key[4], uint64_t i, uint64_t n) {
  if (n <= 1) return i;
  int bits = 64 - __builtin_clzll(n - 1), half = (bits + 1) / 2;
  do i = feistel(key, i, half);
  while (i >= n);
  return i;
}

/* The block at position I of T's epoch. */
static uint64_t block_at(const pagedb_tokens *t, uint64_t i) {
  if (t->kind == PAGEDB_ORDER_RANDOM) return permute(t->key, i, t->nblocks);
  if (t->kind == PAGEDB_ORDER_QUASI_RANDOM) {
    uint64_t ng = t->nblocks / TOK_GROUP;   /* whole groups; the rest stays last, in order */
    if (i < ng * TOK_GROUP) return permute(t->key, i / TOK_GROUP, ng) * TOK_GROUP + i % TOK_GROUP;
  }
  return i;
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
  for (uint64_t i = 0; i < len; i++) blocks[i] = (int64_t)block_at(t, (uint64_t)rank * len + i);
  *n = (int64_t)len;
  return PAGEDB_OK;
}
