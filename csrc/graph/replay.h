/* Replaying a captured graph: torch.compile's fast path.
 *
 * The first call of a compiled graph dispatches its ops one by one into a
 * capture region, which compiles (or finds) one program and launches it.
 * When that capture flushed exactly once, the launch is kept as a replay:
 * which graph argument feeds each program parameter, and which storage
 * (a graph argument's, or a new one behind graph outputs) each program
 * result fills. Later calls whose arguments have the recorded layout launch
 * the program directly: no per-op dispatch, recording, keys or cache
 * lookups. A call whose arguments differ is refused (nothing runs) and the
 * caller takes the ordinary path. */
#ifndef TT_GRAPH_REPLAY_H
#define TT_GRAPH_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/device_checks.h"
#include "graph/storage.h"
#include "core/args.h"
#include "cache/exe_pool.h"
#include "pjrt/runtime.h"

typedef struct tt_replay tt_replay;

/* One parameter of a launched region program, as the region layer saw it. */
typedef enum { TT_LAUNCH_STORAGE, TT_LAUNCH_VALUE, TT_LAUNCH_RNG } tt_launch_param_kind;

typedef struct {
  tt_launch_param_kind kind;
  tt_storage *storage;     /* STORAGE: read as a flat array of dtype x numel */
  tt_dtype dtype;
  int64_t numel;
  bool donated;            /* STORAGE: the program reuses its buffer for a result */
  unsigned char bytes[16]; /* VALUE: the host value */
} tt_launch_param;

/* What one region flush launched. */
typedef struct {
  tt_pool_entry *slot; /* the program's executable (borrowed; a replay retains it) */
  const void *program; /* identity for per-step statistics */
  int device;
  const tt_launch_param *params;
  int n_params;
  tt_storage *const *results; /* the storage each program result was written to */
  int n_results;
  /* device-side checks (graph/device_checks.h): with n_checks > 0 the
   * program's last output, after the results, is its error word */
  const tt_check_site *checks;
  int n_checks;
  const char *text; /* the program's StableHLO, kept by the replay (export); may be NULL */
} tt_launch_record;

/* A graph argument or output: ref->ndim < 0 means None. */
#define TT_REF_NONE (-1)

/* Builds a replay of `rec` for a graph called with args and returning outs.
 * Returns NULL with *why_not set (a static string) when the launch cannot
 * be replayed from the arguments alone. */
tt_replay *tt_replay_new(const tt_launch_record *rec, const tt_tensor_ref *args, int n_args,
                         const tt_tensor_ref *outs, int n_outs, const char **why_not);
void tt_replay_free(tt_replay *r);

/* Launches the program for new arguments. Sets *matched false and runs
 * nothing when an argument's dtype, sizes, strides, offset, storage size,
 * device or aliasing differs from the recorded call, or a buffer the
 * program donates is shared. Otherwise fills new_storages (tt_replay_num_new
 * entries; the caller owns their user references). */
tt_error *tt_replay_run(tt_replay *r, const tt_tensor_ref *args, int n_args, bool *matched,
                        tt_storage **new_storages);

typedef enum { TT_REPLAY_OUT_NONE, TT_REPLAY_OUT_NEW, TT_REPLAY_OUT_ARG } tt_replay_out_kind;

int tt_replay_num_new(const tt_replay *r);
int tt_replay_device(const tt_replay *r);
int tt_replay_num_outputs(const tt_replay *r);
/* Graph output k: a new storage (index into new_storages) or an argument's
 * storage (argument index), viewed as *view (dtype, sizes, strides,
 * offset; its storage field is unused). */
tt_replay_out_kind tt_replay_output(const tt_replay *r, int k, int *index,
                                    const tt_tensor_ref **view);

/* The program as an export sees it (torch_tpu.export): its StableHLO text
 * (NULL unless the record carried it), and per parameter what feeds it:
 * a graph argument's storage read flat (STORAGE, *arg), or a host value
 * (VALUE: bytes; RNG: a generator state). */
const char *tt_replay_text(const tt_replay *r);
int tt_replay_num_params(const tt_replay *r);
tt_launch_param_kind tt_replay_param(const tt_replay *r, int p, int *arg, tt_dtype *dtype,
                                     int64_t *numel, bool *donated, const unsigned char **bytes);
/* Program result o: a new storage (index) or an argument written (index). */
int tt_replay_num_results(const tt_replay *r);
tt_replay_out_kind tt_replay_result(const tt_replay *r, int o, int *index);
/* The program's executable (the caller's reference), or NULL when the
 * pool unloaded it. */
tt_executable *tt_replay_executable(const tt_replay *r);
/* Device-side checks: with n > 0 the program's last output is the error word. */
int tt_replay_num_checks(const tt_replay *r);
/* The program's identity: replays of one program (the same compiled text)
 * return the same pointer (only compared, never dereferenced). */
const void *tt_replay_program(const tt_replay *r);
const tt_check_site *tt_replay_check(const tt_replay *r, int i);

typedef struct {
  uint64_t replays;  /* programs launched by replay */
  uint64_t refused;  /* calls whose arguments did not match */
} tt_replay_stats;

tt_replay_stats tt_replay_get_stats(void);

#endif
