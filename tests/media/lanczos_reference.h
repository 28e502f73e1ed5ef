// The antialiased Lanczos resize written straight from its definition, in float64, for tests:
// output pixel o on an axis of scale s = in/out sits at input coordinate c = (o + 0.5) * s; with
// f = max(1, s) it averages the input pixels i with weight L((i + 0.5 - c) / f), L(x) =
// sinc(x) sinc(x/3) for |x| < 3, normalised to sum 1. Separable, no rounding between passes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace lanczos_reference {

inline double sinc(double x) { return x == 0.0 ? 1.0 : std::sin(M_PI * x) / (M_PI * x); }

// Per output pixel: the first input index with a non-zero weight and the weights from there.
struct Row {
  int first = 0;
  std::vector<double> w;
};

inline std::vector<Row> weights(int in, int out) {
  const double s = double(in) / out;
  const double f = std::max(1.0, s);
  std::vector<Row> rows(out);
  for (int o = 0; o < out; ++o) {
    const double c = (o + 0.5) * s;
    const int lo = std::max(0, int(std::floor(c - 3.0 * f)) - 1);
    const int hi = std::min(in, int(std::ceil(c + 3.0 * f)) + 1);
    double sum = 0.0;
    rows[o].first = lo;
    for (int i = lo; i < hi; ++i) {
      const double x = (i + 0.5 - c) / f;
      rows[o].w.push_back(std::abs(x) < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0);
      sum += rows[o].w.back();
    }
    for (double& v : rows[o].w) v /= sum;
  }
  return rows;
}

// RGB uint8 [h][w][3] -> [out_h][out_w][3], rounded to nearest and clamped at the end only.
inline std::vector<std::uint8_t> resize(const std::vector<std::uint8_t>& rgb, int w, int h, int out_w,
                                        int out_h) {
  const std::vector<Row> wx = weights(w, out_w);
  const std::vector<Row> wy = weights(h, out_h);
  std::vector<double> rows(std::size_t(h) * out_w * 3, 0.0);  // horizontal pass
  for (int y = 0; y < h; ++y) {
    for (int o = 0; o < out_w; ++o) {
      for (std::size_t k = 0; k < wx[o].w.size(); ++k) {
        const std::size_t i = std::size_t(y) * w + wx[o].first + k;
        for (int c = 0; c < 3; ++c) rows[(std::size_t(y) * out_w + o) * 3 + c] += wx[o].w[k] * rgb[i * 3 + c];
      }
    }
  }
  std::vector<std::uint8_t> out(std::size_t(out_h) * out_w * 3);
  for (int o = 0; o < out_h; ++o) {
    for (int x = 0; x < out_w; ++x) {
      for (int c = 0; c < 3; ++c) {
        double v = 0.0;
        for (std::size_t k = 0; k < wy[o].w.size(); ++k) {
          v += wy[o].w[k] * rows[((wy[o].first + k) * out_w + x) * 3 + c];
        }
        out[(std::size_t(o) * out_w + x) * 3 + c] = std::uint8_t(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return out;
}

}  // namespace lanczos_reference
