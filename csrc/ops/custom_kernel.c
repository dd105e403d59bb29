/* Custom kernels: the registry of user StableHLO functions and the one
 * lowering they share (contract in custom_kernel.h; user guide in
 * docs/custom-kernels.md).
 *
 * The text is handled as text, with a small scanner that knows strings and
 * `//` comments: it strips a `module { }` wrapper (keeping line numbers),
 * finds the entry `func.func` and reads its signature, replaces `${NAME}`
 * symbols, and prefixes every `@symbol` so that two kernels, or two
 * instantiations of one, never collide in a module (and makes every
 * function private). The plugin parses the rest: a malformed body is its
 * diagnostic, raised at registration, where the Python side compiles the
 * kernel once on example shapes (tt_custom_kernel_module). */
#include "ops/custom_kernel.h"

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blake2b.h"

/* ------------------------------------------------------------- text */

typedef struct {
  char *data;
  size_t len, cap;
} sbuf;

static void sb_putn(sbuf *s, const char *p, size_t n) {
  if (s->len + n + 1 > s->cap) {
    size_t cap = s->cap ? s->cap : 256;
    while (cap < s->len + n + 1) cap *= 2;
    char *d = realloc(s->data, cap);
    if (!d) abort(); /* host OOM building text: unrecoverable, as in the builder */
    s->data = d;
    s->cap = cap;
  }
  memcpy(s->data + s->len, p, n);
  s->len += n;
  s->data[s->len] = 0;
}

static void sb_puts(sbuf *s, const char *p) { sb_putn(s, p, strlen(p)); }

static bool ident_char(char ch) {
  return isalnum((unsigned char)ch) || ch == '_' || ch == '$' || ch == '.' || ch == '-';
}

/* Length of the string literal or `//` comment starting at p (0 if none). */
static size_t skip_literal(const char *p) {
  if (p[0] == '"') {
    size_t i = 1;
    while (p[i] && p[i] != '"') i += p[i] == '\\' && p[i + 1] ? 2 : 1;
    return p[i] ? i + 1 : i;
  }
  if (p[0] == '/' && p[1] == '/') {
    size_t i = 2;
    while (p[i] && p[i] != '\n') i++;
    return i;
  }
  return 0;
}

static const char *skip_ws(const char *p) {
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    if (p[0] == '/' && p[1] == '/') p += skip_literal(p);
    else return p;
  }
}

/* p at an opening bracket `open`: the position after its match (strings
 * skipped), or NULL when unbalanced. */
static const char *skip_balanced(const char *p, char open, char close) {
  int depth = 0;
  while (*p) {
    size_t lit = skip_literal(p);
    if (lit) {
      p += lit;
      continue;
    }
    if (*p == open) depth++;
    else if (*p == close && --depth == 0) return p + 1;
    p++;
  }
  return NULL;
}

static bool starts_word(const char *p, const char *word) {
  size_t n = strlen(word);
  return strncmp(p, word, n) == 0 && !ident_char(p[n]);
}

static void blank(char *from, const char *to) {
  for (; from < to; from++)
    if (*from != '\n') *from = ' ';
}

/* A copy of text without a `module ... {` ... `}` wrapper, line numbers kept. */
static tt_error *strip_module(const char *name, const char *text, char **out) {
  char *t = strdup(text);
  if (!t) abort();
  char *p = (char *)skip_ws(t);
  if (starts_word(p, "module")) {
    const char *q = skip_ws(p + 6);
    if (*q == '@') {
      q++;
      while (ident_char(*q)) q++;
      q = skip_ws(q);
    }
    if (starts_word(q, "attributes")) {
      q = skip_ws(q + 10);
      q = *q == '{' ? skip_balanced(q, '{', '}') : NULL;
      if (q) q = skip_ws(q);
    }
    const char *end = q && *q == '{' ? skip_balanced(q, '{', '}') : NULL;
    if (!end || *skip_ws(end)) {
      free(t);
      return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                          "custom kernel %s: the text's `module` is not one balanced `{ }` block",
                          name);
    }
    blank(p, q + 1);
    blank((char *)end - 1, end);
  }
  *out = t;
  return NULL;
}

/* ------------------------------------------------------------- types */

#define TOK 64

typedef struct {
  int ndim;
  char dims[TT_MAX_DIMS][TOK]; /* "8" or "${D}" */
  char elem[TOK];              /* "f32" or "${T}" */
} type_text;

typedef struct {
  char entry[TOK];
  int n_args, n_results;
  type_text args[TT_CK_MAX_ARGS];
  type_text results[TT_CK_MAX_RESULTS];
  bool templated;
} signature;

bool tt_custom_kernel_dtype(const char *name, tt_dtype *out) {
  for (int d = 0; d < TT_DTYPE_COUNT; d++)
    if (strcmp(tt_dtype_mlir((tt_dtype)d), name) == 0) {
      *out = (tt_dtype)d;
      return true;
    }
  return false;
}

/* Copies a token of n chars into dst (TOK); false if too long. */
static bool copy_tok(char *dst, const char *p, size_t n) {
  if (n == 0 || n >= TOK) return false;
  memcpy(dst, p, n);
  dst[n] = 0;
  return true;
}

/* Parses `tensor<...>` at *pp. */
static tt_error *parse_type(const char *name, const char **pp, type_text *t, bool *templated) {
  const char *p = *pp;
  memset(t, 0, sizeof *t);
  if (strncmp(p, "tensor<", 7) != 0) {
    int n = 0;
    while (p[n] && !isspace((unsigned char)p[n]) && p[n] != ',' && p[n] != ')' && n < 40) n++;
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "custom kernel %s: the entry's arguments and results must be ranked "
                        "tensor types, found `%.*s`", name, n, p);
  }
  p += 7;
  for (;;) {
    const char *s = p;
    if (*p == '?')
      return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                          "custom kernel %s: dynamic dimensions (`?`) are not supported; name "
                          "the dimension with a symbol such as ${N}", name);
    if (p[0] == '$' && p[1] == '{') {
      while (*p && *p != '}') p++;
      if (*p == '}') p++;
      *templated = true;
    } else if (isdigit((unsigned char)*p)) {
      while (isdigit((unsigned char)*p)) p++;
    } else {
      break; /* the element type */
    }
    if (*p != 'x') { /* a symbol standing for the element type */
      p = s;
      break;
    }
    if (t->ndim == TT_MAX_DIMS || !copy_tok(t->dims[t->ndim], s, (size_t)(p - s)))
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: a tensor type of more "
                          "than %d dimensions, or a symbol too long", name, TT_MAX_DIMS);
    t->ndim++;
    p++; /* the 'x' */
  }
  const char *s = p;
  int depth = 0;
  while (*p && (*p != '>' || depth)) {
    if (*p == '<') depth++;
    if (*p == '>') depth--;
    if (*p == ',' && !depth)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                          "custom kernel %s: tensor types with an encoding are not supported", name);
    p++;
  }
  if (*p != '>' || !copy_tok(t->elem, s, (size_t)(p - s)))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: unreadable tensor type", name);
  if (t->elem[0] == '$') *templated = true;
  *pp = p + 1;
  return NULL;
}

/* Skips an attribute dictionary `{...}` at p, if any. */
static const char *skip_attrs(const char *p) {
  p = skip_ws(p);
  if (*p != '{') return p;
  const char *e = skip_balanced(p, '{', '}');
  return e ? skip_ws(e) : p + strlen(p);
}

/* Finds the entry function in t (module stripped) and reads its signature;
 * *sig_at is set to the entry's '@'. */
static tt_error *parse_signature(const char *name, const char *t, signature *sig,
                                 const char **sig_at) {
  memset(sig, 0, sizeof *sig);
  const char *entry = NULL, *first = NULL;
  for (const char *p = t; *p;) {
    size_t lit = skip_literal(p);
    if (lit) {
      p += lit;
      continue;
    }
    if (starts_word(p, "func.func") && (p == t || !ident_char(p[-1]))) {
      const char *q = skip_ws(p + 9);
      if (starts_word(q, "public") || starts_word(q, "private") || starts_word(q, "nested"))
        q = skip_ws(q + (q[1] == 'u' ? 6 : q[1] == 'r' ? 7 : 6));
      if (*q == '@') {
        if (!first) first = q;
        if (starts_word(q + 1, "main")) entry = q;
      }
      p = q;
      continue;
    }
    p++;
  }
  if (!entry) entry = first;
  if (!entry)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "custom kernel %s: the text defines no function (expected "
                        "`func.func @main(%%x: tensor<...>) -> tensor<...> { ... }` in MLIR's "
                        "pretty syntax)", name);
  *sig_at = entry;
  const char *p = entry + 1;
  const char *s = p;
  while (ident_char(*p)) p++;
  if (!copy_tok(sig->entry, s, (size_t)(p - s)))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: entry name too long", name);
  p = skip_ws(p);
  if (*p != '(')
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: @%s has no argument list",
                        name, sig->entry);
  p = skip_ws(p + 1);
  while (*p != ')') {
    if (*p != '%')
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: unreadable argument "
                          "list of @%s", name, sig->entry);
    while (*p && *p != ':') p++;
    if (!*p || sig->n_args == TT_CK_MAX_ARGS)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: unreadable argument "
                          "list of @%s (at most %d arguments)", name, sig->entry, TT_CK_MAX_ARGS);
    p = skip_ws(p + 1);
    TT_TRY(parse_type(name, &p, &sig->args[sig->n_args++], &sig->templated));
    p = skip_attrs(p);
    if (*p == ',') p = skip_ws(p + 1);
    else if (*p != ')')
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: unreadable argument "
                          "list of @%s", name, sig->entry);
  }
  p = skip_ws(p + 1);
  if (strncmp(p, "->", 2) != 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: @%s returns nothing",
                        name, sig->entry);
  p = skip_ws(p + 2);
  bool paren = *p == '(';
  if (paren) p = skip_ws(p + 1);
  do {
    if (*p == ',') p = skip_ws(p + 1);
    if (paren && *p == ')') break;
    if (sig->n_results == TT_CK_MAX_RESULTS)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: more than %d results",
                          name, TT_CK_MAX_RESULTS);
    TT_TRY(parse_type(name, &p, &sig->results[sig->n_results++], &sig->templated));
    p = paren ? skip_attrs(p) : skip_ws(p);
  } while (paren && *p == ',');
  if (sig->n_results == 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: @%s returns nothing",
                        name, sig->entry);
  return NULL;
}

/* ------------------------------------------------------------- binding */

typedef struct {
  int n;
  char names[2 * TT_CK_MAX_ARGS * (TT_MAX_DIMS + 1)][TOK];
  char values[2 * TT_CK_MAX_ARGS * (TT_MAX_DIMS + 1)][TOK];
} bindings;

static const char *bound(const bindings *bs, const char *sym) {
  for (int i = 0; i < bs->n; i++)
    if (strcmp(bs->names[i], sym) == 0) return bs->values[i];
  return NULL;
}

static void print_type(char *buf, size_t size, const type_text *t) {
  size_t off = (size_t)snprintf(buf, size, "tensor<");
  for (int i = 0; i < t->ndim && off < size; i++)
    off += (size_t)snprintf(buf + off, size - off, "%sx", t->dims[i]);
  if (off < size) snprintf(buf + off, size - off, "%s>", t->elem);
}

/* Matches one token of argument `arg`'s type against an actual value. */
static tt_error *bind_token(const char *name, bindings *bs, const char *tok, const char *actual,
                            int arg, const type_text *t, const tt_shape *s) {
  if (tok[0] == '$') {
    const char *v = bound(bs, tok);
    if (!v) {
      snprintf(bs->names[bs->n], TOK, "%s", tok);
      snprintf(bs->values[bs->n], TOK, "%s", actual);
      bs->n++;
      return NULL;
    }
    if (strcmp(v, actual) == 0) return NULL;
  } else if (strcmp(tok, actual) == 0) {
    return NULL;
  }
  char want[256], got[160];
  print_type(want, sizeof want, t);
  tt_shape_print(s, got, sizeof got);
  return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                      "custom kernel %s: argument %d is %s, which does not match the kernel's "
                      "type %s%s%s%s", name, arg, got, want, tok[0] == '$' ? " (" : "",
                      tok[0] == '$' ? tok : "", tok[0] == '$' ? " is bound to another value)" : "");
}

static tt_error *bind_args(const char *name, const signature *sig, const tt_shape *ins, int n_ins,
                           bindings *bs) {
  bs->n = 0;
  if (n_ins != sig->n_args)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: @%s takes %d tensors, got %d",
                        name, sig->entry, sig->n_args, n_ins);
  for (int i = 0; i < n_ins; i++) {
    const type_text *t = &sig->args[i];
    char got[160], want[256];
    if (t->ndim != ins[i].ndim) {
      tt_shape_print(&ins[i], got, sizeof got);
      print_type(want, sizeof want, t);
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: argument %d is %s, which "
                          "does not match the kernel's type %s", name, i, got, want);
    }
    char actual[TOK];
    for (int d = 0; d < t->ndim; d++) {
      snprintf(actual, sizeof actual, "%" PRId64, ins[i].dims[d]);
      TT_TRY(bind_token(name, bs, t->dims[d], actual, i, t, &ins[i]));
    }
    TT_TRY(bind_token(name, bs, t->elem, tt_dtype_mlir(ins[i].dtype), i, t, &ins[i]));
  }
  return NULL;
}

/* text with every ${NAME} replaced by its bound value. */
static tt_error *substitute(const char *name, const char *text, const bindings *bs, char **out) {
  sbuf s = {0};
  sb_puts(&s, "");
  for (const char *p = text; *p;) {
    if (p[0] == '$' && p[1] == '{') {
      const char *e = strchr(p, '}');
      char sym[TOK];
      if (!e || !copy_tok(sym, p, (size_t)(e + 1 - p))) {
        free(s.data);
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: an unclosed ${", name);
      }
      const char *v = bound(bs, sym);
      if (!v) {
        free(s.data);
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: the text uses %s, which "
                            "no argument type of the entry function binds", name, sym);
      }
      sb_puts(&s, v);
      p = e + 1;
      continue;
    }
    sb_putn(&s, p, 1);
    p++;
  }
  *out = s.data;
  return NULL;
}

/* Length of the bare symbol name at p (after its '@'), 0 if none. */
static size_t symbol_len(const char *p) {
  if (!isalpha((unsigned char)*p) && *p != '_') return 0;
  size_t n = 1;
  while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '$' || p[n] == '.') n++;
  return n;
}

/* p at "func.func": the '@' of the function it defines, or NULL. */
static const char *defined_symbol(const char *p) {
  const char *q = skip_ws(p + 9);
  if (starts_word(q, "public")) q = skip_ws(q + 6);
  else if (starts_word(q, "private")) q = skip_ws(q + 7);
  else if (starts_word(q, "nested")) q = skip_ws(q + 6);
  return *q == '@' ? q : NULL;
}

#define MAX_FUNCS 64

/* text with every func.func private and each symbol it defines renamed
 * `@<prefix>sym`, at its definition and its uses; other symbols (a
 * custom_call's target) stay. */
static tt_error *rename_symbols(const char *name, const char *text, const char *prefix,
                                char **out) {
  const char *defs[MAX_FUNCS];
  size_t def_len[MAX_FUNCS];
  int n_defs = 0;
  for (const char *p = text; *p;) {
    size_t lit = skip_literal(p);
    if (lit) {
      p += lit;
      continue;
    }
    const char *at = starts_word(p, "func.func") && (p == text || !ident_char(p[-1]))
                         ? defined_symbol(p) : NULL;
    if (at) {
      if (n_defs == MAX_FUNCS)
        return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: more than %d functions",
                            name, MAX_FUNCS);
      defs[n_defs] = at + 1;
      def_len[n_defs++] = symbol_len(at + 1);
      p = at + 1;
      continue;
    }
    p++;
  }
  sbuf s = {0};
  sb_puts(&s, "");
  for (const char *p = text; *p;) {
    size_t lit = skip_literal(p);
    if (lit) {
      sb_putn(&s, p, lit);
      p += lit;
      continue;
    }
    const char *at = starts_word(p, "func.func") && (p == text || !ident_char(p[-1]))
                         ? defined_symbol(p) : NULL;
    if (at) {
      sb_puts(&s, "func.func private ");
      p = at;
      continue;
    }
    size_t n = p[0] == '@' ? symbol_len(p + 1) : 0;
    bool ours = false;
    for (int i = 0; n && i < n_defs && !ours; i++)
      ours = def_len[i] == n && strncmp(defs[i], p + 1, n) == 0;
    if (ours) {
      sb_putn(&s, "@", 1);
      sb_puts(&s, prefix);
      sb_putn(&s, p + 1, n);
      p += 1 + n;
      continue;
    }
    sb_putn(&s, p, 1);
    p++;
  }
  *out = s.data;
  return NULL;
}

static tt_error *shape_of(const char *name, const type_text *t, tt_shape *out) {
  memset(out, 0, sizeof *out);
  out->ndim = t->ndim;
  for (int d = 0; d < t->ndim; d++) {
    char *end;
    out->dims[d] = strtoll(t->dims[d], &end, 10);
    if (*end || t->dims[d][0] == '$')
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: dimension `%s` is not "
                          "bound by any argument's type", name, t->dims[d]);
  }
  if (!tt_custom_kernel_dtype(t->elem, &out->dtype))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s: element type `%s` is not "
                        "one torch_tpu holds (or a symbol no argument binds)", name, t->elem);
  return NULL;
}

/* The kernel's functions for arguments of shapes ins: their text, the
 * entry's symbol (sym: TOK * 2) and the result shapes. */
static tt_error *instantiate(const char *name, const char *stripped, const tt_shape *ins,
                             int n_ins, char **func_text, char *sym, tt_shape *outs, int *n_outs) {
  *func_text = NULL;
  signature sig;
  const char *at;
  TT_TRY(parse_signature(name, stripped, &sig, &at));
  bindings *bs = malloc(sizeof *bs);
  if (!bs) abort();
  char *text = NULL;
  tt_error *err = bind_args(name, &sig, ins, n_ins, bs);
  if (!err) err = substitute(name, stripped, bs, &text);
  free(bs);
  if (err) return err;
  /* prefix: the op's name (readable dumps) and a digest of this instance */
  unsigned char h[6];
  tt_blake2b_state st;
  tt_blake2b_init(&st, sizeof h);
  tt_blake2b_update(&st, name, strlen(name) + 1);
  tt_blake2b_update(&st, text, strlen(text));
  tt_blake2b_final(&st, h);
  char prefix[TOK];
  size_t off = 0;
  for (const char *p = name; *p && off < 32; p++)
    prefix[off++] = isalnum((unsigned char)*p) ? *p : '_';
  for (size_t i = 0; i < sizeof h; i++) off += (size_t)snprintf(prefix + off, 4, i ? "%02x" : "_%02x", h[i]);
  snprintf(prefix + off, sizeof prefix - off, "_");
  char *renamed = NULL;
  err = rename_symbols(name, text, prefix, &renamed);
  free(text);
  if (err) return err;
  /* results: from the instantiated signature */
  signature final;
  err = parse_signature(name, renamed, &final, &at);
  for (int i = 0; !err && i < final.n_results; i++) err = shape_of(name, &final.results[i], &outs[i]);
  if (err) {
    free(renamed);
    return err;
  }
  *n_outs = final.n_results;
  snprintf(sym, 2 * TOK, "%s", final.entry);
  *func_text = renamed;
  return NULL;
}

/* ------------------------------------------------------------- registry */

typedef struct {
  char *name;
  char *text; /* module wrapper stripped */
  unsigned char digest[16];
} kernel;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static kernel **kernels; /* entries never move nor die: pointers stay valid */
static int n_kernels, cap_kernels;

static const kernel *lookup(const char *op_name) {
  pthread_mutex_lock(&registry_lock);
  const kernel *k = NULL;
  for (int i = 0; i < n_kernels && !k; i++)
    if (strcmp(kernels[i]->name, op_name) == 0) k = kernels[i];
  pthread_mutex_unlock(&registry_lock);
  return k;
}

static tt_error *lower_custom_kernel(tt_lower_ctx *c);

tt_lower_fn tt_custom_kernel_find(const char *op_name, unsigned char digest[16]) {
  if (!strstr(op_name, "::")) return NULL; /* aten names arrive without a namespace */
  const kernel *k = lookup(op_name);
  if (!k) return NULL;
  memcpy(digest, k->digest, 16);
  return lower_custom_kernel;
}

tt_error *tt_custom_kernel_signature(const char *op_name, const char *text, int *n_args,
                                     int *n_results, bool *templated, tt_shape *args) {
  char *stripped;
  TT_TRY(strip_module(op_name, text, &stripped));
  signature sig;
  const char *at;
  tt_error *err = parse_signature(op_name, stripped, &sig, &at);
  free(stripped);
  if (err) return err;
  *n_args = sig.n_args;
  *n_results = sig.n_results;
  *templated = sig.templated;
  for (int i = 0; !sig.templated && i < sig.n_args; i++)
    TT_TRY(shape_of(op_name, &sig.args[i], &args[i]));
  return NULL;
}

tt_error *tt_custom_kernel_register(const char *op_name, const char *text) {
  char *stripped;
  TT_TRY(strip_module(op_name, text, &stripped));
  signature sig;
  const char *at;
  tt_error *err = parse_signature(op_name, stripped, &sig, &at);
  if (err) {
    free(stripped);
    return err;
  }
  unsigned char digest[16];
  tt_blake2b(stripped, strlen(stripped), digest, sizeof digest);
  pthread_mutex_lock(&registry_lock);
  for (int i = 0; i < n_kernels; i++) {
    if (strcmp(kernels[i]->name, op_name) != 0) continue;
    bool same = memcmp(kernels[i]->digest, digest, sizeof digest) == 0;
    pthread_mutex_unlock(&registry_lock);
    free(stripped);
    return same ? NULL
                : tt_error_new(TT_ERR_INVALID_ARGUMENT, "custom kernel %s is already registered "
                               "with another StableHLO text (kernels are immutable: register "
                               "the new one under a new name)", op_name);
  }
  if (n_kernels == cap_kernels) {
    int cap = cap_kernels ? cap_kernels * 2 : 8;
    kernel **ks = realloc(kernels, (size_t)cap * sizeof *ks);
    if (!ks) abort();
    kernels = ks;
    cap_kernels = cap;
  }
  kernel *k = calloc(1, sizeof *k);
  if (!k) abort();
  k->name = strdup(op_name);
  k->text = stripped;
  if (!k->name) abort();
  memcpy(k->digest, digest, sizeof digest);
  kernels[n_kernels++] = k;
  pthread_mutex_unlock(&registry_lock);
  return NULL;
}

tt_error *tt_custom_kernel_module(const char *op_name, const char *text, const tt_shape *ins,
                                  int n_ins, char **module_text, int *first_line, tt_shape *outs,
                                  int *n_outs) {
  *module_text = NULL;
  char *stripped, *fn = NULL;
  char sym[2 * TOK];
  TT_TRY(strip_module(op_name, text, &stripped));
  tt_error *err = instantiate(op_name, stripped, ins, n_ins, &fn, sym, outs, n_outs);
  free(stripped);
  if (err) return err;
  tt_builder *b = tt_builder_new();
  if (!b) abort();
  tt_val args[TT_CK_MAX_ARGS], res[TT_CK_MAX_RESULTS];
  for (int i = 0; i < n_ins; i++) args[i] = tt_b_param(b, ins[i]);
  tt_b_add_function(b, sym, fn);
  tt_b_call(b, sym, args, n_ins, outs, *n_outs, res);
  err = tt_b_finish(b, res, *n_outs, module_text);
  tt_builder_free(b);
  if (!err) {
    const char *at = strstr(*module_text, fn);
    *first_line = 1;
    for (const char *p = *module_text; at && p < at; p++) *first_line += *p == '\n';
  }
  free(fn);
  return err;
}

/* ------------------------------------------------------------- lowering */

/* Every registered kernel: arguments are the op's tensors in schema order;
 * results are the entry's, in order. */
static tt_error *lower_custom_kernel(tt_lower_ctx *c) {
  const char *name = tt_lc_op_name(c);
  const kernel *k = lookup(name);
  if (!k) return tt_lc_fail(c, TT_ERR_RUNTIME, "internal: custom kernel %s is not registered", name);
  tt_builder *b = tt_lc_builder(c);
  int n = tt_lc_nargs(c);
  if (n > TT_CK_MAX_ARGS)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "custom kernel %s: more than %d arguments",
                      name, TT_CK_MAX_ARGS);
  tt_val ins[TT_CK_MAX_ARGS], res[TT_CK_MAX_RESULTS];
  tt_shape shapes[TT_CK_MAX_ARGS], outs[TT_CK_MAX_RESULTS];
  for (int i = 0; i < n; i++) {
    if (tt_lc_kind(c, i) != TT_ARG_TENSOR)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "custom kernel %s: argument %d is not a "
                        "tensor (custom kernels take tensors only)", name, i);
    ins[i] = tt_lc_tensor(c, i);
    shapes[i] = tt_b_shape(b, ins[i]);
  }
  if (tt_b_error(b)) return NULL; /* the framework reports the builder's error */
  char *fn;
  char sym[2 * TOK];
  int n_outs;
  tt_error *err = instantiate(name, k->text, shapes, n, &fn, sym, outs, &n_outs);
  if (err) {
    tt_error *e = tt_lc_fail(c, tt_error_code_of(err), "%s", tt_error_message(err));
    tt_error_free(err);
    return e;
  }
  tt_b_add_function(b, sym, fn);
  free(fn);
  if (tt_b_call(b, sym, ins, n, outs, n_outs, res))
    for (int i = 0; i < n_outs; i++) tt_lc_output(c, res[i]);
  return NULL;
}
