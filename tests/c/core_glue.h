/* Glue for the C tests that drive the core without PyTorch: building the
 * argument structs the C++ boundary would build (tensor refs over storages,
 * Scalars, static arguments), a pass/fail counter, and bringing the runtime
 * up from the plugin path the Makefile passes.
 *
 * Every core name these tests depend on is used here or in the few calls
 * the test files make (tt_program_build, tt_op_run, the cache and region
 * counters), so a rename in the core is fixed in one place. */
#ifndef TT_TESTS_CORE_GLUE_H
#define TT_TESTS_CORE_GLUE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/core.h"
#include "graph/execute.h"
#include "graph/lower_ctx.h"
#include "graph/program.h"
#include "graph/storage.h"
#include "ops/lowering.h"

#include "check.h"

/* ------------------------------------------------------------ arguments */

/* Every ref and storage a test case makes, freed together by glue_reset. */
#define GLUE_MAX 64
static struct {
  tt_tensor_ref refs[GLUE_MAX];
  int n_refs;
  tt_storage *storages[GLUE_MAX];
  int n_storages;
  tt_tensor_ref *lists[GLUE_MAX][4];
  int n_lists;
} G;

static inline void glue_reset(void) {
  for (int i = 0; i < G.n_storages; i++) tt_storage_drop(G.storages[i]);
  memset(&G, 0, sizeof G);
}

static inline tt_storage *glue_storage(int64_t numel, tt_dtype dt) {
  if (G.n_storages == GLUE_MAX) abort();
  tt_storage *s = tt_storage_new(0, (size_t)numel * tt_dtype_size(dt));
  if (!s) abort();
  G.storages[G.n_storages++] = s;
  return s;
}

/* A view of storage s: sizes and strides (NULL: contiguous) at offset. */
static inline tt_tensor_ref *glue_view(tt_storage *s, tt_dtype dt, int ndim, const int64_t *sizes,
                                const int64_t *strides, int64_t offset) {
  if (G.n_refs == GLUE_MAX) abort();
  tt_tensor_ref *r = &G.refs[G.n_refs++];
  memset(r, 0, sizeof *r);
  r->storage = s;
  r->dtype = dt;
  r->ndim = ndim;
  r->offset = offset;
  int64_t st = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    r->sizes[d] = sizes[d];
    r->strides[d] = strides ? strides[d] : st;
    st *= sizes[d];
  }
  return r;
}

/* A fresh contiguous tensor: T(TT_F32, 2, 3) is f32[2,3]. */
static inline tt_tensor_ref *glue_tensor(tt_dtype dt, int ndim, ...) {
  int64_t sizes[TT_MAX_DIMS], numel = 1;
  va_list ap;
  va_start(ap, ndim);
  for (int d = 0; d < ndim; d++) numel *= sizes[d] = va_arg(ap, int);
  va_end(ap);
  return glue_view(glue_storage(numel, dt), dt, ndim, sizes, NULL, 0);
}
#define T(dt, ...) glue_tensor(dt, (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)), __VA_ARGS__)
#define T0(dt) glue_tensor(dt, 0)

/* A 0-dim CPU tensor passed by value (a Python number wrapped as a tensor). */
static inline tt_tensor_ref *glue_cpu_scalar(tt_dtype dt, double v, bool wrapped) {
  if (G.n_refs == GLUE_MAX) abort();
  tt_tensor_ref *r = &G.refs[G.n_refs++];
  memset(r, 0, sizeof *r);
  r->dtype = dt;
  r->wrapped_number = wrapped;
  r->value_f = v;
  r->value_i = (int64_t)v;
  return r;
}

static inline tt_arg A_TENSOR(tt_tensor_ref *r) { return (tt_arg){.kind = TT_ARG_TENSOR, .u.tensor = r}; }
/* A mutated argument (in-place self), or an out= argument (also resizable). */
static inline tt_arg A_WRITTEN(tt_tensor_ref *r) {
  return (tt_arg){.kind = TT_ARG_TENSOR, .written = true, .u.tensor = r};
}
static inline tt_arg A_OUT(tt_tensor_ref *r) {
  return (tt_arg){.kind = TT_ARG_TENSOR, .written = true, .resizable = true, .u.tensor = r};
}
static inline tt_arg A_LIST(int n, tt_tensor_ref *a, tt_tensor_ref *b) {
  if (G.n_lists == GLUE_MAX) abort();
  tt_tensor_ref **l = G.lists[G.n_lists++];
  l[0] = a;
  l[1] = b;
  return (tt_arg){.kind = TT_ARG_TENSOR_LIST, .count = n, .u.tensors = l};
}
static inline tt_arg A_INT(int64_t i) { return (tt_arg){.kind = TT_ARG_INT, .u.i = i}; }
static inline tt_arg A_BOOL(bool b) { return (tt_arg){.kind = TT_ARG_BOOL, .u.b = b}; }
static inline tt_arg A_DOUBLE(double d) { return (tt_arg){.kind = TT_ARG_DOUBLE, .u.d = d}; }
static inline tt_arg A_NONE(void) { return (tt_arg){.kind = TT_ARG_NONE}; }
static inline tt_arg A_SCALAR_I(int64_t i) {
  return (tt_arg){.kind = TT_ARG_SCALAR, .u.s = {.kind = TT_SCALAR_INT, .i = i}};
}
static inline tt_arg A_SCALAR_F(double f) {
  return (tt_arg){.kind = TT_ARG_SCALAR, .u.s = {.kind = TT_SCALAR_FLOAT, .f = f}};
}
/* An int list argument; the values live in the caller's array. */
static inline tt_arg A_INTS(int n, int64_t *v) {
  return (tt_arg){.kind = TT_ARG_INT_LIST, .count = n, .u.ints = v};
}
#define INTS(...) A_INTS((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                         (int64_t[]){__VA_ARGS__})
#define NARGS(args) ((int)(sizeof(args) / sizeof((args)[0])))

/* ------------------------------------------------------------ runtime */

/* Brings the core up on the plugin at `plugin` (argv[1] of the tests),
 * with the persistent cache off so every counter reflects this process. */
static inline int glue_init_runtime(const char *plugin) {
  setenv("TORCH_TPU_CACHE", "0", 1);
  if (plugin) setenv("TORCH_TPU_PJRT_PLUGIN", plugin, 1);
  tt_error *err = tt_core_init(NULL);
  if (err) {
    fprintf(stderr, "core init failed: %s\n", tt_error_message(err));
    tt_error_free(err);
    return 1;
  }
  return 0;
}

static inline int glue_report(const char *suite) {
  printf("%s: %d passed, %d failed\n", suite, passed, failed);
  return failed ? 1 : 0;
}

#endif
