/* Shared helpers of the unary, special and activations families (see
 * unary_common.h). */

#include <math.h>

#include "ops/unary_common.h"
#include "ops/complex_math.h"

tt_dtype uc_float_result(tt_dtype dt) {
  return tt_dtype_is_floating(dt) || tt_dtype_is_complex(dt) ? dt : TT_DEFAULT_FLOAT;
}

/* Argument i (a tpu tensor or a CPU scalar tensor) as dt, in its own shape. */
tt_val uc_read_as(tt_lower_ctx *c, int i, tt_dtype dt) {
  return tt_operand(c, i, dt, tt_arg_ndim(c, i), tt_arg_dims(c, i));
}

tt_dtype uc_arg_dtype(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_TENSOR ? a->u.tensor->dtype : TT_F32;
}

/* Scalar argument i as dt, broadcast like x. */
tt_val uc_S(tt_lower_ctx *c, int i, tt_val x) {
  tt_builder *b = tt_lc_builder(c);
  tt_shape s = tt_b_shape(b, x);
  return tt_b_broadcast_to(b, tt_lc_scalar(c, i, s.dtype), s.ndim, s.dims);
}

tt_val uc_un(tt_builder *b, tt_op op, tt_val x) { return tt_b_un(b, op, x); }
tt_val uc_chlo(tt_builder *b, tt_op op, tt_val x) {
  return tt_b_emit1(b, op, &x, 1, NULL, tt_b_shape(b, x));
}
tt_val uc_cmp(tt_builder *b, const char *dir, tt_val x, tt_val y) {
  return tt_b_compare(b, dir, x, y);
}
tt_val uc_sel(tt_builder *b, tt_val p, tt_val t, tt_val f) { return tt_b_select(b, p, t, f); }

/* A floating function of self (arg 0): ints/bool promote to float32. */
tt_error *uc_float_unary(tt_lower_ctx *c, unary_fn f) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype out = uc_float_result(uc_arg_dtype(c, 0));
  tt_val x = uc_read_as(c, 0, tt_opmath(out));
  tt_val y = tt_dtype_is_complex(out) ? tt_complex_apply(b, tt_lc_op_name(c), f, x) : f(b, x);
  tt_lc_output(c, tt_b_convert(b, y, out));
  return NULL;
}

/* A floating-only function (activations): other dtypes run on CPU, which
 * raises PyTorch's "not implemented for 'Long'" error. */
tt_error *uc_require_float(tt_lower_ctx *c, int i) {
  if (!tt_dtype_is_floating(uc_arg_dtype(c, i)))
    return tt_lc_decline(c, "%s is not implemented for %s", tt_lc_op_name(c),
                         tt_dtype_name(uc_arg_dtype(c, i)));
  return NULL;
}

/* PyTorch: 1 / (1 + exp(-x)) */
tt_val uc_sigmoid(tt_builder *b, tt_val x) {
  tt_val one = tt_full_like(b, x, 1);
  return tt_div(b, one, tt_add(b, one, uc_un(b, TT_OP_EXPONENTIAL, uc_un(b, TT_OP_NEGATE, x))));
}

/* Sign bit of floating x (true for -0.0 and negative NaNs). */
tt_val uc_sign_bit(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  s.dtype = s.dtype == TT_F64 ? TT_I64 : s.dtype == TT_F32 ? TT_I32 : TT_I16;
  return uc_cmp(b, "LT", tt_b_bitcast(b, x, s), tt_b_full(b, s, 0));
}
/* copysign(1, x) */
tt_val uc_copysign_one(tt_builder *b, tt_val x) {
  return uc_sel(b, uc_sign_bit(b, x), tt_full_like(b, x, -1), tt_full_like(b, x, 1));
}


double uc_finite_max(tt_dtype dt) {
  switch (dt) {
    case TT_F16: return 65504.0;
    case TT_BF16: return 3.3895313892515355e38;
    case TT_F32: return 3.4028234663852886e38;
    default: return 1.7976931348623157e308;
  }
}
