/*
** catalogInt.h -- what catalog.c lends the files that make up the catalog
** module with it (catextra.c, catsql.c, catpart.c, catbulk.c): its
** connections, its error helpers, and SQL naming a user table.  Private to
** those files.
*/
#ifndef PAGEDB_CATALOGINT_H
#define PAGEDB_CATALOGINT_H

#include "catalog.h"

#include <sqlite3.h>

/* SQL true when column COL names a user table (catalog.h): not one of
** pagedb's objects, in any case, and not beginning sqlite_ or pagedb_. */
#define CAT_USER_TABLE(col) \
  "(lower(" col ") NOT IN ('meta', 'field', 'page', 'sample', 'extent', 'sample_info', 'part_deleted')" \
  " AND " col " NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND " col " NOT LIKE 'pagedb\\_%' ESCAPE '\\')"

/* Whether the catalog loaded has feature bit 1 (parts): table part is pagedb's. */
int catx_has_parts(Catalog *c);

/* The write connection; the handle errors are recorded on. */
sqlite3 *catx_w(Catalog *c);
pagedb *catx_db(Catalog *c);
pagedb_vfs *catx_vfs(Catalog *c);

/* The hardening of every connection to a catalog pagedb did not
** necessarily write (catalog.c): SQLITE_MISUSE if SQLite refuses a
** defensive setting, else an SQLite result. */
int catx_harden_conn(sqlite3 *conn);
/* The seal of the part whose catalog CONN reads, in its current read
** transaction (doc/format.md, "The seal"): its uuid UUID, page size PS and
** data offset D (its data file's header's, or its row of table part's),
** then its meta (committed_pages, samples, deleted_bytes, index_id,
** index_dir: 0 when absent or not an integer) and its page table.  An
** SQLite code; SQLITE_NOMEM.  (catref.c: the one implementation, for the
** commit's check and for SQL's reads of rows by reference.) */
int catx_seal(sqlite3 *conn, const uint8_t uuid[16], uint64_t ps, uint64_t d, uint64_t *seal);

/*
** catref.c: the rows of parts committed by reference (doc/format.md).
** catr_attach registers the virtual table's module on CONN (the state it
** returns is CONN's, freed when CONN closes; VIEWS: pagedb_sql's
** connection, whose temp views put the union in the place of sample,
** extent and sample_info).  catr_ready, before a statement that reads
** sample rows on that connection: *ON 1 when the catalog has part rows by
** reference, and then temp.pdb_part_rows is there, with main.sample's
** columns (and the views, with VIEWS); the rows live are those of
** main.sample and those of pdb_part_rows whose id is not in
** main.part_deleted.
*/
typedef struct CatRef CatRef;
int catr_attach(Catalog *c, sqlite3 *conn, int views, CatRef **out);
int catr_ready(CatRef *r, pdb_msg *m, int *on);
/* ON 1: the temp views of the union on R's connection (made by catr_ready
** when it was attached with VIEWS) made for the moment, after catr_ready
** found the catalog with part rows by reference; ON 0: dropped again.  For
** the write connection, while pagedb_sql_user's statements run: a view
** naming main.sample must not outlive them there (an ALTER TABLE sample of
** a field add would check it while its columns lag). */
int catr_views(CatRef *r, pdb_msg *m, int on);
/* Finalize what R keeps prepared on its connection: before that
** connection's sqlite3_close (NULL: nothing). */
void catr_detach(CatRef *r);
CatRef *catx_wref(Catalog *c);
const char *catx_path(Catalog *c);

/* Open the write transaction (or join the one open, as cat_update does);
** catx_end_write records that it ended (committed or rolled back). */
int catx_begin_write(Catalog *c, pdb_msg *m);
void catx_end_write(Catalog *c);

/* catalog.c's helpers: run SQL on the write connection; prepare on CONN;
** map SQLite result SRC to a pagedb code with the message; a
** PAGEDB_CORRUPT_CATALOG naming the catalog and WHAT. */
int catx_exec(Catalog *c, pdb_msg *m, const char *sql, const char *doing);
int catx_prepare(Catalog *c, pdb_msg *m, sqlite3 *conn, const char *sql, sqlite3_stmt **st);
int catx_fail(Catalog *c, pdb_msg *m, sqlite3 *conn, int src, const char *doing);
int catx_corrupt(Catalog *c, pdb_msg *m, const char *what);

/* The read-only connection (pagedb_sql's), opened if need be, held until
** catx_read_end; on error nothing is held. */
int catx_read_begin(Catalog *c, pdb_msg *m, sqlite3 **conn);
void catx_read_end(Catalog *c);

/* Run SQL's statements on the write connection under the caller's
** authorizer (catsql.c): refused at prepare, PAGEDB_READONLY "SQL refused:
** REFUSED (...)"; a constraint, PAGEDB_CONSTRAINT; else catx_fail, DOING. */
int catx_run(Catalog *c, pdb_msg *m, const char *sql, const char *refused, const char *doing);

/* The rows of table part on CONN (the write connection, or a snapshot's),
** each checked, to XROW in part order (catpart.c). */
int catx_parts_on(Catalog *c, sqlite3 *conn, pdb_msg *m, int (*xrow)(void *ctx, const CatPart *p), void *ctx);

/* View sample_info (catextra.c): made with the fields (after extent), and
** checked at load: exactly what pagedb makes, or absent (older catalogs). */
int cat_info_view_make(Catalog *c, pdb_msg *m, const CatField *fields, int nfield);
int cat_info_view_check(Catalog *c, pdb_msg *m, const CatField *fields, int nfield);

/* catbulk.c: the virtual table temp.pdb_rows of the write connection
** (module registered at open, table made by catb_declare) yields the sample rows of the SLOTS given by catb_set (and
** none when SLOTS is NULL): id, page, off, then per field its column and,
** BYTES/TEXT, its stored length and checksum, as v0, v1...  AT is the row
** a failing INSERT ... SELECT stopped at. */
#define CAT_ROWS_COLS (3 * PAGEDB_MAX_FIELDS)
typedef struct CatRows {
  const uint64_t *slots;
  uint64_t n, at;
  uint32_t page_size;
  const CatField *fields;
  int nfield, ncol;
  uint16_t col_field[CAT_ROWS_COLS];
  uint8_t col_kind[CAT_ROWS_COLS];   /* 0 the value, 1 stored length, 2 checksum */
} CatRows;
int catb_register(sqlite3 *conn, CatRows *src);
/* (Re)make temp.pdb_rows with NCOL v columns: an SQLite result. */
int catb_declare(sqlite3 *conn, int ncol);
void catb_set(CatRows *r, const uint64_t *slots, uint64_t n, const CatField *fields, int nfield,
              uint32_t page_size);

#endif /* PAGEDB_CATALOGINT_H */
