// Matching a LoRA to the Wan DiT's parameters and building the patched model. See wan_lora.h.
#include "models/wan/wan_lora.h"

#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <ATen/TensorOperators.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include "models/wan/wan_keys.h"

namespace vidgraph::wan {
namespace {

using ParamMap = std::map<std::string, at::Tensor>;
using LinearMap = std::map<std::string, WanLinearImpl*>;

std::string shape_of(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

bool is_gate(const std::string& module) { return module.find(".self_attn.to_gate_compress") != std::string::npos; }
bool is_proj_l(const std::string& module) { return module.find(".self_attn.proj_l") != std::string::npos; }

std::string without_param_suffix(const std::string& name) {
  for (const std::string suffix : {".weight", ".bias"}) {
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return name.substr(0, name.size() - suffix.size());
  }
  return name;  // a parameter that is its own module (blocks.N.modulation, head.modulation)
}

// The parameter names a model of `base`'s config would have with both sparse extras.
std::set<std::string> names_with_extras(WanModelImpl& base) {
  std::set<std::string> names;
  for (const auto& [name, t] : wan_named_parameters(base)) names.insert(name);
  for (int64_t i = 0; i < base.config().num_layers; ++i) {
    for (const char* extra : {"to_gate_compress", "proj_l"}) {
      for (const char* p : {"weight", "bias"}) {
        names.insert("blocks." + std::to_string(i) + ".self_attn." + extra + "." + p);
      }
    }
  }
  return names;
}

// Our module name for a stored one: official or diffusers naming, or kohya's underscores.
class ModuleResolver {
 public:
  explicit ModuleResolver(const std::set<std::string>& names) : names_(names) {
    for (const std::string& name : names) {
      std::string module = without_param_suffix(name), flat = module;
      for (char& c : flat) c = c == '.' ? '_' : c;
      underscored_[flat] = module;
    }
  }
  std::optional<std::string> resolve(const std::string& stored) const {
    const std::string kohya = "lora_unet_";
    if (stored.compare(0, kohya.size(), kohya) == 0) {
      const auto it = underscored_.find(stored.substr(kohya.size()));
      if (it != underscored_.end()) return it->second;
      return std::nullopt;
    }
    for (const KeyNaming naming : {KeyNaming::Official, KeyNaming::Diffusers}) {
      for (const std::string suffix : {".weight", ".bias", ""}) {
        const auto c = canonical_key(stored + suffix, naming);
        if (c && names_.count(*c)) return without_param_suffix(*c);
      }
    }
    return std::nullopt;
  }

 private:
  const std::set<std::string>& names_;
  std::map<std::string, std::string> underscored_;
};

struct Resolved {
  std::string module;  // our module name
  const WanLoraModule* tensors;
};

// W (`name` in `params`) plus this module's change, in fp32 on W's device, rounded to W's dtype.
class Patcher {
 public:
  Patcher(const WanLora& lora, const ParamMap& targets, const ParamMap& base, const LinearMap& base_linears,
          c10::Device device, int64_t dim, double strength)
      : lora_(lora), targets_(targets), base_(base), base_linears_(base_linears), device_(device), dim_(dim),
        strength_(strength) {}

  void apply(const Resolved& r, ParamMap& out) {
    const WanLoraModule& m = *r.tensors;
    const std::string weight = targets_.count(r.module + ".weight") ? r.module + ".weight" : r.module;
    const std::string bias = r.module + ".bias";
    if (m.up.defined() != m.down.defined()) {
      fail(r.module, std::string("has ") + (m.up.defined() ? "lora_up but no lora_down" : "lora_down but no lora_up"));
    }
    if (m.weight.defined() || m.bias.defined()) {
      if (!is_gate(r.module) && !is_proj_l(r.module)) return;  // counted as unmatched by the caller
      if (m.weight.defined()) replace(weight, m.weight, r.module, out);
      if (m.bias.defined()) replace(bias, m.bias, r.module, out);
    }
    if (strength_ == 0.0) return;
    if (m.up.defined()) add(weight, low_rank_delta(r.module, m, current(weight, out)), out);
    if (m.diff.defined()) add(weight, checked(r.module, "diff", m.diff, current(weight, out)), out);
    if (m.diff_b.defined()) {
      if (!targets_.count(bias)) fail(r.module, "has diff_b but the layer has no bias");
      add(bias, checked(r.module, "diff_b", m.diff_b, current(bias, out)), out);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& module, const std::string& what) const {
    throw std::runtime_error("LoRA '" + lora_.path + "': layer '" + module + "' " + what + ".");
  }
  [[noreturn]] void mismatch(const std::string& module, const std::string& what, const at::Tensor& w) const {
    throw std::runtime_error("LoRA '" + lora_.path + "' does not fit this model: layer '" + module + "' " + what +
                             ", the model's weight is " + shape_of(w) + " (dim " + std::to_string(dim_) +
                             "); it is a LoRA for another model, not for Wan2.2-TI2V-5B.");
  }
  // The value so far: an earlier patch of this run, the base model's tensor (fp8 codes looked up:
  // a patched layer becomes a private copy in the compute dtype), or zeros (new extra).
  at::Tensor current(const std::string& name, const ParamMap& out) const {
    if (const auto it = out.find(name); it != out.end()) return it->second;
    if (const auto it = base_linears_.find(name); it != base_linears_.end()) return it->second->dense_weight();
    if (const auto it = base_.find(name); it != base_.end()) return it->second;
    const at::Tensor& shell = targets_.at(name);
    return at::zeros(shell.sizes(), shell.options().device(device_));
  }
  at::Tensor checked(const std::string& module, const char* what, const at::Tensor& d, const at::Tensor& w) const {
    if (d.sizes() != w.sizes()) mismatch(module, std::string("has a ") + what + " of shape " + shape_of(d), w);
    return d;
  }
  at::Tensor low_rank_delta(const std::string& module, const WanLoraModule& m, const at::Tensor& w) const {
    const at::Tensor up = m.up.flatten(1), down = m.down.flatten(1);  // [out, r], [r, in...]
    const int64_t rank = down.size(0);
    const std::string shapes = "has lora_up " + shape_of(m.up) + " and lora_down " + shape_of(m.down);
    if (up.size(1) != rank || w.dim() == 0 || up.size(0) != w.size(0) || down.size(1) * w.size(0) != w.numel()) {
      mismatch(module, shapes, w);
    }
    double scale = 1.0;
    if (m.alpha.defined()) {
      if (m.alpha.numel() != 1) fail(module, "has an alpha of shape " + shape_of(m.alpha) + ", expected one value");
      scale = m.alpha.item<double>() / double(rank);
    }
    return up.matmul(down).mul_(scale).view(w.sizes());
  }
  void add(const std::string& name, const at::Tensor& delta, ParamMap& out) const {
    const at::Tensor w = current(name, out);
    out[name] = (w.to(at::kFloat) + delta.to(w.device(), at::kFloat) * strength_).to(w.scalar_type());
  }
  void replace(const std::string& name, const at::Tensor& value, const std::string& module, ParamMap& out) const {
    const at::Tensor& shell = targets_.at(name);
    if (value.sizes() != shell.sizes()) mismatch(module, "has a tensor of shape " + shape_of(value), shell);
    const at::Tensor w = current(name, out);
    out[name] = value.to(w.device(), w.scalar_type());
  }

  const WanLora& lora_;
  const ParamMap& targets_;
  const ParamMap& base_;
  const LinearMap& base_linears_;
  c10::Device device_;
  int64_t dim_;
  double strength_;
};

// A model of `config` whose parameters are CPU tensors never written (at::empty costs address space,
// not memory), to be pointed at the base model's tensors or the patched ones.
std::shared_ptr<WanModelImpl> make_shell(WanModelImpl& base, const WanConfig& config) {
  WanModelOptions o = base.options;
  o.config = config;
  o.device = c10::Device(c10::kCPU);
  return std::make_shared<WanModelImpl>(o);
}

ParamMap to_map(const std::vector<std::pair<std::string, at::Tensor>>& list) {
  return ParamMap(list.begin(), list.end());
}

}  // namespace

WanLoraResult wan_apply_lora(WanModelImpl& base, const WanLora& lora, double strength) {
  c10::NoGradGuard no_grad;
  const ParamMap base_params = to_map(wan_named_parameters(base));
  const std::set<std::string> names = names_with_extras(base);
  const ModuleResolver resolver(names);
  WanLoraResult result;
  std::vector<Resolved> resolved;
  WanConfig config = base.config();
  for (const auto& [stored, tensors] : lora.modules) {
    const auto module = resolver.resolve(stored);
    const bool plain_only = !tensors.up.defined() && !tensors.diff.defined() && !tensors.diff_b.defined() &&
                            !tensors.alpha.defined();
    if (!module || (plain_only && !is_gate(*module) && !is_proj_l(*module))) {
      result.unmatched.push_back(tensors.first_key);
      continue;
    }
    config.with_gate_compress = config.with_gate_compress || is_gate(*module);
    config.with_proj_l = config.with_proj_l || is_proj_l(*module);
    resolved.push_back({*module, &tensors});
  }
  for (const std::string& key : lora.other_keys) result.unmatched.push_back(key);
  if (resolved.empty()) {
    std::string examples;
    for (size_t i = 0; i < result.unmatched.size() && i < 3; ++i) examples += (i ? ", '" : "'") + result.unmatched[i] + "'";
    throw std::runtime_error("LoRA '" + lora.path + "': none of its " + std::to_string(result.unmatched.size()) +
                             " keys match a layer of the Wan DiT (e.g. " + examples +
                             "); this LoRA is not for Wan2.2-TI2V-5B.");
  }
  std::shared_ptr<WanModelImpl> model = make_shell(base, config);
  const ParamMap targets = to_map(wan_named_parameters(*model));
  ParamMap patched;
  const LinearMap base_linears = wan_linears_by_weight(base);
  Patcher patcher(lora, targets, base_params, base_linears, base.device(), base.config().dim, strength);
  for (const Resolved& r : resolved) patcher.apply(r, patched);
  for (auto& [name, param] : wan_named_parameters(*model)) {
    if (const auto it = patched.find(name); it != patched.end()) {
      param.set_data(it->second);
      result.private_bytes += size_t(it->second.numel() * it->second.element_size());
      ++result.layers_patched;
    } else if (const auto b = base_params.find(name); b != base_params.end()) {
      param.set_data(b->second);  // shares the base tensor's storage
    } else {  // an extra the LoRA gives for other blocks only: zero, as the checkpoint loader does
      param.set_data(at::zeros(param.sizes(), param.options().device(base.device())));
      result.private_bytes += size_t(param.numel() * param.element_size());
    }
  }
  // Layers left as they are share the base's fp8 codes, so they need its value table too.
  const LinearMap shell_linears = wan_linears_by_weight(*model);
  for (const auto& [name, linear] : base_linears) {
    if (linear->fp8_table.defined() && !patched.count(name)) shell_linears.at(name)->fp8_table = linear->fp8_table;
  }
  // The shell was built on the CPU; it now runs where its tensors are.
  model->options.device = base.device();
  result.model = std::move(model);
  return result;
}

std::string wan_lora_unmatched_sentence(const WanLora& lora, const WanLoraResult& result) {
  if (result.unmatched.empty()) return {};
  std::string examples;
  for (size_t i = 0; i < result.unmatched.size() && i < 3; ++i) examples += (i ? ", '" : "'") + result.unmatched[i] + "'";
  size_t keys = lora.other_keys.size() + lora.modules.size();
  return "LoRA '" + lora.path + "': " + std::to_string(result.unmatched.size()) + " of " + std::to_string(keys) +
         " modules match no layer of the Wan DiT and were skipped, e.g. " + examples;
}

}  // namespace vidgraph::wan
