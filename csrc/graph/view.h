/* Strided views over flat storage buffers, in StableHLO.
 *
 * A storage is one flat device array (tensor<N x dtype>). A tensor is a view:
 * sizes, strides and an offset into it. Reading a view emits slices,
 * reshapes and transposes when the layout allows, a gather otherwise. A
 * nonzero offset of class TT_VIEW_OFFSET_DYNAMIC (view_layout.h) is a
 * runtime value: dynamic slices of the storage or of its grid, or gather /
 * scatter indices shifted by it, so views at new offsets reuse programs.
 * Writing a view emits the inverse: a whole-buffer replacement, an update
 * slice, or a scatter into the base. Nothing here runs; it only emits. */
#ifndef TT_GRAPH_VIEW_H
#define TT_GRAPH_VIEW_H

#include "core/args.h"
#include "graph/view_layout.h"
#include "shlo/builder.h"

/* The logical value of `ref` read from `flat` (1-D, storage_numel long).
 * offset: TT_INVALID to bake ref->offset in, or the offset as an i64
 * scalar value (for views of class TT_VIEW_OFFSET_DYNAMIC only). */
tt_val tt_view_read(tt_builder *b, tt_val flat, const tt_tensor_ref *ref, tt_val offset);

/* Returns the new flat base after writing `value` (shape ref->sizes, dtype
 * ref->dtype) through the view. Fails the builder for views where one
 * element is reached through several indices (expanded tensors), as
 * PyTorch does. flat may be TT_INVALID if ref covers the whole storage.
 * offset: as for tt_view_read. */
tt_val tt_view_write(tt_builder *b, tt_val flat, const tt_tensor_ref *ref, int64_t storage_numel,
                     tt_val value, tt_val offset);

#endif
