/*
** npy.h -- NumPy's .npy format (version 1.0 to 3.0), as WebDataset shards
** carry arrays: a header giving the dtype, the order and the shape, then
** the elements.  Read to import a .npy member as a tensor value; written
** to export one (numpy.load reads it).
*/
#ifndef PAGEDB_NPY_H
#define PAGEDB_NPY_H

#include "pagedb.h"

#include <stddef.h>
#include <stdint.h>

typedef struct NpyInfo {
  int dtype;                /* PAGEDB_DT_* */
  int ndim;                 /* 0 .. PAGEDB_TENSOR_MAX_DIMS */
  int64_t shape[PAGEDB_TENSOR_MAX_DIMS];
  size_t off;               /* where the elements start */
  size_t nbytes;            /* their bytes: element size x the product of SHAPE */
} NpyInfo;

/* Parse the .npy file P of N bytes.  NULL, or why it is not one pagedb can
** store as a tensor (Fortran order, a dtype or byte order it has not, no
** dimension or more than 8, a length that disagrees with the header). */
const char *npy_parse(const void *p, size_t n, NpyInfo *out);

/* The .npy header for elements of DTYPE and shape SHAPE (NDIM dims) into
** OUT (room for NPY_HEADER_MAX bytes): its length, a multiple of 64. */
#define NPY_HEADER_MAX 512
size_t npy_header(int dtype, int ndim, const int64_t *shape, char *out);

#endif
