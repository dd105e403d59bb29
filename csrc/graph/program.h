/* A compiled op program and the plan that feeds it: which storage or scalar
 * each parameter comes from, and where each output goes. Built once per
 * cache key by running the lowering; replayed on every cache hit. */
#ifndef TT_GRAPH_PROGRAM_H
#define TT_GRAPH_PROGRAM_H

#include "cache/exe_pool.h"
#include "core/args.h"
#include "graph/device_checks.h"
#include "pjrt/runtime.h"
#include "shlo/builder.h"

typedef enum {
  TT_PARAM_STORAGE, /* the flat buffer of tensor (arg, elem)'s storage */
  TT_PARAM_SCALAR,  /* Scalar arg (elem for Scalar[]; CPU scalar tensor) as dtype */
  TT_PARAM_RNG,     /* fresh u64[2] PHILOX state */
  TT_PARAM_OFFSET,  /* tensor (arg, elem)'s storage offset as an i64 scalar
                       (views whose offset is a runtime value, graph/view.h) */
} tt_param_kind;

typedef struct {
  tt_param_kind kind;
  int arg, elem; /* elem -1 when not a list */
  tt_dtype dtype;
} tt_param_plan;

typedef enum {
  TT_OUT_NEW,   /* a new tensor returned by the op */
  TT_OUT_WRITE, /* the new flat buffer of tensor (arg, elem)'s storage */
} tt_out_kind;

typedef struct {
  tt_out_kind kind;
  int arg, elem;
  tt_shape shape; /* TT_OUT_NEW: the tensor's shape */
} tt_output_plan;

typedef struct {
  /* the compiled executable (cache/exe_pool.h): empty until compiled, when
   * declined, or after the pool unloaded it (compiled again on next use) */
  tt_pool_entry exe_slot;
  tt_error_code declined;    /* 0, or why the op cannot run natively */
  char *decline_message;
  tt_param_plan *params;
  int n_params;
  tt_output_plan *outs;
  int n_outs;
  /* out= destinations whose shape differs from the result: resize first */
  int n_resize;
  tt_output_plan *resize;
  /* Scalar arguments whose values the program depends on (tt_lc_scalar_value):
   * the cache then keys the program by those values too (graph/value_args.h
   * remembers them under the value-free key). */
  int n_value_args;
  int *value_args;
  char *text;                /* the StableHLO (kept for dumps and explain) */
  double compile_seconds;
  /* Device-side checks (graph/device_checks.h): with n_checks > 0 the
   * program has one more output after outs, its i32 error word, and
   * checks[k] describes the failure the word value k reports. */
  int n_checks;
  tt_check_def *checks;
} tt_program;

void tt_program_free(void *program);

/* The tensor that plan entry (arg, elem) names. */
const tt_tensor_ref *tt_plan_ref(const tt_arg *args, int arg, int elem);
/* Host bytes (little-endian, pp->dtype) of scalar or offset parameter pp. */
void tt_param_scalar_bytes(const tt_arg *args, const tt_param_plan *pp, unsigned char out[8]);

/* The new tensors an op made, and the out= destinations it asks the caller
 * to resize first. */
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
  /* When n_resize > 0 nothing ran: the out= arguments listed (arg, elem,
   * shape) must be resized to those shapes, their tt_tensor_refs refreshed,
   * and the op run once more. */
  int n_resize;
  tt_output_plan *resize;
} tt_op_result;

/* Releases the new tensors not taken and the resize list. */
void tt_op_result_clear(tt_op_result *res);

#endif
