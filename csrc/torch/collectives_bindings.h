// What the compiled collectives' boundary (collectives_bindings.cpp) offers
// the other transports of the c10d backend.
#pragma once

#include <ATen/ATen.h>

namespace torch_tpu {

// A collective is about to read tpu tensor t (a cpu tensor: nothing): when
// t's value is pending in the open Fused region, the region is flushed now
// (flush reason "collective") and the flush is counted for the transport
// (torch_tpu.distributed_threads.stats(): host_flushes, compiled_flushes).
// The host transport calls it on each tpu tensor it stages, before the
// staging read; the compiled transport before it hands a buffer to the core.
void collective_flush(const at::Tensor& t, bool host_transport);

}  // namespace torch_tpu
