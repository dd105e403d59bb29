// The c10d Backend of device `tpu` (torch.distributed backend "tpu"), host
// transport: every collective stages its tpu tensors through host memory and
// runs on an inner gloo Backend built by torch_tpu/distributed.py from the
// same Store under its own prefix (no networking of our own). Results are
// written back into the caller's tensors with copy_, so in-place collectives
// on views and non-contiguous tensors write the user's storage.
//
// Each call runs to completion before it returns (the staging reads flush a
// Fused region, the gloo work is waited for, the results are copied back),
// and returns a Work wrapping an already completed Future whose value is the
// output tensors (what DDP's comm hooks and functional collectives read).
// CPU tensors (init_process_group("tpu") also serves device cpu, so that
// barrier and CPU objects work) go to gloo directly when contiguous.
#include <torch/extension.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include "torch/collectives_bindings.h"

extern "C" {
#include "core/settings.h"
#include "core/trace.h"
}

namespace torch_tpu {
namespace {

using c10d::Work;
using WorkPtr = c10::intrusive_ptr<Work>;

std::atomic<int64_t> g_staged_collectives{0};
std::atomic<int64_t> g_staged_bytes{0};
std::atomic<int64_t> g_checks_run{0};      // cross-rank checks exchanged
std::atomic<int64_t> g_checks_skipped{0};  // calls whose signature was checked before (level 1)

// One tensor of a collective as gloo sees it: `host` is `user` itself when
// that is a contiguous CPU tensor, else a contiguous host copy written back
// into `user` afterwards.
struct Staged {
  at::Tensor user;
  at::Tensor host;
  bool direct;
};

Staged stage_in(const at::Tensor& t) {
  if (t.is_cpu() && t.is_contiguous()) return {t, t, true};
  if (!t.is_cpu()) collective_flush(t, /*host_transport=*/true);  // counted as a collective's flush
  at::Tensor h = t.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
  g_staged_bytes += static_cast<int64_t>(h.nbytes());
  return {t, h, false};
}

// Staging for an output whose contents are not read: a host buffer only.
Staged stage_out(const at::Tensor& t) {
  if (t.is_cpu() && t.is_contiguous()) return {t, t, true};
  return {t, at::empty(t.sizes(), t.options().device(at::kCPU)), false};
}

void write_back(const Staged& s) {
  if (s.direct) return;
  s.user.copy_(s.host);
  g_staged_bytes += static_cast<int64_t>(s.host.nbytes());
}

WorkPtr completed(std::vector<at::Tensor> outputs) { return completed_work(std::move(outputs)); }

// The first line of an exception's message (gloo's carry a C++ backtrace).
std::string first_line(const std::exception& e) {
  std::string m = e.what();
  size_t nl = m.find('\n');
  return nl == std::string::npos ? m : m.substr(0, nl);
}

// A stable 32-bit name hash (FNV-1a): the same in every process.
int64_t name_hash(const char* s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ static_cast<uint8_t>(*s)) * 16777619u;
  return static_cast<int64_t>(h);
}

std::string describe_shape(int64_t dtype, int64_t ndim, const int64_t* dims, int64_t max_dims) {
  std::string s = std::string(c10::toString(static_cast<at::ScalarType>(dtype))) + "[";
  for (int64_t d = 0; d < ndim && d < max_dims; d++) s += (d ? ", " : "") + std::to_string(dims[d]);
  return s + (ndim > max_dims ? ", ...]" : "]");
}

std::vector<at::Tensor> hosts(const std::vector<Staged>& v) {
  std::vector<at::Tensor> out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(s.host);
  return out;
}

// torch_tpu.profiler: a collective's span on the calling thread's
// "collectives" track (op, rank, group size, bytes per rank, the tensor),
// with its phases nested in it: "shape check (gloo)" (the fingerprint
// handshake), "stage to host", "gloo <op>", "copy back". Off, the
// constructor's one atomic load is the whole cost.
class CollTrace {
 public:
  explicit CollTrace(const char* op) : op_(op) {
    if (tt_trace_on()) t0_ = p0_ = tt_trace_now_us();
  }
  // Ends the phase that began at the previous mark (or the start).
  void phase(const char* name) {
    if (t0_ < 0) return;
    if (tt_trace_on()) tt_trace_end("collectives", name, p0_, op_);
    p0_ = tt_trace_now_us();
  }
  void gloo() {
    if (t0_ >= 0) phase(("gloo " + std::string(op_)).c_str());
  }
  void done(int rank, int size, const std::vector<at::Tensor>& ins) {
    if (t0_ < 0 || !tt_trace_on()) return;
    int64_t bytes = 0;
    for (const auto& t : ins) bytes += static_cast<int64_t>(t.numel() * t.element_size());
    std::string shape = "none";
    if (!ins.empty()) {
      shape = std::string(c10::toString(ins[0].scalar_type())) + "[";
      for (int64_t d = 0; d < ins[0].dim(); d++) shape += (d ? "," : "") + std::to_string(ins[0].size(d));
      shape += "]";
    }
    char detail[160];
    snprintf(detail, sizeof detail, "transport=host rank=%d group=%d bytes=%lld tensor=%s", rank, size,
             static_cast<long long>(bytes), shape.c_str());
    tt_trace_end("collectives", op_, t0_, detail);
  }

 private:
  const char* op_;
  double t0_ = -1, p0_ = -1;
};

// AVG is not a gloo reduction: it runs as SUM and divides by the group size
// (integers: truncating division, as NCCL's average does).
bool take_avg(c10d::ReduceOp& op, const at::Tensor& sample) {
  if (op.op_ == c10d::ReduceOp::AVG) {
    TORCH_CHECK(sample.scalar_type() != at::kBool,
                "tpu backend: ReduceOp.AVG is not defined for bool tensors");
    op = c10d::ReduceOp(c10d::ReduceOp::SUM);
    return true;
  }
  TORCH_CHECK(op.op_ != c10d::ReduceOp::PREMUL_SUM && op.op_ != c10d::ReduceOp::UNUSED,
              "tpu backend: unsupported reduce op");
  return false;
}

void divide(at::Tensor& host, int size) {
  if (at::isFloatingType(host.scalar_type()) || at::isComplexType(host.scalar_type()))
    host.div_(size);
  else
    host.copy_(host.div(size, "trunc"));
}

class TpuHostBackend : public c10d::Backend {
 public:
  TpuHostBackend(c10::intrusive_ptr<c10d::Backend> inner, int rank, int size)
      : c10d::Backend(rank, size),
        inner_(std::move(inner)),
        checks_(static_cast<int>(tt_setting_int_or_default(TT_SETTING_DIST_CHECKS))) {}

  const std::string getBackendName() const override { return "tpu"; }

  // gloo aborts the whole process (an uncaught exception on its thread) when
  // ranks exchange buffers of different sizes, and waits for its timeout when
  // a send meets no matching recv. So before a collective whose tensors must
  // agree across ranks, the ranks exchange a fixed-size fingerprint (op,
  // reduction, root, dtype, shape; all_to_all's split sizes; a send's and its
  // recv's dtype, size and tag) and all raise the same error, naming the op
  // and each rank's tensor, if they differ. TORCH_TPU_DIST_CHECKS: 0 never,
  // 1 (default) on the first call of each signature in this group, 2 every
  // call.
  //
  // The fingerprints travel as gloo point-to-point messages on tags of their
  // own (kCheckTag and up, numbered per peer), not as a collective: at level
  // 1 a rank whose call is new checks while a rank whose call is not runs
  // the collective itself, and a check collective paired with a data
  // collective would abort in gloo. A message on its own tag instead waits,
  // and the checking rank raises at the group's timeout, naming the op.
  static constexpr int64_t kDims = 6;
  enum : int64_t { kOp, kRoot, kDtype, kNdim, kDim0, kNumel = kDim0 + kDims, kTag, kHead };
  static constexpr int kCheckTag = 0x7e000000;  // user tags at and above may collide
  static constexpr uint32_t kCheckTagMask = 0xffffff;
  static constexpr size_t kMaxSeen = 1 << 16;  // signatures remembered per group (level 1)

  int64_t fp_len() const { return kHead + 2 * static_cast<int64_t>(size_); }

  std::vector<int64_t> fingerprint(const char* op, const at::Tensor& t, int64_t root = -1,
                                   int64_t tag = 0) const {
    std::vector<int64_t> fp(static_cast<size_t>(fp_len()), 0);
    fp[kOp] = name_hash(op);
    fp[kRoot] = root;
    fp[kDtype] = static_cast<int64_t>(t.scalar_type());
    fp[kNdim] = t.dim();
    for (int64_t d = 0; d < t.dim() && d < kDims; d++) fp[kDim0 + d] = t.size(d);
    fp[kNumel] = t.numel();
    fp[kTag] = tag;
    return fp;
  }

  // Whether this call checks: level 2 always, 1 when its signature (the
  // fingerprint, which includes the peer or splits) is new in this group.
  bool wants_check(const std::vector<int64_t>& fp) {
    if (checks_ == 0) return false;
    if (checks_ == 2) return true;
    std::string key(reinterpret_cast<const char*>(fp.data()), fp.size() * sizeof(int64_t));
    std::lock_guard<std::mutex> g(mu_);
    if (seen_.count(key)) {
      g_checks_skipped++;
      return false;
    }
    return true;
  }
  void mark_checked(const std::vector<int64_t>& fp) {
    if (checks_ != 1) return;
    std::lock_guard<std::mutex> g(mu_);
    // bounded: every rank forgets at the same count (ranks that agree saw the
    // same signatures in the same order), and checks those signatures again
    if (seen_.size() >= kMaxSeen) seen_.clear();
    seen_.insert(std::string(reinterpret_cast<const char*>(fp.data()), fp.size() * sizeof(int64_t)));
  }

  std::string level_hint() const {
    if (checks_ == 2) return "";
    return checks_ == 1
               ? " (TORCH_TPU_DIST_CHECKS=1 checks each collective signature at its first call "
                 "only: a rank whose call is not new skips the check; TORCH_TPU_DIST_CHECKS=2 "
                 "checks every call)"
               : " (TORCH_TPU_DIST_CHECKS=0: the cross-rank checks are off; 1 or 2 turns them "
                 "on and names the op when the ranks call different collectives)";
  }

  // Sends fp to each peer and receives theirs: row r of the result is rank
  // r's fingerprint (rows of non-peers stay zero).
  at::Tensor exchange(const char* op, const std::vector<int64_t>& fp, const std::vector<int>& peers) {
    g_checks_run++;
    const int64_t len = fp_len();
    at::Tensor all = at::zeros({size_, len}, at::kLong);
    std::memcpy(all[rank_].data_ptr<int64_t>(), fp.data(), static_cast<size_t>(len) * sizeof(int64_t));
    at::Tensor mine = all[rank_].clone();
    std::vector<int> tags;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (seq_.size() != static_cast<size_t>(size_)) seq_.assign(static_cast<size_t>(size_), 0);
      for (int p : peers) tags.push_back(kCheckTag + static_cast<int>(seq_[p]++ & kCheckTagMask));
    }
    std::vector<WorkPtr> recvs, sends;
    for (size_t i = 0; i < peers.size(); i++) {
      std::vector<at::Tensor> r{all[peers[i]]};
      recvs.push_back(inner_->recv(r, peers[i], tags[i]));
    }
    for (size_t i = 0; i < peers.size(); i++) {
      std::vector<at::Tensor> m{mine};
      sends.push_back(inner_->send(m, peers[i], tags[i]));
    }
    for (size_t i = 0; i < peers.size(); i++) {
      try {
        recvs[i]->wait();
      } catch (const std::exception& e) {
        TORCH_CHECK(false, "tpu backend: ", op, ": rank ", peers[i],
                    " did not take part in the cross-rank check of this call (", first_line(e),
                    "): the ranks called different collectives, or that rank stopped responding",
                    level_hint());
      }
    }
    for (auto& w : sends) w->wait();
    return all;
  }

  std::vector<int> others() const {
    std::vector<int> peers;
    for (int r = 0; r < size_; r++)
      if (r != rank_) peers.push_back(r);
    return peers;
  }

  std::string describe(const int64_t* q) const { return describe_shape(q[kDtype], q[kNdim], q + kDim0, kDims); }

  // Collectives whose tensors must agree on every rank (root: the root rank
  // where there is one; reduce: the reduction, folded into the op's hash).
  void check_same(const char* op, const at::Tensor& t, int64_t reduce = -1, int64_t root = -1) {
    if (size_ < 2 || checks_ == 0) return;
    auto fp = fingerprint(op, t, root);
    fp[kTag] = reduce;
    if (!wants_check(fp)) return;
    at::Tensor all = exchange(op, fp, others());
    const int64_t len = fp_len();
    const int64_t* a = all.data_ptr<int64_t>();
    bool differ = false;
    for (int r = 1; r < size_; r++) differ |= !std::equal(a, a + kHead, a + r * len);
    if (!differ) return mark_checked(fp);
    std::string msg = std::string("tpu backend: ") + op +
                      ": the ranks' tensors (or ops) differ; every rank must call the same "
                      "collective with the same dtype and shape:";
    for (int r = 0; r < size_; r++) {
      const int64_t* q = a + r * len;
      msg += " rank " + std::to_string(r) + " has " + describe(q);
      if (q[kOp] != a[kOp] || q[kTag] != a[kTag]) msg += " (a different op or reduction)";
      if (q[kRoot] != a[kRoot]) msg += " (root " + std::to_string(q[kRoot]) + ")";
      msg += r + 1 < size_ ? ";" : "";
    }
    TORCH_CHECK(false, msg);
  }

  // all_to_all: the dtypes and the dims after the first agree, and what
  // rank r sends to rank j (in_counts[j], rows or elements) is what j
  // expects from r (its out_counts[r]).
  void check_alltoall(const char* op, const at::Tensor& sample, const std::vector<int64_t>& in_counts,
                      const std::vector<int64_t>& out_counts) {
    if (size_ < 2 || checks_ == 0) return;
    auto fp = fingerprint(op, sample);
    fp[kDim0] = 0;
    fp[kNumel] = 0;
    for (int j = 0; j < size_; j++) {
      fp[kHead + 2 * j] = in_counts[j];
      fp[kHead + 2 * j + 1] = out_counts[j];
    }
    if (!wants_check(fp)) return;
    at::Tensor all = exchange(op, fp, others());
    const int64_t len = fp_len();
    const int64_t* a = all.data_ptr<int64_t>();
    std::string msg;
    for (int r = 1; r < size_; r++)
      if (!std::equal(a, a + kHead, a + r * len)) {
        msg = std::string("tpu backend: ") + op + ": the ranks' tensors (or ops) differ:";
        for (int q = 0; q < size_; q++)
          msg += " rank " + std::to_string(q) + " has " + describe(a + q * len) +
                 (a[q * len + kOp] != a[kOp] ? " (a different op)" : "") + (q + 1 < size_ ? ";" : "");
        break;
      }
    for (int r = 0; r < size_ && msg.empty(); r++)
      for (int j = 0; j < size_; j++) {
        int64_t sends = a[r * len + kHead + 2 * j], expects = a[j * len + kHead + 2 * r + 1];
        if (sends == expects) continue;
        if (msg.empty())
          msg = std::string("tpu backend: ") + op +
                ": the ranks' split sizes do not match (every rank's input split for rank j "
                "must equal rank j's output split for it):";
        else
          msg += ";";
        msg += " rank " + std::to_string(r) + " sends " + std::to_string(sends) + " to rank " +
               std::to_string(j) + ", which expects " + std::to_string(expects);
      }
    if (msg.empty()) return mark_checked(fp);
    TORCH_CHECK(false, msg);
  }

  // send/recv: the sender and the receiver swap fingerprints; both raise
  // when the dtypes, element counts or tags differ, or both sides send (or
  // both receive).
  void check_p2p(bool sending, const at::Tensor& t, int peer, int tag) {
    if (checks_ == 0) return;
    TORCH_CHECK(tag < kCheckTag, "tpu backend: ", sending ? "send" : "recv", ": tag ", tag,
                " is reserved for the backend's cross-rank checks (use tags below ", kCheckTag, ")");
    auto fp = fingerprint(sending ? "send" : "recv", t, peer, tag);
    if (!wants_check(fp)) return;
    const char* op = sending ? "send" : "recv";
    at::Tensor all = exchange(op, fp, {peer});
    const int64_t len = fp_len();
    const int64_t* m = all.data_ptr<int64_t>() + rank_ * len;
    const int64_t* o = all.data_ptr<int64_t>() + peer * len;
    bool ok = o[kOp] == name_hash(sending ? "recv" : "send") && o[kDtype] == m[kDtype] &&
              o[kNumel] == m[kNumel] && o[kTag] == m[kTag];
    if (ok) return mark_checked(fp);
    auto side = [&](int r, const int64_t* q) {
      bool s = q[kOp] == name_hash("send");
      return "rank " + std::to_string(r) + (s ? " sends " : " receives ") + describe(q) +
             (s ? " to rank " : " from rank ") + std::to_string(q[kRoot]) + " with tag " +
             std::to_string(q[kTag]);
    };
    int a = sending ? rank_ : peer, b = sending ? peer : rank_;
    const int64_t* qa = sending ? m : o;
    const int64_t* qb = sending ? o : m;
    TORCH_CHECK(false, "tpu backend: send/recv: the two sides differ (dtype, element count, tag, or "
                "both send or both receive): ", side(a, qa), "; ", side(b, qb));
  }

  void set_checks(int level) {
    TORCH_CHECK(level >= 0 && level <= 2, "tpu backend: checks must be 0, 1 or 2, got ", level);
    checks_ = level;
  }
  int checks() const { return checks_; }
  std::string reason() const {
    std::lock_guard<std::mutex> g(mu_);
    return reason_;
  }
  void set_reason(const std::string& r) {
    std::lock_guard<std::mutex> g(mu_);
    reason_ = r;
  }

  void wait_inner(const WorkPtr& w) {
    g_staged_collectives++;
    if (!w) return;
    try {
      w->wait();
    } catch (const std::exception& e) {
      if (checks_ == 2) throw;
      TORCH_CHECK(false, e.what(), level_hint());
    }
  }

  c10::intrusive_ptr<c10d::Backend> inner() const { return inner_; }

  void setTimeout(std::chrono::milliseconds timeout) override { inner_->setTimeout(timeout); }
  void setSequenceNumberForGroup() override { inner_->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override { return inner_->getSequenceNumberForGroup(); }
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override {
    inner_->monitoredBarrier(opts, wait_all_ranks);
  }

  WorkPtr broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override {
    TORCH_CHECK(!tensors.empty(), "tpu backend: broadcast of no tensors");
    CollTrace tr("broadcast");
    check_same("broadcast", tensors[0], -1, opts.rootRank);
    tr.phase("shape check (gloo)");
    std::vector<Staged> s;
    for (auto& t : tensors) s.push_back(stage_in(t));
    auto h = hosts(s);
    tr.phase("stage to host");
    wait_inner(inner_->broadcast(h, opts));
    tr.gloo();
    for (auto& x : s) write_back(x);
    tr.phase("copy back");
    tr.done(rank_, size_, tensors);
    return completed(tensors);
  }

  WorkPtr allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override {
    TORCH_CHECK(!tensors.empty(), "tpu backend: allreduce of no tensors");
    c10d::AllreduceOptions o = opts;
    CollTrace tr("all_reduce");
    check_same("all_reduce", tensors[0], static_cast<int64_t>(opts.reduceOp.op_));
    tr.phase("shape check (gloo)");
    bool avg = take_avg(o.reduceOp, tensors[0]);
    std::vector<Staged> s;
    for (auto& t : tensors) s.push_back(stage_in(t));
    auto h = hosts(s);
    tr.phase("stage to host");
    wait_inner(inner_->allreduce(h, o));
    tr.gloo();
    for (auto& x : s) {
      if (avg) divide(x.host, size_);
      write_back(x);
    }
    tr.phase("copy back");
    tr.done(rank_, size_, tensors);
    return completed(tensors);
  }

  WorkPtr allreduce_coalesced(std::vector<at::Tensor>& tensors,
                              const c10d::AllreduceCoalescedOptions& opts) override {
    for (auto& t : tensors) {
      std::vector<at::Tensor> one{t};
      allreduce(one, opts);
    }
    return completed(tensors);
  }

  WorkPtr reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    TORCH_CHECK(!tensors.empty(), "tpu backend: reduce of no tensors");
    check_same("reduce", tensors[0], static_cast<int64_t>(opts.reduceOp.op_), opts.rootRank);
    c10d::ReduceOptions o = opts;
    bool avg = take_avg(o.reduceOp, tensors[0]);
    std::vector<Staged> s;
    for (auto& t : tensors) s.push_back(stage_in(t));
    auto h = hosts(s);
    wait_inner(inner_->reduce(h, o));
    if (rank_ == opts.rootRank) {
      for (auto& x : s) {
        if (avg) divide(x.host, size_);
        write_back(x);
      }
    }
    return completed(tensors);
  }

  // Lists of outputs per input (all_gather, gather): stage every tensor
  // through host memory, run the inner collective, copy results back.
  template <typename Run>
  WorkPtr staged_lists(std::vector<std::vector<at::Tensor>>& outputs,
                       std::vector<at::Tensor>& inputs, Run run, CollTrace& tr) {
    std::vector<Staged> in;
    for (auto& t : inputs) in.push_back(stage_in(t));
    std::vector<std::vector<Staged>> out(outputs.size());
    std::vector<std::vector<at::Tensor>> out_h(outputs.size());
    for (size_t i = 0; i < outputs.size(); i++) {
      for (auto& t : outputs[i]) out[i].push_back(stage_out(t));
      out_h[i] = hosts(out[i]);
    }
    auto in_h = hosts(in);
    tr.phase("stage to host");
    wait_inner(run(out_h, in_h));
    tr.gloo();
    std::vector<at::Tensor> result;
    for (auto& list : out)
      for (auto& x : list) {
        write_back(x);
        result.push_back(x.user);
      }
    tr.phase("copy back");
    tr.done(rank_, size_, inputs);
    return completed(result);
  }

  WorkPtr allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                    const c10d::AllgatherOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(),
                "tpu backend: allgather needs one output list per input tensor");
    TORCH_CHECK(!inputs.empty(), "tpu backend: allgather of no tensors");
    CollTrace tr("all_gather");
    check_same("all_gather", inputs[0]);
    tr.phase("shape check (gloo)");
    return staged_lists(outputs, inputs, [&](std::vector<std::vector<at::Tensor>>& o,
                                             std::vector<at::Tensor>& i) {
      return inner_->allgather(o, i, opts);
    }, tr);
  }

  WorkPtr _allgather_base(at::Tensor& output, at::Tensor& input,
                          const c10d::AllgatherOptions& opts) override {
    CollTrace tr("all_gather_into_tensor");
    check_same("all_gather_into_tensor", input);
    tr.phase("shape check (gloo)");
    TORCH_CHECK(output.numel() == input.numel() * size_,
                "tpu backend: all_gather_into_tensor: output has ", output.numel(),
                " elements, expected ", input.numel() * size_, " (input times world size)");
    Staged in = stage_in(input);
    Staged out = stage_out(output);
    tr.phase("stage to host");
    wait_inner(inner_->_allgather_base(out.host, in.host, opts));
    tr.gloo();
    write_back(out);
    tr.phase("copy back");
    tr.done(rank_, size_, {input});
    return completed({output});
  }

  WorkPtr allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                              std::vector<at::Tensor>& inputs,
                              const c10d::AllgatherOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(),
                "tpu backend: allgather_coalesced needs one output list per input tensor");
    std::vector<at::Tensor> result;
    for (size_t i = 0; i < inputs.size(); i++) {
      std::vector<std::vector<at::Tensor>> o{outputs[i]};
      std::vector<at::Tensor> in{inputs[i]};
      allgather(o, in, opts);
      for (auto& t : outputs[i]) result.push_back(t);
    }
    return completed(result);
  }

  WorkPtr allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllgatherOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(),
                "tpu backend: allgather_into_tensor_coalesced needs as many outputs as inputs");
    for (size_t i = 0; i < inputs.size(); i++) _allgather_base(outputs[i], inputs[i], opts);
    return completed(outputs);
  }

  WorkPtr gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                 const c10d::GatherOptions& opts) override {
    CollTrace tr("gather");
    TORCH_CHECK(!inputs.empty(), "tpu backend: gather of no tensors");
    check_same("gather", inputs[0], -1, opts.rootRank);
    tr.phase("shape check (gloo)");
    return staged_lists(outputs, inputs, [&](std::vector<std::vector<at::Tensor>>& o,
                                             std::vector<at::Tensor>& i) {
      return inner_->gather(o, i, opts);
    }, tr);
  }

  WorkPtr scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                  const c10d::ScatterOptions& opts) override {
    TORCH_CHECK(!outputs.empty(), "tpu backend: scatter of no tensors");
    check_same("scatter", outputs[0], -1, opts.rootRank);
    std::vector<Staged> out;
    for (auto& t : outputs) out.push_back(stage_out(t));
    std::vector<std::vector<at::Tensor>> in_h(inputs.size());
    for (size_t i = 0; i < inputs.size(); i++)
      for (auto& t : inputs[i]) in_h[i].push_back(stage_in(t).host);
    auto out_h = hosts(out);
    wait_inner(inner_->scatter(out_h, in_h, opts));
    for (auto& x : out) write_back(x);
    return completed(outputs);
  }

  WorkPtr reduce_scatter(std::vector<at::Tensor>& outputs,
                         std::vector<std::vector<at::Tensor>>& inputs,
                         const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(!outputs.empty() && outputs.size() == inputs.size(),
                "tpu backend: reduce_scatter needs one input list per output tensor");
    c10d::ReduceScatterOptions o = opts;
    check_same("reduce_scatter", outputs[0], static_cast<int64_t>(opts.reduceOp.op_));
    bool avg = take_avg(o.reduceOp, outputs[0]);
    std::vector<Staged> out;
    for (auto& t : outputs) out.push_back(stage_out(t));
    std::vector<std::vector<at::Tensor>> in_h(inputs.size());
    for (size_t i = 0; i < inputs.size(); i++)
      for (auto& t : inputs[i]) in_h[i].push_back(stage_in(t).host);
    auto out_h = hosts(out);
    wait_inner(inner_->reduce_scatter(out_h, in_h, o));
    for (auto& x : out) {
      if (avg) divide(x.host, size_);
      write_back(x);
    }
    return completed(outputs);
  }

  WorkPtr _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                               const c10d::ReduceScatterOptions& opts) override {
    c10d::ReduceScatterOptions o = opts;
    CollTrace tr("reduce_scatter_tensor");
    check_same("reduce_scatter_tensor", input, static_cast<int64_t>(opts.reduceOp.op_));
    tr.phase("shape check (gloo)");
    TORCH_CHECK(input.numel() == output.numel() * size_,
                "tpu backend: reduce_scatter_tensor: input has ", input.numel(),
                " elements, expected ", output.numel() * size_, " (output times world size)");
    bool avg = take_avg(o.reduceOp, output);
    Staged in = stage_in(input);
    Staged out = stage_out(output);
    tr.phase("stage to host");
    wait_inner(inner_->_reduce_scatter_base(out.host, in.host, o));
    tr.gloo();
    if (avg) divide(out.host, size_);
    write_back(out);
    tr.phase("copy back");
    tr.done(rank_, size_, {input});
    return completed({output});
  }

  WorkPtr reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(),
                "tpu backend: reduce_scatter_tensor_coalesced needs as many outputs as inputs");
    for (size_t i = 0; i < inputs.size(); i++) _reduce_scatter_base(outputs[i], inputs[i], opts);
    return completed(outputs);
  }

  WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                        std::vector<int64_t>& input_splits,
                        const c10d::AllToAllOptions& opts) override {
    {
      // rows of dim 0 per peer; no splits: equal blocks
      auto counts = [&](const std::vector<int64_t>& splits, const at::Tensor& t) {
        if (!splits.empty()) {
          TORCH_CHECK(splits.size() == static_cast<size_t>(size_), "tpu backend: all_to_all_single: ",
                      splits.size(), " split sizes for a group of ", size_);
          return splits;
        }
        TORCH_CHECK(t.dim() > 0 && t.size(0) % size_ == 0, "tpu backend: all_to_all_single: dim 0 (",
                    t.dim() ? t.size(0) : 0, ") does not divide into ", size_, " equal splits");
        return std::vector<int64_t>(static_cast<size_t>(size_), t.size(0) / size_);
      };
      check_alltoall("all_to_all_single", input, counts(input_splits, input), counts(output_splits, output));
    }
    Staged in = stage_in(input);
    Staged out = stage_out(output);
    wait_inner(inner_->alltoall_base(out.host, in.host, output_splits, input_splits, opts));
    write_back(out);
    return completed({output});
  }

  // gloo's list all_to_all needs equal sizes; ours takes any sizes (as NCCL's
  // does) by packing the lists into flat buffers for one uneven alltoall_base.
  WorkPtr alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                   const c10d::AllToAllOptions& opts) override {
    TORCH_CHECK(outputs.size() == static_cast<size_t>(size_) &&
                    inputs.size() == static_cast<size_t>(size_),
                "tpu backend: all_to_all needs one input and one output tensor per rank (",
                size_, "), got ", inputs.size(), " and ", outputs.size());
    std::vector<at::Tensor> flat_in;
    std::vector<int64_t> in_splits, out_splits;
    for (auto& t : inputs) {
      TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type() &&
                      t.scalar_type() == outputs[0].scalar_type(),
                  "tpu backend: all_to_all tensors must share one dtype");
      flat_in.push_back(stage_in(t).host.reshape({-1}));
      in_splits.push_back(t.numel());
    }
    int64_t total_out = 0;
    for (auto& t : outputs) {
      out_splits.push_back(t.numel());
      total_out += t.numel();
    }
    check_alltoall("all_to_all", inputs[0], in_splits, out_splits);
    at::Tensor in_h = at::cat(flat_in);
    at::Tensor out_h = at::empty({total_out}, in_h.options());
    // gloo moves the split vectors it is given: hand it copies
    std::vector<int64_t> out_counts = out_splits, in_counts = in_splits;
    wait_inner(inner_->alltoall_base(out_h, in_h, out_counts, in_counts, opts));
    int64_t offset = 0;
    for (size_t i = 0; i < outputs.size(); i++) {
      outputs[i].copy_(out_h.narrow(0, offset, out_splits[i]).view(outputs[i].sizes()));
      offset += out_splits[i];
    }
    return completed(outputs);
  }

  WorkPtr send(std::vector<at::Tensor>& tensors, int dst, int tag) override {
    TORCH_CHECK(tensors.size() == 1, "tpu backend: send takes one tensor");
    check_p2p(true, tensors[0], dst, tag);
    std::vector<Staged> s;
    for (auto& t : tensors) s.push_back(stage_in(t));
    auto h = hosts(s);
    wait_inner(inner_->send(h, dst, tag));
    return completed(tensors);
  }

  WorkPtr recv(std::vector<at::Tensor>& tensors, int src, int tag) override {
    TORCH_CHECK(tensors.size() == 1, "tpu backend: recv takes one tensor");
    check_p2p(false, tensors[0], src, tag);
    std::vector<Staged> s;
    for (auto& t : tensors) s.push_back(stage_out(t));
    auto h = hosts(s);
    wait_inner(inner_->recv(h, src, tag));
    for (auto& x : s) write_back(x);
    return completed(tensors);
  }

  WorkPtr recvAnysource(std::vector<at::Tensor>& tensors, int tag) override {
    std::vector<Staged> s;
    for (auto& t : tensors) s.push_back(stage_out(t));
    auto h = hosts(s);
    WorkPtr w = inner_->recvAnysource(h, tag);
    wait_inner(w);
    for (auto& x : s) write_back(x);
    return completed(tensors);
  }

  WorkPtr barrier(const c10d::BarrierOptions& opts) override {
    c10d::BarrierOptions o = opts;
    o.device = std::nullopt;  // gloo's barrier runs on the host whatever the device
    wait_inner(inner_->barrier(o));
    return completed({});
  }

 private:
  c10::intrusive_ptr<c10d::Backend> inner_;
  std::atomic<int> checks_;
  mutable std::mutex mu_;                 // guards seen_, seq_ and reason_
  std::string reason_;                    // why this group is not on the compiled transport
  std::unordered_set<std::string> seen_;  // signatures checked (level 1)
  std::vector<uint32_t> seq_;             // check messages exchanged per peer (tags)
};

}  // namespace

void register_dist_procs(py::module_& m);  // dist_procs_bindings.cpp

void register_c10d(py::module_& m) {
  // Called from torch_tpu/distributed.py after torch.distributed is imported
  // (torch._C registers its c10d classes then, and ours derives from them).
  py::module_::import("torch.distributed");
  py::class_<TpuHostBackend, c10d::Backend, c10::intrusive_ptr<TpuHostBackend>>(m, "_TpuHostBackend")
      .def(py::init([](const c10::intrusive_ptr<c10d::Backend>& inner, int rank, int size) {
             TORCH_CHECK(inner, "tpu backend: no inner host backend");
             return c10::make_intrusive<TpuHostBackend>(inner, rank, size);
           }),
           py::arg("inner"), py::arg("rank"), py::arg("size"))
      .def_property_readonly("inner", &TpuHostBackend::inner)
      // TORCH_TPU_DIST_CHECKS of this group (0, 1, 2): read at creation, settable
      .def_property("checks", &TpuHostBackend::checks, &TpuHostBackend::set_checks)
      // why the group runs on this transport (set by torch_tpu/distributed.py)
      .def_property("reason", &TpuHostBackend::reason, &TpuHostBackend::set_reason);
  register_dist_procs(m);
  m.def("_c10d_stats", []() {
    py::dict d;
    d["staged_collectives"] = g_staged_collectives.load();
    d["staged_bytes"] = g_staged_bytes.load();
    d["checks_run"] = g_checks_run.load();
    d["checks_skipped"] = g_checks_skipped.load();
    return d;
  });
}

}  // namespace torch_tpu
