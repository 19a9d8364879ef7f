// What the native kernels of the simulated npu share: the per-op record the operator check
// keeps, the scan of a call's tensor arguments, and the steps every kernel takes (count the
// call, present npu tensors to the CPU, give results back as npu tensors).
// npu_dispatch.cpp defines them; npu_typed.cpp builds unboxed kernels from them.
#pragma once

#include <ATen/core/stack.h>
#include <c10/util/SmallVector.h>
#include <torch/extension.h>
#include <torch/library.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace runtime_shim {

inline const c10::DispatchKeySet CPU_KEYS(c10::DispatchKey::CPU);
inline const c10::DispatchKeySet NPU_KEYS(c10::DispatchKey::PrivateUse1);

// What a kernel knows about its op (read from the schema by kernels.py's _Spec).
struct OpInfo {
  std::string name;            // the op's qualified name, as the operator check knows it
  bool view = false;           // view / metadata-only: the CPU kernel runs on the npu tensors
  bool mixed_ok = false;       // tensors of two devices are allowed (copies, CPU index tensors)
  bool precheck = false;       // empty.memory_format: check capacity before the host allocation
  bool typed = false;          // served by an unboxed kernel (npu_typed.cpp)
  bool npu_level = false;      // an NPU-level kernel at the npu's autograd key
  bool route = false;          // attention.py's route for the op, in C++ (npu_attention.cpp)
  std::vector<int> arg_kind;   // per argument: 0 other, 1 tensor, 2 list holding tensors, 3 device
  std::vector<int> ret_alias;  // per return: the argument it aliases, or -1
  pybind11::object counter;    // STATE.op_counts[name], a one-item list
  std::atomic<bool> armed{true};  // the next call goes through the Python hook
  // While armed: 0 sends every call through the hook, else only calls whose first tensor (as
  // the operator check's dtype_label finds it) is not zero-dim and has a dtype in this bit set.
  std::atomic<uint64_t> watched{0};
  std::atomic<int64_t> count{0};  // calls not yet added to counter
};

// A CPU tensor of a thread's pool (npu_dispatch.cpp): lent to one argument of one call at a time.
struct PoolSlot {
  at::Tensor tensor;
  bool busy = false;
};

// What the arguments of one call held.
struct Scan {
  int64_t index = -1;        // device of the first npu tensor
  std::string other;         // another device met (mixed-device error unless allowed)
  int64_t target = -1;       // an explicit npu target device
  bool cpu_target = false;   // an explicit non-npu target device: results stay there
  // the npu arguments' storages, not owned: a kernel's arguments outlive its call (the boxed
  // kernel keeps the ones it replaces on its stack), and a reference count here cost two
  // atomic operations per tensor argument
  c10::SmallVector<c10::StorageImpl*, 4> storages;
  // The CPU tensors lent from this thread's pool (take_cpu, and the boxed kernels' arguments):
  // parked again, without the bytes they showed, when the scan ends.
  c10::SmallVector<PoolSlot*, 4> pooled;

  Scan() = default;
  Scan(const Scan&) = delete;
  Scan& operator=(const Scan&) = delete;
  ~Scan();
};

// How many NPU-level kernels are running in this thread (their calls are not ops a real NPU
// dispatches).
int& npu_level_depth();

// The current npu device of the calling thread (torch.npu.set_device, torch.accelerator, the
// device guard): per thread, as on CUDA and in torch_npu; a new thread starts on device 0.
int64_t current_index();
void set_current_index(int64_t index);

// How many devices the simulation has (set with the memory counters; at least 1).
int64_t device_total();

// Count one call of info's op for the operator check, or send it through the check's Python hook
// (stack[base, base + nargs) holds the call's arguments); neither inside an NPU-level kernel (the
// call is part of that kernel's computation).
void note_call(OpInfo& info, torch::jit::Stack* stack, size_t base, size_t nargs);

// A CPU tensor over the bytes of npu tensor t (noted in scan); other tensors as they are.
at::Tensor to_cpu(const at::Tensor& t, Scan& scan);

// A tensor argument as an unboxed CPU kernel takes it: owned, or borrowed without a reference
// count (a pooled CPU tensor, or the caller's own CPU tensor; both outlive the call). Taking and
// dropping a reference costs two atomic operations per argument.
class CpuArg {
 public:
  explicit CpuArg(at::Tensor owned) : value_(std::move(owned)) {}
  static CpuArg none() { return CpuArg(); }  // an optional tensor argument left out
  static CpuArg borrow(const at::Tensor& t) {
    CpuArg arg(at::Tensor(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reclaim(t.unsafeGetTensorImpl())));
    arg.borrowed_ = true;
    return arg;
  }
  CpuArg(CpuArg&& other) noexcept : value_(std::move(other.value_)), borrowed_(other.borrowed_) {
    other.borrowed_ = false;
  }
  CpuArg(const CpuArg&) = delete;
  CpuArg& operator=(const CpuArg&) = delete;
  CpuArg& operator=(CpuArg&&) = delete;
  ~CpuArg() {
    if (borrowed_) value_->unsafeReleaseTensorImpl();
  }
  at::Tensor& get() { return *value_; }
  const std::optional<at::Tensor>& optional() const { return value_; }

 private:
  CpuArg() = default;
  std::optional<at::Tensor> value_;
  bool borrowed_ = false;
};

// to_cpu for the unboxed kernels: an npu argument over host bytes gets a CPU tensor of this
// thread's pool, re-pointed at its bytes, dtype and geometry (noted in scan, parked when the scan
// ends); a CPU argument is borrowed.
CpuArg take_cpu(const at::Tensor& t, Scan& scan);

// The npu tensor for a CPU kernel's result: over an argument's storage when it returned memory
// of one, else over a new npu storage on device index, counted as device memory.
at::Tensor wrap(const at::Tensor& out, int64_t index, const Scan& scan);
// The same for a result the caller gives up: one only the call holds becomes the npu tensor itself.
at::Tensor wrap(at::Tensor&& out, int64_t index, const Scan& scan);

// The mixed-device error of a call whose tensors are on two devices.
[[noreturn]] void mixed_devices(const Scan& scan);

// Keep info with the registered ops' records (counts flushed, check re-armed, dropped with them).
void add_info(std::shared_ptr<OpInfo> info);

// One NPU level deeper for the lifetime of the object: what runs inside computes an op torch_npu
// dispatches itself, and is not counted as ops.
struct Level {
  Level() { ++npu_level_depth(); }
  ~Level() { --npu_level_depth(); }
  Level(const Level&) = delete;
  Level& operator=(const Level&) = delete;
};

// Count a call of info's op unless an NPU-level kernel is running (its computation, not an op);
// boxed for the operator check's hook only while the check watches the op.
template <class... A>
void note(OpInfo& info, const A&... args) {
  if (npu_level_depth() != 0) return;
  if (!info.armed.load(std::memory_order_relaxed)) {
    info.count.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  torch::jit::Stack stack;
  stack.reserve(sizeof...(A));
  torch::jit::push(stack, args...);
  note_call(info, &stack, 0, sizeof...(A));
}

// Routes: C++ versions of the Python kernels a backend module registers at the npu's autograd
// key (attention.py: SDPA and dropout; rnn.py: the recurrent layers and cells), registered over
// them while the native path serves and withdrawn with it. `counters` maps each name a route
// counts its calls as to that name's counter; add_routes(group) registers a group once.
void add_routes(const std::string& group, const pybind11::dict& counters);
void drop_routes();
std::vector<std::string> route_ops();  // the ops the registered routes serve

// The record of a route counted as `name` (kept with the others by add_info).
std::shared_ptr<OpInfo> route_info(const std::string& name, std::vector<int> arg_kind, const pybind11::dict& counters);

// Each group's registrations (npu_attention.cpp, npu_rnn.cpp): the ops registered in `library`.
std::vector<std::string> add_attention_routes(torch::Library& library, const pybind11::dict& counters);
std::vector<std::string> add_rnn_routes(torch::Library& library, const pybind11::dict& counters);

// The ops npu_typed.cpp has an unboxed kernel for.
std::vector<std::string> typed_op_names();

// Register the unboxed kernel of `qualified` if npu_typed.cpp has one; false when it has none.
bool add_typed_op(torch::Library& library, const std::string& qualified, const std::shared_ptr<OpInfo>& info);

}  // namespace runtime_shim
