/*
** api.h -- the handles behind the public API (main.c, commit.c, schema.c, writer.c, reader.c,
** prefetch.c).
*/
#ifndef PAGEDB_API_H
#define PAGEDB_API_H

#include "catalog.h"
#include "codec.h"
#include "index.h"
#include "pager.h"

#include <pthread.h>
#include <sys/types.h>

/* A written run and the slots of the samples on it (see index.h). */
typedef struct PageRecs {
  PageDone d;               /* must be first: the pager frees with free() */
  uint64_t slots[];         /* d.nsamples slots of db->nw words */
} PageRecs;

/*
** A zstd dictionary of a field with codec zstd-dict (dict.c).  Made once,
** then only read until the handle closes: writers and readers use its
** prepared forms without a lock.
*/
typedef struct PdbDict {
  struct PdbDict *next;     /* db->dicts, newest first */
  int field;
  uint32_t id;              /* as its header and every frame made with it say */
  uint8_t *bytes;
  size_t n;
  uint64_t sum;             /* XXH3-64 of the bytes, as the catalog records */
  void *cdict, *ddict;      /* prepared (cdict only for the current one) */
  char bad[96];             /* "" or why its values cannot be read */
  int stored;               /* in the committed catalog (commit_mu) */
  int staged;               /* ...in the open catalog transaction */
} PdbDict;

/* A field learning its next dictionary from the values writers give
** (dict.c; dict_mu). */
typedef struct DictLearn {
  uint8_t *buf;             /* the samples so far, back to back */
  size_t len, cap;
  size_t *sizes;
  unsigned ns, cap_ns;
  unsigned want;            /* samples to train from */
  size_t dict_size;         /* the dictionary's size at most */
} DictLearn;

struct pagedb {
  char *path;
  char *catpath;
  int readonly;
  int check;                /* PAGEDB_OPEN_CHECK: bad samples were left out */
  int failed;               /* open failed: only errmsg and close work */
  pid_t pid;                /* the opener's process: a forked child may read, never write */
  unsigned fork_gen;        /* api_fork_gen() at the open: another value, a forked child */
  /* The index (dindex.h): how this open got it (PAGEDB_INDEX_*), why, and
  ** what the catalog records of it as of the last commit (cat_mu). */
  int ixstate;
  char ixwhy[PDB_MSG_MAX];
  DxMeta ixmeta;
  /* Per field: 0 for INT and REAL, else (BYTES, TEXT: stored in pages) the
  ** alignment of its values, 1..PAGEDB_MAX_ALIGN (api_extent): G, the
  ** largest any of them asks for, the same for all (main.c, api_set_isbytes). */
  uint8_t isbytes[PAGEDB_MAX_FIELDS];
  /* Token maps (tokens.c): set once a stream reads a map stored in the
  ** index file, whose entries it reads in place; from then on an index
  ** file replaced under the handle (a rewrite, vacuum's reopen) stays
  ** mapped, chained from PINNED, until pagedb_close (main.c, drop_index). */
  _Atomic int tokpin;
  Dx *pinned;
  /* Indexes replaced under open readers (api_install_index's LIVE), freed
  ** at the close: NRETIRED of room for CAPRETIRED. */
  Index **retired;
  size_t nretired, capretired;
  pagedb_vfs *vfs;
  Pager *pager;
  Catalog *cat;
  Index *idx;

  CatField fields[PAGEDB_MAX_FIELDS];
  int nfield;
  int nw;                   /* words per slot */

  _Atomic int64_t next_auto;      /* next PAGEDB_AUTO_ID candidate */
  _Atomic uint64_t committed;     /* committed pages */
  _Atomic int want_map;           /* a zero-copy reader exists */
  _Atomic int broken;             /* sticky failure code, 0 if none */

  pthread_mutex_t mu;       /* the lists of writers and readers */
  pagedb_writer *writers;
  pagedb_reader *readers;

  /* Commit.  Lock order: commit_mu, then cat_mu.  The catalog thread takes
  ** runs as they enter the written prefix and inserts their rows into the
  ** catalog's open transaction; pagedb_commit finishes what is left, syncs
  ** and commits. */
  pthread_mutex_t commit_mu;
  pthread_mutex_t cat_mu;   /* the catalog's write connection and the lists */
  PageRecs *todo;           /* taken from the pager, not yet inserted */
  PageRecs *inserted;       /* inserted in the open transaction */
  PageRecs **inserted_tail;
  uint64_t nsample;         /* committed samples, as the catalog records */
  /* pagedb_delete: committed ids to delete at the next commit, in call
  ** order, perhaps repeated (commit_mu).  They stay until a commit applies
  ** them; a failed commit keeps them for the next. */
  int64_t *del;
  size_t ndel, del_cap;
  /* Samples writers carried to a fresh page because they did not fit
  ** (make_room): the count loaded from meta.moved_samples plus the moves of
  ** this handle's writers since.  moved_committed is the value the last
  ** commit recorded (commit_mu), which pagedb_stats reports. */
  _Atomic uint64_t moved;
  uint64_t moved_committed;

  pthread_mutex_t wake_mu;  /* guards wake/stop, never held during work */
  pthread_cond_t wake_cv;
  int wake, stop, thread_on;
  pthread_t thread;

  /* Dictionaries (dict.c).  dict_mu guards learn[] and adding to dicts;
  ** dicts and dict_cur are read without it (a dictionary is published
  ** whole and freed only at close). */
  pthread_mutex_t dict_mu;
  PdbDict *_Atomic dicts;
  PdbDict *_Atomic dict_cur[PAGEDB_MAX_FIELDS];   /* writers compress with it */
  _Atomic int learning[PAGEDB_MAX_FIELDS];        /* learn[f] is set */
  DictLearn *learn[PAGEDB_MAX_FIELDS];

  /* Parts (parts.c, doc/format.md "Parts"): meta.features as of the last
  ** commit; the data files of the parts this process has read (made on
  ** first touch); a commit of parts under way (commit_mu). */
  uint64_t features;
  struct PartTab *_Atomic ptab;
  _Atomic int untrusted;    /* a data file (its own or a part's) is PAGEDB_IOCAP_UNTRUSTED:
                            ** every value read is verified (api_verifies) */
  struct PartCommit *pcommit;
  /* meta.index_file at the open ("": NAME-index); and for the local copy
  ** a commit into a remote dataset works on (partsremote.c): the remote
  ** dataset's URL (part uris are made relative to its prefix) and the
  ** index object name the commit records in meta.index_file. */
  char ixfile[256];
  const char *remote_url;
  const char *ixfile_next;

  pdb_msg err;
};

struct pagedb_writer {
  pagedb *db;
  pagedb_writer *next;      /* in db->writers */
  uint8_t *buf;             /* the page being filled; cap >= page size */
  size_t cap;
  uint8_t *spare;           /* the other buffer: written from, or free */
  size_t spare_cap;
  int async;                /* the file's writes are asynchronous */
  pthread_mutex_t fly_mu;   /* fly, aio, fly_err: commit may land the write */
  PageRecs *fly;            /* the run being written from spare, or NULL */
  pagedb_aio aio;           /* ...its write */
  _Atomic int fly_rc;       /* a failure commit met landing it */
  pdb_msg fly_err;          /* ...and its message */
  size_t pos;               /* bytes in use, run header included */
  PageRecs *recs;           /* samples ended on this page */
  uint32_t caprec;
  int in_sample;
  size_t start;             /* where the current sample's record begins */
  uint64_t *cur;            /* the current sample's slot */
  size_t amax;              /* G, the alignment of every stored value (api_extent) */
  int nput;                 /* BYTES/TEXT fields given so far */
  uint16_t order[PAGEDB_MAX_FIELDS];  /* ...in the order given */
  uint8_t *zbuf;            /* compressed values are made here first */
  size_t zcap;
  void *zstate;             /* lz4's scratch state */
  size_t zstate_size;
  int failed;               /* sticky: a page write failed */
  pdb_msg err;
};

/*
** A reader's read-ahead along an order it was given (prefetch.c).  In copy
** mode two windows of the order, each at most half the bytes allowed, are
** read by a worker thread: the consumer reads from one while the other is
** filled.
*/
#define PF_MAX 4096         /* samples in one window */

typedef struct PfWindow {
  int64_t first, count;     /* the positions it holds; count 0: unused */
  int state;                /* PF_EMPTY, PF_QUEUED, PF_LOADING, PF_READY, PF_FAILED */
  uint8_t *buf;             /* the bytes */
  size_t cap;
  const uint8_t **at;       /* where each position's field starts */
  void *hold;               /* the VFS's bytes at[] points into (pager_hold), or NULL */
  uint64_t *off, *len;      /* ...its extent */
} PfWindow;

typedef struct Prefetch {
  int64_t *ids;             /* the order, copied; NULL: no read-ahead */
  int64_t n;
  int64_t pos;              /* the position the consumer reads next */
  int field;
  size_t window;            /* bytes read ahead at most */
  int64_t hinted;           /* zero-copy mode: positions advised up to here */
  int64_t next;             /* copy mode: the first position in no window */
  PfWindow win[2];
  pthread_mutex_t mu;       /* win[].state, stop */
  pthread_cond_t cv;
  pthread_t thread;
  int on;                   /* mu and cv exist: pf_free has work */
  unsigned fork_gen;        /* api_fork_gen() of the process whose thread reads ahead (fork: prefetch.c) */
  int thread_on, stop;
  pdb_msg err;              /* the worker's; a failed window is read again */
} Prefetch;

struct pagedb_reader {
  pagedb *db;
  pagedb_reader *next;      /* in db->readers */
  int mode;                 /* PAGEDB_READ_MMAP or _COPY */
  int verify;               /* PAGEDB_READ_VERIFY */
  /* The read corridor (reader.c).  DX and IDX are the handle's index in
  ** force: a field add or an in-place vacuum, which replace it, refuse to
  ** run while a reader is open; the first commit of parts replaces them
  ** under the reader (release stores under db->mu, the old kept until the
  ** close: api_install_index), and the reader's next lookup reads the new. */
  Dx *_Atomic dx;           /* the mapped index file, or NULL: IDX is the index */
  Index *_Atomic idx;       /* the in-memory index (read-only fallback, no map) */
  DxMemo memo;              /* the last slot dx_find_memo found */
  const uint8_t *base;      /* zero-copy: the data region's map as last seen */
  uint64_t lim;             /* ...and the bytes of it that map covers */
  int fill;                 /* the map is filled per read (a remote VFS) */
  uint8_t *buf;             /* copy mode: the last field read */
  size_t cap;
  uint8_t *bbuf;            /* copy mode: a batch that reads parts' samples (reader.c) */
  size_t bcap;
  uint8_t *zbuf;            /* decompressed values of the last call */
  size_t zcap;
  Prefetch pf;              /* pf.ids NULL: no read-ahead */
  const struct PartEnt *pent;   /* zero-copy: the handle's entries of parts (api.h), NULL until made */
  uint64_t *scratch;        /* pagedb_read_batch: offsets, lengths, addresses */
  size_t nscratch;          /* ...for this many ids */
  int hint_left;            /* zero-copy batches before the next residency check */
  int hint_on;              /* ...and whether they advise the kernel meanwhile */
  pdb_msg err;
};

/*
** The ids a set of samples of another dataset (OTHER) gets in DB
** (attach.c: pagedb_attach, and the parts' commit).  ids_collect, an
** idx_scan callback, gathers them (SLOT must outlive the plan); ids_plan
** sorts them by id and gives each its id in DB by POLICY
** (PAGEDB_ATTACH_*), reserving every one (idx_reserve): a collision is
** PAGEDB_CONSTRAINT, an id outside 0..INT64_MAX PAGEDB_FULL, with the
** message in EM and nothing left reserved.  ids_release gives back the
** reservations (and AFTER's block if nothing was taken after it).
*/
typedef struct IdSample {
  int64_t id;               /* in OTHER */
  int64_t nid;              /* in DB */
  const uint64_t *slot;     /* OTHER's slot (word 0 is not the id) */
} IdSample;
typedef struct IdPlan {
  pagedb *db;
  pdb_msg *em;              /* where a failure's message goes */
  IdSample *s;
  uint64_t n, cap;
  uint64_t nreserved;       /* s[0, nreserved) are reserved in DB (id order) */
  int64_t after;            /* AFTER: the first id of the block taken, or -1 */
  uint64_t *store;          /* ids_collect copies each slot here (NW words, STORE_CAP slots) when set: a scan's
                               translated slot of a referenced chunk lives only during its call (dindex.c) */
  uint64_t store_cap;
  _Atomic uint64_t *own;    /* if set, counts the ids this plan holds reserved (a commit's own: idx_reserve_range) */
} IdPlan;
int ids_collect(void *ctx, int64_t id, const uint64_t *slot);
int ids_plan(IdPlan *a, int policy, int64_t offset);
/* Automatic ids (PAGEDB_AUTO_ID) stay above TOP, an id now taken in DB. */
void ids_seen(pagedb *db, int64_t top);
void ids_release(IdPlan *a);

/* PAGEDB_MISMATCH (message in EM) unless O has DB's page size and schema
** (names, types, codecs, alignment): what attach and a part need. */
int attach_check_schema(pagedb *db, pagedb *o, pdb_msg *em);

/*
** A commit of parts (partscommit.c), as api_commit_locked (commit.c) takes it: the
** parts' runs at their window pages with their slots (new ids, window
** addresses), their part records, and what they add to meta.
*/
/*
** A part whose slots are lent (partscommit.c): read in place from its
** index map, which its handle, kept open, keeps until the commit ends --
** not copied into its runs.  Its runs are then headers alone (the counts
** and pages its page rows need) and its rows are by reference.
*/
typedef struct PartLent {
  PageRecs *runs;           /* linked by d.next; no slots */
  const IdSample *s;        /* its samples in id order: slot in its map, nid the id in DB */
  uint64_t n;
  uint64_t win;             /* its window's first byte, added to each slot's word 1 */
  int unreserved;           /* its ids are reserved as a range (PartRef), not one by one */
} PartLent;

/* A part whose index chunks are referenced (doc/format.md, "Parts' chunks
** by reference"): the chunks C[0..N) (k set when the part is numbered),
** the COUNT samples they hold, 1 + the largest id in DB the part gives
** (NEXT), and the ids LO..HI reserved for it whole (idx_reserve_range);
** DELTA maps its ids to DB's, and its index file's id and length are FID
** and FLEN (its part record's words 13-14).  Its other samples (its first
** and last chunk's) are its PartLent's S, copied; its runs are its
** PartLent's too. */
typedef struct PartRef {
  DxRefChunk *c;
  size_t n;
  uint64_t count, next;
  int64_t lo, hi, delta;
  uint64_t fid, flen;
} PartRef;

typedef struct PartCommit {
  PageRecs *runs;           /* linked by d.next: the parts' whose slots are copied */
  PartLent *lent;           /* per part: n 0 unless its slots are lent */
  PartRef *ref;             /* per part: n 0 unless chunks of its index are referenced */
  DxPart *dx;               /* the part records, numbered from the parts so far */
  CatPart *cat;             /* ...and their rows of table part */
  size_t n;
  uint64_t nsamples, deleted, moved;
} PartCommit;

/* Stage into DX the chunks db->pcommit's parts have referenced
** (dx_stage_refs), before any other change of the commit; *COUNT the
** samples they hold. */
int api_stage_refs(pagedb *db, pdb_msg *m, Dx *dx, uint64_t *count);

/* Commit the parts of PC (their runs at part-local addresses, LISTS[i]
** part i's, or PC->lent[i].runs), numbered from the parts DB has, as one
** commit with what the handle wrote (partscommit.c's second half). */
int api_commit_parts(pagedb *db, PartCommit *pc, PageRecs **lists);

/* In the catalog's open write transaction: the rows of the parts of
** db->pcommit (table part, page, sample) and meta's parts, features and
** format, deleted_bytes and moved_samples.  commit_mu and cat_mu held. */
int parts_stage_rows(pagedb *db, pdb_msg *m);
/* Whether file F is remote (parts.c): its validator (ETag, else
** Last-Modified) into OUT (CAP bytes); 0 for a local file. */
int parts_validator(pagedb_file *f, char *out, size_t cap);
/* pagedb_parts_commit on a read-only handle of a remote dataset
** (partsremote.c): the commit on object storage, doc/format.md. */
int parts_commit_remote(pagedb *db, const pagedb_part *parts, int n, int policy, int64_t *ncommitted);

/* The commit of db->pcommit landed (or failed, OK 0): the handle's
** features and counters follow. */
void parts_committed(pagedb *db, int ok);

/*
** The entries of the parts this process touched (parts.c): one flat array
** indexed by an address's bits 42-63, so that every address has an entry
** and a read checks no bound: PT_NENT entries of 16 bytes, 64 MiB of
** address space reserved as zeros (mem.h, RESERVED TABLES), of which the
** pages from part 0's entry up to the highest part a handle opened are
** made writable, and each page written in (256 entries) is charged.  A
** part's entry holds what a zero-copy read of it needs (its handle lies
** apart): LIM, the end of what the part uses as an address in its window
** (dx_window(k) + its END, 0 until it is mapped whole), and BIAS, the map's
** base less dx_window(k), so that an address is its pointer less one add.
** A read of a part already mapped then costs one load of its entry,
** dependent on the slot's address, and a compare: 12 instructions by
** callgrind (a read of a tiny part 349 against the one file's 338; the
** two-level table before took two dependent loads, and the read 353:
** doc/benchmarks.md).  The entries of the own region (bits
** 42-55 below DX_WIN_BASE) are never written: LIM 0.
*/
#define PT_NENT ((size_t)1 << (64 - DX_WIN_BITS))
typedef struct PartEnt {
  uintptr_t bias;                  /* its data region's base in the map (or copy) less dx_window(k) */
  _Atomic uint64_t lim;            /* release: BIAS is set; dx_window(k) + END, or 0 (not mapped whole,
                                   ** or filled on demand) */
} PartEnt;

/* The handle's entries, or NULL before the first part is touched. */
const PartEnt *parts_entries(pagedb *db);

/* The bytes [OFF, OFF+LEN) of an address in a part's window (OFF+LEN must
** not wrap: a lookup's extents end by PDB_ADDR_MAX, the in-memory index's
** within a few PAGEDB_MAX_SAMPLE of it) into *SRC, and 1, if the part is
** mapped whole in the entries T (NULL: none yet) and they lie within what
** it uses, else 0 (parts_stored then opens, maps or refuses).  An address
** below DX_WIN_BASE, the own file's, finds an entry of LIM 0: 0, so the
** reader asks without testing which it has.  Lock-free: entries are
** published with release stores and never freed before pagedb_close. */
static inline int parts_mapped(const PartEnt *t, uint64_t off, uint64_t len, const uint8_t **src) {
  assert(len <= UINT64_MAX - off);
  if (NEVER(!t)) return 0;
  const PartEnt *e = &t[off >> DX_WIN_BITS];
  if (NEVER(off + len > atomic_load_explicit(&e->lim, memory_order_acquire))) return 0;
  *src = (const uint8_t *)(e->bias + off);
  return 1;
}

/*
** The stored bytes [OFF, OFF+LEN) of an address in a part's window, as
** stored_bytes gives the own file's (reader.c): in zero-copy mode a
** pointer into the part's map, else read into *BUF.  The part's data file
** is opened and checked on first touch (parts.c), and a failure names the
** part.
*/
int parts_stored(pagedb *db, pdb_msg *m, int mmap, uint64_t off, uint64_t len, uint8_t **buf, size_t *cap,
                 const uint8_t **src);

/* The data file of part K (opened and checked on first use, as a read
** does) and the bytes of its data region the commit recorded. */
int parts_file(pagedb *db, pdb_msg *m, uint64_t k, Pager **p, uint64_t *end);
/* ...which stays open (pinned against the bound on open parts) until this. */
void parts_file_done(pagedb *db, uint64_t k);

/* The bound on open parts (PAGEDB_CONFIG_PARTS_OPEN): PAGEDB_MISUSE unless
** -1 or 1..PARTS_OPEN_MAX. */
#define PARTS_OPEN_MAX 1000000
/* The largest part copied whole (PAGEDB_CONFIG_PARTS_COPY): PAGEDB_MISUSE
** unless -1 or 0..PARTS_COPY_MAX. */
#define PARTS_COPY_MAX ((int64_t)1 << 20)
int parts_copy_config(int64_t n);
int parts_open_config(int64_t n);

/* The data file of address OFF (the own one, or a part's) and OFF as an
** offset in its data region; [OFF, OFF+LEN) must lie in what it holds.  A
** part's file is pinned against the bound on open parts until
** parts_pager_done(DB, OFF), which every success must be paired with. */
int parts_pager_at(pagedb *db, pdb_msg *m, uint64_t off, uint64_t len, Pager **p, uint64_t *rel);
void parts_pager_done(pagedb *db, uint64_t off);

/* pager_fetch of the data at address OFF, in the own file or a part's. */
int api_fetch(pagedb *db, pdb_msg *m, uint64_t off, size_t len, uint8_t **buf, size_t *cap, const uint8_t **at);

/* Close the parts' data files opened by reads (pagedb_close). */
void parts_close(pagedb *db);

/* Whether to advise the kernel (MADV_WILLNEED) of the N extents that a
** zero-copy batch or read-ahead of R is about to touch. */
int api_hint_batch(pagedb_reader *r, int n, const uint64_t *off, const uint64_t *len);

/* PAGEDB_OK if DB can take another call: its open succeeded and no earlier
** failure made it unusable (db->broken); otherwise the reason, in M. */
int api_usable(pagedb *db, pdb_msg *m);

/* A number that changes in a child made by fork() (pthread_atfork), read
** without a system call: equal values, the same process. */
unsigned api_fork_gen(void);

/* PAGEDB_OK if DB may be written through by the calling process: a child
** forked after the open gets PAGEDB_MISUSE (its writes would race the
** parent's, whose locks and catalog connection it does not own). */
int api_own(pagedb *db, pdb_msg *m);

/* Land every writer's write in flight, so that commit sees its pages
** (db->mu not held). */
void api_land_writers(pagedb *db);

/*
** Hand the written runs RUNS (linked by d.next, in page order, each claimed
** and written as a writer's are, their ids reserved) to the pager and
** commit, as pagedb_commit does, in one step under commit_mu: no other
** commit takes some of them without the others.  RUNS may be NULL.  If the
** commit fails, the runs wait, like any written run, for the next one.
** The caller has checked that DB is usable and writable.
*/
int api_commit_runs(pagedb *db, PageRecs *runs);

/*
** The index of a copy of DB (pagedb_push to a server, push.c): a new index
** file at PATH.new (dx_create) of DB's committed samples and parts, as a
** rebuild writes it, but with part K[i]'s validator VAL[i] (NULL: none)
** in its record, for I < N (K ascending); the other parts' records as DB
** has them.  *OUT is the file, synced, never installed: dx_close deletes
** it.  *XM what the copy's catalog must record of it.  commit_mu held (the
** committed state cannot move); takes cat_mu.
*/
typedef struct ApiIxCopy {
  const char *path;
  const int64_t *k;
  char *const *val;
  size_t n;
} ApiIxCopy;
int api_index_copy(pagedb *db, pdb_msg *m, const ApiIxCopy *copy, Dx **out, DxMeta *xm);

/*
** The copy of a stored value (vacuum.c): as pagedb_put, but DATA holds the
** STORED bytes as a writer stored them, compressed (Z) or not, RAW bytes
** once read, with checksum SUM, and they are copied as they are.
** PAGEDB_CORRUPT if the bytes do not hash to SUM; PAGEDB_MISUSE if no
** writer of the field could have stored them so.
*/
int writer_put_stored(pagedb_writer *w, int field, const void *data, size_t stored, uint64_t raw, int z,
                      uint64_t sum);

/*
** Close the data file, catalog and index of DB and open them again from
** db->path, as pagedb_open does (after an in-place vacuum replaced the
** files).  The caller holds commit_mu and cat_mu, and no writer or reader
** is open.  On failure the handle is left failed: only close works.
*/
int api_reopen(pagedb *db);

/*
** Open db->pager on the data file of DB, as pagedb_open needs it (vacuum.c),
** finishing or undoing an in-place vacuum that a crash interrupted.  A
** read-write open takes the write lock, then either completes the swap (a
** new data file NAME.vacuum whose uuid is the catalog's replaces NAME) or
** deletes the leftovers.  A read-only open reads NAME.vacuum in place of
** NAME in the first case and ignores the leftovers otherwise.
*/
int vacuum_open_pager(pagedb *db);
/* The path of the dataset at PATH's vacuum copy, NAME.vacuum (pdb_malloc'd;
** NULL without memory). */
char *vacuum_path(const char *path);

/* Start the catalog thread if it is not running. */
void api_start_thread(pagedb *db);

/* Wake the catalog thread: runs have entered the written prefix. */
void api_wake(pagedb *db);
/* Stop the catalog thread (pagedb_close). */
void api_stop_thread(pagedb *db);

/* --- between the open (main.c), the commit (commit.c) and the schema
** (schema.c) --- */

/* Free a list of runs. */
void api_free_runs(PageRecs *r);
/* The commit, commit_mu held: pagedb_commit's work (commit.c). */
int api_commit_locked(pagedb *db);
/* Stage in the open catalog transaction what makes the index file valid
** (XM all zero: no valid index). */
int api_stage_ix_meta(pagedb *db, pdb_msg *m, const DxMeta *xm);
/* The failure RC of writing the index: a failed sync leaves it in doubt,
** as for the data file, so the handle is poisoned. */
int api_ix_failed(pagedb *db, int rc);
/* Every sample the commit under way adds (the runs written, the parts'
** runs and lent slots) as changes to the index, *N of them, with room for
** EXTRA more; NULL without memory (said in M). */
DxChange *api_commit_changes(pagedb *db, pdb_msg *m, size_t extra, size_t *n);
/* Write a new index file (NAME-index.new) of index SRC's samples, NF the
** schema's new field if one is being added (main.c, where the comment
** says the rest); the caller commits XM and installs OUT. */
int api_write_index(pagedb *db, pdb_msg *m, Index *src, const CatField *nf, int version, uint64_t end,
                    const ApiIxCopy *copy, Dx **out, DxMeta *xm);
/* Put the new index file X (written by api_write_index, XM committed) in
** force under DB.  With LIVE (the first commit of parts), DB's open readers
** read X from their next lookup, and the index replaced, if any reader was
** open, stays until the close (one a reader may be reading: api_retire_room
** made room for it before the commit); else it is freed (without LIVE no
** reader may be open). */
int api_install_index(pagedb *db, pdb_msg *m, Dx *x, int live);
/* Room to keep one more replaced index until the close (PAGEDB_NOMEM). */
int api_retire_room(pagedb *db, pdb_msg *m);
/* The alignment every stored value of DB's records gets. */
int api_records_align(const pagedb *db);
/* db->isbytes and the slots' layout from db->fields. */
void api_set_isbytes(pagedb *db);
/* Re-lay out slot S of NF fields for NF+1 fields (index.h). */
void api_widen_slot(uint64_t *t, int64_t id, const uint64_t *s, int nf);

/* Free a writer (flushing it) or a reader without touching db's lists
** (db->mu held).  A writer's failure is copied to OUT. */
int api_writer_free(pagedb_writer *w, pdb_msg *out);
void api_reader_free(pagedb_reader *r);

/* Read-ahead (prefetch.c): serve the next read, or the next N reads, of
** the order from the windows.  Each returns 1 if served, else 0 for the
** usual path; a read that follows the order moves its position either way. */
int pf_read(pagedb_reader *r, int64_t id, int field, const void **data, size_t *n);
int pf_read_batch(pagedb_reader *r, const int64_t *ids, int n, int field, const void **data, size_t *sizes);
void pf_free(pagedb_reader *r);

/* The slot of committed sample ID as reader R sees it (without R's memo):
** NULL if there is none, DX_BAD if the index file's entry is damaged. */
static inline const uint64_t *api_find(const pagedb_reader *r, int64_t id) {
  Dx *dx = atomic_load_explicit(&r->dx, memory_order_acquire);
  return dx ? dx_find(dx, id) : idx_find(atomic_load_explicit(&r->idx, memory_order_acquire), id);
}

/* Bytes a token of field F if it is a token field (a tensor field of rank
** 1, its dimension variable, an integer dtype: doc/format.md, "Token
** maps"), else 0. */
static inline int api_token_bytes(const CatField *f) {
  return f->type == PAGEDB_TENSOR && f->tensor.ndim == 1 && f->tensor.nvar == 1 && f->tensor.dtype >= PAGEDB_DT_INT8
                 && f->tensor.dtype <= PAGEDB_DT_UINT64
             ? f->tensor.esize
             : 0;
}

/* The index file's version for catalog FEATURES (doc/format.md,
** "Versions and compatibility"): 3 with chunks by reference, 2 with any
** other feature, else 1. */
static inline int api_ix_version(uint64_t features) {
  return features & CAT_FEATURE_CHUNKREF ? 3 : features ? 2 : 1;
}

/* Whether a first commit of parts into DB makes its index version 3 (chunks
** by reference, bit 3): unless a field is a token field, whose token maps
** are built from the slots (dindex.c). */
static inline int api_parts_chunkref(const pagedb *db) {
  if (db->features & CAT_FEATURE_PARTS) return (db->features & CAT_FEATURE_CHUNKREF) != 0;
  for (int f = 0; f < db->nfield; f++)
    if (api_token_bytes(&db->fields[f])) return 0;
  return 1;
}

/* The index version a commit of parts into DB needs: 3 with chunks by
** reference, else 2.  A first commit of parts writes the index anew when
** it is older (a dataset of tensor fields has version 2 already). */
static inline int api_parts_version(const pagedb *db) { return api_parts_chunkref(db) ? 3 : 2; }

/* Whether field F is stored in pages. */
static inline int api_is_bytes(const pagedb *db, int f) {
  return cat_type_stored(db->fields[f].type);
}

/*
** Offset and stored length of field F (BYTES or TEXT) of the sample in
** slot S.  The record is the sample's stored values in schema order, each
** starting at the first multiple of its field's alignment (G: isbytes) at
** or after the end of the one before (doc/format.md): the record's offset (word 1) is
** where the writer stood when the sample began, the zeros before each
** value are the record's.  Data-region offsets have the alignment of file
** offsets, since the region starts at a multiple of 4096.
*/
static inline void api_extent(const pagedb *db, const uint64_t *s, int f, uint64_t *off, uint64_t *len) {
  uint64_t o = s[1];
  for (int i = 0; i < f; i++)
    if (db->isbytes[i] && slot_has(s, i)) o = pdb_align(o, db->isbytes[i]) + slot_stored(s, db->nfield, i);
  assert(db->isbytes[f]);
  *off = pdb_align(o, db->isbytes[f]);
  *len = slot_stored(s, db->nfield, f);
}

/* The bytes the record of the sample in slot S takes: from its offset to
** the end of its last stored value, the padding included. */
static inline uint64_t api_record_len(const pagedb *db, const uint64_t *s) {
  uint64_t o = s[1];
  for (int f = 0; f < db->nfield; f++)
    if (db->isbytes[f] && slot_has(s, f)) o = pdb_align(o, db->isbytes[f]) + slot_stored(s, db->nfield, f);
  return o - s[1];
}

/* Whether R checks every value it reads against its checksum: asked to
** (PAGEDB_READ_VERIFY), or made to by a data file whose bytes others may
** have written (db->untrusted).  The flag only goes from 0 to 1. */
static inline int api_verifies(const pagedb_reader *r) {
  return r->verify || atomic_load_explicit(&r->db->untrusted, memory_order_relaxed);
}
/* Whether reads of FIELD by R return other bytes than those stored, or
** must check them: api_finish has work. */
static inline int api_must_finish(const pagedb_reader *r, int field) {
  return api_verifies(r) || PAGEDB_CODEC_KIND(r->db->fields[field].codec) != PAGEDB_CODEC_NONE;
}

/*
** Turn the stored bytes DATA[i] (SIZES[i] long) of field FIELD of samples
** IDS[0..N-1] into what the caller reads: checked against their checksums
** when R verifies, decompressed into R's buffer when compressed.  On
** failure, the entries from the failing one on are left as they were.
*/
int api_finish(pagedb_reader *r, const int64_t *ids, int n, int field, const void **data, size_t *sizes);

#endif /* PAGEDB_API_H */
