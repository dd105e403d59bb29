#include "graph/explain.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/settings.h"
#include "graph/storage.h"
#include "graph/view_layout.h"

static _Atomic int enabled = -1; /* -1: not yet read from the environment */
static void (*_Atomic hook)(const char *message);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

bool tt_explain_enabled(void) {
  int v = atomic_load(&enabled);
  if (v < 0) {
    v = tt_setting_bool_or_default(TT_SETTING_EXPLAIN_RECOMPILES);
    atomic_store(&enabled, v);
  }
  return v > 0;
}

void tt_set_explain(bool on) { atomic_store(&enabled, on); }
void tt_set_explain_hook(void (*fn)(const char *message)) { atomic_store(&hook, fn); }

static void emit(const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  void (*fn)(const char *) = atomic_load(&hook);
  if (fn) fn(msg);
  else fprintf(stderr, "%s\n", msg);
}

/* ------------------------------------------------------------ signatures */

typedef struct {
  char *buf;
  size_t size, off;
} sink;

static void put(sink *s, const char *fmt, ...) {
  if (s->off >= s->size) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(s->buf + s->off, s->size - s->off, fmt, ap);
  va_end(ap);
  if (n > 0) s->off += (size_t)n;
  if (s->off >= s->size) s->off = s->size - 1;
}

static void put_tensor(sink *s, const tt_tensor_ref *r) {
  if (!r) {
    put(s, "None");
    return;
  }
  put(s, "%s%s[", r->storage ? "" : "cpu ", tt_dtype_name(r->dtype));
  for (int d = 0; d < r->ndim; d++) put(s, d ? ",%" PRId64 : "%" PRId64, r->sizes[d]);
  put(s, "]");
  bool contiguous = true;
  int64_t expect = 1;
  for (int d = r->ndim - 1; d >= 0; d--) {
    if (r->sizes[d] != 1 && r->strides[d] != expect) contiguous = false;
    expect *= r->sizes[d];
  }
  if (r->storage && (!contiguous || r->offset)) {
    put(s, " strides(");
    for (int d = 0; d < r->ndim; d++) put(s, d ? ",%" PRId64 : "%" PRId64, r->strides[d]);
    /* a runtime offset is not part of the program: say so, not its value */
    size_t item = tt_dtype_size(r->dtype);
    int64_t numel = item ? (int64_t)(tt_storage_nbytes(r->storage) / item) : 0;
    if (tt_view_offset_class(r, numel) == TT_VIEW_OFFSET_DYNAMIC) put(s, ") offset runtime");
    else put(s, ") offset %" PRId64, r->offset);
  }
}

static const char *scalar_kind(tt_scalar_kind k) {
  return k == TT_SCALAR_FLOAT ? "float" : k == TT_SCALAR_INT ? "int" : "bool";
}

void tt_describe_args(const tt_arg *args, int nargs, char *buf, size_t size) {
  sink s = {buf, size, 0};
  if (size) buf[0] = 0;
  for (int i = 0; i < nargs; i++) {
    const tt_arg *a = &args[i];
    if (i) put(&s, "; ");
    switch (a->kind) {
      case TT_ARG_TENSOR: put_tensor(&s, a->u.tensor); break;
      case TT_ARG_TENSOR_LIST:
        put(&s, "[");
        for (int j = 0; j < a->count; j++) {
          if (j) put(&s, ", ");
          put_tensor(&s, a->u.tensors[j]);
        }
        put(&s, "]");
        break;
      case TT_ARG_INT: put(&s, "%" PRId64, a->u.i); break;
      case TT_ARG_DOUBLE: put(&s, "%g", a->u.d); break;
      case TT_ARG_BOOL: put(&s, a->u.b ? "True" : "False"); break;
      case TT_ARG_DTYPE: put(&s, "%s", tt_dtype_name(a->u.dtype)); break;
      case TT_ARG_STRING: put(&s, "'%s'", a->u.str); break;
      case TT_ARG_SCALAR: put(&s, "Scalar(%s)", scalar_kind(a->u.s.kind)); break;
      case TT_ARG_INT_LIST:
        put(&s, "(");
        for (int j = 0; j < a->count; j++) put(&s, j ? ",%" PRId64 : "%" PRId64, a->u.ints[j]);
        put(&s, ")");
        break;
      case TT_ARG_NONE: put(&s, "None"); break;
      default: put(&s, "_"); break;
    }
  }
}

/* The index of the first differing "; "-separated field, or -1. */
static int first_difference(const char *a, const char *b, char *fa, char *fb, size_t size) {
  int index = 0;
  while (1) {
    const char *ea = strstr(a, "; "), *eb = strstr(b, "; ");
    size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
    if (la != lb || memcmp(a, b, la) != 0) {
      snprintf(fa, size, "%.*s", (int)la, a);
      snprintf(fb, size, "%.*s", (int)lb, b);
      return index;
    }
    if (!ea || !eb) return ea || eb ? index + 1 : -1;
    a = ea + 2;
    b = eb + 2;
    index++;
  }
}

/* ------------------------------------------------------------ Strict */

typedef struct {
  char *op_name, *sig;
} op_entry;

static op_entry *op_entries;
static int n_op_entries, cap_op_entries;

void tt_explain_op_compile(const char *op_name, const char *sig) {
  if (!tt_explain_enabled()) return;
  pthread_mutex_lock(&lock);
  op_entry *e = NULL;
  for (int i = 0; i < n_op_entries && !e; i++)
    if (strcmp(op_entries[i].op_name, op_name) == 0) e = &op_entries[i];
  if (e) {
    char now[256], before[256];
    int arg = first_difference(sig, e->sig, now, before, sizeof now);
    if (arg >= 0)
      emit("torch_tpu: recompiling aten::%s: argument %d is %s, the cached program has %s", op_name,
           arg, now, before);
    else
      emit("torch_tpu: recompiling aten::%s with the same argument signature (%s): aliasing or "
           "value-dependent arguments differ", op_name, sig);
    free(e->sig);
    e->sig = strdup(sig);
  } else {
    if (n_op_entries == cap_op_entries) {
      int cap = cap_op_entries ? cap_op_entries * 2 : 64;
      op_entry *p = realloc(op_entries, sizeof *p * (size_t)cap);
      if (!p) goto done;
      op_entries = p;
      cap_op_entries = cap;
    }
    op_entries[n_op_entries++] = (op_entry){strdup(op_name), strdup(sig)};
  }
done:
  pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------ regions */

typedef struct {
  int n_ops;
  uint64_t *hashes;
  char **names, **sigs;
} region_entry;

#define MAX_REGIONS 64
static region_entry regions[MAX_REGIONS];
static int n_regions, next_region;

static void region_entry_free(region_entry *r) {
  for (int i = 0; i < r->n_ops; i++) {
    free(r->names[i]);
    free(r->sigs[i]);
  }
  free(r->hashes);
  free(r->names);
  free(r->sigs);
  memset(r, 0, sizeof *r);
}

void tt_explain_region_compile(int n_ops, const uint64_t *hashes, const char *const *names,
                               const char *const *sigs) {
  if (!tt_explain_enabled() || n_ops <= 0) return;
  pthread_mutex_lock(&lock);
  /* nearest: the cached region sharing the longest prefix of ops */
  int best = -1, best_prefix = -1;
  for (int r = 0; r < n_regions; r++) {
    int p = 0;
    while (p < n_ops && p < regions[r].n_ops && regions[r].hashes[p] == hashes[p]) p++;
    if (p > best_prefix || (p == best_prefix && r == (next_region + MAX_REGIONS - 1) % MAX_REGIONS))
      best = r, best_prefix = p;
  }
  if (best_prefix == 0) { /* no shared prefix: compare with a region starting with the same op */
    best = -1;
    for (int r = 0; r < n_regions && best < 0; r++)
      if (regions[r].n_ops > 0 && strcmp(regions[r].names[0], names[0]) == 0) best = r;
    if (best < 0 && n_regions > 0)
      emit("torch_tpu: compiling a new fused region of %d ops: no cached region starts with "
           "aten::%s(%s)", n_ops, names[0], sigs[0]);
  }
  if (best >= 0) {
    const region_entry *e = &regions[best];
    int p = best_prefix;
    if (p < n_ops && p < e->n_ops) {
      char now[256], before[256];
      int arg = strcmp(names[p], e->names[p]) == 0
                    ? first_difference(sigs[p], e->sigs[p], now, before, sizeof now)
                    : -1;
      if (arg >= 0)
        emit("torch_tpu: recompiling a fused region of %d ops: op %d (aten::%s) argument %d is "
             "%s, the nearest cached region (%d ops) has %s",
             n_ops, p, names[p], arg, now, e->n_ops, before);
      else
        emit("torch_tpu: recompiling a fused region of %d ops: op %d is aten::%s(%s), the nearest "
             "cached region (%d ops) has aten::%s(%s) there",
             n_ops, p, names[p], sigs[p], e->n_ops, e->names[p], e->sigs[p]);
    } else if (p < n_ops || p < e->n_ops) {
      emit("torch_tpu: recompiling a fused region of %d ops: the nearest cached region has the "
           "same first %d ops but %d in all (next op here: %s)",
           n_ops, p, e->n_ops, p < n_ops ? names[p] : "none: the region ends");
    } else {
      emit("torch_tpu: recompiling a fused region of %d ops: same ops as a cached region, but "
           "their tensors connect differently or other results are still alive at the flush",
           n_ops);
    }
  }
  region_entry *slot = &regions[next_region];
  region_entry_free(slot);
  slot->hashes = malloc(sizeof *slot->hashes * (size_t)n_ops);
  slot->names = calloc((size_t)n_ops, sizeof *slot->names);
  slot->sigs = calloc((size_t)n_ops, sizeof *slot->sigs);
  if (slot->hashes && slot->names && slot->sigs) {
    slot->n_ops = n_ops;
    memcpy(slot->hashes, hashes, sizeof *hashes * (size_t)n_ops);
    for (int i = 0; i < n_ops; i++) {
      slot->names[i] = strdup(names[i]);
      slot->sigs[i] = strdup(sigs[i]);
    }
    next_region = (next_region + 1) % MAX_REGIONS;
    if (n_regions < MAX_REGIONS) n_regions++;
  } else {
    region_entry_free(slot);
  }
  pthread_mutex_unlock(&lock);
}
