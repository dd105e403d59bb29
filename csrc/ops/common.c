#include "ops/common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Priority classes for result_type, as in c10's ResultTypeState. */
enum { PRIO_DIM = 0, PRIO_ZERO_DIM = 1, PRIO_WRAPPED = 2 };

static void result_update(tt_dtype *state, bool *set, tt_dtype dt) {
  *state = *set ? tt_promote(*state, dt) : dt;
  *set = true;
}

/* PyTorch's combine_categories (c10 ResultTypeState): `higher` is the
 * higher-priority class's dtype, `lower` the other's; an unset class is
 * PyTorch's Undefined. A float outranks a complex of lower priority only in
 * precision: float32 [n] with a complex128 zero-dim tensor is complex64. */
static tt_dtype combine_categories(bool hset, tt_dtype higher, bool lset, tt_dtype lower) {
  if (!hset) return lower;
  if (!lset) return higher;
  if (tt_dtype_is_complex(higher)) return higher;
  if (tt_dtype_is_complex(lower))
    return tt_dtype_is_floating(higher) ? tt_dtype_to_complex(higher) : lower;
  if (tt_dtype_is_floating(higher)) return higher;
  if (higher == TT_BOOL || tt_dtype_is_floating(lower)) return tt_promote(higher, lower);
  return higher;
}

tt_dtype tt_result_type(const tt_lower_ctx *c, const int *args, int n) {
  tt_dtype state[3] = {TT_BOOL, TT_BOOL, TT_BOOL};
  bool set[3] = {false, false, false};
  for (int k = 0; k < n; k++) {
    const tt_arg *a = tt_lc_arg(c, args[k]);
    if (!a) continue;
    if (a->kind == TT_ARG_TENSOR) {
      const tt_tensor_ref *r = a->u.tensor;
      int prio = r->wrapped_number ? PRIO_WRAPPED : (r->ndim == 0 ? PRIO_ZERO_DIM : PRIO_DIM);
      tt_dtype dt = r->dtype;
      /* Wrapped numbers contribute their category's default dtype. */
      if (r->wrapped_number)
        dt = tt_dtype_is_complex(dt)    ? tt_dtype_to_complex(TT_DEFAULT_FLOAT) /* a Python complex */
             : tt_dtype_is_floating(dt) ? TT_DEFAULT_FLOAT
                                        : (dt == TT_BOOL ? TT_BOOL : TT_I64);
      result_update(&state[prio], &set[prio], dt);
    } else if (a->kind == TT_ARG_SCALAR) {
      tt_dtype dt = a->u.s.kind == TT_SCALAR_FLOAT ? TT_DEFAULT_FLOAT
                    : a->u.s.kind == TT_SCALAR_INT ? TT_I64 : TT_BOOL;
      result_update(&state[PRIO_WRAPPED], &set[PRIO_WRAPPED], dt);
    }
  }
  /* Combine as PyTorch does: dim with (zero-dim with wrapped). */
  bool zw_set = set[1] || set[2];
  tt_dtype zw = combine_categories(set[1], state[1], set[2], state[2]);
  return set[0] || zw_set ? combine_categories(set[0], state[0], zw_set, zw) : TT_BOOL;
}

bool tt_broadcast_dims(int na, const int64_t *a, int nb, const int64_t *b, int *n_out,
                       int64_t *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  *n_out = n;
  return true;
}

static const int64_t no_dims[1] = {0};

int tt_arg_ndim(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_TENSOR ? a->u.tensor->ndim : 0;
}

const int64_t *tt_arg_dims(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_TENSOR ? a->u.tensor->sizes : no_dims;
}

tt_val tt_operand(tt_lower_ctx *c, int i, tt_dtype dt, int ndim, const int64_t *dims) {
  tt_builder *b = tt_lc_builder(c);
  const tt_arg *a = tt_lc_arg(c, i);
  tt_val v;
  if (a && a->kind == TT_ARG_TENSOR && a->u.tensor->storage) {
    v = tt_b_convert(b, tt_lc_tensor(c, i), dt);
  } else {
    v = tt_lc_scalar(c, i, dt);
  }
  return tt_b_broadcast_to(b, v, ndim, dims);
}

static void format_dims(char *buf, size_t size, int n, const int64_t *d) {
  size_t off = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < n && off < size; i++)
    off += (size_t)snprintf(buf + off, size - off, i ? ", %" PRId64 : "%" PRId64, d[i]);
  if (off < size) snprintf(buf + off, size - off, "]");
}

tt_error *tt_broadcast_args(tt_lower_ctx *c, const int *args, int n, int *ndim, int64_t *dims) {
  *ndim = 0;
  for (int k = 0; k < n; k++) {
    int nd = tt_arg_ndim(c, args[k]);
    const int64_t *d = tt_arg_dims(c, args[k]);
    int64_t out[TT_MAX_DIMS];
    int nout;
    if (!tt_broadcast_dims(*ndim, dims, nd, d, &nout, out)) {
      /* PyTorch: "The size of tensor a (3) must match the size of tensor b (4) at
       * non-singleton dimension 1" */
      int n_max = *ndim > nd ? *ndim : nd;
      for (int j = 0; j < n_max; j++) {
        int ia = *ndim - n_max + j, ib = nd - n_max + j;
        int64_t da = ia >= 0 ? dims[ia] : 1, db = ib >= 0 ? d[ib] : 1;
        if (da != db && da != 1 && db != 1)
          return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                            "The size of tensor a (%" PRId64 ") must match the size of tensor b (%"
                            PRId64 ") at non-singleton dimension %d", da, db, j);
      }
      char sa[128], sb[128];
      format_dims(sa, sizeof sa, *ndim, dims);
      format_dims(sb, sizeof sb, nd, d);
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "shapes %s and %s cannot be broadcast", sa, sb);
    }
    *ndim = nout;
    memcpy(dims, out, sizeof(int64_t) * (size_t)nout);
  }
  return NULL;
}

int64_t tt_wrap_dim(tt_lower_ctx *c, int64_t dim, int ndim) {
  int64_t n = ndim > 0 ? ndim : 1; /* scalars accept dim 0 and -1 */
  if (dim < -n || dim >= n) {
    /* the builder keeps its own copy of the error; the lowering sees it */
    tt_error_free(tt_lc_fail(c, TT_ERR_INDEX,
               "Dimension out of range (expected to be in range of [%" PRId64 ", %" PRId64
               "], but got %" PRId64 ")", -n, n - 1, dim));
    return -1;
  }
  return dim < 0 ? dim + n : dim;
}

double tt_dtype_lowest(tt_dtype dt) {
  switch (dt) {
    case TT_BOOL: return 0;
    case TT_U8: return 0;
    case TT_I8: return -128;
    case TT_I16: return -32768;
    case TT_I32: return -2147483648.0;
    case TT_I64: return -9223372036854775808.0;
    default: return -INFINITY;
  }
}

double tt_dtype_highest(tt_dtype dt) {
  switch (dt) {
    case TT_BOOL: return 1;
    case TT_U8: return 255;
    case TT_I8: return 127;
    case TT_I16: return 32767;
    case TT_I32: return 2147483647.0;
    case TT_I64: return 9223372036854775807.0;
    default: return INFINITY;
  }
}

static tt_val extreme_constant(tt_builder *b, tt_dtype dt, bool highest) {
  if (dt == TT_I64) return tt_b_constant_int(b, dt, highest ? INT64_MAX : INT64_MIN);
  return tt_b_constant(b, dt, highest ? tt_dtype_highest(dt) : tt_dtype_lowest(dt));
}

tt_val tt_sum(tt_builder *b, tt_val x, const int64_t *dims, int n_dims) {
  tt_dtype dt = tt_b_dtype(b, x);
  tt_dtype acc = tt_opmath(dt);
  tt_val xs = tt_b_convert(b, x, acc);
  tt_val r = tt_b_reduce(b, xs, tt_b_constant(b, acc, 0), dims, n_dims,
                         acc == TT_BOOL ? "or" : "add");
  return tt_b_convert(b, r, dt);
}

/* XLA's CPU reduce drops NaN in maximum/minimum; torch propagates it, so a
 * float reduction also ORs an isnan mask and selects NaN where it is set. */
static tt_val propagate_nan(tt_builder *b, tt_val x, tt_val r, const int64_t *dims, int n_dims) {
  tt_dtype dt = tt_b_dtype(b, x);
  if (!tt_dtype_is_floating(dt)) return r;
  tt_val isnan = tt_b_compare(b, "NE", x, x);
  tt_val any = tt_b_reduce(b, isnan, tt_b_constant(b, TT_BOOL, 0), dims, n_dims, "or");
  return tt_b_select(b, any, tt_full_like(b, r, NAN), r);
}

tt_val tt_reduce_max(tt_builder *b, tt_val x, const int64_t *dims, int n_dims) {
  tt_dtype dt = tt_b_dtype(b, x);
  tt_val r = tt_b_reduce(b, x, extreme_constant(b, dt, false), dims, n_dims,
                         dt == TT_BOOL ? "or" : "maximum");
  return propagate_nan(b, x, r, dims, n_dims);
}

tt_val tt_reduce_min(tt_builder *b, tt_val x, const int64_t *dims, int n_dims) {
  tt_dtype dt = tt_b_dtype(b, x);
  tt_val r = tt_b_reduce(b, x, extreme_constant(b, dt, true), dims, n_dims,
                         dt == TT_BOOL ? "and" : "minimum");
  return propagate_nan(b, x, r, dims, n_dims);
}

tt_val tt_full_like(tt_builder *b, tt_val x, double value) {
  return tt_b_full(b, tt_b_shape(b, x), value);
}

/* ------------------------------------------------------------ dtype rules */

bool tt_dtype_is_half(tt_dtype dt) { return dt == TT_F16 || dt == TT_BF16; }

tt_dtype tt_opmath(tt_dtype dt) { return tt_dtype_is_half(dt) ? TT_F32 : dt; }

/* ------------------------------------------------------------ arithmetic */

/* Broadcasts x and y to their common shape, dim by dim from the right (a
 * size-1 dim takes the other's size, 0 included: [0, 3] with [1, 3] is
 * [0, 3], which a choice by element count got wrong). Mismatched sizes are
 * left for tt_b_bin to report. */
tt_val tt_bin(tt_builder *b, tt_op op, tt_val x, tt_val y) {
  tt_shape sx = tt_b_shape(b, x), sy = tt_b_shape(b, y);
  int nd = sx.ndim > sy.ndim ? sx.ndim : sy.ndim;
  int64_t dims[TT_MAX_DIMS];
  bool bx = sx.ndim != nd, by = sy.ndim != nd;
  for (int i = 0; i < nd; i++) {
    int ix = i - (nd - sx.ndim), iy = i - (nd - sy.ndim);
    int64_t dx = ix >= 0 ? sx.dims[ix] : 1, dy = iy >= 0 ? sy.dims[iy] : 1;
    dims[i] = (dx == 1 && dy != 1) ? dy : dx;  /* a mismatch keeps x's */
    if (dx != dims[i]) bx = true;
    if (dy != dims[i]) by = true;
  }
  if (bx) x = tt_b_broadcast_to(b, x, nd, dims);
  if (by) y = tt_b_broadcast_to(b, y, nd, dims);
  return tt_b_bin(b, op, x, y);
}

tt_val tt_add(tt_builder *b, tt_val x, tt_val y) { return tt_bin(b, TT_OP_ADD, x, y); }
tt_val tt_sub(tt_builder *b, tt_val x, tt_val y) { return tt_bin(b, TT_OP_SUBTRACT, x, y); }
tt_val tt_mul(tt_builder *b, tt_val x, tt_val y) { return tt_bin(b, TT_OP_MULTIPLY, x, y); }
tt_val tt_div(tt_builder *b, tt_val x, tt_val y) { return tt_bin(b, TT_OP_DIVIDE, x, y); }

tt_val tt_scalar_like(tt_builder *b, tt_val like, double v) {
  return tt_b_constant(b, tt_b_dtype(b, like), v);
}

/* ------------------------------------------------------------ shapes */

tt_val tt_slice_dim(tt_builder *b, tt_val x, int d, int64_t start, int64_t end) {
  tt_shape s = tt_b_shape(b, x);
  int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS];
  for (int i = 0; i < s.ndim; i++) li[i] = s.dims[i];
  st[d] = start;
  li[d] = end;
  return tt_b_slice(b, x, st, li, NULL);
}

tt_val tt_along(tt_builder *b, tt_val v, int ndim, const int64_t *dims, int axis) {
  int64_t map[1] = {axis};
  return tt_b_broadcast_in_dim(b, v, ndim, dims, map);
}

/* ------------------------------------------------------------ planes */

tt_val tt_scatter_planes(tt_builder *b, tt_val g, tt_val ix, int n_spatial, const int64_t *in,
                         tt_dtype acc, const char *op) {
  tt_shape gs = tt_b_shape(b, g);
  int lead = gs.ndim - n_spatial;
  int64_t plane = 1, planes = 1;
  for (int i = 0; i < n_spatial; i++) plane *= in[i];
  for (int i = 0; i < lead; i++) planes *= gs.dims[i];
  int64_t nout = tt_shape_numel(&gs), total = planes * plane;
  tt_shape is = tt_shape_make(TT_I64, gs.ndim, gs.dims);
  tt_val pl = tt_b_iota(b, is, 0); /* plane number of each element */
  for (int i = 1; i < lead; i++)
    pl = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, pl, tt_b_full(b, is, (double)gs.dims[i])),
                     tt_b_iota(b, is, i));
  tt_val lin = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, pl, tt_b_full(b, is, (double)plane)), ix);
  tt_val bad = tt_b_bin(b, TT_OP_OR, tt_b_compare(b, "LT", ix, tt_b_full(b, is, 0)),
                           tt_b_compare(b, "GE", ix, tt_b_full(b, is, (double)plane)));
  lin = tt_b_select(b, bad, tt_b_full(b, is, (double)total), lin);
  int64_t idims[2] = {nout, 1};
  lin = tt_b_reshape(b, lin, 2, idims);
  tt_val upd = tt_b_reshape(b, g, 1, &nout);
  tt_val base = tt_b_full(b, tt_shape_make(acc, 1, &total), 0);
  char region[600];
  tt_b_region_binary(region, sizeof region, acc, op);
  const char *attrs =
      "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
      "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, "
      "unique_indices = false";
  tt_val ins[3] = {base, lin, upd}, r;
  tt_shape out = tt_shape_make(acc, 1, &total);
  tt_b_emit(b, TT_OP_SCATTER, ins, 3, attrs, region, &out, 1, &r);
  int64_t dims[TT_MAX_DIMS];
  for (int i = 0; i < lead; i++) dims[i] = gs.dims[i];
  for (int i = 0; i < n_spatial; i++) dims[lead + i] = in[i];
  return tt_b_reshape(b, r, lead + n_spatial, dims);
}
