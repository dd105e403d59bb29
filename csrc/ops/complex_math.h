/* Complex elementwise math matching PyTorch's CPU results at extremal
 * values (complex_math.c), for the lowerings of other families that meet
 * complex values: division, exp, the unary driver, nan/inf predicates. */
#ifndef TT_OPS_COMPLEX_MATH_H
#define TT_OPS_COMPLEX_MATH_H

#include "ops/common.h"

/* x / y of one complex dtype and shape, c10::complex's algorithm. */
tt_val tt_complex_div(tt_builder *b, tt_val x, tt_val y);
/* exp(z) as glibc's cexp. */
tt_val tt_complex_exp(tt_builder *b, tt_val z);
/* |z| as std::abs (inf beside a NaN part), and sgn (z / |z|, 0 at 0). */
tt_val tt_complex_abs(tt_builder *b, tt_val z);
tt_val tt_complex_sgn(tt_builder *b, tt_val z);
/* bool: either component nan / infinite / both finite. */
tt_val tt_complex_isnan(tt_builder *b, tt_val z);
tt_val tt_complex_isinf(tt_builder *b, tt_val z);
tt_val tt_complex_isfinite(tt_builder *b, tt_val z);
/* The complex form of the floating unary op named op_name ("tanh_",
 * "exp.out", ...) applied to z: this file's function where it has one,
 * else generic(b, z) (the op's stablehlo lowering). */
tt_val tt_complex_apply(tt_builder *b, const char *op_name, tt_val (*generic)(tt_builder *, tt_val),
                        tt_val z);

#endif
