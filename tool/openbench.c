/*
** openbench.c -- pagedb-openbench: what opening a dataset, appending to it
** and checking it cost, with the persistent index (issue 16) and, in the
** same run, without it.
**
**   pagedb-openbench [-dir DIR] [-n N[,N...]] [-procs P] [-reads R] [-reps K]
**                    [-vfs NAME] [-make-vfs NAME] [-base BIN] [-base-reps K] [-modes LIST]
**                    [-pss N[,N...]] [-random] [-append M] [-rw N[,N...]] [-check]
**
** For each N (default 1000000,8000000) it makes DIR/ob-N.pagedb once (N
** samples of 16..64 bytes, ids 0..N-1, and an INT label, committed every
** million; kept for later runs, with DIR/ob-N.pagedb.made once whole, and
** the time it took printed as an ingest rate, per second of wall time and
** per CPU-second), prints the files' sizes and bytes per sample, then measures in
** fresh processes (each measurement is a child that execs a binary, so
** nothing is cached in the process), for each of the ways of finding the
** index named by -modes:
**
**   mapped   this build: NAME-index in force, the open maps it;
**   scan     this build with NAME-index moved away for the measurement: a
**            read-only open falls back to the in-memory index built by a
**            scan of the catalog;
**   base     BIN (-base): this same source compiled against another build
**            of the library, typically the commit before issue 16 (the
**            in-memory index), on its own datasets under DIR/base/, made by
**            BIN.  doc/benchmarks.md says how BIN is built.  -base-reps K
**            (default: as -reps) repeats its measurements fewer times: at
**            64M samples one of its opens takes minutes and gigabytes.
**
** the median of K (default 3) read-only opens followed by one read of a
** random sample (wall time from pagedb_open to the read's return, and the
** CPU time the process spent in them; RSS the open and the read added,
** VmRSS after minus before), the modes alternated
** within each repetition; then, for the sizes named by -pss (default all),
** one process alone and P (default 8) processes at once each open the
** dataset and read R (default 100000) random samples zero-copy (with
** -random, after pagedb_advise(PAGEDB_ADVISE_RANDOM)): each one's
** PSS (/proc/self/smaps_rollup) while all are alive, the sum against the
** one alone, and the one alone's random reads per second.
**
** For the sizes named by -rw (default none), K times, alternated between
** the builds (mapped, and base if given): a read-write open of the
** dataset (pagedb_open + pagedb_writer_open), then M (-append, default
** 1000000) samples appended with PAGEDB_AUTO_ID, committed every million;
** and the same M samples into an empty dataset made for the purpose and
** removed after.  It prints the read-write open time, the RSS it added,
** the append rates (per second of wall time, and per CPU-second of the
** process, which a loaded machine disturbs less) and the rate into the big
** dataset against the rate into the empty one.  Each repetition leaves the big dataset M samples larger
** (reads and opens use ids below N, which stay).
**
** With -check, pagedb_check (full: checksums too) of each dataset made
** by this build, timed.  Figures only: no pass/fail (doc/benchmarks.md
** records them; tool/check-scale.sh runs the 256M-sample case).
*/
#define _GNU_SOURCE   /* pipe2 */
#include "pagedb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXREPS 64

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

/* CPU seconds of the process so far, all threads (user + system): on a
** loaded machine the wall time includes waiting for a core, this not. */
static double cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

static const char *vfs_arg(const char *v) { return strcmp(v, "-") ? v : NULL; }

/* ---- the children: one measurement each, one line on stdout ---------- */

/* Sample I of a dataset: 16..64 bytes into BUF, its length returned. */
static size_t sample(uint64_t i, uint8_t *buf, int64_t *label) {
  uint64_t h = mix(i);
  size_t len = 16 + h % 49;
  for (size_t j = 0; j < len; j++) buf[j] = (uint8_t)(h >> (j % 8 * 8)) ^ (uint8_t)j;
  *label = (int64_t)(h % 1000);
  return len;
}

/* Write M samples through W (ids ID0.., or automatic if AUTO), committing
** every million and at the end. */
static void put_samples(pagedb *db, pagedb_writer *w, int64_t id0, int64_t m, int autoid) {
  uint8_t buf[64];
  int rc;
  for (int64_t i = 0; i < m; i++) {
    int64_t label;
    size_t len = sample((uint64_t)(id0 + i), buf, &label);
    if ((rc = pagedb_sample_begin(w, autoid ? PAGEDB_AUTO_ID : id0 + i)) || (rc = pagedb_put(w, 0, buf, len)) ||
        (rc = pagedb_put_int(w, 1, label)) || (rc = pagedb_sample_end(w, NULL)))
      die("write", db, rc);
    if ((i + 1) % 1000000 == 0 && (rc = pagedb_commit(db))) die("commit", db, rc);
  }
  if (m % 1000000 && (rc = pagedb_commit(db))) die("commit", db, rc);
}

static pagedb *create(const char *path, const char *vfs) {
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, vfs);
  if (rc) die("create", db, rc);
  if ((rc = pagedb_field_add(db, "b", PAGEDB_BYTES, PAGEDB_CODEC_NONE))) die("field", db, rc);
  if ((rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE))) die("field", db, rc);
  return db;
}

/* make PATH N: the dataset; prints seconds and CPU seconds (ingest through
** close). */
static void child_make(const char *path, int64_t n, const char *vfs) {
  double t0 = now(), c0 = cpu();
  pagedb *db = create(path, vfs);
  pagedb_writer *w;
  int rc;
  if ((rc = pagedb_writer_open(db, &w))) die("writer", db, rc);
  put_samples(db, w, 0, n, 0);
  pagedb_writer_close(w);
  if ((rc = pagedb_close(db))) die("close", NULL, rc);
  printf("%.6f %.6f\n", now() - t0, cpu() - c0);
}

/* open PATH N SEED: read-only open, one random read; prints seconds to the
** read's return, RSS added (kB), the index state, seconds of the open, CPU
** seconds of the open and the read. */
static void child_open(const char *path, int64_t n, const char *vfs, uint64_t seed) {
  long rss0 = proc_kb("/proc/self/status", "VmRSS");
  double t0 = now(), c0 = cpu();
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
  double t = now() - t0, c = cpu() - c0;
  long rss1 = proc_kb("/proc/self/status", "VmRSS");
  int state = 0;
#ifdef PAGEDB_INDEX_MAPPED
  const char *why;
  state = pagedb_index_state(db, &why);
#endif
  printf("%.6f %ld %d %.6f %.6f\n", t, rss1 - rss0, state, topen, c);
  fflush(stdout);
  pagedb_close(db);
}

/* pss PATH N READS I: open, READS random reads (stream I); prints PSS (kB),
** a checksum and the reads' seconds, then waits for stdin to close so that
** all the processes of a measurement are alive together. */
static void child_pss(const char *path, int64_t n, const char *vfs, int reads, int i) {
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, vfs);
  if (rc) die("open", db, rc);
  pagedb_reader *r;
  if ((rc = pagedb_reader_open(db, PAGEDB_READ_MMAP, &r))) die("reader", db, rc);
  /* -random: what a random reader of a dataset larger than memory must
  ** say, or each cold fault reads the disk's read-ahead around it (8 MiB
  ** on this VM) and the 256M-sample case thrashes for hours.  Not by
  ** default: the PSS comparison of issue 16 is of readers that give no
  ** advice (with it, each maps only the pages it touches, so the sum of
  ** eight is the union of eight random subsets, not a sign of copies). */
  if (getenv("OPENBENCH_RANDOM") && (rc = pagedb_advise(r, PAGEDB_ADVISE_RANDOM))) die("advise", db, rc);
  uint64_t sum = 0;
  double t0 = now();
  for (int k = 0; k < reads; k++) {
    const void *p;
    size_t sz;
    if ((rc = pagedb_read(r, (int64_t)(mix((uint64_t)i << 32 | (uint64_t)k) % (uint64_t)n), 0, &p, &sz)))
      die("read", db, rc);
    sum += ((const uint8_t *)p)[sz - 1];
  }
  double t = now() - t0;
  long pss = proc_kb("/proc/self/smaps_rollup", "Pss");
  printf("%ld %llu %.6f\n", pss, (unsigned long long)sum, t);
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {}
  pagedb_close(db);
}

/* append PATH M CREATE: read-write open (created empty if CREATE), M
** samples appended with automatic ids; prints seconds of pagedb_open,
** seconds of open + pagedb_writer_open, RSS the two added (kB), seconds of
** the appends and their commits, seconds of the close, CPU seconds of the
** appends, CPU seconds of open + pagedb_writer_open. */
static void child_append(const char *path, int64_t m, const char *vfs, int creat) {
  long rss0 = proc_kb("/proc/self/status", "VmRSS");
  double t0 = now(), c0 = cpu();
  pagedb *db;
  int rc = 0;
  if (creat) db = create(path, vfs);
  else if ((rc = pagedb_open(path, &db, PAGEDB_OPEN_READWRITE, vfs))) die("open", db, rc);
  double topen = now() - t0;
  pagedb_writer *w;
  if ((rc = pagedb_writer_open(db, &w))) die("writer", db, rc);
  double trw = now() - t0, crw = cpu() - c0;
  long rss1 = proc_kb("/proc/self/status", "VmRSS");
  /* Different bytes from the dataset's own samples: ids from 2^40 on. */
  double t1 = now(), c1 = cpu();
  put_samples(db, w, (int64_t)1 << 40, m, 1);
  double tapp = now() - t1, capp = cpu() - c1;
  pagedb_writer_close(w);
  double t2 = now();
  if ((rc = pagedb_close(db))) die("close", NULL, rc);
  printf("%.6f %.6f %ld %.6f %.6f %.6f %.6f\n", topen, trw, rss1 - rss0, tapp, now() - t2, capp, crw);
}

/* check PATH: pagedb_check, full; prints seconds, result, problems. */
static void child_check(const char *path, const char *vfs) {
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, vfs);
  if (rc) die("open", db, rc);
  int64_t np = 0;
  double t0 = now();
  rc = pagedb_check(db, 0, NULL, NULL, &np);
  printf("%.6f %d %lld\n", now() - t0, rc, (long long)np);
  pagedb_close(db);
}

static int child(int argc, char **argv) {
  if (argc < 4) return 2;
  const char *what = argv[1], *vfs = vfs_arg(argv[2]), *path = argv[3];
  if (!strcmp(what, "make") && argc == 5) child_make(path, atoll(argv[4]), vfs);
  else if (!strcmp(what, "open") && argc == 6) child_open(path, atoll(argv[4]), vfs, strtoull(argv[5], NULL, 10));
  else if (!strcmp(what, "pss") && argc == 7) child_pss(path, atoll(argv[4]), vfs, atoi(argv[5]), atoi(argv[6]));
  else if (!strcmp(what, "append") && argc == 6) child_append(path, atoll(argv[4]), vfs, atoi(argv[5]));
  else if (!strcmp(what, "check") && argc == 4) child_check(path, vfs);
  else return 2;
  return 0;
}

/* ---- the driver -------------------------------------------------------- */

static char self[4096];

/* Start BIN -child ARGS... with stdout to a pipe (returned in *OUT) and
** stdin from a pipe whose write end is *HOLD (-1 if HOLD is NULL). */
static pid_t spawn(const char *bin, char *const *args, int *out, int *hold) {
  int o[2], h[2] = { -1, -1 };
  if (pipe2(o, O_CLOEXEC) || (hold && pipe2(h, O_CLOEXEC))) exit(1);  /* dup2 clears it */
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) exit(1);
  if (pid == 0) {
    dup2(o[1], 1);
    close(o[0]);
    close(o[1]);
    if (hold) {
      dup2(h[0], 0);
      close(h[0]);
      close(h[1]);
    }
    char *argv[16];
    int k = 0;
    argv[k++] = (char *)bin;
    argv[k++] = "-child";
    while (*args && k < 15) argv[k++] = *args++;
    argv[k] = NULL;
    execv(bin, argv);
    fprintf(stderr, "pagedb-openbench: cannot run %s: %s\n", bin, strerror(errno));
    _exit(127);
  }
  close(o[1]);
  *out = o[0];
  if (hold) {
    close(h[0]);
    *hold = h[1];
  }
  return pid;
}

/* Read one line of a child's output from FD into BUF; wait for it unless
** WAITLATER. */
static void collect(pid_t pid, int fd, char *buf, size_t cap, int waitlater) {
  size_t got = 0;
  ssize_t k;
  while (got + 1 < cap && (k = read(fd, buf + got, 1)) == 1 && buf[got] != '\n') got++;
  buf[got] = 0;
  close(fd);
  int st = 0;
  if (!waitlater) waitpid(pid, &st, 0);
  if (got == 0 || (!waitlater && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))) {
    fprintf(stderr, "pagedb-openbench: a child failed\n");
    exit(1);
  }
}

/* Run BIN -child ARGS and return its line in BUF. */
static void run(const char *bin, char *const *args, char *buf, size_t cap) {
  int fd;
  pid_t pid = spawn(bin, args, &fd, NULL);
  collect(pid, fd, buf, cap, 0);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int listed(const char *list, int64_t n) {
  if (!list) return 1;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *s = NULL, *t = strtok_r(buf, ",", &s); t; t = strtok_r(NULL, ",", &s))
    if (atoll(t) == n) return 1;
  return 0;
}

static void remove_dataset(const char *path) {
  static const char *const suffix[] = { ".made", "", "-catalog", "-index", "-catalog-wal", "-catalog-shm",
                                        "-catalog-journal" };
  char p[4200];
  for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
    snprintf(p, sizeof p, "%s%s", path, suffix[i]);
    unlink(p);
  }
}

static double file_mib(const char *path, const char *suffix, double *disk) {
  char p[4200];
  struct stat st;
  snprintf(p, sizeof p, "%s%s", path, suffix);
  if (stat(p, &st) != 0) return *disk = 0, 0;
  *disk = st.st_blocks / 2048.0;
  return st.st_size / 1048576.0;
}

static void files(const char *name, const char *path, int64_t n) {
  static const char *const suffix[] = { "", "-catalog", "-index" }, *const what[] = { "data", "catalog", "index" };
  printf("%-10lld %-6s files:", (long long)n, name);
  double total = 0;
  for (int i = 0; i < 3; i++) {
    double disk, mib = file_mib(path, suffix[i], &disk);
    if (mib == 0 && i == 2) continue;
    printf(" %s %.1f MiB (%.1f B/sample, %.1f MiB on disk)%s", what[i], mib, mib * 1048576.0 / (double)n, disk,
           i < 2 ? ";" : "");
    total += mib;
  }
  printf(" total %.1f B/sample\n", total * 1048576.0 / (double)n);
}

typedef struct Mode {
  const char *name;
  const char *bin;
  char path[1200];
} Mode;

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "-child")) return child(argc - 1, argv + 1);
  const char *dir = "openbench.d", *vfs = "-", *mkvfs = NULL, *base = NULL, *pssn = NULL, *rwn = "";
  char ns[256] = "1000000,8000000", modes[64] = "";
  int procs = 8, reads = 100000, reps = 3, breps = 0, check = 0;
  int64_t m = 1000000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-dir") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "-n") && i + 1 < argc) snprintf(ns, sizeof ns, "%s", argv[++i]);
    else if (!strcmp(argv[i], "-procs") && i + 1 < argc) procs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-reads") && i + 1 < argc) reads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-base-reps") && i + 1 < argc) breps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-vfs") && i + 1 < argc) vfs = argv[++i];
    else if (!strcmp(argv[i], "-make-vfs") && i + 1 < argc) mkvfs = argv[++i];
    else if (!strcmp(argv[i], "-base") && i + 1 < argc) base = argv[++i];
    else if (!strcmp(argv[i], "-modes") && i + 1 < argc) snprintf(modes, sizeof modes, "%s", argv[++i]);
    else if (!strcmp(argv[i], "-pss") && i + 1 < argc) pssn = argv[++i];
    else if (!strcmp(argv[i], "-rw") && i + 1 < argc) rwn = argv[++i];
    else if (!strcmp(argv[i], "-append") && i + 1 < argc) m = atoll(argv[++i]);
    else if (!strcmp(argv[i], "-check")) check = 1;
    else if (!strcmp(argv[i], "-random")) setenv("OPENBENCH_RANDOM", "1", 1);   /* for the pss children */
    else {
      fprintf(stderr,
              "usage: %s [-dir DIR] [-n N[,N...]] [-procs P] [-reads R] [-reps K] [-vfs NAME] [-make-vfs NAME]\n"
              "          [-base BIN] [-base-reps K] [-modes mapped,scan,base] [-pss N[,N...]] [-random] [-append M] [-rw N[,N...]]\n"
              "          [-check]\n",
              argv[0]);
      return 2;
    }
  }
  if (procs < 1 || procs > 64 || reps < 1 || reps > MAXREPS || reads < 1 || m < 1) {
    fprintf(stderr, "pagedb-openbench: -procs 1..64, -reps 1..%d, -reads >= 1, -append >= 1\n", MAXREPS);
    return 2;
  }
  if (!mkvfs) mkvfs = vfs;
  if (breps < 1 || breps > reps) breps = reps;
  if (!modes[0]) snprintf(modes, sizeof modes, "%s", base ? "mapped,base" : "mapped,scan");
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sl <= 0) return 1;
  self[sl] = 0;
  Mode mode[3];
  int nmode = 0;
  char basedir[1100];
  if (strlen(dir) > 1000) {
    fprintf(stderr, "pagedb-openbench: -dir is too long\n");
    return 2;
  }
  snprintf(basedir, sizeof basedir, "%s/base", dir);
  for (char *s = NULL, *t = strtok_r(modes, ",", &s); t && nmode < 3; t = strtok_r(NULL, ",", &s)) {
    if (strcmp(t, "mapped") && strcmp(t, "scan") && strcmp(t, "base")) {
      fprintf(stderr, "pagedb-openbench: unknown mode %s\n", t);
      return 2;
    }
    if (!strcmp(t, "base") && !base) {
      fprintf(stderr, "pagedb-openbench: mode base needs -base BIN\n");
      return 2;
    }
    mode[nmode].name = t;
    mode[nmode++].bin = strcmp(t, "base") ? self : base;
  }
  mkdir(dir, 0755);
  if (base) mkdir(basedir, 0755);
  printf("pagedb-openbench: reps %d, procs %d, reads %d, vfs %s (ingest %s)%s%s\n", reps, procs, reads, vfs, mkvfs,
         base ? ", base " : "", base ? base : "");
  for (char *s = NULL, *tok = strtok_r(ns, ",", &s); tok; tok = strtok_r(NULL, ",", &s)) {
    int64_t n = atoll(tok);
    if (n < 1) continue;
    char nstr[32], path[1200], bpath[1200], ix[1300], away[1300], line[256];
    snprintf(nstr, sizeof nstr, "%lld", (long long)n);
    snprintf(path, sizeof path, "%s/ob-%lld.pagedb", dir, (long long)n);
    snprintf(bpath, sizeof bpath, "%s/ob-%lld.pagedb", basedir, (long long)n);
    snprintf(ix, sizeof ix, "%s-index", path);
    snprintf(away, sizeof away, "%s-index.away", path);
    int hasbase = 0;
    for (int i = 0; i < nmode; i++) {
      snprintf(mode[i].path, sizeof mode[i].path, "%s", strcmp(mode[i].name, "base") ? path : bpath);
      hasbase |= !strcmp(mode[i].name, "base");
    }
    /* Make the datasets that are missing: this build's, and BIN's. */
    for (int b = 0; b <= hasbase; b++) {
      const char *p = b ? bpath : path, *bin = b ? base : self;
      struct stat st;
      char made[1300];
      /* PATH.made, written once the dataset is whole: a run cut short
      ** during a make leaves none, and the next run makes it again. */
      snprintf(made, sizeof made, "%s.made", p);
      if (stat(made, &st) == 0) continue;
      remove_dataset(p);
      char *args[] = { "make", (char *)mkvfs, (char *)p, nstr, NULL };
      run(bin, args, line, sizeof line);
      double t = 0, c = 0;
      if (sscanf(line, "%lf %lf", &t, &c) != 2) return 1;
      FILE *f = fopen(made, "w");
      if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f) != 0) {
        fprintf(stderr, "pagedb-openbench: cannot write %s\n", made);
        return 1;
      }
      printf("%-10lld %-6s made in %.1f s: %.0f samples/s, %.0f per CPU-second (one writer, commit every million,"
             " vfs %s)\n", (long long)n, b ? "base" : "this", t, (double)n / t, (double)n / c, mkvfs);
    }
    files("this", path, n);
    if (hasbase) files("base", bpath, n);
    fflush(stdout);

    /* Read-only open + first read, the modes alternated. */
    double t[3][MAXREPS], r[3][MAXREPS], o[3][MAXREPS], c[3][MAXREPS];
    int state[3] = { 0 };
    int nrep[3];
    for (int i = 0; i < nmode; i++) nrep[i] = strcmp(mode[i].name, "base") ? reps : breps;
    for (int k = 0; k < reps; k++)
      for (int i = 0; i < nmode; i++) {
        if (k >= nrep[i]) continue;
        int scan = !strcmp(mode[i].name, "scan");
        if (scan && rename(ix, away) != 0) {
          fprintf(stderr, "pagedb-openbench: cannot move %s away: %s\n", ix, strerror(errno));
          return 1;
        }
        char seed[32];
        snprintf(seed, sizeof seed, "%d", k + 1);
        char *args[] = { "open", (char *)vfs, mode[i].path, nstr, seed, NULL };
        run(mode[i].bin, args, line, sizeof line);
        long rss = 0;
        if (sscanf(line, "%lf %ld %d %lf %lf", &t[i][k], &rss, &state[i], &o[i][k], &c[i][k]) != 5) return 1;
        r[i][k] = rss / 1024.0;
        if (scan && rename(away, ix) != 0) {
          fprintf(stderr, "pagedb-openbench: cannot move %s back: %s\n", away, strerror(errno));
          return 1;
        }
      }
    double mt[3];
    for (int i = 0; i < nmode; i++) {
      double lo, hi;
      int kr = nrep[i];
      mt[i] = median(t[i], kr);
      lo = t[i][0], hi = t[i][kr - 1];
      printf("%-10lld %-6s open+first read %10.3f ms (min %.3f, max %.3f; the open alone %.3f ms; CPU %.3f ms)"
             "  RSS added %8.1f MiB  (index_state %d)\n", (long long)n, mode[i].name, mt[i] * 1e3, lo * 1e3, hi * 1e3,
             median(o[i], kr) * 1e3, median(c[i], kr) * 1e3, median(r[i], kr), state[i]);
    }
    for (int i = 1; i < nmode; i++)
      printf("%-10lld open+first read: %s / %s = %.1f x\n", (long long)n, mode[i].name, mode[0].name, mt[i] / mt[0]);
    fflush(stdout);

    /* PSS: one process alone, then PROCS at once. */
    if (listed(pssn, n))
      for (int i = 0; i < nmode; i++) {
        int scan = !strcmp(mode[i].name, "scan");
        if (scan && rename(ix, away) != 0) return 1;
        long one = 0, all = 0;
        double rate = 0;
        for (int pass = 0; pass < 2; pass++) {
          int np = pass ? procs : 1, out[64], hold[64];
          pid_t pid[64];
          char rd[32], idx[32];
          snprintf(rd, sizeof rd, "%d", reads);
          for (int j = 0; j < np; j++) {
            snprintf(idx, sizeof idx, "%d", j);
            char *args[] = { "pss", (char *)vfs, mode[i].path, nstr, rd, idx, NULL };
            pid[j] = spawn(mode[i].bin, args, &out[j], &hold[j]);
          }
          long sum = 0;
          for (int j = 0; j < np; j++) {
            collect(pid[j], out[j], line, sizeof line, 1);
            long pss;
            unsigned long long ck;
            double secs;
            if (sscanf(line, "%ld %llu %lf", &pss, &ck, &secs) != 3) return 1;
            sum += pss;
            if (!pass) rate = reads / secs;
          }
          for (int j = 0; j < np; j++) close(hold[j]);
          for (int j = 0; j < np; j++) waitpid(pid[j], NULL, 0);
          if (pass) all = sum;
          else one = sum;
        }
        if (scan && rename(away, ix) != 0) return 1;
        printf("%-10lld %-6s PSS: one process alone %.1f MiB (%d random reads at %.0f/s); %d at once: sum %.1f MiB ="
               " %.2f x one\n", (long long)n, mode[i].name, one / 1024.0, reads, rate, procs, all / 1024.0,
               (double)all / (double)one);
        fflush(stdout);
      }

    /* Read-write open of the dataset and appends to it, against appends
    ** into an empty dataset; this build and BIN alternated. */
    if (listed(rwn, n)) {
      const char *bn[2] = { "this", "base" }, *bb[2] = { self, base };
      const char *bp[2] = { path, bpath };
      double ropen[2][MAXREPS], rrw[2][MAXREPS], rrss[2][MAXREPS], rbig[2][MAXREPS], rempty[2][MAXREPS];
      double cbig[2][MAXREPS], cempty[2][MAXREPS], crwo[2][MAXREPS];
      char mstr[32];
      snprintf(mstr, sizeof mstr, "%lld", (long long)m);
      for (int k = 0; k < reps; k++)
        for (int b = 0; b <= hasbase && (b == 0 || k < breps); b++)
          for (int into = 0; into < 2; into++) {
            char epath[1200];
            snprintf(epath, sizeof epath, "%s/ob-empty.pagedb", b ? basedir : dir);
            if (into) remove_dataset(epath);
            char *args[] = { "append", (char *)mkvfs, (char *)(into ? epath : bp[b]), mstr, into ? "1" : "0", NULL };
            run(bb[b], args, line, sizeof line);
            double to, trw, tapp, tclose, capp, crw;
            long rss;
            if (sscanf(line, "%lf %lf %ld %lf %lf %lf %lf", &to, &trw, &rss, &tapp, &tclose, &capp, &crw) != 7) return 1;
            if (into) {
              rempty[b][k] = (double)m / tapp, cempty[b][k] = (double)m / capp;
              remove_dataset(epath);
            } else {
              ropen[b][k] = to, rrw[b][k] = trw, rrss[b][k] = rss / 1024.0, rbig[b][k] = (double)m / tapp;
              cbig[b][k] = (double)m / capp, crwo[b][k] = crw;
            }
            printf("%-10lld %-6s rep %d: %s: open %.3f ms, open+writer %.3f ms (CPU %.3f ms), %lld appended at %.0f samples/s,"
                   " %.0f per CPU-second (close %.3f ms)\n", (long long)n, bn[b], k + 1,
                   into ? "into an empty dataset" : "into this one", to * 1e3, trw * 1e3, crw * 1e3, (long long)m,
                   (double)m / tapp, (double)m / capp, tclose * 1e3);
            fflush(stdout);
          }
      for (int b = 0; b <= hasbase; b++) {
        int kr = b ? breps : reps;
        double big = median(rbig[b], kr), empty = median(rempty[b], kr), rw = median(rrw[b], kr);
        double cb = median(cbig[b], kr), ce = median(cempty[b], kr);
        printf("%-10lld %-6s read-write open %.3f ms (open+writer %.3f ms, min %.3f; CPU %.3f ms), RSS added %.1f MiB; append %.0f"
               " samples/s into it, %.0f into an empty dataset: %.1f%%; per CPU-second %.0f and %.0f: %.1f%%\n", (long long)n,
               bn[b], median(ropen[b], kr) * 1e3, rw * 1e3, rrw[b][0] * 1e3, median(crwo[b], kr) * 1e3, median(rrss[b], kr), big, empty,
               100 * big / empty, cb, ce, 100 * cb / ce);
      }
      fflush(stdout);
    }

    if (check) {
      char *args[] = { "check", (char *)vfs, path, NULL };
      run(self, args, line, sizeof line);
      double secs;
      int rc;
      long long np;
      if (sscanf(line, "%lf %d %lld", &secs, &rc, &np) != 3) return 1;
      printf("%-10lld this   pagedb_check (full) %.1f s (%.0f samples/s): %s, %lld problems\n", (long long)n, secs,
             (double)n / secs, rc ? "FAILED" : "ok", np);
      fflush(stdout);
    }
  }
  return 0;
}
