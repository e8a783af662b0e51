/*
** uring.h -- batched reads and asynchronous writes through io_uring, for the
** VFS backends.
*/
#ifndef PAGEDB_URING_H
#define PAGEDB_URING_H

#include "pagedbInt.h"

#define PDB_URING_DEPTH 32    /* requests in flight per batch */
#define PDB_URING_MAX_IO (1u << 30)   /* larger writes go the plain way */

/* A file's pool of rings. */
typedef struct PdbRings PdbRings;

/* pdb_rings_open's result when pagedb's own allocator failed. */
#define PDB_RINGS_NOMEM (-1)

#if !PAGEDB_HAVE_URING
/* Built without liburing: no pool can be made, and the backends, which
** use the rest only through a pool, do plain I/O. */
#include <errno.h>
static inline int pdb_rings_open(PdbRings **p) {
  *p = NULL;
  return ENOSYS;
}
static inline void pdb_rings_close(PdbRings *p) { (void)p; }
#else

/* Make a pool with one ring: 0, PDB_RINGS_NOMEM when pagedb's allocator
** fails, or an errno saying why io_uring does not work here (ENOSYS, EPERM
** under seccomp, ...). */
int pdb_rings_open(PdbRings **p);
void pdb_rings_close(PdbRings *p);

/*
** Read the N requests on FD with a ring of pool P, PDB_URING_DEPTH in flight,
** setting each request's rc as xRead would (a read that ends past the end
** of the file zero-fills and says PAGEDB_IOERR_SHORT_READ).  Returns the
** first failure; *ERR receives its errno.
*/
int pdb_uring_read_batch(PdbRings *p, int fd, pagedb_iovec *reqs, int n, int *err);

/*
** Start writing A on FD with a ring of pool P, which A holds (in A->pPriv)
** until pdb_uring_write_wait reports it finished.  Returns 0 when under
** way, else an errno and nothing was started: write it the plain way.
*/
int pdb_uring_write_start(PdbRings *p, int fd, pagedb_aio *a);

/*
** Whether A has finished: 1 with *RES the bytes written or -errno (the
** ring is given back), or, with WAIT 0, 0 while it is still in flight.
*/
int pdb_uring_write_wait(PdbRings *p, pagedb_aio *a, int wait, int *res);

#endif /* PAGEDB_HAVE_URING */
#endif /* PAGEDB_URING_H */
