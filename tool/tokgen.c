/*
** tokgen.c -- pagedb-tokgen: make the W-tokens workload twice, for
** tool/tokbench.py (doc/benchmarks.md, issue 27's W-tokens):
**
**   DIR/wtok.pagedb   a dataset with tensor field `tokens`
**                     (tensor:uint16:*, codec CODEC, default none) and INT
**                     `label`: document i of WORKLOADS.md's W-tokens
**                     (wl_size tokens of wl_tokens) as sample i;
**   DIR/wtok.bin      nanoGPT's training file: the same documents' tokens
**                     laid end to end in id order, raw uint16 (prepare.py
**                     writes one np.memmap .bin of uint16 token ids; its
**                     end-of-text separator is left out here, as the
**                     pagedb side has none: the same tokens on both).
**
** Usage: pagedb-tokgen DIR [COUNT [CODEC]]   (COUNT: documents, default
** 360,000, ~500M tokens; CODEC none or lz4).  Prints the documents, the
** tokens and the bytes of each file.  Deterministic: the same COUNT gives
** the same files.
*/
#include "pagedb.h"
#include "workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define COMMIT_EVERY 20000

static int die(pagedb *db, const char *what, int rc) {
  fprintf(stderr, "pagedb-tokgen: %s: %s (%s)\n", what, pagedb_errstr(rc), db ? pagedb_errmsg(db) : "");
  return 1;
}

static long long file_bytes(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: pagedb-tokgen DIR [COUNT [none|lz4]]\n");
    return 2;
  }
  char spec[64], path[4096], bin[4096];
  snprintf(spec, sizeof spec, "W-tokens%s%s", argc > 2 ? ":" : "", argc > 2 ? argv[2] : "");
  int codec = PAGEDB_CODEC_NONE;
  if (argc > 3 && strcmp(argv[3], "lz4") == 0) codec = PAGEDB_CODEC_LZ4;
  else if (argc > 3 && strcmp(argv[3], "none") != 0) {
    fprintf(stderr, "pagedb-tokgen: codec '%s': none or lz4\n", argv[3]);
    return 2;
  }
  wl_t w;
  if (wl_parse(spec, &w) != 0) {
    fprintf(stderr, "pagedb-tokgen: bad count in '%s'\n", spec);
    return 2;
  }
  snprintf(path, sizeof path, "%s/wtok.pagedb", argv[1]);
  snprintf(bin, sizeof bin, "%s/wtok.bin", argv[1]);
  const char *suffix[] = { "", "-catalog", "-index", "-catalog-wal", "-catalog-shm" };
  for (size_t k = 0; k < sizeof suffix / sizeof suffix[0]; k++) {
    char p[4200];
    snprintf(p, sizeof p, "%s%s", path, suffix[k]);
    remove(p);
  }
  FILE *fb = fopen(bin, "wb");
  if (!fb) {
    fprintf(stderr, "pagedb-tokgen: %s: %s\n", bin, strerror(errno));
    return 1;
  }
  pagedb *db = NULL;
  pagedb_writer *wr = NULL;
  int rc = pagedb_open(path, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, NULL);
  if (rc != PAGEDB_OK) return die(db, path, rc);
  int64_t var = PAGEDB_DIM_VAR;
  rc = pagedb_field_add_tensor(db, "tokens", PAGEDB_DT_UINT16, 1, &var, codec, 0);
  if (rc == PAGEDB_OK) rc = pagedb_field_add(db, "label", PAGEDB_INT, PAGEDB_CODEC_NONE);
  if (rc == PAGEDB_OK) rc = pagedb_writer_open(db, &wr);
  if (rc != PAGEDB_OK) return die(db, "schema", rc);
  uint16_t *buf = malloc(sizeof(uint16_t) * wl_max_size(&w));
  if (!buf) return die(db, "buffer", PAGEDB_NOMEM);
  long long total = 0;
  for (int64_t i = 0; i < w.count && rc == PAGEDB_OK; i++) {
    uint64_t n = wl_size(&w, i);
    wl_tokens(&w, i, buf, n);
    if (fwrite(buf, sizeof *buf, n, fb) != n) {
      fprintf(stderr, "pagedb-tokgen: %s: %s\n", bin, strerror(errno));
      return 1;
    }
    total += (long long)n;
    int64_t shape = (int64_t)n;
    rc = pagedb_sample_begin(wr, i);
    if (rc == PAGEDB_OK) rc = pagedb_put_tensor(wr, 0, PAGEDB_DT_UINT16, 1, &shape, buf, n * sizeof *buf);
    if (rc == PAGEDB_OK) rc = pagedb_put_int(wr, 1, wl_label(&w, i));
    if (rc == PAGEDB_OK) rc = pagedb_sample_end(wr, NULL);
    if (rc == PAGEDB_OK && (i + 1) % COMMIT_EVERY == 0) {
      rc = pagedb_writer_flush(wr);
      if (rc == PAGEDB_OK) rc = pagedb_commit(db);
    }
  }
  if (rc != PAGEDB_OK) return die(db, "writing", rc);
  rc = pagedb_writer_close(wr);
  if (rc == PAGEDB_OK) rc = pagedb_commit(db);
  if (rc != PAGEDB_OK) return die(db, "commit", rc);
  rc = pagedb_close(db);
  if (rc != PAGEDB_OK) return die(NULL, "close", rc);
  if (fclose(fb) != 0) {
    fprintf(stderr, "pagedb-tokgen: %s: %s\n", bin, strerror(errno));
    return 1;
  }
  free(buf);
  wl_free(&w);
  char cp[4200], ix[4200];
  snprintf(cp, sizeof cp, "%s-catalog", path);
  snprintf(ix, sizeof ix, "%s-index", path);
  long long data = file_bytes(path), cat = file_bytes(cp);
  printf("documents %lld tokens %lld\n", (long long)w.count, total);
  printf("pagedb data %lld catalog %lld index %lld total %lld bytes\n", data, cat, file_bytes(ix),
         data + cat + file_bytes(ix));
  printf("bin %lld bytes\n", file_bytes(bin));
  return 0;
}
