/*
** upload.c -- whole objects up and down: what pagedb_push and pagedb_pull
** (src/push.c) ask of a server.  Requests are made and signed by http.c
** (rmt_target, rmt_setup): the same URLs, credentials and AWS Signature V4
** as the reads.
**
** INVARIANTS
**
**   1. An object appears whole or not at all: an S3 object larger than one
**      part goes up by multipart upload (CreateMultipartUpload, UploadPart,
**      CompleteMultipartUpload), which the server makes visible only at
**      the Complete; a failed upload is aborted (AbortMultipartUpload) so
**      its parts do not linger.  A smaller object, or an http(s)
**      destination, is one PUT, which a server stores whole or not at all.
**   2. A request is judged by its status and, for Complete (which answers
**      200 and may still fail), by its body: an <Error> is a failure.
**   3. A download is written under a temporary name beside LOCAL, synced
**      and renamed: LOCAL never holds part of an object.
**
** Parts go up several at once (PAGEDB_PUSH_PARALLEL, default 4, through
** one curl multi handle: upload_parts), lowest part numbers first; each is
** retried with backoff on a transient failure (5xx, 408, 429, a connection
** failure), as reads are; CompleteMultipartUpload lists them in part-number
** order whatever order they finished in.  The first part that fails for
** good cuts the others off, and the upload is aborted.
*/
#define _GNU_SOURCE
#include "remote.h"

#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIN_PART (5ull << 20)       /* S3's smallest part but the last */
#define MAX_PARTS 10000             /* S3's most parts */
#define ETAG_MAX 256                /* an ETag kept, with its terminator (RmtResp's) */

/* The body of a request read from a local file, or from memory. */
typedef struct Body {
  int fd;                   /* -1: from mem */
  const char *mem;
  uint64_t off, left;
} Body;

/* A response body kept (small: XML answers). */
typedef struct Got {
  char buf[8192];
  size_t n;
} Got;

static size_t on_read(char *b, size_t size, size_t n, void *ctx) {
  Body *s = ctx;
  size_t want = size * n;
  if (want > s->left) want = (size_t)s->left;
  if (want == 0) return 0;
  if (s->fd < 0) {
    memcpy(b, s->mem + s->off, want);
  } else {
    ssize_t r;
    do r = pread(s->fd, b, want, (off_t)s->off);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return CURL_READFUNC_ABORT;   /* the file shrank or failed */
    want = (size_t)r;
  }
  s->off += want;
  s->left -= want;
  return want;
}

static size_t on_got(char *b, size_t size, size_t n, void *ctx) {
  Got *g = ctx;
  size_t len = size * n, k = len < sizeof g->buf - 1 - g->n ? len : sizeof g->buf - 1 - g->n;
  memcpy(g->buf + g->n, b, k);
  g->n += k;
  g->buf[g->n] = 0;
  return len;
}

enum { DONE_OK, DONE_RETRY, DONE_FAIL };

/* A finished request: curl's result CC, status STATUS, body G. */
static int judge(CURLcode cc, long status, const Got *g) {
  if (cc == CURLE_OK && status >= 200 && status < 300 && !strstr(g->buf, "<Error>")) return DONE_OK;
  int transient = (cc != CURLE_OK && cc != CURLE_ABORTED_BY_CALLBACK && cc != CURLE_READ_ERROR
                   && !rmt_tls_failure(cc))
                  || status >= 500 || status == 429 || status == 408;
  return transient ? DONE_RETRY : DONE_FAIL;
}

/* MSG for a request that failed for good after ATTEMPTS attempts; counted. */
static void describe(RmtObject *o, const char *method, const char *url, CURLcode cc, const char *err, long status,
                     const Got *g, int attempts, char *msg, size_t cap) {
  const char *code = strstr(g->buf, "<Code>");
  int clen = code ? (int)strcspn(code + 6, "<") : 0;
  if (cc != CURLE_OK)
    snprintf(msg, cap, "%s %s (%s): %s%s after %d attempts", method, rmt_url(o), url,
             rmt_tls_failure(cc) ? "TLS: " : "", err[0] ? err : curl_easy_strerror(cc), attempts);
  else
    snprintf(msg, cap, "%s %s (%s): HTTP %ld%s%.*s%s", method, rmt_url(o), url, status, code ? " " : "", clen,
             code ? code + 6 : "",
             status == 403 || status == 401 ? ": access denied (check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"
             : status == 404 ? ": no such bucket or path"
             : status == 405 ? ": the server does not take uploads (PUT) there" : "");
  if (cc == CURLE_OK && attempts > 1) {
    size_t n = strlen(msg);
    snprintf(msg + n, cap - n, " after %d attempts (the retry budget spent)", attempts);
  }
  atomic_fetch_add(&rmt_stats.failures, 1);
}

/* Set E up for METHOD to URL (O's, with a query) with BODY (its LEFT
** bytes; for PUT and POST), headers into H, the answer into G, curl's
** error text into ERR.  BODY must live until the request ends. */
static void prepare(RmtObject *o, CURL *e, const char *method, const char *url, Body *body, RmtResp *h, Got *g,
                    char *err) {
  memset(h, 0, sizeof *h);
  g->n = 0;
  g->buf[0] = 0;
  rmt_setup(o, e, h, err);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_got);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, g);
  if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(e, CURLOPT_READDATA, body);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body->left);
  }
}

/* Backoff before retry ATTEMPT (1, 2, ...): 100 ms doubling to 1.6 s. */
static long long backoff_ms(int attempt) { return 100LL << (attempt - 1 < 4 ? attempt - 1 : 4); }

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
** One request: METHOD to O's URL plus QUERY, body from FD at OFF (LEN
** bytes) or from MEM (LEN bytes), or none (LEN 0 and no MEM).  Retried on a
** transient failure.  Returns PAGEDB_OK with the response's headers in H
** and its body in G when the status is 2xx and the body holds no <Error>.
*/
static int request_at(RmtObject *o, const char *method, const char *url, int fd, const char *mem, uint64_t off,
                      uint64_t len, RmtResp *h, Got *g, char *msg, size_t cap);

static int request(RmtObject *o, const char *method, const char *query, int fd, const char *mem, uint64_t off,
                   uint64_t len, RmtResp *h, Got *g, char *msg, size_t cap) {
  char url[8800];
  snprintf(url, sizeof url, "%s%s", rmt_fetch_url(o), query ? query : "");
  return request_at(o, method, url, fd, mem, off, len, h, g, msg, cap);
}

/* request() to URL as given (a bucket's listing: rmt_list). */
static int request_at(RmtObject *o, const char *method, const char *url, int fd, const char *mem, uint64_t off,
                      uint64_t len, RmtResp *h, Got *g, char *msg, size_t cap) {
  CURL *e = curl_easy_init();
  if (!e) {
    snprintf(msg, cap, "out of memory: %s %s", method, rmt_url(o));
    return PAGEDB_NOMEM;
  }
  int rc = PAGEDB_IOERR_REMOTE;
  for (int attempt = 0;; attempt++) {
    char err[CURL_ERROR_SIZE];
    Body body = { fd, mem, off, len };
    prepare(o, e, method, url, &body, h, g, err);
    CURLcode cc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    int verdict = judge(cc, status, g);
    if (verdict == DONE_OK) {
      rc = PAGEDB_OK;
      break;
    }
    if (verdict == DONE_RETRY && attempt < rmt_retries(o)) {
      atomic_fetch_add(&rmt_stats.retries, 1);
      usleep((useconds_t)(backoff_ms(attempt + 1) * 1000));
      continue;
    }
    describe(o, method, url, cc, err, status, g, attempt + 1, msg, cap);
    /* A condition that does not hold (rmt_condition): nothing was done. */
    if (status == 412) rc = PAGEDB_BUSY;
    break;
  }
  curl_easy_cleanup(e);
  return rc;
}

/* One part on its way (upload_parts). */
typedef struct Slot {
  CURL *e;
  int64_t part;             /* its index, or -1: the slot is free */
  Body body;
  RmtResp h;
  Got g;
  char url[8800];
  char err[CURL_ERROR_SIZE];
} Slot;

/*
** Upload the parts of multipart upload ID: LEN bytes of FD in PART-byte
** parts, up to PAGEDB_PUSH_PARALLEL at once through one curl multi handle
** (lowest part numbers first), each retried with backoff on a transient
** failure as request() does.  Part I's ETag into ETAGS[I], whatever order
** they finish in.  The first failure for good stops everything: parts on
** their way are cut off, and the caller aborts the upload.
*/
static int upload_parts(RmtObject *o, int fd, uint64_t len, uint64_t part, int64_t nin, const char *id,
                        char (*etags)[ETAG_MAX], char *msg, size_t cap) {
  int rc = PAGEDB_OK;
  uint64_t nparts = (len + part - 1) / part;
  if ((uint64_t)nin > nparts) nin = (int64_t)nparts;
  CURLM *m = curl_multi_init();
  Slot *sl = pdb_calloc((size_t)nin, sizeof *sl);
  uint8_t *state = pdb_calloc(nparts, 1);                 /* 0 waiting, 1 on its way, 2 done */
  int *attempt = pdb_calloc(nparts, sizeof *attempt);
  long long *due = pdb_calloc(nparts, sizeof *due);       /* when a retry may start */
  if (!m || !sl || !state || !attempt || !due) rc = PAGEDB_NOMEM;
  for (int s = 0; sl && s < nin; s++) sl[s].part = -1;
  for (int s = 0; s < nin && rc == PAGEDB_OK; s++)
    if (!(sl[s].e = curl_easy_init())) rc = PAGEDB_NOMEM;
  if (rc == PAGEDB_NOMEM) snprintf(msg, cap, "out of memory uploading %s", rmt_url(o));
  if (m) curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)nin);
  uint64_t done = 0, lo = 0;      /* parts below LO are done */
  int active = 0;
  while (rc == PAGEDB_OK && done < nparts) {
    long long t = now_ms(), wait = 200;
    /* Start the lowest waiting parts that are due, in free slots. */
    for (int s = 0; s < nin; s++) {
      if (sl[s].part >= 0) continue;
      while (lo < nparts && state[lo] == 2) lo++;
      int64_t pick = -1;
      for (uint64_t i = lo; i < nparts && pick < 0; i++) {
        if (state[i] != 0) continue;
        if (due[i] <= t) pick = (int64_t)i;
        else if (due[i] - t < wait) wait = due[i] - t;
      }
      if (pick < 0) break;
      Slot *x = &sl[s];
      uint64_t off = (uint64_t)pick * part;
      x->part = pick;
      x->body = (Body){ fd, NULL, off, len - off < part ? len - off : part };
      snprintf(x->url, sizeof x->url, "%s?partNumber=%llu&uploadId=%s", rmt_fetch_url(o),
               (unsigned long long)pick + 1, id);
      prepare(o, x->e, "PUT", x->url, &x->body, &x->h, &x->g, x->err);
      curl_easy_setopt(x->e, CURLOPT_PRIVATE, (void *)x);
      curl_multi_add_handle(m, x->e);
      state[pick] = 1;
      active++;
    }
    int running = 0, left;
    curl_multi_perform(m, &running);
    CURLMsg *cm;
    while (rc == PAGEDB_OK && (cm = curl_multi_info_read(m, &left))) {
      if (cm->msg != CURLMSG_DONE) continue;
      Slot *x = NULL;
      curl_easy_getinfo(cm->easy_handle, CURLINFO_PRIVATE, (char **)&x);
      CURLcode cc = cm->data.result;
      long status = 0;
      curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &status);
      curl_multi_remove_handle(m, x->e);
      active--;
      int64_t i = x->part;
      x->part = -1;
      int verdict = judge(cc, status, &x->g);
      if (verdict == DONE_RETRY && attempt[i] < rmt_retries(o)) {
        atomic_fetch_add(&rmt_stats.retries, 1);
        attempt[i]++;
        due[i] = now_ms() + backoff_ms(attempt[i]);
        state[i] = 0;
      } else if (verdict != DONE_OK) {
        describe(o, "PUT", x->url, cc, x->err, status, &x->g, attempt[i] + 1, msg, cap);
        rc = PAGEDB_IOERR_REMOTE;
      } else if (!x->h.etag[0]) {
        snprintf(msg, cap, "PUT %s part %llu: no ETag in the answer", rmt_url(o), (unsigned long long)i + 1);
        rc = PAGEDB_IOERR_REMOTE;
      } else {
        snprintf(etags[i], ETAG_MAX, "%s", x->h.etag);
        state[i] = 2;
        done++;
      }
    }
    if (rc == PAGEDB_OK && done < nparts) {
      if (active > 0) curl_multi_poll(m, NULL, 0, (int)wait, NULL);
      else usleep((useconds_t)(wait > 0 ? wait : 1) * 1000);
    }
  }
  /* Cut off what is still on its way (a failure stopped the loop). */
  for (int s = 0; sl && s < nin; s++) {
    if (sl[s].part >= 0) curl_multi_remove_handle(m, sl[s].e);
    if (sl[s].e) curl_easy_cleanup(sl[s].e);
  }
  if (m) curl_multi_cleanup(m);
  pdb_free(sl);
  pdb_free(state);
  pdb_free(attempt);
  pdb_free(due);
  return rc;
}

/* Upload LEN bytes of FD as O by multipart upload of PART-byte parts, NIN
** at once. */
static int multipart(RmtObject *o, int fd, uint64_t len, uint64_t part, int64_t nin, char *msg, size_t cap) {
  RmtResp h;
  Got *g = pdb_malloc(sizeof *g);
  uint64_t nparts = (len + part - 1) / part;
  size_t xcap = 128 + nparts * 400;
  char *xml = pdb_malloc(xcap);
  char (*etags)[ETAG_MAX] = pdb_malloc(nparts * sizeof *etags);
  if (!g || !xml || !etags) {
    pdb_free(g);
    pdb_free(xml);
    pdb_free(etags);
    snprintf(msg, cap, "out of memory uploading %s", rmt_url(o));
    return PAGEDB_NOMEM;
  }
  int rc = request(o, "POST", "?uploads=", -1, NULL, 0, 0, &h, g, msg, cap);
  char id[1024] = "";
  const char *a = rc == PAGEDB_OK ? strstr(g->buf, "<UploadId>") : NULL;
  const char *b = a ? strstr(a, "</UploadId>") : NULL;
  if (rc == PAGEDB_OK && (!a || !b || b - a - 10 <= 0 || b - a - 10 >= (long)sizeof id - 1)) {
    snprintf(msg, cap, "POST %s?uploads=: no UploadId in the answer", rmt_url(o));
    rc = PAGEDB_IOERR_REMOTE;
  }
  if (rc != PAGEDB_OK) goto out;
  /* The id goes into a query string: keep only what needs no escaping. */
  for (const char *p = a + 10; p < b && rc == PAGEDB_OK; p++) {
    size_t k = strlen(id);
    if (k + 4 >= sizeof id) {
      snprintf(msg, cap, "POST %s?uploads=: an UploadId too long to use", rmt_url(o));
      rc = PAGEDB_IOERR_REMOTE;   /* the upload is aborted below */
    } else if (isalnum((unsigned char)*p) || strchr("-_.~", *p)) {
      id[k] = *p, id[k + 1] = 0;
    } else {
      snprintf(id + k, sizeof id - k, "%%%02X", (unsigned char)*p);
    }
  }
  size_t xn = (size_t)snprintf(xml, xcap, "<CompleteMultipartUpload>");
  if (rc == PAGEDB_OK) rc = upload_parts(o, fd, len, part, nin, id, etags, msg, cap);
  for (uint64_t i = 0; i < nparts && rc == PAGEDB_OK; i++)
    xn += (size_t)snprintf(xml + xn, xcap - xn, "<Part><PartNumber>%llu</PartNumber><ETag>%s</ETag></Part>",
                           (unsigned long long)(i + 1), etags[i]);
  if (rc == PAGEDB_OK) {
    char q[1100];
    xn += (size_t)snprintf(xml + xn, xcap - xn, "</CompleteMultipartUpload>");
    snprintf(q, sizeof q, "?uploadId=%s", id);
    rc = request(o, "POST", q, -1, xml, 0, xn, &h, g, msg, cap);
  }
  if (rc != PAGEDB_OK) {
    /* Invariant 1: nothing of a failed upload stays (best effort: the
    ** failure reported is the first one). */
    char q[1100], m2[RMT_ERR_MAX];
    snprintf(q, sizeof q, "?uploadId=%s", id);
    request(o, "DELETE", q, -1, NULL, 0, 0, &h, g, m2, sizeof m2);
  }
out:
  pdb_free(xml);
  pdb_free(etags);
  pdb_free(g);
  return rc;
}

/* The part size and the parts at once (rconfig.c). */
static int push_settings(int64_t *part, int64_t *nin, char *msg, size_t cap) {
  int rc = pdb_rconf_num(PAGEDB_CONFIG_PUSH_PART_BYTES, part, msg, cap);
  return rc == PAGEDB_OK ? pdb_rconf_num(PAGEDB_CONFIG_PUSH_PARALLEL, nin, msg, cap) : rc;
}

int rmt_push_check(const char *url, char *msg, size_t cap) {
  RmtObject *o;
  int64_t part, nin;
  int rc = rmt_target(url, &o, msg, cap);
  if (rc != PAGEDB_OK) return rc;
  rmt_close(o);
  return push_settings(&part, &nin, msg, cap);
}

int rmt_put_file(const char *url, const char *local, uint64_t len, const char *cond, char *msg, size_t cap) {
  RmtObject *o;
  int rc = rmt_target(url, &o, msg, cap);
  if (rc == PAGEDB_OK && cond && (rc = rmt_condition(o, cond)) != PAGEDB_OK) {
    snprintf(msg, cap, "PUT %s: %s", url, rc == PAGEDB_NOMEM ? "out of memory" : "the condition is too long");
    rmt_close(o);
  }
  if (rc != PAGEDB_OK) return rc;
  int fd = open(local, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_size < len) {
    snprintf(msg, cap, "%s: %s", local, fd < 0 ? strerror(errno) : "shorter than the bytes to upload");
    if (fd >= 0) close(fd);
    rmt_close(o);
    return PAGEDB_CANTOPEN;
  }
  int64_t bytes, nin;
  rc = push_settings(&bytes, &nin, msg, cap);
  if (rc != PAGEDB_OK) {
    close(fd);
    rmt_close(o);
    return rc;
  }
  uint64_t part = (uint64_t)bytes;
  assert(part >= MIN_PART);
  while ((len + part - 1) / part > MAX_PARTS) part *= 2;
  if (rmt_is_s3(o) && len > part && !cond) {
    rc = multipart(o, fd, len, part, nin, msg, cap);
  } else {
    RmtResp h;
    Got *g = pdb_malloc(sizeof *g);
    rc = g ? request(o, "PUT", NULL, fd, NULL, 0, len, &h, g, msg, cap) : PAGEDB_NOMEM;
    if (!g) snprintf(msg, cap, "out of memory uploading %s", url);
    pdb_free(g);
  }
  close(fd);
  rmt_close(o);
  rmt_forget(url);
  return rc;
}

int rmt_delete(const char *url, char *msg, size_t cap) {
  RmtObject *o;
  int rc = rmt_target(url, &o, msg, cap);
  if (rc != PAGEDB_OK) return rc;
  RmtResp h;
  Got *g = pdb_malloc(sizeof *g);
  rc = g ? request(o, "DELETE", NULL, -1, NULL, 0, 0, &h, g, msg, cap) : PAGEDB_NOMEM;
  if (!g) snprintf(msg, cap, "out of memory deleting %s", url);
  /* An absent object is what was wanted (S3 answers 204 anyway; a web
  ** server 404). */
  if (rc == PAGEDB_IOERR_REMOTE && strstr(msg, "HTTP 404")) rc = PAGEDB_OK;
  pdb_free(g);
  rmt_close(o);
  rmt_forget(url);
  return rc;
}

/* rmt_get_file's sink: each range written at its offset. */
typedef struct Sink {
  int fd;
  RmtRange *r;
  int err;
} Sink;

static void on_range(void *ctx, int i) {
  Sink *s = ctx;
  const uint8_t *p = s->r[i].buf;
  size_t n = s->r[i].n;
  off_t off = (off_t)s->r[i].off;
  while (n > 0 && !s->err) {
    ssize_t w = pwrite(s->fd, p, n, off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) s->err = w < 0 ? errno : ENOSPC;
    else p += w, n -= (size_t)w, off += w;
  }
}

int rmt_get_file(const char *url, const char *local, uint64_t limit, char *etag, size_t ecap, char *msg,
                 size_t cap) {
  RmtObject *o;
  int rc = rmt_open(url, &o, msg, cap);
  if (rc != PAGEDB_OK) return rc;
  if (etag) snprintf(etag, ecap, "%s", rmt_etag(o));
  uint64_t size = rmt_size(o), piece = 8ull << 20, want = limit < size ? limit : size;
  size_t tl = strlen(local) + 32;
  char *tmp = pdb_malloc(tl);
  int n = (int)((want + piece - 1) / piece);
  RmtRange *r = pdb_calloc(n ? (size_t)n : 1, sizeof *r);
  if (!tmp || !r) {
    pdb_free(tmp);
    pdb_free(r);
    rmt_close(o);
    snprintf(msg, cap, "out of memory downloading %s", url);
    return PAGEDB_NOMEM;
  }
  snprintf(tmp, tl, "%s.pull-%d", local, (int)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    snprintf(msg, cap, "%s: %s", tmp, strerror(errno));
    rc = PAGEDB_CANTOPEN;
  }
  for (int i = 0; i < n; i++) {
    r[i].off = (uint64_t)i * piece;
    r[i].n = (size_t)(want - r[i].off < piece ? want - r[i].off : piece);
  }
  Sink s = { fd, r, 0 };
  if (rc == PAGEDB_OK) rc = rmt_fetch_each(o, r, n, on_range, &s, msg, cap);
  if (rc == PAGEDB_OK && (s.err || ftruncate(fd, (off_t)size) != 0 || fsync(fd) != 0)) {
    snprintf(msg, cap, "%s: %s", tmp, strerror(s.err ? s.err : errno));
    rc = PAGEDB_IOERR;
  }
  if (fd >= 0) close(fd);
  if (rc == PAGEDB_OK && rename(tmp, local) != 0) {
    snprintf(msg, cap, "rename %s to %s: %s", tmp, local, strerror(errno));
    rc = PAGEDB_IOERR;
  }
  if (rc != PAGEDB_OK && fd >= 0) unlink(tmp);
  pdb_free(tmp);
  pdb_free(r);
  rmt_close(o);
  return rc;
}

/* The text of element TAG in [P, END) into OUT (CAP bytes), XML's five
** entities decoded: a pointer past it, or NULL if there is none. */
static const char *xml_text(const char *p, const char *end, const char *tag, char *out, size_t cap) {
  char open[64], close[64];
  snprintf(open, sizeof open, "<%s>", tag);
  snprintf(close, sizeof close, "</%s>", tag);
  const char *a = strstr(p, open), *b = a ? strstr(a, close) : NULL;
  if (!a || !b || b > end) return NULL;
  a += strlen(open);
  size_t n = 0;
  static const char *const ent[][2] = { { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" }, { "&quot;", "\"" },
                                         { "&apos;", "'" } };
  while (a < b && n + 1 < cap) {
    size_t k = 0;
    for (; k < 5; k++)
      if (strncmp(a, ent[k][0], strlen(ent[k][0])) == 0) break;
    if (k < 5) {
      out[n++] = ent[k][1][0];
      a += strlen(ent[k][0]);
    } else {
      out[n++] = *a++;
    }
  }
  out[n] = 0;
  return b + strlen(close);
}

/* Listing pages are small enough for a Got's buffer: 20 keys of up to
** 300 bytes with their LastModified, ETag, Size and StorageClass. */
#define LIST_PAGE 20

int rmt_list(const char *url, int (*each)(void *ctx, const char *key, uint64_t size, long long mtime), void *ctx,
             char *msg, size_t cap) {
  if (strncmp(url, "s3://", 5) != 0 || !strchr(url + 5, '/')) {
    snprintf(msg, cap, "%s: only an s3://BUCKET/PREFIX can be listed", url);
    return PAGEDB_CANTOPEN;
  }
  const char *prefix = strchr(url + 5, '/') + 1;
  char dummy[1200];
  snprintf(dummy, sizeof dummy, "%.*sx", (int)(prefix - url), url);
  RmtObject *o;
  int rc = rmt_target(dummy, &o, msg, cap);
  if (rc != PAGEDB_OK) return rc;
  CURL *esc = curl_easy_init();
  Got *g = pdb_malloc(sizeof *g);
  char *ep = esc ? curl_easy_escape(esc, prefix, 0) : NULL;
  char token[2048] = "", base[8800];
  snprintf(base, sizeof base, "%s", rmt_fetch_url(o));
  base[strlen(base) - 1] = 0;               /* the bucket's URL: without the dummy key */
  if (!g || !ep) {
    snprintf(msg, cap, "out of memory listing %s", url);
    rc = PAGEDB_NOMEM;
  }
  while (rc == PAGEDB_OK) {
    char q[12000], *et = token[0] ? curl_easy_escape(esc, token, 0) : NULL;
    /* The parameters in SigV4's canonical order (sorted by name). */
    snprintf(q, sizeof q, "%s?%s%s%slist-type=2&max-keys=%d&prefix=%s", base, et ? "continuation-token=" : "",
             et ? et : "", et ? "&" : "", LIST_PAGE, ep);
    curl_free(et);
    RmtResp h;
    rc = request_at(o, "GET", q, -1, NULL, 0, 0, &h, g, msg, cap);
    if (rc != PAGEDB_OK) break;
    if (g->n >= sizeof g->buf - 1 || !strstr(g->buf, "</ListBucketResult>")) {
      snprintf(msg, cap, "GET %s: the listing's answer is %s", q, g->n >= sizeof g->buf - 1 ? "too long" : "not one");
      rc = PAGEDB_IOERR_REMOTE;
      break;
    }
    const char *p = g->buf, *end = g->buf + g->n;
    for (const char *c; rc == PAGEDB_OK && (c = strstr(p, "<Contents>"));) {
      const char *ce = strstr(c, "</Contents>");
      char key[1100], size[32], mod[64];
      if (!ce || !xml_text(c, ce, "Key", key, sizeof key) || !xml_text(c, ce, "Size", size, sizeof size)
          || !xml_text(c, ce, "LastModified", mod, sizeof mod)) {
        snprintf(msg, cap, "GET %s: a <Contents> without Key, Size or LastModified", q);
        rc = PAGEDB_IOERR_REMOTE;
        break;
      }
      struct tm tm = { 0 };
      long long mtime = strptime(mod, "%Y-%m-%dT%H:%M:%S", &tm) ? (long long)timegm(&tm) : 0;
      rc = each(ctx, key, strtoull(size, NULL, 10), mtime);
      p = ce;
    }
    char trunc[16] = "";
    xml_text(g->buf, end, "IsTruncated", trunc, sizeof trunc);
    if (rc != PAGEDB_OK || strcmp(trunc, "true") != 0) break;
    if (!xml_text(g->buf, end, "NextContinuationToken", token, sizeof token)) {
      snprintf(msg, cap, "GET %s: truncated, with no NextContinuationToken", q);
      rc = PAGEDB_IOERR_REMOTE;
    }
  }
  curl_free(ep);
  if (esc) curl_easy_cleanup(esc);
  pdb_free(g);
  rmt_close(o);
  return rc;
}
