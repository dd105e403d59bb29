// Autocast on tpu: registers CUDA's cast policy for the AutocastPrivateUse1
// dispatch key. The op lists are PyTorch's own (ATen/autocast_mode.h, the
// same AT_FORALL_* lists aten/src/ATen/autocast_mode.cpp registers for
// AutocastCUDA), so the policy follows torch when it changes:
//   lower_precision_fp  matmul/linear/conv/bmm/baddbmm/attention ... run in
//                       the autocast dtype (bfloat16 or float16);
//   fp32                softmax inputs, norms, losses, exp/log/pow ... run
//                       in float32;
//   fp32_set_opt_dtype  sum/prod/cumsum/softmax/log_softmax/vector norms get
//                       dtype=float32 unless the caller gave one;
//   promote             cat-like multi-input ops run in the widest input
//                       dtype.
// Every other op falls through to the tpu kernels unchanged. No logic here
// beyond the lists.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

using at::Tensor;
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

// As on CUDA: binary_cross_entropy is unsafe to autocast (its log of a
// lower-precision probability saturates), so it raises under autocast and
// names the safe alternative.
Tensor binary_cross_entropy_banned(const Tensor&, const Tensor&,
                                   const std::optional<Tensor>&, int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and "
              "torch.nn.BCELoss are unsafe to autocast on tpu (as on cuda). "
              "Use torch.nn.functional.binary_cross_entropy_with_logits or "
              "torch.nn.BCEWithLogitsLoss, which combine a sigmoid with the "
              "loss and are safe to autocast.");
}

#define TT_LOWER_PRECISION_FP(...) \
  KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define TT_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define TT_FP32_SET_OPT_DTYPE(...) \
  KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define TT_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(TT_LOWER_PRECISION_FP)
  AT_FORALL_FP32(TT_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(TT_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(
      KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(TT_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
         TORCH_FN((&binary_cross_entropy_banned)));
}

}  // namespace
