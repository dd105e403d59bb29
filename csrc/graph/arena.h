/* A bump allocator for data that lives exactly as long as one fused region
 * (recorded op arguments): allocation is a pointer bump, reset frees all. */
#ifndef TT_GRAPH_ARENA_H
#define TT_GRAPH_ARENA_H

#include <stddef.h>

typedef struct tt_arena_chunk tt_arena_chunk;

typedef struct {
  tt_arena_chunk *head; /* current chunk; older ones linked behind it */
} tt_arena;

/* 16-byte aligned; aborts on host OOM (callers cannot recover mid-record). */
void *tt_arena_alloc(tt_arena *a, size_t n);
void *tt_arena_copy(tt_arena *a, const void *src, size_t n);
/* Frees every chunk but the newest, which is kept for reuse. */
void tt_arena_reset(tt_arena *a);

#endif
