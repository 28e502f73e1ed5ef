#include "wan_layers.h"

#include <stdexcept>

#include <ATen/ops/empty.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/norm.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/square.h>
#include <c10/util/StringUtil.h>

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

at::Tensor WanLinearImpl::dense_weight() const {
  return fp8_table.defined() ? model_io::fp8_lookup(weight, fp8_table) : weight;
}

void WanLinearImpl::keep_fp8(const at::Tensor& codes, model_io::Fp8Format format, float scale,
                             c10::Device table_device) {
  if (codes.scalar_type() != at::kByte || codes.sizes() != weight.sizes()) {
    throw std::invalid_argument("fp8 codes for a linear weight of shape " + c10::str(weight.sizes()) +
                                " must be U8 of that shape, got " + c10::str(codes.scalar_type(), " ", codes.sizes()));
  }
  fp8_table = model_io::fp8_value_table(format, scale, dtype(), table_device);
  weight.set_data(codes);
}

at::Tensor WanLinearImpl::forward(const at::Tensor& x) {
  const at::Tensor w = dense_weight();
  at::Tensor y = at::linear(x.to(w.scalar_type()), w, bias);
  if (!adapter.attached()) {
    return y;
  }
  // The low-rank term in the adapter's dtype (fp32), added in the weight's dtype.
  at::Tensor low = at::linear(at::linear(x.to(adapter.down.scalar_type()), adapter.down), adapter.up);
  return y.add(low.mul(adapter.scale).to(y.scalar_type()));
}

WanRMSNormImpl::WanRMSNormImpl(const WanNormOptions& options_) : options(options_) {
  reset();
}

void WanRMSNormImpl::reset() {
  weight = register_parameter("weight", at::empty({options.dim}, options.tensor_options),
                              /*requires_grad=*/false);
}

at::Tensor WanRMSNormImpl::forward(const at::Tensor& x) {
  // mean(x^2) from one fp32-accumulated norm over the input as it is (no fp32 copy of x); the
  // products promote to fp32, the weight multiply is in place.
  const double dim = static_cast<double>(x.size(-1));
  const at::ScalarType acc = at_least_fp32(x.scalar_type());
  const at::Tensor norm = at::norm(x, 2, {-1}, /*keepdim=*/true, acc);
  const at::Tensor inv = at::rsqrt(norm.square().div_(dim).add_(options.eps));
  return at::mul(x, inv).mul_(weight.to(acc));
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
  const at::ScalarType acc = at_least_fp32(x.scalar_type());
  at::Tensor w = weight.defined() ? weight.to(acc) : at::Tensor();
  at::Tensor b = bias.defined() ? bias.to(acc) : at::Tensor();
  return at::layer_norm(x.to(acc), {options.dim}, w, b, options.eps);
}

}  // namespace vidgraph::wan
