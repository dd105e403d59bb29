/* The fused region: recording ops, loop detection, and the flush that
 * compiles the recorded ops as one program (see region.h). */
#include "graph/grow.h"
#include "graph/region.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/compile_cache.h"
#include "core/settings.h"
#include "graph/arena.h"
#include "graph/core.h"
#include "core/trace.h"
#include "graph/device_checks.h"
#include "graph/dump.h"
#include "graph/explain.h"
#include "graph/key_buf.h"
#include "graph/lower_ctx.h"
#include "graph/modes.h"
#include "graph/persistent.h"
#include "graph/replay.h"
#include "graph/step_stats.h"
#include "graph/storage.h"

/* ------------------------------------------------------------ state */

typedef struct {
  tt_storage *storage; /* retained by the region */
  tt_dtype dtype;
  int64_t numel;
  bool input;   /* read from the storage's buffer: a program parameter */
  bool written; /* holds a value produced in the region */
} region_slot;

typedef struct {
  const char *op_name;
  tt_lower_fn fn;
  tt_program *plan; /* owned by the compilation cache */
  tt_arg *args;
  int nargs;
  bool returns_written;
  int value_base; /* index of the op's first parameter value */
  int *out_slots; /* per plan output: its slot */
  const char *source; /* plan->n_checks: the user's line at record, or NULL */
} region_op;

/* The host value of one scalar or RNG parameter of a recorded op. */
typedef struct {
  tt_dtype dtype;
  bool is_rng;
  unsigned char bytes[16];
} param_value;

typedef enum { RPARAM_SLOT, RPARAM_VALUE } rparam_kind;

typedef struct {
  rparam_kind kind;
  int index; /* slot, or value index */
  tt_dtype dtype;
} region_param;

/* A compiled region: what feeds each parameter, which slot each output
 * fills. Cached under the region key. */
typedef struct {
  /* the executable (cache/exe_pool.h; shared with replays): the pool may
   * unload it; it is then reloaded from disk or compiled again from text */
  tt_pool_entry *slot;
  char *text; /* the StableHLO; NULL for a program loaded from disk */
  region_param *params;
  int n_params;
  int *out_slots;
  int n_outs;
  int n_checks; /* device-side checks: the error word is output n_outs */
  double compile_seconds;
} region_program;

static struct {
  pthread_mutex_t lock;
  int device;
  region_op *ops;
  int n_ops, cap_ops;
  int cap_hashes;
  region_slot *slots;
  int n_slots, cap_slots;
  param_value *values;
  int n_values, cap_values;
  uint64_t *hashes; /* per op: hash of its per-op key, for loop detection */
  tt_key_buf key;   /* region key so far */
  tt_arena arena;   /* recorded arguments */
  int capture_depth;
  uint64_t flushes_at_capture; /* flush count when the outermost capture began */
  struct replay_request *replay_req; /* set while capture_end builds a replay */
  int max_ops;
  bool max_ops_chosen; /* by TORCH_TPU_FUSED_MAX_OPS or tt_region_set_max_ops */
  tt_region_stats stats;
} R = {.lock = PTHREAD_MUTEX_INITIALIZER, .max_ops = 0};

#define GROW(ptr, n, cap) TT_GROW(ptr, n, cap, 64)

/* What capture_end_replay asks of the capture's flush. */
struct replay_request {
  const tt_tensor_ref *args, *outs;
  int n_args, n_outs;
  tt_replay *replay;
  const char *why_not;
  bool want_text; /* export: the replay keeps the program's text */
};

static const char *const reason_names[TT_FLUSH_REASONS] = {
    "sync", "host_read", "outside_write", "loop_boundary", "size_cap", "device_change",
    "dtype_change", "capture", "collective"};

const char *tt_flush_reason_name(tt_flush_reason r) {
  return r >= 0 && r < TT_FLUSH_REASONS ? reason_names[r] : "?";
}

static int max_ops(void) {
  if (!R.max_ops) {
    R.max_ops = (int)tt_setting_int_or_default(TT_SETTING_FUSED_MAX_OPS); /* >= 1 */
    R.max_ops_chosen = tt_setting_is_set(TT_SETTING_FUSED_MAX_OPS);
  }
  return R.max_ops;
}

void tt_region_set_max_ops(int n) {
  pthread_mutex_lock(&R.lock);
  R.max_ops = n > 0 ? n : 2048;
  R.max_ops_chosen = n > 0;
  pthread_mutex_unlock(&R.lock);
}

/* On the CPU plugin XLA mallocs each run's scratch memory, and glibc serves
 * a block above 32 MiB (its largest mmap threshold) with freshly mapped pages
 * on every run: one page fault per 4 KiB touched, 8,500 per step for the
 * 33 MiB of a Llama training-step region (about a tenth of the step). When a
 * new region program needs more, later regions are cut shorter, in
 * proportion, so that each program's scratch stays under it. A size cap the
 * user chose is left alone. */
#define TT_CPU_SCRATCH_LIMIT (32LL << 20)
enum { TT_MIN_REGION_OPS = 64 };

static void fit_scratch(tt_executable *exe, int n_ops) {
  int64_t temp = tt_executable_temp_bytes(exe);
  if (R.max_ops_chosen || temp <= TT_CPU_SCRATCH_LIMIT ||
      strcmp(tt_runtime_platform_name(tt_core_runtime()), "cpu") != 0)
    return;
  int cap = (int)((double)n_ops * 0.9 * (double)TT_CPU_SCRATCH_LIMIT / (double)temp);
  if (cap < TT_MIN_REGION_OPS) cap = TT_MIN_REGION_OPS;
  if (cap >= max_ops()) return;
  R.max_ops = cap;
  R.stats.scratch_splits++;
  if (tt_log_compiles_enabled())
    fprintf(stderr, "torch_tpu: a fused region of %d ops needs %.1f MiB of scratch per run; "
            "later regions are cut at %d ops to stay under %lld MiB\n",
            n_ops, (double)temp / (1 << 20), cap, TT_CPU_SCRATCH_LIMIT >> 20);
}

tt_region_stats tt_region_get_stats(void) {
  pthread_mutex_lock(&R.lock);
  tt_region_stats s = R.stats;
  s.max_ops = max_ops();
  pthread_mutex_unlock(&R.lock);
  return s;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ recording */

static tt_arg *copy_args(const tt_arg *args, int nargs) {
  tt_arg *out = tt_arena_alloc(&R.arena, sizeof *out * (size_t)(nargs ? nargs : 1));
  memcpy(out, args, sizeof *out * (size_t)nargs);
  for (int i = 0; i < nargs; i++) {
    tt_arg *a = &out[i];
    size_t n = (size_t)a->count;
    switch (a->kind) {
      case TT_ARG_TENSOR:
        a->u.tensor = tt_arena_copy(&R.arena, a->u.tensor, sizeof *a->u.tensor);
        break;
      case TT_ARG_TENSOR_LIST: {
        tt_tensor_ref **refs = tt_arena_alloc(&R.arena, sizeof *refs * (n ? n : 1));
        for (size_t j = 0; j < n; j++)
          refs[j] = a->u.tensors[j] ? tt_arena_copy(&R.arena, a->u.tensors[j], sizeof **refs) : NULL;
        a->u.tensors = refs;
        break;
      }
      case TT_ARG_INT_LIST: a->u.ints = tt_arena_copy(&R.arena, a->u.ints, sizeof(int64_t) * n); break;
      case TT_ARG_DOUBLE_LIST:
        a->u.doubles = tt_arena_copy(&R.arena, a->u.doubles, sizeof(double) * n);
        break;
      case TT_ARG_BOOL_LIST: a->u.bools = tt_arena_copy(&R.arena, a->u.bools, sizeof(bool) * n); break;
      case TT_ARG_SCALAR_LIST:
        a->u.scalars = tt_arena_copy(&R.arena, a->u.scalars, sizeof(tt_scalar) * n);
        break;
      case TT_ARG_STRING: a->u.str = tt_arena_copy(&R.arena, a->u.str, strlen(a->u.str) + 1); break;
      default: break;
    }
  }
  return out;
}

/* The slot of storage s, or -1. */
static int slot_of(tt_storage *s) {
  int k = atomic_load(&s->region_slot);
  return k >= 0 && k < R.n_slots && R.slots[k].storage == s ? k : -1;
}

static tt_error *region_storage_sync(tt_storage *s, bool for_write);

static int new_slot(tt_storage *s, tt_dtype dt, int64_t numel, bool input) {
  /* before any storage joins a region, storages learn to sync with it */
  static bool hook_registered; /* guarded by R.lock */
  if (!hook_registered) tt_storage_set_sync_hook(region_storage_sync), hook_registered = true;
  GROW(R.slots, R.n_slots, R.cap_slots);
  int k = R.n_slots++;
  R.slots[k] = (region_slot){s, dt, numel, input, false};
  tt_storage_retain(s);
  atomic_store(&s->region_slot, k);
  return k;
}

static int64_t storage_numel(const tt_storage *s, tt_dtype dt) {
  return (int64_t)(s->nbytes / tt_dtype_size(dt));
}

/* Would recording this op read or write a region storage as another dtype? */
static bool dtype_conflict(const tt_program *plan, const tt_arg *args) {
  for (int q = 0; q < plan->n_params; q++) {
    const tt_param_plan *pp = &plan->params[q];
    if (pp->kind != TT_PARAM_STORAGE) continue;
    tt_storage *s = tt_plan_ref(args, pp->arg, pp->elem)->storage;
    int k = slot_of(s);
    if (k >= 0 && (R.slots[k].dtype != pp->dtype || R.slots[k].numel != storage_numel(s, pp->dtype)))
      return true;
  }
  for (int o = 0; o < plan->n_outs; o++) {
    const tt_output_plan *op = &plan->outs[o];
    if (op->kind != TT_OUT_WRITE) continue;
    int k = slot_of(tt_plan_ref(args, op->arg, op->elem)->storage);
    if (k >= 0 && R.slots[k].dtype != op->shape.dtype) return true;
  }
  return false;
}

/* Loop boundary: the new op (hash h) starts the region again, or the ops
 * since h's previous occurrence repeat the ops just before it. */
static bool loop_boundary(uint64_t h) {
  int n = R.n_ops;
  if (n < 2) return false;
  if (h == R.hashes[0]) return true;
  int p = -1;
  for (int i = n - 1; i >= n / 2; i--) /* a repeat needs p >= n - p */
    if (R.hashes[i] == h) {
      p = i;
      break;
    }
  if (p < 0) return false;
  int len = n - p;
  if (len < 2 || p < len) return false;
  for (int i = 0; i < len; i++)
    if (R.hashes[p + i] != R.hashes[p - len + i]) return false;
  return true;
}

static tt_error *flush_locked(tt_flush_reason reason);

static tt_error *check_devices(const tt_program *plan, const tt_arg *args, int device) {
  for (int q = 0; q < plan->n_params; q++) {
    const tt_param_plan *pp = &plan->params[q];
    if (pp->kind != TT_PARAM_STORAGE) continue;
    int other = tt_plan_ref(args, pp->arg, pp->elem)->storage->device;
    if (other != device)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                          "Expected all tensors to be on the same device, but found at least "
                          "two devices, tpu:%d and tpu:%d!", device, other);
  }
  return NULL;
}

tt_error *tt_region_record(const char *op_name, tt_lower_fn fn, tt_program *plan,
                           const void *op_key, size_t op_key_len, tt_arg *args, int nargs,
                           bool returns_written, int device, tt_op_result *res) {
  TT_TRY(check_devices(plan, args, device));
  uint64_t h = tt_hash_bytes(op_key, op_key_len);
  /* the user's line for the op's device checks: taken outside the lock (the
   * hook may wait for Python's GIL) */
  char *line = plan->n_checks ? tt_device_checks_source_line() : NULL;
  pthread_mutex_lock(&R.lock);
  tt_error *err = NULL;
  if (R.n_ops && R.device != device) err = flush_locked(TT_FLUSH_DEVICE);
  if (!err && R.n_ops && dtype_conflict(plan, args)) err = flush_locked(TT_FLUSH_DTYPE);
  if (!err && R.n_ops && !R.capture_depth) {
    if (loop_boundary(h)) err = flush_locked(TT_FLUSH_LOOP);
    else if (R.n_ops >= max_ops()) err = flush_locked(TT_FLUSH_SIZE_CAP);
  }
  if (err) {
    pthread_mutex_unlock(&R.lock);
    free(line);
    return err;
  }
  R.device = device;
  if (!R.key.data) tt_key_init(&R.key);
  if (R.n_ops == 0) TT_KEY_VAL(&R.key, (uint8_t)1); /* no per-op key starts with 1 */
  GROW(R.ops, R.n_ops, R.cap_ops);
  GROW(R.hashes, R.n_ops, R.cap_hashes);
  region_op *op = &R.ops[R.n_ops];
  op->op_name = tt_arena_copy(&R.arena, op_name, strlen(op_name) + 1);
  op->fn = fn;
  op->plan = plan;
  op->args = copy_args(args, nargs);
  op->nargs = nargs;
  op->returns_written = returns_written;
  op->value_base = R.n_values;
  op->out_slots = tt_arena_alloc(&R.arena, sizeof(int) * (size_t)(plan->n_outs ? plan->n_outs : 1));
  op->source = line ? tt_arena_copy(&R.arena, line, strlen(line) + 1) : NULL;
  free(line);

  tt_key_put(&R.key, op_key, op_key_len);
  for (int q = 0; q < plan->n_params; q++) {
    const tt_param_plan *pp = &plan->params[q];
    GROW(R.values, R.n_values, R.cap_values);
    param_value *pv = &R.values[R.n_values++];
    memset(pv, 0, sizeof *pv);
    pv->dtype = pp->dtype;
    if (pp->kind == TT_PARAM_STORAGE) {
      tt_storage *s = tt_plan_ref(args, pp->arg, pp->elem)->storage;
      int k = slot_of(s);

      if (k < 0) k = new_slot(s, pp->dtype, storage_numel(s, pp->dtype), true);
      TT_KEY_VAL(&R.key, (int32_t)k);
    } else if (pp->kind == TT_PARAM_SCALAR || pp->kind == TT_PARAM_OFFSET) {
      tt_param_scalar_bytes(args, pp, pv->bytes);
    } else {
      uint64_t state[2];
      tt_core_next_rng_state(device, state);
      memcpy(pv->bytes, state, sizeof state);
      pv->is_rng = true;
    }
  }

  int n_new = 0;
  for (int o = 0; o < plan->n_outs; o++) n_new += plan->outs[o].kind == TT_OUT_NEW;
  memset(res, 0, sizeof *res);
  res->news = n_new ? calloc((size_t)n_new, sizeof *res->news) : NULL;
  for (int o = 0; o < plan->n_outs; o++) {
    const tt_output_plan *out = &plan->outs[o];
    int k;
    if (out->kind == TT_OUT_NEW) {
      int64_t numel = tt_shape_numel(&out->shape);
      tt_storage *s = tt_storage_new(device, (size_t)numel * tt_dtype_size(out->shape.dtype));
      if (!s || !res->news) abort(); /* host OOM: no way to keep the region consistent */
      k = new_slot(s, out->shape.dtype, numel, false);
      tt_new_tensor *t = &res->news[res->n_new++];
      t->dtype = out->shape.dtype;
      t->ndim = out->shape.ndim;
      memcpy(t->sizes, out->shape.dims, sizeof t->sizes);
      t->storage = s; /* the user reference */
    } else {
      tt_storage *s = tt_plan_ref(args, out->arg, out->elem)->storage;
      k = slot_of(s);
      if (k < 0) k = new_slot(s, out->shape.dtype, storage_numel(s, out->shape.dtype), false);
      TT_KEY_VAL(&R.key, (int32_t)k);
    }
    R.slots[k].written = true;
    atomic_store(&R.slots[k].storage->region_dirty, true);
    op->out_slots[o] = k;
  }
  TT_KEY_VAL(&R.key, (uint8_t)0xB7); /* op separator */
  R.hashes[R.n_ops++] = h;
  R.stats.ops_recorded++;
  pthread_mutex_unlock(&R.lock);
  return NULL;
}

/* ------------------------------------------------------------ replay */

typedef struct {
  tt_builder *b;
  tt_val *slot_vals;
  region_param *params;
  int n_params, cap_params;
  int op_value_base;
  tt_check_vals *checks; /* device-side checks, in recording order */
  int n_checks, cap_checks;
} replay_state;

static tt_val add_region_param(replay_state *st, rparam_kind kind, int index, tt_shape shape) {
  GROW(st->params, st->n_params, st->cap_params);
  st->params[st->n_params++] = (region_param){kind, index, shape.dtype};
  return tt_b_param(st->b, shape);
}

static tt_val replay_storage_value(void *self, tt_storage *s, tt_dtype dt, int64_t numel) {
  replay_state *st = self;
  int k = slot_of(s);
  if (k < 0 || R.slots[k].dtype != dt || R.slots[k].numel != numel)
    return tt_b_fail(st->b, TT_ERR_RUNTIME, "internal: region storage without a matching slot");
  if (st->slot_vals[k] == TT_INVALID)
    st->slot_vals[k] = add_region_param(st, RPARAM_SLOT, k, tt_shape_make(dt, 1, &numel));
  return st->slot_vals[k];
}

static tt_val replay_param_value(void *self, int param_index, tt_shape shape) {
  replay_state *st = self;
  return add_region_param(st, RPARAM_VALUE, st->op_value_base + param_index, shape);
}

static void replay_check(void *self, const tt_check_vals *v) {
  replay_state *st = self;
  GROW(st->checks, st->n_checks, st->cap_checks);
  st->checks[st->n_checks++] = *v;
}

/* The checks of the recorded ops, in order (the region key fixes them). */
static int region_checks(void) {
  int n = 0;
  for (int i = 0; i < R.n_ops; i++) n += R.ops[i].plan->n_checks;
  return n;
}

static void region_program_free(void *ptr) {
  region_program *rp = ptr;
  if (!rp) return;
  tt_pool_entry_release(rp->slot);
  free(rp->text);
  free(rp->params);
  free(rp->out_slots);
  free(rp);
}

/* TORCH_TPU_DUMP_DIR: the region's module, options, and its ops (the key). */
static tt_flush_reason dump_reason; /* of the flush under way; guarded by R.lock */
static int dump_region(const char *text, int n_ops) {
  if (!tt_dump_enabled()) return -1;
  size_t cap = 256 + (size_t)n_ops * 600, len = 0;
  char *key = malloc(cap), name[32];
  if (!key) return -1;
  len += (size_t)snprintf(key, cap, "fused region of %d ops, keyed by each op's key in order:\n", n_ops);
  for (int i = 0; i < n_ops && len + 600 < cap; i++) {
    char sig[512];
    tt_describe_args(R.ops[i].args, R.ops[i].nargs, sig, sizeof sig);
    len += (size_t)snprintf(key + len, cap - len, "%d: %s (%s) key %016llx\n", i, R.ops[i].op_name,
                            sig, (unsigned long long)R.hashes[i]);
  }
  const char *why = tt_flush_reason_name(dump_reason); /* "capture": a torch.compile graph */
  char options[160];
  snprintf(name, sizeof name, "%dops_%s", n_ops, why);
  snprintf(options, sizeof options, "optimization_level: 2\nportable: true\nmode: fused\nflush reason: %s\n", why);
  int seq = tt_dump_compile("region", name, text, options, key);
  free(key);
  return seq;
}

static void explain_region(void) {
  const char **names = calloc((size_t)R.n_ops, sizeof *names);
  char **sigs = calloc((size_t)R.n_ops, sizeof *sigs);
  for (int i = 0; names && sigs && i < R.n_ops; i++) {
    names[i] = R.ops[i].op_name;
    sigs[i] = malloc(512);
    if (sigs[i]) tt_describe_args(R.ops[i].args, R.ops[i].nargs, sigs[i], 512);
    else sigs[i] = NULL;
  }
  bool ok = names && sigs;
  for (int i = 0; ok && i < R.n_ops; i++) ok = sigs[i] != NULL;
  if (ok) tt_explain_region_compile(R.n_ops, R.hashes, names, (const char *const *)sigs);
  for (int i = 0; sigs && i < R.n_ops; i++) free(sigs[i]);
  free(sigs);
  free(names);
}

static void trace_region(const char *track, double t0) {
  char name[48], detail[160];
  snprintf(name, sizeof name, "fused region, %d ops", R.n_ops);
  snprintf(detail, sizeof detail, "first %s, last %s; cache tier: compiled", R.ops[0].op_name,
           R.ops[R.n_ops - 1].op_name);
  tt_trace_end(track, name, t0, detail);
}

/* Compiles a region's text (guarded against the map-count limit). */
static tt_error *compile_region_text(const char *text, tt_executable **exe) {
  *exe = NULL;
  TT_TRY(tt_pool_before_compile());
  tt_compile_options opts = {2, true}; /* fused regions compile at full effort */
  double trace_t0 = tt_trace_now_us();
  tt_error *err = tt_compile(tt_core_runtime(), text, strlen(text), &opts, exe);
  if (tt_trace_on()) trace_region("compile", trace_t0);
  if (err) {
    if (tt_setting_bool_or_default(TT_SETTING_DEBUG_PROGRAMS)) fprintf(stderr, "%s\n", text);
    err = tt_error_wrap(tt_pool_explain_compile_error(err),
                        "compiling a fused region of %d ops (first %s): ", R.n_ops,
                        R.ops[0].op_name);
  }
  return err;
}

/* Lowers every recorded op into one program and compiles it. A region
 * input whose storage gets a new value (donate[slot]) donates its buffer
 * to that output, so parameter and optimizer-state updates do not need
 * twice their memory. */
static tt_error *build_region(const bool *is_output, const bool *donate, region_program **out,
                              tt_executable **exe_out) {
  double t0 = now_seconds();
  replay_state st = {0};
  st.b = tt_builder_new();
  st.slot_vals = malloc(sizeof(tt_val) * (size_t)(R.n_slots ? R.n_slots : 1));
  region_program *rp = calloc(1, sizeof *rp);
  tt_val *outs = malloc(sizeof(tt_val) * (size_t)(R.n_slots + 1)); /* + the error word */
  tt_error *err = NULL;
  char *text = NULL;
  tt_executable *exe = NULL;
  if (rp) rp->slot = tt_pool_entry_new();
  if (!st.b || !st.slot_vals || !rp || !rp->slot || !outs) {
    err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory building a fused region");
    goto done;
  }
  for (int k = 0; k < R.n_slots; k++) st.slot_vals[k] = TT_INVALID;
  tt_region_binding bind = {&st, replay_storage_value, replay_param_value, replay_check};
  for (int i = 0; i < R.n_ops && !err; i++) {
    region_op *op = &R.ops[i];
    st.op_value_base = op->value_base;
    tt_val *vals = NULL;
    int n_vals = 0;
    err = tt_program_lower_into(st.b, &bind, op->op_name, op->fn, op->args, op->nargs,
                                op->returns_written, &vals, &n_vals);
    if (!err && n_vals != op->plan->n_outs)
      err = tt_error_new(TT_ERR_RUNTIME, "internal: %s lowered to %d outputs in a region, %d alone",
                         op->op_name, n_vals, op->plan->n_outs);
    for (int o = 0; !err && o < n_vals; o++) st.slot_vals[op->out_slots[o]] = vals[o];
    free(vals);
  }
  if (err) goto done;
  if (st.n_checks != region_checks()) {
    err = tt_error_new(TT_ERR_RUNTIME, "internal: a fused region lowered %d device checks, its ops %d",
                       st.n_checks, region_checks());
    goto done;
  }
  rp->out_slots = malloc(sizeof(int) * (size_t)(R.n_slots ? R.n_slots : 1));
  if (!rp->out_slots) {
    err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory building a fused region");
    goto done;
  }
  for (int k = 0; k < R.n_slots; k++)
    if (is_output[k]) {
      outs[rp->n_outs] = st.slot_vals[k];
      rp->out_slots[rp->n_outs++] = k;
    }
  for (int i = 0; i < st.n_params; i++) {
    const region_param *pp = &st.params[i];
    if (pp->kind != RPARAM_SLOT || !donate[pp->index]) continue;
    for (int o = 0; o < rp->n_outs; o++)
      if (rp->out_slots[o] == pp->index) tt_b_alias_param(st.b, i, o);
  }
  rp->n_checks = st.n_checks;
  if (st.n_checks) outs[rp->n_outs] = tt_lc_check_word(st.b, st.checks, st.n_checks);
  err = tt_b_finish(st.b, outs, rp->n_outs + (st.n_checks > 0), &text);
  if (err) goto done;
  int dump_seq = dump_region(text, R.n_ops);
  err = compile_region_text(text, &exe);
  if (err) goto done;
  tt_dump_optimized(dump_seq, exe);
  rp->text = text;
  text = NULL;
  rp->params = st.params;
  rp->n_params = st.n_params;
  st.params = NULL;
  rp->compile_seconds = now_seconds() - t0;
  if (tt_explain_enabled()) explain_region();
  if (tt_log_compiles_enabled())
    fprintf(stderr, "torch_tpu: compiled fused region of %d ops (%s ... %s), %d inputs, %d outputs in %.1f ms\n",
            R.n_ops, R.ops[0].op_name, R.ops[R.n_ops - 1].op_name, rp->n_params, rp->n_outs,
            rp->compile_seconds * 1e3);
done:
  tt_builder_free(st.b);
  free(st.slot_vals);
  free(st.params);
  free(st.checks);
  free(outs);
  free(text);
  if (err) {
    region_program_free(rp);
    rp = NULL;
  }
  *out = rp;
  *exe_out = exe;
  return err;
}

/* ------------------------------------------------------------ persistence */

/* A region program's plan as bytes beside its executable on disk: counts,
 * then the param and output arrays (the disk partition is per build of the
 * core, so the struct layout is the same when it is read back). */
static void store_region(const region_program *rp, tt_executable *exe) {
  size_t len = 2 * sizeof(int32_t) + sizeof(region_param) * (size_t)rp->n_params +
               sizeof(int) * (size_t)rp->n_outs;
  unsigned char *plan = malloc(len);
  if (!plan) return;
  int32_t counts[2] = {rp->n_params, rp->n_outs};
  memcpy(plan, counts, sizeof counts);
  memcpy(plan + sizeof counts, rp->params, sizeof(region_param) * (size_t)rp->n_params);
  memcpy(plan + sizeof counts + sizeof(region_param) * (size_t)rp->n_params, rp->out_slots,
         sizeof(int) * (size_t)rp->n_outs);
  tt_persistent_store(TT_PERSIST_REGION, R.key.data, R.key.len, exe, plan, len);
  free(plan);
}

/* The region program stored under the current key, validated against the
 * region (indices in range), or NULL. */
static region_program *load_region(const bool *is_output, tt_executable **exe_out) {
  void *plan = NULL;
  size_t len = 0;
  *exe_out = NULL;
  tt_error *guard = tt_pool_before_compile();
  if (guard) { /* the compile that follows reports it */
    tt_error_free(guard);
    return NULL;
  }
  tt_executable *exe = tt_persistent_load_with(TT_PERSIST_REGION, R.key.data, R.key.len, &plan, &len);
  if (!exe) return NULL;
  region_program *rp = calloc(1, sizeof *rp);
  int32_t counts[2] = {-1, -1};
  if (rp) rp->slot = tt_pool_entry_new();
  bool ok = rp && rp->slot && plan && len >= sizeof counts;
  if (ok) memcpy(counts, plan, sizeof counts);
  ok = ok && counts[0] >= 0 && counts[1] >= 0 &&
       len == sizeof counts + sizeof(region_param) * (size_t)counts[0] + sizeof(int) * (size_t)counts[1];
  if (ok) {
    rp->n_params = counts[0];
    rp->n_outs = counts[1];
    rp->params = malloc(sizeof(region_param) * (size_t)(counts[0] ? counts[0] : 1));
    rp->out_slots = malloc(sizeof(int) * (size_t)(counts[1] ? counts[1] : 1));
    ok = rp->params && rp->out_slots;
  }
  if (ok) {
    unsigned char *p = (unsigned char *)plan + sizeof counts;
    memcpy(rp->params, p, sizeof(region_param) * (size_t)rp->n_params);
    memcpy(rp->out_slots, p + sizeof(region_param) * (size_t)rp->n_params,
           sizeof(int) * (size_t)rp->n_outs);
    for (int i = 0; ok && i < rp->n_params; i++) {
      const region_param *pp = &rp->params[i];
      ok = pp->kind == RPARAM_SLOT ? pp->index >= 0 && pp->index < R.n_slots
                                   : pp->kind == RPARAM_VALUE && pp->index >= 0 && pp->index < R.n_values;
    }
    int n_expected = 0;
    for (int k = 0; k < R.n_slots; k++) n_expected += is_output[k];
    ok = ok && n_expected == rp->n_outs;
    rp->n_checks = region_checks();
    ok = ok && tt_executable_num_outputs(exe) == rp->n_outs + (rp->n_checks > 0);
    for (int o = 0; ok && o < rp->n_outs; o++)
      ok = rp->out_slots[o] >= 0 && rp->out_slots[o] < R.n_slots && is_output[rp->out_slots[o]];
  }
  free(plan);
  if (!ok) {
    fprintf(stderr, "torch_tpu: ignoring a stored fused-region program whose plan does not match\n");
    region_program_free(rp);
    tt_executable_release(exe);
    return NULL;
  }
  *exe_out = exe;
  return rp;
}

/* ------------------------------------------------------------ flush */

static void reset_region(void) {
  for (int k = 0; k < R.n_slots; k++) {
    tt_storage *s = R.slots[k].storage;
    if (atomic_load(&s->region_slot) == k) {
      atomic_store(&s->region_slot, -1);
      atomic_store(&s->region_dirty, false);
    }
  }
  for (int k = 0; k < R.n_slots; k++) tt_storage_release(R.slots[k].storage);
  R.n_ops = R.n_slots = R.n_values = 0;
  R.key.len = 0;
  tt_arena_reset(&R.arena);
}

/* What each check of the recorded ops reports (borrowing the ops' names,
 * plans and lines): malloc'd, n entries. */
static tt_check_site *region_check_sites(int n) {
  tt_check_site *sites = calloc((size_t)(n ? n : 1), sizeof *sites);
  int k = 0;
  for (int i = 0; sites && i < R.n_ops; i++)
    for (int j = 0; j < R.ops[i].plan->n_checks && k < n; j++)
      sites[k++] = (tt_check_site){R.ops[i].op_name, &R.ops[i].plan->checks[j], R.ops[i].source};
  return sites;
}

static tt_error *launch_region(region_program *rp, tt_executable *exe, const bool *donate) {
  tt_buffer **in = calloc((size_t)(rp->n_params ? rp->n_params : 1), sizeof *in);
  bool *owned = calloc((size_t)(rp->n_params ? rp->n_params : 1), sizeof *owned);
  tt_buffer **outs = calloc((size_t)rp->n_outs + 1, sizeof *outs); /* + the error word */
  tt_error *err = NULL;
  if (!in || !owned || !outs) err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  for (int i = 0; !err && i < rp->n_params; i++) {
    const region_param *pp = &rp->params[i];
    if (pp->kind == RPARAM_SLOT) {
      err = tt_storage_ensure(R.slots[pp->index].storage, pp->dtype, &in[i]);
      owned[i] = !err;
    } else {
      const param_value *pv = &R.values[pp->index];
      uint64_t state[2];
      memcpy(state, pv->bytes, sizeof state);
      owned[i] = true;
      err = pv->is_rng ? tt_core_upload_rng_state(R.device, state, &in[i])
                       : tt_core_upload_scalar(R.device, pv->dtype, pv->bytes, &in[i]);
    }
  }
  if (!err) err = tt_execute(exe, R.device, in, rp->n_params, outs, rp->n_outs + (rp->n_checks > 0));
  if (!err && rp->n_checks) {
    tt_check_site *sites = region_check_sites(rp->n_checks);
    if (sites) tt_device_checks_watch(outs[rp->n_outs], sites, rp->n_checks);
    else tt_buffer_release(outs[rp->n_outs]);
    free(sites);
  }
  if (!err) {
    for (int i = 0; i < rp->n_params; i++)
      if (rp->params[i].kind == RPARAM_SLOT && donate[rp->params[i].index] &&
          tt_buffer_note_donation(in[i]))
        R.stats.buffers_donated++;
    for (int o = 0; o < rp->n_outs; o++) tt_storage_set_buffer(R.slots[rp->out_slots[o]].storage, outs[o]);
    R.stats.programs_run++;
    tt_note_program_launch(rp);
  }
  for (int i = 0; in && owned && i < rp->n_params; i++)
    if (owned[i]) tt_buffer_release(in[i]);
  free(in);
  free(owned);
  free(outs);
  return err;
}

/* Describes the launch just made for replay_req (before the region resets). */
static void make_replay(const region_program *rp, const bool *donate) {
  struct replay_request *req = R.replay_req;
  tt_launch_param *params = calloc((size_t)(rp->n_params ? rp->n_params : 1), sizeof *params);
  tt_storage **results = calloc((size_t)(rp->n_outs ? rp->n_outs : 1), sizeof *results);
  if (!params || !results) {
    req->why_not = "out of host memory";
  } else {
    for (int i = 0; i < rp->n_params; i++) {
      const region_param *pp = &rp->params[i];
      tt_launch_param *lp = &params[i];
      lp->dtype = pp->dtype;
      if (pp->kind == RPARAM_SLOT) {
        lp->kind = TT_LAUNCH_STORAGE;
        lp->storage = R.slots[pp->index].storage;
        lp->numel = R.slots[pp->index].numel;
        lp->donated = donate[pp->index];
      } else {
        const param_value *pv = &R.values[pp->index];
        lp->kind = pv->is_rng ? TT_LAUNCH_RNG : TT_LAUNCH_VALUE;
        memcpy(lp->bytes, pv->bytes, sizeof lp->bytes);
      }
    }
    for (int o = 0; o < rp->n_outs; o++) results[o] = R.slots[rp->out_slots[o]].storage;
    tt_check_site *sites = rp->n_checks ? region_check_sites(rp->n_checks) : NULL;
    tt_launch_record rec = {rp->slot, rp, R.device, params, rp->n_params, results, rp->n_outs,
                            sites, sites ? rp->n_checks : 0, req->want_text ? rp->text : NULL};
    req->replay = tt_replay_new(&rec, req->args, req->n_args, req->outs, req->n_outs, &req->why_not);
    free(sites);
  }
  free(params);
  free(results);
}

static uint64_t total_flushes(void) {
  uint64_t n = 0;
  for (int r = 0; r < TT_FLUSH_REASONS; r++) n += R.stats.flushes[r];
  return n;
}

/* The executable of a cached region program, as the caller's reference:
 * the loaded one; else (the pool unloaded it) the one stored on disk, or
 * compiled again from its text, or, for a program that came from disk
 * without text, lowered again from the recorded ops (the same key gives
 * the same plan). */
static tt_error *reload_region(region_program *rp, const bool *is_output, const bool *donate,
                               tt_executable **out) {
  if ((*out = tt_pool_acquire(rp->slot))) return NULL;
  TT_TRY(tt_pool_before_compile());
  tt_executable *exe = tt_persistent_load(TT_PERSIST_REGION, R.key.data, R.key.len);
  tt_error *err = NULL;
  if (exe) {
    R.stats.disk_loads++;
  } else {
    double t0 = now_seconds();
    if (rp->text) {
      err = compile_region_text(rp->text, &exe);
    } else {
      region_program *fresh = NULL;
      err = build_region(is_output, donate, &fresh, &exe);
      if (!err) {
        rp->text = fresh->text;
        fresh->text = NULL;
      }
      region_program_free(fresh);
    }
    if (err) return err;
    R.stats.compiles++;
    R.stats.compile_seconds += now_seconds() - t0;
    tt_note_compile(TT_MODE_FUSED);
  }
  *out = tt_pool_install(rp->slot, exe);
  return NULL;
}

static tt_error *flush_locked_untraced(tt_flush_reason reason);

/* The profiler's flush event: the region, its ops and the flush reason. */
static tt_error *flush_locked(tt_flush_reason reason) {
  if (!tt_trace_on() || R.n_ops == 0) return flush_locked_untraced(reason);
  double t0 = tt_trace_now_us();
  char detail[160];
  snprintf(detail, sizeof detail, "reason %s, %d ops (%s ... %s)", tt_flush_reason_name(reason),
           R.n_ops, R.ops[0].op_name, R.ops[R.n_ops - 1].op_name);
  tt_error *err = flush_locked_untraced(reason);
  tt_trace_end("region flush", tt_flush_reason_name(reason), t0, detail);
  return err;
}

/* Set while this thread flushes (holding R.lock): its storage reads and
 * writes during the launch must not come back into the region. */
static _Thread_local bool flushing;

static tt_error *flush_locked_launch(tt_flush_reason reason);

static tt_error *flush_locked_untraced(tt_flush_reason reason) {
  if (R.n_ops == 0) return NULL;
  flushing = true;
  tt_error *err = flush_locked_launch(reason);
  flushing = false;
  return err;
}

static tt_error *flush_locked_launch(tt_flush_reason reason) {
  R.stats.flushes[reason]++;
  dump_reason = reason;
  bool *is_output = calloc((size_t)(R.n_slots ? R.n_slots : 1), sizeof *is_output);
  bool *donate = calloc((size_t)(R.n_slots ? R.n_slots : 1), sizeof *donate);
  if (!is_output || !donate) {
    free(is_output);
    free(donate);
    reset_region();
    return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory flushing a fused region");
  }
  /* Liveness is part of the key: the program only outputs values that a
   * live tensor can still read. Snapshot it once. */
  TT_KEY_VAL(&R.key, (uint8_t)0xF1);
  for (int k = 0; k < R.n_slots; k++) {
    bool alive = atomic_load(&R.slots[k].storage->user_alive);
    is_output[k] = alive && R.slots[k].written;
    if (!alive && R.slots[k].written) R.stats.values_elided++;
    /* an input replaced by a new value donates its buffer when nothing
     * else holds it (a view's storage is the same handle: one reference) */
    tt_buffer *buf = R.slots[k].storage->buffer;
    donate[k] = is_output[k] && R.slots[k].input && buf && tt_buffer_is_exclusive(buf) &&
                tt_buffer_dtype(buf) == R.slots[k].dtype && tt_buffer_numel(buf) == R.slots[k].numel;
    TT_KEY_VAL(&R.key, (uint8_t)(is_output[k] | donate[k] << 1));
  }
  region_program *rp = tt_cache_lookup(R.key.data, R.key.len);
  tt_executable *exe = NULL; /* the launch's reference */
  tt_error *err = NULL;
  if (rp) {
    R.stats.cache_hits++;
    err = reload_region(rp, is_output, donate, &exe);
  } else if (!(R.replay_req && R.replay_req->want_text) && (rp = load_region(is_output, &exe))) {
    R.stats.disk_loads++;
    fit_scratch(exe, R.n_ops);
    exe = tt_pool_install(rp->slot, exe);
    rp = tt_cache_insert(R.key.data, R.key.len, rp, region_program_free, 0);
  } else {
    err = build_region(is_output, donate, &rp, &exe);
    if (!err) {
      R.stats.compiles++;
      R.stats.compile_seconds += rp->compile_seconds;
      tt_note_compile(TT_MODE_FUSED);
      store_region(rp, exe);
      fit_scratch(exe, R.n_ops);
      exe = tt_pool_install(rp->slot, exe);
      rp = tt_cache_insert(R.key.data, R.key.len, rp, region_program_free, rp->compile_seconds);
    }
  }
  if (!err && R.replay_req && R.replay_req->want_text && !rp->text) { /* export: lower it again */
    region_program *fresh = NULL;
    tt_executable *unused = NULL;
    err = build_region(is_output, donate, &fresh, &unused);
    if (!err) {
      rp->text = fresh->text;
      fresh->text = NULL;
    }
    region_program_free(fresh);
    tt_executable_release(unused);
  }
  free(is_output);
  /* The storages stay attached until the launch has replaced their buffers
   * (reset_region detaches them): a thread reading one meanwhile finds it in
   * the region and waits on R.lock for this flush, where a detached storage
   * would hand it the old buffer, being donated, or none (zeros). This
   * thread's own reads during the launch skip the sync hook (flushing). */
  if (!err) err = launch_region(rp, exe, donate);
  tt_executable_release(exe); /* the runtime keeps it until the launch completes */
  if (!err && R.replay_req) make_replay(rp, donate);
  free(donate);
  reset_region();
  if (!err && tt_get_synchronous()) err = tt_runtime_synchronize(tt_core_runtime());
  return err;
}

tt_error *tt_region_flush(tt_flush_reason reason) {
  pthread_mutex_lock(&R.lock);
  tt_error *err = flush_locked(reason);
  pthread_mutex_unlock(&R.lock);
  return err;
}

/* The storage floor's sync hook (tt_storage_set_sync_hook): storage s, in
 * the open region, is about to be read (for_write false: it holds a pending
 * value) or replaced from outside. */
static tt_error *region_storage_sync(tt_storage *s, bool for_write) {
  if (flushing) return NULL; /* the launch of this thread's flush */
  pthread_mutex_lock(&R.lock);
  tt_error *err = NULL;
  if (slot_of(s) >= 0) err = flush_locked(for_write ? TT_FLUSH_WRITE : TT_FLUSH_HOST_READ);
  pthread_mutex_unlock(&R.lock);
  return err;
}

tt_error *tt_region_flush_for_collective(tt_storage *s, bool *flushed) {
  if (flushed) *flushed = false;
  if (!s || flushing) return NULL;
  pthread_mutex_lock(&R.lock);
  tt_error *err = NULL;
  int k = slot_of(s);
  if (k >= 0 && R.slots[k].written) { /* a pending value */
    err = flush_locked(TT_FLUSH_COLLECTIVE);
    if (flushed) *flushed = true;
  }
  pthread_mutex_unlock(&R.lock);
  return err;
}

tt_error *tt_region_capture_begin(void) {
  pthread_mutex_lock(&R.lock);
  tt_error *err = R.capture_depth ? NULL : flush_locked(TT_FLUSH_CAPTURE);
  if (!err && R.capture_depth++ == 0) R.flushes_at_capture = total_flushes();
  pthread_mutex_unlock(&R.lock);
  return err;
}

tt_error *tt_region_capture_end(void) {
  pthread_mutex_lock(&R.lock);
  tt_error *err = NULL;
  if (R.capture_depth > 0 && --R.capture_depth == 0) err = flush_locked(TT_FLUSH_CAPTURE);
  pthread_mutex_unlock(&R.lock);
  return err;
}

static tt_error *capture_end_replay(const tt_tensor_ref *args, int n_args, const tt_tensor_ref *outs,
                                    int n_outs, tt_replay **replay, const char **why_not,
                                    bool want_text) {
  struct replay_request req = {args, outs, n_args, n_outs, NULL, NULL, want_text};
  pthread_mutex_lock(&R.lock);
  tt_error *err = NULL;
  if (R.capture_depth != 1) req.why_not = "the capture is nested";
  else if (total_flushes() != R.flushes_at_capture) req.why_not = "the graph ran as more than one program";
  else if (R.n_ops == 0) req.why_not = "the graph recorded no ops";
  else R.replay_req = &req;
  if (R.capture_depth > 0 && --R.capture_depth == 0) err = flush_locked(TT_FLUSH_CAPTURE);
  R.replay_req = NULL;
  pthread_mutex_unlock(&R.lock);
  if (err) {
    tt_replay_free(req.replay);
    req.replay = NULL;
  }
  *replay = req.replay;
  *why_not = req.why_not;
  return err;
}

tt_error *tt_region_capture_end_replay(const tt_tensor_ref *args, int n_args,
                                       const tt_tensor_ref *outs, int n_outs, tt_replay **replay,
                                       const char **why_not) {
  return capture_end_replay(args, n_args, outs, n_outs, replay, why_not, false);
}

tt_error *tt_region_capture_end_export(const tt_tensor_ref *args, int n_args,
                                       const tt_tensor_ref *outs, int n_outs, tt_replay **replay,
                                       const char **why_not) {
  return capture_end_replay(args, n_args, outs, n_outs, replay, why_not, true);
}
