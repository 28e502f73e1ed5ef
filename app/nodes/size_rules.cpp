// Implements size_rules.h: the reference's two candidate roundings, keep the closer aspect.
#include "size_rules.h"

#include <algorithm>
#include <cmath>

namespace vidgraph::nodes {
namespace {

int floor_to(double value, int multiple) {
  const int n = static_cast<int>(std::floor(value / multiple));
  return std::max(n, 1) * multiple;
}

double aspect_error(double wanted, double got) { return std::max(wanted / got, got / wanted); }

}  // namespace

OutputSize best_output_size(int width, int height, int max_area, int multiple) {
  if (width <= 0 || height <= 0 || max_area <= 0 || multiple <= 0) return {};
  const double ratio = static_cast<double>(width) / height;
  const double area = static_cast<double>(max_area);
  const double ideal_w = std::sqrt(area * ratio);
  const double ideal_h = area / ideal_w;

  // Width first: round the width down, then fit the height into the remaining area.
  const int w1 = floor_to(ideal_w, multiple);
  const int h1 = floor_to(area / w1, multiple);
  // Height first: the same with the roles swapped.
  const int h2 = floor_to(ideal_h, multiple);
  const int w2 = floor_to(area / h2, multiple);

  const double e1 = aspect_error(ratio, static_cast<double>(w1) / h1);
  const double e2 = aspect_error(ratio, static_cast<double>(w2) / h2);
  if (e1 < e2) return {w1, h1};
  return {w2, h2};
}

bool is_valid_output_size(int width, int height, int multiple) {
  return multiple > 0 && width > 0 && height > 0 && width % multiple == 0 && height % multiple == 0;
}

}  // namespace vidgraph::nodes
