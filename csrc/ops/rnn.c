/* Fused recurrent cells: _thnn_fused_lstm_cell and _thnn_fused_gru_cell with
 * their backwards. PyTorch's LSTMCell/GRUCell (and so nn.LSTM/nn.GRU, step by
 * step) call the fused ops for a PrivateUse1 device as for CUDA; they have
 * no CPU kernel, so without these lowerings the fallback cannot run them.
 * Numerics follow CUDA's kernels (aten/src/ATen/native/cuda/RNN.cu): gates
 * in the order (i, f, g, o) for LSTM and (r, z, n) for GRU along the last
 * dim, float16/bfloat16 computed in float32 and rounded once. The workspace
 * holds what the backward reads: LSTM's activated gates [B, 4H]; GRU's
 * (r, z, n, hidden n-gate with its bias, hx) [B, 5H].
 *
 * The boxed boundary cannot return undefined tensors: grad_bias is computed
 * even when has_bias is false (autograd drops it, the bias being None), and
 * an LSTM backward given neither grad_hy nor grad_cy returns zeros. */
#include <stdio.h>
#include <string.h>

#include "ops/common.h"
#include "ops/nn_common.h"
#include "ops/unary_common.h"

/* Reads tensor argument i as acc, checking it is [B, n*H] (or [B, H]). */
static tt_error *rnn_arg(tt_lower_ctx *c, const char *op, const char *what, int i, tt_dtype dt,
                         int64_t rows, int64_t cols, tt_dtype acc, tt_val *out) {
  const tt_tensor_ref *r = tt_lc_ref(c, i);
  if (!r || !r->storage) return tt_lc_decline(c, "%s: %s is not a tpu tensor", op, what);
  if (r->dtype != dt)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s: expected %s to have dtype %s, got %s",
                      op, what, tt_dtype_name(dt), tt_dtype_name(r->dtype));
  bool ok = rows < 0 ? (r->ndim == 1 && r->sizes[0] == cols)
                     : (r->ndim == 2 && r->sizes[0] == rows && r->sizes[1] == cols);
  if (!ok) {
    if (rows < 0)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s: expected %s of size [%lld]", op, what,
                        (long long)cols);
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s: expected %s of size [%lld, %lld]", op,
                      what, (long long)rows, (long long)cols);
  }
  *out = uc_read_as(c, i, acc);
  return NULL;
}

/* The first tensor argument's [B, n*H] shape gives B and H. */
static tt_error *rnn_dims(tt_lower_ctx *c, const char *op, int i, int n, int64_t *B,
                          int64_t *H, tt_dtype *dt) {
  const tt_tensor_ref *r = tt_lc_ref(c, i);
  if (!r || !r->storage) return tt_lc_decline(c, "%s: not tpu tensors", op);
  if (!tt_dtype_is_floating(r->dtype)) return tt_lc_decline(c, "%s of %s", op, tt_dtype_name(r->dtype));
  if (r->ndim != 2 || r->sizes[1] % n != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "%s: expected a 2-d tensor whose last dim is a multiple of %d, got %d dims",
                      op, n, r->ndim);
  *B = r->sizes[0];
  *H = r->sizes[1] / n;
  *dt = r->dtype;
  return NULL;
}

/* Columns [k*H, (k+1)*H) of a [B, n*H] value. */
static tt_val chunk(tt_builder *b, tt_val x, int k, int64_t B, int64_t H) {
  int64_t start[2] = {0, k * H}, limit[2] = {B, (k + 1) * H};
  return tt_b_slice(b, x, start, limit, NULL);
}

static tt_val one_minus(tt_builder *b, tt_val x) { return tt_sub(b, tt_full_like(b, x, 1), x); }

static tt_val sum_rows(tt_builder *b, tt_val x) {
  int64_t d[1] = {0};
  return nn_rsum(b, x, d, 1);
}

/* What a fused cell's forward reads: input_gates and hidden_gates [B, n*H]
 * with the optional [n*H] biases (args 3, 4; both or neither) added, and the
 * state [B, H] (arg 2: LSTM's cx, GRU's hx), all as the opmath dtype. */
typedef struct {
  tt_builder *b;
  int64_t B, H;
  tt_dtype dt, acc;
  tt_val ig, hg, state;
} cell_inputs;

static tt_error *read_cell_inputs(tt_lower_ctx *c, const char *op, int n, const char *state,
                                  cell_inputs *in) {
  TT_TRY(rnn_dims(c, op, 0, n, &in->B, &in->H, &in->dt));
  in->b = tt_lc_builder(c);
  in->acc = tt_opmath(in->dt);
  int64_t B = in->B, nH = n * in->H;
  TT_TRY(rnn_arg(c, op, "input_gates", 0, in->dt, B, nH, in->acc, &in->ig));
  TT_TRY(rnn_arg(c, op, "hidden_gates", 1, in->dt, B, nH, in->acc, &in->hg));
  TT_TRY(rnn_arg(c, op, state, 2, in->dt, B, in->H, in->acc, &in->state));
  bool bi = tt_lc_ref(c, 3) != NULL, bh = tt_lc_ref(c, 4) != NULL;
  if (bi != bh)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "%s: input_bias and hidden_bias must be both given or both None", op);
  if (!bi) return NULL;
  tt_val ib, hb;
  TT_TRY(rnn_arg(c, op, "input_bias", 3, in->dt, -1, nH, in->acc, &ib));
  TT_TRY(rnn_arg(c, op, "hidden_bias", 4, in->dt, -1, nH, in->acc, &hb));
  in->ig = tt_add(in->b, in->ig, ib);
  in->hg = tt_add(in->b, in->hg, hb);
  return NULL;
}

/* _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias?, hidden_bias?)
 *   -> (hy, cy, workspace) */
static tt_error *lower_fused_lstm_cell(tt_lower_ctx *c) {
  cell_inputs in;
  TT_TRY(read_cell_inputs(c, "_thnn_fused_lstm_cell", 4, "cx", &in));
  tt_builder *b = in.b;
  int64_t B = in.B, H = in.H;
  tt_val g = tt_add(b, in.ig, in.hg);
  tt_val ing = uc_sigmoid(b, chunk(b, g, 0, B, H));
  tt_val fg = uc_sigmoid(b, chunk(b, g, 1, B, H));
  tt_val cg = uc_un(b, TT_OP_TANH, chunk(b, g, 2, B, H));
  tt_val og = uc_sigmoid(b, chunk(b, g, 3, B, H));
  tt_val cy = tt_add(b, tt_mul(b, fg, in.state), tt_mul(b, ing, cg));
  tt_val hy = tt_mul(b, og, uc_un(b, TT_OP_TANH, cy));
  tt_val ws = tt_b_concat(b, (tt_val[]){ing, fg, cg, og}, 4, 1);
  tt_lc_output(c, tt_b_convert(b, hy, in.dt));
  tt_lc_output(c, tt_b_convert(b, cy, in.dt));
  tt_lc_output(c, tt_b_convert(b, ws, in.dt));
  return NULL;
}

/* _thnn_fused_lstm_cell_backward_impl(grad_hy?, grad_cy?, cx, cy, workspace,
 * has_bias) -> (grad_gates, grad_cx, grad_bias) */
static tt_error *lower_fused_lstm_cell_backward(tt_lower_ctx *c) {
  const char *op = "_thnn_fused_lstm_cell_backward_impl";
  int64_t B, H;
  tt_dtype dt;
  TT_TRY(rnn_dims(c, op, 4, 4, &B, &H, &dt));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = tt_opmath(dt);
  tt_val cx, cy, ws, ghy = TT_INVALID, gcy = TT_INVALID;
  TT_TRY(rnn_arg(c, op, "cx", 2, dt, B, H, acc, &cx));
  TT_TRY(rnn_arg(c, op, "cy", 3, dt, B, H, acc, &cy));
  TT_TRY(rnn_arg(c, op, "workspace", 4, dt, B, 4 * H, acc, &ws));
  if (tt_lc_ref(c, 0)) TT_TRY(rnn_arg(c, op, "grad_hy", 0, dt, B, H, acc, &ghy));
  if (tt_lc_ref(c, 1)) TT_TRY(rnn_arg(c, op, "grad_cy", 1, dt, B, H, acc, &gcy));
  tt_val in = chunk(b, ws, 0, B, H), fg = chunk(b, ws, 1, B, H);
  tt_val cg = chunk(b, ws, 2, B, H), og = chunk(b, ws, 3, B, H);
  tt_val zero = tt_full_like(b, cx, 0);
  if (ghy == TT_INVALID) ghy = zero;
  if (gcy == TT_INVALID) gcy = zero;
  tt_val tcy = uc_un(b, TT_OP_TANH, cy);
  /* d og = ghy * tanh(cy) * og (1 - og); d cy = ghy * og * (1 - tanh(cy)^2) + gcy */
  tt_val gog = tt_mul(b, tt_mul(b, ghy, tcy), tt_mul(b, og, one_minus(b, og)));
  tt_val gc = tt_add(b, tt_mul(b, tt_mul(b, ghy, og), one_minus(b, tt_mul(b, tcy, tcy))), gcy);
  tt_val gin = tt_mul(b, tt_mul(b, gc, cg), tt_mul(b, in, one_minus(b, in)));
  tt_val gfg = tt_mul(b, tt_mul(b, gc, cx), tt_mul(b, fg, one_minus(b, fg)));
  tt_val gcg = tt_mul(b, tt_mul(b, gc, in), one_minus(b, tt_mul(b, cg, cg)));
  tt_val gates = tt_b_concat(b, (tt_val[]){gin, gfg, gcg, gog}, 4, 1);
  tt_lc_output(c, tt_b_convert(b, gates, dt));
  tt_lc_output(c, tt_b_convert(b, tt_mul(b, gc, fg), dt));
  tt_lc_output(c, tt_b_convert(b, sum_rows(b, gates), dt));
  return NULL;
}

/* _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias?, hidden_bias?)
 *   -> (hy, workspace) */
static tt_error *lower_fused_gru_cell(tt_lower_ctx *c) {
  cell_inputs in;
  TT_TRY(read_cell_inputs(c, "_thnn_fused_gru_cell", 3, "hx", &in));
  tt_builder *b = in.b;
  int64_t B = in.B, H = in.H;
  tt_val ig = in.ig, hg = in.hg, hx = in.state;
  tt_val rg = uc_sigmoid(b, tt_add(b, chunk(b, ig, 0, B, H), chunk(b, hg, 0, B, H)));
  tt_val zg = uc_sigmoid(b, tt_add(b, chunk(b, ig, 1, B, H), chunk(b, hg, 1, B, H)));
  tt_val hn = chunk(b, hg, 2, B, H);
  tt_val ng = uc_un(b, TT_OP_TANH, tt_add(b, chunk(b, ig, 2, B, H), tt_mul(b, rg, hn)));
  tt_val hy = tt_add(b, ng, tt_mul(b, zg, tt_sub(b, hx, ng)));
  tt_val ws = tt_b_concat(b, (tt_val[]){rg, zg, ng, hn, hx}, 5, 1);
  tt_lc_output(c, tt_b_convert(b, hy, in.dt));
  tt_lc_output(c, tt_b_convert(b, ws, in.dt));
  return NULL;
}

/* _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias) ->
 * (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias) */
static tt_error *lower_fused_gru_cell_backward(tt_lower_ctx *c) {
  const char *op = "_thnn_fused_gru_cell_backward";
  int64_t B, H;
  tt_dtype dt;
  TT_TRY(rnn_dims(c, op, 1, 5, &B, &H, &dt));
  tt_builder *b = tt_lc_builder(c);
  tt_dtype acc = tt_opmath(dt);
  tt_val gy, ws;
  TT_TRY(rnn_arg(c, op, "grad_hy", 0, dt, B, H, acc, &gy));
  TT_TRY(rnn_arg(c, op, "workspace", 1, dt, B, 5 * H, acc, &ws));
  tt_val rg = chunk(b, ws, 0, B, H), zg = chunk(b, ws, 1, B, H), ng = chunk(b, ws, 2, B, H);
  tt_val hn = chunk(b, ws, 3, B, H), hx = chunk(b, ws, 4, B, H);
  /* hy = ng + zg (hx - ng) */
  tt_val gz = tt_mul(b, tt_mul(b, gy, tt_sub(b, hx, ng)), tt_mul(b, zg, one_minus(b, zg)));
  tt_val ghx = tt_mul(b, gy, zg);
  tt_val gn = tt_mul(b, tt_mul(b, gy, one_minus(b, zg)), one_minus(b, tt_mul(b, ng, ng)));
  tt_val ghn = tt_mul(b, gn, rg);
  tt_val gr = tt_mul(b, tt_mul(b, gn, hn), tt_mul(b, rg, one_minus(b, rg)));
  tt_val gi = tt_b_concat(b, (tt_val[]){gr, gz, gn}, 3, 1);
  tt_val gh = tt_b_concat(b, (tt_val[]){gr, gz, ghn}, 3, 1);
  tt_lc_output(c, tt_b_convert(b, gi, dt));
  tt_lc_output(c, tt_b_convert(b, gh, dt));
  tt_lc_output(c, tt_b_convert(b, ghx, dt));
  tt_lc_output(c, tt_b_convert(b, sum_rows(b, gi), dt));
  tt_lc_output(c, tt_b_convert(b, sum_rows(b, gh), dt));
  return NULL;
}

TT_LOWERINGS(rnn) = {
    {lower_fused_lstm_cell, {"_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell.out"}},
    {lower_fused_lstm_cell_backward,
     {"_thnn_fused_lstm_cell_backward_impl", "_thnn_fused_lstm_cell_backward_impl.out"}},
    {lower_fused_gru_cell, {"_thnn_fused_gru_cell", "_thnn_fused_gru_cell.out"}},
    {lower_fused_gru_cell_backward,
     {"_thnn_fused_gru_cell_backward", "_thnn_fused_gru_cell_backward.out"}},
    {NULL},
};
