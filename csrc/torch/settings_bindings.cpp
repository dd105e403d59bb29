// torch_tpu._C's view of the settings registry (core/settings.h): Python
// reads every TORCH_TPU_* variable through these, never os.environ. A value
// that does not parse raises ValueError naming the variable.
#include <torch/extension.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include "core/settings.h"
}

namespace torch_tpu {

namespace {

// Settings errors are the user's value: ValueError, with the core's message.
void raise_value_error(tt_error* err) {
  if (!err) return;
  std::string msg = tt_error_message(err);
  bool runtime = tt_error_code_of(err) != TT_ERR_INVALID_ARGUMENT;
  tt_error_free(err);
  if (runtime) throw std::runtime_error(msg);
  throw py::value_error(msg);
}

tt_setting find(const std::string& name) {
  int id = tt_setting_find(name.c_str());
  if (id < 0) throw py::key_error("no torch_tpu setting named " + name);
  return static_cast<tt_setting>(id);
}

// bool -> bool, int and size -> int, enum -> its value's name.
py::object typed(tt_setting id, int64_t v) {
  const tt_setting_info* s = tt_setting_info_of(id);
  switch (s->type) {
    case TT_SETTING_BOOL: return py::bool_(v != 0);
    case TT_SETTING_ENUM: return py::str(s->values[v]);
    default: return py::int_(v);
  }
}

py::object get(const std::string& name) {
  tt_setting id = find(name);
  if (tt_setting_info_of(id)->type == TT_SETTING_PATH) {
    std::vector<char> out(8192);
    raise_value_error(tt_setting_path(id, out.data(), out.size()));
    return py::str(out.data());
  }
  int64_t v = 0;
  if (tt_setting_info_of(id)->type == TT_SETTING_BOOL) {
    bool b = false;
    raise_value_error(tt_setting_bool(id, &b));
    v = b;
  } else {
    raise_value_error(tt_setting_int(id, &v));
  }
  return typed(id, v);
}

py::object parse(const std::string& name, const std::string& text) {
  tt_setting id = find(name);
  if (tt_setting_info_of(id)->type == TT_SETTING_PATH) return py::str(text);
  int64_t v = 0;
  raise_value_error(tt_setting_parse(id, text.c_str(), &v));
  return typed(id, v);
}

py::list entries() {
  py::list out;
  for (int i = 0; i < TT_SETTINGS; i++) {
    tt_setting id = static_cast<tt_setting>(i);
    const tt_setting_info* s = tt_setting_info_of(id);
    py::dict d;
    d["name"] = s->name;
    d["type"] = tt_setting_type_name(s->type);
    d["default"] = s->default_text;
    d["stability"] = tt_setting_stability_name(s->stability);
    d["description"] = s->description;
    py::list values;
    for (const char* const* v = s->values; v && *v; v++) values.append(*v);
    d["values"] = values;
    if (s->type == TT_SETTING_INT || s->type == TT_SETTING_SIZE) {
      d["min"] = s->min;
      d["max"] = s->max;
    }
    d["set"] = tt_setting_is_set(id);
    out.append(d);
  }
  return out;
}

void collect_unknown(const char* name, const char* nearest, void* ctx) {
  static_cast<std::vector<std::pair<std::string, std::string>>*>(ctx)->emplace_back(name, nearest);
}

}  // namespace

void register_settings(py::module_& m) {
  m.def("_setting", &get, "The parsed value of a TORCH_TPU_* variable (its default when unset).");
  m.def("_parse_setting", &parse, "Parses text as a setting's value, without the environment.");
  m.def("_settings", &entries, "Every setting: name, type, default, stability, description.");
  m.def("_check_settings", []() { raise_value_error(tt_settings_check()); });
  m.def("_reset_settings", []() { tt_settings_reset(); });
  m.def("_unknown_settings", []() {
    std::vector<std::pair<std::string, std::string>> found;
    tt_settings_unknown(collect_unknown, &found);
    return found;
  });
  m.def("_default_eager_mode", []() {
    int mode = 0;
    raise_value_error(tt_settings_eager_mode(&mode));
    return std::string(tt_eager_mode_name(mode));
  });
  m.def("_mode_names", []() {
    std::vector<std::string> names;
    for (int i = 0; tt_eager_mode_name(i); i++) names.emplace_back(tt_eager_mode_name(i));
    return names;
  });
}

}  // namespace torch_tpu
