// Device state at the boundary: lazy plugin loading, the current device,
// the device guard, and the PrivateUse1 hooks.
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include <mutex>

#include "torch/bridge.h"
#include "torch/pinned.h"

extern "C" {
#include "graph/core.h"
#include "graph/device_checks.h"
}

namespace torch_tpu {

namespace {
std::mutex search_dirs_mutex;
std::vector<std::string> search_dirs;  // guarded by search_dirs_mutex
thread_local c10::DeviceIndex current_index = 0;
}  // namespace

void set_search_dirs(const std::vector<std::string>& dirs) {
  std::lock_guard<std::mutex> lock(search_dirs_mutex);
  search_dirs = dirs;
}

static tt_error* init_core() {
  std::vector<std::string> dirs;
  {
    std::lock_guard<std::mutex> lock(search_dirs_mutex);
    dirs = search_dirs;
  }
  std::vector<const char*> ptrs;
  for (auto& d : dirs) ptrs.push_back(d.c_str());
  ptrs.push_back(nullptr);
  return tt_core_init(ptrs.data());
}

void ensure_initialized() {
  if (tt_core_initialized()) return;
  raise_if_error(init_core());
}

c10::DeviceIndex device_count_noexcept() {
  if (!tt_core_initialized()) {
    tt_error* err = init_core();
    if (err) {
      TORCH_WARN_ONCE("torch_tpu: no device available: ", tt_error_message(err));
      tt_error_free(err);
      return 0;
    }
  }
  return static_cast<c10::DeviceIndex>(tt_core_device_count());
}

c10::DeviceIndex current_device() { return current_index; }

void set_current_device(c10::DeviceIndex index) {
  ensure_initialized();  // a plugin that cannot load says so, not "invalid device"
  c10::DeviceIndex n = device_count_noexcept();
  TORCH_CHECK(index >= 0 && index < n, "Invalid device tpu:", static_cast<int>(index),
              ": ", static_cast<int>(n), " tpu device(s) available");
  current_index = index;
}

namespace {

struct TpuGuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(c10::DeviceType::PrivateUse1, current_index);
  }
  void setDevice(c10::Device d) const override {
    if (d.index() >= 0) set_current_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0) current_index = d.index();
  }
  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override { return device_count_noexcept(); }
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {
    raise_if_error(tt_runtime_synchronize(tt_core_runtime()));
  }
  void synchronizeDevice(const c10::DeviceIndex) const override {
    raise_if_error(tt_runtime_synchronize(tt_core_runtime()));
    raise_if_error(tt_device_checks_poll());
  }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  void record(void**, const c10::Stream&, const c10::DeviceIndex,
              const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

struct TpuHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count_noexcept() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return tt_core_initialized(); }
  c10::Device getDeviceFromPtr(void*) const override {
    return c10::Device(c10::DeviceType::PrivateUse1, current_index);
  }
  bool isPinnedPtr(const void* ptr) const override { return is_pinned_host_ptr(ptr); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return pinned_host_allocator(); }
  c10::DeviceIndex deviceCount() const override { return device_count_noexcept(); }
  void setCurrentDevice(c10::DeviceIndex d) const override { set_current_device(d); }
  c10::DeviceIndex getCurrentDevice() const override { return current_index; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    c10::DeviceIndex old = current_index;
    set_current_device(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    return exchangeDevice(d);
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    auto* s = static_cast<tt_storage*>(storage.data_ptr().get_context());
    raise_if_error(tt_storage_resize(s, newsize));
    storage.unsafeGetStorageImpl()->set_nbytes(newsize);
  }
};

}  // namespace

void register_hooks() {
  static TpuHooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
}

}  // namespace torch_tpu
