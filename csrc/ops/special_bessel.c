/* Bessel functions of the first and second kind, orders 0 and 1
 * (special.bessel_j0/j1/y0/y1), and the spherical j0: Cephes' rational
 * approximations (|x| <= 5) and asymptotic forms (above), evaluated in the
 * same order as PyTorch's CPU kernels so float32 results agree with them.
 * Same dtype rules as unary.c (float16/bfloat16 compute in float32). */
#include <math.h>

#include "ops/unary_common.h"

static const double J0_PP[] = {7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
                               5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
                               9.99999999999999997821e-01};
static const double J0_PQ[] = {9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
                               5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
                               1.00000000000000000218e+00};
static const double J0_QP[] = {-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
                               -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
                               -5.14105326766599330220e+01, -6.05014350600728481186e+00};
static const double J0_QQ[] = {6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
                               7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
                               2.42005740240291393179e+02};
static const double J0_RP[] = {-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
                               9.70862251047306323952e+15};
static const double J0_RQ[] = {4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
                               1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
                               3.18121955943204943306e+16, 1.71086294081043136091e+18};
static const double Y0_YP[] = {1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
                               -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
                               4.42733268572569800351e+16, -1.84950800436986690637e+16};
static const double Y0_YQ[] = {1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
                               8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
                               2.50596256172653059228e+17};
static const double J1_PP[] = {7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
                               5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
                               1.00000000000000000254e+00};
static const double J1_PQ[] = {5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
                               5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
                               9.99999999999999997461e-01};
static const double J1_QP[] = {5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
                               3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
                               2.11688757100572135698e+02, 2.52070205858023719784e+01};
static const double J1_QQ[] = {7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
                               9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
                               3.36093607810698293419e+02};
static const double J1_RP[] = {-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
                               3.68295732863852883286e+15};
static const double J1_RQ[] = {6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
                               2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
                               8.95222336184627338078e+16, 5.32278620332680085395e+18};
static const double Y1_YP[] = {1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
                               -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17};
static const double Y1_YQ[] = {5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
                               1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
                               6.87141087355300489866e+16, 3.97270608116560655612e+18};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SQ2OPI 0.797884560802865355879892119868763737
#define TWOOPI 0.636619772367581343075535053490057448

/* Horner from the first coefficient: r = r * z + k[i], r starting at 0. */
static tt_val polevl(tt_builder *b, tt_val z, const double *k, int n) {
  tt_val r = tt_full_like(b, z, 0);
  for (int i = 0; i < n; i++) r = tt_add(b, tt_mul(b, r, z), tt_full_like(b, z, k[i]));
  return r;
}

/* The asymptotic form for x > 5 (order 0: phase pi/4, w = 25 / x^2;
 * order 1: 3 pi / 4, w = (5 / x)^2): (P cos - 5/x Q sin) for j, (P sin +
 * 5/x Q cos) for y, times sqrt(2/pi) / sqrt(x). */
static tt_val bessel_far(tt_builder *b, tt_val x, int order, bool second_kind) {
  tt_val w;
  if (order == 0) {
    w = tt_div(b, tt_full_like(b, x, 25), tt_mul(b, x, x));
  } else {
    tt_val f = tt_div(b, tt_full_like(b, x, 5), x);
    w = tt_mul(b, f, f);
  }
  tt_val p = tt_div(b, polevl(b, w, order ? J1_PP : J0_PP, 7), polevl(b, w, order ? J1_PQ : J0_PQ, 7));
  tt_val q = tt_div(b, polevl(b, w, order ? J1_QP : J0_QP, 8), polevl(b, w, order ? J1_QQ : J0_QQ, 7));
  tt_val xn = tt_sub(b, x, tt_full_like(b, x, order ? 2.356194490192344928846982537459627163
                                            : 0.785398163397448309615660845819875721));
  tt_val s = uc_un(b, TT_OP_SINE, xn), co = uc_un(b, TT_OP_COSINE, xn);
  tt_val fq = tt_mul(b, tt_div(b, tt_full_like(b, x, 5), x), q);
  tt_val v = second_kind ? tt_add(b, tt_mul(b, p, s), tt_mul(b, fq, co))
                         : tt_sub(b, tt_mul(b, p, co), tt_mul(b, fq, s));
  return tt_div(b, tt_mul(b, v, tt_full_like(b, x, SQ2OPI)), uc_un(b, TT_OP_SQRT, x));
}

static tt_val j0_of_abs(tt_builder *b, tt_val x) {
  tt_val z = tt_mul(b, x, x);
  tt_val near = tt_div(b, tt_mul(b, tt_mul(b, tt_sub(b, z, tt_full_like(b, x, 5.78318596294678452118e+00)),
                                           tt_sub(b, z, tt_full_like(b, x, 3.04712623436620863991e+01))),
                                 polevl(b, z, J0_RP, 4)),
                       polevl(b, z, J0_RQ, 8));
  tt_val tiny = tt_sub(b, tt_full_like(b, x, 1), tt_div(b, z, tt_full_like(b, x, 4)));
  near = uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 1e-5)), tiny, near);
  return uc_sel(b, uc_cmp(b, "LE", x, tt_full_like(b, x, 5)), near, bessel_far(b, x, 0, false));
}
static tt_val f_special_bessel_j0(tt_builder *b, tt_val x) { return j0_of_abs(b, uc_un(b, TT_OP_ABS, x)); }

static tt_val j1_of_abs(tt_builder *b, tt_val x) {
  tt_val z = tt_mul(b, x, x);
  tt_val near = tt_mul(b, tt_mul(b, tt_mul(b, tt_div(b, polevl(b, z, J1_RP, 4), polevl(b, z, J1_RQ, 8)), x),
                                 tt_sub(b, z, tt_full_like(b, x, 1.46819706421238932572e+01))),
                       tt_sub(b, z, tt_full_like(b, x, 4.92184563216946036703e+01)));
  return uc_sel(b, uc_cmp(b, "LE", x, tt_full_like(b, x, 5)), near, bessel_far(b, x, 1, false));
}
/* j1 is odd: j1(x) = -j1(-x) */
static tt_val f_special_bessel_j1(tt_builder *b, tt_val x) {
  tt_val r = j1_of_abs(b, uc_un(b, TT_OP_ABS, x));
  return uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)), uc_un(b, TT_OP_NEGATE, r), r);
}

/* y0, y1: -inf at 0, NaN below */
static tt_val y_edges(tt_builder *b, tt_val x, tt_val r) {
  r = uc_sel(b, uc_cmp(b, "EQ", x, tt_full_like(b, x, 0)), tt_full_like(b, x, -INFINITY), r);
  return uc_sel(b, uc_cmp(b, "LT", x, tt_full_like(b, x, 0)), tt_full_like(b, x, NAN), r);
}
static tt_val f_special_bessel_y0(tt_builder *b, tt_val x) {
  tt_val z = tt_mul(b, x, x);
  tt_val near = tt_add(b, tt_div(b, polevl(b, z, Y0_YP, 8), polevl(b, z, Y0_YQ, 7)),
                       tt_mul(b, tt_mul(b, tt_full_like(b, x, TWOOPI), uc_un(b, TT_OP_LOG, x)), j0_of_abs(b, x)));
  return y_edges(b, x, uc_sel(b, uc_cmp(b, "LE", x, tt_full_like(b, x, 5)), near, bessel_far(b, x, 0, true)));
}
static tt_val f_special_bessel_y1(tt_builder *b, tt_val x) {
  tt_val z = tt_mul(b, x, x);
  tt_val jl = tt_sub(b, tt_mul(b, j1_of_abs(b, x), uc_un(b, TT_OP_LOG, x)), tt_div(b, tt_full_like(b, x, 1), x));
  tt_val near = tt_add(b, tt_mul(b, x, tt_div(b, polevl(b, z, Y1_YP, 6), polevl(b, z, Y1_YQ, 8))),
                       tt_mul(b, tt_full_like(b, x, TWOOPI), jl));
  return y_edges(b, x, uc_sel(b, uc_cmp(b, "LE", x, tt_full_like(b, x, 5)), near, bessel_far(b, x, 1, true)));
}

/* spherical j0 = sin(x) / x; a Taylor polynomial below |x| = 0.5; 0 at +-inf */
static tt_val f_special_spherical_bessel_j0(tt_builder *b, tt_val x) {
  static const double T[] = {-1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362880.0, -1.0 / 39916800.0,
                             1.0 / 6227020800.0};
  tt_val z = tt_mul(b, x, x);
  tt_val t = tt_full_like(b, x, T[5]);
  for (int i = 4; i >= 0; i--) t = tt_add(b, tt_full_like(b, x, T[i]), tt_mul(b, z, t));
  tt_val small = tt_add(b, tt_full_like(b, x, 1), tt_mul(b, z, t));
  tt_val r = uc_sel(b, uc_cmp(b, "LT", uc_un(b, TT_OP_ABS, x), tt_full_like(b, x, 0.5)), small,
                    tt_div(b, uc_un(b, TT_OP_SINE, x), x));
  return uc_sel(b, uc_cmp(b, "EQ", uc_un(b, TT_OP_ABS, x), tt_full_like(b, x, INFINITY)), tt_full_like(b, x, 0), r);
}

FLOAT_UNARY(special_bessel_j0)
FLOAT_UNARY(special_bessel_j1)
FLOAT_UNARY(special_bessel_y0)
FLOAT_UNARY(special_bessel_y1)
FLOAT_UNARY(special_spherical_bessel_j0)

#define SP(op) {lower_##op, {#op, #op ".out"}}
TT_LOWERINGS(special_bessel) = {
    SP(special_bessel_j0), SP(special_bessel_j1), SP(special_bessel_y0), SP(special_bessel_y1),
    SP(special_spherical_bessel_j0), {NULL, {NULL}},
};
