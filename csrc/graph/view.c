#include "graph/view.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Linear storage index of every element of the view: offset + sum(i_k*s_k),
 * as an i64 tensor of the view's shape. offset: a runtime i64 scalar, or
 * TT_INVALID for ref->offset. */
static tt_val linear_indices(tt_builder *b, const tt_tensor_ref *ref, tt_val offset) {
  tt_shape s = tt_shape_make(TT_I64, ref->ndim, ref->sizes);
  tt_val acc = tt_b_full(b, s, 0);
  tt_val start = offset == TT_INVALID ? tt_b_full(b, s, (double)ref->offset)
                                      : tt_b_broadcast_in_dim(b, offset, ref->ndim, ref->sizes, NULL);
  acc = tt_b_binary(b, "add", acc, start);
  for (int k = 0; k < ref->ndim; k++) {
    if (ref->sizes[k] == 1 || ref->strides[k] == 0) continue;
    tt_val idx = tt_b_iota(b, s, k);
    tt_val stride = tt_b_full(b, s, (double)ref->strides[k]);
    acc = tt_b_binary(b, "add", acc, tt_b_binary(b, "multiply", idx, stride));
  }
  return acc;
}

static tt_val gather_flat(tt_builder *b, tt_val flat, const tt_tensor_ref *ref, tt_val offset) {
  tt_val idx = linear_indices(b, ref, offset);
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

/* ------------------------------------------------------------ grid reads
 * (tt_view_grid, view_layout.h): the view takes need[i] elements of grid
 * dim i, step[i] apart, from first[i]. */

/* v, the grid (starting at the view's first row), to the view: the strided
 * slice from first[], then the transpose from stride order back to dim
 * order and the broadcast over the dims left out of the grid. */
static tt_val grid_finish(tt_builder *b, tt_val v, const tt_tensor_ref *ref, const tt_view_grid *g,
                          const int64_t *first) {
  int nk = g->nk;
  int64_t s0[TT_MAX_DIMS] = {0}, s1[TT_MAX_DIMS] = {0}, s2[TT_MAX_DIMS] = {0};
  for (int i = 0; i < nk; i++) {
    s0[i] = first[i];
    s1[i] = first[i] + g->need[i];
    s2[i] = g->step[i];
  }
  v = tt_b_slice(b, v, s0, s1, s2);
  int64_t perm[TT_MAX_DIMS], map[TT_MAX_DIMS];
  int order[TT_MAX_DIMS], no = 0;
  for (int d = 0; d < ref->ndim; d++)
    for (int i = 0; i < nk; i++)
      if (g->kept[i] == d) order[no++] = i;
  for (int i = 0; i < nk; i++) {
    perm[i] = order[i];
    map[i] = g->kept[order[i]];
  }
  v = tt_b_transpose(b, v, perm);
  return tt_b_broadcast_in_dim(b, v, ref->ndim, ref->sizes, map);
}

/* Tries slice/reshape/transpose/broadcast. Returns TT_INVALID (without
 * failing the builder) when the layout needs a gather. */
static tt_val strided_read_fast(tt_builder *b, tt_val flat, const tt_tensor_ref *ref) {
  int64_t storage_numel = tt_b_shape(b, flat).dims[0];
  tt_view_grid g;
  if (!tt_view_grid_make(ref, &g)) return TT_INVALID;
  int nk = g.nk;
  int64_t span = nk ? g.extent[0] * g.base[0] : 1;
  int64_t start = ref->offset;
  /* An offset that lands inside the grid (a column block of a wider
   * row, as split() and chunk() make) becomes slice starts per grid dim,
   * so the read stays a slice of the whole storage instead of a padded
   * copy of it shifted by the offset. */
  int64_t first[TT_MAX_DIMS] = {0};
  if (nk > 0) {
    int64_t rest = start % g.base[0];
    bool fits = start - rest + span <= storage_numel;
    for (int i = 1; i < nk; i++) {
      first[i] = rest / g.base[i];
      rest %= g.base[i];
      if (first[i] + g.need[i] > g.extent[i]) fits = false;
    }
    if (fits) start -= start % g.base[0];
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
  v = tt_b_reshape(b, v, nk, g.extent);
  return grid_finish(b, v, ref, &g, first);
}

static tt_val read_static(tt_builder *b, tt_val flat, const tt_tensor_ref *ref) {
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
  return gather_flat(b, flat, ref, TT_INVALID);
}

/* Writes with a runtime offset (see below) differ only in where the start
 * of the update slice or the scatter indices come from. */
tt_val tt_view_write(tt_builder *b, tt_val flat, const tt_tensor_ref *ref, int64_t storage_numel,
                     tt_val value, tt_val offset) {
  int64_t numel = tt_view_numel(ref);
  int64_t one = storage_numel;
  if (offset == TT_INVALID && tt_view_covers(ref, storage_numel))
    return tt_b_reshape(b, value, 1, &one);
  if (numel == 0) return flat;
  for (int i = 0; i < ref->ndim; i++)
    if (ref->sizes[i] > 1 && ref->strides[i] == 0)
      return tt_b_fail(b, TT_ERR_INVALID_ARGUMENT,
                       "unsupported operation: more than one element of the written-to tensor "
                       "refers to a single memory location. Please clone() the tensor before "
                       "performing the operation.");
  if (tt_view_is_contiguous(ref)) {
    tt_val v = tt_b_reshape(b, value, 1, &numel);
    tt_val start = offset != TT_INVALID ? offset : tt_b_constant_int(b, TT_I64, ref->offset);
    return tt_b_dynamic_update_slice(b, flat, v, &start);
  }
  tt_val idx = linear_indices(b, ref, offset);
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

/* ------------------------------------------------------------ runtime offsets
 *
 * A view whose offset is a runtime value (tt_view_offset_class) is read as
 * the static logic reads it, with the offset's part taken at run time: a
 * dense view is a dynamic_slice of the storage; a grid view a dynamic_slice
 * of the storage laid out as its grid (rows of base[0] elements), with the
 * offset split into grid starts; any other layout a gather at indices
 * offset + sum(i_k * s_k). Writes use dynamic_update_slice for a dense
 * view, a scatter at those indices otherwise. The class makes an offset a
 * runtime value only where every start stays inside its dim, so
 * dynamic_slice's clamping of the starts never moves the view. */

static tt_val i64_op(tt_builder *b, const char *op, tt_val x, int64_t k) {
  return tt_b_binary(b, op, x, tt_b_constant_int(b, TT_I64, k));
}

static tt_val grid_read_dynamic(tt_builder *b, tt_val flat, const tt_tensor_ref *ref,
                                const tt_view_grid *g, tt_val offset) {
  int64_t storage_numel = tt_b_shape(b, flat).dims[0];
  int nk = g->nk;
  if (nk == 0) { /* one element, broadcast */
    int64_t one = 1;
    tt_val v = tt_b_reshape(b, tt_b_dynamic_slice(b, flat, &offset, &one), 0, NULL);
    return tt_b_broadcast_in_dim(b, v, ref->ndim, ref->sizes, NULL);
  }
  int64_t rows = (storage_numel + g->base[0] - 1) / g->base[0];
  tt_val v = flat;
  if (rows * g->base[0] > storage_numel) { /* pad so the reshape fits; padding is never read */
    int64_t lo = 0, hi = rows * g->base[0] - storage_numel;
    v = tt_b_pad(b, v, tt_b_constant(b, ref->dtype, 0), &lo, &hi, NULL);
  }
  int64_t dims[TT_MAX_DIMS], zero[TT_MAX_DIMS] = {0};
  tt_val starts[TT_MAX_DIMS], rest = offset;
  for (int i = 0; i < nk; i++) {
    dims[i] = i == 0 ? rows : g->extent[i];
    if (g->base[i] == 1) {
      starts[i] = rest;
    } else {
      starts[i] = i64_op(b, "divide", rest, g->base[i]);
      rest = i64_op(b, "remainder", rest, g->base[i]);
    }
  }
  v = tt_b_reshape(b, v, nk, dims);
  v = tt_b_dynamic_slice(b, v, starts, g->need);
  return grid_finish(b, v, ref, g, zero);
}

tt_val tt_view_read(tt_builder *b, tt_val flat, const tt_tensor_ref *ref, tt_val offset) {
  if (offset == TT_INVALID || tt_view_numel(ref) == 0) return read_static(b, flat, ref);
  if (tt_view_is_contiguous(ref)) {
    int64_t numel = tt_view_numel(ref);
    return tt_b_reshape(b, tt_b_dynamic_slice(b, flat, &offset, &numel), ref->ndim, ref->sizes);
  }
  tt_view_grid g;
  if (tt_view_grid_make(ref, &g)) return grid_read_dynamic(b, flat, ref, &g, offset);
  return gather_flat(b, flat, ref, offset);
}
