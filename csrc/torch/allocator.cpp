// The tpu allocator: a DataPtr whose pointer and context are the core's
// tt_storage handle. Device memory itself is created lazily by the core.
#include <c10/core/Allocator.h>

#include "torch/bridge.h"

namespace torch_tpu {

namespace {

void delete_storage(void* ctx) { tt_storage_drop(static_cast<tt_storage*>(ctx)); }

struct TpuAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    ensure_initialized();
    c10::DeviceIndex device = current_device();
    tt_storage* s = tt_storage_new(device, nbytes);
    TORCH_CHECK_WITH(OutOfMemoryError, s, "torch_tpu: out of host memory allocating a storage");
    return make_data_ptr(s, device);
  }
  c10::DeleterFnPtr raw_deleter() const override { return &delete_storage; }
  void copy_data(void*, const void*, std::size_t) const override {
    TORCH_CHECK(false, "torch_tpu: raw copies between tpu storages are not supported; use copy_()");
  }
};

TpuAllocator allocator;

}  // namespace

c10::DataPtr make_data_ptr(tt_storage* s, c10::DeviceIndex device) {
  return {s, s, &delete_storage, c10::Device(c10::DeviceType::PrivateUse1, device)};
}

c10::Allocator* tpu_allocator() { return &allocator; }

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &allocator);

}  // namespace torch_tpu
