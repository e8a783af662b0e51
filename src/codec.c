/*
** codec.c -- lz4 and zstd compression of field values, zstd dictionaries.
**
** An lz4 value is one raw lz4 block (no frame): its stored and raw lengths
** live in the catalog, so a frame's headers would only repeat them.  A
** zstd value is one zstd frame with its content size (and, for a
** dictionary codec, the id of its dictionary: doc/format.md), no checksum
** (the extent has one).
**
** Compression runs in the writer's thread with the writer's own state, so
** writers scale.  The state remembers which kind it was last set up for:
** lz4hc's 256 KiB state is initialised once and then only reset
** (LZ4_resetStreamHC_fast), which saved 2 us of a 1 KiB value's 8 us.
** lz4's own state is initialised on every call (LZ4_compress_fast_extState):
** the exported fast reset would use the 32-bit hash table, which compresses
** small values worse.  zstd's context is allocated on first use and kept in
** the state (codec_state_clear frees it).
**
** Decompression never reads or writes outside the buffers it is given,
** whatever the input (LZ4_decompress_safe; ZSTD_decompressDCtx into exactly
** RAW bytes), and the caller requires the exact raw length: a damaged value
** fails cleanly.  A zstd frame must also say it holds exactly RAW bytes.
** Each thread keeps one zstd decompression context (a pthread key frees it
** when the thread ends), so reads allocate nothing after the first.
*/
#include "codec.h"

#include <lz4.h>
#include <lz4hc.h>
#include <pthread.h>
#include <stdio.h>
#define ZDICT_STATIC_LINKING_ONLY   /* ZDICT_trainFromBuffer_fastCover and its parameters */
#include <zdict.h>
#include <zstd.h>

#define ZSTD_DICT_MAGIC 0xEC30A437u

int codec_uses_dict(int codec) { return PAGEDB_CODEC_KIND(codec) == PAGEDB_CODEC_ZSTD_DICT; }

int codec_check(int type, int codec, int *norm) {
  int kind = PAGEDB_CODEC_KIND(codec), level = PAGEDB_CODEC_LEVEL_OF(codec);
  switch (kind) {
    case PAGEDB_CODEC_NONE:
      if (level != 0) return 0;
      break;
    case PAGEDB_CODEC_LZ4:
      if (level == 0) level = 1;
      if (level < 0 || level > 65537) return 0;   /* LZ4_ACCELERATION_MAX */
      break;
    case PAGEDB_CODEC_LZ4HC:
      if (level == 0) level = LZ4HC_CLEVEL_DEFAULT;
      if (level < 0 || level > LZ4HC_CLEVEL_MAX) return 0;
      break;
    case PAGEDB_CODEC_ZSTD:
    case PAGEDB_CODEC_ZSTD_DICT:
      if (level == 0) level = ZSTD_CLEVEL_DEFAULT;
      if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) return 0;
      break;
    default:
      return 0;
  }
  if (kind != PAGEDB_CODEC_NONE && type != PAGEDB_BYTES && type != PAGEDB_TEXT && type != PAGEDB_TENSOR) return 0;
  *norm = PAGEDB_CODEC_LEVEL(kind, level);
  return 1;
}

static const char *kind_name[] = {"none", "lz4", "lz4hc", "zstd", "zstd-dict"};
#define NKIND ((int)(sizeof kind_name / sizeof kind_name[0]))

void codec_name(int codec, char *out, size_t n) {
  int kind = PAGEDB_CODEC_KIND(codec);
  if (kind == PAGEDB_CODEC_NONE) snprintf(out, n, "none");
  else if (kind < NKIND) snprintf(out, n, "%s:%d", kind_name[kind], PAGEDB_CODEC_LEVEL_OF(codec));
  else snprintf(out, n, "unknown(%d)", codec);
}

int codec_parse(const char *name, int *codec) {
  if (!name) return 0;
  if (strcmp(name, "none") == 0) {
    *codec = PAGEDB_CODEC_NONE;
    return 1;
  }
  const char *colon = strchr(name, ':');
  if (!colon) return 0;
  int kind = -1;
  for (int k = 1; k < NKIND; k++)
    if (strlen(kind_name[k]) == (size_t)(colon - name) && strncmp(name, kind_name[k], (size_t)(colon - name)) == 0) kind = k;
  if (kind < 0) return 0;
  const char *p = colon + 1;
  int neg = *p == '-' && kind >= PAGEDB_CODEC_ZSTD;
  if (neg) p++;
  int level = 0, digits = 0;
  for (; *p >= '0' && *p <= '9' && level < 1000000; p++, digits++) level = level * 10 + (*p - '0');
  if (*p || digits == 0 || level == 0) return 0;
  return codec_check(PAGEDB_BYTES, PAGEDB_CODEC_LEVEL(kind, neg ? -level : level), codec);
}

int codec_fits(size_t n) { return n <= LZ4_MAX_INPUT_SIZE; }

uint64_t codec_max_raw(int codec, uint64_t stored) {
  int kind = PAGEDB_CODEC_KIND(codec);
  if (kind == PAGEDB_CODEC_ZSTD || kind == PAGEDB_CODEC_ZSTD_DICT)
    return stored < (UINT64_MAX >> 16) ? stored * (ZSTD_BLOCKSIZE_MAX / 4) : UINT64_MAX;
  return stored < LZ4_MAX_INPUT_SIZE / 255 ? stored * 255 + 16 : LZ4_MAX_INPUT_SIZE;
}

/* The state: the kind it is set up for (0 when zeroed) and zstd's context,
** then lz4's state. */
typedef struct State { int set_up; ZSTD_CCtx *zc; } State;
#define STATE_HDR 16
_Static_assert(sizeof(State) <= STATE_HDR, "the state's header fits");

size_t codec_state_size(int codec) {
  switch (PAGEDB_CODEC_KIND(codec)) {
    case PAGEDB_CODEC_LZ4: return STATE_HDR + (size_t)LZ4_sizeofState();
    case PAGEDB_CODEC_LZ4HC: return STATE_HDR + (size_t)LZ4_sizeofStateHC();
    case PAGEDB_CODEC_ZSTD: case PAGEDB_CODEC_ZSTD_DICT: return STATE_HDR;
    default: return 0;
  }
}

void codec_state_clear(void *state) {
  if (!state) return;
  State *s = state;
  ZSTD_freeCCtx(s->zc);
  s->zc = NULL;
}

size_t codec_compress(int codec, void *state, const void *dict, const void *src, size_t n, void *dst, size_t cap) {
  if (n > LZ4_MAX_INPUT_SIZE || cap == 0) return 0;
  int c = cap > (size_t)INT32_MAX ? INT32_MAX : (int)cap;
  int kind = PAGEDB_CODEC_KIND(codec), level = PAGEDB_CODEC_LEVEL_OF(codec), got = 0;
  State *s = state;
  void *lz = (char *)state + STATE_HDR;
  if (kind == PAGEDB_CODEC_LZ4) {
    got = LZ4_compress_fast_extState(lz, src, dst, (int)n, c, level);
    s->set_up = kind;
  } else if (kind == PAGEDB_CODEC_LZ4HC) {
    if (s->set_up != kind) LZ4_initStreamHC(lz, (size_t)LZ4_sizeofStateHC());
    s->set_up = kind;
    /* A reset stream holds no history: the value is compressed on its own.
    ** A failed call marks the stream, and the next reset initialises it. */
    LZ4_resetStreamHC_fast(lz, level);
    got = LZ4_compress_HC_continue(lz, src, dst, (int)n, c);
  } else if (kind == PAGEDB_CODEC_ZSTD || kind == PAGEDB_CODEC_ZSTD_DICT) {
    if (kind == PAGEDB_CODEC_ZSTD_DICT && !dict) return 0;
    if (!s->zc && !(s->zc = ZSTD_createCCtx())) return 0;
    /* Either call starts a new frame: no history from the last value.
    ** Both write the content size; the dictionary's call its id too. */
    size_t z = kind == PAGEDB_CODEC_ZSTD ? ZSTD_compressCCtx(s->zc, dst, cap, src, n, level)
                                         : ZSTD_compress_usingCDict(s->zc, dst, cap, src, n, dict);
    return ZSTD_isError(z) ? 0 : z;
  }
  return got > 0 ? (size_t)got : 0;
}

/* --- decompression: one context a thread ------------------------------------ */

static pthread_key_t dctx_key;
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;
static int dctx_key_ok;

static void dctx_free(void *p) { ZSTD_freeDCtx(p); }
static void dctx_init(void) { dctx_key_ok = pthread_key_create(&dctx_key, dctx_free) == 0; }

/* This thread's decompression context, NULL when out of memory. */
static ZSTD_DCtx *thread_dctx(void) {
  pthread_once(&dctx_once, dctx_init);
  if (!dctx_key_ok) return NULL;
  ZSTD_DCtx *d = pthread_getspecific(dctx_key);
  if (!d && (d = ZSTD_createDCtx()) != NULL && pthread_setspecific(dctx_key, d) != 0) {
    ZSTD_freeDCtx(d);
    d = NULL;
  }
  return d;
}

int codec_decompress(int codec, const void *dict, const void *src, size_t n, void *dst, size_t raw) {
  int kind = PAGEDB_CODEC_KIND(codec);
  if (kind == PAGEDB_CODEC_ZSTD || kind == PAGEDB_CODEC_ZSTD_DICT) {
    if ((kind == PAGEDB_CODEC_ZSTD_DICT) != (dict != NULL)) return 0;
    /* The frame must say it holds RAW bytes (it always does when a writer
    ** made it), and must be the value's only frame. */
    if (ZSTD_getFrameContentSize(src, n) != (unsigned long long)raw) return 0;
    if (ZSTD_findFrameCompressedSize(src, n) != n) return 0;
    ZSTD_DCtx *d = thread_dctx();
    if (!d) return 0;
    size_t got = dict ? ZSTD_decompress_usingDDict(d, dst, raw, src, n, dict) : ZSTD_decompressDCtx(d, dst, raw, src, n);
    return !ZSTD_isError(got) && got == raw;
  }
  if (kind != PAGEDB_CODEC_LZ4 && kind != PAGEDB_CODEC_LZ4HC) return 0;
  if (n > (size_t)INT32_MAX || raw > (size_t)INT32_MAX) return 0;
  return LZ4_decompress_safe(src, dst, (int)n, (int)raw) == (int)raw;
}

/* --- dictionaries ------------------------------------------------------------ */

uint32_t codec_value_dict(const void *src, size_t n) { return (uint32_t)ZSTD_getDictID_fromFrame(src, n); }

uint32_t codec_dict_id(const void *d, size_t n) { return (uint32_t)ZSTD_getDictID_fromDict(d, n); }

size_t codec_dict_train(void *dst, size_t cap, const void *samples, const size_t *sizes, unsigned ns, uint32_t id,
                        int level) {
  /* fastCover with zstd --train's d=8 and f=20, and k=200 fixed rather
  ** than searched: on 2000 W-small samples the search (what zstd --train
  ** does) took 2.4 s for a dictionary that compresses the next 10,000 to
  ** 2.233x, k=200 alone 0.44 s for 2.253x (doc/benchmarks.md). */
  ZDICT_fastCover_params_t p;
  memset(&p, 0, sizeof p);
  p.k = 200;
  p.d = 8;
  p.f = 20;
  p.accel = 1;
  p.splitPoint = 1.0;
  p.zParams.compressionLevel = level;
  p.zParams.dictID = id;
  size_t got = ZDICT_trainFromBuffer_fastCover(dst, cap, samples, sizes, ns, p);
  if (ZDICT_isError(got)) return 0;
  return codec_dict_id(dst, got) == id ? got : 0;
}

int codec_dict_set_id(void *d, size_t n, uint32_t id) {
  uint8_t *b = d;
  if (n < 8 || b[0] != 0x37 || b[1] != 0xA4 || b[2] != 0x30 || b[3] != 0xEC) return 0;
  b[4] = (uint8_t)id; b[5] = (uint8_t)(id >> 8); b[6] = (uint8_t)(id >> 16); b[7] = (uint8_t)(id >> 24);
  return 1;
}

void *codec_cdict(const void *d, size_t n, int level) {
  if (codec_dict_id(d, n) == 0) return NULL;
  return ZSTD_createCDict(d, n, level);
}

void *codec_ddict(const void *d, size_t n) {
  if (codec_dict_id(d, n) == 0) return NULL;
  return ZSTD_createDDict(d, n);
}

void codec_cdict_free(void *cd) { ZSTD_freeCDict(cd); }
void codec_ddict_free(void *dd) { ZSTD_freeDDict(dd); }
