/*
** forgechunk.c -- plant a forged chunk in a shared chunk cache, as a
** member of the cache's group who can read the dataset could (issue 30):
** such a member derives the object's keys like any reader (vfs/cache.c,
** invariant 7), so the forgery's seal verifies; only the dataset's own
** checksums, fetched over the authenticated connection (invariant 8),
** catch it.  Used by test/cache-private.test, test/creds.test and
** test/partsremote.test.
**
**   forgechunk URL OFFSET [STRIDE]
**
** holds the chunk of object URL that byte OFFSET lies in (through the
** cache the environment configures: PAGEDB_CACHE_DIR, PAGEDB_CACHE_SHARED,
** PAGEDB_CACHE_CHUNK, the S3 settings), flips every byte at OFFSET,
** OFFSET+STRIDE, ... to the end of that chunk (STRIDE default 4096, so a
** value there is surely hit), seals the result with the object's key and
** puts it in place of the chunk's file.  Prints the chunk's number; exits
** 1 with a message on failure.  Linked with the static library: it calls
** the cache's internal functions.
*/
#include "../vfs/remote.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: forgechunk URL OFFSET [STRIDE]\n");
    return 2;
  }
  uint64_t off = strtoull(argv[2], NULL, 10), stride = argc == 4 ? strtoull(argv[3], NULL, 10) : 4096;
  char msg[RMT_ERR_MAX];
  RmtObject *o = NULL;
  RcObj *c = NULL;
  int rc = rmt_open(argv[1], &o, msg, sizeof msg);
  if (rc == PAGEDB_OK) rc = rc_open(o, &c, msg, sizeof msg);
  if (rc == PAGEDB_OK && (off >= rmt_size(o) || stride == 0)) {
    snprintf(msg, sizeof msg, "offset %llu past the object's %llu bytes", (unsigned long long)off,
             (unsigned long long)rmt_size(o));
    rc = PAGEDB_RANGE;
  }
  uint64_t k = 0;
  if (rc == PAGEDB_OK) {
    RcHeld h;
    k = off / rc_chunk_size(c);
    rc = rc_hold(c, &k, 1, NULL, &h, msg, sizeof msg);
    if (rc == PAGEDB_OK) {
      uint8_t *b = malloc(h.len ? h.len : 1);
      if (!b) {
        rc = PAGEDB_NOMEM;
        snprintf(msg, sizeof msg, "out of memory");
      } else {
        memcpy(b, h.data, h.len);
        for (uint64_t at = off - k * rc_chunk_size(c); at < h.len; at += stride) b[at] ^= 0xff;
        rc = rc_put_sealed(c, k, b, h.len);
        if (rc != PAGEDB_OK) snprintf(msg, sizeof msg, "not a shared cache (PAGEDB_CACHE_SHARED=1)");
        free(b);
      }
      rc_release(&h, 0);
    }
  }
  rc_close(c);
  rmt_close(o);
  if (rc != PAGEDB_OK) {
    fprintf(stderr, "forgechunk: %s: %s\n", argv[1], msg);
    return 1;
  }
  printf("%llu\n", (unsigned long long)k);
  return 0;
}
