/*
** json.c -- a JSON validator (RFC 8259) for .import's .json members.
**
** A recursive-descent checker over a byte range: no value is built, no
** memory allocated.  Nesting is limited to JSON_MAX_DEPTH so that a hostile
** file cannot exhaust the stack; strings must be valid UTF-8 with valid
** escapes; numbers follow the RFC's grammar.  One value, surrounded by
** optional whitespace, is a document.
*/
#include "import.h"

#include <string.h>

#define JSON_MAX_DEPTH 512

typedef struct JsonScan {
  const unsigned char *z;
  size_t n, i;
  const char *zErr;     /* what is wrong at i */
} JsonScan;

static void jsonWs(JsonScan *s){
  while( s->i < s->n && (s->z[s->i] == ' ' || s->z[s->i] == '\t' || s->z[s->i] == '\n'
                         || s->z[s->i] == '\r') ) s->i++;
}

static int jsonFail(JsonScan *s, const char *zErr){
  if( s->zErr == 0 ) s->zErr = zErr;
  return 1;
}

static int isHex(unsigned char c){
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* One UTF-8 character at s->i (not ASCII): its length, 0 if invalid. */
static size_t utf8Len(const unsigned char *z, size_t n){
  unsigned c = z[0];
  size_t len;
  unsigned min;
  if( c >= 0xc2 && c <= 0xdf ){ len = 2; min = 0x80; }
  else if( c >= 0xe0 && c <= 0xef ){ len = 3; min = 0x800; }
  else if( c >= 0xf0 && c <= 0xf4 ){ len = 4; min = 0x10000; }
  else return 0;
  if( n < len ) return 0;
  unsigned v = c & (0x7f >> len);
  for(size_t k = 1; k < len; k++){
    if( (z[k] & 0xc0) != 0x80 ) return 0;
    v = (v << 6) | (z[k] & 0x3f);
  }
  if( v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) ) return 0;
  return len;
}

static int jsonString(JsonScan *s){
  s->i++;                                   /* the opening quote */
  while( s->i < s->n ){
    unsigned char c = s->z[s->i];
    if( c == '"' ){ s->i++; return 0; }
    if( c < 0x20 ) return jsonFail(s, "a control character in a string");
    if( c == '\\' ){
      if( s->i + 1 >= s->n ) break;
      unsigned char e = s->z[s->i + 1];
      if( e == 'u' ){
        if( s->i + 6 > s->n ) break;
        for(int k = 2; k < 6; k++){
          if( !isHex(s->z[s->i + k]) ) return jsonFail(s, "a bad \\u escape");
        }
        s->i += 6;
      }else if( strchr("\"\\/bfnrt", e) && e ){
        s->i += 2;
      }else{
        return jsonFail(s, "a bad escape in a string");
      }
    }else if( c < 0x80 ){
      s->i++;
    }else{
      size_t len = utf8Len(s->z + s->i, s->n - s->i);
      if( len == 0 ) return jsonFail(s, "invalid UTF-8 in a string");
      s->i += len;
    }
  }
  return jsonFail(s, "an unterminated string");
}

static int digits(JsonScan *s){
  size_t i0 = s->i;
  while( s->i < s->n && s->z[s->i] >= '0' && s->z[s->i] <= '9' ) s->i++;
  return s->i > i0;
}

static int jsonNumber(JsonScan *s){
  if( s->z[s->i] == '-' ) s->i++;
  if( s->i < s->n && s->z[s->i] == '0' ) s->i++;
  else if( !digits(s) ) return jsonFail(s, "a bad number");
  if( s->i < s->n && s->z[s->i] == '.' ){
    s->i++;
    if( !digits(s) ) return jsonFail(s, "a bad number (no digit after '.')");
  }
  if( s->i < s->n && (s->z[s->i] == 'e' || s->z[s->i] == 'E') ){
    s->i++;
    if( s->i < s->n && (s->z[s->i] == '+' || s->z[s->i] == '-') ) s->i++;
    if( !digits(s) ) return jsonFail(s, "a bad number (no digit in the exponent)");
  }
  return 0;
}

static int jsonValue(JsonScan *s, int depth){
  jsonWs(s);
  if( s->i >= s->n ) return jsonFail(s, "a value is missing");
  unsigned char c = s->z[s->i];
  if( c == '{' || c == '[' ){
    if( depth >= JSON_MAX_DEPTH ) return jsonFail(s, "nested deeper than 512 levels");
    unsigned char close = c == '{' ? '}' : ']';
    s->i++;
    jsonWs(s);
    if( s->i < s->n && s->z[s->i] == close ){ s->i++; return 0; }
    for(;;){
      if( c == '{' ){
        jsonWs(s);
        if( s->i >= s->n || s->z[s->i] != '"' ) return jsonFail(s, "an object key must be a string");
        if( jsonString(s) ) return 1;
        jsonWs(s);
        if( s->i >= s->n || s->z[s->i] != ':' ) return jsonFail(s, "':' expected after an object key");
        s->i++;
      }
      if( jsonValue(s, depth + 1) ) return 1;
      jsonWs(s);
      if( s->i >= s->n ) return jsonFail(s, c == '{' ? "an unterminated object" : "an unterminated array");
      if( s->z[s->i] == close ){ s->i++; return 0; }
      if( s->z[s->i] != ',' ) return jsonFail(s, c == '{' ? "',' or '}' expected" : "',' or ']' expected");
      s->i++;
    }
  }
  if( c == '"' ) return jsonString(s);
  if( c == '-' || (c >= '0' && c <= '9') ) return jsonNumber(s);
  static const char *azWord[] = { "true", "false", "null" };
  for(int k = 0; k < 3; k++){
    size_t len = strlen(azWord[k]);
    if( s->n - s->i >= len && memcmp(s->z + s->i, azWord[k], len) == 0 ){
      s->i += len;
      return 0;
    }
  }
  return jsonFail(s, "not a JSON value");
}

const char *jsonCheck(const void *data, size_t n, size_t *pOff){
  JsonScan s = { data, n, 0, 0 };
  if( jsonValue(&s, 0) == 0 ){
    jsonWs(&s);
    if( s.i < s.n ) jsonFail(&s, "text after the value");
  }
  *pOff = s.i;
  return s.zErr;
}
