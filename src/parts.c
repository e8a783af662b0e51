/*
** parts.c -- a dataset made of parts (doc/format.md, "Parts"): reading
** their samples through their windows.  Committing them is partscommit.c.
**
** A part is an ordinary dataset with DB's page size and schema, committed
** into DB by reference (partscommit.c): its page rows and index slots
** moved into the part's *window* (addresses from 2^56 + k * 2^42 for part
** k), and never a byte of its data file, which reads open where it lies.
**
** READS.  A part's data file is opened the first time this process reads
** one of its samples (part_get): its record in the index says where it is
** and what it must be (uuid, D, bytes in use), and the file is checked
** against it before any byte is trusted.  Handles live in a two-level
** table of pointers, leaves allocated on first use and entries published
** with a compare-and-swap, so that reading needs no lock and a process
** holds nothing for a part it has not read; what a zero-copy read needs
** of a part mapped whole lies in its entry (api.h, parts_mapped), in an
** array reserved for every part number, writable from part 0's entry up
** to the highest part opened, and charged for the pages written in.  A
** zero-copy pointer into a part's map lives until pagedb_close, as one
** into the own map does.
**
** SMALL PARTS COPIED.  A zero-copy reader's first touch of a local part
** whose data region is at most PAGEDB_CONFIG_PARTS_COPY bytes (16 KiB by
** default) reads it whole into memory of the handle's (at most
** PARTS_COPY_TOTAL bytes a handle) instead of mapping it: the part's BASE is
** that copy, kept unchanged until the close as a map would be, so pointers
** into it live as long.  A map per small part costs a VMA (of the 65,530 a
** process may have), a descriptor held until the close, and a page of its
** own however few bytes it holds; the copies of many small parts lie side by
** side, in blocks of the handle's (copy_room), in the order they were read
** (random reads of 1,000 parts of 10 tiny samples went from 76-82% of the
** one file's speed to 86-88%, and the reader's RSS after touching them all
** from +7.5 to +3.7 MB, with a heap block per copy; the blocks then gained
** 1-2 points more: doc/benchmarks.md).  A copied part's file stays in the
** bound's set and may be closed like any unmapped one.
**
** MAPS WITHOUT DESCRIPTORS.  Once a part is mapped whole for zero-copy
** reads, the handle that mapped it gives up its descriptor (pager_detach:
** the VFS's xDetach) and is kept as MP, for its map, which lives until the
** close as zero-copy pointers need; the part's next copy-mode read or scan
** opens and checks its file again, within the bound on open parts like any
** other.  A zero-copy reader of many parts then holds a map of each but at
** most PAGEDB_PARTS_OPEN descriptors.  A VFS that cannot detach, or whose
** maps are filled on demand, keeps the file open until the close.
*/
#include "api.h"
#include "os.h"
#if PAGEDB_HAVE_CURL
#include "remote.h"     /* rmt_file_validator: a remote part's ETag */
#endif

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* --- reading: the parts' data files ------------------------------------ */

typedef struct Part {
  /* The part's data file, read-only, mapped when zero-copy reads want it;
  ** NULL while the bound on open parts has closed it (never once mapped). */
  _Atomic(Pager *) p;
  _Atomic int users;        /* threads using P now (part_pin) */
  _Atomic int ref;          /* the clock's bit: used since the hand passed */
  uint64_t k;
  uint64_t end;             /* bytes of its data region in use (data_end) */
  uint64_t rec[6];          /* its record, as part_record gave it (for a reopen) */
  char *uri, *path;         /* its uri as recorded, and resolved */
  pthread_mutex_t map_mu;   /* making the map */
  _Atomic int mapped;       /* release: base, lim and fills are set; P stays open until the close unless COPY
                            ** or MP */
  const uint8_t *base;      /* its data region in the map or COPY (made once, kept until the close) */
  Pager *mp;                /* the pager of the map, its file detached (MAPS WITHOUT DESCRIPTORS), or NULL
                            ** (set under OPEN_MU) */
  int copied;               /* BASE is a copy of its data region (SMALL PARTS COPIED) */
  uint64_t lim;             /* bytes of the map from BASE */
  int fills;                /* the map must be filled before a read (pager_map_fills) */
} Part;

/*
** The bound on open parts (doc/format.md, open question 1): the parts whose
** file is open and not mapped are SET (N of CAP, CAP the bound), and a part
** opened past it closes one the clock's hand finds unused since it last
** passed.  A thread uses a part's file pinned (part_pin: USERS counted,
** then P loaded; the evictor swaps P out, then waits for USERS to drop:
** sequentially consistent, so one of the two sees the other) and never
** waits on OPEN_MU while it holds a pin.  A part mapped through P (a VFS
** that cannot detach, or fills its maps) leaves the set: a zero-copy
** pointer lives until pagedb_close, so its map and file stay; one mapped
** through MP stays in it (MAPS WITHOUT DESCRIPTORS).
*/
#define PT_LEAF 1024u
#define PT_TOP  ((size_t)(DX_PART_MAX + PT_LEAF - 1) / PT_LEAF)
typedef struct PartLeaf {
  _Atomic(Part *) pt[PT_LEAF];   /* release: the handle's END is set */
} PartLeaf;

/* A block of small parts' copies (SMALL PARTS COPIED): USED of CAP bytes
** from B given out (USED may pass CAP: a copy that did not fit). */
typedef struct CopyBlock {
  struct CopyBlock *next;   /* the block before */
  uint8_t *b;
  size_t cap;
  _Atomic size_t used;
} CopyBlock;

struct PartTab {
  PartEnt *ent;             /* PT_NENT entries (api.h): ENTS's bytes */
  PdbTable ents;            /* ...reserved, grown under OPEN_MU (mem.h, RESERVED TABLES) */
  _Atomic(PartLeaf *) leaf[PT_TOP];   /* the handles, a leaf of them made on first use (NULL: none) */
  _Atomic unsigned open_mu; /* tab_lock: 0 free, else 1 + the fork generation of its holder */
  _Atomic uint64_t copied;  /* bytes of small parts' copies (SMALL PARTS COPIED) */
  _Atomic(CopyBlock *) blocks;   /* ...which lie in these, the newest first */
  Part **set;
  size_t n, cap, hand;
};

/* The first byte of the entries a part may write: part 0's. */
#define ENT_FROM ((size_t)(DX_WIN_BASE >> DX_WIN_BITS) * sizeof(PartEnt))

/*
** OPEN_MU, a lock a forked child can take although a thread of its parent
** held it at the fork (a data loader's workers read through the handle
** they inherit: pagedb.h, "Processes"): the child takes it over, and
** forgets the set, which that thread may have left half changed (the files
** in it stay open in the child, unbounded).  Held for a file's open or
** close, never for a read.
*/
static void tab_lock(struct PartTab *t) {
  unsigned me = api_fork_gen() + 1;
  for (;;) {
    unsigned w = 0;
    if (atomic_compare_exchange_weak(&t->open_mu, &w, me)) return;
    if (w != 0 && w != me && atomic_compare_exchange_strong(&t->open_mu, &w, me)) {
      /* A new array too: the holder may have been reallocating the old. */
      Part **ns = pdb_malloc(t->cap * sizeof *ns);
      if (ns) t->set = ns;
      t->n = 0;
      t->hand = 0;
      return;
    }
    sched_yield();
  }
}

static void tab_unlock(struct PartTab *t) { atomic_store(&t->open_mu, 0); }

/* Small parts' copies: at most this many bytes a handle. */
#define PARTS_COPY_TOTAL ((uint64_t)256 << 20)

/* The largest part copied in force: PAGEDB_CONFIG_PARTS_COPY, else the
** environment's PAGEDB_PARTS_COPY, else 16 KiB. */
static _Atomic int64_t copy_max = -1;

int parts_copy_config(int64_t n) {
  if (n < -1 || n > PARTS_COPY_MAX) return PAGEDB_MISUSE;
  atomic_store(&copy_max, n);
  return PAGEDB_OK;
}

static uint64_t parts_copy_max(void) {
  int64_t n = atomic_load(&copy_max);
  if (n >= 0) return (uint64_t)n;
  const char *e = getenv("PAGEDB_PARTS_COPY");
  char *end = NULL;
  long long v = e && *e >= '0' && *e <= '9' ? strtoll(e, &end, 10) : -1;
  /* A bad value is the default, as for PAGEDB_PARTS_OPEN. */
  return v >= 0 && v <= PARTS_COPY_MAX && end && !*end ? (uint64_t)v : 16384;
}

/* The bound on open parts in force: PAGEDB_CONFIG_PARTS_OPEN, else the
** environment's PAGEDB_PARTS_OPEN, else 256. */
static _Atomic int64_t open_bound = -1;

int parts_open_config(int64_t n) {
  if (n < -1 || n == 0 || n > PARTS_OPEN_MAX) return PAGEDB_MISUSE;
  atomic_store(&open_bound, n);
  return PAGEDB_OK;
}

static size_t parts_bound(void) {
  int64_t n = atomic_load(&open_bound);
  if (n > 0) return (size_t)n;
  const char *e = getenv("PAGEDB_PARTS_OPEN");
  char *end = NULL;
  long long v = e && *e >= '1' && *e <= '9' ? strtoll(e, &end, 10) : 0;
  /* A bad value is the default: the bound is a resource limit, not data. */
  return v >= 1 && v <= PARTS_OPEN_MAX && end && !*end ? (size_t)v : 256;
}

/* Where part K's data file is: URI as recorded, relative to the directory
** that holds DB's data file unless absolute (PDB_MSG_MAX-sized OUT). */
static void part_path(const pagedb *db, const char *uri, char *out, size_t cap) {
  if (uri[0] == '/' || pdb_path_scheme(uri, NULL, 0)) {
    snprintf(out, cap, "%s", uri);
    return;
  }
  const char *slash = strrchr(db->path, '/');
  if (!slash) snprintf(out, cap, "%s", uri);
  else snprintf(out, cap, "%.*s/%s", (int)(slash - db->path), db->path, uri);
}

int parts_validator(pagedb_file *f, char *out, size_t cap) {
#if PAGEDB_HAVE_CURL
  return rmt_file_validator(f, out, cap);
#else
  (void)f;
  if (cap) out[0] = 0;
  return 0;
#endif
}

/* Part K's validator from its row of table part (part_changed). */
typedef struct ValFind {
  uint64_t k;
  char *val;
  size_t cap;
} ValFind;

static int val_find(void *ctx, const CatPart *p) {
  ValFind *f = ctx;
  if (p->k == f->k && p->validator) snprintf(f->val, f->cap, "%s", p->validator);
  return PAGEDB_OK;
}

/*
** Step 4 of "Reading a part's bytes": whether P, part K's data file, is
** remote and not the version committed -- the validator the remote VFS
** pinned at open (and sends as If-Match on every GET) differs from the one
** recorded in part K's record (or its row, without an index file in force).
*/
static int part_changed(pagedb *db, uint64_t k, Pager *p) {
  char now[4096], val[4096] = "";
  if (!parts_validator(pager_file(p), now, sizeof now)) return 0;   /* a local file */
  Dx *dx = idx_disk(db->idx);
  const uint64_t *r = dx ? dx_part(dx, k) : NULL;
  if (r) {
    (void)dx_part_string(dx, r, 1, val, sizeof val);   /* its strings were checked by part_record */
  } else if (!dx) {
    ValFind f = { k, val, sizeof val };
    pdb_msg em = { 0 };
    pthread_mutex_lock(&db->cat_mu);
    (void)cat_parts(db->cat, &em, val_find, &f);
    pthread_mutex_unlock(&db->cat_mu);
  }
  return val[0] && strcmp(now, val) != 0;
}

/* Part K's row of table part, for a handle with no index file in force. */
typedef struct RowFind {
  uint64_t k;
  int found;
  uint64_t rec[6];          /* as an index record: [1..2] uuid, [3] D, [4] bytes, [5] pages */
  char *uri;
  size_t cap;
} RowFind;

static int row_find(void *ctx, const CatPart *p) {
  RowFind *f = ctx;
  if (p->k != f->k) return PAGEDB_OK;
  uint8_t u[16];
  if (!pdb_uuid_parse(p->uuid, u) || !p->uri || strlen(p->uri) >= f->cap) return PAGEDB_CORRUPT;
  memcpy(&f->rec[1], u, 16);
  f->rec[3] = p->data_off;
  f->rec[4] = p->data_end;
  f->rec[5] = p->pages;
  strcpy(f->uri, p->uri);
  f->found = 1;
  return PAGEDB_OK;
}

/*
** Where part K is and what it must be (its index record: uuid, D, bytes
** in use, pages) into REC and URI (CAP bytes).  From the index file in
** force; a handle without one (a read-only open that found the index file
** missing or stale and scanned the catalog) reads the part's row of table
** part instead, the same values the commit wrote into both -- one query
** over the table, paid once per part a process opens.
*/
static int part_record(pagedb *db, pdb_msg *m, uint64_t k, uint64_t rec[6], char *uri, size_t cap) {
  Dx *dx = idx_disk(db->idx);
  if (dx) {
    const uint64_t *r = dx_part(dx, k);
    if (!r) return pdb_err(db, m, PAGEDB_CORRUPT_INDEX, "%s-index: the record of part %llu is missing or damaged",
                           db->path, (unsigned long long)k);
    memcpy(rec, r, 6 * sizeof *rec);
    int rc = dx_part_string(dx, r, 0, uri, cap);
    if (rc != PAGEDB_OK) return pdb_err(db, m, rc, "%s-index: the location of part %llu is damaged", db->path,
                                        (unsigned long long)k);
    return PAGEDB_OK;
  }
  RowFind f = { .k = k, .uri = uri, .cap = cap };
  pthread_mutex_lock(&db->cat_mu);
  int rc = cat_parts(db->cat, m, row_find, &f);
  pthread_mutex_unlock(&db->cat_mu);
  if (rc == PAGEDB_CORRUPT) rc = pdb_err(db, m, PAGEDB_CORRUPT, "%s-catalog: the row of part %llu is damaged",
                                         db->path, (unsigned long long)k);
  if (rc != PAGEDB_OK) return rc;
  if (!f.found) return pdb_err(db, m, PAGEDB_CORRUPT_INDEX, "%s: no part %llu in table part", db->path,
                               (unsigned long long)k);
  memcpy(rec, f.rec, sizeof f.rec);
  return PAGEDB_OK;
}

/* Open the data file of part PT and check it against its record
** (doc/format.md, "Reading a part's bytes", steps 2-3) into *OUT. */
static int part_file(pagedb *db, pdb_msg *m, Part *pt, Pager **out) {
  const uint64_t *rec = pt->rec;
  pdb_msg em = { 0 };
  pagedb_vfs *vfs = db->vfs;
  char why[PDB_MSG_MAX];
  if (pdb_path_scheme(pt->path, NULL, 0) && pdb_vfs_choose(pt->path, NULL, 0, &vfs, why, sizeof why) != PAGEDB_OK)
    return pdb_err(db, m, PAGEDB_CANTOPEN, "%s: part %llu (%s): %s", db->path, (unsigned long long)pt->k, pt->uri, why);
  Pager *p = NULL;
  int rc = pager_open(db, &em, vfs, pt->path, 1, &p);
  const char *bad = NULL;
  if (rc == PAGEDB_OK) {
    if (memcmp(pager_uuid(p), &rec[1], 16) != 0) {
      rc = PAGEDB_NOTADB_MISMATCH;
      bad = "its data file belongs to another dataset (its uuid changed: was the part vacuumed or replaced?)";
    } else if (pager_page_size(p) != pager_page_size(db->pager) || pager_data_off(p) != rec[3]) {
      rc = PAGEDB_NOTADB_MISMATCH;
      bad = "its data file's page size or data offset changed";
    } else {
      /* Its length must hold what the commit recorded (step 3). */
      uint64_t ps = pager_page_size(p);
      rc = pager_recover(p, &em, rec[5], rec[4], 0);
      if (rc == PAGEDB_OK && NEVER(rec[5] > ((uint64_t)1 << DX_WIN_BITS) / ps)) rc = PAGEDB_CORRUPT_INDEX;
    }
  } else if (strstr(pdb_msg_text(&em), "Too many open files")) {
    bad = "too many open files: reads keep up to PAGEDB_PARTS_OPEN parts' files open (zero-copy ones also each"
          " part they mapped, where the VFS cannot give up a mapped file's descriptor): lower PAGEDB_PARTS_OPEN,"
          " raise the limit (ulimit -n) or vacuum the dataset into one file";
  }
  /* A changed object explains any other mismatch: said first. */
  if (p && part_changed(db, pt->k, p)) {
    rc = PAGEDB_IOERR_CHANGED;
    bad = "its data object changed since it was committed (its ETag is not the one recorded)";
  }
  if (rc != PAGEDB_OK) {
    rc = pdb_err(db, m, rc, "%s: part %llu (%s): %s", db->path, (unsigned long long)pt->k, pt->uri,
                 bad ? bad : pdb_msg_text(&em));
    pager_close(p);
    return rc;
  }
  if (pager_untrusted(p)) atomic_store(&db->untrusted, 1);   /* a remote part over a shared cache */
  *out = p;
  return PAGEDB_OK;
}

static void part_free(Part *pt) {
  pager_close(atomic_load(&pt->p));
  pager_close(pt->mp);
  pthread_mutex_destroy(&pt->map_mu);
  pdb_free(pt->uri);
  pdb_free(pt->path);
  pdb_free(pt);
}

/* Part K's handle: its record read and checked (step 1), its file opened
** and checked (steps 2-3). */
static int part_open(pagedb *db, pdb_msg *m, uint64_t k, Part **out) {
  char uri[4096], path[4096 + PDB_MSG_MAX];
  Part *pt = pdb_calloc(1, sizeof *pt);
  if (!pt) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening part %llu of %s", (unsigned long long)k, db->path);
  pthread_mutex_init(&pt->map_mu, NULL);
  pt->k = k;
  int rc = part_record(db, m, k, pt->rec, uri, sizeof uri);
  if (rc == PAGEDB_OK) {
    part_path(db, uri, path, sizeof path);
    pt->uri = pdb_strdup(uri);
    pt->path = pdb_strdup(path);
    if (!pt->uri || !pt->path) rc = pdb_err(db, m, PAGEDB_NOMEM, "out of memory opening part %llu of %s",
                                            (unsigned long long)k, db->path);
  }
  Pager *p = NULL;
  if (rc == PAGEDB_OK) rc = part_file(db, m, pt, &p);
  if (rc != PAGEDB_OK) {
    part_free(pt);
    return rc;
  }
  atomic_store(&pt->p, p);
  pt->end = pt->rec[4];
  *out = pt;
  return PAGEDB_OK;
}

/* Close a file of SET to make room (OPEN_MU held): the first the hand finds
** neither in use nor used since it last passed; mapped parts leave the set.
** 0 when every one is in use. */
static int set_evict(struct PartTab *t, size_t *slot) {
  for (size_t steps = 0; t->n > 0 && steps < 2 * t->n + 2; steps++) {
    if (t->hand >= t->n) t->hand = 0;
    Part *c = t->set[t->hand];
    if (atomic_load(&c->mapped) && !c->copied && !c->mp) {
      t->set[t->hand] = t->set[--t->n];
      continue;
    }
    if (atomic_load(&c->users) || atomic_exchange(&c->ref, 0)) {
      t->hand++;
      continue;
    }
    Pager *p = atomic_exchange(&c->p, NULL);
    while (atomic_load(&c->users)) sched_yield();   /* a pin that raced the swap: one read */
    if (atomic_load(&c->mapped) && !c->copied && !c->mp) {
      /* Mapped meanwhile (its mapper held a pin): it stays open. */
      atomic_store(&c->p, p);
      t->set[t->hand] = t->set[--t->n];
      continue;
    }
    pager_close(p);
    *slot = t->hand++;
    return 1;
  }
  return 0;
}

/* Put PT, whose file is open, in the set (OPEN_MU held), closing another's
** past the bound; past it while every open part is in use, the set grows. */
static void set_add(struct PartTab *t, Part *pt) {
  size_t slot;
  if (t->n < t->cap) {
    t->set[t->n++] = pt;
  } else if (set_evict(t, &slot)) {
    t->set[slot] = pt;
  } else {
    Part **ns = pdb_realloc(t->set, 2 * t->cap * sizeof *ns);
    if (!ns) return;        /* then it is simply not bounded: still correct */
    t->set = ns;
    t->cap *= 2;
    t->set[t->n++] = pt;
  }
}

/* PT's file, pinned (part_unpin after use), reopened and checked again if
** the bound closed it.  A reopened file is pinned before OPEN_MU is let go,
** so that no other thread's open can close it again first. */
static int part_pin(pagedb *db, pdb_msg *m, Part *pt, Pager **out) {
  atomic_fetch_add(&pt->users, 1);
  Pager *p = atomic_load(&pt->p);
  if (LIKELY(p != NULL)) {
    atomic_store_explicit(&pt->ref, 1, memory_order_relaxed);
    *out = p;
    return PAGEDB_OK;
  }
  atomic_fetch_sub(&pt->users, 1);
  struct PartTab *t = atomic_load(&db->ptab);
  tab_lock(t);
  int rc = PAGEDB_OK;
  if (!atomic_load(&pt->p)) {
    rc = part_file(db, m, pt, &p);
    if (rc == PAGEDB_OK) {
      atomic_store(&pt->p, p);
      set_add(t, pt);
    }
  }
  if (rc == PAGEDB_OK) {
    /* Only a thread holding OPEN_MU closes a file: P stays until the pin. */
    atomic_fetch_add(&pt->users, 1);
    atomic_store_explicit(&pt->ref, 1, memory_order_relaxed);
    *out = atomic_load(&pt->p);
  }
  tab_unlock(t);
  return rc;
}

static void part_unpin(Part *pt) { atomic_fetch_sub(&pt->users, 1); }

/* The handle's table, made on first use (NULL: out of memory). */
static struct PartTab *part_tab(pagedb *db) {
  struct PartTab *t = atomic_load_explicit(&db->ptab, memory_order_acquire);
  if (t) return t;
  struct PartTab *nt = pdb_calloc(1, sizeof *nt);
  if (!nt) return NULL;
  nt->cap = parts_bound();
  nt->set = pdb_malloc(nt->cap * sizeof *nt->set);
  if (!nt->set || pdb_table_reserve(&nt->ents, PT_NENT * sizeof(PartEnt), ENT_FROM) != PAGEDB_OK) {
    pdb_table_release(&nt->ents);
    pdb_free(nt->set);
    pdb_free(nt);
    return NULL;
  }
  nt->ent = nt->ents.base;
  if (atomic_compare_exchange_strong(&db->ptab, &t, nt)) return nt;
  pdb_table_release(&nt->ents);
  pdb_free(nt->set);
  pdb_free(nt);
  return t;
}

const PartEnt *parts_entries(pagedb *db) {
  struct PartTab *t = atomic_load_explicit(&db->ptab, memory_order_acquire);
  return t ? t->ent : NULL;
}

/* The leaf of part K's handle in T, made on first use (NULL: out of memory). */
static PartLeaf *part_leaf(struct PartTab *t, uint64_t k) {
  PartLeaf *leaf = atomic_load_explicit(&t->leaf[k / PT_LEAF], memory_order_acquire);
  if (!leaf) {
    PartLeaf *nl = pdb_calloc(1, sizeof *nl);
    if (!nl) return NULL;
    if (!atomic_compare_exchange_strong(&t->leaf[k / PT_LEAF], &leaf, nl)) pdb_free(nl);
    else leaf = nl;
  }
  return leaf;
}

/* The handle of part K, opened on first use; lock-free once made. */
static int part_get(pagedb *db, pdb_msg *m, uint64_t k, Part **out, PartEnt **ent) {
  if (k >= DX_PART_MAX) return pdb_err(db, m, PAGEDB_CORRUPT_INDEX, "%s: address of part %llu, past the last possible",
                                       db->path, (unsigned long long)k);
  struct PartTab *t = part_tab(db);
  PartLeaf *leaf = t ? part_leaf(t, k) : NULL;
  if (!leaf) return pdb_err(db, m, PAGEDB_NOMEM, "out of memory reading the parts of %s", db->path);
  size_t ei = (size_t)(dx_window(k) >> DX_WIN_BITS);
  if (ent) *ent = &t->ent[ei];
  _Atomic(Part *) *ptp = &leaf->pt[k % PT_LEAF];
  Part *pt = atomic_load_explicit(ptp, memory_order_acquire);
  if (LIKELY(pt != NULL)) {
    *out = pt;
    return PAGEDB_OK;
  }
  /* Made under the table's OPEN_MU: the new file counts against the bound
  ** (and no two threads open the same part at once); its entry writable
  ** before anyone can publish it (stored_mapped, after this). */
  tab_lock(t);
  int rc = PAGEDB_OK;
  pt = atomic_load_explicit(ptp, memory_order_acquire);
  if (!pt && pdb_table_grow(&t->ents, ei * sizeof(PartEnt), sizeof(PartEnt)) != PAGEDB_OK)
    rc = pdb_err(db, m, PAGEDB_NOMEM, "out of memory reading the parts of %s", db->path);
  else if (!pt && (rc = part_open(db, m, k, &pt)) == PAGEDB_OK) {
    set_add(t, pt);
    atomic_store_explicit(ptp, pt, memory_order_release);
  }
  tab_unlock(t);
  if (rc != PAGEDB_OK) return rc;
  *out = pt;
  return PAGEDB_OK;
}

void parts_close(pagedb *db) {
  struct PartTab *t = atomic_exchange(&db->ptab, NULL);
  if (!t) return;
  for (size_t i = 0; i < PT_TOP; i++) {
    PartLeaf *leaf = t->leaf[i];
    if (!leaf) continue;
    for (uint64_t j = 0; j < PT_LEAF; j++)
      if (leaf->pt[j]) part_free(leaf->pt[j]);
    pdb_free(leaf);
  }
  for (CopyBlock *b = t->blocks, *nb; b; b = nb) {
    nb = b->next;
    pdb_free(b);
  }
  pdb_table_release(&t->ents);
  pdb_free(t->set);
  pdb_free(t);
}


/* The part of address OFF, its handle (and entry), and OFF as an offset in
** its data region; the extent [OFF, OFF+LEN) must lie in what the part uses. */
static int part_at(pagedb *db, pdb_msg *m, uint64_t off, uint64_t len, Part **pt, PartEnt **ent, uint64_t *rel) {
  uint64_t k = dx_part_of(off);
  int rc = part_get(db, m, k, pt, ent);
  if (rc != PAGEDB_OK) return rc;
  *rel = off - dx_window(k);
  if (*rel > (*pt)->end || len > (*pt)->end - *rel)
    return pdb_err(db, m, PAGEDB_CORRUPT_INDEX, "%s: %llu bytes at offset %llu of part %llu lie past the %llu bytes"
                   " it was committed with", db->path, (unsigned long long)len, (unsigned long long)*rel,
                   (unsigned long long)k, (unsigned long long)(*pt)->end);
  return PAGEDB_OK;
}

/* Blocks of copies: the first of COPY_BLOCK_MIN bytes, each next twice
** the last up to COPY_BLOCK_MAX, so that a reader of a few small parts
** holds little, and one of thousands holds them side by side. */
#define COPY_BLOCK_MIN ((size_t)64 << 10)
#define COPY_BLOCK_MAX ((size_t)2 << 20)

/* N bytes, aligned to A (a power of two), in T's blocks of copies; NULL
** when out of memory.  Lock-free (a thread copying a part holds a pin, and
** must not wait on OPEN_MU): a block is carved by an atomic add, and a
** new one pushed by a compare-and-swap, the loser's freed. */
static uint8_t *copy_room(struct PartTab *t, size_t n, size_t a) {
  size_t need = (n + a - 1) & ~(a - 1);
  for (;;) {
    CopyBlock *b = atomic_load(&t->blocks);
    if (b) {
      size_t at = atomic_fetch_add(&b->used, need);
      if (at <= b->cap && need <= b->cap - at) return b->b + at;
    }
    size_t cap = b ? b->cap * 2 : COPY_BLOCK_MIN;
    if (cap > COPY_BLOCK_MAX) cap = COPY_BLOCK_MAX;
    if (cap < need) cap = need;
    CopyBlock *nb = pdb_malloc(sizeof *nb + cap + a);
    if (!nb) return NULL;
    nb->b = (uint8_t *)(((uintptr_t)(nb + 1) + a - 1) & ~(uintptr_t)(a - 1));
    nb->cap = cap;
    atomic_init(&nb->used, need);
    nb->next = b;
    if (atomic_compare_exchange_strong(&t->blocks, &b, nb)) return nb->b;
    pdb_free(nb);
  }
}

/* SMALL PARTS COPIED: part PT's data region read from P (pinned) into the
** handle's blocks of copies, PT's BASE and LIM set to it, when they have
** room (else nothing: it is mapped).  MAP_MU held.  The copy is aligned as
** the values in it need (the dataset's G, at least 8), and lies next to
** the part copied before it: random reads of 1,000 parts of 10 tiny samples
** touched 272 pages of copies each in a block of its own among the parts'
** handles, and touch 124 now, as many as the same bytes in one file (107)
** give or take the alignment (doc/benchmarks.md). */
static int copy_part(pagedb *db, pdb_msg *m, Part *pt, Pager *p) {
  struct PartTab *t = atomic_load(&db->ptab);
  uint64_t n = pt->end;
  size_t a = (size_t)api_records_align(db);
  if (a < 8) a = 8;
  if (atomic_fetch_add(&t->copied, n + a) + n + a > PARTS_COPY_TOTAL) {
    atomic_fetch_sub(&t->copied, n + a);
    return PAGEDB_OK;
  }
  uint8_t *dst = copy_room(t, (size_t)n, a);
  if (!dst) {
    atomic_fetch_sub(&t->copied, n + a);
    return PAGEDB_OK;   /* mapped instead */
  }
  /* Through the pager, as a copy-mode read (the backend's alignment and
  ** retries); its buffer then goes.  (A failure leaves DST unused until
  ** the close: counted still.) */
  uint8_t *buf = NULL;
  size_t cap = 0;
  const uint8_t *src = NULL;
  int rc = n ? pager_fetch(p, m, 0, (size_t)n, &buf, &cap, &src) : PAGEDB_OK;
  if (rc == PAGEDB_OK && n) memcpy(dst, src, (size_t)n);
  pdb_buf_free(buf);   /* (a pool buffer: pager.c, reserve) */
  if (rc != PAGEDB_OK) return rc;
  pt->copied = 1;
  pt->base = dst;
  pt->lim = n;
  pt->fills = 0;
  return PAGEDB_OK;
}

/* Entry E of part PT, mapped whole at PT's BASE (or copied there): the
** reader's one compare and one add from now on (parts_mapped, api.h). */
static void ent_publish(PartEnt *e, const Part *pt) {
  e->bias = (uintptr_t)pt->base - dx_window(pt->k);
  atomic_store_explicit(&e->lim, dx_window(pt->k) + pt->end, memory_order_release);
}

/* MAPS WITHOUT DESCRIPTORS: part PT, just mapped whole through P, gives up
** P's descriptor: P, taken out of PT as the bound takes a file it closes
** (no pin may be held here: the wait below is the evictor's), becomes MP,
** its map kept; PT's next pin opens and checks its file again.  A VFS that
** cannot detach leaves P as it was, open until the close. */
static void give_up_descriptor(pagedb *db, Part *pt) {
  struct PartTab *t = atomic_load(&db->ptab);
  tab_lock(t);
  Pager *p = pt->mp ? NULL : atomic_exchange(&pt->p, NULL);
  while (p && atomic_load(&pt->users)) sched_yield();   /* a read under a pin: one */
  if (p && pager_detach(p)) {
    pt->mp = p;
    /* Out of the set too, as a file the bound closed: its reopen puts it back. */
    for (size_t i = 0; i < t->n; i++)
      if (t->set[i] == pt) {
        t->set[i] = t->set[--t->n];
        break;
      }
  } else if (p) {
    atomic_store(&pt->p, p);
  }
  tab_unlock(t);
}

/* parts_stored's zero-copy reads past the first of their part. */
static int stored_mapped(pagedb *db, pdb_msg *m, uint64_t off, uint64_t len, const uint8_t **src) {
  Part *pt = NULL;
  PartEnt *e = NULL;
  uint64_t rel = 0;
  int rc = part_at(db, m, off, len, &pt, &e, &rel);
  if (rc != PAGEDB_OK) return rc;
  /* The map is made once, its base and length kept in the handle (and, when
  ** it needs no filling, in the entry): a read then costs no lock and no
  ** call into the pager. */
  if (!atomic_load_explicit(&pt->mapped, memory_order_acquire)) {
    /* Mapped under a pin, and marked so before the pin goes: the bound then
    ** never closes it (set_evict), unless it is a copy. */
    Pager *p = NULL;
    if ((rc = part_pin(db, m, pt, &p)) != PAGEDB_OK) return rc;
    pthread_mutex_lock(&pt->map_mu);
    if (!atomic_load(&pt->mapped) && !pager_map_fills(p) && pt->end <= parts_copy_max()) {
      rc = copy_part(db, m, pt, p);
      if (rc == PAGEDB_OK && pt->copied) {
        atomic_store_explicit(&pt->mapped, 1, memory_order_release);
        ent_publish(e, pt);
      } else if (rc != PAGEDB_OK) {
        pthread_mutex_unlock(&pt->map_mu);
        part_unpin(pt);
        char why[PDB_MSG_MAX];
        snprintf(why, sizeof why, "%s", pdb_msg_text(m));
        return pdb_err(db, m, rc, "%s: cannot read part %llu into memory: %s", db->path, (unsigned long long)pt->k,
                       why);
      }
    }
    int detach = 0;
    if (rc == PAGEDB_OK && !atomic_load(&pt->mapped)) {
      rc = pager_map_ensure(p, m, pt->end, 1);
      if (rc == PAGEDB_OK) {
        pt->base = pager_map_span(p, &pt->lim);
        pt->fills = pager_map_fills(p);
        atomic_store_explicit(&pt->mapped, 1, memory_order_release);
        if (!pt->fills && pt->base && pt->lim >= pt->end) ent_publish(e, pt);
        detach = !pt->fills;
      }
    }
    pthread_mutex_unlock(&pt->map_mu);
    part_unpin(pt);
    if (detach) give_up_descriptor(db, pt);
    if (rc != PAGEDB_OK) {
      /* Most likely the process's maps are used up (vm.max_map_count). */
      char why[PDB_MSG_MAX];
      snprintf(why, sizeof why, "%s", pdb_msg_text(m));
      return pdb_err(db, m, rc, "%s: cannot map part %llu: %s (a zero-copy reader keeps a map of every part it"
                     " touched until pagedb_close, and Linux allows vm.max_map_count maps a process: read in copy"
                     " mode, vacuum the dataset into one file, or raise vm.max_map_count)", db->path,
                     (unsigned long long)pt->k, why);
    }
  }
  const uint8_t *base = pt->base;
  uint64_t lim = pt->lim;
  /* (Filled on demand: mapped through P, which stays open until the close.) */
  if (pt->fills && len > 0) rc = pager_map_fill(atomic_load(&pt->p), m, 1, &rel, &len);
  if (rc == PAGEDB_OK && NEVER(!base || rel + len > lim))
    rc = pdb_err(db, m, PAGEDB_IOERR, "%s: the map of part %llu does not cover its data", db->path,
                 (unsigned long long)dx_part_of(off));
  *src = base ? base + rel : (const uint8_t *)"";
  return rc;
}

int parts_stored(pagedb *db, pdb_msg *m, int mmap, uint64_t off, uint64_t len, uint8_t **buf, size_t *cap,
                 const uint8_t **src) {
  if (mmap) {
    /* The hot path (the reader inlines it too): the part's entry, mapped
    ** whole, and the bound. */
    struct PartTab *t = atomic_load_explicit(&db->ptab, memory_order_acquire);
    if (LIKELY(t != NULL && len <= UINT64_MAX - off && parts_mapped(t->ent, off, len, src)))
      return PAGEDB_OK;
    return stored_mapped(db, m, off, len, src);
  }
  Part *pt = NULL;
  uint64_t rel = 0;
  int rc = part_at(db, m, off, len, &pt, NULL, &rel);
  if (rc != PAGEDB_OK) return rc;
  *src = (const uint8_t *)"";
  if (len == 0) return PAGEDB_OK;
  Pager *p = NULL;
  if ((rc = part_pin(db, m, pt, &p)) != PAGEDB_OK) return rc;
  rc = pager_fetch(p, m, rel, (size_t)len, buf, cap, src);
  part_unpin(pt);
  return rc;
}

int parts_file(pagedb *db, pdb_msg *m, uint64_t k, Pager **p, uint64_t *end) {
  Part *pt = NULL;
  int rc = part_get(db, m, k, &pt, NULL);
  if (rc == PAGEDB_OK) rc = part_pin(db, m, pt, p);
  if (rc == PAGEDB_OK) *end = pt->end;
  return rc;
}

void parts_file_done(pagedb *db, uint64_t k) {
  struct PartTab *t = atomic_load(&db->ptab);
  PartLeaf *leaf = t && k < DX_PART_MAX ? atomic_load(&t->leaf[k / PT_LEAF]) : NULL;
  Part *pt = leaf ? atomic_load(&leaf->pt[k % PT_LEAF]) : NULL;
  if (NEVER(!pt)) return;
  part_unpin(pt);
}

int parts_pager_at(pagedb *db, pdb_msg *m, uint64_t off, uint64_t len, Pager **p, uint64_t *rel) {
  if (off < PDB_MAX_DATA) {
    *p = db->pager;
    *rel = off;
    return PAGEDB_OK;
  }
  Part *pt = NULL;
  int rc = part_at(db, m, off, len, &pt, NULL, rel);
  if (rc == PAGEDB_OK) rc = part_pin(db, m, pt, p);
  return rc;
}

void parts_pager_done(pagedb *db, uint64_t off) {
  if (off >= PDB_MAX_DATA) parts_file_done(db, dx_part_of(off));
}

int api_fetch(pagedb *db, pdb_msg *m, uint64_t off, size_t len, uint8_t **buf, size_t *cap, const uint8_t **at) {
  if (off < PDB_MAX_DATA) return pager_fetch(db->pager, m, off, len, buf, cap, at);
  return parts_stored(db, m, 0, off, len, buf, cap, at);
}

int64_t pagedb_part_count(pagedb *db) {
  if (!db || db->failed) return 0;
  Dx *dx = idx_disk(db->idx);
  /* Without an index file (a catalog scan: a pushed dataset with parts),
  ** meta.parts as the open read it. */
  return dx ? (int64_t)dx_parts(dx) : (int64_t)db->ixmeta.parts;
}

