// Device-side checks at the boundary (graph/device_checks.h): the hook that
// names the user's source line when an op with checks is recorded, and the
// Python switches. The checks themselves are core C.
#include <torch/extension.h>

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "torch/bridge.h"

extern "C" {
#include "graph/device_checks.h"
#include "graph/region.h"
}

namespace torch_tpu {

namespace {

bool library_file(const char* f) {
  return std::strstr(f, "/torch/") || std::strstr(f, "/torch_tpu/") || std::strstr(f, "/torch_tpu\\") ||
         f[0] == '<';
}

// "file.py:12 in f" of the innermost Python frame outside torch and
// torch_tpu, or "" (no Python frame on this thread: autograd's backward).
std::string python_line() {
  // PyTorch releases the GIL around dispatch; a thread without a Python
  // thread state (autograd's workers) has no user frame to name.
  if (!Py_IsInitialized() || !PyGILState_GetThisThreadState()) return {};
  py::gil_scoped_acquire gil;
  PyFrameObject* f = PyEval_GetFrame();
  if (!f) return {};
  Py_INCREF(f);
  std::string where;
  for (int depth = 0; f && depth < 64 && where.empty(); depth++) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const char* file = code ? PyUnicode_AsUTF8(code->co_filename) : nullptr;
    if (file && !library_file(file)) {
      const char* name = PyUnicode_AsUTF8(code->co_name);
      where = std::string(file) + ":" + std::to_string(PyFrame_GetLineNumber(f)) + " in " +
              (name ? name : "?");
    }
    if (!file) PyErr_Clear();
    Py_XDECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  return where;
}

// The forward lines of autograd nodes, by (thread, sequence number): an op
// with checks recorded under grad mode notes its line for the node the
// autograd kernel created just before dispatching to us (the thread's last
// sequence number), so that the checked ops of that node's backward, which
// run on autograd's thread without a Python frame, can name it. Bounded:
// the table is cleared when full (old nodes then name no line).
std::mutex forward_lock;
std::unordered_map<uint64_t, std::unordered_map<uint64_t, std::string>> forward_lines;
size_t forward_count = 0;
constexpr size_t kMaxForwardLines = 4096;

void note_forward_line(const std::string& line) {
  if (!at::GradMode::is_enabled()) return;
  uint64_t seq = at::sequence_number::peek();
  if (seq == 0) return;
  uint64_t thread = at::RecordFunction::currentThreadId();
  std::lock_guard<std::mutex> g(forward_lock);
  if (forward_count >= kMaxForwardLines) {
    forward_lines.clear();
    forward_count = 0;
  }
  if (forward_lines[thread].emplace(seq - 1, line).second) forward_count++;
}

// "IndexSelectBackward0" -> "aten::index_select".
std::string forward_op_of(const std::string& node) {
  std::string base = node;
  size_t cut = base.rfind("Backward");
  if (cut != std::string::npos && cut > 0) base = base.substr(0, cut);
  std::string out = "aten::";
  for (size_t i = 0; i < base.size(); i++) {
    unsigned char ch = static_cast<unsigned char>(base[i]);
    if (std::isupper(ch)) {
      if (i) out += '_';
      out += static_cast<char>(std::tolower(ch));
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

// On autograd's backward thread: "in the backward of aten::embedding,
// recorded at file.py:12 in f" (graph/device_checks.h), or "" outside one.
std::string backward_phrase() {
  auto node = torch::autograd::get_current_node();
  if (!node) return {};
  std::string phrase = "in the backward of " + forward_op_of(node->name());
  std::lock_guard<std::mutex> g(forward_lock);
  auto t = forward_lines.find(node->thread_id());
  if (t != forward_lines.end()) {
    auto l = t->second.find(node->sequence_nr());
    if (l != t->second.end()) phrase += ", recorded at " + l->second;
  }
  return phrase;
}

char* user_source_line() {
  std::string line = python_line();
  if (!line.empty()) {
    note_forward_line(line);
    return strdup(line.c_str());
  }
  std::string back = backward_phrase();
  return back.empty() ? nullptr : strdup(back.c_str());
}

}  // namespace

void register_device_checks(py::module_& m) {
  tt_set_source_line_hook(&user_source_line);
  // Programs are keyed by the switch; ops recorded before it changes are
  // flushed first so that a region never mixes the two.
  m.def("_set_device_checks", [](int on) {
    tt_error* err;
    {
      py::gil_scoped_release no_gil;
      err = tt_region_flush(TT_FLUSH_SYNC);
    }
    raise_if_error(err);
    tt_device_checks_set_enabled(on);
  });
  m.def("_device_checks_enabled", []() { return tt_device_checks_enabled(); });
  m.def("_device_checks_pending", []() { return tt_device_checks_pending(); });
  m.def("_device_checks_poll", []() {
    tt_error* err;
    {
      py::gil_scoped_release no_gil;
      err = tt_device_checks_poll();
    }
    raise_if_error(err);
  });
}

}  // namespace torch_tpu
