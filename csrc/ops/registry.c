/* The lowering table: every family file's list, indexed by overload name.
 * To add a family, define TT_LOWERINGS(name) in its file and list it below. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache/compile_cache.h"
#include "ops/lowering.h"

#define TT_FAMILIES(X) \
  X(elementwise)       \
  X(unary)             \
  X(special)           \
  X(special_bessel)    \
  X(special_poly)      \
  X(special_zeta)      \
  X(activations)       \
  X(reduction)         \
  X(reduction_index)   \
  X(scan)              \
  X(search)            \
  X(linalg)            \
  X(conv)              \
  X(pool)              \
  X(linalg_solve)      \
  X(distance)          \
  X(nn)                \
  X(nn_norm)           \
  X(nn_loss)           \
  X(nn_resample)       \
  X(nn_pool)           \
  X(rnn)               \
  X(indexing)          \
  X(scatter)           \
  X(shape_ops)         \
  X(creation)          \
  X(complex)           \
  X(fft)               \
  X(optim)

#define DECLARE_FAMILY(name) extern const tt_lowering tt_lowerings_##name[];
TT_FAMILIES(DECLARE_FAMILY)
#undef DECLARE_FAMILY

#define LIST_FAMILY(name) tt_lowerings_##name,
static const tt_lowering *const families[] = {TT_FAMILIES(LIST_FAMILY)};
#undef LIST_FAMILY

typedef struct {
  const char *name;
  tt_lower_fn fn;
} slot;

static slot *table;       /* open addressing; written once under pthread_once */
static size_t table_size; /* power of two */
static const char **names;
static int n_names;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void insert(const char *name, tt_lower_fn fn) {
  size_t h = tt_hash_bytes(name, strlen(name)) & (table_size - 1);
  while (table[h].name) {
    if (strcmp(table[h].name, name) == 0) abort(); /* a name listed twice: fix the tables */
    h = (h + 1) & (table_size - 1);
  }
  table[h] = (slot){name, fn};
  names[n_names++] = name;
}

static void build(void) {
  size_t count = 0;
  for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
    for (const tt_lowering *l = families[f]; l->fn; l++)
      for (int k = 0; k < TT_MAX_OVERLOADS && l->names[k]; k++) count++;
  table_size = 64;
  while (table_size < count * 2) table_size *= 2;
  table = calloc(table_size, sizeof *table);
  names = calloc(count + 1, sizeof *names);
  if (!table || !names) abort();
  for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
    for (const tt_lowering *l = families[f]; l->fn; l++)
      for (int k = 0; k < TT_MAX_OVERLOADS && l->names[k]; k++) insert(l->names[k], l->fn);
}

tt_lower_fn tt_lowering_find(const char *op_name) {
  pthread_once(&once, build);
  size_t h = tt_hash_bytes(op_name, strlen(op_name)) & (table_size - 1);
  while (table[h].name) {
    if (strcmp(table[h].name, op_name) == 0) return table[h].fn;
    h = (h + 1) & (table_size - 1);
  }
  return NULL;
}

int tt_lowering_count(void) {
  pthread_once(&once, build);
  return n_names;
}

const char *tt_lowering_name_at(int index) {
  pthread_once(&once, build);
  return index >= 0 && index < n_names ? names[index] : NULL;
}
