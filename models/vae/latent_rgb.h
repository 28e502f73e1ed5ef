// Cheap latent -> RGB projection for live previews (no decoder): one latent frame becomes an image
// at the latent's resolution.
//
// Wan2.2-TI2V-5B (48 channels): rgb = factors^T x + bias per pixel, in [-1, 1], then (rgb + 1) / 2
// clamped to [0, 1]: the linear approximation of the VAE that ComfyUI ships for Wan2.2 latents
// (`latent_rgb_factors` / `latent_rgb_factors_bias` of its Wan22 latent format). It applies to the
// normalised latents the DiT samples.
// Wan2.1 / Wan2.2-A14B (16 channels): the same with ComfyUI's 16x3 factors and bias of its Wan21
// latent format.
// Any other channel count (the tiny Wan2.2 test and demo models): no trained factors exist, so the first
// three channels (channel 0 repeated when there are fewer) are each stretched from their min..max over
// the frame to 0..1 (a flat channel gives 0.5): shows structure, not colour.
#pragma once

#include <ATen/core/Tensor.h>

namespace vidgraph::vae {

inline constexpr int64_t kWan22LatentChannels = 48;
inline constexpr int64_t kWan21LatentChannels = 16;

// The 48 x 3 factors (row = latent channel, columns R, G, B) and the 3 biases, fp32 on the CPU.
at::Tensor wan22_latent_rgb_factors();
at::Tensor wan22_latent_rgb_bias();
// The 16 x 3 Wan2.1 factors and 3 biases, fp32 on the CPU.
at::Tensor wan21_latent_rgb_factors();
at::Tensor wan21_latent_rgb_bias();

// frame [C, h, w] (any float dtype, any device) -> [3, h, w] fp32 in [0, 1] on the same device.
// Throws std::invalid_argument unless frame is 3-D with C >= 1.
at::Tensor latent_to_rgb(const at::Tensor& frame);

}  // namespace vidgraph::vae
