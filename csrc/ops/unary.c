/* Unary elementwise math and activations (with the backward ops autograd
 * calls for them).
 *
 * Floating functions (exp, sin, ...) promote integer and bool inputs to the
 * default float dtype like PyTorch. float16/bfloat16 are computed in float32
 * and rounded once at the end, as PyTorch's CPU kernels do (opmath).
 * Functions StableHLO lacks (erf, asin, sinh, ...) use the CHLO ops, which
 * the XLA plugin legalizes. */
#include <math.h>
#include <string.h>

#include "ops/common.h"

/* ------------------------------------------------------------ helpers */

static tt_dtype opmath(tt_dtype dt) { return dt == TT_F16 || dt == TT_BF16 ? TT_F32 : dt; }

static tt_dtype float_result(tt_dtype dt) {
  return tt_dtype_is_floating(dt) ? dt : TT_DEFAULT_FLOAT;
}

/* Argument i (a tpu tensor or a CPU scalar tensor) as dt, in its own shape. */
static tt_val read_as(tt_lower_ctx *c, int i, tt_dtype dt) {
  return tt_operand(c, i, dt, tt_arg_ndim(c, i), tt_arg_dims(c, i));
}

static tt_dtype arg_dtype(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_TENSOR ? a->u.tensor->dtype : TT_F32;
}

/* Constant like x. */
static tt_val K(tt_builder *b, tt_val x, double v) { return tt_full_like(b, x, v); }
/* Scalar argument i as dt, broadcast like x. */
static tt_val S(tt_lower_ctx *c, int i, tt_val x) {
  tt_builder *b = tt_lc_builder(c);
  tt_shape s = tt_b_shape(b, x);
  return tt_b_broadcast_to(b, tt_lc_scalar(c, i, s.dtype), s.ndim, s.dims);
}

static tt_val add(tt_builder *b, tt_val x, tt_val y) { return tt_b_binary(b, "add", x, y); }
static tt_val sub(tt_builder *b, tt_val x, tt_val y) { return tt_b_binary(b, "subtract", x, y); }
static tt_val mul(tt_builder *b, tt_val x, tt_val y) { return tt_b_binary(b, "multiply", x, y); }
static tt_val dvd(tt_builder *b, tt_val x, tt_val y) { return tt_b_binary(b, "divide", x, y); }
static tt_val un(tt_builder *b, const char *op, tt_val x) { return tt_b_unary(b, op, x); }
static tt_val chlo(tt_builder *b, const char *op, tt_val x) {
  return tt_b_op(b, op, &x, 1, NULL, tt_b_shape(b, x));
}
static tt_val cmp(tt_builder *b, const char *dir, tt_val x, tt_val y) {
  return tt_b_compare(b, dir, x, y);
}
static tt_val sel(tt_builder *b, tt_val p, tt_val t, tt_val f) { return tt_b_select(b, p, t, f); }

typedef tt_val (*unary_fn)(tt_builder *b, tt_val x);

/* A floating function of self (arg 0): ints/bool promote to float32. */
static tt_error *float_unary(tt_lower_ctx *c, unary_fn f) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype out = float_result(arg_dtype(c, 0));
  tt_val x = read_as(c, 0, opmath(out));
  tt_lc_output(c, tt_b_convert(b, f(b, x), out));
  return NULL;
}

/* A floating-only function (activations): other dtypes run on CPU, which
 * raises PyTorch's "not implemented for 'Long'" error. */
static tt_error *require_float(tt_lower_ctx *c, int i) {
  if (!tt_dtype_is_floating(arg_dtype(c, i)))
    return tt_lc_decline(c, "%s is not implemented for %s", tt_lc_op_name(c),
                         tt_dtype_name(arg_dtype(c, i)));
  return NULL;
}

/* Reads self (arg i) in opmath after checking it is floating. */
#define FLOAT_SELF(i)                          \
  TT_TRY(require_float(c, (i)));               \
  tt_builder *b = tt_lc_builder(c);            \
  tt_dtype dt = arg_dtype(c, (i));             \
  tt_val x = read_as(c, (i), opmath(dt))
#define OUT(v) (tt_lc_output(c, tt_b_convert(b, (v), dt)), (tt_error *)NULL)

/* ------------------------------------------------------------ math functions */

static tt_val f_exp(tt_builder *b, tt_val x) { return un(b, "exponential", x); }
static tt_val f_exp2(tt_builder *b, tt_val x) { return tt_b_binary(b, "power", K(b, x, 2), x); }
static tt_val f_expm1(tt_builder *b, tt_val x) { return un(b, "exponential_minus_one", x); }
static tt_val f_log(tt_builder *b, tt_val x) { return un(b, "log", x); }
static tt_val f_log2(tt_builder *b, tt_val x) { return mul(b, un(b, "log", x), K(b, x, 1 / M_LN2)); }
static tt_val f_log10(tt_builder *b, tt_val x) {
  return mul(b, un(b, "log", x), K(b, x, 1 / M_LN10));
}
static tt_val f_log1p(tt_builder *b, tt_val x) { return un(b, "log_plus_one", x); }
static tt_val f_sqrt(tt_builder *b, tt_val x) { return un(b, "sqrt", x); }
static tt_val f_rsqrt(tt_builder *b, tt_val x) { return un(b, "rsqrt", x); }
static tt_val f_sin(tt_builder *b, tt_val x) { return un(b, "sine", x); }
static tt_val f_cos(tt_builder *b, tt_val x) { return un(b, "cosine", x); }
static tt_val f_tan(tt_builder *b, tt_val x) { return un(b, "tan", x); }
static tt_val f_asin(tt_builder *b, tt_val x) { return chlo(b, "chlo.asin", x); }
static tt_val f_acos(tt_builder *b, tt_val x) { return chlo(b, "chlo.acos", x); }
static tt_val f_atan(tt_builder *b, tt_val x) { return chlo(b, "chlo.atan", x); }
/* sinh/cosh: chlo.sinh/cosh drift to ~13 ulp for |x| > 40 (measured), past
 * float32 tolerance. With t = exp(|x|/2): e^|x|/2 = (t/2)*t (no early
 * overflow) and e^-|x|/2 = (0.5/t)/t, about 3 ulp; small |x| uses expm1
 * (u + u/(u+1))/2 to avoid cancellation. */
static tt_val half_exp_pair(tt_builder *b, tt_val ax, tt_val *neg) {
  tt_val t = un(b, "exponential", mul(b, ax, K(b, ax, 0.5)));
  *neg = dvd(b, dvd(b, K(b, ax, 0.5), t), t);
  return mul(b, mul(b, K(b, ax, 0.5), t), t);
}
static tt_val f_sinh(tt_builder *b, tt_val x) {
  tt_val ax = un(b, "abs", x), neg;
  tt_val pos = half_exp_pair(b, ax, &neg);
  tt_val big = sub(b, pos, neg);
  big = sel(b, cmp(b, "LT", x, K(b, x, 0)), un(b, "negate", big), big);
  tt_val u = un(b, "exponential_minus_one", x); /* signed: keeps -0.0 */
  tt_val small = mul(b, K(b, x, 0.5), add(b, u, dvd(b, u, add(b, u, K(b, x, 1)))));
  return sel(b, cmp(b, "LT", ax, K(b, x, 1)), small, big);
}
static tt_val f_cosh(tt_builder *b, tt_val x) {
  tt_val ax = un(b, "abs", x), neg;
  tt_val pos = half_exp_pair(b, ax, &neg);
  return add(b, pos, neg);
}
static tt_val f_tanh(tt_builder *b, tt_val x) { return un(b, "tanh", x); }
static tt_val f_asinh(tt_builder *b, tt_val x) { return chlo(b, "chlo.asinh", x); }
static tt_val f_acosh(tt_builder *b, tt_val x) { return chlo(b, "chlo.acosh", x); }
static tt_val f_atanh(tt_builder *b, tt_val x) { return chlo(b, "chlo.atanh", x); }
/* PyTorch: 1 / (1 + exp(-x)) */
static tt_val f_sigmoid(tt_builder *b, tt_val x) {
  tt_val one = K(b, x, 1);
  return dvd(b, one, add(b, one, un(b, "exponential", un(b, "negate", x))));
}
static tt_val f_erf(tt_builder *b, tt_val x) { return chlo(b, "chlo.erf", x); }
static tt_val f_erfc(tt_builder *b, tt_val x) { return chlo(b, "chlo.erfc", x); }
static tt_val f_erfinv(tt_builder *b, tt_val x) { return chlo(b, "chlo.erf_inv", x); }
static tt_val f_reciprocal(tt_builder *b, tt_val x) { return dvd(b, K(b, x, 1), x); }

#define FLOAT_UNARY(name)                                                        \
  static tt_error *lower_##name(tt_lower_ctx *c) { return float_unary(c, f_##name); }
FLOAT_UNARY(exp)
FLOAT_UNARY(exp2)
FLOAT_UNARY(expm1)
FLOAT_UNARY(log)
FLOAT_UNARY(log2)
FLOAT_UNARY(log10)
FLOAT_UNARY(log1p)
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
FLOAT_UNARY(sigmoid)
FLOAT_UNARY(erf)
FLOAT_UNARY(erfc)
FLOAT_UNARY(erfinv)
FLOAT_UNARY(reciprocal)

static tt_val copysign_one(tt_builder *b, tt_val x);

/* sinc: x == 0 ? 1 : sin(pi x) / (pi x) */
static tt_val f_sinc(tt_builder *b, tt_val x) {
  tt_val px = mul(b, K(b, x, M_PI), x);
  return sel(b, cmp(b, "EQ", x, K(b, x, 0)), K(b, x, 1), dvd(b, un(b, "sine", px), px));
}
static tt_val f_deg2rad(tt_builder *b, tt_val x) { return mul(b, x, K(b, x, M_PI / 180.0)); }
static tt_val f_rad2deg(tt_builder *b, tt_val x) { return mul(b, x, K(b, x, 180.0 / M_PI)); }
static tt_val f_lgamma(tt_builder *b, tt_val x) { return chlo(b, "chlo.lgamma", x); }
/* is x a non-positive integer (a pole of the gamma function)? */
static tt_val gamma_pole(tt_builder *b, tt_val x) {
  return tt_b_binary(b, "and", cmp(b, "LE", x, K(b, x, 0)), cmp(b, "EQ", un(b, "floor", x), x));
}
/* digamma: +-0 -> -+inf, negative integers -> NaN, like PyTorch's calc_digamma */
static tt_val f_digamma(tt_builder *b, tt_val x) {
  tt_val r = chlo(b, "chlo.digamma", x);
  tt_val zero = K(b, x, 0);
  tt_val z = sel(b, cmp(b, "LT", copysign_one(b, x), zero), K(b, x, INFINITY), K(b, x, -INFINITY));
  r = sel(b, gamma_pole(b, x), K(b, x, NAN), r);
  return sel(b, cmp(b, "EQ", x, zero), z, r);
}
/* entr: x > 0 ? -x log x : x == 0 ? 0 : -inf; NaN stays */
static tt_val f_special_entr(tt_builder *b, tt_val x) {
  tt_val zero = K(b, x, 0);
  tt_val r = sel(b, cmp(b, "EQ", x, zero), zero, K(b, x, -INFINITY));
  r = sel(b, cmp(b, "GT", x, zero), un(b, "negate", mul(b, x, un(b, "log", x))), r);
  return sel(b, cmp(b, "NE", x, x), x, r);
}
/* angle of a real number: NaN stays, x < 0 -> pi, else 0 */
static tt_val f_angle(tt_builder *b, tt_val x) {
  tt_val r = sel(b, cmp(b, "LT", x, K(b, x, 0)), K(b, x, M_PI), K(b, x, 0));
  return sel(b, cmp(b, "NE", x, x), x, r);
}

FLOAT_UNARY(sinc)
FLOAT_UNARY(deg2rad)
FLOAT_UNARY(rad2deg)
FLOAT_UNARY(lgamma)
FLOAT_UNARY(digamma)
FLOAT_UNARY(special_entr)
FLOAT_UNARY(angle)

/* Modified Bessel functions i0, i0e, i1, i1e: the Cephes Chebyshev
 * expansions over [0, 8] and (8, inf) (the same coefficients as PyTorch's
 * CPU kernels; float32 uses the shorter i1e sets, as PyTorch does). */
static const double I0E_A[] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1};
static const double I0E_B[] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1};
static const double I1E_A[] = {
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1};
static const double I1E_B[] = {
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1};

/* Clenshaw recurrence: 0.5 (b0 - b2) */
static tt_val chebyshev(tt_builder *b, tt_val y, const double *coef, int n) {
  tt_val b0 = K(b, y, coef[0]), b1 = K(b, y, 0), b2 = b1;
  for (int i = 1; i < n; i++) {
    b2 = b1;
    b1 = b0;
    b0 = add(b, sub(b, mul(b, y, b1), b2), K(b, y, coef[i]));
  }
  return mul(b, K(b, y, 0.5), sub(b, b0, b2));
}

/* The scaled function of |x| (exp(-|x|) I(|x|)), order 0 or 1, without the sign. */
static tt_val bessel_scaled(tt_builder *b, tt_val ax, int order) {
  bool f32 = tt_b_dtype(b, ax) != TT_F64;
  const double *A = order ? I1E_A : I0E_A, *B = order ? I1E_B : I0E_B;
  int na = order ? 29 : 30, nb = 25;
  if (order && f32) A += 12, na = 17, B += 18, nb = 7;
  tt_val y_lo = sub(b, dvd(b, ax, K(b, ax, 2)), K(b, ax, 2));
  tt_val lo = chebyshev(b, y_lo, A, na);
  if (order) lo = mul(b, lo, ax);
  tt_val y_hi = sub(b, dvd(b, K(b, ax, 32), ax), K(b, ax, 2));
  tt_val hi = dvd(b, chebyshev(b, y_hi, B, nb), un(b, "sqrt", ax));
  return sel(b, cmp(b, "LE", ax, K(b, ax, 8)), lo, hi);
}

static tt_val bessel(tt_builder *b, tt_val x, int order, bool scaled) {
  tt_val ax = un(b, "abs", x);
  tt_val r = bessel_scaled(b, ax, order);
  if (!scaled) r = mul(b, order ? un(b, "exponential", ax) : un(b, "exponential", ax), r);
  if (order) r = sel(b, cmp(b, "LT", x, K(b, x, 0)), un(b, "negate", r), r);
  return r;
}
static tt_val f_i0(tt_builder *b, tt_val x) { return bessel(b, x, 0, false); }
static tt_val f_special_i0e(tt_builder *b, tt_val x) { return bessel(b, x, 0, true); }
static tt_val f_special_i1(tt_builder *b, tt_val x) { return bessel(b, x, 1, false); }
static tt_val f_special_i1e(tt_builder *b, tt_val x) { return bessel(b, x, 1, true); }
FLOAT_UNARY(i0)
FLOAT_UNARY(special_i0e)
FLOAT_UNARY(special_i1)
FLOAT_UNARY(special_i1e)

/* frexp(self) -> (mantissa in [0.5, 1), int32 exponent), computed on the
 * bit pattern only (the XLA CPU runtime flushes subnormal floats to zero in
 * arithmetic and comparisons; bit operations keep them). Subnormals are
 * normalized with count_leading_zeros; 0, inf and NaN give (x, 0) like
 * std::frexp. */
static tt_error *lower_frexp(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  if (!tt_dtype_is_floating(dt))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "torch.frexp() only supports floating-point dtypes");
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, dt);
  int mbits = dt == TT_F64 ? 52 : dt == TT_F32 ? 23 : dt == TT_F16 ? 10 : 7;
  int width = dt == TT_F64 ? 64 : dt == TT_F32 ? 32 : 16;
  int64_t emask = dt == TT_F64 ? 0x7ff : dt == TT_F16 ? 0x1f : 0xff;
  int64_t bias = dt == TT_F64 ? 1022 : dt == TT_F16 ? 14 : 126;
  int64_t mmask = (INT64_C(1) << mbits) - 1;
  tt_shape is = tt_b_shape(b, x);
  is.dtype = dt == TT_F64 ? TT_I64 : dt == TT_F32 ? TT_I32 : TT_I16;
#define IK(v) tt_b_broadcast_to(b, tt_b_constant_int(b, is.dtype, (v)), is.ndim, is.dims)
  tt_val bits = tt_b_bitcast(b, x, is);
  tt_val e = tt_b_binary(b, "and", tt_b_binary(b, "shift_right_logical", bits, IK(mbits)), IK(emask));
  tt_val m = tt_b_binary(b, "and", bits, IK(mmask));
  tt_val sign = tt_b_binary(b, "and", bits, IK(INT64_MIN >> (64 - width)));
  /* normal: exponent e - bias, mantissa bits m */
  tt_val ex_n = sub(b, e, IK(bias));
  /* subnormal: leading one of m at p = width - 1 - clz(m) */
  tt_val p = sub(b, IK(width - 1), un(b, "count_leading_zeros", m));
  tt_val ex_s = sub(b, add(b, p, IK(1)), IK(bias + mbits));
  tt_val m_s = tt_b_binary(b, "and", tt_b_binary(b, "shift_left", m, sub(b, IK(mbits), p)), IK(mmask));
  tt_val is_sub = cmp(b, "EQ", e, IK(0));
  tt_val mant_bits = tt_b_binary(b, "or", tt_b_binary(b, "or", sign, IK(bias << mbits)),
                                 sel(b, is_sub, m_s, m));
  tt_val ex = sel(b, is_sub, ex_s, ex_n);
  tt_val special = tt_b_binary(b, "or", cmp(b, "EQ", e, IK(emask)),
                               tt_b_binary(b, "and", is_sub, cmp(b, "EQ", m, IK(0))));
#undef IK
  tt_lc_output(c, sel(b, special, x, tt_b_bitcast(b, mant_bits, tt_b_shape(b, x))));
  tt_lc_output(c, tt_b_convert(b, sel(b, special, tt_b_full(b, is, 0), ex), TT_I32));
  return NULL;
}

/* trigamma as PyTorch's calc_trigamma: reflection below 0.5, six shifted
 * terms, then the asymptotic series. */
static tt_val f_trigamma(tt_builder *b, tt_val x0) {
  tt_val one = K(b, x0, 1);
  tt_val refl = cmp(b, "LT", x0, K(b, x0, 0.5));
  tt_val sp = un(b, "sine", mul(b, K(b, x0, M_PI), x0));
  tt_val result = sel(b, refl, un(b, "negate", dvd(b, K(b, x0, M_PI * M_PI), mul(b, sp, sp))),
                      K(b, x0, 0));
  tt_val x = sel(b, refl, sub(b, one, x0), x0);
  for (int i = 0; i < 6; i++) {
    result = add(b, result, dvd(b, one, mul(b, x, x)));
    x = add(b, x, one);
  }
  tt_val ixx = dvd(b, one, mul(b, x, x));
  tt_val poly = mul(b, ixx, sub(b, K(b, x, 1.0 / 6), mul(b, ixx, sub(b, K(b, x, 1.0 / 30),
                                                                   mul(b, ixx, K(b, x, 1.0 / 42))))));
  tt_val series = dvd(b, add(b, add(b, one, dvd(b, one, mul(b, K(b, x, 2), x))), poly), x);
  result = add(b, result, series);
  return sel(b, refl, un(b, "negate", result), result);
}

/* ndtri (inverse of the standard normal CDF): the Cephes rational
 * approximations PyTorch's calc_ndtri uses, all branches computed and
 * selected. */
static const double NDTRI_P0[] = {-5.99633501014107895267E1, 9.80010754185999661536E1,
                                  -5.66762857469070293439E1, 1.39312609387279679503E1,
                                  -1.23916583867381258016E0};
static const double NDTRI_Q0[] = {1.0, 1.95448858338141759834E0, 4.67627912898881538453E0,
                                  8.63602421390890590575E1, -2.25462687854119370527E2,
                                  2.00260212380060660359E2, -8.20372256168333339912E1,
                                  1.59056225126211695515E1, -1.18331621121330003142E0};
static const double NDTRI_P1[] = {4.05544892305962419923E0, 3.15251094599893866154E1,
                                  5.71628192246421288162E1, 4.40805073893200834700E1,
                                  1.46849561928858024014E1, 2.18663306850790267539E0,
                                  -1.40256079171354495875E-1, -3.50424626827848203418E-2,
                                  -8.57456785154685413611E-4};
static const double NDTRI_Q1[] = {1.0, 1.57799883256466749731E1, 4.53907635128879210584E1,
                                  4.13172038254672030440E1, 1.50425385692907503408E1,
                                  2.50464946208309415979E0, -1.42182922854787788574E-1,
                                  -3.80806407691578277194E-2, -9.33259480895457427372E-4};
static const double NDTRI_P2[] = {3.23774891776946035970E0, 6.91522889068984211695E0,
                                  3.93881025292474443415E0, 1.33303460815807542389E0,
                                  2.01485389549179081538E-1, 1.23716634817820021358E-2,
                                  3.01581553508235416007E-4, 2.65806974686737550832E-6,
                                  6.23974539184983293730E-9};
static const double NDTRI_Q2[] = {1.0, 6.02427039364742014255E0, 3.67983563856160859403E0,
                                  1.37702099489081330271E0, 2.16236993594496635890E-1,
                                  1.34204006088543189037E-2, 3.28014464682127739104E-4,
                                  2.89247864745380683936E-6, 6.79019408009981274425E-9};

/* Horner: coef[0] x^n + ... + coef[n] */
static tt_val horner(tt_builder *b, tt_val x, const double *coef, int n) {
  tt_val r = K(b, x, coef[0]);
  for (int i = 1; i <= n; i++) r = add(b, mul(b, r, x), K(b, x, coef[i]));
  return r;
}

static tt_val f_special_ndtri(tt_builder *b, tt_val y0) {
  const double e2 = 0.13533528323661269189; /* exp(-2) */
  tt_val one = K(b, y0, 1), zero = K(b, y0, 0);
  tt_val flip = cmp(b, "GT", y0, K(b, y0, 1 - e2));
  tt_val y = sel(b, flip, sub(b, one, y0), y0);
  /* central: |y - 0.5| <= 3/8 */
  tt_val yc = sub(b, y0, K(b, y0, 0.5));
  tt_val y2 = mul(b, yc, yc);
  tt_val xc = add(b, yc, mul(b, yc, dvd(b, mul(b, y2, horner(b, y2, NDTRI_P0, 4)),
                                        horner(b, y2, NDTRI_Q0, 8))));
  xc = mul(b, xc, K(b, y0, 2.50662827463100050242E0));
  /* tails */
  tt_val x = un(b, "sqrt", mul(b, K(b, y, -2), un(b, "log", y)));
  tt_val x0 = sub(b, x, dvd(b, un(b, "log", x), x));
  tt_val z = dvd(b, one, x);
  tt_val r1 = dvd(b, horner(b, z, NDTRI_P1, 8), horner(b, z, NDTRI_Q1, 8));
  tt_val r2 = dvd(b, horner(b, z, NDTRI_P2, 8), horner(b, z, NDTRI_Q2, 8));
  tt_val x1 = mul(b, z, sel(b, cmp(b, "LT", x, K(b, x, 8)), r1, r2));
  tt_val xt = sub(b, x0, x1);
  xt = sel(b, flip, xt, un(b, "negate", xt));
  tt_val r = sel(b, cmp(b, "GT", y, K(b, y, e2)), xc, xt);
  r = sel(b, tt_b_binary(b, "or", cmp(b, "LT", y0, zero), cmp(b, "GT", y0, one)), K(b, y0, NAN), r);
  r = sel(b, cmp(b, "EQ", y0, one), K(b, y0, INFINITY), r);
  return sel(b, cmp(b, "EQ", y0, zero), K(b, y0, -INFINITY), r);
}
FLOAT_UNARY(special_ndtri)

/* polygamma(n, self) (in place: polygamma_(self, n)). n = 0 is digamma. */
static tt_error *lower_polygamma(tt_lower_ctx *c) {
  bool n_first = tt_lc_kind(c, 0) == TT_ARG_INT;
  int xi = n_first ? 1 : 0;
  int64_t n = tt_lc_int(c, n_first ? 0 : 1, 0);
  if (n < 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "polygamma(n, x) does not support negative n.");
  tt_builder *b = tt_lc_builder(c);
  tt_dtype out = float_result(arg_dtype(c, xi));
  tt_val x = read_as(c, xi, opmath(out)), r;
  if (n == 0) r = f_digamma(b, x);
  else if (n == 1) r = f_trigamma(b, x);
  else /* CPU's Cephes zeta differs from chlo.polygamma for x < 0 */
    return tt_lc_decline(c, "polygamma with n >= 2");
  tt_lc_output(c, tt_b_convert(b, r, out));
  return NULL;
}

/* logit(self, eps=None): log(z / (1 - z)), z = clamp(x, eps, 1 - eps) when eps >= 0 */
static double logit_eps(tt_lower_ctx *c, int i) {
  return tt_lc_nargs(c) > i && !tt_lc_is_none(c, i) ? tt_lc_double(c, i, -1.0) : -1.0;
}

static tt_error *lower_logit(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype out = float_result(arg_dtype(c, 0));
  tt_dtype cm = opmath(out);
  tt_val x = read_as(c, 0, cm);
  double eps = logit_eps(c, 1);
  if (eps >= 0) {
    /* lo = eps, hi = 1 - eps, both rounded to the tensor dtype */
    tt_val lo = tt_b_convert(b, tt_b_convert(b, K(b, x, eps), out), cm);
    tt_val hi = tt_b_convert(b, tt_b_convert(b, K(b, x, 1 - eps), out), cm);
    x = sel(b, cmp(b, "LT", x, lo), lo, sel(b, cmp(b, "GT", x, hi), hi, x));
  }
  tt_val r = un(b, "log", dvd(b, x, sub(b, K(b, x, 1), x)));
  tt_lc_output(c, tt_b_convert(b, r, out));
  return NULL;
}

/* logit_backward(grad, self, eps): outside [lo, hi] -> 0 (eps >= 0) or NaN
 * (outside [0, 1], eps < 0); else grad / (x (1 - x)) */
static tt_error *lower_logit_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  double eps = logit_eps(c, 2);
  tt_val r = dvd(b, g, mul(b, x, sub(b, K(b, x, 1), x)));
  tt_val lo, hi;
  if (eps >= 0) {
    lo = tt_b_convert(b, tt_b_convert(b, K(b, x, eps), dt), opmath(dt));
    hi = tt_b_convert(b, tt_b_convert(b, K(b, x, 1 - eps), dt), opmath(dt));
  } else {
    lo = K(b, x, 0);
    hi = K(b, x, 1);
  }
  tt_val outside = tt_b_binary(b, "or", cmp(b, "LT", x, lo), cmp(b, "GT", x, hi));
  return OUT(sel(b, outside, K(b, x, eps >= 0 ? 0.0 : NAN), r));
}

/* ------------------------------------------------------------ sign predicates */

/* Sign bit of floating x (true for -0.0 and negative NaNs). */
static tt_val sign_bit(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  s.dtype = s.dtype == TT_F64 ? TT_I64 : s.dtype == TT_F32 ? TT_I32 : TT_I16;
  return cmp(b, "LT", tt_b_bitcast(b, x, s), tt_b_full(b, s, 0));
}
/* copysign(1, x) */
static tt_val copysign_one(tt_builder *b, tt_val x) {
  return sel(b, sign_bit(b, x), K(b, x, -1), K(b, x, 1));
}

static tt_val bool_false_like(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  s.dtype = TT_BOOL;
  return tt_b_full(b, s, 0);
}

static tt_error *lower_signbit(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, dt), r;
  if (tt_dtype_is_floating(dt)) r = sign_bit(b, x);
  else if (dt == TT_BOOL || !tt_dtype_is_signed(dt)) r = bool_false_like(b, x);
  else r = cmp(b, "LT", x, K(b, x, 0));
  tt_lc_output(c, r);
  return NULL;
}

static tt_error *is_signed_inf(tt_lower_ctx *c, double inf) {
  tt_dtype dt = arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, dt);
  tt_lc_output(c, tt_dtype_is_floating(dt) ? cmp(b, "EQ", x, K(b, x, inf)) : bool_false_like(b, x));
  return NULL;
}
static tt_error *lower_isposinf(tt_lower_ctx *c) { return is_signed_inf(c, INFINITY); }
static tt_error *lower_isneginf(tt_lower_ctx *c) { return is_signed_inf(c, -INFINITY); }

/* ------------------------------------------------------------ dtype-keeping */

static tt_error *lower_neg(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  if (dt == TT_BOOL)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                      "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  tt_builder *b = tt_lc_builder(c);
  tt_lc_output(c, un(b, "negate", read_as(c, 0, dt)));
  return NULL;
}

static tt_error *lower_abs(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  if (dt == TT_BOOL) return tt_lc_decline(c, "abs is not implemented for bool");
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, dt);
  tt_lc_output(c, dt == TT_U8 ? x : un(b, "abs", x));
  return NULL;
}

/* PyTorch: (0 < x) - (x < 0); NaN gives 0. bool and uint8 too. */
static tt_error *sign_common(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, dt);
  if (dt == TT_BOOL) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val zero = K(b, x, 0);
  tt_val r = sel(b, cmp(b, "GT", x, zero), K(b, x, 1), zero);
  if (dt != TT_U8) r = sel(b, cmp(b, "LT", x, zero), K(b, x, -1), r);
  tt_lc_output(c, r);
  return NULL;
}
static tt_error *lower_sign(tt_lower_ctx *c) { return sign_common(c); }
static tt_error *lower_sgn(tt_lower_ctx *c) { return sign_common(c); }

/* floor/ceil/round/trunc: identity on integers; bool unsupported (CPU raises). */
static tt_error *rounding(tt_lower_ctx *c, const char *op) {
  tt_dtype dt = arg_dtype(c, 0);
  if (dt == TT_BOOL) return tt_lc_decline(c, "%s is not implemented for bool", tt_lc_op_name(c));
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, dt);
  if (!tt_dtype_is_floating(dt)) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val r;
  if (op[0] == 't') /* trunc: round toward zero */
    r = sel(b, cmp(b, "LT", x, K(b, x, 0)), un(b, "ceil", x), un(b, "floor", x));
  else
    r = un(b, op, x);
  tt_lc_output(c, r);
  return NULL;
}
static tt_error *lower_floor(tt_lower_ctx *c) { return rounding(c, "floor"); }
static tt_error *lower_ceil(tt_lower_ctx *c) { return rounding(c, "ceil"); }
static tt_error *lower_trunc(tt_lower_ctx *c) { return rounding(c, "trunc"); }
static tt_error *lower_round(tt_lower_ctx *c) {
  if (tt_lc_nargs(c) > 1 && tt_lc_kind(c, 1) == TT_ARG_INT && tt_lc_int(c, 1, 0) != 0)
    return tt_lc_decline(c, "round with decimals != 0");
  return rounding(c, "round_nearest_even");
}

/* frac: x - trunc(x); floating only. */
static tt_error *lower_frac(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  tt_dtype dt = arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, opmath(dt));
  tt_val t = sel(b, cmp(b, "LT", x, K(b, x, 0)), un(b, "ceil", x), un(b, "floor", x));
  tt_lc_output(c, tt_b_convert(b, sub(b, x, t), dt));
  return NULL;
}

/* ------------------------------------------------------------ predicates */

static tt_error *lower_isnan(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, dt);
  tt_shape s = tt_b_shape(b, x);
  s.dtype = TT_BOOL;
  tt_lc_output(c, tt_dtype_is_floating(dt) ? cmp(b, "NE", x, x) : tt_b_full(b, s, 0));
  return NULL;
}

static tt_error *lower_isinf(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, dt);
  tt_shape s = tt_b_shape(b, x);
  s.dtype = TT_BOOL;
  tt_lc_output(c, tt_dtype_is_floating(dt) ? cmp(b, "EQ", un(b, "abs", x), K(b, x, INFINITY))
                                           : tt_b_full(b, s, 0));
  return NULL;
}

/* nan_to_num(self, nan=None, posinf=None, neginf=None): static replacement
 * values; infinities default to the dtype's largest finite values. */
static double finite_max(tt_dtype dt) {
  switch (dt) {
    case TT_F16: return 65504.0;
    case TT_BF16: return 3.3895313892515355e38;
    case TT_F32: return 3.4028234663852886e38;
    default: return 1.7976931348623157e308;
  }
}

static tt_error *lower_nan_to_num(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, dt);
  if (!tt_dtype_is_floating(dt)) {
    tt_lc_output(c, x);
    return NULL;
  }
  double nan_v = tt_lc_is_none(c, 1) ? 0.0 : tt_lc_double(c, 1, 0.0);
  double pos_v = tt_lc_is_none(c, 2) ? finite_max(dt) : tt_lc_double(c, 2, 0.0);
  double neg_v = tt_lc_is_none(c, 3) ? -finite_max(dt) : tt_lc_double(c, 3, 0.0);
  tt_val r = sel(b, cmp(b, "NE", x, x), K(b, x, nan_v), x);
  r = sel(b, cmp(b, "EQ", x, K(b, x, INFINITY)), K(b, x, pos_v), r);
  r = sel(b, cmp(b, "EQ", x, K(b, x, -INFINITY)), K(b, x, neg_v), r);
  tt_lc_output(c, r);
  return NULL;
}

static tt_error *lower_logical_not(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_lc_output(c, un(b, "not", read_as(c, 0, TT_BOOL)));
  return NULL;
}

static tt_error *lower_bitwise_not(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  if (tt_dtype_is_floating(dt)) return tt_lc_decline(c, "bitwise_not is not implemented for floats");
  tt_builder *b = tt_lc_builder(c);
  tt_lc_output(c, un(b, "not", read_as(c, 0, dt)));
  return NULL;
}

/* ------------------------------------------------------------ activations */

/* relu = clamp_min(x, 0): NaN propagates. */
static tt_error *lower_relu(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  if (dt == TT_BOOL)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Boolean inputs not supported for relu");
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, dt);
  tt_val zero = K(b, x, 0);
  tt_lc_output(c, sel(b, cmp(b, "LT", x, zero), zero, x));
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
  tt_val half_x = mul(b, K(b, x, 0.5), x);
  tt_val inner;
  if (approx) { /* 0.5x(1 + tanh(beta (x + kappa x^3))) */
    tt_val cube = mul(b, mul(b, x, x), x);
    inner = un(b, "tanh", mul(b, K(b, x, GELU_BETA), add(b, x, mul(b, K(b, x, GELU_KAPPA), cube))));
  } else { /* 0.5x(1 + erf(x / sqrt 2)) */
    inner = chlo(b, "chlo.erf", mul(b, x, K(b, x, M_SQRT1_2)));
  }
  return OUT(mul(b, half_x, add(b, K(b, x, 1), inner)));
}

static tt_error *lower_gelu_backward(tt_lower_ctx *c) {
  tt_error *err;
  bool approx = gelu_tanh(c, 2, &err);
  if (err) return err;
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  tt_val r;
  if (approx) {
    tt_val x_sq = mul(b, x, x);
    tt_val x_cube = mul(b, x_sq, x);
    tt_val inner = mul(b, K(b, x, GELU_BETA), add(b, x, mul(b, K(b, x, GELU_KAPPA), x_cube)));
    tt_val t = un(b, "tanh", inner);
    tt_val left = mul(b, K(b, x, 0.5), x);
    tt_val right = add(b, K(b, x, 1), t);
    tt_val left_d = mul(b, K(b, x, 0.5), right);
    tt_val tanh_d = sub(b, K(b, x, 1), mul(b, t, t));
    tt_val inner_d = mul(b, K(b, x, GELU_BETA),
                         add(b, K(b, x, 1), mul(b, K(b, x, 3 * GELU_KAPPA), x_sq)));
    tt_val right_d = mul(b, mul(b, left, tanh_d), inner_d);
    r = mul(b, g, add(b, left_d, right_d));
  } else {
    tt_val cdf = mul(b, K(b, x, 0.5),
                     add(b, K(b, x, 1), chlo(b, "chlo.erf", mul(b, x, K(b, x, M_SQRT1_2)))));
    tt_val pdf = mul(b, un(b, "exponential", mul(b, K(b, x, -0.5), mul(b, x, x))),
                     K(b, x, M_2_SQRTPI * M_SQRT1_2 * 0.5));
    r = mul(b, g, add(b, cdf, mul(b, x, pdf)));
  }
  return OUT(r);
}

/* silu: x / (1 + exp(-x)) */
static tt_error *lower_silu(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  return OUT(dvd(b, x, add(b, K(b, x, 1), un(b, "exponential", un(b, "negate", x)))));
}

/* mish: x * tanh(softplus(x)) */
static tt_error *lower_mish(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  return OUT(mul(b, x, un(b, "tanh", un(b, "log_plus_one", un(b, "exponential", x)))));
}

/* sigmoid_backward(grad, y): grad * (1 - y) * y */
static tt_error *lower_sigmoid_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  return OUT(mul(b, mul(b, g, sub(b, K(b, x, 1), x)), x));
}

/* tanh_backward(grad, y): grad * (1 - y^2) */
static tt_error *lower_tanh_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  return OUT(mul(b, g, sub(b, K(b, x, 1), mul(b, x, x))));
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
  tt_lc_output(c, sel(b, cmp(b, "LE", x, S(c, 2, x)), K(b, g, 0), g));
  return NULL;
}

/* hardtanh(self, min_val, max_val) = clamp (std::min/max: NaN self propagates) */
static tt_error *lower_hardtanh(tt_lower_ctx *c) {
  /* Integer self keeps its dtype; the bounds are cast to it (truncated). */
  tt_dtype it = arg_dtype(c, 0);
  if (tt_dtype_is_integral(it)) {
    tt_builder *b = tt_lc_builder(c);
    tt_val x = read_as(c, 0, it);
    tt_val lo = tt_lc_nargs(c) > 1 && !tt_lc_is_none(c, 1) ? S(c, 1, x) : K(b, x, -1);
    tt_val hi = tt_lc_nargs(c) > 2 && !tt_lc_is_none(c, 2) ? S(c, 2, x) : K(b, x, 1);
    tt_val r = sel(b, cmp(b, "LT", x, lo), lo, x);
    tt_lc_output(c, sel(b, cmp(b, "LT", hi, r), hi, r));
    return NULL;
  }
  FLOAT_SELF(0);
  tt_val lo = tt_lc_nargs(c) > 1 && !tt_lc_is_none(c, 1) ? S(c, 1, x) : K(b, x, -1);
  tt_val hi = tt_lc_nargs(c) > 2 && !tt_lc_is_none(c, 2) ? S(c, 2, x) : K(b, x, 1);
  tt_val r = sel(b, cmp(b, "LT", x, lo), lo, x);
  r = sel(b, cmp(b, "LT", hi, r), hi, r);
  return OUT(r);
}

/* hardtanh_backward(grad, self, min, max): (x <= min || x >= max) ? 0 : grad */
static tt_error *lower_hardtanh_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  tt_val out = tt_b_binary(b, "or", cmp(b, "LE", x, S(c, 2, x)), cmp(b, "GE", x, S(c, 3, x)));
  return OUT(sel(b, out, K(b, g, 0), g));
}

/* leaky_relu(self, slope): x > 0 ? x : x * slope */
static tt_error *lower_leaky_relu(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val slope = tt_lc_nargs(c) > 1 && !tt_lc_is_none(c, 1) ? S(c, 1, x) : K(b, x, 0.01);
  return OUT(sel(b, cmp(b, "GT", x, K(b, x, 0)), x, mul(b, x, slope)));
}

/* leaky_relu_backward(grad, self, slope, self_is_result): self > 0 ? grad : grad * slope */
static tt_error *lower_leaky_relu_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  return OUT(sel(b, cmp(b, "GT", x, K(b, x, 0)), g, mul(b, g, S(c, 2, x))));
}

/* elu(self, alpha, scale, input_scale):
 * x <= 0 ? expm1(x * input_scale) * alpha * scale : x * scale */
static tt_val scalar_or(tt_lower_ctx *c, int i, tt_val like, double dflt) {
  if (tt_lc_nargs(c) > i && !tt_lc_is_none(c, i)) return S(c, i, like);
  return K(tt_lc_builder(c), like, dflt);
}

static tt_error *lower_elu(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val alpha = scalar_or(c, 1, x, 1), scale = scalar_or(c, 2, x, 1);
  tt_val in_scale = scalar_or(c, 3, x, 1);
  tt_val neg = mul(b, un(b, "exponential_minus_one", mul(b, x, in_scale)), mul(b, alpha, scale));
  return OUT(sel(b, cmp(b, "LE", x, K(b, x, 0)), neg, mul(b, x, scale)));
}

/* elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result) */
static tt_error *lower_elu_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(5);
  bool is_result = tt_lc_bool(c, 4, false);
  tt_val g = read_as(c, 0, opmath(dt));
  tt_val alpha = S(c, 1, x), scale = S(c, 2, x), in_scale = S(c, 3, x);
  tt_val negcoef = mul(b, alpha, scale);
  tt_val neg;
  if (is_result) /* g * input_scale * (y + negcoef) */
    neg = mul(b, mul(b, g, in_scale), add(b, x, negcoef));
  else /* g * input_scale * negcoef * exp(x * input_scale) */
    neg = mul(b, mul(b, mul(b, g, in_scale), negcoef), un(b, "exponential", mul(b, x, in_scale)));
  return OUT(sel(b, cmp(b, "LE", x, K(b, x, 0)), neg, mul(b, g, scale)));
}

/* softplus(self, beta, threshold): x*beta > threshold ? x : log1p(exp(x*beta)) / beta */
static tt_error *lower_softplus(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val beta = scalar_or(c, 1, x, 1), thr = scalar_or(c, 2, x, 20);
  tt_val xb = mul(b, x, beta);
  tt_val soft = dvd(b, un(b, "log_plus_one", un(b, "exponential", xb)), beta);
  return OUT(sel(b, cmp(b, "GT", xb, thr), x, soft));
}

/* softplus_backward(grad, self, beta, threshold):
 * z = exp(x*beta); x*beta > threshold ? grad : grad * z / (z + 1) */
static tt_error *lower_softplus_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  tt_val xb = mul(b, x, S(c, 2, x));
  tt_val z = un(b, "exponential", xb);
  tt_val soft = dvd(b, mul(b, g, z), add(b, z, K(b, x, 1)));
  return OUT(sel(b, cmp(b, "GT", xb, S(c, 3, x)), g, soft));
}

/* min(max(x + 3, 0), 6) with std::min/max NaN behaviour */
static tt_val relu6_shift(tt_builder *b, tt_val x) {
  tt_val y = add(b, x, K(b, x, 3));
  tt_val zero = K(b, x, 0), six = K(b, x, 6);
  y = sel(b, cmp(b, "LT", y, zero), zero, y);
  return sel(b, cmp(b, "LT", six, y), six, y);
}

static tt_error *lower_hardsigmoid(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  return OUT(dvd(b, relu6_shift(b, x), K(b, x, 6)));
}

/* (x > -3 && x < 3) ? grad * (1/6) : 0 */
static tt_error *lower_hardsigmoid_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  tt_val in = tt_b_binary(b, "and", cmp(b, "GT", x, K(b, x, -3)), cmp(b, "LT", x, K(b, x, 3)));
  return OUT(sel(b, in, mul(b, g, K(b, x, 1.0f / 6.0f)), K(b, x, 0)));
}

static tt_error *lower_hardswish(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  return OUT(dvd(b, mul(b, x, relu6_shift(b, x)), K(b, x, 6)));
}

/* x <= -3 ? 0 : x < 3 ? grad * (x / 3 + 0.5) : grad */
static tt_error *lower_hardswish_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  tt_val mid = mul(b, g, add(b, dvd(b, x, K(b, x, 3)), K(b, x, 0.5)));
  tt_val r = sel(b, cmp(b, "LT", x, K(b, x, 3)), mid, g);
  return OUT(sel(b, cmp(b, "LE", x, K(b, x, -3)), K(b, x, 0), r));
}

/* silu_backward(grad, self): grad * s * (1 + x (1 - s)), s = 1 / (1 + exp(-x)) */
static tt_error *lower_silu_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  tt_val s = f_sigmoid(b, x), one = K(b, x, 1);
  return OUT(mul(b, mul(b, g, s), add(b, one, mul(b, x, sub(b, one, s)))));
}

/* mish_backward(grad, self): t = tanh(softplus(x)); grad * (t + x s (1 - t^2)) */
static tt_error *lower_mish_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  tt_val s = f_sigmoid(b, x), one = K(b, x, 1);
  tt_val t = un(b, "tanh", un(b, "log_plus_one", un(b, "exponential", x)));
  return OUT(mul(b, g, add(b, t, mul(b, mul(b, x, s), sub(b, one, mul(b, t, t))))));
}

/* log_sigmoid_forward(self) -> (min(x, 0) - log1p(exp(-|x|)), buffer). The
 * CPU kernel returns an empty buffer (and its backward ignores it). */
static tt_error *lower_log_sigmoid_forward(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val zero = K(b, x, 0);
  tt_val mn = sel(b, cmp(b, "LT", zero, x), zero, x); /* std::min(x, 0): NaN propagates */
  tt_val z = un(b, "exponential", un(b, "negate", un(b, "abs", x)));
  tt_lc_output(c, tt_b_convert(b, sub(b, mn, un(b, "log_plus_one", z)), dt));
  int64_t none[1] = {0};
  tt_lc_output(c, tt_b_full(b, tt_shape_make(dt, 1, none), 0));
  return NULL;
}

/* log_sigmoid_backward(grad, self, buffer):
 * grad * ((x < 0) - (x < 0 ? 1 : -1) * z / (1 + z)), z = exp(-|x|) */
static tt_error *lower_log_sigmoid_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  tt_val neg = cmp(b, "LT", x, K(b, x, 0));
  tt_val max_deriv = sel(b, neg, K(b, x, 1), K(b, x, 0));
  tt_val sign = sel(b, neg, K(b, x, 1), K(b, x, -1));
  tt_val z = un(b, "exponential", un(b, "negate", un(b, "abs", x)));
  tt_val q = dvd(b, z, add(b, K(b, x, 1), z));
  return OUT(mul(b, g, sub(b, max_deriv, mul(b, sign, q))));
}

/* -lambd <= x <= lambd (NaN: false) */
static tt_val in_band(tt_builder *b, tt_val x, tt_val lambd) {
  return tt_b_binary(b, "and", cmp(b, "GE", x, un(b, "negate", lambd)), cmp(b, "LE", x, lambd));
}

/* softshrink(self, lambd): x > l ? x - l : x < -l ? x + l : x * 0; NaN stays.
 * lambd must be >= 0 (checked on its value, which joins the cache key). */
static tt_error *lower_softshrink(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  if (!tt_lc_is_none(c, 1)) {
    double l = tt_lc_scalar_value(c, 1), hi = finite_max(dt);
    if (!(l >= 0 && l <= hi))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "lambda must be in range [0, %g] for input dtype %s, but found %g", hi,
                        dt == TT_F32 ? "Float" : dt == TT_F16 ? "Half"
                        : dt == TT_BF16 ? "BFloat16" : "Double", l);
  }
  tt_val l = scalar_or(c, 1, x, 0.5);
  tt_val r = sel(b, cmp(b, "LT", x, un(b, "negate", l)), add(b, x, l), mul(b, x, K(b, x, 0)));
  r = sel(b, cmp(b, "GT", x, l), sub(b, x, l), r);
  return OUT(sel(b, cmp(b, "NE", x, x), x, r));
}

/* hardshrink(self, lambd): -l <= x <= l ? 0 : x */
static tt_error *lower_hardshrink(tt_lower_ctx *c) {
  FLOAT_SELF(0);
  tt_val l = scalar_or(c, 1, x, 0.5);
  return OUT(sel(b, in_band(b, x, l), K(b, x, 0), x));
}

/* softshrink_backward / hardshrink_backward(grad, self, lambd): -l <= x <= l ? 0 : grad */
static tt_error *lower_shrink_backward(tt_lower_ctx *c) {
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  return OUT(sel(b, in_band(b, x, S(c, 2, x)), K(b, x, 0), g));
}

/* threshold(self, threshold, value): x <= threshold ? value : x (all but bool) */
static tt_error *lower_threshold(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  if (dt == TT_BOOL) return tt_lc_decline(c, "threshold of bool");
  tt_builder *b = tt_lc_builder(c);
  tt_val x = read_as(c, 0, opmath(dt));
  tt_val r = sel(b, cmp(b, "LE", x, S(c, 1, x)), S(c, 2, x), x);
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
    inv = tt_b_convert(b, dvd(b, tt_b_constant(b, TT_F64, 1), a64), s.dtype);
    inv = tt_b_broadcast_to(b, inv, s.ndim, s.dims);
  } else {
    inv = K(b, x, 1);
  }
  tt_val neg = mul(b, un(b, "exponential_minus_one", mul(b, x, inv)), alpha);
  return OUT(sel(b, cmp(b, "LE", x, K(b, x, 0)), neg, x));
}

/* rrelu_with_noise(self, noise, lower, upper, training, generator): in eval
 * mode leaky_relu with slope (lower + upper) / 2 (in double). */
static tt_val rrelu_slope(tt_lower_ctx *c, int lower_arg, tt_val like) {
  tt_builder *b = tt_lc_builder(c);
  tt_shape s = tt_b_shape(b, like);
  tt_val lo = tt_lc_scalar(c, lower_arg, TT_F64), hi = tt_lc_scalar(c, lower_arg + 1, TT_F64);
  tt_val sl = mul(b, add(b, lo, hi), tt_b_constant(b, TT_F64, 0.5));
  return tt_b_broadcast_to(b, tt_b_convert(b, sl, s.dtype), s.ndim, s.dims);
}

static tt_error *lower_rrelu_with_noise(tt_lower_ctx *c) {
  if (tt_lc_bool(c, 4, false)) return tt_lc_decline(c, "rrelu in training mode (random slopes)");
  FLOAT_SELF(0);
  tt_val r = tt_b_convert(b, sel(b, cmp(b, "GT", x, K(b, x, 0)), x, mul(b, x, rrelu_slope(c, 2, x))), dt);
  /* destinations in argument order: in place (self, noise), out= (noise, out);
   * noise is left untouched in eval mode */
  const char *name = tt_lc_op_name(c);
  bool inplace = !strcmp(name, "rrelu_with_noise_"), out = !strcmp(name, "rrelu_with_noise.out");
  if (out) tt_lc_output_unchanged(c);
  tt_lc_output(c, r);
  if (inplace) tt_lc_output_unchanged(c);
  return NULL;
}

/* rrelu_with_noise_backward(grad, self, noise, lower, upper, training, self_is_result) */
static tt_error *lower_rrelu_with_noise_backward(tt_lower_ctx *c) {
  if (tt_lc_bool(c, 5, false)) return tt_lc_decline(c, "rrelu backward in training mode");
  TT_TRY(require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  return OUT(sel(b, cmp(b, "GT", x, K(b, x, 0)), g, mul(b, g, rrelu_slope(c, 3, x))));
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
  TT_TRY(require_float(c, 0));
  TT_TRY(glu_split(c, 0, 1, &dim));
  FLOAT_SELF(0);
  tt_val lo, hi;
  halves(b, x, dim, &lo, &hi);
  return OUT(mul(b, lo, f_sigmoid(b, hi)));
}

/* glu_backward(grad, self, dim): [grad * s, (1 - s) * s * grad * a] */
static tt_error *lower_glu_backward(tt_lower_ctx *c) {
  int64_t dim;
  TT_TRY(require_float(c, 0));
  TT_TRY(glu_split(c, 1, 2, &dim));
  FLOAT_SELF(1);
  tt_val g = read_as(c, 0, opmath(dt));
  tt_val lo, hi;
  halves(b, x, dim, &lo, &hi);
  tt_val s = f_sigmoid(b, hi);
  tt_val parts[2] = {mul(b, s, g), mul(b, mul(b, mul(b, sub(b, K(b, s, 1), s), s), g), lo)};
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
  tt_dtype cm = opmath(dt);
  tt_val x = tt_b_convert(b, tt_operand(c, 0, dt, nd, dims), cm);
  tt_val w = tt_b_convert(b, tt_operand(c, 1, dt, nd, dims), cm);
  return OUT(sel(b, cmp(b, "GT", x, K(b, x, 0)), x, mul(b, w, x)));
}

/* _prelu_kernel_backward(grad, self, weight) ->
 *   (x > 0 ? g : w g, x > 0 ? 0 : x g), both of the broadcast shape */
static tt_error *lower_prelu_kernel_backward(tt_lower_ctx *c) {
  int args[3] = {0, 1, 2}, nd;
  int64_t dims[TT_MAX_DIMS];
  tt_dtype dt;
  TT_TRY(prelu_setup(c, args, 3, &dt, &nd, dims));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype cm = opmath(dt);
  tt_val g = tt_b_convert(b, tt_operand(c, 0, dt, nd, dims), cm);
  tt_val x = tt_b_convert(b, tt_operand(c, 1, dt, nd, dims), cm);
  tt_val w = tt_b_convert(b, tt_operand(c, 2, dt, nd, dims), cm);
  tt_val pos = cmp(b, "GT", x, K(b, x, 0));
  tt_lc_output(c, tt_b_convert(b, sel(b, pos, g, mul(b, w, g)), dt));
  tt_lc_output(c, tt_b_convert(b, sel(b, pos, K(b, x, 0), mul(b, x, g)), dt));
  return NULL;
}

/* ------------------------------------------------------------ table */

#define FU(op) {lower_##op, {#op, #op "_", #op ".out"}}

TT_LOWERINGS(unary) = {
    FU(exp), FU(exp2), FU(expm1), FU(log), FU(log2), FU(log10), FU(log1p), FU(sqrt), FU(rsqrt),
    FU(sin), FU(cos), FU(tan), FU(asin), FU(acos), FU(atan), FU(sinh), FU(cosh), FU(tanh),
    FU(asinh), FU(acosh), FU(atanh), FU(sigmoid), FU(erf), FU(erfc), FU(erfinv), FU(reciprocal),
    FU(neg), FU(abs), FU(sign), FU(sgn), FU(floor), FU(ceil), FU(trunc), FU(frac),
    {lower_round, {"round", "round_", "round.out", "round.decimals", "round_.decimals",
                   "round.decimals_out"}},
    {lower_isnan, {"isnan", "isnan.out"}},
    {lower_isinf, {"isinf", "isinf.out"}},
    FU(nan_to_num), FU(logical_not), FU(bitwise_not), FU(relu),
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
    FU(sinc), FU(deg2rad), FU(rad2deg), FU(lgamma), FU(digamma),
    {lower_angle, {"angle", "angle.out"}},
    {lower_special_entr, {"special_entr", "special_entr.out"}},
    {lower_polygamma, {"polygamma", "polygamma_", "polygamma.out"}},
    FU(logit),
    {lower_logit_backward, {"logit_backward", "logit_backward.grad_input"}},
    {lower_signbit, {"signbit", "signbit.out"}},
    {lower_isposinf, {"isposinf", "isposinf.out"}},
    {lower_isneginf, {"isneginf", "isneginf.out"}},
    FU(i0),
    {lower_special_i0e, {"special_i0e", "special_i0e.out"}},
    {lower_special_i1, {"special_i1", "special_i1.out"}},
    {lower_special_i1e, {"special_i1e", "special_i1e.out"}},
    {lower_frexp, {"frexp.Tensor", "frexp.Tensor_out"}},
    {lower_special_ndtri, {"special_ndtri", "special_ndtri.out"}},
    {NULL, {NULL}},
};
