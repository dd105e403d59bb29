/* Device storages: what a PyTorch StorageImpl's DataPtr points to.
 *
 * A storage owns at most one flat device array (tt_buffer). The array is
 * created lazily by the first write and replaced wholesale by later writes,
 * so every view of the storage sees the new contents through the same
 * tt_storage. Like PyTorch tensors, one storage must not be written from two
 * threads at once. */
#ifndef TT_GRAPH_STORAGE_H
#define TT_GRAPH_STORAGE_H

#ifndef __cplusplus
#include <stdatomic.h>
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "pjrt/runtime.h"

#ifndef __cplusplus /* C++ sees the handle only (no _Atomic there) */
struct tt_storage {
  size_t nbytes;
  int device;
  tt_buffer *buffer; /* NULL until first written; 1-D of buffer's dtype */
  /* PyTorch's reference (the DataPtr) plus one per open fused region that
   * records the storage: a region may outlive the tensor. */
  _Atomic int refs;
  _Atomic bool user_alive; /* false once PyTorch dropped the storage */
  /* Fused eager: the storage's slot in the open region (-1 when none) and
   * whether the region holds a newer value than `buffer`. Set under the
   * region lock; read by storage accessors to decide when to flush. */
  _Atomic int region_slot;
  _Atomic bool region_dirty;
};
#endif
typedef struct tt_storage tt_storage;

size_t tt_storage_nbytes(const tt_storage *s);

/* Allocates the handle (no device memory yet) and counts nbytes as
 * allocated on `device`. Returns NULL on host OOM. The caller holds the
 * user reference. */
tt_storage *tt_storage_new(int device, size_t nbytes);
/* PyTorch dropped the storage: uncounts nbytes and releases the user
 * reference. Accepts NULL. */
void tt_storage_drop(tt_storage *s);
/* References held by fused regions. */
void tt_storage_retain(tt_storage *s);
void tt_storage_release(tt_storage *s);

/* Fused eager: before the storage is read (for_write false) or replaced
 * from outside the open region, flushes the region if it holds a newer
 * value (or, for a write, reads the storage at all). A no-op when the
 * storage is in no region; otherwise calls the sync hook, which the region
 * floor registers before the first storage joins a region. */
tt_error *tt_storage_sync(tt_storage *s, bool for_write);
typedef tt_error *(*tt_storage_sync_fn)(tt_storage *s, bool for_write);
void tt_storage_set_sync_hook(tt_storage_sync_fn fn);

/* Replaces the buffer (takes ownership of buf, releases the old one). The
 * caller has synced the storage for writing. */
void tt_storage_set_buffer(tt_storage *s, tt_buffer *buf);

/* Grows or shrinks nbytes keeping the common prefix of the contents. */
tt_error *tt_storage_resize(tt_storage *s, size_t nbytes);

/* Makes sure the storage holds a buffer of `dtype` with nbytes/itemsize
 * elements: creates zeros if it has none, reinterprets the bytes (through
 * the host) if it holds another dtype. Returns a new reference to the
 * buffer, taken under the storage's buffer lock: the caller releases it once
 * the launch that reads it has been enqueued, so another thread replacing
 * the storage's buffer meanwhile cannot free it under the launch. */
tt_error *tt_storage_ensure(tt_storage *s, tt_dtype dtype, tt_buffer **out);

/* Copies nbytes of raw storage bytes to host memory. */
tt_error *tt_storage_read_bytes(tt_storage *s, void *dst, size_t nbytes);
/* Replaces the whole contents with host bytes interpreted as dtype. */
tt_error *tt_storage_write_bytes(tt_storage *s, tt_dtype dtype, const void *src, size_t nbytes);

/* Memory accounting per device (bytes of live storages). */
int64_t tt_memory_allocated(int device);
int64_t tt_memory_peak(int device);
void tt_memory_reset_peak(int device);

/* A device's storage counters (what torch.tpu.memory_stats() reports as
 * allocated_bytes / allocation): live bytes and storages, their peaks
 * since the last reset, and bytes and storages ever allocated and freed
 * since the last tt_memory_reset_accumulated. A storage counts from its
 * creation (before any device buffer exists) until the last tensor using
 * it dies. */
typedef struct {
  int64_t bytes, peak_bytes, bytes_allocated, bytes_freed;
  int64_t count, peak_count, count_allocated, count_freed;
} tt_memory_stats;
void tt_memory_get_stats(int device, tt_memory_stats *out);
void tt_memory_reset_accumulated(int device);

#endif
