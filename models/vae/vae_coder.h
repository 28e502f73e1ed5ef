// Encoder3d and Decoder3d of the Wan VAEs with their down/up stages; module names = official keys:
// - Wan2.2 (`Down_ResidualBlock`, `Up_ResidualBlock`): `downsamples.{s}.downsamples.{j}`,
//   `upsamples.{s}.upsamples.{j}`, each stage adding its AvgDown3D/DupUp3D shortcut;
// - Wan2.1: the same layers in one flat list, `downsamples.{k}` / `upsamples.{k}` (stage s starts at
//   k = s * (blocks + 1)), no stage shortcut; the decoder's upsamples halve the width and the next
//   stage starts from that half;
// and for both `middle.{0,1,2}`, `head.{0,2}`, `conv1`.
// Both run one chunk per call when given a CausalCache, or a whole sequence without (vae_blocks.h).
#pragma once

#include <memory>
#include <vector>

#include "vae_blocks.h"
#include "vae_config.h"

namespace vidgraph::vae {

// One stage: `mult` residual blocks, then a Resample when `down`/`up`. With `flat` == nullptr (Wan2.2)
// the layers are this module's children `downsamples.{j}` and the stage adds its shortcut; otherwise
// (Wan2.1) they are children `first`, `first + 1`, ... of the coder's flat list `flat`, this object
// is not itself registered, and there is no shortcut.
class DownResidualBlock : public torch::nn::Module {
 public:
  DownResidualBlock(int64_t in, int64_t out, int64_t mult, bool temporal, bool down, Numbered* flat = nullptr,
                    int64_t first = 0);
  at::Tensor forward(const at::Tensor& x, CausalCache* cache) const;

 private:
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  std::shared_ptr<Resample> resample_;
  int64_t out_, ft_, fs_;
  bool shortcut_;
};

// `up_out`: the Resample's output width (Wan2.2: out; Wan2.1: out / 2).
class UpResidualBlock : public torch::nn::Module {
 public:
  UpResidualBlock(int64_t in, int64_t out, int64_t mult, bool temporal, bool up, Numbered* flat = nullptr,
                  int64_t first = 0, int64_t up_out = 0);
  at::Tensor forward(const at::Tensor& x, CausalCache* cache, bool first_chunk,
                     plugin::VaeKernels* fused = nullptr) const;

 private:
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  std::shared_ptr<Resample> resample_;
  int64_t out_, ft_, fs_;
  bool up_, shortcut_;
};

// [B,3p^2,T,H,W] (patchified video) -> [B, 2*z, T', H/8, W/8]
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

// [B,z,T,H,W] -> [B,3p^2,T',8H,8W] (patchified video); first_chunk only matters to Wan2.2's DupUp3D
class Decoder3d : public torch::nn::Module {
 public:
  explicit Decoder3d(const WanVaeConfig& config);
  at::Tensor forward(const at::Tensor& x, CausalCache* cache, bool first_chunk,
                     plugin::VaeKernels* fused = nullptr) const;

 private:
  std::shared_ptr<CausalConv3d> conv1_, head_conv_;
  std::vector<std::shared_ptr<UpResidualBlock>> stages_;
  std::shared_ptr<ResidualBlock> mid0_, mid2_;
  std::shared_ptr<AttentionBlock> mid1_;
  std::shared_ptr<RmsNorm> head_norm_;
};

}  // namespace vidgraph::vae
