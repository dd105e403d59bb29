/* Lowerings of the scatter family (see lowering.h): the gather/scatter-style
 * ops along a dim: index_select/index_add, gather, scatter/scatter_add,
 * scatter.reduce, scatter_reduce.two and index_fill/index_copy/index_reduce.
 *
 * Index values are data, so they cannot be range-checked while lowering.
 * Out-of-range indices (which PyTorch rejects with an error) follow
 * StableHLO semantics instead: gathers clamp the start index into range
 * (so they read an edge element) and scatters drop the update. Negative
 * indices wrap exactly like PyTorch where PyTorch wraps them (index.Tensor,
 * index_put); index_select/gather/scatter/index_add reject negative indices
 * in PyTorch and clamp here. Tests only use valid indices. */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/indexing_common.h"

/* ------------------------------------------------------------ index_select / index_add */

static bool scalar_self(tt_lower_ctx *c);
static tt_error *index_op_on_scalar(tt_lower_ctx *c, int kind);
/* index ops index_op_on_scalar serves */
enum { IX_SELECT, IX_ADD, IX_COPY, IX_REDUCE };

/* Validates (self, dim, index) of index_select/index_add; returns the dim or -1. */
static int64_t index_dim_args(tt_lower_ctx *c, const char *op, const tt_tensor_ref **self,
                              const tt_tensor_ref **index, bool *declined) {
  *declined = false;
  *self = tt_lc_ref(c, 0);
  *index = tt_lc_ref(c, 2);
  if (!*self || !*index || !(*self)->storage || !(*index)->storage || (*self)->ndim == 0) {
    *declined = true;
    return -1;
  }
  if (!ix_is_index_dtype((*index)->dtype)) {
    tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s(): Expected dtype int32/int64 for index", op);
    return -1;
  }
  if ((*index)->ndim > 1) {
    tt_lc_fail(c, TT_ERR_INDEX, "%s(): Index is supposed to be a vector", op);
    return -1;
  }
  return tt_wrap_dim(c, tt_lc_int(c, 1, 0), (*self)->ndim);
}

/* The device-side range check of argument 2 along dim of self: [0, size),
 * or [-size, size) where torch wraps negative indices. */
static void check_dim_index(tt_lower_ctx *c, const tt_tensor_ref *self, int64_t dim, bool wraps,
                            tt_error_code code, const char *fmt) {
  if (!tt_lc_checks_on(c)) return;
  int64_t size = self->ndim ? self->sizes[dim] : 1;
  char msg[200];
  if (strchr(fmt, '%')) snprintf(msg, sizeof msg, fmt, (int)dim, size);
  else snprintf(msg, sizeof msg, "%s", fmt);
  ix_check_range(c, tt_lc_tensor(c, 2), wraps ? -size : 0, size, code, msg);
}

/* CPU's wordings, with the offending index ("{value}", ops/lowering.h) */
#define RANGE_IN_SELF "index out of range in self: index {value} for dimension %d with size %" PRId64
#define OUT_OF_BOUNDS "index {value} is out of bounds for dimension %d with size %" PRId64

static tt_error *lower_index_select(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self, *index;
  bool declined;
  if (scalar_self(c)) return index_op_on_scalar(c, IX_SELECT);
  int64_t dim = index_dim_args(c, "index_select", &self, &index, &declined);
  if (declined) return tt_lc_decline(c, "0-dim or CPU operands");
  if (dim < 0) return NULL;
  int64_t n = ix_numel_of(index->ndim, index->sizes);
  int64_t out[TT_MAX_DIMS];
  memcpy(out, self->sizes, sizeof out);
  out[dim] = n;
  tt_shape os = ix_shape_of(self->dtype, self->ndim, out);
  if (tt_shape_numel(&os) == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  if (ix_numel_of(self->ndim, self->sizes) == 0) return tt_lc_decline(c, "index into an empty tensor");
  check_dim_index(c, self, dim, false, TT_ERR_INDEX, RANGE_IN_SELF);
  int64_t idims[2] = {n, 1};
  tt_val idx = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64), 2, idims);
  int64_t off[TT_MAX_DIMS], slice[TT_MAX_DIMS];
  int n_off = ix_window_dims_except(self->ndim, dim, off);
  memcpy(slice, self->sizes, sizeof slice);
  slice[dim] = 1;
  tt_lc_output(c, ix_emit_gather(b, tt_lc_tensor(c, 0), idx, off, n_off, &dim, 1, &dim, 1, 1, slice, os));
  return NULL;
}

/* index_add(self, dim, index, source, alpha): self[.., index[i], ..] += alpha * source[.., i, ..] */
static tt_error *lower_index_add(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self, *index;
  bool declined;
  if (scalar_self(c)) return index_op_on_scalar(c, IX_ADD);
  int64_t dim = index_dim_args(c, "index_add", &self, &index, &declined);
  if (declined) return tt_lc_decline(c, "0-dim or CPU operands");
  if (dim < 0) return NULL;
  const tt_tensor_ref *src = tt_lc_ref(c, 3);
  if (!src || !src->storage) return tt_lc_decline(c, "CPU source");
  if (src->dtype != self->dtype || src->ndim != self->ndim)
    return tt_lc_decline(c, "source dtype/rank differs from self (torch raises)");
  int64_t n = ix_numel_of(index->ndim, index->sizes);
  for (int k = 0; k < self->ndim; k++)
    if (src->sizes[k] != (k == dim ? n : self->sizes[k]))
      return tt_lc_decline(c, "source shape mismatch (torch raises)");
  tt_val x = tt_lc_tensor(c, 0);
  if (ix_numel_of(src->ndim, src->sizes) == 0 || ix_numel_of(self->ndim, self->sizes) == 0) {
    /* a source with elements into a self whose dim has size 0: every
     * index is out of range (CPU raises) */
    if (ix_numel_of(src->ndim, src->sizes) > 0)
      check_dim_index(c, self, dim, false, TT_ERR_INDEX, RANGE_IN_SELF);
    tt_lc_output(c, x);
    return NULL;
  }
  tt_dtype dt = self->dtype;
  tt_val upd = tt_lc_tensor(c, 3);
  tt_val alpha = tt_b_broadcast_to(b, tt_lc_scalar(c, 4, dt), src->ndim, src->sizes);
  upd = tt_b_bin(b, dt == TT_BOOL ? TT_OP_AND : TT_OP_MULTIPLY, upd, alpha);
  check_dim_index(c, self, dim, false, TT_ERR_INDEX, RANGE_IN_SELF);
  int64_t idims[2] = {n, 1};
  tt_val idx = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64), 2, idims);
  int64_t win[TT_MAX_DIMS];
  int n_win = ix_window_dims_except(self->ndim, dim, win);
  tt_lc_output(c, ix_emit_scatter(b, x, idx, upd, win, n_win, &dim, 1, &dim, 1, 1,
                               dt == TT_BOOL ? "or" : "add"));
  return NULL;
}

/* ------------------------------------------------------------ gather / scatter */

/* Common checks of gather/scatter(self, dim, index, ...): tensors on the
 * device, an integer index of self's rank; *dim wrapped (-1 on failure). */
static tt_error *dim_index_args(tt_lower_ctx *c, const char *op, const tt_tensor_ref **self,
                                const tt_tensor_ref **index, int64_t *dim) {
  *dim = -1;
  *self = tt_lc_ref(c, 0);
  *index = tt_lc_ref(c, 2);
  const tt_tensor_ref *s = *self, *ix = *index;
  if (!s || !ix || !s->storage || !ix->storage || s->ndim == 0)
    return tt_lc_decline(c, "0-dim or CPU operands");
  if (!ix_is_index_dtype(ix->dtype)) {
    if (ix_numel_of(ix->ndim, ix->sizes) == 0) return tt_lc_decline(c, "empty index of another dtype");
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s(): Expected dtype int32/int64 for index", op);
  }
  *dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), s->ndim);
  if (*dim < 0) return NULL;
  if (ix->ndim != s->ndim) return tt_lc_decline(c, "index rank differs from self (torch raises)");
  return NULL;
}

/* gather(self, dim, index, sparse_grad): out[i][j] = self[index[i][j]][j] (dim 0). */
static tt_error *lower_gather(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self, *index;
  int64_t dim;
  tt_error *err = dim_index_args(c, "gather", &self, &index, &dim);
  if (err || dim < 0) return err; /* dim < 0: the builder holds the error */
  for (int k = 0; k < self->ndim; k++)
    if (k != dim && index->sizes[k] > self->sizes[k])
      return tt_lc_decline(c, "index larger than self (torch raises)");
  tt_shape os = ix_shape_of(self->dtype, index->ndim, index->sizes);
  if (tt_shape_numel(&os) == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  check_dim_index(c, self, dim, false, TT_ERR_INVALID_ARGUMENT, OUT_OF_BOUNDS);
  tt_val coords = ix_full_coords(b, tt_lc_tensor(c, 2), (int)dim);
  int64_t all[TT_MAX_DIMS], ones[TT_MAX_DIMS];
  for (int k = 0; k < self->ndim; k++) all[k] = k, ones[k] = 1;
  tt_lc_output(c, ix_emit_gather(b, tt_lc_tensor(c, 0), coords, NULL, 0, all, self->ndim, all,
                              self->ndim, self->ndim, ones, os));
  return NULL;
}

/* scatter family: scatter(self, dim, index, src|value[, reduce]) and
 * scatter_add(self, dim, index, src). combine: NULL (replace), "add",
 * "multiply". Only src[index.shape] is used, like torch. */
static tt_error *scatter_common(tt_lower_ctx *c, const char *combine) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self, *index;
  int64_t dim;
  tt_error *err = dim_index_args(c, "scatter", &self, &index, &dim);
  if (err || dim < 0) return err; /* dim < 0: the builder holds the error */
  tt_dtype dt = self->dtype;
  if (combine && dt == TT_BOOL) return tt_lc_decline(c, "reducing scatter on bool");
  const tt_tensor_ref *src = tt_lc_ref(c, 3);
  bool is_src = src && src->storage;
  if (is_src) {
    if (src->dtype != dt) return tt_lc_decline(c, "src dtype differs from self (torch raises)");
    if (src->ndim != self->ndim) return tt_lc_decline(c, "src rank differs (torch raises)");
  }
  for (int k = 0; k < self->ndim; k++) {
    if (k != dim && index->sizes[k] > self->sizes[k])
      return tt_lc_decline(c, "index larger than self (torch raises)");
    if (is_src && index->sizes[k] > src->sizes[k])
      return tt_lc_decline(c, "index larger than src (torch raises)");
  }
  tt_val x = tt_lc_tensor(c, 0);
  if (ix_numel_of(index->ndim, index->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val upd;
  if (is_src) {
    int64_t zero[TT_MAX_DIMS] = {0};
    upd = tt_b_slice(b, tt_lc_tensor(c, 3), zero, index->sizes, NULL);
  } else {
    upd = tt_b_broadcast_to(b, tt_lc_scalar(c, 3, dt), index->ndim, index->sizes);
  }
  check_dim_index(c, self, dim, false, TT_ERR_INVALID_ARGUMENT, OUT_OF_BOUNDS);
  tt_val coords = ix_full_coords(b, tt_lc_tensor(c, 2), (int)dim);
  int64_t all[TT_MAX_DIMS];
  for (int k = 0; k < self->ndim; k++) all[k] = k;
  tt_lc_output(c, ix_emit_scatter(b, x, coords, upd, NULL, 0, all, self->ndim, all, self->ndim,
                               self->ndim, combine));
  return NULL;
}

static tt_error *lower_scatter(tt_lower_ctx *c) { return scatter_common(c, NULL); }
static tt_error *lower_scatter_add(tt_lower_ctx *c) { return scatter_common(c, "add"); }

/* scatter.reduce / scatter.value_reduce: reduce is "add" or "multiply". */
static tt_error *lower_scatter_reduce(tt_lower_ctx *c) {
  const char *reduce = tt_lc_string(c, 4, "");
  if (strcmp(reduce, "add") == 0) return scatter_common(c, "add");
  if (strcmp(reduce, "multiply") == 0) return scatter_common(c, "multiply");
  return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                    "reduce argument must be either add or multiply.");
}

static const char *reduce_combiner(const char *reduce);
static tt_error *scatter_reduce_general(tt_lower_ctx *c, const char *reduce, bool include_self);

/* scatter_reduce.two(self, dim, index, src, reduce, include_self): sum, prod,
 * amax, amin with include_self=True here; mean and include_self=False in
 * scatter_reduce_general. */
static tt_error *lower_scatter_reduce_two(tt_lower_ctx *c) {
  const char *reduce = tt_lc_string(c, 4, "");
  bool include_self = tt_lc_bool(c, 5, true);
  if (reduce_combiner(reduce) && (!include_self || strcmp(reduce, "mean") == 0))
    return scatter_reduce_general(c, reduce, include_self);
  const tt_tensor_ref *src = tt_lc_ref(c, 3);
  if (!src || !src->storage) return tt_lc_decline(c, "CPU src");
  if (strcmp(reduce, "sum") == 0) return scatter_common(c, "add");
  if (strcmp(reduce, "prod") == 0) return scatter_common(c, "multiply");
  if (strcmp(reduce, "amax") == 0) return scatter_common(c, "maximum");
  if (strcmp(reduce, "amin") == 0) return scatter_common(c, "minimum");
  return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                    "reduce argument must be either sum, prod, mean, amax or amin, got %s", reduce);
}

/* ------------------------------------------------------------ long tail: shared pieces */

/* Identity of a scatter/index reduction ("sum"/"mean" 0, "prod" 1, "amax"
 * lowest, "amin" highest) as a 0-d value of dt. */
static tt_val reduce_identity(tt_builder *b, const char *reduce, tt_dtype dt) {
  bool is_max = strcmp(reduce, "amax") == 0, is_min = strcmp(reduce, "amin") == 0;
  if (strcmp(reduce, "prod") == 0) return tt_b_constant(b, dt, 1);
  if (dt == TT_I64 && (is_max || is_min)) /* exact limits (a double cannot hold INT64_MAX) */
    return tt_b_constant_int(b, dt, is_max ? INT64_MIN : INT64_MAX);
  if (is_max) return tt_b_constant(b, dt, tt_dtype_lowest(dt));
  if (is_min) return tt_b_constant(b, dt, tt_dtype_highest(dt));
  return tt_b_constant(b, dt, 0);
}

/* The stablehlo combiner of a reduction name; NULL if unknown. */
static const char *reduce_combiner(const char *reduce) {
  if (strcmp(reduce, "sum") == 0 || strcmp(reduce, "mean") == 0) return "add";
  if (strcmp(reduce, "prod") == 0) return "multiply";
  if (strcmp(reduce, "amax") == 0) return "maximum";
  if (strcmp(reduce, "amin") == 0) return "minimum";
  return NULL;
}

/* sum / count for the "mean" reductions: true division for floating
 * dtypes, floor division (counts are positive) for integers, like torch. */
static tt_val divide_by_counts(tt_builder *b, tt_val sum, tt_val counts) {
  tt_shape s = tt_b_shape(b, sum);
  tt_val zero = tt_b_full(b, tt_shape_make(s.dtype, s.ndim, s.dims), 0);
  counts = tt_b_select(b, tt_b_compare(b, "EQ", counts, zero), tt_b_full(b, s, 1), counts);
  tt_val q = tt_b_bin(b, TT_OP_DIVIDE, sum, counts);
  if (tt_dtype_is_floating(s.dtype)) return q;
  tt_val r = tt_b_bin(b, TT_OP_REMAINDER, sum, counts);
  tt_val adj = tt_b_bin(b, TT_OP_AND, tt_b_compare(b, "NE", r, zero), tt_b_compare(b, "LT", sum, zero));
  return tt_b_select(b, adj, tt_b_bin(b, TT_OP_SUBTRACT, q, tt_b_full(b, s, 1)), q);
}

/* A bool [size] mask, true at the positions listed in idx (i64 [n, 1];
 * out-of-range positions are dropped). */
static tt_val positions_mask(tt_builder *b, tt_val idx, int64_t size) {
  int64_t n = tt_b_shape(b, idx).dims[0], zero = 0;
  tt_val base = tt_b_full(b, ix_shape_of(TT_BOOL, 1, &size), 0);
  tt_val ones = tt_b_full(b, ix_shape_of(TT_BOOL, 1, &n), 1);
  return ix_emit_scatter(b, base, idx, ones, NULL, 0, &zero, 1, &zero, 1, 1, NULL);
}

/* ------------------------------------------------------------ scatter_reduce (general) */

/* scatter_reduce.two for reduce="mean" or include_self=False (torch: fill the
 * scattered-to positions with the identity first; mean divides by the
 * number of contributions, self included, counting empty slots as 1). */
static tt_error *scatter_reduce_general(tt_lower_ctx *c, const char *reduce, bool include_self) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 2), *src = tt_lc_ref(c, 3);
  if (!self || !index || !src || !self->storage || !index->storage || !src->storage || self->ndim == 0)
    return tt_lc_decline(c, "0-dim or CPU operands");
  if (!ix_is_index_dtype(index->dtype)) return tt_lc_decline(c, "index dtype (torch raises)");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), self->ndim);
  if (dim < 0) return NULL;
  tt_dtype dt = self->dtype;
  if (dt == TT_BOOL) return tt_lc_decline(c, "reducing scatter on bool");
  if (index->ndim != self->ndim || src->ndim != self->ndim || src->dtype != dt)
    return tt_lc_decline(c, "rank/dtype mismatch (torch raises)");
  for (int k = 0; k < self->ndim; k++)
    if ((k != dim && index->sizes[k] > self->sizes[k]) || index->sizes[k] > src->sizes[k])
      return tt_lc_decline(c, "index larger than self/src (torch raises)");
  tt_val x = tt_lc_tensor(c, 0);
  if (ix_numel_of(index->ndim, index->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  int64_t zero[TT_MAX_DIMS] = {0}, all[TT_MAX_DIMS];
  for (int k = 0; k < self->ndim; k++) all[k] = k;
  tt_val upd = tt_b_slice(b, tt_lc_tensor(c, 3), zero, index->sizes, NULL);
  check_dim_index(c, self, dim, false, TT_ERR_INVALID_ARGUMENT, OUT_OF_BOUNDS);
  tt_val coords = ix_full_coords(b, tt_lc_tensor(c, 2), (int)dim);
  tt_shape us = tt_b_shape(b, upd);
  int n = self->ndim;
  if (!include_self) {
    tt_val init = tt_b_broadcast_to(b, reduce_identity(b, reduce, dt), us.ndim, us.dims);
    x = ix_emit_scatter(b, x, coords, init, NULL, 0, all, n, all, n, n, NULL);
  }
  tt_val r = ix_emit_scatter(b, x, coords, upd, NULL, 0, all, n, all, n, n, reduce_combiner(reduce));
  if (strcmp(reduce, "mean") == 0) {
    tt_val cnt0 = tt_b_full(b, tt_lc_ref_shape(self), include_self ? 1 : 0);
    tt_val cnt = ix_emit_scatter(b, cnt0, coords, tt_b_full(b, us, 1), NULL, 0, all, n, all, n, n, "add");
    r = divide_by_counts(b, r, cnt);
  }
  tt_lc_output(c, r);
  return NULL;
}

/* ------------------------------------------------------------ 0-dim self */

static bool scalar_self(tt_lower_ctx *c) {
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  return self && self->storage && self->ndim == 0;
}

/* index_select/index_add/index_copy/index_reduce on a 0-dim self, which
 * PyTorch treats as one slot along dim 0 (or -1): the single index selects
 * it (CPU raises for any index but 0, and so would a 1-d self of size 1
 * here: out-of-range indices are not checked at run time). */
static tt_error *index_op_on_scalar(tt_lower_ctx *c, int kind) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 2);
  int64_t dim = tt_lc_int(c, 1, 0);
  if (!index || !index->storage || !ix_is_index_dtype(index->dtype) || index->ndim > 1 ||
      ix_numel_of(index->ndim, index->sizes) != 1 || (dim != 0 && dim != -1))
    return tt_lc_decline(c, "0-dim self with these arguments (torch raises)");
  tt_val x = tt_lc_tensor(c, 0);
  if (kind == IX_SELECT) {
    tt_lc_output(c, x);
    return NULL;
  }
  const tt_tensor_ref *src = tt_lc_ref(c, 3);
  if (!src || !src->storage || src->dtype != self->dtype || src->ndim != 0)
    return tt_lc_decline(c, "source for a 0-dim self");
  tt_dtype dt = self->dtype;
  tt_val v = tt_lc_tensor(c, 3), r = v;
  if (kind == IX_ADD) {
    if (dt == TT_BOOL) return tt_lc_decline(c, "index_add on bool");
    r = tt_b_bin(b, TT_OP_ADD, x, tt_b_bin(b, TT_OP_MULTIPLY, tt_lc_scalar(c, 4, dt), v));
  } else if (kind == IX_REDUCE) {
    const char *reduce = tt_lc_string(c, 4, "");
    const char *op = reduce_combiner(reduce);
    if (!op || !strcmp(reduce, "sum") || dt == TT_BOOL) return tt_lc_decline(c, "reduce='%s'", reduce);
    if (tt_lc_bool(c, 5, true)) {
      r = tt_b_binary(b, op, x, v);
      if (!strcmp(reduce, "mean")) r = divide_by_counts(b, r, tt_b_constant(b, dt, 2));
    }
  }
  tt_lc_output(c, r);
  return NULL;
}

/* ------------------------------------------------------------ index_fill / index_copy / index_reduce */

/* index (argument 2) as i64 [n, 1], negative values wrapped by size when
 * `wrap`. */
static tt_val index_column(tt_lower_ctx *c, int64_t n, int64_t size, bool wrap) {
  tt_builder *b = tt_lc_builder(c);
  tt_val idx = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64), 1, &n);
  if (wrap) idx = ix_wrap_negative(b, idx, size);
  int64_t idims[2] = {n, 1};
  return tt_b_reshape(b, idx, 2, idims);
}

/* index_fill(self, dim, index, value): value a Scalar or a 0-dim tensor;
 * negative indices wrap like torch. */
static tt_error *lower_index_fill(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 2);
  if (!self || !index || !self->storage || !index->storage) return tt_lc_decline(c, "CPU operands");
  if (index->dtype != TT_I64 || index->ndim > 1) return tt_lc_decline(c, "index dtype/rank (torch raises)");
  const tt_arg *v = tt_lc_arg(c, 3);
  if (v && v->kind == TT_ARG_TENSOR && v->u.tensor->ndim != 0)
    return tt_lc_decline(c, "value tensor with dimensions (torch raises)");
  int nd = self->ndim;
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), nd > 0 ? nd : 1);
  if (dim < 0) return NULL;
  tt_val x = tt_lc_tensor(c, 0);
  int64_t n = ix_numel_of(index->ndim, index->sizes);
  if (n == 0 || ix_numel_of(nd, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  int64_t size = nd > 0 ? self->sizes[dim] : 1;
  check_dim_index(c, self, dim, true, TT_ERR_INDEX, OUT_OF_BOUNDS);
  tt_val mask = positions_mask(b, index_column(c, n, size, true), size);
  if (nd == 0) mask = tt_b_reshape(b, mask, 0, NULL);
  else mask = tt_b_broadcast_in_dim(b, mask, nd, self->sizes, &dim);
  tt_val val = tt_b_broadcast_to(b, tt_lc_scalar(c, 3, self->dtype), nd, self->sizes);
  tt_lc_output(c, tt_b_select(b, mask, val, x));
  return NULL;
}

/* Checks (self, dim, index, source) of index_copy/index_reduce: same dtype
 * and rank, source sized like self except source[dim] == numel(index).
 * Returns the dim, or -1 with *err set (decline or failure). */
static int64_t index_source_args(tt_lower_ctx *c, bool long_only, tt_error **err) {
  *err = NULL;
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 2), *src = tt_lc_ref(c, 3);
  if (!self || !index || !src || !self->storage || !index->storage || !src->storage || self->ndim == 0) {
    *err = tt_lc_decline(c, "0-dim or CPU operands");
    return -1;
  }
  if ((long_only ? index->dtype != TT_I64 : !ix_is_index_dtype(index->dtype)) || index->ndim > 1 ||
      src->dtype != self->dtype || src->ndim != self->ndim) {
    *err = tt_lc_decline(c, "index/source dtype or rank (torch raises)");
    return -1;
  }
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), self->ndim);
  if (dim < 0) return -1;
  int64_t n = ix_numel_of(index->ndim, index->sizes);
  for (int k = 0; k < self->ndim; k++)
    if (src->sizes[k] != (k == dim ? n : self->sizes[k])) {
      *err = tt_lc_decline(c, "source shape mismatch (torch raises)");
      return -1;
    }
  return dim;
}

/* Scatters source (argument 3) into x along dim at index (argument 2). */
static tt_val index_scatter(tt_lower_ctx *c, tt_val x, tt_val upd, tt_val idx, int64_t dim,
                            const char *combine) {
  tt_builder *b = tt_lc_builder(c);
  int nd = tt_b_ndim(b, x);
  int64_t win[TT_MAX_DIMS];
  int n_win = ix_window_dims_except(nd, dim, win);
  return ix_emit_scatter(b, x, idx, upd, win, n_win, &dim, 1, &dim, 1, 1, combine);
}

/* index_copy(self, dim, index, source): self[.., index[i], ..] = source[.., i, ..] */
static tt_error *lower_index_copy(tt_lower_ctx *c) {
  if (scalar_self(c)) return index_op_on_scalar(c, IX_COPY);
  tt_error *err;
  int64_t dim = index_source_args(c, true, &err);
  if (dim < 0) return err;
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 2);
  tt_val x = tt_lc_tensor(c, 0);
  int64_t n = ix_numel_of(index->ndim, index->sizes);
  if (n == 0 || ix_numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  check_dim_index(c, self, dim, false, TT_ERR_INDEX, "index_copy_(): " OUT_OF_BOUNDS);
  tt_val idx = index_column(c, n, self->sizes[dim], false);
  tt_lc_output(c, index_scatter(c, x, tt_lc_tensor(c, 3), idx, dim, NULL));
  return NULL;
}

/* index_reduce(self, dim, index, source, reduce, include_self): prod, mean,
 * amax, amin; with include_self=False the indexed slots start from the
 * identity; mean divides by the contributions (floor for integers). */
static tt_error *lower_index_reduce(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const char *reduce = tt_lc_string(c, 4, "");
  if (strcmp(reduce, "prod") && strcmp(reduce, "mean") && strcmp(reduce, "amax") && strcmp(reduce, "amin"))
    return tt_lc_decline(c, "reduce='%s' (torch raises)", reduce);
  bool include_self = tt_lc_bool(c, 5, true);
  if (scalar_self(c)) return index_op_on_scalar(c, IX_REDUCE);
  tt_error *err;
  int64_t dim = index_source_args(c, false, &err);
  if (dim < 0) return err;
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 2);
  tt_dtype dt = self->dtype;
  if (dt == TT_BOOL) return tt_lc_decline(c, "index_reduce on bool");
  tt_val x = tt_lc_tensor(c, 0);
  int64_t n = ix_numel_of(index->ndim, index->sizes);
  if (n == 0 || ix_numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  int64_t size = self->sizes[dim];
  check_dim_index(c, self, dim, false, TT_ERR_INDEX, RANGE_IN_SELF);
  tt_val idx = index_column(c, n, size, false);
  if (!include_self) {
    tt_val mask = tt_b_broadcast_in_dim(b, positions_mask(b, idx, size), self->ndim, self->sizes, &dim);
    tt_val init = tt_b_broadcast_to(b, reduce_identity(b, reduce, dt), self->ndim, self->sizes);
    x = tt_b_select(b, mask, init, x);
  }
  tt_val src = tt_lc_tensor(c, 3);
  tt_val r = index_scatter(c, x, src, idx, dim, reduce_combiner(reduce));
  if (strcmp(reduce, "mean") == 0) {
    tt_val cnt0 = tt_b_full(b, tt_lc_ref_shape(self), include_self ? 1 : 0);
    tt_val cnt = index_scatter(c, cnt0, tt_b_full(b, tt_b_shape(b, src), 1), idx, dim, "add");
    r = divide_by_counts(b, r, cnt);
  }
  tt_lc_output(c, r);
  return NULL;
}


TT_LOWERINGS(scatter) = {
    {lower_index_select, {"index_select", "index_select.out"}},
    {lower_index_add, {"index_add", "index_add_", "index_add.out"}},
    {lower_gather, {"gather", "gather.out"}},
    {lower_scatter, {"scatter.src", "scatter_.src", "scatter.src_out", "scatter.value",
                     "scatter_.value", "scatter.value_out"}},
    {lower_scatter_reduce, {"scatter.reduce", "scatter_.reduce", "scatter.reduce_out",
                            "scatter.value_reduce", "scatter_.value_reduce",
                            "scatter.value_reduce_out"}},
    {lower_scatter_add, {"scatter_add", "scatter_add_", "scatter_add.out"}},
    {lower_scatter_reduce_two, {"scatter_reduce.two", "scatter_reduce_.two", "scatter_reduce.two_out"}},
    {lower_index_fill, {"index_fill.int_Scalar", "index_fill_.int_Scalar", "index_fill.int_Scalar_out",
                        "index_fill.int_Tensor", "index_fill_.int_Tensor", "index_fill.int_Tensor_out"}},
    {lower_index_copy, {"index_copy", "index_copy_", "index_copy.out"}},
    {lower_index_reduce, {"index_reduce", "index_reduce_", "index_reduce.out"}},
    {NULL, {NULL}},
};
