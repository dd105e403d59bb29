/* A compiled op program and the plan that feeds it: which storage or scalar
 * each parameter comes from, and where each output goes. Built once per
 * cache key by running the lowering; replayed on every cache hit. */
#ifndef TT_GRAPH_PROGRAM_H
#define TT_GRAPH_PROGRAM_H

#include "ops/lowering.h"
#include "pjrt/runtime.h"

typedef enum {
  TT_PARAM_STORAGE, /* the flat buffer of tensor (arg, elem)'s storage */
  TT_PARAM_SCALAR,  /* Scalar arg (elem for Scalar[]; CPU scalar tensor) as dtype */
  TT_PARAM_RNG,     /* fresh u64[2] PHILOX state */
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
  tt_executable *exe;        /* NULL if declined */
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
   * the cache then keys the program by those values too. A program stored
   * under the value-free key with is_router set only lists them. */
  int n_value_args;
  int *value_args;
  bool is_router;
  char *text;                /* the StableHLO (kept for dumps and explain) */
  double compile_seconds;
} tt_program;

void tt_program_free(void *program);

/* Runs the lowering `fn` over args and builds (but does not compile) the
 * program text and plan. returns_written: the op returns its mutated
 * arguments (in-place / out=), so results map to them in order. */
tt_error *tt_program_build(const char *op_name, tt_lower_fn fn, tt_arg *args, int nargs,
                           bool returns_written, tt_program **out);

#endif
