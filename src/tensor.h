/*
** tensor.h -- the declaration of a tensor field (doc/format.md, "Tensor
** fields"): its dtype and shape, parsed from and written as the canonical
** text `tensor:DTYPE:SHAPE` of field.type, and the rules that tie a
** value's raw length (and, with two or more variable dimensions, its
** trailer) to its shape.  Pure functions: no I/O, no allocation.
**
** Invariants of a TensorDecl made by tensor_parse or tensor_decl:
** 1 <= ndim <= PAGEDB_TENSOR_MAX_DIMS; every dims[i] is a fixed dimension
** from 1 to 2^31 - 1 or PAGEDB_DIM_VAR; nvar counts the latter; esize is
** the dtype's size (1, 2, 4 or 8); fixed = esize * the product of the fixed
** dimensions, at most PAGEDB_MAX_SAMPLE.
*/
#ifndef PAGEDB_TENSOR_H
#define PAGEDB_TENSOR_H

#include "pagedbInt.h"

typedef struct TensorDecl {
  int dtype;                /* PAGEDB_DT_* */
  int ndim;
  int nvar;                 /* variable dimensions */
  int esize;                /* bytes per element */
  int64_t dims[PAGEDB_TENSOR_MAX_DIMS];   /* PAGEDB_DIM_VAR or 1 .. 2^31-1 */
  uint64_t fixed;           /* esize x the product of the fixed dimensions */
} TensorDecl;

#define TENSOR_TEXT_MAX 128   /* the longest text tensor_format writes, NUL included */

/* Fill *D from DTYPE, NDIM and DIMS; 0, or -1 (WHY says what, in WHYCAP
** bytes) when they do not make a declaration. */
int tensor_decl(TensorDecl *d, int dtype, int ndim, const int64_t *dims, char *why, size_t whycap);

/* Parse TEXT, a field.type; 0, or -1 when it is not the canonical text of a
** declaration ("tensor:" and anything else than that text). */
int tensor_parse(const char *text, TensorDecl *d);

/* The canonical text of D, into OUT (at least TENSOR_TEXT_MAX bytes). */
void tensor_format(const TensorDecl *d, char *out);

/* The shape of D as a user reads it: "(3, 224, 224)", "(None, 80)"; into
** OUT of CAP bytes. */
void tensor_shape_text(const TensorDecl *d, char *out, size_t cap);

/* Whether a value of RAW bytes may be one of D's, from its length alone
** (the catalog's check: with two or more variable dimensions, only that it
** holds the trailer). */
int tensor_len_ok(const TensorDecl *d, uint64_t raw);

/* The shape of the value VALUE of RAW bytes: SHAPE[0 .. ndim-1] and *NBYTES,
** the bytes of its elements.  0, or -1 when its length or trailer does not
** fit D (WHY says how). */
int tensor_value_shape(const TensorDecl *d, const void *value, uint64_t raw, int64_t *shape, uint64_t *nbytes,
                       char *why, size_t whycap);

/* The trailer bytes (8 per variable dimension, 0 with fewer than two) a
** value of shape SHAPE needs after its elements, and them into OUT (room
** for 8 * PAGEDB_TENSOR_MAX_DIMS bytes). */
size_t tensor_trailer(const TensorDecl *d, const int64_t *shape, uint8_t *out);

#endif
