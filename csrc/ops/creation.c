/* Copies, fills and factory ops: copy_, fill_, zero_, clone, and the
 * tensor factories (full, arange, ...). */
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

TT_LOWERINGS(creation) = {
    {lower_copy, {"copy_", "copy", "copy.out"}},
    {lower_fill, {"fill_.Scalar", "fill_.Tensor", "fill.Scalar", "fill.Tensor"}},
    {lower_zero, {"zero_", "zero"}},
    {lower_clone, {"clone", "clone.out"}},
    {NULL, {NULL}},
};
