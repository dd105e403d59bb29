/* Binary and ternary elementwise ops with broadcasting and PyTorch type
 * promotion: arithmetic (add, sub, rsub, mul, div, remainder, fmod, pow,
 * atan2), min/max, comparisons, logical and bitwise ops, where, clamp, lerp,
 * addcmul, addcdiv.
 *
 * Shapes: out = broadcast(operands); dtype = result_type(operands) (promoted
 * to float for true division and atan2). float16/bfloat16 arithmetic is
 * computed in float32 and rounded once, like PyTorch's CPU kernels (opmath);
 * Python scalars then enter at float32 precision, as PyTorch reads them.
 *
 * Scalar arguments are runtime parameters: a lowering never branches on a
 * Scalar's value (the compiled program is reused for other values), only on
 * its kind (bool/int/float), which is part of the cache key. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ops/common.h"
#include "ops/complex_math.h"

/* ------------------------------------------------------------ helpers */

/* True for a Scalar argument or a CPU scalar tensor (no device storage). */
static bool is_scalar_arg(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (!a) return false;
  if (a->kind == TT_ARG_TENSOR) return a->u.tensor->storage == NULL;
  return a->kind == TT_ARG_SCALAR;
}

static bool is_none(const tt_lower_ctx *c, int i) {
  return tt_lc_nargs(c) <= i || tt_lc_is_none(c, i);
}

static tt_dtype arg_dtype(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (a && a->kind == TT_ARG_TENSOR) return a->u.tensor->dtype;
  if (a && a->kind == TT_ARG_SCALAR)
    return a->u.s.kind == TT_SCALAR_FLOAT ? TT_DEFAULT_FLOAT
           : a->u.s.kind == TT_SCALAR_INT ? TT_I64 : TT_BOOL;
  return TT_F32;
}

/* Broadcast shape of the non-None arguments args[0..n). */
typedef struct {
  int nd;
  int64_t dims[TT_MAX_DIMS];
} bshape;

static tt_error *broadcast(tt_lower_ctx *c, const int *args, int n, bshape *s) {
  int live[4], m = 0;
  for (int k = 0; k < n; k++)
    if (!is_none(c, args[k])) live[m++] = args[k];
  return tt_broadcast_args(c, live, m, &s->nd, s->dims);
}

/* Argument i as dtype dt (the op's common dtype) computed in cm (opmath of
 * dt), broadcast to s. Operands are cast to dt first, as PyTorch casts
 * inputs to the common dtype; with full_scalar, a Python scalar / CPU scalar
 * goes straight to cm instead (PyTorch's mul and div read the original
 * scalar value for float16/bfloat16; add, sub, remainder, pow, ... use the
 * value rounded to the tensor dtype, measured against CPU). */
static tt_val operand_ex(tt_lower_ctx *c, int i, tt_dtype dt, tt_dtype cm, const bshape *s,
                         bool full_scalar) {
  tt_builder *b = tt_lc_builder(c);
  if (full_scalar && is_scalar_arg(c, i)) return tt_operand(c, i, cm, s->nd, s->dims);
  return tt_b_convert(b, tt_operand(c, i, dt, s->nd, s->dims), cm);
}
static tt_val operand(tt_lower_ctx *c, int i, tt_dtype dt, tt_dtype cm, const bshape *s) {
  return operand_ex(c, i, dt, cm, s, false);
}

static tt_val bin(tt_builder *b, tt_op op, tt_val x, tt_val y) {
  return tt_b_bin(b, op, x, y);
}
static tt_val cmp(tt_builder *b, const char *dir, tt_val x, tt_val y) {
  return tt_b_compare(b, dir, x, y);
}
static tt_val sel(tt_builder *b, tt_val p, tt_val t, tt_val f) { return tt_b_select(b, p, t, f); }
static tt_val isnan_(tt_builder *b, tt_val x) { return cmp(b, "NE", x, x); }

/* Two-operand setup: common dtype dt, broadcast operands x, y in opmath. */
typedef struct {
  tt_dtype dt, cm;
  bshape s;
  tt_val x, y;
} binop;

static tt_error *setup2_ex(tt_lower_ctx *c, int a, int bb, tt_dtype dt, binop *o, bool full) {
  int args[2] = {a, bb};
  o->dt = dt;
  o->cm = tt_opmath(dt);
  TT_TRY(broadcast(c, args, 2, &o->s));
  o->x = operand_ex(c, a, dt, o->cm, &o->s, full);
  o->y = operand_ex(c, bb, dt, o->cm, &o->s, full);
  return NULL;
}
static tt_error *setup2(tt_lower_ctx *c, int a, int bb, tt_dtype dt, binop *o) {
  return setup2_ex(c, a, bb, dt, o, false);
}

static tt_dtype result2(const tt_lower_ctx *c, int a, int bb) {
  int args[2] = {a, bb};
  return tt_result_type(c, args, 2);
}

static void output(tt_lower_ctx *c, const binop *o, tt_val r) {
  tt_lc_output(c, tt_b_convert(tt_lc_builder(c), r, o->dt));
}

/* ------------------------------------------------------------ add, sub, mul */

/* x (+|-) alpha * y; rsub swaps the operands. alpha is multiplied in
 * whenever given (its value is a runtime parameter). */
static tt_error *add_sub(tt_lower_ctx *c, bool subtract, bool reverse) {
  tt_dtype dt = result2(c, 0, 1);
  tt_builder *b = tt_lc_builder(c);
  if (dt == TT_BOOL && subtract)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Subtraction, the `-` operator, with two bool tensors is not supported. "
                      "Use the `^` or `logical_xor()` operator instead.");
  const tt_scalar *alpha = tt_lc_scalar_ref(c, 2);
  if (alpha && alpha->kind == TT_SCALAR_FLOAT && !tt_dtype_is_floating(dt) &&
      !tt_dtype_is_complex(dt))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "For integral input tensors, argument alpha must not be a floating point number.");
  if (alpha && alpha->kind == TT_SCALAR_BOOL && dt != TT_BOOL)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Boolean alpha only supported for Boolean results.");
  /* A complex alpha reaches the lowering as a wrapped 0-dim complex tensor,
   * not a Scalar; it must be multiplied in like any other alpha. */
  const tt_tensor_ref *alpha_t = alpha ? NULL : tt_lc_ref(c, 2);
  if (alpha_t && tt_dtype_is_complex(alpha_t->dtype) && !tt_dtype_is_complex(dt) &&
      !tt_dtype_is_floating(dt))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "For integral input tensors, argument alpha must not be a floating point number.");
  if (alpha_t && tt_dtype_is_complex(alpha_t->dtype) && !tt_dtype_is_complex(dt))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "For non-complex input tensors, argument alpha must not be a complex number.");
  binop o;
  TT_TRY(setup2(c, reverse ? 1 : 0, reverse ? 0 : 1, dt, &o));
  tt_val y = o.y;
  if (alpha || alpha_t) {
    /* alpha is rounded to the result dtype first, like PyTorch */
    tt_val a = tt_b_convert(b, tt_lc_scalar(c, 2, dt), o.cm);
    a = tt_b_broadcast_to(b, a, o.s.nd, o.s.dims);
    y = bin(b, dt == TT_BOOL ? TT_OP_AND : TT_OP_MULTIPLY, y, a);
  }
  tt_op op = dt == TT_BOOL ? TT_OP_OR : subtract ? TT_OP_SUBTRACT : TT_OP_ADD;
  output(c, &o, bin(b, op, o.x, y));
  return NULL;
}

static tt_error *lower_add(tt_lower_ctx *c) { return add_sub(c, false, false); }
static tt_error *lower_sub(tt_lower_ctx *c) { return add_sub(c, true, false); }
static tt_error *lower_rsub(tt_lower_ctx *c) { return add_sub(c, true, true); }

static tt_error *lower_mul(tt_lower_ctx *c) {
  binop o;
  tt_dtype dt = result2(c, 0, 1);
  TT_TRY(setup2_ex(c, 0, 1, dt, &o, true));
  output(c, &o, bin(tt_lc_builder(c), dt == TT_BOOL ? TT_OP_AND : TT_OP_MULTIPLY, o.x, o.y));
  return NULL;
}

/* ------------------------------------------------------------ division */

/* Integer floor division: trunc quotient, minus one when the signs differ
 * and the division is inexact. */
static tt_val int_floor_div(tt_builder *b, tt_val x, tt_val y) {
  tt_val q = bin(b, TT_OP_DIVIDE, x, y);
  tt_val r = bin(b, TT_OP_REMAINDER, x, y);
  tt_val zero = tt_full_like(b, x, 0);
  tt_val fix = bin(b, TT_OP_AND, cmp(b, "NE", r, zero),
                   cmp(b, "NE", cmp(b, "LT", r, zero), cmp(b, "LT", y, zero)));
  return sel(b, fix, bin(b, TT_OP_SUBTRACT, q, tt_full_like(b, q, 1)), q);
}

/* c10::div_floor_floating */
static tt_val float_floor_div(tt_builder *b, tt_val x, tt_val y) {
  tt_val zero = tt_full_like(b, x, 0);
  tt_val mod = bin(b, TT_OP_REMAINDER, x, y);
  tt_val div = bin(b, TT_OP_DIVIDE, bin(b, TT_OP_SUBTRACT, x, mod), y);
  tt_val fix = bin(b, TT_OP_AND, cmp(b, "NE", mod, zero),
                   cmp(b, "NE", cmp(b, "LT", y, zero), cmp(b, "LT", mod, zero)));
  div = sel(b, fix, bin(b, TT_OP_SUBTRACT, div, tt_full_like(b, div, 1)), div);
  tt_val fl = tt_b_un(b, TT_OP_FLOOR, div);
  fl = sel(b, cmp(b, "GT", bin(b, TT_OP_SUBTRACT, div, fl), tt_full_like(b, div, 0.5)), bin(b, TT_OP_ADD, fl, tt_full_like(b, fl, 1)),
           fl);
  /* div == 0: copysign(0, x / y), from the sign bit of x / y */
  tt_val q = bin(b, TT_OP_DIVIDE, x, y);
  tt_shape is = tt_b_shape(b, q);
  is.dtype = is.dtype == TT_F64 ? TT_I64 : TT_I32; /* q is f32 or f64 (opmath) */
  tt_val neg = cmp(b, "LT", tt_b_bitcast(b, q, is), tt_b_full(b, is, 0));
  tt_val signed_zero = sel(b, neg, tt_full_like(b, q, -0.0), zero);
  tt_val r = sel(b, cmp(b, "EQ", div, zero), signed_zero, fl);
  return sel(b, cmp(b, "EQ", y, zero), q, r); /* divide by zero: IEEE result */
}

static tt_val trunc_f(tt_builder *b, tt_val x) {
  return sel(b, cmp(b, "LT", x, tt_full_like(b, x, 0)), tt_b_un(b, TT_OP_CEIL, x), tt_b_un(b, TT_OP_FLOOR, x));
}

/* Device-side check (ops/lowering.h): an integer divisor of zero raises
 * like CPU's kernel instead of giving XLA's defined garbage. */
static void check_int_divisor(tt_lower_ctx *c, tt_dtype dt, tt_val y) {
  if (tt_dtype_is_floating(dt) || tt_dtype_is_complex(dt) || dt == TT_BOOL || !tt_lc_checks_on(c)) return;
  tt_builder *b = tt_lc_builder(c);
  tt_lc_check(c, cmp(b, "EQ", y, tt_full_like(b, y, 0)), TT_ERR_INVALID_ARGUMENT,
              "ZeroDivisionError (the divisor is 0 at element {pos} of the result)");
}

static tt_error *div_impl(tt_lower_ctx *c, const char *mode) {
  tt_dtype dt = result2(c, 0, 1);
  tt_builder *b = tt_lc_builder(c);
  binop o;
  if (!mode) {
    if (!tt_dtype_is_floating(dt) && !tt_dtype_is_complex(dt)) dt = TT_DEFAULT_FLOAT;
    TT_TRY(setup2_ex(c, 0, 1, dt, &o, true));
    output(c, &o, tt_dtype_is_complex(o.cm) ? tt_complex_div(b, o.x, o.y) : bin(b, TT_OP_DIVIDE, o.x, o.y));
    return NULL;
  }
  bool trunc = !strcmp(mode, "trunc"), floor = !strcmp(mode, "floor");
  if (!trunc && !floor)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'",
                      mode);
  if (dt == TT_BOOL) return tt_lc_decline(c, "rounding division of bool");
  if (tt_dtype_is_complex(dt)) return tt_lc_decline(c, "rounding division of complex");
  TT_TRY(setup2_ex(c, 0, 1, dt, &o, true));
  tt_val r;
  if (tt_dtype_is_floating(dt))
    /* trunc: PyTorch's CPU kernel rounds the quotient to float16/bfloat16
     * (scalar_t arithmetic) before truncating */
    r = trunc ? trunc_f(b, tt_b_convert(b, tt_b_convert(b, bin(b, TT_OP_DIVIDE, o.x, o.y), dt), o.cm))
              : float_floor_div(b, o.x, o.y);
  else
    r = trunc ? bin(b, TT_OP_DIVIDE, o.x, o.y) : int_floor_div(b, o.x, o.y);
  check_int_divisor(c, dt, o.y);
  output(c, &o, r);
  return NULL;
}

static tt_error *lower_div(tt_lower_ctx *c) {
  const char *mode = NULL;
  if (tt_lc_nargs(c) > 2 && tt_lc_kind(c, 2) == TT_ARG_STRING) mode = tt_lc_string(c, 2, NULL);
  return div_impl(c, mode);
}

/* floor_divide (Python's //) = div(rounding_mode='floor') */
static tt_error *lower_floor_divide(tt_lower_ctx *c) { return div_impl(c, "floor"); }

/* remainder: Python's modulus (sign of the divisor). */
static tt_error *lower_remainder(tt_lower_ctx *c) {
  tt_dtype dt = result2(c, 0, 1);
  if (dt == TT_BOOL) return tt_lc_decline(c, "remainder of bool");
  tt_builder *b = tt_lc_builder(c);
  binop o;
  TT_TRY(setup2(c, 0, 1, dt, &o));
  check_int_divisor(c, dt, o.y);
  tt_val mod = bin(b, TT_OP_REMAINDER, o.x, o.y);
  tt_val zero = tt_full_like(b, mod, 0);
  tt_val fix = bin(b, TT_OP_AND, cmp(b, "NE", mod, zero),
                   cmp(b, "NE", cmp(b, "LT", o.y, zero), cmp(b, "LT", mod, zero)));
  output(c, &o, sel(b, fix, bin(b, TT_OP_ADD, mod, o.y), mod));
  return NULL;
}

/* fmod: C's fmod (sign of the dividend). */
static tt_error *lower_fmod(tt_lower_ctx *c) {
  tt_dtype dt = result2(c, 0, 1);
  if (dt == TT_BOOL) return tt_lc_decline(c, "fmod of bool");
  binop o;
  TT_TRY(setup2(c, 0, 1, dt, &o));
  check_int_divisor(c, dt, o.y);
  output(c, &o, bin(tt_lc_builder(c), TT_OP_REMAINDER, o.x, o.y));
  return NULL;
}

/* x ** e for the exponents ATen's CPU kernel computes without pow for float32
 * and float64 (0, 1, 2, 3, 0.5, -0.5, -1, -2): the same operations (signed
 * zeros and infinities included), and XLA's CPU backend turns a generic power
 * into one libm call per element (12% of a Llama training step went to powf
 * for RMSNorm's x.pow(2)). float16/bfloat16 keep the generic power: ATen
 * rounds their x*x*x per multiply but computes their 0.5 power with powf. */
static bool pow_by_exponent(tt_builder *b, double e, tt_val x, tt_val *r) {
  if (e == 0) *r = tt_full_like(b, x, 1);
  else if (e == 1) *r = x;
  else if (e == 2) *r = bin(b, TT_OP_MULTIPLY, x, x);
  else if (e == 3) *r = bin(b, TT_OP_MULTIPLY, bin(b, TT_OP_MULTIPLY, x, x), x);
  else if (e == 0.5) *r = tt_b_un(b, TT_OP_SQRT, x);
  else if (e == -0.5) *r = tt_b_un(b, TT_OP_RSQRT, x);
  else if (e == -1) *r = bin(b, TT_OP_DIVIDE, tt_full_like(b, x, 1), x);
  else if (e == -2) *r = bin(b, TT_OP_DIVIDE, tt_full_like(b, x, 1), bin(b, TT_OP_MULTIPLY, x, x));
  else return false;
  return true;
}

static tt_error *lower_pow(tt_lower_ctx *c) {
  tt_dtype dt = result2(c, 0, 1);
  if (dt == TT_BOOL) return tt_lc_decline(c, "pow of bool");
  binop o;
  TT_TRY(setup2(c, 0, 1, dt, &o));
  tt_builder *b = tt_lc_builder(c);
  /* A Python-number exponent of a floating tensor: its value picks the code
   * (so it is part of the cache key; exponents are constants in practice). */
  const tt_arg *e = tt_lc_arg(c, 1);
  /* ATen refuses an integral tensor to a negative Python-int power (a tensor
   * exponent is not checked, as on CPU); the value joins the cache key. */
  if (!tt_dtype_is_floating(dt) && !tt_dtype_is_complex(dt) && e && e->kind == TT_ARG_SCALAR &&
      e->u.s.kind == TT_SCALAR_INT && !is_scalar_arg(c, 0) && tt_lc_scalar_value(c, 1) < 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Integers to negative integer powers are not allowed.");
  if ((dt == TT_F32 || dt == TT_F64) && e && e->kind == TT_ARG_SCALAR && !is_scalar_arg(c, 0)) {
    tt_val r;
    if (pow_by_exponent(b, tt_lc_scalar_value(c, 1), o.x, &r)) {
      output(c, &o, r);
      return NULL;
    }
  }
  /* complex base, Python-number exponent: ATen's special cases (0 and 1,
   * then squares, cubes and their reciprocals by multiplication, the
   * square-root family by its kernels); other exponents use the power */
  if (tt_dtype_is_complex(dt) && e && e->kind == TT_ARG_SCALAR && !is_scalar_arg(c, 0)) {
    double v = tt_lc_scalar_value(c, 1);
    tt_val x = o.x, sq = bin(b, TT_OP_MULTIPLY, x, x), one = tt_full_like(b, x, 1), r = TT_INVALID;
    if (v == 0) r = one;
    else if (v == 1) r = x;
    else if (v == 2) r = sq;
    else if (v == 3) r = bin(b, TT_OP_MULTIPLY, sq, x);
    else if (v == -2) r = bin(b, TT_OP_DIVIDE, one, sq);
    else if (v == -1) r = bin(b, TT_OP_DIVIDE, one, x);
    else if (v == 0.5) r = tt_b_un(b, TT_OP_SQRT, x);
    else if (v == -0.5) r = tt_b_un(b, TT_OP_RSQRT, x);
    if (r != TT_INVALID) {
      output(c, &o, r);
      return NULL;
    }
  }
  output(c, &o, bin(b, TT_OP_POWER, o.x, o.y));
  return NULL;
}

static tt_error *lower_atan2(tt_lower_ctx *c) {
  tt_dtype dt = result2(c, 0, 1);
  if (!tt_dtype_is_floating(dt)) dt = TT_DEFAULT_FLOAT;
  binop o;
  TT_TRY(setup2(c, 0, 1, dt, &o));
  output(c, &o, bin(tt_lc_builder(c), TT_OP_ATAN2, o.x, o.y));
  return NULL;
}

/* ------------------------------------------------------------ min / max */

/* maximum/minimum propagate NaN; fmax/fmin ignore it. */
static tt_error *min_max(tt_lower_ctx *c, bool is_max, bool propagate_nan) {
  tt_dtype dt = result2(c, 0, 1);
  tt_builder *b = tt_lc_builder(c);
  binop o;
  TT_TRY(setup2(c, 0, 1, dt, &o));
  tt_val r;
  if (dt == TT_BOOL) {
    r = bin(b, is_max ? TT_OP_OR : TT_OP_AND, o.x, o.y);
  } else {
    r = bin(b, is_max ? TT_OP_MAXIMUM : TT_OP_MINIMUM, o.x, o.y);
    if (tt_dtype_is_floating(dt)) {
      if (propagate_nan) {
        r = sel(b, isnan_(b, o.y), o.y, r);
        r = sel(b, isnan_(b, o.x), o.x, r);
      } else {
        r = sel(b, isnan_(b, o.y), o.x, r);
        r = sel(b, isnan_(b, o.x), o.y, r);
      }
    }
  }
  output(c, &o, r);
  return NULL;
}
static tt_error *lower_maximum(tt_lower_ctx *c) { return min_max(c, true, true); }
static tt_error *lower_minimum(tt_lower_ctx *c) { return min_max(c, false, true); }
static tt_error *lower_fmax(tt_lower_ctx *c) { return min_max(c, true, false); }
static tt_error *lower_fmin(tt_lower_ctx *c) { return min_max(c, false, false); }

/* ------------------------------------------------------------ comparisons */

/* Compared in the common dtype (scalars cast to it, as PyTorch does). */
static tt_error *compare(tt_lower_ctx *c, const char *dir) {
  tt_dtype dt = result2(c, 0, 1);
  int args[2] = {0, 1};
  bshape s;
  TT_TRY(broadcast(c, args, 2, &s));
  tt_val x = tt_operand(c, 0, dt, s.nd, s.dims);
  tt_val y = tt_operand(c, 1, dt, s.nd, s.dims);
  tt_lc_output(c, cmp(tt_lc_builder(c), dir, x, y));
  return NULL;
}
static tt_error *lower_eq(tt_lower_ctx *c) { return compare(c, "EQ"); }
static tt_error *lower_ne(tt_lower_ctx *c) { return compare(c, "NE"); }
static tt_error *lower_lt(tt_lower_ctx *c) { return compare(c, "LT"); }
static tt_error *lower_le(tt_lower_ctx *c) { return compare(c, "LE"); }
static tt_error *lower_gt(tt_lower_ctx *c) { return compare(c, "GT"); }
static tt_error *lower_ge(tt_lower_ctx *c) { return compare(c, "GE"); }

/* ------------------------------------------------------------ logical, bitwise */

/* Each operand is truth-tested in its own dtype; the result is bool. */
static tt_error *logical(tt_lower_ctx *c, tt_op op) {
  int args[2] = {0, 1};
  bshape s;
  TT_TRY(broadcast(c, args, 2, &s));
  tt_val x = tt_operand(c, 0, TT_BOOL, s.nd, s.dims);
  tt_val y = tt_operand(c, 1, TT_BOOL, s.nd, s.dims);
  tt_lc_output(c, bin(tt_lc_builder(c), op, x, y));
  return NULL;
}
static tt_error *lower_logical_and(tt_lower_ctx *c) { return logical(c, TT_OP_AND); }
static tt_error *lower_logical_or(tt_lower_ctx *c) { return logical(c, TT_OP_OR); }
static tt_error *lower_logical_xor(tt_lower_ctx *c) { return logical(c, TT_OP_XOR); }

/* Integers and bool only; CPU raises PyTorch's error for floats. */
static tt_error *bitwise(tt_lower_ctx *c, tt_op op) {
  tt_dtype dt = result2(c, 0, 1);
  if (tt_dtype_is_floating(dt)) return tt_lc_decline(c, "%s on floating dtypes", tt_lc_op_name(c));
  int args[2] = {0, 1};
  bshape s;
  TT_TRY(broadcast(c, args, 2, &s));
  tt_val x = tt_operand(c, 0, dt, s.nd, s.dims);
  tt_val y = tt_operand(c, 1, dt, s.nd, s.dims);
  tt_lc_output(c, bin(tt_lc_builder(c), op, x, y));
  return NULL;
}
static tt_error *lower_bitwise_and(tt_lower_ctx *c) { return bitwise(c, TT_OP_AND); }
static tt_error *lower_bitwise_or(tt_lower_ctx *c) { return bitwise(c, TT_OP_OR); }
static tt_error *lower_bitwise_xor(tt_lower_ctx *c) { return bitwise(c, TT_OP_XOR); }

/* ------------------------------------------------------------ where */

static tt_error *lower_where(tt_lower_ctx *c) {
  tt_dtype cd = arg_dtype(c, 0);
  if (cd != TT_BOOL && cd != TT_U8) /* uint8 is deprecated but accepted */
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
                      cd == TT_F32 ? "Float" : cd == TT_F64 ? "Double" : cd == TT_F16 ? "Half"
                      : cd == TT_BF16 ? "BFloat16" : cd == TT_I8 ? "Char" : cd == TT_I16 ? "Short"
                      : cd == TT_I32 ? "Int" : "Long");
  tt_dtype dt = result2(c, 1, 2);
  int args[3] = {0, 1, 2};
  bshape s;
  TT_TRY(broadcast(c, args, 3, &s));
  tt_val p = tt_operand(c, 0, TT_BOOL, s.nd, s.dims);
  tt_val x = tt_operand(c, 1, dt, s.nd, s.dims);
  tt_val y = tt_operand(c, 2, dt, s.nd, s.dims);
  tt_lc_output(c, sel(tt_lc_builder(c), p, x, y));
  return NULL;
}

/* ------------------------------------------------------------ clamp */

/* clamp(self, min, max) as std::min(std::max(x, min), max): a NaN self
 * propagates, and so does a NaN bound, Scalar or Tensor (PyTorch's rule). */
static tt_error *clamp_common(tt_lower_ctx *c, int lo_arg, int hi_arg) {
  bool has_lo = lo_arg >= 0 && !is_none(c, lo_arg), has_hi = hi_arg >= 0 && !is_none(c, hi_arg);
  if (!has_lo && !has_hi)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "torch.clamp: At least one of 'min' or 'max' must not be None");
  int args[3] = {0}, n = 1;
  if (has_lo) args[n++] = lo_arg;
  if (has_hi) args[n++] = hi_arg;
  tt_dtype dt = tt_result_type(c, args, n);
  bshape s;
  TT_TRY(broadcast(c, args, n, &s));
  tt_builder *b = tt_lc_builder(c);
  tt_val r = tt_operand(c, 0, dt, s.nd, s.dims);
  if (dt == TT_BOOL) { /* max(x, lo) = x | lo, min(x, hi) = x & hi */
    /* CPU supports bool only with a single Tensor bound */
    if (n != 2 || tt_lc_kind(c, args[1]) != TT_ARG_TENSOR)
      return tt_lc_decline(c, "clamp of bool");
    if (has_lo) r = bin(b, TT_OP_OR, r, tt_operand(c, lo_arg, dt, s.nd, s.dims));
    if (has_hi) r = bin(b, TT_OP_AND, r, tt_operand(c, hi_arg, dt, s.nd, s.dims));
    tt_lc_output(c, r);
    return NULL;
  }
  bool fl = tt_dtype_is_floating(dt);
  if (has_lo) {
    tt_val lo = tt_operand(c, lo_arg, dt, s.nd, s.dims);
    r = sel(b, cmp(b, "LT", r, lo), lo, r);
    if (fl) r = sel(b, isnan_(b, lo), lo, r);
  }
  if (has_hi) {
    tt_val hi = tt_operand(c, hi_arg, dt, s.nd, s.dims);
    r = sel(b, cmp(b, "LT", hi, r), hi, r);
    if (fl) r = sel(b, isnan_(b, hi), hi, r);
  }
  tt_lc_output(c, r);
  return NULL;
}
static tt_error *lower_clamp(tt_lower_ctx *c) { return clamp_common(c, 1, 2); }
static tt_error *lower_clamp_min(tt_lower_ctx *c) { return clamp_common(c, 1, -1); }
static tt_error *lower_clamp_max(tt_lower_ctx *c) { return clamp_common(c, -1, 1); }

/* ------------------------------------------------------------ lerp, addcmul, addcdiv */

static const char *torch_name(tt_dtype dt) {
  switch (dt) {
    case TT_F16: return "c10::Half";
    case TT_BF16: return "c10::BFloat16";
    case TT_F32: return "float";
    case TT_F64: return "double";
    default: return tt_dtype_name(dt);
  }
}

/* lerp(self, end, weight): |w| < 0.5 ? self + w (end - self)
 *                                     : end - (end - self)(1 - w) */
static tt_error *lower_lerp(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  if (arg_dtype(c, 1) != dt)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "expected dtype %s for `end` but got dtype %s",
                      torch_name(dt), torch_name(arg_dtype(c, 1)));
  bool w_tensor = tt_lc_kind(c, 2) == TT_ARG_TENSOR;
  if (w_tensor && arg_dtype(c, 2) != dt)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "expected dtype %s for `weight` but got dtype %s",
                      torch_name(dt), torch_name(arg_dtype(c, 2)));
  if (!tt_dtype_is_floating(dt)) return tt_lc_decline(c, "lerp of %s", tt_dtype_name(dt));
  int args[3] = {0, 1, 2};
  bshape s;
  TT_TRY(broadcast(c, args, w_tensor ? 3 : 2, &s));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype cm = tt_opmath(dt);
  tt_val x = operand(c, 0, dt, cm, &s), e = operand(c, 1, dt, cm, &s);
  /* a Scalar weight enters at opmath precision (PyTorch reads it as opmath_t) */
  tt_val w = operand_ex(c, 2, dt, cm, &s, true);
  tt_val diff = bin(b, TT_OP_SUBTRACT, e, x);
  tt_val small = cmp(b, "LT", tt_b_un(b, TT_OP_ABS, w), tt_full_like(b, w, 0.5));
  tt_val lo = bin(b, TT_OP_ADD, x, bin(b, TT_OP_MULTIPLY, w, diff));
  tt_val hi = bin(b, TT_OP_SUBTRACT, e, bin(b, TT_OP_MULTIPLY, diff, bin(b, TT_OP_SUBTRACT, tt_full_like(b, w, 1), w)));
  tt_lc_output(c, tt_b_convert(b, sel(b, small, lo, hi), dt));
  return NULL;
}

/* self + value * t1 (*|/) t2 */
static tt_error *addc(tt_lower_ctx *c, bool divide) {
  int args[3] = {0, 1, 2};
  if (divide && !tt_dtype_is_floating(arg_dtype(c, 1)) && !tt_dtype_is_floating(arg_dtype(c, 2)))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Integer division with addcdiv is no longer supported, and in a future  "
                      "release addcdiv will perform a true division of tensor1 and tensor2. The "
                      "historic addcdiv behavior can be implemented as (input + value * "
                      "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                      "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
                      "behavior is just the latter implementation: (input + value * tensor1 / "
                      "tensor2), for all dtypes.");
  tt_dtype dt = tt_result_type(c, args, 3);
  if (dt == TT_BOOL) return tt_lc_decline(c, "addcmul of bool");
  bshape s;
  TT_TRY(broadcast(c, args, 3, &s));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype cm = tt_opmath(dt);
  tt_val x = operand(c, 0, dt, cm, &s), t1 = operand(c, 1, dt, cm, &s);
  tt_val t2 = operand(c, 2, dt, cm, &s);
  tt_val v = is_none(c, 3) ? tt_full_like(b, x, 1) : tt_b_broadcast_to(b, tt_lc_scalar(c, 3, cm), s.nd, s.dims);
  tt_val r = divide ? bin(b, TT_OP_DIVIDE, bin(b, TT_OP_MULTIPLY, v, t1), t2)
                    : bin(b, TT_OP_MULTIPLY, bin(b, TT_OP_MULTIPLY, v, t1), t2);
  tt_lc_output(c, tt_b_convert(b, bin(b, TT_OP_ADD, x, r), dt));
  return NULL;
}
static tt_error *lower_addcmul(tt_lower_ctx *c) { return addc(c, false); }
static tt_error *lower_addcdiv(tt_lower_ctx *c) { return addc(c, true); }

/* ------------------------------------------------------------ math tail */

static tt_val un(tt_builder *b, tt_op op, tt_val x) { return tt_b_un(b, op, x); }

/* Common dtype of args a, b promoted to float (ints/bool -> float32). */
static tt_dtype float_result2(const tt_lower_ctx *c, int a, int bb) {
  tt_dtype dt = result2(c, a, bb);
  return tt_dtype_is_floating(dt) ? dt : TT_DEFAULT_FLOAT;
}

/* Floating-only binary ops: CPU raises "not implemented" for the rest. */
static tt_error *float_only2(tt_lower_ctx *c, binop *o) {
  tt_dtype dt = result2(c, 0, 1);
  if (!tt_dtype_is_floating(dt))
    return tt_lc_decline(c, "%s is not implemented for %s", tt_lc_op_name(c), tt_dtype_name(dt));
  return setup2(c, 0, 1, dt, o);
}

/* xlogy / xlog1py: y NaN -> NaN; x == 0 -> 0; else x * log(y) (log1p(y)) */
static tt_error *xlogy_common(tt_lower_ctx *c, tt_op log_op) {
  binop o;
  TT_TRY(setup2(c, 0, 1, float_result2(c, 0, 1), &o));
  tt_builder *b = tt_lc_builder(c);
  tt_val r = bin(b, TT_OP_MULTIPLY, o.x, un(b, log_op, o.y));
  r = sel(b, cmp(b, "EQ", o.x, tt_full_like(b, o.x, 0)), tt_full_like(b, r, 0), r);
  output(c, &o, sel(b, isnan_(b, o.y), tt_full_like(b, r, NAN), r));
  return NULL;
}
static tt_error *lower_xlogy(tt_lower_ctx *c) { return xlogy_common(c, TT_OP_LOG); }
static tt_error *lower_special_xlog1py(tt_lower_ctx *c) { return xlogy_common(c, TT_OP_LOG1P); }

/* hypot: float16/bfloat16/float32 computed in float64 (exact square sum, one
 * rounding); float64 scaled: m sqrt(1 + (n/m)^2). inf wins over NaN. */
static tt_error *lower_hypot(tt_lower_ctx *c) {
  binop o;
  TT_TRY(float_only2(c, &o));
  tt_builder *b = tt_lc_builder(c);
  tt_val x = un(b, TT_OP_ABS, o.x), y = un(b, TT_OP_ABS, o.y), r;
  if (o.dt != TT_F64) {
    x = tt_b_convert(b, x, TT_F64);
    y = tt_b_convert(b, y, TT_F64);
    r = un(b, TT_OP_SQRT, bin(b, TT_OP_ADD, bin(b, TT_OP_MULTIPLY, x, x), bin(b, TT_OP_MULTIPLY, y, y)));
  } else {
    tt_val m = bin(b, TT_OP_MAXIMUM, x, y), n = bin(b, TT_OP_MINIMUM, x, y);
    tt_val q = bin(b, TT_OP_DIVIDE, n, m);
    r = bin(b, TT_OP_MULTIPLY, m, un(b, TT_OP_SQRT, bin(b, TT_OP_ADD, tt_full_like(b, q, 1), bin(b, TT_OP_MULTIPLY, q, q))));
    r = sel(b, cmp(b, "EQ", m, tt_full_like(b, m, 0)), tt_full_like(b, m, 0), r);
    r = sel(b, bin(b, TT_OP_OR, isnan_(b, x), isnan_(b, y)), tt_full_like(b, r, NAN), r);
  }
  tt_val inf = bin(b, TT_OP_OR, cmp(b, "EQ", x, tt_full_like(b, x, INFINITY)), cmp(b, "EQ", y, tt_full_like(b, y, INFINITY)));
  r = sel(b, inf, tt_full_like(b, r, INFINITY), r);
  tt_lc_output(c, tt_b_convert(b, r, o.dt));
  return NULL;
}

/* Sign bit of floating x as a bool tensor. */
static tt_val sign_bit(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  s.dtype = s.dtype == TT_F64 ? TT_I64 : s.dtype == TT_F32 ? TT_I32 : TT_I16;
  return cmp(b, "LT", tt_b_bitcast(b, x, s), tt_b_full(b, s, 0));
}

/* copysign(x, y): |x| with y's sign bit; float result. */
static tt_error *lower_copysign(tt_lower_ctx *c) {
  binop o;
  tt_dtype dt = float_result2(c, 0, 1);
  TT_TRY(setup2(c, 0, 1, dt, &o));
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_b_convert(b, o.x, dt), y = tt_b_convert(b, o.y, dt);
  tt_val ax = un(b, TT_OP_ABS, x);
  tt_lc_output(c, sel(b, sign_bit(b, y), un(b, TT_OP_NEGATE, ax), ax));
  return NULL;
}

/* nextafter(x, y) on integer keys of the bit patterns (the XLA CPU runtime
 * flushes subnormals to zero in float comparisons; integer ones keep
 * them): key = bits >= 0 ? bits : -(bits & ~sign), ordered like the floats
 * with -0 == +0. */
static tt_error *lower_nextafter(tt_lower_ctx *c) {
  tt_dtype dt = result2(c, 0, 1);
  if (!tt_dtype_is_floating(dt))
    return tt_lc_decline(c, "nextafter is not implemented for %s", tt_dtype_name(dt));
  int args[2] = {0, 1};
  bshape s;
  TT_TRY(broadcast(c, args, 2, &s));
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_operand(c, 0, dt, s.nd, s.dims), y = tt_operand(c, 1, dt, s.nd, s.dims);
  tt_shape is = tt_b_shape(b, x);
  is.dtype = dt == TT_F64 ? TT_I64 : dt == TT_F32 ? TT_I32 : TT_I16;
  int width = dt == TT_F64 ? 64 : dt == TT_F32 ? 32 : 16;
  int64_t inf_bits = dt == TT_F64 ? INT64_C(0x7ff0000000000000)
                     : dt == TT_F32 ? 0x7f800000 : dt == TT_F16 ? 0x7c00 : 0x7f80;
  int64_t mag_mask = (int64_t)(UINT64_MAX >> (65 - width));
  tt_val zero = tt_b_full(b, is, 0), one = tt_b_full(b, is, 1);
  tt_val mask = tt_b_broadcast_to(b, tt_b_constant_int(b, is.dtype, mag_mask), is.ndim, is.dims);
  tt_val infk = tt_b_broadcast_to(b, tt_b_constant_int(b, is.dtype, inf_bits), is.ndim, is.dims);
  tt_val bx = tt_b_bitcast(b, x, is), by = tt_b_bitcast(b, y, is);
  tt_val mx = bin(b, TT_OP_AND, bx, mask), my = bin(b, TT_OP_AND, by, mask);
  tt_val kx = sel(b, cmp(b, "LT", bx, zero), un(b, TT_OP_NEGATE, mx), mx);
  tt_val ky = sel(b, cmp(b, "LT", by, zero), un(b, TT_OP_NEGATE, my), my);
  tt_val nan = bin(b, TT_OP_OR, cmp(b, "GT", mx, infk), cmp(b, "GT", my, infk));
  tt_val away = cmp(b, "EQ", cmp(b, "GT", ky, kx), cmp(b, "GT", kx, zero));
  tt_val step = sel(b, away, bin(b, TT_OP_ADD, bx, one), bin(b, TT_OP_SUBTRACT, bx, one));
  /* bits of the smallest subnormal, with y's sign */
  tt_val tiny = sel(b, cmp(b, "LT", ky, zero), bin(b, TT_OP_OR, one, un(b, TT_OP_NOT, mask)), one);
  tt_val rb = sel(b, cmp(b, "EQ", kx, zero), tiny, step);
  tt_val r = tt_b_bitcast(b, rb, tt_b_shape(b, x));
  r = sel(b, cmp(b, "EQ", kx, ky), y, r);
  tt_lc_output(c, sel(b, nan, tt_full_like(b, x, NAN), r));
  return NULL;
}

/* heaviside(x, values): x == 0 ? values : x > 0; same dtypes only. */
static tt_error *lower_heaviside(tt_lower_ctx *c) {
  tt_dtype dt = arg_dtype(c, 0);
  if (arg_dtype(c, 1) != dt)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "heaviside is not yet implemented for tensors with different dtypes.");
  int args[2] = {0, 1};
  bshape s;
  TT_TRY(broadcast(c, args, 2, &s));
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_operand(c, 0, dt, s.nd, s.dims), v = tt_operand(c, 1, dt, s.nd, s.dims);
  if (dt == TT_BOOL) {
    tt_lc_output(c, bin(b, TT_OP_OR, x, v));
    return NULL;
  }
  tt_val pos = sel(b, cmp(b, "GT", x, tt_full_like(b, x, 0)), tt_full_like(b, x, 1), tt_full_like(b, x, 0));
  tt_lc_output(c, sel(b, cmp(b, "EQ", x, tt_full_like(b, x, 0)), v, pos));
  return NULL;
}

/* logaddexp(a, b): isinf(a) && a == b ? a : max(a, b) + log1p(exp(-|a - b|));
 * base 2: max + log1p(2^-|a - b|) / ln 2 */
static tt_error *logaddexp_common(tt_lower_ctx *c, bool base2) {
  binop o;
  TT_TRY(float_only2(c, &o));
  tt_builder *b = tt_lc_builder(c);
  tt_val a = o.x, y = o.y;
  tt_val m = sel(b, cmp(b, "LT", a, y), y, a);
  tt_val nd = un(b, TT_OP_NEGATE, un(b, TT_OP_ABS, bin(b, TT_OP_SUBTRACT, a, y)));
  tt_val r;
  if (base2)
    r = bin(b, TT_OP_MULTIPLY, un(b, TT_OP_LOG1P, bin(b, TT_OP_POWER, tt_full_like(b, nd, 2), nd)),
            tt_full_like(b, nd, 1 / M_LN2));
  else
    r = un(b, TT_OP_LOG1P, un(b, TT_OP_EXPONENTIAL, nd));
  r = bin(b, TT_OP_ADD, m, r);
  tt_val same_inf = bin(b, TT_OP_AND, cmp(b, "EQ", un(b, TT_OP_ABS, a), tt_full_like(b, a, INFINITY)),
                        cmp(b, "EQ", a, y));
  output(c, &o, sel(b, same_inf, a, r));
  return NULL;
}
static tt_error *lower_logaddexp(tt_lower_ctx *c) { return logaddexp_common(c, false); }
static tt_error *lower_logaddexp2(tt_lower_ctx *c) { return logaddexp_common(c, true); }

/* float_power: both operands as float64, result float64. */
static tt_error *lower_float_power(tt_lower_ctx *c) {
  const char *name = tt_lc_op_name(c);
  if (!strncmp(name, "float_power_", 12) && arg_dtype(c, 0) != TT_F64)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "the base given to float_power_ has dtype %s but the operation's result "
                      "requires dtype Double",
                      arg_dtype(c, 0) == TT_F32 ? "Float" : arg_dtype(c, 0) == TT_F16 ? "Half"
                      : arg_dtype(c, 0) == TT_BF16 ? "BFloat16" : arg_dtype(c, 0) == TT_I64 ? "Long"
                      : arg_dtype(c, 0) == TT_I32 ? "Int" : "Bool");
  binop o;
  TT_TRY(setup2(c, 0, 1, TT_F64, &o));
  output(c, &o, bin(tt_lc_builder(c), TT_OP_POWER, o.x, o.y));
  return NULL;
}

/* Shifts (integers only): out-of-range shift counts (negative or >= bits)
 * give 0 (left, unsigned right) or the sign fill (signed right), like
 * PyTorch's CPU kernels. */
static int dtype_bits(tt_dtype dt) {
  switch (dt) {
    case TT_U8: case TT_I8: return 8;
    case TT_I16: return 16;
    case TT_I32: return 32;
    default: return 64;
  }
}

static tt_error *shift(tt_lower_ctx *c, bool left) {
  tt_dtype dt = result2(c, 0, 1);
  if (tt_dtype_is_floating(dt) || dt == TT_BOOL)
    return tt_lc_decline(c, "%s is not implemented for %s", tt_lc_op_name(c), tt_dtype_name(dt));
  binop o;
  TT_TRY(setup2(c, 0, 1, dt, &o));
  tt_builder *b = tt_lc_builder(c);
  int bits = dtype_bits(dt);
  bool is_signed = tt_dtype_is_signed(dt);
  tt_val oob = cmp(b, "GE", o.y, tt_full_like(b, o.y, bits - (!left && is_signed)));
  if (is_signed) oob = bin(b, TT_OP_OR, oob, cmp(b, "LT", o.y, tt_full_like(b, o.y, 0)));
  tt_val r;
  if (left) {
    r = sel(b, oob, tt_full_like(b, o.x, 0), bin(b, TT_OP_SHIFT_LEFT, o.x, o.y));
  } else if (is_signed) {
    tt_val fill = bin(b, TT_OP_SHIFT_RIGHT_ARITHMETIC, o.x, tt_full_like(b, o.x, bits - 1));
    r = sel(b, oob, fill, bin(b, TT_OP_SHIFT_RIGHT_ARITHMETIC, o.x, o.y));
  } else {
    r = sel(b, oob, tt_full_like(b, o.x, 0), bin(b, TT_OP_SHIFT_RIGHT_LOGICAL, o.x, o.y));
  }
  output(c, &o, r);
  return NULL;
}
static tt_error *lower_lshift(tt_lower_ctx *c) { return shift(c, true); }
static tt_error *lower_rshift(tt_lower_ctx *c) { return shift(c, false); }

/* gcd by Euclid's algorithm in a stablehlo.while with a fixed trip count
 * (the worst case for the dtype: consecutive Fibonacci numbers). The loop
 * carries (i, a, b); a step maps (a, b) to (b mod a, a) where a != 0. */
static tt_val gcd_vals(tt_builder *b, tt_val x, tt_val y) {
  tt_shape s = tt_b_shape(b, x);
  int bits = dtype_bits(s.dtype);
  int trips = bits == 8 ? 15 : bits == 16 ? 26 : bits == 32 ? 48 : 95;
  tt_val a = x, bb = y;
  if (tt_dtype_is_signed(s.dtype)) {
    a = un(b, TT_OP_ABS, x);
    bb = un(b, TT_OP_ABS, y);
  }
  tt_val init[3] = {tt_b_constant(b, TT_I32, 0), a, bb}, v[3], res[3];
  if (!tt_b_while_begin(b, init, 3, v)) return TT_INVALID;
  if (!tt_b_while_body(b, cmp(b, "LT", v[0], tt_b_constant(b, TT_I32, trips)), v)) return TT_INVALID;
  tt_val i2 = bin(b, TT_OP_ADD, v[0], tt_b_constant(b, TT_I32, 1));
  tt_val zero = tt_b_full(b, s, 0), one = tt_b_full(b, s, 1);
  tt_val nz = cmp(b, "NE", v[1], zero);
  tt_val r = bin(b, TT_OP_REMAINDER, v[2], sel(b, nz, v[1], one));
  tt_val next[3] = {i2, sel(b, nz, r, zero), sel(b, nz, v[1], v[2])};
  if (!tt_b_while_end(b, next, res)) return TT_INVALID;
  return res[2];
}

static tt_error *gcd_setup(tt_lower_ctx *c, binop *o) {
  tt_dtype dt = result2(c, 0, 1);
  if (tt_dtype_is_floating(dt) || dt == TT_BOOL)
    return tt_lc_decline(c, "%s is not implemented for %s", tt_lc_op_name(c), tt_dtype_name(dt));
  return setup2(c, 0, 1, dt, o);
}

static tt_error *lower_gcd(tt_lower_ctx *c) {
  binop o;
  TT_TRY(gcd_setup(c, &o));
  output(c, &o, gcd_vals(tt_lc_builder(c), o.x, o.y));
  return NULL;
}

/* lcm: g == 0 ? 0 : |a / g * b| */
static tt_error *lower_lcm(tt_lower_ctx *c) {
  binop o;
  TT_TRY(gcd_setup(c, &o));
  tt_builder *b = tt_lc_builder(c);
  tt_val g = gcd_vals(b, o.x, o.y);
  tt_val zero = tt_full_like(b, g, 0);
  tt_val nz = cmp(b, "NE", g, zero);
  tt_val q = bin(b, TT_OP_MULTIPLY, bin(b, TT_OP_DIVIDE, o.x, sel(b, nz, g, tt_full_like(b, g, 1))), o.y);
  if (tt_dtype_is_signed(o.dt)) q = un(b, TT_OP_ABS, q);
  output(c, &o, sel(b, nz, q, zero));
  return NULL;
}

/* ------------------------------------------------------------ table */

TT_LOWERINGS(elementwise) = {
    {lower_add, {"add.Tensor", "add_.Tensor", "add.out", "add.Scalar", "add_.Scalar",
                 "add.Scalar_out"}},
    {lower_sub, {"sub.Tensor", "sub_.Tensor", "sub.out", "sub.Scalar", "sub_.Scalar",
                 "sub.Scalar_out"}},
    {lower_rsub, {"rsub.Tensor", "rsub.Scalar", "rsub.Tensor_out", "rsub.Scalar_out"}},
    {lower_mul, {"mul.Tensor", "mul_.Tensor", "mul.out", "mul.Scalar", "mul_.Scalar",
                 "mul.Scalar_out"}},
    {lower_div, {"div.Tensor", "div_.Tensor", "div.out", "div.Scalar", "div_.Scalar",
                 "div.Scalar_out"}},
    {lower_div, {"div.Tensor_mode", "div_.Tensor_mode", "div.out_mode", "div.Scalar_mode",
                 "div_.Scalar_mode", "div.Scalar_mode_out"}},
    {lower_floor_divide, {"floor_divide", "floor_divide_.Tensor", "floor_divide.out",
                          "floor_divide.Scalar", "floor_divide_.Scalar", "floor_divide.Scalar_out"}},
    {lower_remainder, {"remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out",
                       "remainder.Scalar", "remainder_.Scalar", "remainder.Scalar_out",
                       "remainder.Scalar_Tensor", "remainder.Scalar_Tensor_out"}},
    {lower_fmod, {"fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out", "fmod.Scalar", "fmod_.Scalar",
                  "fmod.Scalar_out"}},
    {lower_pow, {"pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out", "pow.Tensor_Scalar",
                 "pow_.Scalar", "pow.Tensor_Scalar_out", "pow.Scalar", "pow.Scalar_out"}},
    {lower_atan2, {"atan2", "atan2_", "atan2.out"}},
    {lower_maximum, {"maximum", "maximum.out"}},
    {lower_minimum, {"minimum", "minimum.out"}},
    {lower_fmax, {"fmax", "fmax.out"}},
    {lower_fmin, {"fmin", "fmin.out"}},
#define CMP(op)                                                                                 \
  {lower_##op, {#op ".Tensor", #op "_.Tensor", #op ".Tensor_out", #op ".Scalar", #op "_.Scalar", \
                #op ".Scalar_out"}}
    CMP(eq), CMP(ne), CMP(lt), CMP(le), CMP(gt), CMP(ge),
#undef CMP
    {lower_logical_and, {"logical_and", "logical_and_", "logical_and.out"}},
    {lower_logical_or, {"logical_or", "logical_or_", "logical_or.out"}},
    {lower_logical_xor, {"logical_xor", "logical_xor_", "logical_xor.out"}},
#define BW(op)                                                                                  \
  {lower_##op, {#op ".Tensor", #op "_.Tensor", #op ".Tensor_out", #op ".Scalar", #op "_.Scalar", \
                #op ".Scalar_out", #op ".Scalar_Tensor", #op ".Scalar_Tensor_out"}}
    BW(bitwise_and), BW(bitwise_or), BW(bitwise_xor),
#undef BW
    {lower_where, {"where.self", "where.self_out"}},
    {lower_clamp, {"clamp", "clamp_", "clamp.out", "clamp.Tensor", "clamp_.Tensor",
                   "clamp.Tensor_out"}},
    {lower_clamp_min, {"clamp_min", "clamp_min_", "clamp_min.out", "clamp_min.Tensor",
                       "clamp_min_.Tensor", "clamp_min.Tensor_out"}},
    {lower_clamp_max, {"clamp_max", "clamp_max_", "clamp_max.out", "clamp_max.Tensor",
                       "clamp_max_.Tensor", "clamp_max.Tensor_out"}},
    {lower_lerp, {"lerp.Scalar", "lerp_.Scalar", "lerp.Scalar_out", "lerp.Tensor", "lerp_.Tensor",
                  "lerp.Tensor_out"}},
    {lower_addcmul, {"addcmul", "addcmul_", "addcmul.out"}},
    {lower_addcdiv, {"addcdiv", "addcdiv_", "addcdiv.out"}},
    {lower_xlogy, {"xlogy.Tensor", "xlogy_.Tensor", "xlogy.OutTensor", "xlogy.Scalar_Other",
                   "xlogy_.Scalar_Other", "xlogy.OutScalar_Other", "xlogy.Scalar_Self",
                   "xlogy.OutScalar_Self"}},
    {lower_special_xlog1py, {"special_xlog1py", "special_xlog1py.out", "special_xlog1py.other_scalar",
                             "special_xlog1py.other_scalar_out", "special_xlog1py.self_scalar",
                             "special_xlog1py.self_scalar_out"}},
    {lower_hypot, {"hypot", "hypot_", "hypot.out"}},
    {lower_copysign, {"copysign.Tensor", "copysign_.Tensor", "copysign.out", "copysign.Scalar",
                      "copysign_.Scalar", "copysign.Scalar_out"}},
    {lower_nextafter, {"nextafter", "nextafter_", "nextafter.out"}},
    {lower_heaviside, {"heaviside", "heaviside_", "heaviside.out"}},
    {lower_logaddexp, {"logaddexp", "logaddexp.out"}},
    {lower_logaddexp2, {"logaddexp2", "logaddexp2.out"}},
    {lower_float_power, {"float_power.Tensor_Tensor", "float_power_.Tensor",
                         "float_power.Tensor_Tensor_out", "float_power.Tensor_Scalar",
                         "float_power_.Scalar", "float_power.Tensor_Scalar_out", "float_power.Scalar",
                         "float_power.Scalar_out"}},
    {lower_lshift, {"__lshift__.Tensor", "__lshift__.Scalar", "__lshift__.Tensor_out",
                    "__lshift__.Scalar_out", "__ilshift__.Tensor", "__ilshift__.Scalar"}},
    {lower_lshift, {"bitwise_left_shift.Tensor", "bitwise_left_shift_.Tensor",
                    "bitwise_left_shift.Tensor_out", "bitwise_left_shift.Tensor_Scalar",
                    "bitwise_left_shift_.Tensor_Scalar", "bitwise_left_shift.Tensor_Scalar_out",
                    "bitwise_left_shift.Scalar_Tensor", "bitwise_left_shift.Scalar_Tensor_out"}},
    {lower_rshift, {"__rshift__.Tensor", "__rshift__.Scalar", "__rshift__.Tensor_out",
                    "__rshift__.Scalar_out", "__irshift__.Tensor", "__irshift__.Scalar"}},
    {lower_rshift, {"bitwise_right_shift.Tensor", "bitwise_right_shift_.Tensor",
                    "bitwise_right_shift.Tensor_out", "bitwise_right_shift.Tensor_Scalar",
                    "bitwise_right_shift_.Tensor_Scalar", "bitwise_right_shift.Tensor_Scalar_out",
                    "bitwise_right_shift.Scalar_Tensor", "bitwise_right_shift.Scalar_Tensor_out"}},
    {lower_gcd, {"gcd", "gcd_", "gcd.out"}},
    {lower_lcm, {"lcm", "lcm_", "lcm.out"}},
    {NULL, {NULL}},
};
