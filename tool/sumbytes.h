/*
** sumbytes.h -- the consumer's loop of the read benchmarks (pagedb-bench,
** pagedb-readcost): one function, so that both sum a sample's bytes the
** same way.
*/
#ifndef PAGEDB_SUMBYTES_H
#define PAGEDB_SUMBYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
** A checksum that reads every byte of P[0..N) once, fast enough not to hide
** the cost of the read it follows: four 64-bit lanes summed, the tail mixed
** byte by byte.  Every timed read pass combines it the same way (mixSum).
*/
static inline uint64_t sumBytes(const uint8_t *p, size_t n){
  uint64_t a = 0, b = 0, c = 0, d = 0, t = 0;
  size_t k = 0;
  for(; k + 32 <= n; k += 32){
    uint64_t x[4];
    memcpy(x, p + k, 32);
    a += x[0]; b += x[1]; c += x[2]; d += x[3];
  }
  for(; k < n; k++) t = t * 31 + p[k];
  return a ^ (b << 1 | b >> 63) ^ (c << 2 | c >> 62) ^ (d << 3 | d >> 61) ^ t;
}

#endif /* PAGEDB_SUMBYTES_H */
