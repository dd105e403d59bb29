/* Strided views over flat storage buffers, in StableHLO.
 *
 * A storage is one flat device array (tensor<N x dtype>). A tensor is a view:
 * sizes, strides and an offset into it. Reading a view emits slices,
 * reshapes and transposes when the layout allows, a gather otherwise.
 * Writing a view emits the inverse: a whole-buffer replacement, an update
 * slice, or a scatter into the base. Nothing here runs; it only emits. */
#ifndef TT_GRAPH_VIEW_H
#define TT_GRAPH_VIEW_H

#include "core/args.h"
#include "shlo/builder.h"

/* True if the view is dense row-major (size-1 dims ignored). */
bool tt_view_is_contiguous(const tt_tensor_ref *ref);
int64_t tt_view_numel(const tt_tensor_ref *ref);
/* True if the view is contiguous, starts at 0 and spans storage_numel. */
bool tt_view_covers(const tt_tensor_ref *ref, int64_t storage_numel);

/* The logical value of `ref` read from `flat` (1-D, storage_numel long). */
tt_val tt_view_read(tt_builder *b, tt_val flat, const tt_tensor_ref *ref);

/* Returns the new flat base after writing `value` (shape ref->sizes, dtype
 * ref->dtype) through the view. Fails the builder for views where one
 * element is reached through several indices (expanded tensors), as
 * PyTorch does. flat may be TT_INVALID if ref covers the whole storage. */
tt_val tt_view_write(tt_builder *b, tt_val flat, const tt_tensor_ref *ref, int64_t storage_numel,
                     tt_val value);

#endif
