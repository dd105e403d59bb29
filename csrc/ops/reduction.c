/* Lowerings of the reduction family (see lowering.h): sum, mean, amax/amin,
 * max/min (full and with indices), argmax/argmin, var/std (+ _mean), prod,
 * logsumexp, all/any, cumsum/cumprod, softmax/log_softmax and their
 * backward ops, linalg_vector_norm; the long tail: sort, topk, kthvalue,
 * median/nanmedian, mode, nansum, count_nonzero, aminmax, cummax/cummin,
 * logcumsumexp, renorm, dist, searchsorted/bucketize.
 *
 * Sorting is stable (NaN largest). Where CPU breaks ties by quickselect or
 * an unstable std::sort (topk, kthvalue, median.dim, mode, long unstable
 * sorts), values match but the index chosen among equal values may differ.
 *
 * float16/bfloat16 inputs accumulate in float32 and round once at the end,
 * like CPU PyTorch. Integer and bool sums/products accumulate in int64. */
#include "ops/common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

/* PyTorch's ScalarType name ("Float", "Long") for error messages. */
static const char *torch_name(tt_dtype dt) {
  switch (dt) {
    case TT_BOOL: return "Bool";
    case TT_U8: return "Byte";
    case TT_I8: return "Char";
    case TT_I16: return "Short";
    case TT_I32: return "Int";
    case TT_I64: return "Long";
    case TT_F16: return "Half";
    case TT_BF16: return "BFloat16";
    case TT_F32: return "Float";
    case TT_F64: return "Double";
    default: return "Unknown";
  }
}

static bool is_half(tt_dtype dt) { return dt == TT_F16 || dt == TT_BF16; }
/* Accumulation dtype of a float dtype. */
static tt_dtype acc_of(tt_dtype dt) { return is_half(dt) ? TT_F32 : dt; }

/* A ScalarType argument (None -> dflt). Returns false if it is not one. */
static bool arg_dtype(const tt_lower_ctx *c, int i, tt_dtype dflt, tt_dtype *out) {
  const tt_arg *a = tt_lc_arg(c, i);
  *out = dflt;
  if (!a || a->kind == TT_ARG_NONE) return true;
  if (a->kind != TT_ARG_DTYPE) return false;
  *out = a->u.dtype;
  return true;
}

/* dtype of the first mutated tensor argument (out= / in-place), if any. */
static bool written_dtype(const tt_lower_ctx *c, tt_dtype *dt) {
  for (int i = 0; i < tt_lc_nargs(c); i++) {
    const tt_arg *a = tt_lc_arg(c, i);
    if (a && a->written && a->kind == TT_ARG_TENSOR) {
      *dt = a->u.tensor->dtype;
      return true;
    }
  }
  return false;
}

/* Which dims a reduction covers. */
typedef struct {
  int ndim;                   /* input rank */
  int64_t in[TT_MAX_DIMS];    /* input sizes */
  bool red[TT_MAX_DIMS];      /* dim i reduced */
  int64_t dims[TT_MAX_DIMS];  /* reduced dims, ascending */
  int n;
  bool keepdim;
  int out_ndim;               /* result rank (with keepdim) */
  int64_t out[TT_MAX_DIMS];
  int64_t kept_dims[TT_MAX_DIMS]; /* keepdim shape (1 at reduced dims) */
  int64_t count;              /* elements reduced into each output */
} rplan;

/* Reduction plan from list argument `arg` of tensor `ref`. A None list (or
 * an absent argument) reduces every dim; an empty list reduces every dim if
 * empty_all, none otherwise. Returns false if the builder failed (bad dim). */
static bool plan_dims(tt_lower_ctx *c, const tt_tensor_ref *ref, int arg, bool empty_all,
                      bool keepdim, rplan *p) {
  memset(p, 0, sizeof *p);
  p->ndim = ref->ndim;
  memcpy(p->in, ref->sizes, sizeof(int64_t) * (size_t)ref->ndim);
  p->keepdim = keepdim;
  int64_t list[TT_MAX_DIMS + 4];
  int n = arg < 0 ? -1 : tt_lc_int_list(c, arg, list, TT_MAX_DIMS + 4);
  if (n > TT_MAX_DIMS + 4) {
    tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "too many dims");
    return false;
  }
  bool all = n < 0 || (n == 0 && empty_all);
  if (all) {
    for (int i = 0; i < ref->ndim; i++) p->red[i] = true;
  } else {
    for (int k = 0; k < n; k++) {
      int64_t d = tt_wrap_dim(c, list[k], ref->ndim);
      if (d < 0) return false;
      if (ref->ndim == 0) continue; /* a scalar accepts dim 0/-1 and reduces nothing */
      if (p->red[d]) {
        tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "dim %" PRId64 " appears multiple times in the list of dims", d);
        return false;
      }
      p->red[d] = true;
    }
  }
  p->count = 1;
  for (int i = 0; i < ref->ndim; i++) {
    if (p->red[i]) {
      p->dims[p->n++] = i;
      p->count *= ref->sizes[i];
      p->kept_dims[i] = 1;
    } else {
      p->kept_dims[i] = ref->sizes[i];
    }
    if (!p->red[i] || keepdim) p->out[p->out_ndim++] = p->red[i] ? 1 : ref->sizes[i];
  }
  return true;
}

/* Reshapes a reduced value (reduced dims removed) to the plan's result. */
static tt_val finish(tt_builder *b, tt_val v, const rplan *p) {
  return tt_b_reshape(b, v, p->out_ndim, p->out);
}

/* Broadcasts a reduced value back to the input's shape. */
static tt_val expand_back(tt_builder *b, tt_val v, const rplan *p) {
  v = tt_b_reshape(b, v, p->ndim, p->kept_dims);
  return tt_b_broadcast_to(b, v, p->ndim, p->in);
}

static tt_val reduce_add(tt_builder *b, tt_val x, const rplan *p) {
  tt_dtype dt = tt_b_dtype(b, x);
  return tt_b_reduce(b, x, tt_b_constant(b, dt, 0), p->dims, p->n, dt == TT_BOOL ? "or" : "add");
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

/* Fails with PyTorch's message if a reduced dim is empty (max-like ops). */
static tt_error *require_nonempty(tt_lower_ctx *c, const char *op, const rplan *p, bool dim_given) {
  if (!dim_given && p->count == 0 && p->n == p->ndim)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                      "Specify the reduction dim with the 'dim' argument.", op);
  for (int k = 0; k < p->n; k++)
    if (p->in[p->dims[k]] == 0)
      return tt_lc_fail(c, TT_ERR_INDEX, "%s(): Expected reduction dim %" PRId64
                        " to have non-zero size.", op, p->dims[k]);
  return NULL;
}

/* Returns the builder's error if a helper failed it (bad dim...). */
static tt_error *builder_error(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  if (tt_b_error(b)) return tt_b_take_error(b);
  return tt_error_new(TT_ERR_RUNTIME, "internal: %s failed", tt_lc_op_name(c));
}

/* ------------------------------------------------------------ sum / prod */

/* Result dtype of sum/prod: dtype argument, else the out= tensor's dtype,
 * else int64 for integral/bool inputs, else the input dtype. */
static bool sum_dtype(const tt_lower_ctx *c, int dtype_arg, tt_dtype in, tt_dtype *out) {
  if (!tt_lc_is_none(c, dtype_arg)) return arg_dtype(c, dtype_arg, in, out);
  if (written_dtype(c, out)) return true;
  *out = tt_dtype_is_floating(in) ? in : TT_I64;
  return true;
}

static tt_error *sum_prod(tt_lower_ctx *c, bool prod, int dim_arg, int keep_arg, int dtype_arg) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  if (!plan_dims(c, r, dim_arg, true, keep_arg >= 0 && tt_lc_bool(c, keep_arg, false), &p))
    return builder_error(c);
  tt_dtype out;
  if (!sum_dtype(c, dtype_arg, r->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
  if (out == TT_BOOL) { /* bool accumulation: sum is "or", prod is "and" */
    tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), TT_BOOL);
    tt_val v = tt_b_reduce(b, x, tt_b_constant(b, TT_BOOL, prod ? 1 : 0), p.dims, p.n, prod ? "and" : "or");
    tt_lc_output(c, finish(b, v, &p));
    return NULL;
  }
  tt_dtype acc = acc_of(out);
  tt_val x = tt_b_convert(b, tt_b_convert(b, tt_lc_tensor(c, 0), out), acc);
  tt_val v = tt_b_reduce(b, x, tt_b_constant(b, acc, prod ? 1 : 0), p.dims, p.n,
                         prod ? "multiply" : "add");
  tt_lc_output(c, finish(b, tt_b_convert(b, v, out), &p));
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
  if (!plan_dims(c, r, has_dim ? 1 : -1, true, has_dim && tt_lc_bool(c, 2, false), &p))
    return builder_error(c);
  tt_dtype out = r->dtype;
  if (!tt_lc_is_none(c, dtype_arg)) {
    if (!arg_dtype(c, dtype_arg, r->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
    if (!tt_dtype_is_floating(out))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "mean(): could not infer output dtype. Optional dtype must be either a "
                        "floating point or complex dtype. Got: %s", torch_name(out));
  } else if (!tt_dtype_is_floating(out)) {
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "mean(): could not infer output dtype. Input dtype must be either a "
                      "floating point or complex dtype. Got: %s", torch_name(out));
  }
  tt_dtype acc = acc_of(out);
  tt_val x = tt_b_convert(b, tt_b_convert(b, tt_lc_tensor(c, 0), out), acc);
  tt_val s = reduce_add(b, x, &p);
  s = tt_b_binary(b, "divide", s, tt_full_like(b, s, (double)p.count));
  tt_lc_output(c, finish(b, tt_b_convert(b, s, out), &p));
  return NULL;
}

/* ------------------------------------------------------------ amax / amin / max / min */

static tt_error *extreme(tt_lower_ctx *c, bool is_max, int dim_arg, int keep_arg, const char *name) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  if (!plan_dims(c, r, dim_arg, true, keep_arg >= 0 && tt_lc_bool(c, keep_arg, false), &p))
    return builder_error(c);
  int64_t tmp[TT_MAX_DIMS];
  bool dim_given = dim_arg >= 0 && tt_lc_int_list(c, dim_arg, tmp, TT_MAX_DIMS) > 0;
  TT_TRY(require_nonempty(c, name, &p, dim_given));
  tt_dtype out_dt;
  if (dim_arg >= 0 && written_dtype(c, &out_dt) && out_dt != r->dtype)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected the dtype for input and out to match, but got %s for input's "
                      "dtype and %s for out's dtype.", torch_name(r->dtype), torch_name(out_dt));
  tt_val x = tt_lc_tensor(c, 0);
  tt_val v = extreme_reduce(b, x, p.dims, p.n, is_max);
  tt_lc_output(c, finish(b, v, &p));
  return NULL;
}

/* amax(self, dim=[], keepdim) */
static tt_error *lower_amax(tt_lower_ctx *c) { return extreme(c, true, 1, 2, "amax"); }
static tt_error *lower_amin(tt_lower_ctx *c) { return extreme(c, false, 1, 2, "amin"); }

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
  tt_b_op_multi(b, "stablehlo.reduce", ins, 4, attrs, region, outs, 2, res);
  *val = res[0];
  *idx = res[1];
}

/* max.dim / min.dim (self, dim, keepdim) -> (values, indices) */
static tt_error *extreme_dim(tt_lower_ctx *c, bool is_max) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  if (!plan_dims(c, r, 1, false, tt_lc_bool(c, 2, false), &p)) return builder_error(c);
  TT_TRY(require_nonempty(c, is_max ? "max" : "min", &p, true));
  tt_val x = tt_lc_tensor(c, 0);
  if (p.n == 0) { /* 0-d input */
    tt_lc_output(c, x);
    tt_lc_output(c, tt_b_constant_int(b, TT_I64, 0));
    return NULL;
  }
  tt_val v, i;
  arg_reduce(b, x, (int)p.dims[0], is_max, &v, &i);
  tt_lc_output(c, finish(b, v, &p));
  tt_lc_output(c, finish(b, i, &p));
  return NULL;
}

static tt_error *lower_max_dim(tt_lower_ctx *c) { return extreme_dim(c, true); }
static tt_error *lower_min_dim(tt_lower_ctx *c) { return extreme_dim(c, false); }

/* max(self) / min(self): full reduction */
static tt_error *lower_max(tt_lower_ctx *c) { return extreme(c, true, -1, -1, "max"); }
static tt_error *lower_min(tt_lower_ctx *c) { return extreme(c, false, -1, -1, "min"); }

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
  if (!plan_dims(c, r, no_dim ? -1 : 1, false, keepdim, &p)) return builder_error(c);
  TT_TRY(require_nonempty(c, name, &p, !no_dim));
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
  tt_lc_output(c, finish(b, i, &p));
  return NULL;
}

static tt_error *lower_argmax(tt_lower_ctx *c) { return arg_extreme(c, true); }
static tt_error *lower_argmin(tt_lower_ctx *c) { return arg_extreme(c, false); }

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
  if (!plan_dims(c, r, 1, true, tt_lc_bool(c, 3, false), &p)) return builder_error(c);
  tt_dtype acc = acc_of(r->dtype);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val s = reduce_add(b, x, &p);
  tt_val mean = tt_b_binary(b, "divide", s, tt_full_like(b, s, (double)p.count));
  tt_val d = tt_b_binary(b, "subtract", x, expand_back(b, mean, &p));
  tt_val ss = reduce_add(b, tt_b_binary(b, "multiply", d, d), &p);
  tt_val corr = tt_lc_is_none(c, 2) ? tt_b_constant(b, acc, 1) : tt_lc_scalar(c, 2, acc);
  tt_val dof = tt_b_binary(b, "subtract", tt_b_constant(b, acc, (double)p.count), corr);
  dof = tt_b_binary(b, "maximum", dof, tt_b_constant(b, acc, 0));
  tt_shape rs = tt_b_shape(b, ss);
  tt_val v = tt_b_binary(b, "divide", ss, tt_b_broadcast_in_dim(b, dof, rs.ndim, rs.dims, NULL));
  if (is_std) v = tt_b_unary(b, "sqrt", v);
  tt_lc_output(c, finish(b, tt_b_convert(b, v, r->dtype), &p));
  if (with_mean) tt_lc_output(c, finish(b, tt_b_convert(b, mean, r->dtype), &p));
  return NULL;
}

static tt_error *lower_var(tt_lower_ctx *c) { return var_std(c, false, false, "std and var"); }
static tt_error *lower_std(tt_lower_ctx *c) { return var_std(c, true, false, "std and var"); }
static tt_error *lower_var_mean(tt_lower_ctx *c) { return var_std(c, false, true, "var_mean"); }
static tt_error *lower_std_mean(tt_lower_ctx *c) { return var_std(c, true, true, "std_mean"); }

/* ------------------------------------------------------------ logsumexp */

/* logsumexp(self, dim, keepdim): m = amax (0 where infinite);
 * log(sum(exp(x - m))) + m, as PyTorch computes it. */
static tt_error *lower_logsumexp(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  int64_t tmp[TT_MAX_DIMS + 4];
  if (tt_lc_int_list(c, 1, tmp, TT_MAX_DIMS + 4) == 0) return tt_lc_decline(c, "empty dim list");
  rplan p;
  if (!plan_dims(c, r, 1, true, tt_lc_bool(c, 2, false), &p)) return builder_error(c);
  tt_dtype out = tt_dtype_is_floating(r->dtype) ? r->dtype : TT_DEFAULT_FLOAT;
  tt_dtype acc = acc_of(out);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val m = tt_reduce_max(b, x, p.dims, p.n);
  tt_val inf = tt_b_compare(b, "EQ", tt_b_unary(b, "abs", m), tt_full_like(b, m, INFINITY));
  m = tt_b_select(b, inf, tt_full_like(b, m, 0), m);
  tt_val e = tt_b_unary(b, "exponential", tt_b_binary(b, "subtract", x, expand_back(b, m, &p)));
  tt_val v = tt_b_binary(b, "add", tt_b_unary(b, "log", reduce_add(b, e, &p)), m);
  tt_lc_output(c, finish(b, tt_b_convert(b, v, out), &p));
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
  if (!plan_dims(c, r, has_dim ? 1 : -1, false, has_dim && tt_lc_bool(c, 2, false), &p))
    return builder_error(c);
  tt_dtype out = r->dtype == TT_U8 ? TT_U8 : TT_BOOL;
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), TT_BOOL);
  tt_val v = tt_b_reduce(b, x, tt_b_constant(b, TT_BOOL, is_all ? 1 : 0), p.dims, p.n,
                         is_all ? "and" : "or");
  tt_lc_output(c, finish(b, tt_b_convert(b, v, out), &p));
  return NULL;
}

static tt_error *lower_all(tt_lower_ctx *c) { return all_any(c, true); }
static tt_error *lower_any(tt_lower_ctx *c) { return all_any(c, false); }

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
  tt_b_op_multi(b, "stablehlo.reduce_window", ins, 2, attrs, region, &s, 1, &res);
  return res;
}

/* cumsum(self, dim, *, dtype) / cumprod */
static tt_error *cum(tt_lower_ctx *c, const char *op) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), r->ndim);
  if (dim < 0) return builder_error(c);
  tt_dtype out;
  if (!sum_dtype(c, 2, r->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
  if (out == TT_BOOL) return tt_lc_decline(c, "bool result dtype");
  tt_dtype acc = acc_of(out);
  tt_val x = tt_b_convert(b, tt_b_convert(b, tt_lc_tensor(c, 0), out), acc);
  if (r->ndim > 0) x = scan(b, x, (int)dim, op);
  tt_lc_output(c, tt_b_convert(b, x, out));
  return NULL;
}

static tt_error *lower_cumsum(tt_lower_ctx *c) { return cum(c, "add"); }
static tt_error *lower_cumprod(tt_lower_ctx *c) { return cum(c, "multiply"); }

/* ------------------------------------------------------------ softmax */

/* _softmax / _log_softmax (self, dim, half_to_float) */
static tt_error *softmax(tt_lower_ctx *c, bool log) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!tt_dtype_is_floating(r->dtype)) return tt_lc_decline(c, "non-float input");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), r->ndim);
  if (dim < 0) return builder_error(c);
  tt_dtype out = tt_lc_bool(c, 2, false) && is_half(r->dtype) ? TT_F32 : r->dtype;
  tt_dtype acc = acc_of(r->dtype);
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
  tt_val m = tt_reduce_max(b, x, p.dims, 1);
  tt_val d = tt_b_binary(b, "subtract", x, expand_back(b, m, &p));
  tt_val e = tt_b_unary(b, "exponential", d);
  tt_val s = reduce_add(b, e, &p);
  tt_val v = log ? tt_b_binary(b, "subtract", d, expand_back(b, tt_b_unary(b, "log", s), &p))
                 : tt_b_binary(b, "divide", e, expand_back(b, s, &p));
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
  if (dim < 0) return builder_error(c);
  tt_dtype out;
  if (!arg_dtype(c, 3, g->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
  if (!tt_dtype_is_floating(out)) return tt_lc_decline(c, "non-float input_dtype");
  tt_dtype acc = acc_of(tt_promote(g->dtype, o->dtype));
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
    v = tt_b_binary(b, "subtract", gv, tt_b_binary(b, "multiply", tt_b_unary(b, "exponential", ov), s));
  } else {
    tt_val go = tt_b_binary(b, "multiply", gv, ov);
    tt_val s = expand_back(b, reduce_add(b, go, &p), &p);
    v = tt_b_binary(b, "subtract", go, tt_b_binary(b, "multiply", ov, s));
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
  tt_val r_2 = tt_b_unary(b, "sqrt", reduce_add(b, tt_b_binary(b, "multiply", a, a), &p));
  tt_shape as = tt_b_shape(b, a), rs = tt_b_shape(b, r_1);
  tt_val pa = tt_b_binary(b, "power", a, tt_b_broadcast_in_dim(b, ord, as.ndim, as.dims, NULL));
  tt_val inv = tt_b_binary(b, "divide", tt_b_constant(b, acc, 1), ord);
  tt_val r_p = tt_b_binary(b, "power", reduce_add(b, pa, &p),
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
static tt_error *lower_vector_norm(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!tt_dtype_is_floating(r->dtype))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "linalg.vector_norm: Expected a floating point or complex tensor as input. "
                      "Got %s", torch_name(r->dtype));
  tt_dtype out = r->dtype;
  if (!tt_lc_is_none(c, 4)) {
    if (!arg_dtype(c, 4, r->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
    if (!tt_dtype_is_floating(out) || tt_promote(r->dtype, out) != out)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "linalg.vector_norm: the dtype of the input (%s) should be convertible "
                        "without narrowing to the specified dtype (%s)",
                        torch_name(r->dtype), torch_name(out));
  }
  if (tt_lc_kind(c, 1) != TT_ARG_SCALAR) return tt_lc_decline(c, "ord is not a Scalar");
  rplan p;
  if (!plan_dims(c, r, 2, true, tt_lc_bool(c, 3, false), &p)) return builder_error(c);
  /* inf/-inf on empty reductions raise in PyTorch, depending on ord's value */
  if (p.count == 0) return tt_lc_decline(c, "empty reduction");
  tt_dtype acc = acc_of(out);
  tt_val a = tt_b_unary(b, "abs", tt_b_convert(b, tt_lc_tensor(c, 0), acc));
  tt_val v = vnorm(b, a, tt_lc_scalar(c, 1, acc), &p);
  tt_lc_output(c, finish(b, tt_b_convert(b, v, out), &p));
  return NULL;
}

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
  tt_b_op_multi(b, "stablehlo.sort", ins, 2, attrs, rg, outs, 2, r);
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
  return tt_b_op(b, "stablehlo.gather", ins, 2, attrs, tt_shape_make(s.dtype, ps.ndim, ps.dims));
}

/* Zero int64 indices shaped like x. */
static tt_val zero_idx(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  s.dtype = TT_I64;
  return tt_b_full(b, s, 0);
}

/* sort(self, dim=-1, descending) / sort.stable(self, *, stable, dim=-1, descending).
 * Always stable: CPU's stable order for ties (its unstable sort also keeps
 * it for short rows). */
static tt_error *lower_sort(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  int dim_arg = tt_lc_kind(c, 1) == TT_ARG_INT ? 1 : 2;
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, dim_arg, -1), r->ndim);
  if (dim < 0) return builder_error(c);
  bool desc = tt_lc_bool(c, dim_arg + 1, false);
  tt_val x = tt_lc_tensor(c, 0);
  if (r->ndim == 0 || r->sizes[dim] <= 1) {
    tt_lc_output(c, x);
    tt_lc_output(c, zero_idx(b, x));
    return NULL;
  }
  tt_val v, i;
  sort_along(b, x, (int)dim, desc, &v, &i);
  tt_lc_output(c, v);
  tt_lc_output(c, i);
  return NULL;
}

/* Slice [lo, hi) of x along dim. */
static tt_val slice_dim(tt_builder *b, tt_val x, int dim, int64_t lo, int64_t hi) {
  tt_shape s = tt_b_shape(b, x);
  int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS];
  memcpy(li, s.dims, sizeof li);
  st[dim] = lo;
  li[dim] = hi;
  return tt_b_slice(b, x, st, li, NULL);
}

/* topk(self, k, dim=-1, largest, sorted) */
static tt_error *lower_topk(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  int64_t k = tt_lc_int(c, 1, 0);
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, -1), r->ndim);
  if (dim < 0) return builder_error(c);
  bool largest = tt_lc_bool(c, 3, true), sorted = tt_lc_bool(c, 4, true);
  int64_t n = r->ndim ? r->sizes[dim] : 1;
  if (k < 0 || k > n) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "selected index k out of range");
  /* CPU leaves unsorted results in nth_element order unless it partial-sorts */
  if (!sorted && k > 1 && k * 64 > n) return tt_lc_decline(c, "topk(sorted=False) order");
  if (r->ndim == 0 && k == 0) return tt_lc_decline(c, "empty topk of a scalar");
  tt_val x = tt_lc_tensor(c, 0), v = x, i;
  if (r->ndim == 0 || n <= 1) {
    i = zero_idx(b, x);
  } else {
    sort_along(b, x, (int)dim, largest, &v, &i);
  }
  if (r->ndim > 0 && k < n) {
    v = slice_dim(b, v, (int)dim, 0, k);
    i = slice_dim(b, i, (int)dim, 0, k);
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
  tt_lc_output(c, finish(b, take_at(b, sv, dim, pos), p));
  tt_lc_output(c, finish(b, take_at(b, si, dim, pos), p));
}

/* Plan for a single-dim value-selecting reduction (self, dim, keepdim). */
static tt_error *one_dim_plan(tt_lower_ctx *c, int dim_arg, int keep_arg, const char *name, rplan *p) {
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!plan_dims(c, r, dim_arg, false, tt_lc_bool(c, keep_arg, false), p)) return builder_error(c);
  return require_nonempty(c, name, p, true);
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
    tt_lc_output(c, zero_idx(b, x));
    return NULL;
  }
  tt_val v, i;
  sort_along(b, x, (int)dim, false, &v, &i);
  tt_lc_output(c, finish(b, slice_dim(b, v, (int)dim, k - 1, k), &p));
  tt_lc_output(c, finish(b, slice_dim(b, i, (int)dim, k - 1, k), &p));
  return NULL;
}

/* Full reduction plan of a shape (result 0-d, or all ones with keepdim). */
static void plan_all(rplan *p, int ndim, const int64_t *sizes, bool keepdim) {
  memset(p, 0, sizeof *p);
  p->ndim = ndim;
  p->keepdim = keepdim;
  p->count = 1;
  for (int i = 0; i < ndim; i++) {
    p->in[i] = sizes[i];
    p->red[i] = true;
    p->dims[p->n++] = i;
    p->kept_dims[i] = 1;
    p->count *= sizes[i];
    if (keepdim) p->out[p->out_ndim++] = 1;
  }
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
    plan_all(&p, 1, &numel, false);
  } else {
    TT_TRY(one_dim_plan(c, 1, 2, ignore_nan ? "nanmedian" : "median", &p));
    if (p.n == 0) {
      tt_lc_output(c, x);
      tt_lc_output(c, zero_idx(b, x));
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
    tt_val left = tt_b_binary(b, "subtract", tt_b_full(b, rs, (double)n), cnt);
    if (ignore_nan) {
      /* (n - nan - 1) / 2, truncating like C (all NaN -> position 0) */
      pos = tt_b_binary(b, "divide", tt_b_binary(b, "subtract", left, tt_b_full(b, rs, 1)),
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
    tt_val prev = tt_b_pad(b, slice_dim(b, x, dim, 0, n - sh), tt_b_constant_int(b, TT_I64, 0), lo, hi, NULL);
    x = tt_b_binary(b, "maximum", x, prev);
  }
  return x;
}

/* mode(self, dim=-1, keepdim): the smallest of the most frequent values and
 * the index of its last occurrence (CPU's order for rows it sorts stably). */
static tt_error *lower_mode(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  TT_TRY(one_dim_plan(c, 1, 2, "mode", &p));
  tt_val x = tt_lc_tensor(c, 0);
  if (p.n == 0) {
    tt_lc_output(c, x);
    tt_lc_output(c, zero_idx(b, x));
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
    tt_val neq = tt_b_compare(b, "NE", slice_dim(b, k, dim, 1, n), slice_dim(b, k, dim, 0, n - 1));
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
    tt_val len = tt_b_binary(b, "add", tt_b_binary(b, "subtract", iota, run_start), tt_b_full(b, is, 1));
    tt_val freq = tt_b_select(b, end, len, zeros);
    tt_val fv;
    arg_reduce(b, freq, dim, true, &fv, &pos);
  }
  output_picked(c, sv, si, dim, pos, &p);
  return NULL;
}

/* ------------------------------------------------------------ nansum / count_nonzero / aminmax */

/* nansum(self, dim=None, keepdim, *, dtype): sum with NaNs counted as 0. */
static tt_error *lower_nansum(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  if (!plan_dims(c, r, 1, true, tt_lc_bool(c, 2, false), &p)) return builder_error(c);
  tt_dtype out;
  if (!sum_dtype(c, 3, r->dtype, &out)) return tt_lc_decline(c, "unsupported dtype");
  if (out == TT_BOOL) return tt_lc_decline(c, "bool result dtype");
  tt_val x = tt_lc_tensor(c, 0);
  if (tt_dtype_is_floating(r->dtype))
    x = tt_b_select(b, tt_b_compare(b, "NE", x, x), tt_full_like(b, x, 0), x);
  tt_dtype acc = acc_of(out);
  x = tt_b_convert(b, tt_b_convert(b, x, out), acc);
  tt_val v = tt_b_reduce(b, x, tt_b_constant(b, acc, 0), p.dims, p.n, "add");
  tt_lc_output(c, finish(b, tt_b_convert(b, v, out), &p));
  return NULL;
}

/* count_nonzero(self, dim=None) / count_nonzero.dim_IntList(self, dim) -> int64 */
static tt_error *lower_count_nonzero(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  rplan p;
  if (!plan_dims(c, r, 1, true, false, &p)) return builder_error(c);
  tt_val nz = tt_b_convert(b, tt_b_convert(b, tt_lc_tensor(c, 0), TT_BOOL), TT_I64);
  tt_val v = tt_b_reduce(b, nz, tt_b_constant_int(b, TT_I64, 0), p.dims, p.n, "add");
  tt_lc_output(c, finish(b, v, &p));
  return NULL;
}

/* aminmax(self, *, dim=None, keepdim) -> (min, max) */
static tt_error *lower_aminmax(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  bool has_dim = !tt_lc_is_none(c, 1);
  rplan p;
  if (!plan_dims(c, r, has_dim ? 1 : -1, true, tt_lc_bool(c, 2, false), &p)) return builder_error(c);
  if (p.count == 0 || (has_dim && p.n == 1 && p.in[p.dims[0]] == 0))
    return tt_lc_decline(c, "aminmax over an empty dimension");
  tt_val x = tt_lc_tensor(c, 0);
  tt_dtype kt = r->dtype == TT_BOOL ? TT_U8 : r->dtype;
  x = tt_b_convert(b, x, kt);
  tt_val mn = extreme_reduce(b, x, p.dims, p.n, false), mx = extreme_reduce(b, x, p.dims, p.n, true);
  tt_lc_output(c, finish(b, tt_b_convert(b, mn, r->dtype), &p));
  tt_lc_output(c, finish(b, tt_b_convert(b, mx, r->dtype), &p));
  return NULL;
}

/* ------------------------------------------------------------ cummax / cummin / logcumsumexp */

/* cummax / cummin (self, dim) -> (values, indices). CPU's rule, applied in a
 * log-step scan: a later element replaces the running one if it is NaN, or
 * if the running one is not NaN and the new one is >= (<=) it. */
static tt_error *cum_extreme(tt_lower_ctx *c, bool is_max) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), r->ndim);
  if (dim < 0) return builder_error(c);
  tt_val x = tt_lc_tensor(c, 0);
  int64_t n = r->ndim ? r->sizes[dim] : 1;
  if (r->ndim == 0 || n <= 1) {
    tt_lc_output(c, x);
    tt_lc_output(c, zero_idx(b, x));
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
    tt_val pv = tt_b_pad(b, slice_dim(b, v, (int)dim, 0, n - sh), ident, lo, hi, NULL);
    tt_val pi = tt_b_pad(b, slice_dim(b, idx, (int)dim, 0, n - sh), tt_b_constant_int(b, TT_I64, 0), lo, hi, NULL);
    tt_val pick = tt_b_compare(b, is_max ? "GE" : "LE", v, pv);
    if (fl) {
      tt_val vn = tt_b_compare(b, "NE", v, v), pn = tt_b_compare(b, "NE", pv, pv);
      pick = tt_b_binary(b, "or", vn, tt_b_binary(b, "and", tt_b_unary(b, "not", pn), pick));
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

/* logcumsumexp(self, dim): log-step scan of CPU's log_add_exp
 * (max + log1p(exp(min - max)); equal infinities kept; NaN propagates). */
static tt_error *lower_logcumsumexp(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!tt_dtype_is_floating(r->dtype)) return tt_lc_decline(c, "non-float input");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), r->ndim);
  if (dim < 0) return builder_error(c);
  tt_dtype acc = acc_of(r->dtype);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  int64_t n = r->ndim ? r->sizes[dim] : 1;
  for (int64_t sh = 1; r->ndim && sh < n; sh *= 2) {
    int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0};
    lo[dim] = sh;
    tt_val a = tt_b_pad(b, slice_dim(b, x, (int)dim, 0, n - sh), tt_b_constant(b, acc, -INFINITY), lo, hi, NULL);
    tt_val mn = tt_b_binary(b, "minimum", a, x), mx = tt_b_binary(b, "maximum", a, x);
    tt_val v = tt_b_binary(b, "add", tt_b_unary(b, "log_plus_one",
                                                tt_b_unary(b, "exponential", tt_b_binary(b, "subtract", mn, mx))),
                           mx);
    tt_val same_inf = tt_b_binary(b, "and", tt_b_compare(b, "EQ", mn, mx),
                                  tt_b_compare(b, "EQ", tt_b_unary(b, "abs", mn), tt_full_like(b, mn, INFINITY)));
    v = tt_b_select(b, same_inf, a, v);
    tt_val nan = tt_b_binary(b, "or", tt_b_compare(b, "NE", a, a), tt_b_compare(b, "NE", x, x));
    x = tt_b_select(b, nan, tt_full_like(b, x, NAN), v);
  }
  tt_lc_output(c, tt_b_convert(b, x, r->dtype));
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
  if (dim < 0) return builder_error(c);
  rplan p;
  plan_all(&p, r->ndim, r->sizes, false);
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
  tt_dtype acc = acc_of(r->dtype);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val norm = vnorm(b, tt_b_unary(b, "abs", x), tt_lc_scalar(c, 1, acc), &p);
  tt_shape ns = tt_b_shape(b, norm);
  tt_val mx = tt_b_broadcast_in_dim(b, tt_lc_scalar(c, 3, acc), ns.ndim, ns.dims, NULL);
  tt_val scaled = tt_b_binary(b, "divide", mx, tt_b_binary(b, "add", norm, tt_full_like(b, norm, 1e-7)));
  tt_val factor = tt_b_select(b, tt_b_compare(b, "GT", norm, mx), scaled, tt_full_like(b, norm, 1));
  tt_val v = tt_b_binary(b, "multiply", x, expand_back(b, factor, &p));
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
  plan_all(&p, nd, dims, false);
  if (p.count == 0) return tt_lc_decline(c, "empty dist");
  tt_dtype acc = acc_of(dt);
  tt_val d = tt_b_binary(b, "subtract", tt_operand(c, 0, dt, nd, dims), tt_operand(c, 1, dt, nd, dims));
  tt_val ord = tt_lc_is_none(c, 2) ? tt_b_constant(b, acc, 2) : tt_lc_scalar(c, 2, acc);
  tt_val v = vnorm(b, tt_b_unary(b, "abs", tt_b_convert(b, d, acc)), ord, &p);
  tt_lc_output(c, finish(b, tt_b_convert(b, v, dt), &p));
  return NULL;
}

/* ------------------------------------------------------------ searchsorted / bucketize */

/* x [R, M] gathered at pos [R, K] (int64, in range) -> [R, K]. */
static tt_val take_rows(tt_builder *b, tt_val x, tt_val pos) {
  tt_shape ps = tt_b_shape(b, pos);
  int64_t d3[3] = {ps.dims[0], ps.dims[1], 1};
  tt_val parts[2] = {tt_b_reshape(b, tt_b_iota(b, ps, 0), 3, d3), tt_b_reshape(b, pos, 3, d3)};
  tt_val ins[2] = {x, tt_b_concat(b, parts, 2, 2)};
  return tt_b_op(b, "stablehlo.gather", ins, 2,
                 "dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], "
                 "start_index_map = [0, 1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>, "
                 "indices_are_sorted = false",
                 tt_shape_make(tt_b_dtype(b, x), 2, ps.dims));
}

/* CPU's binary search (lower bound: first position with seq >= v; upper
 * bound: seq > v), unrolled over log2(M) + 1 steps, so NaNs land where CPU
 * puts them. seq [..., M]: 1-D, or the leading dims of the values. */
static tt_error *bsearch_impl(tt_lower_ctx *c, int seq_arg, int val_arg, int side_arg, int sorter_arg) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *s = tt_lc_ref(c, seq_arg);
  if (!s || !s->storage || s->ndim < 1) return tt_lc_decline(c, "boundaries layout");
  const tt_tensor_ref *so = sorter_arg >= 0 && !tt_lc_is_none(c, sorter_arg) ? tt_lc_ref(c, sorter_arg) : NULL;
  if (so && (!so->storage || so->dtype != TT_I64 || so->ndim != s->ndim ||
             memcmp(so->sizes, s->sizes, sizeof(int64_t) * (size_t)s->ndim)))
    return tt_lc_decline(c, "sorter dtype or shape");
  bool right = tt_lc_bool(c, 3, false);
  if (side_arg >= 0 && !tt_lc_is_none(c, side_arg)) {
    const char *side = tt_lc_string(c, side_arg, "left");
    if (strcmp(side, "right") == 0) right = true;
    else if (strcmp(side, "left") != 0 || right) return tt_lc_decline(c, "side argument");
  }
  tt_dtype dt = s->dtype;
  if (dt == TT_BOOL) return tt_lc_decline(c, "bool boundaries");
  tt_val v;
  int vnd = 0;
  int64_t vdims[TT_MAX_DIMS], n = 1;
  if (tt_lc_kind(c, val_arg) == TT_ARG_SCALAR) {
    const tt_scalar *sc = tt_lc_scalar_ref(c, val_arg);
    if (!sc || sc->kind == TT_SCALAR_BOOL || (sc->kind == TT_SCALAR_FLOAT && !tt_dtype_is_floating(dt)))
      return tt_lc_decline(c, "scalar kind");
    if (s->ndim != 1) return tt_lc_decline(c, "scalar value with N-D boundaries");
    v = tt_lc_scalar(c, val_arg, dt);
  } else {
    const tt_tensor_ref *vr = tt_lc_ref(c, val_arg);
    if (!vr || !vr->storage || vr->dtype != dt) return tt_lc_decline(c, "value dtype or layout");
    if (s->ndim != 1) {
      if (vr->ndim != s->ndim) return tt_lc_decline(c, "rank mismatch");
      for (int i = 0; i + 1 < s->ndim; i++)
        if (vr->sizes[i] != s->sizes[i]) return tt_lc_decline(c, "leading dims differ");
    }
    vnd = vr->ndim;
    for (int i = 0; i < vnd; i++) n *= (vdims[i] = vr->sizes[i]);
    v = tt_lc_tensor(c, val_arg);
  }
  int64_t m = s->sizes[s->ndim - 1], ns = 1;
  for (int i = 0; i < s->ndim; i++) ns *= s->sizes[i];
  if (m == 0 || n == 0) return tt_lc_decline(c, "empty input");
  int64_t rows = s->ndim == 1 ? 1 : ns / m;
  int64_t bd_dims[2] = {rows, m}, v_dims[2] = {rows, n / rows};
  tt_val bd = tt_b_reshape(b, tt_lc_tensor(c, seq_arg), 2, bd_dims);
  /* CPU reads seq[sorter[mid]]: the same search over the gathered sequence */
  if (so) bd = take_rows(b, bd, tt_b_reshape(b, tt_lc_tensor(c, sorter_arg), 2, bd_dims));
  tt_val vv = tt_b_reshape(b, v, 2, v_dims);
  tt_shape is = tt_shape_make(TT_I64, 2, v_dims);
  tt_val st = tt_b_full(b, is, 0), en = tt_b_full(b, is, (double)m);
  tt_val one = tt_b_full(b, is, 1), two = tt_b_full(b, is, 2), last = tt_b_full(b, is, (double)(m - 1));
  for (int64_t w = m; w > 0; w >>= 1) {
    tt_val active = tt_b_compare(b, "LT", st, en);
    tt_val mid = tt_b_binary(b, "add", st, tt_b_binary(b, "divide", tt_b_binary(b, "subtract", en, st), two));
    tt_val mv = take_rows(b, bd, tt_b_binary(b, "minimum", mid, last));
    tt_val hit = tt_b_compare(b, right ? "GT" : "GE", mv, vv);
    tt_val go = tt_b_binary(b, "and", active, tt_b_unary(b, "not", hit));
    tt_val stop = tt_b_binary(b, "and", active, hit);
    st = tt_b_select(b, go, tt_b_binary(b, "add", mid, one), st);
    en = tt_b_select(b, stop, mid, en);
  }
  tt_val out = tt_b_reshape(b, st, vnd, vdims);
  tt_lc_output(c, tt_b_convert(b, out, tt_lc_bool(c, 2, false) ? TT_I32 : TT_I64));
  return NULL;
}

/* searchsorted(sorted_sequence, self, *, out_int32, right, side, sorter) */
static tt_error *lower_searchsorted(tt_lower_ctx *c) { return bsearch_impl(c, 0, 1, 4, 5); }

/* bucketize(self, boundaries, *, out_int32, right) */
static tt_error *lower_bucketize(tt_lower_ctx *c) {
  const tt_tensor_ref *s = tt_lc_ref(c, 1);
  if (!s || s->ndim != 1) return tt_lc_decline(c, "boundaries must be 1-D");
  return bsearch_impl(c, 1, 0, -1, -1);
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
    {lower_max_dim, {"max.dim", "max.dim_max"}},
    {lower_min_dim, {"min.dim", "min.dim_min"}},
    {lower_argmax, {"argmax", "argmax.out"}},
    {lower_argmin, {"argmin", "argmin.out"}},
    {lower_var, {"var.correction", "var.correction_out"}},
    {lower_std, {"std.correction", "std.correction_out"}},
    {lower_var_mean, {"var_mean.correction", "var_mean.correction_out"}},
    {lower_std_mean, {"std_mean.correction", "std_mean.correction_out"}},
    {lower_logsumexp, {"logsumexp", "logsumexp.out"}},
    {lower_all, {"all", "all.all_out", "all.dim", "all.out", "all.dims", "all.dims_out"}},
    {lower_any, {"any", "any.all_out", "any.dim", "any.out", "any.dims", "any.dims_out"}},
    {lower_cumsum, {"cumsum", "cumsum_", "cumsum.out"}},
    {lower_cumprod, {"cumprod", "cumprod_", "cumprod.out"}},
    {lower_softmax, {"_softmax", "_softmax.out"}},
    {lower_log_softmax, {"_log_softmax", "_log_softmax.out"}},
    {lower_softmax_bw, {"_softmax_backward_data", "_softmax_backward_data.out"}},
    {lower_log_softmax_bw, {"_log_softmax_backward_data", "_log_softmax_backward_data.out"}},
    {lower_vector_norm, {"linalg_vector_norm", "linalg_vector_norm.out"}},
    {lower_sort, {"sort", "sort.values", "sort.stable", "sort.values_stable"}},
    {lower_topk, {"topk", "topk.values"}},
    {lower_kthvalue, {"kthvalue", "kthvalue.values"}},
    {lower_median, {"median", "median.out", "median.dim", "median.dim_values"}},
    {lower_nanmedian, {"nanmedian", "nanmedian.out", "nanmedian.dim", "nanmedian.dim_values"}},
    {lower_mode, {"mode", "mode.values"}},
    {lower_nansum, {"nansum", "nansum.out"}},
    {lower_count_nonzero, {"count_nonzero", "count_nonzero.out", "count_nonzero.dim_IntList",
                           "count_nonzero.dim_IntList_out"}},
    {lower_aminmax, {"aminmax", "aminmax.out"}},
    {lower_cummax, {"cummax", "cummax.out"}},
    {lower_cummin, {"cummin", "cummin.out"}},
    {lower_logcumsumexp, {"logcumsumexp", "logcumsumexp.out"}},
    {lower_renorm, {"renorm", "renorm_", "renorm.out"}},
    {lower_dist, {"dist", "dist.out"}},
    {lower_searchsorted, {"searchsorted.Tensor", "searchsorted.Tensor_out", "searchsorted.Scalar",
                          "searchsorted.Scalar_out"}},
    {lower_bucketize, {"bucketize.Tensor", "bucketize.Tensor_out", "bucketize.Scalar", "bucketize.Scalar_out"}},
    {NULL, {NULL}},
};
