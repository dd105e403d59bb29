/* Compiled collectives for ranks that are threads of one process, each on
 * its own device of one PJRT client (the in-process N-device case of the
 * distributed layer; on the CPU plugin TORCH_TPU_NUM_DEVICES=N).
 *
 * A group lists n client devices; rank r owns devices[r]. Each rank's thread
 * calls tt_coll_run with its own buffer; the calls meet in a rendezvous, and
 * the last to arrive checks that every rank asked for the same collective on
 * tensors of the same dtype and shape, finds (or compiles, once) the
 * StableHLO program for it, compiled for n partitions with the group's
 * device assignment, launches it once over the n devices, and hands every
 * rank its own output. A mismatch, a failed compile or launch, or a rank
 * that does not arrive within the timeout returns an error to every rank
 * that arrived; no call waits longer than its timeout.
 *
 * Programs are cached in the in-memory compilation cache (cache/) under a
 * key of the program text and the device list. Thread-safe. */
#ifndef TT_DIST_COLLECTIVES_H
#define TT_DIST_COLLECTIVES_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"
#include "pjrt/runtime.h"

typedef enum {
  TT_COLL_ALL_REDUCE = 0,
  TT_COLL_ALL_GATHER,     /* concatenates along dim 0: (n*d0, ...) */
  TT_COLL_REDUCE_SCATTER, /* reduces, then rank r keeps block r of dim 0 (d0 % n == 0) */
  TT_COLL_ALL_TO_ALL,     /* block j of dim 0 goes to rank j; block i of the output came from rank i */
  TT_COLL_PERMUTE,        /* collective_permute: pairs (source, target); non-targets get zeros */
  TT_COLL_COUNT
} tt_coll_kind;

typedef enum {
  TT_RED_SUM = 0,
  TT_RED_AVG, /* SUM, then division by n (integers: truncating, as NCCL's average) */
  TT_RED_MAX,
  TT_RED_MIN,
  TT_RED_PROD,
  TT_RED_COUNT
} tt_coll_reduce;

enum { TT_COLL_MAX_PAIRS = 64 };

typedef struct {
  tt_coll_kind kind;
  tt_coll_reduce reduce; /* all_reduce, reduce_scatter */
  int n_pairs;           /* permute: pairs[2*i] sends to pairs[2*i+1] (ranks) */
  int pairs[2 * TT_COLL_MAX_PAIRS];
} tt_coll_op;

const char *tt_coll_kind_name(tt_coll_kind k);     /* "all_reduce" */
const char *tt_coll_reduce_name(tt_coll_reduce r); /* "sum" */

/* The StableHLO module (malloc'd text, caller frees) that runs `op` over n
 * partitions on one rank's tensor of `dtype` and dims; also writes the
 * output dims (*out_ndim == ndim). Errors for shapes the op cannot take. */
tt_error *tt_coll_emit(const tt_coll_op *op, int n, tt_dtype dtype, const int64_t *dims, int ndim,
                       char **text, int64_t *out_dims);

/* The same collective as a private function `@symbol` of one argument (one
 * rank's tensor) returning the result, for a program that calls it among
 * other ops (tt_b_add_function + tt_b_call): whole `func.func private`
 * text, malloc'd. Collectives of one program need distinct channels
 * (>= 1). */
tt_error *tt_coll_emit_function(const tt_coll_op *op, int n, tt_dtype dtype, const int64_t *dims,
                                int ndim, int channel, const char *symbol, char **text,
                                int64_t *out_dims);

typedef struct tt_coll_group tt_coll_group;

/* A group of n ranks over client devices devices[0..n-1] (distinct). */
tt_error *tt_coll_group_new(tt_runtime *rt, const int *devices, int n, tt_coll_group **out);
/* Frees the group; no call may be running on it. Accepts NULL. */
void tt_coll_group_free(tt_coll_group *g);
int tt_coll_group_size(const tt_coll_group *g);
/* The rank whose device is `device`, or -1. */
int tt_coll_group_rank_of(const tt_coll_group *g, int device);

/* Rank `rank`'s part of a collective on its tensor of shape dims (ndim):
 * `in` holds the tensor's elements in row-major order (any buffer shape of
 * that many elements, e.g. a storage's flat buffer; borrowed) on the rank's
 * device. The ranks' shapes, dtypes and ops must agree. The program runs on
 * the flat elements (blocks of dimension 0 of a row-major tensor are
 * contiguous runs), so on success *out (owned by the caller) is a 1-D
 * buffer holding the result's elements; out_dims (may be NULL) receives
 * the result's shape (ndim dims). Waits at most timeout_s seconds for the
 * other ranks. */
tt_error *tt_coll_run(tt_coll_group *g, int rank, const tt_coll_op *op, tt_buffer *in,
                      const int64_t *dims, int ndim, double timeout_s, tt_buffer **out,
                      int64_t *out_dims);

/* Rank `rank`'s part of launching one whole program over the group (e.g. a
 * Fused region that holds collectives: compute, all_reduce, compute): every
 * rank passes the program's StableHLO text and its own n_args argument
 * buffers on its device (borrowed); the ranks meet in the same rendezvous as
 * tt_coll_run. The last to arrive checks that every rank passed the same
 * text and arguments of the same dtypes and sizes; else every rank gets an
 * error naming `what` (e.g. "fused region of 5 ops (mul ... add)") and each
 * rank's description, and nothing runs. Otherwise it compiles the text for n
 * partitions with the group's device assignment (cached under the text and
 * the devices; a module saying mhlo.num_partitions = 1, as the region
 * builder writes, is made to say n) and launches it once; each rank's
 * outs[0..n_outs) receives its own results (new references). A rank that
 * does not arrive within timeout_s makes the others fail, as tt_coll_run. */
tt_error *tt_coll_run_program(tt_coll_group *g, int rank, const char *what, const char *text,
                              tt_buffer *const *args, int n_args, tt_buffer **outs, int n_outs,
                              double timeout_s);

typedef struct {
  int64_t launches;      /* multi-device programs launched */
  int64_t programs;      /* of which whole programs (tt_coll_run_program) */
  int64_t compiles;      /* programs compiled (cache misses) */
  int64_t errors;        /* rounds that ended in an error */
  double launch_seconds; /* wall time of launches, compile excluded */
} tt_coll_stats;
tt_coll_stats tt_coll_get_stats(void);

#endif
