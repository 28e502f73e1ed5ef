// The GPU device path of the attention plugin (DevicePath, see ../device_path.h) on the HIP/CUDA
// kernels of kernels/. Tensors stay on the device; every launch goes on LibTorch's current stream;
// no host synchronisation; workspaces come from LibTorch's caching allocator.
//
// Supports bf16 and fp16, head dims 64 and 128, tile volume 64. `full` comes in the dense form
// (dense_strided(): the callers' [B, S, H, D] tensors, no tiling, no lists); a tiled selection that
// lists every KV tile (topk == N) also runs the dense kernels with no index loads. The staging hooks
// (tiling with tile means, gated untiling, SLA* linear branch) run on the kernels too (gpu_staging.h).
// Anything else is a clear error from supports() (no silent fallback to the CPU). Each device's
// tuning row is read at prepare (or the first launch) and passed to every launch.
#pragma once

#include "plugins/attention/device_path.h"
#include "vidgraph/kernels/attention_kernels.h"

#include <array>
#include <atomic>
#include <deque>
#include <mutex>

namespace vidgraph::attention {

class GpuPath : public DevicePath {
 public:
  GpuPath();
  std::string name() const override;
  void prepare(c10::Device device) override;
  bool supports(int64_t d, int64_t tile_volume, at::ScalarType dtype, std::string* why) const override;
  SparseForwardResult sparse_forward(const SparseForwardArgs& args) override;
  SparseBackwardResult sparse_backward(const SparseBackwardArgs& args) override;
  TopkSelection select_topk(const at::Tensor& scores, int64_t topk) override;
  bool dense_strided() const override { return true; }
  TiledTokens tile(const at::Tensor& x, const TileLayout& layout, bool with_mean) override;
  at::Tensor untile(const at::Tensor& fine, const TileLayout& layout, const at::Tensor& coarse,
                    const at::Tensor& gate) override;
  at::Tensor add_linear_branch(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const std::string& feature_map, const at::Tensor& weight,
                               const at::Tensor& bias) override;

 private:
  // The kernels' tuning row of `device` (its architecture's, or VIDGRAPH_ATTENTION_TUNING's): read
  // at prepare (again at each prepare, so a changed override applies to the next preparation) or at
  // the first launch, then passed to every launch, so the kernels neither read the environment nor
  // query the device per launch. The same row as they would pick: the same results.
  const vidgraph::kernels::AttentionTuning* tuning_for(c10::Device device);
  const vidgraph::kernels::AttentionTuning* read_tuning(c10::Device device);

  static constexpr int kMaxDevices = 64;
  std::mutex tuning_mutex_;
  std::deque<vidgraph::kernels::AttentionTuning> tuning_rows_;  // every row handed out (stable addresses)
  std::array<std::atomic<const vidgraph::kernels::AttentionTuning*>, kMaxDevices> tuning_;
};

}  // namespace vidgraph::attention
