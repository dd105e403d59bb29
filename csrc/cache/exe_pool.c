/* The pool of live executables (see exe_pool.h). */
#include "cache/exe_pool.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/settings.h"

/* Mappings one loaded XLA:CPU executable holds (measured: 3 per program in
 * Strict and Fused eager), rounded up. */
enum { MAPS_PER_EXECUTABLE = 4 };

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
/* guarded by pool_lock: */
static tt_pool_entry *lru_head, *lru_tail; /* most / least recently used */
static size_t n_live;
static size_t cap_override; /* 0: the setting */
static size_t cap_cached;   /* 0: not read yet */
static long map_limit = -1; /* -1: not read yet; 0: unknown */
static tt_pool_stats stats;
static size_t compiles_since_check;
static double last_check_time;

/* ------------------------------------------------------------ map count */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t tt_pool_count_maps(void) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[65536];
  size_t lines = 0;
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    for (const char *p = buf; (p = memchr(p, '\n', (size_t)(buf + n - p))); p++) lines++;
  close(fd);
  return lines;
}

static long read_map_limit(void) {
  FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
  long v = 0;
  if (f) {
    if (fscanf(f, "%ld", &v) != 1 || v < 0) v = 0;
    fclose(f);
  }
  return v;
}

static long map_limit_locked(void) {
  if (map_limit < 0) map_limit = read_map_limit();
  return map_limit;
}

/* Mappings to keep free for a compile (LLVM's sections, new threads). */
static size_t map_margin(long limit) {
  size_t m = (size_t)limit / 16;
  return m > 1024 ? m : 1024;
}

/* ------------------------------------------------------------ the cap */

static size_t cap_locked(void) {
  if (cap_override) return cap_override;
  if (!cap_cached) {
    size_t cap = (size_t)tt_setting_int_or_default(TT_SETTING_MAX_LIVE_EXECUTABLES);
    long limit = map_limit_locked();
    size_t by_maps = limit > 0 ? (size_t)limit / (2 * MAPS_PER_EXECUTABLE) : 0;
    if (limit > 0 && by_maps < cap) cap = by_maps ? by_maps : 1;
    cap_cached = cap ? cap : 1;
  }
  return cap_cached;
}

/* ------------------------------------------------------------ entries */

static void unlink_locked(tt_pool_entry *e) {
  if (e->prev) e->prev->next = e->next;
  else lru_head = e->next;
  if (e->next) e->next->prev = e->prev;
  else lru_tail = e->prev;
  e->prev = e->next = NULL;
}

static void push_front_locked(tt_pool_entry *e) {
  e->prev = NULL;
  e->next = lru_head;
  if (lru_head) lru_head->prev = e;
  lru_head = e;
  if (!lru_tail) lru_tail = e;
}

/* Takes the least recently used executable out of its entry (not `keep`);
 * NULL when there is none. The caller releases it after unlocking. */
static tt_executable *pop_lru_locked(const tt_pool_entry *keep) {
  tt_pool_entry *e = lru_tail;
  if (e == keep && e) e = e->prev;
  if (!e) return NULL;
  unlink_locked(e);
  tt_executable *exe = e->exe;
  e->exe = NULL;
  n_live--;
  stats.evictions++;
  return exe;
}

typedef struct {
  tt_pool_entry entry; /* first: the pointer handed out */
  atomic_int refs;
} shared_entry;

tt_pool_entry *tt_pool_entry_new(void) {
  shared_entry *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  atomic_init(&s->refs, 1);
  return &s->entry;
}

tt_pool_entry *tt_pool_entry_retain(tt_pool_entry *e) {
  if (e) atomic_fetch_add(&((shared_entry *)e)->refs, 1);
  return e;
}

void tt_pool_entry_release(tt_pool_entry *e) {
  if (!e || atomic_fetch_sub(&((shared_entry *)e)->refs, 1) != 1) return;
  tt_pool_entry_clear(e);
  free(e);
}

void tt_pool_entry_clear(tt_pool_entry *e) {
  if (!e) return;
  pthread_mutex_lock(&pool_lock);
  tt_executable *exe = e->exe;
  if (exe) {
    unlink_locked(e);
    e->exe = NULL;
    n_live--;
  }
  pthread_mutex_unlock(&pool_lock);
  tt_executable_release(exe);
}

tt_executable *tt_pool_acquire(tt_pool_entry *e) {
  if (!e) return NULL;
  pthread_mutex_lock(&pool_lock);
  tt_executable *exe = e->exe;
  if (exe) {
    tt_executable_retain(exe);
    if (lru_head != e) {
      unlink_locked(e);
      push_front_locked(e);
    }
  }
  pthread_mutex_unlock(&pool_lock);
  return exe;
}

tt_executable *tt_pool_install(tt_pool_entry *e, tt_executable *exe) {
  if (!e || !exe) return exe;
  pthread_mutex_lock(&pool_lock);
  if (e->exe) { /* a racing install won */
    tt_executable *have = tt_executable_retain(e->exe);
    pthread_mutex_unlock(&pool_lock);
    tt_executable_release(exe);
    return have;
  }
  e->exe = exe;
  push_front_locked(e);
  n_live++;
  stats.installs++;
  tt_executable_retain(exe); /* the caller's */
  size_t cap = cap_locked();
  while (n_live > cap) {
    tt_executable *old = pop_lru_locked(e);
    if (!old) break;
    pthread_mutex_unlock(&pool_lock);
    tt_executable_release(old); /* destroyed once its launches completed */
    pthread_mutex_lock(&pool_lock);
  }
  if (n_live > stats.peak) stats.peak = n_live;
  pthread_mutex_unlock(&pool_lock);
  return exe;
}

size_t tt_pool_evict(size_t keep) {
  size_t n = 0;
  pthread_mutex_lock(&pool_lock);
  while (n_live > keep) {
    tt_executable *old = pop_lru_locked(NULL);
    if (!old) break;
    n++;
    pthread_mutex_unlock(&pool_lock);
    tt_executable_release(old);
    pthread_mutex_lock(&pool_lock);
  }
  pthread_mutex_unlock(&pool_lock);
  return n;
}

void tt_pool_set_cap(size_t cap) {
  pthread_mutex_lock(&pool_lock);
  cap_override = cap;
  cap_cached = 0; /* re-read the setting (tests change it) */
  size_t now = cap_locked();
  pthread_mutex_unlock(&pool_lock);
  tt_pool_evict(now);
}

size_t tt_pool_cap(void) {
  pthread_mutex_lock(&pool_lock);
  size_t c = cap_locked();
  pthread_mutex_unlock(&pool_lock);
  return c;
}

/* ------------------------------------------------------------ map guard */

/* Whether to count the mappings before this compile: every 16 compiles,
 * after a second without a count (mappings the user made meanwhile), and on
 * every compile once the estimate (MAPS_PER_EXECUTABLE a compile since the
 * last count) comes within 64 compiles of the margin. */
static bool check_due_locked(long limit) {
  double now = now_seconds();
  size_t estimate = stats.maps_last + MAPS_PER_EXECUTABLE * compiles_since_check;
  bool due = compiles_since_check >= 16 || now - last_check_time > 1.0 ||
             estimate + map_margin(limit) + 64 * MAPS_PER_EXECUTABLE >= (size_t)limit;
  compiles_since_check++;
  return due;
}

static void note_check(size_t maps) {
  pthread_mutex_lock(&pool_lock);
  stats.map_checks++;
  stats.maps_last = maps;
  compiles_since_check = 0;
  last_check_time = now_seconds();
  pthread_mutex_unlock(&pool_lock);
}

static tt_error *near_limit_error(size_t maps, long limit) {
  return tt_error_new(
      TT_ERR_OUT_OF_MEMORY,
      "the process holds %zu memory mappings, near the kernel's limit vm.max_map_count = %ld; "
      "compiling another program could exceed it (which crashes the XLA compiler). Free "
      "memory mappings, raise the limit (sysctl -w vm.max_map_count=...), or lower "
      "TORCH_TPU_MAX_LIVE_EXECUTABLES (now %zu) so fewer compiled programs stay loaded",
      maps, limit, tt_pool_cap());
}

tt_error *tt_pool_before_compile(void) {
  pthread_mutex_lock(&pool_lock);
  long limit = map_limit_locked();
  bool due = limit > 0 && check_due_locked(limit);
  pthread_mutex_unlock(&pool_lock);
  if (!due) return NULL;
  size_t maps = tt_pool_count_maps();
  size_t margin = map_margin(limit);
  /* Close to the margin: unload until 128 compiles' worth of mappings are
   * free beyond it (so that the counts that follow are rare again). */
  size_t near = margin + 64 * MAPS_PER_EXECUTABLE, target = margin + 128 * MAPS_PER_EXECUTABLE;
  bool evicting = maps && maps + near >= (size_t)limit;
  while (evicting && maps + target >= (size_t)limit) {
    pthread_mutex_lock(&pool_lock);
    size_t live = n_live;
    pthread_mutex_unlock(&pool_lock);
    if (live == 0) break;
    /* each unloaded executable frees its mappings once its launches end */
    tt_pool_evict(live / 2);
    maps = tt_pool_count_maps();
  }
  note_check(maps);
  if (maps && maps + margin >= (size_t)limit) return near_limit_error(maps, limit);
  return NULL;
}

tt_error *tt_pool_explain_compile_error(tt_error *err) {
  if (!err) return NULL;
  pthread_mutex_lock(&pool_lock);
  long limit = map_limit_locked();
  pthread_mutex_unlock(&pool_lock);
  size_t maps = limit > 0 ? tt_pool_count_maps() : 0;
  if (!maps || maps + map_margin(limit) < (size_t)limit) return err;
  tt_error *why = near_limit_error(maps, limit);
  tt_error *out = tt_error_new(TT_ERR_OUT_OF_MEMORY, "%s (the compiler said: %s)",
                               tt_error_message(why), tt_error_message(err));
  tt_error_free(why);
  tt_error_free(err);
  return out;
}

/* ------------------------------------------------------------ stats */

tt_pool_stats tt_pool_get_stats(void) {
  pthread_mutex_lock(&pool_lock);
  tt_pool_stats s = stats;
  s.live = n_live;
  s.cap = cap_locked();
  s.max_map_count = map_limit_locked() > 0 ? (uint64_t)map_limit : 0;
  pthread_mutex_unlock(&pool_lock);
  return s;
}

void tt_pool_reset_peak(void) {
  pthread_mutex_lock(&pool_lock);
  stats.peak = n_live;
  pthread_mutex_unlock(&pool_lock);
}
