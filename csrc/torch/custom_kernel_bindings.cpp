// torch_tpu._C's view of the custom-kernel registry (csrc/ops/custom_kernel.h),
// for torch_tpu/custom_kernel.py. Shapes cross as (element type, dims):
// ("f32", [4, 8]). A kernel the core cannot read raises ValueError naming it.
#include <torch/extension.h>

#include <string>
#include <tuple>
#include <vector>

#include "torch/bridge.h"

extern "C" {
#include "ops/custom_kernel.h"
}

namespace torch_tpu {

namespace {

using ShapeSpec = std::tuple<std::string, std::vector<int64_t>>;

void raise_kernel_error(tt_error* err) {
  if (!err) return;
  if (tt_error_code_of(err) != TT_ERR_INVALID_ARGUMENT) return raise_if_error(err);
  std::string msg = tt_error_message(err);
  tt_error_free(err);
  throw py::value_error(msg);
}

tt_shape to_shape(const ShapeSpec& s) {
  tt_shape out;
  memset(&out, 0, sizeof out);
  const auto& dims = std::get<1>(s);
  if (!tt_custom_kernel_dtype(std::get<0>(s).c_str(), &out.dtype))
    throw py::value_error("custom kernel: unknown element type " + std::get<0>(s));
  if (dims.size() > TT_MAX_DIMS) throw py::value_error("custom kernel: too many dimensions");
  out.ndim = static_cast<int>(dims.size());
  for (size_t i = 0; i < dims.size(); i++) out.dims[i] = dims[i];
  return out;
}

ShapeSpec from_shape(const tt_shape& s) {
  return {tt_dtype_mlir(s.dtype), std::vector<int64_t>(s.dims, s.dims + s.ndim)};
}

}  // namespace

void register_custom_kernels(py::module_& m) {
  // (n_args, n_results, templated, argument shapes when not templated)
  m.def("_custom_kernel_signature", [](const std::string& name, const std::string& text) {
    int n_args = 0, n_results = 0;
    bool templated = false;
    std::vector<tt_shape> args(TT_CK_MAX_ARGS);
    raise_kernel_error(tt_custom_kernel_signature(name.c_str(), text.c_str(), &n_args, &n_results,
                                                  &templated, args.data()));
    std::vector<ShapeSpec> shapes;
    for (int i = 0; !templated && i < n_args; i++) shapes.push_back(from_shape(args[i]));
    return std::make_tuple(n_args, n_results, templated, shapes);
  });
  // (module text, line of the kernel's first line, result shapes)
  m.def("_custom_kernel_module", [](const std::string& name, const std::string& text,
                                    const std::vector<ShapeSpec>& ins) {
    if (ins.size() > TT_CK_MAX_ARGS) throw py::value_error("custom kernel: too many arguments");
    std::vector<tt_shape> shapes;
    for (const auto& s : ins) shapes.push_back(to_shape(s));
    std::vector<tt_shape> outs(TT_CK_MAX_RESULTS);
    char* module = nullptr;
    int first_line = 1, n_outs = 0;
    raise_kernel_error(tt_custom_kernel_module(name.c_str(), text.c_str(), shapes.data(),
                                               static_cast<int>(shapes.size()), &module,
                                               &first_line, outs.data(), &n_outs));
    std::string module_text(module);
    free(module);
    std::vector<ShapeSpec> results;
    for (int i = 0; i < n_outs; i++) results.push_back(from_shape(outs[i]));
    return std::make_tuple(module_text, first_line, results);
  });
  m.def("_custom_kernel_register", [](const std::string& name, const std::string& text) {
    raise_kernel_error(tt_custom_kernel_register(name.c_str(), text.c_str()));
  });
}

}  // namespace torch_tpu
