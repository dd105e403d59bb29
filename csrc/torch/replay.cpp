// Bindings of graph replay (torch.compile's fast path, graph/replay.h):
// tensors in, tensors out. Matching arguments and launching are the core's.
#include <torch/extension.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "torch/bridge.h"

extern "C" {
#include "graph/region.h"
#include "graph/replay.h"
}

namespace torch_tpu {

namespace {

// Describes tensors and Nones for the core; false when an item is anything
// else (a CPU tensor, a number): such graphs are not replayed.
bool describe_items(const py::list& items, std::vector<tt_tensor_ref>& refs) {
  refs.resize(items.size());
  for (size_t i = 0; i < items.size(); i++) {
    PyObject* obj = items[i].ptr();
    tt_tensor_ref& ref = refs[i];
    if (obj == Py_None) {
      std::memset(&ref, 0, sizeof ref);
      ref.ndim = TT_REF_NONE;
      continue;
    }
    if (!THPVariable_Check(obj)) return false;
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (t.device().type() != c10::DeviceType::PrivateUse1 || t.dim() > TT_MAX_DIMS ||
        !is_supported_dtype(t.scalar_type()))
      return false;
    describe_tensor(t, &ref);
  }
  return true;
}

at::Tensor view_of(const c10::Storage& storage, const tt_tensor_ref* view) {
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      c10::scalarTypeToTypeMeta(to_scalar_type(view->dtype)));
  t.unsafeGetTensorImpl()->set_sizes_and_strides(c10::IntArrayRef(view->sizes, view->ndim),
                                                 c10::IntArrayRef(view->strides, view->ndim),
                                                 view->offset);
  return t;
}

void free_replay(void* p) { tt_replay_free(static_cast<tt_replay*>(p)); }

// Ends the capture; returns a replay capsule, or a str saying why none.
py::object capture_end_replay(const py::list& args, const py::list& outs) {
  std::vector<tt_tensor_ref> arg_refs, out_refs;
  bool described = describe_items(args, arg_refs) && describe_items(outs, out_refs);
  tt_replay* replay = nullptr;
  const char* why_not = "an argument or output is neither a tpu tensor nor None";
  tt_error* err;
  {
    py::gil_scoped_release no_gil;
    err = described ? tt_region_capture_end_replay(arg_refs.data(), static_cast<int>(arg_refs.size()),
                                                   out_refs.data(), static_cast<int>(out_refs.size()),
                                                   &replay, &why_not)
                    : tt_region_capture_end();
  }
  drain_explanations();
  if (err) tt_replay_free(replay);
  raise_if_error(err);
  if (!replay) return py::str(why_not);
  return py::capsule(replay, &free_replay);
}

// Runs a replay; None when the arguments do not match it (nothing ran).
py::object replay_run(const py::capsule& capsule, const py::list& args) {
  auto* replay = static_cast<tt_replay*>(capsule.get_pointer());
  std::vector<tt_tensor_ref> refs;
  if (!describe_items(args, refs)) return py::none();
  std::vector<tt_storage*> fresh(static_cast<size_t>(tt_replay_num_new(replay)));
  bool matched = false;
  tt_error* err;
  {
    py::gil_scoped_release no_gil;
    err = tt_replay_run(replay, refs.data(), static_cast<int>(refs.size()), &matched, fresh.data());
  }
  raise_if_error(err);
  if (!matched) return py::none();
  auto device = static_cast<c10::DeviceIndex>(tt_replay_device(replay));
  std::vector<c10::Storage> storages;
  storages.reserve(fresh.size());
  for (tt_storage* s : fresh)
    storages.emplace_back(c10::Storage::use_byte_size_t(), tt_storage_nbytes(s), make_data_ptr(s, device),
                          tpu_allocator(), /*resizable=*/true);
  int n = tt_replay_num_outputs(replay);
  py::list out(n);
  for (int k = 0; k < n; k++) {
    int index = 0;
    const tt_tensor_ref* view = nullptr;
    switch (tt_replay_output(replay, k, &index, &view)) {
      case TT_REPLAY_OUT_NONE: out[k] = py::none(); break;
      case TT_REPLAY_OUT_NEW: out[k] = view_of(storages[index], view); break;
      case TT_REPLAY_OUT_ARG:
        out[k] = view_of(THPVariable_Unpack(args[index].ptr()).storage(), view);
        break;
    }
  }
  return out;
}

// What identifies a replay's launch besides its arguments: the program and
// the host values (Python numbers) it passes as parameters, as (program id,
// bytes). Two captures of a computation whose numbers change between calls
// differ here although their argument layouts match.
py::tuple replay_signature(const py::capsule& capsule) {
  auto* replay = static_cast<tt_replay*>(capsule.get_pointer());
  std::string values;
  for (int p = 0; p < tt_replay_num_params(replay); p++) {
    int arg = -1;
    tt_dtype dtype;
    int64_t numel = 0;
    bool donated = false;
    const unsigned char* bytes = nullptr;
    if (tt_replay_param(replay, p, &arg, &dtype, &numel, &donated, &bytes) != TT_LAUNCH_VALUE) continue;
    values.push_back(static_cast<char>(dtype));
    values.append(reinterpret_cast<const char*>(bytes), 16);
  }
  return py::make_tuple(reinterpret_cast<uintptr_t>(tt_replay_program(replay)), py::bytes(values));
}

}  // namespace

void register_replay(py::module_& m) {
  m.def("_capture_end_replay", &capture_end_replay);
  m.def("_replay_run", &replay_run);
  m.def("_replay_signature", &replay_signature);
  m.def("_replay_stats", []() {
    tt_replay_stats s = tt_replay_get_stats();
    return std::make_pair(s.replays, s.refused);
  });
}

}  // namespace torch_tpu
