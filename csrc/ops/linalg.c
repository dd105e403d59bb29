/* Lowerings of the linalg family (see lowering.h): matrix products
 * (mm, bmm, addmm, baddbmm, addbmm, dot, mv, addmv). Convolution lives in
 * conv.c, pooling in pool.c, trace/cross/cholesky/triangular solve/
 * diag_embed in linalg_solve.c; helpers shared with them in linalg_common.c.
 *
 * float16/bfloat16 inputs are converted to float32, computed (accumulated)
 * in float32 and rounded once at the end, like CPU PyTorch. */
#include "ops/linalg_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================== small helpers */

/* out = beta * self + alpha * prod (prod already in the accumulation dtype),
 * self broadcast to prod's shape; beta == 0 ignores self (NaN included), as
 * PyTorch does. Scalars are runtime parameters. */
static tt_error *axpby(tt_lower_ctx *c, int self_i, int beta_i, int alpha_i, tt_val prod,
                       tt_dtype dt) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = tt_opmath(dt);
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
                          tt_b_bin(b, TT_OP_MULTIPLY, beta, self));
  tt_val r = tt_b_bin(b, TT_OP_ADD, bs, tt_b_bin(b, TT_OP_MULTIPLY, alpha, prod));
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

/* Checks beta/alpha against the dtype; declines what it cannot mirror
 * exactly. */
static tt_error *check_scalars(tt_lower_ctx *c, tt_dtype dt, int beta_i, int alpha_i) {
  const tt_scalar *be = tt_lc_scalar_ref(c, beta_i), *al = tt_lc_scalar_ref(c, alpha_i);
  /* a complex product also takes complex beta/alpha (wrapped 0-dim tensors) */
  bool cx = tt_dtype_is_complex(dt);
  if ((!be && !(cx && linalg_is_tensor(c, beta_i))) || (!al && !(cx && linalg_is_tensor(c, alpha_i))))
    return tt_lc_decline(c, "beta/alpha are not Scalars");
  /* CPU truncates float beta/alpha to the integral dtype (1.7 -> 1), as the
   * runtime parameter conversion does; uint8 may overflow-check instead. */
  if (dt == TT_U8 && (be->kind == TT_SCALAR_FLOAT || al->kind == TT_SCALAR_FLOAT))
    return tt_lc_decline(c, "float beta/alpha with a uint8 product");
  return NULL;
}

/* Same dtype for all tensor args (PyTorch requires it for mm-like ops). */
static tt_error *same_dtype(tt_lower_ctx *c, const int *args, int n, tt_dtype *dt) {
  for (int k = 0; k < n; k++)
    if (!linalg_is_tensor(c, args[k])) return tt_lc_decline(c, "argument %d is not a device tensor", args[k]);
  *dt = tt_lc_ref(c, args[0])->dtype;
  for (int k = 1; k < n; k++)
    if (tt_lc_ref(c, args[k])->dtype != *dt) return tt_lc_decline(c, "mixed dtypes");
  if (!linalg_matmul_dtype_ok(*dt)) return tt_lc_decline(c, "dtype %s", tt_dtype_name(*dt));
  return NULL;
}

/* [batch..., n, k] x [batch..., k, m] -> [batch..., n, m] in the accumulation dtype. */
static tt_val bmatmul(tt_builder *b, tt_val x, tt_val y, int n_batch, tt_dtype dt) {
  tt_dtype acc = tt_opmath(dt);
  x = tt_b_convert(b, x, acc);
  y = tt_b_convert(b, y, acc);
  int64_t batch[TT_MAX_DIMS];
  for (int i = 0; i < n_batch; i++) batch[i] = i;
  int64_t lc[1] = {tt_b_ndim(b, x) - 1}, rc[1] = {n_batch};
  return tt_b_dot_general(b, x, y, n_batch, batch, batch, 1, lc, rc, acc);
}

/* ====================================================== matrix products */

/* Both operands 2-D with matching inner sizes, with PyTorch's messages
 * (rank messages may take the operand's rank as %d). */
static tt_error *check_mm(tt_lower_ctx *c, int i1, int i2, const char *rank1_msg,
                          const char *rank2_msg) {
  const tt_tensor_ref *a = tt_lc_ref(c, i1), *m = tt_lc_ref(c, i2);
  if (a->ndim != 2) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, rank1_msg, a->ndim);
  if (m->ndim != 2) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, rank2_msg, m->ndim);
  if (a->sizes[1] != m->sizes[0])
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "mat1 and mat2 shapes cannot be multiplied (%" PRId64 "x%" PRId64
                      " and %" PRId64 "x%" PRId64 ")",
                      a->sizes[0], a->sizes[1], m->sizes[0], m->sizes[1]);
  return NULL;
}

/* mm(self, mat2) */
static tt_error *lower_mm(tt_lower_ctx *c) {
  int args[2] = {0, 1};
  tt_dtype dt;
  TT_TRY(same_dtype(c, args, 2, &dt));
  TT_TRY(check_mm(c, 0, 1, "self must be a matrix", "mat2 must be a matrix"));
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
  TT_TRY(check_mm(c, 1, 2, "mat1 must be a matrix, got %d-D tensor",
                  "mat2 must be a matrix, got %d-D tensor"));
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
  tt_dtype acc = tt_opmath(dt);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 1), acc), y = tt_b_convert(b, tt_lc_tensor(c, 2), acc);
  int64_t lc[2] = {0, 2}, rc[2] = {0, 1};
  return axpby(c, 0, 3, 4, tt_b_dot_general(b, x, y, 0, NULL, NULL, 2, lc, rc, acc), dt);
}

/* dot(self, tensor); vdot(self, other): sum(conj(self) * other) */
static tt_error *lower_dot(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *x = tt_lc_ref(c, 0), *y = tt_lc_ref(c, 1);
  if (x->ndim != 1 || y->ndim != 1)
    return tt_lc_fail(c, TT_ERR_RUNTIME, "1D tensors expected, but got %dD and %dD tensors",
                      x->ndim, y->ndim);
  if (x->dtype != y->dtype)
    return tt_lc_fail(c, TT_ERR_RUNTIME, "%s : expected both vectors to have same dtype, but found %s and %s",
                      tt_lc_op_name(c)[0] == 'v' ? "vdot" : "dot", tt_dtype_torch_name(x->dtype),
                      tt_dtype_torch_name(y->dtype));
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
  tt_dtype acc = tt_opmath(dt);
  int64_t z[1] = {0};
  tt_val x0 = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  if (tt_lc_op_name(c)[0] == 'v' && tt_dtype_is_complex(acc))
    x0 = tt_b_complex(b, tt_b_real(b, x0), tt_b_un(b, TT_OP_NEGATE, tt_b_imag(b, x0)));
  tt_val r = tt_b_dot_general(b, x0, tt_b_convert(b, tt_lc_tensor(c, 1), acc), 0, NULL, NULL, 1, z, z, acc);
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
  tt_dtype acc = tt_opmath(dt);
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
  const tt_tensor_ref *mat = tt_lc_ref(c, 1), *sr = tt_lc_ref(c, 0);
  if (sr && mat && mat->sizes[0] * mat->sizes[1] == 0 && tt_lc_scalar_ref(c, 3) &&
      tt_lc_scalar_value(c, 3) != 0) {
    /* as CPU: an empty matrix and beta != 0 give beta * self in self's own
     * shape (not broadcast to the product's: a 0-dim self stays 0-dim);
     * beta == 0 gives zeros of the product's shape (the path below) */
    tt_dtype acc = tt_opmath(dt);
    tt_shape ss = tt_shape_make(acc, sr->ndim, sr->sizes);
    tt_val self = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
    tt_val beta = tt_b_broadcast_to(b, tt_lc_scalar(c, 3, acc), ss.ndim, ss.dims);
    tt_lc_output(c, tt_b_convert(b, tt_b_bin(b, TT_OP_MULTIPLY, beta, self), dt));
    return NULL;
  }
  return axpby(c, 0, 3, 4, mv_product(b, tt_lc_tensor(c, 1), tt_lc_tensor(c, 2), dt), dt);
}

TT_LOWERINGS(linalg) = {
    {lower_mm, {"mm", "mm.out"}},
    {lower_bmm, {"bmm", "bmm.out"}},
    {lower_addmm, {"addmm", "addmm_", "addmm.out"}},
    {lower_baddbmm, {"baddbmm", "baddbmm_", "baddbmm.out"}},
    {lower_addbmm, {"addbmm", "addbmm_", "addbmm.out"}},
    {lower_dot, {"dot", "dot.out", "vdot", "vdot.out"}}, /* vdot of real vectors is dot */
    {lower_mv, {"mv", "mv.out"}},
    {lower_addmv, {"addmv", "addmv_", "addmv.out"}},
    {NULL, {NULL}},
};
