/* The pool of live executables: a bound on how many compiled programs stay
 * loaded at once.
 *
 * Every loaded XLA:CPU executable holds about 3 memory mappings (its JIT
 * code and data). A process that compiles thousands of distinct programs
 * (PyTorch's test suites, printing tensors element by element) used to keep
 * them all and reached vm.max_map_count (65530 by default); the next
 * compile then failed inside LLVM, which left its unwind tables registered
 * over freed memory, and the C++ exception that reported the failure
 * crashed the process while unwinding (issue 20).
 *
 * A cached program (its plan, text and key stay in the compile cache) owns
 * a tt_pool_entry: the slot of its executable. Users take the executable
 * with tt_pool_acquire (a reference of their own, held until the launch is
 * enqueued; the runtime keeps it alive until the launch completes), and put
 * a freshly compiled or loaded one in with tt_pool_install. When more than
 * the cap are resident, installing unloads the least recently acquired
 * ones: their entries become empty and the next use compiles again (or
 * loads from the persistent tier). The cap is TORCH_TPU_MAX_LIVE_EXECUTABLES,
 * lowered to vm.max_map_count / 8 when that is smaller (executables then
 * hold at most about half of the allowed mappings).
 *
 * Before each compile, tt_pool_before_compile checks (now and then; on
 * every compile when it is close) how many mappings the process holds;
 * near the limit it unloads executables, and if that does not free enough
 * (a user's own mappings) it returns a clear error instead of letting the
 * compiler fail. Thread-safe: one lock guards every entry's slot and the
 * LRU list. */
#ifndef TT_CACHE_EXE_POOL_H
#define TT_CACHE_EXE_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "pjrt/runtime.h"

/* A zero-initialized entry is valid and empty: embed one in a program
 * (freed with tt_pool_entry_clear), or allocate a shared one with
 * tt_pool_entry_new (reference-counted: tt_pool_entry_retain/release). */
typedef struct tt_pool_entry {
  tt_executable *exe;               /* guarded by the pool lock; NULL: not loaded */
  struct tt_pool_entry *prev, *next; /* LRU list (most recent first) while exe != NULL */
} tt_pool_entry;

/* A shared entry with a reference count (one reference; NULL without
 * memory). retain/release only accept entries made here. */
tt_pool_entry *tt_pool_entry_new(void);
tt_pool_entry *tt_pool_entry_retain(tt_pool_entry *e);
void tt_pool_entry_release(tt_pool_entry *e); /* the last one clears and frees it */
/* Unloads e's executable (if any) and unlinks it. Accepts NULL. */
void tt_pool_entry_clear(tt_pool_entry *e);

/* A new reference to e's executable and marks it most recently used, or
 * NULL when none is loaded (never compiled, or unloaded). */
tt_executable *tt_pool_acquire(tt_pool_entry *e);
/* Makes exe (the caller's reference, taken over) e's executable, unloading
 * the least recently used beyond the cap, and returns a new reference for
 * the caller. If another thread installed one first, exe is released and
 * that one is returned. */
tt_executable *tt_pool_install(tt_pool_entry *e, tt_executable *exe);

/* Unloads least recently used executables until at most `keep` stay;
 * returns how many it unloaded. */
size_t tt_pool_evict(size_t keep);

/* The cap: the setting (lowered for vm.max_map_count) unless set here.
 * tt_pool_set_cap(0) returns to the setting. Lowering it unloads at once. */
void tt_pool_set_cap(size_t cap);
size_t tt_pool_cap(void);

/* Called before compiling or loading an executable: may unload executables
 * when the process is near vm.max_map_count; returns a TT_ERR_OUT_OF_MEMORY
 * error naming the limit and the setting when that is not enough. */
tt_error *tt_pool_before_compile(void);
/* Called with a compile's error: when the process is near the limit,
 * returns the error with the reason prepended; otherwise err unchanged. */
tt_error *tt_pool_explain_compile_error(tt_error *err);

typedef struct {
  uint64_t live;      /* executables loaded in entries now */
  uint64_t peak;      /* most at once since the last reset */
  uint64_t cap;
  uint64_t installs;  /* executables put into entries (compiles and loads) */
  uint64_t evictions; /* executables unloaded to keep the cap or the map count */
  uint64_t map_checks;   /* reads of /proc/self/maps */
  uint64_t maps_last;    /* mappings counted at the last check */
  uint64_t max_map_count; /* the kernel's limit (0: unknown) */
} tt_pool_stats;
tt_pool_stats tt_pool_get_stats(void);
void tt_pool_reset_peak(void);

/* Mappings of this process (lines of /proc/self/maps; 0 if unreadable). */
size_t tt_pool_count_maps(void);

#endif
