// Internal (LibTorch): a decoded video tensor -> the Frames value the preview and export nodes take.
#pragma once

#include <ATen/core/Tensor.h>

#include "engine/value.h"
#include "nodes/frames.h"

namespace vidgraph::nodes {

// video [1, 3, F, H, W] in [-1, 1] (any device) -> uint8 RGB frames [F, H, W, 3], rounded, clamped.
Frames video_to_frames(const at::Tensor& video);

// The decoders' output: {"video": VIDEO value of video_to_frames(video) at `fps`}.
engine::ValueMap video_output(const at::Tensor& video, double fps);

}  // namespace vidgraph::nodes
