/*
** zbench.c -- pagedb-zbench: what compression costs and saves (issue 5).
**
**   1. Ingest of a workload (default W-small) with each codec given, with 1
**      and 2 writer threads, durable (commit included): samples/s, and the
**      bytes stored against the raw bytes (the compression ratio).  Beside
**      it, the raw reference for the compressed bytes: as many bytes as the
**      lz4 dataset stores, written with O_DIRECT in 8 MiB pieces and synced
**      (the write limit that compression cannot beat), and the CPU each
**      sample cost (all threads: writers, the catalog's SQLite inserts,
**      the I/O), which bounds what a second writer can add: with C CPU
**      seconds a sample and one writer taking T seconds a sample, 2
**      writers on 2 cores reach at most 2T/C times one writer's rate.
**   2. Sequential reads (copy mode, page cache warm) of the dataset stored
**      with each codec, against the uncompressed one, and liblz4's own time
**      to decompress the same stored bytes held in memory: the target is
**      T(codec) <= T(none) + 1.25 x T(liblz4).
**   3. pagedb_check of each dataset, full and quick, in MB/s of data file,
**      against reading the same file sequentially with pread (8 MiB at a
**      time), page cache warm.
**
**   4. For each zstd-dict codec (issue 28): the ratio against zstd over the
**      whole stream of samples at the same level (no random access); ingest
**      with 2 writers against libzstd's own CPU compressing the same
**      samples with the same dictionary (ZSTD_compress_usingCDict, one
**      thread): T(codec) <= T(none) + 1.25 x T(lib) / 2, per writer; warm
**      random reads by id (copy mode) against libzstd decompressing the
**      same stored values with the same dictionary in the same order:
**      T(codec) <= T(none) + 1.25 x T(lib).
**
** Every sample read is checked against the workload, so a wrong byte fails
** the run.  Figures are medians of --reps runs.
**
** Usage: pagedb-zbench [--workload W-small:N] [--vfs NAME] [--dir DIR]
**                      [--codecs none,lz4:1,...] [--reps N]
*/
#define _GNU_SOURCE   /* O_DIRECT */
#include "pagedb.h"
#include "workload.h"

#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <zstd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CODECS 8
#define RAW_PIECE  ((size_t)8 << 20)

static wl_t gW;
static const char *gVfs = "direct";
static char gDir[4096];
static int gReps = 3;
static volatile uint64_t gSink;   /* what the raw read touched: not optimised away */

/* CPU seconds used by every thread of the process so far. */
static double cpu_now(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *what, int rc, pagedb *db) {
  fprintf(stderr, "pagedb-zbench: %s: %s (%s)\n", what, pagedb_errname(rc), db ? pagedb_errmsg(db) : "");
  exit(1);
}

static double median(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return v[n / 2];
}

static int parse_codec(const char *s, int *codec) { return pagedb_codec_parse(s, codec) == PAGEDB_OK ? 0 : -1; }

static void path_of(char *out, size_t n, const char *codec) {
  snprintf(out, n, "%s/zbench-%.31s.pagedb", gDir, codec);   /* codec names are under 32 bytes */
}

static void remove_dataset(const char *path) {
  char p[4200];
  unlink(path);
  const char *sfx[] = { "-catalog", "-catalog-wal", "-catalog-shm", "-index" };
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s%s", path, sfx[i]);
    unlink(p);
  }
}

/* ---- ingest ---- */

typedef struct Job {
  pagedb *db;
  int t, nt, rc;
} Job;

static void *write_thread(void *arg) {
  Job *j = arg;
  pagedb_writer *w = NULL;
  uint8_t *buf = malloc(wl_max_size(&gW));
  int rc = buf ? pagedb_writer_open(j->db, &w) : PAGEDB_NOMEM;
  for (int64_t i = j->t; rc == PAGEDB_OK && i < gW.count; i += j->nt) {
    size_t len = (size_t)wl_size(&gW, i);
    wl_fill(&gW, i, buf, len);
    rc = pagedb_sample_begin(w, i);
    if (rc == PAGEDB_OK) rc = pagedb_put(w, 0, buf, len);
    if (rc == PAGEDB_OK) rc = pagedb_put_int(w, 1, wl_label(&gW, i));
    if (rc == PAGEDB_OK) rc = pagedb_sample_end(w, NULL);
  }
  int rc2 = pagedb_writer_close(w);
  j->rc = rc ? rc : rc2;
  free(buf);
  return NULL;
}

/* Write the workload into PATH with CODEC and NT threads: seconds; *CPU
** receives the CPU seconds all threads used meanwhile. */
static double ingest(const char *path, int codec, int nt, double *cpu) {
  remove_dataset(path);
  double c0 = cpu_now(), t0 = now();
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, gVfs);
  if (rc) die("pagedb_open", rc, db);
  if ((rc = pagedb_field_add(db, gW.field, gW.fieldText ? PAGEDB_TEXT : PAGEDB_BYTES, codec)) ||
      (rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE)))
    die("pagedb_field_add", rc, db);
  Job jobs[2];
  pthread_t tid[2];
  for (int t = 0; t < nt; t++) {
    jobs[t] = (Job){ db, t, nt, 0 };
    pthread_create(&tid[t], NULL, write_thread, &jobs[t]);
  }
  for (int t = 0; t < nt; t++) {
    pthread_join(tid[t], NULL);
    if (jobs[t].rc) die("writing", jobs[t].rc, db);
  }
  if ((rc = pagedb_commit(db))) die("pagedb_commit", rc, db);
  if (pagedb_count(db) != gW.count) die("pagedb_count after commit", PAGEDB_ERROR, db);
  if ((rc = pagedb_close(db))) die("pagedb_close", rc, NULL);
  double t = now() - t0;
  *cpu = cpu_now() - c0;
  return t;
}

static int sum_row(void *ctx, int ncol, char **vals, char **names) {
  (void)names;
  int64_t *v = ctx;
  for (int i = 0; i < ncol; i++) v[i] = vals[i] ? atoll(vals[i]) : 0;
  return 0;
}

/* Bytes stored and raw of the dataset at PATH (SQL over the extent view). */
static void sizes_of(const char *path, int64_t *stored, int64_t *raw) {
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, gVfs);
  if (rc) die("pagedb_open", rc, db);
  int64_t v[2] = { 0, 0 };
  if ((rc = pagedb_sql(db, "SELECT sum(len), sum(raw) FROM extent", sum_row, v))) die("pagedb_sql", rc, db);
  pagedb_close(db);
  *stored = v[0];
  *raw = v[1];
}

/* The raw reference: N bytes written with O_DIRECT in 8 MiB pieces, then
** fsync; seconds, or -1 if the file system refuses O_DIRECT. */
static double raw_direct_write(int64_t n) {
  char path[4200];
  snprintf(path, sizeof path, "%s/zbench-raw", gDir);
  unlink(path);
  void *buf;
  if (posix_memalign(&buf, 4096, RAW_PIECE)) return -1;
  memset(buf, 0x5a, RAW_PIECE);
  double t0 = now();
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
  if (fd < 0) {
    free(buf);
    return -1;
  }
  for (int64_t off = 0; off < n; off += (int64_t)RAW_PIECE) {
    if (pwrite(fd, buf, RAW_PIECE, off) != (ssize_t)RAW_PIECE) {
      fprintf(stderr, "pagedb-zbench: raw write: %s\n", strerror(errno));
      exit(1);
    }
  }
  fsync(fd);
  close(fd);
  double t = now() - t0;
  unlink(path);
  free(buf);
  return t;
}

/* ---- reads ---- */

/* Read every sample of PATH once in copy mode, in id order or (PERM not
** NULL) in the order PERM, checking each against the workload: seconds. */
static double read_all(const char *path, const int64_t *perm) {
  pagedb *db;
  pagedb_reader *r;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, "posix");
  if (rc) die("pagedb_open", rc, db);
  if ((rc = pagedb_reader_open(db, PAGEDB_READ_COPY, &r))) die("pagedb_reader_open", rc, db);
  double t0 = now();
  for (int64_t k = 0; k < gW.count; k++) {
    const void *p;
    size_t n;
    int64_t i = perm ? perm[k] : k;
    if ((rc = pagedb_read(r, i, 0, &p, &n))) die("pagedb_read", rc, db);
    if (wl_check(&gW, i, p, n)) {
      fprintf(stderr, "pagedb-zbench: %s: sample %lld read back wrong\n", path, (long long)i);
      exit(1);
    }
  }
  double t = now() - t0;
  pagedb_reader_close(r);
  pagedb_close(db);
  return t;
}

/* Read the data file of PATH front to back, 8 MiB at a time: seconds. */
static double raw_read(const char *path, int64_t *size) {
  int fd = open(path, O_RDONLY);
  uint8_t *buf = malloc(RAW_PIECE);
  if (fd < 0 || !buf) die("open for the raw read", PAGEDB_CANTOPEN, NULL);
  uint64_t sum = 0;
  int64_t total = 0;
  double t0 = now();
  for (;;) {
    ssize_t got = read(fd, buf, RAW_PIECE);
    if (got < 0) die("raw read", PAGEDB_IOERR, NULL);
    if (got == 0) break;
    for (ssize_t i = 0; i < got; i += 4096) sum += buf[i];   /* touch it, as the check must */
    total += got;
  }
  double t = now() - t0;
  close(fd);
  free(buf);
  gSink += sum;
  *size = total;
  return t;
}

static void no_problem(void *ctx, int64_t page, int64_t id, int field, const char *what) {
  (void)ctx;
  fprintf(stderr, "pagedb-zbench: pagedb_check: page %lld, sample %lld, field %d: %s\n", (long long)page,
          (long long)id, field, what);
}

/* pagedb_check of PATH with FLAGS: seconds; any problem fails the run. */
static double check_time(const char *path, int flags) {
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, "posix");
  if (rc) die("pagedb_open", rc, db);
  int64_t n = 0;
  double t0 = now();
  rc = pagedb_check(db, flags, no_problem, NULL, &n);
  double t = now() - t0;
  if (rc || n) die("pagedb_check", rc ? rc : PAGEDB_CORRUPT, db);
  pagedb_close(db);
  return t;
}

typedef struct Ext {
  int64_t id, off, len, raw, z;
} Ext;

typedef struct Exts {
  Ext *v;
  int64_t n, cap;
} Exts;

static int ext_row(void *ctx, int ncol, char **vals, char **names) {
  (void)ncol;
  (void)names;
  Exts *e = ctx;
  if (e->n == e->cap) {
    e->cap = e->cap ? e->cap * 2 : 1024;
    e->v = realloc(e->v, (size_t)e->cap * sizeof *e->v);
    if (!e->v) return 1;
  }
  e->v[e->n++] = (Ext){ atoll(vals[0]), atoll(vals[1]), atoll(vals[2]), atoll(vals[3]), atoll(vals[4]) };
  return 0;
}

/* The stored bytes of every extent of the dataset DB, in memory (untimed). */
static uint8_t *load_stored(pagedb *db, Exts *e) {
  int rc = pagedb_sql(db, "SELECT id, page * (SELECT value FROM meta WHERE key = 'page_size') + off, len, raw,"
                          " compressed FROM extent ORDER BY id", ext_row, e);
  if (rc) die("pagedb_sql", rc, db);
  int fd = open(pagedb_path(db), O_RDONLY);
  uint8_t h[64];
  if (fd < 0 || pread(fd, h, 64, 0) != 64) die("reading the header", PAGEDB_IOERR, db);
  int64_t doff = 0, total = 0;
  for (int i = 0; i < 8; i++) doff |= (int64_t)h[56 + i] << (8 * i);
  for (int64_t i = 0; i < e->n; i++) total += e->v[i].len;
  uint8_t *src = malloc((size_t)total + 1);
  if (!src) die("out of memory", PAGEDB_NOMEM, db);
  int64_t at = 0;
  for (int64_t i = 0; i < e->n; i++) {
    if (pread(fd, src + at, (size_t)e->v[i].len, doff + e->v[i].off) != e->v[i].len) die("pread", PAGEDB_IOERR, db);
    e->v[i].off = at;   /* now: where in SRC */
    at += e->v[i].len;
  }
  close(fd);
  return src;
}

/*
** liblz4's own time to decompress the stored bytes of the dataset at PATH,
** read into memory first (untimed): the floor for a reader of it.
*/
static double lz4_floor(const char *path) {
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, "posix");
  if (rc) die("pagedb_open", rc, db);
  Exts e = { 0 };
  uint8_t *src = load_stored(db, &e), *dst = malloc(wl_max_size(&gW));
  if (!dst) die("out of memory", PAGEDB_NOMEM, db);
  double t0 = now();
  for (int64_t i = 0; i < e.n; i++) {
    if (e.v[i].z && LZ4_decompress_safe((const char *)src + e.v[i].off, (char *)dst, (int)e.v[i].len,
                                        (int)e.v[i].raw) != e.v[i].raw)
      die("LZ4_decompress_safe of a stored value", PAGEDB_CORRUPT, db);
  }
  double t = now() - t0;
  free(src);
  free(dst);
  free(e.v);
  pagedb_close(db);
  return t;
}

/* ---- dictionaries (issue 28) ---- */

/*
** Section 4 for the zstd-dict dataset at PATH (codec CODEC, written by
** section 1 with 2 writers in T2 s; the uncompressed one at NONE in T2NONE
** s): ratio, ingest and random reads against libzstd.  0 if every target
** holds.
*/
static int dict_section(const char *name, const char *path, int codec, double t2, const char *none, double t2none,
                        int64_t stored, int64_t raw) {
  int level = PAGEDB_CODEC_LEVEL_OF(codec), bad = 0;
  printf("\n  %s: dictionary codec against libzstd (same samples, same dictionary)\n", name);
  /* Whole-stream zstd at the same level: every sample back to back. */
  size_t total = 0;
  for (int64_t i = 0; i < gW.count; i++) total += (size_t)wl_size(&gW, i);
  uint8_t *all = malloc(total), *z = malloc(ZSTD_compressBound(total));
  if (!all || !z) die("out of memory", PAGEDB_NOMEM, NULL);
  size_t at = 0;
  for (int64_t i = 0; i < gW.count; i++) {
    size_t len = (size_t)wl_size(&gW, i);
    wl_fill(&gW, i, all + at, len);
    at += len;
  }
  size_t zs = ZSTD_compress(z, ZSTD_compressBound(total), all, total, level);
  if (ZSTD_isError(zs)) die("ZSTD_compress of the stream", PAGEDB_ERROR, NULL);
  free(z);
  double ratio = (double)raw / (double)stored, whole = (double)total / (double)zs;
  printf("  ratio, per-sample random access kept   %.2fx   (target >= 2.20x: %s)\n", ratio, ratio >= 2.2 ? "pass" : "short");
  printf("  whole-stream zstd level %d (no random access) %.2fx; the codec keeps %.1f%% of it (target >= 75%%: %s)\n",
         level, whole, 100.0 * ratio / whole, ratio >= 0.75 * whole ? "pass" : "short");
  bad |= ratio < 2.2 || ratio < 0.75 * whole;
  /* The dictionary the dataset's writers used (its newest). */
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, "posix");
  if (rc) die("pagedb_open", rc, db);
  uint32_t ids[64];
  size_t sizes[64];
  int nd = pagedb_field_dicts(db, 0, ids, sizes, 64);
  const void *dict;
  size_t dn;
  if (nd < 1 || (rc = pagedb_field_dict_get(db, 0, ids[0], &dict, &dn))) die("the dataset has no dictionary", rc, db);
  printf("  dictionaries: %d, the one used %zu bytes (id %u)\n", nd, dn, ids[0]);
  ZSTD_CDict *cd = ZSTD_createCDict(dict, dn, level);
  ZSTD_DDict *dd = ZSTD_createDDict(dict, dn);
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  ZSTD_DCtx *dc = ZSTD_createDCtx();
  uint8_t *out = malloc(wl_max_size(&gW) + 1024);
  if (!cd || !dd || !cc || !dc || !out) die("libzstd setup", PAGEDB_NOMEM, db);
  /* libzstd compressing every sample with the dictionary, one thread: the
  ** CPU the two writers share. */
  double lib[9], libcpu[9];
  for (int rep = 0; rep < gReps; rep++) {
    double c0 = cpu_now(), w0 = now();
    at = 0;
    for (int64_t i = 0; i < gW.count; i++) {
      size_t len = (size_t)wl_size(&gW, i);
      size_t got = ZSTD_compress_usingCDict(cc, out, wl_max_size(&gW) + 1024, all + at, len, cd);
      if (ZSTD_isError(got)) die("ZSTD_compress_usingCDict", PAGEDB_ERROR, db);
      gSink += got;
      at += len;
    }
    lib[rep] = now() - w0;
    libcpu[rep] = cpu_now() - c0;
  }
  /* Wall clock against wall clock, as section 2 does for lz4: on a shared
  ** machine CPU time alone would not see the waits both runs have. */
  double tlib = median(lib, gReps), lim = t2none + 1.25 * tlib / 2;
  printf("  ingest, 2 writers, durable: %.3f s; none %.3f s; libzstd alone %.3f s (%.3f per writer; CPU %.3f s)\n"
         "    target T <= none + 1.25 x libzstd per writer = %.3f s: %s (%.1f%% of the allowance)\n",
         t2, t2none, tlib, tlib / 2, median(libcpu, gReps), lim, t2 <= lim ? "pass" : "short", 100.0 * t2 / lim);
  bad |= t2 > lim;
  /* Warm random reads by id, against libzstd on the same stored values. */
  Exts e = { 0 };
  uint8_t *src = load_stored(db, &e);
  int64_t *perm = malloc((size_t)gW.count * sizeof *perm);
  if (!perm) die("out of memory", PAGEDB_NOMEM, db);
  for (int64_t i = 0; i < gW.count; i++) perm[i] = i;
  uint64_t x = 88172645463325252ull;
  for (int64_t i = gW.count - 1; i > 0; i--) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    int64_t j = (int64_t)(x % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  /* Extents are in id order and ids are 0..count-1: e.v[id]. */
  if (e.n != gW.count) die("extent count", PAGEDB_ERROR, db);
  read_all(path, perm);
  read_all(none, perm);   /* warm both */
  double rn[9], rc2[9], rl[9];
  for (int rep = 0; rep < gReps; rep++) {
    rn[rep] = read_all(none, perm);
    rc2[rep] = read_all(path, perm);
    double t0 = now();
    for (int64_t k = 0; k < gW.count; k++) {
      const Ext *v = &e.v[perm[k]];
      if (!v->z) continue;
      size_t got = ZSTD_decompress_usingDDict(dc, out, (size_t)v->raw, src + v->off, (size_t)v->len, dd);
      if (ZSTD_isError(got) || (int64_t)got != v->raw) die("ZSTD_decompress_usingDDict", PAGEDB_CORRUPT, db);
      gSink += out[0];
    }
    rl[rep] = now() - t0;
  }
  double tn = median(rn, gReps), tc = median(rc2, gReps), tl = median(rl, gReps), rlim = tn + 1.25 * tl;
  printf("  warm random reads by id, copy mode: %.3f s; none %.3f s; libzstd alone %.3f s\n"
         "    target T <= none + 1.25 x libzstd = %.3f s: %s (%.1f%% of the allowance)\n",
         tc, tn, tl, rlim, tc <= rlim ? "pass" : "short", 100.0 * tc / rlim);
  bad |= tc > rlim;
  free(perm);
  free(src);
  free(e.v);
  free(out);
  free(all);
  ZSTD_freeCDict(cd);
  ZSTD_freeDDict(dd);
  ZSTD_freeCCtx(cc);
  ZSTD_freeDCtx(dc);
  pagedb_close(db);
  return bad;
}

int main(int argc, char **argv) {
  const char *spec = "W-small", *codecs = "none,lz4:1,lz4:8,lz4hc:4,lz4hc:9";
  snprintf(gDir, sizeof gDir, "/tmp");
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--workload") && i + 1 < argc) spec = argv[++i];
    else if (!strcmp(argv[i], "--vfs") && i + 1 < argc) gVfs = argv[++i];
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc) snprintf(gDir, sizeof gDir, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--codecs") && i + 1 < argc) codecs = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) gReps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: pagedb-zbench [--workload W-small:N] [--vfs NAME] [--dir DIR]"
                      " [--codecs none,lz4:1,...] [--reps N]\n");
      return 2;
    }
  }
  if (gReps < 1 || gReps > 9 || wl_parse(spec, &gW) != 0) {
    fprintf(stderr, "pagedb-zbench: bad --workload or --reps\n");
    return 2;
  }
  char names[MAX_CODECS][32];
  int codec[MAX_CODECS], nc = 0;
  char list[256];
  snprintf(list, sizeof list, "%s", codecs);
  for (char *s = strtok(list, ","); s && nc < MAX_CODECS; s = strtok(NULL, ",")) {
    if (parse_codec(s, &codec[nc])) {
      fprintf(stderr, "pagedb-zbench: unknown codec '%s'\n", s);
      return 2;
    }
    snprintf(names[nc++], sizeof names[0], "%s", s);
  }
  if (nc == 0 || PAGEDB_CODEC_KIND(codec[0]) != PAGEDB_CODEC_NONE) {
    fprintf(stderr, "pagedb-zbench: the first codec must be none (the reference)\n");
    return 2;
  }
  printf("pagedb-zbench: %s, %lld samples, vfs %s (writes), posix (reads), %d rep%s, medians\n", gW.name,
         (long long)gW.count, gVfs, gReps, gReps > 1 ? "s" : "");
  printf("command:");
  for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  printf("\n\n  ingest (durable)          1 thread samples/s  2 threads samples/s  2 vs 1   stored/raw"
         "   CPU us/sample (1, 2)   CPU ceiling\n");
  double t2[MAX_CODECS];
  int64_t stored[MAX_CODECS], raw[MAX_CODECS];
  for (int c = 0; c < nc; c++) {
    char path[4200];
    path_of(path, sizeof path, names[c]);
    double a[9], b[9], ca[9], cb[9];
    for (int rep = 0; rep < gReps; rep++) {
      a[rep] = ingest(path, codec[c], 1, &ca[rep]);
      b[rep] = ingest(path, codec[c], 2, &cb[rep]);
    }
    double t1 = median(a, gReps), cpu1 = median(ca, gReps), cpu2 = median(cb, gReps);
    t2[c] = median(b, gReps);
    sizes_of(path, &stored[c], &raw[c]);
    /* The most that 2 writers could give if every core were busy with no
    ** more CPU per sample than one writer's run spent, catalog included. */
    double ceiling = (ncpu < 2 ? ncpu : 2) * t1 / cpu1;
    printf("  %-22s %16.0f %20.0f %8.2fx %11.3f %10.2f %6.2f %12.2fx\n", names[c], gW.count / t1, gW.count / t2[c],
           t1 / t2[c], (double)stored[c] / (double)raw[c], cpu1 / gW.count * 1e6, cpu2 / gW.count * 1e6, ceiling);
    fflush(stdout);
  }
  printf("\n  raw O_DIRECT write of each dataset's stored bytes (8 MiB pieces, fsync): the limit\n");
  for (int c = 1; c < nc; c++) {
    double r[9];
    for (int rep = 0; rep < gReps; rep++) r[rep] = raw_direct_write(stored[c]);
    double t = median(r, gReps);
    if (t < 0) {
      printf("  %-22s (the file system refuses O_DIRECT)\n", names[c]);
      continue;
    }
    printf("  %-22s %16.0f samples/s; 2 writers reach %.1f%% of it\n", names[c], gW.count / t,
           100.0 * t / t2[c]);
  }
  printf("\n  sequential read, copy mode, warm   seconds   vs none   liblz4 alone   target: <= none + 1.25 x liblz4\n");
  /* The direct writes left the datasets out of the page cache: read each
  ** once, untimed, so that every timed pass is warm.  The passes then take
  ** turns, rep by rep, so that a drift of the machine moves the reference
  ** and the compressed reads alike. */
  double r[MAX_CODECS][9], z[MAX_CODECS][9];
  int64_t size;
  for (int c = 0; c < nc; c++) {
    char path[4200];
    path_of(path, sizeof path, names[c]);
    raw_read(path, &size);
  }
  for (int rep = 0; rep < gReps; rep++)
    for (int c = 0; c < nc; c++) {
      char path[4200];
      path_of(path, sizeof path, names[c]);
      r[c][rep] = read_all(path, NULL);
      int k = PAGEDB_CODEC_KIND(codec[c]);
      if (c > 0) z[c][rep] = k == PAGEDB_CODEC_LZ4 || k == PAGEDB_CODEC_LZ4HC ? lz4_floor(path) : 0;
    }
  double tnone = median(r[0], gReps);
  printf("  %-34s %8.3f\n", names[0], tnone);
  int bad = 0;
  for (int c = 1; c < nc; c++) {
    int k = PAGEDB_CODEC_KIND(codec[c]);
    if (k != PAGEDB_CODEC_LZ4 && k != PAGEDB_CODEC_LZ4HC) {
      printf("  %-34s %8.3f %8.2fx   (zstd: against libzstd in section 4)\n", names[c], median(r[c], gReps),
             median(r[c], gReps) / tnone);
      continue;
    }
    double t = median(r[c], gReps), tz = median(z[c], gReps), lim = tnone + 1.25 * tz;
    printf("  %-34s %8.3f %8.2fx %14.3f   %.3f s: %s (%.1f%% of the allowance)\n", names[c], t, t / tnone, tz, lim,
           t <= lim ? "pass" : "short", 100.0 * t / lim);
    bad |= t > lim;
  }
  printf("\n  pagedb_check, warm          file MB   raw pread MB/s   full MB/s (vs raw)   quick MB/s\n");
  for (int c = 0; c < nc; c++) {
    char path[4200];
    path_of(path, sizeof path, names[c]);
    double rr[9], rf[9], rq[9];
    size = 0;
    for (int rep = 0; rep < gReps; rep++) {
      rr[rep] = raw_read(path, &size);
      rf[rep] = check_time(path, 0);
      rq[rep] = check_time(path, PAGEDB_CHECK_QUICK);
    }
    double mb = size / 1e6, tr = median(rr, gReps), tf = median(rf, gReps), tq = median(rq, gReps);
    printf("  %-24s %10.1f %16.0f %12.0f (%5.1f%%) %12.0f\n", names[c], mb, mb / tr, mb / tf, 100.0 * tr / tf, mb / tq);
  }
  for (int c = 1; c < nc; c++) {
    if (PAGEDB_CODEC_KIND(codec[c]) != PAGEDB_CODEC_ZSTD_DICT) continue;
    char path[4200], none[4200];
    path_of(path, sizeof path, names[c]);
    path_of(none, sizeof none, names[0]);
    bad |= dict_section(names[c], path, codec[c], t2[c], none, t2[0], stored[c], raw[c]);
  }
  /* ZBENCH_KEEP=1 leaves the datasets in DIR (to serve them remotely). */
  for (int c = 0; c < nc && !getenv("ZBENCH_KEEP"); c++) {
    char path[4200];
    path_of(path, sizeof path, names[c]);
    remove_dataset(path);
  }
  wl_free(&gW);
  printf("\npagedb-zbench: all bytes checked%s\n", bad ? "; some figures are short of their target" : "");
  return 0;
}
