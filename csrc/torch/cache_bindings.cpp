// torch_tpu._C's view of the persistent cache on disk (cache/disk_cache.h):
// `python -m torch_tpu.cache` formats what these return; the format, the
// default directory and the size cap are the core's. Also the pool of live
// executables (cache/exe_pool.h): its counts and cap.
#include <torch/extension.h>

#include <string>
#include <tuple>
#include <vector>

#include "torch/bridge.h"

extern "C" {
#include "cache/disk_cache_inspect.h"
#include "cache/exe_pool.h"
}

namespace torch_tpu {

namespace {

const char* or_null(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

py::list list(const std::string& root, const std::string& only) {
  tt_disk_cache_listing l;
  raise_if_error(tt_disk_cache_list(root.c_str(), or_null(only), &l));
  py::list out;
  for (size_t i = 0; i < l.n_dirs; i++) {
    const tt_disk_cache_fp_dir& d = l.dirs[i];
    py::list files;
    for (size_t j = 0; j < d.n_files; j++)
      files.append(py::make_tuple(d.files[j].name, d.files[j].bytes, d.files[j].last_use));
    py::dict e;
    e["dir"] = d.name;
    e["fingerprint"] = d.fingerprint;
    e["bytes"] = d.bytes;
    e["temp_files"] = d.temp_files;
    e["files"] = files;
    out.append(e);
  }
  tt_disk_cache_listing_free(&l);
  return out;
}

py::tuple check_entry(const std::string& path) {
  tt_disk_cache_entry_check c;
  tt_disk_cache_check_entry(path.c_str(), &c);
  py::object key = py::none();
  if (c.key) key = py::bytes(static_cast<const char*>(c.key), c.key_len);
  free(c.key);
  return py::make_tuple(std::string(c.status), key, c.blob_len);
}

}  // namespace

void register_disk_cache(py::module_& m) {
  m.def("_disk_cache_format", []() {
    py::dict d;
    d["magic"] = py::bytes(TT_DISK_CACHE_MAGIC, 8);
    d["version"] = TT_DISK_CACHE_VERSION;
    d["header_size"] = TT_DISK_CACHE_HEADER_SIZE;
    d["suffix"] = TT_DISK_CACHE_SUFFIX;
    d["tmp_prefix"] = TT_DISK_CACHE_TMP_PREFIX;
    d["fingerprint_file"] = TT_DISK_CACHE_FINGERPRINT_FILE;
    return d;
  });
  m.def("_disk_cache_key_name", [](const py::bytes& key) {
    std::string k = key;
    char out[33];
    tt_disk_cache_key_name(k.data(), k.size(), out);
    return std::string(out);
  });
  m.def("_disk_cache_default_root", []() {
    std::vector<char> out(8192);
    raise_if_error(tt_disk_cache_default_root(out.data(), out.size()));
    return std::string(out.data());
  });
  m.def("_disk_cache_list", &list, py::arg("root"), py::arg("only") = "");
  m.def("_disk_cache_check_entry", &check_entry);
  m.def("_disk_cache_clear", [](const std::string& root, const std::string& only) {
    uint64_t removed = 0, freed = 0;
    raise_if_error(tt_disk_cache_clear(root.c_str(), or_null(only), &removed, &freed));
    return std::make_tuple(removed, freed);
  }, py::arg("root"), py::arg("only") = "");
  m.def("_executable_pool_stats", []() {
    tt_pool_stats s = tt_pool_get_stats();
    py::dict d;
    d["live"] = s.live;
    d["peak"] = s.peak;
    d["cap"] = s.cap;
    d["installs"] = s.installs;
    d["evictions"] = s.evictions;
    d["map_checks"] = s.map_checks;
    d["maps_last"] = s.maps_last;
    d["max_map_count"] = s.max_map_count;
    return d;
  });
  m.def("_executable_pool_reset_peak", []() { tt_pool_reset_peak(); });
  // 0: back to TORCH_TPU_MAX_LIVE_EXECUTABLES; lowering it unloads at once
  m.def("_executable_pool_set_cap", [](size_t cap) { tt_pool_set_cap(cap); });
}

}  // namespace torch_tpu
