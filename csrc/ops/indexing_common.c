/* Shared helpers of the indexing, scatter and shape_ops families (see
 * indexing_common.h). */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/indexing_common.h"

tt_shape ix_shape_of(tt_dtype dt, int nd, const int64_t *dims) {
  return tt_shape_make(dt, nd, dims);
}

int64_t ix_numel_of(int nd, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  return n;
}

/* "name = [a, b], " or "" when empty. */
void ix_fmt_field(char *buf, size_t size, const char *name, const int64_t *v, int n) {
  if (n == 0) {
    buf[0] = 0;
    return;
  }
  char list[200];
  tt_fmt_i64_list(list, sizeof list, v, n);
  snprintf(buf, size, "%s = %s, ", name, list);
}

tt_val ix_emit_gather(tt_builder *b, tt_val operand, tt_val indices, const int64_t *offset_dims,
                         int n_off, const int64_t *collapsed, int n_coll,
                         const int64_t *start_map, int n_map, int ivd,
                         const int64_t *slice_sizes, tt_shape out) {
  char f1[256], f2[256], f3[256], ss[256], attrs[1200];
  ix_fmt_field(f1, sizeof f1, "offset_dims", offset_dims, n_off);
  ix_fmt_field(f2, sizeof f2, "collapsed_slice_dims", collapsed, n_coll);
  ix_fmt_field(f3, sizeof f3, "start_index_map", start_map, n_map);
  tt_fmt_i64_array(ss, sizeof ss, slice_sizes, tt_b_ndim(b, operand));
  snprintf(attrs, sizeof attrs,
           "dimension_numbers = #stablehlo.gather<%s%s%sindex_vector_dim = %d>, "
           "slice_sizes = %s, indices_are_sorted = false",
           f1, f2, f3, ivd, ss);
  tt_val ins[2] = {operand, indices};
  return tt_b_emit1(b, TT_OP_GATHER, ins, 2, attrs, out);
}

/* combine: NULL replaces, else a binary stablehlo op name ("add"). */
tt_val ix_emit_scatter(tt_builder *b, tt_val operand, tt_val indices, tt_val updates,
                          const int64_t *window_dims, int n_win, const int64_t *inserted,
                          int n_ins, const int64_t *to_operand, int n_map, int ivd,
                          const char *combine) {
  char f1[256], f2[256], f3[256], attrs[1200], region[600];
  ix_fmt_field(f1, sizeof f1, "update_window_dims", window_dims, n_win);
  ix_fmt_field(f2, sizeof f2, "inserted_window_dims", inserted, n_ins);
  ix_fmt_field(f3, sizeof f3, "scatter_dims_to_operand_dims", to_operand, n_map);
  snprintf(attrs, sizeof attrs,
           "scatter_dimension_numbers = #stablehlo.scatter<%s%s%sindex_vector_dim = %d>, "
           "indices_are_sorted = false, unique_indices = false",
           f1, f2, f3, ivd);
  tt_b_region_binary(region, sizeof region, tt_b_dtype(b, operand), combine);
  tt_val ins[3] = {operand, indices, updates}, r = TT_INVALID;
  tt_shape out = tt_b_shape(b, operand);
  tt_b_emit(b, TT_OP_SCATTER, ins, 3, attrs, region, &out, 1, &r);
  return r;
}

/* Full coordinates for gather/scatter along `dim`: an i64 tensor of shape
 * index.shape + [n] whose entry k is the index value on dim and the
 * position on every other dim. */
tt_val ix_full_coords(tt_builder *b, tt_val index, int dim) {
  tt_shape is = tt_b_shape(b, index);
  int n = is.ndim;
  int64_t dims1[TT_MAX_DIMS + 1];
  memcpy(dims1, is.dims, sizeof(int64_t) * (size_t)n);
  dims1[n] = 1;
  tt_val parts[TT_MAX_DIMS];
  tt_shape s64 = ix_shape_of(TT_I64, n, is.dims);
  for (int k = 0; k < n; k++) {
    tt_val v = k == dim ? tt_b_convert(b, index, TT_I64) : tt_b_iota(b, s64, k);
    parts[k] = tt_b_reshape(b, v, n + 1, dims1);
  }
  return tt_b_concat(b, parts, n, n);
}

bool ix_is_index_dtype(tt_dtype dt) { return dt == TT_I64 || dt == TT_I32; }

/* 0 <= x < size after adding size to negative values (torch's wrap). */
tt_val ix_wrap_negative(tt_builder *b, tt_val idx, int64_t size) {
  tt_shape s = tt_b_shape(b, idx);
  tt_val zero = tt_b_full(b, s, 0), n = tt_b_full(b, s, (double)size);
  tt_val neg = tt_b_compare(b, "LT", idx, zero);
  return tt_b_select(b, neg, tt_b_bin(b, TT_OP_ADD, idx, n), idx);
}

/* Dimension numbers shared by index_select (gather) and index_add (scatter):
 * the indexed dim is the batch/scatter dim, every other dim is a window. */
int ix_window_dims_except(int nd, int64_t dim, int64_t *out) {
  int n = 0;
  for (int k = 0; k < nd; k++)
    if (k != dim) out[n++] = k;
  return n;
}

void ix_check_range(tt_lower_ctx *c, tt_val idx, int64_t lo, int64_t hi, tt_error_code code,
                    const char *message) {
  if (!tt_lc_checks_on(c)) return;
  tt_builder *b = tt_lc_builder(c);
  idx = tt_b_convert(b, idx, TT_I64);
  tt_shape s = tt_b_shape(b, idx);
  tt_val below = tt_b_compare(b, "LT", idx, tt_b_broadcast_to(b, tt_b_constant_int(b, TT_I64, lo), s.ndim, s.dims));
  tt_val above = tt_b_compare(b, "GE", idx, tt_b_broadcast_to(b, tt_b_constant_int(b, TT_I64, hi), s.ndim, s.dims));
  /* the first offending element's position in the index, in its shape */
  char where[96] = "";
  size_t off = 0;
  for (int k = 0; k < s.ndim && off < sizeof where; k++)
    off += (size_t)snprintf(where + off, sizeof where - off, k ? "x%" PRId64 : "%" PRId64, s.dims[k]);
  if (s.ndim)
    tt_lc_check_value(c, tt_b_bin(b, TT_OP_OR, below, above), idx, code, "%s (element {pos@%s} of the index)",
                      message, where);
  else
    tt_lc_check_value(c, tt_b_bin(b, TT_OP_OR, below, above), idx, code, "%s", message);
}
