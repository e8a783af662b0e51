/*
** gather.c -- a batch of fixed-size values straight into buffers the
** caller made: what pagedb.torch's loader fills a batch's torch tensors
** with, so that a batch costs one copy of each value and no Python object
** per sample.
**
**   Dataset.read_into(ids, fields, outs)   the values of IDS
**   Iterator.next_into(k, outs)            the next K ids of the order
**
** OUTS holds one writable C-contiguous buffer per field (a NumPy array, or
** torch's tensor.numpy(); any object with the buffer protocol), in the order
** of the fields.  A field may be a tensor field whose declared shape is
** fixed -- its buffer holds the K values back to back, K x the declaration's
** bytes, i.e. an array (K, *shape) -- or an INT or REAL field (an int64 or
** float64 array of K).  bfloat16 takes a uint16 or int16 array (its bits).
**
** Invariants:
**   - The buffers' sizes and, for NumPy arrays, dtypes are checked against
**     the declarations before anything is read: a wrong one is refused with
**     MismatchError naming the field, what it needs and what was given;
**     nothing is written into a buffer that does not fit.
**   - The reads run with the GIL released and the handle entered
**     (pypagedb.h, invariant 1) while the buffers are held (PyObject_GetBuffer:
**     a NumPy array cannot be resized or freed meanwhile).  A value's bytes
**     are copied once, from pagedb_read_batch's pointer (the map, in
**     zero-copy mode) into its place; nothing of the reader's is referred to
**     after the call.
**   - Every value must be present and of its declared size: a sample
**     without a value (or not there at all) fails with NotFoundError naming
**     the id, the entry and the field; a stored length that does not match
**     the declaration with CorruptError.  The buffers are then partly written.
*/
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pypagedb_ARRAY_API
#define NO_IMPORT_ARRAY
#include "pypagedb.h"

#include <numpy/arrayobject.h>
#include <string.h>

#define CHUNK 256                 /* ids per pagedb_read_batch call */
#define PREFETCH 4                /* values ahead of the copy whose first line is fetched */

/* One field's destination. */
typedef struct {
  int f, type;
  size_t vsize;                   /* bytes of one value */
  Py_buffer buf;
  int held;                       /* buf was acquired */
} Dest;

static void dests_release(Dest *d, int n) {
  for (int i = 0; i < n; i++)
    if (d[i].held) PyBuffer_Release(&d[i].buf);
}

/* The name of field F (borrowed; GIL held). */
static PyObject *field_name(PyDataset *ds, int f) {
  return PyStructSequence_GET_ITEM(PyTuple_GET_ITEM(ds->fields, f), 0);
}

/* The bytes of one value of field F (GIL held), from the cached schema: a
** fixed tensor's, or 8 for INT and REAL; 0 with MismatchError for any
** other field. */
static size_t value_size(PyDataset *ds, int f) {
  int type = ds_field_type(ds, f);
  PyObject *name = field_name(ds, f);
  if (type == PAGEDB_INT || type == PAGEDB_REAL) return 8;
  if (type != PAGEDB_TENSOR) {
    pdb_raise(PAGEDB_MISMATCH, "read_into: field %R is not a tensor, INT or REAL field", name);
    return 0;
  }
  PyObject *shape = PyStructSequence_GET_ITEM(PyTuple_GET_ITEM(ds->fields, f), 5);
  size_t n = (size_t)pagedb_dtype_size(ds->fdtype[f]);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
    PyObject *d = PyTuple_GET_ITEM(shape, i);
    if (d == Py_None) {
      pdb_raise(PAGEDB_MISMATCH, "read_into: tensor field %R has a variable dimension (%zd): read it with "
                "read_packed", name, i);
      return 0;
    }
    n *= (size_t)PyLong_AsSize_t(d);   /* 1 .. 2^31-1, and the product below 2^37 (tensor.c) */
  }
  return n;
}

/* Acquire OUT as field F's buffer for K values (GIL held); -1 with an
** exception. */
static int dest_init(PyDataset *ds, Dest *d, int f, PyObject *out, int64_t k) {
  int dtype = ds->fdtype[f];
  PyObject *name = field_name(ds, f);
  d->f = f;
  d->type = ds_field_type(ds, f);
  d->vsize = value_size(ds, f);
  if (d->vsize == 0) return -1;
  if (PyArray_Check(out)) {
    /* The dtype must be the field's (bfloat16: 2-byte integers, its bits). */
    PyArray_Descr *have = PyArray_DESCR((PyArrayObject *)out), *want = NULL;
    int ok;
    if (d->type == PAGEDB_INT) want = PyArray_DescrFromType(NPY_INT64);
    else if (d->type == PAGEDB_REAL) want = PyArray_DescrFromType(NPY_FLOAT64);
    else want = (PyArray_Descr *)tensor_descr(dtype);
    if (want) ok = PyArray_EquivTypes(have, want);
    else ok = PyArray_EquivTypenums(have->type_num, NPY_UINT16) || PyArray_EquivTypenums(have->type_num, NPY_INT16);
    Py_XDECREF(want);
    if (!ok) {
      PyObject *s = PyObject_Str((PyObject *)have);
      pdb_raise(PAGEDB_MISMATCH, "read_into: field %R holds %s; the array given for it is %S", name,
                d->type == PAGEDB_INT ? "int64" : d->type == PAGEDB_REAL ? "float64" : pagedb_dtype_name(dtype),
                s ? s : Py_None);
      Py_XDECREF(s);
      return -1;
    }
  }
  if (PyObject_GetBuffer(out, &d->buf, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    pdb_raise(PAGEDB_MISUSE, "read_into: the buffer for field %R is not writable and C-contiguous (%S)", name,
              v ? v : Py_None);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    return -1;
  }
  d->held = 1;
  if ((size_t)d->buf.len != (size_t)k * d->vsize) {
    pdb_raise(PAGEDB_MISMATCH, "read_into: field %R needs %lld bytes for %lld values of %zu bytes; the buffer "
              "has %zd", name, (long long)((size_t)k * d->vsize), (long long)k, d->vsize, d->buf.len);
    return -1;
  }
  return 0;
}

/* OUTS as NF destinations for fields NUMS and K values (GIL held).  0, or -1
** with an exception (and D released). */
static int dests_init(PyDataset *ds, Dest *d, const int *nums, int nf, PyObject *outs, int64_t k) {
  PyObject *seq = PySequence_Fast(outs, "read_into: give the output buffers as a list or tuple");
  if (!seq) return -1;
  int rc = 0;
  if (PySequence_Fast_GET_SIZE(seq) != nf) {
    pdb_raise(PAGEDB_MISUSE, "read_into: %zd buffers for %d fields", PySequence_Fast_GET_SIZE(seq), nf);
    rc = -1;
  }
  for (int i = 0; i < nf && rc == 0; i++) rc = dest_init(ds, &d[i], nums[i], PySequence_Fast_GET_ITEM(seq, i), k);
  Py_DECREF(seq);
  if (rc < 0) dests_release(d, nf);
  return rc;
}

/* A value that is not there: E says which (GIL released). */
static int gather_missing(PyDataset *ds, const int64_t *ids, int64_t k, int f, int rc, pagedb_reader *r,
                          PdbErr *e) {
  pdberr_set(e, rc, NULL);
  if (rc == PAGEDB_NOTFOUND)
    snprintf(e->msg, sizeof e->msg, "read_into: sample %lld (entry %lld of the batch) has no value for field "
             "'%s' (or is not a committed sample)", (long long)ids[k], (long long)k, pagedb_field_name(ds->db, f));
  else
    snprintf(e->msg, sizeof e->msg, "read_into: sample %lld (entry %lld of the batch), field '%s': %s",
             (long long)ids[k], (long long)k, pagedb_field_name(ds->db, f), pagedb_reader_errmsg(r));
  return -1;
}

/* Fill D for the N ids IDS through R (GIL released, entered). */
static int gather(PyDataset *ds, pagedb_reader *r, const int64_t *ids, int64_t n, Dest *d, int nf, PdbErr *e) {
  const void *ptrs[CHUNK];
  size_t sizes[CHUNK];
  for (int i = 0; i < nf; i++) {
    unsigned char *out = d[i].buf.buf;
    size_t vs = d[i].vsize;
    if (d[i].type == PAGEDB_INT || d[i].type == PAGEDB_REAL) {
      for (int64_t k = 0; k < n; k++) {
        int rc = d[i].type == PAGEDB_INT ? pagedb_read_int(r, ids[k], d[i].f, (int64_t *)(void *)(out + 8 * k))
                                         : pagedb_read_real(r, ids[k], d[i].f, (double *)(void *)(out + 8 * k));
        if (rc != PAGEDB_OK) return gather_missing(ds, ids, k, d[i].f, rc, r, e);
      }
      continue;
    }
    for (int64_t at = 0; at < n; at += CHUNK) {
      int c = (int)(n - at < CHUNK ? n - at : CHUNK);
      int rc = pagedb_read_batch(r, ids + at, c, d[i].f, ptrs, sizes);
      if (rc != PAGEDB_OK) {
        /* Which entry failed: pagedb_read names it (and tells a missing
        ** value from an error). */
        for (int j = 0; j < c; j++) {
          const void *p;
          size_t len;
          rc = pagedb_read(r, ids[at + j], d[i].f, &p, &len);
          if (rc != PAGEDB_OK) return gather_missing(ds, ids, at + j, d[i].f, rc, r, e);
        }
        pdberr_set(e, PAGEDB_ERROR, pagedb_reader_errmsg(r));
        return -1;
      }
      for (int j = 0; j < c; j++) {
        /* The values lie at random: start fetching a later one's first
        ** lines while this one is copied. */
        if (j + PREFETCH < c) __builtin_prefetch(ptrs[j + PREFETCH]);
        if (sizes[j] != vs) {
          pdberr_set(e, PAGEDB_CORRUPT, NULL);
          snprintf(e->msg, sizeof e->msg, "read_into: sample %lld's value of field '%s' has %zu bytes; its "
                   "declaration needs %zu", (long long)ids[at + j], pagedb_field_name(ds->db, d[i].f), sizes[j], vs);
          return -1;
        }
        memcpy(out + (size_t)(at + j) * vs, ptrs[j], vs);
      }
    }
  }
  return 0;
}

/* Gather N ids into OUTS for fields NUMS through R (the iterator's; NULL: a
** pool reader).  Returns N as an int, or NULL with an exception. */
static PyObject *gather_call(PyDataset *ds, pagedb_reader **rp, const int64_t *ids, int64_t n, int64_t k,
                             const int *nums, int nf, PyObject *outs) {
  if (nf < 1) return pdb_raise(PAGEDB_MISUSE, "read_into: no field to read");
  Dest stack[8], *d = nf <= 8 ? stack : PyMem_Calloc((size_t)nf, sizeof(Dest));
  if (!d) return PyErr_NoMemory();
  memset(d, 0, sizeof(Dest) * (size_t)(nf <= 8 ? 8 : nf));
  if (dests_init(ds, d, nums, nf, outs, k) < 0) {
    if (d != stack) PyMem_Free(d);
    return NULL;
  }
  PdbErr e;
  int rc = -1;
  Py_BEGIN_ALLOW_THREADS
  if (rp) {
    if (ds_enter(ds, &e) == 0) {
      /* Looked at entered: close() closes the reader under the exclusive lock. */
      if (!*rp) pdberr_set(&e, PAGEDB_MISUSE, "the iterator is closed");
      else rc = gather(ds, *rp, ids, n, d, nf, &e);
      ds_leave(ds);
    }
  } else {
    pagedb_reader *r = ds_enter_reader(ds, &e);
    if (r) {
      rc = gather(ds, r, ids, n, d, nf, &e);
      ds_leave_reader(ds, r);
    }
  }
  Py_END_ALLOW_THREADS
  dests_release(d, nf);
  if (d != stack) PyMem_Free(d);
  return rc == 0 ? PyLong_FromLongLong(n) : pdberr_raise(&e);
}

/* Dataset.read_into(ids, fields, outs) -> the number of values per field. */
PyObject *ds_read_into(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"ids", "fields", "outs", NULL};
  PyObject *idso, *fields, *outs;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:read_into", kwlist, &idso, &fields, &outs) || ds_check_open(ds))
    return NULL;
  if (fields == Py_None) return pdb_raise(PAGEDB_MISUSE, "read_into: name the fields to read");
  PyArrayObject *arr = (PyArrayObject *)ds_ids_array(idso);
  if (!arr) return NULL;
  int64_t n = PyArray_SIZE(arr);
  if (n > PAGEDB_MAX_BATCH * (int64_t)64) {
    Py_DECREF(arr);
    return pdb_raise(PAGEDB_MISUSE, "read_into: %lld ids in one call (at most %lld)", (long long)n,
                     (long long)PAGEDB_MAX_BATCH * 64);
  }
  int *nums, nf;
  PyObject *out = NULL;
  if (ds_parse_fields(ds, fields, &nums, &nf) == 0) {
    out = gather_call(ds, NULL, PyArray_DATA(arr), n, n, nums, nf, outs);
    PyMem_Free(nums);
  }
  Py_DECREF(arr);
  return out;
}

/* Iterator.next_into(k, outs) -> how many values each buffer got (0 at the
** end); the buffers hold K values each, the last batch fewer. */
PyObject *iter_next_into(PyIter *it, PyObject *args) {
  Py_ssize_t k;
  PyObject *outs;
  if (!PyArg_ParseTuple(args, "nO:next_into", &k, &outs) || ds_check_open(it->ds)) return NULL;
  if (k < 1 || k > PAGEDB_MAX_BATCH * (Py_ssize_t)64)
    return pdb_raise(PAGEDB_MISUSE, "next_into: a batch of %zd samples: give 1 to %lld", k,
                     (long long)PAGEDB_MAX_BATCH * 64);
  lock_nogil(&it->mu);
  int64_t n = it->n - it->pos < k ? it->n - it->pos : k;
  PyObject *out = n == 0 ? PyLong_FromLong(0)
                         : gather_call(it->ds, &it->r, it->ids + it->pos, n, k, it->fields, it->nfield, outs);
  /* Unlike next_packed, a failed call leaves the position where it was:
  ** the caller may read the same ids another way (pagedb.torch falls back
  ** to next_packed for a batch with a missing value). */
  if (out) it->pos += n;
  pthread_mutex_unlock(&it->mu);
  return out;
}
