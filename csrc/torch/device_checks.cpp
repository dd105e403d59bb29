// Device-side checks at the boundary (graph/device_checks.h): the hook that
// names the user's source line when an op with checks is recorded, and the
// Python switches. The checks themselves are core C.
#include <torch/extension.h>

#include <cstdlib>
#include <cstring>
#include <string>

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
// torch_tpu, or NULL (no Python frame on this thread: autograd's backward).
char* user_source_line() {
  // PyTorch releases the GIL around dispatch; a thread without a Python
  // thread state (autograd's workers) has no user frame to name.
  if (!Py_IsInitialized() || !PyGILState_GetThisThreadState()) return nullptr;
  py::gil_scoped_acquire gil;
  PyFrameObject* f = PyEval_GetFrame();
  if (!f) return nullptr;
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
  return where.empty() ? nullptr : strdup(where.c_str());
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
