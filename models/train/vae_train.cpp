#include "models/train/vae_train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <c10/core/GradMode.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

namespace vidgraph::train {

namespace {

double lr_at(const VaeTrainOptions& o, int k) {
  if (k <= o.warmup_steps) return o.lr * k / o.warmup_steps;
  const int span = std::max(1, o.steps - o.warmup_steps);
  const double a = static_cast<double>(k - 1 - o.warmup_steps) / span;
  return o.lr * (0.1 + 0.9 * (1.0 + std::cos(3.14159265358979323846 * a)) / 2.0);
}

void check(const VaeTrainOptions& o) {
  if (o.steps < 1) throw std::invalid_argument("VAE training needs steps >= 1, not " + std::to_string(o.steps));
  if (!(o.lr > 0.0)) throw std::invalid_argument("VAE training needs a positive learning rate");
  if (o.warmup_steps < 0) throw std::invalid_argument("VAE training needs warmup_steps >= 0");
}

}  // namespace

at::Tensor vae_reconstruction_loss(const vae::WanVae& vae, const at::Tensor& video) {
  const at::Tensor x = video.to(at::kFloat);
  const at::Tensor y = vae.decode_for_training(vae.encode_for_training(x));
  const at::Tensor diff = y - x.to(y.device());
  return diff.abs().mean() + (diff * diff).mean();
}

VaeTrainResult train_vae(vae::WanVae& vae, const std::function<at::Tensor(int step)>& next_batch,
                         const VaeTrainOptions& o) {
  check(o);
  std::vector<at::Tensor> params = vae.parameters();
  for (at::Tensor& p : params) {
    if (p.scalar_type() != at::kFloat) throw std::invalid_argument("VAE training needs fp32 parameters");
    p.set_requires_grad(true);
  }
  torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(o.lr).weight_decay(0.0));
  c10::AutoGradMode grad(true);
  VaeTrainResult result;
  for (int k = 1; k <= o.steps; ++k) {
    if (o.is_cancelled && o.is_cancelled()) break;
    const auto start = std::chrono::steady_clock::now();
    const double lr = lr_at(o, k);
    for (auto& group : optimizer.param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    }
    optimizer.zero_grad();
    const at::Tensor loss = vae_reconstruction_loss(vae, next_batch(k));
    loss.backward();
    if (o.grad_clip > 0) torch::nn::utils::clip_grad_norm_(params, o.grad_clip);
    optimizer.step();
    result.losses.push_back(loss.item<double>());
    result.steps_done = k;
    if (o.on_step) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      o.on_step({k, o.steps, result.losses.back(), lr, seconds});
    }
  }
  for (at::Tensor& p : params) p.set_requires_grad(false);
  return result;
}

at::Tensor normalise_vae_latents(vae::WanVae& vae, const std::vector<at::Tensor>& videos) {
  if (videos.empty()) throw std::invalid_argument("normalise_vae_latents needs at least one video");
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> flat;
  for (const at::Tensor& v : videos) {
    const at::Tensor z = vae.encode(v);  // [B, z, T, h, w], normalised with the config's stats
    flat.push_back(z.transpose(0, 1).reshape({z.size(1), -1}));
  }
  const at::Tensor normalised = at::cat(flat, 1);
  const at::Tensor raw = vae.denormalize(normalised.t().reshape({-1, normalised.size(0), 1, 1, 1}))
                             .reshape({-1, normalised.size(0)}).t();
  const at::Tensor before = normalised.std(1);
  vae.fold_latent_statistics(raw.mean(1), raw.std(1));
  return before;
}

}  // namespace vidgraph::train
