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

#include "ops/common.h"
#include "ops/unary_common.h"

/* s + sum_{k=1..max(n)} [k <= n] (q + k)^-x per element (all float64 of one
 * shape; n holds whole numbers). The loop carries (k, s, q, -x, n, max n). */
static tt_val direct_terms(tt_builder *b, tt_val s0, tt_val q, tt_val negx, tt_val n) {
  tt_shape fs = tt_b_shape(b, q);
  int64_t all[TT_MAX_DIMS];
  for (int i = 0; i < fs.ndim; i++) all[i] = i;
  tt_val m = tt_b_convert(b, tt_reduce_max(b, n, all, fs.ndim), TT_I64);
  tt_val init[6] = {tt_b_constant(b, TT_I64, 1), s0, q, negx, n, m}, v[6], res[6];
  if (!tt_b_while_begin(b, init, 6, v)) return TT_INVALID;
  if (!tt_b_while_body(b, tt_b_compare(b, "LE", v[0], v[5]), v)) return TT_INVALID;
  tt_val k = tt_b_broadcast_in_dim(b, tt_b_convert(b, v[0], TT_F64), fs.ndim, fs.dims, NULL);
  tt_val term = tt_b_bin(b, TT_OP_POWER, tt_add(b, v[2], k), v[3]);
  tt_val s = uc_sel(b, uc_cmp(b, "LE", k, v[4]), tt_add(b, v[1], term), v[1]);
  tt_val next[6] = {tt_add(b, v[0], tt_b_constant(b, TT_I64, 1)), s, v[2], v[3], v[4], v[5]};
  if (!tt_b_while_end(b, next, res)) return TT_INVALID;
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
  tt_val one = tt_full_like(b, x, 1), zero = tt_full_like(b, x, 0), nine = tt_full_like(b, x, 9);
  tt_val negx = uc_un(b, TT_OP_NEGATE, x);
  /* N = max(9, floor(9 - q) + 1); 9 where q is not finite or the value is
   * a special case (no loop needed) */
  tt_val q_int = uc_cmp(b, "EQ", uc_un(b, TT_OP_FLOOR, q), q);
  tt_val x_int = uc_cmp(b, "EQ", uc_un(b, TT_OP_FLOOR, x), x);
  tt_val nonpos = uc_cmp(b, "LE", q, zero);
  tt_val pole = tt_b_bin(b, TT_OP_AND, nonpos, q_int);
  tt_val nan_q = tt_b_bin(b, TT_OP_AND, nonpos, tt_b_un(b, TT_OP_NOT, x_int));
  tt_val special = tt_b_bin(b, TT_OP_OR, tt_b_bin(b, TT_OP_OR, pole, nan_q),
                               tt_b_un(b, TT_OP_NOT, uc_cmp(b, "LT", uc_un(b, TT_OP_ABS, q), tt_full_like(b, q, INFINITY))));
  tt_val n = tt_add(b, uc_un(b, TT_OP_FLOOR, tt_sub(b, nine, q)), one);
  n = uc_sel(b, tt_b_bin(b, TT_OP_OR, special, uc_cmp(b, "LT", n, nine)), nine, n);
  tt_val s = direct_terms(b, tt_b_bin(b, TT_OP_POWER, q, negx), q, negx, n);
  /* Euler-Maclaurin tail at w = q + N, bw = w^-x (the last term summed) */
  tt_val w = tt_add(b, q, n);
  tt_val bw = tt_b_bin(b, TT_OP_POWER, w, negx);
  s = tt_add(b, s, tt_div(b, tt_mul(b, bw, w), tt_sub(b, x, one)));
  s = tt_sub(b, s, tt_mul(b, tt_full_like(b, x, 0.5), bw));
  tt_val a = one, k = zero;
  for (int j = 1; j <= 12; j++) {
    a = tt_mul(b, a, tt_add(b, x, k));
    bw = tt_div(b, bw, w);
    s = tt_add(b, s, tt_div(b, tt_mul(b, a, bw), tt_full_like(b, x, em_denominator(j))));
    k = tt_add(b, k, one);
    a = tt_mul(b, a, tt_add(b, x, k));
    bw = tt_div(b, bw, w);
  }
  s = uc_sel(b, nan_q, tt_full_like(b, x, NAN), s);
  s = uc_sel(b, pole, tt_full_like(b, x, INFINITY), s);
  s = uc_sel(b, uc_cmp(b, "LT", x, one), tt_full_like(b, x, NAN), s);
  return uc_sel(b, uc_cmp(b, "EQ", x, one), tt_full_like(b, x, INFINITY), s);
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
