// The one boxed fallback for the tpu key: every aten op without a kernel of
// its own arrives here, is described to the C core, and runs natively if
// the core has a lowering for it; otherwise it runs on CPU (counted, warned
// once per op, or refused when TORCH_TPU_CPU_FALLBACK=0).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addr_native.h>
#include <ATen/ops/is_set_to_native.h>
#include <torch/library.h>

#include <cstdlib>
#include <unordered_map>
#include <map>
#include <mutex>

#include "torch/bridge.h"

extern "C" {
#include "core/settings.h"
#include "graph/execute.h"
#include "graph/region.h"
#include "ops/op_props.h"
}

namespace torch_tpu {

namespace {

std::mutex fallback_mutex;
std::map<std::string, int64_t> fallback_counts;  // guarded by fallback_mutex

bool fallback_allowed() {
  return tt_setting_bool_or_default(TT_SETTING_CPU_FALLBACK);
}

// Owns the memory the tt_args point into for one call. Reserved up front
// (reserve()) so pointers into it stay valid while arguments are added.
struct ArgArena {
  std::vector<tt_tensor_ref> refs;
  std::vector<std::vector<tt_tensor_ref*>> ref_lists;
  std::vector<std::vector<int64_t>> int_lists;
  std::vector<std::vector<double>> double_lists;
  std::vector<std::unique_ptr<bool[]>> bool_lists;
  std::vector<std::vector<tt_scalar>> scalar_lists;
  std::vector<std::string> strings;
  std::vector<at::Tensor> keep_alive;  // uploaded CPU index tensors, resolved math bits
  bool complex = false;                // a complex tensor or dtype among the arguments

  void reserve(const torch::jit::Stack& stack, size_t begin, size_t n) {
    size_t tensors = 0;
    for (size_t i = begin; i < begin + n; i++) {
      const c10::IValue& v = stack[i];
      if (v.isTensor() || v.isComplexDouble()) tensors++;  // complex Scalars become tensors
      else if (v.isList()) tensors += v.toListRef().size();
    }
    refs.clear();
    refs.reserve(tensors + 1);
    for (auto* lists : {&ref_lists}) lists->reserve(n);
    int_lists.reserve(n);
    double_lists.reserve(n);
    bool_lists.reserve(n);
    scalar_lists.reserve(n);
    strings.reserve(n);
  }
};

c10::TypeKind base_kind(const c10::TypePtr& type) {
  if (auto opt = type->cast<c10::OptionalType>()) return opt->getElementType()->kind();
  return type->kind();
}

// Element kind of a list argument's type, looking through Optional.
c10::TypeKind list_elem_kind(const c10::TypePtr& type) {
  c10::TypePtr t = type;
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  auto list = t->cast<c10::ListType>();
  if (!list) return c10::TypeKind::AnyType;
  c10::TypePtr e = list->getElementType();
  if (auto opt = e->cast<c10::OptionalType>()) e = opt->getElementType();
  return e->kind();
}

// Thrown while converting arguments: the op runs through the CPU fallback
// instead (which also raises PyTorch's own errors for such arguments).
struct NotNative {};

tt_scalar to_scalar(const c10::IValue& v) {
  tt_scalar s{TT_SCALAR_INT, 0, 0};
  if (v.isBool()) s = {TT_SCALAR_BOOL, v.toBool(), 0};
  else if (v.isInt()) s = {TT_SCALAR_INT, v.toInt(), 0};
  else if (v.isSymInt()) s = {TT_SCALAR_INT, v.toSymInt().guard_int(__FILE__, __LINE__), 0};
  else if (v.isDouble()) s = {TT_SCALAR_FLOAT, 0, v.toDouble()};
  else if (v.isSymFloat()) s = {TT_SCALAR_FLOAT, 0, v.toSymFloat().guard_float(__FILE__, __LINE__)};
  else if (v.isComplexDouble()) throw NotNative{};  // no complex dtypes on tpu
  else TORCH_CHECK_NOT_IMPLEMENTED(false, "torch_tpu: unsupported scalar value ", v.tagKind());
  return s;
}

// Why an op must not run natively or on CPU here; nullptr if fine.

tt_tensor_ref* describe(ArgArena& arena, const at::Tensor& t, c10::DeviceIndex* device,
                        bool allow_cpu_upload, const char* op, bool written) {
  arena.refs.emplace_back();
  tt_tensor_ref* ref = &arena.refs.back();  // capacity reserved: stable
  if (t.is_privateuseone()) {
    // dtypes and ranks the core cannot express run on CPU (which raises its
    // own errors beyond PyTorch's 64 dimensions)
    if (!is_supported_dtype(t.scalar_type()) || t.dim() > TT_MAX_DIMS) throw NotNative{};
    arena.complex |= at::isComplexType(t.scalar_type());
    if (t.is_conj() || t.is_neg()) {
      // ops the math-bit fallbacks let through (mm, bmm, ...) see conjugate
      // or negative views: the core reads physical values, so read-only
      // arguments are resolved first (copy_ applies the bits natively);
      // written ones run on CPU, whose kernels honour the bits
      if (written) throw NotNative{};
      // not resolve_conj(): it clones, and clone is such an op
      at::Tensor r = t.alias();
      r._set_conj(false);
      r._set_neg(false);
      if (t.is_conj()) r = at::conj_physical(r);
      if (t.is_neg()) r = at::neg(r);
      arena.keep_alive.push_back(r);
      describe_tensor(r, ref);
    } else {
      describe_tensor(t, ref);
    }
    if (*device < 0) *device = t.device().index();
    return ref;
  }
  TORCH_CHECK(t.is_cpu(), "torch_tpu: ", op, " got a tensor on ", t.device());
  if (t.dim() == 0 && at::isComplexType(t.scalar_type())) {  // a complex CPU scalar: uploaded
    at::Tensor up = t.resolve_conj().resolve_neg().to(
        at::Device(c10::DeviceType::PrivateUse1, std::max<int>(*device, 0)));
    up.unsafeGetTensorImpl()->set_wrapped_number(t.unsafeGetTensorImpl()->is_wrapped_number());
    arena.keep_alive.push_back(up);
    arena.complex = true;
    describe_tensor(up, ref);
    return ref;
  }
  if (t.dim() == 0 && is_supported_dtype(t.scalar_type())) {  // CPU scalars ride along
    memset(ref, 0, sizeof *ref);
    ref->dtype = to_core_dtype(t.scalar_type());
    ref->wrapped_number = t.unsafeGetTensorImpl()->is_wrapped_number();
    if (at::isFloatingType(t.scalar_type())) ref->value_f = t.item<double>();
    else ref->value_i = t.item<int64_t>();
    return ref;
  }
  if (allow_cpu_upload && is_supported_dtype(t.scalar_type())) {
    at::Tensor up = t.to(at::Device(c10::DeviceType::PrivateUse1, std::max<int>(*device, 0)));
    arena.keep_alive.push_back(up);
    describe_tensor(up, ref);
    return ref;
  }
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two "
              "devices, cpu and tpu:", static_cast<int>(std::max<int>(*device, 0)), "! (when checking "
              "arguments for ", op, ")");
}

void convert_arg(ArgArena& arena, const c10::Argument& schema_arg, const c10::IValue& v,
                 tt_arg* out, c10::DeviceIndex* device, const char* op, bool allow_upload) {
  memset(out, 0, sizeof *out);
  const auto* alias = schema_arg.alias_info();
  out->written = alias && alias->isWrite();
  out->resizable = out->written && schema_arg.kwarg_only();
  // real_type: type() reports ScalarType/Layout/MemoryFormat as plain int
  c10::TypeKind kind = base_kind(schema_arg.real_type());
  if (v.isNone() || (v.isTensor() && !v.toTensor().defined())) {
    out->kind = TT_ARG_NONE;
  } else if (v.isTensor()) {
    out->kind = TT_ARG_TENSOR;
    out->u.tensor = describe(arena, v.toTensor(), device, allow_upload, op, out->written);
  } else if (v.isList()) {
    auto list = v.toListRef();
    c10::TypeKind elem = list_elem_kind(schema_arg.type());
    if (elem == c10::TypeKind::TensorType) {
      arena.ref_lists.emplace_back();
      auto& refs = arena.ref_lists.back();
      for (const auto& e : list)
        refs.push_back(e.isNone() || !e.toTensor().defined()
                           ? nullptr  // Python's `:` in x[:, i] arrives as an undefined tensor
                           : describe(arena, e.toTensor(), device, allow_upload, op,
                                      out->written));
      out->kind = TT_ARG_TENSOR_LIST;
      out->count = static_cast<int>(refs.size());
      out->u.tensors = refs.data();
    } else if (elem == c10::TypeKind::IntType || elem == c10::TypeKind::SymIntType) {
      arena.int_lists.emplace_back();
      for (const auto& e : list)
        arena.int_lists.back().push_back(e.isSymInt() ? e.toSymInt().guard_int(__FILE__, __LINE__)
                                                      : e.toInt());
      out->kind = TT_ARG_INT_LIST;
      out->count = static_cast<int>(arena.int_lists.back().size());
      out->u.ints = arena.int_lists.back().data();
    } else if (elem == c10::TypeKind::FloatType) {
      arena.double_lists.emplace_back();
      for (const auto& e : list) arena.double_lists.back().push_back(e.toDouble());
      out->kind = TT_ARG_DOUBLE_LIST;
      out->count = static_cast<int>(arena.double_lists.back().size());
      out->u.doubles = arena.double_lists.back().data();
    } else if (elem == c10::TypeKind::BoolType) {
      arena.bool_lists.emplace_back(new bool[list.size() + 1]);
      for (size_t i = 0; i < list.size(); i++) arena.bool_lists.back()[i] = list[i].toBool();
      out->kind = TT_ARG_BOOL_LIST;
      out->count = static_cast<int>(list.size());
      out->u.bools = arena.bool_lists.back().get();
    } else {
      arena.scalar_lists.emplace_back();
      for (const auto& e : list) arena.scalar_lists.back().push_back(to_scalar(e));
      out->kind = TT_ARG_SCALAR_LIST;
      out->count = static_cast<int>(arena.scalar_lists.back().size());
      out->u.scalars = arena.scalar_lists.back().data();
    }
  } else if (kind == c10::TypeKind::NumberType && v.isComplexDouble()) {
    // a complex Scalar (x * 1j): a wrapped 0-dim tensor on the device, which
    // lowerings read like a Scalar (type promotion included)
    at::Tensor t = at::scalar_tensor(v.toComplexDouble(), at::kComplexDouble);
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    out->kind = TT_ARG_TENSOR;
    out->u.tensor = describe(arena, t, device, false, op, false);
  } else if (kind == c10::TypeKind::NumberType) {
    out->kind = TT_ARG_SCALAR;
    out->u.s = to_scalar(v);
  } else if (kind == c10::TypeKind::ScalarTypeType) {
    at::ScalarType st = static_cast<at::ScalarType>(v.toInt());
    if (!is_supported_dtype(st)) throw NotNative{};
    arena.complex |= at::isComplexType(st);
    out->kind = TT_ARG_DTYPE;
    out->u.dtype = to_core_dtype(st);
  } else if (kind == c10::TypeKind::LayoutType) {
    out->kind = TT_ARG_LAYOUT;
    out->u.i = v.toInt();
  } else if (kind == c10::TypeKind::MemoryFormatType) {
    out->kind = TT_ARG_MEMORY_FORMAT;
    out->u.i = v.toInt();
  } else if (v.isBool()) {
    out->kind = TT_ARG_BOOL;
    out->u.b = v.toBool();
  } else if (v.isInt() || v.isSymInt()) {
    out->kind = TT_ARG_INT;
    out->u.i = v.isInt() ? v.toInt() : v.toSymInt().guard_int(__FILE__, __LINE__);
  } else if (v.isDouble() || v.isSymFloat()) {
    out->kind = TT_ARG_DOUBLE;
    out->u.d = v.isDouble() ? v.toDouble() : v.toSymFloat().guard_float(__FILE__, __LINE__);
  } else if (v.isString()) {
    arena.strings.emplace_back(v.toStringRef());
    out->kind = TT_ARG_STRING;
    out->u.str = arena.strings.back().c_str();
  } else if (v.isDevice()) {
    out->kind = TT_ARG_DEVICE;
    at::Device d = v.toDevice();
    out->u.i = d.is_cpu() ? -1 : (d.has_index() ? d.index() : current_device());
    if (d.is_privateuseone() && *device < 0) *device = static_cast<c10::DeviceIndex>(out->u.i);
  } else if (v.isGenerator()) {
    out->kind = TT_ARG_GENERATOR;
  } else {
    out->kind = TT_ARG_OTHER;
  }
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack, const std::string& name,
                  const std::string& why) {
  if (!fallback_allowed())
    TORCH_CHECK_NOT_IMPLEMENTED(false, "The operator 'aten::", name,
                                "' is not currently implemented for the tpu device (",
                                why, ") and TORCH_TPU_CPU_FALLBACK=0 forbids running it on CPU.");
  // A lowering declines "(CPU warns)" where the case is one CPU warns about
  // (var with degrees of freedom <= 0): CPU's warning is the one to see, so
  // the run is counted but not announced with another warning first.
  const std::string tag = "(CPU warns)";
  bool cpu_warns = why.size() >= tag.size() && why.compare(why.size() - tag.size(), tag.size(), tag) == 0;
  count_fallback(name, !cpu_warns);
  at::native::cpu_fallback(op, stack);
}

bool returns_are_tensors(const c10::FunctionSchema& schema) {
  for (const auto& r : schema.returns()) {
    auto k = r.type()->kind();
    if (k == c10::TypeKind::TensorType) continue;
    if (k == c10::TypeKind::ListType &&
        r.type()->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::TensorType)
      continue;
    return false;
  }
  return true;
}

bool returns_alias_written(const c10::FunctionSchema& schema) {
  if (schema.returns().empty()) return true;
  for (const auto& r : schema.returns())
    if (!r.alias_info() || !r.alias_info()->isWrite()) return false;
  return true;
}

bool returns_views(const c10::FunctionSchema& schema) {
  for (const auto& r : schema.returns())
    if (r.alias_info() && !r.alias_info()->isWrite()) return true;
  return false;
}

// What the fallback needs to know about an operator, computed once.
struct OpInfo {
  std::string name;      // "add.out"
  bool returns_views;    // a CPU copy would break aliasing
  bool tensor_returns;   // every return is a Tensor or Tensor[]
  bool aliasing;         // returns are the mutated arguments
  bool allow_upload;     // CPU tensor arguments may be moved to the device
  bool out_variant;      // has out= arguments (written, keyword-only)
  bool out_no_overlap;   // its out= may not overlap an input at all
  bool out_same_dtype;   // its out= must have the input's dtype
  bool complex_native;   // its lowering handles complex tensors
  bool out_values_indices;  // its (values, indices) out=: input's dtype, then int64
  bool out_unary_same_dtype;  // a TensorIterator unary op: out has the input's dtype
  bool inplace_no_overlap;  // in-place: self may not overlap another argument
  bool out_scalar_type_equal;  // its out= must have the input's dtype (other message)
  std::vector<size_t> return_args;  // aliasing: the argument each return is
};

const OpInfo& op_info(const c10::OperatorHandle& op) {
  thread_local std::unordered_map<const c10::FunctionSchema*, OpInfo> infos;
  const auto& schema = op.schema();
  auto it = infos.find(&schema);
  if (it != infos.end()) return it->second;
  OpInfo info;
  // "add" for aten ops; other namespaces keep theirs (custom kernels:
  // "torch_tpu_user::rms_norm", csrc/ops/custom_kernel.c)
  info.name = schema.name().rfind("aten::", 0) == 0 ? schema.name().substr(6) : schema.name();
  if (!schema.overload_name().empty()) info.name += "." + schema.overload_name();
  info.returns_views = returns_views(schema);
  info.tensor_returns = returns_are_tensors(schema);
  info.aliasing = returns_alias_written(schema);
  if (info.aliasing) {
    // Match each return to the argument in its alias set: out= schemas may
    // mutate other arguments first (running stats before `out`).
    for (const auto& r : schema.returns()) {
      for (size_t i = 0; i < schema.arguments().size(); i++) {
        const auto* a = schema.arguments()[i].alias_info();
        if (a && a->isWrite() && a->beforeSets() == r.alias_info()->beforeSets()) {
          info.return_args.push_back(i);
          break;
        }
      }
    }
  }
  info.out_variant = false;  // was left uninitialized before the |= below
  for (const auto& a : schema.arguments())
    info.out_variant |= a.alias_info() && a.alias_info()->isWrite() && a.kwarg_only();
  // per-op policy is the core's table (csrc/ops/op_props.c)
  const unsigned props = tt_op_props(info.name.c_str());
  info.out_no_overlap = info.out_variant && (props & TT_PROP_OUT_NO_OVERLAP);
  info.out_same_dtype = info.out_variant && (props & TT_PROP_OUT_SAME_DTYPE);
  info.out_values_indices = info.out_variant && (props & TT_PROP_OUT_VALUES_INDICES);
  info.out_unary_same_dtype = info.out_variant && (props & TT_PROP_OUT_UNARY_SAME_DTYPE);
  info.inplace_no_overlap = !info.out_variant && (props & TT_PROP_INPLACE_NO_OVERLAP);
  info.out_scalar_type_equal = info.out_variant && (props & TT_PROP_OUT_SCALAR_TYPE_EQUAL);
  info.allow_upload = props & TT_PROP_UPLOAD_CPU_ARGS;
  info.complex_native = props & TT_PROP_COMPLEX_NATIVE;
  return infos.emplace(&schema, std::move(info)).first->second;
}

// out= arguments get the checks ATen's own out= kernels make: an output
// may not overlap itself or partly overlap an input (PyTorch's messages).
// A CPU run of the op would see copies and miss them.
void check_out_arguments(const c10::FunctionSchema& schema, const OpInfo& info,
                         const torch::jit::Stack& stack, size_t begin) {
  std::vector<at::Tensor> outs, ins;
  for (size_t i = 0; i < schema.arguments().size(); i++) {
    const auto& a = schema.arguments()[i];
    auto& dst = a.alias_info() && a.alias_info()->isWrite() && a.kwarg_only() ? outs : ins;
    const c10::IValue& v = stack[begin + i];
    if (v.isTensor() && v.toTensor().defined()) dst.push_back(v.toTensor());
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorList().vec())
        if (t.defined()) dst.push_back(t);
  }
  // an out= on another device than the tpu inputs: PyTorch's message (a CPU
  // run of the op would fail copying its result back, with another error)
  for (const at::Tensor& out : outs)
    for (const at::Tensor& in : ins)
      TORCH_CHECK(out.device() == in.device() || !in.device().is_privateuseone(),
                  "Expected all tensors to be on the same device, but found at least two "
                  "devices, ", in.device(), " and ", out.device(), "!");
  for (const at::Tensor& out : outs) {
    at::assert_no_internal_overlap(out);
    for (const at::Tensor& in : ins) {
      if (info.out_no_overlap) at::assert_no_overlap(out, in);
      else at::assert_no_partial_overlap(out, in);
    }
    if (info.out_same_dtype && !ins.empty())
      TORCH_CHECK(out.scalar_type() == ins.front().scalar_type(), "Expected out tensor to have dtype ",
                  ins.front().dtype(), ", but got ", out.dtype(), " instead");
  }
  if (info.out_scalar_type_equal && !ins.empty())
    for (const at::Tensor& out : outs)
      TORCH_CHECK(out.scalar_type() == ins.front().scalar_type(), "expected scalar_type ",
                  ins.front().scalar_type(), " but found ", out.scalar_type());
  if (info.out_unary_same_dtype && !ins.empty())
    for (const at::Tensor& out : outs) {
      // abs of a complex tensor is real: ATen casts it into any real out
      if (info.name == "abs.out" && ins.front().is_complex() && !out.is_complex()) {
        const auto real = c10::toRealValueType(ins.front().scalar_type());
        TORCH_CHECK(c10::canCast(real, out.scalar_type()), "result type ", real,
                    " can't be cast to the desired output type ", out.scalar_type());
        continue;
      }
      TORCH_CHECK(out.scalar_type() == ins.front().scalar_type(), "Found dtype ",
                  out.scalar_type(), " but expected ", ins.front().scalar_type());
    }
  // (values, indices) outs are not cast into: a lowering would write the
  // indices into any dtype it can cast to (PyTorch's message for max/sort)
  if (info.out_values_indices && outs.size() == 2 && !ins.empty()) {
    TORCH_CHECK(outs[0].scalar_type() == ins.front().scalar_type(),
                "Expected out tensor to have dtype ", ins.front().dtype(), ", but got ",
                outs[0].dtype(), " instead");
    TORCH_CHECK(outs[1].scalar_type() == at::kLong, "Expected out tensor to have dtype ",
                caffe2::TypeMeta::Make<int64_t>(), ", but got ", outs[1].dtype(), " instead");
  }
}

// After `resized` changed shape: re-describes every device tensor argument
// that is that tensor (an out= may also be passed as an input).
void refresh_refs(const torch::jit::Stack& stack, size_t begin, std::vector<tt_arg>& args,
                  const at::Tensor& resized) {
  const c10::TensorImpl* impl = resized.unsafeGetTensorImpl();
  for (size_t i = 0; i < args.size(); i++) {
    const c10::IValue& v = stack[begin + i];
    if (args[i].kind == TT_ARG_TENSOR && v.isTensor() && v.toTensor().unsafeGetTensorImpl() == impl)
      describe_tensor(resized, args[i].u.tensor);
    if (args[i].kind == TT_ARG_TENSOR_LIST && v.isList()) {
      auto list = v.toListRef();
      for (int j = 0; j < args[i].count && static_cast<size_t>(j) < list.size(); j++)
        if (args[i].u.tensors[j] && list[j].isTensor() &&
            list[j].toTensor().unsafeGetTensorImpl() == impl)
          describe_tensor(resized, args[i].u.tensors[j]);
    }
  }
}

}  // namespace

void tpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const OpInfo& info = op_info(op);
  const std::string& name = info.name;
  TORCH_CHECK_NOT_IMPLEMENTED(!info.returns_views, "torch_tpu: view op aten::", name,
                              " has no tpu kernel (a CPU copy would break aliasing)");
  const size_t n = schema.arguments().size();
  auto args_begin = stack->size() - n;
  if (info.out_variant) check_out_arguments(schema, info, *stack, args_begin);
  if (info.inplace_no_overlap && n > 0 && (*stack)[args_begin].isTensor()) {
    // ATen's checks for these in-place kernels (a CPU run sees copies); a
    // self overlapping itself is refused by the view write itself
    const at::Tensor& self = (*stack)[args_begin].toTensor();
    for (size_t i = 1; i < n; i++) {
      const c10::IValue& v = (*stack)[args_begin + i];
      if (v.isTensor() && v.toTensor().defined()) at::assert_no_overlap(self, v.toTensor());
      if (v.isList())
        for (const c10::IValue& e : v.toListRef())
          if (e.isTensor() && e.toTensor().defined()) at::assert_no_overlap(self, e.toTensor());
    }
  }
  if (!info.tensor_returns) return cpu_fallback(op, stack, name, "non-tensor result");
  ensure_initialized();

  ArgArena arena;
  arena.reserve(*stack, args_begin, n);
  std::vector<tt_arg> args(n);
  c10::DeviceIndex device = -1;
  bool allow_upload = info.allow_upload;
  // A CPU tensor indexed with tpu indices: CPU's refusal (only the indices
  // may be uploaded, never the indexed tensor)
  if (allow_upload && n > 0 && (*stack)[args_begin].isTensor() &&
      (*stack)[args_begin].toTensor().is_cpu() &&
      (name == "index.Tensor" || name == "index_put_" || name == "index_put" ||
       name.rfind("_index_put_impl", 0) == 0))
    TORCH_CHECK(false, "indices should be either on cpu or on the same device as the indexed "
                "tensor (cpu)");
  try {
    for (size_t i = 0; i < n; i++)
      convert_arg(arena, schema.arguments()[i], (*stack)[args_begin + i], &args[i], &device,
                  name.c_str(), allow_upload);
  } catch (const NotNative&) {
    return cpu_fallback(op, stack, name, "unsupported dtype or rank");
  }
  // An out= tensor that is also an input (x.op_(y) reaching op.out(x, y,
  // out=x)) is read-write: as PyTorch's TensorIterator does, it is never
  // resized; a shape mismatch raises instead.
  for (size_t i = 0; i < n; i++) {
    if (!args[i].resizable || !(*stack)[args_begin + i].isTensor()) continue;
    const at::Tensor& o = (*stack)[args_begin + i].toTensor();
    for (size_t j = 0; j < n && args[i].resizable; j++) {
      const c10::IValue& v = (*stack)[args_begin + j];
      if (j != i && v.isTensor() && v.toTensor().is_same(o)) args[i].resizable = false;
    }
  }
  // complex values reach only the lowerings written for them
  if (arena.complex && !info.complex_native)
    return cpu_fallback(op, stack, name, "no complex lowering");
  if (device < 0) device = current_device();
  bool aliasing = info.aliasing;
  // The dtype integer inputs promote to (torch.set_default_dtype) is part of
  // every op's key; ops recorded under the old one are lowered (at the flush)
  // before it changes.
  const tt_dtype default_float = to_core_dtype(at::get_default_dtype_as_scalartype());
  if (default_float != tt_default_float()) {
    raise_if_error(tt_region_flush(TT_FLUSH_SYNC));
    tt_set_default_float(default_float);
  }

  tt_op_result res;
  tt_error* err = tt_op_run(name.c_str(), args.data(), static_cast<int>(n), aliasing, device, &res);
  // Nothing ran when the core asks for out= destinations to be resized:
  // resize them, refresh their descriptions, run once more.
  for (int attempt = 0; !err && res.n_resize && attempt < 2; attempt++) {
    for (int k = 0; k < res.n_resize; k++) {
      const tt_output_plan& r = res.resize[k];
      const c10::IValue& v = (*stack)[args_begin + r.arg];
      at::Tensor t = r.elem < 0 ? v.toTensor() : v.toListRef()[r.elem].toTensor();
      at::native::resize_output(t, c10::IntArrayRef(r.shape.dims, r.shape.ndim));
      refresh_refs(*stack, args_begin, args, t);
    }
    tt_op_result_clear(&res);
    err = tt_op_run(name.c_str(), args.data(), static_cast<int>(n), aliasing, device, &res);
  }
  if (!err && res.n_resize) {
    tt_op_result_clear(&res);
    TORCH_CHECK(false, "internal: ", name, " still asks for resized outputs after resizing");
  }
  drain_explanations();
  if (err && tt_error_code_of(err) == TT_ERR_NOT_IMPLEMENTED) {
    std::string why = tt_error_message(err);
    tt_error_free(err);
    return cpu_fallback(op, stack, name, why);
  }
  raise_if_error(err);

  // Build the returns.
  std::vector<c10::IValue> returns;
  if (aliasing) {
    for (size_t i : info.return_args) returns.push_back((*stack)[args_begin + i]);
  } else {
    int next = 0;
    std::vector<at::Tensor> made;
    try {
      for (int i = 0; i < res.n_new; i++) {
        tt_new_tensor& t = res.news[i];
        tt_storage* storage = t.storage;
        t.storage = nullptr;
        made.push_back(wrap_storage(storage, t.dtype, t.ndim, t.sizes, device));
      }
    } catch (...) {
      tt_op_result_clear(&res);
      throw;
    }
    tt_op_result_clear(&res);
    for (const auto& r : schema.returns()) {
      if (r.type()->kind() == c10::TypeKind::TensorType) {
        TORCH_CHECK(next < static_cast<int>(made.size()), "internal: ", name, " returned too few tensors");
        returns.emplace_back(made[next++]);
      } else {
        std::vector<at::Tensor> rest(made.begin() + next, made.end());
        next = static_cast<int>(made.size());
        returns.emplace_back(c10::List<at::Tensor>(rest));
      }
    }
  }
  tt_op_result_clear(&res);
  torch::jit::drop(*stack, n);
  for (auto& r : returns) stack->push_back(std::move(r));
}

void count_fallback(const std::string& op, bool announce) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(fallback_mutex);
    first = fallback_counts[op]++ == 0;
  }
  if (first && announce)
    TORCH_WARN("torch_tpu: aten::", op, " is not lowered for tpu; running it on CPU ",
               "(inputs and results are copied; see torch_tpu.debug.fallback_report())");
}

std::map<std::string, int64_t> fallback_report() {
  std::lock_guard<std::mutex> lock(fallback_mutex);
  return fallback_counts;
}

void reset_fallback_report() {
  std::lock_guard<std::mutex> lock(fallback_mutex);
  fallback_counts.clear();
}

// addr_'s composite kernel calls addr.out(self, self, ...), whose composite
// (math_addr_out) resizes out to the broadcast shape: self would grow where
// CPU raises. In-place ops never resize self: check as CPU's addr_ does.
static at::Tensor& tpu_addr_(at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2,
                             const at::Scalar& beta, const at::Scalar& alpha) {
  if (vec1.dim() == 1 && vec2.dim() == 1)
    TORCH_CHECK(self.sizes() == c10::IntArrayRef({vec1.size(0), vec2.size(0)}),
                "size mismatch, input: ", self.sizes(), ", v1: ", vec1.sizes(), ", v2: ",
                vec2.sizes());
  return at::native::addr_(self, vec1, vec2, beta, alpha);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&tpu_fallback>());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("addr_", tpu_addr_);
  // metadata only: a CPU run would compare the copies' storages (false)
  m.impl("is_set_to", at::native::is_set_to);
}

// Some ops we lower have a CompositeExplicitAutograd kernel (convolution,
// native_layer_norm, every _foreach_ op, ...), which outranks a backend
// fallback: PyTorch would decompose them, or dead-end in an "overrideable"
// stub. For each overload in the core's lowering table that has such a
// kernel and no tpu kernel of its own, register the fallback directly, so
// the table alone decides what runs natively.
// Ops whose computation goes through complex tensors, which tpu cannot
// hold: run as a whole on CPU (their CPU errors included) rather than
// failing on a complex intermediate. Results that are complex still cannot
// come back to tpu.
void run_complex_op_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  cpu_fallback(op, stack, op_info(op).name, "needs complex intermediates");
}

void register_table_routed_ops() {
  static torch::Library* lib = new torch::Library(
      torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  const char* name;
  for (int i = 0; (name = tt_op_props_listed(i, TT_PROP_COMPLEX_ON_CPU)); i++)
    if (c10::Dispatcher::singleton().findOp(c10::OperatorName(std::string("aten::") + name, "")))
      lib->impl(name, torch::CppFunction::makeFromBoxedFunction<&run_complex_op_on_cpu>());
  for (int i = 0; i < tt_lowering_count(); i++) {
    std::string name = tt_lowering_name_at(i);
    size_t dot = name.find('.');
    std::string base = name.substr(0, dot);
    std::string overload = dot == std::string::npos ? "" : name.substr(dot + 1);
    auto handle = c10::Dispatcher::singleton().findOp(c10::OperatorName("aten::" + base, overload));
    if (!handle) continue;  // an overload this torch version does not have
    if (handle->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) continue;
    if (!handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) &&
        !handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional))
      continue;
    lib->impl(name.c_str(), torch::CppFunction::makeFromBoxedFunction<&tpu_fallback>());
  }
}

}  // namespace torch_tpu
