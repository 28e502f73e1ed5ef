// The plugin's VaeKernels (plugins/api/vae_kernels.h) on the kernels of kernels/src/vae: LibTorch
// tensors checked and turned into the launchers' params, launched on LibTorch's current stream.
// GPU builds only (VIDGRAPH_ATTENTION_GPU).
#pragma once

#include "plugins/api/vae_kernels.h"

namespace vidgraph::attention {

class GpuVaeKernels : public plugin::VaeKernels {
 public:
  bool supports(c10::Device device, at::ScalarType dtype) const override;
  at::Tensor rms_norm_silu(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& gamma, bool silu) override;
  at::Tensor bias_residual(const at::Tensor& y, const at::Tensor& bias, const at::Tensor& h) override;
};

}  // namespace vidgraph::attention
