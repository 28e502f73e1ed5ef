// The GPU device path of the attention plugin (DevicePath, see ../device_path.h) on the HIP/CUDA
// kernels of kernels/. Tensors stay on the device; every launch goes on LibTorch's current stream;
// no host synchronisation; workspaces come from LibTorch's caching allocator.
//
// Supports bf16 and fp16, head dims 64 and 128, tile volume 64. A selection that lists every KV
// tile (topk == N, e.g. `full`) runs the dense kernels with no index loads. Anything else is a clear
// error from supports() (no silent fallback to the CPU).
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
};

}  // namespace vidgraph::attention
