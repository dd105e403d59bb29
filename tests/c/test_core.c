/* Tests of the C core without PyTorch: builder text, the lowering table,
 * and views read/written through a real plugin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/core.h"
#include "ops/lowering.h"
#include "shlo/builder.h"

static int passed, failed;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (cond) passed++;                                               \
    else {                                                            \
      failed++;                                                       \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                 \
  } while (0)

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
  printf("core: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
