/* Optimizer ops: the _foreach_* family (one generic lowering: a per-element
 * function applied over the tensor list, with the other operands broadcast)
 * and the fused optimizer steps (_fused_adam_, _fused_adamw_, _fused_sgd_).
 * Each call over N tensors is ONE program. */
#include <math.h>
#include <string.h>

#include "ops/common.h"

/* ------------------------------------------------------------ promotion */

/* One operand of PyTorch's result_type: class 0 = dimensioned tensor,
 * 1 = zero-dim tensor, 2 = wrapped number (Python scalar). */
typedef struct {
  tt_dtype dt;
  int cls;
} part;

static tt_dtype combine(int have_hi, tt_dtype hi, int have_lo, tt_dtype lo, int *have) {
  *have = have_hi || have_lo;
  if (!have_hi) return lo;
  if (!have_lo) return hi;
  if (tt_dtype_is_floating(hi)) return hi;
  if (hi == TT_BOOL || tt_dtype_is_floating(lo)) return tt_promote(hi, lo);
  return hi;
}

static tt_dtype result_type_parts(const part *p, int n) {
  tt_dtype r[3] = {TT_BOOL, TT_BOOL, TT_BOOL};
  int have[3] = {0, 0, 0};
  for (int i = 0; i < n; i++) {
    int k = p[i].cls;
    r[k] = have[k] ? tt_promote(r[k], p[i].dt) : p[i].dt;
    have[k] = 1;
  }
  int h1, h2;
  tt_dtype zw = combine(have[1], r[1], have[2], r[2], &h1);
  return combine(have[0], r[0], h1, zw, &h2);
}

static part tensor_part(const tt_tensor_ref *r) {
  if (!r->storage && r->wrapped_number)
    return (part){tt_dtype_is_floating(r->dtype) ? TT_DEFAULT_FLOAT : r->dtype, 2};
  return (part){r->dtype, r->ndim == 0 ? 1 : 0};
}

static part scalar_part(const tt_scalar *s) {
  tt_dtype dt = s->kind == TT_SCALAR_FLOAT ? TT_DEFAULT_FLOAT : (s->kind == TT_SCALAR_INT ? TT_I64 : TT_BOOL);
  return (part){dt, 2};
}

/* ------------------------------------------------------------ foreach */

typedef enum {
  F_ADD, F_SUB, F_MUL, F_DIV, F_MAX, F_MIN, F_POW, F_CLAMP_MIN, F_CLAMP_MAX, F_COPY, /* binary */
  F_ADDCMUL, F_ADDCDIV, F_LERP,                                                    /* ternary */
  F_SQRT, F_NEG, F_SIGN, F_RECIP, F_ABS, F_EXP, F_LOG, F_ZERO,                      /* unary */
} fe_fn;

static const struct {
  const char *name;
  fe_fn fn;
} fe_ops[] = {
    {"add", F_ADD}, {"sub", F_SUB}, {"mul", F_MUL}, {"div", F_DIV}, {"maximum", F_MAX},
    {"minimum", F_MIN}, {"pow", F_POW}, {"clamp_min", F_CLAMP_MIN}, {"clamp_max", F_CLAMP_MAX},
    {"copy", F_COPY}, {"addcmul", F_ADDCMUL}, {"addcdiv", F_ADDCDIV}, {"lerp", F_LERP},
    {"sqrt", F_SQRT}, {"neg", F_NEG}, {"sign", F_SIGN}, {"reciprocal", F_RECIP}, {"abs", F_ABS},
    {"exp", F_EXP}, {"log", F_LOG}, {"zero", F_ZERO},
};

static bool fe_parse(const char *op_name, fe_fn *fn) {
  const char *p = op_name + strlen("_foreach_");
  size_t len = strcspn(p, ".");
  if (len && p[len - 1] == '_') len--;
  for (size_t i = 0; i < sizeof fe_ops / sizeof fe_ops[0]; i++)
    if (strlen(fe_ops[i].name) == len && strncmp(fe_ops[i].name, p, len) == 0) {
      *fn = fe_ops[i].fn;
      return true;
    }
  return false;
}

static int fe_arity(fe_fn fn) { /* tensor-like operands after self */
  if (fn <= F_COPY) return 1;
  if (fn <= F_ADDCDIV) return 3; /* t1, t2, value */
  if (fn == F_LERP) return 2;    /* end, weight */
  return 0;
}

/* Does operand k (1-based) take part in type promotion? */
static bool fe_promotes(fe_fn fn, int k) {
  if (fn == F_COPY) return false;
  if (fn == F_ADDCMUL || fn == F_ADDCDIV) return k < 3;
  if (fn == F_LERP) return k == 1;
  return true;
}

/* Shape/part of operand arg for list element j (Scalar: 0-d). */
static bool fe_operand_part(tt_lower_ctx *c, int arg, int j, part *p, int *nd, const int64_t **dims) {
  static const int64_t none[1] = {0};
  const tt_arg *a = tt_lc_arg(c, arg);
  *nd = 0;
  *dims = none;
  if (!a) return false;
  switch (a->kind) {
    case TT_ARG_TENSOR_LIST: {
      const tt_tensor_ref *r = tt_lc_list_ref(c, arg, j);
      if (!r) return false;
      *p = tensor_part(r);
      *nd = r->ndim;
      *dims = r->sizes;
      return true;
    }
    case TT_ARG_TENSOR:
      *p = tensor_part(a->u.tensor);
      if (a->u.tensor->ndim > 0) { /* a Tensor operand broadcasts */
        *nd = a->u.tensor->ndim;
        *dims = a->u.tensor->sizes;
      }
      return true;
    case TT_ARG_SCALAR: *p = scalar_part(&a->u.s); return true;
    case TT_ARG_SCALAR_LIST: *p = scalar_part(&a->u.scalars[j]); return true;
    case TT_ARG_DOUBLE_LIST: *p = (part){TT_DEFAULT_FLOAT, 2}; return true;
    case TT_ARG_INT_LIST: *p = (part){TT_I64, 2}; return true;
    default: return false;
  }
}

/* Value of operand arg for element j, converted to ct and broadcast. */
static tt_val fe_operand(tt_lower_ctx *c, int arg, int j, tt_dtype ct, int nd, const int64_t *dims,
                         bool per_element_tensor) {
  tt_builder *b = tt_lc_builder(c);
  const tt_arg *a = tt_lc_arg(c, arg);
  tt_val v;
  switch (a->kind) {
    case TT_ARG_TENSOR_LIST: v = tt_lc_list_tensor(c, arg, j); break;
    case TT_ARG_TENSOR:
      v = tt_lc_tensor(c, arg);
      if (per_element_tensor) { /* a 1-d tensor holding one scalar per list element */
        int64_t st = j, li = j + 1;
        v = tt_b_reshape(b, tt_b_slice(b, v, &st, &li, NULL), 0, NULL);
      }
      break;
    case TT_ARG_SCALAR: v = tt_lc_scalar(c, arg, ct); break;
    default: v = tt_lc_scalar_list(c, arg, j, ct); break;
  }
  return tt_b_broadcast_to(b, tt_b_convert(b, v, ct), nd, dims);
}

static tt_val lerp_val(tt_builder *b, tt_val x, tt_val y, tt_val w) {
  tt_shape s = tt_b_shape(b, x);
  tt_val diff = tt_b_bin(b, TT_OP_SUBTRACT, y, x);
  tt_val small = tt_b_compare(b, "LT", tt_b_un(b, TT_OP_ABS, w), tt_b_full(b, s, 0.5));
  tt_val lo = tt_b_bin(b, TT_OP_ADD, x, tt_b_bin(b, TT_OP_MULTIPLY, w, diff));
  tt_val hi = tt_b_bin(b, TT_OP_SUBTRACT, y,
                          tt_b_bin(b, TT_OP_MULTIPLY, diff, tt_b_bin(b, TT_OP_SUBTRACT, tt_b_full(b, s, 1), w)));
  return tt_b_select(b, small, lo, hi);
}

static tt_error *foreach_element(tt_lower_ctx *c, fe_fn fn, int j, tt_val *out) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_list_ref(c, 0, j);
  if (!self) return tt_lc_decline(c, "None in the tensor list");
  int arity = fe_arity(fn);
  part parts[4];
  int np = 0, nd = self->ndim;
  int64_t dims[TT_MAX_DIMS];
  memcpy(dims, self->sizes, sizeof(int64_t) * (size_t)nd);
  parts[np++] = tensor_part(self);
  bool per_elem_value = false;
  for (int k = 1; k <= arity; k++) {
    part p;
    int ond;
    const int64_t *odims;
    if (!fe_operand_part(c, k, j, &p, &ond, &odims)) return tt_lc_decline(c, "operand %d of an unsupported kind", k);
    if ((fn == F_ADDCMUL || fn == F_ADDCDIV) && k == 3 && tt_lc_kind(c, 3) == TT_ARG_TENSOR) {
      const tt_tensor_ref *r = tt_lc_ref(c, 3);
      if (r->ndim != 1 || r->sizes[0] != tt_lc_list_len(c, 0))
        return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                          "Expected length of scalars to match input of length %d but got %lld instead.",
                          tt_lc_list_len(c, 0), (long long)(r->ndim == 1 ? r->sizes[0] : 0));
      per_elem_value = true;
      continue;
    }
    if (fe_promotes(fn, k)) parts[np++] = p;
    if (tt_lc_kind(c, k) == TT_ARG_TENSOR_LIST || tt_lc_kind(c, k) == TT_ARG_TENSOR) {
      if (fn == F_COPY || fn == F_LERP) { /* must broadcast to self */
        int bnd;
        int64_t bd[TT_MAX_DIMS];
        if (!tt_broadcast_dims(nd, dims, ond, odims, &bnd, bd) || bnd != nd)
          return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "operand %d of element %d does not broadcast to self", k, j);
        continue;
      }
      int64_t bd[TT_MAX_DIMS];
      int bnd;
      if (!tt_broadcast_dims(nd, dims, ond, odims, &bnd, bd))
        return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                          "The size of tensor a must match the size of tensor b (element %d)", j);
      nd = bnd;
      memcpy(dims, bd, sizeof(int64_t) * (size_t)nd);
    }
  }
  tt_dtype rt = result_type_parts(parts, np);
  if (fn == F_COPY || fn == F_ZERO) rt = self->dtype;
  bool to_float = fn == F_DIV || fn == F_SQRT || fn == F_RECIP || fn == F_EXP || fn == F_LOG;
  if (to_float && !tt_dtype_is_floating(rt)) rt = TT_DEFAULT_FLOAT;
  if (!tt_dtype_is_floating(rt) && !tt_dtype_is_integral(rt) && rt != TT_BOOL)
    return tt_lc_decline(c, "dtype %s", tt_dtype_name(rt));
  if (fn == F_ZERO) {
    *out = tt_b_full(b, tt_lc_ref_shape(self), 0);
    return NULL;
  }
  if (fn == F_COPY) {
    *out = fe_operand(c, 1, j, rt, self->ndim, self->sizes, false);
    return NULL;
  }
  bool int_ok = fn == F_ADD || fn == F_SUB || fn == F_MUL || fn == F_MAX || fn == F_MIN ||
                fn == F_NEG || fn == F_ABS || fn == F_SIGN || fn == F_CLAMP_MIN || fn == F_CLAMP_MAX ||
                fn == F_ADDCMUL;
  if (rt == TT_BOOL || (!tt_dtype_is_floating(rt) && !int_ok))
    return tt_lc_decline(c, "%s", tt_dtype_name(rt));
  tt_dtype ct = tt_opmath(rt);
  tt_val x = tt_b_broadcast_to(b, tt_b_convert(b, tt_lc_list_tensor(c, 0, j), ct), nd, dims);
  tt_val y = arity >= 1 ? fe_operand(c, 1, j, ct, nd, dims, false) : TT_INVALID;
  tt_val r = TT_INVALID;
  switch (fn) {
    case F_ADD: case F_SUB: {
      /* alpha is a runtime parameter: the cache key holds its kind, not its
       * value, so it is always applied (never skipped when it is 1) */
      const tt_scalar *alpha = tt_lc_scalar_ref(c, 2);
      if (alpha) {
        if (alpha->kind == TT_SCALAR_FLOAT && !tt_dtype_is_floating(rt))
          return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                            "For integral input tensors, argument alpha must not be a floating point number.");
        y = tt_b_bin(b, TT_OP_MULTIPLY, fe_operand(c, 2, j, ct, nd, dims, false), y);
      }
      r = tt_b_bin(b, fn == F_ADD ? TT_OP_ADD : TT_OP_SUBTRACT, x, y);
      break;
    }
    case F_MUL: r = tt_b_bin(b, TT_OP_MULTIPLY, x, y); break;
    case F_DIV: r = tt_b_bin(b, TT_OP_DIVIDE, x, y); break;
    case F_MAX: case F_CLAMP_MIN: r = tt_b_bin(b, TT_OP_MAXIMUM, x, y); break;
    case F_MIN: case F_CLAMP_MAX: r = tt_b_bin(b, TT_OP_MINIMUM, x, y); break;
    case F_POW: r = tt_b_bin(b, TT_OP_POWER, x, y); break;
    case F_ADDCMUL: case F_ADDCDIV: {
      tt_val z = fe_operand(c, 2, j, ct, nd, dims, false);
      tt_val v = fe_operand(c, 3, j, ct, nd, dims, per_elem_value);
      r = fn == F_ADDCMUL
              ? tt_b_bin(b, TT_OP_ADD, x, tt_b_bin(b, TT_OP_MULTIPLY, tt_b_bin(b, TT_OP_MULTIPLY, v, y), z))
              : tt_b_bin(b, TT_OP_ADD, x, tt_b_bin(b, TT_OP_MULTIPLY, v, tt_b_bin(b, TT_OP_DIVIDE, y, z)));
      break;
    }
    case F_LERP: r = lerp_val(b, x, y, fe_operand(c, 2, j, ct, nd, dims, false)); break;
    case F_SQRT: r = tt_b_un(b, TT_OP_SQRT, x); break;
    case F_NEG: r = tt_b_un(b, TT_OP_NEGATE, x); break;
    case F_SIGN: r = tt_b_un(b, TT_OP_SIGN, x); break;
    case F_RECIP: r = tt_b_bin(b, TT_OP_DIVIDE, tt_full_like(b, x, 1), x); break;
    case F_ABS: r = tt_b_un(b, TT_OP_ABS, x); break;
    case F_EXP: r = tt_b_un(b, TT_OP_EXPONENTIAL, x); break;
    case F_LOG: r = tt_b_un(b, TT_OP_LOG, x); break;
    default: return tt_lc_decline(c, "unsupported foreach op");
  }
  *out = tt_b_convert(b, r, rt);
  return NULL;
}

static tt_error *check_list_lengths(tt_lower_ctx *c, int n_lists_from, int n_lists_to) {
  int n = tt_lc_list_len(c, 0);
  for (int k = n_lists_from; k <= n_lists_to; k++) {
    tt_arg_kind kind = tt_lc_kind(c, k);
    if ((kind == TT_ARG_TENSOR_LIST || kind == TT_ARG_SCALAR_LIST || kind == TT_ARG_DOUBLE_LIST ||
         kind == TT_ARG_INT_LIST) && tt_lc_list_len(c, k) != n)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "Tensor lists must have the same number of tensors, got %d and %d", n,
                        tt_lc_list_len(c, k));
  }
  return NULL;
}

/* Every _foreach_<op>[_].<variant>[_out]: out[j] = op(self[j], operands[j]). */
static tt_error *lower_foreach(tt_lower_ctx *c) {
  fe_fn fn;
  if (!fe_parse(tt_lc_op_name(c), &fn)) return tt_lc_decline(c, "unknown foreach op");
  if (tt_lc_kind(c, 0) != TT_ARG_TENSOR_LIST) return tt_lc_decline(c, "self is not a tensor list");
  int n = tt_lc_list_len(c, 0);
  if (n == 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Tensor list must have at least one tensor.");
  TT_TRY(check_list_lengths(c, 1, fe_arity(fn)));
  for (int j = 0; j < n; j++) {
    tt_val v;
    TT_TRY(foreach_element(c, fn, j, &v));
    tt_lc_output(c, v);
  }
  return NULL;
}

/* _foreach_norm.Scalar(self, ord, dtype): per-tensor vector norm (ord 1, 2,
 * inf), accumulated in f32 for f16/bf16. */
static tt_error *lower_foreach_norm(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  int n = tt_lc_list_len(c, 0);
  if (n == 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Tensor list must have at least one tensor.");
  if (tt_lc_kind(c, 1) != TT_ARG_SCALAR) return tt_lc_decline(c, "ord is not a Scalar");
  for (int j = 0; j < n; j++) {
    const tt_tensor_ref *r = tt_lc_list_ref(c, 0, j);
    if (!r || !tt_dtype_is_floating(r->dtype)) return tt_lc_decline(c, "norm of a non-float tensor");
    tt_dtype odt = tt_lc_dtype(c, 2, r->dtype);
    if (!tt_dtype_is_floating(odt)) return tt_lc_decline(c, "norm into %s", tt_dtype_name(odt));
    tt_dtype ct = tt_opmath(tt_lc_is_none(c, 2) ? r->dtype : odt);
    tt_val x = tt_b_un(b, TT_OP_ABS, tt_b_convert(b, tt_lc_list_tensor(c, 0, j), ct));
    int64_t dims[TT_MAX_DIMS];
    for (int k = 0; k < r->ndim; k++) dims[k] = k;
    /* ord is a runtime parameter (the cache key holds only its kind): every
     * order is computed and the right one selected at run time. */
    tt_val o = tt_lc_scalar(c, 1, ct);
    tt_val vmax = tt_reduce_max(b, x, dims, r->ndim);
    tt_val vmin = tt_reduce_min(b, x, dims, r->ndim);
    tt_val v1 = tt_sum(b, x, dims, r->ndim);
    tt_val v2 = tt_b_un(b, TT_OP_SQRT, tt_sum(b, tt_b_bin(b, TT_OP_MULTIPLY, x, x), dims, r->ndim));
    tt_val nz = tt_sum(b, tt_b_convert(b, tt_b_compare(b, "NE", x, tt_full_like(b, x, 0)), ct), dims, r->ndim);
    tt_val ob = tt_b_broadcast_to(b, o, r->ndim, r->sizes);
    tt_val vp = tt_b_bin(b, TT_OP_POWER, tt_sum(b, tt_b_bin(b, TT_OP_POWER, x, ob), dims, r->ndim),
                            tt_b_bin(b, TT_OP_DIVIDE, tt_b_constant(b, ct, 1), o));
    tt_val v = vp;
    v = tt_b_select(b, tt_b_compare(b, "EQ", o, tt_b_constant(b, ct, 0)), nz, v);
    v = tt_b_select(b, tt_b_compare(b, "EQ", o, tt_b_constant(b, ct, 1)), v1, v);
    v = tt_b_select(b, tt_b_compare(b, "EQ", o, tt_b_constant(b, ct, 2)), v2, v);
    v = tt_b_select(b, tt_b_compare(b, "EQ", o, tt_b_constant(b, ct, INFINITY)), vmax, v);
    v = tt_b_select(b, tt_b_compare(b, "EQ", o, tt_b_constant(b, ct, -INFINITY)), vmin, v);
    tt_lc_output(c, tt_b_convert(b, v, odt));
  }
  return NULL;
}

/* ------------------------------------------------------------ fused */

static tt_error *fused_common_checks(tt_lower_ctx *c, int grad_scale_arg) {
  if (!tt_lc_is_none(c, grad_scale_arg) || !tt_lc_is_none(c, grad_scale_arg + 1))
    return tt_lc_decline(c, "grad_scale/found_inf");
  int n = tt_lc_list_len(c, 0);
  for (int j = 0; j < n; j++) {
    const tt_tensor_ref *p = tt_lc_list_ref(c, 0, j), *g = tt_lc_list_ref(c, 1, j);
    if (!p || !g) return tt_lc_decline(c, "None in the tensor lists");
    if (!tt_dtype_is_floating(p->dtype) || p->dtype != g->dtype)
      return tt_lc_decline(c, "params of dtype %s with grads of dtype %s", tt_dtype_name(p->dtype),
                           tt_dtype_name(g->dtype));
    bool same = p->ndim == g->ndim;
    for (int k = 0; same && k < p->ndim; k++) same = p->sizes[k] == g->sizes[k];
    if (!same) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "param and grad %d differ in shape", j);
  }
  return NULL;
}

static tt_val read_elem(tt_lower_ctx *c, int list, int j, tt_dtype ct) {
  return tt_b_convert(tt_lc_builder(c), tt_lc_list_tensor(c, list, j), ct);
}

static tt_val bcast(tt_builder *b, tt_val scalar, tt_val like) {
  return tt_b_broadcast_to(b, scalar, tt_b_ndim(b, like), tt_b_shape(b, like).dims);
}

/* _fused_adam_/_fused_adamw_(self, grads, exp_avgs, exp_avg_sqs,
 * max_exp_avg_sqs, state_steps, *, lr, beta1, beta2, weight_decay, eps,
 * amsgrad, maximize, grad_scale, found_inf), following ATen's CPU kernel:
 * bias corrections in f64 from the step tensors, the element math in the
 * params' opmath dtype. */
static tt_error *fused_adam(tt_lower_ctx *c, bool adamw) {
  tt_builder *b = tt_lc_builder(c);
  TT_TRY(fused_common_checks(c, 13));
  int n = tt_lc_list_len(c, 0);
  if (n == 0) return NULL;
  bool amsgrad = tt_lc_bool(c, 11, false), maximize = tt_lc_bool(c, 12, false);
  double beta1 = tt_lc_double(c, 7, 0.9), beta2 = tt_lc_double(c, 8, 0.999);
  double wd = tt_lc_double(c, 9, 0), eps = tt_lc_double(c, 10, 1e-8);
  for (int k = 2; k <= 5; k++)
    if (tt_lc_list_len(c, k) != n && !(k == 4 && !amsgrad))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Tensor lists must have the same number of tensors");
  if (tt_lc_kind(c, 6) == TT_ARG_TENSOR) {
    const tt_tensor_ref *lr = tt_lc_ref(c, 6);
    if (lr->ndim > 1) return tt_lc_decline(c, "lr tensor of rank %d", lr->ndim);
  }
  tt_val lr = tt_lc_scalar(c, 6, TT_F64);
  if (tt_b_ndim(b, lr) == 1) lr = tt_b_reshape(b, lr, 0, NULL);
  tt_val one = tt_b_constant(b, TT_F64, 1.0);
  tt_val out_p[n], out_m[n], out_v[n], out_mx[n];
  for (int j = 0; j < n; j++) {
    const tt_tensor_ref *pr = tt_lc_list_ref(c, 0, j);
    tt_dtype ct = tt_opmath(pr->dtype);
    /* step scalars in f64 */
    tt_val step = tt_b_convert(b, tt_lc_list_tensor(c, 5, j), TT_F64);
    if (tt_b_ndim(b, step) != 0) step = tt_b_reshape(b, step, 0, NULL);
    tt_val bc1 = tt_b_bin(b, TT_OP_SUBTRACT, one, tt_b_bin(b, TT_OP_POWER, tt_b_constant(b, TT_F64, beta1), step));
    tt_val bc2 = tt_b_bin(b, TT_OP_SUBTRACT, one, tt_b_bin(b, TT_OP_POWER, tt_b_constant(b, TT_F64, beta2), step));
    tt_val step_size = tt_b_convert(b, tt_b_bin(b, TT_OP_DIVIDE, lr, bc1), ct);
    tt_val bc2_sqrt = tt_b_convert(b, tt_b_un(b, TT_OP_SQRT, bc2), ct);
    tt_val p = read_elem(c, 0, j, ct), g = read_elem(c, 1, j, ct);
    tt_val m = read_elem(c, 2, j, ct), v = read_elem(c, 3, j, ct);
    if (maximize) g = tt_b_un(b, TT_OP_NEGATE, g);
    if (wd != 0) {
      if (adamw) {
        tt_val f = tt_b_convert(b, tt_b_bin(b, TT_OP_SUBTRACT, one, tt_b_bin(b, TT_OP_MULTIPLY, lr, tt_b_constant(b, TT_F64, wd))), ct);
        p = tt_b_bin(b, TT_OP_MULTIPLY, p, bcast(b, f, p));
      } else {
        g = tt_b_bin(b, TT_OP_ADD, g, tt_b_bin(b, TT_OP_MULTIPLY, p, tt_full_like(b, p, wd)));
      }
    }
    double w = 1 - beta1;
    tt_val diff = tt_b_bin(b, TT_OP_SUBTRACT, g, m);
    m = fabs(w) < 0.5 ? tt_b_bin(b, TT_OP_ADD, m, tt_b_bin(b, TT_OP_MULTIPLY, tt_full_like(b, m, w), diff))
                      : tt_b_bin(b, TT_OP_SUBTRACT, g, tt_b_bin(b, TT_OP_MULTIPLY, diff, tt_full_like(b, m, 1 - w)));
    v = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, v, tt_full_like(b, v, beta2)),
                    tt_b_bin(b, TT_OP_MULTIPLY, tt_b_bin(b, TT_OP_MULTIPLY, tt_full_like(b, g, 1 - beta2), g), g));
    tt_val den_src = v;
    out_mx[j] = TT_INVALID;
    if (amsgrad) {
      const tt_tensor_ref *mr = tt_lc_list_ref(c, 4, j);
      if (!mr) return tt_lc_decline(c, "None in max_exp_avg_sqs");
      tt_val mx = tt_b_bin(b, TT_OP_MAXIMUM, read_elem(c, 4, j, ct), v);
      out_mx[j] = mx;
      den_src = mx;
    }
    tt_val den = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_DIVIDE, tt_b_un(b, TT_OP_SQRT, den_src), bcast(b, bc2_sqrt, p)),
                             tt_full_like(b, p, eps));
    p = tt_b_bin(b, TT_OP_SUBTRACT, p,
                    tt_b_bin(b, TT_OP_DIVIDE, tt_b_bin(b, TT_OP_MULTIPLY, bcast(b, step_size, m), m), den));
    out_p[j] = p;
    out_m[j] = m;
    out_v[j] = v;
  }
  for (int j = 0; j < n; j++) tt_lc_output(c, out_p[j]);
  for (int j = 0; j < n; j++) tt_lc_output_unchanged(c); /* grads */
  for (int j = 0; j < n; j++) tt_lc_output(c, out_m[j]);
  for (int j = 0; j < n; j++) tt_lc_output(c, out_v[j]);
  for (int j = 0; j < tt_lc_list_len(c, 4); j++) {
    if (amsgrad) tt_lc_output(c, out_mx[j]);
    else tt_lc_output_unchanged(c);
  }
  return NULL;
}

static tt_error *lower_fused_adam(tt_lower_ctx *c) { return fused_adam(c, false); }
static tt_error *lower_fused_adamw(tt_lower_ctx *c) { return fused_adam(c, true); }

/* _fused_sgd_(self, grads, momentum_buffer_list, *, weight_decay, momentum,
 * lr, dampening, nesterov, maximize, is_first_step, grad_scale, found_inf) */
static tt_error *lower_fused_sgd(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  TT_TRY(fused_common_checks(c, 10));
  int n = tt_lc_list_len(c, 0);
  if (n == 0) return NULL;
  double wd = tt_lc_double(c, 3, 0), momentum = tt_lc_double(c, 4, 0), dampening = tt_lc_double(c, 6, 0);
  bool nesterov = tt_lc_bool(c, 7, false), maximize = tt_lc_bool(c, 8, false);
  bool first = tt_lc_bool(c, 9, false);
  bool has_buf = momentum != 0;
  if (has_buf && tt_lc_list_len(c, 2) != n)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Tensor lists must have the same number of tensors");
  tt_val lr = tt_lc_scalar(c, 5, TT_F64);
  if (tt_b_ndim(b, lr) == 1) lr = tt_b_reshape(b, lr, 0, NULL);
  tt_val out_p[n], out_buf[n];
  for (int j = 0; j < n; j++) {
    tt_dtype ct = tt_opmath(tt_lc_list_ref(c, 0, j)->dtype);
    tt_val p = read_elem(c, 0, j, ct), g = read_elem(c, 1, j, ct);
    if (maximize) g = tt_b_un(b, TT_OP_NEGATE, g);
    if (wd != 0) g = tt_b_bin(b, TT_OP_ADD, g, tt_b_bin(b, TT_OP_MULTIPLY, p, tt_full_like(b, p, wd)));
    out_buf[j] = TT_INVALID;
    if (has_buf) {
      tt_val buf;
      if (first) {
        buf = g;
      } else {
        buf = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, read_elem(c, 2, j, ct), tt_full_like(b, g, momentum)),
                          tt_b_bin(b, TT_OP_MULTIPLY, tt_full_like(b, g, 1 - dampening), g));
      }
      out_buf[j] = buf;
      g = nesterov ? tt_b_bin(b, TT_OP_ADD, g, tt_b_bin(b, TT_OP_MULTIPLY, tt_full_like(b, g, momentum), buf)) : buf;
    }
    tt_val lrv = bcast(b, tt_b_convert(b, lr, ct), p);
    out_p[j] = tt_b_bin(b, TT_OP_SUBTRACT, p, tt_b_bin(b, TT_OP_MULTIPLY, lrv, g));
  }
  for (int j = 0; j < n; j++) tt_lc_output(c, out_p[j]);
  for (int j = 0; j < n; j++) tt_lc_output_unchanged(c); /* grads */
  for (int j = 0; j < tt_lc_list_len(c, 2); j++) {
    if (has_buf) tt_lc_output(c, out_buf[j]);
    else tt_lc_output_unchanged(c);
  }
  return NULL;
}

/* ------------------------------------------------------------ amp */

static int64_t ref_numel(const tt_tensor_ref *r) {
  int64_t n = 1;
  for (int k = 0; k < r->ndim; k++) n *= r->sizes[k];
  return n;
}

/* A one-element float tensor argument (GradScaler's scale, found_inf...). */
static tt_error *amp_scalar_arg(tt_lower_ctx *c, int i, const char *what, tt_dtype dt) {
  if (tt_lc_kind(c, i) != TT_ARG_TENSOR) return tt_lc_decline(c, "%s is not a tensor", what);
  const tt_tensor_ref *r = tt_lc_ref(c, i);
  if (ref_numel(r) != 1) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s must be a 1-element tensor.", what);
  if (r->dtype != dt) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s must be a %s tensor.", what, tt_dtype_name(dt));
  return NULL;
}

/* |x| < inf: false for inf and NaN (a bool tensor like x) */
static tt_val is_finite_val(tt_builder *b, tt_val x) {
  return tt_b_compare(b, "LT", tt_b_un(b, TT_OP_ABS, x), tt_full_like(b, x, INFINITY));
}

static tt_val amp_read0(tt_lower_ctx *c, int i) { /* the one element, 0-d */
  return tt_b_reshape(tt_lc_builder(c), tt_lc_tensor(c, i), 0, NULL);
}

static tt_val amp_like(tt_lower_ctx *c, int i, tt_val v0) { /* back to argument i's shape */
  const tt_tensor_ref *r = tt_lc_ref(c, i);
  return tt_b_reshape(tt_lc_builder(c), v0, r->ndim, r->sizes);
}

/* _amp_foreach_non_finite_check_and_unscale_(self[], found_inf, inv_scale),
 * as ATen's CPU kernel: each grad becomes grad * inv_scale (in its opmath
 * dtype); found_inf becomes 1 if any element of any grad is inf or NaN and
 * is otherwise left as it was. */
static tt_error *lower_amp_unscale(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  TT_TRY(amp_scalar_arg(c, 1, "found_inf", TT_F32));
  TT_TRY(amp_scalar_arg(c, 2, "inv_scale", TT_F32));
  int n = tt_lc_list_len(c, 0);
  tt_val inv = amp_read0(c, 2), flag = TT_INVALID;
  tt_val out[n > 0 ? n : 1];
  for (int j = 0; j < n; j++) {
    const tt_tensor_ref *r = tt_lc_list_ref(c, 0, j);
    if (!r || !tt_dtype_is_floating(r->dtype)) return tt_lc_decline(c, "a grad that is not a float tensor");
    tt_dtype ct = tt_opmath(r->dtype);
    tt_val x = read_elem(c, 0, j, ct);
    int64_t dims[TT_MAX_DIMS];
    for (int k = 0; k < r->ndim; k++) dims[k] = k;
    tt_val bad = tt_b_convert(b, tt_b_un(b, TT_OP_NOT, is_finite_val(b, x)), TT_F32);
    tt_val any = tt_reduce_max(b, bad, dims, r->ndim);
    flag = j == 0 ? any : tt_b_bin(b, TT_OP_MAXIMUM, flag, any);
    out[j] = tt_b_bin(b, TT_OP_MULTIPLY, x, bcast(b, tt_b_convert(b, inv, ct), x));
  }
  for (int j = 0; j < n; j++) tt_lc_output(c, out[j]);
  if (n == 0) {
    tt_lc_output_unchanged(c);
    return NULL;
  }
  tt_val found = tt_b_compare(b, "GT", flag, tt_b_constant(b, TT_F32, 0));
  tt_lc_output(c, amp_like(c, 1, tt_b_select(b, found, tt_b_constant(b, TT_F32, 1), amp_read0(c, 1))));
  return NULL;
}

/* _amp_update_scale_(self, growth_tracker, found_inf, growth_factor,
 * backoff_factor, growth_interval), as ATen's CPU kernel: on found_inf the
 * scale is multiplied by backoff_factor and the tracker reset; otherwise
 * the tracker counts up, and when it reaches growth_interval the scale is
 * multiplied by growth_factor (kept only if finite) and the tracker reset.
 * The products are taken in f64 and rounded to f32, as float * double. */
static tt_error *lower_amp_update_scale(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  TT_TRY(amp_scalar_arg(c, 0, "current_scale", TT_F32));
  TT_TRY(amp_scalar_arg(c, 1, "growth_tracker", TT_I32));
  TT_TRY(amp_scalar_arg(c, 2, "found_inf", TT_F32));
  double growth = tt_lc_double(c, 3, 2.0), backoff = tt_lc_double(c, 4, 0.5);
  int64_t interval = tt_lc_int(c, 5, 2000);
  tt_val s = amp_read0(c, 0), gt = amp_read0(c, 1), fi = amp_read0(c, 2);
  tt_val found = tt_b_compare(b, "NE", fi, tt_b_constant(b, TT_F32, 0));
  tt_val s64 = tt_b_convert(b, s, TT_F64);
  tt_val backed = tt_b_convert(b, tt_b_bin(b, TT_OP_MULTIPLY, s64, tt_b_constant(b, TT_F64, backoff)), TT_F32);
  tt_val grown = tt_b_convert(b, tt_b_bin(b, TT_OP_MULTIPLY, s64, tt_b_constant(b, TT_F64, growth)), TT_F32);
  grown = tt_b_select(b, is_finite_val(b, grown), grown, s);
  tt_val succ = tt_b_convert(b, tt_b_bin(b, TT_OP_ADD, tt_b_convert(b, gt, TT_I64), tt_b_constant_int(b, TT_I64, 1)), TT_I64);
  tt_val hit = tt_b_compare(b, "EQ", succ, tt_b_constant_int(b, TT_I64, interval));
  tt_val zero = tt_b_constant_int(b, TT_I32, 0);
  tt_val new_s = tt_b_select(b, found, backed, tt_b_select(b, hit, grown, s));
  tt_val new_gt = tt_b_select(b, found, zero, tt_b_select(b, hit, zero, tt_b_convert(b, succ, TT_I32)));
  tt_lc_output(c, amp_like(c, 0, new_s));
  tt_lc_output(c, amp_like(c, 1, new_gt));
  return NULL;
}

TT_LOWERINGS(optim) = {
    {lower_foreach, {"_foreach_add.Scalar", "_foreach_add.Scalar_out", "_foreach_add.List", "_foreach_add.List_out", "_foreach_add.ScalarList", "_foreach_add.ScalarList_out", "_foreach_add.Tensor", "_foreach_add.Tensor_out"}},
    {lower_foreach, {"_foreach_add_.Scalar", "_foreach_add_.List", "_foreach_add_.ScalarList", "_foreach_add_.Tensor"}},
    {lower_foreach, {"_foreach_sub.Scalar", "_foreach_sub.Scalar_out", "_foreach_sub.List", "_foreach_sub.List_out", "_foreach_sub.ScalarList", "_foreach_sub.ScalarList_out", "_foreach_sub_.Scalar", "_foreach_sub_.List"}},
    {lower_foreach, {"_foreach_sub_.ScalarList"}},
    {lower_foreach, {"_foreach_mul.Scalar", "_foreach_mul.Scalar_out", "_foreach_mul.List", "_foreach_mul.List_out", "_foreach_mul.ScalarList", "_foreach_mul.ScalarList_out", "_foreach_mul.Tensor", "_foreach_mul.Tensor_out"}},
    {lower_foreach, {"_foreach_mul_.Scalar", "_foreach_mul_.List", "_foreach_mul_.ScalarList", "_foreach_mul_.Tensor"}},
    {lower_foreach, {"_foreach_div.Scalar", "_foreach_div.Scalar_out", "_foreach_div.List", "_foreach_div.List_out", "_foreach_div.ScalarList", "_foreach_div.ScalarList_out", "_foreach_div.Tensor", "_foreach_div.Tensor_out"}},
    {lower_foreach, {"_foreach_div_.Scalar", "_foreach_div_.List", "_foreach_div_.ScalarList", "_foreach_div_.Tensor"}},
    {lower_foreach, {"_foreach_maximum.Scalar", "_foreach_maximum.Scalar_out", "_foreach_maximum.List", "_foreach_maximum.List_out", "_foreach_maximum.ScalarList", "_foreach_maximum.ScalarList_out", "_foreach_maximum_.Scalar", "_foreach_maximum_.List"}},
    {lower_foreach, {"_foreach_maximum_.ScalarList"}},
    {lower_foreach, {"_foreach_minimum.Scalar", "_foreach_minimum.Scalar_out", "_foreach_minimum.List", "_foreach_minimum.List_out", "_foreach_minimum.ScalarList", "_foreach_minimum.ScalarList_out", "_foreach_minimum_.Scalar", "_foreach_minimum_.List"}},
    {lower_foreach, {"_foreach_minimum_.ScalarList"}},
    {lower_foreach, {"_foreach_pow.List", "_foreach_pow.List_out", "_foreach_pow.Scalar", "_foreach_pow.Scalar_out", "_foreach_pow.ScalarList", "_foreach_pow.ScalarList_out", "_foreach_pow_.List", "_foreach_pow_.Scalar"}},
    {lower_foreach, {"_foreach_pow_.ScalarList"}},
    {lower_foreach, {"_foreach_clamp_min.Scalar", "_foreach_clamp_min.Scalar_out", "_foreach_clamp_min.List", "_foreach_clamp_min.List_out", "_foreach_clamp_min.ScalarList", "_foreach_clamp_min.ScalarList_out", "_foreach_clamp_min_.Scalar", "_foreach_clamp_min_.List"}},
    {lower_foreach, {"_foreach_clamp_min_.ScalarList"}},
    {lower_foreach, {"_foreach_clamp_max.Scalar", "_foreach_clamp_max.Scalar_out", "_foreach_clamp_max.List", "_foreach_clamp_max.List_out", "_foreach_clamp_max.ScalarList", "_foreach_clamp_max.ScalarList_out", "_foreach_clamp_max_.Scalar", "_foreach_clamp_max_.List"}},
    {lower_foreach, {"_foreach_clamp_max_.ScalarList"}},
    {lower_foreach, {"_foreach_addcmul.Scalar", "_foreach_addcmul.Scalar_out", "_foreach_addcmul.ScalarList", "_foreach_addcmul.ScalarList_out", "_foreach_addcmul.Tensor", "_foreach_addcmul.Tensor_out", "_foreach_addcmul_.Scalar", "_foreach_addcmul_.ScalarList"}},
    {lower_foreach, {"_foreach_addcmul_.Tensor"}},
    {lower_foreach, {"_foreach_addcdiv.Scalar", "_foreach_addcdiv.Scalar_out", "_foreach_addcdiv.ScalarList", "_foreach_addcdiv.ScalarList_out", "_foreach_addcdiv.Tensor", "_foreach_addcdiv.Tensor_out", "_foreach_addcdiv_.Scalar", "_foreach_addcdiv_.ScalarList"}},
    {lower_foreach, {"_foreach_addcdiv_.Tensor"}},
    {lower_foreach, {"_foreach_lerp.List", "_foreach_lerp.List_out", "_foreach_lerp.Scalar", "_foreach_lerp.Scalar_out", "_foreach_lerp.ScalarList", "_foreach_lerp.ScalarList_out", "_foreach_lerp_.List", "_foreach_lerp_.Scalar"}},
    {lower_foreach, {"_foreach_lerp_.ScalarList"}},
    {lower_foreach, {"_foreach_sqrt", "_foreach_sqrt.out", "_foreach_sqrt_"}},
    {lower_foreach, {"_foreach_neg", "_foreach_neg.out", "_foreach_neg_"}},
    {lower_foreach, {"_foreach_sign", "_foreach_sign.out", "_foreach_sign_"}},
    {lower_foreach, {"_foreach_reciprocal", "_foreach_reciprocal.out", "_foreach_reciprocal_"}},
    {lower_foreach, {"_foreach_abs", "_foreach_abs.out", "_foreach_abs_"}},
    {lower_foreach, {"_foreach_exp", "_foreach_exp.out", "_foreach_exp_"}},
    {lower_foreach, {"_foreach_log", "_foreach_log.out", "_foreach_log_"}},
    {lower_foreach, {"_foreach_zero", "_foreach_zero.out", "_foreach_zero_"}},
    {lower_foreach, {"_foreach_copy", "_foreach_copy.out", "_foreach_copy_"}},
    {lower_foreach_norm, {"_foreach_norm.Scalar", "_foreach_norm.Scalar_out"}},
    {lower_fused_adam, {"_fused_adam_", "_fused_adam_.tensor_lr"}},
    {lower_fused_adamw, {"_fused_adamw_", "_fused_adamw_.tensor_lr"}},
    {lower_fused_sgd, {"_fused_sgd_", "_fused_sgd_.tensor_lr"}},
    {lower_amp_unscale, {"_amp_foreach_non_finite_check_and_unscale_"}},
    {lower_amp_update_scale, {"_amp_update_scale_"}},
    {NULL, {NULL}},
};
