// Implements video_frames.h.
#include "nodes/sampling/video_frames.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/round.h>

#include "nodes/value_types.h"

namespace vidgraph::nodes {

Frames video_to_frames(const at::Tensor& video) {
  // [1, 3, F, H, W] -> [F, H, W, 3] uint8
  const at::Tensor pixels = ((video[0].to(c10::Device(c10::kCPU), at::kFloat) + 1.0) * 127.5)
                                .round()
                                .clamp(0, 255)
                                .to(at::kByte)
                                .permute({1, 2, 3, 0})
                                .contiguous();
  Frames frames;
  frames.count = static_cast<int>(pixels.size(0));
  frames.height = static_cast<int>(pixels.size(1));
  frames.width = static_cast<int>(pixels.size(2));
  const auto* data = pixels.data_ptr<std::uint8_t>();
  frames.rgb.assign(data, data + pixels.numel());
  return frames;
}

engine::ValueMap video_output(const at::Tensor& video, double fps) {
  Video out;
  out.frames = video_to_frames(video);
  out.fps = fps;
  const std::size_t bytes = out.frames.rgb.size();
  return engine::ValueMap{{"video", engine::make_value(kVideoType, std::move(out), bytes)}};
}

}  // namespace vidgraph::nodes
