// Module conversion (`module.to("tpu")`, `.cpu()`, `.to(dtype)`) keeps the
// Parameter objects and swaps their `.data` when the old and new tensors are
// of compatible types; otherwise nn.Module._apply replaces every Parameter,
// which unties shared weights (GPT-2's lm_head and wte) and silently breaks
// their gradients and any optimizer built before the move. c10's own rule
// (TensorImpl::has_compatible_shallow_copy_type) lists only the in-tree
// dense backends and leaves PrivateUse1 to this operator; the rule here is
// CUDA's: any two dense strided tensors of plain (non-subclass) key sets are
// compatible, whatever their devices.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace torch_tpu {

namespace {

bool is_plain_dense(const at::Tensor& t) {
  constexpr auto backends = c10::DispatchKeySet(
      {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit,
       c10::BackendComponent::PrivateUse1Bit});
  const c10::DispatchKeySet ks = t.key_set();
  return t.layout() == at::kStrided && ks.has_any(c10::DispatchKeySet(c10::DispatchKey::Dense)) &&
         ks.has_any(backends) && !ks.has(c10::DispatchKey::Python) && !t.is_quantized() &&
         !t.is_nested();
}

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (self.key_set() == from.key_set()) return true;
  return is_plain_dense(self) && is_plain_dense(from);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
}

}  // namespace torch_tpu
