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
//  - prepare() is the only door: it checks the method, params, device, dtype, head dim and grid of a
//    run once and returns a PreparedAttention (or an error message); every call carries one, and the
//    per-call work is only what depends on the tensors.
#pragma once

#include "plugins/api/attention_params.h"
#include "plugins/api/dit_kernels.h"
#include "plugins/api/vae_kernels.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
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

// What prepare() settles once for many calls of one shape.
struct PrepareRequest {
  std::string method = "full";  // "full", "vsa", "sla_star", ... (see AttentionBackend::methods())
  ParamMap params;              // missing params take their defaults
  c10::Device device = c10::kCPU;      // where q, k, v will be
  at::ScalarType dtype = at::kFloat;   // of q, k, v
  int64_t head_dim = 0;                // D
  TokenGrid grid;                      // S = grid.size()
};

// A preparation: the request with its params completed and checked, what the method is and reads
// (from its descriptor), and the backend's own state for it (layouts, the device path and its
// settings), opaque to callers. Immutable; share it between calls and threads.
struct PreparedAttention {
  PrepareRequest request;
  MethodKind kind = MethodKind::Dense;  // MethodInfo::kind of the method
  bool uses_gate = false;               // MethodInfo::uses_gate
  bool uses_proj_l = false;             // MethodInfo::uses_proj_l
  std::shared_ptr<const void> state;
};

struct PrepareResult {
  std::shared_ptr<const PreparedAttention> prepared;  // null when refused
  std::string error;  // why: a sentence naming the method, param, device, dtype, head dim or grid
};

// One self-attention call: tensors and the preparation they run under.
struct AttentionCall {
  at::Tensor q;  // [B, S, H, D]
  at::Tensor k;  // [B, S, H, D]
  at::Tensor v;  // [B, S, H, D]
  AttentionExtras extras;
  // Required, from this backend's prepare(): its method, params and grid are used, and the tensors
  // must match its device, dtype, head dim and token count.
  std::shared_ptr<const PreparedAttention> prepared;
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

  // Checks a method, its params and the shape of the calls to come, and does once what every call
  // would otherwise redo. A refusal (unknown method or param, a value out of range, a device without
  // a path, a dtype, head dim or tile the kernels do not take, a bad grid) is an error, never a throw.
  // The only way to run a method: forward() refuses a call without a preparation.
  virtual PrepareResult prepare(const PrepareRequest& request) = 0;

  // Runs the call; the result is autograd-capable. No statistics are gathered.
  virtual at::Tensor forward(const AttentionCall& call) = 0;

  // Same as forward, plus the selection statistics.
  virtual AttentionResult forward_with_stats(const AttentionCall& call) = 0;

  // The backend's fused elementwise kernels of the DiT block (dit_kernels.h), or nullptr when it has
  // none. Owned by the backend; valid until shutdown().
  virtual DitKernels* dit_kernels() { return nullptr; }
  // The same for the Wan VAE's residual blocks (vae_kernels.h).
  virtual VaeKernels* vae_kernels() { return nullptr; }
  // Frees caches and drains device work. Called by the loader before the backend is destroyed;
  // after it, forward must not be called again.
  virtual void shutdown() = 0;
};

}  // namespace vidgraph::plugin
