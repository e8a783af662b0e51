/*
** pypagedb.h -- the internal interface between the files of the _pagedb
** CPython extension (python/): a client of src/pagedb.h only, in the
** manner of CPython's Modules/_sqlite.
**
** Objects and what they own:
**
**   Dataset   one pagedb handle; a pool of idle readers for ds[i] and
**             friends; the list of its live Writer and Iterator objects
**             (not references: they unlink themselves when freed).
**   Writer    one pagedb_writer; a strong reference to its Dataset.
**   Iterator  one pagedb_reader of its own with read-ahead along an
**             order; a strong reference to its Dataset.
**   MapView   the exporter behind a zero-copy memoryview: a pointer into
**             the data file's map, a strong reference to the Dataset and
**             one "pin" on it.  HeapView: a buffer of its own (values that
**             were decompressed or copied), no reference to anything.
**
** Invariants (why zero-copy cannot crash the interpreter):
**
**   1. Every call into pagedb that needs the handle runs with the GIL
**      released and ds->lock held shared (ds_enter/ds_leave); close() and
**      add_field() hold it exclusively.  So the handle never goes away
**      under a running call, and schema calls run alone as pagedb.h asks.
**   2. A zero-copy pointer is the map's (pagedb.h: in PAGEDB_READ_MMAP mode
**      a value stored as given lives until pagedb_close, whatever the
**      reader does next).  It is pinned (ds->pins++) while ds->lock is still
**      held shared, before anything can close the handle, and unpinned when
**      its MapView is freed.
**   3. close() with pins outstanding does everything except pagedb_close:
**      writers closed, readers closed, everything committed; the handle
**      (and its map) lives on, unusable from Python, and the last unpin
**      closes it.  pins and the deferred handle are guarded by ds->pinmu.
**   4. A value that is not the map's (a compressed value, or any value in
**      copy mode) is read straight into a HeapView's own buffer, never
**      handed out from a reader's buffer.
**   5. Readers and writers belong to one thread at a time (pagedb.h): pool
**      readers are taken and given back under ds->poolmu; a Writer or an
**      Iterator serialises its callers with its own mutex.
**   6. In a process forked from the opener the Dataset reads through the
**      inherited handle (pagedb.h allows it); its locks are made anew
**      there first (another thread may have held them at the fork), and
**      writes, SQL and commits are refused (dataset.c, "Fork").
*/
#ifndef PYPAGEDB_H
#define PYPAGEDB_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "pagedb.h"

#define PYPDB_MSG 512             /* bytes of a saved error message */
#define PYPDB_POOL 8              /* idle readers a Dataset keeps */

typedef struct PyWriter PyWriter;
typedef struct PyIter PyIter;

/* A place in one of a Dataset's lists of live objects (under its poolmu). */
typedef struct PdbLink {
  struct PdbLink *next, **pprev;  /* pprev NULL: not in a list */
} PdbLink;

typedef struct {
  PyObject_HEAD
  pagedb *db;                     /* NULL once closed (or deferred, see zombie) */
  PyObject *path;                 /* str */
  int readonly;
  int readmode;                   /* PAGEDB_READ_MMAP or _COPY (| VERIFY) */
  pthread_rwlock_t lock;          /* invariant 1 */
  pthread_mutex_t poolmu;         /* guards pool/npool and the writers/iters lists */
  pagedb_reader *pool[PYPDB_POOL];
  int npool;
  pthread_mutex_t pinmu;          /* guards pins and zombie (invariant 3) */
  int64_t pins;
  pagedb *zombie;                 /* closed from Python, awaiting its last pin */
  PdbLink *writers;               /* live Writer objects (PyWriter.link) */
  PdbLink *iters;                 /* live Iterator objects (PyIter.link) */
  pid_t pid;                      /* the process that opened it (see fork) */
  pid_t child;                    /* a forked process that adopted it (dataset.c) */
  /* The schema, cached: entries are only ever appended (fields are never
  ** removed or changed), so readers may look at ftype/fcodec of a field
  ** number they hold without a lock. */
  int nfield;
  int ftype[PAGEDB_MAX_FIELDS];
  int fcodec[PAGEDB_MAX_FIELDS];
  int fdtype[PAGEDB_MAX_FIELDS];  /* a tensor field's dtype (PAGEDB_DT_*), else 0 */
  PyObject *fields;               /* tuple of Field */
  PyObject *byname;               /* dict: name -> field number */
  PyObject *weakreflist;
} PyDataset;

struct PyWriter {
  PyObject_HEAD
  PyDataset *ds;                  /* strong reference */
  pagedb_writer *w;               /* NULL once closed */
  pthread_mutex_t mu;             /* one caller at a time */
  PdbLink link;                   /* in ds->writers */
};

struct PyIter {
  PyObject_HEAD
  PyDataset *ds;                  /* strong reference */
  pagedb_reader *r;               /* NULL once closed */
  pthread_mutex_t mu;
  int64_t *ids;                   /* the order (a copy) */
  int64_t n, pos;
  int *fields;                    /* field numbers to read */
  int nfield;
  int raw;                        /* TEXT as memoryview, not str */
  int with_ids;                   /* each sample's dict has its "id" */
  PdbLink link;                   /* in ds->iters */
};

/* The head of each of the module's static types. */
#define PYPDB_TYPE_HEAD(NAME, CTYPE, DEALLOC) \
  PyVarObject_HEAD_INIT(NULL, 0) \
  .tp_name = NAME, .tp_basicsize = sizeof(CTYPE), .tp_dealloc = (destructor)(DEALLOC)

extern PyTypeObject PyDataset_Type, PyWriter_Type, PyIter_Type, PyMapView_Type;
extern PyTypeObject *PyField_Type;
extern PyObject *PyPdb_Error;

/* A failed call's result and message, saved in the thread that made it
** (pagedb_errmsg is per thread and per call) for raising with the GIL. */
typedef struct {
  int rc;
  char msg[PYPDB_MSG];
} PdbErr;

void pdberr_set(PdbErr *e, int rc, const char *msg);
/* Raise E as the pagedb.Error subclass of its primary code; returns NULL. */
PyObject *pdberr_raise(const PdbErr *e);
/* Raise a pagedb.Error for RC with a message formatted as PyUnicode_FromFormat
** does (%S, %U, %R); returns NULL. */
PyObject *pdb_raise(int rc, const char *fmt, ...);

/* Dataset helpers for writer.c and iter.c. */
int ds_check_open(PyDataset *ds);                 /* -1 with an exception */
int ds_in_child(PyDataset *ds);                   /* a fork of the opener (adopting DS) */
int ds_enter(PyDataset *ds, PdbErr *e);           /* GIL released; 0 or -1 (E set) */
void ds_leave(PyDataset *ds);                     /* GIL released */
void ds_pin(PyDataset *ds, int64_t n);            /* under ds_enter */
void ds_unpin(PyDataset *ds, int64_t n);          /* any time, GIL held */
int ds_field_number(PyDataset *ds, PyObject *field);     /* -1 with an exception */
int ds_field_type(PyDataset *ds, int f);
/* Reload the cached schema (GIL held): after an in-place vacuum that
** changed codecs.  0, or -1 with an exception. */
int ds_schema_refresh(PyDataset *ds);
int ds_field_codec(PyDataset *ds, int f);
/* Lock MU, letting other threads run while it waits (GIL held on entry). */
void lock_nogil(pthread_mutex_t *mu);
/* ds_enter and a pool reader at once (GIL released): NULL with E set and
** the handle left; else give it back with ds_leave_reader. */
pagedb_reader *ds_enter_reader(PyDataset *ds, PdbErr *e);
void ds_leave_reader(PyDataset *ds, pagedb_reader *r);
/* A pool reader (GIL released, under ds_enter); NULL with E set. */
pagedb_reader *ds_reader_take(PyDataset *ds, PdbErr *e);
void ds_reader_give(PyDataset *ds, pagedb_reader *r);
/* Put L at the head of list *HEAD of DS / take it out (either: a no-op
** if it is not in one). */
void ds_link(PyDataset *ds, PdbLink **head, PdbLink *l);
void ds_unlink(PyDataset *ds, PdbLink *l);
/* The field numbers FIELDS names (None: all) in *NUMS (PyMem_Free it). */
int ds_parse_fields(PyDataset *ds, PyObject *fields, int **nums, int *n);
/* IDS as a C-contiguous 1-d int64 ndarray (a new reference). */
PyObject *ds_ids_array(PyObject *ids);

/*
** Reading one value (view.c).  A value is read in two steps: fetch, with
** the GIL released and the handle entered, fills a Slot; wrap, with the GIL,
** makes the Python object and takes over what the Slot holds.
*/
typedef struct {
  int type;                       /* PAGEDB_BYTES ... */
  int missing;                    /* the sample has no value for the field */
  int64_t i;
  double d;
  const void *map;                /* zero-copy: a pinned pointer into the map */
  void *own;                      /* otherwise: PyMem_Raw memory, owned */
  size_t n;
  /* A tensor: its dtype, shape, and the bytes of its elements (N less the
  ** trailer), from pagedb_tensor_shape. */
  int dtype, ndim;
  int64_t shape[PAGEDB_TENSOR_MAX_DIMS];
  size_t nbytes;
} Slot;

/* The NumPy array (bfloat16: torch tensor) of the N bytes at P in BASE, an
** object that keeps them alive (a memoryview), of dtype DTYPE and shape
** SHAPE: read-only, no copy (tensor.c).  Steals BASE. */
PyObject *tensor_wrap(PyObject *base, int dtype, int ndim, const int64_t *shape);
/* A writer's value for a tensor field: VALUE (a NumPy array or a torch
** tensor) as a C-contiguous native-order ndarray (a new reference) and its
** pagedb dtype in *DTYPE; NULL with an exception. */
PyObject *tensor_arg(PyObject *value, const char *field, int *dtype);
/* The numpy dtype object of DTYPE (a new reference; NULL for bfloat16). */
PyObject *tensor_descr(int dtype);

/* Fields NUMS of sample ID into SLOTS (GIL released, entered): 0, or -1
** with E set (every field missing: NOTFOUND) and no slot holding anything. */
int ds_fetch_sample(PyDataset *ds, pagedb_reader *r, int64_t id, const int *nums, int n, Slot *slots, PdbErr *e);
/* The dict {name: value} of SLOTS (GIL held; consumes them). */
PyObject *ds_wrap_sample(PyDataset *ds, const int *nums, int n, Slot *slots, int raw);

/* Whether reads of field F are zero-copy (mmap mode, stored as given). */
int view_is_map(PyDataset *ds, int f);
/* Fill S with field F of sample ID through reader R.  E set on failure. */
int slot_fetch(PyDataset *ds, pagedb_reader *r, int64_t id, int f, Slot *s, PdbErr *e);
/* The Python value of S (None if missing); RAW: TEXT as memoryview.
** Consumes what S owns or pins, even on failure. */
PyObject *slot_wrap(PyDataset *ds, Slot *s, int raw);
/* Release what S owns or pins without making an object (GIL held). */
void slot_drop(PyDataset *ds, Slot *s);

/* More of the Dataset type (dataset.c). */
int ds_parse_id(PyObject *o, int64_t *id);        /* -1 with an exception */
void ds_pool_close(PyDataset *ds);                /* ds->lock held exclusively */

/* The Dataset's methods on the catalog and the whole file (admin.c), added
** to the type at the module's initialisation; pagedb.status(). */
extern PyMethodDef admin_methods[];
PyObject *admin_status(PyObject *self, PyObject *noarg);
/* shellentry.c: _pagedb.shell_main(argv) -> int, the pagedb shell's main(). */
PyObject *pypdb_shell_main(PyObject *self, PyObject *arg);

/* Many samples in one call (batch.c). */
PyObject *ds_read_packed(PyDataset *ds, PyObject *args, PyObject *kw);
PyObject *iter_next_packed(PyIter *it, PyObject *k);
PyObject *iter_next_batch(PyIter *it, PyObject *k);
/* Fixed-size values straight into the caller's buffers (gather.c). */
PyObject *ds_read_into(PyDataset *ds, PyObject *args, PyObject *kw);
PyObject *iter_next_into(PyIter *it, PyObject *args);

/* Token streams (tokens.c): Dataset.tokens(), and the Tokens type added
** to module M at its initialisation (0, or -1 with an exception). */
PyObject *tokens_create(PyDataset *ds, PyObject *args, PyObject *kw);
int tokens_init_type(PyObject *m);

/* A read-only memoryview of N bytes at P in the map, pinned on DS already. */
PyObject *mapview_new(PyDataset *ds, const void *p, size_t n);
/* A read-only memoryview owning OWN (PyMem_RawMalloc'd; freed on failure). */
PyObject *heapview_new(void *own, size_t n);

#endif /* PYPAGEDB_H */
