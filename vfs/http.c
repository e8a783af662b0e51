/*
** http.c -- byte ranges of one remote object, through libcurl.
**
** An object is an http(s) URL, or s3://BUCKET/KEY: with AWS_ENDPOINT_URL
** set, the path-style URL ENDPOINT/BUCKET/KEY (Ceph, MinIO, ...), else
** AWS's virtual-hosted https://BUCKET.s3.REGION.amazonaws.com/KEY.  S3
** requests are signed with AWS Signature V4 by libcurl (CURLOPT_AWS_SIGV4)
** from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and
** AWS_REGION (default us-east-1), with the payload declared unsigned
** (x-amz-content-sha256: UNSIGNED-PAYLOAD, which the gateways require).
**
** INVARIANTS
**
**   1. The version read is the one seen at open: its size and ETag (or,
**      without an ETag, its Last-Modified) are pinned by rmt_open, every
**      GET carries If-Match (so a server that honours it answers 412 to a
**      changed object) and every response's validator is compared too, so
**      a read never mixes two versions: it fails with PAGEDB_IOERR_CHANGED.
**   2. A range is delivered only whole: status 206, a Content-Range that
**      names exactly the bytes asked and the pinned size, and a body of
**      exactly that length (a longer one is cut off at the first extra
**      byte).  Anything else is a failure, never bytes.
**   3. Nothing waits forever: every attempt has a total timeout
**      (PAGEDB_REMOTE_TIMEOUT_MS), a transient failure (5xx, 408, 429, a
**      reset, a timeout, a truncated body) is retried at most
**      PAGEDB_REMOTE_RETRIES times with exponential backoff, so a fetch
**      ends within (retries + 1) x (timeout + 2 s).
**   4. S3 credentials (creds.c) are fetched again before they expire, by
**      the first request set up after they are due (rmt_setup), under the
**      object's credentials lock: every request of every thread is signed
**      with one whole set.  A header list a refresh replaces may be in use
**      by a request in flight, so it is kept until the object is closed.
**      Secrets are never put into a message (the source is named).
**
** Bodies go to a buffer per range (rmt_fetch, rmt_fetch_each) or, piece
** by piece as curl receives them, to a sink (rmt_fetch_sink: the cache
** writes them into the chunk's file and sums them on the way).  HEAD
** answers are kept for RECENT_MS for the questions that follow (pagedb_open
** asks whether a file exists, then opens it), and the HEADs of a dataset's
** files are sent side by side ahead of them (rmt_head_ahead).
**
** Connections: a fetch borrows a curl multi handle with its easy handles
** from the object's idle pool (under the object's mutex) and gives it back
** after, so their connections are reused by the next fetch, and a batch
** keeps up to PAGEDB_REMOTE_CONNECTIONS requests in flight at once.
*/
#define _GNU_SOURCE
#include "remote.h"

#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

RmtStats rmt_stats;

#define MAX_FLIGHT 64

typedef struct Conn {
  struct Conn *next;
  CURLM *multi;
  CURL *easy[MAX_FLIGHT];
} Conn;

struct RmtObject {
  char *path;               /* as given, for messages */
  char *url;                /* what is fetched */
  char *key;                /* url, validator and size: the cache's key */
  int s3;
  char *sigv4;              /* "aws:amz:REGION:s3" */
  char *userpwd;            /* "KEY:SECRET" (under cmu) */
  char *cainfo;             /* the CA bundle for TLS, or NULL: libcurl's */
  struct curl_slist *hdrs;  /* signing and If-Match headers (under cmu) */
  RmtCreds *creds;          /* S3: the credentials signed with (under cmu) */
  long long due;            /* when to fetch them again (0 never), under cmu */
  long long retry_at;       /* after a failed refresh, not before this */
  struct Retired *retired;  /* header lists replaced by a refresh */
  pthread_mutex_t cmu;      /* guards the credentials (invariant 4) */
  uint64_t size;
  char etag[256];           /* "" when the server gives none */
  char lastmod[128];
  char cond[320];           /* a write's condition header (rmt_condition), or "" */
  long timeout_ms;
  int retries;
  int flight;
  pthread_mutex_t mu;       /* guards idle */
  Conn *idle;
};

/* A header list replaced while requests may still use it: freed at close. */
typedef struct Retired {
  struct Retired *next;
  struct curl_slist *l;
} Retired;

typedef RmtResp Resp;

typedef struct Xfer {
  RmtRange *r;
  size_t got;
  int overflow;             /* the body was longer than asked */
  int nomem;                /* the sink could not take a piece */
  int i;                    /* the range's index, for the sink */
  const RmtSink *sink;      /* NULL: the body goes to r->buf */
  void *ctx;
  int attempt;
  long long due;            /* ms: when to (re)start */
  Resp h;
  char err[CURL_ERROR_SIZE];
} Xfer;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }
static void curl_once(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, curl_init);
}

/* Append S to OUT (CAP bytes), escaping what a URL path may not hold; '/'
** kept.  Returns 0 on overflow. */
static int url_escape(char *out, size_t cap, const char *s) {
  size_t o = strlen(out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    int keep = isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/';
    if (o + 4 >= cap) return 0;
    if (keep) out[o++] = (char)c;
    else o += (size_t)snprintf(out + o, cap - o, "%%%02X", c);
  }
  out[o] = 0;
  return 1;
}

/* Wipe and free secret S. */
static void free_secret(char *s) {
  if (!s) return;
  explicit_bzero(s, strlen(s));
  pdb_free(s);
}

/* O's header list: the S3 payload and token headers (from O's
** credentials), then If-Match when O has an ETag.  NULL when there are
** none or out of memory (*NOMEM). */
static struct curl_slist *build_hdrs(RmtObject *o, int *nomem) {
  struct curl_slist *l = NULL, *t;
  char hdr[RMT_TOKEN_MAX + 64];
  *nomem = 0;
  if (o->s3) {
    if (!(l = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD"))) return *nomem = 1, NULL;
    if (o->creds->token[0]) {
      snprintf(hdr, sizeof hdr, "x-amz-security-token: %s", o->creds->token);
      t = curl_slist_append(l, hdr);
      explicit_bzero(hdr, sizeof hdr);
      if (!t) return curl_slist_free_all(l), *nomem = 1, NULL;
      l = t;
    }
  }
  if (o->etag[0] || o->cond[0]) {
    if (o->cond[0]) snprintf(hdr, sizeof hdr, "%s", o->cond);
    else snprintf(hdr, sizeof hdr, "If-Match: %s", o->etag);
    if (!(t = curl_slist_append(l, hdr))) return curl_slist_free_all(l), *nomem = 1, NULL;
    l = t;
  }
  return l;
}

/* Make O's signing (userpwd, headers) from its credentials, keeping the
** header list replaced (invariant 4).  0 when out of memory (O as it
** was).  Caller holds cmu, or O is not shared yet. */
static int sign_with(RmtObject *o) {
  size_t n = strlen(o->creds->id) + strlen(o->creds->secret) + 2;
  char *up = pdb_malloc(n);
  Retired *r = o->hdrs ? pdb_malloc(sizeof *r) : NULL;
  int nomem = 0;
  struct curl_slist *l = up && (r || !o->hdrs) ? build_hdrs(o, &nomem) : NULL;
  if (!up || (o->hdrs && !r) || !l) {
    free_secret(up);
    pdb_free(r);
    curl_slist_free_all(l);
    return 0;
  }
  snprintf(up, n, "%s:%s", o->creds->id, o->creds->secret);
  free_secret(o->userpwd);
  o->userpwd = up;
  if (o->hdrs) {
    r->l = o->hdrs;
    r->next = o->retired;
    o->retired = r;
  }
  o->hdrs = l;
  return 1;
}

/* S3: fetch O's credentials again when they are due (invariant 4).  A
** failed refresh keeps the credentials (they may still be good) and is
** tried again after 10 s.  Caller holds cmu. */
static void refresh_due(RmtObject *o) {
  long long now = (long long)time(NULL);
  if (!o->due || now < o->due || now < o->retry_at) return;
  RmtCreds *n = pdb_malloc(sizeof *n);
  char why[512];
  if (n) *n = *o->creds;
  if (n && rmt_creds_refresh(n, why, sizeof why) == 0) {
    RmtCreds *old = o->creds;
    o->creds = n;
    if (sign_with(o)) {
      explicit_bzero(old, sizeof *old);
      pdb_free(old);
      o->due = rmt_creds_due(o->creds);
      atomic_fetch_add(&rmt_stats.cred_refreshes, 1);
      return;
    }
    o->creds = old;
  }
  if (n) explicit_bzero(n, sizeof *n);
  pdb_free(n);
  atomic_fetch_add(&rmt_stats.cred_refresh_failures, 1);
  o->retry_at = now + 10;
}

/* Fill O's url and signing from its path. */
static int parse(RmtObject *o, char *msg, size_t cap) {
  const char *p = o->path;
  if (strncmp(p, "http://", 7) == 0 || strncmp(p, "https://", 8) == 0) {
    const char *host = strstr(p, "://") + 3;
    if (!*host || *host == '/' || !strchr(host, '/') || strchr(p, '#') || strchr(p, '?')) {
      snprintf(msg, cap, "%s: not a URL of an object (http://HOST[:PORT]/PATH, no query)", p);
      return PAGEDB_CANTOPEN;
    }
    return (o->url = pdb_strdup(p)) ? PAGEDB_OK : PAGEDB_NOMEM;
  }
  if (strncmp(p, "s3://", 5) != 0) {
    snprintf(msg, cap, "%s: unknown URL scheme", p);
    return PAGEDB_CANTOPEN;
  }
  const char *bucket = p + 5, *slash = strchr(bucket, '/');
  if (!slash || slash == bucket || !slash[1]) {
    snprintf(msg, cap, "%s: an S3 path is s3://BUCKET/KEY", p);
    return PAGEDB_CANTOPEN;
  }
  char region[256], endpoint[4096];
  if (!(o->creds = pdb_malloc(sizeof *o->creds))) return PAGEDB_NOMEM;
  int rc = rmt_creds_find(p, o->creds, region, sizeof region, endpoint, sizeof endpoint, msg, cap);
  if (rc != PAGEDB_OK) return rc;
  o->due = rmt_creds_due(o->creds);
  char url[8192];
  int blen = (int)(slash - bucket);
  if (*endpoint) {
    size_t e = strlen(endpoint);
    while (e > 0 && endpoint[e - 1] == '/') e--;
    snprintf(url, sizeof url, "%.*s/%.*s/", (int)e, endpoint, blen, bucket);
  } else {
    snprintf(url, sizeof url, "https://%.*s.s3.%s.amazonaws.com/", blen, bucket, region);
  }
  if (!url_escape(url, sizeof url, slash + 1)) {
    snprintf(msg, cap, "%s: the key is too long", p);
    return PAGEDB_CANTOPEN;
  }
  size_t rl = strspn(region, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_");
  if (!region[0] || region[rl] || rl > 64) {
    snprintf(msg, cap, "%s: S3 region '%.64s': not a region name (letters, digits, '-')", p, region);
    return PAGEDB_CANTOPEN;
  }
  char sig[128];
  snprintf(sig, sizeof sig, "aws:amz:%.64s:s3", region);
  o->s3 = 1;
  o->url = pdb_strdup(url);
  o->sigv4 = pdb_strdup(sig);
  if (!o->url || !o->sigv4) return PAGEDB_NOMEM;
  return sign_with(o) ? PAGEDB_OK : PAGEDB_NOMEM;
}

/* --- one request ---------------------------------------------------------- */

static size_t on_header(char *b, size_t size, size_t n, void *ctx) {
  Resp *h = ctx;
  size_t len = size * n;
  /* A new status line starts a new response (after a 100 Continue). */
  if (len > 5 && strncmp(b, "HTTP/", 5) == 0) memset(h, 0, sizeof *h);
  static const struct { const char *name; size_t off, cap; } want[] = {
    { "etag:", offsetof(Resp, etag), sizeof ((Resp *)0)->etag },
    { "last-modified:", offsetof(Resp, lastmod), sizeof ((Resp *)0)->lastmod },
    { "content-range:", offsetof(Resp, crange), sizeof ((Resp *)0)->crange },
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    size_t nl = strlen(want[i].name);
    if (len > nl && strncasecmp(b, want[i].name, nl) == 0) {
      const char *v = b + nl, *e = b + len;
      while (v < e && (*v == ' ' || *v == '\t')) v++;
      while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ')) e--;
      char *dst = (char *)h + want[i].off;
      size_t k = (size_t)(e - v) < want[i].cap - 1 ? (size_t)(e - v) : want[i].cap - 1;
      memcpy(dst, v, k);
      dst[k] = 0;
    }
  }
  return len;
}

static size_t on_body(char *b, size_t size, size_t n, void *ctx) {
  Xfer *x = ctx;
  size_t len = size * n;
  if (x->got + len > x->r->n) {
    x->overflow = 1;        /* invariant 2: never more than asked */
    return 0;
  }
  if (x->sink) {
    /* Each piece goes where it is kept, while it is in the CPU's cache. */
    if (!x->sink->put(x->ctx, x->i, (const uint8_t *)b, len, x->got)) {
      x->nomem = 1;
      return 0;
    }
  } else {
    memcpy(x->r->buf + x->got, b, len);
  }
  x->got += len;
  return len;
}

/* Set E up for O: shared options of every request. */
void rmt_setup(RmtObject *o, void *easy, RmtResp *h, char *err) {
  CURL *e = easy;
  curl_easy_reset(e);
  curl_easy_setopt(e, CURLOPT_URL, o->url);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, o->timeout_ms);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, o->timeout_ms < 10000 ? o->timeout_ms : 10000L);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  /* TLS: the peer and its name always verified (libcurl's defaults, set
  ** anyway: no path turns them off), against the bundle configured. */
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
  if (o->cainfo) curl_easy_setopt(e, CURLOPT_CAINFO, o->cainfo);
  err[0] = 0;
  /* The credentials and the headers that go with them, as one set
  ** (invariant 4): curl copies USERPWD; the list stays until close. */
  pthread_mutex_lock(&o->cmu);
  if (o->s3) {
    refresh_due(o);
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, o->sigv4);
    curl_easy_setopt(e, CURLOPT_USERPWD, o->userpwd);
  }
  if (o->hdrs) curl_easy_setopt(e, CURLOPT_HTTPHEADER, o->hdrs);
  pthread_mutex_unlock(&o->cmu);
}

/* --- open ----------------------------------------------------------------- */

void rmt_close(RmtObject *o) {
  if (!o) return;
  for (Conn *c = o->idle, *next; c; c = next) {
    next = c->next;
    for (int i = 0; i < MAX_FLIGHT; i++)
      if (c->easy[i]) curl_easy_cleanup(c->easy[i]);
    curl_multi_cleanup(c->multi);
    pdb_free(c);
  }
  curl_slist_free_all(o->hdrs);
  for (Retired *r = o->retired, *next; r; r = next) {
    next = r->next;
    curl_slist_free_all(r->l);
    pdb_free(r);
  }
  if (o->creds) explicit_bzero(o->creds, sizeof *o->creds);
  pdb_free(o->creds);
  pthread_mutex_destroy(&o->cmu);
  pthread_mutex_destroy(&o->mu);
  pdb_free(o->path);
  pdb_free(o->url);
  pdb_free(o->key);
  pdb_free(o->sigv4);
  free_secret(o->userpwd);
  pdb_free(o->cainfo);
  pdb_free(o);
}

/* O for PATH with its URL and signing, not yet asked anything. */
static int target(const char *path, RmtObject **out, char *msg, size_t cap) {
  *out = NULL;
  curl_once();
  RmtObject *o = pdb_calloc(1, sizeof *o);
  if (!o) return PAGEDB_NOMEM;
  pthread_mutex_init(&o->mu, NULL);
  pthread_mutex_init(&o->cmu, NULL);
  /* pagedb_config, else the environment, else the defaults (rconfig.c). */
  int64_t timeout, retries, flight;
  char ca[4096];
  int rc = pdb_rconf_num(PAGEDB_CONFIG_REMOTE_TIMEOUT, &timeout, msg, cap);
  if (rc == PAGEDB_OK) rc = pdb_rconf_num(PAGEDB_CONFIG_REMOTE_RETRIES, &retries, msg, cap);
  if (rc == PAGEDB_OK) rc = pdb_rconf_num(PAGEDB_CONFIG_REMOTE_CONNECTIONS, &flight, msg, cap);
  if (rc == PAGEDB_OK) rc = pdb_rconf_str(PAGEDB_CONFIG_CA_BUNDLE, ca, sizeof ca, msg, cap);
  if (rc != PAGEDB_OK) {
    rmt_close(o);
    return rc;
  }
  assert(flight >= 1 && flight <= MAX_FLIGHT);
  o->timeout_ms = (long)timeout;
  o->retries = (int)retries;
  o->flight = (int)flight;
  rc = (o->path = pdb_strdup(path)) ? parse(o, msg, cap) : PAGEDB_NOMEM;
  /* The CA bundle matters to https only (a stray SSL_CERT_FILE does not
  ** fail an http open). */
  int https = rc == PAGEDB_OK && strncmp(o->url, "https://", 8) == 0;
  if (https && ca[0] && access(ca, R_OK) != 0) {
    snprintf(msg, cap, "%s: the CA bundle %s (PAGEDB_CONFIG_CA_BUNDLE, CURL_CA_BUNDLE or SSL_CERT_FILE): %s", path, ca,
             strerror(errno));
    rc = PAGEDB_CANTOPEN;
  } else if (https && ca[0] && !(o->cainfo = pdb_strdup(ca))) {
    rc = PAGEDB_NOMEM;
  }
  if (rc != PAGEDB_OK) {
    if (rc == PAGEDB_NOMEM) snprintf(msg, cap, "out of memory opening %s", path);
    rmt_close(o);
    return rc;
  }
  *out = o;
  return PAGEDB_OK;
}

int rmt_target(const char *path, RmtObject **out, char *msg, size_t cap) { return target(path, out, msg, cap); }
const char *rmt_etag(const RmtObject *o) { return o->etag; }
const char *rmt_validator(const RmtObject *o) { return o->etag[0] ? o->etag : o->lastmod; }

int rmt_condition(RmtObject *o, const char *hdr) {
  if (strlen(hdr) >= sizeof o->cond) return PAGEDB_TOOBIG;
  pthread_mutex_lock(&o->cmu);
  snprintf(o->cond, sizeof o->cond, "%s", hdr);
  int nomem = 0;
  struct curl_slist *l = build_hdrs(o, &nomem);
  if (!nomem) {
    curl_slist_free_all(o->hdrs);   /* no request has used it: O is not shared yet */
    o->hdrs = l;
  }
  pthread_mutex_unlock(&o->cmu);
  return nomem ? PAGEDB_NOMEM : PAGEDB_OK;
}
const char *rmt_fetch_url(const RmtObject *o) { return o->url; }
int rmt_is_s3(const RmtObject *o) { return o->s3; }
int rmt_retries(const RmtObject *o) { return o->retries; }

int rmt_tls_failure(int cc) {
  return cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE || cc == CURLE_SSL_CERTPROBLEM
         || cc == CURLE_SSL_ISSUER_ERROR || cc == CURLE_SSL_PINNEDPUBKEYNOTMATCH;
}

/*
** The answers of the latest HEADs, for the questions that follow within
** RECENT_MS: pagedb_open asks whether a file exists (xAccess) and then
** opens it, and each question is a round trip to the server; the HEADs
** that xAccessAhead sends side by side (rmt_head_ahead) answer the open's
** questions about a dataset's files all at once.  An answer that a file
** exists (its size and validators) is looked at by rmt_recent (xAccess)
** and taken once by the next rmt_open; one that it does not (a 404) is
** taken once by rmt_recent.  Young, and taken once: a question later than
** that asks again (a version changed in between is caught by If-Match).
*/
#define RECENT_MS 2000      /* an open's questions, even on a loaded machine */
#define RECENT_N 8          /* two opens' worth of a dataset's four files */
static struct {
  pthread_mutex_t mu;
  int next;
  struct {
    char path[1024];
    long long at;
    int absent;             /* the server said 404 */
    uint64_t size;
    Resp h;
  } e[RECENT_N];
} recent = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void recent_put(const char *path, int absent, uint64_t size, const Resp *h) {
  if (strlen(path) >= sizeof recent.e[0].path) return;
  pthread_mutex_lock(&recent.mu);
  int k = recent.next;
  for (int j = 0; j < RECENT_N; j++)   /* a newer answer replaces an older one */
    if (strcmp(recent.e[j].path, path) == 0) k = j;
  if (k == recent.next) recent.next = (k + 1) % RECENT_N;
  strcpy(recent.e[k].path, path);
  recent.e[k].at = now_ms();
  recent.e[k].absent = absent;
  recent.e[k].size = size;
  if (h) recent.e[k].h = *h;
  pthread_mutex_unlock(&recent.mu);
}

/* The young answer about PATH: 1 (it exists; *SIZE and *H filled if not
** NULL, and taken if TAKE), 0 (absent; taken), -1 (none; an old one is
** dropped). */
static int recent_get(const char *path, int take, uint64_t *size, Resp *h) {
  int r = -1;
  pthread_mutex_lock(&recent.mu);
  for (int k = 0; k < RECENT_N && r < 0; k++) {
    if (!recent.e[k].path[0] || strcmp(recent.e[k].path, path) != 0) continue;
    if (now_ms() - recent.e[k].at > RECENT_MS) {
      recent.e[k].path[0] = 0;
      continue;
    }
    r = !recent.e[k].absent;
    if (r && size) *size = recent.e[k].size;
    if (r && h) *h = recent.e[k].h;
    if (take || !r) recent.e[k].path[0] = 0;
  }
  pthread_mutex_unlock(&recent.mu);
  return r;
}

int rmt_recent(const char *path) { return recent_get(path, 0, NULL, NULL); }

void rmt_forget(const char *path) {
  pthread_mutex_lock(&recent.mu);
  for (int k = 0; k < RECENT_N; k++)
    if (strcmp(recent.e[k].path, path) == 0) recent.e[k].path[0] = 0;
  pthread_mutex_unlock(&recent.mu);
}

static int recent_take(const char *path, uint64_t *size, Resp *h) {
  int r = recent_get(path, 1, size, h);
  return r == 1;
}

/* The status and length of a HEAD that E finished with CC, as rmt_open
** judges them: 1 (200 and a length), 0 (404), -1 (anything else). */
static int head_answer(CURL *e, CURLcode cc, curl_off_t *len) {
  long status = 0;
  if (cc != CURLE_OK) return -1;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  if (status == 404) return 0;
  if (status != 200 || curl_easy_getinfo(e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, len) != CURLE_OK || *len < 0)
    return -1;
  return 1;
}

void rmt_head_ahead(const char *const *paths, int n) {
  enum { MAXN = 8 };
  if (n > MAXN) n = MAXN;
  RmtObject *o[MAXN] = { 0 };
  CURL *e[MAXN] = { 0 };
  Resp h[MAXN];
  char err[MAXN][CURL_ERROR_SIZE];
  char msg[RMT_ERR_MAX];
  CURLM *m = (curl_once(), curl_multi_init());
  long timeout = 0;
  for (int i = 0; m && i < n; i++) {
    if (recent_get(paths[i], 0, NULL, NULL) >= 0) continue;   /* answered already */
    if (target(paths[i], &o[i], msg, sizeof msg) != PAGEDB_OK) continue;
    if (!(e[i] = curl_easy_init())) continue;
    memset(&h[i], 0, sizeof h[i]);
    rmt_setup(o[i], e[i], &h[i], err[i]);
    curl_easy_setopt(e[i], CURLOPT_NOBODY, 1L);
    curl_easy_setopt(e[i], CURLOPT_PRIVATE, (void *)(intptr_t)i);
    if (o[i]->timeout_ms > timeout) timeout = o[i]->timeout_ms;
    if (curl_multi_add_handle(m, e[i]) != CURLM_OK) {
      curl_easy_cleanup(e[i]);
      e[i] = NULL;
    }
  }
  /* Each request has its own timeout (rmt_setup), so this ends. */
  int running = 1;
  while (m && running) {
    if (curl_multi_perform(m, &running) != CURLM_OK) break;
    if (running && curl_multi_poll(m, NULL, 0, (int)(timeout < 1000 ? timeout : 1000), NULL) != CURLM_OK) break;
    CURLMsg *cm;
    int left;
    while ((cm = curl_multi_info_read(m, &left))) {
      if (cm->msg != CURLMSG_DONE) continue;
      void *priv = NULL;
      curl_easy_getinfo(cm->easy_handle, CURLINFO_PRIVATE, &priv);
      int i = (int)(intptr_t)priv;
      curl_off_t len = -1;
      int a = head_answer(cm->easy_handle, cm->data.result, &len);
      if (a >= 0) recent_put(paths[i], !a, a ? (uint64_t)len : 0, &h[i]);
    }
  }
  for (int i = 0; i < n; i++) {
    if (e[i]) {
      if (m) curl_multi_remove_handle(m, e[i]);
      curl_easy_cleanup(e[i]);
    }
    rmt_close(o[i]);
  }
  if (m) curl_multi_cleanup(m);
}

int rmt_open(const char *path, RmtObject **out, char *msg, size_t cap) {
  RmtObject *o;
  int rc = target(path, &o, msg, cap);
  if (rc != PAGEDB_OK) return rc;
  uint64_t rsize = 0;
  Resp h0;
  int reuse = recent_take(path, &rsize, &h0);
  CURL *e = rc == PAGEDB_OK && !reuse ? curl_easy_init() : NULL;
  if (rc == PAGEDB_OK && !reuse && !e) rc = PAGEDB_NOMEM;
  long status = 0;
  curl_off_t len = reuse ? (curl_off_t)rsize : -1;
  Resp h;
  if (reuse) h = h0;
  for (int attempt = 0; rc == PAGEDB_OK && !reuse; attempt++) {
    char err[CURL_ERROR_SIZE];
    memset(&h, 0, sizeof h);
    rmt_setup(o, e, &h, err);
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    CURLcode cc = curl_easy_perform(e);
    status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    int tls = rmt_tls_failure(cc);
    int transient = (cc != CURLE_OK && !tls) || status >= 500 || status == 429 || status == 408;
    if (transient && attempt < o->retries) {
      atomic_fetch_add(&rmt_stats.retries, 1);
      usleep((useconds_t)(100000u << (attempt < 4 ? attempt : 4)));
      continue;
    }
    if (tls) {
      snprintf(msg, cap, "%s: HEAD %s failed: TLS: %s (the server's certificate does not verify against %s%s;"
               " give its CA with PAGEDB_CONFIG_CA_BUNDLE or CURL_CA_BUNDLE)", path, o->url,
               err[0] ? err : curl_easy_strerror(cc), o->cainfo ? "the CA bundle " : "the system's CA store",
               o->cainfo ? o->cainfo : "");
      rc = PAGEDB_CANTOPEN;
    } else if (cc != CURLE_OK) {
      snprintf(msg, cap, "%s: HEAD %s failed: %s", path, o->url, err[0] ? err : curl_easy_strerror(cc));
      rc = PAGEDB_CANTOPEN;
    } else if (status == 404) {
      snprintf(msg, cap, "%s: no such %s (HTTP 404 from %s)", path, o->s3 ? "bucket or key" : "object", o->url);
      rc = PAGEDB_CANTOPEN_NOENT;
    } else if (status == 403 || status == 401) {
      snprintf(msg, cap, "%s: access denied (HTTP %ld from %s)%s%s%s", path, status, o->url,
               o->s3 ? ": check the credentials (from " : "", o->s3 ? o->creds->source : "",
               o->s3 ? ") and the region" : "");
      rc = PAGEDB_CANTOPEN;
    } else if (status != 200) {
      snprintf(msg, cap, "%s: HEAD %s answered HTTP %ld", path, o->url, status);
      rc = PAGEDB_CANTOPEN;
    } else if (curl_easy_getinfo(e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len) != CURLE_OK || len < 0) {
      snprintf(msg, cap, "%s: HEAD %s gave no Content-Length", path, o->url);
      rc = PAGEDB_CANTOPEN;
    }
    break;
  }
  if (e) curl_easy_cleanup(e);
  if (rc == PAGEDB_OK && !reuse) recent_put(path, 0, (uint64_t)len, &h);
  if (rc == PAGEDB_OK) {
    o->size = (uint64_t)len;
    snprintf(o->etag, sizeof o->etag, "%s", h.etag);
    snprintf(o->lastmod, sizeof o->lastmod, "%s", h.lastmod);
    /* If-Match from now on (invariant 1); the object is not shared yet. */
    int nomem = 0;
    struct curl_slist *l = o->etag[0] ? build_hdrs(o, &nomem) : NULL;
    if (nomem) rc = PAGEDB_NOMEM;
    if (l) {
      curl_slist_free_all(o->hdrs);
      o->hdrs = l;
    }
    size_t kl = strlen(o->url) + strlen(o->etag) + strlen(o->lastmod) + 64;
    if (rc == PAGEDB_OK && (o->key = pdb_malloc(kl)))
      snprintf(o->key, kl, "%s\n%s\n%s\n%llu", o->url, o->etag, o->etag[0] ? "" : o->lastmod,
               (unsigned long long)o->size);
    else rc = PAGEDB_NOMEM;
  }
  if (rc != PAGEDB_OK) {
    if (rc == PAGEDB_NOMEM) snprintf(msg, cap, "out of memory opening %s", path);
    rmt_close(o);
    return rc;
  }
  *out = o;
  return PAGEDB_OK;
}

uint64_t rmt_size(const RmtObject *o) { return o->size; }
const char *rmt_key(const RmtObject *o) { return o->key; }
const char *rmt_url(const RmtObject *o) { return o->path; }

/* --- ranged GETs ------------------------------------------------------------ */

static Conn *conn_get(RmtObject *o) {
  pthread_mutex_lock(&o->mu);
  Conn *c = o->idle;
  if (c) o->idle = c->next;
  pthread_mutex_unlock(&o->mu);
  if (c) return c;
  c = pdb_calloc(1, sizeof *c);
  if (c && !(c->multi = curl_multi_init())) {
    pdb_free(c);
    c = NULL;
  }
  if (c) curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)o->flight);
  return c;
}

static void conn_put(RmtObject *o, Conn *c) {
  pthread_mutex_lock(&o->mu);
  c->next = o->idle;
  o->idle = c;
  pthread_mutex_unlock(&o->mu);
}

enum { DONE_OK, DONE_RETRY, DONE_FAIL };

/* Judge finished transfer X (curl result CC, status STATUS). */
static int judge(RmtObject *o, Xfer *x, CURLcode cc, long status, char *why, size_t cap, int *rc) {
  RmtRange *r = x->r;
  unsigned long long a = r->off, b = r->off + r->n - 1;
  *rc = PAGEDB_IOERR_REMOTE;
  if (x->nomem) {
    *rc = PAGEDB_NOMEM;
    snprintf(why, cap, "out of memory taking the body");
    return DONE_FAIL;
  }
  if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && x->overflow)) {
    snprintf(why, cap, "%s", x->err[0] ? x->err : curl_easy_strerror(cc));
    return cc == CURLE_URL_MALFORMAT || cc == CURLE_UNSUPPORTED_PROTOCOL || cc == CURLE_PEER_FAILED_VERIFICATION
           ? DONE_FAIL : DONE_RETRY;
  }
  if (status == 412 || status == 416) {
    *rc = PAGEDB_IOERR_CHANGED;
    snprintf(why, cap, "HTTP %ld: the object changed since it was opened", status);
    return DONE_FAIL;
  }
  if (status >= 500 || status == 429 || status == 408) {
    snprintf(why, cap, "HTTP %ld", status);
    return DONE_RETRY;
  }
  if (status != 206) {
    snprintf(why, cap, "HTTP %ld%s", status, status == 200 ? " (the server ignores Range requests)" : "");
    return DONE_FAIL;
  }
  const char *validator = o->etag[0] ? o->etag : o->lastmod;
  const char *got = o->etag[0] ? x->h.etag : x->h.lastmod;
  if (validator[0] && got[0] && strcmp(validator, got) != 0) {
    *rc = PAGEDB_IOERR_CHANGED;
    snprintf(why, cap, "HTTP 206 with %s %s, but %s at open: the object changed", o->etag[0] ? "ETag" : "Last-Modified",
             got, validator);
    return DONE_FAIL;
  }
  unsigned long long ca, cb, ct;
  if (sscanf(x->h.crange, "bytes %llu-%llu/%llu", &ca, &cb, &ct) != 3 || ca != a || cb != b) {
    snprintf(why, cap, "HTTP 206 with Content-Range '%s'", x->h.crange);
    return DONE_RETRY;
  }
  if (ct != o->size) {
    *rc = PAGEDB_IOERR_CHANGED;
    snprintf(why, cap, "HTTP 206: the object is %llu bytes now, %llu at open", ct, (unsigned long long)o->size);
    return DONE_FAIL;
  }
  if (x->overflow || x->got != r->n) {
    snprintf(why, cap, "HTTP 206 with a body of %s%zu bytes", x->overflow ? "more than " : "", x->got);
    return DONE_RETRY;
  }
  return DONE_OK;
}

int rmt_fetch(RmtObject *o, RmtRange *r, int n, char *msg, size_t cap) {
  return rmt_fetch_each(o, r, n, NULL, NULL, msg, cap);
}

static int fetch(RmtObject *o, RmtRange *r, int n, void (*each)(void *ctx, int i), const RmtSink *sink, void *ctx,
                 char *msg, size_t cap);

int rmt_fetch_each(RmtObject *o, RmtRange *r, int n, void (*each)(void *ctx, int i), void *ctx, char *msg,
                   size_t cap) {
  return fetch(o, r, n, each, NULL, ctx, msg, cap);
}

int rmt_fetch_sink(RmtObject *o, RmtRange *r, int n, const RmtSink *sink, void *ctx, char *msg, size_t cap) {
  return fetch(o, r, n, NULL, sink, ctx, msg, cap);
}

static int fetch(RmtObject *o, RmtRange *r, int n, void (*each)(void *ctx, int i), const RmtSink *sink, void *ctx,
                 char *msg, size_t cap) {
  if (n <= 0) return PAGEDB_OK;
  /* Ranges wait in QUEUE in index order; a retried one goes back with a
  ** due time.  Ranges without a buffer (OWN) get one from the pool when
  ** they start, given back once EACH has used it: only the requests in
  ** flight hold memory. */
  Conn *c = conn_get(o);
  Xfer *xs = pdb_calloc((size_t)n, sizeof *xs);
  int *queue = pdb_malloc((size_t)n * sizeof *queue);
  uint8_t *own = pdb_calloc((size_t)n, 1);
  if (!c || !xs || !queue || !own) {
    if (c) conn_put(o, c);
    pdb_free(xs);
    pdb_free(queue);
    pdb_free(own);
    snprintf(msg, cap, "out of memory fetching %d ranges of %s", n, o->path);
    for (int i = 0; i < n; i++) r[i].rc = PAGEDB_NOMEM;
    return PAGEDB_NOMEM;
  }
  int slot_of[MAX_FLIGHT];        /* range in each easy slot, or -1 */
  for (int s = 0; s < MAX_FLIGHT; s++) slot_of[s] = -1;
  int done = 0, first = PAGEDB_OK, active = 0, qhead = 0, qlen = 0;
  for (int i = 0; i < n; i++) {
    xs[i].r = &r[i];
    xs[i].i = i;
    xs[i].sink = sink;
    xs[i].ctx = ctx;
    r[i].rc = PAGEDB_OK;
    own[i] = !sink && r[i].buf == NULL;
    assert(each || sink || !own[i]);
    queue[qlen++] = i;
  }
  while (done < n) {
    long long t = now_ms(), wait = 200;
    /* Start what is due, in free slots. */
    for (int s = 0; s < o->flight && qlen > 0; s++) {
      if (slot_of[s] >= 0) continue;
      int i = queue[qhead];
      if (xs[i].due > t) {
        wait = xs[i].due - t < wait ? xs[i].due - t : wait;
        break;
      }
      qhead = (qhead + 1) % n;
      qlen--;
      Xfer *x = &xs[i];
      /* Anew: what a failed attempt put is void.  A sink may pass a range
      ** over (another process is fetching it: cache.c), which then counts
      ** as done, neither fetched nor failed. */
      if (sink && !sink->begin(ctx, i)) {
        done++;
        s--;                      /* the slot is still free */
        continue;
      }
      if ((!c->easy[s] && !(c->easy[s] = curl_easy_init()))
          || (!sink && !r[i].buf && !(r[i].buf = pdb_buf_alloc(r[i].n ? r[i].n : 1, NULL)))) {
        r[i].rc = PAGEDB_NOMEM;
        if (first == PAGEDB_OK) {
          first = PAGEDB_NOMEM;
          snprintf(msg, cap, "out of memory fetching from %s", o->path);
        }
        if (sink) sink->end(ctx, i, 0);
        done++;
        continue;
      }
      CURL *e = c->easy[s];
      x->got = 0;
      x->overflow = 0;
      x->nomem = 0;
      memset(&x->h, 0, sizeof x->h);
      rmt_setup(o, e, &x->h, x->err);
      char range[64];
      snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)r[i].off,
               (unsigned long long)(r[i].off + r[i].n - 1));
      curl_easy_setopt(e, CURLOPT_RANGE, range);
      /* A sink writes each piece where it is kept: fewer, larger pieces
      ** cost fewer writes (curl's default buffer is 16 KiB). */
      if (sink) curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L << 10);
      curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
      curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
      curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)(intptr_t)s);
      curl_multi_add_handle(c->multi, e);
      slot_of[s] = i;
      active++;
    }
    int running = 0;
    curl_multi_perform(c->multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
      if (m->msg != CURLMSG_DONE) continue;
      CURL *e = m->easy_handle;
      CURLcode cc = m->data.result;
      void *priv = NULL;
      curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
      int s = (int)(intptr_t)priv, i = slot_of[s];
      long status = 0;
      curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
      curl_multi_remove_handle(c->multi, e);
      slot_of[s] = -1;
      active--;
      Xfer *x = &xs[i];
      char why[CURL_ERROR_SIZE + 1024];
      int rc, verdict = judge(o, x, cc, status, why, sizeof why, &rc);
      if (verdict == DONE_RETRY && x->attempt < o->retries) {
        atomic_fetch_add(&rmt_stats.retries, 1);
        x->attempt++;
        /* 100 ms, doubling to 2 s, with jitter so that retrying clients
        ** do not return together. */
        long long back = 100LL << (x->attempt - 1 < 5 ? x->attempt - 1 : 5);
        if (back > 2000) back = 2000;
        x->due = now_ms() + back / 2 + (long long)(rand() % (int)(back / 2 + 1));
        queue[(qhead + qlen) % n] = i;
        qlen++;
        continue;
      }
      done++;
      if (sink) sink->end(ctx, i, verdict == DONE_OK);
      if (verdict == DONE_OK) {
        atomic_fetch_add(&rmt_stats.requests, 1);
        atomic_fetch_add(&rmt_stats.bytes, (int64_t)x->got);
        if (each) {
          each(ctx, i);
          if (own[i]) pdb_buf_free(r[i].buf), r[i].buf = NULL;
        }
        continue;
      }
      atomic_fetch_add(&rmt_stats.failures, 1);
      r[i].rc = rc;
      if (first == PAGEDB_OK) {
        first = rc;
        snprintf(msg, cap, "GET %s (%s), bytes %llu-%llu: %s%s", o->path, o->url, (unsigned long long)r[i].off,
                 (unsigned long long)(r[i].off + r[i].n - 1), why,
                 verdict == DONE_RETRY ? " (retry budget spent)" : "");
        if (verdict == DONE_RETRY) {
          size_t l = strlen(msg);
          snprintf(msg + l, cap - l, " after %d attempts", x->attempt + 1);
        }
      }
    }
    if (done < n) {
      if (active > 0) curl_multi_poll(c->multi, NULL, 0, (int)wait, NULL);
      else if (qlen > 0) {
        long long d = xs[queue[qhead]].due - now_ms();
        if (d > 0) usleep((useconds_t)(d * 1000));
      }
    }
  }
  for (int i = 0; i < n; i++)
    if (own[i] && r[i].buf) pdb_buf_free(r[i].buf), r[i].buf = NULL;
  pdb_free(own);
  pdb_free(queue);
  pdb_free(xs);
  conn_put(o, c);
  return first;
}
