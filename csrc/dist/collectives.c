/* Compiled collectives for ranks that are threads of one process
 * (collectives.h): StableHLO emission, the program cache, the rendezvous. */
#include "dist/collectives.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/compile_cache.h"

static tt_error *oom(void) { return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"); }

static const char *const KIND_NAMES[TT_COLL_COUNT] = {"all_reduce", "all_gather", "reduce_scatter",
                                                      "all_to_all", "collective_permute"};
static const char *const REDUCE_NAMES[TT_RED_COUNT] = {"sum", "avg", "max", "min", "product"};

const char *tt_coll_kind_name(tt_coll_kind k) {
  return k >= 0 && k < TT_COLL_COUNT ? KIND_NAMES[k] : "unknown collective";
}

const char *tt_coll_reduce_name(tt_coll_reduce r) {
  return r >= 0 && r < TT_RED_COUNT ? REDUCE_NAMES[r] : "unknown reduction";
}

/* ------------------------------------------------------------- emission */

typedef struct {
  char *p;
  size_t n, cap;
  bool failed;
} text_buf;

__attribute__((format(printf, 2, 3))) static void tprintf(text_buf *t, const char *fmt, ...) {
  if (t->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      t->failed = true;
      return;
    }
    if (t->p && t->n + (size_t)k < t->cap) {
      t->n += (size_t)k;
      return;
    }
    size_t cap = (t->cap ? t->cap : 512) * 2;
    while (cap < t->n + (size_t)k + 1) cap *= 2;
    char *p = realloc(t->p, cap);
    if (!p) {
      t->failed = true;
      return;
    }
    t->p = p;
    t->cap = cap;
  }
}

static void print_type(text_buf *t, tt_dtype dt, const int64_t *dims, int ndim) {
  tprintf(t, "tensor<");
  for (int i = 0; i < ndim; i++) tprintf(t, "%lldx", (long long)dims[i]);
  tprintf(t, "%s>", tt_dtype_mlir(dt));
}

/* The scalar body of the reduction, or NULL where dtype cannot take it. */
static const char *reduce_body(tt_coll_reduce r, tt_dtype dt) {
  bool b = dt == TT_BOOL;
  switch (r) {
  case TT_RED_SUM:
  case TT_RED_AVG: return b ? "or" : "add";
  case TT_RED_MAX: return b ? "or" : "maximum";
  case TT_RED_MIN: return b ? "and" : "minimum";
  case TT_RED_PROD: return b ? "and" : "multiply";
  default: return NULL;
  }
}

static void print_region(text_buf *t, const char *body, tt_dtype dt) {
  const char *ty = tt_dtype_mlir(dt);
  tprintf(t,
          "({\n    ^bb0(%%lhs: tensor<%s>, %%rhs: tensor<%s>):\n"
          "      %%res = \"stablehlo.%s\"(%%lhs, %%rhs) : (tensor<%s>, tensor<%s>) -> tensor<%s>\n"
          "      \"stablehlo.return\"(%%res) : (tensor<%s>) -> ()\n    })",
          ty, ty, body, ty, ty, ty, ty);
}

/* replica_groups naming every partition (ids are flattened: replica 0). */
static void print_groups(text_buf *t, int n) {
  tprintf(t, "replica_groups = dense<[[");
  for (int i = 0; i < n; i++) tprintf(t, i ? ", %d" : "%d", i);
  tprintf(t, "]]> : tensor<1x%dxi64>", n);
}

static tt_error *check_op(const tt_coll_op *op, int n, tt_dtype dtype, const int64_t *dims,
                          int ndim) {
  const char *name = tt_coll_kind_name(op->kind);
  if (op->kind < 0 || op->kind >= TT_COLL_COUNT)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "compiled collectives: unknown collective %d",
                        (int)op->kind);
  if (n < 1) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: a group needs a rank", name);
  if (ndim < 0 || ndim > TT_MAX_DIMS)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: rank-%d tensors are not supported", name, ndim);
  switch (dtype) {
  case TT_BOOL: case TT_U8: case TT_I8: case TT_I16: case TT_I32: case TT_I64:
  case TT_F16: case TT_BF16: case TT_F32: case TT_F64: break;
  default:
    return tt_error_new(TT_ERR_TYPE, "%s: %s tensors are not supported by compiled collectives",
                        name, tt_dtype_name(dtype));
  }
  bool reduces = op->kind == TT_COLL_ALL_REDUCE || op->kind == TT_COLL_REDUCE_SCATTER;
  if (reduces && (op->reduce < 0 || op->reduce >= TT_RED_COUNT))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: unknown reduction %d", name, (int)op->reduce);
  if (reduces && op->reduce == TT_RED_AVG && dtype == TT_BOOL)
    return tt_error_new(TT_ERR_TYPE, "%s: avg of bool tensors is not defined", name);
  bool splits = op->kind != TT_COLL_ALL_REDUCE && op->kind != TT_COLL_PERMUTE;
  if (splits && ndim < 1)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: needs a tensor of at least one dimension",
                        name);
  if ((op->kind == TT_COLL_REDUCE_SCATTER || op->kind == TT_COLL_ALL_TO_ALL) && dims[0] % n)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "%s: dimension 0 (%lld) is not divisible by the group size %d", name,
                        (long long)dims[0], n);
  if (op->kind == TT_COLL_PERMUTE) {
    if (op->n_pairs < 1 || op->n_pairs > TT_COLL_MAX_PAIRS)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: needs 1 to %d (source, target) pairs",
                          name, TT_COLL_MAX_PAIRS);
    for (int i = 0; i < op->n_pairs; i++) {
      int s = op->pairs[2 * i], d = op->pairs[2 * i + 1];
      if (s < 0 || s >= n || d < 0 || d >= n)
        return tt_error_new(TT_ERR_INDEX, "%s: pair (%d, %d) names a rank outside 0..%d", name, s,
                            d, n - 1);
      for (int j = 0; j < i; j++)
        if (op->pairs[2 * j] == s || op->pairs[2 * j + 1] == d)
          return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                              "%s: rank %d appears twice as a %s", name,
                              op->pairs[2 * j] == s ? s : d,
                              op->pairs[2 * j] == s ? "source" : "target");
    }
  }
  return NULL;
}

/* The collective's ops on %arg0, from `%0 = ...` to `func.return`. */
static void emit_body(text_buf *t, const tt_coll_op *op, int n, tt_dtype dtype, const int64_t *dims,
                      int ndim, const int64_t *out_dims, int channel) {
  tprintf(t, "    %%0 = \"stablehlo.%s\"(%%arg0) ", tt_coll_kind_name(op->kind));
  char channel_attr[96];
  snprintf(channel_attr, sizeof channel_attr,
           "channel_handle = #stablehlo.channel_handle<handle = %d, type = 1>", channel);
  switch (op->kind) {
  case TT_COLL_ALL_REDUCE:
  case TT_COLL_REDUCE_SCATTER:
    print_region(t, reduce_body(op->reduce, dtype), dtype);
    tprintf(t, " {%s, ", channel_attr);
    print_groups(t, n);
    if (op->kind == TT_COLL_REDUCE_SCATTER) tprintf(t, ", scatter_dimension = 0 : i64");
    tprintf(t, ", use_global_device_ids}");
    break;
  case TT_COLL_ALL_GATHER:
    tprintf(t, "{all_gather_dim = 0 : i64, %s, ", channel_attr);
    print_groups(t, n);
    tprintf(t, ", use_global_device_ids}");
    break;
  case TT_COLL_ALL_TO_ALL:
    tprintf(t, "{%s, concat_dimension = 0 : i64, ", channel_attr);
    print_groups(t, n);
    tprintf(t, ", split_count = %d : i64, split_dimension = 0 : i64}", n);
    break;
  case TT_COLL_PERMUTE:
    tprintf(t, "{%s, source_target_pairs = dense<[", channel_attr);
    for (int i = 0; i < op->n_pairs; i++)
      tprintf(t, i ? ", [%d, %d]" : "[%d, %d]", op->pairs[2 * i], op->pairs[2 * i + 1]);
    tprintf(t, "]> : tensor<%dx2xi64>}", op->n_pairs);
    break;
  default: break;
  }
  tprintf(t, " : (");
  print_type(t, dtype, dims, ndim);
  tprintf(t, ") -> ");
  print_type(t, dtype, out_dims, ndim);
  tprintf(t, "\n");
  const char *result = "%0";
  bool reduces = op->kind == TT_COLL_ALL_REDUCE || op->kind == TT_COLL_REDUCE_SCATTER;
  if (reduces && op->reduce == TT_RED_AVG) {
    tprintf(t, "    %%1 = \"stablehlo.constant\"() {value = dense<%d%s> : ", n,
            tt_dtype_is_floating(dtype) ? ".0" : "");
    print_type(t, dtype, out_dims, ndim);
    tprintf(t, "} : () -> ");
    print_type(t, dtype, out_dims, ndim);
    tprintf(t, "\n    %%2 = \"stablehlo.divide\"(%%0, %%1) : (");
    print_type(t, dtype, out_dims, ndim);
    tprintf(t, ", ");
    print_type(t, dtype, out_dims, ndim);
    tprintf(t, ") -> ");
    print_type(t, dtype, out_dims, ndim);
    tprintf(t, "\n");
    result = "%2";
  }
  tprintf(t, "    \"func.return\"(%s) : (", result);
  print_type(t, dtype, out_dims, ndim);
  tprintf(t, ") -> ()\n  }\n");
}

static tt_error *emit_checked(const tt_coll_op *op, int n, tt_dtype dtype, const int64_t *dims,
                              int ndim, char **text, int64_t *out_dims) {
  if (!op || !text || !out_dims || (ndim > 0 && !dims))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_coll_emit: NULL argument");
  *text = NULL;
  TT_TRY(check_op(op, n, dtype, dims, ndim));
  for (int i = 0; i < ndim; i++) out_dims[i] = dims[i];
  if (op->kind == TT_COLL_ALL_GATHER) out_dims[0] = dims[0] * n;
  if (op->kind == TT_COLL_REDUCE_SCATTER) out_dims[0] = dims[0] / n;
  return NULL;
}

tt_error *tt_coll_emit(const tt_coll_op *op, int n, tt_dtype dtype, const int64_t *dims, int ndim,
                       char **text, int64_t *out_dims) {
  TT_TRY(emit_checked(op, n, dtype, dims, ndim, text, out_dims));
  text_buf t = {0};
  tprintf(&t, "module @tt_collective attributes {mhlo.num_partitions = %d : i32, "
              "mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%%arg0: ", n);
  print_type(&t, dtype, dims, ndim);
  tprintf(&t, ") -> (");
  print_type(&t, dtype, out_dims, ndim);
  tprintf(&t, ") {\n");
  emit_body(&t, op, n, dtype, dims, ndim, out_dims, 1);
  tprintf(&t, "}\n");
  if (t.failed) {
    free(t.p);
    return oom();
  }
  *text = t.p;
  return NULL;
}

tt_error *tt_coll_emit_function(const tt_coll_op *op, int n, tt_dtype dtype, const int64_t *dims,
                                int ndim, int channel, const char *symbol, char **text,
                                int64_t *out_dims) {
  TT_TRY(emit_checked(op, n, dtype, dims, ndim, text, out_dims));
  if (!symbol || !*symbol || channel < 1)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "tt_coll_emit_function: needs a symbol and a channel >= 1");
  text_buf t = {0};
  tprintf(&t, "  func.func private @%s(%%arg0: ", symbol);
  print_type(&t, dtype, dims, ndim);
  tprintf(&t, ") -> (");
  print_type(&t, dtype, out_dims, ndim);
  tprintf(&t, ") {\n");
  emit_body(&t, op, n, dtype, dims, ndim, out_dims, channel);
  if (t.failed) {
    free(t.p);
    return oom();
  }
  *text = t.p;
  return NULL;
}

/* ---------------------------------------------------------------- stats */

static pthread_mutex_t g_stats_lock = PTHREAD_MUTEX_INITIALIZER;
static tt_coll_stats g_stats;

tt_coll_stats tt_coll_get_stats(void) {
  pthread_mutex_lock(&g_stats_lock);
  tt_coll_stats s = g_stats;
  pthread_mutex_unlock(&g_stats_lock);
  return s;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- cache */

static void release_exe(void *v) { tt_executable_release(v); }

/* The program for text on devices, from the compilation cache or compiled
 * now (a new reference). */
static tt_error *program_for(tt_runtime *rt, const char *text, const int *devices, int n,
                             tt_executable **out) {
  static const char prefix[] = "\x01tt_collective";
  size_t tl = strlen(text);
  size_t klen = sizeof prefix + tl + (size_t)n * sizeof(int);
  char *key = malloc(klen);
  if (!key) return oom();
  memcpy(key, prefix, sizeof prefix);
  memcpy(key + sizeof prefix, text, tl);
  memcpy(key + sizeof prefix + tl, devices, (size_t)n * sizeof(int));
  tt_executable *exe = tt_cache_lookup(key, klen);
  if (exe) {
    *out = tt_executable_retain(exe);
    free(key);
    return NULL;
  }
  double t0 = now_s();
  tt_error *err = tt_compile_spmd(rt, text, tl, devices, n, &exe);
  if (err) {
    free(key);
    return tt_error_wrap(err, "compiling the collective for %d devices: ", n);
  }
  double secs = now_s() - t0;
  pthread_mutex_lock(&g_stats_lock);
  g_stats.compiles++;
  pthread_mutex_unlock(&g_stats_lock);
  tt_executable_retain(exe); /* ours; the cache keeps the other */
  tt_executable *kept = tt_cache_insert(key, klen, exe, release_exe, secs);
  if (kept != exe) { /* a racing insert won: the cache freed our copy's reference */
    tt_executable_release(exe);
    exe = tt_executable_retain(kept);
  }
  free(key);
  *out = exe;
  return NULL;
}

/* ------------------------------------------------------------ rendezvous */

static int64_t numel_of(const int64_t *dims, int ndim) {
  int64_t k = 1;
  for (int i = 0; i < ndim; i++) k *= dims[i];
  return k;
}


typedef struct {
  bool present; /* arrived in the current round */
  tt_coll_op op;
  tt_dtype dtype;
  int ndim;
  int64_t dims[TT_MAX_DIMS];
  tt_buffer *in; /* borrowed from the waiting caller */
  /* tt_coll_run_program: the rank's whole program (all borrowed) */
  bool is_program;
  const char *what, *text;
  tt_buffer *const *args;
  int n_args, n_outs;
  tt_buffer **prog_outs; /* filled by the launching rank */
  bool has_result;
  tt_buffer *out;
  tt_error *err;
} coll_slot;

struct tt_coll_group {
  tt_runtime *rt;
  int n;
  int *devices;
  pthread_mutex_t lock; /* guards everything below */
  pthread_cond_t cv;
  int arrived;
  coll_slot *slots;
};

tt_error *tt_coll_group_new(tt_runtime *rt, const int *devices, int n, tt_coll_group **out) {
  if (!rt || !devices || !out || n < 1)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_coll_group_new: bad arguments");
  *out = NULL;
  int nd = tt_runtime_device_count(rt);
  for (int i = 0; i < n; i++) {
    if (devices[i] < 0 || devices[i] >= nd)
      return tt_error_new(TT_ERR_INDEX,
                          "compiled collectives: device %d out of range (the client has %d; "
                          "TORCH_TPU_NUM_DEVICES sets it on the CPU plugin)",
                          devices[i], nd);
    for (int j = 0; j < i; j++)
      if (devices[j] == devices[i])
        return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                            "compiled collectives: device %d is given to two ranks", devices[i]);
  }
  tt_coll_group *g = calloc(1, sizeof *g);
  if (!g) return oom();
  g->devices = malloc((size_t)n * sizeof *g->devices);
  g->slots = calloc((size_t)n, sizeof *g->slots);
  if (!g->devices || !g->slots) {
    free(g->devices);
    free(g->slots);
    free(g);
    return oom();
  }
  memcpy(g->devices, devices, (size_t)n * sizeof *devices);
  g->rt = rt;
  g->n = n;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&g->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&g->lock, NULL);
  *out = g;
  return NULL;
}

void tt_coll_group_free(tt_coll_group *g) {
  if (!g) return;
  for (int r = 0; r < g->n; r++) {
    tt_buffer_release(g->slots[r].out);
    tt_error_free(g->slots[r].err);
  }
  pthread_mutex_destroy(&g->lock);
  pthread_cond_destroy(&g->cv);
  free(g->devices);
  free(g->slots);
  free(g);
}

int tt_coll_group_size(const tt_coll_group *g) { return g ? g->n : 0; }

int tt_coll_group_rank_of(const tt_coll_group *g, int device) {
  for (int r = 0; g && r < g->n; r++)
    if (g->devices[r] == device) return r;
  return -1;
}

static void describe_slot(const coll_slot *s, char *buf, size_t size) {
  if (s->is_program) {
    snprintf(buf, size, "%s (%d inputs, %d outputs)", s->what, s->n_args, s->n_outs);
    return;
  }
  size_t k = (size_t)snprintf(buf, size, "%s %s[", tt_coll_kind_name(s->op.kind),
                              tt_dtype_torch_name(s->dtype));
  for (int i = 0; i < s->ndim && k < size; i++)
    k += (size_t)snprintf(buf + k, size - k, i ? ", %lld" : "%lld", (long long)s->dims[i]);
  if (k < size) k += (size_t)snprintf(buf + k, size - k, "]");
  if (k < size && (s->op.kind == TT_COLL_ALL_REDUCE || s->op.kind == TT_COLL_REDUCE_SCATTER))
    snprintf(buf + k, size - k, " %s", tt_coll_reduce_name(s->op.reduce));
}

static bool same_program(const coll_slot *a, const coll_slot *b) {
  if (a->n_args != b->n_args || a->n_outs != b->n_outs || strcmp(a->text, b->text)) return false;
  for (int i = 0; i < a->n_args; i++)
    if (tt_buffer_dtype(a->args[i]) != tt_buffer_dtype(b->args[i]) ||
        tt_buffer_numel(a->args[i]) != tt_buffer_numel(b->args[i]))
      return false;
  return true;
}

static bool same_request(const coll_slot *a, const coll_slot *b) {
  if (a->is_program || b->is_program) return a->is_program && b->is_program && same_program(a, b);
  if (a->op.kind != b->op.kind || a->dtype != b->dtype || a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i]) return false;
  bool reduces = a->op.kind == TT_COLL_ALL_REDUCE || a->op.kind == TT_COLL_REDUCE_SCATTER;
  if (reduces && a->op.reduce != b->op.reduce) return false;
  if (a->op.kind == TT_COLL_PERMUTE &&
      (a->op.n_pairs != b->op.n_pairs ||
       memcmp(a->op.pairs, b->op.pairs, (size_t)a->op.n_pairs * 2 * sizeof(int))))
    return false;
  return true;
}

static const char *slot_name(const coll_slot *s) {
  return s->is_program ? s->what : tt_coll_kind_name(s->op.kind);
}

static void note_launch(double secs, bool program) {
  pthread_mutex_lock(&g_stats_lock);
  g_stats.launches++;
  g_stats.programs += program;
  g_stats.launch_seconds += secs;
  pthread_mutex_unlock(&g_stats_lock);
}

/* A program built for one device (its module says mhlo.num_partitions = 1,
 * as the region builder writes it) made to say n: malloc'd. */
static char *with_partitions(const char *text, int n) {
  static const char one[] = "mhlo.num_partitions = 1 : i32";
  const char *at = strstr(text, one);
  size_t tl = strlen(text);
  char *out = malloc(tl + 16);
  if (!out) return NULL;
  if (!at) {
    memcpy(out, text, tl + 1);
    return out;
  }
  size_t head = (size_t)(at - text);
  memcpy(out, text, head);
  int k = snprintf(out + head, 48, "mhlo.num_partitions = %d : i32", n);
  memcpy(out + head + (size_t)k, at + sizeof one - 1, tl - head - (sizeof one - 1) + 1);
  return out;
}

/* A program round (lock held): every rank's arguments, one launch, each
 * rank's outputs into its prog_outs. */
static tt_error *launch_program(tt_coll_group *g) {
  const coll_slot *s0 = &g->slots[0];
  char *text = with_partitions(s0->text, g->n);
  if (!text) return oom();
  tt_executable *exe = NULL;
  tt_error *err = program_for(g->rt, text, g->devices, g->n, &exe);
  free(text);
  if (err) return tt_error_wrap(err, "%s: ", s0->what);
  if (tt_executable_num_outputs(exe) != s0->n_outs) {
    int k = tt_executable_num_outputs(exe);
    tt_executable_release(exe);
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: the program has %d outputs, %d were asked for",
                        s0->what, k, s0->n_outs);
  }
  int na = s0->n_args, no = s0->n_outs;
  tt_buffer **ins = malloc(sizeof *ins * (size_t)(g->n * na + 1));
  tt_buffer **outs = calloc((size_t)(g->n * no + 1), sizeof *outs);
  if (!ins || !outs) {
    free(ins);
    free(outs);
    tt_executable_release(exe);
    return oom();
  }
  for (int r = 0; r < g->n; r++)
    for (int i = 0; i < na; i++) ins[r * na + i] = g->slots[r].args[i];
  double t0 = now_s();
  err = tt_execute_spmd(exe, g->devices, ins, na, outs, no);
  double secs = now_s() - t0;
  tt_executable_release(exe);
  if (!err) {
    note_launch(secs, true);
    for (int r = 0; r < g->n; r++)
      for (int o = 0; o < no; o++) g->slots[r].prog_outs[o] = outs[r * no + o];
  }
  free(ins);
  free(outs);
  return err ? tt_error_wrap(err, "%s over %d devices: ", s0->what, g->n) : NULL;
}

/* Every rank arrived (lock held): runs the collective, fills the results. */
static tt_error *launch_round(tt_coll_group *g, tt_buffer **outs) {
  const coll_slot *s0 = &g->slots[0];
  for (int r = 1; r < g->n; r++) {
    if (same_request(s0, &g->slots[r])) continue;
    char a[200], b[200];
    describe_slot(s0, a, sizeof a);
    describe_slot(&g->slots[r], b, sizeof b);
    bool programs = s0->is_program && g->slots[r].is_program && !strcmp(a, b);
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "%s: the ranks' %s differ, so no rank ran it: rank 0 has %s; rank %d has "
                        "%s%s",
                        slot_name(s0), s0->is_program ? "programs" : "tensors (or ops)", a, r, b,
                        programs ? " (the same ops, but a different program: other shapes, "
                                   "dtypes or connections)" : "");
  }
  if (s0->is_program) return launch_program(g);
  /* the shape's rules, then the program on the flat elements */
  TT_TRY(check_op(&s0->op, g->n, s0->dtype, s0->dims, s0->ndim));
  char *text = NULL;
  int64_t flat = numel_of(s0->dims, s0->ndim), out_flat;
  TT_TRY(tt_coll_emit(&s0->op, g->n, s0->dtype, &flat, 1, &text, &out_flat));
  tt_executable *exe = NULL;
  tt_error *err = program_for(g->rt, text, g->devices, g->n, &exe);
  free(text);
  if (err) return err;
  tt_buffer **ins = malloc((size_t)g->n * sizeof *ins);
  if (!ins) {
    tt_executable_release(exe);
    return oom();
  }
  for (int r = 0; r < g->n; r++) ins[r] = g->slots[r].in;
  double t0 = now_s();
  err = tt_execute_spmd(exe, g->devices, ins, 1, outs, 1);
  double secs = now_s() - t0;
  free(ins);
  tt_executable_release(exe);
  if (!err) note_launch(secs, false);
  return err ? tt_error_wrap(err, "%s over %d devices: ", tt_coll_kind_name(s0->op.kind), g->n) : NULL;
}

/* Ends the round (lock held): every arrived rank gets its output or a copy
 * of err (taken). */
static void finish_round(tt_coll_group *g, tt_buffer **outs, tt_error *err) {
  if (err) {
    pthread_mutex_lock(&g_stats_lock);
    g_stats.errors++;
    pthread_mutex_unlock(&g_stats_lock);
  }
  for (int r = 0; r < g->n; r++) {
    coll_slot *s = &g->slots[r];
    if (!s->present) continue;
    s->present = false;
    s->in = NULL;
    s->has_result = true;
    s->out = outs && !s->is_program ? outs[r] : NULL;
    s->err = err ? tt_error_new(tt_error_code_of(err), "%s", tt_error_message(err)) : NULL;
    if (err && !s->err) s->err = oom();
  }
  tt_error_free(err);
  g->arrived = 0;
  pthread_cond_broadcast(&g->cv);
}

/* Rank s (g->slots[rank], filled, lock held) has arrived: the last rank
 * launches; the others wait for it at most timeout_s. Returns with the
 * slot's result set. */
static void arrive(tt_coll_group *g, int rank, const char *name, double timeout_s) {
  coll_slot *s = &g->slots[rank];
  if (++g->arrived == g->n) {
    tt_buffer **outs = calloc((size_t)g->n, sizeof *outs);
    tt_error *err = outs ? launch_round(g, outs) : oom();
    finish_round(g, err ? NULL : outs, err);
    free(outs);
    return;
  }
  double deadline = now_s() + timeout_s;
  struct timespec ts;
  ts.tv_sec = (time_t)deadline;
  ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
  while (!s->has_result) {
    int rc = pthread_cond_timedwait(&g->cv, &g->lock, &ts);
    if (s->has_result || rc == 0) continue;
    /* Timed out: the round is abandoned for every rank that came. */
    char missing[256];
    size_t k = 0;
    missing[0] = 0;
    for (int r = 0; r < g->n && k < sizeof missing; r++)
      if (!g->slots[r].present)
        k += (size_t)snprintf(missing + k, sizeof missing - k, k ? ", %d" : "%d", r);
    finish_round(g, NULL,
                 tt_error_new(TT_ERR_RUNTIME,
                              "%s: timed out after %.3g s waiting for rank(s) %s of a group of "
                              "%d (rank %d waited); every rank must call the same collective",
                              name, timeout_s, missing, g->n, rank));
  }
}

/* The slot of rank, claimed for a new round (lock held), or an error. */
static tt_error *claim(tt_coll_group *g, int rank, const char *name) {
  coll_slot *s = &g->slots[rank];
  if (s->present || s->has_result)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "%s: rank %d is already inside a collective of this group (two threads "
                        "calling as one rank?)",
                        name, rank);
  s->present = true;
  s->is_program = false;
  return NULL;
}

tt_error *tt_coll_run(tt_coll_group *g, int rank, const tt_coll_op *op, tt_buffer *in,
                      const int64_t *dims, int ndim, double timeout_s, tt_buffer **out,
                      int64_t *out_dims) {
  if (!g || !op || !in || !out || (ndim > 0 && !dims))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_coll_run: NULL argument");
  *out = NULL;
  const char *name = tt_coll_kind_name(op->kind);
  if (rank < 0 || rank >= g->n)
    return tt_error_new(TT_ERR_INDEX, "%s: rank %d out of range (group of %d)", name, rank, g->n);
  if (tt_buffer_device(in) != g->devices[rank])
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "%s: rank %d's tensor is on device %d; the rank's device is %d", name, rank,
                        tt_buffer_device(in), g->devices[rank]);
  if (ndim < 0 || ndim > TT_MAX_DIMS)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: rank-%d tensors are not supported", name, ndim);
  if (numel_of(dims, ndim) != tt_buffer_numel(in))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "%s: rank %d's buffer holds %lld elements, its "
                        "shape %lld", name, rank, (long long)tt_buffer_numel(in),
                        (long long)numel_of(dims, ndim));
  if (!(timeout_s > 0)) timeout_s = 1e-3;

  pthread_mutex_lock(&g->lock);
  tt_error *err = claim(g, rank, name);
  if (err) {
    pthread_mutex_unlock(&g->lock);
    return err;
  }
  coll_slot *s = &g->slots[rank];
  s->op = *op;
  s->dtype = tt_buffer_dtype(in);
  s->ndim = ndim;
  if (ndim) memcpy(s->dims, dims, (size_t)ndim * sizeof *dims);
  s->in = in;
  arrive(g, rank, name, timeout_s);
  err = s->err;
  *out = s->out;
  if (!err && out_dims) {
    for (int i = 0; i < ndim; i++) out_dims[i] = dims[i];
    if (op->kind == TT_COLL_ALL_GATHER) out_dims[0] *= g->n;
    if (op->kind == TT_COLL_REDUCE_SCATTER) out_dims[0] /= g->n;
  }
  s->err = NULL;
  s->out = NULL;
  s->has_result = false;
  pthread_mutex_unlock(&g->lock);
  return err;
}

tt_error *tt_coll_run_program(tt_coll_group *g, int rank, const char *what, const char *text,
                              tt_buffer *const *args, int n_args, tt_buffer **outs, int n_outs,
                              double timeout_s) {
  if (!g || !text || (n_args > 0 && !args) || (n_outs > 0 && !outs) || n_args < 0 || n_outs < 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_coll_run_program: bad arguments");
  if (!what) what = "program";
  for (int o = 0; o < n_outs; o++) outs[o] = NULL;
  if (rank < 0 || rank >= g->n)
    return tt_error_new(TT_ERR_INDEX, "%s: rank %d out of range (group of %d)", what, rank, g->n);
  for (int i = 0; i < n_args; i++)
    if (!args[i] || tt_buffer_device(args[i]) != g->devices[rank])
      return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                          "%s: rank %d's argument %d is %s device %d; the rank's device is %d",
                          what, rank, i, args[i] ? "on" : "missing, not on",
                          args[i] ? tt_buffer_device(args[i]) : -1, g->devices[rank]);
  if (!(timeout_s > 0)) timeout_s = 1e-3;
  pthread_mutex_lock(&g->lock);
  tt_error *err = claim(g, rank, what);
  if (err) {
    pthread_mutex_unlock(&g->lock);
    return err;
  }
  coll_slot *s = &g->slots[rank];
  s->is_program = true;
  s->what = what;
  s->text = text;
  s->args = args;
  s->n_args = n_args;
  s->n_outs = n_outs;
  s->prog_outs = outs;
  arrive(g, rank, what, timeout_s);
  err = s->err;
  s->err = NULL;
  s->has_result = false;
  s->is_program = false;
  s->text = s->what = NULL;
  s->args = NULL;
  s->prog_outs = NULL;
  pthread_mutex_unlock(&g->lock);
  if (err)
    for (int o = 0; o < n_outs; o++) {
      tt_buffer_release(outs[o]);
      outs[o] = NULL;
    }
  return err;
}
