// LSTM, GRU and plain RNN (tanh / relu) layers and the LSTM and GRU cells on the simulated npu,
// in C++: backend/rnn.py's routes (read its docstring for why they exist), the same sequence of
// ATen calls without a Python round trip per op. On the CPU, PyTorch runs LSTM as one oneDNN
// layer call per layer and direction, and GRU / RNN as unfused cells over an input projection
// computed once for the whole sequence; off the CPU it would pick a fused CUDA cell, which the npu
// has no kernel for. Each call below goes through the dispatcher as the Python one does, so
// autograd records the same graph and the results and gradients are the CPU's, bit for bit.
//
// Registered at the npu's autograd key (and at its backend key, which serves inference_mode) over
// the Python kernels while the native path serves (npu_routes.cpp). LSTM, GRU and the two cells
// are ops torch_npu runs itself: each call is counted as that op and runs one NPU level deeper, as
// kernels.npu_level does on the Python path; RNN is not, so its calls are not counted and what it
// computes with is.
#include "npu_native.h"

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace runtime_shim {

namespace {

enum class Cell { Gru, Tanh, Relu };

at::Tensor gru_cell(const at::Tensor& igates, const at::Tensor& hidden, const at::Tensor& w_hh,
                    const std::optional<at::Tensor>& b_hh) {
  const auto in = igates.unsafe_chunk(3, 1);
  const auto hid = at::linear(hidden, w_hh, b_hh).unsafe_chunk(3, 1);
  const at::Tensor reset = hid[0].add_(in[0]).sigmoid_();
  const at::Tensor update = hid[1].add_(in[1]).sigmoid_();
  const at::Tensor fresh = in[2].add(hid[2].mul_(reset)).tanh_();
  return (hidden - fresh).mul_(update).add_(fresh);
}

at::Tensor step(Cell cell, const at::Tensor& igates, const at::Tensor& hidden, const at::Tensor& w_hh,
                const std::optional<at::Tensor>& b_hh) {
  switch (cell) {
    case Cell::Gru:
      return gru_cell(igates, hidden, w_hh, b_hh);
    case Cell::Tanh:
      return at::tanh(at::linear(hidden, w_hh, b_hh).add_(igates));
    case Cell::Relu:
      return at::relu(at::linear(hidden, w_hh, b_hh).add_(igates));
  }
  TORCH_CHECK(false, "runtime_shim: unknown recurrent cell");
}

// One layer in one direction: (outputs stacked over time, the last hidden state).
std::tuple<at::Tensor, at::Tensor> layer(Cell cell, const at::Tensor& x, at::Tensor hidden, const at::Tensor& w_ih,
                                         const at::Tensor& w_hh, const std::optional<at::Tensor>& b_ih,
                                         const std::optional<at::Tensor>& b_hh, bool reverse) {
  std::vector<at::Tensor> steps = at::linear(x, w_ih, b_ih).unbind(0);  // the whole sequence at once
  const size_t n = steps.size();
  std::vector<at::Tensor> outputs(n);
  for (size_t t = 0; t < n; ++t) {
    const size_t i = reverse ? n - 1 - t : t;
    hidden = step(cell, steps[i], hidden, w_hh, b_hh);
    outputs[i] = hidden;
  }
  return {at::stack(outputs, 0), hidden};
}

// aten::gru.input / rnn_tanh.input / rnn_relu.input on npu tensors: (output, final hidden states).
std::tuple<at::Tensor, at::Tensor> run_cells(Cell cell, const at::Tensor& input, const at::Tensor& hx,
                                             at::TensorList params, bool has_biases, int64_t num_layers,
                                             double dropout, bool train, bool bidirectional, bool batch_first) {
  const int64_t directions = bidirectional ? 2 : 1;
  const int64_t stride = has_biases ? 4 : 2;
  TORCH_CHECK(static_cast<int64_t>(params.size()) == num_layers * directions * stride,
              "runtime_shim: a recurrent layer got ", params.size(), " parameters for ", num_layers, " layers");
  at::Tensor x = batch_first ? input.transpose(0, 1) : input;
  const std::vector<at::Tensor> hiddens = hx.unbind(0);
  std::vector<at::Tensor> finals;
  for (int64_t depth = 0; depth < num_layers; ++depth) {
    std::vector<at::Tensor> outputs;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const int64_t index = depth * directions + direction;
      const at::Tensor* w = &params[index * stride];
      std::optional<at::Tensor> b_ih, b_hh;
      if (has_biases) {
        b_ih = w[2];
        b_hh = w[3];
      }
      auto [out, h] = layer(cell, x, hiddens[index], w[0], w[1], b_ih, b_hh, direction > 0);
      outputs.push_back(std::move(out));
      finals.push_back(std::move(h));
    }
    x = directions == 1 ? outputs[0] : at::cat(outputs, outputs[0].dim() - 1);
    if (dropout != 0 && train && depth < num_layers - 1) x = at::dropout(x, dropout, true);
  }
  at::Tensor output = batch_first ? x.transpose(0, 1) : x;
  return {output, at::stack(finals, 0)};
}

constexpr int64_t LSTM_MODE = 2;  // ideep::rnn_kind::LSTM, the mode number PyTorch passes for LSTM

bool mkldnn_usable(const at::Tensor& input, at::TensorList hx) {
  const auto dtype = input.scalar_type();
  return at::hasMKLDNN() && at::globalContext().userEnabledMkldnn() &&
         (dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf) && input.numel() != 0 &&
         hx[0].size(2) == hx[1].size(2);  // no projections
}

// aten::lstm.input on npu tensors, following the CPU (oneDNN) implementation: batch-first
// transpose, one mkldnn_rnn_layer per layer and direction, inter-layer dropout, the final states
// stacked.
std::tuple<at::Tensor, at::Tensor, at::Tensor> run_lstm(const at::Tensor& input, at::TensorList hx,
                                                         at::TensorList params, bool has_biases, int64_t num_layers,
                                                         double dropout, bool train, bool bidirectional,
                                                         bool batch_first) {
  TORCH_CHECK_NOT_IMPLEMENTED(mkldnn_usable(input, hx),
                              "torch.nn.LSTM on the simulated npu needs oneDNN-eligible input (float32/bfloat16/"
                              "float16, no proj_size); this configuration is not simulated by runtime_shim");
  const int64_t directions = bidirectional ? 2 : 1;
  const int64_t stride = has_biases ? 4 : 2;
  TORCH_CHECK(static_cast<int64_t>(params.size()) == num_layers * directions * stride,
              "runtime_shim: an LSTM got ", params.size(), " parameters for ", num_layers, " layers");
  const int64_t hidden_size = hx[0].size(2);
  at::Tensor x = batch_first ? input.transpose(0, 1) : input;
  x = x.contiguous();
  const at::Tensor h0 = hx[0].contiguous();
  const at::Tensor c0 = hx[1].contiguous();
  std::vector<at::Tensor> hy, cy;
  for (int64_t depth = 0; depth < num_layers; ++depth) {
    std::vector<at::Tensor> outputs;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const int64_t index = depth * directions + direction;
      const at::Tensor* w = &params[index * stride];
      at::Tensor b_ih, b_hh;
      if (has_biases) {
        b_ih = w[2];
        b_hh = w[3];
      } else {
        b_ih = at::zeros({w[0].size(0)}, w[0].options());
        b_hh = at::zeros({w[1].size(0)}, w[1].options());
      }
      auto [out, h, c, workspace] =
          at::mkldnn_rnn_layer(x, w[0], w[1], b_ih, b_hh, h0[index], c0[index], direction > 0, {}, LSTM_MODE,
                               hidden_size, num_layers, has_biases, bidirectional, batch_first, train);
      outputs.push_back(std::move(out));
      hy.push_back(std::move(h));
      cy.push_back(std::move(c));
    }
    x = directions == 1 ? outputs[0] : at::cat(outputs, -1);
    if (dropout != 0 && train && depth < num_layers - 1) x = at::dropout(x, dropout, true);
  }
  at::Tensor output = batch_first ? x.transpose(0, 1) : x;
  return {output, at::stack(hy, 0), at::stack(cy, 0)};
}

// The records the counted routes count their calls on (set by add_rnn_routes).
struct Infos {
  std::shared_ptr<OpInfo> lstm, gru, lstm_cell, gru_cell;
};

Infos& infos() {
  static auto* held = new Infos();  // never destroyed: holds Python objects
  return *held;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm(const at::Tensor& input, at::TensorList hx, at::TensorList params,
                                                     bool has_biases, int64_t num_layers, double dropout, bool train,
                                                     bool bidirectional, bool batch_first) {
  note(*infos().lstm, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first);
  Level level;
  return run_lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first);
}

std::tuple<at::Tensor, at::Tensor> gru(const at::Tensor& input, const at::Tensor& hx, at::TensorList params,
                                       bool has_biases, int64_t num_layers, double dropout, bool train,
                                       bool bidirectional, bool batch_first) {
  note(*infos().gru, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first);
  Level level;
  return run_cells(Cell::Gru, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first);
}

template <Cell cell>
std::tuple<at::Tensor, at::Tensor> rnn(const at::Tensor& input, const at::Tensor& hx, at::TensorList params,
                                       bool has_biases, int64_t num_layers, double dropout, bool train,
                                       bool bidirectional, bool batch_first) {
  return run_cells(cell, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first);
}

// aten::lstm_cell: the CPU's unfused cell (off the CPU, PyTorch would call the fused CUDA cell).
std::tuple<at::Tensor, at::Tensor> lstm_cell(const at::Tensor& input, at::TensorList hx, const at::Tensor& w_ih,
                                             const at::Tensor& w_hh, const std::optional<at::Tensor>& b_ih,
                                             const std::optional<at::Tensor>& b_hh) {
  note(*infos().lstm_cell, input, hx, w_ih, w_hh, b_ih, b_hh);
  Level level;
  at::Tensor gates = at::linear(hx[0], w_hh, b_hh);
  gates.add_(at::linear(input, w_ih, b_ih));
  const auto chunks = gates.unsafe_chunk(4, 1);
  const at::Tensor ingate = chunks[0].sigmoid_();
  const at::Tensor forgetgate = chunks[1].sigmoid_();
  const at::Tensor cellgate = chunks[2].tanh_();
  const at::Tensor outgate = chunks[3].sigmoid_();
  at::Tensor cy = forgetgate * hx[1];
  cy.add_(ingate * cellgate);
  return {outgate * cy.tanh(), cy};
}

// aten::gru_cell: the CPU's unfused cell, counted as the fused cell a real NPU decomposes it into.
at::Tensor gru_cell_op(const at::Tensor& input, const at::Tensor& hx, const at::Tensor& w_ih, const at::Tensor& w_hh,
                       const std::optional<at::Tensor>& b_ih, const std::optional<at::Tensor>& b_hh) {
  note(*infos().gru_cell, input, hx, w_ih, w_hh, b_ih, b_hh);
  Level level;
  return gru_cell(at::linear(input, w_ih, b_ih), hx, w_hh, b_hh);
}

template <class F>
void serve(torch::Library& library, const char* op, F fn) {
  library.impl(op, torch::dispatch(c10::DispatchKey::AutogradPrivateUse1, fn));
  library.impl(op, torch::dispatch(c10::DispatchKey::PrivateUse1, fn));
}

}  // namespace

std::vector<std::string> add_rnn_routes(torch::Library& library, const pybind11::dict& counters) {
  Infos& held = infos();
  held.lstm = route_info("lstm.input", {1, 2, 2, 0, 0, 0, 0, 0, 0}, counters);
  held.gru = route_info("gru.input", {1, 1, 2, 0, 0, 0, 0, 0, 0}, counters);
  held.lstm_cell = route_info("lstm_cell", {1, 2, 1, 1, 1, 1}, counters);
  held.gru_cell = route_info("_thnn_fused_gru_cell", {1, 1, 1, 1, 1, 1}, counters);
  serve(library, "lstm.input", TORCH_FN(lstm));
  serve(library, "gru.input", TORCH_FN(gru));
  serve(library, "rnn_tanh.input", TORCH_FN(rnn<Cell::Tanh>));
  serve(library, "rnn_relu.input", TORCH_FN(rnn<Cell::Relu>));
  serve(library, "lstm_cell", TORCH_FN(lstm_cell));
  serve(library, "gru_cell", TORCH_FN(gru_cell_op));
  return {"lstm.input", "gru.input", "rnn_tanh.input", "rnn_relu.input", "lstm_cell", "gru_cell"};
}

}  // namespace runtime_shim
