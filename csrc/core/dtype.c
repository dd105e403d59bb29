#include "core/dtype.h"

#include <assert.h>
#include <stdatomic.h>

typedef struct {
  const char *name;
  const char *mlir;
  size_t size;
  const char *torch; /* PyTorch's ScalarType name, as its messages print it */
} dtype_info;

static const dtype_info infos[] = {
    [TT_BOOL] = {"bool", "i1", 1, "Bool"},      [TT_U8] = {"uint8", "ui8", 1, "Byte"},
    [TT_I8] = {"int8", "i8", 1, "Char"},        [TT_I16] = {"int16", "i16", 2, "Short"},
    [TT_I32] = {"int32", "i32", 4, "Int"},     [TT_I64] = {"int64", "i64", 8, "Long"},
    [TT_F16] = {"float16", "f16", 2, "Half"},   [TT_BF16] = {"bfloat16", "bf16", 2, "BFloat16"},
    [TT_F32] = {"float32", "f32", 4, "Float"},   [TT_F64] = {"float64", "f64", 8, "Double"},
    [TT_U32] = {"uint32", "ui32", 4, "UInt32"},   [TT_U64] = {"uint64", "ui64", 8, "UInt64"},
    [TT_C64] = {"complex64", "complex<f32>", 8, "ComplexFloat"},
    [TT_C128] = {"complex128", "complex<f64>", 16, "ComplexDouble"},
};
_Static_assert(sizeof infos / sizeof infos[0] == TT_DTYPE_COUNT, "dtype table out of date");

size_t tt_dtype_size(tt_dtype dt) { return dt < TT_DTYPE_COUNT ? infos[dt].size : 0; }
const char *tt_dtype_name(tt_dtype dt) { return dt < TT_DTYPE_COUNT ? infos[dt].name : "invalid"; }
const char *tt_dtype_torch_name(tt_dtype dt) { return dt < TT_DTYPE_COUNT ? infos[dt].torch : "Unknown"; }
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

bool tt_dtype_is_complex(tt_dtype dt) { return dt == TT_C64 || dt == TT_C128; }

tt_dtype tt_dtype_real_part(tt_dtype dt) {
  return dt == TT_C64 ? TT_F32 : dt == TT_C128 ? TT_F64 : dt;
}

tt_dtype tt_dtype_to_complex(tt_dtype dt) {
  if (tt_dtype_is_complex(dt)) return dt;
  return dt == TT_F64 ? TT_C128 : TT_C64;
}

int tt_dtype_category(tt_dtype dt) {
  if (dt == TT_BOOL) return 0;
  if (tt_dtype_is_complex(dt)) return 3;
  return tt_dtype_is_floating(dt) ? 2 : 1;
}

/* PyTorch's promotion lattice for the torch dtypes we support. Row/column
 * order: b1 u1 i1 i2 i4 i8 f2 bf f4 f8. */
tt_dtype tt_promote(tt_dtype a, tt_dtype b) {
  const tt_dtype b1 = TT_BOOL, u1 = TT_U8, i1 = TT_I8, i2 = TT_I16, i4 = TT_I32, i8 = TT_I64,
                 f2 = TT_F16, bf = TT_BF16, f4 = TT_F32, f8 = TT_F64;
  const tt_dtype table[10][10] = {
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
  /* complex: the complex type of the promoted component types
   * (complex64 + float64 -> complex128, int64 + complex64 -> complex64) */
  if (tt_dtype_is_complex(a) || tt_dtype_is_complex(b)) {
    if (a > TT_F64 && !tt_dtype_is_complex(a)) return TT_I64;
    if (b > TT_F64 && !tt_dtype_is_complex(b)) return TT_I64;
    return tt_dtype_to_complex(tt_promote(tt_dtype_real_part(a), tt_dtype_real_part(b)));
  }
  if (a > TT_F64 || b > TT_F64) return a == b ? a : TT_I64;
  return table[a][b];
}

bool tt_can_cast(tt_dtype from, tt_dtype to) {
  if (tt_dtype_is_complex(from) && !tt_dtype_is_complex(to)) return false;
  if (tt_dtype_is_floating(from) && !tt_dtype_is_floating(to) && !tt_dtype_is_complex(to))
    return false;
  if (from != TT_BOOL && to == TT_BOOL) return false;
  return true;
}

#include <math.h>
#include <string.h>

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if (isnan(f)) return 0x7FC0;
  u += 0x7FFF + ((u >> 16) & 1); /* round to nearest even */
  return (uint16_t)(u >> 16);
}

/* IEEE half from double, round-to-nearest-even, with subnormals. */
static uint16_t double_to_f16(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  if (isnan(d)) return 0x7E00;
  d = fabs(d);
  if (isinf(d) || d >= 65520.0) return sign | 0x7C00;
  if (d < 0x1p-25) return sign;
  int exp;
  double mant = frexp(d, &exp); /* d = mant * 2^exp, mant in [0.5,1) */
  int e = exp - 1;             /* d = (2*mant) * 2^e */
  if (e < -14) {               /* subnormal: value / 2^-24 */
    double q = d / 0x1p-24;
    double r = nearbyint(q);
    return sign | (uint16_t)r;
  }
  double frac = (2.0 * mant - 1.0) * 1024.0;
  double r = nearbyint(frac);
  int biased = e + 15;
  if (r >= 1024.0) {
    r = 0;
    biased++;
  }
  if (biased >= 31) return sign | 0x7C00;
  return sign | (uint16_t)(biased << 10) | (uint16_t)r;
}

static double f16_to_double(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v;
  if (e == 0) v = ldexp(m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexp(m + 1024, e - 25);
  return sign ? -v : v;
}

uint64_t tt_float_bits(tt_dtype dt, double value) {
  switch (dt) {
    case TT_F64: {
      uint64_t u;
      memcpy(&u, &value, sizeof u);
      return u;
    }
    case TT_F32: return f32_bits((float)value);
    case TT_BF16: return f32_to_bf16((float)value);
    case TT_F16: return double_to_f16(value);
    default: assert(!"tt_float_bits on a non-float dtype"); return 0;
  }
}

double tt_float_from_bits(tt_dtype dt, uint64_t bits) {
  switch (dt) {
    case TT_F64: {
      double d;
      memcpy(&d, &bits, sizeof d);
      return d;
    }
    case TT_F32: return f32_from_bits((uint32_t)bits);
    case TT_BF16: return f32_from_bits((uint32_t)bits << 16);
    case TT_F16: return f16_to_double((uint16_t)bits);
    default: return 0;
  }
}

static _Atomic int default_float = TT_F32;

tt_dtype tt_default_float(void) { return (tt_dtype)atomic_load_explicit(&default_float, memory_order_relaxed); }

void tt_set_default_float(tt_dtype dt) {
  if (tt_dtype_is_floating(dt)) atomic_store_explicit(&default_float, (int)dt, memory_order_relaxed);
}
