/* A small StableHLO text builder.
 *
 * Builds one `func.func @main` in MLIR generic syntax (the form every
 * StableHLO version parses). Values are small integers naming SSA values.
 * The builder records the first error (bad shapes, bad operands); after it,
 * every call returns TT_INVALID and emits nothing, so lowerings can chain
 * calls and check once at the end. */
#ifndef TT_SHLO_BUILDER_H
#define TT_SHLO_BUILDER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"
#include "shlo/op_table.h"

typedef struct {
  tt_dtype dtype;
  int ndim;
  int64_t dims[TT_MAX_DIMS];
} tt_shape;

typedef int tt_val;
#define TT_INVALID (-1)

typedef struct tt_builder tt_builder;

tt_builder *tt_builder_new(void);
void tt_builder_free(tt_builder *b);

/* First recorded error, or NULL. Still owned by the builder. */
const tt_error *tt_b_error(const tt_builder *b);
/* Records an error (first one wins) and returns TT_INVALID. */
tt_val tt_b_fail(tt_builder *b, tt_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Takes ownership of the recorded error (caller frees); builder stays failed. */
tt_error *tt_b_take_error(tt_builder *b);

/* ------------------------------------------------------------- shapes */
tt_shape tt_shape_make(tt_dtype dt, int ndim, const int64_t *dims);
tt_shape tt_shape_scalar(tt_dtype dt);
int64_t tt_shape_numel(const tt_shape *s);
bool tt_shape_equal(const tt_shape *a, const tt_shape *b);
/* Prints "tensor<2x3xf32>" into buf. */
void tt_shape_print(const tt_shape *s, char *buf, size_t size);

/* ------------------------------------------------------- values, params */
tt_shape tt_b_shape(const tt_builder *b, tt_val v);
tt_dtype tt_b_dtype(const tt_builder *b, tt_val v);
int tt_b_ndim(const tt_builder *b, tt_val v);
int tt_b_num_params(const tt_builder *b);

/* Adds a function parameter (in creation order). */
tt_val tt_b_param(tt_builder *b, tt_shape shape);
/* Marks parameter index `param` as donated to output `output` (buffer reuse). */
void tt_b_alias_param(tt_builder *b, int param, int output);

/* ---------------------------------------------------------- generic op */
/* Emits `%r:n = "name"(ins...) ({region}) {attrs} : (in types) -> (outs)`
 * for op of the table in shlo/op_table.h, after checking the counts of
 * operands, results and regions against its row (a mismatch is an internal
 * error recorded in the builder). attrs may be NULL; it is the text between
 * the braces. region may be NULL; it is the text between the parentheses
 * of `({ ... })`, blocks of several regions joined by "}, {". Results are
 * written to results[0..n_outs). */
bool tt_b_emit(tt_builder *b, tt_op op, const tt_val *ins, int n_ins, const char *attrs,
               const char *region, const tt_shape *outs, int n_outs, tt_val *results);
/* One result, no region. */
tt_val tt_b_emit1(tt_builder *b, tt_op op, const tt_val *ins, int n_ins, const char *attrs,
                  tt_shape out);
/* The same by full name ("stablehlo.gather"): the name is looked up in the
 * op table, and one it lacks is an internal error. Kept for callers outside
 * the ops folder; lowerings use the tt_op forms. */
tt_val tt_b_op(tt_builder *b, const char *name, const tt_val *ins, int n_ins, const char *attrs,
               tt_shape out);
bool tt_b_op_multi(tt_builder *b, const char *name, const tt_val *ins, int n_ins,
                   const char *attrs, const char *region, const tt_shape *outs, int n_outs,
                   tt_val *results);

/* ---------------------------------------------------- structured control flow
 * Region ops are built in steps; each step opens a block whose arguments
 * are fresh values usable only inside it (a value used outside the block
 * that defines it is an internal error), and the ops emitted meanwhile go
 * into that block. The op itself is emitted, into the enclosing block, when
 * its last block closes. On any error the builder is failed as usual.
 *
 * while: carried values init[0..n) (n <= 16):
 *   tt_b_while_begin(b, init, n, args)   opens the condition; args[0..n)
 *   tt_b_while_body(b, cond, args)       cond: 0-d bool; opens the body
 *   tt_b_while_end(b, next, results)     next: n values shaped like init
 *
 * case: index a 0-d i32 choosing a branch (out of range: the last one);
 * every branch returns values of the shapes outs[0..n_outs):
 *   tt_b_case_begin(b, index, outs, n_outs)   opens branch 0
 *   tt_b_case_next(b, vals)                    closes it, opens the next
 *   tt_b_case_end(b, vals, results)            closes the last branch */
bool tt_b_while_begin(tt_builder *b, const tt_val *init, int n, tt_val *args);
bool tt_b_while_body(tt_builder *b, tt_val cond, tt_val *args);
bool tt_b_while_end(tt_builder *b, const tt_val *next, tt_val *results);
bool tt_b_case_begin(tt_builder *b, tt_val index, const tt_shape *outs, int n_outs);
bool tt_b_case_next(tt_builder *b, const tt_val *vals);
bool tt_b_case_end(tt_builder *b, const tt_val *vals, tt_val *results);

/* ------------------------------------------------------------- helpers */
tt_val tt_b_constant(tt_builder *b, tt_dtype dt, double value);      /* 0-d; complex: (value, 0) */
tt_val tt_b_constant_int(tt_builder *b, tt_dtype dt, int64_t value); /* exact for i64 */
/* value broadcast to shape */
tt_val tt_b_full(tt_builder *b, tt_shape shape, double value);
/* Elementwise op of the table on one value, or on two of the same shape. */
tt_val tt_b_un(tt_builder *b, tt_op op, tt_val x);
tt_val tt_b_bin(tt_builder *b, tt_op op, tt_val x, tt_val y);
/* The same by the name after "stablehlo." ("exponential"), looked up in the
 * op table (unknown: internal error); for callers outside the ops folder. */
tt_val tt_b_unary(tt_builder *b, const char *op, tt_val x);
tt_val tt_b_binary(tt_builder *b, const char *op, tt_val x, tt_val y);
/* direction: EQ NE LT LE GT GE; compare type chosen from the dtype. */
tt_val tt_b_compare(tt_builder *b, const char *direction, tt_val x, tt_val y);
tt_val tt_b_select(tt_builder *b, tt_val pred, tt_val on_true, tt_val on_false);
/* No-op if same dtype. Complex -> real keeps the real part (as torch);
 * real -> complex has a zero imaginary part. */
tt_val tt_b_convert(tt_builder *b, tt_val x, tt_dtype dt);
/* Complex values: components (f32 for c64), composition from two real
 * values of one shape (f32 or f64), abs (the real modulus; for a real x
 * the plain abs), a complex 0-d constant. */
tt_val tt_b_real(tt_builder *b, tt_val x);
tt_val tt_b_imag(tt_builder *b, tt_val x);
tt_val tt_b_complex(tt_builder *b, tt_val re, tt_val im);
tt_val tt_b_abs(tt_builder *b, tt_val x);
tt_val tt_b_constant_complex(tt_builder *b, tt_dtype dt, double re, double im);
/* stablehlo.fft of type "FFT", "IFFT", "RFFT" or "IRFFT" over the last n
 * (1..3) dims of x, of lengths[0..n) (for IRFFT the real output lengths). */
tt_val tt_b_fft(tt_builder *b, tt_val x, const char *fft_type, const int64_t *lengths, int n);
tt_val tt_b_bitcast(tt_builder *b, tt_val x, tt_shape out);
tt_val tt_b_reshape(tt_builder *b, tt_val x, int ndim, const int64_t *dims);
tt_val tt_b_transpose(tt_builder *b, tt_val x, const int64_t *perm);
/* Broadcasts x into `dims` (ndim); map[i] = output dim of x's dim i. */
tt_val tt_b_broadcast_in_dim(tt_builder *b, tt_val x, int ndim, const int64_t *dims,
                             const int64_t *map);
/* Numpy-style broadcast (right-aligned) to dims. */
tt_val tt_b_broadcast_to(tt_builder *b, tt_val x, int ndim, const int64_t *dims);
tt_val tt_b_slice(tt_builder *b, tt_val x, const int64_t *start, const int64_t *limit,
                  const int64_t *stride);
tt_val tt_b_concat(tt_builder *b, const tt_val *xs, int n, int dim);
tt_val tt_b_iota(tt_builder *b, tt_shape shape, int dim);
tt_val tt_b_pad(tt_builder *b, tt_val x, tt_val pad_value, const int64_t *low,
                const int64_t *high, const int64_t *interior);
/* Reduction of x over dims with a binary body op ("add", "maximum", "minimum",
 * "multiply", "and", "or"); init is a 0-d value of x's dtype. */
tt_val tt_b_reduce(tt_builder *b, tt_val x, tt_val init, const int64_t *dims, int n_dims,
                   const char *body_op);
/* dot_general; out_dtype usually the operand dtype. */
tt_val tt_b_dot_general(tt_builder *b, tt_val lhs, tt_val rhs, int n_batch,
                        const int64_t *lhs_batch, const int64_t *rhs_batch, int n_contract,
                        const int64_t *lhs_contract, const int64_t *rhs_contract,
                        tt_dtype out_dtype);
tt_val tt_b_dynamic_slice(tt_builder *b, tt_val x, const tt_val *starts, const int64_t *sizes);
tt_val tt_b_dynamic_update_slice(tt_builder *b, tt_val x, tt_val update, const tt_val *starts);

/* Writes the region of a binary combiner on 0-d values of dt (for reduce,
 * reduce_window, scatter): op "add", "maximum", ...; NULL returns the new
 * value (a scatter that replaces). */
void tt_b_region_binary(char *buf, size_t size, tt_dtype dt, const char *op);

/* Formats "array<i64: 1, 2>" / "[1, 2]" lists into buf. */
void tt_fmt_i64_array(char *buf, size_t size, const int64_t *v, int n);  /* array<i64: ...> */
void tt_fmt_i64_list(char *buf, size_t size, const int64_t *v, int n);   /* [1, 2] */

/* ------------------------------------------------------- extra functions
 * A module may carry private functions besides @main (custom kernels,
 * csrc/ops/custom_kernel.c). tt_b_add_function adds `text`, one or more
 * whole `func.func private @...` definitions, under `symbol` (its entry
 * function); a symbol already added is not added again (a region calling
 * one kernel many times holds it once). tt_b_call emits
 * `"func.call"(ins) {callee = @symbol}` with result shapes outs; calling a
 * symbol never added is an internal error. */
bool tt_b_add_function(tt_builder *b, const char *symbol, const char *text);
bool tt_b_has_function(const tt_builder *b, const char *symbol);
bool tt_b_call(tt_builder *b, const char *symbol, const tt_val *ins, int n_ins,
               const tt_shape *outs, int n_outs, tt_val *results);

/* ------------------------------------------------------------- finish */
/* Returns the module text (malloc'd, caller frees) returning `outs`; the
 * functions of tt_b_add_function follow @main, in the order added. */
tt_error *tt_b_finish(tt_builder *b, const tt_val *outs, int n_outs, char **text);

#endif
