/*
** codec.h -- what happens to a field's bytes on the way to a page and back:
** lz4 compression.  (Their checksum is pdb_sum, pagedbInt.h.)
*/
#ifndef PAGEDB_CODEC_H
#define PAGEDB_CODEC_H

#include "pagedbInt.h"

/* Whether CODEC (kind and level, pagedb.h) is one this build can use on a
** field of TYPE; the level 0 ones are made explicit in *NORM. */
int codec_check(int type, int codec, int *norm);

/* The catalog's name of CODEC ("none", "lz4:1", "lz4hc:9"), and back:
** codec_parse returns -1 for a name it does not know. */
void codec_name(int codec, char *out, size_t n);
int codec_parse(const char *name);

/* Whether a value of N bytes can be compressed at all (lz4 blocks stop
** short of 2 GiB): larger ones are stored as given. */
int codec_fits(size_t n);

/* Bytes of scratch state codec_compress needs for CODEC (0 for none). */
size_t codec_state_size(int codec);

/*
** Compress the N bytes at SRC into DST, which has room for CAP bytes: the
** compressed size, or 0 when it would not fit (the value is then stored
** as given: pass CAP < N so that only a value that shrinks is compressed).
** STATE has codec_state_size(CODEC) bytes, 16-byte aligned, and was zeroed
** when it was allocated; one state may serve codecs of both kinds, in any
** order, as long as it is large enough for each.
*/
size_t codec_compress(int codec, void *state, const void *src, size_t n, void *dst, size_t cap);

/* Whether N stored bytes can be a compressed value of RAW bytes at all: an
** lz4 block expands at most 255 times, so a larger recorded length is
** damage, and not worth a buffer. */
int codec_raw_possible(uint64_t n, uint64_t raw);

/* Decompress the N bytes at SRC into exactly RAW bytes at DST: 1, or 0 if
** they are not a valid compressed value of that size. */
int codec_decompress(const void *src, size_t n, void *dst, size_t raw);

#endif /* PAGEDB_CODEC_H */
