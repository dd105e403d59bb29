/* The lowering interface: how one aten op becomes StableHLO.
 *
 * Every aten op we run natively has exactly one lowering function, listed in
 * the table of its family file (elementwise.c, reduction.c, ...) with every
 * overload name it serves (functional, in-place and out= variants share one
 * lowering). The same lowering serves Strict eager, Fused eager and
 * torch.compile: it only reads arguments and emits StableHLO through the
 * builder.
 *
 * A lowering sees the op's arguments in schema order. It reads tensors with
 * tt_lc_tensor (which hides views and storage), static arguments with the
 * typed accessors, and Scalar arguments with tt_lc_scalar (a runtime
 * parameter, so a new value never recompiles). It declares results with
 * tt_lc_output in the op's return order. In-place and out= variants need no
 * special code: the framework casts each result to the destination's dtype
 * and writes it into the destination tensor (whole buffer swap, or a scatter
 * into the base of a view).
 *
 * Returning tt_lc_decline(...) means "not natively supported for these
 * arguments": the op then runs on CPU (a correct fallback beats a wrong
 * lowering). Returning tt_lc_fail(...) reports a user error (bad shapes...)
 * exactly like PyTorch would raise it. */
#ifndef TT_OPS_LOWERING_H
#define TT_OPS_LOWERING_H

#include <stdbool.h>
#include <stdint.h>

#include "core/args.h" /* the op arguments (tt_arg, tt_tensor_ref, tt_scalar) */
#include "core/dtype.h"
#include "core/error.h"
#include "shlo/builder.h"

/* --------------------------------------------------- lowering context */

typedef struct tt_lower_ctx tt_lower_ctx;
typedef tt_error *(*tt_lower_fn)(tt_lower_ctx *c);

tt_builder *tt_lc_builder(tt_lower_ctx *c);
const char *tt_lc_op_name(const tt_lower_ctx *c); /* "add.Tensor" as called */
int tt_lc_nargs(const tt_lower_ctx *c);
tt_arg_kind tt_lc_kind(const tt_lower_ctx *c, int i); /* TT_ARG_NONE past the end */
bool tt_lc_is_none(const tt_lower_ctx *c, int i);
const tt_arg *tt_lc_arg(const tt_lower_ctx *c, int i);

/* Tensors. ref: metadata without emitting anything. tensor: the logical
 * value (emits the strided read of the storage; cached per argument). */
const tt_tensor_ref *tt_lc_ref(const tt_lower_ctx *c, int i);
tt_val tt_lc_tensor(tt_lower_ctx *c, int i);
int tt_lc_list_len(const tt_lower_ctx *c, int i);
const tt_tensor_ref *tt_lc_list_ref(const tt_lower_ctx *c, int i, int j); /* NULL if None */
tt_val tt_lc_list_tensor(tt_lower_ctx *c, int i, int j);
/* Shape of a tensor ref as a builder shape. */
tt_shape tt_lc_ref_shape(const tt_tensor_ref *r);

/* Static arguments (baked into the program and its cache key). */
int64_t tt_lc_int(const tt_lower_ctx *c, int i, int64_t dflt);
double tt_lc_double(const tt_lower_ctx *c, int i, double dflt);
bool tt_lc_bool(const tt_lower_ctx *c, int i, bool dflt);
/* Copies an int list (or a single int, as a list of one); returns its
 * length, or -1 if the argument is None/absent. */
int tt_lc_int_list(const tt_lower_ctx *c, int i, int64_t *out, int max);
/* ScalarType argument; returns dflt if None. */
tt_dtype tt_lc_dtype(const tt_lower_ctx *c, int i, tt_dtype dflt);
const char *tt_lc_string(const tt_lower_ctx *c, int i, const char *dflt);

/* Scalar arguments (c10::Scalar, Scalar[], or a 0-dim CPU tensor) become
 * runtime parameters of dtype dt: new values reuse the compiled program.
 * scalar_ref gives the value's kind for type promotion. */
const tt_scalar *tt_lc_scalar_ref(const tt_lower_ctx *c, int i);
tt_val tt_lc_scalar(tt_lower_ctx *c, int i, tt_dtype dt);
tt_val tt_lc_scalar_list(tt_lower_ctx *c, int i, int j, tt_dtype dt);

/* The value of Scalar argument i (or element j of a Scalar list, j >= 0)
 * at lowering time, for lowerings whose program must depend on it (arange's
 * length). The value then becomes part of the cache key: use only where a
 * runtime parameter cannot work. */
double tt_lc_scalar_value(tt_lower_ctx *c, int i);

/* A fresh u64[2] PHILOX state for stablehlo.rng_bit_generator, derived from
 * torch.manual_seed and a per-device call counter (runtime parameter). */
tt_val tt_lc_rng_state(tt_lower_ctx *c);

/* Results, in the op's return order (or, for in-place/out= ops, in the order
 * of the mutated arguments). */
void tt_lc_output(tt_lower_ctx *c, tt_val v);
/* For in-place ops that mutate several arguments: leaves destination k (in
 * output order) untouched instead of writing it. */
void tt_lc_output_unchanged(tt_lower_ctx *c);
/* For functional ops that also mutate an argument (batch_norm running
 * stats): writes v into tensor argument i (list element j, or -1). */
void tt_lc_write(tt_lower_ctx *c, int i, int j, tt_val v);

tt_error *tt_lc_decline(tt_lower_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
tt_error *tt_lc_fail(tt_lower_ctx *c, tt_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Device-side checks (graph/device_checks.h, docs/reliability.md). `bad` is
 * an i1 value of any shape, true where the op's input is invalid (an index
 * out of range, an integer divisor of zero). With checks on, the program
 * reports the first failing check at the next point the host waits, as
 * `code` with the message (PyTorch's CPU wording; the op's name and the
 * user's source line are added); with checks off nothing is emitted.
 * tt_lc_checks_on says which, for lowerings that would compute `bad` only
 * for the check. */
bool tt_lc_checks_on(const tt_lower_ctx *c);
void tt_lc_check(tt_lower_ctx *c, tt_val bad, tt_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same, also capturing the first offending element: its flat position
 * in `bad` and the element of `value` there (an integer value of bad's
 * shape, or TT_INVALID). The message may name them as "{value}", "{pos}"
 * or "{pos@2x5}" (coordinates; core/check_text.h); the host fills them in
 * when the check fails. Costs one min-reduction and a one-element slice. */
void tt_lc_check_value(tt_lower_ctx *c, tt_val bad, tt_val value, tt_error_code code,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* --------------------------------------------------- registration */

#define TT_MAX_OVERLOADS 8

typedef struct {
  tt_lower_fn fn;
  const char *names[TT_MAX_OVERLOADS]; /* "add.Tensor", "add_.Tensor", "add.out" */
} tt_lowering;

/* Each family file defines `const tt_lowering tt_lowerings_<family>[]`
 * terminated by {NULL}; registry.c lists the families. */
#define TT_LOWERINGS(family) const tt_lowering tt_lowerings_##family[]

/* Finds the lowering for "add.Tensor" (overload name included; "" overload
 * spelled "abs"). NULL if none. */
tt_lower_fn tt_lowering_find(const char *op_name);
int tt_lowering_count(void);
/* Iterates registered names (for tools and coverage reports). */
const char *tt_lowering_name_at(int index);

#endif
