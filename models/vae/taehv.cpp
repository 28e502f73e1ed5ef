// Implements taehv.h.
#include "models/vae/taehv.h"

#include <cmath>
#include <stdexcept>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/pixel_shuffle.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/upsample_nearest2d.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include "models/io/state_dict_file.h"

namespace vidgraph::vae {
namespace {

// Sequential indices of the reference's decoder.
constexpr int kPre = 1;
constexpr int kStageFirstBlock[3] = {3, 9, 15};
constexpr int kStageTGrow[3] = {7, 13, 19};
constexpr int kStageProj[3] = {8, 14, 20};
constexpr int kPost = 22;

std::string key(int index, const std::string& rest) {
  return "decoder." + std::to_string(index) + "." + rest;
}

class StateDict {
 public:
  StateDict(std::string path, model_io::NamedTensors tensors) : path_(std::move(path)), tensors_(std::move(tensors)) {}

  const at::Tensor* find(const std::string& name) const { return model_io::find_tensor(tensors_, name); }

  at::Tensor get(const std::string& name, const std::vector<int64_t>& shape) const {
    const at::Tensor* t = find(name);
    if (!t) {
      throw std::runtime_error(path_ + " has no tensor '" + name + "'; is it a TAEHV checkpoint such as taew2_2.pth?");
    }
    if (t->sizes().vec() != shape) {
      std::string want = "[";
      for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
      throw std::runtime_error(path_ + ": tensor '" + name + "' is " + model_io::shape_string(*t) + ", expected " +
                               want + "] (a TAEHV decoder of another layout?).");
    }
    return *t;
  }

  // Dim `dim` of a tensor that must exist and have `rank` dims.
  int64_t dim_of(const std::string& name, size_t rank, size_t dim) const {
    const at::Tensor* t = find(name);
    if (!t || size_t(t->dim()) != rank) {
      throw std::runtime_error(path_ + " has no " + std::to_string(rank) + "-d tensor '" + name +
                               "'; is it a TAEHV checkpoint such as taew2_2.pth?");
    }
    return t->size(dim);
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  model_io::NamedTensors tensors_;
};

TaehvDecoder::Conv conv3(const StateDict& sd, int index, const std::string& name, int64_t out, int64_t in, bool bias) {
  TaehvDecoder::Conv c;
  c.weight = sd.get(key(index, name + "weight"), {out, in, 3, 3});
  if (bias) c.bias = sd.get(key(index, name + "bias"), {out});
  return c;
}

at::Tensor conv(const at::Tensor& x, const TaehvDecoder::Conv& c) {
  const int64_t pad = c.weight.size(2) / 2;
  return at::conv2d(x, c.weight, c.bias, {1, 1}, {pad, pad});
}

// relu(conv(cat[x, past]) + skip(x)); `memory` holds the last frame of the previous chunk's input.
at::Tensor mem_block(const TaehvDecoder::MemBlock& b, const at::Tensor& x, at::Tensor& memory) {
  const int64_t frames = x.size(0);
  const at::Tensor first = memory.defined() ? memory : at::zeros_like(x.narrow(0, 0, 1));
  const at::Tensor past = frames > 1 ? at::cat({first, x.narrow(0, 0, frames - 1)}, 0) : first;
  memory = x.narrow(0, frames - 1, 1).clone();
  at::Tensor h = at::relu(conv(at::cat({x, past}, 1), b.conv0));
  h = at::relu(conv(h, b.conv2));
  h = conv(h, b.conv4);
  const at::Tensor skip = b.skip.defined() ? at::conv2d(x, b.skip) : x;
  return at::relu(h + skip);
}

void move(TaehvDecoder::Conv& c, c10::Device device, at::ScalarType dtype) {
  c.weight = c.weight.to(device, dtype);
  if (c.bias.defined()) c.bias = c.bias.to(device, dtype);
}

}  // namespace

int64_t TaehvConfig::temporal_upscale() const {
  int64_t t = 1;
  for (int64_t s : time_strides) t *= s;
  return t;
}

int64_t TaehvConfig::spatial_upscale() const {
  return 8 * patch_size;
}

std::shared_ptr<TaehvDecoder> TaehvDecoder::load(const std::string& path, c10::Device device, at::ScalarType dtype) {
  const StateDict sd(path, model_io::load_state_dict_file(path, c10::Device(c10::kCPU), at::kFloat));
  auto d = std::make_shared<TaehvDecoder>();
  TaehvConfig& c = d->config_;
  c.latent_channels = sd.dim_of(key(kPre, "weight"), 4, 1);
  c.widths = {sd.dim_of(key(kPre, "weight"), 4, 0), sd.dim_of(key(kStageProj[0], "weight"), 4, 0),
              sd.dim_of(key(kStageProj[1], "weight"), 4, 0), sd.dim_of(key(kStageProj[2], "weight"), 4, 0)};
  const int64_t out = sd.dim_of(key(kPost, "weight"), 4, 0);
  c.patch_size = static_cast<int64_t>(std::lround(std::sqrt(double(out) / 3.0)));
  if (out != 3 * c.patch_size * c.patch_size) {
    throw std::runtime_error(path + ": the last conv has " + std::to_string(out) +
                             " output channels, not 3 x patch^2; not a TAEHV decoder.");
  }
  d->pre_ = conv3(sd, kPre, "", c.widths[0], c.latent_channels, true);
  for (int s = 0; s < 3; ++s) {
    const int64_t n = c.widths[s];
    for (int b = 0; b < 3; ++b) {
      const int index = kStageFirstBlock[s] + b;
      MemBlock m;
      m.conv0 = conv3(sd, index, "conv.0.", n, 2 * n, true);
      m.conv2 = conv3(sd, index, "conv.2.", n, n, true);
      m.conv4 = conv3(sd, index, "conv.4.", n, n, true);
      if (sd.find(key(index, "skip.weight"))) m.skip = sd.get(key(index, "skip.weight"), {n, n, 1, 1});
      d->blocks_.push_back(m);
    }
    const std::string grow = key(kStageTGrow[s], "conv.weight");
    const int64_t rows = sd.dim_of(grow, 4, 0), want = n * c.time_strides[s];
    if (rows < want || rows % n != 0) {
      throw std::runtime_error(path + ": tensor '" + grow + "' has " + std::to_string(rows) + " output channels, "
                               "expected " + std::to_string(want) + ".");
    }
    d->tgrow_.push_back(sd.get(grow, {rows, n, 1, 1}).narrow(0, rows - want, want));  // the last frames' channels
    d->proj_.push_back(conv3(sd, kStageProj[s], "", c.widths[s + 1], n, false));
  }
  d->post_ = conv3(sd, kPost, "", out, c.widths[3], true);
  d->device_ = device;
  d->dtype_ = dtype;
  move(d->pre_, device, dtype);
  move(d->post_, device, dtype);
  for (MemBlock& m : d->blocks_) {
    move(m.conv0, device, dtype);
    move(m.conv2, device, dtype);
    move(m.conv4, device, dtype);
    if (m.skip.defined()) m.skip = m.skip.to(device, dtype);
  }
  for (at::Tensor& t : d->tgrow_) t = t.to(device, dtype).contiguous();
  for (Conv& p : d->proj_) move(p, device, dtype);
  return d;
}

// x [Tc, C, h, w] (consecutive latent frames) -> [Tc * 4, 3, 16h, 16w] in [0, 1].
at::Tensor TaehvDecoder::run_chunk(at::Tensor x, std::vector<at::Tensor>& memory) const {
  x = at::tanh(x / 3.0) * 3.0;
  x = at::relu(conv(x, pre_));
  for (int s = 0; s < 3; ++s) {
    for (int b = 0; b < 3; ++b) x = mem_block(blocks_[3 * s + b], x, memory[3 * s + b]);
    x = at::upsample_nearest2d(x, {x.size(2) * 2, x.size(3) * 2});
    const int64_t frames = x.size(0), channels = x.size(1);
    x = at::conv2d(x, tgrow_[s]).reshape({frames * config_.time_strides[s], channels, x.size(2), x.size(3)});
    x = conv(x, proj_[s]);
  }
  x = conv(at::relu(x), post_);
  return at::pixel_shuffle(x, config_.patch_size).clamp(0.0, 1.0);
}

at::Tensor TaehvDecoder::decode_one(const at::Tensor& latent, const VaeCallbacks& callbacks, int64_t chunk_frames,
                                    c10::Device output_device) const {
  const at::Tensor z = latent.to(device_, dtype_).permute({1, 0, 2, 3});  // [T, C, h, w]
  const int64_t frames = z.size(0);
  std::vector<at::Tensor> memory(blocks_.size());
  std::vector<at::Tensor> out;
  for (int64_t start = 0; start < frames; start += chunk_frames) {
    if (callbacks.cancelled && callbacks.cancelled()) throw VaeCancelled();
    const int64_t n = std::min(chunk_frames, frames - start);
    out.push_back(run_chunk(z.narrow(0, start, n).contiguous(), memory).to(output_device, at::kFloat));
    if (callbacks.progress) callbacks.progress(std::min(start + n, frames), frames);
  }
  const int64_t trim = config_.temporal_upscale() - 1;
  const at::Tensor video = at::cat(out, 0);  // [4T, 3, H, W]
  return video.narrow(0, trim, video.size(0) - trim).permute({1, 0, 2, 3}) * 2.0 - 1.0;
}

at::Tensor TaehvDecoder::decode(const at::Tensor& latent, const VaeCallbacks& callbacks, int64_t chunk_frames,
                                c10::Device output_device) const {
  if (latent.dim() != 5 || latent.size(1) != config_.latent_channels || latent.size(2) < 1) {
    throw std::invalid_argument("The light VAE decodes latents [B, " + std::to_string(config_.latent_channels) +
                                ", T, h, w]; got " + model_io::shape_string(latent) + ".");
  }
  if (chunk_frames < 1) throw std::invalid_argument("chunk_frames must be at least 1.");
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> videos;
  for (int64_t b = 0; b < latent.size(0); ++b) {
    videos.push_back(decode_one(latent[b], callbacks, chunk_frames, output_device));
  }
  return at::stack(videos, 0).contiguous();
}

}  // namespace vidgraph::vae
