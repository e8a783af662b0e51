/*
** admin.c -- the Dataset methods that work on the catalog or the whole
** dataset rather than on samples: sql() (typed rows), sql_update(),
** sql_user(), check(), stats(), vacuum(), attach(), commit(), delete(),
** commit_parts(), seal(), and
** the module's status().
**
** Each runs its pagedb call through ds_call: the GIL released, the handle
** entered (pypagedb.h, invariant 1) -- shared, or exclusively for the calls
** pagedb.h wants alone (sql_update and an in-place vacuum need every reader
** closed: the pool's are closed first; an iterator's stays open and makes
** pagedb refuse with PAGEDB_MISUSE) -- and a failure raised as the
** pagedb.Error subclass of its code, with pagedb's message.
**
** An in-place vacuum replaces the data file, and with it the map that
** zero-copy views point into (pagedb.h: pointers taken before it are
** invalid after it): it is refused while any view of the map is alive.
**
** In a process forked from the opener, pagedb refuses every write itself
** (PAGEDB_MISUSE); SQL, check() and stats() read the catalog through SQLite,
** whose connections must not cross fork(), so they are refused here.
*/
#include "pypagedb.h"

#include <string.h>
#include <unistd.h>

/* Run FN(ds, ARG, E) with the GIL released, entered (EXCL: exclusively,
** the pool's readers closed); None, or the failure raised: E if FN set it,
** else pagedb_errmsg's. */
static PyObject *ds_call(PyDataset *ds, int excl, int (*fn)(PyDataset *, void *, PdbErr *), void *arg) {
  if (ds_check_open(ds)) return NULL;
  PdbErr e = {PAGEDB_OK, ""};
  int rc = PAGEDB_MISUSE;
  Py_BEGIN_ALLOW_THREADS
  int entered = 0;
  if (excl) {
    pthread_rwlock_wrlock(&ds->lock);
    if (ds->db) {
      ds_pool_close(ds);
      entered = 1;
    } else {
      pthread_rwlock_unlock(&ds->lock);
      pdberr_set(&e, PAGEDB_MISUSE, "the dataset is closed");
    }
  } else {
    entered = ds_enter(ds, &e) == 0;
  }
  if (entered) {
    rc = fn(ds, arg, &e);
    if (rc != PAGEDB_OK && e.rc == PAGEDB_OK) pdberr_set(&e, rc, pagedb_errmsg(ds->db));
    ds_leave(ds);
  }
  Py_END_ALLOW_THREADS
  if (rc != PAGEDB_OK) return pdberr_raise(&e);
  Py_RETURN_NONE;
}

/* The catalog's SQLite connections must not cross fork(). */
static int refuse_in_child(PyDataset *ds, const char *what) {
  if (ds->pid == getpid()) return 0;
  pdb_raise(PAGEDB_MISUSE, "%s: %S was opened by process %ld; process %ld (a fork) may read its samples but not "
            "its catalog: open the dataset again here", what, ds->path, (long)ds->pid, (long)getpid());
  return -1;
}

/* ------------------------------------------------------------------ */
/* SQL                                                                 */
/* ------------------------------------------------------------------ */

typedef struct {
  const char *sql;
  PyThreadState *ts;
  PyObject *rows;                 /* list, or NULL after a failure */
  int64_t n;                      /* sql_update, sql_user: rows changed */
} SqlCtx;

static PyObject *value_object(const pagedb_value *v) {
  switch (v->type) {
    case PAGEDB_INT: return PyLong_FromLongLong(v->i);
    case PAGEDB_REAL: return PyFloat_FromDouble(v->d);
    case PAGEDB_TEXT: return PyUnicode_DecodeUTF8(v->p ? v->p : "", (Py_ssize_t)v->n, "surrogateescape");
    case PAGEDB_BYTES: return PyBytes_FromStringAndSize(v->p ? v->p : "", (Py_ssize_t)v->n);
    default: return Py_NewRef(Py_None);
  }
}

/* pagedb_sql_values's row callback: entered, GIL released; takes the GIL back. */
static int sql_row(void *ctx, int ncol, const pagedb_value *vals, const char *const *names) {
  SqlCtx *c = ctx;
  PyEval_RestoreThread(c->ts);
  int stop = 1;
  if (c->rows) {
    PyObject *row = PyTuple_New(ncol);
    for (int i = 0; row && i < ncol; i++) {
      PyObject *v = value_object(&vals[i]);
      if (!v) Py_CLEAR(row);
      else PyTuple_SET_ITEM(row, i, v);
    }
    if (row && PyList_Append(c->rows, row) == 0) stop = 0;
    else Py_CLEAR(c->rows);
    Py_XDECREF(row);
  }
  c->ts = PyEval_SaveThread();
  return stop;
}

static PyObject *admin_sql(PyDataset *ds, PyObject *args) {
  const char *sql;
  if (!PyArg_ParseTuple(args, "s:sql", &sql) || ds_check_open(ds) || refuse_in_child(ds, "sql")) return NULL;
  SqlCtx c = {sql, NULL, PyList_New(0), 0};
  if (!c.rows) return NULL;
  PdbErr e;
  int rc = PAGEDB_MISUSE;
  /* Not Py_BEGIN_ALLOW_THREADS: the callback takes the GIL back and must
  ** find the thread state where it can restore it. */
  c.ts = PyEval_SaveThread();
  if (ds_enter(ds, &e) == 0) {
    rc = pagedb_sql_values(ds->db, sql, sql_row, &c);
    if (rc != PAGEDB_OK) pdberr_set(&e, rc, pagedb_errmsg(ds->db));
    ds_leave(ds);
  }
  PyEval_RestoreThread(c.ts);
  if (!c.rows) return NULL;   /* the callback's exception */
  if (rc != PAGEDB_OK) {
    Py_DECREF(c.rows);
    return pdberr_raise(&e);
  }
  return c.rows;
}

static int do_sql_update(PyDataset *ds, void *arg, PdbErr *e) {
  SqlCtx *c = arg;
  return pagedb_sql_update(ds->db, c->sql, &c->n);
}

static int do_sql_user(PyDataset *ds, void *arg, PdbErr *e) {
  SqlCtx *c = arg;
  return pagedb_sql_user(ds->db, c->sql, &c->n);
}

/* sql_update(sql) / sql_user(sql) -> the number of samples / rows changed. */
static PyObject *sql_change(PyDataset *ds, PyObject *args, int user) {
  SqlCtx c = {NULL, NULL, NULL, 0};
  if (!PyArg_ParseTuple(args, user ? "s:sql_user" : "s:sql_update", &c.sql) || ds_check_open(ds) ||
      refuse_in_child(ds, user ? "sql_user" : "sql_update"))
    return NULL;
  /* pagedb_sql_update wants no reader open: exclusive, the pool closed. */
  PyObject *r = ds_call(ds, !user, user ? do_sql_user : do_sql_update, &c);
  if (!r) return NULL;
  Py_DECREF(r);
  return PyLong_FromLongLong(c.n);
}

static PyObject *admin_sql_update(PyDataset *ds, PyObject *args) {
  return sql_change(ds, args, 0);
}

static PyObject *admin_sql_user(PyDataset *ds, PyObject *args) {
  return sql_change(ds, args, 1);
}

/* ------------------------------------------------------------------ */
/* check, stats                                                        */
/* ------------------------------------------------------------------ */

/* The problems pagedb_check reports, gathered with the GIL released. */
typedef struct {
  int flags;
  int64_t nproblems;
  struct Problem {
    int64_t page, id;
    int field;
    char *what;
  } *v;
  size_t n, cap;
  int nomem;
} CheckCtx;

static void check_cb(void *ctx, int64_t page, int64_t id, int field, const char *what) {
  CheckCtx *c = ctx;
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 16;
    struct Problem *v = PyMem_RawRealloc(c->v, cap * sizeof *v);
    if (!v) {
      c->nomem = 1;
      return;
    }
    c->v = v;
    c->cap = cap;
  }
  char *w = PyMem_RawMalloc(strlen(what) + 1);
  if (!w) {
    c->nomem = 1;
    return;
  }
  strcpy(w, what);
  c->v[c->n++] = (struct Problem){page, id, field, w};
}

static int do_check(PyDataset *ds, void *arg, PdbErr *e) {
  CheckCtx *c = arg;
  int rc = pagedb_check(ds->db, c->flags, check_cb, c, &c->nproblems);
  return rc == PAGEDB_CORRUPT ? PAGEDB_OK : rc;   /* problems are the answer, not a failure */
}

/* check(quick=False) -> list of (page, id, field, what): [] when sound. */
static PyObject *admin_check(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"quick", NULL};
  int quick = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:check", kwlist, &quick) || ds_check_open(ds) ||
      refuse_in_child(ds, "check"))
    return NULL;
  CheckCtx c = {quick ? PAGEDB_CHECK_QUICK : 0, 0, NULL, 0, 0, 0};
  PyObject *r = ds_call(ds, 0, do_check, &c);
  PyObject *list = r ? PyList_New((Py_ssize_t)c.n) : NULL;
  Py_XDECREF(r);
  if (list && c.nomem) {
    Py_CLEAR(list);
    PyErr_NoMemory();
  }
  for (size_t i = 0; i < c.n; i++) {
    if (list) {
      PyObject *t = Py_BuildValue("(LLis)", (long long)c.v[i].page, (long long)c.v[i].id, c.v[i].field, c.v[i].what);
      if (!t) Py_CLEAR(list);
      else PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    PyMem_RawFree(c.v[i].what);
  }
  PyMem_RawFree(c.v);
  return list;
}

typedef struct {
  pagedb_stat st;
  pagedb_field_stat *fs;          /* [nfield] */
  int nfield;
} StatsCtx;

static int do_stats(PyDataset *ds, void *arg, PdbErr *e) {
  StatsCtx *c = arg;
  int rc = pagedb_stats(ds->db, &c->st);
  for (int f = 0; rc == PAGEDB_OK && f < c->nfield; f++) rc = pagedb_field_stats(ds->db, f, &c->fs[f]);
  return rc;
}

/* D[NAME] = V; a failure is left set for the caller to see (PyErr_Occurred). */
static void set_int(PyObject *d, const char *name, int64_t v) {
  PyObject *o = PyErr_Occurred() ? NULL : PyLong_FromLongLong(v);
  if (o) PyDict_SetItemString(d, name, o);
  Py_XDECREF(o);
}

#define STAT(d, s, name) set_int(d, #name, (s)->name)

/* stats() -> dict of pagedb_stats's counts, "fill_hist" a list, and "fields"
** a dict of each field's pagedb_field_stats. */
static PyObject *admin_stats(PyDataset *ds, PyObject *noarg) {
  if (ds_check_open(ds) || refuse_in_child(ds, "stats")) return NULL;
  StatsCtx c = {.nfield = ds->nfield};
  c.fs = PyMem_Calloc(c.nfield ? (size_t)c.nfield : 1, sizeof *c.fs);
  if (!c.fs) return PyErr_NoMemory();
  PyObject *r = ds_call(ds, 0, do_stats, &c), *d = r ? PyDict_New() : NULL, *fields = NULL, *hist = NULL;
  Py_XDECREF(r);
  if (d) {
    const pagedb_stat *s = &c.st;
    STAT(d, s, pages); STAT(d, s, runs); STAT(d, s, multipage_runs); STAT(d, s, samples);
    STAT(d, s, bytes_used); STAT(d, s, bytes_stored); STAT(d, s, bytes_raw); STAT(d, s, bytes_dead);
    STAT(d, s, bytes_header); STAT(d, s, bytes_waste); STAT(d, s, moved); STAT(d, s, io_reads);
    STAT(d, s, io_read_bytes); STAT(d, s, io_writes); STAT(d, s, io_write_bytes); STAT(d, s, io_syncs);
    STAT(d, s, bytes_padding);
    hist = PyList_New(10);
    for (int i = 0; hist && i < 10; i++) {
      PyObject *o = PyLong_FromLongLong(s->fill_hist[i]);
      if (!o) Py_CLEAR(hist);
      else PyList_SET_ITEM(hist, i, o);
    }
    fields = PyDict_New();
    for (int f = 0; fields && f < c.nfield; f++) {
      PyObject *fd = PyDict_New();
      if (!fd) break;
      STAT(fd, &c.fs[f], values); STAT(fd, &c.fs[f], compressed); STAT(fd, &c.fs[f], bytes_stored);
      STAT(fd, &c.fs[f], bytes_raw);
      if (!PyErr_Occurred()) PyDict_SetItem(fields, PyStructSequence_GET_ITEM(PyTuple_GET_ITEM(ds->fields, f), 0), fd);
      Py_DECREF(fd);
    }
    if (!hist || !fields || PyDict_SetItemString(d, "fill_hist", hist) < 0 ||
        PyDict_SetItemString(d, "fields", fields) < 0 || PyErr_Occurred())
      Py_CLEAR(d);
  }
  Py_XDECREF(hist);
  Py_XDECREF(fields);
  PyMem_Free(c.fs);
  return d;
}

/* pagedb.status() -> {name: (current, highwater)} of pagedb_status's counters
** (the library's, process-wide). */
PyObject *admin_status(PyObject *self, PyObject *noarg) {
  static const struct { int op; const char *name; } ops[] = {
    {PAGEDB_STATUS_MEMORY_USED, "memory_used"}, {PAGEDB_STATUS_MALLOC_COUNT, "malloc_count"},
    {PAGEDB_STATUS_POOL_USED, "pool_used"}, {PAGEDB_STATUS_POOL_CACHED, "pool_cached"},
    {PAGEDB_STATUS_POOL_PINNED, "pool_pinned"}, {PAGEDB_STATUS_HEAP_FREE, "heap_free"},
  };
  PyObject *d = PyDict_New();
  for (size_t i = 0; d && i < sizeof ops / sizeof ops[0]; i++) {
    int64_t cur = 0, high = 0;
    int rc = pagedb_status(ops[i].op, &cur, &high, 0);
    if (rc != PAGEDB_OK) {
      Py_DECREF(d);
      return pdb_raise(rc, "pagedb_status(%d) failed", ops[i].op);
    }
    PyObject *t = Py_BuildValue("(LL)", (long long)cur, (long long)high);
    if (!t || PyDict_SetItemString(d, ops[i].name, t) < 0) Py_CLEAR(d);
    Py_XDECREF(t);
  }
  return d;
}

/* ------------------------------------------------------------------ */
/* vacuum, attach, commit, delete                                      */
/* ------------------------------------------------------------------ */

typedef struct {
  const char *path;
  Py_ssize_t page_size;
  int policy;
  long long offset;
  int64_t n;
  int nre;                  /* vacuum(codecs=...): fields recoded */
  const char *re_field[16];
  int re_codec[16];
} FileCtx;

static int do_vacuum(PyDataset *ds, void *arg, PdbErr *e) {
  FileCtx *c = arg;
  if (!c->path) {
    pthread_mutex_lock(&ds->pinmu);
    int64_t pins = ds->pins;
    pthread_mutex_unlock(&ds->pinmu);
    if (pins > 0) {   /* a view made since the check in admin_vacuum */
      pdberr_set(e, PAGEDB_MISUSE, "vacuum in place: zero-copy views of the map are alive");
      return PAGEDB_MISUSE;
    }
  }
  if (c->nre) return pagedb_vacuum_recode(ds->db, c->path, (size_t)c->page_size, c->nre, c->re_field, c->re_codec);
  return pagedb_vacuum(ds->db, c->path, (size_t)c->page_size);
}

/* vacuum(dest=None, page_size=0, codecs=None): rewrite without dead space,
** in place or into a new dataset DEST; CODECS, {field name: codec name},
** recompresses those fields (pagedb_vacuum_recode). */
static PyObject *admin_vacuum(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"dest", "page_size", "codecs", NULL};
  PyObject *dest = Py_None, *bdest = NULL, *codecs = Py_None;
  FileCtx c = {NULL, 0, 0, 0, 0, 0, {NULL}, {0}};
  PyObject *keep[16];
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OnO:vacuum", kwlist, &dest, &c.page_size, &codecs)) return NULL;
  if (c.page_size < 0) return pdb_raise(PAGEDB_RANGE, "page_size %zd", c.page_size);
  if (dest != Py_None) {
    if (!PyUnicode_FSConverter(dest, &bdest)) return NULL;
    c.path = PyBytes_AS_STRING(bdest);
  } else if (ds_check_open(ds) == 0) {
    /* In place: the map the views point into is replaced. */
    pthread_mutex_lock(&ds->pinmu);
    int64_t pins = ds->pins;
    pthread_mutex_unlock(&ds->pinmu);
    if (pins > 0)
      return pdb_raise(PAGEDB_MISUSE, "vacuum in place of %S: %lld zero-copy views of its map are alive (the "
                       "vacuum replaces the file under them): delete them first", ds->path, (long long)pins);
  }
  if (codecs != Py_None) {
    if (!PyDict_Check(codecs) || PyDict_Size(codecs) > 16) {
      PyErr_SetString(PyExc_TypeError, "codecs: a dict of at most 16 {field name: codec name}");
      { Py_XDECREF(bdest); return NULL; }
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(codecs, &pos, &k, &v)) {
      const char *f = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
      const char *cn = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
      if (!f || !cn) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "codecs: field names and codec names are str");
        for (int i = 0; i < c.nre; i++) Py_DECREF(keep[i]);
        { Py_XDECREF(bdest); return NULL; }
      }
      if (pagedb_codec_parse(cn, &c.re_codec[c.nre]) != PAGEDB_OK) {
        PyErr_Format(PyExc_ValueError, "codecs: codec %R for field %R: use 'none', 'lz4', 'lz4hc', 'zstd' or"
                     " 'zstd-dict', optionally with ':LEVEL'", v, k);
        for (int i = 0; i < c.nre; i++) Py_DECREF(keep[i]);
        { Py_XDECREF(bdest); return NULL; }
      }
      Py_INCREF(k);              /* held for the call: the GIL is released */
      keep[c.nre] = k;
      c.re_field[c.nre++] = f;
    }
  }
  PyObject *r = ds_call(ds, c.path == NULL, do_vacuum, &c);
  if (r && !c.path && c.nre && ds_schema_refresh(ds) < 0) Py_CLEAR(r);
  for (int i = 0; i < c.nre; i++) Py_DECREF(keep[i]);
  Py_XDECREF(bdest);
  return r;
}

static int do_attach(PyDataset *ds, void *arg, PdbErr *e) {
  FileCtx *c = arg;
  return pagedb_attach(ds->db, c->path, c->policy, (int64_t)c->offset, &c->n);
}

/* attach(other, policy='keep'|'offset'|'after', offset=0) -> samples attached. */
static PyObject *admin_attach(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"other", "policy", "offset", NULL};
  PyObject *other, *bother = NULL;
  const char *policy = "keep";
  FileCtx c = {NULL, 0, 0, 0, 0, 0, {NULL}, {0}};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|sL:attach", kwlist, &other, &policy, &c.offset)) return NULL;
  if (strcmp(policy, "keep") == 0) c.policy = PAGEDB_ATTACH_KEEP;
  else if (strcmp(policy, "offset") == 0) c.policy = PAGEDB_ATTACH_OFFSET;
  else if (strcmp(policy, "after") == 0) c.policy = PAGEDB_ATTACH_AFTER;
  else return PyErr_Format(PyExc_ValueError, "attach policy '%s': use 'keep', 'offset' or 'after'", policy);
  if (!PyUnicode_FSConverter(other, &bother)) return NULL;
  c.path = PyBytes_AS_STRING(bother);
  PyObject *r = ds_call(ds, 0, do_attach, &c);
  Py_DECREF(bother);
  if (!r) return NULL;
  Py_DECREF(r);
  return PyLong_FromLongLong(c.n);
}

/* --- parts (issue 26) --- */

typedef struct {
  pagedb_part *parts;
  int n, policy;
  int64_t got;
  uint64_t seal;
} PartsCtx;

static int do_commit_parts(PyDataset *ds, void *arg, PdbErr *e) {
  PartsCtx *c = arg;
  return pagedb_parts_commit(ds->db, c->parts, c->n, c->policy, &c->got);
}

/* commit_parts(parts, policy='keep') -> samples committed.  Each part is a
** path, or a tuple (path, name=None, offset=0, seal=0). */
static PyObject *admin_commit_parts(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"parts", "policy", NULL};
  PyObject *seq, *fast = NULL, *r = NULL;
  const char *policy = "keep";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|s:commit_parts", kwlist, &seq, &policy)) return NULL;
  PartsCtx c = {NULL, 0, 0, 0, 0};
  if (strcmp(policy, "keep") == 0) c.policy = PAGEDB_ATTACH_KEEP;
  else if (strcmp(policy, "offset") == 0) c.policy = PAGEDB_ATTACH_OFFSET;
  else if (strcmp(policy, "after") == 0) c.policy = PAGEDB_ATTACH_AFTER;
  else return PyErr_Format(PyExc_ValueError, "commit_parts policy '%s': use 'keep', 'offset' or 'after'", policy);
  if (!(fast = PySequence_Fast(seq, "commit_parts: parts must be a sequence"))) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n > INT32_MAX) {
    Py_DECREF(fast);
    return PyErr_Format(PyExc_ValueError, "commit_parts: %zd parts are too many", n);
  }
  PyObject **keep = PyMem_Calloc((size_t)(n ? n : 1), 2 * sizeof *keep);   /* path and name bytes */
  c.parts = PyMem_Calloc((size_t)(n ? n : 1), sizeof *c.parts);
  c.n = (int)n;
  if (!keep || !c.parts) {
    PyErr_NoMemory();
    goto out;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *it = PySequence_Fast_GET_ITEM(fast, i), *path = it, *name = Py_None;
    long long offset = 0;
    unsigned long long seal = 0;
    if (PyTuple_Check(it) && !PyArg_ParseTuple(it, "O|OLK:a part", &path, &name, &offset, &seal)) goto out;
    if (!PyUnicode_FSConverter(path, &keep[2 * i])) goto out;
    c.parts[i].path = PyBytes_AS_STRING(keep[2 * i]);
    if (name != Py_None) {
      if (!(keep[2 * i + 1] = PyUnicode_AsUTF8String(name))) goto out;
      c.parts[i].name = PyBytes_AS_STRING(keep[2 * i + 1]);
    }
    c.parts[i].offset = (int64_t)offset;
    c.parts[i].seal = (uint64_t)seal;
  }
  /* The first commit of parts rewrites the index under the handle: the
  ** pool's readers are closed first (exclusively entered). */
  r = ds_call(ds, ds->db && pagedb_part_count(ds->db) == 0, do_commit_parts, &c);
  if (r) {
    Py_DECREF(r);
    r = PyLong_FromLongLong(c.got);
  }
out:
  for (Py_ssize_t i = 0; keep && i < 2 * n; i++) Py_XDECREF(keep[i]);
  PyMem_Free(keep);
  PyMem_Free(c.parts);
  Py_DECREF(fast);
  return r;
}

static int do_seal(PyDataset *ds, void *arg, PdbErr *e) {
  PartsCtx *c = arg;
  return pagedb_part_seal(ds->db, &c->seal);
}

/* seal() -> int: the dataset's seal as a part (pagedb_part_seal). */
static PyObject *admin_seal(PyDataset *ds, PyObject *noarg) {
  PartsCtx c = {NULL, 0, 0, 0, 0};
  PyObject *r = ds_call(ds, 0, do_seal, &c);
  if (!r) return NULL;
  Py_DECREF(r);
  return PyLong_FromUnsignedLongLong(c.seal);
}

static int do_push(PyDataset *ds, void *arg, PdbErr *e) {
  return pagedb_push(ds->db, (const char *)arg);
}

/* push(dest): copy the committed dataset to DEST, a directory or an
** s3:// or http(s):// URL (pagedb_push). */
static PyObject *admin_push(PyDataset *ds, PyObject *args) {
  PyObject *b = NULL;
  if (!PyArg_ParseTuple(args, "O&:push", PyUnicode_FSConverter, &b)) return NULL;
  PyObject *r = ds_call(ds, 0, do_push, PyBytes_AS_STRING(b));
  Py_DECREF(b);
  return r;
}

/* The orphans listed, kept as C strings while the GIL is released. */
typedef struct {
  int64_t min_age_ms;
  int flags;
  size_t n, cap;
  struct { char *path; char uuid[33]; int64_t bytes, age_ms; } *o;
} OrphansCtx;

static int orphan_row(void *ctx, const pagedb_orphan *o) {
  OrphansCtx *c = ctx;
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 16;
    void *p = PyMem_RawRealloc(c->o, cap * sizeof *c->o);
    if (!p) return PAGEDB_NOMEM;
    c->o = p;
    c->cap = cap;
  }
  size_t len = strlen(o->path) + 1;
  if (!(c->o[c->n].path = PyMem_RawMalloc(len))) return PAGEDB_NOMEM;
  memcpy(c->o[c->n].path, o->path, len);
  snprintf(c->o[c->n].uuid, sizeof c->o[c->n].uuid, "%s", o->uuid);
  c->o[c->n].bytes = o->bytes;
  c->o[c->n].age_ms = o->age_ms;
  c->n++;
  return PAGEDB_OK;
}

static int do_orphans(PyDataset *ds, void *arg, PdbErr *e) {
  OrphansCtx *c = arg;
  return pagedb_parts_orphans(ds->db, c->min_age_ms, c->flags, orphan_row, c, NULL);
}

/* orphan_parts(older_than=0.0, remove=False) -> [{path, uuid, bytes, age}]
** (pagedb_parts_orphans; ages in seconds). */
static PyObject *admin_orphan_parts(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"older_than", "remove", NULL};
  double older = 0.0;
  int remove = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|dp:orphan_parts", kwlist, &older, &remove)) return NULL;
  if (!(older >= 0.0 && older < 9.2e15))
    return PyErr_Format(PyExc_ValueError, "orphan_parts: older_than must be a number of seconds >= 0");
  OrphansCtx c = {(int64_t)(older * 1000.0), remove ? PAGEDB_ORPHANS_REMOVE : 0, 0, 0, NULL};
  PyObject *r = ds_call(ds, 0, do_orphans, &c), *list = NULL;
  if (r) {
    Py_DECREF(r);
    list = PyList_New(0);
    for (size_t i = 0; list && i < c.n; i++) {
      PyObject *d = Py_BuildValue("{s:O&,s:s,s:L,s:d}", "path", PyUnicode_DecodeFSDefault, c.o[i].path, "uuid",
                                  c.o[i].uuid, "bytes", (long long)c.o[i].bytes, "age", c.o[i].age_ms / 1000.0);
      if (!d || PyList_Append(list, d) < 0) Py_CLEAR(list);
      Py_XDECREF(d);
    }
  }
  for (size_t i = 0; i < c.n; i++) PyMem_RawFree(c.o[i].path);
  PyMem_RawFree(c.o);
  return list;
}

static int do_commit(PyDataset *ds, void *arg, PdbErr *e) {
  return pagedb_commit(ds->db);
}

static PyObject *admin_commit(PyDataset *ds, PyObject *noarg) {
  return ds_call(ds, 0, do_commit, NULL);
}

static int do_delete(PyDataset *ds, void *arg, PdbErr *e) {
  return pagedb_delete(ds->db, *(int64_t *)arg);
}

static PyObject *admin_delete(PyDataset *ds, PyObject *ido) {
  int64_t id;
  if (ds_parse_id(ido, &id) < 0) return NULL;
  return ds_call(ds, 0, do_delete, &id);
}

PyMethodDef admin_methods[] = {
  {"sql", (PyCFunction)admin_sql, METH_VARARGS,
   "sql(text) -> list of row tuples, typed as stored: int, float, str, bytes or None (read-only SQL on the "
   "catalog)."},
  {"sql_update", (PyCFunction)admin_sql_update, METH_VARARGS,
   "sql_update(text) -> samples changed: UPDATE of INT and REAL fields of table sample, committed."},
  {"sql_user", (PyCFunction)admin_sql_user, METH_VARARGS,
   "sql_user(text) -> rows changed: SQL on the application's own tables in the catalog, committed."},
  {"check", (PyCFunction)(void (*)(void))admin_check, METH_VARARGS | METH_KEYWORDS,
   "check(quick=False) -> list of (page, id, field, what) problems; [] when the dataset is sound."},
  {"stats", (PyCFunction)admin_stats, METH_NOARGS,
   "stats() -> dict: where the committed bytes go (pagedb_stats) and, under 'fields', each field's values."},
  {"vacuum", (PyCFunction)(void (*)(void))admin_vacuum, METH_VARARGS | METH_KEYWORDS,
   "vacuum(dest=None, page_size=0, codecs=None): rewrite without dead space, in place or into the new dataset"
   " DEST; codecs={'field': 'zstd-dict:3'} recompresses those fields."},
  {"attach", (PyCFunction)(void (*)(void))admin_attach, METH_VARARGS | METH_KEYWORDS,
   "attach(other, policy='keep', offset=0) -> samples attached: append the dataset OTHER, and commit."},
  {"commit", (PyCFunction)admin_commit, METH_NOARGS, "commit(): make every written sample durable and visible."},
  {"commit_parts", (PyCFunction)(void (*)(void))admin_commit_parts, METH_VARARGS | METH_KEYWORDS,
   "commit_parts(parts, policy='keep') -> samples committed: commit datasets written apart as parts of this one, "
   "all or none, by reference (each part a path or (path, name, offset, seal))."},
  {"seal", (PyCFunction)admin_seal, METH_NOARGS,
   "seal() -> int: this dataset's fingerprint as a part, to give commit_parts with its path."},
  {"orphan_parts", (PyCFunction)(void (*)(void))admin_orphan_parts, METH_VARARGS | METH_KEYWORDS,
   "orphan_parts(older_than=0.0, remove=False) -> list of {path, uuid, bytes, age}: the parts under NAME.parts/ "
   "that no commit took, at least OLDER_THAN seconds old (removed with remove=True, read-write only)."},
  {"push", (PyCFunction)admin_push, METH_VARARGS,
   "push(dest): copy the committed dataset to DEST (a directory, or an s3:// or http(s):// URL), its catalog last."},
  {"delete", (PyCFunction)admin_delete, METH_O, "delete(id): delete a committed sample at the next commit."},
  {NULL, NULL, 0, NULL},
};
