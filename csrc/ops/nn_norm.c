/* Lowerings of the nn_norm family (see lowering.h): batch, layer and
 * group norm and their backwards, and weight norm (_weight_norm_interface
 * and its backward). Split out of nn.c. */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common.h"
#include "ops/nn_common.h"

/* ------------------------------------------------------------ batch norm */

/* Shared by native_batch_norm and _native_batch_norm_legit. Arguments:
 * input, weight, bias, running_mean (rm < 0: none), running_var, training,
 * momentum, eps. Emits (out, save_mean, save_invstd) and writes running
 * stats in training mode. */
/* -(a * b) */
static tt_val nn_negate_mul(tt_builder *b, tt_val x, tt_val y) {
  return tt_b_un(b, TT_OP_NEGATE, tt_mul(b, x, y));
}

static tt_error *batch_norm_impl(tt_lower_ctx *c, int rm_arg, int rv_arg, int train_arg) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *in = tt_lc_ref(c, 0);
  if (!in || !tt_dtype_is_floating(in->dtype)) return tt_lc_decline(c, "non-float input");
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
      if (!(params[k]->dtype == TT_F32 && tt_opmath(in->dtype) == TT_F32 && in->dtype != TT_F32))
        return tt_lc_decline(c, "mixed dtypes");
      pdt = TT_F32;
    }
  }
  for (int k = 0; k < 4; k++)
    if (params[k] && params[k]->dtype != pdt) return tt_lc_decline(c, "mixed dtypes");
  if ((rm == NULL) != (rv == NULL)) return tt_lc_decline(c, "only one running stat");
  /* With float16/bfloat16 parameters CPU rounds the batch statistics to the
   * parameter dtype at points that vary with its kernel path (instance_norm's
   * reshaped input takes another); no one rounding scheme matches them all.
   * Without weight and bias that rounding stays within the dtype's relative
   * tolerance; with them, bias - mean * invstd * weight cancels and shows it. */
  if (training && pdt != tt_opmath(pdt) && (w || bi))
    return tt_lc_decline(c, "training with reduced-precision weight or bias");
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
  tt_dtype acc = tt_opmath(in->dtype);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  int64_t rdims[TT_MAX_DIMS];
  int nr = 0;
  for (int i = 0; i < nd; i++)
    if (i != 1) rdims[nr++] = i;
  tt_val mean, invstd, var = TT_INVALID;
  if (training) {
    mean = tt_div(b, nn_rsum(b, x, rdims, nr), tt_b_constant(b, acc, (double)n));
    tt_val d = tt_sub(b, x, tt_along(b, mean, nd, in->sizes, 1));
    var = tt_div(b, nn_rsum(b, tt_mul(b, d, d), rdims, nr), tt_b_constant(b, acc, (double)n));
    invstd = tt_b_un(b, TT_OP_RSQRT, tt_add(b, var, tt_b_constant(b, acc, eps)));
  } else {
    mean = nn_opt_tensor(c, rm_arg, acc);
    tt_val v = nn_opt_tensor(c, rv_arg, acc);
    invstd = tt_b_un(b, TT_OP_RSQRT, tt_add(b, v, tt_b_constant(b, acc, eps)));
  }
  /* y = x * alpha + beta with alpha = invstd * weight and beta = bias -
   * mean * alpha, the form (and rounding) of PyTorch's CPU kernel. */
  tt_val alpha = invstd;
  if (w) alpha = tt_mul(b, alpha, nn_opt_tensor(c, 1, acc));
  tt_val beta = nn_negate_mul(b, mean, alpha);
  if (bi) beta = tt_add(b, nn_opt_tensor(c, 2, acc), beta);
  tt_val y = tt_add(b, tt_mul(b, x, tt_along(b, alpha, nd, in->sizes, 1)),
                    tt_along(b, beta, nd, in->sizes, 1));
  tt_lc_output(c, tt_b_convert(b, y, in->dtype));
  if (training) {
    tt_lc_output(c, tt_b_convert(b, mean, pdt));
    tt_lc_output(c, tt_b_convert(b, invstd, pdt));
    if (rm) {
      tt_val m = tt_b_constant(b, acc, momentum), om = tt_b_constant(b, acc, 1.0 - momentum);
      tt_val old_m = nn_opt_tensor(c, rm_arg, acc), old_v = nn_opt_tensor(c, rv_arg, acc);
      tt_val unbiased = tt_mul(b, var, tt_b_constant(b, acc, (double)n / (double)(n - 1)));
      tt_lc_write(c, rm_arg, -1, tt_add(b, tt_mul(b, old_m, om), tt_mul(b, mean, m)));
      tt_lc_write(c, rv_arg, -1, tt_add(b, tt_mul(b, old_v, om), tt_mul(b, unbiased, m)));
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
  if (!go || !in || !tt_dtype_is_floating(in->dtype) || go->dtype != in->dtype || in->ndim < 2 ||
      !nn_shape_is(go, in->ndim, in->sizes))
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
  tt_dtype acc = tt_opmath(in->dtype);
  tt_dtype wdt = w ? w->dtype : (mr->dtype);
  int64_t n = 1;
  int64_t rdims[TT_MAX_DIMS];
  int nr = 0;
  for (int i = 0; i < nd; i++)
    if (i != 1) n *= in->sizes[i], rdims[nr++] = i;
  tt_val g = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 1), acc);
  tt_val mean = nn_opt_tensor(c, mean_arg, acc);
  tt_val invstd = nn_opt_tensor(c, var_arg, acc);
  if (!train) invstd = tt_b_un(b, TT_OP_RSQRT, tt_add(b, invstd, tt_b_constant(b, acc, eps)));
  tt_val wv = w ? nn_opt_tensor(c, 2, acc) : tt_b_full(b, tt_shape_make(acc, 1, &C), 1.0);
  tt_val d = tt_sub(b, x, tt_along(b, mean, nd, in->sizes, 1));
  tt_val gsum = nn_rsum(b, g, rdims, nr);
  tt_val dotp = nn_rsum(b, tt_mul(b, g, d), rdims, nr);
  tt_val gi;
  if (train) {
    tt_val nn = tt_b_constant(b, acc, (double)n);
    tt_val k = tt_div(b, tt_mul(b, tt_mul(b, dotp, invstd), invstd), nn);
    tt_val gm = tt_div(b, gsum, nn);
    gi = tt_sub(b, tt_sub(b, g, tt_along(b, gm, nd, in->sizes, 1)), tt_mul(b, d, tt_along(b, k, nd, in->sizes, 1)));
    gi = tt_mul(b, gi, tt_along(b, tt_mul(b, invstd, wv), nd, in->sizes, 1));
  } else {
    gi = tt_mul(b, g, tt_along(b, tt_mul(b, invstd, wv), nd, in->sizes, 1));
  }
  tt_lc_output(c, tt_b_convert(b, gi, in->dtype));
  tt_lc_output(c, tt_b_convert(b, tt_mul(b, dotp, invstd), wdt));
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
  if (pdt == TT_F32 && tt_dtype_is_half(in)) return TT_F32;
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
  if (!in || !in->storage || !tt_dtype_is_floating(in->dtype) || nn < 1)
    return tt_lc_decline(c, "unsupported arguments");
  int nd = in->ndim, axis = nd - nn;
  bool ok = axis >= 0;
  for (int i = 0; ok && i < nn; i++) ok = in->sizes[axis + i] == ns[i];
  if (!ok)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Given normalized_shape has %d dims, but got input of size with %d dims "
                      "that does not match", nn, nd);
  const tt_tensor_ref *wb[2] = {w, bi};
  for (int k = 0; k < 2; k++) {
    if (!wb[k] || nn_shape_is(wb[k], nn, ns)) continue;
    char got[256], want[256];
    const char *what = k ? "bias" : "weight";
    tt_fmt_i64_list(got, sizeof got, wb[k]->sizes, wb[k]->ndim);
    tt_fmt_i64_list(want, sizeof want, ns, nn);
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected %s to be of same shape as normalized_shape, but got %s of shape %s "
                      "and normalized_shape = %s", what, what, got, want);
  }
  const tt_tensor_ref *params[2] = {w, bi};
  int pdt = norm_param_dtype(in->dtype, params, 2);
  if (pdt < 0) return tt_lc_decline(c, "mixed dtypes");
  int64_t M = 1, N = 1;
  for (int i = 0; i < axis; i++) M *= in->sizes[i];
  for (int i = axis; i < nd; i++) N *= in->sizes[i];
  if (M * N == 0) return tt_lc_decline(c, "empty input");
  tt_dtype acc = tt_opmath(in->dtype);
  int64_t mn[2] = {M, N}, n1[1] = {N}, d1[1] = {1};
  tt_val x = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), 2, mn);
  tt_val nconst = tt_b_constant(b, acc, (double)N);
  tt_val mean = tt_div(b, nn_rsum(b, x, d1, 1), nconst);
  tt_val d = tt_sub(b, x, tt_along(b, mean, 2, mn, 0));
  tt_val var = tt_div(b, nn_rsum(b, tt_mul(b, d, d), d1, 1), nconst);
  tt_val rstd = tt_b_un(b, TT_OP_RSQRT, tt_add(b, var, tt_b_constant(b, acc, eps)));
  tt_val y = tt_mul(b, d, tt_along(b, rstd, 2, mn, 0));
  if (w) y = tt_mul(b, y, tt_along(b, tt_b_reshape(b, nn_opt_tensor(c, 2, acc), 1, n1), 2, mn, 1));
  if (bi) y = tt_add(b, y, tt_along(b, tt_b_reshape(b, nn_opt_tensor(c, 3, acc), 1, n1), 2, mn, 1));
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
  if (!go || !in || !tt_dtype_is_floating(in->dtype) || go->dtype != in->dtype ||
      !nn_shape_is(go, in->ndim, in->sizes) || nn < 0 || nn > in->ndim)
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
  if (w && (w->ndim != nn || !nn_shape_is(w, nn, ns))) return tt_lc_decline(c, "odd weight");
  tt_dtype acc = tt_opmath(in->dtype);
  /* work on [M, N] */
  int64_t mn[2] = {M, N}, m1[1] = {M}, n1[1] = {N};
  tt_val g = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), 2, mn);
  tt_val x = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 1), acc), 2, mn);
  tt_val mean = tt_b_reshape(b, nn_opt_tensor(c, 3, acc), 1, m1);
  tt_val rstd = tt_b_reshape(b, nn_opt_tensor(c, 4, acc), 1, m1);
  tt_val xhat = tt_mul(b, tt_sub(b, x, tt_along(b, mean, 2, mn, 0)), tt_along(b, rstd, 2, mn, 0));
  tt_val gw = g;
  if (w) gw = tt_mul(b, g, tt_along(b, tt_b_reshape(b, nn_opt_tensor(c, 5, acc), 1, n1), 2, mn, 1));
  int64_t d1[1] = {1}, d0[1] = {0};
  tt_val nconst = tt_b_constant(b, acc, (double)N);
  tt_val mg = tt_div(b, nn_rsum(b, gw, d1, 1), nconst);
  tt_val mgx = tt_div(b, nn_rsum(b, tt_mul(b, gw, xhat), d1, 1), nconst);
  tt_val gi = tt_sub(b, tt_sub(b, gw, tt_along(b, mg, 2, mn, 0)), tt_mul(b, xhat, tt_along(b, mgx, 2, mn, 0)));
  gi = tt_mul(b, gi, tt_along(b, rstd, 2, mn, 0));
  tt_lc_output(c, tt_b_convert(b, tt_b_reshape(b, gi, nd, in->sizes), in->dtype));
  tt_dtype wdt = w ? w->dtype : (bi ? bi->dtype : in->dtype);
  tt_val gweight = tt_b_reshape(b, nn_rsum(b, tt_mul(b, g, xhat), d0, 1), nn, ns);
  tt_val gbias = tt_b_reshape(b, nn_rsum(b, g, d0, 1), nn, ns);
  tt_lc_output(c, tt_b_convert(b, gweight, wdt));
  tt_lc_output(c, tt_b_convert(b, gbias, bi ? bi->dtype : wdt));
  return NULL;
}

/* ------------------------------------------------------------ group norm */

/* Whether ref's elements lie densely in storage in the dimension order
 * order[0] (outermost) .. order[nd-1] (innermost); size-1 dims are free. */
static bool ref_dense_in_order(const tt_tensor_ref *r, const int *order) {
  int64_t want = 1;
  for (int i = 0; i < r->ndim; i++)
    if (r->sizes[i] == 0) return true;
  for (int k = r->ndim - 1; k >= 0; k--) {
    int d = order[k];
    if (r->sizes[d] == 1) continue;
    if (r->strides[d] != want) return false;
    want *= r->sizes[d];
  }
  return true;
}

/* CPU's native_group_norm requires the input contiguous in its suggested
 * memory format (plain, or channels-last for 4-d/5-d) and raises otherwise. */
static bool group_norm_input_ok(const tt_tensor_ref *in) {
  int plain[TT_MAX_DIMS] = {0}, cl[TT_MAX_DIMS] = {0};
  for (int i = 0; i < in->ndim; i++) plain[i] = i;
  if (ref_dense_in_order(in, plain)) return true;
  if (in->ndim != 4 && in->ndim != 5) return false;
  cl[0] = 0;
  for (int i = 2; i < in->ndim; i++) cl[i - 1] = i;
  cl[in->ndim - 1] = 1;
  return ref_dense_in_order(in, cl);
}

/* native_group_norm(input, weight, bias, N, C, HxW, group, eps)
 *   -> (out, mean [N, G], rstd [N, G]). Like native_layer_norm, reached only
 * where the boundary routes it past PyTorch's CompositeExplicitAutograd kernel. */
static tt_error *lower_native_group_norm(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *in = tt_lc_ref(c, 0), *w = tt_lc_ref(c, 1), *bi = tt_lc_ref(c, 2);
  int64_t N = tt_lc_int(c, 3, 0), C = tt_lc_int(c, 4, 0), HW = tt_lc_int(c, 5, 0),
          G = tt_lc_int(c, 6, 0);
  double eps = tt_lc_double(c, 7, 1e-5);
  if (!in || !in->storage || !tt_dtype_is_floating(in->dtype) || G <= 0 || N * C * HW == 0)
    return tt_lc_decline(c, "unsupported arguments");
  if (!group_norm_input_ok(in))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected X.is_contiguous(memory_format) to be true, but got false.");
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
  tt_dtype acc = tt_opmath(in->dtype);
  int64_t D = C / G;
  int64_t s4[4] = {N, G, D, HW}, gd[2] = {G, D}, inner[2] = {2, 3};
  int64_t map_ng[2] = {0, 1}, map_gd[2] = {1, 2};
  tt_val x = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), 4, s4);
  tt_val cnt = tt_b_constant(b, acc, (double)(D * HW));
  tt_val mean = tt_div(b, nn_rsum(b, x, inner, 2), cnt);
  tt_val d = tt_sub(b, x, tt_b_broadcast_in_dim(b, mean, 4, s4, map_ng));
  tt_val var = tt_div(b, nn_rsum(b, tt_mul(b, d, d), inner, 2), cnt);
  tt_val rstd = tt_b_un(b, TT_OP_RSQRT, tt_add(b, var, tt_b_constant(b, acc, eps)));
  tt_val y = tt_mul(b, d, tt_b_broadcast_in_dim(b, rstd, 4, s4, map_ng));
  if (w)
    y = tt_mul(b, y, tt_b_broadcast_in_dim(b, tt_b_reshape(b, nn_opt_tensor(c, 1, acc), 2, gd), 4, s4,
                                        map_gd));
  if (bi)
    y = tt_add(b, y, tt_b_broadcast_in_dim(b, tt_b_reshape(b, nn_opt_tensor(c, 2, acc), 2, gd), 4, s4,
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
  if (!go || !in || !tt_dtype_is_floating(in->dtype) || go->dtype != in->dtype ||
      !nn_shape_is(go, in->ndim, in->sizes) || G <= 0 || C % G != 0 || N * C * HW == 0)
    return tt_lc_decline(c, "unsupported arguments");
  int64_t numel = 1;
  for (int i = 0; i < in->ndim; i++) numel *= in->sizes[i];
  if (numel != N * C * HW) return tt_lc_decline(c, "shape mismatch");
  if (w && (w->ndim != 1 || w->sizes[0] != C)) return tt_lc_decline(c, "odd weight");
  tt_dtype acc = tt_opmath(in->dtype);
  int64_t D = C / G;
  int64_t s4[4] = {N, G, D, HW}, ng[2] = {N, G}, gd[2] = {G, D};
  tt_val g = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), 4, s4);
  tt_val x = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 1), acc), 4, s4);
  tt_val mean = tt_b_reshape(b, nn_opt_tensor(c, 2, acc), 2, ng);
  tt_val rstd = tt_b_reshape(b, nn_opt_tensor(c, 3, acc), 2, ng);
  int64_t map_ng[2] = {0, 1}, map_gd[2] = {1, 2};
  tt_val mean4 = tt_b_broadcast_in_dim(b, mean, 4, s4, map_ng);
  tt_val rstd4 = tt_b_broadcast_in_dim(b, rstd, 4, s4, map_ng);
  tt_val xhat = tt_mul(b, tt_sub(b, x, mean4), rstd4);
  tt_val gw = g;
  if (w) {
    tt_val wv = tt_b_reshape(b, nn_opt_tensor(c, 4, acc), 2, gd);
    gw = tt_mul(b, g, tt_b_broadcast_in_dim(b, wv, 4, s4, map_gd));
  }
  int64_t inner[2] = {2, 3};
  tt_val cnt = tt_b_constant(b, acc, (double)(D * HW));
  tt_val mg = tt_div(b, nn_rsum(b, gw, inner, 2), cnt);
  tt_val mgx = tt_div(b, nn_rsum(b, tt_mul(b, gw, xhat), inner, 2), cnt);
  tt_val gi = tt_sub(b, tt_sub(b, gw, tt_b_broadcast_in_dim(b, mg, 4, s4, map_ng)),
                  tt_mul(b, xhat, tt_b_broadcast_in_dim(b, mgx, 4, s4, map_ng)));
  gi = tt_mul(b, gi, rstd4);
  tt_lc_output(c, tt_b_convert(b, tt_b_reshape(b, gi, in->ndim, in->sizes), in->dtype));
  int64_t outer[2] = {0, 3}, c1[1] = {C};
  tt_dtype wdt = w ? w->dtype : in->dtype;
  tt_val gweight = tt_b_reshape(b, nn_rsum(b, tt_mul(b, g, xhat), outer, 2), 1, c1);
  tt_val gbias = tt_b_reshape(b, nn_rsum(b, g, outer, 2), 1, c1);
  tt_lc_output(c, tt_b_convert(b, gweight, wdt));
  tt_lc_output(c, tt_b_convert(b, gbias, wdt));
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
  tt_val n2 = tt_b_reshape(b, nn_rsum(b, tt_mul(b, vv, vv), rd, nr), nd, kd);
  tt_val norms = tt_b_un(b, TT_OP_SQRT, n2);
  tt_val w = tt_mul(b, vv, tt_b_broadcast_to(b, tt_div(b, gv, norms), nd, v->sizes));
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
  if (!gw || !nm || !nn_shape_is(gw, nd, v->sizes) || gw->dtype != v->dtype || nm->dtype != v->dtype)
    return tt_lc_decline(c, "grad/norms");
  tt_val vv = tt_lc_tensor(c, 1), gwv = tt_lc_tensor(c, 0);
  tt_val gv = tt_b_reshape(b, tt_lc_tensor(c, 2), nd, kd);
  tt_val norms = tt_b_reshape(b, tt_lc_tensor(c, 3), nd, kd);
  tt_val dot = tt_b_reshape(b, nn_rsum(b, tt_mul(b, gwv, vv), rd, nr), nd, kd);
  tt_val grad_g = tt_div(b, dot, norms);
  /* grad_v = (g / norms) * (grad_w - v * (dot / norms^2)) */
  tt_val k = tt_div(b, grad_g, norms);
  tt_val inner = tt_sub(b, gwv, tt_mul(b, vv, tt_b_broadcast_to(b, k, nd, v->sizes)));
  tt_val grad_v = tt_mul(b, tt_b_broadcast_to(b, tt_div(b, gv, norms), nd, v->sizes), inner);
  tt_lc_output(c, grad_v);
  const tt_tensor_ref *g = tt_lc_ref(c, 2);
  tt_lc_output(c, tt_b_reshape(b, grad_g, g->ndim, g->sizes));
  return NULL;
}

TT_LOWERINGS(nn_norm) = {
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
    {lower_weight_norm_interface, {"_weight_norm_interface", "_weight_norm_interface.out"}},
    {lower_weight_norm_interface_backward,
     {"_weight_norm_interface_backward", "_weight_norm_interface_backward.out"}},
    {NULL, {NULL}},
};
