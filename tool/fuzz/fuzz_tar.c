/*
** fuzz_tar.c -- the shell's tar reader (shell/tar.c) on arbitrary bytes,
** plain and gzip-compressed, as .import's two passes use it: every member
** header in turn (tar_next), the data of every other regular member read
** (tar_read) and the rest skipped; then, in a plain file, the members read
** again by seeking to where the first pass found them (tar_read_at).
**
** The input: byte 0 is a set of flags (bit 0: gzip the rest before
** writing it, so that the fuzzer's mutations reach the tar inside the
** compression); the rest is the file.  What must hold: every result is a
** pagedb code with a message; a member read twice reads the same bytes.
*/
#include "fuzz.h"

#include "pagedb.h"
#include "xfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAX_MEMBERS 64      /* a bound on the time an input takes */

typedef struct Seen {
  int64_t off, size;        /* where tar_offset put its data */
  void *data;               /* as the first pass read it, or NULL */
  size_t n;
} Seen;

static void write_gzip(const char *path, const uint8_t *p, size_t n) {
  gzFile gz = gzopen(path, "wb");
  if (!gz || (n > 0 && gzwrite(gz, p, (unsigned)n) != (int)n) || gzclose(gz) != Z_OK) abort();
}

static void msg_ok(int rc, const char *msg, const char *what) {
  fz_rc(rc, what);
  if (rc != PAGEDB_OK && rc != PAGEDB_NOTFOUND && msg[0] == 0) {
    fprintf(stderr, "fuzz_tar: %s failed (%s) without a message\n", what, pagedb_errname(rc));
    abort();
  }
}

/* The second pass over a plain file: each member the first read, again. */
static void reread(const char *path, Seen *seen, int nseen) {
  char msg[512] = "";
  TarReader *r;
  int rc = tar_open(path, &r, msg, sizeof msg);
  msg_ok(rc, msg, "tar_open");
  if (rc != PAGEDB_OK) return;
  for (int i = 0; i < nseen; i++) {
    if (!seen[i].data) continue;
    void *data;
    size_t n;
    msg[0] = 0;
    rc = tar_read_at(r, "member", seen[i].off, seen[i].size, &data, &n, msg, sizeof msg);
    msg_ok(rc, msg, "tar_read_at");
    if (rc != PAGEDB_OK || n != seen[i].n || memcmp(data, seen[i].data, n) != 0) {
      fprintf(stderr, "fuzz_tar: member %d (%lld bytes at %lld) reads otherwise the second time (%s)\n", i,
              (long long)seen[i].size, (long long)seen[i].off, pagedb_errname(rc));
      abort();
    }
    free(data);
  }
  tar_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  if (n < 1) return 0;
  char path[FZ_PATH], msg[512] = "";
  fz_path(path, "t.tar");
  if (data[0] & 1) write_gzip(path, data + 1, n - 1);
  else fz_write(path, data + 1, n - 1);

  TarReader *r;
  int rc = tar_open(path, &r, msg, sizeof msg);
  msg_ok(rc, msg, "tar_open");
  if (rc != PAGEDB_OK) return 0;
  int direct = tar_direct(r);
  Seen seen[MAX_MEMBERS];
  int nseen = 0;
  TarMember m;
  while (nseen < MAX_MEMBERS) {
    msg[0] = 0;
    rc = tar_next(r, &m, msg, sizeof msg);
    msg_ok(rc, msg, "tar_next");
    if (rc != PAGEDB_OK) break;
    if (!m.name || m.size < 0 || m.kind < TAR_FILE || m.kind > TAR_OTHER) abort();
    Seen *s = &seen[nseen++];
    *s = (Seen){ .off = tar_offset(r), .size = m.size };
    if (m.kind != TAR_FILE || nseen % 2 == 0) continue;   /* skipped by the next tar_next */
    msg[0] = 0;
    rc = tar_read(r, &s->data, &s->n, msg, sizeof msg);
    msg_ok(rc, msg, "tar_read");
    if (rc != PAGEDB_OK) break;
    if ((int64_t)s->n != m.size) abort();
  }
  tar_close(r);
  if (direct) reread(path, seen, nseen);
  for (int i = 0; i < nseen; i++) free(seen[i].data);
  return 0;
}
