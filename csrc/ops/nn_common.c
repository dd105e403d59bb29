/* Helpers shared by the nn* lowering families (nn, nn_norm, nn_loss,
 * nn_resample, nn_pool): sums, optional arguments, static gathers and
 * scatters along one dim (dtype rules and arithmetic are in common.h).
 * Declared in nn_common.h. */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn_common.h"

/* Sum over dims without changing dtype (caller already in opmath). */
tt_val nn_rsum(tt_builder *b, tt_val x, const int64_t *dims, int n) {
  return tt_b_reduce(b, x, tt_b_constant(b, tt_b_dtype(b, x), 0), dims, n, "add");
}

/* Reads optional tensor argument i converted to dt, or TT_INVALID if None. */
tt_val nn_opt_tensor(tt_lower_ctx *c, int i, tt_dtype dt) {
  if (!tt_lc_ref(c, i)) return TT_INVALID;
  return tt_b_convert(tt_lc_builder(c), tt_lc_tensor(c, i), dt);
}

bool nn_shape_is(const tt_tensor_ref *r, int ndim, const int64_t *dims) {
  if (!r || r->ndim != ndim) return false;
  for (int i = 0; i < ndim; i++)
    if (r->sizes[i] != dims[i]) return false;
  return true;
}

/* Static 1-D constant (i64 indices, or float weights printed exactly). */
tt_val nn_const_vec_dt(tt_builder *b, tt_dtype dt, const double *v, const int64_t *iv,
                       int64_t n) {
  size_t cap = (size_t)n * 32 + 128, off = 0;
  char *attrs = malloc(cap);
  if (!attrs) return tt_b_fail(b, TT_ERR_OUT_OF_MEMORY, "out of host memory");
  off += (size_t)snprintf(attrs + off, cap - off, "value = dense<[");
  for (int64_t i = 0; i < n; i++) {
    if (iv)
      off += (size_t)snprintf(attrs + off, cap - off, "%s%" PRId64, i ? ", " : "", iv[i]);
    else
      off += (size_t)snprintf(attrs + off, cap - off, "%s%.17e", i ? ", " : "", v[i]);
  }
  tt_shape s = tt_shape_make(dt, 1, &n);
  char ty[64];
  tt_shape_print(&s, ty, sizeof ty);
  snprintf(attrs + off, cap - off, "]> : %s", ty);
  tt_val r = tt_b_emit1(b, TT_OP_CONSTANT, NULL, 0, attrs, s);
  free(attrs);
  return r;
}

/* x with dim d replaced by x[idx[0..n)] along d (static indices). */
tt_val nn_take_dim(tt_builder *b, tt_val x, int d, const int64_t *idx, int64_t n) {
  tt_shape s = tt_b_shape(b, x), out = s;
  out.dims[d] = n;
  int64_t n1[2] = {n, 1};
  tt_val ix = tt_b_reshape(b, nn_const_vec_dt(b, TT_I64, NULL, idx, n), 2, n1);
  char offs[200], ss[200], attrs[700];
  int64_t od[TT_MAX_DIMS], sz[TT_MAX_DIMS];
  int no = 0;
  for (int i = 0; i < s.ndim; i++) {
    if (i != d) od[no++] = i;
    sz[i] = i == d ? 1 : s.dims[i];
  }
  tt_fmt_i64_list(offs, sizeof offs, od, no);
  tt_fmt_i64_array(ss, sizeof ss, sz, s.ndim);
  snprintf(attrs, sizeof attrs,
           "dimension_numbers = #stablehlo.gather<offset_dims = %s, collapsed_slice_dims = [%d], "
           "start_index_map = [%d], index_vector_dim = 1>, slice_sizes = %s, "
           "indices_are_sorted = false",
           offs, d, d, ss);
  tt_val ins[2] = {x, ix};
  return tt_b_emit1(b, TT_OP_GATHER, ins, 2, attrs, out);
}

/* Transpose of take_dim: zeros with dim d of size m, g's slices added at idx. */
tt_val nn_put_add_dim(tt_builder *b, tt_val g, int d, const int64_t *idx, int64_t n,
                      int64_t m) {
  tt_shape s = tt_b_shape(b, g), out = s;
  out.dims[d] = m;
  int64_t n1[2] = {n, 1};
  tt_val ix = tt_b_reshape(b, nn_const_vec_dt(b, TT_I64, NULL, idx, n), 2, n1);
  char wins[200], attrs[700], region[600];
  int64_t wd[TT_MAX_DIMS];
  int nw = 0;
  for (int i = 0; i < s.ndim; i++)
    if (i != d) wd[nw++] = i;
  tt_fmt_i64_list(wins, sizeof wins, wd, nw);
  snprintf(attrs, sizeof attrs,
           "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = %s, "
           "inserted_window_dims = [%d], scatter_dims_to_operand_dims = [%d], "
           "index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false",
           wins, d, d);
  tt_b_region_binary(region, sizeof region, s.dtype, "add");
  tt_val ins[3] = {tt_b_full(b, out, 0), ix, g}, r = TT_INVALID;
  tt_b_emit(b, TT_OP_SCATTER, ins, 3, attrs, region, &out, 1, &r);
  return r;
}
