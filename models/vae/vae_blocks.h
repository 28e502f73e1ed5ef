// Building blocks of the Wan VAEs (`wan/modules/vae2_2.py`, `vae2_1.py`: the same blocks but for
// Resample's upsampling width), each a torch::nn::Module whose parameter names are the official
// `.pth` keys (`residual.0.gamma`, `resample.1.weight`, ...).
//
// Two execution modes share one code path:
// - chunked (`cache != nullptr`): the reference's causal chunk loop. Every cached convolution takes
//   one slot of the CausalCache in call order (the reference's `feat_idx`), prepends the last
//   CACHE_T = 2 input frames of the previous chunk and stores its own last two for the next one.
// - whole sequence (`cache == nullptr`): all frames at once with zero causal padding. It computes
//   exactly what the chunk loop computes (first frame handled as the first chunk is), which is how
//   the tests check the cache logic.
// Shapes: video-like tensors are [B, C, T, H, W]; per-frame 2D ops run on [B*T, C, H, W].
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "plugins/api/vae_kernels.h"

namespace vidgraph::vae {

// activate: SiLU; add_residual: y + h for a residual branch y. Without gradient recording
// (decoding) both overwrite their first argument, which keeps one activation fewer alive at the
// VAE's memory peak; with it (training) they allocate, as autograd needs.
at::Tensor activate(at::Tensor x);
at::Tensor add_residual(at::Tensor y, const at::Tensor& h);

// The per-chunk state of the cached convolutions (one slot per call site, in call order).
class CausalCache {
 public:
  struct Slot {
    at::Tensor frames;  // up to 2 trailing input frames of the previous chunk [B,C,<=2,H,W]
    bool rep = false;   // upsample3d saw the first chunk (the reference's "Rep" marker)
    bool used = false;
  };
  void begin_chunk() { next_ = 0; }
  Slot& next_slot();
  void clear() { slots_.clear(), next_ = 0; }
  // Bytes held by the cached frames (for memory reports).
  int64_t nbytes() const;

 private:
  std::vector<Slot> slots_;
  size_t next_ = 0;
};

// Conv3d with causal time padding (2*pt frames in front, none behind) and symmetric spatial padding.
class CausalConv3d : public torch::nn::Module {
 public:
  CausalConv3d(int64_t in, int64_t out, std::array<int64_t, 3> kernel, std::array<int64_t, 3> stride = {1, 1, 1},
               std::array<int64_t, 3> padding = {0, 0, 0});
  // x [B,Cin,T,H,W]; `past` ([B,Cin,n,H,W], n <= 2*pt) replaces n of the front zero frames.
  // Without `with_bias` the caller adds the bias (the fused kernels fold it into their pass).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& past = at::Tensor(), bool with_bias = true) const;
  int64_t time_pad() const { return 2 * padding_[0]; }

  at::Tensor weight;  // [out, in, kt, kh, kw]
  at::Tensor bias;    // [out]

 private:
  std::array<int64_t, 3> stride_;
  std::array<int64_t, 3> padding_;
};

// The reference's cached call: conv over x with the chunk cache (or whole-sequence when null).
at::Tensor causal_conv(const CausalConv3d& conv, const at::Tensor& x, CausalCache* cache, bool with_bias = true);

class Conv2d : public torch::nn::Module {
 public:
  Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t padding = 0);
  at::Tensor forward(const at::Tensor& x) const;  // [N,Cin,H,W] -> [N,Cout,H',W']
  at::Tensor forward_frames(const at::Tensor& x) const;  // each frame of [B,Cin,T,H,W] -> [B,Cout,T,H',W']
  at::Tensor weight;
  at::Tensor bias;

 private:
  int64_t stride_;
  int64_t padding_;
};

// `fused` when it can take x (decoding, its device and dtype, channels innermost), else null.
plugin::VaeKernels* fused_for(plugin::VaeKernels* fused, const at::Tensor& x);

// L2 normalisation over channels (dim 1) times sqrt(C) * gamma; gamma is [C,1,1,1] or [C,1,1] (images).
class RmsNorm : public torch::nn::Module {
 public:
  RmsNorm(int64_t dim, bool images);
  at::Tensor forward(const at::Tensor& x) const;
  // SiLU(forward(x)), in one pass where `fused` takes x.
  at::Tensor forward_silu(const at::Tensor& x, plugin::VaeKernels* fused) const;
  at::Tensor gamma;

 private:
  double scale_;
};

// A module holding numbered children ("0", "2", ...) so that keys read like nn.Sequential's.
class Numbered : public torch::nn::Module {};

class ResidualBlock : public torch::nn::Module {
 public:
  ResidualBlock(int64_t in, int64_t out);
  // [B,in,T,H,W] -> [B,out,T,H,W]; `fused` runs the passes between the convolutions where it can.
  at::Tensor forward(const at::Tensor& x, CausalCache* cache, plugin::VaeKernels* fused = nullptr) const;

 private:
  std::shared_ptr<RmsNorm> norm1_, norm2_;
  std::shared_ptr<CausalConv3d> conv1_, conv2_, shortcut_;
};

// Single-head self-attention over the H*W positions of each frame, plus identity.
class AttentionBlock : public torch::nn::Module {
 public:
  explicit AttentionBlock(int64_t dim);
  at::Tensor forward(const at::Tensor& x) const;  // [B,C,T,H,W] -> same

 private:
  std::shared_ptr<RmsNorm> norm_;
  std::shared_ptr<Conv2d> to_qkv_, proj_;
};

enum class ResampleMode { Upsample2d, Upsample3d, Downsample2d, Downsample3d };

class Resample : public torch::nn::Module {
 public:
  // `up_out`: the upsampling conv's output width (Wan2.2: dim; Wan2.1: dim / 2); 0 means dim.
  Resample(int64_t dim, ResampleMode mode, int64_t up_out = 0);
  at::Tensor forward(const at::Tensor& x, CausalCache* cache) const;

 private:
  at::Tensor spatial(const at::Tensor& x) const;
  at::Tensor spatial_frames(const at::Tensor& x) const;
  at::Tensor time_up(const at::Tensor& x, CausalCache* cache) const;
  at::Tensor time_down(const at::Tensor& x, CausalCache* cache) const;

  ResampleMode mode_;
  std::shared_ptr<Conv2d> conv_;
  std::shared_ptr<CausalConv3d> time_conv_;
};

// Parameter-free shortcuts: space/time-to-channel average (AvgDown3D) and its duplicate inverse
// (DupUp3D; `first_chunk` drops the first ft-1 output frames).
at::Tensor avg_down_3d(const at::Tensor& x, int64_t out_channels, int64_t ft, int64_t fs);
at::Tensor dup_up_3d(const at::Tensor& x, int64_t out_channels, int64_t ft, int64_t fs, bool first_chunk);

// b c f (h q) (w r) -> b (c r q) f h w with patch 2, and back; patch 1 returns x.
at::Tensor patchify(const at::Tensor& x, int64_t patch);
at::Tensor unpatchify(const at::Tensor& x, int64_t patch);

}  // namespace vidgraph::vae
