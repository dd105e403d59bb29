/* Binary elementwise arithmetic with broadcasting and PyTorch type
 * promotion: add, sub, mul, div, and friends.
 *
 * Shapes: out = broadcast(self, other); dtype = result_type(self, other)
 * (promoted to float for true division). Emits one stablehlo op per
 * arithmetic step on the converted, broadcast operands. */
#include "ops/common.h"

/* Reads args a and b converted to dt and broadcast together. */
static tt_error *binary_operands(tt_lower_ctx *c, int a, int b, tt_dtype dt, tt_val *x, tt_val *y) {
  int args[2] = {a, b}, nd;
  int64_t dims[TT_MAX_DIMS];
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  *x = tt_operand(c, a, dt, nd, dims);
  *y = tt_operand(c, b, dt, nd, dims);
  return NULL;
}

/* add/sub: self (+|-) alpha * other */
static tt_error *add_sub(tt_lower_ctx *c, const char *op) {
  int args[2] = {0, 1};
  tt_dtype dt = tt_result_type(c, args, 2);
  tt_builder *b = tt_lc_builder(c);
  if (dt == TT_BOOL && op[0] == 's')
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Subtraction, the `-` operator, with two bool tensors is not supported. "
                      "Use the `^` or `logical_xor()` operator instead.");
  tt_val x, y;
  TT_TRY(binary_operands(c, 0, 1, dt, &x, &y));
  const tt_scalar *alpha = tt_lc_scalar_ref(c, 2);
  if (alpha && !(alpha->kind != TT_SCALAR_FLOAT && alpha->i == 1)) {
    if (alpha->kind == TT_SCALAR_FLOAT && !tt_dtype_is_floating(dt))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "For integral input tensors, argument alpha must not be a floating point number.");
    tt_val a = tt_b_broadcast_to(b, tt_lc_scalar(c, 2, dt), tt_b_ndim(b, y), tt_b_shape(b, y).dims);
    y = tt_b_binary(b, dt == TT_BOOL ? "and" : "multiply", y, a);
  }
  tt_lc_output(c, tt_b_binary(b, dt == TT_BOOL ? "or" : op, x, y));
  return NULL;
}

static tt_error *lower_add(tt_lower_ctx *c) { return add_sub(c, "add"); }
static tt_error *lower_sub(tt_lower_ctx *c) { return add_sub(c, "subtract"); }

static tt_error *lower_mul(tt_lower_ctx *c) {
  int args[2] = {0, 1};
  tt_dtype dt = tt_result_type(c, args, 2);
  tt_val x, y;
  TT_TRY(binary_operands(c, 0, 1, dt, &x, &y));
  tt_lc_output(c, tt_b_binary(tt_lc_builder(c), dt == TT_BOOL ? "and" : "multiply", x, y));
  return NULL;
}

TT_LOWERINGS(elementwise) = {
    {lower_add, {"add.Tensor", "add_.Tensor", "add.out", "add.Scalar", "add_.Scalar"}},
    {lower_sub, {"sub.Tensor", "sub_.Tensor", "sub.out", "sub.Scalar", "sub_.Scalar"}},
    {lower_mul, {"mul.Tensor", "mul_.Tensor", "mul.out", "mul.Scalar", "mul_.Scalar"}},
    {NULL, {NULL}},
};
