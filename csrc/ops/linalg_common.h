/* Helpers shared by the linalg, conv, pool and linalg_solve lowering families
 * (moved from linalg.c): accumulation dtype, dtype checks, tensor-argument
 * test and per-dim broadcast. */
#ifndef TT_OPS_LINALG_COMMON_H
#define TT_OPS_LINALG_COMMON_H

#include "ops/common.h"

/* Dtypes CPU PyTorch multiplies matrices in: floats and integers (no bool). */
bool linalg_matmul_dtype_ok(tt_dtype dt);

bool linalg_is_tensor(const tt_lower_ctx *c, int i);

#endif
