#include "umt5_encoder.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <ATen/ops/arange.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/tensor.h>
#include <c10/core/GradMode.h>

namespace vidgraph::t5 {

namespace {

at::Tensor gelu_tanh(const at::Tensor& x) {
  return 0.5 * x * (1.0 + at::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x.pow(3.0))));
}

// torch.finfo(dtype).min
double lowest(at::ScalarType t) {
  switch (t) {
    case at::kHalf:
      return -65504.0;
    case at::kBFloat16:
      return -3.3895313892515355e38;
    case at::kDouble:
      return std::numeric_limits<double>::lowest();
    default:
      return double(std::numeric_limits<float>::lowest());
  }
}

// The reference's fp16_clamp: keeps fp16 activations finite.
at::Tensor fp16_clamp(const at::Tensor& x) {
  if (x.scalar_type() == at::kHalf && x.isinf().any().item<bool>()) {
    return at::clamp(x, -64504.0, 64504.0);
  }
  return x;
}

// Registers a parameter under a dotted path ("attn.q.weight"), creating plain child modules on the
// way, so that named_parameters() gives the checkpoint's keys.
at::Tensor add_param(torch::nn::Module& root, const std::string& path, const at::Tensor& init) {
  torch::nn::Module* node = &root;
  size_t start = 0;
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
    const std::string name = path.substr(start, dot - start);
    const auto children = node->named_children();
    const auto* found = children.find(name);
    node = found ? found->get() : node->register_module(name, std::make_shared<torch::nn::Module>()).get();
    start = dot + 1;
  }
  return node->register_parameter(path.substr(start), init);
}

}  // namespace

at::Tensor umt5_rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::Tensor xf = x.to(at::kFloat);
  at::Tensor y = xf * (xf.pow(2).mean({-1}, true) + eps).rsqrt();
  if (weight.scalar_type() == at::kHalf || weight.scalar_type() == at::kBFloat16) {
    y = y.to(weight.scalar_type());
  }
  return weight * y;
}

Umt5Block::Umt5Block(const Umt5Config& c) : config_(c) {
  norm1_ = add_param(*this, "norm1.weight", at::ones({c.dim}));
  q_ = add_param(*this, "attn.q.weight", at::empty({c.dim_attn, c.dim}));
  k_ = add_param(*this, "attn.k.weight", at::empty({c.dim_attn, c.dim}));
  v_ = add_param(*this, "attn.v.weight", at::empty({c.dim_attn, c.dim}));
  o_ = add_param(*this, "attn.o.weight", at::empty({c.dim, c.dim_attn}));
  norm2_ = add_param(*this, "norm2.weight", at::ones({c.dim}));
  gate_ = add_param(*this, "ffn.gate.0.weight", at::empty({c.dim_ffn, c.dim}));
  fc1_ = add_param(*this, "ffn.fc1.weight", at::empty({c.dim_ffn, c.dim}));
  fc2_ = add_param(*this, "ffn.fc2.weight", at::empty({c.dim, c.dim_ffn}));
  rel_ = add_param(*this, "pos_embedding.embedding.weight", at::empty({c.num_buckets, c.num_heads}));
}

at::Tensor relative_position_buckets(int64_t length, const Umt5Config& config, c10::Device device) {
  // The bucket depends on j - i only: one value per offset, then gathered into [L, L].
  std::vector<int64_t> by_offset(size_t(2 * length - 1));
  for (int64_t rel = -(length - 1); rel < length; ++rel) {
    by_offset[size_t(rel + length - 1)] = relative_position_bucket(rel, config.num_buckets, config.max_dist);
  }
  std::vector<int64_t> buckets(size_t(length * length));
  for (int64_t i = 0; i < length; ++i) {
    for (int64_t j = 0; j < length; ++j) {
      buckets[size_t(i * length + j)] = by_offset[size_t(j - i + length - 1)];
    }
  }
  return at::tensor(buckets, at::TensorOptions().dtype(at::kLong)).view({length, length}).to(device);
}

at::Tensor Umt5Block::position_bias(const at::Tensor& buckets) const {
  const int64_t l = buckets.size(0);
  return at::embedding(rel_, buckets.flatten()).view({l, l, config_.num_heads}).permute({2, 0, 1}).unsqueeze(0);
}

at::Tensor Umt5Block::forward(const at::Tensor& x, const at::Tensor& mask, const at::Tensor& buckets) const {
  const int64_t b = x.size(0), l = x.size(1), n = config_.num_heads, d = config_.dim_attn / n;
  const at::Tensor h = umt5_rms_norm(x, norm1_, config_.eps);
  const at::Tensor q = at::linear(h, q_).view({b, l, n, d}).transpose(1, 2);  // [B,N,L,d]
  const at::Tensor k = at::linear(h, k_).view({b, l, n, d}).transpose(1, 2);
  const at::Tensor v = at::linear(h, v_).view({b, l, n, d}).transpose(1, 2);
  // bias [B,N,L,L] in the activation dtype: position bias, and finfo.min on padded keys
  const at::Tensor pad = (mask.view({b, 1, 1, l}) == 0);
  const at::Tensor bias =
      position_bias(buckets).to(x.scalar_type()).expand({b, n, l, l}).masked_fill(pad, lowest(x.scalar_type()));
  const at::Tensor logits = at::matmul(q, k.transpose(2, 3)) + bias;  // no 1/sqrt(d)
  const at::Tensor probs = at::softmax(logits.to(at::kFloat), -1).to(x.scalar_type());
  const at::Tensor attn = at::matmul(probs, v).transpose(1, 2).reshape({b, l, n * d});
  at::Tensor y = fp16_clamp(x + at::linear(attn, o_));
  const at::Tensor h2 = umt5_rms_norm(y, norm2_, config_.eps);
  const at::Tensor ff = at::linear(at::linear(h2, fc1_) * gelu_tanh(at::linear(h2, gate_)), fc2_);
  return fp16_clamp(y + ff);
}

Umt5Encoder::Umt5Encoder(Umt5Config config) : config_(config) {
  config_.validate();
  embedding_ = add_param(*this, "token_embedding.weight", at::empty({config_.vocab, config_.dim}));
  auto blocks = register_module("blocks", std::make_shared<torch::nn::Module>());
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    blocks_.push_back(blocks->register_module(std::to_string(i), std::make_shared<Umt5Block>(config_)));
  }
  norm_ = add_param(*this, "norm.weight", at::ones({config_.dim}));
}

at::Tensor Umt5Encoder::forward(const at::Tensor& ids, const at::Tensor& mask) const {
  if (ids.dim() != 2 || mask.sizes() != ids.sizes()) {
    throw std::invalid_argument("umT5 expects ids and mask of the same shape [B, L]");
  }
  if (ids.numel() > 0 && (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() >= config_.vocab)) {
    throw std::invalid_argument("umT5: a token id is outside the vocabulary of " + std::to_string(config_.vocab) +
                                " (tokenizer and text encoder do not match)");
  }
  c10::NoGradGuard no_grad;  // results stay ordinary tensors (in-place use allowed)
  at::Tensor x = at::embedding(embedding_, ids.to(embedding_.device(), at::kLong));  // [B,L,dim]
  const at::Tensor m = mask.to(embedding_.device());
  const at::Tensor buckets = relative_position_buckets(ids.size(1), config_, embedding_.device());
  for (const auto& block : blocks_) {
    x = block->forward(x, m, buckets);
  }
  return umt5_rms_norm(x, norm_, config_.eps);
}

}  // namespace vidgraph::t5
