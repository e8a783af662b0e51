/*
** iter.c -- pagedb.Iterator: the samples of a list of ids, in that order,
** through a reader of its own that reads ahead along the list
** (pagedb_reader_prefetch).  This is what pagedb.torch's datasets walk an
** epoch's order with.
**
** The position is the number of ids already returned: saving it and
** setting it again on a new Iterator of the same ids resumes exactly (a
** read off the order does not move pagedb's read-ahead, it just gains
** nothing until the reads are back on the order).  An id that fails (a
** sample deleted meanwhile) raises, and the position moves past it, so
** the caller may go on.
*/
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pypagedb_ARRAY_API
#define NO_IMPORT_ARRAY
#include "pypagedb.h"

#include <numpy/arrayobject.h>
#include <string.h>
#include <unistd.h>

PyObject *iter_create(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"ids", "fields", "window", "raw", "with_ids", NULL};
  PyObject *idso, *fields = Py_None;
  Py_ssize_t window = 16 << 20;
  int raw = 0, with_ids = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Onpp:iterate", kwlist, &idso, &fields, &window, &raw, &with_ids) ||
      ds_check_open(ds))
    return NULL;
  if (window < 0) return pdb_raise(PAGEDB_MISUSE, "window %zd: give 0 (no read-ahead) or more bytes", window);
  PyArrayObject *arr = (PyArrayObject *)ds_ids_array(idso);
  if (!arr) return NULL;
  PyIter *it = PyObject_New(PyIter, &PyIter_Type);
  if (!it) {
    Py_DECREF(arr);
    return NULL;
  }
  it->ds = (PyDataset *)Py_NewRef(ds);
  it->r = NULL;
  it->n = PyArray_SIZE(arr);
  it->pos = 0;
  it->raw = raw;
  it->with_ids = with_ids;
  it->fields = NULL;
  it->link.next = NULL;
  it->link.pprev = NULL;
  pthread_mutex_init(&it->mu, NULL);
  it->ids = PyMem_RawMalloc(sizeof(int64_t) * (it->n ? it->n : 1));
  if (!it->ids) {
    Py_DECREF(arr);
    Py_DECREF(it);
    return PyErr_NoMemory();
  }
  memcpy(it->ids, PyArray_DATA(arr), sizeof(int64_t) * it->n);
  Py_DECREF(arr);
  if (ds_parse_fields(ds, fields, &it->fields, &it->nfield) < 0) {
    Py_DECREF(it);
    return NULL;
  }
  /* Read ahead along the first field that lives in pages. */
  int pf = -1;
  for (int i = 0; i < it->nfield && pf < 0; i++)
    if (ds->ftype[it->fields[i]] == PAGEDB_BYTES || ds->ftype[it->fields[i]] == PAGEDB_TEXT) pf = it->fields[i];
  PdbErr e;
  int rc = PAGEDB_MISUSE;
  Py_BEGIN_ALLOW_THREADS
  if (ds_enter(ds, &e) == 0) {
    rc = pagedb_reader_open(ds->db, ds->readmode, &it->r);
    if (rc != PAGEDB_OK) pdberr_set(&e, rc, pagedb_errmsg(ds->db));
    if (rc == PAGEDB_OK && pf >= 0 && window > 0 && it->n > 0) {
      rc = pagedb_reader_prefetch(it->r, it->ids, it->n, pf, (size_t)window);
      if (rc != PAGEDB_OK) {
        pdberr_set(&e, rc, pagedb_reader_errmsg(it->r));
        pagedb_reader_close(it->r);
        it->r = NULL;
      }
    }
    if (rc == PAGEDB_OK) ds_link(ds, &ds->iters, &it->link);
    ds_leave(ds);
  }
  Py_END_ALLOW_THREADS
  if (rc != PAGEDB_OK) {
    Py_DECREF(it);
    return pdberr_raise(&e);
  }
  return (PyObject *)it;
}

/* Close IT's reader, entered (a no-op once the dataset is closed: close()
** closed it then). */
static void iter_close_reader(PyIter *it) {
  PdbErr e;
  if (!it->r) return;
  Py_BEGIN_ALLOW_THREADS
  if (ds_enter(it->ds, &e) == 0) {
    pagedb_reader_close(it->r);
    it->r = NULL;
    ds_leave(it->ds);
  }
  Py_END_ALLOW_THREADS
}

static void iter_dealloc(PyIter *it) {
  if (it->ds) {
    ds_in_child(it->ds);   /* adopted first: its locks are usable here */
    iter_close_reader(it);
    ds_unlink(it->ds, &it->link);
  }
  Py_CLEAR(it->ds);
  PyMem_RawFree(it->ids);
  PyMem_Free(it->fields);
  pthread_mutex_destroy(&it->mu);
  PyObject_Free(it);
}

static PyObject *iter_iter(PyIter *it) {
  return Py_NewRef(it);
}

static PyObject *iter_next(PyIter *it) {
  if (ds_check_open(it->ds)) return NULL;
  Slot stack[16], *slots = it->nfield <= 16 ? stack : PyMem_Malloc(sizeof(Slot) * it->nfield);
  if (!slots) return PyErr_NoMemory();
  PdbErr e;
  int rc = -1, end = 0;
  int64_t id = -1;
  lock_nogil(&it->mu);
  Py_BEGIN_ALLOW_THREADS
  if (it->pos >= it->n) {
    end = 1;
  } else if (ds_enter(it->ds, &e) == 0) {
    if (!it->r) pdberr_set(&e, PAGEDB_MISUSE, "the iterator is closed");
    else rc = ds_fetch_sample(it->ds, it->r, id = it->ids[it->pos], it->fields, it->nfield, slots, &e);
    it->pos++;
    ds_leave(it->ds);
  }
  Py_END_ALLOW_THREADS
  pthread_mutex_unlock(&it->mu);
  PyObject *d = NULL;
  if (!end) d = rc == 0 ? ds_wrap_sample(it->ds, it->fields, it->nfield, slots, it->raw) : pdberr_raise(&e);
  if (d && it->with_ids) {
    /* "id" names no field (it is reserved), so it cannot hide one. */
    PyObject *i = PyLong_FromLongLong(id);
    if (!i || PyDict_SetItemString(d, "id", i) < 0) Py_CLEAR(d);
    Py_XDECREF(i);
  }
  if (slots != stack) PyMem_Free(slots);
  return d;   /* NULL with no exception set: StopIteration */
}

static PyObject *iter_close(PyIter *it, PyObject *noarg) {
  ds_in_child(it->ds);   /* adopted first: its locks are usable here */
  lock_nogil(&it->mu);
  iter_close_reader(it);
  pthread_mutex_unlock(&it->mu);
  Py_RETURN_NONE;
}

static Py_ssize_t iter_len(PyIter *it) {
  return (Py_ssize_t)it->n;
}

static PyObject *iter_get_position(PyIter *it, void *closure) {
  return PyLong_FromLongLong(it->pos);
}

static int iter_set_position(PyIter *it, PyObject *v, void *closure) {
  if (!v) {
    PyErr_SetString(PyExc_AttributeError, "the position cannot be deleted");
    return -1;
  }
  long long p = PyLong_AsLongLong(v);
  if (p == -1 && PyErr_Occurred()) return -1;
  if (p < 0 || p > it->n) {
    PyErr_Format(PyExc_ValueError, "position %lld: the iterator has %lld ids", p, (long long)it->n);
    return -1;
  }
  lock_nogil(&it->mu);
  it->pos = p;
  pthread_mutex_unlock(&it->mu);
  return 0;
}

static PyMethodDef iter_methods[] = {
  {"close", (PyCFunction)iter_close, METH_NOARGS, "close(): free the reader."},
  {"next_batch", (PyCFunction)iter_next_batch, METH_O,
   "next_batch(k) -> list of the next K samples (dicts) in one call; [] at the end."},
  {"next_packed", (PyCFunction)iter_next_packed, METH_O,
   "next_packed(k) -> (ids, columns, present) of the next K samples, packed (see Dataset.read_packed); "
   "None at the end."},
  {"next_into", (PyCFunction)iter_next_into, METH_VARARGS,
   "next_into(k, outs) -> n: the next K (or fewer: N) samples' fixed-size values copied into the writable "
   "buffers OUTS, one per field of the iterator, each sized for K values; 0 at the end."},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef iter_getset[] = {
  {"position", (getter)iter_get_position, (setter)iter_set_position,
   "how many ids were returned (set it to resume)", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods iter_as_sequence = {.sq_length = (lenfunc)iter_len};

PyTypeObject PyIter_Type = {
  PYPDB_TYPE_HEAD("_pagedb.Iterator", PyIter, iter_dealloc),
  .tp_as_sequence = &iter_as_sequence,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "The samples of a list of ids in order, read ahead (Dataset.iterate()).",
  .tp_iter = (getiterfunc)iter_iter,
  .tp_iternext = (iternextfunc)iter_next,
  .tp_methods = iter_methods,
  .tp_getset = iter_getset,
};
