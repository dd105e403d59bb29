#include "shlo/builder.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- types */

typedef struct {
  char name[24]; /* "%v12", "%v3#1", "%arg0" */
  tt_shape shape;
  int scope;     /* 0: the function body; else the id of the block defining it */
} value_info;

typedef struct {
  char *data;
  size_t len, cap;
} text_buf;

/* A region op under construction (while, case): its operands and result
 * shapes, the text of its finished blocks, and the block being built. */
#define MAX_FRAMES 8
#define MAX_CARRIED 16
typedef struct {
  tt_op op;
  tt_val ins[MAX_CARRIED];
  int n_ins;
  tt_shape outs[MAX_CARRIED];
  int n_outs;
  text_buf regions; /* finished blocks, joined by "}, {" */
  text_buf block;   /* the open block's body */
  int n_blocks;     /* blocks finished */
  int scope;        /* id of the open block, 0 if none is open */
} region_frame;

struct tt_builder {
  value_info *values;
  int n_values, cap_values;
  int n_params;
  int *param_values;   /* value id of each parameter */
  int *param_alias;    /* output index the param is donated to, or -1 */
  int cap_params;
  int next_ssa;
  text_buf body;
  tt_error *error;
  region_frame frames[MAX_FRAMES]; /* open region ops, innermost last */
  int n_frames;
  int next_scope;
  text_buf funcs;      /* tt_b_add_function's definitions, in order */
  char **func_syms;    /* their symbols */
  int n_funcs, cap_funcs;
};

/* ------------------------------------------------------------- text */

static void text_reserve(text_buf *t, size_t extra) {
  if (t->len + extra + 1 <= t->cap) return;
  size_t cap = t->cap ? t->cap : 1024;
  while (cap < t->len + extra + 1) cap *= 2;
  char *data = realloc(t->data, cap);
  if (!data) abort(); /* host OOM while building text: unrecoverable */
  t->data = data;
  t->cap = cap;
}

static void text_printf(text_buf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_printf(text_buf *t, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  text_reserve(t, (size_t)n);
  vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  t->len += (size_t)n;
}

/* ------------------------------------------------------------- shapes */

tt_shape tt_shape_make(tt_dtype dt, int ndim, const int64_t *dims) {
  tt_shape s;
  memset(&s, 0, sizeof s);
  s.dtype = dt;
  s.ndim = ndim;
  for (int i = 0; i < ndim && i < TT_MAX_DIMS; i++) s.dims[i] = dims[i];
  return s;
}

tt_shape tt_shape_scalar(tt_dtype dt) { return tt_shape_make(dt, 0, NULL); }

int64_t tt_shape_numel(const tt_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->ndim; i++) n *= s->dims[i];
  return n;
}

bool tt_shape_equal(const tt_shape *a, const tt_shape *b) {
  if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

void tt_shape_print(const tt_shape *s, char *buf, size_t size) {
  size_t off = (size_t)snprintf(buf, size, "tensor<");
  for (int i = 0; i < s->ndim && off < size; i++)
    off += (size_t)snprintf(buf + off, size - off, "%" PRId64 "x", s->dims[i]);
  if (off < size) snprintf(buf + off, size - off, "%s>", tt_dtype_mlir(s->dtype));
}

void tt_fmt_i64_array(char *buf, size_t size, const int64_t *v, int n) {
  size_t off = (size_t)snprintf(buf, size, n ? "array<i64: " : "array<i64");
  for (int i = 0; i < n && off < size; i++)
    off += (size_t)snprintf(buf + off, size - off, i ? ", %" PRId64 : "%" PRId64, v[i]);
  if (off < size) snprintf(buf + off, size - off, ">");
}

void tt_fmt_i64_list(char *buf, size_t size, const int64_t *v, int n) {
  size_t off = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < n && off < size; i++)
    off += (size_t)snprintf(buf + off, size - off, i ? ", %" PRId64 : "%" PRId64, v[i]);
  if (off < size) snprintf(buf + off, size - off, "]");
}

/* ------------------------------------------------------------- lifecycle */

tt_builder *tt_builder_new(void) {
  tt_builder *b = calloc(1, sizeof *b);
  return b;
}

void tt_builder_free(tt_builder *b) {
  if (!b) return;
  free(b->values);
  free(b->param_values);
  free(b->param_alias);
  free(b->body.data);
  free(b->funcs.data);
  for (int i = 0; i < b->n_funcs; i++) free(b->func_syms[i]);
  free(b->func_syms);
  for (int i = 0; i < MAX_FRAMES; i++) {
    free(b->frames[i].regions.data);
    free(b->frames[i].block.data);
  }
  tt_error_free(b->error);
  free(b);
}

const tt_error *tt_b_error(const tt_builder *b) { return b->error; }

tt_error *tt_b_take_error(tt_builder *b) {
  tt_error *e = b->error;
  b->error = e ? tt_error_new(tt_error_code_of(e), "%s", tt_error_message(e)) : NULL;
  return e;
}

tt_val tt_b_fail(tt_builder *b, tt_error_code code, const char *fmt, ...) {
  if (!b->error) {
    va_list ap;
    va_start(ap, fmt);
    b->error = tt_error_newv(code, fmt, ap);
    va_end(ap);
  }
  return TT_INVALID;
}

static tt_val add_value(tt_builder *b, const char *name, tt_shape shape) {
  if (b->n_values == b->cap_values) {
    int cap = b->cap_values ? b->cap_values * 2 : 64;
    value_info *v = realloc(b->values, (size_t)cap * sizeof *v);
    if (!v) abort();
    b->values = v;
    b->cap_values = cap;
  }
  value_info *vi = &b->values[b->n_values];
  snprintf(vi->name, sizeof vi->name, "%s", name);
  vi->shape = shape;
  vi->scope = b->n_frames ? b->frames[b->n_frames - 1].scope : 0;
  return b->n_values++;
}

/* v exists and is in scope: defined in the function body or in a block
 * that is still open. */
static bool valid(tt_builder *b, tt_val v) {
  if (b->error || v < 0 || v >= b->n_values) return false;
  int scope = b->values[v].scope;
  if (scope == 0) return true;
  for (int i = 0; i < b->n_frames; i++)
    if (b->frames[i].scope == scope) return true;
  tt_b_fail(b, TT_ERR_RUNTIME, "internal: %s used outside the block defining it", b->values[v].name);
  return false;
}

/* Where ops are written now: the open block of the innermost region op, or
 * the function body. */
static text_buf *out_text(tt_builder *b) {
  return b->n_frames ? &b->frames[b->n_frames - 1].block : &b->body;
}

tt_shape tt_b_shape(const tt_builder *b, tt_val v) {
  if (v < 0 || v >= b->n_values) return tt_shape_scalar(TT_F32);
  return b->values[v].shape;
}

tt_dtype tt_b_dtype(const tt_builder *b, tt_val v) { return tt_b_shape(b, v).dtype; }
int tt_b_ndim(const tt_builder *b, tt_val v) { return tt_b_shape(b, v).ndim; }
int tt_b_num_params(const tt_builder *b) { return b->n_params; }

tt_val tt_b_param(tt_builder *b, tt_shape shape) {
  if (b->error) return TT_INVALID;
  if (b->n_params == b->cap_params) {
    int cap = b->cap_params ? b->cap_params * 2 : 16;
    int *pv = realloc(b->param_values, (size_t)cap * sizeof *pv);
    int *pa = realloc(b->param_alias, (size_t)cap * sizeof *pa);
    if (!pv || !pa) abort();
    b->param_values = pv;
    b->param_alias = pa;
    b->cap_params = cap;
  }
  char name[24];
  snprintf(name, sizeof name, "%%arg%d", b->n_params);
  tt_val v = add_value(b, name, shape);
  b->param_values[b->n_params] = v;
  b->param_alias[b->n_params] = -1;
  b->n_params++;
  return v;
}

void tt_b_alias_param(tt_builder *b, int param, int output) {
  if (param >= 0 && param < b->n_params) b->param_alias[param] = output;
}

/* ------------------------------------------------------------- emission */

static void print_types(tt_builder *b, text_buf *out, const tt_val *ins, int n) {
  char buf[160];
  for (int i = 0; i < n; i++) {
    tt_shape_print(&b->values[ins[i]].shape, buf, sizeof buf);
    text_printf(out, i ? ", %s" : "%s", buf);
  }
}

/* Regions are counted from the text: blocks are joined by "}, {". */
static int count_regions(const char *region) {
  if (!region) return 0;
  int n = 1;
  for (const char *p = region; (p = strstr(p, "}, {")) != NULL; p += 4) n++;
  return n;
}

/* Emits op into the open block (or the body) after checking it against the
 * op table; `region` holds n_regions regions' text. */
static bool emit(tt_builder *b, tt_op op, const tt_val *ins, int n_ins, const char *attrs,
                 const char *region, int n_regions, const tt_shape *outs, int n_outs,
                 tt_val *results) {
  for (int i = 0; i < n_outs; i++) results[i] = TT_INVALID;
  if (b->error) return false;
  const tt_op_info *info = tt_op_get(op);
  if (!info) {
    tt_b_fail(b, TT_ERR_RUNTIME, "internal: op %d is not in the op table", (int)op);
    return false;
  }
  const char *name = info->name;
  for (int i = 0; i < n_ins; i++)
    if (!valid(b, ins[i])) {
      tt_b_fail(b, TT_ERR_RUNTIME, "internal: invalid operand %d to %s", i, name);
      return false;
    }
  const char *bad = tt_op_check_arity(op, n_ins, n_outs, n_regions,
                                      n_ins ? b->values[ins[0]].shape.ndim : 0);
  if (bad) {
    tt_b_fail(b, TT_ERR_RUNTIME, "internal: %s with %d operands, %d results: %s", name, n_ins,
              n_outs, bad);
    return false;
  }
  for (int i = 0; i < n_outs; i++)
    if (outs[i].ndim < 0 || outs[i].ndim > TT_MAX_DIMS) {
      tt_b_fail(b, TT_ERR_NOT_IMPLEMENTED, "%s: rank %d unsupported", name, outs[i].ndim);
      return false;
    }
  text_buf *out = out_text(b);
  int id = b->next_ssa++;
  if (n_outs == 1) text_printf(out, "    %%v%d = \"%s\"(", id, name);
  else if (n_outs == 0) text_printf(out, "    \"%s\"(", name);
  else text_printf(out, "    %%v%d:%d = \"%s\"(", id, n_outs, name);
  for (int i = 0; i < n_ins; i++)
    text_printf(out, i ? ", %s" : "%s", b->values[ins[i]].name);
  text_printf(out, ")");
  if (region) text_printf(out, " ({\n%s\n    })", region);
  if (attrs && attrs[0]) text_printf(out, " {%s}", attrs);
  text_printf(out, " : (");
  print_types(b, out, ins, n_ins);
  text_printf(out, ") -> ");
  char buf[160];
  if (n_outs != 1) text_printf(out, "(");
  for (int i = 0; i < n_outs; i++) {
    tt_shape_print(&outs[i], buf, sizeof buf);
    text_printf(out, i ? ", %s" : "%s", buf);
  }
  if (n_outs != 1) text_printf(out, ")");
  text_printf(out, "\n");
  for (int i = 0; i < n_outs; i++) {
    char vname[24];
    if (n_outs == 1) snprintf(vname, sizeof vname, "%%v%d", id);
    else snprintf(vname, sizeof vname, "%%v%d#%d", id, i);
    results[i] = add_value(b, vname, outs[i]);
  }
  return true;
}

bool tt_b_emit(tt_builder *b, tt_op op, const tt_val *ins, int n_ins, const char *attrs,
               const char *region, const tt_shape *outs, int n_outs, tt_val *results) {
  return emit(b, op, ins, n_ins, attrs, region, count_regions(region), outs, n_outs, results);
}

tt_val tt_b_emit1(tt_builder *b, tt_op op, const tt_val *ins, int n_ins, const char *attrs,
                  tt_shape out) {
  tt_val r;
  tt_b_emit(b, op, ins, n_ins, attrs, NULL, &out, 1, &r);
  return r;
}

/* The op named `name`, or TT_OP_COUNT after recording an internal error. */
static tt_op named_op(tt_builder *b, const char *prefix, const char *name) {
  char full[64];
  snprintf(full, sizeof full, "%s%s", prefix, name);
  tt_op op = tt_op_lookup(full);
  if (op == TT_OP_COUNT) tt_b_fail(b, TT_ERR_RUNTIME, "internal: %s is not in the op table", full);
  return op;
}

bool tt_b_op_multi(tt_builder *b, const char *name, const tt_val *ins, int n_ins,
                   const char *attrs, const char *region, const tt_shape *outs, int n_outs,
                   tt_val *results) {
  for (int i = 0; i < n_outs; i++) results[i] = TT_INVALID;
  if (b->error) return false;
  tt_op op = named_op(b, "", name);
  if (op == TT_OP_COUNT) return false;
  return tt_b_emit(b, op, ins, n_ins, attrs, region, outs, n_outs, results);
}

tt_val tt_b_op(tt_builder *b, const char *name, const tt_val *ins, int n_ins, const char *attrs,
               tt_shape out) {
  tt_val r;
  tt_b_op_multi(b, name, ins, n_ins, attrs, NULL, &out, 1, &r);
  return r;
}

/* ------------------------------------------------------------- constants */

static tt_val constant_text(tt_builder *b, tt_dtype dt, const char *literal) {
  char attrs[128], ty[64];
  tt_shape s = tt_shape_scalar(dt);
  tt_shape_print(&s, ty, sizeof ty);
  snprintf(attrs, sizeof attrs, "value = dense<%s> : %s", literal, ty);
  return tt_b_emit1(b, TT_OP_CONSTANT, NULL, 0, attrs, s);
}

tt_val tt_b_constant_complex(tt_builder *b, tt_dtype dt, double re, double im) {
  tt_dtype part = tt_dtype_real_part(dt);
  if (!tt_dtype_is_complex(dt))
    return tt_b_fail(b, TT_ERR_RUNTIME, "internal: complex constant of %s", tt_dtype_name(dt));
  tt_val r = tt_b_constant(b, part, re), i = tt_b_constant(b, part, im);
  return tt_b_complex(b, r, i);
}

tt_val tt_b_constant(tt_builder *b, tt_dtype dt, double value) {
  char lit[48];
  if (tt_dtype_is_complex(dt)) return tt_b_constant_complex(b, dt, value, 0);
  if (tt_dtype_is_floating(dt)) {
    int width = (int)tt_dtype_size(dt) * 2;
    snprintf(lit, sizeof lit, "0x%0*" PRIX64, width, tt_float_bits(dt, value));
  } else if (dt == TT_BOOL) {
    snprintf(lit, sizeof lit, "%s", value != 0 ? "true" : "false");
  } else {
    return tt_b_constant_int(b, dt, (int64_t)value);
  }
  return constant_text(b, dt, lit);
}

tt_val tt_b_constant_int(tt_builder *b, tt_dtype dt, int64_t value) {
  if (tt_dtype_is_floating(dt) || tt_dtype_is_complex(dt) || dt == TT_BOOL)
    return tt_b_constant(b, dt, (double)value);
  char lit[32];
  if (dt == TT_U64) snprintf(lit, sizeof lit, "%" PRIu64, (uint64_t)value);
  else snprintf(lit, sizeof lit, "%" PRId64, value);
  return constant_text(b, dt, lit);
}

tt_val tt_b_full(tt_builder *b, tt_shape shape, double value) {
  tt_val c = tt_b_constant(b, shape.dtype, value);
  if (shape.ndim == 0) return c;
  return tt_b_broadcast_in_dim(b, c, shape.ndim, shape.dims, NULL);
}

/* ------------------------------------------------------------- elementwise */

tt_val tt_b_un(tt_builder *b, tt_op op, tt_val x) {
  if (!valid(b, x)) return TT_INVALID;
  return tt_b_emit1(b, op, &x, 1, NULL, b->values[x].shape);
}

tt_val tt_b_unary(tt_builder *b, const char *op, tt_val x) {
  if (b->error) return TT_INVALID;
  tt_op k = named_op(b, "stablehlo.", op);
  return k == TT_OP_COUNT ? TT_INVALID : tt_b_un(b, k, x);
}

tt_val tt_b_bin(tt_builder *b, tt_op op, tt_val x, tt_val y) {
  if (!valid(b, x) || !valid(b, y)) return TT_INVALID;
  tt_shape sx = b->values[x].shape, sy = b->values[y].shape;
  if (!tt_shape_equal(&sx, &sy)) {
    char a[160], c[160];
    tt_shape_print(&sx, a, sizeof a);
    tt_shape_print(&sy, c, sizeof c);
    return tt_b_fail(b, TT_ERR_RUNTIME, "internal: %s operands differ: %s vs %s",
                     tt_op_get(op) ? tt_op_get(op)->name : "?", a, c);
  }
  tt_val ins[2] = {x, y};
  return tt_b_emit1(b, op, ins, 2, NULL, sx);
}

tt_val tt_b_binary(tt_builder *b, const char *op, tt_val x, tt_val y) {
  if (b->error) return TT_INVALID;
  tt_op k = named_op(b, "stablehlo.", op);
  return k == TT_OP_COUNT ? TT_INVALID : tt_b_bin(b, k, x, y);
}

tt_val tt_b_compare(tt_builder *b, const char *direction, tt_val x, tt_val y) {
  if (!valid(b, x) || !valid(b, y)) return TT_INVALID;
  tt_shape s = b->values[x].shape;
  const char *type = tt_dtype_is_floating(s.dtype) || tt_dtype_is_complex(s.dtype) ? "FLOAT"
                     : (tt_dtype_is_signed(s.dtype) ? "SIGNED" : "UNSIGNED");
  char attrs[160];
  snprintf(attrs, sizeof attrs,
           "comparison_direction = #stablehlo<comparison_direction %s>, "
           "compare_type = #stablehlo<comparison_type %s>",
           direction, type);
  tt_val ins[2] = {x, y};
  if (!tt_shape_equal(&s, &b->values[y].shape))
    return tt_b_fail(b, TT_ERR_RUNTIME, "internal: compare operands differ");
  s.dtype = TT_BOOL;
  return tt_b_emit1(b, TT_OP_COMPARE, ins, 2, attrs, s);
}

tt_val tt_b_select(tt_builder *b, tt_val pred, tt_val on_true, tt_val on_false) {
  if (!valid(b, pred) || !valid(b, on_true) || !valid(b, on_false)) return TT_INVALID;
  tt_val ins[3] = {pred, on_true, on_false};
  return tt_b_emit1(b, TT_OP_SELECT, ins, 3, NULL, b->values[on_true].shape);
}

tt_val tt_b_convert(tt_builder *b, tt_val x, tt_dtype dt) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape s = b->values[x].shape;
  if (s.dtype == dt) return x;
  /* float -> bool must be "!= 0" (convert would truncate 0.5 to false). */
  if (dt == TT_BOOL) {
    tt_val zero = tt_b_full(b, s, 0);
    return tt_b_compare(b, "NE", x, zero);
  }
  /* complex: through the components (XLA converts no complex to real, and
   * the component route is exact for real -> complex and c64 <-> c128) */
  if (tt_dtype_is_complex(s.dtype)) {
    tt_val re = tt_b_real(b, x);
    if (!tt_dtype_is_complex(dt)) return tt_b_convert(b, re, dt); /* drops the imaginary part, as torch */
    tt_dtype part = tt_dtype_real_part(dt);
    return tt_b_complex(b, tt_b_convert(b, re, part), tt_b_convert(b, tt_b_imag(b, x), part));
  }
  if (tt_dtype_is_complex(dt)) {
    tt_val re = tt_b_convert(b, x, tt_dtype_real_part(dt));
    return tt_b_complex(b, re, tt_b_full(b, tt_b_shape(b, re), 0));
  }
  s.dtype = dt;
  return tt_b_emit1(b, TT_OP_CONVERT, &x, 1, NULL, s);
}

static tt_val complex_part(tt_builder *b, tt_op op, tt_val x) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape s = b->values[x].shape;
  if (!tt_dtype_is_complex(s.dtype))
    return tt_b_fail(b, TT_ERR_RUNTIME, "internal: real/imag of %s", tt_dtype_name(s.dtype));
  s.dtype = tt_dtype_real_part(s.dtype);
  return tt_b_emit1(b, op, &x, 1, NULL, s);
}

tt_val tt_b_real(tt_builder *b, tt_val x) { return complex_part(b, TT_OP_REAL, x); }
tt_val tt_b_imag(tt_builder *b, tt_val x) { return complex_part(b, TT_OP_IMAG, x); }

tt_val tt_b_complex(tt_builder *b, tt_val re, tt_val im) {
  if (!valid(b, re) || !valid(b, im)) return TT_INVALID;
  tt_shape s = b->values[re].shape;
  if (!tt_shape_equal(&s, &b->values[im].shape) || (s.dtype != TT_F32 && s.dtype != TT_F64))
    return tt_b_fail(b, TT_ERR_RUNTIME, "internal: complex of mismatched or non-f32/f64 parts");
  s.dtype = tt_dtype_to_complex(s.dtype);
  tt_val ins[2] = {re, im};
  return tt_b_emit1(b, TT_OP_COMPLEX, ins, 2, NULL, s);
}

tt_val tt_b_abs(tt_builder *b, tt_val x) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape s = b->values[x].shape;
  s.dtype = tt_dtype_real_part(s.dtype);
  return tt_b_emit1(b, TT_OP_ABS, &x, 1, NULL, s);
}

tt_val tt_b_fft(tt_builder *b, tt_val x, const char *fft_type, const int64_t *lengths, int n) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape s = b->values[x].shape;
  if (n < 1 || n > 3 || n > s.ndim)
    return tt_b_fail(b, TT_ERR_RUNTIME, "internal: fft over %d of %d dims", n, s.ndim);
  bool rfft = strcmp(fft_type, "RFFT") == 0, irfft = strcmp(fft_type, "IRFFT") == 0;
  if (rfft) {
    if (tt_dtype_is_complex(s.dtype)) return tt_b_fail(b, TT_ERR_RUNTIME, "internal: RFFT of complex");
    s.dtype = tt_dtype_to_complex(s.dtype);
    s.dims[s.ndim - 1] = lengths[n - 1] / 2 + 1;
  } else if (irfft) {
    if (!tt_dtype_is_complex(s.dtype)) return tt_b_fail(b, TT_ERR_RUNTIME, "internal: IRFFT of real");
    s.dtype = tt_dtype_real_part(s.dtype);
    s.dims[s.ndim - 1] = lengths[n - 1];
  } else if (!tt_dtype_is_complex(s.dtype)) {
    return tt_b_fail(b, TT_ERR_RUNTIME, "internal: %s of a real value", fft_type);
  }
  char len[128], attrs[200];
  tt_fmt_i64_array(len, sizeof len, lengths, n);
  snprintf(attrs, sizeof attrs, "fft_type = #stablehlo<fft_type %s>, fft_length = %s", fft_type, len);
  return tt_b_emit1(b, TT_OP_FFT, &x, 1, attrs, s);
}

tt_val tt_b_bitcast(tt_builder *b, tt_val x, tt_shape out) {
  return tt_b_emit1(b, TT_OP_BITCAST_CONVERT, &x, 1, NULL, out);
}

/* ------------------------------------------------------------- shape ops */

tt_val tt_b_reshape(tt_builder *b, tt_val x, int ndim, const int64_t *dims) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape s = tt_shape_make(b->values[x].shape.dtype, ndim, dims);
  if (tt_shape_numel(&s) != tt_shape_numel(&b->values[x].shape))
    return tt_b_fail(b, TT_ERR_RUNTIME, "internal: reshape changes element count");
  if (tt_shape_equal(&s, &b->values[x].shape)) return x;
  return tt_b_emit1(b, TT_OP_RESHAPE, &x, 1, NULL, s);
}

tt_val tt_b_transpose(tt_builder *b, tt_val x, const int64_t *perm) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape in = b->values[x].shape, out = in;
  bool identity = true;
  for (int i = 0; i < in.ndim; i++) {
    out.dims[i] = in.dims[perm[i]];
    if (perm[i] != i) identity = false;
  }
  if (identity) return x;
  char attrs[160], list[128];
  tt_fmt_i64_array(list, sizeof list, perm, in.ndim);
  snprintf(attrs, sizeof attrs, "permutation = %s", list);
  return tt_b_emit1(b, TT_OP_TRANSPOSE, &x, 1, attrs, out);
}

tt_val tt_b_broadcast_in_dim(tt_builder *b, tt_val x, int ndim, const int64_t *dims,
                             const int64_t *map) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape in = b->values[x].shape;
  tt_shape out = tt_shape_make(in.dtype, ndim, dims);
  int64_t default_map[TT_MAX_DIMS];
  if (!map) { /* right-aligned */
    for (int i = 0; i < in.ndim; i++) default_map[i] = ndim - in.ndim + i;
    map = default_map;
  }
  if (tt_shape_equal(&in, &out)) return x;
  char attrs[160], list[128];
  tt_fmt_i64_array(list, sizeof list, map, in.ndim);
  snprintf(attrs, sizeof attrs, "broadcast_dimensions = %s", list);
  return tt_b_emit1(b, TT_OP_BROADCAST_IN_DIM, &x, 1, attrs, out);
}

tt_val tt_b_broadcast_to(tt_builder *b, tt_val x, int ndim, const int64_t *dims) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape in = b->values[x].shape;
  if (in.ndim > ndim) return tt_b_fail(b, TT_ERR_RUNTIME, "internal: broadcast to lower rank");
  /* size-1 dims that expand must be dropped first (broadcast_in_dim allows
   * 1 -> n, so a direct map works). */
  for (int i = 0; i < in.ndim; i++) {
    int64_t d = in.dims[i], o = dims[ndim - in.ndim + i];
    if (d != o && d != 1)
      return tt_b_fail(b, TT_ERR_INVALID_ARGUMENT, "cannot broadcast dim %d of size %" PRId64
                       " to %" PRId64, i, d, o);
  }
  return tt_b_broadcast_in_dim(b, x, ndim, dims, NULL);
}

tt_val tt_b_slice(tt_builder *b, tt_val x, const int64_t *start, const int64_t *limit,
                  const int64_t *stride) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape in = b->values[x].shape, out = in;
  int64_t ones[TT_MAX_DIMS];
  bool identity = true;
  for (int i = 0; i < in.ndim; i++) {
    ones[i] = 1;
    int64_t st = stride ? stride[i] : 1;
    if (start[i] < 0 || limit[i] > in.dims[i] || start[i] > limit[i] || st < 1)
      return tt_b_fail(b, TT_ERR_RUNTIME, "internal: bad slice on dim %d", i);
    out.dims[i] = (limit[i] - start[i] + st - 1) / st;
    if (start[i] != 0 || limit[i] != in.dims[i] || st != 1) identity = false;
  }
  if (identity) return x;
  char attrs[640], s1[160], s2[160], s3[160];
  tt_fmt_i64_array(s1, sizeof s1, start, in.ndim);
  tt_fmt_i64_array(s2, sizeof s2, limit, in.ndim);
  tt_fmt_i64_array(s3, sizeof s3, stride ? stride : ones, in.ndim);
  snprintf(attrs, sizeof attrs, "start_indices = %s, limit_indices = %s, strides = %s", s1, s2,
           s3);
  return tt_b_emit1(b, TT_OP_SLICE, &x, 1, attrs, out);
}

tt_val tt_b_concat(tt_builder *b, const tt_val *xs, int n, int dim) {
  if (n == 1) return xs[0];
  for (int i = 0; i < n; i++)
    if (!valid(b, xs[i])) return TT_INVALID;
  tt_shape out = b->values[xs[0]].shape;
  out.dims[dim] = 0;
  for (int i = 0; i < n; i++) out.dims[dim] += b->values[xs[i]].shape.dims[dim];
  char attrs[64];
  snprintf(attrs, sizeof attrs, "dimension = %d : i64", dim);
  return tt_b_emit1(b, TT_OP_CONCATENATE, xs, n, attrs, out);
}

tt_val tt_b_iota(tt_builder *b, tt_shape shape, int dim) {
  char attrs[64];
  snprintf(attrs, sizeof attrs, "iota_dimension = %d : i64", dim);
  return tt_b_emit1(b, TT_OP_IOTA, NULL, 0, attrs, shape);
}

tt_val tt_b_pad(tt_builder *b, tt_val x, tt_val pad_value, const int64_t *low,
                const int64_t *high, const int64_t *interior) {
  if (!valid(b, x) || !valid(b, pad_value)) return TT_INVALID;
  tt_shape in = b->values[x].shape, out = in;
  int64_t zeros[TT_MAX_DIMS] = {0};
  if (!interior) interior = zeros;
  for (int i = 0; i < in.ndim; i++) {
    int64_t base = in.dims[i] == 0 ? 0 : in.dims[i] + (in.dims[i] - 1) * interior[i];
    out.dims[i] = base + low[i] + high[i];
  }
  char attrs[640], s1[160], s2[160], s3[160];
  tt_fmt_i64_array(s1, sizeof s1, low, in.ndim);
  tt_fmt_i64_array(s2, sizeof s2, high, in.ndim);
  tt_fmt_i64_array(s3, sizeof s3, interior, in.ndim);
  snprintf(attrs, sizeof attrs, "edge_padding_low = %s, edge_padding_high = %s, interior_padding = %s",
           s1, s2, s3);
  tt_val ins[2] = {x, pad_value};
  return tt_b_emit1(b, TT_OP_PAD, ins, 2, attrs, out);
}

void tt_b_region_binary(char *buf, size_t size, tt_dtype dt, const char *op) {
  char ty[64];
  tt_shape sc = tt_shape_scalar(dt);
  tt_shape_print(&sc, ty, sizeof ty);
  if (!op) {
    snprintf(buf, size, "    ^bb0(%%lhs: %s, %%rhs: %s):\n      \"stablehlo.return\"(%%rhs) : (%s) -> ()",
             ty, ty, ty);
    return;
  }
  snprintf(buf, size,
           "    ^bb0(%%lhs: %s, %%rhs: %s):\n"
           "      %%res = \"stablehlo.%s\"(%%lhs, %%rhs) : (%s, %s) -> %s\n"
           "      \"stablehlo.return\"(%%res) : (%s) -> ()",
           ty, ty, op, ty, ty, ty, ty);
}

tt_val tt_b_reduce(tt_builder *b, tt_val x, tt_val init, const int64_t *dims, int n_dims,
                   const char *body_op) {
  if (!valid(b, x) || !valid(b, init)) return TT_INVALID;
  tt_shape in = b->values[x].shape, out;
  out = tt_shape_scalar(in.dtype);
  for (int i = 0; i < in.ndim; i++) {
    bool reduced = false;
    for (int j = 0; j < n_dims; j++)
      if (dims[j] == i) reduced = true;
    if (!reduced) out.dims[out.ndim++] = in.dims[i];
  }
  if (n_dims == 0) return x;
  if (named_op(b, "stablehlo.", body_op) == TT_OP_COUNT) return TT_INVALID;
  char region[512], attrs[200], list[160];
  tt_b_region_binary(region, sizeof region, in.dtype, body_op);
  tt_fmt_i64_array(list, sizeof list, dims, n_dims);
  snprintf(attrs, sizeof attrs, "dimensions = %s", list);
  tt_val ins[2] = {x, init}, r;
  tt_b_emit(b, TT_OP_REDUCE, ins, 2, attrs, region, &out, 1, &r);
  return r;
}

tt_val tt_b_dot_general(tt_builder *b, tt_val lhs, tt_val rhs, int n_batch,
                        const int64_t *lhs_batch, const int64_t *rhs_batch, int n_contract,
                        const int64_t *lhs_contract, const int64_t *rhs_contract,
                        tt_dtype out_dtype) {
  if (!valid(b, lhs) || !valid(b, rhs)) return TT_INVALID;
  tt_shape l = b->values[lhs].shape, r = b->values[rhs].shape;
  tt_shape out = tt_shape_scalar(out_dtype);
  /* result dims: batch, lhs free, rhs free */
  for (int i = 0; i < n_batch; i++) out.dims[out.ndim++] = l.dims[lhs_batch[i]];
  for (int i = 0; i < l.ndim; i++) {
    bool used = false;
    for (int j = 0; j < n_batch; j++) used |= lhs_batch[j] == i;
    for (int j = 0; j < n_contract; j++) used |= lhs_contract[j] == i;
    if (!used) out.dims[out.ndim++] = l.dims[i];
  }
  for (int i = 0; i < r.ndim; i++) {
    bool used = false;
    for (int j = 0; j < n_batch; j++) used |= rhs_batch[j] == i;
    for (int j = 0; j < n_contract; j++) used |= rhs_contract[j] == i;
    if (!used) out.dims[out.ndim++] = r.dims[i];
  }
  char lb[128], rb[128], lc[128], rc[128], attrs[700];
  tt_fmt_i64_list(lb, sizeof lb, lhs_batch, n_batch);
  tt_fmt_i64_list(rb, sizeof rb, rhs_batch, n_batch);
  tt_fmt_i64_list(lc, sizeof lc, lhs_contract, n_contract);
  tt_fmt_i64_list(rc, sizeof rc, rhs_contract, n_contract);
  snprintf(attrs, sizeof attrs,
           "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = %s, "
           "rhs_batching_dimensions = %s, lhs_contracting_dimensions = %s, "
           "rhs_contracting_dimensions = %s>",
           lb, rb, lc, rc);
  tt_val ins[2] = {lhs, rhs};
  return tt_b_emit1(b, TT_OP_DOT_GENERAL, ins, 2, attrs, out);
}

tt_val tt_b_dynamic_slice(tt_builder *b, tt_val x, const tt_val *starts, const int64_t *sizes) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape in = b->values[x].shape, out = in;
  tt_val ins[1 + TT_MAX_DIMS];
  ins[0] = x;
  for (int i = 0; i < in.ndim; i++) {
    out.dims[i] = sizes[i];
    ins[1 + i] = starts[i];
  }
  char attrs[200], list[160];
  tt_fmt_i64_array(list, sizeof list, sizes, in.ndim);
  snprintf(attrs, sizeof attrs, "slice_sizes = %s", list);
  return tt_b_emit1(b, TT_OP_DYNAMIC_SLICE, ins, 1 + in.ndim, attrs, out);
}

tt_val tt_b_dynamic_update_slice(tt_builder *b, tt_val x, tt_val update, const tt_val *starts) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape in = b->values[x].shape;
  tt_val ins[2 + TT_MAX_DIMS];
  ins[0] = x;
  ins[1] = update;
  for (int i = 0; i < in.ndim; i++) ins[2 + i] = starts[i];
  return tt_b_emit1(b, TT_OP_DYNAMIC_UPDATE_SLICE, ins, 2 + in.ndim, NULL, in);
}

/* ------------------------------------------------------------- control flow */

static region_frame *top_frame(tt_builder *b, tt_op op) {
  if (b->n_frames == 0 || b->frames[b->n_frames - 1].op != op) {
    tt_b_fail(b, TT_ERR_RUNTIME, "internal: no open %s", tt_op_get(op)->name);
    return NULL;
  }
  return &b->frames[b->n_frames - 1];
}

/* Opens a region op: checks the operands and remembers the result shapes. */
static region_frame *push_frame(tt_builder *b, tt_op op, const tt_val *ins, int n_ins,
                                const tt_shape *outs, int n_outs) {
  if (b->error) return NULL;
  if (b->n_frames == MAX_FRAMES || n_ins > MAX_CARRIED || n_outs > MAX_CARRIED) {
    tt_b_fail(b, TT_ERR_NOT_IMPLEMENTED, "%s: nesting or carried values beyond the builder's limits",
              tt_op_get(op)->name);
    return NULL;
  }
  for (int i = 0; i < n_ins; i++)
    if (!valid(b, ins[i])) {
      tt_b_fail(b, TT_ERR_RUNTIME, "internal: invalid operand %d to %s", i, tt_op_get(op)->name);
      return NULL;
    }
  region_frame *f = &b->frames[b->n_frames++];
  f->op = op;
  f->n_ins = n_ins;
  f->n_outs = n_outs;
  for (int i = 0; i < n_ins; i++) f->ins[i] = ins[i];
  for (int i = 0; i < n_outs; i++) f->outs[i] = outs[i];
  f->regions.len = f->block.len = 0;
  if (f->regions.data) f->regions.data[0] = '\0';
  if (f->block.data) f->block.data[0] = '\0';
  f->n_blocks = 0;
  f->scope = 0;
  return f;
}

/* Opens the next block of f with arguments of the given shapes (its values
 * written to args). */
static void open_block(tt_builder *b, region_frame *f, const tt_shape *shapes, int n,
                       tt_val *args) {
  f->scope = ++b->next_scope;
  f->block.len = 0;
  text_reserve(&f->block, 0);
  f->block.data[0] = '\0';
  if (n == 0) return;
  text_printf(&f->block, "    ^bb0(");
  for (int i = 0; i < n; i++) {
    char name[24], ty[160];
    snprintf(name, sizeof name, "%%v%d", b->next_ssa++);
    tt_shape_print(&shapes[i], ty, sizeof ty);
    text_printf(&f->block, i ? ", %s: %s" : "%s: %s", name, ty);
    args[i] = add_value(b, name, shapes[i]);
  }
  text_printf(&f->block, "):\n");
}

/* Closes f's open block returning vals, which must have the given shapes. */
static bool close_block(tt_builder *b, region_frame *f, const tt_val *vals, int n,
                        const tt_shape *want) {
  const char *name = tt_op_get(f->op)->name;
  for (int i = 0; i < n; i++) {
    if (!valid(b, vals[i])) {
      tt_b_fail(b, TT_ERR_RUNTIME, "internal: invalid value %d returned from a %s block", i, name);
      return false;
    }
    if (!tt_shape_equal(&b->values[vals[i]].shape, &want[i])) {
      tt_b_fail(b, TT_ERR_RUNTIME, "internal: %s block returns value %d of the wrong type", name, i);
      return false;
    }
  }
  text_buf *out = &f->block;
  text_printf(out, "    \"%s\"(", tt_op_get(TT_OP_RETURN)->name);
  for (int i = 0; i < n; i++) text_printf(out, i ? ", %s" : "%s", b->values[vals[i]].name);
  text_printf(out, ") : (");
  print_types(b, out, vals, n);
  text_printf(out, ") -> ()");
  if (f->n_blocks++) text_printf(&f->regions, "\n    }, {\n");
  text_printf(&f->regions, "%s", f->block.data);
  f->scope = 0;
  return true;
}

/* Pops f and emits its op with the finished regions into the enclosing block. */
static bool pop_frame(tt_builder *b, region_frame *f, tt_val *results) {
  b->n_frames--;
  text_reserve(&f->regions, 0);
  return emit(b, f->op, f->ins, f->n_ins, NULL, f->regions.data, f->n_blocks, f->outs, f->n_outs,
              results);
}

bool tt_b_while_begin(tt_builder *b, const tt_val *init, int n, tt_val *args) {
  tt_shape shapes[MAX_CARRIED];
  for (int i = 0; i < n && i < MAX_CARRIED; i++) shapes[i] = tt_b_shape(b, init[i]);
  region_frame *f = push_frame(b, TT_OP_WHILE, init, n, shapes, n);
  if (!f) return false;
  open_block(b, f, f->outs, n, args);
  return true;
}

bool tt_b_while_body(tt_builder *b, tt_val cond, tt_val *args) {
  region_frame *f = top_frame(b, TT_OP_WHILE);
  if (f && f->n_blocks != 0) tt_b_fail(b, TT_ERR_RUNTIME, "internal: while body opened twice");
  if (b->error) return false;
  tt_shape want = tt_shape_scalar(TT_BOOL);
  if (!close_block(b, f, &cond, 1, &want)) return false;
  open_block(b, f, f->outs, f->n_outs, args);
  return true;
}

bool tt_b_while_end(tt_builder *b, const tt_val *next, tt_val *results) {
  region_frame *f = top_frame(b, TT_OP_WHILE);
  if (f && f->n_blocks != 1) tt_b_fail(b, TT_ERR_RUNTIME, "internal: while ended without a body");
  if (b->error || !close_block(b, f, next, f->n_outs, f->outs)) {
    for (int i = 0; f && i < f->n_outs; i++) results[i] = TT_INVALID;
    return false;
  }
  return pop_frame(b, f, results);
}

bool tt_b_case_begin(tt_builder *b, tt_val index, const tt_shape *outs, int n_outs) {
  if (valid(b, index)) {
    tt_shape s = b->values[index].shape;
    if (s.ndim != 0 || s.dtype != TT_I32) {
      tt_b_fail(b, TT_ERR_RUNTIME, "internal: case index must be a 0-d i32");
      return false;
    }
  }
  region_frame *f = push_frame(b, TT_OP_CASE, &index, 1, outs, n_outs);
  if (!f) return false;
  open_block(b, f, NULL, 0, NULL);
  return true;
}

bool tt_b_case_next(tt_builder *b, const tt_val *vals) {
  region_frame *f = top_frame(b, TT_OP_CASE);
  if (!f || !close_block(b, f, vals, f->n_outs, f->outs)) return false;
  open_block(b, f, NULL, 0, NULL);
  return true;
}

bool tt_b_case_end(tt_builder *b, const tt_val *vals, tt_val *results) {
  region_frame *f = top_frame(b, TT_OP_CASE);
  if (!f || !close_block(b, f, vals, f->n_outs, f->outs)) {
    for (int i = 0; f && i < f->n_outs; i++) results[i] = TT_INVALID;
    return false;
  }
  return pop_frame(b, f, results);
}

/* ------------------------------------------------------- extra functions */

bool tt_b_has_function(const tt_builder *b, const char *symbol) {
  for (int i = 0; i < b->n_funcs; i++)
    if (strcmp(b->func_syms[i], symbol) == 0) return true;
  return false;
}

bool tt_b_add_function(tt_builder *b, const char *symbol, const char *text) {
  if (b->error) return false;
  if (tt_b_has_function(b, symbol)) return true;
  if (b->n_funcs == b->cap_funcs) {
    int cap = b->cap_funcs ? b->cap_funcs * 2 : 4;
    char **syms = realloc(b->func_syms, (size_t)cap * sizeof *syms);
    if (!syms) abort();
    b->func_syms = syms;
    b->cap_funcs = cap;
  }
  char *copy = strdup(symbol);
  if (!copy) abort();
  b->func_syms[b->n_funcs++] = copy;
  text_printf(&b->funcs, "%s\n", text);
  return true;
}

bool tt_b_call(tt_builder *b, const char *symbol, const tt_val *ins, int n_ins,
               const tt_shape *outs, int n_outs, tt_val *results) {
  for (int i = 0; i < n_outs; i++) results[i] = TT_INVALID;
  if (b->error) return false;
  if (!tt_b_has_function(b, symbol)) {
    tt_b_fail(b, TT_ERR_RUNTIME, "internal: call of @%s, which the module does not define", symbol);
    return false;
  }
  if (n_outs < 1) {
    tt_b_fail(b, TT_ERR_RUNTIME, "internal: call of @%s with no results", symbol);
    return false;
  }
  size_t size = strlen(symbol) + 16;
  char *attrs = malloc(size);
  if (!attrs) abort();
  snprintf(attrs, size, "callee = @%s", symbol);
  bool ok = emit(b, TT_OP_FUNC_CALL, ins, n_ins, attrs, NULL, 0, outs, n_outs, results);
  free(attrs);
  return ok;
}

/* ------------------------------------------------------------- finish */

tt_error *tt_b_finish(tt_builder *b, const tt_val *outs, int n_outs, char **text) {
  *text = NULL;
  for (int i = 0; i < n_outs; i++)
    if (!b->error && !valid(b, outs[i]))
      tt_b_fail(b, TT_ERR_RUNTIME, "internal: invalid program output %d", i);
  if (!b->error && b->n_frames)
    tt_b_fail(b, TT_ERR_RUNTIME, "internal: %s left open", tt_op_get(b->frames[b->n_frames - 1].op)->name);
  if (b->error) return tt_b_take_error(b);
  text_buf t = {0};
  char ty[160];
  text_printf(&t, "module @tt_program attributes {mhlo.num_partitions = 1 : i32, "
                  "mhlo.num_replicas = 1 : i32} {\n  func.func public @main(");
  for (int i = 0; i < b->n_params; i++) {
    tt_shape_print(&b->values[b->param_values[i]].shape, ty, sizeof ty);
    text_printf(&t, i ? ", %%arg%d: %s" : "%%arg%d: %s", i, ty);
    if (b->param_alias[i] >= 0)
      text_printf(&t, " {tf.aliasing_output = %d : i32}", b->param_alias[i]);
  }
  text_printf(&t, ") -> (");
  for (int i = 0; i < n_outs; i++) {
    tt_shape_print(&b->values[outs[i]].shape, ty, sizeof ty);
    text_printf(&t, i ? ", %s" : "%s", ty);
  }
  text_printf(&t, ") {\n%s    \"func.return\"(", b->body.data ? b->body.data : "");
  for (int i = 0; i < n_outs; i++) text_printf(&t, i ? ", %s" : "%s", b->values[outs[i]].name);
  text_printf(&t, ") : (");
  for (int i = 0; i < n_outs; i++) {
    tt_shape_print(&b->values[outs[i]].shape, ty, sizeof ty);
    text_printf(&t, i ? ", %s" : "%s", ty);
  }
  text_printf(&t, ") -> ()\n  }\n%s}\n", b->funcs.data ? b->funcs.data : "");
  *text = t.data;
  return NULL;
}
