// What the compiled collectives' boundary (collectives_bindings.cpp) offers
// the other transports of the c10d backend.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <vector>

extern "C" {
#include "pjrt/runtime.h"
}

namespace torch_tpu {

// A collective is about to read tpu tensor t (a cpu tensor: nothing): when
// t's value is pending in the open Fused region, the region is flushed now
// (flush reason "collective") and the flush is counted for the transport
// (torch_tpu.distributed_threads.stats(): host_flushes, compiled_flushes).
// The host transport calls it on each tpu tensor it stages, before the
// staging read; the compiled transport before it hands a buffer to the core.
void collective_flush(const at::Tensor& t, bool host_transport);

// The tensor's elements as one flat row-major device buffer, as the compiled
// collectives read them: `keep` becomes t when its storage holds exactly this
// contiguous tensor, else a contiguous copy (kept alive by the caller); a
// pending Fused value is flushed first (counted for the compiled transport).
// Returns a new reference, released once the launch that reads it is enqueued.
tt_buffer* collective_input_buffer(const at::Tensor& t, at::Tensor& keep);

// A c10d Work that is already complete, holding `outputs` (the transports
// finish each call before returning).
c10::intrusive_ptr<c10d::Work> completed_work(std::vector<at::Tensor> outputs);

// c10d's reduction as the core's tt_coll_reduce code; `backend` names the
// caller in the error for an unsupported one.
int reduce_code(const c10d::ReduceOp& op, const char* backend);

}  // namespace torch_tpu
