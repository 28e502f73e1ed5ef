// Implements sampler_preview.h.
#include "nodes/sampling/sampler_preview.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>

#include <ATen/TensorOperators.h>
#include <ATen/ops/avg_pool2d.h>
#include <ATen/ops/upsample_bilinear2d.h>
#include <ATen/ops/zeros.h>

#include "models/vae/latent_rgb.h"
#include "nodes/common/node_util.h"
#include "nodes/input_file.h"
#include "nodes/sampling/video_frames.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {
namespace {

// [1, 3, H, W] in [-1, 1] -> the one-frame clip.
Frames to_frames(const at::Tensor& image) { return video_to_frames(image.unsqueeze(2)); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds one light decode of an [h, w] latent frame is expected to take: a 2x2 crop decoded to the
// host (so GPU work is waited for), scaled by area.
double expected_light_seconds(const vae::TaehvDecoder& decoder, int64_t h, int64_t w) {
  const int64_t ch = std::min<int64_t>(2, h), cw = std::min<int64_t>(2, w);
  const at::Tensor crop = at::zeros({1, decoder.config().latent_channels, 1, ch, cw},
                                    at::TensorOptions().device(decoder.device()).dtype(at::kFloat));
  const auto t0 = std::chrono::steady_clock::now();
  decoder.decode(crop, {}, 1, c10::Device(c10::kCPU));
  return seconds_since(t0) * double(h * w) / double(ch * cw);
}

}  // namespace

Frames preview_frame(const at::Tensor& x0, const vae::TaehvDecoder* light_vae) {
  const int64_t middle = x0.size(1) / 2;
  const int64_t h = x0.size(2) * kPreviewUpscale, w = x0.size(3) * kPreviewUpscale;
  if (light_vae) {
    const at::Tensor latent = x0.narrow(1, middle, 1).unsqueeze(0);  // [1, C, 1, h, w]
    const at::Tensor video = light_vae->decode(latent, {}, 1, x0.device());  // [1, 3, 1, 16h, 16w]
    const int64_t factor = video.size(3) / h;
    const at::Tensor frame = video.select(2, 0);
    return to_frames(factor > 1 ? at::avg_pool2d(frame, {factor, factor}) : frame);
  }
  const at::Tensor rgb = vae::latent_to_rgb(x0.select(1, middle)).unsqueeze(0);  // [1, 3, h0, w0] in [0, 1]
  const at::Tensor up = at::upsample_bilinear2d(rgb, {h, w}, /*align_corners=*/false);
  return to_frames(up * 2.0 - 1.0);
}

engine::Result<std::shared_ptr<SamplerPreview>> SamplerPreview::make(const engine::NodeContext& ctx,
                                                                     const std::vector<int64_t>& latent_shape,
                                                                     c10::Device device) {
  auto preview = std::make_shared<SamplerPreview>();
  preview->method_ = ctx.param_string("preview");
  preview->enabled_ = preview->method_ != "off" && ctx.has_preview_hook();
  preview->start_ = std::chrono::steady_clock::now();
  if (!preview->enabled_ || preview->method_ != "light_vae") return preview;
  const int64_t latent_channels = latent_shape.at(0);
  const std::string path = ctx.param_path("preview_vae");
  const std::string bad = check_input_path("preview_vae", path, InputKind::File,
                                           "the TAEHV weights for Wan2.2 (taew2_2.pth or .safetensors), or set "
                                           "preview to latent");
  if (!bad.empty()) return node_error(ctx, bad);
  try {
    preview->light_vae_ = vae::TaehvDecoder::load(path, device, device.is_cpu() ? at::kFloat : at::kHalf);
  } catch (const std::exception& e) {
    return node_error(ctx, "preview_vae: could not load '" + path + "': " + e.what());
  }
  if (preview->light_vae_->config().latent_channels != latent_channels) {
    return node_error(ctx, "preview_vae '" + path + "' decodes " +
                               std::to_string(preview->light_vae_->config().latent_channels) +
                               "-channel latents but this model samples " + std::to_string(latent_channels) +
                               "; set preview to latent, or use taew2_2 with Wan2.2-TI2V-5B.");
  }
  preview->budget_ = ctx.param_float("preview_budget") / 100.0;
  const auto t0 = std::chrono::steady_clock::now();
  preview->light_expected_ = expected_light_seconds(*preview->light_vae_, latent_shape.at(2), latent_shape.at(3));
  preview->calibration_seconds_ = seconds_since(t0);
  preview->start_ = std::chrono::steady_clock::now();
  return preview;
}

double SamplerPreview::sampled_seconds() const { return seconds_since(start_) - seconds_; }

void SamplerPreview::post(const engine::NodeContext& ctx, int step, int steps, const at::Tensor& x0) {
  if (!enabled_) return;
  const bool light = light_vae_ && (budget_ >= 1.0 || seconds_ + light_expected_ <= budget_ * sampled_seconds());
  const auto t0 = std::chrono::steady_clock::now();
  Video video;
  video.frames = preview_frame(x0, light ? light_vae_.get() : nullptr);
  const std::size_t bytes = video.frames.rgb.size();
  ctx.emit_step_preview(engine::make_value(kVideoType, std::move(video), bytes), step, steps);
  const double took = seconds_since(t0);
  seconds_ += took;
  ++count_;
  if (light) {
    light_seconds_ += took;
    light_expected_ = took;
    ++light_count_;
  }
}

std::string SamplerPreview::summary(int steps) const {
  if (count_ == 0 || steps <= 0) return "";
  const double sampled = sampled_seconds();
  const double step_ms = sampled * 1e3 / steps;
  const double share = sampled > 0 ? 100.0 * seconds_ / sampled : 0.0;
  char text[400];
  if (!light_vae_) {
    std::snprintf(text, sizeof text, "Live previews (%s): %d at %.2f ms each, %.1f%% of a %.0f ms sampling step.",
                  method_.c_str(), count_, seconds_ * 1e3 / count_, share, step_ms);
    return text;
  }
  std::snprintf(text, sizeof text,
                "Live previews (light_vae): %d of %d decoded by the light VAE%s; %.1f%% of "
                "the sampling time, budget %.0f%% (%.0f ms steps, one light decode %.0f ms, estimated at load "
                "in %.0f ms).",
                light_count_, count_, light_count_ < count_ ? ", the others projected" : "", share, 100.0 * budget_,
                step_ms,
                (light_count_ > 0 ? light_seconds_ / light_count_ : light_expected_) * 1e3,
                calibration_seconds_ * 1e3);
  std::string out = text;
  if (light_count_ < count_ && budget_ < 1.0) out += " Raise preview_budget for more light decodes.";
  return out;
}

}  // namespace vidgraph::nodes
