/* The persistent tier of the compilation cache: compiled executables on
 * disk (csrc/cache/disk_cache.h), shared by every eager mode and by
 * torch.compile. Keys are the in-memory cache keys with a domain byte; the
 * directory is partitioned by plugin fingerprint and the build of the core
 * (a rebuilt core never loads programs its older lowerings emitted). Disk
 * problems are warnings: the program is then compiled as if there were no
 * disk cache. */
#ifndef TT_GRAPH_PERSISTENT_H
#define TT_GRAPH_PERSISTENT_H

#include <stddef.h>
#include <stdint.h>

#include "pjrt/runtime.h"

typedef enum { TT_PERSIST_OP = 'P', TT_PERSIST_REGION = 'R' } tt_persist_domain;

/* Loads the executable stored under (domain, key), or NULL on a miss. */
tt_executable *tt_persistent_load(tt_persist_domain domain, const void *key, size_t key_len);
/* Stores exe under (domain, key), best effort. `extra` (may be empty) is
 * stored before the executable and returned by tt_persistent_load_with. */
void tt_persistent_store(tt_persist_domain domain, const void *key, size_t key_len,
                         tt_executable *exe, const void *extra, size_t extra_len);
/* Like tt_persistent_load, also returning a malloc'd copy of `extra`. */
tt_executable *tt_persistent_load_with(tt_persist_domain domain, const void *key, size_t key_len,
                                       void **extra, size_t *extra_len);

typedef struct {
  uint64_t loads, stores, misses;
  double load_seconds;
  int enabled;
} tt_persistent_stats;
tt_persistent_stats tt_persistent_get_stats(void);

#endif
