/* Helpers shared by the linalg, conv, pool and linalg_solve lowering families
 * (see linalg_common.h). */
#include "ops/linalg_common.h"

/* Dtypes CPU PyTorch multiplies matrices in: floats, integers (no bool),
 * complex (dot_general multiplies complex values; only the ops op_props.c
 * lists as complex-native ever see them). */
bool linalg_matmul_dtype_ok(tt_dtype dt) {
  return tt_dtype_is_floating(dt) || tt_dtype_is_complex(dt) || dt == TT_U8 || dt == TT_I8 || dt == TT_I16 || dt == TT_I32 ||
         dt == TT_I64;
}

bool linalg_is_tensor(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_TENSOR && a->u.tensor->storage;
}
