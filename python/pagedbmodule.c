/*
** pagedbmodule.c -- the _pagedb extension module: its exceptions, its
** constants, the Field record, and the module's initialisation.  The
** objects live in dataset.c, view.c, writer.c and iter.c (pypagedb.h says
** what each owns and the invariants that keep zero-copy views safe).
**
** Errors.  Every failing pagedb call raises pagedb.Error or the subclass of
** its primary code (CorruptError for PAGEDB_CORRUPT_HEADER, ...), with the
** message pagedb_errmsg gave in the failing thread and the attributes
** code (the full, extended code), codename ("PAGEDB_CORRUPT_HEADER") and
** message.  NotFoundError is also a KeyError, MismatchError a TypeError,
** RangeError an IndexError and NoMemError a MemoryError, so that Python
** code that knows only the built-in exceptions catches them.
*/
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pypagedb_ARRAY_API
#include "pypagedb.h"

#include <numpy/arrayobject.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

PyObject *PyPdb_Error;
PyTypeObject *PyField_Type;

/* The subclass of each primary code, by code (NULL: Error itself). */
static PyObject *code_class[PAGEDB_RANGE + 1];

static const struct {
  int code;
  const char *name;
  PyObject *also;                 /* a built-in base besides Error, or NULL */
} classes[] = {
  {PAGEDB_NOMEM, "NoMemError", NULL},
  {PAGEDB_IOERR, "IoError", NULL},
  {PAGEDB_CORRUPT, "CorruptError", NULL},
  {PAGEDB_NOTFOUND, "NotFoundError", NULL},
  {PAGEDB_FULL, "FullError", NULL},
  {PAGEDB_CONSTRAINT, "ConstraintError", NULL},
  {PAGEDB_MISUSE, "MisuseError", NULL},
  {PAGEDB_TOOBIG, "TooBigError", NULL},
  {PAGEDB_READONLY, "ReadOnlyError", NULL},
  {PAGEDB_BUSY, "BusyError", NULL},
  {PAGEDB_CANTOPEN, "CantOpenError", NULL},
  {PAGEDB_NOTADB, "NotADatabaseError", NULL},
  {PAGEDB_MISMATCH, "MismatchError", NULL},
  {PAGEDB_RANGE, "RangeError", NULL},
};

static PyObject *builtin_base(int code) {
  switch (code) {
    case PAGEDB_NOMEM: return PyExc_MemoryError;
    case PAGEDB_NOTFOUND: return PyExc_KeyError;
    case PAGEDB_MISMATCH: return PyExc_TypeError;
    case PAGEDB_RANGE: return PyExc_IndexError;
    default: return NULL;
  }
}

void pdberr_set(PdbErr *e, int rc, const char *msg) {
  e->rc = rc;
  snprintf(e->msg, sizeof e->msg, "%s", msg ? msg : pagedb_errstr(rc));
}

PyObject *pdberr_raise(const PdbErr *e) {
  int prim = e->rc & 0xff;
  PyObject *cls = prim >= 0 && prim <= PAGEDB_RANGE && code_class[prim] ? code_class[prim] : PyPdb_Error;
  PyObject *exc = PyObject_CallFunction(cls, "s", e->msg);
  if (!exc) return NULL;
  PyObject *code = PyLong_FromLong(e->rc);
  PyObject *name = PyUnicode_FromString(pagedb_errname(e->rc));
  PyObject *msg = PyUnicode_FromString(e->msg);
  if (code && name && msg && PyObject_SetAttrString(exc, "code", code) == 0 &&
      PyObject_SetAttrString(exc, "codename", name) == 0 && PyObject_SetAttrString(exc, "message", msg) == 0)
    PyErr_SetObject(cls, exc);
  Py_XDECREF(code);
  Py_XDECREF(name);
  Py_XDECREF(msg);
  Py_DECREF(exc);
  return NULL;
}

PyObject *pdb_raise(int rc, const char *fmt, ...) {
  PdbErr e;
  va_list ap;
  va_start(ap, fmt);
  PyObject *s = PyUnicode_FromFormatV(fmt, ap);   /* %S, %U, %R as Python's */
  va_end(ap);
  if (!s) return NULL;
  const char *u = PyUnicode_AsUTF8(s);
  pdberr_set(&e, rc, u ? u : "(unprintable message)");
  Py_DECREF(s);
  PyErr_Clear();
  return pdberr_raise(&e);
}

/* ------------------------------------------------------------------ */

static PyStructSequence_Field field_fields[] = {
  {"name", "the field's name"},
  {"type", "'bytes', 'text', 'int', 'real' or 'tensor'"},
  {"codec", "'none', 'lz4', 'lz4hc', 'zstd' or 'zstd-dict'"},
  {"level", "the codec's level (0: its default)"},
  {"dtype", "a tensor field's element type ('float32'...), else None"},
  {"shape", "a tensor field's declared shape, None for a variable dimension: (None, 80); else None"},
  {"align", "the alignment of its stored values in bytes (G, pagedb_field_align)"},
  {NULL, NULL},
};
/* dtype, shape and align are attributes only: a Field unpacks as the 4-tuple it was. */
static PyStructSequence_Desc field_desc = {"pagedb.Field", "A field of a dataset's schema.", field_fields, 4};

static PyObject *m_version(PyObject *self, PyObject *noarg) {
  return PyUnicode_FromString(pagedb_libversion());
}

static PyObject *m_errname(PyObject *self, PyObject *arg) {
  long rc = PyLong_AsLong(arg);
  if (rc == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(pagedb_errname((int)rc));
}

static PyObject *m_errstr(PyObject *self, PyObject *arg) {
  long rc = PyLong_AsLong(arg);
  if (rc == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(pagedb_errstr((int)rc));
}

/* set_busy_timeout(ms): pagedb_config(PAGEDB_CONFIG_BUSY_TIMEOUT, ms). */
static PyObject *m_busy_timeout(PyObject *self, PyObject *arg) {
  long long ms = PyLong_AsLongLong(arg);
  if (ms == -1 && PyErr_Occurred()) return NULL;
  if (pagedb_config(PAGEDB_CONFIG_BUSY_TIMEOUT, (int64_t)ms) != PAGEDB_OK) {
    PyErr_Format(PyExc_ValueError, "busy_timeout must be 0..86400000 ms (or -1: the environment's), not %lld", ms);
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
  {"libversion", m_version, METH_NOARGS, "The version of the pagedb library linked."},
  {"errname", m_errname, METH_O, "errname(code) -> 'PAGEDB_...': the name of a result code."},
  {"errstr", m_errstr, METH_O, "errstr(code) -> str: a short description of a result code."},
  {"set_busy_timeout", m_busy_timeout, METH_O,
   "set_busy_timeout(ms): how long a read-write open waits for another handle's write lock, process-wide"
   " (PAGEDB_CONFIG_BUSY_TIMEOUT; -1: the environment's PAGEDB_BUSY_TIMEOUT, else 0)."},
  {"status", admin_status, METH_NOARGS,
   "status() -> {name: (current, highwater)}: the library's memory counters (pagedb_status)."},
  {"shell_main", pypdb_shell_main, METH_O,
   "shell_main(argv) -> int: run the pagedb shell as its main() with ARGV (argv[0] first); once a process."},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
  PyModuleDef_HEAD_INIT, "_pagedb",
  "The C half of the pagedb package: datasets, writers, zero-copy views (see pagedb).", -1, module_methods,
  NULL, NULL, NULL, NULL,
};

static int add_type(PyObject *m, PyTypeObject *t, const char *name) {
  if (PyType_Ready(t) < 0) return -1;
  Py_INCREF(t);
  if (PyModule_AddObject(m, name, (PyObject *)t) < 0) {
    Py_DECREF(t);
    return -1;
  }
  return 0;
}

/* Add DEFS to the methods of static type T (after PyType_Ready). */
static int add_methods(PyTypeObject *t, PyMethodDef *defs) {
  for (PyMethodDef *d = defs; d->ml_name; d++) {
    PyObject *f = PyDescr_NewMethod(t, d);
    if (!f || PyDict_SetItemString(t->tp_dict, d->ml_name, f) < 0) {
      Py_XDECREF(f);
      return -1;
    }
    Py_DECREF(f);
  }
  PyType_Modified(t);
  return 0;
}

static int add_error_classes(PyObject *m) {
  PyObject *str = PyObject_GetAttrString(PyExc_BaseException, "__str__");
  if (!str) return -1;
  PyObject *dict = Py_BuildValue("{s:O,s:i,s:s,s:s}", "__str__", str, "code", PAGEDB_ERROR, "codename",
                                 "PAGEDB_ERROR", "message", "");
  Py_DECREF(str);
  if (!dict) return -1;
  PyPdb_Error = PyErr_NewExceptionWithDoc("pagedb.Error",
                                          "A pagedb call failed: .code, .codename and .message say how.", NULL, dict);
  if (!PyPdb_Error || PyModule_AddObject(m, "Error", Py_NewRef(PyPdb_Error)) < 0) goto fail;
  for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
    char qual[64];
    snprintf(qual, sizeof qual, "pagedb.%s", classes[i].name);
    PyObject *also = builtin_base(classes[i].code);
    PyObject *bases = also ? PyTuple_Pack(2, PyPdb_Error, also) : PyTuple_Pack(1, PyPdb_Error);
    if (!bases) goto fail;
    PyObject *c = PyErr_NewException(qual, bases, dict);
    Py_DECREF(bases);
    if (!c) goto fail;
    code_class[classes[i].code] = c;
    /* Raised from Python (pagedb/__init__.py) too: the class says its code. */
    PyObject *code = PyLong_FromLong(classes[i].code);
    PyObject *cname = PyUnicode_FromString(pagedb_errname(classes[i].code));
    int bad = !code || !cname || PyObject_SetAttrString(c, "code", code) < 0 ||
              PyObject_SetAttrString(c, "codename", cname) < 0;
    Py_XDECREF(code);
    Py_XDECREF(cname);
    if (bad) goto fail;
    if (PyModule_AddObject(m, classes[i].name, Py_NewRef(c)) < 0) goto fail;
  }
  Py_DECREF(dict);
  return 0;
fail:
  Py_DECREF(dict);
  return -1;
}

#define ADD_INT(m, name, v) if (PyModule_AddIntConstant(m, name, v) < 0) goto fail

PyMODINIT_FUNC PyInit__pagedb(void) {
  import_array();
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (add_error_classes(m) < 0) goto fail;
  PyField_Type = PyStructSequence_NewType(&field_desc);
  if (!PyField_Type || PyModule_AddObject(m, "Field", Py_NewRef((PyObject *)PyField_Type)) < 0) goto fail;
  if (add_type(m, &PyDataset_Type, "Dataset") < 0 || add_methods(&PyDataset_Type, admin_methods) < 0 || add_type(m, &PyWriter_Type, "Writer") < 0 ||
      add_type(m, &PyIter_Type, "Iterator") < 0 || PyType_Ready(&PyMapView_Type) < 0 || tokens_init_type(m) < 0)
    goto fail;
  ADD_INT(m, "BYTES", PAGEDB_BYTES);
  ADD_INT(m, "TEXT", PAGEDB_TEXT);
  ADD_INT(m, "INT", PAGEDB_INT);
  ADD_INT(m, "REAL", PAGEDB_REAL);
  ADD_INT(m, "CODEC_NONE", PAGEDB_CODEC_NONE);
  ADD_INT(m, "CODEC_LZ4", PAGEDB_CODEC_LZ4);
  ADD_INT(m, "CODEC_LZ4HC", PAGEDB_CODEC_LZ4HC);
  ADD_INT(m, "CODEC_ZSTD", PAGEDB_CODEC_ZSTD);
  ADD_INT(m, "CODEC_ZSTD_DICT", PAGEDB_CODEC_ZSTD_DICT);
  ADD_INT(m, "MAX_BATCH", PAGEDB_MAX_BATCH);
  ADD_INT(m, "AUTO_ID", PAGEDB_AUTO_ID);
  /* The result codes, by their names without the prefix. */
  static const int codes[] = {
    PAGEDB_OK, PAGEDB_ERROR, PAGEDB_NOMEM, PAGEDB_IOERR, PAGEDB_CORRUPT, PAGEDB_NOTFOUND, PAGEDB_FULL,
    PAGEDB_CONSTRAINT, PAGEDB_MISUSE, PAGEDB_TOOBIG, PAGEDB_READONLY, PAGEDB_BUSY, PAGEDB_CANTOPEN,
    PAGEDB_NOTADB, PAGEDB_MISMATCH, PAGEDB_RANGE, PAGEDB_IOERR_READ, PAGEDB_IOERR_SHORT_READ,
    PAGEDB_IOERR_WRITE, PAGEDB_IOERR_SYNC, PAGEDB_IOERR_TRUNCATE, PAGEDB_IOERR_FSTAT, PAGEDB_IOERR_LOCK,
    PAGEDB_IOERR_MMAP, PAGEDB_IOERR_CATALOG, PAGEDB_CORRUPT_HEADER, PAGEDB_CORRUPT_TRUNCATED,
    PAGEDB_CORRUPT_CATALOG, PAGEDB_NOTADB_VERSION, PAGEDB_NOTADB_MISMATCH, PAGEDB_BUSY_LOCKED,
    PAGEDB_CANTOPEN_NOENT, PAGEDB_CANTOPEN_DIRECT, PAGEDB_CANTOPEN_URING,
  };
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    const char *name = pagedb_errname(codes[i]);
    if (strncmp(name, "PAGEDB_", 7) == 0) name += 7;
    ADD_INT(m, name, codes[i]);
  }
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
