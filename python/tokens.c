/*
** tokens.c -- pagedb.Tokens: the token stream of one epoch
** (pagedb_tokens_open: blocks of block_size + 1 tokens cut from the
** documents of a token field laid end to end), what
** pagedb.torch.TokenDataset reads.
**
** The pagedb_tokens is the handle's and holds no reader; the token map it
** reads in place is the index file's, mapped until pagedb_close (pagedb.h),
** so a Tokens keeps only a strong reference to its Dataset and
** reads each call through a pool reader, entered as every call is
** (pypagedb.h, invariant 1).  After the Dataset is closed its calls raise;
** freeing it frees memory only.
**
** read(blocks, out) is the loader's path: the blocks' tokens converted
** into the rows of OUT (int64 for torch's embeddings, or any integer
** dtype) in one call with the GIL released: one copy a block, out of the
** map or out of the buffer a spanning block was gathered in.  block(b)
** gives one block as a read-only array: a view of the map (pinned, as
** ds[i] views are) when it lies in one document stored as given and the
** Dataset reads zero-copy, else an array of its own.
*/
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pypagedb_ARRAY_API
#define NO_IMPORT_ARRAY
#include "pypagedb.h"

#include <numpy/arrayobject.h>
#include <string.h>

typedef struct {
  PyObject_HEAD
  PyDataset *ds;                  /* strong reference */
  pagedb_tokens *t;               /* owned; never NULL once made */
  int field, dtype, esize;
  int64_t bs;                     /* block size: a block has bs + 1 tokens */
  int kind;
  unsigned long long seed, epoch;
} PyTokens;

static PyTypeObject PyTokens_Type;

PyObject *tokens_create(PyDataset *ds, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"field", "block_size", "kind", "seed", "epoch", NULL};
  PyObject *fo;
  long long bs;
  const char *kind = "random";
  unsigned long long seed = 0, epoch = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OL|sKK:tokens", kwlist, &fo, &bs, &kind, &seed, &epoch) ||
      ds_check_open(ds))
    return NULL;
  int k;
  if (strcmp(kind, "random") == 0) k = PAGEDB_ORDER_RANDOM;
  else if (strcmp(kind, "quasi_random") == 0) k = PAGEDB_ORDER_QUASI_RANDOM;
  else if (strcmp(kind, "sequential") == 0) k = PAGEDB_ORDER_SEQUENTIAL;
  else {
    PyErr_Format(PyExc_ValueError, "kind '%s': use 'random', 'quasi_random' or 'sequential'", kind);
    return NULL;
  }
  int f = ds_field_number(ds, fo);
  if (f < 0) return NULL;
  PdbErr e;
  pagedb_tokens *t = NULL;
  int rc = PAGEDB_MISUSE;
  Py_BEGIN_ALLOW_THREADS
  if (ds_enter(ds, &e) == 0) {
    rc = pagedb_tokens_open(ds->db, f, k, seed, epoch, bs, &t);
    if (rc != PAGEDB_OK) pdberr_set(&e, rc, pagedb_errmsg(ds->db));
    ds_leave(ds);
  }
  Py_END_ALLOW_THREADS
  if (rc != PAGEDB_OK) return pdberr_raise(&e);
  PyTokens *o = PyObject_New(PyTokens, &PyTokens_Type);
  if (!o) {
    pagedb_tokens_close(t);
    return NULL;
  }
  o->ds = (PyDataset *)Py_NewRef(ds);
  o->t = t;
  o->field = f;
  o->dtype = ds->fdtype[f];
  o->esize = pagedb_dtype_size(o->dtype);
  o->bs = bs;
  o->kind = k;
  o->seed = seed;
  o->epoch = epoch;
  return (PyObject *)o;
}

static void tokens_dealloc(PyTokens *o) {
  pagedb_tokens_close(o->t);   /* memory only: no call into the handle */
  Py_CLEAR(o->ds);
  PyObject_Free(o);
}

static PyObject *tokens_order(PyTokens *o, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"rank", "world", NULL};
  int rank = 0, world = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|ii:order", kwlist, &rank, &world) || ds_check_open(o->ds))
    return NULL;
  if (world < 1 || world > (1 << 20) || rank < 0 || rank >= world)
    return pdb_raise(PAGEDB_MISUSE, "order: rank %d of world %d is out of range (world 1 to 2^20, rank 0 to "
                     "world - 1)", rank, world);
  int64_t n = 0;
  PdbErr e;
  /* The length of valid arguments is a pure function of T: no handle. */
  int rc = pagedb_tokens_order(o->t, rank, world, NULL, &n);
  if (rc != PAGEDB_OK) return pdb_raise(rc, "order: rank %d of world %d", rank, world);
  npy_intp dim = (npy_intp)n;
  PyObject *arr = PyArray_SimpleNew(1, &dim, NPY_INT64);
  if (!arr) return NULL;
  int64_t *a = PyArray_DATA((PyArrayObject *)arr);
  Py_BEGIN_ALLOW_THREADS
  if (ds_enter(o->ds, &e) == 0) {
    rc = pagedb_tokens_order(o->t, rank, world, a, &n);
    if (rc != PAGEDB_OK) pdberr_set(&e, rc, pagedb_errmsg(o->ds->db));
    ds_leave(o->ds);
  } else {
    rc = e.rc;
  }
  Py_END_ALLOW_THREADS
  if (rc != PAGEDB_OK) {
    Py_DECREF(arr);
    return pdberr_raise(&e);
  }
  return arr;
}

/* Token I of SRC (dtype DT) as a 64-bit integer (uint64 above 2^63 wraps,
** as NumPy's cast does). */
static inline int64_t tok_get(const void *src, int dt, size_t i) {
  switch (dt) {
  case PAGEDB_DT_INT8: return ((const int8_t *)src)[i];
  case PAGEDB_DT_UINT8: return ((const uint8_t *)src)[i];
  case PAGEDB_DT_INT16: return ((const int16_t *)src)[i];
  case PAGEDB_DT_UINT16: return ((const uint16_t *)src)[i];
  case PAGEDB_DT_INT32: return ((const int32_t *)src)[i];
  case PAGEDB_DT_UINT32: return ((const uint32_t *)src)[i];
  default: return ((const int64_t *)src)[i];
  }
}

/* The N tokens SRC (dtype DT, ES bytes each) into DST, NumPy type DNPY.
** The same width and signedness is a memcpy; uint16 and uint32 into int64
** (the usual case: token ids into an embedding's indices) are loops the
** compiler vectorises; anything else goes through int64. */
static void convert(const void *src, int dt, int es, void *dst, int dnpy, size_t n) {
  if (dnpy == NPY_INT64 && dt == PAGEDB_DT_UINT16) {
    const uint16_t *s = src;
    int64_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = s[i];
    return;
  }
  if (dnpy == NPY_INT64 && dt == PAGEDB_DT_UINT32) {
    const uint32_t *s = src;
    int64_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = s[i];
    return;
  }
  static const int same[] = {
    [PAGEDB_DT_INT8] = NPY_INT8,   [PAGEDB_DT_UINT8] = NPY_UINT8,   [PAGEDB_DT_INT16] = NPY_INT16,
    [PAGEDB_DT_UINT16] = NPY_UINT16, [PAGEDB_DT_INT32] = NPY_INT32, [PAGEDB_DT_UINT32] = NPY_UINT32,
    [PAGEDB_DT_INT64] = NPY_INT64, [PAGEDB_DT_UINT64] = NPY_UINT64,
  };
  if (same[dt] == dnpy) {
    memcpy(dst, src, n * (size_t)es);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    int64_t v = tok_get(src, dt, i);
    switch (dnpy) {
    case NPY_INT8: case NPY_UINT8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
    case NPY_INT16: case NPY_UINT16: ((uint16_t *)dst)[i] = (uint16_t)v; break;
    case NPY_INT32: case NPY_UINT32: ((uint32_t *)dst)[i] = (uint32_t)v; break;
    default: ((int64_t *)dst)[i] = v; break;
    }
  }
}

static PyObject *tokens_read(PyTokens *o, PyObject *args) {
  PyObject *bo, *out;
  if (!PyArg_ParseTuple(args, "OO:read", &bo, &out) || ds_check_open(o->ds)) return NULL;
  PyArrayObject *blocks = (PyArrayObject *)ds_ids_array(bo);
  if (!blocks) return NULL;
  npy_intp n = PyArray_SIZE(blocks);
  PyArrayObject *oa = (PyArrayObject *)out;
  int dnpy = PyArray_Check(out) ? PyArray_TYPE(oa) : -1;
  if (dnpy < 0 || !PyArray_ISCARRAY(oa) || PyArray_NDIM(oa) != 2 || PyArray_DIM(oa, 0) != n ||
      PyArray_DIM(oa, 1) != (npy_intp)(o->bs + 1) || !PyArray_ISINTEGER(oa) || PyArray_ISBYTESWAPPED(oa)) {
    Py_DECREF(blocks);
    PyErr_Format(PyExc_ValueError, "read: OUT must be a writable C-contiguous integer ndarray of shape (%zd, %lld)",
                 (Py_ssize_t)n, (long long)(o->bs + 1));
    return NULL;
  }
  const int64_t *b = PyArray_DATA(blocks);
  char *dst = PyArray_DATA(oa);
  size_t row = (size_t)(o->bs + 1), rowb = row * (size_t)PyArray_ITEMSIZE(oa);
  void *buf = PyMem_RawMalloc(row * (size_t)o->esize);
  if (!buf) {
    Py_DECREF(blocks);
    return PyErr_NoMemory();
  }
  PdbErr e;
  int rc = PAGEDB_MISUSE;
  Py_BEGIN_ALLOW_THREADS
  pagedb_reader *r = ds_enter_reader(o->ds, &e);
  if (r) {
    rc = PAGEDB_OK;
    for (npy_intp i = 0; i < n && rc == PAGEDB_OK; i++) {
      const void *p;
      rc = pagedb_tokens_block(o->t, r, b[i], buf, &p);
      if (rc == PAGEDB_OK) convert(p, o->dtype, o->esize, dst + (size_t)i * rowb, dnpy, row);
      else pdberr_set(&e, rc, pagedb_reader_errmsg(r));
    }
    ds_leave_reader(o->ds, r);
  }
  Py_END_ALLOW_THREADS
  PyMem_RawFree(buf);
  Py_DECREF(blocks);
  if (rc != PAGEDB_OK) return pdberr_raise(&e);
  return Py_NewRef(out);
}

static PyObject *tokens_block(PyTokens *o, PyObject *arg) {
  long long b = PyLong_AsLongLong(arg);
  if ((b == -1 && PyErr_Occurred()) || ds_check_open(o->ds)) return NULL;
  size_t nb = (size_t)(o->bs + 1) * (size_t)o->esize;
  void *buf = PyMem_RawMalloc(nb);
  if (!buf) return PyErr_NoMemory();
  PdbErr e;
  int rc = PAGEDB_MISUSE, pinned = 0;
  const void *p = NULL;
  Py_BEGIN_ALLOW_THREADS
  pagedb_reader *r = ds_enter_reader(o->ds, &e);
  if (r) {
    rc = pagedb_tokens_block(o->t, r, b, buf, &p);
    if (rc != PAGEDB_OK) {
      pdberr_set(&e, rc, pagedb_reader_errmsg(r));
    } else if (p != buf && view_is_map(o->ds, o->field)) {
      /* The map's: pinned while the handle is entered (pypagedb.h, 2). */
      ds_pin(o->ds, 1);
      pinned = 1;
    } else if (p != buf) {
      memcpy(buf, p, nb);   /* the reader's buffer: copied before it is given back */
    }
    ds_leave_reader(o->ds, r);
  }
  Py_END_ALLOW_THREADS
  if (rc != PAGEDB_OK) {
    PyMem_RawFree(buf);
    return pdberr_raise(&e);
  }
  PyObject *base;
  if (pinned) {
    PyMem_RawFree(buf);
    base = mapview_new(o->ds, p, nb);
  } else {
    base = heapview_new(buf, nb);
  }
  int64_t shape[1] = { o->bs + 1 };
  return base ? tensor_wrap(base, o->dtype, 1, shape) : NULL;
}

static PyObject *tokens_get_blocks(PyTokens *o, void *c) { return PyLong_FromLongLong(pagedb_tokens_blocks(o->t)); }
static PyObject *tokens_get_total(PyTokens *o, void *c) { return PyLong_FromLongLong(pagedb_tokens_total(o->t)); }
static PyObject *tokens_get_docs(PyTokens *o, void *c) { return PyLong_FromLongLong(pagedb_tokens_documents(o->t)); }
static PyObject *tokens_get_bs(PyTokens *o, void *c) { return PyLong_FromLongLong(o->bs); }
static PyObject *tokens_get_dtype(PyTokens *o, void *c) { return PyUnicode_FromString(pagedb_dtype_name(o->dtype)); }
static PyObject *tokens_get_epoch(PyTokens *o, void *c) { return PyLong_FromUnsignedLongLong(o->epoch); }
static PyObject *tokens_get_stored(PyTokens *o, void *c) { return PyBool_FromLong(pagedb_tokens_stored(o->t)); }

static PyMethodDef tokens_methods[] = {
  {"order", (PyCFunction)(void (*)(void))tokens_order, METH_VARARGS | METH_KEYWORDS,
   "order(rank=0, world=1) -> int64 ndarray: the block numbers RANK reads this epoch (blocks // world of them; "
   "a keyed permutation of the blocks for kind 'random', of groups of 64 neighbouring blocks for 'quasi_random')."},
  {"read", (PyCFunction)tokens_read, METH_VARARGS,
   "read(blocks, out) -> out: the blocks' block_size + 1 tokens into the rows of OUT, a C-contiguous integer "
   "ndarray of shape (len(blocks), block_size + 1), converted to its dtype."},
  {"block", (PyCFunction)tokens_block, METH_O,
   "block(b) -> read-only ndarray of block_size + 1 tokens: a view of the map when the block lies in one document "
   "stored as given and the dataset reads zero-copy, else a copy."},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef tokens_getset[] = {
  {"blocks", (getter)tokens_get_blocks, NULL, "blocks in the epoch: (tokens - 1) // block_size", NULL},
  {"tokens", (getter)tokens_get_total, NULL, "tokens in the epoch's stream", NULL},
  {"documents", (getter)tokens_get_docs, NULL, "documents (of at least one token) in the stream", NULL},
  {"block_size", (getter)tokens_get_bs, NULL, "tokens of a block's input (a block has one more)", NULL},
  {"dtype", (getter)tokens_get_dtype, NULL, "the field's dtype name", NULL},
  {"epoch", (getter)tokens_get_epoch, NULL, "the epoch the block order is for", NULL},
  {"stored", (getter)tokens_get_stored, NULL, "True if the token map is the index file's (an O(1) open), False if "
   "built in memory at the open (an index written by an older pagedb, or none)", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PyTokens_Type = {
  PYPDB_TYPE_HEAD("_pagedb.Tokens", PyTokens, tokens_dealloc),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A token stream (Dataset.tokens()): blocks of block_size + 1 tokens of the documents in id order, "
             "read in one epoch's order.",
  .tp_methods = tokens_methods,
  .tp_getset = tokens_getset,
};

int tokens_init_type(PyObject *m) {
  if (PyType_Ready(&PyTokens_Type) < 0) return -1;
  Py_INCREF(&PyTokens_Type);
  if (PyModule_AddObject(m, "Tokens", (PyObject *)&PyTokens_Type) < 0) {
    Py_DECREF(&PyTokens_Type);
    return -1;
  }
  return 0;
}
