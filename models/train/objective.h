// The flow-matching training objective of Wan2.2 (rectified flow, velocity prediction):
//   s ~ U(0, 1), sigma = shift*s / (1 + (shift-1)*s)   (the sampler's shift map, default shift 5)
//   t = 1000 * sigma                                     (the timestep the DiT receives)
//   noise ~ N(0, I), x_t = (1 - sigma) * x0 + sigma * noise, target v = noise - x0
//   loss = mean over (channels, loss frames, h, w) of (v_pred - v)^2
// Image-to-video samples keep latent frame 0 clean (x_t[:, 0] = x0[:, 0]), give it timestep 0 in
// the per-frame timestep vector, and leave it out of the loss.
// The draws come from a CPU generator (s first, then the noise), so they are the same on any device.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <utility>

namespace vidgraph::train {

struct FlowExample {
  at::Tensor x_t;     // [C, F, h, w] fp32, CPU
  at::Tensor target;  // [C, F, h, w] fp32: noise - x0
  at::Tensor t;       // [F / patch_t] fp32 per-frame timesteps
  double sigma = 0;
  int64_t first_loss_frame = 0;  // 1 for image-to-video, else 0
};

// latent: [C, F, h, w] fp32 x0. patch_t: the model's temporal patch (frames per timestep group).
// s is drawn as s_min + (s_max - s_min) * u, u ~ U(0, 1) (distillation's re-noising keeps s away
// from the ends; the defaults give s = u exactly).
FlowExample make_flow_example(const at::Tensor& latent, bool image_to_video, double shift, int64_t patch_t,
                              at::Generator& gen, double s_min = 0.0, double s_max = 1.0);

// The s range whose shifted noise levels flow_shift(s, shift) span [sigma_min, sigma_max]: how a
// trainer restricts the draws to one expert's side of a two-expert model's boundary.
std::pair<double, double> flow_s_range(double sigma_min, double sigma_max, double shift);

// MSE of `prediction` [C, F, h, w] against the example's target over the loss frames (a scalar
// tensor carrying autograd).
at::Tensor flow_loss(const at::Tensor& prediction, const FlowExample& example);

// What the DiT takes for a latent x [C, F, h, w]: x, or cat([x, condition]) along channels when
// `condition` (Wan2.2-I2V-A14B's image conditioning) is defined, on x's device and dtype.
at::Tensor with_condition(const at::Tensor& x, const at::Tensor& condition);

}  // namespace vidgraph::train
