/* Lowerings of the nn family (see lowering.h). */
#include "ops/common.h"

TT_LOWERINGS(nn) = {
    {NULL, {NULL}},
};
