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
// Nothing is computed when no one listens (NodeContext::has_preview_hook).
#pragma once

#include <memory>
#include <string>

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
  // From the params; an error names the param to fix (a missing or unusable preview_vae, or a
  // latent the light VAE cannot decode).
  static engine::Result<std::shared_ptr<SamplerPreview>> make(const engine::NodeContext& ctx,
                                                              int64_t latent_channels, c10::Device device);

  bool enabled() const { return enabled_; }
  // Builds and posts the preview of step `step` of `steps`, timing it.
  void post(const engine::NodeContext& ctx, int step, int steps, const at::Tensor& x0);
  // "Live previews (latent): 3 at 1.2 ms each, 0.4% of a 290 ms sampling step." ("" when none).
  std::string summary(double sampling_seconds, int steps) const;

 private:
  bool enabled_ = false;
  std::string method_;
  std::shared_ptr<vae::TaehvDecoder> light_vae_;
  int count_ = 0;
  double seconds_ = 0.0;
};

}  // namespace vidgraph::nodes
