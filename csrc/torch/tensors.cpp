// Describing tpu tensors to the core and wrapping core buffers as tensors.
#include <ATen/EmptyTensor.h>

#include "torch/bridge.h"

namespace torch_tpu {

bool is_supported_dtype(at::ScalarType t) {
  switch (t) {
    case at::kBool: case at::kByte: case at::kChar: case at::kShort: case at::kInt:
    case at::kLong: case at::kHalf: case at::kBFloat16: case at::kFloat: case at::kDouble:
    case at::kComplexFloat: case at::kComplexDouble:
      return true;
    default:
      return false;
  }
}

tt_dtype to_core_dtype(at::ScalarType t) {
  switch (t) {
    case at::kBool: return TT_BOOL;
    case at::kByte: return TT_U8;
    case at::kChar: return TT_I8;
    case at::kShort: return TT_I16;
    case at::kInt: return TT_I32;
    case at::kLong: return TT_I64;
    case at::kHalf: return TT_F16;
    case at::kBFloat16: return TT_BF16;
    case at::kFloat: return TT_F32;
    case at::kDouble: return TT_F64;
    case at::kComplexFloat: return TT_C64;
    case at::kComplexDouble: return TT_C128;
    default:
      TORCH_CHECK_TYPE(false, "torch_tpu does not support dtype ", t,
                       " (supported: bool, uint8, int8, int16, int32, int64, float16, "
                       "bfloat16, float32, float64, complex64, complex128)");
  }
}

at::ScalarType to_scalar_type(tt_dtype d) {
  switch (d) {
    case TT_BOOL: return at::kBool;
    case TT_U8: return at::kByte;
    case TT_I8: return at::kChar;
    case TT_I16: return at::kShort;
    case TT_I32: return at::kInt;
    case TT_I64: return at::kLong;
    case TT_F16: return at::kHalf;
    case TT_BF16: return at::kBFloat16;
    case TT_F32: return at::kFloat;
    case TT_F64: return at::kDouble;
    case TT_C64: return at::kComplexFloat;
    case TT_C128: return at::kComplexDouble;
    default: TORCH_CHECK(false, "internal: core dtype ", static_cast<int>(d), " has no torch dtype");
  }
}

tt_storage* storage_of(const at::Tensor& t) {
  // A slice of a tpu storage (UntypedStorage[a:b]) is a DataPtr whose
  // context is the parent's StorageImpl, not a tt_storage: refuse it rather
  // than read one as the other (it named a wrong device, "tpu:3")
  const c10::DataPtr& dp = t.storage().data_ptr();
  TORCH_CHECK_NOT_IMPLEMENTED(
      dp.get_context() == nullptr || dp.get_deleter() == tpu_allocator()->raw_deleter(),
      "torch_tpu: this tensor's storage was not allocated by tpu (a slice of a tpu storage, "
      "UntypedStorage[a:b], is not supported; copy the bytes to CPU first)");
  return static_cast<tt_storage*>(dp.get_context());
}

void describe_tensor(const at::Tensor& t, tt_tensor_ref* ref) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.dim() <= TT_MAX_DIMS, "torch_tpu supports tensors of up to ",
                              TT_MAX_DIMS, " dimensions, got ", t.dim());
  ref->storage = storage_of(t);
  ref->dtype = to_core_dtype(t.scalar_type());
  ref->ndim = static_cast<int>(t.dim());
  for (int i = 0; i < ref->ndim; i++) {
    ref->sizes[i] = t.size(i);
    ref->strides[i] = t.stride(i);
  }
  ref->offset = t.storage_offset();
  ref->wrapped_number = t.unsafeGetTensorImpl()->is_wrapped_number();
  ref->value_f = 0;
  ref->value_i = 0;
}

at::Tensor wrap_storage(tt_storage* s, tt_dtype dtype, int ndim, const int64_t* sizes,
                        c10::DeviceIndex device) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), tt_storage_nbytes(s),
                       make_data_ptr(s, device), tpu_allocator(), /*resizable=*/true);
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      c10::scalarTypeToTypeMeta(to_scalar_type(dtype)));
  t.unsafeGetTensorImpl()->set_sizes_contiguous(c10::IntArrayRef(sizes, ndim));
  return t;
}

at::Tensor wrap_buffer(tt_buffer* buf, tt_dtype dtype, int ndim, const int64_t* sizes,
                       c10::DeviceIndex device) {
  tt_storage* s = tt_storage_new(device, tt_buffer_nbytes(buf));
  if (!s) {
    tt_buffer_release(buf);
    TORCH_CHECK_WITH(OutOfMemoryError, false, "torch_tpu: out of host memory allocating a storage");
  }
  tt_storage_set_buffer(s, buf);
  return wrap_storage(s, dtype, ndim, sizes, device);
}

}  // namespace torch_tpu
