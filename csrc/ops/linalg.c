/* Lowerings of the linalg family (see lowering.h). */
#include "ops/common.h"

TT_LOWERINGS(linalg) = {
    {NULL, {NULL}},
};
