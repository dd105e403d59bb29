#include "shlo/op_table.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static const tt_op_info op_table[] = {
#define TT_OP_ROW_(e, name, in, out, regions, rel) {name, in, out, regions, rel},
    TT_SHLO_OPS(TT_OP_ROW_)
#undef TT_OP_ROW_
};
static_assert(sizeof op_table / sizeof op_table[0] == TT_OP_COUNT,
              "every tt_op needs exactly one row in op_table");

const tt_op_info *tt_op_get(tt_op op) {
  return (unsigned)op < TT_OP_COUNT ? &op_table[op] : NULL;
}

static int by_name(const void *key, const void *row) {
  return strcmp((const char *)key, ((const tt_op_info *)row)->name);
}

tt_op tt_op_lookup(const char *name) {
  const tt_op_info *r = bsearch(name, op_table, TT_OP_COUNT, sizeof op_table[0], by_name);
  return r ? (tt_op)(r - op_table) : TT_OP_COUNT;
}

const char *tt_op_check_arity(tt_op op, int n_in, int n_out, int n_regions, int first_rank) {
  const tt_op_info *r = tt_op_get(op);
  if (!r) return "unknown op";
  if (r->n_regions == TT_ARITY_ANY ? n_regions < 1 : n_regions != r->n_regions)
    return "wrong number of regions";
  if (r->n_out != TT_ARITY_ANY && n_out != r->n_out) return "wrong number of results";
  switch ((tt_arity_rel)r->rel) {
    case TT_REL_NONE:
      if (r->n_in != TT_ARITY_ANY && n_in != r->n_in) return "wrong number of operands";
      if (r->n_in == TT_ARITY_ANY && n_in < 1 && op != TT_OP_RETURN) return "no operands";
      return NULL;
    case TT_REL_SAME:
      return n_in == n_out && n_in >= 1 ? NULL : "operands and results must pair up";
    case TT_REL_PAIRS:
      return n_out >= 1 && n_in == 2 * n_out ? NULL : "operands must be inputs then inits";
    case TT_REL_SCATTER:
      return n_out >= 1 && n_in == 2 * n_out + 1 ? NULL : "operands must be inputs, indices, updates";
    case TT_REL_INDEXED:
      return n_in == r->n_in + first_rank ? NULL : "one start index per dimension needed";
  }
  return "bad table row";
}
