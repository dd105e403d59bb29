/* Lowerings of the optim family (see lowering.h). */
#include "ops/common.h"

TT_LOWERINGS(optim) = {
    {NULL, {NULL}},
};
