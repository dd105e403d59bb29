/* Tests of the C core without PyTorch: builder text, the lowering table,
 * and views read/written through a real plugin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/core.h"
#include "ops/lowering.h"
#include "shlo/builder.h"

#include "check.h"

static void test_builder_text(void) {
  tt_builder *b = tt_builder_new();
  int64_t dims[2] = {2, 3};
  tt_val x = tt_b_param(b, tt_shape_make(TT_F32, 2, dims));
  tt_val y = tt_b_unary(b, "exponential", x);
  tt_val one = tt_b_full(b, tt_b_shape(b, y), 1.0);
  tt_val z = tt_b_binary(b, "add", y, one);
  char *text = NULL;
  tt_error *err = tt_b_finish(b, &z, 1, &text);
  CHECK(err == NULL);
  CHECK(text && strstr(text, "\"stablehlo.exponential\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>"));
  CHECK(text && strstr(text, "dense<0x3F800000> : tensor<f32>"));
  CHECK(text && strstr(text, "func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<2x3xf32>)"));
  free(text);
  tt_builder_free(b);
}

static void test_builder_error_sticks(void) {
  tt_builder *b = tt_builder_new();
  int64_t d1 = 2, d2 = 3;
  tt_val x = tt_b_param(b, tt_shape_make(TT_F32, 1, &d1));
  tt_val y = tt_b_param(b, tt_shape_make(TT_F32, 1, &d2));
  tt_val z = tt_b_binary(b, "add", x, y);
  CHECK(z == TT_INVALID);
  CHECK(tt_b_error(b) != NULL);
  tt_val w = tt_b_unary(b, "negate", x);
  CHECK(w == TT_INVALID);
  char *text = NULL;
  tt_error *err = tt_b_finish(b, &x, 1, &text);
  CHECK(err != NULL && text == NULL);
  tt_error_free(err);
  tt_builder_free(b);
}

static void test_half_constants(void) {
  CHECK(tt_float_bits(TT_F16, 1.0) == 0x3C00);
  CHECK(tt_float_bits(TT_F16, -2.0) == 0xC000);
  CHECK(tt_float_bits(TT_F16, 65504.0) == 0x7BFF);
  CHECK(tt_float_bits(TT_F16, 1e9) == 0x7C00);
  CHECK(tt_float_bits(TT_BF16, 1.0) == 0x3F80);
  CHECK(tt_float_from_bits(TT_F16, 0x3555) > 0.333 && tt_float_from_bits(TT_F16, 0x3555) < 0.334);
}

static void test_promotion(void) {
  CHECK(tt_promote(TT_I64, TT_F16) == TT_F16);
  CHECK(tt_promote(TT_BF16, TT_F16) == TT_F32);
  CHECK(tt_promote(TT_U8, TT_I8) == TT_I16);
  CHECK(tt_promote(TT_BOOL, TT_BOOL) == TT_BOOL);
  CHECK(!tt_can_cast(TT_F32, TT_I64));
  CHECK(tt_can_cast(TT_I64, TT_F32));
  /* PyTorch's canCast: a real result may go to a complex out=, not back */
  CHECK(tt_can_cast(TT_F32, TT_C64));
  CHECK(tt_can_cast(TT_F64, TT_C64));
  CHECK(!tt_can_cast(TT_C64, TT_F64));
  CHECK(!tt_can_cast(TT_F32, TT_BOOL));
}

/* The op table: sorted (lookup is a binary search), every row found by its
 * own name, arity checked. */
static void test_op_table(void) {
  for (int i = 1; i < TT_OP_COUNT; i++)
    CHECK(strcmp(tt_op_get((tt_op)(i - 1))->name, tt_op_get((tt_op)i)->name) < 0);
  for (int i = 0; i < TT_OP_COUNT; i++) CHECK(tt_op_lookup(tt_op_get((tt_op)i)->name) == (tt_op)i);
  CHECK(tt_op_lookup("stablehlo.no_such_op") == TT_OP_COUNT);
  CHECK(tt_op_check_arity(TT_OP_ADD, 2, 1, 0, 0) == NULL);
  CHECK(tt_op_check_arity(TT_OP_ADD, 3, 1, 0, 0) != NULL);
  CHECK(tt_op_check_arity(TT_OP_WHILE, 3, 3, 2, 0) == NULL);
  CHECK(tt_op_check_arity(TT_OP_WHILE, 3, 2, 2, 0) != NULL);
  CHECK(tt_op_check_arity(TT_OP_REDUCE, 4, 2, 1, 0) == NULL);
  CHECK(tt_op_check_arity(TT_OP_REDUCE, 3, 2, 1, 0) != NULL);
  CHECK(tt_op_check_arity(TT_OP_DYNAMIC_SLICE, 3, 1, 0, 2) == NULL);
  CHECK(tt_op_check_arity(TT_OP_DYNAMIC_SLICE, 2, 1, 0, 2) != NULL);

  /* a wrong count or an unknown name is an internal error, not text */
  tt_builder *b = tt_builder_new();
  tt_val x = tt_b_param(b, tt_shape_scalar(TT_F32));
  tt_val ins[3] = {x, x, x};
  CHECK(tt_b_emit1(b, TT_OP_ADD, ins, 3, NULL, tt_shape_scalar(TT_F32)) == TT_INVALID);
  CHECK(tt_b_error(b) && strstr(tt_error_message(tt_b_error(b)), "stablehlo.add") != NULL);
  tt_builder_free(b);
  b = tt_builder_new();
  x = tt_b_param(b, tt_shape_scalar(TT_F32));
  CHECK(tt_b_unary(b, "no_such_op", x) == TT_INVALID);
  CHECK(tt_b_error(b) != NULL);
  tt_builder_free(b);
}

/* while and case built through the builder: block arguments, values scoped
 * to their block, the op emitted when its last block closes. */
static void test_control_flow(void) {
  tt_builder *b = tt_builder_new();
  tt_val n = tt_b_param(b, tt_shape_scalar(TT_I64));
  tt_val init[2] = {tt_b_constant(b, TT_I64, 0), tt_b_constant(b, TT_I64, 0)}, v[2], res[2];
  CHECK(tt_b_while_begin(b, init, 2, v));
  CHECK(tt_b_while_body(b, tt_b_compare(b, "LT", v[0], n), v));
  tt_val one = tt_b_constant(b, TT_I64, 1);
  tt_val i2 = tt_b_binary(b, "add", v[0], one);
  tt_val next[2] = {i2, tt_b_binary(b, "add", v[1], i2)};
  CHECK(tt_b_while_end(b, next, res));
  tt_val idx = tt_b_convert(b, tt_b_compare(b, "GT", res[1], n), TT_I32);
  tt_shape s = tt_shape_scalar(TT_I64);
  tt_val r;
  CHECK(tt_b_case_begin(b, idx, &s, 1));
  CHECK(tt_b_case_next(b, &res[1]));
  tt_val neg = tt_b_unary(b, "negate", res[1]);
  CHECK(tt_b_case_end(b, &neg, &r));
  char *text = NULL;
  tt_error *err = tt_b_finish(b, &r, 1, &text);
  CHECK(err == NULL);
  CHECK(text && strstr(text, "\"stablehlo.while\"") && strstr(text, "\"stablehlo.case\"") &&
        strstr(text, "\"stablehlo.return\"") && strstr(text, "^bb0("));
  free(text);
  tt_error_free(err);
  tt_builder_free(b);

  /* a value of a closed block cannot be used outside it */
  b = tt_builder_new();
  tt_val x0 = tt_b_param(b, tt_shape_scalar(TT_I64)), a[1], out[1];
  CHECK(tt_b_while_begin(b, &x0, 1, a));
  CHECK(tt_b_while_body(b, tt_b_compare(b, "LT", a[0], x0), a));
  tt_val inner = tt_b_binary(b, "add", a[0], a[0]);
  CHECK(tt_b_while_end(b, &inner, out));
  CHECK(tt_b_binary(b, "add", inner, x0) == TT_INVALID);
  CHECK(tt_b_error(b) != NULL);
  tt_builder_free(b);

  /* a body returning the wrong type, and a loop left open, are errors */
  b = tt_builder_new();
  x0 = tt_b_param(b, tt_shape_scalar(TT_I64));
  CHECK(tt_b_while_begin(b, &x0, 1, a));
  CHECK(!tt_b_while_body(b, a[0], a)); /* condition not a bool */
  tt_builder_free(b);
  b = tt_builder_new();
  x0 = tt_b_param(b, tt_shape_scalar(TT_I64));
  CHECK(tt_b_while_begin(b, &x0, 1, a));
  err = tt_b_finish(b, &x0, 1, &text);
  CHECK(err != NULL && text == NULL);
  tt_error_free(err);
  tt_builder_free(b);
}

static void test_lowering_table(void) {
  CHECK(tt_lowering_find("add.Tensor") != NULL);
  CHECK(tt_lowering_find("add_.Tensor") == tt_lowering_find("add.Tensor"));
  CHECK(tt_lowering_find("no_such_op.Tensor") == NULL);
  CHECK(tt_lowering_count() > 0);
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  test_builder_text();
  test_builder_error_sticks();
  test_half_constants();
  test_promotion();
  test_lowering_table();
  test_op_table();
  test_control_flow();
  printf("core: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
