/* Unary elementwise math (see lowering.h): exp/log/trig/hyperbolic and the
 * other floating functions, sign predicates, dtype-keeping ops (neg, abs,
 * rounding) and nan/inf predicates. Activations live in activations.c and
 * the special functions (gamma family, Bessel, ndtri, ...) in special.c.
 *
 * Floating functions (exp, sin, ...) promote integer and bool inputs to the
 * default float dtype like PyTorch. float16/bfloat16 are computed in float32
 * and rounded once at the end, as PyTorch's CPU kernels do (opmath).
 * Functions StableHLO lacks (erf, asin, sinh, ...) use the CHLO ops, which
 * the XLA plugin legalizes. */

#include <math.h>
#include <string.h>

#include "ops/complex_math.h"
#include "ops/unary_common.h"

/* ------------------------------------------------------------ math functions */

static tt_val f_exp(tt_builder *b, tt_val x) { return uc_un(b, TT_OP_EXPONENTIAL, x); }
static tt_val f_exp2(tt_builder *b, tt_val x) { return tt_b_bin(b, TT_OP_POWER, tt_full_like(b, x, 2), x); }
static tt_val f_expm1(tt_builder *b, tt_val x) { return uc_un(b, TT_OP_EXPM1, x); }
static tt_val f_log(tt_builder *b, tt_val x) { return uc_un(b, TT_OP_LOG, x); }
/* x * k for a real k; a complex x is scaled per component (a complex
 * product would turn log(0) = -inf + 0i into NaNs) */
static tt_val scale_by(tt_builder *b, tt_val x, double k) {
  if (!tt_dtype_is_complex(tt_b_dtype(b, x))) return tt_mul(b, x, tt_full_like(b, x, k));
  tt_val re = tt_b_real(b, x), im = tt_b_imag(b, x);
  return tt_b_complex(b, tt_mul(b, re, tt_full_like(b, re, k)), tt_mul(b, im, tt_full_like(b, im, k)));
}
static tt_val f_log2(tt_builder *b, tt_val x) { return scale_by(b, uc_un(b, TT_OP_LOG, x), 1 / M_LN2); }
static tt_val f_log10(tt_builder *b, tt_val x) { return scale_by(b, uc_un(b, TT_OP_LOG, x), 1 / M_LN10); }
static tt_val f_log1p(tt_builder *b, tt_val x) { return uc_un(b, TT_OP_LOG1P, x); }
static tt_val f_sqrt(tt_builder *b, tt_val x) { return uc_un(b, TT_OP_SQRT, x); }
static tt_val f_rsqrt(tt_builder *b, tt_val x) { return uc_un(b, TT_OP_RSQRT, x); }
static tt_val f_sin(tt_builder *b, tt_val x) { return uc_un(b, TT_OP_SINE, x); }
static tt_val f_cos(tt_builder *b, tt_val x) { return uc_un(b, TT_OP_COSINE, x); }
static tt_val f_tan(tt_builder *b, tt_val x) { return uc_un(b, TT_OP_TAN, x); }
static tt_val f_asin(tt_builder *b, tt_val x) { return uc_chlo(b, TT_OP_CHLO_ASIN, x); }
static tt_val f_acos(tt_builder *b, tt_val x) { return uc_chlo(b, TT_OP_CHLO_ACOS, x); }
static tt_val f_atan(tt_builder *b, tt_val x) { return uc_chlo(b, TT_OP_CHLO_ATAN, x); }
/* sinh/cosh: chlo.sinh/cosh drift to ~13 ulp for |x| > 40 (measured), past
 * float32 tolerance. With t = exp(|x|/2): e^|x|/2 = (t/2)*t (no early
 * overflow) and e^-|x|/2 = (0.5/t)/t, about 3 ulp; small |x| uses expm1
 * (u + u/(u+1))/2 to avoid cancellation. */
static tt_val half_exp_pair(tt_builder *b, tt_val ax, tt_val *neg) {
  tt_val t = uc_un(b, TT_OP_EXPONENTIAL, tt_mul(b, ax, tt_full_like(b, ax, 0.5)));
  *neg = tt_div(b, tt_div(b, tt_full_like(b, ax, 0.5), t), t);
  return tt_mul(b, tt_mul(b, tt_full_like(b, ax, 0.5), t), t);
}
static tt_val f_sinh(tt_builder *b, tt_val x) {
  tt_val ax = uc_un(b, TT_OP_ABS, x), neg;
  tt_val pos = half_exp_pair(b, ax, &neg);
  tt_val big = tt_sub(b, pos, neg);
  big = uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)), uc_un(b, TT_OP_NEGATE, big), big);
  tt_val u = uc_un(b, TT_OP_EXPM1, x); /* signed: keeps -0.0 */
  tt_val small = tt_mul(b, tt_full_like(b, x, 0.5), tt_add(b, u, tt_div(b, u, tt_add(b, u, tt_full_like(b, x, 1)))));
  return uc_sel(b, uc_cmp(b, "LT", ax, tt_full_like(b, x, 1)), small, big);
}
static tt_val f_cosh(tt_builder *b, tt_val x) {
  tt_val ax = uc_un(b, TT_OP_ABS, x), neg;
  tt_val pos = half_exp_pair(b, ax, &neg);
  return tt_add(b, pos, neg);
}
static tt_val f_tanh(tt_builder *b, tt_val x) { return uc_un(b, TT_OP_TANH, x); }
static tt_val f_asinh(tt_builder *b, tt_val x) { return uc_chlo(b, TT_OP_CHLO_ASINH, x); }
static tt_val f_acosh(tt_builder *b, tt_val x) { return uc_chlo(b, TT_OP_CHLO_ACOSH, x); }
static tt_val f_atanh(tt_builder *b, tt_val x) { return uc_chlo(b, TT_OP_CHLO_ATANH, x); }
static tt_val f_erf(tt_builder *b, tt_val x) { return uc_chlo(b, TT_OP_CHLO_ERF, x); }
static tt_val f_erfc(tt_builder *b, tt_val x) { return uc_chlo(b, TT_OP_CHLO_ERFC, x); }
/* erfinv: PyTorch's calc_erfinv (a rational first guess, then two Newton
 * steps on erf), step for step: its gradient exp(erfinv(x)^2) magnifies any
 * last-bit difference of another algorithm beyond float32 tolerance. */
static tt_val poly_k(tt_builder *b, tt_val z, const double *k, int n) { /* k[n-1] z^(n-1) + ... */
  tt_val r = tt_full_like(b, z, k[n - 1]);
  for (int i = n - 2; i >= 0; i--) r = tt_add(b, tt_mul(b, r, z), tt_full_like(b, z, k[i]));
  return r;
}
static tt_val f_erfinv(tt_builder *b, tt_val y) {
  static const double A[4] = {0.886226899, -1.645349621, 0.914624893, -0.140543331};
  static const double B[5] = {1.0, -2.118377725, 1.442710462, -0.329097515, 0.012229801};
  static const double C[4] = {-1.970840454, -1.624906493, 3.429567803, 1.641345311};
  static const double D[3] = {1.0, 3.543889200, 1.637067800};
  tt_val ay = uc_un(b, TT_OP_ABS, y);
  tt_val z = tt_mul(b, y, y);
  tt_val central = tt_div(b, tt_mul(b, y, poly_k(b, z, A, 4)), poly_k(b, z, B, 5));
  tt_val zt = uc_un(b, TT_OP_SQRT, uc_un(b, TT_OP_NEGATE, uc_un(b, TT_OP_LOG, tt_div(b, tt_sub(b, tt_full_like(b, y, 1), ay), tt_full_like(b, y, 2)))));
  tt_val num = poly_k(b, zt, C, 4);
  tt_val signed_num = uc_sel(b, uc_sign_bit(b, y), uc_un(b, TT_OP_NEGATE, uc_un(b, TT_OP_ABS, num)), uc_un(b, TT_OP_ABS, num));
  tt_val tail = tt_div(b, signed_num, poly_k(b, zt, D, 3));
  tt_val x = uc_sel(b, uc_cmp(b, "LE", ay, tt_full_like(b, y, 0.7)), central, tail);
  tt_val k = tt_full_like(b, y, 2.0 / sqrt(M_PI));
  for (int i = 0; i < 2; i++) {
    /* erf in float64 rounded back: as close to libm's erff as XLA gets */
    tt_dtype dt = tt_b_dtype(b, x);
    tt_val erf_x = tt_b_convert(b, uc_chlo(b, TT_OP_CHLO_ERF, tt_b_convert(b, x, TT_F64)), dt);
    tt_val e = tt_sub(b, erf_x, y);
    x = tt_sub(b, x, tt_div(b, e, tt_mul(b, k, uc_un(b, TT_OP_EXPONENTIAL, uc_un(b, TT_OP_NEGATE, tt_mul(b, x, x))))));
  }
  x = uc_sel(b, uc_cmp(b, "EQ", ay, tt_full_like(b, y, 1)), tt_mul(b, uc_copysign_one(b, y), tt_full_like(b, y, INFINITY)), x);
  return uc_sel(b, uc_cmp(b, "GT", ay, tt_full_like(b, y, 1)), tt_full_like(b, y, NAN), x);
}
static tt_val f_reciprocal(tt_builder *b, tt_val x) { return tt_div(b, tt_full_like(b, x, 1), x); }

FLOAT_UNARY(exp)
FLOAT_UNARY(exp2)
FLOAT_UNARY(expm1)
FLOAT_UNARY(log)
FLOAT_UNARY(log2)
FLOAT_UNARY(log10)
/* Complex log1p goes to CPU: PyTorch's formula relies on (x + 1) - 1 being
 * rounded, which XLA simplifies to x, so near -1 and at infinities the
 * result was wrong ((-1+1e-30j) gave -inf for -69.08); a wrong lowering is
 * worse than a fallback. Real inputs stay native. */
static tt_error *lower_log1p(tt_lower_ctx *c) {
  if (tt_dtype_is_complex(uc_arg_dtype(c, 0)))
    return tt_lc_decline(c, "log1p of a complex tensor runs on CPU (XLA folds the (x + 1) - 1 "
                            "that its extremal values need)");
  return uc_float_unary(c, f_log1p);
}
FLOAT_UNARY(sqrt)
FLOAT_UNARY(rsqrt)
FLOAT_UNARY(sin)
FLOAT_UNARY(cos)
FLOAT_UNARY(tan)
FLOAT_UNARY(asin)
FLOAT_UNARY(acos)
FLOAT_UNARY(atan)
FLOAT_UNARY(sinh)
FLOAT_UNARY(cosh)
FLOAT_UNARY(tanh)
FLOAT_UNARY(asinh)
FLOAT_UNARY(acosh)
FLOAT_UNARY(atanh)
static tt_error *lower_sigmoid(tt_lower_ctx *c) { return uc_float_unary(c, uc_sigmoid); }
FLOAT_UNARY(erf)
FLOAT_UNARY(erfc)
FLOAT_UNARY(erfinv)
FLOAT_UNARY(reciprocal)

/* ------------------------------------------------------------ sign predicates */

static tt_val bool_false_like(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  s.dtype = TT_BOOL;
  return tt_b_full(b, s, 0);
}

static tt_error *lower_signbit(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, dt), r;
  if (tt_dtype_is_floating(dt)) r = uc_sign_bit(b, x);
  else if (dt == TT_BOOL || !tt_dtype_is_signed(dt)) r = bool_false_like(b, x);
  else r = uc_cmp(b, "LT", x, tt_full_like(b, x, 0));
  tt_lc_output(c, r);
  return NULL;
}

static tt_error *is_signed_inf(tt_lower_ctx *c, double inf) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  /* isposinf.out / isneginf.out: ATen refuses an out= that is not bool */
  const tt_tensor_ref *out = tt_lc_nargs(c) > 1 ? tt_lc_ref(c, 1) : NULL;
  if (out && out->dtype != TT_BOOL)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s does not support non-boolean outputs.",
                      inf > 0 ? "isposinf" : "isneginf");
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, dt);
  tt_lc_output(c, tt_dtype_is_floating(dt) ? uc_cmp(b, "EQ", x, tt_full_like(b, x, inf)) : bool_false_like(b, x));
  return NULL;
}
static tt_error *lower_isposinf(tt_lower_ctx *c) { return is_signed_inf(c, INFINITY); }
static tt_error *lower_isneginf(tt_lower_ctx *c) { return is_signed_inf(c, -INFINITY); }

/* ------------------------------------------------------------ dtype-keeping */

static tt_error *lower_neg(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  if (dt == TT_BOOL)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                      "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  tt_builder *b = tt_lc_builder(c);
  tt_lc_output(c, uc_un(b, TT_OP_NEGATE, uc_read_as(c, 0, dt)));
  return NULL;
}

static tt_error *lower_abs(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  if (dt == TT_BOOL) return tt_lc_decline(c, "abs is not implemented for bool");
  if (tt_dtype_is_complex(dt) && strcmp(tt_lc_op_name(c), "abs_") == 0)
    return tt_lc_fail(c, TT_ERR_RUNTIME, "In-place abs is not supported for complex tensors.");
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, dt);
  /* complex: the real modulus (abs_ of a complex tensor is refused by torch) */
  tt_lc_output(c, dt == TT_U8 ? x : tt_dtype_is_complex(dt) ? tt_complex_abs(b, x) : tt_b_abs(b, x));
  return NULL;
}

/* PyTorch: (0 < x) - (x < 0); NaN gives 0. bool and uint8 too. */
static tt_error *sign_common(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, dt);
  if (dt == TT_BOOL) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val zero = tt_full_like(b, x, 0);
  tt_val r = uc_sel(b, uc_cmp(b, "GT", x, zero), tt_full_like(b, x, 1), zero);
  if (dt != TT_U8) r = uc_sel(b, uc_cmp(b, "LT", x, zero), tt_full_like(b, x, -1), r);
  tt_lc_output(c, r);
  return NULL;
}
static tt_error *lower_sign(tt_lower_ctx *c) { return sign_common(c); }
/* sgn: sign for real tensors; x / |x| (0 at 0) for complex ones */
static tt_error *lower_sgn(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  if (!tt_dtype_is_complex(dt)) return sign_common(c);
  tt_builder *b = tt_lc_builder(c);
  tt_lc_output(c, tt_complex_sgn(b, uc_read_as(c, 0, dt)));
  return NULL;
}

/* floor/ceil/round (op) and trunc (trunc set, op unused): identity on
 * integers; bool unsupported (CPU raises). */
static tt_error *rounding(tt_lower_ctx *c, bool trunc, tt_op op) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  if (dt == TT_BOOL) return tt_lc_decline(c, "%s is not implemented for bool", tt_lc_op_name(c));
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, dt);
  if (!tt_dtype_is_floating(dt)) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val r;
  if (trunc) /* round toward zero */
    r = uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)), uc_un(b, TT_OP_CEIL, x), uc_un(b, TT_OP_FLOOR, x));
  else
    r = uc_un(b, op, x);
  tt_lc_output(c, r);
  return NULL;
}
static tt_error *lower_floor(tt_lower_ctx *c) { return rounding(c, false, TT_OP_FLOOR); }
static tt_error *lower_ceil(tt_lower_ctx *c) { return rounding(c, false, TT_OP_CEIL); }
static tt_error *lower_trunc(tt_lower_ctx *c) { return rounding(c, true, TT_OP_COUNT); }
/* round(self, *, decimals): CPU's kernel scales by ten_pow = 10^|decimals|
 * (in the tensor's dtype), rounds half to even, and scales back:
 * decimals > 0: nearbyint(x * ten_pow) / ten_pow; else nearbyint(x / ten_pow) * ten_pow. */
static tt_error *lower_round(tt_lower_ctx *c) {
  int64_t dec = tt_lc_nargs(c) > 1 && tt_lc_kind(c, 1) == TT_ARG_INT ? tt_lc_int(c, 1, 0) : 0;
  if (dec == 0) return rounding(c, false, TT_OP_ROUND_NEAREST_EVEN);
  tt_dtype dt = uc_arg_dtype(c, 0);
  if (!tt_dtype_is_floating(dt)) return tt_lc_decline(c, "round with decimals on %s", tt_dtype_name(dt));
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, tt_opmath(dt));
  double p = pow(10.0, (double)(dec > 0 ? dec : -dec));
  if (tt_opmath(dt) == TT_F32) p = (double)(float)p;
  tt_val k = tt_full_like(b, x, p);
  tt_val r = dec > 0 ? tt_div(b, uc_un(b, TT_OP_ROUND_NEAREST_EVEN, tt_mul(b, x, k)), k)
                     : tt_mul(b, uc_un(b, TT_OP_ROUND_NEAREST_EVEN, tt_div(b, x, k)), k);
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

/* frac: x - trunc(x); floating only. */
static tt_error *lower_frac(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  tt_dtype dt = uc_arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, tt_opmath(dt));
  tt_val t = uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)), uc_un(b, TT_OP_CEIL, x), uc_un(b, TT_OP_FLOOR, x));
  tt_lc_output(c, tt_b_convert(b, tt_sub(b, x, t), dt));
  return NULL;
}

/* ------------------------------------------------------------ predicates */

static tt_error *lower_isnan(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, dt);
  tt_shape s = tt_b_shape(b, x);
  s.dtype = TT_BOOL;
  tt_lc_output(c, tt_dtype_is_complex(dt)    ? tt_complex_isnan(b, x)
                  : tt_dtype_is_floating(dt) ? uc_cmp(b, "NE", x, x)
                                             : tt_b_full(b, s, 0));
  return NULL;
}

static tt_error *lower_isinf(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, dt);
  tt_shape s = tt_b_shape(b, x);
  s.dtype = TT_BOOL;
  tt_lc_output(c, tt_dtype_is_complex(dt)    ? tt_complex_isinf(b, x)
                  : tt_dtype_is_floating(dt) ? uc_cmp(b, "EQ", uc_un(b, TT_OP_ABS, x), tt_full_like(b, x, INFINITY))
                                             : tt_b_full(b, s, 0));
  return NULL;
}

/* nan_to_num(self, nan=None, posinf=None, neginf=None): static replacement
 * values; infinities default to the dtype's largest finite values. */

static tt_error *lower_nan_to_num(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, dt);
  if (!tt_dtype_is_floating(dt)) {
    tt_lc_output(c, x);
    return NULL;
  }
  double nan_v = tt_lc_is_none(c, 1) ? 0.0 : tt_lc_double(c, 1, 0.0);
  double pos_v = tt_lc_is_none(c, 2) ? uc_finite_max(dt) : tt_lc_double(c, 2, 0.0);
  double neg_v = tt_lc_is_none(c, 3) ? -uc_finite_max(dt) : tt_lc_double(c, 3, 0.0);
  tt_val r = uc_sel(b, uc_cmp(b, "NE", x, x), tt_full_like(b, x, nan_v), x);
  r = uc_sel(b, uc_cmp(b, "EQ", x, tt_full_like(b, x, INFINITY)), tt_full_like(b, x, pos_v), r);
  r = uc_sel(b, uc_cmp(b, "EQ", x, tt_full_like(b, x, -INFINITY)), tt_full_like(b, x, neg_v), r);
  tt_lc_output(c, r);
  return NULL;
}

static tt_error *lower_logical_not(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_lc_output(c, uc_un(b, TT_OP_NOT, uc_read_as(c, 0, TT_BOOL)));
  return NULL;
}

static tt_error *lower_bitwise_not(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  if (tt_dtype_is_floating(dt)) return tt_lc_decline(c, "bitwise_not is not implemented for floats");
  tt_builder *b = tt_lc_builder(c);
  tt_lc_output(c, uc_un(b, TT_OP_NOT, uc_read_as(c, 0, dt)));
  return NULL;
}

/* ------------------------------------------------------------ table */

TT_LOWERINGS(unary) = {
    FU(exp), FU(exp2), FU(expm1), FU(log), FU(log2), FU(log10), FU(log1p), FU(sqrt), FU(rsqrt),
    FU(sin), FU(cos), FU(tan), FU(asin), FU(acos), FU(atan), FU(sinh), FU(cosh), FU(tanh),
    FU(asinh), FU(acosh), FU(atanh), FU(sigmoid), FU(erf), FU(erfc), FU(erfinv), FU(reciprocal),
    FU(neg), FU(abs), FU(sign), FU(sgn), FU(floor), FU(ceil), FU(trunc), FU(frac),
    {lower_round, {"round", "round_", "round.out", "round.decimals", "round_.decimals",
                   "round.decimals_out"}},
    {lower_isnan, {"isnan", "isnan.out"}},
    {lower_isinf, {"isinf", "isinf.out"}},
    FU(nan_to_num), FU(logical_not), FU(bitwise_not),
    {lower_signbit, {"signbit", "signbit.out"}},
    {lower_isposinf, {"isposinf", "isposinf.out"}},
    {lower_isneginf, {"isneginf", "isneginf.out"}},
    {NULL, {NULL}},
};
