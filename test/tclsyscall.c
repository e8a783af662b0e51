/*
** tclsyscall.c -- pagedb_syscall: system calls that are interrupted or cut
** short on demand, put under a VFS through its xSetSystemCall (SQLite's
** test_syscall.c does the same for its unix VFS).
**
** The fault VFS (tclfault.c) fails whole VFS methods; this goes below
** them, where a real disk and a real signal act: a pread or pwrite that
** moves fewer bytes than asked, a call that returns EINTR.  The backends
** must retry those to the end, so an operation run under them must give
** exactly what it gives without them.  The other modes check what must
** not be retried (a failed fsync) or looped on forever (a write that
** makes no progress).
**
**   pagedb_syscall list ?VFS?
**        the names of VFS's replaceable calls (default VFS: posix)
**   pagedb_syscall fault ?-vfs VFS? -calls NAMES ?-mode M? ?-every K?
**                        ?-limit L?
**        from now on every Kth call (default 2) counted over the calls
**        NAMES fails as M says, at most L times in all (0, the default:
**        no limit):
**          eintr  fails with EINTR, doing nothing;
**          short  a pread or pwrite moves half the bytes asked (whole 4 KiB
**                 blocks on an O_DIRECT descriptor), another call as eintr;
**                 with nothing shorter to move, as eintr;
**          eio    fails with EIO;
**          zero   a pwrite returns 0 (no progress), another call as eio.
**        K must be 2 or more for eintr and short without -limit: every
**        call interrupted would never end.  An unknown name: PAGEDB_NOTFOUND.
**   pagedb_syscall count ?NAME?
**        faults injected so far (in all, or into NAME)
**   pagedb_syscall reset
**        every original call back, the counters zeroed
**
**   pagedb_deny_io_uring
**        from now on io_uring_setup(2) fails with EPERM in this process and
**        every process it starts, as kernel.io_uring_disabled=2 makes it
**        fail for all (a seccomp filter; it cannot be undone, so tests call
**        it in a child process).  backend.test refuses io_uring this way
**        rather than by the machine-wide sysctl, which would fail the
**        io_uring tests of any other suite running on the machine.  An
**        error where seccomp filters or the architecture are not supported.
*/
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "tclpagedb.h"

enum { SC_OPEN, SC_PREAD, SC_PWRITE, SC_FTRUNCATE, SC_FSYNC, SC_FDATASYNC, SC_N };
static const char *azCall[SC_N] = {"open", "pread", "pwrite", "ftruncate", "fsync", "fdatasync"};

enum { M_EINTR, M_SHORT, M_EIO, M_ZERO };
static const char *azMode[] = {"eintr", "short", "eio", "zero", 0};

static struct {
  pagedb_vfs *vfs;               /* whose calls are replaced, or NULL */
  pagedb_syscall_ptr aReal[SC_N];
  int mask;                      /* 1 << SC_* of the faulting calls */
  int mode;
  long long every, limit;
  atomic_llong calls;            /* counted calls */
  atomic_llong faults;
  atomic_llong aHit[SC_N];
} sc;

/* Whether this call of I fails: -1 no, else the mode. */
static int scFault(int i){
  long long n;
  if( !(sc.mask & (1 << i)) ) return -1;
  n = atomic_fetch_add(&sc.calls, 1) + 1;
  if( n % sc.every ) return -1;
  if( sc.limit > 0 ){
    long long f = atomic_load(&sc.faults);
    do{
      if( f >= sc.limit ) return -1;
    }while( !atomic_compare_exchange_weak(&sc.faults, &f, f + 1) );
  }else{
    atomic_fetch_add(&sc.faults, 1);
  }
  atomic_fetch_add(&sc.aHit[i], 1);
  return sc.mode;
}

/* The errno of mode M for a call that moves no bytes. */
static int scErrno(int m){
  return m == M_EINTR || m == M_SHORT ? EINTR : EIO;
}

/* The bytes a transfer of N on FD moves when cut short (0: none shorter). */
static size_t scShort(int fd, size_t n){
  int fl = fcntl(fd, F_GETFL);
  if( fl >= 0 && (fl & O_DIRECT) ) return (n / 2) & ~(size_t)4095;
  return n / 2;
}

/* For a transfer of *PN bytes on FD under mode M: 1 if it goes ahead
** (with *PN perhaps made smaller), 0 if it fails with errno set. */
static int scTransfer(int m, int fd, size_t *pn){
  if( m == M_SHORT ){
    size_t k = scShort(fd, *pn);
    if( k > 0 ){ *pn = k; return 1; }
  }
  errno = scErrno(m);
  return 0;
}

static int scOpen(const char *path, int flags, mode_t mode){
  int m = scFault(SC_OPEN);
  if( m >= 0 ){ errno = scErrno(m); return -1; }
  return ((int (*)(const char *, int, mode_t))sc.aReal[SC_OPEN])(path, flags, mode);
}

static ssize_t scPread(int fd, void *buf, size_t n, off_t off){
  int m = scFault(SC_PREAD);
  if( m >= 0 && !scTransfer(m, fd, &n) ) return -1;
  return ((ssize_t (*)(int, void *, size_t, off_t))sc.aReal[SC_PREAD])(fd, buf, n, off);
}

static ssize_t scPwrite(int fd, const void *buf, size_t n, off_t off){
  int m = scFault(SC_PWRITE);
  if( m == M_ZERO ) return 0;
  if( m >= 0 && !scTransfer(m, fd, &n) ) return -1;
  return ((ssize_t (*)(int, const void *, size_t, off_t))sc.aReal[SC_PWRITE])(fd, buf, n, off);
}

static int scFtruncate(int fd, off_t size){
  int m = scFault(SC_FTRUNCATE);
  if( m >= 0 ){ errno = scErrno(m); return -1; }
  return ((int (*)(int, off_t))sc.aReal[SC_FTRUNCATE])(fd, size);
}

/* fsync and fdatasync: the same but for the call. */
static int scSync(int i, int fd){
  int m = scFault(i);
  if( m >= 0 ){ errno = scErrno(m); return -1; }
  return ((int (*)(int))sc.aReal[i])(fd);
}
static int scFsync(int fd){ return scSync(SC_FSYNC, fd); }
static int scFdatasync(int fd){ return scSync(SC_FDATASYNC, fd); }

static const pagedb_syscall_ptr aWrap[SC_N] = {
  (pagedb_syscall_ptr)scOpen, (pagedb_syscall_ptr)scPread, (pagedb_syscall_ptr)scPwrite,
  (pagedb_syscall_ptr)scFtruncate, (pagedb_syscall_ptr)scFsync, (pagedb_syscall_ptr)scFdatasync,
};

static void scReset(void){
  int i;
  if( sc.vfs ) sc.vfs->xSetSystemCall(sc.vfs, 0, 0);
  sc.vfs = 0;
  sc.mask = 0;
  atomic_store(&sc.calls, 0);
  atomic_store(&sc.faults, 0);
  for(i = 0; i < SC_N; i++) atomic_store(&sc.aHit[i], 0);
}

static int scCallIndex(const char *z){
  int i;
  for(i = 0; i < SC_N; i++){
    if( strcmp(azCall[i], z) == 0 ) return i;
  }
  return -1;
}

/* The VFS named by O (NULL: "posix") if it can replace its calls. */
static pagedb_vfs *scVfs(Tcl_Interp *interp, Tcl_Obj *o){
  const char *z = o ? Tcl_GetString(o) : "posix";
  pagedb_vfs *v = pagedb_vfs_find(z);
  if( v == 0 || v->iVersion < 2 || v->xSetSystemCall == 0 ){
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("VFS \"%s\" %s", z, v ? "cannot replace its system calls" : "is not registered"));
    return 0;
  }
  return v;
}

static int scFaultCmd(Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  Tcl_Obj *pVfs = 0, *pCalls = 0;
  int mode = M_EINTR, i, n, mask = 0;
  Tcl_WideInt every = 2, limit = 0;
  Tcl_Obj **ap;
  pagedb_vfs *v;
  for(i = 2; i + 1 < objc; i += 2){
    const char *z = Tcl_GetString(objv[i]);
    if( strcmp(z, "-vfs") == 0 ) pVfs = objv[i+1];
    else if( strcmp(z, "-calls") == 0 ) pCalls = objv[i+1];
    else if( strcmp(z, "-mode") == 0 ){
      if( Tcl_GetIndexFromObj(interp, objv[i+1], azMode, "mode", 0, &mode) ) return TCL_ERROR;
    }else if( strcmp(z, "-every") == 0 ){
      if( Tcl_GetWideIntFromObj(interp, objv[i+1], &every) ) return TCL_ERROR;
    }else if( strcmp(z, "-limit") == 0 ){
      if( Tcl_GetWideIntFromObj(interp, objv[i+1], &limit) ) return TCL_ERROR;
    }else break;
  }
  if( i != objc || pCalls == 0 ){
    Tcl_WrongNumArgs(interp, 2, objv, "?-vfs VFS? -calls NAMES ?-mode M? ?-every K? ?-limit L?");
    return TCL_ERROR;
  }
  if( every < 1 || ((mode == M_EINTR || mode == M_SHORT) && every < 2 && limit <= 0) ){
    Tcl_SetObjResult(interp, Tcl_NewStringObj("-every must be at least 1, and 2 for eintr and short without -limit", -1));
    return TCL_ERROR;
  }
  if( (v = scVfs(interp, pVfs)) == 0 ) return TCL_ERROR;
  if( Tcl_ListObjGetElements(interp, pCalls, &n, &ap) ) return TCL_ERROR;
  for(i = 0; i < n; i++){
    const char *z = Tcl_GetString(ap[i]);
    int k = scCallIndex(z);
    /* The VFS is asked first: it decides what it has. */
    if( v->xGetSystemCall(v, z) == 0 ){
      return pdbError(interp, PAGEDB_NOTFOUND, Tcl_GetString(Tcl_ObjPrintf("VFS \"%s\" has no system call \"%s\"", v->zName, z)));
    }
    if( k < 0 ){
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("no wrapper for system call \"%s\" here", z));
      return TCL_ERROR;
    }
    mask |= 1 << k;
  }
  scReset();
  sc.vfs = v;
  sc.mode = mode;
  sc.every = every;
  sc.limit = limit;
  for(i = 0; i < SC_N; i++){
    if( !(mask & (1 << i)) ) continue;
    sc.aReal[i] = v->xGetSystemCall(v, azCall[i]);
    if( v->xSetSystemCall(v, azCall[i], aWrap[i]) != PAGEDB_OK ){
      scReset();
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("xSetSystemCall(%s) failed", azCall[i]));
      return TCL_ERROR;
    }
  }
  sc.mask = mask;
  return TCL_OK;
}

static int syscallCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  static const char *azSub[] = {"list", "fault", "count", "reset", 0};
  enum { S_LIST, S_FAULT, S_COUNT, S_RESET };
  int sub;
  (void)cd;
  if( objc < 2 ){
    Tcl_WrongNumArgs(interp, 1, objv, "list|fault|count|reset ...");
    return TCL_ERROR;
  }
  if( Tcl_GetIndexFromObj(interp, objv[1], azSub, "subcommand", 0, &sub) ) return TCL_ERROR;
  switch( sub ){
    case S_LIST: {
      pagedb_vfs *v = scVfs(interp, objc > 2 ? objv[2] : 0);
      Tcl_Obj *pRes;
      const char *z;
      if( v == 0 ) return TCL_ERROR;
      pRes = Tcl_NewListObj(0, 0);
      for(z = v->xNextSystemCall(v, 0); z; z = v->xNextSystemCall(v, z)){
        Tcl_ListObjAppendElement(interp, pRes, Tcl_NewStringObj(z, -1));
      }
      Tcl_SetObjResult(interp, pRes);
      return TCL_OK;
    }
    case S_FAULT:
      return scFaultCmd(interp, objc, objv);
    case S_COUNT: {
      int k = -1;
      if( objc > 2 && (k = scCallIndex(Tcl_GetString(objv[2]))) < 0 ){
        Tcl_SetObjResult(interp, Tcl_ObjPrintf("no system call \"%s\"", Tcl_GetString(objv[2])));
        return TCL_ERROR;
      }
      Tcl_SetObjResult(interp, Tcl_NewWideIntObj(k < 0 ? atomic_load(&sc.faults) : atomic_load(&sc.aHit[k])));
      return TCL_OK;
    }
    case S_RESET:
      scReset();
      return TCL_OK;
  }
  return TCL_ERROR;
}

#if defined(__x86_64__)
# define DENY_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
# define DENY_ARCH AUDIT_ARCH_AARCH64
#endif

static int denyUringCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  (void)cd;
  if( objc != 1 ){
    Tcl_WrongNumArgs(interp, 1, objv, "");
    return TCL_ERROR;
  }
#if defined(DENY_ARCH) && defined(__NR_io_uring_setup)
  {
    /* Another architecture's calls (a 32-bit ABI) pass untouched. */
    struct sock_filter aF[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, DENY_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof(aF) / sizeof(aF[0])), aF };
    if( prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
     || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0 ){
      Tcl_SetObjResult(interp, Tcl_ObjPrintf("pagedb_deny_io_uring: seccomp: %s", strerror(errno)));
      return TCL_ERROR;
    }
    return TCL_OK;
  }
#else
  Tcl_SetObjResult(interp, Tcl_NewStringObj(
      "pagedb_deny_io_uring: no seccomp filter for this architecture", -1));
  return TCL_ERROR;
#endif
}

void Tclsyscall_Init(Tcl_Interp *interp){
  Tcl_CreateObjCommand(interp, "pagedb_syscall", syscallCmd, 0, 0);
  Tcl_CreateObjCommand(interp, "pagedb_deny_io_uring", denyUringCmd, 0, 0);
}
