/*
** pagedbInt.h -- definitions shared by every module of the library.
**
** Nothing here is public.  Modules call only downward:
**   mem.h  <-  vfs/ (os.h)  <-  pager.h  <-  index.h, catalog.h  <-  api
**   (main.c, writer.c, reader.c), and each has its own header.
*/
#ifndef PAGEDB_INT_H
#define PAGEDB_INT_H

#include "config.h"
#include "pagedb.h"
#include "mem.h"

#include <assert.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Branch hints for defensive checks that a correct program never takes,
** as SQLite's NEVER(): the code stays in release builds. */
#define NEVER(x)  __builtin_expect(!!(x), 0)
#define LIKELY(x) __builtin_expect(!!(x), 1)

#define PDB_MSG_MAX 512

/* qsort, unless one pass finds BASE in order already -- the common case of
** the commits' sorts: a writer's samples come in id order and, written by
** one writer, in address order too, so a commit of such parts sorts
** nothing (issue 26). */
static inline void pdb_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  const char *b = base;
  size_t i = 1;
  while (i < n && cmp(b + (i - 1) * size, b + i * size) <= 0) i++;
  if (i < n) qsort(base, n, size, cmp);
}

/* An error message buffer.  Every handle owns one. */
typedef struct pdb_msg {
  int rc;
  char text[PDB_MSG_MAX];
} pdb_msg;

/*
** Record an error: format the message into M (if not NULL) and into the
** calling thread's last-error slot for DB, then return RC so that callers
** can write "return pdb_err(...)".  RC must not be PAGEDB_OK.
*/
int pdb_err(pagedb *db, pdb_msg *m, int rc, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/* Copy message SRC (and its code) into M and the thread's slot; returns rc. */
int pdb_err_copy(pagedb *db, pdb_msg *m, const pdb_msg *src);

/* Drop the calling thread's message for DB (a handle opened or closed):
** DB is only compared, never dereferenced. */
void pdb_err_forget(const pagedb *db);

/* The text of M, or "not an error". */
const char *pdb_msg_text(const pdb_msg *m);

/* Little-endian encoding of on-disk integers. */
static inline void pdb_put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void pdb_put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t pdb_get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static inline uint64_t pdb_get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* O rounded up to a multiple of A, a power of two (a field's alignment:
** pagedb_field_add_aligned).  A value of alignment A starts at
** pdb_align(end of what comes before it, A). */
static inline uint64_t pdb_align(uint64_t o, uint64_t a) {
  return (o + a - 1) & ~(a - 1);
}

/* The splitmix64 finaliser: a cheap, well-mixed 64-bit hash. */
static inline uint64_t pdb_mix64(uint64_t z) {
  z ^= z >> 30; z *= 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27; z *= 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A 64-bit checksum of N bytes, for headers (not a cryptographic hash). */
uint64_t pdb_checksum(const void *p, size_t n);

/* The checksum of data: of every stored extent (in the catalog) and of
** every run's bytes (in its header).  XXH3-64 from libxxhash: in a perf
** profile of `pagedb-bench --workload W-img:5000 --vfs posix` (writes and
** reads) it took under 1% of the cycles, the kernel's page-cache copy 60%. */
uint64_t pdb_sum(const void *p, size_t n);

/* Fill N bytes with random data from the kernel (for uuids). */
void pdb_random(void *p, size_t n);

/* Format a uuid as 32 lowercase hex digits plus NUL into OUT. */
void pdb_uuid_hex(const uint8_t uuid[16], char out[33]);
/* The uuid of 32 lowercase hex digits HEX: 1, or 0 if HEX is not one. */
int pdb_uuid_parse(const char *hex, uint8_t uuid[16]);

#endif /* PAGEDB_INT_H */
