#include "wan_vae.h"

#include <sstream>
#include <string>
#include <utility>

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/tensor.h>
#include <c10/core/GradMode.h>

#include "vae_tiling.h"

namespace vidgraph::vae {

namespace {

std::string shape_of(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

void poll(const VaeCallbacks& cb) {
  if (cb.cancelled && cb.cancelled()) {
    throw VaeCancelled();
  }
}

void report(const VaeCallbacks& cb, int64_t done, int64_t total) {
  if (cb.progress) {
    cb.progress(done, total);
  }
}

}  // namespace

WanVae::WanVae(WanVaeConfig config) : config_(std::move(config)) {
  config_.validate();
  encoder_ = register_module("encoder", std::make_shared<Encoder3d>(config_));
  conv1_ = register_module(
      "conv1", std::make_shared<CausalConv3d>(config_.z_dim * 2, config_.z_dim * 2, std::array<int64_t, 3>{1, 1, 1}));
  conv2_ = register_module(
      "conv2", std::make_shared<CausalConv3d>(config_.z_dim, config_.z_dim, std::array<int64_t, 3>{1, 1, 1}));
  decoder_ = register_module("decoder", std::make_shared<Decoder3d>(config_));
}

at::Tensor WanVae::stats(const std::vector<float>& values, const at::Tensor& like) const {
  return at::tensor(values, at::TensorOptions().dtype(at::kFloat))
      .to(like.device(), like.scalar_type())
      .view({1, int64_t(values.size()), 1, 1, 1});
}

at::Tensor WanVae::normalize(const at::Tensor& mu) const {
  return (mu - stats(config_.latent_mean, mu)) / stats(config_.latent_std, mu);
}

at::Tensor WanVae::denormalize(const at::Tensor& z) const {
  return z * stats(config_.latent_std, z) + stats(config_.latent_mean, z);
}

void WanVae::check_video(const at::Tensor& video) const {
  const int64_t s = config_.spatial_factor(), f = config_.temporal_factor();
  if (video.dim() != 5 || video.size(1) != 3 || (video.size(2) - 1) % f != 0 || video.size(3) % s != 0 ||
      video.size(4) % s != 0 || video.size(3) == 0 || video.size(4) == 0) {
    throw std::invalid_argument("VAE encode expects a video [B, 3, 1+" + std::to_string(f) +
                                "k, H, W] with H and W "
                                "multiples of " +
                                std::to_string(s) + "; got " + shape_of(video));
  }
}

void WanVae::check_latent(const at::Tensor& latent) const {
  if (latent.dim() != 5 || latent.size(1) != config_.z_dim || latent.size(2) < 1 || latent.size(3) < 1 ||
      latent.size(4) < 1) {
    throw std::invalid_argument("VAE decode expects a latent [B, " + std::to_string(config_.z_dim) +
                                ", T, h, w]; got " + shape_of(latent));
  }
}

at::Tensor WanVae::encode(const at::Tensor& video, const VaeCallbacks& callbacks) const {
  check_video(video);
  c10::NoGradGuard no_grad;  // results stay ordinary tensors (in-place use allowed)
  const at::Tensor& w = conv1_->weight;
  const at::Tensor x = patchify(video.to(w.device(), w.scalar_type()), config_.patch_size());  // [B,3p^2,T,H/p,W/p]
  const int64_t f = config_.temporal_factor();
  const int64_t chunks = 1 + (x.size(2) - 1) / f;
  CausalCache cache;
  std::vector<at::Tensor> outs;
  for (int64_t i = 0; i < chunks; ++i) {
    poll(callbacks);
    cache.begin_chunk();
    const at::Tensor chunk = i == 0 ? x.slice(2, 0, 1) : x.slice(2, 1 + f * (i - 1), 1 + f * i);
    outs.push_back(encoder_->forward(chunk, &cache));  // [B,2z,1,h,w]
    report(callbacks, i + 1, chunks);
  }
  const at::Tensor mu = conv1_->forward(at::cat(outs, 2)).chunk(2, 1)[0];
  return normalize(mu).to(at::kFloat);
}

at::Tensor WanVae::encode_whole(const at::Tensor& video) const {
  check_video(video);
  c10::NoGradGuard no_grad;  // results stay ordinary tensors (in-place use allowed)
  const at::Tensor& w = conv1_->weight;
  const at::Tensor x = patchify(video.to(w.device(), w.scalar_type()), config_.patch_size());
  const at::Tensor mu = conv1_->forward(encoder_->forward(x, nullptr)).chunk(2, 1)[0];
  return normalize(mu).to(at::kFloat);
}

at::Tensor WanVae::encode_for_training(const at::Tensor& video) const {
  check_video(video);
  const at::Tensor& w = conv1_->weight;
  const at::Tensor x = patchify(video.to(w.device(), w.scalar_type()), config_.patch_size());
  return normalize(conv1_->forward(encoder_->forward(x, nullptr)).chunk(2, 1)[0]);
}

at::Tensor WanVae::decode_for_training(const at::Tensor& latent) const {
  check_latent(latent);
  const at::Tensor& w = conv2_->weight;
  const at::Tensor x = conv2_->forward(denormalize(latent.to(w.device(), w.scalar_type())));
  return unpatchify(decoder_->forward(x, nullptr, true), config_.patch_size());
}

void WanVae::fold_latent_statistics(const at::Tensor& mean, const at::Tensor& std) {
  const int64_t z = config_.z_dim;
  if (mean.numel() != z || std.numel() != z || !(std.min().item<double>() > 0.0)) {
    throw std::invalid_argument("fold_latent_statistics needs " + std::to_string(z) +
                                " means and as many positive stds");
  }
  c10::NoGradGuard no_grad;
  const auto like = conv1_->weight.options();
  const at::Tensor target_mean = at::tensor(config_.latent_mean).to(like);
  const at::Tensor target_std = at::tensor(config_.latent_std).to(like);
  const at::Tensor a = target_std / std.to(like).reshape({z});  // raw' = a raw + c
  const at::Tensor c = target_mean - a * mean.to(like).reshape({z});
  at::Tensor mu_w = conv1_->weight.slice(0, 0, z);
  mu_w.mul_(a.view({z, 1, 1, 1, 1}));
  at::Tensor mu_b = conv1_->bias.slice(0, 0, z);
  mu_b.mul_(a).add_(c);
  // conv2(raw) = W raw + b = (W / a) raw' + b - W (c / a)
  const at::Tensor w2 = conv2_->weight.view({z, z});
  conv2_->bias.sub_(at::matmul(w2, c / a));
  conv2_->weight.div_(a.view({1, z, 1, 1, 1}));
}

at::Tensor WanVae::decode_chunks(const at::Tensor& latent, const VaeCallbacks& callbacks, int64_t done_before,
                                 int64_t total, c10::Device output_device, plugin::VaeKernels* fused) const {
  check_latent(latent);
  c10::NoGradGuard no_grad;  // results stay ordinary tensors (in-place use allowed)
  const at::Tensor& w = conv2_->weight;
  const at::Tensor x = conv2_->forward(denormalize(latent.to(w.device(), w.scalar_type())));
  // cuDNN's tensor-core convolutions work in channels-last (NDHWC); the decoder's ops keep the layout.
  const at::MemoryFormat format = x.is_cuda() ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::Contiguous;
  CausalCache cache;
  // Each chunk's frames go straight into the video (no list of chunks and concatenation after).
  const int64_t s = config_.spatial_factor(), f = config_.temporal_factor();
  at::Tensor video = at::empty({x.size(0), 3, 1 + f * (x.size(2) - 1), s * x.size(3), s * x.size(4)},
                               at::TensorOptions().dtype(at::kFloat).device(output_device));
  int64_t frame = 0;
  for (int64_t i = 0; i < x.size(2); ++i) {
    poll(callbacks);
    cache.begin_chunk();
    const at::Tensor chunk = x.slice(2, i, i + 1).contiguous(format);
    const at::Tensor y =  // 1 or 4 frames
        unpatchify(decoder_->forward(chunk, &cache, i == 0, fused), config_.patch_size()).clamp_(-1.0, 1.0);
    video.slice(2, frame, frame + y.size(2)).copy_(y);
    frame += y.size(2);
    report(callbacks, done_before + i + 1, total);
  }
  return video;
}

at::Tensor WanVae::decode(const at::Tensor& latent, const VaeCallbacks& callbacks,
                          const VaeDecodeOptions& options) const {
  check_latent(latent);
  const c10::Device out_device = options.output_device.value_or(latent.device());
  const bool shared = options.tiling && options.tile_share;  // one tile then goes to one decoder
  if (options.tiling &&
      (shared || latent.size(3) > options.tiling->tile_h || latent.size(4) > options.tiling->tile_w)) {
    return decode_tiled(*this, latent, callbacks, *options.tiling, out_device, shared ? &*options.tile_share : nullptr,
                        options.fused);
  }
  return decode_chunks(latent, callbacks, 0, latent.size(2), out_device, options.fused);
}

at::Tensor WanVae::decode_whole(const at::Tensor& latent) const {
  check_latent(latent);
  c10::NoGradGuard no_grad;  // results stay ordinary tensors (in-place use allowed)
  const at::Tensor& w = conv2_->weight;
  const at::Tensor x = conv2_->forward(denormalize(latent.to(w.device(), w.scalar_type())));
  return unpatchify(decoder_->forward(x, nullptr, true), config_.patch_size()).clamp(-1.0, 1.0).to(at::kFloat);
}

}  // namespace vidgraph::vae
