// Internal: the Wan Sampler's live previews. After every step the sampler's clean-latent estimate
// x0 [C, F, h, w] becomes one RGB frame, posted as a step preview (a VIDEO value of one frame; the
// GUI shows it on the node and in the preview panel, vidgraph-run --previews saves it as a PNG).
//
// Which frame: the middle latent frame (F / 2), which changes in image-to-video too (frame 0 there is
// the input image). How: param `preview` = `latent` (default) projects it with vae::latent_to_rgb
// (no decoder: Wan2.2's linear RGB factors, or the first channels stretched for other models);
// `light_vae` decodes it with the TAEHV decoder in `preview_vae` (taew2_2, loaded once per run on the
// sampler's device); `off` posts nothing. Size: 8x the latent, half the video's width and height,
// both ways (the light VAE's full-size frame is averaged 2x2).
// Budget: light decodes may take `preview_budget` percent of the sampling time. A step gets one
// when the light decodes so far plus the expected cost of one more fit in that share of the time
// sampled so far, and the latent projection otherwise. The first expectation comes from timing a
// decode of a 2x2 latent crop at load, scaled by area (an over-estimate: fixed costs scale too).
// Nothing is computed when no one listens (NodeContext::has_preview_hook).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "engine/node_context.h"
#include "engine/result.h"
#include "models/vae/taehv.h"
#include "nodes/frames.h"

namespace vidgraph::nodes {

// Preview frames are this many times the latent's height and width.
inline constexpr int kPreviewUpscale = 8;

// x0 [C, F, h, w] -> one frame of [kPreviewUpscale * h, kPreviewUpscale * w] (see above).
Frames preview_frame(const at::Tensor& x0, const vae::TaehvDecoder* light_vae = nullptr);

class SamplerPreview {
 public:
  // From the params, for latents [C, F, h, w] of `latent_shape`; an error names the param to fix (a
  // missing or unusable preview_vae, or a latent the light VAE cannot decode). Sampling time is
  // counted from here.
  static engine::Result<std::shared_ptr<SamplerPreview>> make(const engine::NodeContext& ctx,
                                                              const std::vector<int64_t>& latent_shape,
                                                              c10::Device device);

  bool enabled() const { return enabled_; }
  // Builds and posts the preview of step `step` of `steps` (a light decode when the budget allows),
  // timing it.
  void post(const engine::NodeContext& ctx, int step, int steps, const at::Tensor& x0);
  // What the previews cost, a sentence ("" when none were posted), e.g. "Live previews (latent): 3 at
  // 1.20 ms each, 0.4% of a 290 ms sampling step." or, for light_vae, how many steps got a light
  // decode within the budget.
  std::string summary(int steps) const;

 private:
  double sampled_seconds() const;  // since make(), less the previews' own time

  bool enabled_ = false;
  std::string method_;
  std::shared_ptr<vae::TaehvDecoder> light_vae_;
  double budget_ = 1.0;           // share of the sampling time light decodes may take
  double light_expected_ = 0.0;   // seconds one light decode is expected to take
  double calibration_seconds_ = 0.0;
  std::chrono::steady_clock::time_point start_;
  int count_ = 0, light_count_ = 0;
  double seconds_ = 0.0, light_seconds_ = 0.0;
};

}  // namespace vidgraph::nodes
