/* A small JSON reader (see json.h). */
#include "runner/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *s;
  size_t len, pos;
  const char *what;
  tt_error *err;
  int depth;
} parser;

static void fail(parser *p, const char *msg) {
  if (!p->err)
    p->err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: malformed JSON at byte %zu: %s", p->what,
                          p->pos, msg);
}

static void skip_ws(parser *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r' ||
                             p->s[p->pos] == '\t'))
    p->pos++;
}

static bool literal(parser *p, const char *word) {
  size_t n = strlen(word);
  if (p->len - p->pos >= n && memcmp(p->s + p->pos, word, n) == 0) {
    p->pos += n;
    return true;
  }
  return false;
}

static int hex4(parser *p) {
  if (p->len - p->pos < 4) return -1;
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p->s[p->pos + (size_t)i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else return -1;
  }
  p->pos += 4;
  return v;
}

static char *parse_string(parser *p) {
  p->pos++; /* the opening quote */
  size_t cap = 16, n = 0;
  char *out = malloc(cap);
  if (!out) {
    fail(p, "out of memory");
    return NULL;
  }
  while (p->pos < p->len && p->s[p->pos] != '"') {
    if (n + 5 > cap) {
      char *grown = realloc(out, cap *= 2);
      if (!grown) {
        free(out);
        fail(p, "out of memory");
        return NULL;
      }
      out = grown;
    }
    unsigned char c = (unsigned char)p->s[p->pos++];
    if (c < 0x20) {
      free(out);
      fail(p, "control character in a string");
      return NULL;
    }
    if (c != '\\') {
      out[n++] = (char)c;
      continue;
    }
    if (p->pos >= p->len) break;
    char e = p->s[p->pos++];
    switch (e) {
      case '"': case '\\': case '/': out[n++] = e; break;
      case 'b': out[n++] = '\b'; break;
      case 'f': out[n++] = '\f'; break;
      case 'n': out[n++] = '\n'; break;
      case 'r': out[n++] = '\r'; break;
      case 't': out[n++] = '\t'; break;
      case 'u': {
        int v = hex4(p);
        if (v < 0) {
          free(out);
          fail(p, "bad \\u escape");
          return NULL;
        }
        if (v < 0x80) {
          out[n++] = (char)v;
        } else if (v < 0x800) {
          out[n++] = (char)(0xC0 | (v >> 6));
          out[n++] = (char)(0x80 | (v & 0x3F));
        } else { /* surrogates pass through as their own code units */
          out[n++] = (char)(0xE0 | (v >> 12));
          out[n++] = (char)(0x80 | ((v >> 6) & 0x3F));
          out[n++] = (char)(0x80 | (v & 0x3F));
        }
        break;
      }
      default:
        free(out);
        fail(p, "bad escape");
        return NULL;
    }
  }
  if (p->pos >= p->len) {
    free(out);
    fail(p, "unterminated string");
    return NULL;
  }
  p->pos++; /* the closing quote */
  out[n] = 0;
  return out;
}

static void parse_value(parser *p, ttj_node *n);

static void parse_number(parser *p, ttj_node *n) {
  size_t start = p->pos;
  bool frac = false;
  if (p->pos < p->len && p->s[p->pos] == '-') p->pos++;
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c >= '0' && c <= '9') p->pos++;
    else if (c == '.' || c == 'e' || c == 'E' || c == '+' || (c == '-' && p->pos > start)) {
      frac = true;
      p->pos++;
    } else break;
  }
  char buf[64];
  size_t len = p->pos - start;
  if (len == 0 || len >= sizeof buf) {
    fail(p, "bad number");
    return;
  }
  memcpy(buf, p->s + start, len);
  buf[len] = 0;
  char *end = NULL;
  n->kind = TTJ_NUMBER;
  errno = 0;
  n->number = strtod(buf, &end);
  if (*end) {
    fail(p, "bad number");
    return;
  }
  if (!frac) {
    errno = 0;
    n->integer = strtoll(buf, &end, 10);
    n->is_int = errno == 0 && !*end;
  }
}

static bool push(parser *p, ttj_node *n, int *cap) {
  if (n->n_items == *cap) {
    int c = *cap ? *cap * 2 : 4;
    ttj_node *grown = realloc(n->items, sizeof *grown * (size_t)c);
    if (!grown) {
      fail(p, "out of memory");
      return false;
    }
    n->items = grown;
    *cap = c;
  }
  memset(&n->items[n->n_items++], 0, sizeof n->items[0]);
  return true;
}

static void parse_container(parser *p, ttj_node *n, bool object) {
  n->kind = object ? TTJ_OBJECT : TTJ_ARRAY;
  char close = object ? '}' : ']';
  int cap = 0;
  p->pos++;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    p->pos++;
    return;
  }
  for (;;) {
    if (!push(p, n, &cap)) return;
    ttj_node *item = &n->items[n->n_items - 1];
    if (object) {
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != '"') return fail(p, "expected a member name");
      item->key = parse_string(p);
      if (p->err) return;
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':') return fail(p, "expected ':'");
      p->pos++;
    }
    parse_value(p, item);
    if (p->err) return;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == close) {
      p->pos++;
      return;
    }
    return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static void parse_value(parser *p, ttj_node *n) {
  skip_ws(p);
  if (p->pos >= p->len) return fail(p, "unexpected end");
  if (++p->depth > 64) return fail(p, "nested too deeply");
  char c = p->s[p->pos];
  if (c == '{' || c == '[') parse_container(p, n, c == '{');
  else if (c == '"') {
    n->kind = TTJ_STRING;
    n->string = parse_string(p);
  } else if (literal(p, "true")) {
    n->kind = TTJ_BOOL;
    n->boolean = true;
  } else if (literal(p, "false")) {
    n->kind = TTJ_BOOL;
  } else if (literal(p, "null")) {
    n->kind = TTJ_NULL;
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    parse_number(p, n);
  } else {
    fail(p, "unexpected character");
  }
  p->depth--;
}

static void free_node(ttj_node *n) {
  for (int i = 0; i < n->n_items; i++) free_node(&n->items[i]);
  free(n->items);
  free(n->string);
  free(n->key);
}

void ttj_free(ttj_node *n) {
  if (!n) return;
  free_node(n);
  free(n);
}

tt_error *ttj_parse(const char *text, size_t len, const char *what, ttj_node **out) {
  *out = NULL;
  parser p = {text, len, 0, what, NULL, 0};
  ttj_node *root = calloc(1, sizeof *root);
  if (!root) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  parse_value(&p, root);
  skip_ws(&p);
  if (!p.err && p.pos != len) fail(&p, "trailing characters");
  if (p.err) {
    ttj_free(root);
    return p.err;
  }
  *out = root;
  return NULL;
}

const ttj_node *ttj_get(const ttj_node *n, const char *key) {
  if (!n || n->kind != TTJ_OBJECT) return NULL;
  for (int i = 0; i < n->n_items; i++)
    if (n->items[i].key && strcmp(n->items[i].key, key) == 0) return &n->items[i];
  return NULL;
}

const ttj_node *ttj_at(const ttj_node *n, int i) {
  if (!n || n->kind != TTJ_ARRAY || i < 0 || i >= n->n_items) return NULL;
  return &n->items[i];
}

const char *ttj_str(const ttj_node *n) { return n && n->kind == TTJ_STRING ? n->string : NULL; }

bool ttj_int(const ttj_node *n, int64_t *v) {
  if (!n || n->kind != TTJ_NUMBER || !n->is_int) return false;
  *v = n->integer;
  return true;
}
