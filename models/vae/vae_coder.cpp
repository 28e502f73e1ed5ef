#include "vae_coder.h"

#include <string>

namespace vidgraph::vae {

namespace {

std::shared_ptr<CausalConv3d> conv3(int64_t in, int64_t out) {
  return std::make_shared<CausalConv3d>(in, out, std::array<int64_t, 3>{3, 3, 3}, std::array<int64_t, 3>{1, 1, 1},
                                        std::array<int64_t, 3>{1, 1, 1});
}

}  // namespace

DownResidualBlock::DownResidualBlock(int64_t in, int64_t out, int64_t mult, bool temporal, bool down, Numbered* flat,
                                     int64_t first)
    : out_(out), ft_(temporal ? 2 : 1), fs_(down ? 2 : 1), shortcut_(flat == nullptr) {
  Numbered* seq = flat != nullptr ? flat : register_module("downsamples", std::make_shared<Numbered>()).get();
  int64_t dim = in;
  for (int64_t j = 0; j < mult; ++j) {
    blocks_.push_back(seq->register_module(std::to_string(first + j), std::make_shared<ResidualBlock>(dim, out)));
    dim = out;
  }
  if (down) {
    const ResampleMode mode = temporal ? ResampleMode::Downsample3d : ResampleMode::Downsample2d;
    resample_ = seq->register_module(std::to_string(first + mult), std::make_shared<Resample>(out, mode));
  }
}

at::Tensor DownResidualBlock::forward(const at::Tensor& x, CausalCache* cache) const {
  at::Tensor y = x;
  for (const auto& block : blocks_) {
    y = block->forward(y, cache);
  }
  if (resample_) {
    y = resample_->forward(y, cache);
  }
  return shortcut_ ? add_residual(y, avg_down_3d(x, out_, ft_, fs_)) : y;
}

UpResidualBlock::UpResidualBlock(int64_t in, int64_t out, int64_t mult, bool temporal, bool up, Numbered* flat,
                                 int64_t first, int64_t up_out)
    : out_(out), ft_(temporal ? 2 : 1), fs_(up ? 2 : 1), up_(up), shortcut_(flat == nullptr) {
  Numbered* seq = flat != nullptr ? flat : register_module("upsamples", std::make_shared<Numbered>()).get();
  int64_t dim = in;
  for (int64_t j = 0; j < mult; ++j) {
    blocks_.push_back(seq->register_module(std::to_string(first + j), std::make_shared<ResidualBlock>(dim, out)));
    dim = out;
  }
  if (up) {
    const ResampleMode mode = temporal ? ResampleMode::Upsample3d : ResampleMode::Upsample2d;
    resample_ = seq->register_module(std::to_string(first + mult), std::make_shared<Resample>(out, mode, up_out));
  }
}

at::Tensor UpResidualBlock::forward(const at::Tensor& x, CausalCache* cache, bool first_chunk,
                                    plugin::VaeKernels* fused) const {
  at::Tensor y = x;
  for (const auto& block : blocks_) {
    y = block->forward(y, cache, fused);
  }
  if (!up_) {
    return y;
  }
  y = resample_->forward(y, cache);
  return shortcut_ ? add_residual(y, dup_up_3d(x, out_, ft_, fs_, first_chunk)) : y;
}

Encoder3d::Encoder3d(const WanVaeConfig& c) {
  std::vector<int64_t> dims = {c.encoder_dim};
  for (int64_t m : c.dim_mult) {
    dims.push_back(c.encoder_dim * m);
  }
  const int64_t p = c.patch_size();
  conv1_ = register_module("conv1", conv3(3 * p * p, dims[0]));
  auto downs = register_module("downsamples", std::make_shared<Numbered>());
  const size_t n = c.dim_mult.size();
  for (size_t i = 0; i < n; ++i) {
    const bool temporal = i < c.temporal_downsample.size() && c.temporal_downsample[i];
    const bool down = i + 1 != n;
    if (c.residual_stages()) {
      stages_.push_back(downs->register_module(
          std::to_string(i),
          std::make_shared<DownResidualBlock>(dims[i], dims[i + 1], c.num_res_blocks, temporal, down)));
    } else {
      stages_.push_back(std::make_shared<DownResidualBlock>(dims[i], dims[i + 1], c.num_res_blocks, temporal, down,
                                                            downs.get(), int64_t(i) * (c.num_res_blocks + 1)));
    }
  }
  const int64_t d = dims.back();
  auto middle = register_module("middle", std::make_shared<Numbered>());
  mid0_ = middle->register_module("0", std::make_shared<ResidualBlock>(d, d));
  mid1_ = middle->register_module("1", std::make_shared<AttentionBlock>(d));
  mid2_ = middle->register_module("2", std::make_shared<ResidualBlock>(d, d));
  auto head = register_module("head", std::make_shared<Numbered>());
  head_norm_ = head->register_module("0", std::make_shared<RmsNorm>(d, false));
  head_conv_ = head->register_module("2", conv3(d, c.z_dim * 2));
}

at::Tensor Encoder3d::forward(const at::Tensor& x, CausalCache* cache) const {
  at::Tensor y = causal_conv(*conv1_, x, cache);
  for (const auto& stage : stages_) {
    y = stage->forward(y, cache);
  }
  y = mid2_->forward(mid1_->forward(mid0_->forward(y, cache)), cache);
  return causal_conv(*head_conv_, activate(head_norm_->forward(y)), cache);
}

Decoder3d::Decoder3d(const WanVaeConfig& c) {
  std::vector<int64_t> dims = {c.decoder_dim * c.dim_mult.back()};
  for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) {
    dims.push_back(c.decoder_dim * *it);
  }
  conv1_ = register_module("conv1", conv3(c.z_dim, dims[0]));
  auto middle = register_module("middle", std::make_shared<Numbered>());
  mid0_ = middle->register_module("0", std::make_shared<ResidualBlock>(dims[0], dims[0]));
  mid1_ = middle->register_module("1", std::make_shared<AttentionBlock>(dims[0]));
  mid2_ = middle->register_module("2", std::make_shared<ResidualBlock>(dims[0], dims[0]));
  // temperal_upsample = temporal_downsample reversed
  std::vector<bool> temporal_up(c.temporal_downsample.rbegin(), c.temporal_downsample.rend());
  auto ups = register_module("upsamples", std::make_shared<Numbered>());
  const size_t n = c.dim_mult.size();
  for (size_t i = 0; i < n; ++i) {
    const bool temporal = i < temporal_up.size() && temporal_up[i];
    const bool up = i + 1 != n;
    if (c.residual_stages()) {
      stages_.push_back(ups->register_module(
          std::to_string(i),
          std::make_shared<UpResidualBlock>(dims[i], dims[i + 1], c.num_res_blocks + 1, temporal, up)));
    } else {
      // Wan2.1: each upsample halves the width, and the next stage starts from that half.
      const int64_t in = i == 0 ? dims[i] : dims[i] / 2;
      stages_.push_back(std::make_shared<UpResidualBlock>(in, dims[i + 1], c.num_res_blocks + 1, temporal, up,
                                                          ups.get(), int64_t(i) * (c.num_res_blocks + 2),
                                                          dims[i + 1] / 2));
    }
  }
  const int64_t p = c.patch_size();
  auto head = register_module("head", std::make_shared<Numbered>());
  head_norm_ = head->register_module("0", std::make_shared<RmsNorm>(dims.back(), false));
  head_conv_ = head->register_module("2", conv3(dims.back(), 3 * p * p));
}

at::Tensor Decoder3d::forward(const at::Tensor& x, CausalCache* cache, bool first_chunk,
                              plugin::VaeKernels* fused) const {
  at::Tensor y = causal_conv(*conv1_, x, cache);
  y = mid2_->forward(mid1_->forward(mid0_->forward(y, cache, fused)), cache, fused);
  for (const auto& stage : stages_) {
    y = stage->forward(y, cache, first_chunk, fused);
  }
  return causal_conv(*head_conv_, head_norm_->forward_silu(y, fused), cache);
}

}  // namespace vidgraph::vae
