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

}  // namespace

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
                        const VaeTiling& tiling, c10::Device output_device) {
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
  const int64_t frames = latent.size(2);
  const int64_t total = int64_t(ys.size() * xs.size()) * frames;
  const int64_t out_t = 1 + (frames - 1) * vae.config().temporal_factor();
  const auto opts = at::TensorOptions().dtype(at::kFloat).device(output_device);
  at::Tensor out = at::zeros({latent.size(0), 3, out_t, latent.size(3) * s, latent.size(4) * s}, opts);
  at::Tensor weight = at::zeros({latent.size(3) * s, latent.size(4) * s}, opts);
  const int64_t ramp = tiling.overlap * s;
  int64_t done = 0;
  for (size_t iy = 0; iy < ys.size(); ++iy) {
    for (size_t ix = 0; ix < xs.size(); ++ix) {
      const at::Tensor region = latent.slice(3, ys[iy], ys[iy] + th).slice(4, xs[ix], xs[ix] + tw);
      const at::Tensor video = vae.decode_chunks(region, callbacks, done, total, output_device);
      done += frames;
      const at::Tensor wy = ramp_weights(th * s, ramp, iy > 0, iy + 1 < ys.size()).to(output_device);
      const at::Tensor wx = ramp_weights(tw * s, ramp, ix > 0, ix + 1 < xs.size()).to(output_device);
      const at::Tensor w2 = wy.unsqueeze(1) * wx.unsqueeze(0);  // [th*s, tw*s]
      const int64_t py = ys[iy] * s, px = xs[ix] * s;
      out.slice(3, py, py + th * s).slice(4, px, px + tw * s).add_(video * w2);
      weight.slice(0, py, py + th * s).slice(1, px, px + tw * s).add_(w2);
    }
  }
  return out.div_(weight);
}

}  // namespace vidgraph::vae
