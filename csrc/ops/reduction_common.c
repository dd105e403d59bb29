/* Helpers shared by the reduction, reduction_index, scan and search lowering
 * families (see reduction_common.h). */
#include "ops/reduction_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* A ScalarType argument (None -> dflt). Returns false if it is not one. */
bool red_arg_dtype(const tt_lower_ctx *c, int i, tt_dtype dflt, tt_dtype *out) {
  const tt_arg *a = tt_lc_arg(c, i);
  *out = dflt;
  if (!a || a->kind == TT_ARG_NONE) return true;
  if (a->kind != TT_ARG_DTYPE) return false;
  *out = a->u.dtype;
  return true;
}

/* dtype of the first mutated tensor argument (out= / in-place), if any. */
bool red_written_dtype(const tt_lower_ctx *c, tt_dtype *dt) {
  for (int i = 0; i < tt_lc_nargs(c); i++) {
    const tt_arg *a = tt_lc_arg(c, i);
    if (a && a->written && a->kind == TT_ARG_TENSOR) {
      *dt = a->u.tensor->dtype;
      return true;
    }
  }
  return false;
}

/* Reduction plan from list argument `arg` of tensor `ref`. A None list (or
 * an absent argument) reduces every dim; an empty list reduces every dim if
 * empty_all, none otherwise. Returns false if the builder failed (bad dim). */
bool red_plan_dims(tt_lower_ctx *c, const tt_tensor_ref *ref, int arg, bool empty_all,
                   bool keepdim, rplan *p) {
  memset(p, 0, sizeof *p);
  p->ndim = ref->ndim;
  memcpy(p->in, ref->sizes, sizeof(int64_t) * (size_t)ref->ndim);
  p->keepdim = keepdim;
  int64_t list[TT_MAX_DIMS + 4];
  int n = arg < 0 ? -1 : tt_lc_int_list(c, arg, list, TT_MAX_DIMS + 4);
  if (n > TT_MAX_DIMS + 4) {
    tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "too many dims");
    return false;
  }
  bool all = n < 0 || (n == 0 && empty_all);
  if (all) {
    for (int i = 0; i < ref->ndim; i++) p->red[i] = true;
  } else {
    for (int k = 0; k < n; k++) {
      int64_t d = tt_wrap_dim(c, list[k], ref->ndim);
      if (d < 0) return false;
      if (ref->ndim == 0) continue; /* a scalar accepts dim 0/-1 and reduces nothing */
      if (p->red[d]) {
        tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "dim %" PRId64 " appears multiple times in the list of dims", d);
        return false;
      }
      p->red[d] = true;
    }
  }
  p->count = 1;
  for (int i = 0; i < ref->ndim; i++) {
    if (p->red[i]) {
      p->dims[p->n++] = i;
      p->count *= ref->sizes[i];
      p->kept_dims[i] = 1;
    } else {
      p->kept_dims[i] = ref->sizes[i];
    }
    if (!p->red[i] || keepdim) p->out[p->out_ndim++] = p->red[i] ? 1 : ref->sizes[i];
  }
  return true;
}

/* Reshapes a reduced value (reduced dims removed) to the plan's result. */
tt_val red_finish(tt_builder *b, tt_val v, const rplan *p) {
  return tt_b_reshape(b, v, p->out_ndim, p->out);
}

/* Fails with PyTorch's message if a reduced dim is empty (max-like ops). */
tt_error *red_require_nonempty(tt_lower_ctx *c, const char *op, const rplan *p, bool dim_given) {
  if (!dim_given && p->count == 0 && p->n == p->ndim)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                      "Specify the reduction dim with the 'dim' argument.", op);
  for (int k = 0; k < p->n; k++)
    if (p->in[p->dims[k]] == 0)
      return tt_lc_fail(c, TT_ERR_INDEX, "%s(): Expected reduction dim %" PRId64
                        " to have non-zero size.", op, p->dims[k]);
  return NULL;
}

/* Returns the builder's error if a helper failed it (bad dim...). */
tt_error *red_builder_error(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  if (tt_b_error(b)) return tt_b_take_error(b);
  return tt_error_new(TT_ERR_RUNTIME, "internal: %s failed", tt_lc_op_name(c));
}

/* Result dtype of sum/prod: dtype argument, else the out= tensor's dtype,
 * else int64 for integral/bool inputs, else the input dtype. */
bool red_sum_dtype(const tt_lower_ctx *c, int dtype_arg, tt_dtype in, tt_dtype *out) {
  if (!tt_lc_is_none(c, dtype_arg)) return red_arg_dtype(c, dtype_arg, in, out);
  if (red_written_dtype(c, out)) return true;
  *out = tt_dtype_is_floating(in) || tt_dtype_is_complex(in) ? in : TT_I64;
  return true;
}

/* Zero int64 indices shaped like x. */
tt_val red_zero_idx(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  s.dtype = TT_I64;
  return tt_b_full(b, s, 0);
}

/* Full reduction plan of a shape (result 0-d, or all ones with keepdim). */
void red_plan_all(rplan *p, int ndim, const int64_t *sizes, bool keepdim) {
  memset(p, 0, sizeof *p);
  p->ndim = ndim;
  p->keepdim = keepdim;
  p->count = 1;
  for (int i = 0; i < ndim; i++) {
    p->in[i] = sizes[i];
    p->red[i] = true;
    p->dims[p->n++] = i;
    p->kept_dims[i] = 1;
    p->count *= sizes[i];
    if (keepdim) p->out[p->out_ndim++] = 1;
  }
}

/* Float sum of x over dims as a cascade of block sums. The XLA CPU runtime
 * adds the elements of a reduce one after the other into one accumulator,
 * so its rounding error grows with the count, where PyTorch's CPU sum adds
 * blocks pairwise (a gradient summing 200 products was 5x further from the
 * float64 value than CPU's). The reduced dims move last and flatten to N,
 * padded with zeros to a multiple of RED_BLOCK; each block is summed, then
 * the block sums likewise until one block is left. */
#define RED_BLOCK 4
/* Reduced dims that all precede the kept ones (a bias gradient's sum over
 * the batch dims) flatten to one leading dim R of [R, K], summed by one
 * reduce behind an optimization barrier. XLA CPU folds the block cascade
 * below back into one reduce, and through a reshape into a reduce over the
 * producer's dims ([16, 64, N] over {0, 1}), which its tree rewriter turns
 * into a 16x32 strided reduce-window about 10x slower than the 32x1 windows
 * of the flat [R, K] reduce (both: blocks of 32 rows, then their sums). */
static tt_val major_add(tt_builder *b, tt_val x, int64_t rows, int nk, const int64_t *kept,
                        tt_val zero) {
  int64_t k = 1;
  for (int i = 0; i < nk; i++) k *= kept[i];
  int64_t d2[2] = {rows, k}, d0 = 0;
  x = tt_b_reshape(b, x, 2, d2);
  x = tt_b_emit1(b, TT_OP_OPTIMIZATION_BARRIER, &x, 1, NULL, tt_b_shape(b, x));
  x = tt_b_reduce(b, x, zero, &d0, 1, "add");
  return tt_b_reshape(b, x, nk, kept);
}

tt_val red_cascade_add(tt_builder *b, tt_val x, const int64_t *dims, int n) {
  tt_shape s = tt_b_shape(b, x);
  tt_val zero = tt_b_constant(b, s.dtype, 0);
  bool red[TT_MAX_DIMS] = {false};
  int64_t count = 1;
  for (int k = 0; k < n; k++) {
    red[dims[k]] = true;
    count *= s.dims[dims[k]];
  }
  if (!tt_dtype_is_floating(s.dtype) || count <= RED_BLOCK)
    return tt_b_reduce(b, x, zero, dims, n, "add");
  int64_t perm[TT_MAX_DIMS], kept[TT_MAX_DIMS + 2];
  int nk = 0, np = 0;
  bool leading = true; /* the reduced dims are the leading ones */
  for (int i = 0; i < s.ndim; i++)
    if (red[i] != (i < n)) leading = false;
  if (leading && n < s.ndim) {
    for (int i = n; i < s.ndim; i++) kept[nk++] = s.dims[i];
    return major_add(b, x, count, nk, kept, zero);
  }
  for (int i = 0; i < s.ndim; i++)
    if (!red[i]) perm[np++] = i, kept[nk++] = s.dims[i];
  for (int i = 0; i < s.ndim; i++)
    if (red[i]) perm[np++] = i;
  x = tt_b_transpose(b, x, perm);
  kept[nk] = count;
  x = tt_b_reshape(b, x, nk + 1, kept);
  int64_t last = nk;
  while (count > RED_BLOCK) {
    int64_t blocks = (count + RED_BLOCK - 1) / RED_BLOCK;
    if (blocks * RED_BLOCK != count) {
      int64_t lo[TT_MAX_DIMS + 1] = {0}, hi[TT_MAX_DIMS + 1] = {0}, in[TT_MAX_DIMS + 1] = {0};
      hi[nk] = blocks * RED_BLOCK - count;
      x = tt_b_pad(b, x, zero, lo, hi, in);
    }
    kept[nk] = blocks;
    kept[nk + 1] = RED_BLOCK;
    x = tt_b_reshape(b, x, nk + 2, kept);
    int64_t inner = nk + 1;
    x = tt_b_reduce(b, x, zero, &inner, 1, "add");
    count = blocks;
  }
  return tt_b_reduce(b, x, zero, &last, 1, "add");
}
