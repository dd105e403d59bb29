/* Strict eager: running one op's cached program by itself. */
#ifndef TT_GRAPH_STRICT_H
#define TT_GRAPH_STRICT_H

#include <stddef.h>

#include "graph/program.h"

/* Compiles p once (racing threads wait for the first; the persistent cache
 * is asked first under key, the op's cache key), then launches it over
 * args on `device`: new tensors go into res, written storages get their
 * new buffers. */
tt_error *tt_strict_run(tt_program *p, const char *op_name, tt_arg *args, int nargs,
                        const void *key, size_t key_len, int device, tt_op_result *res);

#endif
