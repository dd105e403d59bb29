/* The checked table of every operation the StableHLO builder can emit.
 *
 * One X-macro list gives both the enum (TT_OP_*, ending in TT_OP_COUNT) and
 * the table of names and arities, so an op cannot exist without its row.
 * The rows are sorted by name (a test checks it), so a name is found by
 * binary search. The builder checks every emission against its row: a wrong
 * number of operands, results or regions is an internal error, never text.
 *
 * Arity: in/out give the fixed count, or TT_ARITY_ANY (any count, at least
 * the `min` given by the relation below). `rel` ties the counts together
 * for the variadic ops:
 *   TT_REL_NONE       counts checked against in/out only
 *   TT_REL_SAME       as many results as operands (while, sort, barrier)
 *   TT_REL_PAIRS      operands = 2 * results (reduce, reduce_window:
 *                     inputs then their init values)
 *   TT_REL_SCATTER    operands = 2 * results + 1 (inputs, indices, updates)
 *   TT_REL_INDEXED    operands = fixed prefix + rank of the first operand
 *                     (dynamic_slice: 1 +, dynamic_update_slice: 2 +) */
#ifndef TT_SHLO_OP_TABLE_H
#define TT_SHLO_OP_TABLE_H

#include <stdint.h>

#define TT_ARITY_ANY (-1)

typedef enum { TT_REL_NONE, TT_REL_SAME, TT_REL_PAIRS, TT_REL_SCATTER, TT_REL_INDEXED } tt_arity_rel;

/* X(ENUM, "name", operands, results, regions, relation); sorted by name.
 * regions TT_ARITY_ANY: one or more (case: one per branch). */
#define TT_SHLO_OPS(X)                                                    \
  X(CHLO_ACOS, "chlo.acos", 1, 1, 0, TT_REL_NONE)                         \
  X(CHLO_ACOSH, "chlo.acosh", 1, 1, 0, TT_REL_NONE)                       \
  X(CHLO_ASIN, "chlo.asin", 1, 1, 0, TT_REL_NONE)                         \
  X(CHLO_ASINH, "chlo.asinh", 1, 1, 0, TT_REL_NONE)                       \
  X(CHLO_ATAN, "chlo.atan", 1, 1, 0, TT_REL_NONE)                         \
  X(CHLO_ATANH, "chlo.atanh", 1, 1, 0, TT_REL_NONE)                       \
  X(CHLO_DIGAMMA, "chlo.digamma", 1, 1, 0, TT_REL_NONE)                   \
  X(CHLO_ERF, "chlo.erf", 1, 1, 0, TT_REL_NONE)                           \
  X(CHLO_ERFC, "chlo.erfc", 1, 1, 0, TT_REL_NONE)                         \
  X(CHLO_LGAMMA, "chlo.lgamma", 1, 1, 0, TT_REL_NONE)                     \
  X(FUNC_CALL, "func.call", TT_ARITY_ANY, TT_ARITY_ANY, 0, TT_REL_NONE)   \
  X(ABS, "stablehlo.abs", 1, 1, 0, TT_REL_NONE)                           \
  X(ADD, "stablehlo.add", 2, 1, 0, TT_REL_NONE)                           \
  X(AND, "stablehlo.and", 2, 1, 0, TT_REL_NONE)                           \
  X(ATAN2, "stablehlo.atan2", 2, 1, 0, TT_REL_NONE)                       \
  X(BITCAST_CONVERT, "stablehlo.bitcast_convert", 1, 1, 0, TT_REL_NONE)   \
  X(BROADCAST_IN_DIM, "stablehlo.broadcast_in_dim", 1, 1, 0, TT_REL_NONE) \
  X(CASE, "stablehlo.case", 1, TT_ARITY_ANY, TT_ARITY_ANY, TT_REL_NONE)   \
  X(CBRT, "stablehlo.cbrt", 1, 1, 0, TT_REL_NONE)                         \
  X(CEIL, "stablehlo.ceil", 1, 1, 0, TT_REL_NONE)                         \
  X(CHOLESKY, "stablehlo.cholesky", 1, 1, 0, TT_REL_NONE)                 \
  X(CLAMP, "stablehlo.clamp", 3, 1, 0, TT_REL_NONE)                       \
  X(COMPARE, "stablehlo.compare", 2, 1, 0, TT_REL_NONE)                   \
  X(COMPLEX, "stablehlo.complex", 2, 1, 0, TT_REL_NONE)                   \
  X(CONCATENATE, "stablehlo.concatenate", TT_ARITY_ANY, 1, 0, TT_REL_NONE) \
  X(CONSTANT, "stablehlo.constant", 0, 1, 0, TT_REL_NONE)                 \
  X(CONVERT, "stablehlo.convert", 1, 1, 0, TT_REL_NONE)                   \
  X(CONVOLUTION, "stablehlo.convolution", 2, 1, 0, TT_REL_NONE)           \
  X(COSINE, "stablehlo.cosine", 1, 1, 0, TT_REL_NONE)                     \
  X(CLZ, "stablehlo.count_leading_zeros", 1, 1, 0, TT_REL_NONE)           \
  X(DIVIDE, "stablehlo.divide", 2, 1, 0, TT_REL_NONE)                     \
  X(DOT_GENERAL, "stablehlo.dot_general", 2, 1, 0, TT_REL_NONE)           \
  X(DYNAMIC_SLICE, "stablehlo.dynamic_slice", 1, 1, 0, TT_REL_INDEXED)    \
  X(DYNAMIC_UPDATE_SLICE, "stablehlo.dynamic_update_slice", 2, 1, 0, TT_REL_INDEXED) \
  X(EXPONENTIAL, "stablehlo.exponential", 1, 1, 0, TT_REL_NONE)           \
  X(EXPM1, "stablehlo.exponential_minus_one", 1, 1, 0, TT_REL_NONE)       \
  X(FFT, "stablehlo.fft", 1, 1, 0, TT_REL_NONE)                           \
  X(FLOOR, "stablehlo.floor", 1, 1, 0, TT_REL_NONE)                       \
  X(GATHER, "stablehlo.gather", 2, 1, 0, TT_REL_NONE)                     \
  X(IMAG, "stablehlo.imag", 1, 1, 0, TT_REL_NONE)                         \
  X(IOTA, "stablehlo.iota", 0, 1, 0, TT_REL_NONE)                         \
  X(IS_FINITE, "stablehlo.is_finite", 1, 1, 0, TT_REL_NONE)               \
  X(LOG, "stablehlo.log", 1, 1, 0, TT_REL_NONE)                           \
  X(LOG1P, "stablehlo.log_plus_one", 1, 1, 0, TT_REL_NONE)                \
  X(LOGISTIC, "stablehlo.logistic", 1, 1, 0, TT_REL_NONE)                 \
  X(MAXIMUM, "stablehlo.maximum", 2, 1, 0, TT_REL_NONE)                   \
  X(MINIMUM, "stablehlo.minimum", 2, 1, 0, TT_REL_NONE)                   \
  X(MULTIPLY, "stablehlo.multiply", 2, 1, 0, TT_REL_NONE)                 \
  X(NEGATE, "stablehlo.negate", 1, 1, 0, TT_REL_NONE)                     \
  X(NOT, "stablehlo.not", 1, 1, 0, TT_REL_NONE)                           \
  X(OPTIMIZATION_BARRIER, "stablehlo.optimization_barrier", TT_ARITY_ANY, TT_ARITY_ANY, 0, TT_REL_SAME) \
  X(OR, "stablehlo.or", 2, 1, 0, TT_REL_NONE)                             \
  X(PAD, "stablehlo.pad", 2, 1, 0, TT_REL_NONE)                           \
  X(POPCNT, "stablehlo.popcnt", 1, 1, 0, TT_REL_NONE)                     \
  X(POWER, "stablehlo.power", 2, 1, 0, TT_REL_NONE)                       \
  X(REAL, "stablehlo.real", 1, 1, 0, TT_REL_NONE)                         \
  X(REDUCE, "stablehlo.reduce", TT_ARITY_ANY, TT_ARITY_ANY, 1, TT_REL_PAIRS) \
  X(REDUCE_WINDOW, "stablehlo.reduce_window", TT_ARITY_ANY, TT_ARITY_ANY, 1, TT_REL_PAIRS) \
  X(REMAINDER, "stablehlo.remainder", 2, 1, 0, TT_REL_NONE)               \
  X(RESHAPE, "stablehlo.reshape", 1, 1, 0, TT_REL_NONE)                   \
  X(RETURN, "stablehlo.return", TT_ARITY_ANY, 0, 0, TT_REL_NONE)          \
  X(REVERSE, "stablehlo.reverse", 1, 1, 0, TT_REL_NONE)                   \
  X(RNG_BIT_GENERATOR, "stablehlo.rng_bit_generator", 1, 2, 0, TT_REL_NONE) \
  X(ROUND_NEAREST_AFZ, "stablehlo.round_nearest_afz", 1, 1, 0, TT_REL_NONE) \
  X(ROUND_NEAREST_EVEN, "stablehlo.round_nearest_even", 1, 1, 0, TT_REL_NONE) \
  X(RSQRT, "stablehlo.rsqrt", 1, 1, 0, TT_REL_NONE)                       \
  X(SCATTER, "stablehlo.scatter", TT_ARITY_ANY, TT_ARITY_ANY, 1, TT_REL_SCATTER) \
  X(SELECT, "stablehlo.select", 3, 1, 0, TT_REL_NONE)                     \
  X(SHIFT_LEFT, "stablehlo.shift_left", 2, 1, 0, TT_REL_NONE)             \
  X(SHIFT_RIGHT_ARITHMETIC, "stablehlo.shift_right_arithmetic", 2, 1, 0, TT_REL_NONE) \
  X(SHIFT_RIGHT_LOGICAL, "stablehlo.shift_right_logical", 2, 1, 0, TT_REL_NONE) \
  X(SIGN, "stablehlo.sign", 1, 1, 0, TT_REL_NONE)                         \
  X(SINE, "stablehlo.sine", 1, 1, 0, TT_REL_NONE)                         \
  X(SLICE, "stablehlo.slice", 1, 1, 0, TT_REL_NONE)                       \
  X(SORT, "stablehlo.sort", TT_ARITY_ANY, TT_ARITY_ANY, 1, TT_REL_SAME)   \
  X(SQRT, "stablehlo.sqrt", 1, 1, 0, TT_REL_NONE)                         \
  X(SUBTRACT, "stablehlo.subtract", 2, 1, 0, TT_REL_NONE)                 \
  X(TAN, "stablehlo.tan", 1, 1, 0, TT_REL_NONE)                           \
  X(TANH, "stablehlo.tanh", 1, 1, 0, TT_REL_NONE)                         \
  X(TRANSPOSE, "stablehlo.transpose", 1, 1, 0, TT_REL_NONE)               \
  X(TRIANGULAR_SOLVE, "stablehlo.triangular_solve", 2, 1, 0, TT_REL_NONE) \
  X(WHILE, "stablehlo.while", TT_ARITY_ANY, TT_ARITY_ANY, 2, TT_REL_SAME) \
  X(XOR, "stablehlo.xor", 2, 1, 0, TT_REL_NONE)

typedef enum {
#define TT_OP_ENUM_(e, name, in, out, regions, rel) TT_OP_##e,
  TT_SHLO_OPS(TT_OP_ENUM_)
#undef TT_OP_ENUM_
  TT_OP_COUNT
} tt_op;

typedef struct {
  const char *name;  /* full MLIR name, "stablehlo.add" */
  int8_t n_in;       /* operands, or TT_ARITY_ANY */
  int8_t n_out;      /* results, or TT_ARITY_ANY */
  int8_t n_regions;  /* regions, or TT_ARITY_ANY (one or more) */
  uint8_t rel;       /* tt_arity_rel */
} tt_op_info;

/* The row of op (op < TT_OP_COUNT). */
const tt_op_info *tt_op_get(tt_op op);
/* The op named `name` ("stablehlo.add"), or TT_OP_COUNT if the table has
 * no such op. */
tt_op tt_op_lookup(const char *name);
/* Checks counts against op's row: NULL if they fit, else a static message
 * naming what is wrong. `first_rank` is the rank of the first operand (for
 * TT_REL_INDEXED). */
const char *tt_op_check_arity(tt_op op, int n_in, int n_out, int n_regions, int first_rank);

#endif
