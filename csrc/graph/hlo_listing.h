/* A readable listing of an optimized program: the serialized
 * xla.HloModuleProto that PJRT_Executable_OptimizedProgram returns (format
 * "hlo"; or "hlo_with_config": an HloModuleProtoWithConfig holding it), decoded
 * from the protobuf wire format by a small bounded reader (no protobuf
 * library): each computation (fusion computations marked) and, per
 * instruction, its name, shape, opcode, operands, parameter number, fusion
 * kind and called computations, in HLO text's style:
 *
 *   computation fused_add (fusion):
 *     %param_0 = f32[4] parameter(0)
 *     ROOT %add.1 = f32[4] add(%param_0, %param_1)
 *
 * Every read is checked against the input's end; malformed input gives an
 * error naming the byte offset, never a read out of bounds. */
#ifndef TT_GRAPH_HLO_LISTING_H
#define TT_GRAPH_HLO_LISTING_H

#include <stddef.h>

#include "core/error.h"

typedef struct {
  int computations;
  int instructions;
  int fusions; /* instructions whose opcode is "fusion" */
} tt_hlo_listing_stats;

/* The listing of the n bytes at proto, malloc'd into *out (caller frees);
 * stats may be NULL. TT_ERR_INVALID_ARGUMENT for malformed input. */
tt_error *tt_hlo_listing(const void *proto, size_t n, char **out, tt_hlo_listing_stats *stats);

#endif
