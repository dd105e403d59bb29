/* The Hurwitz zeta function zeta(x, q) = sum_{k >= 0} (q + k)^-x
 * (special.zeta, and polygamma for n >= 2 through
 * psi^(n)(q) = (-1)^(n+1) n! zeta(n + 1, q)), computed as PyTorch's CPU
 * kernel defines it, in float64:
 *   x == 1 -> inf; x < 1 -> NaN; q <= 0: an integer q -> inf, else a
 *   non-integer x -> NaN (an integer x sums the terms of either sign);
 *   otherwise the terms k = 0 .. N directly, N the first k >= 9 with
 *   q + k > 9, then the Euler-Maclaurin tail at w = q + N:
 *   w^(1-x)/(x-1) - w^-x/2 + sum_j B_2j/(2j)! x(x+1)..(x+2j-2) w^(-x-2j+1)
 *   (12 terms; past w > 9 they fall below float64 precision long before).
 * N depends on q, so the direct sum is a stablehlo.while over k = 1 ..
 * max(N), each element adding its term while k <= N. */
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ops/common.h"
#include "ops/unary_common.h"

static atomic_int zeta_serial; /* unique SSA names inside the loop regions */


/* s + sum_{k=1..max(n)} [k <= n] (q + k)^-x per element (all float64 of one
 * shape; n holds whole numbers). */
static tt_val direct_terms(tt_builder *b, tt_val s0, tt_val q, tt_val negx, tt_val n) {
  tt_shape fs = tt_b_shape(b, q);
  int64_t all[TT_MAX_DIMS];
  for (int i = 0; i < fs.ndim; i++) all[i] = i;
  tt_val m = tt_b_convert(b, tt_reduce_max(b, n, all, fs.ndim), TT_I64);
  char T[96], B[96], p[24];
  tt_shape_print(&fs, T, sizeof T);
  tt_shape bs = fs;
  bs.dtype = TT_BOOL;
  tt_shape_print(&bs, B, sizeof B);
  snprintf(p, sizeof p, "zeta%d_", atomic_fetch_add(&zeta_serial, 1));
  char region[6144];
  tt_region_text t = {region, sizeof region, 0};
  const char *args = "    ^bb0(%%%sj: tensor<i64>, %%%ss: %s, %%%sq: %s, %%%sx: %s, %%%sn: %s, %%%sm: tensor<i64>):\n";
  tt_region_text_add(&t, args, p, p, T, p, T, p, T, p, T, p);
  tt_region_text_add(&t, "      %%%sc = \"stablehlo.compare\"(%%%sj, %%%sm) {comparison_direction = "
           "#stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type SIGNED>} : "
           "(tensor<i64>, tensor<i64>) -> tensor<i1>\n", p, p, p);
  tt_region_text_add(&t, "      \"stablehlo.return\"(%%%sc) : (tensor<i1>) -> ()\n    }, {\n", p);
  tt_region_text_add(&t, args, p, p, T, p, T, p, T, p, T, p);
  tt_region_text_add(&t, "      %%%sk0 = \"stablehlo.convert\"(%%%sj) : (tensor<i64>) -> tensor<f64>\n", p, p);
  tt_region_text_add(&t, "      %%%sk = \"stablehlo.broadcast_in_dim\"(%%%sk0) {broadcast_dimensions = array<i64>} : "
           "(tensor<f64>) -> %s\n", p, p, T);
  tt_region_text_add(&t, "      %%%sa = \"stablehlo.add\"(%%%sq, %%%sk) : (%s, %s) -> %s\n", p, p, p, T, T, T);
  tt_region_text_add(&t, "      %%%st = \"stablehlo.power\"(%%%sa, %%%sx) : (%s, %s) -> %s\n", p, p, p, T, T, T);
  tt_region_text_add(&t, "      %%%ss1 = \"stablehlo.add\"(%%%ss, %%%st) : (%s, %s) -> %s\n", p, p, p, T, T, T);
  tt_region_text_add(&t, "      %%%sact = \"stablehlo.compare\"(%%%sk, %%%sn) {comparison_direction = "
           "#stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type FLOAT>} : "
           "(%s, %s) -> %s\n", p, p, p, T, T, B);
  tt_region_text_add(&t, "      %%%ss2 = \"stablehlo.select\"(%%%sact, %%%ss1, %%%ss) : (%s, %s, %s) -> %s\n", p, p, p, p, B, T,
       T, T);
  tt_region_text_add(&t, "      %%%sone = \"stablehlo.constant\"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>\n", p);
  tt_region_text_add(&t, "      %%%sj2 = \"stablehlo.add\"(%%%sj, %%%sone) : (tensor<i64>, tensor<i64>) -> tensor<i64>\n", p,
       p, p);
  tt_region_text_add(&t, "      \"stablehlo.return\"(%%%sj2, %%%ss2, %%%sq, %%%sx, %%%sn, %%%sm) : (tensor<i64>, %s, %s, %s, %s, "
           "tensor<i64>) -> ()", p, p, p, p, p, p, T, T, T, T);
  if (t.off >= t.size) return tt_b_fail(b, TT_ERR_RUNTIME, "internal: zeta loop text too long");
  tt_val ins[6] = {tt_b_constant(b, TT_I64, 1), s0, q, negx, n, m}, res[6];
  tt_shape outs[6] = {tt_shape_scalar(TT_I64), fs, fs, fs, fs, tt_shape_scalar(TT_I64)};
  if (!tt_b_op_multi(b, "stablehlo.while", ins, 6, NULL, region, outs, 6, res)) return TT_INVALID;
  return res[1];
}

/* (2j)! / B_2j for j = 1 .. 12, from the Bernoulli numbers B_2j = num/den. */
static double em_denominator(int j) {
  static const double num[12] = {1, -1, 1, -1, 5, -691, 7, -3617, 43867, -174611, 854513, -236364091};
  static const double den[12] = {6, 30, 42, 30, 66, 2730, 6, 510, 798, 330, 138, 2730};
  double f = 1;
  for (int i = 2; i <= 2 * j; i++) f *= i;
  return f * den[j - 1] / num[j - 1];
}

/* zeta(x, q) elementwise; x and q float64 of one shape. */
tt_val tt_hurwitz_zeta(tt_builder *b, tt_val x, tt_val q) {
  tt_val one = uc_K(b, x, 1), zero = uc_K(b, x, 0), nine = uc_K(b, x, 9);
  tt_val negx = uc_un(b, "negate", x);
  /* N = max(9, floor(9 - q) + 1); 9 where q is not finite or the value is
   * a special case (no loop needed) */
  tt_val q_int = uc_cmp(b, "EQ", uc_un(b, "floor", q), q);
  tt_val x_int = uc_cmp(b, "EQ", uc_un(b, "floor", x), x);
  tt_val nonpos = uc_cmp(b, "LE", q, zero);
  tt_val pole = tt_b_binary(b, "and", nonpos, q_int);
  tt_val nan_q = tt_b_binary(b, "and", nonpos, tt_b_unary(b, "not", x_int));
  tt_val special = tt_b_binary(b, "or", tt_b_binary(b, "or", pole, nan_q),
                               tt_b_unary(b, "not", uc_cmp(b, "LT", uc_un(b, "abs", q), uc_K(b, q, INFINITY))));
  tt_val n = uc_add(b, uc_un(b, "floor", uc_sub(b, nine, q)), one);
  n = uc_sel(b, tt_b_binary(b, "or", special, uc_cmp(b, "LT", n, nine)), nine, n);
  tt_val s = direct_terms(b, tt_b_binary(b, "power", q, negx), q, negx, n);
  /* Euler-Maclaurin tail at w = q + N, bw = w^-x (the last term summed) */
  tt_val w = uc_add(b, q, n);
  tt_val bw = tt_b_binary(b, "power", w, negx);
  s = uc_add(b, s, uc_dvd(b, uc_mul(b, bw, w), uc_sub(b, x, one)));
  s = uc_sub(b, s, uc_mul(b, uc_K(b, x, 0.5), bw));
  tt_val a = one, k = zero;
  for (int j = 1; j <= 12; j++) {
    a = uc_mul(b, a, uc_add(b, x, k));
    bw = uc_dvd(b, bw, w);
    s = uc_add(b, s, uc_dvd(b, uc_mul(b, a, bw), uc_K(b, x, em_denominator(j))));
    k = uc_add(b, k, one);
    a = uc_mul(b, a, uc_add(b, x, k));
    bw = uc_dvd(b, bw, w);
  }
  s = uc_sel(b, nan_q, uc_K(b, x, NAN), s);
  s = uc_sel(b, pole, uc_K(b, x, INFINITY), s);
  s = uc_sel(b, uc_cmp(b, "LT", x, one), uc_K(b, x, NAN), s);
  return uc_sel(b, uc_cmp(b, "EQ", x, one), uc_K(b, x, INFINITY), s);
}

/* special_zeta(self = x, other = q), with Scalar forms of either side:
 * float result by type promotion (integers -> float32). */
static tt_error *lower_special_zeta(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  int args[2] = {0, 1}, nd;
  int64_t dims[TT_MAX_DIMS];
  tt_dtype dt = tt_result_type(c, args, 2);
  if (!tt_dtype_is_floating(dt)) dt = TT_DEFAULT_FLOAT;
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  tt_val x = tt_operand(c, 0, TT_F64, nd, dims);
  tt_val q = tt_operand(c, 1, TT_F64, nd, dims);
  /* CPU rounds the operands to the result dtype first */
  x = tt_b_convert(b, tt_b_convert(b, x, dt), TT_F64);
  q = tt_b_convert(b, tt_b_convert(b, q, dt), TT_F64);
  tt_lc_output(c, tt_b_convert(b, tt_hurwitz_zeta(b, x, q), dt));
  return NULL;
}

TT_LOWERINGS(special_zeta) = {
    {lower_special_zeta,
     {"special_zeta", "special_zeta.out", "special_zeta.self_scalar", "special_zeta.self_scalar_out",
      "special_zeta.other_scalar", "special_zeta.other_scalar_out"}},
    {NULL, {NULL}},
};
