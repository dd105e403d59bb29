/* Strict eager: one cached program per op, compiled on its first launch
 * (or loaded from the persistent cache), launched asynchronously. */
#include "graph/strict.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/settings.h"
#include "graph/core.h"
#include "graph/device_checks.h"
#include "graph/explain.h"
#include "graph/modes.h"
#include "core/trace.h"
#include "graph/dump.h"
#include "graph/persistent.h"
#include "graph/step_stats.h"
#include "graph/storage.h"

/* One line per compile: the op and the argument signature that caused it. */
static void log_compile(const char *op_name, const char *sig, double seconds) {
  fprintf(stderr, "torch_tpu: compiled %s (%s) in %.1f ms\n", op_name, sig, seconds * 1e3);
}
static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* TORCH_TPU_DUMP_DIR: the module, its options and what keys it. */
static int dump_compile(const char *op_name, const tt_arg *args, int nargs, const char *text,
                         const tt_compile_options *opts) {
  char sig[1024], key[1400], options[256];
  tt_describe_args(args, nargs, sig, sizeof sig);
  snprintf(key, sizeof key, "Strict op program, cached per op and argument signature\nop: %s\nargs: %s\n",
           op_name, sig);
  snprintf(options, sizeof options, "optimization_level: %d\nportable: %s\nmode: %s\n",
           opts->optimization_level, opts->portable ? "true" : "false",
           tt_get_synchronous() ? "debug" : "strict");
  return tt_dump_compile("op", op_name, text, options, key);
}

static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;

/* The program's executable, as a reference of the caller's: the loaded one,
 * else loaded from the persistent cache or compiled (once: racing threads
 * wait for the first). The pool (cache/exe_pool.h) may unload it after the
 * caller released it; the next call then loads or compiles it again. */
static tt_error *acquire_exe(tt_program *p, const char *op_name, const tt_arg *args, int nargs,
                             const void *key, size_t key_len, tt_executable **out) {
  if ((*out = tt_pool_acquire(&p->exe_slot))) return NULL;
  pthread_mutex_lock(&compile_lock);
  tt_error *err = NULL;
  tt_executable *exe = tt_pool_acquire(&p->exe_slot);
  if (!exe) err = tt_pool_before_compile();
  if (!exe && !err && (exe = tt_persistent_load(TT_PERSIST_OP, key, key_len)))
    exe = tt_pool_install(&p->exe_slot, exe);
  if (!exe && !err) {
    double t0 = now_seconds();
    tt_compile_options opts = {tt_optimization_level(), true};
    int dump_seq = tt_dump_enabled() ? dump_compile(op_name, args, nargs, p->text, &opts) : -1;
    double trace_t0 = tt_trace_now_us();
    err = tt_compile(tt_core_runtime(), p->text, strlen(p->text), &opts, &exe);
    if (tt_trace_on()) tt_trace_end("compile", op_name, trace_t0, "strict op, cache tier: compiled");
    if (err) {
      if (tt_setting_bool_or_default(TT_SETTING_DEBUG_PROGRAMS)) fprintf(stderr, "%s\n", p->text);
      err = tt_error_wrap(tt_pool_explain_compile_error(err), "compiling %s: ", op_name);
    } else {
      p->compile_seconds = now_seconds() - t0;
      tt_note_compile(tt_get_synchronous() ? TT_MODE_DEBUG : TT_MODE_STRICT);
      if (tt_log_compiles_enabled() || tt_explain_enabled()) {
        char sig[1024];
        tt_describe_args(args, nargs, sig, sizeof sig);
        if (tt_log_compiles_enabled()) log_compile(op_name, sig, p->compile_seconds);
        tt_explain_op_compile(op_name, sig);
      }
      tt_dump_optimized(dump_seq, exe);
      tt_persistent_store(TT_PERSIST_OP, key, key_len, exe, NULL, 0);
      exe = tt_pool_install(&p->exe_slot, exe);
    }
  }
  pthread_mutex_unlock(&compile_lock);
  *out = exe;
  return err;
}

/* Hands the launch's error word to the device checks, with the user's line. */
static void watch_checks(const tt_program *p, const char *op_name, tt_buffer *word) {
  char *source = tt_device_checks_source_line();
  tt_check_site stack_sites[8];
  tt_check_site *sites = p->n_checks <= 8 ? stack_sites : calloc((size_t)p->n_checks, sizeof *sites);
  if (sites) {
    for (int k = 0; k < p->n_checks; k++) sites[k] = (tt_check_site){op_name, &p->checks[k], source};
    tt_device_checks_watch(word, sites, p->n_checks);
  } else {
    tt_buffer_release(word);
  }
  if (sites != stack_sites) free(sites);
  free(source);
}

static tt_error *launch(tt_program *p, tt_executable *exe, tt_arg *args, int device,
                        const char *op_name, tt_op_result *res) {
  int np = p->n_params;
  /* stack_in zeroed: with np == 0 GCC cannot see that nothing reads it */
  tt_buffer *stack_in[32] = {0}, *stack_owned[32], *stack_out[16];
  tt_buffer **in = np <= 32 ? stack_in : calloc((size_t)np, sizeof *in);
  tt_buffer **owned = np <= 32 ? stack_owned : calloc((size_t)np, sizeof *owned);
  int n_exe_outs = p->n_outs + (p->n_checks > 0); /* the error word last */
  tt_buffer **out = n_exe_outs <= 16 ? stack_out : calloc((size_t)n_exe_outs, sizeof *out);
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
      else err = tt_storage_ensure(r->storage, pp->dtype, &owned[i]);
      in[i] = owned[i];
    } else if (pp->kind == TT_PARAM_SCALAR || pp->kind == TT_PARAM_OFFSET) {
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
  if (!err) err = tt_execute(exe, device, in, np, out, n_exe_outs);
  if (err) goto done;
  if (p->n_checks) watch_checks(p, op_name, out[p->n_outs]);
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

tt_error *tt_strict_run(tt_program *p, const char *op_name, tt_arg *args, int nargs,
                        const void *key, size_t key_len, int device, tt_op_result *res) {
  tt_executable *exe = NULL;
  TT_TRY(acquire_exe(p, op_name, args, nargs, key, key_len, &exe));
  tt_error *err = launch(p, exe, args, device, op_name, res);
  tt_executable_release(exe); /* the runtime keeps it until the launch completes */
  return err;
}
