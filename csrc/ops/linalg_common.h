/* Helpers shared by the linalg, conv, pool and linalg_solve lowering families
 * (moved from linalg.c): accumulation dtype, dtype checks, tensor-argument
 * test and per-dim broadcast. */
#ifndef TT_OPS_LINALG_COMMON_H
#define TT_OPS_LINALG_COMMON_H

#include "ops/common.h"

tt_dtype linalg_acc_dtype(tt_dtype dt);

bool linalg_is_float(tt_dtype dt);

/* Dtypes CPU PyTorch multiplies matrices in: floats and integers (no bool). */
bool linalg_matmul_dtype_ok(tt_dtype dt);

bool linalg_is_tensor(const tt_lower_ctx *c, int i);

/* x [d0..dn) multiplied by a per-row vector along dim `dim`. */
tt_val linalg_bcast_dim(tt_builder *b, tt_val v, int ndim, const int64_t *dims, int dim);

#endif
