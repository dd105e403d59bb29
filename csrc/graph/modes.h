/* How ops run: the eager mode (process default and per-thread overrides),
 * synchronous launches, compile logging, the optimization level. */
#ifndef TT_GRAPH_MODES_H
#define TT_GRAPH_MODES_H

#include <stdbool.h>

/* Debug eager: when set, every launch waits for its results before
 * returning, so an asynchronous failure surfaces at the op that caused it. */
void tt_set_synchronous(bool on);
bool tt_get_synchronous(void);

/* When set (TORCH_TPU_LOG_COMPILES=1 or torch_tpu's debug mode), every
 * compile is logged to stderr with the op and its argument signature. */
void tt_set_log_compiles(bool on);
bool tt_log_compiles_enabled(void);

/* Compiles every program at this optimization level (recorded in keys). */
void tt_set_optimization_level(int level);
int tt_optimization_level(void);

/* Eager modes as the core sees them: Debug is Strict plus synchronous
 * launches (tt_set_synchronous) and Python-side checks. */
typedef enum { TT_MODE_STRICT = 0, TT_MODE_FUSED = 1, TT_MODE_DEBUG = 2, TT_MODES } tt_exec_mode;

/* The process default, used by threads without an override of their own. */
void tt_set_default_mode(tt_exec_mode mode);
/* A per-thread override (the eager_mode context manager). enter returns the
 * previous override (-1: none) to pass to exit. Threads without an override
 * (autograd's device threads) follow the innermost open context of any
 * thread, so a backward inside `with eager_mode("fused")` is fused too. */
int tt_thread_mode_enter(tt_exec_mode mode);
void tt_thread_mode_exit(int previous);
tt_exec_mode tt_current_mode(void);

#endif
