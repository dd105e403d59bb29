/* The in-memory compilation cache: key bytes -> compiled program.
 *
 * Keys are opaque byte strings built by the caller (the op, its static
 * arguments, input shapes/dtypes/layouts, compile options); the plugin
 * fingerprint is fixed per process, so it is added by the persistent tier.
 * Values are owned by the cache and freed with the destructor given at
 * insert. Thread-safe. */
#ifndef TT_CACHE_COMPILE_CACHE_H
#define TT_CACHE_COMPILE_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef void (*tt_cache_value_free)(void *value);

/* Returns the value for key, or NULL; counts a request (and a hit). */
void *tt_cache_lookup(const void *key, size_t key_len);
/* Inserts key -> value with the seconds its compile took. If the key is
 * already present (a racing insert), frees `value` and returns the existing
 * one; otherwise returns value. */
void *tt_cache_insert(const void *key, size_t key_len, void *value, tt_cache_value_free free_fn,
                      double compile_seconds);

typedef struct {
  uint64_t requests;
  uint64_t hits;
  uint64_t misses;
  uint64_t entries;
  double compile_seconds;
} tt_cache_stats;

tt_cache_stats tt_cache_get_stats(void);
void tt_cache_reset_stats(void);
/* Drops every entry (used by tests and `cache clear`). */
void tt_cache_clear(void);

uint64_t tt_hash_bytes(const void *data, size_t len);

#endif
