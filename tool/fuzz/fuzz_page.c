/*
** fuzz_page.c -- a run as the data file holds it, decoded as the engine
** decodes it: the run header (pager_run_header, which pagedb_check and
** pagedb_attach use), the run's data checksum, and its records' extents,
** each compressed one decompressed to the raw length its catalog row
** records (codec_decompress, as the reader and the check do).
**
** The input:
**
**   byte 0        the codec of the extents: bit 0 lz4hc, level from bits
**                 1..7; else bit 1 zstd, level from bits 3..7 (-3..28,
**                 clamped to 22), with bit 2 zstd-dict: the extents are
**                 decompressed with two dictionaries, a sound one (trained
**                 once on fixed sentences) and one whose bytes are the
**                 run's last 2 KiB after a zstd dictionary's magic and id
**                 (a damaged dictionary, which must be refused or merely
**                 give wrong bytes, never crash); else lz4, level from
**                 bits 2..7
**   byte 1        K: extents (K % 17 of them)
**   K x 9 bytes   each extent's stored length and raw length (4 bytes
**                 each, little-endian) and 1 if it is compressed
**   the rest      the run: its 64-byte header, then the records
**
** The extents lie back to back from the end of the header, as a run's
** records do, and stop at the first that would pass the bytes the run
** uses (the open refuses such a row).  What must hold, whatever the bytes:
**   - a compressed extent that decompresses to its raw length is one
**     codec_max_raw allows (pagedb_check trusts that bound), and
**     does not fit in one byte less;
**   - an extent stored as given, compressed as a writer would (only if it
**     shrinks), decompresses to itself.
*/
#include "fuzz.h"

#include "codec.h"
#include "pager.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EXTENTS   16
#define MAX_RAW       (1u << 20)   /* raw lengths tried: a bound on the time an input takes */
#define MAX_ROUNDTRIP (64u << 10)

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) abort();
  return p;
}

/* A compressed extent SRC[0..LEN) of RAW bytes. */
static void inflate(int codec, const void *dict, const uint8_t *src, size_t len, uint32_t raw) {
  if (raw > MAX_RAW) return;
  uint8_t *out = xmalloc(raw);    /* exactly RAW bytes: ASan sees one more */
  int ok = codec_decompress(codec, dict, src, len, out, raw);
  if (ok && raw > codec_max_raw(codec, len)) {
    fprintf(stderr, "fuzz_page: %zu bytes decompress to %u, more than codec_max_raw allows\n", len, raw);
    abort();
  }
  if (ok && raw > 0 && codec_decompress(codec, dict, src, len, out, raw - 1)) {
    fprintf(stderr, "fuzz_page: %zu bytes decompress to both %u and %u bytes\n", len, raw, raw - 1);
    abort();
  }
  free(out);
}

/* The sound dictionary of the zstd-dict codec (NULL for the others): its
** prepared CDict (WANT_C) or DDict, trained once from fixed sentences. */
static const void *sound_dict(int codec, int want_c) {
  static void *cd, *dd;
  if (!codec_uses_dict(codec)) return NULL;
  if (!dd) {
    static const char *words[] = {"the", "page", "holds", "records", "of", "samples", "back", "to", "a", "reader",
                                  "checks", "every", "extent", "against", "its", "checksum", "when", "asked"};
    enum { NS = 400, SZ = 120 };
    static char buf[NS * SZ];
    static size_t sizes[NS];
    uint32_t x = 12345;
    for (int i = 0; i < NS; i++) {
      char *p = buf + i * SZ;
      size_t at = 0;
      while (at < SZ - 12) {
        x = x * 1103515245u + 12345u;
        const char *w = words[(x >> 16) % (sizeof words / sizeof words[0])];
        size_t l = strlen(w);
        memcpy(p + at, w, l);
        p[at + l] = ' ';
        at += l + 1;
      }
      sizes[i] = at;
    }
    /* Packed: the samples back to back. */
    size_t tot = 0;
    for (int i = 0; i < NS; i++) {
      memmove(buf + tot, buf + i * SZ, sizes[i]);
      tot += sizes[i];
    }
    static uint8_t dict[8192];
    size_t n = codec_dict_train(dict, sizeof dict, buf, sizes, NS, 40000, 3);
    if (n == 0) abort();
    cd = codec_cdict(dict, n, 3);
    dd = codec_ddict(dict, n);
    if (!cd || !dd) abort();
  }
  return want_c ? cd : dd;
}

/* A dictionary made of the last 2 KiB of the run after a zstd dictionary's
** magic and id 40000: hostile entropy tables and content.  NULL when zstd
** refuses it (as pagedb does at open); free with codec_ddict_free. */
static void *damaged_ddict(const uint8_t *run, size_t n) {
  size_t take = n < 2048 ? n : 2048;
  uint8_t *d = xmalloc(8 + take);
  static const uint8_t hdr[8] = {0x37, 0xA4, 0x30, 0xEC, 0x40, 0x9C, 0x00, 0x00};
  memcpy(d, hdr, 8);
  memcpy(d + 8, run + n - take, take);
  void *dd = codec_ddict(d, 8 + take);
  free(d);
  return dd;
}

/* The compression state, kept from one input to the next as a writer keeps
** its own from one value to the next (codec.c resets it per value, and
** sets it up again when the codec's kind changes): zeroed once. */
static void *compress_state(void) {
  static void *state;
  if (!state) {
    size_t a = codec_state_size(PAGEDB_CODEC_LZ4), b = codec_state_size(PAGEDB_CODEC_LZ4HC);
    size_t n = ((a > b ? a : b) + 15) & ~(size_t)15;
    state = aligned_alloc(16, n);
    if (!state) abort();
    memset(state, 0, n);
  }
  return state;
}

/* An extent stored as given: compress it as a writer would, and back. */
static void round_trip(int codec, const uint8_t *src, size_t len) {
  if (len < 2 || len > MAX_ROUNDTRIP) return;
  void *state = compress_state();
  uint8_t *z = xmalloc(len - 1), *back = xmalloc(len);
  size_t zn = codec_compress(codec, state, sound_dict(codec, 1), src, len, z, len - 1);
  if (zn > 0 && (!codec_decompress(codec, sound_dict(codec, 0), z, zn, back, len) || memcmp(back, src, len) != 0)) {
    fprintf(stderr, "fuzz_page: %zu bytes compressed to %zu do not decompress to themselves\n", len, zn);
    abort();
  }
  free(z);
  free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  if (n < 2) return 0;
  int zl = (data[0] >> 3) - 3;
  int codec = data[0] & 1   ? PAGEDB_CODEC_LEVEL(PAGEDB_CODEC_LZ4HC, 1 + (data[0] >> 1) % 12)
              : data[0] & 2 ? PAGEDB_CODEC_LEVEL(data[0] & 4 ? PAGEDB_CODEC_ZSTD_DICT : PAGEDB_CODEC_ZSTD,
                                                 zl > 22 ? 22 : zl)
                            : PAGEDB_CODEC_LEVEL(PAGEDB_CODEC_LZ4, 1 + (data[0] >> 2));
  int k = data[1] % (MAX_EXTENTS + 1);
  const uint8_t *ext = data + 2;
  if (n < 2 + (size_t)k * 9 + PDB_PAGE_HDR) return 0;
  const uint8_t *run = ext + k * 9;
  size_t nrun = n - 2 - (size_t)k * 9;

  RunHeader h;
  pager_run_header(run, &h);
  /* The bytes the run uses: as its header says, when the input holds them. */
  uint64_t used = h.used >= PDB_PAGE_HDR && h.used <= nrun ? h.used : nrun;
  volatile int data_ok = pdb_sum(run + PDB_PAGE_HDR, (size_t)(used - PDB_PAGE_HDR)) == h.datasum;
  (void)data_ok;

  void *bad = codec_uses_dict(codec) ? damaged_ddict(run, nrun) : NULL;
  uint64_t off = PDB_PAGE_HDR;
  for (int i = 0; i < k; i++, ext += 9) {
    uint32_t len = fz_get32(ext), raw = fz_get32(ext + 4);
    if (len > used - off) break;
    volatile uint64_t sum = pdb_sum(run + off, len);
    (void)sum;
    if (ext[8] & 1) {
      inflate(codec, sound_dict(codec, 0), run + off, len, raw);
      if (bad) inflate(codec, bad, run + off, len, raw);
    } else {
      round_trip(codec, run + off, len);
    }
    off += len;
  }
  codec_ddict_free(bad);
  return 0;
}
