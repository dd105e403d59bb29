/* Lowerings of the nn_pool family (see lowering.h): adaptive max pool 2d/3d
 * and adaptive avg pool 2d/3d, forward and backward. Split out of nn.c. */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common.h"
#include "ops/nn_common.h"

/* ------------------------------------------------------------ adaptive max pool */

/* adaptive_max_pool{k}d(self, output_size) -> (out, indices), k = 2 or 3:
 * every offset t of the largest window (K_1 x .. x K_k, unrolled) gathers
 * the element at start + t along each spatial dim; an element replaces the
 * running maximum when it is greater or NaN and inside its window, in
 * CPU's scan order (so the first maximum and the last NaN win). Indices
 * are flat over the k spatial dims. */
static tt_error *adaptive_max(tt_lower_ctx *c, int k) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 0);
  if (!x || !x->storage || !tt_dtype_is_floating(x->dtype)) return tt_lc_decline(c, "dtype/args");
  if (x->ndim != k + 1 && x->ndim != k + 2) return tt_lc_decline(c, "rank");
  for (int i = 0; i < x->ndim; i++)
    if (x->sizes[i] == 0) return tt_lc_decline(c, "empty input");
  int64_t os[TT_MAX_DIMS];
  if (tt_lc_int_list(c, 1, os, TT_MAX_DIMS) != k)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "adaptive_max_pool%dd(): internal error: output_size.size() must be %d", k, k);
  int nd = x->ndim, s0 = nd - k;
  int64_t O[3], I[3], K[3] = {0, 0, 0}, total = 1;
  for (int a = 0; a < k; a++) {
    O[a] = os[a];
    I[a] = x->sizes[s0 + a];
    if (O[a] <= 0 || O[a] > UP_MAX) return tt_lc_decline(c, "size");
  }
  int64_t *buf = malloc(sizeof(int64_t) * UP_MAX * 11);
  if (!buf) return tt_lc_decline(c, "out of host memory");
  int64_t *st[3], *en[3], *ix = buf + 6 * UP_MAX, *vv = buf + 7 * UP_MAX;
  for (int a = 0; a < k; a++) {
    st[a] = buf + 2 * a * UP_MAX;
    en[a] = st[a] + UP_MAX;
    for (int64_t o = 0; o < O[a]; o++) {
      st[a][o] = (o * I[a]) / O[a];
      en[a][o] = ((o + 1) * I[a] + O[a] - 1) / O[a];
      if (en[a][o] - st[a][o] > K[a]) K[a] = en[a][o] - st[a][o];
    }
    total *= K[a];
  }
  if (total > 256) {
    free(buf);
    return tt_lc_decline(c, "windows too large");
  }
  tt_val xv = tt_lc_tensor(c, 0);
  int64_t od[TT_MAX_DIMS];
  for (int i = 0; i < nd; i++) od[i] = i < s0 ? x->sizes[i] : O[i - s0];
  tt_shape is = tt_shape_make(TT_I64, nd, od);
  tt_val best = TT_INVALID, bidx = TT_INVALID;
  for (int64_t flat_t = 0; flat_t < total; flat_t++) {
    int64_t t[3], rem = flat_t;
    for (int a = k - 1; a >= 0; a--) t[a] = rem % K[a], rem /= K[a];
    tt_val v = xv, flat = TT_INVALID, valid = TT_INVALID;
    for (int a = 0; a < k; a++) {
      for (int64_t o = 0; o < O[a]; o++) ix[o] = st[a][o] + t[a] < I[a] ? st[a][o] + t[a] : I[a] - 1;
      v = nn_take_dim(b, v, s0 + a, ix, O[a]);
      tt_val pos = tt_along(b, nn_const_vec_dt(b, TT_I64, NULL, ix, O[a]), nd, od, s0 + a);
      flat = a == 0 ? pos : tt_add(b, tt_mul(b, flat, tt_b_full(b, is, (double)I[a])), pos);
      for (int64_t o = 0; o < O[a]; o++) vv[o] = st[a][o] + t[a] < en[a][o];
      tt_val va = tt_b_compare(b, "NE", tt_along(b, nn_const_vec_dt(b, TT_I64, NULL, vv, O[a]), nd, od, s0 + a),
                               tt_b_full(b, is, 0));
      valid = a == 0 ? va : tt_b_bin(b, TT_OP_AND, valid, va);
    }
    if (best == TT_INVALID) { /* offset 0 is inside every window */
      best = v;
      bidx = flat;
      continue;
    }
    tt_val upd = tt_b_bin(b, TT_OP_OR, tt_b_compare(b, "GT", v, best), tt_b_compare(b, "NE", v, v));
    upd = tt_b_bin(b, TT_OP_AND, upd, valid);
    best = tt_b_select(b, upd, v, best);
    bidx = tt_b_select(b, upd, flat, bidx);
  }
  free(buf);
  tt_lc_output(c, best);
  tt_lc_output(c, bidx);
  return NULL;
}
static tt_error *lower_adaptive_max_pool2d(tt_lower_ctx *c) { return adaptive_max(c, 2); }
static tt_error *lower_adaptive_max_pool3d(tt_lower_ctx *c) { return adaptive_max(c, 3); }

/* adaptive_max_pool{k}d_backward(grad_output, self, indices) */
static tt_error *adaptive_max_backward(tt_lower_ctx *c, int k) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *x = tt_lc_ref(c, 1), *ir = tt_lc_ref(c, 2);
  if (!g || !x || !ir || !g->storage || !x->storage || !ir->storage || !tt_dtype_is_floating(x->dtype) ||
      g->dtype != x->dtype || ir->dtype != TT_I64)
    return tt_lc_decline(c, "args");
  int nd = x->ndim;
  if ((nd != k + 1 && nd != k + 2) || !nn_shape_is(ir, g->ndim, g->sizes) || g->ndim != nd)
    return tt_lc_decline(c, "shapes");
  for (int i = 0; i < nd - k; i++)
    if (g->sizes[i] != x->sizes[i]) return tt_lc_decline(c, "shapes");
  tt_dtype acc = tt_opmath(x->dtype);
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val r = tt_scatter_planes(b, gv, tt_lc_tensor(c, 2), k, x->sizes + nd - k, acc, "add");
  tt_lc_output(c, tt_b_convert(b, r, x->dtype));
  return NULL;
}
static tt_error *lower_adaptive_max_pool2d_backward(tt_lower_ctx *c) { return adaptive_max_backward(c, 2); }
static tt_error *lower_adaptive_max_pool3d_backward(tt_lower_ctx *c) { return adaptive_max_backward(c, 3); }

/* ------------------------------------------------------------ adaptive avg pool 3d */

/* Windows of adaptive pooling along one dim: [start, end) per output. */
static int64_t adaptive_windows(int64_t O, int64_t I, int64_t *st, int64_t *en) {
  int64_t K = 0;
  for (int64_t o = 0; o < O; o++) {
    st[o] = (o * I) / O;
    en[o] = ((o + 1) * I + O - 1) / O;
    if (en[o] - st[o] > K) K = en[o] - st[o];
  }
  return K;
}

/* Window sums (forward) or their transpose (backward) along dim d, with
 * masked taps (select, so infinities stay where they belong). */
static tt_val adaptive_sum_dim(tt_builder *b, tt_val x, int d, int64_t O, int64_t I, bool backward,
                               int64_t *buf) {
  int64_t *st = buf, *en = buf + UP_MAX, *ix = buf + 2 * UP_MAX, *ok = buf + 3 * UP_MAX;
  int64_t K = adaptive_windows(O, I, st, en);
  tt_val acc = TT_INVALID;
  for (int64_t t = 0; t < K; t++) {
    bool all = true;
    for (int64_t o = 0; o < O; o++) {
      ok[o] = st[o] + t < en[o];
      ix[o] = ok[o] ? st[o] + t : st[o];
      all = all && ok[o];
    }
    tt_val v;
    tt_shape vs;
    if (!backward) {
      v = nn_take_dim(b, x, d, ix, O);
      vs = tt_b_shape(b, v);
    } else {
      v = x;
      vs = tt_b_shape(b, x);
    }
    if (!all) {
      tt_shape is = vs;
      is.dtype = TT_I64;
      tt_val m = tt_b_compare(b, "NE", tt_along(b, nn_const_vec_dt(b, TT_I64, NULL, ok, O), vs.ndim, vs.dims, d),
                              tt_b_full(b, is, 0));
      v = tt_b_select(b, m, v, tt_b_full(b, vs, 0));
    }
    if (backward) v = nn_put_add_dim(b, v, d, ix, O, I);
    acc = acc == TT_INVALID ? v : tt_add(b, acc, v);
  }
  return acc;
}

/* _adaptive_avg_pool3d(self, output_size) and
 * _adaptive_avg_pool3d_backward(grad_output, self) */
static tt_error *adaptive_avg(tt_lower_ctx *c, int k, bool backward) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, backward ? 1 : 0), *g = backward ? tt_lc_ref(c, 0) : NULL;
  if (!x || !x->storage || !tt_dtype_is_floating(x->dtype)) return tt_lc_decline(c, "dtype/args");
  int nd = x->ndim;
  if (nd != k + 1 && nd != k + 2) return tt_lc_decline(c, "rank");
  /* PyTorch's 3-d CPU kernel sums float16/bfloat16 windows in that dtype
   * (each addition rounds); only the 2-d one accumulates in float. */
  if (k == 3 && !backward && x->dtype != tt_opmath(x->dtype))
    return tt_lc_decline(c, "reduced-precision 3-d pooling accumulates in its own dtype on CPU");
  bool empty_batch = false;
  for (int i = 0; i < nd; i++) {
    if (x->sizes[i] != 0) continue;
    if (i >= nd - k) return tt_lc_decline(c, "empty spatial input");
    empty_batch = true;
  }
  int64_t O[3];
  if (backward) {
    if (!g || !g->storage || g->dtype != x->dtype || g->ndim != nd) return tt_lc_decline(c, "grad");
    for (int i = 0; i < nd - k; i++)
      if (g->sizes[i] != x->sizes[i]) return tt_lc_decline(c, "grad shape");
    for (int i = 0; i < k; i++) O[i] = g->sizes[nd - k + i];
  } else {
    int64_t os[TT_MAX_DIMS];
    if (tt_lc_int_list(c, 1, os, TT_MAX_DIMS) != k) return tt_lc_decline(c, "output_size");
    for (int i = 0; i < k; i++) O[i] = os[i];
  }
  for (int i = 0; i < k; i++)
    if (O[i] <= 0 || O[i] > UP_MAX || x->sizes[nd - k + i] > UP_MAX) return tt_lc_decline(c, "size");
  if (empty_batch) { /* no window to average: an empty result of the right shape */
    int64_t os[TT_MAX_DIMS];
    for (int i = 0; i < nd; i++) os[i] = backward || i < nd - k ? x->sizes[i] : O[i - (nd - k)];
    tt_lc_output(c, tt_b_full(b, tt_shape_make(x->dtype, nd, os), 0));
    return NULL;
  }
  int64_t *buf = malloc(sizeof(int64_t) * UP_MAX * 4);
  double *cnt = malloc(sizeof(double) * UP_MAX);
  if (!buf || !cnt) {
    free(buf);
    free(cnt);
    return tt_lc_decline(c, "out of host memory");
  }
  tt_dtype acc = tt_opmath(x->dtype);
  tt_val v = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  /* divisor: product of per-dim window lengths, on the output grid */
  int64_t od[TT_MAX_DIMS];
  for (int i = 0; i < nd; i++) od[i] = i < nd - k ? x->sizes[i] : O[i - (nd - k)];
  tt_val div = TT_INVALID;
  for (int i = 0; i < k; i++) {
    int64_t I = x->sizes[nd - k + i];
    adaptive_windows(O[i], I, buf, buf + UP_MAX);
    for (int64_t o = 0; o < O[i]; o++) cnt[o] = (double)(buf[UP_MAX + o] - buf[o]);
    tt_val cv = tt_along(b, nn_const_vec_dt(b, acc, cnt, NULL, O[i]), nd, od, nd - k + i);
    div = div == TT_INVALID ? cv : tt_mul(b, div, cv);
  }
  if (backward) v = tt_div(b, v, div);
  for (int i = k - 1; i >= 0; i--)
    v = adaptive_sum_dim(b, v, nd - k + i, O[i], x->sizes[nd - k + i], backward, buf);
  if (!backward) v = tt_div(b, v, div);
  free(buf);
  free(cnt);
  tt_lc_output(c, tt_b_convert(b, v, x->dtype));
  return NULL;
}

static tt_error *lower_adaptive_avg_pool3d(tt_lower_ctx *c) { return adaptive_avg(c, 3, false); }
static tt_error *lower_adaptive_avg_pool3d_backward(tt_lower_ctx *c) {
  return adaptive_avg(c, 3, true);
}
/* (the 2-d op lived in linalg.c as a matrix product, where 0 * inf made
 * NaNs leak out of windows holding an infinity) */
static tt_error *lower_adaptive_avg_pool2d(tt_lower_ctx *c) { return adaptive_avg(c, 2, false); }
static tt_error *lower_adaptive_avg_pool2d_backward(tt_lower_ctx *c) {
  return adaptive_avg(c, 2, true);
}

TT_LOWERINGS(nn_pool) = {
    {lower_adaptive_max_pool2d, {"adaptive_max_pool2d", "adaptive_max_pool2d.out"}},
    {lower_adaptive_max_pool3d, {"adaptive_max_pool3d", "adaptive_max_pool3d.out"}},
    {lower_adaptive_max_pool3d_backward,
     {"adaptive_max_pool3d_backward", "adaptive_max_pool3d_backward.grad_input"}},
    {lower_adaptive_max_pool2d_backward,
     {"adaptive_max_pool2d_backward", "adaptive_max_pool2d_backward.grad_input"}},
    {lower_adaptive_avg_pool3d, {"_adaptive_avg_pool3d", "_adaptive_avg_pool3d.out"}},
    {lower_adaptive_avg_pool2d, {"_adaptive_avg_pool2d", "_adaptive_avg_pool2d.out"}},
    {lower_adaptive_avg_pool2d_backward,
     {"_adaptive_avg_pool2d_backward", "_adaptive_avg_pool2d_backward.out"}},
    {lower_adaptive_avg_pool3d_backward,
     {"_adaptive_avg_pool3d_backward", "_adaptive_avg_pool3d_backward.grad_input"}},
    {NULL, {NULL}},
};
