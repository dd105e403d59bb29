/* Lowerings of the reduction family (see lowering.h): sum, mean, amax/amin,
 * max/min (full), var/std (+ _mean), prod, logsumexp, all/any,
 * softmax/log_softmax and their backward ops, linalg_vector_norm, nansum,
 * count_nonzero, aminmax, renorm, dist. Indexed reductions and sorting are
 * in reduction_index.c, scans in scan.c, searchsorted/bucketize in
 * search.c; helpers shared with them in reduction_common.c.
 *
 * float16/bfloat16 inputs accumulate in float32 and round once at the end,
 * like CPU PyTorch. Integer and bool sums/products accumulate in int64. */
#include "ops/reduction_common.h"
#include "ops/complex_math.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

/* Broadcasts a reduced value back to the input's shape. */
static tt_val expand_back(tt_builder *b, tt_val v, const rplan *p) {
  v = tt_b_reshape(b, v, p->ndim, p->kept_dims);
  return tt_b_broadcast_to(b, v, p->ndim, p->in);
}

static tt_val reduce_add(tt_builder *b, tt_val x, const rplan *p) {
  tt_dtype dt = tt_b_dtype(b, x);
  if (dt == TT_BOOL) return tt_b_reduce(b, x, tt_b_constant(b, dt, 0), p->dims, p->n, "or");
  return red_cascade_add(b, x, p->dims, p->n);
}

/* Max/min over dims that propagates NaN like PyTorch (the plugin's reduce
 * with stablehlo.maximum drops NaNs). */
static tt_val extreme_reduce(tt_builder *b, tt_val x, const int64_t *dims, int n, bool is_max) {
  tt_val v = is_max ? tt_reduce_max(b, x, dims, n) : tt_reduce_min(b, x, dims, n);
  if (!tt_dtype_is_floating(tt_b_dtype(b, x)) || n == 0) return v;
  tt_val nan = tt_b_compare(b, "NE", x, x);
  tt_val any = tt_b_reduce(b, nan, tt_b_constant(b, TT_BOOL, 0), dims, n, "or");
  return tt_b_select(b, any, tt_full_like(b, v, NAN), v);
}

/* ------------------------------------------------------------ sum / prod */

static tt_error *sum_prod(tt_lower_ctx *c, bool prod, int dim_arg, int keep_arg, int dtype_arg) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  if (!red_plan_dims(c, r, dim_arg, true, keep_arg >= 0 && tt_lc_bool(c, keep_arg, false), &p))
    return red_builder_error(c);
  tt_dtype out;
  if (!red_sum_dtype(c, dtype_arg, r->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
  if (out == TT_BOOL) { /* bool accumulation: sum is "or", prod is "and" */
    tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), TT_BOOL);
    tt_val v = tt_b_reduce(b, x, tt_b_constant(b, TT_BOOL, prod ? 1 : 0), p.dims, p.n, prod ? "and" : "or");
    tt_lc_output(c, red_finish(b, v, &p));
    return NULL;
  }
  tt_dtype acc = tt_opmath(out);
  tt_val x = tt_b_convert(b, tt_b_convert(b, tt_lc_tensor(c, 0), out), acc);
  tt_val v = prod ? tt_b_reduce(b, x, tt_b_constant(b, acc, 1), p.dims, p.n, "multiply")
                  : red_cascade_add(b, x, p.dims, p.n);
  tt_lc_output(c, red_finish(b, tt_b_convert(b, v, out), &p));
  return NULL;
}

/* sum.dim_IntList(self, dim, keepdim, *, dtype) / sum(self, *, dtype) */
static tt_error *lower_sum(tt_lower_ctx *c) {
  if (tt_lc_nargs(c) >= 4 && tt_lc_kind(c, 2) == TT_ARG_BOOL) return sum_prod(c, false, 1, 2, 3);
  return sum_prod(c, false, -1, -1, 1);
}

/* prod.dim_int(self, dim, keepdim, *, dtype) / prod(self, *, dtype) */
static tt_error *lower_prod(tt_lower_ctx *c) {
  if (tt_lc_nargs(c) >= 4 && tt_lc_kind(c, 2) == TT_ARG_BOOL) return sum_prod(c, true, 1, 2, 3);
  return sum_prod(c, true, -1, -1, 1);
}

/* mean.dim(self, dim, keepdim, *, dtype) / mean(self, *, dtype) */
static tt_error *lower_mean(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  bool has_dim = tt_lc_nargs(c) >= 4 && tt_lc_kind(c, 2) == TT_ARG_BOOL;
  int dtype_arg = has_dim ? 3 : 1;
  rplan p;
  if (!red_plan_dims(c, r, has_dim ? 1 : -1, true, has_dim && tt_lc_bool(c, 2, false), &p))
    return red_builder_error(c);
  tt_dtype out = r->dtype;
  if (!tt_lc_is_none(c, dtype_arg)) {
    if (!red_arg_dtype(c, dtype_arg, r->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
    if (!tt_dtype_is_floating(out) && !tt_dtype_is_complex(out))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "mean(): could not infer output dtype. Optional dtype must be either a "
                        "floating point or complex dtype. Got: %s", tt_dtype_torch_name(out));
  } else if (!tt_dtype_is_floating(out) && !tt_dtype_is_complex(out)) {
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "mean(): could not infer output dtype. Input dtype must be either a "
                      "floating point or complex dtype. Got: %s", tt_dtype_torch_name(out));
  }
  tt_dtype acc = tt_opmath(out);
  tt_val x = tt_b_convert(b, tt_b_convert(b, tt_lc_tensor(c, 0), out), acc);
  tt_val s = reduce_add(b, x, &p);
  s = tt_b_bin(b, TT_OP_DIVIDE, s, tt_full_like(b, s, (double)p.count));
  tt_lc_output(c, red_finish(b, tt_b_convert(b, s, out), &p));
  return NULL;
}

/* ------------------------------------------------------------ amax / amin / max / min */

static tt_error *extreme(tt_lower_ctx *c, bool is_max, int dim_arg, int keep_arg, const char *name) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  if (!red_plan_dims(c, r, dim_arg, true, keep_arg >= 0 && tt_lc_bool(c, keep_arg, false), &p))
    return red_builder_error(c);
  int64_t tmp[TT_MAX_DIMS];
  bool dim_given = dim_arg >= 0 && tt_lc_int_list(c, dim_arg, tmp, TT_MAX_DIMS) > 0;
  TT_TRY(red_require_nonempty(c, name, &p, dim_given));
  tt_dtype out_dt;
  if (dim_arg >= 0 && red_written_dtype(c, &out_dt) && out_dt != r->dtype)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected the dtype for input and out to match, but got %s for input's "
                      "dtype and %s for out's dtype.", tt_dtype_torch_name(r->dtype), tt_dtype_torch_name(out_dt));
  tt_val x = tt_lc_tensor(c, 0);
  tt_val v = extreme_reduce(b, x, p.dims, p.n, is_max);
  tt_lc_output(c, red_finish(b, v, &p));
  return NULL;
}

/* amax(self, dim=[], keepdim) */
static tt_error *lower_amax(tt_lower_ctx *c) { return extreme(c, true, 1, 2, "amax"); }
static tt_error *lower_amin(tt_lower_ctx *c) { return extreme(c, false, 1, 2, "amin"); }

/* max(self) / min(self): full reduction */
static tt_error *lower_max(tt_lower_ctx *c) { return extreme(c, true, -1, -1, "max"); }
static tt_error *lower_min(tt_lower_ctx *c) { return extreme(c, false, -1, -1, "min"); }

/* ------------------------------------------------------------ var / std */

/* var.correction(self, dim=None, *, correction=None, keepdim) and friends.
 * Two passes in the accumulation dtype: mean, then sum of squared
 * deviations divided by max(N - correction, 0). */
static tt_error *var_std(tt_lower_ctx *c, bool is_std, bool with_mean, const char *name) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!tt_dtype_is_floating(r->dtype))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s only support floating point and complex dtypes",
                      name);
  rplan p;
  if (!red_plan_dims(c, r, 1, true, tt_lc_bool(c, 3, false), &p)) return red_builder_error(c);
  /* N - correction <= 0: CPU warns "degrees of freedom is <= 0", which a
   * lowering cannot; only then is the correction's value read (and keyed) */
  double corr_value = tt_lc_is_none(c, 2) ? 1.0 : tt_lc_scalar_value(c, 2);
  if ((double)p.count - corr_value <= 0) return tt_lc_decline(c, "degrees of freedom <= 0 (CPU warns)");
  tt_dtype acc = tt_opmath(r->dtype);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val s = reduce_add(b, x, &p);
  tt_val mean = tt_b_bin(b, TT_OP_DIVIDE, s, tt_full_like(b, s, (double)p.count));
  tt_val d = tt_b_bin(b, TT_OP_SUBTRACT, x, expand_back(b, mean, &p));
  tt_val ss = reduce_add(b, tt_b_bin(b, TT_OP_MULTIPLY, d, d), &p);
  tt_val corr = tt_lc_is_none(c, 2) ? tt_b_constant(b, acc, 1) : tt_lc_scalar(c, 2, acc);
  tt_val dof = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_constant(b, acc, (double)p.count), corr);
  dof = tt_b_bin(b, TT_OP_MAXIMUM, dof, tt_b_constant(b, acc, 0));
  tt_shape rs = tt_b_shape(b, ss);
  tt_val v = tt_b_bin(b, TT_OP_DIVIDE, ss, tt_b_broadcast_in_dim(b, dof, rs.ndim, rs.dims, NULL));
  if (is_std) v = tt_b_un(b, TT_OP_SQRT, v);
  tt_lc_output(c, red_finish(b, tt_b_convert(b, v, r->dtype), &p));
  if (with_mean) tt_lc_output(c, red_finish(b, tt_b_convert(b, mean, r->dtype), &p));
  return NULL;
}

static tt_error *lower_var(tt_lower_ctx *c) { return var_std(c, false, false, "std and var"); }
static tt_error *lower_std(tt_lower_ctx *c) { return var_std(c, true, false, "std and var"); }
static tt_error *lower_var_mean(tt_lower_ctx *c) { return var_std(c, false, true, "var_mean"); }
static tt_error *lower_std_mean(tt_lower_ctx *c) { return var_std(c, true, true, "std_mean"); }

/* ------------------------------------------------------------ logsumexp */

/* logsumexp(self, dim, keepdim): m = amax (0 where infinite);
 * log(sum(exp(x - m))) + m, as PyTorch computes it; complex x: m is the
 * amax of the real parts, exp complex_math.c's. */
static tt_error *lower_logsumexp(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  int64_t tmp[TT_MAX_DIMS + 4];
  /* CPU raises for dim=[] on a dimensioned tensor; a 0-dim one reduces to itself */
  if (tt_lc_int_list(c, 1, tmp, TT_MAX_DIMS + 4) == 0 && r->ndim > 0) return tt_lc_decline(c, "empty dim list");
  rplan p;
  if (!red_plan_dims(c, r, 1, true, tt_lc_bool(c, 2, false), &p)) return red_builder_error(c);
  bool cplx = tt_dtype_is_complex(r->dtype);
  tt_dtype out = tt_dtype_is_floating(r->dtype) || cplx ? r->dtype : TT_DEFAULT_FLOAT;
  tt_dtype acc = tt_opmath(out);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val m = tt_reduce_max(b, cplx ? tt_b_real(b, x) : x, p.dims, p.n);
  tt_val inf = tt_b_compare(b, "EQ", tt_b_un(b, TT_OP_ABS, m), tt_full_like(b, m, INFINITY));
  m = tt_b_convert(b, tt_b_select(b, inf, tt_full_like(b, m, 0), m), acc);
  tt_val d = tt_b_bin(b, TT_OP_SUBTRACT, x, expand_back(b, m, &p));
  tt_val e = cplx ? tt_complex_exp(b, d) : tt_b_un(b, TT_OP_EXPONENTIAL, d);
  tt_val v = tt_b_bin(b, TT_OP_ADD, tt_b_un(b, TT_OP_LOG, reduce_add(b, e, &p)), m);
  tt_lc_output(c, red_finish(b, tt_b_convert(b, v, out), &p));
  return NULL;
}

/* ------------------------------------------------------------ all / any */

/* all(self) / all.dim(self, dim, keepdim) / all.dims(self, dim=None, keepdim).
 * Result bool (uint8 for uint8 inputs, like PyTorch). */
static tt_error *all_any(tt_lower_ctx *c, bool is_all) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  bool has_dim = tt_lc_kind(c, 2) == TT_ARG_BOOL;
  rplan p;
  if (!red_plan_dims(c, r, has_dim ? 1 : -1, false, has_dim && tt_lc_bool(c, 2, false), &p))
    return red_builder_error(c);
  tt_dtype out = r->dtype == TT_U8 ? TT_U8 : TT_BOOL, out_dt;
  if (red_written_dtype(c, &out_dt) && out_dt != TT_BOOL && out_dt != TT_U8) /* as CPU */
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s only supports bool tensor for result, got: %s",
                      is_all ? "all" : "any", tt_dtype_torch_name(out_dt));
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), TT_BOOL);
  tt_val v = tt_b_reduce(b, x, tt_b_constant(b, TT_BOOL, is_all ? 1 : 0), p.dims, p.n,
                         is_all ? "and" : "or");
  tt_lc_output(c, red_finish(b, tt_b_convert(b, v, out), &p));
  return NULL;
}

static tt_error *lower_all(tt_lower_ctx *c) { return all_any(c, true); }
static tt_error *lower_any(tt_lower_ctx *c) { return all_any(c, false); }

/* ------------------------------------------------------------ softmax */

/* _softmax / _log_softmax (self, dim, half_to_float) */
static tt_error *softmax(tt_lower_ctx *c, bool log) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!tt_dtype_is_floating(r->dtype)) return tt_lc_decline(c, "non-float input");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), r->ndim);
  if (dim < 0) return red_builder_error(c);
  tt_dtype out = tt_lc_bool(c, 2, false) && tt_dtype_is_half(r->dtype) ? TT_F32 : r->dtype;
  tt_dtype acc = tt_opmath(r->dtype);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  if (r->ndim == 0) {
    tt_lc_output(c, tt_b_convert(b, tt_full_like(b, x, log ? 0 : 1), out));
    return NULL;
  }
  rplan p;
  memset(&p, 0, sizeof p);
  p.ndim = r->ndim;
  memcpy(p.in, r->sizes, sizeof(int64_t) * (size_t)r->ndim);
  memcpy(p.kept_dims, r->sizes, sizeof(int64_t) * (size_t)r->ndim);
  p.kept_dims[dim] = 1;
  p.dims[0] = dim;
  p.n = 1;
  /* A plain max (no NaN pass over x, unlike tt_reduce_max): a NaN in a row
   * makes that row's sum NaN, so the whole row is NaN either way. */
  tt_val m = tt_b_reduce(b, x, tt_b_constant(b, acc, -INFINITY), p.dims, 1, "maximum");
  tt_val d = tt_b_bin(b, TT_OP_SUBTRACT, x, expand_back(b, m, &p));
  tt_val e = tt_b_un(b, TT_OP_EXPONENTIAL, d);
  tt_val s = reduce_add(b, e, &p);
  tt_val v = log ? tt_b_bin(b, TT_OP_SUBTRACT, d, expand_back(b, tt_b_un(b, TT_OP_LOG, s), &p))
                 : tt_b_bin(b, TT_OP_DIVIDE, e, expand_back(b, s, &p));
  tt_lc_output(c, tt_b_convert(b, v, out));
  return NULL;
}

static tt_error *lower_softmax(tt_lower_ctx *c) { return softmax(c, false); }
static tt_error *lower_log_softmax(tt_lower_ctx *c) { return softmax(c, true); }

/* _softmax_backward_data(grad_output, output, dim, input_dtype):
 *   softmax:     out * (g - sum(g * out, dim))
 *   log_softmax: g - exp(out) * sum(g, dim) */
static tt_error *softmax_backward(tt_lower_ctx *c, bool log) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *o = tt_lc_ref(c, 1);
  if (!g || !o || !tt_dtype_is_floating(g->dtype) || !tt_dtype_is_floating(o->dtype))
    return tt_lc_decline(c, "non-float input");
  if (g->ndim != o->ndim || memcmp(g->sizes, o->sizes, sizeof(int64_t) * (size_t)g->ndim))
    return tt_lc_decline(c, "grad and output shapes differ");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, 0), g->ndim);
  if (dim < 0) return red_builder_error(c);
  tt_dtype out;
  if (!red_arg_dtype(c, 3, g->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
  if (!tt_dtype_is_floating(out)) return tt_lc_decline(c, "non-float input_dtype");
  tt_dtype acc = tt_opmath(tt_promote(g->dtype, o->dtype));
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val ov = tt_b_convert(b, tt_lc_tensor(c, 1), acc);
  rplan p;
  memset(&p, 0, sizeof p);
  p.ndim = g->ndim;
  memcpy(p.in, g->sizes, sizeof(int64_t) * (size_t)g->ndim);
  memcpy(p.kept_dims, g->sizes, sizeof(int64_t) * (size_t)g->ndim);
  if (g->ndim > 0) {
    p.kept_dims[dim] = 1;
    p.dims[0] = dim;
    p.n = 1;
  }
  tt_val v;
  if (log) {
    tt_val s = expand_back(b, reduce_add(b, gv, &p), &p);
    v = tt_b_bin(b, TT_OP_SUBTRACT, gv, tt_b_bin(b, TT_OP_MULTIPLY, tt_b_un(b, TT_OP_EXPONENTIAL, ov), s));
  } else {
    tt_val go = tt_b_bin(b, TT_OP_MULTIPLY, gv, ov);
    tt_val s = expand_back(b, reduce_add(b, go, &p), &p);
    v = tt_b_bin(b, TT_OP_SUBTRACT, go, tt_b_bin(b, TT_OP_MULTIPLY, ov, s));
  }
  tt_lc_output(c, tt_b_convert(b, v, out));
  return NULL;
}

static tt_error *lower_softmax_bw(tt_lower_ctx *c) { return softmax_backward(c, false); }
static tt_error *lower_log_softmax_bw(tt_lower_ctx *c) { return softmax_backward(c, true); }

/* ------------------------------------------------------------ norm */

/* Vector norm of a = |x| (accumulation dtype) over plan p for the runtime
 * order ord (0-d, a's dtype): every special case (inf, -inf, 0, 1, 2,
 * general p) is computed and the result selected by comparing ord. Returns
 * the reduced value (reduced dims removed). */
static tt_val vnorm(tt_builder *b, tt_val a, tt_val ord, const rplan *pp) {
  rplan p = *pp;
  tt_dtype acc = tt_b_dtype(b, a);
  tt_val r_max = extreme_reduce(b, a, p.dims, p.n, true);
  tt_val r_min = extreme_reduce(b, a, p.dims, p.n, false);
  tt_val r_0 = reduce_add(b, tt_b_convert(b, tt_b_convert(b, a, TT_BOOL), acc), &p);
  tt_val r_1 = reduce_add(b, a, &p);
  tt_val r_2 = tt_b_un(b, TT_OP_SQRT, reduce_add(b, tt_b_bin(b, TT_OP_MULTIPLY, a, a), &p));
  tt_shape as = tt_b_shape(b, a), rs = tt_b_shape(b, r_1);
  tt_val pa = tt_b_bin(b, TT_OP_POWER, a, tt_b_broadcast_in_dim(b, ord, as.ndim, as.dims, NULL));
  tt_val inv = tt_b_bin(b, TT_OP_DIVIDE, tt_b_constant(b, acc, 1), ord);
  tt_val r_p = tt_b_bin(b, TT_OP_POWER, reduce_add(b, pa, &p),
                           tt_b_broadcast_in_dim(b, inv, rs.ndim, rs.dims, NULL));
  struct { double v; tt_val r; } cases[] = {
      {1, r_1}, {2, r_2}, {0, r_0}, {INFINITY, r_max}, {-INFINITY, r_min}};
  tt_val v = r_p;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tt_val is = tt_b_compare(b, "EQ", ord, tt_b_constant(b, acc, cases[k].v));
    is = tt_b_broadcast_in_dim(b, is, rs.ndim, rs.dims, NULL);
    v = tt_b_select(b, is, cases[k].r, v);
  }
  return v;
}

/* linalg_vector_norm(self, ord=2, dim=None, keepdim, *, dtype). ord is a
 * runtime Scalar, so every special case (inf, -inf, 0, 1, 2, general p) is
 * computed and the result selected by comparing ord at run time. */
static tt_error *vector_norm_impl(tt_lower_ctx *c, int dtype_arg) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!tt_dtype_is_floating(r->dtype))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "linalg.vector_norm: Expected a floating point or complex tensor as input. "
                      "Got %s", tt_dtype_torch_name(r->dtype));
  tt_dtype out = r->dtype;
  if (dtype_arg >= 0 && tt_lc_kind(c, dtype_arg) == TT_ARG_DTYPE) {
    if (!red_arg_dtype(c, dtype_arg, r->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
    if (!tt_dtype_is_floating(out) || tt_promote(r->dtype, out) != out)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "linalg.vector_norm: the dtype of the input (%s) should be convertible "
                        "without narrowing to the specified dtype (%s)",
                        tt_dtype_torch_name(r->dtype), tt_dtype_torch_name(out));
  }
  bool ord_none = tt_lc_is_none(c, 1);
  if (!ord_none && tt_lc_kind(c, 1) != TT_ARG_SCALAR) return tt_lc_decline(c, "ord is not a Scalar");
  rplan p;
  if (!red_plan_dims(c, r, 2, true, tt_lc_bool(c, 3, false), &p)) return red_builder_error(c);
  /* inf/-inf on empty reductions raise in PyTorch, depending on ord's value */
  if (p.count == 0) return tt_lc_decline(c, "empty reduction");
  tt_dtype acc = tt_opmath(out);
  tt_val a = tt_b_un(b, TT_OP_ABS, tt_b_convert(b, tt_lc_tensor(c, 0), acc));
  tt_val ord = ord_none ? tt_b_constant(b, acc, 2) : tt_lc_scalar(c, 1, acc);
  tt_val v = vnorm(b, a, ord, &p);
  tt_lc_output(c, red_finish(b, tt_b_convert(b, v, out), &p));
  return NULL;
}
static tt_error *lower_vector_norm(tt_lower_ctx *c) { return vector_norm_impl(c, 4); }
/* norm.ScalarOpt_dim(self, p?, dim, keepdim) and its dtype/out forms: CPU's
 * norm.out computes linalg_vector_norm(self, p or 2, dim, keepdim, dtype). */
static tt_error *lower_norm_dim(tt_lower_ctx *c) { return vector_norm_impl(c, 4); }

/* ------------------------------------------------------------ nansum / count_nonzero / aminmax */

/* nansum(self, dim=None, keepdim, *, dtype): sum with NaNs counted as 0. */
static tt_error *lower_nansum(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  if (!red_plan_dims(c, r, 1, true, tt_lc_bool(c, 2, false), &p)) return red_builder_error(c);
  tt_dtype out;
  if (!red_sum_dtype(c, 3, r->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
  if (out == TT_BOOL) return tt_lc_decline(c, "bool result dtype");
  tt_val x = tt_lc_tensor(c, 0);
  if (tt_dtype_is_floating(r->dtype))
    x = tt_b_select(b, tt_b_compare(b, "NE", x, x), tt_full_like(b, x, 0), x);
  tt_dtype acc = tt_opmath(out);
  x = tt_b_convert(b, tt_b_convert(b, x, out), acc);
  tt_val v = tt_b_reduce(b, x, tt_b_constant(b, acc, 0), p.dims, p.n, "add");
  tt_lc_output(c, red_finish(b, tt_b_convert(b, v, out), &p));
  return NULL;
}

/* count_nonzero(self, dim=None) / count_nonzero.dim_IntList(self, dim) -> int64 */
static tt_error *lower_count_nonzero(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  if (!red_plan_dims(c, r, 1, true, false, &p)) return red_builder_error(c);
  tt_val nz = tt_b_convert(b, tt_b_convert(b, tt_lc_tensor(c, 0), TT_BOOL), TT_I64);
  tt_val v = tt_b_reduce(b, nz, tt_b_constant_int(b, TT_I64, 0), p.dims, p.n, "add");
  tt_lc_output(c, red_finish(b, v, &p));
  return NULL;
}

/* aminmax(self, *, dim=None, keepdim) -> (min, max) */
static tt_error *lower_aminmax(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  bool has_dim = !tt_lc_is_none(c, 1);
  rplan p;
  if (!red_plan_dims(c, r, has_dim ? 1 : -1, true, tt_lc_bool(c, 2, false), &p)) return red_builder_error(c);
  if (p.count == 0 || (has_dim && p.n == 1 && p.in[p.dims[0]] == 0))
    return tt_lc_decline(c, "aminmax over an empty dimension");
  tt_val x = tt_lc_tensor(c, 0);
  tt_dtype kt = r->dtype == TT_BOOL ? TT_U8 : r->dtype;
  x = tt_b_convert(b, x, kt);
  tt_val mn = extreme_reduce(b, x, p.dims, p.n, false), mx = extreme_reduce(b, x, p.dims, p.n, true);
  tt_lc_output(c, red_finish(b, tt_b_convert(b, mn, r->dtype), &p));
  tt_lc_output(c, red_finish(b, tt_b_convert(b, mx, r->dtype), &p));
  return NULL;
}

/* ------------------------------------------------------------ renorm / dist */

/* Numeric value of Scalar argument i (for argument checks only). */
static double scalar_num(const tt_lower_ctx *c, int i) {
  const tt_scalar *s = tt_lc_scalar_ref(c, i);
  if (!s) return 0;
  return s->kind == TT_SCALAR_FLOAT ? s->f : (double)s->i;
}

/* renorm(self, p, dim, maxnorm): each slice along dim whose p-norm exceeds
 * maxnorm is scaled by maxnorm / (norm + 1e-7), in the accumulation dtype. */
static tt_error *lower_renorm(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!tt_dtype_is_floating(r->dtype)) return tt_lc_decline(c, "non-float input");
  if (tt_lc_kind(c, 1) != TT_ARG_SCALAR || tt_lc_kind(c, 3) != TT_ARG_SCALAR)
    return tt_lc_decline(c, "p or maxnorm is not a Scalar");
  if (!(scalar_num(c, 1) > 0))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "renorm: non-positive-norm not supported");
  double maxnorm = scalar_num(c, 3);
  if (maxnorm < 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "renorm: expected maxnorm to be >= 0 but got %g", maxnorm);
  if (r->ndim < 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "renorm: input needs at least 2 dimensions, got %d dimensions",
                      r->ndim);
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, 0), r->ndim);
  if (dim < 0) return red_builder_error(c);
  rplan p;
  red_plan_all(&p, r->ndim, r->sizes, false);
  p.n = 0;
  p.count = 1;
  p.out_ndim = 0;
  for (int i = 0; i < r->ndim; i++) {
    p.red[i] = i != dim;
    p.kept_dims[i] = i == dim ? r->sizes[i] : 1;
    if (i == dim) p.out[p.out_ndim++] = r->sizes[i];
    else {
      p.dims[p.n++] = i;
      p.count *= r->sizes[i];
    }
  }
  if (p.count == 0 || r->sizes[dim] == 0) return tt_lc_decline(c, "empty renorm");
  tt_dtype acc = tt_opmath(r->dtype);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val norm = vnorm(b, tt_b_un(b, TT_OP_ABS, x), tt_lc_scalar(c, 1, acc), &p);
  tt_shape ns = tt_b_shape(b, norm);
  tt_val mx = tt_b_broadcast_in_dim(b, tt_lc_scalar(c, 3, acc), ns.ndim, ns.dims, NULL);
  tt_val scaled = tt_b_bin(b, TT_OP_DIVIDE, mx, tt_b_bin(b, TT_OP_ADD, norm, tt_full_like(b, norm, 1e-7)));
  tt_val factor = tt_b_select(b, tt_b_compare(b, "GT", norm, mx), scaled, tt_full_like(b, norm, 1));
  tt_val v = tt_b_bin(b, TT_OP_MULTIPLY, x, expand_back(b, factor, &p));
  tt_lc_output(c, tt_b_convert(b, v, r->dtype));
  return NULL;
}

/* dist(self, other, p=2) = vector_norm(self - other, p) over the broadcast shape. */
static tt_error *lower_dist(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  int args[2] = {0, 1};
  tt_dtype dt = tt_result_type(c, args, 2);
  if (!tt_dtype_is_floating(dt)) return tt_lc_decline(c, "non-float inputs");
  if (tt_lc_kind(c, 2) != TT_ARG_SCALAR && !tt_lc_is_none(c, 2)) return tt_lc_decline(c, "p is not a Scalar");
  int nd;
  int64_t dims[TT_MAX_DIMS];
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  rplan p;
  red_plan_all(&p, nd, dims, false);
  if (p.count == 0) return tt_lc_decline(c, "empty dist");
  tt_dtype acc = tt_opmath(dt);
  tt_val d = tt_b_bin(b, TT_OP_SUBTRACT, tt_operand(c, 0, dt, nd, dims), tt_operand(c, 1, dt, nd, dims));
  tt_val ord = tt_lc_is_none(c, 2) ? tt_b_constant(b, acc, 2) : tt_lc_scalar(c, 2, acc);
  tt_val v = vnorm(b, tt_b_un(b, TT_OP_ABS, tt_b_convert(b, d, acc)), ord, &p);
  tt_lc_output(c, red_finish(b, tt_b_convert(b, v, dt), &p));
  return NULL;
}

/* ------------------------------------------------------------ table */

TT_LOWERINGS(reduction) = {
    {lower_sum, {"sum.dim_IntList", "sum.IntList_out", "sum", "sum.out"}},
    {lower_mean, {"mean.dim", "mean.out", "mean", "mean.dtype_out"}},
    {lower_prod, {"prod.dim_int", "prod.int_out", "prod", "prod.out"}},
    {lower_amax, {"amax", "amax.out"}},
    {lower_amin, {"amin", "amin.out"}},
    {lower_max, {"max", "max.unary_out"}},
    {lower_min, {"min", "min.unary_out"}},
    {lower_var, {"var.correction", "var.correction_out"}},
    {lower_std, {"std.correction", "std.correction_out"}},
    {lower_var_mean, {"var_mean.correction", "var_mean.correction_out"}},
    {lower_std_mean, {"std_mean.correction", "std_mean.correction_out"}},
    {lower_logsumexp, {"logsumexp", "logsumexp.out"}},
    {lower_all, {"all", "all.all_out", "all.dim", "all.out", "all.dims", "all.dims_out"}},
    {lower_any, {"any", "any.all_out", "any.dim", "any.out", "any.dims", "any.dims_out"}},
    {lower_softmax, {"_softmax", "_softmax.out"}},
    {lower_log_softmax, {"_log_softmax", "_log_softmax.out"}},
    {lower_softmax_bw, {"_softmax_backward_data", "_softmax_backward_data.out"}},
    {lower_log_softmax_bw, {"_log_softmax_backward_data", "_log_softmax_backward_data.out"}},
    {lower_vector_norm, {"linalg_vector_norm", "linalg_vector_norm.out"}},
    {lower_norm_dim, {"norm.ScalarOpt_dim", "norm.ScalarOpt_dim_dtype", "norm.out", "norm.dtype_out"}},
    {lower_nansum, {"nansum", "nansum.out"}},
    {lower_count_nonzero, {"count_nonzero", "count_nonzero.out", "count_nonzero.dim_IntList",
                           "count_nonzero.dim_IntList_out"}},
    {lower_aminmax, {"aminmax", "aminmax.out"}},
    {lower_renorm, {"renorm", "renorm_", "renorm.out"}},
    {lower_dist, {"dist", "dist.out"}},
    {NULL, {NULL}},
};
