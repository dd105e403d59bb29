/* PJRT runtime, part 2: buffers, compile, execute, (de)serialization. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/trace.h"
#include "pjrt/runtime_internal.h"

static tt_error *oom(void) { return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"); }

static tt_error *check_device(const tt_runtime *rt, int device, const char *fn) {
  if (device < 0 || device >= rt->num_devices)
    return tt_error_new(TT_ERR_INDEX, "%s: device %d out of range (the %s client has %d)", fn,
                        device, rt->platform, rt->num_devices);
  return NULL;
}

void tt_pjrt_buffer_destroy(const PJRT_Api *api, PJRT_Buffer *b) {
  if (!b) return;
  PJRT_Buffer_Destroy_Args d = {.struct_size = PJRT_Buffer_Destroy_Args_SIZE, .buffer = b};
  tt_error_free(tt_pjrt_error(api, api->PJRT_Buffer_Destroy(&d), TT_ERR_RUNTIME, "destroy"));
}

static void pjrt_executable_destroy(const PJRT_Api *api, PJRT_Executable *e) {
  if (!e) return;
  PJRT_Executable_Destroy_Args d = {.struct_size = PJRT_Executable_Destroy_Args_SIZE,
                                    .executable = e};
  tt_error_free(tt_pjrt_error(api, api->PJRT_Executable_Destroy(&d), TT_ERR_RUNTIME, "destroy"));
}

/* The program's per-run scratch size, or -1 where the plugin does not say. */
static int64_t read_temp_bytes(const PJRT_Api *api, PJRT_Executable *e) {
  if (!TT_PJRT_HAS(api, PJRT_Executable_GetCompiledMemoryStats)) return -1;
  PJRT_Executable_GetCompiledMemoryStats_Args m = {
      .struct_size = PJRT_Executable_GetCompiledMemoryStats_Args_SIZE, .executable = e};
  tt_error *err = tt_pjrt_error(api, api->PJRT_Executable_GetCompiledMemoryStats(&m),
                                TT_ERR_RUNTIME, "PJRT_Executable_GetCompiledMemoryStats failed");
  if (err) {
    tt_error_free(err); /* only a tuning hint: unknown is fine */
    return -1;
  }
  return m.temp_size_in_bytes;
}

int64_t tt_executable_temp_bytes(const tt_executable *exe) { return exe ? exe->temp_bytes : -1; }

/* ---------------------------------------------------------------- buffers */

tt_error *tt_buffer_wrap(tt_runtime *rt, PJRT_Buffer *pb, int device, tt_dtype dtype, int ndim,
                         const int64_t *dims, tt_buffer **out) {
  tt_buffer *b = malloc(sizeof *b);
  if (!b) {
    tt_pjrt_buffer_destroy(rt->api, pb);
    return oom();
  }
  atomic_init(&b->refs, 1);
  b->donated = false;
  b->device = device;
  b->rt = rt;
  b->buf = pb;
  b->dtype = dtype;
  b->ndim = ndim;
  if (ndim > 0) memcpy(b->dims, dims, (size_t)ndim * sizeof *dims);
  tt_runtime_retain_internal(rt);
  atomic_fetch_add_explicit(&rt->live_buffers, 1, memory_order_relaxed);
  long long bytes = (long long)tt_buffer_nbytes(b);
  long long now = atomic_fetch_add(&rt->buffer_bytes, bytes) + bytes;
  long long peak = atomic_load(&rt->peak_buffer_bytes);
  while (now > peak && !atomic_compare_exchange_weak(&rt->peak_buffer_bytes, &peak, now)) {
  }
  *out = b;
  return NULL;
}

/* Reads dtype and dims from the plugin (outputs of unknown shape). */
tt_error *tt_buffer_wrap_queried(tt_runtime *rt, PJRT_Buffer *pb, int device, tt_buffer **out) {
  const PJRT_Api *api = rt->api;
  PJRT_Buffer_ElementType_Args t = {.struct_size = PJRT_Buffer_ElementType_Args_SIZE, .buffer = pb};
  PJRT_Buffer_Dimensions_Args d = {.struct_size = PJRT_Buffer_Dimensions_Args_SIZE, .buffer = pb};
  tt_error *err = tt_pjrt_error(api, api->PJRT_Buffer_ElementType(&t), TT_ERR_RUNTIME,
                                "PJRT_Buffer_ElementType failed");
  if (!err)
    err = tt_pjrt_error(api, api->PJRT_Buffer_Dimensions(&d), TT_ERR_RUNTIME,
                        "PJRT_Buffer_Dimensions failed");
  tt_dtype dt = TT_F32;
  if (!err && !tt_dtype_of_pjrt(t.type, &dt))
    err = tt_error_new(TT_ERR_TYPE, "the plugin returned a buffer of unsupported PJRT type %d",
                       (int)t.type);
  if (!err && d.num_dims > TT_MAX_DIMS)
    err = tt_error_new(TT_ERR_NOT_IMPLEMENTED, "the plugin returned a rank-%zu buffer (max %d)",
                       d.num_dims, TT_MAX_DIMS);
  if (err) {
    tt_pjrt_buffer_destroy(api, pb);
    return err;
  }
  return tt_buffer_wrap(rt, pb, device, dt, (int)d.num_dims, d.dims, out);
}

static tt_error *tt_buffer_from_host_untraced(tt_runtime *rt, int device, tt_dtype dtype, const int64_t *dims,
                              int ndim, const void *data, tt_buffer **out) {
  if (!rt || !out) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_buffer_from_host: NULL argument");
  *out = NULL;
  TT_TRY(check_device(rt, device, "tt_buffer_from_host"));
  if ((unsigned)dtype >= TT_DTYPE_COUNT)
    return tt_error_new(TT_ERR_TYPE, "tt_buffer_from_host: invalid dtype %d", (int)dtype);
  if (ndim < 0 || ndim > TT_MAX_DIMS || (ndim > 0 && !dims))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_buffer_from_host: bad rank %d", ndim);
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) {
    if (dims[i] < 0)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_buffer_from_host: negative dim %" PRId64,
                          dims[i]);
    numel *= dims[i];
  }
  if (!data && numel > 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_buffer_from_host: data is NULL");
  static const unsigned char dummy[8];
  const PJRT_Api *api = rt->api;
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_SIZE,
      .client = rt->client,
      .data = data ? data : dummy,
      .type = tt_pjrt_type_of(dtype),
      .dims = dims,
      .num_dims = (size_t)ndim,
      /* The plugin copies (or stages) the data before returning, so the
       * caller may reuse its memory at once. */
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
      .device = rt->devices[device],
  };
  TT_TRY(tt_pjrt_error(api, api->PJRT_Client_BufferFromHostBuffer(&a), TT_ERR_RUNTIME,
                       "host-to-device transfer failed"));
  /* With kImmutableOnlyDuringCall the plugin no longer reads `data`; this
   * event carries no information we need. */
  tt_pjrt_event_destroy(api, a.done_with_host_buffer);
  return tt_buffer_wrap(rt, a.buffer, device, dtype, ndim, dims, out);
}

size_t tt_buffer_nbytes(const tt_buffer *buf) {
  return buf ? (size_t)tt_buffer_numel(buf) * tt_dtype_size(buf->dtype) : 0;
}

/* CPU plugins: the device memory is host memory, dense and row-major. Waiting
 * for the buffer and copying it directly costs ~0.3 us, against ~15-25 us for
 * PJRT_Buffer_ToHostBuffer (which hops through a worker thread). Returns
 * false, having done nothing, when the shortcut does not apply. */
static bool cpu_direct_read(tt_buffer *buf, void *dst, size_t nbytes, tt_error **err) {
  tt_runtime *rt = buf->rt;
  const PJRT_Api *api = rt->api;
  PJRT_Buffer_OnDeviceSizeInBytes_Args sz = {
      .struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_SIZE, .buffer = buf->buf};
  PJRT_Error *perr = api->PJRT_Buffer_OnDeviceSizeInBytes(&sz);
  if (perr || sz.on_device_size_in_bytes != nbytes) { /* padded, deleted, ...: slow path */
    tt_error_free(tt_pjrt_error(api, perr, TT_ERR_RUNTIME, "size"));
    return false;
  }
  PJRT_Buffer_ReadyEvent_Args r = {.struct_size = PJRT_Buffer_ReadyEvent_Args_SIZE,
                                   .buffer = buf->buf};
  *err = tt_pjrt_error(api, api->PJRT_Buffer_ReadyEvent(&r), TT_ERR_RUNTIME,
                       "PJRT_Buffer_ReadyEvent failed");
  if (!*err) *err = tt_pjrt_await(api, r.event, TT_ERR_RUNTIME, "computing the buffer failed");
  if (*err) return true;
  /* The pointer stays valid while we hold an external reference. */
  PJRT_Buffer_ExternalReference_Args ref = {
      .struct_size = PJRT_Buffer_ExternalReference_Args_SIZE, .buffer = buf->buf};
  perr = api->PJRT_Buffer_IncreaseExternalReferenceCount(&ref);
  if (perr) {
    tt_error_free(tt_pjrt_error(api, perr, TT_ERR_RUNTIME, "ref"));
    return false;
  }
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args p = {
      .struct_size = PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_SIZE, .buffer = buf->buf};
  perr = api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&p);
  bool done = !perr && p.device_memory_ptr;
  if (done) memcpy(dst, p.device_memory_ptr, nbytes);
  tt_error_free(tt_pjrt_error(api, perr, TT_ERR_RUNTIME, "pointer"));
  tt_error_free(tt_pjrt_error(api, api->PJRT_Buffer_DecreaseExternalReferenceCount(&ref),
                              TT_ERR_RUNTIME, "unref"));
  return done;
}

static tt_error *tt_buffer_to_host_untraced(tt_buffer *buf, void *dst, size_t dst_size) {
  if (!buf) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_buffer_to_host: NULL buffer");
  size_t nbytes = tt_buffer_nbytes(buf);
  if (dst_size < nbytes || (!dst && nbytes))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "tt_buffer_to_host: destination holds %zu bytes, the array needs %zu",
                        dst_size, nbytes);
  if (nbytes == 0) return NULL;
  tt_runtime *rt = buf->rt;
  const PJRT_Api *api = rt->api;
  tt_error *err = NULL;
  if (atomic_load_explicit(&rt->cpu_direct, memory_order_relaxed) &&
      cpu_direct_read(buf, dst, nbytes, &err)) return err;

  /* Other devices may keep other layouts: ask for dense row-major. CPU
   * buffers already are, and naming the layout makes the CPU plugin slower. */
  int64_t minor_to_major[TT_MAX_DIMS];
  for (int i = 0; i < buf->ndim; i++) minor_to_major[i] = buf->ndim - 1 - i;
  PJRT_Buffer_MemoryLayout layout = {
      .struct_size = PJRT_Buffer_MemoryLayout_SIZE,
      .tiled = {.struct_size = PJRT_Buffer_MemoryLayout_Tiled_SIZE,
                .minor_to_major = minor_to_major,
                .minor_to_major_size = (size_t)buf->ndim},
      .type = PJRT_Buffer_MemoryLayout_Type_Tiled,
  };
  PJRT_Buffer_ToHostBuffer_Args a = {
      .struct_size = PJRT_Buffer_ToHostBuffer_Args_SIZE,
      .src = buf->buf,
      .host_layout = atomic_load_explicit(&rt->host_layout_ok, memory_order_relaxed) ? &layout : NULL,
      .dst = dst,
      .dst_size = nbytes,
  };
  PJRT_Error *perr = api->PJRT_Buffer_ToHostBuffer(&a);
  if (perr && a.host_layout) { /* plugin without host-layout support: use its own */
    tt_error_free(tt_pjrt_error(api, perr, TT_ERR_RUNTIME, "to host"));
    atomic_store(&rt->host_layout_ok, false);
    a.host_layout = NULL;
    a.event = NULL;
    perr = api->PJRT_Buffer_ToHostBuffer(&a);
  }
  TT_TRY(tt_pjrt_error(api, perr, TT_ERR_RUNTIME, "device-to-host transfer failed"));
  return tt_pjrt_await(api, a.event, TT_ERR_RUNTIME, "device-to-host transfer failed");
}

tt_error *tt_buffer_copy_to_device(tt_buffer *buf, int device, tt_buffer **out) {
  if (!buf || !out)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_buffer_copy_to_device: NULL argument");
  *out = NULL;
  tt_runtime *rt = buf->rt;
  TT_TRY(check_device(rt, device, "tt_buffer_copy_to_device"));
  if (device == buf->device)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "tt_buffer_copy_to_device: the buffer is already on device %d", device);
  const PJRT_Api *api = rt->api;
  if (!TT_PJRT_HAS(api, PJRT_Buffer_CopyToDevice))
    return tt_error_new(TT_ERR_PLUGIN, "the PJRT plugin lacks PJRT_Buffer_CopyToDevice");
  PJRT_Buffer_CopyToDevice_Args a = {.struct_size = PJRT_Buffer_CopyToDevice_Args_SIZE,
                                     .buffer = buf->buf,
                                     .dst_device = rt->devices[device]};
  TT_TRY(tt_pjrt_error(api, api->PJRT_Buffer_CopyToDevice(&a), TT_ERR_RUNTIME,
                       "device-to-device copy failed"));
  /* Let synchronize cover the transfer. */
  PJRT_Buffer_ReadyEvent_Args r = {.struct_size = PJRT_Buffer_ReadyEvent_Args_SIZE,
                                   .buffer = a.dst_buffer};
  PJRT_Error *rerr = api->PJRT_Buffer_ReadyEvent(&r);
  if (rerr)
    tt_error_free(tt_pjrt_error(api, rerr, TT_ERR_RUNTIME, "ready event"));
  else
    tt_runtime_track_event(rt, r.event);
  return tt_buffer_wrap(rt, a.dst_buffer, device, buf->dtype, buf->ndim, buf->dims, out);
}

tt_error *tt_buffer_await(tt_buffer *buf) {
  if (!buf) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_buffer_await: NULL buffer");
  const PJRT_Api *api = buf->rt->api;
  PJRT_Buffer_ReadyEvent_Args r = {.struct_size = PJRT_Buffer_ReadyEvent_Args_SIZE,
                                   .buffer = buf->buf};
  TT_TRY(tt_pjrt_error(api, api->PJRT_Buffer_ReadyEvent(&r), TT_ERR_RUNTIME,
                       "PJRT_Buffer_ReadyEvent failed"));
  return tt_pjrt_await(api, r.event, TT_ERR_RUNTIME, "computing the buffer failed");
}

bool tt_buffer_is_ready(tt_buffer *buf) {
  if (!buf) return true;
  const PJRT_Api *api = buf->rt->api;
  if (!TT_PJRT_HAS(api, PJRT_Event_IsReady)) return true;
  PJRT_Buffer_ReadyEvent_Args r = {.struct_size = PJRT_Buffer_ReadyEvent_Args_SIZE,
                                   .buffer = buf->buf};
  PJRT_Error *e = api->PJRT_Buffer_ReadyEvent(&r);
  if (e) {
    tt_error_free(tt_pjrt_error(api, e, TT_ERR_RUNTIME, "PJRT_Buffer_ReadyEvent failed"));
    return true;
  }
  PJRT_Event_IsReady_Args a = {.struct_size = PJRT_Event_IsReady_Args_SIZE, .event = r.event};
  e = api->PJRT_Event_IsReady(&a);
  bool ready = true;
  if (e) tt_error_free(tt_pjrt_error(api, e, TT_ERR_RUNTIME, "PJRT_Event_IsReady failed"));
  else ready = a.is_ready;
  tt_pjrt_event_destroy(api, r.event);
  return ready;
}

bool tt_buffer_note_donation(tt_buffer *buf) {
  const PJRT_Api *api = buf->rt->api;
  if (buf->donated || !TT_PJRT_HAS(api, PJRT_Buffer_IsDeleted)) return buf->donated;
  PJRT_Buffer_IsDeleted_Args a = {.struct_size = PJRT_Buffer_IsDeleted_Args_SIZE, .buffer = buf->buf};
  PJRT_Error *e = api->PJRT_Buffer_IsDeleted(&a);
  if (e) {
    tt_error_free(tt_pjrt_error(api, e, TT_ERR_RUNTIME, "PJRT_Buffer_IsDeleted failed"));
    return false;
  }
  if (a.is_deleted) {
    buf->donated = true;
    atomic_fetch_sub(&buf->rt->buffer_bytes, (long long)tt_buffer_nbytes(buf));
  }
  return buf->donated;
}

bool tt_buffer_is_exclusive(const tt_buffer *buf) { return tt_buffer_refs(buf) == 1; }

int tt_buffer_refs(const tt_buffer *buf) {
  return buf ? atomic_load_explicit(&((tt_buffer *)buf)->refs, memory_order_acquire) : 0;
}

tt_buffer *tt_buffer_retain(tt_buffer *buf) {
  if (buf) atomic_fetch_add_explicit(&buf->refs, 1, memory_order_relaxed);
  return buf;
}

void tt_buffer_release(tt_buffer *buf) {
  if (!buf || atomic_fetch_sub_explicit(&buf->refs, 1, memory_order_acq_rel) != 1) return;
  tt_runtime *rt = buf->rt;
  /* PJRT keeps the device memory alive until launches using it finish; the
   * reaper thread waits for them, not this one. */
  tt_reaper_destroy_buffer(rt, buf->buf);
  atomic_fetch_sub_explicit(&rt->live_buffers, 1, memory_order_relaxed);
  if (!buf->donated) atomic_fetch_sub(&rt->buffer_bytes, (long long)tt_buffer_nbytes(buf));
  free(buf);
  tt_runtime_release_internal(rt);
}

tt_dtype tt_buffer_dtype(const tt_buffer *buf) { return buf->dtype; }
int tt_buffer_ndim(const tt_buffer *buf) { return buf->ndim; }
const int64_t *tt_buffer_dims(const tt_buffer *buf) { return buf->dims; }
int tt_buffer_device(const tt_buffer *buf) { return buf->device; }

int64_t tt_buffer_numel(const tt_buffer *buf) {
  int64_t n = 1;
  for (int i = 0; i < buf->ndim; i++) n *= buf->dims[i];
  return n;
}

/* ------------------------------------------------------------ executables */

/* Protobuf wire format, just enough for xla.CompileOptionsProto. */
static size_t pb_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

static size_t pb_tag(uint8_t *p, unsigned field, unsigned wire_type) {
  return pb_varint(p, ((uint64_t)field << 3) | wire_type);
}

static size_t pb_int_field(uint8_t *p, unsigned field, uint64_t v) {
  size_t n = pb_tag(p, field, 0);
  return n + pb_varint(p + n, v);
}

/* CompileOptionsProto {
 *   executable_build_options (3) { num_replicas (4) = 1, num_partitions (5) = 1 }
 *   compile_portable_executable (4) = true          -- only when portable
 * }  Returns the encoded size; buf must hold 32 bytes. */
static size_t encode_compile_options(uint8_t *buf, const tt_compile_options *o) {
  uint8_t inner[16];
  size_t ni = 0;
  ni += pb_int_field(inner + ni, 4, 1);
  ni += pb_int_field(inner + ni, 5, 1);
  size_t n = pb_tag(buf, 3, 2);
  n += pb_varint(buf + n, ni);
  memcpy(buf + n, inner, ni);
  n += ni;
  if (o && o->portable) n += pb_int_field(buf + n, 4, 1);
  return n;
}

void tt_executable_destroy_now(tt_executable *e) {
  while (atomic_load_explicit(&e->inflight, memory_order_acquire) > 0) {
    struct timespec ts = {0, 200 * 1000}; /* launches finish on their own */
    nanosleep(&ts, NULL);
  }
  if (e->exe) {
    PJRT_LoadedExecutable_Destroy_Args d = {
        .struct_size = PJRT_LoadedExecutable_Destroy_Args_SIZE, .executable = e->exe};
    tt_error_free(tt_pjrt_error(e->rt->api, e->rt->api->PJRT_LoadedExecutable_Destroy(&d),
                                TT_ERR_RUNTIME, "destroy"));
    atomic_fetch_sub(&e->rt->live_executables, 1);
  }
  free(e->out_dtypes);
  free(e->out_ndims);
  free(e->out_dims);
  free(e->spmd_devices);
  free(e);
}

/* The last reference is gone: destroy now, or on the reaper thread after
 * the launches still running (an executable evicted from the pool while a
 * launch of it was in flight). */
static void executable_free(tt_executable *e) {
  tt_runtime *rt = e->rt;
  if (atomic_load_explicit(&e->inflight, memory_order_acquire) > 0)
    tt_reaper_destroy_executable(rt, e);
  else
    tt_executable_destroy_now(e);
  tt_runtime_release_internal(rt); /* runtime_free drains the reaper first */
}

/* Caches output element types and shapes so launches need not query them.
 * Leaves out_known false if the plugin cannot say. */
static void read_output_shapes(tt_executable *e, PJRT_Executable *pe) {
  const PJRT_Api *api = e->rt->api;
  int n = e->num_outputs;
  if (n == 0 || !TT_PJRT_HAS(api, PJRT_Executable_OutputElementTypes) ||
      !TT_PJRT_HAS(api, PJRT_Executable_OutputDimensions))
    return;
  PJRT_Executable_OutputElementTypes_Args t = {
      .struct_size = PJRT_Executable_OutputElementTypes_Args_SIZE, .executable = pe};
  PJRT_Error *err = api->PJRT_Executable_OutputElementTypes(&t);
  if (err || t.num_output_types != (size_t)n) {
    tt_error_free(tt_pjrt_error(api, err, TT_ERR_RUNTIME, "output types"));
    return;
  }
  PJRT_Executable_OutputDimensions_Args d = {
      .struct_size = PJRT_Executable_OutputDimensions_Args_SIZE, .executable = pe};
  err = api->PJRT_Executable_OutputDimensions(&d);
  if (err || d.num_outputs != (size_t)n) {
    tt_error_free(tt_pjrt_error(api, err, TT_ERR_RUNTIME, "output dims"));
    return;
  }
  e->out_dtypes = malloc((size_t)n * sizeof *e->out_dtypes);
  e->out_ndims = malloc((size_t)n * sizeof *e->out_ndims);
  e->out_dims = calloc((size_t)n, sizeof *e->out_dims);
  if (!e->out_dtypes || !e->out_ndims || !e->out_dims) return;
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    if (!tt_dtype_of_pjrt(t.output_types[i], &e->out_dtypes[i]) || d.dim_sizes[i] > TT_MAX_DIMS)
      return;
    e->out_ndims[i] = (int)d.dim_sizes[i];
    for (size_t k = 0; k < d.dim_sizes[i]; k++) {
      if (d.dims[off + k] < 0) return; /* dynamic: ask each buffer instead */
      e->out_dims[i][k] = d.dims[off + k];
    }
    off += d.dim_sizes[i];
  }
  e->out_known = true;
}

/* Wraps a loaded executable (takes ownership). spmd: it may span several
 * devices (tt_compile_spmd), whose client indices it records in the order
 * the plugin lists them. */
tt_error *tt_executable_wrap(tt_runtime *rt, PJRT_LoadedExecutable *le, bool spmd,
                             tt_executable **out) {
  const PJRT_Api *api = rt->api;
  tt_executable *e = calloc(1, sizeof *e);
  if (!e) {
    PJRT_LoadedExecutable_Destroy_Args d = {
        .struct_size = PJRT_LoadedExecutable_Destroy_Args_SIZE, .executable = le};
    tt_error_free(tt_pjrt_error(api, api->PJRT_LoadedExecutable_Destroy(&d), TT_ERR_RUNTIME, ""));
    return oom();
  }
  atomic_init(&e->refs, 1);
  atomic_init(&e->inflight, 0);
  static atomic_ulong next_trace_id;
  e->trace_id = atomic_fetch_add_explicit(&next_trace_id, 1, memory_order_relaxed) + 1;
  e->rt = rt;
  e->exe = le;
  e->may_donate = true; /* tt_compile narrows it from the program text */
  e->temp_bytes = -1;
  tt_runtime_retain_internal(rt);
  atomic_fetch_add(&rt->live_executables, 1);

  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_SIZE, .loaded_executable = le};
  tt_error *err = tt_pjrt_error(api, api->PJRT_LoadedExecutable_GetExecutable(&g), TT_ERR_RUNTIME,
                                "PJRT_LoadedExecutable_GetExecutable failed");
  if (!err) {
    PJRT_Executable_NumOutputs_Args no = {.struct_size = PJRT_Executable_NumOutputs_Args_SIZE,
                                          .executable = g.executable};
    err = tt_pjrt_error(api, api->PJRT_Executable_NumOutputs(&no), TT_ERR_RUNTIME,
                        "PJRT_Executable_NumOutputs failed");
    if (!err) {
      e->num_outputs = (int)no.num_outputs;
      read_output_shapes(e, g.executable);
      e->temp_bytes = read_temp_bytes(api, g.executable);
    }
    pjrt_executable_destroy(api, g.executable);
  }
  if (!err) {
    /* A portable executable has no addressable devices of its own. */
    PJRT_LoadedExecutable_AddressableDevices_Args ad = {
        .struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_SIZE, .executable = le};
    err = tt_pjrt_error(api, api->PJRT_LoadedExecutable_AddressableDevices(&ad), TT_ERR_RUNTIME,
                        "PJRT_LoadedExecutable_AddressableDevices failed");
    e->fixed_device = -1;
    if (!err && spmd) {
      e->spmd_devices = calloc(ad.num_addressable_devices ? ad.num_addressable_devices : 1,
                               sizeof *e->spmd_devices);
      if (!e->spmd_devices) err = oom();
      for (size_t k = 0; !err && k < ad.num_addressable_devices; k++) {
        e->spmd_devices[k] = -1;
        for (int i = 0; i < rt->num_devices; i++)
          if (rt->devices[i] == ad.addressable_devices[k]) e->spmd_devices[k] = i;
        if (e->spmd_devices[k] < 0)
          err = tt_error_new(TT_ERR_RUNTIME, "executable bound to a device the client does not list");
      }
      e->num_spmd_devices = (int)ad.num_addressable_devices;
      e->fixed_device = -2;
    } else if (!err && ad.num_addressable_devices > 1)
      err = tt_error_new(TT_ERR_NOT_IMPLEMENTED,
                         "executable spans %zu devices; only single-device programs are supported",
                         ad.num_addressable_devices);
    if (!err && !spmd && ad.num_addressable_devices == 1) {
      for (int i = 0; i < rt->num_devices; i++)
        if (rt->devices[i] == ad.addressable_devices[0]) e->fixed_device = i;
      if (e->fixed_device < 0)
        err = tt_error_new(TT_ERR_RUNTIME, "executable bound to a device the client does not list");
    }
  }
  if (err) {
    executable_free(e);
    return err;
  }
  *out = e;
  return NULL;
}

tt_error *tt_pjrt_compile(tt_runtime *rt, const char *mlir_text, size_t text_len,
                          const void *options, size_t options_len, const char *what,
                          PJRT_LoadedExecutable **out) {
  static const char format[] = "mlir";
  PJRT_Program prog = {
      .struct_size = PJRT_Program_SIZE,
      .code = (char *)mlir_text, /* not modified by the plugin */
      .code_size = text_len,
      .format = format,
      .format_size = sizeof format - 1,
  };
  const PJRT_Api *api = rt->api;
  PJRT_Client_Compile_Args a = {
      .struct_size = PJRT_Client_Compile_Args_SIZE,
      .client = rt->client,
      .program = &prog,
      .compile_options = (const char *)options,
      .compile_options_size = options_len,
  };
  *out = NULL;
  TT_TRY(tt_pjrt_error(api, api->PJRT_Client_Compile(&a), TT_ERR_COMPILE, what));
  *out = a.executable;
  return NULL;
}

tt_error *tt_compile(tt_runtime *rt, const char *mlir_text, size_t text_len,
                     const tt_compile_options *options, tt_executable **out) {
  if (!rt || !mlir_text || !out)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_compile: NULL argument");
  *out = NULL;
  /* optimization_level is not sent: no ExecutableBuildOptionsProto field for
   * it is understood by every plugin we load; callers key caches on it. */
  uint8_t opts[32];
  size_t opts_len = encode_compile_options(opts, options);
  PJRT_LoadedExecutable *le = NULL;
  TT_TRY(tt_pjrt_compile(rt, mlir_text, text_len, opts, opts_len, "the PJRT plugin rejected the program",
                         &le));
  tt_error *err = tt_executable_wrap(rt, le, false, out);
  if (!err) (*out)->may_donate = memmem(mlir_text, text_len, "tf.aliasing_output", 18) != NULL;
  return err;
}

int tt_executable_num_outputs(const tt_executable *exe) { return exe ? exe->num_outputs : 0; }

tt_executable *tt_executable_retain(tt_executable *exe) {
  if (exe) atomic_fetch_add_explicit(&exe->refs, 1, memory_order_relaxed);
  return exe;
}

void tt_executable_release(tt_executable *exe) {
  if (exe && atomic_fetch_sub_explicit(&exe->refs, 1, memory_order_acq_rel) == 1)
    executable_free(exe);
}

enum { STACK_ARGS = 16 };

/* PJRT_Event_OnReady callback of a launch's completion event: the launch no
 * longer needs its executable. Touches nothing after the decrement. */
static void launch_done(PJRT_Error *error, void *arg) {
  tt_executable *e = arg;
  if (error) tt_error_free(tt_pjrt_error(e->rt->api, error, TT_ERR_RUNTIME, "launch"));
  atomic_fetch_sub_explicit(&e->inflight, 1, memory_order_release);
}

/* A traced launch's completion watch: records the program's device span
 * (launch to completion) when its event fires. Allocated only while tracing. */
typedef struct {
  tt_executable *exe;
  double t0_us;
  int device;
} traced_launch;

static void traced_launch_done(PJRT_Error *error, void *arg) {
  traced_launch *w = arg;
  tt_executable *e = w->exe;
  double t1 = tt_trace_now_us();
  char name[48], detail[64];
  snprintf(name, sizeof name, "program #%lu", e->trace_id);
  snprintf(detail, sizeof detail, "device %d%s", w->device, error ? ", failed" : "");
  if (tt_trace_on()) tt_trace_add("device", name, w->t0_us, t1 - w->t0_us, (unsigned long)w->device, detail);
  free(w);
  launch_done(error, e); /* touches nothing of e after this */
  tt_trace_pending(-1);
}

/* trace_t0 >= 0: the launch is traced (started then); its completion is
 * watched even where completion tracking is off, to record the device span. */
static tt_error *tt_execute_untraced(tt_executable *exe, int device, tt_buffer *const *args, int num_args,
                     tt_buffer **outs, int num_outs, double trace_t0) {
  if (!exe || (num_args > 0 && !args) || (num_outs > 0 && !outs) || num_args < 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_execute: bad arguments");
  tt_runtime *rt = exe->rt;
  TT_TRY(check_device(rt, device, "tt_execute"));
  if (num_outs != exe->num_outputs)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_execute: program has %d outputs, caller gave %d",
                        exe->num_outputs, num_outs);
  if (exe->num_spmd_devices > 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "tt_execute: the executable spans %d devices; launch it with tt_execute_spmd",
                        exe->num_spmd_devices);
  if (exe->fixed_device >= 0 && exe->fixed_device != device)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "tt_execute: executable is bound to device %d (compile it as portable to "
                        "run on device %d)",
                        exe->fixed_device, device);

  PJRT_Buffer *argv_stack[STACK_ARGS], *outv_stack[STACK_ARGS];
  PJRT_Buffer **argv = argv_stack, **outv = outv_stack;
  if (num_args > STACK_ARGS && !(argv = malloc((size_t)num_args * sizeof *argv))) return oom();
  if (num_outs > STACK_ARGS && !(outv = calloc((size_t)num_outs, sizeof *outv))) {
    if (argv != argv_stack) free(argv);
    return oom();
  }
  tt_error *err = NULL;
  for (int i = 0; i < num_args && !err; i++) {
    if (!args[i])
      err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_execute: argument %d is NULL", i);
    else if (args[i]->device != device)
      err = tt_error_new(TT_ERR_INVALID_ARGUMENT,
                         "tt_execute: argument %d lives on device %d, launch is on device %d", i,
                         args[i]->device, device);
    else
      argv[i] = args[i]->buf;
  }
  if (!err) {
    const PJRT_Api *api = rt->api;
    PJRT_Buffer *const *arg_list = argv;
    PJRT_Buffer **out_list = outv;
    PJRT_Event *done = NULL;
    PJRT_ExecuteOptions xo = {.struct_size = PJRT_ExecuteOptions_SIZE};
    PJRT_LoadedExecutable_Execute_Args a = {
        .struct_size = PJRT_LoadedExecutable_Execute_Args_SIZE,
        .executable = exe->exe,
        .options = &xo,
        .argument_lists = &arg_list,
        .num_devices = 1,
        .num_args = (size_t)num_args,
        .output_lists = &out_list,
        .device_complete_events =
            trace_t0 >= 0 || atomic_load_explicit(&rt->track_completion, memory_order_relaxed)
                ? &done : NULL,
        .execute_device = exe->fixed_device < 0 ? rt->devices[device] : NULL,
    };
    /* the executable must outlive the launch: counted until its event fires */
    bool watch = a.device_complete_events && TT_PJRT_HAS(api, PJRT_Event_OnReady);
    if (watch) atomic_fetch_add_explicit(&exe->inflight, 1, memory_order_relaxed);
    err = tt_pjrt_error(api, api->PJRT_LoadedExecutable_Execute(&a), TT_ERR_RUNTIME,
                        "launching the program failed");
    if (watch && !err && done) {
      traced_launch *w = trace_t0 >= 0 ? malloc(sizeof *w) : NULL;
      if (w) {
        *w = (traced_launch){exe, trace_t0, device};
        tt_trace_pending(1);
      }
      PJRT_Event_OnReady_Args r = {.struct_size = PJRT_Event_OnReady_Args_SIZE,
                                   .event = done,
                                   .callback = w ? traced_launch_done : launch_done,
                                   .user_arg = w ? (void *)w : (void *)exe};
      PJRT_Error *oe = api->PJRT_Event_OnReady(&r);
      if (oe && w) { /* not watched: no span */
        free(w);
        tt_trace_pending(-1);
      }
      if (oe) { /* cannot watch it: wait for it instead */
        tt_error_free(tt_pjrt_error(api, oe, TT_ERR_RUNTIME, "watch"));
        PJRT_Event_Await_Args w = {.struct_size = PJRT_Event_Await_Args_SIZE, .event = done};
        tt_error_free(tt_pjrt_error(api, api->PJRT_Event_Await(&w), TT_ERR_RUNTIME, "await"));
        atomic_fetch_sub_explicit(&exe->inflight, 1, memory_order_release);
      }
    } else if (watch) {
      atomic_fetch_sub_explicit(&exe->inflight, 1, memory_order_release);
    }
    if (!err) {
      tt_runtime_track_event(rt, done);
      /* donated inputs stop counting before their outputs start to */
      for (int i = 0; exe->may_donate && i < num_args; i++) tt_buffer_note_donation(args[i]);
      for (int i = 0; i < num_outs; i++) {
        tt_error *werr;
        if (exe->out_known)
          werr = tt_buffer_wrap(rt, outv[i], device, exe->out_dtypes[i], exe->out_ndims[i],
                                exe->out_dims[i], &outs[i]);
        else
          werr = tt_buffer_wrap_queried(rt, outv[i], device, &outs[i]);
        if (werr && !err) err = werr;
        else tt_error_free(werr);
        if (werr) outs[i] = NULL;
      }
      if (err) { /* all or nothing */
        for (int i = 0; i < num_outs; i++) {
          tt_buffer_release(outs[i]);
          outs[i] = NULL;
        }
      }
    }
  }
  if (argv != argv_stack) free(argv);
  if (outv != outv_stack) free(outv);
  return err;
}

/* ---------------------------------------------------------- serialization */

tt_error *tt_executable_serialize(tt_executable *exe, void **bytes, size_t *size) {
  if (!exe || !bytes || !size)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_executable_serialize: NULL argument");
  *bytes = NULL;
  *size = 0;
  const PJRT_Api *api = exe->rt->api;
  if (!TT_PJRT_HAS(api, PJRT_Executable_Serialize))
    return tt_error_new(TT_ERR_NOT_IMPLEMENTED, "the PJRT plugin cannot serialize executables");
  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_SIZE, .loaded_executable = exe->exe};
  TT_TRY(tt_pjrt_error(api, api->PJRT_LoadedExecutable_GetExecutable(&g), TT_ERR_RUNTIME,
                       "PJRT_LoadedExecutable_GetExecutable failed"));
  PJRT_Executable_Serialize_Args s = {.struct_size = PJRT_Executable_Serialize_Args_SIZE,
                                      .executable = g.executable};
  tt_error *err = tt_pjrt_error(api, api->PJRT_Executable_Serialize(&s), TT_ERR_RUNTIME,
                                "serializing the executable failed");
  if (!err) {
    void *copy = malloc(s.serialized_bytes_size ? s.serialized_bytes_size : 1);
    if (!copy)
      err = oom();
    else {
      memcpy(copy, s.serialized_bytes, s.serialized_bytes_size);
      *bytes = copy;
      *size = s.serialized_bytes_size;
    }
    if (s.serialized_executable_deleter) s.serialized_executable_deleter(s.serialized_executable);
  }
  pjrt_executable_destroy(api, g.executable);
  return err;
}

tt_error *tt_executable_deserialize(tt_runtime *rt, const void *bytes, size_t size,
                                    tt_executable **out) {
  if (!rt || !bytes || !out)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_executable_deserialize: NULL argument");
  *out = NULL;
  const PJRT_Api *api = rt->api;
  if (!TT_PJRT_HAS(api, PJRT_Executable_DeserializeAndLoad))
    return tt_error_new(TT_ERR_NOT_IMPLEMENTED, "the PJRT plugin cannot deserialize executables");
  PJRT_Executable_DeserializeAndLoad_Args a = {
      .struct_size = PJRT_Executable_DeserializeAndLoad_Args_SIZE,
      .client = rt->client,
      .serialized_executable = bytes,
      .serialized_executable_size = size,
  };
  TT_TRY(tt_pjrt_error(api, api->PJRT_Executable_DeserializeAndLoad(&a), TT_ERR_RUNTIME,
                       "loading the serialized executable failed"));
  return tt_executable_wrap(rt, a.loaded_executable, false, out);
}

/* ------------------------------------------------------ device memory */

tt_error *tt_runtime_device_memory(tt_runtime *rt, int device, tt_device_memory *out) {
  if (!rt || device < 0 || device >= rt->num_devices)
    return tt_error_new(TT_ERR_INDEX, "device %d out of range", device);
  const PJRT_Api *api = rt->api;
  if (!TT_PJRT_HAS(api, PJRT_Device_MemoryStats))
    return tt_error_new(TT_ERR_NOT_IMPLEMENTED,
                        "the PJRT plugin (API %d.%d) has no PJRT_Device_MemoryStats",
                        rt->api_major, rt->api_minor);
  PJRT_Device_MemoryStats_Args a = {.struct_size = PJRT_Device_MemoryStats_Args_SIZE,
                                    .device = rt->devices[device]};
  tt_error *err = tt_pjrt_error(api, api->PJRT_Device_MemoryStats(&a), TT_ERR_NOT_IMPLEMENTED,
                                "the PJRT plugin does not report device memory "
                                "(PJRT_Device_MemoryStats)");
  if (err) return err;
  out->bytes_in_use = a.bytes_in_use;
  out->peak_bytes_in_use = a.peak_bytes_in_use_is_set ? a.peak_bytes_in_use : -1;
  out->bytes_limit = a.bytes_limit_is_set ? a.bytes_limit : -1;
  out->num_allocs = a.num_allocs_is_set ? a.num_allocs : -1;
  out->bytes_reserved = a.bytes_reserved_is_set ? a.bytes_reserved : -1;
  return NULL;
}

/* ------------------------------------------------- profiler's events */

/* The device-memory counter, sampled after each traced launch and copy. */
static void trace_memory(tt_runtime *rt) {
  if (!rt) return;
  int64_t live = 0, peak = 0;
  tt_runtime_buffer_bytes(rt, &live, &peak);
  char bytes[32];
  snprintf(bytes, sizeof bytes, "%lld", (long long)live);
  tt_trace_add("device memory", "bytes", tt_trace_now_us(), 0, 0, bytes);
}

tt_error *tt_execute(tt_executable *exe, int device, tt_buffer *const *args, int num_args,
                     tt_buffer **outs, int num_outs) {
  if (!tt_trace_on()) return tt_execute_untraced(exe, device, args, num_args, outs, num_outs, -1);
  double t0 = tt_trace_now_us();
  tt_error *err = tt_execute_untraced(exe, device, args, num_args, outs, num_outs, t0);
  char detail[96];
  snprintf(detail, sizeof detail, "program #%lu, device %d, %d inputs, %d outputs",
           exe ? exe->trace_id : 0UL, device, num_args, num_outs);
  tt_trace_end("launch", err ? "launch (failed)" : "launch", t0, detail);
  trace_memory(exe ? exe->rt : NULL);
  return err;
}

tt_error *tt_buffer_to_host(tt_buffer *buf, void *dst, size_t dst_size) {
  if (!tt_trace_on()) return tt_buffer_to_host_untraced(buf, dst, dst_size);
  double t0 = tt_trace_now_us();
  tt_error *err = tt_buffer_to_host_untraced(buf, dst, dst_size);
  char detail[64];
  snprintf(detail, sizeof detail, "%zu bytes", buf ? tt_buffer_nbytes(buf) : (size_t)0);
  tt_trace_end("transfer", "device to host", t0, detail);
  trace_memory(buf ? buf->rt : NULL);
  return err;
}

tt_error *tt_buffer_from_host(tt_runtime *rt, int device, tt_dtype dtype, const int64_t *dims,
                              int ndim, const void *data, tt_buffer **out) {
  if (!tt_trace_on()) return tt_buffer_from_host_untraced(rt, device, dtype, dims, ndim, data, out);
  double t0 = tt_trace_now_us();
  tt_error *err = tt_buffer_from_host_untraced(rt, device, dtype, dims, ndim, data, out);
  char detail[64];
  snprintf(detail, sizeof detail, "%zu bytes", !err && *out ? tt_buffer_nbytes(*out) : (size_t)0);
  tt_trace_end("transfer", "host to device", t0, detail);
  trace_memory(rt);
  return err;
}
