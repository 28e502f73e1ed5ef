// Video comparison metrics over uint8 RGB frames (vidgraph-run compare):
// - PSNR per frame over all RGB samples, 10 log10(255^2 / MSE); +inf when the frames are identical.
//   The overall PSNR comes from the mean MSE of all compared frames (not the mean of the dBs).
// - SSIM per frame on luma (Y = 0.299 R + 0.587 G + 0.114 B, BT.601), the standard definition of
//   Wang et al. 2004: an 11x11 Gaussian window (sigma 1.5), K1 0.01, K2 0.03, L 255, averaged over
//   the window positions inside the frame ("valid"); frames smaller than 11 px use the largest odd
//   window that fits. The overall SSIM is the mean of the frames'.
// - side_by_side / difference build the frames of the two comparison videos.
// Frames of different sizes throw std::invalid_argument; different counts compare the first
// min(count) frames (the caller warns).
#pragma once

#include <cstdint>
#include <vector>

#include "nodes/frames.h"

namespace vidgraph::nodes::media {

struct FrameScore {
  double mse = 0.0;
  double psnr = 0.0;  // dB, +inf when identical
  double ssim = 1.0;
};

struct CompareResult {
  std::vector<FrameScore> frames;  // one per compared frame
  double mse = 0.0;                // mean over the compared frames
  double psnr = 0.0;               // from mse
  double ssim = 1.0;               // mean over the compared frames
  bool identical() const { return mse == 0.0; }
};

double psnr_from_mse(double mse);
double frame_mse(const std::uint8_t* a, const std::uint8_t* b, int width, int height);
double frame_ssim_luma(const std::uint8_t* a, const std::uint8_t* b, int width, int height);

CompareResult compare_frames(const Frames& a, const Frames& b);
// The same one frame pair at a time, for callers that stream the videos: add each pair (same size),
// then finish_compare for the overall numbers.
void add_frame_pair(CompareResult& r, const std::uint8_t* a, const std::uint8_t* b, int width, int height);
void finish_compare(CompareResult& r);

// Frame i = a's frame i | b's frame i (width 2W), for the first min(count) frames.
Frames side_by_side(const Frames& a, const Frames& b);
// Frame i = min(255, gain * |a - b|) per sample, for the first min(count) frames.
Frames difference(const Frames& a, const Frames& b, double gain);

}  // namespace vidgraph::nodes::media
