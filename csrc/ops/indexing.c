/* Lowerings of the indexing family (see lowering.h): concatenation,
 * index_select/index_add, gather/scatter, advanced indexing (index.Tensor,
 * index_put), masks, triangles, flip/roll, padding and the scatter-style
 * backward helpers (slice_scatter, select_scatter).
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

#include "ops/common.h"

/* ------------------------------------------------------------ helpers */

static tt_shape shape_of(tt_dtype dt, int nd, const int64_t *dims) {
  return tt_shape_make(dt, nd, dims);
}

static int64_t numel_of(int nd, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  return n;
}

/* "name = [a, b], " or "" when empty. */
static void fmt_field(char *buf, size_t size, const char *name, const int64_t *v, int n) {
  if (n == 0) {
    buf[0] = 0;
    return;
  }
  char list[200];
  tt_fmt_i64_list(list, sizeof list, v, n);
  snprintf(buf, size, "%s = %s, ", name, list);
}

static tt_val emit_gather(tt_builder *b, tt_val operand, tt_val indices, const int64_t *offset_dims,
                          int n_off, const int64_t *collapsed, int n_coll,
                          const int64_t *start_map, int n_map, int ivd,
                          const int64_t *slice_sizes, tt_shape out) {
  char f1[256], f2[256], f3[256], ss[256], attrs[1200];
  fmt_field(f1, sizeof f1, "offset_dims", offset_dims, n_off);
  fmt_field(f2, sizeof f2, "collapsed_slice_dims", collapsed, n_coll);
  fmt_field(f3, sizeof f3, "start_index_map", start_map, n_map);
  tt_fmt_i64_array(ss, sizeof ss, slice_sizes, tt_b_ndim(b, operand));
  snprintf(attrs, sizeof attrs,
           "dimension_numbers = #stablehlo.gather<%s%s%sindex_vector_dim = %d>, "
           "slice_sizes = %s, indices_are_sorted = false",
           f1, f2, f3, ivd, ss);
  tt_val ins[2] = {operand, indices};
  return tt_b_op(b, "stablehlo.gather", ins, 2, attrs, out);
}

/* combine: NULL replaces, else a binary stablehlo op name ("add"). */
static tt_val emit_scatter(tt_builder *b, tt_val operand, tt_val indices, tt_val updates,
                           const int64_t *window_dims, int n_win, const int64_t *inserted,
                           int n_ins, const int64_t *to_operand, int n_map, int ivd,
                           const char *combine) {
  char f1[256], f2[256], f3[256], attrs[1200], region[600];
  fmt_field(f1, sizeof f1, "update_window_dims", window_dims, n_win);
  fmt_field(f2, sizeof f2, "inserted_window_dims", inserted, n_ins);
  fmt_field(f3, sizeof f3, "scatter_dims_to_operand_dims", to_operand, n_map);
  snprintf(attrs, sizeof attrs,
           "scatter_dimension_numbers = #stablehlo.scatter<%s%s%sindex_vector_dim = %d>, "
           "indices_are_sorted = false, unique_indices = false",
           f1, f2, f3, ivd);
  tt_b_region_binary(region, sizeof region, tt_b_dtype(b, operand), combine);
  tt_val ins[3] = {operand, indices, updates}, r = TT_INVALID;
  tt_shape out = tt_b_shape(b, operand);
  tt_b_op_multi(b, "stablehlo.scatter", ins, 3, attrs, region, &out, 1, &r);
  return r;
}

/* Full coordinates for gather/scatter along `dim`: an i64 tensor of shape
 * index.shape + [n] whose entry k is the index value on dim and the
 * position on every other dim. */
static tt_val full_coords(tt_builder *b, tt_val index, int dim) {
  tt_shape is = tt_b_shape(b, index);
  int n = is.ndim;
  int64_t dims1[TT_MAX_DIMS + 1];
  memcpy(dims1, is.dims, sizeof(int64_t) * (size_t)n);
  dims1[n] = 1;
  tt_val parts[TT_MAX_DIMS];
  tt_shape s64 = shape_of(TT_I64, n, is.dims);
  for (int k = 0; k < n; k++) {
    tt_val v = k == dim ? tt_b_convert(b, index, TT_I64) : tt_b_iota(b, s64, k);
    parts[k] = tt_b_reshape(b, v, n + 1, dims1);
  }
  return tt_b_concat(b, parts, n, n);
}

static bool is_index_dtype(tt_dtype dt) { return dt == TT_I64 || dt == TT_I32; }

/* 0 <= x < size after adding size to negative values (torch's wrap). */
static tt_val wrap_negative(tt_builder *b, tt_val idx, int64_t size) {
  tt_shape s = tt_b_shape(b, idx);
  tt_val zero = tt_b_full(b, s, 0), n = tt_b_full(b, s, (double)size);
  tt_val neg = tt_b_compare(b, "LT", idx, zero);
  return tt_b_select(b, neg, tt_b_binary(b, "add", idx, n), idx);
}

/* ------------------------------------------------------------ cat */

/* cat(tensors, dim): legacy empty 1-D tensors (shape [0]) are skipped like
 * torch does; the dtype promotes over every input. */
static tt_error *lower_cat(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  int n = tt_lc_list_len(c, 0);
  if (n == 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "torch.cat(): expected a non-empty list of Tensors");
  tt_dtype dt = TT_BOOL;
  int first = -1;
  for (int j = 0; j < n; j++) {
    const tt_tensor_ref *r = tt_lc_list_ref(c, 0, j);
    if (!r || !r->storage) return tt_lc_decline(c, "cat of a CPU scalar");
    dt = j == 0 ? r->dtype : tt_promote(dt, r->dtype);
    bool legacy = r->ndim == 1 && r->sizes[0] == 0;
    if (!legacy && first < 0) first = j;
  }
  if (first < 0) {
    int64_t zero = 0;
    tt_lc_output(c, tt_b_full(b, shape_of(dt, 1, &zero), 0));
    return NULL;
  }
  const tt_tensor_ref *r0 = tt_lc_list_ref(c, 0, first);
  if (r0->ndim == 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "zero-dimensional tensor (at position %d) cannot be concatenated", first);
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), r0->ndim);
  if (dim < 0) return NULL;
  int64_t out[TT_MAX_DIMS];
  memcpy(out, r0->sizes, sizeof out);
  out[dim] = 0;
  tt_val parts[64];
  int np = 0;
  for (int j = 0; j < n; j++) {
    const tt_tensor_ref *r = tt_lc_list_ref(c, 0, j);
    if (r->ndim == 1 && r->sizes[0] == 0) continue;
    if (r->ndim == 0)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "zero-dimensional tensor (at position %d) cannot be concatenated", j);
    if (r->ndim != r0->ndim)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "Tensors must have same number of dimensions: got %d and %d", r0->ndim,
                        r->ndim);
    for (int k = 0; k < r0->ndim; k++)
      if (k != dim && r->sizes[k] != r0->sizes[k])
        return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                          "Sizes of tensors must match except in dimension %" PRId64
                          ". Expected size %" PRId64 " but got size %" PRId64
                          " for tensor number %d in the list.",
                          dim, r0->sizes[k], r->sizes[k], j);
    out[dim] += r->sizes[dim];
    if (numel_of(r->ndim, r->sizes) == 0) continue;
    if (np == 64) return tt_lc_decline(c, "cat of more than 64 tensors");
    parts[np++] = tt_b_convert(b, tt_lc_list_tensor(c, 0, j), dt);
  }
  if (np == 0 || numel_of(r0->ndim, out) == 0)
    tt_lc_output(c, tt_b_full(b, shape_of(dt, r0->ndim, out), 0));
  else
    tt_lc_output(c, tt_b_concat(b, parts, np, (int)dim));
  return NULL;
}

/* ------------------------------------------------------------ index_select / index_add */

/* Dimension numbers shared by index_select (gather) and index_add (scatter):
 * the indexed dim is the batch/scatter dim, every other dim is a window. */
static int window_dims_except(int nd, int64_t dim, int64_t *out) {
  int n = 0;
  for (int k = 0; k < nd; k++)
    if (k != dim) out[n++] = k;
  return n;
}

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
  if (!is_index_dtype((*index)->dtype)) {
    tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s(): Expected dtype int32/int64 for index", op);
    return -1;
  }
  if ((*index)->ndim > 1) {
    tt_lc_fail(c, TT_ERR_INDEX, "%s(): Index is supposed to be a vector", op);
    return -1;
  }
  return tt_wrap_dim(c, tt_lc_int(c, 1, 0), (*self)->ndim);
}

static tt_error *lower_index_select(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self, *index;
  bool declined;
  int64_t dim = index_dim_args(c, "index_select", &self, &index, &declined);
  if (declined) return tt_lc_decline(c, "0-dim or CPU operands");
  if (dim < 0) return NULL;
  int64_t n = numel_of(index->ndim, index->sizes);
  int64_t out[TT_MAX_DIMS];
  memcpy(out, self->sizes, sizeof out);
  out[dim] = n;
  tt_shape os = shape_of(self->dtype, self->ndim, out);
  if (tt_shape_numel(&os) == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  if (numel_of(self->ndim, self->sizes) == 0) return tt_lc_decline(c, "index into an empty tensor");
  int64_t idims[2] = {n, 1};
  tt_val idx = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64), 2, idims);
  int64_t off[TT_MAX_DIMS], slice[TT_MAX_DIMS];
  int n_off = window_dims_except(self->ndim, dim, off);
  memcpy(slice, self->sizes, sizeof slice);
  slice[dim] = 1;
  tt_lc_output(c, emit_gather(b, tt_lc_tensor(c, 0), idx, off, n_off, &dim, 1, &dim, 1, 1, slice, os));
  return NULL;
}

/* index_add(self, dim, index, source, alpha): self[.., index[i], ..] += alpha * source[.., i, ..] */
static tt_error *lower_index_add(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self, *index;
  bool declined;
  int64_t dim = index_dim_args(c, "index_add", &self, &index, &declined);
  if (declined) return tt_lc_decline(c, "0-dim or CPU operands");
  if (dim < 0) return NULL;
  const tt_tensor_ref *src = tt_lc_ref(c, 3);
  if (!src || !src->storage) return tt_lc_decline(c, "CPU source");
  if (src->dtype != self->dtype || src->ndim != self->ndim)
    return tt_lc_decline(c, "source dtype/rank differs from self (torch raises)");
  int64_t n = numel_of(index->ndim, index->sizes);
  for (int k = 0; k < self->ndim; k++)
    if (src->sizes[k] != (k == dim ? n : self->sizes[k]))
      return tt_lc_decline(c, "source shape mismatch (torch raises)");
  tt_val x = tt_lc_tensor(c, 0);
  if (numel_of(src->ndim, src->sizes) == 0 || numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_dtype dt = self->dtype;
  tt_val upd = tt_lc_tensor(c, 3);
  tt_val alpha = tt_b_broadcast_to(b, tt_lc_scalar(c, 4, dt), src->ndim, src->sizes);
  upd = tt_b_binary(b, dt == TT_BOOL ? "and" : "multiply", upd, alpha);
  int64_t idims[2] = {n, 1};
  tt_val idx = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64), 2, idims);
  int64_t win[TT_MAX_DIMS];
  int n_win = window_dims_except(self->ndim, dim, win);
  tt_lc_output(c, emit_scatter(b, x, idx, upd, win, n_win, &dim, 1, &dim, 1, 1,
                               dt == TT_BOOL ? "or" : "add"));
  return NULL;
}

/* ------------------------------------------------------------ gather / scatter */

/* gather(self, dim, index, sparse_grad): out[i][j] = self[index[i][j]][j] (dim 0). */
static tt_error *lower_gather(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 2);
  if (!self || !index || !self->storage || !index->storage || self->ndim == 0)
    return tt_lc_decline(c, "0-dim or CPU operands");
  if (!is_index_dtype(index->dtype)) {
    if (numel_of(index->ndim, index->sizes) == 0) return tt_lc_decline(c, "empty index of another dtype");
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "gather(): Expected dtype int32/int64 for index");
  }
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), self->ndim);
  if (dim < 0) return NULL;
  if (index->ndim != self->ndim)
    return tt_lc_decline(c, "index rank differs from self (torch raises)");
  for (int k = 0; k < self->ndim; k++)
    if (k != dim && index->sizes[k] > self->sizes[k])
      return tt_lc_decline(c, "index larger than self (torch raises)");
  tt_shape os = shape_of(self->dtype, index->ndim, index->sizes);
  if (tt_shape_numel(&os) == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  tt_val coords = full_coords(b, tt_lc_tensor(c, 2), (int)dim);
  int64_t all[TT_MAX_DIMS], ones[TT_MAX_DIMS];
  for (int k = 0; k < self->ndim; k++) all[k] = k, ones[k] = 1;
  tt_lc_output(c, emit_gather(b, tt_lc_tensor(c, 0), coords, NULL, 0, all, self->ndim, all,
                              self->ndim, self->ndim, ones, os));
  return NULL;
}

/* scatter family: scatter(self, dim, index, src|value[, reduce]) and
 * scatter_add(self, dim, index, src). combine: NULL (replace), "add",
 * "multiply". Only src[index.shape] is used, like torch. */
static tt_error *scatter_common(tt_lower_ctx *c, const char *combine) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 2);
  if (!self || !index || !self->storage || !index->storage || self->ndim == 0)
    return tt_lc_decline(c, "0-dim or CPU operands");
  if (!is_index_dtype(index->dtype)) {
    if (numel_of(index->ndim, index->sizes) == 0) return tt_lc_decline(c, "empty index of another dtype");
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "scatter(): Expected dtype int32/int64 for index");
  }
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), self->ndim);
  if (dim < 0) return NULL;
  if (index->ndim != self->ndim)
    return tt_lc_decline(c, "index rank differs from self (torch raises)");
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
  if (numel_of(index->ndim, index->sizes) == 0) {
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
  tt_val coords = full_coords(b, tt_lc_tensor(c, 2), (int)dim);
  int64_t all[TT_MAX_DIMS];
  for (int k = 0; k < self->ndim; k++) all[k] = k;
  tt_lc_output(c, emit_scatter(b, x, coords, upd, NULL, 0, all, self->ndim, all, self->ndim,
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

/* ------------------------------------------------------------ advanced indexing */

typedef struct {
  int k;                        /* number of index tensors (non-None) */
  int64_t indexed[TT_MAX_DIMS]; /* self dims they index, ascending */
  int bnd;                      /* broadcast index shape */
  int64_t bdims[TT_MAX_DIMS];
  int out_nd; /* shape of self[indices] */
  int64_t out_dims[TT_MAX_DIMS];
  int n_off;                        /* positions of the non-indexed dims in out */
  int64_t offset_dims[TT_MAX_DIMS];
  int64_t slice_sizes[TT_MAX_DIMS];
} adv_index;

/* Analyses self[indices] (indices = list argument 1). Returns a decline or
 * failure error, or NULL. */
static tt_error *adv_index_plan(tt_lower_ctx *c, const tt_tensor_ref *self, adv_index *p) {
  memset(p, 0, sizeof *p);
  int n = tt_lc_list_len(c, 1);
  if (n > self->ndim)
    return tt_lc_fail(c, TT_ERR_INDEX, "too many indices for tensor of dimension %d (got %d)",
                      self->ndim, n);
  for (int j = 0; j < n; j++) {
    const tt_tensor_ref *r = tt_lc_list_ref(c, 1, j);
    if (!r) continue;
    if (r->dtype == TT_BOOL || r->dtype == TT_U8)
      return tt_lc_decline(c, "boolean mask index (data-dependent shape)");
    if (!is_index_dtype(r->dtype))
      return tt_lc_fail(c, TT_ERR_INDEX,
                        "tensors used as indices must be long, int, byte or bool tensors");
    int nd;
    int64_t dims[TT_MAX_DIMS];
    if (!tt_broadcast_dims(p->bnd, p->bdims, r->ndim, r->sizes, &nd, dims))
      return tt_lc_fail(c, TT_ERR_INDEX,
                        "shape mismatch: indexing tensors could not be broadcast together");
    p->bnd = nd;
    memcpy(p->bdims, dims, sizeof dims);
    p->indexed[p->k++] = j;
  }
  if (p->k == 0) return tt_lc_decline(c, "no index tensors");
  bool adjacent = p->indexed[p->k - 1] - p->indexed[0] == p->k - 1;
  int64_t first = adjacent ? p->indexed[0] : 0; /* where the broadcast dims go */
  int pos = 0;
  for (int d = 0; d < self->ndim; d++) {
    bool idx = false;
    for (int q = 0; q < p->k; q++) idx |= p->indexed[q] == d;
    p->slice_sizes[d] = idx ? 1 : self->sizes[d];
    if (d == first) {
      for (int q = 0; q < p->bnd; q++) p->out_dims[pos++] = p->bdims[q];
    }
    if (!idx) {
      p->offset_dims[p->n_off++] = pos;
      p->out_dims[pos++] = self->sizes[d];
    }
  }
  if (pos > TT_MAX_DIMS) return tt_lc_decline(c, "result has too many dims");
  p->out_nd = pos;
  return NULL;
}

/* The stacked, wrapped i64 index tensor of shape bdims + [k]. */
static tt_val adv_index_coords(tt_lower_ctx *c, const tt_tensor_ref *self, const adv_index *p) {
  tt_builder *b = tt_lc_builder(c);
  tt_val parts[TT_MAX_DIMS];
  int64_t dims1[TT_MAX_DIMS + 1];
  memcpy(dims1, p->bdims, sizeof(int64_t) * (size_t)p->bnd);
  dims1[p->bnd] = 1;
  for (int q = 0; q < p->k; q++) {
    tt_val v = tt_b_convert(b, tt_lc_list_tensor(c, 1, (int)p->indexed[q]), TT_I64);
    v = wrap_negative(b, v, self->sizes[p->indexed[q]]);
    v = tt_b_broadcast_to(b, v, p->bnd, p->bdims);
    parts[q] = tt_b_reshape(b, v, p->bnd + 1, dims1);
  }
  return tt_b_concat(b, parts, p->k, p->bnd);
}

/* index.Tensor(self, indices): integer advanced indexing. Boolean masks give
 * data-dependent shapes and are declined (CPU). */
static tt_error *lower_index(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  adv_index p;
  TT_TRY(adv_index_plan(c, self, &p));
  tt_shape os = shape_of(self->dtype, p.out_nd, p.out_dims);
  if (tt_shape_numel(&os) == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  if (numel_of(self->ndim, self->sizes) == 0) return tt_lc_decline(c, "index into an empty tensor");
  tt_val coords = adv_index_coords(c, self, &p);
  tt_lc_output(c, emit_gather(b, tt_lc_tensor(c, 0), coords, p.offset_dims, p.n_off, p.indexed,
                              p.k, p.indexed, p.k, p.bnd, p.slice_sizes, os));
  return NULL;
}

/* index_put(self, indices, values, accumulate[, unsafe]) and in-place forms. */
static tt_error *lower_index_put(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *values = tt_lc_ref(c, 2);
  if (!self || !self->storage || !values) return tt_lc_decline(c, "CPU self");
  if (values->dtype != self->dtype)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Index put requires the source and destination dtypes match, got %s for "
                      "the destination and %s for the source.",
                      tt_dtype_name(self->dtype), tt_dtype_name(values->dtype));
  bool accumulate = tt_lc_bool(c, 3, false);
  adv_index p;
  TT_TRY(adv_index_plan(c, self, &p));
  tt_val x = tt_lc_tensor(c, 0);
  int nd;
  int64_t dims[TT_MAX_DIMS];
  if (values->ndim > p.out_nd ||
      !tt_broadcast_dims(p.out_nd, p.out_dims, values->ndim, values->sizes, &nd, dims) ||
      nd != p.out_nd || memcmp(dims, p.out_dims, sizeof(int64_t) * (size_t)nd) != 0)
    return tt_lc_decline(c, "values do not broadcast to the indexed shape (torch raises)");
  if (numel_of(p.out_nd, p.out_dims) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val upd = tt_b_broadcast_to(b, tt_lc_tensor(c, 2), p.out_nd, p.out_dims);
  tt_val coords = adv_index_coords(c, self, &p);
  const char *combine = accumulate ? (self->dtype == TT_BOOL ? "or" : "add") : NULL;
  tt_lc_output(c, emit_scatter(b, x, coords, upd, p.offset_dims, p.n_off, p.indexed, p.k,
                               p.indexed, p.k, p.bnd, combine));
  return NULL;
}

/* ------------------------------------------------------------ masks, triangles */

/* masked_fill(self, mask, value): value a Scalar or a 0-dim tensor. */
static tt_error *lower_masked_fill(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *mask = tt_lc_ref(c, 1);
  if (!self || !mask) return tt_lc_decline(c, "unexpected arguments");
  if (mask->dtype != TT_BOOL) return tt_lc_decline(c, "non-bool mask (torch raises)");
  const tt_arg *v = tt_lc_arg(c, 2);
  if (v && v->kind == TT_ARG_TENSOR && v->u.tensor->ndim != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                      "with %d dimension(s).",
                      v->u.tensor->ndim);
  int args[2] = {0, 1}, nd;
  int64_t dims[TT_MAX_DIMS];
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  tt_val x = tt_operand(c, 0, self->dtype, nd, dims);
  tt_val m = tt_operand(c, 1, TT_BOOL, nd, dims);
  tt_val val = tt_b_broadcast_to(b, tt_lc_scalar(c, 2, self->dtype), nd, dims);
  tt_lc_output(c, tt_b_select(b, m, val, x));
  return NULL;
}

static tt_error *triangle(tt_lower_ctx *c, bool upper) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  if (self->ndim < 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s: input tensor must have at least 2 dimensions",
                      upper ? "triu" : "tril");
  int64_t diag = tt_lc_int(c, 1, 0);
  tt_val x = tt_lc_tensor(c, 0);
  tt_shape s = shape_of(TT_I64, self->ndim, self->sizes);
  /* keep where col - row >= diag (triu) or <= diag (tril) */
  tt_val row = tt_b_iota(b, s, self->ndim - 2), col = tt_b_iota(b, s, self->ndim - 1);
  tt_val d = tt_b_binary(b, "subtract", col, row);
  tt_val keep = tt_b_compare(b, upper ? "GE" : "LE", d, tt_b_full(b, s, (double)diag));
  tt_lc_output(c, tt_b_select(b, keep, x, tt_b_full(b, tt_lc_ref_shape(self), 0)));
  return NULL;
}

static tt_error *lower_triu(tt_lower_ctx *c) { return triangle(c, true); }
static tt_error *lower_tril(tt_lower_ctx *c) { return triangle(c, false); }

/* ------------------------------------------------------------ flip, roll, repeat, pad */

static tt_error *lower_flip(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  int64_t dims[TT_MAX_DIMS], w[TT_MAX_DIMS];
  int n = tt_lc_int_list(c, 1, dims, TT_MAX_DIMS);
  if (n > TT_MAX_DIMS) return tt_lc_decline(c, "too many dims");
  int nw = 0;
  bool seen[TT_MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) {
    int64_t d = tt_wrap_dim(c, dims[i], self->ndim);
    if (d < 0) return NULL;
    if (seen[d])
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "dim %" PRId64 " appears multiple times in the list of dims", d);
    seen[d] = true;
    if (self->ndim > 0) w[nw++] = d;
  }
  tt_val x = tt_lc_tensor(c, 0);
  if (nw == 0 || numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  char list[200], attrs[240];
  tt_fmt_i64_array(list, sizeof list, w, nw);
  snprintf(attrs, sizeof attrs, "dimensions = %s", list);
  tt_lc_output(c, tt_b_op(b, "stablehlo.reverse", &x, 1, attrs, tt_b_shape(b, x)));
  return NULL;
}

/* Rolls x by s (already in [0, size)) along dim. */
static tt_val roll_dim(tt_builder *b, tt_val x, int dim, int64_t s) {
  tt_shape sh = tt_b_shape(b, x);
  int64_t size = sh.dims[dim];
  if (s == 0 || size == 0) return x;
  int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS];
  memcpy(li, sh.dims, sizeof li);
  /* out = cat(x[size - s:], x[:size - s]) */
  st[dim] = size - s;
  tt_val tail = tt_b_slice(b, x, st, li, NULL);
  st[dim] = 0;
  li[dim] = size - s;
  tt_val head = tt_b_slice(b, x, st, li, NULL);
  tt_val parts[2] = {tail, head};
  return tt_b_concat(b, parts, 2, dim);
}

static int64_t pos_mod(int64_t a, int64_t n) { return n == 0 ? 0 : ((a % n) + n) % n; }

static tt_error *lower_roll(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  int64_t shifts[TT_MAX_DIMS], dims[TT_MAX_DIMS];
  int ns = tt_lc_int_list(c, 1, shifts, TT_MAX_DIMS);
  int nd = tt_lc_int_list(c, 2, dims, TT_MAX_DIMS);
  if (nd < 0) nd = 0;
  if (ns > TT_MAX_DIMS || nd > TT_MAX_DIMS) return tt_lc_decline(c, "too many dims");
  tt_val x = tt_lc_tensor(c, 0);
  if (nd == 0) {
    if (ns != 1)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "shifts and dimensions must align. shifts: %d, dims:%d", ns, nd);
    int64_t n = numel_of(self->ndim, self->sizes);
    tt_val flat = tt_b_reshape(b, x, 1, &n);
    flat = roll_dim(b, flat, 0, pos_mod(shifts[0], n));
    tt_lc_output(c, tt_b_reshape(b, flat, self->ndim, self->sizes));
    return NULL;
  }
  if (ns != nd)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "shifts and dimensions must align. shifts: %d, dims:%d", ns, nd);
  for (int i = 0; i < nd; i++) {
    int64_t d = tt_wrap_dim(c, dims[i], self->ndim);
    if (d < 0) return NULL;
    if (self->ndim == 0) continue;
    x = roll_dim(b, x, (int)d, pos_mod(shifts[i], self->sizes[d]));
  }
  tt_lc_output(c, x);
  return NULL;
}

/* repeat(self, repeats): broadcast into [r0, s0, r1, s1, ...] and merge. */
static tt_error *lower_repeat(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  int64_t reps[TT_MAX_DIMS];
  int n = tt_lc_int_list(c, 1, reps, TT_MAX_DIMS);
  if (n > TT_MAX_DIMS || 2 * n > TT_MAX_DIMS) return tt_lc_decline(c, "too many dims");
  if (n < self->ndim)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Number of dimensions of repeat dims can not be smaller than number of "
                      "dimensions of tensor");
  int lead = n - self->ndim;
  int64_t src[TT_MAX_DIMS], big[TT_MAX_DIMS], map[TT_MAX_DIMS], out[TT_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    if (reps[i] < 0)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Trying to create tensor with negative dimension %" PRId64 ": [%" PRId64 "]", reps[i], reps[i]);
    src[i] = i < lead ? 1 : self->sizes[i - lead];
    big[2 * i] = reps[i];
    big[2 * i + 1] = src[i];
    map[i] = 2 * i + 1;
    out[i] = reps[i] * src[i];
  }
  tt_shape os = shape_of(self->dtype, n, out);
  if (tt_shape_numel(&os) == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  tt_val x = tt_b_reshape(b, tt_lc_tensor(c, 0), n, src);
  x = tt_b_broadcast_in_dim(b, x, 2 * n, big, map);
  tt_lc_output(c, tt_b_reshape(b, x, n, out));
  return NULL;
}

/* constant_pad_nd(self, pad, value): pad pairs from the last dim backwards;
 * negative pads slice. */
static tt_error *lower_constant_pad_nd(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  int64_t pad[2 * TT_MAX_DIMS];
  int n = tt_lc_int_list(c, 1, pad, 2 * TT_MAX_DIMS);
  if (n > 2 * TT_MAX_DIMS) return tt_lc_decline(c, "too many pads");
  if (n % 2 != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Length of pad must be even but instead it equals %d", n);
  if (n / 2 > self->ndim)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Length of pad should be no more than twice the number of dimensions of "
                      "the input. Pad length is %d while the input has %d dimensions.",
                      n, self->ndim);
  int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0}, out[TT_MAX_DIMS];
  for (int i = 0; i < n / 2; i++) {
    int d = self->ndim - 1 - i;
    lo[d] = pad[2 * i];
    hi[d] = pad[2 * i + 1];
  }
  for (int d = 0; d < self->ndim; d++) {
    out[d] = self->sizes[d] + lo[d] + hi[d];
    if (out[d] < 0) return tt_lc_decline(c, "negative output size (torch raises)");
  }
  tt_shape os = shape_of(self->dtype, self->ndim, out);
  tt_val v = tt_lc_scalar(c, 2, self->dtype);
  if (tt_shape_numel(&os) == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  if (numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, tt_b_broadcast_to(b, v, self->ndim, out));
    return NULL;
  }
  /* a negative pad larger than the dim on one side combined with a
   * positive pad on the other is fine for stablehlo.pad as long as the
   * result is non-negative; but a dim cropped to below zero on one side
   * first must be done in two steps: crop, then pad. */
  int64_t lo1[TT_MAX_DIMS], hi1[TT_MAX_DIMS], lo2[TT_MAX_DIMS], hi2[TT_MAX_DIMS];
  bool crop = false;
  for (int d = 0; d < self->ndim; d++) {
    lo1[d] = lo[d] < 0 ? lo[d] : 0;
    hi1[d] = hi[d] < 0 ? hi[d] : 0;
    lo2[d] = lo[d] - lo1[d];
    hi2[d] = hi[d] - hi1[d];
    if (self->sizes[d] + lo1[d] + hi1[d] < 0) return tt_lc_decline(c, "pad crops past the input");
    crop |= lo1[d] || hi1[d];
  }
  tt_val x = tt_lc_tensor(c, 0);
  if (crop) {
    int64_t st[TT_MAX_DIMS], li[TT_MAX_DIMS];
    for (int d = 0; d < self->ndim; d++) {
      st[d] = -lo1[d];
      li[d] = self->sizes[d] + hi1[d];
    }
    x = tt_b_slice(b, x, st, li, NULL);
  }
  tt_lc_output(c, tt_b_pad(b, x, v, lo2, hi2, NULL));
  return NULL;
}

/* ------------------------------------------------------------ narrow / scatter-into-slices */

/* Clamps start/end like torch's slice. */
static void slice_bounds(int64_t size, bool has_start, int64_t start, bool has_end, int64_t end,
                         int64_t *s, int64_t *e) {
  if (!has_start) start = 0;
  if (!has_end) end = size;
  if (start < 0) start += size;
  if (end < 0) end += size;
  if (start < 0) start = 0;
  if (start > size) start = size;
  if (end < start) end = start;
  if (end > size) end = size;
  *s = start;
  *e = end;
}

static tt_error *lower_narrow_copy(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage || self->ndim == 0) return tt_lc_decline(c, "0-dim or CPU self");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), self->ndim);
  if (dim < 0) return NULL;
  int64_t size = self->sizes[dim], start = tt_lc_int(c, 2, 0), len = tt_lc_int(c, 3, 0);
  if (start < 0) start += size;
  if (start < 0 || len < 0 || start + len > size)
    return tt_lc_decline(c, "narrow out of range (torch raises)");
  int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS];
  memcpy(li, self->sizes, sizeof li);
  st[dim] = start;
  li[dim] = start + len;
  tt_shape os = tt_lc_ref_shape(self);
  os.dims[dim] = len;
  if (tt_shape_numel(&os) == 0) tt_lc_output(c, tt_b_full(b, os, 0));
  else tt_lc_output(c, tt_b_slice(b, tt_lc_tensor(c, 0), st, li, NULL));
  return NULL;
}

/* slice_scatter(self, src, dim, start, end, step): self with
 * self[start:end:step] (on dim) replaced by src. */
static tt_error *lower_slice_scatter(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *src = tt_lc_ref(c, 1);
  if (!self || !src || !self->storage || !src->storage || self->ndim == 0)
    return tt_lc_decline(c, "0-dim or CPU operands");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, 0), self->ndim);
  if (dim < 0) return NULL;
  int64_t step = tt_lc_int(c, 5, 1);
  if (step < 1) return tt_lc_decline(c, "non-positive step (torch raises)");
  int64_t size = self->sizes[dim], s, e;
  slice_bounds(size, !tt_lc_is_none(c, 3), tt_lc_int(c, 3, 0), !tt_lc_is_none(c, 4),
               tt_lc_int(c, 4, size), &s, &e);
  int64_t len = (e - s + step - 1) / step;
  if (src->ndim != self->ndim || src->dtype != self->dtype)
    return tt_lc_decline(c, "src rank/dtype mismatch (torch raises)");
  for (int k = 0; k < self->ndim; k++)
    if (src->sizes[k] != (k == dim ? len : self->sizes[k]))
      return tt_lc_decline(c, "src shape mismatch (torch raises)");
  tt_val x = tt_lc_tensor(c, 0);
  if (len == 0 || numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val y = tt_lc_tensor(c, 1);
  /* spread src over [s, e) with step-1 holes, then select by position */
  int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0}, in[TT_MAX_DIMS] = {0};
  lo[dim] = s;
  in[dim] = step - 1;
  hi[dim] = size - (s + (len - 1) * step + 1);
  tt_val spread = tt_b_pad(b, y, tt_b_constant(b, self->dtype, 0), lo, hi, in);
  tt_shape is = shape_of(TT_I64, self->ndim, self->sizes);
  tt_val pos = tt_b_iota(b, is, (int)dim);
  tt_val rel = tt_b_binary(b, "subtract", pos, tt_b_full(b, is, (double)s));
  tt_val in_range = tt_b_binary(b, "and", tt_b_compare(b, "GE", rel, tt_b_full(b, is, 0)),
                                tt_b_compare(b, "LT", rel, tt_b_full(b, is, (double)(len - 1) * (double)step + 1)));
  tt_val on_step = tt_b_compare(b, "EQ", tt_b_binary(b, "remainder", rel, tt_b_full(b, is, (double)step)),
                                tt_b_full(b, is, 0));
  tt_val m = tt_b_binary(b, "and", in_range, on_step);
  tt_lc_output(c, tt_b_select(b, m, spread, x));
  return NULL;
}

/* select_scatter(self, src, dim, index): self with self.select(dim, index) = src. */
static tt_error *lower_select_scatter(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *src = tt_lc_ref(c, 1);
  if (!self || !src || !self->storage || !src->storage || self->ndim == 0)
    return tt_lc_decline(c, "0-dim or CPU operands");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, 0), self->ndim);
  if (dim < 0) return NULL;
  int64_t size = self->sizes[dim], index = tt_lc_int(c, 3, 0);
  if (index < -size || index >= size)
    return tt_lc_fail(c, TT_ERR_INDEX,
                      "select(): index %" PRId64 " out of range for tensor of size [%" PRId64
                      "] at dimension %" PRId64, index, size, dim);
  if (index < 0) index += size;
  if (src->ndim != self->ndim - 1 || src->dtype != self->dtype)
    return tt_lc_decline(c, "src rank/dtype mismatch (torch raises)");
  int64_t dims1[TT_MAX_DIMS];
  for (int k = 0, j = 0; k < self->ndim; k++) {
    dims1[k] = k == dim ? 1 : src->sizes[j++];
    if (k != dim && dims1[k] != self->sizes[k])
      return tt_lc_decline(c, "src shape mismatch (torch raises)");
  }
  tt_val x = tt_lc_tensor(c, 0);
  if (numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val y = tt_b_reshape(b, tt_lc_tensor(c, 1), self->ndim, dims1);
  tt_val starts[TT_MAX_DIMS];
  for (int k = 0; k < self->ndim; k++) starts[k] = tt_b_constant_int(b, TT_I64, k == dim ? index : 0);
  tt_lc_output(c, tt_b_dynamic_update_slice(b, x, y, starts));
  return NULL;
}

/* diagonal_scatter(self, src, offset, dim1, dim2): self with its diagonal
 * replaced by src (src's last dim runs along the diagonal). */
static tt_error *lower_diagonal_scatter(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *src = tt_lc_ref(c, 1);
  if (!self || !src || !self->storage || !src->storage || self->ndim < 2)
    return tt_lc_decline(c, "rank < 2 or CPU operands");
  int64_t offset = tt_lc_int(c, 2, 0);
  int64_t d1 = tt_wrap_dim(c, tt_lc_int(c, 3, 0), self->ndim);
  if (d1 < 0) return NULL;
  int64_t d2 = tt_wrap_dim(c, tt_lc_int(c, 4, 1), self->ndim);
  if (d2 < 0) return NULL;
  if (d1 == d2) return tt_lc_decline(c, "dim1 == dim2 (torch raises)");
  int64_t n1 = self->sizes[d1], n2 = self->sizes[d2];
  int64_t len = offset >= 0 ? (n1 < n2 - offset ? n1 : n2 - offset)
                            : (n1 + offset < n2 ? n1 + offset : n2);
  if (len < 0) len = 0;
  if (src->dtype != self->dtype || src->ndim != self->ndim - 1)
    return tt_lc_decline(c, "src rank/dtype mismatch (torch raises)");
  int64_t map[TT_MAX_DIMS];
  int j = 0;
  for (int k = 0; k < self->ndim; k++) {
    if (k == d1 || k == d2) continue;
    if (src->sizes[j] != self->sizes[k]) return tt_lc_decline(c, "src shape mismatch (torch raises)");
    map[j++] = k;
  }
  if (src->sizes[j] != len) return tt_lc_decline(c, "src shape mismatch (torch raises)");
  tt_val x = tt_lc_tensor(c, 0);
  if (len == 0 || numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  /* diagonal element k sits at (k, k + offset) or (k - offset, k) */
  int64_t along = offset >= 0 ? d1 : d2;
  map[j] = along;
  int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0};
  hi[j] = self->sizes[along] - len;
  tt_val y = tt_b_pad(b, tt_lc_tensor(c, 1), tt_b_constant(b, self->dtype, 0), lo, hi, NULL);
  y = tt_b_broadcast_in_dim(b, y, self->ndim, self->sizes, map);
  tt_shape is = shape_of(TT_I64, self->ndim, self->sizes);
  tt_val diff = tt_b_binary(b, "subtract", tt_b_iota(b, is, (int)d2), tt_b_iota(b, is, (int)d1));
  tt_val m = tt_b_compare(b, "EQ", diff, tt_b_full(b, is, (double)offset));
  tt_lc_output(c, tt_b_select(b, m, y, x));
  return NULL;
}

/* Inclusive prefix sum of a 1-D i64 tensor (log-step scan). */
static tt_val prefix_sum(tt_builder *b, tt_val x) {
  int64_t n = tt_b_shape(b, x).dims[0];
  tt_val zero = tt_b_constant(b, TT_I64, 0);
  for (int64_t s = 1; s < n; s *= 2) {
    int64_t st = 0, li = n - s, lo = s, hi = 0;
    tt_val shifted = tt_b_pad(b, tt_b_slice(b, x, &st, &li, NULL), zero, &lo, &hi, NULL);
    x = tt_b_binary(b, "add", x, shifted);
  }
  return x;
}

/* masked_scatter(self, mask, source): the masked positions of self, in
 * row-major order, take source's elements in order. */
static tt_error *lower_masked_scatter(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *mask = tt_lc_ref(c, 1), *src = tt_lc_ref(c, 2);
  if (!self || !mask || !src || !self->storage || !src->storage)
    return tt_lc_decline(c, "CPU operands");
  if (mask->dtype != TT_BOOL) return tt_lc_decline(c, "non-bool mask (torch raises)");
  if (src->dtype != self->dtype) return tt_lc_decline(c, "source dtype differs (torch raises)");
  int64_t sn = numel_of(src->ndim, src->sizes);
  if (sn == 0) return tt_lc_decline(c, "empty source");
  int args[2] = {0, 1}, nd;
  int64_t dims[TT_MAX_DIMS];
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  int64_t n = numel_of(nd, dims);
  tt_val x = tt_operand(c, 0, self->dtype, nd, dims);
  if (n == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val m = tt_b_reshape(b, tt_operand(c, 1, TT_BOOL, nd, dims), 1, &n);
  tt_val pos = tt_b_binary(b, "subtract", prefix_sum(b, tt_b_convert(b, m, TT_I64)),
                           tt_b_full(b, shape_of(TT_I64, 1, &n), 1));
  int64_t idims[2] = {n, 1}, zero = 0, one = 1;
  pos = tt_b_reshape(b, pos, 2, idims); /* out of range (-1, or past source) clamps */
  tt_val flat_src = tt_b_reshape(b, tt_lc_tensor(c, 2), 1, &sn);
  tt_val taken = emit_gather(b, flat_src, pos, NULL, 0, &zero, 1, &zero, 1, 1, &one,
                             shape_of(self->dtype, 1, &n));
  tt_val out = tt_b_select(b, m, taken, tt_b_reshape(b, x, 1, &n));
  tt_lc_output(c, tt_b_reshape(b, out, nd, dims));
  return NULL;
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
  tt_val q = tt_b_binary(b, "divide", sum, counts);
  if (tt_dtype_is_floating(s.dtype)) return q;
  tt_val r = tt_b_binary(b, "remainder", sum, counts);
  tt_val adj = tt_b_binary(b, "and", tt_b_compare(b, "NE", r, zero), tt_b_compare(b, "LT", sum, zero));
  return tt_b_select(b, adj, tt_b_binary(b, "subtract", q, tt_b_full(b, s, 1)), q);
}

/* A bool [size] mask, true at the positions listed in idx (i64 [n, 1];
 * out-of-range positions are dropped). */
static tt_val positions_mask(tt_builder *b, tt_val idx, int64_t size) {
  int64_t n = tt_b_shape(b, idx).dims[0], zero = 0;
  tt_val base = tt_b_full(b, shape_of(TT_BOOL, 1, &size), 0);
  tt_val ones = tt_b_full(b, shape_of(TT_BOOL, 1, &n), 1);
  return emit_scatter(b, base, idx, ones, NULL, 0, &zero, 1, &zero, 1, 1, NULL);
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
  if (!is_index_dtype(index->dtype)) return tt_lc_decline(c, "index dtype (torch raises)");
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
  if (numel_of(index->ndim, index->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  int64_t zero[TT_MAX_DIMS] = {0}, all[TT_MAX_DIMS];
  for (int k = 0; k < self->ndim; k++) all[k] = k;
  tt_val upd = tt_b_slice(b, tt_lc_tensor(c, 3), zero, index->sizes, NULL);
  tt_val coords = full_coords(b, tt_lc_tensor(c, 2), (int)dim);
  tt_shape us = tt_b_shape(b, upd);
  int n = self->ndim;
  if (!include_self) {
    tt_val init = tt_b_broadcast_to(b, reduce_identity(b, reduce, dt), us.ndim, us.dims);
    x = emit_scatter(b, x, coords, init, NULL, 0, all, n, all, n, n, NULL);
  }
  tt_val r = emit_scatter(b, x, coords, upd, NULL, 0, all, n, all, n, n, reduce_combiner(reduce));
  if (strcmp(reduce, "mean") == 0) {
    tt_val cnt0 = tt_b_full(b, tt_lc_ref_shape(self), include_self ? 1 : 0);
    tt_val cnt = emit_scatter(b, cnt0, coords, tt_b_full(b, us, 1), NULL, 0, all, n, all, n, n, "add");
    r = divide_by_counts(b, r, cnt);
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
  if (wrap) idx = wrap_negative(b, idx, size);
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
  int64_t n = numel_of(index->ndim, index->sizes);
  if (n == 0 || numel_of(nd, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  int64_t size = nd > 0 ? self->sizes[dim] : 1;
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
  if ((long_only ? index->dtype != TT_I64 : !is_index_dtype(index->dtype)) || index->ndim > 1 ||
      src->dtype != self->dtype || src->ndim != self->ndim) {
    *err = tt_lc_decline(c, "index/source dtype or rank (torch raises)");
    return -1;
  }
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), self->ndim);
  if (dim < 0) return -1;
  int64_t n = numel_of(index->ndim, index->sizes);
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
  int n_win = window_dims_except(nd, dim, win);
  return emit_scatter(b, x, idx, upd, win, n_win, &dim, 1, &dim, 1, 1, combine);
}

/* index_copy(self, dim, index, source): self[.., index[i], ..] = source[.., i, ..] */
static tt_error *lower_index_copy(tt_lower_ctx *c) {
  tt_error *err;
  int64_t dim = index_source_args(c, true, &err);
  if (dim < 0) return err;
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 2);
  tt_val x = tt_lc_tensor(c, 0);
  int64_t n = numel_of(index->ndim, index->sizes);
  if (n == 0 || numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
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
  tt_error *err;
  int64_t dim = index_source_args(c, false, &err);
  if (dim < 0) return err;
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 2);
  tt_dtype dt = self->dtype;
  if (dt == TT_BOOL) return tt_lc_decline(c, "index_reduce on bool");
  tt_val x = tt_lc_tensor(c, 0);
  int64_t n = numel_of(index->ndim, index->sizes);
  if (n == 0 || numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  int64_t size = self->sizes[dim];
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

/* ------------------------------------------------------------ take / put */

/* take(self, index): self.flatten()[index], negative indices wrap. */
static tt_error *lower_take(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 1);
  if (!self || !index || !self->storage || !index->storage) return tt_lc_decline(c, "CPU operands");
  if (index->dtype != TT_I64) return tt_lc_decline(c, "index dtype (torch raises)");
  tt_shape os = shape_of(self->dtype, index->ndim, index->sizes);
  int64_t n = numel_of(self->ndim, self->sizes), m = tt_shape_numel(&os);
  if (m == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  if (n == 0) return tt_lc_decline(c, "take from an empty tensor (torch raises)");
  tt_val flat = tt_b_reshape(b, tt_lc_tensor(c, 0), 1, &n);
  int64_t idims[TT_MAX_DIMS + 1];
  memcpy(idims, index->sizes, sizeof(int64_t) * (size_t)index->ndim);
  idims[index->ndim] = 1;
  tt_val idx = wrap_negative(b, tt_b_convert(b, tt_lc_tensor(c, 1), TT_I64), n);
  idx = tt_b_reshape(b, idx, index->ndim + 1, idims);
  int64_t zero = 0, one = 1;
  tt_lc_output(c, emit_gather(b, flat, idx, NULL, 0, &zero, 1, &zero, 1, index->ndim, &one, os));
  return NULL;
}

/* put(self, index, source, accumulate): self.flatten()[index] = source
 * (+= with accumulate), negative indices wrap. */
static tt_error *lower_put(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 1), *src = tt_lc_ref(c, 2);
  if (!self || !index || !src || !self->storage || !index->storage || !src->storage)
    return tt_lc_decline(c, "CPU operands");
  int64_t n = numel_of(self->ndim, self->sizes), m = numel_of(index->ndim, index->sizes);
  if (index->dtype != TT_I64 || src->dtype != self->dtype || numel_of(src->ndim, src->sizes) != m)
    return tt_lc_decline(c, "index/source dtype or size (torch raises)");
  bool acc = tt_lc_bool(c, 3, false);
  tt_val x = tt_lc_tensor(c, 0);
  if (m == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  if (n == 0) return tt_lc_decline(c, "put into an empty tensor (torch raises)");
  tt_val flat = tt_b_reshape(b, x, 1, &n);
  tt_val idx = wrap_negative(b, tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 1), TT_I64), 1, &m), n);
  int64_t idims[2] = {m, 1}, zero = 0;
  idx = tt_b_reshape(b, idx, 2, idims);
  tt_val upd = tt_b_reshape(b, tt_lc_tensor(c, 2), 1, &m);
  const char *combine = acc ? (self->dtype == TT_BOOL ? "or" : "add") : NULL;
  tt_val r = emit_scatter(b, flat, idx, upd, NULL, 0, &zero, 1, &zero, 1, 1, combine);
  tt_lc_output(c, tt_b_reshape(b, r, self->ndim, self->sizes));
  return NULL;
}

/* ------------------------------------------------------------ histc */

/* histc(self, bins, min, max): torch's linear binning in self's dtype:
 * bin = (int)((x - lo) * bins / (hi - lo)), x == hi in the last bin, values
 * outside [lo, hi] (and NaN) skipped. lo == hi takes the data's min and max
 * (widened by 1 each side if equal). min/max key the program. */
static tt_error *lower_histc(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  tt_dtype dt = self->dtype;
  if (!tt_dtype_is_floating(dt)) return tt_lc_decline(c, "histc over %s (torch raises)", tt_dtype_name(dt));
  int64_t bins = tt_lc_int(c, 1, 100);
  if (bins <= 0) return tt_lc_decline(c, "bins <= 0 (torch raises)");
  double lo = tt_lc_scalar_value(c, 2), hi = tt_lc_scalar_value(c, 3);
  int64_t n = numel_of(self->ndim, self->sizes);
  tt_shape hs = shape_of(dt, 1, &bins);
  if (lo == hi && n == 0) return tt_lc_decline(c, "empty input without a range");
  if (lo != hi && (!isfinite(lo) || !isfinite(hi) || !(lo < hi)))
    return tt_lc_decline(c, "bad range (torch raises)");
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, hs, 0));
    return NULL;
  }
  /* arithmetic in f32 (f64 for f64) rounded to dt after every step, which
   * is exactly dt's own arithmetic */
  tt_dtype ct = dt == TT_F64 ? TT_F64 : TT_F32;
  tt_shape fs = shape_of(ct, 1, &n);
  tt_val x = tt_b_convert(b, tt_b_reshape(b, tt_lc_tensor(c, 0), 1, &n), ct);
  tt_val L, R;
  if (lo == hi) {
    L = tt_b_reduce(b, x, tt_b_constant(b, ct, INFINITY), (int64_t[]){0}, 1, "minimum");
    R = tt_b_reduce(b, x, tt_b_constant(b, ct, -INFINITY), (int64_t[]){0}, 1, "maximum");
    tt_val eq = tt_b_compare(b, "EQ", L, R);
    L = tt_b_select(b, eq, tt_b_binary(b, "subtract", L, tt_b_constant(b, ct, 1)), L);
    R = tt_b_select(b, eq, tt_b_binary(b, "add", R, tt_b_constant(b, ct, 1)), R);
    L = tt_b_convert(b, tt_b_convert(b, L, dt), ct);
    R = tt_b_convert(b, tt_b_convert(b, R, dt), ct);
  } else {
    L = tt_b_convert(b, tt_b_convert(b, tt_b_constant(b, TT_F64, lo), dt), ct);
    R = tt_b_convert(b, tt_b_convert(b, tt_b_constant(b, TT_F64, hi), dt), ct);
  }
  tt_val Lb = tt_b_broadcast_to(b, L, 1, &n), Rb = tt_b_broadcast_to(b, R, 1, &n);
#define RND(v) tt_b_convert(b, tt_b_convert(b, (v), dt), ct)
  tt_val t = RND(tt_b_binary(b, "subtract", x, Lb));
  t = RND(tt_b_binary(b, "multiply", t, tt_b_full(b, fs, (double)bins)));
  t = RND(tt_b_binary(b, "divide", t, RND(tt_b_binary(b, "subtract", Rb, Lb))));
#undef RND
  tt_shape is = shape_of(TT_I64, 1, &n);
  tt_val pos = tt_b_convert(b, t, TT_I64);
  pos = tt_b_select(b, tt_b_compare(b, "EQ", pos, tt_b_full(b, is, (double)bins)),
                    tt_b_full(b, is, (double)(bins - 1)), pos);
  tt_val in = tt_b_binary(b, "and", tt_b_compare(b, "GE", x, Lb), tt_b_compare(b, "LE", x, Rb));
  pos = tt_b_select(b, in, pos, tt_b_full(b, is, (double)bins)); /* dropped bucket */
  int64_t idims[2] = {n, 1}, zero = 0, nb = bins + 1;
  pos = tt_b_reshape(b, pos, 2, idims);
  tt_val hist = emit_scatter(b, tt_b_full(b, shape_of(dt, 1, &nb), 0), pos, tt_b_full(b, shape_of(dt, 1, &n), 1),
                             NULL, 0, &zero, 1, &zero, 1, 1, "add");
  tt_lc_output(c, tt_b_slice(b, hist, &zero, &bins, NULL));
  return NULL;
}

/* ------------------------------------------------------------ unfold_backward */

/* unfold_backward(grad_in, input_sizes, dim, size, step): the gradient of
 * Tensor.unfold: window w, element j adds into input[.., w*step + j, ..]. */
static tt_error *lower_unfold_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *g = tt_lc_ref(c, 0);
  if (!g || !g->storage) return tt_lc_decline(c, "CPU grad");
  int64_t in[TT_MAX_DIMS];
  int nd = tt_lc_int_list(c, 1, in, TT_MAX_DIMS);
  if (nd < 0 || nd > TT_MAX_DIMS - 1 || g->ndim != (nd > 0 ? nd : 1) + 1) return tt_lc_decline(c, "unexpected ranks");
  if (nd == 0) return tt_lc_decline(c, "0-dim input");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, 0), nd);
  if (dim < 0) return NULL;
  int64_t size = tt_lc_int(c, 3, 1), step = tt_lc_int(c, 4, 1);
  if (size < 0 || step <= 0) return tt_lc_decline(c, "bad size/step");
  int64_t w = g->sizes[dim];
  for (int k = 0; k < nd; k++)
    if (k != dim && g->sizes[k] != in[k]) return tt_lc_decline(c, "grad shape mismatch");
  if (g->sizes[nd] != size || (w > 0 && (w - 1) * step + size > in[dim]))
    return tt_lc_decline(c, "grad shape mismatch");
  tt_shape os = shape_of(g->dtype, nd, in);
  tt_val zeros = tt_b_full(b, os, 0);
  if (numel_of(g->ndim, g->sizes) == 0 || tt_shape_numel(&os) == 0) {
    tt_lc_output(c, zeros);
    return NULL;
  }
  int64_t ws[3] = {w, size, 1};
  tt_shape is = shape_of(TT_I64, 3, ws);
  tt_val pos = tt_b_binary(b, "add", tt_b_binary(b, "multiply", tt_b_iota(b, is, 0), tt_b_full(b, is, (double)step)),
                           tt_b_iota(b, is, 1));
  int64_t win[TT_MAX_DIMS];
  int n_win = window_dims_except(nd, dim, win);
  tt_lc_output(c, emit_scatter(b, zeros, pos, tt_lc_tensor(c, 0), win, n_win, &dim, 1, &dim, 1, 2,
                               g->dtype == TT_BOOL ? "or" : "add"));
  return NULL;
}

TT_LOWERINGS(indexing) = {
    {lower_cat, {"cat", "cat.out"}},
    {lower_index_select, {"index_select", "index_select.out"}},
    {lower_index_add, {"index_add", "index_add_", "index_add.out"}},
    {lower_gather, {"gather", "gather.out"}},
    {lower_scatter, {"scatter.src", "scatter_.src", "scatter.src_out", "scatter.value",
                     "scatter_.value", "scatter.value_out"}},
    {lower_scatter_reduce, {"scatter.reduce", "scatter_.reduce", "scatter.reduce_out",
                            "scatter.value_reduce", "scatter_.value_reduce",
                            "scatter.value_reduce_out"}},
    {lower_scatter_add, {"scatter_add", "scatter_add_", "scatter_add.out"}},
    {lower_index, {"index.Tensor", "index.Tensor_out"}},
    {lower_index_put, {"index_put", "index_put_", "_index_put_impl_", "index_put.out",
                       "_index_put_impl", "_index_put_impl.out"}},
    {lower_masked_fill, {"masked_fill.Scalar", "masked_fill_.Scalar", "masked_fill.Scalar_out",
                         "masked_fill.Tensor", "masked_fill_.Tensor", "masked_fill.Tensor_out"}},
    {lower_triu, {"triu", "triu_", "triu.out"}},
    {lower_tril, {"tril", "tril_", "tril.out"}},
    {lower_flip, {"flip", "flip.out"}},
    {lower_roll, {"roll", "roll.out"}},
    {lower_repeat, {"repeat", "repeat.out"}},
    {lower_constant_pad_nd, {"constant_pad_nd", "constant_pad_nd.out"}},
    {lower_narrow_copy, {"narrow_copy", "narrow_copy.out"}},
    {lower_slice_scatter, {"slice_scatter", "slice_scatter.out"}},
    {lower_select_scatter, {"select_scatter", "select_scatter.out"}},
    {lower_diagonal_scatter, {"diagonal_scatter", "diagonal_scatter.out"}},
    {lower_masked_scatter, {"masked_scatter", "masked_scatter_", "masked_scatter.out"}},
    {lower_scatter_reduce_two, {"scatter_reduce.two", "scatter_reduce_.two", "scatter_reduce.two_out"}},
    {lower_index_fill, {"index_fill.int_Scalar", "index_fill_.int_Scalar", "index_fill.int_Scalar_out",
                        "index_fill.int_Tensor", "index_fill_.int_Tensor", "index_fill.int_Tensor_out"}},
    {lower_index_copy, {"index_copy", "index_copy_", "index_copy.out"}},
    {lower_index_reduce, {"index_reduce", "index_reduce_", "index_reduce.out"}},
    {lower_take, {"take", "take.out"}},
    {lower_put, {"put", "put_", "put.out"}},
    {lower_histc, {"histc", "histc.out"}},
    {lower_unfold_backward, {"unfold_backward", "unfold_backward.out"}},
    {NULL, {NULL}},
};
