/* Compile and launch statistics per eager mode and per training step. */
#ifndef TT_GRAPH_STEP_STATS_H
#define TT_GRAPH_STEP_STATS_H

#include <stdint.h>

#include "graph/modes.h"

/* Per-mode compile counts and per-step program counts. A step ends at
 * tt_mark_step (torch_tpu marks one per optimizer.step()). */
void tt_note_compile(tt_exec_mode mode);
void tt_note_program_launch(const void *program);
typedef struct {
  uint64_t compiles[TT_MODES];
  uint64_t last_step_programs;  /* distinct programs launched in the last step */
  uint64_t last_step_launches;
  uint64_t last_step_compiles;
  uint64_t steps;
} tt_mode_stats;
tt_mode_stats tt_get_mode_stats(void);
void tt_mark_step(void);

#endif
