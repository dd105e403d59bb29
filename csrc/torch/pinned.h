// Pinned host memory for tpu (pinned.cpp): the allocator the PrivateUse1
// hooks hand to PyTorch, and the test for blocks it made.
#pragma once

#include <c10/core/Allocator.h>

namespace torch_tpu {

// The allocator of pinned host blocks (never NULL; lives for the process).
c10::Allocator* pinned_host_allocator();

// True when ptr lies inside a live block of pinned_host_allocator().
bool is_pinned_host_ptr(const void* ptr);

}  // namespace torch_tpu
