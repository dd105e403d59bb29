/* The PJRT runtime: loads a plugin, owns one client, moves bytes, compiles
 * StableHLO text, launches executables. The only file that touches the PJRT
 * ABI structs is runtime.c (through pjrt_abi.h); everything above uses this
 * header.
 *
 * Thread safety: every function may be called from any thread. Objects are
 * reference-counted where noted; *_release accepts NULL. */
#ifndef TT_PJRT_RUNTIME_H
#define TT_PJRT_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"

typedef struct tt_runtime tt_runtime;
typedef struct tt_buffer tt_buffer;         /* ref-counted device array */
typedef struct tt_executable tt_executable; /* ref-counted loaded executable */

/* ---------------------------------------------------------------- runtime */

/* Finds the plugin to load: $TORCH_TPU_PJRT_PLUGIN if set; else libtpu's
 * libtpu.so if that package is importable from the current Python's
 * site-packages; else the xla-cpu-pjrt package's xla_cpu_pjrt.so. Writes the
 * path into out (size out_size). search_dirs: NULL-terminated list of
 * site-packages directories to look in (the Python layer passes sys.path). */
tt_error *tt_runtime_find_plugin(const char *const *search_dirs, char *out, size_t out_size);

/* The plugin files that search considers (TORCH_TPU_PJRT_PLUGIN aside), in
 * its order of preference, the first being the one it takes: for each known
 * plugin (libtpu, then xla-cpu-pjrt), each search directory holding a
 * readable file at the plugin's relative path. Calls fn (may be NULL) per
 * candidate with that relative path, which names the plugin, and the full
 * path, passing ctx through. Returns the number of candidates. */
int tt_runtime_plugin_candidates(const char *const *search_dirs,
                                 void (*fn)(void *ctx, const char *rel, const char *path),
                                 void *ctx);

/* Loads the plugin at plugin_path, checks its API version (refuses < 0.57
 * with a message naming both versions), initializes it and creates a client.
 * num_cpu_devices is passed as cpu_device_count to CPU plugins (ignored by
 * others). On success *out owns the plugin handle and client. */
tt_error *tt_runtime_open(const char *plugin_path, int num_cpu_devices, tt_runtime **out);

/* ------------------------------------------------ multi-process clients */

/* A key-value store shared by the processes of a job (torch_tpu: the c10d
 * Store), through which a multi-process client finds the others. get waits
 * at most timeout_ms for key and returns its value malloc'd (caller frees;
 * a TT_ERR_RUNTIME error whose message says "timed out" on a timeout); put
 * sets it. Both must be thread-safe. ctx is passed through. */
typedef struct {
  void *ctx;
  tt_error *(*get)(void *ctx, const char *key, size_t key_len, int timeout_ms, char **value,
                   size_t *value_len);
  tt_error *(*put)(void *ctx, const char *key, size_t key_len, const char *value,
                   size_t value_len);
} tt_kv_store;

typedef struct {
  int num_cpu_devices; /* cpu_device_count, CPU plugins only; <= 0: the plugin's default */
  int num_nodes;       /* > 1: a client spanning num_nodes processes; 0 or 1: this one */
  int node_id;         /* this process, in [0, num_nodes) */
  int visible_device;  /* >= 0: the one local device this process uses (visible_devices) */
  const tt_kv_store *kv; /* required when num_nodes > 1; must outlive the runtime */
} tt_runtime_options;

enum { TT_CREATE_OPTIONS_MAX = 8 };
typedef struct {
  const char *name;   /* "num_nodes" */
  bool is_list;       /* an int64 list of one element (visible_devices) */
  int64_t value;
} tt_create_option;

typedef enum { TT_PLUGIN_CPU, TT_PLUGIN_TPU, TT_PLUGIN_OTHER } tt_plugin_kind;
/* From the plugin file's name: "cpu" in it (xla_cpu_pjrt.so), "libtpu", else other (CUDA). */
tt_plugin_kind tt_plugin_kind_of(const char *plugin_path);

/* The create options PJRT_Client_Create gets for opts on a plugin of `kind`
 * (runtime_procs.c): cpu_device_count for CPU plugins; num_nodes, node_id
 * and visible_devices for a multi-process client of another plugin. libtpu
 * takes no options (its processes join through the environment libtpu
 * reads). Errors: a multi-process client on the CPU plugin (it has none),
 * node_id out of range, no key-value store. *n receives the count. */
tt_error *tt_runtime_create_options(const tt_runtime_options *opts, tt_plugin_kind kind,
                                    tt_create_option *out, int cap, int *n);

/* tt_runtime_open with options (tt_runtime_open(path, n, out) is this with
 * only num_cpu_devices = n). When opts->num_nodes > 1 the client is made with
 * the key-value callbacks over opts->kv. */
tt_error *tt_runtime_open_with(const char *plugin_path, const tt_runtime_options *opts,
                               tt_runtime **out);

/* Options for the next tt_runtime_open of a plugin that is not a CPU one in
 * this process (torch_tpu sets them when torch.distributed starts with
 * backend "tpu" before the device is initialized); NULL clears them. The
 * kv store must outlive every runtime opened with it. Guarded by a lock. */
void tt_runtime_set_process_options(const tt_runtime_options *opts);
bool tt_runtime_get_process_options(tt_runtime_options *out); /* false: none set */

/* Test hook: calls the key-value callbacks handed to PJRT_Client_Create as a
 * plugin would (put, or get with a timeout), through their PJRT argument
 * structs and an error callback of the hook's own, over kv. get's value is
 * malloc'd (caller frees). */
tt_error *tt_kv_callbacks_test_put(const tt_kv_store *kv, const char *key, const char *value,
                                   size_t value_len);
tt_error *tt_kv_callbacks_test_get(const tt_kv_store *kv, const char *key, int timeout_ms,
                                   char **value, size_t *value_len);

/* One device the client sees (PJRT_Client_Devices): its global id, its
 * process (-1 when the plugin does not say) and, when it is addressable
 * here, its index among the client's devices (else -1). */
typedef struct {
  int id;
  int process_index;
  int local;
} tt_global_device;
/* Every device the client sees, this process's and the others'; *n receives
 * the count (may exceed cap: only cap are written). */
tt_error *tt_runtime_global_devices(tt_runtime *rt, tt_global_device *out, int cap, int *n);

/* Maps a device assignment of global ids (partition r runs on ids[r], every
 * process's devices) onto this client's table (tt_runtime_global_devices):
 * for each partition whose device is addressable here, local_partition[k]
 * is r and local_device[k] its client index, in partition order; *n_local
 * receives the count. Errors: n < 1, an id listed twice, an id the client
 * does not see, no partition on this process. */
tt_error *tt_spmd_assignment(const int *ids, int n, const tt_global_device *table, int table_n,
                             int *local_partition, int *local_device, int *n_local);

/* Waits for pending work, destroys the client. Accepts NULL. */
void tt_runtime_close(tt_runtime *rt);

int tt_runtime_device_count(const tt_runtime *rt);       /* addressable devices */
const char *tt_runtime_platform_name(const tt_runtime *rt); /* "cpu", "cuda", "tpu" */
const char *tt_runtime_plugin_path(const tt_runtime *rt);   /* the loaded plugin file */
const char *tt_runtime_device_kind(const tt_runtime *rt, int device); /* human name */
void tt_runtime_api_version(const tt_runtime *rt, int *major, int *minor);
/* Identifies the exact plugin build for cache keys: file size + content hash
 * + API version + xla_version attribute when reported. Stable across runs. */
const char *tt_runtime_fingerprint(const tt_runtime *rt);
/* Plugin attributes such as "stablehlo_current_version"; NULL if absent. */
const char *tt_runtime_attribute(const tt_runtime *rt, const char *name);

/* Blocks until every execution and transfer launched so far has finished;
 * returns the first asynchronous error that occurred since the last call. */
tt_error *tt_runtime_synchronize(tt_runtime *rt);

/* ---------------------------------------------------------------- buffers */

/* Copies host data (row-major, dense, dtype elements) to a new device array
 * of the given dims on `device`. The host memory may be reused as soon as
 * this returns. ndim may be 0 (a scalar). */
tt_error *tt_buffer_from_host(tt_runtime *rt, int device, tt_dtype dtype, const int64_t *dims,
                              int ndim, const void *data, tt_buffer **out);

/* Copies the whole array to host memory (dst must hold tt_buffer_nbytes
 * bytes); waits for the data to be ready. */
tt_error *tt_buffer_to_host(tt_buffer *buf, void *dst, size_t dst_size);

/* Copies the array to another device of the same client. */
tt_error *tt_buffer_copy_to_device(tt_buffer *buf, int device, tt_buffer **out);

/* Blocks until the buffer's defining computation finished. */
tt_error *tt_buffer_await(tt_buffer *buf);
/* Whether the buffer's defining computation finished (a failed one counts
 * as ready: reading it reports the failure); never blocks. True where the
 * plugin cannot tell (the read then waits). */
bool tt_buffer_is_ready(tt_buffer *buf);

/* Device bytes held by live buffers (all devices) and their peak: what a
 * program's memory use costs on the device, whatever the tensors say. */
void tt_runtime_buffer_bytes(tt_runtime *rt, int64_t *live, int64_t *peak);
void tt_runtime_reset_peak_buffer_bytes(tt_runtime *rt);

/* What the plugin reports of a device's memory (PJRT_Device_MemoryStats):
 * bytes in use, and the limit and peak where the plugin sets them (-1 when
 * not). A TT_ERR_NOT_IMPLEMENTED error when the plugin does not implement it. */
typedef struct {
  int64_t bytes_in_use, peak_bytes_in_use, bytes_limit, num_allocs, bytes_reserved;
} tt_device_memory;
tt_error *tt_runtime_device_memory(tt_runtime *rt, int device, tt_device_memory *out);
/* After a launch that may have donated buf: if the plugin consumed it,
 * stops counting its bytes as live (the output reuses them) and returns
 * true. */
bool tt_buffer_note_donation(tt_buffer *buf);
/* Whether buf has exactly one reference (its owner may donate it). */
bool tt_buffer_is_exclusive(const tt_buffer *buf);
/* How many references buf has now (0 for NULL): a launch holding one of
 * its own sees 2 when the owner is the only other holder. */
int tt_buffer_refs(const tt_buffer *buf);
tt_buffer *tt_buffer_retain(tt_buffer *buf);
void tt_buffer_release(tt_buffer *buf);
tt_dtype tt_buffer_dtype(const tt_buffer *buf);
int tt_buffer_ndim(const tt_buffer *buf);
const int64_t *tt_buffer_dims(const tt_buffer *buf);
int64_t tt_buffer_numel(const tt_buffer *buf);
size_t tt_buffer_nbytes(const tt_buffer *buf);
int tt_buffer_device(const tt_buffer *buf);

/* ---------------------------------------------------------- executables */

typedef struct {
  int optimization_level; /* 0..3; recorded for the cache key; passed where the plugin supports it */
  bool portable;          /* compile_portable_executable: run on any device */
} tt_compile_options;

/* Compiles a StableHLO module given as MLIR text. The plugin's diagnostic is
 * returned in a TT_ERR_COMPILE error. */
tt_error *tt_compile(tt_runtime *rt, const char *mlir_text, size_t text_len,
                     const tt_compile_options *options, tt_executable **out);

int tt_executable_num_outputs(const tt_executable *exe);
/* Scratch memory the program allocates for each run (bytes), -1 if unknown. */
int64_t tt_executable_temp_bytes(const tt_executable *exe);
tt_executable *tt_executable_retain(tt_executable *exe);
void tt_executable_release(tt_executable *exe);

/* Launches exe on `device` with `args` (borrowed; the runtime keeps them
 * alive as long as the launch needs them). Writes num_outputs new buffers to
 * outs (caller owns them). Returns as soon as the launch is enqueued;
 * asynchronous failures surface from tt_runtime_synchronize or when an
 * output is read. Arguments the program marks with tf.aliasing_output are
 * donated: the caller must not use those buffers afterwards. */
tt_error *tt_execute(tt_executable *exe, int device, tt_buffer *const *args, int num_args,
                     tt_buffer **outs, int num_outs);

/* Multi-device programs (compiled collectives; runtime_spmd.c). Compiles a
 * StableHLO module for n devices of this client: num_partitions = n, SPMD
 * partitioning, and a 1 x n device assignment where partition r runs on
 * client device devices[r] (partition ids are what replica groups name).
 * The executable cannot be launched with tt_execute. */
tt_error *tt_compile_spmd(tt_runtime *rt, const char *mlir_text, size_t text_len,
                          const int *devices, int n, tt_executable **out);
/* A multi-device program over every process's devices: partition r runs on
 * the device of global id ids[r], which may belong to another process of a
 * multi-process client. The executable's devices are this process's share
 * (tt_spmd_assignment); launch it with tt_execute_spmd, passing the client
 * indices of those devices and only their arguments: each process launches
 * its own share, and the plugin joins the processes' launches. */
tt_error *tt_compile_spmd_global(tt_runtime *rt, const char *mlir_text, size_t text_len,
                                 const int *ids, int n, tt_executable **out);
/* 1 for single-device programs, n for tt_compile_spmd's. */
int tt_executable_num_devices(const tt_executable *exe);
/* Launches a multi-device program once over its n devices: args holds
 * n x num_args buffers, rank-major (rank r's on devices[r], the list given at
 * compile time, in any order); outs receives n x num_outs new buffers in the
 * same layout. Waits for completion (errors are returned here). */
tt_error *tt_execute_spmd(tt_executable *exe, const int *devices, tt_buffer *const *args,
                          int num_args, tt_buffer **outs, int num_outs);

/* Serializes a compiled executable to bytes (malloc'd, caller frees) and
 * back. Needed by the persistent cache. */
tt_error *tt_executable_serialize(tt_executable *exe, void **bytes, size_t *size);
tt_error *tt_executable_deserialize(tt_runtime *rt, const void *bytes, size_t size,
                                    tt_executable **out);

/* The executable's optimized program as the plugin's compiler left it
 * (PJRT_Executable_OptimizedProgram): bytes malloc'd (caller frees), and
 * its format ("hlo": a serialized xla.HloModuleProto) into format (may be
 * NULL). TT_ERR_NOT_IMPLEMENTED when the plugin does not expose it. */
tt_error *tt_executable_optimized_program(tt_executable *exe, void **bytes, size_t *size,
                                          char *format, size_t format_cap);

#endif
