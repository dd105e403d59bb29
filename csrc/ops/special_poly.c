/* The orthogonal polynomial families of torch.special: Chebyshev T/U/V/W,
 * shifted Chebyshev T/U/V/W, Hermite H/He, Laguerre L and Legendre P, as
 * PyTorch's CPU kernels compute them: n truncated to an integer, special
 * values at the interval ends, the trigonometric closed forms for large n
 * inside (-1, 1) (Chebyshev), and otherwise the three-term recurrence run
 * n - 1 times. The recurrence length depends on the data, so it is a
 * stablehlo.while over k = 1 .. max(n) - 1, each element updating only
 * while k < n. Float32/float64 results; CPU computes these in the result
 * dtype (float16/bfloat16 go to CPU). */
#include <math.h>

#include "ops/common.h"
#include "ops/unary_common.h"

typedef enum {
  CHEB_T, CHEB_U, CHEB_V, CHEB_W, SCHEB_T, SCHEB_U, SCHEB_V, SCHEB_W, HERM_H, HERM_HE, LAGUERRE,
  LEGENDRE
} poly_kind;

/* One recurrence step r(x, p, q, k) of the family (k the step number as a
 * tensor like x). */
static tt_val step(tt_builder *b, poly_kind kind, tt_val x, tt_val p, tt_val q, tt_val k, tt_val one) {
  tt_val xx = tt_add(b, x, x);
  switch (kind) {
    case CHEB_T: case CHEB_U: case CHEB_V: case CHEB_W: /* (x + x) q - p */
      return tt_sub(b, tt_mul(b, xx, q), p);
    case SCHEB_T: case SCHEB_U: case SCHEB_V: case SCHEB_W: { /* y = x + x - 1: (y + y) q - p */
      tt_val y = tt_sub(b, xx, one);
      return tt_sub(b, tt_mul(b, tt_add(b, y, y), q), p);
    }
    case HERM_H: { /* (x + x) q - 2k p */
      tt_val k2 = tt_add(b, k, k);
      tt_val u = tt_mul(b, xx, q);
      return tt_sub(b, u, tt_mul(b, k2, p));
    }
    case HERM_HE: { /* x q - k p */
      tt_val u = tt_mul(b, x, q);
      return tt_sub(b, u, tt_mul(b, k, p));
    }
    case LAGUERRE: { /* ((k + k) + (1 - x)) q - k p) / (k + 1) */
      tt_val k2 = tt_add(b, k, k);
      tt_val a = tt_add(b, k2, tt_sub(b, one, x));
      tt_val u = tt_mul(b, a, q);
      tt_val w = tt_sub(b, u, tt_mul(b, k, p));
      return tt_div(b, w, tt_add(b, k, one));
    }
    case LEGENDRE: { /* ((k + k + 1) x q - k p) / (k + 1) */
      tt_val a = tt_mul(b, tt_add(b, tt_add(b, k, k), one), x);
      tt_val u = tt_mul(b, a, q);
      tt_val w = tt_sub(b, u, tt_mul(b, k, p));
      return tt_div(b, w, tt_add(b, k, one));
    }
  }
  return TT_INVALID;
}

/* q after the recurrence steps k = 1 .. n-1 from (p0, q0), per element. The
 * loop carries (k, p, q, x, n, max n - 1). */
static tt_val recurrence(tt_builder *b, poly_kind kind, tt_val x, tt_val ni, tt_val p0, tt_val q0) {
  tt_shape xs = tt_b_shape(b, x), ns = tt_b_shape(b, ni);
  int64_t all[TT_MAX_DIMS];
  for (int i = 0; i < xs.ndim; i++) all[i] = i;
  tt_val m = tt_b_bin(b, TT_OP_SUBTRACT, tt_reduce_max(b, ni, all, xs.ndim), tt_b_constant(b, TT_I64, 1));
  tt_val init[6] = {tt_b_constant(b, TT_I64, 1), p0, q0, x, ni, m}, v[6], res[6];
  if (!tt_b_while_begin(b, init, 6, v)) return TT_INVALID;
  if (!tt_b_while_body(b, tt_b_compare(b, "LE", v[0], v[5]), v)) return TT_INVALID;
  tt_val one = tt_b_full(b, xs, 1.0);
  tt_val k = tt_b_broadcast_in_dim(b, tt_b_convert(b, v[0], xs.dtype), xs.ndim, xs.dims, NULL);
  tt_val act = tt_b_compare(b, "LT", tt_b_broadcast_in_dim(b, v[0], ns.ndim, ns.dims, NULL), v[4]);
  tt_val r = step(b, kind, v[3], v[1], v[2], k, one);
  tt_val next[6] = {tt_add(b, v[0], tt_b_constant(b, TT_I64, 1)), uc_sel(b, act, v[2], v[1]),
                    uc_sel(b, act, r, v[2]), v[3], v[4], v[5]};
  if (!tt_b_while_end(b, next, res)) return TT_INVALID;
  return res[2];
}

#define SEL(p, t, f) tt_b_select(b, (p), (t), (f))
#define CMP(d, x, y) tt_b_compare(b, d, (x), (y))
#define ADD(x, y) tt_add(b, (x), (y))
#define SUB(x, y) tt_sub(b, (x), (y))
#define MUL(x, y) tt_mul(b, (x), (y))
#define DIV(x, y) tt_div(b, (x), (y))
#define UN(op, x) tt_b_un(b, op, (x))

static tt_error *lower_poly(tt_lower_ctx *c, poly_kind kind) {
  tt_builder *b = tt_lc_builder(c);
  int args[2] = {0, 1}, nd;
  int64_t dims[TT_MAX_DIMS];
  tt_dtype dt = tt_result_type(c, args, 2);
  if (!tt_dtype_is_floating(dt)) dt = TT_DEFAULT_FLOAT;
  if (dt != TT_F32 && dt != TT_F64) return tt_lc_decline(c, "dtype %s", tt_dtype_name(dt));
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  tt_val x = tt_operand(c, 0, dt, nd, dims);
  tt_val nf0 = tt_operand(c, 1, tt_lc_kind(c, 1) == TT_ARG_TENSOR ? tt_lc_ref(c, 1)->dtype : dt, nd, dims);
  tt_val ni = tt_b_convert(b, nf0, TT_I64); /* static_cast<int64_t>(n): truncation */
  tt_val nf = tt_b_convert(b, ni, dt);
  tt_shape is = tt_b_shape(b, ni);
  tt_val zero_i = tt_b_full(b, is, 0), one_i = tt_b_full(b, is, 1);
  tt_val even = CMP("EQ", tt_b_bin(b, TT_OP_REMAINDER, ni, tt_b_full(b, is, 2)), zero_i);
  tt_val one = tt_full_like(b, x, 1);
  bool shifted = kind >= SCHEB_T && kind <= SCHEB_W;
  tt_val y = shifted ? SUB(ADD(x, x), one) : x; /* the Chebyshev argument */
  tt_val q0;
  switch (kind) {
    case CHEB_T: case SCHEB_T: case LEGENDRE: case HERM_HE: q0 = y; break;
    case CHEB_U: case SCHEB_U: case HERM_H: q0 = ADD(y, y); break;
    case CHEB_V: case SCHEB_V: q0 = SUB(ADD(y, y), one); break;
    case CHEB_W: case SCHEB_W: q0 = ADD(ADD(y, y), one); break;
    default: q0 = SUB(one, x); break; /* LAGUERRE */
  }
  tt_val r = recurrence(b, kind, x, ni, one, q0);
  r = SEL(CMP("EQ", ni, one_i), q0, r);
  r = SEL(CMP("EQ", ni, zero_i), one, r);
  tt_val n1 = ADD(nf, one), n21 = ADD(ADD(nf, nf), one);
  tt_val pm1 = SEL(even, one, tt_full_like(b, x, -1)), pm_n1 = SEL(even, n1, UN(TT_OP_NEGATE, n1)),
         pm_n21 = SEL(even, n21, UN(TT_OP_NEGATE, n21));
  tt_val pos = CMP("GT", x, tt_full_like(b, x, 0));
  if (kind <= SCHEB_W) { /* the closed forms for large n with |y| < 1 */
    int64_t lim = kind == CHEB_T || (shifted && kind != SCHEB_W) ? 6 : kind == SCHEB_W ? 4 : 8;
    tt_val ac = uc_chlo(b, TT_OP_CHLO_ACOS, y);
    tt_val closed;
    switch (kind) {
      case CHEB_T: case SCHEB_T: closed = UN(TT_OP_COSINE, MUL(nf, ac)); break;
      case CHEB_U: case SCHEB_U: {
        tt_val s = UN(TT_OP_SINE, ac);
        closed = SEL(CMP("NE", s, tt_full_like(b, x, 0)), DIV(UN(TT_OP_SINE, MUL(n1, ac)), s),
                     DIV(MUL(n1, UN(TT_OP_COSINE, MUL(n1, ac))), y));
        break;
      }
      case CHEB_V: case SCHEB_V: {
        tt_val h = DIV(ac, tt_full_like(b, x, 2));
        closed = SEL(CMP("NE", UN(TT_OP_SINE, h), one), DIV(UN(TT_OP_COSINE, MUL(ADD(nf, tt_full_like(b, x, 0.5)), ac)), UN(TT_OP_COSINE, h)),
                     pm_n21);
        break;
      }
      default: { /* W */
        tt_val h = DIV(ac, tt_full_like(b, x, 2));
        tt_val edge = kind == CHEB_W ? SEL(pos, n21, pm1) : pm1;
        closed = SEL(CMP("NE", UN(TT_OP_COSINE, h), one), DIV(UN(TT_OP_SINE, MUL(ADD(nf, tt_full_like(b, x, 0.5)), ac)), UN(TT_OP_SINE, h)),
                     edge);
        break;
      }
    }
    tt_val use = tt_b_bin(b, TT_OP_AND, CMP("GT", ni, tt_b_full(b, is, (double)lim)),
                             CMP("LT", UN(TT_OP_ABS, y), one));
    r = SEL(use, closed, r);
  }
  switch (kind) { /* values at the ends of the interval */
    case CHEB_T: case LEGENDRE: {
      tt_val v = SEL(tt_b_bin(b, TT_OP_OR, pos, even), one, tt_full_like(b, x, -1));
      r = SEL(CMP("EQ", UN(TT_OP_ABS, x), one), v, r);
      break;
    }
    case CHEB_U:
      r = SEL(CMP("EQ", UN(TT_OP_ABS, x), one), SEL(tt_b_bin(b, TT_OP_OR, pos, even), n1, UN(TT_OP_NEGATE, n1)), r);
      break;
    case CHEB_V: r = SEL(CMP("EQ", UN(TT_OP_ABS, x), one), SEL(pos, one, pm_n21), r); break;
    case CHEB_W: r = SEL(CMP("EQ", UN(TT_OP_ABS, x), one), SEL(pos, n21, pm1), r); break;
    case SCHEB_T: case SCHEB_U: case SCHEB_V: case SCHEB_W: {
      tt_val at1 = kind == SCHEB_T || kind == SCHEB_V ? one : kind == SCHEB_U ? n1 : n21;
      tt_val at0 = kind == SCHEB_T || kind == SCHEB_W ? pm1 : kind == SCHEB_U ? pm_n1 : pm_n21;
      r = SEL(CMP("EQ", x, tt_full_like(b, x, 0)), at0, r);
      r = SEL(CMP("EQ", x, one), at1, r);
      break;
    }
    case LAGUERRE: r = SEL(CMP("EQ", UN(TT_OP_ABS, x), tt_full_like(b, x, 0)), one, r); break;
    default: break;
  }
  r = SEL(CMP("LT", ni, zero_i), tt_full_like(b, x, 0), r);
  tt_lc_output(c, r);
  return NULL;
}

#define POLY(name, kind)                                                                   \
  static tt_error *lower_##name(tt_lower_ctx *c) { return lower_poly(c, kind); }
POLY(cheb_t, CHEB_T)
POLY(cheb_u, CHEB_U)
POLY(cheb_v, CHEB_V)
POLY(cheb_w, CHEB_W)
POLY(scheb_t, SCHEB_T)
POLY(scheb_u, SCHEB_U)
POLY(scheb_v, SCHEB_V)
POLY(scheb_w, SCHEB_W)
POLY(herm_h, HERM_H)
POLY(herm_he, HERM_HE)
POLY(laguerre, LAGUERRE)
POLY(legendre, LEGENDRE)

#define PN(fn, op) \
  {fn, {op, op ".out", op ".x_scalar", op ".x_scalar_out", op ".n_scalar", op ".n_scalar_out"}}
TT_LOWERINGS(special_poly) = {
    PN(lower_cheb_t, "special_chebyshev_polynomial_t"),
    PN(lower_cheb_u, "special_chebyshev_polynomial_u"),
    PN(lower_cheb_v, "special_chebyshev_polynomial_v"),
    PN(lower_cheb_w, "special_chebyshev_polynomial_w"),
    PN(lower_scheb_t, "special_shifted_chebyshev_polynomial_t"),
    PN(lower_scheb_u, "special_shifted_chebyshev_polynomial_u"),
    PN(lower_scheb_v, "special_shifted_chebyshev_polynomial_v"),
    PN(lower_scheb_w, "special_shifted_chebyshev_polynomial_w"),
    PN(lower_herm_h, "special_hermite_polynomial_h"),
    PN(lower_herm_he, "special_hermite_polynomial_he"),
    PN(lower_laguerre, "special_laguerre_polynomial_l"),
    PN(lower_legendre, "special_legendre_polynomial_p"),
    {NULL, {NULL}},
};
