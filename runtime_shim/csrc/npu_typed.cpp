// Unboxed kernels for the ops a training step calls most: the steps of npu_dispatch.cpp's
// NativeKernel (count the call, present npu tensors to the CPU kernel, give results back as npu
// tensors), taken on the op's typed arguments instead of a boxed stack.
//
// A boxed kernel costs every call a stack of IValues built from the typed arguments, and the
// CPU kernel's boxed adapter unboxes them again: about half a microsecond, as much as a small
// CPU kernel takes. Here the CPU kernel is called through its typed redispatch. Only the
// operator check's Python hook needs the arguments boxed, and only while it watches the op.
//
// Which ops: the ones that make most of the calls of bench/bench_runtime.py's models (pointwise
// arithmetic, matmuls, views, losses, norms, and the optimizers' updates, per tensor and
// multi-tensor), among those the npu serves itself (composites such as add.Scalar reach these).
// The parameter and return types each op may have are checked at compile time: device arguments
// and the other kinds of tensor list (cat's, index's optional tensors) keep the boxed kernel.
#include "npu_native.h"  // first: the per-op headers below expect ATen's types declared

#include <ATen/ops/_foreach_add_ops.h>
#include <ATen/ops/_foreach_addcdiv_ops.h>
#include <ATen/ops/_foreach_addcmul_ops.h>
#include <ATen/ops/_foreach_div_ops.h>
#include <ATen/ops/_foreach_lerp_ops.h>
#include <ATen/ops/_foreach_mul_ops.h>
#include <ATen/ops/_foreach_sqrt_ops.h>
#include <ATen/ops/_foreach_zero_ops.h>
#include <ATen/ops/_log_softmax_ops.h>
#include <ATen/ops/_log_softmax_backward_data_ops.h>
#include <ATen/ops/_reshape_alias_ops.h>
#include <ATen/ops/_softmax_ops.h>
#include <ATen/ops/_softmax_backward_data_ops.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addcdiv_ops.h>
#include <ATen/ops/addcmul_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/as_strided_ops.h>
#include <ATen/ops/bernoulli_ops.h>
#include <ATen/ops/bmm_ops.h>
#include <ATen/ops/clamp_min_ops.h>
#include <ATen/ops/clone_ops.h>
#include <ATen/ops/convolution_backward_ops.h>
#include <ATen/ops/convolution_backward_overrideable_ops.h>
#include <ATen/ops/convolution_ops.h>
#include <ATen/ops/convolution_overrideable_ops.h>
#include <ATen/ops/copy_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/embedding_dense_backward_ops.h>
#include <ATen/ops/eq_ops.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/fill_ops.h>
#include <ATen/ops/gelu_ops.h>
#include <ATen/ops/gelu_backward_ops.h>
#include <ATen/ops/lerp_ops.h>
#include <ATen/ops/log_ops.h>
#include <ATen/ops/masked_fill_ops.h>
#include <ATen/ops/maximum_ops.h>
#include <ATen/ops/mean_ops.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/native_batch_norm_ops.h>
#include <ATen/ops/native_batch_norm_backward_ops.h>
#include <ATen/ops/native_dropout_ops.h>
#include <ATen/ops/native_dropout_backward_ops.h>
#include <ATen/ops/native_layer_norm_ops.h>
#include <ATen/ops/native_layer_norm_backward_ops.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/nll_loss_backward_ops.h>
#include <ATen/ops/nll_loss_forward_ops.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/reciprocal_ops.h>
#include <ATen/ops/relu_ops.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/sigmoid_backward_ops.h>
#include <ATen/ops/silu_ops.h>
#include <ATen/ops/silu_backward_ops.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/sum_ops.h>
#include <ATen/ops/tanh_ops.h>
#include <ATen/ops/tanh_backward_ops.h>
#include <ATen/ops/threshold_backward_ops.h>
#include <ATen/ops/view_ops.h>
#include <ATen/ops/where_ops.h>
#include <ATen/ops/zero_ops.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>

namespace runtime_shim {
namespace {

template <class T>
inline constexpr bool always_false = false;

// How one parameter of type A reaches the CPU kernel: tensors as CPU views over their bytes,
// everything else as it is.
template <class A>
struct Param {
  using Bare = std::remove_cv_t<std::remove_reference_t<A>>;
  static_assert(!std::is_same_v<Bare, at::ITensorListRef> &&
                    !std::is_same_v<Bare, c10::List<std::optional<at::Tensor>>> &&
                    !std::is_same_v<Bare, std::optional<at::Device>> && !std::is_same_v<Bare, at::Device> &&
                    !std::is_same_v<Bare, std::optional<at::TensorList>>,
                "an op with these tensor lists or device arguments keeps the boxed kernel");
  using Held = A;
  static A take(A value, Scan&) { return value; }
};

template <>
struct Param<const at::Tensor&> {
  using Held = CpuArg;
  static CpuArg take(const at::Tensor& t, Scan& scan) { return take_cpu(t, scan); }
};

template <>
struct Param<at::Tensor&> {
  using Held = CpuArg;
  static CpuArg take(const at::Tensor& t, Scan& scan) { return take_cpu(t, scan); }
};

// An optional tensor argument, held as take_cpu holds a tensor.
struct CpuOptionalArg : CpuArg {
  CpuOptionalArg(CpuArg&& arg) : CpuArg(std::move(arg)) {}  // NOLINT(google-explicit-constructor)
};

template <>
struct Param<const std::optional<at::Tensor>&> {
  using Held = CpuOptionalArg;
  static CpuArg take(const std::optional<at::Tensor>& t, Scan& scan) {
    return t.has_value() ? take_cpu(*t, scan) : CpuArg::none();
  }
};

// A tensor list argument (the optimizers' _foreach ops): each element held as take_cpu holds a
// tensor, and the list of them the CPU kernel is given (counted references, dropped before the
// call's scan ends and parks the pooled ones).
struct CpuListArg {
  std::vector<CpuArg> held;
  std::vector<at::Tensor> tensors;
};

template <>
struct Param<at::TensorList> {
  using Held = CpuListArg;
  static CpuListArg take(at::TensorList list, Scan& scan) {
    CpuListArg arg;
    arg.held.reserve(list.size());
    arg.tensors.reserve(list.size());
    for (const at::Tensor& t : list) {
      arg.held.push_back(take_cpu(t, scan));
      arg.tensors.push_back(arg.held.back().get());
    }
    return arg;
  }
};

// What the CPU kernel is given for a held argument.
inline at::Tensor& unwrap(CpuArg& arg) { return arg.get(); }
inline at::TensorList unwrap(CpuListArg& arg) { return arg.tensors; }
inline const std::optional<at::Tensor>& unwrap(CpuOptionalArg& arg) { return arg.optional(); }
template <class T>
T& unwrap(T& value) {
  return value;
}

// The position of the first `Tensor&` parameter: what an in-place op returns.
template <class... A>
constexpr size_t first_mutable() {
  constexpr bool is[] = {std::is_same_v<A, at::Tensor&>..., false};
  for (size_t i = 0; i < sizeof...(A); ++i) {
    if (is[i]) return i;
  }
  return sizeof...(A);
}

template <class R>
struct IsTensors : std::false_type {};
template <class... T>
struct IsTensors<std::tuple<T...>> : std::bool_constant<(std::is_same_v<T, at::Tensor> && ...)> {};

// The CPU computation of an npu op: by default the same op's CPU kernel.
template <class Op>
struct SameOp {
  template <class... T>
  static decltype(auto) run(T&&... cpu) {
    return Op::redispatch(CPU_KEYS, std::forward<T>(cpu)...);
  }
};

// Convolutions reach a device other than CPU and CUDA as convolution_overrideable and its
// backward; the CPU runs them as convolution (the same arguments; it picks the CPU algorithm a
// CPU run picks) and convolution_backward, as kernels.py's Python kernels do.
struct ConvolutionBackwardOnCpu {
  static std::tuple<at::Tensor, at::Tensor, at::Tensor> run(const at::Tensor& grad_output, const at::Tensor& input,
                                                            const at::Tensor& weight, c10::SymIntArrayRef stride,
                                                            c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                                                            bool transposed, c10::SymIntArrayRef output_padding,
                                                            const c10::SymInt& groups, std::array<bool, 3> output_mask) {
    // the bias gradient's size (read only when it is asked for): the output channels
    const c10::SymInt channels = transposed ? weight.sym_size(1) * groups : weight.sym_size(0);
    const std::array<c10::SymInt, 1> bias_sizes{channels};
    return at::_ops::convolution_backward::redispatch(CPU_KEYS, grad_output, input, weight,
                                                      c10::SymIntArrayRef(bias_sizes), stride, padding, dilation,
                                                      transposed, output_padding, groups, output_mask);
  }
};

template <class Op, class Cpu = SameOp<Op>, class Sig = typename Op::schema>
struct Typed;

template <class Op, class Cpu, class R, class... A>
struct Typed<Op, Cpu, R(A...)> {
  static std::shared_ptr<OpInfo>& slot() {
    static auto* info = new std::shared_ptr<OpInfo>();  // never destroyed: holds Python objects
    return *info;
  }

  static R call(c10::DispatchKeySet, A... args) {
    OpInfo& info = *slot();
    note(info, args...);
    if (info.view) return Op::redispatch(CPU_KEYS, args...);  // runs on the npu tensors themselves
    Scan scan;  // declared first: parks the pooled CPU arguments after held and the results are gone
    std::tuple<typename Param<A>::Held...> held{Param<A>::take(args, scan)...};  // in order
    if (!scan.other.empty() && !info.mixed_ok) mixed_devices(scan);
    const auto run = [&]() -> decltype(auto) {
      return std::apply([](auto&... cpu) -> decltype(auto) { return Cpu::run(unwrap(cpu)...); }, held);
    };
    const int64_t index = scan.index >= 0 ? scan.index : current_index();
    if constexpr (std::is_same_v<R, at::Tensor>) {
      return wrap(run(), index, scan);
    } else if constexpr (std::is_same_v<R, at::Tensor&>) {
      constexpr size_t self = first_mutable<A...>();
      static_assert(self < sizeof...(A), "an op returning Tensor& has a Tensor& parameter");
      run();
      return std::get<self>(std::forward_as_tuple(args...));
    } else if constexpr (IsTensors<R>::value) {
      R out = run();
      return std::apply([&](auto&... t) { return R(wrap(std::move(t), index, scan)...); }, out);
    } else if constexpr (std::is_void_v<R>) {
      run();  // an in-place list op: its npu arguments hold the results
    } else if constexpr (std::is_same_v<R, std::vector<at::Tensor>>) {
      R out = run();
      for (at::Tensor& t : out) t = wrap(std::move(t), index, scan);
      return out;
    } else {
      static_assert(always_false<R>, "an op with this return type keeps the boxed kernel");
    }
  }
};

using Registrar = void (*)(torch::Library&, const char*, const std::shared_ptr<OpInfo>&);

template <class Op, class Cpu>
void register_typed(torch::Library& library, const char* qualified, const std::shared_ptr<OpInfo>& info) {
  Typed<Op, Cpu>::slot() = info;
  library.impl(qualified, torch::CppFunction::makeFromUnboxedFunction(TORCH_FN((Typed<Op, Cpu>::call))));
}

template <class Op, class Cpu = SameOp<Op>>
std::pair<std::string, Registrar> entry() {
  std::string name(Op::name);
  name = name.substr(name.find("::") + 2);
  const std::string overload(Op::overload_name);
  return {overload.empty() ? name : name + "." + overload, &register_typed<Op, Cpu>};
}

const std::unordered_map<std::string, Registrar>& table() {
  static const auto* ops = new std::unordered_map<std::string, Registrar>{
      // views and metadata (what transpose, expand, select, slice, t... come down to on the npu)
      entry<at::_ops::view>(),
      entry<at::_ops::as_strided>(),
      entry<at::_ops::_reshape_alias>(),
      // arithmetic
      entry<at::_ops::add_Tensor>(),
      entry<at::_ops::add__Tensor>(),
      entry<at::_ops::sub_Tensor>(),
      entry<at::_ops::sub__Tensor>(),
      entry<at::_ops::mul_Tensor>(),
      entry<at::_ops::mul__Tensor>(),
      entry<at::_ops::div_Tensor>(),
      entry<at::_ops::div__Tensor>(),
      entry<at::_ops::neg>(),
      entry<at::_ops::sqrt>(),
      entry<at::_ops::rsqrt>(),
      entry<at::_ops::exp>(),
      entry<at::_ops::log>(),
      entry<at::_ops::pow_Tensor_Scalar>(),
      entry<at::_ops::reciprocal>(),
      entry<at::_ops::addcmul_>(),
      entry<at::_ops::addcdiv_>(),
      entry<at::_ops::lerp__Scalar>(),
      entry<at::_ops::clamp_min>(),
      entry<at::_ops::maximum>(),
      entry<at::_ops::where_self>(),
      entry<at::_ops::masked_fill__Scalar>(),
      entry<at::_ops::eq_Tensor>(),
      entry<at::_ops::clone>(),
      entry<at::_ops::copy_>(),
      entry<at::_ops::zero_>(),
      entry<at::_ops::fill__Scalar>(),
      // the optimizers' multi-tensor updates (what PyTorch's optimizers take on an accelerator)
      entry<at::_ops::_foreach_add__List>(),
      entry<at::_ops::_foreach_add__Scalar>(),
      entry<at::_ops::_foreach_add_List>(),
      entry<at::_ops::_foreach_mul__Scalar>(),
      entry<at::_ops::_foreach_mul__List>(),
      entry<at::_ops::_foreach_mul_Scalar>(),
      entry<at::_ops::_foreach_lerp__Scalar>(),
      entry<at::_ops::_foreach_addcmul__Scalar>(),
      entry<at::_ops::_foreach_addcdiv__Scalar>(),
      entry<at::_ops::_foreach_addcdiv__ScalarList>(),
      entry<at::_ops::_foreach_div__Scalar>(),
      entry<at::_ops::_foreach_div__ScalarList>(),
      entry<at::_ops::_foreach_sqrt>(),
      entry<at::_ops::_foreach_zero_>(),
      // reductions and matmuls
      entry<at::_ops::sum_dim_IntList>(),
      entry<at::_ops::mean_dim>(),
      entry<at::_ops::mm>(),
      entry<at::_ops::addmm>(),
      entry<at::_ops::bmm>(),
      // activations and their gradients
      entry<at::_ops::relu>(),
      entry<at::_ops::threshold_backward>(),
      entry<at::_ops::sigmoid>(),
      entry<at::_ops::sigmoid_>(),
      entry<at::_ops::sigmoid_backward>(),
      entry<at::_ops::tanh>(),
      entry<at::_ops::tanh_>(),
      entry<at::_ops::tanh_backward>(),
      entry<at::_ops::silu>(),
      entry<at::_ops::silu_backward>(),
      entry<at::_ops::gelu>(),
      entry<at::_ops::gelu_backward>(),
      entry<at::_ops::_softmax>(),
      entry<at::_ops::_softmax_backward_data>(),
      entry<at::_ops::_log_softmax>(),
      entry<at::_ops::_log_softmax_backward_data>(),
      // losses, norms, dropout, embeddings
      entry<at::_ops::nll_loss_forward>(),
      entry<at::_ops::nll_loss_backward>(),
      entry<at::_ops::native_layer_norm>(),
      entry<at::_ops::native_layer_norm_backward>(),
      entry<at::_ops::native_batch_norm>(),
      entry<at::_ops::native_batch_norm_backward>(),
      entry<at::_ops::native_dropout>(),
      entry<at::_ops::native_dropout_backward>(),
      entry<at::_ops::bernoulli__float>(),
      entry<at::_ops::embedding_dense_backward>(),
      // convolutions, computed as the CPU computes convolution
      entry<at::_ops::convolution_overrideable, SameOp<at::_ops::convolution>>(),
      entry<at::_ops::convolution_backward_overrideable, ConvolutionBackwardOnCpu>(),
  };
  return *ops;
}

}  // namespace

std::vector<std::string> typed_op_names() {
  std::vector<std::string> names;
  for (const auto& item : table()) names.push_back(item.first);
  return names;
}

bool add_typed_op(torch::Library& library, const std::string& qualified, const std::shared_ptr<OpInfo>& info) {
  if (info->precheck) return false;
  const auto found = table().find(qualified);
  if (found == table().end()) return false;
  found->second(library, qualified.c_str(), info);
  return true;
}

}  // namespace runtime_shim
