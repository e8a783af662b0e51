/*
** pushbench.c -- pagedb-pushbench: the speed of pagedb_push to an S3
** store with the multipart parts uploaded one at a time against several
** at once, for doc/benchmarks.md.  tool/pushbench.sh starts Ceph's gateway
** on 127.0.0.1 (test/micro-ceph.sh) and runs it; figures, never a test.
**
**   pagedb-pushbench LOCAL S3PREFIX [W-img[:N]] [ROUNDS] [PARALLEL ...]
**
** LOCAL is made with the workload if missing (one BYTES field "image", one
** INT "label", every sample as shared/WORKLOADS.md defines it).  Each round
** pushes LOCAL once per PARALLEL value (default 1 and 4: PAGEDB_CONFIG_
** PUSH_PARALLEL), the order reversed every other round so that neither
** always goes first, each to a key of its own (S3PREFIX/rR-pP/), and prints
** MB/s of the bytes pushed (data file, index, catalog).  After each push the
** pushed dataset is opened over s3:// and samples spread over it are read
** and checked against the workload (untimed), so a figure is never that of
** a push that went wrong.  The environment gives the endpoint and
** credentials (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY);
** PAGEDB_PUSH_PART_BYTES the part size.
*/
#define _GNU_SOURCE
#include "pagedb.h"
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char *what, const char *path, int rc, pagedb *db) {
  fprintf(stderr, "pagedb-pushbench: %s %s: %s (%s)\n", what, path, pagedb_errname(rc), db ? pagedb_errmsg(db) : "");
  exit(1);
}

/* Sample I of W into the writer PW. */
static int put_sample(pagedb_writer *pw, const wl_t *w, int64_t i, uint8_t *buf) {
  size_t n = (size_t)wl_size(w, i);
  wl_fill(w, i, buf, n);
  int rc = pagedb_sample_begin(pw, i);
  if (!rc) rc = pagedb_put(pw, 0, buf, n);
  if (!rc) rc = pagedb_put_int(pw, 1, wl_label(w, i));
  return rc ? rc : pagedb_sample_end(pw, NULL);
}

static void make(const char *path, const wl_t *w) {
  pagedb *db;
  pagedb_writer *pw = NULL;
  uint8_t *buf = malloc(wl_max_size(w));
  int rc = buf ? pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, NULL) : PAGEDB_NOMEM;
  if (!rc) rc = pagedb_field_add(db, "image", PAGEDB_BYTES, PAGEDB_CODEC_NONE);
  if (!rc) rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE);
  if (!rc) rc = pagedb_writer_open(db, &pw);
  for (int64_t i = 0; !rc && i < w->count; i++) rc = put_sample(pw, w, i, buf);
  if (!rc) rc = pagedb_writer_close(pw);
  if (!rc) rc = pagedb_close(db);
  if (rc) fail("making", path, rc, db);
  free(buf);
}

/* Bytes a push of LOCAL copies: its files (the catalog's snapshot is about
** its file's size). */
static long long dataset_bytes(const char *local) {
  static const char *const sfx[] = { "", "-index", "-catalog" };
  long long n = 0;
  char p[4096];
  for (int i = 0; i < 3; i++) {
    struct stat st;
    snprintf(p, sizeof p, "%s%s", local, sfx[i]);
    if (stat(p, &st) == 0) n += st.st_size;
  }
  return n;
}

/* Open the pushed dataset at URL and check COUNT and samples across it. */
static void verify(const char *url, const wl_t *w) {
  pagedb *db;
  pagedb_reader *r;
  int rc = pagedb_open(url, &db, PAGEDB_OPEN_READONLY, NULL);
  if (!rc) rc = pagedb_reader_open(db, PAGEDB_READ_COPY, &r);
  if (rc) fail("opening", url, rc, db);
  if (pagedb_count(db) != w->count) {
    fprintf(stderr, "pagedb-pushbench: %s has %lld samples, not %lld\n", url, (long long)pagedb_count(db),
            (long long)w->count);
    exit(1);
  }
  for (int64_t i = 0; i < w->count; i += 1 + w->count / 64) {
    const void *d;
    size_t sz;
    if ((rc = pagedb_read(r, i, 0, &d, &sz))) fail("reading", url, rc, db);
    if (wl_check(w, i, d, sz)) {
      fprintf(stderr, "pagedb-pushbench: sample %lld of %s has wrong bytes\n", (long long)i, url);
      exit(1);
    }
  }
  pagedb_close(db);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: pagedb-pushbench LOCAL S3PREFIX [W-img[:N]] [ROUNDS] [PARALLEL ...]\n");
    return 2;
  }
  const char *local = argv[1], *prefix = argv[2];
  wl_t w;
  if (wl_parse(argc > 3 ? argv[3] : "W-img", &w)) {
    fprintf(stderr, "pagedb-pushbench: %s: not a workload\n", argc > 3 ? argv[3] : "");
    return 2;
  }
  int rounds = argc > 4 ? atoi(argv[4]) : 3;
  int par[16], npar = 0;
  for (int i = 5; i < argc && npar < 16; i++) par[npar++] = atoi(argv[i]);
  if (npar == 0) par[npar++] = 1, par[npar++] = 4;
  struct stat st;
  if (stat(local, &st) != 0) {
    double t0 = now();
    make(local, &w);
    fprintf(stderr, "made %s (%s:%lld) in %.1f s\n", local, w.name, (long long)w.count, now() - t0);
  }
  long long bytes = dataset_bytes(local);
  printf("%s:%lld, %.1f MB pushed per run, %d rounds\n", w.name, (long long)w.count, bytes / 1e6, rounds);
  double sum[16] = { 0 };
  for (int r = 1; r <= rounds; r++) {
    for (int k = 0; k < npar; k++) {
      int p = par[r % 2 ? k : npar - 1 - k];
      char dest[4096], url[4200];
      snprintf(dest, sizeof dest, "%s/r%d-p%d/", prefix, r, p);
      const char *base = strrchr(local, '/');
      snprintf(url, sizeof url, "%s%s", dest, base ? base + 1 : local);
      pagedb *db;
      int rc = pagedb_config(PAGEDB_CONFIG_PUSH_PARALLEL, (int64_t)p);
      if (!rc) rc = pagedb_open(local, &db, PAGEDB_OPEN_READONLY, NULL);
      if (rc) fail("opening", local, rc, NULL);
      double t0 = now();
      if ((rc = pagedb_push(db, dest))) fail("pushing to", dest, rc, db);
      double t = now() - t0;
      pagedb_close(db);
      verify(url, &w);
      int j = 0;
      while (par[j] != p) j++;
      sum[j] += bytes / 1e6 / t;
      printf("round %d  parts at once %2d  %7.2f s  %8.1f MB/s\n", r, p, t, bytes / 1e6 / t);
      fflush(stdout);
    }
  }
  for (int k = 0; k < npar; k++) printf("mean  parts at once %2d  %8.1f MB/s\n", par[k], sum[k] / rounds);
  wl_free(&w);
  return 0;
}
