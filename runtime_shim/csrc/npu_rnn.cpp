// GRU and plain RNN (tanh / relu) layers on the simulated npu, in C++: the sequence of ATen calls
// backend/rnn.py makes in Python (_run_cells, _layer, _gru_cell, _simple_cell), made here without
// a Python round trip per op. On the CPU, PyTorch runs these layers as unfused cells over an input
// projection computed once for the whole sequence; off the CPU it would pick a fused CUDA cell,
// which the npu has no kernel for. Each call below goes through the dispatcher as the Python one
// does, so autograd records the same graph and the results and gradients are the CPU's, bit for bit.
#include <ATen/ATen.h>
#include <torch/extension.h>

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

Cell cell_of(const std::string& mode) {
  if (mode == "gru") return Cell::Gru;
  if (mode == "rnn_tanh") return Cell::Tanh;
  if (mode == "rnn_relu") return Cell::Relu;
  TORCH_CHECK(false, "runtime_shim: no recurrent cell ", mode);
}

// aten::gru.input / rnn_tanh.input / rnn_relu.input on npu tensors: (output, final hidden states).
std::tuple<at::Tensor, at::Tensor> run_cells(const std::string& mode, const at::Tensor& input, const at::Tensor& hx,
                                             const std::vector<at::Tensor>& params, bool has_biases,
                                             int64_t num_layers, double dropout, bool train, bool bidirectional,
                                             bool batch_first) {
  const Cell cell = cell_of(mode);
  const int64_t directions = bidirectional ? 2 : 1;
  const int64_t stride = has_biases ? 4 : 2;
  TORCH_CHECK(static_cast<int64_t>(params.size()) == num_layers * directions * stride,
              "runtime_shim: ", mode, " got ", params.size(), " parameters for ", num_layers, " layers");
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

}  // namespace

void init_rnn(pybind11::module& m) {
  m.def("run_cells", &run_cells,
        "gru / rnn_tanh / rnn_relu over a padded sequence as the CPU runs them: (output, final hidden states)");
}

}  // namespace runtime_shim
