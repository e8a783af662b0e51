/*
** workload.h -- the benchmark workloads of shared/WORKLOADS.md.
**
** A workload is a pure function of (workload, seed, sample id): the size,
** label and bytes of any sample are produced in O(1) without generating the
** others, so a writer thread can make sample i on its own and a reader can
** verify sample i on its own.
**
**   name     samples    field  size of that field                     bytes
**   W-img     20,000    image  lognormal, median 64 KiB, sigma 0.6,
**                              clamped to [1 KiB, 1 MiB]              incompressible
**   W-small 1,000,000   text   uniform integer in [200, 2048]         English-like text
**   W-big         64    clip   uniform integer in [8 MiB, 48 MiB]     incompressible
**   W-emb   1,000,000   emb    768 float32 (3,072 bytes), fixed        normal-like floats
**   W-tokens 360,000    tokens lognormal, median 1,000 tokens, sigma   uint16 token ids
**                              0.8, clamped to [16, 32,768] (~500M    next(s) mod 50,257
**                              tokens in all; sizes in tokens)        (wl_tokens)
**
** W-emb's value is a tensor (wl_emb): its bytes, as wl_fill writes them,
** are the 768 float32 little-endian; it has no pool.
**
** Every sample also has an integer `label` in [0, 1000).
**
** Threads.  wl_parse() builds the workload's 8 MiB pool; after it returns,
** every other function may be called from any number of threads at once
** (they only read the wl_t).  wl_free() must not run concurrently with them.
*/
#ifndef PAGEDB_WORKLOAD_H
#define PAGEDB_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#define WL_DEFAULT_SEED  42
#define WL_POOL_BITS     23                      /* the pool is 8 MiB */
#define WL_POOL_SIZE     ((size_t)1 << WL_POOL_BITS)

/* Size distributions. */
#define WL_LOGNORMAL  1
#define WL_UNIFORM    2

/* Pool kinds. */
#define WL_POOL_RANDOM  1   /* successive next(s), s = seed ^ 0xb17e5 */
#define WL_POOL_TEXT    2   /* English-like text, see workload.c */
#define WL_POOL_NONE    3   /* W-emb: values computed, not copied */

#define WL_EMB_DIM    768   /* W-emb's floats per sample */

typedef struct wl_t {
  char name[16];        /* "W-img", "W-small", "W-big", "W-emb", "W-tokens" */
  int wid;              /* 1 W-img, 2 W-small, 3 W-big, 4 W-emb, 5 W-tokens: part of every stream */
  int64_t count;        /* number of samples (the default or the :N override) */
  uint64_t seed;        /* WL_DEFAULT_SEED unless given */
  const char *field;    /* name of the variable-length field: "image"... */
  int fieldText;        /* 1 if that field is text (W-small), else bytes */
  int tokens;           /* 1 for W-tokens: sizes count uint16 tokens, made by wl_tokens */
  int dist;             /* WL_LOGNORMAL or WL_UNIFORM */
  double median, sigma; /* lognormal parameters */
  uint64_t lo, hi;      /* clamp bounds (lognormal) or range (uniform) */
  int poolKind;         /* WL_POOL_RANDOM or WL_POOL_TEXT */
  uint64_t base[4];     /* mix64(seed ^ wid<<56 ^ salt<<48) for salt 1..3 */
  uint8_t *pool;        /* WL_POOL_SIZE bytes; owned; NULL before wl_parse
                        ** (and for WL_POOL_NONE) */
} wl_t;

/*
** Parse SPEC, "NAME" or "NAME:COUNT" (NAME is W-img, W-small, W-big or W-tokens,
** matched without regard to case; COUNT a positive integer), into *W with
** seed WL_DEFAULT_SEED, and build its pool.  Returns 0 on success; -1 for
** a bad spec (W is left empty) and -2 when the pool cannot be allocated.
** Free with wl_free().
*/
int wl_parse(const char *spec, wl_t *w);

/* As wl_parse, with seed SEED. */
int wl_parse_seed(const char *spec, uint64_t seed, wl_t *w);

/* Release the pool of W (NULL or never parsed: harmless). */
void wl_free(wl_t *w);

/* The size in bytes of the variable-length field of sample I (I >= 0). */
uint64_t wl_size(const wl_t *w, int64_t i);

/* The label of sample I, in [0, 1000). */
int64_t wl_label(const wl_t *w, int64_t i);

/* The largest size wl_size can return (the clamp or range upper bound). */
uint64_t wl_max_size(const wl_t *w);

/*
** Write the first LEN bytes of sample I to BUF: bytes 0-7 are I and bytes
** 8-15 are LEN (little-endian uint64; cut short if LEN < 16), the rest come
** from the pool starting at offset next(state(I,3)) mod 2^23, wrapping.
** Byte 16 of the sample is pool[start].  LEN is normally wl_size(w, I).
*/
void wl_fill(const wl_t *w, int64_t i, uint8_t *buf, size_t len);

/*
** Compare BUF of LEN bytes against sample I: 0 if LEN is wl_size(w, I) and
** every byte matches, else 1.  Costs about one memcmp of LEN bytes.
*/
int wl_check(const wl_t *w, int64_t i, const uint8_t *buf, size_t len);

/* W-emb's sample I: its WL_EMB_DIM floats into OUT, value k the float32
** of unit(s) + unit(s) + unit(s) - 1.5 for s = state(I, 3). */
void wl_emb(const wl_t *w, int64_t i, float *out);
/* W-tokens: the N = wl_size(w, I) tokens of document I into OUT: token j
** is next(s) mod WL_VOCAB for successive draws from s = state(I, 3). */
#define WL_VOCAB 50257
void wl_tokens(const wl_t *w, int64_t i, uint16_t *out, size_t n);

/* The exact primitives of WORKLOADS.md, for tools that need a stream. */
uint64_t wl_mix64(uint64_t z);
uint64_t wl_next(uint64_t *s);
double wl_unit(uint64_t *s);
uint64_t wl_state(const wl_t *w, int64_t i, int salt);

#endif /* PAGEDB_WORKLOAD_H */
