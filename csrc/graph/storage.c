#include "graph/storage.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/core.h"
#include "graph/device_checks.h"

static _Atomic(tt_storage_sync_fn) sync_hook; /* set once by the region floor */

void tt_storage_set_sync_hook(tt_storage_sync_fn fn) { atomic_store(&sync_hook, fn); }

tt_error *tt_storage_sync(tt_storage *s, bool for_write) {
  if (atomic_load(&s->region_slot) < 0) return NULL;
  if (!for_write && !atomic_load(&s->region_dirty)) return NULL;
  tt_storage_sync_fn hook = atomic_load(&sync_hook);
  return hook ? hook(s, for_write) : NULL;
}

#define TT_MAX_DEVICES 64

/* Per device: live storage bytes and their peak, bytes ever allocated and
 * freed (resizes count their growth and shrinkage), and the same for the
 * number of storages. Atomics; the peaks by compare-and-swap. */
typedef struct {
  _Atomic int64_t bytes, peak, bytes_allocated, bytes_freed;
  _Atomic int64_t n, n_peak, n_allocated, n_freed;
} mem_counters;
static mem_counters mem[TT_MAX_DEVICES];

static int clamp_device(int device) {
  return device < 0 ? 0 : (device >= TT_MAX_DEVICES ? TT_MAX_DEVICES - 1 : device);
}

static void raise_peak(_Atomic int64_t *peak, int64_t now) {
  int64_t p = atomic_load(peak);
  while (now > p && !atomic_compare_exchange_weak(peak, &p, now)) {
  }
}

static void count(int device, int64_t delta) {
  mem_counters *m = &mem[clamp_device(device)];
  if (delta > 0) atomic_fetch_add(&m->bytes_allocated, delta);
  else atomic_fetch_add(&m->bytes_freed, -delta);
  raise_peak(&m->peak, atomic_fetch_add(&m->bytes, delta) + delta);
}

static void count_storage(int device, int delta) {
  mem_counters *m = &mem[clamp_device(device)];
  atomic_fetch_add(delta > 0 ? &m->n_allocated : &m->n_freed, 1);
  raise_peak(&m->n_peak, atomic_fetch_add(&m->n, delta) + delta);
}

int64_t tt_memory_allocated(int device) { return atomic_load(&mem[clamp_device(device)].bytes); }
int64_t tt_memory_peak(int device) { return atomic_load(&mem[clamp_device(device)].peak); }
void tt_memory_reset_peak(int device) {
  mem_counters *m = &mem[clamp_device(device)];
  atomic_store(&m->peak, atomic_load(&m->bytes));
  atomic_store(&m->n_peak, atomic_load(&m->n));
}

void tt_memory_get_stats(int device, tt_memory_stats *out) {
  mem_counters *m = &mem[clamp_device(device)];
  out->bytes = atomic_load(&m->bytes);
  out->peak_bytes = atomic_load(&m->peak);
  out->bytes_allocated = atomic_load(&m->bytes_allocated);
  out->bytes_freed = atomic_load(&m->bytes_freed);
  out->count = atomic_load(&m->n);
  out->peak_count = atomic_load(&m->n_peak);
  out->count_allocated = atomic_load(&m->n_allocated);
  out->count_freed = atomic_load(&m->n_freed);
}

void tt_memory_reset_accumulated(int device) {
  mem_counters *m = &mem[clamp_device(device)];
  atomic_store(&m->bytes_allocated, 0);
  atomic_store(&m->bytes_freed, 0);
  atomic_store(&m->n_allocated, 0);
  atomic_store(&m->n_freed, 0);
}

tt_storage *tt_storage_new(int device, size_t nbytes) {
  tt_storage *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->nbytes = nbytes;
  s->device = device;
  atomic_init(&s->refs, 1);
  atomic_init(&s->user_alive, true);
  atomic_init(&s->region_slot, -1);
  atomic_init(&s->region_dirty, false);
  count(device, (int64_t)nbytes);
  count_storage(device, 1);
  return s;
}

size_t tt_storage_nbytes(const tt_storage *s) { return s->nbytes; }

void tt_storage_retain(tt_storage *s) { atomic_fetch_add(&s->refs, 1); }

void tt_storage_release(tt_storage *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  tt_buffer_release(s->buffer);
  free(s);
}

void tt_storage_drop(tt_storage *s) {
  if (!s) return;
  count(s->device, -(int64_t)s->nbytes);
  count_storage(s->device, -1);
  atomic_store(&s->user_alive, false);
  tt_storage_release(s);
}

/* Swapping a storage's buffer and taking a reference to it for a host read
 * hold one of these locks (chosen by the storage's address), so that a
 * thread copying a tensor to the host never reads a buffer another thread's
 * in-place write has just released (found by tests/python/test_concurrency.py:
 * a use after free in PJRT_Buffer_IncreaseExternalReferenceCount). */
#define BUFFER_LOCKS 64
static pthread_mutex_t buffer_locks[BUFFER_LOCKS] = {[0 ... BUFFER_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER};

static pthread_mutex_t *buffer_lock(const tt_storage *s) {
  return &buffer_locks[((uintptr_t)s >> 4) % BUFFER_LOCKS];
}

void tt_storage_set_buffer(tt_storage *s, tt_buffer *buf) {
  pthread_mutex_lock(buffer_lock(s));
  tt_buffer *old = s->buffer;
  s->buffer = buf;
  pthread_mutex_unlock(buffer_lock(s));
  tt_buffer_release(old);
}

static pthread_mutex_t *buffer_lock(const tt_storage *s);
static tt_error *read_bytes(tt_storage *s, void *dst, size_t nbytes);

/* A host read waits anyway: the error words of the launches so far are read
 * with it (graph/device_checks.h). */
tt_error *tt_storage_read_bytes(tt_storage *s, void *dst, size_t nbytes) {
  tt_error *err = read_bytes(s, dst, nbytes);
  tt_error *check = tt_device_checks_poll();
  if (!err) return check;
  tt_error_free(check);
  return err;
}

static tt_error *read_bytes(tt_storage *s, void *dst, size_t nbytes) {
  TT_TRY(tt_storage_sync(s, false));
  if (nbytes > s->nbytes) nbytes = s->nbytes;
  pthread_mutex_lock(buffer_lock(s));
  tt_buffer *buf = tt_buffer_retain(s->buffer); /* ours while we read it */
  pthread_mutex_unlock(buffer_lock(s));
  if (!buf) {
    memset(dst, 0, nbytes);
    return NULL;
  }
  tt_error *err = NULL;
  size_t have = tt_buffer_nbytes(buf);
  if (have == nbytes) {
    err = tt_buffer_to_host(buf, dst, nbytes);
  } else {
    char *tmp = malloc(have ? have : 1);
    if (!tmp) {
      err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory reading %zu bytes", have);
    } else {
      err = tt_buffer_to_host(buf, tmp, have);
      if (!err) {
        size_t n = have < nbytes ? have : nbytes;
        memcpy(dst, tmp, n);
        memset((char *)dst + n, 0, nbytes - n);
      }
      free(tmp);
    }
  }
  tt_buffer_release(buf);
  return err;
}

tt_error *tt_storage_write_bytes(tt_storage *s, tt_dtype dtype, const void *src, size_t nbytes) {
  size_t item = tt_dtype_size(dtype);
  if (item == 0 || nbytes % item)
    return tt_error_new(TT_ERR_TYPE, "storage of %zu bytes cannot hold %s elements", nbytes,
                        tt_dtype_name(dtype));
  TT_TRY(tt_storage_sync(s, true));
  tt_runtime *rt = tt_core_runtime();
  if (!rt) return tt_error_new(TT_ERR_RUNTIME, "torch_tpu runtime is not initialized");
  int64_t n = (int64_t)(nbytes / item);
  tt_buffer *buf = NULL;
  TT_TRY(tt_buffer_from_host(rt, s->device, dtype, &n, 1, src, &buf));
  tt_storage_set_buffer(s, buf);
  return NULL;
}

tt_error *tt_storage_ensure(tt_storage *s, tt_dtype dtype, tt_buffer **out) {
  size_t item = tt_dtype_size(dtype);
  if (item == 0 || s->nbytes % item)
    return tt_error_new(TT_ERR_TYPE, "storage of %zu bytes cannot be read as %s", s->nbytes,
                        tt_dtype_name(dtype));
  TT_TRY(tt_storage_sync(s, false));
  int64_t n = (int64_t)(s->nbytes / item);
  pthread_mutex_lock(buffer_lock(s));
  tt_buffer *buf = s->buffer;
  bool usable = buf && tt_buffer_dtype(buf) == dtype && tt_buffer_numel(buf) == n;
  if (usable) tt_buffer_retain(buf);
  pthread_mutex_unlock(buffer_lock(s));
  if (usable) {
    *out = buf;
    return NULL;
  }
  /* Missing or reinterpreted: go through host bytes (rare: uninitialized
   * memory, Tensor.view(dtype), untyped storage copies). */
  void *bytes = calloc(1, s->nbytes ? s->nbytes : 1);
  if (!bytes) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory (%zu bytes)", s->nbytes);
  tt_error *err = tt_storage_read_bytes(s, bytes, s->nbytes);
  if (!err) err = tt_storage_write_bytes(s, dtype, bytes, s->nbytes);
  free(bytes);
  if (err) return err;
  pthread_mutex_lock(buffer_lock(s));
  *out = tt_buffer_retain(s->buffer);
  pthread_mutex_unlock(buffer_lock(s));
  return NULL;
}

tt_error *tt_storage_resize(tt_storage *s, size_t nbytes) {
  if (nbytes == s->nbytes) return NULL;
  TT_TRY(tt_storage_sync(s, true));
  if (!s->buffer) {
    count(s->device, (int64_t)nbytes - (int64_t)s->nbytes);
    s->nbytes = nbytes;
    return NULL;
  }
  tt_dtype dt = tt_buffer_dtype(s->buffer);
  size_t item = tt_dtype_size(dt);
  if (nbytes % item) dt = TT_U8, item = 1;
  char *bytes = calloc(1, nbytes ? nbytes : 1);
  if (!bytes) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory (%zu bytes)", nbytes);
  size_t keep = nbytes < s->nbytes ? nbytes : s->nbytes;
  tt_error *err = tt_storage_read_bytes(s, bytes, keep);
  if (!err) err = tt_storage_write_bytes(s, dt, bytes, nbytes);
  free(bytes);
  if (err) return err;
  count(s->device, (int64_t)nbytes - (int64_t)s->nbytes);
  s->nbytes = nbytes;
  return NULL;
}
