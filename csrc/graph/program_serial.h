/* A compiled per-op program (tt_program) as bytes, for the persistent cache:
 * the plan (parameters, outputs, resizes, value arguments, router and decline
 * state, compile time), optionally the StableHLO text, and the executable as
 * the plugin serializes it. Versioned; any blob that is not exactly what this
 * build writes (wrong magic or version, truncated, out-of-range fields) is
 * rejected with an error, never half-loaded. */
#ifndef TT_GRAPH_PROGRAM_SERIAL_H
#define TT_GRAPH_PROGRAM_SERIAL_H

#include <stdbool.h>
#include <stddef.h>

#include "graph/program.h"

#define TT_PROGRAM_SERIAL_MAGIC "TTPUPRG\n"
#define TT_PROGRAM_SERIAL_VERSION 2u

/* Serializes p (whose exe may be NULL for a declined or router program) into
 * a malloc'd blob the caller frees. include_text: also store p->text. */
tt_error *tt_program_serialize(const tt_program *p, bool include_text, void **blob, size_t *len);

/* Rebuilds a program from a blob, loading its executable into rt. The result
 * is freed with tt_program_free. */
tt_error *tt_program_deserialize(tt_runtime *rt, const void *blob, size_t len, tt_program **out);

#endif
