#include "wan_layers.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/rsqrt.h>

namespace vidgraph::wan {

WanLinearImpl::WanLinearImpl(const WanLinearOptions& options_) : options(options_) {
  reset();
}

void WanLinearImpl::reset() {
  weight = register_parameter("weight", at::empty({options.out_features, options.in_features}, options.tensor_options),
                              /*requires_grad=*/false);
  if (options.bias) {
    bias = register_parameter("bias", at::empty({options.out_features}, options.tensor_options),
                              /*requires_grad=*/false);
  }
}

at::Tensor WanLinearImpl::forward(const at::Tensor& x) {
  return at::linear(x.to(weight.scalar_type()), weight, bias);
}

WanRMSNormImpl::WanRMSNormImpl(const WanNormOptions& options_) : options(options_) {
  reset();
}

void WanRMSNormImpl::reset() {
  weight = register_parameter("weight", at::empty({options.dim}, options.tensor_options),
                              /*requires_grad=*/false);
}

at::Tensor WanRMSNormImpl::forward(const at::Tensor& x) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor inv = at::rsqrt(xf.pow(2).mean({-1}, /*keepdim=*/true).add(options.eps));
  return xf.mul(inv).mul(weight.to(at::kFloat));
}

WanLayerNormImpl::WanLayerNormImpl(const WanNormOptions& options_) : options(options_) {
  reset();
}

void WanLayerNormImpl::reset() {
  if (options.affine) {
    weight = register_parameter("weight", at::empty({options.dim}, options.tensor_options),
                                /*requires_grad=*/false);
    bias = register_parameter("bias", at::empty({options.dim}, options.tensor_options),
                              /*requires_grad=*/false);
  }
}

at::Tensor WanLayerNormImpl::forward(const at::Tensor& x) {
  at::Tensor w = weight.defined() ? weight.to(at::kFloat) : at::Tensor();
  at::Tensor b = bias.defined() ? bias.to(at::kFloat) : at::Tensor();
  return at::layer_norm(x.to(at::kFloat), {options.dim}, w, b, options.eps);
}

}  // namespace vidgraph::wan
