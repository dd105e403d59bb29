/* Discrete Fourier transforms: ATen's three FFT primitives, which every
 * torch.fft function (fft/ifft/rfft/irfft/hfft/ihfft and their 2-d and n-d
 * forms) and stft/istft reduce to:
 *   _fft_r2c(self, dim, normalization, onesided)  real -> complex
 *   _fft_c2r(self, dim, normalization, last_dim_size)  complex -> real
 *   _fft_c2c(self, dim, normalization, forward)
 * lowered to stablehlo.fft, which transforms the trailing (at most three)
 * dims: the transformed dims are moved to the end (a transpose), chunked by
 * three, and moved back.
 *
 * Scaling: ATen's normalization is 0 (none), 1 (1/sqrt(n)) or 2 (1/n) with
 * n the product of the signal sizes; XLA's inverse transforms (IFFT, IRFFT)
 * already divide by n, so their results are first multiplied back by n. */
#include <math.h>
#include <string.h>

#include "ops/common.h"

enum { NORM_NONE = 0, NORM_SQRT_N = 1, NORM_N = 2 };

/* One transform over dims[0..n) (n <= 3) of x: those dims go last in
 * order, the rest keep theirs. lengths: the transform lengths. */
static tt_val fft_over(tt_builder *b, tt_val x, const char *type, const int64_t *dims, int n,
                       const int64_t *lengths) {
  int nd = tt_b_ndim(b, x);
  int64_t perm[TT_MAX_DIMS], inv[TT_MAX_DIMS];
  int k = 0;
  for (int d = 0; d < nd; d++) {
    bool moved = false;
    for (int j = 0; j < n; j++) moved |= dims[j] == d;
    if (!moved) perm[k++] = d;
  }
  for (int j = 0; j < n; j++) perm[k++] = dims[j];
  bool identity = true;
  for (int d = 0; d < nd; d++) {
    inv[perm[d]] = d;
    identity &= perm[d] == d;
  }
  tt_val t = identity ? x : tt_b_transpose(b, x, perm);
  t = tt_b_fft(b, t, type, lengths, n);
  return identity ? t : tt_b_transpose(b, t, inv);
}

/* A complex-to-complex transform over any number of dims, three at a time. */
static tt_val c2c_over(tt_builder *b, tt_val x, bool forward, const int64_t *dims, int n) {
  tt_shape s = tt_b_shape(b, x);
  for (int i = 0; i < n; i += 3) {
    int m = n - i < 3 ? n - i : 3;
    int64_t len[3];
    for (int j = 0; j < m; j++) len[j] = s.dims[dims[i + j]];
    x = fft_over(b, x, forward ? "FFT" : "IFFT", dims + i, m, len);
  }
  return x;
}

/* Multiplies x by ATen's normalization of a transform of n points; `xla_inverse`:
 * x came from XLA's IFFT/IRFFT, which divided by n already. */
static tt_val normalize(tt_builder *b, tt_val x, int norm, double n, bool xla_inverse) {
  double scale = norm == NORM_N ? 1.0 / n : norm == NORM_SQRT_N ? 1.0 / sqrt(n) : 1.0;
  if (xla_inverse) scale *= n;
  if (scale == 1.0) return x;
  return tt_mul(b, x, tt_scalar_like(b, x, scale));
}

/* What every primitive reads first: the dims argument, wrapped and checked
 * (distinct, in range), the input's dtype class and a non-empty signal, the
 * normalization (argument 2). Returns NULL with a->n dims, or c's decline or
 * failure. */
typedef struct {
  int64_t dims[TT_MAX_DIMS];
  int n;
  int norm;
  const tt_tensor_ref *self;
} fft_args;

static bool empty_signal(const tt_tensor_ref *r) {
  for (int i = 0; i < r->ndim; i++)
    if (r->sizes[i] == 0) return true;
  return false;
}

static tt_error *read_args(tt_lower_ctx *c, bool complex_input, fft_args *a) {
  const char *op = tt_lc_op_name(c);
  a->self = tt_lc_ref(c, 0);
  a->n = tt_lc_int_list(c, 1, a->dims, TT_MAX_DIMS);
  if (!a->self || a->n < 1) return tt_lc_decline(c, "%s over no dims", op);
  for (int i = 0; i < a->n; i++) {
    a->dims[i] = tt_wrap_dim(c, a->dims[i], a->self->ndim);
    if (a->dims[i] < 0) return tt_lc_fail(c, TT_ERR_INDEX, "%s: dim out of range", op);
    for (int j = 0; j < i; j++)
      if (a->dims[j] == a->dims[i])
        return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "FFT dims must be unique");
  }
  tt_dtype dt = a->self->dtype;
  bool ok = complex_input ? tt_dtype_is_complex(dt) : (dt == TT_F32 || dt == TT_F64);
  if (!ok) return tt_lc_decline(c, "%s of %s", op, tt_dtype_name(dt));
  if (empty_signal(a->self)) return tt_lc_decline(c, "%s of an empty tensor", op);
  a->norm = (int)tt_lc_int(c, 2, NORM_NONE);
  return NULL;
}

/* The number of points of a transform over a's dims (the first `count`). */
static double signal_points(const fft_args *a, int count) {
  double points = 1;
  for (int i = 0; i < count; i++) points *= (double)a->self->sizes[a->dims[i]];
  return points;
}

/* _fft_r2c(self, dim, normalization, onesided) */
static tt_error *lower_fft_r2c(tt_lower_ctx *c) {
  fft_args a;
  tt_error *err = read_args(c, false, &a);
  if (err) return err;
  const tt_tensor_ref *self = a.self;
  int n = a.n, norm = a.norm;
  const int64_t *dims = a.dims;
  bool onesided = tt_lc_bool(c, 3, true);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_lc_tensor(c, 0);
  double points = signal_points(&a, n);
  tt_val y;
  if (onesided) {
    /* the last dim listed is halved (RFFT), the others are full transforms */
    int64_t last = dims[n - 1], len = self->sizes[last];
    y = fft_over(b, x, "RFFT", &last, 1, &len);
    y = c2c_over(b, y, true, dims, n - 1);
  } else {
    y = c2c_over(b, tt_b_convert(b, x, tt_dtype_to_complex(self->dtype)), true, dims, n);
  }
  tt_lc_output(c, normalize(b, y, norm, points, false));
  return NULL;
}

/* _fft_c2r(self, dim, normalization, last_dim_size): the inverse of a
 * onesided r2c; the last dim listed has last_dim_size real outputs, read
 * from its first last_dim_size / 2 + 1 entries (zero-padded if fewer). */
static tt_error *lower_fft_c2r(tt_lower_ctx *c) {
  fft_args a;
  tt_error *err = read_args(c, true, &a);
  if (err) return err;
  const tt_tensor_ref *self = a.self;
  int n = a.n, norm = a.norm;
  const int64_t *dims = a.dims;
  int64_t out_len = tt_lc_int(c, 3, 0);
  if (out_len < 1)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Invalid number of data points (%lld) specified",
                      (long long)out_len);
  tt_builder *b = tt_lc_builder(c);
  tt_val x = tt_lc_tensor(c, 0);
  int64_t last = dims[n - 1], need = out_len / 2 + 1, have = self->sizes[last];
  if (have > need) {
    x = tt_slice_dim(b, x, (int)last, 0, need);
  } else if (have < need) {
    int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0};
    hi[last] = need - have;
    x = tt_b_pad(b, x, tt_scalar_like(b, x, 0), lo, hi, NULL);
  }
  double points = (double)out_len * signal_points(&a, n - 1);
  x = c2c_over(b, x, false, dims, n - 1);
  tt_val y = fft_over(b, x, "IRFFT", &last, 1, &out_len);
  tt_lc_output(c, normalize(b, y, norm, points, true));
  return NULL;
}

/* _fft_c2c(self, dim, normalization, forward) */
static tt_error *lower_fft_c2c(tt_lower_ctx *c) {
  fft_args a;
  tt_error *err = read_args(c, true, &a);
  if (err) return err;
  bool forward = tt_lc_bool(c, 3, true);
  tt_builder *b = tt_lc_builder(c);
  tt_val y = c2c_over(b, tt_lc_tensor(c, 0), forward, a.dims, a.n);
  tt_lc_output(c, normalize(b, y, a.norm, signal_points(&a, a.n), !forward));
  return NULL;
}

TT_LOWERINGS(fft) = {
    {lower_fft_r2c, {"_fft_r2c", "_fft_r2c.out"}},
    {lower_fft_c2r, {"_fft_c2r", "_fft_c2r.out"}},
    {lower_fft_c2c, {"_fft_c2c", "_fft_c2c.out"}},
    {NULL, {NULL}},
};
