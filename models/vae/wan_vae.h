// The Wan VAEs (`WanVAE_` of `wan/modules/vae2_2.py`: 4x16x16 compression, z 48; of `vae2_1.py`:
// 4x8x8, z 16; config().version says which), with the reference's causal chunk loops, latent
// normalisation, optional spatial tiling for decode, progress per chunk and cooperative cancellation.
//
// Module tree = the official `.pth` keys: `encoder.*`, `decoder.*`, `conv1.*` (mu|logvar 1x1x1),
// `conv2.*` (post-quant 1x1x1). Shapes and units, with s = config().spatial_factor() (16 | 8):
// - video: [B, 3, T, H, W], values in [-1, 1], T = 1 + 4k, H and W multiples of s;
// - latent (normalised, what the DiT sees): [B, z, 1 + k, H/s, W/s], z = (mu - mean) / std.
// encode: chunk 0 = frame 0, then 4 frames per chunk -> one latent frame per chunk (mu only).
// decode: one latent frame per chunk -> 1 frame for latent 0, 4 for each later one; clamp [-1, 1].
// Both run without autograd in the module's parameter dtype (fp32 officially) and return fp32.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/module.h>

#include "vae_coder.h"
#include "vae_config.h"

namespace vidgraph::vae {

// Plain callbacks, both optional. progress(done, total) after every chunk (every tile's chunk when
// tiled); cancelled() is polled before every chunk and, when it returns true, VaeCancelled is thrown.
struct VaeCallbacks {
  std::function<void(int64_t done, int64_t total)> progress;
  std::function<bool()> cancelled;
};

class VaeCancelled : public std::runtime_error {
 public:
  VaeCancelled() : std::runtime_error("VAE run cancelled") {}
};

// Spatial tiling of decode, in latent units (x16 pixels in Wan2.2, x8 in Wan2.1). Tiles overlap by
// `overlap` latent rows/columns and are blended with linear ramps across the overlap. Memory per tile
// scales with tile area.
struct VaeTiling {
  int64_t tile_h = 32;  // 512 px (Wan2.2), 256 px (Wan2.1)
  int64_t tile_w = 32;
  int64_t overlap = 8;  // 128 px
};

// Several decoders (one per rank of a multi-process run) sharing one tiled decode. In round r,
// decoder `part` of `parts` decodes tile r * parts + part (in row-major tile order; zeros past the
// last tile), then `exchange` trades the round's tiles: it receives this decoder's tile and returns
// every decoder's tile of the round in part order, or an empty list on a decoder that keeps no video.
// The tiles are decoded exactly as by one decoder, so the blended video is the same.
struct TileShare {
  int part = 0;
  int parts = 1;
  std::function<std::vector<at::Tensor>(const at::Tensor& mine)> exchange;
};

struct VaeDecodeOptions {
  std::optional<VaeTiling> tiling;           // none: decode the whole frame at once
  std::optional<TileShare> tile_share;       // tiled: the decode is shared by several decoders
  std::optional<c10::Device> output_device;  // where decoded frames go, chunk by chunk (default: latent's)
  // A backend's fused kernels for the residual blocks (AttentionBackend::vae_kernels()); used where
  // they support the VAE's device and dtype, ATen's ops elsewhere. Same results up to rounding.
  plugin::VaeKernels* fused = nullptr;
};

// Convolution weights are left uninitialised (never touched, so never resident) until a loader
// (vae_checkpoint.h) or make_seeded_vae sets them.
class WanVae : public torch::nn::Module {
 public:
  explicit WanVae(WanVaeConfig config);
  const WanVaeConfig& config() const { return config_; }

  // video [B,3,1+4k,H,W] -> normalised latent [B,z,1+k,H/s,W/s] (fp32, on the module's device).
  at::Tensor encode(const at::Tensor& video, const VaeCallbacks& callbacks = {}) const;
  // normalised latent [B,z,T,h,w] -> video [B,3,1+4(T-1),s*h,s*w] (fp32, clamped).
  at::Tensor decode(const at::Tensor& latent, const VaeCallbacks& callbacks = {},
                    const VaeDecodeOptions& options = {}) const;

  // Building block of decode (and of tiled decode): the chunk loop over one latent region, with
  // progress reported as (done_before + i, total).
  at::Tensor decode_chunks(const at::Tensor& latent, const VaeCallbacks& callbacks, int64_t done_before, int64_t total,
                           c10::Device output_device, plugin::VaeKernels* fused = nullptr) const;

  // Whole-sequence paths without the chunk cache (memory grows with T): the tests' reference.
  at::Tensor encode_whole(const at::Tensor& video) const;
  at::Tensor decode_whole(const at::Tensor& latent) const;

  // Differentiable whole-sequence paths for training (autograd as the caller has it, no clamp):
  // video -> normalised latent, and normalised latent -> video (first frame alone, as decode).
  at::Tensor encode_for_training(const at::Tensor& video) const;
  at::Tensor decode_for_training(const at::Tensor& latent) const;

  // Folds an affine change of the raw latent into conv1 (mu rows) and conv2 so that raw latents of
  // mean `mean` and std `std` (per channel, [z]) become the config's latent_mean / latent_std: the
  // normalised latents of such data are then ~N(0, 1) per channel, and decode(encode(x)) is unchanged.
  void fold_latent_statistics(const at::Tensor& mean, const at::Tensor& std);

  // (mu - mean) / std and back, per channel (dim 1).
  at::Tensor normalize(const at::Tensor& mu) const;
  at::Tensor denormalize(const at::Tensor& z) const;

 private:
  void check_video(const at::Tensor& video) const;
  void check_latent(const at::Tensor& latent) const;
  at::Tensor stats(const std::vector<float>& values, const at::Tensor& like) const;

  WanVaeConfig config_;
  std::shared_ptr<Encoder3d> encoder_;
  std::shared_ptr<Decoder3d> decoder_;
  std::shared_ptr<CausalConv3d> conv1_;
  std::shared_ptr<CausalConv3d> conv2_;
};

}  // namespace vidgraph::vae
