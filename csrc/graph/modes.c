/* How ops run, as settings of the process and of each thread: the eager
 * mode (a process default plus per-thread overrides), synchronous launches
 * (Debug eager), compile logging and the optimization level. */
#include "graph/modes.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/settings.h"

static _Atomic int optimization_level = 1;
static _Atomic bool synchronous;
static _Atomic int log_compiles = -1; /* -1: not yet read from the environment */

void tt_set_synchronous(bool on) { atomic_store(&synchronous, on); }
bool tt_get_synchronous(void) { return atomic_load(&synchronous); }
void tt_set_log_compiles(bool on) { atomic_store(&log_compiles, on); }

bool tt_log_compiles_enabled(void) {
  int v = atomic_load(&log_compiles);
  if (v < 0) {
    v = tt_setting_bool_or_default(TT_SETTING_LOG_COMPILES);
    atomic_store(&log_compiles, v);
  }
  return v > 0;
}

void tt_set_optimization_level(int level) { atomic_store(&optimization_level, level); }
int tt_optimization_level(void) { return atomic_load(&optimization_level); }

/* ------------------------------------------------------------ modes */

static _Atomic int default_mode = -1; /* -1: not yet read from the settings */
static _Thread_local int thread_mode = -1;
static _Atomic int open_contexts;
static _Atomic int innermost_context_mode;

void tt_set_default_mode(tt_exec_mode mode) { atomic_store(&default_mode, (int)mode); }

int tt_thread_mode_enter(tt_exec_mode mode) {
  int previous = thread_mode;
  thread_mode = (int)mode;
  atomic_store(&innermost_context_mode, (int)mode);
  atomic_fetch_add(&open_contexts, 1);
  return previous;
}

void tt_thread_mode_exit(int previous) {
  thread_mode = previous;
  if (previous >= 0) atomic_store(&innermost_context_mode, previous);
  atomic_fetch_sub(&open_contexts, 1);
}

tt_exec_mode tt_current_mode(void) {
  if (thread_mode >= 0) return (tt_exec_mode)thread_mode;
  if (atomic_load(&open_contexts) > 0) return (tt_exec_mode)atomic_load(&innermost_context_mode);
  int mode = atomic_load(&default_mode), unread = -1;
  if (mode < 0) atomic_compare_exchange_strong(&default_mode, &unread, tt_settings_eager_mode_or_default());
  return (tt_exec_mode)atomic_load(&default_mode);
}
