/*
** rbench.c -- pagedb-rbench: a W-img random epoch read from a web server
** (the http VFS) against the network limit and against local reads, for
** doc/benchmarks.md.  `make bench-remote` starts nginx on 127.0.0.1
** (test/nginx.sh) and runs it; figures, never a test.
**
**   pagedb-rbench LOCAL URL [W-img:N] [PROCS ...]
**
** LOCAL is the dataset (made with the workload if missing) that the server
** serves at URL.  For each number of reader processes (default 1 and 4),
** each process a rank of that world reading its part of one random epoch
** (pagedb_order RANDOM, pagedb_reader_prefetch, copy reads, every byte
** checked against the workload once, untimed):
**
**   posix   the local dataset, page cache warm (read once before)
**   curl    the network limit: the object's 1 MiB chunks fetched by libcurl
**           in random order, 16 requests in flight per process over reused
**           connections, the bytes thrown away
**   curl into files   the same, each chunk written into a file of its own
**           (space allocated first, 256 KiB per pwrite): what storing the
**           bytes costs any cache of files, pagedb's or not
**           (RBENCH_FILES_DIRECT=1: written with O_DIRECT, bypassing the
**           page cache)
**   cold    the remote dataset with an empty cache (PAGEDB_CACHE_DIR)
**   warm    the same again, every chunk in the cache
**
** and prints MB/s of sample bytes (curl: of object bytes) with the ratios
** the targets name: cold / curl and warm / posix.  A round runs the four
** one after another; RBENCH_REPS rounds (default 5) give medians, and the
** ratios are medians of each round's ratio, so that a machine whose load
** drifts compares runs made close together.  Also printed: the CPU seconds
** the client processes spent per GB (getrusage of the children), which
** other processes' load moves far less than MB/s.  Then the time of a
** read-only open of the remote dataset, cold and warm.
**
**   RBENCH_ONLY=posix|curl|curlfile|cold|warm   one kind alone (for profiling)
**
**   pagedb-rbench -open URL [REPS [LOCAL N]]
**
** (making LOCAL, which the server serves at URL, with N samples of 16..64
** bytes if it is missing) times, in fresh processes, pagedb_open of URL plus one copy read of a
** random sample, with the cache emptied before (cold) and then again with
** it as that left it (warm), alternated, medians of REPS (default 5); with
** the requests each made.
*/
#define _GNU_SOURCE
#include "pagedb.h"
#include "workload.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc, pagedb *db) {
  fprintf(stderr, "pagedb-rbench: %s: %s (%s)\n", what, pagedb_errname(rc), db ? pagedb_errmsg(db) : "");
  exit(1);
}

static void make_dataset(const char *path, const wl_t *w) {
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, NULL);
  if (rc) die("create", rc, db);
  if ((rc = pagedb_field_add(db, w->field, PAGEDB_BYTES, PAGEDB_CODEC_NONE))) die("field", rc, db);
  if ((rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE))) die("field", rc, db);
  pagedb_writer *pw;
  if ((rc = pagedb_writer_open(db, &pw))) die("writer", rc, db);
  uint8_t *buf = malloc(wl_max_size(w));
  for (int64_t i = 0; i < w->count; i++) {
    size_t n = (size_t)wl_size(w, i);
    wl_fill(w, i, buf, n);
    if ((rc = pagedb_sample_begin(pw, i)) || (rc = pagedb_put(pw, 0, buf, n)) ||
        (rc = pagedb_put_int(pw, 1, wl_label(w, i))) || (rc = pagedb_sample_end(pw, NULL)))
      die("write", rc, db);
  }
  free(buf);
  if ((rc = pagedb_writer_close(pw)) || (rc = pagedb_commit(db))) die("commit", rc, db);
  if ((rc = pagedb_close(db))) die("close", rc, NULL);
}

/* Read rank RANK of WORLD's part of the epoch from PATH; returns the sample
** bytes, checking each sample against W when CHECK. */
static long long read_epoch(const char *path, const wl_t *w, int rank, int world, int check) {
  double t0 = now();
  pagedb_remote_counters c0, c;
  pagedb_remote_stats(&c0);     /* a forked process starts with its parent's */
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, NULL);
  if (rc) die("open", rc, db);
  double topen = now() - t0;
  int64_t n = 0;
  if ((rc = pagedb_order(db, PAGEDB_ORDER_RANDOM, 7, 0, rank, world, NULL, &n))) die("order", rc, db);
  int64_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
  if ((rc = pagedb_order(db, PAGEDB_ORDER_RANDOM, 7, 0, rank, world, ids, &n))) die("order", rc, db);
  pagedb_reader *r;
  if ((rc = pagedb_reader_open(db, PAGEDB_READ_COPY, &r))) die("reader", rc, db);
  if ((rc = pagedb_reader_prefetch(r, ids, n, 0, 64u << 20))) die("prefetch", rc, db);
  long long bytes = 0;
  for (int64_t i = 0; i < n; i++) {
    const void *d;
    size_t sz;
    if ((rc = pagedb_read(r, ids[i], 0, &d, &sz))) die("read", rc, db);
    if (check && wl_check(w, ids[i], d, sz)) {
      fprintf(stderr, "pagedb-rbench: sample %lld of %s has wrong bytes\n", (long long)ids[i], path);
      exit(1);
    }
    bytes += (long long)sz;
  }
  free(ids);
  pagedb_close(db);
  const char *verbose = getenv("RBENCH_VERBOSE");
  if (verbose && *verbose) {
    pagedb_remote_stats(&c);
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    fprintf(stderr, "  rank %d/%d of %s: %.3f s (open %.1f ms), CPU %.1f ms; requests %lld, retries %lld, chunks fetched %lld,"
            " hits %lld\n", rank, world, path, now() - t0, topen * 1e3,
            (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3,
            (long long)(c.requests - c0.requests), (long long)(c.retries - c0.retries),
            (long long)(c.chunk_fetches - c0.chunk_fetches), (long long)(c.chunk_hits - c0.chunk_hits));
  }
  return bytes;
}

/* N samples of 16..64 bytes (ids 0..N-1) and an INT label, as
** pagedb-openbench makes them: the dataset whose open is timed. */
static void make_small(const char *path, int64_t n) {
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, NULL);
  if (rc) die("create", rc, db);
  if ((rc = pagedb_field_add(db, "b", PAGEDB_BYTES, PAGEDB_CODEC_NONE))) die("field", rc, db);
  if ((rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE))) die("field", rc, db);
  pagedb_writer *pw;
  if ((rc = pagedb_writer_open(db, &pw))) die("writer", rc, db);
  uint8_t buf[64];
  for (int64_t i = 0; i < n; i++) {
    uint64_t s = (uint64_t)i, h = wl_next(&s);
    size_t len = 16 + h % 49;
    for (size_t j = 0; j < len; j++) buf[j] = (uint8_t)(h >> (j % 8 * 8)) ^ (uint8_t)j;
    if ((rc = pagedb_sample_begin(pw, i)) || (rc = pagedb_put(pw, 0, buf, len)) ||
        (rc = pagedb_put_int(pw, 1, (int64_t)(h % 1000))) || (rc = pagedb_sample_end(pw, NULL)))
      die("write", rc, db);
  }
  if ((rc = pagedb_writer_close(pw)) || (rc = pagedb_commit(db))) die("commit", rc, db);
  if ((rc = pagedb_close(db))) die("close", rc, NULL);
}

/* --- the network limit ---------------------------------------------------- */

/* A request's body: thrown away (fd < 0), or written into a file of its
** own as the cheapest cache would: its space allocated first, the pieces
** gathered 256 KiB at a time and written by one pwrite each (as cache.c
** does). */
typedef struct Body {
  long long *got;
  int fd;
  size_t n, at;
  uint8_t *buf;             /* BODY_BUF bytes, 4096-aligned (O_DIRECT) */
} Body;
#define BODY_BUF (256 << 10)

/* RBENCH_FILES_DIRECT=1: the files written with O_DIRECT (the page cache
** bypassed; a short last piece padded to 4 KiB, the file cut after). */
static int files_direct;

static void body_flush(Body *b) {
  size_t w = files_direct ? (b->n + 4095) & ~(size_t)4095 : b->n;
  if (b->fd >= 0 && b->n && pwrite(b->fd, b->buf, w, (off_t)b->at) != (ssize_t)w) {
    perror("pagedb-rbench: pwrite");
    exit(1);
  }
  b->at += b->n;
  b->n = 0;
}

static size_t sink(char *p, size_t s, size_t n, void *ctx) {
  Body *b = ctx;
  size_t len = s * n;
  *b->got += (long long)len;
  if (b->fd < 0) return len;
  while (len) {
    size_t k = BODY_BUF - b->n < len ? BODY_BUF - b->n : len;
    memcpy(b->buf + b->n, p, k);
    b->n += k;
    p += k;
    len -= k;
    if (b->n == BODY_BUF) body_flush(b);
  }
  return s * n;
}

/* Start BODY for chunk K: a new file in DIR (NULL: none). */
static void body_start(Body *b, const char *dir, long long k, long long C) {
  b->n = b->at = 0;
  b->fd = -1;
  if (!dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%016llx.c", dir, (unsigned long long)k);
  if ((b->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | (files_direct ? O_DIRECT : 0), 0644)) < 0
      || fallocate(b->fd, FALLOC_FL_KEEP_SIZE, 0, C)) {
    perror("pagedb-rbench: a chunk file");
    exit(1);
  }
}

static void body_end(Body *b) {
  body_flush(b);
  if (b->fd >= 0 && files_direct && ftruncate(b->fd, (off_t)b->at)) {
    perror("pagedb-rbench: ftruncate");
    exit(1);
  }
  if (b->fd >= 0) close(b->fd);
  b->fd = -1;
}

/* Fetch rank RANK of WORLD's share of URL's 1 MiB chunks (SIZE bytes),
** each into a file of its own in DIR if not NULL. */
static long long curl_epoch(const char *url, long long size, int rank, int world, const char *dir) {
  const long long C = 1 << 20;
  long long nch = (size + C - 1) / C, mine = 0, got = 0;
  long long *k = malloc((size_t)(nch + 1) * sizeof *k);
  for (long long c = rank; c < nch; c += world) k[mine++] = c;
  uint64_t s = 99 + (uint64_t)rank;
  for (long long i = mine - 1; i > 0; i--) {   /* a random order */
    long long j = (long long)(wl_next(&s) % (uint64_t)(i + 1)), t = k[i];
    k[i] = k[j];
    k[j] = t;
  }
  CURLM *m = curl_multi_init();
  CURL *e[16] = { 0 };
  Body *body = malloc(16 * sizeof *body);
  for (int i = 0; i < 16; i++) {
    body[i].got = &got;
    if (posix_memalign((void **)&body[i].buf, 4096, BODY_BUF)) {
      fprintf(stderr, "pagedb-rbench: out of memory for a body buffer\n");
      exit(1);
    }
  }
  long long next = 0;
  int active = 0;
  char range[64];
  for (;;) {
    for (int i = 0; i < 16 && next < mine; i++) {
      if (e[i]) continue;
      e[i] = curl_easy_init();
      curl_easy_setopt(e[i], CURLOPT_URL, url);
      snprintf(range, sizeof range, "%lld-%lld", k[next] * C, (k[next] + 1) * C - 1);
      curl_easy_setopt(e[i], CURLOPT_RANGE, range);
      curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, sink);
      body_start(&body[i], dir, k[next], C);
      curl_easy_setopt(e[i], CURLOPT_WRITEDATA, &body[i]);
      curl_easy_setopt(e[i], CURLOPT_PRIVATE, (void *)(intptr_t)i);
      curl_multi_add_handle(m, e[i]);
      next++;
      active++;
    }
    if (active == 0) break;
    int running;
    curl_multi_perform(m, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left))) {
      if (msg->msg != CURLMSG_DONE) continue;
      void *p;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &p);
      int i = (int)(intptr_t)p;
      if (msg->data.result != CURLE_OK) {
        fprintf(stderr, "pagedb-rbench: curl: %s\n", curl_easy_strerror(msg->data.result));
        exit(1);
      }
      curl_multi_remove_handle(m, e[i]);
      body_end(&body[i]);
      /* Keep the handle (and its connection) for the next range. */
      CURL *keep = e[i];
      e[i] = NULL;
      active--;
      if (next < mine) {
        snprintf(range, sizeof range, "%lld-%lld", k[next] * C, (k[next] + 1) * C - 1);
        curl_easy_setopt(keep, CURLOPT_RANGE, range);
        body_start(&body[i], dir, k[next], C);
        curl_multi_add_handle(m, keep);
        e[i] = keep;
        next++;
        active++;
      } else {
        curl_easy_cleanup(keep);
      }
    }
    if (active) curl_multi_poll(m, NULL, 0, 100, NULL);
  }
  curl_multi_cleanup(m);
  for (int i = 0; i < 16; i++) free(body[i].buf);
  free(body);
  free(k);
  return got;
}

/* --- processes --------------------------------------------------------------- */

enum { POSIX, CURLX, CURLF, REMOTE };

/* CURLF's directory of chunk files, emptied before each run. */
static char curl_dir[4200];

/* The CPU seconds (user + system) of the children waited for so far. */
static double child_cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_CHILDREN, &u);
  return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

/* CPU seconds per GB moved by the latest run: a figure the machine's load
** moves far less than MB/s (another process's work is not ours). */
static double last_cpu_per_gb;

/* Run WORLD processes of KIND at once; the bytes they moved per second. */
static double run(int kind, const char *path, const wl_t *w, long long size, int world, int check) {
  int go[2], res[2];
  if (kind == CURLF) {
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", curl_dir, curl_dir);
    if (system(cmd) != 0) exit(1);
  }
  double cpu0 = child_cpu();
  if (pipe(go) || pipe(res)) exit(1);
  for (int r = 0; r < world; r++) {
    if (fork() == 0) {
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) != 1) _exit(1);
      long long b = kind == CURLX   ? curl_epoch(path, size, r, world, NULL)
                    : kind == CURLF ? curl_epoch(path, size, r, world, curl_dir)
                                    : read_epoch(path, w, r, world, check);
      if (write(res[1], &b, sizeof b) != sizeof b) _exit(1);
      _exit(0);
    }
  }
  close(go[0]);
  double t0 = now();
  char gos[64] = { 0 };
  size_t nw = world > 0 && world <= 64 ? (size_t)world : 1;
  if (write(go[1], gos, nw) != (ssize_t)nw) exit(1);
  long long total = 0;
  for (int r = 0; r < world; r++) {
    long long b = 0;
    if (read(res[0], &b, sizeof b) != sizeof b) {
      fprintf(stderr, "pagedb-rbench: a reader process failed\n");
      exit(1);
    }
    total += b;
  }
  double t = now() - t0;
  for (int r = 0; r < world; r++) wait(NULL);
  close(go[1]);
  close(res[0]);
  close(res[1]);
  last_cpu_per_gb = (child_cpu() - cpu0) / ((double)total / 1e9);
  return total / t / 1e6;
}

static double open_ms(const char *url) {
  double t0 = now();
  pagedb *db;
  int rc = pagedb_open(url, &db, PAGEDB_OPEN_READONLY, NULL);
  if (rc) die("open", rc, db);
  double t = (now() - t0) * 1e3;
  pagedb_close(db);
  return t;
}

/* In a fresh process (nothing of the dataset in it): pagedb_open of URL,
** then a copy read of sample SEED mod its count; ms of both and of the
** open alone, and the requests made, into *T. */
static void open_read(const char *url, uint64_t seed, double *t) {
  int p[2];
  if (pipe(p)) exit(1);
  if (fork() == 0) {
    pagedb_remote_counters c0, c1;
    pagedb_remote_stats(&c0);
    double t0 = now(), r[3];
    pagedb *db;
    int rc = pagedb_open(url, &db, PAGEDB_OPEN_READONLY, NULL);
    if (rc) die("open", rc, db);
    r[1] = (now() - t0) * 1e3;
    int64_t n = pagedb_count(db);
    pagedb_reader *rd;
    const void *d;
    size_t sz;
    if (n <= 0) die("count", PAGEDB_MISUSE, db);
    if ((rc = pagedb_reader_open(db, PAGEDB_READ_COPY, &rd))) die("reader", rc, db);
    uint64_t s = seed;
    if ((rc = pagedb_read(rd, (int64_t)(wl_next(&s) % (uint64_t)n), 0, &d, &sz))) die("read", rc, db);
    r[0] = (now() - t0) * 1e3;
    pagedb_remote_stats(&c1);
    r[2] = (double)(c1.requests - c0.requests);
    pagedb_close(db);
    if (write(p[1], r, sizeof r) != sizeof r) _exit(1);
    _exit(0);
  }
  close(p[1]);
  if (read(p[0], t, 3 * sizeof *t) != 3 * (ssize_t)sizeof *t) {
    fprintf(stderr, "pagedb-rbench: the open process failed\n");
    exit(1);
  }
  close(p[0]);
  wait(NULL);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* pagedb-rbench -open URL [REPS]: the open of a remote dataset and its
** first read, cold cache (emptied before each) and warm, alternated;
** medians of REPS (default 5). */
static int open_bench(const char *url, int reps, const char *rm) {
  double cold[64], warm[64], co[64], wo[64], creq = 0, wreq = 0;
  if (reps < 1 || reps > 64) reps = 5;
  for (int i = 0; i < reps; i++) {
    double t[3];
    if (system(rm) != 0) return 1;
    open_read(url, 1 + (uint64_t)i, t);
    cold[i] = t[0], co[i] = t[1], creq = t[2];
    open_read(url, 1 + (uint64_t)i, t);   /* the same sample: every chunk cached */
    warm[i] = t[0], wo[i] = t[1], wreq = t[2];
  }
  qsort(cold, (size_t)reps, sizeof *cold, cmp_d);
  qsort(warm, (size_t)reps, sizeof *warm, cmp_d);
  qsort(co, (size_t)reps, sizeof *co, cmp_d);
  qsort(wo, (size_t)reps, sizeof *wo, cmp_d);
  printf("open + first read of %s, medians of %d (alternated):\n", url, reps);
  printf("  cold cache: %.1f ms (the open alone %.1f ms; min %.1f, max %.1f), %.0f requests\n", cold[reps / 2],
         co[reps / 2], cold[0], cold[reps - 1], creq);
  printf("  warm cache: %.1f ms (the open alone %.1f ms; min %.1f, max %.1f), %.0f requests\n", warm[reps / 2],
         wo[reps / 2], warm[0], warm[reps - 1], wreq);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: pagedb-rbench LOCAL URL [W-img:N] [PROCS ...]\n"
                    "       pagedb-rbench -open URL [REPS [LOCAL N]]\n");
    return 2;
  }
  const char *cache = getenv("PAGEDB_CACHE_DIR");
  if (!cache) {
    fprintf(stderr, "pagedb-rbench: set PAGEDB_CACHE_DIR (it is emptied for the cold runs)\n");
    return 2;
  }
  char rm[4200];
  snprintf(rm, sizeof rm, "rm -rf '%s'", cache);
  snprintf(curl_dir, sizeof curl_dir, "%s.curl", cache);
  files_direct = getenv("RBENCH_FILES_DIRECT") && atoi(getenv("RBENCH_FILES_DIRECT")) == 1;
  if (strcmp(argv[1], "-open") == 0) {
    if (argc > 5 && access(argv[4], F_OK) != 0) make_small(argv[4], atoll(argv[5]));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = open_bench(argv[2], argc > 3 ? atoi(argv[3]) : 5, rm);
    curl_global_cleanup();
    return rc;
  }
  const char *local = argv[1], *url = argv[2];
  wl_t w;
  if (wl_parse(argc > 3 ? argv[3] : "W-img:2000", &w)) {
    fprintf(stderr, "pagedb-rbench: bad workload %s\n", argc > 3 ? argv[3] : "");
    return 2;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (access(local, F_OK) != 0) make_dataset(local, &w);
  FILE *f = fopen(local, "rb");
  fseek(f, 0, SEEK_END);
  long long size = ftell(f);
  fclose(f);
  printf("%s, %lld samples, data file %.1f MB, served at %s; cache %s\n", w.name, (long long)w.count, size / 1e6,
         url, cache);
  /* Bytes checked once, untimed; the page cache warmed for posix. */
  const char *only = getenv("RBENCH_ONLY");
  if (!only || !*only) {
    read_epoch(local, &w, 0, 1, 1);
    if (system(rm) != 0) return 1;
    read_epoch(url, &w, 0, 1, 1);
  }
  int reps = getenv("RBENCH_REPS") ? atoi(getenv("RBENCH_REPS")) : 5;
  if (reps < 1 || reps > 64) reps = 5;
  printf("medians of %d rounds; in each round posix, curl, cold (cache emptied), warm, one after another;\n"
         "the ratios are the medians of each round's ratio (a round's runs see about the same load)\n", reps);
  printf("%-6s %14s %14s %14s %14s %12s %12s\n", "procs", "posix MB/s", "curl MB/s", "cold MB/s", "warm MB/s",
         "cold/curl", "warm/posix");
  int nprocs = argc > 4 ? argc - 4 : 2;
  for (int i = 0; i < nprocs; i++) {
    int world = argc > 4 ? atoi(argv[4 + i]) : (i == 0 ? 1 : 4);
    if (world < 1 || world > 64) return 2;
    if (only && *only) {   /* one kind alone, for profiling */
      int cold = strcmp(only, "cold") == 0;
      if (cold && system(rm) != 0) return 1;
      double v = strcmp(only, "posix") == 0  ? run(POSIX, local, &w, size, world, 0)
                 : strcmp(only, "curl") == 0 ? run(CURLX, url, &w, size, world, 0)
                 : strcmp(only, "curlfile") == 0 ? run(CURLF, url, &w, size, world, 0)
                                             : run(REMOTE, url, &w, size, world, 0);
      printf("%-6d %s %.0f MB/s, %.2f CPU s per GB\n", world, only, v, last_cpu_per_gb);
      continue;
    }
    double px[64], cu[64], co[64], wa[64], rc[64], rw[64], cpx[64], ccu[64], cco[64], cwa[64];
    double cf[64], ccf[64], rf[64], rff[64];
    for (int k = 0; k < reps; k++) {
      px[k] = run(POSIX, local, &w, size, world, 0);
      cpx[k] = last_cpu_per_gb;
      cu[k] = run(CURLX, url, &w, size, world, 0);
      ccu[k] = last_cpu_per_gb;
      cf[k] = run(CURLF, url, &w, size, world, 0);
      ccf[k] = last_cpu_per_gb;
      if (system(rm) != 0) return 1;
      co[k] = run(REMOTE, url, &w, size, world, 0);
      cco[k] = last_cpu_per_gb;
      wa[k] = run(REMOTE, url, &w, size, world, 0);
      cwa[k] = last_cpu_per_gb;
      rc[k] = co[k] / cu[k];
      rw[k] = wa[k] / px[k];
      rf[k] = cf[k] / cu[k];
      rff[k] = co[k] / cf[k];
      if (getenv("RBENCH_VERBOSE"))
        fprintf(stderr, "round %d: posix %.0f curl %.0f curl+files %.0f cold %.0f warm %.0f\n", k, px[k], cu[k],
                cf[k], co[k], wa[k]);
    }
    double *all[] = { px, cu, co, wa, rc, rw, cpx, ccu, cco, cwa, cf, ccf, rf, rff };
    for (int a = 0; a < 14; a++) qsort(all[a], (size_t)reps, sizeof(double), cmp_d);
    int m = reps / 2;
    printf("%-6d %14.0f %14.0f %14.0f %14.0f %11.0f%% %11.0f%%\n", world, px[m], cu[m], co[m], wa[m], 100 * rc[m],
           100 * rw[m]);
    printf("%-6s %14s %14s %14s %14s %5.0f-%3.0f%% %5.0f-%3.0f%%\n", "", "", "", "", "(range)", 100 * rc[0],
           100 * rc[reps - 1], 100 * rw[0], 100 * rw[reps - 1]);
    printf("%-6s %14.2f %14.2f %14.2f %14.2f   CPU s per GB (client processes; medians)\n", "", cpx[m], ccu[m],
           cco[m], cwa[m]);
    printf("%-6s curl into files: %.0f MB/s, %.2f CPU s per GB; curl into files / curl %.0f%% (%.0f-%.0f%%);"
           " cold / curl into files %.0f%% (%.0f-%.0f%%)\n", "", cf[m], ccf[m], 100 * rf[m], 100 * rf[0],
           100 * rf[reps - 1], 100 * rff[m], 100 * rff[0], 100 * rff[reps - 1]);
    fflush(stdout);
  }
  if (only && *only) return 0;
  char rmc[4300];
  snprintf(rmc, sizeof rmc, "rm -rf '%s'", curl_dir);
  if (system(rm) != 0 || system(rmc) != 0) return 1;
  double oc = open_ms(url), ow = open_ms(url);
  printf("open of the remote dataset (%lld samples): cold cache %.1f ms, warm cache %.1f ms\n", (long long)w.count,
         oc, ow);
  wl_free(&w);
  curl_global_cleanup();
  return 0;
}
