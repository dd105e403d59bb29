#include "graph/core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/settings.h"

#define TT_MAX_RNG_DEVICES 64

static pthread_mutex_t core_lock = PTHREAD_MUTEX_INITIALIZER;
static tt_runtime *core_runtime;      /* guarded by core_lock until set, then read-only */
static tt_error *core_init_error;     /* remembered failure */
static int core_devices;
static _Atomic bool core_ready; /* set once the runtime exists: lock-free fast path */

typedef struct {
  uint64_t seed;
  uint64_t counter;
} rng_state;

static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;
static rng_state rng[TT_MAX_RNG_DEVICES] = {{67280421310721ULL, 0}}; /* torch's default seed */
static int rng_initialized;

tt_error *tt_core_init(const char *const *search_dirs) {
  pthread_mutex_lock(&core_lock);
  tt_error *result = NULL;
  if (core_runtime) goto done;
  if (core_init_error) {
    result = tt_error_new(tt_error_code_of(core_init_error), "%s", tt_error_message(core_init_error));
    goto done;
  }
  char path[4096];
  int64_t devices = 1;
  result = tt_setting_int(TT_SETTING_NUM_DEVICES, &devices);
  if (result) goto remember;
  result = tt_runtime_find_plugin(search_dirs, path, sizeof path);
  if (!result) result = tt_runtime_open(path, (int)devices, &core_runtime);
  if (!result) {
    core_devices = tt_runtime_device_count(core_runtime);
    atomic_store(&core_ready, true);
    goto done;
  }
remember:
  core_init_error = tt_error_new(tt_error_code_of(result), "%s", tt_error_message(result));
done:
  pthread_mutex_unlock(&core_lock);
  return result;
}

bool tt_core_initialized(void) { return atomic_load(&core_ready); }

tt_runtime *tt_core_runtime(void) {
  if (atomic_load(&core_ready)) return core_runtime; /* never changes once ready */
  pthread_mutex_lock(&core_lock);
  tt_runtime *rt = core_runtime;
  pthread_mutex_unlock(&core_lock);
  return rt;
}

int tt_core_device_count(void) {
  pthread_mutex_lock(&core_lock);
  int n = core_runtime ? core_devices : 0;
  pthread_mutex_unlock(&core_lock);
  return n;
}

static void ensure_rng_defaults(void) {
  if (rng_initialized) return;
  for (int i = 0; i < TT_MAX_RNG_DEVICES; i++) rng[i] = (rng_state){67280421310721ULL, 0};
  rng_initialized = 1;
}

static int rng_index(int device) {
  return device < 0 ? 0 : (device >= TT_MAX_RNG_DEVICES ? TT_MAX_RNG_DEVICES - 1 : device);
}

void tt_core_manual_seed(int device, uint64_t seed) {
  pthread_mutex_lock(&rng_lock);
  ensure_rng_defaults();
  rng[rng_index(device)] = (rng_state){seed, 0};
  pthread_mutex_unlock(&rng_lock);
}

uint64_t tt_core_initial_seed(int device) {
  pthread_mutex_lock(&rng_lock);
  ensure_rng_defaults();
  uint64_t s = rng[rng_index(device)].seed;
  pthread_mutex_unlock(&rng_lock);
  return s;
}

/* splitmix64: decorrelates (seed, counter) pairs into PHILOX keys. */
static uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void tt_core_next_rng_state(int device, uint64_t state[2]) {
  pthread_mutex_lock(&rng_lock);
  ensure_rng_defaults();
  rng_state *r = &rng[rng_index(device)];
  uint64_t c = r->counter++;
  state[0] = mix64(r->seed ^ mix64(c));
  state[1] = mix64(state[0] + 0x632BE59BD9B4E019ULL);
  pthread_mutex_unlock(&rng_lock);
}

tt_error *tt_core_upload_scalar(int device, tt_dtype dtype, const void *bytes, tt_buffer **out) {
  return tt_buffer_from_host(tt_core_runtime(), device, dtype, NULL, 0, bytes, out);
}

tt_error *tt_core_upload_rng_state(int device, const uint64_t *state, tt_buffer **out) {
  uint64_t next[2];
  if (!state) {
    tt_core_next_rng_state(device, next);
    state = next;
  }
  int64_t two = 2;
  return tt_buffer_from_host(tt_core_runtime(), device, TT_U64, &two, 1, state, out);
}
