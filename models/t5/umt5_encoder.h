// The umT5 encoder (`wan/modules/t5.py` `T5Encoder`, encoder only) as a torch::nn::Module whose
// parameter names are the official `models_t5_umt5-xxl-enc-bf16.pth` keys:
// `token_embedding.weight`, `blocks.{i}.norm1.weight`, `blocks.{i}.attn.{q,k,v,o}.weight`,
// `blocks.{i}.norm2.weight`, `blocks.{i}.ffn.{gate.0,fc1,fc2}.weight`,
// `blocks.{i}.pos_embedding.embedding.weight` ([32 buckets, heads], one per layer), `norm.weight`.
// Forward: x = emb(ids); per block x += Attn(RMSNorm(x)) with relative-position bias and key mask,
// no 1/sqrt(d) scaling, softmax in fp32; x += fc2(fc1(n) * gelu_tanh(gate(n))); final RMSNorm.
// RMSNorm computes in fp32 and casts back to the weight dtype (bf16 officially) before the weight.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/module.h>

#include "umt5_config.h"

namespace vidgraph::t5 {

class Umt5Block : public torch::nn::Module {
 public:
  explicit Umt5Block(const Umt5Config& config);
  // x [B,L,dim], mask [B,L] (nonzero = real token), buckets [L,L] (relative_position_buckets) -> [B,L,dim]
  at::Tensor forward(const at::Tensor& x, const at::Tensor& mask, const at::Tensor& buckets) const;
  // The layer's relative-position bias [1, heads, L, L].
  at::Tensor position_bias(const at::Tensor& buckets) const;

 private:
  Umt5Config config_;
  at::Tensor norm1_, norm2_, q_, k_, v_, o_, gate_, fc1_, fc2_, rel_;
};

// Convolution-free weights are left uninitialised until a loader or make_seeded_umt5 sets them.
class Umt5Encoder : public torch::nn::Module {
 public:
  explicit Umt5Encoder(Umt5Config config);
  const Umt5Config& config() const { return config_; }
  // ids [B,L] int64, mask [B,L] (1 real / 0 pad) -> hidden states [B,L,dim] in the weights' dtype.
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& mask) const;

 private:
  Umt5Config config_;
  at::Tensor embedding_, norm_;
  std::vector<std::shared_ptr<Umt5Block>> blocks_;
};

// Bucket of every (query i, key j) pair, [L, L] int64 on `device` (shared by all layers).
at::Tensor relative_position_buckets(int64_t length, const Umt5Config& config, c10::Device device);

// RMS norm of the reference (T5LayerNorm): x * rsqrt(mean(x^2) + eps) in fp32, cast to the weight's
// dtype when that is fp16/bf16, times the weight.
at::Tensor umt5_rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

}  // namespace vidgraph::t5
