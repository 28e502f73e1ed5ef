// Wan2.2-I2V-A14B's image conditioning (wan/image2video.py): a 4-channel mask and the Wan2.1 VAE's
// latent of the image followed by zero frames, concatenated to [20, T, h, w]; the DiT (in_dim 36)
// receives cat([x_t, y]) along channels at every call (WanVelocityOptions::condition). The one owner
// of the mask rule. TI2V-5B conditions differently (a clean first latent frame: flow_sampler.h).
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace vidgraph::sampling {

// Channels of the mask: one per frame folded into a latent frame (the VAE's temporal stride).
constexpr int64_t kI2vMaskChannels = 4;

// The conditioning channels beside a `latent_channels` latent: the mask and the image's latent
// (Wan2.2-I2V-A14B: 4 + 16 = 20, so its DiT's in_dim is 16 + 20 = 36).
constexpr int64_t i2v_condition_channels(int64_t latent_channels) { return kI2vMaskChannels + latent_channels; }

// The mask of a `frames`-frame video (4k + 1) on an h x w latent: [4, T, h, w] fp32 with
// T = (frames - 1) / 4 + 1, 1 where the frame is given (the first; with `last_given` the last too,
// first-last-frame to video as in Wan2.1's first_last_frame2video.py) and 0 elsewhere, in the
// official layout. Throws std::invalid_argument when frames is not 4k + 1 (at least 5 with a last
// frame) or a side is not positive.
at::Tensor i2v_mask(int64_t frames, int64_t h, int64_t w, bool last_given = false);

// y = cat([i2v_mask, image_latent]) along channels: image_latent [z, T, h, w] is the VAE's
// normalised latent of the image followed by 4(T - 1) zero frames (the last of them the last image
// when `last_given`); -> [4 + z, T, h, w] fp32 on image_latent's device.
at::Tensor i2v_condition(const at::Tensor& image_latent, bool last_given = false);

}  // namespace vidgraph::sampling
