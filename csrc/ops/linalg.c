/* Lowerings of the linalg family (see lowering.h): matrix products
 * (mm, bmm, addmm, baddbmm, addbmm, dot, mv, addmv), convolution forward and
 * backward, 2-d and 3-d pooling (max with indices, average), forward and
 * backward, trace, cross, diag_embed, cholesky and triangular solve.
 * (Adaptive average pooling lives in nn.c.)
 *
 * float16/bfloat16 inputs are converted to float32, computed (accumulated)
 * in float32 and rounded once at the end, like CPU PyTorch. */
#include "ops/common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================== small helpers */

static tt_dtype acc_dtype(tt_dtype dt) {
  return (dt == TT_F16 || dt == TT_BF16) ? TT_F32 : dt;
}

static bool is_float(tt_dtype dt) {
  return dt == TT_F16 || dt == TT_BF16 || dt == TT_F32 || dt == TT_F64;
}

/* Dtypes CPU PyTorch multiplies matrices in: floats and integers (no bool). */
static bool matmul_dtype_ok(tt_dtype dt) {
  return is_float(dt) || dt == TT_U8 || dt == TT_I8 || dt == TT_I16 || dt == TT_I32 ||
         dt == TT_I64;
}

static bool is_tensor(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_TENSOR && a->u.tensor->storage;
}

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

/* x [d0..dn) multiplied by a per-row vector along dim `dim`. */
static tt_val bcast_dim(tt_builder *b, tt_val v, int ndim, const int64_t *dims, int dim) {
  int64_t map[1] = {dim};
  return tt_b_broadcast_in_dim(b, v, ndim, dims, map);
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

/* out = beta * self + alpha * prod (prod already in the accumulation dtype),
 * self broadcast to prod's shape; beta == 0 ignores self (NaN included), as
 * PyTorch does. Scalars are runtime parameters. */
static tt_error *axpby(tt_lower_ctx *c, int self_i, int beta_i, int alpha_i, tt_val prod,
                       tt_dtype dt) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = acc_dtype(dt);
  tt_shape ps = tt_b_shape(b, prod);
  const tt_tensor_ref *sr = tt_lc_ref(c, self_i);
  int n;
  int64_t dims[TT_MAX_DIMS];
  if (!tt_broadcast_dims(sr->ndim, sr->sizes, ps.ndim, ps.dims, &n, dims) || n != ps.ndim ||
      memcmp(dims, ps.dims, sizeof(int64_t) * (size_t)n) != 0)
    return tt_lc_decline(c, "self does not broadcast to the product's shape");
  tt_val self = tt_b_broadcast_to(b, tt_b_convert(b, tt_lc_tensor(c, self_i), acc), ps.ndim,
                                  ps.dims);
  tt_val beta = tt_b_broadcast_to(b, tt_lc_scalar(c, beta_i, acc), ps.ndim, ps.dims);
  tt_val alpha = tt_b_broadcast_to(b, tt_lc_scalar(c, alpha_i, acc), ps.ndim, ps.dims);
  tt_val zero = tt_b_full(b, tt_shape_make(acc, ps.ndim, ps.dims), 0);
  tt_val bs = tt_b_select(b, tt_b_compare(b, "EQ", beta, zero), zero,
                          tt_b_binary(b, "multiply", beta, self));
  tt_val r = tt_b_binary(b, "add", bs, tt_b_binary(b, "multiply", alpha, prod));
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

/* Checks beta/alpha against the dtype; declines what it cannot mirror
 * exactly. */
static tt_error *check_scalars(tt_lower_ctx *c, tt_dtype dt, int beta_i, int alpha_i) {
  const tt_scalar *be = tt_lc_scalar_ref(c, beta_i), *al = tt_lc_scalar_ref(c, alpha_i);
  if (!be || !al) return tt_lc_decline(c, "beta/alpha are not Scalars");
  /* CPU truncates float beta/alpha to the integral dtype (1.7 -> 1), as the
   * runtime parameter conversion does; uint8 may overflow-check instead. */
  if (dt == TT_U8 && (be->kind == TT_SCALAR_FLOAT || al->kind == TT_SCALAR_FLOAT))
    return tt_lc_decline(c, "float beta/alpha with a uint8 product");
  return NULL;
}

/* Same dtype for all tensor args (PyTorch requires it for mm-like ops). */
static tt_error *same_dtype(tt_lower_ctx *c, const int *args, int n, tt_dtype *dt) {
  for (int k = 0; k < n; k++)
    if (!is_tensor(c, args[k])) return tt_lc_decline(c, "argument %d is not a device tensor", args[k]);
  *dt = tt_lc_ref(c, args[0])->dtype;
  for (int k = 1; k < n; k++)
    if (tt_lc_ref(c, args[k])->dtype != *dt) return tt_lc_decline(c, "mixed dtypes");
  if (!matmul_dtype_ok(*dt)) return tt_lc_decline(c, "dtype %s", tt_dtype_name(*dt));
  return NULL;
}

/* [batch..., n, k] x [batch..., k, m] -> [batch..., n, m] in the accumulation dtype. */
static tt_val bmatmul(tt_builder *b, tt_val x, tt_val y, int n_batch, tt_dtype dt) {
  tt_dtype acc = acc_dtype(dt);
  x = tt_b_convert(b, x, acc);
  y = tt_b_convert(b, y, acc);
  int64_t batch[TT_MAX_DIMS];
  for (int i = 0; i < n_batch; i++) batch[i] = i;
  int64_t lc[1] = {tt_b_ndim(b, x) - 1}, rc[1] = {n_batch};
  return tt_b_dot_general(b, x, y, n_batch, batch, batch, 1, lc, rc, acc);
}

/* ====================================================== matrix products */

/* mm(self, mat2) */
static tt_error *lower_mm(tt_lower_ctx *c) {
  int args[2] = {0, 1};
  tt_dtype dt;
  TT_TRY(same_dtype(c, args, 2, &dt));
  const tt_tensor_ref *a = tt_lc_ref(c, 0), *m = tt_lc_ref(c, 1);
  if (a->ndim != 2) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "self must be a matrix");
  if (m->ndim != 2) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "mat2 must be a matrix");
  if (a->sizes[1] != m->sizes[0])
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "mat1 and mat2 shapes cannot be multiplied (%" PRId64 "x%" PRId64
                      " and %" PRId64 "x%" PRId64 ")",
                      a->sizes[0], a->sizes[1], m->sizes[0], m->sizes[1]);
  tt_builder *b = tt_lc_builder(c);
  tt_lc_output(c, tt_b_convert(b, bmatmul(b, tt_lc_tensor(c, 0), tt_lc_tensor(c, 1), 0, dt), dt));
  return NULL;
}

/* addmm(self, mat1, mat2, *, beta, alpha) */
static tt_error *lower_addmm(tt_lower_ctx *c) {
  int args[3] = {0, 1, 2};
  tt_dtype dt;
  TT_TRY(same_dtype(c, args, 3, &dt));
  TT_TRY(check_scalars(c, dt, 3, 4));
  const tt_tensor_ref *a = tt_lc_ref(c, 1), *m = tt_lc_ref(c, 2);
  if (a->ndim != 2) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "mat1 must be a matrix, got %d-D tensor", a->ndim);
  if (m->ndim != 2) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "mat2 must be a matrix, got %d-D tensor", m->ndim);
  if (a->sizes[1] != m->sizes[0])
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "mat1 and mat2 shapes cannot be multiplied (%" PRId64 "x%" PRId64
                      " and %" PRId64 "x%" PRId64 ")",
                      a->sizes[0], a->sizes[1], m->sizes[0], m->sizes[1]);
  tt_builder *b = tt_lc_builder(c);
  return axpby(c, 0, 3, 4, bmatmul(b, tt_lc_tensor(c, 1), tt_lc_tensor(c, 2), 0, dt), dt);
}

static tt_error *check_bmm(tt_lower_ctx *c, int i1, int i2) {
  const tt_tensor_ref *x = tt_lc_ref(c, i1), *y = tt_lc_ref(c, i2);
  if (x->ndim != 3) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "batch1 must be a 3D tensor");
  if (y->ndim != 3) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "batch2 must be a 3D tensor");
  if (y->sizes[0] != x->sizes[0] || y->sizes[1] != x->sizes[2])
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Expected size for first two dimensions of batch2 tensor to be: [%" PRId64
                      ", %" PRId64 "] but got: [%" PRId64 ", %" PRId64 "].",
                      x->sizes[0], x->sizes[2], y->sizes[0], y->sizes[1]);
  return NULL;
}

/* bmm(self, mat2) */
static tt_error *lower_bmm(tt_lower_ctx *c) {
  int args[2] = {0, 1};
  tt_dtype dt;
  TT_TRY(same_dtype(c, args, 2, &dt));
  TT_TRY(check_bmm(c, 0, 1));
  tt_builder *b = tt_lc_builder(c);
  tt_lc_output(c, tt_b_convert(b, bmatmul(b, tt_lc_tensor(c, 0), tt_lc_tensor(c, 1), 1, dt), dt));
  return NULL;
}

/* baddbmm(self, batch1, batch2, *, beta, alpha) */
static tt_error *lower_baddbmm(tt_lower_ctx *c) {
  int args[3] = {0, 1, 2};
  tt_dtype dt;
  TT_TRY(same_dtype(c, args, 3, &dt));
  TT_TRY(check_scalars(c, dt, 3, 4));
  TT_TRY(check_bmm(c, 1, 2));
  tt_builder *b = tt_lc_builder(c);
  return axpby(c, 0, 3, 4, bmatmul(b, tt_lc_tensor(c, 1), tt_lc_tensor(c, 2), 1, dt), dt);
}

/* addbmm(self, batch1, batch2, *, beta, alpha): sum over the batch too. */
static tt_error *lower_addbmm(tt_lower_ctx *c) {
  int args[3] = {0, 1, 2};
  tt_dtype dt;
  TT_TRY(same_dtype(c, args, 3, &dt));
  TT_TRY(check_scalars(c, dt, 3, 4));
  TT_TRY(check_bmm(c, 1, 2));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = acc_dtype(dt);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 1), acc), y = tt_b_convert(b, tt_lc_tensor(c, 2), acc);
  int64_t lc[2] = {0, 2}, rc[2] = {0, 1};
  return axpby(c, 0, 3, 4, tt_b_dot_general(b, x, y, 0, NULL, NULL, 2, lc, rc, acc), dt);
}

/* dot(self, tensor) */
static tt_error *lower_dot(tt_lower_ctx *c) {
  if (!is_tensor(c, 0) || !is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *x = tt_lc_ref(c, 0), *y = tt_lc_ref(c, 1);
  if (x->ndim != 1 || y->ndim != 1)
    return tt_lc_fail(c, TT_ERR_RUNTIME, "1D tensors expected, but got %dD and %dD tensors",
                      x->ndim, y->ndim);
  if (x->sizes[0] != y->sizes[0])
    return tt_lc_fail(c, TT_ERR_RUNTIME,
                      "inconsistent tensor size, expected tensor [%" PRId64
                      "] and src [%" PRId64 "] to have the same number of elements, but got %"
                      PRId64 " and %" PRId64 " elements respectively",
                      x->sizes[0], y->sizes[0], x->sizes[0], y->sizes[0]);
  int args[2] = {0, 1};
  tt_dtype dt;
  TT_TRY(same_dtype(c, args, 2, &dt));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = acc_dtype(dt);
  int64_t z[1] = {0};
  tt_val r = tt_b_dot_general(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc),
                              tt_b_convert(b, tt_lc_tensor(c, 1), acc), 0, NULL, NULL, 1, z, z, acc);
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

static tt_error *check_mv(tt_lower_ctx *c, int mi, int vi) {
  const tt_tensor_ref *m = tt_lc_ref(c, mi), *v = tt_lc_ref(c, vi);
  if (m->ndim != 2 || v->ndim != 1)
    return tt_lc_fail(c, TT_ERR_RUNTIME,
                      "vector + matrix @ vector expected, got %d, %d, %d", 1, m->ndim, v->ndim);
  if (m->sizes[1] != v->sizes[0])
    return tt_lc_fail(c, TT_ERR_RUNTIME,
                      "size mismatch, got input (%" PRId64 "), mat (%" PRId64 "x%" PRId64
                      "), vec (%" PRId64 ")",
                      m->sizes[0], m->sizes[0], m->sizes[1], v->sizes[0]);
  return NULL;
}

static tt_val mv_product(tt_builder *b, tt_val m, tt_val v, tt_dtype dt) {
  tt_dtype acc = acc_dtype(dt);
  int64_t lc[1] = {1}, rc[1] = {0};
  return tt_b_dot_general(b, tt_b_convert(b, m, acc), tt_b_convert(b, v, acc), 0, NULL, NULL, 1,
                          lc, rc, acc);
}

/* mv(self, vec) */
static tt_error *lower_mv(tt_lower_ctx *c) {
  int args[2] = {0, 1};
  tt_dtype dt;
  TT_TRY(same_dtype(c, args, 2, &dt));
  TT_TRY(check_mv(c, 0, 1));
  tt_builder *b = tt_lc_builder(c);
  tt_lc_output(c, tt_b_convert(b, mv_product(b, tt_lc_tensor(c, 0), tt_lc_tensor(c, 1), dt), dt));
  return NULL;
}

/* addmv(self, mat, vec, *, beta, alpha) */
static tt_error *lower_addmv(tt_lower_ctx *c) {
  int args[3] = {0, 1, 2};
  tt_dtype dt;
  TT_TRY(same_dtype(c, args, 3, &dt));
  TT_TRY(check_scalars(c, dt, 3, 4));
  TT_TRY(check_mv(c, 1, 2));
  tt_builder *b = tt_lc_builder(c);
  return axpby(c, 0, 3, 4, mv_product(b, tt_lc_tensor(c, 1), tt_lc_tensor(c, 2), dt), dt);
}

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
  return tt_b_op(b, "stablehlo.convolution", ins, 2, attrs, out);
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
  wt = tt_b_op(b, "stablehlo.reverse", &wt, 1, attrs, tt_b_shape(b, wt));
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
  if (!is_tensor(c, 0) || !is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *x = tt_lc_ref(c, 0), *w = tt_lc_ref(c, 1);
  bool has_bias = !tt_lc_is_none(c, 2);
  tt_dtype dt = x->dtype;
  if (!is_float(dt) || w->dtype != dt) return tt_lc_decline(c, "dtype");
  if (has_bias && (!is_tensor(c, 2) || tt_lc_ref(c, 2)->dtype != dt || tt_lc_ref(c, 2)->ndim != 1 ||
                   tt_lc_ref(c, 2)->sizes[0] != (tt_lc_bool(c, 6, false) ? w->sizes[1] * tt_lc_int(c, 8, 1) : w->sizes[0])))
    return tt_lc_decline(c, "bias");
  conv_params p;
  TT_TRY(read_conv_params(c, 3, 8, &p, x->ndim - 2));
  bool transposed = tt_lc_bool(c, 6, false);
  if (transposed) TT_TRY(read_outpad(c, 7, &p));
  int64_t out_sp[3];
  TT_TRY(check_conv(c, x, w, transposed, &p, out_sp));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = acc_dtype(dt);
  tt_val xv = tt_b_convert(b, tt_lc_tensor(c, 0), acc), wv = tt_b_convert(b, tt_lc_tensor(c, 1), acc);
  tt_val y = transposed ? conv_input_grad(b, xv, wv, &p, out_sp) : conv_forward(b, xv, wv, &p);
  if (has_bias) {
    tt_shape ys = tt_b_shape(b, y);
    tt_val bias = tt_b_convert(b, tt_lc_tensor(c, 2), acc);
    y = tt_b_binary(b, "add", y, bcast_dim(b, bias, ys.ndim, ys.dims, 1));
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
    if (!is_tensor(c, i)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *x = tt_lc_ref(c, 1), *w = tt_lc_ref(c, 2);
  tt_dtype dt = x->dtype;
  if (!is_float(dt) || w->dtype != dt || g->dtype != dt) return tt_lc_decline(c, "dtype");
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
  tt_dtype acc = acc_dtype(dt);
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
  if (!is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  tt_dtype dt = xr->dtype;
  if (dt == TT_BOOL || !matmul_dtype_ok(dt)) return tt_lc_decline(c, "dtype");
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
      if (is_float(dt)) upd = tt_b_binary(b, "or", upd, tt_b_compare(b, "NE", v, v));
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

/* max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride,
 * padding, dilation, ceil_mode, indices): scatter-add of the gradients to
 * the recorded per-plane flat positions. */
static tt_error *lower_max_pool2d_backward(tt_lower_ctx *c) {
  if (!is_tensor(c, 0) || !is_tensor(c, 1) || !is_tensor(c, 7))
    return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *gr = tt_lc_ref(c, 0), *xr = tt_lc_ref(c, 1), *ir = tt_lc_ref(c, 7);
  tt_dtype dt = xr->dtype;
  if (!is_float(dt) || gr->dtype != dt || ir->dtype != TT_I64) return tt_lc_decline(c, "dtype");
  pool_params pp;
  TT_TRY(read_pool(c, xr, 2, 3, 4, 5, tt_lc_bool(c, 6, false), &pp));
  if (gr->ndim != xr->ndim || ir->ndim != xr->ndim) return tt_lc_decline(c, "shapes");
  for (int i = 0; i < xr->ndim; i++) {
    int64_t want = i < xr->ndim - 2 ? xr->sizes[i] : pp.out[i - (xr->ndim - 2)];
    if (gr->sizes[i] != want || ir->sizes[i] != want) return tt_lc_decline(c, "shapes");
  }
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = acc_dtype(dt);
  tt_val g = as4d(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc));
  tt_val ix = as4d(b, tt_lc_tensor(c, 7));
  tt_shape gs = tt_b_shape(b, g);
  int64_t N = gs.dims[0], C = gs.dims[1], H = pp.in[0], W = pp.in[1];
  int64_t nout = tt_shape_numel(&gs), plane = H * W, total = N * C * plane;
  tt_shape is = tt_shape_make(TT_I64, 4, gs.dims);
  tt_val pl = tt_b_binary(b, "add", tt_b_binary(b, "multiply", tt_b_iota(b, is, 0), tt_b_full(b, is, (double)C)),
                          tt_b_iota(b, is, 1));
  tt_val lin = tt_b_binary(b, "add", tt_b_binary(b, "multiply", pl, tt_b_full(b, is, (double)plane)), ix);
  int64_t idims[2] = {nout, 1};
  lin = tt_b_reshape(b, lin, 2, idims);
  tt_val upd = tt_b_reshape(b, g, 1, &nout);
  tt_val base = tt_b_full(b, tt_shape_make(acc, 1, &total), 0);
  char region[600];
  tt_b_region_binary(region, sizeof region, acc, "add");
  const char *attrs =
      "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
      "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, "
      "unique_indices = false";
  tt_val ins[3] = {base, lin, upd}, r;
  tt_shape out = tt_shape_make(acc, 1, &total);
  tt_b_op_multi(b, "stablehlo.scatter", ins, 3, attrs, region, &out, 1, &r);
  int64_t d4[4] = {N, C, H, W};
  r = tt_b_reshape(b, r, 4, d4);
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
  tt_val h = bcast_dim(b, const_vec(b, dt, fh, pp->out[0]), 4, od, 2);
  tt_val w = bcast_dim(b, const_vec(b, dt, fw, pp->out[1]), 4, od, 3);
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

static tt_dtype avg_acc(tt_dtype dt) { return dt == TT_I64 ? TT_I64 : acc_dtype(dt); }

/* avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
 * divisor_override) */
static tt_error *lower_avg_pool2d(tt_lower_ctx *c) {
  if (!is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  tt_dtype dt = xr->dtype;
  if (!is_float(dt) && dt != TT_I64) return tt_lc_decline(c, "dtype");
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
  if (!is_tensor(c, 0) || !is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *gr = tt_lc_ref(c, 0), *xr = tt_lc_ref(c, 1);
  tt_dtype dt = xr->dtype;
  if (!is_float(dt) || gr->dtype != dt) return tt_lc_decline(c, "dtype");
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
  tt_dtype acc = acc_dtype(dt);
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

/* ====================================================== trace, cross */

/* trace(self): sum of the main diagonal of a matrix; integers sum in int64. */
static tt_error *lower_trace(tt_lower_ctx *c) {
  if (!is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  if (xr->ndim != 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "trace: expected a matrix, but got tensor with dim %d",
                      xr->ndim);
  tt_dtype dt = xr->dtype;
  tt_dtype out = is_float(dt) ? dt : TT_I64, acc = acc_dtype(out); /* half: float sum */
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_shape is = tt_shape_make(TT_I64, 2, xr->sizes);
  tt_val diag = tt_b_compare(b, "EQ", tt_b_iota(b, is, 0), tt_b_iota(b, is, 1));
  x = tt_b_select(b, diag, x, tt_b_full(b, tt_shape_make(acc, 2, xr->sizes), 0));
  int64_t d2[2] = {0, 1};
  tt_lc_output(c, tt_b_convert(b, tt_b_reduce(b, x, tt_b_constant(b, acc, 0), d2, 2, "add"), out));
  return NULL;
}

/* linalg_cross(self, other, dim=-1) */
static tt_error *lower_linalg_cross(tt_lower_ctx *c) {
  if (!is_tensor(c, 0) || !is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0), *yr = tt_lc_ref(c, 1);
  if (xr->dtype != yr->dtype) return tt_lc_decline(c, "mixed dtypes");
  tt_dtype dt = xr->dtype;
  if (dt == TT_BOOL) return tt_lc_decline(c, "bool");
  if (xr->ndim != yr->ndim)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "linalg.cross: inputs must have the same number of dimensions.");
  int args[2] = {0, 1}, nd;
  int64_t dims[TT_MAX_DIMS];
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, -1), nd);
  if (dim < 0) return tt_b_take_error(tt_lc_builder(c));
  if (xr->sizes[dim] != 3 || yr->sizes[dim] != 3)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "linalg.cross: inputs dimension %" PRId64 " must have length 3. Got %" PRId64
                      " and %" PRId64, dim, xr->sizes[dim], yr->sizes[dim]);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_operand(c, 0, dt, nd, dims), y = tt_operand(c, 1, dt, nd, dims);
  tt_val xs[3], ys[3];
  for (int k = 0; k < 3; k++) {
    int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS];
    for (int i = 0; i < nd; i++) li[i] = dims[i];
    st[dim] = k;
    li[dim] = k + 1;
    xs[k] = tt_b_slice(b, x, st, li, NULL);
    ys[k] = tt_b_slice(b, y, st, li, NULL);
  }
  tt_val parts[3];
  for (int k = 0; k < 3; k++) {
    int i1 = (k + 1) % 3, i2 = (k + 2) % 3;
    parts[k] = tt_b_binary(b, "subtract", tt_b_binary(b, "multiply", xs[i1], ys[i2]),
                           tt_b_binary(b, "multiply", xs[i2], ys[i1]));
  }
  tt_lc_output(c, tt_b_concat(b, parts, 3, (int)dim));
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
    tt_val v = bcast_dim(b, const_vec(b, dt, f, pp->out[i]), 5, od, 2 + i);
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
  if (!is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
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
  if (!is_tensor(c, 0) || !is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
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
  tt_dtype acc = acc_dtype(dt);
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
  if (!is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  tt_dtype dt = xr->dtype;
  if (dt == TT_BOOL || !matmul_dtype_ok(dt)) return tt_lc_decline(c, "dtype");
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
  if (!is_tensor(c, 0) || !is_tensor(c, 1) || !is_tensor(c, 7))
    return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *gr = tt_lc_ref(c, 0), *xr = tt_lc_ref(c, 1), *ir = tt_lc_ref(c, 7);
  tt_dtype dt = xr->dtype;
  if (!is_float(dt) || gr->dtype != dt || ir->dtype != TT_I64) return tt_lc_decline(c, "dtype");
  mpool3_params pp;
  TT_TRY(read_max3(c, xr, 2, &pp));
  if (gr->ndim != xr->ndim || ir->ndim != xr->ndim) return tt_lc_decline(c, "shapes");
  for (int i = 0; i < xr->ndim; i++) {
    int64_t want = i < xr->ndim - 3 ? xr->sizes[i] : pp.out[i - (xr->ndim - 3)];
    if (gr->sizes[i] != want || ir->sizes[i] != want) return tt_lc_decline(c, "shapes");
  }
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = acc_dtype(dt);
  tt_val g = as5d(b, tt_b_convert(b, tt_lc_tensor(c, 0), acc));
  tt_val ix = as5d(b, tt_lc_tensor(c, 7));
  tt_shape gs = tt_b_shape(b, g);
  int64_t N = gs.dims[0], C = gs.dims[1], plane = pp.in[0] * pp.in[1] * pp.in[2];
  int64_t nout = tt_shape_numel(&gs), total = N * C * plane;
  tt_shape is = tt_shape_make(TT_I64, 5, gs.dims);
  tt_val pl = tt_b_binary(b, "add", tt_b_binary(b, "multiply", tt_b_iota(b, is, 0), tt_b_full(b, is, (double)C)),
                          tt_b_iota(b, is, 1));
  tt_val lin = tt_b_binary(b, "add", tt_b_binary(b, "multiply", pl, tt_b_full(b, is, (double)plane)), ix);
  int64_t idims[2] = {nout, 1};
  lin = tt_b_reshape(b, lin, 2, idims);
  tt_val upd = tt_b_reshape(b, g, 1, &nout);
  tt_val base = tt_b_full(b, tt_shape_make(acc, 1, &total), 0);
  char region[600];
  tt_b_region_binary(region, sizeof region, acc, "add");
  const char *attrs =
      "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
      "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, "
      "unique_indices = false";
  tt_val ins[3] = {base, lin, upd}, r;
  tt_shape out = tt_shape_make(acc, 1, &total);
  tt_b_op_multi(b, "stablehlo.scatter", ins, 3, attrs, region, &out, 1, &r);
  int64_t d5[5] = {N, C, pp.in[0], pp.in[1], pp.in[2]};
  r = tt_b_reshape(b, r, 5, d5);
  tt_lc_output(c, tt_b_convert(b, back_to_in(b, r, xr, pp.in), dt));
  return NULL;
}

/* ====================================================== cholesky, triangular solve */

/* x [..., n, n] restricted to its lower (or upper) triangle; the diagonal
 * set to 1 when unit. */
static tt_val tri_mask(tt_builder *b, tt_val x, bool lower, bool unit) {
  tt_shape s = tt_b_shape(b, x);
  tt_shape is = s;
  is.dtype = TT_I64;
  tt_val r = tt_b_iota(b, is, s.ndim - 2), col = tt_b_iota(b, is, s.ndim - 1);
  tt_val keep = tt_b_compare(b, lower ? "GE" : "LE", r, col);
  x = tt_b_select(b, keep, x, tt_b_full(b, s, 0));
  if (unit) x = tt_b_select(b, tt_b_compare(b, "EQ", r, col), tt_b_full(b, s, 1), x);
  return x;
}

/* swaps the last two dims */
static tt_val mT(tt_builder *b, tt_val x) {
  int nd = tt_b_ndim(b, x);
  int64_t perm[TT_MAX_DIMS];
  for (int i = 0; i < nd; i++) perm[i] = i;
  perm[nd - 2] = nd - 1;
  perm[nd - 1] = nd - 2;
  return tt_b_transpose(b, x, perm);
}

/* linalg_solve_triangular(A, B, *, upper, left=True, unitriangular=False) */
static tt_error *lower_linalg_solve_triangular(tt_lower_ctx *c) {
  if (!is_tensor(c, 0) || !is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *ar = tt_lc_ref(c, 0), *br = tt_lc_ref(c, 1);
  tt_dtype dt = ar->dtype;
  if (br->dtype != dt || (dt != TT_F32 && dt != TT_F64)) return tt_lc_decline(c, "dtype");
  if (ar->ndim < 2 || br->ndim < 2) return tt_lc_decline(c, "rank");
  bool upper = tt_lc_bool(c, 2, false), left = tt_lc_bool(c, 3, true),
       unit = tt_lc_bool(c, 4, false);
  int64_t n = ar->sizes[ar->ndim - 1];
  if (ar->sizes[ar->ndim - 2] != n) return tt_lc_decline(c, "A not square");
  int64_t m0 = br->sizes[br->ndim - 2], m1 = br->sizes[br->ndim - 1];
  if ((left ? m0 : m1) != n) return tt_lc_decline(c, "shape mismatch");
  if (n == 0 || m0 == 0 || m1 == 0) return tt_lc_decline(c, "empty");
  int nb;
  int64_t batch[TT_MAX_DIMS];
  if (!tt_broadcast_dims(ar->ndim - 2, ar->sizes, br->ndim - 2, br->sizes, &nb, batch))
    return tt_lc_decline(c, "batch shapes");
  tt_builder *b = tt_lc_builder(c);
  int64_t ad[TT_MAX_DIMS], bd[TT_MAX_DIMS];
  memcpy(ad, batch, sizeof(int64_t) * (size_t)nb);
  memcpy(bd, batch, sizeof(int64_t) * (size_t)nb);
  ad[nb] = ad[nb + 1] = n;
  bd[nb] = m0;
  bd[nb + 1] = m1;
  tt_val a = tt_b_broadcast_to(b, tt_lc_tensor(c, 0), nb + 2, ad);
  tt_val bb = tt_b_broadcast_to(b, tt_lc_tensor(c, 1), nb + 2, bd);
  a = tri_mask(b, a, !upper, unit);
  char attrs[200];
  snprintf(attrs, sizeof attrs,
           "left_side = %s, lower = %s, unit_diagonal = %s, "
           "transpose_a = #stablehlo<transpose NO_TRANSPOSE>",
           left ? "true" : "false", upper ? "false" : "true", unit ? "true" : "false");
  tt_val ins[2] = {a, bb};
  tt_lc_output(c, tt_b_op(b, "stablehlo.triangular_solve", ins, 2, attrs, tt_b_shape(b, bb)));
  return NULL;
}

/* linalg_cholesky_ex(self, *, upper=False, check_errors=False) -> (L, info).
 * info (the order of the first leading minor that is not positive-definite,
 * 0 if none) comes from factoring every leading minor at once: a batch of n
 * matrices, minor k padded with the identity, factored with one cholesky;
 * the first non-finite factor gives info. L is the last one. Limited to
 * small n (the batch costs n times the work). Where the matrix is not
 * positive-definite, L holds NaNs (CPU leaves a partial factor). */
static tt_error *lower_linalg_cholesky_ex(tt_lower_ctx *c) {
  if (!is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *ar = tt_lc_ref(c, 0);
  tt_dtype dt = ar->dtype;
  if (dt != TT_F32 && dt != TT_F64) return tt_lc_decline(c, "dtype");
  if (ar->ndim < 2 || ar->ndim + 1 > TT_MAX_DIMS) return tt_lc_decline(c, "rank");
  int nd = ar->ndim;
  int64_t n = ar->sizes[nd - 1];
  if (ar->sizes[nd - 2] != n) return tt_lc_decline(c, "not square");
  if (n == 0 || n > 64) return tt_lc_decline(c, "size %" PRId64, n);
  if (tt_lc_bool(c, 2, false)) return tt_lc_decline(c, "check_errors");
  bool upper = tt_lc_bool(c, 1, false);
  tt_builder *b = tt_lc_builder(c);
  tt_val a = tt_lc_tensor(c, 0);
  if (upper) a = mT(b, a);
  tt_shape as = tt_b_shape(b, a), ais = as;
  ais.dtype = TT_I64;
  tt_val lowp = tt_b_compare(b, "GE", tt_b_iota(b, ais, nd - 2), tt_b_iota(b, ais, nd - 1));
  a = tt_b_select(b, lowp, a, mT(b, a)); /* symmetric, from the lower triangle */
  /* batch [..., k, n, n]: minor of order k+1 padded with the identity */
  int nb = nd - 2, n5 = nd + 1;
  int64_t bd[TT_MAX_DIMS], map[TT_MAX_DIMS];
  for (int i = 0; i < nb; i++) bd[i] = as.dims[i], map[i] = i;
  bd[nb] = n, bd[nb + 1] = n, bd[nb + 2] = n;
  map[nb] = nb + 1, map[nb + 1] = nb + 2;
  tt_val ab = tt_b_broadcast_in_dim(b, a, n5, bd, map);
  tt_shape bis = tt_shape_make(TT_I64, n5, bd), bfs = tt_shape_make(dt, n5, bd);
  tt_val kk = tt_b_iota(b, bis, nb), ii = tt_b_iota(b, bis, nb + 1), jj = tt_b_iota(b, bis, nb + 2);
  tt_val inside = tt_b_binary(b, "and", tt_b_compare(b, "LE", ii, kk), tt_b_compare(b, "LE", jj, kk));
  tt_val eye = tt_b_select(b, tt_b_compare(b, "EQ", ii, jj), tt_b_full(b, bfs, 1), tt_b_full(b, bfs, 0));
  ab = tt_b_select(b, inside, ab, eye);
  tt_val lb = tt_b_op(b, "stablehlo.cholesky", &ab, 1, "lower = true", bfs);
  lb = tri_mask(b, lb, true, false);
  /* finite per minor: all |x| < inf */
  tt_val fin = tt_b_compare(b, "LT", tt_b_unary(b, "abs", lb), tt_b_full(b, bfs, INFINITY));
  tt_val finf = tt_b_select(b, fin, tt_b_full(b, bfs, 0), tt_b_full(b, bfs, 1));
  int64_t last2[2] = {nb + 1, nb + 2};
  tt_val badk = tt_b_reduce(b, finf, tt_b_constant(b, dt, 0), last2, 2, "add"); /* [..., n] */
  tt_shape ks = tt_b_shape(b, badk), kis = ks;
  kis.dtype = TT_I32;
  tt_val pos = tt_b_binary(b, "add", tt_b_iota(b, kis, nb), tt_b_full(b, kis, 1));
  pos = tt_b_select(b, tt_b_compare(b, "GT", badk, tt_b_full(b, ks, 0)), pos,
                    tt_b_full(b, kis, (double)(n + 1)));
  int64_t kd[1] = {nb};
  tt_val first = tt_b_reduce(b, pos, tt_b_constant(b, TT_I32, (double)(n + 1)), kd, 1, "minimum");
  tt_shape fs = tt_b_shape(b, first);
  tt_val info = tt_b_select(b, tt_b_compare(b, "EQ", first, tt_b_full(b, fs, (double)(n + 1))),
                            tt_b_full(b, fs, 0), first);
  int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS];
  for (int i = 0; i < n5; i++) li[i] = bd[i];
  st[nb] = n - 1;
  tt_val l = tt_b_reshape(b, tt_b_slice(b, lb, st, li, NULL), nd, as.dims);
  tt_lc_output(c, upper ? mT(b, l) : l);
  tt_lc_output(c, info);
  return NULL;
}

/* ====================================================== diag_embed */

/* diag_embed(self, offset=0, dim1=-2, dim2=-1) */
static tt_error *lower_diag_embed(tt_lower_ctx *c) {
  if (!is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  if (xr->ndim < 1 || xr->ndim + 1 > TT_MAX_DIMS) return tt_lc_decline(c, "rank");
  int nd = xr->ndim + 1;
  int64_t off = tt_lc_int(c, 1, 0);
  int64_t d1 = tt_wrap_dim(c, tt_lc_int(c, 2, -2), nd);
  if (d1 < 0) return tt_b_take_error(tt_lc_builder(c));
  int64_t d2 = tt_wrap_dim(c, tt_lc_int(c, 3, -1), nd);
  if (d2 < 0) return tt_b_take_error(tt_lc_builder(c));
  if (d1 == d2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "diagonal dimensions cannot be identical %" PRId64 ", %" PRId64,
                      tt_lc_int(c, 2, -2), tt_lc_int(c, 3, -1));
  int64_t n = xr->sizes[xr->ndim - 1], m = n + (off < 0 ? -off : off);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_lc_tensor(c, 0);
  if (m != n) {
    int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0}, in[TT_MAX_DIMS] = {0};
    hi[xr->ndim - 1] = m - n;
    x = tt_b_pad(b, x, tt_b_constant(b, xr->dtype, 0), lo, hi, in);
  }
  int64_t od[TT_MAX_DIMS], map[TT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < nd; i++) {
    if (i == d1 || i == d2) {
      od[i] = m;
    } else {
      od[i] = xr->sizes[k];
      map[k++] = i;
    }
  }
  map[k] = off >= 0 ? d1 : d2;
  tt_val xb = tt_b_broadcast_in_dim(b, x, nd, od, map);
  tt_shape is = tt_shape_make(TT_I64, nd, od);
  tt_val diff = tt_b_binary(b, "subtract", tt_b_iota(b, is, (int)d2), tt_b_iota(b, is, (int)d1));
  tt_val on = tt_b_compare(b, "EQ", diff, tt_b_full(b, is, (double)off));
  tt_lc_output(c, tt_b_select(b, on, xb, tt_b_full(b, tt_shape_make(xr->dtype, nd, od), 0)));
  return NULL;
}

TT_LOWERINGS(linalg) = {
    {lower_mm, {"mm", "mm.out"}},
    {lower_bmm, {"bmm", "bmm.out"}},
    {lower_addmm, {"addmm", "addmm_", "addmm.out"}},
    {lower_baddbmm, {"baddbmm", "baddbmm_", "baddbmm.out"}},
    {lower_addbmm, {"addbmm", "addbmm_", "addbmm.out"}},
    {lower_dot, {"dot", "dot.out"}},
    {lower_mv, {"mv", "mv.out"}},
    {lower_addmv, {"addmv", "addmv_", "addmv.out"}},
    {lower_convolution,
     {"convolution", "convolution.out", "convolution_overrideable", "convolution_overrideable.out"}},
    {lower_convolution_backward,
     {"convolution_backward", "convolution_backward.out", "convolution_backward_overrideable",
      "convolution_backward_overrideable.out"}},
    {lower_max_pool2d, {"max_pool2d_with_indices", "max_pool2d_with_indices.out"}},
    {lower_max_pool2d_backward,
     {"max_pool2d_with_indices_backward", "max_pool2d_with_indices_backward.grad_input"}},
    {lower_avg_pool2d, {"avg_pool2d", "avg_pool2d.out"}},
    {lower_avg_pool2d_backward, {"avg_pool2d_backward", "avg_pool2d_backward.grad_input"}},
    {lower_trace, {"trace", "trace.out"}},
    {lower_linalg_cross, {"linalg_cross", "linalg_cross.out"}},
    {lower_avg_pool3d, {"avg_pool3d", "avg_pool3d.out"}},
    {lower_avg_pool3d_backward, {"avg_pool3d_backward", "avg_pool3d_backward.grad_input"}},
    {lower_max_pool3d, {"max_pool3d_with_indices", "max_pool3d_with_indices.out"}},
    {lower_max_pool3d_backward,
     {"max_pool3d_with_indices_backward", "max_pool3d_with_indices_backward.grad_input"}},
    {lower_linalg_solve_triangular,
     {"linalg_solve_triangular", "linalg_solve_triangular.out"}},
    {lower_linalg_cholesky_ex, {"linalg_cholesky_ex", "linalg_cholesky_ex.L"}},
    {lower_diag_embed, {"diag_embed", "diag_embed.out"}},
    {NULL, {NULL}},
};
