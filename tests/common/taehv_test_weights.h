// Test fixture: taew2_2's decoder state dict as the reference names and shapes it (decoder.<i>.*
// at the real widths 256/128/64/64, 48 latent channels, patch 2), random seeded weights scaled so
// the outputs are mostly inside (0, 1). The stride-1 TGrow (decoder.7) is written twice as wide,
// as a checkpoint trained with stride 2 would be. Header-only; no product code uses it.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/randn.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace vidgraph::test {

using Weights = std::vector<std::pair<std::string, at::Tensor>>;

inline Weights taew2_2_weights(uint64_t seed) {
  const std::vector<int64_t> widths{256, 128, 64, 64};
  at::Generator g = at::detail::createCPUGenerator(seed);
  Weights w;
  // Variance-keeping scales (the residual sums of 9 MemBlocks still grow a little); the last conv
  // smaller, so that most output pixels land inside (0, 1) rather than on the clamp.
  auto conv = [&](const std::string& name, int64_t out, int64_t in, int64_t k, bool bias, double bias_value = 0.0,
                  double gain = 1.0) {
    const double scale = gain * std::sqrt(1.0 / double(in * k * k));
    w.emplace_back(name + ".weight", at::randn({out, in, k, k}, g) * scale);
    if (bias) w.emplace_back(name + ".bias", at::randn({out}, g) * 0.05 + bias_value);
  };
  w.emplace_back("encoder.0.weight", at::randn({64, 12, 3, 3}, g));  // ignored by the decoder
  conv("decoder.1", widths[0], 48, 3, true);
  const int first[3] = {3, 9, 15}, grow[3] = {7, 13, 19}, proj[3] = {8, 14, 20};
  for (int s = 0; s < 3; ++s) {
    const int64_t n = widths[s];
    for (int b = 0; b < 3; ++b) {
      const std::string p = "decoder." + std::to_string(first[s] + b) + ".conv.";
      conv(p + "0", n, 2 * n, 3, true);
      conv(p + "2", n, n, 3, true);
      conv(p + "4", n, n, 3, true);
    }
    w.emplace_back("decoder." + std::to_string(grow[s]) + ".conv.weight",
                   at::randn({n * 2, n, 1, 1}, g) * std::sqrt(1.0 / double(n)));
    conv("decoder." + std::to_string(proj[s]), widths[s + 1], n, 3, false);
  }
  conv("decoder.22", 12, widths[3], 3, true, 0.5, 0.05);
  return w;
}

}  // namespace vidgraph::test
