/* Helpers shared by the nn* lowering families (nn, nn_norm, nn_loss,
 * nn_resample, nn_pool); defined in nn_common.c. Numerics follow CPU
 * PyTorch: float16/bfloat16 inputs are computed in float32 ("opmath") and
 * rounded once at the end. */
#ifndef TT_OPS_NN_COMMON_H
#define TT_OPS_NN_COMMON_H

#include "ops/common.h"

/* Largest output (and input) size per dim that upsampling and adaptive
 * pooling lower. */
#define UP_MAX 8192

/* Sum over dims without changing dtype (caller already in opmath). */
tt_val nn_rsum(tt_builder *b, tt_val x, const int64_t *dims, int n);

/* Reads optional tensor argument i converted to dt, or TT_INVALID if None. */
tt_val nn_opt_tensor(tt_lower_ctx *c, int i, tt_dtype dt);

bool nn_shape_is(const tt_tensor_ref *r, int ndim, const int64_t *dims);

/* Static 1-D constant (i64 indices, or float weights printed exactly). */
tt_val nn_const_vec_dt(tt_builder *b, tt_dtype dt, const double *v, const int64_t *iv,
                       int64_t n);

/* x with dim d replaced by x[idx[0..n)] along d (static indices). */
tt_val nn_take_dim(tt_builder *b, tt_val x, int d, const int64_t *idx, int64_t n);

/* Transpose of take_dim: zeros with dim d of size m, g's slices added at idx. */
tt_val nn_put_add_dim(tt_builder *b, tt_val g, int d, const int64_t *idx, int64_t n,
                      int64_t m);

#endif
