// The GPU device path of the attention plugin (DevicePath, see ../device_path.h) on the HIP/CUDA
// kernels of kernels/. Tensors stay on the device; every launch goes on LibTorch's current stream;
// no host synchronisation; workspaces come from LibTorch's caching allocator.
//
// Supports bf16 and fp16, head dims 64 and 128, tile volume 64. `full` comes in the dense form
// (dense_strided(): the callers' [B, S, H, D] tensors, no tiling, no lists); a tiled selection that
// lists every KV tile (topk == N) also runs the dense kernels with no index loads. The staging hooks
// (tiling, tile means, gated untiling, SLA* linear branch) run on the kernels too (gpu_staging.h).
// Anything else is a clear error from supports() (no silent fallback to the CPU).
#pragma once

#include "plugins/attention/device_path.h"

namespace vidgraph::attention {

class GpuPath : public DevicePath {
 public:
  std::string name() const override;
  bool supports(int64_t d, int64_t tile_volume, at::ScalarType dtype, std::string* why) const override;
  SparseForwardResult sparse_forward(const SparseForwardArgs& args) override;
  SparseBackwardResult sparse_backward(const SparseBackwardArgs& args) override;
  TopkSelection select_topk(const at::Tensor& scores, int64_t topk) override;
  bool dense_strided() const override { return true; }
  at::Tensor tile(const at::Tensor& x, const TileLayout& layout) override;
  at::Tensor tile_mean(const at::Tensor& tiled, const TileLayout& layout) override;
  at::Tensor untile(const at::Tensor& fine, const TileLayout& layout, const at::Tensor& coarse,
                    const at::Tensor& gate) override;
  at::Tensor add_linear_branch(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const std::string& feature_map, const at::Tensor& weight,
                               const at::Tensor& bias) override;
};

}  // namespace vidgraph::attention
