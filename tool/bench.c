/*
** bench.c -- pagedb-bench: pagedb side by side with SQLite, LMDB and the
** raw-file reference, in one run, on the same data.
**
** For each workload of shared/WORKLOADS.md (tool/workload.c) it measures
**
**   1. the raw-file reference: the same sample bytes written back to back
**      with 8 MiB buffered pwrite()s and one fsync; every sample read once
**      in a seeded random order with pread() into a buffer, and in place
**      through mmap() at the known offsets; in id order with pread(); and
**      in the random order again with the file evicted from the page cache
**      first (the cold row);
**   2. pagedb: the samples written by 1, 2... threads (one pagedb_writer
**      each, then one pagedb_commit and pagedb_close), read in the same
**      random order in PAGEDB_READ_MMAP and PAGEDB_READ_COPY modes, singly,
**      in batches and behind read-ahead; in id order; cold (the data file
**      evicted first: single and batched copies); and the time from
**      pagedb_open (read-only) until the first read is done;
**   3. SQLite (a BLOB table in WAL mode, synchronous=FULL) and LMDB
**      (MDB_APPEND, zero-copy mdb_get), bench_kv.c: written by 1, 2...
**      threads taking turns on their single write lock, read in the random
**      order, in id order and cold, and opened to their first read;
**   4. for every operation its peak RSS (bench_util.c says how), and every
**      system's file size on disk;
**   5. the ratios to the reference and the project's targets, each marked
**      pass or short.  --csv writes every repetition of every figure for
**      tool/bench-plot.sh, which draws the charts of doc/bench/.
**
** Fairness.  Every timed read pass touches every byte of every sample the
** same way (sumBytes, bench_util.c), and its checksum must equal the raw pread
** pass's, so a pass that returned wrong bytes, or nothing, cannot look fast.
** Every byte pagedb returns is also compared with the workload (wl_check)
** in an untimed pass per read mode, with the labels.  A mismatch or a failed
** call fails the run: exit status 1.  Targets that are short do not.
** SQLite's and LMDB's bytes and labels are checked the same way (bench_kv.c).
** Raw, pagedb and the other systems alternate within each repetition, so
** drift in the machine's speed hits all; each figure is the median of
** --reps runs, printed with the range of the repetitions.
**
** Batched reads.  Each read mode also gets a row that reads every sample in
** the same order with pagedb_read_batch, --batch ids at a time, checksummed
** the same way, with its ratio to the single-read row ("batch vs single").
** Another reads them one at a time with pagedb_read after handing the whole
** order to pagedb_reader_prefetch (--window bytes of read-ahead), so that
** the reader can read ahead of the caller ("prefetch vs single"); its bytes
** are checked against the workload through the same read-ahead path.
**
** VFSes.  --vfs posix,io_uring,direct runs every pagedb row under each VFS
** named (given to pagedb_open), labelled with it; a VFS that does not work
** here (pagedb_vfs_check, or its first pagedb_open) is reported and skipped.
**
** Uncached references.  With --cold, or when a VFS is "direct" (whose reads
** bypass the page cache whatever the cache holds), the raw file is also read
** with O_DIRECT: one pread() at a time, and through io_uring with 32 reads in
** flight, each read the 4 KiB-aligned superset of the sample's extent.  The
** direct VFS's batched copy reads are compared with the latter (target 80%).
** The same bytes are also written into a second raw file opened with
** O_DIRECT, in 8 MiB writes from a 4 KiB-aligned buffer, then one fsync:
** the direct VFS's writes bypass the page cache too, so its ingest targets
** (85%, W-img with 2 threads and W-small) are against this reference, not
** the buffered one, whose writes only copy into the page cache and leave
** the disk to the kernel's write-back and the final fsync.  A file system
** that refuses O_DIRECT skips that row, which is not a failure.
** fio, when it is installed, gives the outside reference: 64 KiB random
** reads of the same raw file with O_DIRECT through io_uring at depth 32, the
** file read once (target on W-img, whose samples are about 64 KiB: the
** direct VFS's batched copy reads >= 70% of fio's rate, read.bw_bytes of
** its JSON report).  Without fio the row is skipped, which is not a
** failure, and so is a fio that fails here (it is not pagedb).
** In a warm run the direct VFS's data file is evicted from the page cache
** (POSIX_FADV_DONTNEED) before each of its read passes, so that all its rows,
** the zero-copy ones included, are uncached as its copies are.
**
** Read after write (issue 16).  Unless --no-after-write, each repetition
** also reads every sample zero-copy in the random order right after its
** file was written, in a fresh process (forked: no map or page table of the
** file yet) and with nothing read in first, as a training job that starts
** reading a dataset just ingested does: the raw file through mmap() right
** after the raw write, pagedb through PAGEDB_READ_MMAP right after its write
** (the dataset the read passes use), alternately.  The warm rows above read
** each file once with pread() first (warmFile), which the page cache's
** folios may not have had right after the write.  Each row also gives the
** passes' CPU time: on a loaded machine the wall time counts the waits for
** a core too.  The target: pagedb >= 95% of the raw mmap.
**
** io_uring against posix.  When --vfs names both, their writes are compared
** thread count by thread count: io_uring's write path must not be slower
** (target >= 100% of posix's).
*/
#define _GNU_SOURCE
#include "bench.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* The machine                                                         */
/* ------------------------------------------------------------------ */

/* The filesystem type and device of the mount that holds PATH. */
static void fsOf(const char *zPath, char *zType, char *zDev, size_t n){
  char zReal[PATH_MAX];
  snprintf(zType, n, "?");
  snprintf(zDev, n, "?");
  if( realpath(zPath, zReal) == 0 ) return;
  FILE *f = fopen("/proc/self/mounts", "r");
  if( f == 0 ) return;
  char zLine[4096];
  size_t best = 0;
  while( fgets(zLine, sizeof zLine, f) ){
    char dev[1024], mnt[1024], type[256];
    if( sscanf(zLine, "%1023s %1023s %255s", dev, mnt, type) != 3 ) continue;
    size_t m = strlen(mnt);
    int under = strncmp(zReal, mnt, m) == 0
             && (zReal[m] == '/' || zReal[m] == 0 || strcmp(mnt, "/") == 0);
    if( under && m >= best ){
      best = m;
      snprintf(zType, n, "%s", type);
      snprintf(zDev, n, "%s", dev);
    }
  }
  fclose(f);
}

static void printMachine(Bench *b){
  struct utsname u;
  uname(&u);
  double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  char zType[1024], zDev[1024];
  fsOf(b->zDir, zType, zDev, sizeof zType);
  char zCmd[4096], zMachine[1024];
  size_t n = 0;
  for(int i = 0; i < b->argc && n < sizeof zCmd; i++){
    n += (size_t)snprintf(zCmd + n, sizeof zCmd - n, "%s%s", i ? " " : "", b->argv[i]);
  }
  snprintf(zMachine, sizeof zMachine, "%ld cores, %.1f GiB RAM, %s %s %s, %.100s on %.300s",
           sysconf(_SC_NPROCESSORS_ONLN), mem / (1u << 30), u.sysname, u.release, u.machine,
           zType, zDev);
  printf("pagedb-bench: pagedb %s (header %s)\n", pagedb_libversion(), PAGEDB_VERSION);
  printf("command: %s\n", zCmd);
  printf("machine: %s\n", zMachine);
  printf("dir: %s (%s on %s)\n", b->zDir, zType, zDev);
  /* The CSV names them too, for the charts (tool/bench-plot.sh). */
  if( b->pCsv ) fprintf(b->pCsv, "# command: %s\n# machine: %s\n", zCmd, zMachine);
  printf("page cache: %s\n", b->cold
         ? "dropped (sync; echo 3 > /proc/sys/vm/drop_caches) before every timed phase (--cold)"
         : "warm: not dropped (files just written are read from memory; --cold to drop)");
  printf("reps: %d (each figure the median); write threads:", b->nReps);
  for(int i = 0; i < b->nThread; i++) printf("%s%d", i ? "," : " ", b->aThread[i]);
  printf("; seed %llu; read order: one seeded permutation for every system\n",
         (unsigned long long)b->seed);
  printf("peak RSS: per operation, the process's VmHWM after a reset through"
         " /proc/self/clear_refs (\"5\")\n  at its start; file pages mapped (mmap reads, LMDB)"
         " count, as in any process\n");
  for(int k = 0; k < MAX_KV; k++){
    const KvSys *p = kvSys(k);
    if( b->kvOn[k] ) printf("%s: %s%s\n", p->zName, p->xOpen ? "" : "skipped: ", p->zHow);
  }
  if( b->nVfs ){
    printf("vfs:");
    for(int v = 0; v < b->nVfs; v++){
      printf("%s%s%s", v ? "," : " ", b->azVfs[v], b->vfsSkip[v] ? " (skipped)" : "");
    }
    printf(" (each pagedb row is labelled pagedb[VFS])\n");
    for(int v = 0; v < b->nVfs; v++){
      if( b->vfsSkip[v] ) printf("vfs %s: skipped: %s\n", b->azVfs[v], b->azWhy[v]);
    }
  }
  if( b->directRef ){
    printf("O_DIRECT references: the raw file read as 4 KiB-aligned supersets of each sample,\n"
           "  one pread at a time and through io_uring with %d in flight%s;\n"
           "  and written to a new file opened with O_DIRECT: 8 MiB pwrites from a 4 KiB-aligned\n"
           "  buffer (the last padded to 4 KiB, then ftruncate to the size), 1 fsync\n", RAW_DEPTH,
           b->cold ? "" : "; the direct VFS's data file is evicted (fadvise) before its reads");
    if( b->zFio[0] ){
      printf("fio reference: %s", b->zFio);
      for(int k = 0; k < nFioOpt; k++) printf(" %s", azFioOpt[k]);
      printf("\n  --filename=RAW --size=S --io_size=S (S: the raw file's whole 64 KiB blocks);"
             " rate: read.bw_bytes of its JSON\n");
    }else{
      printf("fio reference: skipped: fio is not installed (not on PATH; not a failure)\n");
    }
  }
  fflush(stdout);
}
/* ------------------------------------------------------------------ */
/* --pool-ratio                                                        */
/* ------------------------------------------------------------------ */

/*
** liblz4 is looked up at run time, so that the benchmark links with the
** library alone (Makefile.am gives it libpagedb.la and -lm).
*/
typedef int (*lz4Bound)(int);
typedef int (*lz4Fast)(const char *, char *, int, int);
typedef int (*lz4Hc)(const char *, char *, int, int, int);

static int poolRatio(Bench *b){
  void *h = dlopen("liblz4.so.1", RTLD_NOW);
  if( h == 0 ) h = dlopen("liblz4.so", RTLD_NOW);
  if( h == 0 ){
    fprintf(stderr, "pagedb-bench: --pool-ratio needs liblz4: %s\n", dlerror());
    return 1;
  }
  lz4Bound xBound = (lz4Bound)dlsym(h, "LZ4_compressBound");
  lz4Fast xFast = (lz4Fast)dlsym(h, "LZ4_compress_default");
  lz4Hc xHc = (lz4Hc)dlsym(h, "LZ4_compress_HC");
  const char *(*xVersion)(void) = (const char *(*)(void))dlsym(h, "LZ4_versionString");
  if( !xBound || !xFast || !xHc ){
    fprintf(stderr, "pagedb-bench: --pool-ratio: liblz4 lacks LZ4_compress_HC\n");
    return 1;
  }
  printf("lz4 %s; LZ4_compress_default and LZ4_compress_HC level 9\n",
         xVersion ? xVersion() : "?");
  int nBad = 0;
  for(int k = 0; k < b->nSpec; k++){
    wl_t w;
    if( wl_parse_seed(b->azSpec[k], b->seed, &w) ){
      fprintf(stderr, "pagedb-bench: --workload %s: unknown\n", b->azSpec[k]);
      nBad++;
      continue;
    }
    int cap = xBound((int)WL_POOL_SIZE);
    char *out = malloc((size_t)cap);
    uint8_t *buf = malloc((size_t)wl_max_size(&w));
    if( !out || !buf ){ fprintf(stderr, "pagedb-bench: out of memory\n"); return 1; }
    int nF = xFast((const char *)w.pool, out, (int)WL_POOL_SIZE, cap);
    int nH = xHc((const char *)w.pool, out, (int)WL_POOL_SIZE, cap, 9);
    printf("%-8s pool (8 MiB):        fast %.3fx   hc9 %.3fx\n", w.name,
           (double)WL_POOL_SIZE / nF, (double)WL_POOL_SIZE / nH);
    /* Each sample compressed on its own, as a per-sample codec would. */
    double in = 0, oF = 0, oH = 0;
    int64_t n = w.count < 2000 ? w.count : 2000;
    for(int64_t i = 0; i < n; i++){
      size_t len = (size_t)wl_size(&w, i);
      if( len > (size_t)INT32_MAX / 2 ) continue;
      int c = xBound((int)len);
      if( c > cap ){ free(out); out = malloc((size_t)c); cap = c; if( !out ) return 1; }
      wl_fill(&w, i, buf, len);
      in += (double)len;
      oF += xFast((const char *)buf, out, (int)len, cap);
      oH += xHc((const char *)buf, out, (int)len, cap, 9);
    }
    printf("%-8s samples 0..%lld alone: fast %.3fx   hc9 %.3fx\n", w.name, (long long)n - 1,
           in / oF, in / oH);
    free(out); free(buf);
    wl_free(&w);
  }
  dlclose(h);
  return nBad ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static const char zUsage[] =
  "usage: pagedb-bench [OPTIONS]\n"
  "  --workload W[:N]  W-img, W-small or W-big, N samples (repeatable;\n"
  "                    default W-img and W-small at their full sizes)\n"
  "  --quick           W-img:500 and W-small:20000, 1 rep: a smoke test\n"
  "  --dir DIR         where the files go (default a new /tmp/pagedb-bench.*,\n"
  "                    removed afterwards; our files in DIR are removed too)\n"
  "  --keep            leave the files\n"
  "  --reps N          median of N runs (default 3, 1 with --quick)\n"
  "  --threads LIST    writer threads to measure, e.g. 1,2 (the default)\n"
  "  --page-size N     page size of the datasets (default the engine's)\n"
  "  --align A         alignment of the workload's field (pagedb_field_add_aligned:\n"
  "                    1, 2, 4 ... 64; default the engine's, 8 for BYTES)\n"
  "  --seed N          workload seed (default 42)\n"
  "  --cold            drop the page cache before every timed phase (root); adds\n"
  "                    the raw O_DIRECT references (pread, io_uring depth 32,\n"
  "                    fio's 64 KiB random reads if fio is installed, and the raw\n"
  "                    file written with O_DIRECT), as --vfs direct does\n"
  "  --vfs LIST        run the pagedb rows under each VFS named, e.g.\n"
  "                    posix,io_uring,direct (repeatable; default: the default VFS)\n"
  "  --batch B         ids per pagedb_read_batch in the batched-read rows (32)\n"
  "  --window BYTES    read-ahead of the prefetch rows (pagedb_reader_prefetch;\n"
  "                    default 8M)\n"
  "  --compare LIST    the other systems to run: sqlite,lmdb (the default) or none\n"
  "  --csv FILE        write every measurement to FILE (tool/bench-plot.sh charts it)\n"
  "  --no-after-write  leave out the read-after-write rows (zero-copy reads of\n"
  "                    each file in a fresh process right after its write, with\n"
  "                    nothing read in first: raw mmap, then pagedb)\n"
  "  --after-write-only  the writes and the read-after-write rows only\n"
  "  --pool-ratio      print how much lz4 shrinks the workloads' pools, and exit\n"
  "  --help\n"
  "Exit status: 0, or 1 if any call failed or any byte read back was wrong.\n";

static int parseThreads(Bench *b, const char *z){
  b->nThread = 0;
  while( *z ){
    char *end;
    long v = strtol(z, &end, 10);
    if( end == z || v < 1 || v > 64 || b->nThread >= MAX_THREADS ) return -1;
    b->aThread[b->nThread++] = (int)v;
    z = end;
    if( *z == ',' ) z++;
    else if( *z ) return -1;
  }
  return b->nThread ? 0 : -1;
}

/* "8M", "512k" or "4096" in bytes; 0 if it is not a size. */
static size_t parseSize(const char *z){
  char *end;
  unsigned long long v = strtoull(z, &end, 0);
  if( *end == 'k' || *end == 'K' ){ v <<= 10; end++; }
  else if( *end == 'm' || *end == 'M' ){ v <<= 20; end++; }
  return *end || end == z ? 0 : (size_t)v;
}

/* --compare: "none", or names of the other systems separated by commas. */
static int parseCompare(Bench *b, const char *zList){
  for(int k = 0; k < MAX_KV; k++) b->kvOn[k] = 0;
  if( strcmp(zList, "none") == 0 ) return 0;
  while( *zList ){
    size_t n = strcspn(zList, ",");
    int k = 0;
    while( k < MAX_KV && (strlen(kvSys(k)->zName) != n || strncmp(kvSys(k)->zName, zList, n)) ) k++;
    if( k == MAX_KV ) return -1;
    b->kvOn[k] = 1;
    zList += n + (zList[n] == ',');
  }
  return 0;
}

static int removeTree(const char *zDir){
  return rmdir(zDir);
}

int main(int argc, char **argv){
  static Bench bench;
  Bench *b = &bench;
  const char *zDirOpt = 0, *zCsv = 0;
  b->argc = argc; b->argv = argv;
  b->seed = WL_DEFAULT_SEED;
  b->aThread[0] = 1; b->aThread[1] = 2; b->nThread = 2;
  b->afterWrite = 1;
  for(int k = 0; k < MAX_KV; k++) b->kvOn[k] = 1;
  for(int i = 1; i < argc; i++){
    const char *z = argv[i];
    const char *zArg = i + 1 < argc ? argv[i + 1] : 0;
    if( z[0] == '-' && z[1] == '-' ) z++;
    if( strcmp(z, "-help") == 0 || strcmp(z, "-h") == 0 ){
      fputs(zUsage, stdout);
      return 0;
    }else if( strcmp(z, "-quick") == 0 ){
      b->quick = 1;
    }else if( strcmp(z, "-cold") == 0 ){
      b->cold = 1;
    }else if( strcmp(z, "-keep") == 0 ){
      b->keep = 1;
    }else if( strcmp(z, "-no-after-write") == 0 ){
      b->afterWrite = 0;
    }else if( strcmp(z, "-after-write-only") == 0 ){
      b->afterWrite = b->afterWriteOnly = 1;
    }else if( strcmp(z, "-pool-ratio") == 0 ){
      b->poolRatio = 1;
    }else if( zArg == 0 && (strcmp(z, "-workload") == 0 || strcmp(z, "-dir") == 0
              || strcmp(z, "-reps") == 0 || strcmp(z, "-threads") == 0
              || strcmp(z, "-seed") == 0 || strcmp(z, "-page-size") == 0
              || strcmp(z, "-vfs") == 0 || strcmp(z, "-batch") == 0
              || strcmp(z, "-window") == 0 || strcmp(z, "-compare") == 0
              || strcmp(z, "-csv") == 0 || strcmp(z, "-align") == 0) ){
      fprintf(stderr, "pagedb-bench: %s needs an argument\n%s", argv[i], zUsage);
      return 2;
    }else if( strcmp(z, "-workload") == 0 ){
      wl_t w;
      if( wl_parse_seed(zArg, 0, &w) ){
        fprintf(stderr, "pagedb-bench: --workload %s: not W-img, W-small or W-big[:N]\n", zArg);
        return 2;
      }
      wl_free(&w);
      if( b->nSpec >= MAX_WL ){
        fprintf(stderr, "pagedb-bench: --workload %s: at most %d workloads\n", zArg, MAX_WL);
        return 2;
      }
      b->azSpec[b->nSpec++] = argv[++i];
    }else if( strcmp(z, "-dir") == 0 ){
      zDirOpt = argv[++i];
    }else if( strcmp(z, "-csv") == 0 ){
      zCsv = argv[++i];
    }else if( strcmp(z, "-compare") == 0 ){
      if( parseCompare(b, argv[++i]) ){
        fprintf(stderr, "pagedb-bench: --compare %s: not a list of sqlite, lmdb, or none\n", zArg);
        return 2;
      }
    }else if( strcmp(z, "-vfs") == 0 ){
      /* A comma-separated list. */
      char *zList = strdup(argv[++i]);    /* kept for the run: the names point into it */
      if( zList == 0 ){ fprintf(stderr, "pagedb-bench: out of memory\n"); return 2; }
      for(char *zTok = strtok(zList, ","); zTok; zTok = strtok(0, ",")){
        int dup = 0;
        for(int k = 0; k < b->nVfs; k++) dup |= strcmp(b->azVfs[k], zTok) == 0;
        if( dup ) continue;
        if( b->nVfs >= MAX_VFS ){
          fprintf(stderr, "pagedb-bench: --vfs: at most %d VFSes\n", MAX_VFS);
          return 2;
        }
        b->azVfs[b->nVfs++] = zTok;
      }
    }else if( strcmp(z, "-batch") == 0 ){
      char *end;
      long v = strtol(zArg, &end, 10);
      if( *end || v < 1 || v > PAGEDB_MAX_BATCH ){
        fprintf(stderr, "pagedb-bench: --batch %s: not a number from 1 to %d\n", zArg,
                PAGEDB_MAX_BATCH);
        return 2;
      }
      b->nBatch = (int)v;
      i++;
    }else if( strcmp(z, "-reps") == 0 ){
      char *end;
      long v = strtol(zArg, &end, 10);
      if( *end || v < 1 || v > MAX_REPS ){
        fprintf(stderr, "pagedb-bench: --reps %s: not a number from 1 to %d\n", zArg, MAX_REPS);
        return 2;
      }
      b->nReps = (int)v;
      i++;
    }else if( strcmp(z, "-threads") == 0 ){
      if( parseThreads(b, zArg) ){
        fprintf(stderr, "pagedb-bench: --threads %s: not a list like 1,2 (1 to 64, at most %d)\n",
                zArg, MAX_THREADS);
        return 2;
      }
      i++;
    }else if( strcmp(z, "-seed") == 0 ){
      char *end;
      b->seed = strtoull(zArg, &end, 0);
      if( *end || end == zArg ){
        fprintf(stderr, "pagedb-bench: --seed %s: not a number\n", zArg);
        return 2;
      }
      i++;
    }else if( strcmp(z, "-align") == 0 ){
      char *end;
      long v = strtol(zArg, &end, 10);
      if( *end || end == zArg || v < 1 || v > PAGEDB_MAX_ALIGN || (v & (v - 1)) ){
        fprintf(stderr, "pagedb-bench: --align %s: not a power of two from 1 to %d\n", zArg, PAGEDB_MAX_ALIGN);
        return 2;
      }
      b->align = (int)v;
      i++;
    }else if( strcmp(z, "-page-size") == 0 || strcmp(z, "-window") == 0 ){
      size_t v = parseSize(zArg);
      if( v == 0 ){
        fprintf(stderr, "pagedb-bench: %s %s: not a size (e.g. 8M)\n", argv[i], zArg);
        return 2;
      }
      if( z[1] == 'p' ) b->pageSize = v;
      else b->window = v;
      i++;
    }else{
      fprintf(stderr, "pagedb-bench: unknown option %s\n%s", argv[i], zUsage);
      return 2;
    }
  }
  if( b->nSpec == 0 ){
    b->azSpec[0] = b->quick ? "W-img:500" : "W-img";
    b->azSpec[1] = b->quick ? "W-small:20000" : "W-small";
    b->nSpec = b->poolRatio ? 1 : 2;
    if( b->poolRatio ) b->azSpec[0] = "W-small";
  }
  if( b->nReps == 0 ) b->nReps = b->quick ? 1 : 3;
  if( b->nBatch == 0 ) b->nBatch = DEFAULT_BATCH;
  if( b->window == 0 ) b->window = DEFAULT_WINDOW;
  if( b->poolRatio ) return poolRatio(b);
  if( b->cold && geteuid() != 0 ){
    fprintf(stderr, "pagedb-bench: --cold drops the page cache, which needs root\n");
    return 2;
  }

  if( zDirOpt ){
    struct stat st;
    if( stat(zDirOpt, &st) ){
      if( mkdir(zDirOpt, 0755) ){
        fprintf(stderr, "pagedb-bench: --dir %s: %s\n", zDirOpt, strerror(errno));
        return 2;
      }
      b->dirOwned = 1;
    }else if( !S_ISDIR(st.st_mode) ){
      fprintf(stderr, "pagedb-bench: --dir %s: not a directory\n", zDirOpt);
      return 2;
    }
    snprintf(b->zDir, sizeof b->zDir, "%s", zDirOpt);
  }else{
    snprintf(b->zDir, sizeof b->zDir, "/tmp/pagedb-bench.XXXXXX");
    if( mkdtemp(b->zDir) == 0 ){
      fprintf(stderr, "pagedb-bench: mkdtemp %s: %s\n", b->zDir, strerror(errno));
      return 2;
    }
    b->dirOwned = 1;
  }

  /* Which VFSes work here: one that does not is reported and skipped. */
  for(int v = 0; v < b->nVfs; v++){
    pagedb_vfs *pv = pagedb_vfs_find(b->azVfs[v]);
    char *zWhy = b->azWhy[v];
    size_t nWhy = sizeof b->azWhy[v];
    if( pv == 0 ){
      snprintf(zWhy, nWhy, "no VFS of that name is registered");
    }else if( pagedb_vfs_check(pv, b->zDir, zWhy, nWhy) != PAGEDB_OK ){
      if( zWhy[0] == 0 ) snprintf(zWhy, nWhy, "pagedb_vfs_check failed");
    }else{
      zWhy[0] = 0;
    }
    if( zWhy[0] ){
      b->vfsSkip[v] = 1;
      fprintf(stderr, "pagedb-bench: vfs %s skipped: %s\n", b->azVfs[v], zWhy);
    }
  }
  /* The O_DIRECT references: cold runs, and any run of the direct VFS. */
  b->directRef = b->cold;
  if( b->nVfs == 0 ){
    pagedb_vfs *pv = pagedb_vfs_find(0);
    if( pv && pv->zName && strcmp(pv->zName, "direct") == 0 ) b->directRef = 1;
  }
  for(int v = 0; v < b->nVfs; v++){
    if( !b->vfsSkip[v] && strcmp(b->azVfs[v], "direct") == 0 ) b->directRef = 1;
  }
  if( b->directRef ) findOnPath("fio", b->zFio, sizeof b->zFio);
  b->labelW = b->nVfs || b->directRef ? 50 : 40;

  if( zCsv && (b->pCsv = fopen(zCsv, "w")) == 0 ){
    fprintf(stderr, "pagedb-bench: --csv %s: %s\n", zCsv, strerror(errno));
    return 2;
  }
  printMachine(b);
  csvHeader(b);
  int bad = 0;
  for(int k = 0; k < b->nSpec; k++) bad |= runWorkload(b, b->azSpec[k]);
  if( b->dirOwned && !b->keep && removeTree(b->zDir) ){
    fprintf(stderr, "pagedb-bench: could not remove %s: %s\n", b->zDir, strerror(errno));
  }
  if( b->pCsv && fclose(b->pCsv) ){
    fprintf(stderr, "pagedb-bench: --csv %s: %s\n", zCsv, strerror(errno));
    bad = 1;
  }
  printf("\n%s\n", b->nFail || bad ? "pagedb-bench: FAILED (correctness; see stderr)"
                                   : "pagedb-bench: all bytes checked, no errors");
  return b->nFail || bad ? 1 : 0;
}
