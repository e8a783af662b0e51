/*
** mkseeds.c -- writes the seed corpora of the fuzz targets from real,
** small datasets and tars:
**
**   make tool/fuzz/mkseeds && tool/fuzz/mkseeds tool/fuzz/corpus
**
** fuzz_open: datasets made through the public API (64 KiB pages; fields of
** every type, lz4 and lz4hc values, a missing value, a deleted sample, an
** empty dataset), each framed as fuzz.h says twice: with the catalog as a
** SQLite file (made compact: 512-byte pages, rollback journal) and as the
** SQL that makes it; with flag variants; with their index files NAME-index
** (FZ_INDEX), whole and damaged as test/index.test damages them: cut short,
** a byte flipped in the header, a slot or the directory, another dataset's,
** and stale (the index of a commit the catalog never recorded: a crash
** between the index's sync and the catalog's commit); a dataset of two
** parts, whole and damaged (parts_seeds).  fuzz_page: those datasets' first
** runs with their extents from the catalog's extent view.  fuzz_tar: tars
** written by the shell's own writer (shell/tar.c: ustar, pax long names,
** gzip) and one GNU long-name tar made here.
*/
#include "fuzz.h"

#include "pagedb.h"
#include "xfer.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DIE(...) (fprintf(stderr, "mkseeds: " __VA_ARGS__), fputc('\n', stderr), exit(1))

typedef struct Buf {
  uint8_t *p;
  size_t n, cap;
} Buf;

static void put(Buf *b, const void *p, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    if (!(b->p = realloc(b->p, b->cap))) DIE("out of memory");
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
}
static void put32(Buf *b, uint32_t v) {
  uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
  put(b, x, 4);
}
static void puts_(Buf *b, const char *s) { put(b, s, strlen(s)); }

static Buf slurp(const char *path) {
  Buf b = { 0 };
  FILE *f = fopen(path, "rb");
  if (!f) DIE("cannot open %s", path);
  uint8_t chunk[65536];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) put(&b, chunk, k);
  fclose(f);
  return b;
}

static const char *outdir;

static void emit(const char *target, const char *name, const Buf *b) {
  char path[FZ_PATH];
  snprintf(path, sizeof path, "%s/%s/%s", outdir, target, name);
  fz_write(path, b->p, b->n);
}

/* --- datasets ------------------------------------------------------------ */

static void ok(int rc, pagedb *db, const char *what) {
  if (rc != PAGEDB_OK) DIE("%s: %s (%s)", what, pagedb_errname(rc), pagedb_errmsg(db));
}

/* The seeds' schema (64 KiB pages; fields of every type, lz4 and lz4hc) on
** the new dataset DB. */
static void schema(pagedb *db) {
  ok(pagedb_set_page_size(db, PAGEDB_MIN_PAGE_SIZE), db, "page size");
  ok(pagedb_field_add(db, "img", PAGEDB_BYTES, PAGEDB_CODEC_NONE), db, "field");
  ok(pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE), db, "field");
  ok(pagedb_field_add(db, "cap", PAGEDB_TEXT, PAGEDB_CODEC_LZ4), db, "field");
  ok(pagedb_field_add(db, "score", PAGEDB_REAL, PAGEDB_CODEC_NONE), db, "field");
  ok(pagedb_field_add(db, "mask", PAGEDB_BYTES, PAGEDB_CODEC_LEVEL(PAGEDB_CODEC_LZ4HC, 9)), db, "field");
}

/* Dataset KIND at PATH: 0 every type and codec, 1 a deleted sample and a
** missing value, 2 fields and no sample. */
static void make_dataset(const char *path, int kind) {
  pagedb *db;
  ok(pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, NULL), db, "open");
  schema(db);
  if (kind != 2) {
    pagedb_writer *w;
    ok(pagedb_writer_open(db, &w), db, "writer");
    for (int i = 0; i < 5; i++) {
      char img[40], cap[200], mask[300];
      snprintf(img, sizeof img, "img-%d-\x01\x02\xff", i);
      snprintf(cap, sizeof cap, "a cat, a cat, a cat number %d sitting on a mat, a cat on a mat", i);
      memset(mask, 'a' + i, sizeof mask);
      ok(pagedb_sample_begin(w, i * 7), db, "begin");
      ok(pagedb_put(w, 0, img, strlen(img)), db, "put");
      ok(pagedb_put_int(w, 1, i - 2), db, "put");
      if (kind == 0 || i != 3) ok(pagedb_put(w, 2, cap, strlen(cap)), db, "put");
      ok(pagedb_put_real(w, 3, i * 0.25), db, "put");
      ok(pagedb_put(w, 4, mask, kind == 0 ? sizeof mask : (size_t)i), db, "put");
      ok(pagedb_sample_end(w, NULL), db, "end");
    }
    ok(pagedb_writer_close(w), db, "writer close");
    ok(pagedb_commit(db), db, "commit");
    if (kind == 1) {
      /* The catalog as this commit left it (close checkpoints it): with the
      ** index of the next commit, the crash between the two. */
      char pre[FZ_PATH + 16], cat[FZ_PATH + 16];
      ok(pagedb_close(db), NULL, "close");
      snprintf(cat, sizeof cat, "%s-catalog", path);
      snprintf(pre, sizeof pre, "%s-pre-catalog", path);
      Buf b = slurp(cat);
      fz_write(pre, b.p, b.n);
      free(b.p);
      ok(pagedb_open(path, &db, PAGEDB_OPEN_READWRITE, NULL), db, "open");
      ok(pagedb_delete(db, 14), db, "delete");
      ok(pagedb_commit(db), db, "commit");
    }
  }
  ok(pagedb_close(db), NULL, "close");
}

static void exec_or_die(sqlite3 *c, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(c, sql, NULL, NULL, &err) != SQLITE_OK) DIE("%s: %s", sql, err);
}

/* The catalog CAT as a compact SQLite file at COPY (read back into *RAW)
** and as the SQL that makes it (*SQL). */
static void catalog_forms(const char *cat, const char *copy, Buf *raw, Buf *sql) {
  Buf b = slurp(cat);
  fz_write(copy, b.p, b.n);
  free(b.p);
  sqlite3 *c;
  if (sqlite3_open(copy, &c) != SQLITE_OK) DIE("cannot open %s", copy);
  exec_or_die(c, "PRAGMA journal_mode=DELETE; PRAGMA page_size=512; VACUUM;");
  puts_(sql, "PRAGMA page_size=512;\nBEGIN;\n");
  sqlite3_stmt *st, *rows;
  sqlite3_prepare_v2(c, "SELECT name, type, sql FROM sqlite_schema WHERE sql NOT NULL ORDER BY type = 'view', rowid",
                     -1, &st, NULL);
  while (sqlite3_step(st) == SQLITE_ROW) {
    puts_(sql, (const char *)sqlite3_column_text(st, 2));
    puts_(sql, ";\n");
    if (strcmp((const char *)sqlite3_column_text(st, 1), "table") != 0) continue;
    char *q = sqlite3_mprintf("SELECT * FROM \"%w\"", (const char *)sqlite3_column_text(st, 0));
    sqlite3_prepare_v2(c, q, -1, &rows, NULL);
    while (sqlite3_step(rows) == SQLITE_ROW) {
      char *ins = sqlite3_mprintf("INSERT INTO \"%w\" VALUES(", (const char *)sqlite3_column_text(st, 0));
      for (int i = 0; i < sqlite3_column_count(rows); i++) {
        const char *sep = i ? "," : "";
        switch (sqlite3_column_type(rows, i)) {
          case SQLITE_NULL: ins = sqlite3_mprintf("%z%sNULL", ins, sep); break;
          case SQLITE_INTEGER: ins = sqlite3_mprintf("%z%s%lld", ins, sep, sqlite3_column_int64(rows, i)); break;
          case SQLITE_FLOAT: ins = sqlite3_mprintf("%z%s%!.17g", ins, sep, sqlite3_column_double(rows, i)); break;
          default: ins = sqlite3_mprintf("%z%s%Q", ins, sep, (const char *)sqlite3_column_text(rows, i)); break;
        }
      }
      puts_(sql, ins);
      puts_(sql, ");\n");
      sqlite3_free(ins);
    }
    sqlite3_finalize(rows);
    sqlite3_free(q);
  }
  sqlite3_finalize(st);
  puts_(sql, "COMMIT;\n");
  sqlite3_close(c);
  *raw = slurp(copy);
}

/* The data file DATA (N bytes) as fuzz.h's segments: its non-zero
** stretches, gaps of fewer than 16 zeros kept inside them. */
static void segments(Buf *out, const uint8_t *data, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (!data[i]) { i++; continue; }
    size_t end = i, zeros = 0;
    for (size_t j = i; j < n && j - i < 65535 && zeros < 16; j++) {
      if (data[j]) { end = j + 1; zeros = 0; } else { zeros++; }
    }
    put32(out, (uint32_t)i);
    uint8_t len[2] = { (uint8_t)(end - i), (uint8_t)((end - i) >> 8) };
    put(out, len, 2);
    put(out, data + i, end - i);
    i = end;
  }
}

/* A dataset framed as fuzz.h says, into B: catalog CAT, data file FILE,
** the index file IX if not NULL (FZ_INDEX is then set), and the NP parts
** PARTS, each framed already (FZ_PARTS is then set). */
static void frame(Buf *b, int flags, const Buf *cat, const Buf *ix, const Buf *parts, int np, const Buf *file) {
  uint8_t f = (uint8_t)(flags | (ix ? FZ_INDEX : 0) | (np ? FZ_PARTS : 0));
  put(b, &f, 1);
  put32(b, (uint32_t)file->n);
  put32(b, (uint32_t)cat->n);
  put(b, cat->p, cat->n);
  if (ix) {
    Buf seg = { 0 };
    segments(&seg, ix->p, ix->n);
    put32(b, (uint32_t)ix->n);
    put32(b, (uint32_t)seg.n);
    put(b, seg.p, seg.n);
    free(seg.p);
  }
  if (np) {
    uint8_t n = (uint8_t)np;
    put(b, &n, 1);
    for (int k = 0; k < np; k++) {
      put32(b, (uint32_t)parts[k].n);
      put(b, parts[k].p, parts[k].n);
    }
  }
  segments(b, file->p, file->n);
}

/* A fuzz_open input: catalog CAT, data file FILE and, if IX is not NULL,
** the index file IX (FZ_INDEX is then set). */
static void open_seed_ix(const char *name, int flags, const Buf *cat, const Buf *ix, const Buf *file) {
  Buf b = { 0 };
  frame(&b, flags, cat, ix, NULL, 0, file);
  emit("fuzz_open", name, &b);
  free(b.p);
}

static void open_seed(const char *name, int flags, const Buf *cat, const Buf *file) {
  open_seed_ix(name, flags, cat, NULL, file);
}

/* Meta key KEY of the catalog at PATH, 0 if absent. */
static uint64_t meta_of(const char *path, const char *key) {
  sqlite3 *c;
  sqlite3_stmt *st;
  uint64_t v = 0;
  if (sqlite3_open(path, &c) != SQLITE_OK) DIE("cannot open %s", path);
  sqlite3_prepare_v2(c, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL);
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) v = (uint64_t)sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(c);
  return v;
}

/* A copy of IX with byte AT flipped. */
static Buf flipped(const Buf *ix, size_t at) {
  Buf b = { 0 };
  put(&b, ix->p, ix->n);
  if (at < b.n) b.p[at] ^= 0x5a;
  return b;
}

/* The index seeds of dataset 0 (catalog RAW, index IX, data FILE), with
** OTHER, dataset 1's index, and STALE, dataset 1's catalog of the commit
** before its last, beside its last index and data file STALEFILE. */
static void index_seeds(const char *cat, const Buf *raw, const Buf *ix, const Buf *file, const Buf *other,
                        const Buf *stale, const Buf *staleix, const Buf *stalefile) {
  int fl = FZ_VERIFY | FZ_FULLCHECK;
  open_seed_ix("ix-whole", fl, raw, ix, file);
  Buf cut = { 0 };
  put(&cut, ix->p, ix->n < 4096 + 100 ? ix->n : 4096 + 100);
  open_seed_ix("ix-truncated", fl, raw, &cut, file);
  Buf b = flipped(ix, 50);                      /* the file's id: the header checksum fails */
  open_seed_ix("ix-flip-header", fl, raw, &b, file);
  free(b.p);
  b = flipped(ix, 4096 + 8);                    /* word 1 of the first slot: its checksum fails */
  open_seed_ix("ix-flip-slot", fl, raw, &b, file);
  free(b.p);
  b = flipped(ix, (size_t)meta_of(cat, "index_dir") + 24);   /* a count in the directory */
  open_seed_ix("ix-flip-directory", fl, raw, &b, file);
  free(b.p);
  open_seed_ix("ix-other-dataset", fl, raw, other, file);
  open_seed_ix("ix-stale", fl, stale, staleix, stalefile);
  open_seed_ix("ix-stale-checkopen", fl | FZ_CHECKOPEN, stale, staleix, stalefile);
  free(cut.p);
}

/* The first run of dataset PATH (catalog copy COPY) and its extents. */
static void page_seed(const char *name, const char *copy, const Buf *file) {
  sqlite3 *c;
  sqlite3_stmt *st;
  if (sqlite3_open(copy, &c) != SQLITE_OK) DIE("cannot open %s", copy);
  Buf ext = { 0 };
  int k = 0;
  uint64_t used = 0;
  sqlite3_prepare_v2(c, "SELECT used FROM page WHERE pgno = 0", -1, &st, NULL);
  if (sqlite3_step(st) == SQLITE_ROW) used = (uint64_t)sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_prepare_v2(c, "SELECT len, raw, compressed FROM extent WHERE page = 0 ORDER BY off", -1, &st, NULL);
  while (k < 16 && sqlite3_step(st) == SQLITE_ROW) {
    put32(&ext, (uint32_t)sqlite3_column_int64(st, 0));
    put32(&ext, (uint32_t)sqlite3_column_int64(st, 1));
    uint8_t z = (uint8_t)sqlite3_column_int(st, 2);
    put(&ext, &z, 1);
    k++;
  }
  sqlite3_finalize(st);
  sqlite3_close(c);
  uint64_t doff = PAGEDB_MIN_PAGE_SIZE;   /* page 0 of a 64 KiB-page dataset */
  if (used < 64 || doff + used > file->n) return;
  /* lz4, lz4hc, and (issue 28) zstd:3 and zstd-dict:3 on the same run,
  ** whose lz4 extents zstd must refuse cleanly. */
  static const uint8_t first[4] = { 8, 9, 2 | (6 << 3), 2 | 4 | (6 << 3) };
  static const char *const cname[4] = { "lz4", "lz4hc", "zstd", "zstd-dict" };
  for (int codec = 0; codec < (name[0] == 'a' ? 4 : 2); codec++) {
    Buf b = { 0 };
    uint8_t hdr[2] = { first[codec], (uint8_t)k };
    put(&b, hdr, 2);
    put(&b, ext.p, ext.n);
    put(&b, file->p + doff, used);
    char nm[64];
    snprintf(nm, sizeof nm, "%s-%s", name, cname[codec]);
    emit("fuzz_page", nm, &b);
    free(b.p);
  }
  free(ext.p);
}

static void datasets(void) {
  static const char *names[] = { "all-types", "deleted", "empty" };
  Buf ix0 = { 0 }, raw0 = { 0 }, file0 = { 0 }, ix1 = { 0 }, file1 = { 0 }, pre1 = { 0 };
  char cat0[FZ_PATH];
  for (int kind = 0; kind < 3; kind++) {
    char path[FZ_PATH], cat[FZ_PATH], copy[FZ_PATH], nm[64];
    snprintf(nm, sizeof nm, "ds%d", kind);
    fz_path(path, nm);
    snprintf(nm, sizeof nm, "ds%d-catalog", kind);
    fz_path(cat, nm);
    snprintf(nm, sizeof nm, "ds%d.copy", kind);
    fz_path(copy, nm);
    make_dataset(path, kind);
    Buf raw = { 0 }, sql = { 0 }, file = slurp(path);
    catalog_forms(cat, copy, &raw, &sql);
    snprintf(nm, sizeof nm, "%s-sqlite", names[kind]);
    open_seed(nm, 0, &raw, &file);
    snprintf(nm, sizeof nm, "%s-sqlite-verify", names[kind]);
    open_seed(nm, FZ_VERIFY | FZ_FULLCHECK, &raw, &file);
    snprintf(nm, sizeof nm, "%s-sql", names[kind]);
    open_seed(nm, FZ_SQL, &sql, &file);
    snprintf(nm, sizeof nm, "%s-sql-checkopen", names[kind]);
    open_seed(nm, FZ_SQL | FZ_CHECKOPEN | FZ_FULLCHECK | FZ_VERIFY, &sql, &file);
    page_seed(names[kind], copy, &file);
    if (kind < 2) {
      snprintf(nm, sizeof nm, "ds%d-index", kind);
      fz_path(path, nm);
      Buf ix = slurp(path);
      snprintf(nm, sizeof nm, "%s-sqlite-index", names[kind]);
      open_seed_ix(nm, FZ_VERIFY | FZ_FULLCHECK, &raw, &ix, &file);
      snprintf(nm, sizeof nm, "%s-sql-index", names[kind]);
      open_seed_ix(nm, FZ_SQL, &sql, &ix, &file);
      if (kind == 0) {
        ix0 = ix;
        raw0 = raw;
        file0 = file;
        snprintf(cat0, sizeof cat0, "%s", copy);
        free(sql.p);
        continue;
      }
      ix1 = ix;
      file1 = file;
      char pre[FZ_PATH], precopy[FZ_PATH];
      Buf presql = { 0 };
      fz_path(pre, "ds1-pre-catalog");
      fz_path(precopy, "ds1-pre.copy");
      catalog_forms(pre, precopy, &pre1, &presql);
      free(presql.p);
      free(raw.p);
      free(sql.p);
      continue;
    }
    free(raw.p);
    free(sql.p);
    free(file.p);
  }
  index_seeds(cat0, &raw0, &ix0, &file0, &ix1, &pre1, &ix1, &file1);
  free(ix0.p);
  free(raw0.p);
  free(file0.p);
  free(ix1.p);
  free(file1.p);
  free(pre1.p);
}

/* --- a dataset of parts ------------------------------------------------- */

/* Dataset "d" of two parts, d.parts/p0 and p1 (doc/format.md, "Parts"),
** each dataset 0 of make_dataset and sealed, committed under OFFSET (p1's
** ids plus 100: rows by reference, read by SQL from the parts' catalogs),
** then p1's sample 7 deleted through d.  Framed with its parts as
** fuzz_open's FZ_PARTS inputs: whole, catalogs as files and as SQL, read
** zero-copy too; a part missing; a part's data file cut short; the two
** parts' files swapped (each row then names the other's uuid). */
static void parts_seeds(void) {
  char d[FZ_PATH], dir[FZ_PATH], p[2][FZ_PATH], nm[64];
  fz_path(d, "d");
  fz_path(dir, "d.parts");
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) DIE("cannot make %s", dir);
  pagedb_part pp[2];
  for (int k = 0; k < 2; k++) {
    snprintf(nm, sizeof nm, "d.parts/p%d", k);
    fz_path(p[k], nm);
    make_dataset(p[k], 0);
    pagedb *o;
    ok(pagedb_open(p[k], &o, PAGEDB_OPEN_READWRITE, NULL), o, "open part");
    uint64_t seal;
    ok(pagedb_part_seal(o, &seal), o, "seal");
    ok(pagedb_close(o), NULL, "close part");
    pp[k] = (pagedb_part){ p[k], NULL, 100 * k, seal };
  }
  pagedb *db;
  ok(pagedb_open(d, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, NULL), db, "open");
  schema(db);
  ok(pagedb_parts_commit(db, pp, 2, PAGEDB_ATTACH_OFFSET, NULL), db, "parts commit");
  ok(pagedb_delete(db, 107), db, "delete");
  ok(pagedb_commit(db), db, "commit");
  ok(pagedb_close(db), NULL, "close");
  /* Each file in its forms: the catalog as a file and as SQL. */
  Buf cat[3], sql[3] = { { 0 } }, ix[3], file[3];
  for (int k = 0; k < 3; k++) {
    const char *base = k < 2 ? p[k] : d;
    char c[FZ_PATH + 16], copy[FZ_PATH + 16], x[FZ_PATH + 16];
    snprintf(c, sizeof c, "%s-catalog", base);
    snprintf(copy, sizeof copy, "%s.copy", base);
    snprintf(x, sizeof x, "%s-index", base);
    catalog_forms(c, copy, &cat[k], &sql[k]);
    ix[k] = slurp(x);
    file[k] = slurp(base);
  }
  Buf part[2], partsql[2], swapped[2], cut[2];
  for (int k = 0; k < 2; k++) {
    part[k] = partsql[k] = swapped[k] = cut[k] = (Buf){ 0 };
    frame(&part[k], 0, &cat[k], &ix[k], NULL, 0, &file[k]);
    frame(&partsql[k], FZ_SQL, &sql[k], &ix[k], NULL, 0, &file[k]);
    frame(&swapped[k], 0, &cat[1 - k], &ix[1 - k], NULL, 0, &file[1 - k]);
    Buf shorter = file[k];
    shorter.n = file[k].n > 200 ? file[k].n - 200 : 0;
    frame(&cut[k], 0, &cat[k], &ix[k], NULL, 0, k == 1 ? &shorter : &file[k]);
  }
  static const struct { const char *name; int flags, sql, np; } seeds[] = {
    { "parts-sqlite", FZ_MMAP | FZ_VERIFY | FZ_FULLCHECK, 0, 2 },
    { "parts-sql", FZ_SQL | FZ_MMAP, 1, 2 },
    { "parts-checkopen", FZ_CHECKOPEN | FZ_MMAP, 0, 2 },
    { "parts-one-missing", FZ_MMAP | FZ_FULLCHECK, 0, 1 },
  };
  for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
    Buf b = { 0 };
    frame(&b, seeds[i].flags, seeds[i].sql ? &sql[2] : &cat[2], &ix[2], seeds[i].sql ? partsql : part, seeds[i].np,
          &file[2]);
    emit("fuzz_open", seeds[i].name, &b);
    free(b.p);
  }
  Buf b = { 0 };
  frame(&b, FZ_MMAP | FZ_FULLCHECK, &cat[2], &ix[2], cut, 2, &file[2]);
  emit("fuzz_open", "parts-truncated", &b);
  free(b.p);
  b = (Buf){ 0 };
  frame(&b, FZ_MMAP | FZ_VERIFY, &cat[2], &ix[2], swapped, 2, &file[2]);
  emit("fuzz_open", "parts-swapped", &b);
  free(b.p);
  for (int k = 0; k < 3; k++) {
    free(cat[k].p);
    free(sql[k].p);
    free(ix[k].p);
    free(file[k].p);
  }
  for (int k = 0; k < 2; k++) {
    free(part[k].p);
    free(partsql[k].p);
    free(swapped[k].p);
    free(cut[k].p);
  }
}

/* --- tars ---------------------------------------------------------------- */

static void tar_seed(const char *name, int gz) {
  char path[FZ_PATH], msg[512], longname[200];
  fz_path(path, gz ? "t.tar.gz" : "t.tar");
  TarWriter *w;
  if (tar_create(path, &w, msg, sizeof msg) != PAGEDB_OK) DIE("%s", msg);
  memset(longname, 'n', sizeof longname);
  memcpy(longname, "dir/", 4);
  strcpy(longname + 150, ".jpg");
  if (tar_add(w, "000001.jpg", "\xff\xd8jpeg", 6, msg, sizeof msg) || tar_add(w, "000001.cls", "3", 1, msg, sizeof msg)
      || tar_add(w, "a/000002.seg.png", "png bytes", 9, msg, sizeof msg) || tar_add(w, "a/000002.cls", "", 0, msg, sizeof msg)
      || tar_add(w, longname, "long", 4, msg, sizeof msg) || tar_finish(w, msg, sizeof msg))
    DIE("%s", msg);
  Buf file = slurp(path), b = { 0 };
  uint8_t flag = 0;
  put(&b, &flag, 1);
  put(&b, file.p, file.n);
  emit("fuzz_tar", name, &b);
  if (!gz) {                /* the same tar, gzipped by the target */
    b.p[0] = 1;
    char nm[64];
    snprintf(nm, sizeof nm, "%s-gzip-by-target", name);
    emit("fuzz_tar", nm, &b);
  }
  free(file.p);
  free(b.p);
}

/* A ustar header block for NAME, SIZE bytes, of type TYPE. */
static void header(uint8_t h[512], const char *name, size_t size, char type) {
  memset(h, 0, 512);
  snprintf((char *)h, 100, "%s", name);
  snprintf((char *)h + 100, 8, "%07o", 0644);
  snprintf((char *)h + 124, 12, "%011zo", size);
  h[156] = (uint8_t)type;
  memcpy(h + 257, "ustar  ", 8);     /* GNU */
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
}

static void gnu_longname_seed(void) {
  Buf b = { 0 };
  uint8_t h[512], block[512] = { 0 }, flag = 0;
  const char *name = "gnu/a-very-long-directory-name-that-does-not-fit-in-the-hundred-bytes-of-a-header/and/more/000003.txt";
  put(&b, &flag, 1);
  header(h, "././@LongLink", strlen(name) + 1, 'L');
  put(&b, h, 512);
  memcpy(block, name, strlen(name) + 1);
  put(&b, block, 512);
  header(h, "truncated", 5, '0');
  put(&b, h, 512);
  memset(block, 0, 512);
  memcpy(block, "hello", 5);
  put(&b, block, 512);
  memset(block, 0, 512);
  put(&b, block, 512);
  put(&b, block, 512);
  emit("fuzz_tar", "gnu-longname", &b);
  free(b.p);
}

int main(int argc, char **argv) {
  if (argc != 2) DIE("usage: mkseeds CORPUS-DIR (its fuzz_open, fuzz_page and fuzz_tar must exist)");
  outdir = argv[1];
  datasets();
  parts_seeds();
  tar_seed("wds", 0);
  tar_seed("wds-gz", 1);
  gnu_longname_seed();
  return 0;
}
