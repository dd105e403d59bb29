#include "cache/compile_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  struct entry *next;
  uint64_t hash;
  size_t key_len;
  void *value;
  tt_cache_value_free free_fn;
  char key[]; /* key_len bytes */
} entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static entry **buckets; /* guarded by cache_lock */
static size_t n_buckets, n_entries;
static tt_cache_stats stats;

uint64_t tt_hash_bytes(const void *data, size_t len) {
  const unsigned char *p = data;
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

static entry *find(uint64_t hash, const void *key, size_t key_len) {
  if (!n_buckets) return NULL;
  for (entry *e = buckets[hash % n_buckets]; e; e = e->next)
    if (e->hash == hash && e->key_len == key_len && memcmp(e->key, key, key_len) == 0) return e;
  return NULL;
}

static void grow(void) {
  size_t nb = n_buckets ? n_buckets * 2 : 1024;
  entry **fresh = calloc(nb, sizeof *fresh);
  if (!fresh) return; /* keep the old table; chains just get longer */
  for (size_t i = 0; i < n_buckets; i++)
    for (entry *e = buckets[i], *next; e; e = next) {
      next = e->next;
      e->next = fresh[e->hash % nb];
      fresh[e->hash % nb] = e;
    }
  free(buckets);
  buckets = fresh;
  n_buckets = nb;
}

void *tt_cache_lookup(const void *key, size_t key_len) {
  uint64_t h = tt_hash_bytes(key, key_len);
  pthread_mutex_lock(&cache_lock);
  stats.requests++;
  entry *e = find(h, key, key_len);
  if (e) stats.hits++;
  else stats.misses++;
  void *v = e ? e->value : NULL;
  pthread_mutex_unlock(&cache_lock);
  return v;
}

void *tt_cache_insert(const void *key, size_t key_len, void *value, tt_cache_value_free free_fn,
                      double compile_seconds) {
  uint64_t h = tt_hash_bytes(key, key_len);
  entry *e = malloc(sizeof *e + key_len);
  pthread_mutex_lock(&cache_lock);
  entry *existing = find(h, key, key_len);
  if (existing || !e) {
    void *keep = existing ? existing->value : value;
    pthread_mutex_unlock(&cache_lock);
    free(e);
    if (existing && free_fn) free_fn(value);
    return keep; /* without memory for an entry, the caller's value just stays uncached */
  }
  if (n_entries + 1 > n_buckets) grow();
  e->hash = h;
  e->key_len = key_len;
  e->value = value;
  e->free_fn = free_fn;
  memcpy(e->key, key, key_len);
  e->next = buckets[h % n_buckets];
  buckets[h % n_buckets] = e;
  n_entries++;
  stats.entries = n_entries;
  stats.compile_seconds += compile_seconds;
  pthread_mutex_unlock(&cache_lock);
  return value;
}

tt_cache_stats tt_cache_get_stats(void) {
  pthread_mutex_lock(&cache_lock);
  tt_cache_stats s = stats;
  pthread_mutex_unlock(&cache_lock);
  return s;
}

void tt_cache_reset_stats(void) {
  pthread_mutex_lock(&cache_lock);
  uint64_t entries = stats.entries;
  memset(&stats, 0, sizeof stats);
  stats.entries = entries;
  pthread_mutex_unlock(&cache_lock);
}

void tt_cache_clear(void) {
  pthread_mutex_lock(&cache_lock);
  for (size_t i = 0; i < n_buckets; i++)
    for (entry *e = buckets[i], *next; e; e = next) {
      next = e->next;
      if (e->free_fn) e->free_fn(e->value);
      free(e);
    }
  free(buckets);
  buckets = NULL;
  n_buckets = n_entries = 0;
  stats.entries = 0;
  pthread_mutex_unlock(&cache_lock);
}
