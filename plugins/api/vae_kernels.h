// The Wan VAE residual block's fused elementwise kernels: the passes between its convolutions (the
// RMS norm with its gamma and SiLU, the conv bias, the residual add), one kernel each where ATen
// makes four to five passes over the activations.
//
// Contract:
//  - Inference only: the results carry no autograd history.
//  - A backend offers them for the devices it has kernels for (AttentionBackend::vae_kernels());
//    the VAE uses its ATen ops wherever supports() says no.
//  - Activations [B, C, T, H, W] or [N, C, H, W] are dense with channels innermost (channels-last),
//    C a multiple of 4; per-channel vectors hold C elements of the activations' dtype (a norm's
//    gamma [C, 1, 1, 1] as stored); undefined = absent.
//  - The maths is the VAE's ATen ops' in fp32, rounded once to the result's dtype.
//  - Bad shapes, layouts or dtypes throw c10::Error with a sentence naming the tensor.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace vidgraph::plugin {

class VaeKernels {
 public:
  virtual ~VaeKernels() = default;
  // Whether these kernels take activations of `dtype` on `device`.
  virtual bool supports(c10::Device device, at::ScalarType dtype) const = 0;
  // silu?(RMSNorm(x + bias) · gamma) over the channels: RMSNorm(v) = v / max(||v||_2, 1e-12) · sqrt(C),
  // the VAE's F.normalize form. A new tensor laid out like x.
  virtual at::Tensor rms_norm_silu(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& gamma,
                                   bool silu) = 0;
  // y + bias + h, written into y (h laid out like y) and returned.
  virtual at::Tensor bias_residual(const at::Tensor& y, const at::Tensor& bias, const at::Tensor& h) = 0;
};

}  // namespace vidgraph::plugin
