/* Lowerings of the distance family (see lowering.h): _cdist_forward and
 * _pdist_forward (p-norm distances between rows), and isin (membership by
 * comparing every element with every test element, as CPU does for small
 * test sets). Float32/float64 only for the distances. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common.h"
#include "ops/nn_common.h"

/* p-norm over the last dim of d (differences), per CPU's cases: p = 0 counts
 * nonzeros, 1 sums |d|, 2 is sqrt(sum d^2), inf the max |d|, else
 * (sum |d|^p)^(1/p). */
static tt_val pnorm_last(tt_builder *b, tt_val d, double p) {
  tt_shape s = tt_b_shape(b, d);
  int64_t last = s.ndim - 1;
  tt_dtype dt = s.dtype;
  tt_val a = tt_b_un(b, TT_OP_ABS, d);
  if (p == 0) {
    tt_val nz = tt_b_convert(b, tt_b_compare(b, "NE", d, tt_full_like(b, d, 0)), dt);
    return tt_b_reduce(b, nz, tt_b_constant(b, dt, 0), &last, 1, "add");
  }
  if (p == 1) return tt_b_reduce(b, a, tt_b_constant(b, dt, 0), &last, 1, "add");
  if (p == 2) return tt_b_un(b, TT_OP_SQRT, tt_b_reduce(b, tt_b_bin(b, TT_OP_MULTIPLY, d, d), tt_b_constant(b, dt, 0), &last, 1, "add"));
  if (isinf(p)) return tt_b_reduce(b, a, tt_b_constant(b, dt, 0), &last, 1, "maximum");
  tt_val s_ = tt_b_reduce(b, tt_b_bin(b, TT_OP_POWER, a, tt_full_like(b, a, p)), tt_b_constant(b, dt, 0), &last, 1, "add");
  return tt_b_bin(b, TT_OP_POWER, s_, tt_full_like(b, s_, 1.0 / p));
}

/* _cdist_forward(x1 [B.., P, M], x2 [B.., R, M], p, compute_mode): for p = 2
 * CPU uses the matrix-product form (mode 1, or mode None/0 when P or R >
 * 25): [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T, clamped at 0, square root. */
static tt_error *lower_cdist(tt_lower_ctx *c) {
  const tt_tensor_ref *r1 = tt_lc_ref(c, 0), *r2 = tt_lc_ref(c, 1);
  if (!r1 || !r2 || !r1->storage || !r2->storage) return tt_lc_decline(c, "not device tensors");
  tt_dtype dt = r1->dtype;
  if (r2->dtype != dt || (dt != TT_F32 && dt != TT_F64)) return tt_lc_decline(c, "dtype");
  int nd = r1->ndim;
  if (nd < 2 || r2->ndim != nd || nd + 1 > TT_MAX_DIMS) return tt_lc_decline(c, "rank");
  for (int i = 0; i < nd - 2; i++)
    if (r1->sizes[i] != r2->sizes[i]) return tt_lc_decline(c, "batch dims differ");
  int64_t P = r1->sizes[nd - 2], R = r2->sizes[nd - 2], M = r1->sizes[nd - 1];
  if (r2->sizes[nd - 1] != M) return tt_lc_decline(c, "feature sizes differ (torch raises)");
  double p = tt_lc_double(c, 2, 2.0);
  if (!(p >= 0)) return tt_lc_decline(c, "negative p (torch raises)");
  int64_t mode = tt_lc_is_none(c, 3) ? 0 : tt_lc_int(c, 3, 0);
  if (P == 0 || R == 0 || M == 0) return tt_lc_decline(c, "empty input");
  tt_builder *b = tt_lc_builder(c);
  tt_val x1 = tt_lc_tensor(c, 0), x2 = tt_lc_tensor(c, 1);
  int nb = nd - 2;
  int64_t od[TT_MAX_DIMS];
  memcpy(od, r1->sizes, sizeof(int64_t) * (size_t)nb);
  od[nb] = P;
  od[nb + 1] = R;
  bool mm = p == 2 && (mode == 1 || (mode == 0 && (P > 25 || R > 25)));
  if (mm) {
    int64_t last = nd - 1;
    tt_val n1 = tt_b_reduce(b, tt_b_bin(b, TT_OP_MULTIPLY, x1, x1), tt_b_constant(b, dt, 0), &last, 1, "add");
    tt_val n2 = tt_b_reduce(b, tt_b_bin(b, TT_OP_MULTIPLY, x2, x2), tt_b_constant(b, dt, 0), &last, 1, "add");
    int64_t s1[TT_MAX_DIMS], s2[TT_MAX_DIMS];
    memcpy(s1, r1->sizes, sizeof(int64_t) * (size_t)nd);
    memcpy(s2, r2->sizes, sizeof(int64_t) * (size_t)nd);
    s1[nd - 1] = s2[nd - 1] = 1;
    n1 = tt_b_reshape(b, n1, nd, s1);
    n2 = tt_b_reshape(b, n2, nd, s2);
    tt_val a_parts[3] = {tt_b_bin(b, TT_OP_MULTIPLY, x1, tt_full_like(b, x1, -2)), n1, tt_full_like(b, n1, 1)};
    tt_val b_parts[3] = {x2, tt_full_like(b, n2, 1), n2};
    tt_val a = tt_b_concat(b, a_parts, 3, nd - 1), bb = tt_b_concat(b, b_parts, 3, nd - 1);
    int64_t batch[TT_MAX_DIMS], contract[1] = {nd - 1};
    for (int i = 0; i < nb; i++) batch[i] = i;
    tt_val r = tt_b_dot_general(b, a, bb, nb, batch, batch, 1, contract, contract, dt);
    r = tt_b_bin(b, TT_OP_MAXIMUM, r, tt_full_like(b, r, 0));
    tt_lc_output(c, tt_b_un(b, TT_OP_SQRT, r));
    return NULL;
  }
  int64_t e[TT_MAX_DIMS], m1[TT_MAX_DIMS], m2[TT_MAX_DIMS];
  memcpy(e, od, sizeof(int64_t) * (size_t)(nb + 2));
  e[nb + 2] = M;
  for (int i = 0; i < nb; i++) m1[i] = m2[i] = i;
  m1[nb] = nb, m1[nb + 1] = nb + 2;
  m2[nb] = nb + 1, m2[nb + 1] = nb + 2;
  tt_val d = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_broadcast_in_dim(b, x1, nd + 1, e, m1),
                         tt_b_broadcast_in_dim(b, x2, nd + 1, e, m2));
  tt_lc_output(c, pnorm_last(b, d, p));
  return NULL;
}

/* _pdist_forward(self [N, M], p): distances of rows i < j, row-major. */
static tt_error *lower_pdist(tt_lower_ctx *c) {
  const tt_tensor_ref *r = tt_lc_ref(c, 0);
  if (!r || !r->storage) return tt_lc_decline(c, "not a device tensor");
  if (r->dtype != TT_F32 && r->dtype != TT_F64) return tt_lc_decline(c, "dtype");
  if (r->ndim != 2) return tt_lc_decline(c, "rank (torch raises)");
  double p = tt_lc_double(c, 1, 2.0);
  if (!(p >= 0)) return tt_lc_decline(c, "negative p (torch raises)");
  int64_t N = r->sizes[0], M = r->sizes[1], K = N * (N - 1) / 2;
  tt_builder *b = tt_lc_builder(c);
  if (K == 0 || M == 0) { /* no pairs, or zero-length rows: all distances 0 */
    tt_lc_output(c, tt_b_full(b, tt_shape_make(r->dtype, 1, &K), 0));
    return NULL;
  }
  if (K > (1 << 20)) return tt_lc_decline(c, "too many pairs");
  int64_t *ii = malloc(sizeof(int64_t) * (size_t)K * 2);
  if (!ii) return tt_lc_decline(c, "out of host memory");
  int64_t k = 0;
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = i + 1; j < N; j++) ii[k] = i, ii[K + k] = j, k++;
  tt_val x = tt_lc_tensor(c, 0);
  tt_val rows[2] = {nn_take_dim(b, x, 0, ii, K), nn_take_dim(b, x, 0, ii + K, K)}; /* exact gathers */
  free(ii);
  tt_lc_output(c, pnorm_last(b, tt_b_bin(b, TT_OP_SUBTRACT, rows[0], rows[1]), p));
  return NULL;
}

TT_LOWERINGS(distance) = {
    {lower_cdist, {"_cdist_forward", "_cdist_forward.out"}},
    {lower_pdist, {"_pdist_forward", "_pdist_forward.out"}},
    {NULL, {NULL}},
};
