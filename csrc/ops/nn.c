/* Lowerings of the nn family (see lowering.h): normalization layers
 * (batch/layer/group norm and their backwards), embedding backward,
 * dropout, and losses (nll, mse, binary cross entropy, huber, smooth l1).
 *
 * Numerics follow CPU PyTorch: float16/bfloat16 inputs are computed in
 * float32 ("opmath") and rounded once at the end; statistics are two-pass
 * (mean, then mean of squared deviations). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common.h"

enum { RED_NONE = 0, RED_MEAN = 1, RED_SUM = 2 };

/* ------------------------------------------------------------ helpers */

static tt_dtype opmath(tt_dtype dt) { return (dt == TT_F16 || dt == TT_BF16) ? TT_F32 : dt; }

static bool is_float_dt(tt_dtype dt) {
  return dt == TT_F16 || dt == TT_BF16 || dt == TT_F32 || dt == TT_F64;
}

/* Elementwise binary op; a 0-d or lower-rank operand is broadcast
 * (right-aligned) to the other's shape. */
static tt_val bin(tt_builder *b, const char *op, tt_val x, tt_val y) {
  tt_shape sx = tt_b_shape(b, x), sy = tt_b_shape(b, y);
  if (sx.ndim > sy.ndim || (sx.ndim == sy.ndim && tt_shape_numel(&sx) > tt_shape_numel(&sy)))
    y = tt_b_broadcast_to(b, y, sx.ndim, sx.dims);
  else if (sy.ndim > sx.ndim || tt_shape_numel(&sy) > tt_shape_numel(&sx))
    x = tt_b_broadcast_to(b, x, sy.ndim, sy.dims);
  return tt_b_binary(b, op, x, y);
}

static tt_val add(tt_builder *b, tt_val x, tt_val y) { return bin(b, "add", x, y); }
static tt_val sub(tt_builder *b, tt_val x, tt_val y) { return bin(b, "subtract", x, y); }
static tt_val mul(tt_builder *b, tt_val x, tt_val y) { return bin(b, "multiply", x, y); }
static tt_val dvd(tt_builder *b, tt_val x, tt_val y) { return bin(b, "divide", x, y); }
static tt_val cst(tt_builder *b, tt_val like, double v) {
  return tt_b_constant(b, tt_b_dtype(b, like), v);
}

/* Sum over dims without changing dtype (caller already in opmath). */
static tt_val rsum(tt_builder *b, tt_val x, const int64_t *dims, int n) {
  return tt_b_reduce(b, x, tt_b_constant(b, tt_b_dtype(b, x), 0), dims, n, "add");
}

/* Sum of all elements as a 0-d value. */
static tt_val rsum_all(tt_builder *b, tt_val x) {
  int64_t dims[TT_MAX_DIMS];
  int nd = tt_b_ndim(b, x);
  for (int i = 0; i < nd; i++) dims[i] = i;
  return rsum(b, x, dims, nd);
}

/* Reshape x (a [C] vector) so it broadcasts along dim `axis` of an
 * ndim-dimensional shape `dims`. */
static tt_val along(tt_builder *b, tt_val v, int ndim, const int64_t *dims, int axis) {
  int64_t map[1] = {axis};
  return tt_b_broadcast_in_dim(b, v, ndim, dims, map);
}

/* Reads optional tensor argument i converted to dt, or TT_INVALID if None. */
static tt_val opt_tensor(tt_lower_ctx *c, int i, tt_dtype dt) {
  if (!tt_lc_ref(c, i)) return TT_INVALID;
  return tt_b_convert(tt_lc_builder(c), tt_lc_tensor(c, i), dt);
}

static bool shape_is(const tt_tensor_ref *r, int ndim, const int64_t *dims) {
  if (!r || r->ndim != ndim) return false;
  for (int i = 0; i < ndim; i++)
    if (r->sizes[i] != dims[i]) return false;
  return true;
}

/* Applies a loss reduction to an opmath loss tensor, returning dtype dt. */
static tt_val reduce_loss(tt_builder *b, tt_val loss, int64_t reduction, tt_dtype dt) {
  if (reduction == RED_NONE) return tt_b_convert(b, loss, dt);
  /* CPU rounds each element to dt before the reduction */
  loss = tt_b_convert(b, tt_b_convert(b, loss, dt), tt_b_dtype(b, loss));
  tt_shape s = tt_b_shape(b, loss);
  tt_val r = rsum_all(b, loss);
  if (reduction == RED_MEAN) r = dvd(b, r, cst(b, r, (double)tt_shape_numel(&s)));
  return tt_b_convert(b, r, dt);
}

static tt_error *check_reduction(tt_lower_ctx *c, int64_t reduction) {
  if (reduction < 0 || reduction > 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%" PRId64 " is not a valid value for reduction",
                      reduction);
  return NULL;
}

/* ------------------------------------------------------------ batch norm */

/* Shared by native_batch_norm and _native_batch_norm_legit. Arguments:
 * input, weight, bias, running_mean (rm < 0: none), running_var, training,
 * momentum, eps. Emits (out, save_mean, save_invstd) and writes running
 * stats in training mode. */
static tt_error *batch_norm_impl(tt_lower_ctx *c, int rm_arg, int rv_arg, int train_arg) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *in = tt_lc_ref(c, 0);
  if (!in || !is_float_dt(in->dtype)) return tt_lc_decline(c, "non-float input");
  if (in->ndim < 2)
    return tt_lc_decline(c, "input of %d dims", in->ndim);
  int nd = in->ndim;
  int64_t C = in->sizes[1];
  bool training = tt_lc_bool(c, train_arg, false);
  double momentum = tt_lc_double(c, train_arg + 1, 0.1);
  double eps = tt_lc_double(c, train_arg + 2, 1e-5);
  const tt_tensor_ref *w = tt_lc_ref(c, 1), *bi = tt_lc_ref(c, 2);
  const tt_tensor_ref *rm = rm_arg >= 0 ? tt_lc_ref(c, rm_arg) : NULL;
  const tt_tensor_ref *rv = rv_arg >= 0 ? tt_lc_ref(c, rv_arg) : NULL;
  /* parameter dtype: CPU allows reduced-precision input with float32 params */
  tt_dtype pdt = in->dtype;
  const tt_tensor_ref *params[4] = {w, bi, rm, rv};
  for (int k = 0; k < 4; k++) {
    if (!params[k]) continue;
    if (params[k]->ndim != 1 || params[k]->sizes[0] != C)
      return tt_lc_decline(c, "parameter of unexpected shape");
    if (params[k]->dtype != in->dtype) {
      if (!(params[k]->dtype == TT_F32 && opmath(in->dtype) == TT_F32 && in->dtype != TT_F32))
        return tt_lc_decline(c, "mixed dtypes");
      pdt = TT_F32;
    }
  }
  for (int k = 0; k < 4; k++)
    if (params[k] && params[k]->dtype != pdt) return tt_lc_decline(c, "mixed dtypes");
  if ((rm == NULL) != (rv == NULL)) return tt_lc_decline(c, "only one running stat");
  if (!training && !rm)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "running_mean must be defined in evaluation mode");
  int64_t n = 1;
  for (int i = 0; i < nd; i++)
    if (i != 1) n *= in->sizes[i];
  if (training && n <= 1)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected more than 1 value per channel when training, got input size "
                      "[%" PRId64 ", %" PRId64 "...]", in->sizes[0], C);
  tt_dtype acc = opmath(in->dtype);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  int64_t rdims[TT_MAX_DIMS];
  int nr = 0;
  for (int i = 0; i < nd; i++)
    if (i != 1) rdims[nr++] = i;
  tt_val mean, invstd, var = TT_INVALID;
  if (training) {
    mean = dvd(b, rsum(b, x, rdims, nr), tt_b_constant(b, acc, (double)n));
    tt_val d = sub(b, x, along(b, mean, nd, in->sizes, 1));
    var = dvd(b, rsum(b, mul(b, d, d), rdims, nr), tt_b_constant(b, acc, (double)n));
    invstd = tt_b_unary(b, "rsqrt", add(b, var, tt_b_constant(b, acc, eps)));
  } else {
    mean = opt_tensor(c, rm_arg, acc);
    tt_val v = opt_tensor(c, rv_arg, acc);
    invstd = tt_b_unary(b, "rsqrt", add(b, v, tt_b_constant(b, acc, eps)));
  }
  tt_val y = mul(b, sub(b, x, along(b, mean, nd, in->sizes, 1)), along(b, invstd, nd, in->sizes, 1));
  if (w) y = mul(b, y, along(b, opt_tensor(c, 1, acc), nd, in->sizes, 1));
  if (bi) y = add(b, y, along(b, opt_tensor(c, 2, acc), nd, in->sizes, 1));
  tt_lc_output(c, tt_b_convert(b, y, in->dtype));
  if (training) {
    tt_lc_output(c, tt_b_convert(b, mean, pdt));
    tt_lc_output(c, tt_b_convert(b, invstd, pdt));
    if (rm) {
      tt_val m = tt_b_constant(b, acc, momentum), om = tt_b_constant(b, acc, 1.0 - momentum);
      tt_val old_m = opt_tensor(c, rm_arg, acc), old_v = opt_tensor(c, rv_arg, acc);
      tt_val unbiased = mul(b, var, tt_b_constant(b, acc, (double)n / (double)(n - 1)));
      tt_lc_write(c, rm_arg, -1, add(b, mul(b, old_m, om), mul(b, mean, m)));
      tt_lc_write(c, rv_arg, -1, add(b, mul(b, old_v, om), mul(b, unbiased, m)));
    }
  } else {
    int64_t zero = 0;
    tt_lc_output(c, tt_b_full(b, tt_shape_make(pdt, 1, &zero), 0));
    tt_lc_output(c, tt_b_full(b, tt_shape_make(pdt, 1, &zero), 0));
  }
  return NULL;
}

/* native_batch_norm(input, weight, bias, running_mean, running_var,
 * training, momentum, eps) */
static tt_error *lower_native_batch_norm(tt_lower_ctx *c) { return batch_norm_impl(c, 3, 4, 5); }

/* _native_batch_norm_legit(input, weight, bias, running_mean!, running_var!,
 * training, momentum, eps); .no_stats(input, weight, bias, training, ...) */
static tt_error *lower_native_batch_norm_legit(tt_lower_ctx *c) {
  if (tt_lc_kind(c, 3) == TT_ARG_BOOL) return batch_norm_impl(c, -1, -1, 3);
  return batch_norm_impl(c, 3, 4, 5);
}

/* native_batch_norm_backward(grad_out, input, weight, running_mean,
 * running_var, save_mean, save_invstd, train, eps, output_mask) */
static tt_error *lower_native_batch_norm_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *go = tt_lc_ref(c, 0), *in = tt_lc_ref(c, 1);
  if (!go || !in || !is_float_dt(in->dtype) || go->dtype != in->dtype || in->ndim < 2 ||
      !shape_is(go, in->ndim, in->sizes))
    return tt_lc_decline(c, "unsupported arguments");
  int nd = in->ndim;
  int64_t C = in->sizes[1];
  bool train = tt_lc_bool(c, 7, false);
  double eps = tt_lc_double(c, 8, 1e-5);
  const tt_tensor_ref *w = tt_lc_ref(c, 2);
  int mean_arg = train ? 5 : 3, var_arg = train ? 6 : 4;
  const tt_tensor_ref *mr = tt_lc_ref(c, mean_arg), *vr = tt_lc_ref(c, var_arg);
  if (!mr || !vr || mr->ndim != 1 || mr->sizes[0] != C || vr->ndim != 1 || vr->sizes[0] != C)
    return tt_lc_decline(c, "missing or odd statistics");
  if (w && (w->ndim != 1 || w->sizes[0] != C)) return tt_lc_decline(c, "odd weight");
  tt_dtype acc = opmath(in->dtype);
  tt_dtype wdt = w ? w->dtype : (mr->dtype);
  int64_t n = 1;
  int64_t rdims[TT_MAX_DIMS];
  int nr = 0;
  for (int i = 0; i < nd; i++)
    if (i != 1) n *= in->sizes[i], rdims[nr++] = i;
  tt_val g = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 1), acc);
  tt_val mean = opt_tensor(c, mean_arg, acc);
  tt_val invstd = opt_tensor(c, var_arg, acc);
  if (!train) invstd = tt_b_unary(b, "rsqrt", add(b, invstd, tt_b_constant(b, acc, eps)));
  tt_val wv = w ? opt_tensor(c, 2, acc) : tt_b_full(b, tt_shape_make(acc, 1, &C), 1.0);
  tt_val d = sub(b, x, along(b, mean, nd, in->sizes, 1));
  tt_val gsum = rsum(b, g, rdims, nr);
  tt_val dotp = rsum(b, mul(b, g, d), rdims, nr);
  tt_val gi;
  if (train) {
    tt_val nn = tt_b_constant(b, acc, (double)n);
    tt_val k = dvd(b, mul(b, mul(b, dotp, invstd), invstd), nn);
    tt_val gm = dvd(b, gsum, nn);
    gi = sub(b, sub(b, g, along(b, gm, nd, in->sizes, 1)), mul(b, d, along(b, k, nd, in->sizes, 1)));
    gi = mul(b, gi, along(b, mul(b, invstd, wv), nd, in->sizes, 1));
  } else {
    gi = mul(b, g, along(b, mul(b, invstd, wv), nd, in->sizes, 1));
  }
  tt_lc_output(c, tt_b_convert(b, gi, in->dtype));
  tt_lc_output(c, tt_b_convert(b, mul(b, dotp, invstd), wdt));
  tt_lc_output(c, tt_b_convert(b, gsum, wdt));
  return NULL;
}

/* ------------------------------------------------------------ layer norm */

/* Parameter dtype of a norm: the input's, or float32 when a reduced-precision
 * input comes with float32 parameters (CPU's mixed type). -1: unsupported. */
static int norm_param_dtype(tt_dtype in, const tt_tensor_ref *const *params, int n) {
  int pdt = -1;
  for (int k = 0; k < n; k++) {
    if (!params[k]) continue;
    if (pdt >= 0 && (int)params[k]->dtype != pdt) return -1;
    pdt = (int)params[k]->dtype;
  }
  if (pdt < 0 || pdt == (int)in) return (int)in;
  if (pdt == TT_F32 && (in == TT_F16 || in == TT_BF16)) return TT_F32;
  return -1;
}

/* native_layer_norm(input, normalized_shape, weight, bias, eps)
 *   -> (out, mean, rstd). Note: PyTorch registers a CompositeExplicitAutograd
 * kernel for this op, which outranks the backend fallback; this lowering runs
 * only where the boundary routes the op to the core. */
static tt_error *lower_native_layer_norm(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *in = tt_lc_ref(c, 0), *w = tt_lc_ref(c, 2), *bi = tt_lc_ref(c, 3);
  int64_t ns[TT_MAX_DIMS];
  int nn = tt_lc_int_list(c, 1, ns, TT_MAX_DIMS);
  double eps = tt_lc_double(c, 4, 1e-5);
  if (!in || !in->storage || !is_float_dt(in->dtype) || nn < 1)
    return tt_lc_decline(c, "unsupported arguments");
  int nd = in->ndim, axis = nd - nn;
  bool ok = axis >= 0;
  for (int i = 0; ok && i < nn; i++) ok = in->sizes[axis + i] == ns[i];
  if (!ok)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Given normalized_shape has %d dims, but got input of size with %d dims "
                      "that does not match", nn, nd);
  if ((w && !shape_is(w, nn, ns)) || (bi && !shape_is(bi, nn, ns)))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected weight and bias to be of the same shape as normalized_shape");
  const tt_tensor_ref *params[2] = {w, bi};
  int pdt = norm_param_dtype(in->dtype, params, 2);
  if (pdt < 0) return tt_lc_decline(c, "mixed dtypes");
  int64_t M = 1, N = 1;
  for (int i = 0; i < axis; i++) M *= in->sizes[i];
  for (int i = axis; i < nd; i++) N *= in->sizes[i];
  if (M * N == 0) return tt_lc_decline(c, "empty input");
  tt_dtype acc = opmath(in->dtype);
  int64_t mn[2] = {M, N}, n1[1] = {N}, d1[1] = {1};
  tt_val x = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), 2, mn);
  tt_val nconst = tt_b_constant(b, acc, (double)N);
  tt_val mean = dvd(b, rsum(b, x, d1, 1), nconst);
  tt_val d = sub(b, x, along(b, mean, 2, mn, 0));
  tt_val var = dvd(b, rsum(b, mul(b, d, d), d1, 1), nconst);
  tt_val rstd = tt_b_unary(b, "rsqrt", add(b, var, tt_b_constant(b, acc, eps)));
  tt_val y = mul(b, d, along(b, rstd, 2, mn, 0));
  if (w) y = mul(b, y, along(b, tt_b_reshape(b, opt_tensor(c, 2, acc), 1, n1), 2, mn, 1));
  if (bi) y = add(b, y, along(b, tt_b_reshape(b, opt_tensor(c, 3, acc), 1, n1), 2, mn, 1));
  tt_lc_output(c, tt_b_convert(b, tt_b_reshape(b, y, nd, in->sizes), in->dtype));
  int64_t sdims[TT_MAX_DIMS];
  for (int i = 0; i < nd; i++) sdims[i] = i < axis ? in->sizes[i] : 1;
  tt_lc_output(c, tt_b_convert(b, tt_b_reshape(b, mean, nd, sdims), (tt_dtype)pdt));
  tt_lc_output(c, tt_b_convert(b, tt_b_reshape(b, rstd, nd, sdims), (tt_dtype)pdt));
  return NULL;
}

/* native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
 * weight, bias, output_mask) */
static tt_error *lower_native_layer_norm_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *go = tt_lc_ref(c, 0), *in = tt_lc_ref(c, 1);
  int64_t ns[TT_MAX_DIMS];
  int nn = tt_lc_int_list(c, 2, ns, TT_MAX_DIMS);
  if (!go || !in || !is_float_dt(in->dtype) || go->dtype != in->dtype ||
      !shape_is(go, in->ndim, in->sizes) || nn < 0 || nn > in->ndim)
    return tt_lc_decline(c, "unsupported arguments");
  int nd = in->ndim, axis = nd - nn;
  for (int i = 0; i < nn; i++)
    if (in->sizes[axis + i] != ns[i]) return tt_lc_decline(c, "shape mismatch");
  const tt_tensor_ref *mr = tt_lc_ref(c, 3), *rr = tt_lc_ref(c, 4), *w = tt_lc_ref(c, 5),
                      *bi = tt_lc_ref(c, 6);
  if (!mr || !rr) return tt_lc_decline(c, "missing statistics");
  int64_t M = 1, N = 1;
  for (int i = 0; i < axis; i++) M *= in->sizes[i];
  for (int i = axis; i < nd; i++) N *= in->sizes[i];
  int64_t mnel = 1;
  for (int i = 0; i < mr->ndim; i++) mnel *= mr->sizes[i];
  if (mnel != M) return tt_lc_decline(c, "odd statistics shape");
  if (w && (w->ndim != nn || !shape_is(w, nn, ns))) return tt_lc_decline(c, "odd weight");
  tt_dtype acc = opmath(in->dtype);
  /* work on [M, N] */
  int64_t mn[2] = {M, N}, m1[1] = {M}, n1[1] = {N};
  tt_val g = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), 2, mn);
  tt_val x = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 1), acc), 2, mn);
  tt_val mean = tt_b_reshape(b, opt_tensor(c, 3, acc), 1, m1);
  tt_val rstd = tt_b_reshape(b, opt_tensor(c, 4, acc), 1, m1);
  tt_val xhat = mul(b, sub(b, x, along(b, mean, 2, mn, 0)), along(b, rstd, 2, mn, 0));
  tt_val gw = g;
  if (w) gw = mul(b, g, along(b, tt_b_reshape(b, opt_tensor(c, 5, acc), 1, n1), 2, mn, 1));
  int64_t d1[1] = {1}, d0[1] = {0};
  tt_val nconst = tt_b_constant(b, acc, (double)N);
  tt_val mg = dvd(b, rsum(b, gw, d1, 1), nconst);
  tt_val mgx = dvd(b, rsum(b, mul(b, gw, xhat), d1, 1), nconst);
  tt_val gi = sub(b, sub(b, gw, along(b, mg, 2, mn, 0)), mul(b, xhat, along(b, mgx, 2, mn, 0)));
  gi = mul(b, gi, along(b, rstd, 2, mn, 0));
  tt_lc_output(c, tt_b_convert(b, tt_b_reshape(b, gi, nd, in->sizes), in->dtype));
  tt_dtype wdt = w ? w->dtype : (bi ? bi->dtype : in->dtype);
  tt_val gweight = tt_b_reshape(b, rsum(b, mul(b, g, xhat), d0, 1), nn, ns);
  tt_val gbias = tt_b_reshape(b, rsum(b, g, d0, 1), nn, ns);
  tt_lc_output(c, tt_b_convert(b, gweight, wdt));
  tt_lc_output(c, tt_b_convert(b, gbias, bi ? bi->dtype : wdt));
  return NULL;
}

/* ------------------------------------------------------------ group norm */

/* native_group_norm(input, weight, bias, N, C, HxW, group, eps)
 *   -> (out, mean [N, G], rstd [N, G]). Like native_layer_norm, reached only
 * where the boundary routes it past PyTorch's CompositeExplicitAutograd kernel. */
static tt_error *lower_native_group_norm(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *in = tt_lc_ref(c, 0), *w = tt_lc_ref(c, 1), *bi = tt_lc_ref(c, 2);
  int64_t N = tt_lc_int(c, 3, 0), C = tt_lc_int(c, 4, 0), HW = tt_lc_int(c, 5, 0),
          G = tt_lc_int(c, 6, 0);
  double eps = tt_lc_double(c, 7, 1e-5);
  if (!in || !in->storage || !is_float_dt(in->dtype) || G <= 0 || N * C * HW == 0)
    return tt_lc_decline(c, "unsupported arguments");
  if (C % G != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected number of channels in input to be divisible by num_groups, but "
                      "got input of shape and num_groups=%" PRId64, G);
  int64_t numel = 1;
  for (int i = 0; i < in->ndim; i++) numel *= in->sizes[i];
  if (numel != N * C * HW) return tt_lc_decline(c, "shape mismatch");
  if ((w && (w->ndim != 1 || w->sizes[0] != C)) || (bi && (bi->ndim != 1 || bi->sizes[0] != C)))
    return tt_lc_decline(c, "odd weight/bias");
  const tt_tensor_ref *params[2] = {w, bi};
  int pdt = norm_param_dtype(in->dtype, params, 2);
  if (pdt < 0) return tt_lc_decline(c, "mixed dtypes");
  tt_dtype acc = opmath(in->dtype);
  int64_t D = C / G;
  int64_t s4[4] = {N, G, D, HW}, gd[2] = {G, D}, inner[2] = {2, 3};
  int64_t map_ng[2] = {0, 1}, map_gd[2] = {1, 2};
  tt_val x = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), 4, s4);
  tt_val cnt = tt_b_constant(b, acc, (double)(D * HW));
  tt_val mean = dvd(b, rsum(b, x, inner, 2), cnt);
  tt_val d = sub(b, x, tt_b_broadcast_in_dim(b, mean, 4, s4, map_ng));
  tt_val var = dvd(b, rsum(b, mul(b, d, d), inner, 2), cnt);
  tt_val rstd = tt_b_unary(b, "rsqrt", add(b, var, tt_b_constant(b, acc, eps)));
  tt_val y = mul(b, d, tt_b_broadcast_in_dim(b, rstd, 4, s4, map_ng));
  if (w)
    y = mul(b, y, tt_b_broadcast_in_dim(b, tt_b_reshape(b, opt_tensor(c, 1, acc), 2, gd), 4, s4,
                                        map_gd));
  if (bi)
    y = add(b, y, tt_b_broadcast_in_dim(b, tt_b_reshape(b, opt_tensor(c, 2, acc), 2, gd), 4, s4,
                                        map_gd));
  tt_lc_output(c, tt_b_convert(b, tt_b_reshape(b, y, in->ndim, in->sizes), in->dtype));
  tt_lc_output(c, tt_b_convert(b, mean, (tt_dtype)pdt));
  tt_lc_output(c, tt_b_convert(b, rstd, (tt_dtype)pdt));
  return NULL;
}

/* native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW,
 * group, output_mask) */
static tt_error *lower_native_group_norm_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *go = tt_lc_ref(c, 0), *in = tt_lc_ref(c, 1), *w = tt_lc_ref(c, 4);
  int64_t N = tt_lc_int(c, 5, 0), C = tt_lc_int(c, 6, 0), HW = tt_lc_int(c, 7, 0),
          G = tt_lc_int(c, 8, 0);
  if (!go || !in || !is_float_dt(in->dtype) || go->dtype != in->dtype ||
      !shape_is(go, in->ndim, in->sizes) || G <= 0 || C % G != 0 || N * C * HW == 0)
    return tt_lc_decline(c, "unsupported arguments");
  int64_t numel = 1;
  for (int i = 0; i < in->ndim; i++) numel *= in->sizes[i];
  if (numel != N * C * HW) return tt_lc_decline(c, "shape mismatch");
  if (w && (w->ndim != 1 || w->sizes[0] != C)) return tt_lc_decline(c, "odd weight");
  tt_dtype acc = opmath(in->dtype);
  int64_t D = C / G;
  int64_t s4[4] = {N, G, D, HW}, ng[2] = {N, G}, gd[2] = {G, D};
  tt_val g = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), 4, s4);
  tt_val x = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 1), acc), 4, s4);
  tt_val mean = tt_b_reshape(b, opt_tensor(c, 2, acc), 2, ng);
  tt_val rstd = tt_b_reshape(b, opt_tensor(c, 3, acc), 2, ng);
  int64_t map_ng[2] = {0, 1}, map_gd[2] = {1, 2};
  tt_val mean4 = tt_b_broadcast_in_dim(b, mean, 4, s4, map_ng);
  tt_val rstd4 = tt_b_broadcast_in_dim(b, rstd, 4, s4, map_ng);
  tt_val xhat = mul(b, sub(b, x, mean4), rstd4);
  tt_val gw = g;
  if (w) {
    tt_val wv = tt_b_reshape(b, opt_tensor(c, 4, acc), 2, gd);
    gw = mul(b, g, tt_b_broadcast_in_dim(b, wv, 4, s4, map_gd));
  }
  int64_t inner[2] = {2, 3};
  tt_val cnt = tt_b_constant(b, acc, (double)(D * HW));
  tt_val mg = dvd(b, rsum(b, gw, inner, 2), cnt);
  tt_val mgx = dvd(b, rsum(b, mul(b, gw, xhat), inner, 2), cnt);
  tt_val gi = sub(b, sub(b, gw, tt_b_broadcast_in_dim(b, mg, 4, s4, map_ng)),
                  mul(b, xhat, tt_b_broadcast_in_dim(b, mgx, 4, s4, map_ng)));
  gi = mul(b, gi, rstd4);
  tt_lc_output(c, tt_b_convert(b, tt_b_reshape(b, gi, in->ndim, in->sizes), in->dtype));
  int64_t outer[2] = {0, 3}, c1[1] = {C};
  tt_dtype wdt = w ? w->dtype : in->dtype;
  tt_val gweight = tt_b_reshape(b, rsum(b, mul(b, g, xhat), outer, 2), 1, c1);
  tt_val gbias = tt_b_reshape(b, rsum(b, g, outer, 2), 1, c1);
  tt_lc_output(c, tt_b_convert(b, gweight, wdt));
  tt_lc_output(c, tt_b_convert(b, gbias, wdt));
  return NULL;
}

/* ------------------------------------------------------------ embedding */

/* Scatter-add of rows upd [K, D] into zeros [rows, D] at indices idx [K]. */
static tt_val scatter_add_rows(tt_builder *b, tt_val idx, tt_val upd, int64_t rows) {
  tt_shape us = tt_b_shape(b, upd);
  int64_t K = us.dims[0], D = us.dims[1];
  int64_t k1[2] = {K, 1}, od[2] = {rows, D};
  idx = tt_b_reshape(b, tt_b_convert(b, idx, TT_I64), 2, k1);
  tt_val zeros = tt_b_full(b, tt_shape_make(us.dtype, 2, od), 0);
  char region[512];
  tt_b_region_binary(region, sizeof region, us.dtype, "add");
  const char *attrs =
      "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], "
      "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, "
      "indices_are_sorted = false, unique_indices = false";
  tt_val ins[3] = {zeros, idx, upd}, r = TT_INVALID;
  tt_shape out = tt_shape_make(us.dtype, 2, od);
  tt_b_op_multi(b, "stablehlo.scatter", ins, 3, attrs, region, &out, 1, &r);
  return r;
}

/* embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
 * scale_grad_by_freq) */
static tt_error *lower_embedding_dense_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *go = tt_lc_ref(c, 0), *ix = tt_lc_ref(c, 1);
  int64_t num_weights = tt_lc_int(c, 2, 0), padding_idx = tt_lc_int(c, 3, -1);
  if (!go || !ix || !ix->storage || !is_float_dt(go->dtype) ||
      (ix->dtype != TT_I64 && ix->dtype != TT_I32))
    return tt_lc_decline(c, "unsupported arguments");
  if (tt_lc_bool(c, 4, false)) return tt_lc_decline(c, "scale_grad_by_freq");
  if (go->ndim != ix->ndim + 1) return tt_lc_decline(c, "odd grad shape");
  for (int i = 0; i < ix->ndim; i++)
    if (go->sizes[i] != ix->sizes[i]) return tt_lc_decline(c, "odd grad shape");
  int64_t K = 1, D = go->sizes[go->ndim - 1];
  for (int i = 0; i < ix->ndim; i++) K *= ix->sizes[i];
  if (K == 0 || D == 0 || num_weights <= 0) return tt_lc_decline(c, "empty");
  tt_dtype acc = opmath(go->dtype);
  int64_t kd[2] = {K, D}, k1[1] = {K};
  tt_val g = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), 2, kd);
  tt_val idx = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 1), TT_I64), 1, k1);
  if (padding_idx >= 0) {
    tt_val pad = tt_b_compare(b, "EQ", idx, tt_b_full(b, tt_shape_make(TT_I64, 1, k1),
                                                       (double)padding_idx));
    int64_t map[1] = {0};
    pad = tt_b_broadcast_in_dim(b, pad, 2, kd, map);
    g = tt_b_select(b, pad, tt_b_full(b, tt_shape_make(acc, 2, kd), 0), g);
  }
  tt_lc_output(c, tt_b_convert(b, scatter_add_rows(b, idx, g, num_weights), go->dtype));
  return NULL;
}

/* ------------------------------------------------------------ dropout */

/* native_dropout(input, p, train?) -> (output, mask) */
static tt_error *lower_native_dropout(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *in = tt_lc_ref(c, 0);
  if (!in || !in->storage || !is_float_dt(in->dtype)) return tt_lc_decline(c, "unsupported input");
  double p = tt_lc_double(c, 1, 0.5);
  bool train = tt_lc_is_none(c, 2) ? true : tt_lc_bool(c, 2, true);
  if (p < 0 || p > 1)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "dropout probability has to be between 0 and 1, but got %g", p);
  tt_shape s = tt_lc_ref_shape(in);
  tt_shape bs = s;
  bs.dtype = TT_BOOL;
  tt_val x = tt_lc_tensor(c, 0);
  if (!train) {
    tt_lc_output(c, x);
    tt_lc_output(c, tt_b_full(b, bs, 1));
    return NULL;
  }
  double p1m = 1.0 - p, scale = p1m == 0 ? 0.0 : 1.0 / p1m;
  /* random uint32 bits -> uniform float32 in [0, 1): top 24 bits * 2^-24 */
  tt_val state = tt_lc_rng_state(c);
  tt_shape u32 = s;
  u32.dtype = TT_U32;
  int64_t two = 2;
  tt_shape outs[2] = {tt_shape_make(TT_U64, 1, &two), u32};
  tt_val rr[2] = {TT_INVALID, TT_INVALID};
  tt_b_op_multi(b, "stablehlo.rng_bit_generator", &state, 1,
                "rng_algorithm = #stablehlo<rng_algorithm PHILOX>", NULL, outs, 2, rr);
  tt_val bits = rr[1];
  tt_val top = tt_b_binary(b, "shift_right_logical", bits, tt_b_full(b, u32, 8));
  tt_val u = mul(b, tt_b_convert(b, top, TT_F32), tt_b_constant(b, TT_F32, 1.0 / 16777216.0));
  /* keep with probability 1-p: u < 1-p (float32 threshold; u is a multiple
   * of 2^-24, so the comparison is exact in float32). */
  tt_val mask = tt_b_compare(b, "LT", u, tt_b_full(b, tt_b_shape(b, u), (float)p1m));
  tt_dtype acc = opmath(in->dtype);
  tt_val xa = tt_b_convert(b, x, acc);
  tt_val y = tt_b_select(b, mask, xa, tt_b_full(b, tt_b_shape(b, xa), 0));
  y = tt_b_convert(b, y, in->dtype);
  /* CPU: input.mul(mask).mul_(scale): the scale multiply in opmath. */
  y = mul(b, tt_b_convert(b, y, acc), tt_b_constant(b, acc, scale));
  tt_lc_output(c, tt_b_convert(b, y, in->dtype));
  tt_lc_output(c, mask);
  return NULL;
}

/* native_dropout_backward(grad_output, mask, scale) */
static tt_error *lower_native_dropout_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *m = tt_lc_ref(c, 1);
  if (!g || !m || !g->storage || !m->storage || !is_float_dt(g->dtype) || m->dtype != TT_BOOL ||
      !shape_is(m, g->ndim, g->sizes))
    return tt_lc_decline(c, "unsupported arguments");
  double scale = tt_lc_double(c, 2, 1.0);
  tt_dtype acc = opmath(g->dtype);
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val kept = tt_b_select(b, tt_lc_tensor(c, 1), gv, tt_b_full(b, tt_b_shape(b, gv), 0));
  kept = tt_b_convert(b, kept, g->dtype);
  tt_val r = mul(b, tt_b_convert(b, kept, acc), tt_b_constant(b, acc, scale));
  tt_lc_output(c, tt_b_convert(b, r, g->dtype));
  return NULL;
}

/* ------------------------------------------------------------ nll loss */

/* Shared checks and setup for nll_loss(2d) forward/backward. self is arg
 * si, target arg si+1, weight si+2, reduction si+3, ignore_index si+4.
 * Produces (in opmath) the per-element picked weights `wt` (target shape,
 * zero where ignored) and the one-hot selection mask (self shape). */
typedef struct {
  int nd;          /* self dims */
  int cdim;        /* class dim */
  int64_t C;
  tt_dtype dt, acc;
  tt_val onehot;   /* bool, self shape */
  tt_val wt;       /* opmath, target shape */
  tt_val keep;     /* bool, target shape: target != ignore_index */
  const tt_tensor_ref *self, *target;
} nll_setup;

static tt_error *nll_prepare(tt_lower_ctx *c, int si, bool is2d, nll_setup *s) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, si), *t = tt_lc_ref(c, si + 1), *w = tt_lc_ref(c, si + 2);
  if (!x || !t || !x->storage || !t->storage || !is_float_dt(x->dtype))
    return tt_lc_decline(c, "unsupported arguments");
  if (t->dtype != TT_I64 && t->dtype != TT_U8)
    return tt_lc_fail(c, TT_ERR_RUNTIME, "expected scalar type Long but found %s",
                      tt_dtype_name(t->dtype));
  int64_t reduction = tt_lc_int(c, si + 3, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  if (is2d) {
    if (x->ndim != 4)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "only batches of spatial inputs supported (4D tensors), but got input of "
                        "dimension: %d", x->ndim);
    if (t->ndim != 3)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "only batches of spatial targets supported (3D tensors) but got targets "
                        "of dimension: %d", t->ndim);
    if (x->sizes[0] != t->sizes[0] || x->sizes[2] != t->sizes[1] || x->sizes[3] != t->sizes[2])
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "input and target batch or spatial sizes "
                        "don't match");
    s->cdim = 1;
  } else {
    if (x->ndim < 1 || x->ndim > 2)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "input tensor should be 1D or 2D");
    if (t->ndim > 1)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "0D or 1D target tensor expected, multi-target not supported");
    bool no_batch = x->ndim == 1 && t->ndim == 0;
    if (!no_batch && x->sizes[0] != (t->ndim ? t->sizes[0] : 1))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "Expected input batch_size (%" PRId64 ") to match target batch_size (%"
                        PRId64 ").", x->sizes[0], t->ndim ? t->sizes[0] : (int64_t)1);
    if (x->ndim == 1 && t->ndim == 1) return tt_lc_decline(c, "1-d input with 1-d target");
    s->cdim = x->ndim == 2 ? 1 : 0;
  }
  s->nd = x->ndim;
  s->C = x->sizes[s->cdim];
  s->dt = x->dtype;
  s->acc = opmath(x->dtype);
  s->self = x;
  s->target = t;
  if (w) {
    int64_t wn = 1;
    for (int i = 0; i < w->ndim; i++) wn *= w->sizes[i];
    if (wn != s->C)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "weight tensor should be defined either for all %" PRId64
                        " classes or no classes but got weight tensor of shape: [%" PRId64 "]",
                        s->C, wn);
    if (!w->storage || w->dtype != x->dtype) return tt_lc_decline(c, "weight dtype");
  }
  int64_t ignore = tt_lc_int(c, si + 4, -100);
  tt_val tv = tt_b_convert(b, tt_lc_tensor(c, si + 1), TT_I64);
  /* one-hot over the class dim */
  tt_shape xs = tt_lc_ref_shape(x);
  xs.dtype = TT_I64;
  int64_t map[TT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < s->nd; i++)
    if (i != s->cdim) map[k++] = i;
  tt_val tb = tt_b_broadcast_in_dim(b, tv, s->nd, xs.dims, map);
  s->onehot = tt_b_compare(b, "EQ", tt_b_iota(b, xs, s->cdim), tb);
  /* picked weight per target element: w[t] (or 1), 0 where ignored */
  tt_shape ts = tt_lc_ref_shape(t);
  ts.dtype = s->acc;
  tt_val wt;
  if (w) {
    int64_t c1[1] = {s->C};
    tt_val wv = tt_b_reshape(b, opt_tensor(c, si + 2, s->acc), 1, c1);
    int64_t cm[1] = {s->cdim};
    tt_shape xa = xs;
    xa.dtype = s->acc;
    tt_val wb = tt_b_broadcast_in_dim(b, wv, s->nd, xa.dims, cm);
    wt = tt_b_select(b, s->onehot, wb, tt_b_full(b, xa, 0));
    int64_t cd[1] = {s->cdim};
    wt = rsum(b, wt, cd, 1);
  } else {
    wt = tt_b_full(b, ts, 1);
  }
  tt_shape ti = tt_lc_ref_shape(t);
  ti.dtype = TT_I64;
  tt_val keep = tt_b_compare(b, "NE", tv, tt_b_full(b, ti, (double)ignore));
  s->wt = tt_b_select(b, keep, wt, tt_b_full(b, ts, 0));
  s->keep = keep;
  return NULL;
}

/* nll_loss_forward / nll_loss2d_forward(self, target, weight, reduction,
 * ignore_index) -> (output, total_weight) */
static tt_error *nll_forward(tt_lower_ctx *c, bool is2d) {
  tt_builder *b = tt_lc_builder(c);
  nll_setup s;
  TT_TRY(nll_prepare(c, 0, is2d, &s));
  int64_t reduction = tt_lc_int(c, 3, RED_MEAN);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), s.acc);
  tt_val picked = tt_b_select(b, s.onehot, x, tt_b_full(b, tt_b_shape(b, x), 0));
  int64_t cd[1] = {s.cdim};
  picked = rsum(b, picked, cd, 1); /* target shape */
  tt_val loss = tt_b_unary(b, "negate", mul(b, picked, s.wt));
  tt_val total = rsum_all(b, s.wt);
  if (reduction == RED_NONE) {
    tt_lc_output(c, tt_b_convert(b, loss, s.dt));
    /* CPU reports total_weight 0 for batched 'none' (w[t] for a single sample) */
    tt_val tw = s.nd == 1 ? total : tt_b_constant(b, s.acc, 0);
    tt_lc_output(c, tt_b_convert(b, tw, s.dt));
    return NULL;
  }
  tt_val sum = rsum_all(b, loss);
  tt_val out = reduction == RED_MEAN ? dvd(b, sum, total) : sum;
  tt_lc_output(c, tt_b_convert(b, out, s.dt));
  tt_lc_output(c, tt_b_convert(b, total, s.dt));
  return NULL;
}

static tt_error *lower_nll_loss_forward(tt_lower_ctx *c) { return nll_forward(c, false); }
static tt_error *lower_nll_loss2d_forward(tt_lower_ctx *c) { return nll_forward(c, true); }

/* nll_loss_backward / nll_loss2d_backward(grad_output, self, target, weight,
 * reduction, ignore_index, total_weight) */
static tt_error *nll_backward(tt_lower_ctx *c, bool is2d) {
  tt_builder *b = tt_lc_builder(c);
  nll_setup s;
  TT_TRY(nll_prepare(c, 1, is2d, &s));
  int64_t reduction = tt_lc_int(c, 4, RED_MEAN);
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *tw = tt_lc_ref(c, 6);
  if (!g || !tw) return tt_lc_decline(c, "missing grad or total_weight");
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), s.acc);
  tt_shape ts = tt_lc_ref_shape(s.target);
  if (reduction == RED_NONE) {
    if (!shape_is(g, s.target->ndim, s.target->sizes)) return tt_lc_decline(c, "grad shape");
  } else {
    int64_t gn = 1;
    for (int i = 0; i < g->ndim; i++) gn *= g->sizes[i];
    if (gn != 1) return tt_lc_decline(c, "grad shape");
    gv = tt_b_reshape(b, gv, 0, NULL);
    if (reduction == RED_MEAN) {
      tt_val t = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 6), s.acc), 0, NULL);
      gv = dvd(b, gv, t);
    }
    gv = tt_b_broadcast_to(b, gv, ts.ndim, ts.dims);
  }
  tt_val per = tt_b_unary(b, "negate", mul(b, s.wt, gv)); /* target shape */
  /* ignored targets get no gradient, even when grad/total_weight is inf */
  per = tt_b_select(b, s.keep, per, tt_b_full(b, tt_b_shape(b, per), 0));
  tt_shape xs = tt_lc_ref_shape(s.self);
  xs.dtype = s.acc;
  int64_t map[TT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < s.nd; i++)
    if (i != s.cdim) map[k++] = i;
  tt_val pb = tt_b_broadcast_in_dim(b, per, s.nd, xs.dims, map);
  tt_val gi = tt_b_select(b, s.onehot, pb, tt_b_full(b, xs, 0));
  tt_lc_output(c, tt_b_convert(b, gi, s.dt));
  return NULL;
}

static tt_error *lower_nll_loss_backward(tt_lower_ctx *c) { return nll_backward(c, false); }
static tt_error *lower_nll_loss2d_backward(tt_lower_ctx *c) { return nll_backward(c, true); }

/* ------------------------------------------------------------ pointwise losses */

/* Reads self (arg a) and target (arg a+1) broadcast together in opmath of
 * their result dtype. */
static tt_error *loss_operands(tt_lower_ctx *c, int a, tt_dtype *dt, tt_val *x, tt_val *t,
                               int *nd, int64_t *dims) {
  int args[2] = {a, a + 1};
  *dt = tt_result_type(c, args, 2);
  if (!is_float_dt(*dt)) return tt_lc_decline(c, "non-float loss");
  TT_TRY(tt_broadcast_args(c, args, 2, nd, dims));
  tt_dtype acc = opmath(*dt);
  *x = tt_operand(c, a, acc, *nd, dims);
  *t = tt_operand(c, a + 1, acc, *nd, dims);
  return NULL;
}

/* Gradient scale for backward of reduced losses: grad_output broadcast to
 * (nd, dims), divided by numel for 'mean'. */
static tt_error *loss_grad(tt_lower_ctx *c, int64_t reduction, tt_dtype acc, int nd,
                           const int64_t *dims, tt_val *g) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *gr = tt_lc_ref(c, 0);
  if (!gr) return tt_lc_decline(c, "grad is not a tensor");
  TT_TRY(check_reduction(c, reduction));
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  if (reduction == RED_NONE) {
    int o;
    int64_t od[TT_MAX_DIMS];
    if (!tt_broadcast_dims(nd, dims, gr->ndim, gr->sizes, &o, od) || o != nd)
      return tt_lc_decline(c, "grad shape");
    for (int i = 0; i < nd; i++)
      if (od[i] != dims[i]) return tt_lc_decline(c, "grad shape");
    *g = tt_b_broadcast_to(b, gv, nd, dims);
    return NULL;
  }
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  if (gr->ndim != 0) return tt_lc_decline(c, "grad shape");
  if (reduction == RED_MEAN) gv = dvd(b, gv, tt_b_constant(b, acc, (double)n));
  *g = tt_b_broadcast_to(b, gv, nd, dims);
  return NULL;
}

/* mse_loss(self, target, reduction) */
static tt_error *lower_mse_loss(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  int64_t reduction = tt_lc_int(c, 2, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  TT_TRY(loss_operands(c, 0, &dt, &x, &t, &nd, dims));
  tt_val d = sub(b, x, t);
  tt_val loss = mul(b, d, d);
  tt_lc_output(c, reduce_loss(b, loss, reduction, dt));
  return NULL;
}

/* mse_loss_backward(grad_output, self, target, reduction) */
static tt_error *lower_mse_loss_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t, g;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  int args[3] = {0, 1, 2};
  TT_TRY(loss_operands(c, 1, &dt, &x, &t, &nd, dims));
  dt = tt_result_type(c, args, 3);
  int64_t reduction = tt_lc_int(c, 3, RED_MEAN);
  TT_TRY(loss_grad(c, reduction, opmath(dt), nd, dims, &g));
  tt_val r = mul(b, mul(b, sub(b, x, t), g), cst(b, g, 2.0));
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

/* binary_cross_entropy(self, target, weight, reduction) */
static tt_error *lower_binary_cross_entropy(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 0), *t = tt_lc_ref(c, 1), *w = tt_lc_ref(c, 2);
  if (!x || !t || !x->storage || !t->storage || !is_float_dt(x->dtype) || t->dtype != x->dtype)
    return tt_lc_decline(c, "unsupported arguments");
  if (!shape_is(t, x->ndim, x->sizes))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Using a target size that is different to the input size is deprecated. "
                      "Please ensure they have the same size.");
  if (w && (!w->storage || w->dtype != x->dtype)) return tt_lc_decline(c, "weight");
  int64_t reduction = tt_lc_int(c, 3, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  tt_dtype acc = opmath(x->dtype);
  tt_val xv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val tv = tt_b_convert(b, tt_lc_tensor(c, 1), acc);
  tt_val lo = cst(b, xv, -100.0);
  tt_val lx = bin(b, "maximum", tt_b_unary(b, "log", xv), lo);
  tt_val l1x = bin(b, "maximum", tt_b_unary(b, "log_plus_one", tt_b_unary(b, "negate", xv)), lo);
  /* (target - 1) * log(1 - x) - target * log(x) */
  tt_val loss = sub(b, mul(b, sub(b, tv, cst(b, tv, 1.0)), l1x), mul(b, tv, lx));
  if (w) {
    tt_val wv = tt_b_broadcast_to(b, opt_tensor(c, 2, acc), x->ndim, x->sizes);
    loss = mul(b, loss, wv);
  }
  tt_lc_output(c, reduce_loss(b, loss, reduction, x->dtype));
  return NULL;
}

/* binary_cross_entropy_backward(grad_output, self, target, weight, reduction) */
static tt_error *lower_binary_cross_entropy_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 1), *t = tt_lc_ref(c, 2), *w = tt_lc_ref(c, 3);
  if (!x || !t || !x->storage || !t->storage || !is_float_dt(x->dtype) ||
      t->dtype != x->dtype || !shape_is(t, x->ndim, x->sizes))
    return tt_lc_decline(c, "unsupported arguments");
  if (w && (!w->storage || w->dtype != x->dtype)) return tt_lc_decline(c, "weight");
  int64_t reduction = tt_lc_int(c, 4, RED_MEAN);
  tt_dtype acc = opmath(x->dtype);
  tt_val g;
  TT_TRY(loss_grad(c, reduction, acc, x->ndim, x->sizes, &g));
  tt_val xv = tt_b_convert(b, tt_lc_tensor(c, 1), acc);
  tt_val tv = tt_b_convert(b, tt_lc_tensor(c, 2), acc);
  /* grad * (x - t) / max((1 - x) * x, 1e-12) */
  tt_val den = bin(b, "maximum", mul(b, sub(b, cst(b, xv, 1.0), xv), xv), cst(b, xv, 1e-12));
  tt_val r = dvd(b, mul(b, g, sub(b, xv, tv)), den);
  if (w) r = mul(b, r, tt_b_broadcast_to(b, opt_tensor(c, 3, acc), x->ndim, x->sizes));
  tt_lc_output(c, tt_b_convert(b, r, x->dtype));
  return NULL;
}

/* huber_loss(self, target, reduction, delta) and smooth_l1_loss(self,
 * target, reduction, beta): piecewise quadratic/linear in |x - t|. */
static tt_error *huber_like(tt_lower_ctx *c, bool smooth) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  int64_t reduction = tt_lc_int(c, 2, RED_MEAN);
  double delta = tt_lc_double(c, 3, 1.0);
  TT_TRY(check_reduction(c, reduction));
  if (smooth && delta < 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "smooth_l1_loss does not support negative values for beta.");
  if (!smooth && delta <= 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "huber_loss does not support non-positive "
                      "values for delta.");
  if (smooth && delta == 0) return tt_lc_decline(c, "beta == 0");
  TT_TRY(loss_operands(c, 0, &dt, &x, &t, &nd, dims));
  tt_val z = tt_b_unary(b, "abs", sub(b, x, t));
  tt_val dl = cst(b, z, delta), half = cst(b, z, 0.5);
  tt_val small = tt_b_compare(b, "LT", z, tt_b_broadcast_to(b, dl, nd, dims));
  tt_val quad = mul(b, mul(b, half, z), z);
  tt_val lin;
  if (smooth) {
    quad = dvd(b, quad, dl);
    lin = sub(b, z, mul(b, half, dl));
  } else {
    lin = mul(b, dl, sub(b, z, mul(b, half, dl)));
  }
  tt_val loss = tt_b_select(b, small, quad, lin);
  tt_lc_output(c, reduce_loss(b, loss, reduction, dt));
  return NULL;
}

static tt_error *lower_huber_loss(tt_lower_ctx *c) { return huber_like(c, false); }
static tt_error *lower_smooth_l1_loss(tt_lower_ctx *c) { return huber_like(c, true); }

/* huber_loss_backward / smooth_l1_loss_backward(grad_output, self, target,
 * reduction, delta|beta) */
static tt_error *huber_like_backward(tt_lower_ctx *c, bool smooth) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t, g;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  double delta = tt_lc_double(c, 4, 1.0);
  if (delta <= 0) return tt_lc_decline(c, "non-positive delta/beta");
  TT_TRY(loss_operands(c, 1, &dt, &x, &t, &nd, dims));
  int args[3] = {0, 1, 2};
  dt = tt_result_type(c, args, 3);
  TT_TRY(loss_grad(c, tt_lc_int(c, 3, RED_MEAN), opmath(dt), nd, dims, &g));
  tt_val d = sub(b, x, t);
  tt_val dl = tt_b_full(b, tt_b_shape(b, d), delta);
  tt_val ndl = tt_b_full(b, tt_b_shape(b, d), -delta);
  tt_val below = tt_b_compare(b, "LT", d, ndl), above = tt_b_compare(b, "GT", d, dl);
  tt_val r;
  if (smooth) {
    tt_val one = tt_b_full(b, tt_b_shape(b, d), 1.0), mone = tt_b_full(b, tt_b_shape(b, d), -1.0);
    tt_val mid = dvd(b, d, dl);
    r = tt_b_select(b, below, mone, tt_b_select(b, above, one, mid));
  } else {
    r = tt_b_select(b, below, ndl, tt_b_select(b, above, dl, d));
  }
  tt_lc_output(c, tt_b_convert(b, mul(b, r, g), dt));
  return NULL;
}

static tt_error *lower_huber_loss_backward(tt_lower_ctx *c) { return huber_like_backward(c, false); }
static tt_error *lower_smooth_l1_loss_backward(tt_lower_ctx *c) {
  return huber_like_backward(c, true);
}

/* ------------------------------------------------------------ padding */

/* x restricted to [start, end) along dim d. */
static tt_val slice_dim(tt_builder *b, tt_val x, int d, int64_t start, int64_t end) {
  tt_shape s = tt_b_shape(b, x);
  int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS];
  for (int i = 0; i < s.ndim; i++) li[i] = s.dims[i];
  st[d] = start;
  li[d] = end;
  return tt_b_slice(b, x, st, li, NULL);
}

static tt_val reverse_dim(tt_builder *b, tt_val x, int d) {
  char attrs[64];
  snprintf(attrs, sizeof attrs, "dimensions = array<i64: %d>", d);
  return tt_b_op(b, "stablehlo.reverse", &x, 1, attrs, tt_b_shape(b, x));
}

/* Zero padding of lo/hi elements along dim d. */
static tt_val zpad_dim(tt_builder *b, tt_val x, int d, int64_t lo, int64_t hi) {
  int nd = tt_b_ndim(b, x);
  int64_t l[TT_MAX_DIMS] = {0}, h[TT_MAX_DIMS] = {0}, in[TT_MAX_DIMS] = {0};
  l[d] = lo;
  h[d] = hi;
  (void)nd;
  return tt_b_pad(b, x, cst(b, x, 0), l, h, in);
}

/* x with dim d (of size 1) broadcast to n. */
static tt_val repeat_dim(tt_builder *b, tt_val x, int d, int64_t n) {
  tt_shape s = tt_b_shape(b, x);
  int64_t map[TT_MAX_DIMS];
  for (int i = 0; i < s.ndim; i++) map[i] = i;
  s.dims[d] = n;
  return tt_b_broadcast_in_dim(b, x, s.ndim, s.dims, map);
}

static tt_val take_dim(tt_builder *b, tt_val x, int d, const int64_t *idx, int64_t n);
static tt_val put_add_dim(tt_builder *b, tt_val g, int d, const int64_t *idx, int64_t n,
                          int64_t m);

/* Padding with some negative amounts: every output position reads one
 * input position (static indices), so a gather per dim (backward: the
 * scatter-add transpose). */
static tt_error *pad_gather(tt_lower_ctx *c, int k, bool reflect, bool backward,
                            const int64_t *pad, const int64_t *odims) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, backward ? 1 : 0);
  int nd = x->ndim;
  if (backward) {
    const tt_tensor_ref *g = tt_lc_ref(c, 0);
    if (!g || !g->storage || g->dtype != x->dtype || !shape_is(g, nd, odims))
      return tt_lc_decline(c, "grad_output shape/dtype");
  }
  int64_t maxo = 0;
  for (int i = 0; i < nd; i++) maxo = odims[i] > maxo ? odims[i] : maxo;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)maxo);
  if (!idx) return tt_lc_decline(c, "out of host memory");
  tt_dtype acc = backward ? opmath(x->dtype) : x->dtype;
  tt_val v = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  for (int j = 0; j < k; j++) {
    int d = nd - 1 - j;
    int64_t l = pad[2 * j], n = x->sizes[d], on = odims[d];
    for (int64_t o = 0; o < on; o++) {
      int64_t i = o - l;
      if (reflect) {
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
      } else {
        i = i < 0 ? 0 : (i >= n ? n - 1 : i);
      }
      if (i < 0 || i >= n) {
        free(idx);
        return tt_lc_decline(c, "padding out of range");
      }
      idx[o] = i;
    }
    v = backward ? put_add_dim(b, v, d, idx, on, n) : take_dim(b, v, d, idx, on);
  }
  free(idx);
  tt_lc_output(c, tt_b_convert(b, v, x->dtype));
  return NULL;
}

/* reflection_padNd / replication_padNd(self, padding[2*k]) and their
 * backwards (grad_output, self, padding). padding lists the last dim first. */
static tt_error *pad_impl(tt_lower_ctx *c, int k, bool reflect, bool backward) {
  tt_builder *b = tt_lc_builder(c);
  int si = backward ? 1 : 0;
  const tt_tensor_ref *x = tt_lc_ref(c, si);
  if (!x || !x->storage) return tt_lc_decline(c, "not a device tensor");
  if (x->dtype == TT_BOOL)
    return tt_lc_decline(c, "dtype %s", tt_dtype_name(x->dtype));
  if (backward && !is_float_dt(x->dtype)) return tt_lc_decline(c, "non-float backward");
  int64_t pad[6];
  int np = tt_lc_int_list(c, si + 1, pad, 6);
  if (np != 2 * k)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "padding size is expected to be %d, but got: %d",
                      2 * k, np);
  int nd = x->ndim;
  if (nd != k + 1 && nd != k + 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and "
                      "other non-zero dimensions for input, but got: %dD", k + 1, k + 2, nd);
  for (int i = 0; i < nd; i++)
    if (x->sizes[i] == 0) return tt_lc_decline(c, "empty input");
  int64_t odims[TT_MAX_DIMS];
  bool negative = false;
  for (int i = 0; i < nd; i++) odims[i] = x->sizes[i];
  for (int j = 0; j < k; j++) {
    int d = nd - 1 - j;
    int64_t l = pad[2 * j], r = pad[2 * j + 1], n = x->sizes[d];
    if (n + l + r <= 0) return tt_lc_decline(c, "empty output");
    if (l < 0 || r < 0) negative = true;
    if (reflect && (l >= n || r >= n))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "Argument #4: Padding size should be less than the corresponding input "
                        "dimension, but got: padding (%" PRId64 ", %" PRId64 ") at dimension %d "
                        "of input %dD", l, r, d, nd);
    odims[d] = n + l + r;
  }
  if (negative) return pad_gather(c, k, reflect, backward, pad, odims);
  if (!backward) {
    tt_val v = tt_lc_tensor(c, 0);
    for (int j = 0; j < k; j++) {
      int d = nd - 1 - j;
      int64_t l = pad[2 * j], r = pad[2 * j + 1], n = x->sizes[d];
      tt_val parts[3];
      int m = 0;
      if (l > 0)
        parts[m++] = reflect ? reverse_dim(b, slice_dim(b, v, d, 1, l + 1), d)
                             : repeat_dim(b, slice_dim(b, v, d, 0, 1), d, l);
      parts[m++] = v;
      if (r > 0)
        parts[m++] = reflect ? reverse_dim(b, slice_dim(b, v, d, n - 1 - r, n - 1), d)
                             : repeat_dim(b, slice_dim(b, v, d, n - 1, n), d, r);
      v = tt_b_concat(b, parts, m, d);
    }
    tt_lc_output(c, v);
    return NULL;
  }
  const tt_tensor_ref *g = tt_lc_ref(c, 0);
  if (!g || !g->storage || g->dtype != x->dtype || !shape_is(g, nd, odims))
    return tt_lc_decline(c, "grad_output shape/dtype");
  tt_dtype acc = opmath(x->dtype);
  tt_val v = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  for (int j = 0; j < k; j++) {
    int d = nd - 1 - j;
    int64_t l = pad[2 * j], r = pad[2 * j + 1], n = x->sizes[d];
    tt_val gi = slice_dim(b, v, d, l, l + n);
    if (l > 0) {
      tt_val lp = slice_dim(b, v, d, 0, l);
      if (reflect) {
        lp = zpad_dim(b, reverse_dim(b, lp, d), d, 1, n - 1 - l);
      } else {
        int64_t rd[1] = {d};
        tt_shape ks = tt_b_shape(b, lp);
        ks.dims[d] = 1;
        lp = zpad_dim(b, tt_b_reshape(b, rsum(b, lp, rd, 1), ks.ndim, ks.dims), d, 0, n - 1);
      }
      gi = add(b, gi, lp);
    }
    if (r > 0) {
      tt_val rp = slice_dim(b, v, d, l + n, l + n + r);
      if (reflect) {
        rp = zpad_dim(b, reverse_dim(b, rp, d), d, n - 1 - r, 1);
      } else {
        int64_t rd[1] = {d};
        tt_shape ks = tt_b_shape(b, rp);
        ks.dims[d] = 1;
        rp = zpad_dim(b, tt_b_reshape(b, rsum(b, rp, rd, 1), ks.ndim, ks.dims), d, n - 1, 0);
      }
      gi = add(b, gi, rp);
    }
    v = gi;
  }
  tt_lc_output(c, tt_b_convert(b, v, x->dtype));
  return NULL;
}

static tt_error *lower_reflection_pad1d(tt_lower_ctx *c) { return pad_impl(c, 1, true, false); }
static tt_error *lower_reflection_pad2d(tt_lower_ctx *c) { return pad_impl(c, 2, true, false); }
static tt_error *lower_reflection_pad3d(tt_lower_ctx *c) { return pad_impl(c, 3, true, false); }
static tt_error *lower_replication_pad1d(tt_lower_ctx *c) { return pad_impl(c, 1, false, false); }
static tt_error *lower_replication_pad2d(tt_lower_ctx *c) { return pad_impl(c, 2, false, false); }
static tt_error *lower_replication_pad3d(tt_lower_ctx *c) { return pad_impl(c, 3, false, false); }
static tt_error *lower_reflection_pad1d_bw(tt_lower_ctx *c) { return pad_impl(c, 1, true, true); }
static tt_error *lower_reflection_pad2d_bw(tt_lower_ctx *c) { return pad_impl(c, 2, true, true); }
static tt_error *lower_reflection_pad3d_bw(tt_lower_ctx *c) { return pad_impl(c, 3, true, true); }
static tt_error *lower_replication_pad1d_bw(tt_lower_ctx *c) { return pad_impl(c, 1, false, true); }
static tt_error *lower_replication_pad2d_bw(tt_lower_ctx *c) { return pad_impl(c, 2, false, true); }
static tt_error *lower_replication_pad3d_bw(tt_lower_ctx *c) { return pad_impl(c, 3, false, true); }

/* ------------------------------------------------------------ upsampling */

/* Static 1-D constant (i64 indices, or float weights printed exactly). */
static tt_val const_vec_dt(tt_builder *b, tt_dtype dt, const double *v, const int64_t *iv,
                           int64_t n) {
  size_t cap = (size_t)n * 32 + 128, off = 0;
  char *attrs = malloc(cap);
  if (!attrs) return tt_b_fail(b, TT_ERR_OUT_OF_MEMORY, "out of host memory");
  off += (size_t)snprintf(attrs + off, cap - off, "value = dense<[");
  for (int64_t i = 0; i < n; i++) {
    if (iv)
      off += (size_t)snprintf(attrs + off, cap - off, "%s%" PRId64, i ? ", " : "", iv[i]);
    else
      off += (size_t)snprintf(attrs + off, cap - off, "%s%.17e", i ? ", " : "", v[i]);
  }
  tt_shape s = tt_shape_make(dt, 1, &n);
  char ty[64];
  tt_shape_print(&s, ty, sizeof ty);
  snprintf(attrs + off, cap - off, "]> : %s", ty);
  tt_val r = tt_b_op(b, "stablehlo.constant", NULL, 0, attrs, s);
  free(attrs);
  return r;
}

/* x with dim d replaced by x[idx[0..n)] along d (static indices). */
static tt_val take_dim(tt_builder *b, tt_val x, int d, const int64_t *idx, int64_t n) {
  tt_shape s = tt_b_shape(b, x), out = s;
  out.dims[d] = n;
  int64_t n1[2] = {n, 1};
  tt_val ix = tt_b_reshape(b, const_vec_dt(b, TT_I64, NULL, idx, n), 2, n1);
  char offs[200], ss[200], attrs[700];
  int64_t od[TT_MAX_DIMS], sz[TT_MAX_DIMS];
  int no = 0;
  for (int i = 0; i < s.ndim; i++) {
    if (i != d) od[no++] = i;
    sz[i] = i == d ? 1 : s.dims[i];
  }
  tt_fmt_i64_list(offs, sizeof offs, od, no);
  tt_fmt_i64_array(ss, sizeof ss, sz, s.ndim);
  snprintf(attrs, sizeof attrs,
           "dimension_numbers = #stablehlo.gather<offset_dims = %s, collapsed_slice_dims = [%d], "
           "start_index_map = [%d], index_vector_dim = 1>, slice_sizes = %s, "
           "indices_are_sorted = false",
           offs, d, d, ss);
  tt_val ins[2] = {x, ix};
  return tt_b_op(b, "stablehlo.gather", ins, 2, attrs, out);
}

/* Transpose of take_dim: zeros with dim d of size m, g's slices added at idx. */
static tt_val put_add_dim(tt_builder *b, tt_val g, int d, const int64_t *idx, int64_t n,
                          int64_t m) {
  tt_shape s = tt_b_shape(b, g), out = s;
  out.dims[d] = m;
  int64_t n1[2] = {n, 1};
  tt_val ix = tt_b_reshape(b, const_vec_dt(b, TT_I64, NULL, idx, n), 2, n1);
  char wins[200], attrs[700], region[600];
  int64_t wd[TT_MAX_DIMS];
  int nw = 0;
  for (int i = 0; i < s.ndim; i++)
    if (i != d) wd[nw++] = i;
  tt_fmt_i64_list(wins, sizeof wins, wd, nw);
  snprintf(attrs, sizeof attrs,
           "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = %s, "
           "inserted_window_dims = [%d], scatter_dims_to_operand_dims = [%d], "
           "index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false",
           wins, d, d);
  tt_b_region_binary(region, sizeof region, s.dtype, "add");
  tt_val ins[3] = {tt_b_full(b, out, 0), ix, g}, r = TT_INVALID;
  tt_b_op_multi(b, "stablehlo.scatter", ins, 3, attrs, region, &out, 1, &r);
  return r;
}

/* CPU's compute_scales_value<float>. */
static float scales_value_f(bool has, double scale, int64_t in, int64_t out) {
  return has && scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
}

/* Source index of nearest (exact: nearest-exact) upsampling, as CPU computes it. */
static int64_t nearest_src(int64_t o, int64_t in, int64_t out, bool has, double scale,
                           bool exact) {
  if (!exact) {
    if (out == in) return o;
    if (out == 2 * in) return o >> 1;
  }
  float sc = scales_value_f(has, scale, in, out);
  int64_t r = exact ? (int64_t)floorf((float)(((double)o + 0.5) * sc)) : (int64_t)floorf((float)o * sc);
  return r < in - 1 ? r : in - 1;
}

/* Linear interpolation indices/weights along one dim (CPU's
 * compute_source_index_and_lambda, in float or double opmath). */
static void linear_src(int64_t o, int64_t in, int64_t out, bool align, bool has, double scale,
                       bool dbl, int64_t *i0, int64_t *i1, double *l0, double *l1) {
  if (out == in) {
    *i0 = *i1 = o;
    *l0 = 1;
    *l1 = 0;
    return;
  }
  if (dbl) {
    double sc = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0)
                      : (has && scale > 0 ? 1.0 / scale : (double)in / (double)out);
    double real = align ? sc * (double)o : sc * ((double)o + 0.5) - 0.5;
    if (!align && real < 0) real = 0;
    int64_t k = (int64_t)floorf((float)real);
    if (k > in - 1) k = in - 1;
    double lam = real - (double)k;
    lam = lam < 0 ? 0 : (lam > 1 ? 1 : lam);
    *i0 = k;
    *i1 = k + (k < in - 1 ? 1 : 0);
    *l1 = lam;
    *l0 = 1.0 - lam;
  } else {
    float sc = align ? (out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f)
                     : scales_value_f(has, scale, in, out);
    float real = align ? sc * (float)o : sc * ((float)o + 0.5f) - 0.5f;
    if (!align && real < 0) real = 0;
    int64_t k = (int64_t)floorf(real);
    if (k > in - 1) k = in - 1;
    float lam = real - (float)k;
    lam = lam < 0 ? 0 : (lam > 1 ? 1 : lam);
    *i0 = k;
    *i1 = k + (k < in - 1 ? 1 : 0);
    *l1 = lam;
    *l0 = 1.0f - lam;
  }
}

/* Bicubic taps along one dim (CPU's cubic source index, A = -0.75, indices
 * clamped), in float or double opmath. */
static void cubic_src(int64_t o, int64_t in, int64_t out, bool align, bool has, double scale,
                      bool dbl, int64_t *idx, double *w) {
  int64_t k;
  double t;
  if (dbl) {
    double sc = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0)
                      : (has && scale > 0 ? 1.0 / scale : (double)in / (double)out);
    double real = align ? sc * (double)o : sc * ((double)o + 0.5) - 0.5;
    k = (int64_t)floor(real);
    if (k > in - 1) k = in - 1;
    t = real - (double)k;
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    double A = -0.75, x1 = t, x2 = 1.0 - t;
    w[0] = ((A * (x1 + 1.0) - 5 * A) * (x1 + 1.0) + 8 * A) * (x1 + 1.0) - 4 * A;
    w[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
    w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    w[3] = ((A * (x2 + 1.0) - 5 * A) * (x2 + 1.0) + 8 * A) * (x2 + 1.0) - 4 * A;
  } else {
    float sc = align ? (out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f)
                     : scales_value_f(has, scale, in, out);
    float real = align ? sc * (float)o : sc * ((float)o + 0.5f) - 0.5f;
    k = (int64_t)floorf(real);
    if (k > in - 1) k = in - 1;
    float tf = real - (float)k;
    tf = tf < 0 ? 0 : (tf > 1 ? 1 : tf);
    float A = -0.75f, x1 = tf, x2 = 1.0f - tf, y1 = x1 + 1.0f, y2 = x2 + 1.0f;
    w[0] = ((A * y1 - 5 * A) * y1 + 8 * A) * y1 - 4 * A;
    w[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
    w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    w[3] = ((A * y2 - 5 * A) * y2 + 8 * A) * y2 - 4 * A;
  }
  for (int j = 0; j < 4; j++) {
    int64_t i = k - 1 + j;
    idx[j] = i < 0 ? 0 : (i > in - 1 ? in - 1 : i);
  }
}

#define UP_MAX 8192

/* upsample_{nearest,_nearest_exact}{1,2,3}d and upsample_{linear1d,
 * bilinear2d,trilinear3d}, forward (self, output_size, [align_corners],
 * scales...) and backward (grad_output, output_size, input_size,
 * [align_corners], scales...). */
static tt_error *upsample_impl(tt_lower_ctx *c, int k, int mode /* 0 nearest 1 exact 2 linear */,
                               bool backward) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 0);
  if (!x || !x->storage) return tt_lc_decline(c, "not a device tensor");
  bool linear = mode == 2 || mode == 3, cubic = mode == 3;
  if (linear || backward) {
    if (!is_float_dt(x->dtype)) return tt_lc_decline(c, "dtype %s", tt_dtype_name(x->dtype));
    /* CPU's reduced-precision trilinear rounds differently */
    if (mode == 2 && k == 3 && opmath(x->dtype) != x->dtype)
      return tt_lc_decline(c, "trilinear %s", tt_dtype_name(x->dtype));
  } else if (x->dtype == TT_BOOL) {
    return tt_lc_decline(c, "dtype %s", tt_dtype_name(x->dtype));
  }
  int64_t osz[4], isz[TT_MAX_DIMS];
  if (tt_lc_int_list(c, 1, osz, 4) != k) return tt_lc_decline(c, "output_size");
  int nd = k + 2;
  if (backward) {
    if (tt_lc_int_list(c, 2, isz, TT_MAX_DIMS) != nd) return tt_lc_decline(c, "input_size");
  } else {
    if (x->ndim != nd) return tt_lc_decline(c, "input rank %d", x->ndim);
    for (int i = 0; i < nd; i++) isz[i] = x->sizes[i];
  }
  int sc0 = (backward ? 3 : 2) + (linear ? 1 : 0);
  bool align = linear ? tt_lc_bool(c, sc0 - 1, false) : false;
  int64_t gdims[TT_MAX_DIMS];
  for (int i = 0; i < nd; i++) gdims[i] = i < 2 ? isz[i] : osz[i - 2];
  for (int i = 0; i < nd; i++)
    if (isz[i] <= 0 || gdims[i] <= 0 || gdims[i] > UP_MAX) return tt_lc_decline(c, "sizes");
  if (backward && !shape_is(x, nd, gdims)) return tt_lc_decline(c, "grad_output shape");
  tt_dtype acc = opmath(x->dtype);
  bool dbl = acc == TT_F64;
  tt_val v = tt_lc_tensor(c, 0);
  if (linear || backward) v = tt_b_convert(b, v, acc);
  int64_t *i0 = malloc(sizeof(int64_t) * UP_MAX * 4);
  double *lw = malloc(sizeof(double) * UP_MAX * 4);
  if (!i0 || !lw) {
    free(i0);
    free(lw);
    return tt_lc_decline(c, "out of host memory");
  }
  int64_t *i1 = i0 + UP_MAX;
  double *l1 = lw + UP_MAX;
  /* last dim first (CPU's evaluation order for the forward) */
  for (int j = k - 1; j >= 0; j--) {
    int d = 2 + j;
    int64_t in = isz[d], out = osz[j];
    bool has = !tt_lc_is_none(c, sc0 + j);
    double scale = has ? tt_lc_double(c, sc0 + j, 0) : 0;
    if (cubic) {
      /* tap j of output o at [j * UP_MAX + o] */
      for (int64_t o = 0; o < out; o++) {
        int64_t ti[4];
        double tw[4];
        cubic_src(o, in, out, align, has, scale, dbl, ti, tw);
        for (int t = 0; t < 4; t++) i0[t * UP_MAX + o] = ti[t], lw[t * UP_MAX + o] = tw[t];
      }
      tt_val acc_v = TT_INVALID;
      for (int t = 0; t < 4; t++) {
        tt_val wv = const_vec_dt(b, acc, lw + t * UP_MAX, NULL, out);
        if (!backward) {
          tt_val a = take_dim(b, v, d, i0 + t * UP_MAX, out);
          tt_shape s = tt_b_shape(b, a);
          a = mul(b, a, along(b, wv, s.ndim, s.dims, d));
          acc_v = acc_v == TT_INVALID ? a : add(b, acc_v, a);
        } else {
          tt_shape s = tt_b_shape(b, v);
          tt_val a = put_add_dim(b, mul(b, v, along(b, wv, s.ndim, s.dims, d)), d, i0 + t * UP_MAX,
                                 out, in);
          acc_v = acc_v == TT_INVALID ? a : add(b, acc_v, a);
        }
      }
      v = acc_v;
      continue;
    }
    for (int64_t o = 0; o < out; o++) {
      if (linear)
        linear_src(o, in, out, align, has, scale, dbl, &i0[o], &i1[o], &lw[o], &l1[o]);
      else
        i0[o] = nearest_src(o, in, out, has, scale, mode == 1);
    }
    if (!linear) {
      v = backward ? put_add_dim(b, v, d, i0, out, in) : take_dim(b, v, d, i0, out);
      continue;
    }
    tt_val w0 = const_vec_dt(b, acc, lw, NULL, out), w1 = const_vec_dt(b, acc, l1, NULL, out);
    if (!backward) {
      tt_val a = take_dim(b, v, d, i0, out), e = take_dim(b, v, d, i1, out);
      tt_shape s = tt_b_shape(b, a);
      v = add(b, mul(b, a, along(b, w0, s.ndim, s.dims, d)),
              mul(b, e, along(b, w1, s.ndim, s.dims, d)));
    } else {
      tt_shape s = tt_b_shape(b, v);
      tt_val a = put_add_dim(b, mul(b, v, along(b, w0, s.ndim, s.dims, d)), d, i0, out, in);
      tt_val e = put_add_dim(b, mul(b, v, along(b, w1, s.ndim, s.dims, d)), d, i1, out, in);
      v = add(b, a, e);
    }
  }
  free(i0);
  free(lw);
  tt_lc_output(c, tt_b_convert(b, v, x->dtype));
  return NULL;
}

static tt_error *lower_up_nearest1d(tt_lower_ctx *c) { return upsample_impl(c, 1, 0, false); }
static tt_error *lower_up_nearest2d(tt_lower_ctx *c) { return upsample_impl(c, 2, 0, false); }
static tt_error *lower_up_nearest3d(tt_lower_ctx *c) { return upsample_impl(c, 3, 0, false); }
static tt_error *lower_up_nearest1d_bw(tt_lower_ctx *c) { return upsample_impl(c, 1, 0, true); }
static tt_error *lower_up_nearest2d_bw(tt_lower_ctx *c) { return upsample_impl(c, 2, 0, true); }
static tt_error *lower_up_nearest3d_bw(tt_lower_ctx *c) { return upsample_impl(c, 3, 0, true); }
static tt_error *lower_up_exact1d(tt_lower_ctx *c) { return upsample_impl(c, 1, 1, false); }
static tt_error *lower_up_exact2d(tt_lower_ctx *c) { return upsample_impl(c, 2, 1, false); }
static tt_error *lower_up_exact3d(tt_lower_ctx *c) { return upsample_impl(c, 3, 1, false); }
static tt_error *lower_up_exact1d_bw(tt_lower_ctx *c) { return upsample_impl(c, 1, 1, true); }
static tt_error *lower_up_exact2d_bw(tt_lower_ctx *c) { return upsample_impl(c, 2, 1, true); }
static tt_error *lower_up_exact3d_bw(tt_lower_ctx *c) { return upsample_impl(c, 3, 1, true); }
static tt_error *lower_up_linear1d(tt_lower_ctx *c) { return upsample_impl(c, 1, 2, false); }
static tt_error *lower_up_bilinear2d(tt_lower_ctx *c) { return upsample_impl(c, 2, 2, false); }
static tt_error *lower_up_trilinear3d(tt_lower_ctx *c) { return upsample_impl(c, 3, 2, false); }
static tt_error *lower_up_linear1d_bw(tt_lower_ctx *c) { return upsample_impl(c, 1, 2, true); }
static tt_error *lower_up_bilinear2d_bw(tt_lower_ctx *c) { return upsample_impl(c, 2, 2, true); }
static tt_error *lower_up_trilinear3d_bw(tt_lower_ctx *c) { return upsample_impl(c, 3, 2, true); }
static tt_error *lower_up_bicubic2d(tt_lower_ctx *c) { return upsample_impl(c, 2, 3, false); }
static tt_error *lower_up_bicubic2d_bw(tt_lower_ctx *c) { return upsample_impl(c, 2, 3, true); }

/* ------------------------------------------------------------ soft margin loss */

/* Rounds an opmath value to dt and back: CPU runs soft margin's pieces as
 * separate half-precision ops, each rounded. No-op for float/double. */
static tt_val rd(tt_builder *b, tt_val v, tt_dtype dt) {
  return tt_b_convert(b, tt_b_convert(b, v, dt), tt_b_dtype(b, v));
}

/* soft_margin_loss(self, target, reduction): log1p(exp(-self * target)) */
static tt_error *lower_soft_margin_loss(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  int64_t reduction = tt_lc_int(c, 2, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  TT_TRY(loss_operands(c, 0, &dt, &x, &t, &nd, dims));
  tt_val z = rd(b, tt_b_unary(b, "exponential", rd(b, mul(b, tt_b_unary(b, "negate", x), t), dt)), dt);
  tt_lc_output(c, reduce_loss(b, rd(b, tt_b_unary(b, "log_plus_one", z), dt), reduction, dt));
  return NULL;
}

/* soft_margin_loss_backward(grad_output, self, target, reduction):
 * target * z * -norm / (1 + z) * grad, z = exp(-target * self), each
 * step rounded like CPU's separate in-place ops */
static tt_error *lower_soft_margin_loss_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t, g;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  TT_TRY(loss_operands(c, 1, &dt, &x, &t, &nd, dims));
  int args[3] = {0, 1, 2};
  dt = tt_result_type(c, args, 3);
  int64_t reduction = tt_lc_int(c, 3, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  tt_dtype acc = opmath(dt);
  TT_TRY(loss_grad(c, reduction == RED_MEAN ? RED_SUM : reduction, acc, nd, dims, &g));
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  double norm = reduction == RED_MEAN ? 1.0 / (double)n : 1.0;
  tt_val z = rd(b, tt_b_unary(b, "exponential", rd(b, mul(b, tt_b_unary(b, "negate", t), x), dt)), dt);
  /* CPU: mul_out(gi, target, z).mul_(-norm); z.add_(1); gi.div_(z).mul_(grad) */
  tt_val a = rd(b, mul(b, t, z), dt);
  a = rd(b, mul(b, a, cst(b, a, acc == TT_F64 ? -norm : (double)(float)-norm)), dt);
  tt_val q = rd(b, dvd(b, a, rd(b, add(b, z, cst(b, z, 1.0)), dt)), dt);
  tt_lc_output(c, tt_b_convert(b, mul(b, q, g), dt));
  return NULL;
}

/* ------------------------------------------------------------ weight norm */

/* Reads (v, g, dim) of _weight_norm_interface(_backward); nd dims, reduce
 * dims rd (all but dim), and g's keepdim shape. */
static tt_error *wn_setup(tt_lower_ctx *c, int vi, int gi, int64_t dim, int64_t *rd, int *nr,
                          int64_t *kdims) {
  const tt_tensor_ref *v = tt_lc_ref(c, vi), *g = tt_lc_ref(c, gi);
  if (!v || !g || !v->storage || !g->storage || v->ndim == 0) return tt_lc_decline(c, "args");
  if ((v->dtype != TT_F32 && v->dtype != TT_F64) || g->dtype != v->dtype)
    return tt_lc_decline(c, "dtype");
  int nd = v->ndim;
  if (dim < 0 || dim >= nd) return tt_lc_decline(c, "dim");
  *nr = 0;
  for (int i = 0; i < nd; i++) {
    kdims[i] = (i == dim) ? v->sizes[i] : 1;
    if (i != dim) rd[(*nr)++] = i;
  }
  int64_t gn = 1;
  for (int i = 0; i < g->ndim; i++) gn *= g->sizes[i];
  if (gn != v->sizes[dim]) return tt_lc_decline(c, "g shape");
  if (dim != 0 && dim != nd - 1) return tt_lc_decline(c, "middle dim");
  return NULL;
}

/* _weight_norm_interface(v, g, dim) -> (v * (g / norms), norms) */
static tt_error *lower_weight_norm_interface(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  int64_t dim = tt_lc_int(c, 2, 0), rd[TT_MAX_DIMS], kd[TT_MAX_DIMS];
  int nr;
  TT_TRY(wn_setup(c, 0, 1, dim, rd, &nr, kd));
  const tt_tensor_ref *v = tt_lc_ref(c, 0);
  int nd = v->ndim;
  tt_val vv = tt_lc_tensor(c, 0);
  tt_val gv = tt_b_reshape(b, tt_lc_tensor(c, 1), nd, kd);
  tt_val n2 = tt_b_reshape(b, rsum(b, mul(b, vv, vv), rd, nr), nd, kd);
  tt_val norms = tt_b_unary(b, "sqrt", n2);
  tt_val w = mul(b, vv, tt_b_broadcast_to(b, dvd(b, gv, norms), nd, v->sizes));
  tt_lc_output(c, w);
  const tt_tensor_ref *g = tt_lc_ref(c, 1);
  tt_lc_output(c, tt_b_reshape(b, norms, g->ndim, g->sizes));
  return NULL;
}

/* _weight_norm_interface_backward(grad_w, saved_v, saved_g, saved_norms, dim)
 *   -> (grad_v, grad_g) */
static tt_error *lower_weight_norm_interface_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  int64_t dim = tt_lc_int(c, 4, 0), rd[TT_MAX_DIMS], kd[TT_MAX_DIMS];
  int nr;
  TT_TRY(wn_setup(c, 1, 2, dim, rd, &nr, kd));
  const tt_tensor_ref *v = tt_lc_ref(c, 1), *gw = tt_lc_ref(c, 0), *nm = tt_lc_ref(c, 3);
  int nd = v->ndim;
  if (!gw || !nm || !shape_is(gw, nd, v->sizes) || gw->dtype != v->dtype || nm->dtype != v->dtype)
    return tt_lc_decline(c, "grad/norms");
  tt_val vv = tt_lc_tensor(c, 1), gwv = tt_lc_tensor(c, 0);
  tt_val gv = tt_b_reshape(b, tt_lc_tensor(c, 2), nd, kd);
  tt_val norms = tt_b_reshape(b, tt_lc_tensor(c, 3), nd, kd);
  tt_val dot = tt_b_reshape(b, rsum(b, mul(b, gwv, vv), rd, nr), nd, kd);
  tt_val grad_g = dvd(b, dot, norms);
  /* grad_v = (g / norms) * (grad_w - v * (dot / norms^2)) */
  tt_val k = dvd(b, grad_g, norms);
  tt_val inner = sub(b, gwv, mul(b, vv, tt_b_broadcast_to(b, k, nd, v->sizes)));
  tt_val grad_v = mul(b, tt_b_broadcast_to(b, dvd(b, gv, norms), nd, v->sizes), inner);
  tt_lc_output(c, grad_v);
  const tt_tensor_ref *g = tt_lc_ref(c, 2);
  tt_lc_output(c, tt_b_reshape(b, grad_g, g->ndim, g->sizes));
  return NULL;
}

/* ------------------------------------------------------------ adaptive max pool */

/* Scatter-add of g [P..., OH, OW] into per-plane flat positions ix (same
 * shape, i64) of planes of hw elements: result [P..., hw]. */
static tt_val plane_scatter_add(tt_builder *b, tt_val g, tt_val ix, int64_t hw) {
  tt_shape gs = tt_b_shape(b, g);
  int nd = gs.ndim;
  int64_t planes = 1, per = gs.dims[nd - 1] * gs.dims[nd - 2];
  for (int i = 0; i < nd - 2; i++) planes *= gs.dims[i];
  int64_t pd[3] = {planes, per, 1}, p2[2] = {planes, per};
  tt_val lin = tt_b_reshape(b, ix, 3, pd);
  tt_shape is = tt_shape_make(TT_I64, 3, pd);
  tt_val pl = tt_b_iota(b, is, 0);
  tt_val idx = tt_b_concat(b, (tt_val[]){pl, lin}, 2, 2); /* [planes, per, 2] */
  tt_val upd = tt_b_reshape(b, g, 2, p2);
  int64_t od[2] = {planes, hw};
  tt_shape out = tt_shape_make(gs.dtype, 2, od);
  char region[600];
  tt_b_region_binary(region, sizeof region, gs.dtype, "add");
  const char *attrs =
      "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], "
      "scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, indices_are_sorted = false, "
      "unique_indices = false";
  tt_val ins[3] = {tt_b_full(b, out, 0), idx, upd}, r = TT_INVALID;
  tt_b_op_multi(b, "stablehlo.scatter", ins, 3, attrs, region, &out, 1, &r);
  return r;
}

/* adaptive_max_pool2d(self, output_size) -> (out, indices) */
static tt_error *lower_adaptive_max_pool2d(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 0);
  if (!x || !x->storage || !is_float_dt(x->dtype)) return tt_lc_decline(c, "dtype/args");
  if (x->ndim != 3 && x->ndim != 4) return tt_lc_decline(c, "rank");
  for (int i = 0; i < x->ndim; i++)
    if (x->sizes[i] == 0) return tt_lc_decline(c, "empty input");
  int64_t os[TT_MAX_DIMS];
  if (tt_lc_int_list(c, 1, os, TT_MAX_DIMS) != 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "adaptive_max_pool2d(): internal error: output_size.size() must be 2");
  int nd = x->ndim;
  int64_t O[2] = {os[0], os[1]}, I[2] = {x->sizes[nd - 2], x->sizes[nd - 1]};
  if (O[0] <= 0 || O[1] <= 0 || O[0] > UP_MAX || O[1] > UP_MAX) return tt_lc_decline(c, "size");
  int64_t *buf = malloc(sizeof(int64_t) * UP_MAX * 7);
  if (!buf) return tt_lc_decline(c, "out of host memory");
  int64_t *st[2] = {buf, buf + UP_MAX}, *en[2] = {buf + 2 * UP_MAX, buf + 3 * UP_MAX};
  int64_t *ix = buf + 4 * UP_MAX, *vh = buf + 5 * UP_MAX, *vw = buf + 6 * UP_MAX;
  int64_t K[2] = {0, 0};
  for (int a = 0; a < 2; a++)
    for (int64_t o = 0; o < O[a]; o++) {
      st[a][o] = (o * I[a]) / O[a];
      en[a][o] = ((o + 1) * I[a] + O[a] - 1) / O[a];
      if (en[a][o] - st[a][o] > K[a]) K[a] = en[a][o] - st[a][o];
    }
  if (K[0] * K[1] > 256) {
    free(buf);
    return tt_lc_decline(c, "windows too large");
  }
  tt_val xv = tt_lc_tensor(c, 0);
  int64_t od[TT_MAX_DIMS];
  for (int i = 0; i < nd; i++) od[i] = i < nd - 2 ? x->sizes[i] : O[i - (nd - 2)];
  tt_shape is = tt_shape_make(TT_I64, nd, od), bs = tt_shape_make(TT_BOOL, nd, od);
  tt_val best = TT_INVALID, bidx = TT_INVALID;
  for (int64_t th = 0; th < K[0]; th++) {
    for (int64_t o = 0; o < O[0]; o++) ix[o] = st[0][o] + th < I[0] ? st[0][o] + th : I[0] - 1;
    tt_val rows = take_dim(b, xv, nd - 2, ix, O[0]);
    tt_val hpos = along(b, const_vec_dt(b, TT_I64, NULL, ix, O[0]), nd, od, nd - 2);
    for (int64_t o = 0; o < O[0]; o++) vh[o] = st[0][o] + th < en[0][o];
    tt_val validh = tt_b_compare(b, "NE", along(b, const_vec_dt(b, TT_I64, NULL, vh, O[0]), nd, od, nd - 2),
                                 tt_b_full(b, is, 0));
    for (int64_t tw = 0; tw < K[1]; tw++) {
      for (int64_t o = 0; o < O[1]; o++) ix[o] = st[1][o] + tw < I[1] ? st[1][o] + tw : I[1] - 1;
      tt_val v = take_dim(b, rows, nd - 1, ix, O[1]);
      tt_val wpos = along(b, const_vec_dt(b, TT_I64, NULL, ix, O[1]), nd, od, nd - 1);
      tt_val flat = add(b, mul(b, hpos, tt_b_full(b, is, (double)I[1])), wpos);
      if (best == TT_INVALID) {
        best = v;
        bidx = flat;
        continue;
      }
      for (int64_t o = 0; o < O[1]; o++) vw[o] = st[1][o] + tw < en[1][o];
      tt_val validw = tt_b_compare(b, "NE", along(b, const_vec_dt(b, TT_I64, NULL, vw, O[1]), nd, od, nd - 1),
                                   tt_b_full(b, is, 0));
      tt_val upd = tt_b_binary(b, "or", tt_b_compare(b, "GT", v, best), tt_b_compare(b, "NE", v, v));
      upd = tt_b_binary(b, "and", upd, tt_b_binary(b, "and", validh, validw));
      best = tt_b_select(b, upd, v, best);
      bidx = tt_b_select(b, upd, flat, bidx);
    }
  }
  (void)bs;
  free(buf);
  tt_lc_output(c, best);
  tt_lc_output(c, bidx);
  return NULL;
}

/* adaptive_max_pool2d_backward(grad_output, self, indices) */
static tt_error *lower_adaptive_max_pool2d_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *x = tt_lc_ref(c, 1), *ir = tt_lc_ref(c, 2);
  if (!g || !x || !ir || !g->storage || !x->storage || !ir->storage || !is_float_dt(x->dtype) ||
      g->dtype != x->dtype || ir->dtype != TT_I64)
    return tt_lc_decline(c, "args");
  int nd = x->ndim;
  if ((nd != 3 && nd != 4) || !shape_is(ir, g->ndim, g->sizes) || g->ndim != nd)
    return tt_lc_decline(c, "shapes");
  for (int i = 0; i < nd - 2; i++)
    if (g->sizes[i] != x->sizes[i]) return tt_lc_decline(c, "shapes");
  tt_dtype acc = opmath(x->dtype);
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val r = plane_scatter_add(b, gv, tt_lc_tensor(c, 2), x->sizes[nd - 1] * x->sizes[nd - 2]);
  tt_lc_output(c, tt_b_convert(b, tt_b_reshape(b, r, nd, x->sizes), x->dtype));
  return NULL;
}

/* ------------------------------------------------------------ adaptive avg pool 3d */

/* Windows of adaptive pooling along one dim: [start, end) per output. */
static int64_t adaptive_windows(int64_t O, int64_t I, int64_t *st, int64_t *en) {
  int64_t K = 0;
  for (int64_t o = 0; o < O; o++) {
    st[o] = (o * I) / O;
    en[o] = ((o + 1) * I + O - 1) / O;
    if (en[o] - st[o] > K) K = en[o] - st[o];
  }
  return K;
}

/* Window sums (forward) or their transpose (backward) along dim d, with
 * masked taps (select, so infinities stay where they belong). */
static tt_val adaptive_sum_dim(tt_builder *b, tt_val x, int d, int64_t O, int64_t I, bool backward,
                               int64_t *buf) {
  int64_t *st = buf, *en = buf + UP_MAX, *ix = buf + 2 * UP_MAX, *ok = buf + 3 * UP_MAX;
  int64_t K = adaptive_windows(O, I, st, en);
  tt_val acc = TT_INVALID;
  for (int64_t t = 0; t < K; t++) {
    bool all = true;
    for (int64_t o = 0; o < O; o++) {
      ok[o] = st[o] + t < en[o];
      ix[o] = ok[o] ? st[o] + t : st[o];
      all = all && ok[o];
    }
    tt_val v;
    tt_shape vs;
    if (!backward) {
      v = take_dim(b, x, d, ix, O);
      vs = tt_b_shape(b, v);
    } else {
      v = x;
      vs = tt_b_shape(b, x);
    }
    if (!all) {
      tt_shape is = vs;
      is.dtype = TT_I64;
      tt_val m = tt_b_compare(b, "NE", along(b, const_vec_dt(b, TT_I64, NULL, ok, O), vs.ndim, vs.dims, d),
                              tt_b_full(b, is, 0));
      v = tt_b_select(b, m, v, tt_b_full(b, vs, 0));
    }
    if (backward) v = put_add_dim(b, v, d, ix, O, I);
    acc = acc == TT_INVALID ? v : add(b, acc, v);
  }
  return acc;
}

/* _adaptive_avg_pool3d(self, output_size) and
 * _adaptive_avg_pool3d_backward(grad_output, self) */
static tt_error *adaptive_avg(tt_lower_ctx *c, int k, bool backward) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, backward ? 1 : 0), *g = backward ? tt_lc_ref(c, 0) : NULL;
  if (!x || !x->storage || !is_float_dt(x->dtype)) return tt_lc_decline(c, "dtype/args");
  int nd = x->ndim;
  if (nd != k + 1 && nd != k + 2) return tt_lc_decline(c, "rank");
  for (int i = 0; i < nd; i++)
    if (x->sizes[i] == 0) return tt_lc_decline(c, "empty input");
  int64_t O[3];
  if (backward) {
    if (!g || !g->storage || g->dtype != x->dtype || g->ndim != nd) return tt_lc_decline(c, "grad");
    for (int i = 0; i < nd - k; i++)
      if (g->sizes[i] != x->sizes[i]) return tt_lc_decline(c, "grad shape");
    for (int i = 0; i < k; i++) O[i] = g->sizes[nd - k + i];
  } else {
    int64_t os[TT_MAX_DIMS];
    if (tt_lc_int_list(c, 1, os, TT_MAX_DIMS) != k) return tt_lc_decline(c, "output_size");
    for (int i = 0; i < k; i++) O[i] = os[i];
  }
  for (int i = 0; i < k; i++)
    if (O[i] <= 0 || O[i] > UP_MAX || x->sizes[nd - k + i] > UP_MAX) return tt_lc_decline(c, "size");
  int64_t *buf = malloc(sizeof(int64_t) * UP_MAX * 4);
  double *cnt = malloc(sizeof(double) * UP_MAX);
  if (!buf || !cnt) {
    free(buf);
    free(cnt);
    return tt_lc_decline(c, "out of host memory");
  }
  tt_dtype acc = opmath(x->dtype);
  tt_val v = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  /* divisor: product of per-dim window lengths, on the output grid */
  int64_t od[TT_MAX_DIMS];
  for (int i = 0; i < nd; i++) od[i] = i < nd - k ? x->sizes[i] : O[i - (nd - k)];
  tt_val div = TT_INVALID;
  for (int i = 0; i < k; i++) {
    int64_t I = x->sizes[nd - k + i];
    adaptive_windows(O[i], I, buf, buf + UP_MAX);
    for (int64_t o = 0; o < O[i]; o++) cnt[o] = (double)(buf[UP_MAX + o] - buf[o]);
    tt_val cv = along(b, const_vec_dt(b, acc, cnt, NULL, O[i]), nd, od, nd - k + i);
    div = div == TT_INVALID ? cv : mul(b, div, cv);
  }
  if (backward) v = dvd(b, v, div);
  for (int i = k - 1; i >= 0; i--)
    v = adaptive_sum_dim(b, v, nd - k + i, O[i], x->sizes[nd - k + i], backward, buf);
  if (!backward) v = dvd(b, v, div);
  free(buf);
  free(cnt);
  tt_lc_output(c, tt_b_convert(b, v, x->dtype));
  return NULL;
}

static tt_error *lower_adaptive_avg_pool3d(tt_lower_ctx *c) { return adaptive_avg(c, 3, false); }
static tt_error *lower_adaptive_avg_pool3d_backward(tt_lower_ctx *c) {
  return adaptive_avg(c, 3, true);
}
/* (the 2-d op lived in linalg.c as a matrix product, where 0 * inf made
 * NaNs leak out of windows holding an infinity) */
static tt_error *lower_adaptive_avg_pool2d(tt_lower_ctx *c) { return adaptive_avg(c, 2, false); }
static tt_error *lower_adaptive_avg_pool2d_backward(tt_lower_ctx *c) {
  return adaptive_avg(c, 2, true);
}

/* ------------------------------------------------------------ pixel shuffle */

/* pixel_shuffle(self, upscale_factor) / pixel_unshuffle(self, downscale_factor) */
static tt_error *pixel_shuffle_impl(tt_lower_ctx *c, bool un) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 0);
  if (!x || !x->storage) return tt_lc_decline(c, "not a device tensor");
  int64_t r = tt_lc_int(c, 1, 1);
  int nd = x->ndim;
  if (nd < 3)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s expects input to have at least 3 dimensions, "
                      "but got input with %d dimension(s)", un ? "pixel_unshuffle" : "pixel_shuffle", nd);
  if (r <= 0) return tt_lc_decline(c, "factor");
  if (nd - 3 + 6 > TT_MAX_DIMS) return tt_lc_decline(c, "rank");
  int64_t C = x->sizes[nd - 3], H = x->sizes[nd - 2], W = x->sizes[nd - 1];
  if (!un && C % (r * r) != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "pixel_shuffle expects its input's 'channel' "
                      "dimension to be divisible by the square of upscale_factor, but input.size(-3)=%"
                      PRId64 " is not divisible by %" PRId64, C, r * r);
  if (un && (H % r != 0 || W % r != 0))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "pixel_unshuffle expects height and width to be "
                      "divisible by downscale_factor");
  int nb = nd - 3;
  int64_t d6[TT_MAX_DIMS], perm[TT_MAX_DIMS], outd[TT_MAX_DIMS];
  for (int i = 0; i < nb; i++) d6[i] = outd[i] = x->sizes[i], perm[i] = i;
  if (!un) {
    int64_t oc = C / (r * r);
    d6[nb] = oc, d6[nb + 1] = r, d6[nb + 2] = r, d6[nb + 3] = H, d6[nb + 4] = W;
    int64_t p[5] = {0, 3, 1, 4, 2}; /* C, H, r, W, r */
    for (int i = 0; i < 5; i++) perm[nb + i] = nb + p[i];
    outd[nb] = oc, outd[nb + 1] = H * r, outd[nb + 2] = W * r;
  } else {
    int64_t oh = H / r, ow = W / r;
    d6[nb] = C, d6[nb + 1] = oh, d6[nb + 2] = r, d6[nb + 3] = ow, d6[nb + 4] = r;
    int64_t p[5] = {0, 2, 4, 1, 3}; /* C, r, r, H, W */
    for (int i = 0; i < 5; i++) perm[nb + i] = nb + p[i];
    outd[nb] = C * r * r, outd[nb + 1] = oh, outd[nb + 2] = ow;
  }
  tt_val v = tt_b_reshape(b, tt_lc_tensor(c, 0), nb + 5, d6);
  v = tt_b_transpose(b, v, perm);
  tt_lc_output(c, tt_b_reshape(b, v, nd, outd));
  return NULL;
}

static tt_error *lower_pixel_shuffle(tt_lower_ctx *c) { return pixel_shuffle_impl(c, false); }
static tt_error *lower_pixel_unshuffle(tt_lower_ctx *c) { return pixel_shuffle_impl(c, true); }

/* ------------------------------------------------------------ embedding bag */

/* Gathers rows idx [K] of w [R, D] -> [K, D]. */
static tt_val take_rows(tt_builder *b, tt_val w, tt_val idx) {
  tt_shape ws = tt_b_shape(b, w), is = tt_b_shape(b, idx);
  int64_t K = is.dims[0], k1[2] = {K, 1}, od[2] = {K, ws.dims[1]};
  tt_val ix = tt_b_reshape(b, tt_b_convert(b, idx, TT_I64), 2, k1);
  char attrs[400];
  snprintf(attrs, sizeof attrs,
           "dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], "
           "start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, %" PRId64
           ">, indices_are_sorted = false", ws.dims[1]);
  tt_val ins[2] = {w, ix};
  return tt_b_op(b, "stablehlo.gather", ins, 2, attrs, tt_shape_make(ws.dtype, 2, od));
}

/* offset2bag[k] = #{j in [1, nb) : offsets[j] <= k}, i64 [K]. */
static tt_val bag_of(tt_builder *b, tt_val offs, int64_t K, int64_t nb) {
  int64_t kb[2] = {K, nb};
  tt_shape kbs = tt_shape_make(TT_I64, 2, kb);
  int64_t m1[1] = {1};
  tt_val ob = tt_b_broadcast_in_dim(b, slice_dim(b, offs, 0, 0, nb), 2, kb, m1);
  tt_val kk = tt_b_iota(b, kbs, 0), jj = tt_b_iota(b, kbs, 1);
  tt_val hit = tt_b_binary(b, "and", tt_b_compare(b, "LE", ob, kk),
                           tt_b_compare(b, "GE", jj, tt_b_full(b, kbs, 1)));
  int64_t d1[1] = {1};
  return rsum(b, tt_b_select(b, hit, tt_b_full(b, kbs, 1), tt_b_full(b, kbs, 0)), d1, 1);
}

/* _embedding_bag / _embedding_bag_forward_only(weight, indices, offsets,
 * scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset,
 * padding_idx) -> (output, offset2bag, bag_size, max_indices). Modes sum and
 * mean; the auxiliary outputs mirror CPU's (offset2bag is empty on CPU's
 * fast sum path). */
static tt_error *lower_embedding_bag(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *w = tt_lc_ref(c, 0), *ix = tt_lc_ref(c, 1), *of = tt_lc_ref(c, 2),
                      *psw = tt_lc_ref(c, 6);
  if (!w || !ix || !of || !w->storage || !ix->storage || !of->storage || !is_float_dt(w->dtype))
    return tt_lc_decline(c, "args");
  if (w->ndim != 2 || ix->ndim != 1 || of->ndim != 1) return tt_lc_decline(c, "ranks");
  if ((ix->dtype != TT_I64 && ix->dtype != TT_I32) || of->dtype != ix->dtype)
    return tt_lc_decline(c, "index dtypes");
  int64_t mode = tt_lc_int(c, 4, 0), padding_idx = tt_lc_is_none(c, 8) ? -1 : tt_lc_int(c, 8, -1);
  bool ilo = tt_lc_bool(c, 7, false);
  if (mode != 0 && mode != 1) return tt_lc_decline(c, "mode max");
  if (psw && (mode != 0 || !psw->storage || psw->dtype != w->dtype || !shape_is(psw, 1, ix->sizes)))
    return tt_lc_decline(c, "per_sample_weights");
  int64_t K = ix->sizes[0], nb = of->sizes[0] - (ilo ? 1 : 0), D = w->sizes[1];
  if (K == 0 || nb <= 0 || D == 0 || w->sizes[0] == 0) return tt_lc_decline(c, "empty");
  tt_dtype it = ix->dtype, acc = opmath(w->dtype);
  tt_val idx = tt_lc_tensor(c, 1);
  tt_val offs = tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64);
  tt_val o2b = bag_of(b, offs, K, nb);
  /* bag sizes: next offset (or K) minus this one */
  int64_t one = 1;
  tt_val next;
  if (ilo) {
    next = slice_dim(b, offs, 0, 1, nb + 1);
  } else {
    tt_val kc = tt_b_full(b, tt_shape_make(TT_I64, 1, &one), (double)K);
    tt_val parts[2] = {slice_dim(b, offs, 0, 1, nb), kc};
    next = tt_b_concat(b, parts, 2, 0);
  }
  tt_val bsz = sub(b, next, slice_dim(b, offs, 0, 0, nb));
  tt_val rows = tt_b_convert(b, take_rows(b, tt_lc_tensor(c, 0), idx), acc);
  int64_t kd[2] = {K, D};
  if (psw) {
    int64_t m0[1] = {0};
    rows = mul(b, rows, tt_b_broadcast_in_dim(b, opt_tensor(c, 6, acc), 2, kd, m0));
  }
  if (padding_idx >= 0) {
    /* rows of padding_idx contribute nothing and are not counted */
    int64_t k1[2] = {K, 1}, m0k[1] = {0};
    tt_shape ks = tt_shape_make(TT_I64, 1, &K);
    tt_val keep = tt_b_compare(b, "NE", tt_b_convert(b, idx, TT_I64), tt_b_full(b, ks, (double)padding_idx));
    rows = tt_b_select(b, tt_b_broadcast_in_dim(b, keep, 2, kd, m0k), rows,
                       tt_b_full(b, tt_shape_make(acc, 2, kd), 0));
    tt_val ones = tt_b_reshape(b, tt_b_select(b, keep, tt_b_full(b, ks, 1), tt_b_full(b, ks, 0)), 2, k1);
    bsz = tt_b_reshape(b, scatter_add_rows(b, o2b, ones, nb), 1, &nb);
  }
  tt_val out = scatter_add_rows(b, o2b, rows, nb);
  if (mode == 1) {
    int64_t ndd[2] = {nb, D}, m0[1] = {0};
    tt_val bf = tt_b_broadcast_in_dim(b, tt_b_convert(b, bsz, acc), 2, ndd, m0);
    tt_val zero = tt_b_full(b, tt_shape_make(acc, 2, ndd), 0);
    out = tt_b_select(b, tt_b_compare(b, "GT", bf, zero), dvd(b, out, bf), zero);
  }
  tt_lc_output(c, tt_b_convert(b, out, w->dtype));
  bool fast = mode == 0 && w->dtype != TT_F64 && padding_idx < 0;
  int64_t zero_len = 0;
  if (fast)
    tt_lc_output(c, tt_b_full(b, tt_shape_make(it, 1, &zero_len), 0));
  else
    tt_lc_output(c, tt_b_convert(b, o2b, it));
  tt_val bag = mode == 1 ? tt_b_convert(b, bsz, it) : tt_b_full(b, tt_shape_make(it, 1, &nb), 0);
  tt_lc_output(c, bag);
  tt_lc_output(c, bag);
  return NULL;
}

/* _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size,
 * maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights,
 * padding_idx) and _embedding_bag_backward(grad, indices, offsets,
 * offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq,
 * mode, sparse, per_sample_weights, padding_idx): the latter recomputes
 * offset2bag from offsets (CPU's fast path leaves it empty). */
static tt_error *embedding_bag_bw(tt_lower_ctx *c, bool from_offsets) {
  tt_builder *b = tt_lc_builder(c);
  int a = from_offsets ? 1 : 0; /* shift of the arguments after indices */
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *ix = tt_lc_ref(c, 1), *o2b = tt_lc_ref(c, 2 + a),
                      *bs = tt_lc_ref(c, 3 + a), *psw = tt_lc_ref(c, 8 + 2 * a);
  const tt_tensor_ref *of = from_offsets ? tt_lc_ref(c, 2) : NULL;
  int64_t num_weights = tt_lc_int(c, 5 + a, 0), mode = tt_lc_int(c, 7 + a, 0);
  int pi = 9 + 2 * a;
  int64_t padding_idx = tt_lc_is_none(c, pi) ? -1 : tt_lc_int(c, pi, -1);
  if (!g || !ix || !bs || !g->storage || !ix->storage || !bs->storage ||
      !is_float_dt(g->dtype) || g->ndim != 2 || ix->ndim != 1)
    return tt_lc_decline(c, "args");
  if (from_offsets && tt_lc_bool(c, 9, false)) return tt_lc_decline(c, "sparse");
  if (tt_lc_bool(c, 6 + a, false)) return tt_lc_decline(c, "scale_grad_by_freq");
  if (mode != 0 && mode != 1) return tt_lc_decline(c, "mode max");
  int64_t K = ix->sizes[0], nb = g->sizes[0];
  if (K == 0 || num_weights <= 0 || bs->ndim != 1 || bs->sizes[0] != nb)
    return tt_lc_decline(c, "shapes");
  if (from_offsets) {
    if (!of || !of->storage || of->ndim != 1 || (of->sizes[0] != nb && of->sizes[0] != nb + 1))
      return tt_lc_decline(c, "offsets");
  } else if (!o2b || !o2b->storage || !shape_is(o2b, 1, ix->sizes)) {
    return tt_lc_decline(c, "offset2bag");
  }
  if (psw && (mode != 0 || psw->dtype != g->dtype || !shape_is(psw, 1, ix->sizes)))
    return tt_lc_decline(c, "per_sample_weights");
  tt_dtype acc = opmath(g->dtype);
  int64_t D = g->sizes[1], kd[2] = {K, D}, m0[1] = {0};
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val bag = from_offsets ? bag_of(b, tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64), K, nb)
                            : tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64);
  tt_val rows = take_rows(b, gv, bag);
  if (mode == 1) {
    tt_val sz = tt_b_convert(b, tt_lc_tensor(c, 3 + a), acc);
    int64_t n1[2] = {nb, 1};
    tt_val szk = take_rows(b, tt_b_reshape(b, sz, 2, n1), bag); /* [K, 1] */
    int64_t k1[1] = {K};
    rows = dvd(b, rows, tt_b_broadcast_in_dim(b, tt_b_reshape(b, szk, 1, k1), 2, kd, m0));
  }
  if (psw) rows = mul(b, rows, tt_b_broadcast_in_dim(b, opt_tensor(c, 8 + 2 * a, acc), 2, kd, m0));
  if (padding_idx >= 0) {
    tt_shape ks = tt_shape_make(TT_I64, 1, &K);
    tt_val keep = tt_b_compare(b, "NE", tt_b_convert(b, tt_lc_tensor(c, 1), TT_I64),
                               tt_b_full(b, ks, (double)padding_idx));
    rows = tt_b_select(b, tt_b_broadcast_in_dim(b, keep, 2, kd, m0), rows,
                       tt_b_full(b, tt_shape_make(acc, 2, kd), 0));
  }
  tt_val r = scatter_add_rows(b, tt_lc_tensor(c, 1), rows, num_weights);
  tt_lc_output(c, tt_b_convert(b, r, g->dtype));
  return NULL;
}

static tt_error *lower_embedding_bag_dense_backward(tt_lower_ctx *c) {
  return embedding_bag_bw(c, false);
}
static tt_error *lower_embedding_bag_backward(tt_lower_ctx *c) { return embedding_bag_bw(c, true); }

/* _embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets,
 * offset2bag, mode, padding_idx): grad_psw[k] = <grad[bag(k)], weight[idx[k]]> */
static tt_error *lower_embedding_bag_psw_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *w = tt_lc_ref(c, 1), *ix = tt_lc_ref(c, 2),
                      *of = tt_lc_ref(c, 3);
  int64_t mode = tt_lc_int(c, 5, 0);
  int64_t padding_idx = tt_lc_is_none(c, 6) ? -1 : tt_lc_int(c, 6, -1);
  if (!g || !w || !ix || !of || !g->storage || !w->storage || !ix->storage || !of->storage ||
      !is_float_dt(g->dtype) || w->dtype != g->dtype || g->ndim != 2 || w->ndim != 2 ||
      ix->ndim != 1 || of->ndim != 1 || g->sizes[1] != w->sizes[1])
    return tt_lc_decline(c, "args");
  if (mode != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  int64_t K = ix->sizes[0], nb = g->sizes[0];
  if (K == 0 || nb == 0 || (of->sizes[0] != nb && of->sizes[0] != nb + 1))
    return tt_lc_decline(c, "shapes");
  tt_dtype acc = opmath(g->dtype);
  tt_val bag = bag_of(b, tt_b_convert(b, tt_lc_tensor(c, 3), TT_I64), K, nb);
  tt_val gr = take_rows(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), bag);
  tt_val wr = take_rows(b, tt_b_convert(b, tt_lc_tensor(c, 1), acc), tt_lc_tensor(c, 2));
  int64_t d1[1] = {1};
  tt_val r = rsum(b, mul(b, gr, wr), d1, 1);
  if (padding_idx >= 0) {
    tt_shape ks = tt_shape_make(TT_I64, 1, &K);
    tt_val keep = tt_b_compare(b, "NE", tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64),
                               tt_b_full(b, ks, (double)padding_idx));
    r = tt_b_select(b, keep, r, tt_b_full(b, tt_shape_make(acc, 1, &K), 0));
  }
  tt_lc_output(c, tt_b_convert(b, r, g->dtype));
  return NULL;
}

TT_LOWERINGS(nn) = {
    {lower_native_batch_norm, {"native_batch_norm", "native_batch_norm.out"}},
    {lower_native_batch_norm_legit,
     {"_native_batch_norm_legit", "_native_batch_norm_legit.no_stats"}},
    {lower_native_batch_norm_backward,
     {"native_batch_norm_backward", "native_batch_norm_backward.out"}},
    {lower_native_layer_norm, {"native_layer_norm", "native_layer_norm.out"}},
    {lower_native_group_norm, {"native_group_norm", "native_group_norm.out"}},
    {lower_native_layer_norm_backward,
     {"native_layer_norm_backward", "native_layer_norm_backward.out"}},
    {lower_native_group_norm_backward,
     {"native_group_norm_backward", "native_group_norm_backward.out"}},
    {lower_embedding_dense_backward,
     {"embedding_dense_backward", "embedding_dense_backward.out"}},
    {lower_native_dropout, {"native_dropout", "native_dropout.out"}},
    {lower_native_dropout_backward, {"native_dropout_backward", "native_dropout_backward.out"}},
    {lower_nll_loss_forward, {"nll_loss_forward", "nll_loss_forward.output"}},
    {lower_nll_loss_backward, {"nll_loss_backward", "nll_loss_backward.grad_input"}},
    {lower_nll_loss2d_forward, {"nll_loss2d_forward", "nll_loss2d_forward.output"}},
    {lower_nll_loss2d_backward, {"nll_loss2d_backward", "nll_loss2d_backward.grad_input"}},
    {lower_mse_loss, {"mse_loss", "mse_loss.out"}},
    {lower_mse_loss_backward, {"mse_loss_backward", "mse_loss_backward.grad_input"}},
    {lower_binary_cross_entropy, {"binary_cross_entropy", "binary_cross_entropy.out"}},
    {lower_binary_cross_entropy_backward,
     {"binary_cross_entropy_backward", "binary_cross_entropy_backward.grad_input"}},
    {lower_huber_loss, {"huber_loss", "huber_loss.out"}},
    {lower_huber_loss_backward, {"huber_loss_backward", "huber_loss_backward.out"}},
    {lower_smooth_l1_loss, {"smooth_l1_loss", "smooth_l1_loss.out"}},
    {lower_smooth_l1_loss_backward,
     {"smooth_l1_loss_backward", "smooth_l1_loss_backward.grad_input"}},
    {lower_reflection_pad1d, {"reflection_pad1d", "reflection_pad1d.out"}},
    {lower_reflection_pad2d, {"reflection_pad2d", "reflection_pad2d.out"}},
    {lower_reflection_pad3d, {"reflection_pad3d", "reflection_pad3d.out"}},
    {lower_replication_pad1d, {"replication_pad1d", "replication_pad1d.out"}},
    {lower_replication_pad2d, {"replication_pad2d", "replication_pad2d.out"}},
    {lower_replication_pad3d, {"replication_pad3d", "replication_pad3d.out"}},
    {lower_reflection_pad1d_bw, {"reflection_pad1d_backward", "reflection_pad1d_backward.grad_input"}},
    {lower_reflection_pad2d_bw, {"reflection_pad2d_backward", "reflection_pad2d_backward.grad_input"}},
    {lower_reflection_pad3d_bw, {"reflection_pad3d_backward", "reflection_pad3d_backward.grad_input"}},
    {lower_replication_pad1d_bw,
     {"replication_pad1d_backward", "replication_pad1d_backward.grad_input"}},
    {lower_replication_pad2d_bw,
     {"replication_pad2d_backward", "replication_pad2d_backward.grad_input"}},
    {lower_replication_pad3d_bw,
     {"replication_pad3d_backward", "replication_pad3d_backward.grad_input"}},
    {lower_up_nearest1d, {"upsample_nearest1d", "upsample_nearest1d.out"}},
    {lower_up_nearest2d, {"upsample_nearest2d", "upsample_nearest2d.out"}},
    {lower_up_nearest3d, {"upsample_nearest3d", "upsample_nearest3d.out"}},
    {lower_up_nearest1d_bw, {"upsample_nearest1d_backward", "upsample_nearest1d_backward.grad_input"}},
    {lower_up_nearest2d_bw, {"upsample_nearest2d_backward", "upsample_nearest2d_backward.grad_input"}},
    {lower_up_nearest3d_bw, {"upsample_nearest3d_backward", "upsample_nearest3d_backward.grad_input"}},
    {lower_up_exact1d, {"_upsample_nearest_exact1d", "_upsample_nearest_exact1d.out"}},
    {lower_up_exact2d, {"_upsample_nearest_exact2d", "_upsample_nearest_exact2d.out"}},
    {lower_up_exact3d, {"_upsample_nearest_exact3d", "_upsample_nearest_exact3d.out"}},
    {lower_up_exact1d_bw,
     {"_upsample_nearest_exact1d_backward", "_upsample_nearest_exact1d_backward.grad_input"}},
    {lower_up_exact2d_bw,
     {"_upsample_nearest_exact2d_backward", "_upsample_nearest_exact2d_backward.grad_input"}},
    {lower_up_exact3d_bw,
     {"_upsample_nearest_exact3d_backward", "_upsample_nearest_exact3d_backward.grad_input"}},
    {lower_up_linear1d, {"upsample_linear1d", "upsample_linear1d.out"}},
    {lower_up_bilinear2d, {"upsample_bilinear2d", "upsample_bilinear2d.out"}},
    {lower_up_trilinear3d, {"upsample_trilinear3d", "upsample_trilinear3d.out"}},
    {lower_up_linear1d_bw, {"upsample_linear1d_backward", "upsample_linear1d_backward.grad_input"}},
    {lower_up_bilinear2d_bw,
     {"upsample_bilinear2d_backward", "upsample_bilinear2d_backward.grad_input"}},
    {lower_up_bicubic2d, {"upsample_bicubic2d", "upsample_bicubic2d.out"}},
    {lower_up_bicubic2d_bw,
     {"upsample_bicubic2d_backward", "upsample_bicubic2d_backward.grad_input"}},
    {lower_up_trilinear3d_bw,
     {"upsample_trilinear3d_backward", "upsample_trilinear3d_backward.grad_input"}},
    {lower_soft_margin_loss, {"soft_margin_loss", "soft_margin_loss.out"}},
    {lower_soft_margin_loss_backward,
     {"soft_margin_loss_backward", "soft_margin_loss_backward.grad_input"}},
    {lower_weight_norm_interface, {"_weight_norm_interface", "_weight_norm_interface.out"}},
    {lower_weight_norm_interface_backward,
     {"_weight_norm_interface_backward", "_weight_norm_interface_backward.out"}},
    {lower_adaptive_max_pool2d, {"adaptive_max_pool2d", "adaptive_max_pool2d.out"}},
    {lower_adaptive_max_pool2d_backward,
     {"adaptive_max_pool2d_backward", "adaptive_max_pool2d_backward.grad_input"}},
    {lower_adaptive_avg_pool3d, {"_adaptive_avg_pool3d", "_adaptive_avg_pool3d.out"}},
    {lower_adaptive_avg_pool2d, {"_adaptive_avg_pool2d", "_adaptive_avg_pool2d.out"}},
    {lower_adaptive_avg_pool2d_backward,
     {"_adaptive_avg_pool2d_backward", "_adaptive_avg_pool2d_backward.out"}},
    {lower_adaptive_avg_pool3d_backward,
     {"_adaptive_avg_pool3d_backward", "_adaptive_avg_pool3d_backward.grad_input"}},
    {lower_pixel_shuffle, {"pixel_shuffle", "pixel_shuffle.out"}},
    {lower_pixel_unshuffle, {"pixel_unshuffle", "pixel_unshuffle.out"}},
    {lower_embedding_bag,
     {"_embedding_bag", "_embedding_bag.out", "_embedding_bag_forward_only",
      "_embedding_bag_forward_only.out"}},
    {lower_embedding_bag_dense_backward,
     {"_embedding_bag_dense_backward", "_embedding_bag_dense_backward.out"}},
    {lower_embedding_bag_backward, {"_embedding_bag_backward"}},
    {lower_embedding_bag_psw_backward,
     {"_embedding_bag_per_sample_weights_backward",
      "_embedding_bag_per_sample_weights_backward.out"}},
    {NULL, {NULL}},
};
