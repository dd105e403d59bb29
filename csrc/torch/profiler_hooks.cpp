// torch_tpu.profiler's hooks into PyTorch's profiling machinery: while a
// profile runs, a global RecordFunction callback appends every user range
// (torch.profiler.record_function / torch.autograd.profiler.record_function,
// RecordScope::USER_SCOPE) to the core's trace log as a "user" event, so the
// ranges a user marks appear on our timeline. Registered only while tracing:
// off, RecordFunction sees no callback of ours and costs nothing.
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
  if (start && tt_trace_on()) tt_trace_end("user", fn.name(), start->t0_us, "");
}

std::mutex hook_lock;  // guards handle
at::CallbackHandle handle = 0;

void set_user_ranges(bool on) {
  std::lock_guard<std::mutex> g(hook_lock);
  if (on && handle == 0) {
    handle = at::addGlobalCallback(at::RecordFunctionCallback(on_enter, on_exit)
                                       .scopes({at::RecordScope::USER_SCOPE})
                                       .needsInputs(false)
                                       .needsOutputs(false));
  } else if (!on && handle != 0) {
    at::removeCallback(handle);
    handle = 0;
  }
}

}  // namespace

void register_profiler(py::module_& m) {
  m.def("_trace_user_ranges", &set_user_ranges);
  m.def("_trace_drain", [](double timeout_s) {
    py::gil_scoped_release no_gil;
    return tt_trace_drain(timeout_s);
  });
}

}  // namespace torch_tpu
