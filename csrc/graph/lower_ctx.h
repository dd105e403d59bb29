/* The lowering context's entry points for the floors above it: running a
 * lowering over an op's arguments to build a per-op program and its plan,
 * or lowering the op into a shared region builder. (The accessors a
 * lowering itself uses are in ops/lowering.h.) */
#ifndef TT_GRAPH_LOWER_CTX_H
#define TT_GRAPH_LOWER_CTX_H

#include "graph/program.h"
#include "ops/lowering.h"

/* Runs the lowering `fn` over args and builds (but does not compile) the
 * program text and plan. returns_written: the op returns its mutated
 * arguments (in-place / out=), so results map to them in order. */
tt_error *tt_program_build(const char *op_name, tt_lower_fn fn, tt_arg *args, int nargs,
                           bool returns_written, tt_program **out);

/* One device-side check inside a program: an i1 scalar, true when it
 * failed, and the flat position and value (i64 scalars) of the first
 * offending element (tt_lc_check_value, ops/lowering.h). */
typedef struct {
  tt_val bad, pos, value;
} tt_check_vals;

/* Fused regions lower many ops into one shared builder. The binding then
 * supplies the values of an op's parameters instead of declaring program
 * parameters: storages by their current value in the region, scalars and
 * RNG states by the op's parameter number (its index in the plan that
 * tt_program_build makes for the same arguments). */
typedef struct {
  void *self;
  tt_val (*storage_value)(void *self, tt_storage *s, tt_dtype dt, int64_t numel);
  tt_val (*param_value)(void *self, int param_index, tt_shape shape);
  /* each device-side check's values, in the op's check order (NULL: checks
   * are dropped) */
  void (*check)(void *self, const tt_check_vals *v);
} tt_region_binding;

/* The error word (core/check_text.h), an i64[3] value, of checks[0..n): the
 * number of the first failing check with its position and value, or
 * TT_CHECK_WORD_OK. */
tt_val tt_lc_check_word(tt_builder *b, const tt_check_vals *checks, int n);

/* Lowers one op into b through bind. On success *out_vals (caller frees)
 * holds the values of the op's outputs in the order of its plan's outs. */
tt_error *tt_program_lower_into(tt_builder *b, const tt_region_binding *bind, const char *op_name,
                                tt_lower_fn fn, tt_arg *args, int nargs, bool returns_written,
                                tt_val **out_vals, int *n_out_vals);

#endif
