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
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ops/common.h"
#include "ops/unary_common.h"

typedef enum {
  CHEB_T, CHEB_U, CHEB_V, CHEB_W, SCHEB_T, SCHEB_U, SCHEB_V, SCHEB_W, HERM_H, HERM_HE, LAGUERRE,
  LEGENDRE
} poly_kind;

static atomic_int poly_serial; /* unique SSA names inside the loop regions */

/* Loop-region text with the names shared by its pieces. */
typedef struct {
  tt_region_text text;
  char pre[24];
  char T[96], I[96], B[96];
} rtext;

/* %<pre><dst> = "stablehlo.<op>"(%<pre><a>, %<pre><b>) : (T, T) -> T */
static void bin(rtext *t, const char *dst, const char *op, const char *a, const char *b) {
  tt_region_text_add(&t->text, "      %%%s%s = \"stablehlo.%s\"(%%%s%s, %%%s%s) : (%s, %s) -> %s\n", t->pre, dst, op, t->pre, a,
       t->pre, b, t->T, t->T, t->T);
}

static void block_args(rtext *t) {
  tt_region_text_add(&t->text, "    ^bb0(%%%sj: tensor<i64>, %%%sp: %s, %%%sq: %s, %%%sx: %s, %%%sn: %s, %%%sm: tensor<i64>):\n",
       t->pre, t->pre, t->T, t->pre, t->T, t->pre, t->T, t->pre, t->I, t->pre);
}

/* One recurrence step r(x, p, q, k = j) of the family, into %<pre>r. */
static void step(rtext *t, poly_kind kind) {
  bin(t, "xx", "add", "x", "x");
  switch (kind) {
    case CHEB_T: case CHEB_U: case CHEB_V: case CHEB_W: /* (x + x) q - p */
      bin(t, "u", "multiply", "xx", "q");
      bin(t, "r", "subtract", "u", "p");
      break;
    case SCHEB_T: case SCHEB_U: case SCHEB_V: case SCHEB_W: /* y = x + x - 1: (y + y) q - p */
      bin(t, "y", "subtract", "xx", "one");
      bin(t, "yy", "add", "y", "y");
      bin(t, "u", "multiply", "yy", "q");
      bin(t, "r", "subtract", "u", "p");
      break;
    case HERM_H: /* k = 2j: (x + x) q - k p */
      bin(t, "k2", "add", "k", "k");
      bin(t, "u", "multiply", "xx", "q");
      bin(t, "v", "multiply", "k2", "p");
      bin(t, "r", "subtract", "u", "v");
      break;
    case HERM_HE: /* x q - k p */
      bin(t, "u", "multiply", "x", "q");
      bin(t, "v", "multiply", "k", "p");
      bin(t, "r", "subtract", "u", "v");
      break;
    case LAGUERRE: /* ((k + k) + (1 - x)) q - k p) / (k + 1) */
      bin(t, "k2", "add", "k", "k");
      bin(t, "om", "subtract", "one", "x");
      bin(t, "a", "add", "k2", "om");
      bin(t, "u", "multiply", "a", "q");
      bin(t, "v", "multiply", "k", "p");
      bin(t, "w", "subtract", "u", "v");
      bin(t, "d", "add", "k", "one");
      bin(t, "r", "divide", "w", "d");
      break;
    case LEGENDRE: /* ((k + k + 1) x q - k p) / (k + 1) */
      bin(t, "k2", "add", "k", "k");
      bin(t, "k21", "add", "k2", "one");
      bin(t, "a", "multiply", "k21", "x");
      bin(t, "u", "multiply", "a", "q");
      bin(t, "v", "multiply", "k", "p");
      bin(t, "w", "subtract", "u", "v");
      bin(t, "d", "add", "k", "one");
      bin(t, "r", "divide", "w", "d");
      break;
  }
}

/* q after the recurrence steps k = 1 .. n-1 from (p0, q0), per element. */
static tt_val recurrence(tt_builder *b, poly_kind kind, tt_val x, tt_val ni, tt_val p0, tt_val q0) {
  tt_shape xs = tt_b_shape(b, x), ns = tt_b_shape(b, ni);
  int64_t all[TT_MAX_DIMS];
  for (int i = 0; i < xs.ndim; i++) all[i] = i;
  tt_val m = tt_b_binary(b, "subtract", tt_reduce_max(b, ni, all, xs.ndim), tt_b_constant(b, TT_I64, 1));
  tt_val j0 = tt_b_constant(b, TT_I64, 1);
  char region[8192];
  rtext t = {{region, sizeof region, 0}, "", "", "", ""};
  snprintf(t.pre, sizeof t.pre, "poly%d_", atomic_fetch_add(&poly_serial, 1));
  tt_shape_print(&xs, t.T, sizeof t.T);
  tt_shape_print(&ns, t.I, sizeof t.I);
  tt_shape bs = xs;
  bs.dtype = TT_BOOL;
  tt_shape_print(&bs, t.B, sizeof t.B);
  tt_shape sc = tt_shape_scalar(xs.dtype);
  char S[48];
  tt_shape_print(&sc, S, sizeof S);
  char bd[64] = "array<i64>";
  block_args(&t);
  tt_region_text_add(&t.text, "      %%%sc = \"stablehlo.compare\"(%%%sj, %%%sm) {comparison_direction = "
           "#stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type SIGNED>} : "
           "(tensor<i64>, tensor<i64>) -> tensor<i1>\n", t.pre, t.pre, t.pre);
  tt_region_text_add(&t.text, "      \"stablehlo.return\"(%%%sc) : (tensor<i1>) -> ()\n    }, {\n", t.pre);
  block_args(&t);
  tt_region_text_add(&t.text, "      %%%sone0 = \"stablehlo.constant\"() {value = dense<1.0> : %s} : () -> %s\n", t.pre, S, S);
  tt_region_text_add(&t.text, "      %%%sone = \"stablehlo.broadcast_in_dim\"(%%%sone0) {broadcast_dimensions = %s} : (%s) -> %s\n",
       t.pre, t.pre, bd, S, t.T);
  tt_region_text_add(&t.text, "      %%%sk0 = \"stablehlo.convert\"(%%%sj) : (tensor<i64>) -> %s\n", t.pre, t.pre, S);
  tt_region_text_add(&t.text, "      %%%sk = \"stablehlo.broadcast_in_dim\"(%%%sk0) {broadcast_dimensions = %s} : (%s) -> %s\n",
       t.pre, t.pre, bd, S, t.T);
  tt_region_text_add(&t.text, "      %%%sji = \"stablehlo.broadcast_in_dim\"(%%%sj) {broadcast_dimensions = %s} : (tensor<i64>) -> %s\n",
       t.pre, t.pre, bd, t.I);
  tt_region_text_add(&t.text, "      %%%sact = \"stablehlo.compare\"(%%%sji, %%%sn) {comparison_direction = "
           "#stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : "
           "(%s, %s) -> %s\n", t.pre, t.pre, t.pre, t.I, t.I, t.B);
  step(&t, kind);
  tt_region_text_add(&t.text, "      %%%sp2 = \"stablehlo.select\"(%%%sact, %%%sq, %%%sp) : (%s, %s, %s) -> %s\n", t.pre, t.pre, t.pre,
       t.pre, t.B, t.T, t.T, t.T);
  tt_region_text_add(&t.text, "      %%%sq2 = \"stablehlo.select\"(%%%sact, %%%sr, %%%sq) : (%s, %s, %s) -> %s\n", t.pre, t.pre, t.pre,
       t.pre, t.B, t.T, t.T, t.T);
  tt_region_text_add(&t.text, "      %%%sone64 = \"stablehlo.constant\"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>\n", t.pre);
  tt_region_text_add(&t.text, "      %%%sj2 = \"stablehlo.add\"(%%%sj, %%%sone64) : (tensor<i64>, tensor<i64>) -> tensor<i64>\n",
       t.pre, t.pre, t.pre);
  tt_region_text_add(&t.text, "      \"stablehlo.return\"(%%%sj2, %%%sp2, %%%sq2, %%%sx, %%%sn, %%%sm) : (tensor<i64>, %s, %s, %s, %s, "
           "tensor<i64>) -> ()", t.pre, t.pre, t.pre, t.pre, t.pre, t.pre, t.T, t.T, t.T, t.I);
  if (t.text.off >= t.text.size) return tt_b_fail(b, TT_ERR_RUNTIME, "internal: polynomial loop text too long");
  tt_val ins[6] = {j0, p0, q0, x, ni, m}, res[6];
  tt_shape outs[6] = {tt_shape_scalar(TT_I64), xs, xs, xs, ns, tt_shape_scalar(TT_I64)};
  if (!tt_b_op_multi(b, "stablehlo.while", ins, 6, NULL, region, outs, 6, res)) return TT_INVALID;
  return res[2];
}

static tt_val K(tt_builder *b, tt_val like, double v) { return tt_full_like(b, like, v); }
#define SEL(p, t, f) tt_b_select(b, (p), (t), (f))
#define CMP(d, x, y) tt_b_compare(b, d, (x), (y))
#define ADD(x, y) tt_b_binary(b, "add", (x), (y))
#define SUB(x, y) tt_b_binary(b, "subtract", (x), (y))
#define MUL(x, y) tt_b_binary(b, "multiply", (x), (y))
#define DIV(x, y) tt_b_binary(b, "divide", (x), (y))
#define UN(op, x) tt_b_unary(b, op, (x))

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
  tt_val even = CMP("EQ", tt_b_binary(b, "remainder", ni, tt_b_full(b, is, 2)), zero_i);
  tt_val one = K(b, x, 1);
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
  tt_val pm1 = SEL(even, one, K(b, x, -1)), pm_n1 = SEL(even, n1, UN("negate", n1)),
         pm_n21 = SEL(even, n21, UN("negate", n21));
  tt_val pos = CMP("GT", x, K(b, x, 0));
  if (kind <= SCHEB_W) { /* the closed forms for large n with |y| < 1 */
    int64_t lim = kind == CHEB_T || (shifted && kind != SCHEB_W) ? 6 : kind == SCHEB_W ? 4 : 8;
    tt_val ac = uc_chlo(b, "chlo.acos", y);
    tt_val closed;
    switch (kind) {
      case CHEB_T: case SCHEB_T: closed = UN("cosine", MUL(nf, ac)); break;
      case CHEB_U: case SCHEB_U: {
        tt_val s = UN("sine", ac);
        closed = SEL(CMP("NE", s, K(b, x, 0)), DIV(UN("sine", MUL(n1, ac)), s),
                     DIV(MUL(n1, UN("cosine", MUL(n1, ac))), y));
        break;
      }
      case CHEB_V: case SCHEB_V: {
        tt_val h = DIV(ac, K(b, x, 2));
        closed = SEL(CMP("NE", UN("sine", h), one), DIV(UN("cosine", MUL(ADD(nf, K(b, x, 0.5)), ac)), UN("cosine", h)),
                     pm_n21);
        break;
      }
      default: { /* W */
        tt_val h = DIV(ac, K(b, x, 2));
        tt_val edge = kind == CHEB_W ? SEL(pos, n21, pm1) : pm1;
        closed = SEL(CMP("NE", UN("cosine", h), one), DIV(UN("sine", MUL(ADD(nf, K(b, x, 0.5)), ac)), UN("sine", h)),
                     edge);
        break;
      }
    }
    tt_val use = tt_b_binary(b, "and", CMP("GT", ni, tt_b_full(b, is, (double)lim)),
                             CMP("LT", UN("abs", y), one));
    r = SEL(use, closed, r);
  }
  switch (kind) { /* values at the ends of the interval */
    case CHEB_T: case LEGENDRE: {
      tt_val v = SEL(tt_b_binary(b, "or", pos, even), one, K(b, x, -1));
      r = SEL(CMP("EQ", UN("abs", x), one), v, r);
      break;
    }
    case CHEB_U:
      r = SEL(CMP("EQ", UN("abs", x), one), SEL(tt_b_binary(b, "or", pos, even), n1, UN("negate", n1)), r);
      break;
    case CHEB_V: r = SEL(CMP("EQ", UN("abs", x), one), SEL(pos, one, pm_n21), r); break;
    case CHEB_W: r = SEL(CMP("EQ", UN("abs", x), one), SEL(pos, n21, pm1), r); break;
    case SCHEB_T: case SCHEB_U: case SCHEB_V: case SCHEB_W: {
      tt_val at1 = kind == SCHEB_T || kind == SCHEB_V ? one : kind == SCHEB_U ? n1 : n21;
      tt_val at0 = kind == SCHEB_T || kind == SCHEB_W ? pm1 : kind == SCHEB_U ? pm_n1 : pm_n21;
      r = SEL(CMP("EQ", x, K(b, x, 0)), at0, r);
      r = SEL(CMP("EQ", x, one), at1, r);
      break;
    }
    case LAGUERRE: r = SEL(CMP("EQ", UN("abs", x), K(b, x, 0)), one, r); break;
    default: break;
  }
  r = SEL(CMP("LT", ni, zero_i), K(b, x, 0), r);
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
