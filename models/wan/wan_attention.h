// Self- and cross-attention of a Wan DiT block (wan/modules/model.py WanSelfAttention,
// WanCrossAttention); submodule names are the checkpoint keys: q, k, v, o, norm_q, norm_k, and the
// optional sparse extras to_gate_compress (Linear(dim, dim), the VSA gate) and proj_l
// (Linear(head_dim, head_dim), the SLA* linear-branch projection, kept fp32).
//
// Self-attention runs through the plugin interface (vidgraph::plugin::AttentionBackend) with the
// run's preparation (AttentionRun::prepared); it never names a concrete plugin. Cross-attention
// (text, 512 keys, no mask) is always dense. q/k RMSNorm spans the full dim (across heads), before
// the head split.
#pragma once

#include <array>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include "models/wan/wan_config.h"
#include "models/wan/wan_layers.h"
#include "models/wan/wan_rope.h"
#include "plugins/api/attention_backend.h"
#include "plugins/api/attention_params.h"

namespace vidgraph::parallel {
class SequenceParallel;
}

namespace vidgraph::wan {

// How self-attention runs for one forward. backend == nullptr selects the model's own dense
// attention (used by tests and by tools without a plugin); with a backend, `prepared` is required.
// sequence_parallel != nullptr runs the forward sequence-parallel over its process group: each
// rank holds its slice of the tokens, and self-attention exchanges tokens for heads around the
// backend call (models/parallel/sequence_parallel.h); the caller keeps it alive.
// `prepared` (from backend->prepare() for this run's grid, dtype and head dim: prepare_attention_run)
// is passed with every call: its method, params and extras are the ones used.
// `dit_kernels` (a backend's AttentionBackend::dit_kernels()) runs the blocks' norms, RoPE and
// gated residuals as fused kernels in inference-mode forwards on the devices it supports; under
// autograd (training, checkpoint recomputation) and elsewhere the blocks use their ATen ops.
struct AttentionRun {
  plugin::AttentionBackend* backend = nullptr;
  parallel::SequenceParallel* sequence_parallel = nullptr;
  std::shared_ptr<const plugin::PreparedAttention> prepared;
  plugin::DitKernels* dit_kernels = nullptr;
};

// A self-attention method chosen for a run, before it is prepared for a shape: training and its
// validation prepare it once per latent shape (and sparsity value) they run at.
struct AttentionChoice {
  plugin::AttentionBackend* backend = nullptr;  // null: the model's own dense attention
  std::string method = "full";
  plugin::ParamMap params;
  parallel::SequenceParallel* sequence_parallel = nullptr;

  // The request for forwards of `config`'s DiT over a latent of `latent_shape` ([C, F, H, W] or
  // [B, C, F, H, W]) with activations in `dtype` on `device`.
  plugin::PrepareRequest request(const WanConfig& config, c10::Device device, at::ScalarType dtype,
                                 at::IntArrayRef latent_shape) const;
  // The run for those forwards. A refusal throws std::invalid_argument with the backend's sentence.
  AttentionRun prepare(const WanConfig& config, c10::Device device, at::ScalarType dtype,
                       at::IntArrayRef latent_shape) const;
};

// The run's fused kernels when this forward may use them for activations on `device` with matmuls
// in `compute_dtype` (inference mode, a kernel set that supports them), else nullptr.
plugin::DitKernels* fused_kernels(const AttentionRun& run, c10::Device device, at::ScalarType compute_dtype);

// Dense softmax attention, scale 1/sqrt(D). q: [B, Lq, H, D], k, v: [B, Lk, H, D] (same dtype)
// -> [B, Lq, H, D] in q's dtype. Computed in query chunks so memory stays O(chunk * Lk).
at::Tensor dense_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

struct WanAttentionOptions {
  int64_t dim = 0;
  int64_t num_heads = 0;
  double eps = 1e-6;
  bool with_gate_compress = false;
  bool with_proj_l = false;
  at::TensorOptions compute_options;  // matmul weights (bf16/fp16 on GPU)
  at::TensorOptions fp32_options;     // norms, proj_l
};

class WanSelfAttentionImpl : public torch::nn::Cloneable<WanSelfAttentionImpl> {
 public:
  explicit WanSelfAttentionImpl(const WanAttentionOptions& options);
  void reset() override;
  // x: [B, L, dim] fp32 or the compute dtype (the modulated, normalised hidden state), L = grid
  // volume -> [B, L, dim] in the compute dtype.
  at::Tensor forward(const at::Tensor& x, const std::array<int64_t, 3>& grid, const RopeTables& rope,
                     const AttentionRun& run);

  WanAttentionOptions options;
  WanLinear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  WanRMSNorm norm_q{nullptr}, norm_k{nullptr};
  WanLinear to_gate_compress{nullptr};  // present only with options.with_gate_compress
  WanLinear proj_l{nullptr};            // present only with options.with_proj_l
};
TORCH_MODULE(WanSelfAttention);

class WanCrossAttentionImpl : public torch::nn::Cloneable<WanCrossAttentionImpl> {
 public:
  explicit WanCrossAttentionImpl(const WanAttentionOptions& options);
  void reset() override;
  // x: [B, L, dim] fp32, context: [B, Lt, dim] (text_embedding output) -> [B, L, dim] compute dtype.
  // `fused` (from fused_kernels()) runs the q/k norms as fused kernels.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& context, plugin::DitKernels* fused = nullptr);

  WanAttentionOptions options;
  WanLinear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  WanRMSNorm norm_q{nullptr}, norm_k{nullptr};
};
TORCH_MODULE(WanCrossAttention);

}  // namespace vidgraph::wan
