// Bindings of torch_tpu.export / torch_tpu.load (graph/exported.h): the
// captured program's text and plan out, and an exported program back in as
// a replay (run with _replay_run). The artifact format is Python's.
#include <torch/extension.h>

#include <cstring>
#include <string>
#include <vector>

#include "torch/bridge.h"

extern "C" {
#include "graph/exported.h"
#include "graph/region.h"
#include "graph/replay.h"
#include "graph/core.h"
}

namespace torch_tpu {

namespace {

bool describe_list(const py::list& items, std::vector<tt_tensor_ref>& refs) {
  refs.resize(items.size());
  for (size_t i = 0; i < items.size(); i++) {
    PyObject* obj = items[i].ptr();
    if (!THPVariable_Check(obj)) return false;
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (t.device().type() != c10::DeviceType::PrivateUse1 || t.dim() > TT_MAX_DIMS ||
        !is_supported_dtype(t.scalar_type()))
      return false;
    describe_tensor(t, &refs[i]);
  }
  return true;
}

tt_dtype dtype_named(const std::string& name) {
  for (int d = 0; d < TT_DTYPE_COUNT; d++)
    if (name == tt_dtype_name(static_cast<tt_dtype>(d))) return static_cast<tt_dtype>(d);
  raise_if_error(tt_error_new(TT_ERR_TYPE, "exported program: unknown dtype '%s'", name.c_str()));
  return TT_F32;
}

const char* const kinds[] = {"storage", "value", "rng"};
const char* const out_kinds[] = {"none", "new", "arg"};

// Ends an export's capture: a dict describing the program, or a str
// saying why the graph is not one exportable program.
py::object capture_end_export(const py::list& args, const py::list& outs) {
  std::vector<tt_tensor_ref> arg_refs, out_refs;
  bool described = describe_list(args, arg_refs) && describe_list(outs, out_refs);
  tt_replay* r = nullptr;
  const char* why_not = "an argument or output is not a tpu tensor";
  tt_error* err;
  {
    py::gil_scoped_release no_gil;
    err = described ? tt_region_capture_end_export(arg_refs.data(), static_cast<int>(arg_refs.size()),
                                                   out_refs.data(), static_cast<int>(out_refs.size()),
                                                   &r, &why_not)
                    : tt_region_capture_end();
  }
  drain_explanations();
  if (err) tt_replay_free(r);
  raise_if_error(err);
  if (!r) return py::str(why_not);
  if (!tt_replay_text(r)) {
    tt_replay_free(r);
    return py::str("the program's text is not available");
  }
  py::dict d;
  d["text"] = py::str(tt_replay_text(r));
  py::list params;
  for (int p = 0; p < tt_replay_num_params(r); p++) {
    int arg = -1;
    tt_dtype dtype;
    int64_t numel = 0;
    bool donated = false;
    const unsigned char* bytes = nullptr;
    tt_launch_param_kind k = tt_replay_param(r, p, &arg, &dtype, &numel, &donated, &bytes);
    params.append(py::make_tuple(kinds[k], arg, tt_dtype_name(dtype), numel, donated,
                                 py::bytes(reinterpret_cast<const char*>(bytes), 16)));
  }
  d["params"] = params;
  py::list results, outputs, checks;
  for (int o = 0; o < tt_replay_num_results(r); o++) {
    int index = 0;
    tt_replay_out_kind k = tt_replay_result(r, o, &index);
    results.append(py::make_tuple(out_kinds[k], index));
  }
  for (int k = 0; k < tt_replay_num_outputs(r); k++) {
    int index = 0;
    const tt_tensor_ref* view = nullptr;
    tt_replay_out_kind kind = tt_replay_output(r, k, &index, &view);
    outputs.append(py::make_tuple(out_kinds[kind], index));
  }
  for (int i = 0; i < tt_replay_num_checks(r); i++) {
    const tt_check_site* s = tt_replay_check(r, i);
    checks.append(py::make_tuple(s->op_name ? s->op_name : "?", s->def ? static_cast<int>(s->def->code) : 0,
                                 s->def && s->def->message ? s->def->message : ""));
  }
  tt_executable* exe = tt_replay_executable(r);
  void* blob = nullptr;
  size_t blob_size = 0;
  tt_error* serr = exe ? tt_executable_serialize(exe, &blob, &blob_size) : nullptr;
  tt_executable_release(exe);
  tt_error_free(serr);  // no executable in the artifact; a runner compiles the text
  d["executable"] = blob && !serr ? py::object(py::bytes(static_cast<const char*>(blob), blob_size)) : py::object(py::none());
  free(blob);
  d["results"] = results;
  d["outputs"] = outputs;
  d["checks"] = checks;
  tt_replay_free(r);
  return d;
}

void free_replay_capsule(void* p) { tt_replay_free(static_cast<tt_replay*>(p)); }

// The compiled executable of text, serialized (for the artifact's cache).
py::bytes exported_serialize(const std::string& text) {
  ensure_initialized();
  tt_executable* exe = nullptr;
  void* bytes = nullptr;
  size_t size = 0;
  tt_error* err;
  {
    py::gil_scoped_release no_gil;
    err = tt_exported_compile(text.c_str(), &exe);
    if (!err) err = tt_executable_serialize(exe, &bytes, &size);
  }
  tt_executable_release(exe);
  raise_if_error(err);
  py::bytes out(static_cast<const char*>(bytes), size);
  free(bytes);
  return out;
}

// params: (kind, arg, dtype name, numel, value bytes) per program parameter;
// result_out: the output each program result fills; checks: (op, code,
// message); args/outs: tpu tensors of the graph's layout (outs' storages are
// placeholders). executable: serialized bytes to load instead of compiling,
// or None.
py::object exported_load(const std::string& text, const py::object& executable, int device,
                         const py::list& params, const std::vector<int>& result_out,
                         const py::list& checks, const py::list& args, const py::list& outs) {
  ensure_initialized();
  std::vector<tt_tensor_ref> arg_refs, out_refs;
  if (!describe_list(args, arg_refs) || !describe_list(outs, out_refs))
    raise_if_error(tt_error_new(TT_ERR_INVALID_ARGUMENT, "exported program: arguments must be tpu tensors"));
  std::vector<tt_launch_param> lp(params.size());
  for (size_t p = 0; p < params.size(); p++) {
    auto t = params[p].cast<py::tuple>();
    std::string kind = t[0].cast<std::string>();
    std::memset(&lp[p], 0, sizeof lp[p]);
    lp[p].kind = kind == "storage" ? TT_LAUNCH_STORAGE : kind == "value" ? TT_LAUNCH_VALUE : TT_LAUNCH_RNG;
    lp[p].dtype = dtype_named(t[2].cast<std::string>());
    lp[p].numel = t[3].cast<int64_t>();
    if (lp[p].kind == TT_LAUNCH_STORAGE) {
      int arg = t[1].cast<int>();
      if (arg < 0 || static_cast<size_t>(arg) >= arg_refs.size())
        raise_if_error(tt_error_new(TT_ERR_INVALID_ARGUMENT, "exported program: parameter %zu names argument %d", p, arg));
      lp[p].storage = arg_refs[static_cast<size_t>(arg)].storage;
    } else {
      std::string b = t[4].cast<std::string>();
      std::memcpy(lp[p].bytes, b.data(), std::min(b.size(), sizeof lp[p].bytes));
    }
  }
  std::vector<std::string> ops(checks.size()), messages(checks.size());
  std::vector<tt_check_def> defs(checks.size());
  std::vector<tt_check_site> sites(checks.size());
  for (size_t i = 0; i < checks.size(); i++) {
    auto t = checks[i].cast<py::tuple>();
    ops[i] = t[0].cast<std::string>();
    messages[i] = t[2].cast<std::string>();
  }
  for (size_t i = 0; i < checks.size(); i++) {
    defs[i].code = static_cast<tt_error_code>(checks[i].cast<py::tuple>()[1].cast<int>());
    defs[i].message = const_cast<char*>(messages[i].c_str());
    sites[i] = tt_check_site{ops[i].c_str(), &defs[i], nullptr};
  }
  tt_executable* exe = nullptr;
  tt_error* err = nullptr;
  tt_replay* r = nullptr;
  {
    std::string blob;
    if (!executable.is_none()) blob = executable.cast<std::string>();
    py::gil_scoped_release no_gil;
    if (!blob.empty()) {
      tt_error* e = tt_executable_deserialize(tt_core_runtime(), blob.data(), blob.size(), &exe);
      if (e) { /* a stale executable: compile the text instead */
        tt_error_free(e);
        exe = nullptr;
      }
    }
    err = tt_exported_replay(text.c_str(), exe, device, lp.data(), static_cast<int>(lp.size()),
                             result_out.data(), static_cast<int>(result_out.size()), sites.data(),
                             static_cast<int>(sites.size()), arg_refs.data(),
                             static_cast<int>(arg_refs.size()), out_refs.data(),
                             static_cast<int>(out_refs.size()), &r);
  }
  tt_executable_release(exe);
  raise_if_error(err);
  return py::capsule(r, &free_replay_capsule);
}

}  // namespace

void register_export(py::module_& m) {
  m.def("_capture_end_export", &capture_end_export);
  m.def("_exported_serialize", &exported_serialize);
  m.def("_exported_load", &exported_load);
  m.def("_plugin_attribute", [](const std::string& name) -> py::object {
    ensure_initialized();
    const char* v = tt_runtime_attribute(tt_core_runtime(), name.c_str());
    return v ? py::object(py::str(v)) : py::object(py::none());
  });
}

}  // namespace torch_tpu
