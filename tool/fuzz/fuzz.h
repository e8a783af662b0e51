/*
** fuzz.h -- what the libFuzzer targets of tool/fuzz share: a private
** scratch directory, writing a file, the check that a result is a pagedb
** code, and the input framing of fuzz_open (which mkseeds.c writes).
**
** Each target defines LLVMFuzzerTestOneInput.  Built with --enable-fuzzing
** it is linked with libFuzzer; in the normal build with replay.c, whose
** main() feeds it the files named on its command line (test/fuzz.test).
*/
#ifndef PAGEDB_FUZZ_H
#define PAGEDB_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

/* A directory of this process's own, under /dev/shm (memory) or else /tmp,
** made on first use and removed with what it holds at exit (or, after a
** crash, by the next process that makes one). */
const char *fz_dir(void);

/* "DIR/NAME" into OUT (FZ_PATH bytes). */
#define FZ_PATH 512
void fz_path(char *out, const char *name);

/* Write N bytes to PATH (created or truncated); abort on failure, which is
** the machine's, not the input's. */
void fz_write(const char *path, const void *data, size_t n);

/* Remove PATH if it exists. */
void fz_unlink(const char *path);

/* Abort unless RC is a pagedb result code (pagedb_errname knows it). */
void fz_rc(int rc, const char *what);

/*
** The input of fuzz_open, a dataset in a few hundred bytes:
**
**   byte 0        flags (FZ_*)
**   bytes 1..4    the data file's size, little-endian (capped at FZ_MAX_FILE)
**   bytes 5..8    CATLEN, little-endian
**   CATLEN bytes  the catalog: a SQLite file, or with FZ_SQL the SQL that
**                 makes it
**   with FZ_INDEX, the index file NAME-index (doc/format.md): 4 bytes, its
**                 size (capped at FZ_MAX_FILE); 4 bytes, IXLEN; IXLEN bytes
**                 of its segments, as the data file's below (an index file
**                 is mostly the holes of chunks' unwritten slots).  Without
**                 FZ_INDEX there is no index file: the open scans the catalog
**   with FZ_PARTS, the dataset's parts (doc/format.md, "Parts"): 1 byte,
**                 NP (modulo FZ_MAX_PARTS + 1); then NP parts, each 4 bytes,
**                 PLEN, and PLEN bytes framing part k as this framing does a
**                 dataset (its FZ_SQL and FZ_INDEX read, its other flags and
**                 parts ignored), written as NAME.parts/pK: the names the
**                 seeds' part rows give, relative to the dataset
**   the rest      segments of the data file, each a 4-byte offset, a
**                 2-byte length and that many bytes; the file is zeros
**                 elsewhere (a data file is mostly the hole before page 0
**                 and unused page ends)
*/
#define FZ_SQL        0x01   /* the catalog is SQL text, run on an empty database */
#define FZ_VERIFY     0x02   /* read with PAGEDB_READ_VERIFY */
#define FZ_CHECKOPEN  0x04   /* open with PAGEDB_OPEN_CHECK */
#define FZ_FULLCHECK  0x08   /* pagedb_check without PAGEDB_CHECK_QUICK */
#define FZ_INDEX      0x10   /* an index file follows the catalog */
#define FZ_PARTS      0x20   /* parts follow the index file */
#define FZ_MMAP       0x40   /* read zero-copy too (parts' maps and copies) */
#define FZ_MAX_PARTS  3
#define FZ_MAX_FILE   (8u << 20)
#define FZ_HDR        9

static inline uint32_t fz_get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif /* PAGEDB_FUZZ_H */
