/*
** view.c -- values read from a dataset, and the buffers behind them.
**
** A BYTES value comes back as a read-only memoryview over one of two
** exporters:
**
**   MapView   a pointer into the data file's map (PAGEDB_READ_MMAP, a field
**             stored as given): nothing is copied.  It holds a strong
**             reference to its Dataset and one pin on it, so the handle --
**             and with it the map -- lives until the view and everything
**             made from it (np.frombuffer, slices, torch.frombuffer) is gone,
**             even after ds.close() (invariants 2 and 3 of pypagedb.h).
**   HeapView  a buffer of its own, PyMem_RawMalloc'd, that pagedb filled
**             with pagedb_read_into (a compressed value is decompressed
**             straight into it; in copy mode it is pread straight into it).
**             It refers to nothing: the reader's own buffers, which the next
**             call reuses, are never handed out (invariant 4).
**
** Both are one type (View), told apart by whether it holds a Dataset.
** The map is read-only (PROT_READ): both views are read-only, and asking
** for a writable buffer raises BufferError instead of faulting.
*/
#include "pypagedb.h"

#include <string.h>

/* One exporter type for both: DS set (a MapView: P is the map's, pinned)
** or not (a HeapView: P is its own buffer, freed with it). */
typedef struct {
  PyObject_HEAD
  PyDataset *ds;                  /* MapView: strong reference, one pin */
  void *p;                        /* HeapView: PyMem_Raw memory it owns */
  Py_ssize_t n;
} View;

static int view_getbuffer(PyObject *self, Py_buffer *view, int flags) {
  static char empty[1];
  View *v = (View *)self;
  return PyBuffer_FillInfo(view, self, v->p ? v->p : empty, v->n, 1, flags);
}

static void view_dealloc(PyObject *self) {
  View *v = (View *)self;
  PyDataset *ds = v->ds;
  if (!ds) PyMem_RawFree(v->p);
  Py_TYPE(self)->tp_free(self);
  if (ds) {
    ds_unpin(ds, 1);
    Py_DECREF(ds);
  }
}

static PyBufferProcs view_as_buffer = {view_getbuffer, NULL};

PyTypeObject PyMapView_Type = {
  PYPDB_TYPE_HEAD("_pagedb.MapView", View, view_dealloc),
  .tp_as_buffer = &view_as_buffer,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "The bytes of a value in a dataset's map (keeping the dataset's handle open), or of a buffer of "
            "its own.",
};

/* A memoryview over a new View of P, N; DS NULL: P is owned.  On failure
** what the view would have taken is released (unpinned, or freed). */
static PyObject *view_new(PyDataset *ds, const void *p, size_t n) {
  View *v = PyObject_New(View, &PyMapView_Type);
  if (!v) {
    if (ds) ds_unpin(ds, 1);
    else PyMem_RawFree((void *)p);
    return NULL;
  }
  v->ds = ds ? (PyDataset *)Py_NewRef(ds) : NULL;
  v->p = (void *)p;
  v->n = (Py_ssize_t)n;
  PyObject *mv = PyMemoryView_FromObject((PyObject *)v);
  Py_DECREF(v);   /* the memoryview holds it now, or it is freed (unpinned) */
  return mv;
}

PyObject *mapview_new(PyDataset *ds, const void *p, size_t n) {
  return view_new(ds, p, n);
}

PyObject *heapview_new(void *own, size_t n) {
  return view_new(NULL, own, n);
}

int view_is_map(PyDataset *ds, int f) {
  return (ds->readmode & ~PAGEDB_READ_VERIFY) == PAGEDB_READ_MMAP &&
         PAGEDB_CODEC_KIND(ds_field_codec(ds, f)) == PAGEDB_CODEC_NONE;
}

static int fail(PdbErr *e, pagedb_reader *r, int rc) {
  pdberr_set(e, rc, pagedb_reader_errmsg(r));
  return -1;
}

int slot_fetch(PyDataset *ds, pagedb_reader *r, int64_t id, int f, Slot *s, PdbErr *e) {
  memset(s, 0, sizeof *s);
  s->type = ds_field_type(ds, f);
  int rc;
  if (s->type == PAGEDB_INT) {
    rc = pagedb_read_int(r, id, f, &s->i);
  } else if (s->type == PAGEDB_REAL) {
    rc = pagedb_read_real(r, id, f, &s->d);
  } else if (view_is_map(ds, f)) {
    rc = pagedb_read(r, id, f, &s->map, &s->n);
    if (rc == PAGEDB_OK) ds_pin(ds, 1);
    else s->map = NULL;
  } else {
    /* Learn the size, then read (or decompress) straight into our own
    ** buffer: one pass over the bytes, and nothing of the reader's kept. */
    size_t n = 0;
    rc = pagedb_read_into(r, id, f, NULL, 0, &n);
    if (rc == PAGEDB_TOOBIG && n > 0) {
      if (n > (size_t)PY_SSIZE_T_MAX || !(s->own = PyMem_RawMalloc(n))) {
        pdberr_set(e, PAGEDB_NOMEM, "out of memory for a value of a sample");
        snprintf(e->msg, sizeof e->msg, "out of memory for the %zu bytes of sample %lld, field %d", n,
                 (long long)id, f);
        return -1;
      }
      rc = pagedb_read_into(r, id, f, s->own, n, &s->n);
      if (rc != PAGEDB_OK) {
        PyMem_RawFree(s->own);
        s->own = NULL;
        s->n = 0;
      }
    }
  }
  if (rc == PAGEDB_NOTFOUND) {
    s->missing = 1;
    pdberr_set(e, rc, pagedb_reader_errmsg(r));
    return 0;
  }
  if (rc == PAGEDB_OK && s->type == PAGEDB_TENSOR) {
    /* Its shape, from the same bytes (a trailer is checked here). */
    s->dtype = ds->fdtype[f];
    rc = pagedb_tensor_shape(ds->db, f, s->map ? s->map : s->own, s->n, &s->nbytes, &s->ndim, s->shape);
    if (rc != PAGEDB_OK) {
      pdberr_set(e, rc, pagedb_errmsg(ds->db));
      slot_drop(ds, s);
      return -1;
    }
  }
  return rc == PAGEDB_OK ? 0 : fail(e, r, rc);
}

void slot_drop(PyDataset *ds, Slot *s) {
  if (s->map) ds_unpin(ds, 1);
  PyMem_RawFree(s->own);
  s->map = NULL;
  s->own = NULL;
}

PyObject *slot_wrap(PyDataset *ds, Slot *s, int raw) {
  PyObject *o;
  if (s->missing) {
    o = Py_NewRef(Py_None);
  } else if (s->type == PAGEDB_INT) {
    o = PyLong_FromLongLong(s->i);
  } else if (s->type == PAGEDB_REAL) {
    o = PyFloat_FromDouble(s->d);
  } else if (s->type == PAGEDB_TEXT && !raw) {
    const char *p = s->map ? s->map : s->own;
    o = PyUnicode_DecodeUTF8(p ? p : "", (Py_ssize_t)s->n, "strict");
    slot_drop(ds, s);
  } else if (s->type == PAGEDB_TENSOR) {
    /* An array over the elements (the trailer left out), no copy. */
    PyObject *base = s->map ? mapview_new(ds, s->map, s->nbytes) : heapview_new(s->own, s->nbytes);
    s->map = NULL;
    s->own = NULL;
    o = tensor_wrap(base, s->dtype, s->ndim, s->shape);
  } else if (s->map) {
    o = mapview_new(ds, s->map, s->n);   /* takes the pin */
    s->map = NULL;
  } else {
    o = heapview_new(s->own, s->n);      /* takes the buffer */
    s->own = NULL;
  }
  slot_drop(ds, s);
  return o;
}
