/* Helpers shared by lowering families: PyTorch type promotion, broadcasting,
 * dimension wrapping, common reductions. */
#ifndef TT_OPS_COMMON_H
#define TT_OPS_COMMON_H

#include "ops/lowering.h"

/* PyTorch's result_type over arguments args[0..n) (tensors, CPU scalar
 * tensors, Scalars): dimensioned tensors outrank zero-dim tensors, which
 * outrank Python numbers, unless a lower-priority operand is of a higher
 * category (bool < integral < floating). None arguments are skipped. */
tt_dtype tt_result_type(const tt_lower_ctx *c, const int *args, int n);

/* Default float dtype for ops that promote integers to float (torch default). */
#define TT_DEFAULT_FLOAT TT_F32

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
/* Bounded text for hand-written StableHLO regions (loop bodies): appends
 * stop once it is full, so `off >= size` afterwards means it did not fit. */
typedef struct {
  char *buf;
  size_t size, off;
} tt_region_text;
void tt_region_text_add(tt_region_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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
