// Test fixture: the official Wan2.1 VAE (`wan/modules/vae2_1.py`, `WanVAE_` with the scale of
// `Wan2_1_VAE`) written again, independently of models/vae, from the reference's structure:
// - official_vae21_shapes: its module tree as key -> shape, enumerated from the constructors
//   (Encoder3d/Decoder3d flat lists, Resample's dim // 2 upsampling, halved decoder stage inputs);
// - ReferenceVae21: encode and decode in float64 step by step as the reference runs them (weights by
//   key, layer lists rebuilt from the config, the feat_cache list with its None / 'Rep' / tensor
//   entries, F.pad then unpadded convolutions, nearest 2x by repetition, explicit attention).
// Header-only; no product code uses it.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/conv3d.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/io/safetensors.h"
#include "models/vae/vae_config.h"

namespace vidgraph::test {

using vae::WanVaeConfig;

// "<prefix><k>."
inline std::string indexed(const std::string& prefix, int64_t k) {
  return prefix + std::to_string(k) + ".";
}

// The official module tree of `WanVAE_` (vae2_1.py) as key -> shape, enumerated from its
// constructors: Encoder3d/Decoder3d flat lists, Resample's dim // 2 upsampling, the decoder's
// halved stage inputs.
inline std::map<std::string, std::vector<int64_t>> official_vae21_shapes(const WanVaeConfig& c) {
  std::map<std::string, std::vector<int64_t>> s;
  auto conv3d = [&](const std::string& p, int64_t in, int64_t out, std::vector<int64_t> k) {
    s[p + "weight"] = {out, in, k[0], k[1], k[2]};
    s[p + "bias"] = {out};
  };
  auto conv2d = [&](const std::string& p, int64_t in, int64_t out, int64_t k) {
    s[p + "weight"] = {out, in, k, k};
    s[p + "bias"] = {out};
  };
  auto res = [&](const std::string& p, int64_t in, int64_t out) {
    s[p + "residual.0.gamma"] = {in, 1, 1, 1};
    conv3d(p + "residual.2.", in, out, {3, 3, 3});
    s[p + "residual.3.gamma"] = {out, 1, 1, 1};
    conv3d(p + "residual.6.", out, out, {3, 3, 3});
    if (in != out) conv3d(p + "shortcut.", in, out, {1, 1, 1});
  };
  auto attn = [&](const std::string& p, int64_t d) {
    s[p + "norm.gamma"] = {d, 1, 1};
    conv2d(p + "to_qkv.", d, 3 * d, 1);
    conv2d(p + "proj.", d, d, 1);
  };
  auto middle = [&](const std::string& p, int64_t d) {
    res(p + "middle.0.", d, d);
    attn(p + "middle.1.", d);
    res(p + "middle.2.", d, d);
  };
  const size_t n = c.dim_mult.size();
  // Encoder: dims = dim * [1] + dim_mult.
  std::vector<int64_t> dims = {c.encoder_dim};
  for (int64_t m : c.dim_mult) dims.push_back(c.encoder_dim * m);
  conv3d("encoder.conv1.", 3, dims[0], {3, 3, 3});
  int64_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t in = dims[i];
    for (int64_t j = 0; j < c.num_res_blocks; ++j, ++k) {
      res(indexed("encoder.downsamples.", k), in, dims[i + 1]);
      in = dims[i + 1];
    }
    if (i + 1 != n) {
      conv2d(indexed("encoder.downsamples.", k) + "resample.1.", in, in, 3);
      if (c.temporal_downsample[i]) conv3d(indexed("encoder.downsamples.", k) + "time_conv.", in, in, {3, 1, 1});
      ++k;
    }
  }
  middle("encoder.", dims.back());
  s["encoder.head.0.gamma"] = {dims.back(), 1, 1, 1};
  conv3d("encoder.head.2.", dims.back(), 2 * c.z_dim, {3, 3, 3});
  conv3d("conv1.", 2 * c.z_dim, 2 * c.z_dim, {1, 1, 1});
  conv3d("conv2.", c.z_dim, c.z_dim, {1, 1, 1});
  // Decoder: dims = dim * [dim_mult[-1]] + dim_mult reversed; stages after the first start at half.
  dims = {c.decoder_dim * c.dim_mult.back()};
  for (size_t i = n; i-- > 0;) dims.push_back(c.decoder_dim * c.dim_mult[i]);
  conv3d("decoder.conv1.", c.z_dim, dims[0], {3, 3, 3});
  middle("decoder.", dims[0]);
  k = 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t in = i == 0 ? dims[i] : dims[i] / 2;
    for (int64_t j = 0; j <= c.num_res_blocks; ++j, ++k) {
      res(indexed("decoder.upsamples.", k), in, dims[i + 1]);
      in = dims[i + 1];
    }
    if (i + 1 != n) {
      conv2d(indexed("decoder.upsamples.", k) + "resample.1.", in, in / 2, 3);
      if (c.temporal_downsample[n - 2 - i])
        conv3d(indexed("decoder.upsamples.", k) + "time_conv.", in, 2 * in, {3, 1, 1});
      ++k;
    }
  }
  s["decoder.head.0.gamma"] = {dims.back(), 1, 1, 1};
  conv3d("decoder.head.2.", dims.back(), 3, {3, 3, 3});
  return s;
}

// An independent float64 implementation of the official network's encode and decode (`WanVAE_.
// encode/decode` with the scale of `Wan2_1_VAE`), following vae2_1.py step by step: weights by key,
// layer lists rebuilt from the config, the feat_cache list with its None / 'Rep' / tensor entries.
class ReferenceVae21 {
 public:
  ReferenceVae21(const WanVaeConfig& c, const model_io::NamedTensors& params) : c_(c) {
    for (const auto& [k, t] : params) w_[k] = t.to(at::kDouble);
    const size_t n = c.dim_mult.size();
    int64_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < c.num_res_blocks; ++j) enc_.push_back({Kind::Res, indexed("encoder.downsamples.", k++)});
      if (i + 1 != n) {
        enc_.push_back({c.temporal_downsample[i] ? Kind::Down3d : Kind::Down2d, indexed("encoder.downsamples.", k++)});
      }
    }
    k = 0;
    for (size_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j <= c.num_res_blocks; ++j) dec_.push_back({Kind::Res, indexed("decoder.upsamples.", k++)});
      if (i + 1 != n) {
        dec_.push_back(
            {c.temporal_downsample[n - 2 - i] ? Kind::Up3d : Kind::Up2d, indexed("decoder.upsamples.", k++)});
      }
    }
  }

  // video [B,3,1+4k,H,W] -> (mu - mean) / std, float64
  at::Tensor encode(const at::Tensor& video) const {
    const at::Tensor x = video.to(at::kDouble);
    Cache cache;
    std::vector<at::Tensor> outs;
    for (int64_t i = 0; i < 1 + (x.size(2) - 1) / 4; ++i) {
      cache.idx = 0;
      outs.push_back(
          coder(i == 0 ? x.slice(2, 0, 1) : x.slice(2, 1 + 4 * (i - 1), 1 + 4 * i), "encoder.", enc_, cache));
    }
    const at::Tensor mu = conv(at::cat(outs, 2), "conv1.", {0, 0, 0}).slice(1, 0, c_.z_dim);
    return (mu - stat(c_.latent_mean)) * (1.0 / stat(c_.latent_std));
  }

  // normalised latent [B,z,T,h,w] -> video clamped to [-1, 1], float64
  at::Tensor decode(const at::Tensor& latent) const {
    const at::Tensor z = latent.to(at::kDouble) / (1.0 / stat(c_.latent_std)) + stat(c_.latent_mean);
    const at::Tensor x = conv(z, "conv2.", {0, 0, 0});
    Cache cache;
    std::vector<at::Tensor> outs;
    for (int64_t i = 0; i < x.size(2); ++i) {
      cache.idx = 0;
      outs.push_back(coder(x.slice(2, i, i + 1), "decoder.", dec_, cache));
    }
    return at::cat(outs, 2).clamp(-1.0, 1.0);
  }

 private:
  enum class Kind { Res, Down2d, Down3d, Up2d, Up3d };
  struct Layer {
    Kind kind;
    std::string prefix;
  };
  struct Entry {
    bool rep = false;  // 'Rep'
    at::Tensor t;      // undefined and !rep: None
  };
  struct Cache {
    std::vector<Entry> feat = std::vector<Entry>(256);
    size_t idx = 0;
  };

  at::Tensor stat(const std::vector<float>& v) const {
    return at::tensor(std::vector<double>(v.begin(), v.end()), at::kDouble).view({1, int64_t(v.size()), 1, 1, 1});
  }

  // CausalConv3d: F.pad (w, w, h, h, 2t, 0) after prepending the cache, then an unpadded conv3d.
  at::Tensor conv(at::Tensor x, const std::string& p, std::array<int64_t, 3> pad, const at::Tensor& cache_x = {},
                  int64_t stride_t = 1) const {
    std::vector<int64_t> padding = {pad[2], pad[2], pad[1], pad[1], 2 * pad[0], 0};
    if (cache_x.defined() && padding[4] > 0) {
      x = at::cat({cache_x, x}, 2);
      padding[4] -= cache_x.size(2);
    }
    x = at::constant_pad_nd(x, padding, 0);
    return at::conv3d(x, w_.at(p + "weight"), w_.at(p + "bias"), {stride_t, 1, 1});
  }

  // The reference's cached call of a 3x3x3 CausalConv3d.
  at::Tensor cached(const at::Tensor& x, const std::string& p, Cache& cache) const {
    Entry& e = cache.feat.at(cache.idx);
    at::Tensor cache_x = x.slice(2, std::max<int64_t>(x.size(2) - 2, 0)).clone();
    if (cache_x.size(2) < 2 && e.t.defined()) cache_x = at::cat({e.t.slice(2, e.t.size(2) - 1), cache_x}, 2);
    const at::Tensor y = conv(x, p, {1, 1, 1}, e.t);
    e.t = cache_x;
    ++cache.idx;
    return y;
  }

  at::Tensor rms(const at::Tensor& x, const std::string& p) const {
    return x / x.norm(2, {1}, true).clamp_min(1e-12) * std::sqrt(double(x.size(1))) * w_.at(p + "gamma");
  }

  at::Tensor residual(const at::Tensor& x, const std::string& p, Cache& cache) const {
    const at::Tensor h = w_.count(p + "shortcut.weight") ? conv(x, p + "shortcut.", {0, 0, 0}) : x;
    at::Tensor y = cached(at::silu(rms(x, p + "residual.0.")), p + "residual.2.", cache);
    y = cached(at::silu(rms(y, p + "residual.3.")), p + "residual.6.", cache);
    return y + h;
  }

  static at::Tensor to_frames(const at::Tensor& x) {  // b c t h w -> (b t) c h w
    return x.permute({0, 2, 1, 3, 4}).reshape({-1, x.size(1), x.size(3), x.size(4)});
  }
  static at::Tensor from_frames(const at::Tensor& y, int64_t t) {  // (b t) c h w -> b c t h w
    return y.reshape({-1, t, y.size(1), y.size(2), y.size(3)}).permute({0, 2, 1, 3, 4});
  }

  at::Tensor attention(const at::Tensor& x, const std::string& p) const {
    const int64_t c = x.size(1), t = x.size(2), h = x.size(3), w = x.size(4);
    const at::Tensor n = rms(to_frames(x), p + "norm.");
    const at::Tensor qkv = at::conv2d(n, w_.at(p + "to_qkv.weight"), w_.at(p + "to_qkv.bias"))
                               .reshape({n.size(0), 1, 3 * c, h * w})
                               .permute({0, 1, 3, 2});
    const auto parts = qkv.chunk(3, -1);  // [bt, 1, hw, c] each
    const at::Tensor a = at::softmax(at::matmul(parts[0], parts[1].transpose(-1, -2)) / std::sqrt(double(c)), -1);
    const at::Tensor o = at::matmul(a, parts[2]).squeeze(1).permute({0, 2, 1}).reshape({n.size(0), c, h, w});
    return from_frames(at::conv2d(o, w_.at(p + "proj.weight"), w_.at(p + "proj.bias")), t) + x;
  }

  at::Tensor resample(at::Tensor x, const Layer& l, Cache& cache) const {
    const int64_t b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), w = x.size(4);
    if (l.kind == Kind::Up3d) {
      Entry& e = cache.feat.at(cache.idx);
      if (!e.rep && !e.t.defined()) {
        e.rep = true;
        ++cache.idx;
      } else {
        at::Tensor cache_x = x.slice(2, std::max<int64_t>(t - 2, 0)).clone();
        if (cache_x.size(2) < 2 && !e.rep) cache_x = at::cat({e.t.slice(2, e.t.size(2) - 1), cache_x}, 2);
        if (cache_x.size(2) < 2 && e.rep) cache_x = at::cat({at::zeros_like(cache_x), cache_x}, 2);
        x = e.rep ? conv(x, l.prefix + "time_conv.", {1, 0, 0}) : conv(x, l.prefix + "time_conv.", {1, 0, 0}, e.t);
        e.rep = false;
        e.t = cache_x;
        ++cache.idx;
        x = x.reshape({b, 2, c, t, h, w});
        x = at::stack({x.select(1, 0), x.select(1, 1)}, 3).reshape({b, c, 2 * t, h, w});
      }
    }
    const int64_t frames = x.size(2);
    at::Tensor f = to_frames(x);
    if (l.kind == Kind::Up2d || l.kind == Kind::Up3d) {
      f = f.repeat_interleave(2, 2).repeat_interleave(2, 3);  // nearest-exact, scale 2
      f = at::conv2d(f, w_.at(l.prefix + "resample.1.weight"), w_.at(l.prefix + "resample.1.bias"), 1, 1);
    } else {
      f = at::constant_pad_nd(f, {0, 1, 0, 1}, 0);
      f = at::conv2d(f, w_.at(l.prefix + "resample.1.weight"), w_.at(l.prefix + "resample.1.bias"), 2);
    }
    x = from_frames(f, frames);
    if (l.kind == Kind::Down3d) {
      Entry& e = cache.feat.at(cache.idx);
      if (!e.t.defined()) {
        e.t = x.clone();
      } else {
        const at::Tensor cache_x = x.slice(2, x.size(2) - 1).clone();
        x = conv(at::cat({e.t.slice(2, e.t.size(2) - 1), x}, 2), l.prefix + "time_conv.", {0, 0, 0}, {}, 2);
        e.t = cache_x;
      }
      ++cache.idx;
    }
    return x;
  }

  at::Tensor coder(const at::Tensor& input, const std::string& top, const std::vector<Layer>& layers,
                   Cache& cache) const {
    at::Tensor x = cached(input, top + "conv1.", cache);
    const bool encoder = top == "encoder.";
    if (!encoder)
      x = residual(attention(residual(x, top + "middle.0.", cache), top + "middle.1."), top + "middle.2.", cache);
    for (const Layer& l : layers) x = l.kind == Kind::Res ? residual(x, l.prefix, cache) : resample(x, l, cache);
    if (encoder)
      x = residual(attention(residual(x, top + "middle.0.", cache), top + "middle.1."), top + "middle.2.", cache);
    return cached(at::silu(rms(x, top + "head.0.")), top + "head.2.", cache);
  }

  WanVaeConfig c_;
  std::map<std::string, at::Tensor> w_;
  std::vector<Layer> enc_, dec_;
};

}  // namespace vidgraph::test
