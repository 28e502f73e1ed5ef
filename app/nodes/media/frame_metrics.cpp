// Implements frame_metrics.h (SSIM's Gaussian filtering through OpenCV).
#include "frame_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace vidgraph::nodes::media {
namespace {

void check_sizes(const Frames& a, const Frames& b) {
  if (!a.consistent() || !b.consistent()) {
    throw std::invalid_argument("A video to compare has no frames or an inconsistent frame buffer.");
  }
  if (a.width != b.width || a.height != b.height) {
    throw std::invalid_argument("The videos have different frame sizes (" + std::to_string(a.width) + "x" +
                                std::to_string(a.height) + " and " + std::to_string(b.width) + "x" +
                                std::to_string(b.height) + "); compare videos of the same size.");
  }
}

cv::Mat luma(const std::uint8_t* rgb, int width, int height) {
  cv::Mat y(height, width, CV_64F);
  for (int r = 0; r < height; ++r) {
    const std::uint8_t* p = rgb + std::size_t(r) * width * 3;
    double* out = y.ptr<double>(r);
    for (int c = 0; c < width; ++c) out[c] = 0.299 * p[3 * c] + 0.587 * p[3 * c + 1] + 0.114 * p[3 * c + 2];
  }
  return y;
}

// The "valid" Gaussian filter: full-size separable filtering, then the border a window does not
// cover cropped away.
cv::Mat filter_valid(const cv::Mat& x, const cv::Mat& kernel) {
  cv::Mat out;
  cv::sepFilter2D(x, out, CV_64F, kernel, kernel, cv::Point(-1, -1), 0.0, cv::BORDER_REFLECT);
  const int r = kernel.rows / 2;
  return out(cv::Rect(r, r, x.cols - 2 * r, x.rows - 2 * r));
}

}  // namespace

double psnr_from_mse(double mse) {
  if (mse <= 0.0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(255.0 * 255.0 / mse);
}

double frame_mse(const std::uint8_t* a, const std::uint8_t* b, int width, int height) {
  const std::size_t n = std::size_t(width) * height * 3;
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    sum += d * d;
  }
  return sum / double(n);
}

double frame_ssim_luma(const std::uint8_t* a, const std::uint8_t* b, int width, int height) {
  int window = std::min(11, std::min(width, height));
  if (window % 2 == 0) --window;
  const cv::Mat kernel = cv::getGaussianKernel(window, 1.5, CV_64F);
  const double c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255);
  const cv::Mat x = luma(a, width, height), y = luma(b, width, height);
  const cv::Mat mx = filter_valid(x, kernel), my = filter_valid(y, kernel);
  const cv::Mat sxx = filter_valid(x.mul(x), kernel) - mx.mul(mx);
  const cv::Mat syy = filter_valid(y.mul(y), kernel) - my.mul(my);
  const cv::Mat sxy = filter_valid(x.mul(y), kernel) - mx.mul(my);
  cv::Mat num = (2 * mx.mul(my) + c1).mul(2 * sxy + c2);
  cv::Mat den = (mx.mul(mx) + my.mul(my) + c1).mul(sxx + syy + c2);
  cv::Mat map;
  cv::divide(num, den, map);
  return cv::mean(map)[0];
}

void add_frame_pair(CompareResult& r, const std::uint8_t* a, const std::uint8_t* b, int width, int height) {
  FrameScore s;
  s.mse = frame_mse(a, b, width, height);
  s.psnr = psnr_from_mse(s.mse);
  s.ssim = s.mse == 0.0 ? 1.0 : frame_ssim_luma(a, b, width, height);
  r.frames.push_back(s);
}

void finish_compare(CompareResult& r) {
  double mse_sum = 0.0, ssim_sum = 0.0;
  for (const FrameScore& s : r.frames) {
    mse_sum += s.mse;
    ssim_sum += s.ssim;
  }
  const double count = double(r.frames.size());
  r.mse = mse_sum / count;
  r.psnr = psnr_from_mse(r.mse);
  r.ssim = ssim_sum / count;
}

CompareResult compare_frames(const Frames& a, const Frames& b) {
  check_sizes(a, b);
  CompareResult r;
  const int count = std::min(a.count, b.count);
  for (int i = 0; i < count; ++i) add_frame_pair(r, a.frame(i), b.frame(i), a.width, a.height);
  finish_compare(r);
  return r;
}

Frames side_by_side(const Frames& a, const Frames& b) {
  check_sizes(a, b);
  Frames out;
  out.count = std::min(a.count, b.count);
  out.width = a.width * 2;
  out.height = a.height;
  out.rgb.resize(out.frame_bytes() * out.count);
  const std::size_t row = std::size_t(a.width) * 3;
  for (int i = 0; i < out.count; ++i) {
    for (int r = 0; r < a.height; ++r) {
      std::uint8_t* dst = out.frame(i) + 2 * row * r;
      std::copy_n(a.frame(i) + row * r, row, dst);
      std::copy_n(b.frame(i) + row * r, row, dst + row);
    }
  }
  return out;
}

Frames difference(const Frames& a, const Frames& b, double gain) {
  check_sizes(a, b);
  Frames out;
  out.count = std::min(a.count, b.count);
  out.width = a.width;
  out.height = a.height;
  out.rgb.resize(out.frame_bytes() * out.count);
  for (std::size_t i = 0; i < out.rgb.size(); ++i) {
    const double d = std::abs(double(a.rgb[i]) - double(b.rgb[i])) * gain;
    out.rgb[i] = static_cast<std::uint8_t>(std::min(255.0, std::round(d)));
  }
  return out;
}

}  // namespace vidgraph::nodes::media
