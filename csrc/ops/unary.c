/* Lowerings of the unary family (see lowering.h). */
#include "ops/common.h"

TT_LOWERINGS(unary) = {
    {NULL, {NULL}},
};
