// Autoencoder training of the Wan2.2 VAE (any widths) on reconstruction: each step encodes a batch
// of clips with the differentiable whole-sequence path (the first frame alone, as the causal VAE
// does), decodes it, and takes an AdamW step on mean |x - x'| + mean (x - x')^2 over all frames.
// Clips come from a callback, so callers stream procedural data without holding a dataset.
// After training, `normalise_vae_latents` folds the data's latent statistics into the VAE, so the
// normalised latents the DiT sees are ~N(0, 1) per channel. No media, no graph.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/vae/wan_vae.h"

namespace vidgraph::train {

struct VaeTrainStep {
  int step = 0, steps = 0;  // step just done (1-based) of steps
  double loss = 0, lr = 0, seconds = 0;
};

struct VaeTrainOptions {
  int steps = 500;
  double lr = 1e-3;             // AdamW, betas 0.9/0.999, no weight decay
  int warmup_steps = 20;        // linear warm-up, then cosine to lr / 10 at the last step
  double grad_clip = 1.0;       // global L2 norm; <= 0: no clipping
  std::function<void(const VaeTrainStep&)> on_step;
  std::function<bool()> is_cancelled;  // polled before every step; true stops early
};

struct VaeTrainResult {
  int steps_done = 0;
  std::vector<double> losses;  // one per step done
};

// `next_batch(step)` (step 1-based) returns video [B, 3, 1 + 4k, H, W] in [-1, 1] (H, W multiples
// of the VAE's spatial factor). Trains every parameter of `vae` in place (fp32); throws
// std::invalid_argument for bad options or batches.
VaeTrainResult train_vae(vae::WanVae& vae, const std::function<at::Tensor(int step)>& next_batch,
                         const VaeTrainOptions& options);

// The loss train_vae minimises, for one video batch (with autograd as the caller has it).
at::Tensor vae_reconstruction_loss(const vae::WanVae& vae, const at::Tensor& video);

// Encodes `videos` (each [B, 3, 1 + 4k, H, W]) and folds their per-channel latent mean and std
// into the VAE (WanVae::fold_latent_statistics). Returns the std of the normalised latents before
// the fold, per channel.
at::Tensor normalise_vae_latents(vae::WanVae& vae, const std::vector<at::Tensor>& videos);

}  // namespace vidgraph::train
