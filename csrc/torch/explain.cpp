// Recompile explanations from the core reach Python here: the core's hook
// only queues them (it may run under core locks), and the boundary hands
// them to torch_tpu._explain, which adds the user's source line, after the
// core call returns.
#include <torch/extension.h>

#include <mutex>
#include <string>
#include <vector>

#include "torch/bridge.h"

extern "C" {
#include "graph/dump.h"
#include "graph/explain.h"
}

namespace torch_tpu {

namespace {

std::mutex queue_mutex;
std::vector<std::string> queued;

void queue_explanation(const char* message) {
  std::lock_guard<std::mutex> lock(queue_mutex);
  queued.emplace_back(message);
}

}  // namespace

void install_explain_hook() { tt_set_explain_hook(&queue_explanation); }

// TORCH_TPU_DUMP_DIR: the manifest's entries of compiles the core call
// just made get the user's source line (computed here, holding the GIL).
static void fill_dump_sources() {
  if (!tt_dump_source_pending()) return;
  py::gil_scoped_acquire gil;
  try {
    std::string line = py::module_::import("torch_tpu.modes").attr("_user_line")().cast<std::string>();
    tt_dump_fill_source(line.c_str());
  } catch (py::error_already_set& e) {
    e.restore();
    PyErr_Clear();
  }
}

void drain_explanations() {
  fill_dump_sources();
  std::vector<std::string> messages;
  {
    std::lock_guard<std::mutex> lock(queue_mutex);
    if (queued.empty()) return;
    messages.swap(queued);
  }
  py::gil_scoped_acquire gil;
  try {
    py::module_::import("torch_tpu._explain").attr("_report")(messages);
  } catch (py::error_already_set& e) {
    // Explanations are diagnostics: never let them break the op.
    e.restore();
    PyErr_Clear();
  }
}

}  // namespace torch_tpu
