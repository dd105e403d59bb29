#include "core/dtype.h"

#include <assert.h>

typedef struct {
  const char *name;
  const char *mlir;
  size_t size;
} dtype_info;

static const dtype_info infos[] = {
    [TT_BOOL] = {"bool", "i1", 1},      [TT_U8] = {"uint8", "ui8", 1},
    [TT_I8] = {"int8", "i8", 1},        [TT_I16] = {"int16", "i16", 2},
    [TT_I32] = {"int32", "i32", 4},     [TT_I64] = {"int64", "i64", 8},
    [TT_F16] = {"float16", "f16", 2},   [TT_BF16] = {"bfloat16", "bf16", 2},
    [TT_F32] = {"float32", "f32", 4},   [TT_F64] = {"float64", "f64", 8},
    [TT_U32] = {"uint32", "ui32", 4},   [TT_U64] = {"uint64", "ui64", 8},
};
_Static_assert(sizeof infos / sizeof infos[0] == TT_DTYPE_COUNT, "dtype table out of date");

size_t tt_dtype_size(tt_dtype dt) { return dt < TT_DTYPE_COUNT ? infos[dt].size : 0; }
const char *tt_dtype_name(tt_dtype dt) { return dt < TT_DTYPE_COUNT ? infos[dt].name : "invalid"; }
const char *tt_dtype_mlir(tt_dtype dt) { return dt < TT_DTYPE_COUNT ? infos[dt].mlir : "invalid"; }

bool tt_dtype_is_floating(tt_dtype dt) {
  return dt == TT_F16 || dt == TT_BF16 || dt == TT_F32 || dt == TT_F64;
}

bool tt_dtype_is_integral(tt_dtype dt) {
  return dt == TT_U8 || dt == TT_I8 || dt == TT_I16 || dt == TT_I32 || dt == TT_I64 ||
         dt == TT_U32 || dt == TT_U64;
}

bool tt_dtype_is_signed(tt_dtype dt) {
  return dt == TT_I8 || dt == TT_I16 || dt == TT_I32 || dt == TT_I64 || tt_dtype_is_floating(dt);
}

int tt_dtype_category(tt_dtype dt) {
  if (dt == TT_BOOL) return 0;
  return tt_dtype_is_floating(dt) ? 2 : 1;
}

/* PyTorch's promotion lattice for the torch dtypes we support. Row/column
 * order: b1 u1 i1 i2 i4 i8 f2 bf f4 f8. */
tt_dtype tt_promote(tt_dtype a, tt_dtype b) {
  enum { b1 = TT_BOOL, u1 = TT_U8, i1 = TT_I8, i2 = TT_I16, i4 = TT_I32, i8 = TT_I64,
         f2 = TT_F16, bf = TT_BF16, f4 = TT_F32, f8 = TT_F64 };
  static const tt_dtype table[10][10] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  if (a > TT_F64 || b > TT_F64) return a == b ? a : TT_I64;
  return table[a][b];
}

bool tt_can_cast(tt_dtype from, tt_dtype to) {
  if (tt_dtype_is_floating(from) && !tt_dtype_is_floating(to)) return false;
  if (from != TT_BOOL && to == TT_BOOL) return false;
  return true;
}
