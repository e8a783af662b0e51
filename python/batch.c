/*
** batch.c -- many samples in one call: what pagedb.torch's workers read a
** DataLoader batch with, so that the per-sample work left in Python is the
** user's own.
**
**   Dataset._read_packed(ids, fields=None)
**   Iterator.next_packed(k)     the next K ids of the iterator's order
**   Iterator.next_batch(k, raw) the next K samples as a list of dicts
**
** A packed read returns (ids, columns, present): IDS an int64 array; for each
** field, by name, a column: an int64 (INT) or float64 (REAL) array of one
** value per sample, or for BYTES and TEXT a pair (data, offsets) -- every
** value's bytes back to back in one uint8 array, sample k's at
** data[offsets[k]:offsets[k+1]] (offsets: int64, K+1 entries).  PRESENT
** holds, for a field that some sample has no value for, a bool array
** (False: missing; the value is then 0, or no bytes).  One object per field
** per batch, not per sample: a batch crosses from a DataLoader worker to
** the main process as a few arrays (torch moves each through one shared
** memory segment) rather than K pickled objects.
**
** Invariants:
**   - Everything pagedb hands out is copied into the batch's own buffers
**     during the call that returned it (pagedb_read_batch's pointers live
**     until the next call on the reader); nothing of the reader's or of the
**     map is referred to afterwards, so a packed batch pins nothing.
**   - The reads run with the GIL released and the handle entered (pypagedb.h,
**     invariant 1); the buffers are PyMem_Raw memory, made into NumPy arrays
**     (each owning its buffer through a capsule) once the GIL is back.
**   - A sample with no value for any field read does not exist: the call
**     fails with NotFoundError naming it, as ds[i] does.
*/
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pypagedb_ARRAY_API
#define NO_IMPORT_ARRAY
#include "pypagedb.h"

#include <numpy/arrayobject.h>
#include <string.h>

#define CHUNK 256                 /* ids per pagedb_read_batch call */

/* One field's column while it is read (GIL released). */
typedef struct {
  int f, type;
  unsigned char *data;            /* BYTES/TEXT: the values back to back */
  size_t len, cap;
  int64_t *off;                   /* BYTES/TEXT: K+1 offsets */
  void *vals;                     /* INT: int64_t[K]; REAL: double[K] */
  unsigned char *present;         /* [K]: 1 if the sample has a value */
  int64_t nmissing;
} Col;

static int col_nomem(PdbErr *e, size_t n) {
  pdberr_set(e, PAGEDB_NOMEM, NULL);
  snprintf(e->msg, sizeof e->msg, "out of memory for a batch's %zu bytes", n);
  return -1;
}

/* Room for EXTRA more bytes in C's data, growing it by doubling. */
static int col_reserve(Col *c, size_t extra, PdbErr *e) {
  if (c->len + extra <= c->cap) return 0;
  size_t cap = c->cap ? c->cap : 1 << 16;
  while (cap < c->len + extra) cap *= 2;
  void *d = PyMem_RawRealloc(c->data, cap);
  if (!d) return col_nomem(e, cap);
  c->data = d;
  c->cap = cap;
  return 0;
}

/* Append N bytes at P to C's data. */
static int col_append(Col *c, const void *p, size_t n, PdbErr *e) {
  if (col_reserve(c, n, e) < 0) return -1;
  if (n) memcpy(c->data + c->len, p, n);
  c->len += n;
  return 0;
}

/* The value of C's field for sample IDS[k] through pagedb_read (or the
** scalar reads); a missing value is recorded, not an error. */
static int col_read_one(Col *c, pagedb_reader *r, const int64_t *ids, int64_t k, PdbErr *e) {
  int rc;
  if (c->type == PAGEDB_INT) {
    rc = pagedb_read_int(r, ids[k], c->f, (int64_t *)c->vals + k);
  } else if (c->type == PAGEDB_REAL) {
    rc = pagedb_read_real(r, ids[k], c->f, (double *)c->vals + k);
  } else {
    const void *p = NULL;
    size_t n = 0;
    rc = pagedb_read(r, ids[k], c->f, &p, &n);
    if (rc == PAGEDB_OK && col_append(c, p, n, e) < 0) return -1;
    c->off[k + 1] = (int64_t)c->len;
  }
  if (rc == PAGEDB_NOTFOUND) {
    c->present[k] = 0;
    c->nmissing++;
    return 0;
  }
  c->present[k] = 1;
  if (rc == PAGEDB_OK) return 0;
  pdberr_set(e, rc, pagedb_reader_errmsg(r));
  return -1;
}

/* Read column C for the N ids IDS (GIL released, entered). */
static int col_read(Col *c, pagedb_reader *r, const int64_t *ids, int64_t n, PdbErr *e) {
  if (c->type == PAGEDB_INT || c->type == PAGEDB_REAL) {
    for (int64_t k = 0; k < n; k++)
      if (col_read_one(c, r, ids, k, e) < 0) return -1;
    return 0;
  }
  const void *ptrs[CHUNK];
  size_t sizes[CHUNK];
  c->off[0] = 0;
  for (int64_t at = 0; at < n; at += CHUNK) {
    int k = (int)(n - at < CHUNK ? n - at : CHUNK);
    if (pagedb_read_batch(r, ids + at, k, c->f, ptrs, sizes) == PAGEDB_OK) {
      size_t total = 0;
      for (int j = 0; j < k; j++) total += sizes[j];
      if (col_reserve(c, total, e) < 0) return -1;   /* the buffer grows once per chunk */
      for (int j = 0; j < k; j++) {
        if (col_append(c, ptrs[j], sizes[j], e) < 0) return -1;
        c->off[at + j + 1] = (int64_t)c->len;
        c->present[at + j] = 1;
      }
    } else {
      /* A missing value (or a failure) stops a batch: read this chunk one by
      ** one, which tells a missing value from an error and names the id. */
      for (int j = 0; j < k; j++)
        if (col_read_one(c, r, ids, at + j, e) < 0) return -1;
    }
  }
  return 0;
}

static void cols_free(Col *cols, int nf) {
  for (int i = 0; i < nf; i++) {
    PyMem_RawFree(cols[i].data);
    PyMem_RawFree(cols[i].off);
    PyMem_RawFree(cols[i].vals);
    PyMem_RawFree(cols[i].present);
  }
}

/* Read fields NUMS of the N ids IDS into COLS (GIL released, entered).
** 0, or -1 with E set (and the columns still to be freed). */
static int packed_read(PyDataset *ds, pagedb_reader *r, const int64_t *ids, int64_t n, const int *nums, int nf,
                       Col *cols, PdbErr *e) {
  for (int i = 0; i < nf; i++) {
    Col *c = &cols[i];
    c->f = nums[i];
    c->type = ds_field_type(ds, c->f);
    size_t k = n ? (size_t)n : 1;
    c->present = PyMem_RawMalloc(k);
    if (c->type == PAGEDB_INT || c->type == PAGEDB_REAL) c->vals = PyMem_RawCalloc(k, 8);
    else c->off = PyMem_RawCalloc(k + 1, sizeof(int64_t));
    if (!c->present || (!c->vals && !c->off)) return col_nomem(e, k * 8);
    if (col_read(c, r, ids, n, e) < 0) return -1;
  }
  /* A sample missing from every column is not there at all. */
  for (int64_t k = 0; k < n && nf > 0; k++) {
    int any = 0;
    for (int i = 0; i < nf && !any; i++) any = cols[i].present[k];
    if (!any) {
      pdberr_set(e, PAGEDB_NOTFOUND, NULL);
      snprintf(e->msg, sizeof e->msg, "no committed sample %lld (entry %lld of the batch)", (long long)ids[k],
               (long long)k);
      return -1;
    }
  }
  return 0;
}

static void capsule_free(PyObject *cap) {
  PyMem_RawFree(PyCapsule_GetPointer(cap, NULL));
}

/* A 1-d array of N items of TYPENUM over P (PyMem_Raw memory it takes
** over, even on failure). */
static PyObject *array_owning(void *p, npy_intp n, int typenum) {
  static char empty[8];
  PyObject *a = PyArray_SimpleNewFromData(1, &n, typenum, p ? p : empty);
  PyObject *cap = p ? PyCapsule_New(p, NULL, capsule_free) : NULL;
  if (!a || (p && !cap)) {
    Py_XDECREF(a);
    if (cap) Py_DECREF(cap);
    else PyMem_RawFree(p);
    return NULL;
  }
  if (cap && PyArray_SetBaseObject((PyArrayObject *)a, cap) < 0) {   /* steals cap */
    Py_DECREF(a);
    return NULL;
  }
  return a;
}

/* (ids, columns, present) of COLS (GIL held); takes over their buffers. */
static PyObject *packed_wrap(PyDataset *ds, const int64_t *ids, int64_t n, Col *cols, int nf) {
  npy_intp dim = (npy_intp)n;
  PyObject *idarr = PyArray_SimpleNew(1, &dim, NPY_INT64);
  PyObject *colsd = PyDict_New(), *present = PyDict_New(), *out = NULL;
  if (idarr) memcpy(PyArray_DATA((PyArrayObject *)idarr), ids, sizeof(int64_t) * (size_t)n);
  for (int i = 0; i < nf; i++) {
    Col *c = &cols[i];
    PyObject *v = NULL, *pres = NULL;
    if (idarr && colsd && present) {
      if (c->off) {
        PyObject *data = array_owning(c->data, (npy_intp)c->len, NPY_UINT8);
        PyObject *off = array_owning(c->off, dim + 1, NPY_INT64);
        c->data = NULL;
        c->off = NULL;
        v = data && off ? PyTuple_Pack(2, data, off) : NULL;
        Py_XDECREF(data);
        Py_XDECREF(off);
      } else {
        v = array_owning(c->vals, dim, c->type == PAGEDB_INT ? NPY_INT64 : NPY_FLOAT64);
        c->vals = NULL;
      }
      if (c->nmissing) {
        pres = array_owning(c->present, dim, NPY_BOOL);
        c->present = NULL;
      }
    }
    PyObject *name = PyStructSequence_GET_ITEM(PyTuple_GET_ITEM(ds->fields, c->f), 0);
    if (!v || PyDict_SetItem(colsd, name, v) < 0 || (c->nmissing && (!pres || PyDict_SetItem(present, name, pres) < 0)))
      Py_CLEAR(colsd);
    Py_XDECREF(v);
    Py_XDECREF(pres);
  }
  cols_free(cols, nf);
  if (idarr && colsd && present) out = PyTuple_Pack(3, idarr, colsd, present);
  Py_XDECREF(idarr);
  Py_XDECREF(colsd);
  Py_XDECREF(present);
  return out;
}

/* Read fields NUMS of IDS through *RP (an iterator's reader, read once the
** handle is entered: close() may have closed it), or a pool reader when RP
** is NULL, and wrap them.  GIL held on entry and return. */
static PyObject *packed_call(PyDataset *ds, pagedb_reader *const *rp, const int64_t *ids, int64_t n,
                             const int *nums, int nf) {
  Col stack[8], *cols = nf <= 8 ? stack : PyMem_Malloc(sizeof(Col) * (size_t)nf);
  if (!cols) return PyErr_NoMemory();
  memset(cols, 0, sizeof(Col) * (size_t)nf);
  PdbErr e;
  int rc = -1;
  Py_BEGIN_ALLOW_THREADS
  if (rp) {
    if (ds_enter(ds, &e) == 0) {
      if (*rp) rc = packed_read(ds, *rp, ids, n, nums, nf, cols, &e);
      else pdberr_set(&e, PAGEDB_MISUSE, "the iterator is closed");
      ds_leave(ds);
    }
  } else {
    pagedb_reader *pr = ds_enter_reader(ds, &e);
    if (pr) {
      rc = packed_read(ds, pr, ids, n, nums, nf, cols, &e);
      ds_leave_reader(ds, pr);
    }
  }
  Py_END_ALLOW_THREADS
  PyObject *out = rc == 0 ? packed_wrap(ds, ids, n, cols, nf) : (cols_free(cols, nf), pdberr_raise(&e));
  if (cols != stack) PyMem_Free(cols);
  return out;
}

/* Dataset._read_packed(ids, fields=None) -> (ids, columns, present). */
PyObject *ds_read_packed(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"ids", "fields", NULL};
  PyObject *idso, *fields = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:_read_packed", kwlist, &idso, &fields) || ds_check_open(ds))
    return NULL;
  PyArrayObject *arr = (PyArrayObject *)ds_ids_array(idso);
  if (!arr) return NULL;
  int *nums, nf;
  PyObject *out = NULL;
  if (ds_parse_fields(ds, fields, &nums, &nf) == 0)
    out = packed_call(ds, NULL, PyArray_DATA(arr), PyArray_SIZE(arr), nums, nf);
  PyMem_Free(nums);
  Py_DECREF(arr);
  return out;
}

/*
** The next K ids of iterator IT, taken under its mutex: *IDS points into
** its order, *N is how many (0 at the end).  The position moves past them
** whatever the read of them does, as next() moves past a failing id.
*/
static int iter_take(PyIter *it, Py_ssize_t k, const int64_t **ids, int64_t *n) {
  if (k < 1) {
    PyErr_Format(PyExc_ValueError, "a batch of %zd samples: give 1 or more", k);
    return -1;
  }
  lock_nogil(&it->mu);
  *n = it->n - it->pos < k ? it->n - it->pos : k;
  *ids = it->ids + it->pos;
  return 0;
}

/* Iterator.next_packed(k) -> (ids, columns, present), or None at the end. */
PyObject *iter_next_packed(PyIter *it, PyObject *arg) {
  Py_ssize_t k = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
  const int64_t *ids;
  int64_t n;
  if ((k == -1 && PyErr_Occurred()) || ds_check_open(it->ds) || iter_take(it, k, &ids, &n) < 0) return NULL;
  PyObject *out = n == 0 ? Py_NewRef(Py_None) : packed_call(it->ds, &it->r, ids, n, it->fields, it->nfield);
  it->pos += n;
  pthread_mutex_unlock(&it->mu);
  return out;
}

/* Iterator.next_batch(k) -> a list of up to K sample dicts ([] at the end):
** next() K times in one call.  A failing id ends the list before it; if it
** is the first, the call raises and the position moves past it (as next()). */
PyObject *iter_next_batch(PyIter *it, PyObject *arg) {
  Py_ssize_t k = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
  const int64_t *ids;
  int64_t n;
  if ((k == -1 && PyErr_Occurred()) || ds_check_open(it->ds) || iter_take(it, k, &ids, &n) < 0) return NULL;
  int nf = it->nfield;
  Slot *slots = PyMem_Malloc(sizeof(Slot) * (size_t)(n * nf > 0 ? n * nf : 1));
  PyObject *list = slots ? PyList_New(0) : PyErr_NoMemory();
  PdbErr e;
  int64_t done = 0;
  int failed = 0;
  if (list && n > 0) {
    Py_BEGIN_ALLOW_THREADS
    if (ds_enter(it->ds, &e) == 0) {
      /* Looked at entered: close() closes the reader under the exclusive lock. */
      if (!it->r) {
        pdberr_set(&e, PAGEDB_MISUSE, "the iterator is closed");
        failed = 1;
      }
      while (done < n && !failed) {
        if (ds_fetch_sample(it->ds, it->r, ids[done], it->fields, nf, slots + done * nf, &e) < 0) failed = 1;
        else done++;
      }
      ds_leave(it->ds);
    } else {
      failed = 1;
    }
    Py_END_ALLOW_THREADS
  }
  if (list) it->pos += failed && done == 0 ? 1 : done;
  pthread_mutex_unlock(&it->mu);
  for (int64_t j = 0; j < done; j++) {
    if (!list) {
      for (int i = 0; i < nf; i++) slot_drop(it->ds, &slots[j * nf + i]);
      continue;
    }
    PyObject *d = ds_wrap_sample(it->ds, it->fields, nf, slots + j * nf, it->raw);
    if (d && it->with_ids) {   /* as iter_next does */
      PyObject *i = PyLong_FromLongLong(ids[j]);
      if (!i || PyDict_SetItemString(d, "id", i) < 0) Py_CLEAR(d);
      Py_XDECREF(i);
    }
    if (!d || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  PyMem_Free(slots);
  if (list && failed && done == 0) {
    Py_DECREF(list);
    return pdberr_raise(&e);
  }
  return list;
}
