/* Helpers shared by the unary-style families (unary, special, activations):
 * opmath/dtype rules, argument readers, short builder wrappers, the
 * floating-unary driver and a few functions more than one family calls. */
#ifndef TT_OPS_UNARY_COMMON_H
#define TT_OPS_UNARY_COMMON_H

#include "ops/common.h"

tt_dtype uc_float_result(tt_dtype dt);
tt_val uc_read_as(tt_lower_ctx *c, int i, tt_dtype dt);
tt_dtype uc_arg_dtype(const tt_lower_ctx *c, int i);
tt_val uc_S(tt_lower_ctx *c, int i, tt_val x);
tt_val uc_un(tt_builder *b, tt_op op, tt_val x);
tt_val uc_chlo(tt_builder *b, tt_op op, tt_val x);
tt_val uc_cmp(tt_builder *b, const char *dir, tt_val x, tt_val y);
tt_val uc_sel(tt_builder *b, tt_val p, tt_val t, tt_val f);

typedef tt_val (*unary_fn)(tt_builder *b, tt_val x);

tt_error *uc_float_unary(tt_lower_ctx *c, unary_fn f);
tt_error *uc_require_float(tt_lower_ctx *c, int i);
tt_val uc_sigmoid(tt_builder *b, tt_val x);
tt_val uc_sign_bit(tt_builder *b, tt_val x);
tt_val uc_copysign_one(tt_builder *b, tt_val x);
double uc_finite_max(tt_dtype dt);
/* Hurwitz zeta(x, q) as PyTorch's CPU kernel defines it (special_zeta.c);
 * x and q float64 of one shape. */
tt_val tt_hurwitz_zeta(tt_builder *b, tt_val x, tt_val q);

/* Reads self (arg i) in opmath after checking it is floating. */
#define FLOAT_SELF(i)                      \
  TT_TRY(uc_require_float(c, (i)));        \
  tt_builder *b = tt_lc_builder(c);        \
  tt_dtype dt = uc_arg_dtype(c, (i));      \
  tt_val x = uc_read_as(c, (i), tt_opmath(dt))
#define OUT(v) (tt_lc_output(c, tt_b_convert(b, (v), dt)), (tt_error *)NULL)

#define FLOAT_UNARY(name)                                                        \
  static tt_error *lower_##name(tt_lower_ctx *c) { return uc_float_unary(c, f_##name); }

#define FU(op) {lower_##op, {#op, #op "_", #op ".out"}}

#endif
