// Python bindings of torch_tpu._C: the functions torch_tpu/*.py call.
#include <torch/extension.h>

#include "torch/bridge.h"

extern "C" {
#include "cache/compile_cache.h"
#include "core/settings.h"
#include "core/trace.h"
#include "graph/core.h"
#include "graph/device_checks.h"
#include "graph/execute.h"
#include "graph/dump.h"
#include "graph/hlo_listing.h"
#include "graph/explain.h"
#include "graph/persistent.h"
#include "graph/region.h"
}

namespace torch_tpu {
void register_hooks();
void register_table_routed_ops();
std::map<std::string, int64_t> fallback_report();
void reset_fallback_report();
void register_replay(py::module_& m);
void register_export(py::module_& m);
void register_settings(py::module_& m);
void register_device_checks(py::module_& m);
void register_disk_cache(py::module_& m);
void register_c10d(py::module_& m);
void register_collectives(py::module_& m);
void register_custom_kernels(py::module_& m);
void register_profiler(py::module_& m);
}  // namespace torch_tpu

namespace {

using namespace torch_tpu;

void check_device(int device) {
  int n = device_count_noexcept();
  TORCH_CHECK(device >= 0 && device < n, "Invalid device tpu:", device, ": ", n,
              " tpu device(s) available");
}

py::dict cache_stats() {
  tt_cache_stats s = tt_cache_get_stats();
  tt_exec_stats e = tt_get_exec_stats();
  py::dict d;
  d["requests"] = s.requests;
  d["hits"] = s.hits;
  d["misses"] = s.misses;
  d["entries"] = s.entries;
  d["compile_seconds"] = s.compile_seconds;
  d["ops_run"] = e.ops_run;
  d["ops_declined"] = e.ops_declined;
  d["ops_missing"] = e.ops_missing;
  tt_mode_stats m = tt_get_mode_stats();
  py::dict per_mode;
  for (int i = 0; i < TT_MODES; i++) per_mode[tt_eager_mode_name(i)] = m.compiles[i];
  d["compiles_by_mode"] = per_mode;
  d["steps"] = m.steps;
  d["programs_last_step"] = m.last_step_programs;
  d["launches_last_step"] = m.last_step_launches;
  d["compiles_last_step"] = m.last_step_compiles;
  tt_region_stats r = tt_region_get_stats();
  py::dict fused;
  fused["ops_recorded"] = r.ops_recorded;
  fused["programs_run"] = r.programs_run;
  fused["compiles"] = r.compiles;
  fused["cache_hits"] = r.cache_hits;
  fused["disk_loads"] = r.disk_loads;
  fused["values_elided"] = r.values_elided;
  fused["scratch_splits"] = r.scratch_splits;
  fused["max_ops"] = r.max_ops;
  fused["buffers_donated"] = r.buffers_donated;
  fused["compile_seconds"] = r.compile_seconds;
  py::dict flushes;
  for (int i = 0; i < TT_FLUSH_REASONS; i++)
    flushes[tt_flush_reason_name(static_cast<tt_flush_reason>(i))] = r.flushes[i];
  fused["flushes"] = flushes;
  d["fused"] = fused;
  tt_persistent_stats p = tt_persistent_get_stats();
  py::dict disk;
  disk["enabled"] = p.enabled != 0;
  disk["loads"] = p.loads;
  disk["stores"] = p.stores;
  disk["misses"] = p.misses;
  disk["load_seconds"] = p.load_seconds;
  d["persistent"] = disk;
  return d;
}

void flush_region() {
  tt_error* err;
  {
    py::gil_scoped_release no_gil;
    err = tt_region_flush(TT_FLUSH_SYNC);
  }
  drain_explanations();
  raise_if_error(err);
}

}  // namespace

// The mode names are TORCH_TPU_EAGER_MODE's values, in tt_exec_mode's order.
static_assert(TT_MODE_STRICT == 0 && TT_MODE_FUSED == 1 && TT_MODE_DEBUG == 2 && TT_MODES == 3,
              "tt_exec_mode and TORCH_TPU_EAGER_MODE's values (core/settings.c) differ");

PYBIND11_MODULE(_C, m) {
  TORCH_CHECK(tt_eager_mode_name(TT_MODES - 1) && !tt_eager_mode_name(TT_MODES),
              "tt_exec_mode and TORCH_TPU_EAGER_MODE's values (core/settings.c) differ");
  register_hooks();
  register_table_routed_ops();
  install_explain_hook();
  register_device_checks(m);
  register_collectives(m);
  register_custom_kernels(m);
  m.def("_set_search_dirs", &set_search_dirs);
  m.def("_init", []() { ensure_initialized(); });
  m.def("_register_c10d", [](py::module_ self) { register_c10d(self); });
  m.def("_is_initialized", []() { return tt_core_initialized(); });
  m.def("_device_count", []() { return static_cast<int>(device_count_noexcept()); });
  m.def("_current_device", []() { return static_cast<int>(current_device()); });
  m.def("_set_device", [](int d) { set_current_device(static_cast<c10::DeviceIndex>(d)); });
  m.def("_synchronize", []() {
    ensure_initialized();
    flush_region();
    py::gil_scoped_release no_gil;
    raise_if_error(tt_runtime_synchronize(tt_core_runtime()));
    raise_if_error(tt_device_checks_poll());  // synchronize waits anyway
  });
  m.def("_flush", &flush_region);
  m.def("_set_default_mode", [](int mode) { tt_set_default_mode(static_cast<tt_exec_mode>(mode)); });
  m.def("_thread_mode_enter", [](int mode) { return tt_thread_mode_enter(static_cast<tt_exec_mode>(mode)); });
  m.def("_thread_mode_exit", [](int previous) { tt_thread_mode_exit(previous); });
  m.def("_current_mode", []() { return static_cast<int>(tt_current_mode()); });
  m.def("_capture_begin", []() {
    py::gil_scoped_release no_gil;
    raise_if_error(tt_region_capture_begin());
  });
  m.def("_capture_end", []() {
    tt_error* err;
    {
      py::gil_scoped_release no_gil;
      err = tt_region_capture_end();
    }
    drain_explanations();
    raise_if_error(err);
  });
  register_replay(m);
  register_export(m);
  register_settings(m);
  register_disk_cache(m);
  register_profiler(m);
  m.def("_set_explain", [](bool on) { tt_set_explain(on); });
  m.def("_set_fused_max_ops", [](int n) { tt_region_set_max_ops(n); });
  m.def("_mark_step", []() { tt_mark_step(); });
  m.def("_manual_seed", [](int d, uint64_t seed) { tt_core_manual_seed(d, seed); });
  m.def("_initial_seed", [](int d) { return tt_core_initial_seed(d); });
  m.def("_memory_allocated", [](int d) { return tt_memory_allocated(d); });
  m.def("_max_memory_allocated", [](int d) { return tt_memory_peak(d); });
  m.def("_reset_peak_memory_stats", [](int d) {
    tt_memory_reset_peak(d);
    if (tt_core_runtime()) tt_runtime_reset_peak_buffer_bytes(tt_core_runtime());
  });
  m.def("_buffer_bytes", []() {
    int64_t live = 0, peak = 0;
    if (tt_core_runtime()) tt_runtime_buffer_bytes(tt_core_runtime(), &live, &peak);
    return std::make_pair(live, peak);
  });
  m.def("_memory_stats", [](int d) {
    tt_memory_stats st;
    tt_memory_get_stats(d, &st);
    int64_t live = 0, peak = 0;
    if (tt_core_runtime()) tt_runtime_buffer_bytes(tt_core_runtime(), &live, &peak);
    py::dict r;
    r["bytes"] = st.bytes;
    r["peak_bytes"] = st.peak_bytes;
    r["bytes_allocated"] = st.bytes_allocated;
    r["bytes_freed"] = st.bytes_freed;
    r["count"] = st.count;
    r["peak_count"] = st.peak_count;
    r["count_allocated"] = st.count_allocated;
    r["count_freed"] = st.count_freed;
    r["buffer_bytes"] = live;
    r["peak_buffer_bytes"] = peak;
    return r;
  });
  m.def("_trace_set", [](bool on) { tt_trace_set(on); });
  m.def("_trace_now_us", []() { return tt_trace_now_us(); });
  m.def("_trace_take", []() {
    tt_trace_event* ev = nullptr;
    size_t dropped = 0;
    size_t n = tt_trace_take(&ev, &dropped);
    py::list out;
    for (size_t i = 0; i < n; i++)
      out.append(py::make_tuple(std::string(ev[i].track), std::string(ev[i].name), ev[i].ts_us,
                                ev[i].dur_us, ev[i].tid, std::string(ev[i].detail)));
    free(ev);
    return py::make_tuple(out, dropped);
  });
  m.def("_dump_enabled", []() { return tt_dump_enabled(); });
  m.def("_dump_note", [](const std::string& kind, const std::string& name, const std::string& ext,
                         const std::string& text) {
    return tt_dump_note(kind.c_str(), name.c_str(), ext.c_str(), text.c_str());
  });
  m.def("_dump_fill_source", [](const std::string& line) { tt_dump_fill_source(line.c_str()); });
  m.def("_hlo_listing", [](const py::bytes& proto) {  // an HloModuleProto's listing, and its counts
    std::string b = proto;
    char* text = nullptr;
    tt_hlo_listing_stats st = {};
    raise_if_error(tt_hlo_listing(b.data(), b.size(), &text, &st));
    std::string out(text);
    free(text);
    return py::make_tuple(out, st.computations, st.instructions, st.fusions);
  });
  m.def("_reset_accumulated_memory_stats", [](int d) { tt_memory_reset_accumulated(d); });
  m.def("_device_memory", [](int d) {
    ensure_initialized();
    check_device(d);
    tt_device_memory mem;
    raise_if_error(tt_runtime_device_memory(tt_core_runtime(), d, &mem));
    py::dict r;
    r["bytes_in_use"] = mem.bytes_in_use;
    r["peak_bytes_in_use"] = mem.peak_bytes_in_use;
    r["bytes_limit"] = mem.bytes_limit;
    r["num_allocs"] = mem.num_allocs;
    r["bytes_reserved"] = mem.bytes_reserved;
    return r;
  });
  m.def("_device_name", [](int d) {
    ensure_initialized();
    check_device(d);
    return std::string(tt_runtime_device_kind(tt_core_runtime(), d));
  });
  m.def("_platform_name", []() {
    ensure_initialized();
    return std::string(tt_runtime_platform_name(tt_core_runtime()));
  });
  m.def("_plugin_path", []() {
    ensure_initialized();
    return std::string(tt_runtime_plugin_path(tt_core_runtime()));
  });
  // The discovery rule's candidates in its order (doctor.py): (relative
  // path naming the plugin, full path) for each search directory holding it.
  m.def("_plugin_candidates", [](const std::vector<std::string>& dirs) {
    std::vector<const char*> ptrs;
    for (auto& d : dirs) ptrs.push_back(d.c_str());
    ptrs.push_back(nullptr);
    std::vector<std::pair<std::string, std::string>> found;
    tt_runtime_plugin_candidates(
        ptrs.data(),
        [](void* ctx, const char* rel, const char* path) {
          static_cast<std::vector<std::pair<std::string, std::string>>*>(ctx)->emplace_back(rel, path);
        },
        &found);
    return found;
  });
  m.def("_plugin_fingerprint", []() {
    ensure_initialized();
    return std::string(tt_runtime_fingerprint(tt_core_runtime()));
  });
  m.def("_cache_stats", &cache_stats);
  m.def("_reset_cache_stats", []() { tt_cache_reset_stats(); });
  m.def("_clear_cache", []() { tt_cache_clear(); });
  m.def("_fallback_report", &fallback_report);
  m.def("_reset_fallback_report", &reset_fallback_report);
  m.def("_lowered_ops", []() {
    std::vector<std::string> names;
    for (int i = 0; i < tt_lowering_count(); i++) names.emplace_back(tt_lowering_name_at(i));
    return names;
  });
  m.def("_set_optimization_level", [](int level) { tt_set_optimization_level(level); });
  m.def("_set_synchronous", [](bool on) { tt_set_synchronous(on); });
  m.def("_get_synchronous", []() { return tt_get_synchronous(); });
  m.def("_set_log_compiles", [](bool on) { tt_set_log_compiles(on); });
  m.def("_compile_stablehlo", [](const std::string& text) {
    // Debugging aid: compiles raw StableHLO text, raising the plugin's error.
    ensure_initialized();
    tt_compile_options opts = {1, true};
    tt_executable* exe = nullptr;
    raise_if_error(tt_compile(tt_core_runtime(), text.data(), text.size(), &opts, &exe));
    int n = tt_executable_num_outputs(exe);
    tt_executable_release(exe);
    return n;
  });
}
