/* Lowerings of the pool family (see lowering.h): max pooling with indices
 * and average pooling, forward and backward, written once over the number
 * of spatial dims (2-d and 3-d registered), and max unpooling. Shared
 * helpers are in linalg_common.c. (Adaptive pooling lives in nn_pool.c.) */
#include "ops/linalg_common.h"
#include "ops/nn_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================== small helpers */

/* Static 1-D constant of small integer values (counts). */
static tt_val const_vec(tt_builder *b, tt_dtype dt, const double *v, int64_t n) {
  if (tt_dtype_is_floating(dt)) return nn_const_vec_dt(b, dt, v, NULL, n);
  int64_t *iv = malloc(sizeof *iv * (size_t)(n ? n : 1));
  if (!iv) return tt_b_fail(b, TT_ERR_OUT_OF_MEMORY, "out of host memory");
  for (int64_t i = 0; i < n; i++) iv[i] = (int64_t)v[i];
  tt_val r = nn_const_vec_dt(b, dt, NULL, iv, n);
  free(iv);
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
  tt_b_emit(b, TT_OP_REDUCE_WINDOW, ins, 2, attrs, region, &out, 1, &r);
  return r;
}

/* ====================================================== pooling
 *
 * One implementation for any number of spatial dims nsp (2 or 3 today):
 * inputs are [N, C, *in] or unbatched [C, *in]; the work is done on the
 * batched form and the result reshaped back. */

typedef struct {
  int nsp; /* spatial dims */
  int64_t k[3], s[3], p[3], d[3];
  int64_t in[3], out[3];
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

/* Reads kernel_size, stride, padding, dilation (max pooling only) and
 * ceil_mode from argument `first` on, for an input of nsp + 1 or nsp + 2
 * dims; each list holds one value or nsp; an empty stride is the kernel.
 * Declines anything PyTorch would reject. */
static tt_error *read_pool(tt_lower_ctx *c, const tt_tensor_ref *x, int nsp, int first,
                           bool dilation, pool_params *pp) {
  if (x->ndim != nsp + 1 && x->ndim != nsp + 2) return tt_lc_decline(c, "input rank");
  for (int i = 0; i < x->ndim; i++)
    if (x->sizes[i] == 0) return tt_lc_decline(c, "empty input");
  pp->nsp = nsp;
  int64_t v[TT_MAX_DIMS];
  int64_t *dst[4] = {pp->k, pp->s, pp->p, pp->d};
  for (int a = 0; a < 4; a++) {
    if (a == 3 && !dilation) {
      for (int i = 0; i < nsp; i++) pp->d[i] = 1;
      continue;
    }
    int n = tt_lc_int_list(c, first + a, v, TT_MAX_DIMS);
    if (a == 1 && n <= 0) {
      for (int i = 0; i < nsp; i++) pp->s[i] = pp->k[i];
      continue;
    }
    if (n != 1 && n != nsp) return tt_lc_decline(c, "pooling parameter %d", a);
    for (int i = 0; i < nsp; i++) dst[a][i] = v[n == 1 ? 0 : i];
  }
  pp->ceil = tt_lc_bool(c, first + (dilation ? 4 : 3), false);
  for (int i = 0; i < nsp; i++) {
    if (pp->k[i] <= 0 || pp->s[i] <= 0 || pp->d[i] <= 0 || pp->p[i] < 0)
      return tt_lc_decline(c, "invalid pooling parameters");
    /* 2-d max pooling bounds the padding by half the dilated kernel */
    int64_t half = nsp == 2 && dilation ? ((pp->k[i] - 1) * pp->d[i] + 1) / 2 : pp->k[i] / 2;
    if (pp->p[i] > half) return tt_lc_decline(c, "pad larger than half the kernel");
    pp->in[i] = x->sizes[x->ndim - nsp + i];
    pp->out[i] = pool_out(pp->in[i], pp->k[i], pp->p[i], pp->s[i], pp->d[i], pp->ceil);
    if (pp->out[i] <= 0) return tt_lc_decline(c, "output size too small");
  }
  int64_t taps = 1;
  for (int i = 0; i < nsp; i++) taps *= pp->k[i];
  if (dilation && nsp == 3 && taps > 343) return tt_lc_decline(c, "kernel too large"); /* 3-d max */
  return NULL;
}

/* x as [N, C, *spatial] (unbatched inputs get a leading 1). */
static tt_val batched(tt_builder *b, tt_val x, int nsp) {
  tt_shape s = tt_b_shape(b, x);
  if (s.ndim == nsp + 2) return x;
  int64_t d[TT_MAX_DIMS] = {1};
  for (int i = 0; i < s.ndim; i++) d[1 + i] = s.dims[i];
  return tt_b_reshape(b, x, s.ndim + 1, d);
}

/* x [N, C, *sp] back to the rank of `like` (dropping the leading 1). */
static tt_val unbatched(tt_builder *b, tt_val x, const tt_tensor_ref *like, const int64_t *sp,
                        int nsp) {
  if (like->ndim == nsp + 2) return x;
  int64_t d[TT_MAX_DIMS] = {like->sizes[0]};
  for (int i = 0; i < nsp; i++) d[1 + i] = sp[i];
  return tt_b_reshape(b, x, nsp + 1, d);
}

/* Checks that grad (and indices, if given) are [lead..., *out] like x. */
static bool grad_shape_ok(const tt_tensor_ref *g, const tt_tensor_ref *ix, const tt_tensor_ref *x,
                          const pool_params *pp) {
  if (g->ndim != x->ndim || (ix && ix->ndim != x->ndim)) return false;
  int lead = x->ndim - pp->nsp;
  for (int i = 0; i < x->ndim; i++) {
    int64_t want = i < lead ? x->sizes[i] : pp->out[i - lead];
    if (g->sizes[i] != want || (ix && ix->sizes[i] != want)) return false;
  }
  return true;
}

/* max_pool{2,3}d_with_indices(self, kernel_size, stride, padding, dilation,
 * ceil_mode) -> (out, indices): every tap t of the kernel slices the padded
 * input; a tap replaces the running maximum when greater (or NaN) and in
 * bounds, or when none in bounds was seen yet (CPU starts from the first
 * in-bounds position of each window). Indices are flat over the spatial
 * dims of one plane. */
static tt_error *max_pool(tt_lower_ctx *c, int nsp) {
  if (!linalg_is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  tt_dtype dt = xr->dtype;
  if (dt == TT_BOOL || !linalg_matmul_dtype_ok(dt)) return tt_lc_decline(c, "dtype");
  pool_params pp;
  TT_TRY(read_pool(c, xr, nsp, 1, true, &pp));
  int64_t taps = 1;
  for (int i = 0; i < nsp; i++) taps *= pp.k[i];
  tt_builder *b = tt_lc_builder(c);
  tt_val x = batched(b, tt_lc_tensor(c, 0), nsp);
  tt_shape xs = tt_b_shape(b, x);
  int nd = nsp + 2;
  int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0}, z[TT_MAX_DIMS] = {0};
  int64_t od[TT_MAX_DIMS] = {xs.dims[0], xs.dims[1]};
  for (int i = 0; i < nsp; i++) {
    lo[2 + i] = pp.p[i];
    int64_t need = (pp.out[i] - 1) * pp.s[i] + (pp.k[i] - 1) * pp.d[i] + 1 - pp.in[i] - pp.p[i];
    hi[2 + i] = need > 0 ? need : 0;
    od[2 + i] = pp.out[i];
  }
  tt_val lowest = dt == TT_I64 ? tt_b_constant_int(b, dt, INT64_MIN)
                               : tt_b_constant(b, dt, tt_dtype_lowest(dt));
  tt_val xp = tt_b_pad(b, x, lowest, lo, hi, z);
  tt_shape is = tt_shape_make(TT_I64, nd, od), bs = tt_shape_make(TT_BOOL, nd, od);
  tt_val io[3];
  for (int i = 0; i < nsp; i++) io[i] = tt_b_iota(b, is, 2 + i);
  tt_val best = TT_INVALID, idx = TT_INVALID, have = TT_INVALID;
  int64_t t[3] = {0, 0, 0};
  for (int64_t tap = 0; tap < taps; tap++) {
    int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS] = {od[0], od[1]}, sd[TT_MAX_DIMS] = {1, 1};
    tt_val flat = TT_INVALID, valid = TT_INVALID;
    for (int i = 0; i < nsp; i++) {
      int64_t off = t[i] * pp.d[i] - pp.p[i];
      st[2 + i] = t[i] * pp.d[i];
      li[2 + i] = st[2 + i] + (pp.out[i] - 1) * pp.s[i] + 1;
      sd[2 + i] = pp.s[i];
      /* input position of this tap along dim i */
      tt_val pos = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, io[i], tt_b_full(b, is, (double)pp.s[i])),
                               tt_b_full(b, is, (double)off));
      flat = flat == TT_INVALID ? pos
                                : tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, flat, tt_b_full(b, is, (double)pp.in[i])),
                                              pos);
      if (off < 0 || (pp.out[i] - 1) * pp.s[i] + off >= pp.in[i]) { /* may leave the input */
        tt_val vi = tt_b_bin(b, TT_OP_AND, tt_b_compare(b, "GE", pos, tt_b_full(b, is, 0)),
                                tt_b_compare(b, "LT", pos, tt_b_full(b, is, (double)pp.in[i])));
        valid = valid == TT_INVALID ? vi : tt_b_bin(b, TT_OP_AND, valid, vi);
      }
    }
    tt_val v = tt_b_slice(b, xp, st, li, sd);
    if (best == TT_INVALID) {
      best = v;
      idx = flat;
      have = valid == TT_INVALID ? tt_b_full(b, bs, 1) : valid;
    } else {
      tt_val upd = tt_b_compare(b, "GT", v, best);
      if (tt_dtype_is_floating(dt)) upd = tt_b_bin(b, TT_OP_OR, upd, tt_b_compare(b, "NE", v, v));
      upd = tt_b_bin(b, TT_OP_OR, upd, tt_b_un(b, TT_OP_NOT, have));
      if (valid != TT_INVALID) {
        upd = tt_b_bin(b, TT_OP_AND, upd, valid);
        have = tt_b_bin(b, TT_OP_OR, have, valid);
      } else {
        have = tt_b_full(b, bs, 1);
      }
      best = tt_b_select(b, upd, v, best);
      idx = tt_b_select(b, upd, flat, idx);
    }
    for (int i = nsp - 1; i >= 0 && ++t[i] == pp.k[i]; i--) t[i] = 0; /* next tap, row-major */
  }
  tt_lc_output(c, unbatched(b, best, xr, pp.out, nsp));
  tt_lc_output(c, unbatched(b, idx, xr, pp.out, nsp));
  return NULL;
}

/* max_pool{2,3}d_with_indices_backward(grad_output, self, kernel_size,
 * stride, padding, dilation, ceil_mode, indices): scatter-add of the
 * gradients to the recorded per-plane flat positions. */
static tt_error *max_pool_backward(tt_lower_ctx *c, int nsp) {
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1) || !linalg_is_tensor(c, 7))
    return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *gr = tt_lc_ref(c, 0), *xr = tt_lc_ref(c, 1), *ir = tt_lc_ref(c, 7);
  tt_dtype dt = xr->dtype;
  if (!tt_dtype_is_floating(dt) || gr->dtype != dt || ir->dtype != TT_I64) return tt_lc_decline(c, "dtype");
  pool_params pp;
  TT_TRY(read_pool(c, xr, nsp, 2, true, &pp));
  if (!grad_shape_ok(gr, ir, xr, &pp)) return tt_lc_decline(c, "shapes");
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = tt_opmath(dt);
  tt_val g = batched(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), nsp);
  tt_val ix = batched(b, tt_lc_tensor(c, 7), nsp);
  tt_val r = tt_scatter_planes(b, g, ix, nsp, pp.in, acc, "add");
  tt_lc_output(c, tt_b_convert(b, unbatched(b, r, xr, pp.in, nsp), dt));
  return NULL;
}

/* Divisor tensor [N, C, *out] of average pooling, in dt: divisor_override,
 * or the product of per-dim window sizes (with or without the padding). */
static tt_val avg_divisor(tt_builder *b, const pool_params *pp, bool include_pad, int64_t divisor,
                          tt_dtype dt, const int64_t *od) {
  int nd = pp->nsp + 2;
  if (divisor) return tt_b_full(b, tt_shape_make(dt, nd, od), (double)divisor);
  tt_val r = TT_INVALID;
  double f[4096];
  for (int i = 0; i < pp->nsp; i++) {
    for (int64_t o = 0; o < pp->out[i]; o++) {
      int64_t st = o * pp->s[i] - pp->p[i], e = st + pp->k[i];
      if (e > pp->in[i] + pp->p[i]) e = pp->in[i] + pp->p[i];
      int64_t full = e - st;
      if (st < 0) st = 0;
      if (e > pp->in[i]) e = pp->in[i];
      f[o] = (double)(include_pad ? full : e - st);
    }
    tt_val v = tt_along(b, const_vec(b, dt, f, pp->out[i]), nd, od, 2 + i);
    r = r == TT_INVALID ? v : tt_b_bin(b, TT_OP_MULTIPLY, r, v);
  }
  return r;
}

/* avg_pool{2,3}d(_backward) arguments from `first` (kernel_size): kernel,
 * stride, padding, ceil_mode, count_include_pad, divisor_override. */
static tt_error *read_avg(tt_lower_ctx *c, const tt_tensor_ref *xr, int nsp, int first,
                          pool_params *pp, bool *include_pad, int64_t *divisor) {
  TT_TRY(read_pool(c, xr, nsp, first, false, pp));
  *include_pad = tt_lc_bool(c, first + 4, true);
  *divisor = tt_lc_is_none(c, first + 5) ? 0 : tt_lc_int(c, first + 5, 0);
  if (!tt_lc_is_none(c, first + 5) && *divisor == 0)
    return tt_lc_fail(c, TT_ERR_RUNTIME, "divisor must be not zero");
  for (int i = 0; i < nsp; i++)
    if (pp->out[i] > 4096) return tt_lc_decline(c, "output too large");
  return NULL;
}

static tt_dtype avg_acc(tt_dtype dt) { return dt == TT_I64 ? TT_I64 : tt_opmath(dt); }

/* The float dtypes average pooling takes: CPU's avg_pool3d has float and
 * double only, avg_pool2d the half types too. */
static bool avg_float_ok(tt_dtype dt, int nsp) {
  return nsp == 3 ? dt == TT_F32 || dt == TT_F64 : tt_dtype_is_floating(dt);
}

/* avg_pool{2,3}d(self, kernel_size, stride, padding, ceil_mode,
 * count_include_pad, divisor_override): a window sum divided by the
 * window sizes. */
static tt_error *avg_pool(tt_lower_ctx *c, int nsp) {
  if (!linalg_is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  tt_dtype dt = xr->dtype;
  if (!avg_float_ok(dt, nsp) && dt != TT_I64) return tt_lc_decline(c, "dtype");
  pool_params pp;
  bool inc;
  int64_t div;
  TT_TRY(read_avg(c, xr, nsp, 1, &pp, &inc, &div));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = avg_acc(dt);
  tt_val x = batched(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), nsp);
  tt_shape xs = tt_b_shape(b, x);
  int64_t win[TT_MAX_DIMS] = {1, 1}, st[TT_MAX_DIMS] = {1, 1}, lo[TT_MAX_DIMS] = {0},
          hi[TT_MAX_DIMS] = {0}, z[TT_MAX_DIMS] = {0};
  int64_t od[TT_MAX_DIMS] = {xs.dims[0], xs.dims[1]};
  for (int i = 0; i < nsp; i++) {
    win[2 + i] = pp.k[i];
    st[2 + i] = pp.s[i];
    lo[2 + i] = pp.p[i];
    int64_t need = (pp.out[i] - 1) * pp.s[i] + pp.k[i] - pp.in[i] - pp.p[i];
    hi[2 + i] = need > 0 ? need : 0;
    od[2 + i] = pp.out[i];
  }
  tt_val sum = tt_b_slice(b, window_sum(b, x, win, st, lo, hi), z, od, NULL);
  tt_val r = tt_b_bin(b, TT_OP_DIVIDE, sum, avg_divisor(b, &pp, inc, div, acc, od));
  tt_lc_output(c, tt_b_convert(b, unbatched(b, r, xr, pp.out, nsp), dt));
  return NULL;
}

/* avg_pool{2,3}d_backward(grad_output, self, kernel_size, stride, padding,
 * ceil_mode, count_include_pad, divisor_override): every input position
 * collects grad/divisor of the windows covering it, computed as a window
 * sum over the stride-dilated gradient. */
static tt_error *avg_pool_backward(tt_lower_ctx *c, int nsp) {
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *gr = tt_lc_ref(c, 0), *xr = tt_lc_ref(c, 1);
  tt_dtype dt = xr->dtype;
  if (!avg_float_ok(dt, nsp) || gr->dtype != dt) return tt_lc_decline(c, "dtype");
  pool_params pp;
  bool inc;
  int64_t div;
  TT_TRY(read_avg(c, xr, nsp, 2, &pp, &inc, &div));
  if (!grad_shape_ok(gr, NULL, xr, &pp)) return tt_lc_decline(c, "shapes");
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = tt_opmath(dt);
  tt_val g = batched(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc), nsp);
  tt_shape gs = tt_b_shape(b, g);
  g = tt_b_bin(b, TT_OP_DIVIDE, g, avg_divisor(b, &pp, inc, div, acc, gs.dims));
  /* full[j] = sum over (o, t) with o*s + t == j, j in [0, (O-1)*s + k) */
  int64_t lo[TT_MAX_DIMS] = {0}, in[TT_MAX_DIMS] = {0}, win[TT_MAX_DIMS] = {1, 1},
          one[TT_MAX_DIMS] = {1, 1, 1, 1, 1}, z[TT_MAX_DIMS] = {0};
  for (int i = 0; i < nsp; i++) {
    lo[2 + i] = pp.k[i] - 1;
    in[2 + i] = pp.s[i] - 1;
    win[2 + i] = pp.k[i];
  }
  g = tt_b_pad(b, g, tt_b_constant(b, acc, 0), lo, lo, in);
  tt_val full = window_sum(b, g, win, one, z, z);
  /* grad_input[j] = full[j + pad] */
  tt_shape fs = tt_b_shape(b, full);
  int64_t plo[TT_MAX_DIMS] = {0}, phi[TT_MAX_DIMS] = {0};
  for (int i = 0; i < nsp; i++) {
    plo[2 + i] = -pp.p[i];
    phi[2 + i] = pp.in[i] + pp.p[i] - fs.dims[2 + i];
  }
  full = tt_b_pad(b, full, tt_b_constant(b, acc, 0), plo, phi, z);
  tt_lc_output(c, tt_b_convert(b, unbatched(b, full, xr, pp.in, nsp), dt));
  return NULL;
}

static tt_error *lower_max_pool2d(tt_lower_ctx *c) { return max_pool(c, 2); }
static tt_error *lower_max_pool3d(tt_lower_ctx *c) { return max_pool(c, 3); }
static tt_error *lower_max_pool2d_backward(tt_lower_ctx *c) { return max_pool_backward(c, 2); }
static tt_error *lower_max_pool3d_backward(tt_lower_ctx *c) { return max_pool_backward(c, 3); }
static tt_error *lower_avg_pool2d(tt_lower_ctx *c) { return avg_pool(c, 2); }
static tt_error *lower_avg_pool3d(tt_lower_ctx *c) { return avg_pool(c, 3); }
static tt_error *lower_avg_pool2d_backward(tt_lower_ctx *c) { return avg_pool_backward(c, 2); }
static tt_error *lower_avg_pool3d_backward(tt_lower_ctx *c) { return avg_pool_backward(c, 3); }

/* max_unpool2d(self, indices, output_size) and max_unpool3d(self, indices,
 * output_size, stride, padding): zeros of [N, C, *output_size] with each
 * self value written at its per-plane flat index. Indices from max pooling
 * repeat only with the same value, so the write order does not matter.
 * CPU raises on an index outside its plane; such values are dropped here. */
static tt_error *max_unpool(tt_lower_ctx *c, int nsp) {
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0), *ir = tt_lc_ref(c, 1);
  if (!tt_dtype_is_floating(xr->dtype) || ir->dtype != TT_I64) return tt_lc_decline(c, "dtype");
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
  tt_val r = tt_scatter_planes(b, x, ix, nsp, os, xr->dtype, NULL);
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
