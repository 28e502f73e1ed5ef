// Internal (LibTorch): a picture as the VAE takes it, and Wan2.2-I2V-A14B's image conditioning
// encoded from a first frame (wan/image2video.py): the frame followed by frames - 1 zero frames
// (mid-grey in [-1, 1]; the last of them a last frame when one is given, as ComfyUI's
// WanFirstLastFrameToVideo does for this model), encoded as one video, behind the mask
// (models/sampling/i2v_condition.h owns the mask). Wan Sampler conditions on an Image with it, Encode
// Dataset stores it beside an i2v sample's latent so the same model trains on what it samples with.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "models/vae/wan_vae.h"
#include "nodes/model/model_handles.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

// Image uint8 [H, W, 3] -> a 1-frame video [1, 3, 1, H, W] in [-1, 1] on the VAE's device and dtype.
at::Tensor image_video(const VaeHandle& vae, const Image& image);

// `first` (and `last` when defined: frames >= 5) [1, 3, 1, H, W] in [-1, 1] -> the conditioning
// [4 + z, T, h, w] fp32 of a `frames`-frame video (T = (frames - 1) / 4 + 1), on the VAE's device.
at::Tensor encode_i2v_condition(const VaeHandle& vae, const at::Tensor& first, int64_t frames,
                                const vae::VaeCallbacks& callbacks = {}, const at::Tensor& last = {});

}  // namespace vidgraph::nodes
