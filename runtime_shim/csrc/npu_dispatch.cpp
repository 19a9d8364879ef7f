// Native dispatch path of the simulated npu: PrivateUse1 kernels in C++ that hand npu tensors to
// PyTorch's CPU kernels without a Python round trip, and the device-memory counters both paths
// share. Loaded by runtime_shim/backend/native.py; registered by runtime_shim/backend/registration.py.
//
// An npu tensor is a PrivateUse1 tensor whose storage points at host bytes. A kernel here:
//   1. counts the op (the operator check reads the counts; until the check has seen an op, each
//      call goes through its Python hook first);
//   2. replaces each npu tensor argument by a CPU tensor over the same bytes, sizes, strides and
//      offset (for a storage made here, a tensor over the host storage itself);
//   3. redispatches the op to the CPU key;
//   4. gives back, for each result: the npu argument a result aliases (in-place ops), an npu tensor
//      over an input's storage when the CPU kernel returned memory of that input, or else a new npu
//      storage over the fresh CPU result, counted as device memory (out-of-memory at capacity).
// View and metadata-only ops run their CPU kernel on the npu tensors themselves.
// The hottest ops take the same steps in an unboxed kernel (npu_typed.cpp); the rest are boxed.
//
// A composite op torch_npu has a kernel of its own for (matmul, dropout, ...) gets an NPU-level
// kernel at the npu's autograd key: it counts the op as above, then runs PyTorch's C++
// decomposition (what the CPU runs) with the NPU-level depth raised, so that the ops the
// decomposition calls are not counted as ops a real NPU would dispatch.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DefaultDtype.h>
#include <torch/csrc/Storage.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/extension.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>
#include <vector>

#include "npu_native.h"

namespace py = pybind11;

namespace runtime_shim {

// ------------------------------------------------------------------ device memory counters

struct DeviceCounters {
  int64_t allocated = 0;
  int64_t peak_allocated = 0;
  int64_t reserved = 0;
  int64_t peak_reserved = 0;
  int64_t num_allocs = 0;
  int64_t num_frees = 0;
  int64_t capacity = 0;
  int64_t full_capacity = 0;
  bool refusing = false;
  std::string refuse;
};

static std::mutex& mem_mutex() {
  static std::mutex m;
  return m;
}

static std::vector<DeviceCounters>& devices() {
  static std::vector<DeviceCounters> d;
  return d;
}

// The rendering the CUDA/NPU caching allocators use in their out-of-memory text (and allocator.py).
static std::string format_size(int64_t nbytes) {
  const std::pair<const char*, double> units[] = {
      {"GiB", 1024.0 * 1024 * 1024}, {"MiB", 1024.0 * 1024}, {"KiB", 1024.0}};
  char buffer[64];
  for (const auto& unit : units) {
    if (static_cast<double>(nbytes) >= unit.second) {
      std::snprintf(buffer, sizeof(buffer), "%.2f %s", static_cast<double>(nbytes) / unit.second, unit.first);
      return buffer;
    }
  }
  return std::to_string(nbytes) + " bytes";
}

static DeviceCounters& counters(int64_t index) {
  auto& all = devices();
  TORCH_CHECK(index >= 0 && index < static_cast<int64_t>(all.size()), "runtime_shim: no npu:", index);
  return all[index];
}

// Raise the refusal or the NPU out-of-memory error if nbytes more would not fit (lock held).
static void check_locked(int64_t index, const DeviceCounters& d, int64_t nbytes) {
  TORCH_CHECK(!d.refusing, d.refuse);
  if (d.allocated + nbytes > d.capacity) {
    TORCH_CHECK_WITH(OutOfMemoryError, false,
                     "NPU out of memory. Tried to allocate ", format_size(nbytes), " (NPU ", index, "; ",
                     format_size(d.capacity), " total capacity; ", format_size(d.allocated),
                     " already allocated; ", format_size(d.capacity - d.allocated),
                     " free; simulated by runtime_shim)");
  }
}

static void mem_allocate(int64_t index, int64_t nbytes, bool check) {
  std::lock_guard<std::mutex> guard(mem_mutex());
  auto& d = counters(index);
  if (check) check_locked(index, d, nbytes);
  d.allocated += nbytes;
  d.num_allocs += 1;
  if (d.allocated > d.peak_allocated) d.peak_allocated = d.allocated;
  if (d.allocated > d.reserved) {
    d.reserved = d.allocated;
    if (d.reserved > d.peak_reserved) d.peak_reserved = d.reserved;
  }
}

static void mem_release(int64_t index, int64_t nbytes) {
  std::lock_guard<std::mutex> guard(mem_mutex());
  auto& d = counters(index);
  d.allocated -= nbytes;
  d.num_frees += 1;
}

static const char* const FIELDS[] = {"allocated", "peak_allocated", "reserved", "peak_reserved",
                                     "num_allocs", "num_frees", "capacity", "full_capacity"};

static int64_t& field(DeviceCounters& d, int64_t which) {
  switch (which) {
    case 0: return d.allocated;
    case 1: return d.peak_allocated;
    case 2: return d.reserved;
    case 3: return d.peak_reserved;
    case 4: return d.num_allocs;
    case 5: return d.num_frees;
    case 6: return d.capacity;
    case 7: return d.full_capacity;
  }
  TORCH_CHECK(false, "runtime_shim: no memory counter ", which);
}

// ------------------------------------------------------------------ storages

// What a storage made here owns: the host storage whose bytes it stands for, and its accounting.
struct HostContext {
  c10::Storage host;
  int64_t index;
  int64_t nbytes;
};

static void release_host(void* ctx) {
  auto* context = static_cast<HostContext*>(ctx);
  mem_release(context->index, context->nbytes);
  delete context;
}

static void release_view(void* ctx) { delete static_cast<c10::Storage*>(ctx); }

static HostContext* host_context(const c10::Storage& storage) {
  const auto& data = storage.data_ptr();
  return data.get_deleter() == &release_host ? static_cast<HostContext*>(data.get_context()) : nullptr;
}

static void* data_of(const c10::Storage& storage) { return storage.data_ptr().get(); }

// A new npu storage (device index) over host's bytes, counted as device memory.
static c10::Storage npu_storage_over(const c10::Storage& host, int64_t index) {
  const int64_t nbytes = static_cast<int64_t>(host.nbytes());
  mem_allocate(index, nbytes, /*check=*/true);
  c10::DataPtr data(data_of(host), new HostContext{host, index, nbytes}, &release_host,
                    c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index)));
  return c10::Storage(c10::Storage::use_byte_size_t(), nbytes, std::move(data), /*allocator=*/nullptr,
                      /*resizable=*/false);
}

static at::Tensor tensor_on(c10::Storage storage, c10::DispatchKeySet keys, caffe2::TypeMeta dtype,
                            c10::IntArrayRef sizes, c10::IntArrayRef strides, int64_t offset) {
  auto tensor = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), keys, dtype);
  tensor.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides, offset);
  return tensor;
}

// A CPU tensor over the bytes of npu tensor t, with its sizes, strides and offset.
static at::Tensor cpu_view(const at::Tensor& t) {
  const c10::Storage& storage = t.storage();
  if (auto* context = host_context(storage)) {
    return tensor_on(context->host, CPU_KEYS, t.dtype(), t.sizes(), t.strides(), t.storage_offset());
  }
  const size_t needed = t.numel() == 0 ? 0 : (t.storage_offset() + 1) * t.itemsize();
  if (!storage || (data_of(storage) == nullptr && needed > 0)) {
    // A placeholder npu tensor without bytes (PyTorch makes those before set_): no data to share.
    return at::empty(t.sizes(), t.options().device(c10::kCPU));
  }
  // A storage made by the Python path: a CPU storage over the same bytes that keeps it alive.
  c10::DataPtr data(data_of(storage), new c10::Storage(storage), &release_view, c10::Device(c10::kCPU));
  c10::Storage view(c10::Storage::use_byte_size_t(), storage.nbytes(), std::move(data), nullptr, false);
  return tensor_on(std::move(view), CPU_KEYS, t.dtype(), t.sizes(), t.strides(), t.storage_offset());
}

// ------------------------------------------------------------------ kernels

static std::vector<std::shared_ptr<OpInfo>>& infos() {
  // Never destroyed: an OpInfo holds Python objects, which must not be released after exit.
  static auto* all = new std::vector<std::shared_ptr<OpInfo>>();
  return *all;
}

void add_info(std::shared_ptr<OpInfo> info) { infos().push_back(std::move(info)); }

// How many NPU-level kernels (backend/kernels.py npu_level) are running in this thread, mirrored
// from Python: the calls they make are how the simulation computes an op, not ops a real NPU
// dispatches. Per thread: another thread's ops (a data-loading thread, autograd's device thread)
// are the script's own while one of these runs.
int& npu_level_depth() {
  static thread_local int depth = 0;
  return depth;
}

// The Python hook run while an op is armed: hook(counter, name, args) -> whether to disarm.
static py::object& call_hook() {
  static py::object* hook = new py::object();  // never destroyed: outlives the interpreter
  return *hook;
}

// The current npu device of this thread. runtime/state.py reads and sets it here, and so does the
// device guard (npu_hooks.cpp), so torch.npu, torch.accelerator and the guards PyTorch takes agree.
static thread_local int64_t current_device = 0;

int64_t current_index() { return current_device; }
void set_current_index(int64_t index) { current_device = index; }

static std::atomic<int64_t> device_total_count{1};
int64_t device_total() { return device_total_count.load(std::memory_order_relaxed); }

// ------------------------------------------------------------------ pooled CPU tensors

// A storage with no bytes, which a pooled CPU tensor holds between calls (never destroyed: the
// pools of threads that end at exit still point at it).
static const c10::Storage& parked_storage() {
  static auto* parked = new c10::Storage(c10::Storage::use_byte_size_t(), 0, c10::DataPtr(nullptr, c10::Device(c10::kCPU)),
                                         nullptr, false);
  return *parked;
}

// A TensorImpl's storage and dtype fields. The pool lends its tensors' storages without a
// reference count (set_storage_and_dtype takes and drops one on two storages per argument): a
// pointer to a protected member, formed where a derived class may name it.
struct ImplFields : c10::TensorImpl {
  static c10::Storage& storage(c10::TensorImpl* impl) { return impl->*(&ImplFields::storage_); }
  static caffe2::TypeMeta& dtype(c10::TensorImpl* impl) { return impl->*(&ImplFields::data_type_); }
  static int64_t& offset(c10::TensorImpl* impl) { return impl->*(&ImplFields::storage_offset_); }
  // sizes and strides as stored, without the policy checks sizes() and strides() make: for a
  // tensor whose sizes and strides are its own (plain), as the pool's tensors are
  static const c10::impl::SizesAndStrides& geometry(const c10::TensorImpl* impl) {
    return impl->*(&ImplFields::sizes_and_strides_);
  }
  static bool plain(const c10::TensorImpl* impl) {
    return !(impl->*(&ImplFields::matches_policy))(SizesStridesPolicy::CustomStrides);
  }
};

// Point impl's storage at `to` without counting a reference; the storage it held was not counted
// either (the pool's tensors hold theirs uncounted at all times).
static void point_uncounted(c10::TensorImpl* impl, c10::StorageImpl* to) {
  c10::Storage& storage = ImplFields::storage(impl);
  storage.unsafeReleaseStorageImpl();
  storage = c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim(to));
}

// Each thread's CPU tensors for the kernels' arguments: a call re-points a free one at an npu
// argument's bytes and dtype, which saves making and freeing a TensorImpl and its version counter
// per argument. A slot holds the parked storage, or while lent the argument's host storage, always
// without a reference count: the npu argument keeps its host storage alive for the call, and the
// parked storage is never freed.
//
// A slot is looked for where the argument's sizes and strides hash to: a training step shows the
// same few of them on every batch and time step, so the slot found there usually shows them
// already, and its sizes, strides and contiguity need not be set again. Setting them was about a
// third of what presenting an argument cost (GRU, callgrind); 95 % of a GRU step's arguments now
// find their slot ready.
constexpr int POOL_BITS = 6;
constexpr size_t POOL_SLOTS = size_t{1} << POOL_BITS;
constexpr size_t POOL_PROBES = 4;  // slots tried from the geometry's own before any free one

static std::array<PoolSlot, POOL_SLOTS>& view_pool() {
  static thread_local std::array<PoolSlot, POOL_SLOTS> pool;
  return pool;
}

static size_t geometry_slot(const c10::impl::SizesAndStrides& g) {
  uint64_t h = g.size();
  const int64_t *sizes = g.sizes_data(), *strides = g.strides_data();
  for (size_t d = 0; d < g.size(); ++d) {
    h = h * 1000003u + static_cast<uint64_t>(sizes[d]);
    h = h * 1000003u + static_cast<uint64_t>(strides[d]);
  }
  return static_cast<size_t>((h * 0x9E3779B97F4A7C15u) >> (64 - POOL_BITS));  // the top bits: a slot
}

// SizesAndStrides's own == compares its unused inline places too, which keep what an earlier
// geometry left there: equal geometries would often differ.
static bool same_geometry(const c10::impl::SizesAndStrides& a, const c10::impl::SizesAndStrides& b) {
  const size_t dim = a.size();
  if (dim != b.size()) return false;
  const int64_t *a_sizes = a.sizes_data(), *b_sizes = b.sizes_data();
  const int64_t *a_strides = a.strides_data(), *b_strides = b.strides_data();
  for (size_t d = 0; d < dim; ++d) {
    if (a_sizes[d] != b_sizes[d] || a_strides[d] != b_strides[d]) return false;
  }
  return true;
}

// A free slot for npu tensor t: one of the POOL_PROBES slots from its geometry's own, one already
// showing that geometry first; else any free slot; nullptr when every slot is lent. The storage
// offset is not part of the geometry here: it is set on every call (time steps of a sequence
// differ only by it), and the contiguity flags do not depend on it.
static PoolSlot* free_slot(const c10::TensorImpl* t) {
  auto& pool = view_pool();
  const c10::impl::SizesAndStrides& geometry = ImplFields::geometry(t);
  const size_t home = geometry_slot(geometry);
  PoolSlot* free = nullptr;
  for (size_t probe = 0; probe < POOL_PROBES; ++probe) {
    PoolSlot& slot = pool[(home + probe) & (POOL_SLOTS - 1)];
    if (slot.busy) continue;
    if (slot.tensor.defined() && same_geometry(ImplFields::geometry(slot.tensor.unsafeGetTensorImpl()), geometry)) {
      return &slot;  // its sizes, strides and contiguity are already right
    }
    if (free == nullptr) free = &slot;
  }
  if (free == nullptr) {
    for (PoolSlot& slot : pool) {
      if (!slot.busy) {
        free = &slot;
        break;
      }
    }
    if (free == nullptr) return nullptr;
  }
  if (!free->tensor.defined()) {
    free->tensor = tensor_on(parked_storage(), CPU_KEYS, caffe2::TypeMeta::Make<float>(), {0}, {1}, 0);
    // the reference tensor_on counted on the parked storage stays counted (the slot's tensor
    // gives it back when the thread's pool is destroyed); from here on it is held uncounted
    point_uncounted(free->tensor.unsafeGetTensorImpl(), parked_storage().unsafeGetStorageImpl());
  }
  c10::TensorImpl* impl = free->tensor.unsafeGetTensorImpl();
  impl->set_sizes_and_strides(t->sizes(), t->strides());
  return free;
}

// A free slot of the pool re-pointed at host's bytes showing t (noted in scan, parked when the scan
// ends), or null when every slot is lent.
static PoolSlot* lend(const at::Tensor& t, const c10::Storage& host, Scan& scan) {
  PoolSlot* slot = free_slot(t.unsafeGetTensorImpl());
  if (slot == nullptr) return nullptr;
  c10::TensorImpl* impl = slot->tensor.unsafeGetTensorImpl();
  point_uncounted(impl, host.unsafeGetStorageImpl());
  ImplFields::dtype(impl) = t.dtype();
  ImplFields::offset(impl) = t.storage_offset();
  slot->busy = true;
  scan.pooled.push_back(slot);
  return slot;
}

Scan::~Scan() {
  for (PoolSlot* slot : pooled) {
    c10::TensorImpl* impl = slot->tensor.unsafeGetTensorImpl();
    if (slot->tensor.use_count() == 1) {
      point_uncounted(impl, parked_storage().unsafeGetStorageImpl());  // the bytes go with the call
    } else {
      // a kernel kept it (it aliases a result): it leaves the pool, and its holders own it, the
      // reference to its storage included
      c10::raw::intrusive_ptr::incref(ImplFields::storage(impl).unsafeGetStorageImpl());
      slot->tensor = at::Tensor();
    }
    slot->busy = false;
  }
}

// What every npu argument notes: its device (the first, or another one met) and its storage.
static void note_npu(const at::Tensor& t, Scan& scan) {
  const auto device = t.device();
  const int64_t index = device.index() < 0 ? 0 : device.index();
  if (scan.index < 0) {
    scan.index = index;
  } else if (scan.index != index) {
    scan.other = "npu:" + std::to_string(index);
  }
  scan.storages.push_back(t.storage().unsafeGetStorageImpl());
}

at::Tensor to_cpu(const at::Tensor& t, Scan& scan) {
  if (!t.defined()) return t;
  const auto device = t.device();
  if (device.type() == c10::DeviceType::PrivateUse1) {
    note_npu(t, scan);
    return cpu_view(t);
  }
  if (t.dim() != 0) scan.other = device.str();  // zero-dim CPU tensors count as scalars, as on CUDA
  return t;
}

// An npu argument noted in scan, and a pool slot lent over its host bytes; null when every slot is
// lent or the storage was made by the Python path (the caller makes a CPU view of its own then).
static PoolSlot* note_and_lend(const at::Tensor& t, Scan& scan) {
  note_npu(t, scan);
  const HostContext* context = host_context(t.storage());
  return context != nullptr && ImplFields::plain(t.unsafeGetTensorImpl()) ? lend(t, context->host, scan) : nullptr;
}

CpuArg take_cpu(const at::Tensor& t, Scan& scan) {
  if (!t.defined()) return CpuArg(at::Tensor());
  if (t.device().type() != c10::DeviceType::PrivateUse1) {
    if (t.dim() != 0) scan.other = t.device().str();
    return CpuArg::borrow(t);
  }
  if (PoolSlot* slot = note_and_lend(t, scan)) return CpuArg::borrow(slot->tensor);
  return CpuArg(cpu_view(t));
}

void mixed_devices(const Scan& scan) {
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, npu:",
              scan.index < 0 ? 0 : scan.index, " and ", scan.other, "!");
}

// to_cpu for a boxed kernel's stack: an npu argument over host bytes gets a CPU tensor of the
// pool when one is free (the stack holds it counted; the kernel consumes its arguments, so it is
// the pool's alone again when the scan ends, or it leaves the pool).
static at::Tensor stacked_cpu(const at::Tensor& t, Scan& scan) {
  if (!t.defined() || t.device().type() != c10::DeviceType::PrivateUse1) return to_cpu(t, scan);
  if (PoolSlot* slot = note_and_lend(t, scan)) return slot->tensor;
  return cpu_view(t);
}

static c10::IValue convert(const c10::IValue& value, int kind, Scan& scan) {
  if (kind == 1) {
    return value.isTensor() ? stacked_cpu(value.toTensor(), scan) : value;
  }
  if (kind == 2) {
    if (!value.isList()) return value;
    auto list = value.toList();
    c10::impl::GenericList converted(list.elementType());
    converted.reserve(list.size());
    for (const c10::IValue& item : list) {
      converted.push_back(item.isTensor() ? stacked_cpu(item.toTensor(), scan) : item);
    }
    return converted;
  }
  // kind 3: a target device
  if (!value.isDevice()) return value;
  const auto device = value.toDevice();
  if (device.type() == c10::DeviceType::PrivateUse1) {
    scan.target = device.index() < 0 ? current_index() : device.index();
    return c10::Device(c10::kCPU);
  }
  scan.cpu_target = true;
  return value;
}

// The npu argument whose bytes a kernel's result shows (an in-place op's self, a view), or null.
static c10::StorageImpl* aliased(const at::Tensor& out, const Scan& scan) {
  void* data = data_of(out.storage());
  if (data == nullptr) return nullptr;
  for (c10::StorageImpl* storage : scan.storages) {
    if (storage->data_ptr().get() == data) return storage;
  }
  return nullptr;
}

// A result only this call holds: a plain strided CPU tensor on a storage of its own, which no
// weak reference, Python object or other tensor sees.
static bool own_result(const at::Tensor& out) {
  c10::TensorImpl* impl = out.unsafeGetTensorImpl();
  return out.use_count() == 1 && out.weak_use_count() == 1 && typeid(*impl) == typeid(c10::TensorImpl) &&
         out.device().is_cpu() && out.layout() == c10::kStrided && !impl->is_wrapped_number() &&
         impl->key_set().has_backend(c10::BackendComponent::CPUBit) && out.storage().use_count() == 1 &&
         impl->pyobj_slot()->load_pyobj() == nullptr && impl->get_backend_meta() == nullptr;
}

at::Tensor wrap(at::Tensor&& out, int64_t index, const Scan& scan) {
  // own_result first: an alias of an argument rarely passes it, and the const& wrap looks for it
  if (!out.defined() || !own_result(out) || aliased(out, scan) != nullptr) return wrap(out, index, scan);
  // The result's own TensorImpl becomes the npu tensor: its storage is swapped for an npu one over
  // the same bytes (counted as device memory) and its dispatch keys moved to the npu's. Making a
  // new TensorImpl for it (and freeing the CPU one) cost as much as a small kernel's own work.
  c10::TensorImpl* impl = out.unsafeGetTensorImpl();
  c10::Storage storage = npu_storage_over(impl->storage(), index);
  const c10::Device device = storage.device();
  impl->set_storage_keep_dtype(std::move(storage));  // the device follows the storage
  impl->_change_backend_component_keys(device);
  return std::move(out);
}

at::Tensor wrap(const at::Tensor& out, int64_t index, const Scan& scan) {
  if (!out.defined()) return out;
  const c10::Storage& host = out.storage();
  if (c10::StorageImpl* storage = aliased(out, scan)) {
    return tensor_on(c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(storage)), NPU_KEYS,
                     out.dtype(), out.sizes(), out.strides(), out.storage_offset());
  }
  const HostContext* context = host_context(host);
  c10::Storage storage = npu_storage_over(context ? context->host : host, index);
  return tensor_on(std::move(storage), NPU_KEYS, out.dtype(), out.sizes(), out.strides(), out.storage_offset());
}

static bool needs_hook(const OpInfo& info, torch::jit::Stack* stack, size_t base, size_t nargs) {
  const uint64_t watched = info.watched.load(std::memory_order_relaxed);
  if (watched == 0) return true;
  for (size_t i = 0; i < nargs; ++i) {
    const c10::IValue& value = (*stack)[base + i];
    const at::Tensor* first = nullptr;
    if (value.isTensor()) {
      first = &value.toTensor();
    } else if (value.isList()) {
      for (const c10::IValue& item : value.toListRef()) {
        if (item.isTensor()) {
          first = &item.toTensor();
          break;
        }
      }
    }
    if (first != nullptr) {
      if (!first->defined() || first->dim() == 0) return false;
      return (watched >> static_cast<int>(first->scalar_type())) & 1;
    }
  }
  return false;
}

// empty(size, dtype, layout, device, ...): refuse a request past capacity before the host
// allocation is made (a huge request must fail as out-of-memory, not in the host allocator).
static void precheck(torch::jit::Stack* stack, size_t base) {
  const auto sizes = (*stack)[base].toDimVector();
  const c10::IValue& dtype = (*stack)[base + 1];
  const c10::IValue& device = (*stack)[base + 3];
  int64_t index = 0;
  if (device.isDevice()) {
    index = device.toDevice().index() < 0 ? current_index() : device.toDevice().index();
  }
  const auto meta = dtype.isNone() ? c10::get_default_dtype() : c10::scalarTypeToTypeMeta(dtype.toScalarType());
  int64_t nbytes = static_cast<int64_t>(meta.itemsize());
  for (int64_t size : sizes) nbytes *= size;
  std::lock_guard<std::mutex> guard(mem_mutex());
  check_locked(index, counters(index), nbytes);
}

// The operator check's first look at an op (and every call while it asks to see each one).
static void hook(OpInfo& info, torch::jit::Stack* stack, size_t base, size_t nargs) {
  py::gil_scoped_acquire gil;
  py::tuple args(nargs);
  for (size_t i = 0; i < nargs; ++i) args[i] = torch::jit::toPyObject((*stack)[base + i]);
  py::object answer = call_hook()(info.counter, info.name, args);
  if (py::isinstance<py::bool_>(answer)) {
    info.watched.store(0, std::memory_order_relaxed);
    if (answer.cast<bool>()) info.armed.store(false, std::memory_order_relaxed);
    return;
  }
  uint64_t watched = 0;
  for (py::handle dtype : answer) watched |= uint64_t{1} << static_cast<int>(dtype.cast<at::ScalarType>());
  // Nothing left to watch: a bit no tensor has keeps the hook away without disarming.
  info.watched.store(watched ? watched : (uint64_t{1} << 63), std::memory_order_relaxed);
}

// Count one call of info's op for the operator check, or send it through the check's Python hook.
// A call inside an NPU-level kernel is neither: it is part of that kernel's computation.
void note_call(OpInfo& info, torch::jit::Stack* stack, size_t base, size_t nargs) {
  if (npu_level_depth() != 0) return;
  if (info.armed.load(std::memory_order_relaxed) && needs_hook(info, stack, base, nargs)) {
    hook(info, stack, base, nargs);
  } else {
    info.count.fetch_add(1, std::memory_order_relaxed);
  }
}

class NativeKernel final : public c10::OperatorKernel {
 public:
  explicit NativeKernel(std::shared_ptr<OpInfo> info) : info_(std::move(info)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    OpInfo& info = *info_;
    const size_t nargs = info.arg_kind.size();
    const size_t base = stack->size() - nargs;
    note_call(info, stack, base, nargs);
    if (info.view) {
      op.redispatchBoxed(CPU_KEYS, stack);
      return;
    }
    if (info.precheck) precheck(stack, base);
    c10::SmallVector<c10::IValue, 2> aliased;
    for (int source : info.ret_alias) {
      aliased.push_back(source >= 0 ? (*stack)[base + source] : c10::IValue());
    }
    Scan scan;
    // the arguments replaced by CPU tensors stay alive here (scan does not own their storages)
    c10::SmallVector<c10::IValue, 4> replaced;
    for (size_t i = 0; i < nargs; ++i) {
      const int kind = info.arg_kind[i];
      if (kind) {
        replaced.push_back((*stack)[base + i]);
        (*stack)[base + i] = convert(replaced.back(), kind, scan);
      }
    }
    if (!scan.other.empty() && !info.mixed_ok) mixed_devices(scan);
    op.redispatchBoxed(CPU_KEYS, stack);
    const size_t nret = info.ret_alias.size();
    const size_t first = stack->size() - nret;
    if (scan.cpu_target) {
      for (size_t i = 0; i < nret; ++i) {
        if (info.ret_alias[i] >= 0) (*stack)[first + i] = aliased[i];
      }
      return;
    }
    const int64_t index = scan.target >= 0 ? scan.target : scan.index >= 0 ? scan.index : current_index();
    for (size_t i = 0; i < nret; ++i) {
      c10::IValue& result = (*stack)[first + i];
      if (info.ret_alias[i] >= 0) {
        result = aliased[i];
      } else if (result.isTensor()) {
        result = wrap(std::move(result).toTensor(), index, scan);  // the stack's result, given up
      } else if (result.isTensorList()) {
        auto list = std::move(result).toTensorList();
        c10::List<at::Tensor> wrapped;
        wrapped.reserve(list.size());
        for (size_t j = 0; j < list.size(); ++j) wrapped.push_back(wrap(list.extract(j), index, scan));
        result = wrapped;
      }
    }
  }

 private:
  std::shared_ptr<OpInfo> info_;
};

// An op torch_npu dispatches itself, served at the npu's autograd key by PyTorch's C++
// decomposition (its CompositeImplicitAutograd kernel, what the CPU runs): counted as the op,
// while what the decomposition calls runs one NPU level deeper.
class NpuLevelKernel final : public c10::OperatorKernel {
 public:
  explicit NpuLevelKernel(std::shared_ptr<OpInfo> info) : info_(std::move(info)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    OpInfo& info = *info_;
    const size_t nargs = info.arg_kind.size();
    // Inside another NPU-level kernel the op is part of that kernel's computation: not counted.
    note_call(info, stack, stack->size() - nargs, nargs);
    Level level;
    c10::Dispatcher::singleton().callBoxedForDispatchKey(op, c10::DispatchKey::CompositeImplicitAutograd, stack);
  }

 private:
  std::shared_ptr<OpInfo> info_;
};

// The registrations of the native path; destroying the library withdraws them.
static std::unique_ptr<torch::Library>& library() {
  static auto* held = new std::unique_ptr<torch::Library>();
  return *held;
}

// The NPU-level kernels, registered at the npu's autograd key; withdrawn with the others.
static std::unique_ptr<torch::Library>& level_library() {
  static auto* held = new std::unique_ptr<torch::Library>();
  return *held;
}

static void add_op(const std::string& qualified, const std::string& name, bool view, bool mixed_ok,
                   std::vector<int> arg_kind, std::vector<int> ret_alias, py::object counter) {
  auto info = std::make_shared<OpInfo>();
  info->precheck = qualified == "empty.memory_format";
  info->name = name;
  info->view = view;
  info->mixed_ok = mixed_ok;
  info->arg_kind = std::move(arg_kind);
  info->ret_alias = std::move(ret_alias);
  info->counter = std::move(counter);
  infos().push_back(info);
  if (!library()) {
    library() = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1,
                                                 __FILE__, __LINE__);
  }
  // the hottest ops have an unboxed kernel (npu_typed.cpp): the same steps, without boxing the call
  info->typed = add_typed_op(*library(), qualified, info);
  if (!info->typed) {
    library()->impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunctor(std::make_unique<NativeKernel>(info)));
  }
}

static void add_npu_level_op(const std::string& qualified, const std::string& name, std::vector<int> arg_kind,
                             py::object counter) {
  auto info = std::make_shared<OpInfo>();
  info->name = name;
  info->npu_level = true;
  info->arg_kind = std::move(arg_kind);
  info->counter = std::move(counter);
  infos().push_back(info);
  if (!level_library()) {
    level_library() = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                                       c10::DispatchKey::AutogradPrivateUse1, __FILE__, __LINE__);
  }
  level_library()->impl(qualified.c_str(),
                        torch::CppFunction::makeFromBoxedFunctor(std::make_unique<NpuLevelKernel>(info)));
}

static void flush_counts();

static void drop_ops() {
  // GIL held (called from Python).
  flush_counts();
  library().reset();
  level_library().reset();
  drop_routes();
  infos().clear();
}

// add_counts(counter, name, n, watching): files n natively counted calls (backend/dispatch.py).
static py::object& count_hook() {
  static py::object* hook = new py::object();  // never destroyed: outlives the interpreter
  return *hook;
}

static void flush_counts() {
  // GIL held (called from Python): hand the natively counted calls to Python.
  for (auto& info : infos()) {
    const int64_t n = info->count.exchange(0);
    if (n) {
      const bool watching = info->armed.load() && info->watched.load() != 0;
      count_hook()(info->counter, info->name, n, watching);
    }
  }
}

static void drop_npu_level_ops() {
  // GIL held (called from Python).
  flush_counts();
  level_library().reset();
  auto& all = infos();
  all.erase(std::remove_if(all.begin(), all.end(), [](const auto& info) { return info->npu_level; }), all.end());
}

static void rearm() {
  for (auto& info : infos()) {
    info->watched.store(0);
    info->armed.store(true);
  }
}

static py::object host_of(py::handle storage_object) {
  const c10::Storage& storage = THPStorage_Unpack(storage_object.ptr());
  const HostContext* context = host_context(storage);
  if (context == nullptr) return py::none();
  auto host = at::empty({0}, at::TensorOptions().dtype(at::kByte));
  host.set_(context->host);
  return py::make_tuple(host, context->index, context->nbytes);
}

void init_dispatch(py::module& m) {
  m.def("mem_init", [](int64_t count, int64_t capacity) {
    std::lock_guard<std::mutex> guard(mem_mutex());
    devices().assign(count, DeviceCounters());
    device_total_count.store(std::max<int64_t>(count, 1));
    for (auto& d : devices()) d.capacity = d.full_capacity = capacity;
  });
  m.def("mem_get", [](int64_t index, int64_t which) {
    std::lock_guard<std::mutex> guard(mem_mutex());
    return field(counters(index), which);
  });
  m.def("mem_set", [](int64_t index, int64_t which, int64_t value) {
    std::lock_guard<std::mutex> guard(mem_mutex());
    field(counters(index), which) = value;
  });
  m.def("mem_fields", []() { return std::vector<std::string>(std::begin(FIELDS), std::end(FIELDS)); });
  m.def("mem_allocate", [](int64_t index, int64_t nbytes) { mem_allocate(index, nbytes, false); });
  m.def("mem_release", &mem_release);
  m.def("mem_refuse", [](int64_t index, py::object message) {
    std::lock_guard<std::mutex> guard(mem_mutex());
    auto& d = counters(index);
    d.refusing = !message.is_none();
    d.refuse = d.refusing ? message.cast<std::string>() : std::string();
  });
  m.def("mem_refusal", [](int64_t index) -> py::object {
    std::lock_guard<std::mutex> guard(mem_mutex());
    auto& d = counters(index);
    return d.refusing ? py::object(py::str(d.refuse)) : py::object(py::none());
  });
  m.def("set_current", &set_current_index, "Make index the calling thread's current npu device");
  m.def("current", &current_index, "The calling thread's current npu device");
  m.def("set_call_hook", [](py::object hook) { call_hook() = std::move(hook); });
  m.def("npu_level", [](int delta) { npu_level_depth() += delta; },
        "Enter (+1) or leave (-1) an NPU-level kernel");
  m.def("set_count_hook", [](py::object hook) { count_hook() = std::move(hook); });
  m.def("npu_level_depth", []() { return npu_level_depth(); },
        "How many NPU-level kernels are running");
  m.def("add_op", &add_op, "Register the native kernel of one aten op on the npu");
  m.def("add_npu_level_op", &add_npu_level_op,
        "Register the NPU-level kernel of one composite aten op (its C++ decomposition, counted as the op)");
  m.def("drop_ops", &drop_ops, "Withdraw every native kernel");
  m.def("drop_npu_level_ops", &drop_npu_level_ops, "Withdraw the NPU-level kernels only");
  m.def(
      "kernel_kinds",
      []() {
        py::dict kinds;
        for (const auto& info : infos()) {
          if (!info->route) kinds[py::str(info->name)] = info->typed ? "typed" : "boxed";
        }
        return kinds;
      },
      "Op name -> 'typed' (unboxed kernel) or 'boxed', for the registered native kernels");
  m.def(
      "pool_state",
      []() {
        // this thread's pool: (slots made, slots lent or not back on the parked storage)
        int made = 0, out = 0;
        for (const PoolSlot& slot : view_pool()) {
          if (!slot.tensor.defined()) continue;
          ++made;
          const c10::StorageImpl* held = ImplFields::storage(slot.tensor.unsafeGetTensorImpl()).unsafeGetStorageImpl();
          if (slot.busy || held != parked_storage().unsafeGetStorageImpl()) ++out;
        }
        return py::make_tuple(made, out);
      },
      "This thread's pool of CPU tensors: (slots made, slots still lent or showing bytes)");
  m.def("pool_size", []() { return POOL_SLOTS; }, "How many CPU tensors a thread's pool holds");
  m.def("add_routes", &add_routes,
        "Serve a group of Python routes natively ('attention': SDPA, dropout; 'rnn': recurrent layers, cells)");
  m.def("route_ops", &route_ops, "The ops the native routes serve right now");
  m.def("typed_op_names", &typed_op_names, "The ops an unboxed kernel exists for (npu_typed.cpp)");
  m.def("flush_counts", &flush_counts, "Add natively counted calls to the Python counters");
  m.def("rearm", &rearm, "Send the next call of every op through the Python hook");
  m.def("host_of", &host_of, "(host uint8 tensor, device index, nbytes) of a storage made natively, else None");
}

}  // namespace runtime_shim
