/* Special and miscellaneous floating functions (see lowering.h): sinc,
 * deg2rad/rad2deg, the gamma family (lgamma, digamma, trigamma, polygamma),
 * entr, angle, the modified Bessel functions i0/i0e/i1/i1e, frexp, ndtri,
 * erfcx, log_ndtr and logit (with its backward). Same dtype rules as unary.c. */

#include <math.h>
#include <string.h>

#include "ops/unary_common.h"


/* sinc: x == 0 ? 1 : sin(pi x) / (pi x) */
static tt_val f_sinc(tt_builder *b, tt_val x) {
  tt_val px = tt_mul(b, tt_full_like(b, x, M_PI), x);
  return uc_sel(b, uc_cmp(b, "EQ", x, tt_full_like(b, x, 0)), tt_full_like(b, x, 1), tt_div(b, uc_un(b, TT_OP_SINE, px), px));
}
static tt_val f_deg2rad(tt_builder *b, tt_val x) { return tt_mul(b, x, tt_full_like(b, x, M_PI / 180.0)); }
static tt_val f_rad2deg(tt_builder *b, tt_val x) { return tt_mul(b, x, tt_full_like(b, x, 180.0 / M_PI)); }
static tt_val f_lgamma(tt_builder *b, tt_val x) { return uc_chlo(b, TT_OP_CHLO_LGAMMA, x); }
/* is x a non-positive integer (a pole of the gamma function)? */
static tt_val gamma_pole(tt_builder *b, tt_val x) {
  return tt_b_bin(b, TT_OP_AND, uc_cmp(b, "LE", x, tt_full_like(b, x, 0)), uc_cmp(b, "EQ", uc_un(b, TT_OP_FLOOR, x), x));
}
/* digamma: +-0 -> -+inf, negative integers -> NaN, like PyTorch's calc_digamma */
static tt_val f_digamma(tt_builder *b, tt_val x) {
  tt_val r = uc_chlo(b, TT_OP_CHLO_DIGAMMA, x);
  tt_val zero = tt_full_like(b, x, 0);
  tt_val z = uc_sel(b, uc_cmp(b, "LT", uc_copysign_one(b, x), zero), tt_full_like(b, x, INFINITY), tt_full_like(b, x, -INFINITY));
  r = uc_sel(b, gamma_pole(b, x), tt_full_like(b, x, NAN), r);
  return uc_sel(b, uc_cmp(b, "EQ", x, zero), z, r);
}
/* entr: x > 0 ? -x log x : x == 0 ? 0 : -inf; NaN stays */
static tt_val f_special_entr(tt_builder *b, tt_val x) {
  tt_val zero = tt_full_like(b, x, 0);
  tt_val r = uc_sel(b, uc_cmp(b, "EQ", x, zero), zero, tt_full_like(b, x, -INFINITY));
  r = uc_sel(b, uc_cmp(b, "GT", x, zero), uc_un(b, TT_OP_NEGATE, tt_mul(b, x, uc_un(b, TT_OP_LOG, x))), r);
  return uc_sel(b, uc_cmp(b, "NE", x, x), x, r);
}
/* angle of a real number: NaN stays, x < 0 -> pi, else 0 */
static tt_val f_angle(tt_builder *b, tt_val x) {
  tt_val r = uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)), tt_full_like(b, x, M_PI), tt_full_like(b, x, 0));
  return uc_sel(b, uc_cmp(b, "NE", x, x), x, r);
}

FLOAT_UNARY(sinc)
FLOAT_UNARY(deg2rad)
FLOAT_UNARY(rad2deg)
FLOAT_UNARY(lgamma)
FLOAT_UNARY(digamma)
FLOAT_UNARY(special_entr)
/* complex: atan2(imag, real), a real result */
static tt_error *lower_angle(tt_lower_ctx *c) {
  if (!tt_dtype_is_complex(uc_arg_dtype(c, 0))) return uc_float_unary(c, f_angle);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_lc_tensor(c, 0);
  tt_lc_output(c, tt_b_bin(b, TT_OP_ATAN2, tt_b_imag(b, x), tt_b_real(b, x)));
  return NULL;
}

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
  tt_val b0 = tt_full_like(b, y, coef[0]), b1 = tt_full_like(b, y, 0), b2 = b1;
  for (int i = 1; i < n; i++) {
    b2 = b1;
    b1 = b0;
    b0 = tt_add(b, tt_sub(b, tt_mul(b, y, b1), b2), tt_full_like(b, y, coef[i]));
  }
  return tt_mul(b, tt_full_like(b, y, 0.5), tt_sub(b, b0, b2));
}

/* The scaled function of |x| (exp(-|x|) I(|x|)), order 0 or 1, without the sign. */
static tt_val bessel_scaled(tt_builder *b, tt_val ax, int order) {
  bool f32 = tt_b_dtype(b, ax) != TT_F64;
  const double *A = order ? I1E_A : I0E_A, *B = order ? I1E_B : I0E_B;
  int na = order ? 29 : 30, nb = 25;
  if (order && f32) A += 12, na = 17, B += 18, nb = 7;
  tt_val y_lo = tt_sub(b, tt_div(b, ax, tt_full_like(b, ax, 2)), tt_full_like(b, ax, 2));
  tt_val lo = chebyshev(b, y_lo, A, na);
  if (order) lo = tt_mul(b, lo, ax);
  tt_val y_hi = tt_sub(b, tt_div(b, tt_full_like(b, ax, 32), ax), tt_full_like(b, ax, 2));
  tt_val hi = tt_div(b, chebyshev(b, y_hi, B, nb), uc_un(b, TT_OP_SQRT, ax));
  return uc_sel(b, uc_cmp(b, "LE", ax, tt_full_like(b, ax, 8)), lo, hi);
}

static tt_val bessel(tt_builder *b, tt_val x, int order, bool scaled) {
  tt_val ax = uc_un(b, TT_OP_ABS, x);
  tt_val r = bessel_scaled(b, ax, order);
  if (!scaled) r = tt_mul(b, order ? uc_un(b, TT_OP_EXPONENTIAL, ax) : uc_un(b, TT_OP_EXPONENTIAL, ax), r);
  if (order) r = uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)), uc_un(b, TT_OP_NEGATE, r), r);
  return r;
}
static tt_val f_i0(tt_builder *b, tt_val x) { return bessel(b, x, 0, false); }
static tt_val f_special_i0e(tt_builder *b, tt_val x) { return bessel(b, x, 0, true); }
static tt_val f_special_i1(tt_builder *b, tt_val x) { return bessel(b, x, 1, false); }
static tt_val f_special_i1e(tt_builder *b, tt_val x) { return bessel(b, x, 1, true); }
/* special.modified_bessel_i1: the same expansion with the full coefficient
 * sets at every precision, combined in CPU's order (0.5 (a - p)) |x| e^|x|
 * below 8 and e^|x| (0.5 (b - p)) / sqrt|x| above. (modified_bessel_i0 is
 * i0 exactly, also on CPU.) */
static tt_val f_special_modified_bessel_i1(tt_builder *b, tt_val x) {
  tt_val ax = uc_un(b, TT_OP_ABS, x), e = uc_un(b, TT_OP_EXPONENTIAL, ax);
  tt_val y_lo = tt_sub(b, tt_div(b, ax, tt_full_like(b, ax, 2)), tt_full_like(b, ax, 2));
  tt_val lo = tt_mul(b, tt_mul(b, chebyshev(b, y_lo, I1E_A, 29), ax), e);
  tt_val y_hi = tt_sub(b, tt_div(b, tt_full_like(b, ax, 32), ax), tt_full_like(b, ax, 2));
  tt_val hi = tt_div(b, tt_mul(b, e, chebyshev(b, y_hi, I1E_B, 25)), uc_un(b, TT_OP_SQRT, ax));
  tt_val r = uc_sel(b, uc_cmp(b, "LE", ax, tt_full_like(b, ax, 8)), lo, hi);
  return uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)), uc_un(b, TT_OP_NEGATE, r), r);
}
/* Modified Bessel functions of the second kind K0, K1 (and e^x K): Cephes'
 * Chebyshev expansions in x^2 - 2 on (0, 2] (with the log(x/2) I term) and
 * in 8/x - 2 above, as PyTorch's kernels; K(0) = inf, K(x < 0) = NaN. */
static const double K0_A[] = {1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
                              1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
                              1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
                              -5.35327393233902768720e-01};
static const double K0_B[] = {
    5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
    -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
    6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
    -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
    1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
    -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
    2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
    -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
    2.44030308206595545468e+00};
static const double K1_A[] = {-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
                              -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
                              -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
                              -3.53155960776544875667e-01, 1.52530022733894777053e+00};
static const double K1_B[] = {
    -5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
    1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
    -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
    3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
    -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
    2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
    -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
    1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
    2.72062619048444266945e+00};

static tt_val bessel_k(tt_builder *b, tt_val x, int order, bool scaled) {
  tt_val lx = uc_un(b, TT_OP_LOG, tt_mul(b, tt_full_like(b, x, 0.5), x));
  tt_val ylo = tt_sub(b, tt_mul(b, x, x), tt_full_like(b, x, 2));
  tt_val lo;
  if (order == 0) {
    lo = tt_sub(b, chebyshev(b, ylo, K0_A, 10), tt_mul(b, lx, bessel(b, x, 0, false)));
  } else {
    lo = tt_add(b, tt_mul(b, lx, f_special_modified_bessel_i1(b, x)),
                tt_div(b, chebyshev(b, ylo, K1_A, 11), x));
  }
  tt_val yhi = tt_sub(b, tt_div(b, tt_full_like(b, x, 8), x), tt_full_like(b, x, 2));
  tt_val hi = chebyshev(b, yhi, order ? K1_B : K0_B, 25);
  if (scaled) {
    lo = tt_mul(b, lo, uc_un(b, TT_OP_EXPONENTIAL, x));
    hi = tt_div(b, hi, uc_un(b, TT_OP_SQRT, x));
  } else {
    hi = tt_div(b, tt_mul(b, uc_un(b, TT_OP_EXPONENTIAL, uc_un(b, TT_OP_NEGATE, x)), hi), uc_un(b, TT_OP_SQRT, x));
  }
  tt_val r = uc_sel(b, uc_cmp(b, "LE", x, tt_full_like(b, x, 2)), lo, hi);
  r = uc_sel(b, uc_cmp(b, "EQ", x, tt_full_like(b, x, 0)), tt_full_like(b, x, INFINITY), r);
  return uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)), tt_full_like(b, x, NAN), r);
}
static tt_val f_special_modified_bessel_k0(tt_builder *b, tt_val x) { return bessel_k(b, x, 0, false); }
static tt_val f_special_modified_bessel_k1(tt_builder *b, tt_val x) { return bessel_k(b, x, 1, false); }
static tt_val f_special_scaled_modified_bessel_k0(tt_builder *b, tt_val x) { return bessel_k(b, x, 0, true); }
static tt_val f_special_scaled_modified_bessel_k1(tt_builder *b, tt_val x) { return bessel_k(b, x, 1, true); }
FLOAT_UNARY(special_modified_bessel_k0)
FLOAT_UNARY(special_modified_bessel_k1)
FLOAT_UNARY(special_scaled_modified_bessel_k0)
FLOAT_UNARY(special_scaled_modified_bessel_k1)

FLOAT_UNARY(i0)
FLOAT_UNARY(special_modified_bessel_i1)
FLOAT_UNARY(special_i0e)
FLOAT_UNARY(special_i1)
FLOAT_UNARY(special_i1e)

/* frexp(self) -> (mantissa in [0.5, 1), int32 exponent), computed on the
 * bit pattern only (the XLA CPU runtime flushes subnormal floats to zero in
 * arithmetic and comparisons; bit operations keep them). Subnormals are
 * normalized with count_leading_zeros; 0, inf and NaN give (x, 0) like
 * std::frexp. */
static tt_error *lower_frexp(tt_lower_ctx *c) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  if (!tt_dtype_is_floating(dt))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "torch.frexp() only supports floating-point dtypes");
  /* frexp.Tensor_out: ATen wants the mantissa in the input's dtype and the
   * exponent in int32 exactly (no casting of the results) */
  const tt_tensor_ref *mo = tt_lc_nargs(c) > 2 ? tt_lc_ref(c, 1) : NULL;
  const tt_tensor_ref *eo = tt_lc_nargs(c) > 2 ? tt_lc_ref(c, 2) : NULL;
  if (mo && mo->dtype != dt)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "torch.frexp() expects mantissa to have dtype %s but got %s",
                      tt_dtype_torch_name(dt), tt_dtype_torch_name(mo->dtype));
  if (eo && eo->dtype != TT_I32)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "torch.frexp() expects exponent to have int dtype but got %s",
                      tt_dtype_torch_name(eo->dtype));
  tt_builder *b = tt_lc_builder(c);
  tt_val x = uc_read_as(c, 0, dt);
  int mbits = dt == TT_F64 ? 52 : dt == TT_F32 ? 23 : dt == TT_F16 ? 10 : 7;
  int width = dt == TT_F64 ? 64 : dt == TT_F32 ? 32 : 16;
  int64_t emask = dt == TT_F64 ? 0x7ff : dt == TT_F16 ? 0x1f : 0xff;
  int64_t bias = dt == TT_F64 ? 1022 : dt == TT_F16 ? 14 : 126;
  int64_t mmask = (INT64_C(1) << mbits) - 1;
  tt_shape is = tt_b_shape(b, x);
  is.dtype = dt == TT_F64 ? TT_I64 : dt == TT_F32 ? TT_I32 : TT_I16;
#define IK(v) tt_b_broadcast_to(b, tt_b_constant_int(b, is.dtype, (v)), is.ndim, is.dims)
  tt_val bits = tt_b_bitcast(b, x, is);
  tt_val e = tt_b_bin(b, TT_OP_AND, tt_b_bin(b, TT_OP_SHIFT_RIGHT_LOGICAL, bits, IK(mbits)), IK(emask));
  tt_val m = tt_b_bin(b, TT_OP_AND, bits, IK(mmask));
  tt_val sign = tt_b_bin(b, TT_OP_AND, bits, IK(INT64_MIN >> (64 - width)));
  /* normal: exponent e - bias, mantissa bits m */
  tt_val ex_n = tt_sub(b, e, IK(bias));
  /* subnormal: leading one of m at p = width - 1 - clz(m) */
  tt_val p = tt_sub(b, IK(width - 1), uc_un(b, TT_OP_CLZ, m));
  tt_val ex_s = tt_sub(b, tt_add(b, p, IK(1)), IK(bias + mbits));
  tt_val m_s = tt_b_bin(b, TT_OP_AND, tt_b_bin(b, TT_OP_SHIFT_LEFT, m, tt_sub(b, IK(mbits), p)), IK(mmask));
  tt_val is_sub = uc_cmp(b, "EQ", e, IK(0));
  tt_val mant_bits = tt_b_bin(b, TT_OP_OR, tt_b_bin(b, TT_OP_OR, sign, IK(bias << mbits)),
                                 uc_sel(b, is_sub, m_s, m));
  tt_val ex = uc_sel(b, is_sub, ex_s, ex_n);
  tt_val special = tt_b_bin(b, TT_OP_OR, uc_cmp(b, "EQ", e, IK(emask)),
                               tt_b_bin(b, TT_OP_AND, is_sub, uc_cmp(b, "EQ", m, IK(0))));
#undef IK
  tt_lc_output(c, uc_sel(b, special, x, tt_b_bitcast(b, mant_bits, tt_b_shape(b, x))));
  tt_lc_output(c, tt_b_convert(b, uc_sel(b, special, tt_b_full(b, is, 0), ex), TT_I32));
  return NULL;
}

/* trigamma as PyTorch's calc_trigamma: reflection below 0.5, six shifted
 * terms, then the asymptotic series. */
static tt_val f_trigamma(tt_builder *b, tt_val x0) {
  tt_val one = tt_full_like(b, x0, 1);
  tt_val refl = uc_cmp(b, "LT", x0, tt_full_like(b, x0, 0.5));
  tt_val sp = uc_un(b, TT_OP_SINE, tt_mul(b, tt_full_like(b, x0, M_PI), x0));
  tt_val result = uc_sel(b, refl, uc_un(b, TT_OP_NEGATE, tt_div(b, tt_full_like(b, x0, M_PI * M_PI), tt_mul(b, sp, sp))),
                      tt_full_like(b, x0, 0));
  tt_val x = uc_sel(b, refl, tt_sub(b, one, x0), x0);
  for (int i = 0; i < 6; i++) {
    result = tt_add(b, result, tt_div(b, one, tt_mul(b, x, x)));
    x = tt_add(b, x, one);
  }
  tt_val ixx = tt_div(b, one, tt_mul(b, x, x));
  tt_val poly = tt_mul(b, ixx, tt_sub(b, tt_full_like(b, x, 1.0 / 6), tt_mul(b, ixx, tt_sub(b, tt_full_like(b, x, 1.0 / 30),
                                                                   tt_mul(b, ixx, tt_full_like(b, x, 1.0 / 42))))));
  tt_val series = tt_div(b, tt_add(b, tt_add(b, one, tt_div(b, one, tt_mul(b, tt_full_like(b, x, 2), x))), poly), x);
  result = tt_add(b, result, series);
  return uc_sel(b, refl, uc_un(b, TT_OP_NEGATE, result), result);
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
  tt_val r = tt_full_like(b, x, coef[0]);
  for (int i = 1; i <= n; i++) r = tt_add(b, tt_mul(b, r, x), tt_full_like(b, x, coef[i]));
  return r;
}

static tt_val f_special_ndtri(tt_builder *b, tt_val y0) {
  const double e2 = 0.13533528323661269189; /* exp(-2) */
  tt_val one = tt_full_like(b, y0, 1), zero = tt_full_like(b, y0, 0);
  tt_val flip = uc_cmp(b, "GT", y0, tt_full_like(b, y0, 1 - e2));
  tt_val y = uc_sel(b, flip, tt_sub(b, one, y0), y0);
  /* central: |y - 0.5| <= 3/8 */
  tt_val yc = tt_sub(b, y0, tt_full_like(b, y0, 0.5));
  tt_val y2 = tt_mul(b, yc, yc);
  tt_val xc = tt_add(b, yc, tt_mul(b, yc, tt_div(b, tt_mul(b, y2, horner(b, y2, NDTRI_P0, 4)),
                                        horner(b, y2, NDTRI_Q0, 8))));
  xc = tt_mul(b, xc, tt_full_like(b, y0, 2.50662827463100050242E0));
  /* tails */
  tt_val x = uc_un(b, TT_OP_SQRT, tt_mul(b, tt_full_like(b, y, -2), uc_un(b, TT_OP_LOG, y)));
  tt_val x0 = tt_sub(b, x, tt_div(b, uc_un(b, TT_OP_LOG, x), x));
  tt_val z = tt_div(b, one, x);
  tt_val r1 = tt_div(b, horner(b, z, NDTRI_P1, 8), horner(b, z, NDTRI_Q1, 8));
  tt_val r2 = tt_div(b, horner(b, z, NDTRI_P2, 8), horner(b, z, NDTRI_Q2, 8));
  tt_val x1 = tt_mul(b, z, uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 8)), r1, r2));
  tt_val xt = tt_sub(b, x0, x1);
  xt = uc_sel(b, flip, xt, uc_un(b, TT_OP_NEGATE, xt));
  tt_val r = uc_sel(b, uc_cmp(b, "GT", y, tt_full_like(b, y, e2)), xc, xt);
  r = uc_sel(b, tt_b_bin(b, TT_OP_OR, uc_cmp(b, "LT", y0, zero), uc_cmp(b, "GT", y0, one)), tt_full_like(b, y0, NAN), r);
  r = uc_sel(b, uc_cmp(b, "EQ", y0, one), tt_full_like(b, y0, INFINITY), r);
  return uc_sel(b, uc_cmp(b, "EQ", y0, zero), tt_full_like(b, y0, -INFINITY), r);
}
FLOAT_UNARY(special_ndtri)

/* erfcx(x) = exp(x^2) erfc(x), in float64 whatever the dtype, rounded once:
 * for 0 <= x <= 10 the product itself (erfc keeps its relative accuracy
 * and exp(x^2) stays finite); above 10 the asymptotic series
 * 1/(x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k (8 terms, error below
 * 1e-12); for x < 0, 2 exp(x^2) - erfcx(-x), which overflows to inf past
 * x ~ -26.6 as CPU's does. CPU squares x there in the tensor's dtype dt
 * (float32: a relative error of x^2 eps, 5e-6 at x = -9.4, past the float32
 * tolerance): x^2 is rounded to dt the same way. */
static tt_val erfcx64(tt_builder *b, tt_val x, tt_dtype dt) {
  tt_val ax = uc_un(b, TT_OP_ABS, x), one = tt_full_like(b, x, 1);
  tt_val small = tt_mul(b, uc_un(b, TT_OP_EXPONENTIAL, tt_mul(b, ax, ax)), uc_chlo(b, TT_OP_CHLO_ERFC, ax));
  tt_val big = uc_sel(b, uc_cmp(b, "GT", ax, tt_full_like(b, x, 10)), ax, tt_full_like(b, x, 10)); /* keeps the unused lane finite */
  tt_val inv2x2 = tt_div(b, one, tt_mul(b, tt_full_like(b, x, 2), tt_mul(b, big, big)));
  tt_val sum = one, term = one;
  for (int k = 1; k <= 8; k++) {
    term = tt_mul(b, term, tt_mul(b, tt_full_like(b, x, -(2.0 * k - 1)), inv2x2));
    sum = tt_add(b, sum, term);
  }
  tt_val asym = tt_div(b, sum, tt_mul(b, big, tt_full_like(b, x, sqrt(M_PI))));
  tt_val pos = uc_sel(b, uc_cmp(b, "GT", ax, tt_full_like(b, x, 10)), asym, small);
  tt_val x2 = tt_b_convert(b, tt_b_convert(b, tt_mul(b, x, x), dt), TT_F64);
  tt_val neg = tt_sub(b, tt_mul(b, tt_full_like(b, x, 2), uc_un(b, TT_OP_EXPONENTIAL, x2)), pos);
  tt_val r = uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)), neg, pos);
  r = uc_sel(b, uc_cmp(b, "EQ", ax, tt_full_like(b, x, INFINITY)), uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)),
                                                                   tt_full_like(b, x, INFINITY), tt_full_like(b, x, 0)), r);
  return r;
}
/* log_ndtr(x) = log(Phi(x)): log1p(-erfc(x/sqrt2)/2) from x = -1 up, and
 * log(erfcx(-x/sqrt2)/2) - x^2/2 below (no underflow), in float64. */
static tt_val log_ndtr64(tt_builder *b, tt_val x) { /* x float64 */
  tt_val t = tt_mul(b, x, tt_full_like(b, x, M_SQRT1_2));
  tt_val hi = uc_un(b, TT_OP_LOG1P, tt_mul(b, tt_full_like(b, x, -0.5), uc_chlo(b, TT_OP_CHLO_ERFC, t)));
  tt_val lo = tt_sub(b, uc_un(b, TT_OP_LOG, tt_mul(b, tt_full_like(b, x, 0.5), erfcx64(b, uc_un(b, TT_OP_NEGATE, t), TT_F64))),
                     tt_mul(b, t, t));
  tt_val r = uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, -1)), lo, hi);
  return uc_sel(b, uc_cmp(b, "EQ", x, tt_full_like(b, x, -INFINITY)), tt_full_like(b, x, -INFINITY), r);
}
static tt_val f_special_erfcx(tt_builder *b, tt_val x) {
  return tt_b_convert(b, erfcx64(b, tt_b_convert(b, x, TT_F64), tt_b_dtype(b, x)), tt_b_dtype(b, x));
}
static tt_val f_special_log_ndtr(tt_builder *b, tt_val x) {
  return tt_b_convert(b, log_ndtr64(b, tt_b_convert(b, x, TT_F64)), tt_b_dtype(b, x));
}
/* CPU has no float16/bfloat16 kernels: those go to CPU (and its error) */
static tt_error *no_half(tt_lower_ctx *c, unary_fn f) {
  tt_dtype dt = uc_arg_dtype(c, 0);
  if (tt_dtype_is_half(dt)) return tt_lc_decline(c, "%s has no %s kernel", tt_lc_op_name(c), tt_dtype_name(dt));
  return uc_float_unary(c, f);
}
static tt_error *lower_special_erfcx(tt_lower_ctx *c) { return no_half(c, f_special_erfcx); }
static tt_error *lower_special_log_ndtr(tt_lower_ctx *c) { return no_half(c, f_special_log_ndtr); }

/* polygamma(n, self) (in place: polygamma_(self, n)). n = 0 is digamma. */
static tt_error *lower_polygamma(tt_lower_ctx *c) {
  bool n_first = tt_lc_kind(c, 0) == TT_ARG_INT;
  int xi = n_first ? 1 : 0;
  int64_t n = tt_lc_int(c, n_first ? 0 : 1, 0);
  if (n < 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "polygamma(n, x) does not support negative n.");
  tt_builder *b = tt_lc_builder(c);
  tt_dtype out = uc_float_result(uc_arg_dtype(c, xi));
  tt_val x = uc_read_as(c, xi, tt_opmath(out)), r;
  if (n == 0) r = f_digamma(b, x);
  else if (n == 1) r = f_trigamma(b, x);
  else { /* (-1)^(n+1) n! zeta(n + 1, x): the zeta in float64, rounded to the
          * result dtype, then scaled there, like CPU */
    double fact = 1;
    for (int64_t i = 2; i <= n; i++) fact *= (double)i;
    tt_val x64 = tt_b_convert(b, x, TT_F64);
    tt_val z = tt_b_convert(b, tt_b_convert(b, tt_hurwitz_zeta(b, tt_full_like(b, x64, (double)(n + 1)), x64), out),
                            tt_opmath(out));
    r = tt_mul(b, tt_full_like(b, z, (n % 2 ? 1.0 : -1.0) * fact), z);
  }
  tt_lc_output(c, tt_b_convert(b, r, out));
  return NULL;
}

/* logit(self, eps=None): log(z / (1 - z)), z = clamp(x, eps, 1 - eps) when eps >= 0 */
static double logit_eps(tt_lower_ctx *c, int i) {
  return tt_lc_nargs(c) > i && !tt_lc_is_none(c, i) ? tt_lc_double(c, i, -1.0) : -1.0;
}

static tt_error *lower_logit(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype out = uc_float_result(uc_arg_dtype(c, 0));
  tt_dtype cm = tt_opmath(out);
  tt_val x = uc_read_as(c, 0, cm);
  double eps = logit_eps(c, 1);
  if (eps >= 0) {
    /* lo = eps, hi = 1 - eps, both rounded to the tensor dtype */
    tt_val lo = tt_b_convert(b, tt_b_convert(b, tt_full_like(b, x, eps), out), cm);
    tt_val hi = tt_b_convert(b, tt_b_convert(b, tt_full_like(b, x, 1 - eps), out), cm);
    x = uc_sel(b, uc_cmp(b, "LT", x, lo), lo, uc_sel(b, uc_cmp(b, "GT", x, hi), hi, x));
  }
  /* PyTorch's CPU kernel computes 1 - x and the quotient in the tensor's
   * dtype: for float16/bfloat16 each step rounds (only log runs in float). */
  tt_val one_minus = tt_b_convert(b, tt_b_convert(b, tt_sub(b, tt_full_like(b, x, 1), x), out), cm);
  tt_val q = tt_b_convert(b, tt_b_convert(b, tt_div(b, x, one_minus), out), cm);
  tt_val r = uc_un(b, TT_OP_LOG, q);
  tt_lc_output(c, tt_b_convert(b, r, out));
  return NULL;
}

/* logit_backward(grad, self, eps): outside [lo, hi] -> 0 (eps >= 0) or NaN
 * (outside [0, 1], eps < 0); else grad / (x (1 - x)) */
static tt_error *lower_logit_backward(tt_lower_ctx *c) {
  TT_TRY(uc_require_float(c, 0));
  FLOAT_SELF(1);
  tt_val g = uc_read_as(c, 0, tt_opmath(dt));
  double eps = logit_eps(c, 2);
  tt_val r = tt_div(b, g, tt_mul(b, x, tt_sub(b, tt_full_like(b, x, 1), x)));
  tt_val lo, hi;
  if (eps >= 0) {
    lo = tt_b_convert(b, tt_b_convert(b, tt_full_like(b, x, eps), dt), tt_opmath(dt));
    hi = tt_b_convert(b, tt_b_convert(b, tt_full_like(b, x, 1 - eps), dt), tt_opmath(dt));
  } else {
    lo = tt_full_like(b, x, 0);
    hi = tt_full_like(b, x, 1);
  }
  tt_val outside = tt_b_bin(b, TT_OP_OR, uc_cmp(b, "LT", x, lo), uc_cmp(b, "GT", x, hi));
  return OUT(uc_sel(b, outside, tt_full_like(b, x, eps >= 0 ? 0.0 : NAN), r));
}

/* ------------------------------------------------------------ table */

TT_LOWERINGS(special) = {
    FU(sinc), FU(deg2rad), FU(rad2deg), FU(lgamma), FU(digamma),
    {lower_angle, {"angle", "angle.out"}},
    {lower_special_entr, {"special_entr", "special_entr.out"}},
    {lower_polygamma, {"polygamma", "polygamma_", "polygamma.out"}},
    FU(logit),
    {lower_logit_backward, {"logit_backward", "logit_backward.grad_input"}},
    FU(i0),
    {lower_i0, {"special_modified_bessel_i0", "special_modified_bessel_i0.out"}},
    {lower_special_modified_bessel_i1, {"special_modified_bessel_i1", "special_modified_bessel_i1.out"}},
    {lower_special_modified_bessel_k0, {"special_modified_bessel_k0", "special_modified_bessel_k0.out"}},
    {lower_special_modified_bessel_k1, {"special_modified_bessel_k1", "special_modified_bessel_k1.out"}},
    {lower_special_scaled_modified_bessel_k0,
     {"special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k0.out"}},
    {lower_special_scaled_modified_bessel_k1,
     {"special_scaled_modified_bessel_k1", "special_scaled_modified_bessel_k1.out"}},
    {lower_special_i0e, {"special_i0e", "special_i0e.out"}},
    {lower_special_i1, {"special_i1", "special_i1.out"}},
    {lower_special_i1e, {"special_i1e", "special_i1e.out"}},
    {lower_frexp, {"frexp.Tensor", "frexp.Tensor_out"}},
    {lower_special_ndtri, {"special_ndtri", "special_ndtri.out"}},
    {lower_special_erfcx, {"special_erfcx", "special_erfcx.out"}},
    {lower_special_log_ndtr, {"special_log_ndtr", "special_log_ndtr.out"}},
    {NULL, {NULL}},
};
