// Fused elementwise kernels of the Wan VAE's residual blocks (kernels/ layer): the passes between
// its convolutions, one kernel each where ATen makes four to five. Conventions as in
// attention_kernels.h: framework-free params, device pointers, streams as `void*`, a Status back
// (last_error() says why), nothing synchronises.
//
// Layout: channels-last activations seen as [rows, dim] contiguous (rows = every position of
// [B, T, H, W], dim = channels, a multiple of 4, pointers 8-byte aligned); per-channel vectors
// [dim] of the activations' type. Arithmetic is fp32, rounded once to the output type.
#pragma once

#include "vidgraph/kernels/attention_kernels.h"

#include <cstdint>

namespace vidgraph::kernels {

// out = silu?(v / max(||v||_2, 1e-12) · sqrt(dim) · gamma) with v = x + bias (bias may be absent):
// the VAE's RMS_norm (F.normalize over channels) with the conv bias before it folded in.
struct RmsNormSiluParams {
  int64_t rows = 0;
  int dim = 0;
  ElementType type = ElementType::BFloat16;  // of x, bias, gamma and out (bf16 or fp16)
  const void* x = nullptr;
  const void* bias = nullptr;                // [dim] or nullptr
  const void* gamma = nullptr;               // [dim]
  bool silu = true;
  void* out = nullptr;                       // may be x
};
Status rms_norm_silu(const RmsNormSiluParams& p, void* stream);

// y = y + bias + h: a residual branch's output, its conv bias and the shortcut, in one pass.
struct BiasResidualParams {
  int64_t rows = 0;
  int dim = 0;
  ElementType type = ElementType::BFloat16;  // of y, bias and h (bf16 or fp16)
  void* y = nullptr;
  const void* bias = nullptr;                // [dim] or nullptr
  const void* h = nullptr;
};
Status bias_residual(const BiasResidualParams& p, void* stream);

}  // namespace vidgraph::kernels
