/* Strided views over flat storage buffers, in StableHLO.
 *
 * A storage is one flat device array (tensor<N x dtype>). A tensor is a view:
 * sizes, strides and an offset into it. Reading a view emits slices,
 * reshapes and transposes when the layout allows, a gather otherwise; a
 * nonzero offset is a runtime value (a dynamic slice of the window the view
 * spans) so views at new offsets reuse their programs.
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

/* Elements from the view's first to its last in storage order:
 * 1 + sum((size_i - 1) * stride_i); 0 for an empty view. */
int64_t tt_view_span(const tt_tensor_ref *ref);

/* How a program depends on the view's storage offset, as the cache key and
 * the lowering both see it:
 *   0                       offset 0, baked into the program;
 *   TT_VIEW_OFFSET_DYNAMIC  a runtime parameter of the program (a nonzero
 *                           offset whose window [offset, offset + span)
 *                           lies in the storage; or an empty view, whose
 *                           program does not depend on it);
 *   the offset itself       baked in (a view reaching past its storage, or
 *                           with negative strides: read as before).
 * So views of one layout at any offsets share one program. */
#define TT_VIEW_OFFSET_DYNAMIC (-1)
int64_t tt_view_offset_class(const tt_tensor_ref *ref, int64_t storage_numel);

/* The logical value of `ref` read from `flat` (1-D, storage_numel long).
 * offset: TT_INVALID to bake ref->offset in, or the offset as an i64
 * scalar value (for views of class TT_VIEW_OFFSET_DYNAMIC only). */
tt_val tt_view_read(tt_builder *b, tt_val flat, const tt_tensor_ref *ref, tt_val offset);

/* Returns the new flat base after writing `value` (shape ref->sizes, dtype
 * ref->dtype) through the view. Fails the builder for views where one
 * element is reached through several indices (expanded tensors), as
 * PyTorch does. flat may be TT_INVALID if ref covers the whole storage. */
tt_val tt_view_write(tt_builder *b, tt_val flat, const tt_tensor_ref *ref, int64_t storage_numel,
                     tt_val value, tt_val offset);

#endif
