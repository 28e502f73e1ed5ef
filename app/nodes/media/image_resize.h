// Image resampling as PIL's Image.resize(size, Image.LANCZOS) does it, which is what the Wan2.2
// reference uses on the i2v input image (OpenCV's INTER_LANCZOS4 uses a fixed 8-tap kernel and
// so aliases fine detail when shrinking; PIL widens the kernel by the shrink factor).
// Contract: separable, horizontal pass first (rows the vertical pass needs only), then vertical;
// Lanczos a=3 whose support is 3 * max(1, in/out) input pixels; per output pixel the weights are
// normalised to sum 1, then turned into 22-bit fixed point (round half away from zero), and
// sums are rounded half up and clamped to 0..255 after each pass, as in Pillow's Resample.c.
#pragma once

#include "nodes/frames.h"

namespace vidgraph::nodes::media {

// `in` (non-empty, consistent) scaled to width x height (both > 0). Throws std::bad_alloc only.
Image resize_lanczos(const Image& in, int width, int height);

}  // namespace vidgraph::nodes::media
