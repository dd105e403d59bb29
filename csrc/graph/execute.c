/* Running one aten op: its cache key, its plan (built by the lowering on a
 * miss), then Strict launch (strict.c) or Fused record (region.c). */
#include "graph/execute.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/compile_cache.h"
#include "graph/core.h"
#include "graph/device_checks.h"
#include "graph/explain.h"
#include "graph/key_buf.h"
#include "graph/lower_ctx.h"
#include "graph/region.h"
#include "graph/strict.h"
#include "graph/storage.h"
#include "graph/value_args.h"
#include "graph/view_layout.h"
#include "ops/custom_kernel.h"

static _Atomic uint64_t n_run, n_declined, n_missing;

tt_exec_stats tt_get_exec_stats(void) {
  return (tt_exec_stats){atomic_load(&n_run), atomic_load(&n_declined), atomic_load(&n_missing)};
}

/* ------------------------------------------------------------ cache key */

/* Index of the first earlier tensor sharing `s` (programs differ when two
 * arguments alias one storage), or -1. */
static int32_t alias_index(tt_storage **seen, int n_seen, tt_storage *s) {
  for (int i = 0; i < n_seen; i++)
    if (seen[i] == s) return i;
  return -1;
}

static void key_tensor(tt_key_buf *k, const tt_tensor_ref *r, tt_storage ***seen, int *n_seen,
                       int *cap_seen) {
  if (!r) {
    TT_KEY_VAL(k, (uint8_t)0xEE);
    return;
  }
  TT_KEY_VAL(k, (uint8_t)r->dtype);
  TT_KEY_VAL(k, (uint8_t)r->ndim);
  if (!r->storage) {
    TT_KEY_VAL(k, (uint8_t)(2 + r->wrapped_number));
    return;
  }
  /* a wrapped number (a Python complex, uploaded) promotes unlike a zero-dim
   * tensor of its dtype: programs differ */
  TT_KEY_VAL(k, (uint8_t)(1 + 4 * r->wrapped_number));
  tt_key_put(k, r->sizes, sizeof(int64_t) * (size_t)r->ndim);
  tt_key_put(k, r->strides, sizeof(int64_t) * (size_t)r->ndim);
  /* the offset's class, not its value: views at nonzero offsets read them
   * at run time (graph/view_layout.h), and offset 0 keeps its own programs */
  size_t item = tt_dtype_size(r->dtype);
  TT_KEY_VAL(k, tt_view_offset_class(r, item ? (int64_t)(r->storage->nbytes / item) : 0));
  TT_KEY_VAL(k, (uint64_t)r->storage->nbytes);
  TT_KEY_VAL(k, alias_index(*seen, *n_seen, r->storage));
  if (*n_seen == *cap_seen) {
    *cap_seen = *cap_seen ? *cap_seen * 2 : 16;
    *seen = realloc(*seen, (size_t)*cap_seen * sizeof **seen);
    if (!*seen) abort();
  }
  (*seen)[(*n_seen)++] = r->storage;
}

static void build_key(tt_key_buf *k, const char *op_name, const tt_arg *args, int nargs,
                      bool returns_written) {
  tt_key_put(k, op_name, strlen(op_name) + 1);
  /* device checks on/off: the only trace of the checks in keys */
  TT_KEY_VAL(k, (uint8_t)(returns_written | tt_device_checks_enabled() << 1));
  TT_KEY_VAL(k, (uint8_t)tt_optimization_level());
  TT_KEY_VAL(k, (uint8_t)tt_default_float());
  tt_storage **seen = NULL;
  int n_seen = 0, cap_seen = 0;
  for (int i = 0; i < nargs; i++) {
    const tt_arg *a = &args[i];
    TT_KEY_VAL(k, (uint8_t)a->kind);
    TT_KEY_VAL(k, (uint8_t)(a->written | (a->resizable << 1)));
    switch (a->kind) {
      case TT_ARG_TENSOR: key_tensor(k, a->u.tensor, &seen, &n_seen, &cap_seen); break;
      case TT_ARG_TENSOR_LIST:
        TT_KEY_VAL(k, a->count);
        for (int j = 0; j < a->count; j++) key_tensor(k, a->u.tensors[j], &seen, &n_seen, &cap_seen);
        break;
      case TT_ARG_INT: case TT_ARG_LAYOUT: case TT_ARG_MEMORY_FORMAT: TT_KEY_VAL(k, a->u.i); break;
      case TT_ARG_DEVICE: break; /* programs are portable across devices */
      case TT_ARG_DOUBLE: TT_KEY_VAL(k, a->u.d); break;
      case TT_ARG_BOOL: TT_KEY_VAL(k, (uint8_t)a->u.b); break;
      case TT_ARG_DTYPE: TT_KEY_VAL(k, (uint8_t)a->u.dtype); break;
      case TT_ARG_STRING: tt_key_put(k, a->u.str, strlen(a->u.str) + 1); break;
      case TT_ARG_SCALAR: TT_KEY_VAL(k, (uint8_t)a->u.s.kind); break;
      case TT_ARG_INT_LIST:
        TT_KEY_VAL(k, a->count);
        tt_key_put(k, a->u.ints, sizeof(int64_t) * (size_t)a->count);
        break;
      case TT_ARG_DOUBLE_LIST:
        TT_KEY_VAL(k, a->count);
        tt_key_put(k, a->u.doubles, sizeof(double) * (size_t)a->count);
        break;
      case TT_ARG_BOOL_LIST:
        TT_KEY_VAL(k, a->count);
        for (int j = 0; j < a->count; j++) TT_KEY_VAL(k, (uint8_t)a->u.bools[j]);
        break;
      case TT_ARG_SCALAR_LIST:
        TT_KEY_VAL(k, a->count);
        for (int j = 0; j < a->count; j++) TT_KEY_VAL(k, (uint8_t)a->u.scalars[j].kind);
        break;
      case TT_ARG_NONE: case TT_ARG_GENERATOR: case TT_ARG_OTHER: break;
    }
  }
  free(seen);
}

/* Appends the values of the scalar arguments a program depends on, after a marker
 * byte so a key with values never equals a key without. */
static void add_values_to_key(tt_key_buf *k, const int *value_args, int n_value_args,
                              const tt_arg *args) {
  TT_KEY_VAL(k, (uint8_t)0xA5);
  for (int i = 0; i < n_value_args; i++) {
    const tt_arg *a = &args[value_args[i]];
    if (a->kind == TT_ARG_SCALAR) {
      TT_KEY_VAL(k, a->u.s.i);
      TT_KEY_VAL(k, a->u.s.f);
    } else if (a->kind == TT_ARG_TENSOR) {
      TT_KEY_VAL(k, a->u.tensor->value_i);
      TT_KEY_VAL(k, a->u.tensor->value_f);
    }
  }
}

/* ------------------------------------------------------------ build */

/* Builds the op's program text and plan (not compiled: Fused eager only
 * needs the plan; Strict compiles on first launch). */
static tt_error *build_program(const char *op_name, tt_lower_fn fn, tt_arg *args, int nargs,
                               bool returns_written, tt_program **out) {
  return tt_program_build(op_name, fn, args, nargs, returns_written, out);
}

tt_error *tt_op_run(const char *op_name, tt_arg *args, int nargs, bool returns_written,
                    int device, tt_op_result *res) {
  memset(res, 0, sizeof *res);
  tt_lower_fn fn = tt_lowering_find(op_name);
  unsigned char kernel_digest[16];
  tt_lower_fn custom = fn ? NULL : tt_custom_kernel_find(op_name, kernel_digest);
  if (custom) fn = custom; /* a user's StableHLO kernel: its text's digest keys it too */
  if (!fn) {
    atomic_fetch_add(&n_missing, 1);
    return tt_error_new(TT_ERR_NOT_IMPLEMENTED, "no lowering for aten::%s", op_name);
  }
  tt_key_buf k;
  tt_key_init(&k);
  build_key(&k, op_name, args, nargs, returns_written);
  if (custom) tt_key_put(&k, kernel_digest, sizeof kernel_digest);
  tt_error *err = NULL;
  int n_value_args;
  const int *value_args = tt_value_args_find(k.data, k.len, &n_value_args);
  if (value_args) add_values_to_key(&k, value_args, n_value_args, args); /* value-dependent */
  tt_program *p = tt_cache_lookup(k.data, k.len);
  if (!p) {
    err = build_program(op_name, fn, args, nargs, returns_written, &p);
    if (!err && p->n_value_args && !value_args) {
      /* first sight of a value-dependent op: remember which values key it
       * under the value-free key; the program goes under the key with values */
      if (!tt_value_args_insert(k.data, k.len, p->value_args, p->n_value_args)) {
        tt_program_free(p);
        tt_key_free(&k);
        return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory keying %s", op_name);
      }
      add_values_to_key(&k, p->value_args, p->n_value_args, args);
    }
    if (!err && p->n_resize == 0)
      p = tt_cache_insert(k.data, k.len, p, tt_program_free, p->compile_seconds);
  }
  if (err) {
    tt_key_free(&k);
    return err;
  }
  if (p->n_resize) { /* nothing runs, nothing is cached: the next call has other shapes */
    res->n_resize = p->n_resize;
    res->resize = p->resize;
    p->resize = NULL;
    tt_program_free(p);
    tt_key_free(&k);
    return NULL;
  }
  if (p->declined) {
    tt_key_free(&k);
    atomic_fetch_add(&n_declined, 1);
    return tt_error_new(p->declined, "%s", p->decline_message);
  }
  if (tt_current_mode() == TT_MODE_FUSED) {
    err = tt_region_record(op_name, fn, p, k.data, k.len, args, nargs, returns_written, device, res);
    tt_key_free(&k);
    return err;
  }
  err = tt_strict_run(p, op_name, args, nargs, k.data, k.len, device, res);
  tt_key_free(&k);
  if (!err) atomic_fetch_add(&n_run, 1);
  if (!err && tt_get_synchronous()) {
    err = tt_runtime_synchronize(tt_core_runtime());
    if (err) {
      tt_op_result_clear(res);
      err = tt_error_wrap(err, "%s failed on the device: ", op_name);
    }
    /* debug mode: a failed device-side check raises at the op itself */
    if (!err && p->n_checks) err = tt_device_checks_poll();
    if (err) tt_op_result_clear(res);
  }
  return err;
}
