/* Activation functions (see lowering.h) and the backward ops autograd calls
 * for them: relu, gelu, silu, mish, hardtanh, leaky_relu, elu, softplus,
 * hardsigmoid/hardswish, log_sigmoid, shrinks, threshold, celu, rrelu, glu
 * and prelu. Floating inputs only; float16/bfloat16 compute in float32. */

#include <math.h>
#include <string.h>

#include "ops/unary_common.h"

/* ------------------------------------------------------------ activations */

/* relu = clamp_min(x, 0): NaN propagates. */
static tt_error *lower_relu(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  if (dt == TT_BOOL)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Boolean inputs not supported for relu");
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, dt);
  tt_val zero = tt_full_like(b, x, 0);
  tt_lc_output(c, uc_sel(b, uc_cmp(b, "LT", x, zero), zero, x));
  return NULL;
}


static bool gelu_tanh(tt_lower_ctx *c, int i, tt_error **err) {
  const char *mode = tt_lc_string(c, i, "none");
  *err = NULL;
  if (!strcmp(mode, "tanh")) return true;
  if (strcmp(mode, "none"))
    *err = tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "approximate argument must be either none or tanh.");
  return false;
}

#define GELU_BETA (M_SQRT2 * M_2_SQRTPI * 0.5)
#define GELU_KAPPA 0.044715

static tt_error *lower_gelu(tt_lower_ctx *c) {
  tt_error *err;
  bool approx = gelu_tanh(c, 1, &err);
  if (err) return err;
  FLOAT_SELF(0);
  tt_val half_x = tt_mul(b, tt_full_like(b, x, 0.5), x);
  tt_val inner;
  if (approx) { /* 0.5x(1 + tanh(beta (x + kappa x^3))) */
    tt_val cube = tt_mul(b, tt_mul(b, x, x), x);
    inner = uc_un(b, TT_OP_TANH, tt_mul(b, tt_full_like(b, x, GELU_BETA), tt_add(b, x, tt_mul(b, tt_full_like(b, x, GELU_KAPPA), cube))));
  } else { /* 0.5x(1 + erf(x / sqrt 2)) */
    inner = uc_chlo(b, TT_OP_CHLO_ERF, tt_mul(b, x, tt_full_like(b, x, M_SQRT1_2)));
  }
  return OUT(tt_mul(b, half_x, tt_add(b, tt_full_like(b, x, 1), inner)));
}

static tt_error *lower_gelu_backward(tt_lower_ctx *c) {
  tt_error *err;
  bool approx = gelu_tanh(c, 2, &err);
  if (err) return err;
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  tt_val r;
  if (approx) {
    tt_val x_sq = tt_mul(b, x, x);
    tt_val x_cube = tt_mul(b, x_sq, x);
    tt_val inner = tt_mul(b, tt_full_like(b, x, GELU_BETA), tt_add(b, x, tt_mul(b, tt_full_like(b, x, GELU_KAPPA), x_cube)));
    tt_val t = uc_un(b, TT_OP_TANH, inner);
    tt_val left = tt_mul(b, tt_full_like(b, x, 0.5), x);
    tt_val right = tt_add(b, tt_full_like(b, x, 1), t);
    tt_val left_d = tt_mul(b, tt_full_like(b, x, 0.5), right);
    tt_val tanh_d = tt_sub(b, tt_full_like(b, x, 1), tt_mul(b, t, t));
    tt_val inner_d = tt_mul(b, tt_full_like(b, x, GELU_BETA),
                         tt_add(b, tt_full_like(b, x, 1), tt_mul(b, tt_full_like(b, x, 3 * GELU_KAPPA), x_sq)));
    tt_val right_d = tt_mul(b, tt_mul(b, left, tanh_d), inner_d);
    r = tt_mul(b, g, tt_add(b, left_d, right_d));
  } else {
    tt_val cdf = tt_mul(b, tt_full_like(b, x, 0.5),
                     tt_add(b, tt_full_like(b, x, 1), uc_chlo(b, TT_OP_CHLO_ERF, tt_mul(b, x, tt_full_like(b, x, M_SQRT1_2)))));
    tt_val pdf = tt_mul(b, uc_un(b, TT_OP_EXPONENTIAL, tt_mul(b, tt_full_like(b, x, -0.5), tt_mul(b, x, x))),
                     tt_full_like(b, x, M_2_SQRTPI * M_SQRT1_2 * 0.5));
    r = tt_mul(b, g, tt_add(b, cdf, tt_mul(b, x, pdf)));
  }
  return OUT(r);
}

/* silu: x / (1 + exp(-x)) */
static tt_error *lower_silu(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  return OUT(tt_div(b, x, tt_add(b, tt_full_like(b, x, 1), uc_un(b, TT_OP_EXPONENTIAL, uc_un(b, TT_OP_NEGATE, x)))));
}

/* mish: x * tanh(softplus(x)) */
static tt_error *lower_mish(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  return OUT(tt_mul(b, x, uc_un(b, TT_OP_TANH, uc_un(b, TT_OP_LOG1P, uc_un(b, TT_OP_EXPONENTIAL, x)))));
}

/* sigmoid_backward(grad, y): grad * (1 - y) * y */
static tt_error *lower_sigmoid_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  return OUT(tt_mul(b, tt_mul(b, g, tt_sub(b, tt_full_like(b, x, 1), x)), x));
}

/* tanh_backward(grad, y): grad * (1 - y^2) */
static tt_error *lower_tanh_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  return OUT(tt_mul(b, g, tt_sub(b, tt_full_like(b, x, 1), tt_mul(b, x, x))));
}

/* threshold_backward(grad, self, threshold): self <= threshold ? 0 : grad */
static tt_error *lower_threshold_backward(tt_lower_ctx *c) {
  int args[2] = {0, 1}, nd;
  int64_t dims[TT_MAX_DIMS];
  tt_dtype dt = tt_result_type(c, args, 2);
  if (dt == TT_BOOL) return tt_lc_decline(c, "threshold_backward on bool");
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  tt_builder *b = tt_lc_builder(c);
  tt_val g = tt_operand(c, 0, dt, nd, dims);
  tt_val x = tt_operand(c, 1, dt, nd, dims);
  tt_lc_output(c, uc_sel(b, uc_cmp(b, "LE", x, uc_S(c, 2, x)), tt_full_like(b, g, 0), g));
  return NULL;
}

/* hardtanh(self, min_val, max_val) = clamp (std::min/max: NaN self propagates) */
static tt_error *lower_hardtanh(tt_lower_ctx *c) {
  /* Integer self keeps its dtype; the bounds are cast to it (truncated). */
  tt_dtype it = uc_arg_dtype(c, 0);
  if (tt_dtype_is_integral(it)) {
    tt_builder *b = tt_lc_builder(c);
    tt_val x = uc_read_as(c, 0, it);
    tt_val lo = tt_lc_nargs(c) > 1 && !tt_lc_is_none(c, 1) ? uc_S(c, 1, x) : tt_full_like(b, x, -1);
    tt_val hi = tt_lc_nargs(c) > 2 && !tt_lc_is_none(c, 2) ? uc_S(c, 2, x) : tt_full_like(b, x, 1);
    tt_val r = uc_sel(b, uc_cmp(b, "LT", x, lo), lo, x);
    tt_lc_output(c, uc_sel(b, uc_cmp(b, "LT", hi, r), hi, r));
    return NULL;
  }
  FLOAT_SELF(0);
  tt_val lo = tt_lc_nargs(c) > 1 && !tt_lc_is_none(c, 1) ? uc_S(c, 1, x) : tt_full_like(b, x, -1);
  tt_val hi = tt_lc_nargs(c) > 2 && !tt_lc_is_none(c, 2) ? uc_S(c, 2, x) : tt_full_like(b, x, 1);
  tt_val r = uc_sel(b, uc_cmp(b, "LT", x, lo), lo, x);
  r = uc_sel(b, uc_cmp(b, "LT", hi, r), hi, r);
  return OUT(r);
}

/* hardtanh_backward(grad, self, min, max): (x <= min || x >= max) ? 0 : grad */
static tt_error *lower_hardtanh_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  tt_val out = tt_b_bin(b, TT_OP_OR, uc_cmp(b, "LE", x, uc_S(c, 2, x)), uc_cmp(b, "GE", x, uc_S(c, 3, x)));
  return OUT(uc_sel(b, out, tt_full_like(b, g, 0), g));
}

/* leaky_relu(self, slope): x > 0 ? x : x * slope */
static tt_error *lower_leaky_relu(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val slope = tt_lc_nargs(c) > 1 && !tt_lc_is_none(c, 1) ? uc_S(c, 1, x) : tt_full_like(b, x, 0.01);
  return OUT(uc_sel(b, uc_cmp(b, "GT", x, tt_full_like(b, x, 0)), x, tt_mul(b, x, slope)));
}

/* leaky_relu_backward(grad, self, slope, self_is_result): self > 0 ? grad : grad * slope.
 * After the in-place form, self is the result, whose sign tells the branch
 * only for a slope >= 0: CPU refuses a negative one (the slope's value then
 * becomes part of the cache key, for the in-place form only). */
static tt_error *inplace_negative_slope(tt_lower_ctx *c) {
  return tt_lc_fail(c, TT_ERR_RUNTIME,
                    "In-place leakyReLu backward calculation is triggered with a negative slope "
                    "which is not supported. This is caused by calling in-place forward function "
                    "with a negative slope, please call out-of-place version instead. File an "
                    "issue at https://github.com/pytorch/pytorch if you do require supporting "
                    "in-place leakRelu backward calculation with negative slope");
}

static tt_error *lower_leaky_relu_backward(tt_lower_ctx *c) {
  if (tt_lc_bool(c, 3, false) && tt_lc_scalar_value(c, 2) < 0.0) return inplace_negative_slope(c);
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  return OUT(uc_sel(b, uc_cmp(b, "GT", x, tt_full_like(b, x, 0)), g, tt_mul(b, g, uc_S(c, 2, x))));
}

/* elu(self, alpha, scale, input_scale):
 * x <= 0 ? expm1(x * input_scale) * alpha * scale : x * scale */
static tt_val scalar_or(tt_lower_ctx *c, int i, tt_val like, double dflt) {
  if (tt_lc_nargs(c) > i && !tt_lc_is_none(c, i)) return uc_S(c, i, like);
  return tt_full_like(tt_lc_builder(c), like, dflt);
}

static tt_error *lower_elu(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val alpha = scalar_or(c, 1, x, 1), scale = scalar_or(c, 2, x, 1);
  tt_val in_scale = scalar_or(c, 3, x, 1);
  tt_val neg = tt_mul(b, uc_un(b, TT_OP_EXPM1, tt_mul(b, x, in_scale)), tt_mul(b, alpha, scale));
  return OUT(uc_sel(b, uc_cmp(b, "LE", x, tt_full_like(b, x, 0)), neg, tt_mul(b, x, scale)));
}

/* elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result).
 * is_result (after elu_/celu_): the branch is read from the result's sign,
 * right only for alpha >= 0; CPU refuses a negative alpha (its value then
 * becomes part of the cache key, for this form only). */
static tt_error *lower_elu_backward(tt_lower_ctx *c) {
  bool is_result = tt_lc_bool(c, 4, false);
  if (is_result && tt_lc_scalar_value(c, 1) < 0.0)
    return tt_lc_fail(c, TT_ERR_RUNTIME,
                      "In-place elu backward calculation is triggered with a negative slope which "
                      "is not supported. This is caused by calling in-place forward function with "
                      "a negative slope, please call out-of-place version instead.");
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(5);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  tt_val alpha = uc_S(c, 1, x), scale = uc_S(c, 2, x), in_scale = uc_S(c, 3, x);
  tt_val negcoef = tt_mul(b, alpha, scale);
  tt_val neg;
  if (is_result) /* g * input_scale * (y + negcoef) */
    neg = tt_mul(b, tt_mul(b, g, in_scale), tt_add(b, x, negcoef));
  else /* g * input_scale * negcoef * exp(x * input_scale) */
    neg = tt_mul(b, tt_mul(b, tt_mul(b, g, in_scale), negcoef), uc_un(b, TT_OP_EXPONENTIAL, tt_mul(b, x, in_scale)));
  return OUT(uc_sel(b, uc_cmp(b, "LE", x, tt_full_like(b, x, 0)), neg, tt_mul(b, g, scale)));
}

/* softplus(self, beta, threshold): x*beta > threshold ? x : log1p(exp(x*beta)) / beta */
static tt_error *lower_softplus(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val beta = scalar_or(c, 1, x, 1), thr = scalar_or(c, 2, x, 20);
  tt_val xb = tt_mul(b, x, beta);
  tt_val soft = tt_div(b, uc_un(b, TT_OP_LOG1P, uc_un(b, TT_OP_EXPONENTIAL, xb)), beta);
  return OUT(uc_sel(b, uc_cmp(b, "GT", xb, thr), x, soft));
}

/* softplus_backward(grad, self, beta, threshold):
 * z = exp(x*beta); x*beta > threshold ? grad : grad * z / (z + 1) */
static tt_error *lower_softplus_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  tt_val xb = tt_mul(b, x, uc_S(c, 2, x));
  tt_val z = uc_un(b, TT_OP_EXPONENTIAL, xb);
  tt_val soft = tt_div(b, tt_mul(b, g, z), tt_add(b, z, tt_full_like(b, x, 1)));
  return OUT(uc_sel(b, uc_cmp(b, "GT", xb, uc_S(c, 3, x)), g, soft));
}

/* min(max(x + 3, 0), 6) with std::min/max NaN behaviour */
static tt_val relu6_shift(tt_builder *b, tt_val x) {
  tt_val y = tt_add(b, x, tt_full_like(b, x, 3));
  tt_val zero = tt_full_like(b, x, 0), six = tt_full_like(b, x, 6);
  y = uc_sel(b, uc_cmp(b, "LT", y, zero), zero, y);
  return uc_sel(b, uc_cmp(b, "LT", six, y), six, y);
}

static tt_error *lower_hardsigmoid(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  return OUT(tt_div(b, relu6_shift(b, x), tt_full_like(b, x, 6)));
}

/* (x > -3 && x < 3) ? grad * (1/6) : 0 */
static tt_error *lower_hardsigmoid_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  tt_val in = tt_b_bin(b, TT_OP_AND, uc_cmp(b, "GT", x, tt_full_like(b, x, -3)), uc_cmp(b, "LT", x, tt_full_like(b, x, 3)));
  return OUT(uc_sel(b, in, tt_mul(b, g, tt_full_like(b, x, 1.0f / 6.0f)), tt_full_like(b, x, 0)));
}

static tt_error *lower_hardswish(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  return OUT(tt_div(b, tt_mul(b, x, relu6_shift(b, x)), tt_full_like(b, x, 6)));
}

/* x <= -3 ? 0 : x < 3 ? grad * (x / 3 + 0.5) : grad */
static tt_error *lower_hardswish_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  tt_val mid = tt_mul(b, g, tt_add(b, tt_div(b, x, tt_full_like(b, x, 3)), tt_full_like(b, x, 0.5)));
  tt_val r = uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 3)), mid, g);
  return OUT(uc_sel(b, uc_cmp(b, "LE", x, tt_full_like(b, x, -3)), tt_full_like(b, x, 0), r));
}

/* silu_backward(grad, self): grad * s * (1 + x (1 - s)), s = 1 / (1 + exp(-x)) */
static tt_error *lower_silu_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  tt_val s = uc_sigmoid(b, x), one = tt_full_like(b, x, 1);
  return OUT(tt_mul(b, tt_mul(b, g, s), tt_add(b, one, tt_mul(b, x, tt_sub(b, one, s)))));
}

/* mish_backward(grad, self): t = tanh(softplus(x)); grad * (t + x s (1 - t^2)) */
static tt_error *lower_mish_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  tt_val s = uc_sigmoid(b, x), one = tt_full_like(b, x, 1);
  tt_val t = uc_un(b, TT_OP_TANH, uc_un(b, TT_OP_LOG1P, uc_un(b, TT_OP_EXPONENTIAL, x)));
  return OUT(tt_mul(b, g, tt_add(b, t, tt_mul(b, tt_mul(b, x, s), tt_sub(b, one, tt_mul(b, t, t))))));
}

/* log_sigmoid_forward(self) -> (min(x, 0) - log1p(exp(-|x|)), buffer). The
 * CPU kernel returns an empty buffer (and its backward ignores it). */
static tt_error *lower_log_sigmoid_forward(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val zero = tt_full_like(b, x, 0);
  tt_val mn = uc_sel(b, uc_cmp(b, "LT", zero, x), zero, x); /* std::min(x, 0): NaN propagates */
  tt_val z = uc_un(b, TT_OP_EXPONENTIAL, uc_un(b, TT_OP_NEGATE, uc_un(b, TT_OP_ABS, x)));
  tt_lc_output(c, tt_b_convert(b, tt_sub(b, mn, uc_un(b, TT_OP_LOG1P, z)), dt));
  int64_t none[1] = {0};
  tt_lc_output(c, tt_b_full(b, tt_shape_make(dt, 1, none), 0));
  return NULL;
}

/* log_sigmoid_backward(grad, self, buffer):
 * grad * ((x < 0) - (x < 0 ? 1 : -1) * z / (1 + z)), z = exp(-|x|) */
static tt_error *lower_log_sigmoid_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  tt_val neg = uc_cmp(b, "LT", x, tt_full_like(b, x, 0));
  tt_val max_deriv = uc_sel(b, neg, tt_full_like(b, x, 1), tt_full_like(b, x, 0));
  tt_val sign = uc_sel(b, neg, tt_full_like(b, x, 1), tt_full_like(b, x, -1));
  tt_val z = uc_un(b, TT_OP_EXPONENTIAL, uc_un(b, TT_OP_NEGATE, uc_un(b, TT_OP_ABS, x)));
  tt_val q = tt_div(b, z, tt_add(b, tt_full_like(b, x, 1), z));
  return OUT(tt_mul(b, g, tt_sub(b, max_deriv, tt_mul(b, sign, q))));
}

/* -lambd <= x <= lambd (NaN: false) */
static tt_val in_band(tt_builder *b, tt_val x, tt_val lambd) {
  return tt_b_bin(b, TT_OP_AND, uc_cmp(b, "GE", x, uc_un(b, TT_OP_NEGATE, lambd)), uc_cmp(b, "LE", x, lambd));
}

/* softshrink(self, lambd): x > l ? x - l : x < -l ? x + l : x * 0; NaN stays.
 * lambd must be >= 0 (checked on its value, which joins the cache key). */
static tt_error *lower_softshrink(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  if (!tt_lc_is_none(c, 1)) {
    double l = tt_lc_scalar_value(c, 1), hi = uc_finite_max(dt);
    if (!(l >= 0 && l <= hi))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "lambda must be in range [0, %g] for input dtype %s, but found %g", hi,
                        dt == TT_F32 ? "Float" : dt == TT_F16 ? "Half"
                        : dt == TT_BF16 ? "BFloat16" : "Double", l);
  }
  tt_val l = scalar_or(c, 1, x, 0.5);
  tt_val r = uc_sel(b, uc_cmp(b, "LT", x, uc_un(b, TT_OP_NEGATE, l)), tt_add(b, x, l), tt_mul(b, x, tt_full_like(b, x, 0)));
  r = uc_sel(b, uc_cmp(b, "GT", x, l), tt_sub(b, x, l), r);
  return OUT(uc_sel(b, uc_cmp(b, "NE", x, x), x, r));
}

/* hardshrink(self, lambd): -l <= x <= l ? 0 : x */
static tt_error *lower_hardshrink(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val l = scalar_or(c, 1, x, 0.5);
  return OUT(uc_sel(b, in_band(b, x, l), tt_full_like(b, x, 0), x));
}

/* softshrink_backward / hardshrink_backward(grad, self, lambd): -l <= x <= l ? 0 : grad */
static tt_error *lower_shrink_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  return OUT(uc_sel(b, in_band(b, x, uc_S(c, 2, x)), tt_full_like(b, x, 0), g));
}

/* threshold(self, threshold, value): x <= threshold ? value : x (all but bool) */
static tt_error *lower_threshold(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  if (dt == TT_BOOL) return tt_lc_decline(c, "threshold of bool");
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, tt_opmath(dt));
  tt_val r = uc_sel(b, uc_cmp(b, "LE", x, uc_S(c, 1, x)), uc_S(c, 2, x), x);
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

/* celu(self, alpha) = elu(self, alpha, 1, 1 / alpha), 1/alpha in double */
static tt_error *lower_celu(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val alpha = scalar_or(c, 1, x, 1);
  tt_val inv;
  if (tt_lc_nargs(c) > 1 && !tt_lc_is_none(c, 1)) {
    tt_val a64 = tt_lc_scalar(c, 1, TT_F64);
    tt_shape s = tt_b_shape(b, x);
    inv = tt_b_convert(b, tt_div(b, tt_b_constant(b, TT_F64, 1), a64), s.dtype);
    inv = tt_b_broadcast_to(b, inv, s.ndim, s.dims);
  } else {
    inv = tt_full_like(b, x, 1);
  }
  tt_val neg = tt_mul(b, uc_un(b, TT_OP_EXPM1, tt_mul(b, x, inv)), alpha);
  return OUT(uc_sel(b, uc_cmp(b, "LE", x, tt_full_like(b, x, 0)), neg, x));
}

/* rrelu_with_noise(self, noise, lower, upper, training, generator): in eval
 * mode leaky_relu with slope (lower + upper) / 2 (in double). */
static tt_val rrelu_slope(tt_lower_ctx *c, int lower_arg, tt_val like) {
  tt_builder *b = tt_lc_builder(c);
  tt_shape s = tt_b_shape(b, like);
  tt_val lo = tt_lc_scalar(c, lower_arg, TT_F64), hi = tt_lc_scalar(c, lower_arg + 1, TT_F64);
  tt_val sl = tt_mul(b, tt_add(b, lo, hi), tt_b_constant(b, TT_F64, 0.5));
  return tt_b_broadcast_to(b, tt_b_convert(b, sl, s.dtype), s.ndim, s.dims);
}

/* Training mode of the functional form: each element <= 0 gets a slope drawn
 * uniformly from [lower, upper) (24 random bits), written into noise (1
 * elsewhere), and the result is self * noise, as CPU samples it. */
static tt_error *rrelu_training(tt_lower_ctx *c) {
  if (strcmp(tt_lc_op_name(c), "rrelu_with_noise") != 0)
    return tt_lc_decline(c, "in-place or out= rrelu in training mode");
  if (tt_lc_kind(c, 5) == TT_ARG_GENERATOR) return tt_lc_decline(c, "explicit generator");
  const tt_tensor_ref *nr = tt_lc_ref(c, 1), *xr = tt_lc_ref(c, 0);
  if (!nr || !nr->storage || nr->dtype != xr->dtype || nr->ndim != xr->ndim ||
      memcmp(nr->sizes, xr->sizes, sizeof(int64_t) * (size_t)xr->ndim))
    return tt_lc_decline(c, "noise shape or dtype");
  FLOAT_SELF(0);
  tt_shape xs = tt_b_shape(b, x);
  int64_t n = tt_shape_numel(&xs);
  if (n == 0) {
    tt_lc_write(c, 1, -1, tt_lc_tensor(c, 1));
    tt_lc_output(c, tt_b_convert(b, x, dt));
    return NULL;
  }
  tt_val state = tt_lc_rng_state(c);
  int64_t two = 2;
  tt_shape outs[2] = {tt_shape_make(TT_U64, 1, &two), tt_shape_make(TT_U32, 1, &n)};
  tt_val res[2];
  if (!tt_b_emit(b, TT_OP_RNG_BIT_GENERATOR, &state, 1,
                     "rng_algorithm = #stablehlo<rng_algorithm PHILOX>", NULL, outs, 2, res))
    return tt_b_take_error(b);
  tt_shape ws = tt_shape_make(TT_U32, 1, &n);
  tt_val bits = tt_b_emit1(b, TT_OP_SHIFT_RIGHT_LOGICAL,
                        (tt_val[]){res[1], tt_b_broadcast_to(b, tt_b_constant_int(b, TT_U32, 8), 1, &n)}, 2,
                        NULL, ws);
  tt_val u = tt_b_reshape(b, tt_mul(b, tt_b_convert(b, bits, xs.dtype), tt_b_full(b, tt_shape_make(xs.dtype, 1, &n), ldexp(1.0, -24))),
                          xs.ndim, xs.dims);
  tt_val lo = tt_b_broadcast_to(b, tt_b_convert(b, tt_lc_scalar(c, 2, TT_F64), xs.dtype), xs.ndim, xs.dims);
  tt_val hi = tt_b_broadcast_to(b, tt_b_convert(b, tt_lc_scalar(c, 3, TT_F64), xs.dtype), xs.ndim, xs.dims);
  tt_val slope = tt_add(b, lo, tt_mul(b, u, tt_sub(b, hi, lo)));
  tt_val noise = uc_sel(b, uc_cmp(b, "LE", x, tt_full_like(b, x, 0)), slope, tt_full_like(b, x, 1));
  tt_lc_write(c, 1, -1, tt_b_convert(b, noise, dt));
  tt_lc_output(c, tt_b_convert(b, tt_mul(b, x, noise), dt));
  return NULL;
}

static tt_error *lower_rrelu_with_noise(tt_lower_ctx *c) {
  if (tt_lc_bool(c, 4, false)) return rrelu_training(c);
  FLOAT_SELF(0);
  tt_val r = tt_b_convert(b, uc_sel(b, uc_cmp(b, "GT", x, tt_full_like(b, x, 0)), x, tt_mul(b, x, rrelu_slope(c, 2, x))), dt);
  /* destinations in argument order: in place (self, noise), out= (noise, out);
   * noise is left untouched in eval mode */
  const char *name = tt_lc_op_name(c);
  bool inplace = !strcmp(name, "rrelu_with_noise_"), out = !strcmp(name, "rrelu_with_noise.out");
  if (out) tt_lc_output_unchanged(c);
  tt_lc_output(c, r);
  if (inplace) tt_lc_output_unchanged(c);
  return NULL;
}

/* rrelu_with_noise_backward(grad, self, noise, lower, upper, training, self_is_result).
 * In eval mode CPU calls leaky_relu_backward with slope (lower + upper) / 2:
 * after rrelu_ (self is the result) a negative slope is refused likewise. */
static tt_error *lower_rrelu_with_noise_backward(tt_lower_ctx *c) {
  if (!tt_lc_bool(c, 5, false) && tt_lc_bool(c, 6, false) &&
      (tt_lc_scalar_value(c, 3) + tt_lc_scalar_value(c, 4)) / 2 < 0.0)
    return inplace_negative_slope(c);
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  if (tt_lc_bool(c, 5, false)) { /* training: CPU multiplies by the sampled noise */
    double lo = tt_lc_scalar_value(c, 3), hi = tt_lc_scalar_value(c, 4);
    if (!(hi - lo > 1e-6)) return tt_lc_decline(c, "rrelu backward in training mode with lower == upper");
    const tt_tensor_ref *nr = tt_lc_ref(c, 2);
    if (!nr || !nr->storage || nr->ndim != tt_b_ndim(b, x)) return tt_lc_decline(c, "noise");
    return OUT(tt_mul(b, g, uc_read_as(c, 2, tt_opmath(dt))));
  }
  return OUT(uc_sel(b, uc_cmp(b, "GT", x, tt_full_like(b, x, 0)), g, tt_mul(b, g, rrelu_slope(c, 3, x))));
}

/* glu(self, dim): a * sigmoid(b) over the two halves of dim. */
static tt_error *glu_split(tt_lower_ctx *c, int self_arg, int dim_arg, int64_t *dim) {
  const tt_tensor_ref *r = tt_lc_ref(c, self_arg);
  if (r->ndim == 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "glu does not support scalars because halving size must be even");
  *dim = tt_wrap_dim(c, tt_lc_int(c, dim_arg, -1), r->ndim);
  if (*dim < 0) return tt_b_take_error(tt_lc_builder(c));
  if (r->sizes[*dim] % 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Halving dimension must be even, but dimension %lld is size %lld",
                      (long long)*dim, (long long)r->sizes[*dim]);
  return NULL;
}

static void halves(tt_builder *b, tt_val x, int64_t dim, tt_val *lo, tt_val *hi) {
  tt_shape s = tt_b_shape(b, x);
  int64_t start[TT_MAX_DIMS] = {0}, limit[TT_MAX_DIMS], stride[TT_MAX_DIMS];
  for (int i = 0; i < s.ndim; i++) limit[i] = s.dims[i], stride[i] = 1;
  limit[dim] = s.dims[dim] / 2;
  *lo = tt_b_slice(b, x, start, limit, stride);
  start[dim] = s.dims[dim] / 2;
  limit[dim] = s.dims[dim];
  *hi = tt_b_slice(b, x, start, limit, stride);
}

static tt_error *lower_glu(tt_lower_ctx *c) {
  int64_t dim;
  TT_TRY(uc_require_float(c, 0));
  TT_TRY(glu_split(c, 0, 1, &dim));
  FLOAT_SELF(0);
  tt_val lo, hi;
  halves(b, x, dim, &lo, &hi);
  return OUT(tt_mul(b, lo, uc_sigmoid(b, hi)));
}

/* glu_backward(grad, self, dim): [grad * s, (1 - s) * s * grad * a] */
static tt_error *lower_glu_backward(tt_lower_ctx *c) {
  int64_t dim;
  TT_TRY(uc_require_float(c, 0));
  TT_TRY(glu_split(c, 1, 2, &dim));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  tt_val lo, hi;
  halves(b, x, dim, &lo, &hi);
  tt_val s = uc_sigmoid(b, hi);
  tt_val parts[2] = {tt_mul(b, s, g), tt_mul(b, tt_mul(b, tt_mul(b, tt_sub(b, tt_full_like(b, s, 1), s), s), g), lo)};
  return OUT(tt_b_concat(b, parts, 2, (int)dim));
}

/* _prelu_kernel(self, weight): x > 0 ? x : w * x (weight already broadcastable) */
static tt_error *prelu_setup(tt_lower_ctx *c, const int *args, int n, tt_dtype *dt, int *nd,
                             int64_t *dims) {
  *dt = tt_result_type(c, args, n);
  if (!tt_dtype_is_floating(*dt)) return tt_lc_decline(c, "prelu of %s", tt_dtype_name(*dt));
  return tt_broadcast_args(c, args, n, nd, dims);
}

static tt_error *lower_prelu_kernel(tt_lower_ctx *c) {
  int args[2] = {0, 1}, nd;
  int64_t dims[TT_MAX_DIMS];
  tt_dtype dt;
  TT_TRY(prelu_setup(c, args, 2, &dt, &nd, dims));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype cm = tt_opmath(dt);
  tt_val x = tt_b_convert(b, tt_operand(c, 0, dt, nd, dims), cm);
  tt_val w = tt_b_convert(b, tt_operand(c, 1, dt, nd, dims), cm);
  return OUT(uc_sel(b, uc_cmp(b, "GT", x, tt_full_like(b, x, 0)), x, tt_mul(b, w, x)));
}

/* _prelu_kernel_backward(grad, self, weight) ->
 *   (x > 0 ? g : w g, x > 0 ? 0 : x g), both of the broadcast shape */
static tt_error *lower_prelu_kernel_backward(tt_lower_ctx *c) {
  int args[3] = {0, 1, 2}, nd;
  int64_t dims[TT_MAX_DIMS];
  tt_dtype dt;
  TT_TRY(prelu_setup(c, args, 3, &dt, &nd, dims));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype cm = tt_opmath(dt);
  tt_val g = tt_b_convert(b, tt_operand(c, 0, dt, nd, dims), cm);
  tt_val x = tt_b_convert(b, tt_operand(c, 1, dt, nd, dims), cm);
  tt_val w = tt_b_convert(b, tt_operand(c, 2, dt, nd, dims), cm);
  tt_val pos = uc_cmp(b, "GT", x, tt_full_like(b, x, 0));
  tt_lc_output(c, tt_b_convert(b, uc_sel(b, pos, g, tt_mul(b, w, g)), dt));
  tt_lc_output(c, tt_b_convert(b, uc_sel(b, pos, tt_full_like(b, x, 0), tt_mul(b, x, g)), dt));
  return NULL;
}

/* ------------------------------------------------------------ table */

TT_LOWERINGS(activations) = {
    FU(relu),
    FU(gelu),
    {lower_gelu_backward, {"gelu_backward", "gelu_backward.grad_input"}},
    FU(silu), FU(mish),
    {lower_sigmoid_backward, {"sigmoid_backward", "sigmoid_backward.grad_input"}},
    {lower_tanh_backward, {"tanh_backward", "tanh_backward.grad_input"}},
    {lower_threshold_backward, {"threshold_backward", "threshold_backward.grad_input"}},
    FU(hardtanh),
    {lower_hardtanh_backward, {"hardtanh_backward", "hardtanh_backward.grad_input"}},
    FU(leaky_relu),
    {lower_leaky_relu_backward, {"leaky_relu_backward", "leaky_relu_backward.grad_input"}},
    FU(elu),
    {lower_elu_backward, {"elu_backward", "elu_backward.grad_input"}},
    {lower_softplus, {"softplus", "softplus.out"}},
    {lower_softplus_backward, {"softplus_backward", "softplus_backward.grad_input"}},
    FU(hardsigmoid),
    {lower_hardsigmoid_backward, {"hardsigmoid_backward", "hardsigmoid_backward.grad_input"}},
    FU(hardswish),
    {lower_hardswish_backward, {"hardswish_backward", "hardswish_backward.out"}},
    {lower_silu_backward, {"silu_backward", "silu_backward.grad_input"}},
    {lower_mish_backward, {"mish_backward"}},
    {lower_log_sigmoid_forward, {"log_sigmoid_forward", "log_sigmoid_forward.output"}},
    {lower_log_sigmoid_backward, {"log_sigmoid_backward", "log_sigmoid_backward.grad_input"}},
    {lower_softshrink, {"softshrink", "softshrink.out"}},
    {lower_hardshrink, {"hardshrink", "hardshrink.out"}},
    {lower_shrink_backward, {"softshrink_backward", "softshrink_backward.grad_input",
                             "hardshrink_backward", "hardshrink_backward.grad_input"}},
    FU(threshold), FU(celu),
    {lower_rrelu_with_noise, {"rrelu_with_noise", "rrelu_with_noise_", "rrelu_with_noise.out"}},
    {lower_rrelu_with_noise_backward, {"rrelu_with_noise_backward",
                                       "rrelu_with_noise_backward.out"}},
    {lower_glu, {"glu", "glu.out"}},
    {lower_glu_backward, {"glu_backward", "glu_backward.grad_input"}},
    {lower_prelu_kernel, {"_prelu_kernel"}},
    {lower_prelu_kernel_backward, {"_prelu_kernel_backward"}},
    {NULL, {NULL}},
};
