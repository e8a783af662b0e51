/*
** bench_raw.c -- the raw-file reference: the workload's bytes back to back
** in one file, written with 8 MiB buffered pwrite()s and one fsync (or with
** O_DIRECT from an aligned buffer), and read at the known offsets with
** pread(), in place through mmap(), and with O_DIRECT one at a time or
** through io_uring at depth RAW_DEPTH.  Every pass sums every byte it reads
** (mixSum); the first buffered pread pass's sum is the one every other read
** pass of the workload, pagedb's included, must match.
*/
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#if PAGEDB_HAVE_URING
#include <liburing.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*
** Write every sample back to back into FD: each sample is made in place in
** the 8 MiB buffer BUF, written with pwrite() when the next one does not
** fit; a sample larger than the buffer is made in its own buffer, *pBig.
** 0 on success.
*/
static int rawFillBuffered(Run *r, int fd, uint8_t *buf, uint8_t **pBig){
  size_t used = 0;
  uint64_t off = 0;
  for(int64_t i = 0; i < r->w.count; i++){
    size_t len = (size_t)r->aSize[i];
    if( len > RAW_BUF - used && used > 0 ){
      if( ioAll(fd, buf, used, off, 1) ) return -1;
      off += used; used = 0;
    }
    if( len > RAW_BUF ){
      if( *pBig == 0 ) *pBig = malloc((size_t)wl_max_size(&r->w));
      if( *pBig == 0 ) return -1;
      wl_fill(&r->w, i, *pBig, len);
      if( ioAll(fd, *pBig, len, off, 1) ) return -1;
      off += len;
    }else{
      wl_fill(&r->w, i, buf + used, len);
      used += len;
    }
  }
  return used ? ioAll(fd, buf, used, off, 1) : 0;
}

/*
** The O_DIRECT raw write.  Its samples are made in place as the buffered
** one makes them (the same generator cost), but O_DIRECT needs the length
** and offset of every write 4 KiB-aligned, so the file goes out in whole
** 8 MiB pieces: the buffer has room past its 8 MiB for the sample that
** crosses the end, and after each write what crossed (less than one sample)
** moves to the front.  The last piece is padded with zeros to 4 KiB and the
** file then cut back to its exact size, the buffered file's.
*/
static size_t rawDirectCap(const Run *r){
  return RAW_BUF + (((size_t)wl_max_size(&r->w) + DIO_ALIGN - 1) & ~(size_t)(DIO_ALIGN - 1));
}

static int rawFillDirect(Run *r, int fd, uint8_t *buf){
  size_t used = 0;
  uint64_t off = 0;
  for(int64_t i = 0; i < r->w.count; i++){
    size_t len = (size_t)r->aSize[i];
    wl_fill(&r->w, i, buf + used, len);
    used += len;
    if( used < RAW_BUF ) continue;
    size_t done = 0;
    for(; used - done >= RAW_BUF; done += RAW_BUF, off += RAW_BUF){
      if( ioAll(fd, buf + done, RAW_BUF, off, 1) ) return -1;
    }
    memmove(buf, buf + done, used - done);
    used -= done;
  }
  if( used ){
    size_t pad = (used + DIO_ALIGN - 1) & ~(size_t)(DIO_ALIGN - 1);
    memset(buf + used, 0, pad - used);
    if( ioAll(fd, buf, pad, off, 1) ) return -1;
  }
  return ftruncate(fd, (off_t)r->nByte);
}

/*
** Check every sample of the raw file FD (zPath) against the workload,
** untimed, into BUF (room for the largest sample).  0 if all match.
*/
static int rawCheck(Run *r, int fd, const char *zPath, uint8_t *buf){
  for(int64_t i = 0; i < r->w.count; i++){
    if( ioAll(fd, buf, (size_t)r->aSize[i], r->aOff[i], 0)
     || wl_check(&r->w, i, buf, (size_t)r->aSize[i]) ){
      fail(r->b, "raw file %s: sample %lld differs from the workload", zPath, (long long)i);
      return 1;
    }
  }
  return 0;
}

/*
** Write the raw file, buffered (r->zRaw) or with O_DIRECT (r->zRawDio), and
** fsync it once at the end.  Returns the seconds taken, or -1: a failure, or
** for O_DIRECT a file system that refuses it (r->zDioWhy says so; that is
** not a failure).  The O_DIRECT file is read back once, untimed, and checked
** against the workload (the buffered one is, by rawPread), so that a write
** that put the wrong bytes down cannot look fast.
*/
double rawWriteFile(Run *r, int direct){
  Bench *b = r->b;
  const char *zPath = direct ? r->zRawDio : r->zRaw;
  unlink(zPath);
  dropCaches(b);
  double t0 = now();
  int fd = open(zPath, O_WRONLY | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0), 0644);
  if( fd < 0 && direct && errno == EINVAL ){
    snprintf(r->zDioWhy, sizeof r->zDioWhy, "the file system refuses O_DIRECT (open: %s)",
             strerror(errno));
    unlink(zPath);      /* open may have made it before refusing O_DIRECT */
    return -1;
  }
  if( fd < 0 ){ fail(b, "open %s: %s", zPath, strerror(errno)); return -1; }
  uint8_t *buf = aligned_alloc(DIO_ALIGN, direct ? rawDirectCap(r) : RAW_BUF), *big = 0;
  int ok = buf != 0;
  if( ok ) ok = (direct ? rawFillDirect(r, fd, buf) : rawFillBuffered(r, fd, buf, &big)) == 0;
  if( ok ) ok = fsync(fd) == 0;
  if( !ok ) fail(b, "writing %s: %s", zPath, strerror(errno));
  close(fd);
  double t = now() - t0;
  if( ok && direct && !r->dioChecked ){
    fd = open(zPath, O_RDONLY);
    struct stat st;
    if( fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size != r->nByte ){
      fail(b, "raw file %s: not %llu bytes long", zPath, (unsigned long long)r->nByte);
      ok = 0;
    }else{
      ok = rawCheck(r, fd, zPath, buf) == 0;
      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);   /* the check's pages are not the run's */
    }
    if( fd >= 0 ) close(fd);
    r->dioChecked = 1;
  }
  free(buf);
  free(big);
  return ok ? t : -1;
}

/*
** Read every sample in the order in hand with pread(); -1 on failure.  With
** r->evict, the file is evicted from the page cache first (the cold row).
*/
double rawPread(Run *r){
  Bench *b = r->b;
  dropCaches(b);
  prepFile(r, r->zRaw);
  uint8_t *buf = malloc((size_t)wl_max_size(&r->w));
  if( buf == 0 ){ fail(b, "out of memory"); return -1; }
  double t0 = now();
  int fd = open(r->zRaw, O_RDONLY);
  if( fd < 0 ){ fail(b, "open %s: %s", r->zRaw, strerror(errno)); free(buf); return -1; }
  uint64_t h = 0;
  for(int64_t k = 0; k < r->w.count; k++){
    int64_t i = r->aOrder[k];
    if( ioAll(fd, buf, (size_t)r->aSize[i], r->aOff[i], 0) ){
      fail(b, "pread %s sample %lld: %s", r->zRaw, (long long)i, strerror(errno));
      close(fd); free(buf);
      return -1;
    }
    h = mixSum(h, buf, (size_t)r->aSize[i]);
  }
  double t = now() - t0;
  if( !r->haveRawSum[r->iOrd] ){
    /* The reference itself is checked once against the workload, untimed. */
    rawCheck(r, fd, r->zRaw, buf);
    r->rawSum[r->iOrd] = h;
    r->haveRawSum[r->iOrd] = 1;
  }else if( h != r->rawSum[r->iOrd] ){
    fail(b, "raw pread pass: checksum differs between repetitions");
  }
  close(fd);
  free(buf);
  return t;
}

/* Read every sample in place through one mmap() of the raw file. */
double rawMmap(Run *r){
  Bench *b = r->b;
  if( !r->noPrep ) dropCaches(b);
  prepFile(r, r->zRaw);
  double c0 = cpuTime(CLOCK_PROCESS_CPUTIME_ID);
  double t0 = now();
  int fd = open(r->zRaw, O_RDONLY);
  if( fd < 0 ){ fail(b, "open %s: %s", r->zRaw, strerror(errno)); return -1; }
  struct stat st;
  if( fstat(fd, &st) || st.st_size == 0 ){ fail(b, "fstat %s", r->zRaw); close(fd); return -1; }
  void *p = mmap(0, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  if( p == MAP_FAILED ){ fail(b, "mmap %s: %s", r->zRaw, strerror(errno)); close(fd); return -1; }
  const uint8_t *base = p;
  uint64_t h = 0;
  for(int64_t k = 0; k < r->w.count; k++){
    int64_t i = r->aOrder[k];
    h = mixSum(h, base + r->aOff[i], (size_t)r->aSize[i]);
  }
  munmap(p, (size_t)st.st_size);
  close(fd);
  double t = now() - t0;
  r->lastCpu = cpuTime(CLOCK_PROCESS_CPUTIME_ID) - c0;
  r->lastSum = h;
  if( r->haveRawSum[r->iOrd] && h != r->rawSum[r->iOrd] ) fail(b, "raw mmap pass: checksum differs from pread's");
  return t;
}

/*
** The O_DIRECT references.  Each sample is read as the 4 KiB-aligned
** superset of its extent into a 4 KiB-aligned buffer; only the sample's own
** bytes are summed.  A read that ends short (the file's last block is not a
** multiple of 4 KiB long, or the kernel stopped early) is fine if it holds
** the sample; otherwise the rest comes from a buffered descriptor.
*/
static void dioRange(const Run *r, int64_t i, uint64_t *a0, uint64_t *a1){
  uint64_t off = r->aOff[i], end = off + r->aSize[i];
  *a0 = off & ~(uint64_t)(DIO_ALIGN - 1);
  *a1 = (end + DIO_ALIGN - 1) & ~(uint64_t)(DIO_ALIGN - 1);
}

/* The largest aligned superset any sample needs. */
static size_t dioCap(const Run *r){
  return ((size_t)wl_max_size(&r->w) + 2 * DIO_ALIGN - 1) & ~(size_t)(DIO_ALIGN - 1);
}

/* Finish sample I of which GOT bytes of its aligned range arrived in BUF. */
static int dioFinish(const Run *r, int fdBuf, int64_t i, uint8_t *buf, size_t got){
  uint64_t a0, a1;
  dioRange(r, i, &a0, &a1);
  uint64_t need = r->aOff[i] + r->aSize[i] - a0;
  if( got >= need ) return 0;
  return ioAll(fdBuf, buf + got, (size_t)(need - got), a0 + got, 0);
}

/*
** Open the raw file with O_DIRECT (*pFd) and buffered (*pFdBuf, for the
** ends dioFinish reads).  0 on success; on failure both are closed.
*/
static int dioOpen(Run *r, int *pFd, int *pFdBuf){
  *pFd = open(r->zRaw, O_RDONLY | O_DIRECT);
  *pFdBuf = open(r->zRaw, O_RDONLY);
  if( *pFd >= 0 && *pFdBuf >= 0 ) return 0;
  fail(r->b, "open %s (O_DIRECT): %s", r->zRaw, strerror(errno));
  if( *pFd >= 0 ) close(*pFd);
  if( *pFdBuf >= 0 ) close(*pFdBuf);
  return -1;
}

/* Read every sample in the random order with O_DIRECT pread(), one at a time. */
double rawDirectPread(Run *r){
  Bench *b = r->b;
  dropCaches(b);
  uint8_t *buf = aligned_alloc(DIO_ALIGN, dioCap(r));
  if( buf == 0 ){ fail(b, "out of memory"); return -1; }
  double t0 = now();
  int fd, fdBuf;
  if( dioOpen(r, &fd, &fdBuf) ){
    free(buf);
    return -1;
  }
  uint64_t h = 0;
  int bad = 0;
  for(int64_t k = 0; k < r->w.count && !bad; k++){
    int64_t i = r->aOrder[k];
    uint64_t a0, a1;
    dioRange(r, i, &a0, &a1);
    size_t got = 0, want = (size_t)(a1 - a0);
    while( got < want ){
      ssize_t n = pread(fd, buf + got, want - got, (off_t)(a0 + got));
      if( n < 0 && errno == EINTR ) continue;
      if( n < 0 ){
        fail(b, "O_DIRECT pread %s sample %lld: %s", r->zRaw, (long long)i, strerror(errno));
        bad = 1;
      }
      if( n <= 0 ) break;
      got += (size_t)n;
      if( got % DIO_ALIGN ) break;    /* the end of the file */
    }
    if( !bad && dioFinish(r, fdBuf, i, buf, got) ){
      fail(b, "pread %s sample %lld: %s", r->zRaw, (long long)i, strerror(errno));
      bad = 1;
    }
    if( !bad ) h = mixSum(h, buf + (r->aOff[i] - a0), (size_t)r->aSize[i]);
  }
  close(fd);
  close(fdBuf);
  double t = now() - t0;
  free(buf);
  if( bad ) return -1;
  if( r->haveRawSum[r->iOrd] && h != r->rawSum[r->iOrd] ) fail(b, "raw O_DIRECT pread pass: checksum differs from pread's");
  return t;
}

#if PAGEDB_HAVE_URING
/*
** Read every sample in the random order with O_DIRECT through io_uring,
** RAW_DEPTH reads always in flight: 2 x RAW_DEPTH buffers, so that reads
** that complete out of order wait for their turn to be summed (in order,
** as every pass) without holding back the queue.
*/
double rawDirectUring(Run *r){
  Bench *b = r->b;
  enum { NSLOT = 2 * RAW_DEPTH };
  dropCaches(b);
  size_t cap = dioCap(r);
  uint8_t *mem = aligned_alloc(DIO_ALIGN, cap * NSLOT);
  if( mem == 0 ){ fail(b, "out of memory"); return -1; }
  struct io_uring ring;
  int e = io_uring_queue_init(RAW_DEPTH, &ring, 0);
  if( e < 0 ){
    fail(b, "io_uring_queue_init: %s", strerror(-e));
    free(mem);
    return -1;
  }
  double t0 = now();
  int fd, fdBuf;
  if( dioOpen(r, &fd, &fdBuf) ){
    io_uring_queue_exit(&ring);
    free(mem);
    return -1;
  }
  int aRes[NSLOT];
  char aDone[NSLOT];
  memset(aDone, 0, sizeof aDone);
  int64_t N = r->w.count, next = 0, head = 0;
  int inFlight = 0, bad = 0;
  uint64_t h = 0;
  while( head < N && !bad ){
    int nNew = 0;
    while( next < N && inFlight < RAW_DEPTH && next - head < NSLOT ){
      int64_t i = r->aOrder[next];
      uint64_t a0, a1;
      dioRange(r, i, &a0, &a1);
      struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
      if( sqe == 0 ) break;
      io_uring_prep_read(sqe, fd, mem + cap * (size_t)(next % NSLOT), (unsigned)(a1 - a0), a0);
      io_uring_sqe_set_data64(sqe, (uint64_t)next);
      next++; inFlight++; nNew++;
    }
    if( nNew ){
      e = io_uring_submit(&ring);
      if( e < 0 ){ fail(b, "io_uring_submit: %s", strerror(-e)); bad = 1; break; }
    }
    /* Reap what has completed; block only if the head is not among it. */
    while( !aDone[head % NSLOT] ){
      struct io_uring_cqe *cqe;
      e = io_uring_wait_cqe(&ring, &cqe);
      if( e == -EINTR ) continue;
      if( e < 0 ){ fail(b, "io_uring_wait_cqe: %s", strerror(-e)); bad = 1; break; }
      do{
        int64_t k = (int64_t)io_uring_cqe_get_data64(cqe);
        aRes[k % NSLOT] = cqe->res;
        aDone[k % NSLOT] = 1;
        inFlight--;
        io_uring_cqe_seen(&ring, cqe);
      }while( io_uring_peek_cqe(&ring, &cqe) == 0 );
    }
    /* Sum every completed read at the head, in order. */
    while( !bad && head < next && aDone[head % NSLOT] ){
      int s = (int)(head % NSLOT);
      int64_t i = r->aOrder[head];
      uint64_t a0, a1;
      dioRange(r, i, &a0, &a1);
      uint8_t *buf = mem + cap * (size_t)s;
      if( aRes[s] < 0 ){
        fail(b, "io_uring O_DIRECT read %s sample %lld: %s", r->zRaw, (long long)i, strerror(-aRes[s]));
        bad = 1;
      }else if( dioFinish(r, fdBuf, i, buf, (size_t)aRes[s]) ){
        fail(b, "pread %s sample %lld: %s", r->zRaw, (long long)i, strerror(errno));
        bad = 1;
      }else{
        h = mixSum(h, buf + (r->aOff[i] - a0), (size_t)r->aSize[i]);
      }
      aDone[s] = 0;
      head++;
    }
  }
  /* Tearing the ring down waits for anything still in flight. */
  io_uring_queue_exit(&ring);
  close(fd);
  close(fdBuf);
  double t = now() - t0;
  free(mem);
  if( bad ) return -1;
  if( r->haveRawSum[r->iOrd] && h != r->rawSum[r->iOrd] ) fail(b, "raw O_DIRECT io_uring pass: checksum differs from pread's");
  return t;
}
#else
/* Built without liburing: the reference is not measured (0), and its row
** says so. */
double rawDirectUring(Run *r){
  (void)r;
  return 0;
}
#endif
