/* Fused eager and graph capture: ops recorded into one open region and
 * compiled together.
 *
 * While the region is open, an op is not launched: its per-op plan (from the
 * compilation cache, built by the same lowering as Strict eager) is recorded
 * with its arguments, and its new tensors get storages whose value is
 * pending in the region. At a flush the recorded ops are replayed through
 * their lowerings into one StableHLO program, cached under a key made of the
 * ops' keys and how their tensors connect, and launched once. Values whose
 * tensors died before the flush are never materialized.
 *
 * Flushes happen when a pending value is read or a region storage is
 * written from outside (host reads: .item(), .cpu(), print; CPU fallback
 * ops; Strict ops), on an explicit sync, when the op count reaches the cap,
 * at a loop boundary (the op sequence starts repeating), on a device change
 * and when a storage is read as another dtype. There is one region per
 * process, guarded by a lock. */
#ifndef TT_GRAPH_REGION_H
#define TT_GRAPH_REGION_H

#include "graph/lower_ctx.h"
#include "graph/program.h"

typedef enum {
  TT_FLUSH_SYNC,       /* torch_tpu.sync() / synchronize / mode change */
  TT_FLUSH_HOST_READ,  /* a pending value was read (host copy, fallback, strict op) */
  TT_FLUSH_WRITE,      /* a region storage was written from outside */
  TT_FLUSH_LOOP,       /* the op sequence started repeating */
  TT_FLUSH_SIZE_CAP,   /* too many ops in one region */
  TT_FLUSH_DEVICE,     /* an op on another device */
  TT_FLUSH_DTYPE,      /* a storage read as another dtype */
  TT_FLUSH_CAPTURE,    /* graph capture began or ended */
  TT_FLUSH_COLLECTIVE, /* a collective read or wrote a pending value (tt_region_flush_for_collective) */
  TT_FLUSH_REASONS
} tt_flush_reason;

const char *tt_flush_reason_name(tt_flush_reason r);

/* Records op (its per-op plan `plan`, cached under op_key) into the region;
 * new tensors are returned in res with pending storages. */
tt_error *tt_region_record(const char *op_name, tt_lower_fn fn, tt_program *plan,
                           const void *op_key, size_t op_key_len, tt_arg *args, int nargs,
                           bool returns_written, int device, tt_op_result *res);

/* Compiles (or finds) and launches the recorded ops. No-op when empty. */
tt_error *tt_region_flush(tt_flush_reason reason);

/* A collective is about to read storage s: when s holds a value pending in
 * the open region, the region is flushed with reason TT_FLUSH_COLLECTIVE
 * and *flushed (may be NULL) is set; otherwise nothing happens. */
tt_error *tt_region_flush_for_collective(tt_storage *s, bool *flushed);

/* Graph capture (torch.compile): between begin and end, loop detection and
 * the size cap are off, so the captured ops form one program unless an op
 * needs a pending value on the host. begin flushes what was recorded
 * before; end flushes the capture. Nests. */
tt_error *tt_region_capture_begin(void);
tt_error *tt_region_capture_end(void);

/* capture_end for a graph called with args that returned outs (see
 * replay.h): when the capture ran as one program, *replay is a replay of it
 * (caller frees); otherwise NULL with *why_not saying why. */
typedef struct tt_replay tt_replay;
tt_error *tt_region_capture_end_replay(const tt_tensor_ref *args, int n_args,
                                       const tt_tensor_ref *outs, int n_outs, tt_replay **replay,
                                       const char **why_not);
/* The same, for torch_tpu.export: the replay also keeps the program's
 * StableHLO text (tt_replay_text), lowered again when the program came
 * from the persistent cache without it. */
tt_error *tt_region_capture_end_export(const tt_tensor_ref *args, int n_args,
                                       const tt_tensor_ref *outs, int n_outs, tt_replay **replay,
                                       const char **why_not);

/* Maximum ops per region (TORCH_TPU_FUSED_MAX_OPS, default 2048). */
void tt_region_set_max_ops(int n);

typedef struct {
  uint64_t ops_recorded;
  uint64_t flushes[TT_FLUSH_REASONS];
  uint64_t programs_run;   /* region launches */
  uint64_t compiles;       /* region programs compiled */
  uint64_t cache_hits;     /* region programs found in the cache */
  uint64_t disk_loads;     /* region programs loaded from the persistent cache */
  uint64_t values_elided;  /* pending values never materialized (tensor died) */
  uint64_t scratch_splits; /* size cap lowered to keep CPU scratch under 32 MiB */
  uint64_t buffers_donated; /* input buffers an output reused in place */
  double compile_seconds;
  int max_ops;             /* the size cap now in force */
} tt_region_stats;

tt_region_stats tt_region_get_stats(void);

#endif
