/*
** codec.h -- what happens to a field's bytes on the way to a page and back:
** lz4 and zstd compression, with or without a zstd dictionary.  (Their
** checksum is pdb_sum, pagedbInt.h.)
*/
#ifndef PAGEDB_CODEC_H
#define PAGEDB_CODEC_H

#include "pagedbInt.h"

/* Whether CODEC (kind and level, pagedb.h) is one this build can use on a
** field of TYPE; the level 0 ones are made explicit in *NORM. */
int codec_check(int type, int codec, int *norm);

/* The catalog's name of CODEC ("none", "lz4:1", "lz4hc:9", "zstd:-5",
** "zstd-dict:3"), and back: codec_parse sets *CODEC (normalised) and
** returns 1, or returns 0 for a name it does not know.  A valid codec may
** be negative (a zstd fast level): -1 is never one. */
void codec_name(int codec, char *out, size_t n);
int codec_parse(const char *name, int *codec);

/* Whether CODEC uses a dictionary (PAGEDB_CODEC_ZSTD_DICT). */
int codec_uses_dict(int codec);

/* Whether a value of N bytes can be compressed at all (lz4 blocks stop
** short of 2 GiB): larger ones are stored as given. */
int codec_fits(size_t n);

/* The largest raw length a compressed value of STORED bytes can have under
** CODEC: an lz4 block expands at most 255 times; a zstd block has at least
** a 3-byte header and one byte of content for its at most 128 KiB.  A
** catalog that records more is wrong, and its length must not size a
** buffer (an "lz4 bomb" of 64 GiB in 16 KiB). */
uint64_t codec_max_raw(int codec, uint64_t stored);

/* Bytes of scratch state codec_compress needs for CODEC (0 for none). */
size_t codec_state_size(int codec);

/* Free what a state holds beside its bytes (zstd's context); the bytes
** themselves belong to the caller.  NULL is a no-op. */
void codec_state_clear(void *state);

/*
** Compress the N bytes at SRC into DST, which has room for CAP bytes: the
** compressed size, or 0 when it would not fit (the value is then stored
** as given: pass CAP < N so that only a value that shrinks is compressed).
** STATE has codec_state_size(CODEC) bytes, 16-byte aligned, and was zeroed
** when it was allocated; one state may serve codecs of every kind, in any
** order, as long as it is large enough for each.  DICT is the prepared
** dictionary (codec_dict) of a dictionary codec, NULL for the others; a
** dictionary codec without one stores every value as given (0).  0 also
** when zstd cannot allocate its context.
*/
size_t codec_compress(int codec, void *state, const void *dict, const void *src, size_t n, void *dst, size_t cap);

/* Decompress the N bytes at SRC, stored by CODEC, into exactly RAW bytes at
** DST: 1, or 0 if they are not a valid compressed value of that size (or
** zstd cannot allocate its context).  DICT: the prepared dictionary the
** value names (codec_value_dict), NULL for the codecs without one.
** Thread safe: each thread has its own decompression context. */
int codec_decompress(int codec, const void *dict, const void *src, size_t n, void *dst, size_t raw);

/* --- dictionaries (PAGEDB_CODEC_ZSTD_DICT) -------------------------------- */

/* The dictionary id a compressed value of a dictionary codec names, or 0
** when it names none or is no zstd frame. */
uint32_t codec_value_dict(const void *src, size_t n);

/* The id written in the zstd dictionary at D (N bytes), 0 if it is not one. */
uint32_t codec_dict_id(const void *d, size_t n);

/*
** Train a dictionary of at most CAP bytes into DST with ZDICT from the
** NS samples concatenated at SAMPLES (their sizes in SIZES), giving it id
** ID (>= 1) and entropy tables tuned for LEVEL: its size, or 0 if ZDICT
** failed (too few or too small samples).
*/
size_t codec_dict_train(void *dst, size_t cap, const void *samples, const size_t *sizes, unsigned ns,
                        uint32_t id, int level);

/* Set the id of the zstd dictionary at D (N bytes) to ID: 1, or 0 if D is
** not a zstd dictionary (raw content has no header to hold an id). */
int codec_dict_set_id(void *d, size_t n, uint32_t id);

/* Prepare the N bytes of dictionary D for compression at LEVEL (a CDict) or
** decompression (a DDict): NULL when D is not a zstd dictionary or out of
** memory.  Both copy D; both may be shared by threads (zstd reads them
** only); free with codec_dict_free. */
void *codec_cdict(const void *d, size_t n, int level);
void *codec_ddict(const void *d, size_t n);
void codec_cdict_free(void *cd);
void codec_ddict_free(void *dd);

#endif /* PAGEDB_CODEC_H */
