/* Helpers shared by the linalg, conv, pool and linalg_solve lowering families
 * (see linalg_common.h). */
#include "ops/linalg_common.h"

tt_dtype linalg_acc_dtype(tt_dtype dt) {
  return (dt == TT_F16 || dt == TT_BF16) ? TT_F32 : dt;
}

bool linalg_is_float(tt_dtype dt) {
  return dt == TT_F16 || dt == TT_BF16 || dt == TT_F32 || dt == TT_F64;
}

/* Dtypes CPU PyTorch multiplies matrices in: floats and integers (no bool). */
bool linalg_matmul_dtype_ok(tt_dtype dt) {
  return linalg_is_float(dt) || dt == TT_U8 || dt == TT_I8 || dt == TT_I16 || dt == TT_I32 ||
         dt == TT_I64;
}

bool linalg_is_tensor(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_TENSOR && a->u.tensor->storage;
}

/* x [d0..dn) multiplied by a per-row vector along dim `dim`. */
tt_val linalg_bcast_dim(tt_builder *b, tt_val v, int ndim, const int64_t *dims, int dim) {
  int64_t map[1] = {dim};
  return tt_b_broadcast_in_dim(b, v, ndim, dims, map);
}
