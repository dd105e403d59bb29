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
} value_info;

typedef struct {
  char *data;
  size_t len, cap;
} text_buf;

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
  return b->n_values++;
}

static bool valid(const tt_builder *b, tt_val v) {
  return !b->error && v >= 0 && v < b->n_values;
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

static void print_types(tt_builder *b, const tt_val *ins, int n) {
  char buf[160];
  for (int i = 0; i < n; i++) {
    tt_shape_print(&b->values[ins[i]].shape, buf, sizeof buf);
    text_printf(&b->body, i ? ", %s" : "%s", buf);
  }
}

bool tt_b_op_multi(tt_builder *b, const char *name, const tt_val *ins, int n_ins,
                   const char *attrs, const char *region, const tt_shape *outs, int n_outs,
                   tt_val *results) {
  for (int i = 0; i < n_outs; i++) results[i] = TT_INVALID;
  if (b->error) return false;
  for (int i = 0; i < n_ins; i++)
    if (!valid(b, ins[i])) {
      tt_b_fail(b, TT_ERR_RUNTIME, "internal: invalid operand %d to %s", i, name);
      return false;
    }
  for (int i = 0; i < n_outs; i++)
    if (outs[i].ndim < 0 || outs[i].ndim > TT_MAX_DIMS) {
      tt_b_fail(b, TT_ERR_NOT_IMPLEMENTED, "%s: rank %d unsupported", name, outs[i].ndim);
      return false;
    }
  int id = b->next_ssa++;
  if (n_outs == 1) text_printf(&b->body, "    %%v%d = \"%s\"(", id, name);
  else text_printf(&b->body, "    %%v%d:%d = \"%s\"(", id, n_outs, name);
  for (int i = 0; i < n_ins; i++)
    text_printf(&b->body, i ? ", %s" : "%s", b->values[ins[i]].name);
  text_printf(&b->body, ")");
  if (region) text_printf(&b->body, " ({\n%s\n    })", region);
  if (attrs && attrs[0]) text_printf(&b->body, " {%s}", attrs);
  text_printf(&b->body, " : (");
  print_types(b, ins, n_ins);
  text_printf(&b->body, ") -> ");
  char buf[160];
  if (n_outs != 1) text_printf(&b->body, "(");
  for (int i = 0; i < n_outs; i++) {
    tt_shape_print(&outs[i], buf, sizeof buf);
    text_printf(&b->body, i ? ", %s" : "%s", buf);
  }
  if (n_outs != 1) text_printf(&b->body, ")");
  text_printf(&b->body, "\n");
  for (int i = 0; i < n_outs; i++) {
    char vname[24];
    if (n_outs == 1) snprintf(vname, sizeof vname, "%%v%d", id);
    else snprintf(vname, sizeof vname, "%%v%d#%d", id, i);
    results[i] = add_value(b, vname, outs[i]);
  }
  return true;
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
  return tt_b_op(b, "stablehlo.constant", NULL, 0, attrs, s);
}

tt_val tt_b_constant(tt_builder *b, tt_dtype dt, double value) {
  char lit[48];
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
  if (tt_dtype_is_floating(dt) || dt == TT_BOOL) return tt_b_constant(b, dt, (double)value);
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

tt_val tt_b_unary(tt_builder *b, const char *op, tt_val x) {
  if (!valid(b, x)) return TT_INVALID;
  char name[64];
  snprintf(name, sizeof name, "stablehlo.%s", op);
  return tt_b_op(b, name, &x, 1, NULL, b->values[x].shape);
}

tt_val tt_b_binary(tt_builder *b, const char *op, tt_val x, tt_val y) {
  if (!valid(b, x) || !valid(b, y)) return TT_INVALID;
  tt_shape sx = b->values[x].shape, sy = b->values[y].shape;
  if (!tt_shape_equal(&sx, &sy)) {
    char a[160], c[160];
    tt_shape_print(&sx, a, sizeof a);
    tt_shape_print(&sy, c, sizeof c);
    return tt_b_fail(b, TT_ERR_RUNTIME, "internal: %s operands differ: %s vs %s", op, a, c);
  }
  char name[64];
  snprintf(name, sizeof name, "stablehlo.%s", op);
  tt_val ins[2] = {x, y};
  return tt_b_op(b, name, ins, 2, NULL, sx);
}

tt_val tt_b_compare(tt_builder *b, const char *direction, tt_val x, tt_val y) {
  if (!valid(b, x) || !valid(b, y)) return TT_INVALID;
  tt_shape s = b->values[x].shape;
  const char *type = tt_dtype_is_floating(s.dtype) ? "FLOAT"
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
  return tt_b_op(b, "stablehlo.compare", ins, 2, attrs, s);
}

tt_val tt_b_select(tt_builder *b, tt_val pred, tt_val on_true, tt_val on_false) {
  if (!valid(b, pred) || !valid(b, on_true) || !valid(b, on_false)) return TT_INVALID;
  tt_val ins[3] = {pred, on_true, on_false};
  return tt_b_op(b, "stablehlo.select", ins, 3, NULL, b->values[on_true].shape);
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
  s.dtype = dt;
  return tt_b_op(b, "stablehlo.convert", &x, 1, NULL, s);
}

tt_val tt_b_bitcast(tt_builder *b, tt_val x, tt_shape out) {
  return tt_b_op(b, "stablehlo.bitcast_convert", &x, 1, NULL, out);
}

/* ------------------------------------------------------------- shape ops */

tt_val tt_b_reshape(tt_builder *b, tt_val x, int ndim, const int64_t *dims) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape s = tt_shape_make(b->values[x].shape.dtype, ndim, dims);
  if (tt_shape_numel(&s) != tt_shape_numel(&b->values[x].shape))
    return tt_b_fail(b, TT_ERR_RUNTIME, "internal: reshape changes element count");
  if (tt_shape_equal(&s, &b->values[x].shape)) return x;
  return tt_b_op(b, "stablehlo.reshape", &x, 1, NULL, s);
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
  return tt_b_op(b, "stablehlo.transpose", &x, 1, attrs, out);
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
  return tt_b_op(b, "stablehlo.broadcast_in_dim", &x, 1, attrs, out);
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
  return tt_b_op(b, "stablehlo.slice", &x, 1, attrs, out);
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
  return tt_b_op(b, "stablehlo.concatenate", xs, n, attrs, out);
}

tt_val tt_b_iota(tt_builder *b, tt_shape shape, int dim) {
  char attrs[64];
  snprintf(attrs, sizeof attrs, "iota_dimension = %d : i64", dim);
  return tt_b_op(b, "stablehlo.iota", NULL, 0, attrs, shape);
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
  return tt_b_op(b, "stablehlo.pad", ins, 2, attrs, out);
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
  char region[512], attrs[200], list[160];
  tt_b_region_binary(region, sizeof region, in.dtype, body_op);
  tt_fmt_i64_array(list, sizeof list, dims, n_dims);
  snprintf(attrs, sizeof attrs, "dimensions = %s", list);
  tt_val ins[2] = {x, init}, r;
  tt_b_op_multi(b, "stablehlo.reduce", ins, 2, attrs, region, &out, 1, &r);
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
  return tt_b_op(b, "stablehlo.dot_general", ins, 2, attrs, out);
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
  return tt_b_op(b, "stablehlo.dynamic_slice", ins, 1 + in.ndim, attrs, out);
}

tt_val tt_b_dynamic_update_slice(tt_builder *b, tt_val x, tt_val update, const tt_val *starts) {
  if (!valid(b, x)) return TT_INVALID;
  tt_shape in = b->values[x].shape;
  tt_val ins[2 + TT_MAX_DIMS];
  ins[0] = x;
  ins[1] = update;
  for (int i = 0; i < in.ndim; i++) ins[2 + i] = starts[i];
  return tt_b_op(b, "stablehlo.dynamic_update_slice", ins, 2 + in.ndim, NULL, in);
}

/* ------------------------------------------------------------- finish */

tt_error *tt_b_finish(tt_builder *b, const tt_val *outs, int n_outs, char **text) {
  *text = NULL;
  for (int i = 0; i < n_outs; i++)
    if (!b->error && !valid(b, outs[i]))
      tt_b_fail(b, TT_ERR_RUNTIME, "internal: invalid program output %d", i);
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
  text_printf(&t, ") -> ()\n  }\n}\n");
  *text = t.data;
  return NULL;
}
