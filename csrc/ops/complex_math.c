/* Elementwise complex math as PyTorch's CPU kernels compute it: division
 * (c10::complex's scaled, numpy-style algorithm), the C99 Annex G
 * functions of glibc that std::exp, std::sinh, ... call (exp, sinh, cosh,
 * tanh, sin, cos, sqrt, log and the six inverse functions), c10's own
 * formulas (expm1, rsqrt, sgn) and std::abs, written over the real
 * components so that extremal inputs (0, -0, +-inf, nan, huge and tiny
 * parts) give CPU's values: stablehlo's own complex ops give NaNs where CPU
 * gives infinities, zeros or finite values, drop NaN parts (abs), and
 * ignore the sign of a zero on a branch cut (sqrt, asin, ...).
 *
 * The floating unary driver (unary_common.c) hands complex inputs to
 * tt_complex_apply, which picks the function below by the op's name, or
 * keeps the op's generic stablehlo lowering for ops not listed here
 * (log1p). Which ops accept complex tensors at all is op_props.c's list.
 * Known differences from CPU: XLA flushes subnormal results to zero, and
 * folds x + 0 to x, so some zero results carry the other sign. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/complex_math.h"

/* ------------------------------------------------------------ helpers */

typedef struct {
  tt_val re, im;
} cx;

static tt_val k(tt_builder *b, tt_val like, double v) { return tt_full_like(b, like, v); }
static tt_val sel(tt_builder *b, tt_val p, tt_val t, tt_val f) { return tt_b_select(b, p, t, f); }
static tt_val cmp(tt_builder *b, const char *dir, tt_val x, tt_val y) { return tt_b_compare(b, dir, x, y); }
static tt_val and_(tt_builder *b, tt_val p, tt_val q) { return tt_b_bin(b, TT_OP_AND, p, q); }
static tt_val or_(tt_builder *b, tt_val p, tt_val q) { return tt_b_bin(b, TT_OP_OR, p, q); }
static tt_val not_(tt_builder *b, tt_val p) { return tt_b_un(b, TT_OP_NOT, p); }
static tt_val fabs_(tt_builder *b, tt_val x) { return tt_b_un(b, TT_OP_ABS, x); }
static tt_val neg(tt_builder *b, tt_val x) { return tt_b_un(b, TT_OP_NEGATE, x); }
static tt_val is_nan(tt_builder *b, tt_val x) { return cmp(b, "NE", x, x); }
static tt_val is_inf(tt_builder *b, tt_val x) { return cmp(b, "EQ", fabs_(b, x), k(b, x, INFINITY)); }
static tt_val is_finite(tt_builder *b, tt_val x) { return cmp(b, "LT", fabs_(b, x), k(b, x, INFINITY)); }
static tt_val is_zero(tt_builder *b, tt_val x) { return cmp(b, "EQ", x, k(b, x, 0)); }

/* the sign bit of x (set for -0.0 and negative NaNs) */
static tt_val sign_bit(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  s.dtype = s.dtype == TT_F64 ? TT_I64 : TT_I32;
  return cmp(b, "LT", tt_b_bitcast(b, x, s), tt_b_full(b, s, 0));
}
/* copysign(|mag|, sgn) */
static tt_val copysign_(tt_builder *b, tt_val mag, tt_val sgn) {
  tt_val m = fabs_(b, mag);
  return sel(b, sign_bit(b, sgn), neg(b, m), m);
}

static bool is_f64(tt_builder *b, tt_val x) { return tt_b_dtype(b, x) == TT_F64; }
/* the component type's limits */
static double fmax_of(tt_builder *b, tt_val x) { return is_f64(b, x) ? DBL_MAX : FLT_MAX; }
static double fmin_of(tt_builder *b, tt_val x) { return is_f64(b, x) ? DBL_MIN : FLT_MIN; }
static double eps_of(tt_builder *b, tt_val x) { return is_f64(b, x) ? DBL_EPSILON : FLT_EPSILON; }
/* glibc's overflow threshold t = (int)((MAX_EXP - 1) * ln 2): 88 or 709 */
static double exp_t_of(tt_builder *b, tt_val x) { return is_f64(b, x) ? 709 : 88; }
/* e^v rounded to the component type (glibc's M_EXP(t)) */
static double exp_const(tt_builder *b, tt_val x, double v) {
  return is_f64(b, x) ? exp(v) : (double)expf((float)v);
}

/* sin(y), cos(y); (y, 1) for |y| below the least normal, as glibc */
static void sincos_(tt_builder *b, tt_val y, tt_val *s, tt_val *c) {
  tt_val tiny = cmp(b, "LE", fabs_(b, y), k(b, y, fmin_of(b, y)));
  *s = sel(b, tiny, y, tt_b_un(b, TT_OP_SINE, y));
  *c = sel(b, tiny, k(b, y, 1), tt_b_un(b, TT_OP_COSINE, y));
}

/* e^x * (c, s) for finite x without early overflow: x is reduced by t up to
 * twice, each time scaling (c, s) by e^t (glibc's order of products); past
 * 3t the result is MAX * (c, s). `first`: the factor of the first
 * reduction (e^t, or e^t / 2 for sinh and cosh). */
static cx scaled_exp(tt_builder *b, tt_val x, tt_val c, tt_val s, double first) {
  double t = exp_t_of(b, x), et = exp_const(b, x, t);
  tt_val kt = k(b, x, t);
  tt_val big = cmp(b, "GT", x, kt);
  x = sel(b, big, tt_sub(b, x, kt), x);
  c = sel(b, big, tt_mul(b, c, k(b, c, first)), c);
  s = sel(b, big, tt_mul(b, s, k(b, s, first)), s);
  big = cmp(b, "GT", x, kt);
  x = sel(b, big, tt_sub(b, x, kt), x);
  c = sel(b, big, tt_mul(b, c, k(b, c, et)), c);
  s = sel(b, big, tt_mul(b, s, k(b, s, et)), s);
  big = cmp(b, "GT", x, kt);
  tt_val ev = sel(b, big, k(b, x, fmax_of(b, x)), tt_b_un(b, TT_OP_EXPONENTIAL, x));
  return (cx){tt_mul(b, ev, c), tt_mul(b, ev, s)};
}

/* ------------------------------------------------------------ division */

/* (a + bi) / (c + di), c10::complex's algorithm (numpy's):
 *   |c| >= |d|, both 0: (a / |c|, b / |d|)  (infinities and NaNs)
 *   |c| >= |d|:  r = d / c, s = c + d r: ((a + b r) / s, (b - a r) / s)
 *   |c| <  |d|:  r = c / d, s = d + c r: ((a r + b) / s, (b r - a) / s)
 * c10 multiplies by 1 / s; dividing instead keeps that reciprocal from
 * being a subnormal, which XLA flushes to zero (1e20i / -3e38i gave 0).
 * For the same reason a ratio r = n / m that XLA flushed to 0 but CPU
 * keeps as a subnormal ((n 2^p) / m, p the mantissa width, is not 0)
 * multiplies as (v / m) * n: inf * r stays an infinity, not a NaN. */
static tt_val times_ratio(tt_builder *b, tt_val v, tt_val r, tt_val n, tt_val m) {
  tt_val scaled = tt_div(b, tt_mul(b, n, k(b, n, is_f64(b, n) ? 0x1p53 : 0x1p24)), m);
  tt_val flushed = and_(b, is_zero(b, r), not_(b, is_zero(b, scaled)));
  return sel(b, flushed, tt_mul(b, tt_div(b, v, m), n), tt_mul(b, v, r));
}

tt_val tt_complex_div(tt_builder *b, tt_val x, tt_val y) {
  tt_val a = tt_b_real(b, x), bb = tt_b_imag(b, x), c = tt_b_real(b, y), d = tt_b_imag(b, y);
  tt_val ac = fabs_(b, c), ad = fabs_(b, d);
  /* |c| >= |d| */
  tt_val r1 = tt_div(b, d, c), s1 = tt_add(b, c, tt_mul(b, d, r1));
  tt_val re1 = tt_div(b, tt_add(b, a, times_ratio(b, bb, r1, d, c)), s1);
  tt_val im1 = tt_div(b, tt_sub(b, bb, times_ratio(b, a, r1, d, c)), s1);
  tt_val both0 = and_(b, is_zero(b, ac), is_zero(b, ad));
  re1 = sel(b, both0, tt_div(b, a, ac), re1);
  im1 = sel(b, both0, tt_div(b, bb, ad), im1);
  /* |c| < |d| (also when either is NaN: the comparison is false) */
  tt_val r2 = tt_div(b, c, d), s2 = tt_add(b, d, tt_mul(b, c, r2));
  tt_val re2 = tt_div(b, tt_add(b, times_ratio(b, a, r2, c, d), bb), s2);
  tt_val im2 = tt_div(b, tt_sub(b, times_ratio(b, bb, r2, c, d), a), s2);
  tt_val ge = cmp(b, "GE", ac, ad);
  return tt_b_complex(b, sel(b, ge, re1, re2), sel(b, ge, im1, im2));
}

static tt_val cx_reciprocal(tt_builder *b, tt_val z) {
  return tt_complex_div(b, tt_b_constant_complex(b, tt_b_dtype(b, z), 1, 0), z);
}

/* ------------------------------------------------------------ exp */

/* glibc's cexp. Finite x: e^x (cos y, sin y), reduced as scaled_exp;
 * y 0 keeps its imaginary part exactly. Otherwise:
 *   x finite, y inf/nan: (nan, nan)
 *   x +inf: y 0: (inf, y); y finite: (copysign(inf, cos y), copysign(inf, sin y)); else (inf, nan)
 *   x -inf: y finite: (copysign(0, cos y), copysign(0, sin y)) (y 0: (0, y)); else (0, copysign(0, y))
 *   x nan: y 0: (nan, y); else (nan, nan) */
tt_val tt_complex_exp(tt_builder *b, tt_val z) {
  tt_val x = tt_b_real(b, z), y = tt_b_imag(b, z), s, c;
  sincos_(b, y, &s, &c);
  tt_val xf = sel(b, is_finite(b, x), x, k(b, x, 0)); /* keeps the finite path's ops finite */
  cx f = scaled_exp(b, xf, c, s, exp_const(b, x, exp_t_of(b, x)));
  tt_val nan = k(b, x, NAN), inf = k(b, x, INFINITY), zero = k(b, x, 0);
  tt_val yfin = is_finite(b, y), y0 = is_zero(b, y);
  /* x = +inf */
  tt_val pre = sel(b, yfin, sel(b, y0, inf, copysign_(b, inf, c)), inf);
  tt_val pim = sel(b, yfin, sel(b, y0, y, copysign_(b, inf, s)), nan);
  /* x = -inf */
  tt_val nre = sel(b, yfin, sel(b, y0, zero, copysign_(b, zero, c)), zero);
  tt_val nim = sel(b, yfin, sel(b, y0, y, copysign_(b, zero, s)), copysign_(b, zero, y));
  tt_val re = sel(b, yfin, f.re, nan), im = sel(b, yfin, f.im, nan);
  tt_val xpinf = cmp(b, "EQ", x, inf), xninf = cmp(b, "EQ", x, neg(b, inf)), xnan = is_nan(b, x);
  re = sel(b, xpinf, pre, sel(b, xninf, nre, sel(b, xnan, nan, re)));
  im = sel(b, xpinf, pim, sel(b, xninf, nim, sel(b, xnan, sel(b, y0, y, nan), im)));
  return tt_b_complex(b, re, im);
}

/* ------------------------------------------------------------ sinh, cosh */

/* sinh(a), cosh(a) of a finite a with |a| <= t: e^|a|/2 -+ e^-|a|/2, with
 * expm1 for |a| < 1 (sinh's cancellation); (a, 1) below the least normal. */
static void real_sinh_cosh(tt_builder *b, tt_val a, tt_val *sh, tt_val *ch) {
  tt_val aa = fabs_(b, a), half = k(b, a, 0.5);
  tt_val e = tt_b_un(b, TT_OP_EXPONENTIAL, aa);
  tt_val hp = tt_mul(b, half, e), hn = tt_div(b, half, e);
  tt_val big = copysign_(b, tt_sub(b, hp, hn), a);
  tt_val u = tt_b_un(b, TT_OP_EXPM1, a);
  tt_val small = tt_mul(b, half, tt_add(b, u, tt_div(b, u, tt_add(b, u, k(b, a, 1)))));
  tt_val tiny = cmp(b, "LE", aa, k(b, a, fmin_of(b, a)));
  *sh = sel(b, tiny, a, sel(b, cmp(b, "LT", aa, k(b, a, 1)), small, big));
  *ch = sel(b, tiny, k(b, a, 1), tt_add(b, hp, hn));
}

/* sinh (is_cosh false) or cosh of z, glibc's csinh/ccosh. Finite parts:
 *   sinh: (sinh x cos y, cosh x sin y); cosh: (cosh x cos y, sinh x sin y),
 * for |x| > t both e^|x|/2 (signed) reduced as scaled_exp. Otherwise, with
 * sx = sign(x):
 *   sinh, x finite, y inf/nan: x 0: (x, nan); else (nan, nan)
 *   sinh, x inf: y 0: (x, y); y finite: (sx copysign(inf, cos y), copysign(inf, sin y)); else (inf, nan)
 *   cosh, x finite, y inf/nan: (nan, x 0 ? 0 : nan)
 *   cosh, x inf: y 0: (inf, sx y); y finite: (copysign(inf, cos y), sx copysign(inf, sin y)); else (inf, nan)
 *   x nan: (nan, y 0 ? y : nan) */
static tt_val sinh_cosh(tt_builder *b, tt_val z, bool is_cosh) {
  tt_val x = tt_b_real(b, z), y = tt_b_imag(b, z), s, c;
  sincos_(b, y, &s, &c);
  tt_val xfin = is_finite(b, x), yfin = is_finite(b, y), y0 = is_zero(b, y), x0 = is_zero(b, x);
  tt_val xf = sel(b, xfin, x, k(b, x, 0));
  tt_val ax = fabs_(b, xf), sx = copysign_(b, k(b, x, 1), x);
  /* |x| > t: e^|x|/2 (cos y, sin y), then the odd component signed by x */
  cx big = scaled_exp(b, ax, c, s, exp_const(b, x, exp_t_of(b, x)) / 2);
  tt_val sh, ch;
  real_sinh_cosh(b, xf, &sh, &ch);
  tt_val re_small = tt_mul(b, is_cosh ? ch : sh, c), im_small = tt_mul(b, is_cosh ? sh : ch, s);
  tt_val re_big = is_cosh ? big.re : tt_mul(b, sx, big.re), im_big = is_cosh ? tt_mul(b, sx, big.im) : big.im;
  tt_val large = cmp(b, "GT", ax, k(b, x, exp_t_of(b, x)));
  tt_val re = sel(b, large, re_big, re_small), im = sel(b, large, im_big, im_small);
  tt_val nan = k(b, x, NAN), inf = k(b, x, INFINITY), zero = k(b, x, 0);
  /* x finite, y inf/nan */
  tt_val fre = is_cosh ? nan : sel(b, x0, x, nan);
  tt_val fim = is_cosh ? sel(b, x0, zero, nan) : nan;
  re = sel(b, yfin, re, fre);
  im = sel(b, yfin, im, fim);
  /* x inf */
  tt_val ire, iim;
  if (is_cosh) {
    ire = sel(b, yfin, sel(b, y0, inf, copysign_(b, inf, c)), inf);
    iim = sel(b, yfin, sel(b, y0, tt_mul(b, sx, y), tt_mul(b, sx, copysign_(b, inf, s))), nan);
  } else {
    ire = sel(b, yfin, sel(b, y0, x, tt_mul(b, sx, copysign_(b, inf, c))), inf);
    iim = sel(b, yfin, sel(b, y0, y, copysign_(b, inf, s)), nan);
  }
  tt_val xinf = is_inf(b, x), xnan = is_nan(b, x);
  re = sel(b, xinf, ire, sel(b, xnan, nan, re));
  im = sel(b, xinf, iim, sel(b, xnan, sel(b, y0, y, nan), im));
  return tt_b_complex(b, re, im);
}
static tt_val cx_sinh(tt_builder *b, tt_val z) { return sinh_cosh(b, z, false); }
static tt_val cx_cosh(tt_builder *b, tt_val z) { return sinh_cosh(b, z, true); }

/* ------------------------------------------------------------ tanh */

/* glibc's ctanh. Finite parts, T = t/2 (44 or 354):
 *   |x| > T: (sign x, 4 sin y cos y / e^2T / e^(2(|x| - T))) (the second
 *            factor e^2T again past 2T: underflow)
 *   else:    sh = sinh x, ch = cosh x, den = sh^2 + cos^2 y (cos^2 y alone
 *            when |sh| <= |cos y| eps): (sh ch / den, sin y cos y / den)
 * Otherwise:
 *   x inf: (sign x, copysign(0, |y| > 1 finite ? sin y cos y : y))
 *   x 0, y inf/nan: (x, nan);  y 0 (x nan): (x, y);  else (nan, nan) */
static tt_val cx_tanh(tt_builder *b, tt_val z) {
  tt_val x = tt_b_real(b, z), y = tt_b_imag(b, z), s, c;
  sincos_(b, y, &s, &c);
  tt_val xfin = is_finite(b, x), yfin = is_finite(b, y), y0 = is_zero(b, y), x0 = is_zero(b, x);
  tt_val xf = sel(b, xfin, x, k(b, x, 0)), ax = fabs_(b, xf), one = k(b, x, 1);
  tt_val sx = copysign_(b, one, x);
  double T = is_f64(b, x) ? 354 : 44, e2t = exp_const(b, x, 2 * T);
  tt_val sc = tt_mul(b, s, c);
  /* |x| > T */
  tt_val rest = tt_sub(b, ax, k(b, x, T));
  tt_val second = sel(b, cmp(b, "GT", rest, k(b, x, T)), k(b, x, e2t),
                      tt_b_un(b, TT_OP_EXPONENTIAL, tt_mul(b, k(b, x, 2), rest)));
  tt_val im_big = tt_div(b, tt_div(b, tt_mul(b, k(b, x, 4), sc), k(b, x, e2t)), second);
  /* |x| <= T */
  tt_val sh, ch;
  real_sinh_cosh(b, xf, &sh, &ch);
  tt_val cc = tt_mul(b, c, c);
  tt_val den = sel(b, cmp(b, "GT", fabs_(b, sh), tt_mul(b, fabs_(b, c), k(b, x, eps_of(b, x)))),
                   tt_add(b, tt_mul(b, sh, sh), cc), cc);
  tt_val re_small = tt_div(b, tt_mul(b, sh, ch), den), im_small = tt_div(b, sc, den);
  tt_val large = cmp(b, "GT", ax, k(b, x, T));
  tt_val re = sel(b, large, sx, re_small), im = sel(b, large, im_big, im_small);
  /* non-finite parts */
  tt_val nan = k(b, x, NAN), zero = k(b, x, 0);
  tt_val wide = and_(b, yfin, cmp(b, "GT", fabs_(b, y), one));
  tt_val iim = copysign_(b, zero, sel(b, wide, sc, y));
  tt_val ore = sel(b, x0, x, sel(b, y0, x, nan)), oim = sel(b, x0, nan, sel(b, y0, y, nan));
  tt_val finite = and_(b, xfin, yfin);
  tt_val xinf = is_inf(b, x);
  re = sel(b, finite, re, sel(b, xinf, sx, ore));
  im = sel(b, finite, im, sel(b, xinf, iim, oim));
  return tt_b_complex(b, re, im);
}

/* ------------------------------------------------------------ inverse functions */

/* The inverse functions are odd or conjugate-symmetric, and their branch
 * cuts lie on the axes, where CPU (glibc) picks the side by the sign of the
 * zero component. XLA's chlo ops are accurate (2e-7 relative for
 * complex64) but ignore that sign, and their special values differ from
 * C99's. So each is evaluated at (|x|, |y|), where a zero is +0, and the
 * signs are put back; inputs with an infinite or NaN part take C99 Annex
 * G's values. asin and atan are asinh and atanh rotated by i, acosh is
 * acos rotated. */

static cx parts(tt_builder *b, tt_val z) { return (cx){tt_b_real(b, z), tt_b_imag(b, z)}; }

static cx first_quadrant(tt_builder *b, tt_op op, tt_val x, tt_val y) {
  tt_val q = tt_b_complex(b, fabs_(b, x), fabs_(b, y));
  return parts(b, tt_b_emit1(b, op, &q, 1, NULL, tt_b_shape(b, q)));
}

/* asinh(x + iy), C99's values at (a, c) = (|x|, |y|) signed back:
 *   c inf: (inf, a finite ? pi/2 : a inf ? pi/4 : nan);  a inf: (inf, c finite ? 0 : nan)
 *   c nan: (nan, nan);  a nan: (nan, c 0 ? c : nan) */
static cx asinh_parts(tt_builder *b, tt_val x, tt_val y) {
  cx w = first_quadrant(b, TT_OP_CHLO_ASINH, x, y);
  tt_val a = fabs_(b, x), c = fabs_(b, y);
  tt_val nan = k(b, x, NAN), inf = k(b, x, INFINITY);
  tt_val cinf = is_inf(b, c), ainf = is_inf(b, a), afin = is_finite(b, a), cfin = is_finite(b, c);
  tt_val re = sel(b, or_(b, cinf, ainf), inf, sel(b, and_(b, afin, cfin), w.re, nan));
  tt_val im_cinf = sel(b, afin, k(b, x, M_PI_2), sel(b, ainf, k(b, x, M_PI_4), nan));
  tt_val im_ainf = sel(b, cfin, k(b, x, 0), nan);
  tt_val im_anan = sel(b, is_zero(b, c), c, nan);
  tt_val im = sel(b, cinf, im_cinf,
                  sel(b, ainf, im_ainf, sel(b, is_nan(b, c), nan, sel(b, is_nan(b, a), im_anan, w.im))));
  return (cx){copysign_(b, re, x), copysign_(b, im, y)};
}

/* atanh(x + iy), C99's values at (a, c) = (|x|, |y|) signed back:
 *   c inf: (0, pi/2);  a inf: (0, c finite ? pi/2 : nan)
 *   c nan: (a 0 ? 0 : nan, nan);  a nan: (nan, nan) */
static cx atanh_parts(tt_builder *b, tt_val x, tt_val y) {
  cx w = first_quadrant(b, TT_OP_CHLO_ATANH, x, y);
  tt_val a = fabs_(b, x), c = fabs_(b, y);
  /* Within ~sqrt(least normal) of 1, chlo's real part log1p(4a / ((1 -
   * a)^2 + c^2)) / 4 underflows its denominator to an infinity; there it
   * is log(2 / h) / 2 with h = hypot(1 - a, c), scaled by the larger. */
  tt_val d = fabs_(b, tt_sub(b, k(b, x, 1), a));
  tt_val m = tt_b_bin(b, TT_OP_MAXIMUM, d, c);
  tt_val ms = sel(b, is_zero(b, m), k(b, x, 1), m);
  tt_val dm = tt_div(b, d, ms), cm = tt_div(b, c, ms);
  tt_val h = tt_mul(b, ms, tt_b_un(b, TT_OP_SQRT, tt_add(b, tt_mul(b, dm, dm), tt_mul(b, cm, cm))));
  tt_val near_one = and_(b, cmp(b, "LT", m, k(b, x, is_f64(b, x) ? 1e-150 : 1e-18)), cmp(b, "GT", m, k(b, x, 0)));
  tt_val re_near = tt_mul(b, k(b, x, 0.5), tt_b_un(b, TT_OP_LOG, tt_div(b, k(b, x, 2), h)));
  w.re = sel(b, near_one, re_near, w.re);
  tt_val nan = k(b, x, NAN), zero = k(b, x, 0), half_pi = k(b, x, M_PI_2);
  tt_val cinf = is_inf(b, c), ainf = is_inf(b, a), cnan = is_nan(b, c), anan = is_nan(b, a);
  tt_val re = sel(b, or_(b, cinf, ainf), zero,
                  sel(b, cnan, sel(b, is_zero(b, a), zero, nan), sel(b, anan, nan, w.re)));
  tt_val im = sel(b, cinf, half_pi,
                  sel(b, ainf, sel(b, is_finite(b, c), half_pi, nan), sel(b, or_(b, cnan, anan), nan, w.im)));
  return (cx){copysign_(b, re, x), copysign_(b, im, y)};
}

static tt_val cx_asinh(tt_builder *b, tt_val z) {
  cx r = asinh_parts(b, tt_b_real(b, z), tt_b_imag(b, z));
  return tt_b_complex(b, r.re, r.im);
}
static tt_val cx_atanh(tt_builder *b, tt_val z) {
  cx r = atanh_parts(b, tt_b_real(b, z), tt_b_imag(b, z));
  return tt_b_complex(b, r.re, r.im);
}
/* asin(z) = -i asinh(iz): asinh(-y + ix) = (p, q) gives (q, -p); atan alike */
static cx asin_parts(tt_builder *b, tt_val x, tt_val y) {
  cx r = asinh_parts(b, neg(b, y), x);
  return (cx){r.im, neg(b, r.re)};
}
static tt_val cx_asin(tt_builder *b, tt_val z) {
  cx r = asin_parts(b, tt_b_real(b, z), tt_b_imag(b, z));
  return tt_b_complex(b, r.re, r.im);
}
static tt_val cx_atan(tt_builder *b, tt_val z) {
  cx r = atanh_parts(b, neg(b, tt_b_imag(b, z)), tt_b_real(b, z));
  return tt_b_complex(b, r.im, neg(b, r.re));
}

/* acos: (u, v) = acos(|x| + i|y|); x negative: (pi - u, v); y negative:
 * (., -v). An infinite or NaN part: (pi/2 - re asin z, -im asin z), as
 * glibc's cacos. */
static cx acos_parts(tt_builder *b, tt_val x, tt_val y) {
  cx w = first_quadrant(b, TT_OP_CHLO_ACOS, x, y);
  tt_val re = sel(b, sign_bit(b, x), tt_sub(b, k(b, x, M_PI), w.re), w.re);
  tt_val im = sel(b, sign_bit(b, y), neg(b, w.im), w.im);
  cx s = asin_parts(b, x, y);
  tt_val special = not_(b, and_(b, is_finite(b, x), is_finite(b, y)));
  return (cx){sel(b, special, tt_sub(b, k(b, x, M_PI_2), s.re), re), sel(b, special, neg(b, s.im), im)};
}
static tt_val cx_acos(tt_builder *b, tt_val z) {
  cx r = acos_parts(b, tt_b_real(b, z), tt_b_imag(b, z));
  return tt_b_complex(b, r.re, r.im);
}
/* acosh(z) = (|v|, copysign(u, y)) for (u, v) = acos(z): of the two
 * values +-i acos(z), the one with a non-negative real part */
static tt_val cx_acosh(tt_builder *b, tt_val z) {
  tt_val y = tt_b_imag(b, z);
  cx r = acos_parts(b, tt_b_real(b, z), y);
  return tt_b_complex(b, fabs_(b, r.im), copysign_(b, r.re, y));
}

/* ------------------------------------------------------------ abs, log, sqrt, sin, cos, expm1, sgn */

/* |z| as std::abs (hypot): inf if a part is infinite, else nan if a part
 * is nan; XLA's own abs drops a NaN part (|0.5 + nan i| gave 0.707). */
tt_val tt_complex_abs(tt_builder *b, tt_val z) {
  tt_val x = tt_b_real(b, z), y = tt_b_imag(b, z), m = tt_b_abs(b, z);
  tt_val anyinf = or_(b, is_inf(b, x), is_inf(b, y)), anynan = or_(b, is_nan(b, x), is_nan(b, y));
  return sel(b, anyinf, k(b, m, INFINITY), sel(b, anynan, k(b, m, NAN), m));
}

/* log: stablehlo's, except that a NaN part gives (nan, nan), or (inf, nan)
 * beside an infinite part (glibc's clog; XLA gave a finite real part). */
static tt_val cx_log(tt_builder *b, tt_val z) {
  tt_val x = tt_b_real(b, z), y = tt_b_imag(b, z);
  cx w = parts(b, tt_b_un(b, TT_OP_LOG, z));
  tt_val anyinf = or_(b, is_inf(b, x), is_inf(b, y)), anynan = or_(b, is_nan(b, x), is_nan(b, y));
  tt_val nan = k(b, x, NAN);
  tt_val re = sel(b, anyinf, k(b, x, INFINITY), sel(b, anynan, nan, w.re));
  return tt_b_complex(b, re, sel(b, anynan, nan, w.im));
}
static tt_val scaled_log(tt_builder *b, tt_val z, double f) {
  cx w = parts(b, cx_log(b, z));
  return tt_b_complex(b, tt_mul(b, w.re, k(b, w.re, f)), tt_mul(b, w.im, k(b, w.im, f)));
}
static tt_val cx_log2(tt_builder *b, tt_val z) { return scaled_log(b, z, 1 / M_LN2); }
static tt_val cx_log10(tt_builder *b, tt_val z) { return scaled_log(b, z, 1 / M_LN10); }

/* sqrt: stablehlo's at (x, |y|), the imaginary part signed by y (the cut
 * along the negative reals: sqrt(-4 - 0i) = -2i); glibc's csqrt values:
 *   y inf: (inf, y);  x -inf: (0, copysign(inf, y)) (y nan: (nan, inf));
 *   x +inf: (inf, copysign(0, y)) (y nan: (inf, nan));  other NaNs: (nan, nan) */
static tt_val cx_sqrt(tt_builder *b, tt_val z) {
  tt_val x = tt_b_real(b, z), y = tt_b_imag(b, z);
  tt_val q = tt_b_complex(b, x, fabs_(b, y));
  cx w = parts(b, tt_b_un(b, TT_OP_SQRT, q));
  tt_val inf = k(b, x, INFINITY), nan = k(b, x, NAN), zero = k(b, x, 0);
  tt_val re = w.re, im = copysign_(b, w.im, y);
  tt_val ynan = is_nan(b, y), anynan = or_(b, is_nan(b, x), ynan);
  re = sel(b, anynan, nan, re);
  im = sel(b, anynan, nan, im);
  tt_val xpinf = cmp(b, "EQ", x, inf), xninf = cmp(b, "EQ", x, neg(b, inf));
  re = sel(b, xpinf, inf, sel(b, xninf, sel(b, ynan, nan, zero), re));
  im = sel(b, xpinf, sel(b, ynan, nan, copysign_(b, zero, y)), sel(b, xninf, copysign_(b, inf, y), im));
  tt_val yinf = is_inf(b, y);
  return tt_b_complex(b, sel(b, yinf, inf, re), sel(b, yinf, y, im));
}
static tt_val cx_rsqrt(tt_builder *b, tt_val z) {
  return tt_complex_div(b, tt_b_constant_complex(b, tt_b_dtype(b, z), 1, 0), cx_sqrt(b, z));
}

/* sin(z) = -i sinh(iz), cos(z) = cosh(iz), as glibc's csin/ccos; csin
 * of an infinite or NaN x and an infinite y is (nan, +inf) */
static tt_val cx_sin(tt_builder *b, tt_val z) {
  tt_val x = tt_b_real(b, z), y = tt_b_imag(b, z);
  cx r = parts(b, sinh_cosh(b, tt_b_complex(b, neg(b, y), x), false));
  tt_val both = and_(b, not_(b, is_finite(b, x)), is_inf(b, y));
  return tt_b_complex(b, r.im, sel(b, both, k(b, y, INFINITY), neg(b, r.re)));
}
static tt_val cx_cos(tt_builder *b, tt_val z) {
  return sinh_cosh(b, tt_b_complex(b, neg(b, tt_b_imag(b, z)), tt_b_real(b, z)), true);
}

/* expm1, c10::complex's formula: (expm1(x) cos y - 2 sin(y/2)^2, e^x sin y) */
static tt_val cx_expm1(tt_builder *b, tt_val z) {
  tt_val x = tt_b_real(b, z), y = tt_b_imag(b, z);
  tt_val a = tt_b_un(b, TT_OP_SINE, tt_mul(b, y, k(b, y, 0.5)));
  tt_val re = tt_sub(b, tt_mul(b, tt_b_un(b, TT_OP_EXPM1, x), tt_b_un(b, TT_OP_COSINE, y)),
                     tt_mul(b, k(b, a, 2), tt_mul(b, a, a)));
  tt_val im = tt_mul(b, tt_b_un(b, TT_OP_EXPONENTIAL, x), tt_b_un(b, TT_OP_SINE, y));
  return tt_b_complex(b, re, im);
}

/* sgn: z / |z| part by part (0 where |z| is 0), as CPU's kernel */
tt_val tt_complex_sgn(tt_builder *b, tt_val z) {
  tt_val m = tt_complex_abs(b, z), zero = k(b, m, 0), at0 = is_zero(b, m);
  tt_val re = tt_div(b, tt_b_real(b, z), m), im = tt_div(b, tt_b_imag(b, z), m);
  return tt_b_complex(b, sel(b, at0, zero, re), sel(b, at0, zero, im));
}

/* ------------------------------------------------------------ predicates */

tt_val tt_complex_isnan(tt_builder *b, tt_val z) {
  return or_(b, is_nan(b, tt_b_real(b, z)), is_nan(b, tt_b_imag(b, z)));
}
tt_val tt_complex_isinf(tt_builder *b, tt_val z) {
  return or_(b, is_inf(b, tt_b_real(b, z)), is_inf(b, tt_b_imag(b, z)));
}
tt_val tt_complex_isfinite(tt_builder *b, tt_val z) {
  return not_(b, or_(b, not_(b, is_finite(b, tt_b_real(b, z))), not_(b, is_finite(b, tt_b_imag(b, z)))));
}

/* ------------------------------------------------------------ dispatch */

static const struct {
  const char *base;
  tt_val (*fn)(tt_builder *, tt_val);
} functions[] = {
    {"exp", tt_complex_exp}, {"sinh", cx_sinh},  {"cosh", cx_cosh},
    {"tanh", cx_tanh},       {"reciprocal", cx_reciprocal}, {"asin", cx_asin},
    {"acos", cx_acos},       {"atan", cx_atan},   {"asinh", cx_asinh},
    {"acosh", cx_acosh},     {"atanh", cx_atanh}, {"log", cx_log},
    {"log2", cx_log2},       {"log10", cx_log10}, {"sqrt", cx_sqrt},
    {"rsqrt", cx_rsqrt},     {"sin", cx_sin},     {"cos", cx_cos},
    {"expm1", cx_expm1},
};

tt_val tt_complex_apply(tt_builder *b, const char *op_name, tt_val (*generic)(tt_builder *, tt_val), tt_val z) {
  size_t n = strcspn(op_name, "._");
  for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++)
    if (strlen(functions[i].base) == n && memcmp(functions[i].base, op_name, n) == 0)
      return functions[i].fn(b, z);
  return generic(b, z);
}
