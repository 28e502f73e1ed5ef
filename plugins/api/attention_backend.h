// The attention-backend interface: the one seam through which the models run self-attention.
//
// Contract (see ../shared/DESIGN.md, "Data contracts"):
//  - q, k, v and the result are [B, S, H, D] (token-major, as the DiT's linear layers produce them);
//    S = grid.t * grid.h * grid.w, tokens ordered T-major, then H, then W.
//  - Extras are optional: an undefined tensor means "absent", which behaves exactly like zero.
//      gate           [B, S, H, D] (or broadcastable [B, S, H, 1]): the VSA to_gate_compress output,
//                     multiplies the coarse branch only;
//      proj_l_weight  [D, D], proj_l_bias [D]: the SLA* linear-branch projection, shared by heads.
//  - The result is autograd-capable: gradients reach q, k, v, the gate and proj_l.
//  - Tensors stay on their device; a method with no path for that device throws
//    "method X is not available on device Y" (never a silent copy to the CPU).
//  - Errors (bad shapes, unknown method/param, out-of-range value) throw c10::Error / std::exception
//    with a sentence naming the tensor or parameter, what was expected and what was got.
#pragma once

#include "plugins/api/attention_params.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vidgraph::plugin {

// The latent token grid after patchify (T, H, W).
struct TokenGrid {
  int64_t t = 0;
  int64_t h = 0;
  int64_t w = 0;
  // T * H * W, or -1 when the product does not fit in int64 (a hostile --grid such as
  // 1,1096708,269121685242884 would otherwise wrap around to a small S and pass the shape checks).
  int64_t size() const {
    int64_t th = 0, s = 0;
    if (__builtin_mul_overflow(t, h, &th) || __builtin_mul_overflow(th, w, &s)) return -1;
    return s;
  }
  bool operator==(const TokenGrid& o) const { return t == o.t && h == o.h && w == o.w; }
};

// The layer's learned extras (undefined = absent = zero).
struct AttentionExtras {
  at::Tensor gate;           // [B, S, H, D] or [B, S, H, 1]
  at::Tensor proj_l_weight;  // [D, D]   (out_features, in_features), as torch::nn::Linear
  at::Tensor proj_l_bias;    // [D]
};

// One self-attention call.
struct AttentionCall {
  at::Tensor q;  // [B, S, H, D]
  at::Tensor k;  // [B, S, H, D]
  at::Tensor v;  // [B, S, H, D]
  TokenGrid grid;
  std::string method = "full";  // "full", "vsa", "sla_star", ... (see AttentionBackend::methods())
  ParamMap params;              // missing params take their defaults
  AttentionExtras extras;
};

// What the sparse selection did in one call (filled by sparse methods; empty for dense ones).
struct SelectionStats {
  bool sparse = false;
  int64_t query_tiles = 0;  // Nq
  int64_t kv_tiles = 0;     // Nkv
  int64_t topk = 0;         // KV tiles selected per (batch, head, query tile)
  int64_t tile_volume = 0;  // slots per tile (64 for 4x4x4)
  double density = 1.0;     // fraction of (query tile, KV tile) pairs computed
  at::Tensor selected_per_query_tile;  // int64 [B, H, Nq]: selected KV tiles per query tile
  at::Tensor selected_per_kv_tile;     // int64 [B, H, Nkv]: how many query tiles chose each KV tile
  at::Tensor tile_sizes;               // int64 [Nkv]: real tokens per tile
};

struct AttentionResult {
  at::Tensor out;  // [B, S, H, D], dtype and device of q
  SelectionStats stats;
};

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;

  // The methods this backend offers, with their parameters.
  virtual std::vector<MethodInfo> methods() const = 0;

  // Runs the call; the result is autograd-capable.
  virtual at::Tensor forward(const AttentionCall& call) = 0;

  // Same as forward, plus the selection statistics.
  virtual AttentionResult forward_with_stats(const AttentionCall& call) = 0;

  // Whether `method` can run on tensors of `device_type` (e.g. "cpu", "cuda"); false if unknown.
  virtual bool supports(const std::string& method, const std::string& device_type) const = 0;

  // Frees caches and drains device work. Called by the loader before the backend is destroyed;
  // after it, forward must not be called again.
  virtual void shutdown() = 0;
};

}  // namespace vidgraph::plugin
