/*
** index.h -- the in-memory map from sample id to where the sample lies,
** so that a read by id costs O(1) and runs no SQL; with an index file in
** force (dindex.h) only the writers' reservations, the reads going to the
** file (index.c says when the memory one holds samples).
**
** A sample's entry (a "slot") is NW 64-bit words:
**   word 0            the id
**   word 1            byte offset of its record in the data region
**   words 2..2+NP-1   presence bits, one per field
**   then one word per field: the length of a BYTES/TEXT field, or the value
**                     of an INT field, or the bits of a REAL field
**   then two words per field, used by BYTES/TEXT fields only (slot_ext):
**                     the stored length, with SLOT_Z set when the bytes are
**                     compressed, and the XXH3-64 checksum of those bytes
** The layout is fixed by the schema; see slot_* below.
*/
#ifndef PAGEDB_INDEX_H
#define PAGEDB_INDEX_H

#include "pagedbInt.h"
#include "dindex.h"
#include <pthread.h>

typedef struct Index Index;

/* Words in a slot of a dataset with NFIELD fields. */
static inline int slot_words(int nfield) { return 2 + (nfield + 63) / 64 + 3 * nfield; }
static inline int slot_has(const uint64_t *s, int f) { return (s[2 + f / 64] >> (f % 64)) & 1; }
static inline void slot_set(uint64_t *s, int f) { s[2 + f / 64] |= (uint64_t)1 << (f % 64); }
static inline void slot_clear(uint64_t *s, int f) { s[2 + f / 64] &= ~((uint64_t)1 << (f % 64)); }
static inline uint64_t *slot_val(uint64_t *s, int nfield, int f) { return &s[2 + (nfield + 63) / 64 + f]; }
static inline uint64_t slot_get(const uint64_t *s, int nfield, int f) { return s[2 + (nfield + 63) / 64 + f]; }

#define SLOT_Z ((uint64_t)1 << 63)   /* in the stored length: compressed */
static inline uint64_t *slot_ext(uint64_t *s, int nfield, int f) { return &s[2 + (nfield + 63) / 64 + nfield + 2 * f]; }
static inline const uint64_t *slot_cext(const uint64_t *s, int nfield, int f) {
  return &s[2 + (nfield + 63) / 64 + nfield + 2 * f];
}
/* The bytes field F of slot S takes on disk. */
static inline uint64_t slot_stored(const uint64_t *s, int nfield, int f) { return slot_cext(s, nfield, f)[0] & ~SLOT_Z; }

/* Create an empty index of slots of NW words; it grows as ids arrive. */
int idx_create(Index **pi, int nw);
void idx_free(Index *x);

/*
** Reserve ID for a sample being written: PAGEDB_CONSTRAINT if it is
** committed or reserved already.  Thread-safe.
*/
int idx_reserve(Index *x, int64_t id);
/*
** About to reserve N ids from LO to HI (a commit of parts, an attach): when
** they are dense enough, the dense arena is grown past HI first, so that
** each takes a compare-and-swap there and not a hash entry (the table
** would otherwise grow, and its entries move, N times over), and the
** arena's chunks over them are allocated as one block (huge pages: a
** million ids' reservations took half the time).  Only a hint: nothing is
** reserved.  Thread-safe.
*/
void idx_expect(Index *x, int64_t lo, int64_t hi, uint64_t n);
/* Give back a reservation that will not be published.  Thread-safe. */
void idx_release(Index *x, int64_t id);

/*
** Reserve the ids LO..HI whole, for a commit of parts whose index chunks
** are referenced (doc/format.md, "Parts' chunks by reference"): no id of
** them can then be reserved (idx_reserve gives PAGEDB_CONSTRAINT) until
** idx_release_range.  PAGEDB_BUSY, nothing reserved, when the range meets
** another, or when more ids than OWN (the caller's own, reserved one by
** one) are reserved at this moment: a writer might hold one inside it.
** The caller checks that no committed sample lies in it after this.
** Thread-safe.
*/
int idx_reserve_range(Index *x, int64_t lo, int64_t hi, uint64_t own);
void idx_release_range(Index *x, int64_t lo, int64_t hi);
/*
** Publish a reserved sample: copy SLOT (whose word 0 is the id) into the
** index and make it visible to idx_find().  One thread at a time (the
** committer); safe against concurrent idx_find, idx_reserve, idx_release.
*/
int idx_publish(Index *x, const uint64_t *slot);

/*
** Forget committed sample ID (a delete has committed): idx_find() no longer
** finds it, idx_count() drops by one, and the id may be reserved again for
** a new sample.  The slot's memory is never freed or moved before idx_free,
** so a lock-free reader that found it a moment earlier reads valid memory;
** only if the id is reused and the new sample published meanwhile may that
** reader see the new sample's words.  PAGEDB_NOTFOUND if ID is not visible.
** One thread at a time (the committer), as idx_publish.
*/
int idx_remove(Index *x, int64_t id);

/* The slot of committed sample ID, or NULL.  Lock-free; the slot's memory
** stays valid until idx_free (see idx_remove for a deleted id). */
const uint64_t *idx_find(Index *x, int64_t id);

/* Call XCB with the id and slot of every visible sample (dense ids in
** increasing order, then the others in publish order); a non-OK return
** stops the scan and is returned.  Not to be run concurrently with
** idx_publish. */
int idx_scan(Index *x, int (*xcb)(void *ctx, int64_t id, const uint64_t *slot), void *ctx);
/* idx_scan of the samples whose id is LO or more and LAST or less only
** (INT64_MAX: to the end). */
int idx_scan_range(Index *x, int64_t lo, int64_t last, int (*xcb)(void *ctx, int64_t id, const uint64_t *slot),
                   void *ctx);

/* Committed samples. */
uint64_t idx_count(Index *x);

/*
** Back X by the persistent index DX (dindex.h), which X then owns (closed
** by idx_free or the next idx_set_disk): committed samples are looked up,
** counted and scanned in DX's snapshot, and the memory part keeps only
** the reservations of samples being written, so that a writer's open
** loads nothing per sample.  X must hold no visible sample.  The commit
** that makes reserved samples visible publishes them in DX (dx_publish)
** and then releases them here (idx_release): a reservation racing with it
** sees the id taken either way.  DX NULL: memory only again.
*/
void idx_set_disk(Index *x, Dx *dx);
/* The persistent index behind X, or NULL. */
Dx *idx_disk(Index *x);
/* The index file under X, taken out of it (idx_free no longer closes it). */
Dx *idx_take_disk(Index *x);
/* Whether X's persistent index holds an entry for ID that fails its
** checks (so idx_find said NULL for a damaged entry, not for no sample). */
int idx_damaged(Index *x, int64_t id);
/* Whether the damaged entry idx_damaged saw for ID is in fact a part of a
** remote index that could not be fetched (1), or a chunk referenced in a
** part's index file that cannot be used (2): WHY (N bytes) receives the
** reason; 0 otherwise. */
int idx_unfetched(Index *x, int64_t id, char *why, size_t n);

#endif /* PAGEDB_INDEX_H */
