/* The lowering context: runs one lowering over an op's arguments and turns
 * what it emits into a program plus its parameter/output plan. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/device_checks.h"
#include "graph/grow.h"
#include "graph/lower_ctx.h"
#include "graph/storage.h"
#include "graph/view.h"

typedef struct {
  tt_storage *storage;
  tt_dtype dtype;
  int64_t numel;
  tt_val flat; /* parameter value */
  tt_val current; /* latest flat value after writes inside this program */
} storage_slot;

typedef struct {
  int arg, elem;
  tt_val value;
} pending_write;

struct tt_lower_ctx {
  const char *op_name;
  tt_arg *args;
  int nargs;
  tt_builder *b;
  storage_slot *slots;
  int n_slots, cap_slots;
  tt_val *read_cache; /* per (arg, elem) flattened; TT_INVALID until read */
  tt_val *offset_cache; /* per (arg, elem): its runtime offset, TT_INVALID until needed */
  int *read_base;     /* offset of arg i in read_cache */
  tt_param_plan *params;
  int n_params, cap_params;
  tt_val *results;
  bool *unchanged;
  int n_results, cap_results;
  pending_write *writes;
  int n_writes, cap_writes;
  int *value_args;
  int n_value_args, cap_value_args;
  const tt_region_binding *bind; /* fused replay: values come from the region */
  tt_check_vals *check_vals; /* device-side checks: their values, and what each reports */
  tt_check_def *checks;
  int n_checks, cap_checks, cap_check_vals;
  bool checks_on;
};

#define GROW(ptr, n, cap) TT_GROW(ptr, n, cap, 8)

/* ------------------------------------------------------------ accessors */

tt_builder *tt_lc_builder(tt_lower_ctx *c) { return c->b; }
const char *tt_lc_op_name(const tt_lower_ctx *c) { return c->op_name; }
int tt_lc_nargs(const tt_lower_ctx *c) { return c->nargs; }

const tt_arg *tt_lc_arg(const tt_lower_ctx *c, int i) {
  return i >= 0 && i < c->nargs ? &c->args[i] : NULL;
}

tt_arg_kind tt_lc_kind(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a ? a->kind : TT_ARG_NONE;
}

bool tt_lc_is_none(const tt_lower_ctx *c, int i) { return tt_lc_kind(c, i) == TT_ARG_NONE; }

const tt_tensor_ref *tt_lc_ref(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_TENSOR ? a->u.tensor : NULL;
}

int tt_lc_list_len(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (!a) return 0;
  switch (a->kind) {
    case TT_ARG_TENSOR_LIST: case TT_ARG_INT_LIST: case TT_ARG_DOUBLE_LIST:
    case TT_ARG_BOOL_LIST: case TT_ARG_SCALAR_LIST: return a->count;
    default: return 0;
  }
}

const tt_tensor_ref *tt_lc_list_ref(const tt_lower_ctx *c, int i, int j) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (!a || a->kind != TT_ARG_TENSOR_LIST || j < 0 || j >= a->count) return NULL;
  return a->u.tensors[j];
}

tt_shape tt_lc_ref_shape(const tt_tensor_ref *r) {
  return tt_shape_make(r->dtype, r->ndim, r->sizes);
}

int64_t tt_lc_int(const tt_lower_ctx *c, int i, int64_t dflt) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (!a) return dflt;
  if (a->kind == TT_ARG_INT || a->kind == TT_ARG_LAYOUT || a->kind == TT_ARG_MEMORY_FORMAT ||
      a->kind == TT_ARG_DEVICE)
    return a->u.i;
  if (a->kind == TT_ARG_BOOL) return a->u.b;
  if (a->kind == TT_ARG_INT_LIST && a->count == 1) return a->u.ints[0];
  return dflt;
}

double tt_lc_double(const tt_lower_ctx *c, int i, double dflt) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (!a) return dflt;
  if (a->kind == TT_ARG_DOUBLE) return a->u.d;
  if (a->kind == TT_ARG_INT) return (double)a->u.i;
  return dflt;
}

bool tt_lc_bool(const tt_lower_ctx *c, int i, bool dflt) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (!a) return dflt;
  if (a->kind == TT_ARG_BOOL) return a->u.b;
  if (a->kind == TT_ARG_INT) return a->u.i != 0;
  return dflt;
}

int tt_lc_int_list(const tt_lower_ctx *c, int i, int64_t *out, int max) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (!a) return -1;
  if (a->kind == TT_ARG_INT) {
    if (max >= 1) out[0] = a->u.i;
    return 1;
  }
  if (a->kind != TT_ARG_INT_LIST) return -1;
  for (int k = 0; k < a->count && k < max; k++) out[k] = a->u.ints[k];
  return a->count;
}

tt_dtype tt_lc_dtype(const tt_lower_ctx *c, int i, tt_dtype dflt) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_DTYPE ? a->u.dtype : dflt;
}

const char *tt_lc_string(const tt_lower_ctx *c, int i, const char *dflt) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_STRING ? a->u.str : dflt;
}

const tt_scalar *tt_lc_scalar_ref(const tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  return a && a->kind == TT_ARG_SCALAR ? &a->u.s : NULL;
}

/* ------------------------------------------------------------ params */

static const tt_tensor_ref *arg_ref(const tt_lower_ctx *c, int arg, int elem) {
  return elem < 0 ? tt_lc_ref(c, arg) : tt_lc_list_ref(c, arg, elem);
}

static tt_val add_param(tt_lower_ctx *c, tt_param_kind kind, int arg, int elem, tt_dtype dt,
                        tt_shape shape) {
  GROW(c->params, c->n_params, c->cap_params);
  int q = c->n_params++;
  c->params[q] = (tt_param_plan){kind, arg, elem, dt};
  if (!c->bind) return tt_b_param(c->b, shape);
  if (kind == TT_PARAM_STORAGE)
    return c->bind->storage_value(c->bind->self, arg_ref(c, arg, elem)->storage, dt,
                                  shape.dims[0]);
  return c->bind->param_value(c->bind->self, q, shape);
}

static storage_slot *slot_for(tt_lower_ctx *c, const tt_tensor_ref *r, int arg, int elem) {
  for (int k = 0; k < c->n_slots; k++)
    if (c->slots[k].storage == r->storage) {
      if (c->slots[k].dtype != r->dtype) {
        tt_b_fail(c->b, TT_ERR_NOT_IMPLEMENTED,
                  "one storage read as two dtypes (%s and %s) in one op",
                  tt_dtype_name(c->slots[k].dtype), tt_dtype_name(r->dtype));
        return NULL;
      }
      return &c->slots[k];
    }
  size_t item = tt_dtype_size(r->dtype);
  if (r->storage->nbytes % item) {
    tt_b_fail(c->b, TT_ERR_NOT_IMPLEMENTED, "storage size is not a multiple of the element size");
    return NULL;
  }
  GROW(c->slots, c->n_slots, c->cap_slots);
  storage_slot *s = &c->slots[c->n_slots++];
  s->storage = r->storage;
  s->dtype = r->dtype;
  s->numel = (int64_t)(r->storage->nbytes / item);
  s->flat = add_param(c, TT_PARAM_STORAGE, arg, elem, r->dtype,
                      tt_shape_make(r->dtype, 1, &s->numel));
  s->current = s->flat;
  return s;
}

static int read_index(const tt_lower_ctx *c, int i, int j) {
  return c->read_base[i] + (j < 0 ? 0 : j);
}

/* The runtime offset of view (i, j) of a storage of storage_numel elements
 * (one parameter per argument, shared by its read and its write), or
 * TT_INVALID when the program bakes the offset in (tt_view_offset_class). */
static tt_val offset_value(tt_lower_ctx *c, const tt_tensor_ref *r, int i, int j,
                           int64_t storage_numel) {
  if (tt_view_offset_class(r, storage_numel) != TT_VIEW_OFFSET_DYNAMIC || tt_view_numel(r) == 0)
    return TT_INVALID;
  int ri = read_index(c, i, j);
  if (c->offset_cache[ri] == TT_INVALID)
    c->offset_cache[ri] = add_param(c, TT_PARAM_OFFSET, i, j, TT_I64, tt_shape_scalar(TT_I64));
  return c->offset_cache[ri];
}

static tt_val read_tensor(tt_lower_ctx *c, const tt_tensor_ref *r, int i, int j) {
  if (!r) return tt_b_fail(c->b, TT_ERR_RUNTIME, "internal: argument %d is not a tensor", i);
  int ri = read_index(c, i, j);
  if (c->read_cache[ri] != TT_INVALID) return c->read_cache[ri];
  tt_val v;
  if (!r->storage) {
    v = add_param(c, TT_PARAM_SCALAR, i, j, r->dtype, tt_shape_scalar(r->dtype));
  } else {
    storage_slot *s = slot_for(c, r, i, j);
    if (!s) return TT_INVALID;
    v = tt_view_read(c->b, s->flat, r, offset_value(c, r, i, j, s->numel));
  }
  c->read_cache[ri] = v;
  return v;
}

tt_val tt_lc_tensor(tt_lower_ctx *c, int i) { return read_tensor(c, tt_lc_ref(c, i), i, -1); }

tt_val tt_lc_list_tensor(tt_lower_ctx *c, int i, int j) {
  const tt_tensor_ref *r = tt_lc_list_ref(c, i, j);
  if (!r) return TT_INVALID;
  return read_tensor(c, r, i, j);
}

tt_val tt_lc_scalar(tt_lower_ctx *c, int i, tt_dtype dt) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (a && a->kind == TT_ARG_TENSOR && !a->u.tensor->storage)
    return tt_b_convert(c->b, tt_lc_tensor(c, i), dt);
  if (a && a->kind == TT_ARG_TENSOR) /* a device tensor used as a scalar */
    return tt_b_convert(c->b, tt_lc_tensor(c, i), dt);
  if (!a || (a->kind != TT_ARG_SCALAR && a->kind != TT_ARG_INT && a->kind != TT_ARG_DOUBLE &&
             a->kind != TT_ARG_BOOL))
    return tt_b_fail(c->b, TT_ERR_RUNTIME, "internal: argument %d is not a scalar", i);
  if (tt_dtype_is_complex(dt)) /* scalars are real: passed as the component type */
    return tt_b_convert(c->b, tt_lc_scalar(c, i, tt_dtype_real_part(dt)), dt);
  return add_param(c, TT_PARAM_SCALAR, i, -1, dt, tt_shape_scalar(dt));
}

tt_val tt_lc_scalar_list(tt_lower_ctx *c, int i, int j, tt_dtype dt) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (!a || (a->kind != TT_ARG_SCALAR_LIST && a->kind != TT_ARG_DOUBLE_LIST &&
             a->kind != TT_ARG_INT_LIST))
    return tt_b_fail(c->b, TT_ERR_RUNTIME, "internal: argument %d is not a scalar list", i);
  if (j < 0 || j >= a->count) return tt_b_fail(c->b, TT_ERR_RUNTIME, "internal: bad list index");
  if (tt_dtype_is_complex(dt))
    return tt_b_convert(c->b, tt_lc_scalar_list(c, i, j, tt_dtype_real_part(dt)), dt);
  return add_param(c, TT_PARAM_SCALAR, i, j, dt, tt_shape_scalar(dt));
}

double tt_lc_scalar_value(tt_lower_ctx *c, int i) {
  const tt_arg *a = tt_lc_arg(c, i);
  if (!a) return 0;
  bool seen = false;
  for (int k = 0; k < c->n_value_args; k++) seen |= c->value_args[k] == i;
  if (!seen) {
    GROW(c->value_args, c->n_value_args, c->cap_value_args);
    c->value_args[c->n_value_args++] = i;
  }
  switch (a->kind) {
    case TT_ARG_SCALAR: return a->u.s.kind == TT_SCALAR_FLOAT ? a->u.s.f : (double)a->u.s.i;
    case TT_ARG_INT: return (double)a->u.i;
    case TT_ARG_DOUBLE: return a->u.d;
    case TT_ARG_BOOL: return a->u.b;
    case TT_ARG_TENSOR:
      if (!a->u.tensor->storage)
        return tt_dtype_is_floating(a->u.tensor->dtype) ? a->u.tensor->value_f
                                                        : (double)a->u.tensor->value_i;
      return 0;
    default: return 0;
  }
}

tt_val tt_lc_rng_state(tt_lower_ctx *c) {
  int64_t two = 2;
  return add_param(c, TT_PARAM_RNG, -1, -1, TT_U64, tt_shape_make(TT_U64, 1, &two));
}

/* ------------------------------------------------------------ results */

void tt_lc_output(tt_lower_ctx *c, tt_val v) {
  GROW(c->results, c->n_results, c->cap_results);
  c->unchanged = realloc(c->unchanged, (size_t)c->cap_results * sizeof *c->unchanged);
  if (!c->unchanged) abort();
  c->unchanged[c->n_results] = false;
  c->results[c->n_results++] = v;
}

void tt_lc_output_unchanged(tt_lower_ctx *c) {
  tt_lc_output(c, TT_INVALID);
  c->unchanged[c->n_results - 1] = true;
}

void tt_lc_write(tt_lower_ctx *c, int i, int j, tt_val v) {
  GROW(c->writes, c->n_writes, c->cap_writes);
  c->writes[c->n_writes++] = (pending_write){i, j, v};
}

bool tt_lc_checks_on(const tt_lower_ctx *c) { return c->checks_on; }

/* The check values of `bad` (any shape; nonzero = failed) and `value` (bad's
 * shape or TT_INVALID): the first offending element by a min-reduction of
 * (bad ? flat index : n), its value by a one-element dynamic slice. */
static tt_check_vals check_vals(tt_builder *b, tt_val bad, tt_val value) {
  tt_shape s = tt_b_shape(b, bad);
  if (s.dtype != TT_BOOL) bad = tt_b_compare(b, "NE", bad, tt_b_full(b, s, 0));
  if (value != TT_INVALID) {
    tt_shape vs = tt_b_shape(b, value);
    value = tt_b_convert(b, value, TT_I64);
    bool same = vs.ndim == s.ndim;
    for (int k = 0; same && k < s.ndim; k++) same = vs.dims[k] == s.dims[k];
    if (!same) value = tt_b_broadcast_to(b, value, s.ndim, s.dims);
  }
  int64_t n = 1;
  for (int k = 0; k < s.ndim; k++) n *= s.dims[k];
  tt_val zero = tt_b_constant_int(b, TT_I64, 0);
  if (n == 0) return (tt_check_vals){tt_b_constant(b, TT_BOOL, 0), zero, zero};
  if (s.ndim == 0) return (tt_check_vals){bad, zero, value != TT_INVALID ? value : zero};
  tt_val flat = tt_b_reshape(b, bad, 1, &n);
  tt_shape is = tt_shape_make(TT_I64, 1, &n);
  tt_val big = tt_b_constant_int(b, TT_I64, n);
  tt_val cand = tt_b_select(b, flat, tt_b_iota(b, is, 0), tt_b_broadcast_to(b, big, 1, &n));
  int64_t dim0 = 0;
  tt_val pos = tt_b_reduce(b, cand, big, &dim0, 1, "minimum");
  tt_val failed = tt_b_compare(b, "LT", pos, big);
  pos = tt_b_select(b, failed, pos, zero);
  tt_val v = zero;
  if (value != TT_INVALID) {
    int64_t one = 1;
    v = tt_b_dynamic_slice(b, tt_b_reshape(b, value, 1, &n), &pos, &one);
    v = tt_b_reshape(b, v, 0, NULL);
  }
  return (tt_check_vals){failed, pos, v};
}

static void add_check(tt_lower_ctx *c, tt_val bad, tt_val value, tt_error_code code,
                      const char *fmt, va_list ap) {
  if (!c->checks_on || bad == TT_INVALID || tt_b_error(c->b)) return;
  tt_check_vals v = check_vals(c->b, bad, value);
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  GROW(c->checks, c->n_checks, c->cap_checks);
  GROW(c->check_vals, c->n_checks, c->cap_check_vals);
  c->checks[c->n_checks] = (tt_check_def){code, strdup(msg)};
  c->check_vals[c->n_checks++] = v;
}

void tt_lc_check(tt_lower_ctx *c, tt_val bad, tt_error_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add_check(c, bad, TT_INVALID, code, fmt, ap);
  va_end(ap);
}

void tt_lc_check_value(tt_lower_ctx *c, tt_val bad, tt_val value, tt_error_code code,
                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add_check(c, bad, value, code, fmt, ap);
  va_end(ap);
}

tt_val tt_lc_check_word(tt_builder *b, const tt_check_vals *checks, int n) {
  tt_val num = tt_b_constant_int(b, TT_I64, TT_CHECK_WORD_OK);
  tt_val pos = tt_b_constant_int(b, TT_I64, -1), value = tt_b_constant_int(b, TT_I64, 0);
  for (int k = n - 1; k >= 0; k--) { /* the first failing check wins */
    num = tt_b_select(b, checks[k].bad, tt_b_constant_int(b, TT_I64, k), num);
    pos = tt_b_select(b, checks[k].bad, checks[k].pos, pos);
    value = tt_b_select(b, checks[k].bad, checks[k].value, value);
  }
  int64_t one = 1;
  tt_val parts[3] = {tt_b_reshape(b, num, 1, &one), tt_b_reshape(b, pos, 1, &one),
                     tt_b_reshape(b, value, 1, &one)};
  return tt_b_concat(b, parts, 3, 0);
}

tt_error *tt_lc_decline(tt_lower_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tt_error *e = tt_error_newv(TT_ERR_NOT_IMPLEMENTED, fmt, ap);
  va_end(ap);
  return tt_error_wrap(e, "%s: ", c->op_name);
}

tt_error *tt_lc_fail(tt_lower_ctx *c, tt_error_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tt_error *e = tt_error_newv(code, fmt, ap);
  va_end(ap);
  /* Also poison the builder so chained calls stop emitting. */
  tt_b_fail(c->b, code, "%s", tt_error_message(e));
  return e;
}

/* ------------------------------------------------------------ build */

static void ctx_free(tt_lower_ctx *c) {
  tt_builder_free(c->b);
  free(c->slots);
  free(c->read_cache);
  free(c->offset_cache);
  free(c->read_base);
  free(c->params);
  free(c->results);
  free(c->unchanged);
  free(c->writes);
  free(c->value_args);
  for (int k = 0; k < c->n_checks; k++) free(c->checks[k].message);
  free(c->checks);
  free(c->check_vals);
}

static const char *shape_str(const tt_tensor_ref *r, char *buf, size_t size) {
  size_t off = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < r->ndim && off < size; i++)
    off += (size_t)snprintf(buf + off, size - off, i ? ", %" PRId64 : "%" PRId64, r->sizes[i]);
  if (off < size) snprintf(buf + off, size - off, "]");
  return buf;
}

/* Emits the write of `value` into destination tensor (arg, elem), recording
 * the storage's new flat value, or a resize request for out= arguments. */
static tt_error *write_destination(tt_lower_ctx *c, tt_program *p, int arg, int elem, tt_val value,
                                   tt_output_plan **resize, int *n_resize, int *cap_resize) {
  const tt_arg *a = tt_lc_arg(c, arg);
  const tt_tensor_ref *r = elem < 0 ? tt_lc_ref(c, arg) : tt_lc_list_ref(c, arg, elem);
  if (!r || !r->storage) return tt_error_new(TT_ERR_RUNTIME, "internal: bad write destination");
  tt_shape vs = tt_b_shape(c->b, value);
  bool same = vs.ndim == r->ndim;
  for (int k = 0; same && k < r->ndim; k++) same = vs.dims[k] == r->sizes[k];
  if (!same) {
    if (a->resizable) {
      GROW(*resize, *n_resize, *cap_resize);
      (*resize)[(*n_resize)++] = (tt_output_plan){TT_OUT_WRITE, arg, elem, vs};
      return NULL;
    }
    char s1[160], s2[160];
    tt_tensor_ref tmp = *r;
    tmp.ndim = vs.ndim;
    memcpy(tmp.sizes, vs.dims, sizeof vs.dims);
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "output with shape %s doesn't match the broadcast shape %s",
                        shape_str(r, s1, sizeof s1), shape_str(&tmp, s2, sizeof s2));
  }
  if (!tt_can_cast(vs.dtype, r->dtype))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "result type %s can't be cast to the desired output type %s",
                        tt_dtype_torch_name(vs.dtype), tt_dtype_torch_name(r->dtype));
  tt_val v = tt_b_convert(c->b, value, r->dtype);
  storage_slot *s = NULL;
  for (int k = 0; k < c->n_slots; k++)
    if (c->slots[k].storage == r->storage) s = &c->slots[k];
  size_t item = tt_dtype_size(r->dtype);
  int64_t numel = (int64_t)(r->storage->nbytes / item);
  if (!s && !tt_view_covers(r, numel)) s = slot_for(c, r, arg, elem); /* need the base */
  if (s && s->dtype != r->dtype)
    return tt_error_new(TT_ERR_NOT_IMPLEMENTED, "write through a view of another dtype");
  tt_val base = s ? s->current : TT_INVALID;
  tt_val fresh = tt_view_write(c->b, base, r, numel, v, offset_value(c, r, arg, elem, numel));
  if (s) {
    s->current = fresh;
    return NULL; /* emitted once per storage at the end */
  }
  /* whole-storage write to a storage not read by this program: a slot
   * without a parameter. */
  GROW(c->slots, c->n_slots, c->cap_slots);
  c->slots[c->n_slots++] = (storage_slot){r->storage, r->dtype, numel, TT_INVALID, fresh};
  (void)p;
  return NULL;
}

static int dest_count(const tt_arg *a) {
  if (!a->written) return 0;
  if (a->kind == TT_ARG_TENSOR) return 1;
  if (a->kind == TT_ARG_TENSOR_LIST) return a->count;
  return 0;
}

/* Runs the lowering and computes the program's outputs: their plan and
 * values (flat), plus resize requests for out= arguments. */
static tt_error *lower_op(tt_lower_ctx *c, tt_program *p, bool returns_written,
                          tt_output_plan **outs_p, int *n_outs_p, tt_val **vals_p, int *n_vals_p,
                          tt_output_plan **resize_p, int *n_resize_p) {
  tt_arg *args = c->args;
  int nargs = c->nargs;
  const char *op_name = c->op_name;
  tt_error *err = NULL;
  tt_output_plan *outs = NULL, *resize = NULL;
  int n_outs = 0, cap_outs = 0, n_resize = 0, cap_resize = 0;
  tt_val *out_vals = NULL;
  int cap_vals = 0, n_vals = 0;

  if (returns_written) {
    int k = 0;
    for (int i = 0; i < nargs && !err; i++) {
      int n = dest_count(&args[i]);
      for (int j = 0; j < n && !err; j++, k++) {
        if (k >= c->n_results) {
          err = tt_error_new(TT_ERR_RUNTIME, "internal: %s produced %d results for more destinations",
                             op_name, c->n_results);
          break;
        }
        if (c->unchanged[k]) continue;
        err = write_destination(c, p, i, args[i].kind == TT_ARG_TENSOR_LIST ? j : -1,
                                c->results[k], &resize, &n_resize, &cap_resize);
      }
    }
  } else {
    for (int k = 0; k < c->n_results; k++) {
      tt_val v = c->results[k];
      tt_shape shape = tt_b_shape(c->b, v);
      int64_t numel = tt_shape_numel(&shape);
      GROW(outs, n_outs, cap_outs);
      outs[n_outs++] = (tt_output_plan){TT_OUT_NEW, -1, -1, shape};
      GROW(out_vals, n_vals, cap_vals);
      out_vals[n_vals++] = tt_b_reshape(c->b, v, 1, &numel); /* storages are flat */
    }
  }
  for (int w = 0; w < c->n_writes && !err; w++)
    err = write_destination(c, p, c->writes[w].arg, c->writes[w].elem, c->writes[w].value, &resize,
                            &n_resize, &cap_resize);
  if (!err && tt_b_error(c->b)) err = tt_b_take_error(c->b);
  /* one output per storage whose contents changed */
  for (int k = 0; k < c->n_slots && !err; k++) {
    storage_slot *s = &c->slots[k];
    if (s->current == s->flat) continue;
    int arg = -1, elem = -1;
    /* find a tensor referring to this storage to name it in the plan */
    for (int i = 0; i < nargs && arg < 0; i++) {
      if (args[i].kind == TT_ARG_TENSOR && args[i].u.tensor->storage == s->storage) arg = i;
      if (args[i].kind == TT_ARG_TENSOR_LIST)
        for (int j = 0; j < args[i].count && arg < 0; j++)
          if (args[i].u.tensors[j] && args[i].u.tensors[j]->storage == s->storage) arg = i, elem = j;
    }
    GROW(outs, n_outs, cap_outs);
    outs[n_outs++] = (tt_output_plan){TT_OUT_WRITE, arg, elem, tt_b_shape(c->b, s->current)};
    GROW(out_vals, n_vals, cap_vals);
    out_vals[n_vals++] = s->current;
  }
  *outs_p = outs;
  *n_outs_p = n_outs;
  *vals_p = out_vals;
  *n_vals_p = n_vals;
  *resize_p = resize;
  *n_resize_p = n_resize;
  return err;
}

static tt_error *ctx_init(tt_lower_ctx *c, const char *op_name, tt_arg *args, int nargs,
                          tt_builder *b) {
  memset(c, 0, sizeof *c);
  c->op_name = op_name;
  c->args = args;
  c->nargs = nargs;
  c->b = b;
  c->checks_on = tt_device_checks_enabled();
  c->read_base = calloc((size_t)nargs + 1, sizeof *c->read_base);
  int total = 0;
  for (int i = 0; i < nargs; i++) {
    c->read_base[i] = total;
    total += args[i].kind == TT_ARG_TENSOR_LIST ? (args[i].count > 0 ? args[i].count : 1) : 1;
  }
  c->read_cache = malloc((size_t)(total ? total : 1) * sizeof *c->read_cache);
  c->offset_cache = malloc((size_t)(total ? total : 1) * sizeof *c->offset_cache);
  if (!c->b || !c->read_base || !c->read_cache || !c->offset_cache)
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory lowering %s", op_name);
  for (int i = 0; i < total; i++) c->read_cache[i] = c->offset_cache[i] = TT_INVALID;
  return NULL;
}

tt_error *tt_program_lower_into(tt_builder *b, const tt_region_binding *bind, const char *op_name,
                                tt_lower_fn fn, tt_arg *args, int nargs, bool returns_written,
                                tt_val **out_vals, int *n_out_vals) {
  *out_vals = NULL;
  *n_out_vals = 0;
  tt_lower_ctx c;
  tt_error *err = ctx_init(&c, op_name, args, nargs, b);
  c.bind = bind;
  if (!err) err = fn(&c);
  if (!err && tt_b_error(b)) err = tt_b_take_error(b);
  tt_output_plan *outs = NULL, *resize = NULL;
  int n_outs = 0, n_resize = 0;
  if (!err) err = lower_op(&c, NULL, returns_written, &outs, &n_outs, out_vals, n_out_vals,
                           &resize, &n_resize);
  if (!err && n_resize)
    err = tt_error_new(TT_ERR_RUNTIME, "internal: %s needs a resize inside a region", op_name);
  for (int k = 0; !err && bind && bind->check && k < c.n_checks; k++)
    bind->check(bind->self, &c.check_vals[k]);
  free(outs);
  free(resize);
  c.b = NULL; /* the builder is the region's */
  ctx_free(&c);
  if (err) {
    free(*out_vals);
    *out_vals = NULL;
    return tt_error_wrap(err, "%s: ", op_name);
  }
  return NULL;
}

tt_error *tt_program_build(const char *op_name, tt_lower_fn fn, tt_arg *args, int nargs,
                           bool returns_written, tt_program **out) {
  *out = NULL;
  tt_lower_ctx c;
  tt_error *err = ctx_init(&c, op_name, args, nargs, tt_builder_new());
  if (err) {
    ctx_free(&c);
    return err;
  }
  err = fn(&c);
  if (!err && tt_b_error(c.b)) err = tt_b_take_error(c.b);
  tt_program *p = calloc(1, sizeof *p);
  if (p && c.n_value_args) { /* a decline may depend on the values too */
    p->value_args = c.value_args;
    p->n_value_args = c.n_value_args;
    c.value_args = NULL;
  }
  if (!p) err = err ? err : tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  if (err) {
    if (p && tt_error_code_of(err) == TT_ERR_NOT_IMPLEMENTED) {
      /* a decline is cached too, so the lowering does not run again */
      p->declined = TT_ERR_NOT_IMPLEMENTED;
      p->decline_message = strdup(tt_error_message(err));
      *out = p;
      tt_error_free(err);
      err = NULL;
    } else {
      free(p);
    }
    ctx_free(&c);
    return err;
  }
  tt_output_plan *outs = NULL, *resize = NULL;
  int n_outs = 0, n_resize = 0, n_vals = 0;
  tt_val *out_vals = NULL;
  err = lower_op(&c, p, returns_written, &outs, &n_outs, &out_vals, &n_vals, &resize, &n_resize);
  if (!err && n_resize == 0 && c.n_checks) { /* the error word goes last */
    tt_val *grown = realloc(out_vals, sizeof *out_vals * (size_t)(n_vals + 1));
    if (!grown) abort();
    out_vals = grown;
    out_vals[n_vals++] = tt_lc_check_word(c.b, c.check_vals, c.n_checks);
    p->checks = c.checks;
    p->n_checks = c.n_checks;
    c.checks = NULL;
    c.n_checks = 0;
  }
  if (!err && n_resize == 0) err = tt_b_finish(c.b, out_vals, n_vals, &p->text);
  if (err) {
    free(outs);
    free(resize);
    free(out_vals);
    tt_program_free(p);
    ctx_free(&c);
    return tt_error_wrap(err, "%s: ", op_name);
  }
  p->outs = outs;
  p->n_outs = n_outs;
  p->resize = resize;
  p->n_resize = n_resize;
  p->params = c.params;
  p->n_params = c.n_params;
  c.params = NULL;
  free(out_vals);
  ctx_free(&c);
  *out = p;
  return NULL;
}
