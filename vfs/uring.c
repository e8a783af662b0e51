/*
** uring.c -- batched reads and asynchronous writes through io_uring.
**
** Each file keeps a pool of rings: a batch takes an idle ring (or makes
** one), so reader threads never share a submission queue, and the pool is
** torn down with the file, so no ring outlives the handle.  A batch keeps
** PDB_URING_DEPTH requests in flight, submitting the next as each
** completes; a request the kernel completes short (the end of the file, or
** a partial read) is finished with plain pread, which gives the zero-fill
** and PAGEDB_IOERR_SHORT_READ contract of xRead.
**
** An asynchronous write holds a ring of its own from start to finish, so
** that its completion can be waited for by whichever thread asks, with no
** other request's completion to sort out.
*/
#define _GNU_SOURCE
#include "os.h"
#include "uring.h"

#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <unistd.h>

typedef struct Ring {
  struct Ring *next;
  struct io_uring ring;
} Ring;

struct PdbRings {
  pthread_mutex_t mu;
  Ring *idle;             /* rings not in use by a batch */
};

/* Set up the kernel side of ring R: 0, or an errno. */
static int ring_init(Ring *r) {
  int e = io_uring_queue_init(PDB_URING_DEPTH, &r->ring, 0);
  return e < 0 ? -e : 0;
}

/* A new ring, or NULL with *ERR set. */
static Ring *ring_new(int *err) {
  Ring *r = pdb_calloc(1, sizeof *r);
  if (!r) {
    *err = ENOMEM;
    return NULL;
  }
  if ((*err = ring_init(r)) != 0) {
    pdb_free(r);
    return NULL;
  }
  return r;
}

int pdb_rings_open(PdbRings **out) {
  *out = NULL;
  /* Our own memory first: its failure is PDB_RINGS_NOMEM, not a refusal
  ** of io_uring by the kernel. */
  PdbRings *p = pdb_calloc(1, sizeof *p);
  Ring *r = p ? pdb_calloc(1, sizeof *r) : NULL;
  if (!r) {
    pdb_free(p);
    return PDB_RINGS_NOMEM;
  }
  int err = ring_init(r);       /* the probe: io_uring works, or we know why */
  if (err) {
    pdb_free(r);
    pdb_free(p);
    return err;
  }
  p->idle = r;
  pthread_mutex_init(&p->mu, NULL);
  *out = p;
  return 0;
}

void pdb_rings_close(PdbRings *p) {
  if (!p) return;
  for (Ring *r = p->idle, *next; r; r = next) {
    next = r->next;
    io_uring_queue_exit(&r->ring);
    pdb_free(r);
  }
  pthread_mutex_destroy(&p->mu);
  pdb_free(p);
}

/* Take an idle ring (or make one) for the calling thread's batch. */
static Ring *ring_take(PdbRings *p, int *err) {
  pthread_mutex_lock(&p->mu);
  Ring *r = p->idle;
  if (r) p->idle = r->next;
  pthread_mutex_unlock(&p->mu);
  return r ? r : ring_new(err);
}

static void ring_give(PdbRings *p, Ring *r) {
  pthread_mutex_lock(&p->mu);
  r->next = p->idle;
  p->idle = r;
  pthread_mutex_unlock(&p->mu);
}

/* Tear down a ring that failed with requests in flight: the kernel waits
** for what it still holds, so no buffer is touched afterwards. */
static void ring_drop(Ring *r) {
  io_uring_queue_exit(&r->ring);
  pdb_free(r);
}

/* Finish request Q of which DONE bytes arrived, with pread. */
static int finish(int fd, pagedb_iovec *q, size_t done, int *err) {
  return pdb_pread_all(fd, (uint8_t *)q->buf + done, q->n - done, q->off + done, err);
}

/*
** Keep up to PDB_URING_DEPTH of the N requests Q in flight on ring R,
** submitting the next one as each completes, so that the queue never runs
** dry before the end of the batch.  Returns 0, or the ring's own error
** (negative) after reading with pread what it did not complete; tearing
** the ring down then waits for anything still in flight, so nothing writes
** into the buffers afterwards.
*/
static int ring_read(Ring *r, int fd, pagedb_iovec *q, int n, int *err) {
  enum { PENDING = -1 };
  for (int i = 0; i < n; i++) q[i].rc = PENDING;
  int next = 0, inflight = 0, e = 0;
  for (int completed = 0; completed < n && e >= 0;) {
    for (; inflight < PDB_URING_DEPTH && next < n; next++, inflight++) {
      struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
      io_uring_prep_read(sqe, fd, q[next].buf, (unsigned)q[next].n, q[next].off);
      io_uring_sqe_set_data64(sqe, (uint64_t)next);
    }
    e = io_uring_submit_and_wait(&r->ring, 1);
    if (e == -EINTR) e = 0;
    struct io_uring_cqe *cqe;
    while (e >= 0 && io_uring_peek_cqe(&r->ring, &cqe) == 0) {
      int i = (int)io_uring_cqe_get_data64(cqe);
      int res = cqe->res;
      io_uring_cqe_seen(&r->ring, cqe);
      inflight--;
      completed++;
      if (res < 0) {
        *err = -res;
        q[i].rc = PAGEDB_IOERR_READ;
      } else {
        q[i].rc = (size_t)res == q[i].n ? PAGEDB_OK : finish(fd, &q[i], (size_t)res, err);
      }
    }
  }
  if (e < 0)
    for (int i = 0; i < n; i++)
      if (q[i].rc == PENDING) q[i].rc = finish(fd, &q[i], 0, err);
  return e < 0 ? e : 0;
}

int pdb_uring_read_batch(PdbRings *p, int fd, pagedb_iovec *reqs, int n, int *err) {
  *err = 0;
  Ring *r = ring_take(p, err);
  if (!r) {
    /* No ring to be had now (memory): the plain way. */
    for (int i = 0; i < n; i++) reqs[i].rc = finish(fd, &reqs[i], 0, err);
  } else if (ring_read(r, fd, reqs, n, err) < 0) {
    ring_drop(r);
    r = NULL;
  }
  int first = PAGEDB_OK;
  for (int i = 0; i < n && first == PAGEDB_OK; i++) first = reqs[i].rc;
  if (r) ring_give(p, r);
  return first;
}

int pdb_uring_write_start(PdbRings *p, int fd, pagedb_aio *a) {
  int err = 0;
  a->pPriv = NULL;
  if (a->n > PDB_URING_MAX_IO) return EFBIG;
  Ring *r = ring_take(p, &err);
  if (!r) return err;
  struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
  io_uring_prep_write(sqe, fd, a->buf, (unsigned)a->n, a->off);
  int e;
  do e = io_uring_submit(&r->ring);
  while (e == -EINTR);
  if (e != 1) {
    ring_drop(r);
    return e < 0 ? -e : EAGAIN;
  }
  a->pPriv = r;
  return 0;
}

int pdb_uring_write_wait(PdbRings *p, pagedb_aio *a, int wait, int *res) {
  Ring *r = a->pPriv;
  assert(r);
  struct io_uring_cqe *cqe = NULL;
  int e;
  do e = wait ? io_uring_wait_cqe(&r->ring, &cqe) : io_uring_peek_cqe(&r->ring, &cqe);
  while (e == -EINTR);
  if (e == -EAGAIN && !wait) return 0;
  a->pPriv = NULL;
  if (e < 0) {
    ring_drop(r);
    *res = e;
    return 1;
  }
  *res = cqe->res;
  io_uring_cqe_seen(&r->ring, cqe);
  ring_give(p, r);
  return 1;
}
