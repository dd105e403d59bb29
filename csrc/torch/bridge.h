// The C++ side of the PyTorch boundary: helpers shared by the small files
// in this folder. Logic that is not about PyTorch's ABI belongs in the C
// core, not here.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>

extern "C" {
#include "core/error.h"
#include "graph/storage.h"
#include "ops/lowering.h"
}

namespace torch_tpu {

// Raises the PyTorch exception matching err's code (the one place where C
// errors become exceptions) after freeing err. No-op for NULL.
void raise_if_error(tt_error* err);

// Loads the plugin on first use; raises if it cannot be loaded.
void ensure_initialized();
// Device count without raising (0 when the plugin cannot be loaded).
c10::DeviceIndex device_count_noexcept();
void set_search_dirs(const std::vector<std::string>& dirs);

c10::DeviceIndex current_device();
void set_current_device(c10::DeviceIndex index);

c10::Allocator* tpu_allocator();
// A DataPtr owning the user reference of core storage s.
c10::DataPtr make_data_ptr(tt_storage* s, c10::DeviceIndex device);

// ScalarType <-> core dtype; raises TypeError for dtypes we do not support.
tt_dtype to_core_dtype(at::ScalarType t);
bool is_supported_dtype(at::ScalarType t);
at::ScalarType to_scalar_type(tt_dtype d);

// The core storage behind a tpu tensor.
tt_storage* storage_of(const at::Tensor& t);

// Describes tensor t for the core (t must be on tpu).
void describe_tensor(const at::Tensor& t, tt_tensor_ref* ref);

// Wraps a fresh device buffer as a new contiguous tpu tensor (takes buf).
at::Tensor wrap_buffer(tt_buffer* buf, tt_dtype dtype, int ndim, const int64_t* sizes,
                       c10::DeviceIndex device);
// Wraps a core storage (takes its user reference) as a new contiguous tensor.
at::Tensor wrap_storage(tt_storage* s, tt_dtype dtype, int ndim, const int64_t* sizes,
                        c10::DeviceIndex device);

// Hands queued recompile explanations to Python (no-op when none).
void drain_explanations();
void install_explain_hook();

// Records CPU fallbacks; the first of an op is announced with a warning
// unless announce is false (a case CPU itself warns about).
void count_fallback(const std::string& op, bool announce = true);

// The boxed tpu kernel every lowered op goes through (fallback.cpp).
void tpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace torch_tpu
