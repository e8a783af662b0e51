/*
** codec.c -- lz4 compression of field values, and checksums.
**
** A compressed value is one raw lz4 block (no frame): its stored and raw
** lengths live in the catalog, so a frame's headers would only repeat
** them.  Compression runs in the writer's thread with the writer's own
** state, so writers scale and no call allocates.  The state remembers
** which kind it was last set up for: lz4hc's 256 KiB state is initialised
** once and then only reset (LZ4_resetStreamHC_fast), which saved 2 us of a
** 1 KiB value's 8 us.  lz4's own state is initialised on every call
** (LZ4_compress_fast_extState): the exported fast reset would use the
** 32-bit hash table, which compresses small values worse.  Decompression is LZ4_decompress_safe, which never
** reads or writes outside the buffers it is given, whatever the input: a
** damaged value fails cleanly, and the caller also requires the exact raw
** length.
*/
#include "codec.h"

#include <lz4.h>
#include <lz4hc.h>
#include <stdio.h>

int codec_check(int type, int codec, int *norm) {
  int kind = PAGEDB_CODEC_KIND(codec), level = PAGEDB_CODEC_LEVEL_OF(codec);
  if (codec < 0) return 0;
  switch (kind) {
    case PAGEDB_CODEC_NONE:
      if (level != 0) return 0;
      break;
    case PAGEDB_CODEC_LZ4:
      if (level == 0) level = 1;
      if (level > 65537) return 0;   /* LZ4_ACCELERATION_MAX */
      break;
    case PAGEDB_CODEC_LZ4HC:
      if (level == 0) level = LZ4HC_CLEVEL_DEFAULT;
      if (level > LZ4HC_CLEVEL_MAX) return 0;
      break;
    default:
      return 0;
  }
  if (kind != PAGEDB_CODEC_NONE && type != PAGEDB_BYTES && type != PAGEDB_TEXT && type != PAGEDB_TENSOR) return 0;
  *norm = PAGEDB_CODEC_LEVEL(kind, level);
  return 1;
}

void codec_name(int codec, char *out, size_t n) {
  int kind = PAGEDB_CODEC_KIND(codec);
  if (kind == PAGEDB_CODEC_NONE) snprintf(out, n, "none");
  else snprintf(out, n, "%s:%d", kind == PAGEDB_CODEC_LZ4 ? "lz4" : "lz4hc", PAGEDB_CODEC_LEVEL_OF(codec));
}

int codec_parse(const char *name) {
  if (!name) return -1;
  if (strcmp(name, "none") == 0) return PAGEDB_CODEC_NONE;
  int kind = strncmp(name, "lz4:", 4) == 0 ? PAGEDB_CODEC_LZ4 : strncmp(name, "lz4hc:", 6) == 0 ? PAGEDB_CODEC_LZ4HC : -1;
  if (kind < 0) return -1;
  const char *p = name + (kind == PAGEDB_CODEC_LZ4 ? 4 : 6);
  int level = 0;
  for (; *p >= '0' && *p <= '9' && level < 1000000; p++) level = level * 10 + (*p - '0');
  int norm;
  if (*p || level == 0 || !codec_check(PAGEDB_BYTES, PAGEDB_CODEC_LEVEL(kind, level), &norm)) return -1;
  return norm;
}

int codec_fits(size_t n) { return n <= LZ4_MAX_INPUT_SIZE; }

uint64_t codec_max_raw(uint64_t stored) {
  return stored < LZ4_MAX_INPUT_SIZE / 255 ? stored * 255 + 16 : LZ4_MAX_INPUT_SIZE;
}

/* The state: the kind it is set up for (0 when zeroed), then lz4's. */
#define STATE_HDR 16

size_t codec_state_size(int codec) {
  switch (PAGEDB_CODEC_KIND(codec)) {
    case PAGEDB_CODEC_LZ4: return STATE_HDR + (size_t)LZ4_sizeofState();
    case PAGEDB_CODEC_LZ4HC: return STATE_HDR + (size_t)LZ4_sizeofStateHC();
    default: return 0;
  }
}

size_t codec_compress(int codec, void *state, const void *src, size_t n, void *dst, size_t cap) {
  if (n > LZ4_MAX_INPUT_SIZE || cap == 0) return 0;
  int c = cap > (size_t)INT32_MAX ? INT32_MAX : (int)cap;
  int kind = PAGEDB_CODEC_KIND(codec), level = PAGEDB_CODEC_LEVEL_OF(codec), got = 0;
  int *set_up = state;
  void *lz = (char *)state + STATE_HDR;
  if (kind == PAGEDB_CODEC_LZ4) {
    got = LZ4_compress_fast_extState(lz, src, dst, (int)n, c, level);
    *set_up = kind;
  } else if (kind == PAGEDB_CODEC_LZ4HC) {
    if (*set_up != kind) LZ4_initStreamHC(lz, (size_t)LZ4_sizeofStateHC());
    *set_up = kind;
    /* A reset stream holds no history: the value is compressed on its own.
    ** A failed call marks the stream, and the next reset initialises it. */
    LZ4_resetStreamHC_fast(lz, level);
    got = LZ4_compress_HC_continue(lz, src, dst, (int)n, c);
  }
  return got > 0 ? (size_t)got : 0;
}

int codec_decompress(const void *src, size_t n, void *dst, size_t raw) {
  if (n > (size_t)INT32_MAX || raw > (size_t)INT32_MAX) return 0;
  return LZ4_decompress_safe(src, dst, (int)n, (int)raw) == (int)raw;
}
