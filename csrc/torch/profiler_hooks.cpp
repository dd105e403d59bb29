// torch_tpu.profiler's hooks into PyTorch's profiling machinery: while a
// profile runs, global RecordFunction callbacks append every user range
// (torch.profiler.record_function / torch.autograd.profiler.record_function,
// RecordScope::USER_SCOPE) to the core's trace log as a "user" event, and
// every aten op the host dispatches (RecordScope::FUNCTION) as a "dispatch"
// event, named as PyTorch's profiler names it (aten::addmm). Registered only
// while tracing: off, RecordFunction sees no callback of ours and costs
// nothing. (A C++ callback, not a Python dispatch mode: a mode costs tens of
// microseconds per op and changes how composite ops decompose, so the
// profiled step would record different Fused regions than the real one.)
#include <torch/extension.h>

#include <ATen/record_function.h>

#include <mutex>

extern "C" {
#include "core/trace.h"
}

namespace torch_tpu {
namespace {

struct RangeStart : at::ObserverContext {
  double t0_us;
  explicit RangeStart(double t) : t0_us(t) {}
};

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction&) {
  return std::make_unique<RangeStart>(tt_trace_now_us());
}

void on_exit(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  auto* start = static_cast<RangeStart*>(ctx);
  if (start && tt_trace_on())
    tt_trace_end(fn.scope() == at::RecordScope::USER_SCOPE ? "user" : "dispatch", fn.name(),
                 start->t0_us, "");
}

std::mutex hook_lock;  // guards handles
at::CallbackHandle user_handle = 0, op_handle = 0;

void set_hook(at::CallbackHandle& handle, bool on, at::RecordScope scope) {
  if (on && handle == 0) {
    handle = at::addGlobalCallback(at::RecordFunctionCallback(on_enter, on_exit)
                                       .scopes({scope})
                                       .needsInputs(false)
                                       .needsOutputs(false));
  } else if (!on && handle != 0) {
    at::removeCallback(handle);
    handle = 0;
  }
}

void set_hooks(bool user_ranges, bool ops) {
  std::lock_guard<std::mutex> g(hook_lock);
  set_hook(user_handle, user_ranges, at::RecordScope::USER_SCOPE);
  set_hook(op_handle, ops, at::RecordScope::FUNCTION);
}

}  // namespace

void register_profiler(py::module_& m) {
  m.def("_trace_record_functions", &set_hooks);
  m.def("_trace_drain", [](double timeout_s) {
    py::gil_scoped_release no_gil;
    return tt_trace_drain(timeout_s);
  });
}

}  // namespace torch_tpu
