#include "vae_checkpoint.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>

#include "models/io/model_part_files.h"
#include "models/io/state_dict_file.h"

namespace vidgraph::vae {

namespace {

using model_io::NamedTensors;

std::vector<std::string> split(const std::string& key) {
  std::vector<std::string> parts;
  std::stringstream s(key);
  for (std::string p; std::getline(s, p, '.');) {
    parts.push_back(p);
  }
  return parts;
}

std::string join(const std::vector<std::string>& parts, size_t from) {
  std::string out;
  for (size_t i = from; i < parts.size(); ++i) {
    out += (out.empty() ? "" : ".") + parts[i];
  }
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Residual-block suffix renames (official <-> diffusers).
const std::vector<std::pair<std::string, std::string>>& resnet_renames() {
  static const std::vector<std::pair<std::string, std::string>> r = {{"residual.0.", "norm1."},
                                                                     {"residual.2.", "conv1."},
                                                                     {"residual.3.", "norm2."},
                                                                     {"residual.6.", "conv2."},
                                                                     {"shortcut.", "conv_shortcut."}};
  return r;
}

std::string rename_resnet(const std::string& rest, bool to_diffusers) {
  for (const auto& [official, diffusers] : resnet_renames()) {
    const std::string& from = to_diffusers ? official : diffusers;
    const std::string& to = to_diffusers ? diffusers : official;
    if (starts_with(rest, from)) {
      return to + rest.substr(from.size());
    }
  }
  return rest;
}

}  // namespace

std::string vae_key_to_diffusers(const std::string& key, const WanVaeConfig&) {
  const std::vector<std::string> p = split(key);
  if (p.size() >= 2 && (p[0] == "conv1" || p[0] == "conv2")) {
    return (p[0] == "conv1" ? "quant_conv." : "post_quant_conv.") + join(p, 1);
  }
  if (p.size() < 3 || (p[0] != "encoder" && p[0] != "decoder")) {
    return key;
  }
  const std::string top = p[0] + ".";
  if (p[1] == "conv1") {
    return top + "conv_in." + join(p, 2);
  }
  if (p[1] == "head") {
    return top + (p[2] == "0" ? "norm_out." : "conv_out.") + join(p, 3);
  }
  if (p[1] == "middle") {
    if (p[2] == "1") {
      return top + "mid_block.attentions.0." + join(p, 3);
    }
    return top + "mid_block.resnets." + (p[2] == "0" ? "0." : "1.") + rename_resnet(join(p, 3), true);
  }
  if ((p[1] == "downsamples" || p[1] == "upsamples") && p.size() >= 6) {
    const bool down = p[1] == "downsamples";
    const std::string block = top + (down ? "down_blocks." : "up_blocks.") + p[2] + ".";
    if (p[5] == "resample" || p[5] == "time_conv") {
      return block + (down ? "downsampler." : "upsampler.") + join(p, 5);
    }
    return block + "resnets." + p[4] + "." + rename_resnet(join(p, 5), true);
  }
  return key;
}

std::string vae_key_from_diffusers(const std::string& key, const WanVaeConfig& config) {
  const std::vector<std::string> p = split(key);
  if (p.size() >= 2 && (p[0] == "quant_conv" || p[0] == "post_quant_conv")) {
    return (p[0] == "quant_conv" ? "conv1." : "conv2.") + join(p, 1);
  }
  if (p.size() < 3 || (p[0] != "encoder" && p[0] != "decoder")) {
    return key;
  }
  const std::string top = p[0] + ".";
  if (p[1] == "conv_in") {
    return top + "conv1." + join(p, 2);
  }
  if (p[1] == "norm_out" || p[1] == "conv_out") {
    return top + (p[1] == "norm_out" ? "head.0." : "head.2.") + join(p, 2);
  }
  if (p[1] == "mid_block" && p.size() >= 5) {
    if (p[2] == "attentions") {
      return top + "middle.1." + join(p, 4);
    }
    return top + "middle." + (p[3] == "0" ? "0." : "2.") + rename_resnet(join(p, 4), false);
  }
  if ((p[1] == "down_blocks" || p[1] == "up_blocks") && p.size() >= 5) {
    const bool down = p[1] == "down_blocks";
    const std::string block =
        top + (down ? "downsamples." : "upsamples.") + p[2] + (down ? ".downsamples." : ".upsamples.");
    if (p[3] == "downsampler" || p[3] == "upsampler") {
      return block + std::to_string(config.num_res_blocks + (down ? 0 : 1)) + "." + join(p, 4);
    }
    if (p[3] == "resnets" && p.size() >= 6) {
      return block + p[4] + "." + rename_resnet(join(p, 5), false);
    }
  }
  return key;
}

VaeLayout detect_vae_layout(const NamedTensors& tensors) {
  for (const auto& [k, t] : tensors) {
    if (k.find("encoder.conv_in.") != std::string::npos || k.find("decoder.conv_in.") != std::string::npos ||
        k.find("mid_block.") != std::string::npos) {
      return VaeLayout::Diffusers;
    }
  }
  return VaeLayout::Official;
}

NamedTensors vae_official_tensors(NamedTensors tensors, const std::string& origin) {
  // Strip the prefix in front of the decoder's first conv (e.g. "vae.", "first_stage_model.").
  std::string prefix;
  bool found = false;
  for (const auto& [k, t] : tensors) {
    for (const char* anchor : {"decoder.conv1.weight", "decoder.conv_in.weight"}) {
      const size_t at = k.rfind(anchor);
      if (at != std::string::npos && at + std::string(anchor).size() == k.size()) {
        prefix = k.substr(0, at);
        found = true;
      }
    }
  }
  if (!found) {
    throw std::runtime_error("'" + origin +
                             "' does not hold a Wan VAE: no 'decoder.conv1.weight' (official) or "
                             "'decoder.conv_in.weight' (diffusers) tensor");
  }
  NamedTensors selected;
  for (auto& [k, t] : tensors) {
    if (starts_with(k, prefix)) {
      selected.emplace_back(k.substr(prefix.size()), std::move(t));
    }
  }
  if (detect_vae_layout(selected) == VaeLayout::Official) {
    return selected;
  }
  WanVaeConfig c;
  c.num_res_blocks = 0;
  while (model_io::find_tensor(selected,
                               "encoder.down_blocks.0.resnets." + std::to_string(c.num_res_blocks) + ".conv1.weight") ||
         model_io::find_tensor(
             selected, "decoder.up_blocks.0.resnets." + std::to_string(c.num_res_blocks + 1) + ".conv1.weight")) {
    ++c.num_res_blocks;
  }
  for (auto& [k, t] : selected) {
    k = vae_key_from_diffusers(k, c);
  }
  return selected;
}

WanVaeConfig detect_vae_config(const NamedTensors& official, const std::string& origin) {
  // Every size read from a shape is checked before it divides anything: a crafted file with a zero
  // dimension must get an error naming the tensor, not SIGFPE.
  const auto invalid = [&](const std::string& name, const at::Tensor& t, const std::string& what) {
    return std::runtime_error("'" + origin + "' is not a valid Wan2.2 VAE checkpoint: tensor '" + name +
                              "' has shape " + model_io::shape_string(t) + ", " + what);
  };
  const auto need = [&](const std::string& name, int64_t rank) -> const at::Tensor& {
    const at::Tensor* t = model_io::find_tensor(official, name);
    if (t == nullptr) {
      throw std::runtime_error("'" + origin + "' does not look like a Wan2.2 VAE: tensor '" + name + "' is missing");
    }
    if (t->dim() != rank) {
      throw invalid(name, *t, "expected " + std::to_string(rank) + " dimensions");
    }
    return *t;
  };
  const auto positive = [&](const std::string& name, const at::Tensor& t, int64_t dim) {
    if (t.size(dim) <= 0) {
      throw invalid(name, t, "dimension " + std::to_string(dim) + " must be positive");
    }
    return t.size(dim);
  };
  WanVaeConfig c;
  c.z_dim = positive("conv2.weight", need("conv2.weight", 5), 0);
  const at::Tensor& in = need("encoder.conv1.weight", 5);
  if (in.size(1) != 12) {
    throw std::runtime_error("'" + origin + "' is not a Wan2.2 VAE: 'encoder.conv1.weight' has shape " +
                             model_io::shape_string(in) +
                             ", expected [dim, 12, 3, 3, 3] (a Wan2.1 VAE takes 3 channels)");
  }
  c.encoder_dim = positive("encoder.conv1.weight", in, 0);
  c.dim_mult.clear();
  const auto stage_key = [](size_t s) {
    return "encoder.downsamples." + std::to_string(s) + ".downsamples.0.residual.2.weight";
  };
  for (size_t s = 0; model_io::find_tensor(official, stage_key(s)); ++s) {
    const at::Tensor& stage = need(stage_key(s), 5);
    if (stage.size(0) <= 0 || stage.size(0) % c.encoder_dim != 0) {
      throw invalid(stage_key(s), stage,
                    "whose channels must be a positive multiple of the encoder width " + std::to_string(c.encoder_dim));
    }
    c.dim_mult.push_back(stage.size(0) / c.encoder_dim);
  }
  c.num_res_blocks = 0;
  while (model_io::find_tensor(
      official, "encoder.downsamples.0.downsamples." + std::to_string(c.num_res_blocks) + ".residual.0.gamma")) {
    ++c.num_res_blocks;
  }
  c.temporal_downsample.clear();
  for (size_t s = 0; s + 1 < c.dim_mult.size(); ++s) {
    c.temporal_downsample.push_back(
        model_io::find_tensor(official, "encoder.downsamples." + std::to_string(s) + ".downsamples." +
                                            std::to_string(c.num_res_blocks) + ".time_conv.weight") != nullptr);
  }
  if (c.dim_mult.size() < 2 || c.num_res_blocks < 1) {
    throw std::runtime_error("'" + origin + "' does not look like a Wan2.2 VAE: its encoder stages are missing");
  }
  const at::Tensor& head = need("decoder.head.2.weight", 5);
  if (head.size(1) <= 0 || head.size(1) % c.dim_mult.front() != 0) {
    throw invalid("decoder.head.2.weight", head,
                  "whose input channels must be a positive multiple of dim_mult[0] = " +
                      std::to_string(c.dim_mult.front()));
  }
  c.decoder_dim = head.size(1) / c.dim_mult.front();
  if (c.z_dim > int64_t(wan22_latent_mean().size())) {
    throw std::runtime_error("'" + origin + "': a VAE with z = " + std::to_string(c.z_dim) +
                             " has no known latent normalisation (Wan2.2 uses 48)");
  }
  c.latent_mean.assign(wan22_latent_mean().begin(), wan22_latent_mean().begin() + c.z_dim);
  c.latent_std.assign(wan22_latent_std().begin(), wan22_latent_std().begin() + c.z_dim);
  return c;
}

void load_vae_weights(WanVae& vae, const NamedTensors& official, const std::string& origin) {
  std::map<std::string, const at::Tensor*> by_name;
  for (const auto& [k, t] : official) {
    by_name[k] = &t;
  }
  c10::NoGradGuard no_grad;
  std::vector<std::string> missing;
  for (auto& item : vae.named_parameters(true)) {
    const auto it = by_name.find(item.key());
    if (it == by_name.end()) {
      missing.push_back(item.key());
      continue;
    }
    at::Tensor& param = item.value();
    const at::Tensor& src = *it->second;
    if (src.sizes() != param.sizes()) {
      throw std::runtime_error("'" + origin + "': VAE tensor '" + item.key() + "' has shape " +
                               model_io::shape_string(src) + ", expected " + model_io::shape_string(param));
    }
    param.set_data(src.contiguous());  // adopts the given dtype and device
    by_name.erase(it);
  }
  if (!missing.empty()) {
    throw std::runtime_error("'" + origin + "' lacks " + std::to_string(missing.size()) + " VAE tensor(s), first '" +
                             missing.front() + "'");
  }
  if (!by_name.empty()) {
    throw std::runtime_error("'" + origin + "' has " + std::to_string(by_name.size()) +
                             " tensor(s) the Wan2.2 VAE does not use, first '" + by_name.begin()->first + "'");
  }
}

std::shared_ptr<WanVae> load_wan_vae(const std::string& path, c10::Device device, at::ScalarType dtype) {
  if (path.empty()) throw std::runtime_error("no VAE file was given");
  const model_io::ModelPartFiles part = model_io::model_part_files(model_io::ModelKind::Vae, path);
  if (!part.problem.empty() && !part.folder.empty()) {  // a single file's own reader names its problem
    throw std::runtime_error("the " + part.problem +
                             "; point at the VAE file itself (Wan2.2_VAE.pth or wan2.2_vae.safetensors)");
  }
  const std::string& file = part.weights.front();
  NamedTensors official = vae_official_tensors(model_io::load_state_dict_file(file, device, dtype), file);
  auto vae = std::make_shared<WanVae>(detect_vae_config(official, file));
  load_vae_weights(*vae, official, file);
  return vae;
}

std::shared_ptr<WanVae> make_seeded_vae(const WanVaeConfig& config, uint64_t seed) {
  auto vae = std::make_shared<WanVae>(config);
  at::Generator gen = at::detail::createCPUGenerator(seed);
  c10::NoGradGuard no_grad;
  for (auto& item : vae->named_parameters(true)) {
    at::Tensor& p = item.value();
    const std::string& k = item.key();
    at::Tensor r = at::randn(p.sizes(), gen, at::TensorOptions().dtype(at::kFloat));
    if (k.size() >= 5 && k.compare(k.size() - 5, 5, "gamma") == 0) {
      r = 1.0 + 0.1 * r;
    } else if (k.size() >= 4 && k.compare(k.size() - 4, 4, "bias") == 0) {
      r = 0.02 * r;
    } else {
      r = r / std::sqrt(double(p.numel() / p.size(0)));
    }
    p.set_data(r.to(p.device(), p.scalar_type()));
  }
  return vae;
}

void save_vae_safetensors(const WanVae& vae, const std::string& path, VaeLayout layout, at::ScalarType dtype) {
  NamedTensors out;
  for (const auto& item : vae.named_parameters(true)) {
    const std::string key = layout == VaeLayout::Official ? item.key() : vae_key_to_diffusers(item.key(), vae.config());
    out.emplace_back(key, item.value().detach().to(at::kCPU, dtype).contiguous());
  }
  model_io::save_safetensors(path, out, {{"format", "pt"}, {"vidgraph.model", "wan2.2-vae"}});
}

}  // namespace vidgraph::vae
