/* Compiled collectives across processes: a group of n ranks whose devices
 * (global ids, every process's) one multi-process PJRT client sees. Each
 * process runs its own ranks' share of each collective (usually one rank):
 * one StableHLO program (collectives.c's emission) compiled for n
 * partitions with the device assignment of the global ids, launched with
 * this process's arguments only; the plugin joins the processes' launches.
 *
 * Written for GPU and TPU clients that span processes; on the CPU plugin
 * (one process addresses every device) it runs with all ranks local, which
 * is how tests/c/test_procs.c exercises it. Not run across processes here
 * (docs/distributed.md). No cross-rank check of shapes: the ranks must call
 * the same collective on the same shapes. Thread-safe. */
#ifndef TT_DIST_COLLECTIVES_PROCS_H
#define TT_DIST_COLLECTIVES_PROCS_H

#include "dist/collectives.h"

typedef struct tt_coll_procs tt_coll_procs;

/* A group of n ranks, rank r on the device of global id global_ids[r].
 * Errors: an id twice or unknown to the client, no rank on this process. */
tt_error *tt_coll_procs_new(tt_runtime *rt, const int *global_ids, int n, tt_coll_procs **out);
void tt_coll_procs_free(tt_coll_procs *g); /* accepts NULL */
int tt_coll_procs_size(const tt_coll_procs *g);
/* This process's ranks: k-th local rank, and its client device index. */
int tt_coll_procs_local_count(const tt_coll_procs *g);
int tt_coll_procs_local_rank(const tt_coll_procs *g, int k);
int tt_coll_procs_local_device(const tt_coll_procs *g, int k);

/* This process's part of a collective: ins[k] holds local rank k's tensor
 * (dtype, shape dims; its elements in row-major order, any buffer shape)
 * on its device; outs[k] receives its 1-D result and out_dims (may be
 * NULL) the result's shape. Programs are compiled once per group. */
tt_error *tt_coll_procs_run(tt_coll_procs *g, const tt_coll_op *op, tt_buffer *const *ins,
                            tt_dtype dtype, const int64_t *dims, int ndim, tt_buffer **outs,
                            int64_t *out_dims);

#endif
