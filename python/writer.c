/*
** writer.c -- pagedb.Writer: one pagedb_writer, for one thread at a time.
**
** append() gathers the sample's values with the GIL held (buffers of
** bytes-like objects, UTF-8 of str, numbers converted), then releases the
** GIL for pagedb_sample_begin/put/sample_end, which copy, compress and
** write pages: several Python threads, each with its own Writer, write in
** parallel.  The buffers stay exported and the objects referenced until
** the call returns, so nothing they point at can change or go meanwhile.
**
** A Writer's mutex serialises callers that share one (pagedb.h: a writer
** belongs to one thread at a time); it is taken before the dataset is
** entered, never after (the lock order: writer, then dataset).  Dataset
** close() closes the pagedb_writer of every live Writer (ds->writers)
** under the dataset's exclusive lock, where no call on it can be running.
*/
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pypagedb_ARRAY_API
#define NO_IMPORT_ARRAY
#include "pypagedb.h"

#include <numpy/arrayobject.h>

#include <string.h>
#include <unistd.h>

/* One value of a sample being appended. */
typedef struct {
  int field, type;
  Py_buffer buf;                  /* BYTES (and TEXT given as bytes) */
  int hasbuf;
  const char *text;               /* TEXT given as str: its UTF-8 */
  Py_ssize_t ntext;
  int64_t i;
  double d;
  PyObject *arr;                  /* TENSOR: the C-contiguous ndarray BUF is of */
  int dtype, ndim;                /* TENSOR: its pagedb dtype and shape */
  int64_t shape[PAGEDB_TENSOR_MAX_DIMS];
} Val;

PyObject *writer_create(PyDataset *ds) {
  if (ds_check_open(ds)) return NULL;
  PyWriter *w = PyObject_New(PyWriter, &PyWriter_Type);
  if (!w) return NULL;
  w->ds = (PyDataset *)Py_NewRef(ds);
  w->w = NULL;
  w->link.next = NULL;
  w->link.pprev = NULL;
  pthread_mutex_init(&w->mu, NULL);
  PdbErr e;
  int rc = PAGEDB_MISUSE;
  Py_BEGIN_ALLOW_THREADS
  if (ds_enter(ds, &e) == 0) {
    rc = pagedb_writer_open(ds->db, &w->w);
    if (rc != PAGEDB_OK) {
      pdberr_set(&e, rc, pagedb_errmsg(ds->db));
    } else {
      /* Linked while entered: close() (exclusive) sees it and closes it. */
      ds_link(ds, &ds->writers, &w->link);
    }
    ds_leave(ds);
  }
  Py_END_ALLOW_THREADS
  if (rc != PAGEDB_OK) {
    Py_DECREF(w);
    return pdberr_raise(&e);
  }
  return (PyObject *)w;
}

/* Run pagedb_writer_close (CLOSE) or _flush on W, entered; raise a failure. */
static PyObject *writer_finish(PyWriter *w, int close) {
  PdbErr e;
  int rc = PAGEDB_OK;
  lock_nogil(&w->mu);
  Py_BEGIN_ALLOW_THREADS
  if (ds_enter(w->ds, &e) == 0) {
    if (w->w) {
      rc = close ? pagedb_writer_close(w->w) : pagedb_writer_flush(w->w);
      if (rc != PAGEDB_OK) pdberr_set(&e, rc, close ? pagedb_errmsg(w->ds->db) : pagedb_writer_errmsg(w->w));
      if (close) w->w = NULL;
    } else if (!close) {
      pdberr_set(&e, rc = PAGEDB_MISUSE, "the writer is closed");
    }
    ds_leave(w->ds);
  } else if (!close) {
    rc = e.rc;
  }
  Py_END_ALLOW_THREADS
  pthread_mutex_unlock(&w->mu);
  if (rc != PAGEDB_OK) return pdberr_raise(&e);
  Py_RETURN_NONE;
}

static void writer_dealloc(PyWriter *w) {
  if (w->ds && w->ds->pid != getpid()) {
    Py_CLEAR(w->ds);   /* a forked child's copy: the handle is the parent's */
  } else if (w->ds) {
    /* Closed quietly: a failure here has no caller to tell (close() does). */
    if (w->w) {
      PdbErr e;
      Py_BEGIN_ALLOW_THREADS
      if (ds_enter(w->ds, &e) == 0) {
        pagedb_writer_close(w->w);
        w->w = NULL;
        ds_leave(w->ds);
      }
      Py_END_ALLOW_THREADS
    }
    ds_unlink(w->ds, &w->link);
    Py_CLEAR(w->ds);
  }
  pthread_mutex_destroy(&w->mu);
  PyObject_Free(w);
}

static void vals_release(Val *v, int n) {
  for (int i = 0; i < n; i++) {
    if (v[i].hasbuf) PyBuffer_Release(&v[i].buf);
    Py_CLEAR(v[i].arr);
  }
}

/* Fill V from VALUE for field F (GIL held).  0, or -1 with an exception. */
static int val_from(PyWriter *w, int f, PyObject *value, Val *v) {
  PyDataset *ds = w->ds;
  memset(v, 0, sizeof *v);
  v->field = f;
  v->type = ds->ftype[f];
  const char *name = PyUnicode_AsUTF8(PyStructSequence_GET_ITEM(PyTuple_GET_ITEM(ds->fields, f), 0));
  switch (v->type) {
    case PAGEDB_INT: {
      PyObject *i = PyNumber_Index(value);
      if (!i) {
        PyErr_Format(PyExc_TypeError, "field '%s' is INT: give an int, not %.100s", name, Py_TYPE(value)->tp_name);
        return -1;
      }
      v->i = PyLong_AsLongLong(i);
      Py_DECREF(i);
      return v->i == -1 && PyErr_Occurred() ? -1 : 0;
    }
    case PAGEDB_REAL:
      v->d = PyFloat_AsDouble(value);
      if (v->d == -1.0 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "field '%s' is REAL: give a float, not %.100s", name, Py_TYPE(value)->tp_name);
        return -1;
      }
      return 0;
    case PAGEDB_TENSOR: {
      PyArrayObject *a = (PyArrayObject *)tensor_arg(value, name, &v->dtype);
      if (!a) return -1;
      v->arr = (PyObject *)a;
      v->ndim = PyArray_NDIM(a);
      if (v->ndim > PAGEDB_TENSOR_MAX_DIMS) v->ndim = PAGEDB_TENSOR_MAX_DIMS + 1;   /* refused by pagedb_put_tensor */
      for (int k = 0; k < v->ndim && k < PAGEDB_TENSOR_MAX_DIMS; k++) v->shape[k] = (int64_t)PyArray_DIM(a, k);
      if (PyObject_GetBuffer(v->arr, &v->buf, PyBUF_C_CONTIGUOUS) < 0) return -1;
      v->hasbuf = 1;
      return 0;
    }
    case PAGEDB_TEXT:
      if (PyUnicode_Check(value)) {
        v->text = PyUnicode_AsUTF8AndSize(value, &v->ntext);
        return v->text ? 0 : -1;
      }
      /* UTF-8 given as bytes: as a BYTES value. */
      __attribute__((fallthrough));
    default:
      if (PyUnicode_Check(value) || PyObject_GetBuffer(value, &v->buf, PyBUF_ANY_CONTIGUOUS) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "field '%s' is %s: give a contiguous bytes-like object, not %.100s", name,
                     v->type == PAGEDB_TEXT ? "TEXT" : "BYTES", Py_TYPE(value)->tp_name);
        return -1;
      }
      v->hasbuf = 1;
      return 0;
  }
}

/* Begin, put every value, end: the GIL released, entered, W locked. */
static int append_locked(pagedb_writer *pw, int64_t id, Val *v, int n, int64_t *got) {
  int rc = pagedb_sample_begin(pw, id);
  for (int i = 0; i < n && rc == PAGEDB_OK; i++) {
    switch (v[i].type) {
      case PAGEDB_INT: rc = pagedb_put_int(pw, v[i].field, v[i].i); break;
      case PAGEDB_REAL: rc = pagedb_put_real(pw, v[i].field, v[i].d); break;
      case PAGEDB_TENSOR:
        rc = pagedb_put_tensor(pw, v[i].field, v[i].dtype, v[i].ndim, v[i].shape, v[i].buf.buf, (size_t)v[i].buf.len);
        break;
      default:
        rc = v[i].hasbuf ? pagedb_put(pw, v[i].field, v[i].buf.buf, (size_t)v[i].buf.len)
                         : pagedb_put(pw, v[i].field, v[i].text, (size_t)v[i].ntext);
    }
  }
  if (rc == PAGEDB_OK) rc = pagedb_sample_end(pw, got);
  return rc;
}

static PyObject *writer_append(PyWriter *w, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"sample", "id", NULL};
  PyObject *sample, *ido = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:append", kwlist, &sample, &ido)) return NULL;
  if (ds_check_open(w->ds)) return NULL;
  int64_t id = PAGEDB_AUTO_ID;
  if (ido != Py_None) {
    PyObject *i = PyNumber_Index(ido);
    if (!i) return NULL;
    id = PyLong_AsLongLong(i);
    Py_DECREF(i);
    if (id == -1 && PyErr_Occurred()) return NULL;
    if (id < 0) return pdb_raise(PAGEDB_MISUSE, "sample id %lld: ids are >= 0", (long long)id);
  }
  PyObject *items = PyMapping_Items(sample);
  if (!items) return NULL;
  Py_ssize_t k = PyList_GET_SIZE(items);
  Val stack[8], *v = k <= 8 ? stack : PyMem_Malloc(sizeof(Val) * k);
  if (!v) {
    Py_DECREF(items);
    return PyErr_NoMemory();
  }
  int n = 0;
  for (Py_ssize_t i = 0; i < k; i++) {
    PyObject *kv = PyList_GET_ITEM(items, i), *value = PyTuple_GET_ITEM(kv, 1);
    if (value == Py_None) continue;   /* left out: reads as missing */
    int f = ds_field_number(w->ds, PyTuple_GET_ITEM(kv, 0));
    if (f < 0 || val_from(w, f, value, &v[n]) < 0) goto fail;
    n++;
  }
  PdbErr e;
  int rc = PAGEDB_MISUSE;
  int64_t got = -1;
  lock_nogil(&w->mu);
  Py_BEGIN_ALLOW_THREADS
  if (ds_enter(w->ds, &e) == 0) {
    if (!w->w) {
      pdberr_set(&e, PAGEDB_MISUSE, "the writer is closed");
    } else {
      rc = append_locked(w->w, id, v, n, &got);
      if (rc != PAGEDB_OK) {
        pdberr_set(&e, rc, pagedb_writer_errmsg(w->w));
        pagedb_sample_cancel(w->w);
      }
    }
    ds_leave(w->ds);
  }
  Py_END_ALLOW_THREADS
  pthread_mutex_unlock(&w->mu);
  vals_release(v, n);
  if (v != stack) PyMem_Free(v);
  Py_DECREF(items);
  if (rc != PAGEDB_OK) return pdberr_raise(&e);
  return PyLong_FromLongLong(got);
fail:
  vals_release(v, n);
  if (v != stack) PyMem_Free(v);
  Py_DECREF(items);
  return NULL;
}

static PyObject *writer_flush(PyWriter *w, PyObject *noarg) {
  if (ds_check_open(w->ds)) return NULL;
  return writer_finish(w, 0);
}

static PyObject *writer_close(PyWriter *w, PyObject *noarg) {
  if (ds_in_child(w->ds))
    return pdb_raise(PAGEDB_MISUSE, "%S was opened by process %ld; process %ld (a fork) may read through it but "
                     "not write", w->ds->path, (long)w->ds->pid, (long)getpid());
  return writer_finish(w, 1);
}

static PyObject *writer_enter(PyWriter *w, PyObject *noarg) {
  return Py_NewRef(w);
}

static PyObject *writer_exit(PyWriter *w, PyObject *args) {
  return writer_close(w, NULL);
}

static PyObject *writer_closed(PyWriter *w, void *closure) {
  return PyBool_FromLong(w->w == NULL || w->ds->db == NULL);
}

static PyMethodDef writer_methods[] = {
  {"append", (PyCFunction)(void (*)(void))writer_append, METH_VARARGS | METH_KEYWORDS,
   "append(sample, id=None) -> id: write a sample, a mapping of field name (or number) to value; None values "
   "are left out.  id None: the engine picks one."},
  {"flush", (PyCFunction)writer_flush, METH_NOARGS, "flush(): write the partly filled page, so commit() covers it."},
  {"close", (PyCFunction)writer_close, METH_NOARGS, "close(): flush and free the writer."},
  {"__enter__", (PyCFunction)writer_enter, METH_NOARGS, NULL},
  {"__exit__", (PyCFunction)writer_exit, METH_VARARGS, NULL},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef writer_getset[] = {
  {"closed", (getter)writer_closed, NULL, "whether the writer (or its dataset) is closed", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject PyWriter_Type = {
  PYPDB_TYPE_HEAD("_pagedb.Writer", PyWriter, writer_dealloc),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A writer of a dataset (Dataset.writer()); use one per thread.",
  .tp_methods = writer_methods,
  .tp_getset = writer_getset,
};
