/* Custom kernels: user-written StableHLO functions that run as ops.
 *
 * A kernel is registered under an op name with a namespace
 * ("torch_tpu_user::rms_norm", as torch.library names it) and the text of
 * one or more `func.func` definitions in MLIR's pretty syntax, optionally
 * inside a `module { }`; its entry is `@main`, or the first function when
 * there is no `@main`. Argument and result types are ranked tensors whose
 * dimensions are integers or symbols `${NAME}` and whose element type is a
 * name ("f32") or a symbol; a symbol is bound by the first argument whose
 * type holds it, and every `${NAME}` in the text is replaced by its value
 * (so `dense<${D}.0>` is the float of a bound dimension).
 *
 * Every registered kernel shares one lowering (lower_custom_kernel, in
 * custom_kernel.c): it instantiates the text for the argument shapes,
 * renames its symbols with a prefix unique to the instantiation, adds the
 * functions to the module being built (once per module) and emits a
 * `func.call` of the entry. So a kernel runs in Strict, Fused (inside a
 * region's one program) and Debug eager and in torch.compile graphs
 * through the same table path as any aten op. Registered kernels are
 * immutable and live until exit; their text's digest is part of every
 * cache key of their calls, so the persistent cache never serves a program
 * of another text under the same name. */
#ifndef TT_OPS_CUSTOM_KERNEL_H
#define TT_OPS_CUSTOM_KERNEL_H

#include <stdbool.h>

#include "core/error.h"
#include "ops/lowering.h"
#include "shlo/builder.h"

#define TT_CK_MAX_ARGS 32
#define TT_CK_MAX_RESULTS 16

/* Registers `text` under op_name after checking its structure (entry
 * function, tensor signature). Registering a name again with the same text
 * is a no-op; with another text it is an error. Thread-safe. */
tt_error *tt_custom_kernel_register(const char *op_name, const char *text);

/* The lowering of op_name when it is a registered kernel (and writes the
 * 16-byte digest of its text for the cache key), else NULL. Thread-safe. */
tt_lower_fn tt_custom_kernel_find(const char *op_name, unsigned char digest[16]);

/* The entry's signature as written: the number of arguments and results,
 * whether any type holds a `${...}` symbol, and (when none does) the
 * argument shapes (args[0..n_args), TT_CK_MAX_ARGS entries). */
tt_error *tt_custom_kernel_signature(const char *op_name, const char *text, int *n_args,
                                     int *n_results, bool *templated, tt_shape *args);

/* A standalone module whose @main takes arguments of shapes ins[0..n_ins)
 * and returns the kernel's results, to compile at registration: the module
 * text (malloc'd; caller frees), the line of the module on which the
 * kernel's own first line sits (1-based), and the result shapes
 * (outs: TT_CK_MAX_RESULTS entries). Nothing is registered. */
tt_error *tt_custom_kernel_module(const char *op_name, const char *text, const tt_shape *ins,
                                  int n_ins, char **module_text, int *first_line, tt_shape *outs,
                                  int *n_outs);

/* The dtype whose MLIR element type is `name` ("f32", "i1"); false if none. */
bool tt_custom_kernel_dtype(const char *name, tt_dtype *out);

#endif
