/* Lowerings of the nn_loss family (see lowering.h): nll loss (1-d and
 * 2-d), mse, binary cross entropy, huber, smooth l1, soft margin and multi
 * margin losses, forward and backward. Split out of nn.c. */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common.h"
#include "ops/nn_common.h"

enum { RED_NONE = 0, RED_MEAN = 1, RED_SUM = 2 };

/* ------------------------------------------------------------ helpers */

/* Sum of all elements as a 0-d value. */
static tt_val rsum_all(tt_builder *b, tt_val x) {
  int64_t dims[TT_MAX_DIMS];
  int nd = tt_b_ndim(b, x);
  for (int i = 0; i < nd; i++) dims[i] = i;
  return nn_rsum(b, x, dims, nd);
}

/* Applies a loss reduction to an opmath loss tensor, returning dtype dt. */
static tt_val reduce_loss(tt_builder *b, tt_val loss, int64_t reduction, tt_dtype dt) {
  if (reduction == RED_NONE) return tt_b_convert(b, loss, dt);
  /* CPU rounds each element to dt before the reduction */
  loss = tt_b_convert(b, tt_b_convert(b, loss, dt), tt_b_dtype(b, loss));
  tt_shape s = tt_b_shape(b, loss);
  tt_val r = rsum_all(b, loss);
  if (reduction == RED_MEAN) r = tt_div(b, r, tt_scalar_like(b, r, (double)tt_shape_numel(&s)));
  return tt_b_convert(b, r, dt);
}

static tt_error *check_reduction(tt_lower_ctx *c, int64_t reduction) {
  if (reduction < 0 || reduction > 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%" PRId64 " is not a valid value for reduction",
                      reduction);
  return NULL;
}

/* ------------------------------------------------------------ nll loss */

/* Shared checks and setup for nll_loss(2d) forward/backward. self is arg
 * si, target arg si+1, weight si+2, reduction si+3, ignore_index si+4.
 * Produces (in opmath) the per-element picked weights `wt` (target shape,
 * zero where ignored) and the one-hot selection mask (self shape). */
typedef struct {
  int nd;          /* self dims */
  int cdim;        /* class dim */
  int64_t C;
  tt_dtype dt, acc;
  tt_val onehot;   /* bool, self shape */
  tt_val wt;       /* opmath, target shape */
  tt_val keep;     /* bool, target shape: target != ignore_index */
  const tt_tensor_ref *self, *target;
} nll_setup;

static tt_error *nll_prepare(tt_lower_ctx *c, int si, bool is2d, nll_setup *s) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, si), *t = tt_lc_ref(c, si + 1), *w = tt_lc_ref(c, si + 2);
  if (!x || !t || !x->storage || !t->storage || !tt_dtype_is_floating(x->dtype))
    return tt_lc_decline(c, "unsupported arguments");
  if (t->dtype != TT_I64 && t->dtype != TT_U8)
    return tt_lc_fail(c, TT_ERR_RUNTIME, "expected scalar type Long but found %s",
                      tt_dtype_name(t->dtype));
  int64_t reduction = tt_lc_int(c, si + 3, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  if (is2d) {
    if (x->ndim != 4)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "only batches of spatial inputs supported (4D tensors), but got input of "
                        "dimension: %d", x->ndim);
    if (t->ndim != 3)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "only batches of spatial targets supported (3D tensors) but got targets "
                        "of dimension: %d", t->ndim);
    if (x->sizes[0] != t->sizes[0] || x->sizes[2] != t->sizes[1] || x->sizes[3] != t->sizes[2])
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "input and target batch or spatial sizes "
                        "don't match");
    s->cdim = 1;
  } else {
    if (x->ndim < 1 || x->ndim > 2)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "input tensor should be 1D or 2D");
    if (t->ndim > 1)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "0D or 1D target tensor expected, multi-target not supported");
    bool no_batch = x->ndim == 1 && t->ndim == 0;
    if (!no_batch && x->sizes[0] != (t->ndim ? t->sizes[0] : 1))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "Expected input batch_size (%" PRId64 ") to match target batch_size (%"
                        PRId64 ").", x->sizes[0], t->ndim ? t->sizes[0] : (int64_t)1);
    if (x->ndim == 1 && t->ndim == 1) return tt_lc_decline(c, "1-d input with 1-d target");
    s->cdim = x->ndim == 2 ? 1 : 0;
  }
  s->nd = x->ndim;
  s->C = x->sizes[s->cdim];
  s->dt = x->dtype;
  s->acc = tt_opmath(x->dtype);
  s->self = x;
  s->target = t;
  if (w) {
    int64_t wn = 1;
    char shape[24 * TT_MAX_DIMS + 2] = "[";
    for (int i = 0; i < w->ndim; i++) {
      wn *= w->sizes[i];
      size_t len = strlen(shape);
      snprintf(shape + len, sizeof shape - len, "%s%" PRId64, i ? ", " : "", w->sizes[i]);
    }
    strcat(shape, "]");
    /* nll_loss wants a 1-d weight of C elements; nll_loss2d only C elements
     * (CPU: a [1, C] weight is refused by the first, taken by the second) */
    if (wn != s->C || (!is2d && w->ndim != 1))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "weight tensor should be defined either for all %" PRId64
                        " classes or no classes but got weight tensor of shape: %s",
                        s->C, shape);
    if (!w->storage || w->dtype != x->dtype) return tt_lc_decline(c, "weight dtype");
  }
  int64_t ignore = tt_lc_int(c, si + 4, -100);
  tt_val tv = tt_b_convert(b, tt_lc_tensor(c, si + 1), TT_I64);
  /* one-hot over the class dim */
  tt_shape xs = tt_lc_ref_shape(x);
  xs.dtype = TT_I64;
  int64_t map[TT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < s->nd; i++)
    if (i != s->cdim) map[k++] = i;
  tt_val tb = tt_b_broadcast_in_dim(b, tv, s->nd, xs.dims, map);
  s->onehot = tt_b_compare(b, "EQ", tt_b_iota(b, xs, s->cdim), tb);
  /* picked weight per target element: w[t] (or 1), 0 where ignored */
  tt_shape ts = tt_lc_ref_shape(t);
  ts.dtype = s->acc;
  tt_val wt;
  if (w) {
    int64_t c1[1] = {s->C};
    tt_val wv = tt_b_reshape(b, nn_opt_tensor(c, si + 2, s->acc), 1, c1);
    int64_t cm[1] = {s->cdim};
    tt_shape xa = xs;
    xa.dtype = s->acc;
    tt_val wb = tt_b_broadcast_in_dim(b, wv, s->nd, xa.dims, cm);
    wt = tt_b_select(b, s->onehot, wb, tt_b_full(b, xa, 0));
    int64_t cd[1] = {s->cdim};
    wt = nn_rsum(b, wt, cd, 1);
  } else {
    wt = tt_b_full(b, ts, 1);
  }
  tt_shape ti = tt_lc_ref_shape(t);
  ti.dtype = TT_I64;
  tt_val keep = tt_b_compare(b, "NE", tv, tt_b_full(b, ti, (double)ignore));
  s->wt = tt_b_select(b, keep, wt, tt_b_full(b, ts, 0));
  s->keep = keep;
  return NULL;
}

/* nll_loss_forward / nll_loss2d_forward(self, target, weight, reduction,
 * ignore_index) -> (output, total_weight) */
static tt_error *nll_forward(tt_lower_ctx *c, bool is2d) {
  tt_builder *b = tt_lc_builder(c);
  nll_setup s;
  TT_TRY(nll_prepare(c, 0, is2d, &s));
  if (tt_lc_checks_on(c)) { /* device-side check: targets other than ignore_index in [0, C) */
    tt_val tv = tt_b_convert(b, tt_lc_tensor(c, 1), TT_I64);
    tt_shape ts = tt_b_shape(b, tv);
    tt_val out = tt_b_bin(b, TT_OP_OR, tt_b_compare(b, "LT", tv, tt_b_full(b, ts, 0)),
                          tt_b_compare(b, "GE", tv, tt_b_full(b, ts, (double)s.C)));
    tt_lc_check_value(c, tt_b_bin(b, TT_OP_AND, out, s.keep), tv, TT_ERR_INDEX,
                      "Target {value} is out of bounds. (target element {pos}: outside [0, %" PRId64
                      ") and not ignore_index)", s.C);
  }
  int64_t reduction = tt_lc_int(c, 3, RED_MEAN);
  tt_val x = tt_b_convert(b, tt_lc_tensor(c, 0), s.acc);
  tt_val picked = tt_b_select(b, s.onehot, x, tt_b_full(b, tt_b_shape(b, x), 0));
  int64_t cd[1] = {s.cdim};
  picked = nn_rsum(b, picked, cd, 1); /* target shape */
  tt_val loss = tt_b_un(b, TT_OP_NEGATE, tt_mul(b, picked, s.wt));
  tt_val total = rsum_all(b, s.wt);
  if (reduction == RED_NONE) {
    tt_lc_output(c, tt_b_convert(b, loss, s.dt));
    /* CPU reports total_weight 0 for batched 'none' (w[t] for a single sample) */
    tt_val tw = s.nd == 1 ? total : tt_b_constant(b, s.acc, 0);
    tt_lc_output(c, tt_b_convert(b, tw, s.dt));
    return NULL;
  }
  tt_val sum = rsum_all(b, loss);
  tt_val out = reduction == RED_MEAN ? tt_div(b, sum, total) : sum;
  tt_lc_output(c, tt_b_convert(b, out, s.dt));
  tt_lc_output(c, tt_b_convert(b, total, s.dt));
  return NULL;
}

static tt_error *lower_nll_loss_forward(tt_lower_ctx *c) { return nll_forward(c, false); }
static tt_error *lower_nll_loss2d_forward(tt_lower_ctx *c) { return nll_forward(c, true); }

/* nll_loss_backward / nll_loss2d_backward(grad_output, self, target, weight,
 * reduction, ignore_index, total_weight) */
static tt_error *nll_backward(tt_lower_ctx *c, bool is2d) {
  tt_builder *b = tt_lc_builder(c);
  nll_setup s;
  TT_TRY(nll_prepare(c, 1, is2d, &s));
  int64_t reduction = tt_lc_int(c, 4, RED_MEAN);
  const tt_tensor_ref *g = tt_lc_ref(c, 0), *tw = tt_lc_ref(c, 6);
  if (!g || !tw) return tt_lc_decline(c, "missing grad or total_weight");
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), s.acc);
  tt_shape ts = tt_lc_ref_shape(s.target);
  if (reduction == RED_NONE) {
    if (!nn_shape_is(g, s.target->ndim, s.target->sizes)) return tt_lc_decline(c, "grad shape");
  } else {
    int64_t gn = 1;
    for (int i = 0; i < g->ndim; i++) gn *= g->sizes[i];
    if (gn != 1) return tt_lc_decline(c, "grad shape");
    gv = tt_b_reshape(b, gv, 0, NULL);
    if (reduction == RED_MEAN) {
      tt_val t = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 6), s.acc), 0, NULL);
      gv = tt_div(b, gv, t);
    }
    gv = tt_b_broadcast_to(b, gv, ts.ndim, ts.dims);
  }
  tt_val per = tt_b_un(b, TT_OP_NEGATE, tt_mul(b, s.wt, gv)); /* target shape */
  /* ignored targets get no gradient, even when grad/total_weight is inf */
  per = tt_b_select(b, s.keep, per, tt_b_full(b, tt_b_shape(b, per), 0));
  tt_shape xs = tt_lc_ref_shape(s.self);
  xs.dtype = s.acc;
  int64_t map[TT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < s.nd; i++)
    if (i != s.cdim) map[k++] = i;
  tt_val pb = tt_b_broadcast_in_dim(b, per, s.nd, xs.dims, map);
  tt_val gi = tt_b_select(b, s.onehot, pb, tt_b_full(b, xs, 0));
  tt_lc_output(c, tt_b_convert(b, gi, s.dt));
  return NULL;
}

static tt_error *lower_nll_loss_backward(tt_lower_ctx *c) { return nll_backward(c, false); }
static tt_error *lower_nll_loss2d_backward(tt_lower_ctx *c) { return nll_backward(c, true); }

/* ------------------------------------------------------------ pointwise losses */

/* Reads self (arg a) and target (arg a+1) broadcast together in opmath of
 * their result dtype. */
static tt_error *loss_operands(tt_lower_ctx *c, int a, tt_dtype *dt, tt_val *x, tt_val *t,
                               int *nd, int64_t *dims) {
  int args[2] = {a, a + 1};
  *dt = tt_result_type(c, args, 2);
  if (!tt_dtype_is_floating(*dt)) return tt_lc_decline(c, "non-float loss");
  TT_TRY(tt_broadcast_args(c, args, 2, nd, dims));
  tt_dtype acc = tt_opmath(*dt);
  *x = tt_operand(c, a, acc, *nd, dims);
  *t = tt_operand(c, a + 1, acc, *nd, dims);
  return NULL;
}

/* Gradient scale for backward of reduced losses: grad_output broadcast to
 * (nd, dims), divided by numel for 'mean'. */
static tt_error *loss_grad(tt_lower_ctx *c, int64_t reduction, tt_dtype acc, int nd,
                           const int64_t *dims, tt_val *g) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *gr = tt_lc_ref(c, 0);
  if (!gr) return tt_lc_decline(c, "grad is not a tensor");
  TT_TRY(check_reduction(c, reduction));
  tt_val gv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  if (reduction == RED_NONE) {
    int o;
    int64_t od[TT_MAX_DIMS];
    if (!tt_broadcast_dims(nd, dims, gr->ndim, gr->sizes, &o, od) || o != nd)
      return tt_lc_decline(c, "grad shape");
    for (int i = 0; i < nd; i++)
      if (od[i] != dims[i]) return tt_lc_decline(c, "grad shape");
    *g = tt_b_broadcast_to(b, gv, nd, dims);
    return NULL;
  }
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  if (gr->ndim != 0) return tt_lc_decline(c, "grad shape");
  if (reduction == RED_MEAN) gv = tt_div(b, gv, tt_b_constant(b, acc, (double)n));
  *g = tt_b_broadcast_to(b, gv, nd, dims);
  return NULL;
}

/* mse_loss(self, target, reduction) */
static tt_error *lower_mse_loss(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  int64_t reduction = tt_lc_int(c, 2, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  TT_TRY(loss_operands(c, 0, &dt, &x, &t, &nd, dims));
  tt_val d = tt_sub(b, x, t);
  tt_val loss = tt_mul(b, d, d);
  tt_lc_output(c, reduce_loss(b, loss, reduction, dt));
  return NULL;
}

/* mse_loss_backward(grad_output, self, target, reduction) */
static tt_error *lower_mse_loss_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t, g;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  int args[3] = {0, 1, 2};
  TT_TRY(loss_operands(c, 1, &dt, &x, &t, &nd, dims));
  dt = tt_result_type(c, args, 3);
  int64_t reduction = tt_lc_int(c, 3, RED_MEAN);
  TT_TRY(loss_grad(c, reduction, tt_opmath(dt), nd, dims, &g));
  tt_val r = tt_mul(b, tt_mul(b, tt_sub(b, x, t), g), tt_scalar_like(b, g, 2.0));
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

/* binary_cross_entropy(self, target, weight, reduction) */
static tt_error *lower_binary_cross_entropy(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 0), *t = tt_lc_ref(c, 1), *w = tt_lc_ref(c, 2);
  if (!x || !t || !x->storage || !t->storage || !tt_dtype_is_floating(x->dtype) || t->dtype != x->dtype)
    return tt_lc_decline(c, "unsupported arguments");
  if (!nn_shape_is(t, x->ndim, x->sizes))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Using a target size that is different to the input size is deprecated. "
                      "Please ensure they have the same size.");
  if (w && (!w->storage || w->dtype != x->dtype)) return tt_lc_decline(c, "weight");
  int64_t reduction = tt_lc_int(c, 3, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  tt_dtype acc = tt_opmath(x->dtype);
  tt_val xv = tt_b_convert(b, tt_lc_tensor(c, 0), acc);
  tt_val tv = tt_b_convert(b, tt_lc_tensor(c, 1), acc);
  tt_val lo = tt_scalar_like(b, xv, -100.0);
  tt_val lx = tt_bin(b, TT_OP_MAXIMUM, tt_b_un(b, TT_OP_LOG, xv), lo);
  tt_val l1x = tt_bin(b, TT_OP_MAXIMUM, tt_b_un(b, TT_OP_LOG1P, tt_b_un(b, TT_OP_NEGATE, xv)), lo);
  /* (target - 1) * log(1 - x) - target * log(x) */
  tt_val loss = tt_sub(b, tt_mul(b, tt_sub(b, tv, tt_scalar_like(b, tv, 1.0)), l1x), tt_mul(b, tv, lx));
  if (w) {
    tt_val wv = tt_b_broadcast_to(b, nn_opt_tensor(c, 2, acc), x->ndim, x->sizes);
    loss = tt_mul(b, loss, wv);
  }
  tt_lc_output(c, reduce_loss(b, loss, reduction, x->dtype));
  return NULL;
}

/* binary_cross_entropy_backward(grad_output, self, target, weight, reduction) */
static tt_error *lower_binary_cross_entropy_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 1), *t = tt_lc_ref(c, 2), *w = tt_lc_ref(c, 3);
  if (!x || !t || !x->storage || !t->storage || !tt_dtype_is_floating(x->dtype) ||
      t->dtype != x->dtype || !nn_shape_is(t, x->ndim, x->sizes))
    return tt_lc_decline(c, "unsupported arguments");
  if (w && (!w->storage || w->dtype != x->dtype)) return tt_lc_decline(c, "weight");
  int64_t reduction = tt_lc_int(c, 4, RED_MEAN);
  tt_dtype acc = tt_opmath(x->dtype);
  tt_val g;
  TT_TRY(loss_grad(c, reduction, acc, x->ndim, x->sizes, &g));
  tt_val xv = tt_b_convert(b, tt_lc_tensor(c, 1), acc);
  tt_val tv = tt_b_convert(b, tt_lc_tensor(c, 2), acc);
  /* grad * (x - t) / max((1 - x) * x, 1e-12) */
  tt_val den = tt_bin(b, TT_OP_MAXIMUM, tt_mul(b, tt_sub(b, tt_scalar_like(b, xv, 1.0), xv), xv), tt_scalar_like(b, xv, 1e-12));
  tt_val r = tt_div(b, tt_mul(b, g, tt_sub(b, xv, tv)), den);
  if (w) r = tt_mul(b, r, tt_b_broadcast_to(b, nn_opt_tensor(c, 3, acc), x->ndim, x->sizes));
  tt_lc_output(c, tt_b_convert(b, r, x->dtype));
  return NULL;
}

/* huber_loss(self, target, reduction, delta) and smooth_l1_loss(self,
 * target, reduction, beta): piecewise quadratic/linear in |x - t|. */
static tt_error *huber_like(tt_lower_ctx *c, bool smooth) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  int64_t reduction = tt_lc_int(c, 2, RED_MEAN);
  double delta = tt_lc_double(c, 3, 1.0);
  TT_TRY(check_reduction(c, reduction));
  if (smooth && delta < 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "smooth_l1_loss does not support negative values for beta.");
  if (!smooth && delta <= 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "huber_loss does not support non-positive "
                      "values for delta.");
  if (smooth && delta == 0) return tt_lc_decline(c, "beta == 0");
  TT_TRY(loss_operands(c, 0, &dt, &x, &t, &nd, dims));
  tt_val z = tt_b_un(b, TT_OP_ABS, tt_sub(b, x, t));
  tt_val dl = tt_scalar_like(b, z, delta), half = tt_scalar_like(b, z, 0.5);
  tt_val small = tt_b_compare(b, "LT", z, tt_b_broadcast_to(b, dl, nd, dims));
  tt_val quad = tt_mul(b, tt_mul(b, half, z), z);
  tt_val lin;
  if (smooth) {
    quad = tt_div(b, quad, dl);
    lin = tt_sub(b, z, tt_mul(b, half, dl));
  } else {
    lin = tt_mul(b, dl, tt_sub(b, z, tt_mul(b, half, dl)));
  }
  tt_val loss = tt_b_select(b, small, quad, lin);
  tt_lc_output(c, reduce_loss(b, loss, reduction, dt));
  return NULL;
}

static tt_error *lower_huber_loss(tt_lower_ctx *c) { return huber_like(c, false); }
static tt_error *lower_smooth_l1_loss(tt_lower_ctx *c) { return huber_like(c, true); }

/* huber_loss_backward / smooth_l1_loss_backward(grad_output, self, target,
 * reduction, delta|beta) */
static tt_error *huber_like_backward(tt_lower_ctx *c, bool smooth) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t, g;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  double delta = tt_lc_double(c, 4, 1.0);
  if (delta <= 0) return tt_lc_decline(c, "non-positive delta/beta");
  TT_TRY(loss_operands(c, 1, &dt, &x, &t, &nd, dims));
  int args[3] = {0, 1, 2};
  dt = tt_result_type(c, args, 3);
  TT_TRY(loss_grad(c, tt_lc_int(c, 3, RED_MEAN), tt_opmath(dt), nd, dims, &g));
  tt_val d = tt_sub(b, x, t);
  tt_val dl = tt_b_full(b, tt_b_shape(b, d), delta);
  tt_val ndl = tt_b_full(b, tt_b_shape(b, d), -delta);
  tt_val below = tt_b_compare(b, "LT", d, ndl), above = tt_b_compare(b, "GT", d, dl);
  tt_val r;
  if (smooth) {
    tt_val one = tt_b_full(b, tt_b_shape(b, d), 1.0), mone = tt_b_full(b, tt_b_shape(b, d), -1.0);
    tt_val mid = tt_div(b, d, dl);
    r = tt_b_select(b, below, mone, tt_b_select(b, above, one, mid));
  } else {
    r = tt_b_select(b, below, ndl, tt_b_select(b, above, dl, d));
  }
  tt_lc_output(c, tt_b_convert(b, tt_mul(b, r, g), dt));
  return NULL;
}

static tt_error *lower_huber_loss_backward(tt_lower_ctx *c) { return huber_like_backward(c, false); }
static tt_error *lower_smooth_l1_loss_backward(tt_lower_ctx *c) {
  return huber_like_backward(c, true);
}

/* ------------------------------------------------------------ soft margin loss */

/* Rounds an opmath value to dt and back: CPU runs soft margin's pieces as
 * separate half-precision ops, each rounded. No-op for float/double. */
static tt_val rd(tt_builder *b, tt_val v, tt_dtype dt) {
  return tt_b_convert(b, tt_b_convert(b, v, dt), tt_b_dtype(b, v));
}

/* soft_margin_loss(self, target, reduction): log1p(exp(-self * target)) */
static tt_error *lower_soft_margin_loss(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  int64_t reduction = tt_lc_int(c, 2, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  TT_TRY(loss_operands(c, 0, &dt, &x, &t, &nd, dims));
  tt_val z = rd(b, tt_b_un(b, TT_OP_EXPONENTIAL, rd(b, tt_mul(b, tt_b_un(b, TT_OP_NEGATE, x), t), dt)), dt);
  tt_lc_output(c, reduce_loss(b, rd(b, tt_b_un(b, TT_OP_LOG1P, z), dt), reduction, dt));
  return NULL;
}

/* soft_margin_loss_backward(grad_output, self, target, reduction):
 * target * z * -norm / (1 + z) * grad, z = exp(-target * self), each
 * step rounded like CPU's separate in-place ops */
static tt_error *lower_soft_margin_loss_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype dt;
  tt_val x, t, g;
  int nd;
  int64_t dims[TT_MAX_DIMS];
  TT_TRY(loss_operands(c, 1, &dt, &x, &t, &nd, dims));
  int args[3] = {0, 1, 2};
  dt = tt_result_type(c, args, 3);
  int64_t reduction = tt_lc_int(c, 3, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  tt_dtype acc = tt_opmath(dt);
  TT_TRY(loss_grad(c, reduction == RED_MEAN ? RED_SUM : reduction, acc, nd, dims, &g));
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  double norm = reduction == RED_MEAN ? 1.0 / (double)n : 1.0;
  tt_val z = rd(b, tt_b_un(b, TT_OP_EXPONENTIAL, rd(b, tt_mul(b, tt_b_un(b, TT_OP_NEGATE, t), x), dt)), dt);
  /* CPU: mul_out(gi, target, z).mul_(-norm); z.add_(1); gi.div_(z).mul_(grad) */
  tt_val a = rd(b, tt_mul(b, t, z), dt);
  a = rd(b, tt_mul(b, a, tt_scalar_like(b, a, acc == TT_F64 ? -norm : (double)(float)-norm)), dt);
  tt_val q = rd(b, tt_div(b, a, rd(b, tt_add(b, z, tt_scalar_like(b, z, 1.0)), dt)), dt);
  tt_lc_output(c, tt_b_convert(b, tt_mul(b, q, g), dt));
  return NULL;
}

/* ------------------------------------------------------------ multi margin loss */

/* multi_margin_loss(self, target, p, margin, weight, reduction) and its
 * backward (grad_output first): self [N, C], [C] or 0-d, target [N] (or
 * one class). Per row, with y = target and z_d = margin - x_y + x_d:
 * loss = sum_{d != y, z_d > 0} z_d^p w_y / C (p = 1 or 2). Float32/float64
 * in the tensor dtype like CPU; irregular shapes go to CPU (its errors). */
typedef struct {
  tt_val x, onehot, z, active, wy; /* [N, C] except wy [N, 1] */
  int64_t N, C, p, reduction;
  bool row_out; /* reduction none returns [N] (else 0-d) */
  tt_dtype dt;
} mm_setup;

static tt_error *mm_prepare(tt_lower_ctx *c, int si, mm_setup *m) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, si), *t = tt_lc_ref(c, si + 1);
  if (!x || !t || !x->storage || !t->storage || (x->dtype != TT_F32 && x->dtype != TT_F64) ||
      t->dtype != TT_I64)
    return tt_lc_decline(c, "unsupported arguments");
  if (tt_lc_kind(c, si + 2) != TT_ARG_SCALAR && tt_lc_kind(c, si + 2) != TT_ARG_INT)
    return tt_lc_decline(c, "p");
  double pv = tt_lc_scalar_value(c, si + 2);
  if (pv != 1 && pv != 2) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "only p == 1 and p == 2 supported");
  m->p = (int64_t)pv;
  m->reduction = tt_lc_int(c, si + 5, RED_MEAN);
  TT_TRY(check_reduction(c, m->reduction));
  if (x->ndim == 2 && x->sizes[1] > 0 && t->ndim == 1 && t->sizes[0] == x->sizes[0]) {
    m->N = x->sizes[0];
    m->C = x->sizes[1];
  } else if (x->ndim <= 1 && (x->ndim == 0 || x->sizes[0] > 0) && t->ndim <= 1 &&
             (t->ndim == 0 || t->sizes[0] == 1)) {
    m->N = 1;
    m->C = x->ndim ? x->sizes[0] : 1;
  } else {
    return tt_lc_decline(c, "shapes");
  }
  m->row_out = t->ndim > 0;
  const tt_tensor_ref *w = tt_lc_is_none(c, si + 4) ? NULL : tt_lc_ref(c, si + 4);
  if (w && (!w->storage || w->ndim != 1 || w->sizes[0] != m->C)) return tt_lc_decline(c, "weight");
  m->dt = x->dtype;
  int64_t d2[2] = {m->N, m->C}, d1[2] = {m->N, 1};
  m->x = tt_b_reshape(b, tt_lc_tensor(c, si), 2, d2);
  tt_val tv = tt_b_reshape(b, tt_lc_tensor(c, si + 1), 2, d1);
  if (tt_lc_checks_on(c)) { /* device-side check: every target in [0, C) */
    tt_val lo = tt_b_compare(b, "LT", tv, tt_b_full(b, tt_shape_make(TT_I64, 2, d1), 0));
    tt_val hi = tt_b_compare(b, "GE", tv, tt_b_full(b, tt_shape_make(TT_I64, 2, d1), (double)m->C));
    tt_lc_check_value(c, tt_b_bin(b, TT_OP_OR, lo, hi), tv, TT_ERR_INVALID_ARGUMENT,
                      "target out of range (target {value} at element {pos}, not in [0, %" PRId64 "))", m->C);
  }
  tt_val cls = tt_b_iota(b, tt_shape_make(TT_I64, 2, d2), 1);
  m->onehot = tt_b_compare(b, "EQ", cls, tt_b_broadcast_to(b, tv, 2, d2));
  int64_t one = 1;
  tt_val zero = tt_b_full(b, tt_shape_make(m->dt, 2, d2), 0);
  tt_val xy = tt_b_reshape(b, tt_b_reduce(b, tt_b_select(b, m->onehot, m->x, zero), tt_b_constant(b, m->dt, 0),
                                          &one, 1, "add"), 2, d1);
  tt_val margin = tt_lc_scalar(c, si + 3, m->dt);
  m->z = tt_add(b, tt_sub(b, tt_b_broadcast_to(b, margin, 2, d1), xy), m->x);
  m->active = tt_b_bin(b, TT_OP_AND, tt_b_compare(b, "GT", m->z, zero), tt_b_un(b, TT_OP_NOT, m->onehot));
  m->wy = TT_INVALID;
  if (w) {
    tt_val wv = tt_b_convert(b, tt_lc_tensor(c, si + 4), m->dt);
    tt_val wb = tt_b_broadcast_to(b, tt_b_reshape(b, wv, 2, (int64_t[]){1, m->C}), 2, d2);
    m->wy = tt_b_reshape(b, tt_b_reduce(b, tt_b_select(b, m->onehot, wb, zero), tt_b_constant(b, m->dt, 0), &one,
                                        1, "add"), 2, d1);
  }
  return NULL;
}

static tt_error *lower_multi_margin_loss(tt_lower_ctx *c) {
  mm_setup m;
  TT_TRY(mm_prepare(c, 0, &m));
  tt_builder *b = tt_lc_builder(c);
  tt_val h = m.p == 1 ? m.z : tt_mul(b, m.z, m.z);
  if (m.wy != TT_INVALID) h = tt_mul(b, h, m.wy);
  h = tt_b_select(b, m.active, h, tt_full_like(b, m.z, 0));
  int64_t one = 1;
  tt_val row = tt_div(b, nn_rsum(b, h, &one, 1), tt_b_constant(b, m.dt, (double)m.C)); /* [N] */
  if (m.reduction == RED_NONE) {
    tt_lc_output(c, m.row_out ? row : tt_b_reshape(b, row, 0, NULL));
    return NULL;
  }
  tt_val r = rsum_all(b, row);
  if (m.reduction == RED_MEAN) r = tt_div(b, r, tt_b_constant(b, m.dt, (double)m.N));
  tt_lc_output(c, r);
  return NULL;
}

static tt_error *lower_multi_margin_loss_backward(tt_lower_ctx *c) {
  mm_setup m;
  TT_TRY(mm_prepare(c, 1, &m));
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *gr = tt_lc_ref(c, 0);
  if (!gr || !gr->storage) return tt_lc_decline(c, "grad");
  bool per_row = m.reduction == RED_NONE && gr->ndim > 0;
  if (per_row && (gr->ndim != 1 || gr->sizes[0] != m.N)) return tt_lc_decline(c, "grad shape");
  if (!per_row && gr->ndim != 0) return tt_lc_decline(c, "grad shape");
  /* g as CPU rounds it: 1 / (N C) for mean, else 1 / C */
  double g = m.reduction == RED_MEAN ? 1.0 / ((double)m.N * (double)m.C) : 1.0 / (double)m.C;
  if (m.dt == TT_F32) g = (double)(float)g;
  tt_val gk = tt_full_like(b, m.z, g);
  tt_val h = m.p == 1 ? gk : tt_mul(b, tt_mul(b, tt_scalar_like(b, m.z, 2), gk), m.z);
  if (m.wy != TT_INVALID) h = tt_mul(b, h, m.wy);
  h = tt_b_select(b, m.active, h, tt_full_like(b, m.z, 0));
  int64_t one = 1, d1[2] = {m.N, 1}, d2[2] = {m.N, m.C};
  tt_val gt = tt_b_un(b, TT_OP_NEGATE, tt_b_reshape(b, nn_rsum(b, h, &one, 1), 2, d1));
  tt_val gi = tt_b_select(b, m.onehot, tt_b_broadcast_to(b, gt, 2, d2), h);
  tt_val go = tt_b_convert(b, tt_lc_tensor(c, 0), m.dt);
  go = per_row ? tt_b_broadcast_to(b, tt_b_reshape(b, go, 2, d1), 2, d2) : tt_b_broadcast_to(b, go, 2, d2);
  gi = tt_mul(b, gi, go);
  const tt_tensor_ref *x = tt_lc_ref(c, 1);
  tt_lc_output(c, tt_b_reshape(b, gi, x->ndim, x->sizes));
  return NULL;
}

/* multilabel_margin_loss_forward(self, target, reduction) -> (output,
 * is_target): self [N, C], [C] or 0-d; each target row lists class indices up to
 * the first -1. With J the listed classes, per row
 * loss = sum_{j in J} sum_{k not in J} max(0, 1 - x_j + x_k) / C, and
 * is_target marks J (in self's dtype). Float32/float64 like CPU. */
static tt_error *lower_multilabel_margin_loss_forward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *x = tt_lc_ref(c, 0), *t = tt_lc_ref(c, 1);
  if (!x || !t || !x->storage || !t->storage || (x->dtype != TT_F32 && x->dtype != TT_F64) ||
      t->dtype != TT_I64 || !nn_shape_is(t, x->ndim, x->sizes) || x->ndim > 2)
    return tt_lc_decline(c, "unsupported arguments");
  int64_t reduction = tt_lc_int(c, 2, RED_MEAN);
  TT_TRY(check_reduction(c, reduction));
  int64_t N = x->ndim == 2 ? x->sizes[0] : 1, C = x->ndim ? x->sizes[x->ndim - 1] : 1;
  if (C == 0 || N == 0) return tt_lc_decline(c, "empty");
  tt_dtype dt = x->dtype;
  int64_t d2[2] = {N, C}, d3[3] = {N, C, C}, one = 1, two = 2;
  tt_val xv = tt_b_reshape(b, tt_lc_tensor(c, 0), 2, d2);
  tt_val tv = tt_b_reshape(b, tt_lc_tensor(c, 1), 2, d2);
  /* listed: j before the row's first -1 */
  tt_shape is2 = tt_shape_make(TT_I64, 2, d2);
  tt_val jpos = tt_b_iota(b, is2, 1);
  tt_val negpos = tt_b_select(b, tt_b_compare(b, "EQ", tv, tt_b_full(b, is2, -1)), jpos, tt_b_full(b, is2, (double)C));
  tt_val first = tt_b_reshape(b, tt_reduce_min(b, negpos, &one, 1), 2, (int64_t[]){N, 1});
  tt_val listed = tt_b_compare(b, "LT", jpos, tt_b_broadcast_to(b, first, 2, d2)); /* [N, j] */
  /* hit[n, j, k]: listed j names class k */
  tt_shape is3 = tt_shape_make(TT_I64, 3, d3);
  tt_val kk = tt_b_iota(b, is3, 2);
  tt_val tj = tt_b_broadcast_in_dim(b, tv, 3, d3, (int64_t[]){0, 1});
  tt_val lj = tt_b_broadcast_in_dim(b, listed, 3, d3, (int64_t[]){0, 1});
  tt_val hit = tt_b_bin(b, TT_OP_AND, tt_b_compare(b, "EQ", tj, kk), lj);
  tt_val is_t = tt_b_reduce(b, hit, tt_b_constant(b, TT_BOOL, 0), &one, 1, "or"); /* [N, k] */
  tt_shape f3 = tt_shape_make(dt, 3, d3);
  tt_val xk = tt_b_broadcast_in_dim(b, xv, 3, d3, (int64_t[]){0, 2});
  tt_val xj = tt_b_reduce(b, tt_b_select(b, hit, xk, tt_b_full(b, f3, 0)), tt_b_constant(b, dt, 0), &two, 1,
                          "add"); /* [N, j]: x at class t_j (0 where not listed) */
  tt_val z = tt_add(b, tt_sub(b, tt_b_full(b, f3, 1), tt_b_broadcast_in_dim(b, xj, 3, d3, (int64_t[]){0, 1})), xk);
  tt_val isk = tt_b_broadcast_in_dim(b, is_t, 3, d3, (int64_t[]){0, 2});
  tt_val use = tt_b_bin(b, TT_OP_AND, tt_b_bin(b, TT_OP_AND, lj, tt_b_un(b, TT_OP_NOT, isk)),
                           tt_b_compare(b, "GT", z, tt_b_full(b, f3, 0)));
  z = tt_b_select(b, use, z, tt_b_full(b, f3, 0));
  int64_t jk[2] = {1, 2};
  tt_val row = tt_div(b, nn_rsum(b, z, jk, 2), tt_b_constant(b, dt, (double)C)); /* [N] */
  tt_val out;
  if (reduction == RED_NONE) {
    out = x->ndim == 2 ? row : tt_b_reshape(b, row, 0, NULL);
  } else {
    out = rsum_all(b, row);
    if (reduction == RED_MEAN) out = tt_div(b, out, tt_b_constant(b, dt, (double)N));
  }
  tt_lc_output(c, out);
  tt_lc_output(c, tt_b_reshape(b, tt_b_convert(b, is_t, dt), x->ndim, x->sizes));
  return NULL;
}

TT_LOWERINGS(nn_loss) = {
    {lower_nll_loss_forward, {"nll_loss_forward", "nll_loss_forward.output"}},
    {lower_nll_loss_backward, {"nll_loss_backward", "nll_loss_backward.grad_input"}},
    {lower_nll_loss2d_forward, {"nll_loss2d_forward", "nll_loss2d_forward.output"}},
    {lower_nll_loss2d_backward, {"nll_loss2d_backward", "nll_loss2d_backward.grad_input"}},
    {lower_mse_loss, {"mse_loss", "mse_loss.out"}},
    {lower_mse_loss_backward, {"mse_loss_backward", "mse_loss_backward.grad_input"}},
    {lower_binary_cross_entropy, {"binary_cross_entropy", "binary_cross_entropy.out"}},
    {lower_binary_cross_entropy_backward,
     {"binary_cross_entropy_backward", "binary_cross_entropy_backward.grad_input"}},
    {lower_huber_loss, {"huber_loss", "huber_loss.out"}},
    {lower_huber_loss_backward, {"huber_loss_backward", "huber_loss_backward.out"}},
    {lower_smooth_l1_loss, {"smooth_l1_loss", "smooth_l1_loss.out"}},
    {lower_smooth_l1_loss_backward,
     {"smooth_l1_loss_backward", "smooth_l1_loss_backward.grad_input"}},
    {lower_soft_margin_loss, {"soft_margin_loss", "soft_margin_loss.out"}},
    {lower_soft_margin_loss_backward,
     {"soft_margin_loss_backward", "soft_margin_loss_backward.grad_input"}},
    {lower_multi_margin_loss, {"multi_margin_loss", "multi_margin_loss.out"}},
    {lower_multi_margin_loss_backward, {"multi_margin_loss_backward", "multi_margin_loss_backward.grad_input"}},
    {lower_multilabel_margin_loss_forward,
     {"multilabel_margin_loss_forward", "multilabel_margin_loss_forward.output"}},
    {NULL, {NULL}},
};
