// Internal (LibTorch): the LATENT value. Never included by public headers.
// Contract: samples is [B, C, T, H, W] float32 on the CPU (B = 1 for the built-in nodes), C = the
// VAE's latent channels (48 for Wan2.2's VAE, 16 for Wan2.1's), T = (frames - 1) / 4 + 1, H and W the
// pixel sides over the VAE's spatial factor (16 for Wan2.2's, 8 for Wan2.1's).
// The latent is in the DiT's (normalised) space, the way the sampler produces and VAE Decode takes it.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>

namespace vidgraph::nodes {

struct Latent {
  at::Tensor samples;                       // [B, C, T, H, W] float32, CPU
  std::map<std::string, std::string> info;  // provenance (seed, steps, ...), saved as metadata

  std::size_t bytes() const {
    return samples.defined() ? static_cast<std::size_t>(samples.numel()) * samples.element_size() : 0;
  }
};

// The safetensors tensor name and metadata marker used by Save/Load Latent.
inline constexpr const char* kLatentTensorName = "latent";
inline constexpr const char* kLatentFormatKey = "vidgraph_format";
inline constexpr const char* kLatentFormatValue = "vidgraph-latent-v1";

}  // namespace vidgraph::nodes
