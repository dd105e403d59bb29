/* Lowerings of the linalg_solve family (see lowering.h): trace, linalg_cross,
 * linalg_solve_triangular, linalg_cholesky_ex and diag_embed. Split out of
 * linalg.c; shared helpers are in linalg_common.c. */
#include "ops/linalg_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================== trace, cross */

/* trace(self): sum of the main diagonal of a matrix; integers sum in int64. */
static tt_error *lower_trace(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
  const tt_tensor_ref *xr = tt_lc_ref(c, 0);
  if (xr->ndim != 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "trace: expected a matrix, but got tensor with dim %d",
                      xr->ndim);
  tt_dtype dt = xr->dtype;
  tt_dtype out = tt_dtype_is_floating(dt) ? dt : TT_I64, acc = tt_opmath(out); /* half: float sum */
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
  if (!linalg_is_tensor(c, 0) || !linalg_is_tensor(c, 1)) return tt_lc_decline(c, "not device tensors");
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
                      " and %" PRId64, tt_lc_int(c, 2, -1), xr->sizes[dim], yr->sizes[dim]);
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
    parts[k] = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_bin(b, TT_OP_MULTIPLY, xs[i1], ys[i2]),
                           tt_b_bin(b, TT_OP_MULTIPLY, xs[i2], ys[i1]));
  }
  tt_lc_output(c, tt_b_concat(b, parts, 3, (int)dim));
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

/* Solves A X = B (left) or X A = B with A's upper or lower triangle
 * (op(A) = A^T when transpose); A = argument ai, B = argument bi, batch dims
 * broadcast. Outputs X, and A broadcast to the batch when also_a. */
static tt_error *tri_solve(tt_lower_ctx *c, int ai, int bi, bool upper, bool left, bool unit,
                           bool transpose, bool also_a) {
  if (!linalg_is_tensor(c, ai) || !linalg_is_tensor(c, bi)) return tt_lc_decline(c, "not device tensors");
  const tt_tensor_ref *ar = tt_lc_ref(c, ai), *br = tt_lc_ref(c, bi);
  tt_dtype dt = ar->dtype;
  if (br->dtype != dt || (dt != TT_F32 && dt != TT_F64)) return tt_lc_decline(c, "dtype");
  if (ar->ndim < 2 || br->ndim < 2) return tt_lc_decline(c, "rank");
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
  tt_val a_full = tt_b_broadcast_to(b, tt_lc_tensor(c, ai), nb + 2, ad);
  tt_val bb = tt_b_broadcast_to(b, tt_lc_tensor(c, bi), nb + 2, bd);
  tt_val a = tri_mask(b, a_full, !upper, unit);
  char attrs[200];
  snprintf(attrs, sizeof attrs,
           "left_side = %s, lower = %s, unit_diagonal = %s, "
           "transpose_a = #stablehlo<transpose %s>",
           left ? "true" : "false", upper ? "false" : "true", unit ? "true" : "false",
           transpose ? "TRANSPOSE" : "NO_TRANSPOSE");
  tt_val ins[2] = {a, bb};
  tt_lc_output(c, tt_b_emit1(b, TT_OP_TRIANGULAR_SOLVE, ins, 2, attrs, tt_b_shape(b, bb)));
  if (also_a) tt_lc_output(c, a_full);
  return NULL;
}

/* linalg_solve_triangular(A, B, *, upper, left=True, unitriangular=False) */
static tt_error *lower_linalg_solve_triangular(tt_lower_ctx *c) {
  return tri_solve(c, 0, 1, tt_lc_bool(c, 2, false), tt_lc_bool(c, 3, true), tt_lc_bool(c, 4, false),
                   false, false);
}

/* triangular_solve(self=B, A, upper=True, transpose=False, unitriangular=False)
 * -> (solution, cloned_coefficient = A broadcast to the batch) */
static tt_error *lower_triangular_solve(tt_lower_ctx *c) {
  return tri_solve(c, 1, 0, tt_lc_bool(c, 2, true), true, tt_lc_bool(c, 4, false),
                   tt_lc_bool(c, 3, false), true);
}

/* linalg_cholesky_ex(self, *, upper=False, check_errors=False) -> (L, info).
 * info (the order of the first leading minor that is not positive-definite,
 * 0 if none) comes from factoring every leading minor at once: a batch of n
 * matrices, minor k padded with the identity, factored with one cholesky;
 * the first non-finite factor gives info. L is the last one. Limited to
 * small n (the batch costs n times the work). Where the matrix is not
 * positive-definite, L holds NaNs (CPU leaves a partial factor). */
static tt_error *lower_linalg_cholesky_ex(tt_lower_ctx *c) {
  if (!linalg_is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
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
  tt_val inside = tt_b_bin(b, TT_OP_AND, tt_b_compare(b, "LE", ii, kk), tt_b_compare(b, "LE", jj, kk));
  tt_val eye = tt_b_select(b, tt_b_compare(b, "EQ", ii, jj), tt_b_full(b, bfs, 1), tt_b_full(b, bfs, 0));
  ab = tt_b_select(b, inside, ab, eye);
  tt_val lb = tt_b_emit1(b, TT_OP_CHOLESKY, &ab, 1, "lower = true", bfs);
  lb = tri_mask(b, lb, true, false);
  /* finite per minor: all |x| < inf */
  tt_val fin = tt_b_compare(b, "LT", tt_b_un(b, TT_OP_ABS, lb), tt_b_full(b, bfs, INFINITY));
  tt_val finf = tt_b_select(b, fin, tt_b_full(b, bfs, 0), tt_b_full(b, bfs, 1));
  int64_t last2[2] = {nb + 1, nb + 2};
  tt_val badk = tt_b_reduce(b, finf, tt_b_constant(b, dt, 0), last2, 2, "add"); /* [..., n] */
  tt_shape ks = tt_b_shape(b, badk), kis = ks;
  kis.dtype = TT_I32;
  tt_val pos = tt_b_bin(b, TT_OP_ADD, tt_b_iota(b, kis, nb), tt_b_full(b, kis, 1));
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
  if (!linalg_is_tensor(c, 0)) return tt_lc_decline(c, "not a device tensor");
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
  tt_val diff = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_iota(b, is, (int)d2), tt_b_iota(b, is, (int)d1));
  tt_val on = tt_b_compare(b, "EQ", diff, tt_b_full(b, is, (double)off));
  tt_lc_output(c, tt_b_select(b, on, xb, tt_b_full(b, tt_shape_make(xr->dtype, nd, od), 0)));
  return NULL;
}

TT_LOWERINGS(linalg_solve) = {
    {lower_trace, {"trace", "trace.out"}},
    {lower_linalg_cross, {"linalg_cross", "linalg_cross.out"}},
    {lower_linalg_solve_triangular,
     {"linalg_solve_triangular", "linalg_solve_triangular.out"}},
    {lower_linalg_cholesky_ex, {"linalg_cholesky_ex", "linalg_cholesky_ex.L"}},
    {lower_triangular_solve, {"triangular_solve", "triangular_solve.X"}},
    {lower_diag_embed, {"diag_embed", "diag_embed.out"}},
    {NULL, {NULL}},
};
