#include "vae_blocks.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <ATen/Context.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/conv3d.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mkldnn_convolution.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/upsample_nearest2d.h>
#include <ATen/ops/upsample_nearest3d.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

namespace vidgraph::vae {

namespace {

constexpr int64_t kCacheT = 2;

// [B,C,T,H,W] -> [B*T,C,H,W]
at::Tensor frames_to_batch(const at::Tensor& x) {
  return x.permute({0, 2, 1, 3, 4}).reshape({x.size(0) * x.size(2), x.size(1), x.size(3), x.size(4)});
}

// [B*T,C,H,W] -> [B,C,T,H,W]
at::Tensor batch_to_frames(const at::Tensor& y, int64_t b) {
  return y.view({b, y.size(0) / b, y.size(1), y.size(2), y.size(3)}).permute({0, 2, 1, 3, 4});
}

// at::conv3d, but a float32 CPU input always goes to oneDNN. LibTorch 1.13 sends a single video
// (batch 1) of fewer than 20480 channel-frame-rows (N*C*T*H) to slow_conv3d, which unfolds the input
// into a [C*27, T*H*W] buffer (53-106 MB per conv at the demo's 48x80) and runs single-threaded: it was
// ~80% of the demo's decode, 10-20x slower per conv than oneDNN on these shapes (tests/bench/vae_cpu).
// Both compute the same sums; results differ by float32 rounding (rel-L2 ~4e-7). mkldnn_convolution
// is differentiable, so training takes the same path (as at::conv3d already does for batches > 1).
bool onednn_conv(const at::Tensor& input) {
  return input.device().is_cpu() && input.scalar_type() == at::kFloat && !input.is_mkldnn() && at::hasMKLDNN() &&
         at::globalContext().userEnabledMkldnn();
}

at::Tensor conv3d_fast(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                       at::IntArrayRef stride, at::IntArrayRef padding) {
  if (!onednn_conv(input) || weight.scalar_type() != at::kFloat) {
    return at::conv3d(input, weight, bias, stride, padding);
  }
  return at::mkldnn_convolution(input.contiguous(), weight.contiguous(), bias, padding, stride, {1, 1, 1}, 1);
}

at::Tensor last_frames(const at::Tensor& x, int64_t n) {
  return x.slice(2, std::max<int64_t>(x.size(2) - n, 0)).clone();
}

}  // namespace

at::Tensor activate(at::Tensor x) {
  return c10::GradMode::is_enabled() ? at::silu(x) : at::silu_(x);
}

at::Tensor add_residual(at::Tensor y, const at::Tensor& h) {
  return c10::GradMode::is_enabled() ? y + h : y.add_(h);
}

CausalCache::Slot& CausalCache::next_slot() {
  if (next_ == slots_.size()) {
    slots_.emplace_back();
  }
  return slots_[next_++];
}

int64_t CausalCache::nbytes() const {
  int64_t total = 0;
  for (const Slot& s : slots_) {
    total += s.frames.defined() ? int64_t(s.frames.nbytes()) : 0;
  }
  return total;
}

CausalConv3d::CausalConv3d(int64_t in, int64_t out, std::array<int64_t, 3> kernel, std::array<int64_t, 3> stride,
                           std::array<int64_t, 3> padding)
    : stride_(stride), padding_(padding) {
  weight = register_parameter("weight", at::empty({out, in, kernel[0], kernel[1], kernel[2]}));  // set by a loader
  bias = register_parameter("bias", at::zeros({out}));
}

at::Tensor CausalConv3d::forward(const at::Tensor& x, const at::Tensor& past, bool with_bias) const {
  int64_t front = time_pad();
  at::Tensor input = x;
  if (past.defined() && front > 0) {
    input = at::cat({past.to(x.device(), x.scalar_type()), x}, 2);
    front -= past.size(2);
  }
  // Only the causal time padding is materialised (F.pad order: w, h, t front/back); the convolution
  // pads height and width itself, so the activation is not copied for them.
  if (front != 0) input = at::constant_pad_nd(input, {0, 0, 0, 0, front, 0}, 0);
  // cuDNN's tensor-core convolutions run NDHWC: given NCDHW they transpose the input and weight in
  // and the output back (0.54 s of a 4.8 s decode at 3c088a0). A no-op when already so.
  if (input.is_cuda()) input = input.contiguous(at::MemoryFormat::ChannelsLast3d);
  return conv3d_fast(input, weight, with_bias ? bias : at::Tensor(), {stride_[0], stride_[1], stride_[2]},
                     {0, padding_[1], padding_[2]});
}

at::Tensor causal_conv(const CausalConv3d& conv, const at::Tensor& x, CausalCache* cache, bool with_bias) {
  if (cache == nullptr) {
    return conv.forward(x, at::Tensor(), with_bias);
  }
  CausalCache::Slot& slot = cache->next_slot();
  at::Tensor keep = last_frames(x, kCacheT);
  if (keep.size(2) < kCacheT && slot.frames.defined()) {
    keep = at::cat({slot.frames.slice(2, slot.frames.size(2) - 1), keep}, 2);
  }
  at::Tensor y = conv.forward(x, slot.frames, with_bias);
  slot.frames = keep;
  slot.used = true;
  return y;
}

Conv2d::Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding)
    : stride_(stride), padding_(padding) {
  weight = register_parameter("weight", at::empty({out, in, kernel, kernel}));  // set by a loader
  bias = register_parameter("bias", at::zeros({out}));
}

at::Tensor Conv2d::forward(const at::Tensor& x) const {
  return at::conv2d(x, weight, bias, {stride_, stride_}, {padding_, padding_});
}

at::Tensor Conv2d::forward_frames(const at::Tensor& x) const {
  return conv3d_fast(x, weight.unsqueeze(2), bias, {1, stride_, stride_}, {0, padding_, padding_});
}

RmsNorm::RmsNorm(int64_t dim, bool images) : scale_(std::sqrt(double(dim))) {
  gamma = register_parameter("gamma", images ? at::ones({dim, 1, 1}) : at::ones({dim, 1, 1, 1}));
}

at::Tensor RmsNorm::forward(const at::Tensor& x) const {
  // F.normalize(x, dim=1): x / max(||x||_2, 1e-12), over channels only.
  const at::Tensor norm = x.norm(2, {1}, /*keepdim=*/true).clamp_min(1e-12);
  if (c10::GradMode::is_enabled()) {
    return x / norm * scale_ * gamma;
  }
  // Decoding: fold sqrt(C) into the per-position factor (1/C of x's size), then two passes over x
  // instead of three, the second in place (one full-size temporary fewer). Same values up to rounding.
  return (x * at::reciprocal(norm).mul_(scale_)).mul_(gamma);
}

at::Tensor RmsNorm::forward_silu(const at::Tensor& x, plugin::VaeKernels* fused) const {
  if (plugin::VaeKernels* k = fused_for(fused, x)) return k->rms_norm_silu(x, at::Tensor(), gamma, true);
  return activate(forward(x));
}

plugin::VaeKernels* fused_for(plugin::VaeKernels* fused, const at::Tensor& x) {
  if (fused == nullptr || c10::GradMode::is_enabled() || !fused->supports(x.device(), x.scalar_type())) return nullptr;
  return x.stride(1) == 1 && x.is_non_overlapping_and_dense() ? fused : nullptr;
}

ResidualBlock::ResidualBlock(int64_t in, int64_t out) {
  auto residual = register_module("residual", std::make_shared<Numbered>());
  norm1_ = residual->register_module("0", std::make_shared<RmsNorm>(in, false));
  conv1_ = residual->register_module(
      "2", std::make_shared<CausalConv3d>(in, out, std::array<int64_t, 3>{3, 3, 3}, std::array<int64_t, 3>{1, 1, 1},
                                          std::array<int64_t, 3>{1, 1, 1}));
  norm2_ = residual->register_module("3", std::make_shared<RmsNorm>(out, false));
  conv2_ = residual->register_module(
      "6", std::make_shared<CausalConv3d>(out, out, std::array<int64_t, 3>{3, 3, 3}, std::array<int64_t, 3>{1, 1, 1},
                                          std::array<int64_t, 3>{1, 1, 1}));
  if (in != out) {
    shortcut_ = register_module("shortcut", std::make_shared<CausalConv3d>(in, out, std::array<int64_t, 3>{1, 1, 1}));
  }
}

at::Tensor ResidualBlock::forward(const at::Tensor& x, CausalCache* cache, plugin::VaeKernels* fused) const {
  const at::Tensor h = shortcut_ ? shortcut_->forward(x) : x;
  if (plugin::VaeKernels* k = fused_for(fused, x)) {
    // Three passes between the convolutions instead of eleven: conv1's bias goes into the second
    // norm's pass, conv2's into the residual add's. cuDNN keeps channels-last (the copies are no-ops).
    const auto cl = at::MemoryFormat::ChannelsLast3d;
    at::Tensor y = causal_conv(*conv1_, k->rms_norm_silu(x, at::Tensor(), norm1_->gamma, true), cache, false);
    y = causal_conv(*conv2_, k->rms_norm_silu(y.contiguous(cl), conv1_->bias, norm2_->gamma, true), cache, false);
    return k->bias_residual(y.contiguous(cl), conv2_->bias, h.contiguous(cl));
  }
  at::Tensor y = activate(norm1_->forward(x));
  y = causal_conv(*conv1_, y, cache);
  y = activate(norm2_->forward(y));  // dropout 0 between SiLU and the second conv
  y = causal_conv(*conv2_, y, cache);
  return add_residual(y, h);
}

AttentionBlock::AttentionBlock(int64_t dim) {
  norm_ = register_module("norm", std::make_shared<RmsNorm>(dim, true));
  to_qkv_ = register_module("to_qkv", std::make_shared<Conv2d>(dim, dim * 3, 1));
  proj_ = register_module("proj", std::make_shared<Conv2d>(dim, dim, 1));
}

at::Tensor AttentionBlock::forward(const at::Tensor& x) const {
  const int64_t b = x.size(0), c = x.size(1), h = x.size(3), w = x.size(4);
  at::Tensor y = norm_->forward(frames_to_batch(x));                                                // [N,C,H,W]
  const at::Tensor qkv = to_qkv_->forward(y).reshape({y.size(0), 3 * c, h * w}).transpose(1, 2);    // [N,HW,3C]
  const std::vector<at::Tensor> parts = qkv.chunk(3, -1);                                           // 3 x [N,HW,C]
  const at::Tensor logits = at::matmul(parts[0], parts[1].transpose(1, 2)) / std::sqrt(double(c));  // [N,HW,HW]
  const at::Tensor probs = at::softmax(logits, -1, at::kFloat).to(parts[2].scalar_type());
  y = at::matmul(probs, parts[2]).transpose(1, 2).reshape({y.size(0), c, h, w});  // [N,C,H,W]
  // x first: a sum takes its first operand's layout, and x is channels-last on the GPU where the
  // attended frames of a one-frame chunk come back NCDHW.
  return x + batch_to_frames(proj_->forward(y), b);
}

Resample::Resample(int64_t dim, ResampleMode mode, int64_t up_out) : mode_(mode) {
  auto resample = register_module("resample", std::make_shared<Numbered>());
  const bool up = mode == ResampleMode::Upsample2d || mode == ResampleMode::Upsample3d;
  const int64_t out = up && up_out > 0 ? up_out : dim;
  conv_ = resample->register_module("1", std::make_shared<Conv2d>(dim, out, 3, up ? 1 : 2, up ? 1 : 0));
  if (mode == ResampleMode::Upsample3d) {
    time_conv_ = register_module(
        "time_conv", std::make_shared<CausalConv3d>(dim, dim * 2, std::array<int64_t, 3>{3, 1, 1},
                                                    std::array<int64_t, 3>{1, 1, 1}, std::array<int64_t, 3>{1, 0, 0}));
  } else if (mode == ResampleMode::Downsample3d) {
    time_conv_ = register_module("time_conv", std::make_shared<CausalConv3d>(dim, dim, std::array<int64_t, 3>{3, 1, 1},
                                                                             std::array<int64_t, 3>{2, 1, 1}));
  }
}

at::Tensor Resample::spatial(const at::Tensor& x) const {
  if (onednn_conv(x)) {
    return spatial_frames(x);
  }
  at::Tensor y = frames_to_batch(x);  // [N,C,H,W]
  if (mode_ == ResampleMode::Upsample2d || mode_ == ResampleMode::Upsample3d) {
    // = nearest-exact at a factor of 2. Kept in y's layout: one channels-last frame (a batch of
    // one, the first chunk) comes back NCHW, which the convolutions would transpose again.
    const at::MemoryFormat format = y.suggest_memory_format();
    y = at::upsample_nearest2d(y, {2 * y.size(2), 2 * y.size(3)}).contiguous(format);
  } else {
    y = at::constant_pad_nd(y, {0, 1, 0, 1}, 0);  // right and bottom
  }
  return batch_to_frames(conv_->forward(y), x.size(0));
}

// The oneDNN (CPU float32) path: the same per-frame ops as 3-D ops with a time extent of 1 on [B,C,T,H,W] as it is.
// That saves the frames-to-batch copy, and the output stays contiguous (batch_to_frames's permuted
// view slowed the next norm, and the next conv had to copy it). Same values up to conv rounding.
at::Tensor Resample::spatial_frames(const at::Tensor& x) const {
  at::Tensor y;
  if (mode_ == ResampleMode::Upsample2d || mode_ == ResampleMode::Upsample3d) {
    y = at::upsample_nearest3d(x, {x.size(2), 2 * x.size(3), 2 * x.size(4)});  // frames unchanged
  } else {
    y = at::constant_pad_nd(x, {0, 1, 0, 1}, 0);  // right and bottom
  }
  return conv_->forward_frames(y);
}

// time_conv output [B,2C,T,H,W] -> frames interleaved [B,C,2T,H,W], in one copy that keeps the
// memory format (channels-last on the GPU).
static at::Tensor interleave_time(const at::Tensor& y) {
  const int64_t b = y.size(0), c = y.size(1) / 2, t = y.size(2), h = y.size(3), w = y.size(4);
  at::Tensor out = at::empty({b, c, 2 * t, h, w}, y.options().memory_format(y.suggest_memory_format()));
  out.view({b, c, t, 2, h, w}).copy_(y.view({b, 2, c, t, h, w}).permute({0, 2, 3, 1, 4, 5}));
  return out;
}

at::Tensor Resample::time_up(const at::Tensor& x, CausalCache* cache) const {
  if (cache == nullptr) {
    // The first frame passes as the first chunk does; the rest are doubled causally.
    if (x.size(2) == 1) {
      return x;
    }
    return at::cat({x.slice(2, 0, 1), interleave_time(time_conv_->forward(x.slice(2, 1)))}, 2);
  }
  CausalCache::Slot& slot = cache->next_slot();
  if (!slot.used) {
    slot.used = true;
    slot.rep = true;
    return x;
  }
  at::Tensor keep = last_frames(x, kCacheT);
  if (keep.size(2) < kCacheT) {
    const at::Tensor before = slot.rep ? at::zeros_like(keep) : slot.frames.slice(2, slot.frames.size(2) - 1);
    keep = at::cat({before, keep}, 2);
  }
  const at::Tensor y = slot.rep ? time_conv_->forward(x) : time_conv_->forward(x, slot.frames);
  slot.frames = keep;
  slot.rep = false;
  return interleave_time(y);
}

at::Tensor Resample::time_down(const at::Tensor& x, CausalCache* cache) const {
  if (cache == nullptr) {
    if (x.size(2) < 3) {
      return x.slice(2, 0, 1);
    }
    return at::cat({x.slice(2, 0, 1), time_conv_->forward(x)}, 2);
  }
  CausalCache::Slot& slot = cache->next_slot();
  if (!slot.used) {
    // First chunk: the reference stores the input and skips the temporal stride.
    slot.used = true;
    slot.frames = last_frames(x, 1);
    return x;
  }
  const at::Tensor keep = last_frames(x, 1);
  const at::Tensor y = time_conv_->forward(at::cat({slot.frames, x}, 2));
  slot.frames = keep;
  return y;
}

at::Tensor Resample::forward(const at::Tensor& x, CausalCache* cache) const {
  switch (mode_) {
    case ResampleMode::Upsample3d:
      return spatial(time_up(x, cache));
    case ResampleMode::Downsample3d:
      return time_down(spatial(x), cache);
    default:
      return spatial(x);
  }
}

at::Tensor avg_down_3d(const at::Tensor& x, int64_t out_channels, int64_t ft, int64_t fs) {
  const int64_t pad_t = (ft - x.size(2) % ft) % ft;
  const at::Tensor p = at::constant_pad_nd(x, {0, 0, 0, 0, pad_t, 0}, 0);
  const int64_t b = p.size(0), c = p.size(1), t = p.size(2) / ft, h = p.size(3) / fs, w = p.size(4) / fs;
  const int64_t factor = ft * fs * fs;
  return p.view({b, c, t, ft, h, fs, w, fs})
      .permute({0, 1, 3, 5, 7, 2, 4, 6})  // [B,C,ft,fs,fs,T',H',W']
      .reshape({b, out_channels, c * factor / out_channels, t, h, w})
      .mean(2);
}

at::Tensor dup_up_3d(const at::Tensor& x, int64_t out_channels, int64_t ft, int64_t fs, bool first_chunk) {
  const int64_t b = x.size(0), t = x.size(2), h = x.size(3), w = x.size(4);
  const int64_t repeats = out_channels * ft * fs * fs / x.size(1);
  // x.repeat_interleave(repeats, 1) as a broadcast copy (repeat_interleave gathers through an index).
  at::Tensor y = x.unsqueeze(2)
                     .expand({b, x.size(1), repeats, t, h, w})
                     .reshape({b, out_channels * ft * fs * fs, t, h, w})
                     .view({b, out_channels, ft, fs, fs, t, h, w})
                     .permute({0, 1, 5, 2, 6, 3, 7, 4})  // [B,C,T,ft,H,fs,W,fs]
                     .reshape({b, out_channels, t * ft, h * fs, w * fs});
  return first_chunk ? y.slice(2, ft - 1) : y;
}

at::Tensor patchify(const at::Tensor& x, int64_t p) {
  if (p == 1) return x;
  const int64_t b = x.size(0), c = x.size(1), f = x.size(2), h = x.size(3) / p, w = x.size(4) / p;
  return x.view({b, c, f, h, p, w, p}).permute({0, 1, 6, 4, 2, 3, 5}).reshape({b, c * p * p, f, h, w});
}

at::Tensor unpatchify(const at::Tensor& x, int64_t p) {
  if (p == 1) return x;
  const int64_t b = x.size(0), c = x.size(1) / (p * p), f = x.size(2), h = x.size(3), w = x.size(4);
  return x.view({b, c, p, p, f, h, w}).permute({0, 1, 4, 5, 3, 6, 2}).reshape({b, c, f, h * p, w * p});
}

}  // namespace vidgraph::vae
