/* Lowerings of the nn_resample family (see lowering.h): reflection and
 * replication padding, upsampling (nearest, nearest-exact, linear, bicubic)
 * and pixel (un)shuffle, forward and backward. Split out of nn.c. */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common.h"
#include "ops/nn_common.h"

/* ------------------------------------------------------------ padding */

static tt_val reverse_dim(tt_builder *b, tt_val x, int d) {
  char attrs[64];
  snprintf(attrs, sizeof attrs, "dimensions = array<i64: %d>", d);
  return tt_b_emit1(b, TT_OP_REVERSE, &x, 1, attrs, tt_b_shape(b, x));
}

/* Zero padding of lo/hi elements along dim d. */
static tt_val zpad_dim(tt_builder *b, tt_val x, int d, int64_t lo, int64_t hi) {
  int nd = tt_b_ndim(b, x);
  int64_t l[TT_MAX_DIMS] = {0}, h[TT_MAX_DIMS] = {0}, in[TT_MAX_DIMS] = {0};
  l[d] = lo;
  h[d] = hi;
  (void)nd;
  return tt_b_pad(b, x, tt_scalar_like(b, x, 0), l, h, in);
}

/* x with dim d (of size 1) broadcast to n. */
static tt_val repeat_dim(tt_builder *b, tt_val x, int d, int64_t n) {
  tt_shape s = tt_b_shape(b, x);
  int64_t map[TT_MAX_DIMS];
  for (int i = 0; i < s.ndim; i++) map[i] = i;
  s.dims[d] = n;
  return tt_b_broadcast_in_dim(b, x, s.ndim, s.dims, map);
}

/* Padding with some negative amounts: every output position reads one
 * input position (static indices), so a gather per dim (backward: the
 * scatter-add transpose). */
static tt_error *pad_gather(tt_lower_ctx *c, int k, bool reflect, bool backward,
                            const int64_t *pad, const int64_t *odims) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, backward ? 1 : 0);
  int nd = x->ndim;
  if (backward) {
    const tt_tensor_ref *g = tt_lc_ref(c, 0);
    if (!g || !g->storage || g->dtype != x->dtype || !nn_shape_is(g, nd, odims))
      return tt_lc_decline(c, "grad_output shape/dtype");
  }
  int64_t maxo = 0;
  for (int i = 0; i < nd; i++) maxo = odims[i] > maxo ? odims[i] : maxo;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)maxo);
  if (!idx) return tt_lc_decline(c, "out of host memory");
  tt_dtype acc = backward ? tt_opmath(x->dtype) : x->dtype;
  tt_val v = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  for (int j = 0; j < k; j++) {
    int d = nd - 1 - j;
    int64_t l = pad[2 * j], n = x->sizes[d], on = odims[d];
    for (int64_t o = 0; o < on; o++) {
      int64_t i = o - l;
      if (reflect) {
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
      } else {
        i = i < 0 ? 0 : (i >= n ? n - 1 : i);
      }
      if (i < 0 || i >= n) {
        free(idx);
        return tt_lc_decline(c, "padding out of range");
      }
      idx[o] = i;
    }
    v = backward ? nn_put_add_dim(b, v, d, idx, on, n) : nn_take_dim(b, v, d, idx, on);
  }
  free(idx);
  tt_lc_output(c, tt_b_convert(b, v, x->dtype));
  return NULL;
}

/* reflection_padNd / replication_padNd(self, padding[2*k]) and their
 * backwards (grad_output, self, padding). padding lists the last dim first. */
static tt_error *pad_impl(tt_lower_ctx *c, int k, bool reflect, bool backward) {
  tt_builder *b = tt_lc_builder(c);
  int si = backward ? 1 : 0;
  const tt_tensor_ref *x = tt_lc_ref(c, si);
  if (!x || !x->storage) return tt_lc_decline(c, "not a device tensor");
  if (x->dtype == TT_BOOL)
    return tt_lc_decline(c, "dtype %s", tt_dtype_name(x->dtype));
  if (backward && !tt_dtype_is_floating(x->dtype)) return tt_lc_decline(c, "non-float backward");
  int64_t pad[6];
  int np = tt_lc_int_list(c, si + 1, pad, 6);
  if (np != 2 * k)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "padding size is expected to be %d, but got: %d",
                      2 * k, np);
  int nd = x->ndim;
  if (nd != k + 1 && nd != k + 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and "
                      "other non-zero dimensions for input, but got: %dD", k + 1, k + 2, nd);
  for (int i = 0; i < nd; i++)
    if (x->sizes[i] == 0) return tt_lc_decline(c, "empty input");
  int64_t odims[TT_MAX_DIMS];
  bool negative = false;
  for (int i = 0; i < nd; i++) odims[i] = x->sizes[i];
  for (int j = 0; j < k; j++) {
    int d = nd - 1 - j;
    int64_t l = pad[2 * j], r = pad[2 * j + 1], n = x->sizes[d];
    if (n + l + r <= 0) return tt_lc_decline(c, "empty output");
    if (l < 0 || r < 0) negative = true;
    if (reflect && (l >= n || r >= n))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "Argument #4: Padding size should be less than the corresponding input "
                        "dimension, but got: padding (%" PRId64 ", %" PRId64 ") at dimension %d "
                        "of input %dD", l, r, d, nd);
    odims[d] = n + l + r;
  }
  if (negative) return pad_gather(c, k, reflect, backward, pad, odims);
  if (!backward) {
    tt_val v = tt_lc_tensor(c, 0);
    for (int j = 0; j < k; j++) {
      int d = nd - 1 - j;
      int64_t l = pad[2 * j], r = pad[2 * j + 1], n = x->sizes[d];
      tt_val parts[3];
      int m = 0;
      if (l > 0)
        parts[m++] = reflect ? reverse_dim(b, tt_slice_dim(b, v, d, 1, l + 1), d)
                             : repeat_dim(b, tt_slice_dim(b, v, d, 0, 1), d, l);
      parts[m++] = v;
      if (r > 0)
        parts[m++] = reflect ? reverse_dim(b, tt_slice_dim(b, v, d, n - 1 - r, n - 1), d)
                             : repeat_dim(b, tt_slice_dim(b, v, d, n - 1, n), d, r);
      v = tt_b_concat(b, parts, m, d);
    }
    tt_lc_output(c, v);
    return NULL;
  }
  const tt_tensor_ref *g = tt_lc_ref(c, 0);
  if (!g || !g->storage || g->dtype != x->dtype || !nn_shape_is(g, nd, odims))
    return tt_lc_decline(c, "grad_output shape/dtype");
  tt_dtype acc = tt_opmath(x->dtype);
  tt_val v = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  for (int j = 0; j < k; j++) {
    int d = nd - 1 - j;
    int64_t l = pad[2 * j], r = pad[2 * j + 1], n = x->sizes[d];
    tt_val gi = tt_slice_dim(b, v, d, l, l + n);
    if (l > 0) {
      tt_val lp = tt_slice_dim(b, v, d, 0, l);
      if (reflect) {
        lp = zpad_dim(b, reverse_dim(b, lp, d), d, 1, n - 1 - l);
      } else {
        int64_t rd[1] = {d};
        tt_shape ks = tt_b_shape(b, lp);
        ks.dims[d] = 1;
        lp = zpad_dim(b, tt_b_reshape(b, nn_rsum(b, lp, rd, 1), ks.ndim, ks.dims), d, 0, n - 1);
      }
      gi = tt_add(b, gi, lp);
    }
    if (r > 0) {
      tt_val rp = tt_slice_dim(b, v, d, l + n, l + n + r);
      if (reflect) {
        rp = zpad_dim(b, reverse_dim(b, rp, d), d, n - 1 - r, 1);
      } else {
        int64_t rd[1] = {d};
        tt_shape ks = tt_b_shape(b, rp);
        ks.dims[d] = 1;
        rp = zpad_dim(b, tt_b_reshape(b, nn_rsum(b, rp, rd, 1), ks.ndim, ks.dims), d, n - 1, 0);
      }
      gi = tt_add(b, gi, rp);
    }
    v = gi;
  }
  tt_lc_output(c, tt_b_convert(b, v, x->dtype));
  return NULL;
}

static tt_error *lower_reflection_pad1d(tt_lower_ctx *c) { return pad_impl(c, 1, true, false); }
static tt_error *lower_reflection_pad2d(tt_lower_ctx *c) { return pad_impl(c, 2, true, false); }
static tt_error *lower_reflection_pad3d(tt_lower_ctx *c) { return pad_impl(c, 3, true, false); }
static tt_error *lower_replication_pad1d(tt_lower_ctx *c) { return pad_impl(c, 1, false, false); }
static tt_error *lower_replication_pad2d(tt_lower_ctx *c) { return pad_impl(c, 2, false, false); }
static tt_error *lower_replication_pad3d(tt_lower_ctx *c) { return pad_impl(c, 3, false, false); }
static tt_error *lower_reflection_pad1d_bw(tt_lower_ctx *c) { return pad_impl(c, 1, true, true); }
static tt_error *lower_reflection_pad2d_bw(tt_lower_ctx *c) { return pad_impl(c, 2, true, true); }
static tt_error *lower_reflection_pad3d_bw(tt_lower_ctx *c) { return pad_impl(c, 3, true, true); }
static tt_error *lower_replication_pad1d_bw(tt_lower_ctx *c) { return pad_impl(c, 1, false, true); }
static tt_error *lower_replication_pad2d_bw(tt_lower_ctx *c) { return pad_impl(c, 2, false, true); }
static tt_error *lower_replication_pad3d_bw(tt_lower_ctx *c) { return pad_impl(c, 3, false, true); }

/* ------------------------------------------------------------ upsampling */

/* CPU's compute_scales_value<float>. */
static float scales_value_f(bool has, double scale, int64_t in, int64_t out) {
  return has && scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
}

/* Source index of nearest (exact: nearest-exact) upsampling, as CPU computes it. */
static int64_t nearest_src(int64_t o, int64_t in, int64_t out, bool has, double scale,
                           bool exact) {
  if (!exact) {
    if (out == in) return o;
    if (out == 2 * in) return o >> 1;
  }
  float sc = scales_value_f(has, scale, in, out);
  int64_t r = exact ? (int64_t)floorf((float)(((double)o + 0.5) * sc)) : (int64_t)floorf((float)o * sc);
  return r < in - 1 ? r : in - 1;
}

/* Linear interpolation indices/weights along one dim (CPU's
 * compute_source_index_and_lambda, in float or double opmath). */
static void linear_src(int64_t o, int64_t in, int64_t out, bool align, bool has, double scale,
                       bool dbl, int64_t *i0, int64_t *i1, double *l0, double *l1) {
  if (out == in) {
    *i0 = *i1 = o;
    *l0 = 1;
    *l1 = 0;
    return;
  }
  if (dbl) {
    double sc = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0)
                      : (has && scale > 0 ? 1.0 / scale : (double)in / (double)out);
    double real = align ? sc * (double)o : sc * ((double)o + 0.5) - 0.5;
    if (!align && real < 0) real = 0;
    int64_t k = (int64_t)floorf((float)real);
    if (k > in - 1) k = in - 1;
    double lam = real - (double)k;
    lam = lam < 0 ? 0 : (lam > 1 ? 1 : lam);
    *i0 = k;
    *i1 = k + (k < in - 1 ? 1 : 0);
    *l1 = lam;
    *l0 = 1.0 - lam;
  } else {
    float sc = align ? (out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f)
                     : scales_value_f(has, scale, in, out);
    float real = align ? sc * (float)o : sc * ((float)o + 0.5f) - 0.5f;
    if (!align && real < 0) real = 0;
    int64_t k = (int64_t)floorf(real);
    if (k > in - 1) k = in - 1;
    float lam = real - (float)k;
    lam = lam < 0 ? 0 : (lam > 1 ? 1 : lam);
    *i0 = k;
    *i1 = k + (k < in - 1 ? 1 : 0);
    *l1 = lam;
    *l0 = 1.0f - lam;
  }
}

/* Bicubic taps along one dim (CPU's cubic source index, A = -0.75, indices
 * clamped), in float or double opmath. */
static void cubic_src(int64_t o, int64_t in, int64_t out, bool align, bool has, double scale,
                      bool dbl, int64_t *idx, double *w) {
  int64_t k;
  double t;
  if (dbl) {
    double sc = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0)
                      : (has && scale > 0 ? 1.0 / scale : (double)in / (double)out);
    double real = align ? sc * (double)o : sc * ((double)o + 0.5) - 0.5;
    k = (int64_t)floor(real);
    if (k > in - 1) k = in - 1;
    t = real - (double)k;
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    double A = -0.75, x1 = t, x2 = 1.0 - t;
    w[0] = ((A * (x1 + 1.0) - 5 * A) * (x1 + 1.0) + 8 * A) * (x1 + 1.0) - 4 * A;
    w[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
    w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    w[3] = ((A * (x2 + 1.0) - 5 * A) * (x2 + 1.0) + 8 * A) * (x2 + 1.0) - 4 * A;
  } else {
    float sc = align ? (out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f)
                     : scales_value_f(has, scale, in, out);
    float real = align ? sc * (float)o : sc * ((float)o + 0.5f) - 0.5f;
    k = (int64_t)floorf(real);
    if (k > in - 1) k = in - 1;
    float tf = real - (float)k;
    tf = tf < 0 ? 0 : (tf > 1 ? 1 : tf);
    float A = -0.75f, x1 = tf, x2 = 1.0f - tf, y1 = x1 + 1.0f, y2 = x2 + 1.0f;
    w[0] = ((A * y1 - 5 * A) * y1 + 8 * A) * y1 - 4 * A;
    w[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
    w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    w[3] = ((A * y2 - 5 * A) * y2 + 8 * A) * y2 - 4 * A;
  }
  for (int j = 0; j < 4; j++) {
    int64_t i = k - 1 + j;
    idx[j] = i < 0 ? 0 : (i > in - 1 ? in - 1 : i);
  }
}

/* upsample_{nearest,_nearest_exact}{1,2,3}d and upsample_{linear1d,
 * bilinear2d,trilinear3d}, forward (self, output_size, [align_corners],
 * scales...) and backward (grad_output, output_size, input_size,
 * [align_corners], scales...). */
static tt_error *upsample_impl(tt_lower_ctx *c, int k, int mode /* 0 nearest 1 exact 2 linear */,
                               bool backward) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 0);
  if (!x || !x->storage) return tt_lc_decline(c, "not a device tensor");
  bool linear = mode == 2 || mode == 3, cubic = mode == 3;
  if (linear || backward) {
    if (!tt_dtype_is_floating(x->dtype)) return tt_lc_decline(c, "dtype %s", tt_dtype_name(x->dtype));
    /* CPU's reduced-precision trilinear rounds differently */
    if (mode == 2 && k == 3 && tt_opmath(x->dtype) != x->dtype)
      return tt_lc_decline(c, "trilinear %s", tt_dtype_name(x->dtype));
  } else if (x->dtype != TT_U8 && !tt_dtype_is_floating(x->dtype)) {
    /* CPU's nearest kernels take uint8 and floating types only: the
     * fallback raises its "not implemented for 'Int'" */
    return tt_lc_decline(c, "dtype %s", tt_dtype_name(x->dtype));
  }
  int64_t osz[4], isz[TT_MAX_DIMS];
  if (tt_lc_int_list(c, 1, osz, 4) != k) return tt_lc_decline(c, "output_size");
  int nd = k + 2;
  if (backward) {
    if (tt_lc_int_list(c, 2, isz, TT_MAX_DIMS) != nd) return tt_lc_decline(c, "input_size");
  } else {
    if (x->ndim != nd) return tt_lc_decline(c, "input rank %d", x->ndim);
    for (int i = 0; i < nd; i++) isz[i] = x->sizes[i];
  }
  int sc0 = (backward ? 3 : 2) + (linear ? 1 : 0);
  bool align = linear ? tt_lc_bool(c, sc0 - 1, false) : false;
  int64_t gdims[TT_MAX_DIMS];
  for (int i = 0; i < nd; i++) gdims[i] = i < 2 ? isz[i] : osz[i - 2];
  for (int i = 0; i < nd; i++)
    if (isz[i] <= 0 || gdims[i] <= 0 || gdims[i] > UP_MAX) return tt_lc_decline(c, "sizes");
  if (backward && !nn_shape_is(x, nd, gdims)) return tt_lc_decline(c, "grad_output shape");
  tt_dtype acc = tt_opmath(x->dtype);
  bool dbl = acc == TT_F64;
  tt_val v = tt_lc_tensor(c, 0);
  if (linear || backward) v = tt_b_convert(b, v, acc);
  int64_t *i0 = malloc(sizeof(int64_t) * UP_MAX * 4);
  double *lw = malloc(sizeof(double) * UP_MAX * 4);
  if (!i0 || !lw) {
    free(i0);
    free(lw);
    return tt_lc_decline(c, "out of host memory");
  }
  int64_t *i1 = i0 + UP_MAX;
  double *l1 = lw + UP_MAX;
  /* last dim first (CPU's evaluation order for the forward) */
  for (int j = k - 1; j >= 0; j--) {
    int d = 2 + j;
    int64_t in = isz[d], out = osz[j];
    bool has = !tt_lc_is_none(c, sc0 + j);
    double scale = has ? tt_lc_double(c, sc0 + j, 0) : 0;
    if (cubic) {
      /* tap j of output o at [j * UP_MAX + o] */
      for (int64_t o = 0; o < out; o++) {
        int64_t ti[4];
        double tw[4];
        cubic_src(o, in, out, align, has, scale, dbl, ti, tw);
        for (int t = 0; t < 4; t++) i0[t * UP_MAX + o] = ti[t], lw[t * UP_MAX + o] = tw[t];
      }
      tt_val acc_v = TT_INVALID;
      for (int t = 0; t < 4; t++) {
        tt_val wv = nn_const_vec_dt(b, acc, lw + t * UP_MAX, NULL, out);
        if (!backward) {
          tt_val a = nn_take_dim(b, v, d, i0 + t * UP_MAX, out);
          tt_shape s = tt_b_shape(b, a);
          a = tt_mul(b, a, tt_along(b, wv, s.ndim, s.dims, d));
          acc_v = acc_v == TT_INVALID ? a : tt_add(b, acc_v, a);
        } else {
          tt_shape s = tt_b_shape(b, v);
          tt_val a = nn_put_add_dim(b, tt_mul(b, v, tt_along(b, wv, s.ndim, s.dims, d)), d, i0 + t * UP_MAX,
                                 out, in);
          acc_v = acc_v == TT_INVALID ? a : tt_add(b, acc_v, a);
        }
      }
      v = acc_v;
      continue;
    }
    for (int64_t o = 0; o < out; o++) {
      if (linear)
        linear_src(o, in, out, align, has, scale, dbl, &i0[o], &i1[o], &lw[o], &l1[o]);
      else
        i0[o] = nearest_src(o, in, out, has, scale, mode == 1);
    }
    if (!linear) {
      v = backward ? nn_put_add_dim(b, v, d, i0, out, in) : nn_take_dim(b, v, d, i0, out);
      continue;
    }
    tt_val w0 = nn_const_vec_dt(b, acc, lw, NULL, out), w1 = nn_const_vec_dt(b, acc, l1, NULL, out);
    if (!backward) {
      tt_val a = nn_take_dim(b, v, d, i0, out), e = nn_take_dim(b, v, d, i1, out);
      tt_shape s = tt_b_shape(b, a);
      v = tt_add(b, tt_mul(b, a, tt_along(b, w0, s.ndim, s.dims, d)),
              tt_mul(b, e, tt_along(b, w1, s.ndim, s.dims, d)));
    } else {
      tt_shape s = tt_b_shape(b, v);
      tt_val a = nn_put_add_dim(b, tt_mul(b, v, tt_along(b, w0, s.ndim, s.dims, d)), d, i0, out, in);
      tt_val e = nn_put_add_dim(b, tt_mul(b, v, tt_along(b, w1, s.ndim, s.dims, d)), d, i1, out, in);
      v = tt_add(b, a, e);
    }
  }
  free(i0);
  free(lw);
  tt_lc_output(c, tt_b_convert(b, v, x->dtype));
  return NULL;
}

static tt_error *lower_up_nearest1d(tt_lower_ctx *c) { return upsample_impl(c, 1, 0, false); }
static tt_error *lower_up_nearest2d(tt_lower_ctx *c) { return upsample_impl(c, 2, 0, false); }
static tt_error *lower_up_nearest3d(tt_lower_ctx *c) { return upsample_impl(c, 3, 0, false); }
static tt_error *lower_up_nearest1d_bw(tt_lower_ctx *c) { return upsample_impl(c, 1, 0, true); }
static tt_error *lower_up_nearest2d_bw(tt_lower_ctx *c) { return upsample_impl(c, 2, 0, true); }
static tt_error *lower_up_nearest3d_bw(tt_lower_ctx *c) { return upsample_impl(c, 3, 0, true); }
static tt_error *lower_up_exact1d(tt_lower_ctx *c) { return upsample_impl(c, 1, 1, false); }
static tt_error *lower_up_exact2d(tt_lower_ctx *c) { return upsample_impl(c, 2, 1, false); }
static tt_error *lower_up_exact3d(tt_lower_ctx *c) { return upsample_impl(c, 3, 1, false); }
static tt_error *lower_up_exact1d_bw(tt_lower_ctx *c) { return upsample_impl(c, 1, 1, true); }
static tt_error *lower_up_exact2d_bw(tt_lower_ctx *c) { return upsample_impl(c, 2, 1, true); }
static tt_error *lower_up_exact3d_bw(tt_lower_ctx *c) { return upsample_impl(c, 3, 1, true); }
static tt_error *lower_up_linear1d(tt_lower_ctx *c) { return upsample_impl(c, 1, 2, false); }
static tt_error *lower_up_bilinear2d(tt_lower_ctx *c) { return upsample_impl(c, 2, 2, false); }
static tt_error *lower_up_trilinear3d(tt_lower_ctx *c) { return upsample_impl(c, 3, 2, false); }
static tt_error *lower_up_linear1d_bw(tt_lower_ctx *c) { return upsample_impl(c, 1, 2, true); }
static tt_error *lower_up_bilinear2d_bw(tt_lower_ctx *c) { return upsample_impl(c, 2, 2, true); }
static tt_error *lower_up_trilinear3d_bw(tt_lower_ctx *c) { return upsample_impl(c, 3, 2, true); }
static tt_error *lower_up_bicubic2d(tt_lower_ctx *c) { return upsample_impl(c, 2, 3, false); }
static tt_error *lower_up_bicubic2d_bw(tt_lower_ctx *c) { return upsample_impl(c, 2, 3, true); }

/* ------------------------------------------------------------ pixel shuffle */

/* pixel_shuffle(self, upscale_factor) / pixel_unshuffle(self, downscale_factor) */
static tt_error *pixel_shuffle_impl(tt_lower_ctx *c, bool un) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 0);
  if (!x || !x->storage) return tt_lc_decline(c, "not a device tensor");
  int64_t r = tt_lc_int(c, 1, 1);
  int nd = x->ndim;
  if (nd < 3)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s expects input to have at least 3 dimensions, "
                      "but got input with %d dimension(s)", un ? "pixel_unshuffle" : "pixel_shuffle", nd);
  if (r <= 0) return tt_lc_decline(c, "factor");
  if (nd - 3 + 6 > TT_MAX_DIMS) return tt_lc_decline(c, "rank");
  int64_t C = x->sizes[nd - 3], H = x->sizes[nd - 2], W = x->sizes[nd - 1];
  if (!un && C % (r * r) != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "pixel_shuffle expects its input's 'channel' "
                      "dimension to be divisible by the square of upscale_factor, but input.size(-3)=%"
                      PRId64 " is not divisible by %" PRId64, C, r * r);
  if (un && (H % r != 0 || W % r != 0))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "pixel_unshuffle expects height and width to be "
                      "divisible by downscale_factor");
  int nb = nd - 3;
  int64_t d6[TT_MAX_DIMS], perm[TT_MAX_DIMS], outd[TT_MAX_DIMS];
  for (int i = 0; i < nb; i++) d6[i] = outd[i] = x->sizes[i], perm[i] = i;
  if (!un) {
    int64_t oc = C / (r * r);
    d6[nb] = oc, d6[nb + 1] = r, d6[nb + 2] = r, d6[nb + 3] = H, d6[nb + 4] = W;
    int64_t p[5] = {0, 3, 1, 4, 2}; /* C, H, r, W, r */
    for (int i = 0; i < 5; i++) perm[nb + i] = nb + p[i];
    outd[nb] = oc, outd[nb + 1] = H * r, outd[nb + 2] = W * r;
  } else {
    int64_t oh = H / r, ow = W / r;
    d6[nb] = C, d6[nb + 1] = oh, d6[nb + 2] = r, d6[nb + 3] = ow, d6[nb + 4] = r;
    int64_t p[5] = {0, 2, 4, 1, 3}; /* C, r, r, H, W */
    for (int i = 0; i < 5; i++) perm[nb + i] = nb + p[i];
    outd[nb] = C * r * r, outd[nb + 1] = oh, outd[nb + 2] = ow;
  }
  tt_val v = tt_b_reshape(b, tt_lc_tensor(c, 0), nb + 5, d6);
  v = tt_b_transpose(b, v, perm);
  tt_lc_output(c, tt_b_reshape(b, v, nd, outd));
  return NULL;
}

static tt_error *lower_pixel_shuffle(tt_lower_ctx *c) { return pixel_shuffle_impl(c, false); }
static tt_error *lower_pixel_unshuffle(tt_lower_ctx *c) { return pixel_shuffle_impl(c, true); }

TT_LOWERINGS(nn_resample) = {
    {lower_reflection_pad1d, {"reflection_pad1d", "reflection_pad1d.out"}},
    {lower_reflection_pad2d, {"reflection_pad2d", "reflection_pad2d.out"}},
    {lower_reflection_pad3d, {"reflection_pad3d", "reflection_pad3d.out"}},
    {lower_replication_pad1d, {"replication_pad1d", "replication_pad1d.out"}},
    {lower_replication_pad2d, {"replication_pad2d", "replication_pad2d.out"}},
    {lower_replication_pad3d, {"replication_pad3d", "replication_pad3d.out"}},
    {lower_reflection_pad1d_bw, {"reflection_pad1d_backward", "reflection_pad1d_backward.grad_input"}},
    {lower_reflection_pad2d_bw, {"reflection_pad2d_backward", "reflection_pad2d_backward.grad_input"}},
    {lower_reflection_pad3d_bw, {"reflection_pad3d_backward", "reflection_pad3d_backward.grad_input"}},
    {lower_replication_pad1d_bw,
     {"replication_pad1d_backward", "replication_pad1d_backward.grad_input"}},
    {lower_replication_pad2d_bw,
     {"replication_pad2d_backward", "replication_pad2d_backward.grad_input"}},
    {lower_replication_pad3d_bw,
     {"replication_pad3d_backward", "replication_pad3d_backward.grad_input"}},
    {lower_up_nearest1d, {"upsample_nearest1d", "upsample_nearest1d.out"}},
    {lower_up_nearest2d, {"upsample_nearest2d", "upsample_nearest2d.out"}},
    {lower_up_nearest3d, {"upsample_nearest3d", "upsample_nearest3d.out"}},
    {lower_up_nearest1d_bw, {"upsample_nearest1d_backward", "upsample_nearest1d_backward.grad_input"}},
    {lower_up_nearest2d_bw, {"upsample_nearest2d_backward", "upsample_nearest2d_backward.grad_input"}},
    {lower_up_nearest3d_bw, {"upsample_nearest3d_backward", "upsample_nearest3d_backward.grad_input"}},
    {lower_up_exact1d, {"_upsample_nearest_exact1d", "_upsample_nearest_exact1d.out"}},
    {lower_up_exact2d, {"_upsample_nearest_exact2d", "_upsample_nearest_exact2d.out"}},
    {lower_up_exact3d, {"_upsample_nearest_exact3d", "_upsample_nearest_exact3d.out"}},
    {lower_up_exact1d_bw,
     {"_upsample_nearest_exact1d_backward", "_upsample_nearest_exact1d_backward.grad_input"}},
    {lower_up_exact2d_bw,
     {"_upsample_nearest_exact2d_backward", "_upsample_nearest_exact2d_backward.grad_input"}},
    {lower_up_exact3d_bw,
     {"_upsample_nearest_exact3d_backward", "_upsample_nearest_exact3d_backward.grad_input"}},
    {lower_up_linear1d, {"upsample_linear1d", "upsample_linear1d.out"}},
    {lower_up_bilinear2d, {"upsample_bilinear2d", "upsample_bilinear2d.out"}},
    {lower_up_trilinear3d, {"upsample_trilinear3d", "upsample_trilinear3d.out"}},
    {lower_up_linear1d_bw, {"upsample_linear1d_backward", "upsample_linear1d_backward.grad_input"}},
    {lower_up_bilinear2d_bw,
     {"upsample_bilinear2d_backward", "upsample_bilinear2d_backward.grad_input"}},
    {lower_up_bicubic2d, {"upsample_bicubic2d", "upsample_bicubic2d.out"}},
    {lower_up_bicubic2d_bw,
     {"upsample_bicubic2d_backward", "upsample_bicubic2d_backward.grad_input"}},
    {lower_up_trilinear3d_bw,
     {"upsample_trilinear3d_backward", "upsample_trilinear3d_backward.grad_input"}},
    {lower_pixel_shuffle, {"pixel_shuffle", "pixel_shuffle.out"}},
    {lower_pixel_unshuffle, {"pixel_unshuffle", "pixel_unshuffle.out"}},
    {NULL, {NULL}},
};
