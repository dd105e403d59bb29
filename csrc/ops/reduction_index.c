/* Lowerings of the reduction_index family (see lowering.h): reductions with
 * indices (max.dim/min.dim, argmax/argmin) and the sort family: sort, topk,
 * kthvalue, median/nanmedian, mode. Split out of reduction.c.
 *
 * Sorting is stable (NaN largest). Where CPU breaks ties by quickselect or
 * an unstable std::sort (topk, kthvalue, median.dim, mode, long unstable
 * sorts), values match but the index chosen among equal values may differ. */
#include "ops/reduction_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ max / min with indices, argmax / argmin */

/* Variadic reduce of (values, i64 indices) over `dim` of x, keeping the max
 * (or min) with the smallest index; NaN counts as the largest (smallest). */
static void arg_reduce(tt_builder *b, tt_val x, int dim, bool is_max, tt_val *val, tt_val *idx) {
  tt_shape s = tt_b_shape(b, x);
  tt_dtype dt = s.dtype;
  tt_shape is = s;
  is.dtype = TT_I64;
  tt_val iota = tt_b_iota(b, is, dim);
  tt_val init_v = is_max ? (dt == TT_I64 ? tt_b_constant_int(b, dt, INT64_MIN)
                                         : tt_b_constant(b, dt, tt_dtype_lowest(dt)))
                         : (dt == TT_I64 ? tt_b_constant_int(b, dt, INT64_MAX)
                                         : tt_b_constant(b, dt, tt_dtype_highest(dt)));
  tt_val init_i = tt_b_constant_int(b, TT_I64, 0);
  char ty[64], ity[64], bty[64];
  tt_shape sc = tt_shape_scalar(dt), isc = tt_shape_scalar(TT_I64), bsc = tt_shape_scalar(TT_BOOL);
  tt_shape_print(&sc, ty, sizeof ty);
  tt_shape_print(&isc, ity, sizeof ity);
  tt_shape_print(&bsc, bty, sizeof bty);
  const char *ctype = tt_dtype_is_floating(dt) ? "FLOAT" : (tt_dtype_is_signed(dt) ? "SIGNED" : "UNSIGNED");
#define CMP(out, dir, l, r, t, ct)                                                              \
  off += (size_t)snprintf(region + off, sizeof region - off,                                   \
                          "      %%" out " = \"stablehlo.compare\"(%%" l ", %%" r ") "          \
                          "{comparison_direction = #stablehlo<comparison_direction %s>, "     \
                          "compare_type = #stablehlo<comparison_type %s>} : (%s, %s) -> %s\n", \
                          dir, ct, t, t, bty)
#define BIN(out, op, l, r)                                                                   \
  off += (size_t)snprintf(region + off, sizeof region - off,                                \
                          "      %%" out " = \"stablehlo." op "\"(%%" l ", %%" r ") : (%s, %s) -> %s\n", \
                          bty, bty, bty)
  char region[4096];
  size_t off = 0;
  off += (size_t)snprintf(region + off, sizeof region - off,
                          "    ^bb0(%%av: %s, %%ai: %s, %%bv: %s, %%bi: %s):\n", ty, ity, ty, ity);
  CMP("gt", is_max ? "GT" : "LT", "av", "bv", ty, ctype);
  CMP("eq", "EQ", "av", "bv", ty, ctype);
  if (tt_dtype_is_floating(dt)) {
    CMP("an", "NE", "av", "av", ty, ctype);
    CMP("bn", "NE", "bv", "bv", ty, ctype);
    off += (size_t)snprintf(region + off, sizeof region - off,
                            "      %%nbn = \"stablehlo.not\"(%%bn) : (%s) -> %s\n", bty, bty);
    BIN("anb", "and", "an", "nbn");
    BIN("gt2", "or", "gt", "anb");
    BIN("both", "and", "an", "bn");
    BIN("eq2", "or", "eq", "both");
  } else {
    BIN("gt2", "or", "gt", "gt");
    BIN("eq2", "or", "eq", "eq");
  }
  CMP("il", "LT", "ai", "bi", ity, "SIGNED");
  BIN("ei", "and", "eq2", "il");
  BIN("pick", "or", "gt2", "ei");
  off += (size_t)snprintf(region + off, sizeof region - off,
                          "      %%rv = \"stablehlo.select\"(%%pick, %%av, %%bv) : (%s, %s, %s) -> %s\n"
                          "      %%ri = \"stablehlo.select\"(%%pick, %%ai, %%bi) : (%s, %s, %s) -> %s\n"
                          "      \"stablehlo.return\"(%%rv, %%ri) : (%s, %s) -> ()",
                          bty, ty, ty, ty, bty, ity, ity, ity, ty, ity);
#undef CMP
#undef BIN
  tt_shape outs[2];
  outs[0] = tt_shape_scalar(dt);
  for (int i = 0; i < s.ndim; i++)
    if (i != dim) outs[0].dims[outs[0].ndim++] = s.dims[i];
  outs[1] = outs[0];
  outs[1].dtype = TT_I64;
  char attrs[64];
  snprintf(attrs, sizeof attrs, "dimensions = array<i64: %d>", dim);
  tt_val ins[4] = {x, iota, init_v, init_i}, res[2];
  tt_b_emit(b, TT_OP_REDUCE, ins, 4, attrs, region, outs, 2, res);
  *val = res[0];
  *idx = res[1];
}

/* max.dim / min.dim (self, dim, keepdim) -> (values, indices) */
static tt_error *extreme_dim(tt_lower_ctx *c, bool is_max) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  if (!red_plan_dims(c, r, 1, false, tt_lc_bool(c, 2, false), &p)) return red_builder_error(c);
  TT_TRY(red_require_nonempty(c, is_max ? "max" : "min", &p, true));
  tt_val x = tt_lc_tensor(c, 0);
  if (p.n == 0) { /* 0-d input */
    tt_lc_output(c, x);
    tt_lc_output(c, tt_b_constant_int(b, TT_I64, 0));
    return NULL;
  }
  tt_val v, i;
  arg_reduce(b, x, (int)p.dims[0], is_max, &v, &i);
  tt_lc_output(c, red_finish(b, v, &p));
  tt_lc_output(c, red_finish(b, i, &p));
  return NULL;
}

static tt_error *lower_max_dim(tt_lower_ctx *c) { return extreme_dim(c, true); }
static tt_error *lower_min_dim(tt_lower_ctx *c) { return extreme_dim(c, false); }

/* argmax / argmin (self, dim=None, keepdim) */
static tt_error *arg_extreme(tt_lower_ctx *c, bool is_max) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  const char *name = is_max ? "argmax" : "argmin";
  if (r->dtype == TT_BOOL)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s(): does not support bool input", name);
  bool keepdim = tt_lc_bool(c, 2, false);
  bool no_dim = tt_lc_is_none(c, 1);
  rplan p;
  if (!red_plan_dims(c, r, no_dim ? -1 : 1, false, keepdim, &p)) return red_builder_error(c);
  if (no_dim && p.count == 0) /* CPU raises IndexError here, with a shorter message than max() */
    return tt_lc_fail(c, TT_ERR_INDEX,
                      "%s(): Expected reduction dim to be specified for input.numel() == 0.", name);
  TT_TRY(red_require_nonempty(c, name, &p, !no_dim));
  tt_val x = tt_lc_tensor(c, 0);
  if (p.n == 0) {
    tt_lc_output(c, tt_b_full(b, tt_shape_make(TT_I64, p.out_ndim, p.out), 0));
    return NULL;
  }
  int dim = (int)p.dims[0];
  if (no_dim) {
    int64_t n = 1;
    for (int k = 0; k < r->ndim; k++) n *= r->sizes[k];
    x = tt_b_reshape(b, x, 1, &n);
    dim = 0;
  }
  tt_val v, i;
  arg_reduce(b, x, dim, is_max, &v, &i);
  (void)v;
  tt_lc_output(c, red_finish(b, i, &p));
  return NULL;
}

static tt_error *lower_argmax(tt_lower_ctx *c) { return arg_extreme(c, true); }
static tt_error *lower_argmin(tt_lower_ctx *c) { return arg_extreme(c, false); }

/* ------------------------------------------------------------ sort family */

static const char *cmp_kind(tt_dtype dt) {
  return tt_dtype_is_floating(dt) ? "FLOAT" : (tt_dtype_is_signed(dt) ? "SIGNED" : "UNSIGNED");
}

static void scalar_ty(tt_dtype dt, char *buf, size_t n) {
  tt_shape s = tt_shape_scalar(dt);
  tt_shape_print(&s, buf, n);
}

/* Appends `%out = compare(%l, %r)` to a region. */
static size_t rg_cmp(char *rg, size_t off, size_t size, const char *out, const char *dir,
                     const char *l, const char *r, tt_dtype dt) {
  char ty[64];
  scalar_ty(dt, ty, sizeof ty);
  return off + (size_t)snprintf(rg + off, size - off,
                                "      %%%s = \"stablehlo.compare\"(%%%s, %%%s) "
                                "{comparison_direction = #stablehlo<comparison_direction %s>, "
                                "compare_type = #stablehlo<comparison_type %s>} : (%s, %s) -> tensor<i1>\n",
                                out, l, r, dir, cmp_kind(dt), ty, ty);
}

/* Appends `%out = op(%l, %r)` (or `not(%l)` when r is NULL) on i1 values. */
static size_t rg_bool(char *rg, size_t off, size_t size, const char *out, const char *op,
                      const char *l, const char *r) {
  if (!r)
    return off + (size_t)snprintf(rg + off, size - off,
                                  "      %%%s = \"stablehlo.%s\"(%%%s) : (tensor<i1>) -> tensor<i1>\n",
                                  out, op, l);
  return off + (size_t)snprintf(rg + off, size - off,
                                "      %%%s = \"stablehlo.%s\"(%%%s, %%%s) : (tensor<i1>, tensor<i1>) -> tensor<i1>\n",
                                out, op, l, r);
}

/* Stable sort of x along dim; NaN sorts as the largest value (like torch),
 * -0.0 and 0.0 compare equal. Returns values and int64 source indices. */
static void sort_along(tt_builder *b, tt_val x, int dim, bool desc, tt_val *vals, tt_val *idx) {
  tt_shape s = tt_b_shape(b, x);
  tt_dtype dt = s.dtype;
  tt_dtype kt = dt == TT_BOOL ? TT_U8 : dt;
  tt_val keys = tt_b_convert(b, x, kt);
  tt_shape is = s, ks = s;
  is.dtype = TT_I64;
  ks.dtype = kt;
  tt_val iota = tt_b_iota(b, is, dim);
  char ty[64], rg[4096];
  scalar_ty(kt, ty, sizeof ty);
  size_t off = (size_t)snprintf(rg, sizeof rg,
                                "    ^bb0(%%a: %s, %%b: %s, %%ai: tensor<i64>, %%bi: tensor<i64>):\n",
                                ty, ty);
  off = rg_cmp(rg, off, sizeof rg, "c", desc ? "GT" : "LT", "a", "b", kt);
  const char *res = "c";
  if (tt_dtype_is_floating(kt)) {
    off = rg_cmp(rg, off, sizeof rg, "an", "NE", "a", "a", kt);
    off = rg_cmp(rg, off, sizeof rg, "bn", "NE", "b", "b", kt);
    /* ascending: a < b or (a not NaN and b NaN); descending: a > b or (a NaN, b not) */
    off = rg_bool(rg, off, sizeof rg, "nx", "not", desc ? "bn" : "an", NULL);
    off = rg_bool(rg, off, sizeof rg, "x", "and", "nx", desc ? "an" : "bn");
    off = rg_bool(rg, off, sizeof rg, "r", "or", "c", "x");
    res = "r";
  }
  snprintf(rg + off, sizeof rg - off, "      \"stablehlo.return\"(%%%s) : (tensor<i1>) -> ()", res);
  char attrs[96];
  snprintf(attrs, sizeof attrs, "dimension = %d : i64, is_stable = true", dim);
  tt_shape outs[2] = {ks, is};
  tt_val ins[2] = {keys, iota}, r[2];
  tt_b_emit(b, TT_OP_SORT, ins, 2, attrs, rg, outs, 2, r);
  *vals = tt_b_convert(b, r[0], dt);
  *idx = r[1];
}

/* x[..., pos, ...] along dim, where pos (int64) has x's shape without dim. */
static tt_val take_at(tt_builder *b, tt_val x, int dim, tt_val pos) {
  tt_shape s = tt_b_shape(b, x), ps = tt_b_shape(b, pos);
  int nd = s.ndim;
  int64_t idims[TT_MAX_DIMS], ones[TT_MAX_DIMS], all[TT_MAX_DIMS];
  memcpy(idims, ps.dims, sizeof(int64_t) * (size_t)ps.ndim);
  idims[nd - 1] = 1;
  tt_val parts[TT_MAX_DIMS];
  for (int d = 0; d < nd; d++) {
    ones[d] = 1;
    all[d] = d;
    tt_val v = d == dim ? pos : tt_b_iota(b, tt_shape_make(TT_I64, ps.ndim, ps.dims), d < dim ? d : d - 1);
    parts[d] = tt_b_reshape(b, v, nd, idims);
  }
  tt_val ind = nd == 1 ? parts[0] : tt_b_concat(b, parts, nd, nd - 1);
  char lst[200], arr[200], attrs[1024];
  tt_fmt_i64_list(lst, sizeof lst, all, nd);
  tt_fmt_i64_array(arr, sizeof arr, ones, nd);
  snprintf(attrs, sizeof attrs,
           "dimension_numbers = #stablehlo.gather<collapsed_slice_dims = %s, start_index_map = %s, "
           "index_vector_dim = %d>, slice_sizes = %s, indices_are_sorted = false",
           lst, lst, nd - 1, arr);
  tt_val ins[2] = {x, ind};
  return tt_b_emit1(b, TT_OP_GATHER, ins, 2, attrs, tt_shape_make(s.dtype, ps.ndim, ps.dims));
}

/* sort(self, dim=-1, descending) / sort.stable(self, *, stable, dim=-1, descending).
 * Always stable: CPU's stable order for ties (its unstable sort also keeps
 * it for short rows). */
static tt_error *lower_sort(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  int dim_arg = tt_lc_kind(c, 1) == TT_ARG_INT ? 1 : 2;
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, dim_arg, -1), r->ndim);
  if (dim < 0) return red_builder_error(c);
  bool desc = tt_lc_bool(c, dim_arg + 1, false);
  tt_val x = tt_lc_tensor(c, 0);
  if (r->ndim == 0 || r->sizes[dim] <= 1) {
    tt_lc_output(c, x);
    tt_lc_output(c, red_zero_idx(b, x));
    return NULL;
  }
  tt_val v, i;
  sort_along(b, x, (int)dim, desc, &v, &i);
  tt_lc_output(c, v);
  tt_lc_output(c, i);
  return NULL;
}

/* topk(self, k, dim=-1, largest, sorted) */
static tt_error *lower_topk(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  int64_t k = tt_lc_int(c, 1, 0);
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, -1), r->ndim);
  if (dim < 0) return red_builder_error(c);
  bool largest = tt_lc_bool(c, 3, true), sorted = tt_lc_bool(c, 4, true);
  int64_t n = r->ndim ? r->sizes[dim] : 1;
  if (k < 0 || k > n) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "selected index k out of range");
  /* CPU leaves unsorted results in nth_element order unless it partial-sorts */
  if (!sorted && k > 1 && k * 64 > n) return tt_lc_decline(c, "topk(sorted=False) order");
  if (r->ndim == 0 && k == 0) return tt_lc_decline(c, "empty topk of a scalar");
  tt_val x = tt_lc_tensor(c, 0), v = x, i;
  if (r->ndim == 0 || n <= 1) {
    i = red_zero_idx(b, x);
  } else {
    sort_along(b, x, (int)dim, largest, &v, &i);
  }
  if (r->ndim > 0 && k < n) {
    v = tt_slice_dim(b, v, (int)dim, 0, k);
    i = tt_slice_dim(b, i, (int)dim, 0, k);
  }
  tt_lc_output(c, v);
  tt_lc_output(c, i);
  return NULL;
}

/* Shared tail of value-selecting ops along one dim (kthvalue, median,
 * mode): picks position pos (x's shape without dim) of the sorted values
 * and indices, then reshapes for keepdim. */
static void output_picked(tt_lower_ctx *c, tt_val sv, tt_val si, int dim, tt_val pos, const rplan *p) {
  tt_builder *b = tt_lc_builder(c);
  tt_shape s = tt_b_shape(b, sv);
  int64_t numel = 1;
  for (int i = 0; i < s.ndim; i++) numel *= s.dims[i];
  if (numel == 0) {
    /* another dim is empty: nothing to pick, and a gather over an empty
     * batch is rejected by the compiler; the (empty) first slice has the shape */
    tt_lc_output(c, red_finish(b, tt_slice_dim(b, sv, dim, 0, 1), p));
    tt_lc_output(c, red_finish(b, tt_slice_dim(b, si, dim, 0, 1), p));
    return;
  }
  tt_lc_output(c, red_finish(b, take_at(b, sv, dim, pos), p));
  tt_lc_output(c, red_finish(b, take_at(b, si, dim, pos), p));
}

/* Plan for a single-dim value-selecting reduction (self, dim, keepdim). */
static tt_error *one_dim_plan(tt_lower_ctx *c, int dim_arg, int keep_arg, const char *name, rplan *p) {
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!red_plan_dims(c, r, dim_arg, false, tt_lc_bool(c, keep_arg, false), p)) return red_builder_error(c);
  return red_require_nonempty(c, name, p, true);
}

/* kthvalue(self, k, dim=-1, keepdim) */
static tt_error *lower_kthvalue(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  TT_TRY(one_dim_plan(c, 2, 3, "kthvalue", &p));
  int64_t k = tt_lc_int(c, 1, 1);
  int64_t dim = p.n ? p.dims[0] : 0, n = r->ndim ? r->sizes[dim] : 1;
  if (k < 1 || k > n)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "kthvalue(): selected number k out of range for dimension %" PRId64, dim);
  tt_val x = tt_lc_tensor(c, 0);
  if (p.n == 0) {
    tt_lc_output(c, x);
    tt_lc_output(c, red_zero_idx(b, x));
    return NULL;
  }
  tt_val v, i;
  sort_along(b, x, (int)dim, false, &v, &i);
  tt_lc_output(c, red_finish(b, tt_slice_dim(b, v, (int)dim, k - 1, k), &p));
  tt_lc_output(c, red_finish(b, tt_slice_dim(b, i, (int)dim, k - 1, k), &p));
  return NULL;
}

/* Number of NaNs along dim (int64), x's shape without dim. */
static tt_val nan_count(tt_builder *b, tt_val x, int dim) {
  tt_val isn = tt_b_convert(b, tt_b_compare(b, "NE", x, x), TT_I64);
  int64_t d = dim;
  return tt_b_reduce(b, isn, tt_b_constant_int(b, TT_I64, 0), &d, 1, "add");
}

/* median(self) / nanmedian(self): lower median of all elements;
 * .dim(self, dim, keepdim) -> (values, indices). median returns the first
 * NaN if there is one (like CPU); nanmedian ignores NaNs. */
static tt_error *median_impl(tt_lower_ctx *c, bool ignore_nan) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  bool has_dim = tt_lc_kind(c, 1) == TT_ARG_INT;
  tt_val x = tt_lc_tensor(c, 0);
  rplan p;
  int dim = 0;
  if (!has_dim) {
    int64_t numel = 1;
    for (int i = 0; i < r->ndim; i++) numel *= r->sizes[i];
    if (numel == 0) return tt_lc_decline(c, "median of an empty tensor");
    x = tt_b_reshape(b, x, 1, &numel);
    red_plan_all(&p, 1, &numel, false);
  } else {
    TT_TRY(one_dim_plan(c, 1, 2, ignore_nan ? "nanmedian" : "median", &p));
    if (p.n == 0) {
      tt_lc_output(c, x);
      tt_lc_output(c, red_zero_idx(b, x));
      return NULL;
    }
    dim = (int)p.dims[0];
  }
  int64_t n = p.in[dim];
  tt_val sv, si;
  sort_along(b, x, dim, false, &sv, &si);
  tt_shape rs = tt_b_shape(b, sv);
  for (int i = dim; i + 1 < rs.ndim; i++) rs.dims[i] = rs.dims[i + 1];
  rs.ndim--;
  rs.dtype = TT_I64;
  tt_val pos = tt_b_full(b, rs, (double)((n - 1) / 2));
  if (tt_dtype_is_floating(r->dtype)) {
    tt_val cnt = nan_count(b, x, dim);
    tt_val left = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_full(b, rs, (double)n), cnt);
    if (ignore_nan) {
      /* (n - nan - 1) / 2, truncating like C (all NaN -> position 0) */
      pos = tt_b_bin(b, TT_OP_DIVIDE, tt_b_bin(b, TT_OP_SUBTRACT, left, tt_b_full(b, rs, 1)),
                        tt_b_full(b, rs, 2));
    } else {
      pos = tt_b_select(b, tt_b_compare(b, "GT", cnt, tt_b_full(b, rs, 0)), left, pos);
    }
  }
  if (!has_dim) {
    tt_lc_output(c, take_at(b, sv, dim, pos));
    return NULL;
  }
  output_picked(c, sv, si, dim, pos, &p);
  return NULL;
}

static tt_error *lower_median(tt_lower_ctx *c) { return median_impl(c, false); }
static tt_error *lower_nanmedian(tt_lower_ctx *c) { return median_impl(c, true); }

/* Inclusive running maximum of an int64 x along dim (values >= 0). */
static tt_val scan_max_i64(tt_builder *b, tt_val x, int dim) {
  int64_t n = tt_b_shape(b, x).dims[dim];
  for (int64_t sh = 1; sh < n; sh *= 2) {
    int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0};
    lo[dim] = sh;
    tt_val prev = tt_b_pad(b, tt_slice_dim(b, x, dim, 0, n - sh), tt_b_constant_int(b, TT_I64, 0), lo, hi, NULL);
    x = tt_b_bin(b, TT_OP_MAXIMUM, x, prev);
  }
  return x;
}

/* mode(self, dim=-1, keepdim): the smallest of the most frequent values and
 * the index of its last occurrence (CPU's order for rows it sorts stably). */
static tt_error *lower_mode(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  /* mode.values: CPU requires values of self's dtype and int64 indices */
  for (int i = 0, k = 0; i < tt_lc_nargs(c); i++) {
    const tt_arg *a = tt_lc_arg(c, i);
    if (!a || !a->written || a->kind != TT_ARG_TENSOR) continue;
    tt_dtype want = k == 0 ? r->dtype : TT_I64;
    if (a->u.tensor->dtype != want)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "expected scalar type '%s' but got '%s' for %s output",
                        tt_dtype_torch_name(want), tt_dtype_torch_name(a->u.tensor->dtype),
                        k == 0 ? "values" : "indices");
    k++;
  }
  rplan p;
  TT_TRY(one_dim_plan(c, 1, 2, "mode", &p));
  tt_val x = tt_lc_tensor(c, 0);
  if (p.n == 0) {
    tt_lc_output(c, x);
    tt_lc_output(c, red_zero_idx(b, x));
    return NULL;
  }
  int dim = (int)p.dims[0];
  int64_t n = p.in[dim];
  tt_val sv, si;
  sort_along(b, x, dim, false, &sv, &si);
  tt_shape rs = tt_b_shape(b, sv);
  for (int i = dim; i + 1 < rs.ndim; i++) rs.dims[i] = rs.dims[i + 1];
  rs.ndim--;
  rs.dtype = TT_I64;
  tt_val pos = tt_b_full(b, rs, 0);
  if (n > 1) {
    tt_val k = tt_b_convert(b, sv, r->dtype == TT_BOOL ? TT_U8 : r->dtype);
    tt_val neq = tt_b_compare(b, "NE", tt_slice_dim(b, k, dim, 1, n), tt_slice_dim(b, k, dim, 0, n - 1));
    int64_t one[TT_MAX_DIMS] = {0}, zero[TT_MAX_DIMS] = {0};
    one[dim] = 1;
    tt_val t = tt_b_constant(b, TT_BOOL, 1);
    tt_val start = tt_b_pad(b, neq, t, one, zero, NULL);
    tt_val end = tt_b_pad(b, neq, t, zero, one, NULL);
    tt_shape is = tt_b_shape(b, sv);
    is.dtype = TT_I64;
    tt_val iota = tt_b_iota(b, is, dim);
    tt_val zeros = tt_b_full(b, is, 0);
    tt_val run_start = scan_max_i64(b, tt_b_select(b, start, iota, zeros), dim);
    tt_val len = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_SUBTRACT, iota, run_start), tt_b_full(b, is, 1));
    tt_val freq = tt_b_select(b, end, len, zeros);
    tt_val fv;
    arg_reduce(b, freq, dim, true, &fv, &pos);
  }
  output_picked(c, sv, si, dim, pos, &p);
  return NULL;
}

TT_LOWERINGS(reduction_index) = {
    {lower_max_dim, {"max.dim", "max.dim_max"}},
    {lower_min_dim, {"min.dim", "min.dim_min"}},
    {lower_argmax, {"argmax", "argmax.out"}},
    {lower_argmin, {"argmin", "argmin.out"}},
    {lower_sort, {"sort", "sort.values", "sort.stable", "sort.values_stable"}},
    {lower_topk, {"topk", "topk.values"}},
    {lower_kthvalue, {"kthvalue", "kthvalue.values"}},
    {lower_median, {"median", "median.out", "median.dim", "median.dim_values"}},
    {lower_nanmedian, {"nanmedian", "nanmedian.out", "nanmedian.dim", "nanmedian.dim_values"}},
    {lower_mode, {"mode", "mode.values"}},
    {NULL, {NULL}},
};
