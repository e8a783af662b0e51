/*
** membench.c -- pagedb-membench: the memory subsystem against glibc.
**
**   1. The page-buffer pool (pagedb_pool_alloc/_free) against malloc/free
**      for page-sized buffers (64 KiB, 1 MiB, 8 MiB), touching the first
**      and last byte of each buffer, with 1 and 2 threads.
**   2. The buddy heap (PAGEDB_CONFIG_HEAP; pagedb_malloc/pagedb_free)
**      against malloc/free for small blocks (16 B to 4 KiB, random), with
**      up to 64 blocks live per thread, 1 and 2 threads.  Run in a child
**      process, because the heap must be configured before the library is
**      first used.
**   3. Resident memory: a dataset of 1,100 samples of 1 MB read twice in
**      copy mode, in zero-copy mode with PAGEDB_ADVISE_DONTNEED every 16
**      samples, and in zero-copy mode without it; RSS growth of each.
**
** Usage: pagedb-membench [--ops N] [--dir DIR]
** Every figure is a median of 3; the ratios are against glibc in the same
** run.
*/
#include "pagedb.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long gOps = 1000000;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

typedef struct Job {
  int kind;        /* 0 malloc, 1 pool / heap */
  int small;       /* small random blocks (heap) instead of buffers */
  size_t size;     /* buffer size */
  long ops;
  uint64_t seed;
  int bad;
} Job;

static void *run(void *arg) {
  Job *j = arg;
  void *live[64] = { 0 };
  uint64_t s = j->seed;
  for (long i = 0; i < j->ops; i++) {
    int k = j->small ? (int)(next(&s) % 64) : 0;
    if (live[k]) {
      if (j->kind) {
        if (j->small ? pagedb_free(live[k]) : pagedb_pool_free(live[k])) j->bad = 1;
      } else {
        free(live[k]);
      }
      live[k] = NULL;
    }
    size_t n = j->small ? 16 + next(&s) % 4081 : j->size;
    void *p = j->kind ? (j->small ? pagedb_malloc(n) : pagedb_pool_alloc(n, NULL)) : malloc(n);
    if (!p) {
      j->bad = 1;
      break;
    }
    ((volatile char *)p)[0] = 1;
    ((volatile char *)p)[n - 1] = 1;
    live[k] = p;
  }
  for (int k = 0; k < 64; k++) {
    if (!live[k]) continue;
    if (!j->kind) free(live[k]);
    else if (j->small) pagedb_free(live[k]);
    else pagedb_pool_free(live[k]);
  }
  return NULL;
}

/* Operations per second of NT threads doing job J, median of 3. */
static double rate(Job j, int nt) {
  double r[3];
  for (int rep = 0; rep < 3; rep++) {
    pthread_t t[2];
    Job jobs[2];
    double t0 = now();
    for (int i = 0; i < nt; i++) {
      jobs[i] = j;
      jobs[i].seed = j.seed + (uint64_t)i * 7919 + (uint64_t)rep;
      pthread_create(&t[i], NULL, run, &jobs[i]);
    }
    for (int i = 0; i < nt; i++) pthread_join(t[i], NULL);
    r[rep] = (double)j.ops * nt / (now() - t0);
    for (int i = 0; i < nt; i++)
      if (jobs[i].bad) {
        fprintf(stderr, "pagedb-membench: an allocation failed\n");
        exit(1);
      }
  }
  double a = r[0], b = r[1], c = r[2];
  return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

static void row(const char *what, Job j, int nt) {
  Job m = j;
  m.kind = 0;
  double sys = rate(m, nt), pdb = rate(j, nt);
  printf("  %-34s %d thread%s %13.0f %13.0f %8.1f%%\n", what, nt, nt > 1 ? "s" : " ", sys, pdb, 100.0 * pdb / sys);
  fflush(stdout);
}

static void heap_rows(void) {
  size_t n = (size_t)64 << 20;
  void *arena = malloc(n);
  if (!arena || pagedb_config(PAGEDB_CONFIG_HEAP, arena, n, (size_t)16) != PAGEDB_OK) {
    fprintf(stderr, "pagedb-membench: PAGEDB_CONFIG_HEAP failed\n");
    exit(1);
  }
  Job j = { 1, 1, 0, gOps * 5, 42, 0 };
  printf("\n  buddy heap (64 MiB arena, 16-byte atoms) vs malloc; 16 B - 4 KiB blocks, 64 live per thread\n");
  printf("  %-34s %9s %13s %13s %9s\n", "", "", "malloc ops/s", "heap ops/s", "ratio");
  row("pagedb_malloc + pagedb_free", j, 1);
  row("pagedb_malloc + pagedb_free", j, 2);
  printf("  (the heap takes one mutex per call: pagedb serializes it as SQLite does mem5)\n");
}

static long rss(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb * 1024;
}

static int check(int rc, pagedb *db, const char *what) {
  if (rc == PAGEDB_OK) return 0;
  fprintf(stderr, "pagedb-membench: %s: %s (%s)\n", what, pagedb_errname(rc), pagedb_errmsg(db));
  exit(1);
}

/* Read every sample of DB twice in MODE, advising DONTNEED every 16 if
** DONTNEED; the RSS growth in bytes. */
static long read_twice(pagedb *db, int mode, int dontneed, int64_t count) {
  pagedb_reader *r;
  check(pagedb_reader_open(db, mode, &r), db, "pagedb_reader_open");
  long before = rss();
  uint64_t sum = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int64_t id = 0; id < count; id++) {
      const void *p;
      size_t n;
      check(pagedb_read(r, id, 0, &p, &n), db, "pagedb_read");
      for (size_t k = 0; k < n; k += 4096) sum += ((const uint8_t *)p)[k];
      if (dontneed && id % 16 == 15) check(pagedb_advise(r, PAGEDB_ADVISE_DONTNEED), db, "pagedb_advise");
    }
  }
  long grew = rss() - before;
  pagedb_reader_close(r);
  if (sum == 1) printf(" ");   /* keeps the reads */
  return grew;
}

static void rss_rows(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/membench-%ld.pagedb", dir, (long)getpid());
  pagedb *db;
  check(pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, NULL), db, "pagedb_open");
  check(pagedb_field_add(db, "data", PAGEDB_BYTES, PAGEDB_CODEC_NONE), db, "pagedb_field_add");
  pagedb_writer *w;
  check(pagedb_writer_open(db, &w), db, "pagedb_writer_open");
  size_t sz = 1000000;
  int64_t count = 1100;
  uint8_t *buf = malloc(sz);
  for (int64_t i = 0; i < count; i++) {
    for (size_t k = 0; k < sz; k++) buf[k] = (uint8_t)(i * 31 + k);
    int64_t id;
    check(pagedb_sample_begin(w, i), db, "pagedb_sample_begin");
    check(pagedb_put(w, 0, buf, sz), db, "pagedb_put");
    check(pagedb_sample_end(w, &id), db, "pagedb_sample_end");
  }
  free(buf);
  check(pagedb_writer_close(w), db, "pagedb_writer_close");
  check(pagedb_commit(db), db, "pagedb_commit");
  pagedb_release_memory(SIZE_MAX);
  printf("\n  resident memory: %lld samples of 1 MB (%.2f GB) read twice, in id order\n", (long long)count,
         count * (double)sz / 1e9);
  printf("  %-46s %12.1f MB\n", "copy mode (PAGEDB_READ_COPY)", read_twice(db, PAGEDB_READ_COPY, 0, count) / 1e6);
  printf("  %-46s %12.1f MB\n", "zero-copy, PAGEDB_ADVISE_DONTNEED every 16",
         read_twice(db, PAGEDB_READ_MMAP, 1, count) / 1e6);
  printf("  %-46s %12.1f MB\n", "zero-copy, pages kept", read_twice(db, PAGEDB_READ_MMAP, 0, count) / 1e6);
  pagedb_close(db);
  char cat[4200];
  snprintf(cat, sizeof cat, "%s-catalog", path);
  unlink(path);
  unlink(cat);
}

int main(int argc, char **argv) {
  const char *dir = "/tmp";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--ops") && i + 1 < argc) gOps = atol(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else {
      fprintf(stderr, "usage: pagedb-membench [--ops N] [--dir DIR]\n");
      return 2;
    }
  }
  printf("pagedb-membench: %ld operations per thread and row, medians of 3\n", gOps);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    heap_rows();
    fflush(stdout);
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st)) return 1;
  printf("\n  page-buffer pool vs malloc; alloc + touch first and last byte + free\n");
  printf("  %-34s %9s %13s %13s %9s\n", "", "", "malloc ops/s", "pool ops/s", "ratio");
  static const size_t sizes[] = { 64 << 10, 1 << 20, 8 << 20 };
  static const char *names[] = { "64 KiB buffers", "1 MiB buffers", "8 MiB buffers" };
  for (int i = 0; i < 3; i++) {
    Job j = { 1, 0, sizes[i], gOps, 42, 0 };
    row(names[i], j, 1);
    row(names[i], j, 2);
  }
  rss_rows(dir);
  /* Everything closed and freed: pagedb must hold nothing at all. */
  if (pagedb_shutdown() != PAGEDB_OK || pagedb_memory_used() != 0) {
    fprintf(stderr, "pagedb-membench: pagedb still holds %lld bytes\n", (long long)pagedb_memory_used());
    return 1;
  }
  return 0;
}
