/*
** remote.h -- what the remote VFS (os_remote.c), its chunk cache (cache.c)
** and its HTTP transport (http.c) share.  Nothing here is public.
**
**   os_remote.c  the "http", "https" and "s3" VFSes: read-only files whose
**                bytes come from the cache
**   cache.c      fixed-size chunks of remote objects in files under
**                PAGEDB_CACHE_DIR, shared by every process of the machine
**   http.c       ranged GETs of one object through libcurl, many at once,
**                with retries; S3 signing; the ETag that pins a version
*/
#ifndef PAGEDB_REMOTE_H
#define PAGEDB_REMOTE_H

#include "os.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define RMT_ERR_MAX 512

/* One remote object: where it is, how to sign, and the version pinned at
** open (size and validator).  Immutable after rmt_open except the idle
** connection pool, which has its own lock. */
typedef struct RmtObject RmtObject;

/* One ranged GET.  The transport fills BUF with exactly N bytes at OFF or
** sets RC (and leaves BUF's contents unspecified). */
typedef struct RmtRange {
  uint8_t *buf;
  size_t n;
  uint64_t off;
  int rc;
} RmtRange;

/* Process-wide counters (pagedb_remote_stats). */
typedef struct RmtStats {
  _Atomic int64_t requests;     /* ranged GETs that delivered their bytes */
  _Atomic int64_t bytes;        /* bytes they delivered */
  _Atomic int64_t retries;      /* attempts repeated after a transient failure */
  _Atomic int64_t failures;     /* GETs that failed after the retry budget */
  _Atomic int64_t chunk_fetches;/* chunks fetched from the server into the cache */
  _Atomic int64_t chunk_hits;   /* chunks found in the cache and verified */
  _Atomic int64_t chunk_bad;    /* cached chunks rejected (damaged, truncated, foreign) */
  _Atomic int64_t chunk_forged; /* of those, chunks of a shared cache whose seal failed */
  _Atomic int64_t evictions;    /* chunk files evicted to keep the bound */
  _Atomic int64_t uncached;     /* chunks held in memory: no room in the cache */
  _Atomic int64_t cred_refreshes;        /* expiring credentials fetched again */
  _Atomic int64_t cred_refresh_failures; /* refreshes that failed (the old kept) */
} RmtStats;
extern RmtStats rmt_stats;

/* --- http.c --- */

/* Open PATH: parse it, read the credentials it needs, and ask the server
** for its size and ETag (HEAD).  On failure *OUT is NULL and MSG says why:
** PAGEDB_CANTOPEN_NOENT (404, no such bucket or key), PAGEDB_CANTOPEN
** (403, missing credentials, bad URL, server unreachable), PAGEDB_NOMEM. */
int rmt_open(const char *path, RmtObject **out, char *msg, size_t cap);
/* What a HEAD of the last RECENT_MS (2 s) said of PATH: 1 it exists, 0
** it does not (404), -1 nothing known.  rmt_open takes a 1 (no request). */
int rmt_recent(const char *path);
/* Forget what a HEAD said of PATH: this process has changed the object
** (rmt_put_file, rmt_delete), and its next open must ask again. */
void rmt_forget(const char *path);
/* HEAD up to 8 PATHS side by side and keep their answers (200 or 404) for
** rmt_recent and rmt_open; any other outcome is not kept (the question
** asked again by itself retries and reports it).  Paths answered in the
** last RECENT_MS are not asked again. */
void rmt_head_ahead(const char *const *paths, int n);
void rmt_close(RmtObject *o);
uint64_t rmt_size(const RmtObject *o);
/* The object's identity for the cache: URL, validator and size. */
const char *rmt_key(const RmtObject *o);
const char *rmt_url(const RmtObject *o);

/*
** Fetch the N ranges (each within the object) with up to the configured
** number of requests in flight, retrying transient failures (5xx, 429,
** resets, timeouts, truncated bodies) with exponential backoff.  Every
** response is checked: status 206, a Content-Range naming exactly the
** range asked and the object's size, a body of exactly that length, and
** the validator pinned at open (If-Match, and the response's ETag).
** Returns the first failure (each range's RC says which): PAGEDB_IOERR_REMOTE
** after the retry budget or on a permanent error, PAGEDB_IOERR_CHANGED if
** the object is no longer the version opened, PAGEDB_NOMEM; MSG then names
** the URL, the range and the HTTP status.
*/
int rmt_fetch(RmtObject *o, RmtRange *r, int n, char *msg, size_t cap);
/* As rmt_fetch, calling DONE(CTX, i) as soon as range i has arrived whole
** (so its bytes can be used while the others are in flight).  A range
** whose BUF is NULL gets a buffer from the pool when it starts, valid
** during DONE only: so only the requests in flight hold memory. */
int rmt_fetch_each(RmtObject *o, RmtRange *r, int n, void (*done)(void *ctx, int i), void *ctx, char *msg,
                   size_t cap);

/*
** As rmt_fetch, the bodies handed to SINK piece by piece instead of
** buffers (RmtRange.buf unused): BEGIN(CTX, i) when range i starts, again
** at each retry (what PUT gave before is void), returning 0 to pass range
** i over (it is then neither fetched nor failed, and END is not called for
** it) or 1 to fetch it; PUT(CTX, i, B, N, AT) the
** next N bytes, at offset AT of the range, returning 0 when it cannot take
** them (out of memory: the range then fails with PAGEDB_NOMEM); END(CTX,
** i, OK) once: OK 1 when the range arrived whole and checked, 0 when it
** failed for good.  END may be called without a BEGIN.
*/
typedef struct RmtSink {
  int (*begin)(void *ctx, int i);
  int (*put)(void *ctx, int i, const uint8_t *b, size_t n, uint64_t at);
  void (*end)(void *ctx, int i, int ok);
} RmtSink;
int rmt_fetch_sink(RmtObject *o, RmtRange *r, int n, const RmtSink *sink, void *ctx, char *msg, size_t cap);

/* S3 credentials and where they came from (creds.c). */
#define RMT_ID_MAX 256
#define RMT_SECRET_MAX 256
#define RMT_TOKEN_MAX 8192
#define RMT_CREDS_STATIC 0      /* pagedb_config, the environment, a profile */
#define RMT_CREDS_CONTAINER 1   /* the container's credentials service */
#define RMT_CREDS_IMDS 2        /* the instance metadata service */
typedef struct RmtCreds {
  char id[RMT_ID_MAX];
  char secret[RMT_SECRET_MAX];
  char token[RMT_TOKEN_MAX];    /* "" none */
  long long expires;            /* Unix seconds; 0 never */
  int kind;
  char source[640];             /* where from, for messages: never a secret */
} RmtCreds;
/* Find PATH's credentials, region (RCAP bytes) and endpoint (ECAP bytes)
** in the AWS tools' order (creds.c): PAGEDB_CANTOPEN with MSG (naming
** sources and files, never a secret) when there are none or a source is
** bad, PAGEDB_NOMEM. */
int rmt_creds_find(const char *path, RmtCreds *c, char *region, size_t rcap, char *endpoint, size_t ecap, char *msg,
                   size_t cap);
/* When C should be fetched again (Unix seconds), 0 never. */
long long rmt_creds_due(const RmtCreds *c);
/* Fetch C again from its service: 0, or -1 with WHY (C unchanged). */
int rmt_creds_refresh(RmtCreds *c, char *why, size_t cap);

/* A response's headers of interest (rmt_setup fills them). */
typedef struct RmtResp {
  char etag[256];
  char lastmod[128];
  char crange[128];
} RmtResp;

/* O for PATH (a URL) with its address and signing, asking the server
** nothing (a destination of an upload): PAGEDB_CANTOPEN (bad URL, missing
** credentials), PAGEDB_NOMEM.  Closed with rmt_close. */
int rmt_target(const char *path, RmtObject **out, char *msg, size_t cap);
/* Set curl easy handle EASY up for a request to O's URL: timeouts, S3
** signing, response headers into H, curl's error text into ERR (of
** CURL_ERROR_SIZE), the object's headers (signing, If-Match).  The caller
** adds method and body. */
void rmt_setup(RmtObject *o, void *easy, RmtResp *h, char *err);
const char *rmt_fetch_url(const RmtObject *o);
/* The ETag pinned at open ("" none), and the validator: the ETag, else the
** Last-Modified ("" neither). */
const char *rmt_etag(const RmtObject *o);
const char *rmt_validator(const RmtObject *o);
/* A condition header for O's requests ("If-Match: E", "If-None-Match: *"),
** sent on every request of O from now on: for a target (rmt_target) not
** yet used by any request.  PAGEDB_TOOBIG, PAGEDB_NOMEM. */
int rmt_condition(RmtObject *o, const char *hdr);
int rmt_is_s3(const RmtObject *o);
int rmt_retries(const RmtObject *o);

/* Whether curl result CC is a TLS failure (a certificate that does not
** verify, a CA bundle that cannot be read): permanent, never retried. */
int rmt_tls_failure(int cc);

/* --- upload.c --- */

/* Upload the first LEN bytes of local file LOCAL as object URL (s3:// or
** http(s):// PUT).  An S3 object larger than the part size
** (PAGEDB_PUSH_PART_BYTES, default 32M, at least 5M) goes up by multipart
** upload, PAGEDB_PUSH_PARALLEL parts at once, aborted on failure (so no
** object appears); anything else by one
** PUT.  Transient failures are retried as reads are.  PAGEDB_IOERR_REMOTE
** with MSG naming the URL, the request and the HTTP status;
** PAGEDB_CANTOPEN (bad URL, no credentials, LOCAL unreadable);
** PAGEDB_NOMEM.  COND, if not NULL, is a condition header sent with the
** PUT ("If-Match: E", "If-None-Match: *"; rmt_condition); the upload is
** then one PUT whatever its size, and a 412 answer (the condition does not
** hold: nothing stored) is PAGEDB_BUSY, never retried. */
int rmt_put_file(const char *url, const char *local, uint64_t len, const char *cond, char *msg, size_t cap);
/* Whether an upload to URL can start: its address, credentials and the
** settings (rconfig.c) all usable, asking the server nothing.  PAGEDB_OK,
** or PAGEDB_CANTOPEN with MSG saying what is wrong; PAGEDB_NOMEM. */
int rmt_push_check(const char *url, char *msg, size_t cap);
/* Delete object URL (absent is fine): PAGEDB_IOERR_REMOTE, CANTOPEN. */
int rmt_delete(const char *url, char *msg, size_t cap);
/* Download object URL into the new local file LOCAL (created with O_EXCL,
** synced): its first LIMIT bytes (UINT64_MAX: whole), the file then
** extended to the object's size (a hole past LIMIT).  The ETag of the
** version read into ETAG (ECAP bytes) if ETAG is not NULL.
** PAGEDB_CANTOPEN_NOENT if it does not exist, else as rmt_open and
** rmt_fetch; on failure LOCAL is removed. */
int rmt_get_file(const char *url, const char *local, uint64_t limit, char *etag, size_t ecap, char *msg,
                 size_t cap);
/* Call EACH(CTX, KEY, SIZE, MTIME) for every object of S3 bucket URL's
** bucket whose key begins with URL's key (ListObjectsV2, page by page);
** MTIME Unix seconds.  EACH returns 0 to go on.  PAGEDB_IOERR_REMOTE,
** PAGEDB_CANTOPEN (not s3://), PAGEDB_NOMEM, or EACH's nonzero result. */
int rmt_list(const char *url, int (*each)(void *ctx, const char *key, uint64_t size, long long mtime), void *ctx,
             char *msg, size_t cap);

/* --- os_remote.c --- */

/* The validator (rmt_validator) of F if F is a file of a remote VFS,
** copied into OUT (CAP bytes): 1; else 0 (OUT ""). */
int rmt_file_validator(pagedb_file *f, char *out, size_t cap);

/* --- cache.c --- */

typedef struct RcObj RcObj;

/* A chunk held by this process: its bytes stay mapped and shared-locked
** (so no other process evicts its file) until rc_release. */
typedef struct RcHeld {
  uint64_t k;               /* chunk number */
  const uint8_t *data;      /* its bytes */
  size_t len;               /* how many */
  void *base;               /* the mapping to release */
  size_t maplen;
} RcHeld;

/* The cache's view of object O (owned by the caller, who closes it after
** rc_close).  PAGEDB_NOMEM or PAGEDB_CANTOPEN (cache directory unusable). */
int rc_open(RmtObject *o, RcObj **out, char *msg, size_t cap);
/* The same for a file read in small pieces at random (the index, the
** catalog: opened with PAGEDB_VFS_PLAIN): chunks of RC_SMALL_CHUNK bytes
** (or the configured size if smaller), in a directory of their own, so
** that a lookup or a page read does not fetch and write a whole large
** chunk. */
#define RC_SMALL_CHUNK (64u << 10)
int rc_open_small(RmtObject *o, RcObj **out, char *msg, size_t cap);
void rc_close(RcObj *c);
uint64_t rc_chunk_size(const RcObj *c);
uint64_t rc_bound(const RcObj *c);

/*
** Hold chunks K[0..N): each from a verified cache file, else fetched (by
** this process, or by another that was fetching it already: then waited
** for) and stored.  AT, if not NULL, gives for each chunk a page-aligned
** address where its bytes must be mapped (MAP_FIXED, within a reservation
** of the caller's); else the mapping goes anywhere.  A chunk the cache has
** no room for is held in private memory.  On failure the chunks already
** held are released and MSG says why.
*/
int rc_hold(RcObj *c, const uint64_t *k, int n, void *const *at, RcHeld *out, char *msg, size_t cap);
/* Release H: unmapped (or, for a fixed address, put back to an inaccessible
** reservation), which drops its shared lock. */
void rc_release(RcHeld *h, int fixed);
/*
** Chunk K fetched again over the object's own connection, whatever the
** cache holds: a reader found bytes in it that fail the dataset's own
** checksums (os_remote.c, xRefetch).  In a shared cache the file there is
** compared with the server's bytes and, if it differs (or is missing),
** replaced by them, sealed.  *OUT receives the bytes (pdb_malloc, *LEN of
** them: the caller frees), *DIFFERS 1 if the file held others, 0 the same,
** -1 no good file.  PAGEDB_NOMEM, or rmt_fetch's failure with MSG.
*/
int rc_refetch(RcObj *c, uint64_t k, uint8_t **out, size_t *len, int *differs, char *msg, size_t cap);
/* Whether C's bytes come through a directory others can write (a shared
** cache's sealed chunks), so that the reader must check them against the
** dataset's own checksums (PAGEDB_IOCAP_UNTRUSTED). */
int rc_untrusted(const RcObj *c);
/* A shared cache's object's first *N bytes as the server gave them at open
** (to derive its keys: at most 64 KiB), or NULL.  rc_file_agrees: whether
** chunk K's file in the shared cache holds the N bytes B at AT of the
** chunk: 1, 0 (it holds others), or -1 (no good file). */
const uint8_t *rc_seed(const RcObj *c, size_t *n);
int rc_file_agrees(RcObj *c, uint64_t k, uint64_t at, const uint8_t *b, size_t n);
/* Seal chunk K's LEN bytes B with C's key and put them in the shared
** cache in place of its file, as a fetch would: what any reader of the
** object can do (test/forgechunk.c plants forgeries with it).
** PAGEDB_MISUSE if C is not sealed or LEN is not the chunk's length. */
int rc_put_sealed(RcObj *c, uint64_t k, const uint8_t *b, size_t len);

#endif /* PAGEDB_REMOTE_H */
