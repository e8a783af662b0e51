/*
** buddy.c -- a buddy allocator over one arena, as SQLite's mem5.c: what
** PAGEDB_CONFIG_HEAP serves every general allocation from.
**
** LAYOUT
**
**   [BuddyHeap][ctrl: one byte per atom][pad to 16][atoms...]
**
**   An atom is the smallest block (MIN, a power of two >= 16).  A block is
**   2^k atoms and starts at an atom index that is a multiple of 2^k.  The
**   arena is first carved into the largest such blocks that fit, from its
**   start, so an arena that is not a power of two atoms has a few blocks
**   that never coalesce with each other.
**
** CONTROL BYTES
**
**   ctrl[i] of a block's first atom is k (its log2 size in atoms), plus
**   FREE if the block is on a free list; ctrl of every other atom is
**   INSIDE.  So any pointer can be judged in O(1): a block in use starts at
**   an atom whose ctrl has neither FREE nor INSIDE.  Free blocks are on a
**   doubly linked list per size whose links (atom indexes) are kept in the
**   block's first 8 bytes.
**
** INVARIANTS
**
**   1. Blocks tile the atoms: every atom is the first of exactly one block
**      or INSIDE exactly one.
**   2. No two free buddies of the same size exist: a freed block merges
**      with its buddy while the buddy is free, whole and of its size.
**   3. used = the bytes of blocks in use; used + free bytes = the atoms.
**
** FRAGMENTATION BOUND
**
**   A request of n bytes gets a block of less than 2n (internal
**   fragmentation under 50%).  By J. M. Robson ("Bounds for Some Functions
**   Concerning Dynamic Storage Allocation", JACM 21(3), 1974), cited by
**   mem5.c: if the largest request is M bytes and at most N bytes are in
**   use at once, a power-of-two buddy allocator never fails for lack of a
**   suitably placed free block when the arena holds at least
**   N * (1 + log2(M / MIN) / 2) bytes.  Size the arena from that.
**
** Not thread-safe: mem.c holds its mutex around every call.
*/
#include "pagedbInt.h"

#define INSIDE  0xFF   /* an atom inside a block, not its first */
#define FREE    0x40   /* a block on a free list */
#define LOGMASK 0x3F
#define NLOG    48

struct BuddyHeap {
  uint8_t *base;       /* atom 0 */
  uint8_t *ctrl;
  size_t atom;         /* bytes in an atom */
  int64_t natoms;
  int maxlog;          /* the largest block is 2^maxlog atoms */
  int64_t head[NLOG];  /* first free block of each size, -1 if none */
  size_t used, nused, nfree;
};

typedef struct Links {
  int64_t next, prev;
} Links;

static Links *links(BuddyHeap *h, int64_t i) { return (Links *)(h->base + (size_t)i * h->atom); }

static void link_free(BuddyHeap *h, int64_t i, int k) {
#ifndef NDEBUG
  memset(h->base + (size_t)i * h->atom, 0x5A, h->atom << k);
#endif
  h->ctrl[i] = (uint8_t)(k | FREE);
  Links *l = links(h, i);
  l->prev = -1;
  l->next = h->head[k];
  if (l->next >= 0) links(h, l->next)->prev = i;
  h->head[k] = i;
  h->nfree++;
}

static void unlink_free(BuddyHeap *h, int64_t i, int k) {
  assert(h->ctrl[i] == (k | FREE));
  Links *l = links(h, i);
  if (l->prev >= 0) links(h, l->prev)->next = l->next;
  else h->head[k] = l->next;
  if (l->next >= 0) links(h, l->next)->prev = l->prev;
  h->nfree--;
}

BuddyHeap *buddy_init(void *arena, size_t n, size_t min) {
  size_t atom = 16;
  while (atom < min && atom < ((size_t)1 << 40)) atom <<= 1;
  uintptr_t a = ((uintptr_t)arena + 15) & ~(uintptr_t)15;
  if (!arena || n < (a - (uintptr_t)arena) + sizeof(BuddyHeap) + 32) return NULL;
  size_t left = n - (a - (uintptr_t)arena) - sizeof(BuddyHeap) - 16;
  int64_t natoms = (int64_t)(left / (atom + 1));
  if (natoms < 1) return NULL;
  BuddyHeap *h = (BuddyHeap *)a;
  memset(h, 0, sizeof *h);
  h->ctrl = (uint8_t *)(h + 1);
  h->base = (uint8_t *)(((uintptr_t)(h->ctrl + natoms) + 15) & ~(uintptr_t)15);
  h->atom = atom;
  h->natoms = natoms;
  while (h->maxlog + 1 < NLOG && ((int64_t)1 << (h->maxlog + 1)) <= natoms) h->maxlog++;
  for (int k = 0; k < NLOG; k++) h->head[k] = -1;
  memset(h->ctrl, INSIDE, (size_t)natoms);
  int64_t i = 0;
  for (int k = h->maxlog; k >= 0; k--) {
    if (i + ((int64_t)1 << k) <= natoms) {
      link_free(h, i, k);
      i += (int64_t)1 << k;
    }
  }
  return h;
}

/* The log2 atoms of the block for N bytes, or -1 if none is that large. */
static int log_for(const BuddyHeap *h, size_t n) {
  int k = 0;
  while (k <= h->maxlog && (h->atom << k) < n) k++;
  return k <= h->maxlog ? k : -1;
}

size_t buddy_roundup(BuddyHeap *h, size_t n) {
  int k = n ? log_for(h, n) : -1;
  return k < 0 ? 0 : h->atom << k;
}

void *buddy_alloc(BuddyHeap *h, size_t n) {
  int k = n ? log_for(h, n) : -1;
  if (k < 0) return NULL;
  int j = k;
  while (j <= h->maxlog && h->head[j] < 0) j++;
  if (j > h->maxlog) return NULL;
  int64_t i = h->head[j];
  unlink_free(h, i, j);
  while (j > k) {
    j--;
    link_free(h, i + ((int64_t)1 << j), j);
  }
  h->ctrl[i] = (uint8_t)k;
  h->used += h->atom << k;
  h->nused++;
  void *p = h->base + (size_t)i * h->atom;
#ifndef NDEBUG
  memset(p, 0xA5, h->atom << k);
#endif
  return p;
}

/* The first atom of the block in use at P, or -1. */
static int64_t block_in_use(const BuddyHeap *h, const void *p) {
  const uint8_t *q = p;
  if (q < h->base || q >= h->base + (size_t)h->natoms * h->atom) return -1;
  size_t d = (size_t)(q - h->base);
  if (d % h->atom) return -1;
  int64_t i = (int64_t)(d / h->atom);
  return h->ctrl[i] & (FREE | 0x80) ? -1 : i;
}

size_t buddy_size(BuddyHeap *h, void *p) {
  int64_t i = block_in_use(h, p);
  return i < 0 ? 0 : h->atom << (h->ctrl[i] & LOGMASK);
}

int buddy_free(BuddyHeap *h, void *p) {
  int64_t i = block_in_use(h, p);
  if (i < 0) return PAGEDB_MISUSE;
  int k = h->ctrl[i] & LOGMASK;
  h->used -= h->atom << k;
  h->nused--;
  while (k < h->maxlog) {
    int64_t b = i ^ ((int64_t)1 << k);
    if (b + ((int64_t)1 << k) > h->natoms || h->ctrl[b] != (k | FREE)) break;
    unlink_free(h, b, k);
    h->ctrl[i > b ? i : b] = INSIDE;
    if (b < i) i = b;
    k++;
  }
  link_free(h, i, k);
  return PAGEDB_OK;
}

void buddy_stats(BuddyHeap *h, BuddyStats *st) {
  st->used = h->used;
  st->free = (size_t)h->natoms * h->atom - h->used;
  st->nused = h->nused;
  st->nfree = h->nfree;
  st->largest_free = 0;
  for (int k = h->maxlog; k >= 0; k--) {
    if (h->head[k] >= 0) {
      st->largest_free = h->atom << k;
      break;
    }
  }
}
