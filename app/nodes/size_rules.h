// The Wan2.2 output-size rules (reference: wan/utils/utils.py best_output_size, see
// shared/reference/wan22.md section 2.5). Pure arithmetic, no media libraries.
// Contract: both returned sides are positive multiples of `multiple`, their product is at most
// `max_area` (unless the area is smaller than one multiple squared), and the aspect is the
// closest the two candidate roundings (width first, height first) can get to the input's.
#pragma once

namespace vidgraph::nodes {

struct OutputSize {
  int width = 0;
  int height = 0;
};

// Wan2.2-TI2V-5B default pixel budget: 704 x 1280.
inline constexpr int kWanMaxArea = 704 * 1280;
// Both sides of a Wan2.2 TI2V frame are multiples of 32 (VAE stride 16 x patch 2).
inline constexpr int kWanSizeMultiple = 32;

// The output size for an input of `width` x `height` within `max_area` pixels.
// Returns {0, 0} when an input side or `max_area` is not positive.
OutputSize best_output_size(int width, int height, int max_area = kWanMaxArea,
                            int multiple = kWanSizeMultiple);

// True when both sides are positive multiples of `multiple`.
bool is_valid_output_size(int width, int height, int multiple = kWanSizeMultiple);

}  // namespace vidgraph::nodes
