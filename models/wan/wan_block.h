// One Wan DiT transformer block (wan/modules/model.py WanAttentionBlock) and the two-layer MLPs
// whose submodules are named "0" and "2" as in the checkpoint (ffn, text_embedding,
// time_embedding).
//
// Block, with m = modulation [1, 6, dim] + e0 (chunks: shift_sa, scale_sa, gate_sa, shift_ff,
// scale_ff, gate_ff):
//   x = x + self_attn(LN(x) * (1 + m1) + m0) * m2
//   x = x + cross_attn(norm3(x), context)
//   x = x + ffn(LN(x) * (1 + m4) + m3) * m5
// Modulation is per token group: e0 is [B, G, 6, dim] and the L tokens split evenly into G
// consecutive groups (G = F latent frames for the per-frame path, G = L for per-token).
// The residual stream, norms and modulation are fp32; the linear layers run in their weight dtype.
#pragma once

#include <array>

#include <ATen/core/Tensor.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include "models/wan/wan_attention.h"
#include "models/wan/wan_config.h"
#include "models/wan/wan_layers.h"
#include "models/wan/wan_rope.h"

namespace vidgraph::wan {

enum class MlpActivation { GeluTanh, Silu };

struct WanMlpOptions {
  int64_t in = 0, hidden = 0, out = 0;
  MlpActivation activation = MlpActivation::GeluTanh;
  at::TensorOptions tensor_options;
};

// "0": Linear(in, hidden), activation, "2": Linear(hidden, out).
class WanMlpImpl : public torch::nn::Cloneable<WanMlpImpl> {
 public:
  explicit WanMlpImpl(const WanMlpOptions& options);
  void reset() override;
  // x: [..., in] -> [..., out] in the weights' dtype
  at::Tensor forward(const at::Tensor& x);

  WanMlpOptions options;
  WanLinear fc0{nullptr}, fc2{nullptr};
};
TORCH_MODULE(WanMlp);

// Modulates a normalised fp32 hidden state per token group:
// x: [B, L, dim], shift/scale: [B, G, dim] with L % G == 0 -> x * (1 + scale) + shift, [B, L, dim].
at::Tensor modulate_groups(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale);
// Multiplies a branch output by its gate per token group (fp32): y [B, L, dim], gate [B, G, dim].
at::Tensor gate_groups(const at::Tensor& y, const at::Tensor& gate);

struct WanBlockOptions {
  WanConfig config;
  at::TensorOptions compute_options;
  at::TensorOptions fp32_options;
};

class WanAttentionBlockImpl : public torch::nn::Cloneable<WanAttentionBlockImpl> {
 public:
  explicit WanAttentionBlockImpl(const WanBlockOptions& options);
  void reset() override;
  // x: [B, L, dim] fp32, e0: [B, G, 6, dim] fp32, context: [B, Lt, dim] -> [B, L, dim] fp32
  // (a new tensor: x is never written).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& e0, const at::Tensor& context,
                     const std::array<int64_t, 3>& grid, const RopeTables& rope, const AttentionRun& run);

  WanBlockOptions options;
  at::Tensor modulation;  // [1, 6, dim] fp32
  WanLayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
  WanSelfAttention self_attn{nullptr};
  WanCrossAttention cross_attn{nullptr};
  WanMlp ffn{nullptr};

 private:
  // forward() on the fused kernels: the same steps, the residual stream updated in place.
  at::Tensor forward_fused(plugin::DitKernels& fused, const at::Tensor& x, const at::Tensor& m,
                           const at::Tensor& context, const std::array<int64_t, 3>& grid, const RopeTables& rope,
                           const AttentionRun& run);
};
TORCH_MODULE(WanAttentionBlock);

}  // namespace vidgraph::wan
