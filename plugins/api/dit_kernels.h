// The DiT block's fused elementwise kernels: the passes between its GEMMs (a LayerNorm with its
// modulation and the cast to the compute dtype, the q/k RMSNorm with RoPE, a gated residual add),
// one kernel each where ATen makes three to six passes over the [B, L, C] activations.
//
// Contract:
//  - Inference only: the results carry no autograd history.
//  - A backend offers them for the devices it has kernels for (AttentionBackend::dit_kernels());
//    the models use their ATen ops wherever supports() says no.
//  - Activations [B, L, C] are contiguous with C a multiple of 4; modulation vectors [B, G, C] fp32
//    (C contiguous, G dividing L: token l uses group l / (L / G)); undefined = absent.
//  - The maths is the models' ATen ops' in fp32, rounded once to the result's dtype.
//  - Bad shapes or dtypes throw c10::Error with a sentence naming the tensor.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace vidgraph::plugin {

class DitKernels {
 public:
  virtual ~DitKernels() = default;
  // Whether these kernels take activations on `device` with matmuls in `compute_dtype`.
  virtual bool supports(c10::Device device, at::ScalarType compute_dtype) const = 0;
  // LayerNorm(x) over C (x fp32; weight, bias [C] fp32 when defined), then y · (1 + scale) + shift
  // when shift and scale are defined; the result [B, L, C] in `dtype` (bf16 or fp16).
  virtual at::Tensor layer_norm_modulate(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                         double eps, const at::Tensor& shift, const at::Tensor& scale,
                                         at::ScalarType dtype) = 0;
  // RMSNorm(y) · weight over C (y bf16 or fp16, weight [C] fp32), then, when cos and sin [L, D/2]
  // fp32 are defined, RoPE on each head's interleaved pairs (D = C / heads); the result like y.
  virtual at::Tensor rms_norm_rope(const at::Tensor& y, const at::Tensor& weight, double eps, const at::Tensor& cos,
                                   const at::Tensor& sin, int64_t heads) = 0;
  // h + y · gate (h fp32, y bf16 or fp16, gate [B, G, C] fp32 or undefined = 1), written into `out`
  // (fp32 like h; may be h itself) and returned.
  virtual at::Tensor gate_residual(const at::Tensor& h, const at::Tensor& y, const at::Tensor& gate,
                                   const at::Tensor& out) = 0;
};

}  // namespace vidgraph::plugin
