// The seam between the shared attention algorithm and a device: the block-sparse attention stages that
// the one autograd Function (block_sparse_function.h) calls, looked up by device type.
//
// The CPU path (cpu_path.cpp) is registered by the plugin itself; a GPU path (plugins/attention/gpu/,
// compiled only when VIDGRAPH_ATTENTION_GPU is defined) registers itself for c10::DeviceType::CUDA /
// HIP through register_device_path(). Tensors on a device with no registered path raise
// "method X is not available on device Y": never a copy to the CPU.
//
// What a device path must provide is the hot part, block-sparse attention forward/backward. The
// staging around it (tiling, per-tile means, untiling with the gated coarse branch, the SLA* linear
// branch, top-k selection) are optional hooks whose defaults are the shared ATen code (autograd by
// LibTorch); the CPU path keeps the defaults, a GPU path overrides them with its kernels.
//
// Layouts of the tiled form (all tensors on the path's device):
//   q, k, v, out, dout    [B, H, Sp, D]   tiled: Sp = N * V, tile i occupies slots [V*i, V*i + V),
//                                         real tokens first, pads exactly zero; V = tile volume (64 for
//                                         4x4x4; GPU kernels may require 64 and D in {64, 128}).
//                                         Contiguous (the Function makes them so).
//   dtype                 fp32/fp64 on CPU; bf16/fp16/fp32 on GPU; q, k, v, dout share it
//   tile_sizes            int32 [N]       real tokens per tile (same for q and kv: self-attention)
//   q2k                   int32 [B, H, N, topk]  selected KV tiles per query tile, ascending, distinct
//   k2q, k2q_count        int32 [B, H, N, N], int32 [B, H, N]: query tiles that selected each KV tile,
//                                         ascending, padded with -1 after k2q_count entries
//   lse                   fp32 [B, H, Sp] natural-log log-sum-exp of the scaled, masked logits per row
//                                         (fp64 when the inputs are fp64)
//   scale                 the softmax scale, 1/sqrt(D)
// Semantics: out[b,h,r] = softmax_j(scale * q[b,h,r]·k[b,h,j]) v[b,h,j] over the key slots j of the
// selected tiles of r's query tile, a key slot masked (-inf) when it is >= tile_sizes[its tile].
// Pad query rows are computed (finite, discarded by untiling; their dout is zero).
//
// The dense form (only for a path whose dense_strided() is true; `full` uses it): tile_sizes, q2k,
// k2q and k2q_count are undefined; q, k, v, dout are the callers' [B, S, H, D] tensors (any strides,
// S any, no pads, no copy) and every key attends; out, dq, dk, dv are [B, S, H, D] and lse fp32
// [B, H, S].
//
// Saved for backward by the Function: q, k, v, out, lse, q2k, k2q, k2q_count, tile_sizes.
// Backward returns dq, dk, dv in the layout and dtype of q, k, v (accumulated in fp32 or better);
// it must be deterministic.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/DeviceType.h>

#include <memory>
#include <string>

namespace vidgraph::attention {

struct TileLayout;

struct SparseForwardArgs {
  at::Tensor q, k, v;     // [B, H, Sp, D] (dense form: [B, S, H, D], any strides)
  at::Tensor tile_sizes;  // int32 [N] (dense form: undefined)
  at::Tensor q2k;         // int32 [B, H, N, topk] (dense form: undefined)
  int64_t tile_volume = 64;
  double scale = 1.0;
};

struct SparseForwardResult {
  at::Tensor out;  // [B, H, Sp, D], dtype of q
  at::Tensor lse;  // fp32 (fp64 for fp64 inputs) [B, H, Sp]
};

struct SparseBackwardArgs {
  at::Tensor dout;            // [B, H, Sp, D]
  at::Tensor q, k, v, out;    // [B, H, Sp, D]
  at::Tensor lse;             // [B, H, Sp]
  at::Tensor tile_sizes;      // int32 [N]
  at::Tensor q2k;             // int32 [B, H, N, topk]
  at::Tensor k2q, k2q_count;  // int32 [B, H, N, N], int32 [B, H, N]
  int64_t tile_volume = 64;
  double scale = 1.0;
};

struct SparseBackwardResult {
  at::Tensor dq, dk, dv;  // [B, H, Sp, D], dtype of q
};

struct TopkSelection {
  at::Tensor q2k;        // int32 [B, H, N, topk], ascending
  at::Tensor k2q;        // int32 [B, H, N, N], ascending, -1 padded
  at::Tensor k2q_count;  // int32 [B, H, N]
};

struct TiledTokens {
  at::Tensor tiled;  // [B, H, Sp, D]
  at::Tensor mean;   // [B, H, N, D], or undefined when not asked for
};

class DevicePath {
 public:
  virtual ~DevicePath() = default;

  // Short name for messages ("cpu-aten", "hip-mfma", "cuda-mma").
  virtual std::string name() const = 0;

  // Whether head dim `d`, tile volume `tile_volume` and `dtype` are supported; if not, `why` says so.
  virtual bool supports(int64_t d, int64_t tile_volume, at::ScalarType dtype, std::string* why) const = 0;

  // Block-sparse attention forward (see the semantics above).
  virtual SparseForwardResult sparse_forward(const SparseForwardArgs& args) = 0;

  // Its backward: dq, dk, dv.
  virtual SparseBackwardResult sparse_backward(const SparseBackwardArgs& args) = 0;

  // (optional) Per-row top-k of coarse scores fp32 [B, H, N, N]: exactly `topk` distinct tiles per
  // row, largest scores, ties broken by the lowest index; plus the inverted lists. The default is
  // the shared ATen implementation (select_topk_aten in tile_selection.h).
  virtual TopkSelection select_topk(const at::Tensor& scores, int64_t topk);

  // (optional) Whether sparse_forward/backward take the dense form (see above). Default: false, and
  // `full` then runs the tiled form with every tile listed.
  virtual bool dense_strided() const { return false; }

  // (optional) Tiling: x [B, S, H, D] (any strides) -> tiled [B, H, Sp, D] contiguous, pads exactly
  // zero; with_mean adds the per-tile means [B, H, N, D] (sum over the tile's real slots in fp32,
  // fp64 for fp64 inputs, / real count; may be a strided view), otherwise left undefined. One hook
  // for both so that a path can form the means in the tiling pass and take both gradients in one.
  // Differentiable in x. Default: tile_tokens (tile_layout.h), then an ATen reduction.
  virtual TiledTokens tile(const at::Tensor& x, const TileLayout& layout, bool with_mean);

  // (optional) Untiling with the gated coarse branch: fine [B, H, Sp, D] -> out [B, S, H, D] in fine's
  // dtype; when gate ([B, S, H, D] or [B, S, H, 1]) is defined, out += coarse[tile of token] * gate,
  // coarse [B, H, N, D] (fp32/fp64). Differentiable in fine, coarse and gate.
  virtual at::Tensor untile(const at::Tensor& fine, const TileLayout& layout, const at::Tensor& coarse,
                            const at::Tensor& gate);

  // (optional) Adds the SLA* linear branch through proj_l: out [B, S, H, D] + (o_lin @ weight^T + bias)
  // in out's dtype; q, k, v [B, S, H, D], o_lin as in attention_methods.h, weight [D, D] defined, bias
  // [D] or undefined. Differentiable in all. Default: linear_branch (fp32/fp64 accumulation), the
  // projection, then the sum.
  virtual at::Tensor add_linear_branch(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k,
                                       const at::Tensor& v, const std::string& feature_map, const at::Tensor& weight,
                                       const at::Tensor& bias);

  // (optional) Settles what this path needs per device once, before calls on `device` (the GPU path:
  // the kernels' tuning row, so launches do not read the environment or query the device). Called
  // by prepare; a path must also work for calls nobody prepared.
  virtual void prepare(c10::Device device) { (void)device; }

  // (optional) Drains queued device work and frees scratch buffers; called at plugin shutdown.
  virtual void shutdown() {}
};

// Registers `path` for `device` (replacing any previous one). Called at plugin start-up.
void register_device_path(c10::DeviceType device, std::unique_ptr<DevicePath> path);

// The path for `device`, or nullptr.
DevicePath* find_device_path(c10::DeviceType device);

// The path for `device`; throws "method <method> is not available on device <device> ..." if none.
DevicePath& require_device_path(c10::DeviceType device, const std::string& method);

// Calls shutdown() on every registered path and removes them all.
void shutdown_device_paths();

// Implemented by plugins/attention/gpu/ when VIDGRAPH_ATTENTION_GPU is defined: registers the GPU
// path(s) if a device is present. Called once by the plugin after registering the CPU path.
#ifdef VIDGRAPH_ATTENTION_GPU
void register_gpu_device_paths();
#endif  // VIDGRAPH_ATTENTION_GPU

}  // namespace vidgraph::attention
