/* Ops particular to complex numbers: building complex values from real
 * ones (complex, polar) and conjugation (angle is in special.c).
 *
 * complex64 values are stablehlo complex<f32> (complex128: complex<f64>);
 * stablehlo.real / imag / complex move between them and their components.
 * Which other lowerings accept complex tensors is listed in op_props.c
 * (TT_PROP_COMPLEX_NATIVE): the boundary runs every other op that meets a
 * complex tensor on CPU. */
#include "ops/common.h"

static tt_dtype tensor_dtype(const tt_lower_ctx *c, int i) {
  const tt_tensor_ref *r = tt_lc_ref(c, i);
  return r ? r->dtype : TT_F32;
}

/* complex(real, imag) and polar(abs, angle): two real tensors of one
 * floating dtype (float32 or float64; torch's complex32 is not a tpu
 * dtype), broadcast together. */
static tt_error *two_parts(tt_lower_ctx *c, tt_val *x, tt_val *y) {
  tt_dtype a = tensor_dtype(c, 0), d = tensor_dtype(c, 1);
  bool fa = a == TT_F16 || a == TT_F32 || a == TT_F64, fd = d == TT_F16 || d == TT_F32 || d == TT_F64;
  if (!fa || !fd) /* CPU's order: the dtype class first, then equality */
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected both inputs to be Half, Float or Double tensors but got %s and %s",
                      tt_dtype_torch_name(a), tt_dtype_torch_name(d));
  if (a != d)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Expected object of scalar type %s but got scalar type %s "
                      "for second argument", tt_dtype_torch_name(a), tt_dtype_torch_name(d));
  if (a != TT_F32 && a != TT_F64)
    return tt_lc_decline(c, "%s of %s parts", tt_lc_op_name(c), tt_dtype_name(a));
  int args[2] = {0, 1}, nd;
  int64_t dims[TT_MAX_DIMS];
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  *x = tt_operand(c, 0, a, nd, dims);
  *y = tt_operand(c, 1, a, nd, dims);
  return NULL;
}

static tt_error *lower_complex(tt_lower_ctx *c) {
  tt_val re, im;
  TT_TRY(two_parts(c, &re, &im));
  tt_lc_output(c, tt_b_complex(tt_lc_builder(c), re, im));
  return NULL;
}

/* abs * (cos(angle) + i sin(angle)) */
static tt_error *lower_polar(tt_lower_ctx *c) {
  tt_val r, th;
  TT_TRY(two_parts(c, &r, &th));
  tt_builder *b = tt_lc_builder(c);
  tt_val re = tt_mul(b, r, tt_b_un(b, TT_OP_COSINE, th));
  tt_val im = tt_mul(b, r, tt_b_un(b, TT_OP_SINE, th));
  tt_lc_output(c, tt_b_complex(b, re, im));
  return NULL;
}

/* conj_physical: (re, -im); the identity on real tensors. */
static tt_error *lower_conj_physical(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_lc_tensor(c, 0);
  if (tt_dtype_is_complex(tt_b_dtype(b, x)))
    x = tt_b_complex(b, tt_b_real(b, x), tt_b_un(b, TT_OP_NEGATE, tt_b_imag(b, x)));
  tt_lc_output(c, x);
  return NULL;
}

TT_LOWERINGS(complex) = {
    {lower_complex, {"complex", "complex.out"}},
    {lower_polar, {"polar", "polar.out"}},
    {lower_conj_physical, {"conj_physical", "conj_physical_", "conj_physical.out", "_conj_physical"}},
    {NULL, {NULL}},
};
