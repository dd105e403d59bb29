/* Replaying a captured graph's program (see replay.h). */
#include "graph/replay.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "graph/core.h"
#include "graph/modes.h"
#include "graph/program.h"
#include "graph/step_stats.h"

typedef struct {
  tt_launch_param_kind kind;
  int arg; /* STORAGE: the graph argument whose storage feeds it */
  tt_dtype dtype;
  int64_t numel;
  bool donated;
  unsigned char bytes[16];
} replay_param;

typedef struct {
  tt_replay_out_kind kind; /* NEW or ARG */
  int index;
} replay_target;

typedef struct {
  tt_replay_out_kind kind;
  int index;
  tt_tensor_ref view;
} replay_output;

struct tt_replay {
  /* the region program's executable: the pool may unload it; a replay
   * then refuses (the ordinary path loads or compiles it again) */
  tt_pool_entry *slot;
  const void *program;
  int device;
  replay_param *params;
  int n_params;
  replay_target *results; /* where each program result goes */
  int n_results;
  size_t *new_nbytes; /* per new storage */
  int n_new;
  tt_tensor_ref *args; /* the recorded layout (storage fields unused) */
  size_t *arg_nbytes;
  int *alias; /* first argument with the same storage */
  bool *arg_written;
  int n_args;
  replay_output *outs;
  int n_outs;
  tt_check_site *checks; /* owned copy; the error word follows the results */
  int n_checks;
  char *text; /* owned copy of the record's text, or NULL */
};

static _Atomic uint64_t n_replays, n_refused;

tt_replay_stats tt_replay_get_stats(void) {
  return (tt_replay_stats){atomic_load(&n_replays), atomic_load(&n_refused)};
}

static int find_arg(const tt_tensor_ref *args, int n_args, const tt_storage *s) {
  for (int i = 0; i < n_args; i++)
    if (args[i].ndim != TT_REF_NONE && args[i].storage == s) return i;
  return -1;
}

static int find_storage(tt_storage *const *list, int n, const tt_storage *s) {
  for (int i = 0; i < n; i++)
    if (list[i] == s) return i;
  return -1;
}

void tt_replay_free(tt_replay *r) {
  if (!r) return;
  tt_pool_entry_release(r->slot);
  free(r->params);
  free(r->results);
  tt_check_sites_free(r->checks, r->n_checks);
  free(r->text);
  free(r->new_nbytes);
  free(r->args);
  free(r->arg_nbytes);
  free(r->alias);
  free(r->arg_written);
  free(r->outs);
  free(r);
}

#define NZ(n) ((size_t)((n) > 0 ? (n) : 1))

/* Maps the program's results to argument storages or new storages (the
 * distinct storages behind the graph's outputs). */
static const char *map_results(tt_replay *r, const tt_launch_record *rec, const tt_tensor_ref *args,
                               int n_args, const tt_tensor_ref *outs, int n_outs,
                               tt_storage **new_list) {
  for (int o = 0; o < rec->n_results; o++) {
    tt_storage *s = rec->results[o];
    int a = find_arg(args, n_args, s);
    if (a >= 0) {
      r->results[o] = (replay_target){TT_REPLAY_OUT_ARG, a};
      r->arg_written[a] = true;
      continue;
    }
    if (find_arg(outs, n_outs, s) < 0) return "a program result is neither a graph output nor an argument";
    int j = find_storage(new_list, r->n_new, s);
    if (j < 0) {
      j = r->n_new++;
      new_list[j] = s;
      r->new_nbytes[j] = tt_storage_nbytes(s);
    }
    r->results[o] = (replay_target){TT_REPLAY_OUT_NEW, j};
  }
  return NULL;
}

tt_replay *tt_replay_new(const tt_launch_record *rec, const tt_tensor_ref *args, int n_args,
                         const tt_tensor_ref *outs, int n_outs, const char **why_not) {
  *why_not = NULL;
  tt_replay *r = calloc(1, sizeof *r);
  tt_storage **new_list = calloc(NZ(rec->n_results), sizeof *new_list);
  if (r) {
    r->params = calloc(NZ(rec->n_params), sizeof *r->params);
    r->results = calloc(NZ(rec->n_results), sizeof *r->results);
    r->new_nbytes = calloc(NZ(rec->n_results), sizeof *r->new_nbytes);
    r->args = calloc(NZ(n_args), sizeof *r->args);
    r->arg_nbytes = calloc(NZ(n_args), sizeof *r->arg_nbytes);
    r->alias = calloc(NZ(n_args), sizeof *r->alias);
    r->arg_written = calloc(NZ(n_args), sizeof *r->arg_written);
    r->outs = calloc(NZ(n_outs), sizeof *r->outs);
  }
  if (!r || !new_list || !r->params || !r->results || !r->new_nbytes || !r->args || !r->arg_nbytes ||
      !r->alias || !r->arg_written || !r->outs) {
    *why_not = "out of host memory";
    goto fail;
  }
  r->device = rec->device;
  r->program = rec->program;
  r->n_args = n_args;
  r->n_params = rec->n_params;
  r->n_results = rec->n_results;
  r->n_outs = n_outs;
  if (rec->n_checks) {
    r->checks = tt_check_sites_copy(rec->checks, rec->n_checks);
    if (!r->checks) {
      *why_not = "out of host memory";
      goto fail;
    }
    r->n_checks = rec->n_checks;
  }
  if (rec->text && !(r->text = strdup(rec->text))) {
    *why_not = "out of host memory";
    goto fail;
  }
  for (int i = 0; i < n_args; i++) {
    r->args[i] = args[i];
    r->args[i].storage = NULL;
    if (args[i].ndim == TT_REF_NONE) continue;
    if (!args[i].storage) {
      *why_not = "an argument is a CPU scalar tensor (its value is read when ops are recorded)";
      goto fail;
    }
    r->arg_nbytes[i] = tt_storage_nbytes(args[i].storage);
    r->alias[i] = find_arg(args, i + 1, args[i].storage);
  }
  for (int p = 0; p < rec->n_params; p++) {
    const tt_launch_param *lp = &rec->params[p];
    replay_param *rp = &r->params[p];
    rp->kind = lp->kind;
    rp->dtype = lp->dtype;
    rp->numel = lp->numel;
    rp->donated = lp->donated;
    memcpy(rp->bytes, lp->bytes, sizeof rp->bytes);
    if (lp->kind != TT_LAUNCH_STORAGE) continue;
    rp->arg = find_arg(args, n_args, lp->storage);
    if (rp->arg < 0) {
      *why_not = "the program reads a tensor that is not a graph argument";
      goto fail;
    }
    if (lp->storage->device != rec->device) {
      *why_not = "an argument is on another device";
      goto fail;
    }
  }
  *why_not = map_results(r, rec, args, n_args, outs, n_outs, new_list);
  if (*why_not) goto fail;
  for (int k = 0; k < n_outs; k++) {
    replay_output *out = &r->outs[k];
    out->view = outs[k];
    out->view.storage = NULL;
    if (outs[k].ndim == TT_REF_NONE) {
      out->kind = TT_REPLAY_OUT_NONE;
    } else if ((out->index = find_arg(args, n_args, outs[k].storage)) >= 0) {
      out->kind = TT_REPLAY_OUT_ARG;
    } else if ((out->index = find_storage(new_list, r->n_new, outs[k].storage)) >= 0) {
      out->kind = TT_REPLAY_OUT_NEW;
    } else {
      *why_not = "a graph output is not written by the program";
      goto fail;
    }
  }
  r->slot = tt_pool_entry_retain(rec->slot);
  free(new_list);
  return r;
fail:
  free(new_list);
  tt_replay_free(r);
  return NULL;
}

static bool same_layout(const tt_tensor_ref *want, const tt_tensor_ref *got) {
  if (want->ndim != got->ndim) return false;
  if (want->ndim == TT_REF_NONE) return true;
  size_t n = sizeof(int64_t) * (size_t)want->ndim;
  return got->storage && want->dtype == got->dtype && want->offset == got->offset &&
         memcmp(want->sizes, got->sizes, n) == 0 && memcmp(want->strides, got->strides, n) == 0;
}

static bool args_match(const tt_replay *r, const tt_tensor_ref *args, int n_args) {
  if (n_args != r->n_args) return false;
  for (int i = 0; i < n_args; i++) {
    if (!same_layout(&r->args[i], &args[i])) return false;
    if (args[i].ndim == TT_REF_NONE) continue;
    if (tt_storage_nbytes(args[i].storage) != r->arg_nbytes[i]) return false;
    int a = r->alias[i];
    if (a != i) {
      if (args[a].storage != args[i].storage) return false;
      continue;
    }
    for (int j = 0; j < i; j++) /* storages shared now were distinct then */
      if (r->alias[j] == j && args[j].ndim != TT_REF_NONE && args[j].storage == args[i].storage)
        return false;
  }
  for (int p = 0; p < r->n_params; p++)
    if (r->params[p].kind == TT_LAUNCH_STORAGE && args[r->params[p].arg].storage->device != r->device)
      return false;
  return true;
}

/* Input buffers for the launch, each a reference of ours (owned[p]). */
static tt_error *gather_inputs(tt_replay *r, const tt_tensor_ref *args, tt_buffer **in, bool *owned,
                               bool *matched) {
  for (int p = 0; p < r->n_params; p++) {
    replay_param *rp = &r->params[p];
    if (rp->kind == TT_LAUNCH_STORAGE) {
      TT_TRY(tt_storage_ensure(args[rp->arg].storage, rp->dtype, &in[p]));
      owned[p] = true; /* our reference; the storage holds the other */
      if (rp->donated && !(tt_buffer_refs(in[p]) == 2 && tt_buffer_dtype(in[p]) == rp->dtype &&
                           tt_buffer_numel(in[p]) == rp->numel)) {
        *matched = false; /* the program would consume a buffer someone else holds */
        return NULL;
      }
      continue;
    }
    owned[p] = true;
    TT_TRY(rp->kind == TT_LAUNCH_RNG ? tt_core_upload_rng_state(r->device, NULL, &in[p])
                                     : tt_core_upload_scalar(r->device, rp->dtype, rp->bytes, &in[p]));
  }
  return NULL;
}

static tt_error *launch(tt_replay *r, tt_executable *exe, const tt_tensor_ref *args,
                        bool *matched, tt_storage **new_storages) {
  tt_buffer **in = calloc(NZ(r->n_params), sizeof *in);
  bool *owned = calloc(NZ(r->n_params), sizeof *owned);
  tt_buffer **results = calloc((size_t)r->n_results + 1, sizeof *results); /* + error word */
  tt_error *err = NULL;
  if (!in || !owned || !results) err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  if (!err) err = gather_inputs(r, args, in, owned, matched);
  for (int j = 0; !err && *matched && j < r->n_new; j++) {
    new_storages[j] = tt_storage_new(r->device, r->new_nbytes[j]);
    if (!new_storages[j]) err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  if (!err && *matched)
    err = tt_execute(exe, r->device, in, r->n_params, results, r->n_results + (r->n_checks > 0));
  if (!err && *matched && r->n_checks) tt_device_checks_watch(results[r->n_results], r->checks, r->n_checks);
  if (!err && *matched) {
    for (int p = 0; p < r->n_params; p++)
      if (r->params[p].donated) tt_buffer_note_donation(in[p]);
    for (int o = 0; o < r->n_results; o++) {
      replay_target t = r->results[o];
      tt_storage *s = t.kind == TT_REPLAY_OUT_ARG ? args[t.index].storage : new_storages[t.index];
      tt_storage_set_buffer(s, results[o]);
    }
    atomic_fetch_add(&n_replays, 1);
    tt_note_program_launch(r->program);
  }
  if (err || !*matched)
    for (int j = 0; j < r->n_new; j++) {
      tt_storage_drop(new_storages[j]);
      new_storages[j] = NULL;
    }
  for (int p = 0; in && owned && p < r->n_params; p++)
    if (owned[p]) tt_buffer_release(in[p]);
  free(in);
  free(owned);
  free(results);
  return err;
}

tt_error *tt_replay_run(tt_replay *r, const tt_tensor_ref *args, int n_args, bool *matched,
                        tt_storage **new_storages) {
  for (int j = 0; j < r->n_new; j++) new_storages[j] = NULL;
  *matched = args_match(r, args, n_args);
  /* the caller's reference until the launch is enqueued */
  tt_executable *exe = *matched ? tt_pool_acquire(r->slot) : NULL;
  if (!exe) { /* other arguments, or the program was unloaded */
    *matched = false;
    atomic_fetch_add(&n_refused, 1);
    return NULL;
  }
  /* Values of the arguments still pending in the fused region are computed
   * first; arguments the program writes leave the region. */
  tt_error *err = NULL;
  for (int i = 0; i < n_args && !err; i++)
    if (args[i].ndim != TT_REF_NONE && r->alias[i] == i)
      err = tt_storage_sync(args[i].storage, r->arg_written[i]);
  if (!err) err = launch(r, exe, args, matched, new_storages);
  tt_executable_release(exe);
  if (!*matched) atomic_fetch_add(&n_refused, 1);
  if (!err && *matched && tt_get_synchronous()) err = tt_runtime_synchronize(tt_core_runtime());
  return err;
}

int tt_replay_num_new(const tt_replay *r) { return r->n_new; }
int tt_replay_device(const tt_replay *r) { return r->device; }
int tt_replay_num_outputs(const tt_replay *r) { return r->n_outs; }

tt_replay_out_kind tt_replay_output(const tt_replay *r, int k, int *index, const tt_tensor_ref **view) {
  *index = r->outs[k].index;
  *view = &r->outs[k].view;
  return r->outs[k].kind;
}

const char *tt_replay_text(const tt_replay *r) { return r->text; }
int tt_replay_num_params(const tt_replay *r) { return r->n_params; }

tt_launch_param_kind tt_replay_param(const tt_replay *r, int p, int *arg, tt_dtype *dtype,
                                     int64_t *numel, bool *donated, const unsigned char **bytes) {
  const replay_param *rp = &r->params[p];
  *arg = rp->kind == TT_LAUNCH_STORAGE ? rp->arg : -1;
  *dtype = rp->dtype;
  *numel = rp->numel;
  *donated = rp->donated;
  *bytes = rp->bytes;
  return rp->kind;
}

int tt_replay_num_results(const tt_replay *r) { return r->n_results; }

tt_replay_out_kind tt_replay_result(const tt_replay *r, int o, int *index) {
  *index = r->results[o].index;
  return r->results[o].kind;
}

tt_executable *tt_replay_executable(const tt_replay *r) { return tt_pool_acquire(r->slot); }

int tt_replay_num_checks(const tt_replay *r) { return r->n_checks; }
const void *tt_replay_program(const tt_replay *r) { return r->program; }
const tt_check_site *tt_replay_check(const tt_replay *r, int i) { return &r->checks[i]; }
