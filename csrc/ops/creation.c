/* Copies, fills and factory ops: copy_, fill_, zero_, clone, and the
 * tensor factories (full, arange, ...). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/common.h"

/* copy_(self, src, non_blocking): src broadcast to self's shape and cast to
 * self's dtype (any cast is allowed, unlike arithmetic in-place ops). */
static tt_error *lower_copy(tt_lower_ctx *c) {
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  tt_builder *b = tt_lc_builder(c);
  tt_val src = tt_lc_tensor(c, 1);
  src = tt_b_convert(b, src, self->dtype);
  for (int i = 0; i < tt_b_ndim(b, src); i++) {
    int64_t s = tt_b_shape(b, src).dims[tt_b_ndim(b, src) - 1 - i];
    int64_t d = self->ndim - 1 - i >= 0 ? self->sizes[self->ndim - 1 - i] : -1;
    if (s != 1 && s != d)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                        "non-singleton dimension %d", (long long)d, (long long)s, self->ndim - 1 - i);
  }
  if (tt_b_ndim(b, src) > self->ndim)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "copy_: source has more dimensions than self");
  tt_lc_output(c, tt_b_broadcast_to(b, src, self->ndim, self->sizes));
  return NULL;
}

/* fill_(self, value) */
static tt_error *lower_fill(tt_lower_ctx *c) {
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  tt_builder *b = tt_lc_builder(c);
  const tt_arg *v = tt_lc_arg(c, 1);
  if (v && v->kind == TT_ARG_TENSOR && v->u.tensor->ndim != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.",
                      v->u.tensor->ndim);
  if (v && v->kind == TT_ARG_TENSOR && tt_dtype_is_complex(v->u.tensor->dtype) &&
      !tt_dtype_is_complex(self->dtype))
    return tt_lc_decline(c, "complex value into %s", tt_dtype_name(self->dtype)); /* CPU raises */
  tt_val s = tt_lc_scalar(c, 1, self->dtype);
  tt_lc_output(c, tt_b_broadcast_to(b, s, self->ndim, self->sizes));
  return NULL;
}

static tt_error *lower_zero(tt_lower_ctx *c) {
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  tt_lc_output(c, tt_b_full(tt_lc_builder(c), tt_lc_ref_shape(self), 0));
  return NULL;
}

/* clone(self, memory_format): a dense copy */
static tt_error *lower_clone(tt_lower_ctx *c) {
  tt_lc_output(c, tt_lc_tensor(c, 0));
  return NULL;
}


/* ------------------------------------------------------------ factories */

static int64_t numel_of(const tt_tensor_ref *r) {
  int64_t n = 1;
  for (int i = 0; i < r->ndim; i++) n *= r->sizes[i];
  return n;
}

static double scalar_as_double(const tt_scalar *s) {
  return s->kind == TT_SCALAR_FLOAT ? s->f : (double)s->i;
}

/* arange.start_out(start, end, step, *, out) / arange.out(end, *, out).
 * The length follows torch's rule for the out dtype; values are
 * start + step * i computed in f64 (float outs) or i64 (integer outs), with
 * start and step as runtime parameters. */
static tt_error *lower_arange(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  bool has_start = tt_lc_nargs(c) >= 4;
  int i_start = has_start ? 0 : -1, i_end = has_start ? 1 : 0, i_step = has_start ? 2 : -1;
  int i_out = has_start ? 3 : 1;
  const tt_tensor_ref *out = tt_lc_ref(c, i_out);
  if (!out) return tt_lc_decline(c, "out is not a tensor");
  tt_scalar zero = {TT_SCALAR_INT, 0, 0}, one = {TT_SCALAR_INT, 1, 0};
  const tt_scalar *ps = i_start >= 0 ? tt_lc_scalar_ref(c, i_start) : &zero;
  const tt_scalar *pe = tt_lc_scalar_ref(c, i_end);
  const tt_scalar *pst = i_step >= 0 ? tt_lc_scalar_ref(c, i_step) : &one;
  if (!ps || !pe || !pst) return tt_lc_decline(c, "start/end/step are not Scalars");
  /* the length depends on the bounds: key the program by their values */
  if (i_start >= 0) tt_lc_scalar_value(c, i_start);
  tt_lc_scalar_value(c, i_end);
  if (i_step >= 0) tt_lc_scalar_value(c, i_step);
  tt_dtype dt = out->dtype;
  if (dt == TT_BOOL || !(tt_dtype_is_floating(dt) || tt_dtype_is_integral(dt)))
    return tt_lc_decline(c, "arange into %s", tt_dtype_name(dt));
  bool integral = tt_dtype_is_integral(dt);
  if (integral && (ps->kind == TT_SCALAR_FLOAT || pe->kind == TT_SCALAR_FLOAT ||
                   pst->kind == TT_SCALAR_FLOAT))
    return tt_lc_decline(c, "float bounds with an integer out");
  double start = scalar_as_double(ps), end = scalar_as_double(pe), step = scalar_as_double(pst);
  if (tt_dtype_is_half(dt)) { /* torch reads the bounds as float (acc type) */
    start = (float)start;
    end = (float)end;
    step = (float)step;
  }
  if (step == 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "step must be nonzero");
  if (!isfinite(start) || !isfinite(end))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "unsupported range: %g -> %g", start, end);
  if (!((step > 0 && end >= start) || (step < 0 && end <= start)))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "upper bound and larger bound inconsistent with step sign");
  int64_t size;
  if (integral) {
    int64_t xs = ps->i, xe = pe->i, xst = pst->i;
    int64_t sgn = (xst > 0) - (xst < 0);
    size = (xe - xs + xst - sgn) / xst;
  } else {
    double size_d = ceil((end - start) / step);
    if (!(size_d >= 0 && size_d <= 9.2e18))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "invalid size, possible overflow?");
    size = (int64_t)size_d;
  }
  if (size <= 0) return tt_lc_decline(c, "empty arange"); /* keyed by value: no poisoning */
  tt_shape s = tt_shape_make(integral ? TT_I64 : TT_F64, 1, &size);
  tt_val idx = tt_b_iota(b, s, 0);
  tt_val v0 = i_start >= 0 ? tt_lc_scalar(c, i_start, s.dtype) : tt_b_constant(b, s.dtype, 0);
  tt_val st = i_step >= 0 ? tt_lc_scalar(c, i_step, s.dtype) : tt_b_constant(b, s.dtype, 1);
  tt_val r = tt_b_bin(b, TT_OP_ADD, tt_b_broadcast_to(b, v0, 1, &size),
                         tt_b_bin(b, TT_OP_MULTIPLY, tt_b_broadcast_to(b, st, 1, &size), idx));
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

/* linspace.out(start, end, steps, *, out): torch's two-sided formula
 * (start + step*i for the first half, end - step*(steps-1-i) after). */
static tt_error *lower_linspace(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *out = tt_lc_ref(c, 3);
  int64_t steps = tt_lc_int(c, 2, -1);
  if (!out) return tt_lc_decline(c, "out is not a tensor");
  if (steps < 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "number of steps must be non-negative");
  tt_dtype dt = out->dtype;
  if (!tt_dtype_is_floating(dt) && !tt_dtype_is_integral(dt))
    return tt_lc_decline(c, "linspace into %s", tt_dtype_name(dt));
  if (steps == 0) {
    tt_lc_output(c, tt_b_full(b, tt_shape_make(dt, 1, &steps), 0));
    return NULL;
  }
  /* float outs compute in their own dtype (f32 for f16/bf16), integer outs in f64 */
  tt_dtype ct = tt_dtype_is_floating(dt) ? (dt == TT_F64 ? TT_F64 : TT_F32) : TT_F64;
  tt_shape s = tt_shape_make(ct, 1, &steps);
  tt_val start = tt_lc_scalar(c, 0, ct), end = tt_lc_scalar(c, 1, ct);
  if (tt_dtype_is_floating(dt) && dt != ct) { /* torch rounds the bounds to the out dtype first */
    start = tt_b_convert(b, tt_b_convert(b, start, dt), ct);
    end = tt_b_convert(b, tt_b_convert(b, end, dt), ct);
  }
  if (!tt_dtype_is_floating(dt)) { /* integer outs take integer bounds */
    start = tt_b_convert(b, tt_b_convert(b, start, TT_I64), ct);
    end = tt_b_convert(b, tt_b_convert(b, end, TT_I64), ct);
  }
  tt_val r;
  if (steps == 1) {
    r = tt_b_broadcast_to(b, start, 1, &steps);
  } else {
    tt_val step = tt_b_bin(b, TT_OP_DIVIDE, tt_b_bin(b, TT_OP_SUBTRACT, end, start),
                              tt_b_constant(b, ct, (double)(steps - 1)));
    tt_val idx = tt_b_iota(b, s, 0);
    tt_val stepv = tt_b_broadcast_to(b, step, 1, &steps);
    tt_val lo = tt_b_bin(b, TT_OP_ADD, tt_b_broadcast_to(b, start, 1, &steps),
                            tt_b_bin(b, TT_OP_MULTIPLY, stepv, idx));
    tt_val rev = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_full(b, s, (double)(steps - 1)), idx);
    tt_val hi = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_broadcast_to(b, end, 1, &steps),
                            tt_b_bin(b, TT_OP_MULTIPLY, stepv, rev));
    tt_val first = tt_b_compare(b, "LT", idx, tt_b_full(b, s, (double)(steps / 2)));
    r = tt_b_select(b, first, lo, hi);
  }
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

/* logspace.out(start, end, steps, base, *, out), floating outs: CPU rounds
 * the bounds to the out dtype, then computes in double: step = (end -
 * start) / (steps - 1), pow(base, start + step*i) for the first half and
 * pow(base, end - step*(steps-1-i)) after; one step is pow(base, start). */
static tt_error *lower_logspace(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *out = tt_lc_ref(c, 4);
  int64_t steps = tt_lc_int(c, 2, -1);
  if (!out) return tt_lc_decline(c, "out is not a tensor");
  if (steps < 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "number of steps must be non-negative");
  tt_dtype dt = out->dtype;
  if (!tt_dtype_is_floating(dt)) return tt_lc_decline(c, "logspace into %s", tt_dtype_name(dt));
  if (steps == 0) {
    tt_lc_output(c, tt_b_full(b, tt_shape_make(dt, 1, &steps), 0));
    return NULL;
  }
  tt_shape s = tt_shape_make(TT_F64, 1, &steps);
  tt_val base = tt_b_full(b, s, tt_lc_double(c, 3, 10.0));
  tt_val start = tt_lc_scalar(c, 0, TT_F64), end = tt_lc_scalar(c, 1, TT_F64);
  tt_val r;
  if (steps == 1) {
    r = tt_b_bin(b, TT_OP_POWER, base, tt_b_broadcast_to(b, start, 1, &steps));
  } else {
    start = tt_b_convert(b, tt_b_convert(b, start, dt), TT_F64);
    end = tt_b_convert(b, tt_b_convert(b, end, dt), TT_F64);
    tt_val step = tt_b_bin(b, TT_OP_DIVIDE, tt_b_bin(b, TT_OP_SUBTRACT, end, start),
                              tt_b_constant(b, TT_F64, (double)(steps - 1)));
    tt_val idx = tt_b_iota(b, s, 0);
    tt_val stepv = tt_b_broadcast_to(b, step, 1, &steps);
    tt_val lo = tt_b_bin(b, TT_OP_ADD, tt_b_broadcast_to(b, start, 1, &steps),
                            tt_b_bin(b, TT_OP_MULTIPLY, stepv, idx));
    tt_val rev = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_full(b, s, (double)(steps - 1)), idx);
    tt_val hi = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_broadcast_to(b, end, 1, &steps),
                            tt_b_bin(b, TT_OP_MULTIPLY, stepv, rev));
    tt_val first = tt_b_compare(b, "LT", idx, tt_b_full(b, s, (double)(steps / 2)));
    r = tt_b_bin(b, TT_OP_POWER, base, tt_b_select(b, first, lo, hi));
  }
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

/* eye.m_out(n, m, *, out) / eye.out(n, *, out) */
static tt_error *lower_eye(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  bool has_m = tt_lc_nargs(c) >= 3;
  int64_t n = tt_lc_int(c, 0, -1), m = has_m ? tt_lc_int(c, 1, -1) : n;
  const tt_tensor_ref *out = tt_lc_ref(c, has_m ? 2 : 1);
  if (!out) return tt_lc_decline(c, "out is not a tensor");
  if (n < 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "n must be greater or equal to 0, got %lld", (long long)n);
  if (m < 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "m must be greater or equal to 0, got %lld", (long long)m);
  int64_t dims[2] = {n, m};
  tt_shape s = tt_shape_make(TT_I64, 2, dims);
  tt_val eq = tt_b_compare(b, "EQ", tt_b_iota(b, s, 0), tt_b_iota(b, s, 1));
  tt_lc_output(c, tt_b_convert(b, eq, out->dtype));
  return NULL;
}

/* ------------------------------------------------------------ random */

/* n random words (U32 or U64) from a fresh PHILOX state, as a 1-d tensor. */
static tt_val random_bits(tt_lower_ctx *c, int64_t n, tt_dtype word) {
  tt_builder *b = tt_lc_builder(c);
  tt_val state = tt_lc_rng_state(c);
  int64_t two = 2;
  tt_shape outs[2] = {tt_shape_make(TT_U64, 1, &two), tt_shape_make(word, 1, &n)};
  tt_val res[2] = {TT_INVALID, TT_INVALID};
  if (!tt_b_emit(b, TT_OP_RNG_BIT_GENERATOR, &state, 1,
                     "rng_algorithm = #stablehlo<rng_algorithm PHILOX>", NULL, outs, 2, res))
    return TT_INVALID;
  return res[1];
}

static int mantissa_digits(tt_dtype dt) {
  switch (dt) {
    case TT_F16: return 11;
    case TT_BF16: return 8;
    case TT_F64: return 53;
    default: return 24;
  }
}

/* Uniform [0, 1) values of dtype ct (f32 or f64), n of them (1-d), with
 * `digits` random bits: k * 2^-digits, exact in ct. */
static tt_val uniform01(tt_lower_ctx *c, int64_t n, tt_dtype ct, int digits) {
  tt_builder *b = tt_lc_builder(c);
  tt_dtype word = digits > 32 ? TT_U64 : TT_U32;
  tt_val bits = random_bits(c, n, word);
  int width = word == TT_U64 ? 64 : 32;
  tt_shape ws = tt_shape_make(word, 1, &n);
  tt_val sh = tt_b_broadcast_to(b, tt_b_constant_int(b, word, width - digits), 1, &n);
  bits = tt_b_emit1(b, TT_OP_SHIFT_RIGHT_LOGICAL, (tt_val[]){bits, sh}, 2, NULL, ws);
  tt_val u = tt_b_convert(b, bits, ct);
  return tt_b_bin(b, TT_OP_MULTIPLY, u, tt_b_full(b, tt_shape_make(ct, 1, &n), ldexp(1.0, -digits)));
}

static tt_val to_shape(tt_builder *b, tt_val flat, const tt_tensor_ref *r) {
  return tt_b_reshape(b, flat, r->ndim, r->sizes);
}

/* A random op's target: a device tensor, the default generator, and (when
 * float_kernel names the CPU kernel for PyTorch's message) a float dtype. */
static tt_error *check_random_target(tt_lower_ctx *c, const tt_tensor_ref *self, int gen_arg,
                                     const char *float_kernel) {
  if (!self) return tt_lc_decline(c, "self is not a tensor");
  if (tt_lc_kind(c, gen_arg) == TT_ARG_GENERATOR) return tt_lc_decline(c, "explicit generator");
  if (float_kernel && !tt_dtype_is_floating(self->dtype))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "\"%s\" not implemented for '%s'", float_kernel,
                      tt_dtype_name(self->dtype));
  return NULL;
}

/* uniform_(self, from, to): from + (to - from) * u with u = k * 2^-digits of
 * self's dtype, computed in self's dtype like torch. */
static tt_error *lower_uniform(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  TT_TRY(check_random_target(c, self, 3, "check_uniform_bounds"));
  tt_dtype dt = self->dtype;
  double from = tt_lc_double(c, 1, 0.0), to = tt_lc_double(c, 2, 1.0);
  if (!(from <= to))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "uniform_ expects to return a [from, to) range, but found from=%g > to=%g", from, to);
  int64_t n = numel_of(self);
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, tt_lc_ref_shape(self), 0));
    return NULL;
  }
  tt_val u = uniform01(c, n, dt == TT_F64 ? TT_F64 : TT_F32, mantissa_digits(dt));
  u = tt_b_convert(b, u, dt); /* exact: digits fit dt */
  tt_shape s = tt_shape_make(dt, 1, &n);
  tt_val r = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, u, tt_b_full(b, s, to - from)),
                         tt_b_full(b, s, from));
  tt_lc_output(c, to_shape(b, r, self));
  return NULL;
}

/* Standard normal values (Box-Muller), n of them, in ct (f32 or f64). */
static tt_val standard_normal(tt_lower_ctx *c, int64_t n, tt_dtype ct) {
  tt_builder *b = tt_lc_builder(c);
  int64_t half = (n + 1) / 2, two = 2 * half;
  int digits = ct == TT_F64 ? 53 : 24;
  tt_val u = uniform01(c, two, ct, digits);
  tt_shape hs = tt_shape_make(ct, 1, &half);
  int64_t z0 = 0, h1 = half, z1 = half, e1 = two;
  tt_val u1 = tt_b_slice(b, u, &z0, &h1, NULL), u2 = tt_b_slice(b, u, &z1, &e1, NULL);
  /* u1 in (0, 1] so the log is finite */
  u1 = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_full(b, hs, 1.0), u1);
  tt_val radius = tt_b_un(b, TT_OP_SQRT, tt_b_bin(b, TT_OP_MULTIPLY, tt_b_full(b, hs, -2.0),
                                                    tt_b_un(b, TT_OP_LOG, u1)));
  tt_val theta = tt_b_bin(b, TT_OP_MULTIPLY, tt_b_full(b, hs, 2.0 * M_PI), u2);
  tt_val z = tt_b_concat(b, (tt_val[]){tt_b_bin(b, TT_OP_MULTIPLY, radius, tt_b_un(b, TT_OP_COSINE, theta)),
                                       tt_b_bin(b, TT_OP_MULTIPLY, radius, tt_b_un(b, TT_OP_SINE, theta))},
                         2, 0);
  if (two != n) {
    int64_t lo = 0;
    z = tt_b_slice(b, z, &lo, &n, NULL);
  }
  return z;
}

/* normal_(self, mean, std) */
static tt_error *lower_normal_(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  TT_TRY(check_random_target(c, self, 3, "normal_kernel_cpu"));
  tt_dtype dt = self->dtype;
  double mean = tt_lc_double(c, 1, 0.0), std = tt_lc_double(c, 2, 1.0);
  if (std < 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "normal expects std >= 0.0, but found std %g", std);
  int64_t n = numel_of(self);
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, tt_lc_ref_shape(self), 0));
    return NULL;
  }
  tt_dtype ct = dt == TT_F64 ? TT_F64 : TT_F32;
  tt_shape s = tt_shape_make(ct, 1, &n);
  tt_val z = standard_normal(c, n, ct);
  z = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, z, tt_b_full(b, s, std)), tt_b_full(b, s, mean));
  tt_lc_output(c, to_shape(b, tt_b_convert(b, z, dt), self));
  return NULL;
}

/* normal.Tensor_float(mean, std) / normal.float_Tensor(mean, std) /
 * normal.Tensor_Tensor(mean, std): a new tensor mean + std * z. */
static tt_error *lower_normal(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  if (tt_lc_kind(c, 2) == TT_ARG_GENERATOR) return tt_lc_decline(c, "explicit generator");
  const tt_tensor_ref *m = tt_lc_ref(c, 0), *s = tt_lc_ref(c, 1);
  if ((m && !m->storage) || (s && !s->storage)) return tt_lc_decline(c, "CPU scalar operand");
  int nd = 0;
  int64_t dims[TT_MAX_DIMS];
  tt_dtype dt;
  if (m && s) {
    if (!tt_dtype_is_floating(m->dtype) || !tt_dtype_is_floating(s->dtype) || m->dtype != s->dtype)
      return tt_lc_decline(c, "normal over %s and %s", tt_dtype_name(m->dtype), tt_dtype_name(s->dtype));
    bool same = m->ndim == s->ndim;
    for (int i = 0; same && i < m->ndim; i++) same = m->sizes[i] == s->sizes[i];
    if (!same) return tt_lc_decline(c, "normal with differently shaped mean and std");
    dt = m->dtype;
    nd = m->ndim;
    for (int i = 0; i < nd; i++) dims[i] = m->sizes[i];
  } else {
    const tt_tensor_ref *t = m ? m : s;
    if (!t) return tt_lc_decline(c, "no tensor operand");
    if (!tt_dtype_is_floating(t->dtype)) return tt_lc_decline(c, "normal over %s", tt_dtype_name(t->dtype));
    dt = t->dtype;
    nd = t->ndim;
    for (int i = 0; i < nd; i++) dims[i] = t->sizes[i];
  }
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  tt_dtype ct = dt == TT_F64 ? TT_F64 : TT_F32;
  tt_shape os = tt_shape_make(ct, nd, dims);
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, tt_shape_make(dt, nd, dims), 0));
    return NULL;
  }
  tt_val z = tt_b_reshape(b, standard_normal(c, n, ct), nd, dims);
  tt_val mean = m ? tt_b_convert(b, tt_lc_tensor(c, 0), ct) : tt_b_full(b, os, tt_lc_double(c, 0, 0.0));
  tt_val std = s ? tt_b_convert(b, tt_lc_tensor(c, 1), ct) : tt_b_full(b, os, tt_lc_double(c, 1, 1.0));
  if (!s && tt_lc_double(c, 1, 1.0) < 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "normal expects std >= 0.0, but found std %g",
                      tt_lc_double(c, 1, 1.0));
  tt_val r = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, z, std), mean);
  tt_lc_output(c, tt_b_convert(b, r, dt));
  return NULL;
}

/* bernoulli_.float(self, p) / bernoulli.p(self, p): u < p, u with 24 (53
 * for f64 p) random bits, in self's dtype. */
static tt_error *lower_bernoulli_float(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  TT_TRY(check_random_target(c, self, 2, NULL));
  double p = tt_lc_double(c, 1, 0.5);
  if (!(p >= 0 && p <= 1))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "bernoulli_ expects p to be in [0, 1], but got p=%g", p);
  tt_dtype dt = self->dtype;
  if (!tt_dtype_is_floating(dt) && !tt_dtype_is_integral(dt) && dt != TT_BOOL)
    return tt_lc_decline(c, "bernoulli into %s", tt_dtype_name(dt));
  int64_t n = numel_of(self);
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, tt_lc_ref_shape(self), 0));
    return NULL;
  }
  tt_val u = uniform01(c, n, TT_F64, 53);
  tt_val hit = tt_b_compare(b, "LT", u, tt_b_full(b, tt_shape_make(TT_F64, 1, &n), p));
  tt_lc_output(c, to_shape(b, tt_b_convert(b, hit, dt), self));
  return NULL;
}

/* bernoulli_.Tensor(self, p) (p broadcast to self) and bernoulli(self)
 * (self holds the probabilities): u < p. */
static tt_error *lower_bernoulli_tensor(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  bool inplace = tt_lc_nargs(c) >= 3;
  int ip = inplace ? 1 : 0;
  TT_TRY(check_random_target(c, self, inplace ? 2 : 1, NULL));
  const tt_tensor_ref *p = tt_lc_ref(c, ip);
  if (!p) return tt_lc_decline(c, "p is not a tensor");
  if (!tt_dtype_is_floating(p->dtype)) return tt_lc_decline(c, "p of dtype %s", tt_dtype_name(p->dtype));
  tt_dtype dt = self->dtype;
  if (!tt_dtype_is_floating(dt) && !tt_dtype_is_integral(dt) && dt != TT_BOOL)
    return tt_lc_decline(c, "bernoulli into %s", tt_dtype_name(dt));
  int64_t n = numel_of(self);
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, tt_lc_ref_shape(self), 0));
    return NULL;
  }
  tt_dtype ct = p->dtype == TT_F64 ? TT_F64 : TT_F32;
  tt_val u = tt_b_reshape(b, uniform01(c, n, ct, ct == TT_F64 ? 53 : 24), self->ndim, self->sizes);
  tt_val pv = tt_operand(c, ip, ct, self->ndim, self->sizes);
  tt_val hit = tt_b_compare(b, "LT", u, pv);
  tt_lc_output(c, tt_b_convert(b, hit, dt));
  return NULL;
}

/* Largest integer of dt that random_() produces (inclusive upper bound). */
static bool random_max(tt_dtype dt, uint64_t *max) {
  switch (dt) {
    case TT_BOOL: *max = 1; return true;
    case TT_U8: *max = 255; return true;
    case TT_I8: *max = 127; return true;
    case TT_I16: *max = 32767; return true;
    case TT_I32: *max = 2147483647; return true;
    case TT_I64: *max = (uint64_t)INT64_MAX; return true;
    case TT_F16: case TT_BF16: case TT_F32: case TT_F64:
      *max = (uint64_t)1 << mantissa_digits(dt);
      return true;
    default: return false;
  }
}

/* random_(self) / random_.from(self, from, to) / random_.to(self, to):
 * from + bits % (to - from), like torch (32 random bits for ranges below
 * 2^32, 64 otherwise). */
static tt_error *lower_random(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const char *name = tt_lc_op_name(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  bool is_from = strstr(name, ".from") != NULL, is_to = strstr(name, ".to") != NULL;
  int gen = is_from ? 3 : (is_to ? 2 : 1);
  TT_TRY(check_random_target(c, self, gen, NULL));
  tt_dtype dt = self->dtype;
  uint64_t max;
  if (!random_max(dt, &max)) return tt_lc_decline(c, "random_ into %s", tt_dtype_name(dt));
  int64_t from = 0;
  uint64_t range; /* 0 means the full 2^64 range */
  if (is_from) {
    from = tt_lc_int(c, 1, 0);
    if (tt_lc_is_none(c, 2)) {
      if (from < 0 && !tt_dtype_is_floating(dt) && dt != TT_I64)
        return tt_lc_decline(c, "random_ from a negative bound without to");
      range = max - (uint64_t)from + 1;
    } else {
      int64_t to = tt_lc_int(c, 2, 0);
      if (!(from < to))
        return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                          "random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                          (long long)from, (long long)to);
      range = (uint64_t)to - (uint64_t)from;
    }
  } else if (is_to) {
    int64_t to = tt_lc_int(c, 1, 0);
    if (!(to > 0))
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "random_ expects 'from' to be less than 'to', but got from=0 >= to=%lld",
                        (long long)to);
    range = (uint64_t)to;
  } else {
    range = max + 1;
  }
  /* the values must be exact in dt (torch checks this for float dtypes) */
  if (tt_dtype_is_floating(dt)) {
    uint64_t lim = (uint64_t)1 << mantissa_digits(dt);
    int64_t hi = from + (int64_t)(range - 1);
    if (from < -(int64_t)lim || hi > (int64_t)lim) return tt_lc_decline(c, "random_ range not exact in %s", tt_dtype_name(dt));
  }
  int64_t n = numel_of(self);
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, tt_lc_ref_shape(self), 0));
    return NULL;
  }
  tt_val v;
  if (range != 0 && range <= 0xFFFFFFFFull) {
    tt_val bits = random_bits(c, n, TT_U32);
    tt_val r = tt_b_broadcast_to(b, tt_b_constant_int(b, TT_U32, (int64_t)range), 1, &n);
    v = tt_b_convert(b, tt_b_bin(b, TT_OP_REMAINDER, bits, r), TT_I64);
  } else {
    tt_val bits = random_bits(c, n, TT_U64);
    if (range != 0) {
      tt_val r = tt_b_broadcast_to(b, tt_b_constant_int(b, TT_U64, (int64_t)range), 1, &n);
      bits = tt_b_bin(b, TT_OP_REMAINDER, bits, r);
    }
    v = tt_b_bitcast(b, bits, tt_shape_make(TT_I64, 1, &n));
  }
  v = tt_b_bin(b, TT_OP_ADD, v, tt_b_broadcast_to(b, tt_b_constant_int(b, TT_I64, from), 1, &n));
  tt_lc_output(c, to_shape(b, tt_b_convert(b, v, dt), self));
  return NULL;
}

/* exponential_(self, lambd): -log(1 - u) / lambd */
static tt_error *lower_exponential(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  TT_TRY(check_random_target(c, self, 2, "exponential_cpu"));
  tt_dtype dt = self->dtype;
  double lambd = tt_lc_double(c, 1, 1.0);
  if (!(lambd > 0))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "exponential_ expects lambda > 0.0, but found lambda=%g", lambd);
  int64_t n = numel_of(self);
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, tt_lc_ref_shape(self), 0));
    return NULL;
  }
  tt_dtype ct = dt == TT_F64 ? TT_F64 : TT_F32;
  tt_shape s = tt_shape_make(ct, 1, &n);
  tt_val u = uniform01(c, n, ct, ct == TT_F64 ? 53 : 24);
  tt_val r = tt_b_bin(b, TT_OP_MULTIPLY, tt_b_un(b, TT_OP_LOG1P, tt_b_un(b, TT_OP_NEGATE, u)),
                         tt_b_full(b, s, -1.0 / lambd));
  tt_lc_output(c, to_shape(b, tt_b_convert(b, r, dt), self));
  return NULL;
}

/* cauchy_(self, median, sigma), log_normal_(self, mean, std) and
 * geometric_(self, p) (and their functional forms): transforms of uniform
 * or standard normal draws, the distributions PyTorch's CPU kernels sample
 * (median + sigma tan(pi (u - 1/2)); exp(mean + std z); ceil(log(v) /
 * log1p(-p)) with v in (0, 1], at least 1). Float dtypes only (geometric
 * also fills integer tensors); CPU raises for the others. */
enum { DIST_CAUCHY, DIST_LOG_NORMAL, DIST_GEOMETRIC };

static tt_error *random_dist(tt_lower_ctx *c, int kind) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  int gen_arg = kind == DIST_GEOMETRIC ? 2 : 3;
  TT_TRY(check_random_target(c, self, gen_arg, NULL));
  tt_dtype dt = self->dtype;
  if (!tt_dtype_is_floating(dt) && !(kind == DIST_GEOMETRIC && tt_dtype_is_integral(dt)))
    return tt_lc_decline(c, "%s of %s (torch raises)", tt_lc_op_name(c), tt_dtype_name(dt));
  double a = tt_lc_double(c, 1, kind == DIST_LOG_NORMAL ? 1.0 : 0.0);
  double s2 = kind == DIST_GEOMETRIC ? 0 : tt_lc_double(c, 2, kind == DIST_LOG_NORMAL ? 2.0 : 1.0);
  if (kind == DIST_CAUCHY && !(s2 > 0))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "cauchy_ expects sigma > 0.0, but found sigma=%g", s2);
  if (kind == DIST_LOG_NORMAL && !(s2 > 0))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "log_normal_ expects std > 0.0, but found std=%g", s2);
  if (kind == DIST_GEOMETRIC && !(a > 0 && a < 1))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "geometric_ expects p to be in (0, 1), but got p=%g", a);
  int64_t n = numel_of(self);
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, tt_lc_ref_shape(self), 0));
    return NULL;
  }
  tt_dtype ct = dt == TT_F64 ? TT_F64 : TT_F32;
  tt_shape s = tt_shape_make(ct, 1, &n);
  tt_val r;
  if (kind == DIST_LOG_NORMAL) {
    tt_val z = standard_normal(c, n, ct);
    r = tt_b_un(b, TT_OP_EXPONENTIAL, tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, z, tt_b_full(b, s, s2)),
                                                 tt_b_full(b, s, a)));
  } else {
    tt_val u = uniform01(c, n, ct, ct == TT_F64 ? 53 : 24);
    if (kind == DIST_CAUCHY) {
      tt_val t = tt_b_un(b, TT_OP_TAN, tt_b_bin(b, TT_OP_MULTIPLY, tt_b_full(b, s, M_PI),
                                                   tt_b_bin(b, TT_OP_SUBTRACT, u, tt_b_full(b, s, 0.5))));
      r = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, t, tt_b_full(b, s, s2)), tt_b_full(b, s, a));
    } else {
      tt_val v = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_full(b, s, 1.0), u); /* (0, 1] */
      r = tt_b_un(b, TT_OP_CEIL, tt_b_bin(b, TT_OP_DIVIDE, tt_b_un(b, TT_OP_LOG, v), tt_b_full(b, s, log1p(-a))));
      r = tt_b_bin(b, TT_OP_MAXIMUM, r, tt_b_full(b, s, 1.0));
    }
  }
  tt_lc_output(c, to_shape(b, tt_b_convert(b, r, dt), self));
  return NULL;
}
static tt_error *lower_cauchy(tt_lower_ctx *c) { return random_dist(c, DIST_CAUCHY); }
static tt_error *lower_log_normal(tt_lower_ctx *c) { return random_dist(c, DIST_LOG_NORMAL); }
static tt_error *lower_geometric(tt_lower_ctx *c) { return random_dist(c, DIST_GEOMETRIC); }

/* ------------------------------------------------------------ tril_indices / triu_indices */

/* Number of (r, c), 0 <= r < row, 0 <= c < col, with c - r <= offset. */
static int64_t tril_count(int64_t row, int64_t col, int64_t offset) {
  int64_t n = 0;
  for (int64_t r = 0; r < row; r++) {
    int64_t k = r + offset + 1;
    n += k < 0 ? 0 : (k > col ? col : k);
  }
  return n;
}

/* Row and column of the k-th (row-major) element of the tril pattern, for
 * an i64 [N] tensor k: rows first grow by one element (a triangle, solved
 * with a square root then corrected by +-1 exactly), then hold col. */
static void tril_coords(tt_builder *b, tt_val k, int64_t n, int64_t row, int64_t col, int64_t offset,
                        tt_val *r_out, tt_val *c_out) {
  tt_shape is = tt_shape_make(TT_I64, 1, &n), fs = tt_shape_make(TT_F64, 1, &n);
  int64_t r0 = offset < 0 ? -offset : 0;
  int64_t a = r0 + offset + 1 < col ? r0 + offset + 1 : col; /* elements in row r0 */
  int64_t r1 = col - offset - 1 < row ? col - offset - 1 : row;
  int64_t t_rows = r1 - r0 > 0 ? r1 - r0 : 0; /* triangle rows */
  int64_t k1 = t_rows * a + t_rows * (t_rows - 1) / 2;
#define FULL(v) tt_b_full(b, is, (double)(v))
  /* triangle: S(t) = t*a + t(t-1)/2 <= k < S(t+1) */
  double A = 2.0 * (double)a - 1.0;
  tt_val kd = tt_b_convert(b, k, TT_F64);
  tt_val disc = tt_b_bin(b, TT_OP_ADD, tt_b_full(b, fs, A * A), tt_b_bin(b, TT_OP_MULTIPLY, tt_b_full(b, fs, 8.0), kd));
  tt_val tf = tt_b_bin(b, TT_OP_MULTIPLY, tt_b_bin(b, TT_OP_SUBTRACT, tt_b_un(b, TT_OP_SQRT, disc), tt_b_full(b, fs, A)),
                          tt_b_full(b, fs, 0.5));
  tt_val t = tt_b_convert(b, tt_b_un(b, TT_OP_FLOOR, tf), TT_I64);
  for (int pass = 0; pass < 2; pass++) {
    /* S(t) = t*a + t*(t-1)/2 */
    tt_val s = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, t, FULL(a)),
                           tt_b_bin(b, TT_OP_DIVIDE, tt_b_bin(b, TT_OP_MULTIPLY, t, tt_b_bin(b, TT_OP_SUBTRACT, t, FULL(1))), FULL(2)));
    tt_val s1 = tt_b_bin(b, TT_OP_ADD, s, tt_b_bin(b, TT_OP_ADD, t, FULL(a)));
    t = tt_b_select(b, tt_b_compare(b, "GT", s, k), tt_b_bin(b, TT_OP_SUBTRACT, t, FULL(1)),
                    tt_b_select(b, tt_b_compare(b, "LE", s1, k), tt_b_bin(b, TT_OP_ADD, t, FULL(1)), t));
  }
  t = tt_b_emit1(b, TT_OP_CLAMP, (tt_val[]){FULL(0), t, FULL(t_rows > 0 ? t_rows - 1 : 0)}, 3, NULL, is);
  tt_val st = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, t, FULL(a)),
                          tt_b_bin(b, TT_OP_DIVIDE, tt_b_bin(b, TT_OP_MULTIPLY, t, tt_b_bin(b, TT_OP_SUBTRACT, t, FULL(1))), FULL(2)));
  tt_val r_tri = tt_b_bin(b, TT_OP_ADD, t, FULL(r0)), c_tri = tt_b_bin(b, TT_OP_SUBTRACT, k, st);
  /* rectangle: full rows from r0 + t_rows */
  tt_val kk = tt_b_bin(b, TT_OP_SUBTRACT, k, FULL(k1));
  kk = tt_b_select(b, tt_b_compare(b, "LT", kk, FULL(0)), FULL(0), kk);
  tt_val r_rec = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_DIVIDE, kk, FULL(col)), FULL(r0 + t_rows));
  tt_val c_rec = tt_b_bin(b, TT_OP_REMAINDER, kk, FULL(col));
  tt_val in_tri = tt_b_compare(b, "LT", k, FULL(k1));
  *r_out = tt_b_select(b, in_tri, r_tri, r_rec);
  *c_out = tt_b_select(b, in_tri, c_tri, c_rec);
#undef FULL
}

/* tril_indices(row, col, offset, dtype...) / triu_indices / their .out:
 * a [2, N] tensor of coordinates in row-major order. triu is tril of the
 * grid reflected through its center, read backwards. */
static tt_error *lower_tri_indices(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  bool upper = strncmp(tt_lc_op_name(c), "triu", 4) == 0;
  bool out_form = strstr(tt_lc_op_name(c), ".out") != NULL;
  int64_t row = tt_lc_int(c, 0, 0), col = tt_lc_int(c, 1, 0), offset = tt_lc_int(c, 2, 0);
  if (row < 0 || col < 0) return tt_lc_decline(c, "negative size (torch raises)");
  tt_dtype dt = TT_I64;
  if (out_form) {
    const tt_tensor_ref *o = tt_lc_ref(c, 3);
    if (!o) return tt_lc_decline(c, "out is not a tensor");
    dt = o->dtype;
  } else {
    dt = tt_lc_dtype(c, 3, TT_I64);
  }
  if (dt != TT_I64 && dt != TT_I32) return tt_lc_decline(c, "dtype %s", tt_dtype_name(dt));
  int64_t off = upper ? col - row - offset : offset;
  int64_t n = tril_count(row, col, off);
  int64_t od[2] = {2, n};
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, tt_shape_make(dt, 2, od), 0));
    return NULL;
  }
  tt_shape is = tt_shape_make(TT_I64, 1, &n);
  tt_val k = tt_b_iota(b, is, 0);
  if (upper) k = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_full(b, is, (double)(n - 1)), k);
  tt_val r, cc;
  tril_coords(b, k, n, row, col, off, &r, &cc);
  if (upper) {
    r = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_full(b, is, (double)(row - 1)), r);
    cc = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_full(b, is, (double)(col - 1)), cc);
  }
  int64_t d1[2] = {1, n};
  tt_val parts[2] = {tt_b_reshape(b, r, 2, d1), tt_b_reshape(b, cc, 2, d1)};
  tt_lc_output(c, tt_b_convert(b, tt_b_concat(b, parts, 2, 0), dt));
  return NULL;
}

/* ------------------------------------------------------------ multinomial */

/* Index of the first maximum of x (rank nd, no NaN) along its last dim,
 * that dim removed. */
static tt_val first_argmax_last(tt_builder *b, tt_val x) {
  tt_shape s = tt_b_shape(b, x);
  int64_t last = s.ndim - 1, k = s.dims[last];
  tt_val m = tt_b_reduce(b, x, tt_b_constant(b, s.dtype, tt_dtype_lowest(s.dtype)), &last, 1, "maximum");
  int64_t keep[TT_MAX_DIMS];
  for (int i = 0; i < last; i++) keep[i] = i;
  tt_val mb = tt_b_broadcast_in_dim(b, m, s.ndim, s.dims, keep);
  tt_shape is = s;
  is.dtype = TT_I64;
  tt_val iota = tt_b_iota(b, is, (int)last);
  tt_val idx = tt_b_select(b, tt_b_compare(b, "GE", x, mb), iota, tt_b_full(b, is, (double)(k - 1)));
  return tt_b_reduce(b, idx, tt_b_constant_int(b, TT_I64, k - 1), &last, 1, "minimum");
}

/* The indices of the n largest values of x [r, k] along dim 1, largest
 * first (a stable descending sort: ties keep the lower index first). */
static tt_val top_indices(tt_builder *b, tt_val x, int64_t n) {
  tt_shape s = tt_b_shape(b, x), is = s;
  is.dtype = TT_I64;
  char ty[64], rg[1024];
  tt_shape sc = tt_shape_scalar(s.dtype);
  tt_shape_print(&sc, ty, sizeof ty);
  snprintf(rg, sizeof rg,
           "    ^bb0(%%a: %s, %%b: %s, %%ai: tensor<i64>, %%bi: tensor<i64>):\n"
           "      %%c = \"stablehlo.compare\"(%%a, %%b) {comparison_direction = "
           "#stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} "
           ": (%s, %s) -> tensor<i1>\n"
           "      \"stablehlo.return\"(%%c) : (tensor<i1>) -> ()",
           ty, ty, ty, ty);
  tt_shape outs[2] = {s, is};
  tt_val ins[2] = {x, tt_b_iota(b, is, 1)}, res[2] = {TT_INVALID, TT_INVALID};
  if (!tt_b_emit(b, TT_OP_SORT, ins, 2, "dimension = 1 : i64, is_stable = true", rg, outs, 2, res))
    return TT_INVALID;
  int64_t lo[2] = {0, 0}, hi[2] = {s.dims[0], n};
  return tt_b_slice(b, res[1], lo, hi, NULL);
}

/* multinomial(self, num_samples, replacement, generator) and .out: the
 * exponential race (Gumbel-max) on the device RNG, like ATen's own fast
 * path: with q ~ Exp(1) per category, argmax(p / q) is category i with
 * probability p_i / sum(p), and the n largest of p / q are n draws without
 * replacement. With replacement, each of the n samples races its own q.
 * PyTorch's checks on the values (negative, inf/NaN, zero-sum rows) need
 * the data: the boundary (csrc/torch/kernels.cpp) makes them first. */
static tt_error *lower_multinomial(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  TT_TRY(check_random_target(c, self, 3, NULL));
  if (self->ndim < 1 || self->ndim > 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "prob_dist must be 1 or 2 dim");
  if (!tt_dtype_is_floating(self->dtype))
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "multinomial only supports floating-point dtypes for input, got: %s",
                      tt_dtype_torch_name(self->dtype));
  int64_t n = tt_lc_int(c, 1, 1);
  bool repl = tt_lc_bool(c, 2, false);
  int64_t k = self->sizes[self->ndim - 1], rows = self->ndim == 2 ? self->sizes[0] : 1;
  if (n <= 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "cannot sample n_sample <= 0 samples");
  if (!repl && n > k)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  if (k > (1 << 24)) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "number of categories cannot exceed 2^24");
  const tt_tensor_ref *out = tt_lc_nargs(c) > 4 ? tt_lc_ref(c, 4) : NULL;
  if (out && out->dtype != TT_I64)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "multinomial expects Long tensor out, got: %s",
                      tt_dtype_torch_name(out->dtype));
  if (k == 0 || rows == 0) return tt_lc_decline(c, "multinomial over an empty distribution");
  bool per_sample = repl && n > 1;
  int64_t draws = rows * k * (per_sample ? n : 1);
  if (draws > ((int64_t)1 << 26)) return tt_lc_decline(c, "multinomial needing %lld random draws", (long long)draws);

  tt_dtype ct = self->dtype == TT_F64 ? TT_F64 : TT_F32;
  int digits = ct == TT_F64 ? 52 : 23;
  int64_t d2[2] = {rows, k}, d3[3] = {rows, n, k};
  tt_val p = tt_b_reshape(b, tt_b_convert(b, tt_lc_tensor(c, 0), ct), 2, d2);
  /* v = (j + 1/2) 2^-digits in (0, 1), exact; q = -log(v) > 0 */
  tt_val u = uniform01(c, draws, ct, digits);
  tt_shape us = tt_shape_make(ct, 1, &draws);
  u = tt_b_bin(b, TT_OP_ADD, u, tt_b_full(b, us, ldexp(1.0, -digits - 1)));
  tt_val q = tt_b_un(b, TT_OP_NEGATE, tt_b_un(b, TT_OP_LOG, u));
  tt_val r;
  if (per_sample) {
    q = tt_b_reshape(b, q, 3, d3);
    int64_t keep[2] = {0, 2};
    tt_val pb = tt_b_broadcast_in_dim(b, p, 3, d3, keep);
    r = first_argmax_last(b, tt_b_bin(b, TT_OP_DIVIDE, pb, q)); /* [rows, n] */
  } else {
    tt_val v = tt_b_bin(b, TT_OP_DIVIDE, p, tt_b_reshape(b, q, 2, d2));
    if (n == 1) {
      int64_t d21[2] = {rows, 1};
      r = tt_b_reshape(b, first_argmax_last(b, v), 2, d21);
    } else {
      r = top_indices(b, v, n);
    }
  }
  if (self->ndim == 1) r = tt_b_reshape(b, r, 1, &n);
  tt_lc_output(c, r);
  return NULL;
}

TT_LOWERINGS(creation) = {
    {lower_copy, {"copy_", "copy", "copy.out"}},
    {lower_fill, {"fill_.Scalar", "fill_.Tensor", "fill.Scalar", "fill.Tensor"}},
    {lower_zero, {"zero_", "zero"}},
    {lower_clone, {"clone", "clone.out"}},
    {lower_arange, {"arange.start_out", "arange.out"}},
    {lower_linspace, {"linspace.out"}},
    {lower_logspace, {"logspace.out"}},
    {lower_eye, {"eye.m_out", "eye.out"}},
    {lower_uniform, {"uniform_", "uniform", "uniform.out"}},
    {lower_normal_, {"normal_", "normal_functional"}},
    {lower_normal, {"normal.Tensor_float", "normal.float_Tensor", "normal.Tensor_Tensor"}},
    {lower_bernoulli_float, {"bernoulli_.float", "bernoulli.p"}},
    {lower_bernoulli_tensor, {"bernoulli_.Tensor", "bernoulli"}},
    {lower_random, {"random_", "random_.from", "random_.to", "random", "random.from", "random.to"}},
    {lower_exponential, {"exponential_", "exponential"}},
    {lower_cauchy, {"cauchy_", "cauchy"}},
    {lower_log_normal, {"log_normal_", "log_normal"}},
    {lower_geometric, {"geometric_", "geometric"}},
    {lower_multinomial, {"multinomial", "multinomial.out"}},
    {lower_tri_indices, {"tril_indices", "tril_indices.out", "triu_indices", "triu_indices.out"}},
    {NULL, {NULL}},
};
