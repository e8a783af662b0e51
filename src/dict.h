/*
** dict.h -- the zstd dictionaries of a handle's zstd-dict fields (dict.c).
*/
#ifndef PAGEDB_DICT_H
#define PAGEDB_DICT_H

#include "api.h"

/* Defaults of pagedb_field_dict_train. */
#define PDB_DICT_SAMPLES  2000
#define PDB_DICT_SIZE     (256u << 10)   /* W-small: 2.39x, against 2.25x with 112 KiB (doc/benchmarks.md) */

/* At open, after the fields: every row of pagedb_dict, checked (a damaged
** one is kept, marked bad, so that reads of other values go on); each
** zstd-dict field's newest becomes its current one, or it starts learning. */
int dict_load(pagedb *db, pdb_msg *m);

/* A zstd-dict field was added: it starts learning with the defaults. */
int dict_field_added(pagedb *db, pdb_msg *m, int field);

/* Free every dictionary and what fields learned (close). */
void dict_free_all(pagedb *db);

/* For a writer putting the N bytes at DATA in FIELD: *CDICT is the
** prepared dictionary to compress them with, or NULL (stored as given: the
** field has none yet).  While the field learns, the value is copied as a
** sample, and the one that completes the set trains the dictionary. */
int dict_for_write(pagedb *db, pdb_msg *m, int field, const void *data, size_t n, const void **cdict);

/* The dictionary ID of FIELD, or NULL. */
const PdbDict *dict_find(pagedb *db, int field, uint32_t id);

/* The prepared decompression dictionary of the compressed value SRC (LEN
** bytes) of FIELD of sample ID: PAGEDB_OK with *DDICT, or PAGEDB_CORRUPT
** naming the sample, the field and the dictionary (none named, unknown,
** damaged), set on M. */
int dict_for_read(pagedb *db, pdb_msg *m, int64_t id, int field, const void *src, size_t len, const void **ddict);

/* Bring every dictionary of field OFIELD of OTHER into field FIELD of DB,
** with its id (an id DB's field has already: the same bytes are shared,
** others are PAGEDB_MISMATCH), to be stored by DB's next commit; with
** MAKE_CURRENT OTHER's newest becomes the one DB's writers use.  A damaged
** one of OTHER is PAGEDB_CORRUPT.  Dictionaries brought before a failure
** stay (the next commit stores them; no value names them). */
int dict_import(pagedb *db, pdb_msg *m, int field, pagedb *other, int ofield, int make_current);

/* In commit: store the dictionaries not yet in the catalog in its open
** transaction; dict_committed after it commits marks them stored. */
int dict_stage(pagedb *db, pdb_msg *m);
void dict_committed(pagedb *db, int ok);

#endif /* PAGEDB_DICT_H */
