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
    /* computed through complex intermediates */
    {"complex", false, TT_PROP_COMPLEX_ON_CPU},
    {"polar", false, TT_PROP_COMPLEX_ON_CPU},
    {"fft_hfft", false, TT_PROP_COMPLEX_ON_CPU},
    {"fft_irfft", false, TT_PROP_COMPLEX_ON_CPU},
    {"fft_ihfft", false, TT_PROP_COMPLEX_ON_CPU},
    {"fft_hfft2", false, TT_PROP_COMPLEX_ON_CPU},
    {"fft_irfft2", false, TT_PROP_COMPLEX_ON_CPU},
    {"fft_hfftn", false, TT_PROP_COMPLEX_ON_CPU},
    {"fft_irfftn", false, TT_PROP_COMPLEX_ON_CPU},
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
