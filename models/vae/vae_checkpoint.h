// Loading and saving Wan VAE weights (Wan2.2 and Wan2.1) in every layout users have:
// - official (`Wan2.2_VAE.pth`, `Wan2.1_VAE.pth`, and single-file repacks such as Comfy-Org
//   `wan2.2_vae.safetensors` / `wan_2.1_vae.safetensors`): keys = our module tree
//   (`encoder.downsamples.0.downsamples.0.residual.0.gamma` in Wan2.2,
//   `encoder.downsamples.0.residual.0.gamma` in Wan2.1, `conv1.weight`...);
// - diffusers (`vae/diffusion_pytorch_model.safetensors` of a *-Diffusers repo): `mid_block`,
//   `norm_out`, `conv_in/conv_out`, `quant_conv`/`post_quant_conv`, resnets `norm1/conv1/norm2/
//   conv2/conv_shortcut`; Wan2.2 stages `encoder.down_blocks.{s}.resnets.{j}`, `...downsampler.`,
//   `decoder.up_blocks.{s}.upsampler.` (diffusers' `convert_vae_22`); Wan2.1 `encoder.down_blocks.{k}`
//   (the flat list's index), `decoder.up_blocks.{s}.resnets.{j}`, `...upsamplers.0.` (`convert_vae`).
// A common prefix such as `vae.` or `first_stage_model.` is stripped. The config, version included
// (the encoder's input conv takes 3 channels in Wan2.1, 12 in Wan2.2), is derived from the tensor
// shapes (z, widths, stages, residual blocks, temporal stages). Every missing, unexpected or
// mis-shaped tensor is a std::runtime_error naming the file, the tensor and both shapes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "models/io/safetensors.h"
#include "wan_vae.h"

namespace vidgraph::vae {

enum class VaeLayout { Official, Diffusers };

// Official key -> diffusers key (and back) for config's version and residual blocks; keys outside the
// VAE come back unchanged.
std::string vae_key_to_diffusers(const std::string& official, const WanVaeConfig& config);
std::string vae_key_from_diffusers(const std::string& diffusers, const WanVaeConfig& config);

VaeLayout detect_vae_layout(const model_io::NamedTensors& tensors);
// Official-key tensors of any layout (prefix stripped, renamed). `origin` names the file in errors.
model_io::NamedTensors vae_official_tensors(model_io::NamedTensors tensors, const std::string& origin);
// The config the (official-key) tensors describe; latent mean/std = the first z official values of
// its version.
WanVaeConfig detect_vae_config(const model_io::NamedTensors& official, const std::string& origin);

// Sets every parameter to the tensor of the same key in `official` (the parameters adopt those tensors'
// dtype and device: load them as wanted); strict: missing, extra or mis-shaped tensors throw.
void load_vae_weights(WanVae& vae, const model_io::NamedTensors& official, const std::string& origin);

// Loads a VAE from a `.pth` or `.safetensors` file, or a diffusers folder (its `vae/` or itself
// holding `diffusion_pytorch_model.safetensors`), onto `device` in `dtype` (fp32 is the reference).
std::shared_ptr<WanVae> load_wan_vae(const std::string& path, c10::Device device = c10::Device(c10::kCPU),
                                     at::ScalarType dtype = at::kFloat);
// The same from tensors already read (any layout, on their device and in their dtype): what
// load_wan_vae does after reading the file. `origin` names the file in errors.
std::shared_ptr<WanVae> make_wan_vae(model_io::NamedTensors tensors, const std::string& origin);

// A VAE with deterministic pseudo-random weights from `seed` (same seed, same weights, any machine).
std::shared_ptr<WanVae> make_seeded_vae(const WanVaeConfig& config, uint64_t seed);
// Writes the VAE's parameters to a safetensors file in `layout` (fp32 unless `dtype` says otherwise).
void save_vae_safetensors(const WanVae& vae, const std::string& path, VaeLayout layout = VaeLayout::Official,
                          at::ScalarType dtype = at::kFloat);

} // namespace vidgraph::vae
