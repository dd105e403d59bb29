/* The per-op property table (see op_props.h). A rule matches an op's base
 * name exactly, or (prefix) the start of its whole name; an op's
 * properties are those of every rule it matches. */
#include "ops/op_props.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct {
  const char *name;
  bool prefix;
  unsigned props;
} op_rule;

static const op_rule rules[] = {
    /* out= kernels that refuse any overlap with an input; gather also
     * requires out's dtype to be the input's */
    {"cat", false, TT_PROP_OUT_NO_OVERLAP},
    {"index_select", false, TT_PROP_OUT_NO_OVERLAP},
    {"take", false, TT_PROP_OUT_NO_OVERLAP},
    {"masked_select", false, TT_PROP_OUT_NO_OVERLAP},
    {"kthvalue", false, TT_PROP_OUT_NO_OVERLAP},
    {"gather", false, TT_PROP_OUT_NO_OVERLAP | TT_PROP_OUT_SAME_DTYPE},
    /* in-place kernels that refuse self overlapping an index or source */
    {"index_copy_", false, TT_PROP_INPLACE_NO_OVERLAP},
    {"index_add_", false, TT_PROP_INPLACE_NO_OVERLAP},
    {"index_fill_", false, TT_PROP_INPLACE_NO_OVERLAP},
    {"scatter_", false, TT_PROP_INPLACE_NO_OVERLAP},
    {"scatter_add_", false, TT_PROP_INPLACE_NO_OVERLAP},
    {"index_put_", false, TT_PROP_INPLACE_NO_OVERLAP},
    {"_index_put_impl_", false, TT_PROP_INPLACE_NO_OVERLAP},
    {"put_", false, TT_PROP_INPLACE_NO_OVERLAP},
    {"logcumsumexp", false, TT_PROP_OUT_SCALAR_TYPE_EQUAL},
    /* (values, indices) out= kernels: no casting into either output (only
     * the two-output overloads have two out tensors) */
    {"max", false, TT_PROP_OUT_VALUES_INDICES},
    {"min", false, TT_PROP_OUT_VALUES_INDICES},
    {"sort", false, TT_PROP_OUT_VALUES_INDICES},
    {"topk", false, TT_PROP_OUT_VALUES_INDICES},
    {"kthvalue", false, TT_PROP_OUT_VALUES_INDICES},
    {"median", false, TT_PROP_OUT_VALUES_INDICES},
    {"nanmedian", false, TT_PROP_OUT_VALUES_INDICES},
    {"cummax", false, TT_PROP_OUT_VALUES_INDICES},
    {"cummin", false, TT_PROP_OUT_VALUES_INDICES},
    /* unary ops built as TensorIterator unary ops (all operands one dtype) */
    {"neg", false, TT_PROP_OUT_UNARY_SAME_DTYPE},
    {"floor", false, TT_PROP_OUT_UNARY_SAME_DTYPE},
    {"ceil", false, TT_PROP_OUT_UNARY_SAME_DTYPE},
    {"trunc", false, TT_PROP_OUT_UNARY_SAME_DTYPE},
    {"round", false, TT_PROP_OUT_UNARY_SAME_DTYPE},
    {"frac", false, TT_PROP_OUT_UNARY_SAME_DTYPE},
    {"sign", false, TT_PROP_OUT_UNARY_SAME_DTYPE},
    {"sgn", false, TT_PROP_OUT_UNARY_SAME_DTYPE},
    {"abs", false, TT_PROP_OUT_UNARY_SAME_DTYPE},
    {"bitwise_not", false, TT_PROP_OUT_UNARY_SAME_DTYPE},
    /* ops that take CPU index tensors or CPU optimizer steps */
    {"index", true, TT_PROP_UPLOAD_CPU_ARGS},
    {"_index_put", true, TT_PROP_UPLOAD_CPU_ARGS},
    {"_foreach", true, TT_PROP_UPLOAD_CPU_ARGS},
    {"_fused", true, TT_PROP_UPLOAD_CPU_ARGS},
    /* lowerings that compute complex values (every other op meeting a
     * complex tensor runs on CPU); in-place forms listed beside their ops */
#define CX(op) {op, false, TT_PROP_COMPLEX_NATIVE}, {op "_", false, TT_PROP_COMPLEX_NATIVE}
    CX("add"), CX("sub"), CX("rsub"), CX("mul"), CX("div"), CX("neg"), CX("exp"), CX("log"),
    CX("sqrt"), CX("rsqrt"), CX("pow"), CX("log2"), CX("log10"), CX("expm1"), CX("log1p"),
    CX("masked_fill"), CX("addmm"), CX("baddbmm"), CX("addbmm"), CX("addmv"), CX("cumsum"), CX("sin"), CX("cos"), CX("tanh"), CX("reciprocal"), CX("sgn"),
    CX("abs"), CX("conj_physical"), CX("copy"), CX("fill"), CX("zero"), CX("eq"), CX("ne"),
    CX("sinh"), CX("cosh"), CX("cumprod"), CX("logsumexp"), CX("prod"), CX("asin"), CX("acos"), CX("atan"), CX("asinh"), CX("acosh"), CX("atanh"),
#undef CX
    {"_conj_physical", false, TT_PROP_COMPLEX_NATIVE},
    {"angle", false, TT_PROP_COMPLEX_NATIVE},
    {"isnan", false, TT_PROP_COMPLEX_NATIVE},
    {"isinf", false, TT_PROP_COMPLEX_NATIVE},
    {"complex", false, TT_PROP_COMPLEX_NATIVE},
    {"polar", false, TT_PROP_COMPLEX_NATIVE},
    {"clone", false, TT_PROP_COMPLEX_NATIVE},
    {"_to_copy", false, TT_PROP_COMPLEX_NATIVE},
    {"mm", false, TT_PROP_COMPLEX_NATIVE},
    {"bmm", false, TT_PROP_COMPLEX_NATIVE},
    {"mv", false, TT_PROP_COMPLEX_NATIVE},
    {"dot", false, TT_PROP_COMPLEX_NATIVE},
    {"vdot", false, TT_PROP_COMPLEX_NATIVE},
    {"sum", false, TT_PROP_COMPLEX_NATIVE},
    {"mean", false, TT_PROP_COMPLEX_NATIVE},
    {"_fft_r2c", false, TT_PROP_COMPLEX_NATIVE},
    {"_fft_c2r", false, TT_PROP_COMPLEX_NATIVE},
    {"_fft_c2c", false, TT_PROP_COMPLEX_NATIVE},
    {"cat", false, TT_PROP_COMPLEX_NATIVE},
    {"constant_pad_nd", false, TT_PROP_COMPLEX_NATIVE},
    {"roll", false, TT_PROP_COMPLEX_NATIVE},
    {"flip", false, TT_PROP_COMPLEX_NATIVE},
    {"where", false, TT_PROP_COMPLEX_NATIVE},
    {"unfold_backward", false, TT_PROP_COMPLEX_NATIVE}, /* istft's overlap-add */
    /* stft's centring pads (forward only: data movement) */
    {"reflection_pad1d", false, TT_PROP_COMPLEX_NATIVE},
    {"reflection_pad2d", false, TT_PROP_COMPLEX_NATIVE},
    {"replication_pad1d", false, TT_PROP_COMPLEX_NATIVE},
    {"replication_pad2d", false, TT_PROP_COMPLEX_NATIVE},
};

#define N_RULES (sizeof rules / sizeof rules[0])

unsigned tt_op_props(const char *op_name) {
  const char *dot = strchr(op_name, '.');
  size_t base_len = dot ? (size_t)(dot - op_name) : strlen(op_name);
  unsigned props = 0;
  for (size_t i = 0; i < N_RULES; i++) {
    size_t n = strlen(rules[i].name);
    bool match = rules[i].prefix ? strncmp(op_name, rules[i].name, n) == 0
                                 : n == base_len && memcmp(op_name, rules[i].name, n) == 0;
    if (match) props |= rules[i].props;
  }
  return props;
}

const char *tt_op_props_listed(int i, unsigned props) {
  for (size_t k = 0; k < N_RULES; k++)
    if (!rules[k].prefix && (rules[k].props & props) && i-- == 0) return rules[k].name;
  return NULL;
}
