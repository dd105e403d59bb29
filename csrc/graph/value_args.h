/* Value-dependent ops: a lowering that reads a Scalar argument's value at
 * lowering time (tt_lc_scalar_value, e.g. arange's length) makes programs
 * keyed by those values too. This table remembers, under the op's
 * value-free cache key, which arguments' values complete the key, so the
 * next call with the same layout finds its program in one lookup.
 * Thread-safe; entries live as long as the process. */
#ifndef TT_GRAPH_VALUE_ARGS_H
#define TT_GRAPH_VALUE_ARGS_H

#include <stdbool.h>
#include <stddef.h>

/* The argument indices recorded for key (borrowed, immutable), *n their
 * count; NULL when the key has none. */
const int *tt_value_args_find(const void *key, size_t key_len, int *n);

/* Records args[0..n) for key (copied). A key already recorded keeps its
 * first list. Returns false on host OOM (nothing recorded). */
bool tt_value_args_insert(const void *key, size_t key_len, const int *args, int n);

#endif
