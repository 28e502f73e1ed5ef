// Encoder3d and Decoder3d of the Wan2.2 VAE with their residual down/up stages
// (`Down_ResidualBlock`, `Up_ResidualBlock`); module names = official keys (`downsamples.{s}.
// downsamples.{j}`, `middle.{0,1,2}`, `head.{0,2}`, `upsamples.{s}.upsamples.{j}`).
// Both run one chunk per call when given a CausalCache, or a whole sequence without (vae_blocks.h).
#pragma once

#include <memory>
#include <vector>

#include "vae_blocks.h"
#include "vae_config.h"

namespace vidgraph::vae {

class DownResidualBlock : public torch::nn::Module {
 public:
  DownResidualBlock(int64_t in, int64_t out, int64_t mult, bool temporal, bool down);
  at::Tensor forward(const at::Tensor& x, CausalCache* cache) const;

 private:
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  std::shared_ptr<Resample> resample_;
  int64_t out_, ft_, fs_;
};

class UpResidualBlock : public torch::nn::Module {
 public:
  UpResidualBlock(int64_t in, int64_t out, int64_t mult, bool temporal, bool up);
  at::Tensor forward(const at::Tensor& x, CausalCache* cache, bool first_chunk) const;

 private:
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  std::shared_ptr<Resample> resample_;
  int64_t out_, ft_, fs_;
  bool up_;
};

// [B,12,T,H,W] (patchified video) -> [B, 2*z, T', H/8, W/8]
class Encoder3d : public torch::nn::Module {
 public:
  explicit Encoder3d(const WanVaeConfig& config);
  at::Tensor forward(const at::Tensor& x, CausalCache* cache) const;

 private:
  std::shared_ptr<CausalConv3d> conv1_, head_conv_;
  std::vector<std::shared_ptr<DownResidualBlock>> stages_;
  std::shared_ptr<ResidualBlock> mid0_, mid2_;
  std::shared_ptr<AttentionBlock> mid1_;
  std::shared_ptr<RmsNorm> head_norm_;
};

// [B,z,T,H,W] -> [B,12,T',8H,8W] (patchified video)
class Decoder3d : public torch::nn::Module {
 public:
  explicit Decoder3d(const WanVaeConfig& config);
  at::Tensor forward(const at::Tensor& x, CausalCache* cache, bool first_chunk) const;

 private:
  std::shared_ptr<CausalConv3d> conv1_, head_conv_;
  std::vector<std::shared_ptr<UpResidualBlock>> stages_;
  std::shared_ptr<ResidualBlock> mid0_, mid2_;
  std::shared_ptr<AttentionBlock> mid1_;
  std::shared_ptr<RmsNorm> head_norm_;
};

}  // namespace vidgraph::vae
