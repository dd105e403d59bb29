/* Lowerings of the pool family (see lowering.h): 2-d and 3-d max pooling
 * with indices and average pooling, forward and backward. Split out of
 * linalg.c; shared helpers are in linalg_common.c. (Adaptive average
 * pooling lives in nn.c.) */
#include "ops/linalg_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================== small helpers */

/* Static 1-D constant of small integer values (counts). */
static tt_val const_vec(tt_builder *b, tt_dtype dt, const double *v, int64_t n) {
  size_t cap = (size_t)n * 32 + 128, off = 0;
  char *attrs = malloc(cap);
  if (!attrs) return tt_b_fail(b, TT_ERR_OUT_OF_MEMORY, "out of host memory");
  off += (size_t)snprintf(attrs + off, cap - off, "value = dense<[");
  for (int64_t i = 0; i < n; i++) {
    if (tt_dtype_is_floating(dt))
      off += (size_t)snprintf(attrs + off, cap - off, i ? ", %" PRId64 ".0" : "%" PRId64 ".0",
                              (int64_t)v[i]);
    else
      off += (size_t)snprintf(attrs + off, cap - off, i ? ", %" PRId64 : "%" PRId64,
                              (int64_t)v[i]);
  }
  tt_shape s = tt_shape_make(dt, 1, &n);
  char ty[64];
  tt_shape_print(&s, ty, sizeof ty);
  snprintf(attrs + off, cap - off, "]> : %s", ty);
  tt_val r = tt_b_op(b, "stablehlo.constant", NULL, 0, attrs, s);
  free(attrs);
  return r;
}

/* reduce_window "add" over x with window win, strides st and edge padding
 * (lo, hi >= 0) on every dim. */
static tt_val window_sum(tt_builder *b, tt_val x, const int64_t *win, const int64_t *st,
                         const int64_t *lo, const int64_t *hi) {
  tt_shape in = tt_b_shape(b, x), out = in;
  int n = in.ndim;
  for (int i = 0; i < n; i++) out.dims[i] = (in.dims[i] + lo[i] + hi[i] - win[i]) / st[i] + 1;
  char region[600], attrs[700], w[160], s[160], pad[300];
  tt_b_region_binary(region, sizeof region, in.dtype, "add");
  tt_fmt_i64_array(w, sizeof w, win, n);
  tt_fmt_i64_array(s, sizeof s, st, n);
  size_t off = (size_t)snprintf(pad, sizeof pad, "dense<[");
  for (int i = 0; i < n; i++)
    off += (size_t)snprintf(pad + off, sizeof pad - off, i ? ", [%" PRId64 ", %" PRId64 "]"
                                                           : "[%" PRId64 ", %" PRId64 "]",
                            lo[i], hi[i]);
  snprintf(pad + off, sizeof pad - off, "]> : tensor<%dx2xi64>", n);
  snprintf(attrs, sizeof attrs, "window_dimensions = %s, window_strides = %s, padding = %s", w, s,
           pad);
  tt_val ins[2] = {x, tt_b_constant(b, in.dtype, 0)}, r;
  tt_b_op_multi(b, "stablehlo.reduce_window", ins, 2, attrs, region, &out, 1, &r);
  return r;
}

/* ====================================================== pooling */

typedef struct {
  int64_t k[2], s[2], p[2], d[2];
  int64_t in[2], out[2];
  bool ceil;
} pool_params;

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil) {
  int64_t o = floordiv(in + 2 * pad - d * (k - 1) - 1 + (ceil ? s - 1 : 0), s) + 1;
  if (ceil && (o - 1) * s >= in + pad) o--;
  return o;
}

/* Reads kernel_size, stride, padding (and dilation if dil_i >= 0) for an
 * input of 3 or 4 dims; declines anything PyTorch would reject. */
static tt_error *read_pool(tt_lower_ctx *c, const tt_tensor_ref *x, int k_i, int s_i, int p_i,
                           int dil_i, bool ceil, pool_params *pp) {
  if (x->ndim != 3 && x->ndim != 4) return tt_lc_decline(c, "input rank");
  for (int i = 0; i < x->ndim; i++)
    if (x->sizes[i] == 0) return tt_lc_decline(c, "empty input");
  int64_t v[TT_MAX_DIMS];
  int n = tt_lc_int_list(c, k_i, v, TT_MAX_DIMS);
  if (n != 1 && n != 2) return tt_lc_decline(c, "kernel_size");
  pp->k[0] = v[0];
  pp->k[1] = v[n - 1];
  n = tt_lc_int_list(c, s_i, v, TT_MAX_DIMS);
  if (n == 0 || n < 0) {
    pp->s[0] = pp->k[0];
    pp->s[1] = pp->k[1];
  } else if (n == 1 || n == 2) {
    pp->s[0] = v[0];
    pp->s[1] = v[n - 1];
  } else {
    return tt_lc_decline(c, "stride");
  }
  n = tt_lc_int_list(c, p_i, v, TT_MAX_DIMS);
  if (n != 1 && n != 2) return tt_lc_decline(c, "padding");
  pp->p[0] = v[0];
  pp->p[1] = v[n - 1];
  pp->d[0] = pp->d[1] = 1;
  if (dil_i >= 0) {
    n = tt_lc_int_list(c, dil_i, v, TT_MAX_DIMS);
    if (n != 1 && n != 2) return tt_lc_decline(c, "dilation");
    pp->d[0] = v[0];
    pp->d[1] = v[n - 1];
  }
  pp->ceil = ceil;
  for (int i = 0; i < 2; i++) {
    if (pp->k[i] <= 0 || pp->s[i] <= 0 || pp->d[i] <= 0 || pp->p[i] < 0)
      return tt_lc_decline(c, "invalid pooling parameters");
    if (pp->p[i] > (dil_i >= 0 ? ((pp->k[i] - 1) * pp->d[i] + 1) / 2 : pp->k[i] / 2))
      return tt_lc_decline(c, "pad larger than half the kernel");
    pp->in[i] = x->sizes[x->ndim - 2 + i];
    pp->out[i] = pool_out(pp->in[i], pp->k[i], pp->p[i], pp->s[i], pp->d[i], ceil);
    if (pp->out[i] <= 0) return tt_lc_decline(c, "output size too small");
  }
  return NULL;
}

/* x as [N, C, H, W] (3-d inputs get a leading 1). */
static tt_val as4d(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  if (s.ndim == 4) return x;
  int64_t d[4] = {1, s.dims[0], s.dims[1], s.dims[2]};
  return tt_b_reshape(b, x, 4, d);
}

static tt_val back_to(tt_builder *b, tt_val x, const tt_tensor_ref *like_shape_of, int64_t h,
                      int64_t w) {
  if (like_shape_of->ndim == 4) return x;
  int64_t d[3] = {like_shape_of->sizes[0], h, w};
  return tt_b_reshape(b, x, 3, d);
}

/* max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode) */
static tt_error *lower_max_pool2d(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  tt_dtype dt = xr->dtype;
  if (dt == TT_BOOL || !linalg_matmul_dtype_ok(dt)) return tt_lc_decline(c, "dtype");
  pool_params pp;
  TT_TRY(read_pool(c, xr, 1, 2, 3, 4, tt_lc_bool(c, 5, false), &pp));
  tt_builder *b = tt_lc_builder(c);
  tt_val x = as4d(b, tt_lc_tensor(c, 0));
  tt_shape xs = tt_b_shape(b, x);
  int64_t N = xs.dims[0], C = xs.dims[1], H = pp.in[0], W = pp.in[1], OH = pp.out[0], OW = pp.out[1];
  int64_t lo[4] = {0, 0, pp.p[0], pp.p[1]}, hi[4] = {0, 0, 0, 0}, in0[4] = {0, 0, 0, 0};
  for (int i = 0; i < 2; i++) {
    int64_t need = (pp.out[i] - 1) * pp.s[i] + (pp.k[i] - 1) * pp.d[i] + 1 - pp.in[i] - pp.p[i];
    hi[2 + i] = need > 0 ? need : 0;
  }
  tt_val lowest = tt_b_constant(b, dt, tt_dtype_lowest(dt));
  if (dt == TT_I64) lowest = tt_b_constant_int(b, dt, INT64_MIN);
  tt_val xp = tt_b_pad(b, x, lowest, lo, hi, in0);
  int64_t od[4] = {N, C, OH, OW};
  tt_shape os = tt_shape_make(dt, 4, od), is = tt_shape_make(TT_I64, 4, od);
  tt_val oh = tt_b_iota(b, is, 2), ow = tt_b_iota(b, is, 3);
  tt_val best = TT_INVALID, idx = TT_INVALID, have = TT_INVALID;
  for (int64_t kh = 0; kh < pp.k[0]; kh++)
    for (int64_t kw = 0; kw < pp.k[1]; kw++) {
      int64_t st[4] = {0, 0, kh * pp.d[0], kw * pp.d[1]};
      int64_t li[4] = {N, C, st[2] + (OH - 1) * pp.s[0] + 1, st[3] + (OW - 1) * pp.s[1] + 1};
      int64_t sd[4] = {1, 1, pp.s[0], pp.s[1]};
      tt_val v = tt_b_slice(b, xp, st, li, sd);
      /* input position of this tap */
      tt_val hpos = tt_b_binary(b, "add", tt_b_binary(b, "multiply", oh, tt_b_full(b, is, (double)pp.s[0])),
                                tt_b_full(b, is, (double)(kh * pp.d[0] - pp.p[0])));
      tt_val wpos = tt_b_binary(b, "add", tt_b_binary(b, "multiply", ow, tt_b_full(b, is, (double)pp.s[1])),
                                tt_b_full(b, is, (double)(kw * pp.d[1] - pp.p[1])));
      tt_val flat = tt_b_binary(b, "add", tt_b_binary(b, "multiply", hpos, tt_b_full(b, is, (double)W)), wpos);
      /* statically always in bounds? */
      bool h_ok = kh * pp.d[0] - pp.p[0] >= 0 && (OH - 1) * pp.s[0] + kh * pp.d[0] - pp.p[0] < H;
      bool w_ok = kw * pp.d[1] - pp.p[1] >= 0 && (OW - 1) * pp.s[1] + kw * pp.d[1] - pp.p[1] < W;
      tt_val valid = TT_INVALID;
      if (!(h_ok && w_ok)) {
        tt_val z = tt_b_full(b, is, 0);
        valid = tt_b_binary(b, "and",
                            tt_b_binary(b, "and", tt_b_compare(b, "GE", hpos, z),
                                        tt_b_compare(b, "LT", hpos, tt_b_full(b, is, (double)H))),
                            tt_b_binary(b, "and", tt_b_compare(b, "GE", wpos, z),
                                        tt_b_compare(b, "LT", wpos, tt_b_full(b, is, (double)W))));
      }
      if (best == TT_INVALID) {
        best = v;
        idx = flat;
        have = valid == TT_INVALID ? tt_b_full(b, tt_shape_make(TT_BOOL, 4, od), 1) : valid;
        continue;
      }
      tt_val upd = tt_b_compare(b, "GT", v, best);
      if (linalg_is_float(dt)) upd = tt_b_binary(b, "or", upd, tt_b_compare(b, "NE", v, v));
      upd = tt_b_binary(b, "or", upd, tt_b_unary(b, "not", have));
      if (valid != TT_INVALID) {
        upd = tt_b_binary(b, "and", upd, valid);
        have = tt_b_binary(b, "or", have, valid);
      } else {
        have = tt_b_full(b, tt_shape_make(TT_BOOL, 4, od), 1);
      }
      best = tt_b_select(b, upd, v, best);
      idx = tt_b_select(b, upd, flat, idx);
    }
  (void)os;
  tt_lc_output(c, back_to(b, best, xr, OH, OW));
  tt_lc_output(c, back_to(b, idx, xr, OH, OW));
  return NULL;
}

/* Scatters g [N, C, *out] at flat per-plane input indices ix (i64, same
 * shape) into zeros [N, C, *in] of dtype acc, combining with op ("add":
 * max-pool backward; NULL: the value replaces, max_unpool). Indices outside
 * their plane are dropped rather than landing in a neighbouring plane. */
static tt_val scatter_to_planes_op(tt_builder *b, tt_val g, tt_val ix, tt_shape gs, int n_spatial,
                                   const int64_t *in, tt_dtype acc, const char *op) {
  int64_t N = gs.dims[0], C = gs.dims[1], plane = 1;
  for (int i = 0; i < n_spatial; i++) plane *= in[i];
  int64_t nout = tt_shape_numel(&gs), total = N * C * plane;
  tt_shape is = tt_shape_make(TT_I64, gs.ndim, gs.dims);
  tt_val pl = tt_b_binary(b, "add", tt_b_binary(b, "multiply", tt_b_iota(b, is, 0), tt_b_full(b, is, (double)C)),
                          tt_b_iota(b, is, 1));
  tt_val lin = tt_b_binary(b, "add", tt_b_binary(b, "multiply", pl, tt_b_full(b, is, (double)plane)), ix);
  tt_val bad = tt_b_binary(b, "or", tt_b_compare(b, "LT", ix, tt_b_full(b, is, 0)),
                           tt_b_compare(b, "GE", ix, tt_b_full(b, is, (double)plane)));
  lin = tt_b_select(b, bad, tt_b_full(b, is, (double)total), lin);
  int64_t idims[2] = {nout, 1};
  lin = tt_b_reshape(b, lin, 2, idims);
  tt_val upd = tt_b_reshape(b, g, 1, &nout);
  tt_val base = tt_b_full(b, tt_shape_make(acc, 1, &total), 0);
  char region[600];
  tt_b_region_binary(region, sizeof region, acc, op);
  const char *attrs =
      "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
      "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, "
      "unique_indices = false";
  tt_val ins[3] = {base, lin, upd}, r;
  tt_shape out = tt_shape_make(acc, 1, &total);
  tt_b_op_multi(b, "stablehlo.scatter", ins, 3, attrs, region, &out, 1, &r);
  int64_t dims[TT_MAX_DIMS] = {N, C};
  for (int i = 0; i < n_spatial; i++) dims[2 + i] = in[i];
  return tt_b_reshape(b, r, 2 + n_spatial, dims);
}
static tt_val scatter_to_planes(tt_builder *b, tt_val g, tt_val ix, tt_shape gs, int n_spatial,
                                const int64_t *in, tt_dtype acc) {
  return scatter_to_planes_op(b, g, ix, gs, n_spatial, in, acc, "add");
}

/* max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride,
 * padding, dilation, ceil_mode, indices): scatter-add of the gradients to
 * the recorded per-plane flat positions. */
static tt_error *lower_max_pool2d_backward(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1) || !linalg_is_tensor(c, 7))
    return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *gr = tt_lc_ref(c, 0), *xr = tt_lc_ref(c, 1), *ir = tt_lc_ref(c, 7);
  tt_dtype dt = xr->dtype;
  if (!linalg_is_float(dt) || gr->dtype != dt || ir->dtype != TT_I64) return tt_lc_decline(c, "dtype");
  pool_params pp;
  TT_TRY(read_pool(c, xr, 2, 3, 4, 5, tt_lc_bool(c, 6, false), &pp));
  if (gr->ndim != xr->ndim || ir->ndim != xr->ndim) return tt_lc_decline(c, "shapes");
  for (int i = 0; i < xr->ndim; i++) {
    int64_t want = i < xr->ndim - 2 ? xr->sizes[i] : pp.out[i - (xr->ndim - 2)];
    if (gr->sizes[i] != want || ir->sizes[i] != want) return tt_lc_decline(c, "shapes");
  }
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = linalg_acc_dtype(dt);
  tt_val g = as4d(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc));
  tt_val ix = as4d(b, tt_lc_tensor(c, 7));
  tt_shape gs = tt_b_shape(b, g);
  int64_t H = pp.in[0], W = pp.in[1];
  tt_val r = scatter_to_planes(b, g, ix, gs, 2, pp.in, acc);
  tt_lc_output(c, tt_b_convert(b, back_to(b, r, xr, H, W), dt));
  return NULL;
}

/* Per-output divisors of avg_pool2d along one dim (separable). */
static void avg_factors(const pool_params *pp, int i, bool include_pad, double *f) {
  for (int64_t o = 0; o < pp->out[i]; o++) {
    int64_t s = o * pp->s[i] - pp->p[i];
    int64_t e = s + pp->k[i];
    if (e > pp->in[i] + pp->p[i]) e = pp->in[i] + pp->p[i];
    int64_t full = e - s;
    if (s < 0) s = 0;
    if (e > pp->in[i]) e = pp->in[i];
    f[o] = (double)(include_pad ? full : e - s);
  }
}

/* Divisor tensor [N, C, OH, OW] for avg_pool2d, in dt. */
static tt_val avg_divisor(tt_builder *b, const pool_params *pp, bool include_pad, int64_t divisor,
                          tt_dtype dt, const int64_t *od) {
  tt_shape s = tt_shape_make(dt, 4, od);
  if (divisor) return tt_b_full(b, s, (double)divisor);
  double fh[4096], fw[4096];
  if (pp->out[0] > 4096 || pp->out[1] > 4096) return TT_INVALID;
  avg_factors(pp, 0, include_pad, fh);
  avg_factors(pp, 1, include_pad, fw);
  tt_val h = linalg_bcast_dim(b, const_vec(b, dt, fh, pp->out[0]), 4, od, 2);
  tt_val w = linalg_bcast_dim(b, const_vec(b, dt, fw, pp->out[1]), 4, od, 3);
  return tt_b_binary(b, "multiply", h, w);
}

static tt_error *read_avg(tt_lower_ctx *c, const tt_tensor_ref *xr, int first, pool_params *pp,
                          bool *include_pad, int64_t *divisor) {
  TT_TRY(read_pool(c, xr, first, first + 1, first + 2, -1, tt_lc_bool(c, first + 3, false), pp));
  *include_pad = tt_lc_bool(c, first + 4, true);
  *divisor = tt_lc_is_none(c, first + 5) ? 0 : tt_lc_int(c, first + 5, 0);
  if (!tt_lc_is_none(c, first + 5) && *divisor == 0)
    return tt_lc_fail(c, TT_ERR_RUNTIME, "divisor must be not zero");
  if (pp->out[0] > 4096 || pp->out[1] > 4096) return tt_lc_decline(c, "output too large");
  return NULL;
}

static tt_dtype avg_acc(tt_dtype dt) { return dt == TT_I64 ? TT_I64 : linalg_acc_dtype(dt); }

/* avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
 * divisor_override) */
static tt_error *lower_avg_pool2d(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  tt_dtype dt = xr->dtype;
  if (!linalg_is_float(dt) && dt != TT_I64) return tt_lc_decline(c, "dtype");
  pool_params pp;
  bool inc;
  int64_t div;
  TT_TRY(read_avg(c, xr, 1, &pp, &inc, &div));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = avg_acc(dt);
  tt_val x = as4d(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc));
  tt_shape xs = tt_b_shape(b, x);
  int64_t win[4] = {1, 1, pp.k[0], pp.k[1]}, st[4] = {1, 1, pp.s[0], pp.s[1]};
  int64_t lo[4] = {0, 0, pp.p[0], pp.p[1]}, hi[4] = {0, 0, 0, 0};
  for (int i = 0; i < 2; i++) {
    int64_t need = (pp.out[i] - 1) * pp.s[i] + pp.k[i] - pp.in[i] - pp.p[i];
    hi[2 + i] = need > 0 ? need : 0;
  }
  tt_val sum = window_sum(b, x, win, st, lo, hi);
  int64_t od[4] = {xs.dims[0], xs.dims[1], pp.out[0], pp.out[1]}, z4[4] = {0, 0, 0, 0};
  sum = tt_b_slice(b, sum, z4, od, NULL);
  tt_val r = tt_b_binary(b, "divide", sum, avg_divisor(b, &pp, inc, div, acc, od));
  tt_lc_output(c, tt_b_convert(b, back_to(b, r, xr, pp.out[0], pp.out[1]), dt));
  return NULL;
}

/* avg_pool2d_backward(grad_output, self, kernel_size, stride, padding,
 * ceil_mode, count_include_pad, divisor_override): every input position
 * collects grad/divisor of the windows covering it, computed as a window sum
 * over the stride-dilated gradient. */
static tt_error *lower_avg_pool2d_backward(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *gr = tt_lc_ref(c, 0), *xr = tt_lc_ref(c, 1);
  tt_dtype dt = xr->dtype;
  if (!linalg_is_float(dt) || gr->dtype != dt) return tt_lc_decline(c, "dtype");
  pool_params pp;
  bool inc;
  int64_t div;
  TT_TRY(read_avg(c, xr, 2, &pp, &inc, &div));
  if (gr->ndim != xr->ndim) return tt_lc_decline(c, "shapes");
  for (int i = 0; i < xr->ndim; i++) {
    int64_t want = i < xr->ndim - 2 ? xr->sizes[i] : pp.out[i - (xr->ndim - 2)];
    if (gr->sizes[i] != want) return tt_lc_decline(c, "shapes");
  }
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = linalg_acc_dtype(dt);
  tt_val g = as4d(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc));
  tt_shape gs = tt_b_shape(b, g);
  g = tt_b_binary(b, "divide", g, avg_divisor(b, &pp, inc, div, acc, gs.dims));
  /* full[j] = sum over (o, t) with o*s + t == j, j in [0, (O-1)*s + k) */
  int64_t lo[4] = {0, 0, pp.k[0] - 1, pp.k[1] - 1}, in[4] = {0, 0, pp.s[0] - 1, pp.s[1] - 1};
  g = tt_b_pad(b, g, tt_b_constant(b, acc, 0), lo, lo, in);
  int64_t win[4] = {1, 1, pp.k[0], pp.k[1]}, one[4] = {1, 1, 1, 1}, z[4] = {0, 0, 0, 0};
  tt_val full = window_sum(b, g, win, one, z, z);
  /* grad_input[h] = full[h + pad] */
  tt_shape fs = tt_b_shape(b, full);
  int64_t plo[4] = {0, 0, -pp.p[0], -pp.p[1]}, phi[4] = {0, 0, 0, 0};
  for (int i = 0; i < 2; i++) phi[2 + i] = pp.in[i] + pp.p[i] - fs.dims[2 + i];
  full = tt_b_pad(b, full, tt_b_constant(b, acc, 0), plo, phi, z);
  tt_lc_output(c, tt_b_convert(b, back_to(b, full, xr, pp.in[0], pp.in[1]), dt));
  return NULL;
}

/* ====================================================== 3-d average pooling */

typedef struct {
  int64_t k[3], s[3], p[3], in[3], out[3];
  bool ceil, include_pad;
  int64_t divisor;
} pool3_params;

/* avg_pool3d(_backward) arguments from `first` (kernel_size): kernel, stride,
 * padding, ceil_mode, count_include_pad, divisor_override. */
static tt_error *read_avg3(tt_lower_ctx *c, const tt_tensor_ref *x, int first, pool3_params *pp) {
  if (x->ndim != 4 && x->ndim != 5) return tt_lc_decline(c, "input rank");
  for (int i = 0; i < x->ndim; i++)
    if (x->sizes[i] == 0) return tt_lc_decline(c, "empty input");
  int64_t v[TT_MAX_DIMS];
  int n = tt_lc_int_list(c, first, v, TT_MAX_DIMS);
  if (n != 1 && n != 3) return tt_lc_decline(c, "kernel_size");
  for (int i = 0; i < 3; i++) pp->k[i] = v[n == 1 ? 0 : i];
  n = tt_lc_int_list(c, first + 1, v, TT_MAX_DIMS);
  if (n > 0 && n != 1 && n != 3) return tt_lc_decline(c, "stride");
  for (int i = 0; i < 3; i++) pp->s[i] = n <= 0 ? pp->k[i] : v[n == 1 ? 0 : i];
  n = tt_lc_int_list(c, first + 2, v, TT_MAX_DIMS);
  if (n != 1 && n != 3) return tt_lc_decline(c, "padding");
  for (int i = 0; i < 3; i++) pp->p[i] = v[n == 1 ? 0 : i];
  pp->ceil = tt_lc_bool(c, first + 3, false);
  pp->include_pad = tt_lc_bool(c, first + 4, true);
  pp->divisor = tt_lc_is_none(c, first + 5) ? 0 : tt_lc_int(c, first + 5, 0);
  if (!tt_lc_is_none(c, first + 5) && pp->divisor == 0)
    return tt_lc_fail(c, TT_ERR_RUNTIME, "divisor must be not zero");
  for (int i = 0; i < 3; i++) {
    if (pp->k[i] <= 0 || pp->s[i] <= 0 || pp->p[i] < 0 || pp->p[i] > pp->k[i] / 2)
      return tt_lc_decline(c, "invalid pooling parameters");
    pp->in[i] = x->sizes[x->ndim - 3 + i];
    pp->out[i] = pool_out(pp->in[i], pp->k[i], pp->p[i], pp->s[i], 1, pp->ceil);
    if (pp->out[i] <= 0 || pp->out[i] > 4096) return tt_lc_decline(c, "output size");
  }
  return NULL;
}

/* x as [N, C, D, H, W] (4-d inputs get a leading 1). */
static tt_val as5d(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  if (s.ndim == 5) return x;
  int64_t d[5] = {1, s.dims[0], s.dims[1], s.dims[2], s.dims[3]};
  return tt_b_reshape(b, x, 5, d);
}

/* Divisor tensor [N, C, OD, OH, OW] (separable per-dim factors). */
static tt_val avg3_divisor(tt_builder *b, const pool3_params *pp, tt_dtype dt, const int64_t *od) {
  tt_shape s = tt_shape_make(dt, 5, od);
  if (pp->divisor) return tt_b_full(b, s, (double)pp->divisor);
  tt_val r = TT_INVALID;
  double f[4096];
  for (int i = 0; i < 3; i++) {
    for (int64_t o = 0; o < pp->out[i]; o++) {
      int64_t st = o * pp->s[i] - pp->p[i], e = st + pp->k[i];
      if (e > pp->in[i] + pp->p[i]) e = pp->in[i] + pp->p[i];
      int64_t full = e - st;
      if (st < 0) st = 0;
      if (e > pp->in[i]) e = pp->in[i];
      f[o] = (double)(pp->include_pad ? full : e - st);
    }
    tt_val v = linalg_bcast_dim(b, const_vec(b, dt, f, pp->out[i]), 5, od, 2 + i);
    r = r == TT_INVALID ? v : tt_b_binary(b, "multiply", r, v);
  }
  return r;
}

static tt_val back_to_in(tt_builder *b, tt_val x, const tt_tensor_ref *like, const int64_t *sp) {
  if (like->ndim == 5) return x;
  int64_t d[4] = {like->sizes[0], sp[0], sp[1], sp[2]};
  return tt_b_reshape(b, x, 4, d);
}

/* avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
 * divisor_override) */
static tt_error *lower_avg_pool3d(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  tt_dtype dt = xr->dtype;
  if (dt != TT_F32 && dt != TT_F64 && dt != TT_I64)
    return tt_lc_decline(c, "dtype"); /* CPU: float, double, long */
  pool3_params pp;
  TT_TRY(read_avg3(c, xr, 1, &pp));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = avg_acc(dt);
  tt_val x = as5d(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc));
  tt_shape xs = tt_b_shape(b, x);
  int64_t win[5] = {1, 1}, st[5] = {1, 1}, lo[5] = {0, 0}, hi[5] = {0, 0};
  for (int i = 0; i < 3; i++) {
    win[2 + i] = pp.k[i];
    st[2 + i] = pp.s[i];
    lo[2 + i] = pp.p[i];
    int64_t need = (pp.out[i] - 1) * pp.s[i] + pp.k[i] - pp.in[i] - pp.p[i];
    hi[2 + i] = need > 0 ? need : 0;
  }
  tt_val sum = window_sum(b, x, win, st, lo, hi);
  int64_t od[5] = {xs.dims[0], xs.dims[1], pp.out[0], pp.out[1], pp.out[2]}, z5[5] = {0};
  sum = tt_b_slice(b, sum, z5, od, NULL);
  tt_val r = tt_b_binary(b, "divide", sum, avg3_divisor(b, &pp, acc, od));
  tt_lc_output(c, tt_b_convert(b, back_to_in(b, r, xr, pp.out), dt));
  return NULL;
}

/* avg_pool3d_backward(grad_output, self, kernel_size, stride, padding,
 * ceil_mode, count_include_pad, divisor_override) */
static tt_error *lower_avg_pool3d_backward(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *gr = tt_lc_ref(c, 0), *xr = tt_lc_ref(c, 1);
  tt_dtype dt = xr->dtype;
  if ((dt != TT_F32 && dt != TT_F64) || gr->dtype != dt) return tt_lc_decline(c, "dtype");
  pool3_params pp;
  TT_TRY(read_avg3(c, xr, 2, &pp));
  if (gr->ndim != xr->ndim) return tt_lc_decline(c, "shapes");
  for (int i = 0; i < xr->ndim; i++) {
    int64_t want = i < xr->ndim - 3 ? xr->sizes[i] : pp.out[i - (xr->ndim - 3)];
    if (gr->sizes[i] != want) return tt_lc_decline(c, "shapes");
  }
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = linalg_acc_dtype(dt);
  tt_val g = as5d(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc));
  tt_shape gs = tt_b_shape(b, g);
  g = tt_b_binary(b, "divide", g, avg3_divisor(b, &pp, acc, gs.dims));
  int64_t lo[5] = {0}, in[5] = {0}, win[5] = {1, 1}, one[5] = {1, 1, 1, 1, 1}, z[5] = {0};
  for (int i = 0; i < 3; i++) {
    lo[2 + i] = pp.k[i] - 1;
    in[2 + i] = pp.s[i] - 1;
    win[2 + i] = pp.k[i];
  }
  g = tt_b_pad(b, g, tt_b_constant(b, acc, 0), lo, lo, in);
  tt_val full = window_sum(b, g, win, one, z, z);
  tt_shape fs = tt_b_shape(b, full);
  int64_t plo[5] = {0}, phi[5] = {0};
  for (int i = 0; i < 3; i++) {
    plo[2 + i] = -pp.p[i];
    phi[2 + i] = pp.in[i] + pp.p[i] - fs.dims[2 + i];
  }
  full = tt_b_pad(b, full, tt_b_constant(b, acc, 0), plo, phi, z);
  tt_lc_output(c, tt_b_convert(b, back_to_in(b, full, xr, pp.in), dt));
  return NULL;
}

/* ====================================================== 3-d max pooling */

typedef struct {
  int64_t k[3], s[3], p[3], d[3], in[3], out[3];
} mpool3_params;

/* kernel_size, stride, padding, dilation, ceil_mode from arg `first`. */
static tt_error *read_max3(tt_lower_ctx *c, const tt_tensor_ref *x, int first, mpool3_params *pp) {
  if (x->ndim != 4 && x->ndim != 5) return tt_lc_decline(c, "input rank");
  for (int i = 0; i < x->ndim; i++)
    if (x->sizes[i] == 0) return tt_lc_decline(c, "empty input");
  int64_t v[TT_MAX_DIMS];
  int64_t *dst[4] = {pp->k, pp->s, pp->p, pp->d};
  for (int a = 0; a < 4; a++) {
    int n = tt_lc_int_list(c, first + a, v, TT_MAX_DIMS);
    if (a == 1 && n <= 0) {
      for (int i = 0; i < 3; i++) pp->s[i] = pp->k[i];
      continue;
    }
    if (n != 1 && n != 3) return tt_lc_decline(c, "pooling parameter %d", a);
    for (int i = 0; i < 3; i++) dst[a][i] = v[n == 1 ? 0 : i];
  }
  bool ceil = tt_lc_bool(c, first + 4, false);
  int64_t taps = 1;
  for (int i = 0; i < 3; i++) {
    if (pp->k[i] <= 0 || pp->s[i] <= 0 || pp->d[i] <= 0 || pp->p[i] < 0 || pp->p[i] > pp->k[i] / 2)
      return tt_lc_decline(c, "invalid pooling parameters");
    pp->in[i] = x->sizes[x->ndim - 3 + i];
    pp->out[i] = pool_out(pp->in[i], pp->k[i], pp->p[i], pp->s[i], pp->d[i], ceil);
    if (pp->out[i] <= 0) return tt_lc_decline(c, "output size too small");
    taps *= pp->k[i];
  }
  if (taps > 343) return tt_lc_decline(c, "kernel too large");
  return NULL;
}

/* max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode) */
static tt_error *lower_max_pool3d(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  tt_dtype dt = xr->dtype;
  if (dt == TT_BOOL || !linalg_matmul_dtype_ok(dt)) return tt_lc_decline(c, "dtype");
  mpool3_params pp;
  TT_TRY(read_max3(c, xr, 1, &pp));
  tt_builder *b = tt_lc_builder(c);
  tt_val x = as5d(b, tt_lc_tensor(c, 0));
  tt_shape xs = tt_b_shape(b, x);
  int64_t lo[5] = {0}, hi[5] = {0}, z[5] = {0};
  for (int i = 0; i < 3; i++) {
    lo[2 + i] = pp.p[i];
    int64_t need = (pp.out[i] - 1) * pp.s[i] + (pp.k[i] - 1) * pp.d[i] + 1 - pp.in[i] - pp.p[i];
    hi[2 + i] = need > 0 ? need : 0;
  }
  tt_val lowest = dt == TT_I64 ? tt_b_constant_int(b, dt, INT64_MIN)
                               : tt_b_constant(b, dt, tt_dtype_lowest(dt));
  tt_val xp = tt_b_pad(b, x, lowest, lo, hi, z);
  int64_t od[5] = {xs.dims[0], xs.dims[1], pp.out[0], pp.out[1], pp.out[2]};
  tt_shape is = tt_shape_make(TT_I64, 5, od);
  tt_val best = TT_INVALID, idx = TT_INVALID, have = TT_INVALID;
  tt_val io[3];
  for (int i = 0; i < 3; i++) io[i] = tt_b_iota(b, is, 2 + i);
  int64_t t[3];
  for (t[0] = 0; t[0] < pp.k[0]; t[0]++)
    for (t[1] = 0; t[1] < pp.k[1]; t[1]++)
      for (t[2] = 0; t[2] < pp.k[2]; t[2]++) {
        int64_t st[5] = {0}, li[5] = {od[0], od[1]}, sd[5] = {1, 1};
        tt_val flat = TT_INVALID, valid = TT_INVALID;
        for (int i = 0; i < 3; i++) {
          st[2 + i] = t[i] * pp.d[i];
          li[2 + i] = st[2 + i] + (pp.out[i] - 1) * pp.s[i] + 1;
          sd[2 + i] = pp.s[i];
          tt_val pos = tt_b_binary(b, "add", tt_b_binary(b, "multiply", io[i], tt_b_full(b, is, (double)pp.s[i])),
                                   tt_b_full(b, is, (double)(t[i] * pp.d[i] - pp.p[i])));
          flat = flat == TT_INVALID ? pos
                                    : tt_b_binary(b, "add", tt_b_binary(b, "multiply", flat,
                                                                        tt_b_full(b, is, (double)pp.in[i])),
                                                  pos);
          bool ok = t[i] * pp.d[i] - pp.p[i] >= 0 &&
                    (pp.out[i] - 1) * pp.s[i] + t[i] * pp.d[i] - pp.p[i] < pp.in[i];
          if (!ok) {
            tt_val vi = tt_b_binary(b, "and", tt_b_compare(b, "GE", pos, tt_b_full(b, is, 0)),
                                    tt_b_compare(b, "LT", pos, tt_b_full(b, is, (double)pp.in[i])));
            valid = valid == TT_INVALID ? vi : tt_b_binary(b, "and", valid, vi);
          }
        }
        tt_val v = tt_b_slice(b, xp, st, li, sd);
        tt_shape bs = tt_shape_make(TT_BOOL, 5, od);
        if (best == TT_INVALID) {
          /* CPU starts from the first in-bounds position of each window */
          best = v;
          idx = flat;
          have = valid == TT_INVALID ? tt_b_full(b, bs, 1) : valid;
          continue;
        }
        tt_val upd = tt_b_binary(b, "or", tt_b_compare(b, "GT", v, best), tt_b_compare(b, "NE", v, v));
        upd = tt_b_binary(b, "or", upd, tt_b_unary(b, "not", have));
        if (valid != TT_INVALID) {
          upd = tt_b_binary(b, "and", upd, valid);
          have = tt_b_binary(b, "or", have, valid);
        } else {
          have = tt_b_full(b, bs, 1);
        }
        best = tt_b_select(b, upd, v, best);
        idx = tt_b_select(b, upd, flat, idx);
      }
  tt_lc_output(c, back_to_in(b, best, xr, pp.out));
  tt_lc_output(c, back_to_in(b, idx, xr, pp.out));
  return NULL;
}

/* max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride,
 * padding, dilation, ceil_mode, indices) */
static tt_error *lower_max_pool3d_backward(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1) || !linalg_is_tensor(c, 7))
    return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *gr = tt_lc_ref(c, 0), *xr = tt_lc_ref(c, 1), *ir = tt_lc_ref(c, 7);
  tt_dtype dt = xr->dtype;
  if (!linalg_is_float(dt) || gr->dtype != dt || ir->dtype != TT_I64) return tt_lc_decline(c, "dtype");
  mpool3_params pp;
  TT_TRY(read_max3(c, xr, 2, &pp));
  if (gr->ndim != xr->ndim || ir->ndim != xr->ndim) return tt_lc_decline(c, "shapes");
  for (int i = 0; i < xr->ndim; i++) {
    int64_t want = i < xr->ndim - 3 ? xr->sizes[i] : pp.out[i - (xr->ndim - 3)];
    if (gr->sizes[i] != want || ir->sizes[i] != want) return tt_lc_decline(c, "shapes");
  }
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = linalg_acc_dtype(dt);
  tt_val g = as5d(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc));
  tt_val ix = as5d(b, tt_lc_tensor(c, 7));
  tt_shape gs = tt_b_shape(b, g);
  tt_val r = scatter_to_planes(b, g, ix, gs, 3, pp.in, acc);
  tt_lc_output(c, tt_b_convert(b, back_to_in(b, r, xr, pp.in), dt));
  return NULL;
}

/* max_unpool2d(self, indices, output_size) and max_unpool3d(self, indices,
 * output_size, stride, padding): zeros of [N, C, *output_size] with each
 * self value written at its per-plane flat index. Indices from max pooling
 * repeat only with the same value, so the write order does not matter.
 * CPU raises on an index outside its plane; such values are dropped here. */
static tt_error *max_unpool(tt_lower_ctx *c, int nsp) {
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0), *ir = tt_lc_ref(c, 1);
  if (!linalg_is_float(xr->dtype) || ir->dtype != TT_I64) return tt_lc_decline(c, "dtype");
  int64_t os[3];
  if (tt_lc_int_list(c, 2, os, 3) != nsp) return tt_lc_decline(c, "output_size");
  if (xr->ndim != nsp + 1 && xr->ndim != nsp + 2) return tt_lc_decline(c, "rank");
  if (ir->ndim != xr->ndim) return tt_lc_decline(c, "indices shape");
  int64_t numel = 1;
  for (int i = 0; i < xr->ndim; i++) {
    if (ir->sizes[i] != xr->sizes[i]) return tt_lc_decline(c, "indices shape");
    numel *= xr->sizes[i];
  }
  for (int i = 0; i < nsp; i++)
    if (os[i] <= 0) return tt_lc_decline(c, "output_size");
  if (numel == 0) return tt_lc_decline(c, "empty input");
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_lc_tensor(c, 0), ix = tt_lc_tensor(c, 1);
  int64_t d[TT_MAX_DIMS];
  int lead = xr->ndim - nsp; /* 1 (unbatched) or 2 */
  d[0] = lead == 1 ? 1 : xr->sizes[0];
  for (int i = lead == 1 ? 0 : 1; i < xr->ndim; i++) d[i + (lead == 1)] = xr->sizes[i];
  x = tt_b_reshape(b, x, nsp + 2, d);
  ix = tt_b_reshape(b, ix, nsp + 2, d);
  tt_val r = scatter_to_planes_op(b, x, ix, tt_b_shape(b, x), nsp, os, xr->dtype, NULL);
  int64_t od[TT_MAX_DIMS];
  for (int i = 0; i < lead; i++) od[i] = xr->sizes[i];
  for (int i = 0; i < nsp; i++) od[lead + i] = os[i];
  tt_lc_output(c, tt_b_reshape(b, r, xr->ndim, od));
  return NULL;
}
static tt_error *lower_max_unpool2d(tt_lower_ctx *c) { return max_unpool(c, 2); }
static tt_error *lower_max_unpool3d(tt_lower_ctx *c) { return max_unpool(c, 3); }

TT_LOWERINGS(pool) = {
    {lower_max_unpool2d, {"max_unpool2d", "max_unpool2d.out"}},
    {lower_max_unpool3d, {"max_unpool3d", "max_unpool3d.out"}},
    {lower_max_pool2d, {"max_pool2d_with_indices", "max_pool2d_with_indices.out"}},
    {lower_max_pool2d_backward,
     {"max_pool2d_with_indices_backward", "max_pool2d_with_indices_backward.grad_input"}},
    {lower_avg_pool2d, {"avg_pool2d", "avg_pool2d.out"}},
    {lower_avg_pool2d_backward, {"avg_pool2d_backward", "avg_pool2d_backward.grad_input"}},
    {lower_avg_pool3d, {"avg_pool3d", "avg_pool3d.out"}},
    {lower_avg_pool3d_backward, {"avg_pool3d_backward", "avg_pool3d_backward.grad_input"}},
    {lower_max_pool3d, {"max_pool3d_with_indices", "max_pool3d_with_indices.out"}},
    {lower_max_pool3d_backward,
     {"max_pool3d_with_indices_backward", "max_pool3d_with_indices_backward.grad_input"}},
    {NULL, {NULL}},
};
