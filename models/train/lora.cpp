#include "models/train/lora.h"

#include <cmath>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Generator.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include "models/train/train_seed.h"

namespace vidgraph::train {

std::vector<std::string> lora_default_targets() {
  return {"self_attn.q", "self_attn.k", "self_attn.v", "self_attn.o"};
}

namespace {

// '*' matches any run of characters except '.'.
bool glob_matches(const char* p, const char* s) {
  if (*p == '\0') {
    return *s == '\0';
  }
  if (*p == '*') {
    for (const char* t = s;; ++t) {
      if (glob_matches(p + 1, t)) {
        return true;
      }
      if (*t == '\0' || *t == '.') {
        return false;
      }
    }
  }
  return *p == *s && glob_matches(p + 1, s + 1);
}

// "blocks.12.self_attn.q" -> "self_attn.q"; other names unchanged.
std::string without_block_prefix(const std::string& name) {
  const std::string prefix = "blocks.";
  if (name.compare(0, prefix.size(), prefix) != 0) {
    return name;
  }
  const size_t dot = name.find('.', prefix.size());
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

bool is_sparse_extra(const std::string& name) {
  return name.find("to_gate_compress") != std::string::npos || name.find("proj_l") != std::string::npos;
}

}  // namespace

bool lora_pattern_matches(const std::string& pattern, const std::string& name) {
  return glob_matches(pattern.c_str(), name.c_str()) ||
         glob_matches(pattern.c_str(), without_block_prefix(name).c_str());
}

std::vector<std::pair<std::string, wan::WanLinearImpl*>> wan_named_linears(const wan::WanModelImpl& model) {
  std::vector<std::pair<std::string, wan::WanLinearImpl*>> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    if (auto* linear = item.value()->as<wan::WanLinearImpl>()) {
      out.emplace_back(item.key(), linear);
    }
  }
  return out;
}

std::vector<LoraModule> lora_target_modules(const wan::WanModelImpl& model, const LoraOptions& options) {
  const std::vector<std::string> targets = options.targets.empty() ? lora_default_targets() : options.targets;
  std::vector<bool> used(targets.size(), false);
  std::vector<LoraModule> out;  // in module order
  for (const auto& [name, linear] : wan_named_linears(model)) {
    if (is_sparse_extra(name)) {
      continue;
    }
    bool selected = false;
    for (size_t i = 0; i < targets.size(); ++i) {
      if (lora_pattern_matches(targets[i], name)) {
        used[i] = true;
        selected = true;
      }
    }
    if (selected) {
      out.push_back({name, linear});
    }
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!used[i]) {
      throw std::invalid_argument("LoRA target '" + targets[i] +
                                  "' matches no linear layer of the model; use module names such as self_attn.q, "
                                  "cross_attn.*, ffn.0 or blocks.0.self_attn.o.");
    }
  }
  return out;
}

std::vector<LoraModule> attach_lora(wan::WanModelImpl& model, const LoraOptions& options, uint64_t seed,
                                    double strength) {
  if (options.rank <= 0) {
    throw std::invalid_argument("LoRA rank must be at least 1, got " + std::to_string(options.rank) + ".");
  }
  if (!(options.alpha > 0)) {
    throw std::invalid_argument("LoRA alpha must be positive, got " + std::to_string(options.alpha) + ".");
  }
  std::vector<LoraModule> modules = lora_target_modules(model, options);
  c10::NoGradGuard no_grad;
  for (const auto& m : modules) {
    const int64_t in = m.linear->options.in_features, out = m.linear->options.out_features;
    const auto f32 = at::TensorOptions().dtype(at::kFloat);
    at::Generator gen = at::detail::createCPUGenerator(mix_seed(seed, name_hash(m.name)));
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));  // kaiming_uniform_(a = sqrt(5))
    at::Tensor down = at::empty({options.rank, in}, f32).uniform_(-bound, bound, gen);
    wan::WanLinearAdapter adapter;
    adapter.down = down.to(m.linear->weight.device());
    adapter.up = at::zeros({out, options.rank}, f32.device(m.linear->weight.device()));
    adapter.scale = strength * options.alpha / options.rank;
    m.linear->adapter = adapter;
  }
  return modules;
}

void detach_lora(wan::WanModelImpl& model) {
  for (const auto& [name, linear] : wan_named_linears(model)) {
    linear->adapter = wan::WanLinearAdapter{};
  }
}

std::vector<LoraModule> attached_lora_modules(const wan::WanModelImpl& model) {
  std::vector<LoraModule> out;
  for (const auto& [name, linear] : wan_named_linears(model)) {
    if (linear->adapter.attached()) {
      out.push_back({name, linear});
    }
  }
  return out;
}

}  // namespace vidgraph::train
