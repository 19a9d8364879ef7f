// Attention and dropout on the npu as on the CPU, on the native path: backend/attention.py's two
// routes (read its docstring for why they exist), made here without a Python round trip per call.
//
// Both are registered at the npu's autograd key, as the Python ones are, after them (so they win
// while the native path serves) and withdrawn with the native kernels. The ATen calls are the
// ones attention.py makes, in the same order, so autograd records the same graph and results and
// gradients stay the CPU's bit for bit. Each route counts its call as the op torch_npu would run
// (scaled_dot_product_attention; native_dropout for a dropout PyTorch would fuse) and runs one NPU
// level deeper, as kernels.npu_level does, so the ops it is computed with are not counted as ops.
#include "npu_native.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace runtime_shim {
namespace {

constexpr int64_t SDPA_FLASH = 1;  // sdp::SDPBackend::flash_attention, what _fused_sdp_choice returns

// The records the routes count their calls on (set by add_attention_routes).
std::shared_ptr<OpInfo>& sdpa_info() {
  static auto* held = new std::shared_ptr<OpInfo>();  // never destroyed: holds Python objects
  return *held;
}

std::shared_ptr<OpInfo>& dropout_info() {
  static auto* held = new std::shared_ptr<OpInfo>();
  return *held;
}

bool is_subclass(const at::Tensor& t) { return t.key_set().has(c10::DispatchKey::Python); }

// What the CPU's choice of kernel reads of a tensor (sizes, strides, dtype, requires_grad), over
// its bytes: no copy, no new memory.
at::Tensor as_seen_by_cpu(const at::Tensor& t, Scan& scan) {
  at::Tensor seen = to_cpu(t, scan);
  if (t.requires_grad() && t.is_floating_point() && !seen.is_same(t)) seen.set_requires_grad(true);
  return seen;
}

at::Tensor sdpa(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                std::optional<double> scale, bool enable_gqa) {
  note(*sdpa_info(), query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa);
  Level level;
  const bool masked = attn_mask.has_value() && attn_mask->defined();
  if (!masked && dropout_p == 0 && !enable_gqa &&
      (is_subclass(query) || is_subclass(key) || is_subclass(value))) {
    // DTensor (tensor/sequence parallel attention) shards the flash-attention op, which has no
    // rule for the CPU's flash kernel: call it, and each shard is computed with that CPU kernel.
    return std::get<0>(at::_scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal,
                                                                /*return_debug_mask=*/false, scale));
  }
  int64_t choice;
  {
    Scan scan;
    std::optional<at::Tensor> mask;
    if (masked) mask = as_seen_by_cpu(*attn_mask, scan);
    choice = at::_fused_sdp_choice(as_seen_by_cpu(query, scan), as_seen_by_cpu(key, scan),
                                   as_seen_by_cpu(value, scan), mask, dropout_p, is_causal, scale, enable_gqa);
  }
  std::optional<at::Tensor> mask = attn_mask;
  if (masked && attn_mask->scalar_type() == at::kBool) {
    mask = at::zeros(attn_mask->sizes(), query.options().requires_grad(false))
               .masked_fill_(attn_mask->logical_not(), -std::numeric_limits<double>::infinity());
  }
  if (choice == SDPA_FLASH) {
    return std::get<0>(
        at::_scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal, mask, scale));
  }
  return std::get<0>(at::_scaled_dot_product_attention_math(query, key, value, mask, dropout_p, is_causal,
                                                            /*dropout_mask=*/std::nullopt, scale, enable_gqa));
}

// The CPU's dropout: a bernoulli mask scaled by 1/(1-p), not the fused kernel PyTorch picks off the CPU.
at::Tensor dropout_as_on_cpu(const at::Tensor& input, double p, bool train) {
  if (p == 0 || !train || input.numel() == 0) return input;
  if (p == 1) return input * at::zeros({}, input.options().requires_grad(false));
  at::Tensor noise = at::empty_like(input).bernoulli_(1 - p);
  noise.div_(1 - p);
  return input * noise;
}

at::Tensor dropout(const at::Tensor& input, double p, bool train) {
  if (train && 0 < p && p < 1 && input.numel() != 0) {
    // where PyTorch would take the fused kernel, a real NPU runs torch_npu's native_dropout
    note(*dropout_info(), input, p, train);
    Level level;
    return dropout_as_on_cpu(input, p, train);
  }
  return dropout_as_on_cpu(input, p, train);
}

}  // namespace

std::vector<std::string> add_attention_routes(torch::Library& library, const pybind11::dict& counters) {
  sdpa_info() = route_info("scaled_dot_product_attention", {1, 1, 1, 1, 0, 0, 0, 0}, counters);
  dropout_info() = route_info("native_dropout", {1, 0, 0}, counters);
  library.impl("scaled_dot_product_attention", torch::dispatch(c10::DispatchKey::AutogradPrivateUse1, TORCH_FN(sdpa)));
  library.impl("dropout", torch::dispatch(c10::DispatchKey::AutogradPrivateUse1, TORCH_FN(dropout)));
  return {"scaled_dot_product_attention", "dropout"};
}

}  // namespace runtime_shim
