/* Shared between runtime.c and runtime_buffers.c; not part of the public
 * interface (runtime.h). The last section holds test/benchmark hooks used by
 * tests/c/test_runtime.c. */
#ifndef TT_PJRT_RUNTIME_INTERNAL_H
#define TT_PJRT_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "pjrt/pjrt_abi.h"
#include "pjrt/runtime.h"

typedef struct {
  char *name;
  char *value;
} tt_attr;

/* What the reaper destroys: a PJRT buffer, or an executable whose last
 * reference was dropped while launches of it were still running. */
typedef struct {
  PJRT_Buffer *buffer;
  struct tt_executable *exe;
} tt_reap_item;

/* A thread that destroys released PJRT buffers (runtime_reaper.c): destroying
 * a buffer a launched program still reads waits for the program, which must
 * not hold up the thread that launches the next one. It also destroys
 * executables after their last launch completed (tt_executable.inflight). */
typedef struct {
  pthread_mutex_t lock; /* guards the fields below */
  pthread_cond_t wake;
  tt_reap_item *queue;
  size_t n, cap;
  bool stop, started;
  pid_t owner; /* the process whose thread `thread` is */
  pthread_t thread;
} tt_buffer_reaper;

void tt_reaper_init(tt_buffer_reaper *r);
/* Destroys b on the reaper thread (or here, if the thread cannot run). */
void tt_reaper_destroy_buffer(tt_runtime *rt, PJRT_Buffer *b);
/* Destroys e (refcount already zero) on the reaper thread once its launches
 * completed (or here, waiting, if the thread cannot run). */
void tt_reaper_destroy_executable(tt_runtime *rt, struct tt_executable *e);
/* Waits until no launch of e is running, then destroys its PJRT executable
 * and frees it (runtime_buffers.c). Does not release e's runtime reference:
 * tt_executable_release dropped it when it queued e. */
void tt_executable_destroy_now(struct tt_executable *e);
/* Stops the thread after it destroyed everything queued. */
void tt_reaper_shutdown(tt_runtime *rt);

struct tt_runtime {
  atomic_int refs; /* 1 for the owner (dropped by close) + 1 per buffer/executable */
  const PJRT_Api *api;
  PJRT_Client *client;
  char *path;
  int api_major, api_minor;
  int num_devices;
  PJRT_Device **devices; /* addressable devices, client order */
  char **device_kinds;
  char *platform;
  tt_attr *attrs;
  int num_attrs;
  /* Settings read on hot paths; atomics because tests and the host-layout
   * fallback change them while other threads may be running. */
  atomic_bool host_layout_ok;   /* ask ToHostBuffer for an explicit row-major layout */
  atomic_bool cpu_direct;       /* CPU plugin: read device memory directly (see to_host) */
  atomic_bool track_completion; /* request device completion events from Execute */

  pthread_mutex_t lock; /* guards everything below */
  PJRT_Event **pending; /* completion events not yet known to be finished */
  size_t num_pending, cap_pending, next_reap;
  tt_error *async_err; /* first asynchronous failure since the last synchronize */
  char *fingerprint;   /* computed on first use */

  atomic_long live_buffers, live_executables;
  atomic_llong buffer_bytes, peak_buffer_bytes; /* device bytes held by live tt_buffers */
  tt_buffer_reaper reaper;
};

struct tt_buffer {
  atomic_int refs;
  int device;
  tt_runtime *rt;
  PJRT_Buffer *buf;
  tt_dtype dtype;
  int ndim;
  int64_t dims[TT_MAX_DIMS];
  bool donated; /* consumed by a launch: its bytes are no longer counted */
};

struct tt_executable {
  atomic_int refs;
  /* launches whose completion has not been seen yet (counted when the
   * plugin gives completion events and PJRT_Event_OnReady); the PJRT
   * executable is destroyed only when this is zero */
  atomic_int inflight;
  int num_outputs;
  int64_t temp_bytes; /* scratch memory each run allocates; -1: unknown */
  int fixed_device; /* -1: portable, runs anywhere via execute_device; -2: spmd */
  int num_spmd_devices; /* > 0: a multi-device program (tt_compile_spmd) */
  int *spmd_devices;    /* its devices (client indices), in the plugin's order */
  bool out_known;   /* out_dtypes/out_ndims/out_dims are filled */
  bool may_donate;  /* the program aliases inputs to outputs (or may: loaded) */
  unsigned long trace_id; /* the profiler's name for the program: "program #id" */
  tt_runtime *rt;
  PJRT_LoadedExecutable *exe;
  tt_dtype *out_dtypes;
  int *out_ndims;
  int64_t (*out_dims)[TT_MAX_DIMS];
};

/* Converts a PJRT error into a tt_error (plugin message kept, prefixed by
 * `what`) and destroys it. NULL in, NULL out. RESOURCE_EXHAUSTED becomes
 * TT_ERR_OUT_OF_MEMORY unless code is TT_ERR_COMPILE. */
tt_error *tt_pjrt_error(const PJRT_Api *api, PJRT_Error *err, tt_error_code code,
                        const char *what);
void tt_pjrt_event_destroy(const PJRT_Api *api, PJRT_Event *ev);
/* Destroys b now (waits for launches still reading it); NULL is a no-op. */
void tt_pjrt_buffer_destroy(const PJRT_Api *api, PJRT_Buffer *b);
/* Waits for ev, destroys it, returns its error. */
tt_error *tt_pjrt_await(const PJRT_Api *api, PJRT_Event *ev, tt_error_code code,
                        const char *what);
/* Hands ev to the runtime's pending list (awaited by synchronize). */
void tt_runtime_track_event(tt_runtime *rt, PJRT_Event *ev);

void tt_runtime_retain_internal(tt_runtime *rt);
void tt_runtime_release_internal(tt_runtime *rt);

PJRT_Buffer_Type tt_pjrt_type_of(tt_dtype dt);
/* Returns false for element types we have no tt_dtype for. */
bool tt_dtype_of_pjrt(PJRT_Buffer_Type t, tt_dtype *out);

/* Wraps a freshly created PJRT buffer (takes ownership; destroys it on failure). */
tt_error *tt_buffer_wrap(tt_runtime *rt, PJRT_Buffer *pb, int device, tt_dtype dtype, int ndim,
                         const int64_t *dims, tt_buffer **out);

/* Wraps a PJRT buffer an execution returned, asking it for its type and dims. */
tt_error *tt_buffer_wrap_queried(tt_runtime *rt, PJRT_Buffer *pb, int device, tt_buffer **out);
/* Wraps a loaded executable (takes ownership); spmd: it may span devices. */
/* Compiles MLIR text with serialized CompileOptionsProto bytes; a plugin
 * refusal comes back as TT_ERR_COMPILE prefixed by what. */
tt_error *tt_pjrt_compile(tt_runtime *rt, const char *mlir_text, size_t text_len,
                          const void *options, size_t options_len, const char *what,
                          PJRT_LoadedExecutable **out);
tt_error *tt_executable_wrap(tt_runtime *rt, PJRT_LoadedExecutable *le, bool spmd,
                             tt_executable **out);

/* Fills a client's create arguments for opts (runtime_procs.c): options
 * into `named` (room for TT_CREATE_OPTIONS_MAX), list values into `lists`
 * (as many), and the key-value callbacks over opts->kv when multi-process. */
tt_error *tt_runtime_fill_create_args(const tt_runtime_options *opts, tt_plugin_kind kind,
                                      PJRT_Client_Create_Args *a, PJRT_NamedValue *named,
                                      int64_t *lists);

/* ------------------------------------------------------ test/bench hooks */

/* Live tt_buffer / tt_executable objects created through rt, and completion
 * events still on its pending list. */
void tt_runtime_debug_counts(tt_runtime *rt, long *buffers, long *executables,
                             size_t *pending_events);
/* Whether tt_execute asks the plugin for device completion events (default
 * true). Without them tt_runtime_synchronize cannot wait for executions;
 * failures then surface only when outputs are read. Benchmark knob. */
void tt_runtime_set_track_completion(tt_runtime *rt, bool on);
/* Turns the CPU direct-read shortcut of tt_buffer_to_host off or (where
 * possible) on; returns the previous setting. Test knob. */
bool tt_runtime_set_cpu_direct_read(tt_runtime *rt, bool on);

#endif
