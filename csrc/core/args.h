/* An op's arguments as the C++ boundary describes them to the core: the
 * schema-ordered list every floor above reads (cache keys, lowerings,
 * regions, replays). Plain data; the caller owns every pointer. */
#ifndef TT_CORE_ARGS_H
#define TT_CORE_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"

typedef struct tt_storage tt_storage; /* a device storage (graph/storage.h) */

/* A tensor argument as the C++ boundary describes it. storage == NULL means a
 * 0-dim CPU tensor passed by value (PyTorch allows those beside device
 * tensors, e.g. Python numbers wrapped as tensors). */
typedef struct {
  tt_storage *storage;
  tt_dtype dtype;
  int ndim;
  int64_t sizes[TT_MAX_DIMS];
  int64_t strides[TT_MAX_DIMS];
  int64_t offset; /* in elements */
  bool wrapped_number;
  double value_f; /* storage == NULL: the value */
  int64_t value_i;
} tt_tensor_ref;

typedef enum { TT_SCALAR_BOOL, TT_SCALAR_INT, TT_SCALAR_FLOAT } tt_scalar_kind;

typedef struct {
  tt_scalar_kind kind;
  int64_t i; /* BOOL and INT */
  double f;  /* FLOAT */
} tt_scalar;

typedef enum {
  TT_ARG_NONE = 0,
  TT_ARG_TENSOR,
  TT_ARG_TENSOR_LIST, /* elements may be NULL (List[Optional[Tensor]]) */
  TT_ARG_INT,
  TT_ARG_INT_LIST,
  TT_ARG_DOUBLE,
  TT_ARG_DOUBLE_LIST,
  TT_ARG_BOOL,
  TT_ARG_BOOL_LIST,
  TT_ARG_SCALAR,
  TT_ARG_SCALAR_LIST,
  TT_ARG_DTYPE,
  TT_ARG_STRING,
  TT_ARG_DEVICE,   /* i = device index, -1 for cpu */
  TT_ARG_LAYOUT,   /* i */
  TT_ARG_MEMORY_FORMAT, /* i */
  TT_ARG_GENERATOR,     /* an explicit generator object; lowerings decline */
  TT_ARG_OTHER,         /* anything else; lowerings decline */
} tt_arg_kind;

typedef struct {
  tt_arg_kind kind;
  bool written;   /* the schema marks this argument as mutated */
  bool resizable; /* an out= argument: may be resized to the result's shape */
  int count;    /* list length */
  union {
    tt_tensor_ref *tensor;
    tt_tensor_ref **tensors;
    int64_t i;
    double d;
    bool b;
    tt_scalar s;
    tt_dtype dtype;
    const char *str;
    int64_t *ints;
    double *doubles;
    bool *bools;
    tt_scalar *scalars;
  } u;
} tt_arg;

#endif
