// The boundary of multi-process clients (csrc/pjrt/runtime_procs.c): the
// core's key-value store interface (tt_kv_store) implemented over a c10d
// Store, which the plugin's key-value callbacks (C functions in the core)
// call; the options torch_tpu/distributed.py sets before the client is made;
// the client's device table; and a test hook that calls the callbacks as a
// plugin would. Keys get the prefix "torch_tpu/pjrt/" so that the plugin's
// keys never meet the c10d groups' own.
#include <torch/extension.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

extern "C" {
#include "dist/collectives_procs.h"
#include "graph/core.h"
#include "graph/storage.h"
#include "pjrt/runtime.h"
}

#include "torch/bridge.h"
#include "torch/collectives_bindings.h"

namespace torch_tpu {
namespace {

constexpr const char* kKeyPrefix = "torch_tpu/pjrt/";

// A c10d Store as a tt_kv_store. The core calls get/put from the plugin's
// threads: c10d's TCPStore client is thread-safe, and no Python is involved.
struct StoreKv {
  c10::intrusive_ptr<c10d::Store> store;
  tt_kv_store kv{};

  explicit StoreKv(c10::intrusive_ptr<c10d::Store> s) : store(std::move(s)) {
    kv.ctx = this;
    kv.get = &StoreKv::get;
    kv.put = &StoreKv::put;
  }

  static tt_error* get(void* ctx, const char* key, size_t key_len, int timeout_ms, char** value,
                       size_t* value_len) {
    auto* self = static_cast<StoreKv*>(ctx);
    std::string k = kKeyPrefix + std::string(key, key_len);
    try {
      self->store->wait({k}, std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 1));
      std::vector<uint8_t> v = self->store->get(k);
      char* out = static_cast<char*>(malloc(v.empty() ? 1 : v.size()));
      if (!out) return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
      if (!v.empty()) memcpy(out, v.data(), v.size());
      *value = out;
      *value_len = v.size();
      return nullptr;
    } catch (const std::exception& e) {
      std::string m = e.what();
      m = m.substr(0, m.find('\n'));
      bool timeout = m.find("imeout") != std::string::npos || m.find("imed out") != std::string::npos;
      return tt_error_new(TT_ERR_RUNTIME, "c10d store: key %s: %s%s", k.c_str(), m.c_str(),
                          timeout ? " (timed out)" : "");
    }
  }

  static tt_error* put(void* ctx, const char* key, size_t key_len, const char* value,
                       size_t value_len) {
    auto* self = static_cast<StoreKv*>(ctx);
    std::string k = kKeyPrefix + std::string(key, key_len);
    try {
      self->store->set(k, std::vector<uint8_t>(value, value + value_len));
      return nullptr;
    } catch (const std::exception& e) {
      std::string m = e.what();
      return tt_error_new(TT_ERR_RUNTIME, "c10d store: setting key %s: %s", k.c_str(),
                          m.substr(0, m.find('\n')).c_str());
    }
  }
};

// The store of the process's multi-process client: it must outlive the
// client, which lives until the process ends, so it is kept here.
std::mutex g_process_kv_lock;
std::unique_ptr<StoreKv> g_process_kv;  // guarded by g_process_kv_lock

// One rank's c10d Backend on the compiled transport across processes:
// every rank is a process whose device a multi-process PJRT client sees;
// each collective is one program over the group's global device ids,
// launched here with this rank's tensor (tt_coll_procs_run). Written for
// GPU/TPU multi-process clients; never run (the CPU plugin has none).
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

WorkPtr completed(std::vector<at::Tensor> outputs) { return completed_work(std::move(outputs)); }

int procs_reduce(const c10d::ReduceOp& op) { return reduce_code(op, "tpu backend (compiled across processes)"); }

struct ProcsGroup {
  tt_coll_procs* g = nullptr;
  std::vector<int> ids;
  ~ProcsGroup() { tt_coll_procs_free(g); }
};

class TpuProcsBackend : public c10d::Backend {
 public:
  TpuProcsBackend(std::shared_ptr<ProcsGroup> grp, int rank, int size)
      : c10d::Backend(rank, size), grp_(std::move(grp)) {
    TORCH_CHECK(tt_coll_procs_local_count(grp_->g) == 1 && tt_coll_procs_local_rank(grp_->g, 0) == rank,
                "tpu backend (compiled across processes): rank ", rank,
                " must own exactly one device of the group in this process");
    device_ = tt_coll_procs_local_device(grp_->g, 0);
  }
  const std::string getBackendName() const override { return "tpu_compiled_procs"; }
  std::vector<int> ids() const { return grp_->ids; }

  WorkPtr allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override {
    for (auto& t : tensors) t.copy_(run(TT_COLL_ALL_REDUCE, procs_reduce(opts.reduceOp), t));
    return completed(tensors);
  }
  WorkPtr broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override {
    for (auto& t : tensors)
      t.copy_(run(TT_COLL_ALL_GATHER, 0, t.reshape({1, -1})).select(0, opts.rootRank).view(t.sizes()));
    return completed(tensors);
  }
  WorkPtr _allgather_base(at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions&) override {
    at::Tensor all = run(TT_COLL_ALL_GATHER, 0, input.reshape({1, -1}));
    TORCH_CHECK(output.numel() == all.numel(), "all_gather_into_tensor: the output holds ",
                output.numel(), " elements, ", all.numel(), " are gathered");
    output.copy_(all.view(output.sizes()));
    return completed({output});
  }
  WorkPtr _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                               const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(input.numel() == output.numel() * size_, "reduce_scatter_tensor: the input holds ",
                input.numel(), " elements, not ", size_, " x the output's ", output.numel());
    output.copy_(run(TT_COLL_REDUCE_SCATTER, procs_reduce(opts.reduceOp), input.reshape({size_, -1}))
                     .view(output.sizes()));
    return completed({output});
  }
  WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                        std::vector<int64_t>& input_splits, const c10d::AllToAllOptions&) override {
    TORCH_CHECK(output_splits.empty() && input_splits.empty(),
                "all_to_all_single: the compiled transport takes equal splits only");
    TORCH_CHECK(input.numel() % size_ == 0 && output.numel() == input.numel(),
                "all_to_all_single: tensors must hold the same multiple of the group size elements");
    output.copy_(run(TT_COLL_ALL_TO_ALL, 0, input.reshape({size_, -1})).view(output.sizes()));
    return completed({output});
  }
  WorkPtr barrier(const c10d::BarrierOptions&) override {
    run(TT_COLL_ALL_REDUCE, TT_RED_SUM, at::zeros({1}, at::kFloat)).cpu();
    return completed({});
  }

 private:
  at::Tensor run(int kind, int reduce, const at::Tensor& t) {
    c10::Device dev(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_));
    if (t.is_cpu()) return run(kind, reduce, t.to(dev)).cpu();
    TORCH_CHECK(t.device() == dev, "tpu backend: this rank's collectives run on ", dev, ", not ",
                t.device());
    TORCH_CHECK(t.dim() <= TT_MAX_DIMS, "tpu backend: tensors of more than ", TT_MAX_DIMS,
                " dimensions are not supported");
    tt_coll_op op{};
    op.kind = static_cast<tt_coll_kind>(kind);
    op.reduce = static_cast<tt_coll_reduce>(reduce);
    tt_dtype dt = to_core_dtype(t.scalar_type());
    at::Tensor c;
    tt_buffer* buf = collective_input_buffer(t, c);  // released below
    std::vector<int64_t> dims(c.sizes().begin(), c.sizes().end());
    int64_t out_dims[TT_MAX_DIMS];
    tt_buffer* out = nullptr;
    tt_error* err;
    {
      py::gil_scoped_release no_gil;
      err = tt_coll_procs_run(grp_->g, &op, &buf, dt, dims.data(), static_cast<int>(dims.size()), &out,
                              out_dims);
    }
    tt_buffer_release(buf);
    raise_if_error(err);
    return wrap_buffer(out, dt, static_cast<int>(dims.size()), out_dims, dev.index());
  }
  std::shared_ptr<ProcsGroup> grp_;
  int device_ = 0;
};

}  // namespace

void register_dist_procs(py::module_& m) {
  // The compiled transport across processes: rank `rank` of a group whose
  // ranks run on the devices of global ids `ids` (every process's).
  py::class_<TpuProcsBackend, c10d::Backend, c10::intrusive_ptr<TpuProcsBackend>>(m, "_TpuProcsBackend")
      .def(py::init([](const std::vector<int>& ids, int rank) {
             tt_runtime* rt = tt_core_runtime();
             TORCH_CHECK(rt, "torch_tpu: the tpu device is not initialized");
             auto grp = std::make_shared<ProcsGroup>();
             grp->ids = ids;
             raise_if_error(tt_coll_procs_new(rt, ids.data(), static_cast<int>(ids.size()), &grp->g));
             return c10::make_intrusive<TpuProcsBackend>(grp, rank, static_cast<int>(ids.size()));
           }),
           py::arg("ids"), py::arg("rank"))
      .def_property_readonly("ids", &TpuProcsBackend::ids);
  // Sets the options of the client the next device initialization makes
  // (ignored by the CPU plugin): a client of `num_nodes` processes, this one
  // `node_id`, on its local device `visible_device` (-1: all), the key-value
  // callbacks over `store`.
  m.def("_set_multiprocess_client",
        [](const c10::intrusive_ptr<c10d::Store>& store, int num_nodes, int node_id, int visible_device) {
          TORCH_CHECK(!tt_core_initialized(),
                      "torch_tpu: a multi-process client must be set up before the tpu device "
                      "is initialized");
          std::lock_guard<std::mutex> g(g_process_kv_lock);
          g_process_kv = std::make_unique<StoreKv>(store);
          tt_runtime_options o{};
          o.num_nodes = num_nodes;
          o.node_id = node_id;
          o.visible_device = visible_device;
          o.kv = &g_process_kv->kv;
          tt_create_option opts[TT_CREATE_OPTIONS_MAX];
          int n = 0;
          raise_if_error(tt_runtime_create_options(&o, TT_PLUGIN_OTHER, opts, TT_CREATE_OPTIONS_MAX, &n));
          tt_runtime_set_process_options(&o);
        },
        py::arg("store"), py::arg("num_nodes"), py::arg("node_id"), py::arg("visible_device") = -1);
  m.def("_multiprocess_client_options", []() -> py::object {
    tt_runtime_options o{};
    if (!tt_runtime_get_process_options(&o)) return py::none();
    py::dict d;
    d["num_nodes"] = o.num_nodes;
    d["node_id"] = o.node_id;
    d["visible_device"] = o.visible_device;
    return d;
  });
  // The create options a plugin of this file name would get for these
  // settings (the core's list; errors as the core raises them).
  m.def("_client_create_options", [](const std::string& plugin_path, int num_cpu_devices, int num_nodes,
                                     int node_id, int visible_device) {
    tt_kv_store none{};
    none.get = [](void*, const char*, size_t, int, char**, size_t*) -> tt_error* { return nullptr; };
    none.put = [](void*, const char*, size_t, const char*, size_t) -> tt_error* { return nullptr; };
    tt_runtime_options o{num_cpu_devices, num_nodes, node_id, visible_device, &none};
    tt_create_option opts[TT_CREATE_OPTIONS_MAX];
    int n = 0;
    raise_if_error(tt_runtime_create_options(&o, tt_plugin_kind_of(plugin_path.c_str()), opts,
                                             TT_CREATE_OPTIONS_MAX, &n));
    std::vector<std::pair<std::string, int64_t>> out;
    for (int i = 0; i < n; i++) out.emplace_back(opts[i].name, opts[i].value);
    return out;
  });
  m.def("_plugin_kind", [](const std::string& plugin_path) {
    switch (tt_plugin_kind_of(plugin_path.c_str())) {
      case TT_PLUGIN_CPU: return "cpu";
      case TT_PLUGIN_TPU: return "tpu";
      default: return "other";
    }
  });
  // Every device the client sees: (global id, process index or -1, client
  // device index or -1 when another process's).
  m.def("_client_device_table", []() {
    tt_runtime* rt = tt_core_runtime();
    TORCH_CHECK(rt, "torch_tpu: the tpu device is not initialized");
    int n = 0;
    raise_if_error(tt_runtime_global_devices(rt, nullptr, 0, &n));
    std::vector<tt_global_device> t(static_cast<size_t>(n > 0 ? n : 1));
    raise_if_error(tt_runtime_global_devices(rt, t.data(), n, &n));
    std::vector<std::tuple<int, int, int>> out;
    for (int i = 0; i < n; i++) out.emplace_back(t[i].id, t[i].process_index, t[i].local);
    return out;
  });
  // Test hook: the plugin-facing key-value callbacks over this store.
  m.def("_kv_callbacks_test", [](const c10::intrusive_ptr<c10d::Store>& store, const std::string& op,
                                 const std::string& key, const py::bytes& value, int timeout_ms) -> py::object {
    StoreKv kv(store);
    if (op == "put") {
      std::string v = value;
      tt_error* err;
      {
        py::gil_scoped_release no_gil;
        err = tt_kv_callbacks_test_put(&kv.kv, key.c_str(), v.data(), v.size());
      }
      raise_if_error(err);
      return py::none();
    }
    TORCH_CHECK(op == "get", "_kv_callbacks_test: op must be 'put' or 'get'");
    char* out = nullptr;
    size_t len = 0;
    tt_error* err;
    {
      py::gil_scoped_release no_gil;
      err = tt_kv_callbacks_test_get(&kv.kv, key.c_str(), timeout_ms, &out, &len);
    }
    raise_if_error(err);
    py::bytes b(out, len);
    free(out);
    return b;
  });
}

}  // namespace torch_tpu
