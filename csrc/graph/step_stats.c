/* Per-mode compile counts and per-step program counts (cache_stats()). */
#include "graph/step_stats.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t step_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uint64_t compiles[TT_MODES];
  const void **seen; /* distinct programs launched this step */
  int n_seen, cap_seen;
  uint64_t launches, step_compiles;
  uint64_t last_programs, last_launches, last_compiles, steps;
} step;

void tt_note_compile(tt_exec_mode mode) {
  pthread_mutex_lock(&step_lock);
  step.compiles[mode]++;
  step.step_compiles++;
  pthread_mutex_unlock(&step_lock);
}

void tt_note_program_launch(const void *program) {
  pthread_mutex_lock(&step_lock);
  step.launches++;
  bool seen = false;
  for (int i = step.n_seen - 1; i >= 0 && !seen; i--) seen = step.seen[i] == program;
  if (!seen && step.n_seen < 4096) { /* beyond that the count saturates */
    if (step.n_seen == step.cap_seen) {
      int cap = step.cap_seen ? step.cap_seen * 2 : 64;
      const void **p = realloc(step.seen, sizeof *p * (size_t)cap);
      if (p) step.seen = p, step.cap_seen = cap;
    }
    if (step.n_seen < step.cap_seen) step.seen[step.n_seen++] = program;
  }
  pthread_mutex_unlock(&step_lock);
}

void tt_mark_step(void) {
  pthread_mutex_lock(&step_lock);
  step.last_programs = (uint64_t)step.n_seen;
  step.last_launches = step.launches;
  step.last_compiles = step.step_compiles;
  step.steps++;
  step.n_seen = 0;
  step.launches = step.step_compiles = 0;
  pthread_mutex_unlock(&step_lock);
}

tt_mode_stats tt_get_mode_stats(void) {
  pthread_mutex_lock(&step_lock);
  tt_mode_stats m;
  memcpy(m.compiles, step.compiles, sizeof m.compiles);
  m.last_step_programs = step.last_programs;
  m.last_step_launches = step.last_launches;
  m.last_step_compiles = step.last_compiles;
  m.steps = step.steps;
  pthread_mutex_unlock(&step_lock);
  return m;
}
