/* Lowerings of the search family (see lowering.h): searchsorted and
 * bucketize (binary search into sorted rows). Split out of reduction.c. */
#include "ops/reduction_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ searchsorted / bucketize */

/* x [R, M] gathered at pos [R, K] (int64, in range) -> [R, K]. */
static tt_val take_rows(tt_builder *b, tt_val x, tt_val pos) {
  tt_shape ps = tt_b_shape(b, pos);
  int64_t d3[3] = {ps.dims[0], ps.dims[1], 1};
  tt_val parts[2] = {tt_b_reshape(b, tt_b_iota(b, ps, 0), 3, d3), tt_b_reshape(b, pos, 3, d3)};
  tt_val ins[2] = {x, tt_b_concat(b, parts, 2, 2)};
  return tt_b_emit1(b, TT_OP_GATHER, ins, 2,
                 "dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], "
                 "start_index_map = [0, 1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>, "
                 "indices_are_sorted = false",
                 tt_shape_make(tt_b_dtype(b, x), 2, ps.dims));
}

/* CPU's binary search (lower bound: first position with seq >= v; upper
 * bound: seq > v), unrolled over log2(M) + 1 steps, so NaNs land where CPU
 * puts them. seq [..., M]: 1-D, or the leading dims of the values. */
static tt_error *bsearch_impl(tt_lower_ctx *c, int seq_arg, int val_arg, int side_arg, int sorter_arg) {
  tt_builder *b = tt_lc_builder(c);
  bool out_int32 = tt_lc_bool(c, 2, false);
  tt_dtype out_dt;
  if (red_written_dtype(c, &out_dt) && out_dt != (out_int32 ? TT_I32 : TT_I64)) /* as CPU */
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or "
                      "Long(int64) depending on whether out_int32 flag is True, but we got output "
                      "tensor's dtype %s and out_int32 flag is %s",
                      tt_dtype_torch_name(out_dt), out_int32 ? "True" : "False");
  const tt_tensor_ref *s = tt_lc_ref(c, seq_arg);
  if (!s || !s->storage || s->ndim < 1) return tt_lc_decline(c, "boundaries layout");
  const tt_tensor_ref *so = sorter_arg >= 0 && !tt_lc_is_none(c, sorter_arg) ? tt_lc_ref(c, sorter_arg) : NULL;
  if (so && (!so->storage || so->dtype != TT_I64 || so->ndim != s->ndim ||
             memcmp(so->sizes, s->sizes, sizeof(int64_t) * (size_t)s->ndim)))
    return tt_lc_decline(c, "sorter dtype or shape");
  bool right = tt_lc_bool(c, 3, false);
  if (side_arg >= 0 && !tt_lc_is_none(c, side_arg)) {
    const char *side = tt_lc_string(c, side_arg, "left");
    if (strcmp(side, "right") == 0) right = true;
    else if (strcmp(side, "left") != 0 || right) return tt_lc_decline(c, "side argument");
  }
  tt_dtype dt = s->dtype;
  if (dt == TT_BOOL) return tt_lc_decline(c, "bool boundaries");
  tt_val v;
  int vnd = 0;
  int64_t vdims[TT_MAX_DIMS], n = 1;
  if (tt_lc_kind(c, val_arg) == TT_ARG_SCALAR) {
    const tt_scalar *sc = tt_lc_scalar_ref(c, val_arg);
    if (!sc || sc->kind == TT_SCALAR_BOOL || (sc->kind == TT_SCALAR_FLOAT && !tt_dtype_is_floating(dt)))
      return tt_lc_decline(c, "scalar kind");
    if (s->ndim != 1) return tt_lc_decline(c, "scalar value with N-D boundaries");
    v = tt_lc_scalar(c, val_arg, dt);
  } else {
    const tt_tensor_ref *vr = tt_lc_ref(c, val_arg);
    if (!vr || !vr->storage || vr->dtype != dt) return tt_lc_decline(c, "value dtype or layout");
    if (s->ndim != 1) {
      if (vr->ndim != s->ndim) return tt_lc_decline(c, "rank mismatch");
      for (int i = 0; i + 1 < s->ndim; i++)
        if (vr->sizes[i] != s->sizes[i]) return tt_lc_decline(c, "leading dims differ");
    }
    vnd = vr->ndim;
    for (int i = 0; i < vnd; i++) n *= (vdims[i] = vr->sizes[i]);
    v = tt_lc_tensor(c, val_arg);
  }
  int64_t m = s->sizes[s->ndim - 1], ns = 1;
  for (int i = 0; i < s->ndim; i++) ns *= s->sizes[i];
  tt_dtype odt = tt_lc_bool(c, 2, false) ? TT_I32 : TT_I64;
  if (m == 0 || n == 0) { /* nothing to search: every value lands at 0 */
    tt_lc_output(c, tt_b_full(b, tt_shape_make(odt, vnd, vdims), 0));
    return NULL;
  }
  int64_t rows = s->ndim == 1 ? 1 : ns / m;
  int64_t bd_dims[2] = {rows, m}, v_dims[2] = {rows, n / rows};
  tt_val bd = tt_b_reshape(b, tt_lc_tensor(c, seq_arg), 2, bd_dims);
  /* CPU reads seq[sorter[mid]]: the same search over the gathered sequence */
  if (so) bd = take_rows(b, bd, tt_b_reshape(b, tt_lc_tensor(c, sorter_arg), 2, bd_dims));
  tt_val vv = tt_b_reshape(b, v, 2, v_dims);
  tt_shape is = tt_shape_make(TT_I64, 2, v_dims);
  tt_val st = tt_b_full(b, is, 0), en = tt_b_full(b, is, (double)m);
  tt_val one = tt_b_full(b, is, 1), two = tt_b_full(b, is, 2), last = tt_b_full(b, is, (double)(m - 1));
  for (int64_t w = m; w > 0; w >>= 1) {
    tt_val active = tt_b_compare(b, "LT", st, en);
    tt_val mid = tt_b_bin(b, TT_OP_ADD, st, tt_b_bin(b, TT_OP_DIVIDE, tt_b_bin(b, TT_OP_SUBTRACT, en, st), two));
    tt_val mv = take_rows(b, bd, tt_b_bin(b, TT_OP_MINIMUM, mid, last));
    tt_val hit = tt_b_compare(b, right ? "GT" : "GE", mv, vv);
    tt_val go = tt_b_bin(b, TT_OP_AND, active, tt_b_un(b, TT_OP_NOT, hit));
    tt_val stop = tt_b_bin(b, TT_OP_AND, active, hit);
    st = tt_b_select(b, go, tt_b_bin(b, TT_OP_ADD, mid, one), st);
    en = tt_b_select(b, stop, mid, en);
  }
  tt_val out = tt_b_reshape(b, st, vnd, vdims);
  tt_lc_output(c, tt_b_convert(b, out, odt));
  return NULL;
}

/* searchsorted(sorted_sequence, self, *, out_int32, right, side, sorter) */
static tt_error *lower_searchsorted(tt_lower_ctx *c) { return bsearch_impl(c, 0, 1, 4, 5); }

/* bucketize(self, boundaries, *, out_int32, right) */
static tt_error *lower_bucketize(tt_lower_ctx *c) {
  const tt_tensor_ref *s = tt_lc_ref(c, 1);
  if (!s || s->ndim != 1) return tt_lc_decline(c, "boundaries must be 1-D");
  return bsearch_impl(c, 1, 0, -1, -1);
}

/* isin(elements, test_elements, *, assume_unique, invert) (tensor/tensor
 * and tensor/scalar forms): every element compared with every test element
 * in their promoted dtype, as CPU does for small test sets (NaN is in
 * nothing). */
static tt_error *lower_isin(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *e = tt_lc_ref(c, 0);
  if (!e || !e->storage) return tt_lc_decline(c, "elements not a device tensor");
  int args[2] = {0, 1};
  tt_dtype dt = tt_result_type(c, args, 2);
  if (dt == TT_BOOL || tt_lc_ref(c, 0)->dtype == TT_BOOL) return tt_lc_decline(c, "bool (torch raises)");
  int64_t ne = 1, nt = 1;
  for (int i = 0; i < e->ndim; i++) ne *= e->sizes[i];
  tt_val tv;
  if (tt_lc_kind(c, 1) == TT_ARG_TENSOR && tt_lc_ref(c, 1)->storage) {
    const tt_tensor_ref *t = tt_lc_ref(c, 1);
    for (int i = 0; i < t->ndim; i++) nt *= t->sizes[i];
    tv = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 1), dt), 1, &nt);
  } else if (tt_lc_kind(c, 1) == TT_ARG_SCALAR) {
    tv = tt_b_reshape(b, tt_lc_scalar(c, 1, dt), 1, &nt);
  } else {
    return tt_lc_decline(c, "test elements");
  }
  if (ne * nt > ((int64_t)1 << 24)) return tt_lc_decline(c, "too many comparisons");
  bool invert = tt_lc_bool(c, 3, false);
  tt_shape os = tt_shape_make(TT_BOOL, e->ndim, e->sizes);
  if (ne == 0 || nt == 0) {
    tt_lc_output(c, tt_b_full(b, os, invert ? 1 : 0));
    return NULL;
  }
  int64_t d2[2] = {ne, nt}, m0 = 0, m1 = 1;
  tt_val ev = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), dt), 1, &ne);
  tt_val eq = tt_b_compare(b, "EQ", tt_b_broadcast_in_dim(b, ev, 2, d2, &m0),
                           tt_b_broadcast_in_dim(b, tv, 2, d2, &m1));
  tt_val any = tt_b_reduce(b, eq, tt_b_constant(b, TT_BOOL, 0), &m1, 1, "or");
  if (invert) any = tt_b_un(b, TT_OP_NOT, any);
  tt_lc_output(c, tt_b_reshape(b, any, e->ndim, e->sizes));
  return NULL;
}

TT_LOWERINGS(search) = {
    {lower_isin, {"isin.Tensor_Tensor", "isin.Tensor_Tensor_out", "isin.Tensor_Scalar", "isin.Tensor_Scalar_out"}},
    {lower_searchsorted, {"searchsorted.Tensor", "searchsorted.Tensor_out", "searchsorted.Scalar",
                          "searchsorted.Scalar_out"}},
    {lower_bucketize, {"bucketize.Tensor", "bucketize.Tensor_out", "bucketize.Scalar", "bucketize.Scalar_out"}},
    {NULL, {NULL}},
};
