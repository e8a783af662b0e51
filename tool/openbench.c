/*
** openbench.c -- pagedb-openbench: what opening a dataset costs, with the
** persistent index (issue 16) and without it, measured in one run.
**
**   pagedb-openbench [-dir DIR] [-n N[,N...]] [-procs P] [-reads R] [-reps K] [-vfs NAME]
**
** For each N (default 1000000,8000000) it makes DIR/ob-N.pagedb once (N
** samples of 16..64 bytes, ids 0..N-1, and an INT label; kept for later
** runs), then, in fresh processes (fork, so that nothing is cached in the
** process), for each way of finding the index:
**
**   mapped   NAME-index in force: the open maps it;
**   scan     NAME-index moved away for the measurement: a read-only open
**            falls back to the in-memory index built by a scan of the
**            catalog (what every open did before issue 16);
**
** measures the median of K (default 3) read-only opens followed by one
** read of a random sample: the wall time from pagedb_open to the read's
** return, and the RSS the open and the read added (VmRSS before and
** after, /proc/self/status); then P (default 8) processes at once each
** open the dataset and read R (default 100000) random samples, zero-copy,
** and report their PSS (/proc/self/smaps_rollup) while all are alive: the
** sum, one process's PSS measured alone, and their ratio.  Figures only:
** no pass/fail (doc/benchmarks.md records them).
*/
#include "pagedb.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A line "KEY: N kB" of FILE, in kB (-1 if absent). */
static long proc_kb(const char *file, const char *key) {
  FILE *f = fopen(file, "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t k = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, k) == 0 && line[k] == ':') {
      v = strtol(line + k + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

static void die(const char *what, pagedb *db, int rc) {
  fprintf(stderr, "pagedb-openbench: %s: %s (%s)\n", what, db ? pagedb_errmsg(db) : "", pagedb_errname(rc));
  exit(1);
}

static void make(const char *path, int64_t n, const char *vfs) {
  struct stat st;
  char ix[4200];
  snprintf(ix, sizeof ix, "%s-index", path);
  if (stat(path, &st) == 0 && stat(ix, &st) == 0) return;
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, vfs);
  if (rc) die("create", db, rc);
  if ((rc = pagedb_field_add(db, "b", PAGEDB_BYTES, PAGEDB_CODEC_NONE))) die("field", db, rc);
  if ((rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE))) die("field", db, rc);
  pagedb_writer *w;
  if ((rc = pagedb_writer_open(db, &w))) die("writer", db, rc);
  uint8_t buf[64];
  double t0 = now();
  for (int64_t i = 0; i < n; i++) {
    uint64_t h = mix((uint64_t)i);
    size_t len = 16 + h % 49;
    for (size_t j = 0; j < len; j++) buf[j] = (uint8_t)(h >> (j % 8 * 8)) ^ (uint8_t)j;
    if ((rc = pagedb_sample_begin(w, i)) || (rc = pagedb_put(w, 0, buf, len)) ||
        (rc = pagedb_put_int(w, 1, (int64_t)(h % 1000))) || (rc = pagedb_sample_end(w, NULL)))
      die("write", db, rc);
    if ((i + 1) % 1000000 == 0 && (rc = pagedb_commit(db))) die("commit", db, rc);
  }
  pagedb_writer_close(w);
  if ((rc = pagedb_close(db))) die("close", NULL, rc);
  printf("made %s: %lld samples in %.1f s\n", path, (long long)n, now() - t0);
}

/* In a child: open read-only, read one random sample; report seconds and
** RSS added (kB) through FD. */
static void one_open(const char *path, int64_t n, const char *vfs, int fd, uint64_t seed) {
  long rss0 = proc_kb("/proc/self/status", "VmRSS");
  double t0 = now();
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, vfs);
  if (rc) die("open", db, rc);
  double topen = now() - t0;
  pagedb_reader *r;
  if ((rc = pagedb_reader_open(db, PAGEDB_READ_MMAP, &r))) die("reader", db, rc);
  const void *p;
  size_t sz;
  if ((rc = pagedb_read(r, (int64_t)(mix(seed) % (uint64_t)n), 0, &p, &sz))) die("read", db, rc);
  volatile uint8_t sink = ((const uint8_t *)p)[0];
  (void)sink;
  double t = now() - t0;
  long rss1 = proc_kb("/proc/self/status", "VmRSS");
  const char *why;
  int state = pagedb_index_state(db, &why);
  char out[128];
  int k = snprintf(out, sizeof out, "%.6f %ld %d %.6f\n", t, rss1 - rss0, state, topen);
  if (write(fd, out, (size_t)k) != k) _exit(2);
  pagedb_close(db);
  _exit(0);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void measure_open(const char *path, int64_t n, const char *vfs, int reps, const char *mode) {
  double t[64], r[64], o[64];
  int state = 0;
  for (int k = 0; k < reps; k++) {
    int pfd[2];
    if (pipe(pfd)) exit(1);
    pid_t pid = fork();
    if (pid == 0) {
      close(pfd[0]);
      one_open(path, n, vfs, pfd[1], (uint64_t)k + 1);
    }
    close(pfd[1]);
    char buf[128] = { 0 };
    ssize_t got = read(pfd[0], buf, sizeof buf - 1);
    close(pfd[0]);
    waitpid(pid, NULL, 0);
    long rss = 0;
    if (got <= 0 || sscanf(buf, "%lf %ld %d %lf", &t[k], &rss, &state, &o[k]) != 4) {
      fprintf(stderr, "pagedb-openbench: a child failed\n");
      exit(1);
    }
    r[k] = rss / 1024.0;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_d);
  qsort(r, (size_t)reps, sizeof *r, cmp_d);
  qsort(o, (size_t)reps, sizeof *o, cmp_d);
  printf("%-9lld %-7s open+first read %9.3f ms (min %.3f, max %.3f; the open alone %.3f ms)   RSS added %8.1f MiB"
         "   (index_state %d)\n", (long long)n, mode, t[reps / 2] * 1e3, t[0] * 1e3, t[reps - 1] * 1e3, o[reps / 2] * 1e3,
         r[reps / 2], state);
}

/* P processes at once, each reading R random samples; PSS of each while
** all are alive (kB), summed.  With P 1: one process alone. */
static long measure_pss(const char *path, int64_t n, const char *vfs, int procs, int reads) {
  int res[2], rel[2];
  if (pipe(res) || pipe(rel)) exit(1);
  pid_t pids[64];
  for (int i = 0; i < procs; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      close(res[0]);
      close(rel[1]);
      pagedb *db;
      int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, vfs);
      if (rc) die("open", db, rc);
      pagedb_reader *r;
      if ((rc = pagedb_reader_open(db, PAGEDB_READ_MMAP, &r))) die("reader", db, rc);
      uint64_t sum = 0;
      for (int k = 0; k < reads; k++) {
        const void *p;
        size_t sz;
        if ((rc = pagedb_read(r, (int64_t)(mix((uint64_t)i << 32 | (uint64_t)k) % (uint64_t)n), 0, &p, &sz)))
          die("read", db, rc);
        sum += ((const uint8_t *)p)[sz - 1];
      }
      long pss = proc_kb("/proc/self/smaps_rollup", "Pss");
      char out[64];
      int len = snprintf(out, sizeof out, "%ld %llu\n", pss, (unsigned long long)sum);
      if (write(res[1], out, (size_t)len) != len) _exit(2);
      char c;
      if (read(rel[0], &c, 1) < 0) _exit(3);   /* stay alive until all have measured */
      pagedb_close(db);
      _exit(0);
    }
  }
  close(res[1]);
  close(rel[0]);
  long total = 0;
  FILE *f = fdopen(res[0], "r");
  for (int i = 0; i < procs; i++) {
    long pss;
    unsigned long long s;
    if (fscanf(f, "%ld %llu", &pss, &s) != 2) {
      fprintf(stderr, "pagedb-openbench: a reader process failed\n");
      exit(1);
    }
    total += pss;
  }
  close(rel[1]);
  for (int i = 0; i < procs; i++) waitpid(pids[i], NULL, 0);
  fclose(f);
  return total;
}

int main(int argc, char **argv) {
  const char *dir = "openbench.d", *vfs = NULL;
  char ns[256] = "1000000,8000000";
  int procs = 8, reads = 100000, reps = 3;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-dir") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "-n") && i + 1 < argc) snprintf(ns, sizeof ns, "%s", argv[++i]);
    else if (!strcmp(argv[i], "-procs") && i + 1 < argc) procs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-reads") && i + 1 < argc) reads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-vfs") && i + 1 < argc) vfs = argv[++i];
    else {
      fprintf(stderr, "usage: %s [-dir DIR] [-n N[,N...]] [-procs P] [-reads R] [-reps K] [-vfs NAME]\n", argv[0]);
      return 2;
    }
  }
  if (procs < 1 || procs > 64 || reps < 1 || reps > 64 || reads < 1) {
    fprintf(stderr, "pagedb-openbench: -procs 1..64, -reps 1..64, -reads >= 1\n");
    return 2;
  }
  mkdir(dir, 0755);
  for (char *tok = strtok(ns, ","); tok; tok = strtok(NULL, ",")) {
    int64_t n = atoll(tok);
    if (n < 1) continue;
    char path[4096], ix[4200], away[4200];
    snprintf(path, sizeof path, "%s/ob-%lld.pagedb", dir, (long long)n);
    snprintf(ix, sizeof ix, "%s-index", path);
    snprintf(away, sizeof away, "%s-index.away", path);
    make(path, n, vfs);
    struct stat st;
    if (stat(path, &st) == 0) printf("%-9lld files: data %.1f MiB", (long long)n, st.st_size / 1048576.0);
    char cat[4200];
    snprintf(cat, sizeof cat, "%s-catalog", path);
    if (stat(cat, &st) == 0) printf(", catalog %.1f MiB", st.st_size / 1048576.0);
    if (stat(ix, &st) == 0) printf(", index %.1f MiB (%.1f MiB on disk)", st.st_size / 1048576.0, st.st_blocks / 2048.0);
    printf("\n");
    for (int mode = 0; mode < 2; mode++) {
      if (mode == 1 && rename(ix, away) != 0) {
        fprintf(stderr, "pagedb-openbench: cannot move %s away: %s\n", ix, strerror(errno));
        return 1;
      }
      const char *name = mode ? "scan" : "mapped";
      measure_open(path, n, vfs, reps, name);
      long one = measure_pss(path, n, vfs, 1, reads);
      long all = measure_pss(path, n, vfs, procs, reads);
      printf("%-9lld %-7s PSS: one process alone %.1f MiB; %d at once: sum %.1f MiB = %.2f x one\n", (long long)n,
             name, one / 1024.0, procs, all / 1024.0, (double)all / (double)one);
      if (mode == 1 && rename(away, ix) != 0) {
        fprintf(stderr, "pagedb-openbench: cannot move %s back: %s\n", away, strerror(errno));
        return 1;
      }
      fflush(stdout);
    }
  }
  return 0;
}
