/* Helpers shared by the indexing-style families (indexing, scatter,
 * shape_ops): shapes, the stablehlo gather/scatter emitters, gather/scatter
 * coordinates and torch's negative-index wrap. */
#ifndef TT_OPS_INDEXING_COMMON_H
#define TT_OPS_INDEXING_COMMON_H

#include "ops/common.h"

tt_shape ix_shape_of(tt_dtype dt, int nd, const int64_t *dims);
int64_t ix_numel_of(int nd, const int64_t *dims);
void ix_fmt_field(char *buf, size_t size, const char *name, const int64_t *v, int n);
tt_val ix_emit_gather(tt_builder *b, tt_val operand, tt_val indices, const int64_t *offset_dims,
                      int n_off, const int64_t *collapsed, int n_coll,
                      const int64_t *start_map, int n_map, int ivd,
                      const int64_t *slice_sizes, tt_shape out);
tt_val ix_emit_scatter(tt_builder *b, tt_val operand, tt_val indices, tt_val updates,
                       const int64_t *window_dims, int n_win, const int64_t *inserted,
                       int n_ins, const int64_t *to_operand, int n_map, int ivd,
                       const char *combine);
tt_val ix_full_coords(tt_builder *b, tt_val index, int dim);
bool ix_is_index_dtype(tt_dtype dt);
tt_val ix_wrap_negative(tt_builder *b, tt_val idx, int64_t size);
/* Device-side check (ops/lowering.h, tt_lc_check_value) that every element
 * of idx (any integer dtype) lies in [lo, hi); the failure raises `code`
 * with `message` (which may name the offending index as "{value}") and
 * the index element's position. */
void ix_check_range(tt_lower_ctx *c, tt_val idx, int64_t lo, int64_t hi, tt_error_code code,
                    const char *message);
int ix_window_dims_except(int nd, int64_t dim, int64_t *out);

#endif
