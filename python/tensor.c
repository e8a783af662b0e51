/*
** tensor.c -- tensor fields in Python: values read as NumPy arrays over the
** bytes pagedb gave (no copy: the array's base is the memoryview of view.c,
** which keeps the map, or its own buffer, alive), and values written from
** NumPy arrays and torch tensors.
**
** NumPy has no bfloat16: such a value is read as a torch tensor, made by
** pagedb's Python side (pagedb._bfloat16) from a uint16 view of the same
** bytes; without torch that raises ImportError saying so.  A torch tensor
** given to a writer is turned into a NumPy array the same way round
** (pagedb._from_torch): a CPU copy only when it is not one already.
*/
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pypagedb_ARRAY_API
#define NO_IMPORT_ARRAY
#include "pypagedb.h"

#include <numpy/arrayobject.h>

/* NumPy's type number for each pagedb dtype (bfloat16: its bits, uint16). */
static const int kNpy[] = {
  [PAGEDB_DT_BOOL] = NPY_BOOL,       [PAGEDB_DT_INT8] = NPY_INT8,     [PAGEDB_DT_UINT8] = NPY_UINT8,
  [PAGEDB_DT_INT16] = NPY_INT16,     [PAGEDB_DT_UINT16] = NPY_UINT16, [PAGEDB_DT_INT32] = NPY_INT32,
  [PAGEDB_DT_UINT32] = NPY_UINT32,   [PAGEDB_DT_INT64] = NPY_INT64,   [PAGEDB_DT_UINT64] = NPY_UINT64,
  [PAGEDB_DT_FLOAT16] = NPY_FLOAT16, [PAGEDB_DT_BFLOAT16] = NPY_UINT16, [PAGEDB_DT_FLOAT32] = NPY_FLOAT32,
  [PAGEDB_DT_FLOAT64] = NPY_FLOAT64,
};

PyObject *tensor_descr(int dtype) {
  if (dtype == PAGEDB_DT_BFLOAT16 || !pagedb_dtype_size(dtype)) return NULL;
  return (PyObject *)PyArray_DescrFromType(kNpy[dtype]);
}

/* A function of pagedb's Python package (pagedb/__init__.py), looked up
** once. */
static PyObject *py_helper(const char *name, PyObject **cache) {
  if (*cache) return *cache;
  PyObject *mod = PyImport_ImportModule("pagedb");
  if (!mod) return NULL;
  *cache = PyObject_GetAttrString(mod, name);
  Py_DECREF(mod);
  return *cache;
}

PyObject *tensor_wrap(PyObject *base, int dtype, int ndim, const int64_t *shape) {
  Py_buffer b;
  if (!base || PyObject_GetBuffer(base, &b, PyBUF_SIMPLE) < 0) {
    Py_XDECREF(base);
    return NULL;
  }
  void *p = b.buf;
  PyBuffer_Release(&b);   /* BASE keeps the bytes; the array keeps BASE */
  npy_intp dims[PAGEDB_TENSOR_MAX_DIMS];
  for (int i = 0; i < ndim; i++) dims[i] = (npy_intp)shape[i];
  PyArray_Descr *d = PyArray_DescrFromType(kNpy[dtype]);   /* steals nothing yet */
  /* Read-only (no NPY_ARRAY_WRITEABLE): the map is PROT_READ. */
  PyObject *arr = d ? PyArray_NewFromDescr(&PyArray_Type, d, ndim, dims, NULL, p, NPY_ARRAY_C_CONTIGUOUS, NULL) : NULL;
  if (!arr) {
    Py_DECREF(base);
    return NULL;
  }
  if (PyArray_SetBaseObject((PyArrayObject *)arr, base) < 0) {   /* steals BASE, even on failure */
    Py_DECREF(arr);
    return NULL;
  }
  PyArray_UpdateFlags((PyArrayObject *)arr, NPY_ARRAY_ALIGNED);
  if (dtype != PAGEDB_DT_BFLOAT16) return arr;
  static PyObject *bf16;
  PyObject *f = py_helper("_bfloat16", &bf16);
  PyObject *t = f ? PyObject_CallOneArg(f, arr) : NULL;
  Py_DECREF(arr);
  return t;
}

PyObject *tensor_arg(PyObject *value, const char *field, int *dtype) {
  PyObject *src = NULL;
  *dtype = 0;
  if (PyArray_Check(value)) {
    src = Py_NewRef(value);
  } else {
    /* A torch tensor (duck-typed: pagedb never imports torch itself). */
    PyObject *mod = PyObject_GetAttrString((PyObject *)Py_TYPE(value), "__module__");
    int is_torch = mod && PyUnicode_Check(mod) && PyUnicode_CompareWithASCIIString(mod, "torch") == 0;
    Py_XDECREF(mod);
    PyErr_Clear();
    if (!is_torch) {
      PyErr_Format(PyExc_TypeError, "field '%s' is a tensor: give a numpy.ndarray or a torch.Tensor, not %.100s",
                   field, Py_TYPE(value)->tp_name);
      return NULL;
    }
    static PyObject *from_torch;
    PyObject *f = py_helper("_from_torch", &from_torch);
    PyObject *pair = f ? PyObject_CallOneArg(f, value) : NULL;   /* (ndarray, is_bfloat16) */
    if (!pair) return NULL;
    if (PyObject_IsTrue(PyTuple_GET_ITEM(pair, 1))) *dtype = PAGEDB_DT_BFLOAT16;
    src = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
    Py_DECREF(pair);
  }
  PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)src);
  if (!*dtype) {
    for (int t = 1; t < (int)(sizeof kNpy / sizeof kNpy[0]); t++)
      if (t != PAGEDB_DT_BFLOAT16 && PyArray_EquivTypenums(d->type_num, kNpy[t])) *dtype = t;
    if (!*dtype) {
      PyErr_Format(PyExc_TypeError, "field '%s' is a tensor: NumPy dtype %R has no pagedb dtype", field, (PyObject *)d);
      Py_DECREF(src);
      return NULL;
    }
  }
  /* C order, native byte order, aligned: a copy only when it is not so. */
  Py_INCREF(d);
  PyArray_Descr *nd = PyArray_DescrNewByteorder(d, NPY_NATIVE);
  Py_DECREF(d);
  PyObject *arr = nd ? PyArray_FromAny(src, nd, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL) : NULL;
  Py_DECREF(src);
  return arr;
}
