// The plugin's DitKernels (plugins/api/dit_kernels.h) on the kernels of kernels/src/dit: LibTorch
// tensors checked and turned into the launchers' params, launched on LibTorch's current stream.
// GPU builds only (VIDGRAPH_ATTENTION_GPU).
#pragma once

#include "plugins/api/dit_kernels.h"

namespace vidgraph::attention {

class GpuDitKernels : public plugin::DitKernels {
 public:
  bool supports(c10::Device device, at::ScalarType compute_dtype) const override;
  at::Tensor layer_norm_modulate(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps,
                                 const at::Tensor& shift, const at::Tensor& scale, at::ScalarType dtype) override;
  at::Tensor rms_norm_rope(const at::Tensor& y, const at::Tensor& weight, double eps, const at::Tensor& cos,
                           const at::Tensor& sin, int64_t heads) override;
  at::Tensor gate_residual(const at::Tensor& h, const at::Tensor& y, const at::Tensor& gate,
                           const at::Tensor& out) override;
};

}  // namespace vidgraph::attention
