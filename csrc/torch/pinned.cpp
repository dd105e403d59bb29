// Pinned host memory for tpu: the allocator behind `tensor.pin_memory()`,
// `DataLoader(pin_memory=True)` and the CPU destination of
// `tpu_tensor.to("cpu", non_blocking=True)`, which PyTorch allocates pinned
// whenever the source is on the current accelerator. PJRT plugins copy host
// buffers themselves (the runtime uploads with host-buffer semantics
// "immutable only during the call"), so page-locking buys nothing on the
// CPU plugin; what PyTorch needs is an allocator whose blocks it can
// recognise as pinned (`is_pinned()`), which this is: 64-byte aligned host
// blocks, each recorded until it is freed.
#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "torch/pinned.h"

namespace torch_tpu {

namespace {

std::mutex pinned_mutex;
std::map<const char*, size_t> pinned_blocks;  // start -> size, guarded by pinned_mutex

void free_pinned(void* ptr) {
  if (!ptr) return;
  {
    std::lock_guard<std::mutex> lock(pinned_mutex);
    pinned_blocks.erase(static_cast<const char*>(ptr));
  }
  std::free(ptr);
}

struct PinnedAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* ptr = nullptr;
    if (nbytes) {
      size_t rounded = (nbytes + 63) / 64 * 64;
      ptr = std::aligned_alloc(64, rounded);
      TORCH_CHECK_WITH(OutOfMemoryError, ptr, "tpu: out of host memory allocating ", nbytes,
                       " bytes of pinned memory");
      std::lock_guard<std::mutex> lock(pinned_mutex);
      pinned_blocks[static_cast<const char*>(ptr)] = nbytes;
    }
    return {ptr, ptr, &free_pinned, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

PinnedAllocator pinned_allocator;

}  // namespace

c10::Allocator* pinned_host_allocator() { return &pinned_allocator; }

bool is_pinned_host_ptr(const void* ptr) {
  const char* p = static_cast<const char*>(ptr);
  std::lock_guard<std::mutex> lock(pinned_mutex);
  auto it = pinned_blocks.upper_bound(p);
  if (it == pinned_blocks.begin()) return false;
  --it;
  return p < it->first + (it->second ? it->second : 1);
}

}  // namespace torch_tpu
