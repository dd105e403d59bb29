/* The layout arithmetic of strided views over flat storages: what a
 * program's cache key, its explanation and its emitted reads (graph/view.h)
 * need to agree on. Pure functions of a tt_tensor_ref; nothing is emitted. */
#ifndef TT_GRAPH_VIEW_LAYOUT_H
#define TT_GRAPH_VIEW_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/args.h"

/* True if the view is dense row-major (size-1 dims ignored). */
bool tt_view_is_contiguous(const tt_tensor_ref *ref);
int64_t tt_view_numel(const tt_tensor_ref *ref);
/* True if the view is contiguous, starts at 0 and spans storage_numel. */
bool tt_view_covers(const tt_tensor_ref *ref, int64_t storage_numel);

/* Elements from the view's first to its last in storage order:
 * 1 + sum((size_i - 1) * stride_i); 0 for an empty view. */
int64_t tt_view_span(const tt_tensor_ref *ref);

/* A view whose dims, sorted by stride, nest (each stride a multiple of the
 * next, windows not overlapping) is a strided slice of the storage laid out
 * as a grid: grid dim i holds extent[i] elements base[i] apart, and the view
 * takes need[i] of them, step[i] apart; kept[i] is the view dim it is. */
typedef struct {
  int nk; /* dims with more than one element and a nonzero stride */
  int kept[TT_MAX_DIMS];
  int64_t base[TT_MAX_DIMS], step[TT_MAX_DIMS], extent[TT_MAX_DIMS], need[TT_MAX_DIMS];
} tt_view_grid;

/* The grid of the view's layout (its offset aside); false when the layout
 * needs a gather (negative strides, overlapping or non-nesting windows). */
bool tt_view_grid_make(const tt_tensor_ref *ref, tt_view_grid *g);

/* How a program depends on the view's storage offset, as the cache key, the
 * signatures and the lowering all see it:
 *   0                       offset 0, baked into the program;
 *   TT_VIEW_OFFSET_DYNAMIC  a runtime parameter of the program: a nonzero
 *                           offset whose window [offset, offset + span) lies
 *                           in the storage (for a grid view: whose grid
 *                           starts stay inside their dims, so a dynamic_slice
 *                           never clamps them); or an empty view, whose
 *                           program does not depend on it;
 *   the offset itself       baked in (a view reaching past its storage,
 *                           wrapping a row of its grid, or with negative
 *                           strides: read as before).
 * So views of one layout at any offsets share one program. */
#define TT_VIEW_OFFSET_DYNAMIC (-1)
int64_t tt_view_offset_class(const tt_tensor_ref *ref, int64_t storage_numel);

#endif
