/* Programs and their plans: freeing them, and reading the arguments a plan
 * entry names. */
#include "graph/program.h"

#include <stdlib.h>
#include <string.h>

#include "graph/storage.h"

void tt_program_free(void *program) {
  tt_program *p = program;
  if (!p) return;
  tt_pool_entry_clear(&p->exe_slot);
  free(p->decline_message);
  free(p->params);
  free(p->outs);
  free(p->resize);
  free(p->value_args);
  free(p->text);
  for (int k = 0; k < p->n_checks; k++) free(p->checks[k].message);
  free(p->checks);
  free(p);
}

const tt_tensor_ref *tt_plan_ref(const tt_arg *args, int arg, int elem) {
  const tt_arg *a = &args[arg];
  if (a->kind == TT_ARG_TENSOR) return a->u.tensor;
  if (a->kind == TT_ARG_TENSOR_LIST && elem >= 0 && elem < a->count) return a->u.tensors[elem];
  return NULL;
}

/* Host bytes of a scalar argument converted to dt, or of a view's offset (i64). */
void tt_param_scalar_bytes(const tt_arg *args, const tt_param_plan *pp, unsigned char out[8]) {
  const tt_arg *a = &args[pp->arg];
  if (pp->kind == TT_PARAM_OFFSET) {
    memset(out, 0, 8);
    int64_t offset = tt_plan_ref(args, pp->arg, pp->elem)->offset;
    memcpy(out, &offset, sizeof offset); /* little-endian i64 */
    return;
  }
  double f = 0;
  int64_t i = 0;
  bool is_float = false;
  if (a->kind == TT_ARG_TENSOR || a->kind == TT_ARG_TENSOR_LIST) { /* CPU 0-dim tensors */
    const tt_tensor_ref *r = tt_plan_ref(args, pp->arg, pp->elem);
    is_float = tt_dtype_is_floating(r->dtype);
    f = r->value_f;
    i = r->value_i;
  } else {
    tt_scalar s = {TT_SCALAR_INT, 0, 0};
    if (a->kind == TT_ARG_SCALAR) s = a->u.s;
    else if (a->kind == TT_ARG_SCALAR_LIST) s = a->u.scalars[pp->elem];
    else if (a->kind == TT_ARG_DOUBLE) s = (tt_scalar){TT_SCALAR_FLOAT, 0, a->u.d};
    else if (a->kind == TT_ARG_DOUBLE_LIST) s = (tt_scalar){TT_SCALAR_FLOAT, 0, a->u.doubles[pp->elem]};
    else if (a->kind == TT_ARG_INT) s = (tt_scalar){TT_SCALAR_INT, a->u.i, 0};
    else if (a->kind == TT_ARG_INT_LIST) s = (tt_scalar){TT_SCALAR_INT, a->u.ints[pp->elem], 0};
    else if (a->kind == TT_ARG_BOOL) s = (tt_scalar){TT_SCALAR_BOOL, a->u.b, 0};
    is_float = s.kind == TT_SCALAR_FLOAT;
    f = s.f;
    i = s.i;
  }
  memset(out, 0, 8);
  tt_dtype dt = pp->dtype;
  if (tt_dtype_is_floating(dt)) {
    uint64_t bits = tt_float_bits(dt, is_float ? f : (double)i);
    memcpy(out, &bits, tt_dtype_size(dt)); /* little-endian */
    return;
  }
  int64_t v = is_float ? (int64_t)f : i;
  if (dt == TT_BOOL) v = is_float ? (f != 0) : (i != 0);
  memcpy(out, &v, tt_dtype_size(dt));
}

void tt_op_result_clear(tt_op_result *res) {
  for (int i = 0; i < res->n_new; i++) tt_storage_drop(res->news[i].storage);
  free(res->news);
  free(res->resize);
  memset(res, 0, sizeof *res);
}
