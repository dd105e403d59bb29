/* Lowerings of the conv family (see lowering.h): convolution forward and
 * backward (convolution, convolution_backward and their _overrideable
 * forms), non-transposed and transposed, as stablehlo.convolution. Split
 * out of linalg.c; shared helpers are in linalg_common.c. */
#include "ops/linalg_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================== convolution */

/* One stablehlo.convolution with no padding (callers pad with stablehlo.pad,
 * which accepts negative and interior padding). `lhs_swap`: the lhs's dim 0
 * is its feature dim and dim 1 its batch dim; `rhs_swap`: the rhs's dim 0 is
 * its input-feature dim; `out_swap`: the result's dim 0 is its feature dim. */
static tt_val conv_op(tt_builder *b, tt_val lhs, tt_val rhs, bool lhs_swap, bool rhs_swap,
                      bool out_swap, const int64_t *strides, const int64_t *rdil,
                      int64_t feature_groups, int64_t batch_groups) {
  tt_shape l = tt_b_shape(b, lhs), r = tt_b_shape(b, rhs);
  int nsp = l.ndim - 2;
  tt_shape out = l;
  int64_t batch = l.dims[lhs_swap ? 1 : 0] / batch_groups, feat = r.dims[rhs_swap ? 1 : 0];
  out.dims[out_swap ? 1 : 0] = batch;
  out.dims[out_swap ? 0 : 1] = feat;
  char sp[64] = "";
  size_t off = 0;
  for (int i = 0; i < nsp; i++) {
    int64_t k = (r.dims[2 + i] - 1) * rdil[i] + 1;
    out.dims[2 + i] = (l.dims[2 + i] - k) / strides[i] + 1;
    off += (size_t)snprintf(sp + off, sizeof sp - off, ", %d", i);
  }
  char ws[160], rd[160], ones[160], pad[200], attrs[1200];
  int64_t one[TT_MAX_DIMS];
  for (int i = 0; i < nsp; i++) one[i] = 1;
  tt_fmt_i64_array(ws, sizeof ws, strides, nsp);
  tt_fmt_i64_array(rd, sizeof rd, rdil, nsp);
  tt_fmt_i64_array(ones, sizeof ones, one, nsp);
  off = (size_t)snprintf(pad, sizeof pad, "dense<[");
  for (int i = 0; i < nsp; i++) off += (size_t)snprintf(pad + off, sizeof pad - off, i ? ", [0, 0]" : "[0, 0]");
  snprintf(pad + off, sizeof pad - off, "]> : tensor<%dx2xi64>", nsp);
  snprintf(attrs, sizeof attrs,
           "dimension_numbers = #stablehlo.conv<[%s%s]x[%s%s]->[%s%s]>, window_strides = %s, "
           "padding = %s, lhs_dilation = %s, rhs_dilation = %s, feature_group_count = %" PRId64
           " : i64, batch_group_count = %" PRId64 " : i64",
           lhs_swap ? "f, b" : "b, f", sp, rhs_swap ? "i, o" : "o, i", sp,
           out_swap ? "f, b" : "b, f", sp, ws, pad, ones, rd, feature_groups, batch_groups);
  tt_val ins[2] = {lhs, rhs};
  return tt_b_emit1(b, TT_OP_CONVOLUTION, ins, 2, attrs, out);
}

/* Pads the spatial dims (2..) of x: lo/hi may be negative; interior >= 0. */
static tt_val pad_spatial(tt_builder *b, tt_val x, int nsp, const int64_t *lo, const int64_t *hi,
                          const int64_t *interior) {
  int64_t l[TT_MAX_DIMS] = {0}, h[TT_MAX_DIMS] = {0}, in[TT_MAX_DIMS] = {0};
  bool any = false;
  for (int i = 0; i < nsp; i++) {
    l[2 + i] = lo[i];
    h[2 + i] = hi[i];
    in[2 + i] = interior ? interior[i] : 0;
    any |= lo[i] != 0 || hi[i] != 0 || in[2 + i] != 0;
  }
  if (!any) return x;
  return tt_b_pad(b, x, tt_b_constant(b, tt_b_dtype(b, x), 0), l, h, in);
}

typedef struct {
  int nsp;
  int64_t stride[3], pad[3], dil[3], outpad[3], groups;
} conv_params;

static tt_error *read_conv_params(tt_lower_ctx *c, int first, int groups_i, conv_params *p,
                                  int nsp) {
  int64_t v[3][TT_MAX_DIMS];
  int n[3];
  for (int k = 0; k < 3; k++) {
    n[k] = tt_lc_int_list(c, first + k, v[k], TT_MAX_DIMS);
    if (n[k] != 1 && n[k] != nsp) return tt_lc_decline(c, "parameter list length");
  }
  p->nsp = nsp;
  for (int i = 0; i < nsp; i++) {
    p->stride[i] = v[0][n[0] == 1 ? 0 : i];
    p->pad[i] = v[1][n[1] == 1 ? 0 : i];
    p->dil[i] = v[2][n[2] == 1 ? 0 : i];
    p->outpad[i] = 0;
    if (p->stride[i] <= 0 || p->pad[i] < 0 || p->dil[i] <= 0)
      return tt_lc_decline(c, "invalid stride/padding/dilation");
  }
  p->groups = tt_lc_int(c, groups_i, 1);
  if (p->groups <= 0) return tt_lc_decline(c, "invalid groups");
  return NULL;
}

/* Forward convolution x [N, C, sp] * w [O, C/g, k] -> [N, O, out]. */
static tt_val conv_forward(tt_builder *b, tt_val x, tt_val w, const conv_params *p) {
  int64_t z[3] = {0, 0, 0};
  x = pad_spatial(b, x, p->nsp, p->pad, p->pad, z);
  return conv_op(b, x, w, false, false, false, p->stride, p->dil, p->groups, 1);
}

/* Gradient of a forward convolution w.r.t. its input (also the transposed
 * convolution): g [N, O, o] with w [O, C/g, k] -> [N, C, in]. */
static tt_val conv_input_grad(tt_builder *b, tt_val g, tt_val w, const conv_params *p,
                              const int64_t *in_sizes) {
  tt_shape ws = tt_b_shape(b, w), gs = tt_b_shape(b, g);
  int nsp = p->nsp;
  int64_t G = p->groups, O = ws.dims[0], Cg = ws.dims[1];
  /* w [O, C/g, k] -> [g, O/g, C/g, k] -> [O/g, g, C/g, k] -> [O/g, C, k] */
  int64_t d1[TT_MAX_DIMS] = {G, O / G, Cg}, perm[TT_MAX_DIMS] = {1, 0, 2}, d2[TT_MAX_DIMS] = {O / G, G * Cg};
  for (int i = 0; i < nsp; i++) {
    d1[3 + i] = ws.dims[2 + i];
    perm[3 + i] = 3 + i;
    d2[2 + i] = ws.dims[2 + i];
  }
  tt_val wt = w;
  if (G > 1) {
    wt = tt_b_reshape(b, w, 3 + nsp, d1);
    wt = tt_b_transpose(b, wt, perm);
    wt = tt_b_reshape(b, wt, 2 + nsp, d2);
  }
  int64_t rev[TT_MAX_DIMS];
  for (int i = 0; i < nsp; i++) rev[i] = 2 + i;
  char attrs[160];
  tt_fmt_i64_array(attrs + 100, 60, rev, nsp);
  snprintf(attrs, 100, "dimensions = %s", attrs + 100);
  wt = tt_b_emit1(b, TT_OP_REVERSE, &wt, 1, attrs, tt_b_shape(b, wt));
  int64_t lo[3], hi[3], interior[3], one[3] = {1, 1, 1};
  for (int i = 0; i < nsp; i++) {
    int64_t k = p->dil[i] * (ws.dims[2 + i] - 1);
    lo[i] = k - p->pad[i];
    hi[i] = in_sizes[i] - (gs.dims[2 + i] - 1) * p->stride[i] - 1 + p->pad[i];
    interior[i] = p->stride[i] - 1;
  }
  g = pad_spatial(b, g, nsp, lo, hi, interior);
  return conv_op(b, g, wt, false, true, false, one, p->dil, G, 1);
}

/* Gradient of a forward convolution w.r.t. its weight: x [N, C, in],
 * g [N, O, o] -> [O, C/g, k]. */
static tt_val conv_weight_grad(tt_builder *b, tt_val x, tt_val g, const conv_params *p,
                               const int64_t *k_sizes) {
  tt_shape xs = tt_b_shape(b, x), gs = tt_b_shape(b, g);
  int nsp = p->nsp;
  int64_t lo[3], hi[3], z[3] = {0, 0, 0};
  for (int i = 0; i < nsp; i++) {
    lo[i] = p->pad[i];
    hi[i] = (k_sizes[i] - 1) * p->dil[i] + (gs.dims[2 + i] - 1) * p->stride[i] + 1 -
            xs.dims[2 + i] - p->pad[i];
  }
  x = pad_spatial(b, x, nsp, lo, hi, z);
  return conv_op(b, x, g, true, true, true, p->dil, p->stride, 1, p->groups);
}

/* Checks a convolution's shapes (non-transposed or transposed); declines
 * anything unusual (CPU then raises PyTorch's own error). */
static tt_error *check_conv(tt_lower_ctx *c, const tt_tensor_ref *x, const tt_tensor_ref *w,
                            bool transposed, const conv_params *p, int64_t *out_sizes) {
  int nsp = p->nsp;
  if (x->ndim != w->ndim || nsp < 1 || nsp > 3) return tt_lc_decline(c, "input/weight ranks");
  for (int i = 0; i < x->ndim; i++)
    if (x->sizes[i] == 0 || w->sizes[i] == 0) return tt_lc_decline(c, "empty tensor");
  if (!transposed) {
    if (x->sizes[1] != w->sizes[1] * p->groups || w->sizes[0] % p->groups)
      return tt_lc_decline(c, "channel mismatch");
    for (int i = 0; i < nsp; i++) {
      int64_t o = (x->sizes[2 + i] + 2 * p->pad[i] - p->dil[i] * (w->sizes[2 + i] - 1) - 1) /
                      p->stride[i] + 1;
      if (x->sizes[2 + i] + 2 * p->pad[i] < p->dil[i] * (w->sizes[2 + i] - 1) + 1 || o <= 0)
        return tt_lc_decline(c, "kernel larger than input");
      out_sizes[i] = o;
    }
  } else {
    if (x->sizes[1] != w->sizes[0] || w->sizes[0] % p->groups)
      return tt_lc_decline(c, "channel mismatch");
    for (int i = 0; i < nsp; i++) {
      if (p->outpad[i] < 0 || (p->outpad[i] >= p->stride[i] && p->outpad[i] >= p->dil[i]))
        return tt_lc_decline(c, "output_padding");
      int64_t o = (x->sizes[2 + i] - 1) * p->stride[i] - 2 * p->pad[i] +
                  p->dil[i] * (w->sizes[2 + i] - 1) + p->outpad[i] + 1;
      if (o <= 0) return tt_lc_decline(c, "empty output");
      out_sizes[i] = o;
    }
  }
  return NULL;
}

static tt_error *read_outpad(tt_lower_ctx *c, int i, conv_params *p) {
  int64_t v[TT_MAX_DIMS];
  int n = tt_lc_int_list(c, i, v, TT_MAX_DIMS);
  if (n != 1 && n != p->nsp) return tt_lc_decline(c, "output_padding length");
  for (int k = 0; k < p->nsp; k++) p->outpad[k] = v[n == 1 ? 0 : k];
  return NULL;
}

/* convolution(input, weight, bias?, stride, padding, dilation, transposed,
 * output_padding, groups); also convolution_overrideable (same arguments). */
static tt_error *lower_convolution(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *x = tt_lc_ref(c, 0), *w = tt_lc_ref(c, 1);
  bool has_bias = !tt_lc_is_none(c, 2);
  tt_dtype dt = x->dtype;
  if (!tt_dtype_is_floating(dt) || w->dtype != dt) return tt_lc_decline(c, "dtype");
  if (has_bias && (!linalg_is_tensor(c, 2) || tt_lc_ref(c, 2)->dtype != dt || tt_lc_ref(c, 2)->ndim != 1 ||
                   tt_lc_ref(c, 2)->sizes[0] != (tt_lc_bool(c, 6, false) ? w->sizes[1] * tt_lc_int(c, 8, 1) : w->sizes[0])))
    return tt_lc_decline(c, "bias");
  conv_params p;
  TT_TRY(read_conv_params(c, 3, 8, &p, x->ndim - 2));
  bool transposed = tt_lc_bool(c, 6, false);
  /* CPU's float16 transposed convolution (gemm + col2im) sums the kernel
   * taps' partial products in float16; a float32 accumulation differs by
   * more than float16's tolerance. */
  if (transposed && dt == TT_F16) return tt_lc_decline(c, "float16 transposed convolution");
  if (transposed) TT_TRY(read_outpad(c, 7, &p));
  int64_t out_sp[3];
  TT_TRY(check_conv(c, x, w, transposed, &p, out_sp));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = tt_opmath(dt);
  tt_val xv = tt_b_convert(b, tt_lc_tensor(c, 0), acc), wv = tt_b_convert(b, tt_lc_tensor(c, 1), acc);
  tt_val y = transposed ? conv_input_grad(b, xv, wv, &p, out_sp) : conv_forward(b, xv, wv, &p);
  if (has_bias) {
    tt_shape ys = tt_b_shape(b, y);
    tt_val bias = tt_b_convert(b, tt_lc_tensor(c, 2), acc);
    y = tt_b_bin(b, TT_OP_ADD, y, tt_along(b, bias, ys.ndim, ys.dims, 1));
  }
  tt_lc_output(c, tt_b_convert(b, y, dt));
  return NULL;
}

/* convolution_backward(grad_output, input, weight, bias_sizes?, stride,
 * padding, dilation, transposed, output_padding, groups, output_mask) and
 * convolution_backward_overrideable (same without bias_sizes). Every result
 * is computed (the boxed boundary cannot return undefined tensors); autograd
 * ignores the ones output_mask does not ask for. */
static tt_error *lower_convolution_backward(tt_lower_ctx *c) {
  int off = strstr(tt_lc_op_name(c), "overrideable") ? -1 : 0;
  for (int i = 0; i < 3; i++)
    if (!linalg_is_tensor(c, i)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *x = tt_lc_ref(c, 1), *w = tt_lc_ref(c, 2);
  tt_dtype dt = x->dtype;
  if (!tt_dtype_is_floating(dt) || w->dtype != dt || g->dtype != dt) return tt_lc_decline(c, "dtype");
  conv_params p;
  TT_TRY(read_conv_params(c, 4 + off, 9 + off, &p, x->ndim - 2));
  bool transposed = tt_lc_bool(c, 7 + off, false);
  if (transposed) TT_TRY(read_outpad(c, 8 + off, &p));
  int64_t out_sp[3];
  TT_TRY(check_conv(c, x, w, transposed, &p, out_sp));
  if (g->ndim != x->ndim || g->sizes[0] != x->sizes[0] ||
      g->sizes[1] != (transposed ? w->sizes[1] * p.groups : w->sizes[0]))
    return tt_lc_decline(c, "grad_output shape");
  for (int i = 0; i < p.nsp; i++)
    if (g->sizes[2 + i] != out_sp[i]) return tt_lc_decline(c, "grad_output shape");
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = tt_opmath(dt);
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), acc), xv = tt_b_convert(b, tt_lc_tensor(c, 1), acc),
         wv = tt_b_convert(b, tt_lc_tensor(c, 2), acc);
  int64_t in_sp[3], k_sp[3];
  for (int i = 0; i < p.nsp; i++) {
    in_sp[i] = x->sizes[2 + i];
    k_sp[i] = w->sizes[2 + i];
  }
  tt_val gi, gw;
  if (!transposed) {
    gi = conv_input_grad(b, gv, wv, &p, in_sp);
    gw = conv_weight_grad(b, xv, gv, &p, k_sp);
  } else {
    /* y = conv_transpose(x, w) is the input-gradient of x' = conv(y, w). */
    gi = conv_forward(b, gv, wv, &p);
    gw = conv_weight_grad(b, gv, xv, &p, k_sp);
  }
  /* conv_weight_grad pads so the window count is >= k; crop any excess */
  tt_shape gws = tt_b_shape(b, gw);
  int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS];
  bool crop = false;
  for (int i = 0; i < gws.ndim; i++) {
    li[i] = i < 2 ? gws.dims[i] : k_sp[i - 2];
    crop |= li[i] != gws.dims[i];
  }
  if (crop) gw = tt_b_slice(b, gw, st, li, NULL);
  int64_t rdims[TT_MAX_DIMS];
  int nr = 0;
  for (int i = 0; i < g->ndim; i++)
    if (i != 1) rdims[nr++] = i;
  tt_val gb = tt_b_reduce(b, gv, tt_b_constant(b, acc, 0), rdims, nr, "add");
  tt_lc_output(c, tt_b_convert(b, gi, dt));
  tt_lc_output(c, tt_b_convert(b, gw, dt));
  tt_lc_output(c, tt_b_convert(b, gb, dt));
  return NULL;
}

TT_LOWERINGS(conv) = {
    {lower_convolution,
     {"convolution", "convolution.out", "convolution_overrideable", "convolution_overrideable.out"}},
    {lower_convolution_backward,
     {"convolution_backward", "convolution_backward.out", "convolution_backward_overrideable",
      "convolution_backward_overrideable.out"}},
    {NULL, {NULL}},
};
