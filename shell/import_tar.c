/*
** import_tar.c -- .import of WebDataset tar shards (see xfer.h).
**
** SOURCE names one shard or a glob of them (tarShards).  Pass 1 (tarScan)
** reads every header: it refuses unsafe names and extensions that cannot
** name a field before anything is written, collects the extensions (the
** fields), counts the samples, and checks keys are unique across shards.
** Pass 2 (tarNext, under the import's lock, since a tar is read in order)
** gathers a key's adjacent members into one job; a plain shard whose keys'
** members lie apart is read instead by seeking, from the plan pass 1 made
** of it (TarPlan).  The members themselves are parsed by tar.c.
*/
#include "import.h"
#include "npy.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
** A plain tar shard whose members of one key are not all adjacent is read
** by seeking: its members, recorded by the first pass, are grouped by key
** (the groups in the order of their first member) and read group by group.
*/
typedef struct TarRec {
  char *zName;          /* the member's name, for messages */
  char *zKey;
  char *zExt;
  int64_t off, size;    /* its data */
  int64_t pos;          /* its rank in the shard */
} TarRec;
struct TarPlan {
  TarRec *a;            /* members, then sorted into groups of one key */
  int64_t n, nAlloc;
  int64_t *aStart;      /* group i is a[aStart[i] .. aStart[i+1]) ... */
  int64_t *aOrder;      /* ...and groups are read in this order */
  int64_t nGroup, iGroup;
  int unsorted;         /* a key's members are apart: read by this plan */
};

/* A set of strings (open addressing). */
typedef struct StrSet { char **a; size_t n, cap; } StrSet;

static uint64_t strHash(const char *z){
  uint64_t h = 1469598103934665603ull;
  while( *z ){ h ^= (unsigned char)*z++; h *= 1099511628211ull; }
  return h;
}

/* 1 if Z was in S; 0 after adding it; -1 out of memory. */
static int setAdd(StrSet *s, const char *z){
  if( (s->n + 1) * 2 > s->cap ){
    size_t c2 = s->cap ? s->cap * 2 : 1024;
    char **a = calloc(c2, sizeof *a);
    if( a == 0 ) return -1;
    for(size_t i = 0; i < s->cap; i++){
      if( s->a[i] == 0 ) continue;
      size_t h = strHash(s->a[i]) & (c2 - 1);
      while( a[h] ) h = (h + 1) & (c2 - 1);
      a[h] = s->a[i];
    }
    free(s->a);
    s->a = a;
    s->cap = c2;
  }
  size_t h = strHash(z) & (s->cap - 1);
  while( s->a[h] ){
    if( strcmp(s->a[h], z) == 0 ) return 1;
    h = (h + 1) & (s->cap - 1);
  }
  if( (s->a[h] = strdup(z)) == 0 ) return -1;
  s->n++;
  return 0;
}

/* 1 if Z is in S. */
static int setHas(const StrSet *s, const char *z){
  if( s->cap == 0 ) return 0;
  size_t h = strHash(z) & (s->cap - 1);
  while( s->a[h] ){
    if( strcmp(s->a[h], z) == 0 ) return 1;
    h = (h + 1) & (s->cap - 1);
  }
  return 0;
}

static void setFree(StrSet *s){
  for(size_t i = 0; i < s->cap; i++) free(s->a[i]);
  free(s->a);
}

/*
** Member name Z made relative and clean into *POUT (malloc'd): empty and
** "." components dropped, so "./a//b.jpg" is "a/b.jpg" and "./" is "".
** Returns NULL, or why Z is refused: an absolute name, a ".." component.
** Out of memory: NULL with *POUT NULL.
*/
static const char *tarCleanName(const char *z, char **pOut){
  *pOut = 0;
  if( z[0] == '/' ) return "an absolute name";
  char *o = malloc(strlen(z) + 1);
  if( o == 0 ) return 0;
  size_t k = 0;
  for(const char *c = z; *c; ){
    const char *e = strchr(c, '/');
    size_t len = e ? (size_t)(e - c) : strlen(c);
    if( len == 2 && c[0] == '.' && c[1] == '.' ){
      free(o);
      return "a \"..\" component";
    }
    if( len > 0 && !(len == 1 && c[0] == '.') ){
      if( k ) o[k++] = '/';
      memcpy(o + k, c, len);
      k += len;
    }
    if( e == 0 ) break;
    c = e + 1;
  }
  o[k] = 0;
  *pOut = o;
  return 0;
}

/* Split member name Z into its key (malloc'd into *PKEY) and extension (a
** pointer into Z, "" if none). */
static int tarKey(const char *z, char **pKey, const char **pExt){
  const char *base = strrchr(z, '/');
  base = base ? base + 1 : z;
  const char *dot = strchr(base, '.');
  size_t k = dot ? (size_t)(dot - z) : strlen(z);
  *pExt = dot ? dot + 1 : "";
  *pKey = strndup(z, k);
  return *pKey ? PAGEDB_OK : PAGEDB_NOMEM;
}

/* Why extension E cannot name a field, or NULL if it can. */
static const char *extProblem(const char *e){
  size_t n = strlen(e);
  if( n == 0 ) return "no extension";
  if( n > PAGEDB_MAX_NAME ) return "an extension longer than a field name may be";
  if( e[0] >= '0' && e[0] <= '9' ) return "an extension starting with a digit";
  for(size_t i = 0; i < n; i++){
    char c = e[i];
    if( !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '_' || c == '.' || c == '-') ){
      return "an extension with a character other than letters, digits, '_', '.' and '-'";
    }
  }
  if( strcasecmp(e, "__key__") == 0 ) return "an extension that is the key's field name (__key__)";
  return 0;
}

/*
** The field of extension E into OUT (PAGEDB_MAX_NAME + 2 bytes): E itself,
** but for the names table sample's own columns take (id, page, off, in any
** case), which no field can have: those get a '_' appended, as a CSV
** column of that name does ("id" -> "id_"); .export (export.c) writes such
** a field back as member KEY.id.  A WebDataset .id member (an integer) is
** field id_.
*/
static void extFieldName(const char *e, char *out){
  int reserved = strcasecmp(e, "id") == 0 || strcasecmp(e, "page") == 0 || strcasecmp(e, "off") == 0;
  snprintf(out, PAGEDB_MAX_NAME + 2, "%s%s", e, reserved ? "_" : "");
}

static void planFree(TarPlan *p){
  for(int64_t i = 0; i < p->n; i++){
    free(p->a[i].zName);
    free(p->a[i].zKey);
    free(p->a[i].zExt);
  }
  free(p->a);
  free(p->aStart);
  free(p->aOrder);
  memset(p, 0, sizeof *p);
}

static int recCmp(const void *a, const void *b){
  const TarRec *x = a, *y = b;
  int c = strcmp(x->zKey, y->zKey);
  return c ? c : x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* A group and the rank of its first member, to order the groups. */
typedef struct GroupPos { int64_t pos, g; } GroupPos;
static int groupCmp(const void *a, const void *b){
  int64_t x = ((const GroupPos *)a)->pos, y = ((const GroupPos *)b)->pos;
  return x < y ? -1 : x > y;
}

/* Record a member of shard plan P. */
static int planAdd(TarPlan *p, const char *zName, const char *zKey, const char *zExt,
                   int64_t off, int64_t size){
  if( p->n == p->nAlloc ){
    int64_t n2 = p->nAlloc ? p->nAlloc * 2 : 64;
    TarRec *a = realloc(p->a, (size_t)n2 * sizeof *a);
    if( a == 0 ) return PAGEDB_NOMEM;
    p->a = a;
    p->nAlloc = n2;
  }
  TarRec *r = &p->a[p->n];
  r->zName = strdup(zName);
  r->zKey = strdup(zKey);
  r->zExt = strdup(zExt);
  r->off = off;
  r->size = size;
  r->pos = p->n;
  if( r->zName == 0 || r->zKey == 0 || r->zExt == 0 ){
    free(r->zName);
    free(r->zKey);
    free(r->zExt);
    return PAGEDB_NOMEM;
  }
  p->n++;
  return PAGEDB_OK;
}

/* Group plan P's members by key; a key with two members of one extension
** is refused.  Returns a code with EMSG. */
static int planGroup(TarPlan *p, const char *zShard, char *emsg, size_t nemsg){
  qsort(p->a, (size_t)p->n, sizeof *p->a, recCmp);
  p->aStart = malloc((size_t)(p->n + 1) * sizeof(int64_t));
  p->aOrder = malloc((size_t)(p->n + 1) * sizeof(int64_t));
  if( p->aStart == 0 || p->aOrder == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  p->nGroup = 0;
  for(int64_t i = 0; i < p->n; i++){
    if( i == 0 || strcmp(p->a[i].zKey, p->a[i - 1].zKey) ){
      p->aStart[p->nGroup] = i;
      p->aOrder[p->nGroup] = p->nGroup;
      p->nGroup++;
    }else{
      for(int64_t k = p->aStart[p->nGroup - 1]; k < i; k++){
        if( strcmp(p->a[k].zExt, p->a[i].zExt) == 0 ){
          xfer_msg(emsg, nemsg, "%s: member \"%s\": key \"%s\" has two members with extension "
                 "\"%s\"", zShard, p->a[i].zName, p->a[i].zKey, p->a[i].zExt);
          return PAGEDB_CONSTRAINT;
        }
      }
    }
  }
  p->aStart[p->nGroup] = p->n;
  /* A group's first member has its lowest rank: recCmp sorted by rank. */
  GroupPos *a = malloc((size_t)(p->nGroup + 1) * sizeof *a);
  if( a == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  for(int64_t g = 0; g < p->nGroup; g++){
    a[g].pos = p->a[p->aStart[g]].pos;
    a[g].g = g;
  }
  qsort(a, (size_t)p->nGroup, sizeof *a, groupCmp);
  for(int64_t g = 0; g < p->nGroup; g++) p->aOrder[g] = a[g].g;
  free(a);
  return PAGEDB_OK;
}

static const char *extLast(const char *e);

/*
** What the .npy members of one extension agree on (pass 1 reads each one's
** header): the field is a tensor of their dtype and rank, each dimension
** fixed where every member has the same size and variable where they
** differ.  A member pagedb cannot store as a tensor (Fortran order, a
** scalar, a dtype it has not), or members of different dtypes or ranks,
** keep the extension a BYTES field, as it was before tensors.
*/
typedef struct NpyAgg {
  char *zExt;
  int n;                /* members seen */
  const char *why;      /* set: the extension stays BYTES, and this says why */
  char zWhere[1024];    /* the member WHY is about */
  XferTensor t;
} NpyAgg;

/* Fold member M's .npy header (its data P, N bytes) into extension E's NpyAgg. */
static int npyFold(Import *imp, const char *zShard, const char *zMember, const char *e, const void *p, size_t n){
  NpyAgg *a = 0;
  for(int i = 0; i < imp->nNpy && !a; i++) if( strcmp(imp->aNpy[i].zExt, e) == 0 ) a = &imp->aNpy[i];
  if( a == 0 ){
    NpyAgg *na = realloc(imp->aNpy, (size_t)(imp->nNpy + 1) * sizeof *na);
    if( na == 0 ) return PAGEDB_NOMEM;
    imp->aNpy = na;
    a = &na[imp->nNpy];
    memset(a, 0, sizeof *a);
    if( (a->zExt = strdup(e)) == 0 ) return PAGEDB_NOMEM;
    imp->nNpy++;
  }
  if( a->why ) return PAGEDB_OK;
  NpyInfo info;
  const char *why = npy_parse(p, n, &info);
  if( why == 0 && a->n > 0 && info.dtype != a->t.dtype ) why = "its dtype differs from the extension's other members'";
  if( why == 0 && a->n > 0 && info.ndim != a->t.ndim ) why = "its rank differs from the extension's other members'";
  if( why ){
    a->why = why;
    snprintf(a->zWhere, sizeof a->zWhere, "%s: member \"%s\"", zShard, zMember);
    return PAGEDB_OK;
  }
  if( a->n++ == 0 ){
    a->t.dtype = info.dtype;
    a->t.ndim = info.ndim;
    memcpy(a->t.dims, info.shape, sizeof info.shape);
  }else{
    for(int i = 0; i < info.ndim; i++) if( a->t.dims[i] != info.shape[i] ) a->t.dims[i] = PAGEDB_DIM_VAR;
  }
  return PAGEDB_OK;
}

/* Extension E's tensor declaration, when its .npy members agree on one. */
static const XferTensor *npyTensor(Import *imp, const char *e){
  for(int i = 0; i < imp->nNpy; i++){
    NpyAgg *a = &imp->aNpy[i];
    if( strcmp(a->zExt, e) != 0 ) continue;
    if( a->why && imp->o->err ){
      fprintf(imp->o->err, "%s: %s: extension \"%s\" imported as bytes, not as a tensor\n", a->zWhere, a->why, e);
    }
    return a->why || a->n == 0 ? 0 : &a->t;
  }
  return 0;
}

/* Pass 1: read every shard's headers; collect the extensions, count the
** samples, check names and that each key's members are adjacent. */
static int tarScan(Import *imp, char *emsg, size_t nemsg){
  StrSet keys = {0};         /* the keys of the shards before this one */
  int rc = PAGEDB_OK;
  imp->aPlan = calloc((size_t)imp->nShard, sizeof(TarPlan));
  if( imp->aPlan == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  for(int s = 0; rc == PAGEDB_OK && s < imp->nShard; s++){
    const char *zShard = imp->azShard[s];
    TarReader *tr = 0;
    TarPlan *plan = &imp->aPlan[s];
    char *zCur = 0;          /* the current key */
    StrSet exts = {0};       /* its extensions */
    StrSet shardKeys = {0};  /* the keys of this shard */
    int64_t nRun = 0;        /* runs of members of one key */
    rc = tar_open(zShard, &tr, emsg, nemsg);
    while( rc == PAGEDB_OK ){
      TarMember m;
      rc = tar_next(tr, &m, emsg, nemsg);
      if( rc == PAGEDB_NOTFOUND ){ rc = PAGEDB_OK; break; }
      if( rc ) break;
      char *zName;
      const char *why = tarCleanName(m.name, &zName);
      if( why == 0 && zName == 0 ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
      if( why == 0 && zName[0] == 0 && m.kind != TAR_DIR ) why = "an empty name";
      if( why ){
        xfer_msg(emsg, nemsg, "%s: member \"%s\": %s: refused", zShard, m.name, why);
        free(zName);
        rc = PAGEDB_CORRUPT;
        break;
      }
      if( m.kind == TAR_DIR ){ free(zName); continue; }
      if( m.kind != TAR_FILE ){
        const char *zKind = m.typeflag == '2' ? "a symbolic link" : m.typeflag == '1'
          ? "a hard link" : m.typeflag == '3' || m.typeflag == '4' ? "a device"
          : m.typeflag == '6' ? "a fifo" : "not a regular file";
        if( imp->o->err ) fprintf(imp->o->err, "%s: member \"%s\": %s: skipped\n", zShard, m.name, zKind);
        free(zName);
        continue;
      }
      char *zKey;
      const char *zExt;
      if( tarKey(zName, &zKey, &zExt) ){
        free(zName);
        rc = PAGEDB_NOMEM;
        xfer_msg(emsg, nemsg, "out of memory");
        break;
      }
      if( *zExt == 0 ){
        if( imp->o->err ) fprintf(imp->o->err, "%s: member \"%s\": no extension: skipped\n", zShard, m.name);
        free(zKey);
        free(zName);
        continue;
      }
      /* The extension is copied before the name it points into goes. */
      char zExtBuf[PAGEDB_MAX_NAME + 2];
      why = extProblem(zExt);
      if( why ){
        xfer_msg(emsg, nemsg, "%s: member \"%s\": %s (\"%.80s\") cannot name a field", zShard,
               m.name, why, zExt);
        free(zKey);
        free(zName);
        rc = PAGEDB_MISMATCH;
        break;
      }
      snprintf(zExtBuf, sizeof zExtBuf, "%s", zExt);
      zExt = zExtBuf;
      if( tar_direct(tr) && planAdd(plan, m.name, zKey, zExt, tar_offset(tr), m.size) ){
        free(zKey);
        free(zName);
        rc = PAGEDB_NOMEM;
        xfer_msg(emsg, nemsg, "out of memory");
        break;
      }
      free(zName);
      if( zCur == 0 || strcmp(zCur, zKey) ){
        if( zCur ){
          setFree(&exts);
          memset(&exts, 0, sizeof exts);
        }
        int r;
        if( setHas(&keys, zKey) ){
          xfer_msg(emsg, nemsg, "%s: member \"%s\": key \"%s\" is also in an earlier shard "
                 "(keys are unique)", zShard, m.name, zKey);
          rc = PAGEDB_CONSTRAINT;
        }
        if( rc == PAGEDB_OK ){
          r = setAdd(&shardKeys, zKey);
          if( r == 1 && tar_direct(tr) ){
            plan->unsorted = 1;               /* read by seeking, grouped */
          }else if( r == 1 ){
            xfer_msg(emsg, nemsg, "%s: member \"%s\": key \"%s\" appeared before, apart from "
                   "this member: in a compressed shard a sample's members must be adjacent "
                   "(make shards with tar --sort=name)", zShard, m.name, zKey);
            rc = PAGEDB_CONSTRAINT;
          }else if( r < 0 ){
            rc = PAGEDB_NOMEM;
            xfer_msg(emsg, nemsg, "out of memory");
          }
        }
        free(zCur);
        zCur = zKey;
        nRun++;
      }else{
        free(zKey);
      }
      if( rc ) break;
      int r = setAdd(&exts, zExt);
      if( r == 1 ){
        xfer_msg(emsg, nemsg, "%s: member \"%s\": key \"%s\" has two members with extension "
               "\"%s\"", zShard, m.name, zCur, zExt);
        rc = PAGEDB_CONSTRAINT;
        break;
      }
      if( strcasecmp(extLast(zExt), "npy") == 0 ){
        /* Its header decides the field's type (NpyAgg). */
        void *data;
        size_t nData;
        char zMember[256];
        snprintf(zMember, sizeof zMember, "%s", m.name);   /* m.name lives until the next tar_next */
        rc = tar_read(tr, &data, &nData, emsg, nemsg);
        if( rc ) break;
        rc = npyFold(imp, zShard, zMember, zExt, data, nData);
        free(data);
        if( rc ){ xfer_msg(emsg, nemsg, "out of memory"); break; }
      }
      /* The set of all extensions, kept sorted; names differing only in
      ** case would be one field. */
      int lo = 0, hi = imp->nExt;
      while( lo < hi ){
        int mid = (lo + hi) / 2;
        if( strcmp(imp->azExt[mid], zExt) < 0 ) lo = mid + 1; else hi = mid;
      }
      if( lo < imp->nExt && strcmp(imp->azExt[lo], zExt) == 0 ) continue;
      for(int i = 0; i < imp->nExt; i++){
        if( strcasecmp(imp->azExt[i], zExt) == 0 ){
          xfer_msg(emsg, nemsg, "%s: member \"%s\": extensions \"%s\" and \"%s\" differ only in "
                 "case, and field names must not", zShard, m.name, imp->azExt[i], zExt);
          rc = PAGEDB_CONSTRAINT;
        }
      }
      if( rc ) break;
      if( imp->nExt >= PAGEDB_MAX_FIELDS - 1 ){
        xfer_msg(emsg, nemsg, "%s: member \"%s\": more than %d extensions", zShard, m.name,
               PAGEDB_MAX_FIELDS - 1);
        rc = PAGEDB_TOOBIG;
        break;
      }
      if( imp->nExt == imp->nExtAlloc ){
        int n2 = imp->nExtAlloc ? imp->nExtAlloc * 2 : 8;
        char **a = realloc(imp->azExt, (size_t)n2 * sizeof *a);
        if( a == 0 ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
        imp->azExt = a;
        imp->nExtAlloc = n2;
      }
      char *zCopy = strdup(zExt);
      if( zCopy == 0 ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
      memmove(&imp->azExt[lo + 1], &imp->azExt[lo], (size_t)(imp->nExt - lo) * sizeof(char *));
      imp->azExt[lo] = zCopy;
      imp->nExt++;
    }
    free(zCur);
    setFree(&exts);
    tar_close(tr);
    if( rc == PAGEDB_OK && plan->unsorted ){
      rc = planGroup(plan, zShard, emsg, nemsg);
      imp->total += plan->nGroup;
    }else{
      imp->total += nRun;
      planFree(plan);
    }
    /* This shard's keys join those the next shards must not repeat. */
    for(size_t i = 0; rc == PAGEDB_OK && i < shardKeys.cap; i++){
      if( shardKeys.a[i] && setAdd(&keys, shardKeys.a[i]) < 0 ){
        rc = PAGEDB_NOMEM;
        xfer_msg(emsg, nemsg, "out of memory");
      }
    }
    setFree(&shardKeys);
  }
  setFree(&keys);
  return rc;
}

/* The last part of extension E ("seg.json" -> "json"), as WebDataset's
** decoders match it. */
static const char *extLast(const char *e){
  const char *d = strrchr(e, '.');
  return d ? d + 1 : e;
}

/*
** The type WebDataset's conventions give the values of extension E, by its
** last part as webdataset's basichandlers decode it: integers in .cls
** .cls2 .class .count .index .inx .id (decimal text), text in .txt .text
** .transcript, JSON in .json .jsn (TEXT checked to be JSON), bytes in any
** other.
*/
static int extType(const char *e){
  static const char *azInt[] = { "cls", "cls2", "class", "count", "index", "inx", "id" };
  static const char *azText[] = { "txt", "text", "transcript", "json", "jsn" };
  const char *z = extLast(e);
  for(size_t i = 0; i < sizeof azInt / sizeof azInt[0]; i++){
    if( strcasecmp(z, azInt[i]) == 0 ) return PAGEDB_INT;
  }
  for(size_t i = 0; i < sizeof azText / sizeof azText[0]; i++){
    if( strcasecmp(z, azText[i]) == 0 ) return PAGEDB_TEXT;
  }
  return PAGEDB_BYTES;
}

static int extIsJson(const char *e){
  return strcasecmp(extLast(e), "json") == 0 || strcasecmp(extLast(e), "jsn") == 0;
}

/* The field of extension E (which pass 1 saw). */
static int extField(Import *imp, const char *e){
  int lo = 0, hi = imp->nExt - 1;
  while( lo <= hi ){
    int mid = (lo + hi) / 2;
    int c = strcmp(imp->azExt[mid], e);
    if( c == 0 ) return imp->aExtField[mid];
    if( c < 0 ) lo = mid + 1; else hi = mid - 1;
  }
  return -1;
}

/* Pass 2: the next sample's members, read under the lock. */
/* The next group of a shard read by its plan: a sample, or PAGEDB_NOTFOUND
** when the shard has no more. */
static int planNext(Import *imp, TarPlan *p, Job *j, char *emsg, size_t nemsg){
  if( p->iGroup >= p->nGroup ) return PAGEDB_NOTFOUND;
  int64_t g = p->aOrder[p->iGroup++];
  for(int64_t i = p->aStart[g]; i < p->aStart[g + 1]; i++){
    TarRec *r = &p->a[i];
    int f = extField(imp, r->zExt);
    void *data;
    size_t n;
    if( f < 0 ){
      xfer_msg(emsg, nemsg, "%s: member \"%s\": an extension the first pass did not see",
             imp->azShard[imp->iShard], r->zName);
      return PAGEDB_CORRUPT;
    }
    int rc = tar_read_at(imp->tr, r->zName, r->off, r->size, &data, &n, emsg, nemsg);
    if( rc ) return rc;
    Put *q = jobPut(j, f, PAGEDB_BYTES);
    if( q == 0 ){ free(data); xfer_msg(emsg, nemsg, "out of memory"); return PAGEDB_NOMEM; }
    q->data = data;
    q->n = n;
    q->owned = 1;
    q->json = extIsJson(r->zExt);
    j->bytes += (int64_t)n;
  }
  const char *zKey = p->a[p->aStart[g]].zKey;
  Put *q = jobPut(j, imp->fKey, PAGEDB_TEXT);
  if( q == 0 || (q->data = strdup(zKey)) == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  q->n = strlen(zKey);
  q->owned = 1;
  return PAGEDB_OK;
}

static int tarNext(Import *imp, Job *j, char *emsg, size_t nemsg){
  char *zKey = 0;
  int rc = PAGEDB_OK;
  for(;;){
    if( imp->tr == 0 ){
      if( imp->iShard >= imp->nShard ) break;
      rc = tar_open(imp->azShard[imp->iShard], &imp->tr, emsg, nemsg);
      if( rc ) break;
    }
    TarPlan *plan = &imp->aPlan[imp->iShard];
    if( plan->unsorted ){
      rc = planNext(imp, plan, j, emsg, nemsg);
      if( rc != PAGEDB_NOTFOUND ) return rc;
      rc = PAGEDB_OK;
      tar_close(imp->tr);
      imp->tr = 0;
      imp->iShard++;
      continue;
    }
    if( imp->zPend == 0 ){
      TarMember m;
      rc = tar_next(imp->tr, &m, emsg, nemsg);
      if( rc == PAGEDB_NOTFOUND ){
        rc = PAGEDB_OK;
        tar_close(imp->tr);
        imp->tr = 0;
        imp->iShard++;
        if( zKey ) break;                  /* a sample ends with its shard */
        continue;
      }
      if( rc ) break;
      if( m.kind != TAR_FILE ) continue;   /* reported by pass 1 */
      char *zName;
      const char *why = tarCleanName(m.name, &zName);
      if( why == 0 && zName == 0 ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
      if( why || zName[0] == 0 ){
        free(zName);
        xfer_msg(emsg, nemsg, "%s: member \"%s\": changed since the first pass",
               imp->azShard[imp->iShard], m.name);
        rc = PAGEDB_CORRUPT;
        break;
      }
      imp->zPend = zName;
    }
    char *zMKey;
    const char *zExt;
    if( tarKey(imp->zPend, &zMKey, &zExt) ){ rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
    if( *zExt == 0 ){
      free(zMKey);
      free(imp->zPend);
      imp->zPend = 0;
      continue;
    }
    if( zKey && strcmp(zKey, zMKey) ){
      free(zMKey);
      break;                               /* the pending member starts the next sample */
    }
    int f = extField(imp, zExt);
    if( f < 0 ){
      free(zMKey);
      xfer_msg(emsg, nemsg, "%s: member \"%s\": an extension the first pass did not see",
             imp->azShard[imp->iShard], imp->zPend);
      rc = PAGEDB_CORRUPT;
      break;
    }
    if( zKey == 0 ) zKey = zMKey; else free(zMKey);
    void *data;
    size_t nData;
    rc = tar_read(imp->tr, &data, &nData, emsg, nemsg);
    if( rc ) break;
    Put *p = jobPut(j, f, PAGEDB_BYTES);
    if( p == 0 ){ free(data); rc = PAGEDB_NOMEM; xfer_msg(emsg, nemsg, "out of memory"); break; }
    p->data = data;
    p->owned = 1;
    p->n = nData;
    p->json = extIsJson(zExt);
    j->bytes += (int64_t)nData;
    free(imp->zPend);
    imp->zPend = 0;
  }
  if( rc == PAGEDB_OK && zKey == 0 ) return PAGEDB_NOTFOUND;
  if( rc ){ free(zKey); return rc; }
  Put *p = jobPut(j, imp->fKey, PAGEDB_TEXT);
  if( p == 0 ){ free(zKey); xfer_msg(emsg, nemsg, "out of memory"); return PAGEDB_NOMEM; }
  p->data = zKey;
  p->n = strlen(zKey);
  p->owned = 1;
  return PAGEDB_OK;
}

/* SOURCE as tar shards: a glob pattern, or one file. */
static int tarShards(Import *imp, char *emsg, size_t nemsg){
  const char *z = imp->zSource;
  if( strpbrk(z, "*?[") ){
    glob_t g;
    int r = glob(z, 0, 0, &g);
    if( r == GLOB_NOMATCH ){
      xfer_msg(emsg, nemsg, "no file matches the pattern");
      return PAGEDB_CANTOPEN_NOENT;
    }
    if( r ){
      xfer_msg(emsg, nemsg, "glob: %s", r == GLOB_NOSPACE ? "out of memory" : "read error");
      return r == GLOB_NOSPACE ? PAGEDB_NOMEM : PAGEDB_IOERR;
    }
    int rc = PAGEDB_OK;
    imp->azShard = calloc(g.gl_pathc, sizeof(char *));
    if( imp->azShard == 0 ) rc = PAGEDB_NOMEM;
    for(size_t i = 0; rc == PAGEDB_OK && i < g.gl_pathc; i++){
      if( !isTarName(g.gl_pathv[i]) ){
        if( imp->o->err ) fprintf(imp->o->err, "%s: not .tar, .tar.gz or .tgz: skipped\n", g.gl_pathv[i]);
        continue;
      }
      if( (imp->azShard[imp->nShard] = strdup(g.gl_pathv[i])) == 0 ) rc = PAGEDB_NOMEM;
      else imp->nShard++;
    }
    globfree(&g);
    if( rc ){ xfer_msg(emsg, nemsg, "out of memory"); return rc; }
    if( imp->nShard == 0 ){
      xfer_msg(emsg, nemsg, "no .tar, .tar.gz or .tgz file matches the pattern");
      return PAGEDB_CANTOPEN_NOENT;
    }
    return PAGEDB_OK;
  }
  imp->azShard = calloc(1, sizeof(char *));
  if( imp->azShard == 0 || (imp->azShard[0] = strdup(z)) == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    return PAGEDB_NOMEM;
  }
  imp->nShard = 1;
  return PAGEDB_OK;
}

int importTar(Import *imp, int64_t *n, char *emsg, size_t nemsg){
  int rc = tarShards(imp, emsg, nemsg);
  if( rc ) return rc;
  rc = tarScan(imp, emsg, nemsg);
  if( rc ) return rc;
  if( imp->nExt == 0 ){
    xfer_msg(emsg, nemsg, "no member with an extension in %s%s", imp->azShard[0],
           imp->nShard > 1 ? " and the other shards" : "");
    return PAGEDB_NOTFOUND;
  }
  typedef char FieldName[PAGEDB_MAX_NAME + 2];
  char **azName = malloc((size_t)(imp->nExt + 1) * sizeof(char *));
  FieldName *aName = malloc((size_t)(imp->nExt + 1) * sizeof(FieldName));
  int *aType = malloc((size_t)(imp->nExt + 1) * sizeof(int));
  XferTensor *aTensor = calloc((size_t)(imp->nExt + 1), sizeof(XferTensor));
  int *aIdx = malloc((size_t)(imp->nExt + 1) * sizeof(int));
  imp->aExtField = malloc((size_t)imp->nExt * sizeof(int));
  if( azName == 0 || aName == 0 || aType == 0 || aTensor == 0 || aIdx == 0 || imp->aExtField == 0 ){
    xfer_msg(emsg, nemsg, "out of memory");
    rc = PAGEDB_NOMEM;
  }else{
    azName[0] = "__key__";
    aType[0] = PAGEDB_TEXT;
    for(int i = 0; i < imp->nExt; i++){
      extFieldName(imp->azExt[i], aName[i + 1]);
      azName[i + 1] = aName[i + 1];
      aType[i + 1] = extType(imp->azExt[i]);
      const XferTensor *t = npyTensor(imp, imp->azExt[i]);
      if( t ){
        aType[i + 1] = PAGEDB_TENSOR;
        aTensor[i + 1] = *t;
      }
    }
    /* .id and .id_ would both be field id_ (pass 1 made the extensions
    ** unique, case aside). */
    for(int i = 0; rc == PAGEDB_OK && i < imp->nExt; i++){
      for(int k = 0; k < imp->nExt; k++){
        if( k != i && strcasecmp(azName[i + 1], imp->azExt[k]) == 0 ){
          xfer_msg(emsg, nemsg, "extensions \"%s\" and \"%s\" would both be field \"%s\" (a member "
                   ".%s is field %s, since %s is a column of table sample): rename one of them",
                   imp->azExt[i], imp->azExt[k], azName[i + 1], imp->azExt[i], azName[i + 1],
                   imp->azExt[i]);
          rc = PAGEDB_MISMATCH;
          break;
        }
      }
    }
    if( rc == PAGEDB_OK ) rc = impFields(imp, imp->nExt + 1, azName, aType, aTensor, aIdx, emsg, nemsg);
    if( rc == PAGEDB_OK ){
      imp->fKey = aIdx[0];
      for(int i = 0; i < imp->nExt; i++) imp->aExtField[i] = aIdx[i + 1];
    }
  }
  free(azName);
  free(aName);
  free(aType);
  free(aTensor);
  free(aIdx);
  if( rc ) return rc;
  imp->xNext = tarNext;
  imp->xLoad = 0;
  return impRun(imp, n);
}

void importTarFree(Import *imp){
  for(int i = 0; imp->aPlan && i < imp->nShard; i++) planFree(&imp->aPlan[i]);
  free(imp->aPlan);
  for(int i = 0; i < imp->nShard; i++) free(imp->azShard[i]);
  free(imp->azShard);
  tar_close(imp->tr);
  free(imp->zPend);
  for(int i = 0; i < imp->nExt; i++) free(imp->azExt[i]);
  free(imp->azExt);
  free(imp->aExtField);
  for(int i = 0; i < imp->nNpy; i++) free(imp->aNpy[i].zExt);
  free(imp->aNpy);
}
