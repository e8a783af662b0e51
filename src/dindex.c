/*
** dindex.c -- the persistent sample index, NAME-index.
**
** WHY A THIRD FILE.  The index is rewritten as a whole now and then (a
** field added widens every slot; compaction drops dead copies), and a
** rewrite must never change a byte that an open reader maps: a file of its
** own is replaced atomically by rename(2) while readers keep the old inode
** mapped, and the data file's page claiming stays as it is.
**
** LAYOUT (little-endian 64-bit words; doc/format.md has the table):
**
**   header (4096 bytes): "pagedb index" magic, version, words per slot,
**       fields, chunk bits, the dataset's uuid, the file's random id, and
**       a checksum of those bytes.  Written once, when the file is made.
**   records, appended after it, never changed once a directory in force
**   refers to them:
**     chunk copy   2^13 slots of the dense ids c*2^13 .. (c+1)*2^13-1: the
**                  slot of id i at (i mod 2^13) * slot bytes.  Space for
**                  all 2^13 is reserved (a hole on disk until written).
**     segment      COUNT slots of ids that fall in no chunk, sorted by id.
**     token map    (version 2) per token field, CAPACITY entries (end,
**                  id) of its documents in id order: TOKEN MAPS below.
**     directory    what is in force: per chunk c its copy's offset and HI
**                  (slots 0..HI-1 are in the snapshot), per segment its
**                  offset and count, the sample count, 1 + the largest id,
**                  the data-region bytes every record lies within, the
**                  end of the file in force, and a checksum.
**   A disk slot is index.h's slot (NW words) plus one word: a checksum of
**   the NW words, with bit 0 set; 0 means "no sample" (never written).
**
** LOOKUP (dx_find): the directory in force is one pointer (the snapshot);
** a dense id's slot is at map + chunk[c].offset + (id mod 2^13) * slot
** bytes: two loads, then the slot's id, checksum and extent are checked,
** so a damaged index yields DX_BAD, never another sample.  Other ids are
** found by a binary search of each segment (at most about log2 of their
** number: see "segments" below).
**
** INVARIANTS
**   1. Bytes below the length a directory in force records are never
**      written again, except slots at positions >= HI of a chunk copy,
**      which no directory in force shows (a later commit writes them,
**      zeroes included, before showing them).  So a reader that mapped the
**      length of its open keeps its snapshot whole, and a slot is never
**      seen half written.
**   2. The catalog's meta.index_{id,dir,len,samples,pages} name the
**      directory in force; they are committed in the same SQLite
**      transaction as the samples they index, after the index bytes are
**      synced (commit order: data synced, and index written and synced
**      beside it -> catalog committed -> visible; the two syncs need no
**      order, as nothing names the new index bytes before the catalog
**      does).  A crash at any instant leaves the last commit's directory
**      in force (bytes written past it are garbage that nothing refers to
**      and the next commit overwrites).
**   3. A dense id is kept in a chunk when its chunk exists or when the
**      chunk number c < B + 2 * (chunks in use) + 4, B the first chunk in
**      use (or the id's own when none is) if below 2^17, else 0: so the
**      directory stays proportional to the chunks in use, but for at most
**      2 MiB of entries below ids that start high; other ids go to
**      segments.  (A writer's policy: readers take any layout.)
**   4. Changes are copy-on-write: a commit that deletes or changes a slot,
**      or adds one below HI, writes a new copy of the chunk (or segment)
**      and the directory points to it; one that adds ids at or past HI
**      writes them in place (invariant 1).
**
** SEGMENTS.  A commit's new non-chunk ids form a new sorted segment; then,
** like a binary counter, while the previous segment is at most twice the
** size of the last, the two are merged into a new one.  Segment sizes so
** halve from first to last: there are at most about log2(n) of them, and
** each slot is copied O(log n) times over its life.
**
** COSTS.  Each commit appends a directory record (16 bytes per chunk, i.e.
** 2 bytes per 1,024 dense samples) and writes its new slots; a commit that
** deletes or changes samples copies each chunk it touches (640 KiB at 80
** bytes a slot).  Copies left behind are dead space, reported by dx_space;
** nothing compacts automatically yet: a rewrite (a field add, or a rebuild
** after the file is deleted) writes the file anew without it.
**
** TOKEN MAPS (version 2; doc/format.md, "Token maps").  For every token
** field (a rank-1 variable integer tensor field) a record of CAPACITY
** entries of 16 bytes, (end, id), COUNT of them in force: the documents of
** at least one token in id order, END the sum of the tokens of that
** document and every one before it.  The directory names each (field,
** offset, CAPACITY, COUNT, check word: a serial hash of the COUNT entries,
** extended as entries are appended).  A commit whose new documents all
** have ids above the last entry's, and that deletes or resizes none,
** writes their entries in place past COUNT when they fit (invariant 1's
** exception, as for chunks past HI); any other change writes a new copy
** with CAPACITY max(1024, 2 COUNT) after the bytes in force (invariant 4),
** so appending costs amortised O(1) a document.  INVARIANT 5: every
** directory in force names exactly one map per token field, or none at
** all (a file written before maps existed: readers then build the stream
** in memory); a map's entries are the slots' documents of its snapshot,
** ids strictly increasing, ends their prefix sums (dx_tok_verify checks).
**
** The writer maps a window larger than the file and replaces it by a
** larger one when the file outgrows it; older windows stay mapped until
** dx_close, so a lock-free lookup that loaded an older snapshot reads
** valid memory.  A backend without a map (xMap) is read into memory once
** at a read-only open (a copy of the index bytes, no per-sample work), and
** a writable open on it is refused (the caller keeps the in-memory index).
*/
#include "dindex.h"
#include "index.h"
#include "os.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define DX_MAGIC     "pagedb index\0\0\0"   /* 16 bytes with the NUL */
#define DX_C         ((uint64_t)1 << DX_CBITS)
#define DX_DIR_MAGIC 0x3152494458424450ull  /* "PDBXIDR1" */
#define DX_DIR_MAGIC2 0x3252494458424450ull /* "PDBXIDR2" */
#define DX_DIR_MAGIC3 0x3352494458424450ull /* "PDBXIDR3" */
#define DX_PRECB     (DX_PREC * 8u)         /* bytes of a part record */
#define DX_WINDOW    ((uint64_t)64 << 20)   /* a writer's first map */

const uint64_t dx_bad_slot[1] = { 0 };

typedef struct Retired {
  struct Retired *next;
  const void *p;
  size_t n;
} Retired;

#define DX_PMEMO 1024
#define DX_CREFS ((size_t)1 << 20)   /* resolved chunks' entries; chunk c's is c % DX_CREFS */
/* A memo word: k + 1 (< 2^21) above data_end (<= 2^42: 43 bits). */
#define DX_PMEMO_SHIFT 43

struct Dx {
  pagedb *db;
  pagedb_vfs *vfs;
  pagedb_file *f;
  char *path;               /* NAME-index */
  char *tmp;                /* NAME-index.new: dx_create's file, until installed */
  int nw;                   /* words of a slot; a disk slot has one more */
  uint64_t wsb;             /* bytes of a disk slot */
  int nfield;
  uint8_t isbytes[PAGEDB_MAX_FIELDS];   /* 0, or the field's alignment (dx_open) */
  uint16_t bf[PAGEDB_MAX_FIELDS];  /* the fields with stored bytes, in order */
  int nbf;                  /* ...how many */
  uint64_t fid;             /* the file's id */
  int writable;
  int version;              /* 1, or 2: part chunks in the directory (doc/format.md) */
  int dirw;                 /* words of a directory before its entries: DX_DIRW or DX_DIRW2 */
  /* The snapshot in force: its directory record, inside MAP. */
  _Atomic(const uint64_t *) snap;
  const uint8_t *map;       /* the current map, from offset 0 */
  size_t maplen;
  int heap;                 /* MAP is a heap copy (no xMap) */
  /* A map the backend fills on demand (xMapFill: the remote VFSes), read
  ** only: per DX_FILL bytes of it, whether they were made readable. */
  _Atomic uint8_t *filled;
  uint64_t nfill;
  _Atomic int unfetched;    /* a fill failed (dx_unfetched) */
  /* Part records checked (part_end): leaf k / DX_PMEMO, allocated on first
  ** use and published with a compare-and-swap, holds at k % DX_PMEMO the
  ** word (k + 1) << DX_PMEMO_SHIFT | data_end once part k's record was
  ** found good (0 before).  A record in force is never changed, so a scan's
  ** check of a part's slot then costs two loads, no hash and no touch of
  ** the record (a lookup leaves that bound to the read: verify). */
  _Atomic(_Atomic uint64_t *) pmemo[(DX_PART_MAX + DX_PMEMO - 1) / DX_PMEMO];
  /* Version 3: the index files of parts whose chunks the directory
  ** references (CHUNKS BY REFERENCE), per part k a DxRef in leaf
  ** k / DX_PMEMO, opened by the first lookup that needs it under REF_MU
  ** and published with a release store: a DxRef without a map, its WHY
  ** saying why, when it could not be opened or checked.  Kept until
  ** dx_close; one that failed for want of a resource (AGAIN: a descriptor,
  ** memory, a read) is tried again by the next lookup that needs it, and
  ** replaced (onto REFS_OLD) if that succeeds. */
  _Atomic(_Atomic(struct DxRef *) *) rtab[(DX_PART_MAX + DX_PMEMO - 1) / DX_PMEMO];
  /* Referenced chunks resolved (RESOLVED CHUNKS): chunk c's at
  ** CREF[c % DX_CREFS], a table reserved as zeros (version 3 only, else
  ** NULL): CREFS's bytes, grown under REF_MU (mem.h, RESERVED TABLES). */
  struct DxCref *cref;
  PdbTable crefs;
  pthread_mutex_t ref_mu;
  struct DxRef *refs_old;   /* failed DxRefs replaced, freed at close (a lookup may still hold one) */
  uint64_t *wbuf;           /* the writer's translated slot (find_work) */
  Retired *retired;         /* older maps, unmapped at close */
  Dx *older;                /* dx_keep's: closed with this one */
  /* The writer's working state: the snapshot plus what dx_stage staged. */
  uint64_t *ch;             /* per chunk: offset, hi */
  uint64_t nch, capch;
  uint64_t *sg;             /* per segment: offset, count */
  uint64_t nsg, capsg;
  uint64_t *pc;             /* version 2: per part chunk: offset, hi */
  uint64_t npc, cappc;
  uint64_t nparts;
  uint64_t count, live, next, end;
  uint64_t staged_dir;      /* the directory dx_stage wrote, 0 if none */
  uint64_t wo_lo, wo_hi;    /* bytes written since the last writeout hint (put) */
  /* Token maps (version 2; TOKEN MAPS below).  TOKES[f]: bytes a token
  ** of field f if it is a token field, else 0; TF[0..NTF): those fields in
  ** order.  The working state's maps, per token field k: TM[k] = offset,
  ** CAPACITY, COUNT, check word; TMAPS 0 while it has none (an index file
  ** that predates them, or a new file being filled): the final dx_stage
  ** then builds them from the slots. */
  uint8_t tokes[PAGEDB_MAX_FIELDS];
  uint16_t tf[PAGEDB_MAX_FIELDS];
  int ntf;
  uint64_t (*tm)[4];
  int tmaps;
};

/* --- lazily filled maps ---------------------------------------------------- */

#define DX_FILL ((uint64_t)64 << 10)

/*
** Make index bytes [OFF, OFF+N) of the map readable before they are
** touched.  A no-op (one load per unit) unless the map is filled on
** demand: a read-only open of a remote index fills its header and
** directory only, and each lookup the units its slot lies in, so an open
** costs a few ranges whatever the number of samples.  Returns 0 if the
** backend could not fetch them (its xErrmsg says why).
*/
static int readable(const Dx *x, uint64_t off, uint64_t n) {
  if (!x->filled || n == 0) return 1;
  uint64_t a = off / DX_FILL, b = (off + n - 1) / DX_FILL;
  if (b >= x->nfill) return 0;
  uint64_t u = a;
  while (u <= b && atomic_load_explicit(&x->filled[u], memory_order_acquire)) u++;
  if (u > b) return 1;
  uint64_t o = u * DX_FILL, e = (b + 1) * DX_FILL < x->maplen ? (b + 1) * DX_FILL : x->maplen, l = e - o;
  if (pdb_os_map_fill(x->f, x->map, &o, &l, 1) != PAGEDB_OK) {
    atomic_store(&((Dx *)x)->unfetched, 1);   /* a flag beside the map, not the snapshot */
    return 0;
  }
  /* Release: a thread that sees the flag sees the bytes placed. */
  for (; u <= b; u++) atomic_store_explicit(&x->filled[u], 1, memory_order_release);
  return 1;
}

/* --- slots ----------------------------------------------------------- */

static inline __attribute__((always_inline)) uint64_t slot_sum(const uint64_t *s, int nw) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)nw;
  /* A serial chain: unrolled, the loop's own instructions go (a third of
  ** a lookup's cost at 9 words). */
#pragma GCC unroll 4
  for (int i = 0; i < nw; i++) {
    h = (h ^ s[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return pdb_mix64(h) | 1;
}

/*
** Slot S of ID, found through directory D: checked before it is trusted.
** Every stored field's extent must lie within the data region D records
** (d[8]): the record starts at s[1] (plus BIAS, for a part's own slot read
** in place: the part's window) and its fields follow one another, so the
** end of the last is bounded without overflow, field by field.
**
** A record in part k's window must lie within what part k's runs use
** (word 4 of its part record).  A scan (STRICT: dx_scan, pagedb_check)
** checks that here.  A lookup checks only that the record lies within the
** parts' windows, and leaves which part, and its end, to the parts layer,
** which bounds every access to a part's bytes by the same word (parts.c:
** part_at, parts_mapped): a random read of a part's sample then
** touches one line of per-part state, the part's table entry, not two
** (with the entry's read inlined, tiny samples' random reads went from
** 91-94% of the one file's to 96-97%, block by block: doc/benchmarks.md).
*/
static int part_end(const Dx *x, const uint64_t *d, uint64_t k, uint64_t *pend);

static inline __attribute__((always_inline)) const uint64_t *extent_at(const Dx *x, const uint64_t *d, const uint64_t *s,
                                                                       uint64_t bias, int strict) {
  /* The record's end, its values aligned as api_extent places them. */
  uint64_t lim = d[8], end = s[1] + bias;
  if (NEVER(end >= DX_WIN_BASE)) {
    /* Strictly, within what a part the directory counts uses; else in the
    ** parts' windows, the read bounding each value by its part's end and
    ** refusing a part the directory does not count (doc/format.md, "A
    ** lookup"): no load here. */
    uint64_t pend = 0;
    if (!strict) lim = dx_window(DX_PART_MAX);
    else if (x->version >= 2 && dx_part_of(end) < d[11] && part_end(x, d, dx_part_of(end), &pend))
      lim = dx_window(dx_part_of(end)) + pend;
    else return DX_BAD;
  }
  if (end > lim) return DX_BAD;
  for (int k = 0; k < x->nbf; k++) {
    int f = x->bf[k];
    if (!slot_has(s, f)) continue;
    uint64_t st = slot_stored(s, x->nfield, f);
    end = pdb_align(end, x->isbytes[f]);
    if (end > lim || st > lim - end) return DX_BAD;
    end += st;
  }
  return s;
}

static inline __attribute__((always_inline)) const uint64_t *extent_ok(const Dx *x, const uint64_t *d, const uint64_t *s,
                                                                       int strict) {
  return extent_at(x, d, s, 0, strict);
}

static inline __attribute__((always_inline)) const uint64_t *verify(const Dx *x, const uint64_t *d, const uint64_t *s, int64_t id,
                                                                    int strict) {
  if (s[0] != (uint64_t)id || s[x->nw] != slot_sum(s, x->nw)) return DX_BAD;
  return extent_ok(x, d, s, strict);
}

static inline const uint64_t *seg_slot(const Dx *x, const uint8_t *base, uint64_t off, uint64_t i) {
  return (const uint64_t *)(base + off + i * x->wsb);
}

/* Binary search of the segment at OFF (COUNT slots) for ID, or NULL
** (DX_BAD if a slot could not be made readable). */
static const uint64_t *seg_find(const Dx *x, const uint8_t *base, uint64_t off, uint64_t count, int64_t id) {
  uint64_t lo = 0, hi = count;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (!readable(x, off + mid * x->wsb, x->wsb)) return DX_BAD;
    const uint64_t *s = seg_slot(x, base, off, mid);
    if ((int64_t)s[0] < id) lo = mid + 1;
    else hi = mid;
  }
  if (lo < count) {
    const uint64_t *s = seg_slot(x, base, off, lo);
    if ((int64_t)s[0] == id) return s;
  }
  return NULL;
}

/* --- chunks by reference (version 3) ------------------------------------ */

/*
** CHUNKS BY REFERENCE (doc/format.md, "Parts' chunks by reference").  In a
** version-3 directory the entry of chunk c may name a chunk copy in part
** k's own index file instead of one of this file's: bit 63 of its first
** word set, k in bits 42-62, the copy's offset / 8 in bits 0-41; its
** second word HI in bits 0-13 and, above, DELTA (two's complement): the
** slot of id i is that copy's slot of the part's id i - DELTA * 2^13, as
** the part's writer wrote it (word 1 the record's offset in the part's
** data region).  Nothing is ever written into a part's file: a change to
** such a chunk copies its slots, translated, into a copy of this file's
** (apply_chunk).  Callers never see a part's slot: lookups and scans hand
** them a translated copy (id, window added, check word), so nothing above
** this file knows a chunk was referenced.
**
** The part's index file is opened and mapped by the first lookup that
** needs it, and checked before any slot is read: its header (magic,
** checksum, version, slot shape) must name the part's uuid and the file
** id its part record (word 13) holds, and the file must hold the bytes
** the commit saw (word 14), within which every referenced copy lies (each
** lookup checks its copy's bounds against that length).
*/
#define DX_REF       ((uint64_t)1 << 63)
#define DX_HI(w)     ((w) & 0x3fffu)        /* HI of a chunk entry's second word */
#define DX_REF_K(w)  (((w) >> DX_WIN_BITS) & (((uint64_t)1 << 21) - 1))
#define DX_REF_OFF(w) (((w) & (((uint64_t)1 << DX_WIN_BITS) - 1)) * 8)

typedef struct DxRef {
  const uint8_t *map;       /* the part's index file, LEN bytes (or a heap copy) */
  uint64_t lim;             /* the largest offset a chunk copy may start at: LEN less a chunk's bytes */
  uint64_t len;
  pagedb_file *f;           /* detached once mapped (pdb_os_detach); NULL for a heap copy */
  int heap;
  int again;                /* MAP NULL for want of a resource: tried again (REF_MU held) */
  const char *why;          /* MAP NULL: why the file cannot be used (pdb_malloc'd but in ref_failed) */
  struct DxRef *next;       /* on Dx's REFS_OLD */
} DxRef;
/* A failure whose DxRef could not be allocated (its WHY is generic). */
static DxRef ref_failed = { .again = 1, .why = "out of memory opening its index file" };

static const uint64_t *part_in(const Dx *x, const uint64_t *d, uint64_t k);

/* Open, check and map part K's index file (REF_MU held): the DxRef, its
** MAP NULL and WHY set when the file cannot be used. */
static DxRef *ref_fail(const char *why, int again) {
  DxRef *ref = pdb_calloc(1, sizeof *ref);
  if (ref && !(ref->why = pdb_strdup(why))) {
    pdb_free(ref);
    ref = NULL;
  }
  if (ref) ref->again = again;
  return ref ? ref : &ref_failed;
}

static DxRef *ref_open(Dx *x, const uint64_t *d, uint64_t k) {
  char uri[4096], path[4096 + PDB_MSG_MAX];
  const uint64_t *r = part_in(x, d, k);
  const char *bad = NULL;
  DxRef *ref = NULL;
  uint8_t *h = NULL;
  char why[PDB_MSG_MAX];
  int again = 0;            /* BAD for want of a resource, not for what the file holds */
  if (!r || dx_part_string(x, r, 0, uri, sizeof uri) != PAGEDB_OK) {
    snprintf(why, sizeof why, "index %s: part %llu's record is damaged", x->path, (unsigned long long)k);
    return ref_fail(why, 0);
  }
  if (uri[0] == '/') {
    snprintf(path, sizeof path, "%s-index", uri);
  } else {
    const char *slash = strrchr(x->path, '/');
    if (slash) snprintf(path, sizeof path, "%.*s/%s-index", (int)(slash - x->path), x->path, uri);
    else snprintf(path, sizeof path, "%s-index", uri);
  }
  if (!r[13] || pdb_path_scheme(uri, NULL, 0)) bad = "no index file of its chunks is recorded";
  if (!bad && !(ref = pdb_calloc(1, sizeof *ref))) again = !!(bad = "out of memory");
  if (!bad && pdb_os_open(x->vfs, path, PAGEDB_VFS_READONLY | PAGEDB_VFS_PLAIN, &ref->f) != PAGEDB_OK) {
    /* Missing, or no descriptor left: either may change. */
    int e = errno;
    ref->f = NULL;
    again = !!(bad = e == EMFILE || e == ENFILE
                         ? "cannot open it: too many open files (reads keep up to PAGEDB_PARTS_OPEN parts'"
                           " files open: lower it, raise ulimit -n, or vacuum)"
                         : "cannot open it");
  }
  uint64_t size = 0;
  if (!bad && !(h = pdb_malloc(DX_HDR))) again = !!(bad = "out of memory");
  if (!bad && (pdb_os_size(ref->f, &size) != PAGEDB_OK || size < r[14] || r[14] < DX_HDR))
    bad = "it is shorter than when it was committed";
  if (!bad && pdb_os_read(ref->f, h, DX_HDR, 0) != PAGEDB_OK) again = !!(bad = "cannot read its header");
  if (!bad && (memcmp(h, DX_MAGIC, 16) != 0 || pdb_get64(h + 56) != pdb_checksum(h, 56)
               || pdb_get32(h + 16) < 1 || pdb_get32(h + 16) > 2 || pdb_get32(h + 20) != (uint32_t)x->nw + 1
               || pdb_get32(h + 24) != (uint32_t)x->nfield || pdb_get32(h + 28) != DX_CBITS
               || memcmp(h + 32, &r[1], 16) != 0 || pdb_get64(h + 48) != r[13]))
    bad = "it changed since the commit (its header is not the one committed)";
  pdb_free(h);
  if (!bad && r[14] < DX_HDR + DX_C * x->wsb) bad = "it is shorter than a chunk";
  if (!bad) {
    const void *p;
    ref->len = r[14];
    ref->lim = r[14] - DX_C * x->wsb;
    /* Read only through the map (or the copy) from now on: its descriptor
    ** goes, so that a reader that touched many parts holds a map of each,
    ** not a descriptor (a copy-mode reader's descriptors are then bounded
    ** by the bound on open parts: parts.c). */
    if (pdb_os_map(ref->f, (size_t)ref->len, &p) == PAGEDB_OK) {
      ref->map = p;
      pdb_os_detach(ref->f);
    } else if (!(p = pdb_malloc((size_t)ref->len))) {
      again = !!(bad = "out of memory");
    } else if (pdb_os_read(ref->f, (void *)p, (size_t)ref->len, 0) != PAGEDB_OK) {
      pdb_free((void *)p);
      again = !!(bad = "cannot read it");
    } else {
      ref->map = p;
      ref->heap = 1;
      pdb_os_close(ref->f);
      ref->f = NULL;
    }
  }
  if (bad) {
    snprintf(why, sizeof why, "part %llu: its index file %.300s: %s", (unsigned long long)k, path, bad);
    if (ref) pdb_os_close(ref->f);
    pdb_free(ref);
    return ref_fail(why, again);
  }
  return ref;
}

static void ref_free(DxRef *ref) {
  if (!ref || ref == &ref_failed) return;
  if (ref->heap) pdb_free((void *)ref->map);
  else if (ref->map) pdb_os_unmap(ref->f, ref->map, (size_t)ref->len);
  if (ref->f) pdb_os_close(ref->f);
  pdb_free((void *)ref->why);
  pdb_free(ref);
}

/* Part K's index file for directory D, opened on first use: its DxRef,
** whose MAP is NULL if it cannot be used (WHY says why: a failure for what
** the file holds is remembered, so asked again the answer is the same
** until the index is opened anew; one for want of a resource is tried
** again). */
static DxRef *ref_open_once(Dx *x, const uint64_t *d, uint64_t k);

static inline __attribute__((always_inline)) DxRef *ref_any(const Dx *x, const uint64_t *d, uint64_t k) {
  _Atomic(DxRef *) *leaf = k < DX_PART_MAX ? atomic_load_explicit(&x->rtab[k / DX_PMEMO], memory_order_acquire) : NULL;
  DxRef *ref = leaf ? atomic_load_explicit(&leaf[k % DX_PMEMO], memory_order_acquire) : NULL;
  if (LIKELY(ref != NULL) && LIKELY(ref->map != NULL || !ref->again)) return ref;
  return k < DX_PART_MAX ? ref_open_once((Dx *)x, d, k) : &ref_failed;
}

/* ...or NULL if it cannot be used. */
static inline __attribute__((always_inline)) DxRef *ref_get(const Dx *x, const uint64_t *d, uint64_t k) {
  DxRef *ref = ref_any(x, d, k);
  return ref->map ? ref : NULL;
}

/* Why part K's index file cannot be used (a failed ref_get's). */
static const char *ref_why(const Dx *x, const uint64_t *d, uint64_t k) {
  DxRef *ref = ref_any(x, d, k);
  return ref->map ? "a damaged entry in its index file" : ref->why;
}

static DxRef *ref_open_once(Dx *x, const uint64_t *d, uint64_t k) {
  _Atomic(DxRef *) *leaf;
  DxRef *ref;
  pthread_mutex_lock(&x->ref_mu);
  leaf = atomic_load_explicit(&x->rtab[k / DX_PMEMO], memory_order_acquire);
  if (!leaf && (leaf = pdb_calloc(DX_PMEMO, sizeof *leaf)) != NULL)
    atomic_store_explicit(&x->rtab[k / DX_PMEMO], leaf, memory_order_release);
  ref = leaf ? atomic_load_explicit(&leaf[k % DX_PMEMO], memory_order_acquire) : NULL;
  if (leaf && (!ref || (!ref->map && ref->again))) {
    /* A failure for want of a resource is tried again: replaced if this
    ** try succeeds or fails for what the file holds, else kept (its WHY
    ** still says why) and the new one dropped. */
    DxRef *nr = ref_open(x, d, k);
    if (!ref || nr->map || !nr->again) {
      if (ref && ref != &ref_failed) {
        ref->next = x->refs_old;
        x->refs_old = ref;
      }
      atomic_store_explicit(&leaf[k % DX_PMEMO], nr, memory_order_release);
      ref = nr;
    } else {
      ref_free(nr);
    }
  } else if (!leaf) {
    ref = &ref_failed;      /* not remembered: asked again */
  }
  pthread_mutex_unlock(&x->ref_mu);
  return ref;
}

/*
** RESOLVED CHUNKS.  A lookup in a referenced chunk needs the part's index
** map and where the chunk's copy lies in it: the entry's word 0 names the
** part and the offset, and ref_resolve opens the part's file (once: its
** DxRef) and checks the offset against it.  What that found is kept per
** chunk -- the entry word it read (KEY, never 0: DX_REF is set) and the
** copy's address (BASE) -- so a later lookup whose entry word is the same
** reads its slot at BASE: one load of a table indexed by the chunk, and no
** load of the part's state, before the slot's (11 instructions fewer a
** lookup; reads by reference still trail copied entries' when the parts
** are large and many: doc/benchmarks.md).  The table is flat, reserved as
** zeros for 2^20 chunks (16 MiB of address space: mem.h, RESERVED TABLES),
** its pages up to the highest chunk resolved made writable (each page
** written in charged), so that the entry is one load from the Dx, not two
** through a leaf.  An entry is written once, BASE then KEY with a release
** store, under REF_MU, and never changed; BASE points into a map that lives
** until dx_close (a DxRef with a map is never replaced).  An entry word
** another snapshot changed simply does not match.
*/
typedef struct DxCref {
  _Atomic uint64_t key;
  const uint8_t *base;
} DxCref;

/* The copy's address recorded for chunk C under entry word W, or NULL
** (keys 0, the table's zeros, match no entry word).  Chunks C and
** C + DX_CREFS share an entry: an entry is a function of its word alone
** (its part's map plus the offset), so a match is right for either. */
static inline __attribute__((always_inline)) const uint8_t *cref_get(const Dx *x, uint64_t c, uint64_t w) {
  const DxCref *ce = &x->cref[c % DX_CREFS];
  return atomic_load_explicit(&ce->key, memory_order_acquire) == w ? ce->base : NULL;
}

/* Chunk C's copy (entry E of directory D) in its part's index map, checked
** and recorded (RESOLVED CHUNKS), or NULL if the part's file cannot be
** used or the entry's offset lies outside it. */
static __attribute__((noinline)) const uint8_t *ref_resolve(const Dx *x, const uint64_t *d, const uint64_t *e,
                                                              uint64_t c) {
  uint64_t k = DX_REF_K(e[0]), off = DX_REF_OFF(e[0]);
  /* (k < d[11]: check_dir saw every reference of a directory read, and a
  ** writer's own directories reference only parts it recorded.) */
  DxRef *ref = ref_get(x, d, k);
  if (!ref || off < DX_HDR || off > ref->lim) return NULL;
  const uint8_t *base = ref->map + off;
  Dx *w = (Dx *)x;
  DxCref *ce = &w->cref[c % DX_CREFS];
  pthread_mutex_lock(&w->ref_mu);
  /* Once: a recorded entry is never changed (another word for its slot is
  ** resolved at each lookup).  Its page made writable first: without
  ** memory for it, nothing is recorded and the next lookup resolves again. */
  if (pdb_table_grow(&w->crefs, c % DX_CREFS * sizeof *ce, sizeof *ce) == PAGEDB_OK &&
      atomic_load_explicit(&ce->key, memory_order_relaxed) == 0) {
    ce->base = base;
    atomic_store_explicit(&ce->key, e[0], memory_order_release);
  }
  pthread_mutex_unlock(&w->ref_mu);
  return base;
}

/*
** Slot I of referenced chunk C (entry E of directory D), in place: the
** part's own slot, its word 1 the record's offset in the part's data region
** (*BIAS, the part's window, added gives its address).  NULL when the slot
** is empty; DX_BAD when the part's file cannot be used or the slot fails
** its checks (the part's own: check word, the part's id, a record within
** the part's window; then the extent's, as any slot's, at its address).
*/
static inline __attribute__((always_inline)) const uint64_t *ref_raw(const Dx *x, const uint64_t *d, const uint64_t *e,
                                                                     uint64_t c, uint64_t i, int strict,
                                                                     uint64_t *bias) {
  uint64_t k = DX_REF_K(e[0]);
  int64_t delta = (int64_t)e[1] >> 14;
  const uint8_t *cb = cref_get(x, c, e[0]);
  if (!LIKELY(cb != NULL) && !(cb = ref_resolve(x, d, e, c))) return DX_BAD;
  const uint64_t *s = (const uint64_t *)(cb + i * x->wsb);
  if (!s[x->nw]) return NULL;
  uint64_t id = c * DX_C + i;
  if (s[0] != id - (uint64_t)delta * DX_C || s[x->nw] != slot_sum(s, x->nw) || s[1] >> DX_WIN_BITS) return DX_BAD;
  *bias = dx_window(k);
  return extent_at(x, d, s, *bias, strict);
}

/*
** ...translated into OUT (NW + 1 words): its dataset id, its record's
** address in the part's window, and, with SUM, its check word (else OUT[NW]
** is 1: a lookup's callers read the NW words, and only a copy into this
** file, apply_chunk, writes the check word).
*/
static inline __attribute__((always_inline)) const uint64_t *ref_slot(const Dx *x, const uint64_t *d, const uint64_t *e,
                                                                      uint64_t c, uint64_t i, uint64_t *out, int strict,
                                                                      int sum) {
  uint64_t bias = 0;
  const uint64_t *s = ref_raw(x, d, e, c, i, strict, &bias);
  if (!s || s == DX_BAD) return s;
  /* (A loop: NW is a few words, and memcpy's call cost more than the copy.) */
  out[0] = c * DX_C + i;
  out[1] = s[1] + bias;
  uint64_t *restrict to = out;
  const uint64_t *restrict from = s;
  int w = 2, nw = x->nw;
  for (; w + 2 <= nw; w += 2) __builtin_memcpy(to + w, from + w, 16);   /* one 16-byte move */
  if (w < nw) to[w] = from[w];
  out[x->nw] = sum ? slot_sum(out, x->nw) : 1;
  return out;
}

/* Room for a translated slot of dx_find's, valid until the thread's next:
** allocated at a thread's first (a static TLS array of this size would not
** fit the block a library loaded by dlopen(3) may take), freed at its exit.
** A thread's scratch, like its stack: from malloc(3), not counted in
** pagedb's memory, which reads 0 after pagedb_shutdown while threads that
** looked samples up live on. */
static pthread_key_t tslot_key;
static pthread_once_t tslot_once = PTHREAD_ONCE_INIT;
static void tslot_init(void) { pthread_key_create(&tslot_key, free); }

static uint64_t *tslot(void) {
  pthread_once(&tslot_once, tslot_init);
  uint64_t *b = pthread_getspecific(tslot_key);
  if (!b && (b = malloc(DX_SLOT_WORDS * sizeof *b)) != NULL && pthread_setspecific(tslot_key, b) != 0) {
    free(b);
    b = NULL;
  }
  return b;
}

/* The slot of ID in directory D (the snapshot in force), as dx_find; a
** referenced slot translated into TBUF (NULL: the calling thread's), or,
** with BIAS, returned in place and its window in *BIAS (ref_raw; else 0). */
static inline __attribute__((always_inline)) const uint64_t *find_in(const Dx *x, const uint64_t *d, int64_t id,
                                                                     uint64_t *tbuf, uint64_t *bias) {
  if (!d || id < 0) return NULL;
  const uint8_t *base = (const uint8_t *)d - d[1];
  uint64_t c = (uint64_t)id >> DX_CBITS;
  if (c < d[2]) {
    const uint64_t *e = d + x->dirw + 2 * c;
    uint64_t i = (uint64_t)id & (DX_C - 1);
    if (i < DX_HI(e[1])) {
      if (NEVER(e[0] & DX_REF)) {
        if (bias) return ref_raw(x, d, e, c, i, 0, bias);
        uint64_t *b = tbuf ? tbuf : tslot();
        return b ? ref_slot(x, d, e, c, i, b, 0, 0) : DX_BAD;
      }
      /* A slot that cannot be fetched reads as damaged: never a guess. */
      /* (A local map needs no fill: no call.) */
      if (NEVER(x->filled != NULL) && !readable(x, e[0] + i * x->wsb, x->wsb)) return DX_BAD;
      const uint64_t *s = (const uint64_t *)(base + e[0] + i * x->wsb);
      if (s[x->nw]) return verify(x, d, s, id, 0);
    }
  }
  const uint64_t *sg = d + x->dirw + 2 * d[2];
  for (uint64_t k = 0; k < d[3]; k++) {
    const uint64_t *s = seg_find(x, base, sg[2 * k], sg[2 * k + 1], id);
    if (s == DX_BAD) return s;
    if (s) return verify(x, d, s, id, 0);
  }
  return NULL;
}

int dx_unfetched(const Dx *x, int64_t id, char *why, size_t n) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  uint64_t c = (uint64_t)id >> DX_CBITS;
  const uint64_t *e = d && id >= 0 && c < d[2] ? d + x->dirw + 2 * c : NULL;
  if (e && (e[0] & DX_REF)) {
    /* A referenced chunk whose part's index file cannot be used (a failure
    ** for what the file holds is remembered, so asking again says the
    ** same; one for want of a resource is tried again, and may pass now). */
    if (ref_get(x, d, DX_REF_K(e[0]))) return 0;
    snprintf(why, n, "%s", ref_why(x, d, DX_REF_K(e[0])));
    return 2;
  }
  if (!atomic_load(&x->unfetched)) return 0;
  /* Whether ID's own slot is what cannot be fetched (asked again: an
  ** earlier failure says nothing of this entry); an id in a segment, whose
  ** search touches many slots, is taken as unfetched. */
  if (e) {
    uint64_t i = (uint64_t)id & (DX_C - 1);
    if (i < e[1] && readable(x, e[0] + i * x->wsb, x->wsb)) return 0;
  }
  pdb_os_errmsg(x->f, why, n);
  return 1;
}

const uint64_t *dx_find(const Dx *x, int64_t id) {
  /* Acquire: pairs with dx_publish's release, so the records the
  ** directory names are seen whole. */
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  /* The thread's buffer only for a version-3 index (a reference). */
  return find_in(x, d, id, NULL, NULL);   /* (a reference: the thread's buffer, taken only then) */
}

const uint64_t *dx_find_memo(const Dx *x, int64_t id, DxMemo *m) {
  /* Acquire, as dx_find.  The same directory pointer is the same snapshot:
  ** a directory in force is never written over (invariant 1: later ones
  ** are appended past it, and a rewrite makes a new Dx), so a slot found
  ** and checked through it reads the same until the pointer changes. */
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  if (d == m->dir && id == m->id && d) return m->slot;
  uint64_t bias = 0;
  const uint64_t *s = find_in(x, d, id, NULL, &bias);
  if (s && s != DX_BAD) {
    m->dir = d;
    m->id = id;
    m->slot = s;
    m->bias = bias;
  }
  return s;
}

uint64_t dx_count(const Dx *x) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  return d ? d[4] : 0;
}

int64_t dx_next_id(const Dx *x) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  return d ? (int64_t)d[6] : 0;
}

int64_t dx_chunk_end(const Dx *x) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  return d ? (int64_t)(d[2] * DX_C) : 0;
}

uint64_t dx_id(const Dx *x) { return x->fid; }

void dx_space(const Dx *x, uint64_t *dead, uint64_t *live) {
  *live = x->live;
  *dead = x->end > x->live + DX_HDR ? x->end - x->live - DX_HDR : 0;
}

int dx_scan(const Dx *x, int (*xcb)(void *ctx, int64_t id, const uint64_t *slot), void *ctx) {
  return dx_scan_range(x, 0, INT64_MAX, xcb, ctx);
}

int dx_scan_range(const Dx *x, int64_t lo, int64_t last, int (*xcb)(void *ctx, int64_t id, const uint64_t *slot),
                  void *ctx) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  if (!d) return PAGEDB_OK;
  const uint8_t *base = (const uint8_t *)d - d[1];
  /* Chunks and slots below LO are not read at all: a part whose ids start
  ** high has a chunk of empty slots before them (and no page of them need
  ** be touched, or fetched). */
  if (last < lo || last < 0) return PAGEDB_OK;
  uint64_t ulo = lo > 0 ? (uint64_t)lo : 0, ulast = (uint64_t)last;
  uint64_t tbuf[DX_SLOT_WORDS];
  for (uint64_t c = ulo / DX_C; c < d[2] && c * DX_C <= ulast; c++) {
    const uint64_t *e = d + x->dirw + 2 * c;
    uint64_t i0 = c == ulo / DX_C ? ulo % DX_C : 0, i1 = DX_HI(e[1]);
    if (ulast - c * DX_C < i1) i1 = ulast - c * DX_C + 1;
    if (i0 >= i1) continue;
    if (e[0] & DX_REF) {
      /* A referenced chunk: each slot translated, valid during the call. */
      for (uint64_t i = i0; i < i1; i++) {
        const uint64_t *s = ref_slot(x, d, e, c, i, tbuf, 1, 0);
        if (!s) continue;
        int64_t id = (int64_t)(c * DX_C + i);
        if (s == DX_BAD) {
          char why[PDB_MSG_MAX];
          if (dx_unfetched(x, id, why, sizeof why) == 2)
            return pdb_err(x->db, NULL, PAGEDB_CORRUPT_INDEX, "index %s: the entry of sample %lld: %s", x->path,
                           (long long)id, why);
          return pdb_err(x->db, NULL, PAGEDB_CORRUPT_INDEX, "index %s: the entry of sample %lld is damaged (in part"
                         " %llu's index file)", x->path, (long long)id, (unsigned long long)DX_REF_K(e[0]));
        }
        int rc = xcb(ctx, id, s);
        if (rc != PAGEDB_OK) return rc;
      }
      continue;
    }
    if (!readable(x, e[0] + i0 * x->wsb, (i1 - i0) * x->wsb))
      return pdb_err(x->db, NULL, PAGEDB_IOERR_REMOTE, "index %s: cannot fetch the entries of chunk %llu", x->path,
                     (unsigned long long)c);
    for (uint64_t i = i0; i < i1; i++) {
      const uint64_t *s = (const uint64_t *)(base + e[0] + i * x->wsb);
      if (!s[x->nw]) continue;
      int64_t id = (int64_t)(c * DX_C + i);
      if (verify(x, d, s, id, 1) == DX_BAD)
        return pdb_err(x->db, NULL, PAGEDB_CORRUPT_INDEX, "index %s: the entry of sample %lld is damaged", x->path,
                       (long long)id);
      int rc = xcb(ctx, id, s);
      if (rc != PAGEDB_OK) return rc;
    }
  }
  const uint64_t *sg = d + x->dirw + 2 * d[2];
  for (uint64_t k = 0; k < d[3]; k++) {
    if (!readable(x, sg[2 * k], sg[2 * k + 1] * x->wsb))
      return pdb_err(x->db, NULL, PAGEDB_IOERR_REMOTE, "index %s: cannot fetch the entries of segment %llu", x->path,
                     (unsigned long long)k);
    for (uint64_t i = 0; i < sg[2 * k + 1]; i++) {
      const uint64_t *s = seg_slot(x, base, sg[2 * k], i);
      if (verify(x, d, s, (int64_t)s[0], 1) == DX_BAD || (i && (int64_t)s[-(int)x->nw - 1] >= (int64_t)s[0]))
        return pdb_err(x->db, NULL, PAGEDB_CORRUPT_INDEX, "index %s: entry %llu of segment %llu is damaged", x->path,
                       (unsigned long long)i, (unsigned long long)k);
      if ((int64_t)s[0] < lo || (int64_t)s[0] > last) continue;
      int rc = xcb(ctx, (int64_t)s[0], s);
      if (rc != PAGEDB_OK) return rc;
    }
  }
  return PAGEDB_OK;
}

/* --- the file -------------------------------------------------------- */

static int ioerr(Dx *x, pdb_msg *m, int rc, const char *what) {
  char why[PDB_MSG_MAX];
  if (x->f) pdb_os_errmsg(x->f, why, sizeof why);   /* a remote server's answer */
  if (x->f && why[0]) return pdb_err(x->db, m, rc, "index %s: %s: %s", x->tmp ? x->tmp : x->path, what, why);
  int e = x->f ? pdb_os_errno(x->f) : 0;
  if (!e) e = rc == PAGEDB_FULL ? ENOSPC : EIO;
  return pdb_err(x->db, m, rc, "index %s: %s: %s", x->tmp ? x->tmp : x->path, what, strerror(e));
}

static void encode_header(const Dx *x, const uint8_t uuid[16], uint8_t h[DX_HDR]) {
  memset(h, 0, DX_HDR);
  memcpy(h, DX_MAGIC, 16);
  pdb_put32(h + 16, (uint32_t)x->version);
  pdb_put32(h + 20, (uint32_t)x->nw + 1);
  pdb_put32(h + 24, (uint32_t)x->nfield);
  pdb_put32(h + 28, DX_CBITS);
  memcpy(h + 32, uuid, 16);
  pdb_put64(h + 48, x->fid);
  pdb_put64(h + 56, pdb_checksum(h, 56));
}

/* Make the writer's map cover bytes [0, END). */
static int ensure_map(Dx *x, pdb_msg *m, uint64_t end) {
  if (end <= x->maplen) return PAGEDB_OK;
  uint64_t n = x->maplen ? 2 * (uint64_t)x->maplen : DX_WINDOW;
  while (n < end) n *= 2;
  const void *p;
  int rc = pdb_os_map(x->f, (size_t)n, &p);
  if (rc != PAGEDB_OK) return ioerr(x, m, rc, "cannot map it");
  if (x->map) {
    Retired *r = pdb_malloc(sizeof *r);
    if (!r) {
      pdb_os_unmap(x->f, p, (size_t)n);
      return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory mapping index %s", x->path);
    }
    *r = (Retired){ x->retired, x->map, x->maplen };
    x->retired = r;
  }
  x->map = p;
  x->maplen = (size_t)n;
  return PAGEDB_OK;
}

static Dx *dx_new(pagedb *db, const char *path, int nw, int nfield, const uint8_t *isbytes, const uint8_t *tokes,
                  int version) {
  assert(version >= 1 && version <= 3);
  Dx *x = pdb_calloc(1, sizeof *x);
  if (!x) return NULL;
  /* (Version 3 only: no other has a referenced chunk, check_dir.) */
  if (version >= 3) {
    if (pdb_table_reserve(&x->crefs, DX_CREFS * sizeof(DxCref), 0) != PAGEDB_OK) {
      pdb_free(x);
      return NULL;
    }
    x->cref = x->crefs.base;
  }
  pthread_mutex_init(&x->ref_mu, NULL);
  for (int f = 0; f < nfield && tokes && version >= 2; f++)
    if (tokes[f]) {
      x->tokes[f] = tokes[f];
      x->tf[x->ntf++] = (uint16_t)f;
    }
  if (x->ntf && !(x->tm = pdb_calloc((size_t)x->ntf, sizeof *x->tm))) {
    pdb_free(x);
    return NULL;
  }
  x->version = version;
  x->dirw = version >= 2 ? DX_DIRW2 : DX_DIRW;
  x->db = db;
  x->nw = nw;
  x->wsb = (uint64_t)(nw + 1) * 8;
  x->nfield = nfield;
  if (nfield) memcpy(x->isbytes, isbytes, (size_t)nfield);
  for (int f = 0; f < nfield; f++)
    if (isbytes[f]) x->bf[x->nbf++] = (uint16_t)f;
  x->end = DX_HDR;
  x->path = pdb_strdup(path);
  if (version >= 3 && x->path) x->wbuf = pdb_malloc(x->wsb);
  if (!x->path || (version >= 3 && !x->wbuf)) {
    pdb_free(x->wbuf);
    pdb_free(x->path);
    pdb_free(x);
    return NULL;
  }
  return x;
}

void dx_keep(Dx *x, Dx *older) {
  if (!older) return;
  assert(!older->older || older->older != x);
  Dx **p = &x->older;
  while (*p) p = &(*p)->older;
  *p = older;
}

void dx_close(Dx *x) {
  if (!x) return;
  dx_close(x->older);
  pdb_free((void *)x->filled);
  for (size_t i = 0; i < sizeof x->pmemo / sizeof x->pmemo[0]; i++)
    if (x->pmemo[i]) pdb_free((void *)x->pmemo[i]);
  if (x->map && !x->heap) pdb_os_unmap(x->f, x->map, x->maplen);
  if (x->heap) pdb_free((void *)x->map);
  for (size_t i = 0; i < sizeof x->rtab / sizeof x->rtab[0]; i++) {
    _Atomic(DxRef *) *leaf = x->rtab[i];
    for (size_t j = 0; leaf && j < DX_PMEMO; j++) ref_free(leaf[j]);
    pdb_free((void *)leaf);
  }
  pdb_table_release(&x->crefs);
  while (x->refs_old) {
    DxRef *n = x->refs_old->next;
    ref_free(x->refs_old);
    x->refs_old = n;
  }
  pthread_mutex_destroy(&x->ref_mu);
  pdb_free(x->wbuf);
  for (Retired *r = x->retired, *n; r; r = n) {
    n = r->next;
    pdb_os_unmap(x->f, r->p, r->n);
    pdb_free(r);
  }
  pdb_os_close(x->f);
  if (x->tmp && x->vfs) x->vfs->xDelete(x->vfs, x->tmp, 0);
  pdb_free(x->ch);
  pdb_free(x->sg);
  pdb_free(x->pc);
  pdb_free(x->tm);
  pdb_free(x->tmp);
  pdb_free(x->path);
  pdb_free(x);
}

/* Load the working state from the snapshot in force (or empty). */
static int load_work(Dx *x, pdb_msg *m) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_relaxed);
  uint64_t nch = d ? d[2] : 0, nsg = d ? d[3] : 0;
  if (nch > x->capch) {
    uint64_t *v = pdb_realloc(x->ch, 2 * nch * sizeof *v);
    if (!v) return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory loading index %s", x->path);
    x->ch = v;
    x->capch = nch;
  }
  if (nsg > x->capsg) {
    uint64_t *v = pdb_realloc(x->sg, 2 * nsg * sizeof *v);
    if (!v) return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory loading index %s", x->path);
    x->sg = v;
    x->capsg = nsg;
  }
  x->nch = nch;
  x->nsg = nsg;
  if (nch) memcpy(x->ch, d + x->dirw, 2 * nch * sizeof *d);
  if (nsg) memcpy(x->sg, d + x->dirw + 2 * nch, 2 * nsg * sizeof *d);
  uint64_t npc = d && x->version >= 2 ? d[10] : 0;
  if (npc > x->cappc) {
    uint64_t *v = pdb_realloc(x->pc, 2 * npc * sizeof *v);
    if (!v) return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory loading index %s", x->path);
    x->pc = v;
    x->cappc = npc;
  }
  x->npc = npc;
  if (npc) memcpy(x->pc, d + x->dirw + 2 * (nch + nsg), 2 * npc * sizeof *d);
  x->nparts = d && x->version >= 2 ? d[11] : 0;
  /* Token maps: the directory's (check_dir saw one per token field, or
  ** none). */
  x->tmaps = 0;
  if (d && x->ntf && d[12] == (uint64_t)x->ntf) {
    const uint64_t *e = d + x->dirw + 2 * (nch + nsg + npc);
    for (int k = 0; k < x->ntf; k++) memcpy(x->tm[k], e + 5 * k + 1, 4 * sizeof *d);
    x->tmaps = 1;
  }
  x->count = d ? d[4] : 0;
  x->live = d ? d[5] : 0;
  x->next = d ? d[6] : 0;
  x->end = d ? d[7] : DX_HDR;
  x->staged_dir = 0;
  return PAGEDB_OK;
}

int dx_create(pagedb *db, pdb_msg *m, pagedb_vfs *vfs, const char *path, const uint8_t uuid[16], int nw,
              int nfield, const uint8_t *isbytes, const uint8_t *tokes, int version, Dx **out) {
  *out = NULL;
  Dx *x = dx_new(db, path, nw, nfield, isbytes, tokes, version);
  if (x) x->tmp = pdb_malloc(strlen(path) + 5);
  if (!x || !x->tmp) {
    dx_close(x);
    return pdb_err(db, m, PAGEDB_NOMEM, "out of memory creating index %s", path);
  }
  sprintf(x->tmp, "%s.new", path);
  x->vfs = vfs;
  x->writable = 1;
  do pdb_random(&x->fid, sizeof x->fid), x->fid &= INT64_MAX;
  while (!x->fid);
  vfs->xDelete(vfs, x->tmp, 0);   /* a rewrite's leftover */
  int rc = pdb_os_open(vfs, x->tmp, PAGEDB_VFS_READWRITE | PAGEDB_VFS_CREATE | PAGEDB_VFS_PLAIN, &x->f);
  if (rc != PAGEDB_OK) {
    rc = pdb_err(db, m, rc, "cannot create index %s: %s", x->tmp, strerror(errno));
    x->f = NULL;
    pdb_free(x->tmp);
    x->tmp = NULL;          /* nothing to delete */
    dx_close(x);
    return rc;
  }
  uint8_t *h = pdb_malloc(DX_HDR);
  if (!h) rc = pdb_err(db, m, PAGEDB_NOMEM, "out of memory creating index %s", path);
  if (h) {
    encode_header(x, uuid, h);
    rc = pdb_os_write(x->f, h, DX_HDR, 0);
    if (rc != PAGEDB_OK) rc = ioerr(x, m, rc, "cannot write its header");
    pdb_free(h);
  }
  if (rc == PAGEDB_OK) rc = ensure_map(x, m, DX_HDR);
  if (rc != PAGEDB_OK) {
    dx_close(x);
    return rc;
  }
  *out = x;
  return PAGEDB_OK;
}

int dx_install(Dx *x, pdb_msg *m) {
  if (!x->tmp) return PAGEDB_OK;
  /* rename(2) directly, as vacuum.c does: the VFS has no rename. */
  if (rename(x->tmp, x->path) != 0)
    return pdb_err(x->db, m, PAGEDB_IOERR, "cannot rename %s to %s: %s", x->tmp, x->path, strerror(errno));
  pdb_free(x->tmp);
  x->tmp = NULL;
  pagedb_vfs *vfs = x->vfs;
  if (vfs->xSyncDir && vfs->xSyncDir(vfs, x->path) != PAGEDB_OK)
    return pdb_err(x->db, m, PAGEDB_IOERR_SYNC, "renamed %s, but cannot sync its directory: %s", x->path,
                   strerror(errno));
  return PAGEDB_OK;
}

/* --- open ------------------------------------------------------------ */

static uint64_t dir_magic(const Dx *x) {
  return x->version >= 3 ? DX_DIR_MAGIC3 : x->version == 2 ? DX_DIR_MAGIC2 : DX_DIR_MAGIC;
}

static int stale(Dx *x, pdb_msg *m, const char *fmt, const char *what) {
  return pdb_err(x->db, m, PAGEDB_CORRUPT_INDEX, "index %s: %s%s", x->path, fmt, what ? what : "");
}

/* Read and check the header of the open file; *FID receives its id. */
static int read_header(Dx *x, pdb_msg *m, const uint8_t uuid[16], uint64_t *fid) {
  uint8_t *h = pdb_malloc(DX_HDR);
  if (!h) return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory opening index %s", x->path);
  int rc = pdb_os_read(x->f, h, DX_HDR, 0);
  const char *bad = NULL;
  if (rc == PAGEDB_IOERR_SHORT_READ) bad = "shorter than its header";
  else if (rc != PAGEDB_OK) rc = ioerr(x, m, rc, "cannot read its header");
  else if (memcmp(h, DX_MAGIC, 16) != 0) bad = "not an index file (bad magic)";
  else if (pdb_get64(h + 56) != pdb_checksum(h, 56)) bad = "header checksum mismatch";
  else if (pdb_get32(h + 16) != (uint32_t)x->version)
    bad = pdb_get32(h + 16) >= 1 && pdb_get32(h + 16) <= 3 ? "its version does not match the catalog's features"
                                                           : "unknown version";
  else if (memcmp(h + 32, uuid, 16) != 0) bad = "it belongs to another dataset (uuid)";
  else if (pdb_get32(h + 20) != (uint32_t)x->nw + 1 || pdb_get32(h + 24) != (uint32_t)x->nfield
           || pdb_get32(h + 28) != DX_CBITS)
    bad = "its slots do not fit the schema";
  *fid = pdb_get64(h + 48);
  pdb_free(h);
  if (bad) return stale(x, m, bad, NULL);
  return rc == PAGEDB_IOERR_SHORT_READ ? PAGEDB_OK : rc;
}

/* Check directory record D at OFF of a file in force of LEN bytes. */
static int check_dir(Dx *x, pdb_msg *m, const uint64_t *d, uint64_t off, const DxMeta *meta) {
  uint64_t len = meta->len;
  if (d[0] != dir_magic(x) || d[1] != off)
    return stale(x, m, "no directory record where the catalog says", NULL);
  uint64_t room = (len - off) / 8;
  if ((uint64_t)x->dirw + 1 > room) return stale(x, m, "the directory record runs past the end", NULL);
  uint64_t npc = x->version >= 2 ? d[10] : 0, nt = x->version >= 2 ? d[12] : 0;
  if (d[2] > room || d[3] > room || npc > room || nt > room
      || x->dirw + 2 * (d[2] + d[3] + npc) + 5 * nt + 1 > room)
    return stale(x, m, "the directory record runs past the end", NULL);
  uint64_t words = x->dirw + 2 * (d[2] + d[3] + npc) + 5 * nt;
  if (d[words] != pdb_checksum(d, words * 8)) return stale(x, m, "directory checksum mismatch", NULL);
  if (d[7] != len || off + (words + 1) * 8 != len) return stale(x, m, "the directory's length disagrees", NULL);
  if (d[4] != meta->samples || d[9] != meta->pages)
    return stale(x, m, "its counts disagree with the catalog", NULL);
  if (x->version >= 2) {
    uint64_t np = d[11];
    if (np != meta->parts || np > DX_PART_MAX || npc != (np + DX_PCHUNK - 1) / DX_PCHUNK)
      return stale(x, m, "its parts disagree with the catalog", NULL);
    if (d[13]) return stale(x, m, "directory word 13 is not zero", NULL);
    /* Invariant 5: one map per token field, in field order, or none. */
    if (nt && nt != (uint64_t)x->ntf) return stale(x, m, "its token maps disagree with the schema's token fields", NULL);
    for (uint64_t k = 0; k < nt; k++) {
      const uint64_t *e = d + x->dirw + 2 * (d[2] + d[3] + npc) + 5 * k;
      uint64_t o = e[1], cap = e[2], cnt = e[3];
      int bad = e[0] != x->tf[k] || cnt > cap
             || (cap ? o % 8 || o < DX_HDR || o > off || cap > (off - o) / 16 : o != 0);
      if (bad) return stale(x, m, "a token map lies outside the file or is not its field's", NULL);
    }
    for (uint64_t q = 0; q < npc; q++) {
      const uint64_t *e = d + x->dirw + 2 * (d[2] + d[3]) + 2 * q;
      uint64_t hi = q + 1 < npc ? DX_PCHUNK : np - (uint64_t)DX_PCHUNK * q;
      if (e[1] != hi || e[0] % 8 || e[0] < DX_HDR || e[0] > off || hi * DX_PRECB > off - e[0])
        return stale(x, m, "a part chunk lies outside the file", NULL);
    }
  }
  for (uint64_t c = 0; c < d[2]; c++) {
    const uint64_t *e = d + x->dirw + 2 * c;
    if (x->version >= 3 && (e[0] & DX_REF)) {
      /* A reference: its part exists; its copy's bounds are checked
      ** against the part's file when a lookup first opens it (ref_slot). */
      if (DX_REF_K(e[0]) >= d[11] || DX_HI(e[1]) > DX_C || !DX_HI(e[1]))
        return stale(x, m, "a chunk entry references no part of it", NULL);
      continue;
    }
    if (e[1] > DX_C || (e[1] && (e[0] % 8 || e[0] < DX_HDR || e[0] > off || e[1] * x->wsb > off - e[0])))
      return stale(x, m, "a chunk lies outside the file", NULL);
  }
  for (uint64_t k = 0; k < d[3]; k++) {
    const uint64_t *e = d + x->dirw + 2 * d[2] + 2 * k;
    if (!e[1] || e[0] % 8 || e[0] < DX_HDR || e[0] > off || e[1] > (off - e[0]) / x->wsb)
      return stale(x, m, "a segment lies outside the file", NULL);
  }
  return PAGEDB_OK;
}

static int open_file(Dx *x, pdb_msg *m, pagedb_vfs *vfs, const char *path, const uint8_t uuid[16], uint64_t *fid) {
  int exists = 0;
  vfs->xAccess(vfs, path, &exists);
  if (!exists) return pdb_err(x->db, m, PAGEDB_CORRUPT_INDEX, "index %s: missing", path);
  int rc = pdb_os_open(vfs, path, (x->writable ? PAGEDB_VFS_READWRITE : PAGEDB_VFS_READONLY) | PAGEDB_VFS_PLAIN, &x->f);
  if (rc != PAGEDB_OK) {
    x->f = NULL;
    return pdb_err(x->db, m, rc, "cannot open index %s: %s", path, strerror(errno));
  }
  return read_header(x, m, uuid, fid);
}

int dx_open(pagedb *db, pdb_msg *m, pagedb_vfs *vfs, const char *path, const uint8_t uuid[16], int nw,
            int nfield, const uint8_t *isbytes, const uint8_t *tokes, const DxMeta *meta, int writable, int version,
            Dx **out) {
  *out = NULL;
  Dx *x = dx_new(db, path, nw, nfield, isbytes, tokes, version);
  if (!x) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening index %s", path);
  x->writable = writable;
  x->vfs = vfs;
  int rc;
  uint64_t fid = 0;
  if (!meta->id) {
    rc = stale(x, m, "the catalog records no index (a dataset of the previous format, or an index made stale)",
               NULL);
  } else {
    rc = open_file(x, m, vfs, path, uuid, &fid);
    if ((rc == PAGEDB_OK && fid != meta->id) || rc == PAGEDB_CORRUPT_INDEX) {
      /* A rewrite whose catalog commit landed but whose rename did not. */
      char *tmp = pdb_malloc(strlen(path) + 5);
      if (tmp) {
        sprintf(tmp, "%s.new", path);
        pdb_msg scratch;
        Dx *y = dx_new(db, path, nw, nfield, isbytes, tokes, version);
        uint64_t yid = 0;
        if (y) y->writable = writable;
        if (y && open_file(y, &scratch, vfs, tmp, uuid, &yid) == PAGEDB_OK && yid == meta->id
            && (!writable || rename(tmp, path) == 0)) {
          if (writable && vfs->xSyncDir) vfs->xSyncDir(vfs, path);
          pdb_os_close(x->f);
          x->f = y->f;
          y->f = NULL;
          fid = yid;
          rc = PAGEDB_OK;
        }
        dx_close(y);
        pdb_free(tmp);
      }
      if (rc == PAGEDB_OK && fid != meta->id) rc = stale(x, m, "stale: its id is not the one the catalog records", NULL);
    }
  }
  x->fid = fid;
  uint64_t size = 0;
  if (rc == PAGEDB_OK && pdb_os_size(x->f, &size) != PAGEDB_OK) rc = ioerr(x, m, PAGEDB_IOERR_FSTAT, "cannot stat it");
  if (rc == PAGEDB_OK && (size < meta->len || meta->len < DX_HDR || meta->dir < DX_HDR || meta->dir % 8
                          || meta->dir > meta->len - ((uint64_t)x->dirw + 1) * 8))
    rc = stale(x, m, size < meta->len ? "truncated" : "the catalog's record of it is impossible", NULL);
  if (rc == PAGEDB_OK && writable) {
    rc = ensure_map(x, m, meta->len);
  } else if (rc == PAGEDB_OK && pdb_os_fills_maps(x->f)) {
    /* Filled on demand (readable): the directory now, each slot when looked
    ** up.  The map covers the whole file, page-rounded, so that the
    ** backend can place its last chunk whole. */
    const void *p;
    uint64_t n = (size + 4095) & ~(uint64_t)4095;
    x->nfill = (n + DX_FILL - 1) / DX_FILL;
    if (!(x->filled = pdb_calloc(x->nfill ? x->nfill : 1, 1))) {
      rc = pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening index %s", path);
    } else if ((rc = pdb_os_map_lazy(x->f, (size_t)n, &p)) != PAGEDB_OK) {
      rc = ioerr(x, m, rc, "cannot map it");
    } else {
      x->map = p;
      x->maplen = (size_t)n;
      if (!readable(x, meta->dir, meta->len - meta->dir)) rc = ioerr(x, m, PAGEDB_IOERR_REMOTE, "cannot fetch its directory");
    }
  } else if (rc == PAGEDB_OK) {
    const void *p;
    if (pdb_os_map(x->f, (size_t)meta->len, &p) == PAGEDB_OK) {
      x->map = p;
      x->maplen = (size_t)meta->len;
    } else {
      /* No map: one read of the bytes in force, no per-sample work. */
      uint8_t *buf = pdb_malloc((size_t)meta->len);
      if (!buf) rc = pdb_err(db, m, PAGEDB_NOMEM, "out of memory reading index %s", path);
      else if ((rc = pdb_os_read(x->f, buf, (size_t)meta->len, 0)) != PAGEDB_OK) rc = ioerr(x, m, rc, "cannot read it");
      if (rc == PAGEDB_OK) {
        x->map = buf;
        x->maplen = (size_t)meta->len;
        x->heap = 1;
      } else {
        pdb_free(buf);
      }
    }
  }
  if (rc == PAGEDB_OK) rc = check_dir(x, m, (const uint64_t *)(x->map + meta->dir), meta->dir, meta);
  if (rc == PAGEDB_OK) {
    atomic_store_explicit(&x->snap, (const uint64_t *)(x->map + meta->dir), memory_order_release);
    if (writable) rc = load_work(x, m);
  }
  if (rc != PAGEDB_OK) {
    dx_close(x);
    return rc;
  }
  *out = x;
  return PAGEDB_OK;
}

/* --- commit ---------------------------------------------------------- */

static int by_change_id(const void *a, const void *b) {
  int64_t x = ((const DxChange *)a)->id, y = ((const DxChange *)b)->id;
  return x < y ? -1 : x > y;
}

/* Written bytes this many at a time are handed to writeback as they come
** (PAGEDB_ADVISE_WRITEOUT), so that the commit's sync, which must wait
** for all of them, finds most already on their way: a million samples'
** index (80 MB) took 0.12 s to sync after it was written, on this VM's
** disk, time the commit can spend building the rest instead. */
#define DX_WRITEOUT ((uint64_t)8 << 20)

static int put(Dx *x, pdb_msg *m, const void *buf, uint64_t n, uint64_t off) {
  int rc = pdb_os_write(x->f, buf, (size_t)n, off);
  if (rc != PAGEDB_OK) return ioerr(x, m, rc, "cannot write it");
  if (x->wo_hi == x->wo_lo || off < x->wo_lo) x->wo_lo = off;
  if (off + n > x->wo_hi) x->wo_hi = off + n;
  if (x->wo_hi - x->wo_lo >= DX_WRITEOUT) {
    pdb_os_writeout(x->f, x->wo_lo, x->wo_hi - x->wo_lo);
    x->wo_lo = x->wo_hi = 0;
  }
  return PAGEDB_OK;
}

/* Fill disk slot T from change C (or zero it for a deletion). */
static void fill(const Dx *x, uint64_t *t, const DxChange *c) {
  if (!c->slot) {
    memset(t, 0, x->wsb);
    return;
  }
  memcpy(t, c->slot, (size_t)x->nw * 8);
  t[0] = (uint64_t)c->id;
  t[1] += c->add;
  t[x->nw] = slot_sum(t, x->nw);
}

static int grow_pairs(Dx *x, pdb_msg *m, uint64_t **v, uint64_t *cap, uint64_t want) {
  if (want <= *cap) return PAGEDB_OK;
  uint64_t n = *cap ? *cap : 16;
  while (n < want) n *= 2;
  uint64_t *p = pdb_realloc(*v, 2 * n * sizeof *p);
  if (!p) return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory updating index %s", x->path);
  memset(p + 2 * *cap, 0, 2 * (n - *cap) * sizeof *p);
  *v = p;
  *cap = n;
  return PAGEDB_OK;
}

/* Working lookup: the slot of ID in chunk or segment, or NULL; *SEG the
** segment's number (or -1 for a chunk).  The map covers x->end. */
static const uint64_t *find_work(const Dx *x, int64_t id, int64_t *seg) {
  uint64_t c = (uint64_t)id >> DX_CBITS, i = (uint64_t)id & (DX_C - 1);
  *seg = -1;
  if (c < x->nch && i < DX_HI(x->ch[2 * c + 1])) {
    if (x->ch[2 * c] & DX_REF) {
      /* Translated into the writer's buffer (DX_BAD: the part's file). */
      const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_relaxed);
      return x->wbuf ? ref_slot(x, d, &x->ch[2 * c], c, i, x->wbuf, 0, 0) : DX_BAD;
    }
    const uint64_t *s = (const uint64_t *)(x->map + x->ch[2 * c] + i * x->wsb);
    if (s[x->nw]) return s;
  }
  for (uint64_t k = 0; k < x->nsg; k++) {
    const uint64_t *s = seg_find(x, x->map, x->sg[2 * k], x->sg[2 * k + 1], id);
    if (s) {
      *seg = (int64_t)k;
      return s;
    }
  }
  return NULL;
}

/* Chunk C takes the sorted changes CH[0..N): in place past HI when they
** are all new ids there, else as a new copy. */
static int apply_chunk(Dx *x, pdb_msg *m, uint64_t c, const DxChange *ch, size_t n) {
  int rc = grow_pairs(x, m, &x->ch, &x->capch, c + 1);
  if (rc != PAGEDB_OK) return rc;
  if (c >= x->nch) x->nch = c + 1;
  uint64_t base = x->ch[2 * c], hi = DX_HI(x->ch[2 * c + 1]);
  int ref = (base & DX_REF) != 0;
  uint64_t first = (uint64_t)ch[0].id & (DX_C - 1), last = (uint64_t)ch[n - 1].id & (DX_C - 1);
  uint64_t newhi = last + 1 > hi ? last + 1 : hi;
  int inplace = hi > 0 && first >= hi && !ref;
  uint64_t from = inplace ? hi : 0;
  uint64_t *buf = pdb_calloc(newhi - from, x->wsb);
  if (!buf) return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory updating index %s", x->path);
  if (ref) {
    /* A referenced chunk becomes an own copy: its slots translated (the
    ** part's file is never written). */
    const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_relaxed);
    for (uint64_t i = 0; i < hi; i++) {
      const uint64_t *s = ref_slot(x, d, &x->ch[2 * c], c, i, buf + i * (x->wsb / 8), 0, 1);
      if (s == DX_BAD) {
        pdb_free(buf);
        return pdb_err(x->db, m, PAGEDB_CORRUPT_INDEX, "index %s: cannot copy chunk %llu from its part: %s", x->path,
                       (unsigned long long)c, ref_why(x, d, DX_REF_K(x->ch[2 * c])));
      }
      if (!s) memset(buf + i * (x->wsb / 8), 0, x->wsb);
    }
  } else if (!inplace && hi) {
    memcpy(buf, x->map + base, hi * x->wsb);
  }
  for (size_t i = 0; i < n; i++) {
    uint64_t *t = buf + (((uint64_t)ch[i].id & (DX_C - 1)) - from) * (x->wsb / 8);
    if (ch[i].slot && !t[x->nw]) x->count++;
    else if (!ch[i].slot && t[x->nw]) x->count--;
    fill(x, t, &ch[i]);
  }
  if (inplace) {
    rc = put(x, m, buf, (newhi - hi) * x->wsb, base + hi * x->wsb);
  } else {
    rc = put(x, m, buf, newhi * x->wsb, x->end);
    if (rc == PAGEDB_OK) {
      if (hi && !ref) x->live -= DX_C * x->wsb;
      x->live += DX_C * x->wsb;
      x->ch[2 * c] = x->end;
      x->end += DX_C * x->wsb;   /* room to grow in place; a hole until written */
    }
  }
  if (rc == PAGEDB_OK) x->ch[2 * c + 1] = newhi;
  pdb_free(buf);
  return rc;
}

/* Append a segment of N disk slots BUF (sorted) as segment number K (K ==
** x->nsg: a new one). */
static int put_segment(Dx *x, pdb_msg *m, const uint64_t *buf, uint64_t n, uint64_t k) {
  int rc = grow_pairs(x, m, &x->sg, &x->capsg, x->nsg + 1);
  if (rc == PAGEDB_OK && n) rc = put(x, m, buf, n * x->wsb, x->end);
  if (rc != PAGEDB_OK) return rc;
  if (k < x->nsg) x->live -= x->sg[2 * k + 1] * x->wsb;
  else x->nsg++;
  x->sg[2 * k] = x->end;
  x->sg[2 * k + 1] = n;
  x->live += n * x->wsb;
  x->end += n * x->wsb;
  return PAGEDB_OK;
}

/* Segment K takes the sorted changes CH[0..N) (deletions and changes of
** ids it holds, or, for K == x->nsg, new ids). */
static int apply_segment(Dx *x, pdb_msg *m, uint64_t k, const DxChange *ch, size_t n) {
  uint64_t old = k < x->nsg ? x->sg[2 * k + 1] : 0, off = k < x->nsg ? x->sg[2 * k] : 0;
  uint64_t w = x->wsb / 8, j = 0, o = 0;
  uint64_t *buf = pdb_malloc((old + n) * x->wsb + 8);
  if (!buf) return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory updating index %s", x->path);
  for (size_t i = 0; i <= n; i++) {
    int64_t id = i < n ? ch[i].id : INT64_MAX;
    while (j < old && (int64_t)seg_slot(x, x->map, off, j)[0] < id) memcpy(buf + o++ * w, seg_slot(x, x->map, off, j++), x->wsb);
    if (i == n) break;
    if (j < old && (int64_t)seg_slot(x, x->map, off, j)[0] == id) j++, x->count--;   /* replaced or deleted */
    if (ch[i].slot) fill(x, buf + o++ * w, &ch[i]), x->count++;
  }
  int rc;
  if (o == 0 && k < x->nsg) {
    x->live -= old * x->wsb;
    memmove(x->sg + 2 * k, x->sg + 2 * k + 2, (x->nsg - k - 1) * 2 * sizeof *x->sg);
    x->nsg--;
    rc = PAGEDB_OK;
  } else {
    rc = o ? put_segment(x, m, buf, o, k) : PAGEDB_OK;
  }
  pdb_free(buf);
  return rc;
}

/* The binary counter: merge the last two segments while the older is at
** most twice the size of the newer. */
static int merge_segments(Dx *x, pdb_msg *m) {
  int rc = PAGEDB_OK;
  while (rc == PAGEDB_OK && x->nsg >= 2 && x->sg[2 * (x->nsg - 2) + 1] <= 2 * x->sg[2 * (x->nsg - 1) + 1]) {
    uint64_t a = x->sg[2 * (x->nsg - 2)], na = x->sg[2 * (x->nsg - 2) + 1];
    uint64_t b = x->sg[2 * (x->nsg - 1)], nb = x->sg[2 * (x->nsg - 1) + 1];
    uint64_t w = x->wsb / 8, i = 0, j = 0, o = 0;
    rc = ensure_map(x, m, x->end);
    uint64_t *buf = rc == PAGEDB_OK ? pdb_malloc((na + nb) * x->wsb) : NULL;
    if (rc == PAGEDB_OK && !buf) rc = pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory updating index %s", x->path);
    if (rc != PAGEDB_OK) break;
    while (i < na || j < nb) {
      const uint64_t *s = j >= nb || (i < na && (int64_t)seg_slot(x, x->map, a, i)[0] < (int64_t)seg_slot(x, x->map, b, j)[0])
                        ? seg_slot(x, x->map, a, i++) : seg_slot(x, x->map, b, j++);
      memcpy(buf + o++ * w, s, x->wsb);
    }
    x->live -= (na + nb) * x->wsb;
    x->nsg -= 2;
    rc = put_segment(x, m, buf, o, x->nsg);
    pdb_free(buf);
  }
  return rc;
}

/* 1 + the largest id in the working state. */
static uint64_t work_next(const Dx *x) {
  uint64_t next = 0;
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_relaxed);
  for (uint64_t c = x->nch; c-- > 0 && !next;) {
    for (uint64_t i = DX_HI(x->ch[2 * c + 1]); i-- > 0;) {
      if (x->ch[2 * c] & DX_REF) {
        /* A reference: its part's slot, or the whole chunk when the
        ** part's file cannot be read (an upper bound: ids are never
        ** reused below it). */
        DxRef *ref = ref_get(x, d, DX_REF_K(x->ch[2 * c]));
        const uint64_t *s = ref ? (const uint64_t *)(ref->map + DX_REF_OFF(x->ch[2 * c]) + i * x->wsb) : NULL;
        if (!s || s[x->nw]) {
          next = c * DX_C + i + 1;
          break;
        }
        continue;
      }
      if (((const uint64_t *)(x->map + x->ch[2 * c] + i * x->wsb))[x->nw]) {
        next = c * DX_C + i + 1;
        break;
      }
    }
  }
  for (uint64_t k = 0; k < x->nsg; k++) {
    uint64_t id = seg_slot(x, x->map, x->sg[2 * k], x->sg[2 * k + 1] - 1)[0];
    if (id + 1 > next) next = id + 1;
  }
  return next;
}

/* --- token maps (version 2) ------------------------------------------- */

/* The check word of a map: a serial hash of its entries, extended entry by
** entry, so an append continues it from the directory's word. */
static uint64_t tok_sum0(int field) { return 0x6a09e667f3bcc909ull ^ (uint64_t)field; }

static inline uint64_t tok_sum(uint64_t h, const uint64_t e[2]) {
  h = (h ^ e[0]) * 0xff51afd7ed558ccdull;
  h ^= h >> 32;
  h = (h ^ e[1]) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

/* The tokens of field F in slot S (0: no value, or an empty one). */
static uint64_t tok_len(const Dx *x, const uint64_t *s, int f) {
  if (!s || !slot_has(s, f)) return 0;
  return slot_get(s, x->nfield, f) / x->tokes[f];
}

/* A change of one document of token field K in a commit: NOLD tokens
** before, NNEW after (0: none). */
typedef struct TokCh {
  int k;
  int64_t id;
  uint64_t nold, nnew;
} TokCh;

/* Write map K anew after the bytes in force: N entries E (in id order),
** CAPACITY max(1024, 2N), or no record for N == 0. */
static int tok_copy(Dx *x, pdb_msg *m, int k, const uint64_t *e, uint64_t n) {
  uint64_t *t = x->tm[k], cap = n ? (n < 512 ? 1024 : 2 * n) : 0;
  int rc = n ? put(x, m, e, n * 16, x->end) : PAGEDB_OK;
  if (rc != PAGEDB_OK) return rc;
  x->live -= t[1] * 16;
  x->live += cap * 16;
  t[0] = n ? x->end : 0;
  t[1] = cap;
  t[2] = n;
  t[3] = tok_sum0(x->tf[k]);
  for (uint64_t i = 0; i < n; i++) t[3] = tok_sum(t[3], e + 2 * i);
  x->end += cap * 16;       /* room to append in place; a hole until written */
  return PAGEDB_OK;
}

static int tok_big(Dx *x, pdb_msg *m, int k) {
  return pdb_err(x->db, m, PAGEDB_TOOBIG, "index %s: the token map of field %d passes 2^63-1 tokens", x->path,
                 x->tf[k]);
}

/* Map K takes the changes C[0..N) (in id order): appended in place when
** they are all new documents past its last id and fit, else a new copy. */
static int tok_apply(Dx *x, pdb_msg *m, int k, const TokCh *c, size_t n) {
  uint64_t *t = x->tm[k], cnt = t[2];
  const uint64_t *old = (const uint64_t *)(x->map + t[0]);
  uint64_t lastend = cnt ? old[2 * (cnt - 1)] : 0;
  int64_t lastid = cnt ? (int64_t)old[2 * (cnt - 1) + 1] : -1;
  int append = c[0].id > lastid;
  for (size_t i = 0; i < n && append; i++) append = c[i].nold == 0;
  uint64_t *buf = pdb_malloc(((append ? 0 : cnt) + n) * 16 + 16);
  if (!buf) return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory updating index %s", x->path);
  uint64_t o = 0, end = 0;
  int rc = PAGEDB_OK;
  if (append) {
    for (size_t i = 0; i < n && rc == PAGEDB_OK; i++) {
      assert(c[i].nnew > 0 && (i == 0 || c[i - 1].id < c[i].id));
      if (c[i].nnew > (uint64_t)INT64_MAX - lastend) rc = tok_big(x, m, k);
      lastend += c[i].nnew;
      buf[2 * o] = lastend;
      buf[2 * o++ + 1] = (uint64_t)c[i].id;
    }
    if (rc == PAGEDB_OK && cnt + o <= t[1]) {
      rc = put(x, m, buf, o * 16, t[0] + cnt * 16);
      for (uint64_t i = 0; i < o && rc == PAGEDB_OK; i++) t[3] = tok_sum(t[3], buf + 2 * i);
      if (rc == PAGEDB_OK) t[2] = cnt + o;
    } else if (rc == PAGEDB_OK) {
      uint64_t *all = pdb_malloc((cnt + o) * 16);
      if (!all) rc = pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory updating index %s", x->path);
      else {
        if (cnt) memcpy(all, old, cnt * 16);
        memcpy(all + 2 * cnt, buf, o * 16);
        rc = tok_copy(x, m, k, all, cnt + o);
        pdb_free(all);
      }
    }
    pdb_free(buf);
    return rc;
  }
  /* Merge the map with the changes, in id order, summing anew. */
  size_t j = 0;
  for (uint64_t i = 0, prev = 0; (i < cnt || j < n) && rc == PAGEDB_OK;) {
    int64_t id;
    uint64_t len;
    if (j < n && (i >= cnt || c[j].id <= (int64_t)old[2 * i + 1])) {
      if (i < cnt && c[j].id == (int64_t)old[2 * i + 1]) prev = old[2 * i++];
      else if (c[j].nold) {
        rc = pdb_err(x->db, m, PAGEDB_CORRUPT_INDEX, "index %s: the token map of field %d lacks sample %lld", x->path,
                     x->tf[k], (long long)c[j].id);
        break;
      }
      id = c[j].id;
      len = c[j++].nnew;
    } else {
      id = (int64_t)old[2 * i + 1];
      len = old[2 * i] - prev;
      prev = old[2 * i++];
    }
    if (!len) continue;
    assert(o == 0 || (int64_t)buf[2 * o - 1] < id);   /* invariant 5: ids increasing */
    if (len > (uint64_t)INT64_MAX - end) rc = tok_big(x, m, k);
    end += len;
    buf[2 * o] = end;
    buf[2 * o++ + 1] = (uint64_t)id;
  }
  if (rc == PAGEDB_OK) rc = tok_copy(x, m, k, buf, o);
  pdb_free(buf);
  return rc;
}

static int by_entry_id(const void *a, const void *b) {
  uint64_t x = ((const uint64_t *)a)[1], y = ((const uint64_t *)b)[1];
  return x < y ? -1 : x > y;
}

/* Every map built from the working state's slots (a new file, or one
** written before maps existed): O(documents log documents), once. */
static int tok_build(Dx *x, pdb_msg *m) {
  uint64_t *buf = pdb_malloc((x->count ? x->count : 1) * 16);
  if (!buf) return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory building the token maps of index %s", x->path);
  int rc = PAGEDB_OK;
  memset(x->tm, 0, (size_t)x->ntf * sizeof *x->tm);
  for (int k = 0; k < x->ntf && rc == PAGEDB_OK; k++) {
    int f = x->tf[k];
    uint64_t o = 0;
    for (uint64_t c = 0; c < x->nch; c++)
      for (uint64_t i = 0; i < x->ch[2 * c + 1]; i++) {
        /* (No chunk is referenced where a field is a token field.) */
        if (NEVER(x->ch[2 * c] & DX_REF)) break;
        const uint64_t *s = (const uint64_t *)(x->map + x->ch[2 * c] + i * x->wsb);
        uint64_t n = s[x->nw] ? tok_len(x, s, f) : 0;
        if (n && o < x->count) buf[2 * o] = n, buf[2 * o++ + 1] = c * DX_C + i;
      }
    for (uint64_t g = 0; g < x->nsg; g++)
      for (uint64_t i = 0; i < x->sg[2 * g + 1]; i++) {
        const uint64_t *s = seg_slot(x, x->map, x->sg[2 * g], i);
        uint64_t n = tok_len(x, s, f);
        if (n && o < x->count) buf[2 * o] = n, buf[2 * o++ + 1] = s[0];
      }
    int sorted = 1;
    for (uint64_t i = 1; i < o && sorted; i++) sorted = buf[2 * i + 1] > buf[2 * i - 1];
    if (!sorted) qsort(buf, o, 16, by_entry_id);
    uint64_t end = 0;
    for (uint64_t i = 0; i < o && rc == PAGEDB_OK; i++) {
      if (buf[2 * i] > (uint64_t)INT64_MAX - end) rc = tok_big(x, m, k);
      end += buf[2 * i];
      buf[2 * i] = end;
    }
    if (rc == PAGEDB_OK) rc = tok_copy(x, m, k, buf, o);
  }
  pdb_free(buf);
  if (rc == PAGEDB_OK) x->tmaps = 1;
  return rc;
}

static int by_tokch(const void *a, const void *b) {
  const TokCh *x = a, *y = b;
  if (x->k != y->k) return x->k < y->k ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* The maps' part of a dx_stage: the changes TC[0..N). */
static int tok_stage(Dx *x, pdb_msg *m, TokCh *tc, size_t n, int final) {
  if (!x->ntf) return PAGEDB_OK;
  if (!x->tmaps) return final ? tok_build(x, m) : PAGEDB_OK;
  if (n > 1) qsort(tc, n, sizeof *tc, by_tokch);
  int rc = PAGEDB_OK;
  for (size_t a = 0, b; a < n && rc == PAGEDB_OK; a = b) {
    for (b = a + 1; b < n && tc[b].k == tc[a].k; b++) {}
    rc = tok_apply(x, m, tc[a].k, tc + a, b - a);
  }
  return rc;
}

/*
** Sort the N changes CH by id.  They usually come sorted (one writer's
** pages, a part's listing): one pass sees it.  Else, when their ids are
** dense (chunks at most 4 times as many as they fill), by chunk -- a
** count, a scatter, then each chunk's put in order through their places
** in it: O(n), where a sort of a million changes written by two threads
** took 6% of a commit of parts; else a sort.
*/
void dx_sort(DxChange *ch, size_t n) {
  size_t i = 1;
  int64_t top = n ? ch[0].id : 0, low = top;
  for (; i < n && ch[i - 1].id < ch[i].id; i++) {}
  if (i >= n) return;
  for (size_t j = 0; j < n; j++) {
    if (ch[j].id > top) top = ch[j].id;
    if (ch[j].id < low) low = ch[j].id;
  }
  /* Chunks c0..c0+nc-1: a batch of a rebuild (BUILD_BATCH) is dense in
  ** its own span of ids, wherever that span starts. */
  uint64_t c0 = low >= 0 ? (uint64_t)low >> DX_CBITS : 0;
  uint64_t nc = low >= 0 ? ((uint64_t)top >> DX_CBITS) - c0 + 1 : 0;
  int dense = low >= 0 && n >= DX_C && nc <= 4 * (n / DX_C + 1);
  size_t *at = dense ? pdb_calloc(nc + 1, sizeof *at) : NULL;
  DxChange *t = at ? pdb_malloc(n * sizeof *t) : NULL;
  int32_t *pos = t ? pdb_malloc(DX_C * sizeof *pos) : NULL;
  if (!pos) {   /* sparse ids, or no memory for the buckets */
    pdb_free(t);
    pdb_free(at);
    pdb_sort(ch, n, sizeof *ch, by_change_id);
    return;
  }
  for (size_t j = 0; j < n; j++) at[((uint64_t)ch[j].id >> DX_CBITS) - c0 + 1]++;
  for (uint64_t c = 0; c < nc; c++) at[c + 1] += at[c];
  for (size_t j = 0; j < n; j++) t[at[((uint64_t)ch[j].id >> DX_CBITS) - c0]++] = ch[j];
  /* at[c] is now the end of chunk c's changes in T.  Each chunk's go back
  ** into CH in id order through their positions in the chunk; an id given
  ** twice sorts them instead, side by side, for dx_stage to refuse. */
  for (uint64_t c = 0, b = 0; c < nc; b = at[c++]) {
    size_t e = at[c], w = b;
    int twice = 0;
    memset(pos, 0xff, DX_C * sizeof *pos);
    for (size_t j = b; j < e && !twice; j++) {
      uint64_t k = (uint64_t)t[j].id & (DX_C - 1);
      twice = pos[k] >= 0;
      pos[k] = (int32_t)(j - b);
    }
    if (twice) {
      memcpy(ch + b, t + b, (e - b) * sizeof *t);
      pdb_sort(ch + b, e - b, sizeof *ch, by_change_id);
      continue;
    }
    for (uint64_t k = 0; k < DX_C && w < e; k++)
      if (pos[k] >= 0) ch[w++] = t[b + (size_t)pos[k]];
  }
  pdb_free(pos);
  pdb_free(t);
  pdb_free(at);
}

/* Invariant 3's base: the first chunk in use (FIRST), or C when none is,
** if below DX_BASE_MAX; else 0.  Ids that start high (a part of a larger
** dataset: its writer's ids are the dataset's) so fill chunks, not
** segments, at the price of a directory entry (16 bytes) for each chunk
** below them: at most 2 MiB.  Their chunks can then be referenced by the
** dataset the part is committed into (CHUNKS BY REFERENCE). */
#define DX_BASE_MAX ((uint64_t)1 << 17)
static uint64_t dense_base(uint64_t first, uint64_t c) {
  uint64_t b = first != UINT64_MAX ? first : c;
  return b < DX_BASE_MAX ? b : 0;
}

/* Room for one more change in list *V of N (capacity *CAP), and in its
** keys *K if K: 0 when there is no memory (the lists stay valid). */
static int room(DxChange **v, uint64_t **k, size_t n, size_t *cap) {
  if (n < *cap) return 1;
  size_t c = *cap ? 2 * *cap : 64;
  DxChange *nv = pdb_realloc(*v, c * sizeof *nv);
  if (!nv) return 0;
  *v = nv;
  uint64_t *nk = k ? pdb_realloc(*k, c * sizeof *nk) : NULL;
  if (k && !nk) return 0;
  if (k) *k = nk;
  *cap = c;
  return 1;
}

int dx_stage(Dx *x, pdb_msg *m, DxChange *ch, size_t n, int final, uint64_t pages, uint64_t data_end,
             DxMeta *out) {
  assert(x->writable);
  dx_sort(ch, n);
  int rc = ensure_map(x, m, x->end);
  if (rc != PAGEDB_OK) return rc;
  /* Sort the changes into chunk changes (CC), changes of segment ids (SC,
  ** with their segment numbers in SK) and new non-chunk ids (NC).  Most
  ** are chunk changes; the other two lists grow as they fill, so that a
  ** commit of a million samples allocates (and first touches) 24 MB here,
  ** not three times that. */
  DxChange *cc = pdb_malloc((n ? n : 1) * sizeof *cc), *sc = NULL, *nc = NULL;
  uint64_t *sk = NULL;
  size_t capsc = 0, capnc = 0;
  /* The documents of token fields the changes touch (TOKEN MAPS). */
  size_t ntc = 0;
  TokCh *tc = x->tmaps && n ? pdb_malloc(n * (size_t)x->ntf * sizeof *tc) : NULL;
  if (!cc || (x->tmaps && n && !tc)) {
    pdb_free(cc);
    pdb_free(tc);
    return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory updating index %s", x->path);
  }
  size_t ncc = 0, nsc = 0, nnc = 0;
  uint64_t inuse = 0, lastc = UINT64_MAX, first = UINT64_MAX;
  for (uint64_t c = 0; c < x->nch; c++)
    if (DX_HI(x->ch[2 * c + 1]) > 0) {
      if (first == UINT64_MAX) first = c;
      inuse++;
    }
  int delmax = 0;
  for (size_t i = 0; i < n && rc == PAGEDB_OK; i++) {
    int64_t id = ch[i].id, k;
    if (id < 0 || (i && id == ch[i - 1].id)) {
      rc = pdb_err(x->db, m, PAGEDB_MISUSE, "index %s: sample %lld changed twice in one commit", x->path, (long long)id);
      break;
    }
    const uint64_t *s = find_work(x, id, &k);
    uint64_t c = (uint64_t)id >> DX_CBITS;
    if (s == DX_BAD) {
      rc = pdb_err(x->db, m, PAGEDB_CORRUPT_INDEX, "index %s: the entry of sample %lld: %s", x->path, (long long)id,
                   ref_why(x, atomic_load_explicit(&x->snap, memory_order_relaxed), DX_REF_K(x->ch[2 * c])));
      break;
    }
    for (int t = 0; tc && t < x->ntf; t++) {
      uint64_t a = tok_len(x, s, x->tf[t]), b = tok_len(x, ch[i].slot, x->tf[t]);
      if (a != b) tc[ntc++] = (TokCh){ t, id, a, b };
    }
    if (!s && !ch[i].slot) {
      rc = pdb_err(x->db, m, PAGEDB_CORRUPT_INDEX, "index %s: sample %lld, to be deleted, is not in it", x->path,
                   (long long)id);
    } else if (s && k >= 0) {
      if (!room(&sc, &sk, nsc, &capsc)) {
        rc = pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory updating index %s", x->path);
        break;
      }
      sc[nsc] = ch[i];
      sk[nsc++] = (uint64_t)k;
    } else if (s || (c < x->nch && DX_HI(x->ch[2 * c + 1])) || c < dense_base(first, c) + 2 * inuse + 4) {
      if (!s && c != lastc && !(c < x->nch && DX_HI(x->ch[2 * c + 1]))) {
        inuse++;
        if (first == UINT64_MAX) first = c;
      }
      lastc = c;
      cc[ncc++] = ch[i];
    } else if (!room(&nc, NULL, nnc, &capnc)) {
      rc = pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory updating index %s", x->path);
      break;
    } else {
      nc[nnc++] = ch[i];
    }
    if (!ch[i].slot && (uint64_t)id + 1 == x->next) delmax = 1;
    if (ch[i].slot && (uint64_t)id + 1 > x->next) x->next = (uint64_t)id + 1;
  }
  for (size_t a = 0, b; a < ncc && rc == PAGEDB_OK; a = b) {
    uint64_t c = (uint64_t)cc[a].id >> DX_CBITS;
    for (b = a + 1; b < ncc && (uint64_t)cc[b].id >> DX_CBITS == c; b++) {}
    rc = apply_chunk(x, m, c, cc + a, b - a);
  }
  /* Segments, highest number first, so that removing an emptied one
  ** does not renumber those still to do (at most about log2 n of them). */
  for (uint64_t k = x->nsg; k-- > 0 && rc == PAGEDB_OK && nsc;) {
    size_t g = 0;
    for (size_t i = 0; i < nsc; i++)
      if (sk[i] == k) cc[g++] = sc[i];   /* cc is free again: reuse it */
    if (g) rc = apply_segment(x, m, k, cc, g);
  }
  if (rc == PAGEDB_OK && nnc) {
    rc = apply_segment(x, m, x->nsg, nc, nnc);
    if (rc == PAGEDB_OK) rc = merge_segments(x, m);
  }
  pdb_free(cc);
  pdb_free(sc);
  pdb_free(nc);
  pdb_free(sk);
  if (rc == PAGEDB_OK) rc = ensure_map(x, m, x->end);
  if (rc == PAGEDB_OK) rc = tok_stage(x, m, tc, ntc, final);
  pdb_free(tc);
  if (rc == PAGEDB_OK) rc = ensure_map(x, m, x->end);
  if (rc == PAGEDB_OK && delmax) x->next = work_next(x);
  if (rc != PAGEDB_OK || !final) return rc;
  /* The directory record, then the sync that makes all of it durable. */
  uint64_t nt = x->tmaps ? (uint64_t)x->ntf : 0;
  uint64_t words = x->dirw + 2 * (x->nch + x->nsg + x->npc) + 5 * nt;
  uint64_t *d = pdb_malloc((words + 1) * 8);
  if (!d) return pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory updating index %s", x->path);
  uint64_t off = x->end;
  d[0] = dir_magic(x);
  d[1] = off;
  d[2] = x->nch;
  d[3] = x->nsg;
  d[4] = x->count;
  d[5] = x->live;
  d[6] = x->next;
  d[7] = off + (words + 1) * 8;
  d[8] = data_end;
  d[9] = pages;
  if (x->version >= 2) {
    d[10] = x->npc;
    d[11] = x->nparts;
    d[12] = nt;
    d[13] = 0;
  }
  if (x->nch) memcpy(d + x->dirw, x->ch, 2 * x->nch * 8);
  if (x->nsg) memcpy(d + x->dirw + 2 * x->nch, x->sg, 2 * x->nsg * 8);
  if (x->npc) memcpy(d + x->dirw + 2 * (x->nch + x->nsg), x->pc, 2 * x->npc * 8);
  for (uint64_t k = 0; k < nt; k++) {
    uint64_t *e = d + x->dirw + 2 * (x->nch + x->nsg + x->npc) + 5 * k;
    e[0] = x->tf[k];
    memcpy(e + 1, x->tm[k], 4 * 8);
  }
  d[words] = pdb_checksum(d, words * 8);
  rc = put(x, m, d, (words + 1) * 8, off);
  pdb_free(d);
  if (rc != PAGEDB_OK) return rc;
  x->end = off + (words + 1) * 8;
  rc = pdb_os_sync(x->f, PAGEDB_SYNC_FULL);
  if (rc != PAGEDB_OK) return ioerr(x, m, PAGEDB_IOERR_SYNC, "cannot sync it");
  x->staged_dir = off;
  *out = (DxMeta){ x->fid, off, x->end, x->count, pages, x->nparts };
  return PAGEDB_OK;
}

/* Whether own chunk C of the working state shows no slot (HI 0, or every
** slot below it deleted). */
static int own_empty(const Dx *x, uint64_t c) {
  for (uint64_t i = 0; i < DX_HI(x->ch[2 * c + 1]); i++)
    if (((const uint64_t *)(x->map + x->ch[2 * c] + i * x->wsb))[x->nw]) return 0;
  return 1;
}

int dx_stage_refs(Dx *x, pdb_msg *m, const DxRefChunk *r, size_t n, uint64_t count, uint64_t next) {
  assert(x->writable);
  if (x->version < 3)
    return pdb_err(x->db, m, PAGEDB_MISUSE, "index %s: version %d references no chunk", x->path, x->version);
  for (size_t j = 0; j < n; j++) {
    uint64_t c = r[j].c;
    /* Empty here: no slot of the dataset's own, nor another reference.
    ** (Invariant 3 is not asked: a part far out makes the directory hold
    ** 16 bytes for each chunk below its ids, 2 bytes per 1,024 ids.) */
    int used = c < x->nch && ((x->ch[2 * c] & DX_REF) || !own_empty(x, c));
    if (used || (j && c <= r[j - 1].c))
      return pdb_err(x->db, m, PAGEDB_BUSY, "index %s: chunk %llu cannot be referenced (in use, or out of order)",
                     x->path, (unsigned long long)c);
    if (r[j].k >= x->nparts || r[j].off % 8 || r[j].off >> (DX_WIN_BITS + 3) || !r[j].hi || r[j].hi > DX_C
        || r[j].delta < -((int64_t)1 << 49) || r[j].delta >= ((int64_t)1 << 49))
      return pdb_err(x->db, m, PAGEDB_MISUSE, "index %s: a bad reference to part %llu", x->path,
                     (unsigned long long)r[j].k);
  }
  int rc = n ? grow_pairs(x, m, &x->ch, &x->capch, r[n - 1].c + 1) : PAGEDB_OK;
  if (rc != PAGEDB_OK) return rc;
  for (size_t j = 0; j < n; j++) {
    uint64_t c = r[j].c;
    if (c >= x->nch) x->nch = c + 1;
    if (DX_HI(x->ch[2 * c + 1])) x->live -= DX_C * x->wsb;   /* an own copy, every slot deleted */
    x->ch[2 * c] = DX_REF | r[j].k << DX_WIN_BITS | r[j].off / 8;
    x->ch[2 * c + 1] = r[j].hi | (uint64_t)r[j].delta << 14;
  }
  x->count += count;
  if (next > x->next) x->next = next;
  return PAGEDB_OK;
}

int dx_chunks(const Dx *x, DxChunks *out) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  memset(out, 0, sizeof *out);
  if (!d) return 0;
  *out = (DxChunks){ d + x->dirw, d[2], d[3], d[4], d[6], d[7], x->fid, x->version };
  return 1;
}

void dx_advise(Dx *x, int madv) {
  if (x->writable || x->heap || x->filled || !x->map) return;
  madvise((void *)x->map, x->maplen, madv);
}

int dx_publish(Dx *x, pdb_msg *m) {
  assert(x->staged_dir);
  int rc = ensure_map(x, m, x->end);
  if (rc != PAGEDB_OK) return rc;
  /* Release: a lookup that loads this directory sees every record it
  ** names (written with pwrite before, through the same page cache). */
  atomic_store_explicit(&x->snap, (const uint64_t *)(x->map + x->staged_dir), memory_order_release);
  x->staged_dir = 0;
  return PAGEDB_OK;
}

void dx_abort(Dx *x) {
  pdb_msg scratch;
  if (load_work(x, &scratch) != PAGEDB_OK) {
    /* Could not restore: the next stage must start over from the file. */
    x->nch = x->nsg = 0;
  }
}

/* --- parts (version 2) ------------------------------------------------ */

const char *dx_file(const Dx *x) { return x->tmp ? x->tmp : x->path; }

int dx_version(const Dx *x) { return x->version; }

/* Part record K through directory D, checked, or NULL. */
/* Part K's record in the snapshot of directory D, checked (NULL: none or damaged). */
static const uint64_t *part_in(const Dx *x, const uint64_t *d, uint64_t k) {
  if (k >= d[11]) return NULL;
  const uint64_t *e = d + x->dirw + 2 * (d[2] + d[3]) + 2 * (k / DX_PCHUNK);
  uint64_t at = e[0] + (k % DX_PCHUNK) * DX_PRECB;
  if (!readable(x, at, DX_PRECB)) return NULL;
  const uint64_t *r = (const uint64_t *)((const uint8_t *)d - d[1] + at);
  if (r[0] != k || r[15] != slot_sum(r, 15) || r[4] > ((uint64_t)1 << DX_WIN_BITS)) return NULL;
  return r;
}

/* The data end of part K (word 4 of its record) into *PEND: 1, or 0 when D
** has no such part or its record is damaged.  Remembered once checked. */
static int part_end(const Dx *x, const uint64_t *d, uint64_t k, uint64_t *pend) {
  if (k >= d[11]) return 0;
  _Atomic uint64_t *leaf = atomic_load_explicit(&x->pmemo[k / DX_PMEMO], memory_order_acquire);
  if (LIKELY(leaf != NULL)) {
    uint64_t w = atomic_load_explicit(&leaf[k % DX_PMEMO], memory_order_relaxed);
    if (LIKELY(w >> DX_PMEMO_SHIFT == k + 1)) {
      *pend = w & (((uint64_t)1 << DX_PMEMO_SHIFT) - 1);
      return 1;
    }
  }
  const uint64_t *r = part_in(x, d, k);
  if (!r) return 0;
  *pend = r[4];
  if (!leaf) {
    /* Without memory for the leaf the check is only not remembered. */
    _Atomic uint64_t *nl = pdb_calloc(DX_PMEMO, sizeof *nl);
    if (!nl) return 1;
    if (!atomic_compare_exchange_strong(&((Dx *)x)->pmemo[k / DX_PMEMO], &leaf, nl)) pdb_free(nl);
    else leaf = nl;
  }
  atomic_store_explicit(&leaf[k % DX_PMEMO], (k + 1) << DX_PMEMO_SHIFT | r[4], memory_order_relaxed);
  return 1;
}

uint64_t dx_parts(const Dx *x) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  return d && x->version >= 2 ? d[11] : 0;
}

const uint64_t *dx_part(const Dx *x, uint64_t k) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  return d && x->version >= 2 ? part_in(x, d, k) : NULL;
}

/* XXH3-64 of a part's uri followed by its validator. */
static uint64_t strings_sum(const uint8_t *u, uint64_t nu, const uint8_t *v, uint64_t nv) {
  if (!nv) return pdb_sum(u, nu);
  uint8_t buf[2 * 4096];
  memcpy(buf, u, nu);
  memcpy(buf + nu, v, nv);
  return pdb_sum(buf, nu + nv);
}

int dx_part_string(const Dx *x, const uint64_t *rec, int str, char *buf, size_t cap) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  uint64_t end = d ? d[1] : 0;   /* strings lie before the directory in force */
  uint64_t uo = rec[8], un = rec[9], vo = rec[10], vn = rec[11];
  int ok = d && un >= 1 && un < 4096 && uo >= DX_HDR && uo <= end && un <= end - uo && vn < 4096
        && (!vn || (vo >= DX_HDR && vo <= end && vn <= end - vo)) && readable(x, uo, un) && (!vn || readable(x, vo, vn));
  const uint8_t *base = d ? (const uint8_t *)d - d[1] : NULL;
  if (ok) ok = strings_sum(base + uo, un, vn ? base + vo : NULL, vn) == rec[12];
  uint64_t n = str ? vn : un;
  if (!ok || n + 1 > cap) {
    if (cap) buf[0] = 0;
    return pdb_err(x->db, NULL, PAGEDB_CORRUPT_INDEX, "index %s: the strings of part %llu are damaged", x->path,
                   (unsigned long long)rec[0]);
  }
  if (n) memcpy(buf, base + (str ? vo : uo), n);
  buf[n] = 0;
  return PAGEDB_OK;
}

int dx_stage_parts(Dx *x, pdb_msg *m, const DxPart *p, size_t n) {
  assert(x->writable && x->version >= 2);
  if (n == 0) return PAGEDB_OK;
  if (n > DX_PART_MAX - x->nparts)
    return pdb_err(x->db, m, PAGEDB_FULL, "index %s: %llu parts and %zu more pass the %llu a dataset can have", x->path,
                   (unsigned long long)x->nparts, n, (unsigned long long)DX_PART_MAX);
  /* The string record: every uri then validator, back to back. */
  uint64_t slen = 0;
  for (size_t i = 0; i < n; i++) {
    size_t un = strlen(p[i].uri), vn = p[i].validator ? strlen(p[i].validator) : 0;
    if (un < 1 || un > 4095 || vn > 4095)
      return pdb_err(x->db, m, PAGEDB_MISUSE, "index %s: the uri or validator of part %llu is empty or over 4095"
                     " bytes", x->path, (unsigned long long)p[i].k);
    slen += un + vn;
  }
  uint64_t spad = pdb_align(slen, 8);
  uint8_t *sb = pdb_calloc(1, spad ? spad : 8);
  uint64_t *rec = pdb_calloc(n, DX_PRECB);
  int rc = PAGEDB_OK;
  if (!sb || !rec) rc = pdb_err(x->db, m, PAGEDB_NOMEM, "out of memory recording %zu parts", n);
  uint64_t so = x->end, at = 0;
  for (size_t i = 0; i < n && rc == PAGEDB_OK; i++) {
    assert(p[i].k == x->nparts + i);
    size_t un = strlen(p[i].uri), vn = p[i].validator ? strlen(p[i].validator) : 0;
    uint64_t *r = rec + i * DX_PREC;
    memcpy(sb + at, p[i].uri, un);
    if (vn) memcpy(sb + at + un, p[i].validator, vn);
    r[0] = p[i].k;
    memcpy(&r[1], p[i].uuid, 16);
    r[3] = p[i].data_off;
    r[4] = p[i].data_end;
    r[5] = p[i].pages;
    r[6] = p[i].samples;
    r[7] = p[i].seal;
    r[8] = so + at;
    r[9] = un;
    r[10] = vn ? so + at + un : 0;
    r[11] = vn;
    r[12] = strings_sum(sb + at, un, vn ? sb + at + un : NULL, vn);
    r[13] = p[i].index_id;
    r[14] = p[i].index_len;
    r[15] = slot_sum(r, 15);
    at += un + vn;
  }
  if (rc == PAGEDB_OK) rc = put(x, m, sb, spad, so);
  if (rc == PAGEDB_OK) x->end += spad;
  /* The records: in place past the last chunk's HI, then in new chunks
  ** (128 KiB reserved each; a hole until written). */
  for (size_t i = 0; i < n && rc == PAGEDB_OK;) {
    uint64_t q = x->npc ? x->npc - 1 : 0, hi = x->npc ? x->pc[2 * q + 1] : DX_PCHUNK;
    if (hi == DX_PCHUNK) {
      rc = grow_pairs(x, m, &x->pc, &x->cappc, x->npc + 1);
      if (rc != PAGEDB_OK) break;
      q = x->npc++;
      x->pc[2 * q] = x->end;
      x->pc[2 * q + 1] = hi = 0;
      x->end += (uint64_t)DX_PCHUNK * DX_PRECB;
      x->live += (uint64_t)DX_PCHUNK * DX_PRECB;
    }
    size_t take = n - i < DX_PCHUNK - hi ? n - i : (size_t)(DX_PCHUNK - hi);
    rc = put(x, m, rec + i * DX_PREC, take * DX_PRECB, x->pc[2 * q] + hi * DX_PRECB);
    if (rc == PAGEDB_OK) {
      x->pc[2 * q + 1] = hi + take;
      x->nparts += take;
      i += take;
    }
  }
  pdb_free(sb);
  pdb_free(rec);
  if (rc == PAGEDB_OK) rc = ensure_map(x, m, x->end);
  return rc;
}

/* --- token maps: readers ---------------------------------------------- */

int dx_tokmap(const Dx *x, int field, DxTok *t) {
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  if (!d || x->version < 2 || !d[12] || field < 0 || field >= x->nfield || !x->tokes[field]) return 0;
  const uint64_t *e = d + x->dirw + 2 * (d[2] + d[3] + d[10]);
  for (uint64_t k = 0; k < d[12]; k++, e += 5)
    if (e[0] == (uint64_t)field) {
      *t = (DxTok){ (const uint8_t *)d - d[1], e[1], e[3], e[4] };
      return 1;
    }
  return 0;
}

int dx_tok_entry(const Dx *x, const DxTok *t, uint64_t k, uint64_t *end, int64_t *id) {
  assert(k < t->count);
  if (!readable(x, t->off + k * 16, 16)) return 0;
  const uint64_t *e = (const uint64_t *)(t->base + t->off + k * 16);
  *end = e[0];
  *id = (int64_t)e[1];
  return 1;
}

typedef struct TokCount {
  const Dx *x;
  int f;
  uint64_t n;
} TokCount;

static int count_doc(void *ctx, int64_t id, const uint64_t *s) {
  TokCount *c = ctx;
  (void)id;
  c->n += tok_len(c->x, s, c->f) > 0;
  return PAGEDB_OK;
}

int dx_tok_verify(const Dx *x, int field, char *why, size_t n) {
  DxTok t;
  if (!dx_tokmap(x, field, &t)) return 0;
  const uint64_t *d = atomic_load_explicit(&x->snap, memory_order_acquire);
  uint64_t h = tok_sum0(field), prev = 0;
  int64_t previd = -1;
  for (uint64_t k = 0; k < t.count; k++) {
    uint64_t e[2];
    int64_t id;
    if (!dx_tok_entry(x, &t, k, &e[0], &id)) {
      snprintf(why, n, "entry %llu cannot be fetched", (unsigned long long)k);
      return 1;
    }
    e[1] = (uint64_t)id;
    h = tok_sum(h, e);
    const uint64_t *s = id > previd ? find_in(x, d, id, NULL, NULL) : NULL;
    uint64_t want = s && s != DX_BAD ? tok_len(x, s, field) : 0;
    if (id <= previd || e[0] <= prev || e[0] > (uint64_t)INT64_MAX || e[0] - prev != want) {
      snprintf(why, n, "entry %llu (sample %lld, end %llu) disagrees with the index: %s", (unsigned long long)k,
               (long long)id, (unsigned long long)e[0],
               id <= previd ? "ids not increasing" : !s ? "no such sample" : s == DX_BAD ? "its entry is damaged"
               : "its token count differs");
      return 1;
    }
    prev = e[0];
    previd = id;
  }
  if (h != t.check) {
    snprintf(why, n, "its check word does not match its %llu entries", (unsigned long long)t.count);
    return 1;
  }
  /* Every document of the snapshot is in it: as many as there are. */
  TokCount c = { x, field, 0 };
  if (dx_scan(x, count_doc, &c) != PAGEDB_OK) {
    snprintf(why, n, "the index's entries cannot be scanned");
    return 1;
  }
  if (c.n != t.count) {
    snprintf(why, n, "it has %llu documents, the index %llu", (unsigned long long)t.count, (unsigned long long)c.n);
    return 1;
  }
  return 0;
}
