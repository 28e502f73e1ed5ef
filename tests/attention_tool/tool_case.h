// One case of `vidgraph-attention run --backward`: the float64 inputs the test writes (q, k, v, do,
// and the method's extras), with the reference output and the gradients the tool must reproduce, in
// the tool's output order (dq, dk, dv, dgate, dproj_l.weight, dproj_l.bias).
#pragma once

#include "attention_reference.h"
#include "models/io/safetensors.h"

#include <ATen/ops/randn.h>
#include <torch/csrc/autograd/autograd.h>

#include <array>
#include <string>
#include <vector>

namespace tool_case {

struct ToolCase {
  vidgraph::model_io::NamedTensors inputs;
  at::Tensor expect;               // o
  std::vector<at::Tensor> grads;   // one per entry of grad_names(), as many as the method has
};

inline const std::vector<std::string>& grad_names() {
  static const std::vector<std::string> names{"dq", "dk", "dv", "dgate", "dproj_l.weight", "dproj_l.bias"};
  return names;
}

// [b, s, h, d] inputs on `grid` (s = its volume), drawn from the current seed; proj_l's weight is
// scaled by `w_scale`.
inline ToolCase make(const std::string& method, double sparsity, const std::array<int64_t, 3>& grid, int64_t b,
                     int64_t h, int64_t d, double w_scale = 1.0) {
  namespace ref = attention_reference;
  const int64_t s = grid[0] * grid[1] * grid[2];
  auto leaf = [](at::Tensor t) { return t.requires_grad_(true); };
  const at::Tensor q = leaf(at::randn({b, s, h, d}, at::kDouble)), k = leaf(at::randn({b, s, h, d}, at::kDouble)),
                   v = leaf(at::randn({b, s, h, d}, at::kDouble)), gate = leaf(at::randn({b, s, h, d}, at::kDouble)),
                   w = leaf(at::randn({d, d}, at::kDouble) * w_scale), bias = leaf(at::randn({d}, at::kDouble));
  const at::Tensor dout = at::randn({b, s, h, d}, at::kDouble);
  ToolCase c;
  c.inputs = {{"q", q}, {"k", k}, {"v", v}, {"do", dout}};
  std::vector<at::Tensor> wrt{q, k, v};
  if (method == "full") {
    c.expect = ref::dense_attention(q, k, v);
  } else {
    c.inputs.push_back({"gate", gate});
    wrt.push_back(gate);
    c.expect = ref::vsa(q, k, v, gate, grid, {4, 4, 4}, sparsity).out;
    if (method == "sla_star") {
      c.inputs.push_back({"proj_l.weight", w});
      c.inputs.push_back({"proj_l.bias", bias});
      wrt.push_back(w);
      wrt.push_back(bias);
      c.expect = c.expect + at::matmul(ref::linear_branch(q, k, v, "softmax"), w.t()) + bias;
    }
  }
  c.grads = torch::autograd::grad({c.expect}, wrt, {dout});
  c.expect = c.expect.detach();
  return c;
}

}  // namespace tool_case
