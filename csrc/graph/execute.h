/* Running one aten op natively: cache lookup, lowering and compile on a
 * miss, parameter upload, launch, and writing results back into storages.
 * This is the whole life of an op below the C++ boundary. */
#ifndef TT_GRAPH_EXECUTE_H
#define TT_GRAPH_EXECUTE_H

#include "graph/program.h"

typedef struct {
  tt_dtype dtype;
  int ndim;
  int64_t sizes[TT_MAX_DIMS];
  /* a fresh storage holding the value (or, in Fused eager, its pending
   * value); the user reference is owned by the result until taken */
  tt_storage *storage;
} tt_new_tensor;

typedef struct {
  int n_new;
  tt_new_tensor *news;  /* the op's new tensors, in return order */
  int n_resize;         /* on TT_ERR_NEEDS_RESIZE: out= args to resize first */
  tt_output_plan *resize;
} tt_op_result;

/* Runs op_name ("add.Tensor") over args on `device`. On success the new
 * tensors are in res (release with tt_op_result_clear) and mutated
 * arguments' storages already hold their new buffers. Errors:
 * TT_ERR_NOT_IMPLEMENTED when there is no lowering (or it declined): the
 * caller may run the op on CPU; TT_ERR_NEEDS_RESIZE: resize res->resize
 * destinations, then call again; anything else is a user-facing error. */
tt_error *tt_op_run(const char *op_name, tt_arg *args, int nargs, bool returns_written,
                    int device, tt_op_result *res);
void tt_op_result_clear(tt_op_result *res);

/* Debug eager: when set, every launch waits for its results before
 * returning, so an asynchronous failure surfaces at the op that caused it. */
void tt_set_synchronous(bool on);
bool tt_get_synchronous(void);

/* When set (TORCH_TPU_LOG_COMPILES=1 or torch_tpu's debug mode), every
 * compile is logged to stderr with the op and its argument signature. */
void tt_set_log_compiles(bool on);

/* Compiles every program at this optimization level (recorded in keys). */
void tt_set_optimization_level(int level);

/* Eager modes as the core sees them: Debug is Strict plus synchronous
 * launches (tt_set_synchronous) and Python-side checks. */
typedef enum { TT_MODE_STRICT = 0, TT_MODE_FUSED = 1, TT_MODE_DEBUG = 2, TT_MODES } tt_exec_mode;

/* The process default, used by threads without an override of their own. */
void tt_set_default_mode(tt_exec_mode mode);
/* A per-thread override (the eager_mode context manager). enter returns the
 * previous override (-1: none) to pass to exit. Threads without an override
 * (autograd's device threads) follow the innermost open context of any
 * thread, so a backward inside `with eager_mode("fused")` is fused too. */
int tt_thread_mode_enter(tt_exec_mode mode);
void tt_thread_mode_exit(int previous);
tt_exec_mode tt_current_mode(void);

bool tt_log_compiles_enabled(void);

/* Per-mode compile counts and per-step program counts. A step ends at
 * tt_mark_step (torch_tpu marks one per optimizer.step()). */
void tt_note_compile(tt_exec_mode mode);
void tt_note_program_launch(const void *program);
typedef struct {
  uint64_t compiles[TT_MODES];
  uint64_t last_step_programs;  /* distinct programs launched in the last step */
  uint64_t last_step_launches;
  uint64_t last_step_compiles;
  uint64_t steps;
} tt_mode_stats;
tt_mode_stats tt_get_mode_stats(void);
void tt_mark_step(void);

/* Counters, for torch_tpu.cache_stats() and tests. */
typedef struct {
  uint64_t ops_run;       /* native launches */
  uint64_t ops_declined;  /* lowering declined: fell back */
  uint64_t ops_missing;   /* no lowering registered */
} tt_exec_stats;
tt_exec_stats tt_get_exec_stats(void);

#endif
