/*
** pager.h -- the data file: its header, page claiming, the written prefix,
** syncing and mapping.  Knows nothing of samples: a caller hands it a run of
** bytes for a claimed run of pages and learns when the prefix advances.
*/
#ifndef PAGEDB_PAGER_H
#define PAGEDB_PAGER_H

#include "pagedbInt.h"

#define PDB_HEADER_SIZE 4096u   /* the header; page 0 starts at pager_data_off() */
#define PDB_FOLIO_MAX   (2u << 20)  /* the largest page-cache folio (x86-64 PMD) */
#define PDB_PAGE_HDR    64u     /* bytes at the start of every run */
#define PDB_FORMAT      2u      /* data file format version */

/* The largest data region: page numbers stay far from overflow. */
#define PDB_MAX_DATA    ((uint64_t)1 << 56)
/* The end of the address space of a dataset of parts: the own data region,
** then a window of 2^42 bytes per part, up to 2^21 - 2^14 parts (doc/format.md). */
#define PDB_ADDR_MAX    (PDB_MAX_DATA + ((((uint64_t)1 << 21) - ((uint64_t)1 << 14)) << 42))

/*
** A run of pages that has been written (or given up: USED == 0).  Callers
** embed it as the first member of their own record of what the run holds.
*/
typedef struct PageDone PageDone;
struct PageDone {
  PageDone *next;
  uint64_t pgno;        /* first page of the run */
  uint32_t npages;      /* pages in the run, >= 1 */
  uint32_t nsamples;    /* samples that start in the run */
  uint64_t used;        /* bytes of the run in use, header included; 0 = dead */
};

typedef struct Pager Pager;

/* Create the data file PATH (it must not exist), write and sync its header. */
int pager_create(pagedb *db, pdb_msg *m, pagedb_vfs *vfs, const char *path,
                 uint32_t page_size, Pager **pp);
/* Open the existing data file PATH and validate its header. */
int pager_open(pagedb *db, pdb_msg *m, pagedb_vfs *vfs, const char *path,
               int readonly, Pager **pp);
/* Unmap, close and free.  NULL is a no-op. */
void pager_close(Pager *p);

uint32_t pager_page_size(const Pager *p);
const uint8_t *pager_uuid(const Pager *p);
uint64_t pager_data_off(const Pager *p);
pagedb_file *pager_file(Pager *p);

/* Rewrite the header with a new page size (only while no page exists). */
int pager_set_page_size(Pager *p, pdb_msg *m, uint32_t page_size);

/* Take the single-writer lock, waiting up to the busy timeout for it:
** PAGEDB_BUSY_LOCKED if another holds it still. */
int pager_lock(Pager *p, pdb_msg *m);
/* PAGEDB_CONFIG_BUSY_TIMEOUT: MS 0..86400000, or -1 (the environment's). */
int pager_busy_config(int64_t ms);

/*
** Start from the committed state: COMMITTED pages are durable and the data
** they hold ends at byte DATA_END of the data region.  Fails with
** PAGEDB_CORRUPT_TRUNCATED if the file is shorter; a writable pager also
** discards what lies past the committed pages.
*/
int pager_recover(Pager *p, pdb_msg *m, uint64_t committed, uint64_t data_end, int writable);

/* Claim N contiguous pages with one atomic step. */
int pager_claim(Pager *p, pdb_msg *m, uint32_t n, uint64_t *pgno);

/*
** Give back the N pages from PGNO, claimed by one pager_claim and none of
** them handed to pager_done, if nothing was claimed after them: returns 1
** if they are free again (bytes written there lie past every claim and
** are overwritten or discarded like any uncommitted page), 0 if they stay
** claimed and must be handed to pager_done (dead, if given up).
*/
int pager_unclaim(Pager *p, uint64_t pgno, uint64_t n);

/*
** A run header as the file holds it (the layout at the top of pager.c),
** decoded without trusting any of it: callers compare its fields with the
** page table.  MAGIC_OK: it starts with "PDBRUN"; SUM_OK: bytes 0..55
** match the checksum at byte 56.
*/
typedef struct RunHeader {
  uint8_t uuid[16];
  uint64_t pgno;            /* page number of the run's first page */
  uint32_t npages;
  uint32_t nsamples;        /* samples written to it */
  uint64_t used;            /* bytes used, header included */
  uint64_t datasum;         /* pdb_sum of bytes PDB_PAGE_HDR..used */
  int magic_ok, sum_ok;
} RunHeader;
void pager_run_header(const uint8_t p[PDB_PAGE_HDR], RunHeader *h);

/*
** Start writing the run at page PGNO: fills the run header in
** BUF[0..PDB_PAGE_HDR) and writes the first USED bytes of BUF with one
** write, described by A.  When the file needs aligned I/O, BUF (aligned) is
** padded in place with zeroes up to the next multiple of pager_align: those
** bytes are overwritten.  On a file with asynchronous writes (pager_async)
** it returns at once and BUF must stay untouched until pager_write_wait
** reports the write finished; otherwise the write is done on return.  No
** lock is held.  PAGEDB_OK: the result comes from pager_write_wait; any
** other code: nothing was written, and there is nothing to wait for.
*/
int pager_write_start(Pager *p, pdb_msg *m, uint64_t pgno, uint32_t npages,
                      uint32_t nsamples, uint8_t *buf, size_t used, pagedb_aio *a);

/* The result of the write A: with WAIT 0, PAGEDB_BUSY while it is still in
** flight.  A failure's message names the page and the reason. */
int pager_write_wait(Pager *p, pdb_msg *m, pagedb_aio *a, int wait);

/* Whether pager_write_start returns before the write ends (io_uring). */
int pager_async(Pager *p);

/* Record that a claimed run is written (or dead).  Returns 1 if the written
** prefix advanced, so that the caller can wake whoever consumes it. */
int pager_done(Pager *p, PageDone *d);

/* Detach the runs that have entered the written prefix, in page order. */
PageDone *pager_take(Pager *p);

/* Pages claimed so far. */
uint64_t pager_claimed(Pager *p);

/* Make everything written durable: fsync if the file grew, else fdatasync. */
int pager_sync(Pager *p, pdb_msg *m);

/* The alignment of offsets, lengths and buffers the file's I/O needs:
** its sector size when it bypasses the page cache, else 1. */
uint32_t pager_align(const Pager *p);

/* Bytes at data-region offset OFF, copied (through the VFS) into BUF;
** file offset, length and buffer meet pager_align. */
int pager_read(Pager *p, pdb_msg *m, uint64_t off, void *buf, size_t n);

/*
** The same into a buffer of the caller's, *BUF of *CAP bytes (replaced by a
** larger 4 KiB-aligned one from aligned_alloc when needed; the caller frees
** it): *OUT receives the address of the first byte.  On a direct file the
** read covers the enclosing aligned range, so *OUT may lie inside *BUF.
*/
int pager_fetch(Pager *p, pdb_msg *m, uint64_t off, size_t n, uint8_t **buf, size_t *cap, const uint8_t **out);

/*
** pager_fetch for N extents at once (offsets OFF[i], lengths LEN[i]), laid
** out one after another in *BUF (grown as pager_fetch does), with one
** batched read: OUT[i] receives the address of extent i.  On failure *BAD
** is the index of the first extent that failed.
*/
int pager_fetch_batch(Pager *p, pdb_msg *m, int n, const uint64_t *off, const uint64_t *len,
                      uint8_t **buf, size_t *cap, const uint8_t **out, int *bad);

/* Advise the kernel of how data-region bytes [0, END) will be read, for the
** file and, if mapped, the map (a PAGEDB_ADVISE_* hint). */
int pager_advise(Pager *p, pdb_msg *m, int hint, uint64_t end);
/* The madvise(2) advice of PAGEDB_ADVISE_* HINT. */
int pager_madv(int hint);

/* Advise WILLNEED for mapped bytes [OFF, OFF+N) of the data region. */
void pager_map_willneed(Pager *p, uint64_t off, uint64_t n);

/* Whether every page of bytes [OFF, OFF+N) of the data region is in the
** page cache (mincore over the map); 1 when it cannot tell. */
int pager_map_resident(Pager *p, uint64_t off, uint64_t n);

/* Advise WILLNEED for data-region bytes [OFF, OFF+N) of a file that goes
** through the page cache, so the kernel reads them in the background. */
void pager_file_willneed(Pager *p, uint64_t off, uint64_t n);

/* The VFS calls made on the data file since it was opened: reads (each
** request of a batch counts as one, with its aligned length), writes (the
** bytes written, padding included), syncs.  Thread-safe. */
typedef struct PagerIo {
  uint64_t reads, read_bytes, writes, write_bytes, syncs;
} PagerIo;
void pager_io(Pager *p, PagerIo *out);

/* Ensure the map covers data-region bytes [0, END).  EXACT: map little
** more than that, for a file nothing will read past END through this map
** (a part); else reserve room to grow.  Thread-safe. */
int pager_map_ensure(Pager *p, pdb_msg *m, uint64_t end, int exact);
/* The data region as mapped, or NULL.  Bytes past the committed end must not
** be touched.  The pointer stays valid until pager_close. */
const uint8_t *pager_map(Pager *p);

/* The data region as mapped now, and in *LEN how many of its bytes the
** map covers (0 and NULL if unmapped): a reader may keep both and use them
** for any committed extent that ends within *LEN, since a map stays valid
** until pager_close; past it, it asks again (a commit grew the map). */
const uint8_t *pager_map_span(Pager *p, uint64_t *len);

/* Whether the map must be filled (pager_map_fill) before a read touches
** it: the VFS fills its maps on demand (xMapFill, the remote VFSes). */
int pager_map_fills(Pager *p);

/* Give up P's descriptor, its map kept (the VFS's xDetach): 1 if done, 0
** if the VFS cannot.  After it P is read only through pager_map_span's
** pointer, until pager_close; nothing else may be asked of it. */
int pager_detach(Pager *p);

/* Make the N extents (data offsets OFF[i], LEN[i] bytes) of the map
** readable before a reader touches them: a no-op unless the VFS fills its
** maps on demand (xMapFill: the remote VFSes).  PAGEDB_OK, or the VFS's
** failure with a message in M. */
int pager_map_fill(Pager *p, pdb_msg *m, int n, const uint64_t *off, const uint64_t *len);

/*
** Reads in place (a VFS with xHold: the remote VFSes): make the N extents
** (data offsets OFF[i], LEN[i] bytes) readable at OUT[i] without a copy,
** or OUT[i] NULL for one the VFS cannot give in place (read it with
** pager_fetch_batch); every OUT[i] stays valid until pager_release(*HOLD).
** PAGEDB_OK, or the VFS's failure with a message in M (nothing held).
** pager_can_hold says whether the VFS has xHold.
*/
int pager_can_hold(Pager *p);
int pager_hold(Pager *p, pdb_msg *m, int n, const uint64_t *off, const uint64_t *len, const uint8_t **out,
               void **hold);
void pager_release(Pager *p, void *hold);

/* Whether the file is a remote object (PAGEDB_IOCAP_IMMUTABLE): no page
** cache to hint, read-ahead goes through windows of batched reads. */
int pager_is_remote(Pager *p);

/* Whether the file's bytes come through a place others can write
** (PAGEDB_IOCAP_UNTRUSTED: a shared chunk cache), so that every value read
** must be checked; pager_open then sets db->untrusted.  pager_refetch
** fetches the data-region bytes [OFF, OFF+LEN) again from the source
** (xRefetch), correcting in place every copy the file handed out:
** PAGEDB_OK (a no-op for a trusted file), or the failure with M. */
int pager_untrusted(Pager *p);
int pager_refetch(Pager *p, pdb_msg *m, uint64_t off, uint64_t len);

#endif /* PAGEDB_PAGER_H */
