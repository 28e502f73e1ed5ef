#include "models/wan/wan_tiny.h"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Generator.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>

namespace vidgraph::wan {

WanConfig wan_tiny_config() {
  WanConfig c;
  c.dim = 64;
  c.ffn_dim = 128;
  c.num_heads = 2;
  c.num_layers = 2;
  c.in_dim = 48;
  c.out_dim = 48;
  c.text_dim = 64;
  c.text_len = 32;
  c.freq_dim = 32;
  return c;
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// FNV-1a of the parameter name mixed with the seed: each parameter's draw depends only on its name,
// so adding the sparse extras leaves every other weight unchanged.
uint64_t param_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ULL ^ (seed * 0x9E3779B97F4A7C15ULL);
  for (unsigned char ch : name) {
    h = (h ^ ch) * 1099511628211ULL;
  }
  return h;
}

}  // namespace

void wan_init_weights(WanModelImpl& model, uint64_t seed) {
  c10::NoGradGuard no_grad;
  for (auto& [name, param] : wan_named_parameters(model)) {
    at::Generator gen = at::detail::createCPUGenerator(param_seed(seed, name));
    at::Tensor n = at::randn(param.sizes(), gen, at::TensorOptions().dtype(at::kFloat));
    at::Tensor value;
    if (ends_with(name, "modulation")) {
      value = n * 0.1;
    } else if (ends_with(name, ".bias")) {
      value = n * 0.02;
    } else if (param.dim() == 1) {
      value = n * 0.1 + 1.0;  // norm weights
    } else {
      const int64_t fan_in = param.numel() / param.size(0);
      value = n / std::sqrt(static_cast<double>(fan_in));
    }
    param.copy_(value.to(param.device(), param.scalar_type()));
  }
}

WanModel wan_make_model(const WanConfig& config, uint64_t seed) {
  WanModelOptions o;
  o.config = config;
  WanModel model(o);
  wan_init_weights(*model, seed);
  return model;
}

void wan_save_tiny(const std::string& path, const WanConfig& config, uint64_t seed, const WanSaveOptions& options) {
  WanModel model = wan_make_model(config, seed);
  wan_save_checkpoint(*model, path, options);
}

}  // namespace vidgraph::wan
