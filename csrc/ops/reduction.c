/* Lowerings of the reduction family (see lowering.h). */
#include "ops/common.h"

TT_LOWERINGS(reduction) = {
    {NULL, {NULL}},
};
