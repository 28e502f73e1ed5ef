// save_lora (ComfyUI LoRA layout) and save_full_checkpoint (official key layout).
#include <stdexcept>

#include <ATen/TensorOperators.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include "models/io/safetensors.h"
#include "models/train/trainer.h"

namespace vidgraph::train {

namespace {

bool is_sparse_extra_param(const std::string& name) {
  return name.find(".self_attn.to_gate_compress.") != std::string::npos ||
         name.find(".self_attn.proj_l.") != std::string::npos;
}

}  // namespace

void save_lora(const wan::WanModelImpl& model, const std::string& path, const std::set<std::string>& leave_out,
               at::ScalarType dtype) {
  c10::NoGradGuard no_grad;
  const auto modules = attached_lora_modules(model);
  if (modules.empty()) {
    throw std::invalid_argument("Cannot write the LoRA file '" + path +
                                "': the model has no LoRA adapter attached (train in LoRA mode first).");
  }
  model_io::NamedTensors tensors;
  for (const auto& m : modules) {
    const wan::WanLinearAdapter& a = m.linear->adapter;
    const std::string key = "diffusion_model." + m.name;
    const double rank = static_cast<double>(a.down.size(0));
    tensors.emplace_back(key + ".lora_down.weight", a.down.detach().to(dtype));
    tensors.emplace_back(key + ".lora_up.weight", a.up.detach().to(dtype));
    tensors.emplace_back(key + ".alpha", at::scalar_tensor(a.scale * rank, at::TensorOptions().dtype(at::kFloat)));
  }
  // Zero extras are the same as absent ones: only non-zero (trained or loaded) extras are written.
  for (const auto& [name, param] : wan::wan_named_parameters(const_cast<wan::WanModelImpl&>(model))) {
    if (is_sparse_extra_param(name) && !leave_out.count(name) && param.ne(0).any().item<bool>()) {
      tensors.emplace_back("diffusion_model." + name, param.detach().to(dtype));
    }
  }
  model_io::save_safetensors(path, tensors, {{"format", "pt"}, {"vidgraph_lora", "wan2.2"}});
}

void save_full_checkpoint(const wan::WanModelImpl& model, const std::string& path,
                          std::optional<at::ScalarType> dtype) {
  c10::NoGradGuard no_grad;
  auto& m = const_cast<wan::WanModelImpl&>(model);
  std::map<std::string, const wan::WanLinearAdapter*> adapters;
  for (const auto& lm : attached_lora_modules(model)) {
    adapters[lm.name + ".weight"] = &lm.linear->adapter;
  }
  model_io::NamedTensors tensors;
  for (const auto& [name, param] : wan::wan_named_weights(m)) {
    at::Tensor t = param.detach();
    if (auto it = adapters.find(name); it != adapters.end()) {
      const wan::WanLinearAdapter& a = *it->second;
      const at::Tensor delta = at::matmul(a.up.to(at::kFloat), a.down.to(at::kFloat)).mul_(a.scale);
      t = (t.to(at::kFloat) + delta.to(t.device())).to(t.scalar_type());  // W + scale * up down
    }
    tensors.emplace_back(name, dtype ? t.to(*dtype) : t);
  }
  model_io::save_safetensors(path, tensors,
                             {{"vidgraph_wan_config", model.config().to_json().dump()}, {"format", "pt"}});
}

}  // namespace vidgraph::train
