/* Helpers shared by the reduction, reduction_index, scan and search lowering
 * families (moved from reduction.c): accumulation/result dtypes, reduction
 * plans, error helpers, index and slice helpers. */
#ifndef TT_OPS_REDUCTION_COMMON_H
#define TT_OPS_REDUCTION_COMMON_H

#include "ops/common.h"

/* Which dims a reduction covers. */
typedef struct {
  int ndim;                   /* input rank */
  int64_t in[TT_MAX_DIMS];    /* input sizes */
  bool red[TT_MAX_DIMS];      /* dim i reduced */
  int64_t dims[TT_MAX_DIMS];  /* reduced dims, ascending */
  int n;
  bool keepdim;
  int out_ndim;               /* result rank (with keepdim) */
  int64_t out[TT_MAX_DIMS];
  int64_t kept_dims[TT_MAX_DIMS]; /* keepdim shape (1 at reduced dims) */
  int64_t count;              /* elements reduced into each output */
} rplan;

/* A ScalarType argument (None -> dflt). Returns false if it is not one. */
bool red_arg_dtype(const tt_lower_ctx *c, int i, tt_dtype dflt, tt_dtype *out);

/* dtype of the first mutated tensor argument (out= / in-place), if any. */
bool red_written_dtype(const tt_lower_ctx *c, tt_dtype *dt);

/* Reduction plan from list argument `arg` of tensor `ref`. A None list (or
 * an absent argument) reduces every dim; an empty list reduces every dim if
 * empty_all, none otherwise. Returns false if the builder failed (bad dim). */
bool red_plan_dims(tt_lower_ctx *c, const tt_tensor_ref *ref, int arg, bool empty_all,
                   bool keepdim, rplan *p);

/* Reshapes a reduced value (reduced dims removed) to the plan's result. */
tt_val red_finish(tt_builder *b, tt_val v, const rplan *p);

/* Fails with PyTorch's message if a reduced dim is empty (max-like ops). */
tt_error *red_require_nonempty(tt_lower_ctx *c, const char *op, const rplan *p, bool dim_given);

/* Returns the builder's error if a helper failed it (bad dim...). */
tt_error *red_builder_error(tt_lower_ctx *c);

/* Result dtype of sum/prod: dtype argument, else the out= tensor's dtype,
 * else int64 for integral/bool inputs, else the input dtype. */
bool red_sum_dtype(const tt_lower_ctx *c, int dtype_arg, tt_dtype in, tt_dtype *out);

/* Zero int64 indices shaped like x. */
tt_val red_zero_idx(tt_builder *b, tt_val x);

/* Full reduction plan of a shape (result 0-d, or all ones with keepdim). */
void red_plan_all(rplan *p, int ndim, const int64_t *sizes, bool keepdim);

/* Sum of x over dims (ascending), reduced dims removed like tt_b_reduce;
 * floats add in blocks (a cascade) for PyTorch-like rounding error. */
tt_val red_cascade_add(tt_builder *b, tt_val x, const int64_t *dims, int n);

#endif
