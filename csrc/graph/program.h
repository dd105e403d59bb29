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

/* The tensor that plan entry (arg, elem) names. */
const tt_tensor_ref *tt_plan_ref(const tt_arg *args, int arg, int elem);
/* Host bytes (little-endian, pp->dtype) of scalar parameter pp. */
void tt_param_scalar_bytes(const tt_arg *args, const tt_param_plan *pp, unsigned char out[8]);

/* Runs the lowering `fn` over args and builds (but does not compile) the
 * program text and plan. returns_written: the op returns its mutated
 * arguments (in-place / out=), so results map to them in order. */
tt_error *tt_program_build(const char *op_name, tt_lower_fn fn, tt_arg *args, int nargs,
                           bool returns_written, tt_program **out);

/* Fused regions lower many ops into one shared builder. The binding then
 * supplies the values of an op's parameters instead of declaring program
 * parameters: storages by their current value in the region, scalars and
 * RNG states by the op's parameter number (its index in the plan that
 * tt_program_build makes for the same arguments). */
typedef struct {
  void *self;
  tt_val (*storage_value)(void *self, tt_storage *s, tt_dtype dt, int64_t numel);
  tt_val (*param_value)(void *self, int param_index, tt_shape shape);
} tt_region_binding;

/* Lowers one op into b through bind. On success *out_vals (caller frees)
 * holds the values of the op's outputs in the order of its plan's outs. */
tt_error *tt_program_lower_into(tt_builder *b, const tt_region_binding *bind, const char *op_name,
                                tt_lower_fn fn, tt_arg *args, int nargs, bool returns_written,
                                tt_val **out_vals, int *n_out_vals);

#endif
