/* Lowerings of the shape_ops family (see lowering.h): concatenation, masks
 * and triangles, flip/roll/repeat/padding, narrow_copy and the
 * scatter-into-slices backward helpers (slice/select/diagonal_scatter),
 * masked_scatter, histc and unfold_backward. */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/indexing_common.h"

/* ------------------------------------------------------------ cat */

/* cat(tensors, dim): legacy empty 1-D tensors (shape [0]) are skipped like
 * torch does; the dtype promotes over every input. */
static tt_error *lower_cat(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  int n = tt_lc_list_len(c, 0);
  if (n == 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "torch.cat(): expected a non-empty list of Tensors");
  tt_dtype dt = TT_BOOL;
  int first = -1;
  for (int j = 0; j < n; j++) {
    const tt_tensor_ref *r = tt_lc_list_ref(c, 0, j);
    if (!r || !r->storage) return tt_lc_decline(c, "cat of a CPU scalar");
    dt = j == 0 ? r->dtype : tt_promote(dt, r->dtype);
    bool legacy = r->ndim == 1 && r->sizes[0] == 0;
    if (!legacy && first < 0) first = j;
  }
  if (first < 0) {
    int64_t zero = 0;
    tt_lc_output(c, tt_b_full(b, ix_shape_of(dt, 1, &zero), 0));
    return NULL;
  }
  const tt_tensor_ref *r0 = tt_lc_list_ref(c, 0, first);
  if (r0->ndim == 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "zero-dimensional tensor (at position %d) cannot be concatenated", first);
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 1, 0), r0->ndim);
  if (dim < 0) return NULL;
  int64_t out[TT_MAX_DIMS];
  memcpy(out, r0->sizes, sizeof out);
  out[dim] = 0;
  tt_val parts[64];
  int np = 0;
  for (int j = 0; j < n; j++) {
    const tt_tensor_ref *r = tt_lc_list_ref(c, 0, j);
    if (r->ndim == 1 && r->sizes[0] == 0) continue;
    if (r->ndim == 0)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "zero-dimensional tensor (at position %d) cannot be concatenated", j);
    if (r->ndim != r0->ndim)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                        "Tensors must have same number of dimensions: got %d and %d", r0->ndim,
                        r->ndim);
    for (int k = 0; k < r0->ndim; k++)
      if (k != dim && r->sizes[k] != r0->sizes[k])
        return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                          "Sizes of tensors must match except in dimension %" PRId64
                          ". Expected size %" PRId64 " but got size %" PRId64
                          " for tensor number %d in the list.",
                          dim, r0->sizes[k], r->sizes[k], j);
    out[dim] += r->sizes[dim];
    if (ix_numel_of(r->ndim, r->sizes) == 0) continue;
    if (np == 64) return tt_lc_decline(c, "cat of more than 64 tensors");
    parts[np++] = tt_b_convert(b, tt_lc_list_tensor(c, 0, j), dt);
  }
  if (np == 0 || ix_numel_of(r0->ndim, out) == 0)
    tt_lc_output(c, tt_b_full(b, ix_shape_of(dt, r0->ndim, out), 0));
  else
    tt_lc_output(c, tt_b_concat(b, parts, np, (int)dim));
  return NULL;
}

/* ------------------------------------------------------------ masks, triangles */

/* masked_fill(self, mask, value): value a Scalar or a 0-dim tensor. */
static tt_error *lower_masked_fill(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *mask = tt_lc_ref(c, 1);
  if (!self || !mask) return tt_lc_decline(c, "unexpected arguments");
  if (mask->dtype != TT_BOOL) return tt_lc_decline(c, "non-bool mask (torch raises)");
  const tt_arg *v = tt_lc_arg(c, 2);
  if (v && v->kind == TT_ARG_TENSOR && v->u.tensor->ndim != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                      "with %d dimension(s).",
                      v->u.tensor->ndim);
  if (v && v->kind == TT_ARG_TENSOR && tt_dtype_is_complex(v->u.tensor->dtype) &&
      !tt_dtype_is_complex(self->dtype))
    return tt_lc_decline(c, "complex value into %s", tt_dtype_name(self->dtype)); /* CPU raises */
  int args[2] = {0, 1}, nd;
  int64_t dims[TT_MAX_DIMS];
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  tt_val x = tt_operand(c, 0, self->dtype, nd, dims);
  tt_val m = tt_operand(c, 1, TT_BOOL, nd, dims);
  tt_val val = tt_b_broadcast_to(b, tt_lc_scalar(c, 2, self->dtype), nd, dims);
  tt_lc_output(c, tt_b_select(b, m, val, x));
  return NULL;
}

static tt_error *triangle(tt_lower_ctx *c, bool upper) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  if (self->ndim < 2)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "%s: input tensor must have at least 2 dimensions",
                      upper ? "triu" : "tril");
  int64_t diag = tt_lc_int(c, 1, 0);
  tt_val x = tt_lc_tensor(c, 0);
  tt_shape s = ix_shape_of(TT_I64, self->ndim, self->sizes);
  /* keep where col - row >= diag (triu) or <= diag (tril) */
  tt_val row = tt_b_iota(b, s, self->ndim - 2), col = tt_b_iota(b, s, self->ndim - 1);
  tt_val d = tt_b_bin(b, TT_OP_SUBTRACT, col, row);
  tt_val keep = tt_b_compare(b, upper ? "GE" : "LE", d, tt_b_full(b, s, (double)diag));
  tt_lc_output(c, tt_b_select(b, keep, x, tt_b_full(b, tt_lc_ref_shape(self), 0)));
  return NULL;
}

static tt_error *lower_triu(tt_lower_ctx *c) { return triangle(c, true); }
static tt_error *lower_tril(tt_lower_ctx *c) { return triangle(c, false); }

/* ------------------------------------------------------------ flip, roll, repeat, pad */

static tt_error *lower_flip(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  int64_t dims[TT_MAX_DIMS], w[TT_MAX_DIMS];
  int n = tt_lc_int_list(c, 1, dims, TT_MAX_DIMS);
  if (n > TT_MAX_DIMS) return tt_lc_decline(c, "too many dims");
  int nw = 0;
  bool seen[TT_MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) {
    int64_t d = tt_wrap_dim(c, dims[i], self->ndim);
    if (d < 0) return NULL;
    if (seen[d])
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "dim %" PRId64 " appears multiple times in the list of dims", d);
    seen[d] = true;
    if (self->ndim > 0) w[nw++] = d;
  }
  tt_val x = tt_lc_tensor(c, 0);
  if (nw == 0 || ix_numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  char list[200], attrs[240];
  tt_fmt_i64_array(list, sizeof list, w, nw);
  snprintf(attrs, sizeof attrs, "dimensions = %s", list);
  tt_lc_output(c, tt_b_emit1(b, TT_OP_REVERSE, &x, 1, attrs, tt_b_shape(b, x)));
  return NULL;
}

/* Rolls x by s (already in [0, size)) along dim. */
static tt_val roll_dim(tt_builder *b, tt_val x, int dim, int64_t s) {
  tt_shape sh = tt_b_shape(b, x);
  int64_t size = sh.dims[dim];
  if (s == 0 || size == 0) return x;
  int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS];
  memcpy(li, sh.dims, sizeof li);
  /* out = cat(x[size - s:], x[:size - s]) */
  st[dim] = size - s;
  tt_val tail = tt_b_slice(b, x, st, li, NULL);
  st[dim] = 0;
  li[dim] = size - s;
  tt_val head = tt_b_slice(b, x, st, li, NULL);
  tt_val parts[2] = {tail, head};
  return tt_b_concat(b, parts, 2, dim);
}

static int64_t pos_mod(int64_t a, int64_t n) { return n == 0 ? 0 : ((a % n) + n) % n; }

static tt_error *lower_roll(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  int64_t shifts[TT_MAX_DIMS], dims[TT_MAX_DIMS];
  int ns = tt_lc_int_list(c, 1, shifts, TT_MAX_DIMS);
  int nd = tt_lc_int_list(c, 2, dims, TT_MAX_DIMS);
  if (nd < 0) nd = 0;
  if (ns > TT_MAX_DIMS || nd > TT_MAX_DIMS) return tt_lc_decline(c, "too many dims");
  tt_val x = tt_lc_tensor(c, 0);
  if (ns == 0) return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "`shifts` required");
  if (nd == 0) {
    if (ns != 1)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "shifts and dimensions must align. shifts: %d, dims:%d", ns, nd);
    int64_t n = ix_numel_of(self->ndim, self->sizes);
    tt_val flat = tt_b_reshape(b, x, 1, &n);
    flat = roll_dim(b, flat, 0, pos_mod(shifts[0], n));
    tt_lc_output(c, tt_b_reshape(b, flat, self->ndim, self->sizes));
    return NULL;
  }
  if (ns != nd)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "shifts and dimensions must align. shifts: %d, dims:%d", ns, nd);
  for (int i = 0; i < nd; i++) {
    int64_t d = tt_wrap_dim(c, dims[i], self->ndim);
    if (d < 0) return NULL;
    if (self->ndim == 0) continue;
    x = roll_dim(b, x, (int)d, pos_mod(shifts[i], self->sizes[d]));
  }
  tt_lc_output(c, x);
  return NULL;
}

/* repeat(self, repeats): broadcast into [r0, s0, r1, s1, ...] and merge. */
static tt_error *lower_repeat(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  int64_t reps[TT_MAX_DIMS];
  int n = tt_lc_int_list(c, 1, reps, TT_MAX_DIMS);
  if (n > TT_MAX_DIMS || 2 * n > TT_MAX_DIMS) return tt_lc_decline(c, "too many dims");
  if (n < self->ndim)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Number of dimensions of repeat dims can not be smaller than number of "
                      "dimensions of tensor");
  int lead = n - self->ndim;
  int64_t src[TT_MAX_DIMS], big[TT_MAX_DIMS], map[TT_MAX_DIMS], out[TT_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    if (reps[i] < 0)
      return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Trying to create tensor with negative dimension %" PRId64 ": [%" PRId64 "]", reps[i], reps[i]);
    src[i] = i < lead ? 1 : self->sizes[i - lead];
    big[2 * i] = reps[i];
    big[2 * i + 1] = src[i];
    map[i] = 2 * i + 1;
    out[i] = reps[i] * src[i];
  }
  tt_shape os = ix_shape_of(self->dtype, n, out);
  if (tt_shape_numel(&os) == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  tt_val x = tt_b_reshape(b, tt_lc_tensor(c, 0), n, src);
  x = tt_b_broadcast_in_dim(b, x, 2 * n, big, map);
  tt_lc_output(c, tt_b_reshape(b, x, n, out));
  return NULL;
}

/* constant_pad_nd(self, pad, value): pad pairs from the last dim backwards;
 * negative pads slice. */
static tt_error *lower_constant_pad_nd(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  int64_t pad[2 * TT_MAX_DIMS];
  int n = tt_lc_int_list(c, 1, pad, 2 * TT_MAX_DIMS);
  if (n > 2 * TT_MAX_DIMS) return tt_lc_decline(c, "too many pads");
  if (n % 2 != 0)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT, "Length of pad must be even but instead it equals %d", n);
  if (n / 2 > self->ndim)
    return tt_lc_fail(c, TT_ERR_INVALID_ARGUMENT,
                      "Length of pad should be no more than twice the number of dimensions of "
                      "the input. Pad length is %d while the input has %d dimensions.",
                      n, self->ndim);
  int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0}, out[TT_MAX_DIMS];
  for (int i = 0; i < n / 2; i++) {
    int d = self->ndim - 1 - i;
    lo[d] = pad[2 * i];
    hi[d] = pad[2 * i + 1];
  }
  for (int d = 0; d < self->ndim; d++) {
    out[d] = self->sizes[d] + lo[d] + hi[d];
    if (out[d] < 0) return tt_lc_decline(c, "negative output size (torch raises)");
  }
  tt_shape os = ix_shape_of(self->dtype, self->ndim, out);
  tt_val v = tt_lc_scalar(c, 2, self->dtype);
  if (tt_shape_numel(&os) == 0) {
    tt_lc_output(c, tt_b_full(b, os, 0));
    return NULL;
  }
  if (ix_numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, tt_b_broadcast_to(b, v, self->ndim, out));
    return NULL;
  }
  /* a negative pad larger than the dim on one side combined with a
   * positive pad on the other is fine for stablehlo.pad as long as the
   * result is non-negative; but a dim cropped to below zero on one side
   * first must be done in two steps: crop, then pad. */
  int64_t lo1[TT_MAX_DIMS], hi1[TT_MAX_DIMS], lo2[TT_MAX_DIMS], hi2[TT_MAX_DIMS];
  bool crop = false;
  for (int d = 0; d < self->ndim; d++) {
    lo1[d] = lo[d] < 0 ? lo[d] : 0;
    hi1[d] = hi[d] < 0 ? hi[d] : 0;
    lo2[d] = lo[d] - lo1[d];
    hi2[d] = hi[d] - hi1[d];
    if (self->sizes[d] + lo1[d] + hi1[d] < 0) return tt_lc_decline(c, "pad crops past the input");
    crop |= lo1[d] || hi1[d];
  }
  tt_val x = tt_lc_tensor(c, 0);
  if (crop) {
    int64_t st[TT_MAX_DIMS], li[TT_MAX_DIMS];
    for (int d = 0; d < self->ndim; d++) {
      st[d] = -lo1[d];
      li[d] = self->sizes[d] + hi1[d];
    }
    x = tt_b_slice(b, x, st, li, NULL);
  }
  tt_lc_output(c, tt_b_pad(b, x, v, lo2, hi2, NULL));
  return NULL;
}

/* ------------------------------------------------------------ narrow / scatter-into-slices */

/* Clamps start/end like torch's slice. */
static void slice_bounds(int64_t size, bool has_start, int64_t start, bool has_end, int64_t end,
                         int64_t *s, int64_t *e) {
  if (!has_start) start = 0;
  if (!has_end) end = size;
  if (start < 0) start += size;
  if (end < 0) end += size;
  if (start < 0) start = 0;
  if (start > size) start = size;
  if (end < start) end = start;
  if (end > size) end = size;
  *s = start;
  *e = end;
}

static tt_error *lower_narrow_copy(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage || self->ndim == 0) return tt_lc_decline(c, "0-dim or CPU self");
  int64_t raw_dim = tt_lc_int(c, 1, 0);
  if (raw_dim >= self->ndim || raw_dim < -self->ndim) /* CPU's own errors differ by sign */
    return tt_lc_decline(c, "dim out of range (torch raises)");
  int64_t dim = tt_wrap_dim(c, raw_dim, self->ndim);
  if (dim < 0) return NULL;
  int64_t size = self->sizes[dim], start = tt_lc_int(c, 2, 0), len = tt_lc_int(c, 3, 0);
  if (start < 0) start += size;
  if (start < 0 || len < 0 || start + len > size)
    return tt_lc_decline(c, "narrow out of range (torch raises)");
  int64_t st[TT_MAX_DIMS] = {0}, li[TT_MAX_DIMS];
  memcpy(li, self->sizes, sizeof li);
  st[dim] = start;
  li[dim] = start + len;
  tt_shape os = tt_lc_ref_shape(self);
  os.dims[dim] = len;
  if (tt_shape_numel(&os) == 0) tt_lc_output(c, tt_b_full(b, os, 0));
  else tt_lc_output(c, tt_b_slice(b, tt_lc_tensor(c, 0), st, li, NULL));
  return NULL;
}

/* slice_scatter(self, src, dim, start, end, step): self with
 * self[start:end:step] (on dim) replaced by src. */
static tt_error *lower_slice_scatter(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *src = tt_lc_ref(c, 1);
  if (!self || !src || !self->storage || !src->storage || self->ndim == 0)
    return tt_lc_decline(c, "0-dim or CPU operands");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, 0), self->ndim);
  if (dim < 0) return NULL;
  int64_t step = tt_lc_int(c, 5, 1);
  if (step < 1) return tt_lc_decline(c, "non-positive step (torch raises)");
  int64_t size = self->sizes[dim], s, e;
  slice_bounds(size, !tt_lc_is_none(c, 3), tt_lc_int(c, 3, 0), !tt_lc_is_none(c, 4),
               tt_lc_int(c, 4, size), &s, &e);
  int64_t len = (e - s + step - 1) / step;
  if (src->ndim != self->ndim || src->dtype != self->dtype)
    return tt_lc_decline(c, "src rank/dtype mismatch (torch raises)");
  for (int k = 0; k < self->ndim; k++)
    if (src->sizes[k] != (k == dim ? len : self->sizes[k]))
      return tt_lc_decline(c, "src shape mismatch (torch raises)");
  tt_val x = tt_lc_tensor(c, 0);
  if (len == 0 || ix_numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val y = tt_lc_tensor(c, 1);
  /* spread src over [s, e) with step-1 holes, then select by position */
  int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0}, in[TT_MAX_DIMS] = {0};
  lo[dim] = s;
  in[dim] = step - 1;
  hi[dim] = size - (s + (len - 1) * step + 1);
  tt_val spread = tt_b_pad(b, y, tt_b_constant(b, self->dtype, 0), lo, hi, in);
  tt_shape is = ix_shape_of(TT_I64, self->ndim, self->sizes);
  tt_val pos = tt_b_iota(b, is, (int)dim);
  tt_val rel = tt_b_bin(b, TT_OP_SUBTRACT, pos, tt_b_full(b, is, (double)s));
  tt_val in_range = tt_b_bin(b, TT_OP_AND, tt_b_compare(b, "GE", rel, tt_b_full(b, is, 0)),
                                tt_b_compare(b, "LT", rel, tt_b_full(b, is, (double)(len - 1) * (double)step + 1)));
  tt_val on_step = tt_b_compare(b, "EQ", tt_b_bin(b, TT_OP_REMAINDER, rel, tt_b_full(b, is, (double)step)),
                                tt_b_full(b, is, 0));
  tt_val m = tt_b_bin(b, TT_OP_AND, in_range, on_step);
  tt_lc_output(c, tt_b_select(b, m, spread, x));
  return NULL;
}

/* select_scatter(self, src, dim, index): self with self.select(dim, index) = src. */
static tt_error *lower_select_scatter(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *src = tt_lc_ref(c, 1);
  if (!self || !src || !self->storage || !src->storage || self->ndim == 0)
    return tt_lc_decline(c, "0-dim or CPU operands");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, 0), self->ndim);
  if (dim < 0) return NULL;
  int64_t size = self->sizes[dim], index = tt_lc_int(c, 3, 0);
  if (index < -size || index >= size)
    return tt_lc_fail(c, TT_ERR_INDEX,
                      "select(): index %" PRId64 " out of range for tensor of size [%" PRId64
                      "] at dimension %" PRId64, index, size, dim);
  if (index < 0) index += size;
  if (src->ndim != self->ndim - 1 || src->dtype != self->dtype)
    return tt_lc_decline(c, "src rank/dtype mismatch (torch raises)");
  int64_t dims1[TT_MAX_DIMS];
  for (int k = 0, j = 0; k < self->ndim; k++) {
    dims1[k] = k == dim ? 1 : src->sizes[j++];
    if (k != dim && dims1[k] != self->sizes[k])
      return tt_lc_decline(c, "src shape mismatch (torch raises)");
  }
  tt_val x = tt_lc_tensor(c, 0);
  if (ix_numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val y = tt_b_reshape(b, tt_lc_tensor(c, 1), self->ndim, dims1);
  tt_val starts[TT_MAX_DIMS];
  for (int k = 0; k < self->ndim; k++) starts[k] = tt_b_constant_int(b, TT_I64, k == dim ? index : 0);
  tt_lc_output(c, tt_b_dynamic_update_slice(b, x, y, starts));
  return NULL;
}

/* diagonal_scatter(self, src, offset, dim1, dim2): self with its diagonal
 * replaced by src (src's last dim runs along the diagonal). */
static tt_error *lower_diagonal_scatter(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *src = tt_lc_ref(c, 1);
  if (!self || !src || !self->storage || !src->storage || self->ndim < 2)
    return tt_lc_decline(c, "rank < 2 or CPU operands");
  int64_t offset = tt_lc_int(c, 2, 0);
  int64_t d1 = tt_wrap_dim(c, tt_lc_int(c, 3, 0), self->ndim);
  if (d1 < 0) return NULL;
  int64_t d2 = tt_wrap_dim(c, tt_lc_int(c, 4, 1), self->ndim);
  if (d2 < 0) return NULL;
  if (d1 == d2) return tt_lc_decline(c, "dim1 == dim2 (torch raises)");
  int64_t n1 = self->sizes[d1], n2 = self->sizes[d2];
  int64_t len = offset >= 0 ? (n1 < n2 - offset ? n1 : n2 - offset)
                            : (n1 + offset < n2 ? n1 + offset : n2);
  if (len < 0) len = 0;
  if (src->dtype != self->dtype || src->ndim != self->ndim - 1)
    return tt_lc_decline(c, "src rank/dtype mismatch (torch raises)");
  int64_t map[TT_MAX_DIMS];
  int j = 0;
  for (int k = 0; k < self->ndim; k++) {
    if (k == d1 || k == d2) continue;
    if (src->sizes[j] != self->sizes[k]) return tt_lc_decline(c, "src shape mismatch (torch raises)");
    map[j++] = k;
  }
  if (src->sizes[j] != len) return tt_lc_decline(c, "src shape mismatch (torch raises)");
  tt_val x = tt_lc_tensor(c, 0);
  if (len == 0 || ix_numel_of(self->ndim, self->sizes) == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  /* diagonal element k sits at (k, k + offset) or (k - offset, k) */
  int64_t along = offset >= 0 ? d1 : d2;
  map[j] = along;
  int64_t lo[TT_MAX_DIMS] = {0}, hi[TT_MAX_DIMS] = {0};
  hi[j] = self->sizes[along] - len;
  tt_val y = tt_b_pad(b, tt_lc_tensor(c, 1), tt_b_constant(b, self->dtype, 0), lo, hi, NULL);
  y = tt_b_broadcast_in_dim(b, y, self->ndim, self->sizes, map);
  tt_shape is = ix_shape_of(TT_I64, self->ndim, self->sizes);
  tt_val diff = tt_b_bin(b, TT_OP_SUBTRACT, tt_b_iota(b, is, (int)d2), tt_b_iota(b, is, (int)d1));
  tt_val m = tt_b_compare(b, "EQ", diff, tt_b_full(b, is, (double)offset));
  tt_lc_output(c, tt_b_select(b, m, y, x));
  return NULL;
}

/* Inclusive prefix sum of a 1-D i64 tensor (log-step scan). */
static tt_val prefix_sum(tt_builder *b, tt_val x) {
  int64_t n = tt_b_shape(b, x).dims[0];
  tt_val zero = tt_b_constant(b, TT_I64, 0);
  for (int64_t s = 1; s < n; s *= 2) {
    int64_t st = 0, li = n - s, lo = s, hi = 0;
    tt_val shifted = tt_b_pad(b, tt_b_slice(b, x, &st, &li, NULL), zero, &lo, &hi, NULL);
    x = tt_b_bin(b, TT_OP_ADD, x, shifted);
  }
  return x;
}

/* masked_scatter(self, mask, source): the masked positions of self, in
 * row-major order, take source's elements in order. */
static tt_error *lower_masked_scatter(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0), *mask = tt_lc_ref(c, 1), *src = tt_lc_ref(c, 2);
  if (!self || !mask || !src || !self->storage || !src->storage)
    return tt_lc_decline(c, "CPU operands");
  if (mask->dtype != TT_BOOL) return tt_lc_decline(c, "non-bool mask (torch raises)");
  if (src->dtype != self->dtype) return tt_lc_decline(c, "source dtype differs (torch raises)");
  int64_t sn = ix_numel_of(src->ndim, src->sizes);
  if (sn == 0) return tt_lc_decline(c, "empty source");
  int args[2] = {0, 1}, nd;
  int64_t dims[TT_MAX_DIMS];
  TT_TRY(tt_broadcast_args(c, args, 2, &nd, dims));
  int64_t n = ix_numel_of(nd, dims);
  tt_val x = tt_operand(c, 0, self->dtype, nd, dims);
  if (n == 0) {
    tt_lc_output(c, x);
    return NULL;
  }
  tt_val m = tt_b_reshape(b, tt_operand(c, 1, TT_BOOL, nd, dims), 1, &n);
  tt_val pos = tt_b_bin(b, TT_OP_SUBTRACT, prefix_sum(b, tt_b_convert(b, m, TT_I64)),
                           tt_b_full(b, ix_shape_of(TT_I64, 1, &n), 1));
  int64_t idims[2] = {n, 1}, zero = 0, one = 1;
  if (tt_lc_checks_on(c)) /* device-side check: no more ones in mask than source elements */
    tt_lc_check(c, tt_b_bin(b, TT_OP_AND, m, tt_b_compare(b, "GE", pos, tt_b_full(b, ix_shape_of(TT_I64, 1, &n), (double)sn))),
                TT_ERR_INVALID_ARGUMENT, "Number of elements of source < number of ones in mask");
  pos = tt_b_reshape(b, pos, 2, idims); /* out of range (-1, or past source) clamps */
  tt_val flat_src = tt_b_reshape(b, tt_lc_tensor(c, 2), 1, &sn);
  tt_val taken = ix_emit_gather(b, flat_src, pos, NULL, 0, &zero, 1, &zero, 1, 1, &one,
                             ix_shape_of(self->dtype, 1, &n));
  tt_val out = tt_b_select(b, m, taken, tt_b_reshape(b, x, 1, &n));
  tt_lc_output(c, tt_b_reshape(b, out, nd, dims));
  return NULL;
}

/* ------------------------------------------------------------ histc */

/* histc(self, bins, min, max): torch's linear binning in self's dtype:
 * bin = (int)((x - lo) * bins / (hi - lo)), x == hi in the last bin, values
 * outside [lo, hi] (and NaN) skipped. lo == hi takes the data's min and max
 * (widened by 1 each side if equal). min/max key the program. */
static tt_error *lower_histc(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  tt_dtype dt = self->dtype;
  if (!tt_dtype_is_floating(dt)) return tt_lc_decline(c, "histc over %s (torch raises)", tt_dtype_name(dt));
  int64_t bins = tt_lc_int(c, 1, 100);
  if (bins <= 0) return tt_lc_decline(c, "bins <= 0 (torch raises)");
  double lo = tt_lc_scalar_value(c, 2), hi = tt_lc_scalar_value(c, 3);
  int64_t n = ix_numel_of(self->ndim, self->sizes);
  tt_shape hs = ix_shape_of(dt, 1, &bins);
  if (lo == hi && n == 0) return tt_lc_decline(c, "empty input without a range");
  if (lo != hi && (!isfinite(lo) || !isfinite(hi) || !(lo < hi)))
    return tt_lc_decline(c, "bad range (torch raises)");
  if (n == 0) {
    tt_lc_output(c, tt_b_full(b, hs, 0));
    return NULL;
  }
  /* arithmetic in f32 (f64 for f64) rounded to dt after every step, which
   * is exactly dt's own arithmetic */
  tt_dtype ct = dt == TT_F64 ? TT_F64 : TT_F32;
  tt_shape fs = ix_shape_of(ct, 1, &n);
  tt_val x = tt_b_convert(b, tt_b_reshape(b, tt_lc_tensor(c, 0), 1, &n), ct);
  tt_val L, R;
  if (lo == hi) {
    L = tt_b_reduce(b, x, tt_b_constant(b, ct, INFINITY), (int64_t[]){0}, 1, "minimum");
    R = tt_b_reduce(b, x, tt_b_constant(b, ct, -INFINITY), (int64_t[]){0}, 1, "maximum");
    tt_val eq = tt_b_compare(b, "EQ", L, R);
    L = tt_b_select(b, eq, tt_b_bin(b, TT_OP_SUBTRACT, L, tt_b_constant(b, ct, 1)), L);
    R = tt_b_select(b, eq, tt_b_bin(b, TT_OP_ADD, R, tt_b_constant(b, ct, 1)), R);
    L = tt_b_convert(b, tt_b_convert(b, L, dt), ct);
    R = tt_b_convert(b, tt_b_convert(b, R, dt), ct);
  } else {
    L = tt_b_convert(b, tt_b_convert(b, tt_b_constant(b, TT_F64, lo), dt), ct);
    R = tt_b_convert(b, tt_b_convert(b, tt_b_constant(b, TT_F64, hi), dt), ct);
  }
  tt_val Lb = tt_b_broadcast_to(b, L, 1, &n), Rb = tt_b_broadcast_to(b, R, 1, &n);
#define RND(v) tt_b_convert(b, tt_b_convert(b, (v), dt), ct)
  tt_val t = RND(tt_b_bin(b, TT_OP_SUBTRACT, x, Lb));
  t = RND(tt_b_bin(b, TT_OP_MULTIPLY, t, tt_b_full(b, fs, (double)bins)));
  t = RND(tt_b_bin(b, TT_OP_DIVIDE, t, RND(tt_b_bin(b, TT_OP_SUBTRACT, Rb, Lb))));
#undef RND
  tt_shape is = ix_shape_of(TT_I64, 1, &n);
  tt_val pos = tt_b_convert(b, t, TT_I64);
  pos = tt_b_select(b, tt_b_compare(b, "EQ", pos, tt_b_full(b, is, (double)bins)),
                    tt_b_full(b, is, (double)(bins - 1)), pos);
  tt_val in = tt_b_bin(b, TT_OP_AND, tt_b_compare(b, "GE", x, Lb), tt_b_compare(b, "LE", x, Rb));
  pos = tt_b_select(b, in, pos, tt_b_full(b, is, (double)bins)); /* dropped bucket */
  int64_t idims[2] = {n, 1}, zero = 0, nb = bins + 1;
  pos = tt_b_reshape(b, pos, 2, idims);
  tt_val hist = ix_emit_scatter(b, tt_b_full(b, ix_shape_of(dt, 1, &nb), 0), pos, tt_b_full(b, ix_shape_of(dt, 1, &n), 1),
                             NULL, 0, &zero, 1, &zero, 1, 1, "add");
  tt_lc_output(c, tt_b_slice(b, hist, &zero, &bins, NULL));
  return NULL;
}

/* ------------------------------------------------------------ unfold_backward */

/* unfold_backward(grad_in, input_sizes, dim, size, step): the gradient of
 * Tensor.unfold: window w, element j adds into input[.., w*step + j, ..]. */
static tt_error *lower_unfold_backward(tt_lower_ctx *c) {
  tt_builder *b = tt_lc_builder(c);
  const tt_tensor_ref *g = tt_lc_ref(c, 0);
  if (!g || !g->storage) return tt_lc_decline(c, "CPU grad");
  int64_t in[TT_MAX_DIMS];
  int nd = tt_lc_int_list(c, 1, in, TT_MAX_DIMS);
  if (nd < 0 || nd > TT_MAX_DIMS - 1 || g->ndim != (nd > 0 ? nd : 1) + 1) return tt_lc_decline(c, "unexpected ranks");
  if (nd == 0) return tt_lc_decline(c, "0-dim input");
  int64_t dim = tt_wrap_dim(c, tt_lc_int(c, 2, 0), nd);
  if (dim < 0) return NULL;
  int64_t size = tt_lc_int(c, 3, 1), step = tt_lc_int(c, 4, 1);
  if (size < 0 || step <= 0) return tt_lc_decline(c, "bad size/step");
  int64_t w = g->sizes[dim];
  for (int k = 0; k < nd; k++)
    if (k != dim && g->sizes[k] != in[k]) return tt_lc_decline(c, "grad shape mismatch");
  if (g->sizes[nd] != size || (w > 0 && (w - 1) * step + size > in[dim]))
    return tt_lc_decline(c, "grad shape mismatch");
  tt_shape os = ix_shape_of(g->dtype, nd, in);
  tt_val zeros = tt_b_full(b, os, 0);
  if (ix_numel_of(g->ndim, g->sizes) == 0 || tt_shape_numel(&os) == 0) {
    tt_lc_output(c, zeros);
    return NULL;
  }
  int64_t ws[3] = {w, size, 1};
  tt_shape is = ix_shape_of(TT_I64, 3, ws);
  tt_val pos = tt_b_bin(b, TT_OP_ADD, tt_b_bin(b, TT_OP_MULTIPLY, tt_b_iota(b, is, 0), tt_b_full(b, is, (double)step)),
                           tt_b_iota(b, is, 1));
  int64_t win[TT_MAX_DIMS];
  int n_win = ix_window_dims_except(nd, dim, win);
  tt_lc_output(c, ix_emit_scatter(b, zeros, pos, tt_lc_tensor(c, 0), win, n_win, &dim, 1, &dim, 1, 2,
                               g->dtype == TT_BOOL ? "or" : "add"));
  return NULL;
}
/* channel_shuffle(self, groups): (N, g, C/g, *) -> (N, C/g, g, *) -> (N, C, *).
 * Invalid arguments go to CPU, which raises its own messages. */
static tt_error *lower_channel_shuffle(tt_lower_ctx *c) {
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  int64_t g = tt_lc_int(c, 1, 1);
  int nd = self->ndim;
  if (nd < 3 || nd + 1 > TT_MAX_DIMS || g <= 0 || self->sizes[1] % g != 0)
    return tt_lc_decline(c, "arguments CPU rejects");
  tt_builder *b = tt_lc_builder(c);
  int64_t split[TT_MAX_DIMS], perm[TT_MAX_DIMS];
  split[0] = self->sizes[0];
  split[1] = g;
  split[2] = self->sizes[1] / g;
  for (int i = 2; i < nd; i++) split[i + 1] = self->sizes[i];
  for (int i = 0; i <= nd; i++) perm[i] = i;
  perm[1] = 2;
  perm[2] = 1;
  tt_val x = tt_b_transpose(b, tt_b_reshape(b, tt_lc_tensor(c, 0), nd + 1, split), perm);
  tt_lc_output(c, tt_b_reshape(b, x, nd, self->sizes));
  return NULL;
}

/* im2col(self, kernel_size, dilation, padding, stride) (unfold): the
 * zero-padded input's kernel windows as columns, [N, C*kh*kw, L], row
 * c*kh*kw + i*kw + j holding tap (i, j) of channel c: strided slices of the
 * padded input, stacked (data movement only). Arguments CPU rejects go there. */
static tt_error *lower_im2col(tt_lower_ctx *c) {
  const tt_tensor_ref *self = tt_lc_ref(c, 0);
  if (!self || !self->storage) return tt_lc_decline(c, "CPU self");
  int64_t k[2], d[2], pd[2], st[2];
  if (tt_lc_int_list(c, 1, k, 2) != 2 || tt_lc_int_list(c, 2, d, 2) != 2 || tt_lc_int_list(c, 3, pd, 2) != 2 ||
      tt_lc_int_list(c, 4, st, 2) != 2)
    return tt_lc_decline(c, "argument lengths");
  int nd = self->ndim;
  if (nd != 3 && nd != 4) return tt_lc_decline(c, "rank");
  int64_t N = nd == 4 ? self->sizes[0] : 1, C = self->sizes[nd - 3], H = self->sizes[nd - 2], W = self->sizes[nd - 1];
  int64_t o[2], in[2] = {H, W};
  for (int i = 0; i < 2; i++) {
    if (k[i] <= 0 || d[i] <= 0 || st[i] <= 0 || pd[i] < 0) return tt_lc_decline(c, "arguments CPU rejects");
    o[i] = (in[i] + 2 * pd[i] - (d[i] * (k[i] - 1) + 1)) / st[i] + 1;
    if (o[i] <= 0 || in[i] + 2 * pd[i] < d[i] * (k[i] - 1) + 1) return tt_lc_decline(c, "empty output (torch raises)");
  }
  if (C == 0 || H == 0 || W == 0) return tt_lc_decline(c, "empty planes (torch raises)");
  int64_t taps = k[0] * k[1], L = o[0] * o[1];
  int64_t od[3] = {N, C * taps, L};
  tt_builder *b = tt_lc_builder(c);
  if (N == 0) {
    tt_lc_output(c, tt_b_full(b, tt_shape_make(self->dtype, 3, od), 0));
    return NULL;
  }
  if (taps > 1024) return tt_lc_decline(c, "kernel too large to unroll");
  int64_t x4[4] = {N, C, H, W};
  tt_val x = tt_b_reshape(b, tt_lc_tensor(c, 0), 4, x4);
  int64_t lo[4] = {0, 0, pd[0], pd[1]}, hi[4] = {0, 0, pd[0], pd[1]};
  x = tt_b_pad(b, x, tt_b_constant(b, self->dtype, 0), lo, hi, NULL);
  tt_val *cols = malloc(sizeof(tt_val) * (size_t)taps);
  if (!cols) return tt_lc_decline(c, "out of host memory");
  int64_t one[4] = {N, C, 1, L};
  for (int64_t i = 0; i < k[0]; i++)
    for (int64_t j = 0; j < k[1]; j++) {
      int64_t s0[4] = {0, 0, i * d[0], j * d[1]};
      int64_t s1[4] = {N, C, i * d[0] + (o[0] - 1) * st[0] + 1, j * d[1] + (o[1] - 1) * st[1] + 1};
      int64_t sd[4] = {1, 1, st[0], st[1]};
      cols[i * k[1] + j] = tt_b_reshape(b, tt_b_slice(b, x, s0, s1, sd), 4, one);
    }
  tt_val r = tt_b_concat(b, cols, (int)taps, 2);
  free(cols);
  r = tt_b_reshape(b, r, nd == 4 ? 3 : 2, nd == 4 ? od : od + 1);
  tt_lc_output(c, r);
  return NULL;
}


TT_LOWERINGS(shape_ops) = {
    {lower_cat, {"cat", "cat.out"}},
    {lower_masked_fill, {"masked_fill.Scalar", "masked_fill_.Scalar", "masked_fill.Scalar_out",
                         "masked_fill.Tensor", "masked_fill_.Tensor", "masked_fill.Tensor_out"}},
    {lower_triu, {"triu", "triu_", "triu.out"}},
    {lower_tril, {"tril", "tril_", "tril.out"}},
    {lower_flip, {"flip", "flip.out"}},
    {lower_roll, {"roll", "roll.out"}},
    {lower_repeat, {"repeat", "repeat.out"}},
    {lower_constant_pad_nd, {"constant_pad_nd", "constant_pad_nd.out"}},
    {lower_narrow_copy, {"narrow_copy", "narrow_copy.out"}},
    {lower_slice_scatter, {"slice_scatter", "slice_scatter.out"}},
    {lower_select_scatter, {"select_scatter", "select_scatter.out"}},
    {lower_diagonal_scatter, {"diagonal_scatter", "diagonal_scatter.out"}},
    {lower_masked_scatter, {"masked_scatter", "masked_scatter_", "masked_scatter.out"}},
    {lower_histc, {"histc", "histc.out"}},
    {lower_unfold_backward, {"unfold_backward", "unfold_backward.out"}},
    {lower_im2col, {"im2col", "im2col.out"}},
    {lower_channel_shuffle, {"channel_shuffle", "channel_shuffle.out", "native_channel_shuffle"}},
    {NULL, {NULL}},
};
