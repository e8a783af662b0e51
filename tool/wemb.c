/*
** wemb.c -- pagedb-wemb: make W-emb (shared/WORKLOADS.md; workload.c's
** wl_emb) twice, for python/bench/bench_emb.py:
**
**   DIR/w-emb.pagedb  a dataset of one tensor field emb, float32 (768,),
**                     stored as given (zero-copy reads), ids 0..N-1;
**   DIR/w-emb.f32     the same values as one flat file of N x 768 float32,
**                     what numpy.memmap reads.
**
** Usage: pagedb-wemb DIR [W-emb[:N]].  Existing files are replaced.  The
** values are computed in C (three splitmix64 draws a float): the whole
** W-emb takes seconds where NumPy took minutes.
*/
#include "pagedb.h"
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fail(const char *what, const char *path, int rc, pagedb *db) {
  fprintf(stderr, "pagedb-wemb: %s %s: %s (%s)\n", what, path, pagedb_errname(rc), db ? pagedb_errmsg(db) : "");
  exit(1);
}

int main(int argc, char **argv) {
  wl_t w;
  if (argc < 2 || argc > 3 || wl_parse(argc > 2 ? argv[2] : "W-emb", &w) || strcmp(w.name, "W-emb") != 0) {
    fprintf(stderr, "usage: pagedb-wemb DIR [W-emb[:N]]\n");
    return 2;
  }
  char dsp[4096], rawp[4096], p[4200];
  snprintf(dsp, sizeof dsp, "%s/w-emb.pagedb", argv[1]);
  snprintf(rawp, sizeof rawp, "%s/w-emb.f32", argv[1]);
  static const char *const sfx[] = { "", "-catalog", "-index" };
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", dsp, sfx[i]);
    unlink(p);
  }
  FILE *raw = fopen(rawp, "wb");
  if (!raw) {
    perror(rawp);
    return 1;
  }
  pagedb *db = NULL;
  pagedb_writer *pw = NULL;
  int64_t dim = WL_EMB_DIM;
  float v[WL_EMB_DIM];
  int rc = pagedb_open(dsp, &db, PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE, NULL);
  if (!rc) rc = pagedb_field_add_tensor(db, "emb", PAGEDB_DT_FLOAT32, 1, &dim, PAGEDB_CODEC_NONE, 0);
  if (!rc) rc = pagedb_writer_open(db, &pw);
  for (int64_t i = 0; !rc && i < w.count; i++) {
    wl_emb(&w, i, v);
    if (fwrite(v, sizeof v, 1, raw) != 1) {
      perror(rawp);
      return 1;
    }
    rc = pagedb_sample_begin(pw, i);
    if (!rc) rc = pagedb_put_tensor(pw, 0, PAGEDB_DT_FLOAT32, 1, &dim, v, sizeof v);
    if (!rc) rc = pagedb_sample_end(pw, NULL);
  }
  if (!rc) rc = pagedb_writer_close(pw);
  if (!rc) rc = pagedb_commit(db);
  if (rc) fail("making", dsp, rc, db);
  if (fclose(raw) != 0) {
    perror(rawp);
    return 1;
  }
  pagedb_close(db);
  wl_free(&w);
  printf("%s: %lld samples of %d float32; %s\n", dsp, (long long)w.count, WL_EMB_DIM, rawp);
  return 0;
}
