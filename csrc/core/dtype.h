/* Element types the core understands, and PyTorch's type-promotion lattice.
 * The enum is append-only; tables indexed by it are checked against
 * TT_DTYPE_COUNT at compile time. */
#ifndef TT_CORE_DTYPE_H
#define TT_CORE_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  TT_BOOL = 0,
  TT_U8,
  TT_I8,
  TT_I16,
  TT_I32,
  TT_I64,
  TT_F16,
  TT_BF16,
  TT_F32,
  TT_F64,
  TT_U32, /* internal only (random bits); never a torch dtype */
  TT_U64, /* internal only (rng state) */
  TT_C64,  /* complex64: pairs of f32 (real, imaginary) */
  TT_C128, /* complex128: pairs of f64 */
  TT_DTYPE_COUNT
} tt_dtype;

#define TT_MAX_DIMS 8

size_t tt_dtype_size(tt_dtype dt);
const char *tt_dtype_name(tt_dtype dt);      /* "float32" */
const char *tt_dtype_torch_name(tt_dtype dt); /* PyTorch's ScalarType name: "Float", "Long" */
const char *tt_dtype_mlir(tt_dtype dt);      /* "f32", "i1", "ui8", "complex<f32>" */
bool tt_dtype_is_floating(tt_dtype dt);
bool tt_dtype_is_integral(tt_dtype dt);      /* excludes bool */
bool tt_dtype_is_signed(tt_dtype dt);
bool tt_dtype_is_complex(tt_dtype dt);
/* The element type of each component of a complex dtype (c64 -> f32,
 * c128 -> f64); dt itself for a real dtype. */
tt_dtype tt_dtype_real_part(tt_dtype dt);
/* The complex dtype holding values of dt, as torch promotes: f64 -> c128,
 * every other real dtype -> c64; dt itself when complex. */
tt_dtype tt_dtype_to_complex(tt_dtype dt);

/* torch.promote_types */
tt_dtype tt_promote(tt_dtype a, tt_dtype b);

/* Category for result_type: 0 bool, 1 integral, 2 floating, 3 complex. */
int tt_dtype_category(tt_dtype dt);

/* torch.can_cast(from, to): the rule in-place and out= results obey. */
bool tt_can_cast(tt_dtype from, tt_dtype to);

/* torch.get_default_dtype() as the boundary last set it (float32 until
 * then): the dtype integer inputs promote to where torch uses the default
 * (int tensor / Python float, sqrt of an int tensor, ...). Part of every
 * op's cache key. Thread-safe (an atomic). */
tt_dtype tt_default_float(void);
void tt_set_default_float(tt_dtype dt);

/* Bit pattern of `value` rounded to float dtype dt (f16, bf16, f32, f64),
 * round-to-nearest-even; used to print exact constants. */
uint64_t tt_float_bits(tt_dtype dt, double value);
/* Inverse: the value of a bit pattern of float dtype dt. */
double tt_float_from_bits(tt_dtype dt, uint64_t bits);

#endif
