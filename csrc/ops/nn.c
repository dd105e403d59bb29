/* Lowerings of the nn family (see lowering.h): embedding backward,
 * embedding bag (forward and backwards) and dropout. Helpers shared with
 * the other nn_* families live in nn_common.h. */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common.h"
#include "ops/nn_common.h"

/* ------------------------------------------------------------ embedding */

/* Scatter-add of rows upd [K, D] into zeros [rows, D] at indices idx [K]. */
static tt_val scatter_add_rows(tt_builder *b, tt_val idx, tt_val upd, int64_t rows) {
  tt_shape us = tt_b_shape(b, upd);
  int64_t K = us.dims[0], D = us.dims[1];
  int64_t k1[2] = {K, 1}, od[2] = {rows, D};
  idx = tt_b_reshape(b, tt_b_convert(b, idx, TT_I64), 2, k1);
  tt_val zeros = tt_b_full(b, tt_shape_make(us.dtype, 2, od), 0);
  char region[512];
  tt_b_region_binary(region, sizeof region, us.dtype, "add");
  const char *attrs =
      "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], "
      "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, "
      "indices_are_sorted = false, unique_indices = false";
  tt_val ins[3] = {zeros, idx, upd}, r = TT_INVALID;
  tt_shape out = tt_shape_make(us.dtype, 2, od);
  tt_b_emit(b, TT_OP_SCATTER, ins, 3, attrs, region, &out, 1, &r);
  return r;
}

/* embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
 * scale_grad_by_freq) */
static tt_error *lower_embedding_dense_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *go = tt_lc_ref(c, 0), *ix = tt_lc_ref(c, 1);
  int64_t num_weights = tt_lc_int(c, 2, 0), padding_idx = tt_lc_int(c, 3, -1);
  if (!go || !ix || !ix->storage || !tt_dtype_is_floating(go->dtype) ||
      (ix->dtype != TT_I64 && ix->dtype != TT_I32))
    return tt_lc_decline(c, "unsupported arguments");
  if (tt_lc_bool(c, 4, false)) return tt_lc_decline(c, "scale_grad_by_freq");
  if (go->ndim != ix->ndim + 1) return tt_lc_decline(c, "odd grad shape");
  for (int i = 0; i < ix->ndim; i++)
    if (go->sizes[i] != ix->sizes[i]) return tt_lc_decline(c, "odd grad shape");
  int64_t K = 1, D = go->sizes[go->ndim - 1];
  for (int i = 0; i < ix->ndim; i++) K *= ix->sizes[i];
  if (K == 0 || D == 0 || num_weights <= 0) return tt_lc_decline(c, "empty");
  tt_dtype acc = tt_opmath(go->dtype);
  int64_t kd[2] = {K, D}, k1[1] = {K};
  tt_val g = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), 2, kd);
  tt_val idx = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 1), TT_I64), 1, k1);
  if (padding_idx >= 0) {
    tt_val pad = tt_b_compare(b, "EQ", idx, tt_b_full(b, tt_shape_make(TT_I64, 1, k1),
                                                       (double)padding_idx));
    int64_t map[1] = {0};
    pad = tt_b_broadcast_in_dim(b, pad, 2, kd, map);
    g = tt_b_select(b, pad, tt_b_full(b, tt_shape_make(acc, 2, kd), 0), g);
  }
  tt_lc_output(c, tt_b_convert(b, scatter_add_rows(b, idx, g, num_weights), go->dtype));
  return NULL;
}

/* ------------------------------------------------------------ dropout */

/* native_dropout(input, p, train?) -> (output, mask) */
static tt_error *lower_native_dropout(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *in = tt_lc_ref(c, 0);
  if (!in || !in->storage || !tt_dtype_is_floating(in->dtype)) return tt_lc_decline(c, "unsupported input");
  double p = tt_lc_double(c, 1, 0.5);
  bool train = tt_lc_is_none(c, 2) ? true : tt_lc_bool(c, 2, true);
  if (p < 0 || p > 1)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "dropout probability has to be between 0 and 1, but got %g", p);
  tt_shape s = tt_lc_ref_shape(in);
  tt_shape bs = s;
  bs.dtype = TT_BOOL;
  tt_val x = tt_lc_tensor(c, 0);
  if (!train) {
    tt_lc_output(c, x);
    tt_lc_output(c, tt_b_full(b, bs, 1));
    return NULL;
  }
  double p1m = 1.0 - p, scale = p1m == 0 ? 0.0 : 1.0 / p1m;
  /* random uint32 bits -> uniform float32 in [0, 1): top 24 bits * 2^-24 */
  tt_val state = tt_lc_rng_state(c);
  tt_shape u32 = s;
  u32.dtype = TT_U32;
  int64_t two = 2;
  tt_shape outs[2] = {tt_shape_make(TT_U64, 1, &two), u32};
  tt_val rr[2] = {TT_INVALID, TT_INVALID};
  tt_b_emit(b, TT_OP_RNG_BIT_GENERATOR, &state, 1,
                "rng_algorithm = #stablehlo<rng_algorithm PHILOX>", NULL, outs, 2, rr);
  tt_val bits = rr[1];
  tt_val top = tt_b_bin(b, TT_OP_SHIFT_RIGHT_LOGICAL, bits, tt_b_full(b, u32, 8));
  tt_val u = tt_mul(b, tt_b_convert(b, top, TT_F32), tt_b_constant(b, TT_F32, 1.0 / 16777216.0));
  /* keep with probability 1-p: u < 1-p (float32 threshold; u is a multiple
   * of 2^-24, so the comparison is exact in float32). */
  tt_val mask = tt_b_compare(b, "LT", u, tt_b_full(b, tt_b_shape(b, u), (float)p1m));
  tt_dtype acc = tt_opmath(in->dtype);
  tt_val xa = tt_b_convert(b, x, acc);
  tt_val y = tt_b_select(b, mask, xa, tt_b_full(b, tt_b_shape(b, xa), 0));
  y = tt_b_convert(b, y, in->dtype);
  /* CPU: input.mul(mask).mul_(scale): the scale multiply in opmath. */
  y = tt_mul(b, tt_b_convert(b, y, acc), tt_b_constant(b, acc, scale));
  tt_lc_output(c, tt_b_convert(b, y, in->dtype));
  tt_lc_output(c, mask);
  return NULL;
}

/* native_dropout_backward(grad_output, mask, scale) */
static tt_error *lower_native_dropout_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *m = tt_lc_ref(c, 1);
  if (!g || !m || !g->storage || !m->storage || !tt_dtype_is_floating(g->dtype) || m->dtype != TT_BOOL ||
      !nn_shape_is(m, g->ndim, g->sizes))
    return tt_lc_decline(c, "unsupported arguments");
  double scale = tt_lc_double(c, 2, 1.0);
  tt_dtype acc = tt_opmath(g->dtype);
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val kept = tt_b_select(b, tt_lc_tensor(c, 1), gv, tt_b_full(b, tt_b_shape(b, gv), 0));
  kept = tt_b_convert(b, kept, g->dtype);
  tt_val r = tt_mul(b, tt_b_convert(b, kept, acc), tt_b_constant(b, acc, scale));
  tt_lc_output(c, tt_b_convert(b, r, g->dtype));
  return NULL;
}

/* ------------------------------------------------------------ embedding bag */

/* Gathers rows idx [K] of w [R, D] -> [K, D]. */
static tt_val take_rows(tt_builder *b, tt_val w, tt_val idx) {
  tt_shape ws = tt_b_shape(b, w), is = tt_b_shape(b, idx);
  int64_t K = is.dims[0], k1[2] = {K, 1}, od[2] = {K, ws.dims[1]};
  tt_val ix = tt_b_reshape(b, tt_b_convert(b, idx, TT_I64), 2, k1);
  char attrs[400];
  snprintf(attrs, sizeof attrs,
           "dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], "
           "start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, %" PRId64
           ">, indices_are_sorted = false", ws.dims[1]);
  tt_val ins[2] = {w, ix};
  return tt_b_emit1(b, TT_OP_GATHER, ins, 2, attrs, tt_shape_make(ws.dtype, 2, od));
}

/* offset2bag[k] = #{j in [1, nb) : offsets[j] <= k}, i64 [K]. */
static tt_val bag_of(tt_builder *b, tt_val offs, int64_t K, int64_t nb) {
  int64_t kb[2] = {K, nb};
  tt_shape kbs = tt_shape_make(TT_I64, 2, kb);
  int64_t m1[1] = {1};
  tt_val ob = tt_b_broadcast_in_dim(b, tt_slice_dim(b, offs, 0, 0, nb), 2, kb, m1);
  tt_val kk = tt_b_iota(b, kbs, 0), jj = tt_b_iota(b, kbs, 1);
  tt_val hit = tt_b_bin(b, TT_OP_AND, tt_b_compare(b, "LE", ob, kk),
                           tt_b_compare(b, "GE", jj, tt_b_full(b, kbs, 1)));
  int64_t d1[1] = {1};
  return nn_rsum(b, tt_b_select(b, hit, tt_b_full(b, kbs, 1), tt_b_full(b, kbs, 0)), d1, 1);
}

/* _embedding_bag / _embedding_bag_forward_only(weight, indices, offsets,
 * scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset,
 * padding_idx) -> (output, offset2bag, bag_size, max_indices). Modes sum and
 * mean; the auxiliary outputs mirror CPU's (offset2bag is empty on CPU's
 * fast sum path). */
static tt_error *lower_embedding_bag(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *w = tt_lc_ref(c, 0), *ix = tt_lc_ref(c, 1), *of = tt_lc_ref(c, 2),
                      *psw = tt_lc_ref(c, 6);
  if (!w || !ix || !of || !w->storage || !ix->storage || !of->storage || !tt_dtype_is_floating(w->dtype))
    return tt_lc_decline(c, "args");
  if (w->ndim != 2 || ix->ndim != 1 || of->ndim != 1) return tt_lc_decline(c, "ranks");
  if ((ix->dtype != TT_I64 && ix->dtype != TT_I32) || of->dtype != ix->dtype)
    return tt_lc_decline(c, "index dtypes");
  int64_t mode = tt_lc_int(c, 4, 0), padding_idx = tt_lc_is_none(c, 8) ? -1 : tt_lc_int(c, 8, -1);
  bool ilo = tt_lc_bool(c, 7, false);
  if (mode != 0 && mode != 1) return tt_lc_decline(c, "mode max");
  if (psw && (mode != 0 || !psw->storage || psw->dtype != w->dtype || !nn_shape_is(psw, 1, ix->sizes)))
    return tt_lc_decline(c, "per_sample_weights");
  int64_t K = ix->sizes[0], nb = of->sizes[0] - (ilo ? 1 : 0), D = w->sizes[1];
  if (K == 0 || nb <= 0 || D == 0 || w->sizes[0] == 0) return tt_lc_decline(c, "empty");
  tt_dtype it = ix->dtype, acc = tt_opmath(w->dtype);
  tt_val idx = tt_lc_tensor(c, 1);
  if (tt_lc_checks_on(c)) { /* device-side check: every index a row of weight */
    tt_val i64 = tt_b_convert(b, idx, TT_I64);
    tt_shape ks = tt_b_shape(b, i64);
    tt_val bad = tt_b_bin(b, TT_OP_OR, tt_b_compare(b, "LT", i64, tt_b_full(b, ks, 0)),
                          tt_b_compare(b, "GE", i64, tt_b_full(b, ks, (double)w->sizes[0])));
    tt_lc_check_value(c, bad, i64, TT_ERR_INVALID_ARGUMENT,
                      "Index {pos} of input takes value {value} which is not in the valid range [0, %" PRId64 ")",
                      w->sizes[0]);
  }
  tt_val offs = tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64);
  tt_val o2b = bag_of(b, offs, K, nb);
  /* bag sizes: next offset (or K) minus this one */
  int64_t one = 1;
  tt_val next;
  if (ilo) {
    next = tt_slice_dim(b, offs, 0, 1, nb + 1);
  } else {
    tt_val kc = tt_b_full(b, tt_shape_make(TT_I64, 1, &one), (double)K);
    tt_val parts[2] = {tt_slice_dim(b, offs, 0, 1, nb), kc};
    next = tt_b_concat(b, parts, 2, 0);
  }
  tt_val bsz = tt_sub(b, next, tt_slice_dim(b, offs, 0, 0, nb));
  tt_val rows = tt_b_convert(b, take_rows(b, tt_lc_tensor(c, 0), idx), acc);
  int64_t kd[2] = {K, D};
  if (psw) {
    int64_t m0[1] = {0};
    rows = tt_mul(b, rows, tt_b_broadcast_in_dim(b, nn_opt_tensor(c, 6, acc), 2, kd, m0));
  }
  if (padding_idx >= 0) {
    /* rows of padding_idx contribute nothing and are not counted */
    int64_t k1[2] = {K, 1}, m0k[1] = {0};
    tt_shape ks = tt_shape_make(TT_I64, 1, &K);
    tt_val keep = tt_b_compare(b, "NE", tt_b_convert(b, idx, TT_I64), tt_b_full(b, ks, (double)padding_idx));
    rows = tt_b_select(b, tt_b_broadcast_in_dim(b, keep, 2, kd, m0k), rows,
                       tt_b_full(b, tt_shape_make(acc, 2, kd), 0));
    tt_val ones = tt_b_reshape(b, tt_b_select(b, keep, tt_b_full(b, ks, 1), tt_b_full(b, ks, 0)), 2, k1);
    bsz = tt_b_reshape(b, scatter_add_rows(b, o2b, ones, nb), 1, &nb);
  }
  tt_val out = scatter_add_rows(b, o2b, rows, nb);
  if (mode == 1) {
    int64_t ndd[2] = {nb, D}, m0[1] = {0};
    tt_val bf = tt_b_broadcast_in_dim(b, tt_b_convert(b, bsz, acc), 2, ndd, m0);
    tt_val zero = tt_b_full(b, tt_shape_make(acc, 2, ndd), 0);
    out = tt_b_select(b, tt_b_compare(b, "GT", bf, zero), tt_div(b, out, bf), zero);
  }
  tt_lc_output(c, tt_b_convert(b, out, w->dtype));
  bool fast = mode == 0 && w->dtype != TT_F64 && padding_idx < 0;
  int64_t zero_len = 0;
  if (fast)
    tt_lc_output(c, tt_b_full(b, tt_shape_make(it, 1, &zero_len), 0));
  else
    tt_lc_output(c, tt_b_convert(b, o2b, it));
  tt_val bag = mode == 1 ? tt_b_convert(b, bsz, it) : tt_b_full(b, tt_shape_make(it, 1, &nb), 0);
  tt_lc_output(c, bag);
  tt_lc_output(c, bag);
  return NULL;
}

/* _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size,
 * maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights,
 * padding_idx) and _embedding_bag_backward(grad, indices, offsets,
 * offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq,
 * mode, sparse, per_sample_weights, padding_idx): the latter recomputes
 * offset2bag from offsets (CPU's fast path leaves it empty). */
static tt_error *embedding_bag_bw(tt_lower_ctx *c, bool from_offsets) {
  tt_builder *b = tt_lc_builder(c);
  int a = from_offsets ? 1 : 0; /* shift of the arguments after indices */
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *ix = tt_lc_ref(c, 1), *o2b = tt_lc_ref(c, 2 + a),
                      *bs = tt_lc_ref(c, 3 + a), *psw = tt_lc_ref(c, 8 + 2 * a);
  const tt_tensor_ref *of = from_offsets ? tt_lc_ref(c, 2) : NULL;
  int64_t num_weights = tt_lc_int(c, 5 + a, 0), mode = tt_lc_int(c, 7 + a, 0);
  int pi = 9 + 2 * a;
  int64_t padding_idx = tt_lc_is_none(c, pi) ? -1 : tt_lc_int(c, pi, -1);
  if (!g || !ix || !bs || !g->storage || !ix->storage || !bs->storage ||
      !tt_dtype_is_floating(g->dtype) || g->ndim != 2 || ix->ndim != 1)
    return tt_lc_decline(c, "args");
  if (from_offsets && tt_lc_bool(c, 9, false)) return tt_lc_decline(c, "sparse");
  if (tt_lc_bool(c, 6 + a, false)) return tt_lc_decline(c, "scale_grad_by_freq");
  if (mode != 0 && mode != 1) return tt_lc_decline(c, "mode max");
  int64_t K = ix->sizes[0], nb = g->sizes[0];
  if (K == 0 || num_weights <= 0 || bs->ndim != 1 || bs->sizes[0] != nb)
    return tt_lc_decline(c, "shapes");
  if (from_offsets) {
    if (!of || !of->storage || of->ndim != 1 || (of->sizes[0] != nb && of->sizes[0] != nb + 1))
      return tt_lc_decline(c, "offsets");
  } else if (!o2b || !o2b->storage || !nn_shape_is(o2b, 1, ix->sizes)) {
    return tt_lc_decline(c, "offset2bag");
  }
  if (psw && (mode != 0 || psw->dtype != g->dtype || !nn_shape_is(psw, 1, ix->sizes)))
    return tt_lc_decline(c, "per_sample_weights");
  tt_dtype acc = tt_opmath(g->dtype);
  int64_t D = g->sizes[1], kd[2] = {K, D}, m0[1] = {0};
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val bag = from_offsets ? bag_of(b, tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64), K, nb)
                            : tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64);
  tt_val rows = take_rows(b, gv, bag);
  if (mode == 1) {
    tt_val sz = tt_b_convert(b, tt_lc_tensor(c, 3 + a), acc);
    int64_t n1[2] = {nb, 1};
    tt_val szk = take_rows(b, tt_b_reshape(b, sz, 2, n1), bag); /* [K, 1] */
    int64_t k1[1] = {K};
    rows = tt_div(b, rows, tt_b_broadcast_in_dim(b, tt_b_reshape(b, szk, 1, k1), 2, kd, m0));
  }
  if (psw) rows = tt_mul(b, rows, tt_b_broadcast_in_dim(b, nn_opt_tensor(c, 8 + 2 * a, acc), 2, kd, m0));
  if (padding_idx >= 0) {
    tt_shape ks = tt_shape_make(TT_I64, 1, &K);
    tt_val keep = tt_b_compare(b, "NE", tt_b_convert(b, tt_lc_tensor(c, 1), TT_I64),
                               tt_b_full(b, ks, (double)padding_idx));
    rows = tt_b_select(b, tt_b_broadcast_in_dim(b, keep, 2, kd, m0), rows,
                       tt_b_full(b, tt_shape_make(acc, 2, kd), 0));
  }
  tt_val r = scatter_add_rows(b, tt_lc_tensor(c, 1), rows, num_weights);
  tt_lc_output(c, tt_b_convert(b, r, g->dtype));
  return NULL;
}

static tt_error *lower_embedding_bag_dense_backward(tt_lower_ctx *c) {
  return embedding_bag_bw(c, false);
}
static tt_error *lower_embedding_bag_backward(tt_lower_ctx *c) { return embedding_bag_bw(c, true); }

/* _embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets,
 * offset2bag, mode, padding_idx): grad_psw[k] = <grad[bag(k)], weight[idx[k]]> */
static tt_error *lower_embedding_bag_psw_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *w = tt_lc_ref(c, 1), *ix = tt_lc_ref(c, 2),
                      *of = tt_lc_ref(c, 3);
  int64_t mode = tt_lc_int(c, 5, 0);
  int64_t padding_idx = tt_lc_is_none(c, 6) ? -1 : tt_lc_int(c, 6, -1);
  if (!g || !w || !ix || !of || !g->storage || !w->storage || !ix->storage || !of->storage ||
      !tt_dtype_is_floating(g->dtype) || w->dtype != g->dtype || g->ndim != 2 || w->ndim != 2 ||
      ix->ndim != 1 || of->ndim != 1 || g->sizes[1] != w->sizes[1])
    return tt_lc_decline(c, "args");
  if (mode != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  int64_t K = ix->sizes[0], nb = g->sizes[0];
  if (K == 0 || nb == 0 || (of->sizes[0] != nb && of->sizes[0] != nb + 1))
    return tt_lc_decline(c, "shapes");
  tt_dtype acc = tt_opmath(g->dtype);
  tt_val bag = bag_of(b, tt_b_convert(b, tt_lc_tensor(c, 3), TT_I64), K, nb);
  tt_val gr = take_rows(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), bag);
  tt_val wr = take_rows(b, tt_b_convert(b, tt_lc_tensor(c, 1), acc), tt_lc_tensor(c, 2));
  int64_t d1[1] = {1};
  tt_val r = nn_rsum(b, tt_mul(b, gr, wr), d1, 1);
  if (padding_idx >= 0) {
    tt_shape ks = tt_shape_make(TT_I64, 1, &K);
    tt_val keep = tt_b_compare(b, "NE", tt_b_convert(b, tt_lc_tensor(c, 2), TT_I64),
                               tt_b_full(b, ks, (double)padding_idx));
    r = tt_b_select(b, keep, r, tt_b_full(b, tt_shape_make(acc, 1, &K), 0));
  }
  tt_lc_output(c, tt_b_convert(b, r, g->dtype));
  return NULL;
}

TT_LOWERINGS(nn) = {
    {lower_embedding_dense_backward,
     {"embedding_dense_backward", "embedding_dense_backward.out"}},
    {lower_native_dropout, {"native_dropout", "native_dropout.out"}},
    {lower_native_dropout_backward, {"native_dropout_backward", "native_dropout_backward.out"}},
    {lower_embedding_bag,
     {"_embedding_bag", "_embedding_bag.out", "_embedding_bag_forward_only",
      "_embedding_bag_forward_only.out"}},
    {lower_embedding_bag_dense_backward,
     {"_embedding_bag_dense_backward", "_embedding_bag_dense_backward.out"}},
    {lower_embedding_bag_backward, {"_embedding_bag_backward"}},
    {lower_embedding_bag_psw_backward,
     {"_embedding_bag_per_sample_weights_backward",
      "_embedding_bag_per_sample_weights_backward.out"}},
    {NULL, {NULL}},
};
