// TAEHV decoder for Wan2.2-TI2V-5B latents (madebyollin/taehv, weights `taew2_2.pth`): a small conv
// decoder that turns the DiT's latents straight into frames, for previews and fast final output.
//
// Architecture (the reference's `TAEHV.decoder`, an nn.Sequential; the index is the key prefix
// `decoder.<i>.`): 0 Clamp (tanh(x / 3) * 3), 1 conv 3x3 latent->w0, 2 ReLU, then three stages s of
// {3 MemBlocks, nearest 2x upsample, TGrow, conv 3x3 without bias w_s -> w_s+1}, 21 ReLU, 22 conv 3x3
// w3 -> 3 * patch^2, pixel shuffle by `patch`, clamp to [0, 1]. Widths 256, 128, 64, 64.
//   MemBlock(x, past) = relu(conv.4(relu(conv.2(relu(conv.0(cat[x, past]))))) + skip(x)), where past
//     is the block's input at the previous frame (zeros at the first) and skip a 1x1 conv or identity.
//   TGrow(stride s): a 1x1 conv to s * C channels, each frame becoming s frames (channel block k =
//     frame k). Strides 1, 2, 2: 4 frames per latent frame. A file whose stride-1 TGrow was trained
//     wider keeps its last C output channels (the reference's patch_tgrow_layers).
// taew2_2: 48 latent channels, patch 2, so 8x upsampling x pixel shuffle 2 = 16x in space.
// Frames: T latent frames give 4T frames of which the first 3 are dropped (the reference's
// frames_to_trim = t_upscale - 1): 1 + 4(T - 1), the Wan VAE's count.
// Inputs are the normalised latents the DiT samples (TAEHV applies no mean/std).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "models/vae/wan_vae.h"

namespace vidgraph::vae {

struct TaehvConfig {
  int64_t latent_channels = 48;
  int64_t patch_size = 2;
  std::vector<int64_t> widths{256, 128, 64, 64};
  std::vector<int64_t> time_strides{1, 2, 2};
  int64_t temporal_upscale() const;  // product of time_strides (4)
  int64_t spatial_upscale() const;   // 8 * patch_size (16)
};

class TaehvDecoder {
 public:
  // From a `.pth` (the reference's) or `.safetensors` state dict with the reference's keys
  // (`decoder.<i>...`; `encoder.*` ignored). The widths, latent channels and patch size are read
  // from the shapes. Throws std::runtime_error naming the file and the tensor that is missing or
  // has the wrong shape.
  static std::shared_ptr<TaehvDecoder> load(const std::string& path, c10::Device device = c10::Device(c10::kCPU),
                                            at::ScalarType dtype = at::kFloat);

  const TaehvConfig& config() const { return config_; }
  c10::Device device() const { return device_; }
  at::ScalarType dtype() const { return dtype_; }

  // latent [B, C, T, h, w] -> video [B, 3, 1 + 4(T - 1), 16h, 16w] fp32 in [-1, 1] (the Wan VAE's
  // range) on `output_device`. Decodes `chunk_frames` latent frames at a time, carrying each
  // MemBlock's last input across chunks (the result equals decoding all frames at once);
  // callbacks.progress after each chunk, callbacks.cancelled before each (throws VaeCancelled).
  // Throws std::invalid_argument for a latent of the wrong shape.
  at::Tensor decode(const at::Tensor& latent, const VaeCallbacks& callbacks = {}, int64_t chunk_frames = 4,
                    c10::Device output_device = c10::Device(c10::kCPU)) const;

  struct Conv {
    at::Tensor weight;
    at::Tensor bias;  // undefined when the conv has none
  };
  struct MemBlock {
    Conv conv0, conv2, conv4;
    at::Tensor skip;  // undefined = identity
  };

 private:
  at::Tensor decode_one(const at::Tensor& latent, const VaeCallbacks& callbacks, int64_t chunk_frames,
                        c10::Device output_device) const;
  at::Tensor run_chunk(at::Tensor x, std::vector<at::Tensor>& memory) const;

  TaehvConfig config_;
  c10::Device device_ = c10::Device(c10::kCPU);
  at::ScalarType dtype_ = at::kFloat;
  Conv pre_, post_;
  std::vector<MemBlock> blocks_;       // 9: three per stage
  std::vector<at::Tensor> tgrow_;      // 3 1x1 weights
  std::vector<Conv> proj_;             // 3 convs without bias
};

}  // namespace vidgraph::vae
