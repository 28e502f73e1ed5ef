// Leaf layers of the Wan DiT whose parameter names match the official checkpoint: a Linear, an
// RMSNorm (weight only) and a LayerNorm (affine or not). Parameters are allocated uninitialised
// (at::empty) directly on the requested device and dtype, so that building the 5B model costs no
// host memory and no init time; the loader or `wan_init_weights` fills them.
//
// Precision contract: WanLinear casts its input to the weight's dtype (bf16/fp16 matmuls on GPU
// when the weights are), norms always compute in fp32 and return fp32 — or float64 when the model
// was converted to float64 (CPU gradient checks): "fp32" below means at_least_fp32.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include "models/io/fp8.h"

namespace vidgraph::wan {

// fp32, or float64 for a float64 input: the accumulation type of the fp32 parts of the model.
inline at::ScalarType at_least_fp32(at::ScalarType type) {
  return type == at::kDouble ? at::kDouble : at::kFloat;
}

// A low-rank adapter on a WanLinear (LoRA): y += scale * (x down^T) up^T. The tensors are not
// registered parameters, so checkpoints and wan_named_parameters never see them; whoever attaches
// an adapter owns its tensors (models/train trains them, a LoRA loader fills them).
struct WanLinearAdapter {
  at::Tensor down;     // [rank, in] (fp32 for training)
  at::Tensor up;       // [out, rank]
  double scale = 1.0;  // strength * alpha / rank
  bool attached() const { return down.defined(); }
};

struct WanLinearOptions {
  WanLinearOptions(int64_t in, int64_t out) : in_features(in), out_features(out) {}
  int64_t in_features;
  int64_t out_features;
  bool bias = true;
  at::TensorOptions tensor_options = at::TensorOptions().dtype(at::kFloat);
};

// y = x W^T + b; parameters `weight` [out, in], `bias` [out].
// fp8 kept (a checkpoint loaded with keep_fp8): `weight` holds the file's 1-byte codes (kByte) and
// `fp8_table` their 256 values in the compute dtype, on the model's device; each forward looks the
// weight up for this layer only, so the model holds 1 byte per weight instead of 2.
class WanLinearImpl : public torch::nn::Cloneable<WanLinearImpl> {
 public:
  explicit WanLinearImpl(const WanLinearOptions& options);
  void reset() override;
  // x: [..., in] any float dtype -> [..., out] in the weight's dtype (+ the adapter's term).
  at::Tensor forward(const at::Tensor& x);
  // The weight as floats: `weight` itself, or the fp8 codes looked up; and its dtype.
  at::Tensor dense_weight() const;
  // Makes `weight` the fp8 `codes` (kByte, its shape, on any device), their values fp8 x `scale` in
  // the weight's dtype, the table on `table_device` (the model's). Throws std::invalid_argument on a
  // shape or dtype that does not fit.
  void keep_fp8(const at::Tensor& codes, model_io::Fp8Format format, float scale, c10::Device table_device);
  at::ScalarType dtype() const { return fp8_table.defined() ? fp8_table.scalar_type() : weight.scalar_type(); }

  WanLinearOptions options;
  at::Tensor weight;
  at::Tensor bias;
  at::Tensor fp8_table;      // [256], defined only when `weight` holds fp8 codes
  WanLinearAdapter adapter;  // none unless attached
};
TORCH_MODULE(WanLinear);

struct WanNormOptions {
  explicit WanNormOptions(int64_t d) : dim(d) {}
  int64_t dim;
  double eps = 1e-6;
  bool affine = true;  // LayerNorm: weight and bias; RMSNorm: weight (always)
  at::TensorOptions tensor_options = at::TensorOptions().dtype(at::kFloat);
};

// x * rsqrt(mean(x^2) + eps) * weight over the last dim; parameter `weight` [dim].
class WanRMSNormImpl : public torch::nn::Cloneable<WanRMSNormImpl> {
 public:
  explicit WanRMSNormImpl(const WanNormOptions& options);
  void reset() override;
  // x: [..., dim] -> fp32 [..., dim]
  at::Tensor forward(const at::Tensor& x);

  WanNormOptions options;
  at::Tensor weight;
};
TORCH_MODULE(WanRMSNorm);

// LayerNorm over the last dim, fp32; parameters `weight`, `bias` [dim] only when affine.
class WanLayerNormImpl : public torch::nn::Cloneable<WanLayerNormImpl> {
 public:
  explicit WanLayerNormImpl(const WanNormOptions& options);
  void reset() override;
  // x: [..., dim] -> fp32 [..., dim]
  at::Tensor forward(const at::Tensor& x);

  WanNormOptions options;
  at::Tensor weight;
  at::Tensor bias;
};
TORCH_MODULE(WanLayerNorm);

}  // namespace vidgraph::wan
