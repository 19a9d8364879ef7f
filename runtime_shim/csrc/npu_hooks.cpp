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

int64_t current_index();                // npu_dispatch.cpp: this thread's current npu device
void set_current_index(int64_t index);  // npu_dispatch.cpp
int64_t device_total();                 // npu_dispatch.cpp: the simulated device count

// The device guard, in C++ because PyTorch consults it several times per op and per autograd
// node (PyTorch's Python guard asks Python for the device type on every call, taking the GIL).
// Its device is the calling thread's current npu device, the one torch.npu.set_device sets: so
// torch.accelerator, DeviceGuard and the autograd engine's device threads see what torch.npu
// sees, and a DataLoader's pin-memory thread setting its device moves only its own. Streams and
// events complete at once: every stream is its device's default one.
struct NpuGuard final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device device) const override {
    const c10::Device previous = getDevice();
    if (device.index() != previous.index()) setDevice(device);
    return previous;
  }
  c10::Device getDevice() const override {
    return c10::Device(kType, static_cast<c10::DeviceIndex>(current_index()));
  }
  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.index() >= 0 && device.index() < device_total(), "Invalid device id ",
                static_cast<int>(device.index()), ": the simulated NPU has ", device_total(),
                " devices (set RUNTIME_SHIM_DEVICE_COUNT to change)");
    set_current_index(device.index());
  }
  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.index() >= 0) set_current_index(device.index());
  }
  c10::Stream getStream(c10::Device device) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream getNewStream(c10::Device device, int) const override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream exchangeStream(c10::Stream stream) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, stream.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(device_total());
  }
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
