// Adapts a Wan DiT to the sampler's VelocityFn: per-frame timesteps, the text contexts of the
// prompt and the negative prompt, the self-attention run; both CFG branches in one batch of 2
// (or two calls when batch_cfg is false, to halve peak activation memory); optionally another
// attention run for the first steps; optionally a conditioning tensor concatenated after the latent
// along channels (Wan2.2-I2V-A14B: i2v_condition.h).
#pragma once

#include <ATen/core/Tensor.h>

#include "models/sampling/flow_sampler.h"
#include "models/wan/wan_attention.h"
#include "models/wan/wan_model.h"

namespace vidgraph::sampling {

struct WanVelocityOptions {
  at::Tensor context;       // [l, text_dim] or [1, l, text_dim]: the prompt's encoder output
  at::Tensor context_null;  // same for the negative prompt (needed when guidance is on)
  wan::AttentionRun attention;
  bool batch_cfg = true;
  // The first `dense_steps` calls (the sampler calls once per step) use `dense_attention` instead
  // of `attention`: dense early steps, where the layout of the video forms, then the sparse method.
  int dense_steps = 0;
  wan::AttentionRun dense_attention;
  // Optional [C_y, F, H, W]: each call feeds the DiT cat([x, condition]) along channels, the same
  // condition for both CFG branches (wan/image2video.py passes y to both); the DiT's in_dim must be
  // the latent's channels + C_y. Wan2.2-I2V-A14B: i2v_condition(), C_y = 20.
  at::Tensor condition;
};

// The model is shared (not copied): keep it alive while the function is in use.
VelocityFn make_wan_velocity(wan::WanModel model, WanVelocityOptions options);

}  // namespace vidgraph::sampling
