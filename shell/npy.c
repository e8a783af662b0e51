/*
** npy.c -- the .npy header (npy.h).  The header is a Python dict literal
** written by numpy.lib.format: {'descr': '<f4', 'fortran_order': False,
** 'shape': (3, 4), } padded with spaces to a multiple of 64 and ended by
** '\n'.  We read exactly the keys numpy writes and refuse anything else:
** the bytes come from files we did not write.
*/
#include "npy.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The descr numpy writes for each dtype on a little-endian host ('|' for
** one byte).  bfloat16 has none: exported as its bits, '<u2'. */
static const char *kDescr[] = {
  [PAGEDB_DT_BOOL] = "|b1",  [PAGEDB_DT_INT8] = "|i1",   [PAGEDB_DT_UINT8] = "|u1",
  [PAGEDB_DT_INT16] = "<i2", [PAGEDB_DT_UINT16] = "<u2", [PAGEDB_DT_INT32] = "<i4",
  [PAGEDB_DT_UINT32] = "<u4", [PAGEDB_DT_INT64] = "<i8", [PAGEDB_DT_UINT64] = "<u8",
  [PAGEDB_DT_FLOAT16] = "<f2", [PAGEDB_DT_BFLOAT16] = "<u2", [PAGEDB_DT_FLOAT32] = "<f4",
  [PAGEDB_DT_FLOAT64] = "<f8",
};
#define NDESCR ((int)(sizeof kDescr / sizeof kDescr[0]))

/* The value of KEY in header H (NUL-terminated): a pointer just after
** "'KEY':" and blanks, or NULL. */
static const char *field(const char *h, const char *key){
  char pat[32];
  snprintf(pat, sizeof pat, "'%s':", key);
  const char *s = strstr(h, pat);
  if( s == 0 ) return 0;
  s += strlen(pat);
  while( *s == ' ' ) s++;
  return s;
}

const char *npy_parse(const void *pv, size_t n, NpyInfo *out){
  const unsigned char *p = pv;
  memset(out, 0, sizeof *out);
  if( n < 10 || memcmp(p, "\x93NUMPY", 6) != 0 ) return "not a .npy file (no \\x93NUMPY magic)";
  size_t hlen, start;
  if( p[6] == 1 ){
    hlen = (size_t)p[8] | (size_t)p[9] << 8;
    start = 10;
  }else if( p[6] == 2 || p[6] == 3 ){
    if( n < 12 ) return "a truncated .npy header";
    hlen = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
    start = 12;
  }else{
    return "a .npy format version other than 1, 2 or 3";
  }
  if( hlen > 65536 || start + hlen > n ) return "a truncated .npy header";
  char h[65537];
  memcpy(h, p + start, hlen);
  h[hlen] = 0;
  if( memchr(h, 0, hlen) ) return "a .npy header with a NUL byte";
  out->off = start + hlen;
  const char *d = field(h, "descr");
  if( d == 0 || *d != '\'' ) return "a .npy header without a 'descr' string";
  char descr[16];
  size_t k = 0;
  for(d++; *d && *d != '\'' && k < sizeof descr - 1; d++) descr[k++] = *d;
  descr[k] = 0;
  /* '<' and '|' are the little-endian spellings; '=' is native (little). */
  if( descr[0] == '=' ) descr[0] = k == 3 && descr[2] == '1' ? '|' : '<';
  for(int t = 1; t < NDESCR && !out->dtype; t++){
    if( t != PAGEDB_DT_BFLOAT16 && strcmp(descr, kDescr[t]) == 0 ) out->dtype = t;
  }
  if( out->dtype == 0 && k == 3 && descr[2] == '1' && descr[0] == '<' ){
    descr[0] = '|';   /* '<u1' is '|u1' */
    for(int t = 1; t < NDESCR && !out->dtype; t++) if( strcmp(descr, kDescr[t]) == 0 ) out->dtype = t;
  }
  if( out->dtype == 0 ) return "a .npy dtype pagedb has no tensor type for (big-endian, complex, strings, objects...)";
  const char *f = field(h, "fortran_order");
  if( f == 0 ) return "a .npy header without 'fortran_order'";
  if( strncmp(f, "False", 5) != 0 ) return "a .npy array in Fortran order";
  const char *s = field(h, "shape");
  if( s == 0 || *s != '(' ) return "a .npy header without a 'shape' tuple";
  s++;
  uint64_t elems = 1;
  for(;;){
    while( *s == ' ' || *s == ',' ) s++;
    if( *s == ')' ) break;
    if( !isdigit((unsigned char)*s) ) return "a .npy shape that is not a tuple of sizes";
    int64_t v = 0;
    while( isdigit((unsigned char)*s) && v <= INT32_MAX ) v = v * 10 + (*s++ - '0');
    if( v > INT32_MAX ) return "a .npy dimension of 2^31 or more";
    if( out->ndim == PAGEDB_TENSOR_MAX_DIMS ) return "a .npy array of more than 8 dimensions";
    out->shape[out->ndim++] = v;
    elems = v == 0 || elems == 0 ? 0 : elems > (UINT64_MAX >> 32) ? UINT64_MAX : elems * (uint64_t)v;
  }
  if( out->ndim == 0 ) return "a 0-dimensional .npy array (a scalar)";
  uint64_t es = (uint64_t)pagedb_dtype_size(out->dtype);
  if( elems != UINT64_MAX && elems > (n - out->off) / es + 1 ) return "a .npy file shorter than its shape needs";
  out->nbytes = (size_t)(elems * es);
  if( out->nbytes != n - out->off ) return "a .npy file whose length disagrees with its shape";
  return 0;
}

size_t npy_header(int dtype, int ndim, const int64_t *shape, char *out){
  char dict[NPY_HEADER_MAX];
  int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                   dtype > 0 && dtype < NDESCR ? kDescr[dtype] : "|u1");
  for(int i = 0; i < ndim; i++) k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld, ", (long long)shape[i]);
  k -= ndim == 1 ? 1 : ndim > 1 ? 2 : 0;   /* "(3, 4)"; one dimension keeps its comma: "(3,)" */
  k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
  /* magic (6), version (2), length (2), dict, spaces, '\n': a multiple of 64 */
  size_t total = ((size_t)10 + (size_t)k + 1 + 63) / 64 * 64;
  memcpy(out, "\x93NUMPY\x01\x00", 8);
  size_t hlen = total - 10;
  out[8] = (char)(hlen & 0xff);
  out[9] = (char)(hlen >> 8);
  memcpy(out + 10, dict, (size_t)k);
  memset(out + 10 + k, ' ', total - 10 - (size_t)k - 1);
  out[total - 1] = '\n';
  return total;
}
