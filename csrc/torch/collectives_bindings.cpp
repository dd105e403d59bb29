// The boundary of the compiled collectives (csrc/dist/collectives.c): a
// group object over client devices, and one call per rank that hands the
// core its tensor's flat device buffer and wraps the result. Used by
// torch_tpu/distributed_threads.py (ranks as threads of one process).
#include <torch/extension.h>

#include <vector>

#include "torch/bridge.h"

extern "C" {
#include "dist/collectives.h"
#include "graph/core.h"
}

namespace torch_tpu {
namespace {

struct CollGroup {
  tt_coll_group* g = nullptr;
  std::vector<int> devices;
  ~CollGroup() { tt_coll_group_free(g); }
};

at::Tensor coll_run(CollGroup& grp, int kind, int reduce, const std::vector<int>& pairs,
                    const at::Tensor& t, double timeout_s) {
  TORCH_CHECK(kind >= 0 && kind < TT_COLL_COUNT, "compiled collectives: unknown collective ", kind);
  const char* name = tt_coll_kind_name(static_cast<tt_coll_kind>(kind));
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
  // The core reads the tensor's elements as one flat row-major buffer: a
  // storage holding exactly this contiguous tensor (else a copy) has one.
  at::Tensor c = t.contiguous();
  if (c.storage_offset() != 0 ||
      c.storage().nbytes() != static_cast<size_t>(c.numel()) * c.element_size())
    c = c.clone(at::MemoryFormat::Contiguous);
  tt_buffer* buf = nullptr;
  raise_if_error(tt_storage_ensure(storage_of(c), dt, &buf));
  tt_buffer_retain(buf);
  std::vector<int64_t> dims(c.sizes().begin(), c.sizes().end());
  int64_t out_dims[TT_MAX_DIMS];
  tt_buffer* out = nullptr;
  tt_error* err;
  {
    py::gil_scoped_release no_gil;
    err = tt_coll_run(grp.g, rank, &op, buf, dims.data(), static_cast<int>(dims.size()), timeout_s,
                      &out, out_dims);
  }
  tt_buffer_release(buf);
  raise_if_error(err);
  return wrap_buffer(out, dt, static_cast<int>(dims.size()), out_dims,
                     static_cast<c10::DeviceIndex>(device));
}

}  // namespace

void register_collectives(py::module_& m) {
  py::class_<CollGroup>(m, "_CollGroup")
      .def(py::init([](const std::vector<int>& devices) {
             ensure_initialized();
             auto grp = std::make_unique<CollGroup>();
             grp->devices = devices;
             raise_if_error(tt_coll_group_new(tt_core_runtime(), devices.data(),
                                              static_cast<int>(devices.size()), &grp->g));
             return grp;
           }),
           py::arg("devices"))
      .def_readonly("devices", &CollGroup::devices)
      .def("run", &coll_run, py::arg("kind"), py::arg("reduce"), py::arg("pairs"),
           py::arg("tensor"), py::arg("timeout"));
  m.def("_coll_stats", []() {
    tt_coll_stats s = tt_coll_get_stats();
    py::dict d;
    d["launches"] = s.launches;
    d["compiles"] = s.compiles;
    d["errors"] = s.errors;
    d["launch_seconds"] = s.launch_seconds;
    return d;
  });
}

}  // namespace torch_tpu
