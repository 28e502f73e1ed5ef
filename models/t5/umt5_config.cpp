#include "umt5_config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace vidgraph::t5 {

Umt5Config Umt5Config::tiny(int64_t vocab) {
  Umt5Config c;
  c.vocab = vocab;
  c.dim = 64;
  c.dim_attn = 64;
  c.dim_ffn = 128;
  c.num_heads = 4;
  c.num_layers = 2;
  return c;
}

void Umt5Config::validate() const {
  if (vocab <= 0 || dim <= 0 || dim_ffn <= 0 || num_layers <= 0 || num_heads <= 0 || dim_attn % num_heads != 0) {
    throw std::invalid_argument("invalid umT5 config: sizes must be positive and dim_attn a multiple of num_heads");
  }
  if (num_buckets < 4 || num_buckets % 2 != 0 || max_dist <= num_buckets / 4) {
    throw std::invalid_argument("invalid umT5 config: num_buckets must be even (>= 4) and max_dist > num_buckets/4");
  }
}

int64_t relative_position_bucket(int64_t rel, int64_t num_buckets, int64_t max_dist) {
  const int64_t half = num_buckets / 2;
  const int64_t base = rel > 0 ? half : 0;
  const int64_t dist = std::llabs(rel);
  const int64_t max_exact = half / 2;
  if (dist < max_exact) {
    return base + dist;
  }
  // Same arithmetic as the reference: float32 log ratio, scaled, truncated toward zero.
  const float denom = float(std::log(double(max_dist) / double(max_exact)));
  const float ratio = std::log(float(dist) / float(max_exact)) / denom;
  const int64_t large = max_exact + int64_t(ratio * float(half - max_exact));
  return base + std::min(large, half - 1);
}

}  // namespace vidgraph::t5
