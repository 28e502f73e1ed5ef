// Configuration of the umT5-XXL encoder used by Wan2.2 (`wan/modules/t5.py` `umt5_xxl`, encoder
// only): vocab 256,384, dim 4096, 64 heads x 64, FFN 10,240 (gated GELU-tanh), 24 layers, each with
// its own relative-position embedding (32 buckets, max distance 128), RMS-norm eps 1e-6, no biases.
#pragma once

#include <cstdint>

namespace vidgraph::t5 {

struct Umt5Config {
  int64_t vocab = 256384;
  int64_t dim = 4096;
  int64_t dim_attn = 4096;
  int64_t dim_ffn = 10240;
  int64_t num_heads = 64;
  int64_t num_layers = 24;
  int64_t num_buckets = 32;
  int64_t max_dist = 128;
  double eps = 1e-6;

  static Umt5Config xxl() { return {}; }
  // 2 layers, dim 64, 4 heads: for tests and the demo model (vocab sized for a small tokenizer).
  static Umt5Config tiny(int64_t vocab = 1000);
  // Throws std::invalid_argument naming the inconsistent field.
  void validate() const;
};

// Bidirectional relative-position bucket of `rel = key - query` (T5/umT5): half the buckets per sign
// (+num_buckets/2 when rel > 0), exact below num_buckets/4, logarithmic up to max_dist, then capped.
int64_t relative_position_bucket(int64_t rel, int64_t num_buckets, int64_t max_dist);

}  // namespace vidgraph::t5
