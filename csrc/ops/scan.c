/* Lowerings of the scan family (see lowering.h): cumsum/cumprod, cummax/
 * cummin and logcumsumexp along one dim. Split out of reduction.c; shared
 * helpers are in reduction_common.c. */
#include "ops/reduction_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ cumsum / cumprod */

/* Inclusive scan of x along dim with body op ("add"/"multiply"). Short
 * dims use one reduce_window; long ones a log-step shift-and-combine scan. */
static tt_val scan(tt_builder *b, tt_val x, int dim, const char *op) {
  tt_shape s = tt_b_shape(b, x);
  int64_t n = s.dims[dim];
  if (n <= 1) return x;
  double ident = op[0] == 'a' ? 0 : 1;
  if (n > 64) {
    for (int64_t sh = 1; sh < n; sh *= 2) {
      int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS], lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0};
      memcpy(li, s.dims, sizeof li);
      li[dim] = n - sh;
      lo[dim] = sh;
      tt_val shifted = tt_b_pad(b, tt_b_slice(b, x, st, li, NULL), tt_b_constant(b, s.dtype, ident),
                                lo, hi, NULL);
      x = tt_b_binary(b, op, x, shifted);
    }
    return x;
  }
  int64_t win[TT_MAX_DIMS], str[TT_MAX_DIMS];
  char pad[400], w[200], st[200], region[512], attrs[1000];
  size_t off = (size_t)snprintf(pad, sizeof pad, "dense<[");
  for (int i = 0; i < s.ndim; i++) {
    win[i] = i == dim ? n : 1;
    str[i] = 1;
    off += (size_t)snprintf(pad + off, sizeof pad - off, "%s[%" PRId64 ", 0]", i ? ", " : "",
                            i == dim ? n - 1 : 0);
  }
  snprintf(pad + off, sizeof pad - off, "]> : tensor<%dx2xi64>", s.ndim);
  tt_fmt_i64_array(w, sizeof w, win, s.ndim);
  tt_fmt_i64_array(st, sizeof st, str, s.ndim);
  snprintf(attrs, sizeof attrs, "window_dimensions = %s, window_strides = %s, padding = %s", w, st, pad);
  tt_b_region_binary(region, sizeof region, s.dtype, op);
  tt_val ins[2] = {x, tt_b_constant(b, s.dtype, ident)}, res;
  tt_b_emit(b, TT_OP_REDUCE_WINDOW, ins, 2, attrs, region, &s, 1, &res);
  return res;
}

/* cumsum(self, dim, *, dtype) / cumprod */
static tt_error *cum(tt_lower_ctx *c, const char *op) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), r->ndim);
  if (dim < 0) return red_builder_error(c);
  tt_dtype out;
  if (!red_sum_dtype(c, 2, r->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
  if (out == TT_BOOL) return tt_lc_decline(c, "bool result dtype");
  tt_dtype acc = tt_opmath(out);
  tt_val x = tt_b_convert(b, tt_b_convert(b, tt_lc_tensor(c, 0), out), acc);
  if (r->ndim > 0) x = scan(b, x, (int)dim, op);
  tt_lc_output(c, tt_b_convert(b, x, out));
  return NULL;
}

static tt_error *lower_cumsum(tt_lower_ctx *c) { return cum(c, "add"); }
static tt_error *lower_cumprod(tt_lower_ctx *c) { return cum(c, "multiply"); }

/* ------------------------------------------------------------ cummax / cummin / logcumsumexp */

/* cummax / cummin (self, dim) -> (values, indices). CPU's rule, applied in a
 * log-step scan: a later element replaces the running one if it is NaN, or
 * if the running one is not NaN and the new one is >= (<=) it. */
static tt_error *cum_extreme(tt_lower_ctx *c, bool is_max) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), r->ndim);
  if (dim < 0) return red_builder_error(c);
  tt_val x = tt_lc_tensor(c, 0);
  int64_t n = r->ndim ? r->sizes[dim] : 1;
  if (r->ndim == 0 || n <= 1) {
    tt_lc_output(c, x);
    tt_lc_output(c, red_zero_idx(b, x));
    return NULL;
  }
  tt_dtype kt = r->dtype == TT_BOOL ? TT_U8 : r->dtype;
  tt_val v = tt_b_convert(b, x, kt);
  tt_shape is = tt_b_shape(b, v);
  is.dtype = TT_I64;
  tt_val idx = tt_b_iota(b, is, (int)dim);
  tt_val ident = kt == TT_I64 ? tt_b_constant_int(b, kt, is_max ? INT64_MIN : INT64_MAX)
                              : tt_b_constant(b, kt, is_max ? tt_dtype_lowest(kt) : tt_dtype_highest(kt));
  bool fl = tt_dtype_is_floating(kt);
  for (int64_t sh = 1; sh < n; sh *= 2) {
    int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0};
    lo[dim] = sh;
    tt_val pv = tt_b_pad(b, tt_slice_dim(b, v, (int)dim, 0, n - sh), ident, lo, hi, NULL);
    tt_val pi = tt_b_pad(b, tt_slice_dim(b, idx, (int)dim, 0, n - sh), tt_b_constant_int(b, TT_I64, 0), lo, hi, NULL);
    tt_val pick = tt_b_compare(b, is_max ? "GE" : "LE", v, pv);
    if (fl) {
      tt_val vn = tt_b_compare(b, "NE", v, v), pn = tt_b_compare(b, "NE", pv, pv);
      pick = tt_b_bin(b, TT_OP_OR, vn, tt_b_bin(b, TT_OP_AND, tt_b_un(b, TT_OP_NOT, pn), pick));
    }
    v = tt_b_select(b, pick, v, pv);
    idx = tt_b_select(b, pick, idx, pi);
  }
  tt_lc_output(c, tt_b_convert(b, v, r->dtype));
  tt_lc_output(c, idx);
  return NULL;
}

static tt_error *lower_cummax(tt_lower_ctx *c) { return cum_extreme(c, true); }
static tt_error *lower_cummin(tt_lower_ctx *c) { return cum_extreme(c, false); }

/* Longest scan unrolled in CPU's sequential order; longer ones use the
 * log-step scan (same formula, another association: last-bit differences). */
#define LCSE_SEQUENTIAL_MAX 128

/* CPU's _log_add_exp_helper(x, y): min/max with y's NaN first, then
 * log1p(exp(min - max)) + max, or x where min == max is infinite. */
static tt_val log_add_exp_cpu(tt_builder *b, tt_val x, tt_val y) {
  tt_val ynan = tt_b_compare(b, "NE", y, y);
  tt_val mn = tt_b_select(b, ynan, y, tt_b_bin(b, TT_OP_MINIMUM, x, y));
  tt_val mx = tt_b_select(b, ynan, y, tt_b_bin(b, TT_OP_MAXIMUM, x, y));
  tt_val v = tt_b_bin(b, TT_OP_ADD, tt_b_un(b, TT_OP_LOG1P,
                                              tt_b_un(b, TT_OP_EXPONENTIAL, tt_b_bin(b, TT_OP_SUBTRACT, mn, mx))),
                         mx);
  tt_val same_inf = tt_b_bin(b, TT_OP_AND, tt_b_compare(b, "EQ", mn, mx),
                                tt_b_compare(b, "EQ", tt_b_un(b, TT_OP_ABS, mn), tt_full_like(b, mn, INFINITY)));
  return tt_b_select(b, same_inf, x, v);
}

/* logcumsumexp(self, dim): log-step scan of CPU's log_add_exp
 * (max + log1p(exp(min - max)); equal infinities kept; NaN propagates). */
static tt_error *lower_logcumsumexp(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!tt_dtype_is_floating(r->dtype)) return tt_lc_decline(c, "non-float input");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), r->ndim);
  if (dim < 0) return red_builder_error(c);
  tt_dtype acc = tt_opmath(r->dtype);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  int64_t n = r->ndim ? r->sizes[dim] : 1;
  if (r->ndim && n > 1 && n <= LCSE_SEQUENTIAL_MAX) {
    /* CPU's order: acc = log_add_exp(x[i], acc), one element after the other.
     * The gradient (a difference of two exps of reversed logcumsumexps)
     * amplifies any other association's last-bit differences. */
    tt_val *parts = malloc(sizeof(tt_val) * (size_t)n);
    if (!parts) return tt_lc_decline(c, "out of host memory");
    parts[0] = tt_slice_dim(b, x, (int)dim, 0, 1);
    for (int64_t i = 1; i < n; i++)
      parts[i] = log_add_exp_cpu(b, tt_slice_dim(b, x, (int)dim, i, i + 1), parts[i - 1]);
    x = tt_b_concat(b, parts, (int)n, (int)dim);
    free(parts);
    n = 1; /* done: skip the log-step scan below */
  }
  for (int64_t sh = 1; r->ndim && sh < n; sh *= 2) {
    int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0};
    lo[dim] = sh;
    tt_val a = tt_b_pad(b, tt_slice_dim(b, x, (int)dim, 0, n - sh), tt_b_constant(b, acc, -INFINITY), lo, hi, NULL);
    tt_val mn = tt_b_bin(b, TT_OP_MINIMUM, a, x), mx = tt_b_bin(b, TT_OP_MAXIMUM, a, x);
    tt_val v = tt_b_bin(b, TT_OP_ADD, tt_b_un(b, TT_OP_LOG1P,
                                                tt_b_un(b, TT_OP_EXPONENTIAL, tt_b_bin(b, TT_OP_SUBTRACT, mn, mx))),
                           mx);
    tt_val same_inf = tt_b_bin(b, TT_OP_AND, tt_b_compare(b, "EQ", mn, mx),
                                  tt_b_compare(b, "EQ", tt_b_un(b, TT_OP_ABS, mn), tt_full_like(b, mn, INFINITY)));
    v = tt_b_select(b, same_inf, a, v);
    tt_val nan = tt_b_bin(b, TT_OP_OR, tt_b_compare(b, "NE", a, a), tt_b_compare(b, "NE", x, x));
    x = tt_b_select(b, nan, tt_full_like(b, x, NAN), v);
  }
  tt_lc_output(c, tt_b_convert(b, x, r->dtype));
  return NULL;
}

TT_LOWERINGS(scan) = {
    {lower_cumsum, {"cumsum", "cumsum_", "cumsum.out"}},
    {lower_cumprod, {"cumprod", "cumprod_", "cumprod.out"}},
    {lower_cummax, {"cummax", "cummax.out"}},
    {lower_cummin, {"cummin", "cummin.out"}},
    {lower_logcumsumexp, {"logcumsumexp", "logcumsumexp.out"}},
    {NULL, {NULL}},
};
