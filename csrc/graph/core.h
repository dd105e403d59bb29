/* Process-wide core state: the runtime, random-number state, settings.
 * Initialized once (thread-safe, idempotent); everything here is guarded by
 * a lock or atomic. */
#ifndef TT_GRAPH_CORE_H
#define TT_GRAPH_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "pjrt/runtime.h"

/* Loads the plugin and creates the client on first call. search_dirs is a
 * NULL-terminated list of site-packages directories (may be NULL). Device
 * count for CPU plugins comes from $TORCH_TPU_NUM_DEVICES (default 1). A
 * failure is remembered and returned again by later calls. */
tt_error *tt_core_init(const char *const *search_dirs);
bool tt_core_initialized(void);
/* The runtime, or NULL before a successful init. */
tt_runtime *tt_core_runtime(void);
/* Device count; 0 if init failed. */
int tt_core_device_count(void);

/* torch.manual_seed for the device: resets the per-device call counter. */
void tt_core_manual_seed(int device, uint64_t seed);
uint64_t tt_core_initial_seed(int device);
/* Next PHILOX state for a random op on `device` (advances the counter). */
void tt_core_next_rng_state(int device, uint64_t state[2]);

/* Program parameters that are host values, as device buffers (the caller
 * owns *out): a 0-dim scalar of dtype from its bytes, and an RNG state
 * (two u64; state NULL draws the next one for the device). */
tt_error *tt_core_upload_scalar(int device, tt_dtype dtype, const void *bytes, tt_buffer **out);
tt_error *tt_core_upload_rng_state(int device, const uint64_t *state, tt_buffer **out);

#endif
