/* Running one aten op natively: cache lookup, lowering and compile on a
 * miss, parameter upload, launch, and writing results back into storages.
 * This is the whole life of an op below the C++ boundary. */
#ifndef TT_GRAPH_EXECUTE_H
#define TT_GRAPH_EXECUTE_H

#include "graph/modes.h"      /* the eager modes and execution settings */
#include "graph/program.h"
#include "graph/step_stats.h" /* per-mode and per-step counts */

/* Runs op_name ("add.Tensor") over args on `device`. On success the new
 * tensors are in res (release with tt_op_result_clear) and mutated
 * arguments' storages already hold their new buffers, unless
 * res->n_resize > 0: then nothing ran, and the caller resizes the listed
 * out= destinations, refreshes their tt_tensor_refs and calls once more.
 * Errors: TT_ERR_NOT_IMPLEMENTED when there is no lowering (or it
 * declined): the caller may run the op on CPU; anything else is a
 * user-facing error. */
tt_error *tt_op_run(const char *op_name, tt_arg *args, int nargs, bool returns_written,
                    int device, tt_op_result *res);

/* Counters, for torch_tpu.cache_stats() and tests. */
typedef struct {
  uint64_t ops_run;       /* native launches */
  uint64_t ops_declined;  /* lowering declined: fell back */
  uint64_t ops_missing;   /* no lowering registered */
} tt_exec_stats;
tt_exec_stats tt_get_exec_stats(void);

#endif
