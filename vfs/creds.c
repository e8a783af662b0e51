/*
** creds.c -- S3 credentials, region and endpoint, found the way the AWS
** tools (awscli, boto3, the SDKs) find them, in their documented order:
**
**   1. pagedb_config: PAGEDB_CONFIG_S3_ACCESS_KEY_ID and
**      PAGEDB_CONFIG_S3_SECRET_ACCESS_KEY (both), PAGEDB_CONFIG_S3_SESSION_TOKEN;
**   2. the environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (both),
**      AWS_SESSION_TOKEN;
**   3. the shared credentials and config files (AWS_SHARED_CREDENTIALS_FILE,
**      default ~/.aws/credentials; AWS_CONFIG_FILE, default ~/.aws/config),
**      profile PAGEDB_CONFIG_S3_PROFILE, else AWS_PROFILE, else
**      AWS_DEFAULT_PROFILE, else "default": [NAME] in the credentials file
**      (which wins), [profile NAME] ([default] for the default) in config;
**      aws_access_key_id, aws_secret_access_key, aws_session_token, and
**      in either file region and endpoint_url (used when neither
**      pagedb_config nor the environment sets them);
**   4. the container's credentials service (ECS, EKS Pod Identity):
**      AWS_CONTAINER_CREDENTIALS_FULL_URI, else http://169.254.170.2 +
**      AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, with the Authorization of
**      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or _TOKEN;
**   5. the instance metadata service (EC2, IMDSv2 only: a PUT for a
**      session token first) at AWS_EC2_METADATA_SERVICE_ENDPOINT, default
**      http://169.254.169.254, unless AWS_EC2_METADATA_DISABLED is true.
**
** INVARIANTS
**
**   1. A secret key, a session token or a signature is never written into
**      a message: messages name where credentials came from (the source
**      string), never what they are.  The access key id is not secret (it
**      is in every request) but is not printed either.
**   2. Credentials from 4 or 5 carry their expiry; rmt_creds_due says when
**      to fetch them again (REFRESH_S before it), so a long read never
**      signs with credentials that expired.  The caller (http.c) swaps
**      them under its lock: readers of several threads sign with one
**      whole set, never half of two.
**   3. The metadata services are asked with short timeouts (MD_TIMEOUT_MS,
**      one attempt), so a machine without them waits at most that at an
**      open that finds no other credentials; a full URI over plain http
**      must name a loopback or the container agents' link-local address,
**      as the SDKs require.
**   4. Every file and answer read is untrusted: lines and values are
**      bounded, a value too long for its field is an error naming the
**      field and where, never cut short.
*/
#define _GNU_SOURCE
#include "remote.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <pthread.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#define REFRESH_S 300         /* fetch expiring credentials again this long before */
#define MD_TIMEOUT_MS 1000    /* a metadata service's answer */
#define MD_MAX (64 << 10)     /* the longest answer taken */
#define FILE_MAX (1 << 20)    /* the longest credentials or config file read */

typedef struct Profile {
  char name[256];
  const char *from;         /* "pagedb_config", "AWS_PROFILE", ... or "default" */
  char cfile[4096];         /* the credentials file */
  char kfile[4096];         /* the config file */
  int found;                /* its section was in either file */
  char id[RMT_ID_MAX], secret[RMT_SECRET_MAX], token[RMT_TOKEN_MAX];
  char region[256], endpoint[4096];
  char unsupported[64];     /* a key naming a provider pagedb lacks, or "" */
  const char *where;        /* the file the keys came from */
} Profile;

/* --- the shared files ---------------------------------------------------- */

static void trim(char **s, char **e) {
  while (*s < *e && isspace((unsigned char)**s)) (*s)++;
  while (*e > *s && isspace((unsigned char)(*e)[-1])) (*e)--;
}

/* Set field F (CAP bytes) from [V, E) unless set already (the credentials
** file is read first and wins).  0 when too long. */
static int put(char *f, size_t cap, const char *v, const char *e) {
  if (*f) return 1;
  if ((size_t)(e - v) >= cap) return 0;
  memcpy(f, v, (size_t)(e - v));
  f[e - v] = 0;
  return 1;
}

/* Read profile P's section of PATH (CONFIG: the config file's naming).
** PAGEDB_OK when read or missing; PAGEDB_CANTOPEN with MSG otherwise. */
static int ini_read(Profile *p, const char *path, int config, char *msg, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) {
    if (errno == ENOENT || errno == ENOTDIR) return PAGEDB_OK;
    snprintf(msg, cap, "the AWS %s file %s: %s", config ? "config" : "credentials", path, strerror(errno));
    return PAGEDB_CANTOPEN;
  }
  char line[8192];
  int in = 0, lineno = 0, rc = PAGEDB_OK;
  long total = 0;
  while (rc == PAGEDB_OK && fgets(line, sizeof line, f)) {
    lineno++;
    size_t n = strlen(line);
    total += (long)n;
    if (total > FILE_MAX || (n == sizeof line - 1 && line[n - 1] != '\n')) {
      snprintf(msg, cap, "the AWS %s file %s: line %d: too long (lines up to %zu bytes, files up to %d)",
               config ? "config" : "credentials", path, lineno, sizeof line - 2, FILE_MAX);
      rc = PAGEDB_CANTOPEN;
      break;
    }
    char *s = line, *e = line + n;
    int indented = n > 0 && (line[0] == ' ' || line[0] == '\t');
    trim(&s, &e);
    if (s == e || *s == '#' || *s == ';') continue;
    if (*s == '[' && !indented) {
      char *a = s + 1, *b = e;
      if (b > a && b[-1] == ']') b--;
      trim(&a, &b);
      in = 0;
      if (config && (size_t)(b - a) > 8 && strncmp(a, "profile", 7) == 0 && isspace((unsigned char)a[7])) {
        a += 8;
        trim(&a, &b);
        in = strlen(p->name) == (size_t)(b - a) && memcmp(a, p->name, (size_t)(b - a)) == 0;
      } else if (!config || strcmp(p->name, "default") == 0) {
        in = strlen(p->name) == (size_t)(b - a) && memcmp(a, p->name, (size_t)(b - a)) == 0;
      }
      if (in) p->found = 1;
      continue;
    }
    if (!in || indented) continue;   /* an indented line belongs to a nested section (s3 = ...) */
    char *eq = memchr(s, '=', (size_t)(e - s));
    if (!eq) continue;
    char *k = s, *ke = eq, *v = eq + 1, *ve = e;
    trim(&k, &ke);
    trim(&v, &ve);
    size_t kl = (size_t)(ke - k);
#define KEY(name) (kl == strlen(name) && strncasecmp(k, name, kl) == 0)
    int ok = 1;
    const char *field = NULL;
    if (KEY("aws_access_key_id")) {
      ok = put(p->id, sizeof p->id, v, ve), field = "aws_access_key_id";
      if (!p->where) p->where = config ? p->kfile : p->cfile;
    } else if (KEY("aws_secret_access_key")) {
      ok = put(p->secret, sizeof p->secret, v, ve), field = "aws_secret_access_key";
    } else if (KEY("aws_session_token") || KEY("aws_security_token")) {
      ok = put(p->token, sizeof p->token, v, ve), field = "aws_session_token";
    } else if (KEY("region")) {
      ok = put(p->region, sizeof p->region, v, ve), field = "region";
    } else if (KEY("endpoint_url")) {
      ok = put(p->endpoint, sizeof p->endpoint, v, ve), field = "endpoint_url";
    } else if (KEY("role_arn") || KEY("credential_process") || KEY("sso_session") || KEY("sso_start_url")
               || KEY("web_identity_token_file") || KEY("credential_source")) {
      if (!p->unsupported[0]) snprintf(p->unsupported, sizeof p->unsupported, "%.*s", (int)kl, k);
    }
#undef KEY
    if (!ok) {
      /* The value is not printed: it may be a secret. */
      snprintf(msg, cap, "the AWS %s file %s: line %d: %s of profile '%s' is too long", config ? "config" : "credentials",
               path, lineno, field, p->name);
      rc = PAGEDB_CANTOPEN;
    }
  }
  fclose(f);
  explicit_bzero(line, sizeof line);   /* it held a secret, maybe */
  return rc;
}

/* A file's path from variable VAR, else ~/.aws/NAME ("~/" expanded). */
static void aws_path(const char *var, const char *name, char *out, size_t cap) {
  const char *v = getenv(var), *home = getenv("HOME");
  if (!home) home = "";
  if (v && *v) {
    if (v[0] == '~' && v[1] == '/') snprintf(out, cap, "%s%s", home, v + 1);
    else snprintf(out, cap, "%s", v);
  } else {
    snprintf(out, cap, "%s/.aws/%s", home, name);
  }
}

/* Load the chosen profile into P.  A profile named explicitly (option or
** variable) that neither file has is an error naming it. */
static int profile_load(Profile *p, char *msg, size_t cap) {
  memset(p, 0, sizeof *p);
  int rc = pdb_rconf_str_src(PAGEDB_CONFIG_S3_PROFILE, p->name, sizeof p->name, &p->from, msg, cap);
  if (rc != PAGEDB_OK) return rc;
  if (!p->name[0]) snprintf(p->name, sizeof p->name, "default");
  aws_path("AWS_SHARED_CREDENTIALS_FILE", "credentials", p->cfile, sizeof p->cfile);
  aws_path("AWS_CONFIG_FILE", "config", p->kfile, sizeof p->kfile);
  rc = ini_read(p, p->cfile, 0, msg, cap);
  if (rc == PAGEDB_OK) rc = ini_read(p, p->kfile, 1, msg, cap);
  if (rc == PAGEDB_OK && !p->found && strcmp(p->from, "default") != 0) {
    if (snprintf(msg, cap, "the AWS profile '%.200s' (from %s) is in neither %s nor %s", p->name, p->from, p->cfile,
                 p->kfile) >= (int)cap) { /* cut short: the start names the profile */ }
    rc = PAGEDB_CANTOPEN;
  }
  return rc;
}

/* --- the metadata services ---------------------------------------------------- */

typedef struct Buf {
  char b[MD_MAX + 1];
  size_t n;
  int over;
} Buf;

static size_t on_md(char *b, size_t size, size_t n, void *ctx) {
  Buf *x = ctx;
  size_t len = size * n;
  if (x->n + len > MD_MAX) {
    x->over = 1;
    return 0;
  }
  memcpy(x->b + x->n, b, len);
  x->n += len;
  x->b[x->n] = 0;
  return len;
}

/* METHOD URL with header H (or NULL): the body into OUT on 200.  Returns
** 0 on success, else fills WHY (the failure, no header values). */
static int md_ask(const char *method, const char *url, const char *h, Buf *out, char *why, size_t cap) {
  CURL *e = curl_easy_init();
  if (!e) {
    snprintf(why, cap, "out of memory");
    return -1;
  }
  char err[CURL_ERROR_SIZE] = "";
  struct curl_slist *l = h ? curl_slist_append(NULL, h) : NULL;
  out->n = 0;
  out->over = 0;
  out->b[0] = 0;
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)MD_TIMEOUT_MS);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)MD_TIMEOUT_MS);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_md);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*");   /* the services are local: never through a proxy */
  if (strcmp(method, "PUT") == 0) curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L), curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
  if (l) curl_easy_setopt(e, CURLOPT_HTTPHEADER, l);
  CURLcode cc = curl_easy_perform(e);
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(e);
  curl_slist_free_all(l);
  if (cc != CURLE_OK) {
    snprintf(why, cap, "%s %s: %s", method, url, out->over ? "answer over 64 KiB" : err[0] ? err : curl_easy_strerror(cc));
    return -1;
  }
  if (status != 200) {
    snprintf(why, cap, "%s %s: HTTP %ld", method, url, status);
    return -1;
  }
  return 0;
}

/* String member NAME of the JSON object in B into OUT (CAP bytes): 1 if
** found and it fits, 0 if absent, -1 if too long or malformed.  Only the
** escapes the services use (\" \\ \/) are taken. */
static int json_str(const char *b, const char *name, char *out, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\"", name);
  const char *p = strstr(b, pat);
  if (!p) return 0;
  p += strlen(pat);
  while (isspace((unsigned char)*p)) p++;
  if (*p++ != ':') return -1;
  while (isspace((unsigned char)*p)) p++;
  if (*p++ != '"') return -1;
  size_t n = 0;
  for (; *p && *p != '"'; p++) {
    if (*p == '\\') {
      p++;
      if (*p != '"' && *p != '\\' && *p != '/') return -1;
    }
    if (n + 1 >= cap) return -1;
    out[n++] = *p;
  }
  if (*p != '"') return -1;
  out[n] = 0;
  return 1;
}

/* An ISO 8601 UTC time (2026-11-28T01:02:03Z) as Unix seconds, or -1. */
static long long iso_time(const char *s) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *e = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!e) return -1;
  return (long long)timegm(&tm);
}

/* Take credentials from a service's JSON answer B into C. */
static int md_parse(const char *b, const char *what, RmtCreds *c, char *why, size_t cap) {
  char exp[64] = "";
  if (json_str(b, "AccessKeyId", c->id, sizeof c->id) != 1
      || json_str(b, "SecretAccessKey", c->secret, sizeof c->secret) != 1
      || json_str(b, "Token", c->token, sizeof c->token) < 0 || json_str(b, "Expiration", exp, sizeof exp) < 0) {
    snprintf(why, cap, "%s: the answer holds no AccessKeyId and SecretAccessKey (or one too long)", what);
    return -1;
  }
  c->expires = exp[0] ? iso_time(exp) : 0;
  if (c->expires < 0) {
    snprintf(why, cap, "%s: Expiration '%.40s' is not an ISO 8601 time", what, exp);
    return -1;
  }
  return 0;
}

/* Whether URL's host is a loopback address or a container agent's (the
** hosts the SDKs allow over plain http).  A URL with user information
** (127.0.0.1@elsewhere) is not. */
static int is_loopback_url(const char *u) {
  const char *h = strstr(u, "://");
  if (!h) return 0;
  h += 3;
  size_t n = strcspn(h, "/?#");
  if (memchr(h, '@', n)) return 0;
  char host[256];
  if (h[0] == '[') {
    const char *e = memchr(h, ']', n);
    if (!e || (size_t)(e - h + 1) >= sizeof host) return 0;
    snprintf(host, sizeof host, "%.*s", (int)(e - h + 1), h);
  } else {
    size_t l = strcspn(h, ":/?#");
    if (l >= sizeof host) return 0;
    snprintf(host, sizeof host, "%.*s", (int)l, h);
  }
  static const char *ok[] = { "localhost", "[::1]", "169.254.170.2", "169.254.170.23", "[fd00:ec2::23]" };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (strcasecmp(host, ok[i]) == 0) return 1;
  struct in_addr a;
  return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* The container's credentials into C (kind RMT_CREDS_CONTAINER). */
static int container_get(RmtCreds *c, char *why, size_t cap) {
  const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI"), *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  char url[4096];
  if (rel && *rel) snprintf(url, sizeof url, "http://169.254.170.2%s", rel);
  else snprintf(url, sizeof url, "%s", full);
  if (strncmp(url, "https://", 8) != 0 && !(strncmp(url, "http://", 7) == 0 && is_loopback_url(url))) {
    snprintf(why, cap, "AWS_CONTAINER_CREDENTIALS_FULL_URI %.200s: over http only to a loopback address or the"
             " container agent's (169.254.170.2, 169.254.170.23)", url);
    return -1;
  }
  char hdr[8192] = "", tok[8000] = "";
  const char *tf = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), *t = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  if (tf && *tf) {
    FILE *f = fopen(tf, "r");
    size_t n = f ? fread(tok, 1, sizeof tok - 1, f) : 0;
    if (f) fclose(f);
    if (!f) {
      snprintf(why, cap, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %.200s: %s", tf, strerror(errno));
      return -1;
    }
    tok[n] = 0;
    while (n > 0 && isspace((unsigned char)tok[n - 1])) tok[--n] = 0;
  } else if (t && *t) {
    snprintf(tok, sizeof tok, "%s", t);
  }
  if (tok[0]) snprintf(hdr, sizeof hdr, "Authorization: %s", tok);
  Buf *b = malloc(sizeof *b);
  if (!b) {
    snprintf(why, cap, "out of memory");
    return -1;
  }
  int r = md_ask("GET", url, hdr[0] ? hdr : NULL, b, why, cap);
  if (r == 0) r = md_parse(b->b, "the container credentials service", c, why, cap);
  free(b);
  if (r == 0) {
    c->kind = RMT_CREDS_CONTAINER;
    snprintf(c->source, sizeof c->source, "the container credentials service (%.200s)", url);
  }
  return r;
}

/* The instance's role credentials through IMDSv2 into C. */
static int imds_get(RmtCreds *c, char *why, size_t cap) {
  const char *ep = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  char base[1024];
  snprintf(base, sizeof base, "%s", ep && *ep ? ep : "http://169.254.169.254");
  size_t bl = strlen(base);
  while (bl > 0 && base[bl - 1] == '/') base[--bl] = 0;
  Buf *b = malloc(sizeof *b);
  if (!b) {
    snprintf(why, cap, "out of memory");
    return -1;
  }
  char url[2048], hdr[1200], role[256];
  snprintf(url, sizeof url, "%s/latest/api/token", base);
  int r = md_ask("PUT", url, "X-aws-ec2-metadata-token-ttl-seconds: 21600", b, why, cap);
  if (r == 0 && (b->n == 0 || b->n >= 1000 || strpbrk(b->b, "\r\n"))) {
    snprintf(why, cap, "PUT %s: not a session token", url);
    r = -1;
  }
  if (r == 0) {
    snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %.1000s", b->b);
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/", base);
    r = md_ask("GET", url, hdr, b, why, cap);
  }
  if (r == 0) {
    size_t n = strcspn(b->b, "\r\n");
    if (n == 0 || n >= sizeof role || strchr(b->b, '/')) {
      snprintf(why, cap, "GET %s: no role (the instance has no instance profile)", url);
      r = -1;
    } else {
      memcpy(role, b->b, n);
      role[n] = 0;
      snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/%s", base, role);
      r = md_ask("GET", url, hdr, b, why, cap);
    }
  }
  if (r == 0) r = md_parse(b->b, "the instance metadata service", c, why, cap);
  free(b);
  if (r == 0) {
    c->kind = RMT_CREDS_IMDS;
    snprintf(c->source, sizeof c->source, "the instance metadata service (%.200s, role %.100s)", base, role);
  }
  return r;
}

/* The last credentials a service gave, for the opens that follow (an
** open of a dataset opens several objects, each looking for credentials):
** reused while not due, for the same service (KEY: its kind and URL). */
static pthread_mutex_t smu = PTHREAD_MUTEX_INITIALIZER;
static RmtCreds *scache;
static char skey[4200];

static void svc_key(int kind, char *out, size_t cap) {
  const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI"), *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  const char *ep = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (kind == RMT_CREDS_CONTAINER) snprintf(out, cap, "c %s|%s", rel ? rel : "", full ? full : "");
  else snprintf(out, cap, "i %s", ep ? ep : "");
}

/* Credentials of service KIND into C: the cached ones while not due, else
** fetched (FORCE: fetched unless the cache has newer than C). */
static int svc_get(int kind, RmtCreds *c, int force, char *why, size_t cap) {
  char key[4200];
  svc_key(kind, key, sizeof key);
  long long now = (long long)time(NULL);
  pthread_mutex_lock(&smu);
  int hit = scache && scache->kind == kind && strcmp(skey, key) == 0
            && (rmt_creds_due(scache) == 0 || now < rmt_creds_due(scache))
            && (!force || scache->expires > c->expires);
  if (hit) *c = *scache;
  pthread_mutex_unlock(&smu);
  if (hit) return 0;
  RmtCreds *n = malloc(sizeof *n);
  if (!n) {
    snprintf(why, cap, "out of memory");
    return -1;
  }
  memset(n, 0, sizeof *n);
  int r = kind == RMT_CREDS_CONTAINER ? container_get(n, why, cap) : imds_get(n, why, cap);
  if (r == 0) {
    *c = *n;
    pthread_mutex_lock(&smu);
    if (!scache) scache = malloc(sizeof *scache);
    if (scache) {
      *scache = *n;
      snprintf(skey, sizeof skey, "%s", key);
    }
    pthread_mutex_unlock(&smu);
  }
  explicit_bzero(n, sizeof *n);
  free(n);
  return r;
}

static int imds_disabled(void) {
  const char *d = getenv("AWS_EC2_METADATA_DISABLED");
  return d && strcasecmp(d, "true") == 0;
}

/* --- the chain ------------------------------------------------------------------ */

/* Both or neither of ID and SECRET (named NID, NSEC): 1 both, 0 neither,
** -1 one (MSG says which). */
static int pair(const char *id, const char *secret, const char *nid, const char *nsec, const char *path, char *msg,
                size_t cap) {
  if (*id && *secret) return 1;
  if (!*id && !*secret) return 0;
  snprintf(msg, cap, "%s: no S3 credentials: %s is set but %s is not", path, *id ? nid : nsec, *id ? nsec : nid);
  return -1;
}

static int fill(RmtCreds *c, const char *id, const char *secret, const char *token, const char *path, char *msg,
                size_t cap) {
  if (strlen(id) >= sizeof c->id || strlen(secret) >= sizeof c->secret || strlen(token) >= sizeof c->token) {
    snprintf(msg, cap, "%s: S3 credentials from %s: a key or token is too long", path, c->source);
    return PAGEDB_CANTOPEN;
  }
  snprintf(c->id, sizeof c->id, "%s", id);
  snprintf(c->secret, sizeof c->secret, "%s", secret);
  snprintf(c->token, sizeof c->token, "%s", token);
  return PAGEDB_OK;
}

int rmt_creds_find(const char *path, RmtCreds *c, char *region, size_t rcap, char *endpoint, size_t ecap, char *msg,
                   size_t cap) {
  memset(c, 0, sizeof *c);
  Profile *p = malloc(sizeof *p);
  if (!p) {
    snprintf(msg, cap, "out of memory opening %s", path);
    return PAGEDB_NOMEM;
  }
  char m2[9000] = "";   /* room for both file names: cut to the caller's size below */
  int rc = profile_load(p, m2, sizeof m2);
  if (rc != PAGEDB_OK) {
    snprintf(msg, cap, "%s: %s", path, m2);
    free(p);
    return rc;
  }
  /* Region and endpoint: pagedb_config or the environment, else the
  ** profile's, else the default. */
  const char *src;
  rc = pdb_rconf_str_src(PAGEDB_CONFIG_S3_REGION, region, rcap, &src, msg, cap);
  if (rc == PAGEDB_OK && strcmp(src, "default") == 0 && p->region[0]) snprintf(region, rcap, "%s", p->region);
  if (rc == PAGEDB_OK) rc = pdb_rconf_str_src(PAGEDB_CONFIG_S3_ENDPOINT, endpoint, ecap, &src, msg, cap);
  if (rc == PAGEDB_OK && strcmp(src, "default") == 0 && p->endpoint[0]) snprintf(endpoint, ecap, "%s", p->endpoint);
  /* 1: pagedb_config. */
  char *oid = malloc(RMT_ID_MAX), *osec = malloc(RMT_SECRET_MAX), *otok = malloc(RMT_TOKEN_MAX);
  int got = 0;
  if (rc == PAGEDB_OK && (!oid || !osec || !otok)) rc = PAGEDB_NOMEM, snprintf(msg, cap, "out of memory opening %s", path);
  if (rc == PAGEDB_OK) rc = pdb_rconf_str(PAGEDB_CONFIG_S3_ACCESS_KEY_ID, oid, RMT_ID_MAX, msg, cap);
  if (rc == PAGEDB_OK) rc = pdb_rconf_str(PAGEDB_CONFIG_S3_SECRET_ACCESS_KEY, osec, RMT_SECRET_MAX, msg, cap);
  if (rc == PAGEDB_OK) rc = pdb_rconf_str(PAGEDB_CONFIG_S3_SESSION_TOKEN, otok, RMT_TOKEN_MAX, msg, cap);
  if (rc == PAGEDB_OK) {
    got = pair(oid, osec, "PAGEDB_CONFIG_S3_ACCESS_KEY_ID", "PAGEDB_CONFIG_S3_SECRET_ACCESS_KEY", path, msg, cap);
    if (got < 0) rc = PAGEDB_CANTOPEN;
    if (got > 0) {
      snprintf(c->source, sizeof c->source, "pagedb_config (PAGEDB_CONFIG_S3_ACCESS_KEY_ID)");
      rc = fill(c, oid, osec, otok, path, msg, cap);
    }
  }
  /* 2: the environment. */
  if (rc == PAGEDB_OK && !got) {
    const char *id = getenv("AWS_ACCESS_KEY_ID"), *sec = getenv("AWS_SECRET_ACCESS_KEY"), *tok = getenv("AWS_SESSION_TOKEN");
    got = pair(id ? id : "", sec ? sec : "", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", path, msg, cap);
    if (got < 0) rc = PAGEDB_CANTOPEN;
    if (got > 0) {
      snprintf(c->source, sizeof c->source, "the environment (AWS_ACCESS_KEY_ID)");
      rc = fill(c, id, sec, tok ? tok : "", path, msg, cap);
    }
  }
  /* 3: the profile. */
  if (rc == PAGEDB_OK && !got) {
    got = pair(p->id, p->secret, "aws_access_key_id", "aws_secret_access_key", path, msg, cap);
    if (got < 0) {
      size_t l = strlen(msg);
      snprintf(msg + l, cap - l, " in profile '%s' (%s, %s)", p->name, p->cfile, p->kfile);
      rc = PAGEDB_CANTOPEN;
    } else if (got > 0) {
      snprintf(c->source, sizeof c->source, "profile '%.200s' in %.300s", p->name, p->where ? p->where : p->cfile);
      rc = fill(c, p->id, p->secret, p->token, path, msg, cap);
    } else if (p->unsupported[0]) {
      snprintf(msg, cap, "%s: the AWS profile '%s' gets its credentials by %s, which pagedb does not do: give keys"
               " (aws_access_key_id, aws_secret_access_key) or use the environment", path, p->name, p->unsupported);
      rc = PAGEDB_CANTOPEN;
    }
  }
  /* 4 and 5: the metadata services. */
  char why[1024] = "";
  const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI"), *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  if (rc == PAGEDB_OK && !got && ((full && *full) || (rel && *rel))) {
    if (svc_get(RMT_CREDS_CONTAINER, c, 0, why, sizeof why) != 0) {
      snprintf(msg, cap, "%s: no S3 credentials: %s", path, why);
      rc = PAGEDB_CANTOPEN;
    } else {
      got = 1;
    }
  }
  if (rc == PAGEDB_OK && !got && !imds_disabled()) {
    if (svc_get(RMT_CREDS_IMDS, c, 0, why, sizeof why) == 0) got = 1;
  }
  if (rc == PAGEDB_OK && !got) {
    snprintf(msg, cap, "%s: no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or keys of"
             " profile '%s' in %s (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE); %s%s", path, p->name, p->cfile,
             imds_disabled() ? "the instance metadata service is disabled (AWS_EC2_METADATA_DISABLED)"
                             : "the instance metadata service: ", imds_disabled() ? "" : why);
    rc = PAGEDB_CANTOPEN;
  }
  /* Invariant 1: no copy of a secret outlives its use. */
  if (oid) explicit_bzero(oid, RMT_ID_MAX);
  if (osec) explicit_bzero(osec, RMT_SECRET_MAX);
  if (otok) explicit_bzero(otok, RMT_TOKEN_MAX);
  explicit_bzero(p, sizeof *p);
  free(oid);
  free(osec);
  free(otok);
  free(p);
  if (rc != PAGEDB_OK) explicit_bzero(c, sizeof *c);
  return rc;
}

long long rmt_creds_due(const RmtCreds *c) {
  return c->kind == RMT_CREDS_STATIC || c->expires == 0 ? 0 : c->expires - REFRESH_S;
}

int rmt_creds_refresh(RmtCreds *c, char *why, size_t cap) {
  RmtCreds *n = malloc(sizeof *n);
  if (!n) {
    snprintf(why, cap, "out of memory");
    return -1;
  }
  *n = *c;
  int r = svc_get(c->kind, n, 1, why, cap);
  if (r == 0) *c = *n;
  explicit_bzero(n, sizeof *n);
  free(n);
  return r;
}
