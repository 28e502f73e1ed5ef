// Implements image_resize.h: per axis, a table of taps (first input index, count, fixed-point
// weights) built once, then applied to every row or column.
#include "image_resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace vidgraph::nodes::media {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // two spare bits: weights can sum above 1 per side
constexpr double kSupport = 3.0;           // Lanczos a

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}

double lanczos(double x) { return (-kSupport <= x && x < kSupport) ? sinc(x) * sinc(x / kSupport) : 0.0; }

struct Taps {
  int size = 0;             // taps per output pixel (room; `count` says how many are used)
  std::vector<int> first;   // first input index per output pixel
  std::vector<int> count;   // used taps per output pixel
  std::vector<std::int32_t> weights;  // [out][size], fixed point
};

Taps make_taps(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  const double filter_scale = std::max(1.0, scale);  // widen the kernel when shrinking
  const double support = kSupport * filter_scale;
  Taps taps;
  taps.size = int(std::ceil(support)) * 2 + 1;
  taps.first.resize(out_size);
  taps.count.resize(out_size);
  taps.weights.assign(std::size_t(out_size) * taps.size, 0);
  std::vector<double> w(taps.size);
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    // Truncating casts, as Pillow: the window rounds to the nearest input pixels.
    const int lo = std::max(0, int(center - support + 0.5));
    const int hi = std::min(in_size, int(center + support + 0.5));
    const double inverse = 1.0 / filter_scale;
    double sum = 0.0;
    for (int i = lo; i < hi; ++i) {
      w[i - lo] = lanczos((i - center + 0.5) * inverse);
      sum += w[i - lo];
    }
    std::int32_t* fixed = &taps.weights[std::size_t(o) * taps.size];
    for (int i = 0; i < hi - lo; ++i) {
      const double v = (sum != 0.0 ? w[i] / sum : w[i]) * double(1 << kPrecisionBits);
      fixed[i] = std::int32_t(v < 0 ? v - 0.5 : v + 0.5);
    }
    taps.first[o] = lo;
    taps.count[o] = hi - lo;
  }
  return taps;
}

std::uint8_t clip8(std::int32_t sum) {
  return std::uint8_t(std::clamp(sum >> kPrecisionBits, 0, 255));
}

// One axis: out[o] = sum_k in[first+k] * w[k] over `lines` lines of 3 channels. `step` is the
// distance between neighbouring samples along the axis, `line_step` between lines (in bytes).
void resample_axis(const std::uint8_t* in, std::uint8_t* out, const Taps& taps, int out_size, int lines,
                   std::ptrdiff_t in_step, std::ptrdiff_t in_line, std::ptrdiff_t out_step,
                   std::ptrdiff_t out_line) {
  for (int line = 0; line < lines; ++line) {
    const std::uint8_t* src = in + line * in_line;
    std::uint8_t* dst = out + line * out_line;
    for (int o = 0; o < out_size; ++o) {
      const std::int32_t* w = &taps.weights[std::size_t(o) * taps.size];
      const std::uint8_t* p = src + taps.first[o] * in_step;
      std::int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;  // + 0.5: round half up
      for (int k = 0; k < taps.count[o]; ++k, p += in_step) {
        s0 += p[0] * w[k];
        s1 += p[1] * w[k];
        s2 += p[2] * w[k];
      }
      std::uint8_t* q = dst + o * out_step;
      q[0] = clip8(s0);
      q[1] = clip8(s1);
      q[2] = clip8(s2);
    }
  }
}

}  // namespace

Image resize_lanczos(const Image& in, int width, int height) {
  const Taps rows = make_taps(in.height, height);
  // The input rows the vertical pass reads.
  const int row_first = rows.first.front();
  const int row_last = rows.first.back() + rows.count.back();
  Image out;
  out.width = width;
  out.height = height;
  out.rgb.resize(std::size_t(width) * height * 3);
  const std::uint8_t* source = in.rgb.data();
  std::ptrdiff_t source_row = std::ptrdiff_t(in.width) * 3;
  int source_first = 0;
  std::vector<std::uint8_t> temp;
  if (width != in.width) {
    const Taps cols = make_taps(in.width, width);
    const int lines = row_last - row_first;
    temp.resize(std::size_t(lines) * width * 3);
    resample_axis(in.rgb.data() + std::ptrdiff_t(row_first) * source_row, temp.data(), cols, width, lines,
                  3, source_row, 3, std::ptrdiff_t(width) * 3);
    source = temp.data();
    source_row = std::ptrdiff_t(width) * 3;
    source_first = row_first;
  }
  if (height != in.height) {
    Taps shifted = rows;
    for (int& first : shifted.first) first -= source_first;
    // Columns as lines: neighbours along the axis are one row apart.
    resample_axis(source, out.rgb.data(), shifted, height, width, source_row, 3,
                  std::ptrdiff_t(width) * 3, 3);
  } else {
    std::copy(source, source + out.rgb.size(), out.rgb.begin());
  }
  return out;
}

}  // namespace vidgraph::nodes::media
