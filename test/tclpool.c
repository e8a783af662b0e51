/*
** tclpool.c -- Tcl commands over the page-buffer pool's public calls, for
** pool.test.  Only pagedb_* functions are used: the library exports no
** others.  Addresses are integers; 0 stands for NULL.
**
**   pool_alloc N              -> {ADDR CAP}, {0 0} on NULL.  N is taken
**                                modulo 2^64, so -1 asks for SIZE_MAX.
**   pool_free ADDR            -> the result's code name
**   pool_pin 0|1              -> the previous mode
**   memory_highwater ?RESET?  -> pagedb_memory_highwater
**   mem_limit N               -> the code name of pagedb_config MEMLIMIT
**   pool_touch ADDR N ?BYTE?  write N bytes (BYTE, default 0x33) at ADDR,
**                             so that they become resident
**   pool_peek ADDR OFF        -> the byte at ADDR+OFF
**   pool_debug                -> 1 if this build has assertions (and so
**                                poisons pool buffers), else 0
**   pool_fake_pinned ?-off?   install the fake embedder allocator below
**                             (pagedb_config POOL), or with -off the
**                             default again (POOL, NULL) -> the code name.
**                             Must precede the library's initialization.
**   pool_fake_calls           -> {NALLOC NFREE LIVE BAD}: the fake's calls,
**                                the bytes it has out, and the calls it
**                                found wrong (alignment, size, pAppData)
**   pool_getconfig            -> {fake|other PINNED} (PAGEDB_CONFIG_GETPOOL)
**   pool_config_misuse        -> the code names of pagedb_config POOL with
**                                iVersion 0, a NULL xAlloc, a NULL xFree
**   pool_thread start         -> ID: a worker thread of its own, which
**                                keeps its pool cache until it exits
**   pool_thread ID alloc N    -> {ADDR CAP}, as pool_alloc, in thread ID
**   pool_thread ID free ADDR  -> the code name, as pool_free, in thread ID
**   pool_thread ID exit       the thread returns (its cache is emptied by
**                             the pool's thread-exit destructor); joined
**   pool_stress NTHREAD NOPS ?SEED?
**       NTHREAD threads each allocate buffers of 64 KiB to 8 MiB, stamp
**       every 4 KiB page of each with a word of their own, and check the
**       stamps, the class, the alignment and that an interior free is
**       refused before freeing; thread 0 also trims now and then.  Returns
**       "ok" or the first problem.
*/
#include "pagedb.h"
#include "tclpagedb.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

static int get_addr(Tcl_Interp *interp, Tcl_Obj *o, void **pp) {
  Tcl_WideInt v;
  if (Tcl_GetWideIntFromObj(interp, o, &v) != TCL_OK) return TCL_ERROR;
  *pp = (void *)(uintptr_t)v;
  return TCL_OK;
}

static Tcl_Obj *addr_obj(const void *p) { return Tcl_NewWideIntObj((Tcl_WideInt)(uintptr_t)p); }

static int alloc_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  Tcl_WideInt n;
  if (objc != 2) {
    Tcl_WrongNumArgs(interp, 1, objv, "N");
    return TCL_ERROR;
  }
  if (Tcl_GetWideIntFromObj(interp, objv[1], &n) != TCL_OK) return TCL_ERROR;
  size_t cap = 0;
  void *p = pagedb_pool_alloc((size_t)(uint64_t)n, &cap);
  Tcl_Obj *r[2] = { addr_obj(p), Tcl_NewWideIntObj(p ? (Tcl_WideInt)cap : 0) };
  Tcl_SetObjResult(interp, Tcl_NewListObj(2, r));
  return TCL_OK;
}

static int free_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  void *p;
  if (objc != 2) {
    Tcl_WrongNumArgs(interp, 1, objv, "ADDR");
    return TCL_ERROR;
  }
  if (get_addr(interp, objv[1], &p) != TCL_OK) return TCL_ERROR;
  Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_errname(pagedb_pool_free(p)), -1));
  return TCL_OK;
}

static int pin_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  int on;
  if (objc != 2) {
    Tcl_WrongNumArgs(interp, 1, objv, "0|1");
    return TCL_ERROR;
  }
  if (Tcl_GetBooleanFromObj(interp, objv[1], &on) != TCL_OK) return TCL_ERROR;
  Tcl_SetObjResult(interp, Tcl_NewIntObj(pagedb_pool_pin(on)));
  return TCL_OK;
}

static int highwater_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  int reset = 0;
  if (objc > 2 || (objc == 2 && Tcl_GetBooleanFromObj(interp, objv[1], &reset) != TCL_OK)) {
    Tcl_WrongNumArgs(interp, 1, objv, "?RESET?");
    return TCL_ERROR;
  }
  Tcl_SetObjResult(interp, Tcl_NewWideIntObj(pagedb_memory_highwater(reset)));
  return TCL_OK;
}

static int limit_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  Tcl_WideInt n;
  if (objc != 2) {
    Tcl_WrongNumArgs(interp, 1, objv, "N");
    return TCL_ERROR;
  }
  if (Tcl_GetWideIntFromObj(interp, objv[1], &n) != TCL_OK) return TCL_ERROR;
  Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_errname(pagedb_config(PAGEDB_CONFIG_MEMLIMIT, (int64_t)n)), -1));
  return TCL_OK;
}

static int touch_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  void *p;
  Tcl_WideInt n;
  int byte = 0x33;
  if (objc != 3 && objc != 4) {
    Tcl_WrongNumArgs(interp, 1, objv, "ADDR N ?BYTE?");
    return TCL_ERROR;
  }
  if (get_addr(interp, objv[1], &p) != TCL_OK || Tcl_GetWideIntFromObj(interp, objv[2], &n) != TCL_OK ||
      (objc == 4 && Tcl_GetIntFromObj(interp, objv[3], &byte) != TCL_OK))
    return TCL_ERROR;
  if (!p || n < 0) {
    Tcl_SetObjResult(interp, Tcl_NewStringObj("pool_touch: NULL address or negative length", -1));
    return TCL_ERROR;
  }
  memset(p, byte, (size_t)n);
  return TCL_OK;
}

static int peek_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  void *p;
  Tcl_WideInt off;
  if (objc != 3) {
    Tcl_WrongNumArgs(interp, 1, objv, "ADDR OFF");
    return TCL_ERROR;
  }
  if (get_addr(interp, objv[1], &p) != TCL_OK || Tcl_GetWideIntFromObj(interp, objv[2], &off) != TCL_OK)
    return TCL_ERROR;
  if (!p) {
    Tcl_SetObjResult(interp, Tcl_NewStringObj("pool_peek: NULL address", -1));
    return TCL_ERROR;
  }
  Tcl_SetObjResult(interp, Tcl_NewIntObj(((volatile uint8_t *)p)[off]));
  return TCL_OK;
}

static int debug_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  (void)objc;
  (void)objv;
#ifdef NDEBUG
  Tcl_SetObjResult(interp, Tcl_NewIntObj(0));
#else
  Tcl_SetObjResult(interp, Tcl_NewIntObj(1));
#endif
  return TCL_OK;
}

/* ---- the fake embedder allocator: aligned_alloc, reported pinned ---- */

#define FAKE_MAX 4096

static struct Fake {
  pthread_mutex_t mu;
  long nalloc, nfree, nbad;
  int64_t live;
  int n;
  struct {
    void *p;
    size_t n;
  } out[FAKE_MAX];
} fake = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void *fake_alloc(void *app, size_t n, size_t align) {
  struct Fake *f = app;
  /* pagedb.h promises exactly these alignments. */
  int bad = f != &fake || align != (n >= 2 * MiB ? 2 * MiB : 4096) || n % align != 0;
  void *p = bad ? NULL : aligned_alloc(align, n);
  pthread_mutex_lock(&fake.mu);
  fake.nalloc++;
  if (bad) fake.nbad++;
  if (p && fake.n == FAKE_MAX) {
    free(p);
    p = NULL;
  }
  if (p) {
    fake.out[fake.n].p = p;
    fake.out[fake.n].n = n;
    fake.n++;
    fake.live += (int64_t)n;
  }
  pthread_mutex_unlock(&fake.mu);
  return p;
}

static void fake_free(void *app, void *p, size_t n) {
  struct Fake *f = app;
  pthread_mutex_lock(&fake.mu);
  fake.nfree++;
  int i = 0;
  while (i < fake.n && fake.out[i].p != p) i++;
  if (f != &fake || i == fake.n || fake.out[i].n != n) {
    /* Not ours, or the wrong size: leak it rather than guess. */
    fake.nbad++;
  } else {
    fake.live -= (int64_t)n;
    fake.out[i] = fake.out[--fake.n];
    free(p);
  }
  pthread_mutex_unlock(&fake.mu);
}

static int fake_pinned_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  if (objc > 2 || (objc == 2 && strcmp(Tcl_GetString(objv[1]), "-off") != 0)) {
    Tcl_WrongNumArgs(interp, 1, objv, "?-off?");
    return TCL_ERROR;
  }
  int rc;
  if (objc == 2) {
    rc = pagedb_config(PAGEDB_CONFIG_POOL, (const pagedb_pool_methods *)NULL);
  } else {
    pagedb_pool_methods m = { 1, fake_alloc, fake_free, &fake, 1 };
    rc = pagedb_config(PAGEDB_CONFIG_POOL, &m);
  }
  Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_errname(rc), -1));
  return TCL_OK;
}

static int fake_calls_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  (void)objc;
  (void)objv;
  pthread_mutex_lock(&fake.mu);
  Tcl_Obj *r[4] = { Tcl_NewLongObj(fake.nalloc), Tcl_NewLongObj(fake.nfree), Tcl_NewWideIntObj(fake.live),
                    Tcl_NewLongObj(fake.nbad) };
  pthread_mutex_unlock(&fake.mu);
  Tcl_SetObjResult(interp, Tcl_NewListObj(4, r));
  return TCL_OK;
}

static int getconfig_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  (void)objc;
  (void)objv;
  pagedb_pool_methods m;
  memset(&m, 0, sizeof m);
  int rc = pagedb_config(PAGEDB_CONFIG_GETPOOL, &m);
  if (rc != PAGEDB_OK) return pdbError(interp, rc, "pagedb_config GETPOOL");
  Tcl_Obj *r[2] = { Tcl_NewStringObj(m.xAlloc == fake_alloc && m.xFree == fake_free ? "fake" : "other", -1),
                    Tcl_NewIntObj(m.pinned) };
  Tcl_SetObjResult(interp, Tcl_NewListObj(2, r));
  return TCL_OK;
}

static int config_misuse_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  (void)objc;
  (void)objv;
  const pagedb_pool_methods bad[3] = {
    { 0, fake_alloc, fake_free, &fake, 1 },
    { 1, NULL, fake_free, &fake, 1 },
    { 1, fake_alloc, NULL, &fake, 1 },
  };
  Tcl_Obj *r = Tcl_NewListObj(0, NULL);
  for (int i = 0; i < 3; i++)
    Tcl_ListObjAppendElement(interp, r, Tcl_NewStringObj(pagedb_errname(pagedb_config(PAGEDB_CONFIG_POOL, &bad[i])), -1));
  Tcl_SetObjResult(interp, r);
  return TCL_OK;
}

/* ---- pool_stress ---- */

#define HOLD 4

typedef struct Stress {
  int nthread;
  long nops;
  uint64_t seed;
  atomic_int stop;
  pthread_mutex_t mu;
  char why[256];               /* the first problem */
} Stress;

typedef struct Held {
  uint8_t *p;
  size_t cap;
  uint64_t tag;
} Held;

static void fail(Stress *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(Stress *s, const char *fmt, ...) {
  pthread_mutex_lock(&s->mu);
  if (!atomic_load(&s->stop)) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof s->why, fmt, ap);
    va_end(ap);
    atomic_store(&s->stop, 1);
  }
  pthread_mutex_unlock(&s->mu);
}

/* A word at the start of every 4 KiB page and at the very end: two live
** buffers sharing any page would overwrite each other's stamps. */
static void stamp(Held *h) {
  for (size_t off = 0; off < h->cap; off += 4096) {
    uint64_t w = mix3(h->tag, off, 0);
    memcpy(h->p + off, &w, 8);
  }
  uint64_t w = mix3(h->tag, h->cap, 1);
  memcpy(h->p + h->cap - 8, &w, 8);
}

static int stamped(Held *h) {
  for (size_t off = 0; off < h->cap; off += 4096) {
    uint64_t w;
    memcpy(&w, h->p + off, 8);
    if (w != mix3(h->tag, off, 0)) return 0;
  }
  uint64_t w;
  memcpy(&w, h->p + h->cap - 8, 8);
  return w == mix3(h->tag, h->cap, 1);
}

typedef struct StressArg {
  Stress *s;
  int t;
} StressArg;

static int give_back(Stress *s, int t, Held *h) {
  if (!stamped(h)) {
    fail(s, "thread %d: buffer %p (%zu bytes) was overwritten while in use", t, (void *)h->p, h->cap);
    return 1;
  }
  /* h->p + 4096 lies inside a buffer this thread holds, so it can be no
  ** other buffer's start, whatever the other threads do. */
  int rc = pagedb_pool_free(h->p + 4096);
  if (rc != PAGEDB_MISUSE) {
    fail(s, "thread %d: freeing %p + 4096 gave %s", t, (void *)h->p, pagedb_errname(rc));
    return 1;
  }
  rc = pagedb_pool_free(h->p);
  if (rc != PAGEDB_OK) {
    fail(s, "thread %d: freeing %p gave %s", t, (void *)h->p, pagedb_errname(rc));
    return 1;
  }
  return 0;
}

static void *stress_thread(void *arg) {
  Stress *s = ((StressArg *)arg)->s;
  int t = ((StressArg *)arg)->t;
  Held held[HOLD];
  int nheld = 0;
  uint64_t r = mix3(s->seed, (uint64_t)t, 2);
  for (long op = 0; op < s->nops && !atomic_load(&s->stop); op++) {
    r = mix3(r, (uint64_t)op, 3);
    if (nheld == HOLD || (nheld > 0 && (r & 1))) {
      int i = (int)((r >> 1) % (uint64_t)nheld);
      if (give_back(s, t, &held[i])) break;
      held[i] = held[--nheld];
    } else {
      size_t cls = (size_t)64 << 10 << ((r >> 1) % 8);   /* 64 KiB .. 8 MiB */
      size_t n = cls == (64u << 10) ? 1 + (r >> 8) % cls : cls / 2 + 1 + (r >> 8) % (cls / 2);
      size_t cap = 0;
      uint8_t *p = pagedb_pool_alloc(n, &cap);
      if (!p) {
        fail(s, "thread %d: pagedb_pool_alloc(%zu) failed", t, n);
        break;
      }
      size_t align = cls >= 2 * MiB ? 2 * MiB : 4096;
      if (cap != cls || (uintptr_t)p % align != 0) {
        fail(s, "thread %d: pagedb_pool_alloc(%zu) gave %p with cap %zu", t, n, (void *)p, cap);
        pagedb_pool_free(p);
        break;
      }
      held[nheld] = (Held){ p, cap, ((uint64_t)t << 40) | (uint64_t)op };
      stamp(&held[nheld++]);
    }
    /* Trim races with the others' allocations and frees. */
    if (t == 0 && op % 64 == 63) pagedb_release_memory(16 * MiB);
  }
  while (nheld > 0) {
    nheld--;
    if (atomic_load(&s->stop)) pagedb_pool_free(held[nheld].p);
    else give_back(s, t, &held[nheld]);
  }
  return NULL;
}

static int stress_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  int nthread;
  long nops;
  Tcl_WideInt seed = 1;
  if (objc != 3 && objc != 4) {
    Tcl_WrongNumArgs(interp, 1, objv, "NTHREAD NOPS ?SEED?");
    return TCL_ERROR;
  }
  if (Tcl_GetIntFromObj(interp, objv[1], &nthread) != TCL_OK || Tcl_GetLongFromObj(interp, objv[2], &nops) != TCL_OK ||
      (objc == 4 && Tcl_GetWideIntFromObj(interp, objv[3], &seed) != TCL_OK))
    return TCL_ERROR;
  if (nthread < 1 || nthread > 256 || nops < 0) {
    Tcl_SetObjResult(interp, Tcl_NewStringObj("pool_stress: NTHREAD 1..256, NOPS >= 0", -1));
    return TCL_ERROR;
  }
  Stress s = { .nthread = nthread, .nops = nops, .seed = (uint64_t)seed };
  pthread_mutex_init(&s.mu, NULL);
  atomic_init(&s.stop, 0);
  pthread_t tid[256];
  StressArg args[256];
  int started = 0;
  for (int i = 0; i < nthread; i++) {
    args[i] = (StressArg){ &s, i };
    if (pthread_create(&tid[i], NULL, stress_thread, &args[i]) != 0) {
      fail(&s, "pthread_create failed");
      break;
    }
    started++;
  }
  for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
  pthread_mutex_destroy(&s.mu);
  Tcl_SetObjResult(interp, Tcl_NewStringObj(atomic_load(&s.stop) ? s.why : "ok", -1));
  return TCL_OK;
}

/* ---- pool_thread: one call at a time in a thread of its own ---- */

#define NWORKER 4

typedef struct Worker {
  pthread_t tid;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int used;           /* started and not yet exited */
  int op;             /* 0 idle, 1 alloc, 2 free, 3 exit; back to 0 when done */
  uint64_t arg;
  void *p;
  size_t cap;
  int rc;
} Worker;

static Worker workers[NWORKER];

static void *worker_main(void *arg) {
  Worker *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (w->op == 0) pthread_cond_wait(&w->cv, &w->mu);
    int op = w->op;
    if (op == 1) w->p = pagedb_pool_alloc((size_t)w->arg, &w->cap);
    else if (op == 2) w->rc = pagedb_pool_free((void *)(uintptr_t)w->arg);
    w->op = 0;
    pthread_cond_broadcast(&w->cv);
    if (op == 3) break;
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* Run OP(ARG) in W and wait for it. */
static void worker_call(Worker *w, int op, uint64_t arg) {
  pthread_mutex_lock(&w->mu);
  w->op = op;
  w->arg = arg;
  pthread_cond_broadcast(&w->cv);
  while (w->op != 0) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
}

static int thread_cmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  int id;
  if (objc == 2 && !strcmp(Tcl_GetString(objv[1]), "start")) {
    for (id = 0; id < NWORKER && workers[id].used; id++) {
    }
    if (id == NWORKER) {
      Tcl_SetObjResult(interp, Tcl_NewStringObj("pool_thread: too many threads", -1));
      return TCL_ERROR;
    }
    Worker *w = &workers[id];
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->tid, NULL, worker_main, w) != 0) {
      Tcl_SetObjResult(interp, Tcl_NewStringObj("pool_thread: pthread_create failed", -1));
      return TCL_ERROR;
    }
    w->used = 1;
    Tcl_SetObjResult(interp, Tcl_NewIntObj(id));
    return TCL_OK;
  }
  const char *op = objc >= 3 ? Tcl_GetString(objv[2]) : "";
  int nargs = !strcmp(op, "exit") ? 3 : 4;
  if (objc != nargs || Tcl_GetIntFromObj(interp, objv[1], &id) != TCL_OK || id < 0 || id >= NWORKER ||
      !workers[id].used) {
    Tcl_SetObjResult(interp, Tcl_NewStringObj("usage: pool_thread start | ID alloc N | ID free ADDR | ID exit", -1));
    return TCL_ERROR;
  }
  Worker *w = &workers[id];
  Tcl_WideInt v = 0;
  if (nargs == 4 && Tcl_GetWideIntFromObj(interp, objv[3], &v) != TCL_OK) return TCL_ERROR;
  if (!strcmp(op, "alloc")) {
    worker_call(w, 1, (uint64_t)v);
    Tcl_Obj *r[2] = { addr_obj(w->p), Tcl_NewWideIntObj(w->p ? (Tcl_WideInt)w->cap : 0) };
    Tcl_SetObjResult(interp, Tcl_NewListObj(2, r));
  } else if (!strcmp(op, "free")) {
    worker_call(w, 2, (uint64_t)v);
    Tcl_SetObjResult(interp, Tcl_NewStringObj(pagedb_errname(w->rc), -1));
  } else if (!strcmp(op, "exit")) {
    worker_call(w, 3, 0);
    pthread_join(w->tid, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    w->used = 0;
  } else {
    Tcl_SetObjResult(interp, Tcl_NewStringObj("usage: pool_thread start | ID alloc N | ID free ADDR | ID exit", -1));
    return TCL_ERROR;
  }
  return TCL_OK;
}

int Tclpool_Init(Tcl_Interp *interp) {
  static const struct {
    const char *name;
    Tcl_ObjCmdProc *proc;
  } cmds[] = {
    { "pool_alloc", alloc_cmd },
    { "pool_free", free_cmd },
    { "pool_pin", pin_cmd },
    { "memory_highwater", highwater_cmd },
    { "mem_limit", limit_cmd },
    { "pool_touch", touch_cmd },
    { "pool_peek", peek_cmd },
    { "pool_debug", debug_cmd },
    { "pool_fake_pinned", fake_pinned_cmd },
    { "pool_fake_calls", fake_calls_cmd },
    { "pool_getconfig", getconfig_cmd },
    { "pool_config_misuse", config_misuse_cmd },
    { "pool_stress", stress_cmd },
    { "pool_thread", thread_cmd },
  };
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    if (!Tcl_CreateObjCommand(interp, cmds[i].name, cmds[i].proc, NULL, NULL)) return TCL_ERROR;
  }
  return TCL_OK;
}
