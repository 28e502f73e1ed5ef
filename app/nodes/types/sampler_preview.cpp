// Implements sampler_preview.h.
#include "nodes/types/sampler_preview.h"

#include <chrono>
#include <cstdio>
#include <exception>

#include <ATen/TensorOperators.h>
#include <ATen/ops/avg_pool2d.h>
#include <ATen/ops/upsample_bilinear2d.h>

#include "models/vae/latent_rgb.h"
#include "nodes/input_file.h"
#include "nodes/types/node_util.h"
#include "nodes/types/video_frames.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {
namespace {

// [1, 3, H, W] in [-1, 1] -> the one-frame clip.
Frames to_frames(const at::Tensor& image) { return video_to_frames(image.unsqueeze(2)); }

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
                                                                     int64_t latent_channels, c10::Device device) {
  auto preview = std::make_shared<SamplerPreview>();
  preview->method_ = ctx.param_string("preview");
  preview->enabled_ = preview->method_ != "off" && ctx.has_preview_hook();
  if (!preview->enabled_ || preview->method_ != "light_vae") return preview;
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
  return preview;
}

void SamplerPreview::post(const engine::NodeContext& ctx, int step, int steps, const at::Tensor& x0) {
  if (!enabled_) return;
  const auto t0 = std::chrono::steady_clock::now();
  Video video;
  video.frames = preview_frame(x0, light_vae_.get());
  const std::size_t bytes = video.frames.rgb.size();
  ctx.emit_step_preview(engine::make_value(kVideoType, std::move(video), bytes), step, steps);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++count_;
}

std::string SamplerPreview::summary(double sampling_seconds, int steps) const {
  if (count_ == 0 || steps <= 0) return "";
  const double each_ms = seconds_ * 1e3 / count_;
  const double step_ms = (sampling_seconds - seconds_) * 1e3 / steps;
  char text[200];
  std::snprintf(text, sizeof text, "Live previews (%s): %d at %.2f ms each, %.1f%% of a %.0f ms sampling step.",
                method_.c_str(), count_, each_ms, step_ms > 0 ? 100.0 * each_ms / step_ms : 0.0, step_ms);
  return text;
}

}  // namespace vidgraph::nodes
