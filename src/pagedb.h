/*
** pagedb.h -- the public interface of pagedb.
**
** pagedb stores a dataset of variable-length samples (images, audio, text,
** tensors) in one data file of fixed-size pages, beside a SQLite database,
** the catalog, that records the schema, the pages and every sample.  Many
** threads write samples in parallel; any committed sample is read back by
** id in O(1), either in place through a memory map or by copying it into a
** buffer.
**
** This header is the specification.  Each declaration is preceded by its
** contract: what it does, who owns what, how long a returned pointer lives,
** which threads may call it, and every result code it can return.
**
** Threads.  A pagedb handle may be used from any number of threads at once
** for pagedb_writer_open(), pagedb_reader_open(), pagedb_commit(),
** pagedb_count(), pagedb_stats(), pagedb_field_stats() and
** pagedb_errmsg().  A pagedb_writer and a pagedb_reader belong to one
** thread at a time: give each thread its own.  Schema calls
** (pagedb_set_page_size, pagedb_field_add) and pagedb_close() must not run
** concurrently with anything else on the same handle.
**
** Processes.  A handle, and the readers opened on it, may be inherited
** through fork(): every child can read through them (lookups use the
** shared map of NAME-index and of the data file, and run no SQL), as a
** data-loading program's workers do.  A child must not write through an
** inherited handle: pagedb_writer_open, pagedb_commit, pagedb_delete,
** pagedb_field_add, pagedb_set_page_size, pagedb_sql_update,
** pagedb_vacuum and pagedb_attach return PAGEDB_MISUSE in any process but
** the opener's, and pagedb_close in a child commits nothing (it only
** frees the child's copy; the parent's handle is unaffected).  Nor may a
** child run pagedb_sql (or pagedb_sql_values) on an inherited handle (SQLite connections must
** not cross fork()): open a handle of its own.  Read-ahead set up before
** the fork (pagedb_reader_prefetch) is dropped in a child, whose reads then
** go the usual way.  On the "io_uring" VFS a child must not make batched
** reads (pagedb_read_batch in copy mode) through an inherited handle: its
** submission ring is the parent's; zero-copy readers are safe there.  Any number of processes
** that open the same dataset share one copy of its index and data in the
** page cache.
**
** Tiers.  The core API comes first; the VFS interface (for new storage
** backends) follows it.
*/
#ifndef PAGEDB_H
#define PAGEDB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
# define PAGEDB_API __attribute__((visibility("default")))
#else
# define PAGEDB_API
#endif

#define PAGEDB_VERSION        "0.1.0"
#define PAGEDB_VERSION_NUMBER 1000     /* X*1000000 + Y*1000 + Z */

/* The version of the library actually linked, as PAGEDB_VERSION. */
PAGEDB_API const char *pagedb_libversion(void);

/*
** Result codes.  Every function that can fail returns one of these.  The
** low 8 bits are the primary code; an extended code adds detail in the bits
** above (PAGEDB_IOERR_SYNC & 0xff == PAGEDB_IOERR).  Compare against the
** primary code with (rc & 0xff).
*/
#define PAGEDB_OK           0   /* Success */
#define PAGEDB_ERROR        1   /* Generic error (see pagedb_errmsg) */
#define PAGEDB_NOMEM        2   /* A memory allocation failed */
#define PAGEDB_IOERR        3   /* The operating system reported an I/O error */
#define PAGEDB_CORRUPT      4   /* The data file or catalog is damaged */
#define PAGEDB_NOTFOUND     5   /* No such sample, or no value for that field */
#define PAGEDB_FULL         6   /* Disk full, or an id or page number space ran out */
#define PAGEDB_CONSTRAINT   7   /* A sample id is already used */
#define PAGEDB_MISUSE       8   /* The API was called incorrectly */
#define PAGEDB_TOOBIG       9   /* A value or buffer size is out of bounds */
#define PAGEDB_READONLY    10   /* Attempt to write through a read-only handle */
#define PAGEDB_BUSY        11   /* Another process writes this dataset */
#define PAGEDB_CANTOPEN    12   /* A file could not be opened or created */
#define PAGEDB_NOTADB      13   /* The file is not a pagedb dataset (or not this one's) */
#define PAGEDB_MISMATCH    14   /* The field has another type than the call needs */
#define PAGEDB_RANGE       15   /* A field number is out of range */

#define PAGEDB_IOERR_READ         (PAGEDB_IOERR | (1<<8))  /* read() failed */
#define PAGEDB_IOERR_SHORT_READ   (PAGEDB_IOERR | (2<<8))  /* read past end of file */
#define PAGEDB_IOERR_WRITE        (PAGEDB_IOERR | (3<<8))  /* write() failed */
#define PAGEDB_IOERR_SYNC         (PAGEDB_IOERR | (4<<8))  /* fsync() failed; handle poisoned */
#define PAGEDB_IOERR_TRUNCATE     (PAGEDB_IOERR | (5<<8))  /* ftruncate() failed */
#define PAGEDB_IOERR_FSTAT        (PAGEDB_IOERR | (6<<8))  /* fstat() failed */
#define PAGEDB_IOERR_LOCK         (PAGEDB_IOERR | (7<<8))  /* file locking failed */
#define PAGEDB_IOERR_MMAP         (PAGEDB_IOERR | (8<<8))  /* mmap() failed */
#define PAGEDB_IOERR_CATALOG      (PAGEDB_IOERR | (9<<8))  /* SQLite reported an I/O error */
#define PAGEDB_IOERR_REMOTE       (PAGEDB_IOERR | (10<<8)) /* a remote server failed a read */
#define PAGEDB_IOERR_CHANGED      (PAGEDB_IOERR | (11<<8)) /* a remote object changed since open */
#define PAGEDB_CORRUPT_HEADER     (PAGEDB_CORRUPT | (1<<8))  /* data file header is damaged */
#define PAGEDB_CORRUPT_TRUNCATED  (PAGEDB_CORRUPT | (2<<8))  /* data file shorter than committed */
#define PAGEDB_CORRUPT_CATALOG    (PAGEDB_CORRUPT | (3<<8))  /* catalog rows are inconsistent */
#define PAGEDB_CORRUPT_INDEX      (PAGEDB_CORRUPT | (4<<8))  /* the index file NAME-index is damaged or stale */
#define PAGEDB_NOTADB_VERSION     (PAGEDB_NOTADB | (1<<8))   /* format version from the future */
#define PAGEDB_NOTADB_MISMATCH    (PAGEDB_NOTADB | (2<<8))   /* catalog of another data file */
#define PAGEDB_BUSY_LOCKED        (PAGEDB_BUSY | (1<<8))     /* a writer holds the write lock */
#define PAGEDB_CANTOPEN_NOENT     (PAGEDB_CANTOPEN | (1<<8)) /* the file does not exist */
#define PAGEDB_CANTOPEN_DIRECT    (PAGEDB_CANTOPEN | (2<<8)) /* the file system refuses O_DIRECT */
#define PAGEDB_CANTOPEN_URING     (PAGEDB_CANTOPEN | (3<<8)) /* the kernel refuses io_uring */

/*
** The English name of a result code ("PAGEDB_CORRUPT") and a short
** description of it ("database disk image is malformed"-style).  Both return
** static strings that are never freed; an unknown code yields
** "PAGEDB_UNKNOWN" / "unknown error".  Extended codes have their own names.
*/
PAGEDB_API const char *pagedb_errname(int rc);
PAGEDB_API const char *pagedb_errstr(int rc);

/* ------------------------------------------------------------------ */
/* Opening and closing                                                 */
/* ------------------------------------------------------------------ */

typedef struct pagedb pagedb;
typedef struct pagedb_writer pagedb_writer;   /* one per writing thread */
typedef struct pagedb_reader pagedb_reader;   /* one per reading thread */

#define PAGEDB_OPEN_READONLY   0x01
#define PAGEDB_OPEN_READWRITE  0x02
#define PAGEDB_OPEN_CREATE     0x04   /* with READWRITE: create if missing */
#define PAGEDB_OPEN_CHECK      0x08   /* with READONLY: open a damaged dataset for
                                      ** pagedb_check (see below) */

/*
** Open the dataset whose data file is PATH.  Its catalog is the SQLite
** database PATH-catalog beside it ("cats.pagedb" has "cats.pagedb-catalog").
**
** FLAGS is PAGEDB_OPEN_READONLY, or PAGEDB_OPEN_READWRITE optionally or-ed
** with PAGEDB_OPEN_CREATE, or PAGEDB_OPEN_READONLY | PAGEDB_OPEN_CHECK.
** VFS names a registered VFS (see pagedb_vfs_find);
** NULL means the default, which is "posix" unless the environment variable
** PAGEDB_VFS names another.  The catalog's file I/O goes through the same
** VFS (SQLite keeps its own locks and shared memory), except on a VFS that
** bypasses the page cache (PAGEDB_IOCAP_DIRECT: "direct"), whose alignment
** SQLite's writes cannot meet: the catalog then uses "posix".
**
** A PATH that is a URL, "SCHEME://..." (a letter, then letters, digits,
** '+', '-' or '.'), is opened by the registered VFS named SCHEME: "http",
** "https" and "s3" are the built-in remote VFSes (see REMOTE DATASETS
** below), and an embedder may register others.  PAGEDB_VFS does not apply
** to a URL; a VFS named must be SCHEME itself (or NULL), else
** PAGEDB_MISUSE (as is naming a remote VFS for a path that is not a URL).  No VFS named SCHEME: PAGEDB_CANTOPEN (for http, https and
** s3: a build without libcurl).  A remote dataset is read-only: a
** READWRITE open of one fails with PAGEDB_READONLY before any request is
** made.  pagedb_vfs_name() says which VFS a handle uses.
**
** A CREATE open of a dataset whose creation never finished (a crash or a
** full disk stopped it after the data file's header, before the catalog's
** first transaction committed) finishes it: the dataset is then new and
** empty, as if created now.
**
** A read-write open takes the dataset's write lock: a second read-write open
** of the same dataset, from this or another process, fails with
** PAGEDB_BUSY_LOCKED until the first is closed -- at once, or, with a busy
** timeout set (PAGEDB_CONFIG_BUSY_TIMEOUT, else the environment variable
** PAGEDB_BUSY_TIMEOUT, in milliseconds; default 0), after waiting up to
** that long for the first to close, as SQLite's sqlite3_busy_timeout: the
** open takes the lock as soon as it is free (it polls, napping 1 ms
** doubling to 50 ms), and PAGEDB_BUSY_LOCKED says the time ran out.  This
** is how processes that commit parts into one dataset take turns (open,
** pagedb_parts_commit, close).  A bad PAGEDB_BUSY_TIMEOUT fails a
** read-write open with PAGEDB_CANTOPEN.  Read-only opens take no lock
** and see the samples committed when they opened.  A read-write open
** recovers from a crash: pages written after the last commit are discarded
** and their space is reused.
**
** PAGEDB_OPEN_CHECK opens, read-only, a dataset whose catalog rows or data
** file are damaged, so that pagedb_check can report everything that is
** wrong.  The header, the catalog's schema, its meta and fields are
** validated as always; but a sample whose row is invalid, lies on a page
** that starts no run, outside the bytes its run uses or past the end of the
** file, or overlaps another sample is left out of the index (reads of it
** return PAGEDB_NOTFOUND) instead of failing the open, and a page table,
** meta or file length that disagree with each other do not fail it either.
** The open then costs a second copy of the index while it runs.
**
** *DB is always set: to a new handle, or to NULL when no handle could be
** allocated.  On an error other than PAGEDB_NOMEM, *DB is a handle whose only
** uses are pagedb_errmsg() and pagedb_close(): the caller must close it.
**
** Results: PAGEDB_OK; PAGEDB_CANTOPEN_NOENT (no such dataset and no CREATE);
** PAGEDB_CANTOPEN (the file cannot be opened or created); PAGEDB_NOTADB
** (not a pagedb data file, or a catalog that is not SQLite);
** PAGEDB_NOTADB_VERSION (written by a newer pagedb); PAGEDB_NOTADB_MISMATCH
** (the catalog belongs to another data file); PAGEDB_CORRUPT* (damaged
** header, a data file shorter than its committed pages, catalog rows that
** point outside the committed pages or overlap); PAGEDB_BUSY_LOCKED;
** PAGEDB_IOERR*; PAGEDB_NOMEM; PAGEDB_MISUSE (bad flags, unknown VFS, a
** VFS named that is not a URL's scheme); PAGEDB_READONLY (a READWRITE open
** of a remote dataset).
*/
PAGEDB_API int pagedb_open(const char *path, pagedb **db, int flags, const char *vfs);

/*
** Close a dataset.  Open writers are flushed and closed, open readers are
** closed (their pointers become invalid), everything committable is
** committed (as pagedb_commit), and all resources are released.  Calling it
** with NULL is a harmless no-op.  The handle is freed even when an error is
** returned; the result says whether the final commit succeeded.
**
** A read-write handle's close then merges the catalog's WAL into
** PATH-catalog (a TRUNCATE checkpoint: copied, synced, the WAL emptied),
** so that PATH and PATH-catalog alone are the whole dataset, ready to copy
** or upload (doc/remote.md).  A merge that cannot finish (a reader in
** another process still on an older commit; an I/O error) does not fail
** the close: every commit stays durable in PATH-catalog-wal, which a later
** writer's close merges, and a PATH-catalog-wal left non-empty shows it.
*/
PAGEDB_API int pagedb_close(pagedb *db);

/*
** The message of the most recent failing call on DB or on one of its
** writers or readers, made by the calling thread, in English: what failed
** and where (file, page, sample, field); "not an error" if there was none.
** The string is owned by pagedb and is valid until the calling thread's next
** call on DB or on one of its writers or readers.  For a NULL DB it
** describes the failure to allocate a handle.
*/
PAGEDB_API const char *pagedb_errmsg(pagedb *db);

/* ------------------------------------------------------------------ */
/* Schema                                                              */
/* ------------------------------------------------------------------ */

/* Field types. */
#define PAGEDB_BYTES   1   /* bytes stored in pages */
#define PAGEDB_TEXT    2   /* bytes stored in pages, by convention UTF-8 */
#define PAGEDB_INT     3   /* 64-bit signed integer, a catalog column */
#define PAGEDB_REAL    4   /* IEEE double, a catalog column */
#define PAGEDB_TENSOR  5   /* an array of one dtype and a shape, stored in pages
                           ** (pagedb_field_add_tensor) */

/*
** Codecs for BYTES and TEXT fields, with a level in the bits above the low
** eight: PAGEDB_CODEC_LEVEL(PAGEDB_CODEC_LZ4HC, 12), or with a negative
** level PAGEDB_CODEC_LEVEL(PAGEDB_CODEC_ZSTD, -5) (the codec is then a
** negative int, never -1).  A writer compresses each value in its own
** thread; a value that does not shrink is stored as given (and read without
** any decompression).  Level 0 means the codec's default.
**
** PAGEDB_CODEC_ZSTD_DICT compresses each value alone with a dictionary of
** its field, trained by ZDICT from the field's first values (they are
** stored as given while it learns) or given by pagedb_field_dict_set; the
** dictionaries live in the catalog and every value names the one it was
** compressed with (pagedb_field_dict_train, doc/format.md).
*/
#define PAGEDB_CODEC_NONE   0   /* stored as given */
#define PAGEDB_CODEC_LZ4    1   /* liblz4; level: acceleration 1..65537 (default
                                ** 1; higher is faster and compresses less) */
#define PAGEDB_CODEC_LZ4HC  2   /* liblz4 high compression; level 1..12 (default 9) */
#define PAGEDB_CODEC_ZSTD   3   /* libzstd; level ZSTD_minCLevel()..22, not 0
                                ** (default 3; negative levels are faster) */
#define PAGEDB_CODEC_ZSTD_DICT 4 /* libzstd with the field's dictionary; levels
                                ** as PAGEDB_CODEC_ZSTD */
#define PAGEDB_CODEC_LEVEL(codec, level)  ((codec) | (int)((unsigned)(level) << 8))
#define PAGEDB_CODEC_KIND(codec)          ((codec) & 0xff)
#define PAGEDB_CODEC_LEVEL_OF(codec)      ((codec) >> 8)   /* arithmetic shift */

#define PAGEDB_MIN_PAGE_SIZE   (64u << 10)   /* 64 KiB */
#define PAGEDB_MAX_PAGE_SIZE   (1u << 30)    /* 1 GiB */
#define PAGEDB_DEFAULT_PAGE_SIZE (8u << 20)  /* 8 MiB */
#define PAGEDB_MAX_FIELDS      256           /* fields per dataset */
#define PAGEDB_MAX_NAME        64            /* bytes in a field name */
#define PAGEDB_MAX_SAMPLE      ((uint64_t)1 << 36)  /* 64 GiB: bytes of one sample */
#define PAGEDB_MAX_ALIGN       64            /* the largest alignment of a field's values */
#define PAGEDB_ALIGN_DEFAULT   0             /* pagedb_field_add_aligned: the type's default */

/*
** Set the page size of a new dataset: a power of two from
** PAGEDB_MIN_PAGE_SIZE to PAGEDB_MAX_PAGE_SIZE.  Only before the first field
** is added (PAGEDB_MISUSE after); PAGEDB_RANGE for a size that is not a
** power of two in range; PAGEDB_READONLY on a read-only handle.
*/
PAGEDB_API int pagedb_set_page_size(pagedb *db, size_t bytes);

/* The dataset's page size in bytes. */
PAGEDB_API size_t pagedb_page_size(pagedb *db);

/*
** Add a field to the schema of a dataset.  Fields are numbered 0, 1, 2...
** in the order they are added.  NAME is 1 to PAGEDB_MAX_NAME bytes of
** letters, digits, '_', '.' and '-', not starting with a digit, and unique
** regardless of case; "id", "page" and "off" are reserved (they name
** catalog columns).  TYPE is one of PAGEDB_BYTES,
** PAGEDB_TEXT, PAGEDB_INT, PAGEDB_REAL; CODEC is PAGEDB_CODEC_NONE, or for a
** BYTES or TEXT field a codec above with its level.  The field is durable
** when this returns PAGEDB_OK.
**
** A dataset that already has committed samples takes new fields too, when
** no writer and no reader is open on DB and every sample written is
** committed (call pagedb_commit first).  The samples already committed have
** no value for the new field: reading it gives PAGEDB_NOTFOUND, as for a
** field left out, and their other fields read as before; samples written
** afterwards may give it.  Nothing in the data file changes; the in-memory
** index is rebuilt for the wider schema (memory: twice the index while it
** runs, time: one pass over the samples).
**
** Results: PAGEDB_OK; PAGEDB_MISUSE (bad name, type, codec or level, a
** writer or a reader is open, written samples are not committed yet);
** PAGEDB_CONSTRAINT (name taken); PAGEDB_TOOBIG (more than
** PAGEDB_MAX_FIELDS fields); PAGEDB_READONLY; PAGEDB_NOMEM; PAGEDB_IOERR*.
*/
PAGEDB_API int pagedb_field_add(pagedb *db, const char *name, int type, int codec);

/*
** As pagedb_field_add, with ALIGN, the alignment the field's stored values
** need: every value of a BYTES or TEXT field starts at a file offset that
** is a multiple of ALIGN, so that a zero-copy pointer to it (the data file
** is mapped at a page boundary) is aligned to ALIGN too, and NumPy or
** PyTorch can view its bytes as float32, float64, int64... in place.  ALIGN
** is a power of two from 1 to PAGEDB_MAX_ALIGN (64), or PAGEDB_ALIGN_DEFAULT
** (0): 8 for BYTES (any element type up to 8 bytes), 1 for TEXT (strings
** are read as bytes).  pagedb_field_add(db, name, type, codec) is
** pagedb_field_add_aligned(db, name, type, codec, PAGEDB_ALIGN_DEFAULT).
** An INT or REAL field lives in the catalog, not in pages: ALIGN must be 0
** or 1.
**
** Layout.  A sample's values lie in schema order, each at the next
** multiple of G, the largest alignment of the dataset's BYTES and TEXT
** fields, with zeros before it: a value costs at most G-1 bytes of padding
** (G/2 - 1/2 on average: 3.5 bytes at 8; doc/benchmarks.md gives the cost
** on W-small).  Every field is therefore aligned to G, at least what it
** asked for (pagedb_field_align says G).  Once a page is committed, G
** cannot grow: a field added then with a larger ALIGN is refused
** (PAGEDB_MISUSE), since the committed records' values would move.  A
** dataset made before alignments existed has G = 1.
**
** What is guaranteed, for a value stored as given (no codec, or one its
** codec did not shrink): the pointer pagedb_read and pagedb_read_batch give
** is aligned to G, in PAGEDB_READ_MMAP mode (an address in the map) and
** in PAGEDB_READ_COPY mode (the reader's buffers keep the file offset's
** alignment).  A value stored compressed is decompressed into the reader's
** buffer at a multiple of PAGEDB_MAX_ALIGN, in either mode.  Its stored
** bytes are aligned in the file too, but they are lz4 bytes, not the
** value: no zero-copy view of a compressed value exists.  The alignments
** are recorded in the catalog (doc/format.md), kept by pagedb_vacuum, and
** checked by pagedb_check; pagedb_attach needs the same G on both sides.
**
** Results: those of pagedb_field_add; PAGEDB_RANGE (ALIGN is not 0 or a
** power of two up to PAGEDB_MAX_ALIGN, or is more than 1 for an INT or
** REAL field); PAGEDB_MISUSE (ALIGN would raise G of a dataset that has
** committed pages).
*/
PAGEDB_API int pagedb_field_add_aligned(pagedb *db, const char *name, int type, int codec, int align);

/* The number of field NAME (exact match), or -1 if there is none. */
PAGEDB_API int pagedb_field_index(pagedb *db, const char *name);

/* The number of fields; the name, type and codec of field I (NULL / -1 if
** I is out of range).  Names are owned by DB and live as long as it does. */
PAGEDB_API int pagedb_field_count(pagedb *db);
PAGEDB_API const char *pagedb_field_name(pagedb *db, int i);
PAGEDB_API int pagedb_field_type(pagedb *db, int i);
PAGEDB_API int pagedb_field_codec(pagedb *db, int i);

/*
** A codec's name, as the catalog, the shell and Python spell it: "none",
** "lz4:1", "lz4hc:9", "zstd:3", "zstd:-5", "zstd-dict:19".
** pagedb_codec_name writes the name of CODEC into OUT (N bytes, 32 are
** always enough), "unknown(...)" for one it does not know.
** pagedb_codec_parse sets *CODEC from NAME ("zstd" alone is the default
** level; a level must be one the codec has) and returns PAGEDB_OK, or
** PAGEDB_MISUSE for a name it does not know.  Both are thread safe.
*/
PAGEDB_API void pagedb_codec_name(int codec, char *out, size_t n);
PAGEDB_API int pagedb_codec_parse(const char *name, int *codec);

/*
** Dictionaries of a field with codec PAGEDB_CODEC_ZSTD_DICT (issue 28).
**
** Such a field learns its dictionary from its first values: it keeps a
** copy of SAMPLES values (at most 128 KiB of each; default 2000), stores
** them as given meanwhile, and the writer whose value completes the set
** trains a dictionary of at most SIZE bytes (default 256 KiB) with ZDICT
** in its own thread; later values are compressed with it.  (A vacuum that
** names the field's codec compresses the first ones too: pagedb_vacuum.)
** The dictionary is stored in the catalog by the commit that stores the
** first values using it.  Values name the dictionary they were made with,
** so a field may change dictionaries and every value stays readable.
**
** pagedb_field_dict_train(db, field, samples, size): learn a new
** dictionary from the next SAMPLES values (0: the default) of at most SIZE
** bytes (0: the default; else 1 KiB to 64 MiB); the current one stays in
** use until it is made.  pagedb_field_dict_set(db, field, dict, n): make
** the N bytes at DICT, a zstd dictionary (zstd --train, ZDICT; copied),
** the field's dictionary from the next value on.  Both: PAGEDB_OK;
** PAGEDB_RANGE (no such field); PAGEDB_MISUSE (not a zstd-dict field; a
** bad size; DICT is no zstd dictionary); PAGEDB_READONLY; PAGEDB_NOMEM.
** Thread safe with writers.
**
** pagedb_field_dicts(db, field, ids, sizes, cap): the number of
** dictionaries FIELD has (stored, and made since the last commit), newest
** first, the first CAP of them in IDS and SIZES; -1 for a bad argument.
** pagedb_field_dict_get(db, field, id, &bytes, &n): the bytes of one
** (owned by DB, valid until pagedb_close or an in-place pagedb_vacuum):
** PAGEDB_OK, PAGEDB_RANGE, PAGEDB_NOTFOUND (no such id), PAGEDB_MISUSE.
*/
PAGEDB_API int pagedb_field_dict_train(pagedb *db, int field, unsigned samples, size_t size);
PAGEDB_API int pagedb_field_dict_set(pagedb *db, int field, const void *dict, size_t n);
PAGEDB_API int pagedb_field_dicts(pagedb *db, int field, uint32_t *ids, size_t *sizes, int cap);
PAGEDB_API int pagedb_field_dict_get(pagedb *db, int field, uint32_t id, const void **bytes, size_t *n);
/* The alignment of field I's stored values in bytes: G, the largest any
** BYTES or TEXT field asked for (pagedb_field_add_aligned), for a BYTES or
** TEXT field; 1 for an INT or REAL field, and for every field of a dataset
** made before alignments existed; -1 if I is out of range. */
PAGEDB_API int pagedb_field_align(pagedb *db, int i);

/*
** Tensor fields.  A tensor field holds, per sample, an array of elements of
** one DTYPE in C order (row-major), little-endian, with a shape of 1 to
** PAGEDB_TENSOR_MAX_DIMS dimensions each declared fixed (1 .. 2^31-1) or
** variable (PAGEDB_DIM_VAR).  It is stored in pages like a BYTES field, so
** everything said of BYTES fields (codecs, alignment, the map lifetime of
** pointers, pagedb_read of its raw bytes) holds for it; what a tensor field
** adds is the dtype and the shape, checked when written and given back when
** read.  Where shapes live (doc/format.md, "Tensor fields"): the dtype and
** the fixed dimensions only in the declaration; with one variable
** dimension, nothing per value (it is the value's length over the rest);
** with two or more, a trailer of one 8-byte word per variable dimension
** after the elements, part of the raw value that pagedb_read gives.
*/
#define PAGEDB_DT_BOOL      1   /* 1 byte: 0 false, 1 true */
#define PAGEDB_DT_INT8      2
#define PAGEDB_DT_UINT8     3
#define PAGEDB_DT_INT16     4
#define PAGEDB_DT_UINT16    5
#define PAGEDB_DT_INT32     6
#define PAGEDB_DT_UINT32    7
#define PAGEDB_DT_INT64     8
#define PAGEDB_DT_UINT64    9
#define PAGEDB_DT_FLOAT16  10   /* IEEE binary16 */
#define PAGEDB_DT_BFLOAT16 11   /* the upper half of an IEEE binary32 */
#define PAGEDB_DT_FLOAT32  12
#define PAGEDB_DT_FLOAT64  13
#define PAGEDB_TENSOR_MAX_DIMS 8
#define PAGEDB_DIM_VAR     (-1)   /* a variable dimension in a declaration */

/* The name of DTYPE ("float32"...; NULL for an unknown one), its size in
** bytes (0 for an unknown one), and the dtype named NAME (0 if none). */
PAGEDB_API const char *pagedb_dtype_name(int dtype);
PAGEDB_API int pagedb_dtype_size(int dtype);
PAGEDB_API int pagedb_dtype_from_name(const char *name);

/*
** Add a tensor field NAME of element type DTYPE and NDIM dimensions DIMS
** (each 1 .. 2^31-1, or PAGEDB_DIM_VAR), with CODEC and ALIGN as for
** pagedb_field_add_aligned.  ALIGN must be at least the dtype's size; 0
** (the default) means 8, every dtype's size at most.  The product of the
** fixed dimensions times the element size is at most PAGEDB_MAX_SAMPLE.
** The first tensor field makes the dataset format 3 (doc/format.md): a
** pagedb without tensor fields refuses to open it.
**
** Results: those of pagedb_field_add_aligned; PAGEDB_RANGE (an unknown
** dtype, NDIM out of 1 .. PAGEDB_TENSOR_MAX_DIMS, a dimension out of range,
** ALIGN below the element size).
*/
PAGEDB_API int pagedb_field_add_tensor(pagedb *db, const char *name, int dtype, int ndim, const int64_t *dims,
                                       int codec, int align);

/* The declaration of tensor field I: *DTYPE, *NDIM and DIMS[0 .. *NDIM-1]
** (PAGEDB_DIM_VAR for a variable one; DIMS has room for
** PAGEDB_TENSOR_MAX_DIMS).  PAGEDB_OK, PAGEDB_RANGE (no field I) or
** PAGEDB_MISMATCH (not a tensor field). */
PAGEDB_API int pagedb_field_tensor(pagedb *db, int i, int *dtype, int *ndim, int64_t *dims);

/* The number of committed samples (that a reader of DB can see). */
PAGEDB_API int64_t pagedb_count(pagedb *db);

/* The number of committed pages. */
PAGEDB_API int64_t pagedb_page_count(pagedb *db);

/*
** How the open of DB found its sample index (doc/format.md, "The index
** file"): PAGEDB_INDEX_MAPPED, the persistent index NAME-index as the last
** commit left it, mapped (an open reads its header and one directory
** record, whatever the number of samples); PAGEDB_INDEX_REBUILT, a
** read-write open found it missing, stale, damaged or from another
** dataset, or the dataset had none yet (the format before it), and wrote
** it anew from the catalog in one pass; PAGEDB_INDEX_MEMORY, an index
** built in this process's memory by a scan of the catalog, as before the
** persistent index: a read-only open that found no usable index file, an
** open with PAGEDB_OPEN_CHECK, or a read-write open that could not write
** one (its commits then mark the index file stale).  *WHY (if WHY is not
** NULL) receives what the open found, e.g. "index /d/x-index: missing",
** or "" for PAGEDB_INDEX_MAPPED; it is owned by DB and lives as long as
** it.  Returns 0 for a NULL or failed DB.
*/
#define PAGEDB_INDEX_MAPPED   1
#define PAGEDB_INDEX_REBUILT  2
#define PAGEDB_INDEX_MEMORY   3
PAGEDB_API int pagedb_index_state(pagedb *db, const char **why);

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

#define PAGEDB_AUTO_ID  (-1)   /* pagedb_sample_begin: let the engine choose */

/*
** Open a writer: a private page buffer in which one thread assembles
** samples.  Any number of writers may be open at once, one per thread; each
** fills its own page in RAM with no lock held and writes the page at an
** offset it claimed with one atomic step, so writers never wait for each
** other.  Memory: one page plus the largest sample it has held.
**
** Results: PAGEDB_OK; PAGEDB_READONLY; PAGEDB_MISUSE (no fields yet, the
** handle failed); PAGEDB_NOMEM.  *W is NULL on error.
*/
PAGEDB_API int pagedb_writer_open(pagedb *db, pagedb_writer **w);

/*
** Begin a sample with id ID (>= 0), or PAGEDB_AUTO_ID to have the engine
** assign one above every id it has seen.  The id is reserved at once: an id
** that is committed or reserved by any writer fails with PAGEDB_CONSTRAINT
** and the writer stays ready for the next sample_begin.
**
** Results: PAGEDB_OK; PAGEDB_CONSTRAINT; PAGEDB_MISUSE (negative id, a
** sample already begun, writer failed); PAGEDB_FULL (auto ids exhausted);
** PAGEDB_NOMEM.
*/
PAGEDB_API int pagedb_sample_begin(pagedb_writer *w, int64_t id);

/*
** Give the current sample's value of field FIELD (a BYTES or TEXT field):
** N bytes copied from DATA (DATA may be NULL when N is 0).  Fields may be
** given in any order, each at most once per sample; a field left out reads
** back as PAGEDB_NOTFOUND.  When the sample no longer fits in the rest of
** the page, the engine writes the page and moves the sample to a fresh one;
** a sample larger than a page is written to a run of contiguous pages at
** pagedb_sample_end.  DATA is not referenced after the call returns.
**
** Results: PAGEDB_OK; PAGEDB_RANGE (no such field); PAGEDB_MISMATCH (a
** scalar field); PAGEDB_MISUSE (no sample begun, field given twice);
** PAGEDB_TOOBIG (the sample would exceed PAGEDB_MAX_SAMPLE bytes);
** PAGEDB_NOMEM; PAGEDB_IOERR* or PAGEDB_FULL (writing the filled page
** failed: the samples ended on it are dropped and the writer fails, see
** pagedb_writer_close).
*/
PAGEDB_API int pagedb_put(pagedb_writer *w, int field, const void *data, size_t n);

/*
** Give the current sample's value of tensor field FIELD: the elements DATA,
** N bytes, of an array of dtype DTYPE and NDIM dimensions SHAPE, in C order
** (copy a strided array into C order first).  DTYPE, NDIM, every fixed
** dimension, and N (the element size times the product of SHAPE) must
** agree with the declaration; a variable dimension takes any size from 0 to
** 2^31-1.  The value stored is the elements, followed by the trailer when
** the field has two or more variable dimensions.  pagedb_put on a tensor
** field stores raw bytes (a value pagedb_read gave), refused with
** PAGEDB_MISMATCH unless their length (and trailer) fits the declaration.
**
** Results: those of pagedb_put; PAGEDB_MISMATCH (not a tensor field, or a
** dtype, rank, dimension or size that differs from the declaration: the
** message says what was declared and what was given).
*/
PAGEDB_API int pagedb_put_tensor(pagedb_writer *w, int field, int dtype, int ndim, const int64_t *shape,
                                 const void *data, size_t n);

/* Give the current sample's value of an INT or REAL field.  Results as
** pagedb_put, with PAGEDB_MISMATCH when the field's type differs. */
PAGEDB_API int pagedb_put_int(pagedb_writer *w, int field, int64_t v);
PAGEDB_API int pagedb_put_real(pagedb_writer *w, int field, double v);

/*
** End the current sample.  *ID (if ID is not NULL) receives its id.  The
** sample becomes durable and visible at the first pagedb_commit after its
** page is written (when the page fills, at pagedb_writer_flush, or at
** pagedb_writer_close).
**
** On a VFS whose writes are asynchronous (PAGEDB_IOCAP_ASYNC_WRITE:
** "io_uring", "direct"), a filled page is written in the background while
** the writer fills the next one in a second buffer; pagedb_commit waits for
** such writes.  If one fails, a later call on the writer reports it (at the
** latest pagedb_writer_flush or pagedb_writer_close), naming the page and
** the samples dropped with it, and the writer fails as after any failed
** page write.
**
** Results: PAGEDB_OK; PAGEDB_MISUSE (no sample begun); PAGEDB_NOMEM;
** PAGEDB_IOERR* / PAGEDB_FULL (a page write failed, see pagedb_put).
*/
PAGEDB_API int pagedb_sample_end(pagedb_writer *w, int64_t *id);

/*
** Abandon the current sample (if any): its bytes are discarded and its id
** is released.  Always PAGEDB_OK.
*/
PAGEDB_API int pagedb_sample_cancel(pagedb_writer *w);

/*
** Write the writer's partly filled page, so that the samples on it can be
** committed.  The rest of that page stays unused.  A sample begun but not
** ended stays in the writer.  Results: PAGEDB_OK; PAGEDB_IOERR*;
** PAGEDB_FULL; PAGEDB_MISUSE (writer failed earlier).
*/
PAGEDB_API int pagedb_writer_flush(pagedb_writer *w);

/*
** Flush (a sample begun but not ended is abandoned), then free the writer.
** NULL is a harmless no-op.  The writer is freed whatever the result.
** After a page write failed, the result is that failure's code.
*/
PAGEDB_API int pagedb_writer_close(pagedb_writer *w);

/* The message of the writer's most recent failure ("not an error" if none);
** valid until the writer's next call. */
PAGEDB_API const char *pagedb_writer_errmsg(pagedb_writer *w);

/*
** Make every sample on a written page durable and visible.  The durable
** state is always a contiguous prefix of pages: a page is committable once
** every page before it has been written, and pages that writers still fill
** are not committed (flush them first).  The order is: data file synced
** (fsync when it grew, fdatasync otherwise), then the new pages and samples
** recorded in the catalog in one SQLite transaction, then the samples made
** visible.  May be called from any thread, concurrently with writers.
**
** A commit covers exactly the pages written when it runs.  A page write
** that failed is its writer's failure, reported by that writer (see
** pagedb_put and pagedb_sample_end), never by a commit: the commit records
** the page as dead and commits the others, whether the write failed
** before the commit (the posix VFS writes a filled page at once) or while
** the commit waited for it (the asynchronous VFSes).  So a sample is
** durable once a commit succeeded after its writer's pagedb_writer_flush
** (or pagedb_writer_close) returned PAGEDB_OK, and only then.
**
** A failed sync poisons the handle: every later write or commit fails with
** PAGEDB_IOERR_SYNC, since the kernel may have dropped the unsynced pages.
** That holds whatever the sync's errno, ENOSPC included (the message says
** which).
**
** A full disk otherwise costs nothing committed and needs no reopen: a
** page write that meets it fails its writer (see pagedb_put), and a commit
** whose catalog transaction meets it fails with PAGEDB_FULL and keeps
** everything written for the next commit.  Once space is freed, close the
** failed writers, open new ones and commit on the same handle: the samples
** of the failed page writes are lost (their pages are recorded as dead),
** every other sample ended is committed.
**
** Results: PAGEDB_OK; PAGEDB_READONLY; PAGEDB_IOERR*; PAGEDB_FULL;
** PAGEDB_NOMEM.
*/
PAGEDB_API int pagedb_commit(pagedb *db);

/* ------------------------------------------------------------------ */
/* Deleting and vacuuming                                              */
/* ------------------------------------------------------------------ */

/*
** Delete committed sample ID at the next pagedb_commit; until then it reads
** as before.  That commit removes it in the same catalog transaction as the
** pages it records: its row goes, the page table's count of live samples
** starting in its run drops by one, meta.samples drops by one and
** meta.deleted_bytes grows by the bytes its record takes.  The id is then
** free for a new sample; the bytes stay in the data file, unused, until
** pagedb_vacuum.  Deleting an id again before that commit changes nothing.
** A commit that fails keeps the deletions pending for the next one, and
** pagedb_close commits them as it commits everything.
**
** May be called from any thread, concurrently with writers and readers.  A
** read of ID racing with the commit of its deletion returns the sample or
** PAGEDB_NOTFOUND; do not write a new sample under a deleted id while a read
** of the old one may still be running.
**
** Results: PAGEDB_OK; PAGEDB_NOTFOUND (no committed sample ID: never
** written, not committed yet, or deleted by a commit already: the message
** names the id); PAGEDB_READONLY; PAGEDB_MISUSE (NULL handle, the handle's
** open failed); PAGEDB_NOMEM; the code of an earlier failure that made the
** handle unusable (see pagedb_commit).
*/
PAGEDB_API int pagedb_delete(pagedb *db, int64_t id);

/*
** Write the live committed samples again without the space that deleted
** samples and unfilled page ends take.  Every sample keeps its id and every
** field: scalars, missing fields, and the stored bytes of BYTES and TEXT
** values copied as they are, compressed or not, with their checksums
** (nothing is recompressed, a field's zstd dictionaries go along with
** their ids; a value whose bytes no longer match its
** checksum stops the vacuum with PAGEDB_CORRUPT, naming it).  The pages
** are packed from page 0 by two threads, each copying half of the samples
** in file order.  PAGE_SIZE 0 keeps the page size; otherwise it is the new
** dataset's, as pagedb_set_page_size takes it.  The new dataset has a new
** uuid, and meta.deleted_bytes 0.  Deletions not yet committed are not
** applied: those samples are copied.
**
** DEST not NULL (VACUUM INTO): the copy is a new dataset at DEST and
** DEST-catalog, which must not exist, opened with DB's VFS; DB itself is
** only read, and may be read-only.  Its commits wait until the copy ends.
** If the vacuum fails, DEST is removed.
**
** DEST NULL: the dataset is replaced in place, atomically: a crash at any
** moment leaves either the old dataset or the new one, whole (the next
** pagedb_open finishes or undoes the swap; src/vacuum.c tells how).  The
** new dataset is built beside the old one, as NAME.vacuum and
** NAME.vacuum-catalog, so the disk needs room for both meanwhile.  DB must
** be read-write, with no writer or reader open and everything written or
** deleted committed (PAGEDB_MISUSE otherwise); no other call on DB may run
** meanwhile, and no other handle, of this process or another, may have the
** dataset open: its catalog connection makes the vacuum fail with
** PAGEDB_BUSY before the swap (after up to the catalog's busy timeout, 10 s,
** if it is reading).  The write lock is held throughout.  Afterwards DB
** works on the new files: counts, pages and reads are the new dataset's.
** A dataset made of parts becomes one file; once the new one stands, the
** files of its parts under NAME.parts/ (pagedb_parts_commit's convention)
** are deleted, and that directory when it is left empty; parts elsewhere
** are left where they are (a crash in between leaves those under
** NAME.parts/ as orphans).
**
** Results: PAGEDB_OK; PAGEDB_MISUSE; PAGEDB_READONLY (in place, on a
** read-only handle); PAGEDB_RANGE (a page size that is not a power of two in
** range); PAGEDB_CANTOPEN (DEST or its catalog exists, or cannot be
** created); PAGEDB_BUSY; PAGEDB_CORRUPT; PAGEDB_IOERR*; PAGEDB_FULL;
** PAGEDB_NOMEM.  After a failed in-place vacuum DB works on the old dataset
** as before, unless the message ends "close the handle": DB could not
** reopen the dataset that stands (the new one in place, or the old one
** whose catalog it had closed for the swap, while I/O kept failing).  Then
** only pagedb_close works, and the next pagedb_open opens the dataset the
** message names as standing.
*/
PAGEDB_API int pagedb_vacuum(pagedb *db, const char *dest, size_t page_size);

/*
** pagedb_vacuum, changing the codec of N fields as it copies (issue 28):
** field FIELDS[i] (a name) gets codec CODECS[i] in the new dataset, and each
** of its values is decompressed (checked) and compressed anew with it by
** the copying threads; a value that does not shrink is stored as given.
** The way to compress an existing dataset, or to give a field a
** dictionary trained on all of it: a field recoded to
** PAGEDB_CODEC_ZSTD_DICT gets one trained first from its first 2000
** values in file order, and every value is compressed with it (naming a
** field with its own zstd-dict codec trains a new one).  Other fields are
** copied as stored, their dictionaries with them.  N 0 is pagedb_vacuum.
** Results: as pagedb_vacuum, and PAGEDB_RANGE (no field of that name),
** PAGEDB_MISUSE (a codec the field cannot have; N < 0; NULL arrays).
*/
PAGEDB_API int pagedb_vacuum_recode(pagedb *db, const char *dest, size_t page_size, int n, const char *const *fields,
                                    const int *codecs);

/* ------------------------------------------------------------------ */
/* Pushing to and pulling from object storage                          */
/* ------------------------------------------------------------------ */

/*
** Copy DB's committed dataset to DEST: an S3 prefix or key
** ("s3://BUCKET/KEY", credentials and endpoint as the s3 VFS reads them,
** doc/remote.md), an "http://" or "https://" URL that takes PUT (WebDAV,
** e.g. nginx's dav_methods PUT), or a local path (e.g. a directory a web
** server serves).  DEST ending in '/', or naming an existing local
** directory, gets DB's file name appended; otherwise it is the new
** dataset's name.  The files written are DEST (the data file up to the
** committed end), DEST-index if DB has an index file, and DEST-catalog, a
** consistent snapshot of the committed catalog, LAST; an older
** DEST-catalog is removed first.  So until the push has succeeded DEST is
** not a dataset that opens, and a push that fails or is killed part way
** never leaves one that opens with the wrong bytes.  An S3 data file larger
** than one part (PAGEDB_PUSH_PART_BYTES, default 32M, at least 5M) goes up
** by multipart upload, PAGEDB_PUSH_PARALLEL parts at once (default 4;
** pagedb_config options too, see REMOTE DATASETS), aborted on failure;
** smaller files by one PUT; a local file is written under a temporary
** name, synced and renamed, and its directory synced.  Transient server
** failures are retried as reads are (PAGEDB_REMOTE_RETRIES), each part on
** its own.  The destination's address, credentials and the settings are
** checked before anything is removed or written.
**
** DB may be read-only but must be local.  Commits (and pagedb_vacuum) of DB
** wait until the push ends; writers may go on filling pages meanwhile.
** Samples committed after the push began are not pushed.  Another process
** vacuuming the dataset in place meanwhile is not excluded.  Pushing over
** an existing remote dataset that readers have open makes their reads fail
** with PAGEDB_IOERR_CHANGED (never mixed bytes).
**
** Results: PAGEDB_OK; PAGEDB_MISUSE (DB NULL or failed, DEST NULL or empty,
** DB remote); PAGEDB_CANTOPEN (a bad URL, missing S3 credentials, a bad
** setting in the environment, a destination directory that does not
** exist, a build without libcurl);
** PAGEDB_READONLY (a local destination that refuses writes);
** PAGEDB_IOERR_REMOTE (the server refused or failed a request: the
** message, pagedb_errmsg(DB), names the URL, the request and the HTTP
** status, e.g. 403 AccessDenied, 404 NoSuchBucket, 405); PAGEDB_IOERR*;
** PAGEDB_FULL; PAGEDB_NOMEM.
**
** A dataset with parts (pagedb_parts_commit): the data file of each part
** whose uri is relative (NAME.parts/U, beside NAME) goes up too, before
** the index and the catalog, to the same uri beside DEST -- only the data
** file: reads need no other file of a part.  Parts by URL stay where they
** are.  A part by an absolute local path, which a reader elsewhere could
** not reach, refuses the push before anything is removed or written
** (PAGEDB_MISUSE naming the part and its path).  Pushed to a server, each
** uploaded part is pinned: its ETag as uploaded (a HEAD after the upload)
** is its validator in the uploaded catalog (a copy: DB's own catalog is
** not changed), so that a reader of DEST whose part object was replaced
** since gets PAGEDB_IOERR_CHANGED naming the part.  The index file records
** the validators too and its records never change, so such a push writes
** a new index for the copy (the committed samples, every part with its new
** validator) in a temporary file under TMPDIR (or /tmp), uploads it as
** DEST-index and removes it; the uploaded catalog names it, and a
** read-only open of DEST maps it as any index (pagedb_index_state:
** PAGEDB_INDEX_MAPPED).  Pushed to a local directory, parts are copied
** and the index goes as is.
*/
PAGEDB_API int pagedb_push(pagedb *db, const char *dest);

/*
** Download the remote dataset SRC (an s3://, http:// or https:// URL, as
** pagedb_open takes it) to the local path DEST (DEST ending in '/' or
** naming an existing directory gets SRC's file name appended): its data
** file, its index file if there is one, then its catalog, each written
** under a temporary name, synced and renamed.  Existing files are never
** overwritten.  The result is a dataset pagedb_open opens.  Ranges are
** fetched many at once with the remote VFS's retries, pinned to the
** version seen when each file's download began (a file that changes
** meanwhile fails with PAGEDB_IOERR_CHANGED).
**
** ERRMSG, if not NULL, gets a NUL-terminated message (at most CAP bytes;
** empty on success) naming what failed: there is no handle to ask.  On
** failure no file of DEST is left.
**
** Results: PAGEDB_OK; PAGEDB_MISUSE (SRC not a URL, DEST NULL or empty);
** PAGEDB_CANTOPEN (DEST's files exist or cannot be created, a bad URL,
** missing credentials, access denied, a build without libcurl);
** PAGEDB_CANTOPEN_NOENT (SRC or its catalog does not exist);
** PAGEDB_IOERR_REMOTE; PAGEDB_IOERR_CHANGED; PAGEDB_IOERR; PAGEDB_NOMEM.
** Thread-safe.
**
** A dataset with parts: the catalog is fetched first (under a temporary
** name, renamed in last); each part with a relative uri has its data file
** fetched to the same uri beside DEST (NAME.parts/U; directories made),
** parts by URL stay remote, and a part by an absolute path fails the pull
** (PAGEDB_MISUSE), one whose uri has a '.', '..' or empty component too
** (PAGEDB_CORRUPT_CATALOG).  A dataset committed on object storage has its
** index in the object meta.index_file names: that object is fetched as
** DEST-index and the key removed from the local catalog, so DEST has the
** usual files.  Validators are kept as recorded (they agree with the
** index's part records; a local part's is never compared).
*/
PAGEDB_API int pagedb_pull(const char *src, const char *dest, char *errmsg, size_t cap);

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

#define PAGEDB_READ_MMAP    1      /* zero-copy: pointers into a map of the file */
#define PAGEDB_READ_COPY    2      /* pread() into the reader's own buffer */
#define PAGEDB_READ_VERIFY  0x100  /* or-ed with either: check every value read
                                   ** against its checksum (PAGEDB_CORRUPT) */

/*
** Open a reader for committed samples.  MODE is PAGEDB_READ_MMAP (a read
** returns a pointer into a read-only shared map of the data file: nothing is
** copied, and the kernel may keep the pages resident) or PAGEDB_READ_COPY (a
** read copies the field into a buffer the reader owns, which grows to the
** largest field read: resident memory stays bounded).
**
** Files you do not control.  There is no default mode: the caller picks
** one (the pagedb shell reads in PAGEDB_READ_COPY).  Every extent is
** checked against the page table and the file's size when the dataset is
** opened or committed, but a zero-copy pointer is into the kernel's pages
** of the file as it is when touched: if another program truncates the data
** file while it is mapped, touching a returned pointer past the new end
** raises SIGBUS in the caller (pagedb cannot catch it), and bytes another
** program rewrites change under the pointer.  In PAGEDB_READ_COPY mode the
** same truncation makes the read fail with PAGEDB_IOERR_SHORT_READ, and
** PAGEDB_READ_VERIFY catches rewritten bytes (PAGEDB_CORRUPT).  Use
** PAGEDB_READ_COPY, with PAGEDB_READ_VERIFY if the bytes matter, for files
** that may change or shrink under you; test/harden.test shows both.
**
** A dataset read through a shared chunk cache (PAGEDB_CACHE_SHARED: its
** data files report PAGEDB_IOCAP_UNTRUSTED) is read as if
** PAGEDB_READ_VERIFY were given, whatever MODE says, and a value that
** fails is fetched again from the server before it is PAGEDB_CORRUPT
** (REMOTE DATASETS below, "shared cache").
**
** Compressed values (a field with a codec) are decompressed into the
** reader's buffer in either mode: zero-copy covers values stored as given.
** With PAGEDB_READ_VERIFY every value read is hashed (XXH3-64 of the bytes
** stored) and compared with the checksum its writer recorded, before it is
** decompressed or returned.
**
** Results: PAGEDB_OK; PAGEDB_MISUSE (bad mode); PAGEDB_IOERR_MMAP;
** PAGEDB_NOMEM.  *R is NULL on error.
*/
PAGEDB_API int pagedb_reader_open(pagedb *db, int mode, pagedb_reader **r);

/*
** Read field FIELD (BYTES or TEXT) of committed sample ID: *DATA receives a
** pointer to its *N bytes.  The pointer is valid until the next call on R
** (any read, or pagedb_reader_close) or pagedb_close(): copy what must
** outlive it.  In PAGEDB_READ_MMAP mode the bytes are the file's own pages,
** read-only.  Costs O(1): no SQL is run.
**
** Map lifetime.  In PAGEDB_READ_MMAP mode, the pointer to a value stored as
** given -- every value of a field whose codec is PAGEDB_CODEC_NONE -- is
** into the map of the data file, and stays valid until pagedb_close(DB)
** whatever happens meanwhile: later reads, pagedb_reader_close(R), other
** readers, commits that grow the file (a map that must grow is replaced,
** and the old one kept until close).  The one exception is an in-place
** pagedb_vacuum, which needs every reader closed and replaces the file:
** pointers taken before it are invalid after it.  Zero-copy bindings rely
** on this (python/: a view keeps the handle open, not a reader).  A value
** read through a shared chunk cache that fails its checksum is fetched
** again into the same map at the same address (xRefetch): no map is
** dropped or moved for it, so no pointer handed out earlier is left
** dangling, and the bytes of a value that verified do not change.  A value
** stored compressed is decompressed into R's buffer: that pointer has only
** the lifetime above.
**
** Results: PAGEDB_OK; PAGEDB_NOTFOUND (no committed sample ID, or it has no
** value for FIELD); PAGEDB_RANGE; PAGEDB_MISMATCH (a scalar field);
** PAGEDB_CORRUPT (a checksum mismatch under PAGEDB_READ_VERIFY, or a
** compressed value that does not decompress to its recorded size: the
** message names the sample and the field); PAGEDB_CORRUPT_INDEX (the
** sample's entry in the index file NAME-index fails its checksum, id or
** extent check: no bytes are returned; pagedb_check lists such entries,
** and deleting NAME-index has the next read-write open rebuild it);
** PAGEDB_IOERR* (copy mode); PAGEDB_NOMEM.  (pagedb_read_batch and the
** scalar reads report such an entry as PAGEDB_NOTFOUND.)
*/
PAGEDB_API int pagedb_read(pagedb_reader *r, int64_t id, int field,
                           const void **data, size_t *n);

/*
** As pagedb_read, but copy the bytes into BUF of CAP bytes (a compressed
** value is decompressed straight into BUF).  *N receives the field's size
** in every case where it is known; if CAP is smaller than it, nothing is
** copied and the result is PAGEDB_TOOBIG.
*/
PAGEDB_API int pagedb_read_into(pagedb_reader *r, int64_t id, int field,
                                void *buf, size_t cap, size_t *n);

/*
** Read tensor field FIELD of committed sample ID as pagedb_read does (the
** same pointer, lifetime and zero-copy rules): *DATA receives the pointer
** to its elements, aligned to the field's alignment, *NBYTES their bytes
** (the trailer left out), *NDIM and SHAPE[0 .. *NDIM-1] its shape (SHAPE
** has room for PAGEDB_TENSOR_MAX_DIMS).  Results: those of pagedb_read;
** PAGEDB_MISMATCH (not a tensor field); PAGEDB_CORRUPT (a length or trailer
** that does not fit the declaration: the message names the sample and the
** field).
*/
PAGEDB_API int pagedb_read_tensor(pagedb_reader *r, int64_t id, int field, const void **data, size_t *nbytes,
                                  int *ndim, int64_t *shape);

/* As pagedb_read_tensor, the raw value copied into BUF of CAP bytes as
** pagedb_read_into does (CAP must hold the raw value, trailer included:
** PAGEDB_TOOBIG otherwise, *NBYTES then the raw length); the elements are
** BUF's first *NBYTES bytes. */
PAGEDB_API int pagedb_read_tensor_into(pagedb_reader *r, int64_t id, int field, void *buf, size_t cap,
                                       size_t *nbytes, int *ndim, int64_t *shape);

/* The shape of a raw value VALUE of N bytes of tensor field FIELD (one that
** pagedb_read or pagedb_read_batch gave): as pagedb_read_tensor, for
** values read in batches.  Any thread may call it on DB at any time (it
** reads only the declaration; its message is the calling thread's
** pagedb_errmsg).  PAGEDB_OK, PAGEDB_RANGE, PAGEDB_MISMATCH (not a tensor
** field), PAGEDB_CORRUPT (the length or trailer does not fit). */
PAGEDB_API int pagedb_tensor_shape(pagedb *db, int field, const void *value, size_t n, size_t *nbytes, int *ndim,
                                   int64_t *shape);

/*
** Token streams (doc/format.md, "Token maps").  A language model trains on
** blocks of B + 1 consecutive tokens -- an input of B and its target, the
** same shifted by one -- cut from documents laid end to end.  With the
** documents stored as values of a token field (a tensor field of one
** variable dimension and an integer dtype: tensor:uint16:*,
** tensor:uint32:*, any of int8 .. uint64), pagedb_tokens_open makes the
** stream: every committed sample with at least one token, in increasing
** id order, concatenated (the same stream every epoch: what nanoGPT and
** LitData's TokensLoader read from one flat token file); and its token
** map, the prefix sums of their lengths.  Every commit keeps the map of
** each token field in the index file (16 bytes a document, appended in
** place, rewritten by a commit that deletes or resizes a document), and
** the open reads it in place: O(1) in the documents, with
** pagedb_tokens_stored(T) 1.  An index file without maps (written by an
** earlier pagedb), or no index file (a read-only
** open that scanned the catalog, PAGEDB_OPEN_CHECK), gives the same stream
** from a map built in memory at the open: O(documents).  Block b is tokens
** bB .. bB + B of the stream (bB + B is also block b + 1's first): there
** are (tokens - 1) / B blocks, and the last (tokens - 1) mod B tokens --
** the TAIL, the same every epoch -- are in no block's input.  KIND, SEED
** and EPOCH choose the order the blocks are read in (pagedb_tokens_order);
** in earlier versions they permuted the documents instead, so the blocks
** of a RANDOM stream differ from those versions'.  Samples
** committed after the open are not in the stream; one deleted or changed
** after it fails its read (PAGEDB_NOTFOUND, PAGEDB_CORRUPT) and never
** gives other tokens.
**
** T does not change once made: threads may share it, each reading blocks
** through a reader of its own (which gives a block its mode, verification
** and decompression).  It holds no reader; a stored map is read in place
** from the index file's map, which the handle keeps until pagedb_close
** (also across a rewrite of the index, pagedb_field_add or an in-place
** vacuum): closing T frees memory only, and is the one call allowed on it
** after pagedb_close(DB).
**
** Results of pagedb_tokens_open: PAGEDB_OK; PAGEDB_RANGE (no field FIELD,
** BLOCK_SIZE out of 1 .. 2^30); PAGEDB_MISMATCH (not a token field: the
** message gives its declaration); PAGEDB_MISUSE (an unknown KIND: one of
** PAGEDB_ORDER_SEQUENTIAL, _RANDOM, _QUASI_RANDOM); PAGEDB_CORRUPT_INDEX
** (the stored map's last entry is damaged; with a built map, a document's
** index entry is damaged); PAGEDB_CORRUPT (a built map: a document's
** length is not a whole number of tokens); PAGEDB_NOMEM.  *OUT is NULL on
** error; the message is pagedb_errmsg(DB).
*/
typedef struct pagedb_tokens pagedb_tokens;
PAGEDB_API int pagedb_tokens_open(pagedb *db, int field, int kind, uint64_t seed, uint64_t epoch,
                                  int64_t block_size, pagedb_tokens **out);

/* The blocks, tokens and documents of T's epoch (0 for NULL). */
PAGEDB_API int64_t pagedb_tokens_blocks(const pagedb_tokens *t);
PAGEDB_API int64_t pagedb_tokens_total(const pagedb_tokens *t);
PAGEDB_API int64_t pagedb_tokens_documents(const pagedb_tokens *t);

/*
** Block B (0 <= B < pagedb_tokens_blocks) of T, read through R (a reader
** of T's handle, used by one thread at a time as always; its message is
** pagedb_reader_errmsg(R)): *DATA receives a pointer
** to its block_size + 1 tokens (the field's dtype, little-endian), found
** by a binary search of the map, O(log documents), and a read of each
** document it touches.  Each entry of a stored map it uses is checked
** (ends increasing, each document's length its slot's): a damaged map
** fails the block with PAGEDB_CORRUPT_INDEX, never gives other tokens.  A block inside one document is a view: the pointer
** pagedb_read gives for the document, moved to the block's first token,
** with pagedb_read's lifetime (in PAGEDB_READ_MMAP mode, of a field stored
** as given: until pagedb_close(DB); otherwise until the next call on
** R).  A block spanning documents is copied once into BUF, which must hold
** (block_size + 1) x the dtype's size bytes, and *DATA is BUF (BUF may be
** NULL only if the caller takes views alone: PAGEDB_MISUSE then for a
** spanning block).  Every pointer is aligned to the dtype's size when BUF
** is.  Results: PAGEDB_OK; PAGEDB_RANGE (no block B); those of pagedb_read
** (PAGEDB_NOTFOUND for a document deleted since the open, PAGEDB_CORRUPT,
** PAGEDB_CORRUPT_INDEX, PAGEDB_IOERR*); PAGEDB_CORRUPT (a document's length
** is not the map's: changed since the open).
*/
PAGEDB_API int pagedb_tokens_block(const pagedb_tokens *t, pagedb_reader *r, int64_t b, void *buf,
                                   const void **data);

/*
** The block numbers rank RANK of WORLD reads in T's epoch, into BLOCKS (*N
** entries; call with BLOCKS NULL to learn *N).  Position i of the epoch
** reads block perm(i): for PAGEDB_ORDER_SEQUENTIAL the identity; for
** _RANDOM a keyed permutation of [0, blocks) drawn from (SEED, EPOCH) (a
** Feistel network with cycle walking: another order each epoch, the same
** on every machine); for _QUASI_RANDOM the same permutation of groups of
** 64 neighbouring blocks (each group a stretch of the stream, its blocks
** in order; the last blocks % 64 stay last, in order).  Rank RANK reads
** positions RANK x L .. RANK x L + L - 1, L = blocks / WORLD; the last
** blocks % WORLD positions are not read (the ranks stay in step; with
** RANDOM which blocks changes each epoch).  O(L): a pure function of the
** stream and the arguments, every rank computes its own.  (Earlier
** versions permuted the documents per epoch and shuffled the blocks with
** another generator: their orders differ.)
** Results: PAGEDB_OK; PAGEDB_MISUSE (RANK or WORLD out of range, BLOCKS
** too short: *N receives the length needed).  The message is
** pagedb_errmsg of T's handle.
*/
PAGEDB_API int pagedb_tokens_order(const pagedb_tokens *t, int rank, int world, int64_t *blocks, int64_t *n);

/*
** Whether T reads the token map stored in the index file (1: its open was
** O(1) in documents) or one built in memory at its open (0: an index file
** written before pagedb stored maps, or none: PAGEDB_OPEN_CHECK, a
** read-only open that scanned the catalog).  0 for NULL.
*/
PAGEDB_API int pagedb_tokens_stored(const pagedb_tokens *t);

/*
** Document K (0 <= K < pagedb_tokens_documents) of T's stream: *ID its
** sample id, *END the tokens of it and of every document before it (its
** last token is END - 1 of the stream): which document a block came from
** is the one whose END is the first past the block's first token.
** Documents are in increasing id order.  Results: PAGEDB_OK; PAGEDB_RANGE
** (no document K); PAGEDB_CORRUPT_INDEX (a damaged entry of the stored
** map).  The message is pagedb_errmsg of T's handle.
*/
PAGEDB_API int pagedb_tokens_document(const pagedb_tokens *t, int64_t k, int64_t *id, int64_t *end);

/* Free T.  Pointers its blocks gave keep pagedb_read's lifetime.  NULL: a
** no-op. */
PAGEDB_API void pagedb_tokens_close(pagedb_tokens *t);

/* Read an INT or REAL field of committed sample ID.  Results: PAGEDB_OK;
** PAGEDB_NOTFOUND; PAGEDB_RANGE; PAGEDB_MISMATCH. */
PAGEDB_API int pagedb_read_int(pagedb_reader *r, int64_t id, int field, int64_t *v);
PAGEDB_API int pagedb_read_real(pagedb_reader *r, int64_t id, int field, double *v);

/*
** Read field FIELD of the N committed samples IDS[0..N-1] at once: DATA[i]
** and SIZES[i] receive what pagedb_read would give for IDS[i].  On a VFS
** that batches (PAGEDB_IOCAP_BATCH, e.g. "io_uring") the copies are one
** submission; in zero-copy mode the pages touched are advised
** (MADV_WILLNEED) before the pointers are returned.  Every pointer stays
** valid until the next call on R.  The first failing id stops the batch:
** its code is returned, the message names it, and entries before it are
** filled.  N is 0 to PAGEDB_MAX_BATCH.
**
** Results: as pagedb_read; PAGEDB_MISUSE (N out of range, NULL arrays).
*/
#define PAGEDB_MAX_BATCH 65536
PAGEDB_API int pagedb_read_batch(pagedb_reader *r, const int64_t *ids, int n, int field,
                                 const void **data, size_t *sizes);

/*
** Tell the kernel how R will read: PAGEDB_ADVISE_SEQUENTIAL, _RANDOM,
** _WILLNEED (read the whole committed data soon) or _DONTNEED (drop the
** cached and, in zero-copy mode, mapped pages: resident memory falls; the
** bytes are read again on the next access).  The hint is given to the map
** of the index file (NAME-index) of a read-only handle too, whose slots are
** looked up in the same order: a reader of a dataset larger than memory in
** a random order wants PAGEDB_ADVISE_RANDOM, or each slot and sample it
** faults in reads the disk's whole read-ahead around it.  Pointers R
** returned stay valid.  Results: PAGEDB_OK; PAGEDB_MISUSE (unknown hint);
** PAGEDB_IOERR.
*/
PAGEDB_API int pagedb_advise(pagedb_reader *r, int hint);

/*
** Give R the order in which it will read field FIELD: the N ids of IDS
** (copied; typically from pagedb_order).  While later pagedb_read and
** pagedb_read_batch calls on R follow that order, R reads ahead of them, at
** most WINDOW bytes.  On a file that bypasses the page cache (the "direct"
** VFS) in copy mode, a worker thread of R's reads the next half-window of
** samples with one batched read while the caller consumes the current one,
** and the reads are served from there; otherwise the kernel is advised
** (POSIX_FADV_WILLNEED, MADV_WILLNEED) of the next window's bytes and reads
** them into its cache in the background.  A read off the order is served
** as usual and does not move the position; a batch larger than half the
** window gains nothing.  WINDOW 0 (or N 0) turns read-ahead off.  Memory:
** the copy of IDS, plus WINDOW bytes and a thread on a direct file.
** Pointers keep the lifetime pagedb_read gives them.  Read-ahead never
** fails a read: what it could not read is read as usual.  Results:
** PAGEDB_OK; PAGEDB_RANGE; PAGEDB_MISMATCH (a scalar field); PAGEDB_MISUSE;
** PAGEDB_NOMEM.
*/
PAGEDB_API int pagedb_reader_prefetch(pagedb_reader *r, const int64_t *ids, int64_t n, int field,
                                      size_t window);

/* Free a reader; pointers it returned become invalid.  NULL is a no-op. */
PAGEDB_API int pagedb_reader_close(pagedb_reader *r);

/* The message of the reader's most recent failure; valid until its next call. */
PAGEDB_API const char *pagedb_reader_errmsg(pagedb_reader *r);

/* ------------------------------------------------------------------ */
/* Merging                                                             */
/* ------------------------------------------------------------------ */

/* How pagedb_attach numbers the samples it brings in. */
#define PAGEDB_ATTACH_KEEP    1  /* keep the other dataset's ids; any collision fails the whole attach */
#define PAGEDB_ATTACH_OFFSET  2  /* add OFFSET to every id (overflow or a collision fails the whole attach) */
#define PAGEDB_ATTACH_AFTER   3  /* renumber after the largest id of DB, in the other dataset's id order */

/*
** Append every committed sample of the dataset whose data file is OTHER to
** DB, and commit.  OTHER must have DB's page size and schema: the same
** fields in the same order, with the same names, types, codecs (levels
** included) and alignments.  Its runs are copied page by page as they lie on disk: the
** stored bytes, compressed or not, are never decoded, and every sample
** keeps its values, lengths and checksums; only its id changes as POLICY
** says, and the run headers take DB's uuid and page numbers.  The copied
** runs follow DB's pages contiguously, in OTHER's order (runs holding no
** sample, such as pages given up after a failed write, are not copied), so
** DB's page count grows by OTHER's.
**
** POLICY is one of
**   PAGEDB_ATTACH_KEEP    the ids are OTHER's;
**   PAGEDB_ATTACH_OFFSET  each id is OTHER's plus OFFSET (which may be
**                         negative);
**   PAGEDB_ATTACH_AFTER   OTHER's samples, in increasing id order, take
**                         consecutive ids from the one the next
**                         PAGEDB_AUTO_ID sample of DB would get: above every
**                         id DB has committed or seen a writer begin.
** OFFSET is ignored by the other policies.  PAGEDB_AUTO_ID ids stay above
** every attached id afterwards.
**
** Every id is planned and reserved before anything is written: an id that
** a committed sample of DB has, or that a writer of DB has begun, fails the
** attach with PAGEDB_CONSTRAINT, the message naming the first such id in
** OTHER's id order, and nothing is attached.
**
** Attaching commits, as pagedb_commit does: what this handle's writers had
** written (samples ended on a written page) is committed with the attached
** samples, which all become visible at once.  OTHER is opened read-only
** with DB's VFS (a URL: the VFS of its scheme, as pagedb_open chooses),
** never changed, and closed on return; only what it had committed when
** opened is attached.  Each run read from OTHER is checked
** against its header and checksum first.  Memory: two buffers of OTHER's
** largest run (one is read while the other is written), OTHER's index (as
** opening it loads), and as much again for the new samples' entries.  May run beside DB's writers,
** readers and commits, not beside schema calls or pagedb_close.
**
** *NATTACHED (if not NULL) receives the number of samples attached: all of
** OTHER's on PAGEDB_OK, 0 otherwise.
**
** Results: PAGEDB_OK; PAGEDB_CONSTRAINT (an id collision); PAGEDB_MISMATCH
** (the page sizes, the number of fields, or a field's name, type or codec
** differ: the message says which); PAGEDB_FULL (with OFFSET or AFTER, a new
** id would fall outside 0..INT64_MAX); PAGEDB_READONLY (DB is read-only);
** PAGEDB_MISUSE (NULL DB or OTHER, an unknown POLICY, OTHER is DB's own data
** file, DB's open failed); PAGEDB_TOOBIG (more than 2^32-1 pages, or
** samples in one run, to copy); the errors of opening OTHER, as
** pagedb_open returns them (PAGEDB_CANTOPEN_NOENT, PAGEDB_NOTADB*,
** PAGEDB_CORRUPT*, ...); PAGEDB_CORRUPT (a run of OTHER fails its checks).
** With all of these nothing is attached and DB is unchanged.  Then, while
** copying: PAGEDB_IOERR*, PAGEDB_FULL, PAGEDB_NOMEM: nothing is attached,
** DB is whole at its previous commit and stays usable, and the pages
** copied so far lie past its committed prefix and are discarded like any
** uncommitted page (if a writer of DB claimed pages after them meanwhile,
** they are instead recorded as one dead run, holding no sample, at the next
** commit, as a page whose write failed is).  Last, the errors of the
** commit, as pagedb_commit returns them: the copied samples are then
** written but not committed, and are committed by the next pagedb_commit
** that succeeds, as any written sample is.
*/
PAGEDB_API int pagedb_attach(pagedb *db, const char *other, int policy, int64_t offset, int64_t *nattached);

/* ------------------------------------------------------------------ */
/* Parts: a dataset made of datasets written apart (doc/format.md)     */
/* ------------------------------------------------------------------ */

/* A part to commit (pagedb_parts_commit). */
typedef struct pagedb_part {
  const char *path;         /* the part's data file (a dataset of DB's schema) */
  const char *name;         /* a key of the writer's (a task's), unique in DB, or NULL */
  int64_t offset;           /* PAGEDB_ATTACH_OFFSET: added to the part's ids */
  uint64_t seal;            /* pagedb_part_seal of the part as written, or 0: not checked */
} pagedb_part;

/*
** The seal of the dataset PART as committed: a 64-bit fingerprint of its
** header and catalog metadata (uuid, page size, pages, samples, deletions,
** index, page table; doc/format.md, "The seal"), which any later commit of
** or change to PART through pagedb changes.  A read-write handle commits
** what its writers wrote first.  The writer of a part gives it, with the
** part's path, to whoever commits it, so that a part changed in between is
** refused.  A read-write PART is taken to be finished: its close leaves its
** catalog in rollback-journal mode (unless another connection has it open
** then), so that the read-only opens of whoever commits, queries or reads
** it create no NAME-catalog-wal and -shm (32 KiB) beside it; a read-write
** open returns it to WAL mode, and writing after the seal is allowed (the
** seal then no longer matches).  Results: PAGEDB_OK; those of
** pagedb_commit; PAGEDB_MISUSE.
*/
PAGEDB_API int pagedb_part_seal(pagedb *part, uint64_t *seal);

/*
** Commit the N datasets PARTS[0..N) into DB as its parts, all or none, by
** reference: their page rows and index entries are added to DB's, and
** none of their data bytes is copied or written (reads of their samples
** open each part's data file where it lies, the first time this process
** reads it; reads keep at most PAGEDB_CONFIG_PARTS_OPEN of them open, and
** zero-copy ones keep every part they touched until pagedb_close, mapped,
** or, for small local parts, copied: PAGEDB_CONFIG_PARTS_COPY).
** Afterwards DB reads as one: every read API, SQL over table
** sample, pagedb_order, pagedb_delete and pagedb_vacuum (which copies every
** sample, parts' included, into one file, format 2 again).  Table part of
** the catalog lists the parts (number, uuid, location, name, pages, bytes,
** samples, id range, seal).  A part must have DB's page size and schema
** (as pagedb_attach needs) and no parts of its own; it is opened read-only
** with DB's VFS and never changed, and must not change afterwards: a
** vacuum of it makes its samples unreadable through DB (such reads say
** so), and any change to it makes SQL over DB's sample rows fail, naming
** the part (below).  A part is recorded by
** its path relative to the directory of DB's data file when it lies below
** it (the convention: NAME.parts/UUID), else by its absolute path.
**
** Ids follow POLICY as in pagedb_attach, part by part in the order given:
** KEEP (a collision with DB's or another part's ids fails the commit),
** OFFSET (each part's ids plus its own PARTS[i].offset), AFTER
** (consecutive ids after DB's largest, each part's samples in id order).
** What this handle's writers had written is committed with the parts.
**
** SAMPLE ROWS (doc/format.md, "Parts' rows by reference").  A part whose
** ids all map to DB's by one constant (always under KEEP and OFFSET; under
** AFTER when its ids are consecutive) keeps its sample rows in its own
** catalog, NAME-catalog beside its data file: the commit copies none, and
** SQL on DB (pagedb_sql, pagedb_sql_values) reads them there through a
** virtual table, with their ids and pages as DB's -- table sample, and the
** views extent and sample_info, are the union of DB's rows and the parts'.
** Such a part's catalog must stay where it is, unchanged; SQL that reads
** its rows otherwise fails with PAGEDB_ERROR naming the part ("its catalog
** changed since it was committed", "cannot read its catalog"), while reads
** of the samples' bytes go on.  Other parts' rows are copied into DB's
** catalog as before.  pagedb_delete of a part's sample records its id in
** table part_deleted; the first pagedb_sql_update after such a commit copies
** every part's rows into DB's catalog first (once).  pagedb_sql_user's
** statements read the same union (a user table made from sample holds the
** parts' rows too).  Without an ORDER BY, DB's own rows come first, then
** each part's.
**
** INDEX CHUNKS (doc/format.md, "Parts' chunks by reference").  A local part
** of 8,192 samples or more whose ids map to DB's by a multiple of 8,192
** (KEEP; OFFSET by such an offset) has the chunks of its index between its
** first and its last referenced by DB's index instead of copied: the
** commit reads none of their entries (its cost for them is its chunks',
** never its samples'), and reads of those samples look their entries up in
** the part's index file, NAME-index beside its data file, which must then
** stay as it was committed: if it is missing or changed, they fail with
** PAGEDB_CORRUPT_INDEX naming the part and the file (pagedb_check reports
** them).  A file that could not be opened or read (missing, no descriptor
** or memory left) is tried again by the next read that needs it; one found
** changed stays refused by the handle until DB is opened again.  A handle keeps the index file of each such part mapped
** from its first lookup into it until pagedb_close: a map per referenced
** part touched, in copy mode too; its descriptor is given up once it is
** mapped (with a VFS of version 7: xDetach), so a copy-mode reader's
** descriptors stay within PAGEDB_CONFIG_PARTS_OPEN.  While the commit runs, the ids from the part's first to its last
** are held whole: a writer of DB gets PAGEDB_CONSTRAINT for one of them,
** and a part of the same commit whose slots are copied may not have one
** (PAGEDB_CONSTRAINT, naming both).  A part is copied instead when DB
** already has or a writer holds one of those ids, when DB's index is of
** version 2 (parts committed before this library), when a field of DB is a
** token field, and under AFTER; the environment variable PAGEDB_PARTS_REF=0
** copies every part (a benchmark's reference).
**
** The first commit of parts into a dataset rewrites its index file (into
** version 3, or 2 if a field is a token field), so it needs the handle to
** have no open writer (PAGEDB_MISUSE: a writer's ids are reserved in the
** old index); the handle's open readers read on, the new index from their
** next read (a read under way finishes on the old, which stays until
** pagedb_close).  Later commits run beside writers and readers.  Two commits into DB
** cannot run at once: another process's pagedb_open read-write gets
** PAGEDB_BUSY_LOCKED while DB is open (after waiting up to the busy
** timeout, see pagedb_open), and commits of one handle take turns.
** Committers in several processes therefore each open DB read-write with
** a busy timeout, commit and close: each commit waits for the one before,
** or fails with PAGEDB_BUSY_LOCKED (a PAGEDB_BUSY) with DB as the other
** left it.  A reader that opens during a commit sees DB before it or
** after it, never a part of it.
**
** A part may lie on a server: PARTS[i].path an s3:// or http(s):// URL
** (a dataset pushed there with pagedb_push, e.g. to NAME.parts/U beside a
** remote DB).  Its header, catalog and index are read over the connection
** and its data object's ETag (else Last-Modified) is recorded as the
** part's validator, which every later open of the part compares with what
** the server has: a part whose object changed (another ETag) fails its
** reads with PAGEDB_IOERR_CHANGED naming it, never with other bytes.  The
** uri recorded is relative to DB's URL prefix when the part lies below it,
** else the URL.
**
** ON OBJECT STORAGE.  A handle of an s3:// dataset (opened read-only, as
** every remote dataset is) commits parts into it (doc/format.md,
** "Committing parts into a dataset on object storage"): the catalog, the
** data file's header and the index in force are fetched into a temporary
** directory under TMPDIR, the commit above runs on those copies (parts
** given by URL; a local path is refused, PAGEDB_MISUSE: push it first), the
** new index goes up as NAME-index-X (X 16 random hex digits, with
** If-None-Match: *) and is named by meta.index_file, and the catalog goes
** up with If-Match: its ETag when fetched.  That one write is the commit
** point: a reader opening DB sees the old dataset or the new one, never a
** mix; a kill or failure before it leaves the old dataset (and perhaps an
** orphan index object, pagedb_parts_orphans).  If another commit landed in
** between (HTTP 412) the result is PAGEDB_BUSY and nothing is committed:
** commit again.  (Ceph's radosgw matches If-Match only with the ETag
** unquoted: after a 412 whose HEAD shows the ETag unchanged the PUT is sent
** once more unquoted, and the process sends it unquoted from then on.)
** DB itself is not changed: it reads on the snapshot it opened (its
** samples, count and parts; a new SQL statement reads the catalog object
** as it is now); open DB again to see the new parts.  An http(s):// dataset
** offers no conditional write: PAGEDB_READONLY.  The cost is the
** download and upload of the whole catalog and index, beside the local
** commit's.
**
** *NCOMMITTED (if not NULL) receives the number of samples committed.
**
** Results: PAGEDB_OK; PAGEDB_CONSTRAINT (a part given twice, or already in
** DB, by uuid, location or name; an id collision; a user table named
** 'part' is in the way); PAGEDB_MISUSE (a part is DB itself, an unknown
** POLICY, N < 1, or a writer open at a first commit of parts);
** PAGEDB_MISMATCH (page size or schema differ, or the part has parts);
** PAGEDB_CORRUPT (the part changed since its SEAL, or a record lies outside
** its run); PAGEDB_CORRUPT_INDEX (its index holds a sample below the
** smallest id its catalog lists); PAGEDB_CORRUPT_TRUNCATED (its data file is
** shorter than its runs);
** PAGEDB_TOOBIG (its data region is over 4 TiB); PAGEDB_FULL (an id outside
** 0..INT64_MAX, or more than 2,080,768 parts); the errors of opening the
** part (PAGEDB_CANTOPEN_NOENT, PAGEDB_NOTADB*, ...).  The message names the
** part.  With all of these DB is unchanged.  Then the errors of the commit,
** as pagedb_commit returns them, after which nothing of the parts is
** committed either.  On object storage also PAGEDB_BUSY (another commit
** landed first), PAGEDB_IOERR_REMOTE (a request failed), PAGEDB_READONLY
** (not s3://, or a server that gives no ETag), PAGEDB_IOERR_CHANGED.
*/
PAGEDB_API int pagedb_parts_commit(pagedb *db, const pagedb_part *parts, int n, int policy, int64_t *ncommitted);

/* The number of parts DB is made of (0 for a dataset of one file). */
PAGEDB_API int64_t pagedb_part_count(pagedb *db);

/* An orphan part (pagedb_parts_orphans); strings valid during the call only. */
typedef struct pagedb_orphan {
  const char *path;         /* its data file, NAME.parts/F (an s3:// URL on object storage) */
  const char *uuid;         /* its dataset uuid, 32 hex digits ("" for an index object on S3) */
  int64_t bytes;            /* the bytes of its files together */
  int64_t age_ms;           /* since the newest of its files last changed */
} pagedb_orphan;

#define PAGEDB_ORPHANS_REMOVE 1   /* remove each orphan listed */

/*
** List DB's orphan parts (doc/format.md, "Orphans"): the datasets whose
** data files lie directly in the directory NAME.parts/ beside DB's data
** file NAME and whose uuid no committed part of DB has -- the parts of a
** job that failed, the duplicates of retried or speculative tasks, the
** parts of a commit that did not land -- each with its files F-catalog
** (-wal, -shm, -journal) and F-index (.new).  Only those at least
** MIN_AGE_MS old are listed (the age of the newest of its files): a part
** still being written, or written by a job still running and about to be
** committed, is younger than that job, so MIN_AGE_MS must exceed the age
** of any job that may still commit into DB (0 only when none runs).  A
** committed part is never listed; a file that does not open as a data
** file (one being created, or none of pagedb's) is left alone, as are
** subdirectories and everything outside NAME.parts/.  With
** PAGEDB_ORPHANS_REMOVE in FLAGS each orphan listed is removed (its
** companions first, the data file last), which needs a read-write handle:
** it holds DB's write lock, so that no other process's commit can take a
** part meanwhile.  Do not run it beside a pagedb_parts_commit of the same
** handle that is given parts under NAME.parts/ younger than MIN_AGE_MS.
** On object storage (an s3:// DB, any handle): the committed parts and
** the index in force are read from the catalog object as it is at the
** call (not the handle's snapshot), NAME.parts/ is listed (ListObjectsV2),
** and the orphans are those parts plus every index object NAME-index or
** NAME-index-X that meta.index_file does not name (their uuid ""); ages
** are from the objects' Last-Modified.  There is no write lock there:
** MIN_AGE_MS must exceed the age of any commit that may be under way.
** XORPHAN (if not NULL) is called with each orphan, after its removal; a
** non-OK return stops the listing and is returned.  *NORPHANS (if not
** NULL) receives the number listed (and removed).
**
** Results: PAGEDB_OK (also when NAME.parts/ does not exist);
** PAGEDB_READONLY (removal on a read-only handle); PAGEDB_MISUSE (unknown
** FLAGS, MIN_AGE_MS < 0, or a dataset on an http(s):// server);
** PAGEDB_IOERR_REMOTE (object storage: a request failed); PAGEDB_IOERR (listing or removing failed,
** naming the file: the orphans before it are removed); the errors of
** reading the catalog.
*/
PAGEDB_API int pagedb_parts_orphans(pagedb *db, int64_t min_age_ms, int flags,
                                    int (*xorphan)(void *ctx, const pagedb_orphan *o), void *ctx,
                                    int64_t *norphans);

/* ------------------------------------------------------------------ */
/* Epoch orders                                                        */
/* ------------------------------------------------------------------ */

#define PAGEDB_ORDER_SEQUENTIAL    1  /* in the order the bytes lie in the file */
#define PAGEDB_ORDER_RANDOM        2  /* a full shuffle */
#define PAGEDB_ORDER_QUASI_RANDOM  3  /* shuffled pages, samples shuffled within a window of pages */
#define PAGEDB_ORDER_DROP_LAST  0x100 /* or-ed with the kind: drop rather than pad (see below) */
#define PAGEDB_ORDER_WINDOW        8  /* pages in a QUASI_RANDOM window */

/*
** The ids rank RANK of WORLD ranks (0 <= RANK < WORLD) reads in epoch
** EPOCH, for the samples committed when called.  The order is a pure
** function of the dataset's committed samples and (KIND, SEED, EPOCH, RANK,
** WORLD): the same on every machine.  Ranks partition one global order into
** WORLD contiguous parts of equal length: when the count is not a multiple
** of WORLD, the last parts are padded with samples from the start of the
** global order (so a few samples are read twice), or with
** PAGEDB_ORDER_DROP_LAST the global order is cut to a multiple of WORLD (a
** few samples are not read this epoch; which ones changes with the epoch
** except in SEQUENTIAL order).  QUASI_RANDOM keeps any PAGEDB_ORDER_WINDOW
** consecutive pages' samples together, so a reader touches few pages at a
** time; each rank's part stays contiguous in it.
**
** Call with IDS NULL to learn the length in *N; then with IDS of *N
** entries.  A position in the returned array is all a job must save to
** resume within the epoch.
**
** Results: PAGEDB_OK; PAGEDB_MISUSE (bad kind, rank or world, IDS too
** short: *N receives the length needed); PAGEDB_NOMEM.
*/
PAGEDB_API int pagedb_order(pagedb *db, int kind, uint64_t seed, uint64_t epoch, int rank, int world,
                            int64_t *ids, int64_t *n);

/*
** Run one SQL statement's worth of text SQL on the catalog, read-only
** (a statement that would write fails with PAGEDB_READONLY), calling XROW for
** each result row with the column count, values (NULL for SQL NULL) and
** names; a non-zero return from XROW stops and yields PAGEDB_ERROR.  Several
** statements separated by ';' run in order.  For tools and the shell.
** The catalog's tables and views are doc/format.md's: sample, extent,
** sample_info (sample's rows with columns named for what they hold) and
** the application's user tables (pagedb_sql_user).
*/
PAGEDB_API int pagedb_sql(pagedb *db, const char *sql,
                          int (*xrow)(void *ctx, int ncol, char **vals, char **names),
                          void *ctx);

/*
** One value of a result row of pagedb_sql_values, typed as SQLite stored
** it: TYPE is PAGEDB_INT (I), PAGEDB_REAL (D), PAGEDB_TEXT (P: N bytes of
** UTF-8, followed by a NUL not counted in N), PAGEDB_BYTES (P: N bytes of a
** BLOB; P may be NULL when N is 0) or PAGEDB_NULL (SQL NULL).  P is valid
** only during the callback that received it.
*/
#define PAGEDB_NULL    0   /* an SQL NULL in pagedb_sql_values (not a field type) */
typedef struct pagedb_value {
  int type;
  int64_t i;
  double d;
  const void *p;
  size_t n;
} pagedb_value;

/*
** As pagedb_sql, but each result row reaches XROW as NCOL typed values
** (VALS[0..NCOL-1], see pagedb_value) with the column NAMES, so a caller
** gets integers, reals, text and BLOBs as they are stored, NULL told apart
** from the text "NULL", and no value converted to text and back.  The
** arrays are valid only during the call.  A non-zero return from XROW
** stops and yields PAGEDB_ERROR.  Threads, processes and results: as
** pagedb_sql.
*/
PAGEDB_API int pagedb_sql_values(pagedb *db, const char *sql,
                                 int (*xrow)(void *ctx, int ncol, const pagedb_value *vals,
                                             const char *const *names),
                                 void *ctx);

/*
** Run SQL that changes values of INT and REAL fields of committed samples
** ("UPDATE sample SET label = 3 WHERE label = 7"): the one change to the
** catalog that cannot make it disagree with the data file.  An authorizer
** refuses anything else -- another table or column, INSERT, DELETE, schema
** or transaction statements -- when it is prepared, before anything runs.
** Whatever this handle's writers have written is committed first; then the
** statements run in one transaction, durable on return, and DB's reads see
** the new values at once.  No writer or reader may be open on DB, since the
** values would change under them.  *NCHANGED (if not NULL) receives the
** number of samples changed.
**
** Results: PAGEDB_OK; PAGEDB_READONLY (a read-only handle, or SQL that
** would change anything else: nothing changed); PAGEDB_MISMATCH (a value of
** the wrong type, e.g. TEXT for an INT field: nothing changed); PAGEDB_ERROR
** (an SQL error, with SQLite's message); PAGEDB_MISUSE (NULL arguments, a
** writer or reader open); PAGEDB_NOMEM; PAGEDB_IOERR*.
*/
PAGEDB_API int pagedb_sql_update(pagedb *db, const char *sql, int64_t *nchanged);

/*
** Keep tables of the application's own ("user tables") in the catalog: the
** class names of a label field, say,
**
**   CREATE TABLE classes(label INTEGER PRIMARY KEY, name TEXT NOT NULL);
**   INSERT INTO classes VALUES(0, 'cat'), (1, 'dog');
**
** which SQL (pagedb_sql) then joins with table sample.  A user table is
** any table whose name is not one of pagedb's objects (meta, field, page,
** sample, extent, sample_info, in any case) and does not begin with "sqlite_" or
** "pagedb_".  SQL may create, fill, change, index, alter and drop user
** tables and read anything (in a dataset of parts, table sample and the
** views extent and sample_info are the union that pagedb_sql reads: see
** pagedb_parts_commit); an authorizer refuses everything else when a
** statement is prepared, before anything runs: changes to pagedb's tables,
** views, triggers, virtual and temporary tables, PRAGMA, ATTACH and
** transaction statements.  Whatever this handle's writers wrote is
** committed first; then the statements run in one transaction, durable on
** return (nothing changes if one fails).  *NCHANGED (if not NULL)
** receives the rows the statements inserted, updated or deleted.
**
** User tables belong to the dataset: pagedb_open accepts a catalog that
** holds them and indexes on them (a view or trigger is still refused as
** PAGEDB_CORRUPT_CATALOG), pagedb_vacuum copies them into the new dataset
** (in place or INTO), pagedb_attach leaves them as they are (the attached
** dataset's are not copied).  Older pagedb versions refuse to open a
** catalog with user tables.
**
** Results: PAGEDB_OK; PAGEDB_READONLY (a read-only handle, or SQL the
** authorizer refuses: nothing changed); PAGEDB_CONSTRAINT (a constraint of
** a user table failed: nothing changed); PAGEDB_ERROR (an SQL error, with
** SQLite's message); PAGEDB_MISUSE (NULL arguments, a writer open);
** PAGEDB_BUSY; PAGEDB_NOMEM; PAGEDB_IOERR*.
*/
PAGEDB_API int pagedb_sql_user(pagedb *db, const char *sql, int64_t *nchanged);

/* Paths of the data file and of the catalog; owned by DB. */
PAGEDB_API const char *pagedb_path(pagedb *db);
PAGEDB_API const char *pagedb_catalog_path(pagedb *db);
/* The name of the VFS DB reads and writes through (chosen at pagedb_open:
** a URL's scheme, the VFS named, or the default); owned by the VFS.  NULL
** for a NULL DB or one whose open failed before a VFS was chosen. */
PAGEDB_API const char *pagedb_vfs_name(pagedb *db);

/* ------------------------------------------------------------------ */
/* Statistics                                                          */
/* ------------------------------------------------------------------ */

/*
** Where the bytes of a dataset go, as of its last commit (what a reader of
** the handle sees), filled in by pagedb_stats.  Every byte of the committed
** pages is counted in exactly one of five parts, so that
**
**   bytes_stored + bytes_dead + bytes_header + bytes_padding + bytes_waste
**       == pages * page_size
**
** holds exactly.  A run is one page, or the contiguous pages of a sample
** larger than a page; its used bytes are its 64-byte header and the
** records written after it.
*/
typedef struct pagedb_stat {
  int64_t pages;            /* committed pages */
  int64_t runs;             /* committed runs */
  int64_t multipage_runs;   /* ...of more than one page */
  int64_t samples;          /* committed samples */
  int64_t bytes_used;       /* sum of the runs' used bytes, headers included */
  int64_t bytes_stored;     /* sum of the live samples' stored extents */
  int64_t bytes_raw;        /* sum of their raw lengths (before compression) */
  int64_t bytes_dead;       /* stored bytes no live sample refers to (deleted
                            ** samples, awaiting a vacuum) */
  int64_t bytes_header;     /* 64 per run that holds data (a run given up
                            ** after a failed write has none) */
  int64_t bytes_waste;      /* pages * page_size - bytes_used: the unused
                            ** ends of runs */
  int64_t moved;            /* samples writers carried to a fresh page
                            ** because they did not fit, since the dataset
                            ** was created (recorded at each commit) */
  int64_t fill_hist[10];    /* runs by fill ratio used / (npages * page_size):
                            ** [0,10%), [10%,20%) ... [90%,100%] */
  int64_t io_reads;         /* this handle's read requests to its VFS since
                            ** open (each request of a batch counts) */
  int64_t io_read_bytes;    /* ...and their bytes (aligned ranges) */
  int64_t io_writes;        /* write calls, and their bytes (padding */
  int64_t io_write_bytes;   /* included) */
  int64_t io_syncs;         /* sync calls */
  int64_t bytes_padding;    /* zeros before the live samples' values, that
                            ** align them (pagedb_field_add_aligned); 0 in
                            ** a dataset whose fields all have alignment 1 */
} pagedb_stat;

/*
** Fill *OUT with the statistics of DB's committed state.  The counts come
** from the page table (one query) and the in-memory index (no SQL per
** sample): the cost is a pass over the runs and the samples, so call it
** from tools and tests, not per read.  Zero-copy reads touch the map, not
** the VFS, and are not in the io_ counters; the io_ counters of a read-only
** handle include its header read.  Thread-safe; commits wait for it.
**
** Results: PAGEDB_OK; PAGEDB_MISUSE (NULL argument, a handle whose open
** failed); PAGEDB_CORRUPT_CATALOG (the page table disagrees with the
** committed pages or the samples: *OUT is zeroed); PAGEDB_NOMEM;
** PAGEDB_IOERR_CATALOG.
*/
PAGEDB_API int pagedb_stats(pagedb *db, pagedb_stat *out);

/* The committed values of one field, filled in by pagedb_field_stats. */
typedef struct pagedb_field_stat {
  int64_t values;           /* samples with a value for the field */
  int64_t compressed;       /* ...stored compressed (BYTES/TEXT with a codec) */
  int64_t bytes_stored;     /* BYTES/TEXT: bytes the values take on disk */
  int64_t bytes_raw;        /* BYTES/TEXT: their lengths as given */
} pagedb_field_stat;

/*
** Fill *OUT with the statistics of field FIELD over DB's committed samples
** (one pass over the index, no SQL).  For an INT or REAL field only VALUES
** is non-zero.  Thread-safe.  Results: PAGEDB_OK; PAGEDB_RANGE (no such
** field); PAGEDB_MISUSE (NULL argument, a handle whose open failed).
*/
PAGEDB_API int pagedb_field_stats(pagedb *db, int field, pagedb_field_stat *out);

/* ------------------------------------------------------------------ */
/* Integrity                                                           */
/* ------------------------------------------------------------------ */

#define PAGEDB_CHECK_QUICK 0x01   /* skip checksums and decompression: structure only */

/*
** One problem pagedb_check found: where (PAGE, the first page of a run or
** the page a sample's row names; ID, a sample; FIELD, a field number; each
** -1 when the problem is not about one) and WHAT is wrong, in English, with
** what was expected and what was found.  WHAT is valid only during the call.
*/
typedef void (*pagedb_check_fn)(void *ctx, int64_t page, int64_t id, int field, const char *what);

/*
** Check the integrity of DB's committed state, as SQLite's PRAGMA
** integrity_check: every problem found is reported to CB (with CTX), and
** the check goes on after each.  It verifies that
**
**   - the data file's header and the catalog agree (uuid, page size,
**     format); meta.committed_pages is where the page table ends; the page
**     table is contiguous from page 0 and its rows possible; the file holds
**     every committed run's used bytes;
**   - every run header agrees with its page table row (magic, uuid, page
**     number, pages, samples, bytes used) and with its own checksum;
**   - every sample row has values of the right types; its record and every
**     extent lie inside the bytes its run uses and inside the file; no two
**     records overlap; each run's sample count is the number of records that
**     start in it; meta.samples is the number of sample rows;
**   - unless FLAGS has PAGEDB_CHECK_QUICK: every run's data matches the
**     checksum in its header, every extent the checksum in the catalog, and
**     every compressed extent decompresses to exactly its recorded length.
**
** The catalog is read as stored, in one read transaction of a connection of
** the check's own: rows that the open (and so the readers) would refuse are
** checked too, and commits made meanwhile are not seen.  Uncommitted pages
** and samples of a read-write handle are not looked at.  The data file is
** read through the VFS one run at a time: memory is the catalog's page table
** and the samples of one run, plus in full mode the largest run and the
** largest compressed value; in quick mode only each run's 64-byte header is
** read.  To check a dataset that pagedb_open refuses, open it with
** PAGEDB_OPEN_READONLY | PAGEDB_OPEN_CHECK.  A run read through a shared chunk
** cache (PAGEDB_IOCAP_UNTRUSTED) that fails any of these checksums is
** fetched again from the server (xRefetch) before it is judged: a chunk
** forged by another member of the cache's group is not reported, the
** dataset's own damage is.
**
** Thread-safe: it may run beside readers, writers and commits on DB, and
** beside other checks.  CB may be NULL (count only).  After the first
** PAGEDB_CHECK_MAX_REPORTS problems CB is called no more for single
** problems but once at the end, with PAGE, ID and FIELD -1, to say how many
** more were found.
**
** *NPROBLEMS (if not NULL) receives the number of problems found (0 unless
** the result is PAGEDB_CORRUPT).  Results: PAGEDB_OK (no problem);
** PAGEDB_CORRUPT (problems were found); PAGEDB_MISUSE (DB is NULL, a handle
** whose open failed, unknown FLAGS); and when the check itself could not
** run: PAGEDB_IOERR* (reading the data file or the catalog failed),
** PAGEDB_NOMEM, PAGEDB_BUSY (the catalog is locked); pagedb_errmsg says
** what failed.  A catalog whose SQLite file is itself damaged is a problem
** reported like the others, after which the check stops.
*/
#define PAGEDB_CHECK_MAX_REPORTS 1000
PAGEDB_API int pagedb_check(pagedb *db, int flags, pagedb_check_fn cb, void *ctx, int64_t *nproblems);

/* ------------------------------------------------------------------ */
/* The VFS: the storage backend under every file pagedb opens          */
/* ------------------------------------------------------------------ */

/*
** A VFS is a set of functions for opening files, and an open file is an
** object whose first member points to its methods, as in SQLite's
** sqlite3_vfs / sqlite3_io_methods.  A backend "subclasses" pagedb_file by
** embedding it first in a larger struct of szFile bytes, which pagedb
** allocates before calling xOpen.
**
** Every method returns a PAGEDB_* code.  xRead of a range that extends past
** the end of the file reads what exists, zero-fills the rest and returns
** PAGEDB_IOERR_SHORT_READ.  xWrite writes all N bytes or fails.  Offsets,
** lengths and buffers given to a file opened with PAGEDB_VFS_DIRECT must be
** multiples of xSectorSize() (and buffers aligned to it).  Methods may be
** called from several threads at once on one file, except xClose.
**
** The catalog's SQLite files (the database, its WAL, a rollback journal)
** are opened through the VFS too, read-write when possible, with no xLock,
** xMap, batches or asynchronous writes: a VFS that serves the data file
** serves them, unless its files report PAGEDB_IOCAP_DIRECT, in which case
** the catalog uses "posix" (SQLite's writes are unaligned).  A file that
** reports PAGEDB_IOCAP_IMMUTABLE (the remote VFSes) serves its catalog
** alone, read-only, as an SQLite "immutable" database: no locks, no -shm,
** no WAL.
*/
typedef struct pagedb_vfs pagedb_vfs;
typedef struct pagedb_file pagedb_file;
typedef struct pagedb_io_methods pagedb_io_methods;

struct pagedb_file {
  const pagedb_io_methods *pMethods;   /* NULL if xOpen failed */
};

/* A read request of a batch: the backend fills RC with the request's result. */
typedef struct pagedb_iovec {
  void *buf;
  size_t n;
  uint64_t off;
  int rc;
} pagedb_iovec;

/*
** An asynchronous write (xWriteStart, xWriteWait).  The caller owns the
** struct and fills BUF, N and OFF; the backend fills RC when the write has
** finished and may keep its own state in PPRIV until then.
*/
typedef struct pagedb_aio {
  const void *buf;
  size_t n;
  uint64_t off;
  int rc;
  void *pPriv;
} pagedb_aio;

/* Flags of xSync. */
#define PAGEDB_SYNC_DATA   0x01   /* data only (fdatasync) */
#define PAGEDB_SYNC_FULL   0x02   /* data and metadata (fsync) */

/* Lock levels of xLock. */
#define PAGEDB_LOCK_NONE       0
#define PAGEDB_LOCK_EXCLUSIVE  2   /* the dataset's single writer */

/* Hints of xAdvise. */
#define PAGEDB_ADVISE_NORMAL      0
#define PAGEDB_ADVISE_SEQUENTIAL  1
#define PAGEDB_ADVISE_RANDOM      2
#define PAGEDB_ADVISE_WILLNEED    3
#define PAGEDB_ADVISE_DONTNEED    4
#define PAGEDB_ADVISE_WRITEOUT    5   /* start writing the range's written bytes to
                                      ** storage now, so that a later xSync waits
                                      ** for less; durable only after that xSync.
                                      ** pagedb ignores a failure of this hint, so a
                                      ** backend may refuse it (PAGEDB_MISUSE).  The
                                      ** index's writer gives it (xAdvise only:
                                      ** pagedb_advise refuses it) */

/* xDeviceCharacteristics bits. */
#define PAGEDB_IOCAP_DIRECT        0x01  /* bypasses the page cache: align I/O */
#define PAGEDB_IOCAP_MMAP          0x02  /* xMap works */
#define PAGEDB_IOCAP_BATCH         0x04  /* xReadBatch submits requests together */
#define PAGEDB_IOCAP_ASYNC_WRITE   0x08  /* xWriteStart returns before the write ends */
#define PAGEDB_IOCAP_IMMUTABLE     0x10  /* read-only, never changes while open, and no
                                         ** local file: no locks, no shared memory (the
                                         ** catalog is opened as SQLite's "immutable") */
#define PAGEDB_IOCAP_UNTRUSTED     0x20  /* the bytes come through a place others can
                                         ** write (a shared chunk cache): every value read
                                         ** is checked against its checksum, and xRefetch
                                         ** is asked for the source's bytes on a mismatch */

struct pagedb_io_methods {
  int iVersion;                                  /* 1 to 7 */
  int (*xClose)(pagedb_file *);
  int (*xRead)(pagedb_file *, void *buf, size_t n, uint64_t off);
  int (*xWrite)(pagedb_file *, const void *buf, size_t n, uint64_t off);
  int (*xTruncate)(pagedb_file *, uint64_t size);
  int (*xSync)(pagedb_file *, int flags);
  int (*xFileSize)(pagedb_file *, uint64_t *size);
  int (*xLock)(pagedb_file *, int level);        /* non-blocking: PAGEDB_BUSY */
  int (*xSectorSize)(pagedb_file *);
  int (*xDeviceCharacteristics)(pagedb_file *);
  /* Map N bytes from offset 0 read-only and shared; *P receives the map.
  ** N may exceed the file size: bytes past the end must not be touched. */
  int (*xMap)(pagedb_file *, size_t n, const void **p);
  int (*xUnmap)(pagedb_file *, const void *p, size_t n);
  /* Read N requests; may submit them together.  Returns the first failure. */
  int (*xReadBatch)(pagedb_file *, pagedb_iovec *reqs, int n);
  int (*xAdvise)(pagedb_file *, uint64_t off, uint64_t n, int hint);
  /* errno of the most recent failure on this file, for messages. */
  int (*xLastErrno)(pagedb_file *);
  /*
  ** Version 2: asynchronous writes, so that a writer fills its next page
  ** while the previous one is in flight.  xWriteStart begins writing
  ** A->n bytes of A->buf at A->off (the xWrite contract) and may return
  ** before they are written; the buffer must not change until xWriteWait
  ** has reported A finished.  xWriteWait with WAIT 1 blocks until A is
  ** finished and returns A->rc; with WAIT 0 it returns PAGEDB_BUSY if A is
  ** still in flight.  Every started write must be waited for before the
  ** file is closed or A is reused; one thread at a time may wait for A.
  */
  int (*xWriteStart)(pagedb_file *, pagedb_aio *a);
  int (*xWriteWait)(pagedb_file *, pagedb_aio *a, int wait);
  /*
  ** Version 3: for backends whose errors errno cannot tell (the remote
  ** VFSes).  xErrmsg writes into BUF (N bytes) what the file's most recent
  ** failure was ("GET s3://b/x, bytes 0-4095: HTTP 503 after 6 attempts");
  ** pagedb puts it in pagedb_errmsg.  xMapFill, if not NULL, must be called
  ** before any byte of a map from xMap is touched: it makes the N ranges
  ** [OFF[i], OFF[i]+LEN[i]) of MAP readable (a backend whose xMap reserves
  ** address space fills it on demand); their bytes then stay valid until
  ** xUnmap.  NULL means every byte of a map is readable at once.
  */
  int (*xErrmsg)(pagedb_file *, char *buf, size_t n);
  int (*xMapFill)(pagedb_file *, const void *map, const uint64_t *off, const uint64_t *len, int n);
  /*
  ** Version 4: reads in place, for backends that hold the bytes in memory
  ** of their own (the remote VFSes' chunk cache), so that a copy-mode
  ** read-ahead need not copy them.  xHold makes the bytes of the N ranges
  ** [OFF[i], OFF[i]+LEN[i]) readable at OUT[i], or sets OUT[i] to NULL
  ** for a range it cannot give in place (one that spans two of its
  ** chunks: the caller reads those with xRead or xReadBatch), and puts in
  ** *HOLD a handle that keeps every OUT[i] valid until xRelease(HOLD).  On
  ** failure nothing is held and *HOLD is NULL.  Either may be NULL: no
  ** reads in place.
  */
  int (*xHold)(pagedb_file *, const uint64_t *off, const uint64_t *len, int n, const void **out, void **hold);
  void (*xRelease)(pagedb_file *, void *hold);
  /*
  ** Version 5: for a file that reports PAGEDB_IOCAP_UNTRUSTED (the remote
  ** VFSes over a shared chunk cache), whose bytes someone else may have
  ** written.  pagedb checks every value it reads from such a file against
  ** the checksum the dataset's index holds for it; on a mismatch it calls
  ** xRefetch for the value's range: the backend drops what it holds of
  ** [OFF, OFF+LEN) from the untrusted place and fetches it again from its
  ** source (the server, over the authenticated connection), then writes
  ** the new bytes over every copy of them the file has handed out --
  ** pointers from xMap/xMapFill and xHold -- in place: those pointers
  ** stay valid and keep their addresses, and bytes that were right do not
  ** change under them.  pagedb then reads and checks the value again;
  ** only if the source's bytes fail too is the read PAGEDB_CORRUPT.
  ** Returns PAGEDB_OK, or the fetch's failure (xErrmsg says which).
  ** NULL (or iVersion below 5): the bytes cannot be fetched again.
  */
  int (*xRefetch)(pagedb_file *, uint64_t off, uint64_t len);
  /*
  ** Version 6: a map that starts inside the file.  xMapAt maps N bytes from
  ** file offset OFF, read-only and shared, as xMap does from offset 0; OFF
  ** is a multiple of the system's page size (sysconf(_SC_PAGESIZE)), N may
  ** run past the end of the file (bytes there must not be touched), and the
  ** map is given back with xUnmap(P, N).  pagedb asks it only of a file
  ** without xMapFill, for a part's data region (doc/format.md, "Parts"): a
  ** map of the region alone, without the header and padding before it,
  ** lets many parts' maps lie side by side under shared page tables.  NULL
  ** (or iVersion below 6): pagedb maps from offset 0 with xMap.
  */
  int (*xMapAt)(pagedb_file *, uint64_t off, size_t n, const void **p);
  /*
  ** Version 7: a file read only through its maps from now on.  xDetach
  ** gives up what the backend holds open for the file (its descriptor)
  ** while every map it gave stays valid and readable; after it pagedb
  ** calls only xUnmap and xClose on the file.  pagedb asks it of a file it
  ** has mapped whole and keeps mapped until the close: a part's index
  ** file that the dataset's index references (doc/format.md, "Parts'
  ** chunks by reference"), and a part's data file a zero-copy reader
  ** mapped (reads of it that need a descriptor open the file again), so
  ** that a reader that touched many parts holds a map of each, not a
  ** descriptor (the bound on open parts, PAGEDB_CONFIG_PARTS_OPEN, then
  ** bounds its descriptors).  NULL (or iVersion below 7): the descriptor
  ** stays open until xClose.
  */
  int (*xDetach)(pagedb_file *);
};

/* xOpen flags. */
#define PAGEDB_VFS_READONLY   0x01
#define PAGEDB_VFS_READWRITE  0x02
#define PAGEDB_VFS_CREATE     0x04
#define PAGEDB_VFS_EXCLUSIVE  0x08   /* with CREATE: fail if it exists */
#define PAGEDB_VFS_DIRECT     0x10   /* bypass the page cache if the backend can */
#define PAGEDB_VFS_PLAIN      0x20   /* through the page cache, with no batches or asynchronous
                                     ** writes to set up, whatever the backend's default (the
                                     ** index file: small unaligned writes, read through a map);
                                     ** a backend may ignore it */

/* A system call as xGetSystemCall gives it: cast to and from its real type. */
typedef void (*pagedb_syscall_ptr)(void);

struct pagedb_vfs {
  int iVersion;            /* 1 to 3 */
  int szFile;              /* size of the backend's subclass of pagedb_file */
  const char *zName;       /* unique name, e.g. "posix" */
  pagedb_vfs *pNext;       /* used by the registry; do not touch */
  void *pAppData;          /* the backend's own */
  /* Open PATH into FILE (szFile bytes, zeroed).  On failure FILE->pMethods
  ** stays NULL and the result says why (PAGEDB_CANTOPEN_NOENT, ...). */
  int (*xOpen)(pagedb_vfs *, const char *path, pagedb_file *file, int flags);
  int (*xDelete)(pagedb_vfs *, const char *path, int syncDir);
  /* *EXISTS receives 1 if PATH exists.  A backend that cannot tell (a
  ** remote server's failure) returns an error code: pagedb_open then fails
  ** with it. */
  int (*xAccess)(pagedb_vfs *, const char *path, int *exists);
  /* fsync the directory that holds PATH, after creating or renaming it. */
  int (*xSyncDir)(pagedb_vfs *, const char *path);
  /*
  ** Version 2: the system calls under the backend, by name, replaceable
  ** for testing as SQLite's xSetSystemCall: a test puts its own pread in
  ** place to return EINTR or move fewer bytes than asked, and checks that
  ** the backend retries.  xSetSystemCall(NAME, P) puts P in place of NAME's
  ** call (P NULL: the original again; NAME NULL: every original again):
  ** PAGEDB_OK, or PAGEDB_NOTFOUND if the backend has no call NAME.
  ** xGetSystemCall gives NAME's call now (NULL if none); xNextSystemCall
  ** the name after NAME (NULL: the first), NULL after the last.  Not
  ** thread-safe: replace calls only while no file of the backend does I/O.
  ** The built-in posix, io_uring and direct VFSes share one set:
  ** "open" (int (*)(const char *, int, mode_t)), "pread", "pwrite",
  ** "ftruncate", "fsync", "fdatasync" (the libc prototypes).
  */
  int (*xSetSystemCall)(pagedb_vfs *, const char *zName, pagedb_syscall_ptr p);
  pagedb_syscall_ptr (*xGetSystemCall)(pagedb_vfs *, const char *zName);
  const char *(*xNextSystemCall)(pagedb_vfs *, const char *zName);
  /*
  ** Version 3: a hint, before pagedb_open asks xAccess and xOpen about the
  ** N files of a dataset (PATHS: the data file, NAME-catalog, NAME.vacuum,
  ** NAME-index), that it is about to.  A backend whose every question is a
  ** round trip (the remote VFSes: a HEAD request each) may ask about them
  ** all at once and keep the answers for the questions that follow, for
  ** a moment (the remote VFSes: 2 s).  It returns nothing: an answer it
  ** could not get is asked again by the question itself, which reports
  ** the failure.  NULL (or iVersion below 3): no hint.
  */
  void (*xAccessAhead)(pagedb_vfs *, const char *const *paths, int n);
};

/*
** Register VFS under its zName (replacing one of the same name) and, if
** MAKEDFLT, make it the default.  The struct must outlive its registration.
** Thread-safe.  Results: PAGEDB_OK; PAGEDB_MISUSE (NULL, no name, iVersion
** below 1).
*/
PAGEDB_API int pagedb_vfs_register(pagedb_vfs *vfs, int makeDflt);
PAGEDB_API int pagedb_vfs_unregister(pagedb_vfs *vfs);

/* The VFS named NAME, or the default for NULL; NULL if none.  Thread-safe. */
PAGEDB_API pagedb_vfs *pagedb_vfs_find(const char *name);

/* The registered VFSes in turn: pagedb_vfs_next(NULL) is the default, and
** NULL follows the last.  Thread-safe, but a VFS registered or unregistered
** meanwhile may be missed. */
PAGEDB_API pagedb_vfs *pagedb_vfs_next(pagedb_vfs *prev);

/*
** Whether VFS works here, for files in directory DIR (NULL: the current
** directory): it creates a small file there, writes, syncs and reads it
** back, and deletes it.  On failure WHY (CAP bytes, may be NULL) receives
** the reason ("io_uring: Operation not permitted", "the file system
** refuses O_DIRECT", ...).  Results: PAGEDB_OK, or the failing step's code.
*/
PAGEDB_API int pagedb_vfs_check(pagedb_vfs *vfs, const char *dir, char *why, size_t cap);

/*
** REMOTE DATASETS (built when configure finds libcurl; --without-curl
** leaves them out).  A path "http://HOST[:PORT]/PATH", "https://..." or
** "s3://BUCKET/KEY" is opened by the VFS of that name ("http", "https",
** "s3"), which pagedb_open chooses by the scheme (see there); its catalog
** is the object PATH-catalog beside it.  Remote datasets are read-only:
** open them with PAGEDB_OPEN_READONLY (a write open fails with
** PAGEDB_READONLY).  Every read API works on them unchanged, in both read
** modes.
**
** Settings.  Each has a pagedb_config option and an environment variable;
** the option, once set, wins over the variable, which wins over the
** default.  Both are read at each open of a remote dataset (and by each
** pagedb_push and pagedb_pull): a handle keeps what it read at its open.
**
**   s3://   credentials in the AWS tools' order: PAGEDB_CONFIG_S3_ACCESS_KEY_ID
**           and _SECRET_ACCESS_KEY (+ _SESSION_TOKEN); AWS_ACCESS_KEY_ID
**           and AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); the profile
**           (PAGEDB_CONFIG_S3_PROFILE, AWS_PROFILE, default "default") of
**           the shared credentials and config files
**           (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE, default
**           ~/.aws/credentials and ~/.aws/config); the container's
**           credentials service (AWS_CONTAINER_CREDENTIALS_FULL_URI or
**           _RELATIVE_URI); the instance metadata service (IMDSv2 at
**           AWS_EC2_METADATA_SERVICE_ENDPOINT, default 169.254.169.254,
**           one second at most; off with AWS_EC2_METADATA_DISABLED=true).
**           Credentials of the two services are fetched again before
**           they expire.  The region (PAGEDB_CONFIG_S3_REGION, AWS_REGION,
**           AWS_DEFAULT_REGION, the profile's region; default us-east-1)
**           and endpoint (PAGEDB_CONFIG_S3_ENDPOINT, AWS_ENDPOINT_URL_S3,
**           AWS_ENDPOINT_URL, the profile's endpoint_url: an S3-compatible
**           store, addressed path-style ENDPOINT/BUCKET/KEY; unset or "":
**           AWS itself).  Requests are signed with AWS Signature V4.  No
**           message, stat or setting read back holds a secret key, a
**           session token or a signature.
**   https   the server's certificate is always verified (peer and host
**           name), against the CA bundle PAGEDB_CONFIG_CA_BUNDLE, else
**           CURL_CA_BUNDLE, else SSL_CERT_FILE (a PEM file, as the curl
**           tool reads them), else the system's store.  A certificate that
**           does not verify fails the open with PAGEDB_CANTOPEN and a
**           message naming the TLS error; there is no insecure mode.
**   cache   PAGEDB_CONFIG_CACHE_DIR / PAGEDB_CACHE_DIR (default
**           $XDG_CACHE_HOME/pagedb, else $HOME/.cache/pagedb),
**           PAGEDB_CONFIG_CACHE_BYTES / PAGEDB_CACHE_BYTES (its bound,
**           default 4G), PAGEDB_CONFIG_CACHE_CHUNK / PAGEDB_CACHE_CHUNK
**           (the chunk size, a power of two from 64K to 64M, default 1M).
**           Bytes are fetched in chunks, kept in files every process of
**           the machine shares (one fetch per chunk per machine), checked
**           against a checksum whenever a process first uses them, and
**           evicted least recently used beyond the bound; a chunk in use
**           is never evicted.  The cache is the user's own: its
**           directory must be owned by the user and writable by nobody
**           else (else the open fails with PAGEDB_CANTOPEN saying why);
**           directories are made 0700, files 0600, and no symbolic link
**           in it is followed.
** shared cache  PAGEDB_CONFIG_CACHE_SHARED / PAGEDB_CACHE_SHARED=1: the
**           cache directory is shared by the users of a group, who then
**           fetch each chunk once per machine between them.  It must exist
**           and be a directory owned by root or by the user, set-group-ID,
**           not writable by others, of a group the user is in (mkdir DIR;
**           chgrp GROUP DIR; chmod 2770 DIR); else the open fails with
**           PAGEDB_CANTOPEN saying which rule failed.  Nothing in it is
**           trusted: each chunk is sealed (AES-256-GCM) with a key derived
**           from the object's first 64 KiB, its URL, ETag and size, fetched
**           over the dataset's own connection at each open, and named by a
**           keyed hash; a chunk whose seal does not verify is rejected
**           (chunk_bad and chunk_forged), removed and fetched again.  So a
**           user who cannot read the dataset can neither read its bytes in
**           the cache, nor tell which bucket or key a chunk is of, nor
**           plant one; what the cache does show (sizes, counts, times) is
**           listed in doc/remote.md.  The plaintext of a shared chunk is
**           held in private memory (no zero-copy mapping of the file).
**           A user who can read the dataset can seal chunks too, so the
**           dataset's own checksums decide: its index and catalog are
**           never read through the shared directory (fetched over the
**           connection at each open and held in the process's memory),
**           its data files report PAGEDB_IOCAP_UNTRUSTED, and every value
**           read is verified against its XXH3-64 in the index, in every
**           read mode, as with PAGEDB_READ_VERIFY; a value that fails has
**           its chunks fetched again from the server (xRefetch: counted
**           in chunk_bad and chunk_forged when the cached bytes differed)
**           and is read again; if the server's bytes fail too the read is
**           PAGEDB_CORRUPT.  XXH3 is not cryptographic: a reader of the
**           dataset able to craft XXH3-64 collisions could still pass.
**   network PAGEDB_CONFIG_REMOTE_TIMEOUT / PAGEDB_REMOTE_TIMEOUT_MS (one
**           request attempt, milliseconds, 100..3600000, default 30000),
**           PAGEDB_CONFIG_REMOTE_RETRIES / PAGEDB_REMOTE_RETRIES (0..100,
**           default 5: 5xx, 408, 429, resets, timeouts and truncated bodies
**           are retried with backoff), PAGEDB_CONFIG_REMOTE_CONNECTIONS /
**           PAGEDB_REMOTE_CONNECTIONS (requests in flight per batch, 1..64,
**           default 16).
**   push    PAGEDB_CONFIG_PUSH_PART_BYTES / PAGEDB_PUSH_PART_BYTES (S3
**           multipart part size, 5M..5G, default 32M),
**           PAGEDB_CONFIG_PUSH_PARALLEL / PAGEDB_PUSH_PARALLEL (parts in
**           flight at once, 1..16, default 4).
** Sizes in the environment are digits with an optional K, M or G suffix
** (powers of 1024).  An environment value that is not a number in range
** fails the open (or push, or pull) with PAGEDB_CANTOPEN and a message
** naming the variable: never silently the default.
**
** Errors: at open, PAGEDB_CANTOPEN_NOENT (HTTP 404: no such bucket, key or
** file), PAGEDB_CANTOPEN (403, missing credentials, unreachable server, a
** TLS certificate that does not verify, a cache directory that cannot be
** used, a bad setting in the environment), PAGEDB_READONLY; on a read,
** PAGEDB_IOERR_REMOTE (the retry budget spent, or a permanent error: the
** message names the URL, the byte range and the HTTP status) and
** PAGEDB_IOERR_CHANGED (the object is not the version opened: its ETag
** was pinned at open).  Never bytes of another version or a short body.
** See doc/remote.md.
*/
typedef struct pagedb_remote_counters {
  int64_t requests;       /* ranged GETs that delivered their bytes */
  int64_t bytes;          /* bytes they delivered */
  int64_t retries;        /* attempts repeated after a transient failure */
  int64_t failures;       /* requests that failed for good */
  int64_t chunk_fetches;  /* chunks this process fetched into the cache */
  int64_t chunk_hits;     /* chunks it found in the cache, verified */
  int64_t chunk_bad;      /* cached chunks it rejected (damaged, truncated, foreign) */
  int64_t evictions;      /* chunk files it evicted to keep the bound */
  int64_t uncached;       /* chunks it held in memory: the cache had no room */
  int64_t cred_refreshes; /* S3 credentials of a metadata service fetched again
                          ** before they expired (issue 30) */
  int64_t cred_refresh_failures; /* such fetches that failed (the credentials held
                          ** are kept and the fetch is tried again 10 s later) */
  int64_t chunk_forged;   /* of chunk_bad, chunks of a shared cache whose seal did
                          ** not verify (planted, altered or damaged by anyone),
                          ** or whose seal did but whose bytes failed the
                          ** dataset's checksums and differed from the server's
                          ** (sealed by a reader of the dataset); each removed
                          ** or replaced where it could be and fetched again
                          ** (issue 30; last, so the fields before keep their places) */
} pagedb_remote_counters;

/* This process's remote counters since it started (all zero without
** remote support).  Thread-safe.  PAGEDB_OK; PAGEDB_MISUSE if OUT is NULL. */
PAGEDB_API int pagedb_remote_stats(pagedb_remote_counters *out);

/*
** MEMORY
**
** Every byte pagedb holds comes from one of two places, both counted in
** pagedb_memory_used():
**   - the general allocator, for handles, catalog rows, indexes and all of
**     SQLite's memory (pagedb routes SQLite's allocator through its own when
**     it initializes first; see pagedb_initialize);
**   - the page-buffer pool, for page and I/O buffers: power-of-two size
**     classes from 64 KiB to 1 GiB, 4 KiB-aligned (ready for O_DIRECT),
**     classes of 2 MiB and more 2 MiB-aligned and advised MADV_HUGEPAGE.
**     Freed buffers stay cached in their class for reuse until trimmed;
**     each thread keeps the last two it freed of each class for itself (no
**     lock to reuse them), and gives them to the others when it exits.
**
** Configuration (pagedb_config) happens before the library is first used
** or after pagedb_shutdown(); every other call here is thread-safe.
*/

/*
** A general allocator, as sqlite3_mem_methods.  xMalloc(n) returns memory
** aligned to 16 bytes, or NULL; xSize(p) the usable size of a block from
** xMalloc or xRealloc (at least what was asked); xRealloc(p, n) with p
** never NULL and n never 0.  xInit is called by pagedb_initialize and
** xShutdown by pagedb_shutdown, with pAppData; either may be NULL.
*/
typedef struct pagedb_mem_methods pagedb_mem_methods;
struct pagedb_mem_methods {
  void *(*xMalloc)(size_t n);
  void (*xFree)(void *p);
  void *(*xRealloc)(void *p, size_t n);
  size_t (*xSize)(void *p);
  int (*xInit)(void *pAppData);
  void (*xShutdown)(void *pAppData);
  void *pAppData;
};

/*
** Where the pool gets its buffers: xAlloc(pAppData, n) returns N bytes
** aligned to ALIGN (4096, or 2 MiB for n >= 2 MiB) or NULL; xFree(pAppData,
** p, n) gives them back.  Memory an embedder supplies this way (CUDA's
** cudaHostAlloc, say) is treated as pinned when PINNED is 1: it is never
** mlock()ed again and never trimmed.  The default maps anonymous memory.
*/
typedef struct pagedb_pool_methods pagedb_pool_methods;
struct pagedb_pool_methods {
  int iVersion;                 /* 1 */
  void *(*xAlloc)(void *pAppData, size_t n, size_t align);
  void (*xFree)(void *pAppData, void *p, size_t n);
  void *pAppData;
  int pinned;
};

/* pagedb_config() operations and their arguments. */
#define PAGEDB_CONFIG_MALLOC     1  /* const pagedb_mem_methods *: copied */
#define PAGEDB_CONFIG_GETMALLOC  2  /* pagedb_mem_methods *: receives the current ones */
#define PAGEDB_CONFIG_HEAP       3  /* void *arena, size_t bytes, size_t min_block:
                                    ** serve general allocations from ARENA with a
                                    ** buddy allocator (NULL arena: back to malloc) */
#define PAGEDB_CONFIG_MEMLIMIT   4  /* int64_t bytes: soft limit on all memory
                                    ** (0: none; may be set at any time) */
#define PAGEDB_CONFIG_POOL       5  /* const pagedb_pool_methods *: copied (NULL:
                                    ** the default) */
#define PAGEDB_CONFIG_GETPOOL    6  /* pagedb_pool_methods *: receives the current ones */
/*
** Settings of remote datasets (see REMOTE DATASETS above for what each
** means and its environment variable).  They may be set at any time, from
** any thread; each open of a remote dataset (and each push and pull) reads
** them then, so a handle already open keeps its own.  A value set wins over
** the environment; a string NULL or a number -1 forgets it (the
** environment, else the default, applies again).  Strings are copied;
** numbers are passed as int64_t (cast a literal: (int64_t)1 << 30).
** A bad value (out of the range given, not a power of two for the chunk,
** an empty directory or region, a string of 4096 bytes or more) is
** PAGEDB_MISUSE and leaves the setting as it was (a cache directory of
** 3072 bytes or more is accepted here but fails the open, as from the
** environment).  Accepted in a build without remote datasets too (they
** then have no effect).
*/
#define PAGEDB_CONFIG_CACHE_DIR       7  /* const char *: the chunk cache's directory */
#define PAGEDB_CONFIG_CACHE_BYTES     8  /* int64_t: the cache's bound, >= 1 */
#define PAGEDB_CONFIG_CACHE_CHUNK     9  /* int64_t: chunk size, 2^16..2^26, a power of two */
#define PAGEDB_CONFIG_REMOTE_TIMEOUT 10  /* int64_t: ms per request attempt, 100..3600000 */
#define PAGEDB_CONFIG_REMOTE_RETRIES 11  /* int64_t: retries of a transient failure, 0..100 */
#define PAGEDB_CONFIG_REMOTE_CONNECTIONS 12 /* int64_t: requests in flight per batch, 1..64 */
#define PAGEDB_CONFIG_S3_ENDPOINT    13  /* const char *: an S3-compatible endpoint URL ("": AWS) */
#define PAGEDB_CONFIG_S3_REGION      14  /* const char *: the signing region */
#define PAGEDB_CONFIG_CA_BUNDLE      15  /* const char *: PEM file of CAs for https ("": the
                                         ** system's store) */
#define PAGEDB_CONFIG_PUSH_PART_BYTES 16 /* int64_t: multipart part size, 5 MiB..5 GiB */
#define PAGEDB_CONFIG_PUSH_PARALLEL  17  /* int64_t: parts uploaded at once, 1..16 */
/*
** int op, char *buf, size_t cap, const char **source: the value setting OP
** (7..17, 19..23) has for the next open, as text (numbers in decimal bytes or
** units, strings as they are, "" for an unset string: the built-in
** behaviour), into BUF (CAP bytes; cut short to fit), and where it comes
** from into *SOURCE (if SOURCE is not NULL): "pagedb_config", the name of
** the environment variable, or "default".  PAGEDB_MISUSE for another OP or
** a NULL BUF; PAGEDB_CANTOPEN when the environment holds a bad value (BUF
** then says which and why), as the next open would fail.
*/
#define PAGEDB_CONFIG_GETREMOTE      18
/*
** S3 credentials (issue 30), the first place they are looked for: the
** access key id and secret key are used when both are set (one without
** the other fails the next S3 open with PAGEDB_CANTOPEN), the session
** token with them.  GETREMOTE gives the key id back, but of the secret key
** and the token only "(set)" or "": pagedb never hands a secret out.  The
** profile (default AWS_PROFILE, else AWS_DEFAULT_PROFILE, else "default")
** names the section of the AWS credentials and config files read when
** neither these options nor the environment give keys.
*/
#define PAGEDB_CONFIG_S3_ACCESS_KEY_ID     19  /* const char * */
#define PAGEDB_CONFIG_S3_SECRET_ACCESS_KEY 20  /* const char * */
#define PAGEDB_CONFIG_S3_SESSION_TOKEN     21  /* const char * */
#define PAGEDB_CONFIG_S3_PROFILE           22  /* const char *: the AWS profile's name */
/*
** int64_t 0 or 1 (issue 30; environment PAGEDB_CACHE_SHARED, default 0): 1
** makes the cache directory a cache shared by several users of the machine
** (see REMOTE DATASETS, "shared cache").
*/
#define PAGEDB_CONFIG_CACHE_SHARED         23
/*
** int64_t ms, 0..86400000: how long a read-write pagedb_open waits for the
** write lock another handle holds (see pagedb_open); -1 forgets it (the
** environment's PAGEDB_BUSY_TIMEOUT, else 0, applies again).  Process-wide;
** may be set at any time, from any thread; each open reads it.  Another
** value is PAGEDB_MISUSE and leaves the setting as it was.
*/
#define PAGEDB_CONFIG_BUSY_TIMEOUT         24
/*
** int64_t n, 1..1000000 (issue 26; environment PAGEDB_PARTS_OPEN, default
** 256): how many parts' data files a handle keeps open for copy-mode reads
** (PAGEDB_READ_COPY), pagedb_check and pagedb_attach.  Past it, opening one
** more closes the one least recently used (a clock), and a later read of
** that part opens and checks its file again.  A part a zero-copy reader
** (PAGEDB_READ_MMAP) touched stays mapped until pagedb_close, since the
** pointers into it live that long, but its descriptor is given up once it
** is mapped (a VFS of version 7: xDetach), and a later copy-mode read of
** it opens its file again within the bound; with a VFS that cannot, or
** that fills its maps on demand, the part is not counted and its file
** stays open.
** A reader of more parts than the process may map (Linux:
** vm.max_map_count, 65,530 by default) or open (ulimit -n) fails those
** reads with an error saying so (PAGEDB_NOMEM, PAGEDB_CANTOPEN...), never a
** crash.  -1 forgets the
** setting (the environment's, else 256, applies again).  Process-wide; may
** be set at any time; a handle reads it when it first reads a part.  Another
** value is PAGEDB_MISUSE and leaves the setting as it was.
*/
#define PAGEDB_CONFIG_PARTS_OPEN           25
/*
** int64_t bytes, 0..1048576 (issue 26; environment PAGEDB_PARTS_COPY,
** default 16384): a local part whose data region (the bytes its committed
** runs use) is at most this many bytes is copied whole into the handle's
** memory the first time a zero-copy reader (PAGEDB_READ_MMAP) touches it,
** instead of mapped: zero-copy pointers into it then point into that copy,
** which lives, unchanged, until pagedb_close as a map would.  Small parts
** then cost no map, and no descriptor once the bound above closes their
** file, and their samples lie side by side in memory (random reads of
** many small parts no longer touch a page of a map per part).  At most 256
** MiB a handle are so copied; parts past that are mapped.  0: every part is
** mapped.  -1 forgets the setting (the environment's, else 16384, applies
** again).  Process-wide; a handle reads it when a zero-copy read first
** touches a part.  Another value is PAGEDB_MISUSE and leaves the setting as
** it was.
*/
#define PAGEDB_CONFIG_PARTS_COPY           26

/*
** Configure the library.  Results: PAGEDB_OK; PAGEDB_MISUSE (an unknown
** op, a bad argument, or an allocator or pool op (1..6 but MEMLIMIT) while
** the library is initialized: MEMLIMIT, the remote settings (7..23) and
** the busy timeout (24), the bound on open parts (25) and the copy of small parts (26) may be used at
** any time); PAGEDB_NOMEM
** (PAGEDB_CONFIG_HEAP: an arena too small to hold its own bookkeeping and
** one block); PAGEDB_CANTOPEN
** (GETREMOTE: see there).
*/
PAGEDB_API int pagedb_config(int op, ...);

/*
** Set up the allocator and the pool.  Called by every pagedb_open and by
** pagedb_malloc and pagedb_pool_alloc; calling it first is never needed.
** If SQLite has not been initialized yet in this process, pagedb installs
** its allocator as SQLite's (SQLITE_CONFIG_MALLOC) so that the catalog's
** memory is counted and bounded too; if it has, SQLite keeps its own
** allocator and its memory is not counted.  Results: PAGEDB_OK, or what
** xInit returned.
*/
PAGEDB_API int pagedb_initialize(void);

/*
** Undo pagedb_initialize: empty the pool and call xShutdown, so that
** pagedb_config may be called again.  Every handle must be closed and every
** pool buffer freed first.  Results: PAGEDB_OK; PAGEDB_MISUSE (a handle is
** open or a buffer is still allocated: nothing is shut down).
*/
PAGEDB_API int pagedb_shutdown(void);

/*
** The general allocator, for memory an embedder wants counted with
** pagedb's.  pagedb_malloc(0) returns NULL.  pagedb_free(NULL) is a no-op;
** freeing a block twice, or one not from pagedb_malloc, returns
** PAGEDB_MISUSE and changes nothing when the allocator can tell (the buddy
** heap always can; a debug build's malloc wrapper usually can).
*/
PAGEDB_API void *pagedb_malloc(size_t n);
PAGEDB_API void *pagedb_realloc(void *p, size_t n);
PAGEDB_API int pagedb_free(void *p);
PAGEDB_API size_t pagedb_msize(void *p);

/*
** A buffer of at least N bytes from the page-buffer pool (its class: the
** next power of two of at least 64 KiB; above 1 GiB, N rounded up to 2 MiB,
** a buffer of its own that is never cached), or NULL (N is 0, the memory
** limit, or the system).  *CAP, if not NULL, receives the usable size.  pagedb_pool_free returns PAGEDB_MISUSE, changing nothing, for a
** pointer the pool did not hand out or has already taken back.
*/
PAGEDB_API void *pagedb_pool_alloc(size_t n, size_t *cap);
PAGEDB_API int pagedb_pool_free(void *p);

/*
** Pinned mode on (1) or off (0): buffers the pool allocates from now on are
** mlock()ed and never trimmed; earlier ones keep their state.  Returns the
** previous mode.  mlock() failing (RLIMIT_MEMLOCK) makes the allocation fail
** with PAGEDB_NOMEM rather than hand out an unpinned buffer.
*/
PAGEDB_API int pagedb_pool_pin(int on);

/*
** Give cached pool buffers (not pinned ones) back to the system until at
** least N bytes are released, or all are.  Returns the bytes released.
*/
PAGEDB_API size_t pagedb_release_memory(size_t n);

/*
** Bytes pagedb holds now (general allocations at their usable size, pool
** buffers in use or cached at their class size), and the most it has held
** since the start or the last reset.  Exact: after every handle is closed
** and every buffer freed, used returns to its value before they existed.
** The counts are kept per thread and summed when read: exact whenever no
** allocation is in progress; the high-water mark is exact while one thread
** at a time allocates since the reset, and with several an upper bound
** (their peaks summed, whether or not they came together).
*/
PAGEDB_API int64_t pagedb_memory_used(void);
PAGEDB_API int64_t pagedb_memory_highwater(int reset);

/*
** Counters of pagedb_status(): *CUR the value now, *HIGH its high-water
** mark.  MEMORY_USED and MALLOC_COUNT are as pagedb_memory_used says
** (per-thread counts, summed: a high-water mark with several threads
** allocating is an upper bound).  POOL_USED and POOL_CACHED are sums of
** per-thread counts: exact whenever no pool call is in progress; their
** high-water marks are exact while one thread at a time uses the pool, and
** with several may miss a moment when all were at their peaks together.
*/
#define PAGEDB_STATUS_MEMORY_USED   1  /* as pagedb_memory_used */
#define PAGEDB_STATUS_MALLOC_COUNT  2  /* general allocations outstanding */
#define PAGEDB_STATUS_POOL_USED     3  /* bytes of pool buffers handed out */
#define PAGEDB_STATUS_POOL_CACHED   4  /* bytes of freed pool buffers kept for reuse */
#define PAGEDB_STATUS_POOL_PINNED   5  /* bytes of pinned pool buffers, in use or cached */
#define PAGEDB_STATUS_HEAP_FREE     6  /* buddy heap: free bytes (HIGH: the largest
                                       ** free block) */

/*
** Read counter OP; with RESET, its high-water mark restarts from its
** current value.  Results: PAGEDB_OK; PAGEDB_MISUSE (unknown op, NULL out).
*/
PAGEDB_API int pagedb_status(int op, int64_t *cur, int64_t *high, int reset);

#ifdef __cplusplus
}
#endif
#endif /* PAGEDB_H */
