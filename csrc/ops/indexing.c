/* Lowerings of the indexing family (see lowering.h): advanced indexing
 * (index.Tensor, index_put) and take/put. Gather/scatter-style ops live in
 * scatter.c, concatenation/padding/slicing ops in shape_ops.c.
 *
 * Index values are data, so they cannot be range-checked while lowering:
 * each op range-checks them on the device (ix_check_range, a device-side
 * check: graph/device_checks.h), before its wrap rule, and the error
 * surfaces at the next host wait. The gather/scatter itself follows
 * StableHLO semantics (a start index clamped into range, an out-of-range
 * update dropped), which is what runs with TORCH_TPU_DEVICE_CHECKS=0.
 * Negative indices wrap exactly like PyTorch where PyTorch wraps them
 * (index.Tensor, index_put, take, put, index_fill); index_select, gather,
 * scatter and index_add reject them in PyTorch, and so do the checks. */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/indexing_common.h"

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
    if (!ix_is_index_dtype(r->dtype))
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
    int64_t size = self->sizes[p->indexed[q]];
    char msg[160];
    snprintf(msg, sizeof msg, "index {value} is out of bounds for dimension %d with size %" PRId64,
             (int)p->indexed[q], size);
    ix_check_range(c, v, -size, size, TT_ERR_INDEX, msg);
    v = ix_wrap_negative(b, v, self->sizes[p->indexed[q]]);
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
  tt_shape os = ix_shape_of(self->dtype, p.out_nd, p.out_dims);
  if (tt_shape_numel(&os) == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  if (ix_numel_of(self->ndim, self->sizes) == 0) return tt_lc_decline(c, "index into an empty tensor");
  tt_val coords = adv_index_coords(c, self, &p);
  tt_lc_output(c, ix_emit_gather(b, tt_lc_tensor(c, 0), coords, p.offset_dims, p.n_off, p.indexed,
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
  if (ix_numel_of(p.out_nd, p.out_dims) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val upd = tt_b_broadcast_to(b, tt_lc_tensor(c, 2), p.out_nd, p.out_dims);
  tt_val coords = adv_index_coords(c, self, &p);
  const char *combine = accumulate ? (self->dtype == TT_BOOL ? "or" : "add") : NULL;
  tt_lc_output(c, ix_emit_scatter(b, x, coords, upd, p.offset_dims, p.n_off, p.indexed, p.k,
                               p.indexed, p.k, p.bnd, combine));
  return NULL;
}

/* ------------------------------------------------------------ take / put */

/* take(self, index): self.flatten()[index], negative indices wrap. */
static tt_error *lower_take(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 1);
  if (!self || !index || !self->storage || !index->storage) return tt_lc_decline(c, "CPU operands");
  if (index->dtype != TT_I64) return tt_lc_decline(c, "index dtype (torch raises)");
  tt_shape os = ix_shape_of(self->dtype, index->ndim, index->sizes);
  int64_t n = ix_numel_of(self->ndim, self->sizes), m = tt_shape_numel(&os);
  if (m == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  if (n == 0) return tt_lc_decline(c, "take from an empty tensor (torch raises)");
  tt_val flat = tt_b_reshape(b, tt_lc_tensor(c, 0), 1, &n);
  int64_t idims[TT_MAX_DIMS + 1];
  memcpy(idims, index->sizes, sizeof(int64_t) * (size_t)index->ndim);
  idims[index->ndim] = 1;
  char msg[160];
  snprintf(msg, sizeof msg, "out of range: tried to access index {value} on a tensor of %" PRId64
           " elements.", n);
  ix_check_range(c, tt_lc_tensor(c, 1), -n, n, TT_ERR_INDEX, msg);
  tt_val idx = ix_wrap_negative(b, tt_b_convert(b, tt_lc_tensor(c, 1), TT_I64), n);
  idx = tt_b_reshape(b, idx, index->ndim + 1, idims);
  int64_t zero = 0, one = 1;
  tt_lc_output(c, ix_emit_gather(b, flat, idx, NULL, 0, &zero, 1, &zero, 1, index->ndim, &one, os));
  return NULL;
}

/* put(self, index, source, accumulate): self.flatten()[index] = source
 * (+= with accumulate), negative indices wrap. */
static tt_error *lower_put(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *index = tt_lc_ref(c, 1), *src = tt_lc_ref(c, 2);
  if (!self || !index || !src || !self->storage || !index->storage || !src->storage)
    return tt_lc_decline(c, "CPU operands");
  int64_t n = ix_numel_of(self->ndim, self->sizes), m = ix_numel_of(index->ndim, index->sizes);
  if (index->dtype != TT_I64 || src->dtype != self->dtype || ix_numel_of(src->ndim, src->sizes) != m)
    return tt_lc_decline(c, "index/source dtype or size (torch raises)");
  bool acc = tt_lc_bool(c, 3, false);
  tt_val x = tt_lc_tensor(c, 0);
  if (m == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  if (n == 0) return tt_lc_decline(c, "put into an empty tensor (torch raises)");
  tt_val flat = tt_b_reshape(b, x, 1, &n);
  char msg[160];
  snprintf(msg, sizeof msg, "out of range: tried to access index {value} on a tensor of %" PRId64
           " elements.", n);
  ix_check_range(c, tt_lc_tensor(c, 1), -n, n, TT_ERR_INDEX, msg);
  tt_val idx = ix_wrap_negative(b, tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 1), TT_I64), 1, &m), n);
  int64_t idims[2] = {m, 1}, zero = 0;
  idx = tt_b_reshape(b, idx, 2, idims);
  tt_val upd = tt_b_reshape(b, tt_lc_tensor(c, 2), 1, &m);
  const char *combine = acc ? (self->dtype == TT_BOOL ? "or" : "add") : NULL;
  tt_val r = ix_emit_scatter(b, flat, idx, upd, NULL, 0, &zero, 1, &zero, 1, 1, combine);
  tt_lc_output(c, tt_b_reshape(b, r, self->ndim, self->sizes));
  return NULL;
}


TT_LOWERINGS(indexing) = {
    {lower_index, {"index.Tensor", "index.Tensor_out"}},
    {lower_index_put, {"index_put", "index_put_", "_index_put_impl_", "index_put.out",
                       "_index_put_impl", "_index_put_impl.out"}},
    {lower_take, {"take", "take.out"}},
    {lower_put, {"put", "put_", "put.out"}},
    {NULL, {NULL}},
};
