/*
** uring.h -- batched reads through io_uring, for the VFS backends.
*/
#ifndef PAGEDB_URING_H
#define PAGEDB_URING_H

#include "pagedbInt.h"

#define PDB_URING_DEPTH 32    /* requests in flight per batch */

/* A file's pool of rings. */
typedef struct PdbRings PdbRings;

/* Make a pool with one ring: 0, or an errno saying why io_uring does not
** work here (ENOSYS, EPERM under seccomp, ...). */
int pdb_rings_open(PdbRings **p);
void pdb_rings_close(PdbRings *p);

/*
** Read the N requests on FD with a ring of pool P, PDB_URING_DEPTH in flight,
** setting each request's rc as xRead would (a read that ends past the end
** of the file zero-fills and says PAGEDB_IOERR_SHORT_READ).  Returns the
** first failure; *ERR receives its errno.
*/
int pdb_uring_read_batch(PdbRings *p, int fd, pagedb_iovec *reqs, int n, int *err);

#endif /* PAGEDB_URING_H */
