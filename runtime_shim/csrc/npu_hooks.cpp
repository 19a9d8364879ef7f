// Native part of the simulated npu: the PrivateUse1 hooks PyTorch's Python backend API cannot
// provide (pinned host memory, new generators). The native dispatch path (kernels and device
// memory counters) is npu_dispatch.cpp. Loaded by runtime_shim/backend/native.py.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/extension.h>

#include <mutex>
#include <unordered_set>

namespace runtime_shim {

// Host memory of the simulated device is ordinary memory. "Pinned" host memory is ordinary CPU
// memory too, remembered so that is_pinned() answers true for it (DDP's reducer asserts that
// its pinned buffers are pinned).
class PinnedAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    if (data) {
      std::lock_guard<std::mutex> guard(mutex());
      live().insert(data);
    }
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const final {
    default_copy_data(dest, src, count);
  }
  static bool owns(const void* data) {
    std::lock_guard<std::mutex> guard(mutex());
    return live().count(const_cast<void*>(data)) > 0;
  }

 private:
  static void release(void* data) {
    {
      std::lock_guard<std::mutex> guard(mutex());
      live().erase(data);
    }
    c10::free_cpu(data);
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::unordered_set<void*>& live() {
    static std::unordered_set<void*> s;
    return s;
  }
};

// Generators are host generators: the device's random ops run PyTorch's CPU kernels, which
// draw from them.
struct NpuHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void init() const override {}
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();
  }
  at::Generator getNewGenerator(c10::DeviceIndex) const override {
    return at::detail::createCPUGenerator();
  }
  bool isPinnedPtr(const void* data) const override { return PinnedAllocator::owns(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override {
    static PinnedAllocator allocator;
    return &allocator;
  }
  at::Device getDeviceFromPtr(void*) const override {
    return at::Device(c10::DeviceType::PrivateUse1, 0);
  }
};

void init_dispatch(pybind11::module& m);  // npu_dispatch.cpp

// The device guard, with the answers of PyTorch's Python device guard (torch._C._acc.DeviceGuard:
// device 0, the default stream, events and streams complete at once) but without asking Python
// for the device type on every call: PyTorch consults the guard several times per op and per
// autograd node, and each Python answer takes the GIL.
struct NpuGuard final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device) const override { return getDevice(); }
  c10::Device getDevice() const override { return c10::Device(kType, 0); }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kType, 0));
  }
  c10::Stream getNewStream(c10::Device, int) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kType, 0));
  }
  c10::Stream exchangeStream(c10::Stream) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kType, 0));
  }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  void record(void**, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
};

bool register_guard() {
  if (c10::impl::hasDeviceGuardImpl(c10::DeviceType::PrivateUse1)) return false;
  static NpuGuard guard;
  c10::impl::registerDeviceGuard(c10::DeviceType::PrivateUse1, &guard);
  return true;
}

void register_hooks() {
  static NpuHooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
}

}  // namespace runtime_shim

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("register_hooks", &runtime_shim::register_hooks,
        "Install the simulated npu's PrivateUse1 hooks (pinned memory, generators)");
  m.def("register_guard", &runtime_shim::register_guard,
        "Install the simulated npu's device guard (False when one is already installed)");
  runtime_shim::init_dispatch(m);
}
