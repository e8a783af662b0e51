/*
** dindex.h -- the persistent sample index, NAME-index: the id -> slot map
** on disk, read through a shared map, so that opening a dataset of any
** size reads a header and one directory record, and every process that
** reads a dataset shares one copy of its index through the page cache.
**
** The layout, its invariants and the commit protocol are at the top of
** dindex.c and in doc/format.md ("The index file").
*/
#ifndef PAGEDB_DINDEX_H
#define PAGEDB_DINDEX_H

#include "pagedbInt.h"

typedef struct Dx Dx;

#define DX_HDR 4096u          /* the file's header; records follow */
#define DX_CBITS 13           /* a chunk holds 2^13 dense slots */
#define DX_DIRW 10            /* words of a version-1 directory record before its entries */
#define DX_DIRW2 14           /* ...of a version-2 one (parts: doc/format.md) */

/* The address space of a dataset of parts (doc/format.md, "Parts"): the
** own data region below 2^56, then one window of 2^42 bytes per part. */
#define DX_WIN_BASE ((uint64_t)1 << 56)
#define DX_WIN_BITS 42
#define DX_PART_MAX (((uint64_t)1 << 21) - ((uint64_t)1 << 14))   /* part numbers 0 .. DX_PART_MAX-1 */
#define DX_PCHUNK 1024u       /* part records in a part chunk */
#define DX_PREC 16            /* words of a part record */
static inline uint64_t dx_window(uint64_t k) { return DX_WIN_BASE + (k << DX_WIN_BITS); }
static inline uint64_t dx_part_of(uint64_t addr) { return (addr - DX_WIN_BASE) >> DX_WIN_BITS; }

/* A part record to write (dx_stage_parts): the fields of doc/format.md's
** part record. */
typedef struct DxPart {
  uint64_t k;
  uint8_t uuid[16];
  uint64_t data_off, data_end, pages, samples, seal;
  const char *uri;          /* 1..4095 bytes */
  const char *validator;    /* NULL: none */
  /* Version 3: its index file's id and length when chunks of it are
  ** referenced, else 0 (record words 13 and 14). */
  uint64_t index_id, index_len;
} DxPart;

/* What the catalog records of the index (meta.index_*), all 0 if none. */
typedef struct DxMeta {
  uint64_t id;              /* the file's random id (63 bits), 0: no index */
  uint64_t dir;             /* offset of the directory record in force */
  uint64_t len;             /* bytes of the file in force (a reader maps these) */
  uint64_t samples;         /* samples it holds: must equal meta.samples */
  uint64_t pages;           /* committed pages it was written for: must equal meta.committed_pages */
  uint64_t parts;           /* version 2: the parts it records, meta.parts (0 in version 1) */
} DxMeta;

/* A change to the index: a new or changed slot (NW words; word 0 is
** written from ID, word 1, the record's address, plus ADD) or, with SLOT
** NULL, the deletion of ID.  ADD lets a part's slots be read in place from
** its own index map, where their addresses are the part's (partscommit.c). */
typedef struct DxChange {
  int64_t id;
  const uint64_t *slot;
  uint64_t add;
} DxChange;

/*
** Open the index of a dataset: PATH (or, when PATH's id is not META's,
** PATH.new, a rewrite whose rename a crash cut short: a writable open
** renames it in).  Checks the header (magic, version, checksum, UUID, NW,
** NFIELD), that the file's id is META->id, that it holds META->len bytes,
** and the directory record at META->dir (checksum, bounds of every entry),
** and maps the file.  ISBYTES[f] is 0 when field f has no stored bytes,
** else the alignment of its values (api.h, api_extent): a lookup checks
** that the record, its padding included, lies in the data region.
** TOKES[f] is the bytes a token of field f if it is a token field (a
** rank-1 variable integer tensor field), else 0: version 2 keeps a token
** map per such field (dindex.c, TOKEN MAPS).
** VERSION is the version the catalog's features call for (1 without
** features, 2 with: doc/format.md); a file of the other is stale.
** PAGEDB_CORRUPT_INDEX with a message saying what is wrong when the index
** is missing, stale or damaged (the caller rebuilds or falls back); other
** codes for I/O and memory.
*/
int dx_open(pagedb *db, pdb_msg *m, pagedb_vfs *vfs, const char *path, const uint8_t uuid[16], int nw,
            int nfield, const uint8_t *isbytes, const uint8_t *tokes, const DxMeta *meta, int writable, int version,
            Dx **out);

/*
** Start a new index file PATH.new for a rewrite (rebuild, field add,
** compaction): header written, no slot.  Fill it with dx_stage, then
** dx_install it once the catalog records it, or dx_close it to drop it.
*/
int dx_create(pagedb *db, pdb_msg *m, pagedb_vfs *vfs, const char *path, const uint8_t uuid[16], int nw,
              int nfield, const uint8_t *isbytes, const uint8_t *tokes, int version, Dx **out);

/* The file X maps: PATH.new for one dx_create made and no dx_install
** renamed in, else PATH. */
const char *dx_file(const Dx *x);

/* The index's version (1, 2, or 3: chunks by reference). */
int dx_version(const Dx *x);

/*
** Version 2: append the part records P[0..N) (numbers the parts so far,
** in order) and a string record of their uris and validators after the
** bytes in force, as dx_stage does slots; the next final dx_stage's
** directory names them.  PAGEDB_FULL past DX_PART_MAX parts.
*/
int dx_stage_parts(Dx *x, pdb_msg *m, const DxPart *p, size_t n);

/* Parts in the snapshot in force. */
uint64_t dx_parts(const Dx *x);

/* Part record K of the snapshot in force (DX_PREC words), checked (its
** check word and number), or NULL if there is none or it is damaged. */
const uint64_t *dx_part(const Dx *x, uint64_t k);

/* The uri (STR 0) or validator (STR 1) of part record REC, copied into
** BUF (CAP bytes, NUL-terminated): PAGEDB_OK, or PAGEDB_CORRUPT_INDEX if
** its strings lie outside the file or do not hash to word 12. */
int dx_part_string(const Dx *x, const uint64_t *rec, int str, char *buf, size_t cap);

/* Rename a created index over PATH and sync the directory. */
int dx_install(Dx *x, pdb_msg *m);

/* Close; a created index not installed is deleted.  NULL is a no-op. */
void dx_close(Dx *x);

/* Sort the N changes CH by id, in O(N) when their ids are dense (what
** dx_stage does first; a rewrite in batches sorts once, then cuts its
** batches where a chunk ends, so that each chunk is written once). */
void dx_sort(DxChange *ch, size_t n);

/*
** Write the N changes CH (any order; sorted in place by id) after the
** bytes in force, copy-on-write: no byte that a snapshot can see changes.
** With FINAL, also a directory record and a sync, and *OUT receives what
** the catalog must record for the result to be in force (PAGES: the
** committed pages the catalog will record; DATA_END: bytes of the data
** region they hold, the bound every record must lie within).  Without
** FINAL (a rewrite in batches) nothing is synced.  A failure leaves the
** bytes in force untouched; call dx_abort.  One thread (the committer).
*/
int dx_stage(Dx *x, pdb_msg *m, DxChange *ch, size_t n, int final, uint64_t pages, uint64_t data_end,
             DxMeta *out);

/*
** Version 3 (dindex.c, CHUNKS BY REFERENCE): chunk R[j].c of the working
** state becomes a reference to the chunk copy at byte R[j].off of part
** R[j].k's index file, of HI R[j].hi, its slots those of ids
** c * 2^13 + i in the part, less R[j].delta * 2^13 (R sorted by c).  The
** part record (dx_stage_parts, before) must hold that file's id and length.
** COUNT samples and a largest id NEXT - 1 are added.  Nothing is written
** until the final dx_stage writes the directory.  PAGEDB_BUSY (nothing
** changed) when a chunk is not empty in the working state (the caller
** reserved the part's ids: it never is).  Stage references before any other change of the commit: a
** later change to a referenced chunk copies it (apply_chunk).
*/
typedef struct DxRefChunk {
  uint64_t c, k, off, hi;
  int64_t delta;
} DxRefChunk;
int dx_stage_refs(Dx *x, pdb_msg *m, const DxRefChunk *r, size_t n, uint64_t count, uint64_t next);

/* The snapshot in force of X, for a commit that references its chunks:
** E the chunk entries (offset, HI; 2 * NCH words, valid while X is open),
** NSG its segments, COUNT its samples, NEXT 1 + its largest id, LEN the
** file's bytes in force, FID its id, VERSION.  0 when it has none. */
typedef struct DxChunks {
  const uint64_t *e;
  uint64_t nch, nsg, count, next, len, fid;
  int version;
} DxChunks;
int dx_chunks(const Dx *x, DxChunks *out);

/* The catalog committed what dx_stage staged: lookups see it now. */
int dx_publish(Dx *x, pdb_msg *m);

/* The catalog did not commit: forget what dx_stage staged. */
void dx_abort(Dx *x);

/* Bytes of the file that no directory in force refers to, and bytes it
** refers to (for a compaction policy: none runs yet, see dindex.c). */
void dx_space(const Dx *x, uint64_t *dead, uint64_t *live);

/* The slot of ID as of the snapshot in force (NW words), or NULL; DX_BAD
** if the index holds an entry for ID that fails its checks (checksum, id,
** extent outside the committed data).  Lock-free: a few loads.  The slot
** of a chunk referenced in a part's index file (version 3) is a translated
** copy in a buffer of the calling thread's, valid until its next dx_find:
** use it at once (every other slot lives as long as X). */
extern const uint64_t dx_bad_slot[1];
#define DX_BAD (dx_bad_slot)
const uint64_t *dx_find(const Dx *x, int64_t id);
/* Whether the DX_BAD dx_find gave for ID is a part of the map that could
** not be fetched (a remote index, filled on demand): 1, and WHY (N bytes)
** receives the backend's reason; or, version 3, lies in a chunk referenced
** in a part's index file that cannot be opened or no longer is the one
** committed: 2, and WHY names the part and its file.  0: a damaged entry. */
int dx_unfetched(const Dx *x, int64_t id, char *why, size_t n);

/*
** dx_find for a reader that often looks the same id up twice in a row (a
** sample's bytes, then its label): M remembers the last slot found (zeroed
** by the caller before the first call; one per thread, as a reader is) and
** is answered again, without a second check, while the snapshot in force
** is the same.  A damaged entry or a missing id is never remembered.  A
** slot of a referenced chunk (version 3) is returned in place, the part's
** own, checked as dx_find checks it, not translated: its word 0 is the
** part's id and its word 1 the record's offset in the part's data region,
** to which M->bias, the part's window (0 for any other slot), adds up to
** the address (its other words are the sample's).  Every slot returned
** lives until the index is closed.
*/
#define DX_SLOT_WORDS (2 + (PAGEDB_MAX_FIELDS + 63) / 64 + 3 * PAGEDB_MAX_FIELDS + 1)
typedef struct DxMemo {
  const uint64_t *dir;      /* the directory it was found through, NULL: none */
  int64_t id;
  const uint64_t *slot;
  uint64_t bias;            /* added to SLOT's word 1: its record's address */
} DxMemo;
const uint64_t *dx_find_memo(const Dx *x, int64_t id, DxMemo *m);

/* Samples in the snapshot in force; 1 + its largest id (0 if none). */
uint64_t dx_count(const Dx *x);
int64_t dx_next_id(const Dx *x);
/* The first id past the chunks in use: ids from it on are in segments. */
int64_t dx_chunk_end(const Dx *x);

/* Call XCB with every sample of the snapshot in force: chunked ids in
** increasing order, then the others, segment by segment, each in
** increasing order.  A damaged entry stops the scan with
** PAGEDB_CORRUPT_INDEX. */
int dx_scan(const Dx *x, int (*xcb)(void *ctx, int64_t id, const uint64_t *slot), void *ctx);
/* dx_scan of the samples whose id is LO or more and LAST or less only
** (INT64_MAX: to the end): no chunk entry outside them is read (segments
** are, and filtered). */
int dx_scan_range(const Dx *x, int64_t lo, int64_t last, int (*xcb)(void *ctx, int64_t id, const uint64_t *slot),
                  void *ctx);

/*
** Give the map of a read-only index the madvise(2) advice MADV, the one
** pagedb_advise gives the data (pager_madv): a reader that reads ids at
** random looks their slots up at random too, and a dataset larger than
** memory would otherwise read around every slot it faults in (the disk's
** read-ahead, 8 MiB on this project's VM, for 80 bytes).  Only a file's
** map: a heap copy, and a map a remote backend fills on demand (where
** MADV_DONTNEED would discard what it filled), are left alone, and so is
** a writer's map, which a commit may replace meanwhile.  A hint: a failure
** changes nothing but speed.
*/
void dx_advise(Dx *x, int madv);

/*
** Token maps (dindex.c, TOKEN MAPS).  dx_tokmap: 1 and *T for the map of
** FIELD in the snapshot in force, 0 if the index stores none (a file
** written before maps, version 1, not a token field).  *T stays readable,
** entries 0..count-1 unchanged, until dx_close (invariant 1).
** dx_tok_entry: entry K (< count) of T, its END and ID; 0 if it cannot be
** fetched (a remote index).  Entries are not checked here: a reader checks
** each document's length against its slot (tokens.c).  dx_tok_verify:
** the map of FIELD against the slots of the snapshot (ids increasing, ends
** the prefix sums of their token counts, the check word, one entry per
** document of at least one token): 0 if it agrees or there is none, else
** 1 and WHY (N bytes).  O(documents).
*/
typedef struct DxTok {
  const uint8_t *base;      /* the map of the snapshot, from offset 0 */
  uint64_t off, count, check;
} DxTok;
int dx_tokmap(const Dx *x, int field, DxTok *t);
int dx_tok_entry(const Dx *x, const DxTok *t, uint64_t k, uint64_t *end, int64_t *id);
int dx_tok_verify(const Dx *x, int field, char *why, size_t n);

/* Keep OLDER open (its map readable) until X is closed: a rewrite that
** replaces an index whose token maps a stream may still read. */
void dx_keep(Dx *x, Dx *older);

/* The file's id (DxMeta.id). */
uint64_t dx_id(const Dx *x);

#endif /* PAGEDB_DINDEX_H */
