/* Lowerings of the indexing family (see lowering.h). */
#include "ops/common.h"

TT_LOWERINGS(indexing) = {
    {NULL, {NULL}},
};
