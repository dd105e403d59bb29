#include "graph/view.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int64_t tt_view_numel(const tt_tensor_ref *ref) {
  int64_t n = 1;
  for (int i = 0; i < ref->ndim; i++) n *= ref->sizes[i];
  return n;
}

bool tt_view_is_contiguous(const tt_tensor_ref *ref) {
  int64_t expected = 1;
  for (int i = ref->ndim - 1; i >= 0; i--) {
    if (ref->sizes[i] == 1) continue;
    if (ref->strides[i] != expected) return false;
    expected *= ref->sizes[i];
  }
  return true;
}

bool tt_view_covers(const tt_tensor_ref *ref, int64_t storage_numel) {
  return ref->offset == 0 && tt_view_numel(ref) == storage_numel && tt_view_is_contiguous(ref);
}

/* Linear storage index of every element of the view: offset + sum(i_k*s_k),
 * as an i64 tensor of the view's shape. */
static tt_val linear_indices(tt_builder *b, const tt_tensor_ref *ref) {
  tt_shape s = tt_shape_make(TT_I64, ref->ndim, ref->sizes);
  tt_val acc = tt_b_full(b, s, 0);
  acc = tt_b_binary(b, "add", acc, tt_b_full(b, s, (double)ref->offset));
  for (int k = 0; k < ref->ndim; k++) {
    if (ref->sizes[k] == 1 || ref->strides[k] == 0) continue;
    tt_val idx = tt_b_iota(b, s, k);
    tt_val stride = tt_b_full(b, s, (double)ref->strides[k]);
    acc = tt_b_binary(b, "add", acc, tt_b_binary(b, "multiply", idx, stride));
  }
  return acc;
}

static tt_val gather_flat(tt_builder *b, tt_val flat, const tt_tensor_ref *ref) {
  tt_val idx = linear_indices(b, ref);
  char attrs[256];
  snprintf(attrs, sizeof attrs,
           "dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], "
           "start_index_map = [0], index_vector_dim = %d>, slice_sizes = array<i64: 1>, "
           "indices_are_sorted = false",
           ref->ndim);
  tt_val ins[2] = {flat, idx};
  return tt_b_op(b, "stablehlo.gather", ins, 2, attrs,
                 tt_shape_make(ref->dtype, ref->ndim, ref->sizes));
}

/* Tries slice/reshape/transpose/broadcast. Returns TT_INVALID (without
 * failing the builder) when the layout needs a gather. */
static tt_val strided_read_fast(tt_builder *b, tt_val flat, const tt_tensor_ref *ref) {
  int64_t storage_numel = tt_b_shape(b, flat).dims[0];
  int kept[TT_MAX_DIMS], nk = 0;
  for (int i = 0; i < ref->ndim; i++) {
    if (ref->sizes[i] == 1 || ref->strides[i] == 0) continue;
    if (ref->strides[i] < 0) return TT_INVALID;
    kept[nk++] = i;
  }
  /* sort kept dims by stride, descending (insertion sort; ndim <= 8) */
  for (int i = 1; i < nk; i++)
    for (int j = i; j > 0 && ref->strides[kept[j]] > ref->strides[kept[j - 1]]; j--) {
      int t = kept[j];
      kept[j] = kept[j - 1];
      kept[j - 1] = t;
    }
  /* need[i]: elements of grid dim i the view touches */
  int64_t base[TT_MAX_DIMS], step[TT_MAX_DIMS], extent[TT_MAX_DIMS], need[TT_MAX_DIMS];
  for (int i = 0; i < nk; i++) {
    int64_t s = ref->strides[kept[i]];
    base[i] = (i == nk - 1) ? 1 : s;
    step[i] = (i == nk - 1) ? s : 1;
    need[i] = (ref->sizes[kept[i]] - 1) * step[i] + 1;
  }
  for (int i = 0; i < nk; i++) {
    if (i == 0) {
      extent[i] = ref->sizes[kept[i]] * step[i];
      if (extent[i] < need[i]) extent[i] = need[i];
    } else {
      if (base[i - 1] % base[i] != 0) return TT_INVALID;
      extent[i] = base[i - 1] / base[i];
      if (extent[i] < need[i]) return TT_INVALID; /* overlapping windows */
    }
  }
  int64_t span = nk ? extent[0] * base[0] : 1;
  int64_t start = ref->offset;
  /* An offset that lands inside the grid (a column block of a wider
   * row, as split() and chunk() make) becomes slice starts per grid dim,
   * so the read stays a slice of the whole storage instead of a padded
   * copy of it shifted by the offset. */
  int64_t first[TT_MAX_DIMS] = {0};
  if (nk > 0) {
    int64_t rest = start % base[0];
    bool fits = start - rest + span <= storage_numel;
    for (int i = 1; i < nk; i++) {
      first[i] = rest / base[i];
      rest %= base[i];
      if (first[i] + need[i] > extent[i]) fits = false;
    }
    if (fits) start -= start % base[0];
    else memset(first, 0, sizeof first);
  }
  tt_val v = flat;
  if (start + span > storage_numel) { /* pad so the reshape fits; padding is never read */
    int64_t lo = 0, hi = start + span - storage_numel;
    v = tt_b_pad(b, v, tt_b_constant(b, ref->dtype, 0), &lo, &hi, NULL);
  }
  int64_t st[1] = {start}, li[1] = {start + span};
  v = tt_b_slice(b, v, st, li, NULL);
  if (nk == 0) return tt_b_broadcast_in_dim(b, tt_b_reshape(b, v, 0, NULL), ref->ndim, ref->sizes, NULL);
  v = tt_b_reshape(b, v, nk, extent);
  int64_t s0[TT_MAX_DIMS], s1[TT_MAX_DIMS], s2[TT_MAX_DIMS];
  for (int i = 0; i < nk; i++) {
    s0[i] = first[i];
    s1[i] = first[i] + need[i];
    s2[i] = step[i];
  }
  v = tt_b_slice(b, v, s0, s1, s2);
  /* transpose from stride order back to dim order */
  int64_t perm[TT_MAX_DIMS], map[TT_MAX_DIMS];
  int order[TT_MAX_DIMS], no = 0;
  for (int d = 0; d < ref->ndim; d++)
    for (int i = 0; i < nk; i++)
      if (kept[i] == d) order[no++] = i;
  for (int i = 0; i < nk; i++) {
    perm[i] = order[i];
    map[i] = kept[order[i]];
  }
  v = tt_b_transpose(b, v, perm);
  return tt_b_broadcast_in_dim(b, v, ref->ndim, ref->sizes, map);
}

tt_val tt_view_read(tt_builder *b, tt_val flat, const tt_tensor_ref *ref) {
  int64_t numel = tt_view_numel(ref);
  tt_shape shape = tt_shape_make(ref->dtype, ref->ndim, ref->sizes);
  if (numel == 0) return tt_b_full(b, shape, 0);
  int64_t storage_numel = tt_b_shape(b, flat).dims[0];
  if (tt_view_is_contiguous(ref) && ref->offset + numel <= storage_numel) {
    tt_val v = flat;
    if (ref->offset != 0 || numel != storage_numel) {
      int64_t st[1] = {ref->offset}, li[1] = {ref->offset + numel};
      v = tt_b_slice(b, v, st, li, NULL);
    }
    return tt_b_reshape(b, v, ref->ndim, ref->sizes);
  }
  tt_val fast = strided_read_fast(b, flat, ref);
  if (fast != TT_INVALID || tt_b_error(b)) return fast;
  return gather_flat(b, flat, ref);
}

tt_val tt_view_write(tt_builder *b, tt_val flat, const tt_tensor_ref *ref, int64_t storage_numel,
                     tt_val value) {
  int64_t numel = tt_view_numel(ref);
  int64_t one = storage_numel;
  if (tt_view_covers(ref, storage_numel)) return tt_b_reshape(b, value, 1, &one);
  if (numel == 0) return flat;
  for (int i = 0; i < ref->ndim; i++)
    if (ref->sizes[i] > 1 && ref->strides[i] == 0)
      return tt_b_fail(b, TT_ERR_INVALID_ARGUMENT,
                       "unsupported operation: more than one element of the written-to tensor "
                       "refers to a single memory location. Please clone() the tensor before "
                       "performing the operation.");
  if (tt_view_is_contiguous(ref)) {
    tt_val v = tt_b_reshape(b, value, 1, &numel);
    tt_val start = tt_b_constant_int(b, TT_I64, ref->offset);
    return tt_b_dynamic_update_slice(b, flat, v, &start);
  }
  tt_val idx = linear_indices(b, ref);
  int64_t idx_dims[2] = {numel, 1};
  idx = tt_b_reshape(b, idx, 2, idx_dims);
  tt_val upd = tt_b_reshape(b, value, 1, &numel);
  char region[400];
  tt_b_region_binary(region, sizeof region, ref->dtype, NULL);
  const char *attrs =
      "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
      "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, "
      "unique_indices = false";
  tt_val ins[3] = {flat, idx, upd}, r;
  tt_shape out = tt_b_shape(b, flat);
  tt_b_op_multi(b, "stablehlo.scatter", ins, 3, attrs, region, &out, 1, &r);
  return r;
}
