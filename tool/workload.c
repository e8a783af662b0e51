/*
** workload.c -- the benchmark workloads of shared/WORKLOADS.md, exactly.
**
** Streams.  mix64 is the splitmix64 finaliser, next(s) the splitmix64 step.
** Sample i of a workload draws from three independent streams,
** state(i, salt) = mix64(seed ^ wid<<56 ^ salt<<48) + i * GOLDEN, with salt 1
** for its size, 2 for its label and 3 for where its bytes start in the pool.
** The mix64(...) part does not depend on i and is computed once (base[]).
**
** The pool.  8 MiB built once by wl_parse().  For the incompressible
** workloads it is successive next(s) values, little-endian, from
** s = seed ^ 0xb17e5.  For W-small it is English-like text (textPool below),
** drawn from the same stream s.  W-emb has none: its values (wl_emb) are
** computed from state(i, 3), three unit() draws a float.
**
** The text generator (the "reference generator" WORKLOADS.md asks us to
** name).  A fixed vocabulary of VOCAB_COMMON common English words followed by
** pseudo-words spelled from syllables (a fixed list, built with a fixed
** constant, not the seed), VOCAB_SIZE words in all.  Each word has NSUCC
** likely successors (also fixed).  A word is one of its predecessor's
** successors with probability P_BIGRAM percent, otherwise drawn with the
** Zipf-like weight 1 / (w + ZIPF_Q)^ZIPF_S of its rank w; the successors give
** the repeated phrases that LZ4HC finds and the fast level mostly misses.  Sentences are 4 to 22 words, start with a capital
** letter, take a comma after a word with probability 1/10 and end with '.',
** '?' (1/16) or '!' (1/32); paragraphs are 2 to 7 sentences and end with a
** newline.  The constants were tuned so that lz4 shrinks the pool about 1.3x
** with LZ4_compress_default and about 2x with LZ4HC level 9 (seed 42, lz4
** 1.9.4: 1.29x and 2.03x); `pagedb-bench --pool-ratio` measures it.
*/
#include "workload.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GOLDEN 0x9e3779b97f4a7c15ull

uint64_t wl_mix64(uint64_t z){
  z ^= z >> 30; z *= 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27; z *= 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z;
}

uint64_t wl_next(uint64_t *s){
  *s += GOLDEN;
  return wl_mix64(*s);
}

double wl_unit(uint64_t *s){
  return (double)((wl_next(s) >> 11) + 1) / 9007199254740992.0;  /* 2^53 */
}

uint64_t wl_state(const wl_t *w, int64_t i, int salt){
  return w->base[salt] + (uint64_t)i * GOLDEN;
}

/* ------------------------------------------------------------------ */
/* The text pool                                                       */
/* ------------------------------------------------------------------ */

static const char *const azCommon[] = {
  "the","of","and","to","a","in","is","it","you","that","he","was","for","on",
  "are","with","as","his","they","be","at","one","have","this","from","or",
  "had","by","not","word","but","what","some","we","can","out","other","were",
  "all","there","when","up","use","your","how","said","an","each","she",
  "which","do","their","time","if","will","way","about","many","then","them",
  "write","would","like","so","these","her","long","make","thing","see","him",
  "two","has","look","more","day","could","go","come","did","number","sound",
  "no","most","people","my","over","know","water","than","call","first","who",
  "may","down","side","been","now","find","any","new","work","part","take",
  "get","place","made","live","where","after","back","little","only","round",
  "man","year","came","show","every","good","me","give","our","under","name",
  "very","through","just","form","sentence","great","think","say","help",
  "low","line","differ","turn","cause","much","mean","before","move","right",
  "boy","old","too","same","tell","does","set","three","want","air","well",
  "also","play","small","end","put","home","read","hand","port","large",
  "spell","add","even","land","here","must","big","high","such","follow",
  "act","why","ask","men","change","went","light","kind","off","need","house",
  "picture","try","us","again","animal","point","mother","world","near",
  "build","self","earth","father","head","stand","own","page","should",
  "country","found","answer","school","grow","study","still","learn","plant",
  "cover","food","sun","four","between","state","keep","eye","never","last",
  "let","thought","city","tree","cross","farm","hard","start","might","story",
  "saw","far","sea","draw","left","late","run","while","press","close",
  "night","real","life","few","north","open","seem","together","next","white",
  "children","begin","got","walk","example","ease","paper","group","always",
  "music","those","both","mark","often","letter","until","mile","river",
  "car","feet","care","second","book","carry","took","science","eat","room",
  "friend","began","idea","fish","mountain","stop","once","base","hear",
  "horse","cut","sure","watch","color","face","wood","main","enough","plain",
  "girl","usual","young","ready","above","ever","red","list","though","feel",
  "talk","bird","soon","body","dog","family","direct","pose","leave","song",
  "measure","door","product","black","short","numeral","class","wind",
  "question","happen","complete","ship","area","half","rock","order","fire",
  "south","problem","piece","told","knew","pass","since","top","whole","king",
  "space","heard","best","hour","better","true","during","hundred","five",
  "remember","step","early","hold","west","ground","interest","reach","fast",
  "verb","sing","listen","six","table","travel","less","morning","ten",
  "simple","several","vowel","toward","war","lay","against","pattern","slow",
  "center","love","person","money","serve","appear","road","map","rain",
  "rule","govern","pull","cold","notice","voice","unit","power","town","fine",
  "certain","fly","fall","lead","cry","dark","machine","note","wait","plan",
  "figure","star","box","noun","field","rest","correct","able","pound","done",
  "beauty","drive","stood","contain","front","teach","week","final","gave",
  "green","oh","quick","develop","ocean","warm","free","minute","strong",
  "special","mind","behind","clear","tail","produce","fact","street","inch",
  "multiply","nothing","course","stay","wheel","full","force","blue","object",
  "decide","surface","deep","moon","island","foot","system","busy","test",
  "record","boat","common","gold","possible","plane","stead","dry","wonder",
  "laugh","thousand","ago","ran","check","game","shape","equate","hot","miss",
  "brought","heat","snow","tire","bring","yes","distant","fill","east",
  "paint","language","among"
};
#define VOCAB_COMMON ((int)(sizeof(azCommon) / sizeof(azCommon[0])))

static const char *const azSyl[] = {
  "ba","be","bi","bo","bu","ca","ce","ci","co","cu","da","de","di","do","du",
  "fa","fe","fi","fo","ga","ge","gi","go","ha","he","hi","ho","la","le","li",
  "lo","lu","ma","me","mi","mo","mu","na","ne","ni","no","pa","pe","pi","po",
  "ra","re","ri","ro","ru","sa","se","si","so","su","ta","te","ti","to","tu",
  "va","ve","vi","vo","wa","we","wi","ya","za","ter","ing","tion","ment",
  "ous","ble","ent","ant","ist","ly","er","est","al","an","on","in","en",
  "str","pr","tr","gr","ch","sh","th","st","nd","ck"
};
#define NSYL ((int)(sizeof(azSyl) / sizeof(azSyl[0])))

/* Tuning of the text pool (see the comment at the top). */
#define VOCAB_SIZE  20000    /* words in all: common ones, then pseudo-words */
#define ZIPF_S      1.0      /* exponent of the word weights */
#define ZIPF_Q      5.0      /* offset of the word weights */
#define NSUCC       16       /* likely successors of each word */
#define P_BIGRAM    60       /* percent of words drawn from the successors */
#define VOCAB_SEED  0x70636f76ull   /* fixed: the vocabulary never changes */

typedef struct TextGen {
  char *aWord;          /* VOCAB_SIZE words of up to 23 bytes, NUL-terminated */
  uint8_t *aLen;        /* length of each word */
  double *aCdf;         /* cumulative weights, aCdf[VOCAB_SIZE-1] == 1 */
  int *aSucc;           /* NSUCC likely successors of each word */
} TextGen;

#define WORD(g, k) (&(g)->aWord[(size_t)(k) * 24])

static int textWord(const TextGen *g, uint64_t *s);


static int textGenInit(TextGen *g){
  memset(g, 0, sizeof(*g));
  g->aWord = calloc(VOCAB_SIZE, 24);
  g->aLen = malloc(VOCAB_SIZE);
  g->aCdf = malloc(sizeof(double) * VOCAB_SIZE);
  g->aSucc = malloc(sizeof(int) * VOCAB_SIZE * NSUCC);
  if( !g->aWord || !g->aLen || !g->aCdf || !g->aSucc ) return -1;
  uint64_t s = VOCAB_SEED;
  for(int k = 0; k < VOCAB_SIZE; k++){
    char *z = WORD(g, k);
    if( k < VOCAB_COMMON ){
      strcpy(z, azCommon[k]);
    }else{
      int nSyl = 2 + (int)(wl_next(&s) % 3);
      z[0] = 0;
      for(int j = 0; j < nSyl; j++){
        const char *p = azSyl[wl_next(&s) % NSYL];
        if( strlen(z) + strlen(p) < 23 ) strcat(z, p);
      }
    }
    g->aLen[k] = (uint8_t)strlen(z);
  }
  double sum = 0;
  for(int k = 0; k < VOCAB_SIZE; k++){
    sum += 1.0 / pow(k + ZIPF_Q, ZIPF_S);
    g->aCdf[k] = sum;
  }
  for(int k = 0; k < VOCAB_SIZE; k++) g->aCdf[k] /= sum;
  g->aCdf[VOCAB_SIZE - 1] = 1.0;
  for(int k = 0; k < VOCAB_SIZE * NSUCC; k++) g->aSucc[k] = textWord(g, &s);
  return 0;
}

static void textGenFree(TextGen *g){
  free(g->aWord); free(g->aLen); free(g->aCdf); free(g->aSucc);
}

/* A word number drawn from the Zipf-like weights. */
static int textWord(const TextGen *g, uint64_t *s){
  double u = wl_unit(s);
  int lo = 0, hi = VOCAB_SIZE - 1;
  while( lo < hi ){
    int mid = (lo + hi) / 2;
    if( g->aCdf[mid] < u ) lo = mid + 1; else hi = mid;
  }
  return lo;
}


/* Fill POOL (WL_POOL_SIZE bytes) with text from stream S. */
static int textPool(uint8_t *pool, uint64_t s){
  TextGen g;
  if( textGenInit(&g) ){ textGenFree(&g); return -1; }
  size_t n = 0;
  int nSent = 0, nPara = 2 + (int)(wl_next(&s) % 6);
  int prev = 0;
  while( n < WL_POOL_SIZE ){
    int nWord = 4 + (int)(wl_next(&s) % 19);
    for(int j = 0; j < nWord && n < WL_POOL_SIZE; j++){
      int k;
      if( wl_next(&s) % 100 < P_BIGRAM ){
        k = g.aSucc[prev * NSUCC + (int)(wl_next(&s) % NSUCC)];
      }else{
        k = textWord(&g, &s);
      }
      prev = k;
      const char *z = WORD(&g, k);
      for(int c = 0; c < g.aLen[k] && n < WL_POOL_SIZE; c++){
        char ch = z[c];
        if( j == 0 && c == 0 ) ch = (char)toupper((unsigned char)ch);
        pool[n++] = (uint8_t)ch;
      }
      if( n >= WL_POOL_SIZE ) break;
      if( j == nWord - 1 ){
        uint64_t r = wl_next(&s) % 32;
        pool[n++] = r == 0 ? '!' : r < 3 ? '?' : '.';
      }else{
        if( wl_next(&s) % 10 == 0 ) pool[n++] = ',';
        if( n < WL_POOL_SIZE ) pool[n++] = ' ';
      }
    }
    if( n >= WL_POOL_SIZE ) break;
    if( ++nSent >= nPara ){
      pool[n++] = '\n';
      nSent = 0;
      nPara = 2 + (int)(wl_next(&s) % 6);
    }else{
      pool[n++] = ' ';
    }
  }
  textGenFree(&g);
  return 0;
}

/* ------------------------------------------------------------------ */
/* Parsing                                                             */
/* ------------------------------------------------------------------ */

int wl_parse(const char *spec, wl_t *w){
  return wl_parse_seed(spec, WL_DEFAULT_SEED, w);
}

int wl_parse_seed(const char *spec, uint64_t seed, wl_t *w){
  memset(w, 0, sizeof(*w));
  if( spec == 0 ) return -1;
  const char *colon = strchr(spec, ':');
  size_t nName = colon ? (size_t)(colon - spec) : strlen(spec);
  int64_t count = -1;
  if( colon ){
    char *end;
    errno = 0;
    long long v = strtoll(colon + 1, &end, 10);
    if( errno || end == colon + 1 || *end || v <= 0 ) return -1;
    count = v;
  }
  if( nName == 5 && strncasecmp(spec, "W-img", 5) == 0 ){
    strcpy(w->name, "W-img");
    w->wid = 1; w->count = 20000; w->field = "image";
    w->dist = WL_LOGNORMAL; w->median = 65536.0; w->sigma = 0.6;
    w->lo = 1024; w->hi = 1u << 20;
    w->poolKind = WL_POOL_RANDOM;
  }else if( nName == 7 && strncasecmp(spec, "W-small", 7) == 0 ){
    strcpy(w->name, "W-small");
    w->wid = 2; w->count = 1000000; w->field = "text"; w->fieldText = 1;
    w->dist = WL_UNIFORM; w->lo = 200; w->hi = 2048;
    w->poolKind = WL_POOL_TEXT;
  }else if( nName == 5 && strncasecmp(spec, "W-big", 5) == 0 ){
    strcpy(w->name, "W-big");
    w->wid = 3; w->count = 64; w->field = "clip";
    w->dist = WL_UNIFORM; w->lo = 8u << 20; w->hi = 48u << 20;
    w->poolKind = WL_POOL_RANDOM;
  }else if( nName == 5 && strncasecmp(spec, "W-emb", 5) == 0 ){
    strcpy(w->name, "W-emb");
    w->wid = 4; w->count = 1000000; w->field = "emb";
    w->dist = WL_UNIFORM; w->lo = w->hi = 4 * WL_EMB_DIM;   /* fixed */
    w->poolKind = WL_POOL_NONE;
  }else if( nName == 8 && strncasecmp(spec, "W-tokens", 8) == 0 ){
    /* Sizes are in tokens (wl_size), the bytes wl_tokens' (the pool is
    ** made but unused). */
    strcpy(w->name, "W-tokens");
    w->wid = 5; w->count = 360000; w->field = "tokens"; w->tokens = 1;
    w->dist = WL_LOGNORMAL; w->median = 1000.0; w->sigma = 0.8;
    w->lo = 16; w->hi = 32768;
    w->poolKind = WL_POOL_RANDOM;
  }else{
    return -1;
  }
  if( count > 0 ) w->count = count;
  w->seed = seed;
  for(int salt = 1; salt <= 3; salt++){
    w->base[salt] = wl_mix64(seed ^ ((uint64_t)w->wid << 56)
                                  ^ ((uint64_t)salt << 48));
  }
  if( w->poolKind == WL_POOL_NONE ) return 0;
  w->pool = malloc(WL_POOL_SIZE);
  if( w->pool == 0 ) return -2;
  uint64_t s = seed ^ 0xb17e5;
  if( w->poolKind == WL_POOL_TEXT ){
    if( textPool(w->pool, s) ){ wl_free(w); return -2; }
  }else{
    for(size_t k = 0; k < WL_POOL_SIZE; k += 8){
      uint64_t v = wl_next(&s);
      for(int b = 0; b < 8; b++) w->pool[k + b] = (uint8_t)(v >> (8 * b));
    }
  }
  return 0;
}

void wl_free(wl_t *w){
  if( w ){
    free(w->pool);
    w->pool = 0;
  }
}

/* ------------------------------------------------------------------ */
/* Samples                                                             */
/* ------------------------------------------------------------------ */

uint64_t wl_size(const wl_t *w, int64_t i){
  uint64_t s = wl_state(w, i, 1);
  double v;
  if( w->dist == WL_LOGNORMAL ){
    double u1 = wl_unit(&s);
    double u2 = wl_unit(&s);
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
    v = w->median * exp(w->sigma * z);
  }else{
    v = (double)(w->lo + wl_next(&s) % (w->hi - w->lo + 1));
  }
  long long r = llround(v);
  if( r < (long long)w->lo ) r = (long long)w->lo;
  if( r > (long long)w->hi ) r = (long long)w->hi;
  return (uint64_t)r;
}

int64_t wl_label(const wl_t *w, int64_t i){
  uint64_t s = wl_state(w, i, 2);
  return (int64_t)(wl_next(&s) % 1000);
}

uint64_t wl_max_size(const wl_t *w){
  return w->hi;
}

/* The header of sample I of length LEN: I then LEN, little-endian. */
static void sampleHeader(int64_t i, size_t len, uint8_t hdr[16]){
  for(int b = 0; b < 8; b++){
    hdr[b] = (uint8_t)((uint64_t)i >> (8 * b));
    hdr[8 + b] = (uint8_t)((uint64_t)len >> (8 * b));
  }
}

static size_t poolStart(const wl_t *w, int64_t i){
  uint64_t s = wl_state(w, i, 3);
  return (size_t)(wl_next(&s) & (WL_POOL_SIZE - 1));
}

void wl_emb(const wl_t *w, int64_t i, float *out){
  uint64_t s = wl_state(w, i, 3);
  for(int k = 0; k < WL_EMB_DIM; k++){
    double a = wl_unit(&s);
    a += wl_unit(&s);
    a += wl_unit(&s);
    out[k] = (float)(a - 1.5);
  }
}

/* W-emb's bytes of sample I: the floats little-endian, cut to LEN. */
static void embBytes(const wl_t *w, int64_t i, uint8_t *buf, size_t len){
  float v[WL_EMB_DIM];
  wl_emb(w, i, v);
  for(size_t k = 0; k < len && k < sizeof v; k++){
    uint32_t u;
    memcpy(&u, &v[k / 4], 4);
    buf[k] = (uint8_t)(u >> (8 * (k % 4)));
  }
}

void wl_fill(const wl_t *w, int64_t i, uint8_t *buf, size_t len){
  if( w->poolKind == WL_POOL_NONE ){
    embBytes(w, i, buf, len);
    return;
  }
  uint8_t hdr[16];
  sampleHeader(i, len, hdr);
  size_t h = len < 16 ? len : 16;
  memcpy(buf, hdr, h);
  size_t off = poolStart(w, i);
  for(size_t n = h; n < len; ){
    size_t k = WL_POOL_SIZE - off;
    if( k > len - n ) k = len - n;
    memcpy(buf + n, w->pool + off, k);
    n += k;
    off = 0;
  }
}

int wl_check(const wl_t *w, int64_t i, const uint8_t *buf, size_t len){
  if( len != wl_size(w, i) ) return 1;
  if( w->poolKind == WL_POOL_NONE ){
    uint8_t e[4 * WL_EMB_DIM];
    embBytes(w, i, e, sizeof e);
    return memcmp(buf, e, len) != 0;
  }
  uint8_t hdr[16];
  sampleHeader(i, len, hdr);
  size_t h = len < 16 ? len : 16;
  if( memcmp(buf, hdr, h) ) return 1;
  size_t off = poolStart(w, i);
  for(size_t n = h; n < len; ){
    size_t k = WL_POOL_SIZE - off;
    if( k > len - n ) k = len - n;
    if( memcmp(buf + n, w->pool + off, k) ) return 1;
    n += k;
    off = 0;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* W-tokens                                                            */
/* ------------------------------------------------------------------ */

void wl_tokens(const wl_t *w, int64_t i, uint16_t *out, size_t n){
  uint64_t s = wl_state(w, i, 3);
  for(size_t j = 0; j < n; j++) out[j] = (uint16_t)(wl_next(&s) % WL_VOCAB);
}
