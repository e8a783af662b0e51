/*
** replay.c -- a fuzz target without libFuzzer: main() feeds
** LLVMFuzzerTestOneInput each file named on the command line, in turn, and
** exits 0 if none crashed (a crash is the target's abort or the
** sanitizer's).  test/fuzz.test replays the committed corpora this way in
** the normal build.
*/
#include "fuzz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  size_t cap = 0;
  *n = 0;
  if (!f) {
    fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
    exit(2);
  }
  for (;;) {
    if (*n == cap) {
      cap = cap ? cap * 2 : 4096;
      buf = realloc(buf, cap);
      if (!buf) exit(2);
    }
    size_t k = fread(buf + *n, 1, cap - *n, f);
    if (k == 0) break;
    *n += k;
  }
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    size_t n;
    uint8_t *data = slurp(argv[i], &n);
    /* The input in a buffer of its own size, as libFuzzer gives it. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) return 2;
    memcpy(exact, data, n);
    free(data);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
  }
  printf("replayed %d inputs\n", argc - 1);
  return 0;
}
