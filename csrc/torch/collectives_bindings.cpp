// The boundary of the compiled collectives (csrc/dist/collectives.c): a
// group object over client devices, and one call per rank that hands the
// core its tensor's flat device buffer and wraps the result. Used by
// torch_tpu/distributed_threads.py (ranks as threads of one process), and
// a c10d Backend over it, so that a thread's own ProcessGroup serves
// torch.distributed's collectives on the compiled transport.
#include <torch/extension.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <Python.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "torch/bridge.h"
#include "torch/collectives_bindings.h"

extern "C" {
#include "core/trace.h"
#include "dist/collectives.h"
#include "graph/core.h"
#include "graph/region.h"
}

namespace torch_tpu {

namespace {
std::atomic<int64_t> g_host_flushes{0};      // Fused regions flushed by host-transport collectives
std::atomic<int64_t> g_compiled_flushes{0};  // ... by compiled-transport collectives
}  // namespace

void collective_flush(const at::Tensor& t, bool host_transport) {
  if (t.device().type() != c10::DeviceType::PrivateUse1 || !t.has_storage()) return;
  bool flushed = false;
  raise_if_error(tt_region_flush_for_collective(storage_of(t), &flushed));
  if (flushed) (host_transport ? g_host_flushes : g_compiled_flushes)++;
}

tt_buffer* collective_input_buffer(const at::Tensor& t, at::Tensor& keep) {
  keep = t.contiguous();
  if (keep.storage_offset() != 0 ||
      keep.storage().nbytes() != static_cast<size_t>(keep.numel()) * keep.element_size())
    keep = keep.clone(at::MemoryFormat::Contiguous);
  collective_flush(keep, /*host_transport=*/false);
  tt_buffer* buf = nullptr;
  raise_if_error(tt_storage_ensure(storage_of(keep), to_core_dtype(keep.scalar_type()), &buf));
  return buf;
}

c10::intrusive_ptr<c10d::Work> completed_work(std::vector<at::Tensor> outputs) {
  auto fut = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  fut->markCompleted(c10::IValue(std::move(outputs)));
  return c10d::Work::create_from_future(fut);
}

int reduce_code(const c10d::ReduceOp& op, const char* backend) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return TT_RED_SUM;
    case c10d::ReduceOp::AVG: return TT_RED_AVG;
    case c10d::ReduceOp::MAX: return TT_RED_MAX;
    case c10d::ReduceOp::MIN: return TT_RED_MIN;
    case c10d::ReduceOp::PRODUCT: return TT_RED_PROD;
    default: TORCH_CHECK(false, backend, ": unsupported reduction ", static_cast<int>(op.op_));
  }
}

namespace {

struct CollGroup {
  tt_coll_group* g = nullptr;
  std::vector<int> devices;
  ~CollGroup() { tt_coll_group_free(g); }
};

at::Tensor coll_run(const CollGroup& grp, int kind, int reduce, const std::vector<int>& pairs,
                    const at::Tensor& t, double timeout_s) {
  TORCH_CHECK(kind >= 0 && kind < TT_COLL_COUNT, "compiled collectives: unknown collective ", kind);
  const char* name = tt_coll_kind_name(static_cast<tt_coll_kind>(kind));
  // torch_tpu.profiler: the rank's span, arrival to result (the wait for the
  // other ranks included), on its own thread's "collectives" track
  double trace_t0 = tt_trace_on() ? tt_trace_now_us() : -1;
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, name,
              ": compiled collectives take tpu tensors, got one on ", t.device());
  TORCH_CHECK(t.dim() <= TT_MAX_DIMS, name, ": tensors of more than ", TT_MAX_DIMS,
              " dimensions are not supported");
  tt_coll_op op{};
  op.kind = static_cast<tt_coll_kind>(kind);
  op.reduce = static_cast<tt_coll_reduce>(reduce);
  TORCH_CHECK(pairs.size() % 2 == 0 && pairs.size() <= 2 * TT_COLL_MAX_PAIRS, name,
              ": pairs must be at most ", TT_COLL_MAX_PAIRS, " (source, target) pairs");
  op.n_pairs = static_cast<int>(pairs.size() / 2);
  for (size_t i = 0; i < pairs.size(); i++) op.pairs[i] = pairs[i];
  int device = t.device().index();
  int rank = tt_coll_group_rank_of(grp.g, device);
  TORCH_CHECK(rank >= 0, name, ": the tensor is on tpu:", device,
              ", which is no rank's device in this group");
  tt_dtype dt = to_core_dtype(t.scalar_type());
  at::Tensor c;
  tt_buffer* buf = collective_input_buffer(t, c);  // released below
  std::vector<int64_t> dims(c.sizes().begin(), c.sizes().end());
  int64_t out_dims[TT_MAX_DIMS];
  tt_buffer* out = nullptr;
  tt_error* err;
  {
    // the other ranks' threads need the GIL to reach the rendezvous
    std::optional<py::gil_scoped_release> no_gil;
    if (Py_IsInitialized() && PyGILState_Check()) no_gil.emplace();
    err = tt_coll_run(grp.g, rank, &op, buf, dims.data(), static_cast<int>(dims.size()), timeout_s,
                      &out, out_dims);
  }
  tt_buffer_release(buf);
  if (trace_t0 >= 0 && tt_trace_on()) {
    std::string shape = std::string(c10::toString(t.scalar_type())) + "[";
    for (size_t i = 0; i < dims.size(); i++) shape += (i ? "," : "") + std::to_string(dims[i]);
    shape += "]";
    char detail[160];
    snprintf(detail, sizeof detail, "transport=compiled rank=%d group=%zu bytes=%lld tensor=%s%s",
             rank, grp.devices.size(), static_cast<long long>(c.numel() * c.element_size()),
             shape.c_str(), err ? " failed=1" : "");
    tt_trace_end("collectives", name, trace_t0, detail);
  }
  raise_if_error(err);
  return wrap_buffer(out, dt, static_cast<int>(dims.size()), out_dims,
                     static_cast<c10::DeviceIndex>(device));
}

// Rank `tensors[0].device()`'s part of one whole program over the group
// (tt_coll_run_program): each argument is passed as the flat buffer of its
// elements (a 1-D tensor<numel x dtype> parameter, as Fused regions pass
// theirs); the results keep the shapes the program gives them.
std::vector<at::Tensor> coll_run_program(const CollGroup& grp, const std::string& what,
                                         const std::string& text, const std::vector<at::Tensor>& tensors,
                                         int num_outputs, double timeout_s) {
  TORCH_CHECK(!tensors.empty(), what, ": needs at least one tensor argument (it names the rank)");
  TORCH_CHECK(num_outputs >= 0, what, ": num_outputs must be >= 0");
  int device = -1;
  std::vector<tt_buffer*> bufs;
  std::vector<at::Tensor> keep;
  auto release = [&bufs]() {
    for (tt_buffer* b : bufs) tt_buffer_release(b);
  };
  try {
    for (const at::Tensor& t : tensors) {
      TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, what,
                  ": program arguments must be tpu tensors, got one on ", t.device());
      if (device < 0) device = t.device().index();
      TORCH_CHECK(t.device().index() == device, what, ": arguments on tpu:", device, " and tpu:",
                  t.device().index(), "; a rank's arguments sit on its own device");
      at::Tensor c;
      tt_buffer* buf = collective_input_buffer(t, c);  // released by release()
      bufs.push_back(buf);
      keep.push_back(c);
    }
  } catch (...) {
    release();
    throw;
  }
  int rank = tt_coll_group_rank_of(grp.g, device);
  if (rank < 0) release();
  TORCH_CHECK(rank >= 0, what, ": the arguments are on tpu:", device,
              ", which is no rank's device in this group");
  std::vector<tt_buffer*> outs(static_cast<size_t>(num_outputs) + 1, nullptr);
  tt_error* err;
  {
    std::optional<py::gil_scoped_release> no_gil;
    if (Py_IsInitialized() && PyGILState_Check()) no_gil.emplace();
    err = tt_coll_run_program(grp.g, rank, what.c_str(), text.c_str(), bufs.data(),
                              static_cast<int>(bufs.size()), outs.data(), num_outputs, timeout_s);
  }
  release();
  raise_if_error(err);
  std::vector<at::Tensor> results;
  for (int o = 0; o < num_outputs; o++) {
    tt_buffer* b = outs[static_cast<size_t>(o)];
    results.push_back(wrap_buffer(b, tt_buffer_dtype(b), tt_buffer_ndim(b), tt_buffer_dims(b),
                                  static_cast<c10::DeviceIndex>(device)));
  }
  return results;
}

using c10d::Work;
using WorkPtr = c10::intrusive_ptr<Work>;

WorkPtr completed(std::vector<at::Tensor> outputs) { return completed_work(std::move(outputs)); }

int compiled_reduce(const c10d::ReduceOp& op) { return reduce_code(op, "tpu compiled backend"); }

// One rank's c10d Backend on the compiled transport: the rank is a thread of
// this process and every rank's Backend shares the CollGroup. Each call runs
// the rendezvous and writes the result into the caller's tensors; the Work
// is complete when the call returns (as the host transport's).
class TpuCompiledBackend : public c10d::Backend {
 public:
  TpuCompiledBackend(std::shared_ptr<CollGroup> grp, int rank, int size, double timeout_s)
      : c10d::Backend(rank, size), grp_(std::move(grp)), timeout_s_(timeout_s) {
    TORCH_CHECK(size == static_cast<int>(grp_->devices.size()), "tpu compiled backend: size ", size,
                " but the group has ", grp_->devices.size(), " devices");
    TORCH_CHECK(rank >= 0 && rank < size, "tpu compiled backend: rank ", rank, " out of range");
  }
  const std::string getBackendName() const override { return "tpu_compiled"; }
  std::vector<int> devices() const { return grp_->devices; }

  WorkPtr allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override {
    for (auto& t : tensors) t.copy_(run(TT_COLL_ALL_REDUCE, compiled_reduce(opts.reduceOp), t));
    return completed(tensors);
  }
  WorkPtr allreduce_coalesced(std::vector<at::Tensor>& tensors,
                              const c10d::AllreduceCoalescedOptions& opts) override {
    return allreduce(tensors, opts);
  }
  WorkPtr broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override {
    // every rank's tensor gathered; the root's block kept (exact for any value)
    for (auto& t : tensors) {
      at::Tensor all = run(TT_COLL_ALL_GATHER, 0, t.reshape({1, -1}));
      t.copy_(all.select(0, opts.rootRank).view(t.sizes()));
    }
    return completed(tensors);
  }
  WorkPtr _allgather_base(at::Tensor& output, at::Tensor& input,
                          const c10d::AllgatherOptions&) override {
    at::Tensor all = run(TT_COLL_ALL_GATHER, 0, input.reshape({1, -1}));
    TORCH_CHECK(output.numel() == all.numel(), "all_gather_into_tensor: the output holds ",
                output.numel(), " elements, ", all.numel(), " are gathered");
    output.copy_(all.view(output.sizes()));
    return completed({output});
  }
  WorkPtr allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                    const c10d::AllgatherOptions&) override {
    TORCH_CHECK(outputs.size() == inputs.size(), "all_gather: output and input lists differ in length");
    std::vector<at::Tensor> flat;
    for (size_t i = 0; i < inputs.size(); i++) {
      TORCH_CHECK(static_cast<int>(outputs[i].size()) == size_, "all_gather: needs ", size_,
                  " output tensors, got ", outputs[i].size());
      at::Tensor all = run(TT_COLL_ALL_GATHER, 0, inputs[i].reshape({1, -1}));
      for (int r = 0; r < size_; r++) {
        outputs[i][r].copy_(all.select(0, r).view(outputs[i][r].sizes()));
        flat.push_back(outputs[i][r]);
      }
    }
    return completed(flat);
  }
  WorkPtr _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                               const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(input.numel() == output.numel() * size_, "reduce_scatter_tensor: the input holds ",
                input.numel(), " elements, not ", size_, " x the output's ", output.numel());
    at::Tensor mine = run(TT_COLL_REDUCE_SCATTER, compiled_reduce(opts.reduceOp),
                          input.reshape({size_, -1}));
    output.copy_(mine.view(output.sizes()));
    return completed({output});
  }
  WorkPtr allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllgatherOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(),
                "allgather_into_tensor_coalesced: needs as many outputs as inputs");
    for (size_t i = 0; i < inputs.size(); i++) _allgather_base(outputs[i], inputs[i], opts);
    return completed(outputs);
  }
  WorkPtr reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(),
                "reduce_scatter_tensor_coalesced: needs as many outputs as inputs");
    for (size_t i = 0; i < inputs.size(); i++) _reduce_scatter_base(outputs[i], inputs[i], opts);
    return completed(outputs);
  }
  WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                        std::vector<int64_t>& input_splits, const c10d::AllToAllOptions&) override {
    TORCH_CHECK(output_splits.empty() && input_splits.empty(),
                "all_to_all_single: the compiled transport takes equal splits only");
    TORCH_CHECK(input.numel() % size_ == 0 && output.numel() == input.numel(),
                "all_to_all_single: tensors must hold the same multiple of the group size elements");
    at::Tensor out = run(TT_COLL_ALL_TO_ALL, 0, input.reshape({size_, -1}));
    output.copy_(out.view(output.sizes()));
    return completed({output});
  }
  // scatter: every rank's row r of an all_to_all goes to rank r; the root
  // sends its list, the others zeros, and each keeps the root's row (exact).
  WorkPtr scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                  const c10d::ScatterOptions& opts) override {
    TORCH_CHECK(outputs.size() == 1, "scatter: takes one output tensor, got ", outputs.size());
    at::Tensor& out = outputs[0];
    at::Tensor rows;
    if (rank_ == opts.rootRank) {
      TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                  "scatter: the root needs one list of ", size_, " tensors");
      std::vector<at::Tensor> flat;
      for (auto& t : inputs[0]) {
        TORCH_CHECK(t.numel() == out.numel() && t.scalar_type() == out.scalar_type(),
                    "scatter: every input must match the output's size and dtype");
        flat.push_back(t.reshape({1, -1}).to(out.device()));
      }
      rows = at::cat(flat, 0);
    } else {
      rows = at::zeros({size_, out.numel()}, out.options());
    }
    at::Tensor got = run(TT_COLL_ALL_TO_ALL, 0, rows);
    out.copy_(got.select(0, opts.rootRank).view(out.sizes()));
    return completed(outputs);
  }
  // gather: an all_gather whose rows only the root keeps.
  WorkPtr gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                 const c10d::GatherOptions& opts) override {
    TORCH_CHECK(inputs.size() == 1, "gather: takes one input tensor, got ", inputs.size());
    at::Tensor all = run(TT_COLL_ALL_GATHER, 0, inputs[0].reshape({1, -1}));
    if (rank_ != opts.rootRank) return completed({});
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                "gather: the root needs one list of ", size_, " tensors");
    for (int r = 0; r < size_; r++) outputs[0][r].copy_(all.select(0, r).view(outputs[0][r].sizes()));
    return completed(outputs[0]);
  }
  // reduce: an all_reduce whose result only the root keeps.
  WorkPtr reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    for (auto& t : tensors) {
      at::Tensor r = run(TT_COLL_ALL_REDUCE, compiled_reduce(opts.reduceOp), t);
      if (rank_ == opts.rootRank) t.copy_(r);
    }
    return completed(tensors);
  }
  WorkPtr barrier(const c10d::BarrierOptions&) override {
    at::Tensor t = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(
                                      c10::Device(c10::DeviceType::PrivateUse1,
                                                  static_cast<c10::DeviceIndex>(grp_->devices[rank_]))));
    run(TT_COLL_ALL_REDUCE, TT_RED_SUM, t).cpu();
    return completed({});
  }

 private:
  // CPU tensors (barrier, the object collectives, init_process_group("tpu")
  // serving device cpu) go through the rank's device and come back.
  at::Tensor run(int kind, int reduce, const at::Tensor& t) {
    if (t.is_cpu()) {
      c10::Device d(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(grp_->devices[rank_]));
      return coll_run(*grp_, kind, reduce, {}, t.to(d), timeout_s_).cpu();
    }
    return coll_run(*grp_, kind, reduce, {}, t, timeout_s_);
  }
  std::shared_ptr<CollGroup> grp_;
  double timeout_s_;
};

}  // namespace

void register_collectives(py::module_& m) {
  py::class_<CollGroup, std::shared_ptr<CollGroup>>(m, "_CollGroup")
      .def(py::init([](const std::vector<int>& devices) {
             ensure_initialized();
             auto grp = std::make_shared<CollGroup>();
             grp->devices = devices;
             raise_if_error(tt_coll_group_new(tt_core_runtime(), devices.data(),
                                              static_cast<int>(devices.size()), &grp->g));
             return grp;
           }),
           py::arg("devices"))
      .def_readonly("devices", &CollGroup::devices)
      .def("run", &coll_run, py::arg("kind"), py::arg("reduce"), py::arg("pairs"),
           py::arg("tensor"), py::arg("timeout"))
      .def("run_program", &coll_run_program, py::arg("what"), py::arg("text"), py::arg("tensors"),
           py::arg("num_outputs"), py::arg("timeout"));
  m.def("_register_compiled_backend", [](py::module_ self) {
    // after torch.distributed is imported (its Backend class must exist)
    py::module_::import("torch.distributed");
    py::class_<TpuCompiledBackend, c10d::Backend, c10::intrusive_ptr<TpuCompiledBackend>>(
        self, "_TpuCompiledBackend")
        .def(py::init([](std::shared_ptr<CollGroup> grp, int rank, int size, double timeout) {
               return c10::make_intrusive<TpuCompiledBackend>(std::move(grp), rank, size, timeout);
             }),
             py::arg("group"), py::arg("rank"), py::arg("size"), py::arg("timeout"))
        .def_property_readonly("devices", &TpuCompiledBackend::devices);
  });
  m.def("_coll_stats", []() {
    tt_coll_stats s = tt_coll_get_stats();
    py::dict d;
    d["launches"] = s.launches;
    d["compiles"] = s.compiles;
    d["errors"] = s.errors;
    d["launch_seconds"] = s.launch_seconds;
    d["programs"] = s.programs;
    d["host_flushes"] = g_host_flushes.load();
    d["compiled_flushes"] = g_compiled_flushes.load();
    return d;
  });
  m.def(
      "_coll_flush_for_collective",
      [](const at::Tensor& t, const std::string& transport) {
        TORCH_CHECK(transport == "host" || transport == "compiled",
                    "transport must be 'host' or 'compiled', got '", transport, "'");
        collective_flush(t, transport == "host");
      },
      py::arg("tensor"), py::arg("transport"));
}

}  // namespace torch_tpu
