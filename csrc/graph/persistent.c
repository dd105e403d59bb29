#include "graph/persistent.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/compile_cache.h"
#include "cache/disk_cache.h"
#include "graph/core.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tt_disk_cache *disk;
static int opened; /* 0: not yet tried; 1: tried (disk may be NULL) */
static tt_persistent_stats stats;

static void warn(const char *what, tt_error *err) {
  fprintf(stderr, "torch_tpu: persistent compilation cache: %s: %s\n", what, tt_error_message(err));
  tt_error_free(err);
}

/* Opens the cache on first use (lock held). */
static tt_disk_cache *cache_locked(void) {
  if (opened) return disk;
  opened = 1;
  tt_runtime *rt = tt_core_runtime();
  if (!rt) return NULL;
  char code_id[33];
  tt_error *err = tt_disk_cache_code_id(code_id);
  if (err) {
    warn("disabled (no build id for the core)", err);
    return NULL;
  }
  /* XLA_FLAGS change what the plugin compiles: each setting gets its own
   * partition (hashed, the flags can be long). */
  const char *xla_flags = getenv("XLA_FLAGS");
  char flags_part[40] = "";
  if (xla_flags && *xla_flags)
    snprintf(flags_part, sizeof flags_part, ";xla_flags=%016llx",
             (unsigned long long)tt_hash_bytes(xla_flags, strlen(xla_flags)));
  char fingerprint[1024];
  snprintf(fingerprint, sizeof fingerprint, "%s;core=%s%s", tt_runtime_fingerprint(rt), code_id,
           flags_part);
  err = tt_disk_cache_open_default(fingerprint, &disk);
  if (err) {
    warn("disabled", err);
    disk = NULL;
  }
  stats.enabled = disk != NULL;
  return disk;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Disk key: domain byte, then the in-memory key. */
static unsigned char *disk_key(tt_persist_domain domain, const void *key, size_t key_len) {
  unsigned char *k = malloc(key_len + 1);
  if (!k) return NULL;
  k[0] = (unsigned char)domain;
  memcpy(k + 1, key, key_len);
  return k;
}

/* Blob layout: u64 extra_len, extra bytes, executable bytes. */
tt_executable *tt_persistent_load_with(tt_persist_domain domain, const void *key, size_t key_len,
                                       void **extra, size_t *extra_len) {
  if (extra) *extra = NULL;
  if (extra_len) *extra_len = 0;
  pthread_mutex_lock(&lock);
  tt_disk_cache *c = cache_locked();
  pthread_mutex_unlock(&lock);
  if (!c) return NULL;
  double t0 = now_seconds();
  unsigned char *k = disk_key(domain, key, key_len);
  if (!k) return NULL;
  void *blob = NULL;
  size_t len = 0;
  tt_error *err = tt_disk_cache_get(c, k, key_len + 1, &blob, &len);
  free(k);
  if (err) warn("read failed", err);
  tt_executable *exe = NULL;
  uint64_t n_extra = 0;
  if (blob && len >= sizeof n_extra) memcpy(&n_extra, blob, sizeof n_extra);
  if (blob && len >= sizeof n_extra && n_extra <= len - sizeof n_extra) {
    const unsigned char *p = (const unsigned char *)blob + sizeof n_extra;
    err = tt_executable_deserialize(tt_core_runtime(), p + n_extra,
                                    len - sizeof n_extra - (size_t)n_extra, &exe);
    if (err) {
      warn("could not load a stored executable (recompiling)", err);
      exe = NULL;
    } else if (extra && n_extra) {
      *extra = malloc((size_t)n_extra);
      if (*extra) {
        memcpy(*extra, p, (size_t)n_extra);
        *extra_len = (size_t)n_extra;
      } else {
        tt_executable_release(exe);
        exe = NULL;
      }
    }
  }
  free(blob);
  pthread_mutex_lock(&lock);
  if (exe) {
    stats.loads++;
    stats.load_seconds += now_seconds() - t0;
  } else {
    stats.misses++;
  }
  pthread_mutex_unlock(&lock);
  return exe;
}

tt_executable *tt_persistent_load(tt_persist_domain domain, const void *key, size_t key_len) {
  return tt_persistent_load_with(domain, key, key_len, NULL, NULL);
}

void tt_persistent_store(tt_persist_domain domain, const void *key, size_t key_len,
                         tt_executable *exe, const void *extra, size_t extra_len) {
  pthread_mutex_lock(&lock);
  tt_disk_cache *c = cache_locked();
  pthread_mutex_unlock(&lock);
  if (!c || !exe) return;
  void *bytes = NULL;
  size_t n = 0;
  tt_error *err = tt_executable_serialize(exe, &bytes, &n);
  if (err) {
    warn("could not serialize an executable", err);
    return;
  }
  uint64_t n_extra = extra_len;
  size_t len = sizeof n_extra + extra_len + n;
  unsigned char *blob = malloc(len);
  unsigned char *k = disk_key(domain, key, key_len);
  if (blob && k) {
    memcpy(blob, &n_extra, sizeof n_extra);
    if (extra_len) memcpy(blob + sizeof n_extra, extra, extra_len);
    memcpy(blob + sizeof n_extra + extra_len, bytes, n);
    err = tt_disk_cache_put(c, k, key_len + 1, blob, len);
    if (err) warn("write failed", err);
    else {
      pthread_mutex_lock(&lock);
      stats.stores++;
      pthread_mutex_unlock(&lock);
    }
  }
  free(k);
  free(blob);
  free(bytes);
}

tt_persistent_stats tt_persistent_get_stats(void) {
  pthread_mutex_lock(&lock);
  tt_persistent_stats s = stats;
  pthread_mutex_unlock(&lock);
  return s;
}
