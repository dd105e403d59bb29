/* Making recompilation visible: signatures of op arguments for compile
 * logs, and (TORCH_TPU_EXPLAIN_RECOMPILES=1) an explanation for every
 * compile that has a near cached relative: which op, argument, shape, dtype
 * or value differed. Explanations go to a hook (the Python layer adds the
 * user's source line) or, without one, to stderr. */
#ifndef TT_GRAPH_EXPLAIN_H
#define TT_GRAPH_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/args.h"

/* "f32[16,64]; f32[64]; Scalar(float); int 1; ints [0,2]" into buf. */
void tt_describe_args(const tt_arg *args, int nargs, char *buf, size_t size);

bool tt_explain_enabled(void);
void tt_set_explain(bool on);
void tt_set_explain_hook(void (*hook)(const char *message));

/* A Strict (per-op) compile of op_name with argument signature sig. */
void tt_explain_op_compile(const char *op_name, const char *sig);

/* A fused-region compile: the ops' key hashes, names and signatures. */
void tt_explain_region_compile(int n_ops, const uint64_t *hashes, const char *const *names,
                               const char *const *sigs);

#endif
