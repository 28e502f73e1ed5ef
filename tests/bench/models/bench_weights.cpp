// Implements bench_weights.h.
#include "bench_weights.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>

namespace vidgraph::bench {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void relocate_parameters(torch::nn::Module& module, const at::TensorOptions& options) {
  c10::NoGradGuard no_grad;
  for (auto& item : module.named_parameters(/*recurse=*/true)) {
    at::Tensor& p = item.value();
    p.set_data(at::empty(p.sizes(), options));
  }
}

void fill_random_parameters(torch::nn::Module& module) {
  c10::NoGradGuard no_grad;
  for (auto& item : module.named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    at::Tensor& p = item.value();
    if (ends_with(name, "modulation")) {
      p.normal_(0.0, 0.05);
    } else if (ends_with(name, "bias")) {
      p.normal_(0.0, 0.02);
    } else if (ends_with(name, "gamma") || p.dim() == 1) {
      p.normal_(1.0, 0.1);
    } else {
      const int64_t fan_in = p.size(0) > 0 ? p.numel() / p.size(0) : 1;
      p.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fan_in, 1))));
    }
  }
}

int64_t parameter_bytes(const torch::nn::Module& module) {
  int64_t bytes = 0;
  for (const auto& p : module.parameters(/*recurse=*/true)) {
    bytes += p.numel() * static_cast<int64_t>(p.element_size());
  }
  return bytes;
}

}  // namespace vidgraph::bench
