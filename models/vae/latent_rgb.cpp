// Implements latent_rgb.h.
#include "models/vae/latent_rgb.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/TensorOperators.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/einsum.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>

namespace vidgraph::vae {
namespace {

// ComfyUI's Wan22 latent format (comfy/latent_formats.py), R, G, B per latent channel.
constexpr float kFactors[kWan22LatentChannels][3] = {
    {0.0119f, 0.0103f, 0.0046f},    {-0.1062f, -0.0504f, 0.0165f},  {0.0140f, 0.0409f, 0.0491f},
    {-0.0813f, -0.0677f, 0.0607f},  {0.0656f, 0.0851f, 0.0808f},    {0.0264f, 0.0463f, 0.0912f},
    {0.0295f, 0.0326f, 0.0590f},    {-0.0244f, -0.0270f, 0.0025f},  {0.0443f, -0.0102f, 0.0288f},
    {-0.0465f, -0.0090f, -0.0205f}, {0.0359f, 0.0236f, 0.0082f},    {-0.0776f, 0.0854f, 0.1048f},
    {0.0564f, 0.0264f, 0.0561f},    {0.0006f, 0.0594f, 0.0418f},    {-0.0319f, -0.0542f, -0.0637f},
    {-0.0268f, 0.0024f, 0.0260f},   {0.0539f, 0.0265f, 0.0358f},    {-0.0359f, -0.0312f, -0.0287f},
    {-0.0285f, -0.1032f, -0.1237f}, {0.1041f, 0.0537f, 0.0622f},    {-0.0086f, -0.0374f, -0.0051f},
    {0.0390f, 0.0670f, 0.2863f},    {0.0069f, 0.0144f, 0.0082f},    {0.0006f, -0.0167f, 0.0079f},
    {0.0313f, -0.0574f, -0.0232f},  {-0.1454f, -0.0902f, -0.0481f}, {0.0714f, 0.0827f, 0.0447f},
    {-0.0304f, -0.0574f, -0.0196f}, {0.0401f, 0.0384f, 0.0204f},    {-0.0758f, -0.0297f, -0.0014f},
    {0.0568f, 0.1307f, 0.1372f},    {-0.0055f, -0.0310f, -0.0380f}, {0.0239f, -0.0305f, 0.0325f},
    {-0.0663f, -0.0673f, -0.0140f}, {-0.0416f, -0.0047f, -0.0023f}, {0.0166f, 0.0112f, -0.0093f},
    {-0.0211f, 0.0011f, 0.0331f},   {0.1833f, 0.1466f, 0.2250f},    {-0.0368f, 0.0370f, 0.0295f},
    {-0.3441f, -0.3543f, -0.2008f}, {-0.0479f, -0.0489f, -0.0420f}, {-0.0660f, -0.0153f, 0.0800f},
    {-0.0101f, 0.0068f, 0.0156f},   {-0.0690f, -0.0452f, -0.0927f}, {-0.0145f, 0.0041f, 0.0015f},
    {0.0421f, 0.0451f, 0.0373f},    {0.0504f, -0.0483f, -0.0356f},  {-0.0837f, 0.0168f, 0.0055f},
};
constexpr float kBias[3] = {0.0317f, -0.0878f, -0.1388f};

// ComfyUI's Wan21 latent format, R, G, B per latent channel.
constexpr float kFactors21[kWan21LatentChannels][3] = {
    {-0.1299f, -0.1692f, 0.2932f},  {0.0671f, 0.0406f, 0.0442f},  {0.3568f, 0.2548f, 0.1747f},
    {0.0372f, 0.2344f, 0.1420f},    {0.0313f, 0.0189f, -0.0328f}, {0.0296f, -0.0956f, -0.0665f},
    {-0.3477f, -0.4059f, -0.2925f}, {0.0166f, 0.1902f, 0.1975f},  {-0.0412f, 0.0267f, -0.1364f},
    {-0.1293f, 0.0740f, 0.1636f},   {0.0680f, 0.3019f, 0.1128f},  {0.0032f, 0.0581f, 0.0639f},
    {-0.1251f, 0.0927f, 0.1699f},   {0.0060f, -0.0633f, 0.0005f}, {0.3477f, 0.2275f, 0.2950f},
    {0.1984f, 0.0913f, 0.1861f},
};
constexpr float kBias21[3] = {-0.1835f, -0.0868f, -0.3360f};

// factors^T x + bias per pixel, mapped from [-1, 1] to [0, 1].
at::Tensor project(const at::Tensor& x, const at::Tensor& factors, const at::Tensor& bias) {
  const at::Tensor rgb = at::einsum("chw,ck->khw", {x, factors.to(x.device())}) + bias.to(x.device()).view({3, 1, 1});
  return ((rgb + 1.0) * 0.5).clamp(0.0, 1.0);
}

// Each channel of [3, h, w] stretched from its own min..max to 0..1; 0.5 where it is flat.
at::Tensor stretch_channels(const at::Tensor& x) {
  const at::Tensor lo = at::amin(x, {1, 2}, /*keepdim=*/true);
  const at::Tensor range = at::amax(x, {1, 2}, true) - lo;
  const at::Tensor flat = range <= 0;
  return at::where(flat, at::ones_like(x) * 0.5, (x - lo) / at::where(flat, at::ones_like(range), range));
}

}  // namespace

at::Tensor wan22_latent_rgb_factors() {
  return at::tensor(at::ArrayRef<float>(&kFactors[0][0], kWan22LatentChannels * 3)).view({kWan22LatentChannels, 3});
}

at::Tensor wan22_latent_rgb_bias() { return at::tensor(at::ArrayRef<float>(kBias, 3)); }

at::Tensor wan21_latent_rgb_factors() {
  return at::tensor(at::ArrayRef<float>(&kFactors21[0][0], kWan21LatentChannels * 3)).view({kWan21LatentChannels, 3});
}

at::Tensor wan21_latent_rgb_bias() { return at::tensor(at::ArrayRef<float>(kBias21, 3)); }

at::Tensor latent_to_rgb(const at::Tensor& frame) {
  if (!frame.defined() || frame.dim() != 3 || frame.size(0) < 1) {
    throw std::invalid_argument("A latent preview needs one latent frame [C, h, w].");
  }
  const at::Tensor x = frame.to(at::kFloat);
  if (x.size(0) == kWan22LatentChannels) {
    return project(x, wan22_latent_rgb_factors(), wan22_latent_rgb_bias());
  }
  if (x.size(0) == kWan21LatentChannels) {
    return project(x, wan21_latent_rgb_factors(), wan21_latent_rgb_bias());
  }
  std::vector<at::Tensor> channels;
  for (int64_t c = 0; c < 3; ++c) channels.push_back(x.narrow(0, c < x.size(0) ? c : 0, 1));
  return stretch_channels(at::cat(channels, 0));
}

}  // namespace vidgraph::vae
