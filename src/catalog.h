/*
** catalog.h -- the SQLite database beside the data file that records the
** schema, the committed pages and every committed sample.  Its tables are
** documented in doc/catalog.md.
*/
#ifndef PAGEDB_CATALOG_H
#define PAGEDB_CATALOG_H

#include "pagedbInt.h"
#include "pager.h"
#include "tensor.h"

typedef struct Catalog Catalog;

typedef struct CatField {
  char name[PAGEDB_MAX_NAME + 1];
  int type;                 /* PAGEDB_BYTES ... PAGEDB_REAL */
  int codec;
  int align;                /* its values' alignment, 1..PAGEDB_MAX_ALIGN (1 for INT, REAL) */
  TensorDecl tensor;        /* PAGEDB_TENSOR: its declaration (else zeros) */
} CatField;

/* Whether fields of TYPE are stored in pages (BYTES, TEXT, TENSOR), not in
** the catalog (INT, REAL). */
static inline int cat_type_stored(int type) {
  return type == PAGEDB_BYTES || type == PAGEDB_TEXT || type == PAGEDB_TENSOR;
}

typedef struct CatMeta {
  uint8_t uuid[16];
  uint32_t page_size;
  uint32_t format;          /* 2, or 3 when features is not 0 (load_meta checks) */
  uint64_t features;        /* CAT_FEATURE_* bits in use: meta.features (0 when absent) */
  uint64_t committed;       /* committed pages */
  uint64_t nsample;         /* committed samples */
  uint64_t moved;           /* moved_samples: samples writers carried to a fresh
                            ** page (0 when the key is absent) */
  /* The persistent index (dindex.h) this commit is indexed by: meta keys
  ** index_id, index_dir, index_len, index_samples, index_pages; all 0
  ** when absent (a dataset of the previous format, or made stale). */
  uint64_t ix_id, ix_dir, ix_len, ix_samples, ix_pages;
  int64_t parts;            /* meta.parts (doc/format.md, "Parts"): -1 when absent */
  uint64_t deleted_bytes;
  char index_file[256];     /* meta.index_file (a remote commit's index object): "" when absent */
} CatMeta;

/*
** Feature bits (doc/format.md, "Versions and compatibility"): meta.features
** of a format-3 catalog says which features the dataset uses.  A catalog
** whose features are 0 is format 2 without the key, byte for byte what a
** pagedb before features wrote.
*/
#define CAT_FORMAT_PLAIN     2u   /* meta.format without features */
#define CAT_FORMAT_FEATURES  3u   /* meta.format with features */
#define CAT_FEATURE_TENSOR   1u   /* bit 0: a tensor field (issue 27) */
#define CAT_FEATURE_PARTS    2u   /* bit 1: parts (issue 26) */
#define CAT_FEATURE_PARTROWS 4u   /* bit 2: parts' sample rows by reference (issue 26) */
#define CAT_FEATURE_CHUNKREF 8u   /* bit 3: parts' index chunks by reference (issue 26; index version 3) */
#define CAT_FEATURES_KNOWN   (CAT_FEATURE_TENSOR | CAT_FEATURE_PARTS | CAT_FEATURE_PARTROWS | CAT_FEATURE_CHUNKREF)

/* A row of table part (doc/format.md, "Parts"). */
typedef struct CatPart CatPart;
struct CatPart {
  uint64_t k;
  char uuid[33];
  const char *uri;
  const char *name;         /* NULL: none */
  uint64_t first_page, pages, data_off, data_end, samples;
  int64_t id_min, id_max;   /* both -1 when the part gave no sample */
  uint64_t seal;
  const char *validator;    /* NULL: none */
  int64_t committed;
  int rows;                 /* 1: its sample rows by reference (feature bit 2), 0: copied */
  int64_t id_delta;         /* with ROWS: the dataset's id of a sample less the part's */
};

/* A committed run, as the page table records it. */
typedef struct CatRun {
  uint64_t pgno;
  uint32_t npages;
  uint32_t nsamples;
  uint64_t used;
} CatRun;

#define CAT_READONLY 0
#define CAT_WRITE    1
#define CAT_CREATE   2

/* Open the catalog at PATH (CAT_CREATE: create it; it must not exist);
** its file I/O goes through VFS, the dataset's (see catvfs.c). */
int cat_open(pagedb *db, pagedb_vfs *vfs, pdb_msg *m, const char *path, int mode, Catalog **pc);
void cat_close(Catalog *c);
/* The catalog is a sealed part's (pagedb_part_seal): its close leaves it in
** rollback-journal mode, if no other connection has it open, so that the
** read-only opens of whoever commits or queries the part create no -wal
** and -shm files beside it.  A later read-write open returns it to WAL. */
void cat_sealed(Catalog *c);
/* A read-write catalog's close by its writer: merge its WAL into the
** catalog file (copied, synced, the WAL emptied), so that PATH-catalog
** alone holds every commit (doc/remote.md: a dataset is uploaded as NAME
** and NAME-catalog).  PAGEDB_OK on a read-only catalog or an empty WAL
** (no I/O then).  PAGEDB_BUSY if a reader in another connection keeps
** frames from being copied; PAGEDB_IOERR* as a commit.  Commits stay
** durable in the WAL whatever it returns (pagedb_close ignores it). */
int cat_merge(Catalog *c, pdb_msg *m);

/* Create the tables of a new dataset, in one transaction. */
int cat_init(Catalog *c, pdb_msg *m, const uint8_t uuid[16], uint32_t page_size);
/* *EMPTY: the catalog has no tables (its creation was cut short). */
int cat_is_empty(Catalog *c, pdb_msg *m, int *empty);
int cat_set_page_size(Catalog *c, pdb_msg *m, uint32_t page_size);

/* Begin (BEGIN) or end (0) a read transaction, so that several reads see
** one commit.  Closing the catalog ends one left open. */
int cat_snapshot(Catalog *c, pdb_msg *m, int begin);

/* Check the schema and read meta and fields (FIELDS has room for
** PAGEDB_MAX_FIELDS). */
int cat_load(Catalog *c, pdb_msg *m, CatMeta *meta, CatField *fields, int *nfield);

/*
** Within the caller's write transaction: set the bits SET and clear the
** bits CLEAR of meta.features, reading the bits the transaction sees.  When
** the result is not 0 the catalog is format 3 with the key; when it is 0,
** format 2 without it.  Writes nothing when the bits do not change.
*/
int cat_features_update(Catalog *c, pdb_msg *m, uint64_t set, uint64_t clear);

/* Add field number IDX (durable on return). */
int cat_field_add(Catalog *c, pdb_msg *m, int idx, const CatField *f);

/* The end of the data written: the page and bytes used of the last run
** in use (*FOUND 0 when none).  One indexed row, for an open that does
** not read the page table. */
int cat_last_run(Catalog *c, pdb_msg *m, uint32_t page_size, CatRun *run, int *found);

/*
** In the open write transaction (begun if needed): make table part if
** the catalog has none yet (PAGEDB_CONSTRAINT if a user table of that
** name is in the way), then insert row P.  The UNIQUE constraints refuse
** a part named twice: PAGEDB_CONSTRAINT naming the column.
*/
int cat_insert_part(Catalog *c, pdb_msg *m, int first, const CatPart *p);

/*
** In the open write transaction (begun if needed), for the first commit of
** a part by reference (feature bit 2): table part gains columns rows and
** id_delta (doc/format.md), table part_deleted is made, and the feature
** bit set.  A no-op when the catalog has the bit.
*/
int cat_part_rows_on(Catalog *c, pdb_msg *m);

/*
** In the open write transaction, after the commit's part rows: the index
** on part(id_min) made if missing, and meta.part_id_span raised to SPAN
** (the widest id_max - id_min of the commit's parts), or, where the key is
** missing (parts committed before it), to the widest of every part's.  A
** part holding id X then has id_min in [X - part_id_span, X], a range of
** the index (catref.c's lookups by id; doc/format.md).
*/
int cat_part_span(Catalog *c, pdb_msg *m, int64_t span);

/* Add V to meta KEY in the open write transaction (begun if needed). */
int cat_add_meta(Catalog *c, pdb_msg *m, const char *key, int64_t v);

/* A commit of parts landed: table part is pagedb's from now on. */
void cat_note_parts(Catalog *c);

/* Whether table part has a row with UUID or NAME (NULL: not asked): WHAT
** (CAP bytes) receives "part K, by uuid" or "part K, by name", or "". */
int cat_part_known(Catalog *c, pdb_msg *m, const char *uuid, const char *name, char *what, size_t cap);

/* Call XROW with every row of table part, by number, on the write
** connection (strings valid during the call only); the rows' types are
** checked. */
int cat_parts(Catalog *c, pdb_msg *m, int (*xrow)(void *ctx, const CatPart *p), void *ctx);

/* Whether the catalog has a table named part (in any case). */
int cat_has_part_table(Catalog *c, pdb_msg *m, int *has);


/* The smallest id of table sample in *LO (-1 when it has no row). */
int cat_id_min(Catalog *c, pdb_msg *m, int64_t *lo);

/* The page table in page order: *RUNS (malloc'd, caller frees), *N runs. */
int cat_runs(Catalog *c, pdb_msg *m, CatRun **runs, uint64_t *n);

/*
** Call XROW for every committed sample with its slot (see index.h), built
** from the row: NW words.  Offsets are checked by the caller.  A non-OK
** return from XROW stops the scan and is returned.
*/
int cat_scan(Catalog *c, pdb_msg *m, const CatField *fields, int nfield, uint32_t page_size,
             int (*xrow)(void *ctx, uint64_t *slot), void *ctx);

/* As cat_scan, but a row that cat_scan would refuse (a value of the wrong
** type, an impossible page, offset or length) is skipped, not an error:
** for PAGEDB_OPEN_CHECK, which leaves such samples out of the index. */
int cat_scan_skip(Catalog *c, pdb_msg *m, const CatField *fields, int nfield, uint32_t page_size,
                  int (*xrow)(void *ctx, uint64_t *slot), void *ctx);

/*
** Record run D and its NSAMPLES slots (NW words each) in the open write
** transaction, beginning one if needed.  Nothing is durable until
** cat_commit.
*/
int cat_insert_run(Catalog *c, pdb_msg *m, const PageDone *d, const uint64_t *slots,
                   const CatField *fields, int nfield, uint32_t page_size);
/* The page row of run D alone: its samples' rows are elsewhere (a part's
** by reference). */
int cat_insert_page(Catalog *c, pdb_msg *m, const PageDone *d);

/* Commit the open transaction with COMMITTED pages and NSAMPLE samples.
** On failure the transaction is rolled back: nothing of it is durable. */
int cat_commit(Catalog *c, pdb_msg *m, uint64_t committed, uint64_t nsample);

/* Set meta KEY to V in the open write transaction, beginning one if
** needed: durable with it at cat_commit, gone if it rolls back. */
int cat_stage_meta(Catalog *c, pdb_msg *m, const char *key, int64_t v);
/* The same for a text value. */
int cat_stage_meta_text(Catalog *c, pdb_msg *m, const char *key, const char *v);
/* Meta KEY's text in the catalog file PATH (a local copy: SQLite's own
** VFS, read-only, no dataset open) into OUT (CAP bytes; "" when absent or
** not text).  PAGEDB_OK, or PAGEDB_CORRUPT_CATALOG / PAGEDB_CANTOPEN with
** MSG (MCAP bytes). */
int cat_file_meta_text(const char *path, const char *key, char *out, size_t cap, char *msg, size_t mcap);
/* EACH(CTX, UUID) for every row of table part of the catalog file PATH
** (as cat_file_meta_text; none without meta.parts); EACH's nonzero result
** stops and is returned. */
int cat_file_parts(const char *path, int (*each)(void *ctx, const char *uuid), void *ctx, char *msg, size_t mcap);
/* EACH(CTX, K, UUID, URI) for every row of table part of the catalog file
** PATH in part order (as cat_file_parts). */
int cat_file_part_rows(const char *path, int (*each)(void *ctx, int64_t k, const char *uuid, const char *uri), void *ctx,
                       char *msg, size_t mcap);
/* In the catalog file PATH (pagedb_push's copy, no dataset open), in one
** transaction: part K[i]'s validator set to VAL[i] (NULL: none) for I <
** N; DROP_INDEX 1 removes meta.index_file (the index is NAME-index), 2
** every meta key that names an index file (the copy opens by a catalog
** scan); then IXV, if not NULL, sets index_id, index_dir, index_len,
** index_samples and index_pages (a new NAME-index for the copy).
** PAGEDB_OK, or PAGEDB_CORRUPT_CATALOG / PAGEDB_CANTOPEN with MSG. */
int cat_file_push_fix(const char *path, const int64_t *k, char *const *val, size_t n, int drop_index,
                      const int64_t *ixv, char *msg, size_t mcap);

/* A committed sample to delete: its id, the first page of the run its
** record starts in, and the record's stored length. */
typedef struct CatDel {
  int64_t id;
  uint64_t pgno;
  uint64_t len;
} CatDel;

/*
** In the open write transaction (begun if needed): delete the N samples
** DELS, decrement the page table's nsamples of each one's run, and add
** their lengths to meta.deleted_bytes.  PAGEDB_CORRUPT_CATALOG if a row is
** missing.  Nothing is durable until cat_commit; on failure the caller
** rolls back.
*/
int cat_delete(Catalog *c, pdb_msg *m, const CatDel *dels, size_t n);

/* Table pagedb_dict (catdict.c): call XROW for every row, in the order
** they were inserted (none when the table does not exist); a row's bytes live until
** XROW returns, HAS_SUM is 0 when its sum is not an integer.  XROW's
** failure stops the scan and is returned. */
int cat_dicts(Catalog *c, pdb_msg *m,
              int (*xrow)(void *ctx, int64_t field, int64_t id, const void *b, size_t n, int has_sum, int64_t sum),
              void *ctx);

/* Insert dictionary ID of FIELD (N bytes at B, checksum SUM) in the open
** write transaction, begun if needed, making the table if need be:
** durable with it at cat_commit. */
int cat_put_dict(Catalog *c, pdb_msg *m, int field, uint32_t id, const void *b, size_t n, uint64_t sum);

/* The uuid of the catalog at PATH (a read-only connection of its own). */
int cat_peek_uuid(pagedb *db, pagedb_vfs *vfs, pdb_msg *m, const char *path, uint8_t uuid[16]);

/*
** Checkpoint the catalog at PATH completely (its WAL copied into it and
** synced, then emptied) on a connection of its own, and close it.  If no
** other connection has the catalog open, that close deletes PATH-wal and
** PATH-shm: the caller checks that they are gone.  The journal mode stays
** WAL.  PAGEDB_BUSY if another connection's read keeps the checkpoint from
** finishing (after the busy timeout).
*/
int cat_checkpoint(pagedb *db, pagedb_vfs *vfs, pdb_msg *m, const char *path);

/* Roll back the open write transaction, if any. */
void cat_rollback(Catalog *c);

/*
** Run SQL that may change only the INT and REAL field columns of table
** sample (an authorizer refuses anything else when it is prepared), in one
** committed transaction.  *SLOTS (caller frees) receives the new values of
** every changed sample, *NSLOTS of them: word 0 the id, values and presence
** bits as in index.h.  A value of the wrong type rolls everything back.
*/
int cat_update(Catalog *c, pdb_msg *m, const char *sql, const CatField *fields, int nfield, uint64_t **slots,
               size_t *nslots);

/* Run read-only SQL on a separate connection (see pagedb_sql), giving each
** row to XROW as text or to XVALS as typed values (pagedb_sql_values):
** one of them, or neither. */
int cat_sql(Catalog *c, pdb_msg *m, const char *sql, int (*xrow)(void *, int, char **, char **),
            int (*xvals)(void *, int, const pagedb_value *, const char *const *), void *ctx);

/*
** For pagedb_check (check.c): the committed rows exactly as stored, with
** nothing refused, read in one read transaction of a connection of the
** check's own (like cat_snapshot, but never the write connection, whose
** open transaction holds rows not yet committed, and never shared with
** another thread).
*/
typedef struct CatSnap CatSnap;

/* A catalog value as stored: TYPE is SQLite's (CAT_INTEGER... below). */
#define CAT_INTEGER 1
#define CAT_FLOAT   2
#define CAT_TEXT    3
#define CAT_BLOB    4
#define CAT_NULL    5
typedef struct CatVal {
  int type;
  int64_t i;                /* CAT_INTEGER: the value */
  double r;                 /* CAT_FLOAT (and CAT_INTEGER): the value */
} CatVal;

/* Open a read-only connection to the catalog and begin a read transaction
** on it; cat_snap_close ends both.  NULL is a no-op for close. */
int cat_snap_open(Catalog *c, pdb_msg *m, CatSnap **ps);
/* As cat_snap_open, but on the catalog's own connection when it is
** read-only and in no transaction: no connection (and no parse of the
** schema) is made, and until cat_snap_close every statement of C's on it
** (cat_runs, cat_id_min...) reads the same snapshot.  Else cat_snap_open. */
int cat_snap_borrow(Catalog *c, pdb_msg *m, CatSnap **ps);
void cat_snap_close(CatSnap *s);
/* Copy S's snapshot whole into the new SQLite file PATH (SQLite's backup
** API, default VFS).  PAGEDB_IOERR, PAGEDB_FULL, PAGEDB_NOMEM. */
int cat_snap_backup(CatSnap *s, pdb_msg *m, const char *path);

/* Meta KEY: *V (CAT_NULL when the key is absent) and, for a text value,
** its first CAP-1 bytes in TEXT (NUL-terminated; "" otherwise). */
int cat_snap_meta(CatSnap *s, pdb_msg *m, const char *key, CatVal *v, char *text, size_t cap);

/* Call XROW with V[0..3] = pgno, npages, used, nsamples of every row of
** the page table, by pgno.  A non-OK return from XROW stops and is returned. */
int cat_snap_pages(CatSnap *s, pdb_msg *m, int (*xrow)(void *ctx, const CatVal *v), void *ctx);

/* The seal of the part S is a snapshot of (catx_seal), given its uuid,
** page size and data offset from its data file's header. */
int cat_snap_seal(CatSnap *s, pdb_msg *m, const uint8_t uuid[16], uint64_t ps, uint64_t d, uint64_t *seal);

/* The rows of table part as snapshot S sees them (cat_parts). */
int cat_snap_parts(CatSnap *s, pdb_msg *m, int (*xrow)(void *ctx, const CatPart *p), void *ctx);

/* Call XROW with the N values of every row of the sample table, by page,
** off and id: id, page, off, then per field of FIELDS its value and, for a
** BYTES or TEXT field, its "F:z" and "F:sum" (the columns of doc/format.md). */
int cat_snap_samples(CatSnap *s, pdb_msg *m, const CatField *fields, int nfield,
                     int (*xrow)(void *ctx, const CatVal *v, int n), void *ctx);

/*
** User tables (pagedb_sql_user): tables of the application's own kept in
** the catalog, and their indexes.  A name is a user table's when it is not
** one of pagedb's objects (meta, field, page, sample, extent, sample_info,
** part_deleted, any case) and
** does not begin with "sqlite_" or "pagedb_".  cat_load accepts such tables
** and indexes on them; views and triggers stay refused.
*/
/* Run SQL that may create, fill, change, index and drop user tables and
** read anything, in one committed transaction (after the caller committed
** what was written, as for cat_update).  *NCHANGED: rows changed.
** PAGEDB_READONLY for SQL the authorizer refuses. */
int cat_user_sql(Catalog *c, pdb_msg *m, const char *sql, int64_t *nchanged);
/* Copy FROM's user tables (schema, rows, indexes) into TO, in one committed
** transaction (pagedb_vacuum). */
int cat_copy_user(Catalog *from, Catalog *to, pdb_msg *m);

/*
** catvfs.c: the name of the SQLite VFS that sends the catalog's file I/O
** through the pagedb VFS V (registered on first use; thread-safe).  NULL
** (SQLite's default VFS) for a NULL V or when no more can be registered.
*/
const char *catvfs_name(pagedb_vfs *v);

#endif /* PAGEDB_CATALOG_H */
