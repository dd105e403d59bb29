// Kernels that are about PyTorch's tensor model rather than math, so they
// live at the boundary: allocation, metadata-only views, host transfers,
// resizing and storage swapping. Everything else goes through the fallback
// in fallback.cpp to the core.
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/op_registration/adaption.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include <limits>

#include "torch/bridge.h"

extern "C" {
#include "graph/core.h"
#include "graph/execute.h"
#include "graph/view.h"
}

namespace torch_tpu {

namespace {

c10::DeviceIndex target_index(std::optional<c10::Device> device) {
  if (device && device->has_index()) return device->index();
  return current_device();
}

void check_dtype(at::ScalarType t) { (void)to_core_dtype(t); }

// Makes `device` current for an allocation, restoring the previous one.
struct CurrentDeviceScope {
  c10::DeviceIndex saved;
  explicit CurrentDeviceScope(std::optional<c10::Device> device) : saved(current_device()) {
    set_current_device(target_index(device));
  }
  ~CurrentDeviceScope() { set_current_device(saved); }
};

at::ScalarType checked_dtype(std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout) {
  TORCH_CHECK(!layout || *layout == at::kStrided, "torch_tpu supports only strided tensors");
  at::ScalarType dt = dtype.value_or(at::get_default_dtype_as_scalartype());
  check_dtype(dt);
  if (dt == at::kDouble || dt == at::kComplexDouble) {
    // TPUs have no float64 (nor complex128); the CPU and GPU plugins do.
    ensure_initialized();
    TORCH_CHECK_TYPE(std::string(tt_runtime_platform_name(tt_core_runtime())) != "tpu",
                     dt == at::kDouble ? "float64 tensors are not supported on this TPU; use float32"
                                       : "complex128 tensors are not supported on this TPU; use "
                                         "complex64");
  }
  return dt;
}

at::Tensor tpu_empty(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                     std::optional<at::Layout> layout, std::optional<c10::Device> device,
                     std::optional<bool>, std::optional<c10::MemoryFormat> memory_format) {
  at::ScalarType dt = checked_dtype(dtype, layout);
  CurrentDeviceScope scope(device);
  return at::detail::empty_generic(size, tpu_allocator(),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dt,
                                   memory_format);
}

at::Tensor tpu_empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                             std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                             std::optional<c10::Device> device, std::optional<bool>) {
  at::ScalarType dt = checked_dtype(dtype, layout);
  CurrentDeviceScope scope(device);
  return at::detail::empty_strided_generic(size, stride, tpu_allocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dt);
}

// Contiguous tensors of more dimensions than the core expresses are moved
// as their 1-D view (the bytes are the same).
at::Tensor within_core_rank(const at::Tensor& t) {
  return t.dim() > TT_MAX_DIMS && t.is_contiguous() ? t.view(-1) : t;
}

bool covers_storage(const at::Tensor& t_in) {
  at::Tensor t = within_core_rank(t_in);
  tt_tensor_ref ref;
  describe_tensor(t, &ref);
  size_t item = t.element_size();
  size_t nbytes = tt_storage_nbytes(ref.storage);
  return tt_view_covers(&ref, static_cast<int64_t>(nbytes / item)) && nbytes % item == 0;
}

// Runs a core op over already-described arguments; raises on error.
void run_core(const char* op, std::vector<tt_arg>& args, bool returns_written,
              c10::DeviceIndex device, tt_op_result* res) {
  tt_error* err = tt_op_run(op, args.data(), static_cast<int>(args.size()), returns_written,
                            device, res);
  drain_explanations();
  raise_if_error(err);
}

// A dense contiguous device copy of t (t itself when it already is one).
at::Tensor dense(const at::Tensor& t) {
  if (covers_storage(t)) return t;
  tt_tensor_ref ref;
  describe_tensor(t, &ref);
  std::vector<tt_arg> args(1);
  args[0].kind = TT_ARG_TENSOR;
  args[0].u.tensor = &ref;
  tt_op_result res;
  run_core("clone", args, false, t.device().index(), &res);
  tt_storage* storage = res.news[0].storage;
  res.news[0].storage = nullptr;
  at::Tensor out = wrap_storage(storage, res.news[0].dtype, res.news[0].ndim, res.news[0].sizes,
                                t.device().index());
  tt_op_result_clear(&res);
  return out;
}

at::Tensor to_host(const at::Tensor& src) {
  at::Tensor d = dense(within_core_rank(src));
  at::Tensor host = at::empty(src.sizes(), src.options().device(at::kCPU));
  if (host.numel() == 0) return host;
  tt_error* err = tt_storage_read_bytes(storage_of(d), host.data_ptr(), host.nbytes());
  drain_explanations();  // a read may flush a fused region, which may compile
  raise_if_error(err);
  return host;
}

// self (tpu) <- src (tpu, same device), through the core's copy_ lowering.
void device_copy(at::Tensor& self, const at::Tensor& src) {
  tt_tensor_ref dst_ref, src_ref;
  describe_tensor(self, &dst_ref);
  describe_tensor(src, &src_ref);
  std::vector<tt_arg> args(2);
  args[0].kind = TT_ARG_TENSOR;
  args[0].written = true;
  args[0].u.tensor = &dst_ref;
  args[1].kind = TT_ARG_TENSOR;
  args[1].u.tensor = &src_ref;
  tt_op_result res;
  run_core("copy_", args, true, self.device().index(), &res);
  tt_op_result_clear(&res);
}

// The same elements without the conjugate and negative bits: what is stored.
at::Tensor physical(const at::Tensor& t) {
  at::Tensor a = t.alias();
  a._set_conj(false);
  a._set_neg(false);
  return a;
}

at::Tensor& tpu_copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  if (self.numel() == 0) return self;
  if (src.is_complex() && !self.is_complex() && self.scalar_type() != at::kBool) {
    TORCH_WARN_ONCE("Casting complex values to real discards the imaginary part");
  }
  if (self.is_conj() || self.is_neg() || src.is_conj() || src.is_neg()) {
    // self's stored values are conj/neg (per self's bits) of src's logical
    // values: apply the bits that differ to src's stored values, then copy
    // stored values
    at::Tensor dst = physical(self), s = physical(src);
    if (self.is_conj() != src.is_conj() && s.is_complex()) s = at::conj_physical(s);
    if (self.is_neg() != src.is_neg()) s = at::neg(s);
    tpu_copy_(dst, s, non_blocking);
    return self;
  }
  if (self.is_privateuseone() && src.is_cpu()) {
    at::Tensor host = src.to(self.scalar_type()).expand(self.sizes()).contiguous();
    if (covers_storage(self)) {
      raise_if_error(tt_storage_write_bytes(storage_of(self), to_core_dtype(self.scalar_type()),
                                            host.data_ptr(), host.nbytes()));
      return self;
    }
    tt_buffer* buf = nullptr;
    std::vector<int64_t> n = {host.numel()};
    raise_if_error(tt_buffer_from_host(tt_core_runtime(), self.device().index(),
                                       to_core_dtype(host.scalar_type()), n.data(), 1,
                                       host.data_ptr(), &buf));
    at::Tensor tmp = wrap_buffer(buf, to_core_dtype(host.scalar_type()), 1, n.data(),
                                 self.device().index());
    device_copy(self, tmp.view(self.sizes()));
    return self;
  }
  if (self.is_cpu() && src.is_privateuseone()) {
    self.copy_(to_host(src));
    return self;
  }
  TORCH_CHECK(self.is_privateuseone() && src.is_privateuseone(),
              "torch_tpu copy_: unsupported devices ", self.device(), " <- ", src.device());
  // CPU's copy_ refuses a source partly overlapping the destination (e.g.
  // x[:9].copy_(x[1:10]), or a transpose of itself); tpu computed it
  if (self.is_same(src)) return self;
  at::assert_no_partial_overlap(self, src);
  if (self.device() != src.device()) {
    at::Tensor d = dense(src);
    tt_buffer* moved = nullptr;
    tt_buffer* from = nullptr;
    raise_if_error(tt_storage_ensure(storage_of(d), to_core_dtype(d.scalar_type()), &from));
    tt_error* err = tt_buffer_copy_to_device(from, self.device().index(), &moved);
    tt_buffer_release(from);  // ensure's reference: the copy has been enqueued
    raise_if_error(err);
    std::vector<int64_t> n = {d.numel()};
    at::Tensor tmp = wrap_buffer(moved, to_core_dtype(d.scalar_type()), 1, n.data(),
                                 self.device().index());
    device_copy(self, tmp.view(src.sizes()));
    return self;
  }
  device_copy(self, src);
  return self;
}

at::Tensor tpu_copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::Tensor out = dst;
  tpu_copy_(out, self, non_blocking);
  return dst;
}

at::Tensor tpu_copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::Tensor out = dst;
  if (!out.sizes().equals(self.sizes())) out.resize_(self.sizes());
  tpu_copy_(out, self, false);
  return dst;
}

at::Scalar tpu_local_scalar_dense(const at::Tensor& self) {
  return to_host(self).item();
}

// torch.equal returns a host bool: the comparison and its reduction run as
// tpu ops, then one value is read back. Like CPU's, values of different
// dtypes compare after type promotion.
bool tpu_equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Expected all tensors to be on the same device, "
              "but found at least two devices, ", self.device(), " and ", other.device(), "!");
  if (!self.sizes().equals(other.sizes())) return false;
  if (self.numel() == 0) return true;
  return at::eq(self, other).all().item<bool>();
}

const at::Tensor& tpu_resize_(const at::Tensor& self, c10::IntArrayRef size,
                              std::optional<c10::MemoryFormat> memory_format) {
  int64_t numel = 1;
  for (auto s : size) {
    TORCH_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", size);
    numel *= s;
  }
  size_t needed = static_cast<size_t>(numel + self.storage_offset()) * self.element_size();
  if (numel == 0) needed = 0;
  auto* impl = self.unsafeGetTensorImpl();
  if (needed > self.storage().nbytes()) {
    raise_if_error(tt_storage_resize(storage_of(self), needed));
    self.storage().unsafeGetStorageImpl()->set_nbytes(needed);
  }
  if (!self.sizes().equals(size)) impl->set_sizes_contiguous(size); /* CPU keeps same-size strides */
  if (memory_format) { /* as CPU's resize_: restride to the requested layout */
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve, "Unsupported memory format",
                *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor& tpu_set_storage(at::Tensor& self, c10::Storage source, c10::SymInt storage_offset,
                            c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              "set_: expected a tpu storage, got ", source.device());
  std::vector<int64_t> sizes, strides;
  for (auto& s : size) sizes.push_back(s.guard_int(__FILE__, __LINE__));
  for (auto& s : stride) strides.push_back(s.guard_int(__FILE__, __LINE__));
  if (strides.empty()) {
    strides.resize(sizes.size());
    int64_t acc = 1;
    for (size_t i = sizes.size(); i-- > 0;) {
      strides[i] = acc;
      acc *= std::max<int64_t>(sizes[i], 1);
    }
  }
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_storage_keep_dtype(std::move(source));
  impl->set_storage_offset(storage_offset.guard_int(__FILE__, __LINE__));
  impl->set_sizes_and_strides(sizes, strides);
  return self;
}

at::Tensor& tpu_set_source_storage(at::Tensor& self, c10::Storage source) {
  int64_t n = static_cast<int64_t>(source.nbytes() / self.element_size());
  std::vector<c10::SymInt> size = {c10::SymInt(n)}, stride = {c10::SymInt(1)};
  return tpu_set_storage(self, std::move(source), 0, size, stride);
}

at::Tensor& tpu_set_source_tensor(at::Tensor& self, const at::Tensor& src) {
  if (self.is_same(src)) return self;
  return tpu_set_storage(self, src.storage(), src.sym_storage_offset(), src.sym_sizes(),
                         src.sym_strides());
}

at::Tensor& tpu_set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, tpu_allocator(), true);
  std::vector<c10::SymInt> size = {c10::SymInt(0)}, stride;
  return tpu_set_storage(self, std::move(storage), 0, size, stride);
}

// histc with min == max takes its range from the data; CPU raises when that
// range is not finite, which a program cannot: check it here (one host read
// of the data's min and max, only in that case), then run the lowering.
void tpu_histc(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto base = stack->size() - op.schema().arguments().size();
  const at::Tensor& self = (*stack)[base].toTensor();
  double lo = (*stack)[base + 2].toScalar().toDouble(), hi = (*stack)[base + 3].toScalar().toDouble();
  if (lo == hi && self.numel() > 0 && at::isFloatingType(self.scalar_type())) {
    auto mm = at::aminmax(self);
    // CPU's own check (and message) on the two extremes
    at::Tensor ends = at::stack({std::get<0>(mm), std::get<1>(mm)}).cpu();
    // a NaN's sign is not kept by the device's min/max; CPU's message for an
    // all-NaN range reads "[nan, nan]" (one positive NaN)
    if (ends.isnan().all().item<bool>())
      ends = at::full({1}, std::numeric_limits<double>::quiet_NaN(), ends.options());
    (void)at::histc(ends, (*stack)[base + 1].toInt(), lo, hi);
  }
  tpu_fallback(op, stack);
}


// multinomial: CPU rejects negative, inf or NaN probabilities and rows that
// sum to zero, which a program cannot: check them here (one host read of
// three numbers), then run the lowering (creation.c).
void tpu_multinomial(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto base = stack->size() - op.schema().arguments().size();
  const at::Tensor& self = (*stack)[base].toTensor();
  if (self.numel() > 0 && at::isFloatingType(self.scalar_type()) && (self.dim() == 1 || self.dim() == 2)) {
    at::Tensor p = self.to(at::kFloat);
    at::Tensor ends = at::stack({p.min(), p.max(), p.sum(-1).min()}).cpu();
    float lo = ends[0].item<float>(), hi = ends[1].item<float>(), row = ends[2].item<float>();
    if ((*stack)[base + 2].toBool() && (*stack)[base + 1].toInt() > 1) {  // CPU's sampling kernel
      TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi),
                  "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
      TORCH_CHECK(lo >= 0, "invalid multinomial distribution (encountering probability entry < 0)");
    }
    TORCH_CHECK(lo >= 0 && hi < INFINITY, "probability tensor contains either `inf`, `nan` or element < 0");
    TORCH_CHECK(row > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
  }
  tpu_fallback(op, stack);
}

// clone(self, *, memory_format): the core's clone is a contiguous copy. CPU's
// keeps self's strides (preserve_format, the default, on a dense tensor) or
// takes the requested layout (channels_last, ...): for those, allocate with
// CPU's strides and copy into them.
void tpu_clone(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t nargs = op.schema().arguments().size();
  auto base = stack->size() - nargs;
  const at::Tensor self = (*stack)[base].toTensor();
  const c10::IValue& mf_arg = (*stack)[base + 1];
  auto mf = mf_arg.isNone() ? c10::MemoryFormat::Preserve : mf_arg.toMemoryFormat();
  at::Tensor out;
  if (self.numel() > 0 && mf == c10::MemoryFormat::Preserve && self.is_non_overlapping_and_dense()) {
    if (!self.is_contiguous()) out = at::empty_strided(self.sizes(), self.strides(), self.options());
  } else if (self.numel() > 0) {
    if (mf == c10::MemoryFormat::Preserve) mf = self.suggest_memory_format();
    if (mf != c10::MemoryFormat::Contiguous)
      out = at::empty(self.sizes(), self.options().memory_format(mf));
  }
  if (!out.defined()) {
    tpu_fallback(op, stack);
    return;
  }
  // a conjugate or negative view's logical values (tpu_copy_ applies the bits)
  if (self.is_conj() || self.is_neg())
    tpu_copy_(out, self, false);
  else
    device_copy(out, self);
  torch::jit::drop(*stack, nargs);
  torch::jit::push(*stack, std::move(out));
}


// fill_(Scalar) and zero_ into a tensor whose elements share memory (a
// stride-0 dim, e.g. expand()): CPU allows these two (every element gets the
// same value; its TensorIterator skips the overlap check for them), while
// the core refuses any write through a stride-0 view. Fill the view with
// each stride-0 dim of size > 1 cut to one element instead: the same memory
// locations, each written once. Other in-place ops keep CPU's refusal.
void tpu_fill_overlapping(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto base = stack->size() - op.schema().arguments().size();
  const at::Tensor self = (*stack)[base].toTensor();
  bool overlapping = false;
  std::vector<int64_t> sizes = self.sizes().vec();
  for (int64_t d = 0; d < self.dim(); d++)
    if (self.stride(d) == 0 && sizes[d] > 1) {
      sizes[d] = 1;
      overlapping = true;
    }
  if (!overlapping) {
    tpu_fallback(op, stack);
    return;
  }
  (*stack)[base] = self.as_strided(sizes, self.strides(), self.storage_offset());
  tpu_fallback(op, stack);
  torch::jit::drop(*stack, 1);
  torch::jit::push(*stack, self);
}


// _lazy_clone (copy-on-write clone): PyTorch's kernel turns the source's
// storage into a copy-on-write one too, whose DataPtr the core cannot read,
// so the source itself became unusable ("storage was not allocated by
// tpu"). tpu has no copy-on-write storages: a lazy clone is an eager copy.
at::Tensor tpu_lazy_clone(const at::Tensor& self) { return self.clone(); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("clone", torch::CppFunction::makeFromBoxedFunction<&tpu_clone>());
  m.impl("histc", torch::CppFunction::makeFromBoxedFunction<&tpu_histc>());
  m.impl("histc.out", torch::CppFunction::makeFromBoxedFunction<&tpu_histc>());
  m.impl("multinomial", torch::CppFunction::makeFromBoxedFunction<&tpu_multinomial>());
  m.impl("multinomial.out", torch::CppFunction::makeFromBoxedFunction<&tpu_multinomial>());
  m.impl("fill_.Scalar", torch::CppFunction::makeFromBoxedFunction<&tpu_fill_overlapping>());
  m.impl("zero_", torch::CppFunction::makeFromBoxedFunction<&tpu_fill_overlapping>());
  m.impl("_lazy_clone", tpu_lazy_clone);
  m.impl("empty.memory_format", tpu_empty);
  m.impl("empty_strided", tpu_empty_strided);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("view", at::native::view);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("unfold", at::native::unfold);
  // complex <-> (..., 2) real views of one storage: metadata only; a read
  // of the storage in the other dtype reinterprets its bytes
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("view_as_complex", at::native::view_as_complex);
  m.impl("copy_", tpu_copy_);
  m.impl("_copy_from", tpu_copy_from);
  m.impl("_copy_from_and_resize", tpu_copy_from_and_resize);
  m.impl("_local_scalar_dense", tpu_local_scalar_dense);
  m.impl("equal", tpu_equal);
  m.impl("resize_", tpu_resize_);
  m.impl("set_.source_Storage_storage_offset", tpu_set_storage);
  m.impl("set_.source_Storage", tpu_set_source_storage);
  m.impl("set_.source_Tensor", tpu_set_source_tensor);
  m.impl("set_", tpu_set_empty);
}

}  // namespace torch_tpu
