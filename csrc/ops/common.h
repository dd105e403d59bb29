/* The helpers every lowering family shares: PyTorch type promotion,
 * broadcasting, dimension wrapping, dtype rules (half types computed in
 * float32), arithmetic shorthands, slicing along one dim, common
 * reductions. Family headers (unary_common.h, nn_common.h, ...) add only
 * what is particular to their family. */
#ifndef TT_OPS_COMMON_H
#define TT_OPS_COMMON_H

#include "ops/lowering.h"

/* PyTorch's result_type over arguments args[0..n) (tensors, CPU scalar
 * tensors, Scalars): dimensioned tensors outrank zero-dim tensors, which
 * outrank Python numbers, unless a lower-priority operand is of a higher
 * category (bool < integral < floating). None arguments are skipped. */
tt_dtype tt_result_type(const tt_lower_ctx *c, const int *args, int n);

/* Default float dtype for ops that promote integers to float (torch default). */
#define TT_DEFAULT_FLOAT tt_default_float()

/* ------------------------------------------------------------ dtype rules
 * "Is floating" is core's tt_dtype_is_floating (core/dtype.h). */

/* float16 / bfloat16. */
bool tt_dtype_is_half(tt_dtype dt);
/* The dtype PyTorch computes dt in ("opmath"): float32 for the half types,
 * dt itself otherwise; results are rounded back once at the end. */
tt_dtype tt_opmath(tt_dtype dt);

/* ------------------------------------------------------------ arithmetic
 * Elementwise shorthands; an operand of lower rank (or fewer elements) is
 * broadcast, right-aligned, to the other's shape, so a 0-d constant from
 * tt_scalar_like can meet a tensor. */
tt_val tt_bin(tt_builder *b, tt_op op, tt_val x, tt_val y);
tt_val tt_add(tt_builder *b, tt_val x, tt_val y);
tt_val tt_sub(tt_builder *b, tt_val x, tt_val y);
tt_val tt_mul(tt_builder *b, tt_val x, tt_val y);
tt_val tt_div(tt_builder *b, tt_val x, tt_val y);
/* 0-d constant v of like's dtype. */
tt_val tt_scalar_like(tt_builder *b, tt_val like, double v);

/* ------------------------------------------------------------ shapes */

/* x restricted to [start, end) along dim d. */
tt_val tt_slice_dim(tt_builder *b, tt_val x, int d, int64_t start, int64_t end);
/* v, a 1-d [dims[axis]] vector, broadcast along dim `axis` of (ndim, dims). */
tt_val tt_along(tt_builder *b, tt_val v, int ndim, const int64_t *dims, int axis);

/* Scatters g [lead..., *out] (n_spatial trailing dims) at flat per-plane
 * positions ix (i64, g's shape) into zeros [lead..., *in] of dtype acc,
 * combining with op ("add": pooling backward; NULL: the value replaces, max
 * unpooling). Positions outside their plane are dropped rather than landing
 * in a neighbouring plane. */
tt_val tt_scatter_planes(tt_builder *b, tt_val g, tt_val ix, int n_spatial, const int64_t *in,
                         tt_dtype acc, const char *op);

/* Broadcast shape of a and b (numpy rules). Returns false if incompatible. */
bool tt_broadcast_dims(int na, const int64_t *a, int nb, const int64_t *b, int *n_out,
                       int64_t *out);

/* Shape of argument i (tensor -> its shape; Scalar/CPU scalar -> 0-d). */
int tt_arg_ndim(const tt_lower_ctx *c, int i);
const int64_t *tt_arg_dims(const tt_lower_ctx *c, int i);

/* Reads argument i (tensor, CPU scalar tensor or Scalar) converted to dt and
 * broadcast to (ndim, dims). */
tt_val tt_operand(tt_lower_ctx *c, int i, tt_dtype dt, int ndim, const int64_t *dims);

/* Computes the broadcast shape over args[0..n); fails the lowering with
 * PyTorch's message if incompatible. */
tt_error *tt_broadcast_args(tt_lower_ctx *c, const int *args, int n, int *ndim, int64_t *dims);

/* Wraps a possibly negative dim; returns -1 (and fails c) if out of range. */
int64_t tt_wrap_dim(tt_lower_ctx *c, int64_t dim, int ndim);

/* Sum of x over dims (accumulating in f32 for f16/bf16, like PyTorch). */
tt_val tt_sum(tt_builder *b, tt_val x, const int64_t *dims, int n_dims);
/* Max/min over dims, identity -inf/+inf (or int limits). */
tt_val tt_reduce_max(tt_builder *b, tt_val x, const int64_t *dims, int n_dims);
tt_val tt_reduce_min(tt_builder *b, tt_val x, const int64_t *dims, int n_dims);

/* Lowest / highest finite-or-infinite value of dt (for reduction identities). */
double tt_dtype_lowest(tt_dtype dt);
double tt_dtype_highest(tt_dtype dt);

/* Elementwise constant like x. */
tt_val tt_full_like(tt_builder *b, tt_val x, double value);

#endif
