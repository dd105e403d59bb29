/* Per-op properties beside the lowerings: what the boundary must know about
 * an aten op besides whether it has a lowering (how ATen's out= kernel
 * checks its arguments, whether CPU tensor arguments may be uploaded,
 * whether the op runs as a whole on CPU). One table, in op_props.c. */
#ifndef TT_OPS_OP_PROPS_H
#define TT_OPS_OP_PROPS_H

typedef enum {
  /* ATen's out= kernel refuses any overlap of out with an input (others,
   * like TensorIterator's, refuse only a partial one) */
  TT_PROP_OUT_NO_OVERLAP = 1,
  /* ATen's out= kernel requires out to have the first input's dtype */
  TT_PROP_OUT_SAME_DTYPE = 2,
  /* CPU tensor arguments (index tensors, optimizer state steps) may be
   * moved to the op's device instead of refusing the mixed devices */
  TT_PROP_UPLOAD_CPU_ARGS = 4,
  /* computed through intermediates tpu cannot hold: the whole op runs on
   * CPU (its CPU errors included); no op needs it since complex64 and
   * complex128 became tpu dtypes */
  TT_PROP_COMPLEX_ON_CPU = 8,
  /* its lowering computes complex tensors correctly; an op without this
   * bit that meets a complex tensor (or dtype) runs on CPU */
  TT_PROP_COMPLEX_NATIVE = 16,
  /* ATen's (values, indices) out= kernel requires values of the input's
   * dtype and int64 indices (no casting into them) */
  TT_PROP_OUT_VALUES_INDICES = 32,
  /* ATen's unary out= kernel (TensorIterator's unary op) requires out to
   * have the input's dtype, with "Found dtype X but expected Y" */
  TT_PROP_OUT_UNARY_SAME_DTYPE = 64,
  /* ATen's in-place kernel refuses a self overlapping any other tensor
   * argument (index_copy_, index_put_: "unsupported operation") */
  TT_PROP_INPLACE_NO_OVERLAP = 128,
  /* ATen's out= kernel requires out to have the input's dtype, with
   * "expected scalar_type X but found Y" (logcumsumexp) */
  TT_PROP_OUT_SCALAR_TYPE_EQUAL = 256,
} tt_op_prop;

/* The properties (a set of tt_op_prop bits) of op_name, "cat.out" or "cat"
 * (the overload, after the dot, is optional; rules match the base name or
 * a prefix of the whole name). 0 for an op the table does not list. */
unsigned tt_op_props(const char *op_name);

/* The i-th op (base name) the table lists by exact name with any of the
 * bits in `props`; NULL past the end. For registering kernels per op. */
const char *tt_op_props_listed(int i, unsigned props);

#endif
