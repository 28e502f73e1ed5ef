#include "vae_checkpoint.h"

#include <algorithm>
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

// A short run of digits (a module list index that std::stoll can read).
bool is_index(const std::string& s) {
  return !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The version the encoder's input conv (official or diffusers name) says: 3 input channels are
// Wan2.1's video, 12 Wan2.2's patchified video; none or another count is Wan2.2 for the callers,
// which check the count themselves.
VaeVersion version_of_input(const at::Tensor* conv_in) {
  return conv_in != nullptr && conv_in->dim() == 5 && conv_in->size(1) == 3 ? VaeVersion::Wan21 : VaeVersion::Wan22;
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

std::string vae_key_to_diffusers(const std::string& key, const WanVaeConfig& config) {
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
  if (!config.residual_stages() && (p[1] == "downsamples" || p[1] == "upsamples") && p.size() >= 4 && is_index(p[2])) {
    // Wan2.1: the encoder's flat list keeps its indices; the decoder's is grouped into up_blocks of
    // (blocks + 1) resnets and one upsampler.
    if (p[1] == "downsamples") {
      return top + "down_blocks." + p[2] + "." + rename_resnet(join(p, 3), true);
    }
    const int64_t k = std::stoll(p[2]), per = config.num_res_blocks + 2, j = k % per;
    const std::string block = top + "up_blocks." + std::to_string(k / per) + ".";
    if (p[3] == "resample" || p[3] == "time_conv") {
      return block + "upsamplers.0." + join(p, 3);
    }
    return block + "resnets." + std::to_string(j) + "." + rename_resnet(join(p, 3), true);
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
  if (!config.residual_stages() && (p[1] == "down_blocks" || p[1] == "up_blocks") && p.size() >= 5 && is_index(p[2])) {
    if (p[1] == "down_blocks") {
      return top + "downsamples." + p[2] + "." + rename_resnet(join(p, 3), false);
    }
    const int64_t s = std::stoll(p[2]), per = config.num_res_blocks + 2;
    if (p[3] == "upsamplers" && p.size() >= 6) {
      return top + "upsamples." + std::to_string(s * per + per - 1) + "." + join(p, 5);
    }
    if (p[3] == "resnets" && p.size() >= 6 && is_index(p[4])) {
      return top + "upsamples." + std::to_string(s * per + std::stoll(p[4])) + "." + rename_resnet(join(p, 5), false);
    }
    return key;
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
  c.version = version_of_input(model_io::find_tensor(selected, "encoder.conv_in.weight"));
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
  WanVaeConfig c;
  c.version = version_of_input(model_io::find_tensor(official, "encoder.conv1.weight"));
  const std::string vae = std::string(c.name()) + " VAE";
  // Every size read from a shape is checked before it divides anything: a crafted file with a zero
  // dimension must get an error naming the tensor, not SIGFPE.
  const auto invalid = [&](const std::string& name, const at::Tensor& t, const std::string& what) {
    return std::runtime_error("'" + origin + "' is not a valid " + vae + " checkpoint: tensor '" + name +
                              "' has shape " + model_io::shape_string(t) + ", " + what);
  };
  const auto need = [&](const std::string& name, int64_t rank) -> const at::Tensor& {
    const at::Tensor* t = model_io::find_tensor(official, name);
    if (t == nullptr) {
      throw std::runtime_error("'" + origin + "' does not look like a Wan VAE: tensor '" + name + "' is missing");
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
  c.z_dim = positive("conv2.weight", need("conv2.weight", 5), 0);
  const at::Tensor& in = need("encoder.conv1.weight", 5);
  if (in.size(1) != 3 && in.size(1) != 12) {
    throw std::runtime_error("'" + origin + "' is not a Wan VAE: 'encoder.conv1.weight' has shape " +
                             model_io::shape_string(in) +
                             ", expected [dim, 3, 3, 3, 3] (Wan2.1) or [dim, 12, 3, 3, 3] (Wan2.2)");
  }
  c.encoder_dim = positive("encoder.conv1.weight", in, 0);
  // Layer j of encoder stage s: nested in Wan2.2, at s * (blocks + 1) + j of the flat list in Wan2.1.
  c.num_res_blocks = 0;
  const auto layer_key = [&](size_t s, int64_t j, const std::string& rest) {
    if (c.residual_stages()) {
      return "encoder.downsamples." + std::to_string(s) + ".downsamples." + std::to_string(j) + "." + rest;
    }
    return "encoder.downsamples." + std::to_string(int64_t(s) * (c.num_res_blocks + 1) + j) + "." + rest;
  };
  while (model_io::find_tensor(official, layer_key(0, c.num_res_blocks, "residual.0.gamma"))) {
    ++c.num_res_blocks;
  }
  if (c.num_res_blocks < 1) {
    throw std::runtime_error("'" + origin + "' does not look like a " + vae + ": its encoder stages are missing");
  }
  c.dim_mult.clear();
  for (size_t s = 0; model_io::find_tensor(official, layer_key(s, 0, "residual.2.weight")); ++s) {
    const std::string key = layer_key(s, 0, "residual.2.weight");
    const at::Tensor& stage = need(key, 5);
    if (stage.size(0) <= 0 || stage.size(0) % c.encoder_dim != 0) {
      throw invalid(key, stage,
                    "whose channels must be a positive multiple of the encoder width " + std::to_string(c.encoder_dim));
    }
    c.dim_mult.push_back(stage.size(0) / c.encoder_dim);
  }
  c.temporal_downsample.clear();
  for (size_t s = 0; s + 1 < c.dim_mult.size(); ++s) {
    c.temporal_downsample.push_back(
        model_io::find_tensor(official, layer_key(s, c.num_res_blocks, "time_conv.weight")) != nullptr);
  }
  if (c.dim_mult.size() < 2) {
    throw std::runtime_error("'" + origin + "' does not look like a " + vae + ": its encoder stages are missing");
  }
  const at::Tensor& head = need("decoder.head.2.weight", 5);
  if (head.size(1) <= 0 || head.size(1) % c.dim_mult.front() != 0) {
    throw invalid("decoder.head.2.weight", head,
                  "whose input channels must be a positive multiple of dim_mult[0] = " +
                      std::to_string(c.dim_mult.front()));
  }
  c.decoder_dim = head.size(1) / c.dim_mult.front();
  const bool v21 = c.version == VaeVersion::Wan21;
  const std::vector<float>& mean = v21 ? wan21_latent_mean() : wan22_latent_mean();
  const std::vector<float>& std_ = v21 ? wan21_latent_std() : wan22_latent_std();
  if (c.z_dim > int64_t(mean.size())) {
    throw std::runtime_error("'" + origin + "': a " + vae + " with z = " + std::to_string(c.z_dim) +
                             " has no known latent normalisation (" + c.name() + " uses " +
                             std::to_string(mean.size()) + ")");
  }
  c.latent_mean.assign(mean.begin(), mean.begin() + c.z_dim);
  c.latent_std.assign(std_.begin(), std_.begin() + c.z_dim);
  if (v21 && c.decoder_dim % 2 != 0) {
    throw invalid("decoder.head.2.weight", head, "an odd decoder width (Wan2.1's upsamples halve it)");
  }
  return c;
}

void load_vae_weights(WanVae& vae, const NamedTensors& official, const std::string& origin) {
  model_io::load_strict(vae.named_parameters(true), official, "VAE", origin);
}

std::shared_ptr<WanVae> load_wan_vae(const std::string& path, c10::Device device, at::ScalarType dtype) {
  if (path.empty()) throw std::runtime_error("no VAE file was given");
  const model_io::ModelPartFiles part = model_io::model_part_files(model_io::ModelKind::Vae, path);
  if (!part.problem.empty() && !part.folder.empty()) {  // a single file's own reader names its problem
    throw std::runtime_error("the " + part.problem +
                             "; point at the VAE file itself (Wan2.2_VAE.pth, wan2.2_vae.safetensors, "
                             "Wan2.1_VAE.pth or wan_2.1_vae.safetensors)");
  }
  const std::string& file = part.weights.front();
  return make_wan_vae(model_io::load_state_dict_file(file, device, dtype), file);
}

std::shared_ptr<WanVae> make_wan_vae(NamedTensors tensors, const std::string& origin) {
  NamedTensors official = vae_official_tensors(std::move(tensors), origin);
  auto vae = std::make_shared<WanVae>(detect_vae_config(official, origin));
  load_vae_weights(*vae, official, origin);
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
  const char* model = vae.config().version == VaeVersion::Wan21 ? "wan2.1-vae" : "wan2.2-vae";
  model_io::save_safetensors(path, out, {{"format", "pt"}, {"vidgraph.model", model}});
}

}  // namespace vidgraph::vae
