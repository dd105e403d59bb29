#include "graph/program_serial.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Layout (little-endian), docs/persistent-cache.md:
 *   magic[8] u32 version u32 flags i32 declined u64 compile_seconds(bits)
 *   u32 n_params  { i32 kind, arg, elem, dtype }
 *   u32 n_outs    { out plan }   u32 n_resize { out plan }
 *   u32 n_value_args { i32 }
 *   [u64 len, bytes] decline_message, text, executable -- each if its flag is set
 * out plan: i32 kind, arg, elem, dtype, ndim, then ndim x i64 dims. */
enum {
  FLAG_EXE = 1,
  FLAG_TEXT = 2,
  /* 4 was is_router (version 1): value-dependent ops now live in graph/value_args.c */
  FLAG_DECLINE_MESSAGE = 8,
  KNOWN_FLAGS = 11,
};

/* ------------------------------------------------------------ writer */

typedef struct {
  unsigned char *data;
  size_t len, cap;
  bool failed;
} writer;

static void w_bytes(writer *w, const void *p, size_t n) {
  if (w->failed) return;
  if (w->len + n > w->cap) {
    size_t nc = w->cap ? w->cap : 256;
    while (nc < w->len + n) nc *= 2;
    unsigned char *g = realloc(w->data, nc);
    if (!g) {
      w->failed = true;
      return;
    }
    w->data = g;
    w->cap = nc;
  }
  if (n) memcpy(w->data + w->len, p, n);
  w->len += n;
}

static void w_uint(writer *w, uint64_t v, int size) {
  unsigned char b[8];
  for (int i = 0; i < size; i++) b[i] = (unsigned char)(v >> (8 * i));
  w_bytes(w, b, (size_t)size);
}

static void w_i32(writer *w, int v) { w_uint(w, (uint32_t)(int32_t)v, 4); }

static void w_out_plans(writer *w, const tt_output_plan *plans, int n) {
  w_uint(w, (uint32_t)n, 4);
  for (int i = 0; i < n; i++) {
    const tt_output_plan *o = &plans[i];
    w_i32(w, o->kind);
    w_i32(w, o->arg);
    w_i32(w, o->elem);
    w_i32(w, o->shape.dtype);
    w_i32(w, o->shape.ndim);
    for (int d = 0; d < o->shape.ndim && d < TT_MAX_DIMS; d++) w_uint(w, (uint64_t)o->shape.dims[d], 8);
  }
}

static void w_chunk(writer *w, const void *p, size_t n) {
  w_uint(w, n, 8);
  w_bytes(w, p, n);
}

tt_error *tt_program_serialize(const tt_program *p, bool include_text, void **blob, size_t *len) {
  if (!p || !blob || !len)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_program_serialize: NULL argument");
  *blob = NULL;
  *len = 0;
  void *exe_bytes = NULL;
  size_t exe_len = 0;
  tt_executable *exe = tt_pool_acquire((tt_pool_entry *)&p->exe_slot);
  tt_error *serr = exe ? tt_executable_serialize(exe, &exe_bytes, &exe_len) : NULL;
  tt_executable_release(exe);
  TT_TRY(serr);
  unsigned flags = (exe ? FLAG_EXE : 0) | (include_text && p->text ? FLAG_TEXT : 0) |
                   (p->decline_message ? FLAG_DECLINE_MESSAGE : 0);
  writer w = {0};
  w_bytes(&w, TT_PROGRAM_SERIAL_MAGIC, 8);
  w_uint(&w, TT_PROGRAM_SERIAL_VERSION, 4);
  w_uint(&w, flags, 4);
  w_i32(&w, (int)p->declined);
  uint64_t secs;
  memcpy(&secs, &p->compile_seconds, sizeof secs);
  w_uint(&w, secs, 8);
  w_uint(&w, (uint32_t)p->n_params, 4);
  for (int i = 0; i < p->n_params; i++) {
    w_i32(&w, p->params[i].kind);
    w_i32(&w, p->params[i].arg);
    w_i32(&w, p->params[i].elem);
    w_i32(&w, p->params[i].dtype);
  }
  w_out_plans(&w, p->outs, p->n_outs);
  w_out_plans(&w, p->resize, p->n_resize);
  w_uint(&w, (uint32_t)p->n_value_args, 4);
  for (int i = 0; i < p->n_value_args; i++) w_i32(&w, p->value_args[i]);
  if (flags & FLAG_DECLINE_MESSAGE) w_chunk(&w, p->decline_message, strlen(p->decline_message));
  if (flags & FLAG_TEXT) w_chunk(&w, p->text, strlen(p->text));
  if (flags & FLAG_EXE) w_chunk(&w, exe_bytes, exe_len);
  free(exe_bytes);
  if (w.failed) {
    free(w.data);
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory serializing a program");
  }
  *blob = w.data;
  *len = w.len;
  return NULL;
}

/* ------------------------------------------------------------ reader */

typedef struct {
  const unsigned char *p;
  size_t left;
  const char *bad; /* first problem found; later reads return zeros */
} reader;

static uint64_t r_uint(reader *r, int size) {
  if (r->bad) return 0;
  if (r->left < (size_t)size) {
    r->bad = "truncated";
    return 0;
  }
  uint64_t v = 0;
  for (int i = size - 1; i >= 0; i--) v = (v << 8) | r->p[i];
  r->p += size;
  r->left -= (size_t)size;
  return v;
}

static int r_i32(reader *r) { return (int)(int32_t)(uint32_t)r_uint(r, 4); }

/* A count of records of at least min_size bytes each: bounded by what is
 * left, so a corrupt count cannot ask for a huge allocation. */
static int r_count(reader *r, size_t min_size) {
  uint64_t n = r_uint(r, 4);
  if (!r->bad && (n > INT32_MAX || n * min_size > r->left)) r->bad = "record count exceeds the blob";
  return r->bad ? 0 : (int)n;
}

static void check(reader *r, bool ok, const char *why) {
  if (!r->bad && !ok) r->bad = why;
}

static bool r_out_plans(reader *r, tt_output_plan **out, int *n_out) {
  int n = r_count(r, 20);
  *n_out = 0;
  *out = NULL;
  if (n == 0) return !r->bad;
  tt_output_plan *plans = calloc((size_t)n, sizeof *plans);
  if (!plans) return false;
  *out = plans; /* owned by the program from here, freed on failure too */
  *n_out = n;
  for (int i = 0; i < n && !r->bad; i++) {
    tt_output_plan *o = &plans[i];
    int kind = r_i32(r);
    check(r, kind == TT_OUT_NEW || kind == TT_OUT_WRITE, "bad output kind");
    o->kind = (tt_out_kind)kind;
    o->arg = r_i32(r);
    o->elem = r_i32(r);
    int dtype = r_i32(r), ndim = r_i32(r);
    check(r, o->arg >= 0 && o->elem >= -1, "bad output argument index");
    check(r, dtype >= 0 && dtype < TT_DTYPE_COUNT, "bad output dtype");
    check(r, ndim >= 0 && ndim <= TT_MAX_DIMS, "bad output rank");
    if (r->bad) break;
    o->shape.dtype = (tt_dtype)dtype;
    o->shape.ndim = ndim;
    for (int d = 0; d < ndim; d++) {
      o->shape.dims[d] = (int64_t)r_uint(r, 8);
      check(r, o->shape.dims[d] >= 0, "negative output dimension");
    }
  }
  return true;
}

/* A length-prefixed string, NUL-terminated copy; NULL with r->bad on error. */
static char *r_string(reader *r) {
  uint64_t n = r_uint(r, 8);
  check(r, n <= r->left, "truncated");
  if (r->bad) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  memcpy(s, r->p, (size_t)n);
  s[n] = 0;
  r->p += n;
  r->left -= (size_t)n;
  return s;
}

tt_error *tt_program_deserialize(tt_runtime *rt, const void *blob, size_t len, tt_program **out) {
  if (!rt || !out || (!blob && len))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_program_deserialize: NULL argument");
  *out = NULL;
  if (len < 12 || memcmp(blob, TT_PROGRAM_SERIAL_MAGIC, 8) != 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "not a serialized torch_tpu program (bad magic)");
  reader r = {(const unsigned char *)blob + 8, len - 8, NULL};
  uint32_t version = (uint32_t)r_uint(&r, 4);
  if (version != TT_PROGRAM_SERIAL_VERSION)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "serialized program has format version %u, this build reads %u", version,
                        TT_PROGRAM_SERIAL_VERSION);
  tt_program *p = calloc(1, sizeof *p);
  if (!p) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  bool oom = false;
  unsigned flags = (unsigned)r_uint(&r, 4);
  check(&r, (flags & ~(unsigned)KNOWN_FLAGS) == 0, "unknown flags");
  int declined = r_i32(&r);
  check(&r, declined >= 0 && declined <= TT_ERR_RUNTIME, "bad decline code");
  p->declined = (tt_error_code)declined;
  uint64_t secs = r_uint(&r, 8);
  memcpy(&p->compile_seconds, &secs, sizeof secs);

  int n = r_count(&r, 16);
  if (n) {
    p->params = calloc((size_t)n, sizeof *p->params);
    oom |= !p->params;
    if (p->params) p->n_params = n;
  }
  for (int i = 0; i < p->n_params && !r.bad; i++) {
    tt_param_plan *pp = &p->params[i];
    int kind = r_i32(&r);
    check(&r, kind == TT_PARAM_STORAGE || kind == TT_PARAM_SCALAR || kind == TT_PARAM_RNG ||
              kind == TT_PARAM_OFFSET,
          "bad parameter kind");
    pp->kind = (tt_param_kind)kind;
    pp->arg = r_i32(&r);
    pp->elem = r_i32(&r);
    int dtype = r_i32(&r);
    check(&r, pp->arg >= 0 && pp->elem >= -1, "bad parameter argument index");
    check(&r, dtype >= 0 && dtype < TT_DTYPE_COUNT, "bad parameter dtype");
    pp->dtype = (tt_dtype)dtype;
  }
  if (!oom && !r.bad) oom |= !r_out_plans(&r, &p->outs, &p->n_outs);
  if (!oom && !r.bad) oom |= !r_out_plans(&r, &p->resize, &p->n_resize);
  if (!oom && !r.bad) {
    n = r_count(&r, 4);
    if (n) {
      p->value_args = calloc((size_t)n, sizeof *p->value_args);
      oom |= !p->value_args;
      if (p->value_args) p->n_value_args = n;
    }
    for (int i = 0; i < p->n_value_args; i++) {
      p->value_args[i] = r_i32(&r);
      check(&r, p->value_args[i] >= 0, "bad value argument index");
    }
  }
  if (!oom && !r.bad && (flags & FLAG_DECLINE_MESSAGE)) {
    p->decline_message = r_string(&r);
    oom |= !p->decline_message && !r.bad;
  }
  if (!oom && !r.bad && (flags & FLAG_TEXT)) {
    p->text = r_string(&r);
    oom |= !p->text && !r.bad;
  }
  const unsigned char *exe_bytes = NULL;
  size_t exe_len = 0;
  if (!oom && !r.bad && (flags & FLAG_EXE)) {
    exe_len = (size_t)r_uint(&r, 8);
    check(&r, exe_len <= r.left, "truncated executable");
    if (!r.bad) {
      exe_bytes = r.p;
      r.p += exe_len;
      r.left -= exe_len;
    }
  }
  check(&r, r.left == 0, "trailing bytes");
  tt_error *err = NULL;
  if (oom)
    err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory loading a program");
  else if (r.bad)
    err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "corrupt serialized program: %s", r.bad);
  else if (exe_bytes) {
    tt_executable *exe = NULL;
    err = tt_error_wrap(tt_executable_deserialize(rt, exe_bytes, exe_len, &exe),
                        "loading a cached program: ");
    if (!err) tt_executable_release(tt_pool_install(&p->exe_slot, exe));
  }
  if (err) {
    tt_program_free(p);
    return err;
  }
  *out = p;
  return NULL;
}
