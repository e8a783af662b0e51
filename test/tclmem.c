/*
** tclmem.c -- out-of-memory injection for the suite, as SQLite's
** test_malloc.c: a general allocator and a pool allocator that forward to
** pagedb's defaults but fail on demand.
**
**   mem_fault_install
**       Install both wrappers (pagedb_config MALLOC and POOL).  Must come
**       before anything else initializes the library in this process.
**   mem_fault N ?-persist?
**       The Nth allocation from now fails (general or pool, from any
**       thread); with -persist every one after it fails too.  N = 0
**       disarms.  Returns the failures injected since the previous call.
**   mem_fault_hits
**       The failures injected since the last arming.
**   pagedb_memory_used / pagedb_release_memory ?N? / pagedb_shutdown
**       The library's calls (N defaults to all); shutdown returns the code
**       name.
**   rss
**       The process's resident set (VmRSS of /proc/self/status), in bytes.
**   pagedb_malloc N / pagedb_free ADDR / pagedb_msize ADDR
**   pagedb_status OP ?RESET?    -> {CUR HIGH}; OP memory_used, malloc_count,
**                                  pool_used, pool_cached, pool_pinned, heap_free
**   pagedb_heap_config BYTES MIN -> the code name (the arena is malloc()ed
**                                  and kept for the life of the process)
**
** The pool's own commands are in tclpool.c.
*/
#include "pagedb.h"
#include "tclpagedb.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static pagedb_mem_methods real;
static pagedb_pool_methods real_pool;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long countdown;          /* 0: disarmed */
static int persist, failing;
static long hits;

/* Whether this allocation is the one to fail (or one after it). */
static int fail_now(void) {
  pthread_mutex_lock(&mu);
  int f = failing;
  if (!f && countdown > 0 && --countdown == 0) {
    f = 1;
    failing = persist;
  }
  if (f) hits++;
  pthread_mutex_unlock(&mu);
  return f;
}

static void *f_malloc(size_t n) { return fail_now() ? NULL : real.xMalloc(n); }
static void f_free(void *p) { real.xFree(p); }
static void *f_realloc(void *p, size_t n) { return fail_now() ? NULL : real.xRealloc(p, n); }
static size_t f_size(void *p) { return real.xSize(p); }

static void *f_pool_alloc(void *app, size_t n, size_t align) {
  (void)app;
  return fail_now() ? NULL : real_pool.xAlloc(real_pool.pAppData, n, align);
}
static void f_pool_free(void *app, void *p, size_t n) {
  (void)app;
  real_pool.xFree(real_pool.pAppData, p, n);
}

static int install_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  if (objc != 1) {
    Tcl_WrongNumArgs(interp, 1, objv, "");
    return TCL_ERROR;
  }
  int rc = pagedb_config(PAGEDB_CONFIG_GETMALLOC, &real);
  if (rc == PAGEDB_OK) rc = pagedb_config(PAGEDB_CONFIG_GETPOOL, &real_pool);
  if (rc == PAGEDB_OK) {
    pagedb_mem_methods m = real;
    m.xMalloc = f_malloc;
    m.xFree = f_free;
    m.xRealloc = f_realloc;
    m.xSize = f_size;
    rc = pagedb_config(PAGEDB_CONFIG_MALLOC, &m);
  }
  if (rc == PAGEDB_OK) {
    pagedb_pool_methods pm = real_pool;
    pm.xAlloc = f_pool_alloc;
    pm.xFree = f_pool_free;
    pm.pAppData = NULL;
    rc = pagedb_config(PAGEDB_CONFIG_POOL, &pm);
  }
  if (rc != PAGEDB_OK) {
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("%s: mem_fault_install must run before the library is used",
                                           pagedb_errname(rc)));
    return TCL_ERROR;
  }
  return TCL_OK;
}

static int fault_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  long n;
  if ((objc != 2 && objc != 3) || (objc == 3 && strcmp(Tcl_GetString(objv[2]), "-persist") != 0)) {
    Tcl_WrongNumArgs(interp, 1, objv, "N ?-persist?");
    return TCL_ERROR;
  }
  if (Tcl_GetLongFromObj(interp, objv[1], &n) != TCL_OK) return TCL_ERROR;
  pthread_mutex_lock(&mu);
  long was = hits;
  countdown = n > 0 ? n : 0;
  persist = objc == 3;
  failing = 0;
  hits = 0;
  pthread_mutex_unlock(&mu);
  Tcl_SetObjResult(interp, Tcl_NewLongObj(was));
  return TCL_OK;
}

static int hits_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  (void)objc;
  (void)objv;
  pthread_mutex_lock(&mu);
  long h = hits;
  pthread_mutex_unlock(&mu);
  Tcl_SetObjResult(interp, Tcl_NewLongObj(h));
  return TCL_OK;
}

static int used_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  (void)objc;
  (void)objv;
  Tcl_SetObjResult(interp, Tcl_NewWideIntObj(pagedb_memory_used()));
  return TCL_OK;
}

static int release_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  Tcl_WideInt n = -1;
  if (objc > 2 || (objc == 2 && Tcl_GetWideIntFromObj(interp, objv[1], &n) != TCL_OK)) {
    Tcl_WrongNumArgs(interp, 1, objv, "?N?");
    return TCL_ERROR;
  }
  Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)pagedb_release_memory(n < 0 ? SIZE_MAX : (size_t)n)));
  return TCL_OK;
}

static int shutdown_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  (void)objc;
  (void)objv;
  Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_errname(pagedb_shutdown()), -1));
  return TCL_OK;
}

static int rss_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  (void)objc;
  (void)objv;
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %lld kB", &kb) == 1) break;
  if (f) fclose(f);
  if (kb < 0) {
    Tcl_SetObjResult(interp, Tcl_NewStringObj("rss: no VmRSS in /proc/self/status", -1));
    return TCL_ERROR;
  }
  Tcl_SetObjResult(interp, Tcl_NewWideIntObj((Tcl_WideInt)kb * 1024));
  return TCL_OK;
}

static int addr_arg(Tcl_Interp *interp, Tcl_Obj *o, void **p) {
  Tcl_WideInt v;
  if (Tcl_GetWideIntFromObj(interp, o, &v) != TCL_OK) return TCL_ERROR;
  *p = (void *)(uintptr_t)v;
  return TCL_OK;
}

static Tcl_Obj *addr_obj(const void *p) { return Tcl_NewWideIntObj((Tcl_WideInt)(uintptr_t)p); }

static int size_arg(Tcl_Interp *interp, Tcl_Obj *o, size_t *n) {
  Tcl_WideInt v;
  if (Tcl_GetWideIntFromObj(interp, o, &v) != TCL_OK) return TCL_ERROR;
  *n = (size_t)v;
  return TCL_OK;
}

/* One command for the calls that take a number or an address: CD says
** which. */
enum { MALLOC, FREE, MSIZE };

static int call_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  int op = (int)(intptr_t)cd;
  if (objc != 2) {
    Tcl_WrongNumArgs(interp, 1, objv, "ARG");
    return TCL_ERROR;
  }
  size_t n = 0;
  void *p = NULL;
  if (op == FREE || op == MSIZE) {
    if (addr_arg(interp, objv[1], &p) != TCL_OK) return TCL_ERROR;
  } else if (size_arg(interp, objv[1], &n) != TCL_OK) {
    return TCL_ERROR;
  }
  Tcl_Obj *r = NULL;
  switch (op) {
    case MALLOC: r = addr_obj(pagedb_malloc(n)); break;
    case FREE: r = Tcl_NewStringObj(pagedb_errname(pagedb_free(p)), -1); break;
    default: r = Tcl_NewWideIntObj((Tcl_WideInt)pagedb_msize(p)); break;
  }
  Tcl_SetObjResult(interp, r);
  return TCL_OK;
}

static int status_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  static const char *names[] = { "memory_used", "malloc_count", "pool_used", "pool_cached", "pool_pinned",
                                 "heap_free", NULL };
  static const int ops[] = { PAGEDB_STATUS_MEMORY_USED, PAGEDB_STATUS_MALLOC_COUNT, PAGEDB_STATUS_POOL_USED,
                             PAGEDB_STATUS_POOL_CACHED, PAGEDB_STATUS_POOL_PINNED, PAGEDB_STATUS_HEAP_FREE };
  int i, reset = 0;
  if (objc < 2 || objc > 3) {
    Tcl_WrongNumArgs(interp, 1, objv, "OP ?RESET?");
    return TCL_ERROR;
  }
  if (Tcl_GetIndexFromObj(interp, objv[1], names, "op", 0, &i) != TCL_OK) return TCL_ERROR;
  if (objc == 3 && Tcl_GetBooleanFromObj(interp, objv[2], &reset) != TCL_OK) return TCL_ERROR;
  int64_t cur = 0, high = 0;
  int rc = pagedb_status(ops[i], &cur, &high, reset);
  if (rc != PAGEDB_OK) return pdbError(interp, rc, "pagedb_status");
  Tcl_Obj *r = Tcl_NewListObj(0, NULL);
  Tcl_ListObjAppendElement(interp, r, Tcl_NewWideIntObj(cur));
  Tcl_ListObjAppendElement(interp, r, Tcl_NewWideIntObj(high));
  Tcl_SetObjResult(interp, r);
  return TCL_OK;
}

static int heap_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  size_t n, min;
  if (objc != 3) {
    Tcl_WrongNumArgs(interp, 1, objv, "BYTES MIN");
    return TCL_ERROR;
  }
  if (size_arg(interp, objv[1], &n) != TCL_OK || size_arg(interp, objv[2], &min) != TCL_OK) return TCL_ERROR;
  void *arena = malloc(n ? n : 1);   /* the heap's for the life of the process */
  int rc = arena ? pagedb_config(PAGEDB_CONFIG_HEAP, arena, n, min) : PAGEDB_NOMEM;
  if (rc != PAGEDB_OK) free(arena);
  Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_errname(rc), -1));
  return TCL_OK;
}

void Tclmem_Init(Tcl_Interp *interp) {
  static const struct { const char *name; int op; } calls[] = {
    { "pagedb_malloc", MALLOC }, { "pagedb_free", FREE }, { "pagedb_msize", MSIZE },
  };
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
    Tcl_CreateObjCommand(interp, calls[i].name, call_cmd, (ClientData)(intptr_t)calls[i].op, NULL);
  Tcl_CreateObjCommand(interp, "pagedb_status", status_cmd, NULL, NULL);
  Tcl_CreateObjCommand(interp, "pagedb_heap_config", heap_cmd, NULL, NULL);

  Tcl_CreateObjCommand(interp, "rss", rss_cmd, NULL, NULL);
  Tcl_CreateObjCommand(interp, "pagedb_memory_used", used_cmd, NULL, NULL);
  Tcl_CreateObjCommand(interp, "pagedb_release_memory", release_cmd, NULL, NULL);
  Tcl_CreateObjCommand(interp, "pagedb_shutdown", shutdown_cmd, NULL, NULL);
  Tcl_CreateObjCommand(interp, "mem_fault_install", install_cmd, NULL, NULL);
  Tcl_CreateObjCommand(interp, "mem_fault", fault_cmd, NULL, NULL);
  Tcl_CreateObjCommand(interp, "mem_fault_hits", hits_cmd, NULL, NULL);
}
