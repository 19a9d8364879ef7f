// The routes of the native path: C++ versions of the Python kernels that backend modules register
// at the npu's autograd key (attention.py, rnn.py), registered per group over the Python ones while
// the native path serves, and withdrawn with the native kernels (drop_ops calls drop_routes).
#include "npu_native.h"

#include <c10/util/Exception.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace runtime_shim {
namespace {

struct Group {
  std::unique_ptr<torch::Library> library;
  std::vector<std::string> ops;
};

// Registering a route overrides the Python kernel at the same key on purpose: PyTorch's once-per-
// process warning about overriding kernels is not for it (other warnings pass on).
struct OverrideIsIntended final : c10::WarningHandler {
  c10::WarningHandler* next = c10::WarningUtils::get_warning_handler();
  void process(const c10::Warning& warning) override {
    if (warning.msg().find("Overriding a previously registered kernel") == std::string::npos) next->process(warning);
  }
};

std::map<std::string, Group>& groups() {
  static auto* held = new std::map<std::string, Group>();  // never destroyed, as the infos
  return *held;
}

}  // namespace

std::shared_ptr<OpInfo> route_info(const std::string& name, std::vector<int> arg_kind, const pybind11::dict& counters) {
  auto info = std::make_shared<OpInfo>();
  info->name = name;
  info->route = true;
  info->arg_kind = std::move(arg_kind);
  info->counter = counters[pybind11::str(name)];
  add_info(info);
  return info;
}

void add_routes(const std::string& group, const pybind11::dict& counters) {
  // GIL held (called from Python).
  Group& held = groups()[group];
  if (held.library) return;
  OverrideIsIntended handler;
  c10::WarningUtils::WarningHandlerGuard quiet(&handler);
  // no default key: each route names the keys it serves
  auto library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", std::nullopt, __FILE__, __LINE__);
  if (group == "attention") {
    held.ops = add_attention_routes(*library, counters);
  } else if (group == "rnn") {
    held.ops = add_rnn_routes(*library, counters);
  } else {
    TORCH_CHECK(false, "runtime_shim: no native routes for ", group);
  }
  held.library = std::move(library);
}

void drop_routes() {
  // GIL held; the infos go with the others (drop_ops).
  groups().clear();
}

std::vector<std::string> route_ops() {
  std::vector<std::string> ops;
  for (const auto& [name, group] : groups()) ops.insert(ops.end(), group.ops.begin(), group.ops.end());
  return ops;
}

}  // namespace runtime_shim
