/* Compiled collectives across processes (collectives_procs.h): each process
 * launches its own share of one program whose device assignment lists every
 * process's devices; the plugin's multi-process client joins the launches.
 * The programs are collectives.c's (tt_coll_emit), on the flat elements. */
#include "dist/collectives_procs.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static tt_error *oom(void) { return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"); }

typedef struct cached_program {
  char *text;
  tt_executable *exe;
  struct cached_program *next;
} cached_program;

struct tt_coll_procs {
  tt_runtime *rt;
  int n;
  int *ids;              /* global id of partition r */
  int n_local;
  int *local_rank;       /* partition of this process's k-th device */
  int *local_device;     /* its client index */
  pthread_mutex_t lock;  /* guards programs */
  cached_program *programs;
};

tt_error *tt_coll_procs_new(tt_runtime *rt, const int *global_ids, int n, tt_coll_procs **out) {
  if (!rt || !global_ids || n < 1 || !out)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_coll_procs_new: bad arguments");
  *out = NULL;
  int table_n = 0;
  TT_TRY(tt_runtime_global_devices(rt, NULL, 0, &table_n));
  tt_global_device *table = calloc((size_t)(table_n ? table_n : 1), sizeof *table);
  tt_coll_procs *g = calloc(1, sizeof *g);
  tt_error *err = NULL;
  if (!table || !g || !(g->ids = calloc((size_t)n, sizeof *g->ids)) ||
      !(g->local_rank = calloc((size_t)n, sizeof *g->local_rank)) ||
      !(g->local_device = calloc((size_t)n, sizeof *g->local_device)))
    err = oom();
  int got = 0;
  if (!err) err = tt_runtime_global_devices(rt, table, table_n, &got);
  if (!err)
    err = tt_spmd_assignment(global_ids, n, table, got < table_n ? got : table_n, g->local_rank,
                             g->local_device, &g->n_local);
  free(table);
  if (err) {
    if (g) {
      free(g->ids);
      free(g->local_rank);
      free(g->local_device);
      free(g);
    }
    return err;
  }
  memcpy(g->ids, global_ids, (size_t)n * sizeof *g->ids);
  g->rt = rt;
  g->n = n;
  pthread_mutex_init(&g->lock, NULL);
  *out = g;
  return NULL;
}

void tt_coll_procs_free(tt_coll_procs *g) {
  if (!g) return;
  for (cached_program *p = g->programs, *next; p; p = next) {
    next = p->next;
    tt_executable_release(p->exe);
    free(p->text);
    free(p);
  }
  pthread_mutex_destroy(&g->lock);
  free(g->ids);
  free(g->local_rank);
  free(g->local_device);
  free(g);
}

int tt_coll_procs_size(const tt_coll_procs *g) { return g ? g->n : 0; }
int tt_coll_procs_local_count(const tt_coll_procs *g) { return g ? g->n_local : 0; }
int tt_coll_procs_local_rank(const tt_coll_procs *g, int k) {
  return g && k >= 0 && k < g->n_local ? g->local_rank[k] : -1;
}
int tt_coll_procs_local_device(const tt_coll_procs *g, int k) {
  return g && k >= 0 && k < g->n_local ? g->local_device[k] : -1;
}

/* The program for text (compiled once per group). */
static tt_error *program_for(tt_coll_procs *g, const char *text, tt_executable **out) {
  pthread_mutex_lock(&g->lock);
  for (cached_program *p = g->programs; p; p = p->next)
    if (!strcmp(p->text, text)) {
      *out = tt_executable_retain(p->exe);
      pthread_mutex_unlock(&g->lock);
      return NULL;
    }
  pthread_mutex_unlock(&g->lock);
  tt_executable *exe = NULL;
  TT_TRY(tt_compile_spmd_global(g->rt, text, strlen(text), g->ids, g->n, &exe));
  cached_program *p = calloc(1, sizeof *p);
  if (!p || !(p->text = strdup(text))) {
    free(p);
    tt_executable_release(exe);
    return oom();
  }
  p->exe = tt_executable_retain(exe);
  pthread_mutex_lock(&g->lock);
  p->next = g->programs;
  g->programs = p;
  pthread_mutex_unlock(&g->lock);
  *out = exe;
  return NULL;
}

tt_error *tt_coll_procs_run(tt_coll_procs *g, const tt_coll_op *op, tt_buffer *const *ins,
                            tt_dtype dtype, const int64_t *dims, int ndim, tt_buffer **outs,
                            int64_t *out_dims) {
  if (!g || !op || !ins || !outs || ndim < 0 || (ndim > 0 && !dims))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_coll_procs_run: bad arguments");
  const char *name = tt_coll_kind_name(op->kind);
  int64_t flat = 1;
  for (int i = 0; i < ndim; i++) flat *= dims[i];
  int64_t d0 = ndim > 0 ? dims[0] : 1;
  if ((op->kind == TT_COLL_REDUCE_SCATTER || op->kind == TT_COLL_ALL_TO_ALL) &&
      (ndim == 0 || d0 % g->n))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "%s: dimension 0 (%lld) is not divisible by the group size %d", name,
                        (long long)(ndim ? d0 : 0), g->n);
  for (int i = 0; i < ndim && out_dims; i++) out_dims[i] = dims[i];
  if (out_dims && ndim > 0) {
    if (op->kind == TT_COLL_ALL_GATHER) out_dims[0] = d0 * g->n;
    if (op->kind == TT_COLL_REDUCE_SCATTER) out_dims[0] = d0 / g->n;
  }
  if (op->kind == TT_COLL_ALL_GATHER && ndim == 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: a 0-dim tensor has no dimension 0", name);
  char *text = NULL;
  int64_t out_flat = 0;
  TT_TRY(tt_coll_emit(op, g->n, dtype, &flat, 1, &text, &out_flat));
  tt_executable *exe = NULL;
  tt_error *err = program_for(g, text, &exe);
  free(text);
  if (err) return err;
  err = tt_execute_spmd(exe, g->local_device, ins, 1, outs, 1);
  tt_executable_release(exe);
  return err ? tt_error_wrap(err, "%s over %d partitions (%d of them here)", name, g->n, g->n_local)
             : NULL;
}
