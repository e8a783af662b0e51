/*
** rconfig.c -- the settings of remote datasets, resolved in one place:
** a value set by pagedb_config, else the environment, else the default.
** cache.c, http.c and upload.c ask here at each open; pagedb_config
** (src/mem.c) sets and reads here.
**
** INVARIANTS
**
**   1. A value set by pagedb_config was checked when set (a bad one is
**      PAGEDB_MISUSE and changes nothing); it wins over the environment.
**   2. An environment value is checked each time it is read: a bad one is
**      an error naming the variable (PAGEDB_CANTOPEN), never the default
**      in its place.
**   3. Nothing is allocated: strings set are copied into fixed buffers
**      (MAX_STR bytes with the terminator), so a setting costs no memory
**      pagedb counts and can be made before pagedb_initialize.
**   4. Thread-safe: one mutex guards the values set; readers copy out.
**   5. A secret is never given back: GETREMOTE of the secret key or the
**      session token says only whether one is set ("(set)", or ""); a
**      secret that is replaced or unset is wiped from its buffer.
*/
#include "os.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_STR 4096
#define K_STR 0     /* a string */
#define K_INT 1     /* plain digits */
#define K_SIZE 2    /* digits with an optional K, M or G suffix */

typedef struct Setting {
  int op;                   /* PAGEDB_CONFIG_... */
  int kind;
  const char *env[3];       /* its variables, first found wins */
  int64_t lo, hi, dflt;     /* numbers: the range and default */
  int pow2;                 /* numbers: must be a power of two */
  int empty_ok;             /* strings: "" is a value */
} Setting;

static const Setting kSettings[] = {
  { PAGEDB_CONFIG_CACHE_DIR, K_STR, { "PAGEDB_CACHE_DIR" }, 0, 0, 0, 0, 0 },
  { PAGEDB_CONFIG_CACHE_BYTES, K_SIZE, { "PAGEDB_CACHE_BYTES" }, 1, INT64_MAX, 4ll << 30, 0, 0 },
  { PAGEDB_CONFIG_CACHE_CHUNK, K_SIZE, { "PAGEDB_CACHE_CHUNK" }, 64 << 10, 64 << 20, 1 << 20, 1, 0 },
  { PAGEDB_CONFIG_REMOTE_TIMEOUT, K_INT, { "PAGEDB_REMOTE_TIMEOUT_MS" }, 100, 3600000, 30000, 0, 0 },
  { PAGEDB_CONFIG_REMOTE_RETRIES, K_INT, { "PAGEDB_REMOTE_RETRIES" }, 0, 100, 5, 0, 0 },
  { PAGEDB_CONFIG_REMOTE_CONNECTIONS, K_INT, { "PAGEDB_REMOTE_CONNECTIONS" }, 1, 64, 16, 0, 0 },
  { PAGEDB_CONFIG_S3_ENDPOINT, K_STR, { "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL" }, 0, 0, 0, 0, 1 },
  { PAGEDB_CONFIG_S3_REGION, K_STR, { "AWS_REGION", "AWS_DEFAULT_REGION" }, 0, 0, 0, 0, 0 },
  { PAGEDB_CONFIG_CA_BUNDLE, K_STR, { "CURL_CA_BUNDLE", "SSL_CERT_FILE" }, 0, 0, 0, 0, 1 },
  { PAGEDB_CONFIG_PUSH_PART_BYTES, K_SIZE, { "PAGEDB_PUSH_PART_BYTES" }, 5ll << 20, 5ll << 30, 32ll << 20, 0, 0 },
  { PAGEDB_CONFIG_PUSH_PARALLEL, K_INT, { "PAGEDB_PUSH_PARALLEL" }, 1, 16, 4, 0, 0 },
  { PAGEDB_CONFIG_CACHE_SHARED, K_INT, { "PAGEDB_CACHE_SHARED" }, 0, 1, 0, 0, 0 },
  /* Credentials: set by pagedb_config only here (the environment's
  ** AWS_ACCESS_KEY_ID and the rest are read as a pair by creds.c, after
  ** these); the secret and the token are never given back (invariant 5). */
  { PAGEDB_CONFIG_S3_ACCESS_KEY_ID, K_STR, { NULL }, 0, 0, 0, 0, 0 },
  { PAGEDB_CONFIG_S3_SECRET_ACCESS_KEY, K_STR, { NULL }, 0, 0, 0, 0, 0 },
  { PAGEDB_CONFIG_S3_SESSION_TOKEN, K_STR, { NULL }, 0, 0, 0, 0, 0 },
  { PAGEDB_CONFIG_S3_PROFILE, K_STR, { "AWS_PROFILE", "AWS_DEFAULT_PROFILE" }, 0, 0, 0, 0, 0 },
};
#define NSET ((int)(sizeof kSettings / sizeof kSettings[0]))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int isset[NSET];
static int64_t num[NSET];
static char str[NSET][MAX_STR];     /* only K_STR settings use theirs */

static int find(int op) {
  for (int i = 0; i < NSET; i++)
    if (kSettings[i].op == op) return i;
  return -1;
}

/* Parse S as setting T's number into *V: 1 if it is one in range. */
static int parse_num(const Setting *t, const char *s, int64_t *v) {
  if (!s || !(*s >= '0' && *s <= '9')) return 0;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  uint64_t mul = 1;
  if (t->kind == K_SIZE && (*end == 'K' || *end == 'k')) mul = 1ull << 10, end++;
  else if (t->kind == K_SIZE && (*end == 'M' || *end == 'm')) mul = 1ull << 20, end++;
  else if (t->kind == K_SIZE && (*end == 'G' || *end == 'g')) mul = 1ull << 30, end++;
  if (errno || *end || x > (uint64_t)INT64_MAX / mul) return 0;
  return (*v = (int64_t)(x * mul)) >= t->lo && *v <= t->hi && (!t->pow2 || !(*v & (*v - 1)));
}

static int num_ok(const Setting *t, int64_t v) {
  return v >= t->lo && v <= t->hi && (!t->pow2 || !(v & (v - 1)));
}

int pdb_rconf_set(int op, va_list ap) {
  int i = find(op);
  if (i < 0) return PAGEDB_MISUSE;
  const Setting *t = &kSettings[i];
  int rc = PAGEDB_OK;
  pthread_mutex_lock(&mu);
  if (t->kind == K_STR) {
    const char *s = va_arg(ap, const char *);
    if (!s) isset[i] = 0, explicit_bzero(str[i], sizeof str[i]);
    else if ((!*s && !t->empty_ok) || strlen(s) >= MAX_STR) rc = PAGEDB_MISUSE;
    else explicit_bzero(str[i], sizeof str[i]), memcpy(str[i], s, strlen(s) + 1), isset[i] = 1;
  } else {
    int64_t v = va_arg(ap, int64_t);
    if (v == -1) isset[i] = 0;
    else if (!num_ok(t, v)) rc = PAGEDB_MISUSE;
    else num[i] = v, isset[i] = 1;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

/* A string setting's default into BUF ("" when the default is a
** behaviour, not a value: AWS itself, the system's CA store). */
static void default_str(int op, char *buf, size_t cap) {
  if (op == PAGEDB_CONFIG_S3_REGION) {
    snprintf(buf, cap, "us-east-1");
  } else if (op == PAGEDB_CONFIG_CACHE_DIR) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(buf, cap, "%s/pagedb", xdg);
    else if (home && *home) snprintf(buf, cap, "%s/.cache/pagedb", home);
    else snprintf(buf, cap, "/tmp/pagedb-cache-%ld", (long)getuid());
  }
}

/* Setting I's value: set, else from the environment, else the default
** (*SRC says which).  For a number, *V; for a string, BUF (CAP bytes, "" when
** none).  PAGEDB_CANTOPEN with MSG for a bad environment value. */
static int resolve(int i, int64_t *v, char *buf, size_t cap, const char **src, char *msg, size_t mcap) {
  const Setting *t = &kSettings[i];
  if (buf && cap) buf[0] = 0;
  *src = "default";
  int rc = PAGEDB_OK;
  pthread_mutex_lock(&mu);
  int set = isset[i];
  if (set) {
    *src = "pagedb_config";
    if (t->kind != K_STR) *v = num[i];
    else if (strlen(str[i]) < cap) memcpy(buf, str[i], strlen(str[i]) + 1);
    else {
      snprintf(msg, mcap, "the value set by pagedb_config for %s is %zu bytes long: at most %zu here", t->env[0],
               strlen(str[i]), cap - 1);
      rc = PAGEDB_CANTOPEN;
    }
  }
  pthread_mutex_unlock(&mu);
  if (set) return rc;
  if (t->kind != K_STR) *v = t->dflt;
  else default_str(t->op, buf, cap);
  for (int e = 0; e < 3 && t->env[e]; e++) {
    const char *s = getenv(t->env[e]);
    if (!s || !*s) continue;
    *src = t->env[e];
    if (t->kind == K_STR) {
      if (strlen(s) >= cap) {
        snprintf(msg, mcap, "%s is %zu bytes long: at most %zu", t->env[e], strlen(s), cap - 1);
        return PAGEDB_CANTOPEN;
      }
      snprintf(buf, cap, "%s", s);
    } else if (!parse_num(t, s, v)) {
      snprintf(msg, mcap, "%s='%.64s': not %s from %lld to %lld%s", t->env[e], s,
               t->kind == K_SIZE ? "a size (digits, then K, M or G)" : "a whole number", (long long)t->lo,
               (long long)t->hi, t->pow2 ? ", a power of two" : "");
      return PAGEDB_CANTOPEN;
    }
    return PAGEDB_OK;
  }
  return PAGEDB_OK;
}

int pdb_rconf_num(int op, int64_t *v, char *msg, size_t cap) {
  const char *src;
  int i = find(op);
  assert(i >= 0 && kSettings[i].kind != K_STR);
  return resolve(i, v, NULL, 0, &src, msg, cap);
}

int pdb_rconf_str(int op, char *buf, size_t cap, char *msg, size_t mcap) {
  const char *src;
  int64_t v;
  int i = find(op);
  assert(i >= 0 && kSettings[i].kind == K_STR);
  return resolve(i, &v, buf, cap, &src, msg, mcap);
}

int pdb_rconf_str_src(int op, char *buf, size_t cap, const char **src, char *msg, size_t mcap) {
  int64_t v;
  int i = find(op);
  assert(i >= 0 && kSettings[i].kind == K_STR);
  return resolve(i, &v, buf, cap, src, msg, mcap);
}

int pdb_rconf_get(va_list ap) {
  int op = va_arg(ap, int);
  char *buf = va_arg(ap, char *);
  size_t cap = va_arg(ap, size_t);
  const char **source = va_arg(ap, const char **);
  int i = find(op);
  if (i < 0 || !buf || cap == 0) return PAGEDB_MISUSE;
  const char *src;
  int64_t v = 0;
  char s[MAX_STR];
  int rc = resolve(i, &v, s, sizeof s, &src, buf, cap);
  if (source) *source = src;
  if (rc != PAGEDB_OK) return rc;
  int secret = op == PAGEDB_CONFIG_S3_SECRET_ACCESS_KEY || op == PAGEDB_CONFIG_S3_SESSION_TOKEN;
  if (kSettings[i].kind == K_STR) snprintf(buf, cap, "%s", secret && s[0] ? "(set)" : s);
  else snprintf(buf, cap, "%lld", (long long)v);
  explicit_bzero(s, sizeof s);
  return PAGEDB_OK;
}
