/*
** fuzz_open.c -- the open path on a hostile dataset: the data file's
** header, the catalog's schema and rows, the index file NAME-index (its
** header, directory and slots, mapped by the read-only open when the
** catalog names it; a scan of the catalog when it is refused), then the
** first samples read in copy mode, the epoch order, the statistics and
** pagedb_check (which compares every index entry with the catalog), and
** close.
**
** With FZ_PARTS the dataset has parts, each framed as a dataset is
** (NAME.parts/pK): their headers, catalogs, index files and page tables are
** read as a commit left them named, zero-copy too with FZ_MMAP, and SQL
** reads their rows.
**
** The input is a dataset in the framing of fuzz.h, written to this
** process's scratch directory.  Whatever it holds, every call must return
** a pagedb code, nothing may crash, overflow or leak, and closing must give
** back every allocation and pool buffer the handle took (the general
** allocator's block count and the pool's bytes in use return to where they
** were; SQLite's memory is in the first).
**
** A catalog given as SQL is run with ATTACH (and so VACUUM INTO) refused
** and a bound on its work, since its text is the fuzzer's.
*/
#include "fuzz.h"

#include "pagedb.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_READS 8            /* samples read per input */
#define SQL_STEPS 200000       /* virtual machine steps the catalog's SQL may take */

static int stop_sql(void *ctx) {
  (void)ctx;
  return 1;
}

/* Make the catalog at PATH by running SQL (N bytes) on an empty database. */
static void make_catalog(const char *path, const uint8_t *sql, size_t n) {
  char *text = malloc(n + 1);
  if (!text) abort();
  memcpy(text, sql, n);
  text[n] = 0;
  sqlite3 *c = NULL;
  if (sqlite3_open_v2(path, &c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) == SQLITE_OK) {
    sqlite3_limit(c, SQLITE_LIMIT_ATTACHED, 0);   /* no other file is touched */
    sqlite3_limit(c, SQLITE_LIMIT_LENGTH, 1 << 20);
    sqlite3_db_config(c, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_progress_handler(c, SQL_STEPS, stop_sql, NULL);
    sqlite3_exec(c, text, NULL, NULL, NULL);      /* an error keeps what ran */
  }
  sqlite3_close(c);
  free(text);
}

/* The data file at PATH: SIZE bytes, zero but for the segments in P[0..N). */
static void make_data(const char *path, uint32_t size, const uint8_t *p, size_t n) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, size) != 0) abort();
  while (n >= 6) {
    uint32_t off = fz_get32(p), len = (uint32_t)p[4] | (uint32_t)p[5] << 8;
    p += 6;
    n -= 6;
    if (len > n) len = (uint32_t)n;
    if (off < size) {
      uint32_t k = len < size - off ? len : size - off;
      if (pwrite(fd, p, k, off) != (ssize_t)k) abort();
    }
    p += len;
    n -= len;
  }
  close(fd);
}

static void read_fields(pagedb *db, pagedb_reader *r, int64_t id) {
  uint8_t small[16];
  for (int f = 0; f < pagedb_field_count(db); f++) {
    int t = pagedb_field_type(db, f), rc;
    if (t == PAGEDB_INT) {
      int64_t v;
      fz_rc(pagedb_read_int(r, id, f, &v), "pagedb_read_int");
    } else if (t == PAGEDB_REAL) {
      double v;
      fz_rc(pagedb_read_real(r, id, f, &v), "pagedb_read_real");
    } else {
      const void *p;
      size_t n, m;
      rc = pagedb_read(r, id, f, &p, &n);
      fz_rc(rc, "pagedb_read");
      if (rc == PAGEDB_OK && n > 0) {
        /* Touch every byte: a pointer past the buffer shows here. */
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < n; i++) sum ^= ((const uint8_t *)p)[i];
        (void)sum;
      }
      rc = pagedb_read_into(r, id, f, small, sizeof small, &m);
      fz_rc(rc, "pagedb_read_into");
    }
    (void)pagedb_reader_errmsg(r);
  }
}

static int sql_row(void *ctx, int ncol, char **vals, char **names) {
  (void)ctx, (void)ncol, (void)vals, (void)names;
  return 0;
}

/* Read the first samples of the sequential order, then check. */
static void use(pagedb *db, int flags) {
  int64_t n = 0;
  int rc = pagedb_order(db, PAGEDB_ORDER_SEQUENTIAL, 0, 0, 0, 1, NULL, &n);
  fz_rc(rc, "pagedb_order");
  int64_t ids[MAX_READS];
  int64_t *all = rc == PAGEDB_OK && n > 0 ? malloc((size_t)n * sizeof *all) : NULL;
  int nread = 0;
  if (all && pagedb_order(db, PAGEDB_ORDER_SEQUENTIAL, 0, 0, 0, 1, all, &n) == PAGEDB_OK)
    for (; nread < n && nread < MAX_READS; nread++) ids[nread] = all[nread];
  free(all);
  /* Copy mode, then with FZ_MMAP zero-copy: a part's map, or its copy in
  ** memory (parts.c), whose bounds come from the part's own files. */
  for (int mode = 0; mode < (flags & FZ_MMAP ? 2 : 1); mode++) {
    pagedb_reader *r;
    int how = (mode ? PAGEDB_READ_MMAP : PAGEDB_READ_COPY) | (flags & FZ_VERIFY ? PAGEDB_READ_VERIFY : 0);
    rc = pagedb_reader_open(db, how, &r);
    fz_rc(rc, "pagedb_reader_open");
    if (rc == PAGEDB_OK) {
      for (int i = 0; i < nread; i++) read_fields(db, r, ids[i]);
      read_fields(db, r, -1);
      pagedb_reader_close(r);
    }
  }
  /* SQL over table sample: with parts' rows by reference, their catalogs
  ** are opened and read (catref.c). */
  if (flags & FZ_PARTS) {
    fz_rc(pagedb_sql(db, "SELECT count(*), sum(id) FROM sample", sql_row, NULL), "pagedb_sql");
    /* The datasets under NAME.parts/ that no part row names. */
    fz_rc(pagedb_parts_orphans(db, 0, 0, NULL, NULL, NULL), "pagedb_parts_orphans");
  }
  pagedb_stat st;
  fz_rc(pagedb_stats(db, &st), "pagedb_stats");
  int64_t problems;
  fz_rc(pagedb_check(db, flags & FZ_FULLCHECK ? 0 : PAGEDB_CHECK_QUICK, NULL, NULL, &problems), "pagedb_check");
}

/* Cached pool buffers are given back first: each has a general allocation. */
static void counters(int64_t *blocks, int64_t *pool) {
  int64_t high;
  pagedb_release_memory(SIZE_MAX);
  pagedb_status(PAGEDB_STATUS_MALLOC_COUNT, blocks, &high, 0);
  pagedb_status(PAGEDB_STATUS_POOL_USED, pool, &high, 0);
}

/* Write the dataset framed in DATA[0..N) (fuzz.h) as NAME in the scratch
** directory: its index NAME-index, with TOP its parts NAME.parts/pK, its
** data file NAME and its catalog NAME-catalog.  Returns its flags, or -1
** when the frame is too short to hold any (nothing is then written). */
static int write_dataset(const char *name, const uint8_t *data, size_t n, int top) {
  if (n < FZ_HDR) return -1;
  int flags = data[0];
  uint32_t size = fz_get32(data + 1), catlen = fz_get32(data + 5);
  if (size > FZ_MAX_FILE) size = FZ_MAX_FILE;
  if (catlen > n - FZ_HDR) catlen = (uint32_t)(n - FZ_HDR);
  char path[FZ_PATH], nm[FZ_PATH];
  const uint8_t *rest = data + FZ_HDR + catlen;
  size_t left = n - FZ_HDR - catlen;
  if ((flags & FZ_INDEX) && left >= 8) {
    uint32_t ixsize = fz_get32(rest), ixlen = fz_get32(rest + 4);
    if (ixsize > FZ_MAX_FILE) ixsize = FZ_MAX_FILE;
    if (ixlen > left - 8) ixlen = (uint32_t)(left - 8);
    snprintf(nm, sizeof nm, "%s-index", name);
    fz_path(path, nm);
    make_data(path, ixsize, rest + 8, ixlen);
    rest += 8 + ixlen;
    left -= 8 + ixlen;
  }
  if (top && (flags & FZ_PARTS) && left >= 1) {
    int np = rest[0] % (FZ_MAX_PARTS + 1);
    rest++;
    left--;
    for (int k = 0; k < np && left >= 4; k++) {
      uint32_t plen = fz_get32(rest);
      rest += 4;
      left -= 4;
      if (plen > left) plen = (uint32_t)left;
      snprintf(nm, sizeof nm, "%s.parts/p%d", name, k);
      write_dataset(nm, rest, plen, 0);
      rest += plen;
      left -= plen;
    }
  }
  fz_path(path, name);
  make_data(path, size, rest, left);
  snprintf(nm, sizeof nm, "%s-catalog", name);
  fz_path(path, nm);
  if (flags & FZ_SQL) make_catalog(path, data + FZ_HDR, catlen);
  else fz_write(path, data + FZ_HDR, catlen);
  return flags;
}

/* Remove what an earlier input left of dataset NAME. */
static void remove_dataset(const char *name) {
  static const char *suffix[] = { "", "-catalog", "-catalog-wal", "-catalog-shm", "-catalog-journal", "-index",
                                  "-index.new", ".vacuum", ".vacuum-catalog" };
  char path[FZ_PATH], nm[FZ_PATH];
  for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
    snprintf(nm, sizeof nm, "%s%s", name, suffix[i]);
    fz_path(path, nm);
    fz_unlink(path);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  if (n < FZ_HDR) return 0;
  pagedb_initialize();      /* before SQLite's first use: its memory is counted */
  char path[FZ_PATH];
  remove_dataset("d");
  for (int k = 0; k < FZ_MAX_PARTS; k++) {
    char nm[32];
    snprintf(nm, sizeof nm, "d.parts/p%d", k);
    remove_dataset(nm);
  }
  fz_path(path, "d.parts");
  if (mkdir(path, 0700) != 0 && errno != EEXIST) abort();
  int flags = write_dataset("d", data, n, 1);
  fz_path(path, "d");

  int64_t blocks0, pool0, blocks1, pool1;
  counters(&blocks0, &pool0);
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY | (flags & FZ_CHECKOPEN ? PAGEDB_OPEN_CHECK : 0), NULL);
  fz_rc(rc, "pagedb_open");
  if (strlen(pagedb_errmsg(db)) == 0) abort();
  if (rc == PAGEDB_OK) use(db, flags);
  fz_rc(pagedb_close(db), "pagedb_close");
  counters(&blocks1, &pool1);
  if (blocks1 != blocks0 || pool1 != pool0) {
    fprintf(stderr, "fuzz_open: leak: %lld allocations and %lld pool bytes before the open, %lld and %lld after"
            " the close\n", (long long)blocks0, (long long)pool0, (long long)blocks1, (long long)pool1);
    abort();
  }
  return 0;
}
