#include "models/train/objective.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/square.h>

#include "models/sampling/flow_schedule.h"

namespace vidgraph::train {

FlowExample make_flow_example(const at::Tensor& latent, bool image_to_video, double shift, int64_t patch_t,
                              at::Generator& gen, double s_min, double s_max) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const at::Tensor x0 = latent.to(at::kCPU, at::kFloat);
  const double u = at::rand({1}, gen, at::TensorOptions().dtype(at::kDouble)).item<double>();
  const double s = s_min + (s_max - s_min) * u;
  const at::Tensor noise = at::randn(x0.sizes(), gen, f32);
  FlowExample ex;
  ex.sigma = sampling::flow_shift(s, shift);
  ex.x_t = x0 * (1.0 - ex.sigma) + noise * ex.sigma;
  ex.target = noise - x0;
  ex.t = at::full({x0.size(1) / patch_t}, 1000.0 * ex.sigma, f32);
  if (image_to_video) {
    ex.x_t.select(1, 0).copy_(x0.select(1, 0));
    ex.t.select(0, 0).fill_(0.0);
    ex.first_loss_frame = 1;
  }
  return ex;
}

std::pair<double, double> flow_s_range(double sigma_min, double sigma_max, double shift) {
  // flow_shift inverted: sigma = shift s / (1 + (shift - 1) s)  <=>  s = sigma / (shift - (shift - 1) sigma)
  const auto unshift = [shift](double sigma) { return sigma / (shift - (shift - 1.0) * sigma); };
  return {unshift(sigma_min), unshift(sigma_max)};
}

at::Tensor flow_loss(const at::Tensor& prediction, const FlowExample& example) {
  const int64_t f0 = example.first_loss_frame;
  const int64_t frames = example.target.size(1) - f0;
  const at::Tensor target = example.target.narrow(1, f0, frames).to(prediction.device(), prediction.scalar_type());
  return (prediction.narrow(1, f0, frames) - target).square().mean();
}

at::Tensor with_condition(const at::Tensor& x, const at::Tensor& condition) {
  if (!condition.defined()) return x;
  return at::cat({x, condition.to(x.device(), x.scalar_type())}, 0);
}

}  // namespace vidgraph::train
