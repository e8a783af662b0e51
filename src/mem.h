/*
** mem.h -- the memory layer, under every other (vfs/ included): the general
** allocator with its accounting and limit (mem.c), the buddy heap it may
** serve from (buddy.c), and the page-buffer pool (pool.c).
**
** Every allocation of the library goes through here, so that
** pagedb_memory_used() is exact and PAGEDB_CONFIG_MEMLIMIT bounds it all.
** The public side is in pagedb.h (MEMORY).
*/
#ifndef PAGEDB_MEM_H
#define PAGEDB_MEM_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "pagedb.h"

/* General allocations: NULL on failure (the system, the limit, or a test
** allocator).  pdb_calloc zeroes and checks N*SZ for overflow;
** pdb_realloc(NULL, n) is pdb_malloc(n), and on failure the old block
** stays valid.  pdb_free(NULL) is a no-op. */
/* pagedb_config's allocator and pool ops (and MEMLIMIT), with their
** arguments: the ops src/config.c hands over. */
int pdb_mem_config(int op, va_list ap);

/* The calling thread's shard, 0 .. PDB_NSHARD-1 (given round-robin at its
** first use): other modules' per-thread counters use the same (index.c). */
#define PDB_NSHARD 16
unsigned pdb_shard(void);

void *pdb_malloc(size_t n);
void *pdb_calloc(size_t n, size_t sz);
void *pdb_realloc(void *p, size_t n);
void pdb_free(void *p);
char *pdb_strdup(const char *s);

/* Page and I/O buffers, from the pool: 4 KiB-aligned, *CAP (if not NULL)
** receives the usable size.  NULL on failure. */
void *pdb_buf_alloc(size_t n, size_t *cap);
void pdb_buf_free(void *p);

/*
** For the pool: count N more bytes as held, or N fewer.  pdb_mem_charge
** fails (returns PAGEDB_NOMEM, counting nothing) when N would pass the
** memory limit even after trimming the pool; it may call pool_trim(), so
** the caller must hold none of the pool's locks.
*/
int pdb_mem_charge(size_t n);
void pdb_mem_uncharge(size_t n);
/* A charge has become memory held: count it in the high-water mark (not
** done by pdb_mem_charge, so that memory never obtained never counts). */
void pdb_mem_settle(void);

/*
** RESERVED TABLES: a table indexed by an address's high bits and read with
** no bound check (parts.c's entries, one for every address a record may
** have), of which a handle writes a few pages.  pdb_table_reserve maps N
** bytes of zeros, readable, none writable and none charged: Linux charges a
** private read-only map to no commit limit, and every page of it is the
** one shared zero page until written.  Bytes before FROM are never written.
** pdb_table_grow readies the bytes [AT, AT+LEN) to be written: the map
** is made writable from FROM (rounded down to a page) up to their end, one
** map however far it grows (a page made writable alone would split the map
** in three, and a table written sparsely would pass vm.max_map_count), and
** each of their pages not yet charged is charged against the limit, once:
** a handle is charged for the pages it writes, not for those below the
** highest (still the shared zero page).  PAGEDB_NOMEM if the limit or the
** kernel refuses (nothing changed).  The caller serializes grows of one
** table; reads need no lock.  pdb_table_release unmaps it and uncharges
** what was charged (a table never reserved, or zeroed, is a no-op).
*/
typedef struct PdbTable {
  void *base;               /* N bytes reserved; NULL when not */
  size_t n, from;
  size_t upto;              /* writable: [FROM rounded down, UPTO); 0 when none is */
  uint64_t *charged;        /* a bit a page: charged */
  size_t ncharged;          /* pages charged */
} PdbTable;
int pdb_table_reserve(PdbTable *t, size_t n, size_t from);
int pdb_table_grow(PdbTable *t, size_t at, size_t len);
void pdb_table_release(PdbTable *t);

/* Open pagedb handles: pagedb_shutdown refuses while any is. */
extern _Atomic int pdb_handles;

/*
** THE BUDDY HEAP (buddy.c).  One arena, power-of-two blocks from MIN up,
** split on allocation and coalesced with their buddy on free.  Not
** thread-safe: mem.c serializes calls.
*/
typedef struct BuddyHeap BuddyHeap;

/* Lay a heap over ARENA of N bytes whose smallest block is MIN (rounded up
** to a power of two, at least 16).  The heap's bookkeeping lives inside the
** arena.  NULL if the arena cannot hold it and one block. */
BuddyHeap *buddy_init(void *arena, size_t n, size_t min);

/* A block of at least N bytes, 16-byte aligned (blocks are aligned to
** their size up to the arena's alignment), or NULL. */
void *buddy_alloc(BuddyHeap *h, size_t n);

/* Free block P: PAGEDB_OK, or PAGEDB_MISUSE, changing nothing, when P is
** not the start of a block in use (freed twice, or foreign). */
int buddy_free(BuddyHeap *h, void *p);

/* The size of the block in use at P, or 0 if P is not one. */
size_t buddy_size(BuddyHeap *h, void *p);

/* The block size buddy_alloc(h, n) would use; 0 if larger than any. */
size_t buddy_roundup(BuddyHeap *h, size_t n);

typedef struct BuddyStats {
  size_t used;          /* bytes in blocks in use */
  size_t free;          /* bytes in free blocks */
  size_t largest_free;  /* the largest free block */
  size_t nused;         /* blocks in use */
  size_t nfree;         /* free blocks */
} BuddyStats;
void buddy_stats(BuddyHeap *h, BuddyStats *st);

/*
** THE POOL (pool.c): the public pagedb_pool_* functions, and these for
** mem.c.  pool_config and pool_shutdown run only while the library is not
** initialized / being shut down; the rest are thread-safe.
*/
int pool_config(const pagedb_pool_methods *m);       /* NULL: the default */
void pool_get_config(pagedb_pool_methods *m);
size_t pool_trim(size_t n);                          /* = pagedb_release_memory */
int pool_shutdown(void);     /* PAGEDB_MISUSE if a buffer is still out */
/* Bytes handed out, cached, pinned: now and high-water marks. */
void pool_status(int op, int64_t *cur, int64_t *high, int reset);

#endif /* PAGEDB_MEM_H */
