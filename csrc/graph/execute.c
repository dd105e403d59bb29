#include "graph/execute.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/compile_cache.h"
#include "core/settings.h"
#include "graph/core.h"
#include "graph/explain.h"
#include "graph/key_buf.h"
#include "graph/persistent.h"
#include "graph/region.h"
#include "graph/storage.h"

static _Atomic int optimization_level = 1;
static _Atomic bool synchronous;
static _Atomic int log_compiles = -1; /* -1: not yet read from the environment */

void tt_set_synchronous(bool on) { atomic_store(&synchronous, on); }
bool tt_get_synchronous(void) { return atomic_load(&synchronous); }
void tt_set_log_compiles(bool on) { atomic_store(&log_compiles, on); }

bool tt_log_compiles_enabled(void) {
  int v = atomic_load(&log_compiles);
  if (v < 0) {
    v = tt_setting_bool_or_default(TT_SETTING_LOG_COMPILES);
    atomic_store(&log_compiles, v);
  }
  return v > 0;
}

/* One line per compile: the op and the argument signature that caused it. */
static void log_compile(const char *op_name, const char *sig, double seconds) {
  fprintf(stderr, "torch_tpu: compiled %s (%s) in %.1f ms\n", op_name, sig, seconds * 1e3);
}
static _Atomic uint64_t n_run, n_declined, n_missing;

void tt_set_optimization_level(int level) { atomic_store(&optimization_level, level); }

tt_exec_stats tt_get_exec_stats(void) {
  return (tt_exec_stats){atomic_load(&n_run), atomic_load(&n_declined), atomic_load(&n_missing)};
}

/* ------------------------------------------------------------ modes */

static _Atomic int default_mode = -1; /* -1: not yet read from the settings */
static _Thread_local int thread_mode = -1;
static _Atomic int open_contexts;
static _Atomic int innermost_context_mode;

void tt_set_default_mode(tt_exec_mode mode) { atomic_store(&default_mode, (int)mode); }

int tt_thread_mode_enter(tt_exec_mode mode) {
  int previous = thread_mode;
  thread_mode = (int)mode;
  atomic_store(&innermost_context_mode, (int)mode);
  atomic_fetch_add(&open_contexts, 1);
  return previous;
}

void tt_thread_mode_exit(int previous) {
  thread_mode = previous;
  if (previous >= 0) atomic_store(&innermost_context_mode, previous);
  atomic_fetch_sub(&open_contexts, 1);
}

tt_exec_mode tt_current_mode(void) {
  if (thread_mode >= 0) return (tt_exec_mode)thread_mode;
  if (atomic_load(&open_contexts) > 0) return (tt_exec_mode)atomic_load(&innermost_context_mode);
  int mode = atomic_load(&default_mode), unread = -1;
  if (mode < 0) atomic_compare_exchange_strong(&default_mode, &unread, tt_settings_eager_mode_or_default());
  return (tt_exec_mode)atomic_load(&default_mode);
}

/* ------------------------------------------------------------ step stats */

static pthread_mutex_t step_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uint64_t compiles[TT_MODES];
  const void **seen; /* distinct programs launched this step */
  int n_seen, cap_seen;
  uint64_t launches, step_compiles;
  uint64_t last_programs, last_launches, last_compiles, steps;
} step;

void tt_note_compile(tt_exec_mode mode) {
  pthread_mutex_lock(&step_lock);
  step.compiles[mode]++;
  step.step_compiles++;
  pthread_mutex_unlock(&step_lock);
}

void tt_note_program_launch(const void *program) {
  pthread_mutex_lock(&step_lock);
  step.launches++;
  bool seen = false;
  for (int i = step.n_seen - 1; i >= 0 && !seen; i--) seen = step.seen[i] == program;
  if (!seen && step.n_seen < 4096) { /* beyond that the count saturates */
    if (step.n_seen == step.cap_seen) {
      int cap = step.cap_seen ? step.cap_seen * 2 : 64;
      const void **p = realloc(step.seen, sizeof *p * (size_t)cap);
      if (p) step.seen = p, step.cap_seen = cap;
    }
    if (step.n_seen < step.cap_seen) step.seen[step.n_seen++] = program;
  }
  pthread_mutex_unlock(&step_lock);
}

void tt_mark_step(void) {
  pthread_mutex_lock(&step_lock);
  step.last_programs = (uint64_t)step.n_seen;
  step.last_launches = step.launches;
  step.last_compiles = step.step_compiles;
  step.steps++;
  step.n_seen = 0;
  step.launches = step.step_compiles = 0;
  pthread_mutex_unlock(&step_lock);
}

tt_mode_stats tt_get_mode_stats(void) {
  pthread_mutex_lock(&step_lock);
  tt_mode_stats m;
  memcpy(m.compiles, step.compiles, sizeof m.compiles);
  m.last_step_programs = step.last_programs;
  m.last_step_launches = step.last_launches;
  m.last_step_compiles = step.last_compiles;
  m.steps = step.steps;
  pthread_mutex_unlock(&step_lock);
  return m;
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
  TT_KEY_VAL(k, (uint8_t)1);
  tt_key_put(k, r->sizes, sizeof(int64_t) * (size_t)r->ndim);
  tt_key_put(k, r->strides, sizeof(int64_t) * (size_t)r->ndim);
  TT_KEY_VAL(k, r->offset);
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
  TT_KEY_VAL(k, (uint8_t)returns_written);
  TT_KEY_VAL(k, (uint8_t)atomic_load(&optimization_level));
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

/* Appends the values of the scalar arguments p depends on, after a marker
 * byte so a key with values never equals a key without. */
static void add_values_to_key(tt_key_buf *k, const tt_program *p, const tt_arg *args) {
  TT_KEY_VAL(k, (uint8_t)0xA5);
  for (int i = 0; i < p->n_value_args; i++) {
    const tt_arg *a = &args[p->value_args[i]];
    if (a->kind == TT_ARG_SCALAR) {
      TT_KEY_VAL(k, a->u.s.i);
      TT_KEY_VAL(k, a->u.s.f);
    } else if (a->kind == TT_ARG_TENSOR) {
      TT_KEY_VAL(k, a->u.tensor->value_i);
      TT_KEY_VAL(k, a->u.tensor->value_f);
    }
  }
}

/* ------------------------------------------------------------ compile */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void dump_program(const char *op_name, const char *text) {
  char dir[2048]; /* leaves room for the file name in path */
  if (!text || !tt_setting_path_or_default(TT_SETTING_DUMP_DIR, dir, sizeof dir)) return;
  static _Atomic int counter;
  char path[4096];
  snprintf(path, sizeof path, "%s/%05d_%s.mlir", dir, atomic_fetch_add(&counter, 1), op_name);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* Builds the op's program text and plan (not compiled: Fused eager only
 * needs the plan; Strict compiles on first launch). */
static tt_error *build_program(const char *op_name, tt_lower_fn fn, tt_arg *args, int nargs,
                               bool returns_written, tt_program **out) {
  TT_TRY(tt_program_build(op_name, fn, args, nargs, returns_written, out));
  if (!(*out)->declined && !(*out)->n_resize) dump_program(op_name, (*out)->text);
  return NULL;
}

static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;

/* Compiles a cached plan's program once (racing threads wait for the first). */
static tt_error *ensure_compiled(tt_program *p, const char *op_name, const tt_arg *args, int nargs,
                                 const tt_key_buf *key) {
  pthread_mutex_lock(&compile_lock);
  tt_error *err = NULL;
  if (!p->exe) p->exe = tt_persistent_load(TT_PERSIST_OP, key->data, key->len);
  if (!p->exe) {
    double t0 = now_seconds();
    tt_compile_options opts = {atomic_load(&optimization_level), true};
    err = tt_compile(tt_core_runtime(), p->text, strlen(p->text), &opts, &p->exe);
    if (err) {
      if (tt_setting_bool_or_default(TT_SETTING_DEBUG_PROGRAMS)) fprintf(stderr, "%s\n", p->text);
      err = tt_error_wrap(err, "compiling %s: ", op_name);
    } else {
      p->compile_seconds = now_seconds() - t0;
      tt_note_compile(atomic_load(&synchronous) ? TT_MODE_DEBUG : TT_MODE_STRICT);
      if (tt_log_compiles_enabled() || tt_explain_enabled()) {
        char sig[1024];
        tt_describe_args(args, nargs, sig, sizeof sig);
        if (tt_log_compiles_enabled()) log_compile(op_name, sig, p->compile_seconds);
        tt_explain_op_compile(op_name, sig);
      }
      tt_persistent_store(TT_PERSIST_OP, key->data, key->len, p->exe, NULL, 0);
    }
  }
  pthread_mutex_unlock(&compile_lock);
  return err;
}

/* ------------------------------------------------------------ run */

const tt_tensor_ref *tt_plan_ref(const tt_arg *args, int arg, int elem) {
  const tt_arg *a = &args[arg];
  if (a->kind == TT_ARG_TENSOR) return a->u.tensor;
  if (a->kind == TT_ARG_TENSOR_LIST && elem >= 0 && elem < a->count) return a->u.tensors[elem];
  return NULL;
}

/* Host bytes of a scalar argument converted to dt. */
void tt_param_scalar_bytes(const tt_arg *args, const tt_param_plan *pp, unsigned char out[8]) {
  const tt_arg *a = &args[pp->arg];
  double f = 0;
  int64_t i = 0;
  bool is_float = false;
  if (a->kind == TT_ARG_TENSOR || a->kind == TT_ARG_TENSOR_LIST) { /* CPU 0-dim tensors */
    const tt_tensor_ref *r = tt_plan_ref(args, pp->arg, pp->elem);
    is_float = tt_dtype_is_floating(r->dtype);
    f = r->value_f;
    i = r->value_i;
  } else {
    tt_scalar s = {TT_SCALAR_INT, 0, 0};
    if (a->kind == TT_ARG_SCALAR) s = a->u.s;
    else if (a->kind == TT_ARG_SCALAR_LIST) s = a->u.scalars[pp->elem];
    else if (a->kind == TT_ARG_DOUBLE) s = (tt_scalar){TT_SCALAR_FLOAT, 0, a->u.d};
    else if (a->kind == TT_ARG_DOUBLE_LIST) s = (tt_scalar){TT_SCALAR_FLOAT, 0, a->u.doubles[pp->elem]};
    else if (a->kind == TT_ARG_INT) s = (tt_scalar){TT_SCALAR_INT, a->u.i, 0};
    else if (a->kind == TT_ARG_INT_LIST) s = (tt_scalar){TT_SCALAR_INT, a->u.ints[pp->elem], 0};
    else if (a->kind == TT_ARG_BOOL) s = (tt_scalar){TT_SCALAR_BOOL, a->u.b, 0};
    is_float = s.kind == TT_SCALAR_FLOAT;
    f = s.f;
    i = s.i;
  }
  memset(out, 0, 8);
  tt_dtype dt = pp->dtype;
  if (tt_dtype_is_floating(dt)) {
    uint64_t bits = tt_float_bits(dt, is_float ? f : (double)i);
    memcpy(out, &bits, tt_dtype_size(dt)); /* little-endian */
    return;
  }
  int64_t v = is_float ? (int64_t)f : i;
  if (dt == TT_BOOL) v = is_float ? (f != 0) : (i != 0);
  memcpy(out, &v, tt_dtype_size(dt));
}

static tt_error *launch(tt_program *p, tt_arg *args, int device, tt_op_result *res) {
  int np = p->n_params;
  tt_buffer *stack_in[32], *stack_owned[32], *stack_out[16];
  tt_buffer **in = np <= 32 ? stack_in : calloc((size_t)np, sizeof *in);
  tt_buffer **owned = np <= 32 ? stack_owned : calloc((size_t)np, sizeof *owned);
  tt_buffer **out = p->n_outs <= 16 ? stack_out : calloc((size_t)p->n_outs, sizeof *out);
  tt_error *err = NULL;
  if (!in || !owned || !out) {
    err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory launching a program");
    goto done;
  }
  memset(owned, 0, sizeof *owned * (size_t)np);
  for (int i = 0; i < np && !err; i++) {
    const tt_param_plan *pp = &p->params[i];
    if (pp->kind == TT_PARAM_STORAGE) {
      const tt_tensor_ref *r = tt_plan_ref(args, pp->arg, pp->elem);
      if (r->storage->device != device)
        err = tt_error_new(TT_ERR_INVALID_ARGUMENT,
                           "Expected all tensors to be on the same device, but found at least "
                           "two devices, tpu:%d and tpu:%d!", device, r->storage->device);
      else err = tt_storage_ensure(r->storage, pp->dtype, &in[i]);
    } else if (pp->kind == TT_PARAM_SCALAR) {
      unsigned char bytes[8];
      tt_param_scalar_bytes(args, pp, bytes);
      err = tt_core_upload_scalar(device, pp->dtype, bytes, &owned[i]);
      in[i] = owned[i];
    } else {
      err = tt_core_upload_rng_state(device, NULL, &owned[i]);
      in[i] = owned[i];
    }
  }
  /* a storage this op replaces may still be read by an open fused region */
  for (int k = 0; k < p->n_outs && !err; k++)
    if (p->outs[k].kind == TT_OUT_WRITE)
      err = tt_storage_sync(tt_plan_ref(args, p->outs[k].arg, p->outs[k].elem)->storage, true);
  if (!err) err = tt_execute(p->exe, device, in, np, out, p->n_outs);
  if (err) goto done;
  tt_note_program_launch(p);
  int n_new = 0;
  for (int k = 0; k < p->n_outs; k++) n_new += p->outs[k].kind == TT_OUT_NEW;
  res->news = n_new ? calloc((size_t)n_new, sizeof *res->news) : NULL;
  res->n_new = 0;
  for (int k = 0; k < p->n_outs; k++) {
    const tt_output_plan *op = &p->outs[k];
    if (op->kind == TT_OUT_WRITE) {
      tt_storage_set_buffer(tt_plan_ref(args, op->arg, op->elem)->storage, out[k]);
    } else if (res->news) {
      tt_new_tensor *t = &res->news[res->n_new++];
      t->dtype = op->shape.dtype;
      t->ndim = op->shape.ndim;
      memcpy(t->sizes, op->shape.dims, sizeof t->sizes);
      t->storage = tt_storage_new(device, tt_buffer_nbytes(out[k]));
      if (t->storage) tt_storage_set_buffer(t->storage, out[k]);
      else tt_buffer_release(out[k]);
    } else {
      tt_buffer_release(out[k]);
    }
  }
done:
  for (int i = 0; i < np && owned; i++) tt_buffer_release(owned[i]);
  if (in != stack_in) free(in);
  if (owned != stack_owned) free(owned);
  if (out != stack_out) free(out);
  return err;
}

tt_error *tt_op_run(const char *op_name, tt_arg *args, int nargs, bool returns_written,
                    int device, tt_op_result *res) {
  memset(res, 0, sizeof *res);
  tt_lower_fn fn = tt_lowering_find(op_name);
  if (!fn) {
    atomic_fetch_add(&n_missing, 1);
    return tt_error_new(TT_ERR_NOT_IMPLEMENTED, "no lowering for aten::%s", op_name);
  }
  tt_key_buf k;
  tt_key_init(&k);
  build_key(&k, op_name, args, nargs, returns_written);
  tt_program *p = tt_cache_lookup(k.data, k.len);
  tt_error *err = NULL;
  bool keyed_by_values = false;
  if (p && p->is_router) { /* the program depends on some scalar values */
    add_values_to_key(&k, p, args);
    keyed_by_values = true;
    p = tt_cache_lookup(k.data, k.len);
  }
  if (!p) {
    err = build_program(op_name, fn, args, nargs, returns_written, &p);
    if (!err && p->n_value_args && !keyed_by_values) {
      /* first sight of a value-dependent op: store a router under the
       * value-free key, the program under the key with values */
      tt_program *router = calloc(1, sizeof *router);
      if (router) {
        router->is_router = true;
        router->n_value_args = p->n_value_args;
        router->value_args = malloc(sizeof(int) * (size_t)p->n_value_args);
        if (router->value_args)
          memcpy(router->value_args, p->value_args, sizeof(int) * (size_t)p->n_value_args);
        tt_cache_insert(k.data, k.len, router, tt_program_free, 0);
      }
      add_values_to_key(&k, p, args);
    }
    if (!err && p->n_resize == 0)
      p = tt_cache_insert(k.data, k.len, p, tt_program_free, p->compile_seconds);
  }
  if (err) {
    tt_key_free(&k);
    return err;
  }
  if (p->n_resize) { /* not cached: the retry has other shapes */
    res->n_resize = p->n_resize;
    res->resize = p->resize;
    p->resize = NULL;
    tt_program_free(p);
    tt_key_free(&k);
    return tt_error_new(TT_ERR_NEEDS_RESIZE, "%s: out= arguments need resizing", op_name);
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
  err = ensure_compiled(p, op_name, args, nargs, &k);
  tt_key_free(&k);
  if (!err) err = launch(p, args, device, res);
  if (!err) atomic_fetch_add(&n_run, 1);
  if (!err && atomic_load(&synchronous)) {
    err = tt_runtime_synchronize(tt_core_runtime());
    if (err) {
      tt_op_result_clear(res);
      err = tt_error_wrap(err, "%s failed on the device: ", op_name);
    }
  }
  return err;
}

void tt_op_result_clear(tt_op_result *res) {
  for (int i = 0; i < res->n_new; i++) tt_storage_drop(res->news[i].storage);
  free(res->news);
  free(res->resize);
  memset(res, 0, sizeof *res);
}
