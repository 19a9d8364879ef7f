// Native part of the simulated npu: the PrivateUse1 hooks PyTorch's Python backend API cannot
// provide (pinned host memory, new generators). Kept small on purpose: a later native dispatch
// path builds on this module. Loaded by runtime_shim/native.py.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <torch/extension.h>

namespace runtime_shim {

// Host memory of the simulated device is ordinary memory: "pinned" host tensors come from the
// CPU allocator and are never reported as pinned. Generators are host generators: the device's
// random ops run PyTorch's CPU kernels, which draw from them.
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
  bool isPinnedPtr(const void*) const override { return false; }
  c10::Allocator* getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }
  at::Device getDeviceFromPtr(void*) const override {
    return at::Device(c10::DeviceType::PrivateUse1, 0);
  }
};

void register_hooks() {
  static NpuHooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
}

}  // namespace runtime_shim

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("register_hooks", &runtime_shim::register_hooks,
        "Install the simulated npu's PrivateUse1 hooks (pinned memory, generators)");
}
