/*
** partsbench.c -- a dataset made of parts (issue 26) measured against the
** same samples in one file, at P parts of PER samples each:
**
**   pagedb-partsbench [-dir DIR] [-parts P,P,...] [-per N] [-size S] [-reads R] [-rounds K] [-jobs J] [-copy] [-recopy] [-keep]
**
** For each P (default 1,1000): P part datasets of PER tiny samples (16-64
** bytes and an INT label; with -size S, S/2..3S/2 bytes, W-small's 1 KiB
** at S = 1024; part k holds ids k*PER..k*PER+PER-1) are written and
** sealed (pagedb_part_seal, as pagedb.dask's writers do: each part's
** catalog is then left in rollback mode) by J processes (default 8; part k
** by process k % J), and the same P*PER
** samples into one file by one writer (the reference); then one
** pagedb_parts_commit of the P parts (KEEP) into a new dataset.  Printed per P:
**   make    wall time per part written, and per sample of the reference
**   commit  seconds, per part and per million samples, wall and CPU (this
**           process's user + system: the commit's own cost, which a busy
**           machine's wall time hides); the dataset's metadata (catalog
**           and index files, bytes, and per part)
**   open    a read-only open of each, in a fresh process (fork), median of
**           5: milliseconds, and the RSS it added; then the RSS after one
**           read of every sample (every part touched, its file opened and
**           mapped)
**   reads   R random reads by id through one PAGEDB_READ_MMAP reader
**           (PAGEDB_READ_COPY with -copy, or past 10,000 parts that are
**           not small enough to be copied: here and above) of each
**           (the same ids in both), both open in one process and taking
**           turns every 10,000 reads: a first pass, with the first
**           touches (a part's open, check and map, given per part
**           touched), then K passes, the steady state (every part touched
**           open): reads/s over the K passes and the ratio parts/reference,
**           with the lowest and highest pass's; and block by block, the
**           median and quartiles of each parts block's ratio to the one
**           file's block beside it (robust to a burst of the host's noise)
**   (-recopy: first, every file of both datasets is copied anew and
**           renamed over itself, same bytes: see RECOPY below)
**   once    every sample of the parts dataset read exactly once along
**           pagedb_order(SEQUENTIAL), its bytes as written ("ok", or the
**           first wrong id; the exit status is then 1)
** Targets (issue 26): open <= 5 ms whatever P; random reads >= 95% of the
** reference at P = 1,000.
**
**   pagedb-partsbench -ingest SPEC[,SPEC...] [-rounds K] [-dir DIR]
**
** Ingest of a workload of tool/workload.h (SPEC "W-small:100000",
** "W-img:2000": tool/workload.c's sizes, bytes and labels) by K = 1, 2, 4
** processes (fork and exec), each writing its contiguous share of the ids
** into a part of its own, then one pagedb_parts_commit of the K parts, all
** timed; against the reference, one process (exec'd the same way) with 2
** writer threads into one file (ids interleaved), commit included.  Each process has max(1, 2/K) writer
** threads, so that the parts path has the reference's two at every K (and
** K = 1 is also run with one, as before 2026-11-29).  K rounds
** (default 3), the reference and each K taking turns (the order reversed
** every other round), the best of each:
** samples/s, the ratio to the reference (target >= 90%) and the median and
** range of the rounds' own ratios, and the commit's
** seconds and its cost per million samples.  DIR defaults to $TMPDIR or /tmp; the datasets
** are removed at the end unless -keep.
*/
#include "pagedb.h"
#include "workload.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Zero-copy reads, or copy-mode ones past 10,000 parts larger than a
** zero-copy reader copies (PAGEDB_CONFIG_PARTS_COPY, 16 KiB): such a reader
** keeps every part it touched mapped until its close, which a process
** cannot do for 100,000 (vm.max_map_count); copy-mode reads keep at most
** PAGEDB_PARTS_OPEN open (doc/format.md, open question 1).  Small parts
** are copied into memory, not mapped, and their files closed by that
** bound: read zero-copy at any P.  -copy: copy mode always. */
static int read_mode = PAGEDB_READ_MMAP;

static double clock_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's CPU time (user + system), seconds. */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static uint64_t splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* This process's resident set, kB. */
static long rss_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void die(const char *what, pagedb *db, int rc) {
  fprintf(stderr, "pagedb-partsbench: %s: %s (%s)\n", what, db ? pagedb_errmsg(db) : "", pagedb_errname(rc));
  exit(1);
}

/*
** RECOPY.  The parts are written by J processes at once and the one file
** by one: on a tmpfs such as /dev/shm the reads then read the very pages
** the writers filled, and pages that 8 processes filled at once lie
** scattered in memory, which on this project's VM read 14-18% slower at
** random than the same bytes copied afresh (a dependent chain of hashed
** 80-byte slots of the 40 index files of 40 parts of 81,920 samples:
** doc/benchmarks.md).  A reader on another machine reads a dataset into
** its own page cache and never sees how the writers' pages lay; -recopy
** gives both datasets that footing: each file copied (read, written to
** NAME.recopy, renamed over NAME) before the opens and reads.
*/
static void recopy_file(const char *path) {
  char tmp[4500];
  snprintf(tmp, sizeof tmp, "%s.recopy", path);
  int in = open(path, O_RDONLY), out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0) die(path, NULL, PAGEDB_CANTOPEN);
  static char buf[1 << 20];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) die(tmp, NULL, PAGEDB_IOERR);
  if (n < 0 || close(out) != 0 || rename(tmp, path) != 0) die(tmp, NULL, PAGEDB_IOERR);
  close(in);
}

/* Every regular file under DIR, recursively, copied anew (RECOPY). */
static void recopy_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) die(dir, NULL, PAGEDB_CANTOPEN);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(path, &st) != 0) die(path, NULL, PAGEDB_IOERR);
    if (S_ISDIR(st.st_mode)) recopy_tree(path);
    else if (S_ISREG(st.st_mode)) recopy_file(path);
  }
  closedir(d);
}

/* -size: 0, tiny samples (16..64 bytes); else S/2..3S/2 bytes. */
static size_t size_mean;
#define SAMPLE_MAX (size_mean ? size_mean / 2 + size_mean + 1 : 64)

/* Sample ID's bytes into BUF (SAMPLE_MAX bytes), its label into *LABEL. */
static size_t sample(int64_t id, uint8_t *buf, int64_t *label) {
  uint64_t h = splitmix((uint64_t)id);
  size_t len = size_mean ? size_mean / 2 + h % (size_mean + 1) : 16 + h % 49;
  for (size_t j = 0; j < len; j++) buf[j] = (uint8_t)(h >> (j % 8 * 8)) ^ (uint8_t)j;
  *label = (int64_t)(h % 1000);
  return len;
}

static pagedb *create(const char *path) {
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, NULL);
  if (rc) die(path, db, rc);
  if ((rc = pagedb_field_add(db, "b", PAGEDB_BYTES, PAGEDB_CODEC_NONE))) die("field", db, rc);
  if ((rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE))) die("field", db, rc);
  return db;
}

/* Samples ID0..ID0+N-1 into the dataset DB, committed. */
static void put(pagedb *db, int64_t id0, int64_t n) {
  pagedb_writer *w;
  uint8_t *buf = malloc(SAMPLE_MAX);
  int rc = pagedb_writer_open(db, &w);
  if (rc || !buf) die("writer", db, rc ? rc : PAGEDB_NOMEM);
  for (int64_t id = id0; id < id0 + n; id++) {
    int64_t label;
    size_t len = sample(id, buf, &label);
    if ((rc = pagedb_sample_begin(w, id)) || (rc = pagedb_put(w, 0, buf, len)) || (rc = pagedb_put_int(w, 1, label))
        || (rc = pagedb_sample_end(w, NULL)))
      die("write", db, rc);
  }
  if ((rc = pagedb_writer_close(w))) die("writer close", db, rc);
  if ((rc = pagedb_commit(db))) die("commit", db, rc);
  free(buf);
}

static double file_bytes(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (double)st.st_size : 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* -open-child PATH N ALL MODE FD: open_child's measurement, in its own
** process, written to FD as "seconds rss rss_all". */
static int open_measure(char **argv) {
  const char *path = argv[0];
  int64_t nsamples = atoll(argv[1]);
  int all = atoi(argv[2]), mode = atoi(argv[3]), fd = atoi(argv[4]);
  long r0 = rss_kb();
  double t0 = clock_s();
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, NULL);
  if (rc) die("open", db, rc);
  double t = clock_s() - t0;
  long r1 = rss_kb(), r2 = -1;
  if (all) {
    pagedb_reader *r;
    if ((rc = pagedb_reader_open(db, mode, &r))) die("reader", db, rc);
    volatile uint8_t sink = 0;
    for (int64_t id = 0; id < nsamples; id++) {
      const void *p;
      size_t sz;
      if ((rc = pagedb_read(r, id, 0, &p, &sz))) die("read", db, rc);
      sink ^= ((const uint8_t *)p)[0];
    }
    r2 = rss_kb();
  }
  char line[128];
  int n = snprintf(line, sizeof line, "%.9f %ld %ld\n", t, r1 - r0, r2 < 0 ? -1 : r2 - r0);
  return write(fd, line, (size_t)n) == n ? 0 : 1;
}

/* A read-only open of PATH in a fresh process (exec'd: nothing of this
** one's is initialized or mapped there, as in a new reader): ms, RSS added
** (kB); with ALL, the RSS added after one read of every sample too (else
** -1). */
static void open_child(const char *path, int64_t nsamples, int all, double *ms, long *rss, long *rss_all) {
  int fd[2];
  if (pipe(fd) != 0) die("pipe", NULL, PAGEDB_IOERR);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    char n[32], a[8], m[8], f[16];
    snprintf(n, sizeof n, "%lld", (long long)nsamples);
    snprintf(a, sizeof a, "%d", all);
    snprintf(m, sizeof m, "%d", read_mode);
    snprintf(f, sizeof f, "%d", fd[1]);
    execl("/proc/self/exe", "pagedb-partsbench", "-open-child", path, n, a, m, f, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  char line[128] = { 0 };
  ssize_t got = read(fd[0], line, sizeof line - 1);
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (got <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || sscanf(line, "%lf %ld %ld", ms, rss, rss_all) != 3) {
    fprintf(stderr, "pagedb-partsbench: the open of %s failed in its child\n", path);
    exit(1);
  }
  *ms *= 1e3;
}

/* Random reads of IDS (R of them) through a reader of each of the two
** datasets PATH[0] (the parts) and PATH[1] (the one file), both open in
** this process, in blocks of 10,000 taking turns (the one that goes first
** alternating), so that both see the same moments of a noisy machine:
** separate processes or rounds a few seconds apart differed by 20% on
** this VM where this differs by 1-2%.  A first pass through IDS (every
** part or page touched for the first time: a part's open, check and
** map) into COLD, reads/s of each; then ROUNDS passes, the steady state,
** into STEADY (reads/s over all of them) and the lowest and highest pass's
** ratio parts/one file into LO and HI; and the ratio of each steady block
** of the parts to the one file's block beside it, whose median and
** quartiles go to PAIR[1], PAIR[0], PAIR[2].  A burst of the host's noise
** spoils a block or two, which the median leaves out, where it pulls a
** pass down by several points (passes of one run ranged 80-97% here). */
static void random_reads(const char *path[2], const int64_t *ids, int r, int rounds, double cold[2],
                         double steady[2], double *lo, double *hi, double pair[3]) {
  pagedb *db[2];
  pagedb_reader *rd[2];
  for (int d = 0; d < 2; d++) {
    int rc = pagedb_open(path[d], &db[d], PAGEDB_OPEN_READONLY, NULL);
    if (rc) die("open", db[d], rc);
    if ((rc = pagedb_reader_open(db[d], read_mode, &rd[d]))) die("reader", db[d], rc);
  }
  uint64_t sum = 0;
  double total[2] = { 0, 0 };
  const int block = 10000;
  int nblk = (r + block - 1) / block, npair = 0;
  double *pr = malloc((size_t)nblk * (size_t)rounds * sizeof *pr);
  if (!pr) die("out of memory", NULL, PAGEDB_NOMEM);
  *lo = 1e30, *hi = 0;
  for (int pass = 0; pass <= rounds; pass++) {
    double t[2] = { 0, 0 };
    for (int b = 0; b < r; b += block) {
      double bt[2] = { 0, 0 };
      for (int turn = 0; turn < 2; turn++) {
        int d = (b / block + turn + pass) & 1, end = b + block < r ? b + block : r;
        double t0 = clock_s();
        for (int i = b; i < end; i++) {
          const void *p;
          size_t sz;
          int rc = pagedb_read(rd[d], ids[i], 0, &p, &sz);
          if (rc) die("read", db[d], rc);
          sum += ((const uint8_t *)p)[sz - 1];
        }
        bt[d] = clock_s() - t0;
        t[d] += bt[d];
      }
      if (pass > 0 && bt[0] > 0) pr[npair++] = bt[1] / bt[0];
    }
    if (pass == 0) {
      cold[0] = r / t[0], cold[1] = r / t[1];
      continue;
    }
    total[0] += t[0], total[1] += t[1];
    double ratio = t[1] / t[0];
    if (ratio < *lo) *lo = ratio;
    if (ratio > *hi) *hi = ratio;
  }
  for (int d = 0; d < 2; d++) {
    steady[d] = (double)r * rounds / total[d];
    pagedb_close(db[d]);
  }
  qsort(pr, (size_t)npair, sizeof *pr, cmp_double);
  for (int q = 0; q < 3; q++) pair[q] = npair ? pr[(size_t)npair * (size_t)(q + 1) / 4] : 0;
  free(pr);
  if (sum == 1) fputc(' ', stderr);   /* keeps the reads */
}

/* Every sample of PATH exactly once along the sequential order, its bytes
** as written: -1, or the first wrong id. */
static int64_t exactly_once(const char *path, int64_t nsamples) {
  pagedb *db;
  pagedb_reader *r;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READONLY, NULL);
  if (rc) die("open", db, rc);
  int64_t n = 0, bad = -1;
  if ((rc = pagedb_order(db, PAGEDB_ORDER_SEQUENTIAL, 0, 0, 0, 1, NULL, &n))) die("order", db, rc);
  int64_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
  uint8_t *seen = calloc((size_t)nsamples + 1, 1);
  uint8_t *want = malloc(SAMPLE_MAX);
  if (!ids || !seen || !want) die("out of memory", NULL, PAGEDB_NOMEM);
  if ((rc = pagedb_order(db, PAGEDB_ORDER_SEQUENTIAL, 0, 0, 0, 1, ids, &n))) die("order", db, rc);
  if ((rc = pagedb_reader_open(db, PAGEDB_READ_COPY | PAGEDB_READ_VERIFY, &r))) die("reader", db, rc);
  if (n != nsamples) bad = n;
  for (int64_t i = 0; i < n && bad < 0; i++) {
    int64_t id = ids[i], label, got;
    size_t len = sample(id, want, &label), sz;
    const void *p;
    if (id < 0 || id >= nsamples || seen[id]++ || pagedb_read(r, id, 0, &p, &sz) != PAGEDB_OK || sz != len
        || memcmp(p, want, len) != 0 || pagedb_read_int(r, id, 1, &got) != PAGEDB_OK || got != label)
      bad = id;
  }
  free(ids);
  free(seen);
  free(want);
  pagedb_close(db);
  return bad;
}

static void remove_dataset(const char *path) {
  static const char *const sfx[] = { "", "-catalog", "-catalog-wal", "-catalog-shm", "-index" };
  size_t cap = strlen(path) + 16;
  char *p = malloc(cap);
  for (size_t i = 0; p && i < sizeof sfx / sizeof *sfx; i++) {
    snprintf(p, cap, "%s%s", path, sfx[i]);
    unlink(p);
  }
  free(p);
}

/* --- ingest ------------------------------------------------------------ */

typedef struct Feed {
  pagedb *db;
  const wl_t *w;
  int64_t lo, hi, step;     /* ids lo, lo+step, ... below hi */
} Feed;

static void *feed(void *arg) {
  Feed *f = arg;
  pagedb_writer *wr;
  uint8_t *buf = malloc(wl_max_size(f->w));
  int rc = pagedb_writer_open(f->db, &wr);
  if (rc || !buf) die("writer", f->db, rc ? rc : PAGEDB_NOMEM);
  for (int64_t id = f->lo; id < f->hi; id += f->step) {
    size_t len = (size_t)wl_size(f->w, id);
    wl_fill(f->w, id, buf, len);
    if ((rc = pagedb_sample_begin(wr, id)) || (rc = pagedb_put(wr, 0, buf, len))
        || (rc = pagedb_put_int(wr, 1, wl_label(f->w, id))) || (rc = pagedb_sample_end(wr, NULL)))
      die("write", f->db, rc);
  }
  if ((rc = pagedb_writer_close(wr))) die("writer close", f->db, rc);
  free(buf);
  return NULL;
}

/* Ids LO.. below HI of W written into DB by NT (1 or 2) writer threads,
** ids interleaved among them. */
static void feed_all(pagedb *db, const wl_t *w, int64_t lo, int64_t hi, int nt) {
  pthread_t th[2];
  Feed f[2];
  for (int t = 0; t < nt; t++) {
    f[t] = (Feed){ db, w, lo + t, hi, nt };
    if (pthread_create(&th[t], NULL, feed, &f[t]) != 0) die("a writer thread", db, PAGEDB_ERROR);
  }
  for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
}

static pagedb *create_wl(const char *path, const wl_t *w) {
  pagedb *db;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, NULL);
  if (rc) die(path, db, rc);
  if ((rc = pagedb_field_add(db, w->field, w->fieldText ? PAGEDB_TEXT : PAGEDB_BYTES, PAGEDB_CODEC_NONE)))
    die("field", db, rc);
  if ((rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE))) die("field", db, rc);
  return db;
}

/*
** Writers in fresh processes, as a cluster's workers are: K of them, writer
** i writing ids [N i / K, N (i+1) / K) of W into dataset NAMES[i] with NT
** threads, sealed if SEAL.  A fork alone would write into this process's
** heap, where an earlier round ran, and pay a copy-on-write fault for each
** page of it; and the reference, which ran in this process until
** 2026-11-29, wrote into a heap its earlier rounds had faulted in, which
** no new process has (40,000 fewer page faults for a million W-small
** samples: 0.2-0.5 s of 1.7-2.2 on this VM).  Each makes its workload's pool, says so on READY, and starts
** when GO closes: the clock runs from there to the last one's exit.
*/
static double spawn_writers(const wl_t *w, int k, char names[][4300], int nt, int seal) {
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) die("pipe", NULL, PAGEDB_ERROR);
  pid_t pid[16];
  for (int i = 0; i < k; i++) {
    if ((pid[i] = fork()) == 0) {
      char spec[64], lo[32], hi[32], nts[8], fds[32];
      snprintf(spec, sizeof spec, "%s:%lld", w->name, (long long)w->count);
      snprintf(lo, sizeof lo, "%lld", (long long)(w->count * i / k));
      snprintf(hi, sizeof hi, "%lld", (long long)(w->count * (i + 1) / k));
      snprintf(nts, sizeof nts, "%d", nt);
      snprintf(fds, sizeof fds, "%d,%d", ready[1], go[0]);
      close(ready[0]);
      close(go[1]);
      execl("/proc/self/exe", "pagedb-partsbench", "-write-part", names[i], spec, lo, hi, nts, fds, seal ? "1" : "0",
            (char *)NULL);
      _exit(127);
    }
  }
  close(ready[1]);
  close(go[0]);
  for (int i = 0; i < k; i++) {
    char c;
    if (read(ready[0], &c, 1) != 1) die("a writer process did not start", NULL, PAGEDB_ERROR);
  }
  close(ready[0]);
  double t0 = clock_s();
  close(go[1]);
  for (int i = 0; i < k; i++) {
    int st = 0;
    waitpid(pid[i], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) die("a writer process failed", NULL, PAGEDB_ERROR);
  }
  return clock_s() - t0;
}

/* The reference: one process, 2 writer threads into one file, committed
** (its close): seconds. */
static double ingest_one(const char *base, const wl_t *w) {
  char path[1][4300];
  snprintf(path[0], sizeof path[0], "%s/one.pagedb", base);
  double t = spawn_writers(w, 1, path, 2, 0);
  remove_dataset(path[0]);
  return t;
}

/* K processes, a part each written by NT threads, then the commit:
** seconds, and the commit's. */
static double ingest_parts(const char *base, const wl_t *w, int k, int nt, double *tcommit) {
  char ds[4200];
  pagedb_part parts[16];
  char names[16][4300];
  snprintf(ds, sizeof ds, "%s/d.pagedb", base);
  for (int i = 0; i < k; i++) {
    snprintf(names[i], sizeof names[i], "%s/d.pagedb.parts/w%d", base, i);
    parts[i] = (pagedb_part){ .path = names[i] };
  }
  double tw = spawn_writers(w, k, names, nt, 1), t1 = clock_s();
  pagedb *db = create_wl(ds, w);
  int64_t n = 0;
  int rc = pagedb_parts_commit(db, parts, k, PAGEDB_ATTACH_KEEP, &n);
  if (rc) die("parts_commit", db, rc);
  if ((rc = pagedb_close(db))) die("close", NULL, rc);
  *tcommit = clock_s() - t1;
  if (n != w->count) die("the commit's count", NULL, PAGEDB_ERROR);
  remove_dataset(ds);
  for (int i = 0; i < k; i++) remove_dataset(names[i]);
  return tw + *tcommit;
}

/* -write-part PATH SPEC LO HI NT READY,GO SEAL: one writer of
** spawn_writers (SEAL 1: a part, sealed as pagedb.dask's and .import
** --jobs's writers seal theirs; 0: the reference's one file). */
static int write_part(char **argv) {
  wl_t w;
  int nt = atoi(argv[4]), ready = -1, go = -1, seal = atoi(argv[6]);
  char c;
  if (sscanf(argv[5], "%d,%d", &ready, &go) != 2 || wl_parse(argv[1], &w) != 0 || nt < 1 || nt > 2) return 2;
  int64_t lo = atoll(argv[2]), hi = atoll(argv[3]);
  if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 0) return 2;
  pagedb *db = create_wl(argv[0], &w);
  feed_all(db, &w, lo, hi, nt);
  uint64_t sum;
  int rc = seal ? pagedb_part_seal(db, &sum) : PAGEDB_OK;
  int crc = pagedb_close(db);
  if (rc == PAGEDB_OK) rc = crc;
  wl_free(&w);
  return rc == PAGEDB_OK ? 0 : 1;
}

static int ingest_main(const char *dir, const char *specs, int rounds) {
  char *sl = strdup(specs);
  for (char *tok = strtok(sl, ","); tok; tok = strtok(NULL, ",")) {
    wl_t w;
    if (wl_parse(tok, &w) != 0) {
      fprintf(stderr, "pagedb-partsbench: bad workload \"%s\"\n", tok);
      return 2;
    }
    char base[4096], pdir[4200];
    snprintf(base, sizeof base, "%s/pagedb-partsbench-ingest-%lld", dir, (long long)getpid());
    snprintf(pdir, sizeof pdir, "%s/d.pagedb.parts", base);
    if (mkdir(base, 0755) != 0 || mkdir(pdir, 0755) != 0) die(base, NULL, PAGEDB_CANTOPEN);
    /* K processes of NT writer threads each. */
    static const int ks[4] = { 1, 2, 4, 1 }, nts[4] = { 2, 1, 1, 1 };
    double best_ref = 1e30, best[4] = { 1e30, 1e30, 1e30, 1e30 }, commit[4] = { 0, 0, 0, 0 };
    /* Each round's ratio too, the way's time against the reference's in
    ** the same round: their median is not one lucky run's, as a best is. */
    double *pair = malloc(5 * (size_t)rounds * sizeof *pair);
    if (!pair) die("out of memory", NULL, PAGEDB_NOMEM);
    /* Each round runs the reference and the four ways in turn, the order
    ** reversed every other round: buffered writes drift over a run with
    ** the host's memory, and a fixed order would hand that drift to
    ** whichever way always ran first (the reference did). */
    for (int r = 0; r < rounds; r++) {
      for (int j = 0; j < 5; j++) {
        int i = (r % 2 ? 4 - j : j) - 1;   /* -1: the reference */
        double tc = 0, t = i < 0 ? ingest_one(base, &w) : ingest_parts(base, &w, ks[i], nts[i], &tc);
        pair[(i + 1) * rounds + r] = t;
        if (i < 0 && t < best_ref) best_ref = t;
        if (i >= 0 && t < best[i]) {
          best[i] = t;
          commit[i] = tc;
        }
      }
    }
    printf("%s (%lld samples): one process, 2 writer threads, one file: %.0f samples/s (%.2f s)\n", w.name,
           (long long)w.count, w.count / best_ref, best_ref);
    for (int i = 0; i < 4; i++) {
      double *ri = pair + (i + 1) * rounds;
      for (int r = 0; r < rounds; r++) ri[r] = pair[r] / ri[r];
      qsort(ri, (size_t)rounds, sizeof *ri, cmp_double);
      double med = rounds % 2 ? ri[rounds / 2] : (ri[rounds / 2 - 1] + ri[rounds / 2]) / 2;
      printf("  K = %d process%s of %d writer thread%s into parts, commit included: %.0f samples/s (%.2f s):"
             " %.1f%% (round by round: median %.1f%%, %.1f%%..%.1f%%); commit %.3f s (%.2f s per million samples)\n",
             ks[i], ks[i] > 1 ? "es" : "", nts[i], nts[i] > 1 ? "s" : "", w.count / best[i], best[i],
             100 * best_ref / best[i], 100 * med, 100 * ri[0], 100 * ri[rounds - 1], commit[i],
             commit[i] * 1e6 / (double)w.count);
    }
    free(pair);
    fflush(stdout);
    rmdir(pdir);
    rmdir(base);
    wl_free(&w);
  }
  free(sl);
  return 0;
}

int main(int argc, char **argv) {
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", *plist = "1,1000";
  int64_t per = 10;
  int reads = 200000, rounds = 3, keep = 0, status = 0, jobs = 8, copy = 0, recopy = 0;
  const char *ingest = NULL;
  if (argc == 9 && !strcmp(argv[1], "-write-part")) return write_part(argv + 2);
  if (argc == 7 && !strcmp(argv[1], "-open-child")) return open_measure(argv + 2);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-dir") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "-parts") && i + 1 < argc) plist = argv[++i];
    else if (!strcmp(argv[i], "-per") && i + 1 < argc) per = atoll(argv[++i]);
    else if (!strcmp(argv[i], "-size") && i + 1 < argc) size_mean = (size_t)atoll(argv[++i]);
    else if (!strcmp(argv[i], "-reads") && i + 1 < argc) reads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-jobs") && i + 1 < argc) jobs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-keep")) keep = 1;
    else if (!strcmp(argv[i], "-copy")) copy = 1;
    else if (!strcmp(argv[i], "-recopy")) recopy = 1;
    else if (!strcmp(argv[i], "-ingest") && i + 1 < argc) ingest = argv[++i];
    else {
      fprintf(stderr, "usage: pagedb-partsbench [-dir DIR] [-parts P,P,...] [-per N] [-size S] [-reads R] [-rounds K] [-jobs J] [-copy] [-recopy] [-keep]\n"
                      "       pagedb-partsbench -ingest W-small:N,W-img:N [-rounds K] [-dir DIR]\n");
      return 2;
    }
  }
  if (per < 1 || reads < 1 || rounds < 1 || jobs < 1 || jobs > 64) {
    fprintf(stderr, "pagedb-partsbench: -per, -reads and -rounds must be 1 or more, -jobs 1..64\n");
    return 2;
  }
  if (ingest) return ingest_main(dir, ingest, rounds);
  char *pl = strdup(plist);
  for (char *tok = strtok(pl, ","); tok; tok = strtok(NULL, ",")) {
    int64_t P = atoll(tok), N = P * per;
    if (P < 1 || P > 2000000) {
      fprintf(stderr, "pagedb-partsbench: %s parts: 1..2000000\n", tok);
      return 2;
    }
    char base[4096], ds[4200], one[4200], pdir[4200], path[4300];
    snprintf(base, sizeof base, "%s/pagedb-partsbench-%lld-%lld", dir, (long long)P, (long long)getpid());
    snprintf(ds, sizeof ds, "%s/d.pagedb", base);
    snprintf(one, sizeof one, "%s/one.pagedb", base);
    snprintf(pdir, sizeof pdir, "%s/d.pagedb.parts", base);
    if (mkdir(base, 0755) != 0 || mkdir(pdir, 0755) != 0) die(base, NULL, PAGEDB_CANTOPEN);
    /* A part's bytes at most: its samples' largest values and their records'
    ** alignment (the INT label lies in the slot). */
    uint64_t part_max = (uint64_t)per * ((size_mean ? size_mean * 3 / 2 : 64) + 8);
    int big = P > 10000 && part_max > 16384;
    read_mode = copy || big ? PAGEDB_READ_COPY : PAGEDB_READ_MMAP;
    printf("P = %lld parts of %lld samples (%lld samples, %s), in %s; reads %s\n", (long long)P, (long long)per,
           (long long)N, size_mean ? "-size: S/2..3S/2 bytes" : "16-64 bytes", base,
           copy ? "in copy mode (-copy)" : big ? "in copy mode (past 10,000 parts too large to be copied)"
                                               : "zero-copy");
    fflush(stdout);
    /* The parts, by JOBS processes (part k by process k % JOBS: independent
    ** writers, as a cluster's would be; a tiny part's wall time is mostly
    ** its syncs, which overlap), then the reference. */
    double t0 = clock_s();
    pid_t *kids = calloc((size_t)jobs, sizeof *kids);
    if (!kids) die("out of memory", NULL, PAGEDB_NOMEM);
    for (int j = 0; j < jobs; j++) {
      if ((kids[j] = fork()) < 0) die("fork", NULL, PAGEDB_ERROR);
      if (kids[j] == 0) {
        for (int64_t k = j; k < P; k += jobs) {
          snprintf(path, sizeof path, "%s/%07lld", pdir, (long long)k);
          pagedb *db = create(path);
          put(db, k * per, per);
          uint64_t seal;   /* as pagedb.dask's writers seal theirs */
          int rc = pagedb_part_seal(db, &seal);
          if (rc) die("seal", db, rc);
          if ((rc = pagedb_close(db))) die("close", NULL, rc);
        }
        _exit(0);
      }
    }
    for (int j = 0; j < jobs; j++) {
      int st = 0;
      if (waitpid(kids[j], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("a process making parts failed", NULL, PAGEDB_ERROR);
    }
    free(kids);
    double tparts = clock_s() - t0;
    t0 = clock_s();
    pagedb *db = create(one);
    put(db, 0, N);
    if (pagedb_close(db)) die("close", NULL, PAGEDB_IOERR);
    double tone = clock_s() - t0;
    printf("  make    parts %.3f ms/part of wall time, %d processes (%.2f us/sample); one file %.2f us/sample\n",
           tparts * 1e3 / P, jobs, tparts * 1e6 / N, tone * 1e6 / N);
    /* The commit. */
    pagedb_part *parts = calloc((size_t)P, sizeof *parts);
    char (*names)[32] = calloc((size_t)P, sizeof *names);
    if (!parts || !names) die("out of memory", NULL, PAGEDB_NOMEM);
    for (int64_t k = 0; k < P; k++) {
      snprintf(names[k], sizeof names[k], "%s/%07lld", "", (long long)k);
      char *p = malloc(strlen(pdir) + 32);
      if (!p) die("out of memory", NULL, PAGEDB_NOMEM);
      sprintf(p, "%s%s", pdir, names[k]);
      parts[k].path = p;
    }
    db = create(ds);
    int64_t nc = 0;
    double cpu0 = cpu_s();
    t0 = clock_s();
    int rc = pagedb_parts_commit(db, parts, (int)P, PAGEDB_ATTACH_KEEP, &nc);
    double tcommit = clock_s() - t0, ccommit = cpu_s() - cpu0;
    if (rc) die("parts_commit", db, rc);
    if ((rc = pagedb_close(db))) die("close", NULL, rc);
    snprintf(path, sizeof path, "%s-catalog", ds);
    double cat = file_bytes(path);
    snprintf(path, sizeof path, "%s-index", ds);
    double idx = file_bytes(path);
    printf("  commit  %.3f s: %.3f ms/part, %.2f s per million samples; CPU %.3f s: %.3f ms/part, %.2f us/sample;"
           " metadata %.1f MB (catalog %.1f, index %.1f): %.0f bytes/part\n", tcommit, tcommit * 1e3 / P,
           tcommit * 1e6 / N, ccommit, ccommit * 1e3 / P, ccommit * 1e6 / N, (cat + idx) / 1e6, cat / 1e6,
           idx / 1e6, (cat + idx) / P);
    if (recopy) {
      double r0 = clock_s();
      recopy_tree(base);
      printf("  recopy  every file of both datasets copied anew: %.2f s\n", clock_s() - r0);
    }
    /* Open time and RSS, fresh processes, alternating. */
    double ms_d[5], ms_o[5];
    long rss_d = 0, rss_o = 0, all_d = 0, all_o = 0;
    for (int i = 0; i < 5; i++) {
      open_child(ds, N, i == 0, &ms_d[i], &rss_d, i == 0 ? &all_d : &(long){ 0 });
      open_child(one, N, i == 0, &ms_o[i], &rss_o, i == 0 ? &all_o : &(long){ 0 });
    }
    qsort(ms_d, 5, sizeof *ms_d, cmp_double);
    qsort(ms_o, 5, sizeof *ms_o, cmp_double);
    printf("  open    parts %.3f ms (RSS +%ld kB; +%ld kB after reading every sample); one file %.3f ms (+%ld kB;"
           " +%ld kB)\n", ms_d[2], rss_d, all_d, ms_o[2], rss_o, all_o);
    /* Random reads, alternating, the best round of each. */
    int64_t *ids = malloc((size_t)reads * sizeof *ids);
    if (!ids) die("out of memory", NULL, PAGEDB_NOMEM);
    for (int i = 0; i < reads; i++) ids[i] = (int64_t)(splitmix((uint64_t)i ^ 0x5eed) % (uint64_t)N);
    double cold[2], steady[2], lo, hi, pair[3];
    random_reads((const char *[2]){ ds, one }, ids, reads, rounds, cold, steady, &lo, &hi, pair);
    /* The parts the reads touch, for the first touch's cost per part. */
    uint8_t *touched = calloc((size_t)P, 1);
    int64_t ntouched = 0;
    for (int i = 0; touched && i < reads; i++)
      if (!touched[ids[i] / per]) touched[ids[i] / per] = 1, ntouched++;
    free(touched);
    free(ids);
    printf("  reads   steady state (every touched part open): parts %.0f/s, one file %.0f/s: %.1f%% (%d passes of %d"
           " random reads by id, the two datasets taking turns every 10,000; passes %.1f%%..%.1f%%)\n", steady[0],
           steady[1], 100 * steady[0] / steady[1], rounds, reads, 100 * lo, 100 * hi);
    printf("          block by block: median %.1f%% (quartiles %.1f%%..%.1f%%) of the parts' blocks of 10,000 reads"
           " against the one file's block beside each\n", 100 * pair[1], 100 * pair[0], 100 * pair[2]);
    printf("          first pass: parts %.0f/s, one file %.0f/s: %.1f%%; first touch %.1f us a part (%lld parts"
           " touched: the passes' difference less the one file's)\n", cold[0], cold[1], 100 * cold[0] / cold[1],
           ntouched ? 1e6 * ((reads / cold[0] - reads / steady[0]) - (reads / cold[1] - reads / steady[1])) / ntouched
                    : 0.0,
           (long long)ntouched);
    int64_t bad = exactly_once(ds, N);
    printf("  once    %s\n", bad < 0 ? "ok: every sample exactly once, bytes and labels as written" : "WRONG");
    if (bad >= 0) {
      printf("          first wrong id (or the count when it differs): %lld\n", (long long)bad);
      status = 1;
    }
    fflush(stdout);
    for (int64_t k = 0; k < P; k++) {
      if (!keep) remove_dataset(parts[k].path);
      free((char *)parts[k].path);
    }
    free(parts);
    free(names);
    if (!keep) {
      remove_dataset(ds);
      remove_dataset(one);
      rmdir(pdir);
      rmdir(base);
    }
  }
  free(pl);
  return status;
}
