// The seam between the shared attention algorithm and a device: the block-sparse attention stages that
// the one autograd Function (block_sparse_function.h) calls, looked up by device type.
//
// The CPU path (cpu_path.cpp) is registered by the plugin itself; a GPU path (plugins/attention/gpu/,
// compiled only when VIDGRAPH_ATTENTION_GPU is defined) registers itself for c10::DeviceType::CUDA /
// HIP through register_device_path(). Tensors on a device with no registered path raise
// "method X is not available on device Y": never a copy to the CPU.
//
// What stays shared and device-generic (ATen ops, autograd by LibTorch): tiling/untiling (index_select
// with a zero pad row), per-tile mean pooling, coarse attention over tile means, the gate, the SLA*
// linear branch and proj_l. What a device path provides is the hot part:
//
// Layouts (all tensors on the path's device, contiguous):
//   q, k, v, out, dout    [B, H, Sp, D]   tiled: Sp = N * V, tile i occupies slots [V*i, V*i + V),
//                                         real tokens first, pads exactly zero; V = tile volume (64 for
//                                         4x4x4; GPU kernels may require 64 and D in {64, 128})
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
// Saved for backward by the Function: q, k, v, out, lse, q2k, k2q, k2q_count, tile_sizes.
// Backward returns dq, dk, dv in the layout and dtype of q, k, v (accumulated in fp32 or better);
// it must be deterministic.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>

#include <memory>
#include <string>

namespace vidgraph::attention {

struct SparseForwardArgs {
  at::Tensor q, k, v;     // [B, H, Sp, D]
  at::Tensor tile_sizes;  // int32 [N]
  at::Tensor q2k;         // int32 [B, H, N, topk]
  int64_t tile_volume = 64;
  double scale = 1.0;
};

struct SparseForwardResult {
  at::Tensor out;  // [B, H, Sp, D], dtype of q
  at::Tensor lse;  // fp32 (fp64 for fp64 inputs) [B, H, Sp]
};

struct SparseBackwardArgs {
  at::Tensor dout;              // [B, H, Sp, D]
  at::Tensor q, k, v, out;      // [B, H, Sp, D]
  at::Tensor lse;               // [B, H, Sp]
  at::Tensor tile_sizes;        // int32 [N]
  at::Tensor q2k;               // int32 [B, H, N, topk]
  at::Tensor k2q, k2q_count;    // int32 [B, H, N, N], int32 [B, H, N]
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
