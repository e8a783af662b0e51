/*
** dataset.c -- pagedb.Dataset: one pagedb handle and what reads it.
**
** Locking (pypagedb.h, invariant 1).  Every call into pagedb runs with the
** GIL released, between ds_enter() (ds->lock shared; fails once the dataset
** is closed) and ds_leave().  close() and add_field() take ds->lock
** exclusively, so they run alone, as pagedb.h asks of schema calls and of
** pagedb_close.  No thread ever waits for ds->lock while it holds the GIL,
** and a thread that holds ds->lock may wait for the GIL (sql's row
** callback does): so the two never deadlock.  The lock prefers writers, so
** that close() is not starved by a stream of reads.
**
** Fork.  pagedb.h lets a process forked from the opener read through the
** handle and its readers (zero-copy views included), and refuses writes
** there with PAGEDB_MISUSE.  A Dataset remembers the process that opened
** it.  The first use in a child "adopts" it (ds_adopt): the locks of the
** Dataset and of its iterators and writers are initialised again -- a
** thread of the parent, which does not exist in the child, may have held
** one at the fork -- and the child's process id recorded.  Reads then work
** as in the parent; writes fail with MisuseError from pagedb (or from
** writer.c for a Writer made before the fork); SQL, check() and stats() are
** refused (admin.c: SQLite connections must not cross fork()).  close() in
** the child closes only the child's copy of the handle and commits nothing.
*/
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pypagedb_ARRAY_API
#define NO_IMPORT_ARRAY
#include "pypagedb.h"

#include <numpy/arrayobject.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Entering, pins, the reader pool                                     */
/* ------------------------------------------------------------------ */

/* Initialise DS's own locks (ds->lock prefers writers, so that close() is
** not starved by a stream of reads). */
static void ds_init_locks(PyDataset *ds) {
  pthread_rwlockattr_t a;
  pthread_rwlockattr_init(&a);
  pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&ds->lock, &a);
  pthread_rwlockattr_destroy(&a);
  pthread_mutex_init(&ds->poolmu, NULL);
  pthread_mutex_init(&ds->pinmu, NULL);
}

/* Make DS usable in this process, a fork of its opener (GIL held: no other
** thread of this process can be inside DS's locks while it runs, since
** every thread that uses them took them after this). */
static void ds_adopt(PyDataset *ds) {
  pid_t me = getpid();
  if (ds->pid == me || ds->child == me) return;
  ds_init_locks(ds);
  for (PdbLink *l = ds->iters; l; l = l->next)
    pthread_mutex_init(&((PyIter *)((char *)l - offsetof(PyIter, link)))->mu, NULL);
  for (PdbLink *l = ds->writers; l; l = l->next)
    pthread_mutex_init(&((PyWriter *)((char *)l - offsetof(PyWriter, link)))->mu, NULL);
  ds->child = me;
}

int ds_in_child(PyDataset *ds) {
  ds_adopt(ds);
  return ds->pid != getpid();
}

int ds_check_open(PyDataset *ds) {
  ds_adopt(ds);
  if (!ds->db) {
    pdb_raise(PAGEDB_MISUSE, "the dataset %S is closed", ds->path);
    return -1;
  }
  return 0;
}

int ds_enter(PyDataset *ds, PdbErr *e) {
  pthread_rwlock_rdlock(&ds->lock);
  if (ds->db) return 0;
  pthread_rwlock_unlock(&ds->lock);
  pdberr_set(e, PAGEDB_MISUSE, "the dataset is closed");
  return -1;
}

void ds_leave(PyDataset *ds) {
  pthread_rwlock_unlock(&ds->lock);
}

void ds_pin(PyDataset *ds, int64_t n) {
  pthread_mutex_lock(&ds->pinmu);
  ds->pins += n;
  pthread_mutex_unlock(&ds->pinmu);
}

/* Unpin N; the last unpin of a dataset closed from Python closes its handle. */
void ds_unpin(PyDataset *ds, int64_t n) {
  pthread_mutex_lock(&ds->pinmu);
  ds->pins -= n;
  pagedb *z = NULL;
  if (ds->pins == 0 && ds->zombie) {
    z = ds->zombie;
    ds->zombie = NULL;
  }
  pthread_mutex_unlock(&ds->pinmu);
  if (z) {
    Py_BEGIN_ALLOW_THREADS
    pagedb_close(z);   /* everything was committed by close() already */
    Py_END_ALLOW_THREADS
  }
}

pagedb_reader *ds_reader_take(PyDataset *ds, PdbErr *e) {
  pagedb_reader *r = NULL;
  pthread_mutex_lock(&ds->poolmu);
  if (ds->npool > 0) r = ds->pool[--ds->npool];
  pthread_mutex_unlock(&ds->poolmu);
  if (r) return r;
  int rc = pagedb_reader_open(ds->db, ds->readmode, &r);
  if (rc != PAGEDB_OK) {
    pdberr_set(e, rc, pagedb_errmsg(ds->db));
    return NULL;
  }
  return r;
}

void ds_reader_give(PyDataset *ds, pagedb_reader *r) {
  pthread_mutex_lock(&ds->poolmu);
  if (ds->npool < PYPDB_POOL) {
    ds->pool[ds->npool++] = r;
    r = NULL;
  }
  pthread_mutex_unlock(&ds->poolmu);
  pagedb_reader_close(r);
}

pagedb_reader *ds_enter_reader(PyDataset *ds, PdbErr *e) {
  if (ds_enter(ds, e) < 0) return NULL;
  pagedb_reader *r = ds_reader_take(ds, e);
  if (!r) ds_leave(ds);
  return r;
}

void ds_leave_reader(PyDataset *ds, pagedb_reader *r) {
  ds_reader_give(ds, r);
  ds_leave(ds);
}

void lock_nogil(pthread_mutex_t *mu) {
  if (pthread_mutex_trylock(mu) != 0) {
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(mu);
    Py_END_ALLOW_THREADS
  }
}

/* Close the pool's readers: under ds->lock held exclusively. */
void ds_pool_close(PyDataset *ds) {
  for (int i = 0; i < ds->npool; i++) pagedb_reader_close(ds->pool[i]);
  ds->npool = 0;
}

void ds_link(PyDataset *ds, PdbLink **head, PdbLink *l) {
  pthread_mutex_lock(&ds->poolmu);
  l->next = *head;
  if (l->next) l->next->pprev = &l->next;
  l->pprev = head;
  *head = l;
  pthread_mutex_unlock(&ds->poolmu);
}

void ds_unlink(PyDataset *ds, PdbLink *l) {
  pthread_mutex_lock(&ds->poolmu);
  if (l->pprev) {
    *l->pprev = l->next;
    if (l->next) l->next->pprev = l->pprev;
    l->pprev = NULL;
  }
  pthread_mutex_unlock(&ds->poolmu);
}

/* ------------------------------------------------------------------ */
/* The schema                                                          */
/* ------------------------------------------------------------------ */

static const char *type_names[] = {NULL, "bytes", "text", "int", "real", "tensor"};
static const char *codec_names[] = {"none", "lz4", "lz4hc", "zstd", "zstd-dict"};

/* Refresh the cached schema from the handle (GIL held; no schema call can
** run: the caller opened the handle or holds ds->lock exclusively). */
static int schema_load(PyDataset *ds) {
  int n = pagedb_field_count(ds->db);
  PyObject *tuple = PyTuple_New(n), *byname = PyDict_New();
  if (!tuple || !byname) goto fail;
  for (int i = 0; i < n; i++) {
    int t = pagedb_field_type(ds->db, i), c = pagedb_field_codec(ds->db, i);
    int kind = PAGEDB_CODEC_KIND(c);
    ds->ftype[i] = t;
    ds->fcodec[i] = c;
    PyObject *f = PyStructSequence_New(PyField_Type);
    if (!f) goto fail;
    PyTuple_SET_ITEM(tuple, i, f);
    PyObject *name = PyUnicode_FromString(pagedb_field_name(ds->db, i));
    PyObject *num = PyLong_FromLong(i);
    if (!name || !num || PyDict_SetItem(byname, name, num) < 0) {
      Py_XDECREF(name);
      Py_XDECREF(num);
      goto fail;
    }
    Py_DECREF(num);
    PyStructSequence_SET_ITEM(f, 0, name);
    PyStructSequence_SET_ITEM(f, 1, PyUnicode_FromString(t >= 1 && t <= 5 ? type_names[t] : "unknown"));
    PyStructSequence_SET_ITEM(f, 2, PyUnicode_FromString(kind <= PAGEDB_CODEC_ZSTD_DICT ? codec_names[kind] : "unknown"));
    PyStructSequence_SET_ITEM(f, 3, PyLong_FromLong(PAGEDB_CODEC_LEVEL_OF(c)));
    int dtype = 0, ndim = 0;
    int64_t dims[PAGEDB_TENSOR_MAX_DIMS];
    ds->fdtype[i] = 0;
    if (pagedb_field_tensor(ds->db, i, &dtype, &ndim, dims) == PAGEDB_OK) {
      ds->fdtype[i] = dtype;
      PyObject *shape = PyTuple_New(ndim);
      for (int k = 0; shape && k < ndim; k++)
        PyTuple_SET_ITEM(shape, k, dims[k] == PAGEDB_DIM_VAR ? Py_NewRef(Py_None) : PyLong_FromLongLong(dims[k]));
      PyStructSequence_SET_ITEM(f, 4, PyUnicode_FromString(pagedb_dtype_name(dtype)));
      PyStructSequence_SET_ITEM(f, 5, shape);
    } else {
      PyStructSequence_SET_ITEM(f, 4, Py_NewRef(Py_None));
      PyStructSequence_SET_ITEM(f, 5, Py_NewRef(Py_None));
    }
    PyStructSequence_SET_ITEM(f, 6, PyLong_FromLong(pagedb_field_align(ds->db, i)));
    if (PyErr_Occurred()) goto fail;
  }
  Py_XSETREF(ds->fields, tuple);
  Py_XSETREF(ds->byname, byname);
  ds->nfield = n;
  return 0;
fail:
  Py_XDECREF(tuple);
  Py_XDECREF(byname);
  return -1;
}

int ds_schema_refresh(PyDataset *ds) {
  Py_BEGIN_ALLOW_THREADS
  pthread_rwlock_wrlock(&ds->lock);
  Py_END_ALLOW_THREADS
  int ok = ds->db ? schema_load(ds) : 0;
  pthread_rwlock_unlock(&ds->lock);
  return ok;
}

int ds_field_type(PyDataset *ds, int f) { return ds->ftype[f]; }
int ds_field_codec(PyDataset *ds, int f) { return ds->fcodec[f]; }

int ds_field_number(PyDataset *ds, PyObject *field) {
  if (PyUnicode_Check(field)) {
    PyObject *num = ds->byname ? PyDict_GetItemWithError(ds->byname, field) : NULL;
    if (num) return (int)PyLong_AsLong(num);
    if (!PyErr_Occurred()) pdb_raise(PAGEDB_RANGE, "%S has no field named '%U'", ds->path, field);
    return -1;
  }
  if (PyIndex_Check(field)) {
    Py_ssize_t i = PyNumber_AsSsize_t(field, PyExc_OverflowError);
    if (i == -1 && PyErr_Occurred()) return -1;
    if (i < 0 || i >= ds->nfield) {
      pdb_raise(PAGEDB_RANGE, "%S: no field number %zd (the dataset has %d)", ds->path, i, ds->nfield);
      return -1;
    }
    return (int)i;
  }
  PyErr_Format(PyExc_TypeError, "a field is named by a str or numbered by an int, not %.100s",
               Py_TYPE(field)->tp_name);
  return -1;
}

/* A tensor declaration "tensor:DTYPE:D1,D2..." (D a size or '*'): its
** dtype, dimensions; 0, or -1 with an exception. */
static int parse_tensor(PyObject *o, int *dtype, int *ndim, int64_t *dims) {
  const char *s = PyUnicode_AsUTF8(o), *colon = s ? strchr(s + 7, ':') : NULL;
  char name[16];
  if (!s) return -1;
  *ndim = 0;
  if (!colon || (size_t)(colon - (s + 7)) >= sizeof name) goto bad;
  memcpy(name, s + 7, (size_t)(colon - (s + 7)));
  name[colon - (s + 7)] = 0;
  if (!(*dtype = pagedb_dtype_from_name(name))) goto bad;
  for (const char *p = colon + 1; *p;) {
    if (*ndim == PAGEDB_TENSOR_MAX_DIMS) goto bad;
    char *end;
    if (*p == '*') dims[(*ndim)++] = PAGEDB_DIM_VAR, end = (char *)p + 1;
    else dims[(*ndim)++] = strtoll(p, &end, 10);
    if (end == p || (*end && *end != ',')) goto bad;
    p = *end ? end + 1 : end;
  }
  return 0;
bad:
  PyErr_Format(PyExc_ValueError, "tensor declaration %R: use 'tensor:DTYPE:SHAPE', e.g. 'tensor:float32:3,224,224' or"
               " 'tensor:uint16:*' (* a variable dimension), or pagedb.Tensor('float32', (3, 224, 224))", o);
  return -1;
}

/* A type given as a name or a number: PAGEDB_BYTES..., or -1 with an exception. */
static int parse_type(PyObject *o) {
  if (PyUnicode_Check(o)) {
    for (int t = 1; t <= 4; t++)
      if (PyUnicode_CompareWithASCIIString(o, type_names[t]) == 0) return t;
  } else if (PyLong_Check(o)) {
    long t = PyLong_AsLong(o);
    if (t >= 1 && t <= 4) return (int)t;
    if (t == -1 && PyErr_Occurred()) return -1;
  }
  PyErr_Format(PyExc_ValueError, "field type %R: use 'bytes', 'text', 'int' or 'real'", o);
  return -1;
}

/* A codec given as None, a name pagedb_codec_parse knows ('none', 'lz4',
** 'lz4hc', 'zstd', 'zstd-dict', optionally ':LEVEL'), or a number; LEVEL
** applies to a bare name or number. */
static int parse_codec(PyObject *o, int level, int *codec) {
  if (o == Py_None) {
    *codec = PAGEDB_CODEC_LEVEL(PAGEDB_CODEC_NONE, level);
    return 0;
  }
  if (PyLong_Check(o)) {
    long c = PyLong_AsLong(o);
    if (c == -1 && PyErr_Occurred()) return -1;
    *codec = PAGEDB_CODEC_KIND(c) == c ? PAGEDB_CODEC_LEVEL((int)c, level) : (int)c;
    return 0;
  }
  if (PyUnicode_Check(o)) {
    const char *s = PyUnicode_AsUTF8(o);
    if (!s) return -1;
    char full[64];
    if (!strchr(s, ':') && level != 0 && strlen(s) < 32) {
      snprintf(full, sizeof full, "%s:%d", s, level);
      s = full;
    }
    if (pagedb_codec_parse(s, codec) == PAGEDB_OK) return 0;
  }
  PyErr_Format(PyExc_ValueError, "codec %R: use None, 'none', 'lz4', 'lz4hc', 'zstd' or 'zstd-dict', optionally"
               " with ':LEVEL' (a level the codec has)", o);
  return -1;
}

/* ------------------------------------------------------------------ */
/* Opening and closing                                                 */
/* ------------------------------------------------------------------ */

static PyObject *dataset_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  PyDataset *ds = (PyDataset *)type->tp_alloc(type, 0);
  if (!ds) return NULL;
  ds_init_locks(ds);
  ds->pid = getpid();
  return (PyObject *)ds;
}

static int dataset_init(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "mode", "vfs", "read_mode", "verify", "page_size", NULL};
  PyObject *path;
  const char *mode = "r", *vfs = NULL, *readmode = "mmap";
  int verify = 0;
  Py_ssize_t page_size = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|szspn:Dataset", kwlist, PyUnicode_FSDecoder, &path, &mode, &vfs,
                                   &readmode, &verify, &page_size))
    return -1;
  PyObject *bpath = NULL;
  if (ds->db || ds->path) {
    Py_DECREF(path);
    pdb_raise(PAGEDB_MISUSE, "Dataset.__init__ called twice");
    return -1;
  }
  ds->path = path;
  int flags;
  if (strcmp(mode, "r") == 0) flags = PAGEDB_OPEN_READONLY;
  else if (strcmp(mode, "w") == 0) flags = PAGEDB_OPEN_READWRITE;
  else if (strcmp(mode, "c") == 0) flags = PAGEDB_OPEN_READWRITE | PAGEDB_OPEN_CREATE;
  else {
    PyErr_Format(PyExc_ValueError, "mode '%s': use 'r' (read), 'w' (read and write) or 'c' (create if missing)", mode);
    return -1;
  }
  if (strcmp(readmode, "mmap") == 0) ds->readmode = PAGEDB_READ_MMAP;
  else if (strcmp(readmode, "copy") == 0) ds->readmode = PAGEDB_READ_COPY;
  else {
    PyErr_Format(PyExc_ValueError, "read_mode '%s': use 'mmap' (zero-copy) or 'copy'", readmode);
    return -1;
  }
  if (verify) ds->readmode |= PAGEDB_READ_VERIFY;
  ds->readonly = (flags & PAGEDB_OPEN_READONLY) != 0;
  if (!PyUnicode_FSConverter(path, &bpath)) return -1;
  pagedb *db = NULL;
  int rc;
  PdbErr e;
  Py_BEGIN_ALLOW_THREADS
  rc = pagedb_open(PyBytes_AS_STRING(bpath), &db, flags, vfs);
  if (rc == PAGEDB_OK && page_size > 0 && pagedb_field_count(db) == 0)
    rc = pagedb_set_page_size(db, (size_t)page_size);
  if (rc != PAGEDB_OK) {
    pdberr_set(&e, rc, pagedb_errmsg(db));
    pagedb_close(db);
    db = NULL;
  }
  Py_END_ALLOW_THREADS
  Py_DECREF(bpath);
  if (rc != PAGEDB_OK) {
    pdberr_raise(&e);
    return -1;
  }
  ds->db = db;
  return schema_load(ds);
}

/*
** Close writers, iterators' readers and the pool, then commit and close the
** handle -- or, with pins outstanding, keep the handle for the last unpin.
** Runs with the GIL released and ds->lock held exclusively.  E receives the
** first failure; the dataset is closed whatever happens.
*/
static void close_locked(PyDataset *ds, PdbErr *e) {
  pagedb *db = ds->db;
  int child = ds->pid != getpid();   /* a fork's copy: nothing to commit, no writer to flush */
  e->rc = PAGEDB_OK;
  pthread_mutex_lock(&ds->poolmu);
  for (PdbLink *l = ds->writers; l; l = l->next) {
    PyWriter *w = (PyWriter *)((char *)l - offsetof(PyWriter, link));
    int rc = child ? PAGEDB_OK : pagedb_writer_close(w->w);
    if (rc != PAGEDB_OK && e->rc == PAGEDB_OK) pdberr_set(e, rc, pagedb_errmsg(db));
    w->w = NULL;
  }
  for (PdbLink *l = ds->iters; l; l = l->next) {
    PyIter *it = (PyIter *)((char *)l - offsetof(PyIter, link));
    pagedb_reader_close(it->r);
    it->r = NULL;
  }
  pthread_mutex_unlock(&ds->poolmu);
  ds_pool_close(ds);
  if (!ds->readonly && !child) {
    int rc = pagedb_commit(db);
    if (rc != PAGEDB_OK && e->rc == PAGEDB_OK) pdberr_set(e, rc, pagedb_errmsg(db));
  }
  ds->db = NULL;
  pthread_mutex_lock(&ds->pinmu);
  if (ds->pins > 0) {
    ds->zombie = db;   /* the views still point into its map */
    db = NULL;
  }
  pthread_mutex_unlock(&ds->pinmu);
  pagedb_close(db);
}

static PyObject *dataset_close(PyDataset *ds, PyObject *noarg) {
  ds_adopt(ds);
  if (!ds->db) Py_RETURN_NONE;
  PdbErr e;
  Py_BEGIN_ALLOW_THREADS
  pthread_rwlock_wrlock(&ds->lock);
  if (ds->db) close_locked(ds, &e);
  else e.rc = PAGEDB_OK;
  pthread_rwlock_unlock(&ds->lock);
  Py_END_ALLOW_THREADS
  if (e.rc != PAGEDB_OK) return pdberr_raise(&e);
  Py_RETURN_NONE;
}

static void dataset_dealloc(PyDataset *ds) {
  PyObject_GC_UnTrack(ds);
  if (ds->weakreflist) PyObject_ClearWeakRefs((PyObject *)ds);
  /* No view, writer or iterator is left: each holds a reference. */
  ds_adopt(ds);
  if (ds->db || ds->zombie) {
    PdbErr e;
    Py_BEGIN_ALLOW_THREADS
    if (ds->db) close_locked(ds, &e);
    pagedb_close(ds->zombie);
    Py_END_ALLOW_THREADS
  }
  pthread_rwlock_destroy(&ds->lock);
  pthread_mutex_destroy(&ds->poolmu);
  pthread_mutex_destroy(&ds->pinmu);
  Py_CLEAR(ds->path);
  Py_CLEAR(ds->fields);
  Py_CLEAR(ds->byname);
  Py_TYPE(ds)->tp_free((PyObject *)ds);
}

static int dataset_traverse(PyDataset *ds, visitproc visit, void *arg) {
  Py_VISIT(Py_TYPE(ds));
  return 0;
}

static PyObject *dataset_enter(PyDataset *ds, PyObject *noarg) {
  if (ds_check_open(ds)) return NULL;
  return Py_NewRef(ds);
}

static PyObject *dataset_exit(PyDataset *ds, PyObject *args) {
  return dataset_close(ds, NULL);
}

/* ------------------------------------------------------------------ */
/* Schema and counts                                                   */
/* ------------------------------------------------------------------ */

static PyObject *dataset_add_field(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "type", "codec", "level", "align", NULL};
  const char *name;
  PyObject *type, *codec_o = Py_None;
  int level = 0, codec, align = PAGEDB_ALIGN_DEFAULT;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|Oii:add_field", kwlist, &name, &type, &codec_o, &level, &align))
    return NULL;
  int dtype = 0, ndim = 0;
  int64_t dims[PAGEDB_TENSOR_MAX_DIMS];
  const char *ts = PyUnicode_Check(type) ? PyUnicode_AsUTF8(type) : NULL;
  if (PyUnicode_Check(type) && !ts) return NULL;
  int t = ts && strncmp(ts, "tensor:", 7) == 0 ? (parse_tensor(type, &dtype, &ndim, dims) < 0 ? -1 : PAGEDB_TENSOR)
                                               : parse_type(type);
  if (t < 0 || parse_codec(codec_o, level, &codec) < 0 || ds_check_open(ds)) return NULL;
  PdbErr e;
  int rc = PAGEDB_OK;
  Py_BEGIN_ALLOW_THREADS
  pthread_rwlock_wrlock(&ds->lock);
  if (!ds->db) {
    pdberr_set(&e, rc = PAGEDB_MISUSE, "the dataset is closed");
  } else {
    /* pagedb_field_add refuses while readers are open: the pool's are ours. */
    ds_pool_close(ds);
    rc = t == PAGEDB_TENSOR ? pagedb_field_add_tensor(ds->db, name, dtype, ndim, dims, codec, align)
                            : pagedb_field_add_aligned(ds->db, name, t, codec, align);
    if (rc != PAGEDB_OK) pdberr_set(&e, rc, pagedb_errmsg(ds->db));
  }
  Py_END_ALLOW_THREADS
  /* Still exclusive: nothing can change the schema while it is reloaded. */
  int ok = rc == PAGEDB_OK ? schema_load(ds) : 0;
  pthread_rwlock_unlock(&ds->lock);
  if (rc != PAGEDB_OK) return pdberr_raise(&e);
  if (ok < 0) return NULL;
  return PyLong_FromLong(ds->nfield - 1);
}

/* A cheap call on the handle, entered all the same: a close() in another
** thread must not free the handle under it. */
static int64_t entered_count(PyDataset *ds, int what, PdbErr *e) {
  int64_t v = -1;
  Py_BEGIN_ALLOW_THREADS
  if (ds_enter(ds, e) == 0) {
    v = what ? (int64_t)pagedb_page_size(ds->db) : pagedb_count(ds->db);
    ds_leave(ds);
  }
  Py_END_ALLOW_THREADS
  return v;
}

static Py_ssize_t dataset_len(PyDataset *ds) {
  PdbErr e;
  if (ds_check_open(ds)) return -1;
  int64_t n = entered_count(ds, 0, &e);
  if (n < 0) pdberr_raise(&e);
  return (Py_ssize_t)n;
}

static PyObject *dataset_fields(PyDataset *ds, void *closure) {
  return Py_NewRef(ds->fields ? ds->fields : Py_None);
}

static PyObject *dataset_path(PyDataset *ds, void *closure) {
  return Py_NewRef(ds->path ? ds->path : Py_None);
}

static PyObject *dataset_closed(PyDataset *ds, void *closure) {
  return PyBool_FromLong(ds->db == NULL);
}

static PyObject *dataset_readonly(PyDataset *ds, void *closure) {
  return PyBool_FromLong(ds->readonly);
}

static PyObject *dataset_zero_copy(PyDataset *ds, void *closure) {
  return PyBool_FromLong((ds->readmode & ~PAGEDB_READ_VERIFY) == PAGEDB_READ_MMAP);
}

static PyObject *dataset_page_size(PyDataset *ds, void *closure) {
  PdbErr e;
  if (ds_check_open(ds)) return NULL;
  int64_t n = entered_count(ds, 1, &e);
  return n < 0 ? pdberr_raise(&e) : PyLong_FromLongLong(n);
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

int ds_parse_id(PyObject *o, int64_t *id) {
  if (!PyIndex_Check(o)) {
    PyErr_Format(PyExc_TypeError, "a sample id is an int, not %.100s", Py_TYPE(o)->tp_name);
    return -1;
  }
  PyObject *i = PyNumber_Index(o);
  if (!i) return -1;
  long long v = PyLong_AsLongLong(i);
  Py_DECREF(i);
  if (v == -1 && PyErr_Occurred()) return -1;
  *id = v;
  return 0;
}

/* The field numbers FIELDS names (None: all), in *NUMS (PyMem_Free it). */
int ds_parse_fields(PyDataset *ds, PyObject *fields, int **nums, int *n) {
  *nums = NULL;
  if (fields == NULL || fields == Py_None) {
    *n = ds->nfield;
    *nums = PyMem_Malloc(sizeof(int) * (ds->nfield ? ds->nfield : 1));
    if (!*nums) return PyErr_NoMemory(), -1;
    for (int i = 0; i < ds->nfield; i++) (*nums)[i] = i;
    return 0;
  }
  if (PyUnicode_Check(fields) || PyLong_Check(fields)) {
    *nums = PyMem_Malloc(sizeof(int));
    if (!*nums) return PyErr_NoMemory(), -1;
    *n = 1;
    return ((*nums)[0] = ds_field_number(ds, fields)) < 0 ? -1 : 0;
  }
  PyObject *seq = PySequence_Fast(fields, "fields: a field name or number, or a sequence of them");
  if (!seq) return -1;
  Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
  *nums = PyMem_Malloc(sizeof(int) * (k ? k : 1));
  *n = (int)k;
  int rc = *nums ? 0 : (PyErr_NoMemory(), -1);
  for (Py_ssize_t i = 0; i < k && rc == 0; i++)
    if (((*nums)[i] = ds_field_number(ds, PySequence_Fast_GET_ITEM(seq, i))) < 0) rc = -1;
  Py_DECREF(seq);
  return rc;
}

/* Read fields NUMS[0..N-1] of sample ID into SLOTS (GIL released, entered).
** Returns 0, or -1 with E set and no slot holding anything. */
int ds_fetch_sample(PyDataset *ds, pagedb_reader *r, int64_t id, const int *nums, int n, Slot *slots, PdbErr *e) {
  int found = 0;
  for (int i = 0; i < n; i++) {
    if (slot_fetch(ds, r, id, nums[i], &slots[i], e) < 0) {
      for (int j = 0; j < i; j++) {
        if (slots[j].map) {
          ds_pin(ds, -1);   /* no view was made: give the pin back (the handle is entered) */
          slots[j].map = NULL;
        }
        PyMem_RawFree(slots[j].own);
        slots[j].own = NULL;
      }
      return -1;
    }
    found += !slots[i].missing;
  }
  if (n > 0 && found == 0) return -1;   /* E holds the NOTFOUND of the last field */
  return 0;
}

/* The dict of fields NUMS of slots SLOTS (consumed). */
PyObject *ds_wrap_sample(PyDataset *ds, const int *nums, int n, Slot *slots, int raw) {
  PyObject *d = PyDict_New();
  for (int i = 0; i < n; i++) {
    if (!d) {
      slot_drop(ds, &slots[i]);
      continue;
    }
    PyObject *v = slot_wrap(ds, &slots[i], raw);
    PyObject *name = PyStructSequence_GET_ITEM(PyTuple_GET_ITEM(ds->fields, nums[i]), 0);
    if (!v || PyDict_SetItem(d, name, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

static PyObject *get_sample(PyDataset *ds, PyObject *ido, PyObject *fields, int raw) {
  int64_t id;
  int *nums, n;
  if (ds_parse_id(ido, &id) < 0 || ds_check_open(ds)) return NULL;
  if (ds_parse_fields(ds, fields, &nums, &n) < 0) {
    PyMem_Free(nums);
    return NULL;
  }
  Slot stack[16], *slots = n <= 16 ? stack : PyMem_Malloc(sizeof(Slot) * n);
  if (!slots) {
    PyMem_Free(nums);
    return PyErr_NoMemory();
  }
  PdbErr e;
  int rc = -1;
  Py_BEGIN_ALLOW_THREADS
  pagedb_reader *r = ds_enter_reader(ds, &e);
  if (r) {
    rc = ds_fetch_sample(ds, r, id, nums, n, slots, &e);
    ds_leave_reader(ds, r);
  }
  Py_END_ALLOW_THREADS
  PyObject *d = rc == 0 ? ds_wrap_sample(ds, nums, n, slots, raw) : pdberr_raise(&e);
  if (slots != stack) PyMem_Free(slots);
  PyMem_Free(nums);
  return d;
}

static PyObject *dataset_getitem(PyDataset *ds, PyObject *key) {
  return get_sample(ds, key, NULL, 0);
}

static PyObject *dataset_get(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"id", "fields", "raw", NULL};
  PyObject *id, *fields = Py_None;
  int raw = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op:get", kwlist, &id, &fields, &raw)) return NULL;
  return get_sample(ds, id, fields, raw);
}

/* One value: ds.view(id, field) (a memoryview), ds.read(id, field) (bytes,
** str, int or float), or ds.read(id, field, out=buffer) (the byte count). */
static PyObject *read_value(PyDataset *ds, PyObject *args, PyObject *kw, int as_view) {
  static char *kwlist[] = {"id", "field", "out", NULL};
  static char *kwview[] = {"id", "field", NULL};
  PyObject *ido, *fieldo, *out = Py_None;
  int64_t id;
  if (!(as_view ? PyArg_ParseTupleAndKeywords(args, kw, "OO:view", kwview, &ido, &fieldo)
                : PyArg_ParseTupleAndKeywords(args, kw, "OO|O:read", kwlist, &ido, &fieldo, &out)) ||
      ds_parse_id(ido, &id) < 0 || ds_check_open(ds))
    return NULL;
  int f = ds_field_number(ds, fieldo);
  if (f < 0) return NULL;
  int bytes = ds->ftype[f] == PAGEDB_BYTES || ds->ftype[f] == PAGEDB_TEXT;
  Py_buffer buf = {0};
  if (out != Py_None) {
    if (!bytes)
      return pdb_raise(PAGEDB_MISMATCH, "%S: field %d is a scalar: read it without out=", ds->path, f);
    if (PyObject_GetBuffer(out, &buf, PyBUF_WRITABLE | PyBUF_ANY_CONTIGUOUS) < 0) return NULL;
  }
  PdbErr e;
  Slot s;
  int rc = -1;
  size_t n = 0;
  Py_BEGIN_ALLOW_THREADS
  pagedb_reader *r = ds_enter_reader(ds, &e);
  if (r && out != Py_None) {
    int prc = pagedb_read_into(r, id, f, buf.buf, (size_t)buf.len, &n);
    if (prc == PAGEDB_OK) rc = 0;
    else pdberr_set(&e, prc, pagedb_reader_errmsg(r));
  } else if (r) {
    rc = slot_fetch(ds, r, id, f, &s, &e);
    if (rc == 0 && s.missing) rc = -1;
  }
  if (r) ds_leave_reader(ds, r);
  Py_END_ALLOW_THREADS
  if (out != Py_None) {
    PyBuffer_Release(&buf);
    return rc == 0 ? PyLong_FromSize_t(n) : pdberr_raise(&e);
  }
  if (rc < 0) return pdberr_raise(&e);
  if (as_view || !bytes) return slot_wrap(ds, &s, 1);
  if (ds->ftype[f] == PAGEDB_TEXT) return slot_wrap(ds, &s, 0);
  const char *p = s.map ? s.map : s.own;
  PyObject *o = PyBytes_FromStringAndSize(p ? p : "", (Py_ssize_t)s.n);
  slot_drop(ds, &s);
  return o;
}

static PyObject *dataset_read(PyDataset *ds, PyObject *args, PyObject *kw) {
  return read_value(ds, args, kw, 0);
}

static PyObject *dataset_view(PyDataset *ds, PyObject *args, PyObject *kw) {
  return read_value(ds, args, kw, 1);
}

/* The ids of IDS as a C-contiguous int64 array (a new reference). */
PyObject *ds_ids_array(PyObject *ids) {
  return PyArray_FROMANY(ids, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
}

/*
** ds.read_batch(ids, field, raw=False): the values of one field of many
** samples, a list, in PAGEDB_MAX_BATCH chunks through pagedb_read_batch.
** Zero-copy fields give map views (all pinned before the handle is left);
** the others are read one by one into buffers of their own.
*/
static PyObject *dataset_read_batch(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"ids", "field", "raw", NULL};
  PyObject *idso, *fieldo;
  int raw = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|p:read_batch", kwlist, &idso, &fieldo, &raw) || ds_check_open(ds))
    return NULL;
  int f = ds_field_number(ds, fieldo);
  if (f < 0) return NULL;
  PyArrayObject *arr = (PyArrayObject *)ds_ids_array(idso);
  if (!arr) return NULL;
  npy_intp n = PyArray_SIZE(arr);
  const int64_t *ids = PyArray_DATA(arr);
  Slot *slots = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Slot));
  const void **ptrs = PyMem_Calloc(n ? (size_t)n : 1, sizeof(void *));
  size_t *sizes = PyMem_Calloc(n ? (size_t)n : 1, sizeof(size_t));
  if (!slots || !ptrs || !sizes) {
    Py_DECREF(arr);
    PyMem_Free(slots);
    PyMem_Free(ptrs);
    PyMem_Free(sizes);
    return PyErr_NoMemory();
  }
  int map = view_is_map(ds, f);
  PdbErr e;
  int rc = -1;
  npy_intp done = 0;
  Py_BEGIN_ALLOW_THREADS
  pagedb_reader *r = ds_enter_reader(ds, &e);
  if (r) {
    if (map) {
      rc = 0;
      for (npy_intp at = 0; at < n && rc == 0; at += PAGEDB_MAX_BATCH) {
        int k = (int)(n - at < PAGEDB_MAX_BATCH ? n - at : PAGEDB_MAX_BATCH);
        int prc = pagedb_read_batch(r, ids + at, k, f, ptrs + at, sizes + at);
        if (prc != PAGEDB_OK) {
          pdberr_set(&e, prc, pagedb_reader_errmsg(r));
          rc = -1;
        }
      }
      if (rc == 0) {
        for (npy_intp i = 0; i < n; i++) {
          slots[i].type = ds->ftype[f];
          slots[i].map = ptrs[i];
          slots[i].n = sizes[i];
        }
        ds_pin(ds, n);
        done = n;
      }
    } else {
      rc = 0;
      for (npy_intp i = 0; i < n && rc == 0; i++) {
        rc = slot_fetch(ds, r, ids[i], f, &slots[i], &e);
        if (rc == 0 && slots[i].missing) rc = -1;
        if (rc == 0) done = i + 1;
      }
    }
    ds_leave_reader(ds, r);
  }
  Py_END_ALLOW_THREADS
  PyObject *list = rc == 0 ? PyList_New(n) : NULL;
  for (npy_intp i = 0; i < done; i++) {
    if (!list) {
      slot_drop(ds, &slots[i]);
      continue;
    }
    PyObject *v = slot_wrap(ds, &slots[i], raw);
    if (!v) Py_CLEAR(list);
    else PyList_SET_ITEM(list, i, v);
  }
  Py_DECREF(arr);
  PyMem_Free(slots);
  PyMem_Free(ptrs);
  PyMem_Free(sizes);
  if (rc < 0) return pdberr_raise(&e);
  return list;
}

/* ------------------------------------------------------------------ */
/* Orders, SQL, commits, deletes                                        */
/* ------------------------------------------------------------------ */

/* ds._tensor_shape(field, value): the shape of the raw value VALUE (bytes
** a batch holds) of tensor field FIELD and the bytes of its elements:
** ((d0, d1...), nbytes).  Checks the trailer (CorruptError). */
static PyObject *dataset_tensor_shape(PyDataset *ds, PyObject *args) {
  PyObject *fo;
  Py_buffer b;
  if (!PyArg_ParseTuple(args, "Oy*:_tensor_shape", &fo, &b)) return NULL;
  int f = ds_check_open(ds) ? -1 : ds_field_number(ds, fo);
  if (f < 0) {
    PyBuffer_Release(&b);
    return NULL;
  }
  PdbErr e;
  int ndim = 0, rc;
  int64_t shape[PAGEDB_TENSOR_MAX_DIMS];
  size_t nb = 0;
  Py_BEGIN_ALLOW_THREADS
  rc = ds_enter(ds, &e);
  if (rc == 0) {
    rc = pagedb_tensor_shape(ds->db, f, b.buf, (size_t)b.len, &nb, &ndim, shape);
    if (rc != PAGEDB_OK) pdberr_set(&e, rc, pagedb_errmsg(ds->db));
    ds_leave(ds);
  } else {
    rc = e.rc;
  }
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&b);
  if (rc != PAGEDB_OK) return pdberr_raise(&e);
  PyObject *t = PyTuple_New(ndim);
  for (int k = 0; t && k < ndim; k++) PyTuple_SET_ITEM(t, k, PyLong_FromLongLong(shape[k]));
  return t ? Py_BuildValue("(Nn)", t, (Py_ssize_t)nb) : NULL;
}

static PyObject *dataset_order(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"kind", "seed", "epoch", "rank", "world", "drop_last", NULL};
  const char *kind = "random";
  unsigned long long seed = 0, epoch = 0;
  int rank = 0, world = 1, drop_last = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|sKKiip:order", kwlist, &kind, &seed, &epoch, &rank, &world,
                                   &drop_last) ||
      ds_check_open(ds))
    return NULL;
  int k;
  if (strcmp(kind, "random") == 0) k = PAGEDB_ORDER_RANDOM;
  else if (strcmp(kind, "quasi_random") == 0) k = PAGEDB_ORDER_QUASI_RANDOM;
  else if (strcmp(kind, "sequential") == 0) k = PAGEDB_ORDER_SEQUENTIAL;
  else {
    PyErr_Format(PyExc_ValueError, "order kind '%s': use 'random', 'quasi_random' or 'sequential'", kind);
    return NULL;
  }
  if (drop_last) k |= PAGEDB_ORDER_DROP_LAST;
  PyObject *arr = NULL;
  for (;;) {
    PdbErr e;
    int64_t n = 0;
    int rc = PAGEDB_MISUSE;
    Py_BEGIN_ALLOW_THREADS
    if (ds_enter(ds, &e) == 0) {
      rc = pagedb_order(ds->db, k, seed, epoch, rank, world, NULL, &n);
      if (rc != PAGEDB_OK) pdberr_set(&e, rc, pagedb_errmsg(ds->db));
      ds_leave(ds);
    }
    Py_END_ALLOW_THREADS
    if (rc != PAGEDB_OK) return pdberr_raise(&e);
    npy_intp dim = (npy_intp)n;
    arr = PyArray_SimpleNew(1, &dim, NPY_INT64);
    if (!arr) return NULL;
    int64_t *ids = PyArray_DATA((PyArrayObject *)arr), got = n;
    Py_BEGIN_ALLOW_THREADS
    if (ds_enter(ds, &e) == 0) {
      rc = pagedb_order(ds->db, k, seed, epoch, rank, world, ids, &got);
      if (rc != PAGEDB_OK) pdberr_set(&e, rc, pagedb_errmsg(ds->db));
      ds_leave(ds);
    } else {
      rc = e.rc;
    }
    Py_END_ALLOW_THREADS
    if (rc == PAGEDB_OK && got == n) return arr;
    Py_DECREF(arr);
    /* A commit between the two calls grew the order: ask again. */
    if (!(rc == PAGEDB_MISUSE && got > n) && !(rc == PAGEDB_OK && got != n)) return pdberr_raise(&e);
  }
}

PyObject *writer_create(PyDataset *ds);
PyObject *iter_create(PyDataset *ds, PyObject *args, PyObject *kw);

static PyObject *dataset_writer(PyDataset *ds, PyObject *noarg) {
  return writer_create(ds);
}

static PyObject *dataset_iterate(PyDataset *ds, PyObject *args, PyObject *kw) {
  return iter_create(ds, args, kw);
}

static PyObject *dataset_tokens(PyDataset *ds, PyObject *args, PyObject *kw) {
  return tokens_create(ds, args, kw);
}

static PyMethodDef dataset_methods[] = {
  {"close", (PyCFunction)dataset_close, METH_NOARGS,
   "close(): commit and close.  Views still alive keep the handle (and its map) open until they go."},
  {"__enter__", (PyCFunction)dataset_enter, METH_NOARGS, NULL},
  {"_tensor_shape", (PyCFunction)dataset_tensor_shape, METH_VARARGS,
   "_tensor_shape(field, value) -> (shape, nbytes): the shape of a raw value of a tensor field (read_packed)."},
  {"__exit__", (PyCFunction)dataset_exit, METH_VARARGS, NULL},
  {"add_field", (PyCFunction)(void (*)(void))dataset_add_field, METH_VARARGS | METH_KEYWORDS,
   "add_field(name, type, codec=None, level=0, align=0) -> field number.  type: 'bytes', 'text', 'int', 'real'; "
   "codec: None/'none', 'lz4', 'lz4hc' or 'lz4hc:12'; align: values start at multiples of it (1, 2, 4 ... 64; "
   "0: 8 for bytes, 1 otherwise), so zero-copy views can be cast to float32, int64...: "
   "pagedb_field_add_aligned."},
  {"get", (PyCFunction)(void (*)(void))dataset_get, METH_VARARGS | METH_KEYWORDS,
   "get(id, fields=None, raw=False) -> dict: as ds[id], for some fields; raw: TEXT as memoryview."},
  {"read", (PyCFunction)(void (*)(void))dataset_read, METH_VARARGS | METH_KEYWORDS,
   "read(id, field, out=None): the value as bytes/str/int/float; with out (a writable buffer), the value is "
   "read into it and its size returned."},
  {"view", (PyCFunction)(void (*)(void))dataset_view, METH_VARARGS | METH_KEYWORDS,
   "view(id, field) -> memoryview of a BYTES or TEXT value (zero-copy in mmap mode for fields stored as given)."},
  {"read_batch", (PyCFunction)(void (*)(void))dataset_read_batch, METH_VARARGS | METH_KEYWORDS,
   "read_batch(ids, field, raw=False) -> list of the values of FIELD of IDS."},
  {"_read_packed", (PyCFunction)(void (*)(void))ds_read_packed, METH_VARARGS | METH_KEYWORDS,
   "_read_packed(ids, fields=None) -> (ids, columns, present): see Dataset.read_packed."},
  {"read_into", (PyCFunction)(void (*)(void))ds_read_into, METH_VARARGS | METH_KEYWORDS,
   "read_into(ids, fields, outs) -> n: fixed-shape tensor (or INT/REAL) values of IDS copied into the "
   "writable buffers OUTS, one per field (gather.c)."},
  {"order", (PyCFunction)(void (*)(void))dataset_order, METH_VARARGS | METH_KEYWORDS,
   "order(kind='random', seed=0, epoch=0, rank=0, world=1, drop_last=False) -> int64 ndarray of ids."},
  {"writer", (PyCFunction)dataset_writer, METH_NOARGS, "writer() -> Writer (one per thread)."},
  {"tokens", (PyCFunction)(void (*)(void))dataset_tokens, METH_VARARGS | METH_KEYWORDS,
   "tokens(field, block_size, kind='random', seed=0, epoch=0) -> Tokens: the epoch's token stream of a token "
   "field (a tensor field of one variable dimension and an integer dtype), in blocks of block_size + 1."},
  {"iterate", (PyCFunction)(void (*)(void))dataset_iterate, METH_VARARGS | METH_KEYWORDS,
   "iterate(ids, fields=None, window=16 MiB, raw=False) -> Iterator over the samples IDS in that order, reading "
   "ahead WINDOW bytes."},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef dataset_getset[] = {
  {"fields", (getter)dataset_fields, NULL, "tuple of Field(name, type, codec, level)", NULL},
  {"path", (getter)dataset_path, NULL, "the data file's path", NULL},
  {"closed", (getter)dataset_closed, NULL, "whether close() was called", NULL},
  {"readonly", (getter)dataset_readonly, NULL, "opened with mode 'r'", NULL},
  {"zero_copy", (getter)dataset_zero_copy, NULL, "reads return views of the map (read_mode 'mmap')", NULL},
  {"page_size", (getter)dataset_page_size, NULL, "the page size in bytes", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyMappingMethods dataset_as_mapping = {(lenfunc)dataset_len, (binaryfunc)dataset_getitem, NULL};

PyTypeObject PyDataset_Type = {
  PYPDB_TYPE_HEAD("_pagedb.Dataset", PyDataset, dataset_dealloc),
  .tp_as_mapping = &dataset_as_mapping,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
  .tp_doc = "Dataset(path, mode='r', vfs=None, read_mode='mmap', verify=False, page_size=0): a pagedb dataset.",
  .tp_traverse = (traverseproc)dataset_traverse,
  .tp_weaklistoffset = offsetof(PyDataset, weakreflist),
  .tp_methods = dataset_methods,
  .tp_getset = dataset_getset,
  .tp_init = (initproc)dataset_init,
  .tp_new = dataset_new,
};
