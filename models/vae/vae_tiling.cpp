#include "vae_tiling.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <ATen/ops/arange.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

namespace vidgraph::vae {

namespace {

// 1-D blend weights [n] for a tile: ramps of `ramp` cells at each side that has a neighbour.
at::Tensor ramp_weights(int64_t n, int64_t ramp, bool has_before, bool has_after) {
  at::Tensor w = at::ones({n}, at::kFloat);
  if (ramp <= 0) {
    return w;
  }
  const at::Tensor up = (at::arange(1, ramp + 1, at::kFloat) / double(ramp + 1));  // (0,1)
  if (has_before) {
    w.slice(0, 0, ramp).mul_(up);
  }
  if (has_after) {
    w.slice(0, n - ramp, n).mul_(up.flip({0}));
  }
  return w;
}

// Working bytes of decoding one h x w latent region chunk by chunk (decode_chunks), from the
// decoder's largest tensors. Per chunk the decoder sees one latent frame; stage i of n runs at
// 2^i times the latent size with widths dims[i] -> dims[i+1] (dims = decoder_dim x dim_mult,
// reversed) on t_i frames (1, doubled by each temporal upsample before it: up to temporal_factor).
//  - conv: the largest activation A = max over stages of width x (t + 2) x H x W (the causal conv
//    prepends 2 cached frames), including each resample's upsampled output. A residual block keeps
//    about 4 tensors of that size alive at once (input, shortcut, norm/SiLU output, conv output).
//  - attention (middle block, one frame, single head over h*w positions): the [hw, hw] logits in
//    the compute dtype, their fp32 softmax and its cast back (none in fp32), plus q, k, v.
//  - cache: 2 frames per cached conv (2 per residual block, one per temporal resample).
//  - the region's decoded video (fp32, 1 + 4(T-1) frames), its chunks and their concatenation.
// working = B x (max(4 A, attention) + cache) + 2 x video: an upper-side estimate, not a bound
// (the convolution backend's workspace is not modelled).
// Computed in double: a 65536 x 65536 latent's [hw, hw] logits overflow int64.
double region_working_bytes(const WanVaeConfig& c, double batch, int64_t frames, double h, double w, double elt) {
  std::vector<double> dims = {double(c.decoder_dim * c.dim_mult.back())};
  for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(double(c.decoder_dim * *it));
  const std::vector<bool> temporal_up(c.temporal_downsample.rbegin(), c.temporal_downsample.rend());
  const size_t n = c.dim_mult.size();
  const double hw = h * w;
  double largest = dims[0] * 3 * hw;              // conv1 and the middle blocks
  double cache = (2 * 2 + 1) * 2 * dims[0] * hw;  // conv1 + two middle residual blocks
  double t = 1, area = hw;
  for (size_t i = 0; i < n; ++i) {
    const double width = std::max(dims[i], dims[i + 1]);
    largest = std::max(largest, width * (t + 2) * area);
    cache += double(c.num_res_blocks + 1) * 2 * 2 * width * area;
    if (i + 1 == n) break;  // the last stage does not upsample
    const bool temporal = i < temporal_up.size() && temporal_up[i];
    if (temporal && frames > 1) t *= 2;
    area *= 4;
    largest = std::max(largest, dims[i + 1] * (t + 2) * area);
    cache += (temporal ? 2 : 0) * dims[i + 1] * area;
  }
  const double attention = hw * hw * (elt + 4 + (elt == 4 ? 0 : elt)) + 4 * dims[0] * hw * elt;
  const double s = double(c.spatial_factor());
  const double video = batch * 3 * double(1 + (frames - 1) * c.temporal_factor()) * hw * s * s * 4;
  return batch * (std::max(4 * largest * elt, attention) + cache * elt) + 2 * video;
}

int64_t saturate(double bytes) {
  return bytes >= 9.0e18 ? int64_t(9'000'000'000'000'000'000) : int64_t(bytes);
}

}  // namespace

VaeDecodeMemory estimate_decode_memory(const WanVaeConfig& config, const std::vector<int64_t>& latent_sizes,
                                       int64_t element_bytes, const std::optional<VaeTiling>& tiling) {
  if (latent_sizes.size() != 5) throw std::invalid_argument("estimate_decode_memory needs [B, z, T, h, w]");
  const double b = double(latent_sizes[0]), h = double(latent_sizes[3]), w = double(latent_sizes[4]);
  const int64_t frames = latent_sizes[2];
  const double s = double(config.spatial_factor()), elt = double(element_bytes);
  const double video = b * 3 * double(1 + (frames - 1) * config.temporal_factor()) * h * s * w * s * 4;
  VaeDecodeMemory m;
  if (tiling && (latent_sizes[3] > tiling->tile_h || latent_sizes[4] > tiling->tile_w)) {
    const double th = double(std::min(latent_sizes[3], tiling->tile_h));
    const double tw = double(std::min(latent_sizes[4], tiling->tile_w));
    m.working = saturate(region_working_bytes(config, b, frames, th, tw, elt));
    m.output = saturate(video + h * s * w * s * 4 + 2 * video);  // sum, weights; uint8 conversion
  } else {
    // decode_chunks' concatenated video is counted once in working; the conversion copies follow.
    m.working = saturate(region_working_bytes(config, b, frames, h, w, elt) - video);
    m.output = saturate(3 * video);
  }
  return m;
}

std::vector<int64_t> tile_starts(int64_t size, int64_t tile, int64_t overlap) {
  if (tile >= size) {
    return {0};
  }
  const int64_t stride = tile - overlap;
  std::vector<int64_t> starts;
  for (int64_t s = 0; s + tile < size; s += stride) {
    starts.push_back(s);
  }
  starts.push_back(size - tile);
  return starts;
}

at::Tensor decode_tiled(const WanVae& vae, const at::Tensor& latent, const VaeCallbacks& callbacks,
                        const VaeTiling& tiling, c10::Device output_device, const TileShare* share,
                        plugin::VaeKernels* fused) {
  if (tiling.tile_h < 1 || tiling.tile_w < 1 || tiling.overlap < 0 || tiling.overlap >= tiling.tile_h ||
      tiling.overlap >= tiling.tile_w) {
    throw std::invalid_argument(
        "VAE tiling needs tiles of at least 1 latent cell and an overlap smaller than "
        "the tile; got tile " +
        std::to_string(tiling.tile_h) + "x" + std::to_string(tiling.tile_w) + ", overlap " +
        std::to_string(tiling.overlap));
  }
  c10::NoGradGuard no_grad;  // results stay ordinary tensors (in-place use allowed)
  const int64_t s = vae.config().spatial_factor();
  const int64_t th = std::min(tiling.tile_h, latent.size(3)), tw = std::min(tiling.tile_w, latent.size(4));
  const std::vector<int64_t> ys = tile_starts(latent.size(3), th, tiling.overlap);
  const std::vector<int64_t> xs = tile_starts(latent.size(4), tw, tiling.overlap);
  const int64_t tiles = int64_t(ys.size() * xs.size());
  const int64_t parts = share != nullptr ? share->parts : 1, part = share != nullptr ? share->part : 0;
  const int64_t rounds = (tiles + parts - 1) / parts;
  const int64_t frames = latent.size(2);
  const int64_t total = rounds * frames;
  const int64_t out_t = 1 + (frames - 1) * vae.config().temporal_factor();
  const auto opts = at::TensorOptions().dtype(at::kFloat).device(output_device);
  at::Tensor out, weight;
  const int64_t ramp = tiling.overlap * s;
  // Adds tile `index`'s decoded video into out and weight, with ramps where it has neighbours.
  auto blend = [&](int64_t index, const at::Tensor& video) {
    if (!out.defined()) {
      out = at::zeros({latent.size(0), 3, out_t, latent.size(3) * s, latent.size(4) * s}, opts);
      weight = at::zeros({latent.size(3) * s, latent.size(4) * s}, opts);
    }
    const size_t iy = size_t(index) / xs.size(), ix = size_t(index) % xs.size();
    const at::Tensor wy = ramp_weights(th * s, ramp, iy > 0, iy + 1 < ys.size()).to(output_device);
    const at::Tensor wx = ramp_weights(tw * s, ramp, ix > 0, ix + 1 < xs.size()).to(output_device);
    const at::Tensor w2 = wy.unsqueeze(1) * wx.unsqueeze(0);  // [th*s, tw*s]
    const int64_t py = ys[iy] * s, px = xs[ix] * s;
    out.slice(3, py, py + th * s).slice(4, px, px + tw * s).add_(video.to(output_device) * w2);
    weight.slice(0, py, py + th * s).slice(1, px, px + tw * s).add_(w2);
  };
  int64_t done = 0;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t mine = round * parts + part;
    at::Tensor video;
    if (mine < tiles) {
      const int64_t y = ys[size_t(mine) / xs.size()], x = xs[size_t(mine) % xs.size()];
      const at::Tensor region = latent.slice(3, y, y + th).slice(4, x, x + tw);
      video = vae.decode_chunks(region, callbacks, done, total, output_device, fused);
      done += frames;
    } else {
      video = at::zeros({latent.size(0), 3, out_t, th * s, tw * s}, opts);
    }
    if (share == nullptr) {
      blend(mine, video);
      continue;
    }
    const std::vector<at::Tensor> round_tiles = share->exchange(video);
    for (int64_t p = 0; p < int64_t(round_tiles.size()) && round * parts + p < tiles; ++p) {
      blend(round * parts + p, round_tiles[size_t(p)]);
    }
  }
  return out.defined() ? out.div_(weight) : out;
}

}  // namespace vidgraph::vae
