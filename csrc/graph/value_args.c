/* The value-argument table (see value_args.h): a fixed array of hash
 * buckets, each a list of immutable entries. Inserts take the lock; finds
 * read without it (an entry is complete before it is linked, with release
 * order), and skip hashing while the table is empty, so ops that never
 * depend on values pay one atomic load. */
#include "graph/value_args.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/compile_cache.h"

typedef struct entry {
  struct entry *_Atomic next;
  uint64_t hash;
  size_t key_len;
  int n;
  int *args;           /* points into the same allocation, after the key */
  unsigned char key[]; /* key_len bytes */
} entry;

#define N_BUCKETS 1024

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* serializes inserts */
static entry *_Atomic buckets[N_BUCKETS]; /* entries never change once linked */
static _Atomic int n_entries;

static entry *find(uint64_t h, const void *key, size_t key_len) {
  for (entry *e = atomic_load_explicit(&buckets[h % N_BUCKETS], memory_order_acquire); e;
       e = atomic_load_explicit(&e->next, memory_order_acquire))
    if (e->hash == h && e->key_len == key_len && memcmp(e->key, key, key_len) == 0) return e;
  return NULL;
}

const int *tt_value_args_find(const void *key, size_t key_len, int *n) {
  *n = 0;
  if (atomic_load_explicit(&n_entries, memory_order_acquire) == 0) return NULL;
  entry *e = find(tt_hash_bytes(key, key_len), key, key_len);
  *n = e ? e->n : 0;
  return e ? e->args : NULL;
}

bool tt_value_args_insert(const void *key, size_t key_len, const int *args, int n) {
  uint64_t h = tt_hash_bytes(key, key_len);
  size_t args_at = (key_len + _Alignof(int) - 1) / _Alignof(int) * _Alignof(int);
  entry *e = malloc(sizeof *e + args_at + sizeof(int) * (size_t)n);
  if (!e) return false;
  e->hash = h;
  e->key_len = key_len;
  e->n = n;
  e->args = (int *)(void *)(e->key + args_at);
  memcpy(e->key, key, key_len);
  memcpy(e->args, args, sizeof(int) * (size_t)n);
  pthread_mutex_lock(&lock);
  if (find(h, key, key_len)) {
    free(e);
  } else {
    atomic_store_explicit(&e->next, atomic_load(&buckets[h % N_BUCKETS]), memory_order_relaxed);
    atomic_store_explicit(&buckets[h % N_BUCKETS], e, memory_order_release);
    atomic_fetch_add_explicit(&n_entries, 1, memory_order_release);
  }
  pthread_mutex_unlock(&lock);
  return true;
}
