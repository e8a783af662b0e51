/*
** pager.c -- the data file: fixed-size pages claimed atomically, written in
** parallel, made durable as a contiguous prefix.
**
** FILE LAYOUT
**
**   [0, 4096)              header (below); written once at creation
**   [4096, D)              a hole: D, the data offset, is the smaller of
**                          the page size and 2 MiB (files of format 1 made
**                          before: 4096)
**   D + k*page_size        page k; a run of n pages starts with a 64-byte
**                          run header, then the records of its samples
**
** Why D: the page cache backs a file with large folios (up to 2 MiB) only
** where a write covers a whole naturally aligned range.  With pages at
** 2 MiB-aligned offsets and every nearly full run padded to the end of its
** last 2 MiB (see fill_end), a warm dataset is mapped 2 MiB at a time and
** zero-copy reads fault a few hundred times less often: 3-4x faster here.
**
**   Header (little-endian):          Run header (little-endian):
**     0  16  magic "pagedb data\0..."   0   8  magic "PDBRUN\0\0"
**    16   4  format version (2)         8  16  dataset uuid
**    20   4  header size (4096)        24   8  page number
**    24   8  page size                 32   4  pages in the run
**    32  16  dataset uuid              36   4  samples in the run
**    48   8  creation time (unix s)    40   8  bytes used, header included
**    56   8  data offset D             48   8  pdb_sum of bytes 64..used
**    64  56  reserved (0)              56   8  checksum of bytes 0..55
**   120   8  checksum of bytes 0..119
**
** The uuid ties the data file to its catalog and every run to its dataset;
** the page number in a run header tells a page copied from elsewhere.
**
** STATE OF A PAGE
**
**   free --claim--> claimed --write--> written --prefix--> ready
**        (pager_claim)     (pager_write_start, (pager_done: every page
**                           _wait, pager_done)   before it is written)
**   ready --commit--> committed
**        (the api syncs with pager_sync, records the run in the catalog,
**         then calls nothing here: the catalog's committed page count is
**         the only durable statement of what is committed)
**
** INVARIANTS
**
**   1. committed <= prefix <= claimed.  Pages below prefix are all written
**      (or dead); pages in [prefix, claimed) are being filled or written, or
**      are written and wait in the pending list for an earlier page.
**   2. A run is claimed with one atomic fetch-and-add, so runs never overlap
**      and no writer ever waits for another to claim or to write.
**   3. Every claimed run is handed to pager_done() exactly once, written or
**      dead; otherwise the prefix could never pass it.  The one exception
**      is the last claim, given back whole (pager_unclaim) before any of it
**      was handed over: it is then free again, not claimed.
**   4. Durable state is the prefix recorded by the last catalog commit, and
**      the catalog commits only after pager_sync() covered that prefix: a
**      crash at any instant leaves the catalog's prefix whole on disk.
**   5. Pages past the committed prefix are never read and are discarded at
**      the next writable open (pager_recover), so their space is reused.
**   6. A failed sync is sticky: the kernel may have dropped the dirty pages,
**      so no later sync may report them durable.
**
** LOCKS
**
**   mu guards prefix, pending and ready; it is held for a few pointer
**   operations per run, never during I/O.  mapmu serialises remapping;
**   readers load the map pointer without a lock.
*/
#include "pager.h"
#include "os.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static const char kMagic[16] = "pagedb data";
static const char kRunMagic[8] = "PDBRUN";

/* A retired map, kept until close so that pointers handed out stay valid. */
typedef struct OldMap {
  struct OldMap *next;
  const void *base;
  size_t len;
} OldMap;

struct Pager {
  pagedb *db;                /* for error messages only */
  pagedb_vfs *vfs;
  pagedb_file *fd;
  char *path;
  uint32_t page_size;
  uint8_t uuid[16];
  int readonly;
  int poisoned;              /* sticky sync failure (invariant 6) */
  uint32_t align;            /* I/O alignment: the sector size if direct, else 1 */
  uint64_t data_off;         /* file offset of page 0 (D above) */

  _Atomic uint64_t claimed;  /* next unclaimed page */

  pthread_mutex_t mu;
  uint64_t prefix;           /* every page below is written (or dead) */
  PageDone *pending;         /* written runs past the prefix, by page number */
  PageDone *ready;           /* runs in the prefix not yet taken */
  PageDone **ready_tail;
  uint64_t synced_size;      /* file size at the last successful sync */

  pthread_mutex_t mapmu;
  _Atomic(const uint8_t *) map;   /* file mapped from offset MAPOFF */
  size_t maplen;
  /* 0, or data_off when the map holds the data region alone (xMapAt: a
  ** part's).  Set before the first map is published, never changed: a
  ** reader that loaded the map may use it without the lock. */
  uint64_t mapoff;
  OldMap *old;

  /* The VFS calls made on the file since it was opened (pager_io).  Only
  ** counts, read without any ordering: relaxed atomics suffice. */
  _Atomic uint64_t io_reads, io_read_bytes, io_writes, io_write_bytes, io_syncs;
};

/* Page 0's first byte in MAP, a map of P. */
static const uint8_t *map_data(const Pager *p, const uint8_t *map) {
  assert(p->mapoff <= p->data_off);
  return map + (p->data_off - p->mapoff);
}

static void count_io(_Atomic uint64_t *calls, _Atomic uint64_t *bytes, uint64_t ncalls, uint64_t nbytes) {
  atomic_fetch_add_explicit(calls, ncalls, memory_order_relaxed);
  if (bytes) atomic_fetch_add_explicit(bytes, nbytes, memory_order_relaxed);
}

/* The I/O of the data file goes through these, so that pager_io counts it. */
static int io_read(Pager *p, void *buf, size_t n, uint64_t off) {
  count_io(&p->io_reads, &p->io_read_bytes, 1, n);
  return pdb_os_read(p->fd, buf, n, off);
}
static int io_write(Pager *p, const void *buf, size_t n, uint64_t off) {
  count_io(&p->io_writes, &p->io_write_bytes, 1, n);
  return pdb_os_write(p->fd, buf, n, off);
}
static int io_sync(Pager *p, int flags) {
  count_io(&p->io_syncs, NULL, 1, 0);
  return pdb_os_sync(p->fd, flags);
}

void pager_io(Pager *p, PagerIo *out) {
  out->reads = atomic_load_explicit(&p->io_reads, memory_order_relaxed);
  out->read_bytes = atomic_load_explicit(&p->io_read_bytes, memory_order_relaxed);
  out->writes = atomic_load_explicit(&p->io_writes, memory_order_relaxed);
  out->write_bytes = atomic_load_explicit(&p->io_write_bytes, memory_order_relaxed);
  out->syncs = atomic_load_explicit(&p->io_syncs, memory_order_relaxed);
}

static int os_fail(Pager *p, pdb_msg *m, int rc, const char *what) {
  int e = pdb_os_errno(p->fd);
  char why[PDB_MSG_MAX];
  pdb_os_errmsg(p->fd, why, sizeof why);   /* a remote server's answer */
  if (why[0]) return pdb_err(p->db, m, rc, "%s %s: %s", what, p->path, why);
  return pdb_err(p->db, m, rc, "%s %s: %s", what, p->path, e ? strerror(e) : pagedb_errstr(rc));
}

static void encode_header(const Pager *p, uint8_t *h, uint64_t created) {
  memset(h, 0, PDB_HEADER_SIZE);
  memcpy(h, kMagic, sizeof kMagic);
  pdb_put32(h + 16, PDB_FORMAT);
  pdb_put32(h + 20, PDB_HEADER_SIZE);
  pdb_put64(h + 24, p->page_size);
  memcpy(h + 32, p->uuid, 16);
  pdb_put64(h + 48, created);
  pdb_put64(h + 56, p->data_off);
  pdb_put64(h + 120, pdb_checksum(h, 120));
}

static int valid_page_size(uint64_t n) {
  return n >= PAGEDB_MIN_PAGE_SIZE && n <= PAGEDB_MAX_PAGE_SIZE && (n & (n - 1)) == 0;
}

/* The unit the page cache maps whole: a PMD-sized folio, or a smaller page. */
static uint64_t fill_unit(uint64_t page_size) {
  return page_size < PDB_FOLIO_MAX ? page_size : PDB_FOLIO_MAX;
}

static Pager *pager_new(pagedb *db, pagedb_vfs *vfs, const char *path) {
  Pager *p = pdb_calloc(1, sizeof *p);
  if (!p) return NULL;
  p->path = pdb_strdup(path);
  if (!p->path) {
    pdb_free(p);
    return NULL;
  }
  p->db = db;
  p->vfs = vfs;
  p->ready_tail = &p->ready;
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->mapmu, NULL);
  return p;
}

static int open_fail(Pager *p, pdb_msg *m, int rc) {
  if (rc == PAGEDB_NOMEM) return pdb_err(p->db, m, rc, "out of memory opening %s", p->path);
  const char *told = pdb_os_take_why();    /* a remote server's answer */
  if (told[0]) return pdb_err(p->db, m, rc, "cannot open data file %s: %s", p->path, told);
  const char *e = rc == PAGEDB_CANTOPEN_NOENT ? "no such file" : strerror(errno);
  const char *why = rc == PAGEDB_CANTOPEN_DIRECT ? " (the file system refuses O_DIRECT)"
                  : rc == PAGEDB_CANTOPEN_URING ? " (setting up io_uring failed: the kernel disables it, or a"
                                                  " seccomp policy or a container forbids it)"
                  : "";
  return pdb_err(p->db, m, rc, "cannot open data file %s with the %s VFS: %s%s", p->path, p->vfs->zName, e, why);
}

/* Learn the file's alignment needs once it is open. */
static void adopt_file(Pager *p) {
  p->align = (pdb_os_caps(p->fd) & PAGEDB_IOCAP_DIRECT) ? (uint32_t)p->fd->pMethods->xSectorSize(p->fd) : 1;
  assert(p->align > 0 && (p->align & (p->align - 1)) == 0 && p->align <= PDB_HEADER_SIZE);
}

static int write_header(Pager *p, pdb_msg *m) {
  _Alignas(PDB_HEADER_SIZE) uint8_t h[PDB_HEADER_SIZE];   /* O_DIRECT-ready */
  encode_header(p, h, (uint64_t)time(NULL));
  int rc = io_write(p, h, sizeof h, 0);
  if (rc == PAGEDB_OK) rc = io_sync(p, PAGEDB_SYNC_FULL);
  if (rc != PAGEDB_OK) return os_fail(p, m, rc, "cannot write the header of");
  p->synced_size = PDB_HEADER_SIZE;
  return PAGEDB_OK;
}

int pager_create(pagedb *db, pdb_msg *m, pagedb_vfs *vfs, const char *path,
                 uint32_t page_size, Pager **pp) {
  assert(valid_page_size(page_size));
  *pp = NULL;
  Pager *p = pager_new(db, vfs, path);
  if (!p) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening %s", path);
  p->page_size = page_size;
  p->data_off = fill_unit(page_size);
  pdb_random(p->uuid, sizeof p->uuid);
  int rc = pdb_os_open(vfs, path, PAGEDB_VFS_READWRITE | PAGEDB_VFS_CREATE | PAGEDB_VFS_EXCLUSIVE, &p->fd);
  if (rc != PAGEDB_OK) {
    rc = open_fail(p, m, rc);
  } else {
    adopt_file(p);
    rc = write_header(p, m);
    /* The new name must survive a crash as well as its contents. */
    if (rc == PAGEDB_OK && vfs->xSyncDir && vfs->xSyncDir(vfs, path) != PAGEDB_OK)
      rc = pdb_err(db, m, PAGEDB_IOERR_SYNC, "cannot sync the directory of %s: %s", path, strerror(errno));
  }
  if (rc != PAGEDB_OK) {
    pager_close(p);
    return rc;
  }
  *pp = p;
  return PAGEDB_OK;
}

/* Validate header H of a file of SIZE bytes and adopt its fields. */
static int decode_header(Pager *p, pdb_msg *m, const uint8_t *h, uint64_t size) {
  if (size == 0) return pdb_err(p->db, m, PAGEDB_NOTADB, "%s is not a pagedb data file: it is empty", p->path);
  if (size < 128 || memcmp(h, kMagic, sizeof kMagic) != 0)
    return pdb_err(p->db, m, PAGEDB_NOTADB, "%s is not a pagedb data file: no pagedb header at offset 0", p->path);
  uint32_t version = pdb_get32(h + 16);
  if (version != PDB_FORMAT)
    return pdb_err(p->db, m, PAGEDB_NOTADB_VERSION,
                   "%s has format version %u; this pagedb (%s) reads version %u only%s",
                   p->path, version, PAGEDB_VERSION, PDB_FORMAT,
                   version < PDB_FORMAT ? " (version 1 predates checksums and codecs: write the dataset again)" : "");
  if (pdb_get64(h + 120) != pdb_checksum(h, 120))
    return pdb_err(p->db, m, PAGEDB_CORRUPT_HEADER, "%s: header checksum mismatch (bytes 0..127 damaged)", p->path);
  if (size < PDB_HEADER_SIZE)
    return pdb_err(p->db, m, PAGEDB_CORRUPT_TRUNCATED, "%s: file is %llu bytes, shorter than its %u-byte header",
                   p->path, (unsigned long long)size, PDB_HEADER_SIZE);
  uint64_t ps = pdb_get64(h + 24);
  uint64_t d = pdb_get64(h + 56);
  /* D is 4096 or a larger multiple of it no larger than a page: aligned
  ** for O_DIRECT, and never far into the file. */
  if (version == 0 || pdb_get32(h + 20) != PDB_HEADER_SIZE || !valid_page_size(ps) || d < PDB_HEADER_SIZE ||
      d % PDB_HEADER_SIZE != 0 || d > ps)
    return pdb_err(p->db, m, PAGEDB_CORRUPT_HEADER,
                   "%s: header fields out of range (version %u, page size %llu, data offset %llu)", p->path,
                   version, (unsigned long long)ps, (unsigned long long)d);
  p->page_size = (uint32_t)ps;
  p->data_off = d;
  memcpy(p->uuid, h + 32, 16);
  return PAGEDB_OK;
}

int pager_open(pagedb *db, pdb_msg *m, pagedb_vfs *vfs, const char *path, int readonly, Pager **pp) {
  *pp = NULL;
  Pager *p = pager_new(db, vfs, path);
  if (!p) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening %s", path);
  p->readonly = readonly;
  int rc = pdb_os_open(vfs, path, readonly ? PAGEDB_VFS_READONLY : PAGEDB_VFS_READWRITE, &p->fd);
  if (rc != PAGEDB_OK) {
    rc = open_fail(p, m, rc);
  } else {
    _Alignas(PDB_HEADER_SIZE) uint8_t h[PDB_HEADER_SIZE];
    uint64_t size = 0;
    adopt_file(p);
    rc = pdb_os_size(p->fd, &size);
    /* Bytes others may have written (a shared chunk cache): the header,
    ** which says where everything is, is taken from the source itself;
    ** every value is checked against the index from then on (the opener
    ** sets db->untrusted: reader.c). */
    if (rc == PAGEDB_OK && pager_untrusted(p)) rc = pdb_os_refetch(p->fd, 0, PDB_HEADER_SIZE);
    if (rc == PAGEDB_OK) {
      rc = io_read(p, h, sizeof h, 0);
      if (rc == PAGEDB_IOERR_SHORT_READ) rc = PAGEDB_OK;   /* zero-filled; judged below */
    }
    if (rc != PAGEDB_OK) rc = os_fail(p, m, rc, "cannot read the header of");
    else rc = decode_header(p, m, h, size);
    p->synced_size = size;
  }
  if (rc != PAGEDB_OK) {
    pager_close(p);
    return rc;
  }
  *pp = p;
  return PAGEDB_OK;
}

void pager_close(Pager *p) {
  if (!p) return;
  const uint8_t *map = atomic_load_explicit(&p->map, memory_order_relaxed);
  if (map) pdb_os_unmap(p->fd, map, p->maplen);
  for (OldMap *o = p->old, *next; o; o = next) {
    next = o->next;
    pdb_os_unmap(p->fd, o->base, o->len);
    pdb_free(o);
  }
  /* Runs never taken belong to nobody else by now; their owners embed
  ** PageDone first and allocate with malloc, so pdb_free() releases them. */
  for (PageDone *d = p->pending, *next; d; d = next) { next = d->next; pdb_free(d); }
  for (PageDone *d = p->ready, *next; d; d = next) { next = d->next; pdb_free(d); }
  pdb_os_close(p->fd);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->mapmu);
  pdb_free(p->path);
  pdb_free(p);
}

uint32_t pager_page_size(const Pager *p) { return p->page_size; }
const uint8_t *pager_uuid(const Pager *p) { return p->uuid; }
uint64_t pager_data_off(const Pager *p) { return p->data_off; }
pagedb_file *pager_file(Pager *p) { return p->fd; }

int pager_set_page_size(Pager *p, pdb_msg *m, uint32_t page_size) {
  assert(valid_page_size(page_size));
  assert(atomic_load(&p->claimed) == 0);
  p->page_size = page_size;
  p->data_off = fill_unit(page_size);
  return write_header(p, m);
}

/*
** The busy timeout (PAGEDB_CONFIG_BUSY_TIMEOUT, else PAGEDB_BUSY_TIMEOUT in
** the environment, else 0): how long pager_lock waits for another writer
** to let go, as SQLite's busy_timeout.  -1 while no pagedb_config set it.
*/
#define BUSY_MAX_MS 86400000
static _Atomic int64_t busy_ms = -1;

int pager_busy_config(int64_t ms) {
  if (ms < -1 || ms > BUSY_MAX_MS) return PAGEDB_MISUSE;
  atomic_store(&busy_ms, ms);
  return PAGEDB_OK;
}

/* The timeout in force into *MS; PAGEDB_CANTOPEN for a bad environment. */
static int busy_timeout(Pager *p, pdb_msg *m, int64_t *ms) {
  *ms = atomic_load(&busy_ms);
  if (*ms >= 0) return PAGEDB_OK;
  *ms = 0;
  const char *e = getenv("PAGEDB_BUSY_TIMEOUT");
  if (!e || !*e) return PAGEDB_OK;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(e, &end, 10);
  if (errno || *end || v < 0 || v > BUSY_MAX_MS || !(*e >= '0' && *e <= '9'))
    return pdb_err(p->db, m, PAGEDB_CANTOPEN, "PAGEDB_BUSY_TIMEOUT must be a whole number of milliseconds,"
                   " 0..%d, not \"%.64s\"", BUSY_MAX_MS, e);
  *ms = v;
  return PAGEDB_OK;
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The lock, waiting up to the busy timeout for it: naps from 1 ms,
** doubling to 50 ms, so that a short hold costs little and a long one
** few wake-ups. */
int pager_lock(Pager *p, pdb_msg *m) {
  int64_t ms = 0;
  int rc = busy_timeout(p, m, &ms);
  if (rc != PAGEDB_OK) return rc;
  rc = pdb_os_lock(p->fd, PAGEDB_LOCK_EXCLUSIVE);
  if (rc == PAGEDB_BUSY_LOCKED && ms > 0) {
    /* In nanoseconds: a wait counted in whole milliseconds gave up to one
    ** early, and a caller timing it saw less than the timeout. */
    int64_t end = now_ns() + ms * 1000000, nap = 1000000, left;
    while (rc == PAGEDB_BUSY_LOCKED && (left = end - now_ns()) > 0) {
      int64_t d = nap < left ? nap : left;
      struct timespec ts = { (time_t)(d / 1000000000), (long)(d % 1000000000) };
      while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
      if (nap < 50000000) nap = nap * 2 < 50000000 ? nap * 2 : 50000000;
      rc = pdb_os_lock(p->fd, PAGEDB_LOCK_EXCLUSIVE);
    }
  }
  if (rc == PAGEDB_BUSY_LOCKED)
    return pdb_err(p->db, m, rc, "%s is being written by another handle or process%s", p->path,
                   ms > 0 ? " (the busy timeout ran out)" : "");
  if (rc != PAGEDB_OK) return os_fail(p, m, rc, "cannot lock");
  return PAGEDB_OK;
}

int pager_recover(Pager *p, pdb_msg *m, uint64_t committed, uint64_t data_end, int writable) {
  uint64_t size;
  int rc = pdb_os_size(p->fd, &size);
  if (rc != PAGEDB_OK) return os_fail(p, m, rc, "cannot size");
  /* An empty dataset is the header alone: the hole before page 0 appears
  ** with the first write. */
  uint64_t need = committed ? p->data_off + data_end : PDB_HEADER_SIZE;
  if (size < need)
    return pdb_err(p->db, m, PAGEDB_CORRUPT_TRUNCATED,
                   "%s is truncated: its %llu committed pages need %llu bytes but the file has %llu",
                   p->path, (unsigned long long)committed, (unsigned long long)need,
                   (unsigned long long)size);
  atomic_store(&p->claimed, committed);
  p->prefix = committed;
  uint64_t end = committed ? p->data_off + committed * p->page_size : PDB_HEADER_SIZE;
  if (writable && size > end) {
    /* Invariant 5: what lies past the committed pages was never committed. */
    rc = pdb_os_truncate(p->fd, end);
    if (rc == PAGEDB_OK) rc = io_sync(p, PAGEDB_SYNC_FULL);
    if (rc != PAGEDB_OK) return os_fail(p, m, rc, "cannot discard uncommitted pages of");
    size = end;
  }
  p->synced_size = size;
  return PAGEDB_OK;
}

int pager_claim(Pager *p, pdb_msg *m, uint32_t n, uint64_t *pgno) {
  assert(n >= 1);
  /* Relaxed is enough: the claim only has to be unique; the written bytes
  ** are published to other threads through mu in pager_done(). */
  uint64_t first = atomic_fetch_add_explicit(&p->claimed, n, memory_order_relaxed);
  if ((first + n) > PDB_MAX_DATA / p->page_size)
    return pdb_err(p->db, m, PAGEDB_FULL, "%s: no page numbers left (%llu pages claimed)", p->path,
                   (unsigned long long)first);
  *pgno = first;
  return PAGEDB_OK;
}

int pager_unclaim(Pager *p, uint64_t pgno, uint64_t n) {
  /* Only the last claim can be given back: one compare-and-swap, which
  ** fails if anything was claimed after it.  The claim was relaxed, and so
  ** is this: no bytes are published either way. */
  uint64_t end = pgno + n;
  return atomic_compare_exchange_strong_explicit(&p->claimed, &end, pgno, memory_order_relaxed,
                                                 memory_order_relaxed);
}

/*
** How many bytes to write of a run that uses USED: direct I/O writes whole
** sectors, and a run that nearly fills its last fill unit is padded to the
** unit's end, so that the unit gets one large folio (the FILE LAYOUT note).
** The pad is at most a sixteenth of the run: small commits stay small.
*/
static size_t fill_end(const Pager *p, size_t used) {
  size_t unit = (size_t)fill_unit(p->page_size);
  size_t whole = (used + unit - 1) & ~(unit - 1);
  if (p->data_off % unit == 0 && whole - used <= used / 16) return whole;
  return (used + p->align - 1) & ~(size_t)(p->align - 1);
}

void pager_run_header(const uint8_t p[PDB_PAGE_HDR], RunHeader *h) {
  h->magic_ok = memcmp(p, kRunMagic, sizeof kRunMagic) == 0;
  memcpy(h->uuid, p + 8, 16);
  h->pgno = pdb_get64(p + 24);
  h->npages = pdb_get32(p + 32);
  h->nsamples = pdb_get32(p + 36);
  h->used = pdb_get64(p + 40);
  h->datasum = pdb_get64(p + 48);
  h->sum_ok = pdb_get64(p + 56) == pdb_checksum(p, 56);
}

int pager_write_start(Pager *p, pdb_msg *m, uint64_t pgno, uint32_t npages, uint32_t nsamples,
                      uint8_t *buf, size_t used, pagedb_aio *a) {
  assert(used >= PDB_PAGE_HDR && used <= (uint64_t)npages * p->page_size);
  assert(((uintptr_t)buf & (p->align - 1)) == 0);
  a->buf = buf;
  a->pPriv = NULL;
  if (p->poisoned)
    return pdb_err(p->db, m, PAGEDB_IOERR_SYNC, "%s: an earlier sync failed; the dataset accepts no more writes", p->path);
  memcpy(buf, kRunMagic, sizeof kRunMagic);
  memcpy(buf + 8, p->uuid, 16);
  pdb_put64(buf + 24, pgno);
  pdb_put32(buf + 32, npages);
  pdb_put32(buf + 36, nsamples);
  pdb_put64(buf + 40, used);
  /* The run's own checksum: a page can be checked without the catalog. */
  pdb_put64(buf + 48, pdb_sum(buf + PDB_PAGE_HDR, used - PDB_PAGE_HDR));
  pdb_put64(buf + 56, pdb_checksum(buf, 56));
  a->n = fill_end(p, used);
  a->off = p->data_off + pgno * p->page_size;
  memset(buf + used, 0, a->n - used);
  count_io(&p->io_writes, &p->io_write_bytes, 1, a->n);
  pdb_os_write_start(p->fd, a);
  return PAGEDB_OK;
}

int pager_write_wait(Pager *p, pdb_msg *m, pagedb_aio *a, int wait) {
  int rc = pdb_os_write_wait(p->fd, a, wait);
  if (rc != PAGEDB_OK && rc != PAGEDB_BUSY) {
    int e = pdb_os_errno(p->fd);
    return pdb_err(p->db, m, rc, "cannot write page %llu (%zu bytes at offset %llu) of %s: %s",
                   (unsigned long long)((a->off - p->data_off) / p->page_size), a->n,
                   (unsigned long long)a->off, p->path, e ? strerror(e) : pagedb_errstr(rc));
  }
  return rc;
}

int pager_async(Pager *p) {
  return (pdb_os_caps(p->fd) & PAGEDB_IOCAP_ASYNC_WRITE) != 0;
}

int pager_done(Pager *p, PageDone *d) {
  pthread_mutex_lock(&p->mu);
  assert(d->pgno >= p->prefix);
  PageDone **pp = &p->pending;
  while (*pp && (*pp)->pgno < d->pgno) pp = &(*pp)->next;
  d->next = *pp;
  *pp = d;
  int advanced = 0;
  while (p->pending && p->pending->pgno == p->prefix) {
    PageDone *r = p->pending;
    p->pending = r->next;
    r->next = NULL;
    p->prefix += r->npages;
    *p->ready_tail = r;
    p->ready_tail = &r->next;
    advanced = 1;
  }
  pthread_mutex_unlock(&p->mu);
  return advanced;
}

PageDone *pager_take(Pager *p) {
  pthread_mutex_lock(&p->mu);
  PageDone *r = p->ready;
  p->ready = NULL;
  p->ready_tail = &p->ready;
  pthread_mutex_unlock(&p->mu);
  return r;
}

uint64_t pager_claimed(Pager *p) { return atomic_load(&p->claimed); }

int pager_sync(Pager *p, pdb_msg *m) {
  if (p->poisoned)
    return pdb_err(p->db, m, PAGEDB_IOERR_SYNC, "%s: an earlier sync failed; nothing more can be made durable", p->path);
  uint64_t size;
  int rc = pdb_os_size(p->fd, &size);
  if (rc != PAGEDB_OK) return os_fail(p, m, rc, "cannot size");
  /* A grown file needs its new size durable too: fsync, not fdatasync. */
  rc = io_sync(p, size != p->synced_size ? PAGEDB_SYNC_FULL : PAGEDB_SYNC_DATA);
  if (rc != PAGEDB_OK) {
    /* Invariant 6, ENOSPC included: writeback that failed for want of
    ** space leaves the pages clean but unwritten just as EIO does, and the
    ** next fsync would succeed without them.  The message keeps the cause. */
    p->poisoned = 1;
    return os_fail(p, m, PAGEDB_IOERR_SYNC, "cannot sync");
  }
  p->synced_size = size;
  return PAGEDB_OK;
}

static int read_fail(Pager *p, pdb_msg *m, int rc, uint64_t off, size_t n) {
  int e = pdb_os_errno(p->fd);
  char why[PDB_MSG_MAX];
  pdb_os_errmsg(p->fd, why, sizeof why);
  if (why[0] && rc != PAGEDB_IOERR_SHORT_READ)
    return pdb_err(p->db, m, rc, "cannot read %zu bytes at offset %llu of %s: %s", n,
                   (unsigned long long)(p->data_off + off), p->path, why);
  return pdb_err(p->db, m, rc, "cannot read %zu bytes at offset %llu of %s: %s", n,
                 (unsigned long long)(p->data_off + off), p->path,
                 rc == PAGEDB_IOERR_SHORT_READ ? "file ends early" : e ? strerror(e) : pagedb_errstr(rc));
}

uint32_t pager_align(const Pager *p) { return p->align; }

int pager_read(Pager *p, pdb_msg *m, uint64_t off, void *buf, size_t n) {
  assert(((p->data_off + off) | n | (uintptr_t)buf) % p->align == 0);
  int rc = io_read(p, buf, n, p->data_off + off);
  return rc == PAGEDB_OK ? rc : read_fail(p, m, rc, off, n);
}

int pager_fetch(Pager *p, pdb_msg *m, uint64_t off, size_t n, uint8_t **buf, size_t *cap, const uint8_t **out) {
  int bad;
  return pager_fetch_batch(p, m, 1, &off, &(uint64_t){ n }, buf, cap, out, &bad);
}

/* The aligned file range [*A0, *A1) that holds data-region bytes
** [OFF, OFF+N). */
static void aligned_range(const Pager *p, uint64_t off, uint64_t n, uint64_t *a0, uint64_t *a1) {
  uint64_t pos = p->data_off + off;
  *a0 = pos & ~(uint64_t)(p->align - 1);
  *a1 = (pos + n + p->align - 1) & ~(uint64_t)(p->align - 1);
}

/* Make *BUF, a pool buffer, at least LEN bytes; its old contents are lost. */
static int reserve(Pager *p, pdb_msg *m, uint8_t **buf, size_t *cap, size_t len) {
  if (len <= *cap && *buf) return PAGEDB_OK;
  size_t c;
  uint8_t *nb = pdb_buf_alloc(len, &c);
  if (!nb) return pdb_err(p->db, m, PAGEDB_NOMEM, "out of memory reading %zu bytes of %s", len, p->path);
  pdb_buf_free(*buf);
  *buf = nb;
  *cap = c;
  return PAGEDB_OK;
}

/* A short read is fine when only the alignment padding lies past the end
** of the file. */
static int short_ok(Pager *p, uint64_t off, uint64_t n) {
  uint64_t size;
  return pdb_os_size(p->fd, &size) == PAGEDB_OK && size >= p->data_off + off + n;
}

int pager_fetch_batch(Pager *p, pdb_msg *m, int n, const uint64_t *off, const uint64_t *len,
                      uint8_t **buf, size_t *cap, const uint8_t **out, int *bad) {
  *bad = 0;
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    uint64_t a0, a1;
    aligned_range(p, off[i], len[i], &a0, &a1);
    total += (size_t)(a1 - a0) + PAGEDB_MAX_ALIGN - 1;
  }
  pagedb_iovec small[64];   /* single reads and common batches allocate nothing */
  pagedb_iovec *iov = n <= 64 ? small : pdb_malloc((size_t)n * sizeof *iov);
  int rc = iov ? reserve(p, m, buf, cap, total)
               : pdb_err(p->db, m, PAGEDB_NOMEM, "out of memory reading a batch of %d from %s", n, p->path);
  if (rc != PAGEDB_OK) {
    if (iov != small) pdb_free(iov);
    return rc;
  }
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    uint64_t a0, a1;
    aligned_range(p, off[i], len[i], &a0, &a1);
    /* Each extent at a multiple of PAGEDB_MAX_ALIGN in the buffer (a pool
    ** buffer is 4 KiB-aligned), so that its bytes keep the alignment their
    ** field gives them in the file (pagedb_field_add_aligned). */
    at = (size_t)pdb_align(at, PAGEDB_MAX_ALIGN);
    iov[i] = (pagedb_iovec){ *buf + at, (size_t)(a1 - a0), a0, PAGEDB_OK };
    out[i] = *buf + at + (p->data_off + off[i] - a0);
    at += (size_t)(a1 - a0);
  }
  const pagedb_io_methods *io = p->fd->pMethods;
  count_io(&p->io_reads, &p->io_read_bytes, (uint64_t)n, total);
  if (io->xReadBatch) {
    io->xReadBatch(p->fd, iov, n);
  } else {
    for (int i = 0; i < n; i++) iov[i].rc = io->xRead(p->fd, iov[i].buf, iov[i].n, iov[i].off);
  }
  for (int i = 0; i < n && rc == PAGEDB_OK; i++) {
    int r = iov[i].rc;
    if (r == PAGEDB_IOERR_SHORT_READ && short_ok(p, off[i], len[i])) r = PAGEDB_OK;
    if (r != PAGEDB_OK) {
      *bad = i;
      rc = read_fail(p, m, r, off[i], (size_t)len[i]);
    }
  }
  if (iov != small) pdb_free(iov);
  return rc;
}

int pager_madv(int hint) {
  static const int madv[] = {
    [PAGEDB_ADVISE_NORMAL] = MADV_NORMAL, [PAGEDB_ADVISE_SEQUENTIAL] = MADV_SEQUENTIAL,
    [PAGEDB_ADVISE_RANDOM] = MADV_RANDOM, [PAGEDB_ADVISE_WILLNEED] = MADV_WILLNEED,
    [PAGEDB_ADVISE_DONTNEED] = MADV_DONTNEED,
  };
  assert(hint >= PAGEDB_ADVISE_NORMAL && hint <= PAGEDB_ADVISE_DONTNEED);
  return madv[hint];
}

int pager_advise(Pager *p, pdb_msg *m, int hint, uint64_t end) {
  pthread_mutex_lock(&p->mapmu);
  const uint8_t *map = atomic_load_explicit(&p->map, memory_order_relaxed);
  int e = 0;
  if (map && end > 0 && madvise((void *)map, (size_t)(p->data_off - p->mapoff + end), pager_madv(hint)) != 0) e = errno;
  pthread_mutex_unlock(&p->mapmu);
  if (e) return pdb_err(p->db, m, PAGEDB_IOERR, "madvise of %s failed: %s", p->path, strerror(e));
  int rc = p->fd->pMethods->xAdvise ? p->fd->pMethods->xAdvise(p->fd, p->data_off, end, hint) : PAGEDB_OK;
  return rc == PAGEDB_OK ? rc : os_fail(p, m, rc, "cannot advise the kernel about");
}

void pager_map_willneed(Pager *p, uint64_t off, uint64_t n) {
  const uint8_t *map = atomic_load_explicit(&p->map, memory_order_acquire);
  if (!map || n == 0) return;
  /* Hinting only an extent's own pages makes the kernel read 4 KiB at a
  ** time where a fault would read around it: rounded out to 128 KiB (the
  ** default read-around) a cold zero-copy batch of W-small ran 4.5x faster
  ** and one of W-img 1.3x, and no hint reads more than a fault would. */
  const uintptr_t unit = (uintptr_t)128 << 10;
  uintptr_t a = (uintptr_t)(map_data(p, map) + off) & ~(unit - 1);
  uintptr_t b = ((uintptr_t)(map_data(p, map) + off + n) + unit - 1) & ~(unit - 1);
  if (a < (uintptr_t)map) a = (uintptr_t)map;   /* a map from data_off starts there */
  /* Only a hint: a failure (ENOMEM where the rounding passes the end of
  ** the map) changes nothing but speed. */
  madvise((void *)a, b - a, MADV_WILLNEED);
}

int pager_map_resident(Pager *p, uint64_t off, uint64_t n) {
  const uint8_t *map = atomic_load_explicit(&p->map, memory_order_acquire);
  if (!map || n == 0) return 1;
  uintptr_t a = (uintptr_t)(map_data(p, map) + off) & ~(uintptr_t)4095;
  uintptr_t b = (uintptr_t)(map_data(p, map) + off + n);
  unsigned char vec[256];
  while (a < b) {
    size_t len = b - a < sizeof vec * 4096 ? b - a : sizeof vec * 4096;
    if (mincore((void *)a, len, vec) != 0) return 1;
    for (size_t i = 0; i < (len + 4095) / 4096; i++)
      if (!(vec[i] & 1)) return 0;
    a += len;
  }
  return 1;
}

void pager_file_willneed(Pager *p, uint64_t off, uint64_t n) {
  if (n == 0 || p->align > 1) return;    /* a direct file has no cache to fill */
  const pagedb_io_methods *io = p->fd->pMethods;
  /* Only a hint, as above. */
  if (io->xAdvise) io->xAdvise(p->fd, p->data_off + off, n, PAGEDB_ADVISE_WILLNEED);
}

int pager_can_hold(Pager *p) {
  const pagedb_io_methods *io = p->fd->pMethods;
  return io->iVersion >= 4 && io->xHold && io->xRelease;
}

int pager_hold(Pager *p, pdb_msg *m, int n, const uint64_t *off, const uint64_t *len, const uint8_t **out,
               void **hold) {
  *hold = NULL;
  assert(pager_can_hold(p));
  uint64_t small[32];
  uint64_t *o = n <= 32 ? small : pdb_malloc((size_t)n * sizeof *o);
  if (!o) return pdb_err(p->db, m, PAGEDB_NOMEM, "out of memory reading %s", p->path);
  uint64_t total = 0;
  for (int i = 0; i < n; i++) o[i] = p->data_off + off[i], total += len[i];
  count_io(&p->io_reads, &p->io_read_bytes, (uint64_t)n, total);
  int rc = p->fd->pMethods->xHold(p->fd, o, len, n, (const void **)out, hold);
  if (o != small) pdb_free(o);
  if (rc != PAGEDB_OK) {
    *hold = NULL;
    if (rc != PAGEDB_NOMEM) rc = os_fail(p, m, rc, "cannot read");
    else rc = pdb_err(p->db, m, PAGEDB_NOMEM, "out of memory reading %s", p->path);
  }
  return rc;
}

void pager_release(Pager *p, void *hold) {
  if (hold) p->fd->pMethods->xRelease(p->fd, hold);
}

int pager_is_remote(Pager *p) { return (pdb_os_caps(p->fd) & PAGEDB_IOCAP_IMMUTABLE) != 0; }

int pager_untrusted(Pager *p) { return (pdb_os_caps(p->fd) & PAGEDB_IOCAP_UNTRUSTED) != 0; }

int pager_refetch(Pager *p, pdb_msg *m, uint64_t off, uint64_t len) {
  int rc = pdb_os_refetch(p->fd, p->data_off + off, len);
  return rc == PAGEDB_OK ? rc : os_fail(p, m, rc, "cannot fetch again from the server the bytes of");
}

int pager_map_fill(Pager *p, pdb_msg *m, int n, const uint64_t *off, const uint64_t *len) {
  const uint8_t *map = atomic_load_explicit(&p->map, memory_order_acquire);
  const pagedb_io_methods *io = p->fd->pMethods;
  if (!map || io->iVersion < 3 || !io->xMapFill) return PAGEDB_OK;
  assert(p->mapoff == 0);   /* a backend that fills maps is not asked for xMapAt */
  uint64_t small[2][32];
  uint64_t *o = n <= 32 ? small[0] : pdb_malloc((size_t)n * sizeof *o);
  uint64_t *l = n <= 32 ? small[1] : pdb_malloc((size_t)n * sizeof *l);
  int rc = o && l ? PAGEDB_OK : pdb_err(p->db, m, PAGEDB_NOMEM, "out of memory mapping %s", p->path);
  for (int i = 0; i < n && rc == PAGEDB_OK; i++) {
    o[i] = p->data_off + off[i];
    l[i] = len[i];
  }
  if (rc == PAGEDB_OK) rc = pdb_os_map_fill(p->fd, map, o, l, n);
  if (rc != PAGEDB_OK && rc != PAGEDB_NOMEM) rc = os_fail(p, m, rc, "cannot map the bytes asked of");
  if (o != small[0]) pdb_free(o);
  if (l != small[1]) pdb_free(l);
  return rc;
}

const uint8_t *pager_map(Pager *p) {
  /* Acquire pairs with the release in pager_map_ensure(): a reader that
  ** sees the new map sees it fully set up. */
  const uint8_t *base = atomic_load_explicit(&p->map, memory_order_acquire);
  return base ? map_data(p, base) : NULL;
}

const uint8_t *pager_map_span(Pager *p, uint64_t *len) {
  /* Acquire as pager_map().  MAPLEN is read under mapmu: it changes with
  ** the map, and a map is never shorter than the one it replaced, so the
  ** length of the map loaded, or of a later one, bounds it. */
  pthread_mutex_lock(&p->mapmu);
  const uint8_t *base = atomic_load_explicit(&p->map, memory_order_acquire);
  uint64_t n = base ? p->maplen - (p->data_off - p->mapoff) : 0;
  pthread_mutex_unlock(&p->mapmu);
  *len = n;
  return base ? map_data(p, base) : NULL;
}

int pager_detach(Pager *p) { return pdb_os_detach(p->fd); }

int pager_map_fills(Pager *p) {
  const pagedb_io_methods *io = p->fd->pMethods;
  return io->iVersion >= 3 && io->xMapFill != NULL;
}

int pager_map_ensure(Pager *p, pdb_msg *m, uint64_t end, int exact) {
  uint64_t need = p->data_off + end;
  pthread_mutex_lock(&p->mapmu);
  int rc = PAGEDB_OK;
  const uint8_t *cur = atomic_load_explicit(&p->map, memory_order_relaxed);
  if (!cur || need > p->mapoff + p->maplen) {
    /* EXACT (a file read only up to END: a part): its data region alone,
    ** from data_off where the backend can map from there, so that many such
    ** maps lie side by side, dense, under shared page tables.  A reserve of
    ** 1 GiB each put every part's pages under page tables of their own,
    ** and a map from offset 0 put the header's padding (D, up to 2 MiB)
    ** between one part's data and the next: random reads of 1,000 parts of
    ** 1 MB each ran at 92% of one file's, side by side at 94-96%
    ** (doc/benchmarks.md).  Else address space well past the need:
    ** mapping beyond the end of the file costs nothing until touched, and
    ** remaps stay rare. */
    if (!cur && exact && pdb_os_maps_at(p->fd) && p->data_off % (uint64_t)sysconf(_SC_PAGESIZE) == 0)
      p->mapoff = p->data_off;
    uint64_t len = exact ? (need - p->mapoff + 4095) & ~(uint64_t)4095
                         : need * 2 < ((uint64_t)1 << 30) ? ((uint64_t)1 << 30) : need * 2;
    OldMap *o = pdb_malloc(sizeof *o);
    const void *base = NULL;
    if (!o) {
      rc = pdb_err(p->db, m, PAGEDB_NOMEM, "out of memory mapping %s", p->path);
    } else if ((rc = p->mapoff ? pdb_os_map_at(p->fd, p->mapoff, len, &base)
                               : pdb_os_map_lazy(p->fd, len, &base)) != PAGEDB_OK) {   /* filled per read: pager_map_fill */
      pdb_free(o);
      rc = os_fail(p, m, rc, "cannot map");
    } else {
      const uint8_t *prev = atomic_load_explicit(&p->map, memory_order_relaxed);
      if (prev) {
        o->base = prev;
        o->len = p->maplen;
        o->next = p->old;
        p->old = o;
      } else {
        pdb_free(o);
      }
      p->maplen = len;
      atomic_store_explicit(&p->map, base, memory_order_release);
    }
  }
  pthread_mutex_unlock(&p->mapmu);
  return rc;
}
