/*
** tensor.c -- tensor declarations and shapes (tensor.h; doc/format.md,
** "Tensor fields").  The text of a declaration is canonical: tensor_parse
** accepts exactly what tensor_format writes, so two declarations are equal
** exactly when their texts are (attach and vacuum compare texts).
*/
#include "tensor.h"

#include <stdio.h>
#include <string.h>

static const struct { const char *name; int size; } kDtypes[] = {
  [PAGEDB_DT_BOOL] = { "bool", 1 },       [PAGEDB_DT_INT8] = { "int8", 1 },
  [PAGEDB_DT_UINT8] = { "uint8", 1 },     [PAGEDB_DT_INT16] = { "int16", 2 },
  [PAGEDB_DT_UINT16] = { "uint16", 2 },   [PAGEDB_DT_INT32] = { "int32", 4 },
  [PAGEDB_DT_UINT32] = { "uint32", 4 },   [PAGEDB_DT_INT64] = { "int64", 8 },
  [PAGEDB_DT_UINT64] = { "uint64", 8 },   [PAGEDB_DT_FLOAT16] = { "float16", 2 },
  [PAGEDB_DT_BFLOAT16] = { "bfloat16", 2 }, [PAGEDB_DT_FLOAT32] = { "float32", 4 },
  [PAGEDB_DT_FLOAT64] = { "float64", 8 },
};
#define NDTYPE ((int)(sizeof kDtypes / sizeof kDtypes[0]))
#define DIM_MAX INT32_MAX

const char *pagedb_dtype_name(int dtype) { return dtype > 0 && dtype < NDTYPE ? kDtypes[dtype].name : NULL; }
int pagedb_dtype_size(int dtype) { return dtype > 0 && dtype < NDTYPE ? kDtypes[dtype].size : 0; }

int pagedb_dtype_from_name(const char *name) {
  for (int t = 1; name && t < NDTYPE; t++)
    if (strcmp(name, kDtypes[t].name) == 0) return t;
  return 0;
}

int tensor_decl(TensorDecl *d, int dtype, int ndim, const int64_t *dims, char *why, size_t whycap) {
  memset(d, 0, sizeof *d);
  if (!pagedb_dtype_size(dtype)) return snprintf(why, whycap, "unknown dtype %d", dtype), -1;
  if (ndim < 1 || ndim > PAGEDB_TENSOR_MAX_DIMS || !dims)
    return snprintf(why, whycap, "%d dimensions (a tensor has 1 to %d)", ndim, PAGEDB_TENSOR_MAX_DIMS), -1;
  d->dtype = dtype;
  d->ndim = ndim;
  d->esize = pagedb_dtype_size(dtype);
  d->fixed = (uint64_t)d->esize;
  for (int i = 0; i < ndim; i++) {
    if (dims[i] == PAGEDB_DIM_VAR) {
      d->nvar++;
    } else if (dims[i] < 1 || dims[i] > DIM_MAX) {
      return snprintf(why, whycap, "dimension %d is %lld (a fixed one is 1 to 2^31-1)", i, (long long)dims[i]), -1;
    } else {
      /* Both factors are below 2^37 and 2^31 until the bound is passed. */
      d->fixed *= (uint64_t)dims[i];
      if (d->fixed > PAGEDB_MAX_SAMPLE)
        return snprintf(why, whycap, "the fixed dimensions hold more than %llu bytes",
                        (unsigned long long)PAGEDB_MAX_SAMPLE), -1;
    }
    d->dims[i] = dims[i];
  }
  return 0;
}

void tensor_format(const TensorDecl *d, char *out) {
  int n = snprintf(out, TENSOR_TEXT_MAX, "tensor:%s:", pagedb_dtype_name(d->dtype));
  for (int i = 0; i < d->ndim; i++) {
    if (d->dims[i] == PAGEDB_DIM_VAR) n += snprintf(out + n, TENSOR_TEXT_MAX - n, "%s*", i ? "," : "");
    else n += snprintf(out + n, TENSOR_TEXT_MAX - n, "%s%lld", i ? "," : "", (long long)d->dims[i]);
  }
  assert(n < TENSOR_TEXT_MAX);   /* "tensor:bfloat16:" and 8 x ",2147483647": 104 */
}

int tensor_parse(const char *text, TensorDecl *d) {
  if (!text || strncmp(text, "tensor:", 7) != 0 || strlen(text) >= TENSOR_TEXT_MAX) return -1;
  const char *p = text + 7, *colon = strchr(p, ':');
  char name[16];
  if (!colon || (size_t)(colon - p) >= sizeof name) return -1;
  memcpy(name, p, (size_t)(colon - p));
  name[colon - p] = 0;
  int64_t dims[PAGEDB_TENSOR_MAX_DIMS];
  int ndim = 0;
  for (p = colon + 1;; p++) {
    if (ndim == PAGEDB_TENSOR_MAX_DIMS) return -1;
    if (*p == '*') {
      dims[ndim++] = PAGEDB_DIM_VAR;
      p++;
    } else {
      int64_t v = 0;
      const char *q = p;
      for (; *p >= '0' && *p <= '9' && v <= DIM_MAX; p++) v = v * 10 + (*p - '0');
      if (p == q) return -1;
      dims[ndim++] = v;
    }
    if (*p == 0) break;
    if (*p != ',') return -1;
  }
  char why[120], again[TENSOR_TEXT_MAX];
  if (tensor_decl(d, pagedb_dtype_from_name(name), ndim, dims, why, sizeof why) != 0) return -1;
  tensor_format(d, again);
  return strcmp(again, text) == 0 ? 0 : -1;   /* leading zeros, signs... */
}

void tensor_shape_text(const TensorDecl *d, char *out, size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "(");
  for (int i = 0; i < d->ndim && n < cap; i++) {
    if (d->dims[i] == PAGEDB_DIM_VAR) n += (size_t)snprintf(out + n, cap - n, "%sNone", i ? ", " : "");
    else n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? ", " : "", (long long)d->dims[i]);
  }
  if (n < cap) snprintf(out + n, cap - n, d->ndim == 1 ? ",)" : ")");
}

int tensor_len_ok(const TensorDecl *d, uint64_t raw) {
  if (d->nvar == 0) return raw == d->fixed;
  if (d->nvar == 1) return raw % d->fixed == 0 && raw / d->fixed <= DIM_MAX;
  return raw >= 8u * (uint64_t)d->nvar;
}

int tensor_value_shape(const TensorDecl *d, const void *value, uint64_t raw, int64_t *shape, uint64_t *nbytes,
                       char *why, size_t whycap) {
  uint64_t trailer = d->nvar >= 2 ? 8u * (uint64_t)d->nvar : 0, elems = d->fixed;
  if (!tensor_len_ok(d, raw)) {
    snprintf(why, whycap, "its raw length %llu does not fit the declaration", (unsigned long long)raw);
    return -1;
  }
  const uint8_t *t = (const uint8_t *)value + (raw - trailer);
  for (int i = 0, k = 0; i < d->ndim; i++) {
    if (d->dims[i] != PAGEDB_DIM_VAR) {
      shape[i] = d->dims[i];
    } else if (d->nvar == 1) {
      shape[i] = (int64_t)(raw / d->fixed);
      elems = raw;
    } else {
      uint64_t v = pdb_get64(t + 8 * k++);
      if (v > DIM_MAX) {
        snprintf(why, whycap, "its trailer gives dimension %d as %llu (at most 2^31-1)", i, (unsigned long long)v);
        return -1;
      }
      shape[i] = (int64_t)v;
      /* No overflow: once past RAW, elems stays UINT64_MAX (a mismatch)
      ** unless a later dimension is 0. */
      if (v == 0) elems = 0;
      else if (elems > raw / v) elems = UINT64_MAX;
      else elems *= v;
    }
  }
  if (elems != raw - trailer) {
    snprintf(why, whycap, "its trailer's shape needs %llu bytes of elements, but %llu are stored",
             (unsigned long long)elems, (unsigned long long)(raw - trailer));
    return -1;
  }
  *nbytes = elems;
  return 0;
}

size_t tensor_trailer(const TensorDecl *d, const int64_t *shape, uint8_t *out) {
  if (d->nvar < 2) return 0;
  size_t n = 0;
  for (int i = 0; i < d->ndim; i++)
    if (d->dims[i] == PAGEDB_DIM_VAR) pdb_put64(out + n, (uint64_t)shape[i]), n += 8;
  return n;
}
